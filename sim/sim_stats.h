/* SPDX-License-Identifier: MIT */
/*
 * sim_stats.h - counters, histograms and sample sets.
 *
 * Counters are plain uint64_t fields in the models (named as IB's PMA names
 * them where one exists). sim_hist is a log-linear histogram (16 linear
 * sub-buckets per power of two, relative error <= 1/16) for values too many
 * to keep, e.g. per-packet latencies; sim_samples keeps every value for exact
 * percentiles where the count is modest (per-message completion times).
 */
#ifndef IBFAB_SIM_STATS_H
#define IBFAB_SIM_STATS_H

#include <stddef.h>
#include <stdint.h>

#define SIM_HIST_SUB 16
#define SIM_HIST_BUCKETS (64 * SIM_HIST_SUB)

struct sim_hist {
	uint64_t count, sum, min, max;
	uint64_t bucket[SIM_HIST_BUCKETS];
};

void sim_hist_init(struct sim_hist *h);
void sim_hist_add(struct sim_hist *h, uint64_t v);
/* Value at quantile q in [0,1]: the lower bound of the bucket holding it,
 * clamped to [min, max]. 0 when empty. */
uint64_t sim_hist_quantile(const struct sim_hist *h, double q);

/*
 * sim_samples keeps its first `exact_max` values (SIM_SAMPLES_EXACT by
 * default: 2^20, 8 MB) and answers exactly. Past that it moves them into
 * a log-linear histogram of 2^SIM_SAMPLES_SUB_BITS linear sub-buckets per
 * power of two (each power's counts allocated when first used, 32 KB), and
 * its memory stops growing: a quantile is then the lower bound of the
 * bucket that holds it, at most 1/4096 (0.025%) below the exact value,
 * and exact below 4096; the minimum and maximum stay exact.
 */
#define SIM_SAMPLES_EXACT (1u << 20)
#define SIM_SAMPLES_SUB_BITS 12
#define SIM_SAMPLES_POWERS (64 - SIM_SAMPLES_SUB_BITS + 1)

struct sim_samples {
	uint64_t *v;
	size_t n, cap;
	int sorted;
	size_t exact_max;	/* 0: SIM_SAMPLES_EXACT */
	/* past exact_max (v is then NULL): counts per power, and the extremes */
	uint64_t *hist[SIM_SAMPLES_POWERS];
	uint64_t min, max;
};

void sim_samples_init(struct sim_samples *s);
void sim_samples_fini(struct sim_samples *s);
int sim_samples_add(struct sim_samples *s, uint64_t v);
/* Whether the answers are exact (every value kept). */
static inline int sim_samples_exact(const struct sim_samples *s)
{
	return s->n <= (s->exact_max ? s->exact_max : SIM_SAMPLES_EXACT);
}
/* Nearest-rank quantile (q=0.5 median, 0.99 p99); sorts on first call. */
uint64_t sim_samples_quantile(struct sim_samples *s, double q);
/*
 * The nearest-rank quantiles q[0..nq) into out[], the same values as
 * sim_samples_quantile, by selection instead of a sort: O(n) each on
 * average, in place, no second array (a sort's radix passes need one as
 * large as the samples: 1 GB for the 8,192-host ring's 134M transfers).
 * The samples' order changes; q in ascending order selects each in what
 * the last one left. 0 for every q when empty.
 */
void sim_samples_quantiles(struct sim_samples *s, const double *q, int nq, uint64_t *out);

#endif
