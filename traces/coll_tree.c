/* SPDX-License-Identifier: MIT */
/*
 * coll_tree.c - tree algorithms: NCCL's double binary tree allreduce, and a
 * pipelined binary tree for reduce and broadcast.
 *
 * The binary tree is NCCL's (src/graph/trees.cc, ncclGetBtree): over ranks
 * 0..N-1 with 0 at the root, a rank's parent is found from its lowest set
 * bit, which gives a balanced tree of depth ceil(log2 N) whose leaves are
 * the odd ranks. A single tree wastes half the bandwidth: the leaves (half
 * the ranks) only ever send up, and interior ranks take two children's
 * data. The double binary tree (Sanders, Speck & Traeff 2009, as NCCL 2.4
 * builds it) adds a second tree in which the leaves of the first are the
 * interior nodes - the mirror image (rank r -> N-1-r) when N is even, the
 * tree shifted by one rank when N is odd - and gives each tree half the
 * buffer. Each half is reduced up its tree to the root, which then holds
 * it complete, and broadcast back down; both halves move at once. With
 * `chunks` = P each half is cut into P pieces that flow independently, so
 * a rank passes piece q up (or down) while piece q+1 arrives. An interior
 * rank takes in two children's pieces (S/P bytes) per hop, the root's
 * single child half that; the first piece crosses 2D - 1 such hops (D the
 * depth, ceil(log2 N)), and each further one adds the 2 S/P bytes every
 * rank takes in per piece, up and down:
 *
 *	T ~ 2 D a + (2D - 1) S/(P B) + 2 (P-1)/P S/B
 *
 * log latency, and a bandwidth term that tends to 2 S/B, near the ring's
 * 2 (N-1)/N S/B (docs/collectives.md has measured values). `channels`
 * splits the buffer into independent copies of the whole scheme.
 *
 * Reduce and broadcast use one binary tree rooted at the root (rank order
 * rotated so the root is tree rank 0), pipelined in P pieces the same way:
 * T ~ D a + (2D - 1) S/(P B) + 2 (P-1)/P S/B, an interior rank feeding two
 * children (taking from two, for reduce).
 *
 * Dependencies: a rank sends a piece up after its own entry and after
 * every child's piece has arrived (that is the reduction); the root's
 * broadcast of a piece waits for the whole reduction of it; a rank forwards
 * a piece down once it has arrived from its parent.
 */
#include "traces/coll.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* NCCL's btree over n ranks rooted at 0: r's parent, -1 for the root. */
static int32_t btree_parent(uint32_t n, uint32_t r)
{
	uint32_t bit, up;

	if (!r)
		return -1;
	/* the lowest set bit of r (r < n, so the loop stops at it) */
	for (bit = 1; !(bit & r); bit <<= 1)
		;
	up = (r ^ bit) | (bit << 1);
	if (up >= n)
		up = r ^ bit;
	return (int32_t)up;
}

/* Tree t (0 or 1) of the double binary tree: the parent of rank r. */
int32_t coll_dtree_parent(uint32_t n, uint32_t t, uint32_t r)
{
	int32_t u;

	if (!t)
		return btree_parent(n, r);
	if (n % 2) {		/* odd: the tree shifted by one rank */
		u = btree_parent(n, (r + n - 1) % n);
		return u < 0 ? -1 : (int32_t)(((uint32_t)u + 1) % n);
	}
	u = btree_parent(n, n - 1 - r);	/* even: the mirror image */
	return u < 0 ? -1 : (int32_t)(n - 1 - (uint32_t)u);
}

/*
 * One tree laid out for lowering: parent of each tree node, children
 * (CSR), the phase at which each node sends up (1 for leaves, one more
 * than its latest child), its depth, and the nodes in order of each.
 */
struct tree {
	uint32_t n, root;
	int32_t *parent;
	uint32_t *coff, *child;		/* children of v: child[coff[v] .. coff[v + 1]) */
	uint32_t *up, *depth;
	uint32_t height, maxdepth;	/* the root's up phase count, the deepest node */
	uint32_t *by_up, *by_depth;	/* nodes sorted by up phase / by depth */
};

static void tree_free(struct tree *tr)
{
	free(tr->parent);
	free(tr->coff);
	free(tr->child);
	free(tr->up);
	free(tr->depth);
	free(tr->by_up);
	free(tr->by_depth);
	memset(tr, 0, sizeof(*tr));
}

/* Counting sort of the n nodes by key[] (0..maxkey) into out. */
static void sort_by(const uint32_t *key, uint32_t n, uint32_t maxkey, uint32_t *out,
		    uint32_t *cnt)
{
	memset(cnt, 0, ((size_t)maxkey + 2) * sizeof(*cnt));
	for (uint32_t v = 0; v < n; v++)
		cnt[key[v] + 1]++;
	for (uint32_t k = 0; k <= maxkey; k++)
		cnt[k + 1] += cnt[k];
	for (uint32_t v = 0; v < n; v++)
		out[cnt[key[v]]++] = v;
}

/* Build tree t over n positions. 0 or -1 (out of memory, or not a tree,
 * which would be a bug in the parent functions). */
typedef int32_t (*parent_fn)(uint32_t n, uint32_t t, uint32_t v, const void *ctx);

static int tree_build(struct tree *tr, uint32_t n, parent_fn parent, uint32_t t, const void *ctx)
{
	uint32_t *fill = NULL, *order = NULL, head = 0, tail = 0;
	int rc = -1;

	memset(tr, 0, sizeof(*tr));
	tr->n = n;
	tr->parent = malloc(n * sizeof(*tr->parent));
	tr->coff = calloc((size_t)n + 2, sizeof(*tr->coff));
	tr->child = malloc(n * sizeof(*tr->child));
	tr->up = calloc(n, sizeof(*tr->up));
	tr->depth = calloc(n, sizeof(*tr->depth));
	tr->by_up = malloc(n * sizeof(*tr->by_up));
	tr->by_depth = malloc(n * sizeof(*tr->by_depth));
	fill = calloc((size_t)n + 2, sizeof(*fill));
	order = malloc(n * sizeof(*order));
	if (!tr->parent || !tr->coff || !tr->child || !tr->up || !tr->depth || !tr->by_up ||
	    !tr->by_depth || !fill || !order)
		goto out;
	tr->root = n;
	for (uint32_t v = 0; v < n; v++) {
		tr->parent[v] = parent(n, t, v, ctx);
		if (tr->parent[v] < 0) {
			if (tr->root != n)
				goto out;	/* two roots */
			tr->root = v;
		} else {
			if ((uint32_t)tr->parent[v] >= n || (uint32_t)tr->parent[v] == v)
				goto out;
			tr->coff[tr->parent[v] + 1]++;
		}
	}
	if (tr->root == n)
		goto out;
	for (uint32_t v = 0; v < n; v++)
		tr->coff[v + 1] += tr->coff[v];
	for (uint32_t v = 0; v < n; v++)
		if (tr->parent[v] >= 0) {
			uint32_t u = (uint32_t)tr->parent[v];

			tr->child[tr->coff[u] + fill[u]++] = v;
		}
	/* breadth first from the root: depths, and an order in which every
	 * node comes after its parent (reversed: children before parents) */
	order[tail++] = tr->root;
	while (head < tail) {
		uint32_t u = order[head++];

		for (uint32_t k = tr->coff[u]; k < tr->coff[u + 1]; k++) {
			uint32_t v = tr->child[k];

			tr->depth[v] = tr->depth[u] + 1;
			if (tr->depth[v] > tr->maxdepth)
				tr->maxdepth = tr->depth[v];
			order[tail++] = v;
		}
	}
	if (tail != n)
		goto out;	/* not connected: a cycle among the others */
	for (uint32_t k = n; k-- > 0;) {
		uint32_t v = order[k], up = 1;

		for (uint32_t j = tr->coff[v]; j < tr->coff[v + 1]; j++)
			if (tr->up[tr->child[j]] + 1 > up)
				up = tr->up[tr->child[j]] + 1;
		tr->up[v] = up;
	}
	/* the root does not send up: its children's phases end the reduction */
	tr->height = tr->up[tr->root] - 1;
	tr->up[tr->root] = 0;
	sort_by(tr->up, n, tr->height, tr->by_up, fill);
	sort_by(tr->depth, n, tr->maxdepth, tr->by_depth, fill);
	rc = 0;
out:
	free(fill);
	free(order);
	if (rc)
		tree_free(tr);
	return rc;
}

/* Single trees (reduce, broadcast): NCCL's btree on positions, position
 * v being member (root + v) mod n. */
static int32_t rooted_parent(uint32_t n, uint32_t t, uint32_t v, const void *ctx)
{
	(void)t;
	(void)ctx;
	return btree_parent(n, v);
}

/* The double binary tree over all positions. */
static int32_t flat_parent(uint32_t n, uint32_t t, uint32_t v, const void *ctx)
{
	(void)ctx;
	return coll_dtree_parent(n, t, v);
}

/*
 * On GPU servers (coll_ctx.rot: runs of positions that share an NVLink
 * domain), NCCL's tree: within a server a chain, each GPU's parent the
 * one before it, the first (the chain's head) under the double binary
 * tree of the servers' heads (src/graph/trees.cc, connectTrees in
 * src/graph/connect.cc: "intra-node chain, inter-node tree"). Channel h
 * rotates every chain by h (coll_ring_member), so each channel's heads -
 * the GPUs whose NICs carry it between servers - are on a rail of its
 * own, as NCCL gives each channel its own NIC.
 */
struct runs {
	const uint32_t *rot;	/* coll_ctx.rot */
	uint32_t *of, *start;	/* per position its run, per run its first position */
	uint32_t n;		/* runs */
};

static int32_t server_parent(uint32_t n, uint32_t t, uint32_t v, const void *ctx)
{
	const struct runs *r = ctx;
	int32_t u;

	(void)n;
	if (v > r->rot[2 * v])
		return (int32_t)v - 1;		/* up the chain */
	u = coll_dtree_parent(r->n, t, r->of[v]);	/* a head: the servers' tree */
	return u < 0 ? -1 : (int32_t)r->start[u];
}

static void runs_free(struct runs *r)
{
	free(r->of);
	free(r->start);
	memset(r, 0, sizeof(*r));
}

/* The runs of c, or none (r->rot NULL: the flat tree). 0 or -1. */
static int runs_make(const struct coll_ctx *c, struct runs *r)
{
	memset(r, 0, sizeof(*r));
	if (!c->rot)
		return 0;
	r->rot = c->rot;
	r->of = malloc(c->n * sizeof(*r->of));
	r->start = malloc(c->n * sizeof(*r->start));
	if (!r->of || !r->start) {
		runs_free(r);
		return -1;
	}
	for (uint32_t v = 0; v < c->n; v++) {
		if (v == c->rot[2 * v])
			r->start[r->n++] = v;
		r->of[v] = r->n - 1;
	}
	return 0;
}

/* Tree t of the allreduce over c's members (positions; coll_ring_member
 * maps them to members per channel). */
static int dtree_build(const struct coll_ctx *c, struct tree *tr, uint32_t t)
{
	struct runs r;
	int rc;

	if (runs_make(c, &r))
		return -1;
	rc = tree_build(tr, c->n, r.rot ? server_parent : flat_parent, t, &r);
	runs_free(&r);
	return rc;
}

static int tree_err(struct coll_ctx *c)
{
	return sim_diag_set(c->d, c->op->file, c->op->line, 0,
			    "out of memory building the %s trees over %" PRIu32 " ranks",
			    trace_coll_names[c->op->coll], c->n);
}

/* ---- allreduce: the double binary tree ---------------------------------------- */

static uint32_t dtree_nchunks(const struct coll_ctx *c)
{
	uint64_t k = (uint64_t)c->channels * 2 * c->pieces;

	return k > UINT32_MAX / 2 ? 0 : (uint32_t)k;
}

static uint64_t dtree_nsteps(const struct coll_ctx *c)
{
	/* each tree has N-1 edges, used once up and once down per flow */
	return 2ull * (c->n - 1) * 2 * c->channels * c->pieces;
}

/* A connection's slots (NCCL_STEPS): how far a sender's pieces run ahead
 * of its receiver's */
#define TREE_WINDOW 8u

static int dtree_lower(struct coll_ctx *c)
{
	const uint32_t N = c->n, P = c->pieces, Ch = c->channels;
	const uint32_t F = 2 * Ch * P;	/* flows: (channel, tree, piece) */
	struct tree tr[2];
	uint32_t *upx = NULL, *downx = NULL, maxup, maxdown;
	int rc = -1;

	if (N < 2)
		return 0;
	if (dtree_build(c, &tr[0], 0))
		return tree_err(c);
	if (dtree_build(c, &tr[1], 1)) {
		tree_free(&tr[0]);
		return tree_err(c);
	}
	/* step index of (flow, node) going up / coming down */
	upx = malloc((size_t)F * N * sizeof(*upx));
	downx = malloc((size_t)F * N * sizeof(*downx));
	if (!upx || !downx) {
		tree_err(c);
		goto out;
	}
	maxup = tr[0].height > tr[1].height ? tr[0].height : tr[1].height;
	maxdown = tr[0].maxdepth > tr[1].maxdepth ? tr[0].maxdepth : tr[1].maxdepth;
	/*
	 * Piece by piece (every channel's and tree's piece q, then q + 1);
	 * within a piece, up phase by phase, so that a node's children (lower
	 * phases) are in the program first - both trees use the same phase
	 * numbers: they run side by side - then down depth by depth, after
	 * the reduction (phases maxup + depth). A piece also waits for a slot
	 * at its receiver (NCCL's FIFO of NCCL_STEPS per connection): for the
	 * receiver to have passed on the piece TREE_WINDOW before it, up (or,
	 * at the root, down to this sender) or down to its first child. Without
	 * it every leaf's pieces were ready at once and a GPU's port sent all
	 * of them before anything it had to pass on: every GPU is a leaf of one
	 * tree and inside the other.
	 */
	for (uint32_t q = 0; q < P; q++) {
		for (uint32_t ph = 1; ph <= maxup; ph++) {
			for (uint32_t ht = 0; ht < 2 * Ch; ht++) {
				const struct tree *t = &tr[ht % 2];
				const uint32_t h = ht / 2, f = ht * P + q;	/* (h 2 + tree) P + q */

				for (uint32_t k = 0; k < N; k++) {
					uint32_t v = t->by_up[k], u;

					if (t->up[v] != ph)
						continue;
					u = (uint32_t)t->parent[v];
					coll_dep_reset(c);
					coll_dep_entry(c, coll_ring_member(c, h, v));
					for (uint32_t j = t->coff[v]; j < t->coff[v + 1]; j++)
						coll_dep(c, upx[(size_t)f * N + t->child[j]]);
					if (q >= TREE_WINDOW)
						coll_dep(c, u == t->root ?
							    downx[(size_t)(f - TREE_WINDOW) * N + v] :
							    upx[(size_t)(f - TREE_WINDOW) * N + u]);
					upx[(size_t)f * N + v] =
						coll_emit(c, coll_ring_member(c, h, v),
							  coll_ring_member(c, h, u), ph, f, 1, TD_REDUCE);
					if (upx[(size_t)f * N + v] == COLL_NONE)
						goto out;
				}
			}
		}
		for (uint32_t dep = 1; dep <= maxdown; dep++) {
			for (uint32_t ht = 0; ht < 2 * Ch; ht++) {
				const struct tree *t = &tr[ht % 2];
				const uint32_t h = ht / 2, f = ht * P + q;

				for (uint32_t k = 0; k < N; k++) {
					uint32_t v = t->by_depth[k], u;

					if (t->depth[v] != dep)
						continue;
					u = (uint32_t)t->parent[v];
					coll_dep_reset(c);
					if (u == t->root) {
						/* the root's piece is complete once all children's arrived */
						coll_dep_entry(c, coll_ring_member(c, h, u));
						for (uint32_t j = t->coff[u]; j < t->coff[u + 1]; j++)
							coll_dep(c, upx[(size_t)f * N + t->child[j]]);
					} else {
						coll_dep(c, downx[(size_t)f * N + u]);
					}
					if (q >= TREE_WINDOW && t->coff[v] < t->coff[v + 1])
						coll_dep(c, downx[(size_t)(f - TREE_WINDOW) * N +
								  t->child[t->coff[v]]]);
					downx[(size_t)f * N + v] =
						coll_emit(c, coll_ring_member(c, h, u),
							  coll_ring_member(c, h, v), maxup + dep, f, 1,
							  TD_COPY);
					if (downx[(size_t)f * N + v] == COLL_NONE)
						goto out;
				}
			}
		}
	}
	rc = 0;
out:
	free(upx);
	free(downx);
	tree_free(&tr[0]);
	tree_free(&tr[1]);
	return rc;
}

/* The phase where the reduction ends: the taller tree's height. */
static uint32_t dtree_maxup(const struct coll_ctx *c, uint32_t *depth)
{
	struct tree tr[2];
	uint32_t h = 0;

	*depth = 0;
	for (uint32_t t = 0; t < 2 && c->n > 1; t++) {
		if (dtree_build(c, &tr[t], t))
			return 0;
		if (tr[t].height > h)
			h = tr[t].height;
		if (tr[t].maxdepth > *depth)
			*depth = tr[t].maxdepth;
		tree_free(&tr[t]);
	}
	return h;
}

static const char *dtree_phase(const struct coll_ctx *c, uint32_t phase)
{
	uint32_t depth;

	return phase <= dtree_maxup(c, &depth) ? "reduce up both trees" : "broadcast down both trees";
}

static void dtree_describe(const struct coll_ctx *c, FILE *out)
{
	uint32_t depth, up = dtree_maxup(c, &depth);
	char b[32];

	fprintf(out, "closed form: two binary trees of depth D = %" PRIu32 " (log2 N ~ %" PRIu32
		"), each reducing half the buffer up (%" PRIu32 " phases) and broadcasting it down (%"
		PRIu32 " phases), in %" PRIu32 " pieces of S/(2 Ch P) = %s per tree\n", depth,
		coll_clog2(c->n), up, depth, c->channels * c->pieces,
		coll_fmt_bytes(coll_run_bytes(c->bytes, c->nchunks, 0, 1), b, sizeof(b)));
	fprintf(out, "  T ~ 2 D a + (2D - 1) S/(P B) + 2 (P-1)/P S/B: the first piece crosses 2D-1 hops, each further piece adds 2 S/P per rank\n");
}

const struct coll_algo coll_tree_allreduce = {
	.name = "double binary tree",
	.coll = TRACE_ALLREDUCE,
	.algo = TRACE_ALGO_TREE,
	.pipelines = true,
	.multichannel = true,
	.nchunks = dtree_nchunks,
	.nsteps = dtree_nsteps,
	.lower = dtree_lower,
	.phase_name = dtree_phase,
	.describe = dtree_describe,
};

/* ---- reduce and broadcast: one tree at the root --------------------------------- */

static uint32_t stree_nchunks(const struct coll_ctx *c)
{
	uint64_t k = (uint64_t)c->channels * c->pieces;

	return k > UINT32_MAX / 2 ? 0 : (uint32_t)k;
}

static uint64_t stree_nsteps(const struct coll_ctx *c)
{
	return (uint64_t)(c->n - 1) * c->channels * c->pieces;
}

static int stree_lower(struct coll_ctx *c)
{
	const uint32_t N = c->n, F = c->channels * c->pieces;
	const bool bcast = c->op->coll == TRACE_BROADCAST;
	struct tree t;
	uint32_t *x = NULL;
	int rc = -1;

	if (N < 2)
		return 0;
	if (tree_build(&t, N, rooted_parent, 0, NULL))
		return tree_err(c);
	x = malloc((size_t)F * N * sizeof(*x));
	if (!x) {
		tree_err(c);
		goto out;
	}
#define MEMBER(v) ((c->root + (v)) % N)
	if (!bcast) {
		for (uint32_t ph = 1; ph <= t.height; ph++)
			for (uint32_t f = 0; f < F; f++)
				for (uint32_t k = 0; k < N; k++) {
					uint32_t v = t.by_up[k];

					if (t.up[v] != ph)
						continue;
					coll_dep_reset(c);
					coll_dep_entry(c, MEMBER(v));
					for (uint32_t j = t.coff[v]; j < t.coff[v + 1]; j++)
						coll_dep(c, x[(size_t)f * N + t.child[j]]);
					x[(size_t)f * N + v] = coll_emit(c, MEMBER(v),
									 MEMBER((uint32_t)t.parent[v]),
									 ph, f, 1, TD_REDUCE);
					if (x[(size_t)f * N + v] == COLL_NONE)
						goto out;
				}
	} else {
		for (uint32_t dep = 1; dep <= t.maxdepth; dep++)
			for (uint32_t f = 0; f < F; f++)
				for (uint32_t k = 0; k < N; k++) {
					uint32_t v = t.by_depth[k], u;

					if (t.depth[v] != dep)
						continue;
					u = (uint32_t)t.parent[v];
					coll_dep_reset(c);
					coll_dep_entry(c, MEMBER(u));
					if (u != t.root)
						coll_dep(c, x[(size_t)f * N + u]);
					x[(size_t)f * N + v] = coll_emit(c, MEMBER(u), MEMBER(v), dep, f, 1,
									 TD_COPY);
					if (x[(size_t)f * N + v] == COLL_NONE)
						goto out;
				}
	}
#undef MEMBER
	rc = 0;
out:
	free(x);
	tree_free(&t);
	return rc;
}

static const char *stree_phase(const struct coll_ctx *c, uint32_t phase)
{
	(void)phase;
	return c->op->coll == TRACE_BROADCAST ? "down the tree" : "up the tree";
}

static void stree_describe(const struct coll_ctx *c, FILE *out)
{
	struct tree t;
	char b[32];
	uint32_t depth = 0;

	if (c->n > 1 && !tree_build(&t, c->n, rooted_parent, 0, NULL)) {
		depth = t.maxdepth;
		tree_free(&t);
	}
	fprintf(out, "closed form: a binary tree of depth %" PRIu32 " %s root rank %" PRId32
		", %" PRIu32 " pieces of S/(Ch P) = %s pipelined through it\n", depth,
		c->op->coll == TRACE_BROADCAST ? "from" : "to", c->ranks[c->root],
		c->channels * c->pieces,
		coll_fmt_bytes(coll_run_bytes(c->bytes, c->nchunks, 0, 1), b, sizeof(b)));
	fprintf(out, "  T ~ D a + (2D - 1) S/(P B) + 2 (P-1)/P S/B: an interior rank passes each piece to (or takes it from) two children\n");
}

const struct coll_algo coll_tree_reduce = {
	.name = "binary tree",
	.coll = TRACE_REDUCE,
	.algo = TRACE_ALGO_TREE,
	.dflt = true,
	.pipelines = true,
	.multichannel = true,
	.nchunks = stree_nchunks,
	.nsteps = stree_nsteps,
	.lower = stree_lower,
	.phase_name = stree_phase,
	.describe = stree_describe,
};

const struct coll_algo coll_tree_broadcast = {
	.name = "binary tree",
	.coll = TRACE_BROADCAST,
	.algo = TRACE_ALGO_TREE,
	.dflt = true,
	.pipelines = true,
	.multichannel = true,
	.nchunks = stree_nchunks,
	.nsteps = stree_nsteps,
	.lower = stree_lower,
	.phase_name = stree_phase,
	.describe = stree_describe,
};
