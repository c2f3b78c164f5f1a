/* SPDX-License-Identifier: MIT */
/*
 * bench_engine.c - micro-benchmark of the event engine alone (sim/), with the
 * classic "hold" model: keep N events pending; each step pops the earliest
 * and schedules one new event at now + a random delay, so the list stays at
 * N entries while time moves on. The cost of one hold is the cost of the
 * future-event list at that size, which is what a simulation at O(ports)
 * pending events pays per event.
 *
 * Two columns per N:
 *   engine - sim_step(): heap pop, dispatch through the component table to
 *            a handler that calls sim_schedule_in() (what models pay);
 *   heap   - sim_heap_pop() + sim_heap_push() only, no dispatch.
 * Delays come from a table of 64K precomputed uniform draws in [1 ps, 2 us], so
 * random-number generation is not in the measured loop. The first N holds
 * are a warm-up (they turn the initial fill into the steady-state shape of
 * the heap) and are not timed.
 *
 * This is a reported figure, never a pass/fail test: the machine is noisy.
 * For stable numbers count instructions with callgrind: around each timed
 * loop the program zeroes callgrind's counters and dumps them (a no-op when
 * not under valgrind), so each dump holds exactly one timed loop:
 *   valgrind --tool=callgrind --callgrind-out-file=cg.%p \
 *            ./bench_engine -n 10000 -k 200000
 * then divide each dump's "summary:" (Ir) by its holds; bench/README.md has
 * a one-liner.
 */
#include "sim/sim.h"
#include "sim/sim_rng.h"

#include <getopt.h>
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif
#endif
#ifndef CALLGRIND_ZERO_STATS		/* no valgrind headers: no markers */
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_DUMP_STATS_AT(s)
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DELAY_BITS 16
#define DELAY_MASK ((1u << DELAY_BITS) - 1)
#define DELAY_MAX_PS (2 * SIM_US)

struct hold {
	sim_time_t delay[1u << DELAY_BITS];
	uint32_t next;
	uint32_t comp;
};

static inline sim_time_t next_delay(struct hold *h)
{
	return h->delay[h->next++ & DELAY_MASK];
}

static void hold_fn(struct sim_engine *eng, void *ctx, uint32_t arg)
{
	struct hold *h = ctx;

	sim_schedule_in(eng, next_delay(h), h->comp, arg);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Out of line, so that profiles show the measured loops by name. */
__attribute__((noinline)) static void hold_engine(struct sim_engine *eng,
						   uint64_t k)
{
	for (uint64_t i = 0; i < k; i++)
		sim_step(eng);
}

__attribute__((noinline)) static void hold_heap(struct sim_heap *hp,
						 struct hold *h, uint64_t k,
						 uint64_t *seq)
{
	struct sim_event e;

	for (uint64_t i = 0; i < k; i++) {
		sim_heap_pop(hp, &e);
		e.time += next_delay(h);
		e.seq = (*seq)++;
		sim_heap_push(hp, &e);
	}
}

struct result {
	double engine_ns, heap_ns;
	sim_time_t end_time;		/* same inputs -> same value: a checksum */
};

static int run_engine(struct hold *h, uint64_t n, uint64_t k, struct result *res)
{
	struct sim_engine eng;
	int comp, rc = -1;

	sim_init(&eng);
	comp = sim_register(&eng, hold_fn, h, "hold");
	if (comp < 0)
		goto out;
	h->comp = (uint32_t)comp;
	h->next = 0;
	for (uint64_t i = 0; i < n; i++)
		if (sim_schedule_at(&eng, next_delay(h), h->comp, (uint32_t)i))
			goto out;
	hold_engine(&eng, n);			/* warm-up */

	char tag[64];

	snprintf(tag, sizeof(tag), "engine N=%llu holds=%llu",
		 (unsigned long long)n, (unsigned long long)k);
	CALLGRIND_ZERO_STATS;

	double t0 = now_s();

	hold_engine(&eng, k);
	CALLGRIND_DUMP_STATS_AT(tag);
	res->engine_ns = (now_s() - t0) * 1e9 / (double)k;
	res->end_time = sim_now(&eng);
	/* A failed push inside the handler would show as a shrunken list. */
	if (sim_pending(&eng) == n)
		rc = 0;
out:
	sim_fini(&eng);
	return rc;
}

static int run_heap(struct hold *h, uint64_t n, uint64_t k, struct result *res)
{
	struct sim_heap hp;
	uint64_t seq = 0;
	int rc = -1;

	sim_heap_init(&hp);
	h->next = 0;
	for (uint64_t i = 0; i < n; i++) {
		struct sim_event e = { .time = next_delay(h), .seq = seq++ };

		if (sim_heap_push(&hp, &e))
			goto out;
	}
	hold_heap(&hp, h, n, &seq);		/* warm-up */

	char tag[64];

	snprintf(tag, sizeof(tag), "heap N=%llu holds=%llu",
		 (unsigned long long)n, (unsigned long long)k);
	CALLGRIND_ZERO_STATS;

	double t0 = now_s();

	hold_heap(&hp, h, k, &seq);
	CALLGRIND_DUMP_STATS_AT(tag);
	res->heap_ns = (now_s() - t0) * 1e9 / (double)k;
	if (hp.n == n)
		rc = 0;
out:
	sim_heap_free(&hp);
	return rc;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench_engine [-n N]... [-k HOLDS] [-m engine|heap|both] [-s SEED]\n"
		"  -n N      pending events (repeatable; default 1e2 1e3 1e4 1e5 1e6)\n"
		"  -k HOLDS  timed holds per N (default max(2e6, 2N))\n"
		"  -m MODE   which loop to time (default both)\n"
		"  -s SEED   seed of the delay table (default 1)\n");
}

static int parse_count(const char *s, uint64_t *out)
{
	char *end;
	double v = strtod(s, &end);	/* accepts 1e6 */

	if (end == s || *end || !(v >= 1) || v > 1e9)
		return -1;
	*out = (uint64_t)v;
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t ns[16], k = 0, seed = 1;
	unsigned nn = 0;
	bool do_engine = true, do_heap = true;
	int c;

	while ((c = getopt(argc, argv, "n:k:m:s:h")) != -1) {
		switch (c) {
		case 'n':
			if (nn == SIM_ARRAY_SIZE(ns) || parse_count(optarg, &ns[nn])) {
				fprintf(stderr, "bench_engine: bad -n '%s'\n", optarg);
				return 2;
			}
			nn++;
			break;
		case 'k':
			if (parse_count(optarg, &k)) {
				fprintf(stderr, "bench_engine: bad -k '%s'\n", optarg);
				return 2;
			}
			break;
		case 'm':
			do_engine = !strcmp(optarg, "engine") || !strcmp(optarg, "both");
			do_heap = !strcmp(optarg, "heap") || !strcmp(optarg, "both");
			if (!do_engine && !do_heap) {
				fprintf(stderr, "bench_engine: bad -m '%s'\n", optarg);
				return 2;
			}
			break;
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (!nn) {
		static const uint64_t def[] = { 100, 1000, 10000, 100000, 1000000 };

		memcpy(ns, def, sizeof(def));
		nn = SIM_ARRAY_SIZE(def);
	}

	struct hold *h = malloc(sizeof(*h));
	struct sim_rng rng;

	if (!h)
		return 1;
	sim_rng_init(&rng, seed, 0);
	for (uint32_t i = 0; i <= DELAY_MASK; i++)
		h->delay[i] = 1 + sim_rng_below(&rng, DELAY_MAX_PS);

	printf("hold model: %zu-byte events, delays uniform in [1 ps, %llu ps], seed %llu\n",
	       sizeof(struct sim_event), (unsigned long long)DELAY_MAX_PS,
	       (unsigned long long)seed);
	printf("%9s %9s %14s %12s %14s %18s\n", "N", "holds", "engine ns/hold",
	       "engine Mev/s", "heap ns/hold", "end time (ps)");
	for (unsigned i = 0; i < nn; i++) {
		uint64_t kk = k ? k : ns[i] * 2 > 2000000 ? ns[i] * 2 : 2000000;
		struct result res = { 0 };

		if (do_engine && run_engine(h, ns[i], kk, &res)) {
			fprintf(stderr, "bench_engine: out of memory at N=%llu\n",
				(unsigned long long)ns[i]);
			return 1;
		}
		if (do_heap && run_heap(h, ns[i], kk, &res)) {
			fprintf(stderr, "bench_engine: out of memory at N=%llu\n",
				(unsigned long long)ns[i]);
			return 1;
		}
		printf("%9llu %9llu", (unsigned long long)ns[i], (unsigned long long)kk);
		if (do_engine)
			printf(" %14.1f %12.2f", res.engine_ns, 1e3 / res.engine_ns);
		else
			printf(" %14s %12s", "-", "-");
		if (do_heap)
			printf(" %14.1f", res.heap_ns);
		else
			printf(" %14s", "-");
		if (do_engine)
			printf(" %18llu\n", (unsigned long long)res.end_time);
		else
			printf(" %18s\n", "-");
		fflush(stdout);
	}
	free(h);
	return 0;
}
