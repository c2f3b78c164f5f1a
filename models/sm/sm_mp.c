/* SPDX-License-Identifier: MIT */
/*
 * sm_mp.c - every switch's equal-cost output ports towards every
 * destination switch (sm_mp.h).
 *
 * The sets follow up-then-down paths, as NVIDIA's OpenSM's ar_updn
 * engine keeps its AR groups free of credit loops: a switch's level is 1
 * where a CA hangs on it and one more per cable away from those. Towards
 * destination switch D, a switch above D (D reachable going down one level
 * a hop) offers the down-ports on its shortest way down; any other, the
 * up-ports to the switches a level higher with the shortest up-then-down
 * path. A packet that went down is then at a switch above D and only goes
 * down again: every route is up, then down, and no cycle of channel
 * dependencies can form (the up/down argument: Schroeder et al., Autonet,
 * IEEE JSAC 1991). On fat trees these are all the minimal paths (the
 * "TREE" groups: "all ports with minimal hops to destination"); on tori,
 * meshes and rings, where every switch has CAs and so level 1, there are
 * none, and the LFT routes alone (NVIDIA's LAG and DF_PLUS groups for
 * those are left out). A destination is the switch a CA port is cabled to,
 * so the hosts of one leaf share their sets; the last hop, from that switch
 * to the CA, is the LFT's. Cables cut before routing (state=down) are not
 * in the graph, so no set holds them.
 *
 * Memory: one 16-bit distance per (destination switch, node), and one byte
 * per port in each switch's sets: a 1,024-host two-level tree with 64 leaves
 * holds 64 x 96 distances and, per leaf, 63 sets of 8 up-ports.
 * Left out: weights by link rate; links between switches of one level,
 * which no set uses.
 */
#include "models/sm/sm_mp.h"

#include <stdlib.h>
#include <string.h>

#define FAR 0xffff	/* no up-then-down path (also: no level) */

/* The switch a node's port leads to, or -1. */
static int peer_switch(const struct net *net, int node, int port)
{
	const struct net_port *np = &net->nodes[node].ports[port];

	if (np->remote_node < 0 || net->nodes[np->remote_node].type != NET_SWITCH)
		return -1;
	return np->remote_node;
}

/*
 * Every switch's level: 1 for those a CA hangs on, then breadth-first
 * over the switch cables (FAR: no CA below it, or none reachable). Fills
 * order[] with the switches by level, lowest first; returns their count.
 */
static int levels(const struct net *net, uint16_t *level, int *queue, int *order)
{
	int head = 0, tail = 0;

	for (int i = 0; i < net->nnodes; i++) {
		level[i] = FAR;
		/* a switch's aggregation node (SHARP) does not make it a leaf */
		if (net->nodes[i].type == NET_SWITCH || net->nodes[i].agg)
			continue;
		for (int pp = 1; pp <= net->nodes[i].nports; pp++) {
			int sw = peer_switch(net, i, pp);

			if (sw >= 0 && level[sw] == FAR) {
				level[sw] = 1;
				queue[tail++] = sw;
			}
		}
	}
	while (head < tail) {
		int u = queue[head++];

		for (int pp = 1; pp <= net->nodes[u].nports; pp++) {
			int v = peer_switch(net, u, pp);

			if (v >= 0 && level[v] == FAR) {
				level[v] = (uint16_t)(level[u] + 1);
				queue[tail++] = v;
			}
		}
	}
	memcpy(order, queue, (size_t)tail * sizeof(*order));
	return tail;
}

/*
 * The up-then-down distances towards destination switch D, into dist[]:
 * the switches above D (down flag) by the cables that go down one level
 * at a time, breadth-first from D; the others, from the top level down,
 * one more than their best neighbour a level up.
 */
static void updown(const struct net *net, const uint16_t *level, const int *order, int nsw,
		   int dst, int *queue, uint16_t *dist)
{
	int head = 0, tail = 0;

	for (int i = 0; i < net->nnodes; i++)
		dist[i] = FAR;
	dist[dst] = SM_MP_DOWN;
	queue[tail++] = dst;
	while (head < tail) {
		int u = queue[head++];

		for (int pp = 1; pp <= net->nodes[u].nports; pp++) {
			int v = peer_switch(net, u, pp);

			if (v >= 0 && level[v] == level[u] + 1 && dist[v] == FAR) {
				dist[v] = (uint16_t)(dist[u] + 1);
				queue[tail++] = v;
			}
		}
	}
	for (int k = nsw - 1; k >= 0; k--) {
		int u = order[k];
		uint16_t best = FAR;

		if (dist[u] != FAR)
			continue;
		for (int pp = 1; pp <= net->nodes[u].nports; pp++) {
			int v = peer_switch(net, u, pp);

			if (v >= 0 && level[v] == level[u] + 1 && dist[v] != FAR &&
			    (dist[v] & SM_MP_HOPS) < best)
				best = dist[v] & SM_MP_HOPS;
		}
		if (best != FAR && best + 1 < SM_MP_HOPS)
			dist[u] = (uint16_t)(best + 1);
	}
}

struct sm_mp *sm_mp_build(const struct net *net)
{
	struct sm_mp *e = calloc(1, sizeof(*e));
	int32_t *dst_node = NULL;	/* destination index -> switch node */
	int32_t *dst_idx = NULL;	/* switch node -> destination index */
	int *queue = NULL, *order = NULL, nsw;

	if (!e)
		return NULL;
	e->nnodes = net->nnodes;
	dst_node = malloc(((size_t)net->nnodes + 1) * sizeof(*dst_node));
	dst_idx = malloc(((size_t)net->nnodes + 1) * sizeof(*dst_idx));
	queue = malloc(((size_t)net->nnodes + 1) * sizeof(*queue));
	if (!dst_node || !dst_idx || !queue)
		goto fail;
	for (int i = 0; i < net->nnodes; i++)
		dst_idx[i] = -1;
	/* every CA port's LID, and the switch it hangs on */
	for (int i = 0; i < net->nnodes; i++) {
		const struct net_node *n = &net->nodes[i];

		if (n->type == NET_SWITCH)
			continue;
		for (int pp = 1; pp <= n->nports; pp++) {
			int sw = peer_switch(net, i, pp);
			net_lid_t lid = net_lid_of(net, i, pp);

			if (sw < 0 || !lid)
				continue;
			if (lid >= e->nlid) {
				uint32_t cap = (uint32_t)lid + 1;
				uint32_t *v = realloc(e->dst_of_lid, cap * sizeof(*v));

				if (!v)
					goto fail;
				for (uint32_t k = e->nlid; k < cap; k++)
					v[k] = SM_MP_NONE;
				e->dst_of_lid = v;
				e->nlid = cap;
			}
			if (dst_idx[sw] < 0) {
				dst_idx[sw] = (int32_t)e->ndst;
				dst_node[e->ndst++] = sw;
			}
			e->dst_of_lid[lid] = (uint32_t)dst_idx[sw];
		}
	}
	e->dist = malloc((size_t)e->ndst * (size_t)net->nnodes * sizeof(*e->dist));
	e->level = malloc(((size_t)net->nnodes + 1) * sizeof(*e->level));
	order = malloc(((size_t)net->nnodes + 1) * sizeof(*order));
	if ((!e->dist && e->ndst) || !e->level || !order)
		goto fail;
	nsw = levels(net, e->level, queue, order);
	for (uint32_t d = 0; d < e->ndst; d++)
		updown(net, e->level, order, nsw, dst_node[d], queue,
		       &e->dist[(size_t)d * (size_t)net->nnodes]);
	free(order);
	free(dst_node);
	free(dst_idx);
	free(queue);
	return e;
fail:
	free(dst_node);
	free(dst_idx);
	free(queue);
	free(order);
	sm_mp_free(e);
	return NULL;
}

void sm_mp_free(struct sm_mp *mp)
{
	if (!mp)
		return;
	free(mp->dst_of_lid);
	free(mp->dist);
	free(mp->level);
	free(mp);
}

int sm_mp_sw_init(struct sm_mp_sw *s, const struct sm_mp *mp, const struct net *net, int node)
{
	const struct net_node *n = &net->nodes[node];
	uint32_t nports = 0;

	s->grp = calloc(mp->ndst ? mp->ndst : 1, sizeof(*s->grp));
	s->port = malloc(((size_t)mp->ndst * (size_t)n->nports + 1) * sizeof(*s->port));
	if (!s->grp || !s->port) {
		sm_mp_sw_fini(s);
		return -1;
	}
	for (uint32_t d = 0; d < mp->ndst; d++) {
		const uint16_t *dist = &mp->dist[(size_t)d * (size_t)net->nnodes];
		uint16_t here = dist[node], hops = here & SM_MP_HOPS;
		/* above the destination: down a level; else up a level */
		int step = here & SM_MP_DOWN ? -1 : 1;
		uint32_t off = nports, cnt;

		if (here == FAR || hops == 0)
			continue;	/* none reachable, or its own hosts: the LFT */
		for (int pp = 1; pp <= n->nports; pp++) {
			int v = peer_switch(net, node, pp);

			if (v >= 0 && mp->level[v] == mp->level[node] + step && dist[v] != FAR &&
			    (dist[v] & SM_MP_HOPS) + 1 == hops &&
			    (step > 0 || (dist[v] & SM_MP_DOWN)))
				s->port[nports++] = (uint8_t)pp;
		}
		cnt = nports - off;
		s->grp[d] = off << 8 | (cnt > 255 ? 255 : cnt);
	}
	return 0;
}

void sm_mp_sw_fini(struct sm_mp_sw *s)
{
	free(s->grp);
	free(s->port);
	s->grp = NULL;
	s->port = NULL;
}
