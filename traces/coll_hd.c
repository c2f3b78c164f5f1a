/* SPDX-License-Identifier: MIT */
/*
 * coll_hd.c - recursive halving-doubling allreduce (Rabenseifner's
 * algorithm), as MPICH runs it for long messages
 * (MPIR_Allreduce_intra_reduce_scatter_allgather; Thakur, Rabenseifner &
 * Gropp, "Optimization of Collective Communication Operations in MPICH",
 * IJHPCA 2005, section 4.5).
 *
 * For m = 2^L ranks: a reduce-scatter by recursive halving - in round j
 * (j = 0 .. L-1) rank v exchanges with v xor 2^j half of the part of the
 * buffer it is still responsible for, keeps the half its partner sent and
 * reduces it - leaves each rank with 1/m of the buffer complete; an
 * all-gather by recursive doubling (the same exchanges in reverse, each
 * rank sending everything it has) gives every rank all of it. Sizes halve
 * then double: S/2, S/4, ... S/m, then S/m, ... S/2, so
 *
 *	T = 2 L a + 2 (m-1)/m S/B
 *
 * the same bandwidth term as the ring with log2 latency terms instead of
 * N-1. The buffer is cut into m chunks and every exchange is one transfer
 * of a run of them.
 *
 * N not a power of two: with m the largest power of two below N and
 * r = N - m, the first 2r ranks pair up before the halving: each even rank
 * among them sends its whole buffer to the odd one next to it, which
 * reduces it, and sits out; after the doubling, the odd rank sends the
 * result back. Two more steps of S for those ranks: T = 2 L a + 2 (m-1)/m
 * S/B + 2 (a + S/B).
 *
 * Each exchange waits for the rank's previous send and receive (MPICH
 * calls MPI_Sendrecv round after round); `channels` runs independent
 * copies on Ch parts of the buffer. It does not pipeline (chunks = 1): its
 * rounds are whole-buffer exchanges.
 */
#include "traces/coll.h"

#include <inttypes.h>
#include <stdlib.h>

struct hd {
	uint32_t m, L, rem;
};

static struct hd hd_shape(uint32_t n)
{
	struct hd s;

	s.L = coll_flog2(n);
	s.m = 1u << s.L;
	s.rem = n - s.m;
	return s;
}

/* The member with new rank v (the ranks left after the pairing). */
static uint32_t hd_member(const struct hd *s, uint32_t v)
{
	return v < s->rem ? 2 * v + 1 : v + s->rem;
}

static uint32_t hd_nchunks(const struct coll_ctx *c)
{
	uint64_t k = (uint64_t)c->channels * hd_shape(c->n).m;

	return k > UINT32_MAX / 2 ? 0 : (uint32_t)k;
}

static uint64_t hd_nsteps(const struct coll_ctx *c)
{
	struct hd s = hd_shape(c->n);

	return (uint64_t)c->channels * (2ull * s.rem + 2ull * s.L * s.m);
}

static int hd_lower(struct coll_ctx *c)
{
	const struct hd s = hd_shape(c->n);
	const uint32_t pre = s.rem ? 1 : 0;
	/* per new rank: its range [lo, hi) after each halving round, its last
	 * send and receive, this round's send */
	uint32_t *lo = malloc(((size_t)s.m * (s.L + 1) + 1) * sizeof(*lo));
	uint32_t *hi = malloc(((size_t)s.m * (s.L + 1) + 1) * sizeof(*hi));
	uint32_t *lsend = malloc(s.m * sizeof(*lsend));
	uint32_t *lrecv = malloc(s.m * sizeof(*lrecv));
	uint32_t *now = malloc(s.m * sizeof(*now));
	int rc = -1;

	if (!lo || !hi || !lsend || !lrecv || !now) {
		sim_diag_set(c->d, c->op->file, c->op->line, 0, "out of memory");
		goto out;
	}
	if (c->n < 2) {
		rc = 0;
		goto out;
	}
	/* range[v][j]: what v is responsible for after j halvings */
#define LO(v, j) lo[(size_t)(v) * (s.L + 1) + (j)]
#define HI(v, j) hi[(size_t)(v) * (s.L + 1) + (j)]
	for (uint32_t v = 0; v < s.m; v++) {
		LO(v, 0) = 0;
		HI(v, 0) = s.m;
		for (uint32_t j = 0; j < s.L; j++) {
			uint32_t mid = (LO(v, j) + HI(v, j)) / 2, w = v ^ (1u << j);

			/* the lower rank of the pair keeps the lower half */
			LO(v, j + 1) = v < w ? LO(v, j) : mid;
			HI(v, j + 1) = v < w ? mid : HI(v, j);
		}
	}
	for (uint32_t h = 0; h < c->channels; h++) {
		uint32_t off = h * s.m;

		for (uint32_t v = 0; v < s.m; v++)
			lsend[v] = lrecv[v] = COLL_NONE;
		/* pairing: even rank 2i sends its whole buffer to 2i + 1 */
		for (uint32_t i = 0; i < s.rem; i++) {
			coll_dep_reset(c);
			coll_dep_entry(c, 2 * i);
			lrecv[i] = coll_emit(c, 2 * i, 2 * i + 1, 1, off, s.m, TD_REDUCE);
			if (lrecv[i] == COLL_NONE)
				goto out;
		}
		/* halving, then doubling: round j of 2L */
		for (uint32_t r = 0; r < 2 * s.L; r++) {
			bool halving = r < s.L;
			uint32_t bit = halving ? r : 2 * s.L - 1 - r;

			for (uint32_t v = 0; v < s.m; v++) {
				uint32_t w = v ^ (1u << bit), first, count;

				if (halving) {
					/* send the half w keeps */
					first = LO(w, bit + 1);
					count = HI(w, bit + 1) - first;
				} else {
					/* send everything v has: its range before halving round bit + 1 */
					first = LO(v, bit + 1);
					count = HI(v, bit + 1) - first;
				}
				coll_dep_reset(c);
				if (lsend[v] == COLL_NONE)
					coll_dep_entry(c, hd_member(&s, v));
				coll_dep(c, lsend[v]);
				coll_dep(c, lrecv[v]);
				now[v] = coll_emit(c, hd_member(&s, v), hd_member(&s, w), pre + r + 1,
						   off + first, count, halving ? TD_REDUCE : TD_COPY);
				if (now[v] == COLL_NONE)
					goto out;
			}
			for (uint32_t v = 0; v < s.m; v++) {
				lsend[v] = now[v];
				lrecv[v ^ (1u << bit)] = now[v];
			}
		}
		/* the odd rank of each pair returns the result */
		for (uint32_t i = 0; i < s.rem; i++) {
			coll_dep_reset(c);
			coll_dep(c, lsend[i]);
			coll_dep(c, lrecv[i]);
			if (coll_emit(c, 2 * i + 1, 2 * i, pre + 2 * s.L + 1, off, s.m, TD_COPY) ==
			    COLL_NONE)
				goto out;
		}
	}
#undef LO
#undef HI
	rc = 0;
out:
	free(lo);
	free(hi);
	free(lsend);
	free(lrecv);
	free(now);
	return rc;
}

static const char *hd_phase(const struct coll_ctx *c, uint32_t phase)
{
	struct hd s = hd_shape(c->n);
	uint32_t pre = s.rem ? 1 : 0;

	if (pre && phase == 1)
		return "pairing: the extra ranks hand in their buffer";
	if (phase <= pre + s.L)
		return "reduce-scatter by recursive halving";
	if (phase <= pre + 2 * s.L)
		return "all-gather by recursive doubling";
	return "the extra ranks get the result";
}

static void hd_describe(const struct coll_ctx *c, FILE *out)
{
	struct hd s = hd_shape(c->n);
	char b[32], e[32];

	fprintf(out, "closed form: m = %" PRIu32 " ranks halve then double: 2 log2 m = %" PRIu32
		" steps per rank, of S/(2 Ch) .. S/(m Ch) = %s .. %s, then back up\n", s.m, 2 * s.L,
		coll_fmt_bytes(coll_run_bytes(c->bytes, c->nchunks, 0, s.m / 2 ? s.m / 2 : 1), b,
			       sizeof(b)),
		coll_fmt_bytes(coll_run_bytes(c->bytes, c->nchunks, 0, 1), e, sizeof(e)));
	fprintf(out, "  T = 2 log2(m) a + 2 (m-1)/m S/B");
	if (s.rem)
		fprintf(out, " + 2 (a + S/B): %" PRIu32 " extra ranks fold into partners first (N = %"
			PRIu32 " is not a power of two)", s.rem, c->n);
	fprintf(out, "\n");
}

const struct coll_algo coll_hd_allreduce = {
	.name = "recursive halving-doubling",
	.coll = TRACE_ALLREDUCE,
	.algo = TRACE_ALGO_HD,
	.pipelines = false,
	.multichannel = true,
	.runs = true,
	.nchunks = hd_nchunks,
	.nsteps = hd_nsteps,
	.lower = hd_lower,
	.phase_name = hd_phase,
	.describe = hd_describe,
};
