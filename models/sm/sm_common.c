/* SPDX-License-Identifier: MIT */
/*
 * sm_common.c - the preparation every routing engine shares (sm_int.h).
 *
 * LIDs first (net_assign_lids_lmc, with the LMC the user asked for), then
 * each switch's LinearForwardingTable (IBA 14.2.5.10) is reset to 255, "no
 * route", except its own LID, which is port 0, the switch's management port.
 * Every LID of a CA or router port - 2^LMC of them (IBA 7.11.1) - is routed
 * by the switch the port is cabled to straight down that cable, and counted
 * in the port's load, as OpenSM does before it balances the rest. A CA
 * cabled to no switch (back to back, or to another CA) is left out: no LFT
 * can reach it.
 */
#define _GNU_SOURCE	/* qsort_r */
#include "models/sm/sm_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sm_topo_free(struct sm_topo *t)
{
	if (t->load)
		for (int i = 0; i < t->nsw; i++)
			free(t->load[i]);
	free(t->load);
	free(t->sw);
	free(t->swi);
	free(t->ep_first);
	free(t->ep_lid);
	free(t->ep_port);
	free(t->ep_node);
	free(t->ep_nport);
	free(t->dist);
	free(t->queue);
	memset(t, 0, sizeof(*t));
}

/* LMC offset of an endpoint LID from its port's base LID. */
static unsigned lid_offset(const struct sm_topo *t, int i)
{
	return t->ep_lid[i] - t->n->nodes[t->ep_node[i]].ports[t->ep_nport[i]].lid;
}

/*
 * Within each switch's group: base LIDs first, then every port's second
 * LID, and so on (ascending LIDs within a rank). Balancing then spreads the
 * base LIDs - the ones traffic uses - as evenly as with LMC 0, and each
 * further LID of a port can take a path its earlier LIDs do not
 * (sm_route_lid), which is what LMC is for. Insertion sort: the groups are
 * small and nearly sorted.
 */
static void sort_groups(struct sm_topo *t)
{
	for (int s = 0; s < t->nsw; s++)
		for (int i = t->ep_first[s] + 1; i < t->ep_first[s + 1]; i++) {
			net_lid_t lid = t->ep_lid[i];
			uint8_t port = t->ep_port[i], nport = t->ep_nport[i];
			int node = t->ep_node[i], j = i;
			unsigned off = lid_offset(t, i);

			while (j > t->ep_first[s] &&
			       (lid_offset(t, j - 1) > off ||
				(lid_offset(t, j - 1) == off && t->ep_lid[j - 1] > lid))) {
				t->ep_lid[j] = t->ep_lid[j - 1];
				t->ep_port[j] = t->ep_port[j - 1];
				t->ep_node[j] = t->ep_node[j - 1];
				t->ep_nport[j] = t->ep_nport[j - 1];
				j--;
			}
			t->ep_lid[j] = lid;
			t->ep_port[j] = port;
			t->ep_node[j] = node;
			t->ep_nport[j] = nport;
		}
}

/* The CA/router LIDs grouped by switch (ordered by sort_groups()). */
static int collect_endpoints(struct sm_topo *t)
{
	struct net *n = t->n;
	int *count = calloc((size_t)t->nsw + 1, sizeof(*count));
	size_t cap = (size_t)n->max_lid + 1;

	t->ep_first = malloc(sizeof(int) * ((size_t)t->nsw + 1));
	t->ep_lid = malloc(sizeof(*t->ep_lid) * cap);
	t->ep_port = malloc(cap);
	t->ep_node = malloc(sizeof(int) * cap);
	t->ep_nport = malloc(cap);
	if (!count || !t->ep_first || !t->ep_lid || !t->ep_port || !t->ep_node ||
	    !t->ep_nport) {
		free(count);
		return -1;
	}
	for (uint32_t l = 1; l <= n->max_lid; l++) {
		int node = n->lid_node[l], r;

		if (node < 0 || n->nodes[node].type == NET_SWITCH)
			continue;
		r = n->nodes[node].ports[n->lid_port[l]].remote_node;
		if (r >= 0 && t->swi[r] >= 0)
			count[t->swi[r] + 1]++;
	}
	for (int s = 0; s < t->nsw; s++)
		count[s + 1] += count[s];
	memcpy(t->ep_first, count, sizeof(*count) * ((size_t)t->nsw + 1));
	t->nep = count[t->nsw];
	for (uint32_t l = 1; l <= n->max_lid; l++) {
		int node = n->lid_node[l], slot;
		const struct net_port *pp;

		if (node < 0 || n->nodes[node].type == NET_SWITCH)
			continue;
		pp = &n->nodes[node].ports[n->lid_port[l]];
		if (pp->remote_node < 0 || t->swi[pp->remote_node] < 0)
			continue;
		slot = count[t->swi[pp->remote_node]]++;
		t->ep_lid[slot] = (net_lid_t)l;
		t->ep_port[slot] = (uint8_t)pp->remote_port;
		t->ep_node[slot] = node;
		t->ep_nport[slot] = n->lid_port[l];
	}
	free(count);
	sort_groups(t);
	return 0;
}

int sm_lids(struct net *n, const struct sm_opts *o, struct sim_diag *d)
{
	if (o && o->lmc > NET_LMC_MAX)
		return sim_diag_set(d, NULL, 0, 0, "LMC %u out of range 0..%d",
				    o->lmc, NET_LMC_MAX);
	if (o && o->sm) {
		int node = net_find_host(n, o->sm);

		if (node < 0)
			node = net_find(n, o->sm);
		if (node < 0)
			return sim_diag_set(d, NULL, 0, 0,
					    "--sm: no node '%s' (a description, an id or #k)", o->sm);
		n->sm_node = node;
	}
	/*
	 * --lmc 0 (the default) keeps whatever LIDs are there, or the file's;
	 * a nonzero LMC different from the assigned one reassigns.
	 */
	if (!n->lid_node || (o && o->lmc && o->lmc != n->lmc))
		return net_assign_lids_lmc(n, o && o->lmc ? o->lmc : NET_LMC_FILE, d);
	return 0;
}

int sm_topo_init(struct sm_topo *t, struct net *n, const struct sm_opts *o,
		 struct sim_diag *d)
{
	memset(t, 0, sizeof(*t));
	t->n = n;
	if (sm_lids(n, o, d))
		return -1;
	t->nsw = net_count(n, NET_SWITCH);
	t->sw = malloc(sizeof(int) * ((size_t)t->nsw + 1));
	t->swi = malloc(sizeof(int) * ((size_t)n->nnodes + 1));
	t->load = calloc((size_t)t->nsw + 1, sizeof(*t->load));
	t->dist = malloc(sizeof(int) * ((size_t)t->nsw + 1) * 2);
	t->queue = malloc(sizeof(int) * ((size_t)t->nsw + 1) * 2);
	if (!t->sw || !t->swi || !t->load || !t->dist || !t->queue)
		goto nomem;
	t->maxports = 1;
	for (int i = 0, s = 0; i < n->nnodes; i++) {
		struct net_node *nd = &n->nodes[i];

		t->swi[i] = -1;
		if (nd->type != NET_SWITCH)
			continue;
		t->swi[i] = s;
		t->sw[s] = i;
		t->load[s] = calloc((size_t)nd->nports + 1, sizeof(uint32_t));
		if (nd->nports > t->maxports)
			t->maxports = nd->nports;
		free(nd->lft);
		nd->lft_len = (uint32_t)n->max_lid + 1;
		nd->lft = malloc(nd->lft_len);
		if (!t->load[s] || !nd->lft)
			goto nomem;
		memset(nd->lft, SM_NO_ROUTE, nd->lft_len);
		nd->lft[nd->lid] = 0;
		s++;
	}
	if (collect_endpoints(t))
		goto nomem;
	for (int s = 0; s < t->nsw; s++) {
		struct net_node *nd = &n->nodes[t->sw[s]];

		for (int i = t->ep_first[s]; i < t->ep_first[s + 1]; i++) {
			nd->lft[t->ep_lid[i]] = t->ep_port[i];
			t->load[s][t->ep_port[i]]++;
		}
	}
	return 0;
nomem:
	sm_topo_free(t);
	return sim_diag_set(d, NULL, 0, 0, "out of memory");
}

/* Is port p already taken at switch s by a lower LID of lid's own port? */
static bool used_by_sibling(const struct sm_topo *t, int s, net_lid_t lid, int p)
{
	const struct net *n = t->n;
	const uint8_t *lft = n->nodes[t->sw[s]].lft;
	int node = n->lid_node[lid];
	net_lid_t base;

	if (node < 0 || n->nodes[node].type == NET_SWITCH)
		return false;
	base = n->nodes[node].ports[n->lid_port[lid]].lid;
	for (net_lid_t l = base; l < lid; l++)
		if (lft[l] == p)
			return true;
	return false;
}

static void route_lid(struct sm_topo *t, int s, net_lid_t lid, const int *cand, int k,
		      bool count)
{
	uint32_t *load = t->load[s];
	int best = -1;
	bool best_fresh = false;

	/* a port the LID's siblings (same CA port, LMC) do not use yet first,
	 * then the least loaded, then the lowest numbered */
	for (int i = 0; i < k; i++) {
		bool fresh = t->n->lmc == 0 || !used_by_sibling(t, s, lid, cand[i]);

		if (best < 0 || (fresh && !best_fresh) ||
		    (fresh == best_fresh &&
		     (load[cand[i]] < load[best] ||
		      (load[cand[i]] == load[best] && cand[i] < best)))) {
			best = cand[i];
			best_fresh = fresh;
		}
	}
	t->n->nodes[t->sw[s]].lft[lid] = (uint8_t)best;
	if (count)
		load[best]++;
}

void sm_route_lid(struct sm_topo *t, int s, net_lid_t lid, const int *cand, int k)
{
	route_lid(t, s, lid, cand, k, true);
}

void sm_route_lid_uncounted(struct sm_topo *t, int s, net_lid_t lid, const int *cand, int k)
{
	route_lid(t, s, lid, cand, k, false);
}

struct dest_keys {
	const int *first;
	const struct net *n;
	const int *sw;
};

static uint64_t dest_guid(const struct dest_keys *k, int s)
{
	const struct net_node *nd = &k->n->nodes[k->sw[s]];

	return nd->guid ? nd->guid : nd->ports[0].guid;
}

static int cmp_dest(const void *a, const void *b, void *ctx)
{
	const struct dest_keys *k = ctx;
	int x = *(const int *)a, y = *(const int *)b;
	int cx = k->first[x + 1] - k->first[x], cy = k->first[y + 1] - k->first[y];
	/* OpenSM's switch table is keyed by the GUID in network byte order:
	 * walked by the byte-swapped GUID on a little-endian host */
	uint64_t gx = __builtin_bswap64(dest_guid(k, x)), gy = __builtin_bswap64(dest_guid(k, y));

	if (cx != cy)
		return cx > cy ? -1 : 1;
	if (gx != gy)
		return gx < gy ? -1 : 1;
	return x < y ? -1 : x > y;
}

void sm_sort_dests(const struct net *n, const int *sw, int nsw, const int *first, int *order)
{
	struct dest_keys k = { first, n, sw };

	for (int s = 0; s < nsw; s++)
		order[s] = s;
	qsort_r(order, (size_t)nsw, sizeof(int), cmp_dest, &k);
}

/* An endpoint LID's place: its offset from its port's base LID (LMC),
 * then the switch port it hangs off. */
static uint32_t ep_key(const struct sm_topo *t, int i)
{
	const struct net_node *nd = &t->n->nodes[t->ep_node[i]];

	return (uint32_t)(t->ep_lid[i] - nd->ports[t->ep_nport[i]].lid) << 8 | t->ep_port[i];
}

int sm_dest_order(const struct sm_topo *t, int *sw, int *ep)
{
	sm_sort_dests(t->n, t->sw, t->nsw, t->ep_first, sw);
	/* within each switch: every port's base LID by port, then every
	 * port's second LID, and so on (OpenSM's LMC loop is the outer one);
	 * insertion sort, a switch has a few dozen ports */
	for (int s = 0; s < t->nsw; s++)
		for (int i = t->ep_first[s]; i < t->ep_first[s + 1]; i++) {
			int j = i;
			uint32_t k = ep_key(t, i);

			while (j > t->ep_first[s] && ep_key(t, ep[j - 1]) > k) {
				ep[j] = ep[j - 1];
				j--;
			}
			ep[j] = i;
		}
	return 0;
}

uint64_t sm_switch_key(const struct sm_topo *t, int s)
{
	const struct net_node *nd = &t->n->nodes[t->sw[s]];

	return nd->guid ? nd->guid : nd->ports[0].guid;
}

/* "0x200000" or "200000" (hex, as ibnetdiscover and OpenSM's guid files write) */
static bool parse_guid(const char *s, uint64_t *g)
{
	char *end;

	if (!*s)
		return false;
	errno = 0;
	*g = strtoull(s, &end, 16);
	return !*end && !errno && *g;
}

int sm_parse_switch_list(const struct sm_topo *t, const char *list,
			 const char *what, char *mark, struct sim_diag *d)
{
	const struct net *n = t->n;
	int marked = 0;
	const char *p = list;

	while (*p) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		char item[256];
		uint64_t g;
		int node = -1;

		if (!len || len >= sizeof(item))
			return sim_diag_set(d, NULL, 0, 0, "%s: %s item in '%s'", what,
					    len ? "overlong" : "empty", list);
		memcpy(item, p, len);
		item[len] = 0;
		/* a description first (what people type), then an id, then a GUID */
		for (int s = 0; s < t->nsw && node < 0; s++)
			if (!strcmp(n->nodes[t->sw[s]].desc, item))
				node = t->sw[s];
		if (node < 0)
			node = net_find_host(n, item);	/* any node: to say what it is */
		if (node < 0 && parse_guid(item, &g))
			for (int i = 0; i < n->nnodes && node < 0; i++)
				if (n->nodes[i].guid == g || n->nodes[i].ports[0].guid == g)
					node = i;
		if (node < 0)
			return sim_diag_set(d, NULL, 0, 0,
					    "%s: no switch named '%s' (give node descriptions, ids or GUIDs)",
					    what, item);
		if (t->swi[node] < 0)
			return sim_diag_set(d, NULL, 0, 0, "%s: '%s' is not a switch",
					    what, item);
		if (!mark[t->swi[node]])
			marked++;
		mark[t->swi[node]] = 1;
		p += len;
		if (*p == ',')
			p++;
	}
	return marked;
}

void sm_note(const struct sm_opts *o, const char *fmt, ...)
{
	va_list ap;

	if (!o || !o->note || !o->note_len)
		return;
	va_start(ap, fmt);
	vsnprintf(o->note, o->note_len, fmt, ap);
	va_end(ap);
}

void sm_note_switches(const struct sm_topo *t, const char *mark, char *buf,
		      unsigned len)
{
	int shown = 0, total = 0;
	size_t off = 0;

	buf[0] = 0;
	for (int s = 0; s < t->nsw; s++) {
		if (!mark[s])
			continue;
		total++;
		if (shown == 8 || off + 2 >= len)
			continue;
		off += (size_t)snprintf(buf + off, len - off, "%s%s", shown ? "," : "",
					t->n->nodes[t->sw[s]].desc);
		if (off >= len)
			off = len - 1;
		shown++;
	}
	if (total > shown && off + 1 < len)
		snprintf(buf + off, len - off, ",... (%d)", total);
}

void sm_bfs(struct sm_topo *t, int from, int *dist)
{
	int head = 0, tail = 0, *q = t->queue;

	for (int i = 0; i < t->nsw; i++)
		dist[i] = -1;
	dist[from] = 0;
	q[tail++] = from;
	while (head < tail) {
		int s = q[head++];
		const struct net_node *nd = &t->n->nodes[t->sw[s]];

		for (int p = 1; p <= nd->nports; p++) {
			int v = sm_peer(t, s, p);

			if (v >= 0 && dist[v] < 0) {
				dist[v] = dist[s] + 1;
				q[tail++] = v;
			}
		}
	}
}
