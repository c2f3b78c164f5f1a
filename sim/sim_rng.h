/* SPDX-License-Identifier: MIT */
/*
 * sim_rng.h - per-entity random streams.
 *
 * Every random draw comes from a stream owned by one entity and seeded from
 * (run seed, entity id) with splitmix64, so adding an entity or reordering
 * draws in one entity never changes another's sequence, and a run is
 * reproducible from its seed (docs/architecture.md). The generator is xoshiro256**.
 */
#ifndef IBFAB_SIM_RNG_H
#define IBFAB_SIM_RNG_H

#include <stdint.h>

struct sim_rng {
	uint64_t s[4];
};

void sim_rng_init(struct sim_rng *r, uint64_t run_seed, uint64_t stream_id);
uint64_t sim_rng_next(struct sim_rng *r);
/* Uniform in [0, n), unbiased (Lemire's method). n > 0. */
uint64_t sim_rng_below(struct sim_rng *r, uint64_t n);
/* Uniform double in [0, 1) with 53 random bits. */
double sim_rng_double(struct sim_rng *r);
/* Stable 64-bit hash of a string, for deriving stream ids from names. */
uint64_t sim_hash_str(const char *s);

/* splitmix64's finaliser: every input bit moves every output bit (a
 * hash of a 64-bit key, as ECMP's and flowlet tables use). */
static inline uint64_t sim_mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

#endif
