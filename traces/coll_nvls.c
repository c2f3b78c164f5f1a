/* SPDX-License-Identifier: MIT */
/*
 * coll_nvls.c - NCCL's NVLS allreduce: NVLink SHARP, the reduction done by
 * the NVSwitches of one NVLink domain (third-generation NVSwitch and later:
 * DGX H100 on, DGX A100 off - server.nvls_efficiency).
 *
 * A GPU reads a multimem address and the switch returns the sum of that
 * address on every GPU of the group (multimem.ld_reduce); it writes one
 * and the switch stores it on every GPU (multimem.st). NCCL's NVLS
 * allreduce (src/device/all_reduce.h) cuts each channel's share of the
 * buffer among H of the G GPUs (all, up to 32), its "heads": head h pulls
 * the sum of its slice from the switch and writes it back, once, for the
 * switch to copy to all G. For an S-byte allreduce each GPU's NVLink port
 * moves S out (its data, read for every head) and S/H more if it is a
 * head (its slice's store), and as much in: (G+1)/G S each way on a DGX,
 * where a ring moves 2(G-1)/G S - and the switch, not the GPUs, does the
 * adding.
 *
 * The steps: the NVSwitches are two endpoints of their own - as they
 * reduce and as they copy (trace_nvs_endpoint) - to and from which data
 * moves over the GPUs' NVLink ports only (srv_nvs_send, srv_nvs_recv:
 * NVLS's share of the port's rate, half a transfer's latency each way).
 * For each channel, head and piece of S / (channels G P) bytes:
 *   1. every member -> reducing switch     (the switch adds)
 *   2. reducing switch -> head             (the sum: ld_reduce's answer)
 *   3. head -> copying switch              (st)
 *   4. copying switch -> every member      (the multicast; the head's own
 *                                           copy comes back to it too)
 * The head drives its slice: its ld_reduce pulls every member's piece (so
 * a member's piece leaves when its head asks), and it asks for piece p + 1
 * once it has stored piece p - one piece in flight per channel and head,
 * each channel's G heads and the channels side by side keeping every
 * port busy both ways (across servers, NVLS_TREE_WINDOW pieces, each
 * pulled once the sum of the one before has come: the head's ld_reduce
 * is one warp's loop). The first pieces wait for the members' entries.
 * Defaults as NCCL's: nvlsChannels channels (16 on
 * Hopper, 24 on Blackwell: src/transport/nvls.cc), pieces of its NVLS
 * chunk - 128 KiB, 64 KiB below 1 GiB, 32 below 64 MiB, 16 below 8 MiB
 * (src/enqueue.cc).
 *
 * Across NVLink domains (servers) this is NCCL's NVLSTree: the heads of
 * one index, one per domain, form NCCL's double binary tree (tree 0 for
 * even channels, 1 for odd); a head adds its children's sums to its own
 * and sends the result up (phase 3), the root's total comes back down
 * (phase 4), and every head stores the total into its own domain. The
 * heads' sends cross the fabric from their own NICs (the heads of one
 * index sit on one rail). Every domain must hold the same number of the
 * communicator's GPUs.
 *
 * Left out: NVLS for allgather
 * and reducescatter, the scatter and gather copies between the user's
 * buffer and NCCL's (local, no NVLink traffic), and multimem's datatype
 * limits (NCCL reduces fp32 and fp64 sums this way, not products).
 */
#include "traces/coll.h"
#include "traces/trace_fmt.h"

#include <inttypes.h>
#include <stdlib.h>

/*
 * Pieces a head has in flight: one inside a domain (its ld_reduce, then
 * its store; the channels and heads side by side fill the ports), NCCL's
 * NCCL_STEPS (8) buffer slots per connection across servers, where a
 * piece goes up and down the tree before its store.
 */
#define NVLS_TREE_WINDOW 8

/* Heads per domain: at most NCCL_MAX_NVLS_ARITY (32, src/include/device.h;
 * the NVLS graph search's maxChannels, src/graph/search.cc) */
#define NVLS_MAX_HEADS 32

static uint32_t nvls_heads(uint32_t G)
{
	return G < NVLS_MAX_HEADS ? G : NVLS_MAX_HEADS;
}

static int nvls_err(struct coll_ctx *c, const char *msg)
{
	return sim_diag_set(c->d, c->op->file, c->op->line, 0, "%s", msg);
}

/*
 * The algorithm's tables (coll_ctx.tab), kept for gen: tab[d G + j] is the
 * member that is GPU j of domain d (in the communicator's order); then,
 * for each of the two trees (t = channel parity), 5 D entries: the
 * parent of each domain's head (COLL_NONE at the root), each domain's
 * position in the tree's order (children before parents: the root last),
 * the domain at each position, and each domain's two children (COLL_NONE
 * when fewer).
 */
enum { NV_PAR, NV_POS, NV_ORDER, NV_KID, NV_TREE = 5 };

static inline const uint32_t *nv_tree(const struct coll_ctx *c, uint32_t D, uint32_t t,
				      uint32_t what)
{
	return c->tab + c->n + ((size_t)t * NV_TREE + what) * D;
}

/* NCCL's double binary tree between the domains' heads: tree 0 for even
 * channels, 1 for odd (src/graph/connect.cc). */
static void nv_trees(struct coll_ctx *c, uint32_t D)
{
	for (uint32_t t = 0; t < 2; t++) {
		uint32_t *par = c->tab + c->n + (size_t)t * NV_TREE * D, *pos = par + D,
			 *order = pos + D, *kid = order + D, x = 0;

		for (uint32_t d = 0; d < D; d++) {
			int32_t q = D > 1 ? coll_dtree_parent(D, t, d) : -1;

			par[d] = q < 0 ? COLL_NONE : (uint32_t)q;
			kid[2 * d] = kid[2 * d + 1] = COLL_NONE;
			pos[d] = 0;	/* children not yet placed */
		}
		for (uint32_t d = 0; d < D; d++)
			if (par[d] != COLL_NONE)
				kid[2 * par[d] + (kid[2 * par[d]] != COLL_NONE)] = d;
		for (uint32_t d = 0; d < D; d++)
			if (kid[2 * d] == COLL_NONE)
				order[x++] = d;
		/* a parent follows its last child; pos[] counts the children
		 * placed until it is the position */
		for (uint32_t i = 0; i < x; i++) {
			const uint32_t q = par[order[i]];

			if (q != COLL_NONE &&
			    ++pos[q] == 1u + (kid[2 * q + 1] != COLL_NONE))
				order[x++] = q;
		}
		for (uint32_t i = 0; i < D; i++)
			pos[order[i]] = i;
	}
}

/*
 * The endpoints: the reducing and copying NVSwitches of each NVLink domain
 * the members span (xranks 2d, 2d + 1 for domain d, in order of first
 * appearance), every domain with the same G members; and the tables.
 */
static int nvls_endpoints(struct coll_ctx *c)
{
	const struct trace *t = c->t;
	uint32_t D = 0, G, *fill = NULL;
	int32_t *dom = NULL;	/* per domain index: its rank_group */

	if (!t->rank_group || !t->nnvs)
		return nvls_err(c, "allreduce algo=nvls is NVLink SHARP, a reduction in the NVSwitches of a GPU server: this run has no GPU servers (a topology with `# ibfab: server=dgx-h100`, or --set server.preset=dgx-h100)");
	dom = malloc((size_t)c->n * sizeof(*dom));
	fill = calloc(c->n, sizeof(*fill));
	if (!dom || !fill)
		goto oom;
	for (uint32_t i = 0; i < c->n; i++) {
		int32_t g = t->rank_group[c->ranks[i]];
		uint32_t d;

		if (g < 0) {
			free(dom);
			free(fill);
			return sim_diag_set(c->d, c->op->file, c->op->line, 0,
					    "allreduce algo=nvls runs on GPU servers: rank %" PRId32 " is in none",
					    c->ranks[i]);
		}
		for (d = 0; d < D && dom[d] != g; d++)
			;
		if (d == D)
			dom[D++] = g;
		fill[d]++;
	}
	G = c->n / D;
	for (uint32_t d = 0; d < D; d++)
		if (fill[d] != G) {
			int32_t g0 = dom[0], g1 = dom[d];

			free(dom);
			free(fill);
			return sim_diag_set(c->d, c->op->file, c->op->line, 0,
					    "allreduce algo=nvls needs as many ranks on every server: NVLink domains %" PRId32 " and %" PRId32 " hold different numbers of them",
					    g0, g1);
		}
	c->xranks = malloc(2 * (size_t)D * sizeof(*c->xranks));
	c->ntab = c->n + 2 * NV_TREE * D;
	c->tab = malloc(c->ntab * sizeof(*c->tab));
	if (!c->xranks || !c->tab)
		goto oom;
	for (uint32_t d = 0; d < D; d++) {
		c->xranks[2 * d] = trace_nvs_endpoint(t, dom[d]);	/* ld_reduce */
		c->xranks[2 * d + 1] = c->xranks[2 * d] + 1;		/* st */
		fill[d] = 0;
	}
	c->nx = 2 * D;
	for (uint32_t i = 0; i < c->n; i++) {
		uint32_t d;

		for (d = 0; dom[d] != t->rank_group[c->ranks[i]]; d++)
			;
		c->tab[d * G + fill[d]++] = i;
	}
	nv_trees(c, D);
	free(dom);
	free(fill);
	/* NCCL's defaults: nvlsChannels CTAs, its NVLS (NVLSTree) chunk */
	if (!c->op->channels)
		c->channels = t->tune.arch >= 3 ? 24 : 16;
	if (!c->op->chunks) {
		uint64_t chunk = D == 1 ? 128u << 10 : D < 4 ? 128u << 10 : 64u << 10;
		uint64_t share = c->bytes / ((uint64_t)c->channels * nvls_heads(G)), p;

		if (D == 1)
			chunk = c->bytes >= (1ull << 30) ? chunk : c->bytes >= (64ull << 20) ? 64u << 10 :
				c->bytes >= (8ull << 20) ? 32u << 10 : 16u << 10;
		else if (c->bytes < (8ull << 20))
			chunk = 32u << 10;
		else if (c->bytes < (64ull << 20) && chunk > (64u << 10))
			chunk = 64u << 10;
		p = (share + chunk - 1) / chunk;
		c->pieces = p < 1 ? 1 : p > TRACE_MAX_CHUNKS ? TRACE_MAX_CHUNKS : (uint32_t)p;
	}
	return 0;
oom:
	free(dom);
	free(fill);
	return nvls_err(c, "out of memory");
}

/* D domains of G GPUs each */
static uint32_t nvls_domains(const struct coll_ctx *c)
{
	return c->nx / 2;
}

/* K = channels x heads x pieces; chunk (h_ch H + head) P + piece */
static uint32_t nvls_nchunks(const struct coll_ctx *c)
{
	uint64_t k = (uint64_t)c->channels * nvls_heads(c->n / nvls_domains(c)) * c->pieces;

	return k > UINT32_MAX ? 0 : (uint32_t)k;
}

/*
 * The steps come in blocks, one per (piece p, channel h, head j) in that
 * order - pieces outermost, so that a lazy replay makes the steps of all
 * channels side by side - and inside a block of 2 D (G + 1) + 2 (D - 1):
 *   D (G + 1)  each domain d's G reads into its switch (1), then the sum
 *              to its head (2)
 *   D - 1      the heads' sends up the tree (3), children before parents
 *   D - 1      the total down the tree (4), parents before children
 *   D (G + 1)  each domain's store (5), then the multicast to its G GPUs
 *              (6), the root's domain first
 */
static uint64_t nvls_block(const struct coll_ctx *c)
{
	const uint64_t D = nvls_domains(c), G = c->n / D;

	return D * (2 * G + 2) + 2 * (D - 1);
}

static uint64_t nvls_nsteps(const struct coll_ctx *c)
{
	if (c->n < 2)
		return 0;
	return (uint64_t)c->nchunks * nvls_block(c);
}

/* Pieces a head has in flight (see NVLS_TREE_WINDOW) */
static uint32_t nvls_window(const struct coll_ctx *c)
{
	return nvls_domains(c) > 1 ? NVLS_TREE_WINDOW : 1;
}

/* Offsets in a block: domain d's sum, head d's send up (not the root's),
 * its total from its parent (not the root's), its store. */
static inline uint64_t off_sum(uint32_t G, uint32_t d)
{
	return (uint64_t)d * (G + 1) + G;
}

static inline uint64_t off_up(uint32_t D, uint32_t G, const uint32_t *pos, uint32_t d)
{
	return (uint64_t)D * (G + 1) + pos[d];
}

static inline uint64_t off_down(uint32_t D, uint32_t G, const uint32_t *pos, uint32_t d)
{
	return (uint64_t)D * (G + 1) + (D - 1) + (D - 2 - pos[d]);
}

static inline uint64_t off_store(uint32_t D, uint32_t G, const uint32_t *pos, uint32_t d)
{
	return (uint64_t)D * (G + 1) + 2 * (D - 1) + (uint64_t)(D - 1 - pos[d]) * (G + 1);
}

/* The steps after which domain d's head holds the whole sum: the root's
 * own sum and its children's sends up; anyone else's copy from its parent. */
static void dep_total(struct coll_gstep *g, uint64_t base, uint32_t D, uint32_t G,
		      const uint32_t *tr, uint32_t d)
{
	const uint32_t *par = tr + NV_PAR * D, *pos = tr + NV_POS * D, *kid = tr + NV_KID * D;

	if (par[d] != COLL_NONE) {
		g->deps[g->ndeps++] = base + off_down(D, G, pos, d);
		return;
	}
	g->deps[g->ndeps++] = base + off_sum(G, d);
	for (uint32_t x = 0; x < 2; x++)
		if (kid[2 * d + x] != COLL_NONE)
			g->deps[g->ndeps++] = base + off_up(D, G, pos, kid[2 * d + x]);
}

static void nvls_gen(const struct coll_ctx *c, uint64_t k, struct coll_gstep *g)
{
	const uint32_t D = nvls_domains(c), G = c->n / D, H = nvls_heads(G), C = c->channels;
	const uint64_t blk = nvls_block(c), b = k / blk, base = k - k % blk;
	const uint32_t j = (uint32_t)(b % H), h = (uint32_t)(b / H % C), p = (uint32_t)(b / H / C);
	const uint32_t *mem = c->tab, *tr = nv_tree(c, D, h % 2, 0);
	const uint32_t *par = tr + NV_PAR * D, *pos = tr + NV_POS * D, *order = tr + NV_ORDER * D;
	const uint32_t W = nvls_window(c);
	uint64_t o = k % blk;

	g->first = (h * H + j) * c->pieces + p;
	g->count = 1;
	g->entry = false;
	g->ndeps = 0;
	if (o < (uint64_t)D * (G + 1)) {
		const uint32_t d = (uint32_t)(o / (G + 1)), i = (uint32_t)(o % (G + 1));

		if (i < G) {	/* 1: the head's ld_reduce reads member i's piece */
			g->from = mem[d * G + i];
			g->to = c->n + 2 * d;
			g->phase = 1;
			g->data = TD_REDUCE;
			/* the head asks once it has stored p - W (its buffer
			 * slot is free again) and, across servers, once its
			 * ld_reduce of p - 1 is done (one warp, piece after
			 * piece; inside a server the store implies it) */
			if (p >= W)
				g->deps[g->ndeps++] = base - (uint64_t)W * C * H * blk +
						      off_store(D, G, pos, d);
			if (p && W > 1)
				g->deps[g->ndeps++] = base - (uint64_t)C * H * blk + off_sum(G, d);
			g->entry = !g->ndeps;
			return;
		}
		/* 2: the switch's sum to the head, after every read */
		g->from = c->n + 2 * d;
		g->to = mem[d * G + j];
		g->phase = 2;
		g->data = TD_COPY;
		g->run = base + (uint64_t)d * (G + 1);
		g->nrun = G;
		return;
	}
	o -= (uint64_t)D * (G + 1);
	if (o < D - 1) {	/* 3: up the tree (NVLSTree), after its own sum */
		const uint32_t d = order[o], q = par[d], *kid = tr + NV_KID * D;

		g->from = mem[d * G + j];
		g->to = mem[q * G + j];
		g->phase = 3;
		g->data = TD_REDUCE;
		g->deps[g->ndeps++] = base + off_sum(G, d);
		for (uint32_t x = 0; x < 2; x++)
			if (kid[2 * d + x] != COLL_NONE)
				g->deps[g->ndeps++] = base + off_up(D, G, pos, kid[2 * d + x]);
		g->deps[g->ndeps++] = base + off_sum(G, q);	/* it adds to the parent's sum */
		return;
	}
	o -= D - 1;
	if (o < D - 1) {	/* 4: the total down the tree */
		const uint32_t d = order[D - 2 - o], q = par[d];

		g->from = mem[q * G + j];
		g->to = mem[d * G + j];
		g->phase = 4;
		g->data = TD_COPY;
		dep_total(g, base, D, G, tr, q);
		return;
	}
	o -= D - 1;
	{	/* 5, 6: each head's store, the copying switch to every GPU */
		const uint32_t d = order[D - 1 - o / (G + 1)], i = (uint32_t)(o % (G + 1));

		g->data = TD_COPY;
		if (!i) {
			g->from = mem[d * G + j];
			g->to = c->n + 2 * d + 1;
			g->phase = 5;
			dep_total(g, base, D, G, tr, d);
		} else {
			g->from = c->n + 2 * d + 1;
			g->to = mem[d * G + i - 1];
			g->phase = 6;
			g->deps[g->ndeps++] = base + off_store(D, G, pos, d);
		}
	}
}

/* A read waits for its head's store W blocks of every channel and head
 * back: at most W C H + 1 blocks. */
static uint64_t nvls_reach(const struct coll_ctx *c)
{
	return ((uint64_t)nvls_window(c) * c->channels * nvls_heads(c->n / nvls_domains(c)) + 1) *
	       nvls_block(c);
}

/* A sum waits for its domain's G reads: lazily only while they fit. */
static bool nvls_gen_ok(const struct coll_ctx *c)
{
	return c->n / nvls_domains(c) <= TRACE_STEP_MAXDEPS;
}

static const char *nvls_phase(const struct coll_ctx *c, uint32_t phase)
{
	static const char *const names[] = {
		"?", "member -> NVSwitch (multimem.ld_reduce: the switch adds)",
		"NVSwitch -> head (its server's sum)",
		"head -> its parent's head, over the network (NVLSTree: reduce)",
		"head -> its children's heads, over the network (NVLSTree: the total)",
		"head -> NVSwitch (multimem.st)", "NVSwitch -> every member (the multicast)",
	};

	(void)c;
	return phase < 7 ? names[phase] : "?";
}

static void nvls_describe(const struct coll_ctx *c, FILE *out)
{
	const uint32_t D = c->nx / 2, G = D ? c->n / D : 0;

	fprintf(out,
		"NVLink SHARP (NCCL's NVLS%s): the NVSwitches of each NVLink domain add; %" PRIu32 " channels, each cut among %" PRIu32
		" GPUs of a domain as heads, in %" PRIu32 " piece%s: every GPU sends its slice to the switch, the head gets the sum%s, stores it once, the switch copies it to all.\n"
		"T ~ (G+1)/G S / (e B): each GPU port moves (G+1)/G S each way at NVLS's share e of its rate (a ring: 2(G-1)/G S)%s.\n"
		"The NVSwitches are endpoints %" PRId32 " and up, two per domain (adding, copying).\n",
		D > 1 ? "Tree across servers" : "", c->channels, nvls_heads(G), c->pieces,
		c->pieces > 1 ? "s" : "",
		D > 1 ? ", the heads of one index add theirs up a double binary tree between the servers and send the total back down" : "",
		D > 1 ? "; each head's NIC carries its slice up and down once (S/G each way on two servers)" : "",
		c->nx ? c->xranks[0] : -1);
}

const struct coll_algo coll_nvls_allreduce = {
	.name = "nvls (NVLink SHARP)",
	.coll = TRACE_ALLREDUCE,
	.algo = TRACE_ALGO_NVLS,
	.pipelines = true,
	.multichannel = true,
	.endpoints = nvls_endpoints,
	.nchunks = nvls_nchunks,
	.nsteps = nvls_nsteps,
	.lower = coll_lower_gen,
	.gen = nvls_gen,
	.reach = nvls_reach,
	.gen_ok = nvls_gen_ok,
	/* a reach is already the whole window of pieces in flight: the
	 * 1,024-GPU 1 GiB NVLSTree (128 DGX H100) held 0.91 of a reach at
	 * most (4.76M of its 41.9M steps); two leave room */
	.lazy_reaches = 2,
	.phase_name = nvls_phase,
	.describe = nvls_describe,
};
