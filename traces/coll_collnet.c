/* SPDX-License-Identifier: MIT */
/*
 * coll_collnet.c - allreduce in the network: SHARP (NVIDIA's Scalable
 * Hierarchical Aggregation and Reduction Protocol; Graham et al., "Scalable
 * Hierarchical Aggregation Protocol (SHArP): A Hardware Architecture for
 * Efficient Data Reduction", COMHPC 2016), as NCCL's CollNet uses it.
 *
 * The fabric's aggregation manager (models/sm/sm_sharp.c) gives the job a
 * tree of aggregation nodes, one in each switch on the way from the job's
 * leaf switches to a root switch; trace.h holds it (rank_agg, agg_parent).
 * For one allreduce over a communicator the tree is cut to what its members
 * need: the aggregation nodes above some member, from the lowest one that
 * covers them all. Then for every chunk c of the buffer:
 *
 *   up    each member sends its chunk c to the aggregation node of its leaf
 *         switch (TD_REDUCE); an aggregation node that has every child's
 *         chunk c sends the sum to its parent;
 *   down  the root, once it has every child's chunk c, sends the result to
 *         each child (TD_COPY); an aggregation node passes what it gets from
 *         its parent to each of its children.
 *
 * Streaming aggregation (SHARPv2's SAT, for large messages): the chunks
 * follow each other up and down the tree, so with K chunks of S/K bytes
 *
 *	T ~ (K + 2H - 1) (S/K) / B + 2H a
 *
 * with H the tree's height (members at 0), B the link rate and a a hop's
 * latency: every host link carries S once each way, where a ring carries
 * 2(N-1)/N S each way, so the algorithm bandwidth is about 2(N-1)/N times
 * the ring's. A small allreduce (one chunk: SHARP's low-latency mode) takes
 * one trip up the tree and one down, whatever N.
 *
 * Chunks: at least the trace's chunks=, and at most 512 KiB each (NCCL's
 * buffer of NCCL_BUFFSIZE = 4 MiB in NCCL_STEPS = 8 slots, the size of one
 * CollNet step). Buffers: a member has at most 8 chunks in the tree at once
 * (NCCL_STEPS): it sends chunk c after it has the result of chunk c - 8,
 * which also bounds what an aggregation node holds. Left out: the switch's
 * reduction latency beyond its transport's (an aggregation node is an HCA
 * without a host behind it, see docs/sharp.md) and reductions of other
 * data types than bytes. How many streaming allreduces the switches take
 * at once is the replay's (traces/trace_sat.c).
 */
#include "traces/coll.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define COLLNET_WINDOW 8u		/* chunks a member has in the tree: NCCL_STEPS */

static int collnet_err(struct coll_ctx *c, const char *msg)
{
	return sim_diag_set(c->d, c->op->file, c->op->line, 0, "%s", msg);
}

/*
 * The endpoints: members 0..n-1, then the aggregation nodes the members
 * need, in the tree's order. up[] and height[] as coll.h says.
 */
static int collnet_endpoints(struct coll_ctx *c)
{
	const struct trace *t = c->t;
	int32_t na = t->nagg, root;
	int32_t *ep = NULL;		/* aggregation node -> endpoint, -1 unused */
	uint32_t *kids = NULL;		/* used children per aggregation node */
	uint32_t e;

	if (na < 1 || !t->rank_agg || !t->agg_parent)
		return collnet_err(c, "allreduce algo=collnet needs SHARP: an InfiniBand fabric (fabric=ib) whose switches aggregate (the run gives the job a tree when a collective asks for collnet, or with --set ib.sharp=on)");
	if (c->n < 2)
		return 0;	/* nothing to reduce: no steps, as a ring of one */
	ep = malloc((size_t)na * sizeof(*ep));
	kids = calloc((size_t)na, sizeof(*kids));
	if (!ep || !kids)
		goto oom;
	for (int32_t a = 0; a < na; a++)
		ep[a] = -1;
	/* every aggregation node above a member: used; count each one's children */
	for (uint32_t m = 0; m < c->n; m++) {
		int32_t a = t->rank_agg[c->ranks[m]];

		if (a < 0 || a >= na)
			goto bad;
		kids[a]++;
		for (uint32_t hop = 0; ep[a] < 0; hop++) {
			int32_t p = t->agg_parent[a];

			if (hop > (uint32_t)na || p >= na)
				goto bad;
			ep[a] = 0;
			if (p < 0)
				break;
			kids[p]++;
			a = p;
		}
	}
	/* the lowest aggregation node that covers every member: from the
	 * tree's root down while a node has one child and it is another node */
	for (root = 0; root < na && !(ep[root] == 0 && t->agg_parent[root] < 0); root++)
		;
	if (root == na)
		goto bad;
	for (;;) {
		int32_t only = -1, used = 0;

		for (int32_t a = 0; a < na; a++)
			if (ep[a] == 0 && t->agg_parent[a] == root) {
				only = a;
				used++;
			}
		if (used != 1 || kids[root] != 1)
			break;
		ep[root] = -1;	/* a pass-through: above every member */
		root = only;
	}
	for (int32_t a = 0; a < na; a++)
		if (ep[a] == 0)
			c->nx++;
	c->xranks = malloc((size_t)c->nx * sizeof(*c->xranks));
	c->up = malloc(((size_t)c->n + c->nx) * sizeof(*c->up));
	c->height = calloc((size_t)c->n + c->nx, sizeof(*c->height));
	if (!c->xranks || !c->up || !c->height)
		goto oom;
	e = c->n;
	for (int32_t a = 0; a < na; a++)
		if (ep[a] == 0) {
			c->xranks[e - c->n] = t->nranks + a;
			ep[a] = (int32_t)e++;
		}
	for (uint32_t m = 0; m < c->n; m++)
		c->up[m] = (uint32_t)ep[t->rank_agg[c->ranks[m]]];
	for (int32_t a = 0; a < na; a++)
		if (ep[a] >= 0)
			c->up[ep[a]] = a == root ? COLL_NONE : (uint32_t)ep[t->agg_parent[a]];
	/* heights: a node is one above its highest child; the tree has at
	 * most nx levels, so nx passes settle it */
	for (uint32_t pass = 0; pass <= c->nx; pass++)
		for (uint32_t x = 0; x < c->n + c->nx; x++)
			if (c->up[x] != COLL_NONE && c->height[c->up[x]] < c->height[x] + 1)
				c->height[c->up[x]] = c->height[x] + 1;
	free(ep);
	free(kids);
	return 0;
bad:
	free(ep);
	free(kids);
	return collnet_err(c, "internal error: the SHARP tree does not reach every member");
oom:
	free(ep);
	free(kids);
	return collnet_err(c, "out of memory");
}

/* ---- on GPU servers: NCCL's CollNet Direct ---------------------------------- */

static uint32_t tree_height(const struct coll_ctx *c)
{
	uint32_t h = 0;

	for (uint32_t x = 0; x < c->n + c->nx; x++)
		if (c->height[x] > h)
			h = c->height[x];
	return h;
}

/*
 * On GPU servers (coll_ctx.rot) of G >= 2 GPUs each, at least two of them,
 * NCCL's CollNet Direct (src/device/all_reduce.h, runRing's CollNet
 * siblings): the buffer is cut into G slices, and
 *
 *   1. every GPU sends slice j of its buffer to the server's GPU j over
 *      NVLink, which adds it up (a reduce-scatter, all at once);
 *   2. GPU j of every server sends its server's slice j into the SHARP
 *      tree through its own NIC - on a rail-optimised fabric rail j's leaf
 *      switch, and up to the lowest aggregation node that covers rail j's
 *      GPUs - and gets the sum back (the flat form's up and down, per
 *      slice: only the aggregation nodes above slice j's GPUs take part);
 *   3. GPU j sends the result to the server's other GPUs (an all-gather).
 *
 * Each slice is cut into pieces of at most 512 KiB that follow each other
 * through the three steps, GPU j holding at most 8 in the tree at once as
 * in the flat form. Every NIC carries S/G each way, NVLink (G-1)/G S each
 * way: on 8 H100s, 370.8 GB/s of NVLink bounds the algorithm bandwidth
 * at 370.8 x 8/7 / 2 = 212 GB/s, a bus bandwidth near 420 GB/s, above
 * the ring's 370.8.
 * Returns G, or 0 where the flat form applies (no servers, servers of
 * unequal size, one server).
 */
static uint32_t srv_gpus(const struct coll_ctx *c)
{
	uint32_t G;

	if (!c->rot || c->n < 4)
		return 0;
	G = c->rot[1];
	if (G < 2 || c->n % G || c->n / G < 2)
		return 0;
	for (uint32_t i = 0; i < c->n; i++)
		if (c->rot[2 * i + 1] != G || c->rot[2 * i] != i / G * G)
			return 0;
	return G;
}

/* Pieces per slice: at least the trace's chunks, at most 512 KiB each. */
static uint32_t srv_pieces(const struct coll_ctx *c, uint32_t G)
{
	uint64_t p = (c->bytes / G + TRACE_SHARP_CHUNK - 1) / TRACE_SHARP_CHUNK;

	if (p < c->pieces)
		p = c->pieces;
	return p ? (uint32_t)(p > UINT32_MAX / G ? 0 : p) : 1;
}

/*
 * Slice j's part of the tree: used[e] for the endpoints that take part
 * (its GPUs and the aggregation nodes from their leaves up to the lowest
 * one covering them all, *root). Returns the aggregation nodes used.
 */
static uint32_t slice_tree(const struct coll_ctx *c, uint32_t G, uint32_t j, uint8_t *used,
			   uint32_t *cnt, uint32_t *root)
{
	const uint32_t E = c->n + c->nx;
	uint32_t r = COLL_NONE, naggs = 0;

	memset(used, 0, E);
	memset(cnt, 0, E * sizeof(*cnt));
	for (uint32_t m = j; m < c->n; m += G) {
		used[m] = 1;
		for (uint32_t p = c->up[m]; p != COLL_NONE; p = c->up[p]) {
			cnt[p]++;
			if (used[p])
				break;
			used[p] = 1;
		}
	}
	for (uint32_t e = c->n; e < E; e++)
		if (used[e] && c->up[e] == COLL_NONE)
			r = e;
	/* down from the top while a node has one child, an aggregation node */
	while (r != COLL_NONE && cnt[r] == 1) {
		uint32_t only = COLL_NONE;

		for (uint32_t e = c->n; e < E; e++)
			if (used[e] && c->up[e] == r)
				only = e;
		if (only == COLL_NONE)
			break;	/* its one child is a GPU */
		used[r] = 0;
		r = only;
	}
	*root = r;
	for (uint32_t e = c->n; e < E; e++)
		naggs += used[e];
	return naggs;
}

static uint64_t srv_nsteps(const struct coll_ctx *c, uint32_t G)
{
	const uint32_t P = srv_pieces(c, G), S = c->n / G, E = c->n + c->nx;
	uint8_t *used = malloc(E);
	uint32_t *cnt = malloc(E * sizeof(*cnt)), root;
	uint64_t n = 2ull * S * G * (G - 1) * P;	/* reduce-scatter and all-gather */

	if (!used || !cnt) {
		free(used);
		free(cnt);
		return UINT64_MAX;	/* refused as too many: out of memory */
	}
	for (uint32_t j = 0; j < G; j++)	/* up and down each used edge */
		n += 2ull * P * (S + slice_tree(c, G, j, used, cnt, &root) - 1);
	free(used);
	free(cnt);
	return n;
}

static int srv_lower(struct coll_ctx *c, uint32_t G)
{
	const uint32_t E = c->n + c->nx, P = srv_pieces(c, G), W = COLLNET_WINDOW;
	const uint32_t H = tree_height(c), RS = 1, AG = 2 * H + 2;	/* the flat phases + 1 */
	uint32_t *upstep = malloc(E * sizeof(*upstep)), *downstep = malloc(E * sizeof(*downstep));
	uint32_t *win = malloc((size_t)c->n * W * sizeof(*win)), *rs = malloc(G * sizeof(*rs));
	uint32_t *cnt = malloc(E * sizeof(*cnt)), *roots = malloc(G * sizeof(*roots));
	uint8_t *used = malloc((size_t)E * G);
	int rc = -1;

	if (!upstep || !downstep || !win || !rs || !cnt || !roots || !used) {
		collnet_err(c, "out of memory");
		goto out;
	}
	for (uint32_t j = 0; j < G; j++)
		slice_tree(c, G, j, used + (size_t)j * E, cnt, &roots[j]);
	for (uint32_t q = 0; q < P; q++) {
		for (uint32_t j = 0; j < G; j++) {
			const uint8_t *u = used + (size_t)j * E;
			const uint32_t chunk = j * P + q;

			for (uint32_t m = j; m < c->n; m += G) {
				const uint32_t base = m - j;

				/* 1. the server's GPUs add their slice j into GPU j */
				for (uint32_t i = 0; i < G; i++) {
					if (i == j)
						continue;
					coll_dep_reset(c);
					coll_dep_entry(c, base + i);
					rs[i] = coll_emit(c, base + i, m, RS, chunk, 1, TD_REDUCE);
					if (rs[i] == COLL_NONE)
						goto out;
				}
				/* 2. GPU j into the SHARP tree */
				coll_dep_reset(c);
				coll_dep_entry(c, m);
				for (uint32_t i = 0; i < G; i++)
					if (i != j)
						coll_dep(c, rs[i]);
				if (q >= W)	/* a slot of its buffer is free again */
					coll_dep(c, win[m * W + q % W]);
				upstep[m] = coll_emit(c, m, c->up[m], 2, chunk, 1, TD_REDUCE);
				if (upstep[m] == COLL_NONE)
					goto out;
			}
			/* aggregation nodes below the slice's root, children first */
			for (uint32_t k = 1; k <= H; k++)
				for (uint32_t e = c->n; e < E; e++) {
					if (!u[e] || c->height[e] != k || e == roots[j])
						continue;
					coll_dep_reset(c);
					for (uint32_t x = 0; x < E; x++)
						if (u[x] && c->up[x] == e)
							coll_dep(c, upstep[x]);
					upstep[e] = coll_emit(c, e, c->up[e], k + 2, chunk, 1, TD_REDUCE);
					if (upstep[e] == COLL_NONE)
						goto out;
				}
			/* down from the slice's root to its GPUs */
			for (uint32_t k = H + 1; k-- > 1;)
				for (uint32_t a = c->n; a < E; a++) {
					if (!u[a] || c->height[a] != k)
						continue;
					for (uint32_t x = 0; x < E; x++) {
						if (!u[x] || c->up[x] != a)
							continue;
						coll_dep_reset(c);
						if (a == roots[j]) {	/* every child's sum */
							for (uint32_t o = 0; o < E; o++)
								if (u[o] && c->up[o] == a)
									coll_dep(c, upstep[o]);
						} else {
							coll_dep(c, downstep[a]);
						}
						downstep[x] = coll_emit(c, a, x, 2 * H + 2 - k, chunk, 1,
									TD_COPY);
						if (downstep[x] == COLL_NONE)
							goto out;
						if (x < c->n)
							win[x * W + q % W] = downstep[x];
					}
				}
			/* 3. GPU j hands the result to the server's others */
			for (uint32_t m = j; m < c->n; m += G)
				for (uint32_t i = 0; i < G; i++) {
					if (i == j)
						continue;
					coll_dep_reset(c);
					coll_dep(c, downstep[m]);
					if (coll_emit(c, m, m - j + i, AG, chunk, 1, TD_COPY) == COLL_NONE)
						goto out;
				}
		}
	}
	rc = 0;
out:
	free(upstep);
	free(downstep);
	free(win);
	free(rs);
	free(cnt);
	free(roots);
	free(used);
	return rc;
}

static uint32_t collnet_nchunks(const struct coll_ctx *c)
{
	const uint32_t G = srv_gpus(c);
	uint64_t k = (c->bytes + TRACE_SHARP_CHUNK - 1) / TRACE_SHARP_CHUNK;

	if (G)		/* G slices of their pieces */
		return srv_pieces(c, G) * G;
	if (k < c->pieces)
		k = c->pieces;
	if (!k)
		k = 1;
	return k > UINT32_MAX ? 0 : (uint32_t)k;
}

static uint64_t collnet_nsteps(const struct coll_ctx *c)
{
	if (c->n < 2)
		return 0;
	if (srv_gpus(c))
		return srv_nsteps(c, srv_gpus(c));
	/* every endpoint but the root: one transfer up and one down per chunk */
	return 2ull * c->nchunks * (c->n + c->nx - 1);
}

static int collnet_lower(struct coll_ctx *c)
{
	const uint32_t E = c->n + c->nx, K = c->nchunks, W = COLLNET_WINDOW;
	uint32_t H, *order = NULL, *upstep = NULL, *downstep = NULL, *win = NULL;
	uint32_t *koff = NULL, *kid = NULL;	/* children of e: kid[koff[e] .. koff[e + 1]) */
	int rc = -1;

	if (c->n < 2)
		return 0;
	if (srv_gpus(c))
		return srv_lower(c, srv_gpus(c));
	H = tree_height(c);
	koff = calloc((size_t)E + 1, sizeof(*koff));
	kid = malloc((size_t)E * sizeof(*kid));
	order = malloc((size_t)E * sizeof(*order));
	upstep = malloc((size_t)E * sizeof(*upstep));	/* e's transfer up, this chunk */
	downstep = malloc((size_t)E * sizeof(*downstep));	/* the transfer into e, down */
	win = malloc((size_t)c->n * W * sizeof(*win));	/* member's results, last W chunks */
	if (!koff || !kid || !order || !upstep || !downstep || !win) {
		collnet_err(c, "out of memory");
		goto out;
	}
	for (uint32_t e = 0; e < E; e++)
		if (c->up[e] != COLL_NONE)
			koff[c->up[e] + 1]++;
	for (uint32_t e = 0; e < E; e++)
		koff[e + 1] += koff[e];
	for (uint32_t e = 0, *fill = upstep; e < E; e++)	/* upstep: scratch here */
		fill[e] = koff[e];
	for (uint32_t e = 0; e < E; e++)	/* in endpoint order: members first */
		if (c->up[e] != COLL_NONE)
			kid[upstep[c->up[e]]++] = e;
	/* endpoints by height, then index: children before parents */
	for (uint32_t x = 0, k = 0; k <= H; k++)
		for (uint32_t e = 0; e < E; e++)
			if (c->height[e] == k)
				order[x++] = e;
	for (uint32_t q = 0; q < K; q++) {
		/* up: each endpoint but the root, once its children's chunk is in */
		for (uint32_t i = 0; i < E; i++) {
			uint32_t e = order[i];

			upstep[e] = COLL_NONE;
			if (c->up[e] == COLL_NONE)
				continue;
			coll_dep_reset(c);
			if (e < c->n) {
				coll_dep_entry(c, e);
				if (q >= W)	/* a slot of its buffer is free again */
					coll_dep(c, win[e * W + q % W]);
			} else {
				for (uint32_t k = koff[e]; k < koff[e + 1]; k++)
					coll_dep(c, upstep[kid[k]]);
			}
			upstep[e] = coll_emit(c, e, c->up[e], c->height[e] + 1, q, 1, TD_REDUCE);
			if (upstep[e] == COLL_NONE)
				goto out;
		}
		/* down: from the root, each node to its children */
		for (uint32_t i = E; i-- > 0;) {
			uint32_t a = order[i];

			if (a < c->n)
				continue;
			for (uint32_t k = koff[a]; k < koff[a + 1]; k++) {
				uint32_t ch = kid[k];

				coll_dep_reset(c);
				if (c->up[a] == COLL_NONE) {	/* the root: every child's sum */
					for (uint32_t o = koff[a]; o < koff[a + 1]; o++)
						coll_dep(c, upstep[kid[o]]);
				} else {
					coll_dep(c, downstep[a]);
				}
				downstep[ch] = coll_emit(c, a, ch, 2 * H - c->height[a] + 1, q, 1,
							 TD_COPY);
				if (downstep[ch] == COLL_NONE)
					goto out;
				if (ch < c->n)
					win[ch * W + q % W] = downstep[ch];
			}
		}
	}
	rc = 0;
out:
	free(koff);
	free(kid);
	free(order);
	free(upstep);
	free(downstep);
	free(win);
	return rc;
}

static const char *collnet_phase(const struct coll_ctx *c, uint32_t phase)
{
	uint32_t H = tree_height(c);

	if (srv_gpus(c)) {	/* the servers' form: its own phases around the tree's */
		if (phase == 1)
			return "each GPU's slice j -> the server's GPU j over NVLink (reduce)";
		if (phase == 2 * H + 2)
			return "GPU j -> the server's other GPUs over NVLink (result)";
		phase--;
	}
	/* phases 1..H up (a node's height + 1), H+1..2H down */
	if (phase == 1)
		return "member -> its leaf switch's aggregation node (reduce)";
	if (phase <= H)
		return "aggregation node -> its parent (reduce)";
	if (phase == 2 * H)
		return "leaf aggregation node -> member (result)";
	return "aggregation node -> child (result)";
}

static void collnet_describe(const struct coll_ctx *c, FILE *out)
{
	uint32_t H = c->n < 2 ? 0 : tree_height(c);

	fprintf(out,
		"SHARP in-network allreduce (NCCL's CollNet): %" PRIu32 " aggregation nodes in the switches, a tree %" PRIu32
		" high; each of %" PRIu32 " chunks goes up the tree, reduced at every node, and its result comes down.\n"
		"T ~ (K + 2H - 1) (S/K) / B + 2H a: each host link carries S once each way (a ring: 2(N-1)/N S).\n"
		"The aggregation nodes are endpoints %" PRId32 " and up (after the trace's ranks).\n",
		c->nx, H, c->nchunks, c->t->nranks);
}

const struct coll_algo coll_collnet_allreduce = {
	.name = "collnet (SHARP)",
	.coll = TRACE_ALLREDUCE,
	.algo = TRACE_ALGO_COLLNET,
	.pipelines = true,
	.endpoints = collnet_endpoints,
	.nchunks = collnet_nchunks,
	.nsteps = collnet_nsteps,
	.lower = collnet_lower,
	.phase_name = collnet_phase,
	.describe = collnet_describe,
};
