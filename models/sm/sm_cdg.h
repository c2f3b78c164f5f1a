/* SPDX-License-Identifier: MIT */
/*
 * sm_cdg.h - the channel dependency graph (CDG) a routing induces, and the
 * deadlock check on it.
 *
 * A channel is one direction of a cable on one VL: the link leaving
 * (node, port) towards its peer, carrying VL v. A packet that arrives over
 * channel a and, by the LFT of the switch it reached, leaves over channel b
 * holds a's buffer while it waits for b's credits: that is the dependency
 * a -> b. Dally and Seitz (IEEE Trans. Computers C-36(5), 1987) showed that
 * a deterministic routing is free of deadlock if and only if this graph is
 * acyclic; with credit-based flow control (IBA 7.9.4) a cycle is the
 * "credit loop" that, once every buffer on it fills, freezes the fabric.
 * With adaptive routing (opts.mp) every port a switch may choose adds its
 * dependency; acyclic is then sufficient (Duato's condition would need
 * less, a subset: not modelled).
 *
 * Usage:
 *	struct sm_cdg g;
 *	struct sm_cdg_cycle c;
 *	sm_route(n, "minhop", NULL, &d);
 *	sm_cdg_build(&g, n, NULL, &d);		// VL 0 for every pair
 *	if (sm_cdg_find_cycle(&g, &c, &d) == 1)
 *		sm_cdg_cycle_str(&g, &c, buf, sizeof(buf));	// "sw0[3] -> sw1[3] -> ... -> sw0[3]"
 *	sm_cdg_cycle_free(&c);
 *	sm_cdg_free(&g);
 */
#ifndef IBFAB_SM_CDG_H
#define IBFAB_SM_CDG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "models/net/net.h"
#include "sim/sim_diag.h"

#define SM_CDG_MAX_VLS 15	/* data VLs 0..14 (VL15 is not flow controlled) */

/*
 * Which VL the traffic from CA port (src_node, src_port) to `dlid` uses: the
 * SL2VL of the SL the path record gives it. Return 0..nvls-1, or -1 when
 * the pair carries no data (it then adds no dependency).
 */
typedef int (*sm_cdg_vl_fn)(void *ctx, int src_node, int src_port, net_lid_t dlid);

struct sm_mp;
struct sm_mp_sw;

struct sm_cdg_opts {
	int nvls;		/* VLs 0..nvls-1 exist; 0 means 1 */
	sm_cdg_vl_fn vl_of;	/* NULL: VL 0 for every pair */
	void *ctx;
	/* Adaptive routing (models/sm/sm_mp.h): when set, a switch may send
	 * a packet to any port of its set towards the destination (the LFT's
	 * where the set is empty), and every such dependency is added. mp_sw
	 * is per node (switches only). */
	const struct sm_mp *mp;
	const struct sm_mp_sw *mp_sw;
};

struct sm_cdg {
	const struct net *net;
	int nvls;
	/* Port ends: node i's port p is pe_base[i] + p; channel = pe * nvls + vl. */
	uint32_t *pe_base;
	uint32_t npe;
	uint32_t nchan;
	/* Dependencies, deduplicated, as CSR: successors of channel c are
	 * adj[off[c] .. off[c + 1] - 1], ascending. */
	uint32_t *off;
	uint32_t *adj;
	uint64_t nedges;
	uint32_t nused;		/* channels that carry any (src, dlid) pair */
	/* The pairs that were followed, and those the LFTs do not deliver. */
	uint64_t pairs;
	uint64_t pairs_unrouted;	/* LFT entry 255, unconnected port, wrong CA */
	uint64_t pairs_looping;		/* the LFTs send it round in a loop */
	uint64_t ar_choices;		/* with o->mp: (switch, LID) pairs with two ports or more */
	char first_bad[256];		/* the first such pair, for messages; "" */
};

/*
 * Build the CDG of the LFTs in n (LIDs assigned, switches routed). Every
 * connected CA or router port is a source, every LID of a CA or router port
 * a destination (switch LIDs carry management traffic on VL15 only).
 * Cost: O(destinations x (sources + switches)): a destination's paths form
 * a tree, so each switch is followed once per (destination, VL); the
 * dependency set is a hash set, so the whole build of a 1k-host fat tree
 * takes a few tens of milliseconds. Returns 0 or -1 (diag filled, g empty).
 */
int sm_cdg_build(struct sm_cdg *g, const struct net *n,
		 const struct sm_cdg_opts *o, struct sim_diag *d);
void sm_cdg_free(struct sm_cdg *g);

/* Channel id of (node, port, vl), or -1 if there is no such connected port end. */
int64_t sm_cdg_chan(const struct sm_cdg *g, int node, int port, int vl);
/* The parts of a channel id. */
void sm_cdg_chan_parts(const struct sm_cdg *g, uint32_t chan, int *node,
		       int *port, int *vl);
/* Is a -> b a dependency? O(log degree). */
bool sm_cdg_has_edge(const struct sm_cdg *g, uint32_t a, uint32_t b);

/*
 * One cycle of the CDG (when there is one) and how much of the graph lies
 * on cycles. chan[0] -> chan[1] -> ... -> chan[len - 1] -> chan[0] are
 * dependencies.
 */
struct sm_cdg_cycle {
	uint32_t *chan;
	uint32_t len;
	int vl;			/* VL of the cycle (all its channels share it) */
	uint32_t nsccs;		/* strongly connected components holding a cycle */
	uint32_t nchans;	/* channels in those components */
	uint16_t vl_mask;	/* VLs that have a cycle */
};

/*
 * Find the strongly connected components (Tarjan, iterative: no recursion,
 * however many channels) and, in the one whose smallest channel id is
 * lowest, the shortest cycle through that channel (BFS), so the cycle shown
 * is short and the same on every run. Returns 1 (c filled), 0 (acyclic,
 * c zeroed) or -1 (out of memory, diag filled).
 */
int sm_cdg_find_cycle(const struct sm_cdg *g, struct sm_cdg_cycle *c,
		      struct sim_diag *d);
void sm_cdg_cycle_free(struct sm_cdg_cycle *c);

/* "desc[port]" of a channel's transmitting port; like snprintf. */
int sm_cdg_chan_str(const struct sm_cdg *g, uint32_t chan, char *buf, size_t len);
/*
 * The cycle as "sw0[3] -> sw1[3] -> sw2[3] -> sw3[3] -> sw0[3]" (each
 * element the port a channel leaves by; the first repeated at the end).
 * Like snprintf: returns the length the whole text needs, so a caller can
 * size its buffer; output is truncated, and always terminated, to len.
 */
int sm_cdg_cycle_str(const struct sm_cdg *g, const struct sm_cdg_cycle *c,
		     char *buf, size_t len);

#endif
