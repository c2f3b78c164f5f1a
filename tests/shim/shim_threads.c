/* SPDX-License-Identifier: MIT */
/*
 * shim_threads.c - several threads of one program with verbs calls in
 * flight at once (docs/shim.md, "Threads"): each thread waits in
 * ibv_get_cq_event, blocked in the daemon, while the others post and poll.
 *
 * One process forks in two before attaching: h0 (client) and h1 (server),
 * NTHR threads each, thread t with its own RC QP, CQ, completion channel
 * and 64 KiB region, connected to the other side's thread t (addresses over
 * a pipe pair). For ROUNDS rounds a client thread WRITEs 4 KiB of a pattern
 * of (t, round) into the server's region and SENDs the round as immediate
 * data; the server thread, woken by the receive, checks every byte written
 * and answers with a SEND; the client waits for it. Every completion's
 * status, opcode, byte_len and immediate are checked. Both print
 * "threads: ok" and exit 0, or the first mismatch and exit 1.
 * tests/interop/shim_rdmacm.sh runs it.
 */
#define _GNU_SOURCE
#include <infiniband/verbs.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NTHR	4
#define ROUNDS	25
#define CHUNK	4096
#define REGION	(16 * CHUNK)

struct dest {
	uint32_t lid, qpn, rkey;
	uint64_t addr;
};

struct thr {
	int t, server;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct dest me, rem;
	int failed;
};

static uint8_t pat(int t, int r, uint32_t i)
{
	return (uint8_t)(i * 31 + (uint32_t)t * 7 + (uint32_t)r * 13 + 1);
}

static void die(const char *m)
{
	perror(m);
	exit(2);
}

/* Wait (blocked in the daemon) for one completion; check it. */
static int wait_one(struct thr *x, enum ibv_wc_opcode op, uint32_t len, int imm)
{
	struct ibv_wc wc;
	struct ibv_cq *cq;
	void *cctx;
	int n;

	while ((n = ibv_poll_cq(x->cq, 1, &wc)) == 0) {
		if (ibv_get_cq_event(x->ch, &cq, &cctx))
			die("ibv_get_cq_event");
		ibv_ack_cq_events(cq, 1);
		if (ibv_req_notify_cq(x->cq, 0))
			die("ibv_req_notify_cq");
	}
	if (n < 0 || wc.status != IBV_WC_SUCCESS || wc.opcode != op ||
	    (op & IBV_WC_RECV && wc.byte_len != len) ||
	    (imm >= 0 && (!(wc.wc_flags & IBV_WC_WITH_IMM) || ntohl(wc.imm_data) != (uint32_t)imm))) {
		fprintf(stderr, "thread %d: completion status %d opcode %d len %u imm %u, expected "
			"opcode %d len %u imm %d\n", x->t, wc.status, wc.opcode, wc.byte_len,
			ntohl(wc.imm_data), op, len, imm);
		return -1;
	}
	return 0;
}

static void post_recv(struct thr *x)
{
	struct ibv_sge sg = { (uintptr_t)x->buf + REGION, 64, x->mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sg, .num_sge = 1 }, *bad;

	if (ibv_post_recv(x->qp, &wr, &bad))
		die("ibv_post_recv");
}

static void post_send(struct thr *x, enum ibv_wr_opcode op, uint32_t off, uint32_t len, int imm)
{
	struct ibv_sge sg = { (uintptr_t)x->buf + off, len, x->mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sg, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	if (op == IBV_WR_RDMA_WRITE) {
		wr.wr.rdma.remote_addr = x->rem.addr + off;
		wr.wr.rdma.rkey = x->rem.rkey;
	}
	if (imm >= 0)
		wr.imm_data = htonl((uint32_t)imm);
	if (ibv_post_send(x->qp, &wr, &bad))
		die("ibv_post_send");
}

static void *run(void *arg)
{
	struct thr *x = arg;

	for (int r = 0; r < ROUNDS && !x->failed; r++) {
		uint32_t off = (uint32_t)(r % 16) * CHUNK;

		if (x->server) {
			if (wait_one(x, IBV_WC_RECV, 0, r)) {
				x->failed = 1;
				break;
			}
			for (uint32_t i = 0; i < CHUNK; i++) {
				if (x->buf[off + i] != pat(x->t, r, i)) {
					fprintf(stderr, "thread %d round %d: byte %u is %u, not %u\n",
						x->t, r, i, x->buf[off + i], pat(x->t, r, i));
					x->failed = 1;
					break;
				}
			}
			post_recv(x);
			post_send(x, IBV_WR_SEND, REGION + 64, 8, -1);
			if (wait_one(x, IBV_WC_SEND, 0, -1))
				x->failed = 1;
		} else {
			for (uint32_t i = 0; i < CHUNK; i++)
				x->buf[off + i] = pat(x->t, r, i);
			post_send(x, IBV_WR_RDMA_WRITE, off, CHUNK, -1);
			post_send(x, IBV_WR_SEND_WITH_IMM, REGION + 64, 0, r);
			if (wait_one(x, IBV_WC_RDMA_WRITE, 0, -1) || wait_one(x, IBV_WC_SEND, 0, -1) ||
			    wait_one(x, IBV_WC_RECV, 8, -1))
				x->failed = 1;
			post_recv(x);
		}
	}
	return NULL;
}

static void modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	if (ibv_modify_qp(qp, a, mask))
		die("ibv_modify_qp");
}

static int side(int server, int rd, int wr)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_port_attr pa;
	struct thr x[NTHR];
	pthread_t th[NTHR];
	int failed = 0;

	if (!l || !l[0])
		die("no device");
	memset(x, 0, sizeof(x));
	for (int t = 0; t < NTHR; t++) {
		struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
					       .cap = { 8, 8, 1, 1, 0 } };

		x[t].t = t;
		x[t].server = server;
		x[t].ctx = t ? x[0].ctx : ibv_open_device(l[0]);
		x[t].pd = ibv_alloc_pd(x[t].ctx);
		x[t].ch = ibv_create_comp_channel(x[t].ctx);
		x[t].cq = ibv_create_cq(x[t].ctx, 16, NULL, x[t].ch, 0);
		x[t].buf = calloc(1, REGION + CHUNK);
		if (!x[t].pd || !x[t].ch || !x[t].cq || !x[t].buf)
			die("setup");
		x[t].mr = ibv_reg_mr(x[t].pd, x[t].buf, REGION + CHUNK,
				     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		qa.send_cq = qa.recv_cq = x[t].cq;
		x[t].qp = x[t].mr ? ibv_create_qp(x[t].pd, &qa) : NULL;
		if (!x[t].qp || ibv_query_port(x[t].ctx, 1, &pa) || ibv_req_notify_cq(x[t].cq, 0))
			die("qp");
		x[t].me = (struct dest){ pa.lid, x[t].qp->qp_num, x[t].mr->rkey,
					 (uintptr_t)x[t].buf };
		if (write(wr, &x[t].me, sizeof(x[t].me)) != (ssize_t)sizeof(x[t].me))
			die("write");
	}
	for (int t = 0; t < NTHR; t++) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
					 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

		if (read(rd, &x[t].rem, sizeof(x[t].rem)) != (ssize_t)sizeof(x[t].rem))
			die("read");
		modify(x[t].qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					    IBV_QP_ACCESS_FLAGS);
		a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_4096,
					  .dest_qp_num = x[t].rem.qpn, .max_dest_rd_atomic = 1,
					  .min_rnr_timer = 12,
					  .ah_attr = { .dlid = (uint16_t)x[t].rem.lid, .port_num = 1 } };
		modify(x[t].qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					    IBV_QP_MIN_RNR_TIMER);
		a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
					  .rnr_retry = 7, .max_rd_atomic = 1 };
		modify(x[t].qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					    IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
		post_recv(&x[t]);
	}
	/* both sides ready before a thread sends (else RNR) */
	char b = 1;

	if (write(wr, &b, 1) != 1 || read(rd, &b, 1) != 1)
		die("sync");
	for (int t = 0; t < NTHR; t++)
		if (pthread_create(&th[t], NULL, run, &x[t]))
			die("pthread_create");
	for (int t = 0; t < NTHR; t++) {
		pthread_join(th[t], NULL);
		failed |= x[t].failed;
	}
	printf("%s threads: %s\n", server ? "h1" : "h0", failed ? "FAILED" : "ok");
	fflush(stdout);
	if (write(wr, &b, 1) != 1 || read(rd, &b, 1) != 1)	/* leave together */
		die("sync");
	return failed;
}

int main(void)
{
	int a[2], b[2], st;
	pid_t pid;

	if (pipe(a) || pipe(b))
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		setenv("IBFAB_HOST", "h1", 1);
		_exit(side(1, a[0], b[1]));
	}
	setenv("IBFAB_HOST", "h0", 1);
	int rc = side(0, b[0], a[1]);

	waitpid(pid, &st, 0);
	return rc || !WIFEXITED(st) || WEXITSTATUS(st);
}
