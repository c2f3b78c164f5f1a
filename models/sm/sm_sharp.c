/* SPDX-License-Identifier: MIT */
/*
 * sm_sharp.c - the SHARP aggregation manager: which switches reduce a
 * job's allreduce, and the aggregation nodes that do it.
 *
 * What it models. An NVIDIA switch that supports SHARP (Switch-IB 2,
 * Quantum, Quantum-2) holds an Aggregation Node (AN): an endpoint of its
 * own, with its own port GUID and LID, that ibdiagnet --sharp lists beside
 * the switch ("AN:Mellanox Technologies Aggregation Node, lid:48, port
 * guid:..."; NVIDIA ibdiagnet User Manual, SHARP Support). The Aggregation
 * Manager (sharp_am, beside the subnet manager) builds trees of ANs that
 * follow the fabric's routes (it needs updn, ftree, ar_updn or ar_ftree on
 * trees: NVIDIA SHARP documentation, "Setting up NVIDIA SHARP Environment")
 * and gives a job one; members send their data to the AN of their leaf
 * switch, ANs reduce and pass the sum up over the tree's reliable
 * connections, and the root's result comes back down.
 *
 * Here an AN is a CA flagged `agg` on a new internal port of its switch
 * (port N + 1, as ibnetdiscover shows the AN of a Quantum beyond its 40
 * cabled ports), with no cable length, and as wide as all the streams it
 * reduces: its children's links plus its parent's (a Quantum aggregates at
 * line rate on every port: streaming aggregation, SHARPv2), with that
 * many cables' buffer as credits (port.c: an internal link is not bound by
 * IB's 12-bit credit window) and queued per output at the switch (sw.c),
 * as the switch's own data path is. Its LID is
 * routed by every switch as the switch's own LID is, and by its switch to
 * the internal port. The transport is the HCA model's RC, without a host
 * behind it (no PCIe, no DMA: the AN is in the switch's data path).
 *
 * The tree: the root is the switch nearest to every member's leaf switch
 * (fewest LFT hops from the farthest leaf; the lowest index among equals:
 * on a fat tree a top switch, the first one); a switch's parent is the
 * next switch on its LFT route to the root. Left out: several trees per
 * job (SHARP's aggregation trees on Quantum-2, one per port), ANs' limits
 * on groups and outstanding operations, and recomputing trees after a
 * fault.
 */
#include "models/sm/sm_sharp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/sm/sm.h"

void sm_sharp_tree_free(struct sm_sharp_tree *t)
{
	free(t->node);
	free(t->sw);
	free(t->parent);
	free(t->children);
	memset(t, 0, sizeof(*t));
}

/* The switch a CA's first cable leads to, or -1. */
static int leaf_of(const struct net *n, int ca)
{
	int p = net_first_port(n, ca), r;

	if (p < 0)
		return -1;
	r = n->nodes[ca].ports[p].remote_node;
	return r >= 0 && n->nodes[r].type == NET_SWITCH ? r : -1;
}

/* The next switch on sw's LFT route to switch `to`, or -1. */
static int next_switch(const struct net *n, int sw, int to)
{
	const struct net_node *s = &n->nodes[sw];
	net_lid_t lid = n->nodes[to].lid;
	int port, r;

	if (!s->lft || lid >= s->lft_len)
		return -1;
	port = s->lft[lid];
	if (port < 1 || port > s->nports)
		return -1;
	r = s->ports[port].remote_node;
	return r >= 0 && n->nodes[r].type == NET_SWITCH ? r : -1;
}

/* Width of a switch's cables (its first switch-to-anything port), and speed. */
static void cable_rate(const struct net *n, int sw, uint8_t *lanes, uint8_t *speed)
{
	const struct net_node *s = &n->nodes[sw];

	*lanes = 4;	/* the IB default width when the file gives none */
	*speed = LINK_SPEED_NONE;
	for (int p = 1; p <= s->nports; p++)
		if (s->ports[p].remote_node >= 0) {
			if (s->ports[p].lanes)
				*lanes = s->ports[p].lanes;
			*speed = s->ports[p].speed;
			return;
		}
}

/* Add port nports + 1 to switch sw. 0 or -1. */
static int add_port(struct net *n, int sw)
{
	struct net_node *s = &n->nodes[sw];
	struct net_port *np = realloc(s->ports, ((size_t)s->nports + 2) * sizeof(*np));

	if (!np)
		return -1;
	s->ports = np;
	s->nports++;
	memset(&np[s->nports], 0, sizeof(np[0]));
	np[s->nports].remote_node = -1;
	np[s->nports].remote_port = -1;
	np[s->nports].cable_m = 0;
	return 0;
}

int sm_sharp_attach(struct net *n, const int32_t *member_node, int nmembers,
		    struct sm_sharp_tree *t, int32_t *member_agg, struct sim_diag *d)
{
	int nn = n->nnodes, rootsw = -1, best = -1, na = 0;
	int *parent = NULL, *agg_of = NULL, *leaves = NULL, nleaves = 0;
	uint32_t need;
	int rc = -1;

	memset(t, 0, sizeof(*t));
	parent = malloc((size_t)nn * sizeof(*parent));	/* per switch: next one up, -2 not in the tree */
	agg_of = malloc((size_t)nn * sizeof(*agg_of));	/* per switch: its AN index */
	leaves = malloc(((size_t)nmembers + 1) * sizeof(*leaves));
	if (!parent || !agg_of || !leaves)
		goto oom;
	for (int i = 0; i < nn; i++) {
		parent[i] = -2;
		agg_of[i] = -1;
	}
	/* the members' leaf switches, each once */
	for (int m = 0; m < nmembers; m++) {
		int sw = leaf_of(n, member_node[m]);

		if (sw < 0) {
			sim_diag_set(d, n->nodes[member_node[m]].file, n->nodes[member_node[m]].line, 0,
				     "SHARP: host '%s' is not cabled to a switch: aggregation happens in switches",
				     n->nodes[member_node[m]].desc);
			goto out;
		}
		if (agg_of[sw] == -1) {
			agg_of[sw] = -3;	/* a leaf, seen */
			leaves[nleaves++] = sw;
		}
	}
	/* the root: fewest hops from the farthest leaf */
	for (int s = 0; s < nn; s++) {
		int worst = 0;

		if (n->nodes[s].type != NET_SWITCH || !n->nodes[s].lid)
			continue;
		for (int k = 0; k < nleaves && worst >= 0; k++) {
			int h = 0, at = leaves[k];

			while (at != s && at >= 0 && h <= nn) {
				at = next_switch(n, at, s);
				h++;
			}
			worst = at == s && h > worst ? h : at == s ? worst : -1;
		}
		if (worst >= 0 && (best < 0 || worst < best)) {
			best = worst;
			rootsw = s;
		}
	}
	if (rootsw < 0) {
		sim_diag_set(d, NULL, 0, 0,
			     "SHARP: no switch is reached by the routes from every leaf switch of the job");
		goto out;
	}
	/* the tree: every switch on a leaf's route to the root */
	parent[rootsw] = -1;
	for (int k = 0; k < nleaves; k++)
		for (int at = leaves[k]; parent[at] == -2;) {
			int up = next_switch(n, at, rootsw);

			parent[at] = up;
			at = up;
		}
	for (int s = 0; s < nn; s++) {
		agg_of[s] = -1;
		if (parent[s] != -2)
			agg_of[s] = na++;
	}
	t->node = malloc((size_t)na * sizeof(*t->node));
	t->sw = malloc((size_t)na * sizeof(*t->sw));
	t->parent = malloc((size_t)na * sizeof(*t->parent));
	t->children = calloc((size_t)na, sizeof(*t->children));
	if (!t->node || !t->sw || !t->parent || !t->children)
		goto oom;
	t->nagg = na;
	for (int s = 0; s < nn; s++) {
		int a = agg_of[s];

		if (a < 0)
			continue;
		t->sw[a] = s;
		t->parent[a] = parent[s] >= 0 ? agg_of[parent[s]] : -1;
		if (parent[s] >= 0)
			t->children[agg_of[parent[s]]]++;
		if (n->nodes[s].nports >= NET_MAX_PORTS) {
			sim_diag_set(d, n->nodes[s].file, n->nodes[s].line, 0,
				     "SHARP: switch '%s' has %d ports: no room for its aggregation node's",
				     n->nodes[s].desc, n->nodes[s].nports);
			goto out;
		}
	}
	for (int m = 0; m < nmembers; m++) {
		int a = agg_of[leaf_of(n, member_node[m])];

		member_agg[m] = a;
		t->children[a]++;
	}
	need = (uint32_t)n->max_lid + (uint32_t)na;
	if (need > NET_LID_UCAST_MAX) {
		sim_diag_set(d, NULL, 0, 0,
			     "SHARP: %d aggregation nodes need LIDs up to %u, beyond the unicast range (%u)",
			     na, need, NET_LID_UCAST_MAX);
		goto out;
	}

	/* now change the net: nothing above refused */
	int *lid_node = realloc(n->lid_node, ((size_t)need + 1) * sizeof(*lid_node));

	if (!lid_node)
		goto oom;
	n->lid_node = lid_node;
	uint8_t *lid_port = realloc(n->lid_port, ((size_t)need + 1) * sizeof(*lid_port));

	if (!lid_port)
		goto oom;
	n->lid_port = lid_port;
	for (int a = 0; a < na; a++) {
		int s = t->sw[a], node;
		net_lid_t lid = (net_lid_t)(n->max_lid + 1 + a);
		uint8_t lanes, speed;
		uint32_t w;
		char id[96], desc[160];

		cable_rate(n, s, &lanes, &speed);
		/* its children's streams and its parent's, each at a cable's rate */
		w = (uint32_t)lanes * (t->children[a] + (t->parent[a] >= 0));
		snprintf(id, sizeof(id), "AN-%s", n->nodes[s].id);
		snprintf(desc, sizeof(desc), "%s aggregation node", n->nodes[s].desc);
		node = net_add_node(n, NET_CA, 1, id, desc, d);
		if (node < 0 || add_port(n, s))
			goto oom;
		t->node[a] = node;
		n->nodes[node].agg = true;
		n->nodes[node].lid = 0;
		if (net_connect(n, s, n->nodes[s].nports, node, 1, 0, d))
			goto out;
		for (int end = 0; end < 2; end++) {
			struct net_port *p = end ? &n->nodes[node].ports[1] :
				&n->nodes[s].ports[n->nodes[s].nports];

			p->internal = true;
			p->lanes = (uint8_t)(w > 252 ? 252 : w);	/* 8 bits; 63 x 4x */
			p->speed = speed;
			p->cable_m = 0;
		}
		n->nodes[node].ports[1].lid = lid;
		lid_node[lid] = node;
		lid_port[lid] = 1;
	}
	/* every switch routes an AN's LID as its switch's, the switch itself
	 * to the internal port */
	for (int s = 0; s < n->nnodes; s++) {
		struct net_node *sn = &n->nodes[s];
		uint8_t *lft;

		if (sn->type != NET_SWITCH || !sn->lft)
			continue;
		if (sn->lft_len <= need) {	/* room for the new LIDs */
			lft = realloc(sn->lft, (size_t)need + 1);
			if (!lft)
				goto oom;
			for (uint32_t l = sn->lft_len; l <= need; l++)
				lft[l] = SM_NO_ROUTE;
			sn->lft = lft;
			sn->lft_len = need + 1;
		}
		lft = sn->lft;
		for (int a = 0; a < na; a++) {
			net_lid_t lid = (net_lid_t)(n->max_lid + 1 + a), swlid = n->nodes[t->sw[a]].lid;

			if (s == t->sw[a])
				lft[lid] = (uint8_t)sn->nports;
			else
				lft[lid] = swlid < n->max_lid + 1u ? lft[swlid] : SM_NO_ROUTE;
		}
	}
	n->max_lid = (net_lid_t)need;
	rc = 0;
	goto out;
oom:
	if (!d->msg[0])
		sim_diag_set(d, NULL, 0, 0, "out of memory");
out:
	if (rc)
		sm_sharp_tree_free(t);
	free(parent);
	free(agg_of);
	free(leaves);
	return rc;
}
