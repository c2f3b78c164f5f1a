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

/*
 * Both schedules describe each step by itself (coll_algo.gen), so they
 * can be lowered lazily. direct, piece-major (piece q of every message,
 * then piece q + 1): step k = ((q Ch + h) N + s)(N - 1) + j - 1 sends
 * piece q of channel h from s to s + j, after the same message's piece
 * q - 1, one piece-round (Ch N (N-1) steps) earlier.
 */
static void direct_gen(const struct coll_ctx *c, uint64_t k, struct coll_gstep *g)
{
	const uint32_t N = c->n, Ch = c->channels;
	const uint64_t per = (uint64_t)Ch * N * (N - 1);
	const uint32_t q = (uint32_t)(k / per);
	const uint64_t m = k % per / (N - 1);	/* h N + s */
	const uint32_t h = (uint32_t)(m / N), s = (uint32_t)(m % N);
	const uint32_t j = (uint32_t)(k % (N - 1)) + 1;

	g->from = s;
	g->to = (s + j) % N;
	g->phase = q + 1;
	g->first = a2a_chunk(c, h, s, q);
	g->count = 1;
	g->data = TD_COPY;
	g->entry = !q;
	g->ndeps = q ? 1 : 0;
	g->deps[0] = k - per;
}

static uint64_t direct_reach(const struct coll_ctx *c)
{
	return (uint64_t)c->channels * c->n * (c->n - 1);
}

/*
 * pairwise, round-major: step k = (((r - 1) P + q) Ch + h) N + s is piece
 * q of round r from s to s + r, after its previous piece or, for the
 * first, after the previous round's send and receive of s have landed.
 */
static void pairwise_gen(const struct coll_ctx *c, uint64_t k, struct coll_gstep *g)
{
	const uint32_t N = c->n, P = c->pieces, Ch = c->channels;
	const uint32_t s = (uint32_t)(k % N), h = (uint32_t)(k / N % Ch);
	const uint32_t q = (uint32_t)(k / ((uint64_t)N * Ch) % P);
	const uint32_t r = (uint32_t)(k / ((uint64_t)N * Ch * P)) + 1;
#define IDX(r_, q_, s_) (((((uint64_t)(r_) - 1) * P + (q_)) * Ch + h) * N + (s_))

	g->from = s;
	g->to = (s + r) % N;
	g->phase = r;
	g->first = a2a_chunk(c, h, s, q);
	g->count = 1;
	g->data = TD_COPY;
	g->entry = !q && r == 1;
	g->ndeps = 0;
	if (q) {
		g->ndeps = 1;
		g->deps[0] = IDX(r, q - 1, s);
	} else if (r > 1) {
		/* the previous round's send and receive, both landed */
		g->ndeps = 2;
		g->deps[0] = IDX(r - 1, P - 1, s);
		g->deps[1] = IDX(r - 1, P - 1, (s + N - (r - 1)) % N);
	}
#undef IDX
}

/* A piece's next piece is Ch N steps on; a round's first piece waits for
 * the previous round's last, at most Ch N + N - 1 back. */
static uint64_t pairwise_reach(const struct coll_ctx *c)
{
	return (uint64_t)c->channels * c->n + c->n;
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
	.lower = coll_lower_gen,
	.gen = direct_gen,
	.reach = direct_reach,
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
	.lower = coll_lower_gen,
	.gen = pairwise_gen,
	.reach = pairwise_reach,
	.phase_name = pairwise_phase,
	.describe = pairwise_describe,
};
