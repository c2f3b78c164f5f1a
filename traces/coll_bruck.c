/* SPDX-License-Identifier: MIT */
/*
 * coll_bruck.c - Bruck's all-gather for small messages (Bruck, Ho, Kipnis,
 * Upfal & Weathersby, "Efficient Algorithms for All-to-All Communications
 * in Multiport Message-Passing Systems", IEEE TPDS 1997; MPICH's allgather
 * for short messages on non-power-of-two N, Thakur, Rabenseifner & Gropp
 * 2005, section 4.1).
 *
 * Rank i starts with its own block. In round k (k = 0 .. ceil(log2 N)-1)
 * it sends every block it has - blocks i, i+1, ..., i + 2^k - 1 (mod N),
 * or the N - 2^k that are still missing in the last round - to rank
 * i - 2^k, and receives as many from rank i + 2^k. After ceil(log2 N)
 * rounds every rank has all N blocks (a local rotation puts them in
 * place; it costs no communication). Each rank sends N-1 blocks in all:
 *
 *	T = ceil(log2 N) a + (N-1)/N S/B
 *
 * which beats the ring's (N-1) a when a dominates: small messages. A round
 * forwards what earlier rounds brought, so it waits for every earlier
 * receive of its rank. Steps carry runs of blocks (chunk i is rank i's
 * block; a run may wrap past the last rank). One channel, no pipelining:
 * it is the small-message algorithm.
 */
#include "traces/coll.h"

#include <inttypes.h>

static uint32_t bruck_nchunks(const struct coll_ctx *c)
{
	return c->n;
}

static uint64_t bruck_nsteps(const struct coll_ctx *c)
{
	return (uint64_t)c->n * coll_clog2(c->n);
}

static int bruck_lower(struct coll_ctx *c)
{
	const uint32_t N = c->n, R = coll_clog2(N);
	const uint64_t base = c->p->nsteps;

	for (uint32_t k = 0; k < R; k++) {
		uint32_t d = 1u << k, cnt = d < N - d ? d : N - d;

		for (uint32_t i = 0; i < N; i++) {
			coll_dep_reset(c);
			coll_dep_entry(c, i);
			/* what rank i received in rounds 0 .. k-1 (from i + 2^j) */
			for (uint32_t j = 0; j < k; j++)
				coll_dep(c, (uint32_t)(base + (uint64_t)j * N + (i + (1u << j)) % N));
			if (coll_emit(c, i, (i + N - d % N) % N, k + 1, i, cnt, TD_COPY) == COLL_NONE)
				return -1;
		}
	}
	return 0;
}

static const char *bruck_phase(const struct coll_ctx *c, uint32_t phase)
{
	(void)c;
	(void)phase;
	return "send all blocks held to rank i - 2^k";
}

static void bruck_describe(const struct coll_ctx *c, FILE *out)
{
	char b[32];

	fprintf(out, "closed form: ceil(log2 N) = %" PRIu32 " rounds; round k sends min(2^k, N - 2^k) blocks of S/N = %s\n",
		coll_clog2(c->n), coll_fmt_bytes(coll_run_bytes(c->bytes, c->nchunks, 0, 1), b, sizeof(b)));
	fprintf(out, "  T = ceil(log2 N) a + (N-1)/N S/B\n");
}

const struct coll_algo coll_bruck_allgather = {
	.name = "bruck",
	.coll = TRACE_ALLGATHER,
	.algo = TRACE_ALGO_BRUCK,
	.runs = true,
	.nchunks = bruck_nchunks,
	.nsteps = bruck_nsteps,
	.lower = bruck_lower,
	.phase_name = bruck_phase,
	.describe = bruck_describe,
};
