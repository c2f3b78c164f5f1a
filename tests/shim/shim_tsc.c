/* SPDX-License-Identifier: MIT */
/*
 * shim_tsc.c - the emulated time-stamp counter (docs/shim.md, "rdtsc")
 * when the program installs a SIGILL handler of its own after attach, as
 * UCX does when a context starts (Open MPI's ranks through it): the
 * counter must still count simulated time - 5 ms of usleep() are 5 ms of
 * cycles at the shim's rate, and the counter does not step back - and a
 * real illegal instruction must reach the program's handler.
 * tests/interop/shim_exec.sh runs it; each check prints a line, and the
 * exit status is the failures.
 */
#define _GNU_SOURCE
#include "checks.h"
#include <infiniband/verbs.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static sigjmp_buf back;
static volatile sig_atomic_t caught;

static void on_ill(int sig)
{
	(void)sig;
	caught++;
	siglongjmp(back, 1);
}

int main(void)
{
	struct ibv_device **l = ibv_get_device_list(NULL);	/* attaches */
	struct sigaction sa, old;
	struct timeval a, b;
	uint64_t t0, t1, t2;

	check(l && l[0], "the device is there (attached)");
	t0 = rdtsc();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_ill;
	sigemptyset(&sa.sa_mask);
	check(!sigaction(SIGILL, &sa, &old), "a SIGILL handler of the program's own");
	gettimeofday(&a, NULL);
	t1 = rdtsc();
	usleep(5000);
	t2 = rdtsc();
	gettimeofday(&b, NULL);
	check(t1 >= t0 && t2 > t1, "the counter still counts, never back");
	/* the shim's rate is the /proc/cpuinfo MHz (no UCX here): t2 - t1
	 * cycles over the 5 ms gettimeofday saw */
	double us = (double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_usec - a.tv_usec);
	double mhz = (double)(t2 - t1) / us;
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256];
	double want = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "cpu MHz : %lf", &want) == 1)
			break;
	if (f)
		fclose(f);
	printf("5 ms of usleep: %.0f us, %.3f cycles/us (cpuinfo %.3f MHz)\n", us, mhz, want);
	check(us == 5000, "usleep(5000) is 5,000 simulated us");
	check(want > 0 && mhz > want * 0.999 && mhz < want * 1.001,
	      "the cycles are simulated time at the cpuinfo rate");
	check(!sigaction(SIGILL, NULL, &old) && old.sa_handler == on_ill,
	      "sigaction reports the program's handler");
	if (!sigsetjmp(back, 1))
		__asm__ volatile("ud2");
	check(caught == 1, "a real illegal instruction reaches the program's handler");
	t0 = rdtsc();
	check(t0 >= t2, "and the counter goes on after it");
	ibv_free_device_list(l);
	return failures;
}
