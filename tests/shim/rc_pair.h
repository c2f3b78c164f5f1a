/* SPDX-License-Identifier: MIT */
/*
 * rc_pair.h - what the two-host shim test programs share (shim_pollwait.c,
 * shim_computes.c): one process forks in two before attaching, h0 and h1,
 * each with an RC QP connected to the other's over a pipe pair (LID and
 * QPN exchanged; MTU 1 KiB, PSN 0, retries as perftest sets them).
 */
#ifndef IBFAB_TESTS_SHIM_RC_PAIR_H
#define IBFAB_TESTS_SHIM_RC_PAIR_H

#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct dest {
	uint32_t lid, qpn;
};

static inline void __attribute__((noreturn)) die(const char *m)
{
	perror(m);
	exit(2);
}

/* len bytes whole over a pipe end, or die */
static inline void xfer(int fd, void *buf, size_t len, int wr)
{
	ssize_t n = wr ? write(fd, buf, len) : read(fd, buf, len);

	if (n != (ssize_t)len)
		die(wr ? "write" : "read");
}

/* qp through INIT, RTR (to d) and RTS */
static inline void connect_qp(struct ibv_qp *qp, const struct dest *d)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		die("modify_qp INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = d->qpn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.dlid = (uint16_t)d->lid;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("modify_qp RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify_qp RTS");
}

/* qp's LID and QPN to the peer over the pipes, the peer's back, and qp
 * connected to it */
static inline void rc_pair_connect(struct ibv_qp *qp, uint16_t lid, int rfd, int wfd)
{
	struct dest mine = { lid, qp->qp_num }, peer;

	xfer(wfd, &mine, sizeof(mine), 1);
	xfer(rfd, &peer, sizeof(peer), 0);
	connect_qp(qp, &peer);
}

/* Fork: the child runs run(1, ...) as h1, this process run(0, ...) as h0,
 * over a pipe pair; 0 if both returned 0. */
static inline int rc_pair_main(int (*run)(int me, int rfd, int wfd))
{
	int a[2], b[2], st;
	pid_t child;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (pipe(a) || pipe(b))
		die("pipe");
	child = fork();
	if (child < 0)
		die("fork");
	if (!child)
		return run(1, a[0], b[1]);
	int rc = run(0, b[0], a[1]);

	if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st))
		rc = 1;
	return rc;
}

#endif
