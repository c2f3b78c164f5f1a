/* SPDX-License-Identifier: MIT */
/*
 * sm_ftree.c - fat-tree routing as OpenSM's ftree engine computes it
 * (opensm/osm_ucast_ftree.c, the same in 3.3.23 and 3.3.24; Zahavi et al.,
 * "Optimized InfiniBand fat-tree routing for shift all-to-all communication
 * patterns", 2009), so that ibfab's tables equal OpenSM's entry for entry on
 * the same fabric (tests/interop/opensm.sh checks it against the real one).
 *
 * Levels: switches with CAs are the leaves; every other switch's level is
 * its hop distance from the nearest leaf, and a switch's rank (OpenSM's) is
 * the top level less its level: the roots have rank 0. A fat tree cables
 * only adjacent levels, and every switch without up-links is on the top
 * level; anything else (a torus, a ring, hosts on a spine) is refused with
 * the cable or switch that breaks the rule. (OpenSM's ranking from the
 * roots gives the same ranks on such trees.)
 *
 * Port groups: each switch has one group per neighbouring switch (parallel
 * cables together, ports in ascending port number) and one per CA port,
 * up (towards rank 0) or down, in the order of their lowest port.
 *
 * Indexing: the first leaf in OpenSM's switch-table order (ascending
 * byte-swapped GUID: the table is keyed by the GUID in network byte order
 * on a little-endian host) gets the tuple (leaf rank, 0, ..., 0); a
 * breadth-first walk from it gives every switch it reaches the tuple of the
 * switch it came from, with its own rank and, at position max(both ranks),
 * the smallest digit no switch has yet (down-groups first, then up-groups,
 * in group order); after a switch is walked its switch groups are sorted by
 * the remote switch's tuple. The leaves are routed in tuple order, each
 * leaf's CA ports in port order.
 *
 * Routing a destination LID from its leaf (route_up: OpenSM's
 * fabric_route_downgoing_by_going_up): first route_down below the switch
 * (fabric_route_upgoing_by_going_down: every down-group except the one it
 * came from, in order of least counter_up then tuple, gives the switch
 * below an entry up to here unless it has one at fewer or as many hops,
 * recursively; a group whose recursion reached a leaf counts it in its and
 * its port's counter_up); then the up-group with the least counter_down
 * (then tuple) is the main path: its port with the least counter_down
 * (lowest port on ties) is counted, the switch above routes the LID down
 * that cable, and the walk goes on from there, depth first; the other
 * up-groups are secondary paths, routed only where the switch above has no
 * entry at fewer hops, without counting. After its CA ports a leaf routes
 * "dummy" destinations up to the most CA ports of any leaf, which only move
 * the counters. Switch LIDs come last, in switch-table order, every up-group
 * secondary; between two top switches there is no up-then-down path and
 * the entry stays "no route" (255 in the LFT, IBA 14.2.5.10), as in OpenSM.
 * Routes are up*, down*: deadlock free with one VL, which matters because
 * IBA's credit-based flow control (7.9.4) never drops a packet.
 *
 * Where ibfab goes beyond OpenSM (which falls back to minhop in each case):
 * LMC > 0 (the base LIDs are routed as OpenSM routes LMC 0; the others
 * follow them turned round the up-ports: lmc_lids), trees whose levels differ in shape (oversubscribed, a
 * cable missing: OpenSM's topology check refuses them; the same algorithm
 * routes them, and a switch that cannot reach a LID up then down keeps no
 * route to it), a single leaf. Routers' ports are routed like CA ports
 * (OpenSM leaves them unrouted). Left out: OpenSM's root, compute-node and
 * I/O GUID files, quasi-fat-tree indexing and connect_roots.
 */
#define _GNU_SOURCE	/* qsort_r */
#include "models/sm/sm_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TUPLE_LEN 16		/* OpenSM's is 8 bytes: trees of up to 8 levels */
#define NO_HOPS 0xff

/* A switch's cables to one neighbour: a switch (parallel cables), or one
 * CA port. */
struct fgroup {
	int remote;		/* switch index; -1: a CA port */
	int first_port;		/* ports[]: ascending local port numbers */
	int nports;
	uint32_t counter_up, counter_down;
};

struct fsw {
	int rank;		/* 0: a root */
	uint8_t tuple[TUPLE_LEN];
	bool indexed;
	int down, ndown;	/* groups[down .. down + ndown) */
	int up, nup;
	bool counter_up_changed;
};

struct ftree {
	struct sm_topo t;
	int *level;		/* per switch */
	int top;		/* highest level (rank of the leaves) */
	struct fsw *sw;
	struct fgroup *g;
	int ng;
	int *gports;		/* per group: local ports, ascending */
	uint32_t *pcu, *pcd;	/* per (switch, port): counter_up, counter_down */
	int *order;		/* switches by byte-swapped GUID */
	int *leaves;		/* leaf-rank switches by tuple */
	int nleaves;
	uint32_t stamp;		/* the LID being routed */
	/* per switch: hops to that LID, valid where hstamp[s] == stamp (two
	 * small arrays: the walk below tests every switch it meets) */
	uint32_t *hstamp;
	uint8_t *hops;
	int *tset;		/* the tuples given: switch indexes, -1 empty */
	uint32_t tmask;
};

static void ftree_free(struct ftree *f)
{
	sm_topo_free(&f->t);
	free(f->level);
	free(f->sw);
	free(f->g);
	free(f->gports);
	free(f->pcu);
	free(f->pcd);
	free(f->order);
	free(f->leaves);
	free(f->tset);
	free(f->hstamp);
	free(f->hops);
}

static const char *sw_desc(const struct ftree *f, int s)
{
	return f->t.n->nodes[f->t.sw[s]].desc;
}

/* Levels by BFS from the leaves, and the fat-tree checks. */
static int find_levels(struct ftree *f, struct sim_diag *d)
{
	struct sm_topo *t = &f->t;
	int head = 0, tail = 0, *q = t->queue;

	for (int s = 0; s < t->nsw; s++) {
		f->level[s] = -1;
		if (t->ep_first[s + 1] > t->ep_first[s]) {
			f->level[s] = 0;
			q[tail++] = s;
		}
	}
	if (!tail)
		return sim_diag_set(d, NULL, 0, 0,
				    "ftree: no switch has a CA cabled to it, so there are no leaves");
	while (head < tail) {
		int s = q[head++];
		const struct net_node *nd = &t->n->nodes[t->sw[s]];

		for (int p = 1; p <= nd->nports; p++) {
			int v = sm_peer(t, s, p);

			if (v >= 0 && f->level[v] < 0) {
				f->level[v] = f->level[s] + 1;
				q[tail++] = v;
			}
		}
	}
	f->top = 0;
	for (int s = 0; s < t->nsw; s++) {
		const struct net_node *nd = &t->n->nodes[t->sw[s]];

		if (f->level[s] < 0)
			return sim_diag_set(d, nd->file, nd->line, 0,
					    "ftree: switch \"%s\" is not connected to any leaf switch",
					    nd->desc);
		if (f->level[s] > f->top)
			f->top = f->level[s];
		for (int p = 1; p <= nd->nports; p++) {
			int v = sm_peer(t, s, p);

			if (v >= 0 && f->level[v] == f->level[s])
				return sim_diag_set(d, nd->file, nd->ports[p].line, 0,
						    "ftree: not a fat tree: \"%s\"[%d] and \"%s\" are cabled together on the same level %d "
						    "(switches with CAs are level 0, and a fat tree only cables adjacent levels); use updn or minhop",
						    nd->desc, p, sw_desc(f, v), f->level[s]);
		}
	}
	if (f->top >= TUPLE_LEN - 1)
		return sim_diag_set(d, NULL, 0, 0, "ftree: %d levels; at most %d", f->top + 1,
				    TUPLE_LEN - 1);
	for (int s = 0; s < t->nsw; s++) {
		const struct net_node *nd = &t->n->nodes[t->sw[s]];
		bool up = false;

		for (int p = 1; p <= nd->nports && !up; p++) {
			int v = sm_peer(t, s, p);

			up = v >= 0 && f->level[v] == f->level[s] + 1;
		}
		if (!up && f->level[s] < f->top)
			return sim_diag_set(d, nd->file, nd->line, 0,
					    "ftree: not a fat tree: switch \"%s\" on level %d has no up-link but the tree has %d levels "
					    "(every switch without up-links must be on the top level)",
					    nd->desc, f->level[s], f->top + 1);
	}
	return 0;
}

/* ---- port groups -------------------------------------------------------- */

/*
 * Switch s's groups, down then up, each in the order of its lowest port
 * (OpenSM's sw_add_port: a group is appended when its first port is met).
 * A neighbour's key: the switch index, or -(port) for a CA port.
 */
static void make_groups(struct ftree *f, int s)
{
	struct sm_topo *t = &f->t;
	const struct net_node *nd = &t->n->nodes[t->sw[s]];
	struct fsw *w = &f->sw[s];

	for (int dir = 0; dir < 2; dir++) {	/* 0: down, 1: up */
		int first = f->ng;

		for (int p = 1; p <= nd->nports; p++) {
			const struct net_port *pp = &nd->ports[p];
			int v, gi;

			if (pp->remote_node < 0 || pp->remote_node == t->sw[s])
				continue;
			v = t->swi[pp->remote_node];
			if ((v < 0 ? 0 : f->sw[v].rank < w->rank) != dir)
				continue;
			if (v < 0) {
				gi = f->ng++;	/* one group per CA port */
				f->g[gi] = (struct fgroup){ .remote = -1 };
			} else {
				for (gi = first; gi < f->ng && f->g[gi].remote != v; gi++)
					;
				if (gi == f->ng)
					f->g[f->ng++] = (struct fgroup){ .remote = v };
			}
			f->g[gi].nports++;
		}
		if (dir) {
			w->up = first;
			w->nup = f->ng - first;
		} else {
			w->down = first;
			w->ndown = f->ng - first;
		}
	}
}

/* Lay out every group's ports (ascending) in f->gports. */
static void fill_group_ports(struct ftree *f)
{
	struct sm_topo *t = &f->t;
	int next = 0;

	for (int i = 0; i < f->ng; i++) {
		f->g[i].first_port = next;
		next += f->g[i].nports;
		f->g[i].nports = 0;
	}
	for (int s = 0; s < t->nsw; s++) {
		const struct net_node *nd = &t->n->nodes[t->sw[s]];
		const struct fsw *w = &f->sw[s];

		for (int p = 1; p <= nd->nports; p++) {
			const struct net_port *pp = &nd->ports[p];
			int v, lo = w->down, hi = w->up + w->nup;

			if (pp->remote_node < 0 || pp->remote_node == t->sw[s])
				continue;
			v = t->swi[pp->remote_node];
			for (int gi = lo; gi < hi; gi++) {
				struct fgroup *g = &f->g[gi];

				/* a CA port's group is the first empty CA group */
				if (v >= 0 ? g->remote == v : g->remote < 0 && !g->nports) {
					f->gports[g->first_port + g->nports++] = p;
					break;
				}
			}
		}
	}
}

/* ---- indexing ----------------------------------------------------------- */

static int cmp_tuple(const struct ftree *f, int a, int b)
{
	return memcmp(f->sw[a].tuple, f->sw[b].tuple, TUPLE_LEN);
}

static uint32_t tuple_hash(const uint8_t *tu)
{
	uint64_t h = 1469598103934665603ull;	/* FNV-1a */

	for (int i = 0; i < TUPLE_LEN; i++)
		h = (h ^ tu[i]) * 1099511628211ull;
	return (uint32_t)(h ^ (h >> 32));
}

/* The tuples given so far: an open-addressed set of switch indexes. */
static bool tuple_taken(const struct ftree *f, const uint8_t *tu)
{
	for (uint32_t i = tuple_hash(tu) & f->tmask;; i = (i + 1) & f->tmask) {
		int s = f->tset[i];

		if (s < 0)
			return false;
		if (!memcmp(f->sw[s].tuple, tu, TUPLE_LEN))
			return true;
	}
}

static void tuple_add(struct ftree *f, int s)
{
	uint32_t i = tuple_hash(f->sw[s].tuple) & f->tmask;

	while (f->tset[i] >= 0)
		i = (i + 1) & f->tmask;
	f->tset[i] = s;
	f->sw[s].indexed = true;
}

/* OpenSM's fabric_get_new_tuple: the tuple of a switch reached from s. */
static int new_tuple(struct ftree *f, int s, int v, bool down)
{
	uint8_t tu[TUPLE_LEN];
	int pos = down ? f->sw[s].rank + 1 : f->sw[s].rank;

	memcpy(tu, f->sw[s].tuple, TUPLE_LEN);
	tu[0] = (uint8_t)(down ? f->sw[s].rank + 1 : f->sw[s].rank - 1);
	for (int i = 0; i < 255; i++) {
		tu[pos] = (uint8_t)i;
		if (!tuple_taken(f, tu)) {
			memcpy(f->sw[v].tuple, tu, TUPLE_LEN);
			tuple_add(f, v);
			return 0;
		}
	}
	return -1;
}

/* Stable insertion sort of groups [first, first + n) by key. */
static void sort_groups(struct ftree *f, int first, int n,
			int (*cmp)(const struct ftree *, const struct fgroup *, const struct fgroup *))
{
	struct fgroup *g = f->g + first;

	for (int i = 1; i < n; i++) {
		struct fgroup x = g[i];
		int j = i;

		while (j > 0 && cmp(f, &x, &g[j - 1]) < 0) {
			g[j] = g[j - 1];
			j--;
		}
		g[j] = x;
	}
}

static int by_tuple(const struct ftree *f, const struct fgroup *a, const struct fgroup *b)
{
	return cmp_tuple(f, a->remote, b->remote);
}

/* ORDER_UP: the least routed down this group first, then by tuple. */
static int by_counter_up(const struct ftree *f, const struct fgroup *a, const struct fgroup *b)
{
	if (a->counter_up != b->counter_up)
		return a->counter_up < b->counter_up ? -1 : 1;
	return cmp_tuple(f, a->remote, b->remote);
}

/* ORDER_DOWN: the least used main path up first, then by tuple. */
static int by_counter_down(const struct ftree *f, const struct fgroup *a, const struct fgroup *b)
{
	if (a->counter_down != b->counter_down)
		return a->counter_down < b->counter_down ? -1 : 1;
	return cmp_tuple(f, a->remote, b->remote);
}

static uint64_t guid_key(const struct ftree *f, int s)
{
	/* OpenSM's switch table is keyed by the GUID in network byte order:
	 * walked by the byte-swapped GUID on a little-endian host */
	return __builtin_bswap64(sm_switch_key(&f->t, s));
}

static int cmp_guid(const void *a, const void *b, void *ctx)
{
	const struct ftree *f = ctx;
	int x = *(const int *)a, y = *(const int *)b;
	uint64_t gx = guid_key(f, x), gy = guid_key(f, y);

	if (gx != gy)
		return gx < gy ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int cmp_leaf(const void *a, const void *b, void *ctx)
{
	int c = cmp_tuple(ctx, *(const int *)a, *(const int *)b);

	return c ? c : *(const int *)a - *(const int *)b;
}

/* OpenSM's fabric_make_indexing / bfs_fabric_indexing, then the leaves. */
static int make_indexing(struct ftree *f, struct sim_diag *d)
{
	struct sm_topo *t = &f->t;
	int *q = t->queue, head = 0, tail = 0, start = -1;

	for (int i = 0; i < t->nsw && start < 0; i++)
		if (f->sw[f->order[i]].rank == f->top)
			start = f->order[i];
	memset(f->sw[start].tuple, 0xff, TUPLE_LEN);
	f->sw[start].tuple[0] = (uint8_t)f->top;
	for (int i = 1; i <= f->top; i++)
		f->sw[start].tuple[i] = 0;
	tuple_add(f, start);
	q[tail++] = start;
	while (head < tail) {
		int s = q[head++];
		struct fsw *w = &f->sw[s];

		for (int dir = 0; dir < 2; dir++) {	/* down-groups, then up */
			int first = dir ? w->up : w->down, n = dir ? w->nup : w->ndown;

			if (dir ? w->rank == 0 : w->rank >= f->top)
				continue;
			for (int i = 0; i < n; i++) {
				int v = f->g[first + i].remote;

				if (v < 0 || f->sw[v].indexed)
					continue;
				if (new_tuple(f, s, v, !dir))
					return sim_diag_set(d, NULL, 0, 0,
							    "ftree: switch \"%s\" has more than 255 neighbours on one level",
							    sw_desc(f, s));
				q[tail++] = v;
			}
			sort_groups(f, first, n, by_tuple);
		}
	}
	f->nleaves = 0;
	for (int s = 0; s < t->nsw; s++) {
		if (!f->sw[s].indexed)
			return sim_diag_set(d, NULL, 0, 0,
					    "ftree: switch \"%s\" is not reached from leaf \"%s\" going up and down",
					    sw_desc(f, s), sw_desc(f, start));
		if (f->sw[s].rank == f->top)
			f->leaves[f->nleaves++] = s;
	}
	qsort_r(f->leaves, (size_t)f->nleaves, sizeof(int), cmp_leaf, f);
	return 0;
}

/* ---- routing ------------------------------------------------------------ */

static uint8_t hops_of(const struct ftree *f, int s)
{
	return f->hstamp[s] == f->stamp ? f->hops[s] : NO_HOPS;
}

/* Switch s routes lid out of port at this many hops; a dummy destination
 * (LID 0) only marks the switch reached, as OpenSM wipes its entries. */
static void set_entry(struct ftree *f, int s, net_lid_t lid, int port, int hops)
{
	if (lid)
		f->t.n->nodes[f->t.sw[s]].lft[lid] = (uint8_t)port;
	f->hops[s] = (uint8_t)(hops < NO_HOPS ? hops : NO_HOPS - 1);
	f->hstamp[s] = f->stamp;
}

/* The first port of group g (lowest port number) with the least count. */
static int least_port(const struct ftree *f, int s, const struct fgroup *g, const uint32_t *cnt)
{
	const int *ports = f->gports + g->first_port;
	const uint32_t *c = cnt + (size_t)s * ((size_t)f->t.maxports + 1);
	int best = ports[0];

	for (int i = 1; i < g->nports; i++)
		if (c[ports[i]] < c[best])
			best = ports[i];
	return best;
}

static int remote_port(const struct ftree *f, int s, int p)
{
	return f->t.n->nodes[f->t.sw[s]].ports[p].remote_port;
}

/*
 * OpenSM's fabric_route_upgoing_by_going_down: the switches below s (but
 * not prev) route lid up to s. True when a leaf was reached.
 */
static bool route_down(struct ftree *f, int s, int prev, net_lid_t lid, int hops)
{
	struct fsw *w = &f->sw[s];
	bool created = false;

	if (!w->ndown)
		return false;
	if (w->counter_up_changed) {
		sort_groups(f, w->down, w->ndown, by_counter_up);
		w->counter_up_changed = false;
	}
	for (int i = 0; i < w->ndown; i++) {
		struct fgroup *g = &f->g[w->down + i];
		int v = g->remote, p;
		uint8_t h;

		if (v < 0) {
			created = true;	/* a CA below: s is a leaf */
			continue;
		}
		if (v == prev)
			continue;
		h = hops_of(f, v);
		if (h != NO_HOPS && hops + 1 >= h)
			continue;
		p = least_port(f, s, g, f->pcu);
		set_entry(f, v, lid, remote_port(f, s, p), hops + 1);
		if (route_down(f, v, -1, lid, hops + 1)) {
			created = true;
			f->pcu[(size_t)s * ((size_t)f->t.maxports + 1) + (size_t)p]++;
			g->counter_up++;
			w->counter_up_changed = true;
		}
	}
	return created;
}

/*
 * OpenSM's fabric_route_downgoing_by_going_up: below s first, then the
 * main path up (counted) and the other up-groups as secondary paths.
 */
static bool route_up(struct ftree *f, int s, int prev, net_lid_t lid, bool main, int hops)
{
	struct fsw *w = &f->sw[s];
	bool created = route_down(f, s, prev, lid, hops);

	if (w->rank == 0 || !w->nup)
		return created;
	sort_groups(f, w->up, w->nup, by_counter_down);
	if (main) {
		struct fgroup *g = &f->g[w->up];
		int p = least_port(f, s, g, f->pcd), v = g->remote;
		uint8_t h = hops_of(f, v);

		g->counter_down++;
		f->pcd[(size_t)s * ((size_t)f->t.maxports + 1) + (size_t)p]++;
		if (h == NO_HOPS || hops + 1 < h)
			set_entry(f, v, lid, remote_port(f, s, p), hops + 1);
		created |= route_up(f, v, s, lid, true, hops + 1);
	}
	for (int i = main ? 1 : 0; i < w->nup; i++) {
		struct fgroup *g = &f->g[w->up + i];
		int v = g->remote, p;
		uint8_t h = hops_of(f, v);

		if (h != NO_HOPS && hops + 1 >= h)
			continue;
		p = least_port(f, s, g, f->pcd);
		set_entry(f, v, lid, remote_port(f, s, p), hops + 1);
		created |= route_up(f, v, s, lid, false, hops + 1);
	}
	return created;
}

/* A destination LID at switch s (its leaf, or the switch itself). */
static void route_lid(struct ftree *f, int s, net_lid_t lid, int port, bool main, int hops)
{
	f->stamp++;
	set_entry(f, s, lid, port, hops);
	route_up(f, s, -1, lid, main, hops);
}

/* OpenSM's fabric_route_to_cns, fabric_route_to_switches. */
static void route_all(struct ftree *f)
{
	struct sm_topo *t = &f->t;
	int most = 0;

	for (int i = 0; i < f->nleaves; i++) {
		int s = f->leaves[i], n = 0;

		for (int e = t->ep_first[s]; e < t->ep_first[s + 1]; e++)
			n += t->ep_lid[e] == t->n->nodes[t->ep_node[e]].ports[t->ep_nport[e]].lid;
		if (n > most)
			most = n;
	}
	for (int i = 0; i < f->nleaves; i++) {
		int s = f->leaves[i], routed = 0;
		const struct fsw *w = &f->sw[s];

		/* its CA ports' base LIDs in port order (a leaf's CA groups
		 * are never re-sorted); LMC's other LIDs follow them (lmc_lids) */
		for (int k = 0; k < w->ndown; k++) {
			const struct fgroup *g = &f->g[w->down + k];
			int p = f->gports[g->first_port];

			if (g->remote >= 0)
				continue;
			for (int e = t->ep_first[s]; e < t->ep_first[s + 1]; e++) {
				const struct net_node *ca = &t->n->nodes[t->ep_node[e]];

				if (t->ep_port[e] == p && t->ep_lid[e] == ca->ports[t->ep_nport[e]].lid) {
					route_lid(f, s, t->ep_lid[e], p, true, 1);
					routed++;
				}
			}
		}
		/* dummies: as many destinations as the fullest leaf's, which
		 * only move the counters (their entries, LID 0, are wiped) */
		for (; routed < most; routed++)
			route_lid(f, s, 0, 0, true, 1);
	}
	for (int i = 0; i < t->nsw; i++) {
		int s = f->order[i];

		route_lid(f, s, t->n->nodes[t->sw[s]].lid, 0, false, 0);
	}
}

/*
 * LMC > 0 (OpenSM's ftree refuses it and falls back to minhop): LID base +
 * k follows the base LID's routes, turned k places at every switch - an
 * up-port k further round the switch's up-ports (ascending), a down-port k
 * further round the parallel cables to the same switch below. Every switch
 * that goes up for the base LID goes up for its other LIDs and every one
 * that goes down goes down to the same switch, so they are up*, down*
 * routes too, and a CA port's 2^LMC LIDs leave every switch with k or more
 * up-ports by different cables (the point of LMC: several paths).
 */
static int lmc_lids(struct ftree *f)
{
	struct sm_topo *t = &f->t;
	size_t np = (size_t)t->maxports + 1;
	/* per port of the switch at hand: its place among the up-ports
	 * (ascending), else -1; and its group */
	int *up = malloc(sizeof(int) * np), *upos = malloc(sizeof(int) * np);
	int *grp = malloc(sizeof(int) * np);

	if (!up || !upos || !grp) {
		free(up);
		free(upos);
		free(grp);
		return -1;
	}
	for (int s = 0; s < t->nsw; s++) {
		uint8_t *lft = t->n->nodes[t->sw[s]].lft;
		const struct fsw *w = &f->sw[s];
		int nup = 0;

		for (size_t p = 0; p < np; p++)
			upos[p] = grp[p] = -1;
		for (int gi = w->down; gi < w->up + w->nup; gi++)
			for (int i = 0; i < f->g[gi].nports; i++) {
				int p = f->gports[f->g[gi].first_port + i];

				grp[p] = gi;
				if (gi >= w->up)
					up[nup++] = p;
			}
		for (int i = 1; i < nup; i++)	/* ascending port numbers */
			for (int j = i; j > 0 && up[j] < up[j - 1]; j--) {
				int x = up[j];

				up[j] = up[j - 1];
				up[j - 1] = x;
			}
		for (int i = 0; i < nup; i++)
			upos[up[i]] = i;
		for (int e = 0; e < t->nep; e++) {
			net_lid_t base = t->n->nodes[t->ep_node[e]].ports[t->ep_nport[e]].lid;
			int k = (int)(t->ep_lid[e] - base), b = lft[base];
			const struct fgroup *g;
			int pos = 0;

			if (!k || b == SM_NO_ROUTE || !b)
				continue;
			if (upos[b] >= 0) {
				lft[t->ep_lid[e]] = (uint8_t)up[(upos[b] + k) % nup];
				continue;
			}
			if (grp[b] < 0)
				continue;
			g = &f->g[grp[b]];
			while (f->gports[g->first_port + pos] != b)
				pos++;
			lft[t->ep_lid[e]] = (uint8_t)f->gports[g->first_port + (pos + k) % g->nports];
		}
	}
	free(up);
	free(upos);
	free(grp);
	return 0;
}

int sm_route_ftree(struct net *n, const struct sm_opts *o, struct sim_diag *d)
{
	struct ftree f = { 0 };
	size_t ns, np, ngroups = 0;
	int rc = -1, ntop = 0;

	if (sm_topo_init(&f.t, n, o, d))
		return -1;
	if (o && o->roots && *o->roots) {
		ftree_free(&f);
		return sim_diag_set(d, NULL, 0, 0,
				    "ftree: --roots is for updn; ftree finds the levels from the cabling");
	}
	ns = (size_t)f.t.nsw + 1;
	np = (size_t)f.t.maxports + 1;
	for (int s = 0; s < f.t.nsw; s++)
		ngroups += (size_t)n->nodes[f.t.sw[s]].nports;
	f.level = malloc(sizeof(int) * ns);
	f.sw = calloc(ns, sizeof(*f.sw));
	f.g = malloc(sizeof(*f.g) * (ngroups + 1));
	f.gports = malloc(sizeof(int) * (ngroups + 1));
	f.pcu = calloc(ns * np, sizeof(uint32_t));
	f.pcd = calloc(ns * np, sizeof(uint32_t));
	f.order = malloc(sizeof(int) * ns);
	f.leaves = malloc(sizeof(int) * ns);
	f.hstamp = calloc(ns, sizeof(uint32_t));
	f.hops = malloc(ns);
	for (f.tmask = 15; f.tmask < 2 * ns; f.tmask = 2 * f.tmask + 1)
		;
	f.tset = malloc(sizeof(int) * ((size_t)f.tmask + 1));
	if (!f.level || !f.sw || !f.g || !f.gports || !f.pcu || !f.pcd || !f.order || !f.leaves ||
	    !f.tset || !f.hstamp || !f.hops) {
		sim_diag_set(d, NULL, 0, 0, "out of memory");
		goto out;
	}
	memset(f.tset, 0xff, sizeof(int) * ((size_t)f.tmask + 1));
	if (!f.t.nsw) {
		rc = 0;
		goto out;
	}
	if (find_levels(&f, d))
		goto out;
	for (int s = 0; s < f.t.nsw; s++) {
		f.sw[s].rank = f.top - f.level[s];
		f.order[s] = s;
	}
	qsort_r(f.order, (size_t)f.t.nsw, sizeof(int), cmp_guid, &f);
	for (int s = 0; s < f.t.nsw; s++)
		make_groups(&f, s);
	fill_group_ports(&f);
	if (make_indexing(&f, d))
		goto out;
	route_all(&f);
	if (n->lmc && lmc_lids(&f)) {
		sim_diag_set(d, NULL, 0, 0, "out of memory");
		goto out;
	}
	for (int s = 0; s < f.t.nsw; s++)
		ntop += f.level[s] == f.top;
	sm_note(o, "ftree %d level%s, %d lea%s, %d top switch%s", f.top + 1,
		f.top ? "s" : "", f.nleaves, f.nleaves == 1 ? "f" : "ves", ntop,
		ntop == 1 ? "" : "es");
	rc = 0;
out:
	ftree_free(&f);
	return rc;
}
