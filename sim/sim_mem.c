/* SPDX-License-Identifier: MIT */
/* sim_mem.c - large allocations: huge-page advice (large blocks, malloc's
 * heap as built and as it grows), and sized blocks that grow without
 * copying (in small pages); see sim_mem.h. */
#define _GNU_SOURCE	/* mremap */
#include "sim/sim_mem.h"

#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Linux 6.1's synchronous collapse; glibc 2.36's headers do not name it. */
#if defined(__linux__) && !defined(MADV_COLLAPSE)
#define MADV_COLLAPSE 25
#endif

/*
 * madvise() the whole 2 MiB pages inside [p, p + n). Advice only: a kernel
 * without THP, or before 6.1 for MADV_COLLAPSE, says EINVAL, and nothing
 * but the speed changes.
 */
static void advise(void *p, size_t n, int advice)
{
	uintptr_t lo = ((uintptr_t)p + SIM_MEM_HUGE - 1) & ~(SIM_MEM_HUGE - 1);
	uintptr_t hi = ((uintptr_t)p + n) & ~(SIM_MEM_HUGE - 1);

	if (p && hi > lo)
		(void)madvise((void *)lo, hi - lo, advice);
}

void sim_mem_advise(void *p, size_t n)
{
#ifdef MADV_HUGEPAGE
	advise(p, n, MADV_HUGEPAGE);
#else
	(void)p;
	(void)n;
#endif
}

void *sim_mem_alloc(size_t n)
{
	void *p = malloc(n);

	if (n >= SIM_MEM_HUGE)
		sim_mem_advise(p, n);
	return p;
}

void *sim_mem_calloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb, size);

	/* calloc checked nmemb * size for overflow: p is NULL if it did */
	if (p && nmemb * size >= SIM_MEM_HUGE)
		sim_mem_advise(p, nmemb * size);
	return p;
}

void *sim_mem_realloc(void *p, size_t n)
{
	void *q = realloc(p, n);

	if (n >= SIM_MEM_HUGE)
		sim_mem_advise(q, n);
	return q;
}

bool sim_mem_thp(void)
{
	FILE *fp = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	char buf[128] = "";
	bool on;

	if (!fp)
		return false;	/* no THP in this kernel */
	on = fgets(buf, sizeof(buf), fp) && !strstr(buf, "[never]");
	fclose(fp);
	return on;
}

/* The end of malloc's heap advised so far (2 MiB-aligned), 0 before
 * sim_mem_advise_heap; sim_mem_heap_watch advises what grew past it. */
static uintptr_t heap_advised;

/* How much malloc adds to its heap at a time once the model is built
 * (M_TOP_PAD; its default is 128 KiB): a slab that sim_mem_heap_watch
 * advises before most of it is touched. Address space only until used. */
#define HEAP_PAD ((size_t)32 << 20)

void sim_mem_advise_heap(void)
{
	/* The kernel names malloc's brk heap "[heap]" in /proc/self/maps. */
	FILE *fp;
	char line[512];
	unsigned long lo, hi;

	/* MADV_COLLAPSE is "independent of the system-wide THP sysfs
	 * settings" (madvise(2)): where the administrator chose "never" it
	 * would collapse anyway, so ask the setting first. */
	if (!sim_mem_thp() || !(fp = fopen("/proc/self/maps", "r")))
		return;
	while (fgets(line, sizeof(line), fp))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && strstr(line, "[heap]")) {
			sim_mem_advise((void *)lo, hi - lo);
#ifdef MADV_COLLAPSE
			/* The heap is written already: the advice alone would
			 * cover only the pages touched from now on (khugepaged
			 * collapses the rest slowly, if at all). Collapse now. */
			advise((void *)lo, hi - lo, MADV_COLLAPSE);
#endif
			/* the heap's last VMA: the one that grows */
			__atomic_store_n(&heap_advised, hi & ~(SIM_MEM_HUGE - 1), __ATOMIC_RELAXED);
		}
	fclose(fp);
	if (!__atomic_load_n(&heap_advised, __ATOMIC_RELAXED))
		return;
	/* From here malloc's settings are fixed (setting one stops glibc
	 * from moving its mmap threshold as blocks are freed): blocks up to
	 * 32 MiB, the most that threshold would rise to, from the heap, which
	 * is advised; the heap grows HEAP_PAD at a time and does not shrink
	 * (a stretch given back and taken again would be a mapping without
	 * the advice: sim_mem_heap_watch advises only past what it has). */
	(void)mallopt(M_MMAP_THRESHOLD, 32 << 20);
	(void)mallopt(M_TOP_PAD, (int)HEAP_PAD);
	(void)mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

void sim_mem_heap_watch(void)
{
	uintptr_t from = __atomic_load_n(&heap_advised, __ATOMIC_RELAXED);
	uintptr_t top = (uintptr_t)sbrk(0);	/* glibc: no system call */

	if (!from || top == (uintptr_t)-1)
		return;
	if (top < from) {
		/* given back after all (a gigabyte free at its top): advise
		 * from here when it grows again */
		(void)__atomic_compare_exchange_n(&heap_advised, &from, top & ~(SIM_MEM_HUGE - 1),
						  false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
		return;
	}
	if (top < from + SIM_MEM_HUGE)
		return;
	top &= ~(SIM_MEM_HUGE - 1);
	/* one caller advises a stretch (partitions' threads may race) */
	if (__atomic_compare_exchange_n(&heap_advised, &from, top, false, __ATOMIC_RELAXED,
					__ATOMIC_RELAXED))
		sim_mem_advise((void *)from, top - from);
}

/* ---- sized blocks that grow without copying ------------------------------ */

static size_t page_round(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (n + pg - 1) / pg * pg;
}

/*
 * A 2 MiB-aligned stretch of n (page-rounded) bytes of address space: map
 * n + 2 MiB anywhere and unmap the slack either side. The mapping is
 * readable and writable but nothing is behind it until touched.
 */
static void *map_aligned(size_t n)
{
	size_t len = n + SIM_MEM_HUGE;
	char *base = mmap(NULL, len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	char *a;

	if (base == MAP_FAILED)
		return NULL;
	a = (char *)(((uintptr_t)base + SIM_MEM_HUGE - 1) & ~(SIM_MEM_HUGE - 1));
	if (a > base)
		munmap(base, (size_t)(a - base));
	if (base + len > a + n)
		munmap(a + n, (size_t)(base + len - (a + n)));
	return a;
}

void *sim_mem_resize(void *p, size_t old, size_t n)
{
	void *q;

	if (n < SIM_MEM_HUGE) {
		if (old >= SIM_MEM_HUGE)
			return NULL;	/* shrinking is not offered */
		return realloc(p, n ? n : 1);
	}
	n = page_round(n);
	if (old < SIM_MEM_HUGE) {
		/* from malloc's heap to a mapping of its own: the one copy */
		q = map_aligned(n);
		if (!q)
			return NULL;
#ifdef MADV_NOHUGEPAGE
		/* 4 KiB pages, asked for all of it: a mapping advised in part is
		 * two, and mremap() moves only one. See sim_mem.h for why not
		 * huge pages. */
		(void)madvise(q, n, MADV_NOHUGEPAGE);
#endif
		if (p) {
			memcpy(q, p, old);
			free(p);
		}
		return q;
	}
	old = page_round(old);
	if (n <= old)
		return p;
	/* Move the pages themselves to a place with room; the mapping keeps
	 * its advice. Aligned all the same: where THP is "always" and the
	 * advice is refused, the kernel moves whole huge pages when both ends
	 * are 2 MiB-aligned and splits them otherwise. */
	q = map_aligned(n);
	if (!q)
		return NULL;
	if (mremap(p, old, n, MREMAP_MAYMOVE | MREMAP_FIXED, q) == MAP_FAILED) {
		munmap(q, n);
		return NULL;	/* p is as it was */
	}
	return q;
}

void sim_mem_free_sized(void *p, size_t n)
{
	if (!p)
		return;
	if (n < SIM_MEM_HUGE)
		free(p);
	else
		munmap(p, page_round(n));
}
