/* SPDX-License-Identifier: MIT */
/*
 * fuzz_serve.c - the fabric daemon's request handler, in process: what any
 * program attached to a shared `ibfab serve` may send it. Each input is a
 * fresh daemon (serve_open, the small fabric of fuzz.h) with two clients on
 * socketpairs, fed a sequence of records
 *
 *     kind (1 byte)  length (2 bytes, little-endian)  message (length bytes)
 *
 * each message sent as one SOCK_SEQPACKET datagram, as the shim sends a
 * request (shim/shim_proto.h: a struct shim_req, inline bytes, a CPU-time
 * trailer - or anything else). kind & 3 attaches a file descriptor:
 * 1 a 64 KiB memfd sealed against shrinking (what the shim sends with
 * SEG_ADD), 2 the same unsealed, 3 a pipe's read end (IO_BEGIN); kind & 4
 * sends it from the second client instead of the first. After each record
 * the daemon's loop turns twice and both clients read their replies; at
 * the end they hang up and the daemon is closed, so a leak, a crash or a
 * sanitizer report in any handler shows.
 *
 * Built with -DFUZZ_SERVE_SEEDS, it is instead the program that writes the
 * seeds of tests/fuzz/corpus/serve: request sequences that reach the data
 * path (RC QPs of the two clients connected to each other: SEND, WRITE,
 * READ, inline, an atomic, polls; UD; a completion channel and an SRQ),
 * with the handles, keys, LIDs and QP numbers a fresh daemon hands out
 * read from its own replies.
 */
#define _GNU_SOURCE
#include "tests/fuzz/fuzz.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "models/hca/hca.h"
#include "shim/serve.h"
#include "shim/shim_proto.h"
#include "sim/sim_diag.h"

#define MAX_RECORDS	512
#define SEG_BYTES	65536
#define SEG_BASE	0x10000000ULL	/* the client address its segments claim */

static char topo_path[64];

static void remove_topo(void)
{
	if (topo_path[0])
		unlink(topo_path);
}

static int write_topo(void)
{
	size_t n = strlen(FUZZ_BASE_TOPO);
	int fd;

	if (topo_path[0])
		return 0;
	snprintf(topo_path, sizeof(topo_path), "/tmp/ibfab-fuzz-serve-%d.topo", (int)getpid());
	fd = open(topo_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, FUZZ_BASE_TOPO, n) != (ssize_t)n) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	atexit(remove_topo);
	return 0;
}

/* The descriptor a record carries (kind & 3), or -1; *extra the other end
 * of a pipe, closed by the caller. */
static int record_fd(unsigned kind, int *extra)
{
	int fd = -1, p[2];

	*extra = -1;
	switch (kind & 3) {
	case 1:
	case 2:
		fd = memfd_create("fuzz-seg", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		if (fd >= 0 && (ftruncate(fd, SEG_BYTES) ||
				((kind & 3) == 1 && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK)))) {
			close(fd);
			fd = -1;
		}
		break;
	case 3:
		if (!pipe2(p, O_CLOEXEC)) {
			fd = p[0];
			*extra = p[1];
		}
		break;
	}
	return fd;
}

static void send_record(int cfd, const uint8_t *msg, size_t len, int fd)
{
	union shim_fd_cmsg u;
	struct iovec iov = { (void *)msg, len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

	shim_msg_attach_fd(&m, &u, fd);
	(void)sendmsg(cfd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Read every reply there is, closing the descriptors they carry; keep the
 * last in *last (if given). */
static void drain(int cfd, struct shim_rep *last)
{
	union { char buf[CMSG_SPACE(4 * sizeof(int))]; struct cmsghdr align; } u;
	struct shim_rep r;

	for (;;) {
		struct iovec iov = { &r, sizeof(r) };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
				    .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
		ssize_t k = recvmsg(cfd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

		if (k <= 0)
			return;
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm)) {
			if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
				continue;
			for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
				int x;

				memcpy(&x, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
				close(x);
			}
		}
		if (last)
			*last = r;
	}
}

/* A fresh daemon and its two clients' ends, cfd[0] and cfd[1]. */
static struct srv *daemon_open(int cfd[2])
{
	struct serve_opts o = { .quiet = true };
	struct sim_diag d;
	struct srv *s;

	if (write_topo())
		abort();
	o.topo = topo_path;
	s = serve_open(&o, &d);
	if (!s) {
		fprintf(stderr, "fuzz_serve: %s\n", d.msg);
		abort();
	}
	for (int i = 0; i < 2; i++) {
		int sv[2];

		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) ||
		    fcntl(sv[0], F_SETFL, O_NONBLOCK) || serve_attach_fd(s, sv[0]))
			abort();
		cfd[i] = sv[1];
	}
	return s;
}

/* One record through the daemon: sent by client kind & 4, two turns of the
 * loop, every reply read (the sender's last one into *last). */
static void step(struct srv *s, const int cfd[2], unsigned kind, const uint8_t *msg,
		 size_t len, struct shim_rep *last)
{
	int extra, fd = record_fd(kind, &extra), who = (kind & 4) ? 1 : 0;

	send_record(cfd[who], msg, len, fd);
	if (fd >= 0)
		close(fd);
	for (int t = 0; t < 2; t++) {
		serve_turn(s);
		drain(cfd[who], last);
		drain(cfd[!who], NULL);
	}
	if (extra >= 0)
		close(extra);
}

static void daemon_close(struct srv *s, const int cfd[2])
{
	close(cfd[0]);	/* the clients hang up: detached, then freed at close */
	close(cfd[1]);
	serve_turn(s);
	serve_close(s);
}

#ifndef FUZZ_SERVE_SEEDS
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct srv *s;
	int cfd[2], n = 0;

	s = daemon_open(cfd);
	while (size >= 3 && n++ < MAX_RECORDS) {
		unsigned kind = data[0];
		size_t len = (size_t)data[1] | (size_t)data[2] << 8;

		data += 3;
		size -= 3;
		if (len > size)
			len = size;
		step(s, cfd, kind, data, len, NULL);
		data += len;
		size -= len;
	}
	daemon_close(s, cfd);
	return 0;
}
#else
/* ---- the seed writer ---------------------------------------------------- */

static uint8_t seed[65536];
static size_t seed_len;
static struct srv *gs;
static int gcfd[2];
static struct shim_rep rep;

/* Send q (with inline bytes) from client who, record it in the seed,
 * return the reply. */
static struct shim_rep *req(int who, struct shim_req *q, unsigned fdkind, const void *inl,
			    uint32_t n)
{
	uint8_t msg[sizeof(*q) + SHIM_MAX_INLINE];
	size_t len = sizeof(*q) + n;
	unsigned kind = fdkind | (who ? 4u : 0u);

	q->inline_len = n;
	memcpy(msg, q, sizeof(*q));
	if (n)
		memcpy(msg + sizeof(*q), inl, n);
	if (seed_len + 3 + len > sizeof(seed))
		abort();
	seed[seed_len++] = (uint8_t)kind;
	seed[seed_len++] = (uint8_t)(len & 0xff);
	seed[seed_len++] = (uint8_t)(len >> 8);
	memcpy(seed + seed_len, msg, len);
	seed_len += len;
	memset(&rep, 0xff, sizeof(rep));
	step(gs, gcfd, kind, msg, len, &rep);
	/* what each request got: a seed that stops reaching the data path
	 * shows here (a status, or the completions a POLL_CQ returned) */
	fprintf(stderr, "  client %d op %2u: status %d, count %u\n", who, q->op, rep.status,
		q->op == SHIM_OP_POLL_CQ ? rep.count : 0);
	return &rep;
}

static void begin(void)
{
	seed_len = 0;
	gs = daemon_open(gcfd);
}

static void end(const char *dir, const char *name)
{
	char path[512];
	FILE *f;

	daemon_close(gs, gcfd);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(seed, 1, seed_len, f) != seed_len || fclose(f)) {
		perror(path);
		exit(1);
	}
	printf("%s: %zu bytes\n", path, seed_len);
}

static struct shim_req Q(uint32_t op)
{
	struct shim_req q;

	memset(&q, 0, sizeof(q));
	q.op = op;
	return q;
}

/* One client's objects. */
struct side {
	int who;
	uint16_t lid;
	uint32_t seg, mr, lkey, rkey, cq, qp, qpn;
};

static void attach(struct side *c, const char *host)
{
	struct shim_req q = Q(SHIM_OP_HELLO);

	q.u.hello.magic = SHIM_MAGIC;
	q.u.hello.version = SHIM_VERSION;
	q.u.hello.pid = 1;
	snprintf(q.u.hello.host, sizeof(q.u.hello.host), "%s", host);
	c->lid = req(c->who, &q, 0, NULL, 0)->u.hello.lid;
}

/* A segment and its MR, a CQ, a QP of type t. */
static void setup(struct side *c, uint32_t type)
{
	struct shim_req q = Q(SHIM_OP_SEG_ADD);

	q.u.seg.base = SEG_BASE;
	q.u.seg.length = SEG_BYTES;
	c->seg = req(c->who, &q, 1, NULL, 0)->u.obj.handle;
	q = Q(SHIM_OP_REG_MR);
	q.u.reg_mr.seg = c->seg;
	q.u.reg_mr.access = 0xf;
	q.u.reg_mr.addr = SEG_BASE;
	q.u.reg_mr.length = SEG_BYTES;
	req(c->who, &q, 0, NULL, 0);
	c->mr = rep.u.obj.handle;
	c->lkey = rep.u.obj.lkey;
	c->rkey = rep.u.obj.rkey;
	q = Q(SHIM_OP_CREATE_CQ);
	q.u.create_cq.cqe = 64;
	q.u.create_cq.channel = -1;
	c->cq = req(c->who, &q, 0, NULL, 0)->u.obj.handle;
	q = Q(SHIM_OP_CREATE_QP);
	q.u.create_qp.type = type;
	q.u.create_qp.send_cq = c->cq;
	q.u.create_qp.recv_cq = c->cq;
	q.u.create_qp.srq = -1;
	q.u.create_qp.max_send_wr = 16;
	q.u.create_qp.max_recv_wr = 16;
	q.u.create_qp.max_inline = 64;
	req(c->who, &q, 0, NULL, 0);
	c->qp = rep.u.qp.handle;
	c->qpn = rep.u.qp.qpn;
}

/* c's QP to state, its path pointing at peer p. */
static void modify(const struct side *c, const struct side *p, uint32_t state, uint32_t mask)
{
	struct shim_req q = Q(SHIM_OP_MODIFY_QP);
	struct shim_qp_attr *a = &q.u.modify_qp.attr;

	q.u.modify_qp.qp = c->qp;
	a->mask = mask | HCA_QP_STATE;
	a->qp_state = state;
	a->path_mtu = 4096;
	a->dlid = p->lid;
	a->dest_qp_num = p->qpn;
	a->timeout = 14;
	a->retry_cnt = 7;
	a->rnr_retry = 7;
	a->min_rnr_timer = 12;
	a->max_rd_atomic = 1;
	a->max_dest_rd_atomic = 1;
	a->qkey = 0x11111111;
	req(c->who, &q, 0, NULL, 0);
}

static void connect_rc(const struct side *c, const struct side *p)
{
	modify(c, p, HCA_QPS_INIT, 0);
	modify(c, p, HCA_QPS_RTR, HCA_QP_PATH_MTU | HCA_QP_AV | HCA_QP_DEST_QPN |
	       HCA_QP_RQ_PSN | HCA_QP_MAX_DEST_RD_ATOMIC | HCA_QP_MIN_RNR_TIMER);
	modify(c, p, HCA_QPS_RTS, HCA_QP_TIMEOUT | HCA_QP_RETRY_CNT | HCA_QP_RNR_RETRY |
	       HCA_QP_SQ_PSN | HCA_QP_MAX_QP_RD_ATOMIC);
}

static void post_recv(const struct side *c, uint64_t off, uint32_t len)
{
	struct shim_req q = Q(SHIM_OP_POST_RECV);

	q.u.recv.qp = c->qp;
	q.u.recv.num_sge = 1;
	q.u.recv.wr_id = off;
	q.u.recv.sg = (struct shim_wire_sge){ SEG_BASE + off, len, c->lkey };
	req(c->who, &q, 0, NULL, 0);
}

static void post_send(const struct side *c, const struct side *p, uint32_t op, uint64_t off,
		      uint32_t len, uint64_t roff, const void *inl, uint32_t inl_len)
{
	struct shim_req q = Q(SHIM_OP_POST_SEND);

	q.u.send.qp = c->qp;
	q.u.send.opcode = op;
	q.u.send.send_flags = HCA_SEND_SIGNALED;
	q.u.send.wr_id = 1000 + off;
	q.u.send.sg = (struct shim_wire_sge){ SEG_BASE + off, len, c->lkey };
	q.u.send.num_sge = 1;
	q.u.send.rkey = p->rkey;
	q.u.send.remote_addr = SEG_BASE + roff;
	q.u.send.dlid = p->lid;
	q.u.send.remote_qpn = p->qpn;
	q.u.send.remote_qkey = 0x11111111;
	req(c->who, &q, 0, inl, inl_len);
}

static void poll_cq(const struct side *c, int times)
{
	for (int i = 0; i < times; i++) {
		struct shim_req q = Q(SHIM_OP_POLL_CQ);

		q.u.poll.cq = c->cq;
		q.u.poll.n = SHIM_MAX_WC;
		req(c->who, &q, 0, NULL, 0);
	}
}

static void one(int who, uint32_t op, uint32_t handle)
{
	struct shim_req q = Q(op);

	q.u.obj.handle = handle;
	req(who, &q, 0, NULL, 0);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : ".";
	static const char text[] = "inline bytes";
	struct side a = { .who = 0 }, b = { .who = 1 };
	struct shim_req q;

	/*
	 * RC between h1 and h3 (through both switches). The peer sleeps
	 * while the first client works: a client that is not in a wait
	 * holds the clock (a process of the harness's own, whose CPU time
	 * the daemon reads, would be taken to spin only after 20 ms of it).
	 */
	begin();
	attach(&a, "h1");
	attach(&b, "h3");
	setup(&a, HCA_QPT_RC);
	setup(&b, HCA_QPT_RC);
	connect_rc(&a, &b);
	connect_rc(&b, &a);
	post_recv(&b, 32768, 8192);
	post_recv(&b, 40960, 8192);
	q = Q(SHIM_OP_SLEEP);
	q.u.sleep.ps = 1000000000000ULL;	/* 1 s */
	req(b.who, &q, 0, NULL, 0);
	post_send(&a, &b, HCA_WR_SEND, 0, 4096, 0, NULL, 0);
	post_send(&a, &b, HCA_WR_RDMA_WRITE, 0, 8192, 16384, NULL, 0);
	post_send(&a, &b, HCA_WR_RDMA_READ, 24576, 4096, 0, NULL, 0);
	post_send(&a, &b, HCA_WR_SEND, 0, sizeof(text), 0, text, sizeof(text));
	post_send(&a, &b, HCA_WR_ATOMIC_FETCH_AND_ADD, 49152, 8, 57344, NULL, 0);
	poll_cq(&a, 4);
	q = Q(SHIM_OP_SLEEP);
	q.u.sleep.ps = 100000000;	/* 100 us */
	req(a.who, &q, 0, NULL, 0);
	poll_cq(&a, 2);
	q = Q(SHIM_OP_CLOCK_WAIT);
	req(a.who, &q, 0, NULL, 0);
	one(a.who, SHIM_OP_DESTROY_QP, a.qp);
	one(a.who, SHIM_OP_DEREG_MR, a.mr);
	end(dir, "rc-pair");

	/* UD from h1 to h2 (one switch) */
	begin();
	attach(&a, "h1");
	attach(&b, "h2");
	setup(&a, HCA_QPT_UD);
	setup(&b, HCA_QPT_UD);
	for (int i = 0; i < 2; i++) {
		struct side *c = i ? &b : &a;

		modify(c, c, HCA_QPS_INIT, HCA_QP_QKEY);
		modify(c, c, HCA_QPS_RTR, 0);
		modify(c, c, HCA_QPS_RTS, HCA_QP_SQ_PSN);
	}
	post_recv(&b, 32768, 4096 + SHIM_UD_GRH);
	q = Q(SHIM_OP_SLEEP);
	q.u.sleep.ps = 1000000000000ULL;	/* 1 s: the peer waits */
	req(b.who, &q, 0, NULL, 0);
	post_send(&a, &b, HCA_WR_SEND, 0, 2048, 0, NULL, 0);
	poll_cq(&a, 2);
	end(dir, "ud-pair");

	/* a completion channel (its eventfd travels with CREATE_CHANNEL),
	 * notification, the wait for an event; an SRQ; a socket wait */
	begin();
	attach(&a, "");
	q = Q(SHIM_OP_CREATE_CHANNEL);
	uint32_t ch = req(a.who, &q, 2, NULL, 0)->u.obj.handle;

	q = Q(SHIM_OP_CREATE_CQ);
	q.u.create_cq.cqe = 16;
	q.u.create_cq.channel = (int32_t)ch;
	uint32_t cq = req(a.who, &q, 0, NULL, 0)->u.obj.handle;

	q = Q(SHIM_OP_REQ_NOTIFY);
	q.u.notify.cq = cq;
	req(a.who, &q, 0, NULL, 0);
	q = Q(SHIM_OP_CREATE_SRQ);
	q.u.create_srq.max_wr = 8;
	uint32_t srq = req(a.who, &q, 0, NULL, 0)->u.obj.handle;

	q = Q(SHIM_OP_POST_SRQ_RECV);
	q.u.recv.qp = srq;
	q.u.recv.num_sge = 1;
	req(a.who, &q, 0, NULL, 0);
	q = Q(SHIM_OP_IO_BEGIN);
	req(a.who, &q, 3, NULL, 0);
	q = Q(SHIM_OP_IO_END);
	req(a.who, &q, 0, NULL, 0);
	one(a.who, SHIM_OP_DESTROY_SRQ, srq);
	one(a.who, SHIM_OP_GET_CQ_EVENT, ch);	/* waits: no event will come */
	one(a.who, SHIM_OP_DESTROY_CHANNEL, ch);	/* EPROTO: it is parked */
	end(dir, "channel-srq");
	return 0;
}
#endif
