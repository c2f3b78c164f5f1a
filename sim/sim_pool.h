/* SPDX-License-Identifier: MIT */
/*
 * sim_pool.h - fixed-size object pools addressed by 32-bit index.
 *
 * Packets and other per-packet records come from here, never from malloc on
 * the hot path (docs/architecture.md). Storage grows in line-aligned chunks of 4096 objects, so an
 * object's address never moves and an index is a compact handle (4 bytes in
 * a queue link instead of 8). Freed objects go on a LIFO free list: the most
 * recently freed, still-warm object is reused first.
 */
#ifndef IBFAB_SIM_POOL_H
#define IBFAB_SIM_POOL_H

#include <stdint.h>
#include <stddef.h>

#define SIM_POOL_NIL UINT32_MAX
#define SIM_POOL_CHUNK_SHIFT 12
#define SIM_POOL_CHUNK (1u << SIM_POOL_CHUNK_SHIFT)

struct sim_pool {
	size_t obj_size;		/* >= 4: the free list is stored in-object */
	char **chunks;
	uint32_t nchunks, chunks_cap;
	uint32_t free_head;
	uint32_t live, high;		/* objects in use, high-water mark */
};

void sim_pool_init(struct sim_pool *p, size_t obj_size);
void sim_pool_fini(struct sim_pool *p);
/* Returns an index, or SIM_POOL_NIL when memory is exhausted. */
uint32_t sim_pool_alloc(struct sim_pool *p);
void sim_pool_put(struct sim_pool *p, uint32_t idx);

static inline void *sim_pool_get(const struct sim_pool *p, uint32_t idx)
{
	return p->chunks[idx >> SIM_POOL_CHUNK_SHIFT] +
	       (size_t)(idx & (SIM_POOL_CHUNK - 1)) * p->obj_size;
}

#endif
