/* SPDX-License-Identifier: MIT */
/*
 * shim_portev.c - port events (IBA vol. 1 11.6.3.2; ibv_get_async_event(3))
 * when the daemon takes the program's cable down and back up
 * (`ibfab serve --fault 'link H/1 down at T1' --fault 'link H/1 up at
 * T2'`): the port is active at first; a program blocked in
 * ibv_get_async_event wakes with IBV_EVENT_PORT_ERR for port 1, and
 * ibv_query_port says DOWN (physical state Polling); then
 * IBV_EVENT_PORT_ACTIVE, T2 - T1 of simulated time later, and the port is
 * active again. Usage: shim_portev T2-T1-in-us. Prints "portev: ok" and
 * exits 0, or the first mismatch and exits 1.
 */
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>

static int fail(const char *what)
{
	fprintf(stderr, "portev: %s\n", what);
	return 1;
}

static uint64_t now_us(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);	/* simulated time under the shim */
	return (uint64_t)tv.tv_sec * 1000000 + (uint64_t)tv.tv_usec;
}

static int port_is(struct ibv_context *ctx, enum ibv_port_state want, const char *when)
{
	struct ibv_port_attr pa;

	if (ibv_query_port(ctx, 1, &pa))
		return fail("ibv_query_port");
	if (pa.state != want) {
		fprintf(stderr, "portev: %s: port %s, want %s\n", when, ibv_port_state_str(pa.state),
			ibv_port_state_str(want));
		return 1;
	}
	return 0;
}

static int wait_event(struct ibv_context *ctx, enum ibv_event_type want)
{
	struct ibv_async_event ev;

	if (ibv_get_async_event(ctx, &ev))
		return fail("ibv_get_async_event");
	if (ev.event_type != want || ev.element.port_num != 1) {
		fprintf(stderr, "portev: got %s for port %d, want %s for port 1\n",
			ibv_event_type_str(ev.event_type), ev.element.port_num,
			ibv_event_type_str(want));
		return 1;
	}
	ibv_ack_async_event(&ev);
	return 0;
}

int main(int argc, char **argv)
{
	struct ibv_device **dl = ibv_get_device_list(NULL);
	struct ibv_context *ctx = dl && dl[0] ? ibv_open_device(dl[0]) : NULL;
	long gap = argc > 1 ? atol(argv[1]) : 0;
	uint64_t t_err, t_up;

	if (!ctx || gap <= 0)
		return fail("usage: shim_portev DOWN-TIME-IN-US (under ibfab exec)");
	if (port_is(ctx, IBV_PORT_ACTIVE, "at start") || wait_event(ctx, IBV_EVENT_PORT_ERR))
		return 1;
	t_err = now_us();
	if (port_is(ctx, IBV_PORT_DOWN, "after the error") ||
	    wait_event(ctx, IBV_EVENT_PORT_ACTIVE))
		return 1;
	t_up = now_us();
	if (port_is(ctx, IBV_PORT_ACTIVE, "after the port came back"))
		return 1;
	if (t_up - t_err + 2 < (uint64_t)gap || t_up - t_err > (uint64_t)gap + 2) {
		fprintf(stderr, "portev: down for %llu us, want %ld\n",
			(unsigned long long)(t_up - t_err), gap);
		return 1;
	}
	printf("portev: ok (down %llu us)\n", (unsigned long long)(t_up - t_err));
	return 0;
}
