/* SPDX-License-Identifier: MIT */
/*
 * bench_memlat.c - the latency of one dependent load as the working set
 * grows: a pointer chase through a random cyclic permutation of 64-byte
 * lines (each line holds the address of the next, so every load waits for
 * the one before, and no prefetcher can guess the next line).
 *
 * Why it is in bench/: a packet-hop of a large fabric touches 15-20 lines
 * that the core's cache no longer holds (docs/performance.md, "Linear in
 * packet-hops"), so the cost of a hop across fabric sizes follows this
 * machine's latency curve, not the simulator's instruction count. The
 * sizes at which the curve steps (L2, the share of the last-level cache
 * this virtual machine gets, DRAM) and the height of each step are the
 * figures that explain the scaling curve of bench/run and
 * bench/compare-ns3; this program measures them on the machine at hand.
 *
 *   bench_memlat [--pages 4k|2m] [--max MIB] [--loads N]
 *     --pages  back the buffer with 4 KiB pages (MADV_NOHUGEPAGE) or ask
 *              for 2 MiB ones (MADV_HUGEPAGE; default), to tell cache
 *              misses from TLB misses
 *     --max    the largest working set, MiB (default 512); sizes double
 *              from 256 KiB
 *     --loads  timed loads per size (default 20,000,000)
 *
 * A reported figure, never a pass/fail test: on a shared machine the
 * steps move with the neighbours' load (run it two or three times).
 */
#define _GNU_SOURCE
#include "sim/sim_rng.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define LINE 64

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ns per load over `loads` dependent loads through n lines at buf. */
static double chase(char *buf, size_t n, size_t loads, struct sim_rng *rng)
{
	uint32_t *perm = malloc(n * sizeof(*perm));

	if (!perm)
		return -1;
	for (size_t i = 0; i < n; i++)
		perm[i] = (uint32_t)i;
	for (size_t i = n - 1; i > 0; i--) {	/* Fisher-Yates */
		size_t j = (size_t)sim_rng_below(rng, i + 1);
		uint32_t t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
	for (size_t i = 0; i < n; i++)
		*(char **)(buf + (size_t)perm[i] * LINE) = buf + (size_t)perm[(i + 1) % n] * LINE;
	char *p = buf + (size_t)perm[0] * LINE;

	free(perm);
	for (size_t i = 0; i < n; i++)	/* one lap first: pages faulted in, caches warm */
		p = *(char **)p;
	double t0 = now_s();

	for (size_t i = 0; i < loads; i++)
		p = *(char **)p;
	double t = now_s() - t0;

	/* keep the chase from being optimised away */
	__asm__ volatile("" : : "r"(p));
	return t / (double)loads * 1e9;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pages", required_argument, NULL, 'p' },
		{ "max", required_argument, NULL, 'm' },
		{ "loads", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool huge = true;
	size_t max_kib = 512 * 1024, loads = 20000000;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *end = NULL;

		switch (c) {
		case 'p':
			if (strcmp(optarg, "4k") && strcmp(optarg, "2m")) {
				fprintf(stderr, "bench_memlat: --pages: 4k or 2m, not '%s'\n", optarg);
				return 2;
			}
			huge = !strcmp(optarg, "2m");
			break;
		case 'm':
		case 'l': {
			unsigned long long v = strtoull(optarg, &end, 10);

			if (!*optarg || *end || v == 0 || (c == 'm' && v > 8192)) {
				fprintf(stderr, "bench_memlat: --%s: a whole number%s, not '%s'\n",
					c == 'm' ? "max" : "loads", c == 'm' ? " of MiB, 1..8192" : " >= 1",
					optarg);
				return 2;
			}
			if (c == 'm')
				max_kib = (size_t)v * 1024;
			else
				loads = (size_t)v;
			break;
		}
		case 'h':
			printf("usage: bench_memlat [--pages 4k|2m] [--max MIB] [--loads N]\n"
			       "ns per dependent load through a random cycle of 64-byte lines,\n"
			       "for working sets from 256 KiB doubling to --max (default 512 MiB)\n");
			return 0;
		default:
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "bench_memlat: unexpected argument '%s' (see --help)\n", argv[optind]);
		return 2;
	}
	struct sim_rng rng;

	sim_rng_init(&rng, 1, 0);
	printf("working set  ns per load (%s pages)\n", huge ? "2 MiB" : "4 KiB");
	for (size_t kib = 256; kib <= max_kib; kib *= 2) {
		size_t bytes = kib * 1024;
		char *buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (buf == MAP_FAILED) {
			fprintf(stderr, "bench_memlat: cannot map %zu KiB\n", kib);
			return 1;
		}
		(void)madvise(buf, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
		double ns = chase(buf, bytes / LINE, loads, &rng);

		munmap(buf, bytes);
		if (ns < 0) {
			fprintf(stderr, "bench_memlat: out of memory\n");
			return 1;
		}
		if (kib < 1024)
			printf("%7zu KiB  %6.1f\n", kib, ns);
		else
			printf("%7zu MiB  %6.1f\n", kib / 1024, ns);
		fflush(stdout);
	}
	return 0;
}
