/* SPDX-License-Identifier: MIT */
/*
 * sm_balance.c - what a set of LFTs does, measured from the tables alone:
 * hop counts along the routes (sm_lft_hops) and how many CA-to-CA paths
 * cross each link (sm_balance), the figures OpenSM's routing papers and
 * `ibfab topo route` compare engines by.
 *
 * For one destination LID the LFT entries of all switches form a tree (a
 * forest if some switch has no route) pointing at the destination. The
 * sources hanging off each switch flow along it, so a switch's outgoing
 * link carries its own sources plus everything that flows into it: one pass
 * over the switches sorted by their distance along the tree, deepest first.
 * A switch whose route loops or ends at the wrong port has depth -1, and
 * its sources count as unrouted. The LFT semantics are IBA 14.2.5.10's:
 * entry = output port, 0 = the switch itself, 255 (or a port past NumPorts)
 * = drop.
 */
#include "models/sm/sm.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The port a switch forwards lid by, or -1 (none, or out of range). */
static int lft_port(const struct net_node *sw, net_lid_t lid)
{
	int p;

	if (!sw->lft || lid >= sw->lft_len)
		return -1;
	p = sw->lft[lid];
	return p == SM_NO_ROUTE || p > sw->nports ? -1 : p;
}

int sm_lft_hops(const struct net *n, int sw_node, net_lid_t lid)
{
	int cur = sw_node, hops = 0;

	if (sw_node < 0 || sw_node >= n->nnodes || !n->lid_node ||
	    n->nodes[sw_node].type != NET_SWITCH || lid == 0 ||
	    lid > n->max_lid || n->lid_node[lid] < 0)
		return -1;
	/* a loop-free route visits each switch once */
	for (int steps = 0; steps <= n->nnodes; steps++) {
		const struct net_node *sw = &n->nodes[cur];
		int p = lft_port(sw, lid), next;

		if (p < 0)
			return -1;
		if (p == 0)
			return cur == n->lid_node[lid] ? hops : -1;
		next = sw->ports[p].remote_node;
		if (next < 0)
			return -1;
		hops++;
		if (n->nodes[next].type != NET_SWITCH)
			return next == n->lid_node[lid] &&
			       sw->ports[p].remote_port == n->lid_port[lid] ? hops : -1;
		cur = next;
	}
	return -1;
}

void sm_balance_free(const struct net *n, struct sm_balance *b)
{
	if (b->paths)
		for (int i = 0; i < n->nnodes; i++)
			free(b->paths[i]);
	free(b->paths);
	b->paths = NULL;
}

struct bal {
	const struct net *n;
	int *depth;		/* per node: links to the destination, -1 unknown/bad, -2 in progress */
	int *src;		/* per node: sources leaving from it (hosts at a switch) */
	int *acc;
	int *order;
	int *bucket;
	int *stack;
	int *host_sw;		/* per node: the switch a host's first port hangs off, -1 */
};

/* Depth of switch s towards lid (memoised; -1: no delivery). */
static int depth_of(struct bal *x, int s, net_lid_t lid)
{
	const struct net *n = x->n;
	int sp = 0, d;

	/* iterative: follow the chain, then unwind */
	while (x->depth[s] == -3) {
		const struct net_node *sw = &n->nodes[s];
		int p = lft_port(sw, lid), next;

		x->depth[s] = -2;
		x->stack[sp++] = s;
		if (p < 0) {
			d = -1;
			goto unwind;
		}
		if (p == 0) {
			d = s == n->lid_node[lid] ? 0 : -1;
			sp--;
			x->depth[s] = d;
			goto unwind;
		}
		next = sw->ports[p].remote_node;
		if (next < 0) {
			d = -1;
			goto unwind;
		}
		if (n->nodes[next].type != NET_SWITCH) {
			d = next == n->lid_node[lid] &&
			    sw->ports[p].remote_port == n->lid_port[lid] ? 1 : -1;
			sp--;
			x->depth[s] = d;
			goto unwind;
		}
		s = next;
	}
	/* reached a switch already known (-2: a loop) */
	d = x->depth[s] == -2 ? -1 : x->depth[s];
unwind:
	while (sp > 0) {
		int u = x->stack[--sp];

		d = d < 0 ? -1 : d + 1;
		x->depth[u] = d;
	}
	/* the chain's first switch holds the answer now */
	return d;
}

static void bal_free(struct bal *x)
{
	free(x->depth);
	free(x->src);
	free(x->acc);
	free(x->order);
	free(x->bucket);
	free(x->stack);
	free(x->host_sw);
}

/* Is `lid` a destination of the measure? */
static bool wanted(const struct net *n, uint32_t lid, unsigned flags)
{
	int dst = n->lid_node[lid];

	if (dst < 0 || n->nodes[dst].type == NET_SWITCH)
		return false;
	if (flags & SM_BAL_ALL_LIDS)
		return true;
	/* what the simulation sends to: the base LID of the first port */
	return n->lid_port[lid] == net_first_port(n, dst) &&
	       lid == n->nodes[dst].ports[n->lid_port[lid]].lid;
}

/* Switches with a route, deepest first (counting sort on depth). */
static int sort_by_depth(struct bal *x)
{
	const struct net *n = x->n;
	int cnt = 0, maxd = 0;

	for (int s = 0; s < n->nnodes; s++) {
		if (n->nodes[s].type != NET_SWITCH || x->depth[s] < 0)
			continue;
		x->acc[cnt++] = s;
		if (x->depth[s] > maxd)
			maxd = x->depth[s];
	}
	memset(x->bucket, 0, sizeof(int) * ((size_t)maxd + 1));
	for (int i = 0; i < cnt; i++)
		x->bucket[x->depth[x->acc[i]]]++;
	for (int dd = maxd, at = 0; dd >= 0; dd--) {
		int c = x->bucket[dd];

		x->bucket[dd] = at;
		at += c;
	}
	for (int i = 0; i < cnt; i++)
		x->order[x->bucket[x->depth[x->acc[i]]]++] = x->acc[i];
	return cnt;
}

/* One destination LID: flow the sources down the LFT tree. */
static void measure_lid(struct bal *x, net_lid_t lid, unsigned flags,
			struct sm_balance *b)
{
	const struct net *n = x->n;
	int dst = n->lid_node[lid], cnt;

	/* the destination itself sends nothing to its own LID */
	if (x->host_sw[dst] >= 0)
		x->src[x->host_sw[dst]]--;
	for (int i = 0; i < n->nnodes; i++)
		x->depth[i] = n->nodes[i].type == NET_SWITCH ? -3 : -1;
	for (int s = 0; s < n->nnodes; s++)
		if (n->nodes[s].type == NET_SWITCH && x->src[s] > 0)
			depth_of(x, s, lid);
	cnt = sort_by_depth(x);
	for (int s = 0; s < n->nnodes; s++)
		x->acc[s] = n->nodes[s].type == NET_SWITCH ? x->src[s] : 0;
	for (int i = 0; i < cnt; i++) {
		int s = x->order[i], p = lft_port(&n->nodes[s], lid), next;

		if (x->src[s] > 0) {
			/* host cable + the switches' links */
			int h = 1 + x->depth[s] > SM_MAX_HOPS ? SM_MAX_HOPS : 1 + x->depth[s];

			b->hops[h] += (uint64_t)x->src[s];
			if (h > b->max_hops)
				b->max_hops = h;
		}
		if (!x->acc[s] || p <= 0)
			continue;
		b->paths[s][p] += (uint32_t)x->acc[s];
		next = n->nodes[s].ports[p].remote_node;
		if (next >= 0 && n->nodes[next].type == NET_SWITCH)
			x->acc[next] += x->acc[s];
	}
	for (int s = 0; s < n->nnodes; s++) {
		if (n->nodes[s].type != NET_SWITCH || x->src[s] <= 0)
			continue;
		b->pairs += (uint64_t)x->src[s];
		if (x->depth[s] < 0)
			b->unrouted += (uint64_t)x->src[s];
	}
	/* each delivered source also crossed its own cable */
	if (flags & SM_BAL_PATHS)
		for (int h = 0; h < n->nnodes; h++) {
			int r = x->host_sw[h];

			if (h != dst && r >= 0 && x->depth[r] >= 0)
				b->paths[h][net_first_port(n, h)]++;
		}
	if (x->host_sw[dst] >= 0)
		x->src[x->host_sw[dst]]++;
}

int sm_balance(const struct net *n, unsigned flags, struct sm_balance *b,
	       struct sim_diag *d)
{
	struct bal x = { .n = n };
	size_t sz = (size_t)n->nnodes + 2;

	memset(b, 0, sizeof(*b));
	b->max_node = b->max_port = -1;
	x.depth = malloc(sizeof(int) * sz);
	x.src = calloc(sz, sizeof(int));
	x.acc = malloc(sizeof(int) * sz);
	x.order = malloc(sizeof(int) * sz);
	x.bucket = malloc(sizeof(int) * (sz + 1));
	x.stack = malloc(sizeof(int) * sz);
	x.host_sw = malloc(sizeof(int) * sz);
	b->paths = calloc(sz, sizeof(*b->paths));
	if (!x.depth || !x.src || !x.acc || !x.order || !x.bucket || !x.stack ||
	    !x.host_sw || !b->paths)
		goto nomem;
	for (int i = 0; i < n->nnodes; i++) {
		b->paths[i] = calloc((size_t)n->nodes[i].nports + 1, sizeof(uint32_t));
		if (!b->paths[i])
			goto nomem;
	}
	/* sources: hosts, counted at the switch their first port hangs off */
	for (int h = 0; h < n->nnodes; h++) {
		int p = net_first_port(n, h), r;

		x.host_sw[h] = -1;
		if (n->nodes[h].type == NET_SWITCH || p < 0)
			continue;
		r = n->nodes[h].ports[p].remote_node;
		if (n->nodes[r].type == NET_SWITCH) {
			x.host_sw[h] = r;
			x.src[r]++;
		}
	}
	if (n->lid_node)
		for (uint32_t lid = 1; lid <= n->max_lid; lid++)
			if (wanted(n, lid, flags))
				measure_lid(&x, (net_lid_t)lid, flags, b);
	b->min_paths = UINT32_MAX;
	for (int s = 0; s < n->nnodes; s++) {
		const struct net_node *nd = &n->nodes[s];

		if (nd->type != NET_SWITCH)
			continue;
		for (int p = 1; p <= nd->nports; p++) {
			int r = nd->ports[p].remote_node;
			uint32_t v = b->paths[s][p];

			if (r < 0 || n->nodes[r].type != NET_SWITCH)
				continue;
			b->links++;
			b->mean_paths += v;
			if (b->max_node < 0 || v > b->max_paths) {
				b->max_paths = v;
				b->max_node = s;
				b->max_port = p;
			}
			if (v < b->min_paths)
				b->min_paths = v;
		}
	}
	if (b->links)
		b->mean_paths /= b->links;
	else
		b->min_paths = 0;
	bal_free(&x);
	if (!(flags & SM_BAL_PATHS))
		sm_balance_free(n, b);
	return 0;
nomem:
	bal_free(&x);
	sm_balance_free(n, b);
	return sim_diag_set(d, NULL, 0, 0, "out of memory");
}
