/* SPDX-License-Identifier: MIT */
/*
 * sm_mp.c - every switch's equal-cost output ports towards every
 * destination switch (sm_mp.h).
 *
 * A port belongs to the set towards destination switch D when the switch
 * at its far end is one hop closer to D, by breadth-first distances over
 * the switches alone: the shortest paths, as Clos fabrics' ECMP routes and
 * as the AR groups of NVIDIA's adaptive routing hold them on fat trees
 * (each up-port towards the spines, the one down-port towards the leaf).
 * A destination is the switch a CA port is cabled to, so the hosts of one
 * leaf share their sets; the last hop, from that switch to the CA, is the
 * LFT's. Cables cut before routing (state=down) are not in the graph, so
 * no set holds them.
 *
 * Memory: one 16-bit distance per (destination switch, node), and one byte
 * per port in each switch's sets: a 1,024-host two-level tree with 64 leaves
 * holds 64 x 96 distances and, per leaf, 63 sets of 8 up-ports.
 * Left out: sets over non-minimal paths (the up-then-down detours updn
 * may take on irregular fabrics) and weights by link rate.
 */
#include "models/sm/sm_mp.h"

#include <stdlib.h>
#include <string.h>

#define FAR 0xffff

/* The switch a node's port leads to, or -1. */
static int peer_switch(const struct net *net, int node, int port)
{
	const struct net_port *np = &net->nodes[node].ports[port];

	if (np->remote_node < 0 || net->nodes[np->remote_node].type != NET_SWITCH)
		return -1;
	return np->remote_node;
}

struct sm_mp *sm_mp_build(const struct net *net)
{
	struct sm_mp *e = calloc(1, sizeof(*e));
	int32_t *dst_node = NULL;	/* destination index -> switch node */
	int32_t *dst_idx = NULL;	/* switch node -> destination index */
	int *queue = NULL;

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
			uint16_t lid = net_lid_of(net, i, pp);

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
	if (!e->dist && e->ndst)
		goto fail;
	/* breadth-first from each destination switch, over switches only */
	for (uint32_t d = 0; d < e->ndst; d++) {
		uint16_t *dist = &e->dist[(size_t)d * (size_t)net->nnodes];
		int head = 0, tail = 0;

		for (int i = 0; i < net->nnodes; i++)
			dist[i] = FAR;
		dist[dst_node[d]] = 0;
		queue[tail++] = dst_node[d];
		while (head < tail) {
			int u = queue[head++];

			for (int pp = 1; pp <= net->nodes[u].nports; pp++) {
				int v = peer_switch(net, u, pp);

				if (v >= 0 && dist[v] == FAR) {
					dist[v] = (uint16_t)(dist[u] + 1);
					queue[tail++] = v;
				}
			}
		}
	}
	free(dst_node);
	free(dst_idx);
	free(queue);
	return e;
fail:
	free(dst_node);
	free(dst_idx);
	free(queue);
	sm_mp_free(e);
	return NULL;
}

void sm_mp_free(struct sm_mp *mp)
{
	if (!mp)
		return;
	free(mp->dst_of_lid);
	free(mp->dist);
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
		uint32_t off = nports, cnt;

		if (dist[node] == 0 || dist[node] == FAR)
			continue;	/* its own hosts, or none reachable: the LFT */
		for (int pp = 1; pp <= n->nports; pp++) {
			int v = peer_switch(net, node, pp);

			if (v >= 0 && dist[v] + 1 == dist[node])
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
