/* SPDX-License-Identifier: MIT */
/*
 * sm.h - the subnet manager: LID assignment and unicast routing.
 *
 * The SM's output is what a real SM writes into every switch: the
 * LinearForwardingTable (IBA vol. 1 §14.2.5.10), one output port per
 * destination LID, 255 meaning "no route" (the LFT's invalid port), and port
 * 0 for the switch's own LID (its management port). The tables live in
 * struct net_node (lft, lft_len = max_lid + 1).
 *
 * Engines (docs/routing.md): minhop (OpenSM's default): each switch sends
 * every LID over a port on a shortest path, balancing among the equal-hop
 * ports by the number of destination LIDs already routed through each;
 * updn (up-then-down paths from roots), ftree (fat trees), dor (meshes and tori).
 */
#ifndef IBFAB_SM_H
#define IBFAB_SM_H

#include <stdint.h>

#include "models/net/net.h"
#include "sim/sim_diag.h"

#define SM_NO_ROUTE 255		/* LFT entry: drop (IBA 14.2.5.10) */

/*
 * Assign LIDs (net_assign_lids) unless that was done, then fill every
 * switch's LFT with min-hop routes. Deterministic: among the ports on a
 * shortest path, the one with the fewest LIDs routed so far, ties to the
 * lowest port number. Returns 0 or -1 (diag filled).
 */
int sm_route_minhop(struct net *n, struct sim_diag *d);

/*
 * Hop count (links) from switch sw_node to the port owning `lid` over any
 * shortest path through switches, found by BFS (ignores the LFTs: use it to
 * check them). 0 for the switch's own LID, -1 if unreachable or not a LID.
 * O(nodes + links) per call.
 */
int sm_hops(const struct net *n, int sw_node, net_lid_t lid);

/*
 * Follow the LFTs from CA src_ca (leaving by its first connected port) to
 * dlid. Fills nodes[i] / ports[i] with every node visited and the port it
 * was left by; the last entry is the destination with the port the packet
 * arrived on (a CA) or 0 (a switch's own LID). Returns the number of
 * entries (links crossed + 1), or -1 if there is no route, the route loops,
 * or it needs more than `max` entries.
 */
int sm_path(const struct net *n, int src_ca, net_lid_t dlid, int *nodes,
	    int *ports, int max);

/* Options of the routing engines (OpenSM's names and meanings). */
struct sm_opts {
	const char *roots;	/* updn/ftree: comma list of root node names or GUIDs; NULL = automatic */
	uint8_t lmc;		/* LIDs per CA port = 2^lmc (IBA 7.11.1); 0..7.
				 * 0 keeps the LIDs already assigned (or the file's) */
	const char *sm;		/* the node the SM runs on (description, id or "#k"):
				 * LIDs, when assigned, start at its port; NULL = the
				 * file's first node, where ibsim attaches it */
	/* Out: when note is not NULL, the engine writes one line saying what it
	 * chose ("roots spine0,spine1", "3 levels", "2D torus 4x4") */
	char *note;
	unsigned note_len;
};

/* A routing engine: fills every switch's LFT (LIDs assigned first). */
struct sm_engine {
	const char *name;
	const char *help;	/* one line for --help */
	int (*route)(struct net *n, const struct sm_opts *o, struct sim_diag *d);
};

/* The engines, NULL-terminated (sm_route.c). */
extern const struct sm_engine *const sm_engines[];
const struct sm_engine *sm_engine_find(const char *name);

/*
 * Route with the named engine (NULL or "" = minhop; o may be NULL). LIDs
 * are assigned first when there are none, or when o->lmc is nonzero and
 * differs from theirs (net_assign_lids_lmc). An unknown name is an error
 * listing the known ones; so is a topology the engine cannot route (ftree
 * on a non-tree, dor on a grid with a cable missing, updn roots that leave
 * a pair without an up/down path), with the switch or cable named. Returns
 * 0 or -1 (diag filled). Every engine routes every LID of every CA port.
 */
int sm_route(struct net *n, const char *engine, const struct sm_opts *o,
	     struct sim_diag *d);

/*
 * Links crossed from switch sw_node to the port owning `lid`, following the
 * LFTs (the last cable into a CA counts; 0 for the switch's own LID), or -1:
 * no route, a loop, or a delivery to the wrong port. Compare with sm_hops()
 * to see whether routes are shortest.
 */
int sm_lft_hops(const struct net *n, int sw_node, net_lid_t lid);

/*
 * How evenly the LFTs spread the CA-to-CA paths. A path is one (source,
 * destination LID) pair: every host leaving by its first connected port,
 * as the simulation sends, to the base LID of every other host's first port
 * (SM_BAL_ALL_LIDS: to every LID of every CA port, LMC included). Counted
 * per link direction, with a pass per destination over the tree the LFTs
 * form towards it, so O(LIDs x switches) and no walk per pair.
 */
#define SM_BAL_ALL_LIDS	1
#define SM_BAL_PATHS	2	/* fill paths[][] */
#define SM_MAX_HOPS	63

struct sm_balance {
	uint64_t pairs;		/* source-destination pairs */
	uint64_t unrouted;	/* pairs the LFTs do not deliver */
	int links;		/* switch-to-switch link directions */
	uint32_t max_paths;	/* most paths on one switch-to-switch direction */
	uint32_t min_paths;	/* fewest (0 when a direction is unused) */
	double mean_paths;
	int max_node, max_port;	/* a direction carrying max_paths (-1: none) */
	uint64_t hops[SM_MAX_HOPS + 1];	/* paths by length in links */
	int max_hops;
	uint32_t **paths;	/* SM_BAL_PATHS: [node][port] paths leaving by it */
};

/* Fill b (zeroed first). Returns 0 or -1 (out of memory, diag filled). */
int sm_balance(const struct net *n, unsigned flags, struct sm_balance *b,
	       struct sim_diag *d);
void sm_balance_free(const struct net *n, struct sm_balance *b);

#endif
