/* SPDX-License-Identifier: MIT */
/*
 * shim_turns.c - the threads of one program take turns (docs/shim.md,
 * "Threads"): which of them runs between two answers of the daemon is the
 * daemon's choice, so what each finds does not depend on the host's
 * scheduler. Run it twice on fresh daemons: the output is the same.
 *
 * One process, two RC QPs of its HCA connected through the loopback. The
 * main thread starts a second thread and calls sched_yield() until it has
 * joined (its first verb: one poll of a CQ of its own, empty); then it
 * posts a signaled
 * 1 MiB RDMA WRITE from A to B and polls its CQ until the completion
 * comes, counting its empty polls. The second thread, ROUNDS times, reads
 * the clock and calls sched_yield(),
 * and last posts a 64-byte WRITE on a QP pair of its own and waits for
 * it. Each
 * sched_yield lets the main thread's parked poll answer, and the main
 * thread's next empty poll hands the turn back: the clock readings step by
 * the polls' costs, the same every run. Prints the main thread's empty
 * polls and completion time, and the second thread's readings relative to
 * its first (nanoseconds of simulated time), then "turns: ok"; exit 1 on a
 * failed verb or completion.
 *
 * `shim_turns spin`: before any QP, the main thread starts the second
 * thread and spins on a flag without a call until the second thread has
 * joined and polled its CQ once. The main thread holds the turn while it
 * spins, so the second thread runs only once the main thread's time slice
 * (20 ms of its CPU) is over, and its empty poll is answered at once beside
 * the spinning thread. Prints "turns: spin ok".
 *
 * `shim_turns sleep`: the second thread joins, sleeps SLEEP_US in simulated
 * time (usleep) and sets a flag; the main thread calls sched_yield() until
 * the flag is set. No other thread can run while the second one sleeps, so
 * each yield waits for the clock (1 us, doubling) or for the sleeper's turn:
 * the clock reaches the sleeper's wake-up instead of standing still at the
 * yields. Prints the simulated time from the join to the flag seen, and
 * "turns: sleep ok" (no end without that rule).
 */
#define _GNU_SOURCE
#include <infiniband/verbs.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS	12
#define BIG	(1u << 20)

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_qp *qa, *qb;
static struct ibv_mr *smr, *dmr;
static char *src, *dst;
static uint64_t t_read[ROUNDS];
static int t_failed;
static atomic_int ready, woke;

#define SLEEP_US 1000

static int fail(const char *what)
{
	fprintf(stderr, "turns: %s\n", what);
	return 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int to_rts(struct ibv_qp *qp, uint16_t lid, uint32_t dqpn)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		return -1;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_4096,
				  .dest_qp_num = dqpn, .max_dest_rd_atomic = 1,
				  .min_rnr_timer = 12, .ah_attr = { .dlid = lid, .port_num = 1 } };
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
				  .rnr_retry = 7, .max_rd_atomic = 1 };
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int write_to(struct ibv_qp *qp, uint64_t id, uint32_t off, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)(src + off), len, smr->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { (uintptr_t)(dst + off), dmr->rkey } },
			   *bad;

	return ibv_post_send(qp, &wr, &bad);
}

/* one completion of wr_id `id` from cq, polled; the empty polls on the way */
static int wait_one(struct ibv_cq *cq, uint64_t id, unsigned long *empty)
{
	struct ibv_wc wc;
	int k;

	while (!(k = ibv_poll_cq(cq, 1, &wc)))
		if (empty)
			(*empty)++;
	return k < 0 || wc.status != IBV_WC_SUCCESS || wc.wr_id != id ? -1 : 0;
}

/* The second thread's first verbs join it to the process: a CQ of its own,
 * polled once (empty); then it says so (ready). NULL on a failure. */
static struct ibv_cq *join(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_wc wc;

	if (!cq || ibv_poll_cq(cq, 1, &wc) != 0) {
		t_failed = 1;
		cq = NULL;
	}
	atomic_store(&ready, 1);
	return cq;
}

static void *second(void *arg)
{
	struct ibv_cq *cq = join();	/* the main thread yields until it has */

	(void)arg;
	if (!cq)
		return NULL;
	for (int i = 0; i < ROUNDS; i++) {
		t_read[i] = now_ns();
		sched_yield();
	}
	struct ibv_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 1,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_qp *q = ibv_create_qp(pd, &ia), *r = q ? ibv_create_qp(pd, &ia) : NULL;
	struct ibv_port_attr pa;

	if (!r || ibv_query_port(ctx, 1, &pa) || to_rts(q, pa.lid, r->qp_num) ||
	    to_rts(r, pa.lid, q->qp_num) || write_to(q, 7, BIG, 64) || wait_one(cq, 7, NULL))
		t_failed = 1;
	return NULL;
}

static void *sleep_second(void *arg)
{
	(void)arg;
	join();
	usleep(SLEEP_US);
	atomic_store(&woke, 1);
	return NULL;
}

static void *spin_second(void *arg)
{
	(void)arg;
	join();		/* the main thread spins until it has */
	return NULL;
}

int main(int argc, char **argv)
{
	struct ibv_device **dl = ibv_get_device_list(NULL);
	struct ibv_port_attr pa;
	unsigned long empty = 0;
	pthread_t th;

	ctx = dl && dl[0] ? ibv_open_device(dl[0]) : NULL;
	if (!ctx || ibv_query_port(ctx, 1, &pa))
		return fail("opening the device");
	if (argc > 1 && !strcmp(argv[1], "spin")) {
		if (pthread_create(&th, NULL, spin_second, NULL))
			return fail("starting the second thread");
		while (!atomic_load_explicit(&ready, memory_order_acquire))
			__asm__ volatile("pause");
		pthread_join(th, NULL);
		if (t_failed)
			return fail("the second thread's verbs");
		printf("turns: spin ok\n");
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "sleep")) {
		if (pthread_create(&th, NULL, sleep_second, NULL))
			return fail("starting the second thread");
		while (!atomic_load(&ready))
			sched_yield();
		uint64_t t0 = now_ns();

		while (!atomic_load(&woke))
			sched_yield();
		uint64_t t1 = now_ns();

		pthread_join(th, NULL);
		if (t_failed)
			return fail("the second thread's verbs");
		printf("sleep: the flag seen %llu ns after the join\n",
		       (unsigned long long)(t1 - t0));
		if (t1 - t0 < SLEEP_US * 1000ull)
			return fail("the flag came before the sleep's end");
		printf("turns: sleep ok\n");
		return 0;
	}
	pd = ibv_alloc_pd(ctx);
	src = calloc(1, BIG + 64);
	dst = calloc(1, BIG + 64);
	struct ibv_cq *cq = pd && src && dst ? ibv_create_cq(ctx, 8, NULL, NULL, 0) : NULL;

	smr = cq ? ibv_reg_mr(pd, src, BIG + 64, 0) : NULL;
	dmr = smr ? ibv_reg_mr(pd, dst, BIG + 64, IBV_ACCESS_LOCAL_WRITE |
			       IBV_ACCESS_REMOTE_WRITE) : NULL;
	struct ibv_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 1,
						.max_send_sge = 1, .max_recv_sge = 1 } };

	qa = dmr ? ibv_create_qp(pd, &ia) : NULL;
	qb = qa ? ibv_create_qp(pd, &ia) : NULL;
	if (!qb || to_rts(qa, pa.lid, qb->qp_num) || to_rts(qb, pa.lid, qa->qp_num))
		return fail("setting up the QPs");
	memset(src, 0x5a, BIG + 64);
	uint64_t t0 = now_ns();

	if (pthread_create(&th, NULL, second, NULL))
		return fail("starting the second thread");
	while (!atomic_load(&ready))
		sched_yield();
	if (write_to(qa, 1, 0, BIG) || wait_one(cq, 1, &empty))
		return fail("the 1 MiB WRITE");
	uint64_t t1 = now_ns();

	pthread_join(th, NULL);
	if (t_failed)
		return fail("the second thread's verbs");
	for (uint32_t i = 0; i < BIG + 64; i++)
		if (dst[i] != 0x5a)
			return fail("the bytes written");
	printf("main: %lu empty polls, the WRITE done %llu ns after it was posted\n", empty,
	       (unsigned long long)(t1 - t0));
	printf("second:");
	for (int i = 0; i < ROUNDS; i++)
		printf(" %llu", (unsigned long long)(t_read[i] - t_read[0]));
	printf("\nturns: ok\n");
	return 0;
}
