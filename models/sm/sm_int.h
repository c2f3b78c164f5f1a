/* SPDX-License-Identifier: MIT */
/*
 * sm_int.h - what the routing engines share (sm_common.c); not a public API.
 *
 * Every engine starts the same way: LIDs assigned, every switch's LFT reset
 * to "no route" with port 0 for its own LID, and each endpoint LID (every
 * LID of every CA or router port, LMC included) written into the switch the
 * port is cabled to. What differs is how the other switches reach those
 * switches, so the endpoint LIDs are grouped by the switch they hang off
 * and the engines route group by group, as OpenSM does per destination
 * port.
 */
#ifndef IBFAB_SM_INT_H
#define IBFAB_SM_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "models/sm/sm.h"

struct sm_topo {
	struct net *n;
	int nsw;
	int *sw;		/* switch index -> node */
	int *swi;		/* node -> switch index, -1 for other nodes */
	int maxports;		/* most ports of any switch */
	/* endpoint LIDs by the switch they hang off: ep_lid[ep_first[s] ..
	 * ep_first[s + 1]), ascending, with the switch port they leave by
	 * and the CA/router (node, port) they belong to */
	int *ep_first;
	net_lid_t *ep_lid;
	uint8_t *ep_port;
	int *ep_node;
	uint8_t *ep_nport;
	int nep;
	/* [switch][port]: LIDs routed out of that port so far (balancing) */
	uint32_t **load;
	/* scratch for engines: per switch, two ints */
	int *dist, *queue;
};

/*
 * LIDs for routing: assigned (net_assign_lids_lmc) when there are none, or
 * when o->lmc is nonzero and differs from the LMC they have. 0 or -1.
 */
int sm_lids(struct net *n, const struct sm_opts *o, struct sim_diag *d);

/*
 * Assign LIDs with o->lmc when none are assigned (or a different LMC is
 * asked for), reset every LFT and route the endpoint LIDs at their own
 * switch. Returns 0 or -1 (diag filled).
 */
int sm_topo_init(struct sm_topo *t, struct net *n, const struct sm_opts *o,
		 struct sim_diag *d);
void sm_topo_free(struct sm_topo *t);

/* Switch index of the remote end of switch s's port p, or -1. */
static inline int sm_peer(const struct sm_topo *t, int s, int p)
{
	int r = t->n->nodes[t->sw[s]].ports[p].remote_node;

	return r < 0 ? -1 : t->swi[r];
}

/*
 * Route `lid` at switch s over the least-loaded of ports cand[0..k-1] (ties
 * to the lowest port number), counting it. k must be > 0.
 */
/* Hop counts from switch `from` to every switch over switch-to-switch
 * cables (dist[s] = -1: unreachable); uses t->queue. */
void sm_bfs(struct sm_topo *t, int from, int *dist);
void sm_route_lid(struct sm_topo *t, int s, net_lid_t lid, const int *cand, int k);
/* The same without counting it: switch LIDs, which OpenSM leaves out of
 * the balance (port_profile_switch_nodes off). */
void sm_route_lid_uncounted(struct sm_topo *t, int s, net_lid_t lid, const int *cand, int k);
/*
 * OpenSM's order of destinations (osm_ucast_mgr.c, ucast_mgr_build_lfts):
 * switches with the most endpoints first, then in the order of OpenSM's
 * switch table, by the byte-swapped GUID (its key is in network byte
 * order; OpenSM runs on little-endian hosts) (sw[] gets them);
 * each switch's endpoint LIDs by the port they hang off, every port's base
 * LID before any port's second (ep[] gets the indexes into ep_lid, switch
 * by switch as ep_first). Returns 0.
 */
int sm_dest_order(const struct sm_topo *t, int *sw, int *ep);
/* The switch part of it for any grouping: order[] gets switches 0..nsw-1
 * (nodes sw[]), those with most entries in [first[s], first[s + 1])
 * first, then by GUID. */
void sm_sort_dests(const struct net *n, const int *sw, int nsw, const int *first, int *order);

/*
 * Match a comma-separated list of switches (node description, node id, or
 * GUID as 0x-hex) against the net: sets mark[switch index] = 1 for each.
 * Returns the number marked, or -1 with d naming the unknown item.
 */
int sm_parse_switch_list(const struct sm_topo *t, const char *list,
			 const char *what, char *mark, struct sim_diag *d);

/* Write o->note (when the caller gave a buffer). */
void sm_note(const struct sm_opts *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Switch names for a note: "a,b,c" or "a,b,... (N)" when long. */
void sm_note_switches(const struct sm_topo *t, const char *mark, char *buf,
		      unsigned len);

/* Key of a switch for deterministic tie-breaks: its GUID when known. */
uint64_t sm_switch_key(const struct sm_topo *t, int s);

/* The engines (sm_route.c registers them). */
int sm_route_updn(struct net *n, const struct sm_opts *o, struct sim_diag *d);
int sm_route_ftree(struct net *n, const struct sm_opts *o, struct sim_diag *d);
int sm_route_dor(struct net *n, const struct sm_opts *o, struct sim_diag *d);

#endif
