/* SPDX-License-Identifier: MIT */
/* sim_pool.c - chunked index pools; see sim_pool.h. */
#include "sim/sim_pool.h"
#include "sim/sim_mem.h"

#include <stdlib.h>
#include <string.h>

void sim_pool_init(struct sim_pool *p, size_t obj_size)
{
	memset(p, 0, sizeof(*p));
	p->obj_size = obj_size < sizeof(uint32_t) ? sizeof(uint32_t) : obj_size;
	p->free_head = SIM_POOL_NIL;
}

void sim_pool_fini(struct sim_pool *p)
{
	for (uint32_t i = 0; i < p->nchunks; i++)
		free(p->chunks[i]);
	free(p->chunks);
	memset(p, 0, sizeof(*p));
}

static int pool_grow(struct sim_pool *p)
{
	if (p->nchunks == p->chunks_cap) {
		uint32_t cap = p->chunks_cap ? p->chunks_cap * 2 : 8;
		char **nc = realloc(p->chunks, cap * sizeof(*nc));

		if (!nc)
			return -1;
		p->chunks = nc;
		p->chunks_cap = cap;
	}
	/* Line-aligned: an object of 64 or 128 bytes then starts a line, and
	 * a packet's per-hop fields (its first line) are one line, not two. */
	size_t bytes = SIM_POOL_CHUNK * p->obj_size;
	char *c = aligned_alloc(64, (bytes + 63) & ~(size_t)63);

	if (!c)
		return -1;
	/* a chunk the heap grew for: advise the new stretch before the loop
	 * below touches it (a replay makes thousands of records in one event) */
	sim_mem_heap_watch();
	uint32_t base = p->nchunks << SIM_POOL_CHUNK_SHIFT;

	p->chunks[p->nchunks++] = c;
	/* Thread the new objects onto the free list, lowest index first. */
	for (uint32_t i = SIM_POOL_CHUNK; i-- > 0;) {
		memcpy(c + (size_t)i * p->obj_size, &p->free_head, sizeof(uint32_t));
		p->free_head = base + i;
	}
	return 0;
}

uint32_t sim_pool_alloc(struct sim_pool *p)
{
	if (p->free_head == SIM_POOL_NIL && pool_grow(p))
		return SIM_POOL_NIL;
	uint32_t idx = p->free_head;

	memcpy(&p->free_head, sim_pool_get(p, idx), sizeof(uint32_t));
	if (++p->live > p->high)
		p->high = p->live;
	return idx;
}

void sim_pool_put(struct sim_pool *p, uint32_t idx)
{
	memcpy(sim_pool_get(p, idx), &p->free_head, sizeof(uint32_t));
	p->free_head = idx;
	p->live--;
}
