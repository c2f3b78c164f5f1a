/* SPDX-License-Identifier: MIT */
/*
 * shim_async.c - asynchronous events and the SRQ limit (ibv_modify_srq(3),
 * ibv_get_async_event(3)), as a program that refills its shared receive
 * queue on IBV_EVENT_SRQ_LIMIT_REACHED uses them.
 *
 * One process, two RC QPs of its HCA connected to each other through the
 * loopback (IBA 17.3.1): A sends, B receives from an SRQ of 16 holding 8
 * receives, with its limit armed at 4. The async fd, made non-blocking,
 * answers EAGAIN while nothing happened. A posts 5 SENDs and the program
 * blocks in ibv_get_async_event before polling anything: the clock moves
 * while it waits, the fifth receive taken leaves 3 < 4, and the event
 * names the SRQ; the limit reads 0 again (disarmed). Then B is moved to
 * Error: IBV_EVENT_QP_LAST_WQE_REACHED names B. Last, a third QP whose
 * send CQ holds 3 completions (cqe 2) posts 5 signaled WRITEs to A and
 * polls nothing: the fourth finds the CQ full, and IBV_EVENT_CQ_ERR names
 * that CQ (IBA 11.6.3.1), once; the CQ holds the first 3. Then a QP left
 * in RTR takes a WRITE: IBV_EVENT_COMM_EST names it, once (a second WRITE
 * raises nothing). Last, a QP that enables remote READ only takes a
 * WRITE: the requester's completion is IBV_WC_REM_ACCESS_ERR and
 * IBV_EVENT_QP_ACCESS_ERR names the responder. Every completion is checked.
 * Prints "async: ok" and exits 0, or the first mismatch and exits 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NRECV	8
#define LIMIT	4
#define NSEND	5

static int fail(const char *what)
{
	fprintf(stderr, "async: %s\n", what);
	return 1;
}

static int to_rtr(struct ibv_qp *qp, uint16_t lid, uint32_t dqpn)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		return -1;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_4096,
				  .dest_qp_num = dqpn, .max_dest_rd_atomic = 1,
				  .min_rnr_timer = 12, .ah_attr = { .dlid = lid, .port_num = 1 } };
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

static int to_rts(struct ibv_qp *qp, uint16_t lid, uint32_t dqpn)
{
	struct ibv_qp_attr a;

	if (to_rtr(qp, lid, dqpn))
		return -1;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
				  .rnr_retry = 7, .max_rd_atomic = 1 };
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* a signaled WRITE of the 64 bytes at src (its region smr) to dst (rkey) */
static int post_write(struct ibv_qp *qp, uint64_t id, char *src, struct ibv_mr *smr, char *dst,
		      uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)src, 64, smr->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { (uintptr_t)dst, rkey } },
			   *bad;

	return ibv_post_send(qp, &wr, &bad);
}

/* n completions of `op` and status success from cq */
/* The next asynchronous event must be TYPE for OBJ (the CQ of a CQ error,
 * else the QP); WHAT names it in the message. 0, or 1 after saying what
 * came instead. */
static int want_event(struct ibv_context *ctx, enum ibv_event_type type, const void *obj,
		      const char *what)
{
	struct ibv_async_event ev;
	const void *got;

	if (ibv_get_async_event(ctx, &ev)) {
		fprintf(stderr, "async: no event, want %s\n", what);
		return 1;
	}
	got = type == IBV_EVENT_CQ_ERR ? (const void *)ev.element.cq : (const void *)ev.element.qp;
	ibv_ack_async_event(&ev);
	if (ev.event_type != type || got != obj) {
		fprintf(stderr, "async: got event %d (%s), want %s\n", (int)ev.event_type,
			ibv_event_type_str(ev.event_type), what);
		return 1;
	}
	return 0;
}

static int drain(struct ibv_cq *cq, int n, enum ibv_wc_opcode op, const char *what)
{
	for (int got = 0; got < n;) {
		struct ibv_wc wc;
		int k = ibv_poll_cq(cq, 1, &wc);

		if (k < 0)
			return fail(what);
		if (!k)
			continue;
		if (wc.status != IBV_WC_SUCCESS || wc.opcode != op) {
			fprintf(stderr, "async: %s: status %s, opcode %d\n", what,
				ibv_wc_status_str(wc.status), (int)wc.opcode);
			return 1;
		}
		got++;
	}
	return 0;
}

int main(void)
{
	struct ibv_device **dl = ibv_get_device_list(NULL);
	struct ibv_context *ctx = dl && dl[0] ? ibv_open_device(dl[0]) : NULL;
	struct ibv_port_attr pa;
	struct ibv_async_event ev;
	static char sbuf[64], rbuf[NRECV][64];

	if (!ctx || ibv_query_port(ctx, 1, &pa))
		return fail("opening the device");
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *scq = pd ? ibv_create_cq(ctx, 32, NULL, NULL, 0) : NULL;
	struct ibv_cq *rcq = scq ? ibv_create_cq(ctx, 32, NULL, NULL, 0) : NULL;
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_srq *srq = rcq ? ibv_create_srq(pd, &sa) : NULL;
	struct ibv_mr *smr = srq ? ibv_reg_mr(pd, sbuf, sizeof(sbuf), 0) : NULL;
	struct ibv_mr *rmr = smr ? ibv_reg_mr(pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	struct ibv_qp_init_attr ia = {
		.send_cq = scq, .recv_cq = rcq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *a = rmr ? ibv_create_qp(pd, &ia) : NULL;

	ia.srq = srq;
	struct ibv_qp *b = a ? ibv_create_qp(pd, &ia) : NULL;

	if (!b || to_rts(a, pa.lid, b->qp_num) || to_rts(b, pa.lid, a->qp_num))
		return fail("setting up the SRQ and the QPs");
	for (int i = 0; i < NRECV; i++) {
		struct ibv_sge sge = { (uintptr_t)rbuf[i], sizeof(rbuf[i]), rmr->lkey };
		struct ibv_recv_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1 }, *bad;

		if (ibv_post_srq_recv(srq, &wr, &bad))
			return fail("posting the SRQ's receives");
	}
	struct ibv_srq_attr at = { .srq_limit = 17 };

	/* a limit above the SRQ's size is refused; LIMIT is taken */
	if (!ibv_modify_srq(srq, &at, IBV_SRQ_LIMIT))
		return fail("a limit of 17 on an SRQ of 16 was taken");
	at.srq_limit = LIMIT;
	if (ibv_modify_srq(srq, &at, IBV_SRQ_LIMIT) || ibv_query_srq(srq, &at) ||
	    at.srq_limit != LIMIT)
		return fail("arming the SRQ limit");

	/* nothing yet: a non-blocking look says EAGAIN */
	int fl = fcntl(ctx->async_fd, F_GETFL);

	if (fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK) ||
	    ibv_get_async_event(ctx, &ev) != -1 || errno != EAGAIN)
		return fail("a non-blocking look before any event did not say EAGAIN");
	if (fcntl(ctx->async_fd, F_SETFL, fl))
		return fail("making the async fd blocking again");

	for (int i = 0; i < NSEND; i++) {
		struct ibv_sge sge = { (uintptr_t)sbuf, sizeof(sbuf), smr->lkey };
		struct ibv_send_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
				   *bad;

		if (ibv_post_send(a, &wr, &bad))
			return fail("posting the SENDs");
	}
	/* blocks until the fifth receive is taken, in simulated time */
	if (ibv_get_async_event(ctx, &ev))
		return fail("waiting for the SRQ limit event");
	if (ev.event_type != IBV_EVENT_SRQ_LIMIT_REACHED || ev.element.srq != srq) {
		fprintf(stderr, "async: got event %d (%s) for %p, want SRQ limit reached for %p\n",
			(int)ev.event_type, ibv_event_type_str(ev.event_type),
			(void *)ev.element.srq, (void *)srq);
		return 1;
	}
	ibv_ack_async_event(&ev);
	if (drain(scq, NSEND, IBV_WC_SEND, "the SENDs' completions") ||
	    drain(rcq, NSEND, IBV_WC_RECV, "the receives' completions"))
		return 1;
	if (ibv_query_srq(srq, &at) || at.srq_limit != 0)
		return fail("the limit is not disarmed after its event");

	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };

	if (ibv_modify_qp(b, &err, IBV_QP_STATE))
		return fail("moving B to Error");
	if (want_event(ctx, IBV_EVENT_QP_LAST_WQE_REACHED, b, "last WQE reached for B"))
		return 1;

	/* a CQ overrun */
	struct ibv_cq *small = ibv_create_cq(ctx, 2, NULL, NULL, 0);
	struct ibv_qp_init_attr ic = {
		.send_cq = small, .recv_cq = rcq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *c = small ? ibv_create_qp(pd, &ic) : NULL;
	struct ibv_qp *a2 = c ? ibv_create_qp(pd, &ia) : NULL;
	struct ibv_mr *wmr = a2 ? ibv_reg_mr(pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE |
					      IBV_ACCESS_REMOTE_WRITE) : NULL;

	if (!wmr || to_rts(c, pa.lid, a2->qp_num) || to_rts(a2, pa.lid, c->qp_num))
		return fail("setting up the QP with the small CQ");
	for (int i = 0; i < 5; i++)
		if (post_write(c, 100 + (uint64_t)i, sbuf, smr, rbuf[i], wmr->rkey))
			return fail("posting the WRITEs");
	if (want_event(ctx, IBV_EVENT_CQ_ERR, small, "CQ error for the small CQ"))
		return 1;
	struct ibv_wc wc[8];
	int got = 0;

	for (int tries = 0; tries < 1000 && got < 3; tries++) {
		int k = ibv_poll_cq(small, 8 - got, wc + got);

		if (k < 0)
			return fail("polling the small CQ");
		got += k;
	}
	if (got != 3)
		return fail("the small CQ does not hold its 3 completions");
	for (int i = 0; i < 3; i++)
		if (wc[i].status != IBV_WC_SUCCESS || wc[i].wr_id != 100 + (uint64_t)i)
			return fail("a completion of the small CQ");
	/* one event for the overrun, not one per lost completion */
	fl = fcntl(ctx->async_fd, F_GETFL);
	if (fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK) ||
	    ibv_get_async_event(ctx, &ev) != -1 || errno != EAGAIN)
		return fail("a second event after one overrun");
	if (fcntl(ctx->async_fd, F_SETFL, fl))
		return fail("making the async fd blocking again");

	/* Communication Established: the first packet on a QP in RTR */
	struct ibv_qp_init_attr ie = {
		.send_cq = scq, .recv_cq = rcq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *e = ibv_create_qp(pd, &ie), *g = e ? ibv_create_qp(pd, &ie) : NULL;

	if (!g || to_rtr(e, pa.lid, g->qp_num) || to_rts(g, pa.lid, e->qp_num))
		return fail("setting up the QP left in RTR");
	for (int i = 0; i < 2; i++) {
		if (post_write(g, 200 + (uint64_t)i, sbuf, smr, rbuf[i], wmr->rkey))
			return fail("posting a WRITE to the QP in RTR");
		if (i == 0 && want_event(ctx, IBV_EVENT_COMM_EST, e, "COMM_EST for the QP in RTR"))
			return 1;
		if (drain(scq, 1, IBV_WC_RDMA_WRITE, "a WRITE to the QP in RTR"))
			return 1;
	}
	if (fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK) ||
	    ibv_get_async_event(ctx, &ev) != -1 || errno != EAGAIN)
		return fail("a second COMM_EST");
	if (fcntl(ctx->async_fd, F_SETFL, fl))
		return fail("making the async fd blocking again");

	/* a QP that enables remote READ only takes a WRITE: the requester's
	 * completion is a remote access error, the responder goes to Error
	 * and its Local Access Violation event names it */
	struct ibv_qp *x = ibv_create_qp(pd, &ie), *y = x ? ibv_create_qp(pd, &ie) : NULL;
	struct ibv_qp_attr ro = { .qp_access_flags = IBV_ACCESS_REMOTE_READ };
	struct ibv_wc xw;
	int k;

	if (!y || to_rts(x, pa.lid, y->qp_num) || to_rts(y, pa.lid, x->qp_num) ||
	    ibv_modify_qp(y, &ro, IBV_QP_ACCESS_FLAGS))
		return fail("setting up the QP that refuses WRITEs");
	if (post_write(x, 300, sbuf, smr, rbuf[2], wmr->rkey))
		return fail("posting the refused WRITE");
	if (want_event(ctx, IBV_EVENT_QP_ACCESS_ERR, y, "QP_ACCESS_ERR for the responder"))
		return 1;
	while (!(k = ibv_poll_cq(scq, 1, &xw)))
		;
	if (k < 0 || xw.wr_id != 300 || xw.status != IBV_WC_REM_ACCESS_ERR) {
		fprintf(stderr, "async: the refused WRITE completed with %s\n",
			k < 0 ? "a failed poll" : ibv_wc_status_str(xw.status));
		return 1;
	}
	printf("async: ok\n");
	return 0;
}
