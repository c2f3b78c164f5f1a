/* SPDX-License-Identifier: MIT */
/*
 * shim_heap.c - where an attached program's large buffers land
 * (docs/shim.md, "Repeatability"). glibc raises its mmap threshold to the
 * size of each mapped block freed, so after a 256 KiB buffer is freed the
 * next ones come from the heap, at offsets that depend on the heap's
 * history - and UCX's rendezvous READs, with the fabric's packets, follow
 * a receive buffer's offset in its page. The shim keeps the threshold at
 * 128 KiB once the program attaches: every buffer of that size or more
 * starts 16 bytes into fresh pages.
 *
 * The program attaches (ibv_get_device_list), frees a 256 KiB buffer,
 * takes a small block, then two 256 KiB buffers. Without the fixed
 * threshold both come from the heap, one after the other, so their
 * offsets in the page differ by 16 bytes and cannot both be 16.
 *   shim_heap         both must start 16 bytes into a page
 *   shim_heap --own   the program chose its own threshold (GLIBC_TUNABLES
 *                     glibc.malloc.mmap_threshold, set by the test): the
 *                     shim leaves it, and they must not both
 * Prints "heap: ok" and the offsets, exit 0; else what it saw, exit 1.
 */
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIG (256u << 10)

int main(int argc, char **argv)
{
	const int own = argc > 1 && !strcmp(argv[1], "--own");
	struct ibv_device **list = ibv_get_device_list(NULL);
	void *first, *small, *a, *b;

	if (!list || !list[0]) {
		fprintf(stderr, "heap: no device (attach failed)\n");
		return 1;
	}
	ibv_free_device_list(list);
	first = malloc(BIG);
	if (!first)
		return 1;
	memset(first, 1, BIG);
	free(first);
	small = malloc(200);
	a = malloc(BIG);
	b = malloc(BIG);
	if (!small || !a || !b)
		return 1;
	const unsigned oa = (unsigned)((uintptr_t)a % 4096), ob = (unsigned)((uintptr_t)b % 4096);
	const int paged = oa == 16 && ob == 16;

	printf("offsets %u %u\n", oa, ob);
	free(small);
	free(a);
	free(b);
	if (paged == !own) {
		printf("heap: ok\n");
		return 0;
	}
	printf("heap: %s\n", own ? "the program's own threshold was overridden"
				 : "256 KiB buffers did not start 16 bytes into a page");
	return 1;
}
