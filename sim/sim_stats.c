/* SPDX-License-Identifier: MIT */
/* sim_stats.c - see sim_stats.h. */
#include "sim/sim_stats.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void sim_hist_init(struct sim_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

/*
 * Nearest rank: the smallest r with r/n >= q. q*n in floating point can land
 * just above an integer it equals in decimal (0.07 * 100 = 7.000000000000001),
 * which ceil() would turn into the next rank; shave a few ulps off first.
 */
static uint64_t nearest_rank(double q, uint64_t n)
{
	double x = q * (double)n;
	uint64_t rank;

	if (!(x > 0))			/* q <= 0, or NaN */
		return 1;
	if (x >= (double)n)
		return n;
	rank = (uint64_t)ceil(x - x * 4 * DBL_EPSILON);
	return rank < 1 ? 1 : rank > n ? n : rank;
}

static unsigned hist_index(uint64_t v)
{
	if (v < SIM_HIST_SUB)
		return (unsigned)v;
	unsigned msb = 63 - (unsigned)__builtin_clzll(v);	/* >= 4 */
	unsigned sub = (unsigned)(v >> (msb - 4)) & (SIM_HIST_SUB - 1);

	return (msb - 3) * SIM_HIST_SUB + sub;
}

static uint64_t hist_lower(unsigned idx)
{
	if (idx < SIM_HIST_SUB)
		return idx;
	unsigned msb = idx / SIM_HIST_SUB + 3, sub = idx % SIM_HIST_SUB;

	return ((uint64_t)(SIM_HIST_SUB + sub)) << (msb - 4);
}

void sim_hist_add(struct sim_hist *h, uint64_t v)
{
	h->count++;
	h->sum += v;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->bucket[hist_index(v)]++;
}

uint64_t sim_hist_quantile(const struct sim_hist *h, double q)
{
	if (!h->count)
		return 0;
	uint64_t rank = nearest_rank(q, h->count), acc = 0;

	for (unsigned i = 0; i < SIM_HIST_BUCKETS; i++) {
		acc += h->bucket[i];
		if (acc >= rank) {
			uint64_t lo = hist_lower(i);

			return lo < h->min ? h->min : lo > h->max ? h->max : lo;
		}
	}
	return h->max;
}

void sim_samples_init(struct sim_samples *s)
{
	memset(s, 0, sizeof(*s));
}

void sim_samples_fini(struct sim_samples *s)
{
	free(s->v);
	for (int i = 0; i < SIM_SAMPLES_POWERS; i++)
		free(s->hist[i]);
	memset(s, 0, sizeof(*s));
}

/* ---- past exact_max: the histogram ------------------------------------------ */

#define SUB (1u << SIM_SAMPLES_SUB_BITS)

/* Power slot 0 holds 0 .. SUB-1 one value a bucket; slot p >= 1 the values
 * whose highest bit is SIM_SAMPLES_SUB_BITS - 1 + p, by their next bits. */
static unsigned samples_slot(uint64_t v, unsigned *sub)
{
	if (v < SUB) {
		*sub = (unsigned)v;
		return 0;
	}
	unsigned msb = 63 - (unsigned)__builtin_clzll(v);	/* >= SUB_BITS */

	*sub = (unsigned)(v >> (msb - SIM_SAMPLES_SUB_BITS)) & (SUB - 1);
	return msb - SIM_SAMPLES_SUB_BITS + 1;
}

static uint64_t samples_lower(unsigned slot, unsigned sub)
{
	if (!slot)
		return sub;
	return ((uint64_t)SUB + sub) << (slot - 1);
}

static int hist_put(struct sim_samples *s, uint64_t v)
{
	unsigned sub, slot = samples_slot(v, &sub);

	if (!s->hist[slot] && !(s->hist[slot] = calloc(SUB, sizeof(uint64_t))))
		return -1;
	s->hist[slot][sub]++;
	if (v < s->min)
		s->min = v;
	if (v > s->max)
		s->max = v;
	return 0;
}

/* The exact values into the histogram; then the array goes. */
static int to_hist(struct sim_samples *s)
{
	s->min = UINT64_MAX;
	s->max = 0;
	for (size_t i = 0; i < s->n; i++)
		if (hist_put(s, s->v[i]))
			return -1;
	free(s->v);
	s->v = NULL;
	s->cap = 0;
	s->sorted = 0;
	return 0;
}

/* The value of 0-based rank k of n: the lower bound of its bucket, the
 * extremes exact. */
static uint64_t hist_rank(const struct sim_samples *s, uint64_t k)
{
	uint64_t acc = 0;

	if (k == 0)
		return s->min;
	if (k + 1 >= s->n)
		return s->max;
	for (unsigned p = 0; p < SIM_SAMPLES_POWERS; p++) {
		if (!s->hist[p])
			continue;
		for (unsigned i = 0; i < SUB; i++) {
			acc += s->hist[p][i];
			if (acc > k) {
				uint64_t lo = samples_lower(p, i);

				return lo < s->min ? s->min : lo;
			}
		}
	}
	return s->max;
}

int sim_samples_add(struct sim_samples *s, uint64_t v)
{
	size_t lim = s->exact_max ? s->exact_max : SIM_SAMPLES_EXACT;

	if (s->n >= lim) {
		if (s->v && to_hist(s))
			return -1;
		if (hist_put(s, v))
			return -1;
		s->n++;
		return 0;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		uint64_t *nv = realloc(s->v, cap * sizeof(*nv));

		if (!nv)
			return -1;
		s->v = nv;
		s->cap = cap;
	}
	s->v[s->n++] = v;
	s->sorted = 0;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/*
 * Sort v[0..n) ascending. A run's completion times are hundreds of
 * thousands of samples (a constant-rate run: one per message) and glibc's
 * qsort calls its comparison through a pointer n log n times: 5% of a 10
 * Gb/s dumbbell run went there. An LSD radix sort on 11-bit digits takes
 * as many passes as the largest sample needs (picoseconds up to 2^33, 0.9 s:
 * 3 passes). Small or unsortable-buffer cases use qsort.
 */
#define RADIX_BITS 11
#define RADIX_N (1u << RADIX_BITS)

static void sort_u64(uint64_t *v, size_t n)
{
	uint64_t max = 0, *tmp;
	size_t *cnt;

	for (size_t i = 0; i < n; i++)
		max = v[i] > max ? v[i] : max;
	if (n < 256 || !(tmp = malloc(n * sizeof(*tmp))))
		goto fallback;
	cnt = malloc(RADIX_N * sizeof(*cnt));
	if (!cnt) {
		free(tmp);
		goto fallback;
	}
	uint64_t *src = v, *dst = tmp;

	for (unsigned shift = 0; shift < 64 && (max >> shift); shift += RADIX_BITS) {
		size_t sum = 0;

		memset(cnt, 0, RADIX_N * sizeof(*cnt));
		for (size_t i = 0; i < n; i++)
			cnt[(src[i] >> shift) & (RADIX_N - 1)]++;
		for (size_t d = 0; d < RADIX_N; d++) {
			size_t c = cnt[d];

			cnt[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[cnt[(src[i] >> shift) & (RADIX_N - 1)]++] = src[i];
		uint64_t *t = src;

		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
	free(cnt);
	free(tmp);
	return;
fallback:
	qsort(v, n, sizeof(*v), cmp_u64);
}

/* ---- several quantiles by selection -------------------------------------- */

static inline void swap_u64(uint64_t *a, uint64_t *b)
{
	uint64_t t = *a;

	*a = *b;
	*b = t;
}

static inline uint64_t median3(uint64_t a, uint64_t b, uint64_t c)
{
	if (a > b)
		swap_u64(&a, &b);
	return c <= a ? a : c >= b ? b : c;
}

/*
 * The value of rank k (0-based) in v[lo, hi), moving v's elements so that
 * those before k are no larger and those after no smaller (Hoare's
 * selection). Three-way partitions: completion times are often all equal
 * (B1: 1.19M of 1.382 us), which a two-way partition would make quadratic.
 * Past 2 log2 n + 8 rounds it sorts what is left (radix, sort_u64), so no
 * input costs more than a sort.
 */
static uint64_t select_rank(uint64_t *v, size_t lo, size_t hi, size_t k)
{
	unsigned round = 0, limit = 2 * (64 - (unsigned)__builtin_clzll((uint64_t)(hi - lo) | 1)) + 8;

	while (hi - lo > 16) {
		if (round++ > limit) {
			sort_u64(v + lo, hi - lo);
			return v[k];
		}
		uint64_t p = median3(v[lo], v[lo + (hi - lo) / 2], v[hi - 1]);
		size_t lt = lo, i = lo, gt = hi;

		/* [lo, lt) < p, [lt, i) == p, [gt, hi) > p */
		while (i < gt) {
			if (v[i] < p)
				swap_u64(&v[lt++], &v[i++]);
			else if (v[i] > p)
				swap_u64(&v[i], &v[--gt]);
			else
				i++;
		}
		if (k < lt)
			hi = lt;
		else if (k >= gt)
			lo = gt;
		else
			return p;
	}
	for (size_t i = lo + 1; i < hi; i++)	/* a few left: insertion */
		for (size_t j = i; j > lo && v[j - 1] > v[j]; j--)
			swap_u64(&v[j - 1], &v[j]);
	return v[k];
}

void sim_samples_quantiles(struct sim_samples *s, const double *q, int nq, uint64_t *out)
{
	size_t prev = 0;

	for (int i = 0; i < nq; i++) {
		if (!s->n) {
			out[i] = 0;
			continue;
		}
		size_t k = (size_t)nearest_rank(q[i], s->n) - 1;

		if (!s->v) {
			out[i] = hist_rank(s, k);
			continue;
		}

		if (s->sorted) {
			out[i] = s->v[k];
			continue;
		}
		/* after a selection of rank prev, ranks >= prev lie in [prev, n) */
		out[i] = select_rank(s->v, k >= prev ? prev : 0, s->n, k);
		prev = k;
	}
}

uint64_t sim_samples_quantile(struct sim_samples *s, double q)
{
	if (!s->n)
		return 0;
	if (!s->v)
		return hist_rank(s, nearest_rank(q, s->n) - 1);
	if (!s->sorted) {
		sort_u64(s->v, s->n);
		s->sorted = 1;
	}
	return s->v[nearest_rank(q, s->n) - 1];
}
