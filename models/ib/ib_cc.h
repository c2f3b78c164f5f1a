/* SPDX-License-Identifier: MIT */
/*
 * ib_cc.h - InfiniBand congestion control (IBA vol. 1 Annex A10):
 * parameters of the switch's FECN marking and of the CA's congestion
 * control table. The model is in ib_cc.c; docs/congestion-control.md
 * explains the choices.
 */
#ifndef IBFAB_IB_CC_H
#define IBFAB_IB_CC_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "models/params/ibcc_params.h"
#include "sim/sim_param.h"
#include "sim/sim.h"


void ibcc_params_default(struct ibcc_params *p);
/* The ib.cc and ib.cc.* keys, rows of the parameter schema
 * (sim/sim_param.h); a NULL name ends them. */
extern const struct sim_param ibcc_param_keys[];
int ibcc_params_check(const struct ibcc_params *p, char *err, size_t errlen);

/* Switch: the queued bytes above which an output marks, for a VL buffer
 * of `vl_buf` bytes (0: never). */
uint32_t ibcc_threshold_bytes(const struct ibcc_params *p, uint32_t vl_buf);
/* The inter-packet delay of CCT entry `ccti`, in units of the time the port
 * takes to send 64 bytes (one credit block). */
uint32_t ibcc_ird_units(const struct ibcc_params *p, uint16_t ccti);

/* The CCTI_Timer period of a CA whose link sends line_bps bits of data a
 * second in packets of mtu payload bytes: ib.cc.ccti_timer_us, or when
 * that is 0 the time of 2 x IBCC_TIMER_FLOWS x (marking_rate + 1) such
 * packets plus IBCC_TIMER_LOOP_PS. A flow holds its index while BECNs
 * come at least once a period; one at a 1/N share of a congested link,
 * every packet eligible, gets one per (marking_rate + 1) x N packet times
 * of the link, and a round trip after the mark: the automatic period is
 * twice that interval for N = IBCC_TIMER_FLOWS, plus about a round trip
 * through a few switches (3.5 us through four at XDR with the hosts'
 * costs). docs/congestion-control.md has the parking lot that checks it. */
#define IBCC_TIMER_FLOWS 4
#define IBCC_TIMER_LOOP_PS (2 * SIM_US)
sim_time_t ibcc_timer_ps(const struct ibcc_params *p, double line_bps, uint32_t mtu);

/* The CA side of one QP (QP-based congestion control). */
struct ibcc_ca {
	uint16_t ccti;
	sim_time_t next_dec;	/* CCTI timer (0: stopped, at ccti_min) */
	uint64_t becns;
};

/* period: ibcc_timer_ps() of the CA */
void ibcc_ca_advance(struct ibcc_ca *ca, const struct ibcc_params *p, sim_time_t period,
		     sim_time_t now);
void ibcc_ca_becn(struct ibcc_ca *ca, const struct ibcc_params *p, sim_time_t period,
		  sim_time_t now);

/* The switch side is models/switch/sw_ibcc.h. */

#endif
