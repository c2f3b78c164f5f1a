/* SPDX-License-Identifier: MIT */
/*
 * cc.h - the HCA's congestion-control edge, shared by DCQCN (RoCE) and
 * IB congestion control (Annex A10): per-QP pacing of request packets,
 * the notification point (CE/FECN in -> CNP/BECN out) and the queue of
 * notifications the HCA owes. The HCA reaches it through its table
 * (struct hca_cc_ops, models/hca/hca_plug.h); see cc.c.
 */
#ifndef IBFAB_CC_H
#define IBFAB_CC_H

#include <stdbool.h>
#include <stdint.h>

#include "models/hca/hca_plug.h"
#include "models/ib/ib_cc.h"
#include "models/roce/dcqcn.h"
#include "sim/sim.h"

struct cc_hca;
struct cc_qp;
struct fab_params;

/*
 * A congestion-control algorithm at the HCA, one row each in its own file
 * (cc_dcqcn.c, cc_ibcc.c): what differs between them. cc.c holds what
 * they share (the notification point's queue, pacing, the port's side).
 */
struct cc_algo {
	const char *name;
	/* Does it run on this fabric with these parameters? */
	bool (*applies)(const struct fab_params *p);
	/* The HCA's constants: the notification's wire size, the resolved
	 * parameters. */
	void (*setup)(struct cc_hca *c, const struct fab_params *p);
	/* A new QP's reaction-point state (NULL: zeros). */
	void (*qp_init)(struct cc_qp *q, const struct cc_hca *c);
	/* A request packet of `wire` bytes starts now: when the next may
	 * start (0: at once). */
	sim_time_t (*sent)(struct cc_qp *q, const struct cc_hca *c, const struct fab_params *p,
			   sim_time_t now, uint32_t wire);
	/* A notification (CNP, BECN) for the QP arrived. */
	void (*notified)(struct cc_qp *q, const struct cc_hca *c, const struct fab_params *p,
			 sim_time_t now);
	/* May the notification point answer a mark now? (NULL: always) */
	bool (*may_notify)(struct cc_qp *q, const struct cc_hca *c, sim_time_t now);
	int note_prio;		/* the notifications' VL (priority), or -1: the QP's */
	uint8_t note_flags;	/* set on a notification (IB: BECN) */
};

extern const struct cc_algo cc_dcqcn, cc_ibcc;

struct cc_qp {
	sim_time_t next;	/* pacing: the next request packet may start then (0: now) */
	bool owed;		/* responder: a notification for the peer QP is queued */
	bool np_sent;		/* DCQCN NP: a CNP was sent (np_last valid) */
	sim_time_t np_last;
	struct dcqcn_rp rp;	/* requester (DCQCN) */
	struct ibcc_ca ca;	/* requester (IB CC) */
};

/* A notification owed: where it goes. */
struct cc_note {
	net_lid_t dlid;
	uint8_t sl, vl, qpt;
	uint32_t sqpn, dqpn;
};

struct cc_hca {
	struct hca_cc base;	/* first: hca.cc points here */
	const struct cc_algo *algo;
	double line_bps;
	uint32_t note_wire;	/* bytes of a CNP / CN packet */
	sim_time_t ibcc_timer;	/* IB CC: the CCTI_Timer period (ibcc_timer_ps) */
	struct dcqcn_cfg dcqcn;
	struct cc_note *q;
	uint32_t head, n, cap;
};

/* The HCA's congestion-control table for the parameters (hca_plug.h: what
 * each of its functions does), or NULL when none is on: the builder's
 * choice of fab.cc. */
const struct hca_cc_ops *cc_for(const struct fab_params *p);

#endif
