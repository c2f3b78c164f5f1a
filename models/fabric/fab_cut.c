/* SPDX-License-Identifier: MIT */
/*
 * fab_cut.c - a fabric cut into partitions for a parallel run
 * (sim/sim_par.h): which partition each node's components belong to, and
 * which links join two partitions (port.cut: packets cross them as
 * copies, credits and pause frames as events).
 *
 * The unit is a switch with what hangs on it: an HCA calls its ports at
 * once (a node's ports are one partition), and goes with the node its
 * first cable reaches (the leaf it sits on, its peer back to back), and a
 * SHARP aggregation node's internal port (no cable, no latency) stays with
 * its switch. A unit's level is its distance in cables from the nearest
 * unit with hosts (a leaf 0, the switches above it 1, 2, ...), and every
 * partition gets its share of the ports of every level, not only of all
 * ports: where hosts move in step, the events of one instant are the
 * ports of one level (the hosts' packets leave together, reach the
 * leaves together, ...), and a partition of hosts beside one of spines
 * took turns waiting for the other, window by window (the 8,192-host
 * permutation cut 2,560 hosts and 733 switches against 5,632 and 547:
 * each waited for the other 28% of the run, with the events balanced to
 * 1.7% over the whole run).
 * The units are grown into partitions one at a time, as a graph
 * partitioner's first pass does (graph growing, Karypis and Kumar, SIAM
 * J. Sci. Comput. 20(1), 1998): from the first unit not yet taken, always
 * the unit with the most links into the partition so far (the lowest
 * node first among equals) of a level whose share the partition does not
 * hold yet, until it holds its share of every level's ports still left
 * (leaving a unit for each partition to come); the last takes the rest.
 * This is multi-constraint partitioning (Karypis and Kumar, SC 1998) with
 * one constraint a level. Then a refinement (Fiduccia and Mattheyses's
 * moves, DAC 1982, kept greedy): a unit moves to a neighbouring partition
 * when that cuts fewer links without making the heavier of the two in its
 * level heavier than the heaviest partition's in that level, or cuts as
 * many and evens the two out. On a fat tree that takes pods whole, and the
 * top switches their share each. Deterministic: the same fabric and count
 * give the same cut.
 *
 * The look-ahead is the least latency of any link between two nodes
 * (fab_lookahead), whatever the cut: every run stops with it as its lag,
 * so a run gives the same events however it is cut. A fabric with a
 * cable of no length has none, and is refused.
 *
 * Left out: a partitioner that minimises the links cut (METIS's
 * multilevel refinement); weights beyond the ports (a busy leaf weighs
 * what an idle one does); levels past CUT_LEVELS - 1 count as that one.
 */
#include "models/fabric/fab_int.h"

#include "models/hca/hca_plug.h"

#include <stdlib.h>
#include <string.h>

/* levels told apart; farther units count as the last */
#define CUT_LEVELS 8

static int find(int *up, int i)
{
	while (up[i] != i) {
		up[i] = up[up[i]];
		i = up[i];
	}
	return i;
}

static void join(int *up, int a, int b)
{
	a = find(up, a);
	b = find(up, b);
	if (a != b)
		up[a > b ? a : b] = a < b ? a : b;	/* the lower node leads */
}

/* The units: an HCA with the node its first cable reaches, an internal
 * port's two ends together. unit[i] is node i's unit's lowest node. */
static void make_units(const struct fab *f, int *unit)
{
	for (int i = 0; i < f->nnodes; i++)
		unit[i] = i;
	for (int i = 0; i < f->nnodes; i++) {
		const struct fab_node *nd = &f->nodes[i];
		bool first = nd->type != NET_SWITCH;

		for (int q = 1; q <= nd->nports; q++) {
			const struct port *pt = nd->ports[q];

			if (!pt)
				continue;
			if (first || f->net->nodes[i].ports[q].internal)
				join(unit, i, pt->peer->node->idx);
			first = false;
		}
	}
	for (int i = 0; i < f->nnodes; i++)
		unit[i] = find(unit, i);
}

/*
 * Each unit's level (by its leader): 0 with a host, else one more than its
 * nearest neighbour's, breadth first from the units with hosts (a fabric
 * of switches alone: all 0). 0, or -1 out of memory.
 */
static int unit_levels(const struct fab *f, const int *unit, const int *next_in, uint8_t *level)
{
	int nn = f->nnodes, head = 0, tail = 0;
	int *q = malloc((size_t)(nn ? nn : 1) * sizeof(*q));

	if (!q)
		return -1;
	for (int u = 0; u < nn; u++)
		level[u] = UINT8_MAX;
	for (int i = 0; i < nn; i++)
		if (f->nodes[i].type != NET_SWITCH && level[unit[i]] == UINT8_MAX) {
			level[unit[i]] = 0;
			q[tail++] = unit[i];
		}
	while (head < tail) {
		int u = q[head++];

		for (int i = u; i >= 0; i = next_in[i])
			for (int p = 1; p <= f->nodes[i].nports; p++) {
				const struct port *pt = f->nodes[i].ports[p];
				int v = pt ? unit[pt->peer->node->idx] : u;

				if (level[v] == UINT8_MAX) {
					level[v] = (uint8_t)(level[u] + 1 < CUT_LEVELS ? level[u] + 1 :
							     CUT_LEVELS - 1);
					q[tail++] = v;
				}
			}
	}
	for (int u = 0; u < nn; u++)
		if (level[u] == UINT8_MAX)
			level[u] = 0;	/* no host reaches it */
	free(q);
	return 0;
}

/*
 * Greedy moves of single units between neighbouring partitions (the
 * header comment), passes over the units in node order until one moves
 * nothing (at most 16). links[] counts a unit's links into each partition;
 * wl[k * CUT_LEVELS + l] is partition k's weight in level l.
 */
static int refine(const struct fab *f, const int *unit, const int *next_in, const uint64_t *w,
		  const uint8_t *level, int32_t *part, uint64_t *weight, uint32_t n)
{
	uint64_t *links = calloc(n, sizeof(*links));
	uint32_t *count = calloc(n, sizeof(*count));	/* units in each partition */
	uint64_t *wl = calloc((size_t)n * CUT_LEVELS, sizeof(*wl));

	if (!links || !count || !wl) {
		free(links);
		free(count);
		free(wl);
		return -1;
	}
	for (int u = 0; u < f->nnodes; u++)
		if (unit[u] == u)
			wl[(size_t)part[u] * CUT_LEVELS + level[u]] += w[u];
	for (int u = 0; u < f->nnodes; u++)
		if (unit[u] == u)
			count[part[u]]++;
	for (int pass = 0; pass < 16; pass++) {
		bool moved = false;

		for (int u = 0; u < f->nnodes; u++) {
			if (unit[u] != u)
				continue;
			uint32_t a = (uint32_t)part[u], best = a, l = level[u];
			uint64_t heaviest = 0;

			memset(links, 0, n * sizeof(*links));
			for (int i = u; i >= 0; i = next_in[i]) {
				for (int q = 1; q <= f->nodes[i].nports; q++) {
					const struct port *pt = f->nodes[i].ports[q];

					if (pt && unit[pt->peer->node->idx] != u)
						links[part[unit[pt->peer->node->idx]]]++;
				}
			}
			for (uint32_t k = 0; k < n; k++)
				if (wl[k * CUT_LEVELS + l] > heaviest)
					heaviest = wl[k * CUT_LEVELS + l];
			if (count[a] == 1)
				continue;	/* a partition keeps a unit */
			for (uint32_t b = 0; b < n; b++) {
				if (b == a || !links[b])
					continue;
				uint64_t la = wl[a * CUT_LEVELS + l], lb = wl[b * CUT_LEVELS + l];
				uint64_t wa = la - w[u], wb = lb + w[u];
				uint64_t after = wa > wb ? wa : wb, before = la > lb ? la : lb;
				bool better = links[b] > links[best] ? after <= heaviest :
					      links[b] == links[best] && best == a && after < before;

				if (better)
					best = b;
			}
			if (best == a)
				continue;
			weight[a] -= w[u];
			weight[best] += w[u];
			wl[a * CUT_LEVELS + l] -= w[u];
			wl[best * CUT_LEVELS + l] += w[u];
			count[a]--;
			count[best]++;
			part[u] = (int32_t)best;
			moved = true;
		}
		if (!moved)
			break;
	}
	free(links);
	free(count);
	free(wl);
	return 0;
}

int fab_cut_plan(struct fab *f, uint32_t n, struct fab_cut *c, struct sim_diag *d)
{
	int nn = f->nnodes;
	int *unit = malloc((size_t)(nn ? nn : 1) * sizeof(*unit));
	int *next_in = malloc((size_t)(nn ? nn : 1) * sizeof(*next_in));	/* a unit's nodes */
	uint64_t *w = calloc((size_t)(nn ? nn : 1), sizeof(*w));	/* by unit leader */
	uint64_t *gain = calloc((size_t)(nn ? nn : 1), sizeof(*gain));
	int32_t *part = malloc((size_t)(nn ? nn : 1) * sizeof(*part));	/* by unit leader */
	uint8_t *level = malloc((size_t)(nn ? nn : 1));	/* by unit leader */
	uint64_t left[CUT_LEVELS] = { 0 };	/* each level's ports not yet taken */
	uint32_t units = 0;
	int rc = -1;

	memset(c, 0, sizeof(*c));
	c->f = f;
	c->n = n;
	c->lookahead = fab_lookahead(f);
	c->node_part = calloc((size_t)(nn ? nn : 1), sizeof(*c->node_part));
	c->weight = calloc(n ? n : 1, sizeof(*c->weight));
	c->comp_part = malloc((f->eng.ncomps ? f->eng.ncomps : 1) * sizeof(*c->comp_part));
	if (!unit || !next_in || !w || !gain || !part || !level || !c->node_part || !c->weight ||
	    !c->comp_part) {
		sim_diag_set(d, NULL, 0, 0, "out of memory for the cut into partitions");
		goto out;
	}
	if (n < 1 || n > 4096) {
		sim_diag_set(d, NULL, 0, 0, "%u partitions: want 1 to 4096", n);
		goto out;
	}
	if (n > 1 && !c->lookahead) {
		sim_diag_set(d, NULL, 0, 0,
			     "a cable of no length (link.cable_m=0) leaves no look-ahead: a parallel run "
			     "needs every link between two nodes to take time");
		goto out;
	}
	make_units(f, unit);
	for (int i = 0; i < nn; i++)
		next_in[i] = -1;
	for (int i = nn - 1; i >= 0; i--)	/* after the leader (its lowest node) */
		if (unit[i] != i) {
			next_in[i] = next_in[unit[i]];
			next_in[unit[i]] = i;
		}
	for (int i = 0; i < nn; i++) {
		const struct fab_node *nd = &f->nodes[i];
		uint64_t ports = 1;	/* a node weighs at least something */

		for (int q = 1; q <= nd->nports; q++)
			ports += nd->ports[q] != NULL;
		units += unit[i] == i;
		w[unit[i]] += ports;
		part[i] = -1;
	}
	if (unit_levels(f, unit, next_in, level)) {
		sim_diag_set(d, NULL, 0, 0, "out of memory for the cut into partitions");
		goto out;
	}
	for (int u = 0; u < nn; u++)
		if (unit[u] == u)
			left[level[u]] += w[u];
	if (n > units) {
		sim_diag_set(d, NULL, 0, 0,
			     "%u partitions, but the fabric has %u switches to cut it by (each with "
			     "the HCAs on it)", n, units);
		goto out;
	}
	/* grow partitions 0 .. n-2 from the first unit left, each to its share
	 * of every level; n-1 takes the rest */
	uint32_t units_left = units;

	for (uint32_t k = 0; k + 1 < n; k++) {
		uint64_t share[CUT_LEVELS], got[CUT_LEVELS] = { 0 };

		for (int l = 0; l < CUT_LEVELS; l++)
			share[l] = (left[l] + (n - k) - 1) / (n - k);
		memset(gain, 0, (size_t)nn * sizeof(*gain));
		for (;;) {
			int best = -1;
			bool full = true;

			if (units_left <= n - k - 1)
				break;	/* one for each partition to come */
			for (int u = 0; u < nn; u++)
				if (unit[u] == u && part[u] < 0 && got[level[u]] < share[level[u]] &&
				    (best < 0 || gain[u] > gain[best]))
					best = u;
			if (best < 0)
				break;
			units_left--;
			part[best] = (int32_t)k;
			got[level[best]] += w[best];
			/* its links raise its neighbours' gain */
			for (int i = best; i >= 0; i = next_in[i]) {
				for (int q = 1; q <= f->nodes[i].nports; q++) {
					const struct port *pt = f->nodes[i].ports[q];

					if (pt && part[unit[pt->peer->node->idx]] < 0)
						gain[unit[pt->peer->node->idx]]++;
				}
			}
			for (int l = 0; l < CUT_LEVELS; l++)
				full = full && got[l] >= share[l];
			if (full)
				break;
		}
		for (int l = 0; l < CUT_LEVELS; l++)
			left[l] -= got[l];
	}
	for (int i = 0; i < nn; i++)
		if (part[unit[i]] < 0)
			part[unit[i]] = (int32_t)n - 1;
	for (int i = 0; i < nn; i++)
		if (unit[i] == i)
			c->weight[part[i]] += w[i];
	if (refine(f, unit, next_in, w, level, part, c->weight, n)) {
		sim_diag_set(d, NULL, 0, 0, "out of memory for the cut into partitions");
		goto out;
	}
	for (int i = 0; i < nn; i++)
		c->node_part[i] = (uint16_t)part[unit[i]];
	for (uint32_t k = 0; k < n; k++)
		if (!c->weight[k]) {
			sim_diag_set(d, NULL, 0, 0, "%u partitions: partition %u is empty", n, k);
			goto out;
		}
	/* the links between partitions; every component's partition */
	for (int pi = 0; pi < f->nports; pi++) {
		struct port *pt = f->ports[pi];

		pt->cut = c->node_part[pt->node->idx] != c->node_part[pt->peer->node->idx];
		c->cut_links += pt->cut;
	}
	c->cut_links /= 2;
	for (uint32_t k = 0; k < f->eng.ncomps; k++)
		c->comp_part[k] = (uint16_t)n;	/* none of the fabric's: refused */
	for (uint32_t k = 0; k < f->nevery; k++)	/* a driver's, in every partition */
		if (f->every[k] < f->eng.ncomps)
			c->comp_part[f->every[k]] = SIM_PAR_EVERY;
	for (int i = 0; i < nn; i++)
		if (f->nodes[i].hca)
			c->comp_part[f->nodes[i].hca->comp] = c->node_part[i];
	c->ncomps = f->eng.ncomps;
	rc = 0;
out:
	free(unit);
	free(next_in);
	free(w);
	free(gain);
	free(part);
	free(level);
	if (rc)
		fab_cut_free(c);
	return rc;
}

uint32_t fab_cut_owner(void *ctx, uint32_t comp)
{
	const struct fab_cut *c = ctx;
	const struct fab *f = c->f;

	if (comp & SIM_COMP_RANGE) {
		uint32_t i = comp & 0xffffff;

		if ((comp & ~0xffffffu) != (f->port_comp0 & ~0xffffffu) || i >= (uint32_t)f->nports)
			return c->n;
		return c->node_part[f->port_mem[i].node->idx];
	}
	return comp < c->ncomps ? c->comp_part[comp] : c->n;
}

void fab_cut_free(struct fab_cut *c)
{
	if (c->f)
		for (int pi = 0; pi < c->f->nports; pi++)
			c->f->ports[pi]->cut = c->f->p.cut_links && !c->f->ports[pi]->wide;
	free(c->node_part);
	free(c->comp_part);
	free(c->weight);
	memset(c, 0, sizeof(*c));
}
