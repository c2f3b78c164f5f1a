/* SPDX-License-Identifier: MIT */
/*
 * shim_late.c - a program on its way (docs/shim.md, "Programs on their
 * way"). Two simulated hosts meet over TCP before one of them has made its
 * first verbs call, as ucx_perftest's server does: the server (this
 * process, the host `ibfab exec --host` names) accepts the client, then
 * spends 300 ms of real time before it attaches (starting UCX, say), then
 * writes to it in two small pieces, 40 and 65 bytes, as ucx_perftest sends
 * its address. The client (a child, host h1), attached from the start,
 * waits for those bytes polling 1 ms at a time, as ucx_perftest does.
 *
 * The clock must wait for the server: the client sees no timeout pass and
 * has all 105 bytes at the simulated instant it began to wait. Were the
 * clock free while the host starts the server, some 300 timeouts would
 * pass (one per millisecond of real time: the connection's other end may
 * be a process outside the simulation). Prints "late: ok (0 timeouts,
 * 0 us)" and exits 0, or says what it saw and exits 1.
 *
 * `shim_late fork`: as qperf's server, this process accepts the client's
 * connection, then forks a worker (the same host) that attaches and reads
 * the client's byte, and waits for it in waitpid(), which the shim does
 * not see. The client (h1) sleeps 1 ms of simulated time before it writes.
 * The worker's attaching ends the announcement this process made at its
 * accept; else this process would hold the clock for 10 s of real time
 * (the daemon then logs "said it would attach"). Prints "late: fork ok".
 *
 * Both ends' sockets must have Nagle's algorithm off (TCP_NODELAY, which
 * the shim sets on a simulated program's TCP connections): else a small
 * write after another unacknowledged one waits in the kernel for the
 * peer's ACK, as long as the host takes to send it, while the clock may
 * run (docs/shim.md). Prints "late: Nagle on ..." and exits 1 if not.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int attach(void)
{
	int n;
	struct ibv_device **l = ibv_get_device_list(&n);

	if (!l || n < 1) {
		fprintf(stderr, "late: no simulated device\n");
		return -1;
	}
	ibv_free_device_list(l);
	return 0;
}

/* Nagle's algorithm is off on fd (what the shim must have set). */
static int nodelay(int fd, const char *end)
{
	int on = 0;
	socklen_t l = sizeof(on);

	if (getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, &l) || !on) {
		printf("late: Nagle on at the %s's end (TCP_NODELAY not set)\n", end);
		return -1;
	}
	return 0;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000;
}

/* The client: attached first, then waits for 105 bytes 1 ms at a time. */
static int client(const struct sockaddr_in *a)
{
	char buf[105];
	size_t got = 0;
	unsigned timeouts = 0;
	uint64_t t0;
	int s;

	if (setenv("IBFAB_HOST", "h1", 1) || attach())
		return 1;
	s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0 || connect(s, (const struct sockaddr *)a, sizeof(*a))) {
		perror("late: connect");
		return 1;
	}
	if (nodelay(s, "client"))
		return 1;
	t0 = now_us();
	while (got < sizeof(buf)) {
		struct pollfd p = { .fd = s, .events = POLLIN };
		int r = poll(&p, 1, 1);
		ssize_t n;

		if (r < 0) {
			perror("late: poll");
			return 1;
		}
		if (!r) {
			if (++timeouts > 5000)
				break;
			continue;
		}
		n = recv(s, buf + got, sizeof(buf) - got, 0);
		if (n <= 0) {
			fprintf(stderr, "late: the server closed after %zu bytes\n", got);
			return 1;
		}
		got += (size_t)n;
	}
	printf("late: %s (%u timeouts, %llu us)\n",
	       got == sizeof(buf) && !timeouts && now_us() == t0 ? "ok" : "the clock ran on",
	       timeouts, (unsigned long long)(now_us() - t0));
	fflush(stdout);
	if (write(s, "x", 1) != 1)
		return 1;
	close(s);
	return got == sizeof(buf) && !timeouts && now_us() == t0 ? 0 : 1;
}

/* fork mode: the client attaches, connects, sleeps 1 ms, writes a byte */
static int fork_client(const struct sockaddr_in *a)
{
	int s;

	if (setenv("IBFAB_HOST", "h1", 1) || attach())
		return 1;
	s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0 || connect(s, (const struct sockaddr *)a, sizeof(*a)))
		return 1;
	usleep(1000);
	return write(s, "y", 1) == 1 ? 0 : 1;
}

static int fork_mode(int l, const struct sockaddr_in *a)
{
	pid_t cl, wk;
	int c, st1 = 1, st2 = 1;
	char b;

	cl = fork();
	if (cl < 0)
		return 1;
	if (!cl)
		_exit(fork_client(a));
	c = accept(l, NULL, NULL);	/* announces this process */
	if (c < 0)
		return 1;
	wk = fork();
	if (wk < 0)
		return 1;
	if (!wk)
		_exit(attach() || read(c, &b, 1) != 1 || b != 'y');
	if (waitpid(wk, &st1, 0) != wk || waitpid(cl, &st2, 0) != cl)
		return 1;
	if (!WIFEXITED(st1) || WEXITSTATUS(st1) || !WIFEXITED(st2) || WEXITSTATUS(st2)) {
		printf("late: fork: worker %d, client %d\n", st1, st2);
		return 1;
	}
	printf("late: fork ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	char piece[65] = { 0 }, ack;
	struct timespec start = { 0, 300000000 };
	int l, c, st = 0;
	pid_t pid;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &alen)) {
		perror("late: listen");
		return 1;
	}
	if (argc > 1 && !strcmp(argv[1], "fork"))
		return fork_mode(l, &a);
	pid = fork();
	if (pid < 0)
		return 1;
	if (!pid)
		_exit(client(&a));
	c = accept(l, NULL, NULL);
	if (c < 0) {
		perror("late: accept");
		return 1;
	}
	if (nodelay(c, "server"))
		return 1;
	nanosleep(&start, NULL);	/* not attached yet: real time */
	if (attach())
		return 1;
	if (write(c, piece, 40) != 40 || write(c, piece, 65) != 65 || read(c, &ack, 1) != 1) {
		perror("late: server");
		return 1;
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return 1;
	return WEXITSTATUS(st);
}
