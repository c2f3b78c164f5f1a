/* SPDX-License-Identifier: MIT */
/*
 * sim_mem.h - large allocations: transparent huge pages for the hot ones,
 * and sized blocks that grow without copying (sim_mem_resize).
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
 * what the program computes, only how fast (docs/performance.md).
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
/*
 * A block whose owner keeps its size, for arrays that grow by doubling to
 * hundreds of megabytes (a traffic spec's or a trace's message list).
 * Below SIM_MEM_HUGE it is malloc's; from there it is a mapping of its
 * own that grows by moving its pages (mremap), never by copying them:
 * realloc() copies a block it keeps in its heap (below its mmap threshold,
 * which rises to 32 MiB as blocks are freed, and is 32 MiB once
 * sim_mem_advise_heap has run), and moves a mapped one to an
 * address not aligned as the old one was, so the kernel splits its huge
 * pages. On bench/run's B1 at 1 s those copies were 11% of the run.
 *
 * These blocks are advised *against* huge pages (MADV_NOHUGEPAGE). A
 * message list is written once in order and then read a few times per
 * message: huge pages save it few TLB misses, and on a virtual machine
 * that hands free memory back to its host (virtio balloon free page
 * reporting, as here) a fresh 2 MiB page costs up to 5x a 4 KiB one to
 * fault in. Measured here: the 1,024-host 4 MiB ring's 167 MB flow list
 * cost 0.80-1.09 s of system time in huge pages and 0.19-0.21 s in small
 * ones, with the same user time.
 *
 * sim_mem_resize(p, old, n) grows p from old to n bytes (n > old; NULL and
 * p unchanged on failure); sim_mem_free_sized(p, n) frees a block of size
 * n. Never pass these blocks to realloc() or free().
 */
void *sim_mem_resize(void *p, size_t old, size_t n);
void sim_mem_free_sized(void *p, size_t n);
/* Transparent huge pages in this kernel, and not switched off ("never")? */
bool sim_mem_thp(void);
/*
 * Advise malloc's main heap as it stands: the many small blocks of a
 * large fabric (queue pairs, their rings, completion queues) live there.
 * Call when the model is built, before the run; what grows later:
 * sim_mem_heap_watch.
 */
void sim_mem_advise_heap(void);
/*
 * The heap grows during a run too (queue pairs made at a pair's first
 * transfer, records of steps in flight): each brk extension is a mapping
 * the advice above did not cover. From sim_mem_advise_heap on, malloc
 * extends its heap 32 MiB at a time (M_TOP_PAD) and this call, made now and
 * then (the engine: every SIM_MEM_WATCH_EVENTS events; a pool: as it takes
 * a new chunk), advises the whole 2 MiB pages added since, mostly before
 * they are first touched. Cheap: sbrk(0) reads a variable. It made 128
 * DGX-like servers' all_reduce 12-15% faster.
 * Threads other than the main one allocate from arenas of their own
 * (mapped, not the brk heap), which this does not cover.
 */
void sim_mem_heap_watch(void);
#define SIM_MEM_WATCH_EVENTS (1u << 12)

#endif
