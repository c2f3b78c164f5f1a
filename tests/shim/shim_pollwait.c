/* SPDX-License-Identifier: MIT */
/*
 * shim_pollwait.c - a verbs program that waits in poll() on its completion
 * channel's fd, as event-driven programs do. The daemon must let the clock
 * move for it (docs/shim.md, "Time": the shim watches the descriptors of a
 * poll as those of a blocking read), or the program would wait forever.
 * tests/interop/shim_repeat.sh runs it.
 *
 * One process forks in two before attaching: h0 and h1, an RC QP each,
 * connected over a pipe pair. h0 SENDs, h1 answers with a SEND, ROUNDS
 * times; both print the simulated time the round trips took and exit 0.
 */
#define _GNU_SOURCE
#include "rc_pair.h"

#include <infiniband/verbs.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROUNDS	10

/* One side: h0 (me = 0) starts each round, h1 answers. */
static int run(int me, int rfd, int wfd)
{
	struct ibv_device **l;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_port_attr pa;
	struct timeval t0, t1;
	char *buf = aligned_alloc(4096, 4096), sync = 0;

	setenv("IBFAB_HOST", me ? "h1" : "h0", 1);
	l = ibv_get_device_list(NULL);
	if (!buf || !l || !l[0] || !(ctx = ibv_open_device(l[0])) || !(pd = ibv_alloc_pd(ctx)))
		die("device");
	memset(buf, 0, 4096);
	struct ibv_qp_init_attr ia = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};

	if (!(mr = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE)) ||
	    !(ch = ibv_create_comp_channel(ctx)) || !(cq = ibv_create_cq(ctx, 16, NULL, ch, 0)))
		die("mr/channel/cq");
	ia.send_cq = ia.recv_cq = cq;
	if (!(qp = ibv_create_qp(pd, &ia)) || ibv_query_port(ctx, 1, &pa))
		die("qp");
	rc_pair_connect(qp, pa.lid, rfd, wfd);

	struct ibv_sge sge = { (uintptr_t)buf, 64, mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *brwr;
	struct ibv_send_wr swr = {
		.wr_id = 2, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bswr;

	if (ibv_post_recv(qp, &rwr, &brwr))
		die("post_recv");
	xfer(wfd, &sync, 1, 1);		/* both ready to receive */
	xfer(rfd, &sync, 1, 0);
	gettimeofday(&t0, NULL);
	for (int i = 0; i < ROUNDS; i++) {
		int want_send = 1, want_recv = 1;

		if (me == 0 && ibv_post_send(qp, &swr, &bswr))
			die("post_send");
		while (want_send || want_recv) {
			struct pollfd p = { .fd = ch->fd, .events = POLLIN };
			struct ibv_cq *ecq;
			struct ibv_wc wc;
			void *ectx;
			int n;

			if (ibv_req_notify_cq(cq, 0))
				die("req_notify_cq");
			n = ibv_poll_cq(cq, 1, &wc);
			if (n < 0)
				die("poll_cq");
			if (n == 1) {
				if (wc.status != IBV_WC_SUCCESS) {
					fprintf(stderr, "completion error: %s\n",
						ibv_wc_status_str(wc.status));
					exit(2);
				}
				if (wc.wr_id == 2) {
					want_send = 0;
					continue;
				}
				want_recv = 0;
				if (ibv_post_recv(qp, &rwr, &brwr) ||
				    (me == 1 && ibv_post_send(qp, &swr, &bswr)))
					die("post");
				continue;
			}
			/* nothing yet: sleep in the kernel, unseen by the shim */
			if (poll(&p, 1, 30000) != 1)
				die("poll: no completion event");
			if (ibv_get_cq_event(ch, &ecq, &ectx))
				die("get_cq_event");
			ibv_ack_cq_events(ecq, 1);
		}
	}
	gettimeofday(&t1, NULL);
	printf("%s: %d round trips in %ld usec\n", me ? "h1" : "h0", ROUNDS,
	       (long)((t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_usec - t0.tv_usec)));

	/* Linux lets tv be NULL (the time zone alone); glibc declares it
	 * nonnull, and the shim's test of it once compiled away: a crash */
	/* through a pointer, which carries no nonnull attribute for a
	 * sanitizer to check at the call */
	int (*volatile gtod)(struct timeval *, void *) = gettimeofday;
	struct timezone tz = { 1, 1 };

	if (gtod(NULL, &tz) || tz.tz_minuteswest || tz.tz_dsttime || gtod(NULL, NULL))
		die("gettimeofday(NULL, tz)");
	return 0;
}

int main(void)
{
	return rc_pair_main(run);
}
