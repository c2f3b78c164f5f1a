/* SPDX-License-Identifier: MIT */
/*
 * coll_alltoall.c - all-to-all: every rank sends a distinct block of S/N
 * bytes to every other rank (MPI_Alltoall; NCCL builds it from grouped
 * send/recv). Two schedules, as in MPICH (Thakur, Rabenseifner & Gropp
 * 2005, section 4.4):
 *
 *   direct    every rank posts all N-1 sends at once (MPICH's isend/irecv
 *             algorithm for medium messages), in the order r+1, r+2, ...
 *             so that not everyone starts with the same receiver. The
 *             fabric sees all N(N-1) flows together: the per-rank link is
 *             the limit, T ~ a + (N-1)/N S/B on a non-blocking fabric, and
 *             the bisection is what an oversubscribed fabric shows.
 *   pairwise  N-1 rounds; in round k rank r sends to (r+k) mod N and
 *             receives from (r-k) mod N, and starts round k+1 when both
 *             are done (MPICH's long-message algorithm, MPI_Sendrecv per
 *             round). Each rank has one flow in and one out at a time:
 *             T = (N-1)(a + S/(N B)). Works for any N (the xor variant
 *             needs a power of two).
 *
 * `channels` splits every block over Ch independent copies of the
 * schedule; `chunks` cuts each block into P pieces sent back to back
 * (each waits for the previous to land), as NCCL's p2p moves a message
 * through its FIFO in chunkSize pieces. Chunk (h, s, q) is piece q of
 * channel h of the block member s sends: at the receiver it is "the data
 * from s addressed to me", which is what the reduction check verifies.
 */
#include "traces/coll.h"

#include <inttypes.h>

static uint32_t a2a_nchunks(const struct coll_ctx *c)
{
	uint64_t k = (uint64_t)c->channels * c->n * c->pieces;

	return k > UINT32_MAX / 2 ? 0 : (uint32_t)k;
}

static uint64_t a2a_nsteps(const struct coll_ctx *c)
{
	return (uint64_t)c->n * (c->n - 1) * c->channels * c->pieces;
}

static uint32_t a2a_chunk(const struct coll_ctx *c, uint32_t h, uint32_t s, uint32_t q)
{
	return (h * c->n + s) * c->pieces + q;
}

static int direct_lower(struct coll_ctx *c)
{
	const uint32_t N = c->n, P = c->pieces, Ch = c->channels;
	const uint64_t base = c->p->nsteps;

	/* piece-major: piece q of every message, then piece q + 1 */
	for (uint32_t q = 0; q < P; q++)
		for (uint32_t h = 0; h < Ch; h++)
			for (uint32_t s = 0; s < N; s++)
				for (uint32_t j = 1; j < N; j++) {
					coll_dep_reset(c);
					if (!q)
						coll_dep_entry(c, s);
					else
						coll_dep(c, (uint32_t)(base + (((uint64_t)(q - 1) * Ch + h) * N + s) *
								       (N - 1) + (j - 1)));
					if (coll_emit(c, s, (s + j) % N, q + 1, a2a_chunk(c, h, s, q), 1,
						      TD_COPY) == COLL_NONE)
						return -1;
				}
	return 0;
}

static int pairwise_lower(struct coll_ctx *c)
{
	const uint32_t N = c->n, P = c->pieces, Ch = c->channels;
	const uint64_t base = c->p->nsteps;
#define IDX(k, q, h, s) ((uint32_t)(base + ((((uint64_t)(k) - 1) * P + (q)) * Ch + (h)) * N + (s)))

	for (uint32_t k = 1; k < N; k++)
		for (uint32_t q = 0; q < P; q++)
			for (uint32_t h = 0; h < Ch; h++)
				for (uint32_t s = 0; s < N; s++) {
					coll_dep_reset(c);
					if (q) {
						coll_dep(c, IDX(k, q - 1, h, s));
					} else if (k == 1) {
						coll_dep_entry(c, s);
					} else {
						/* the previous round's send and receive, both landed */
						coll_dep(c, IDX(k - 1, P - 1, h, s));
						coll_dep(c, IDX(k - 1, P - 1, h, (s + N - (k - 1)) % N));
					}
					if (coll_emit(c, s, (s + k) % N, k, a2a_chunk(c, h, s, q), 1,
						      TD_COPY) == COLL_NONE)
						return -1;
				}
#undef IDX
	return 0;
}

static const char *direct_phase(const struct coll_ctx *c, uint32_t phase)
{
	(void)phase;
	return c->pieces > 1 ? "piece of every message" : "every message at once";
}

static const char *pairwise_phase(const struct coll_ctx *c, uint32_t phase)
{
	(void)c;
	(void)phase;
	return "round: send to r+k, receive from r-k";
}

static void direct_describe(const struct coll_ctx *c, FILE *out)
{
	char b[32];

	fprintf(out, "closed form: N(N-1) = %" PRIu64 " messages at once, each S/(N Ch) = %s (in %" PRIu32
		" piece(s), on each of %" PRIu32 " channel(s))\n", (uint64_t)c->n * (c->n - 1),
		coll_fmt_bytes(coll_run_bytes(c->bytes, c->nchunks, 0, c->pieces), b, sizeof(b)),
		c->pieces, c->channels);
	fprintf(out, "  T ~ a + (N-1)/N S/B on a non-blocking fabric; the bisection limits it otherwise\n");
}

static void pairwise_describe(const struct coll_ctx *c, FILE *out)
{
	char b[32];

	fprintf(out, "closed form: N-1 = %" PRIu32 " rounds, in each one send of S/(N Ch) = %s per rank and channel\n",
		c->n - 1, coll_fmt_bytes(coll_run_bytes(c->bytes, c->nchunks, 0, c->pieces), b,
					 sizeof(b)));
	fprintf(out, "  T = (N-1)(a + S/(N B))\n");
}

const struct coll_algo coll_direct_alltoall = {
	.name = "direct",
	.coll = TRACE_ALLTOALL,
	.algo = TRACE_ALGO_DIRECT,
	.pipelines = true,
	.multichannel = true,
	.nchunks = a2a_nchunks,
	.nsteps = a2a_nsteps,
	.lower = direct_lower,
	.phase_name = direct_phase,
	.describe = direct_describe,
};

const struct coll_algo coll_pairwise_alltoall = {
	.name = "pairwise exchange",
	.coll = TRACE_ALLTOALL,
	.algo = TRACE_ALGO_PAIRWISE,
	.dflt = true,
	.pipelines = true,
	.multichannel = true,
	.nchunks = a2a_nchunks,
	.nsteps = a2a_nsteps,
	.lower = pairwise_lower,
	.phase_name = pairwise_phase,
	.describe = pairwise_describe,
};
