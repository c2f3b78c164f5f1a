/* SPDX-License-Identifier: MIT */
/*
 * sm_sharp.h - the SHARP aggregation manager: a tree of aggregation nodes
 * in the switches for a job (NVIDIA SHARP, "Aggregation Manager"; Graham
 * et al., COMHPC 2016). See sm_sharp.c and docs/sharp.md.
 */
#ifndef IBFAB_SM_SHARP_H
#define IBFAB_SM_SHARP_H

#include <stdint.h>

#include "models/net/net.h"
#include "sim/sim_diag.h"

struct sm_sharp_tree {
	int nagg;		/* aggregation nodes */
	int *node;		/* aggregation node i: its CA in the net */
	int *sw;		/* ... the switch it is in */
	int32_t *parent;	/* ... the aggregation node above it, -1 at the root */
	uint32_t *children;	/* ... members and aggregation nodes below it */
};

/*
 * Give the job whose ranks sit on the CAs member_node[0..n) a tree, and
 * put it in the fabric: one aggregation node (a CA flagged `agg`, cabled
 * to a new internal port of its switch, with its own LID routed by every
 * switch's LFT like the switch's own) in every switch on the LFT paths
 * from the members' leaf switches to the root, the switch nearest to all
 * of them (fewest hops from the farthest leaf, by the LFTs). After the
 * routing, before the fabric is built. member_agg[r]: rank r's leaf
 * aggregation node. 0, or -1 with d set (a member not cabled to a switch,
 * no route, no port or LID left); the net is then unchanged.
 */
int sm_sharp_attach(struct net *n, const int32_t *member_node, int nmembers,
		    struct sm_sharp_tree *t, int32_t *member_agg, struct sim_diag *d);
void sm_sharp_tree_free(struct sm_sharp_tree *t);

#endif
