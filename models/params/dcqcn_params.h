/* SPDX-License-Identifier: MIT */
/*
 * dcqcn_params.h - the DCQCN parameters (dcqcn.*) every layer may read
 * (models/roce has the model).
 */
#ifndef IBFAB_DCQCN_PARAMS_H
#define IBFAB_DCQCN_PARAMS_H

#include <stdbool.h>
#include <stdint.h>

/* The shipped parameter sets (dcqcn.set). */
enum dcqcn_set {
	DCQCN_SET_NIC,		/* the "Mellanox" timers public simulators use (HPCC's ns-3) */
	DCQCN_SET_PAPER,	/* the paper's timers and F, B */
};

struct dcqcn_params {
	bool on;		/* dcqcn.on: applies to fabric=roce and roce-lossy */
	uint8_t set;		/* dcqcn.set: enum dcqcn_set the values below came from */
	double g;		/* dcqcn.g: alpha gain */
	uint32_t rai_mbps;	/* dcqcn.rai_mbps: additive increase step (0 = the set's rule x link rate) */
	uint32_t rhai_mbps;	/* dcqcn.rhai_mbps: hyper increase step (0 = the set's rule) */
	uint32_t min_rate_mbps;	/* dcqcn.min_rate_mbps: floor of the current rate */
	uint32_t byte_counter;	/* dcqcn.byte_counter: B, bytes per increase event (0 = off) */
	uint32_t timer_us;	/* dcqcn.timer_us: T, rate increase timer */
	uint32_t alpha_us;	/* dcqcn.alpha_us: K, alpha decays after K without a decrease */
	uint32_t dec_us;	/* dcqcn.dec_us: at most one rate decrease per interval */
	uint32_t cnp_interval_us;	/* dcqcn.cnp_interval_us: N, NP sends at most one CNP per QP per N */
	uint8_t f;		/* dcqcn.f: F, fast recovery steps */
	bool clamp;		/* dcqcn.clamp: Rt = Rc at every decrease (else only after an increase) */
};

#endif
