/* SPDX-License-Identifier: MIT */
/*
 * tcp_conn.c - a TCP connection under an RC queue pair (fabric=tcp), as
 * MPI's and NCCL's socket transports carry one rank pair over one
 * connection: whatever drives the verbs API (synthetic traffic, trace
 * replay, the shim) runs over TCP unchanged.
 *
 * Work requests become messages in the connection's byte stream, each
 * preceded by tcp.msg_hdr bytes of the application's own header (what an
 * MPI envelope or RPC frame carries: operation, length, address): a WRITE
 * or SEND carries its payload, a READ is a request message answered by a
 * response message carrying the data on the reverse direction of the same
 * connection. send() costs the host stack's sending path (tcp_host.c);
 * the stream is cut into segments of at most tcp.mss bytes that never span
 * two messages (each send() is pushed out as TCP_NODELAY sockets do; a
 * coalescing Linux sender would merge a message's tail with the next
 * message's head), and each segment is a TCP/IPv4 frame on the wire.
 *
 * Sender (RFC 5681, 6582, 6298): segments go while the bytes in flight
 * stay within min(cwnd, tcp.rwnd); congestion control is tcp_cc.c's. The
 * third duplicate ACK retransmits the first unacknowledged segment and
 * enters NewReno fast recovery (ssthresh from the CC, cwnd = ssthresh +
 * 3 mss, +1 mss per further duplicate ACK, a partial ACK retransmits the
 * next hole and deflates, the ACK covering `recover` ends recovery with
 * cwnd = min(ssthresh, FlightSize + mss)). The retransmission timer runs
 * while data is outstanding, restarted by every ACK of new data; when it
 * expires the sender goes back to the first unacknowledged byte with a
 * one-segment window, the RTO doubles (up to tcp.max_rto_us), and no fast
 * retransmit follows for data sent before the timeout (RFC 6582's
 * `recover`). RTT is sampled on one segment per window, never on a
 * retransmitted one (Karn). After tcp.retries2 timeouts in a row with no
 * new data acknowledged the connection is given up, as Linux does with
 * ETIMEDOUT (RFC 1122 4.2.3.5's R2; Linux turns tcp_retries2 = 15 into
 * about 924.6 s of backoff from a 200 ms RTO with its 120 s ceiling,
 * where this counts timeouts: 15 with the 60 s ceiling here is 522 s): the oldest send completes with "transport retry counter
 * exceeded", the others are flushed, and every message not yet delivered
 * is lost. Without it, a path that drops nearly every segment retries for
 * the clock's 213 days. SACK, timestamps-based RTT, F-RTO, RACK/TLP,
 * PRR and pacing are left out.
 *
 * Receiver: in-order segments are handed to the application; out-of-order
 * ones are kept (Linux keeps an out-of-order queue) and trigger an
 * immediate duplicate ACK, as does a duplicate and a segment that fills a
 * hole. Otherwise ACKs are delayed (RFC 5681 4.2, RFC 1122): every second
 * full segment is acknowledged at once, a lone one after tcp.delack_us
 * (Linux's 40 ms minimum). Linux's quick-ACK mode at the start of a
 * connection is left out. Data segments carry the ACK (piggybacking).
 * ECN: a segment marked CE by a switch is echoed as ECE on the ACKs, and
 * a change of the CE state is acknowledged at once (RFC 8257 3.2, DCTCP's
 * receiver; RFC 3168's latch-until-CWR is replaced by that echo for all
 * congestion controls).
 *
 * Completions: a WRITE or SEND completes at the requester when send() has
 * returned (the bytes are in the socket buffer: what a socket transport's
 * send completion means), a READ when its response has been received. The
 * receiving side delivers a message when recv() returns its last byte
 * (tcp_host.c), with a receive completion for a SEND (and a WRITE with
 * immediate), as RC would produce. Atomics are refused (-EOPNOTSUPP).
 * When the run carries real bytes (the shim), send() keeps a copy of the
 * message, as the socket buffer does, so the program may reuse its buffer
 * after the send completion while the data is still in flight.
 *
 * Costs: the NIC's DMA and doorbell are the HCA's (models/host, as for
 * RDMA); the kernel's send, receive and wake-up paths are tcp_host.c's.
 */
#include "models/hca/hca_plug.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "models/tcp/tcp.h"
#include "sim/sim_log.h"

/* A message in the send stream: stream bytes [seq, end). */
struct tcp_rec {
	uint64_t seq, end;
	uint8_t op;		/* enum ib_opcode: WRITE_ONLY(_IMM), SEND_ONLY(_IMM), READ_REQUEST, READ_RESP_ONLY */
	int32_t msg;		/* fab message (traffic), or -1 */
	uint64_t va;		/* WRITE: remote address; READ request: remote address to read */
	uint32_t rkey, len, imm;	/* len: payload bytes (READ request: bytes to read) */
	const uint8_t *data;	/* the payload's bytes (NULL: timing only) */
	uint8_t *buf;		/* ... copied by send() into the socket buffer (owned) */
	enum hca_mem mem;
	sim_time_t t0, t1;	/* the bytes enter the socket buffer linearly over [t0, t1] */
	struct hca_dma dma;	/* the NIC's read of them */
	struct hca_dma rdma;	/* ... and its reads again for retransmissions: on one
				 * tracker, a retransmission at snd_una and new data
				 * at snd_nxt would rewind it in turn and book a fresh
				 * PCIe read at every look (gigabytes of phantom DMA) */
};

/* A segment received out of order, kept until the hole before it fills. */
struct tcp_seg {
	uint64_t seq;
	uint32_t len, off;	/* stream bytes; offset in its message */
	uint8_t op, flags;
	int32_t msg;
	uint64_t va;
	uint32_t rkey, mlen, imm;
	const uint8_t *data;
	sim_time_t t;		/* the softirq was done with it */
	sim_time_t dma;		/* the NIC wrote it into host memory */
};

/* A data segment the NIC wrote while the softirq was idle, waiting for the
 * moderated interrupt (struct tcp_host's window: rx_arrive). */
struct tcp_rxwait {
	struct tcp_conn *c;
	struct tcp_seg s;	/* s.t: when the NIC's DMA made it visible */
	bool ce;
};

struct tcp_conn {
	struct hca_xport xport;	/* first: qp->xport points here */
	struct hca_qp *qp;
	uint32_t mss, hdr;
	uint32_t core;		/* its host's core (struct tcp_cores) */
	double gbps;		/* copy rate */
	sim_time_t hot_ps;	/* received data stays in the cache this long (tcp.ddio_bytes
				 * at the NIC's line rate; 0: the copy is never hot) */
	/* sender */
	uint64_t app_seq;	/* stream bytes written by send() */
	uint64_t snd_una, snd_nxt, snd_max;
	struct tcp_rec *rec;
	uint32_t rec_cap, rec_head, rec_n;	/* ring; rec_head is a free-running index */
	uint32_t rec_hint;	/* free-running index of the record holding snd_nxt */
	struct tcp_cc cc;
	struct tcp_rtt rtt;
	uint32_t dupacks;
	bool recovery, recover_set;
	uint64_t recover;
	bool rtx;		/* retransmit the segment at snd_una next */
	bool rtt_on;
	uint64_t rtt_seq;
	sim_time_t rtt_t;
	sim_time_t rto_at;	/* 0: the retransmission timer is off */
	uint32_t backoff;
	/* receiver */
	uint64_t rcv_nxt;
	struct tcp_seg *ooo;	/* sorted by seq */
	uint32_t ooo_n, ooo_cap;
	uint32_t unacked;	/* segments received since the last ACK went */
	bool ack_now;		/* an ACK is due as soon as the softirq is done */
	uint32_t dup_owed;	/* immediate duplicate ACKs owed: one per segment out of
				 * order (the sender counts them), never merged */
	sim_time_t ack_ready;	/* when the softirq has processed what made the ACK due */
	sim_time_t last_t;	/* ... the last segment received */
	sim_time_t delack_at;	/* 0: no delayed ACK pending */
	bool ce;		/* CE state of the last data segment (echoed as ECE) */
	struct {		/* the message being received */
		uint8_t op;
		bool have_recv;
		struct hca_recv_wr r;
		struct hca_mr *mr;
	} in;
	sim_time_t ev_at;	/* the TCP timer event pending in the HCA's heap (0: none) */
	struct tcp_conn_stats st;
};

enum seg_kind { SEG_NONE, SEG_RTX, SEG_NEW, SEG_ACK };

struct seg_pick {
	enum seg_kind kind;
	struct tcp_rec *r;
	uint64_t seq;
	uint32_t len;
	sim_time_t ready;	/* SEG_NONE: when something may become sendable (0: nothing known) */
};

/* The connection carrying qp (qp->xport set: it is this transport's). */
static inline struct tcp_conn *tcp_of(const struct hca_qp *qp)
{
	return (struct tcp_conn *)qp->xport;
}

/* The core that runs connection c's kernel stack at this end (its
 * host's cores are made with its connections: tcp_conn_create). */
static inline struct tcp_host *core_of(const struct tcp_conn *c)
{
	const struct tcp_cores *cs = c->qp->hca->xport_host;

	return &cs->v[c->core];
}

/* A core for a new connection of the host behind h: its own, or one of
 * tcp.cores in turn. */
static int core_take(struct hca *h, uint32_t cores, uint32_t *core)
{
	struct tcp_cores *cs = h->xport_host;

	if (!cs && !(cs = h->xport_host = calloc(1, sizeof(*cs))))
		return -1;
	if (cores && cs->n >= cores) {
		*core = cs->next++ % cores;
		return 0;
	}
	if (cs->n == cs->cap) {
		uint32_t cap = cs->cap ? 2 * cs->cap : 4;
		struct tcp_host *v = realloc(cs->v, cap * sizeof(*v));

		if (!v)
			return -1;
		cs->v = v;
		cs->cap = cap;
	}
	memset(&cs->v[cs->n], 0, sizeof(cs->v[0]));
	*core = cs->n++;
	return 0;
}

static struct fab *fab_of(const struct tcp_conn *c)
{
	return c->qp->hca->f;
}

static const struct tcp_params *prm(const struct tcp_conn *c)
{
	return &fab_of(c)->p.tcp;
}

static sim_time_t now_of(const struct tcp_conn *c)
{
	return fab_of(c)->eng.now;
}

uint32_t tcp_wire_bytes(const struct tcp_params *p, uint32_t len)
{
	uint32_t l2 = ETH_HDR_BYTES + ETH_VLAN_BYTES + IPV4_HDR_BYTES + TCP_HDR_BYTES +
		      (p->timestamps ? TCP_TS_OPT_BYTES : 0) + len + ETH_FCS_BYTES;

	if (l2 < ETH_MIN_FRAME)
		l2 = ETH_MIN_FRAME;
	return l2 + ETH_PREAMBLE_BYTES + ETH_IFG_BYTES;
}

/* ---- life cycle ------------------------------------------------------- */

static const struct hca_transport_ops tcp_ops;

static int tcp_conn_create(struct hca_qp *qp)
{
	struct fab *f = qp->hca->f;
	const struct tcp_params *p = &f->p.tcp;
	struct tcp_conn *c;

	uint32_t core;

	if (core_take(qp->hca, p->cores, &core))
		return -1;
	if (!(c = calloc(1, sizeof(*c))))
		return -1;
	c->core = core;
	c->xport.ops = &tcp_ops;
	c->qp = qp;
	c->mss = p->mss ? p->mss : f->p.mtu;
	c->hdr = p->msg_hdr;
	c->gbps = tcp_copy_gbps(p, f->p.host.mem_gbps);
	c->hot_ps = tcp_hot_ps(p, qp->hca->port ? link_data_rate_bps(qp->hca->port->rate) : 0);
	tcp_cc_init(&c->cc, p->cc, c->mss, p->init_cwnd, p->dctcp_g);
	tcp_rtt_init(&c->rtt, (sim_time_t)p->min_rto_us * SIM_US);
	qp->xport = &c->xport;
	return 0;
}

static void rx_forget(struct tcp_conn *c);

static void tcp_conn_destroy(struct hca_qp *qp)
{
	struct tcp_conn *c = tcp_of(qp);

	if (!c)
		return;
	rx_forget(c);
	for (uint32_t k = 0; k < c->rec_n; k++)
		free(c->rec[(c->rec_head + k) % c->rec_cap].buf);
	free(c->rec);
	free(c->ooo);
	free(c);
	qp->xport = NULL;
}

/* ---- timers ------------------------------------------------------------ */

/* Make sure the TCP timer fires by `at` (one heap event per earlier deadline). */
static void arm(struct tcp_conn *c, sim_time_t at)
{
	if (!at)
		return;
	if (at < now_of(c))
		at = now_of(c);
	if (c->ev_at && c->ev_at <= at)
		return;
	c->ev_at = at;
	hca_qp_arm_xport(c->qp, at);
}

static sim_time_t cur_rto(const struct tcp_conn *c)
{
	const struct tcp_params *p = prm(c);
	sim_time_t max = (sim_time_t)p->max_rto_us * SIM_US, rto = c->rtt.rto;

	for (uint32_t i = 0; i < c->backoff && rto < max; i++)
		rto *= 2;
	return max && rto > max ? max : rto;
}

/* ---- host costs, charged to the host's CPU as well -------------------- */

/* What the core did since `before`, on its host's account: the CPU time,
 * and the memory its copies touched (each byte read from one buffer and
 * written to another: 2 bytes of memory traffic; DMA is counted by the
 * host model as it happens). */
static void charge(struct hca *h, const struct tcp_host *core, const struct tcp_host_stats *before)
{
	h->host.st.cpu_ps += core->st.cpu_ps - before->cpu_ps;
	h->host.st.hostmem_bytes += 2 * (core->st.copy_bytes - before->copy_bytes);
}

/* ---- the send stream ------------------------------------------------- */

static struct tcp_rec *rec_at(struct tcp_conn *c, uint32_t i)
{
	return &c->rec[i % c->rec_cap];
}

static struct tcp_rec *rec_push(struct tcp_conn *c)
{
	if (c->rec_n == c->rec_cap) {
		uint32_t cap = c->rec_cap ? c->rec_cap * 2 : 16;
		struct tcp_rec *n = calloc(cap, sizeof(*n));

		if (!n) {
			fab_fail(fab_of(c), "out of memory for TCP send records");
			return NULL;
		}
		/* keep the free-running indexes: element i moves to i % cap */
		for (uint32_t k = 0; k < c->rec_n; k++)
			n[(c->rec_head + k) % cap] = c->rec[(c->rec_head + k) % c->rec_cap];
		free(c->rec);
		c->rec = n;
		c->rec_cap = cap;
	}
	struct tcp_rec *r = rec_at(c, c->rec_head + c->rec_n++);

	memset(r, 0, sizeof(*r));
	return r;
}

/*
 * send() copies the message into the socket buffer: when the run carries
 * real bytes (the shim), keep that copy, so the program may reuse its
 * buffer once send() has completed, as it may with a socket.
 */
static void snapshot(struct tcp_conn *c, struct tcp_rec *r, const uint8_t *src)
{
	r->data = NULL;
	if (!src || !r->len)
		return;
	r->buf = malloc(r->len);
	if (!r->buf) {
		fab_fail(fab_of(c), "out of memory for a TCP socket buffer");
		return;
	}
	memcpy(r->buf, src, r->len);
	r->data = r->buf;
}

static uint32_t nsegs(const struct tcp_conn *c, uint64_t bytes)
{
	return (uint32_t)((bytes + c->mss - 1) / c->mss);
}

/*
 * Append a message of `len` payload bytes written by send() at t; `nic` is
 * the NIC's share of the latency (doorbell, WQE fetch, HCA pipeline).
 * Returns when send() returns.
 */
static sim_time_t stream_append(struct tcp_conn *c, struct tcp_rec *r, uint32_t len,
				sim_time_t t, sim_time_t nic)
{
	struct hca *h = c->qp->hca;
	uint64_t bytes = (uint64_t)c->hdr + (r->op == IB_OP_READ_REQUEST ? 0 : len);
	struct tcp_host_stats before = core_of(c)->st;
	sim_time_t c0, done;

	if (!bytes)
		bytes = 1;	/* tcp.msg_hdr=0 and an empty message: one byte still goes */
	done = tcp_host_send(core_of(c), prm(c), c->gbps, t, bytes, nsegs(c, bytes), &c0);
	charge(h, core_of(c), &before);
	SIM_LOG(SIM_LOG_TCP, t, "qp %u send() of %llu bytes: system call %u ns, copy %llu ps, "
		"protocol %u segments x %u ns; returns at %llu ps", c->qp->qpn,
		(unsigned long long)bytes, prm(c)->syscall_ns,
		(unsigned long long)tcp_copy_ps(bytes, c->gbps), nsegs(c, bytes),
		(unsigned)(tcp_seg_ps(prm(c), prm(c)->gso) / SIM_NS), (unsigned long long)done);
	r->seq = c->app_seq;
	r->end = c->app_seq + bytes;
	r->t0 = c0 + nic;
	r->t1 = done + nic;
	c->app_seq = r->end;
	return done;
}

static void tcp_post(struct hca_qp *qp, struct hca_swqe *w)
{
	struct tcp_conn *c = tcp_of(qp);
	struct hca *h = qp->hca;
	sim_time_t now = h->f->eng.now, done;
	struct tcp_rec *r = rec_push(c);

	if (!r)
		return;
	switch (w->wr.opcode) {
	case HCA_WR_RDMA_WRITE: r->op = IB_OP_WRITE_ONLY; break;
	case HCA_WR_RDMA_WRITE_WITH_IMM: r->op = IB_OP_WRITE_ONLY_IMM; break;
	case HCA_WR_SEND: r->op = IB_OP_SEND_ONLY; break;
	case HCA_WR_SEND_WITH_IMM: r->op = IB_OP_SEND_ONLY_IMM; break;
	default: r->op = IB_OP_READ_REQUEST; break;
	}
	r->msg = w->msg;
	r->va = w->wr.remote_addr;
	r->rkey = w->wr.rkey;
	r->len = w->wr.sg.length;
	r->imm = w->wr.imm_data;
	r->mem = HCA_MEM_HOST;	/* the socket buffer */
	if (r->op != IB_OP_READ_REQUEST && r->len && !(w->wr.send_flags & HCA_SEND_INLINE))
		snapshot(c, r, hca_mr_ptr(hca_mr_find(h, w->wr.sg.lkey), w->wr.sg.addr));
	done = stream_append(c, r, r->len, now, w->ready > now ? w->ready - now : 0);
	w->state = SWQE_SENT;
	w->started = true;
	qp->sq_next = qp->sq_tail;	/* every WR is in the socket once posted */
	hca_hint_next(h);
	if (r->op != IB_OP_READ_REQUEST) {
		w->xport_done = done;
		arm(c, done);
	}
	hca_qp_update_active(qp);
}

/* The record holding stream byte seq, searching from free-running index i. */
static struct tcp_rec *rec_find(struct tcp_conn *c, uint64_t seq, uint32_t *i)
{
	uint32_t k = *i;

	if (k - c->rec_head > c->rec_n)
		k = c->rec_head;
	if (k != c->rec_head && rec_at(c, k)->seq > seq)
		k = c->rec_head;
	for (; k != c->rec_head + c->rec_n; k++) {
		struct tcp_rec *r = rec_at(c, k);

		if (seq < r->end) {
			*i = k;
			return seq >= r->seq ? r : NULL;
		}
	}
	*i = k;
	return NULL;
}

static uint32_t seg_len(const struct tcp_conn *c, const struct tcp_rec *r, uint64_t seq)
{
	uint64_t left = r->end - seq;

	return left < c->mss ? (uint32_t)left : c->mss;
}

/* When the segment [seq, seq + len) of r can be on the wire. */
static sim_time_t seg_ready(struct tcp_conn *c, struct tcp_rec *r, uint64_t seq, uint32_t len,
			    bool rtx)
{
	struct hca *h = c->qp->hca;
	uint64_t rl = r->end - r->seq, a = seq - r->seq, b = a + len;
	sim_time_t t = r->t0, d;

	if (r->t1 > r->t0)
		t += (sim_time_t)(((unsigned __int128)(r->t1 - r->t0) * b + rl - 1) / rl);
	d = hca_dma_ready(h, rtx ? &r->rdma : &r->dma, r->mem, rl, a, b, c->mss);
	return d > t ? d : t;
}

static void pick(struct tcp_conn *c, struct seg_pick *s)
{
	sim_time_t now = now_of(c);
	double wnd = c->cc.cwnd < prm(c)->rwnd ? c->cc.cwnd : prm(c)->rwnd;

	memset(s, 0, sizeof(*s));
	if (c->rtx && c->snd_una < c->snd_max) {
		uint32_t i = c->rec_head;
		struct tcp_rec *r = rec_find(c, c->snd_una, &i);

		if (r) {
			uint32_t len = seg_len(c, r, c->snd_una);
			sim_time_t t = seg_ready(c, r, c->snd_una, len, true);

			if (t <= now) {
				*s = (struct seg_pick){ SEG_RTX, r, c->snd_una, len, 0 };
				return;
			}
			s->ready = t;
		}
	}
	if (c->snd_nxt < c->app_seq) {
		struct tcp_rec *r = rec_find(c, c->snd_nxt, &c->rec_hint);

		if (r) {
			uint32_t len = seg_len(c, r, c->snd_nxt);
			uint64_t flight = c->snd_nxt - c->snd_una;

			if (!flight || (double)(flight + len) <= wnd) {
				sim_time_t t = seg_ready(c, r, c->snd_nxt, len, false);

				if (t <= now) {
					*s = (struct seg_pick){ SEG_NEW, r, c->snd_nxt, len, 0 };
					return;
				}
				if (!s->ready || t < s->ready)
					s->ready = t;
			}
		}
	}
	if ((c->unacked && c->ack_now) || c->dup_owed) {
		if (c->ack_ready <= now) {
			s->kind = SEG_ACK;
			return;
		}
		if (!s->ready || c->ack_ready < s->ready)
			s->ready = c->ack_ready;
	}
}

static bool tcp_has_segment(struct hca_qp *qp)
{
	struct tcp_conn *c = tcp_of(qp);
	struct seg_pick s;

	/* RTR already answers (ACKs, READ responses), as an RC responder does */
	if (qp->state != HCA_QPS_RTR && qp->state != HCA_QPS_RTS && qp->state != HCA_QPS_SQD)
		return false;
	pick(c, &s);
	if (s.kind == SEG_NONE && s.ready)
		hca_qp_arm_ready(qp, s.ready);
	return s.kind != SEG_NONE;
}

static uint32_t tcp_next_size(struct hca_qp *qp)
{
	struct tcp_conn *c = tcp_of(qp);
	struct seg_pick s;

	pick(c, &s);
	return tcp_wire_bytes(prm(c), s.kind == SEG_RTX || s.kind == SEG_NEW ? s.len : 0);
}

static void tcp_build(struct hca_qp *qp, struct pkt *p)
{
	struct tcp_conn *c = tcp_of(qp);
	struct fab *f = qp->hca->f;
	sim_time_t now = f->eng.now;
	struct seg_pick s;

	pick(c, &s);
	p->tcp.ack = c->rcv_nxt;	/* the ACK rides on every segment */
	if (c->ce)
		p->flags |= IB_PKT_ECE;
	p->msg = UINT32_MAX;
	if (s.kind == SEG_ACK && c->dup_owed && --c->dup_owed) {
		/* one of several duplicate ACKs: the rest still go one by one */
		p->opcode = IB_OP_ACK;
		p->wire = (uint16_t)tcp_wire_bytes(prm(c), 0);
		c->st.acks_sent++;
		qp->st.acks_sent++;
		return;
	}
	c->unacked = 0;
	c->ack_now = false;
	c->delack_at = 0;
	if (s.kind != SEG_RTX && s.kind != SEG_NEW) {
		p->opcode = IB_OP_ACK;
		p->payload = 0;
		p->wire = (uint16_t)tcp_wire_bytes(prm(c), 0);
		c->st.acks_sent++;
		qp->st.acks_sent++;
		return;
	}
	struct tcp_rec *r = s.r;
	uint64_t off = s.seq - r->seq;

	p->tcp.seq = s.seq;
	p->opcode = r->op;
	p->payload = (uint16_t)s.len;
	p->wire = (uint16_t)tcp_wire_bytes(prm(c), s.len);
	p->msg = (uint32_t)r->msg;
	p->psn = (uint32_t)off;
	p->va = r->va;
	p->rkey = r->rkey;
	p->dma_len = r->len;
	p->imm = r->imm;
	if (r->data && off + s.len > c->hdr)
		p->data = r->data + (off > c->hdr ? off - c->hdr : 0);
	if (!off) {
		p->flags |= IB_PKT_FIRST;
		if (r->msg >= 0 && r->op != IB_OP_READ_RESP_ONLY)
			fab_traffic_sent(f, r->msg, now);
	}
	if (s.seq + s.len == r->end)
		p->flags |= IB_PKT_LAST;
	if (s.kind == SEG_RTX || s.seq < c->snd_max) {
		/* a retransmission: fast retransmit, or resent after a timeout */
		p->flags |= IB_PKT_RETRANS;
		c->st.retransmits++;
		qp->st.pkts_retransmitted++;
		c->rtt_on = false;	/* Karn: no sample across a retransmission */
	}
	if (s.kind == SEG_RTX) {
		c->rtx = false;
	} else {
		c->snd_nxt += s.len;
		if (c->snd_nxt > c->snd_max) {
			if (!c->rtt_on) {
				c->rtt_on = true;
				c->rtt_seq = c->snd_nxt;
				c->rtt_t = now;
			}
			c->snd_max = c->snd_nxt;
		}
	}
	c->st.segs_sent++;
	qp->pkts_sent++;
	if (!c->rto_at) {
		c->rto_at = now + cur_rto(c);
		arm(c, c->rto_at);
	}
}

/* ---- the sender's side of an arriving segment: its ACK ----------------- */

static void rec_pop_acked(struct tcp_conn *c)
{
	while (c->rec_n && rec_at(c, c->rec_head)->end <= c->snd_una) {
		free(rec_at(c, c->rec_head)->buf);
		c->rec_head++;
		c->rec_n--;
	}
	if (c->rec_hint - c->rec_head > c->rec_n)
		c->rec_hint = c->rec_head;
}

static void ack_input(struct tcp_conn *c, uint64_t ack, bool ece, bool pure)
{
	const struct tcp_params *p = prm(c);
	sim_time_t now = now_of(c);
	double mss = c->mss;

	if (ack > c->snd_max)
		return;		/* acknowledges what was never sent: ignore */
	if (ece)
		c->st.ece_rcvd++;
	if (ack > c->snd_una) {
		uint64_t acked = ack - c->snd_una;
		bool cut;

		if (c->rtt_on && ack >= c->rtt_seq) {
			tcp_rtt_sample(&c->rtt, now - c->rtt_t, (sim_time_t)p->min_rto_us * SIM_US,
				       (sim_time_t)p->max_rto_us * SIM_US);
			c->rtt_on = false;
		}
		c->backoff = 0;
		cut = tcp_cc_on_ecn(&c->cc, acked, ece, ack, c->snd_max, now);
		if (c->recovery) {
			if (ack >= c->recover) {
				/* full ACK: leave recovery (RFC 6582 3.2 step 3,
				 * option 1): min(ssthresh, max(FlightSize, mss) + mss),
				 * at least two segments, so a delayed ACK cannot hold
				 * a lone segment for tcp.delack_us */
				double fl = (double)(c->snd_max - ack);

				fl = (fl > mss ? fl : mss) + mss;

				c->recovery = false;
				c->cc.cwnd = fl < c->cc.ssthresh ? fl : c->cc.ssthresh;
				if (c->cc.cwnd < mss)
					c->cc.cwnd = mss;
			} else {
				/* partial ACK: resend the next hole, deflate (step 4) */
				c->rtx = true;
				c->cc.cwnd -= (double)acked;
				if (acked >= c->mss)
					c->cc.cwnd += mss;
				if (c->cc.cwnd < mss)
					c->cc.cwnd = mss;
			}
		} else if (!cut) {
			tcp_cc_on_ack(&c->cc, acked, now, c->rtt.srtt);
		}
		c->snd_una = ack;
		if (c->snd_nxt < ack)
			c->snd_nxt = ack;
		c->dupacks = 0;
		rec_pop_acked(c);
		c->rto_at = c->snd_una == c->snd_max ? 0 : now + cur_rto(c);
		arm(c, c->rto_at);
		return;
	}
	if (ack != c->snd_una || !pure || c->snd_max == c->snd_una)
		return;
	/* a duplicate ACK (RFC 5681 2) */
	c->dupacks++;
	c->st.dupacks_rcvd++;
	if (c->recovery) {
		c->cc.cwnd += mss;	/* each dup ACK: a segment has left the network */
		return;
	}
	if (c->dupacks != p->dupthresh || (c->recover_set && ack <= c->recover))
		return;
	/* fast retransmit and recovery (RFC 6582 3.2 step 2) */
	c->recovery = c->recover_set = true;
	c->recover = c->snd_max;
	tcp_cc_on_loss(&c->cc, c->snd_max - c->snd_una, now);
	c->cc.cwnd = c->cc.ssthresh + 3 * mss;
	c->rtx = true;
	c->rtt_on = false;
	c->st.fast_recoveries++;
	SIM_LOG(SIM_LOG_TCP, now, "qp %u tcp fast retransmit at %llu, cwnd %.0f",
		c->qp->qpn, (unsigned long long)c->snd_una, c->cc.cwnd);
}

/* tcp.retries2 timeouts in a row: give the connection up (see the top). */
static void give_up(struct tcp_conn *c)
{
	struct hca_qp *qp = c->qp;
	struct fab *f = fab_of(c);

	SIM_LOG(SIM_LOG_TCP, now_of(c), "qp %u tcp gives up after %u timeouts at %llu",
		qp->qpn, c->backoff, (unsigned long long)c->snd_una);
	for (uint32_t i = 0; i < c->rec_n; i++) {
		const struct tcp_rec *r = &c->rec[(c->rec_head + i) % c->rec_cap];

		if (r->msg >= 0 && r->op != IB_OP_READ_RESP_ONLY)
			fab_traffic_given_up(f, (uint32_t)r->msg);
	}
	c->st.gave_up = 1;
	c->rto_at = 0;
	if (qp->sq_head != qp->sq_next)
		qp_req_complete(qp, hca_swqe_at(qp, qp->sq_head), HCA_WC_RETRY_EXC_ERR);
	hca_qp_to_error(qp);
}

static void timeout(struct tcp_conn *c)
{
	sim_time_t now = now_of(c);

	if (c->backoff >= prm(c)->retries2) {
		c->backoff++;
		give_up(c);
		return;
	}

	c->st.timeouts++;
	c->qp->st.timeouts++;
	tcp_cc_on_timeout(&c->cc, c->snd_max - c->snd_una, now);
	c->recovery = false;
	c->recover_set = true;
	c->recover = c->snd_max;
	c->dupacks = 0;
	c->rtx = false;
	c->rtt_on = false;
	c->snd_nxt = c->snd_una;	/* go back: resend from the first hole */
	c->rec_hint = c->rec_head;
	c->backoff++;
	SIM_LOG(SIM_LOG_TCP, now, "qp %u tcp RTO at %llu, next RTO %llu ps", c->qp->qpn,
		(unsigned long long)c->snd_una, (unsigned long long)cur_rto(c));
}

/* ---- the receiver's side: data in order, to the application ------------ */

static struct hca_swqe *pending_read(struct hca_qp *qp)
{
	for (uint32_t i = qp->sq_head; i != qp->sq_tail; i++) {
		struct hca_swqe *w = hca_swqe_at(qp, i);

		if (w->state != SWQE_DONE && w->wr.opcode == HCA_WR_RDMA_READ && !w->xport_done)
			return w;
	}
	return NULL;
}

static void recv_cqe(struct hca_qp *qp, const struct hca_recv_wr *r, enum hca_wc_opcode op,
		     uint32_t len, uint32_t imm, bool with_imm, sim_time_t t)
{
	struct hca_wc wc = {
		.wr_id = r->wr_id, .status = HCA_WC_SUCCESS, .opcode = op, .byte_len = len,
		.qp_num = qp->qpn, .src_qp = qp->dest_qpn, .slid = qp->dlid,
		.imm_data = imm, .with_imm = with_imm, .time = t,
	};

	hca_cq_push(qp->rcq, &wc);
}

/* The responder's application answers a READ request at t: send() the data. */
static void read_respond(struct tcp_conn *c, const struct tcp_seg *s, sim_time_t t)
{
	struct hca *h = c->qp->hca;
	struct hca_mr *mr = hca_mr_find(h, s->rkey);
	struct tcp_rec *r;
	sim_time_t nic = h->f->hca_lat;

	if (!(c->qp->access & HCA_ACCESS_REMOTE_READ) ||
	    (s->mlen && hca_mr_check(mr, s->va, s->mlen, HCA_ACCESS_REMOTE_READ))) {
		SIM_LOG(SIM_LOG_HCA, h->f->eng.now, "qp %u tcp READ of a bad region",
			c->qp->qpn);
		mr = NULL;	/* the model answers anyway: sockets have no R_Key */
	}
	r = rec_push(c);
	if (!r)
		return;
	r->op = IB_OP_READ_RESP_ONLY;
	r->msg = s->msg;
	r->len = s->mlen;
	r->mem = HCA_MEM_HOST;
	snapshot(c, r, mr ? hca_mr_ptr(mr, s->va) : NULL);
	if (h->f->p.host_model)
		nic += host_post(&h->host, t, 0, HOST_POST_ALONE) - t;
	stream_append(c, r, r->len, t, nic);
	hca_qp_update_active(c->qp);
}

/* Hand the in-order segment s, processed by the softirq at s->t, to the application. */
static void deliver(struct tcp_conn *c, const struct tcp_seg *s)
{
	struct hca_qp *qp = c->qp;
	struct hca *h = qp->hca;
	struct fab *f = h->f;
	bool first = s->flags & IB_PKT_FIRST, last = s->flags & IB_PKT_LAST;
	uint32_t poff = s->off > c->hdr ? s->off - c->hdr : 0;
	uint32_t plen = s->off + s->len > c->hdr ? s->off + s->len - (s->off > c->hdr ? s->off : c->hdr) : 0;
	struct tcp_host_stats before = core_of(c)->st;
	sim_time_t t;
	uint8_t *dst = NULL;

	if (first) {
		c->in.op = s->op;
		c->in.have_recv = false;
		c->in.mr = NULL;
		if (s->op == IB_OP_SEND_ONLY || s->op == IB_OP_SEND_ONLY_IMM ||
		    s->op == IB_OP_WRITE_ONLY_IMM)
			c->in.have_recv = hca_qp_take_recv(qp, &c->in.r);
		if (s->op == IB_OP_WRITE_ONLY || s->op == IB_OP_WRITE_ONLY_IMM) {
			c->in.mr = hca_mr_find(h, s->rkey);
			if (!(qp->access & HCA_ACCESS_REMOTE_WRITE) ||
			    hca_mr_check(c->in.mr, s->va, s->mlen, HCA_ACCESS_REMOTE_WRITE))
				c->in.mr = NULL;	/* (no R_Key over sockets: not placed) */
		}
	}
	/* the bytes, when the run carries them */
	if (s->data && plen) {
		switch (s->op) {
		case IB_OP_WRITE_ONLY: case IB_OP_WRITE_ONLY_IMM:
			dst = c->in.mr ? hca_mr_ptr(c->in.mr, s->va + poff) : NULL;
			break;
		case IB_OP_SEND_ONLY: case IB_OP_SEND_ONLY_IMM:
			if (c->in.have_recv && poff + plen <= c->in.r.sg.length)
				dst = hca_mr_ptr(hca_mr_find(h, c->in.r.sg.lkey), c->in.r.sg.addr + poff);
			break;
		case IB_OP_READ_RESP_ONLY: {
			struct hca_swqe *w = pending_read(qp);

			if (w && poff + plen <= w->wr.sg.length)
				dst = hca_mr_ptr(hca_mr_find(h, w->wr.sg.lkey), w->wr.sg.addr + poff);
			break;
		}
		default:
			break;
		}
		if (dst)
			memcpy(dst, s->data, plen);
	}
	t = tcp_host_rx_copy(core_of(c), prm(c), c->gbps, s->t, s->dma + c->hot_ps, s->len, first,
			     last);
	charge(h, core_of(c), &before);
	SIM_LOG(SIM_LOG_TCP, now_of(c), "qp %u recv: %s%u bytes copied (%llu ps%s)%s; at %llu ps",
		c->qp->qpn, first ? "the reader woken (context switch), " : "", s->len,
		(unsigned long long)(core_of(c)->st.copy_ps - before.copy_ps),
		core_of(c)->st.hot_bytes != before.hot_bytes ? ", from the cache" : "",
		last ? ", recv() returns (system call)" : "", (unsigned long long)t);
	if (!last)
		return;
	switch (s->op) {
	case IB_OP_WRITE_ONLY_IMM:
	case IB_OP_SEND_ONLY: case IB_OP_SEND_ONLY_IMM:
		if (c->in.have_recv)
			recv_cqe(qp, &c->in.r, s->op == IB_OP_WRITE_ONLY_IMM ? HCA_WC_RECV_RDMA_WITH_IMM :
				 HCA_WC_RECV, s->mlen, s->imm, s->op != IB_OP_SEND_ONLY, t);
		else
			SIM_LOG(SIM_LOG_HCA, f->eng.now, "qp %u tcp message without a receive",
				qp->qpn);
		/* fall through */
	case IB_OP_WRITE_ONLY:
		if (s->msg >= 0)
			fab_traffic_delivered(f, s->msg, t);
		break;
	case IB_OP_READ_REQUEST:
		read_respond(c, s, t);
		break;
	case IB_OP_READ_RESP_ONLY: {
		struct hca_swqe *w = pending_read(qp);

		if (!w)
			break;
		w->xport_done = t;
		if (w->msg >= 0)
			fab_traffic_delivered(f, w->msg, t);
		arm(c, t);
		break;
	}
	default:
		break;
	}
}

static void seg_of_pkt(struct tcp_seg *s, const struct pkt *p, sim_time_t t)
{
	*s = (struct tcp_seg){
		.seq = p->tcp.seq, .len = p->payload, .off = p->psn, .op = p->opcode,
		.flags = p->flags, .msg = (int32_t)p->msg, .va = p->va, .rkey = p->rkey,
		.mlen = p->dma_len, .imm = p->imm, .data = p->data, .t = t, .dma = t,
	};
}

/* Keep an out-of-order segment (sorted by seq, duplicates dropped). */
static void ooo_insert(struct tcp_conn *c, const struct tcp_seg *s)
{
	uint32_t i = c->ooo_n;

	while (i && c->ooo[i - 1].seq >= s->seq) {
		if (c->ooo[i - 1].seq == s->seq)
			return;
		i--;
	}
	if (c->ooo_n == c->ooo_cap) {
		uint32_t cap = c->ooo_cap ? c->ooo_cap * 2 : 16;
		struct tcp_seg *n = realloc(c->ooo, cap * sizeof(*n));

		if (!n) {
			fab_fail(fab_of(c), "out of memory for TCP reassembly");
			return;
		}
		c->ooo = n;
		c->ooo_cap = cap;
	}
	memmove(&c->ooo[i + 1], &c->ooo[i], (c->ooo_n - i) * sizeof(*c->ooo));
	c->ooo[i] = *s;
	c->ooo_n++;
	if (c->ooo_n > c->st.max_ooo)
		c->st.max_ooo = c->ooo_n;
}

static void data_input(struct tcp_conn *c, struct tcp_seg s, bool ce)
{
	const struct tcp_params *prm_ = prm(c);
	sim_time_t t = s.t;

	if (ce)
		c->st.ce_rcvd++;
	if (ce != c->ce) {
		c->ce = ce;
		c->ack_now = true;	/* RFC 8257 3.2: a CE change is acknowledged at once */
	}
	c->unacked++;
	c->last_t = t;
	if (s.seq + s.len <= c->rcv_nxt) {
		c->ack_now = true;	/* a duplicate: ACK at once */
		c->dup_owed++;
	} else if (s.seq > c->rcv_nxt) {
		c->st.ooo_segs++;
		ooo_insert(c, &s);
		c->ack_now = true;	/* out of order: an immediate duplicate ACK */
		c->dup_owed++;
	} else {
		bool hole = c->ooo_n > 0;

		deliver(c, &s);
		c->rcv_nxt = s.seq + s.len;
		while (c->ooo_n && c->ooo[0].seq <= c->rcv_nxt) {
			struct tcp_seg o = c->ooo[0];

			memmove(&c->ooo[0], &c->ooo[1], (c->ooo_n - 1) * sizeof(*c->ooo));
			c->ooo_n--;
			if (o.seq + o.len <= c->rcv_nxt)
				continue;
			if (o.t < t)
				o.t = t;
			deliver(c, &o);
			c->rcv_nxt = o.seq + o.len;
		}
		if (hole || c->unacked >= 2 || !prm_->delack_us)
			c->ack_now = true;
		else if (!c->delack_at) {
			c->delack_at = now_of(c) + (sim_time_t)prm_->delack_us * SIM_US;
			arm(c, c->delack_at);
		}
	}
}

/*
 * The softirq's part of a data segment the NIC made visible at s.t, its
 * interrupt raised at irq: protocol processing on the connection's core,
 * then TCP's receive path. The ACK it makes due goes once the softirq has
 * processed that segment; later segments do not hold it back.
 */
static void rx_process(struct tcp_conn *c, struct tcp_seg s, bool ce, sim_time_t irq)
{
	struct hca_qp *qp = c->qp;
	struct tcp_host_stats before = core_of(c)->st;
	sim_time_t t = tcp_host_rx_seg(core_of(c), prm(c), s.t, irq);
	bool due;

	charge(qp->hca, core_of(c), &before);
	SIM_LOG(SIM_LOG_TCP, now_of(c), "qp %u segment of %u bytes: %s, protocol %u ns; done at %llu ps",
		qp->qpn, s.len, core_of(c)->st.irqs != before.irqs ?
		(irq > s.t ? "a moderated interrupt" : "an interrupt") : "in the softirq's poll",
		(unsigned)(tcp_seg_ps(prm(c), prm(c)->gro) / SIM_NS), (unsigned long long)t);
	if (qp->state != HCA_QPS_RTS && qp->state != HCA_QPS_SQD && qp->state != HCA_QPS_RTR)
		return;		/* moved to an error state while it waited */
	due = c->ack_now || c->dup_owed;
	s.t = t;
	data_input(c, s, ce);
	if ((c->ack_now || c->dup_owed) && !due)
		c->ack_ready = t;
	hca_qp_update_active(qp);
}

/* The NIC raises the moderated interrupt at `at`: the softirq takes the
 * segments that waited for it, in the order they came. */
static void rx_flush(struct tcp_host *th, sim_time_t at)
{
	struct tcp_rxwait *w = th->wait;
	uint32_t n = th->wait_n, cap = th->wait_cap;

	/* detached while it runs: nothing may append to what is being read */
	th->wait = NULL;
	th->wait_n = th->wait_cap = 0;
	for (uint32_t i = 0; i < n; i++)
		rx_process(w[i].c, w[i].s, w[i].ce, at);
	if (!th->wait) {
		th->wait = w;
		th->wait_cap = cap;
	} else {
		free(w);
	}
}

/* When the NIC raises the interrupt for a core's waiting segments (there
 * are some): from their first and last DMA times. */
static sim_time_t rx_fire_at(const struct tcp_host *th, const struct tcp_params *p)
{
	return tcp_host_rx_fire(p, th->wait[0].s.t, th->wait[th->wait_n - 1].s.t);
}

/* The moderated interrupt of a core's waiting segments, if it is due by now
 * (a timer of one of the connections it serves: rx_arrive arms it). */
static void rx_due(struct tcp_conn *c)
{
	struct tcp_host *th = core_of(c);
	sim_time_t at;

	if (!th->wait_n)
		return;
	at = rx_fire_at(th, prm(c));
	if (now_of(c) >= at)
		rx_flush(th, at);
	else
		arm(c, at);
}

/*
 * A data segment the NIC has written into the host's memory (s->t: its DMA
 * done). The softirq takes it at once when it is still polling (NAPI);
 * otherwise the NIC raises an interrupt - at once without moderation, or
 * once tcp.rx_frames segments wait or tcp.rx_usecs have passed (after the
 * last segment with tcp.rx_cqe_mode, after the first without): mlx5's CQE-
 * based moderation. The interrupt's time depends on segments still to
 * come, so the segments wait here, and a timer or the next segment ends
 * the window.
 */
static void rx_arrive(struct tcp_conn *c, const struct tcp_seg *s, bool ce)
{
	struct tcp_host *th = core_of(c);
	const struct tcp_params *p = prm(c);

	if (th->wait_n) {
		sim_time_t at = rx_fire_at(th, p);

		if (s->t >= at)
			rx_flush(th, at);	/* the interrupt came before this segment */
	}
	if (!th->wait_n && (!p->rx_usecs || th->rx_free > s->t)) {
		rx_process(c, *s, ce, s->t);
		return;
	}
	if (th->wait_n == th->wait_cap) {
		uint32_t cap = th->wait_cap ? 2 * th->wait_cap : 16;
		struct tcp_rxwait *n = realloc(th->wait, cap * sizeof(*n));

		if (!n) {
			fab_fail(fab_of(c), "out of memory for a NIC's receive ring");
			return;
		}
		th->wait = n;
		th->wait_cap = cap;
	}
	th->wait[th->wait_n++] = (struct tcp_rxwait){ .c = c, .s = *s, .ce = ce };
	SIM_LOG(SIM_LOG_TCP, now_of(c), "qp %u segment of %u bytes waits for the NIC's interrupt "
		"(moderation: %u waiting, interrupt at %llu ps unless more come)", c->qp->qpn, s->len,
		th->wait_n, (unsigned long long)rx_fire_at(th, p));
	if (th->wait_n >= p->rx_frames)
		rx_flush(th, s->t);
	else
		arm(c, rx_fire_at(th, p));
}

/* A connection going away: its segments leave the NIC's window (another
 * connection of the core takes over the window's timer, at the time the
 * segments left make). */
static void rx_forget(struct tcp_conn *c)
{
	struct tcp_host *th = core_of(c);
	uint32_t k = 0;

	for (uint32_t i = 0; i < th->wait_n; i++)
		if (th->wait[i].c != c)
			th->wait[k++] = th->wait[i];
	th->wait_n = k;
	if (k)
		arm(th->wait[0].c, rx_fire_at(th, prm(c)));
}

static void tcp_receive(struct fab *f, struct hca_qp *qp, struct pkt *p)
{
	struct tcp_conn *c = tcp_of(qp);
	struct hca *h = qp->hca;
	sim_time_t now = f->eng.now, t = now;

	if (qp->state != HCA_QPS_RTS && qp->state != HCA_QPS_SQD && qp->state != HCA_QPS_RTR)
		return;
	c->st.segs_rcvd++;
	/* the NIC writes the frame into the ring; the softirq takes it after
	 * the interrupt */
	if (p->payload)
		t = hca_dma_write(h, now, HCA_MEM_HOST, p->payload);
	ack_input(c, p->tcp.ack, p->flags & IB_PKT_ECE, !p->payload);
	if (p->payload) {
		struct tcp_seg s;

		seg_of_pkt(&s, p, t);
		rx_arrive(c, &s, p->flags & IB_PKT_CE);
	}
	hca_qp_update_active(qp);
}

/* ---- completions and the timer ----------------------------------------- */

static void complete_due(struct tcp_conn *c)
{
	struct hca_qp *qp = c->qp;
	sim_time_t now = now_of(c);

	while (qp->sq_head != qp->sq_tail) {
		struct hca_swqe *w = hca_swqe_at(qp, qp->sq_head);

		if (w->state != SWQE_DONE) {
			if (!w->xport_done)
				return;
			if (w->xport_done > now) {
				arm(c, w->xport_done);
				return;
			}
			qp_req_complete(qp, w, HCA_WC_SUCCESS);
		}
		qp->sq_head++;
	}
}

static void tcp_timer(struct hca_qp *qp, sim_time_t t)
{
	struct tcp_conn *c = tcp_of(qp);
	sim_time_t now = qp->hca->f->eng.now;

	if (t == c->ev_at)
		c->ev_at = 0;
	rx_due(c);	/* the core's, whatever state this QP is in */
	if (qp->state == HCA_QPS_ERR || qp->state == HCA_QPS_RESET)
		return;
	if (c->rto_at && now >= c->rto_at) {
		c->rto_at = 0;
		if (c->snd_una < c->snd_max)
			timeout(c);
	}
	if (c->delack_at && now >= c->delack_at) {
		c->delack_at = 0;
		if (c->unacked && !c->ack_now) {
			c->ack_now = true;
			c->ack_ready = c->last_t;
		}
	}
	complete_due(c);
	arm(c, c->rto_at);
	arm(c, c->delack_at);
	hca_qp_update_active(qp);
}

void tcp_host_kernel(const struct hca *h, struct fab_kernel *k)
{
	const struct tcp_cores *cs = h ? h->xport_host : NULL;

	for (uint32_t i = 0; cs && i < cs->n; i++) {
		const struct tcp_host_stats *st = &cs->v[i].st;

		k->syscalls += st->syscalls;
		k->interrupts += st->irqs;
		k->ctx_switches += st->ctx_switches;
		k->cpu_copy_bytes += st->copy_bytes;
		k->cached_copy_bytes += st->hot_bytes;
		k->syscall_ps += st->syscall_ps;
		k->copy_ps += st->copy_ps;
		k->proto_ps += st->proto_ps;
		k->irq_ps += st->irq_ps;
		k->wake_ps += st->wake_ps;
	}
}

void tcp_result_ranges(struct hca *h, void (*fn)(void *ctx, void *p, size_t bytes), void *ctx)
{
	struct tcp_cores *cs = h->xport_host;

	_Static_assert(sizeof(struct tcp_host_stats) % 8 == 0 && sizeof(struct tcp_conn_stats) % 8 == 0,
		       "whole words");
	for (uint32_t i = 0; cs && i < cs->n; i++)
		fn(ctx, &cs->v[i].st, sizeof(cs->v[i].st));
	for (uint32_t q = 0; q < h->nqps; q++) {
		struct hca_qp *qp = h->qps[q];

		if (qp && qp->xport && qp->xport->ops == &tcp_ops)
			fn(ctx, &tcp_of(qp)->st, sizeof(tcp_of(qp)->st));
	}
}

void tcp_totals(const struct fab *f, struct fab_totals *t)
{
	t->tcp_segments = t->tcp_retransmits = t->tcp_timeouts = t->tcp_fast_recoveries = 0;
	t->tcp_gave_up = 0;
	memset(&t->kernel, 0, sizeof(t->kernel));
	for (int i = 0; i < f->nnodes; i++) {
		const struct hca *h = f->nodes[i].hca;

		if (f->rc_transport)	/* the kernel's stack carries the RC QPs */
			tcp_host_kernel(h, &t->kernel);

		for (uint32_t q = 0; h && q < h->nqps; q++) {
			const struct hca_qp *qp = h->qps[q];

			if (!qp || !qp->xport || qp->xport->ops != &tcp_ops)
				continue;
			const struct tcp_conn *c = tcp_of(qp);

			t->tcp_segments += c->st.segs_sent;
			t->tcp_retransmits += c->st.retransmits;
			t->tcp_timeouts += c->st.timeouts;
			t->tcp_fast_recoveries += c->st.fast_recoveries;
			t->tcp_gave_up += c->st.gave_up;
		}
	}
}

static void tcp_hca_fini(struct hca *h)
{
	struct tcp_cores *cs = h->xport_host;

	for (uint32_t i = 0; cs && i < cs->n; i++)
		free(cs->v[i].wait);
	if (cs)
		free(cs->v);
	free(cs);
	h->xport_host = NULL;
}

/* TCP as the transport under the fabric's RC QPs (hca_plug.h): no atomics
 * over a socket. */
static const struct hca_transport_ops tcp_ops = {
	.atomics = false,
	.create = tcp_conn_create,
	.destroy = tcp_conn_destroy,
	.post = tcp_post,
	.has_packet = tcp_has_segment,
	.next_size = tcp_next_size,
	.build = tcp_build,
	.receive = tcp_receive,
	.timer = tcp_timer,
	.hca_fini = tcp_hca_fini,
};

const struct hca_transport_ops *const tcp_transport = &tcp_ops;
