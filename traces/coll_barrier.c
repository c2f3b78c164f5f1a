/* SPDX-License-Identifier: MIT */
/*
 * coll_barrier.c - the dissemination barrier (Hensgen, Finkel & Manber,
 * "Two algorithms for barrier synchronization", IJPP 1988; MPICH's
 * MPIR_Barrier_intra_dissemination).
 *
 * In round k (k = 0 .. ceil(log2 N)-1) rank i sends a 0-byte message to
 * rank i + 2^k (mod N) and waits for the one from i - 2^k. After round k a
 * rank knows that the 2^(k+1) ranks before it (itself included) have
 * arrived, so after ceil(log2 N) rounds every rank knows all have: no rank
 * leaves before every rank has entered. It works for any N, which the
 * butterfly barrier does not, in the same number of rounds:
 *
 *	T = ceil(log2 N) a
 *
 * a being the latency of a 0-byte message. A round waits for every earlier
 * message into its rank: what it passes on is everything the rank has
 * heard. The reduction check treats a message as carrying the set of
 * arrivals its sender knows (data TD_NONE: no bytes, only knowledge).
 */
#include "traces/coll.h"

#include <inttypes.h>

static uint32_t diss_nchunks(const struct coll_ctx *c)
{
	(void)c;
	return 1;
}

static uint64_t diss_nsteps(const struct coll_ctx *c)
{
	return (uint64_t)c->n * coll_clog2(c->n);
}

static int diss_lower(struct coll_ctx *c)
{
	const uint32_t N = c->n, R = coll_clog2(N);
	const uint64_t base = c->p->nsteps;

	for (uint32_t k = 0; k < R; k++)
		for (uint32_t i = 0; i < N; i++) {
			coll_dep_reset(c);
			coll_dep_entry(c, i);
			/* the messages rank i got in rounds 0 .. k-1 (from i - 2^j) */
			for (uint32_t j = 0; j < k; j++)
				coll_dep(c, (uint32_t)(base + (uint64_t)j * N +
						       (i + N - (1u << j) % N) % N));
			if (coll_emit(c, i, (i + (1u << k)) % N, k + 1, 0, 1, TD_NONE) == COLL_NONE)
				return -1;
		}
	return 0;
}

static const char *diss_phase(const struct coll_ctx *c, uint32_t phase)
{
	(void)c;
	(void)phase;
	return "tell rank i + 2^k";
}

static void diss_describe(const struct coll_ctx *c, FILE *out)
{
	fprintf(out, "closed form: ceil(log2 N) = %" PRIu32 " rounds of one 0-byte message per rank\n",
		coll_clog2(c->n));
	fprintf(out, "  T = ceil(log2 N) a\n");
}

const struct coll_algo coll_dissemination_barrier = {
	.name = "dissemination",
	.coll = TRACE_BARRIER,
	.algo = TRACE_ALGO_AUTO,
	.dflt = true,
	.nchunks = diss_nchunks,
	.nsteps = diss_nsteps,
	.lower = diss_lower,
	.phase_name = diss_phase,
	.describe = diss_describe,
};
