/* SPDX-License-Identifier: MIT */
/*
 * eth_ecmp.c - equal-cost multi-path forwarding at the Ethernet switches
 * (eth.lb=ecmp, the default), as Clos data-centre fabrics route: a switch
 * sends a packet to one of its output ports on a shortest path to the
 * destination, chosen by a hash of the packet's flow, so that a flow's
 * packets keep one path (RoCE's RC needs them in order) and different
 * flows spread. The flow is the RoCEv2 5-tuple: source and destination
 * addresses (the LIDs stand for them), UDP source port (which NICs derive
 * from the QP number, so the QP stands for it) and destination port
 * (4791); for TCP the two QPs stand for the two ports. Two flows that hash
 * to the same up-link share it while others stay idle: the collisions
 * that make RoCE fabrics lose throughput under permutations, which
 * InfiniBand's deterministic ftree routing avoids (docs/ethernet.md).
 *
 * The equal-cost sets are the output ports whose far switch is one hop
 * closer to the destination's switch (breadth-first distances over the
 * switches), computed once per destination switch; a destination on the
 * switch itself, or one no switch path reaches, goes by the subnet
 * manager's table (eth.lb=static always does). Each switch mixes its own
 * index and eth.hash_seed into the hash, so that the levels of a tree do
 * not choose in lockstep (hash polarisation).
 * Left out: weighted ECMP, resilient hashing, flowlet switching and
 * per-packet spraying (which needs a receiver that reorders).
 */
#include "models/eth/eth_int.h"

#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX
#define FAR 0xffff

struct eth_ecmp {
	uint32_t ndst;		/* destination switches: those with a CA port */
	uint32_t *dst_of_lid;	/* LID -> its CA port's switch, as a destination index */
	uint32_t nlid;
	uint16_t *dist;		/* [dst * nnodes + node]: switch hops from node to dst */
	int nnodes;
};

/* The switch a node's port leads to, or -1. */
static int peer_switch(const struct net *net, int node, int port)
{
	const struct net_port *np = &net->nodes[node].ports[port];

	if (np->remote_node < 0 || net->nodes[np->remote_node].type != NET_SWITCH)
		return -1;
	return np->remote_node;
}

static struct eth_ecmp *ecmp_build(const struct net *net)
{
	struct eth_ecmp *e = calloc(1, sizeof(*e));
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
					v[k] = NONE;
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
	eth_ecmp_free(e);
	return NULL;
}

void eth_ecmp_free(struct eth_ecmp *e)
{
	if (!e)
		return;
	free(e->dst_of_lid);
	free(e->dist);
	free(e);
}

int eth_ecmp_init(struct fab *f, struct fab_node *n, struct eth_sw *s)
{
	const struct net *net = f->net;
	struct eth_ecmp *e;
	uint32_t nports = 0;

	if (f->p.eth.lb != ETH_LB_ECMP)
		return 0;
	if (!f->ecmp && !(f->ecmp = ecmp_build(net)))
		return -1;
	e = f->ecmp;
	s->grp = calloc(e->ndst ? e->ndst : 1, sizeof(*s->grp));
	s->grp_port = malloc(((size_t)e->ndst * (size_t)n->nports + 1) * sizeof(*s->grp_port));
	if (!s->grp || !s->grp_port)
		return -1;
	for (uint32_t d = 0; d < e->ndst; d++) {
		const uint16_t *dist = &e->dist[(size_t)d * (size_t)net->nnodes];
		uint32_t off = nports, cnt = 0;

		if (dist[n->idx] == 0 || dist[n->idx] == FAR)
			continue;	/* its own hosts, or none reachable: the LFT */
		for (int pp = 1; pp <= n->nports; pp++) {
			int v = n->ports[pp] ? peer_switch(net, n->idx, pp) : -1;

			if (v >= 0 && dist[v] + 1 == dist[n->idx])
				s->grp_port[nports++] = (uint8_t)pp;
		}
		cnt = nports - off;
		s->grp[d] = off << 8 | (cnt > 255 ? 255 : cnt);
	}
	/* this switch's own draw of the hash (no polarisation across levels) */
	s->hash_seed = f->p.eth.hash_seed ^ (0x9e3779b97f4a7c15ULL * ((uint64_t)n->idx + 1));
	return 0;
}

/* splitmix64's finaliser: every input bit moves every output bit. */
static inline uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

int eth_ecmp_route(struct port *in, uint32_t idx)
{
	struct fab *f = in->fab;
	const struct eth_sw *s = in->node->eth;
	const struct eth_ecmp *e = f->ecmp;
	const struct pkt *p = fab_pkt(f, idx);
	uint32_t d = p->dlid < e->nlid ? e->dst_of_lid[p->dlid] : NONE;
	uint32_t g = d != NONE ? s->grp[d] : 0, cnt = g & 0xff;

	if (cnt == 0)
		return sw_route(in, idx);	/* local, or unreachable: the LFT */
	if (cnt == 1)
		return s->grp_port[g >> 8];
	/* the flow: addresses, and the QPs standing for the UDP/TCP ports */
	uint64_t key = ((uint64_t)p->slid << 48) ^ ((uint64_t)p->dlid << 32) ^
		       ((uint64_t)(p->sqpn & 0xffffff) << 8) ^ ((uint64_t)p->dqpn << 20);

	return s->grp_port[(g >> 8) + (uint32_t)(mix(key ^ s->hash_seed) % cnt)];
}
