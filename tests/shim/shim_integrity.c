/* SPDX-License-Identifier: MIT */
/*
 * shim_integrity.c - a verbs program of our own that checks the shim moves
 * the programs' real bytes: RDMA WRITE, RDMA READ, SEND and both atomics
 * between two simulated hosts, every byte and every atomic result checked.
 *
 * Written as any verbs program is (only <infiniband/verbs.h>, connection
 * set-up over TCP like ibv_rc_pingpong), so it runs unmodified on the shim.
 *
 *   shim_integrity [-p PORT]            server
 *   shim_integrity [-p PORT] 127.0.0.1  client
 *
 * The client WRITEs patterns of several sizes and alignments into the
 * server, READs them back and compares, SENDs patterned messages, and runs
 * fetch-and-add and compare-and-swap (hit and miss) checking each returned
 * value. Then gather/scatter lists: a SEND gathered from three MRs into a
 * receive scattered over three SGEs of two MRs, a WRITE with immediate
 * gathered from two (its receive's buffers left alone, byte_len and
 * imm_data as the IBA says), a WRITE gathered from four, and a READ with
 * two SGEs refused (max_sge_rd is 1). The server WRITEs into the client,
 * checks the messages it received and its memory, and reports over TCP.
 * Last, the queues' limits: a full send queue and receive queue refuse the
 * next post, a receive into no region is refused.
 * Both exit 0 only if every check passed; the first mismatch is printed.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#define REGION	(1 << 20)		/* the RDMA target area */
#define NSENDS	6
#define MSGMAX	65536
#define NATOM	8
#define SGBUF	(256 << 10)		/* scatter/gather targets */
#define SG_SEND	50000			/* the gathered SEND: 10000 + 1 + 39999 */
#define SG_IMM	9096			/* the gathered WRITE with immediate: 4096 + 5000 */
#define SG_IMM_AT 150000
#define SG_WRITE_AT 200000
#define SG_IMM_DATA 0x1234567u
static const uint32_t sg_write[4] = { 3, 4093, 1, 20000 };

static const uint32_t send_sizes[NSENDS] = { 1, 100, 4095, 4096, 10000, 65536 };
static const struct { uint32_t off, len; } writes[] = {
	{ 0, 1 }, { 3, 4093 }, { 4096, 4096 }, { 8191, 65537 }, { 100000, 300000 },
	{ 0, REGION },
};

struct dest {
	uint32_t lid, qpn, psn, rkey_a, rkey_at, rkey_sg;
	uint64_t addr_a, addr_at, addr_sg;
};

struct ctx {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_cq_ex *cqx;		/* -x: the same CQ, polled with the extended API */
	struct ibv_qp *qp;
	uint8_t *a;			/* target region (server: written by the client) */
	uint8_t *b;			/* client: READ landing area, unaligned malloc */
	uint8_t *msgs;			/* server: receive buffers */
	uint64_t *atom;			/* server: atomic words; client: results */
	uint8_t *sg;			/* server: scatter targets */
	struct ibv_mr *mr_a, *mr_b, *mr_msgs, *mr_atom, *mr_sg;
	int fails;
};

static uint8_t pat(uint32_t seed, uint64_t i)
{
	uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ULL ^ seed;

	return (uint8_t)(x >> 29 ^ x);
}

static void fail(struct ctx *c, const char *what, uint64_t i, unsigned got, unsigned want)
{
	if (c->fails++ < 5)
		fprintf(stderr, "MISMATCH %s at %" PRIu64 ": got %#x want %#x\n", what, i, got, want);
}

static bool use_cq_ex;		/* -x: poll with the extended CQ API */

static void die(const char *m)
{
	perror(m);
	exit(2);
}

/* One completion by ibv_start_poll / ibv_wc_read_* / ibv_end_poll. */
static int poll_ex(struct ibv_cq_ex *x, struct ibv_wc *wc)
{
	struct ibv_poll_cq_attr attr = { 0 };
	int rc = ibv_start_poll(x, &attr);

	if (rc == ENOENT)
		return 0;
	if (rc)
		return -rc;
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = x->wr_id;
	wc->status = x->status;
	wc->opcode = ibv_wc_read_opcode(x);
	wc->byte_len = ibv_wc_read_byte_len(x);
	wc->wc_flags = ibv_wc_read_wc_flags(x);
	wc->imm_data = ibv_wc_read_imm_data(x);
	wc->qp_num = ibv_wc_read_qp_num(x);
	ibv_end_poll(x);
	return 1;
}

static struct ibv_wc wait_wc(struct ctx *c)
{
	struct ibv_wc wc;
	int n;

	do
		n = c->cqx ? poll_ex(c->cqx, &wc) : ibv_poll_cq(c->cq, 1, &wc);
	while (n == 0);
	if (n < 0)
		die("poll_cq");
	if (wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "completion error: %s (wr %" PRIu64 ")\n",
			ibv_wc_status_str(wc.status), wc.wr_id);
		exit(2);
	}
	return wc;
}

static void post(struct ctx *c, enum ibv_wr_opcode op, void *laddr, uint32_t len, uint32_t lkey,
		 uint64_t raddr, uint32_t rkey, uint64_t cmp, uint64_t swp)
{
	struct ibv_sge sge = { .addr = (uintptr_t)laddr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = {
		.wr_id = op, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	if (op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = cmp;
		wr.wr.atomic.swap = swp;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	if (ibv_post_send(c->qp, &wr, &bad))
		die("post_send");
	wait_wc(c);
}

static int xfer(int fd, void *buf, size_t len, int wr)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = wr ? write(fd, (char *)buf + done, len - done) :
				 read(fd, (char *)buf + done, len - done);

		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

static int tcp_connect(const char *host, int port, int server)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		die("socket");
	if (server) {
		int c;

		sa.sin_addr.s_addr = htonl(INADDR_ANY);
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 1))
			die("listen");
		c = accept(fd, NULL, NULL);
		close(fd);
		if (c < 0)
			die("accept");
		return c;
	}
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		die("address");
	for (int i = 0; i < 100; i++) {
		if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			return fd;
		usleep(20000);
		close(fd);
		fd = socket(AF_INET, SOCK_STREAM, 0);
	}
	die("connect");
	return -1;
}

static void setup(struct ctx *c, int server)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		  IBV_ACCESS_REMOTE_ATOMIC;

	if (!l || !l[0])
		die("no device");
	c->ctx = ibv_open_device(l[0]);
	ibv_free_device_list(l);
	if (!c->ctx)
		die("open_device");
	c->pd = ibv_alloc_pd(c->ctx);
	if (use_cq_ex) {
		struct ibv_cq_init_attr_ex cx = { .cqe = 64, .wc_flags = IBV_WC_STANDARD_FLAGS };

		c->cqx = ibv_create_cq_ex(c->ctx, &cx);
		c->cq = c->cqx ? ibv_cq_ex_to_cq(c->cqx) : NULL;
	} else {
		c->cq = ibv_create_cq(c->ctx, 64, NULL, NULL, 0);
	}
	if (!c->pd || !c->cq)
		die("pd/cq");
	c->a = aligned_alloc(4096, REGION);
	c->b = malloc(REGION + 64);	/* deliberately not page aligned */
	c->msgs = aligned_alloc(4096, NSENDS * MSGMAX);
	c->atom = aligned_alloc(64, NATOM * sizeof(uint64_t));
	c->sg = calloc(1, SGBUF);
	if (!c->a || !c->b || !c->msgs || !c->atom || !c->sg)
		die("malloc");
	memset(c->a, 0, REGION);
	memset(c->b, 0, REGION + 64);
	memset(c->msgs, 0, NSENDS * MSGMAX);
	for (int i = 0; i < NATOM; i++)
		c->atom[i] = server ? 1000 * (uint64_t)i + 7 : 0;
	c->mr_a = ibv_reg_mr(c->pd, c->a, REGION, acc);
	c->mr_b = ibv_reg_mr(c->pd, c->b + 5, REGION, acc);
	c->mr_msgs = ibv_reg_mr(c->pd, c->msgs, NSENDS * MSGMAX, acc);
	c->mr_atom = ibv_reg_mr(c->pd, c->atom, NATOM * sizeof(uint64_t), acc);
	c->mr_sg = ibv_reg_mr(c->pd, c->sg, SGBUF, acc);
	if (!c->mr_a || !c->mr_b || !c->mr_msgs || !c->mr_atom || !c->mr_sg)
		die("reg_mr");
	struct ibv_device_attr da;
	struct ibv_qp_init_attr ia = {
		.send_cq = c->cq, .recv_cq = c->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = NSENDS + 2, .max_send_sge = 4,
			 .max_recv_sge = 3 },
	};
	if (ibv_query_device(c->ctx, &da))
		die("query_device");
	if (da.max_sge < 4 || da.max_sge_rd < 1) {
		fprintf(stderr, "max_sge %d, max_sge_rd %d\n", da.max_sge, da.max_sge_rd);
		die("device caps");
	}
	/* more SGEs than the device has: refused, not cut down */
	ia.cap.max_send_sge = (uint32_t)da.max_sge + 1;
	c->qp = ibv_create_qp(c->pd, &ia);
	if (c->qp)
		fail(c, "create_qp past max_sge", 0, 1, 0);
	ia.cap.max_send_sge = 4;
	c->qp = ibv_create_qp(c->pd, &ia);
	if (!c->qp)
		die("create_qp");
	if (ia.cap.max_send_sge < 4 || ia.cap.max_recv_sge < 3)
		fail(c, "create_qp caps", 0, ia.cap.max_send_sge, 4);
	/* the inline room a ConnectX reports, as rdma-core's mlx5 provider
	 * computes it: a 192-B RC WQE head, SGEs or inline data, 64-B blocks
	 * (UCX asks for 64 and is told 124) */
	if (ia.cap.max_inline_data != 60)
		fail(c, "max_inline_data, RC, 4 SGEs, none asked", 0, ia.cap.max_inline_data, 60);
	{
		static const struct { enum ibv_qp_type t; uint32_t sge, asked, told; } k[] = {
			{ IBV_QPT_RC, 1, 64, 124 }, { IBV_QPT_RC, 1, 220, 252 },
			{ IBV_QPT_UD, 1, 64, 124 }, { IBV_QPT_UD, 1, 0, 60 },
		};
		for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
			struct ibv_qp_init_attr x = {
				.send_cq = c->cq, .recv_cq = c->cq, .qp_type = k[i].t,
				.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = k[i].sge,
					 .max_recv_sge = 1, .max_inline_data = k[i].asked },
			};
			struct ibv_qp *q = ibv_create_qp(c->pd, &x);

			if (!q)
				die("create_qp (inline room)");
			if (x.cap.max_inline_data != k[i].told)
				fail(c, "max_inline_data as mlx5 reports it", (uint64_t)i,
				     x.cap.max_inline_data, k[i].told);
			ibv_destroy_qp(q);
		}
	}
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
				  .qp_access_flags = acc };
	if (ibv_modify_qp(c->qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		die("modify INIT");
	if (server)
		for (int i = 0; i < NSENDS; i++) {
			struct ibv_sge s = { .addr = (uintptr_t)(c->msgs + (size_t)i * MSGMAX),
					     .length = MSGMAX, .lkey = c->mr_msgs->lkey };
			struct ibv_recv_wr r = { .wr_id = (uint64_t)i, .sg_list = &s, .num_sge = 1 },
					   *bad;

			if (ibv_post_recv(c->qp, &r, &bad))
				die("post_recv");
		}
	if (server) {
		/* after them, two receives over several SGEs of two MRs; the
		 * second is taken by the WRITE with immediate and stays zero */
		struct ibv_sge a[3] = {
			{ (uintptr_t)c->sg, 777, c->mr_sg->lkey },
			{ (uintptr_t)(c->b + 5 + 400000), 3000, c->mr_b->lkey },
			{ (uintptr_t)(c->sg + 10000), 70000, c->mr_sg->lkey },
		}, b[2] = {
			{ (uintptr_t)(c->sg + 100000), 1, c->mr_sg->lkey },
			{ (uintptr_t)(c->sg + 100002), 4095, c->mr_sg->lkey },
		};
		struct ibv_recv_wr rb = { .wr_id = 101, .sg_list = b, .num_sge = 2 },
				   ra = { .wr_id = 100, .sg_list = a, .num_sge = 3, .next = &rb },
				   *bad;

		if (ibv_post_recv(c->qp, &ra, &bad))
			die("post_recv (lists)");
	}
}

/* The byte at position i of the gathered SEND, in the server's scatter. */
static uint8_t *sg_send_at(struct ctx *c, uint32_t i)
{
	if (i < 777)
		return c->sg + i;
	if (i < 777 + 3000)
		return c->b + 5 + 400000 + (i - 777);
	return c->sg + 10000 + (i - 3777);
}

/* Post one WR over several SGEs and wait for it; the post's status. */
static int post_sgl(struct ctx *c, enum ibv_wr_opcode op, struct ibv_sge *sg, int n,
		    uint64_t raddr, uint32_t rkey, uint32_t imm)
{
	struct ibv_send_wr wr = {
		.wr_id = 1000 + (uint64_t)op, .sg_list = sg, .num_sge = n, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(imm),
	}, *bad;
	int rc;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	rc = ibv_post_send(c->qp, &wr, &bad);
	if (!rc)
		wait_wc(c);
	return rc;
}

/* The client's gather/scatter phase (see the top). */
static void client_sgl(struct ctx *c, const struct dest *rem)
{
	struct ibv_sge s[4];
	uint32_t at = 0;
	int rc;

	/* SEND from msgs, b and a: seed 200 over the whole message */
	s[0] = (struct ibv_sge){ (uintptr_t)(c->msgs + 1000), 10000, c->mr_msgs->lkey };
	s[1] = (struct ibv_sge){ (uintptr_t)(c->b + 5 + 7), 1, c->mr_b->lkey };
	s[2] = (struct ibv_sge){ (uintptr_t)(c->a + 300000), 39999, c->mr_a->lkey };
	for (int k = 0; k < 3; k++)
		for (uint32_t i = 0; i < s[k].length; i++)
			((uint8_t *)(uintptr_t)s[k].addr)[i] = pat(200, at++);
	if ((rc = post_sgl(c, IBV_WR_SEND, s, 3, 0, 0, 0)))
		fail(c, "gathered SEND posted", 0, (unsigned)rc, 0);
	/* WRITE with immediate from msgs and a: seed 201 */
	s[0] = (struct ibv_sge){ (uintptr_t)(c->msgs + 20000), 4096, c->mr_msgs->lkey };
	s[1] = (struct ibv_sge){ (uintptr_t)(c->a + 500001), 5000, c->mr_a->lkey };
	at = 0;
	for (int k = 0; k < 2; k++)
		for (uint32_t i = 0; i < s[k].length; i++)
			((uint8_t *)(uintptr_t)s[k].addr)[i] = pat(201, at++);
	if ((rc = post_sgl(c, IBV_WR_RDMA_WRITE_WITH_IMM, s, 2, rem->addr_sg + SG_IMM_AT,
			   rem->rkey_sg, SG_IMM_DATA)))
		fail(c, "gathered WRITE_WITH_IMM posted", 0, (unsigned)rc, 0);
	/* WRITE from four pieces of a (out of order in memory): seed 202 */
	at = 0;
	for (int k = 0; k < 4; k++) {
		s[k] = (struct ibv_sge){ (uintptr_t)(c->a + 700000 - 30000 * (uint32_t)k),
					 sg_write[k], c->mr_a->lkey };
		for (uint32_t i = 0; i < s[k].length; i++)
			((uint8_t *)(uintptr_t)s[k].addr)[i] = pat(202, at++);
	}
	if ((rc = post_sgl(c, IBV_WR_RDMA_WRITE, s, 4, rem->addr_sg + SG_WRITE_AT, rem->rkey_sg, 0)))
		fail(c, "gathered WRITE posted", 0, (unsigned)rc, 0);
	/* a READ scatters into one SGE (max_sge_rd): two are refused */
	s[0] = (struct ibv_sge){ (uintptr_t)(c->b + 5), 10, c->mr_b->lkey };
	s[1] = (struct ibv_sge){ (uintptr_t)(c->b + 5 + 100), 10, c->mr_b->lkey };
	if ((rc = post_sgl(c, IBV_WR_RDMA_READ, s, 2, rem->addr_sg, rem->rkey_sg, 0)) != EINVAL)
		fail(c, "READ with two SGEs", 0, (unsigned)rc, EINVAL);
}

/* The server's side of it, once the client is done. */
static void server_sgl(struct ctx *c)
{
	struct ibv_wc wc = wait_wc(c);
	uint32_t at = 0;

	if (wc.opcode != IBV_WC_RECV || wc.wr_id != 100 || wc.byte_len != SG_SEND)
		fail(c, "scattered receive's completion", wc.wr_id, wc.byte_len, SG_SEND);
	for (uint32_t i = 0; i < SG_SEND; i++)
		if (*sg_send_at(c, i) != pat(200, i)) {
			fail(c, "scattered SEND", i, *sg_send_at(c, i), pat(200, i));
			break;
		}
	/* past the message, the last SGE is untouched */
	if (c->sg[10000 + (SG_SEND - 3777)] != 0)
		fail(c, "past the scattered SEND", SG_SEND, c->sg[10000 + SG_SEND - 3777], 0);
	wc = wait_wc(c);
	if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM || wc.wr_id != 101 ||
	    wc.byte_len != SG_IMM || !(wc.wc_flags & IBV_WC_WITH_IMM) ||
	    wc.imm_data != htonl(SG_IMM_DATA))
		fail(c, "WRITE_WITH_IMM completion", wc.wr_id, wc.byte_len, SG_IMM);
	for (uint32_t i = 0; i < 4096; i++)
		if (c->sg[100000 + i] != 0) {
			fail(c, "WRITE_WITH_IMM's receive buffer", i, c->sg[100000 + i], 0);
			break;
		}
	for (uint32_t i = 0; i < SG_IMM; i++)
		if (c->sg[SG_IMM_AT + i] != pat(201, i)) {
			fail(c, "gathered WRITE_WITH_IMM", i, c->sg[SG_IMM_AT + i], pat(201, i));
			break;
		}
	for (int k = 0; k < 4; k++)
		at += sg_write[k];
	for (uint32_t i = 0; i < at; i++)
		if (c->sg[SG_WRITE_AT + i] != pat(202, i)) {
			fail(c, "gathered WRITE", i, c->sg[SG_WRITE_AT + i], pat(202, i));
			break;
		}
}

static void connect_qp(struct ctx *c, const struct dest *me, const struct dest *rem)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_4096, .dest_qp_num = rem->qpn,
		.rq_psn = rem->psn, .max_dest_rd_atomic = 4, .min_rnr_timer = 12,
		.ah_attr = { .dlid = (uint16_t)rem->lid, .port_num = 1 },
	};

	if (ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			  IBV_QP_MIN_RNR_TIMER))
		die("modify RTR");
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = me->psn;
	a.max_rd_atomic = 4;
	if (ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify RTS");
}

static void exchange(struct ctx *c, int fd, struct dest *me, struct dest *rem)
{
	struct ibv_port_attr pa;

	if (ibv_query_port(c->ctx, 1, &pa))
		die("query_port");
	me->lid = pa.lid;
	me->qpn = c->qp->qp_num;
	me->psn = (uint32_t)getpid() & 0xffffff;
	me->addr_a = (uintptr_t)c->a;
	me->rkey_a = c->mr_a->rkey;
	me->addr_at = (uintptr_t)c->atom;
	me->rkey_at = c->mr_atom->rkey;
	me->addr_sg = (uintptr_t)c->sg;
	me->rkey_sg = c->mr_sg->rkey;
	if (xfer(fd, me, sizeof(*me), 1) || xfer(fd, rem, sizeof(*rem), 0))
		die("exchange");
	connect_qp(c, me, rem);
}

static int run_server(struct ctx *c, int port)
{
	struct dest me, rem;
	int fd = tcp_connect(NULL, port, 1);
	char done, result[128];

	setup(c, 1);
	exchange(c, fd, &me, &rem);
	/* server -> client: a pattern into the client's region */
	for (uint32_t i = 0; i < 200000; i++)
		c->b[i + 5] = pat(77, i);
	post(c, IBV_WR_RDMA_WRITE, c->b + 5, 200000, c->mr_b->lkey, rem.addr_a + 12345,
	     rem.rkey_a, 0, 0);
	done = 'w';
	if (xfer(fd, &done, 1, 1) || xfer(fd, &done, 1, 0))
		die("wait client");
	/* the client's SENDs: each in its own buffer, in order, intact */
	for (int i = 0; i < NSENDS; i++) {
		struct ibv_wc wc = wait_wc(c);

		if (wc.opcode != IBV_WC_RECV || wc.wr_id != (uint64_t)i ||
		    wc.byte_len != send_sizes[i])
			fail(c, "send completion", (uint64_t)i, wc.byte_len, send_sizes[i]);
		for (uint32_t k = 0; k < send_sizes[i]; k++)
			if (c->msgs[(size_t)i * MSGMAX + k] != pat(100 + (uint32_t)i, k)) {
				fail(c, "send payload", k, c->msgs[(size_t)i * MSGMAX + k],
				     pat(100 + (uint32_t)i, k));
				break;
			}
	}
	server_sgl(c);
	/* the last WRITE covered the whole region with seed 5 */
	for (uint32_t i = 0; i < REGION; i++)
		if (c->a[i] != pat(5, i)) {
			fail(c, "server region", i, c->a[i], pat(5, i));
			break;
		}
	/* atomics: word 0 += 5 then += 11; word 1 swapped; word 2 left alone */
	if (c->atom[0] != 7 + 5 + 11)
		fail(c, "FAA final", 0, (unsigned)c->atom[0], 23);
	if (c->atom[1] != 0xfeedfacecafebeefULL)
		fail(c, "CAS final", 1, (unsigned)c->atom[1], 0xcafebeef);
	if (c->atom[2] != 2007)
		fail(c, "CAS miss final", 2, (unsigned)c->atom[2], 2007);
	snprintf(result, sizeof(result), "%s %d", c->fails ? "FAIL" : "OK", c->fails);
	xfer(fd, result, sizeof(result), 1);
	printf("server: %s\n", result);
	return c->fails ? 1 : 0;
}

/*
 * The queues' limits hold however a post reaches the daemon (the shim
 * sends most without waiting for an answer, from what it knows of the
 * queues and regions): a send queue of 16 takes 16 WRITEs and refuses the
 * 17th with ENOMEM (bad_wr the refused one) until completions are polled;
 * a receive into memory no region covers is refused at once (EINVAL), as
 * is one more than the receive queue holds (ENOMEM).
 */
static void client_limits(struct ctx *c, const struct dest *rem)
{
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	struct ibv_sge sge = { .addr = (uintptr_t)c->a, .length = 8, .lkey = c->mr_a->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = rem->addr_a, .rkey = rem->rkey_a },
	}, *bad = NULL;
	uint32_t n;
	int rc;

	if (ibv_query_qp(c->qp, &qa, IBV_QP_CAP, &qi))
		die("query_qp");
	for (n = 0; n < qi.cap.max_send_wr; n++) {
		wr.wr_id = 1000 + n;
		if ((rc = ibv_post_send(c->qp, &wr, &bad)))
			fail(c, "post_send below the queue's size", n, (unsigned)rc, 0);
	}
	bad = NULL;
	rc = ibv_post_send(c->qp, &wr, &bad);
	if (rc != ENOMEM || bad != &wr)
		fail(c, "post_send past the queue's size (ENOMEM)", n, (unsigned)rc, ENOMEM);
	for (n = 0; n < qi.cap.max_send_wr; n++) {
		struct ibv_wc wc = wait_wc(c);

		if (wc.wr_id != 1000 + n)
			fail(c, "WRITE completion order", n, (unsigned)wc.wr_id, 1000 + n);
	}
	wr.wr_id = 2000;
	if ((rc = ibv_post_send(c->qp, &wr, &bad)))
		fail(c, "post_send once the queue is polled", 0, (unsigned)rc, 0);
	wait_wc(c);

	struct ibv_recv_wr rw = { .wr_id = 3000, .sg_list = &sge, .num_sge = 1 }, *rbad;

	sge.lkey = c->mr_a->lkey ^ 0x5a5a00;	/* no region has it */
	if (!ibv_post_recv(c->qp, &rw, &rbad))
		fail(c, "post_recv with an unknown lkey (EINVAL)", 0, 0, EINVAL);
	sge.lkey = c->mr_a->lkey;
	for (n = 0; n < qi.cap.max_recv_wr; n++)
		if ((rc = ibv_post_recv(c->qp, &rw, &rbad)))
			fail(c, "post_recv below the queue's size", n, (unsigned)rc, 0);
	if ((rc = ibv_post_recv(c->qp, &rw, &rbad)) != ENOMEM)
		fail(c, "post_recv past the queue's size (ENOMEM)", n, (unsigned)rc, ENOMEM);
}

static int run_client(struct ctx *c, const char *host, int port)
{
	struct dest me, rem;
	int fd = tcp_connect(host, port, 0);
	char done = 'd', result[128];
	uint8_t *src;

	setup(c, 0);
	src = c->a;	/* the client's region is the WRITE source */
	exchange(c, fd, &me, &rem);
	/* the server's WRITE into our region, done before it says 'w' */
	if (xfer(fd, &done, 1, 0) || done != 'w')
		die("server write");
	for (uint32_t i = 0; i < 200000; i++)
		if (c->a[12345 + i] != pat(77, i)) {
			fail(c, "server's WRITE", i, c->a[12345 + i], pat(77, i));
			break;
		}
	done = 'd';
	/* WRITE then READ back, several sizes and alignments */
	for (size_t w = 0; w < sizeof(writes) / sizeof(writes[0]); w++) {
		uint32_t off = writes[w].off, len = writes[w].len;

		for (uint32_t i = 0; i < len; i++)
			src[off + i] = pat((uint32_t)w, i);
		post(c, IBV_WR_RDMA_WRITE, src + off, len, c->mr_a->lkey, rem.addr_a + off,
		     rem.rkey_a, 0, 0);
		memset(c->b + 5, 0, len);
		post(c, IBV_WR_RDMA_READ, c->b + 5, len, c->mr_b->lkey, rem.addr_a + off,
		     rem.rkey_a, 0, 0);
		for (uint32_t i = 0; i < len; i++)
			if (c->b[5 + i] != pat((uint32_t)w, i)) {
				fail(c, "READ back", i, c->b[5 + i], pat((uint32_t)w, i));
				break;
			}
	}
	/* SENDs */
	for (int i = 0; i < NSENDS; i++) {
		for (uint32_t k = 0; k < send_sizes[i]; k++)
			c->msgs[k] = pat(100 + (uint32_t)i, k);
		post(c, IBV_WR_SEND, c->msgs, send_sizes[i], c->mr_msgs->lkey, 0, 0, 0, 0);
	}
	client_sgl(c, &rem);
	/* atomics: each returns the word's value before the operation */
	post(c, IBV_WR_ATOMIC_FETCH_AND_ADD, &c->atom[0], 8, c->mr_atom->lkey, rem.addr_at, rem.rkey_at,
	     5, 0);
	if (c->atom[0] != 7)
		fail(c, "FAA returned", 0, (unsigned)c->atom[0], 7);
	post(c, IBV_WR_ATOMIC_FETCH_AND_ADD, &c->atom[0], 8, c->mr_atom->lkey, rem.addr_at, rem.rkey_at,
	     11, 0);
	if (c->atom[0] != 12)
		fail(c, "FAA returned", 1, (unsigned)c->atom[0], 12);
	post(c, IBV_WR_ATOMIC_CMP_AND_SWP, &c->atom[1], 8, c->mr_atom->lkey, rem.addr_at + 8,
	     rem.rkey_at, 1007, 0xfeedfacecafebeefULL);
	if (c->atom[1] != 1007)
		fail(c, "CAS returned", 1, (unsigned)c->atom[1], 1007);
	post(c, IBV_WR_ATOMIC_CMP_AND_SWP, &c->atom[2], 8, c->mr_atom->lkey, rem.addr_at + 16,
	     rem.rkey_at, 999, 42);
	if (c->atom[2] != 2007)
		fail(c, "CAS miss returned", 2, (unsigned)c->atom[2], 2007);
	post(c, IBV_WR_RDMA_READ, &c->atom[3], 8, c->mr_atom->lkey, rem.addr_at + 8, rem.rkey_at, 0, 0);
	if (c->atom[3] != 0xfeedfacecafebeefULL)
		fail(c, "READ after CAS", 3, (unsigned)c->atom[3], 0xcafebeef);
	client_limits(c, &rem);
	if (xfer(fd, &done, 1, 1) || xfer(fd, result, sizeof(result), 0))
		die("result");
	result[sizeof(result) - 1] = 0;
	printf("client: %d local mismatches; server says %s\n", c->fails, result);
	return c->fails || strncmp(result, "OK", 2) ? 1 : 0;
}

/* Everything back, in order (sanitizer builds check for leaks). */
static void teardown(struct ctx *c)
{
	if (ibv_destroy_qp(c->qp) || ibv_dereg_mr(c->mr_a) || ibv_dereg_mr(c->mr_b) ||
	    ibv_dereg_mr(c->mr_msgs) || ibv_dereg_mr(c->mr_atom) || ibv_dereg_mr(c->mr_sg) ||
	    ibv_destroy_cq(c->cq) ||
	    ibv_dealloc_pd(c->pd) || ibv_close_device(c->ctx)) {
		fprintf(stderr, "teardown failed\n");
		c->fails++;
	}
	free(c->a);
	free(c->b);
	free(c->msgs);
	free(c->atom);
	free(c->sg);
}

int main(int argc, char **argv)
{
	struct ctx c = { 0 };
	int port = 18600, opt;

	while ((opt = getopt(argc, argv, "p:x")) != -1) {
		if (opt == 'p')
			port = atoi(optarg);
		else if (opt == 'x')
			use_cq_ex = true;
		else {
			fprintf(stderr, "usage: %s [-p port] [-x] [server-address]\n", argv[0]);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	int rc = optind < argc ? run_client(&c, argv[optind], port) : run_server(&c, port);

	teardown(&c);
	return rc || c.fails ? 1 : 0;
}
