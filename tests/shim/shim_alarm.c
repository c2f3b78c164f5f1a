/* SPDX-License-Identifier: MIT */
/*
 * shim_alarm.c - timers and timeouts in simulated time (docs/shim.md,
 * "Time"): setitimer(ITIMER_REAL), alarm() and times() as qperf and
 * perftest's -D use them, and the timeouts of poll(), select() and
 * epoll_wait(). Under the shim SIGALRM must arrive when the simulated
 * clock reaches the deadline, interrupt a sleep there (EINTR, the time
 * left), repeat at the interval, stop when disarmed; times() must count
 * simulated ticks; a wait on descriptors must end at its timeout, to the
 * microsecond, or at once when one is ready; and a timeout on a socket
 * whose other end is a process outside the simulation (a child forked
 * before attaching, answering after 300 ms of real time, as mpirun's
 * daemon answers a rank) must not pass before that process could answer:
 * it passes in simulated and real time alike, and the clock waits a
 * while for such a process's answer (a 1 ms interval timer does not fire
 * while it takes 5 ms of real time). tests/interop/shim_exec.sh
 * runs it on one host; each check prints a line, and the exit status is
 * the failures.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <sys/times.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t fired;
static volatile uint64_t fired_us[8];
static int failures;

static uint64_t now_us(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (uint64_t)tv.tv_sec * 1000000 + (uint64_t)tv.tv_usec;
}

static void on_alarm(int sig)
{
	(void)sig;
	if (fired < 8)
		fired_us[fired] = now_us();
	fired++;
}

static void check(int ok, const char *what)
{
	printf("%s: %s\n", ok ? "ok" : "FAIL", what);
	failures += !ok;
}

static void arm(long value_us, long every_us)
{
	struct itimerval v = { .it_value = { value_us / 1000000, value_us % 1000000 },
			       .it_interval = { every_us / 1000000, every_us % 1000000 } };

	setitimer(ITIMER_REAL, &v, NULL);
}

/* Seconds since boot, from /proc/uptime: real time (the clocks the program
 * reads are simulated once it has attached), to 10 ms. */
static double real_s(void)
{
	FILE *f = fopen("/proc/uptime", "r");
	double v = 0;

	if (f) {
		if (fscanf(f, "%lf", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

/*
 * A process outside the simulation: forked before the parent attaches, so
 * it runs in real time. It connects to the parent's socket, and for each
 * byte it reads answers one after 300 ms of real time (5 ms for an 'f').
 */
static int outsider(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int l = socket(AF_UNIX, SOCK_STREAM, 0), c;
	pid_t pid;

	snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "ibfab-alarm-%d", (int)getpid());
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		char b;
		int s = socket(AF_UNIX, SOCK_STREAM, 0);

		close(l);
		if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)))
			_exit(1);
		while (read(s, &b, 1) == 1) {
			struct timespec d = { 0, b == 'f' ? 5000000 : 300000000 };

			nanosleep(&d, NULL);
			if (write(s, &b, 1) != 1)
				break;
		}
		_exit(0);
	}
	c = accept(l, NULL, NULL);
	close(l);
	return c;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_alarm };	/* no SA_RESTART */
	int osock = outsider();
	struct ibv_device **l = ibv_get_device_list(NULL);	/* attach */
	struct timespec req = { 0, 20000000 }, rem = { 0, 0 };
	struct itimerval left;
	struct tms tms;
	uint64_t t0;
	long hz = sysconf(_SC_CLK_TCK);
	clock_t c0;
	int r, e;

	if (!l || !l[0]) {
		fprintf(stderr, "shim_alarm: no device (run it under the shim)\n");
		return 2;
	}
	sigaction(SIGALRM, &sa, NULL);

	/* one shot at 5 ms interrupts a 20 ms sleep there, 15 ms left */
	t0 = now_us();
	arm(5000, 0);
	r = nanosleep(&req, &rem);
	e = errno;
	check(r == -1 && e == EINTR, "a 20 ms nanosleep is interrupted (EINTR)");
	check(fired == 1 && fired_us[0] - t0 == 5000, "SIGALRM at 5 ms of simulated time");
	check(rem.tv_sec == 0 && rem.tv_nsec == 15000000, "15 ms left");
	check(!getitimer(ITIMER_REAL, &left) && !left.it_value.tv_sec && !left.it_value.tv_usec,
	      "the one-shot timer reads disarmed afterwards");

	/* every 3 ms from 2 ms: 2, 5, 8, 11 ms within 12 sleeps of 1 ms */
	fired = 0;
	t0 = now_us();
	arm(2000, 3000);
	for (int i = 0; i < 12; i++) {
		struct timespec ms = { 0, 1000000 };

		while (nanosleep(&ms, &ms) && errno == EINTR)
			;
	}
	check(fired == 4 && fired_us[0] - t0 == 2000 && fired_us[3] - t0 == 11000,
	      "an interval timer fires at 2, 5, 8, 11 ms");
	check(!getitimer(ITIMER_REAL, &left) && left.it_value.tv_usec == 2000 &&
	      left.it_interval.tv_usec == 3000, "getitimer: 2 ms to the next, every 3 ms");
	arm(0, 0);
	fired = 0;
	usleep(20000);
	check(fired == 0, "disarmed: no signal in 20 ms");

	/* alarm(1) cuts sleep(3) after 1 s: 2 s left; times() counts it */
	fired = 0;
	c0 = times(&tms);
	t0 = now_us();
	r = (int)alarm(1);
	check(r == 0, "alarm(1): no earlier alarm pending");
	r = (int)sleep(3);
	check(r == 2 && fired == 1 && now_us() - t0 == 1000000, "alarm(1) ends sleep(3) after 1 s, 2 s left");
	check(times(&tms) - c0 == hz, "times(): one second of simulated ticks");

	/* poll, select, epoll_wait: their timeouts are simulated time */
	int pfd[2], ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN }, out;
	struct pollfd p;
	fd_set rs;
	struct timeval tv = { 0, 3000 };

	if (pipe(pfd) || ep < 0) {
		perror("pipe/epoll_create1");
		return 2;
	}
	p = (struct pollfd){ .fd = pfd[0], .events = POLLIN };
	t0 = now_us();
	r = poll(&p, 1, 7);
	check(r == 0 && now_us() - t0 == 7000, "poll on an empty pipe times out after 7 ms");
	FD_ZERO(&rs);
	FD_SET(pfd[0], &rs);
	t0 = now_us();
	r = select(pfd[0] + 1, &rs, NULL, NULL, &tv);
	check(r == 0 && now_us() - t0 == 3000, "select times out after 3 ms");
	ev.data.fd = pfd[0];
	epoll_ctl(ep, EPOLL_CTL_ADD, pfd[0], &ev);
	t0 = now_us();
	r = epoll_wait(ep, &out, 1, 2);
	check(r == 0 && now_us() - t0 == 2000, "epoll_wait times out after 2 ms");
	if (write(pfd[1], "x", 1) != 1)
		return 2;
	t0 = now_us();
	r = poll(&p, 1, 5000);
	check(r == 1 && (p.revents & POLLIN) && now_us() == t0, "poll on a readable pipe: at once");
	r = epoll_wait(ep, &out, 1, 5000);
	check(r == 1 && out.data.fd == pfd[0] && now_us() == t0, "epoll_wait likewise");
	t0 = now_us();
	r = select(0, NULL, NULL, NULL, &(struct timeval){ 0, 1500 });
	check(r == 0 && now_us() - t0 == 1500, "select on no descriptor sleeps 1.5 ms");

	/* a socket to a process outside the simulation */
	if (osock < 0) {
		perror("outsider");
		return 2;
	}
	p = (struct pollfd){ .fd = osock, .events = POLLIN };
	t0 = now_us();
	double r0 = real_s();
	r = poll(&p, 1, 50);
	check(r == 0 && now_us() - t0 == 50000 && real_s() - r0 >= 0.04,
	      "poll on a socket to an outside process: 50 ms, simulated and real");
	/* the clock waits for its answer a while: a 1 ms interval timer does
	 * not fire (and interrupt the poll) while it takes 5 ms of real time
	 * to answer, though the poll's 20 ms timeout lets the clock run to
	 * what comes before it */
	fired = 0;
	arm(1000, 1000);
	if (write(osock, "f", 1) != 1)
		return 2;
	t0 = now_us();
	r = poll(&p, 1, 20);
	e = fired;
	arm(0, 0);
	if (!(r == 1 && now_us() == t0 && e == 0))
		printf("poll %d, %llu us, %d signals\n", r, (unsigned long long)(now_us() - t0), e);
	check(r == 1 && now_us() == t0 && e == 0,
	      "the clock waits for an outside process's answer (5 ms of real time)");
	if (read(osock, &(char){ 0 }, 1) != 1)
		return 2;
	if (write(osock, "x", 1) != 1)
		return 2;
	t0 = now_us();
	r = poll(&p, 1, 2000);
	check(r == 1 && (p.revents & POLLIN) && now_us() - t0 < 2000000,
	      "an outside process answering after 300 ms of real time ends a 2 s poll");
	close(osock);
	wait(NULL);

	ibv_free_device_list(l);
	return failures;
}
