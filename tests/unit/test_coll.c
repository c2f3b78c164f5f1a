/* SPDX-License-Identifier: MIT */
/*
 * test_coll.c - collective algorithms and lowering: every algorithm passes
 * the reduction check for every member count tried (powers of two or not,
 * 1 and 2 ranks, with chunks and channels); broken programs (a step
 * dropped, duplicated, a dependency or a byte count wrong) fail it, so the
 * check can fail; step counts and sizes match the closed forms of
 * docs/collectives.md; --explain prints what a student expects; trace_lower
 * turns sends, recvs, computes and collectives into steps that wait for
 * the right things; a 128-rank ring allreduce with 8 channels x 4 chunks
 * lowers quickly.
 */
#include <CUnit/CUnit.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/unit/test_main.h"
#include "traces/coll.h"
#include "traces/trace.h"

static const uint32_t sizes_n[] = { 1, 2, 3, 4, 5, 7, 8, 13, 16, 64, 128 };

struct variant {
	enum trace_coll coll;
	enum trace_algo algo;
};

/*
 * Every supported (collective, algorithm) pair, read from the registry
 * (coll_algo_find over every collective and algorithm the enums name), so
 * a new algorithm is checked the day it is added. "auto" is an alias of
 * one of them; it stands alone only for a collective with no other (the
 * barrier).
 */
static struct variant variants[TRACE_NCOLL * TRACE_NALGO];
static size_t nvariants;

static void variants_init(void)
{
	if (nvariants)
		return;
	for (int c = 0; c < TRACE_NCOLL; c++) {
		size_t first = nvariants;

		for (int a = TRACE_ALGO_AUTO + 1; a < TRACE_NALGO; a++)
			if (coll_algo_find((enum trace_coll)c, (enum trace_algo)a))
				variants[nvariants++] = (struct variant){ c, a };
		if (nvariants == first && coll_algo_find((enum trace_coll)c, TRACE_ALGO_AUTO))
			variants[nvariants++] = (struct variant){ c, TRACE_ALGO_AUTO };
	}
}

/*
 * A SHARP tree for collnet, as the aggregation manager would give a fat
 * tree of leaves of 4 hosts: rank r on node r, the aggregation node of
 * leaf r / 4 above it, leaves in groups of 4 under a middle node, every
 * middle node under one root (3 levels; a small job's tree is cut to its
 * lowest node covering all members).
 */
static void give_tree(struct trace *t)
{
	int32_t n = t->nranks, nl = (n + 3) / 4, nm = (nl + 3) / 4, na = nl + nm + 1;
	int32_t *parent = malloc((size_t)na * sizeof(*parent));
	int32_t *ra = malloc((size_t)n * sizeof(*ra));
	int *node = malloc((size_t)na * sizeof(*node));
	struct sim_diag d;

	CU_ASSERT_FATAL(parent && ra && node);
	free(t->rank_node);
	t->rank_node = malloc((size_t)n * sizeof(*t->rank_node));
	CU_ASSERT_FATAL(t->rank_node != NULL);
	for (int32_t r = 0; r < n; r++) {
		t->rank_node[r] = r;
		ra[r] = r / 4;
	}
	for (int32_t a = 0; a < na; a++) {
		node[a] = n + a;
		parent[a] = a < nl ? nl + a / 4 : a < nl + nm ? na - 1 : -1;
	}
	CU_ASSERT_FATAL(trace_set_agg(t, na, node, parent, ra, &d) == 0);
	free(parent);
	free(ra);
	free(node);
}

/* For nvls: every rank a GPU of one NVLink domain, and its NVSwitch
 * endpoint (after the SHARP tree's). */
static void give_domain(struct trace *t)
{
	int32_t *g = calloc((size_t)t->nranks, sizeof(*g));
	struct sim_diag d;

	CU_ASSERT_FATAL(g != NULL);
	CU_ASSERT_FATAL(trace_set_groups(t, g, 0, 0, &d) == 0);
	CU_ASSERT_FATAL(trace_set_nvs(t, &d) == 0);
	free(g);
}

/* A trace of nranks ranks holding one collective (op 0) over all of them
 * (and a SHARP tree, for collnet; an NVLink domain, for nvls). */
static void one_coll(struct trace *t, uint32_t nranks, enum trace_coll coll,
		     enum trace_algo algo, uint64_t bytes, uint32_t chunks, uint32_t channels,
		     int32_t root)
{
	struct trace_op o = {
		.kind = TRACE_COLL, .rank = -1, .coll = coll, .algo = algo, .comm = 0,
		.bytes = coll == TRACE_BARRIER ? 0 : bytes, .root = root, .chunks = chunks,
		.channels = channels, .file = "test", .line = 1,
	};
	struct sim_diag d;

	trace_init(t);
	CU_ASSERT_FATAL(trace_set_ranks(t, (int32_t)nranks, &d) == 0);
	CU_ASSERT_FATAL(trace_add_op(t, &o, NULL, 0, &d) == 0);
	give_tree(t);
	if (trace_algo_nvls(algo))
		give_domain(t);
}

/* Lower t into p as the caller set it up (lazy or not). */
static int lower_ok_lazy(const struct trace *t, struct trace_program *p)
{
	struct sim_diag d;
	int rc;

	sim_diag_clear(&d);
	rc = trace_lower(t, p, &d);
	if (rc)
		fprintf(stderr, "\ntrace_lower: %s\n", d.msg);
	return rc;
}

static int lower_ok(const struct trace *t, struct trace_program *p)
{
	trace_program_init(p, t);
	return lower_ok_lazy(t, p);
}

static int check_ok(const struct trace_program *p, uint32_t op)
{
	struct sim_diag d;
	int rc;

	sim_diag_clear(&d);
	rc = coll_check(p, op, &d);
	if (rc)
		fprintf(stderr, "\ncoll_check: %s\n", d.msg);
	return rc;
}

/* ---- every algorithm is correct ---------------------------------------------- */

struct opts {
	uint32_t chunks, channels;
	uint64_t bytes;
};

static void check_variant(const struct variant *v, uint32_t n, const struct opts *o)
{
	const struct coll_algo *a = coll_algo_find(v->coll, v->algo);
	struct trace t;
	struct trace_program p;
	uint32_t chunks = a->pipelines ? o->chunks : 1, channels = a->multichannel ? o->channels : 1;
	int32_t root = (int32_t)(n / 2);	/* not rank 0: the rotation is exercised */

	one_coll(&t, n, v->coll, v->algo, o->bytes, chunks, channels, root);
	if (lower_ok(&t, &p) || check_ok(&p, 0)) {
		fprintf(stderr, "  %s %s N=%" PRIu32 " chunks=%" PRIu32 " channels=%" PRIu32
			" S=%" PRIu64 "\n", trace_coll_names[v->coll], trace_algo_names[v->algo], n,
			chunks, channels, o->bytes);
		CU_FAIL("lowering or reduction check failed");
	}
	trace_program_free(&p);
	trace_free(&t);
}

static void test_all_correct(void)
{
	static const struct opts opts[] = {
		{ 1, 1, 64u << 20 },
		{ 1, 1, 1000003 },	/* a prime: chunks of unequal sizes */
		{ 1, 1, 1 },		/* most chunks empty */
		{ 3, 1, 1000003 },
		{ 1, 2, 1000003 },
		{ 2, 3, 64u << 20 },
	};
	bool has[TRACE_NCOLL] = { false };

	variants_init();
	/* the registry names an algorithm for every collective */
	for (size_t i = 0; i < nvariants; i++)
		has[variants[i].coll] = true;
	for (int c = 0; c < TRACE_NCOLL; c++)
		CU_ASSERT(has[c]);
	CU_ASSERT(nvariants >= TRACE_NCOLL);
	for (size_t i = 0; i < nvariants; i++)
		for (size_t j = 0; j < SIM_ARRAY_SIZE(sizes_n); j++)
			for (size_t k = 0; k < SIM_ARRAY_SIZE(opts); k++) {
				uint32_t n = sizes_n[j];

				/* the largest N only with the plain options: the
				 * variants are covered at smaller N */
				if (n >= 64 && k > 1)
					continue;
				check_variant(&variants[i], n, &opts[k]);
			}
}

/* A sub-communicator in an unusual order: members are what the ring or
 * tree follows, and ranks outside take no part. */
static void test_sub_communicator(void)
{
	static const int32_t members[] = { 6, 2, 9, 4, 0 };
	struct trace t;
	struct trace_program p;
	struct sim_diag d;

	variants_init();
	for (size_t i = 0; i < nvariants; i++) {
		struct trace_op o = {
			.kind = TRACE_COLL, .rank = -1, .coll = variants[i].coll,
			.algo = variants[i].algo, .bytes = 777777, .root = 9, .chunks = 1,
			.channels = 1, .file = "test", .line = 1,
		};
		int comm;

		trace_init(&t);
		CU_ASSERT_FATAL(trace_set_ranks(&t, 12, &d) == 0);
		give_tree(&t);
		if (trace_algo_nvls(variants[i].algo))
			give_domain(&t);
		comm = trace_add_comm(&t, members, SIM_ARRAY_SIZE(members), &d);
		CU_ASSERT_FATAL(comm == 1);
		o.comm = (uint32_t)comm;
		CU_ASSERT_FATAL(trace_add_op(&t, &o, NULL, 0, &d) == 0);
		CU_ASSERT_EQUAL(lower_ok(&t, &p), 0);
		CU_ASSERT_EQUAL(check_ok(&p, 0), 0);
		for (uint32_t s = 0; s < p.nsteps; s++) {
			bool in = false, in2 = false;

			/* collnet's aggregation nodes are endpoints >= nranks */
			in = p.steps[s].rank >= t.nranks;
			in2 = p.steps[s].peer >= t.nranks;
			for (size_t m = 0; m < SIM_ARRAY_SIZE(members); m++) {
				in |= p.steps[s].rank == members[m];
				in2 |= p.steps[s].peer == members[m];
			}
			CU_ASSERT(in && in2);
		}
		trace_program_free(&p);
		trace_free(&t);
	}
}

/* ---- the check can fail --------------------------------------------------------- */

/* A copy of p with step k dropped (ops waiting for it wait for what it
 * waited for) or duplicated (the copy right after it, same deps). */
static void mutate(const struct trace_program *p, struct trace_program *q, uint32_t k, bool dup)
{
	uint32_t *deps = malloc((p->ndeps + 64) * sizeof(*deps));
	uint32_t map_shift = dup ? 1 : 0;

	trace_program_init(q, p->trace);
	CU_ASSERT_FATAL(trace_program_ops_alloc(q) == 0);
	for (uint32_t s = 0; s < p->nsteps; s++) {
		const struct trace_step *st = &p->steps[s];
		uint32_t nd = 0;

		if (!dup && s == k)
			continue;
		for (uint32_t j = 0; j < st->ndeps; j++) {
			uint32_t x = p->deps[st->dep_off + j];

			if (!dup && x == k) {
				const struct trace_step *sk = &p->steps[k];

				for (uint32_t i = 0; i < sk->ndeps; i++) {
					uint32_t y = p->deps[sk->dep_off + i];

					deps[nd++] = y > k ? y - 1 : y;
				}
			} else if (dup) {
				deps[nd++] = x > k ? x + map_shift : x;
			} else {
				deps[nd++] = x > k ? x - 1 : x;
			}
		}
		CU_ASSERT_FATAL(trace_program_add(q, st, deps, nd) >= 0);
		if (dup && s == k)
			CU_ASSERT_FATAL(trace_program_add(q, st, deps, nd) >= 0);
	}
	for (size_t i = 0; i < p->trace->nops; i++) {
		q->op_first[i] = p->op_first[i];
		q->op_nsteps[i] = p->op_nsteps[i];
		q->op_nchunks[i] = p->op_nchunks[i];
	}
	q->op_nsteps[0] += dup ? 1 : -1;	/* the tests hold one op, at step 0 */
	free(deps);
}

/* Step k is an NVSwitch's copy back to the GPU that stored the chunk in
 * it (NVLS's multicast reaches the writer too): it carries nothing the
 * writer lacks, so dropping it cannot fail the check - it is there for
 * the bytes on the writer's port (coll_check.c). */
static bool nvls_echo(const struct trace_program *p, uint32_t k)
{
	const struct trace_step *st = &p->steps[k];

	if (!trace_is_nvs(p->trace, st->rank))
		return false;
	for (uint32_t s = 0; s < k; s++)
		if (p->steps[s].peer == st->rank && p->steps[s].chunk == st->chunk &&
		    p->steps[s].data == TD_COPY)
			return p->steps[s].rank == st->peer;
	return false;
}

static void test_broken_fail(void)
{
	const uint32_t ns[] = { 2, 5, 8 };
	struct sim_diag d;

	variants_init();
	for (size_t i = 0; i < nvariants; i++)
		for (size_t j = 0; j < SIM_ARRAY_SIZE(ns); j++) {
			const struct coll_algo *a = coll_algo_find(variants[i].coll, variants[i].algo);
			struct trace t;
			struct trace_program p, q;
			uint32_t missed = 0;

			one_coll(&t, ns[j], variants[i].coll, variants[i].algo, 1u << 20,
				 a->pipelines ? 2 : 1, a->multichannel ? 2 : 1, 1);
			CU_ASSERT_FATAL(lower_ok(&t, &p) == 0);
			CU_ASSERT_FATAL(check_ok(&p, 0) == 0);
			/* every single step is needed (but NVLS's echoes), and
			 * none may come twice */
			for (uint32_t k = 0; k < p.nsteps; k++)
				for (int dup = 0; dup < 2; dup++) {
					if (!dup && nvls_echo(&p, k))
						continue;
					mutate(&p, &q, k, dup);
					if (coll_check(&q, 0, &d) == 0) {
						fprintf(stderr, "\n%s %s N=%" PRIu32 ": %s step %" PRIu32
							" passes\n", trace_coll_names[variants[i].coll],
							a->name, ns[j], dup ? "duplicating" : "dropping", k);
						missed++;
					}
					trace_program_free(&q);
				}
			CU_ASSERT_EQUAL(missed, 0);
			trace_program_free(&p);
			trace_free(&t);
		}
}

/* Other ways to break a program: the check names what is wrong. */
static void test_broken_messages(void)
{
	struct trace t;
	struct trace_program p;
	struct sim_diag d;
	uint32_t s;

	one_coll(&t, 4, TRACE_ALLREDUCE, TRACE_ALGO_RING, 4u << 20, 1, 1, 0);
	CU_ASSERT_FATAL(lower_ok(&t, &p) == 0);
	CU_ASSERT_FATAL(p.nsteps == 24);

	/* a step that forwards data without waiting for it: step 4 (round 1,
	 * rank 0) loses its dependency on step 3 (round 0, rank 3 -> 0) */
	s = 4;
	CU_ASSERT_EQUAL(p.steps[s].ndeps, 2);
	CU_ASSERT_EQUAL(p.deps[p.steps[s].dep_off], 0);		/* its own last step */
	CU_ASSERT_EQUAL(p.deps[p.steps[s].dep_off + 1], 3);	/* its data */
	p.deps[p.steps[s].dep_off + 1] = 0;
	CU_ASSERT_NOT_EQUAL(coll_check(&p, 0, &d), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "step 4 (rank 0 -> rank 1, chunk 2) does not wait for step 3, which brought that chunk to rank 0"));
	p.deps[p.steps[s].dep_off + 1] = 3;
	CU_ASSERT_EQUAL(check_ok(&p, 0), 0);

	/* a byte count that is not its chunk's */
	p.steps[5].bytes++;
	CU_ASSERT_NOT_EQUAL(coll_check(&p, 0, &d), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "carries 1048577 bytes"));
	p.steps[5].bytes--;

	/* a copy where a reduction belongs: rank 1 then misses contributions */
	p.steps[1].data = TD_COPY;
	CU_ASSERT_NOT_EQUAL(coll_check(&p, 0, &d), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "lacks the contribution of rank"));
	p.steps[1].data = TD_REDUCE;

	/* step 0 carries the chunk step 1 forwards at the same time */
	p.steps[0].chunk = p.steps[1].chunk;
	CU_ASSERT_NOT_EQUAL(coll_check(&p, 0, &d), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "step 1 (rank 1 -> rank 2, chunk 0) does not wait for step 0"));
	p.steps[0].chunk = 3;

	/* a transfer to itself, and to a rank that does not exist */
	p.steps[2].peer = 2;
	CU_ASSERT_NOT_EQUAL(coll_check(&p, 0, &d), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "is not between two members"));
	p.steps[2].peer = 7;
	CU_ASSERT_NOT_EQUAL(coll_check(&p, 0, &d), 0);
	/* sent elsewhere, rank 2's share still reaches everyone (through
	 * rank 0, which forwards it in the next round): not an error */
	p.steps[2].peer = 0;
	CU_ASSERT_EQUAL(check_ok(&p, 0), 0);
	p.steps[2].peer = 3;
	CU_ASSERT_EQUAL(check_ok(&p, 0), 0);
	trace_program_free(&p);
	trace_free(&t);
}

/* ---- closed forms ---------------------------------------------------------------- */

/* Transfers sent by each rank, and the bytes of each, for op 0. */
static void per_rank(const struct trace_program *p, uint32_t n, uint32_t *cnt)
{
	memset(cnt, 0, n * sizeof(*cnt));
	for (uint32_t s = 0; s < p->nsteps; s++)
		cnt[p->steps[s].rank]++;
}

static void test_ring_closed_form(void)
{
	const uint32_t ns[] = { 2, 3, 8, 13 };
	uint32_t cnt[16];

	for (size_t j = 0; j < SIM_ARRAY_SIZE(ns); j++) {
		uint32_t n = ns[j];
		uint64_t S = (uint64_t)n * 3 * (1u << 20);	/* divisible by N */
		struct trace t;
		struct trace_program p;

		one_coll(&t, n, TRACE_ALLREDUCE, TRACE_ALGO_RING, S, 1, 1, 0);
		CU_ASSERT_FATAL(lower_ok(&t, &p) == 0);
		/* 2(N-1) steps of S/N per rank, one per phase */
		CU_ASSERT_EQUAL(p.nsteps, 2 * (n - 1) * n);
		per_rank(&p, n, cnt);
		for (uint32_t r = 0; r < n; r++)
			CU_ASSERT_EQUAL(cnt[r], 2 * (n - 1));
		for (uint32_t s = 0; s < p.nsteps; s++) {
			CU_ASSERT_EQUAL(p.steps[s].bytes, S / n);
			CU_ASSERT_EQUAL(p.steps[s].peer, (p.steps[s].rank + 1) % (int32_t)n);
			CU_ASSERT_EQUAL(p.steps[s].phase, s / n + 1);
			CU_ASSERT_EQUAL(p.steps[s].data, p.steps[s].phase < n ? TD_REDUCE : TD_COPY);
		}
		trace_program_free(&p);
		trace_free(&t);

		/* channels x chunks: the same rounds in Ch P flows of S/(N Ch P) */
		one_coll(&t, n, TRACE_ALLREDUCE, TRACE_ALGO_RING, S * 8, 4, 2, 0);
		CU_ASSERT_FATAL(lower_ok(&t, &p) == 0);
		CU_ASSERT_EQUAL(p.nsteps, 2 * (n - 1) * n * 8);
		CU_ASSERT_EQUAL(p.op_nchunks[0], n * 8);
		for (uint32_t s = 0; s < p.nsteps; s++)
			CU_ASSERT_EQUAL(p.steps[s].bytes, S / n);
		trace_program_free(&p);
		trace_free(&t);

		/* reducescatter and allgather: N-1 steps of S/N each */
		one_coll(&t, n, TRACE_REDUCESCATTER, TRACE_ALGO_AUTO, S, 1, 1, 0);
		CU_ASSERT_FATAL(lower_ok(&t, &p) == 0);
		CU_ASSERT_EQUAL(p.nsteps, (n - 1) * n);
		trace_program_free(&p);
		trace_free(&t);
		one_coll(&t, n, TRACE_ALLGATHER, TRACE_ALGO_AUTO, S, 1, 1, 0);
		CU_ASSERT_FATAL(lower_ok(&t, &p) == 0);
		CU_ASSERT_EQUAL(p.nsteps, (n - 1) * n);
		CU_ASSERT_EQUAL(p.steps[0].bytes, S / n);
		trace_program_free(&p);
		trace_free(&t);
	}
}

static void test_hd_closed_form(void)
{
	const uint64_t S = 64u << 20;
	uint32_t cnt[16];
	struct trace t;
	struct trace_program p;

	/* a power of two: 2 log2 N steps per rank, S/2, S/4, S/8, S/8, S/4, S/2 */
	one_coll(&t, 8, TRACE_ALLREDUCE, TRACE_ALGO_HD, S, 1, 1, 0);
	CU_ASSERT_FATAL(lower_ok(&t, &p) == 0);
	CU_ASSERT_EQUAL(p.nsteps, 6 * 8);
	per_rank(&p, 8, cnt);
	for (uint32_t r = 0; r < 8; r++)
		CU_ASSERT_EQUAL(cnt[r], 6);
	for (uint32_t s = 0; s < p.nsteps; s++) {
		static const uint32_t div[] = { 2, 4, 8, 8, 4, 2 };
		uint32_t ph = p.steps[s].phase;

		CU_ASSERT_FATAL(ph >= 1 && ph <= 6);
		CU_ASSERT_EQUAL(p.steps[s].bytes, S / div[ph - 1]);
		/* partners at distance 1, 2, 4, then 4, 2, 1 */
		CU_ASSERT_EQUAL(p.steps[s].rank ^ p.steps[s].peer,
				ph <= 3 ? 1 << (ph - 1) : 1 << (6 - ph));
	}
	trace_program_free(&p);
	trace_free(&t);

	/* 13 = 8 + 5: ranks 0, 2, 4, 6, 8 fold into 1, 3, 5, 7, 9 (S each way) */
	one_coll(&t, 13, TRACE_ALLREDUCE, TRACE_ALGO_HD, S, 1, 1, 0);
	CU_ASSERT_FATAL(lower_ok(&t, &p) == 0);
	CU_ASSERT_EQUAL(p.nsteps, 2 * 5 + 6 * 8);
	per_rank(&p, 13, cnt);
	for (uint32_t r = 0; r < 13; r++)
		CU_ASSERT_EQUAL(cnt[r], r < 10 && r % 2 == 0 ? 1 : 6 + (r < 10));
	for (uint32_t s = 0; s < p.nsteps; s++)
		if (p.steps[s].phase == 1 || p.steps[s].phase == 8)
			CU_ASSERT_EQUAL(p.steps[s].bytes, S);
	trace_program_free(&p);
	trace_free(&t);
}

static void test_alltoall_closed_form(void)
{
	const uint32_t n = 7;
	const uint64_t S = 7 * 1000;
	uint32_t seen[7][7];
	struct trace t;
	struct trace_program p;

	/* pairwise: N-1 rounds, round k: r -> r + k, S/N each */
	one_coll(&t, n, TRACE_ALLTOALL, TRACE_ALGO_PAIRWISE, S, 1, 1, 0);
	CU_ASSERT_FATAL(lower_ok(&t, &p) == 0);
	CU_ASSERT_EQUAL(p.nsteps, (n - 1) * n);
	memset(seen, 0, sizeof(seen));
	for (uint32_t s = 0; s < p.nsteps; s++) {
		const struct trace_step *st = &p.steps[s];

		CU_ASSERT_EQUAL((uint32_t)(st->peer - st->rank + (int32_t)n) % n, st->phase);
		CU_ASSERT_EQUAL(st->bytes, S / n);
		seen[st->rank][st->peer]++;
	}
	for (uint32_t a = 0; a < n; a++)
		for (uint32_t b = 0; b < n; b++)
			CU_ASSERT_EQUAL(seen[a][b], a != b);
	trace_program_free(&p);
	trace_free(&t);

	/* direct: the same messages, all in one phase */
	one_coll(&t, n, TRACE_ALLTOALL, TRACE_ALGO_DIRECT, S, 1, 1, 0);
	CU_ASSERT_FATAL(lower_ok(&t, &p) == 0);
	CU_ASSERT_EQUAL(p.nsteps, (n - 1) * n);
	for (uint32_t s = 0; s < p.nsteps; s++)
		CU_ASSERT_EQUAL(p.steps[s].phase, 1);
	trace_program_free(&p);
	trace_free(&t);
}

static void test_log_rounds(void)
{
	const uint32_t ns[] = { 2, 3, 5, 8, 13, 64, 100 };

	for (size_t j = 0; j < SIM_ARRAY_SIZE(ns); j++) {
		uint32_t n = ns[j], rounds = coll_clog2(n), maxph = 0;
		uint64_t S = (uint64_t)n * 64, per[128] = { 0 };
		struct trace t;
		struct trace_program p;

		/* Bruck: ceil(log2 N) rounds, each rank sends N-1 blocks in all */
		one_coll(&t, n, TRACE_ALLGATHER, TRACE_ALGO_BRUCK, S, 1, 1, 0);
		CU_ASSERT_FATAL(lower_ok(&t, &p) == 0);
		CU_ASSERT_EQUAL(p.nsteps, (uint64_t)n * rounds);
		for (uint32_t s = 0; s < p.nsteps; s++) {
			uint32_t k = p.steps[s].phase - 1, d = 1u << k;

			CU_ASSERT_EQUAL(p.steps[s].bytes, 64ull * (d < n - d ? d : n - d));
			per[p.steps[s].rank] += p.steps[s].bytes;
			if (p.steps[s].phase > maxph)
				maxph = p.steps[s].phase;
		}
		CU_ASSERT_EQUAL(maxph, rounds);
		for (uint32_t r = 0; r < n; r++)
			CU_ASSERT_EQUAL(per[r], S - S / n);
		trace_program_free(&p);
		trace_free(&t);

		/* dissemination barrier: ceil(log2 N) rounds of 0-byte messages */
		one_coll(&t, n, TRACE_BARRIER, TRACE_ALGO_AUTO, 0, 1, 1, 0);
		CU_ASSERT_FATAL(lower_ok(&t, &p) == 0);
		CU_ASSERT_EQUAL(p.nsteps, (uint64_t)n * rounds);
		for (uint32_t s = 0; s < p.nsteps; s++) {
			CU_ASSERT_EQUAL(p.steps[s].bytes, 0);
			CU_ASSERT_EQUAL(p.steps[s].kind, TS_XFER);
		}
		trace_program_free(&p);
		trace_free(&t);
	}
}

/* The double binary tree: each tree spans the ranks (N-1 edges up and
 * down), and - its point - a rank receives from children in at most one
 * of the two trees when N is even (for odd N NCCL shifts instead of
 * mirroring, which leaves at most one rank interior in both). */
static void test_double_tree(void)
{
	const uint32_t ns[] = { 2, 4, 8, 13, 16, 64, 128 };

	for (size_t j = 0; j < SIM_ARRAY_SIZE(ns); j++) {
		uint32_t n = ns[j], both = 0;
		uint8_t interior[128][2];
		struct trace t;
		struct trace_program p;

		memset(interior, 0, sizeof(interior));
		one_coll(&t, n, TRACE_ALLREDUCE, TRACE_ALGO_TREE, 1u << 20, 1, 1, 0);
		CU_ASSERT_FATAL(lower_ok(&t, &p) == 0);
		CU_ASSERT_EQUAL(p.nsteps, 4 * (n - 1));
		for (uint32_t s = 0; s < p.nsteps; s++) {
			const struct trace_step *st = &p.steps[s];

			CU_ASSERT_EQUAL(st->bytes, (1u << 19));
			if (st->data == TD_REDUCE)
				interior[st->peer][st->chunk] = 1;
		}
		for (uint32_t r = 0; r < n; r++)
			both += interior[r][0] && interior[r][1];
		CU_ASSERT(n % 2 == 0 ? both == 0 : both <= 1);
		trace_program_free(&p);
		trace_free(&t);
	}
}

/*
 * The tree's slots: with 20 pieces, piece q >= 8 of a flow waits for its
 * receiver to have passed on piece q - 8 of the same flow (up to its
 * parent; at the root, down to the sender; or down to the receiver's first
 * child), as NCCL's NCCL_STEPS slots a connection hold a sender back.
 */
static void test_tree_window(void)
{
	struct trace t;
	struct trace_program p;
	const uint32_t n = 8, P = 20;
	uint32_t windowed = 0;

	one_coll(&t, n, TRACE_ALLREDUCE, TRACE_ALGO_TREE, 20u << 20, P, 1, 0);
	CU_ASSERT_FATAL(lower_ok(&t, &p) == 0);
	CU_ASSERT_EQUAL(check_ok(&p, 0), 0);
	for (uint32_t s = 0; s < p.nsteps; s++) {
		const struct trace_step *st = &p.steps[s];
		const uint32_t q = st->chunk % P;
		bool found = false;

		for (uint32_t j = 0; j < st->ndeps; j++) {
			const struct trace_step *x = &p.steps[p.deps[st->dep_off + j]];

			/* the receiver sending piece q - 8 of the flow on */
			found |= x->chunk + 8 == st->chunk && x->chunk / P == st->chunk / P &&
				 x->rank == st->peer;
		}
		/* every piece from 8 on waits so, but a leaf's down piece */
		bool leaf = st->data == TD_COPY;

		for (uint32_t y = 0; y < p.nsteps && leaf; y++)
			leaf = !(p.steps[y].rank == st->peer && p.steps[y].chunk == st->chunk &&
				 p.steps[y].data == TD_COPY);
		CU_ASSERT_EQUAL(found, q >= 8 && !leaf);
		windowed += found;
	}
	CU_ASSERT(windowed > 0);
	trace_program_free(&p);
	trace_free(&t);
}

/* ---- explain ---------------------------------------------------------------------- */

static char *explain(const struct trace_program *p, uint32_t op)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	trace_explain(p, op, f);
	fclose(f);
	return buf;
}

static void test_explain(void)
{
	struct trace t;
	struct trace_program p;
	char *s;

	one_coll(&t, 4, TRACE_ALLREDUCE, TRACE_ALGO_RING, 8u << 20, 1, 1, 0);
	CU_ASSERT_FATAL(lower_ok(&t, &p) == 0);
	s = explain(&p, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "allreduce (test:1): ring, 4 ranks, S = 8 MiB\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "K = 4 chunks of 2 MiB\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "2(N-1) = 6 steps per rank"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "lowered: 24 transfers in 6 phases (closed form: 24)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "phase 1 (reduce-scatter):\n"
					 "  step 0: rank 0 -> rank 1: 2 MiB (chunk 3, reduce)\n"));
	/* round 1, rank 3: it forwards chunk 1 (from rank 2, step 2) after its own step 3 */
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "  step 7: rank 3 -> rank 0: 2 MiB (chunk 1, reduce) after 2, 3\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "phase 4 (all-gather):\n"
					 "  step 12: rank 0 -> rank 1: 2 MiB (chunk 0, copy) after 8, 11\n"));
	free(s);
	trace_program_free(&p);
	trace_free(&t);

	/* halving-doubling with a fold, and chunk runs */
	one_coll(&t, 3, TRACE_ALLREDUCE, TRACE_ALGO_HD, 4096, 1, 1, 0);
	CU_ASSERT_FATAL(lower_ok(&t, &p) == 0);
	s = explain(&p, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "recursive halving-doubling, 3 ranks, S = 4 KiB"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "phase 1 (pairing: the extra ranks hand in their buffer):\n"
					 "  step 0: rank 0 -> rank 1: 4 KiB (chunks 0-1, reduce)\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "rank 1 -> rank 2: 2 KiB (chunk 1, reduce)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "phase 4 (the extra ranks get the result):\n"
					 "  step 5: rank 1 -> rank 0: 4 KiB (chunks 0-1, copy)"));
	free(s);
	trace_program_free(&p);
	trace_free(&t);

	/* a barrier: 0-byte sync messages */
	one_coll(&t, 3, TRACE_BARRIER, TRACE_ALGO_AUTO, 0, 1, 1, 0);
	CU_ASSERT_FATAL(lower_ok(&t, &p) == 0);
	s = explain(&p, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "barrier (test:1): dissemination, 3 ranks"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "  step 3: rank 0 -> rank 2: 0 B (chunk 0, sync) after 2\n"));
	free(s);
	trace_program_free(&p);
	trace_free(&t);

	/* one rank: nothing to move, and the explanation says so */
	one_coll(&t, 1, TRACE_ALLREDUCE, TRACE_ALGO_AUTO, 1024, 1, 1, 0);
	CU_ASSERT_FATAL(lower_ok(&t, &p) == 0);
	CU_ASSERT_EQUAL(p.nsteps, 0);
	CU_ASSERT_EQUAL(check_ok(&p, 0), 0);
	s = explain(&p, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "(no transfers: one rank)"));
	free(s);
	trace_program_free(&p);
	trace_free(&t);
}

/* ---- refusals ------------------------------------------------------------------------ */

static void test_refused(void)
{
	struct trace t;
	struct trace_program p;
	struct sim_diag d;

	one_coll(&t, 4, TRACE_ALLGATHER, TRACE_ALGO_TREE, 1024, 1, 1, 0);
	trace_program_init(&p, &t);
	CU_ASSERT_NOT_EQUAL(trace_lower(&t, &p, &d), 0);
	CU_ASSERT_STRING_EQUAL(d.file, "test");
	CU_ASSERT_EQUAL(d.line, 1);
	CU_ASSERT_STRING_EQUAL(d.msg, "allgather has no 'tree' algorithm (it has ring or bruck)");
	CU_ASSERT_EQUAL(p.nsteps, 0);
	trace_program_free(&p);
	trace_free(&t);

	one_coll(&t, 4, TRACE_BARRIER, TRACE_ALGO_RING, 0, 1, 1, 0);
	trace_program_init(&p, &t);
	CU_ASSERT_NOT_EQUAL(trace_lower(&t, &p, &d), 0);
	CU_ASSERT_STRING_EQUAL(d.msg, "barrier has no 'ring' algorithm (it has auto (dissemination))");
	trace_program_free(&p);
	trace_free(&t);

	one_coll(&t, 4, TRACE_ALLREDUCE, TRACE_ALGO_HD, 1024, 4, 1, 0);
	trace_program_init(&p, &t);
	CU_ASSERT_NOT_EQUAL(trace_lower(&t, &p, &d), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "does not pipeline: chunks must be 1, not 4"));
	trace_program_free(&p);
	trace_free(&t);

	one_coll(&t, 4, TRACE_ALLGATHER, TRACE_ALGO_BRUCK, 1024, 1, 2, 0);
	trace_program_init(&p, &t);
	CU_ASSERT_NOT_EQUAL(trace_lower(&t, &p, &d), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "runs on one channel"));
	trace_program_free(&p);
	trace_free(&t);

	/* past COLL_MAX_STEPS (2^28): a ring over 16,384 ranks is 2 x 16384 x
	 * 16383 transfers, refused before a step is made; 8,192 ranks (2^27 -
	 * 2^14) are not refused, but too large to lower here */
	one_coll(&t, 16384, TRACE_ALLREDUCE, TRACE_ALGO_RING, 1 << 20, 1, 1, 0);
	trace_program_init(&p, &t);
	CU_ASSERT_NOT_EQUAL(trace_lower(&t, &p, &d), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "would take 536838144 transfers (at most 268435456)"));
	CU_ASSERT_EQUAL(p.nsteps, 0);
	trace_program_free(&p);
	trace_free(&t);

	/* coll_lower on a lone op with one entry step per member */
	one_coll(&t, 3, TRACE_ALLREDUCE, TRACE_ALGO_RING, 3000, 1, 1, 0);
	trace_program_init(&p, &t);
	{
		const uint32_t entry[3] = { COLL_NONE, COLL_NONE, COLL_NONE };

		CU_ASSERT_EQUAL(coll_lower(&t, 0, &p, entry, &d), 0);
		CU_ASSERT_EQUAL(p.nsteps, 12);
		CU_ASSERT_EQUAL(check_ok(&p, 0), 0);
	}
	trace_program_free(&p);
	trace_free(&t);
}

/* ---- lowering a whole trace ---------------------------------------------------------- */

static int add(struct trace *t, struct trace_op o, const uint32_t *deps, uint32_t nd)
{
	struct sim_diag d;
	int ix;

	o.id = (uint32_t)t->nops;
	if (!o.file)
		o.file = "w";
	o.line = (int)t->nops + 1;
	if (o.kind == TRACE_COLL) {
		o.rank = -1;
		if (!o.chunks)
			o.chunks = 1;
		if (!o.channels)
			o.channels = 1;
	}
	ix = trace_add_op(t, &o, deps, nd, &d);
	CU_ASSERT_FATAL(ix >= 0);
	return ix;
}

static bool has_dep(const struct trace_program *p, uint32_t s, uint32_t dep)
{
	for (uint32_t j = 0; j < p->steps[s].ndeps; j++)
		if (p->deps[p->steps[s].dep_off + j] == dep)
			return true;
	return false;
}

static void test_lower_p2p(void)
{
	struct trace t;
	struct trace_program p;
	struct sim_diag d;
	int c0, c1, snd, rcv, after, c2;

	trace_init(&t);
	CU_ASSERT_FATAL(trace_set_ranks(&t, 2, &d) == 0);
	/* rank 1 computes, then receives what rank 0 sent at once, then sends */
	c0 = add(&t, (struct trace_op){ .kind = TRACE_COMPUTE, .rank = 1, .duration = SIM_MS }, NULL, 0);
	rcv = add(&t, (struct trace_op){ .kind = TRACE_RECV, .rank = 1, .peer = 0, .bytes = 100 },
		  (uint32_t[]){ (uint32_t)c0 }, 1);
	snd = add(&t, (struct trace_op){ .kind = TRACE_SEND, .rank = 0, .peer = 1, .bytes = 100 }, NULL, 0);
	after = add(&t, (struct trace_op){ .kind = TRACE_SEND, .rank = 1, .peer = 0, .bytes = 0 },
		    (uint32_t[]){ (uint32_t)rcv }, 1);
	c1 = add(&t, (struct trace_op){ .kind = TRACE_COMPUTE, .rank = 0, .duration = SIM_US },
		 (uint32_t[]){ (uint32_t)snd }, 1);
	/* an after= across ranks: rank 0 waits for rank 1's recv */
	c2 = add(&t, (struct trace_op){ .kind = TRACE_COMPUTE, .rank = 0, .duration = SIM_US },
		 (uint32_t[]){ (uint32_t)rcv, (uint32_t)c1 }, 2);
	CU_ASSERT_FATAL(trace_validate(&t, &d) == 0);
	CU_ASSERT_FATAL(lower_ok(&t, &p) == 0);
	CU_ASSERT_EQUAL(p.nsteps, 5);	/* the recv has no step of its own */
	/* the recv's range is its send's step */
	CU_ASSERT_EQUAL(p.op_nsteps[rcv], 1);
	CU_ASSERT_EQUAL(p.op_first[rcv], p.op_first[snd]);
	CU_ASSERT_EQUAL(p.steps[p.op_first[rcv]].op, (uint32_t)snd);
	CU_ASSERT_EQUAL(p.steps[p.op_first[snd]].kind, TS_XFER);
	CU_ASSERT_EQUAL(p.steps[p.op_first[snd]].ndeps, 0);	/* a send does not wait for its recv */
	/* the op after the recv waits for the data and for what the recv waited for */
	CU_ASSERT_EQUAL(p.steps[p.op_first[after]].ndeps, 2);
	CU_ASSERT(has_dep(&p, p.op_first[after], p.op_first[snd]));
	CU_ASSERT(has_dep(&p, p.op_first[after], p.op_first[c0]));
	CU_ASSERT(has_dep(&p, p.op_first[c1], p.op_first[snd]));
	CU_ASSERT(has_dep(&p, p.op_first[c2], p.op_first[snd]));
	CU_ASSERT(has_dep(&p, p.op_first[c2], p.op_first[c0]));
	CU_ASSERT(has_dep(&p, p.op_first[c2], p.op_first[c1]));
	CU_ASSERT_EQUAL(p.steps[p.op_first[c0]].duration, SIM_MS);
	/* --explain on point-to-point ops: one line each */
	{
		char *x = explain(&p, (uint32_t)rcv);

		CU_ASSERT_PTR_NOT_NULL(strstr(x, "recv (w:2): rank 1 <- rank 0: done when program step 1 (its send) has landed"));
		free(x);
		x = explain(&p, (uint32_t)snd);
		CU_ASSERT_PTR_NOT_NULL(strstr(x, "send (w:3): rank 0 -> rank 1: 100 B, program step 1\n"));
		free(x);
	}
	/* every step waits only for earlier ones */
	for (uint32_t s = 0; s < p.nsteps; s++)
		for (uint32_t j = 0; j < p.steps[s].ndeps; j++)
			CU_ASSERT(p.deps[p.steps[s].dep_off + j] < s);
	trace_program_free(&p);
	trace_free(&t);
}

static void test_lower_coll_entries(void)
{
	struct trace t;
	struct trace_program p;
	struct sim_diag d;
	uint32_t comp[4], ar, ar2, nxt;

	/* compute on each rank, allreduce (each member waits for its own
	 * compute), another allreduce, then a compute on rank 2 */
	trace_init(&t);
	CU_ASSERT_FATAL(trace_set_ranks(&t, 4, &d) == 0);
	for (uint32_t r = 0; r < 4; r++)
		comp[r] = (uint32_t)add(&t, (struct trace_op){ .kind = TRACE_COMPUTE,
							       .rank = (int32_t)r,
							       .duration = (r + 1) * SIM_US },
					 NULL, 0);
	ar = (uint32_t)add(&t, (struct trace_op){ .kind = TRACE_COLL, .coll = TRACE_ALLREDUCE,
						   .bytes = 4096, .chunks = 2 }, comp, 4);
	ar2 = (uint32_t)add(&t, (struct trace_op){ .kind = TRACE_COLL, .coll = TRACE_BROADCAST,
						    .bytes = 4096, .root = 1 }, &ar, 1);
	nxt = (uint32_t)add(&t, (struct trace_op){ .kind = TRACE_COMPUTE, .rank = 2,
						    .duration = SIM_US }, &ar2, 1);
	CU_ASSERT_FATAL(trace_validate(&t, &d) == 0);
	CU_ASSERT_FATAL(lower_ok(&t, &p) == 0);
	CU_ASSERT_EQUAL(check_ok(&p, ar), 0);
	CU_ASSERT_EQUAL(check_ok(&p, ar2), 0);
	CU_ASSERT_EQUAL(p.op_nchunks[ar], 8);
	/* round 0 of the ring: rank r's steps wait for rank r's compute only */
	for (uint32_t s = p.op_first[ar]; s < p.op_first[ar] + p.op_nsteps[ar]; s++) {
		const struct trace_step *st = &p.steps[s];

		if (st->phase != 1)
			continue;
		CU_ASSERT_EQUAL(st->ndeps, 1);
		CU_ASSERT(has_dep(&p, s, p.op_first[comp[st->rank]]));
	}
	/* the broadcast's first steps wait for their sender's part of the
	 * allreduce: its last send and last receive in each of the 2 flows */
	for (uint32_t s = p.op_first[ar2]; s < p.op_first[ar2] + p.op_nsteps[ar2]; s++) {
		const struct trace_step *st = &p.steps[s];

		CU_ASSERT_EQUAL(st->data, TD_COPY);
		for (uint32_t j = 0; j < st->ndeps; j++) {
			uint32_t x = p.deps[st->dep_off + j];

			if (x >= p.op_first[ar2])
				continue;
			CU_ASSERT(x >= p.op_first[ar] && x < p.op_first[ar] + p.op_nsteps[ar]);
			CU_ASSERT(p.steps[x].rank == st->rank || p.steps[x].peer == st->rank);
			CU_ASSERT_EQUAL(p.steps[x].phase, 6);	/* the last round */
		}
	}
	/* rank 2's next compute waits for what rank 2 sends and receives last
	 * in the broadcast, and for its entry into it */
	{
		uint32_t s = p.op_first[nxt], n_in = 0;

		CU_ASSERT(p.steps[s].ndeps >= 1);
		for (uint32_t j = 0; j < p.steps[s].ndeps; j++) {
			const struct trace_step *x = &p.steps[p.deps[p.steps[s].dep_off + j]];

			CU_ASSERT(x->rank == 2 || x->peer == 2);
			n_in += x->op == ar2 && x->peer == 2;
		}
		CU_ASSERT(n_in >= 1);
	}
	trace_program_free(&p);
	trace_free(&t);
}

/*
 * A rank outside a collective that waits for it waits for the steps that
 * end it - those no other step of the op waits for - not for every
 * member's last steps: of an 8-rank tree allreduce, the broadcasts down
 * to its leaves. Every step of the op comes before one of them, and the
 * rank starts when the last one ends.
 */
static void test_lower_nonmember_exits(void)
{
	struct trace t;
	struct trace_program p;
	struct sim_diag d;
	int32_t m[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	uint32_t ar, nxt;
	int c;

	trace_init(&t);
	CU_ASSERT_FATAL(trace_set_ranks(&t, 9, &d) == 0);
	c = trace_add_comm(&t, m, 8, &d);
	CU_ASSERT_FATAL(c > 0);
	ar = (uint32_t)add(&t, (struct trace_op){ .kind = TRACE_COLL, .coll = TRACE_ALLREDUCE,
						   .algo = TRACE_ALGO_TREE, .comm = (uint32_t)c,
						   .bytes = 1 << 20, .chunks = 2 }, NULL, 0);
	nxt = (uint32_t)add(&t, (struct trace_op){ .kind = TRACE_COMPUTE, .rank = 8,
						    .duration = SIM_US }, &ar, 1);
	CU_ASSERT_FATAL(trace_validate(&t, &d) == 0);
	CU_ASSERT_FATAL(lower_ok(&t, &p) == 0);
	const uint32_t a = p.op_first[ar], b = a + p.op_nsteps[ar], s = p.op_first[nxt];
	uint32_t sinks = 0;

	for (uint32_t x = a; x < b; x++) {
		bool waited = false;

		for (uint32_t y = x + 1; y < b && !waited; y++)
			waited = has_dep(&p, y, x);
		sinks += !waited;
		CU_ASSERT_EQUAL(has_dep(&p, s, x), !waited);
	}
	CU_ASSERT_EQUAL(p.steps[s].ndeps, sinks);
	CU_ASSERT(sinks < p.op_nsteps[ar] / 2);
	trace_program_free(&p);
	trace_free(&t);
}

/*
 * Two 4-rank allreduces of 11 channels x 355 chunks, the second after the
 * first (a fuzzed trace): each member enters the second with the ends of
 * the first's 3,905 flows on its rank, and each of its own 3,905 flows
 * waited for all of them, 48M dependencies (5 s and 780 MB to lower). Now
 * one join step per member waits for the entries, and the flows for it.
 */
static void test_lower_joins(void)
{
	struct trace t;
	struct trace_program p;
	struct sim_diag d;
	uint32_t ar, ar2;

	trace_init(&t);
	CU_ASSERT_FATAL(trace_set_ranks(&t, 4, &d) == 0);
	ar = (uint32_t)add(&t, (struct trace_op){ .kind = TRACE_COLL, .coll = TRACE_ALLREDUCE,
						   .bytes = 1 << 20, .chunks = 355,
						   .channels = 11 }, NULL, 0);
	ar2 = (uint32_t)add(&t, (struct trace_op){ .kind = TRACE_COLL, .coll = TRACE_ALLREDUCE,
						    .bytes = 1 << 20, .chunks = 355,
						    .channels = 11 }, &ar, 1);
	CU_ASSERT_FATAL(trace_validate(&t, &d) == 0);
	CU_ASSERT_FATAL(lower_ok(&t, &p) == 0);
	CU_ASSERT_EQUAL(p.njoins, 4);
	CU_ASSERT_EQUAL(p.nsteps - p.njoins, 2 * (size_t)p.op_nsteps[ar]);
	/* entries + flows, not entries x flows: about three a step */
	CU_ASSERT(p.ndeps < 4 * p.nsteps);
	/* the joins sit between the two ops' ranges, one per rank, each
	 * waiting for the first op's steps on its rank only */
	CU_ASSERT_EQUAL(p.op_first[ar2], p.op_first[ar] + p.op_nsteps[ar] + 4);
	for (uint32_t s = p.op_first[ar] + p.op_nsteps[ar]; s < p.op_first[ar2]; s++) {
		const struct trace_step *st = &p.steps[s];

		CU_ASSERT_EQUAL(st->kind, TS_JOIN);
		CU_ASSERT_EQUAL(st->rank, (int32_t)(s - (p.op_first[ar] + p.op_nsteps[ar])));
		CU_ASSERT(st->ndeps > 1000);
		for (uint32_t j = 0; j < st->ndeps; j++) {
			const struct trace_step *x = &p.steps[p.deps[st->dep_off + j]];

			CU_ASSERT(x->op == ar && (x->rank == st->rank || x->peer == st->rank));
		}
	}
	/* the second op's steps wait for a join, never for the first op */
	for (uint32_t s = p.op_first[ar2]; s < p.op_first[ar2] + p.op_nsteps[ar2]; s++)
		for (uint32_t j = 0; j < p.steps[s].ndeps; j++)
			CU_ASSERT(p.deps[p.steps[s].dep_off + j] >= p.op_first[ar] + p.op_nsteps[ar]);
	CU_ASSERT_EQUAL(check_ok(&p, ar), 0);
	CU_ASSERT_EQUAL(check_ok(&p, ar2), 0);
	trace_program_free(&p);
	trace_free(&t);

	/* 4 channels x 5 chunks: each member enters the second with the
	 * first's last send and receive of its 20 flows, 40 x 20 = 800: a
	 * join each; 2 x 4 flows (16 x 8 = 128) stay without */
	for (int big = 1; big >= 0; big--) {
		const uint32_t ch = big ? 4 : 2, ck = big ? 5 : 4;

		trace_init(&t);
		CU_ASSERT_FATAL(trace_set_ranks(&t, 4, &d) == 0);
		ar = (uint32_t)add(&t, (struct trace_op){ .kind = TRACE_COLL,
							   .coll = TRACE_ALLREDUCE, .bytes = 1 << 20,
							   .chunks = ck, .channels = ch }, NULL, 0);
		add(&t, (struct trace_op){ .kind = TRACE_COLL, .coll = TRACE_ALLREDUCE,
					   .bytes = 1 << 20, .chunks = ck, .channels = ch }, &ar, 1);
		CU_ASSERT_FATAL(trace_validate(&t, &d) == 0);
		CU_ASSERT_FATAL(lower_ok(&t, &p) == 0);
		CU_ASSERT_EQUAL(p.njoins, big ? 4u : 0u);
		trace_program_free(&p);
		trace_free(&t);
	}
}

static void test_lower_cycle(void)
{
	struct trace t;
	struct trace_program p;
	struct sim_diag d;
	int r0, s0, r1;

	/* each rank receives before it sends: a deadlock */
	trace_init(&t);
	CU_ASSERT_FATAL(trace_set_ranks(&t, 2, &d) == 0);
	r0 = add(&t, (struct trace_op){ .kind = TRACE_RECV, .rank = 0, .peer = 1, .bytes = 8 }, NULL, 0);
	s0 = add(&t, (struct trace_op){ .kind = TRACE_SEND, .rank = 0, .peer = 1, .bytes = 8 },
		 (uint32_t[]){ (uint32_t)r0 }, 1);
	r1 = add(&t, (struct trace_op){ .kind = TRACE_RECV, .rank = 1, .peer = 0, .bytes = 8 }, NULL, 0);
	add(&t, (struct trace_op){ .kind = TRACE_SEND, .rank = 1, .peer = 0, .bytes = 8 },
	    (uint32_t[]){ (uint32_t)r1 }, 1);
	(void)s0;
	trace_program_init(&p, &t);
	CU_ASSERT_NOT_EQUAL(trace_lower(&t, &p, &d), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "dependency cycle"));
	/* the four ops, back to the first: four arrows */
	{
		int arrows = 0;

		for (const char *q = d.msg; (q = strstr(q, " -> ")); q += 4)
			arrows++;
		CU_ASSERT_EQUAL(arrows, 4);
	}
	CU_ASSERT_EQUAL(p.nsteps, 0);
	trace_program_free(&p);
	trace_free(&t);
}

/* The native format end to end: the parser's rank order and the lowering
 * agree (each member enters after its own previous op). */
static void test_lower_native(void)
{
	static const char text[] =
		"ranks 4\n"
		"fwd: compute all 1ms\n"
		"ar: allreduce 1MiB algo=tree chunks=2\n"
		"bc: broadcast 64KiB root=2 algo=ring\n"
		"a2a: alltoall 4KiB\n"
		"barrier\n";
	struct trace t;
	struct trace_program p;
	struct sim_diag d;

	if (trace_load_string(text, "native", &t, &d)) {
		fprintf(stderr, "\n%s:%d: %s\n", d.file, d.line, d.msg);
		CU_FAIL_FATAL("the native trace does not load");
	}
	CU_ASSERT_FATAL(lower_ok(&t, &p) == 0);
	for (uint32_t i = 0; i < t.nops; i++)
		if (t.ops[i].kind == TRACE_COLL)
			CU_ASSERT_EQUAL(check_ok(&p, i), 0);
	for (uint32_t s = 0; s < p.nsteps; s++)
		for (uint32_t j = 0; j < p.steps[s].ndeps; j++)
			CU_ASSERT(p.deps[p.steps[s].dep_off + j] < s);
	trace_program_free(&p);
	trace_free(&t);
}

/* ---- determinism and speed ------------------------------------------------------------ */

static void test_deterministic(void)
{
	struct trace t;
	struct trace_program p, q;

	one_coll(&t, 13, TRACE_ALLREDUCE, TRACE_ALGO_TREE, 12345678, 3, 2, 0);
	CU_ASSERT_FATAL(lower_ok(&t, &p) == 0);
	CU_ASSERT_FATAL(lower_ok(&t, &q) == 0);
	CU_ASSERT_FATAL(p.nsteps == q.nsteps);
	CU_ASSERT_FATAL(p.ndeps == q.ndeps);
	/* field by field: the padding inside a step is not part of it */
	for (uint32_t s = 0; s < p.nsteps; s++) {
		const struct trace_step *a = &p.steps[s], *b = &q.steps[s];

		CU_ASSERT(a->kind == b->kind && a->rank == b->rank && a->peer == b->peer &&
			  a->bytes == b->bytes && a->duration == b->duration && a->op == b->op &&
			  a->phase == b->phase && a->chunk == b->chunk && a->data == b->data &&
			  a->dep_off == b->dep_off && a->ndeps == b->ndeps);
	}
	CU_ASSERT(!memcmp(p.deps, q.deps, p.ndeps * sizeof(*p.deps)));
	trace_program_free(&p);
	trace_program_free(&q);
	trace_free(&t);
}

/* CPU time, not wall time: the test machines are shared, and the bound is
 * about the work lowering does. */
static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The bound is for an optimised build: not under valgrind, a sanitizer or -O0. */
#if defined(__SANITIZE_ADDRESS__) || !defined(__OPTIMIZE__)
#define TIMED_BUILD false
#else
#define TIMED_BUILD true
#endif

static void test_big_ring_fast(void)
{
	const char *pre = getenv("LD_PRELOAD");
	bool slow = (pre && strstr(pre, "vgpreload")) || !TIMED_BUILD;
	struct trace t;
	struct trace_program p;
	struct sim_diag d;
	uint32_t ar = 0;
	double t0, ms = 0;

	/* the allreduce, and a compute after it on every rank (so that its
	 * per-rank ends are worked out too) */
	one_coll(&t, 128, TRACE_ALLREDUCE, TRACE_ALGO_RING, 256u << 20, 4, 8, 0);
	for (int32_t r = 0; r < 128; r++) {
		struct trace_op o = { .id = (uint32_t)r + 1, .kind = TRACE_COMPUTE, .rank = r,
				      .duration = SIM_US, .file = "test", .line = 2 };

		CU_ASSERT_FATAL(trace_add_op(&t, &o, &ar, 1, &d) > 0);
	}
	/* the best of three: noise on a shared machine only ever adds */
	for (int k = 0; k < (slow ? 1 : 3); k++) {
		if (k)
			trace_program_free(&p);
		t0 = cpu_ms();
		CU_ASSERT_FATAL(lower_ok(&t, &p) == 0);
		if (!k || cpu_ms() - t0 < ms)
			ms = cpu_ms() - t0;
	}
	CU_ASSERT_EQUAL(p.op_nsteps[0], 2 * 127 * 128 * 32);
	CU_ASSERT_EQUAL(p.nsteps, 2 * 127 * 128 * 32 + 128);
	CU_ASSERT_EQUAL(p.steps[0].bytes, (256u << 20) / 128 / 32);
	/* each rank's compute waits for its last send and receive in each of
	 * the 32 chunk flows */
	CU_ASSERT_EQUAL(p.steps[p.op_first[1]].ndeps, 64);
	fprintf(stderr, " [lowered %zu steps in %.1f ms of CPU] ", p.nsteps, ms);
	/* the time is reported, not asserted (speed is bench/'s to judge) */
	if (!slow)
		CU_ASSERT_EQUAL(check_ok(&p, 0), 0);
	trace_program_free(&p);
	trace_free(&t);
}

/* collnet: 16 ranks under 4 leaves of a 3-level tree cut to its 2 lower
 * levels (4 leaf nodes + the middle one); K = S / 512 KiB; 2K(N + nx - 1)
 * steps, up to the tree and down; a member's chunk c waits for its result
 * of chunk c - 8; without a tree it is refused. */
static void test_collnet(void)
{
	struct trace t;
	struct trace_program p;
	struct sim_diag d;
	uint32_t up = 0, down = 0, waits = 0;

	one_coll(&t, 16, TRACE_ALLREDUCE, TRACE_ALGO_COLLNET, 8u << 20, 1, 1, 0);
	CU_ASSERT_FATAL(lower_ok(&t, &p) == 0);
	CU_ASSERT_EQUAL(p.op_nchunks[0], 16);
	CU_ASSERT_EQUAL(p.nsteps, 2u * 16 * (16 + 5 - 1));
	CU_ASSERT_EQUAL(check_ok(&p, 0), 0);
	for (uint32_t s = 0; s < p.nsteps; s++) {
		const struct trace_step *st = &p.steps[s];

		CU_ASSERT_EQUAL(st->bytes, 512u << 10);
		up += st->data == TD_REDUCE;
		down += st->data == TD_COPY;
		/* the middle node (endpoint 16 + 4) is the root: the tree's
		 * top (16 + 5) takes no part */
		CU_ASSERT(st->rank != 21 && st->peer != 21);
		if (st->data == TD_REDUCE && st->rank < 16 && st->chunk >= 8) {
			/* its own result of chunk - 8 */
			bool w = false;

			for (uint32_t k = 0; k < st->ndeps; k++) {
				const struct trace_step *dd = &p.steps[p.deps[st->dep_off + k]];

				w |= dd->peer == st->rank && dd->chunk == st->chunk - 8 &&
				     dd->data == TD_COPY;
			}
			waits += w;
		}
	}
	CU_ASSERT_EQUAL(up, 16u * 20);
	CU_ASSERT_EQUAL(down, 16u * 20);
	CU_ASSERT_EQUAL(waits, 16u * 8);
	trace_program_free(&p);
	/* no tree: refused, saying what it needs */
	free(t.agg_parent);
	t.agg_parent = NULL;
	t.nagg = 0;
	trace_program_init(&p, &t);
	sim_diag_clear(&d);
	CU_ASSERT_NOT_EQUAL(trace_lower(&t, &p, &d), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "needs SHARP"));
	trace_program_free(&p);
	trace_free(&t);
}

static void test_busbw(void)
{
	CU_ASSERT_DOUBLE_EQUAL(coll_busbw_factor(TRACE_ALLREDUCE, 8), 2.0 * 7 / 8, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(coll_busbw_factor(TRACE_ALLREDUCE, 128), 2.0 * 127 / 128, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(coll_busbw_factor(TRACE_ALLGATHER, 8), 7.0 / 8, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(coll_busbw_factor(TRACE_REDUCESCATTER, 4), 3.0 / 4, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(coll_busbw_factor(TRACE_ALLTOALL, 16), 15.0 / 16, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(coll_busbw_factor(TRACE_BROADCAST, 16), 1, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(coll_busbw_factor(TRACE_REDUCE, 16), 1, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(coll_busbw_factor(TRACE_BARRIER, 16), 0, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(coll_busbw_factor(TRACE_ALLREDUCE, 1), 0, 1e-12);
}

/* The registry: each collective has one default (what algo=auto runs),
 * no (collective, name) pair is served twice, and every row is found by
 * its own pair. */
/*
 * Lazy lowering: an algorithm with gen gives, for every index, the step
 * and the dependencies its eager lowering stores - in traces where the
 * collective follows others (entries, join steps), precedes others (its
 * exits, which the next op's entries are made of) and runs on a
 * sub-communicator; and a ring past 2^28 steps is taken lazily, in no time.
 */
static size_t lazy_vs_stored(const char *text)
{
	struct trace t;
	struct trace_program a, b;
	struct sim_diag d;
	size_t nlz = 0, ncounted = 0;

	trace_init(&t);
	CU_ASSERT_EQUAL_FATAL(trace_load_string(text, "lazy", &t, &d), 0);
	trace_program_init(&a, &t);
	trace_program_init(&b, &t);
	b.lazy = true;
	CU_ASSERT_EQUAL_FATAL(trace_lower(&t, &a, &d), 0);
	CU_ASSERT_EQUAL_FATAL(trace_lower(&t, &b, &d), 0);
	CU_ASSERT_EQUAL_FATAL(a.nsteps, b.nsteps);
	CU_ASSERT_EQUAL(a.njoins, b.njoins);
	CU_ASSERT_EQUAL(a.nlz, 0);
	CU_ASSERT(b.nlz > 0);
	CU_ASSERT(b.nstored < b.nsteps);
	for (size_t i = 0; i < t.nops; i++) {
		CU_ASSERT_EQUAL(a.op_first[i], b.op_first[i]);
		CU_ASSERT_EQUAL(a.op_nsteps[i], b.op_nsteps[i]);
		CU_ASSERT_EQUAL(a.op_nchunks[i], b.op_nchunks[i]);
	}
	for (uint32_t s = 0; s < a.nsteps; s++) {
		struct trace_step ta, tb;
		const uint32_t *da, *db;
		uint32_t ba[TRACE_STEP_MAXDEPS], bb[TRACE_STEP_MAXDEPS];
		const struct trace_step *x = trace_program_step(&a, s, &ta, &da, ba);
		const struct trace_step *y = trace_program_step(&b, s, &tb, &db, bb);

		nlz += trace_program_lazy(&b, s) != NULL;
		if (y->kind == TS_JOIN && y->counted) {
			/* the lazy program's join counts what the stored one's
			 * lists: the transfers of op y->chunk on its rank, whose
			 * exits are the list */
			uint32_t n = 0, f = a.op_first[y->chunk];

			CU_ASSERT(x->kind == TS_JOIN && !x->counted && x->rank == y->rank &&
				  x->op == y->op && y->chunk != y->op && y->ndeps == 0 && x->ndeps > 0);
			for (uint32_t k = f; k < f + a.op_nsteps[y->chunk]; k++) {
				const struct trace_step *z = &a.steps[k];

				n += z->kind == TS_XFER && (z->rank == y->rank || z->peer == y->rank);
			}
			CU_ASSERT_EQUAL(n, y->phase);
			for (uint32_t k = 0; k < x->ndeps; k++) {
				const struct trace_step *z = &a.steps[da[k]];

				CU_ASSERT(da[k] >= f && da[k] < f + a.op_nsteps[y->chunk] &&
					  z->kind == TS_XFER && (z->rank == y->rank || z->peer == y->rank));
			}
			ncounted++;
			continue;
		}
		if (x->bytes != y->bytes || x->duration != y->duration || x->rank != y->rank ||
		    x->peer != y->peer || x->op != y->op || x->phase != y->phase ||
		    x->chunk != y->chunk || x->ndeps != y->ndeps || x->kind != y->kind ||
		    x->data != y->data || x->acked != y->acked ||
		    memcmp(da, db, x->ndeps * sizeof(*da))) {
			fprintf(stderr, "\n  step %u differs lazily: %d -> %d chunk %u, %u deps (stored: %d -> %d chunk %u, %u deps)",
				s, y->rank, y->peer, y->chunk, y->ndeps, x->rank, x->peer, x->chunk,
				x->ndeps);
			CU_FAIL("a lazy step differs from the stored one");
			break;
		}
	}
	CU_ASSERT_EQUAL(nlz + b.nstored, b.nsteps);
	CU_ASSERT_PTR_NULL(trace_program_step(&b, (uint32_t)b.nsteps, NULL, NULL, NULL));
	trace_program_free(&a);
	trace_program_free(&b);
	trace_free(&t);
	return ncounted;
}

static void test_lazy(void)
{
	struct trace t;
	struct trace_program p;

	(void)lazy_vs_stored("ranks 8\n"
		       "compute all 1us\n"
		       "allreduce 1MiB chunks=3 channels=2\n"
		       "send 0 5 4KiB\n"
		       "recv 5 0 4KiB\n"
		       "alltoall 2MiB algo=direct chunks=2 channels=2\n"
		       "alltoall 2MiB algo=pairwise chunks=3 channels=2\n"
		       "comm odd = 1,3,5,7\n"
		       "allgather 64KiB comm=odd\n"
		       "reducescatter 1000B\n"
		       "allreduce 3MiB algo=tree\n"
		       "compute 2 5us\n");
	/* entries of 355 x 11 steps a member: join steps, then the ring; each
	 * member waits for the ring before alone (the compute is async):
	 * the joins count its transfers (trace_step.counted), as do the
	 * all-to-all's */
	CU_ASSERT_EQUAL(lazy_vs_stored("ranks 4\n"
				       "allreduce 1MiB chunks=355 channels=11\n"
				       "compute 2 3us async\n"
				       "allreduce 1MiB chunks=355 channels=11\n"
				       "alltoall 64KiB\n"), 8);
	/* back to back (nccl-tests' iterations): every member's join counts */
	CU_ASSERT_EQUAL(lazy_vs_stored("ranks 4\n"
				       "allreduce 1MiB chunks=355 channels=11\n"
				       "allreduce 1MiB chunks=355 channels=11\n"
				       "allreduce 1MiB chunks=355 channels=11\n"), 8);
	/* waiting for an op listed after it (after=, a forward reference):
	 * the same, the counted op's index above the join's */
	CU_ASSERT_EQUAL(lazy_vs_stored("ranks 4\n"
				       "b: allreduce 1MiB chunks=355 channels=11 after=a async\n"
				       "a: allreduce 1MiB chunks=355 channels=11\n"), 4);
	/* 2 x 16384 x 16383 transfers: refused stored (test_refused), taken
	 * lazily without making one */
	one_coll(&t, 16384, TRACE_ALLREDUCE, TRACE_ALGO_RING, 1 << 20, 1, 1, 0);
	trace_program_init(&p, &t);
	p.lazy = true;
	CU_ASSERT_EQUAL(lower_ok_lazy(&t, &p), 0);
	CU_ASSERT_EQUAL(p.nsteps, 536838144u);
	CU_ASSERT_EQUAL(p.nstored, 0);
	trace_program_free(&p);
	trace_free(&t);
}

/*
 * What the lazy replay relies on an algorithm's word for (coll_algo.reach,
 * .near_reach, .far, coll_gstep.fan) coll_lower_gen checks on every step:
 * the ring's steps under claims that are wrong are refused, naming why.
 */
static const struct coll_algo *claim_base;
static uint64_t claim_fan_at;	/* the step a fan of 2 is claimed at; UINT64_MAX none */

static uint64_t claim_zero(const struct coll_ctx *c)
{
	(void)c;
	return 0;
}

static bool claim_far(const struct coll_ctx *c, uint64_t k)
{
	(void)c;
	(void)k;
	return true;
}

/* the step after the fan's first claimed as its member: 0 as the ring
 * has it; 1 the first's transfer from the table's next member; 2 that,
 * to another peer too */
static int claim_member;

static void claim_gen(const struct coll_ctx *c, uint64_t k, struct coll_gstep *g)
{
	/* with a member claimed: the op's last two steps, which nothing
	 * waits for (a step waits for all of a fan or none) */
	const uint64_t at = claim_member ? claim_base->nsteps(c) - 2 : claim_fan_at;

	if (claim_member && k == at + 1) {
		claim_base->gen(c, at, g);
		g->from = (g->from + c->n - 1) % c->n;
		if (claim_member == 2)
			g->to = (g->to + 1) % c->n;
		return;
	}
	claim_base->gen(c, k, g);
	if (k == at) {
		g->fan = 2;
		g->fan_tab = 3 * g->from % c->n;	/* claims_refused's table: tab[that] is from */
		g->fan_to = false;
	}
}

static const char *claims_refused(const struct coll_algo *fake)
{
	static char msg[sizeof(((struct sim_diag *)0)->msg)];
	struct trace t;
	struct trace_program p;
	struct coll_ctx c;
	struct sim_diag d;
	int rc;

	one_coll(&t, 4, TRACE_ALLREDUCE, TRACE_ALGO_RING, 1 << 20, 2, 1, -1);
	trace_program_init(&p, &t);
	sim_diag_clear(&d);
	CU_ASSERT_FATAL(trace_program_ops_alloc(&p) == 0);
	CU_ASSERT_FATAL(coll_ctx_init(&c, &t, 0, &p, &d) == 0);
	claim_base = c.algo;
	c.algo = fake;
	/* a fan's members (coll_gstep.fan_tab): the ring has no table of its
	 * own; in this one (4 members: 0 3 2 1 0 3 2 1) the member after
	 * member r is r - 1 */
	c.ntab = 2 * c.n;
	c.tab = malloc(c.ntab * sizeof(*c.tab));
	CU_ASSERT_FATAL(c.tab != NULL);
	for (uint32_t m = 0; m < c.ntab; m++)
		c.tab[m] = 3 * m % c.n;
	rc = coll_lower_gen(&c);
	snprintf(msg, sizeof(msg), "%s", rc ? d.msg : "");
	coll_ctx_fini(&c);
	trace_program_free(&p);
	trace_free(&t);
	return msg;
}

static void test_lazy_claims(void)
{
	const struct coll_algo *ring = coll_algo_find(TRACE_ALLREDUCE, TRACE_ALGO_RING);
	struct coll_algo fake = *ring;

	/* the ring as it is: no claim broken */
	claim_fan_at = UINT64_MAX;
	fake.gen = claim_gen;
	CU_ASSERT_STRING_EQUAL(claims_refused(&fake), "");
	/* a near reach of 0 and nothing far */
	fake.near_reach = claim_zero;
	CU_ASSERT_PTR_NOT_NULL(strstr(claims_refused(&fake),
				      "waits for a step beyond its near reach that is not far"));
	/* everything far: a step waits for far ones only */
	fake.far = claim_far;
	CU_ASSERT_PTR_NOT_NULL(strstr(claims_refused(&fake),
				      "waits for a far step and for none within its near reach"));
	/* a reach of 0 */
	fake = *ring;
	fake.reach = claim_zero;
	CU_ASSERT_PTR_NOT_NULL(strstr(claims_refused(&fake), "waits for a step beyond its reach"));
	/* fans: on an entry step (the ring's step 0, a member's first
	 * send); on two steps that wait for different ones (the first such
	 * pair), which every step after the entries is */
	fake = *ring;
	fake.gen = claim_gen;
	claim_fan_at = 0;
	CU_ASSERT_PTR_NOT_NULL(strstr(claims_refused(&fake), "leads a fan and waits for no step"));
	int other = 0;

	for (claim_fan_at = 1; claim_fan_at < 24 && !other; claim_fan_at++) {
		const char *m = claims_refused(&fake);

		CU_ASSERT_PTR_NOT_NULL(strstr(m, "fan"));
		other = strstr(m, "is in a fan and waits for other steps than its first") != NULL;
	}
	CU_ASSERT(other);
	/* a member waits for what its first waits for and is its transfer
	 * from the table's next member (coll_gstep.fan_tab): taken; to
	 * another peer as well: refused (no reach claimed: the member, a step
	 * later than the step it copies, waits one step further back) */
	fake.reach = NULL;
	fake.near_reach = NULL;
	claim_member = 1;
	CU_ASSERT_STRING_EQUAL(claims_refused(&fake), "");
	claim_member = 2;
	CU_ASSERT_PTR_NOT_NULL(strstr(claims_refused(&fake),
				      "is in a fan and not its first's transfer"));
	claim_member = 0;
	claim_fan_at = UINT64_MAX;
}

static void test_registry(void)
{
	int rows = 0;

	for (int c = 0; c < TRACE_NCOLL; c++) {
		int dflt = 0;

		for (const struct coll_algo *const *a = coll_algos; *a; a++)
			dflt += (*a)->coll == (enum trace_coll)c && (*a)->dflt;
		CU_ASSERT_EQUAL(dflt, 1);
	}
	for (const struct coll_algo *const *a = coll_algos; *a; a++, rows++) {
		CU_ASSERT((unsigned)(*a)->algo < TRACE_NALGO);
		CU_ASSERT_PTR_NOT_NULL((*a)->name);
		if ((*a)->algo != TRACE_ALGO_AUTO)
			CU_ASSERT_PTR_EQUAL(coll_algo_find((*a)->coll, (*a)->algo), *a);
		if ((*a)->dflt)
			CU_ASSERT_PTR_EQUAL(coll_algo_find((*a)->coll, TRACE_ALGO_AUTO), *a);
		for (const struct coll_algo *const *b = a + 1; *b; b++)
			CU_ASSERT(!((*a)->coll == (*b)->coll && (*a)->algo == (*b)->algo));
	}
	CU_ASSERT(rows >= 13);
}

static const struct test_case tests[] = {
	{ "registry: one default per collective, each pair once", test_registry },
	{ "the lazy path's claims (reach, near reach, far, fans) are checked", test_lazy_claims },
	{ "every algorithm passes the reduction check", test_all_correct },
	{ "sub-communicators", test_sub_communicator },
	{ "a dropped or duplicated step fails the check", test_broken_fail },
	{ "other broken programs fail with a clear message", test_broken_messages },
	{ "ring: 2(N-1) steps of S/N", test_ring_closed_form },
	{ "halving-doubling: 2 log2 N steps, halving sizes", test_hd_closed_form },
	{ "all-to-all: N-1 rounds", test_alltoall_closed_form },
	{ "bruck and barrier: ceil(log2 N) rounds", test_log_rounds },
	{ "double binary tree", test_double_tree },
	{ "explain", test_explain },
	{ "unsupported pairs and options are refused", test_refused },
	{ "send, recv and compute", test_lower_p2p },
	{ "collectives wait per member", test_lower_coll_entries },
	{ "many entries into many flows go through one join per member", test_lower_joins },
	{ "a deadlock is refused", test_lower_cycle },
	{ "the native format end to end", test_lower_native },
	{ "lowering is deterministic", test_deterministic },
	{ "a rank outside a collective waits for the steps that end it", test_lower_nonmember_exits },
	{ "the double binary tree's pieces wait for their receiver's slots", test_tree_window },
	{ "128 ranks x 8 channels x 4 chunks lowers fast", test_big_ring_fast },
	{ "collnet: up the SHARP tree and down, 8 chunks in flight", test_collnet },
	{ "busbw factors", test_busbw },
	{ "lazy lowering gives the stored steps", test_lazy },
	{ NULL, NULL },
};

TEST_MAIN("coll", tests)
