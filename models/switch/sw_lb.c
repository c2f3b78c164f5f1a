/* SPDX-License-Identifier: MIT */
/*
 * sw_lb.c - a switch's adaptive choice among equal-cost output ports.
 *
 * InfiniBand adaptive routing (NVIDIA Quantum and later, "AR"): beside
 * the LFT, the subnet manager programs per destination an AR group, the
 * output ports on a shortest path (models/sm/sm_mp.c), and the switch
 * sends each packet of an AR-enabled SL to the LFT's port while no queue
 * forms there (its load at most one packet: sw_lb.keep_lft), else to the
 * group's least loaded port (IBA 1.4 leaves AR to vendors; NVIDIA's
 * "Adaptive Routing" in the Quantum and UFM documentation: per-packet
 * choice by egress load, static fallback for SLs AR is off on; staying
 * on the static route until it congests: Zahavi, Keslassy and Kolodny,
 * ANCS 2012, and Omni-Path's AR threshold). A greedy choice, the least
 * loaded port for every packet, spreads flows the tables had put on
 * disjoint paths and loses at full load what it unbalances (shifts,
 * pairwise all-to-all: docs/routing.md). Ethernet's per-packet spraying
 * (NVIDIA Spectrum-X adaptive routing; the Ultra Ethernet transport's
 * packet spraying) chooses the same way per packet; flowlet switching
 * (Kandula et al., "Dynamic load balancing without packet reordering",
 * SIGCOMM CCR 2007; CONGA and LetFlow) keeps a flow's port until the
 * flow has idled a gap long enough that a new path cannot overtake it,
 * and chooses anew then.
 *
 * The load is the switch kind's (sw_lb_load_fn), its egress queue: for
 * the IB switch the blocks queued at its inputs for the output and the
 * packet it is sending (a downstream buffer that fills shows there, as
 * packets stop leaving); for the Ethernet switch the cells in the egress
 * queues. Among equal loads the choice rotates, so an idle fabric spreads
 * a flow's packets over all its paths; a port whose link is down is never
 * chosen.
 * The choice here sees what the load function gives: beyond this switch's
 * outputs, the IB switch's counts the next hop's credits and the
 * notifications of switches further down the path (sw_arn.c); Ethernet's
 * sees its own queues only.
 */
#include "models/switch/sw_lb.h"

#include <stdlib.h>

#include "sim/sim_rng.h"

#define FLOWLETS 1024	/* entries per switch: 16 KB (CONGA's table: 64K for a leaf) */

int sw_lb_init(struct sw_lb *lb, struct fab *f, const struct fab_node *n,
	       sw_lb_load_fn load, uint64_t gap_ns)
{
	if (!f->mp && !(f->mp = sm_mp_build(f->net)))
		return -1;
	if (sm_mp_sw_init(&lb->mp, f->mp, f->net, n->idx))
		return -1;
	lb->load = load;
	lb->keep_lft = -1;
	lb->rr = (uint32_t)n->idx;
	lb->seed = 0x9e3779b97f4a7c15ULL * ((uint64_t)n->idx + 1);
	lb->gap = (sim_time_t)gap_ns * SIM_NS;
	if (gap_ns) {
		lb->fl = calloc(FLOWLETS, sizeof(*lb->fl));
		if (!lb->fl) {
			sw_lb_fini(lb);
			return -1;
		}
		lb->fl_mask = FLOWLETS - 1;
	}
	return 0;
}

void sw_lb_fini(struct sw_lb *lb)
{
	sm_mp_sw_fini(&lb->mp);
	free(lb->fl);
	lb->fl = NULL;
}

static int least_loaded(struct sw_lb *lb, const struct fab_node *n, const struct pkt *p,
			const uint8_t *ports, uint32_t cnt, int lft)
{
	uint32_t start = lb->rr++ % cnt;
	int best = -1;
	int64_t best_load = 0;

	/* the LFT's port while no queue forms on it */
	if (lb->keep_lft >= 0 && lft > 0 && lft <= n->nports && !n->ports[lft]->down &&
	    lb->load(n, n->ports[lft], p) <= lb->keep_lft)
		return lft;
	for (uint32_t k = 0; k < cnt; k++) {
		int o = ports[(start + k) % cnt];
		int64_t l;

		if (n->ports[o]->down)
			continue;	/* a dead link: the switch knows its own ports */
		l = lb->load(n, n->ports[o], p);
		if (best < 0 || l < best_load) {
			best = o;
			best_load = l;
			if (l <= 0)
				break;
		}
	}
	return best < 0 ? 0 : best;	/* every port dead: the LFT's */
}

int sw_lb_pick(struct sw_lb *lb, struct fab *f, const struct fab_node *n,
	       const struct pkt *p, int lft)
{
	const uint8_t *ports;
	uint32_t cnt = sm_mp_ports(f->mp, &lb->mp, p->dlid, &ports);
	int o;

	if (cnt == 0)
		return 0;
	if (cnt == 1)
		return n->ports[ports[0]]->down ? 0 : ports[0];
	if (!lb->fl) {
		o = least_loaded(lb, n, p, ports, cnt, lft);
		if (!o)
			return 0;
	} else {
		struct sw_lb_flowlet *e = &lb->fl[sim_mix64(sw_lb_flow(p) ^ lb->seed) & lb->fl_mask];
		sim_time_t now = f->eng.now;

		o = 0;
		if (e->port && now - e->last < lb->gap && !n->ports[e->port]->down)
			for (uint32_t k = 0; k < cnt; k++)	/* a colliding flow's port may not lead there */
				if (ports[k] == e->port)
					o = e->port;
		if (!o)
			o = least_loaded(lb, n, p, ports, cnt, lft);
		if (!o)
			return 0;
		e->port = (uint8_t)o;
		e->last = now;
	}
	lb->chosen++;
	lb->moved += o != lft;
	return o;
}
