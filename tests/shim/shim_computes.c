/* SPDX-License-Identifier: MIT */
/*
 * shim_computes.c - a program that computes for a while without a word to
 * the daemon, then measures time (docs/shim.md, "Time"): perftest does so
 * at the end of every bandwidth test, its peak search (tens of
 * milliseconds of CPU) followed by its cycle-counter calibration. After
 * 20 ms of CPU without a word, the daemon takes a program for spinning on
 * its memory and lets the clock run on to the next events (here: the
 * peer's 100 us sleeps) as fast as the host runs the others. Once the
 * program reads the clock, by gettimeofday or by rdtsc, it must stand still
 * while the program runs, or the readings depend on the host's scheduler
 * (perftest's calibration then saw r^2 < 0.9 and printed no report).
 * tests/interop/shim_repeat.sh runs it.
 *
 * One process forks in two before attaching: h0 and h1, an RC QP each,
 * connected over a pipe pair. h1 sleeps 100 us at a time until h0 says
 * stop; h0 computes 60 ms, reads the clock, computes 5 ms, reads it again,
 * twice (rdtsc, then gettimeofday). Each check prints a line; the exit
 * status says whether all held.
 */
#define _GNU_SOURCE
#include "checks.h"
#include "rc_pair.h"

#include <infiniband/verbs.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


static uint64_t now_us(void)
{
	struct timeval t;

	gettimeofday(&t, NULL);
	return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_usec;
}

/* The thread's CPU time (real: the shim leaves CPU clocks alone), s. */
static double cpu_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* s seconds of CPU, no system call but the CPU clock's */
static void compute(double s)
{
	double end = cpu_s() + s;
	volatile uint64_t x = 0;

	while (cpu_s() < end)
		for (int i = 0; i < 20000; i++)
			x += (uint64_t)i;
}

static int run(int me, int rfd, int wfd)
{
	struct ibv_device **l;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_port_attr pa;
	char sync = 0;

	setenv("IBFAB_HOST", me ? "h1" : "h0", 1);
	l = ibv_get_device_list(NULL);
	if (!l || !l[0] || !(ctx = ibv_open_device(l[0])) || !(pd = ibv_alloc_pd(ctx)) ||
	    !(cq = ibv_create_cq(ctx, 16, NULL, NULL, 0)))
		die("device");
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};

	if (!(qp = ibv_create_qp(pd, &ia)) || ibv_query_port(ctx, 1, &pa))
		die("qp");
	rc_pair_connect(qp, pa.lid, rfd, wfd);
	xfer(wfd, &sync, 1, 1);
	xfer(rfd, &sync, 1, 0);

	if (me == 1) {
		/* the clock's next events: a sleep of 100 us at a time */
		for (;;) {
			struct pollfd p = { .fd = rfd, .events = POLLIN };

			usleep(100);
			if (poll(&p, 1, 0) == 1)
				break;
		}
		xfer(rfd, &sync, 1, 0);
		return 0;
	}

	uint64_t t0 = now_us();

	compute(0.060);		/* taken for a spin after 20 ms */
	uint64_t s = rdtsc();

	compute(0.005);
	uint64_t e = rdtsc();
	uint64_t t1 = now_us();

	printf("h0: the clock ran %llu us while it computed 60 ms\n", (unsigned long long)(t1 - t0));
	check(t1 > t0, "the clock runs on while a silent program computes (taken for a spin)");
	check(e == s, "rdtsc: the clock stands still from the first reading on while it runs");

	compute(0.060);
	t0 = now_us();
	compute(0.005);
	t1 = now_us();
	check(t1 == t0, "gettimeofday: the clock stands still from the first reading on");

	xfer(wfd, &sync, 1, 1);
	return failures;
}

int main(void)
{
	return rc_pair_main(run);
}
