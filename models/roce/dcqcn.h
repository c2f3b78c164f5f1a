/* SPDX-License-Identifier: MIT */
/*
 * dcqcn.h - DCQCN (Zhu et al., SIGCOMM 2015): the parameters of the
 * notification point (CNP pacing) and the reaction point (rate machine).
 * The model is in dcqcn.c; docs/congestion-control.md lists the sources
 * of every default.
 *
 * The reaction point is a pure state machine: it is fed CNP arrivals and
 * bytes sent with their times, and runs its timers lazily up to the time
 * it is asked (no engine events), so it can be tested against traces
 * computed by hand from the paper's equations.
 */
#ifndef IBFAB_DCQCN_H
#define IBFAB_DCQCN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "models/params/dcqcn_params.h"
#include "sim/sim_param.h"
#include "sim/sim.h"

extern const char *const dcqcn_set_names[];	/* "nic", "paper", NULL */


void dcqcn_params_default(struct dcqcn_params *p);
/* Load a shipped set (keeps `on`). */
void dcqcn_params_set_named(struct dcqcn_params *p, enum dcqcn_set s);
/* The dcqcn.* keys, rows of the parameter schema (sim/sim_param.h); a
 * NULL name ends them. */
extern const struct sim_param dcqcn_param_keys[];
int dcqcn_params_check(const struct dcqcn_params *p, char *err, size_t errlen);

/* The parameters resolved for one QP: rates in bits/s, times in ps. */
struct dcqcn_cfg {
	double g;
	double line_bps, rai_bps, rhai_bps, min_bps;
	uint64_t byte_counter;
	sim_time_t timer, alpha_period, dec_period, cnp_interval;
	uint32_t f;
	bool clamp;
};

void dcqcn_cfg_resolve(struct dcqcn_cfg *c, const struct dcqcn_params *p, double line_bps);

/* Which rule the last rate increase used (statistics and tests). */
enum dcqcn_stage { DCQCN_NONE, DCQCN_FAST_RECOVERY, DCQCN_ADDITIVE, DCQCN_HYPER };
extern const char *const dcqcn_stage_names[];

/* The reaction point of one QP. */
struct dcqcn_rp {
	double rc, rt;		/* current and target rate, bits/s */
	double alpha;
	uint32_t t_stage, bc_stage;	/* timer and byte-counter events since the last decrease */
	uint64_t bytes;		/* bytes sent since the last byte-counter event */
	sim_time_t next_inc;	/* rate increase timer (0: stopped, at line rate) */
	sim_time_t next_alpha;	/* alpha timer (0: before the first CNP) */
	sim_time_t next_dec;	/* a deferred decrease is due (0: none pending) */
	sim_time_t last_dec;
	bool decreased;		/* a decrease happened (last_dec valid) */
	enum dcqcn_stage last;
	/* statistics */
	uint64_t cnps, decreases, fast_recoveries, additive, hyper;
};

void dcqcn_rp_init(struct dcqcn_rp *rp, const struct dcqcn_cfg *c);
/* Run the timers up to `now` (events at times <= now). */
void dcqcn_rp_advance(struct dcqcn_rp *rp, const struct dcqcn_cfg *c, sim_time_t now);
/* A CNP arrived at `now`. */
void dcqcn_rp_cnp(struct dcqcn_rp *rp, const struct dcqcn_cfg *c, sim_time_t now);
/* `bytes` were sent at `now` (the byte counter). */
void dcqcn_rp_sent(struct dcqcn_rp *rp, const struct dcqcn_cfg *c, sim_time_t now,
		   uint64_t bytes);

/* The notification point of one QP: may a CNP go out at `now`? (Updates
 * *last when it may.) At most one per cnp_interval. */
static inline bool dcqcn_np_may_send(sim_time_t *last, bool *sent_once,
				     const struct dcqcn_cfg *c, sim_time_t now)
{
	if (*sent_once && now - *last < c->cnp_interval)
		return false;
	*last = now;
	*sent_once = true;
	return true;
}

/* RoCEv2 CNP (IB_OP_CNP, IBTA Annex A17): 16 reserved bytes. */
#define ROCE_CNP_PAYLOAD 16

#endif
