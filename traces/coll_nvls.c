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
 * communicator's GPUs. algo=nvlstree always runs this way across domains.
 *
 * With SHARP (the job has an aggregation tree and NCCL's CollNet is on:
 * ib.sharp=on, or the op's NCCL_COLLNET_ENABLE=1), algo=nvls across
 * domains is NCCL's NVLS proper, "NVLS + SHARP"
 * (src/device/all_reduce.h: the NVLS kernel's network warps send the
 * head's sum to the CollNet peer and store what comes back): phases 3
 * and 4 go through the InfiniBand switches instead of between the heads.
 * The heads of one index j, one per domain (rail j's NICs), send their
 * domain's sum of the piece to their leaf switch's aggregation node
 * (phase 3), each aggregation node adds its children's and sends the sum
 * on up, to the lowest node covering all heads j; the total comes back
 * down to every head (phase 4), which stores it into its domain. So each
 * head's NIC carries its slice, S / (channels G) per piece, once each way
 * whatever the number of servers, and the latency is one trip up and down
 * the switches' tree - where the double binary tree takes 2 log2(servers)
 * network hops.
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
#include <string.h>

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

enum coll_nvls_form coll_nvls_form(const struct trace *t, const struct trace_op *op)
{
	const struct trace_comm *cm = &t->comms[op->comm];
	bool across = false;

	if (t->rank_group)
		for (uint32_t k = 1; k < cm->n && !across; k++)
			across = t->rank_group[cm->ranks[k]] != t->rank_group[cm->ranks[0]];
	if (!across)
		return COLL_NVLS_ONE;
	return op->algo == TRACE_ALGO_NVLS && t->nagg > 0 && t->rank_agg && t->agg_parent &&
	       (t->tune.collnet || op->collnet) ? COLL_NVLS_SHARP : COLL_NVLS_TREE;
}

/*
 * The algorithm's tables (coll_ctx.tab), kept for gen: tab[d G + j] is the
 * member that is GPU j of domain d (in the communicator's order); then,
 * for each of the two trees (t = channel parity), 5 D entries: the
 * parent of each domain's head (COLL_NONE at the root), each domain's
 * position in the tree's order (children before parents: the root last),
 * the domain at each position, and each domain's two children (COLL_NONE
 * when fewer); then, in the SHARP form, its tables (sh_*); last D and the
 * SHARP tables' offset (0: none).
 */
enum { NV_PAR, NV_POS, NV_ORDER, NV_KID, NV_TREE = 5 };

/* D domains of G GPUs each */
static uint32_t nvls_domains(const struct coll_ctx *c)
{
	return c->tab[c->ntab - 2];
}

/*
 * The SHARP form's tables, at tab + tab[ntab - 1]: NA (the aggregation
 * nodes any head index uses; endpoint n + 2D + u is the u-th), then for
 * each head index j the start of its block in a superblock (H + 1
 * entries: the last is the superblock's size, all heads' blocks of one
 * channel and piece), and the offset of j's table. Head index j's table:
 * U (its tree's edges: every head and every aggregation node below the
 * root sends up one), then the edges in the order their sends go up -
 * by the parent's height, then parent, then child, so that siblings are
 * consecutive and children come before parents - as child endpoints,
 * parent endpoints and, for a head's edge, its domain (COLL_NONE for an
 * aggregation node's) (U each), then the edge each domain's head sends up
 * on (D), the edge each aggregation node sends up on (NA; COLL_NONE for
 * the root and unused ones), and the first and number of each one's
 * children's edges (NA each).
 */
static inline const uint32_t *sh_tab(const struct coll_ctx *c)
{
	return c->tab[c->ntab - 1] ? c->tab + c->tab[c->ntab - 1] : NULL;
}

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

/* ---- the SHARP form's tables ------------------------------------------------ */

struct sh_edge {
	uint32_t ph, par, child, aux;	/* parent's height, endpoints; the head's domain */
};

static int sh_edge_cmp(const void *a, const void *b)
{
	const struct sh_edge *x = a, *y = b;

	if (x->ph != y->ph)
		return x->ph < y->ph ? -1 : 1;
	if (x->par != y->par)
		return x->par < y->par ? -1 : 1;
	return (x->child > y->child) - (x->child < y->child);
}

/*
 * Head index j's part of the SHARP tree: used[a] for the aggregation nodes
 * from its heads' leaf switches up to the lowest one covering them all,
 * cnt[a] their children. Returns that lowest node, -1 when the heads are
 * not in one tree.
 */
static int32_t sh_slice(const struct coll_ctx *c, const uint32_t *mem, uint32_t D, uint32_t G,
			uint32_t j, uint8_t *used, uint32_t *cnt)
{
	const struct trace *t = c->t;
	const int32_t na = t->nagg;
	int32_t root = -1;

	memset(used, 0, (size_t)na);
	memset(cnt, 0, (size_t)na * sizeof(*cnt));
	for (uint32_t d = 0; d < D; d++) {
		int32_t a = t->rank_agg[c->ranks[mem[d * G + j]]];

		if (a < 0 || a >= na)
			return -1;
		cnt[a]++;
		for (int32_t hop = 0; !used[a]; hop++) {
			int32_t q = t->agg_parent[a];

			if (hop > na || q >= na)
				return -1;
			used[a] = 1;
			if (q < 0)
				break;
			cnt[q]++;
			a = q;
		}
	}
	for (int32_t a = 0; a < na; a++)
		if (used[a] && t->agg_parent[a] < 0) {
			if (root >= 0)
				return -1;	/* two trees */
			root = a;
		}
	/* down from the top while a node has one child, an aggregation node */
	while (root >= 0 && cnt[root] == 1) {
		int32_t only = -1;

		for (int32_t a = 0; a < na; a++)
			if (used[a] && t->agg_parent[a] == root)
				only = a;
		if (only < 0)
			break;
		used[root] = 0;
		root = only;
	}
	return root;
}

/*
 * The SHARP form's tables (sh_tab) into a fresh array *out of *nout
 * entries, offsets counted from `at` (where they will sit in tab); the
 * aggregation nodes used, in trace order, into *aggs (*nagg of them).
 * 0, or -1 with c->d set.
 */
static int sh_build(struct coll_ctx *c, const uint32_t *mem, uint32_t D, uint32_t G, uint32_t at,
		    uint32_t **out, uint32_t *nout, int32_t **aggs, uint32_t *nagg)
{
	const struct trace *t = c->t;
	const int32_t na = t->nagg;
	const uint32_t H = nvls_heads(G), X = c->n + 2 * D;
	uint8_t *used = malloc((size_t)na * H);
	uint32_t *cnt = malloc((size_t)na * sizeof(*cnt)), *ht = malloc((size_t)na * sizeof(*ht));
	uint32_t *amap = malloc((size_t)na * sizeof(*amap)), NA = 0, *v = NULL, len, *sec;
	struct sh_edge *e = malloc(((size_t)D + (size_t)na) * sizeof(*e));
	int32_t *roots = malloc((size_t)H * sizeof(*roots));
	const char *why = "out of memory";

	*out = NULL;
	*aggs = NULL;
	if (!used || !cnt || !ht || !amap || !e || !roots)
		goto fail;
	for (int32_t a = 0; a < na; a++)
		amap[a] = COLL_NONE;
	for (uint32_t j = 0; j < H; j++) {
		roots[j] = sh_slice(c, mem, D, G, j, used + (size_t)j * na, cnt);
		if (roots[j] < 0) {
			why = "the SHARP tree does not reach every head of an index (heads on one rail must share a tree)";
			goto fail;
		}
		for (int32_t a = 0; a < na; a++)
			if (used[(size_t)j * na + a])
				amap[a] = 0;
	}
	*aggs = malloc((size_t)na * sizeof(**aggs));
	if (!*aggs)
		goto fail;
	for (int32_t a = 0; a < na; a++)
		if (amap[a] == 0) {
			(*aggs)[NA] = a;
			amap[a] = NA++;
		}
	/* NA, then H + 1 block starts and H table offsets; each table 1 + 3U
	 * + D + 3 NA, U <= D + NA - 1 */
	len = 1 + (H + 1) + H + H * (1 + 3 * (D + NA) + D + 3 * NA);
	v = malloc((size_t)len * sizeof(*v));
	if (!v)
		goto fail;
	v[0] = NA;
	v[1] = 0;
	sec = v + 2 + 2 * H;
	for (uint32_t j = 0; j < H; j++) {
		const uint8_t *u = used + (size_t)j * na;
		uint32_t U = 0, *child, *par, *aux, *hedge, *aedge, *akf, *akn;

		/* heights: a node is one above its highest child (heads: 0) */
		for (int32_t a = 0; a < na; a++)
			ht[a] = 1;
		for (int32_t pass = 0; pass < na; pass++) {
			bool more = false;

			for (int32_t a = 0; a < na; a++)
				if (u[a] && a != roots[j] && ht[t->agg_parent[a]] < ht[a] + 1) {
					ht[t->agg_parent[a]] = ht[a] + 1;
					more = true;
				}
			if (!more)
				break;
		}
		for (uint32_t d = 0; d < D; d++) {
			int32_t a = t->rank_agg[c->ranks[mem[d * G + j]]];

			e[U++] = (struct sh_edge){ ht[a], X + amap[a], mem[d * G + j], d };
		}
		for (int32_t a = 0; a < na; a++)
			if (u[a] && a != roots[j])
				e[U++] = (struct sh_edge){ ht[t->agg_parent[a]],
							   X + amap[t->agg_parent[a]], X + amap[a],
							   COLL_NONE };
		qsort(e, U, sizeof(*e), sh_edge_cmp);
		v[2 + H + j] = at + (uint32_t)(sec - v);
		sec[0] = U;
		child = sec + 1;
		par = child + U;
		aux = par + U;
		hedge = aux + U;
		aedge = hedge + D;
		akf = aedge + NA;
		akn = akf + NA;
		for (uint32_t x = 0; x < NA; x++) {
			aedge[x] = akf[x] = COLL_NONE;
			akn[x] = 0;
		}
		for (uint32_t i = 0; i < U; i++) {
			child[i] = e[i].child;
			par[i] = e[i].par;
			aux[i] = e[i].aux;
			if (e[i].aux != COLL_NONE)
				hedge[e[i].aux] = i;
			else
				aedge[e[i].child - X] = i;
			if (!akn[e[i].par - X]++)
				akf[e[i].par - X] = i;
		}
		/* reads and sums, U up, U down, stores and multicasts */
		v[1 + j + 1] = v[1 + j] + 2 * D * (G + 1) + 2 * U;
		sec = akn + NA;
	}
	*nout = (uint32_t)(sec - v);
	*out = v;
	*nagg = NA;
	why = NULL;
fail:
	free(used);
	free(cnt);
	free(ht);
	free(amap);
	free(e);
	free(roots);
	if (!why)
		return 0;
	free(v);
	free(*aggs);
	*out = NULL;
	*aggs = NULL;
	return nvls_err(c, why);
}

/*
 * The endpoints: the reducing and copying NVSwitches of each NVLink domain
 * the members span (xranks 2d, 2d + 1 for domain d, in order of first
 * appearance), every domain with the same G members; and the tables.
 */
static int nvls_endpoints(struct coll_ctx *c)
{
	const struct trace *t = c->t;
	uint32_t D = 0, G, *fill = NULL, *mem = NULL, *sh = NULL, nsh = 0, naggs = 0, base;
	int32_t *dom = NULL, *aggs = NULL;	/* dom: per domain index, its rank_group */

	if (!t->rank_group || !t->nnvs)
		return sim_diag_set(c->d, c->op->file, c->op->line, 0,
				    "allreduce algo=%s is NVLink SHARP, a reduction in the NVSwitches of a GPU server: this run has no GPU servers (a topology with `# ibfab: server=dgx-h100`, or --set server.preset=dgx-h100)",
				    trace_algo_names[c->op->algo]);
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
					    "allreduce algo=%s runs on GPU servers: rank %" PRId32 " is in none",
					    trace_algo_names[c->op->algo], c->ranks[i]);
		}
		for (d = 0; d < D && dom[d] != g; d++)
			;
		if (d == D)
			dom[D++] = g;
		fill[d]++;
	}
	G = c->n / D;
	for (uint32_t d = 1; d < D; d++)
		if (fill[d] != fill[0]) {
			int32_t g0 = dom[0], g1 = dom[d];
			uint32_t f0 = fill[0], f1 = fill[d];

			free(dom);
			free(fill);
			return sim_diag_set(c->d, c->op->file, c->op->line, 0,
					    "allreduce algo=%s needs as many ranks on every server: NVLink domains %" PRId32 " and %" PRId32 " hold %" PRIu32 " and %" PRIu32 " of them",
					    trace_algo_names[c->op->algo], g0, g1, f0, f1);
		}
	mem = malloc((size_t)c->n * sizeof(*mem));
	if (!mem)
		goto oom;
	for (uint32_t d = 0; d < D; d++)
		fill[d] = 0;
	for (uint32_t i = 0; i < c->n; i++) {
		uint32_t d;

		for (d = 0; dom[d] != t->rank_group[c->ranks[i]]; d++)
			;
		mem[d * G + fill[d]++] = i;
	}
	base = c->n + 2 * NV_TREE * D;
	if (coll_nvls_form(t, c->op) == COLL_NVLS_SHARP &&
	    sh_build(c, mem, D, G, base, &sh, &nsh, &aggs, &naggs)) {
		free(dom);
		free(fill);
		free(mem);
		return -1;
	}
	c->xranks = malloc((2 * (size_t)D + naggs) * sizeof(*c->xranks));
	c->ntab = base + nsh + 2;
	c->tab = malloc(c->ntab * sizeof(*c->tab));
	if (!c->xranks || !c->tab) {
		free(sh);
		free(aggs);
		goto oom;
	}
	for (uint32_t d = 0; d < D; d++) {
		c->xranks[2 * d] = trace_nvs_endpoint(t, dom[d]);	/* ld_reduce */
		c->xranks[2 * d + 1] = c->xranks[2 * d] + 1;		/* st */
	}
	for (uint32_t u = 0; u < naggs; u++)
		c->xranks[2 * D + u] = t->nranks + aggs[u];
	c->nx = 2 * D + naggs;
	memcpy(c->tab, mem, (size_t)c->n * sizeof(*mem));
	if (nsh)
		memcpy(c->tab + base, sh, (size_t)nsh * sizeof(*sh));
	c->tab[c->ntab - 2] = D;
	c->tab[c->ntab - 1] = nsh ? base : 0;
	free(sh);
	free(aggs);
	free(mem);
	mem = NULL;
	nv_trees(c, D);
	free(dom);
	free(fill);
	/* NCCL's defaults: nvlsChannels CTAs, its NVLS (NVLSTree) chunk */
	if (!c->op->channels)
		c->channels = t->tune.arch >= 3 ? 24 : 16;
	if (!c->op->chunks && nsh) {
		/* NVLS across servers: nvlsChunkSize (128 KiB), 32 KiB where
		 * the tuning model's bandwidth is below 150 GB/s (none without
		 * the model: the default stays), then halved
		 * while the buffer is small against channels x heads chunks
		 * (64, 8, 2 of them) */
		const uint64_t ops = (uint64_t)c->channels * nvls_heads(G);
		const double bw = coll_tune_nvls_sharp_algbw(&t->tune, c->n, D);	/* 0: none */
		uint64_t chunk = bw > 0 && bw < 150 ? 32u << 10 : 128u << 10, p;

		if (c->bytes < 64 * ops * chunk && chunk > (64u << 10))
			chunk = 64u << 10;
		if (c->bytes < 8 * ops * chunk && chunk > (32u << 10))
			chunk = 32u << 10;
		if (c->bytes < 2 * ops * chunk && chunk > (16u << 10))
			chunk = 16u << 10;
		p = (c->bytes / ops + chunk - 1) / chunk;
		c->pieces = p < 1 ? 1 : p > TRACE_MAX_CHUNKS ? TRACE_MAX_CHUNKS : (uint32_t)p;
	} else if (!c->op->chunks) {
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
	free(mem);
	return nvls_err(c, "out of memory");
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

/* The SHARP form: a superblock holds every head's block of one channel and
 * piece (head j's: 2 D (G + 1) + 2 U_j steps) */
static uint64_t sh_superblock(const struct coll_ctx *c)
{
	return sh_tab(c)[1 + nvls_heads(c->n / nvls_domains(c))];
}

static uint64_t nvls_nsteps(const struct coll_ctx *c)
{
	if (c->n < 2)
		return 0;
	if (sh_tab(c))
		return (uint64_t)c->channels * c->pieces * sh_superblock(c);
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

/*
 * The SHARP form's step k. Head j's block, of one channel h and piece p:
 *   D (G + 1)  each domain's reads and its sum to head j (1, 2), as above
 *   U          up the SHARP tree (3): head j of each domain to its leaf
 *              switch's aggregation node, after its domain's sum; each
 *              aggregation node below the root to its parent, after all
 *              of its children's (a run: siblings are consecutive)
 *   U          down (4), the same edges in reverse: the root to its
 *              children once every child's sum is in, any other node to
 *              its children once the total has come to it
 *   D (G + 1)  each domain's store, after the total came to its head (5),
 *              and the multicast to its G GPUs (6)
 */
static void nvls_gen_sharp(const struct coll_ctx *c, uint64_t k, struct coll_gstep *g)
{
	const uint32_t D = nvls_domains(c), G = c->n / D, H = nvls_heads(G), C = c->channels;
	const uint32_t *sh = sh_tab(c), NA = sh[0], *bst = sh + 1, *mem = c->tab;
	const uint64_t SB = bst[H], sb = k / SB, r = k % SB;
	const uint32_t h = (uint32_t)(sb % C), p = (uint32_t)(sb / C), X = c->n + 2 * D;
	const uint32_t W = NVLS_TREE_WINDOW;
	uint32_t j = 0, lo = 0, hi = H;

	while (hi - lo > 1) {	/* the block r falls in: bst[j] <= r < bst[j + 1] */
		uint32_t mid = (lo + hi) / 2;

		if (bst[mid] <= r)
			lo = mid;
		else
			hi = mid;
	}
	j = lo;
	const uint64_t o = r - bst[j], base = k - o, up0 = (uint64_t)D * (G + 1);
	const uint32_t *sj = c->tab + sh[2 + H + j], U = sj[0], *child = sj + 1, *par = child + U;
	const uint32_t *aux = par + U, *hedge = aux + U, *aedge = hedge + D, *akf = aedge + NA;
	const uint32_t *akn = akf + NA;
	const uint64_t dn0 = up0 + U, st0 = dn0 + U;

	g->first = (h * H + j) * c->pieces + p;
	g->count = 1;
	g->entry = false;
	g->ndeps = 0;
	g->data = TD_COPY;
	if (o < up0) {
		const uint32_t d = (uint32_t)(o / (G + 1)), i = (uint32_t)(o % (G + 1));

		if (i < G) {	/* 1: as across the tree: W pieces in flight */
			g->from = mem[d * G + i];
			g->to = c->n + 2 * d;
			g->phase = 1;
			g->data = TD_REDUCE;
			if (p >= W)
				g->deps[g->ndeps++] = base - (uint64_t)W * C * SB + st0 + (uint64_t)d * (G + 1);
			if (p)
				g->deps[g->ndeps++] = base - (uint64_t)C * SB + off_sum(G, d);
			g->entry = !g->ndeps;
			/* the G reads: one fan (as trace_step.fan holds), the sum
			 * waits for all */
			if (!i && g->ndeps && G <= UINT8_MAX) {
				g->fan = G;
				g->fan_tab = d * G;	/* the reads' sources: mem[d G + m] */
				g->fan_to = false;
			}
			return;
		}
		g->from = c->n + 2 * d;	/* 2: the sum to the head */
		g->to = mem[d * G + j];
		g->phase = 2;
		g->run = base + (uint64_t)d * (G + 1);
		g->nrun = G;
		return;
	}
	if (o < dn0) {		/* 3: up the switches' tree */
		const uint32_t i = (uint32_t)(o - up0);

		g->from = child[i];
		g->to = par[i];
		g->phase = 3;
		g->data = TD_REDUCE;
		if (aux[i] != COLL_NONE) {
			g->deps[g->ndeps++] = base + off_sum(G, aux[i]);
		} else {
			g->run = base + up0 + akf[child[i] - X];
			g->nrun = akn[child[i] - X];
		}
		return;
	}
	if (o < st0) {		/* 4: the total down */
		const uint32_t i = U - 1 - (uint32_t)(o - dn0), a = par[i] - X;

		g->from = par[i];
		g->to = child[i];
		g->phase = 4;
		if (aedge[a] == COLL_NONE) {	/* the root: every child's sum */
			g->run = base + up0 + akf[a];
			g->nrun = akn[a];
		} else {
			g->deps[g->ndeps++] = base + dn0 + (U - 1 - aedge[a]);
		}
		return;
	}
	{			/* 5, 6: the store, the multicast */
		const uint32_t d = (uint32_t)((o - st0) / (G + 1)), i = (uint32_t)((o - st0) % (G + 1));

		if (!i) {
			g->from = mem[d * G + j];
			g->to = c->n + 2 * d + 1;
			g->phase = 5;
			g->deps[g->ndeps++] = base + dn0 + (U - 1 - hedge[d]);
		} else {
			g->from = c->n + 2 * d + 1;
			g->to = mem[d * G + i - 1];
			g->phase = 6;
			g->deps[g->ndeps++] = base + st0 + (uint64_t)d * (G + 1);
			/* the multicast: one fan, after the store */
			if (i == 1 && G <= UINT8_MAX) {
				g->fan = G;
				g->fan_tab = d * G;	/* its destinations: mem[d G + m] */
				g->fan_to = true;
			}
		}
	}
}

static void nvls_gen_tree(const struct coll_ctx *c, uint64_t k, struct coll_gstep *g)
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
			/* the G reads: one fan (as trace_step.fan holds), the sum
			 * waits for all */
			if (!i && g->ndeps && G <= UINT8_MAX) {
				g->fan = G;
				g->fan_tab = d * G;	/* the reads' sources: mem[d G + m] */
				g->fan_to = false;
			}
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
			/* the multicast: one fan, after the store */
			if (i == 1 && G <= UINT8_MAX) {
				g->fan = G;
				g->fan_tab = d * G;	/* its destinations: mem[d G + m] */
				g->fan_to = true;
			}
		}
	}
}

static void nvls_gen(const struct coll_ctx *c, uint64_t k, struct coll_gstep *g)
{
	if (sh_tab(c))
		nvls_gen_sharp(c, k, g);
	else
		nvls_gen_tree(c, k, g);
}

/* A read waits for its head's store W blocks of every channel and head
 * back: at most W C H + 1 blocks. */
static uint64_t nvls_reach(const struct coll_ctx *c)
{
	if (sh_tab(c))	/* a read waits for the store W C superblocks back */
		return ((uint64_t)NVLS_TREE_WINDOW * c->channels + 1) * sh_superblock(c);
	return ((uint64_t)nvls_window(c) * c->channels * nvls_heads(c->n / nvls_domains(c)) + 1) *
	       nvls_block(c);
}

/*
 * Across servers most of that reach is the window: only a read waits for
 * a step more than a piece back (its head's store W pieces back); every
 * other wait is within its block, or the sum one piece back. So the
 * replay makes steps one piece of every channel and head ahead and keeps
 * the stores' records until their reads are made: on 128 DGX H100 it held
 * 5.0M steps at once for a 1 GiB NVLSTree all_reduce, a reach of them.
 * The SHARP form keeps the whole reach.
 */
static uint64_t nvls_near_reach(const struct coll_ctx *c)
{
	if (sh_tab(c) || nvls_window(c) == 1)
		return nvls_reach(c);
	return ((uint64_t)c->channels * nvls_heads(c->n / nvls_domains(c)) + 1) * nvls_block(c);
}

/* Is step k a store (5), which the reads W pieces on wait for? */
static bool nvls_far(const struct coll_ctx *c, uint64_t k)
{
	if (sh_tab(c) || nvls_window(c) == 1)
		return false;
	const uint32_t D = nvls_domains(c), G = c->n / D;
	const uint64_t o = k % nvls_block(c), st0 = (uint64_t)D * (G + 1) + 2 * (D - 1);

	return o >= st0 && (o - st0) % (G + 1) == 0;
}

/* A sum waits for its domain's G reads: lazily only while they fit. */
static bool nvls_gen_ok(const struct coll_ctx *c)
{
	const uint32_t *sh = sh_tab(c), D = nvls_domains(c), G = c->n / D, H = nvls_heads(G);

	if (G > TRACE_STEP_MAXDEPS)
		return false;
	/* and, with SHARP, an aggregation node's children */
	for (uint32_t j = 0; sh && j < H; j++) {
		const uint32_t *sj = c->tab + sh[2 + H + j], U = sj[0], *akn = sj + 1 + 3 * U + D + 2 * sh[0];

		for (uint32_t a = 0; a < sh[0]; a++)
			if (akn[a] > TRACE_STEP_MAXDEPS)
				return false;
	}
	return true;
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

	if (c->ntab && sh_tab(c) && phase == 3)
		return "head -> its leaf switch's aggregation node, and up the SHARP tree (reduce)";
	if (c->ntab && sh_tab(c) && phase == 4)
		return "SHARP tree -> the heads (the total)";
	return phase < 7 ? names[phase] : "?";
}

static void nvls_describe(const struct coll_ctx *c, FILE *out)
{
	const uint32_t D = c->ntab ? nvls_domains(c) : 0, G = D ? c->n / D : 0;
	const bool sharp = c->ntab && sh_tab(c);

	fprintf(out,
		"NVLink SHARP (NCCL's NVLS%s): the NVSwitches of each NVLink domain add; %" PRIu32 " channels, each cut among %" PRIu32
		" GPUs of a domain as heads, in %" PRIu32 " piece%s: every GPU sends its slice to the switch, the head gets the sum%s, stores it once, the switch copies it to all.\n"
		"T ~ (G+1)/G S / (e B): each GPU port moves (G+1)/G S each way at NVLS's share e of its rate (a ring: 2(G-1)/G S)%s.\n"
		"The NVSwitches are endpoints %" PRId32 " and up, two per domain (adding, copying)%s.\n",
		D < 2 ? "" : sharp ? " across servers, with SHARP" : "Tree across servers",
		c->channels, nvls_heads(G), c->pieces, c->pieces > 1 ? "s" : "",
		D < 2 ? "" : sharp ? ", the heads of one index send theirs into the InfiniBand switches' SHARP tree and get the total back" :
		", the heads of one index add theirs up a double binary tree between the servers and send the total back down",
		D < 2 ? "" : sharp ? "; each head's NIC carries its slice up and down once, whatever the number of servers" :
		"; each head's NIC carries its slice up and down once (S/G each way on two servers)",
		c->nx ? c->xranks[0] : -1,
		sharp ? "; the SHARP aggregation nodes follow them" : "");
}

/* NCCL's NVLS: one domain, or across domains with SHARP (else NVLSTree) */
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
	.near_reach = nvls_near_reach,
	.far = nvls_far,
	.gen_ok = nvls_gen_ok,
	/* a reach is already the whole window of pieces in flight: the set-up
	 * estimate counts two, a bound on what the replay holds (made a
	 * whole reach ahead, the 1,024-GPU 1 GiB NVLSTree held 0.91 of one;
	 * made a near reach ahead with fans, 839k of its 41.9M steps) */
	.lazy_reaches = 2,
	.phase_name = nvls_phase,
	.describe = nvls_describe,
};

/* NCCL's NVLSTree: the double binary tree between domains, SHARP or not */
const struct coll_algo coll_nvlstree_allreduce = {
	.name = "nvls tree (NVLSTree)",
	.coll = TRACE_ALLREDUCE,
	.algo = TRACE_ALGO_NVLSTREE,
	.pipelines = true,
	.multichannel = true,
	.endpoints = nvls_endpoints,
	.nchunks = nvls_nchunks,
	.nsteps = nvls_nsteps,
	.lower = coll_lower_gen,
	.gen = nvls_gen,
	.reach = nvls_reach,
	.near_reach = nvls_near_reach,
	.far = nvls_far,
	.gen_ok = nvls_gen_ok,
	.lazy_reaches = 2,
	.phase_name = nvls_phase,
	.describe = nvls_describe,
};
