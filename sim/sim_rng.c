/* SPDX-License-Identifier: MIT */
/* sim_rng.c - splitmix64 seeding and xoshiro256** (Blackman & Vigna). */
#include "sim/sim_rng.h"

static uint64_t splitmix64(uint64_t *x)
{
	return sim_mix64(*x += 0x9e3779b97f4a7c15ULL);
}

void sim_rng_init(struct sim_rng *r, uint64_t run_seed, uint64_t stream_id)
{
	uint64_t x = run_seed;
	uint64_t mix = splitmix64(&x) ^ (stream_id * 0xd1342543de82ef95ULL);

	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&mix);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t sim_rng_next(struct sim_rng *r)
{
	uint64_t *s = r->s;
	uint64_t res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return res;
}

uint64_t sim_rng_below(struct sim_rng *r, uint64_t n)
{
	unsigned __int128 m = (unsigned __int128)sim_rng_next(r) * n;
	uint64_t lo = (uint64_t)m;

	if (lo < n) {
		uint64_t thresh = -n % n;

		while (lo < thresh) {
			m = (unsigned __int128)sim_rng_next(r) * n;
			lo = (uint64_t)m;
		}
	}
	return (uint64_t)(m >> 64);
}

double sim_rng_double(struct sim_rng *r)
{
	return (double)(sim_rng_next(r) >> 11) * 0x1.0p-53;
}

uint64_t sim_hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;	/* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}
