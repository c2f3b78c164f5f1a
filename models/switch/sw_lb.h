/* SPDX-License-Identifier: MIT */
/*
 * sw_lb.h - a switch's adaptive choice among equal-cost output ports:
 * InfiniBand's adaptive routing (ib.ar=on, sw.c) and Ethernet's flowlet
 * switching and per-packet spraying (eth.lb=flowlet|spray, models/eth).
 * sw_lb.c says what it models.
 */
#ifndef IBFAB_SW_LB_H
#define IBFAB_SW_LB_H

#include <stdint.h>

#include "models/core/fab_core.h"
#include "models/port/port.h"
#include "models/sm/sm_mp.h"

/* How loaded an output is for packet p (lower is better, 0 idle): the
 * switch kind's own measure of its egress queue. */
typedef int64_t (*sw_lb_load_fn)(const struct fab_node *n, struct port *out,
				 const struct pkt *p);

struct sw_lb_flowlet {
	sim_time_t last;	/* the last packet that used the entry */
	uint8_t port;		/* its output (0: unused) */
};

struct sw_lb {
	struct sm_mp_sw mp;	/* the equal-cost ports per destination switch */
	sw_lb_load_fn load;
	uint32_t rr;		/* rotates the ties: equal loads share the ports */
	int64_t keep_lft;	/* the LFT's port while its load is at most this
				 * (-1: always the least loaded port) */
	/* flowlet mode (gap > 0): a table indexed by the flow's hash, as the
	 * hardware's (no tags: flows that collide share an entry) */
	sim_time_t gap;
	struct sw_lb_flowlet *fl;
	uint32_t fl_mask;
	uint64_t seed;		/* this switch's hash draw */
	/* counters, for the run's report: SW_LB_WORDS words in this order */
	uint64_t chosen;	/* packets that had a choice (two ports or more) */
	uint64_t moved;		/* of them, sent elsewhere than the LFT's port */
	uint64_t notified;	/* adaptive routing notifications sent (IB: sw.c) */
};
#define SW_LB_WORDS 3

/* A packet's flow, as ECMP and the flowlet table hash it: source and
 * destination addresses (the LIDs stand for them) and the QPs, which
 * stand for RoCEv2's UDP source port (NICs derive it from the QP) and
 * TCP's ports. */
static inline uint64_t sw_lb_flow(const struct pkt *p)
{
	return ((uint64_t)p->slid << 48) ^ ((uint64_t)p->dlid << 32) ^
	       ((uint64_t)(p->sqpn & 0xffffff) << 8) ^ ((uint64_t)p->dqpn << 20);
}

/* Per-packet choice (gap_ns 0) or per flowlet (a flow's packets keep their
 * port until it idles gap_ns). 0, or -1 when out of memory. */
int sw_lb_init(struct sw_lb *lb, struct fab *f, const struct fab_node *n,
	       sw_lb_load_fn load, uint64_t gap_ns);
void sw_lb_fini(struct sw_lb *lb);

/*
 * The output for packet p at switch n, among the equal-cost ports towards
 * its DLID; 0 when the switch has no choice to make (the destination hangs
 * on this switch, or no set reaches it): the LFT then decides. `lft` is
 * the LFT's port, for the counters.
 */
int sw_lb_pick(struct sw_lb *lb, struct fab *f, const struct fab_node *n,
	       const struct pkt *p, int lft);

#endif
