/* SPDX-License-Identifier: MIT */
/*
 * sm_ftree.c - fat-tree routing, after OpenSM's ftree engine
 * (osm_ucast_ftree.c, Zahavi et al., "Optimized InfiniBand fat-tree routing
 * for shift all-to-all communication patterns", 2009) and the D-mod-k rule
 * of k-ary n-trees (Gomez et al., 2007).
 *
 * Levels: switches with CAs are the leaves (level 0); every other switch's
 * level is its hop distance from the nearest leaf. A fat tree cables only
 * adjacent levels, and every switch without up-links is on the top level;
 * anything else (a torus, a ring, hosts on a spine) is refused with the
 * cable or switch that breaks the rule, since "up" would mean nothing.
 *
 * Order: top switches in file order; below them, each level sorted by the
 * place of its first parent, then file order, so the leaves of one pod are
 * consecutive; a switch's up-ports are sorted by (parent's place, parent's
 * port), so up-port i of every leaf in a pod leads to the same parent. The
 * CA ports get a global index in leaf order, then leaf port order.
 *
 * Routes: a destination LID with index x (and LMC offset o) leaves every
 * switch at level l that does not have it below by up-port
 * (floor(x / P_l) + o) mod U, where U is the switch's number of up-ports and
 * P_l the product of the up-port counts of the levels below (D-mod-k). Its
 * own leaf picks the same up-port, and so on up to the top, and each parent
 * on that chain sends the LID down the very cable the chain came up by: the
 * LID always comes down the same cables, whoever sends it. On a
 * full-bisection tree every leaf then uses distinct up-links for the H
 * consecutive destinations of a shift permutation, each down-link carries
 * one destination, and shift all-to-all runs without contention. Other
 * switches that have the LID below route it down over the least-loaded port
 * (OpenSM's balancing counter). Routes are up*, down*: deadlock free with
 * one VL. On irregular trees (oversubscribed, a cable missing) an up-port
 * whose parent cannot reach the LID is skipped for the least-loaded good one.
 *
 * Switch LIDs (management only) go up*, down* by least load; between two
 * top switches there is no such path and the entry stays "no route" (255
 * in the LFT, IBA 14.2.5.10), as in OpenSM's ftree. Deadlock freedom
 * matters because IBA's credit-based flow control (7.9.4) never drops a
 * packet: a cycle of full buffers would never drain. Left out: OpenSM's root/CN guid files, IO nodes and
 * --ftree_ca_order; tree shapes are inferred from the cabling.
 */
#define _GNU_SOURCE	/* qsort_r */
#include "models/sm/sm_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ftree {
	struct sm_topo t;
	int *level;		/* per switch */
	int top;		/* highest level */
	int *place;		/* per switch: place in the level order */
	int *upp;		/* up-ports of switch s: upp[s * maxports ...] */
	int *nup;
	uint64_t *period;	/* P_l per level */
	int *leaves;		/* leaf switches in order */
	int nleaves;
	int *xindex;		/* per endpoint slot: global index of its port */
	/* per destination leaf */
	char *below;		/* the leaf is below s (s can go down to it) */
	char *ok;		/* s can reach the leaf (below, or by climbing) */
	char *upok;		/* every up-port of s leads to an ok switch */
	int *dcand, *ndc;	/* down candidates per switch */
	/* per LID: the chain's down-port at each switch, valid when stamped */
	int *chain_port;
	uint32_t *chain_stamp;
	int *cand;
};

static void ftree_free(struct ftree *f)
{
	sm_topo_free(&f->t);
	free(f->level);
	free(f->place);
	free(f->upp);
	free(f->nup);
	free(f->period);
	free(f->leaves);
	free(f->xindex);
	free(f->below);
	free(f->ok);
	free(f->upok);
	free(f->dcand);
	free(f->ndc);
	free(f->chain_port);
	free(f->chain_stamp);
	free(f->cand);
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
	return 0;
}

static int cmp_place(const void *a, const void *b, void *ctx)
{
	const int *key = ctx;
	int x = *(const int *)a, y = *(const int *)b;

	if (key[x] != key[y])
		return key[x] < key[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

struct upsort {
	const struct ftree *f;
	int s;
};

static int cmp_up(const void *a, const void *b, void *ctx)
{
	const struct upsort *u = ctx;
	const struct sm_topo *t = &u->f->t;
	const struct net_node *nd = &t->n->nodes[t->sw[u->s]];
	int pa = *(const int *)a, pb = *(const int *)b;
	int va = sm_peer(t, u->s, pa), vb = sm_peer(t, u->s, pb);

	if (u->f->place[va] != u->f->place[vb])
		return u->f->place[va] < u->f->place[vb] ? -1 : 1;
	return nd->ports[pa].remote_port - nd->ports[pb].remote_port;
}

/* Order the switches level by level from the top, and their up-ports. */
static int order_tree(struct ftree *f, struct sim_diag *d)
{
	struct sm_topo *t = &f->t;
	int *key = t->dist, *lvl = t->queue, cnt, next = 0;

	for (int l = f->top; l >= 0; l--) {
		cnt = 0;
		for (int s = 0; s < t->nsw; s++) {
			const struct net_node *nd = &t->n->nodes[t->sw[s]];

			if (f->level[s] != l)
				continue;
			key[s] = INT_MAX;
			for (int p = 1; p <= nd->nports; p++) {
				int v = sm_peer(t, s, p);

				if (v >= 0 && f->level[v] == l + 1 && f->place[v] < key[s])
					key[s] = f->place[v];
			}
			if (l < f->top && key[s] == INT_MAX)
				return sim_diag_set(d, nd->file, nd->line, 0,
						    "ftree: not a fat tree: switch \"%s\" on level %d has no up-link but the tree has %d levels "
						    "(every switch without up-links must be on the top level)",
						    nd->desc, l, f->top + 1);
			if (l == f->top)
				key[s] = s;
			lvl[cnt++] = s;
		}
		qsort_r(lvl, (size_t)cnt, sizeof(int), cmp_place, key);
		for (int i = 0; i < cnt; i++)
			f->place[lvl[i]] = next++;
	}
	for (int s = 0; s < t->nsw; s++) {
		const struct net_node *nd = &t->n->nodes[t->sw[s]];
		int *up = f->upp + (size_t)s * t->maxports;
		struct upsort us = { f, s };

		f->nup[s] = 0;
		for (int p = 1; p <= nd->nports; p++) {
			int v = sm_peer(t, s, p);

			if (v >= 0 && f->level[v] == f->level[s] + 1)
				up[f->nup[s]++] = p;
		}
		qsort_r(up, (size_t)f->nup[s], sizeof(int), cmp_up, &us);
	}
	/* P_l: product of the widest up-port counts of the levels below */
	f->period[0] = 1;
	for (int l = 0; l < f->top; l++) {
		int widest = 1;

		for (int s = 0; s < t->nsw; s++)
			if (f->level[s] == l && f->nup[s] > widest)
				widest = f->nup[s];
		f->period[l + 1] = f->period[l] * (uint64_t)widest;
		if (f->period[l + 1] > (1ull << 40))
			f->period[l + 1] = 1ull << 40;	/* no tree is this wide */
	}
	return 0;
}

/* Leaves in place order, and the index of every CA port's LIDs. */
static void index_endpoints(struct ftree *f)
{
	struct sm_topo *t = &f->t;
	int x = 0;

	f->nleaves = 0;
	for (int s = 0; s < t->nsw; s++)
		if (f->level[s] == 0)
			f->leaves[f->nleaves++] = s;
	qsort_r(f->leaves, (size_t)f->nleaves, sizeof(int), cmp_place, f->place);
	for (int i = 0; i < f->nleaves; i++) {
		int s = f->leaves[i], first = t->ep_first[s], last = t->ep_first[s + 1];

		/* by leaf port, then LID: the slots are by LID, so pick ports in turn */
		for (int p = 1; p <= t->n->nodes[t->sw[s]].nports; p++) {
			bool any = false;

			for (int e = first; e < last; e++) {
				const struct net_node *ca = &t->n->nodes[t->ep_node[e]];

				if (t->ep_port[e] != p)
					continue;
				/* several CA ports behind one switch port cannot
				 * happen (one cable), but LMC gives several LIDs */
				f->xindex[e] = x;
				any = any || t->ep_lid[e] == ca->ports[t->ep_nport[e]].lid;
			}
			x += any;
		}
	}
}

/* below/ok/upok and the down candidates for destination leaf L. */
static void prepare_leaf(struct ftree *f, int L)
{
	struct sm_topo *t = &f->t;
	int head = 0, tail = 0, *q = t->queue;

	memset(f->below, 0, (size_t)t->nsw);
	f->below[L] = 1;
	q[tail++] = L;
	while (head < tail) {
		int v = q[head++];
		const struct net_node *nd = &t->n->nodes[t->sw[v]];

		for (int p = 1; p <= nd->nports; p++) {
			int s = sm_peer(t, v, p);

			if (s >= 0 && !f->below[s] && f->level[s] == f->level[v] + 1) {
				f->below[s] = 1;
				q[tail++] = s;
			}
		}
	}
	/* top-down: ok if below or some parent is ok */
	for (int l = f->top; l >= 0; l--)
		for (int s = 0; s < t->nsw; s++) {
			const int *up = f->upp + (size_t)s * t->maxports;

			if (f->level[s] != l)
				continue;
			f->ok[s] = f->below[s];
			f->upok[s] = f->nup[s] > 0;
			for (int i = 0; i < f->nup[s]; i++) {
				int v = sm_peer(t, s, up[i]);

				f->ok[s] |= f->ok[v];
				f->upok[s] &= f->ok[v];
			}
		}
	for (int s = 0; s < t->nsw; s++) {
		const struct net_node *nd = &t->n->nodes[t->sw[s]];
		int *dc = f->dcand + (size_t)s * t->maxports;

		f->ndc[s] = 0;
		if (!f->below[s] || s == L)
			continue;
		for (int p = 1; p <= nd->nports; p++) {
			int v = sm_peer(t, s, p);

			if (v >= 0 && f->below[v] && f->level[v] == f->level[s] - 1)
				dc[f->ndc[s]++] = p;
		}
	}
}

/* The up-port D-mod-k picks at switch s for index x, offset o; ok ones only. */
static int up_port(struct ftree *f, int s, int x, int o)
{
	struct sm_topo *t = &f->t;
	const int *up = f->upp + (size_t)s * t->maxports;
	int k = 0, best;

	if (f->upok[s])
		return up[((uint64_t)x / f->period[f->level[s]] + (uint64_t)o) % (uint64_t)f->nup[s]];
	for (int i = 0; i < f->nup[s]; i++)
		if (f->ok[sm_peer(t, s, up[i])])
			f->cand[k++] = up[i];
	if (!k)
		return -1;
	/* least loaded, as sm_route_lid() would pick, without charging it */
	best = f->cand[0];
	for (int i = 1; i < k; i++)
		if (t->load[s][f->cand[i]] < t->load[s][best])
			best = f->cand[i];
	return best;
}

static void set_port(struct ftree *f, int s, net_lid_t lid, int p)
{
	f->t.n->nodes[f->t.sw[s]].lft[lid] = (uint8_t)p;
	f->t.load[s][p]++;
}

static int route_ca_lids(struct ftree *f, struct sim_diag *d)
{
	struct sm_topo *t = &f->t;
	struct net *n = t->n;
	uint32_t stamp = 0;

	for (int li = 0; li < f->nleaves; li++) {
		int L = f->leaves[li];

		prepare_leaf(f, L);
		for (int e = t->ep_first[L]; e < t->ep_first[L + 1]; e++) {
			const struct net_node *ca = &n->nodes[t->ep_node[e]];
			net_lid_t lid = t->ep_lid[e];
			int x = f->xindex[e], o = lid - ca->ports[t->ep_nport[e]].lid;
			int cur = L;

			/* the chain: from the leaf up, each parent sends it down here */
			stamp++;
			while (f->nup[cur]) {
				int p = up_port(f, cur, x, o), v;
				const struct net_port *pp;

				if (p < 0)
					break;
				pp = &n->nodes[t->sw[cur]].ports[p];
				v = t->swi[pp->remote_node];
				f->chain_port[v] = pp->remote_port;
				f->chain_stamp[v] = stamp;
				cur = v;
			}
			for (int s = 0; s < t->nsw; s++) {
				int p;

				if (s == L)
					continue;
				if (f->chain_stamp[s] == stamp) {
					set_port(f, s, lid, f->chain_port[s]);
				} else if (f->below[s]) {
					sm_route_lid(t, s, lid, f->dcand + (size_t)s * t->maxports,
						     f->ndc[s]);
				} else if ((p = up_port(f, s, x, o)) > 0) {
					set_port(f, s, lid, p);
				} else {
					return sim_diag_set(d, NULL, 0, 0,
							    "ftree: not a fat tree: switch \"%s\" cannot reach leaf \"%s\" by going up then down "
							    "(every top switch must reach every leaf going down); use updn",
							    sw_desc(f, s), sw_desc(f, L));
				}
			}
		}
	}
	return 0;
}

/* Switch LIDs: up*, down* by least load; none between top switches. */
static void route_switch_lids(struct ftree *f)
{
	struct sm_topo *t = &f->t;

	for (int D = 0; D < t->nsw; D++) {
		net_lid_t lid = t->n->nodes[t->sw[D]].lid;

		prepare_leaf(f, D);	/* "leaf" = the destination switch here */
		for (int s = 0; s < t->nsw; s++) {
			const int *up = f->upp + (size_t)s * t->maxports;
			int k = 0;

			if (s == D)
				continue;
			if (f->below[s]) {
				sm_route_lid(t, s, lid, f->dcand + (size_t)s * t->maxports,
					     f->ndc[s]);
				continue;
			}
			for (int i = 0; i < f->nup[s]; i++)
				if (f->ok[sm_peer(t, s, up[i])])
					f->cand[k++] = up[i];
			if (k)
				sm_route_lid(t, s, lid, f->cand, k);
		}
	}
}

int sm_route_ftree(struct net *n, const struct sm_opts *o, struct sim_diag *d)
{
	struct ftree f = { 0 };
	size_t ns, np;
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
	f.level = malloc(sizeof(int) * ns);
	f.place = malloc(sizeof(int) * ns);
	f.upp = malloc(sizeof(int) * ns * np);
	f.nup = malloc(sizeof(int) * ns);
	f.period = malloc(sizeof(uint64_t) * ns);
	f.leaves = malloc(sizeof(int) * ns);
	f.xindex = malloc(sizeof(int) * ((size_t)f.t.nep + 1));
	f.below = malloc(ns);
	f.ok = malloc(ns);
	f.upok = malloc(ns);
	f.dcand = malloc(sizeof(int) * ns * np);
	f.ndc = malloc(sizeof(int) * ns);
	f.chain_port = malloc(sizeof(int) * ns);
	f.chain_stamp = calloc(ns, sizeof(uint32_t));
	f.cand = malloc(sizeof(int) * np);
	if (!f.level || !f.place || !f.upp || !f.nup || !f.period || !f.leaves ||
	    !f.xindex || !f.below || !f.ok || !f.upok || !f.dcand || !f.ndc ||
	    !f.chain_port || !f.chain_stamp || !f.cand) {
		sim_diag_set(d, NULL, 0, 0, "out of memory");
		goto out;
	}
	if (!f.t.nsw) {
		rc = 0;
		goto out;
	}
	if (find_levels(&f, d) || order_tree(&f, d))
		goto out;
	index_endpoints(&f);
	if (route_ca_lids(&f, d))
		goto out;
	route_switch_lids(&f);
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
