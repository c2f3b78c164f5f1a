/* SPDX-License-Identifier: MIT */
/*
 * sim_mem.h - large allocations backed by transparent huge pages.
 *
 * A simulation of a thousand hosts or more touches a few cache lines here
 * and there in hundreds of megabytes of ports, queue pairs, events and
 * trace steps. With 4 KiB pages nearly every such touch is also a TLB miss,
 * and the page walk misses the cache too. Where the kernel's transparent
 * huge pages are in "madvise" mode (common: Ubuntu, many clouds, this
 * project's CI host), memory is backed by 2 MiB pages only when asked for
 * with madvise(MADV_HUGEPAGE); these helpers ask for it on large blocks.
 * In "always" mode the request is redundant; in "never" mode it is ignored
 * (and no collapse is asked), without THP refused: the advice never changes
 * what the program computes, only how fast (docs/performance-log.md).
 */
#ifndef IBFAB_SIM_MEM_H
#define IBFAB_SIM_MEM_H

#include <stdbool.h>
#include <stddef.h>

/* Blocks smaller than this are not advised: one huge page must fit. */
#define SIM_MEM_HUGE ((size_t)2 << 20)

/* Advise the 2 MiB-aligned pages inside [p, p + n) (none when n is small). */
void sim_mem_advise(void *p, size_t n);
/* malloc, calloc and realloc, advised when the block is large. */
void *sim_mem_alloc(size_t n);
void *sim_mem_calloc(size_t nmemb, size_t size);
void *sim_mem_realloc(void *p, size_t n);
/* Transparent huge pages in this kernel, and not switched off ("never")? */
bool sim_mem_thp(void);
/*
 * Advise malloc's main heap as it stands: the many small blocks of a
 * large fabric (queue pairs, their rings, completion queues) live there.
 * Call when the model is built, before the run; later growth is not covered.
 */
void sim_mem_advise_heap(void);

#endif
