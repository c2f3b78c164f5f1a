/* SPDX-License-Identifier: MIT */
/* sim_mem.c - large allocations backed by transparent huge pages; see sim_mem.h. */
#include "sim/sim_mem.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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
			break;
		}
	fclose(fp);
}
