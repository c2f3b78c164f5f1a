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
 * buffer among the G GPUs, its "heads": head h pulls the sum of its slice
 * from the switch and writes it back, once, for the switch to copy to all
 * G. For an S-byte allreduce each GPU's NVLink port moves S out (its data,
 * read for every head) and S/G more (its own slice's store), and as much
 * in: (G+1)/G S each way, where a ring moves 2(G-1)/G S - and the switch,
 * not the GPUs, does the adding.
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
 * port busy both ways. The first pieces wait for the members' entries.
 * Defaults as NCCL's: nvlsChannels channels (16 on
 * Hopper, 24 on Blackwell: src/transport/nvls.cc), pieces of its NVLS
 * chunk - 128 KiB, 64 KiB below 1 GiB, 32 below 64 MiB, 16 below 8 MiB
 * (src/enqueue.cc).
 *
 * Left out: NVLSTree (NVLS inside each server, NCCL's tree between them:
 * the communicator must be one NVLink domain here), NVLS for allgather
 * and reducescatter, the scatter and gather copies between the user's
 * buffer and NCCL's (local, no NVLink traffic), and multimem's datatype
 * limits (NCCL reduces fp32 and fp64 sums this way, not products).
 */
#include "traces/coll.h"
#include "traces/trace_fmt.h"

#include <inttypes.h>
#include <stdlib.h>

static int nvls_err(struct coll_ctx *c, const char *msg)
{
	return sim_diag_set(c->d, c->op->file, c->op->line, 0, "%s", msg);
}

/* The one extra endpoint: the switch of the members' NVLink domain. */
static int nvls_endpoints(struct coll_ctx *c)
{
	const struct trace *t = c->t;
	int32_t g;

	if (!t->rank_group || !t->nnvs)
		return nvls_err(c, "allreduce algo=nvls is NVLink SHARP, a reduction in the NVSwitches of a GPU server: this run has no GPU servers (a topology with `# ibfab: server=dgx-h100`, or --set server.preset=dgx-h100)");
	g = t->rank_group[c->ranks[0]];
	for (uint32_t i = 0; i < c->n; i++)
		if (g < 0 || t->rank_group[c->ranks[i]] != g)
			return sim_diag_set(c->d, c->op->file, c->op->line, 0,
					    "allreduce algo=nvls runs inside one NVLink domain: ranks %" PRId32 " and %" PRId32 " are not in one (NCCL's NVLSTree, NVLS between servers, is not modelled)",
					    c->ranks[0], c->ranks[i]);
	c->xranks = malloc(2 * sizeof(*c->xranks));
	if (!c->xranks)
		return nvls_err(c, "out of memory");
	c->xranks[0] = trace_nvs_endpoint(t, g);	/* ld_reduce */
	c->xranks[1] = c->xranks[0] + 1;		/* st */
	c->nx = 2;
	/* NCCL's defaults: nvlsChannels CTAs, its NVLS chunk */
	if (!c->op->channels)
		c->channels = t->tune.arch >= 3 ? 24 : 16;
	if (!c->op->chunks) {
		const uint64_t chunk = c->bytes >= (1ull << 30) ? 128u << 10 :
				       c->bytes >= (64ull << 20) ? 64u << 10 :
				       c->bytes >= (8ull << 20) ? 32u << 10 : 16u << 10;
		uint64_t share = c->bytes / ((uint64_t)c->channels * c->n), p;

		p = (share + chunk - 1) / chunk;
		c->pieces = p < 1 ? 1 : p > TRACE_MAX_CHUNKS ? TRACE_MAX_CHUNKS : (uint32_t)p;
	}
	return 0;
}

/* K = channels x heads x pieces; chunk (h_ch G + head) P + piece */
static uint32_t nvls_nchunks(const struct coll_ctx *c)
{
	uint64_t k = (uint64_t)c->channels * c->n * c->pieces;

	return k > UINT32_MAX ? 0 : (uint32_t)k;
}

static uint64_t nvls_nsteps(const struct coll_ctx *c)
{
	if (c->n < 2)
		return 0;
	return (uint64_t)c->nchunks * (2ull * c->n + 2);
}

static int nvls_lower(struct coll_ctx *c)
{
	const uint32_t G = c->n, C = c->channels, P = c->pieces, sw = G, mc = G + 1;
	uint32_t *up, *last;	/* this chunk's steps into the switch; each head's last store */
	int rc = -1;

	if (G < 2)
		return 0;
	up = malloc((size_t)G * sizeof(*up));
	last = malloc((size_t)C * G * sizeof(*last));
	if (!up || !last) {
		nvls_err(c, "out of memory");
		goto out;
	}
	for (uint32_t p = 0; p < P; p++)
		for (uint32_t h = 0; h < C; h++)
			for (uint32_t head = 0; head < G; head++) {
				const uint32_t q = (h * G + head) * P + p;
				uint32_t *prev = &last[h * G + head];
				uint32_t sum, st;

				for (uint32_t i = 0; i < G; i++) {	/* 1: ld_reduce's reads */
					coll_dep_reset(c);
					if (p)	/* the head asks once it has stored p - 1 */
						coll_dep(c, *prev);
					else
						coll_dep_entry(c, i);
					up[i] = coll_emit(c, i, sw, 1, q, 1, TD_REDUCE);
					if (up[i] == COLL_NONE)
						goto out;
				}
				coll_dep_reset(c);	/* 2: the sum to the head */
				for (uint32_t i = 0; i < G; i++)
					coll_dep(c, up[i]);
				sum = coll_emit(c, sw, head, 2, q, 1, TD_COPY);
				coll_dep_reset(c);	/* 3: the head's store */
				coll_dep(c, sum);
				st = sum == COLL_NONE ? COLL_NONE : coll_emit(c, head, mc, 3, q, 1, TD_COPY);
				if (st == COLL_NONE)
					goto out;
				*prev = st;
				for (uint32_t i = 0; i < G; i++) {	/* 4: the multicast */
					coll_dep_reset(c);
					coll_dep(c, st);
					if (coll_emit(c, mc, i, 4, q, 1, TD_COPY) == COLL_NONE)
						goto out;
				}
			}
	rc = 0;
out:
	free(up);
	free(last);
	return rc;
}

static const char *nvls_phase(const struct coll_ctx *c, uint32_t phase)
{
	static const char *const names[] = {
		"?", "member -> NVSwitch (multimem.ld_reduce: the switch adds)",
		"NVSwitch -> head (the sum)", "head -> NVSwitch (multimem.st)",
		"NVSwitch -> every member (the multicast)",
	};

	(void)c;
	return phase < 5 ? names[phase] : "?";
}

static void nvls_describe(const struct coll_ctx *c, FILE *out)
{
	fprintf(out,
		"NVLink SHARP (NCCL's NVLS): the NVSwitches of one NVLink domain add; %" PRIu32 " channels, each cut among the %" PRIu32
		" GPUs as heads, in %" PRIu32 " piece%s: every GPU sends its slice to the switch, the head gets the sum and stores it once, the switch copies it to all.\n"
		"T ~ (G+1)/G S / (e B): each GPU port moves (G+1)/G S each way at NVLS's share e of its rate (a ring: 2(G-1)/G S).\n"
		"The NVSwitches are endpoints %" PRId32 " (adding) and %" PRId32 " (copying).\n",
		c->channels, c->n, c->pieces, c->pieces > 1 ? "s" : "", c->nx ? c->xranks[0] : -1,
		c->nx ? c->xranks[1] : -1);
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
