/* SPDX-License-Identifier: MIT */
/*
 * sm_dor.c - dimension-order routing for meshes and tori, after OpenSM's dor
 * engine (the minhop engine with its choice among shortest paths fixed by
 * dimension, osm_ucast_mgr.c) and the e-cube routing of Dally and Seitz.
 *
 * With coordinates: when every switch's node description ends in 1 to 3
 * numbers, each after a '_', '-' or ',', as the generator writes them
 * ("sw_5", "sw_3_1", "sw_0_2_1"), those are its (x[, y[, z]]). A dimension whose first and last
 * switches are cabled together wraps (a torus ring), the others are mesh
 * lines; every switch-to-switch cable must join two grid neighbours. A
 * packet then corrects x first, then y, then z: each dimension along the
 * shorter way round a ring (ties go the + way), so paths are shortest, and
 * parallel cables to the same neighbour are balanced by load.
 *
 * Without coordinates, or when the descriptions' numbers do not make a grid
 * that the cables follow (names such as "sw2_2", whose last number alone
 * is read, or coordinates that contradict the cabling): OpenSM's
 * definition, which never reads names and takes the dimensions from the
 * port numbers: among the ports on a shortest path, the lowest-numbered
 * one's neighbour, balancing only across parallel cables to it. That is
 * dimension order when port pairs are cabled per dimension (ports 1-2 for
 * x, 3-4 for y, ...), as OpenSM's documentation asks.
 *
 * Deadlock: IBA's credit-based flow control (7.9.4) never drops a packet,
 * so a cycle of full buffers never drains. On a mesh, dimension order never
 * turns from a higher dimension back to a lower one, and within a line it
 * never reverses, so the channel dependency graph is acyclic with one VL. On a torus each ring's
 * wrap-around cable closes a cycle of dependencies: dor alone is NOT
 * deadlock free on a torus with one VL. OpenSM solves that with torus-2QoS
 * (a dateline and two VLs), which is left out here, as are LMC path
 * diversity beyond balancing and hypercube detection.
 */
#include "models/sm/sm_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DOR_MAX_DIMS 3

struct dor {
	struct sm_topo t;
	int ndim;
	int *coord;		/* [switch * 3 + dim] */
	int size[DOR_MAX_DIMS];
	bool wrap[DOR_MAX_DIMS];
	int *grid;		/* coordinates -> switch, -1 */
	/* ports of switch s towards its neighbour in (dim, dir): [s][dim][dir] */
	int *nbr;		/* [((s * 3 + dim) * 2 + dir) * maxports + i] */
	int *nnbr;		/* [(s * 3 + dim) * 2 + dir] */
	int *cand;
};

static void dor_free(struct dor *r)
{
	sm_topo_free(&r->t);
	free(r->coord);
	free(r->grid);
	free(r->nbr);
	free(r->nnbr);
	free(r->cand);
}

/* Trailing "_N" numbers of a description, in order; returns how many (0..3). */
static int parse_coords(const char *desc, int *c)
{
	const char *p = desc + strlen(desc);
	int rev[DOR_MAX_DIMS], k = 0;

	while (k < DOR_MAX_DIMS) {
		const char *end = p;
		long v = 0;

		while (p > desc && isdigit((unsigned char)p[-1]))
			p--;
		if (p == end || end - p > 6)
			break;
		for (const char *q = p; q < end; q++)
			v = v * 10 + (*q - '0');
		rev[k++] = (int)v;
		/* the number must be introduced by a separator */
		if (p == desc || !strchr("_-,", p[-1])) {
			k--;
			break;
		}
		p--;
	}
	for (int i = 0; i < k; i++)
		c[i] = rev[k - 1 - i];
	return k;
}

static int grid_index(const struct dor *r, const int *c)
{
	int g = 0;

	for (int i = 0; i < r->ndim; i++)
		g = g * r->size[i] + c[i];
	return g;
}

/* Which (dim, dir) takes switch a to switch b, or -1: not grid neighbours. */
static int grid_step(const struct dor *r, int a, int b, int *dir)
{
	const int *ca = r->coord + a * 3, *cb = r->coord + b * 3;
	int dim = -1;

	for (int i = 0; i < r->ndim; i++) {
		int diff = cb[i] - ca[i];

		if (!diff)
			continue;
		if (dim >= 0)
			return -1;
		dim = i;
		if (diff == 1 || (r->wrap[i] && diff == -(r->size[i] - 1)))
			*dir = 0;	/* + */
		else if (diff == -1 || (r->wrap[i] && diff == r->size[i] - 1))
			*dir = 1;	/* - */
		else
			return -1;
	}
	return dim;
}

/* Coordinates from the descriptions; 0 when every switch has them. */
static int find_coords(struct dor *r, struct sim_diag *d)
{
	struct sm_topo *t = &r->t;
	struct net *n = t->n;
	long cells = 1;

	r->ndim = 0;
	for (int s = 0; s < t->nsw; s++) {
		int k = parse_coords(n->nodes[t->sw[s]].desc, r->coord + s * 3);

		if (k < 1 || (r->ndim && k != r->ndim))
			return 1;
		r->ndim = k;
	}
	for (int i = 0; i < r->ndim; i++) {
		r->size[i] = 0;
		for (int s = 0; s < t->nsw; s++)
			if (r->coord[s * 3 + i] + 1 > r->size[i])
				r->size[i] = r->coord[s * 3 + i] + 1;
		cells *= r->size[i];
	}
	/* a grid, not a scatter of coordinates */
	if (cells > 4L * t->nsw + 64)
		return 1;
	r->grid = malloc(sizeof(int) * (size_t)cells);
	if (!r->grid)
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	for (long g = 0; g < cells; g++)
		r->grid[g] = -1;
	for (int s = 0; s < t->nsw; s++) {
		int g = grid_index(r, r->coord + s * 3);

		if (r->grid[g] >= 0) {
			const struct net_node *nd = &n->nodes[t->sw[s]];

			return sim_diag_set(d, nd->file, nd->line, 0,
					    "dor: switches \"%s\" and \"%s\" have the same coordinates",
					    n->nodes[t->sw[r->grid[g]]].desc, nd->desc);
		}
		r->grid[g] = s;
	}
	return 0;
}

/* Rings: a dimension wraps when its ends are cabled together (size > 2). */
static void find_wraps(struct dor *r)
{
	struct sm_topo *t = &r->t;

	for (int i = 0; i < r->ndim; i++) {
		r->wrap[i] = false;
		if (r->size[i] <= 2)
			continue;
		for (int s = 0; s < t->nsw && !r->wrap[i]; s++) {
			const struct net_node *nd = &t->n->nodes[t->sw[s]];

			if (r->coord[s * 3 + i] != 0)
				continue;
			for (int p = 1; p <= nd->nports; p++) {
				int v = sm_peer(t, s, p);
				bool same = v >= 0;

				for (int j = 0; j < r->ndim && same; j++)
					same = j == i ? r->coord[v * 3 + j] == r->size[i] - 1 :
						r->coord[v * 3 + j] == r->coord[s * 3 + j];
				if (same) {
					r->wrap[i] = true;
					break;
				}
			}
		}
	}
}

static int find_neighbours(struct dor *r, struct sim_diag *d)
{
	struct sm_topo *t = &r->t;
	int mp = t->maxports;

	for (int s = 0; s < t->nsw; s++) {
		const struct net_node *nd = &t->n->nodes[t->sw[s]];

		for (int k = 0; k < 6; k++)
			r->nnbr[s * 6 + k] = 0;
		for (int p = 1; p <= nd->nports; p++) {
			int v = sm_peer(t, s, p), dir = 0, dim, slot;

			if (v < 0)
				continue;
			dim = grid_step(r, s, v, &dir);
			if (dim < 0)
				return sim_diag_set(d, nd->file, nd->ports[p].line, 0,
						    "dor: the cable \"%s\"[%d] - \"%s\" does not join grid neighbours "
						    "(coordinates from the node descriptions)",
						    nd->desc, p, t->n->nodes[t->sw[v]].desc);
			slot = (s * 3 + dim) * 2 + dir;
			r->nbr[(size_t)slot * mp + r->nnbr[slot]++] = p;
		}
	}
	return 0;
}

/* Ports at switch s towards switch D in dimension order; count (0: none). */
static int dor_candidates(struct dor *r, int s, int D, int *dim_out)
{
	const int *cs = r->coord + s * 3, *cd = r->coord + D * 3;

	for (int i = 0; i < r->ndim; i++) {
		int diff = cd[i] - cs[i], dir, slot;

		if (!diff)
			continue;
		if (r->wrap[i]) {
			int fwd = ((diff % r->size[i]) + r->size[i]) % r->size[i];

			dir = fwd <= r->size[i] - fwd ? 0 : 1;
		} else {
			dir = diff > 0 ? 0 : 1;
		}
		slot = (s * 3 + i) * 2 + dir;
		*dim_out = i;
		memcpy(r->cand, r->nbr + (size_t)slot * r->t.maxports,
		       sizeof(int) * (size_t)r->nnbr[slot]);
		return r->nnbr[slot];
	}
	return 0;
}

static int route_coords(struct dor *r, struct sim_diag *d)
{
	struct sm_topo *t = &r->t;
	struct net *n = t->n;

	for (int D = 0; D < t->nsw; D++) {
		int first = t->ep_first[D], cnt = t->ep_first[D + 1] - first;

		for (int s = 0; s < t->nsw; s++) {
			int dim = 0, k;

			if (s == D)
				continue;
			k = dor_candidates(r, s, D, &dim);
			if (!k)
				return sim_diag_set(d, NULL, 0, 0,
						    "dor: switch \"%s\" has no cable to its neighbour in dimension %c towards \"%s\": not a full mesh or torus",
						    n->nodes[t->sw[s]].desc, "xyz"[dim],
						    n->nodes[t->sw[D]].desc);
			for (int i = 0; i < cnt; i++)
				sm_route_lid(t, s, t->ep_lid[first + i], r->cand, k);
		}
	}
	/* switch LIDs after the CAs' so they cannot skew the balance */
	for (int D = 0; D < t->nsw; D++) {
		net_lid_t lid = n->nodes[t->sw[D]].lid;

		for (int s = 0; s < t->nsw; s++) {
			int dim = 0, k;

			if (s == D)
				continue;
			k = dor_candidates(r, s, D, &dim);
			if (k)
				sm_route_lid(t, s, lid, r->cand, k);
		}
	}
	return 0;
}

/* No coordinates: shortest paths, lowest port's neighbour (OpenSM's dor). */
static void route_ports(struct dor *r, int D, const net_lid_t *lids, int cnt,
			int *dist)
{
	struct sm_topo *t = &r->t;

	sm_bfs(t, D, dist);
	for (int s = 0; s < t->nsw; s++) {
		const struct net_node *nd = &t->n->nodes[t->sw[s]];
		int k = 0, first = -1;

		if (s == D || dist[s] < 0)
			continue;
		for (int p = 1; p <= nd->nports; p++) {
			int v = sm_peer(t, s, p);

			if (v < 0 || dist[v] != dist[s] - 1)
				continue;
			if (first < 0)
				first = v;	/* the lowest port's neighbour */
			if (v == first)
				r->cand[k++] = p;
		}
		for (int i = 0; i < cnt; i++)
			sm_route_lid(t, s, lids[i], r->cand, k);
	}
}

int sm_route_dor(struct net *n, const struct sm_opts *o, struct sim_diag *d)
{
	struct dor r = { 0 };
	size_t ns, np;
	int rc = -1;

	if (sm_topo_init(&r.t, n, o, d))
		return -1;
	if (o && o->roots && *o->roots) {
		dor_free(&r);
		return sim_diag_set(d, NULL, 0, 0, "dor: --roots is for updn");
	}
	ns = (size_t)r.t.nsw + 1;
	np = (size_t)r.t.maxports + 1;
	r.coord = malloc(sizeof(int) * ns * 3);
	r.nbr = malloc(sizeof(int) * ns * 6 * np);
	r.nnbr = malloc(sizeof(int) * ns * 6);
	r.cand = malloc(sizeof(int) * np);
	if (!r.coord || !r.nbr || !r.nnbr || !r.cand) {
		sim_diag_set(d, NULL, 0, 0, "out of memory");
		goto out;
	}
	if (!r.t.nsw) {
		rc = 0;
		goto out;
	}
	/* The coordinates' own errors (duplicates, a cable between switches
	 * that are not grid neighbours) are why the names cannot be used;
	 * routing then goes by port number, as OpenSM's does. */
	struct sim_diag why = { 0 };

	rc = find_coords(&r, &why);
	if (rc < 0 && !r.grid) {	/* out of memory, not the names */
		*d = why;
		goto out;
	}
	if (rc == 0) {
		find_wraps(&r);
		if (find_neighbours(&r, &why) || route_coords(&r, &why))
			rc = -1;
	}
	if (rc < 0) {
		char msg[300];

		sim_diag_format(&why, msg, sizeof(msg));
		sm_note(o, "dor: the switch descriptions do not give a grid the cables follow (%s): "
			"routing by port number, as OpenSM does", msg);
		rc = 1;
	}
	if (rc == 0) {
		char shape[64];
		size_t off = 0;
		bool any_wrap = false, all_wrap = true;

		for (int i = 0; i < r.ndim; i++) {
			off += (size_t)snprintf(shape + off, sizeof(shape) - off, "%s%d",
						i ? "x" : "", r.size[i]);
			any_wrap |= r.wrap[i];
			all_wrap &= r.wrap[i];
		}
		sm_note(o, "dor %dD %s %s (coordinates from node descriptions)%s",
			r.ndim, all_wrap ? "torus" : any_wrap ? "mesh/torus" : "mesh",
			shape, any_wrap ? "; not deadlock free with one VL on the rings" : "");
		rc = 0;
	} else {
		/* OpenSM's port-number dimensions */
		int *dist = r.t.dist;

		for (int D = 0; D < r.t.nsw; D++) {
			int first = r.t.ep_first[D];

			if (r.t.ep_first[D + 1] > first)
				route_ports(&r, D, r.t.ep_lid + first,
					    r.t.ep_first[D + 1] - first, dist);
		}
		for (int D = 0; D < r.t.nsw; D++) {
			net_lid_t lid = n->nodes[r.t.sw[D]].lid;

			route_ports(&r, D, &lid, 1, dist);
		}
		if (!why.msg[0])
			sm_note(o, "dor by port number (no x_y[_z] coordinates in the switch descriptions)");
		rc = 0;
	}
out:
	dor_free(&r);
	return rc;
}
