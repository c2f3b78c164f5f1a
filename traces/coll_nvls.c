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
 * port busy both ways (across servers, NVLS_TREE_WINDOW pieces). The first
 * pieces wait for the members' entries.
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
 * The endpoints: the reducing and copying NVSwitches of each NVLink domain
 * the members span (xranks 2d, 2d + 1 for domain d, in order of first
 * appearance), every domain with the same G members; c->up[d G + j]: the
 * member that is GPU j of domain d (in the communicator's order).
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
	c->up = malloc((size_t)c->n * sizeof(*c->up));
	if (!c->xranks || !c->up)
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
		c->up[d * G + fill[d]++] = i;
	}
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

/* per chunk, each domain's 2G + 2, and a head's send up and down but the root's */
static uint64_t nvls_nsteps(const struct coll_ctx *c)
{
	const uint64_t D = nvls_domains(c), G = c->n / D;

	if (c->n < 2)
		return 0;
	return (uint64_t)c->nchunks * (D * (2 * G + 2) + 2 * (D - 1));
}

/* Add the steps after which domain d's head holds the whole sum: the
 * root's own sum and its children's; anyone else's copy from its parent. */
static void dep_total(struct coll_ctx *c, uint32_t d, const int32_t *par, const uint32_t *sum,
		      const uint32_t *kid, const uint32_t *down)
{
	if (par[d] < 0) {
		coll_dep(c, sum[d]);
		coll_dep(c, kid[2 * d]);
		coll_dep(c, kid[2 * d + 1]);
	} else {
		coll_dep(c, down[d]);
	}
}

static int nvls_lower(struct coll_ctx *c)
{
	const uint32_t D = nvls_domains(c), G = c->n / D, H = nvls_heads(G), C = c->channels;
	const uint32_t P = c->pieces, W = D > 1 ? NVLS_TREE_WINDOW : 1;
	uint32_t *reads = NULL, *sum = NULL, *kid = NULL, *down = NULL, *last = NULL;
	uint32_t *order = NULL, *nkid = NULL;
	int32_t *par = NULL;
	int rc = -1;

	if (c->n < 2)
		return 0;
	reads = malloc((size_t)G * sizeof(*reads));	/* a domain's reads into its switch */
	sum = malloc((size_t)D * sizeof(*sum));		/* reducing switch -> head */
	kid = malloc((size_t)D * 2 * sizeof(*kid));	/* children's sends up into the head */
	down = malloc((size_t)D * sizeof(*down));	/* the total from the parent */
	last = malloc((size_t)C * H * D * W * sizeof(*last));	/* heads' last W stores */
	order = malloc((size_t)D * sizeof(*order));	/* domains, children before parents */
	nkid = malloc((size_t)D * sizeof(*nkid));
	par = malloc((size_t)D * sizeof(*par));
	if (!reads || !sum || !kid || !down || !last || !order || !nkid || !par) {
		nvls_err(c, "out of memory");
		goto out;
	}
	for (uint32_t h = 0; h < C; h++) {
		uint32_t x = 0;

		/* NCCL's double binary tree between the domains' heads: tree 0
		 * for even channels, 1 for odd (src/graph/connect.cc); children
		 * before parents in order[] */
		for (uint32_t d = 0; d < D; d++) {
			par[d] = D > 1 ? coll_dtree_parent(D, h % 2, d) : -1;
			nkid[d] = 0;
		}
		for (uint32_t d = 0; d < D; d++)
			if (par[d] >= 0)
				nkid[par[d]]++;
		for (uint32_t d = 0; d < D; d++)
			if (!nkid[d])
				order[x++] = d;
		for (uint32_t i = 0; i < x; i++)
			if (par[order[i]] >= 0 && !--nkid[par[order[i]]])
				order[x++] = (uint32_t)par[order[i]];
		for (uint32_t p = 0; p < P; p++)
			for (uint32_t j = 0; j < H; j++) {
				const uint32_t q = (h * H + j) * P + p;

				/* 1, 2: inside each domain, the head's ld_reduce */
				for (uint32_t d = 0; d < D; d++) {
					const uint32_t prev = p >= W ? last[(((size_t)h * H + j) * D + d) * W + p % W] :
							      COLL_NONE;

					for (uint32_t i = 0; i < G; i++) {
						coll_dep_reset(c);
						if (prev != COLL_NONE)	/* the head asks once it has stored p - W */
							coll_dep(c, prev);
						else
							coll_dep_entry(c, c->up[d * G + i]);
						reads[i] = coll_emit(c, c->up[d * G + i], c->n + 2 * d, 1,
								     q, 1, TD_REDUCE);
						if (reads[i] == COLL_NONE)
							goto out;
					}
					coll_dep_reset(c);
					for (uint32_t i = 0; i < G; i++)
						coll_dep(c, reads[i]);
					sum[d] = coll_emit(c, c->n + 2 * d, c->up[d * G + j], 2, q, 1,
							   TD_COPY);
					if (sum[d] == COLL_NONE)
						goto out;
					kid[2 * d] = kid[2 * d + 1] = COLL_NONE;
				}
				/* 3: up the tree (NVLSTree), each head adding its
				 * children's to its own, after its own sum */
				for (uint32_t i = 0; i < D; i++) {
					const uint32_t d = order[i];
					uint32_t r;

					if (par[d] < 0)
						continue;
					coll_dep_reset(c);
					coll_dep(c, sum[d]);
					coll_dep(c, kid[2 * d]);
					coll_dep(c, kid[2 * d + 1]);
					coll_dep(c, sum[par[d]]);	/* it adds to the parent's sum */
					r = coll_emit(c, c->up[d * G + j], c->up[(uint32_t)par[d] * G + j],
						      3, q, 1, TD_REDUCE);
					if (r == COLL_NONE)
						goto out;
					kid[2 * par[d] + (kid[2 * par[d]] != COLL_NONE)] = r;
				}
				/* 4: the total down the tree (before any head's own
				 * copy comes back from its switch) */
				for (uint32_t i = D; i-- > 0;) {
					const uint32_t d = order[i];

					if (par[d] < 0)
						continue;
					coll_dep_reset(c);
					dep_total(c, (uint32_t)par[d], par, sum, kid, down);
					down[d] = coll_emit(c, c->up[(uint32_t)par[d] * G + j],
							    c->up[d * G + j], 4, q, 1, TD_COPY);
					if (down[d] == COLL_NONE)
						goto out;
				}
				/* 5, 6: each head's store, the copying switch to every
				 * GPU of its domain */
				for (uint32_t i = D; i-- > 0;) {
					const uint32_t d = order[i];
					uint32_t st;

					coll_dep_reset(c);
					dep_total(c, d, par, sum, kid, down);
					st = coll_emit(c, c->up[d * G + j], c->n + 2 * d + 1, 5, q, 1,
						       TD_COPY);
					if (st == COLL_NONE)
						goto out;
					last[(((size_t)h * H + j) * D + d) * W + p % W] = st;
					for (uint32_t i2 = 0; i2 < G; i2++) {
						coll_dep_reset(c);
						coll_dep(c, st);
						if (coll_emit(c, c->n + 2 * d + 1, c->up[d * G + i2], 6, q, 1,
							      TD_COPY) == COLL_NONE)
							goto out;
					}
				}
			}
	}
	rc = 0;
out:
	free(reads);
	free(sum);
	free(kid);
	free(down);
	free(last);
	free(order);
	free(nkid);
	free(par);
	return rc;
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
	.lower = nvls_lower,
	.phase_name = nvls_phase,
	.describe = nvls_describe,
};
