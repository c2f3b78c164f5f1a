/* SPDX-License-Identifier: MIT */
/*
 * sm_updn.c - up/down routing, in the manner of OpenSM's updn engine
 * (osm_ucast_updn.c), after Autonet's "up* down*" rule (Schroeder et al.,
 * 1991): rank the switches by BFS distance from a set of roots, call a hop
 * "up" when it goes to a higher switch, and allow only paths that go up some
 * hops and then down. No path turns from down to up, so the channel
 * dependency graph has no cycle and the routing is free of credit-loop
 * deadlock with a single VL (IBA 7.9 flow control never drops, so a cycle
 * would wedge).
 *
 * Order: switch u is higher than v when (rank, GUID, file position) of u is
 * smaller. Equal ranks are ordered by GUID as OpenSM does (a hop towards
 * the smaller GUID is up); a total order keeps even root-to-root cables
 * acyclic, where OpenSM declares them up both ways.
 *
 * Roots: --roots (descriptions, ids or GUIDs), or OpenSM's automatic choice
 * (updn_find_root_nodes_by_min_hop): for each switch, a histogram of its
 * hop distance to every CA (counted at the CA's switch); a switch is a root
 * when one bar holds more than 90% of the CAs and no other bar more than 5%.
 * On a fat tree that picks the top switches. Where it picks none (a torus,
 * a ring), OpenSM falls back to minhop and loses deadlock freedom; here the
 * most central switch (smallest maximum hop count to the CAs' switches,
 * then lowest GUID) becomes the one root instead, and it is also the
 * fallback when automatic roots leave a pair without an up/down path.
 *
 * Routes: for destination switch D, every switch that can reach D going
 * only down does so, over a shortest all-down path; every other switch
 * climbs to the up-neighbour from which the (climb + descent) is shortest.
 * One LFT entry must serve packets that arrive going up and going down, and
 * a packet that came down must keep going down: hence "down if you can",
 * which on fat trees is also the shortest up/down path (on other graphs it
 * may cost a hop over the shortest legal path). Among equal candidates the
 * least-loaded port wins (LIDs routed so far, ties to the lowest port), as
 * in minhop, and the destinations are visited in OpenSM's order
 * (sm_dest_order), switch LIDs last and left out of the balance. Every
 * LID of a port (LMC) is routed and balanced on its own.
 *
 * Left out: OpenSM's connect_roots option. Switch-to-switch LIDs with no
 * up/down path (between two top switches) stay unrouted, exactly as in
 * OpenSM's dump; they carry management traffic only.
 */
#define _GNU_SOURCE	/* qsort_r */
#include "models/sm/sm_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct updn {
	struct sm_topo t;
	const struct sm_opts *o;
	int *rank;
	int *order;		/* switches, highest first */
	int *pos;		/* switch -> place in order: up(u->v) iff pos[v] < pos[u] */
	int *comp;		/* connected component of each switch */
	int *dd;		/* shortest all-down path to the destination, -1: none */
	int *cost;		/* shortest up-then-down path, INT_MAX: none */
	int *cand;
	char *root;
};

static void updn_free(struct updn *u)
{
	sm_topo_free(&u->t);
	free(u->rank);
	free(u->order);
	free(u->pos);
	free(u->comp);
	free(u->dd);
	free(u->cost);
	free(u->cand);
	free(u->root);
}


/* CA ports (not LIDs: LMC must not weigh in) hanging off each switch. */
static void count_cas(const struct sm_topo *t, int *cas)
{
	for (int s = 0; s < t->nsw; s++) {
		cas[s] = 0;
		for (int i = t->ep_first[s]; i < t->ep_first[s + 1]; i++) {
			const struct net_node *ca = &t->n->nodes[t->ep_node[i]];

			cas[s] += t->ep_lid[i] == ca->ports[t->ep_nport[i]].lid;
		}
	}
}

/* OpenSM's histogram rule; returns the number of roots marked. */
static int roots_by_histogram(struct updn *u, const int *cas, int total)
{
	struct sm_topo *t = &u->t;
	int *dist = u->dd, *hist = u->cost, found = 0;

	if (!total)
		return 0;
	for (int s = 0; s < t->nsw; s++) {
		int over90 = 0, over5 = 0;

		sm_bfs(&u->t, s, dist);
		for (int i = 0; i < t->nsw; i++)
			hist[i] = 0;
		for (int v = 0; v < t->nsw; v++)
			if (dist[v] >= 0)
				hist[dist[v]] += cas[v];
		/* thresholds as in OpenSM: bar > 0.9 * CAs, bar > 0.05 * CAs */
		for (int i = 0; i < t->nsw; i++) {
			over90 += hist[i] * 10 > total * 9;
			over5 += hist[i] * 20 > total;
		}
		if (over90 == 1 && over5 == 1) {
			u->root[s] = 1;
			found++;
		}
	}
	return found;
}

/* The most central switch: least eccentricity towards the CAs' switches. */
static void root_by_center(struct updn *u, const int *cas, int total)
{
	struct sm_topo *t = &u->t;
	int best = -1, best_ecc = INT_MAX, best_reach = -1;

	for (int s = 0; s < t->nsw; s++) {
		int ecc = 0, reach = 0;

		sm_bfs(&u->t, s, u->dd);
		for (int v = 0; v < t->nsw; v++) {
			if (u->dd[v] < 0 || (total && !cas[v]))
				continue;
			reach++;
			if (u->dd[v] > ecc)
				ecc = u->dd[v];
		}
		/* the largest component first, then the centre, then the GUID */
		if (reach > best_reach || (reach == best_reach && ecc < best_ecc) ||
		    (reach == best_reach && ecc == best_ecc &&
		     sm_switch_key(t, s) < sm_switch_key(t, best))) {
			best = s;
			best_ecc = ecc;
			best_reach = reach;
		}
	}
	for (int s = 0; s < t->nsw; s++)
		u->root[s] = 0;
	if (best >= 0)
		u->root[best] = 1;
}

static int cmp_height(const void *a, const void *b, void *ctx)
{
	const struct updn *u = ctx;
	int x = *(const int *)a, y = *(const int *)b;
	uint64_t kx = sm_switch_key(&u->t, x), ky = sm_switch_key(&u->t, y);

	if (u->rank[x] != u->rank[y])
		return u->rank[x] < u->rank[y] ? -1 : 1;
	if (kx != ky)
		return kx < ky ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* Multi-source BFS from the roots; unreachable switches rank last. */
static void rank_switches(struct updn *u)
{
	struct sm_topo *t = &u->t;
	int head = 0, tail = 0, *q = t->queue;

	for (int s = 0; s < t->nsw; s++) {
		u->rank[s] = u->root[s] ? 0 : INT_MAX;
		if (u->root[s])
			q[tail++] = s;
	}
	while (head < tail) {
		int s = q[head++];
		const struct net_node *nd = &t->n->nodes[t->sw[s]];

		for (int p = 1; p <= nd->nports; p++) {
			int v = sm_peer(t, s, p);

			if (v >= 0 && u->rank[v] == INT_MAX) {
				u->rank[v] = u->rank[s] + 1;
				q[tail++] = v;
			}
		}
	}
	for (int s = 0; s < t->nsw; s++)
		u->order[s] = s;
	qsort_r(u->order, (size_t)t->nsw, sizeof(int), cmp_height, u);
	for (int i = 0; i < t->nsw; i++)
		u->pos[u->order[i]] = i;
}

/* dd[] and cost[] towards destination switch D. */
static void distances(struct updn *u, int D)
{
	struct sm_topo *t = &u->t;
	int head = 0, tail = 0, *q = t->queue;

	for (int s = 0; s < t->nsw; s++)
		u->dd[s] = -1;
	u->dd[D] = 0;
	q[tail++] = D;
	/* backwards from D: S reaches v going down when v is below S */
	while (head < tail) {
		int v = q[head++];
		const struct net_node *nd = &t->n->nodes[t->sw[v]];

		for (int p = 1; p <= nd->nports; p++) {
			int s = sm_peer(t, v, p);

			if (s >= 0 && u->dd[s] < 0 && u->pos[s] < u->pos[v]) {
				u->dd[s] = u->dd[v] + 1;
				q[tail++] = s;
			}
		}
	}
	/* highest first: a switch's up-neighbours are settled before it */
	for (int i = 0; i < t->nsw; i++) {
		int s = u->order[i];
		const struct net_node *nd = &t->n->nodes[t->sw[s]];

		if (u->dd[s] >= 0) {
			u->cost[s] = u->dd[s];
			continue;
		}
		u->cost[s] = INT_MAX;
		for (int p = 1; p <= nd->nports; p++) {
			int v = sm_peer(t, s, p);

			if (v >= 0 && u->pos[v] < i && u->cost[v] != INT_MAX &&
			    u->cost[v] + 1 < u->cost[s])
				u->cost[s] = u->cost[v] + 1;
		}
	}
}

/* Candidate ports at switch s towards D (distances() done); count. */
static int candidates(struct updn *u, int s)
{
	struct sm_topo *t = &u->t;
	const struct net_node *nd = &t->n->nodes[t->sw[s]];
	int k = 0;

	for (int p = 1; p <= nd->nports; p++) {
		int v = sm_peer(t, s, p);

		if (v < 0)
			continue;
		if (u->dd[s] >= 0 ? u->pos[v] > u->pos[s] && u->dd[v] == u->dd[s] - 1 :
		    u->cost[s] != INT_MAX && u->pos[v] < u->pos[s] &&
		    u->cost[v] == u->cost[s] - 1)
			u->cand[k++] = p;
	}
	return k;
}

/*
 * Route everything for the current ranking. Returns 0, -1 (out of memory
 * or similar, diag filled) or 1 when some CA LID has no up/down path from
 * a switch in its component (diag names the pair).
 */
/* Destinations in OpenSM's order (sm_dest_order); switch LIDs last and
 * out of the balance, as OpenSM leaves them. */
static int route_all(struct updn *u, struct sim_diag *d)
{
	struct sm_topo *t = &u->t;
	struct net *n = t->n;
	int *dorder = malloc(sizeof(int) * ((size_t)t->nsw + 1));
	int *eorder = malloc(sizeof(int) * ((size_t)t->nep + 1));
	int rc = 0;

	if (!dorder || !eorder) {
		free(dorder);
		free(eorder);
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	}
	sm_dest_order(t, dorder, eorder);
	for (int o = 0; o < t->nsw && !rc; o++) {
		int D = dorder[o];
		int first = t->ep_first[D], cnt = t->ep_first[D + 1] - first;

		if (!cnt)
			continue;
		distances(u, D);
		for (int s = 0; s < t->nsw; s++) {
			int k;

			if (s == D || u->comp[s] != u->comp[D])
				continue;
			k = candidates(u, s);
			if (!k) {
				sim_diag_set(d, NULL, 0, 0,
					     "updn: no up/down path from switch \"%s\" to \"%s\" (LID %u)",
					     n->nodes[t->sw[s]].desc,
					     n->nodes[t->ep_node[first]].desc,
					     t->ep_lid[first]);
				rc = 1;
				break;
			}
			for (int i = 0; i < cnt; i++)
				sm_route_lid(t, s, t->ep_lid[eorder[first + i]], u->cand, k);
		}
	}
	free(dorder);
	free(eorder);
	if (rc)
		return rc;
	/* switch LIDs last, so management routes do not skew the data paths */
	for (int D = 0; D < t->nsw; D++) {
		net_lid_t lid = n->nodes[t->sw[D]].lid;

		distances(u, D);
		for (int s = 0; s < t->nsw; s++) {
			int k;

			if (s == D)
				continue;
			k = candidates(u, s);
			if (k)		/* none: top to top, unrouted as in OpenSM */
				sm_route_lid_uncounted(t, s, lid, u->cand, k);
		}
	}
	return 0;
}

/* Connected components, so that a split fabric is not blamed on the roots. */
static void components(struct updn *u)
{
	struct sm_topo *t = &u->t;

	for (int s = 0; s < t->nsw; s++)
		u->comp[s] = -1;
	for (int s = 0, c = 0; s < t->nsw; s++) {
		if (u->comp[s] >= 0)
			continue;
		sm_bfs(&u->t, s, u->dd);
		for (int v = 0; v < t->nsw; v++)
			if (u->dd[v] >= 0)
				u->comp[v] = c;
		c++;
	}
}

/* Forget the routes of a failed attempt (the CA LIDs at their switch stay). */
static int reset_routes(struct updn *u, const struct sm_opts *o, struct sim_diag *d)
{
	struct net *n = u->t.n;

	sm_topo_free(&u->t);
	return sm_topo_init(&u->t, n, o, d);
}

int sm_route_updn(struct net *n, const struct sm_opts *o, struct sim_diag *d)
{
	struct updn u = { .o = o };
	int *cas = NULL, total = 0, rc = -1, nroots;
	char names[200];
	bool automatic;

	if (sm_topo_init(&u.t, n, o, d))
		return -1;
	u.rank = malloc(sizeof(int) * ((size_t)u.t.nsw + 1));
	u.order = malloc(sizeof(int) * ((size_t)u.t.nsw + 1));
	u.pos = malloc(sizeof(int) * ((size_t)u.t.nsw + 1));
	u.comp = malloc(sizeof(int) * ((size_t)u.t.nsw + 1));
	u.dd = malloc(sizeof(int) * ((size_t)u.t.nsw + 1));
	u.cost = malloc(sizeof(int) * ((size_t)u.t.nsw + 1));
	u.cand = malloc(sizeof(int) * ((size_t)u.t.maxports + 1));
	u.root = calloc((size_t)u.t.nsw + 1, 1);
	cas = malloc(sizeof(int) * ((size_t)u.t.nsw + 1));
	if (!u.rank || !u.order || !u.pos || !u.comp || !u.dd || !u.cost ||
	    !u.cand || !u.root || !cas) {
		sim_diag_set(d, NULL, 0, 0, "out of memory");
		goto out;
	}
	if (!u.t.nsw) {
		rc = 0;
		goto out;
	}
	components(&u);
	count_cas(&u.t, cas);
	for (int s = 0; s < u.t.nsw; s++)
		total += cas[s];
	automatic = !o || !o->roots || !*o->roots;
	if (!automatic) {
		nroots = sm_parse_switch_list(&u.t, o->roots, "updn --roots", u.root, d);
		if (nroots < 0)
			goto out;
	} else if (!roots_by_histogram(&u, cas, total)) {
		root_by_center(&u, cas, total);
	}
	rank_switches(&u);
	rc = route_all(&u, d);
	if (rc == 1 && automatic) {
		/* OpenSM's roots do not serve this graph: one central root does */
		if (reset_routes(&u, o, d)) {
			rc = -1;
			goto out;
		}
		root_by_center(&u, cas, total);
		rank_switches(&u);
		rc = route_all(&u, d);
	}
	if (rc == 1) {
		size_t l = strlen(d->msg);

		snprintf(d->msg + l, sizeof(d->msg) - l,
			 "; every switch needs a root above it from which the destination can be reached going down: try other --roots");
		rc = -1;
		goto out;
	}
	if (!rc) {
		sm_note_switches(&u.t, u.root, names, sizeof(names));
		sm_note(o, "updn roots %s (%s)", names,
			automatic ? "automatic" : "--roots");
	}
out:
	free(cas);
	updn_free(&u);
	return rc;
}
