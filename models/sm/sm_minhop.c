/* SPDX-License-Identifier: MIT */
/*
 * sm_minhop.c - min-hop unicast routing, in the manner of OpenSM's default
 * engine: every switch forwards each destination LID over a port on a
 * shortest path, and among the equal-hop ports takes the one through which
 * the fewest destination LIDs are routed so far (ties: lowest port number).
 * The result is the LinearForwardingTable of IBA vol. 1 §14.2.5.10.
 *
 * Cost: one BFS over the switch graph per destination switch (not per LID
 * pair). For destination switch D, the candidate ports of every switch S
 * are computed once; the LIDs behind D (D's own and its CAs') then take the
 * least-loaded candidate from a small heap. A 10k-host two-level fat tree
 * routes in about a tenth of a second.
 *
 * Order, as OpenSM's (osm_ucast_mgr.c, ucast_mgr_build_lfts): the CA LIDs
 * first, destination switch by destination switch, those with the most
 * CAs cabled first and then by GUID, each switch's CAs by the port they
 * hang off; then the switches' own LIDs, which are not counted in the
 * balance (OpenSM's port_profile_switch_nodes is off by default), so that
 * management LIDs cannot skew the data paths. With the same LIDs the
 * tables are then OpenSM's entry for entry (tests/interop/opensm.sh).
 * Left out:
 * OpenSM's preference for distinct remote switches, LMC > 0 (one path per
 * LID), credit-loop avoidance (min-hop is not deadlock free on every
 * topology; updn/ftree are).
 */
#include "models/sm/sm_int.h"

#include <stdlib.h>
#include <string.h>

struct mh {
	struct net *n;
	int nsw;
	int *sw;		/* switch index -> node */
	int *swi;		/* node -> switch index, -1 for non-switches */
	int *dist;		/* BFS distance to the current destination */
	int *queue;
	uint32_t **load;	/* [switch][port]: LIDs routed through it */
	/* LIDs behind each switch: CAs attached to it (ascending LIDs) */
	int *ca_first, *ca_lids;
	uint8_t *ca_port;	/* switch port the CA LID hangs off */
	int *cand;		/* scratch: candidate ports of one switch */
	int *order;		/* destination switches in OpenSM's order */
};

static void bfs(struct mh *m, int dst)
{
	int head = 0, tail = 0;

	for (int i = 0; i < m->nsw; i++)
		m->dist[i] = -1;
	m->dist[dst] = 0;
	m->queue[tail++] = dst;
	while (head < tail) {
		int s = m->queue[head++];
		const struct net_node *nd = &m->n->nodes[m->sw[s]];

		for (int p = 1; p <= nd->nports; p++) {
			int r = nd->ports[p].remote_node;

			if (r < 0 || m->swi[r] < 0 || m->dist[m->swi[r]] >= 0)
				continue;
			m->dist[m->swi[r]] = m->dist[s] + 1;
			m->queue[tail++] = m->swi[r];
		}
	}
}

/* Heap of candidate ports ordered by (load, port number). */
static bool before(const uint32_t *load, int a, int b)
{
	return load[a] != load[b] ? load[a] < load[b] : a < b;
}

static void sift_down(const uint32_t *load, int *h, int k, int i)
{
	for (;;) {
		int l = 2 * i + 1, best = i, t;

		if (l < k && before(load, h[l], h[best]))
			best = l;
		if (l + 1 < k && before(load, h[l + 1], h[best]))
			best = l + 1;
		if (best == i)
			return;
		t = h[i];
		h[i] = h[best];
		h[best] = t;
		i = best;
	}
}

/*
 * Route the LIDs lids[0..cnt-1], all behind destination switch dst (BFS
 * already run), on every other switch; `count`: they weigh in the balance
 * (CA LIDs do, switch LIDs do not).
 */
static void route_behind(struct mh *m, int dst, const int *lids, int cnt, bool count)
{
	for (int s = 0; s < m->nsw; s++) {
		struct net_node *nd = &m->n->nodes[m->sw[s]];
		uint32_t *load = m->load[s];
		int k = 0;

		if (s == dst || m->dist[s] < 0)
			continue;	/* dst is done by the caller; unreachable: 255 */
		for (int p = 1; p <= nd->nports; p++) {
			int r = nd->ports[p].remote_node;

			if (r >= 0 && m->swi[r] >= 0 &&
			    m->dist[m->swi[r]] == m->dist[s] - 1)
				m->cand[k++] = p;
		}
		if (!k)
			continue;	/* cannot happen: BFS found a way down */
		for (int i = k / 2 - 1; i >= 0; i--)
			sift_down(load, m->cand, k, i);
		for (int i = 0; i < cnt; i++) {
			int p = m->cand[0];

			nd->lft[lids[i]] = (uint8_t)p;
			if (!count)
				continue;
			load[p]++;
			sift_down(load, m->cand, k, 0);
		}
	}
}

static void mh_free(struct mh *m)
{
	if (m->load)
		for (int i = 0; i < m->nsw; i++)
			free(m->load[i]);
	free(m->load);
	free(m->sw);
	free(m->swi);
	free(m->dist);
	free(m->queue);
	free(m->ca_first);
	free(m->ca_lids);
	free(m->ca_port);
	free(m->cand);
	free(m->order);
}

/* Group the CA LIDs by the switch they are cabled to. */
static int collect_ca_lids(struct mh *m)
{
	struct net *n = m->n;
	int *count = calloc(m->nsw + 1, sizeof(*count));

	if (!count)
		return -1;
	for (uint32_t l = 1; l <= n->max_lid; l++) {
		int node = n->lid_node[l], r;

		if (node < 0 || n->nodes[node].type == NET_SWITCH)
			continue;
		r = n->nodes[node].ports[n->lid_port[l]].remote_node;
		if (r >= 0 && m->swi[r] >= 0)
			count[m->swi[r] + 1]++;
	}
	for (int s = 0; s < m->nsw; s++)
		count[s + 1] += count[s];
	memcpy(m->ca_first, count, sizeof(*count) * (m->nsw + 1));
	/* Walking LIDs upwards keeps each switch's list ascending. */
	for (uint32_t l = 1; l <= n->max_lid; l++) {
		int node = n->lid_node[l], slot;
		const struct net_port *pp;

		if (node < 0 || n->nodes[node].type == NET_SWITCH)
			continue;
		pp = &n->nodes[node].ports[n->lid_port[l]];
		if (pp->remote_node < 0 || m->swi[pp->remote_node] < 0)
			continue;
		slot = count[m->swi[pp->remote_node]]++;
		m->ca_lids[slot] = (int)l;
		m->ca_port[slot] = (uint8_t)pp->remote_port;
	}
	free(count);
	/* each switch's CAs by the port they hang off (insertion sort: a
	 * switch has a few dozen ports) */
	for (int s = 0; s < m->nsw; s++)
		for (int i = m->ca_first[s] + 1; i < m->ca_first[s + 1]; i++)
			for (int j = i; j > m->ca_first[s] &&
			     m->ca_port[j - 1] > m->ca_port[j]; j--) {
				int l = m->ca_lids[j];
				uint8_t p = m->ca_port[j];

				m->ca_lids[j] = m->ca_lids[j - 1];
				m->ca_port[j] = m->ca_port[j - 1];
				m->ca_lids[j - 1] = l;
				m->ca_port[j - 1] = p;
			}
	return 0;
}

int sm_route_minhop(struct net *n, struct sim_diag *d)
{
	struct mh m = { .n = n };
	int maxports = 1;

	if (!n->lid_node && net_assign_lids(n, d))
		return -1;
	m.nsw = net_count(n, NET_SWITCH);
	m.sw = malloc(sizeof(int) * (m.nsw + 1));
	m.swi = malloc(sizeof(int) * (n->nnodes + 1));
	m.dist = malloc(sizeof(int) * (m.nsw + 1));
	m.queue = malloc(sizeof(int) * (m.nsw + 1));
	m.load = calloc(m.nsw + 1, sizeof(*m.load));
	m.ca_first = malloc(sizeof(int) * (m.nsw + 1));
	m.ca_lids = malloc(sizeof(int) * ((size_t)n->max_lid + 1));
	m.ca_port = malloc((size_t)n->max_lid + 1);
	if (!m.sw || !m.swi || !m.dist || !m.queue || !m.load || !m.ca_first ||
	    !m.ca_lids || !m.ca_port)
		goto nomem;
	for (int i = 0, s = 0; i < n->nnodes; i++) {
		struct net_node *nd = &n->nodes[i];

		m.swi[i] = -1;
		if (nd->type != NET_SWITCH)
			continue;
		m.swi[i] = s;
		m.sw[s] = i;
		m.load[s] = calloc(nd->nports + 1, sizeof(uint32_t));
		if (nd->nports > maxports)
			maxports = nd->nports;
		free(nd->lft);
		nd->lft_len = (uint32_t)n->max_lid + 1;
		nd->lft = malloc(nd->lft_len);
		if (!m.load[s] || !nd->lft)
			goto nomem;
		memset(nd->lft, SM_NO_ROUTE, nd->lft_len);
		nd->lft[nd->lid] = 0;
		s++;
	}
	m.cand = malloc(sizeof(int) * (maxports + 1));
	m.order = malloc(sizeof(int) * (m.nsw + 1));
	if (!m.cand || !m.order || collect_ca_lids(&m))
		goto nomem;

	/* OpenSM's destination order: most CAs first, then lowest GUID */
	sm_sort_dests(n, m.sw, m.nsw, m.ca_first, m.order);
	for (int o = 0; o < m.nsw; o++) {
		int t = m.order[o];
		int first = m.ca_first[t], cnt = m.ca_first[t + 1] - first;
		struct net_node *dn = &n->nodes[m.sw[t]];

		if (!cnt)
			continue;
		for (int i = 0; i < cnt; i++) {
			dn->lft[m.ca_lids[first + i]] = m.ca_port[first + i];
			m.load[t][m.ca_port[first + i]]++;
		}
		bfs(&m, t);
		route_behind(&m, t, m.ca_lids + first, cnt, true);
	}
	for (int t = 0; t < m.nsw; t++) {
		int lid = n->nodes[m.sw[t]].lid;

		bfs(&m, t);
		route_behind(&m, t, &lid, 1, false);
	}
	mh_free(&m);
	return 0;
nomem:
	mh_free(&m);
	return sim_diag_set(d, NULL, 0, 0, "out of memory");
}

int sm_hops(const struct net *n, int sw_node, net_lid_t lid)
{
	int target, tport, *dist, *queue, head = 0, tail = 0, res = -1;

	if (sw_node < 0 || sw_node >= n->nnodes ||
	    n->nodes[sw_node].type != NET_SWITCH || !n->lid_node ||
	    lid == 0 || lid > n->max_lid || n->lid_node[lid] < 0)
		return -1;
	target = n->lid_node[lid];
	tport = n->lid_port[lid];
	dist = malloc(sizeof(int) * n->nnodes);
	queue = malloc(sizeof(int) * n->nnodes);
	if (!dist || !queue)
		goto out;
	for (int i = 0; i < n->nnodes; i++)
		dist[i] = -1;
	dist[sw_node] = 0;
	queue[tail++] = sw_node;
	/* Packets transit switches only: CAs and routers are leaves here. */
	while (head < tail) {
		int u = queue[head++];
		const struct net_node *nd = &n->nodes[u];

		if (nd->type != NET_SWITCH)
			continue;
		for (int p = 1; p <= nd->nports; p++) {
			int r = nd->ports[p].remote_node;

			if (r < 0 || dist[r] >= 0)
				continue;
			dist[r] = dist[u] + 1;
			queue[tail++] = r;
		}
	}
	if (n->nodes[target].type == NET_SWITCH) {
		res = dist[target];
	} else {
		/* A CA LID names one port: the hop must enter by that port. */
		const struct net_port *pp = &n->nodes[target].ports[tport];

		if (pp->remote_node >= 0 &&
		    n->nodes[pp->remote_node].type == NET_SWITCH &&
		    dist[pp->remote_node] >= 0)
			res = dist[pp->remote_node] + 1;
	}
out:
	free(dist);
	free(queue);
	return res;
}

int sm_path(const struct net *n, int src_ca, net_lid_t dlid, int *nodes,
	    int *ports, int max)
{
	int cur, port, k = 0;

	if (src_ca < 0 || src_ca >= n->nnodes || max < 1 || !n->lid_node ||
	    dlid == 0 || dlid > n->max_lid || n->lid_node[dlid] < 0)
		return -1;
	cur = src_ca;
	if (n->lid_node[dlid] == src_ca) {	/* loopback */
		nodes[0] = src_ca;
		ports[0] = n->lid_port[dlid];
		return 1;
	}
	port = net_first_port(n, src_ca);
	if (port < 0)
		return -1;
	/* A loop-free route visits each node at most once. */
	for (int steps = 0; steps <= n->nnodes; steps++) {
		const struct net_port *pp;
		const struct net_node *sw;
		int next, arrive;

		if (k >= max)
			return -1;
		nodes[k] = cur;
		ports[k++] = port;
		pp = &n->nodes[cur].ports[port];
		next = pp->remote_node;
		arrive = pp->remote_port;
		if (next < 0)
			return -1;
		if (n->nodes[next].type != NET_SWITCH) {
			if (next != n->lid_node[dlid] || arrive != n->lid_port[dlid])
				return -1;	/* delivered to the wrong port */
			if (k >= max)
				return -1;
			nodes[k] = next;
			ports[k++] = arrive;
			return k;
		}
		sw = &n->nodes[next];
		if (!sw->lft || dlid >= sw->lft_len || sw->lft[dlid] == SM_NO_ROUTE)
			return -1;
		if (sw->lft[dlid] == 0) {
			if (next != n->lid_node[dlid] || k >= max)
				return -1;
			nodes[k] = next;
			ports[k++] = 0;
			return k;
		}
		cur = next;
		port = sw->lft[dlid];
		if (port > sw->nports)
			return -1;
	}
	return -1;
}
