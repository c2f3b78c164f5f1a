/* SPDX-License-Identifier: MIT */
/*
 * test_transport.c - the RC/UC/UD transports through the verbs model
 * (models/hca/hca.h), on two hosts behind one switch, with real buffers:
 *  - WRITE, SEND and READ completion times against the closed form built
 *    from IBA header sizes (9.2-9.4) and the link rate, within 1%;
 *  - under injected loss every RC message arrives exactly once, in order,
 *    byte for byte, with retransmissions counted;
 *  - retry_cnt and rnr_retry exhausted give their statuses, the QP goes to
 *    Error and later work requests are flushed; an RNR'd SEND succeeds
 *    once a receive is posted;
 *  - READs and atomics in flight never exceed max_rd_atomic, and atomics
 *    return what the responder's memory held;
 *  - UD refuses messages above the MTU and sends no ACKs; UC loses whole
 *    messages, never parts of them;
 *  - verbs misuse gets the IBA's immediate error or error completion.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/fabric/fab.h"
#include "models/hca/hca.h"
#include "models/hca/hca_int.h"	/* the HCA timer heap (test_ack_timer_heap) */
#include "models/host/host.h"
#include "models/switch/sw.h"	/* sw_rx_guess (test_rx_guess) */
#include "tests/unit/test_main.h"
#include "tests/unit/util_fabric.h"

#define ALL_ACCESS (HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE | \
		    HCA_ACCESS_REMOTE_READ | HCA_ACCESS_REMOTE_ATOMIC)

struct tp {
	struct net n;
	struct fab_params p;
	struct fab_msgs m;
	struct fab *f;
	int na, nb;
	struct hca *a, *b;
	struct hca_cq *ca, *cb;
	struct hca_qp *qa, *qb;
	struct hca_mr *ma, *mb;
	uint8_t *bufa, *bufb;
	size_t len;
};

static void tp_init(struct tp *t, const char *const *sets, size_t len)
{
	struct sim_diag d;

	memset(t, 0, sizeof(*t));
	tf_chain(&t->n, 1, &t->na, &t->nb);
	tf_params(&t->p, "hdr");
	for (; sets && *sets; sets++)
		tf_set(&t->p, *sets);
	t->p.check = true;
	t->f = fab_create(&t->n, &t->p, &t->m, 1, &d);
	CU_ASSERT_FATAL(t->f != NULL);
	t->a = fab_hca(t->f, t->na);
	t->b = fab_hca(t->f, t->nb);
	t->len = len;
	t->bufa = calloc(1, len);
	t->bufb = calloc(1, len);
	CU_ASSERT_FATAL(t->bufa && t->bufb);
	t->ma = hca_reg_mr(t->a, t->bufa, (uintptr_t)t->bufa, len, ALL_ACCESS, HCA_MEM_HOST);
	t->mb = hca_reg_mr(t->b, t->bufb, (uintptr_t)t->bufb, len, ALL_ACCESS, HCA_MEM_HOST);
	t->ca = hca_create_cq(t->a, 4096, NULL, NULL);
	t->cb = hca_create_cq(t->b, 4096, NULL, NULL);
	CU_ASSERT_FATAL(t->ma && t->mb && t->ca && t->cb);
}

static struct hca_qp *make_qp(struct hca *h, struct hca_cq *cq, enum hca_qp_type type)
{
	struct hca_qp_init_attr ia = {
		.qp_type = type, .send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 512, .max_recv_wr = 512, .max_inline_data = 64 },
	};
	struct hca_qp *qp = hca_create_qp(h, &ia);

	CU_ASSERT_FATAL(qp != NULL);
	return qp;
}

/* RESET -> INIT -> RTR -> RTS towards peer (dest_qpn may be wrong on purpose). */
static void to_rts(struct hca_qp *qp, struct hca *peer, uint32_t dest_qpn, const struct tp *t,
		   uint8_t timeout, uint8_t retry, uint8_t rnr_retry, uint8_t rnr_timer,
		   uint8_t rd_atomic)
{
	struct hca_qp_attr at = { .qp_state = HCA_QPS_INIT };

	CU_ASSERT_FATAL(hca_modify_qp(qp, &at, HCA_QP_STATE) == 0);
	at = (struct hca_qp_attr){
		.qp_state = HCA_QPS_RTR, .path_mtu = t->p.mtu, .dlid = hca_lid(peer),
		.dest_qp_num = dest_qpn, .rq_psn = 0, .min_rnr_timer = rnr_timer,
		.max_dest_rd_atomic = rd_atomic,
	};
	CU_ASSERT_FATAL(hca_modify_qp(qp, &at, HCA_QP_STATE | HCA_QP_PATH_MTU | HCA_QP_AV |
				      HCA_QP_DEST_QPN | HCA_QP_RQ_PSN | HCA_QP_MIN_RNR_TIMER |
				      HCA_QP_MAX_DEST_RD_ATOMIC) == 0);
	at = (struct hca_qp_attr){
		.qp_state = HCA_QPS_RTS, .sq_psn = 0, .timeout = timeout, .retry_cnt = retry,
		.rnr_retry = rnr_retry, .max_rd_atomic = rd_atomic,
	};
	CU_ASSERT_FATAL(hca_modify_qp(qp, &at, HCA_QP_STATE | HCA_QP_SQ_PSN | HCA_QP_TIMEOUT |
				      HCA_QP_RETRY_CNT | HCA_QP_RNR_RETRY |
				      HCA_QP_MAX_QP_RD_ATOMIC) == 0);
}

static void tp_connect(struct tp *t, enum hca_qp_type type, uint8_t timeout, uint8_t retry,
		       uint8_t rnr_retry, uint8_t rnr_timer, uint8_t rd_atomic)
{
	t->qa = make_qp(t->a, t->ca, type);
	t->qb = make_qp(t->b, t->cb, type);
	to_rts(t->qa, t->b, hca_qp_num(t->qb), t, timeout, retry, rnr_retry, rnr_timer, rd_atomic);
	to_rts(t->qb, t->a, hca_qp_num(t->qa), t, timeout, retry, rnr_retry, rnr_timer, rd_atomic);
}

static void tp_run(struct tp *t)
{
	struct sim_diag d;
	char buf[1024];

	if (fab_run(t->f, &d)) {
		sim_diag_format(&d, buf, sizeof(buf));
		fprintf(stderr, "fab_run: %s\n", buf);
		CU_FAIL("fab_run");
	}
}

static void tp_fini(struct tp *t)
{
	fab_destroy(t->f);
	fab_msgs_free(&t->m);
	net_free(&t->n);
	free(t->bufa);
	free(t->bufb);
}

static int poll_all(struct hca_cq *cq, struct hca_wc *wc, int max)
{
	int n = 0, k;

	while (n < max && (k = hca_poll_cq(cq, max - n, wc + n)) > 0)
		n += k;
	return n;
}

static struct hca_send_wr wr_of(struct tp *t, enum hca_wr_opcode op, uint64_t id,
				uint32_t off, uint32_t len)
{
	return (struct hca_send_wr){
		.wr_id = id, .opcode = op, .send_flags = HCA_SEND_SIGNALED,
		.sg = { .addr = (uintptr_t)t->bufa + off, .length = len, .lkey = t->ma->lkey },
		.remote_addr = (uintptr_t)t->bufb + off, .rkey = t->mb->rkey,
	};
}

/* ---- the look-ahead's hint ------------------------------------------------ */

enum { HINT_LEN = 3 * 4096 + 100, HINT_N = 20, HINT_LATE = 40 };

struct hint_check {
	void (*chain)(struct sim_engine *eng, void *ctx);	/* sim.check's hook */
	void *chain_ctx;
	struct tp *t;
	struct hca *h;
	struct hca_qp *seen[2];
	uint64_t events, wrong, hinted[2];
	int late;		/* WRITEs posted during the run */
	uint32_t late_first;	/* their first slot in the buffers */
	bool tail;		/* posted while the port was busy and no QP was active */
	bool kill;		/* second run: the current QP goes to Error */
	bool killed;		/* ... while the other was active too */
};

/* The port names the HCA's current QP of its lowest active VL and that
 * QP's next send WQE, or nothing when no QP is active. */
static bool hint_ok(const struct hca *h)
{
	const struct hca_qp *qp = h->active_vls ? h->cur[__builtin_ctz(h->active_vls)] : NULL;
	const struct hca_swqe *w = qp && qp->sq ? &qp->sq[qp->sq_next & qp->sq_mask] : NULL;

	return h->port->tx_hint == qp && h->port->tx_hint_wqe == w;
}

static void hint_after_event(struct sim_engine *eng, void *ctx)
{
	struct hint_check *c = ctx;

	if (c->chain)
		c->chain(eng, c->chain_ctx);
	c->events++;
	c->wrong += !hint_ok(c->h);
	for (int i = 0; i < 2; i++)
		if (c->h->port->tx_hint == c->seen[i])
			c->hinted[i]++;
	/* A post while the port is busy and the round empty: the QP joins
	 * the round when its WQE is ready, with or without the port free. */
	if (c->late && !c->kill && !c->tail && !c->h->active_vls && c->h->port->tx_busy) {
		uint32_t k = c->late_first + HINT_LATE;
		struct hca_send_wr w = wr_of(c->t, HCA_WR_RDMA_WRITE, k, k * HINT_LEN, HINT_LEN);

		CU_ASSERT_FATAL(hca_post_send(c->seen[1], &w) == 0);
		c->tail = true;
	}
	/* Second run: the current QP leaves the round while another stays. */
	if (c->kill && !c->killed && c->seen[0]->active && c->seen[1]->active &&
	    c->h->port->tx_hint == c->seen[1]) {
		struct hca_qp_attr at = { .qp_state = HCA_QPS_ERR };

		CU_ASSERT_FATAL(hca_modify_qp(c->seen[1], &at, HCA_QP_STATE) == 0);
		c->killed = true;
		c->wrong += !hint_ok(c->h);
	}
	/* Once the first QP is the hint, post enough behind it that its send
	 * queue's storage grows (the hinted WQE moves with it). */
	if (!c->kill && !c->late && c->h->port->tx_hint == c->seen[0]) {
		uint32_t before = c->seen[0]->sq_mask;

		for (; c->late < HINT_LATE; c->late++) {
			uint32_t k = c->late_first + (uint32_t)c->late;
			struct hca_send_wr w = wr_of(c->t, HCA_WR_RDMA_WRITE, k, k * HINT_LEN, HINT_LEN);

			CU_ASSERT_FATAL(hca_post_send(c->seen[0], &w) == 0);
		}
		CU_ASSERT(c->seen[0]->sq_mask > before);
		c->wrong += !hint_ok(c->h);
	}
}

/*
 * port.tx_hint, what the engine's look-ahead prefetches before a CA's
 * transmitter finishes (port_prefetch): two QPs of one HCA, one VL,
 * several multi-packet WRITEs each, the send queue outgrowing its storage
 * while its QP is the hint, packets lost and resent, a post while the
 * port is busy and no QP is active; then the current QP failing while
 * the other stays in the round. At every event the hint must name the QP
 * the HCA would send from and its next WQE: a stale hint changes no
 * result, only the speed, so only this test sees it.
 */
static void test_tx_hint(void)
{
	enum { ALL = 2 * HINT_N + HINT_LATE + 1 };
	struct tp t;
	struct hca_wc wc[ALL];
	struct hint_check c = { .late_first = 2 * HINT_N };

	static const char *const sets[] = { "link.drop_prob=0.02", NULL };	/* go-back-N rewinds */

	tp_init(&t, sets, (size_t)ALL * HINT_LEN);
	/* the hint is kept where the look-ahead runs: large fabrics only */
	fab_engine(t.f)->prefetch = true;
	t.a->hint = true;
	t.b->hint = true;
	tp_connect(&t, HCA_QPT_RC, 4, 7, 7, 1, 16);
	struct hca_qp *qa2 = make_qp(t.a, t.ca, HCA_QPT_RC), *qb2 = make_qp(t.b, t.cb, HCA_QPT_RC);

	to_rts(qa2, t.b, hca_qp_num(qb2), &t, 4, 7, 7, 1, 16);
	to_rts(qb2, t.a, hca_qp_num(qa2), &t, 4, 7, 7, 1, 16);
	CU_ASSERT_PTR_NULL(t.a->port->tx_hint);
	for (int k = 0; k < 2 * HINT_N; k++) {
		struct hca_send_wr w = wr_of(&t, HCA_WR_RDMA_WRITE, (uint64_t)k,
					     (uint32_t)k * HINT_LEN, HINT_LEN);

		CU_ASSERT_FATAL(hca_post_send(k % 2 ? qa2 : t.qa, &w) == 0);
	}
	CU_ASSERT(hint_ok(t.a));
	c.t = &t;
	c.h = t.a;
	c.seen[0] = t.qa;
	c.seen[1] = qa2;
	c.chain = fab_engine(t.f)->after_event;
	c.chain_ctx = fab_engine(t.f)->after_event_ctx;
	fab_engine(t.f)->after_event = hint_after_event;
	fab_engine(t.f)->after_event_ctx = &c;
	tp_run(&t);
	CU_ASSERT_EQUAL_FATAL(poll_all(t.ca, wc, ALL), ALL);
	CU_ASSERT_EQUAL(c.late, HINT_LATE);
	CU_ASSERT(c.tail);
	CU_ASSERT(c.events > 0);
	CU_ASSERT_EQUAL(c.wrong, 0);
	CU_ASSERT(c.hinted[0] > 0 && c.hinted[1] > 0);	/* the round turned */
	CU_ASSERT(hca_qp_stats(t.qa)->pkts_retransmitted + hca_qp_stats(qa2)->pkts_retransmitted > 0);
	CU_ASSERT_PTR_NULL(t.a->port->tx_hint);
	CU_ASSERT_PTR_NULL(t.a->port->tx_hint_wqe);
	CU_ASSERT(memcmp(t.bufa, t.bufb, (size_t)ALL * HINT_LEN) == 0);

	/* again, and the second QP fails while current (its WRs flush) */
	for (int k = 0; k < 8; k++) {
		struct hca_send_wr w = wr_of(&t, HCA_WR_RDMA_WRITE, (uint64_t)k,
					     (uint32_t)k * HINT_LEN, HINT_LEN);

		CU_ASSERT_FATAL(hca_post_send(k % 2 ? qa2 : t.qa, &w) == 0);
	}
	c.kill = true;
	tp_run(&t);
	CU_ASSERT(c.killed);
	CU_ASSERT_EQUAL(c.wrong, 0);
	CU_ASSERT_EQUAL(poll_all(t.ca, wc, 8), 8);
	CU_ASSERT_PTR_NULL(t.a->port->tx_hint);
	tp_fini(&t);
}

/*
 * Where a packet goes once received, as the look-ahead asks the packet
 * (port_prefetch, the nodes' rx_prefetch): at a switch input the output
 * the LFT gives its LID (sw_rx_guess), at a CA the QP it names
 * (hca_rx_guess). h0 - sw0 - sw1 - h1, traffic from h0 to h1: a data
 * packet as it left h0 goes from sw0's input from h0 to sw0's port into
 * sw1, from sw1's input from sw0 to sw1's port into h1, and to h1's QP;
 * an ACK as it left h1 the other way, to h0's QP.
 */
struct rx_tap {
	int ca0, ca1;		/* the CA ports' indexes (fab_port order) */
	struct pkt data, ack;
	bool has_data, has_ack;
};

static void rx_tap_fn(void *ctx, int port, const struct pkt *p, sim_time_t t)
{
	struct rx_tap *x = ctx;

	(void)t;
	if (port == x->ca0 && !x->has_data && p->payload) {
		x->data = *p;
		x->has_data = true;
	} else if (port == x->ca1 && !x->has_ack && !p->payload) {
		x->ack = *p;
		x->has_ack = true;
	}
}

static void test_rx_guess(void)
{
	struct net n = { 0 };
	struct fab_params p;
	struct fab_msgs m = { 0 };
	struct sim_diag d;
	struct rx_tap x = { -1, -1 };
	int h0, h1;

	tf_chain(&n, 2, &h0, &h1);
	tf_params(&p, "hdr");
	for (int k = 0; k < 4; k++)
		tf_add_msg(&m, h0, h1, 20000, 0, 0);
	struct fab *f = fab_create(&n, &p, &m, 1, &d);

	CU_ASSERT_FATAL(f != NULL);
	struct port *ca0 = fab_hca(f, h0)->port, *ca1 = fab_hca(f, h1)->port;

	for (int i = 0; i < f->nports; i++) {
		if (f->ports[i] == ca0)
			x.ca0 = i;
		if (f->ports[i] == ca1)
			x.ca1 = i;
	}
	CU_ASSERT_FATAL(x.ca0 >= 0 && x.ca1 >= 0);
	fab_set_tap(f, x.ca0, rx_tap_fn, &x);
	fab_set_tap(f, x.ca1, rx_tap_fn, &x);
	CU_ASSERT_FATAL(fab_run(f, &d) == 0);
	CU_ASSERT_FATAL(x.has_data && x.has_ack);
	const struct port *into_h0 = ca0->peer, *into_h1 = ca1->peer;
	const struct port *up[2] = { NULL, NULL };	/* sw0 into sw1, sw1 into sw0 */

	for (int i = 0; i < f->nports; i++) {
		const struct port *pt = f->ports[i];

		if (pt->is_sw && pt->peer_is_sw)
			up[pt->node != into_h0->node] = pt;
	}
	CU_ASSERT_FATAL(up[0] && up[1]);
	CU_ASSERT_PTR_EQUAL(sw_rx_guess(into_h0, &x.data), up[0]);	/* sw0's input from h0 */
	CU_ASSERT_PTR_EQUAL(sw_rx_guess(up[1], &x.data), into_h1);	/* sw1's input from sw0 */
	CU_ASSERT_PTR_EQUAL(sw_rx_guess(into_h1, &x.ack), up[1]);	/* sw1's input from h1 */
	CU_ASSERT_PTR_EQUAL(sw_rx_guess(up[0], &x.ack), into_h0);	/* sw0's input from sw1 */
	const struct hca_qp *q1 = hca_rx_guess(ca1, &x.data), *q0 = hca_rx_guess(ca0, &x.ack);

	CU_ASSERT_FATAL(q1 && q0);
	CU_ASSERT_EQUAL(hca_qp_num(q1), x.data.dqpn);
	CU_ASSERT_EQUAL(hca_qp_num(q0), x.ack.dqpn);
	CU_ASSERT_PTR_EQUAL(q1->hca, fab_hca(f, h1));
	CU_ASSERT_PTR_EQUAL(q0->hca, fab_hca(f, h0));
	/* a switch output's last packet: the credits it freed went to the
	 * sender upstream of its input, which the look-ahead asks for */
	int sent = 0;

	for (int i = 0; i < f->nports; i++) {
		const struct port *pt = f->ports[i];

		if (pt->is_sw && pt->tx_src) {
			CU_ASSERT_PTR_EQUAL(pt->tx_fc, pt->tx_src->peer);
			sent++;
		}
	}
	CU_ASSERT(sent == 4);	/* each way out of each switch */
	CU_ASSERT_PTR_EQUAL(into_h1->tx_fc, up[0]);	/* sw1's output to h1: sw0 sent to it */
	fab_destroy(f);
	fab_msgs_free(&m);
	net_free(&n);
}

/* ---- closed forms ------------------------------------------------------ */

/* Independent of the model: IBA header sizes and the 4xHDR rate. */
static double wire_time(double bytes)
{
	return bytes * 8 / 200e9;
}

static double pkt_bytes(uint32_t payload, uint32_t extra)
{
	/* LRH 8 + BTH 12 + extension headers + payload padded + ICRC 4 + VCRC 2 */
	return 8 + 12 + extra + (double)((payload + 3) / 4 * 4) + 4 + 2;
}

/* All the packets of a message at `mtu`: extra on the first, last and middle ones. */
static double msg_bytes(uint64_t len, uint32_t mtu, uint32_t x_first, uint32_t x_mid,
			uint32_t x_last, uint32_t x_only)
{
	uint64_t n = len ? (len + mtu - 1) / mtu : 1;
	double b = 0;

	for (uint64_t i = 0; i < n; i++) {
		uint32_t pl = (uint32_t)(i + 1 < n ? mtu : len - i * mtu);
		uint32_t x = n == 1 ? x_only : i == 0 ? x_first : i + 1 == n ? x_last : x_mid;

		b += pkt_bytes(pl, x);
	}
	return b;
}

static void test_latency_closed_form(void)
{
	uint32_t sizes[] = { 2, 4096, 65536, 1 << 20, 8 << 20 };

	for (unsigned si = 0; si < SIM_ARRAY_SIZE(sizes); si++) {
		for (int op = 0; op < 3; op++) {
			struct tp t;
			struct hca_wc wc[4];
			uint32_t len = sizes[si];
			static const enum hca_wr_opcode ops[] = {
				HCA_WR_RDMA_WRITE, HCA_WR_SEND, HCA_WR_RDMA_READ };

			tp_init(&t, NULL, len);
			tp_connect(&t, HCA_QPT_RC, 14, 7, 7, 12, 16);
			if (op == 1) {
				struct hca_recv_wr r = { .wr_id = 7, .sg = { (uintptr_t)t.bufb, len,
									    t.mb->lkey } };

				CU_ASSERT(hca_post_recv(t.qb, &r) == 0);
			}
			struct hca_send_wr w = wr_of(&t, ops[op], 1, 0, len);

			CU_ASSERT(hca_post_send(t.qa, &w) == 0);
			tp_run(&t);
			CU_ASSERT_FATAL(poll_all(t.ca, wc, 4) == 1);
			CU_ASSERT_EQUAL(wc[0].status, HCA_WC_SUCCESS);

			/* one hop each way: 2 cables + 1 switch, plus the HCA latency once */
			double hop = 2 * t.p.cable_m * t.p.ps_per_m * 1e-12 + t.p.sw_latency_ns * 1e-9;
			double hca = t.p.hca_latency_ns * 1e-9;
			double ack = hop + wire_time(pkt_bytes(0, 4));	/* AETH */
			double expect;

			if (op == 0)		/* RETH on the first packet, then the ACK */
				expect = hca + hop + wire_time(msg_bytes(len, t.p.mtu, 16, 0, 0, 16)) + ack;
			else if (op == 1)	/* no extension header, then the ACK */
				expect = hca + hop + wire_time(msg_bytes(len, t.p.mtu, 0, 0, 0, 0)) + ack;
			else			/* request with RETH; responses with AETH but the
						 * middles, through the responder's HCA too */
				expect = hca + hop + wire_time(pkt_bytes(0, 16)) + hca + hop +
					 wire_time(msg_bytes(len, t.p.mtu, 4, 0, 4, 4));
			double got = (double)wc[0].time * 1e-12;

			if (fabs(got - expect) / expect > 0.01)
				fprintf(stderr, "op %d %u B: %.6g s, closed form %.6g s\n", op, len,
					got, expect);
			CU_ASSERT(fabs(got - expect) / expect <= 0.01);
			if (op == 1) {	/* the responder's RECV completes one ACK earlier */
				CU_ASSERT_FATAL(poll_all(t.cb, wc, 4) == 1);
				CU_ASSERT_EQUAL(wc[0].opcode, HCA_WC_RECV);
				CU_ASSERT_EQUAL(wc[0].byte_len, len);
				CU_ASSERT(fabs((double)wc[0].time * 1e-12 - (expect - ack)) /
					  expect <= 0.01);
			}
			tp_fini(&t);
		}
	}
}

/*
 * Loopback (IBA vol. 1 17.3.1): two QPs of one HCA, connected to each
 * other through the port's own LID. The packets never reach the link (no
 * hop, no port counter, nothing at the switch) and cost only their turns
 * in the transmitter: the closed form is the one above without the hops.
 * Every fabric's HCA does it (on RoCE and TCP: the bytes and completions).
 */
static void test_loopback(void)
{
	static const char *const roce[] = { "fabric=roce", NULL };
	static const char *const tcp[] = { "fabric=tcp", NULL };
	const char *const *sets[] = { NULL, roce, tcp };
	uint32_t sizes[] = { 2, 4096, 65536, 1 << 20 };

	for (int fk = 0; fk < 3; fk++) {
		for (unsigned si = 0; si < SIM_ARRAY_SIZE(sizes); si++) {
			for (int op = 0; op < 3; op++) {
				static const enum hca_wr_opcode ops[] = {
					HCA_WR_RDMA_WRITE, HCA_WR_SEND, HCA_WR_RDMA_READ };
				uint32_t len = sizes[si];
				struct fab_totals tot;
				struct hca_wc wc[4];
				struct tp t;

				if (fk == 2 && op == 2)
					continue;	/* TCP's READ: a request, then the data */
				tp_init(&t, sets[fk], 2 * (size_t)len);
				/* both QPs on h0: b is a's own HCA, bufb its second half */
				t.b = t.a;
				t.cb = t.ca;
				t.qa = make_qp(t.a, t.ca, HCA_QPT_RC);
				t.qb = make_qp(t.a, t.ca, HCA_QPT_RC);
				to_rts(t.qa, t.a, hca_qp_num(t.qb), &t, 14, 7, 7, 12, 16);
				to_rts(t.qb, t.a, hca_qp_num(t.qa), &t, 14, 7, 7, 12, 16);
				for (uint32_t i = 0; i < len; i++)
					t.bufa[i] = (uint8_t)(i * 7 + op), t.bufa[len + i] = (uint8_t)~i;
				struct hca_send_wr w = {
					.wr_id = 1, .opcode = ops[op], .send_flags = HCA_SEND_SIGNALED,
					.sg = { (uintptr_t)t.bufa, len, t.ma->lkey },
					.remote_addr = (uintptr_t)t.bufa + len, .rkey = t.ma->rkey,
				};
				if (op == 1) {
					struct hca_recv_wr r = { .wr_id = 7,
						.sg = { (uintptr_t)t.bufa + len, len, t.ma->lkey } };

					CU_ASSERT(hca_post_recv(t.qb, &r) == 0);
				}
				CU_ASSERT(hca_post_send(t.qa, &w) == 0);
				tp_run(&t);
				int n = poll_all(t.ca, wc, 4);

				CU_ASSERT_EQUAL_FATAL(n, op == 1 ? 2 : 1);
				const struct hca_wc *sw = &wc[n - 1];

				for (int k = 0; k < n; k++)
					if (wc[k].wr_id == 1)
						sw = &wc[k];
				CU_ASSERT_EQUAL(sw->status, HCA_WC_SUCCESS);
				/* READ brings the second half into the first */
				CU_ASSERT(memcmp(t.bufa, t.bufa + len, len) == 0);
				fab_totals(t.f, &tot);
				CU_ASSERT_EQUAL(tot.packet_hops, 0);
				for (int i = 0; i < fab_nports(t.f); i++) {
					const struct fab_port_info *pi = fab_port(t.f, i);

					for (int v = 0; v <= FAB_MAX_VLS; v++) {
						CU_ASSERT_EQUAL(pi->vl[v].xmit_pkts, 0);
						CU_ASSERT_EQUAL(pi->vl[v].rcv_pkts, 0);
					}
				}
				if (fk == 0) {
					double hca = t.p.hca_latency_ns * 1e-9;
					double ack = wire_time(pkt_bytes(0, 4));
					double expect = op == 0 ?
						hca + wire_time(msg_bytes(len, t.p.mtu, 16, 0, 0, 16)) + ack :
						op == 1 ? hca + wire_time(msg_bytes(len, t.p.mtu, 0, 0, 0, 0)) + ack :
						hca + wire_time(pkt_bytes(0, 16)) + hca +
						wire_time(msg_bytes(len, t.p.mtu, 4, 0, 4, 4));
					double got = (double)sw->time * 1e-12;

					if (fabs(got - expect) / expect > 0.01)
						fprintf(stderr, "loopback op %d %u B: %.6g s, closed form %.6g s\n",
							op, len, got, expect);
					CU_ASSERT(fabs(got - expect) / expect <= 0.01);
				}
				t.b = NULL;	/* one HCA: tp_fini frees the fabric once */
				tp_fini(&t);
			}
		}
	}
}

/* ---- loss, retransmission, in-order exactly-once delivery -------------------- */

static void test_rc_loss_exactly_once(void)
{
	static const char *const sets[] = { "link.drop_prob=0.02", NULL };
	enum { N = 64, LEN = 16384 };
	struct tp t;
	struct hca_wc wc[2 * N];

	tp_init(&t, sets, 2 * N * LEN);
	tp_connect(&t, HCA_QPT_RC, 4, 7, 7, 1, 16);	/* 65 us ACK timeout */
	/* message k carries k in every byte; receive k lands at offset k*LEN of B */
	for (int k = 0; k < N; k++) {
		struct hca_recv_wr r = { .wr_id = 1000 + k,
					 .sg = { (uintptr_t)t.bufb + (size_t)k * LEN, LEN, t.mb->lkey } };

		memset(t.bufa + (size_t)k * LEN, k + 1, LEN);
		CU_ASSERT(hca_post_recv(t.qb, &r) == 0);
	}
	for (int k = 0; k < N; k++) {
		struct hca_send_wr w = wr_of(&t, HCA_WR_SEND, (uint64_t)k, (uint32_t)k * LEN, LEN);

		CU_ASSERT(hca_post_send(t.qa, &w) == 0);
	}
	tp_run(&t);
	/* requester: N successes, in posting order */
	CU_ASSERT_EQUAL_FATAL(poll_all(t.ca, wc, 2 * N), N);
	for (int k = 0; k < N; k++) {
		CU_ASSERT_EQUAL(wc[k].status, HCA_WC_SUCCESS);
		CU_ASSERT_EQUAL(wc[k].wr_id, (uint64_t)k);
		if (k)
			CU_ASSERT(wc[k].time >= wc[k - 1].time);
	}
	/* responder: exactly N receives, in order, each with exactly its message */
	CU_ASSERT_EQUAL_FATAL(poll_all(t.cb, wc, 2 * N), N);
	for (int k = 0; k < N; k++) {
		CU_ASSERT_EQUAL(wc[k].wr_id, 1000u + (uint64_t)k);
		CU_ASSERT_EQUAL(wc[k].byte_len, LEN);
		for (size_t i = 0; i < LEN; i++)
			if (t.bufb[(size_t)k * LEN + i] != (uint8_t)(k + 1)) {
				CU_FAIL("payload byte differs");
				break;
			}
	}
	const struct hca_qp_stats *sa = hca_qp_stats(t.qa), *sb = hca_qp_stats(t.qb);
	struct fab_totals tot;

	fab_totals(t.f, &tot);
	fprintf(stderr, "2%% loss: %llu corrupted, %llu retransmitted, %llu seq NAKs, %llu timeouts, %llu duplicates\n",
		(unsigned long long)tot.drops_corrupt, (unsigned long long)sa->pkts_retransmitted,
		(unsigned long long)sa->seq_naks_rcvd, (unsigned long long)sa->timeouts,
		(unsigned long long)sb->dup_pkts_rcvd);
	CU_ASSERT(tot.drops_corrupt > 0);
	CU_ASSERT(sa->pkts_retransmitted > 0);
	CU_ASSERT(sa->seq_naks_rcvd + sa->timeouts > 0);
	/* PSNs never skip: the requester sent exactly N x 4 PSNs (16 KiB at MTU 4096) */
	CU_ASSERT_EQUAL(sa->pkts_sent - sa->pkts_retransmitted, (uint64_t)N * 4);
	tp_fini(&t);
}

/*
 * Long RC messages under loss: four 4 MiB WRITEs (1,024 packets each) at
 * link.drop_prob=0.001 (about two losses a message over two hops) with
 * retry_cnt 7. A sequence NAK acknowledges what came before its PSN, and
 * that progress fills the retry budget again, so every WRITE arrives
 * intact. Go-back-N resends, at each rewind, everything posted after the
 * rewind point (all four WRITEs are in flight at once). Before, a NAK
 * spent a retry even when it acknowledged new packets, and a WRITE failed
 * with the retry counter exceeded.
 */
static void test_long_message_loss(void)
{
	static const char *const sets[] = { "link.drop_prob=0.001", NULL };
	enum { N = 4, LEN = 4 << 20, PKTS = LEN / 4096 };
	struct tp t;
	struct hca_wc wc[N];

	tp_init(&t, sets, (size_t)N * LEN);
	tp_connect(&t, HCA_QPT_RC, 14, 7, 7, 1, 16);
	for (size_t i = 0; i < (size_t)N * LEN; i++)
		t.bufa[i] = (uint8_t)(i * 7 + i / 4093);
	for (int k = 0; k < N; k++) {
		struct hca_send_wr w = wr_of(&t, HCA_WR_RDMA_WRITE, (uint64_t)k,
					     (uint32_t)k * LEN, LEN);

		CU_ASSERT(hca_post_send(t.qa, &w) == 0);
	}
	tp_run(&t);
	CU_ASSERT_EQUAL_FATAL(poll_all(t.ca, wc, N), N);
	for (int k = 0; k < N; k++)
		CU_ASSERT_EQUAL(wc[k].status, HCA_WC_SUCCESS);
	CU_ASSERT(memcmp(t.bufa, t.bufb, (size_t)N * LEN) == 0);
	const struct hca_qp_stats *a = hca_qp_stats(t.qa), *b = hca_qp_stats(t.qb);

	uint64_t rewinds = a->seq_naks_rcvd + a->timeouts;

	/* go-back-N: every retransmission comes from a rewind, which resends
	 * at least its first packet and at most what was posted */
	CU_ASSERT(rewinds > 0);
	CU_ASSERT(a->pkts_retransmitted >= rewinds);
	CU_ASSERT(a->pkts_retransmitted <= rewinds * (uint64_t)N * PKTS);
	CU_ASSERT(b->acks_sent >= N);
	tp_fini(&t);
}

/*
 * hca.ackreq_pkts=N: the requester sets AckReq on every Nth packet of a
 * message as well as its last, and the responder acknowledges each: a
 * 2 MiB WRITE (512 packets at MTU 4096) draws 512/N ACKs: 2 with the
 * default (256, the ack_req_freq of Mellanox's drivers), 1 with 0 (the
 * last packet only). The ACKs run the other way: the completion comes at
 * the same time.
 */
static void test_ackreq_along(void)
{
	static const char *const dflt[] = { NULL }, *const n0[] = { "hca.ackreq_pkts=0", NULL },
				  *const n64[] = { "hca.ackreq_pkts=64", NULL },
				  *const n32[] = { "hca.ackreq_pkts=32", NULL };
	const char *const *sets[] = { dflt, n0, n64, n32 };
	const uint64_t want[] = { 2, 1, 8, 16 };
	sim_time_t done[4];

	for (int k = 0; k < 4; k++) {
		struct tp t;
		struct hca_wc wc[2];

		tp_init(&t, sets[k], 2 << 20);
		tp_connect(&t, HCA_QPT_RC, 14, 7, 7, 12, 16);
		struct hca_send_wr w = wr_of(&t, HCA_WR_RDMA_WRITE, 1, 0, 2 << 20);

		CU_ASSERT(hca_post_send(t.qa, &w) == 0);
		tp_run(&t);
		CU_ASSERT_EQUAL_FATAL(poll_all(t.ca, wc, 2), 1);
		CU_ASSERT_EQUAL(wc[0].status, HCA_WC_SUCCESS);
		CU_ASSERT_EQUAL(hca_qp_stats(t.qb)->acks_sent, want[k]);
		done[k] = wc[0].time;
		tp_fini(&t);
	}
	for (int k = 1; k < 4; k++)
		CU_ASSERT_EQUAL(done[k], done[0]);
}

/*
 * The send queue's storage starts small and doubles as it fills; posting
 * past a wrapped head (entries at free-running indexes 10.. that wrap the
 * first 16-entry storage) must keep every WQE, in order, through
 * retransmissions; the verbs limit (max_send_wr) still refuses one more.
 */
static void test_sq_growth(void)
{
	static const char *const sets[] = { "link.drop_prob=0.01", NULL };
	enum { FIRST = 10, N = 500, LEN = 8192 };
	struct tp t;
	struct hca_wc wc[512];

	tp_init(&t, sets, (size_t)(FIRST + N) * LEN);
	tp_connect(&t, HCA_QPT_RC, 4, 7, 7, 1, 16);	/* max_send_wr 512 */
	for (int k = 0; k < FIRST + N; k++)
		memset(t.bufa + (size_t)k * LEN, (k % 251) + 1, LEN);
	for (int k = 0; k < FIRST; k++) {
		struct hca_send_wr w = wr_of(&t, HCA_WR_RDMA_WRITE, (uint64_t)k,
					     (uint32_t)k * LEN, LEN);

		CU_ASSERT(hca_post_send(t.qa, &w) == 0);
	}
	tp_run(&t);
	CU_ASSERT_EQUAL_FATAL(poll_all(t.ca, wc, FIRST), FIRST);
	for (int k = FIRST; k < FIRST + N; k++) {
		struct hca_send_wr w = wr_of(&t, HCA_WR_RDMA_WRITE, (uint64_t)k,
					     (uint32_t)k * LEN, LEN);

		CU_ASSERT(hca_post_send(t.qa, &w) == 0);
	}
	for (int k = 0; k < 512 - N; k++) {
		struct hca_send_wr w = wr_of(&t, HCA_WR_RDMA_WRITE, 9999, 0, 8);

		CU_ASSERT(hca_post_send(t.qa, &w) == 0);
	}
	struct hca_send_wr over = wr_of(&t, HCA_WR_RDMA_WRITE, 9999, 0, 8);

	CU_ASSERT_EQUAL(hca_post_send(t.qa, &over), -ENOMEM);	/* 513th: the verbs limit */
	tp_run(&t);
	CU_ASSERT_EQUAL_FATAL(poll_all(t.ca, wc, 512), 512);
	for (int k = 0; k < N; k++) {
		CU_ASSERT_EQUAL(wc[k].status, HCA_WC_SUCCESS);
		CU_ASSERT_EQUAL(wc[k].wr_id, (uint64_t)(FIRST + k));
	}
	CU_ASSERT(memcmp(t.bufa, t.bufb, (size_t)(FIRST + N) * LEN) == 0);
	CU_ASSERT(hca_qp_stats(t.qa)->pkts_retransmitted > 0);
	tp_fini(&t);
}

/*
 * The receive queue's storage starts at 16 entries and doubles as receives
 * are posted (as the send queue's does): 512 receives posted behind a head
 * that has moved on by 10 (so the first storage has wrapped) must each
 * take its own message, in order, and the 513th post is refused
 * (max_recv_wr 512).
 */
static void test_rq_growth(void)
{
	enum { FIRST = 10, N = 512, LEN = 1024 };
	struct tp t;
	struct hca_wc wc[N];

	tp_init(&t, NULL, (size_t)(FIRST + N) * LEN);
	tp_connect(&t, HCA_QPT_RC, 14, 7, 7, 1, 4);	/* max_recv_wr 512 */
	for (int k = 0; k < FIRST + N; k++)
		memset(t.bufa + (size_t)k * LEN, (k % 251) + 1, LEN);
	for (int round = 0; round < 2; round++) {
		int lo = round ? FIRST : 0, hi = round ? FIRST + N : FIRST;

		for (int k = lo; k < hi; k++) {
			struct hca_recv_wr r = { .wr_id = 1000 + (uint64_t)k,
						 .sg = { (uintptr_t)t.bufb + (size_t)k * LEN, LEN,
							 t.mb->lkey } };

			CU_ASSERT(hca_post_recv(t.qb, &r) == 0);
		}
		if (round) {
			struct hca_recv_wr over = { .wr_id = 9999,
						    .sg = { (uintptr_t)t.bufb, LEN, t.mb->lkey } };

			CU_ASSERT_EQUAL(hca_post_recv(t.qb, &over), -ENOMEM);
		}
		for (int k = lo; k < hi; k++) {
			struct hca_send_wr w = wr_of(&t, HCA_WR_SEND, (uint64_t)k,
						     (uint32_t)k * LEN, LEN);

			CU_ASSERT(hca_post_send(t.qa, &w) == 0);
		}
		tp_run(&t);
		CU_ASSERT_EQUAL_FATAL(poll_all(t.ca, wc, N), hi - lo);
		CU_ASSERT_EQUAL_FATAL(poll_all(t.cb, wc, N), hi - lo);
		for (int k = lo; k < hi; k++) {
			CU_ASSERT_EQUAL(wc[k - lo].status, HCA_WC_SUCCESS);
			CU_ASSERT_EQUAL(wc[k - lo].wr_id, 1000u + (uint64_t)k);
		}
	}
	CU_ASSERT(memcmp(t.bufa, t.bufb, (size_t)(FIRST + N) * LEN) == 0);
	tp_fini(&t);
}

/*
 * Memory regions are kept in chunks of HCA_MR_CHUNK, the first read from
 * the HCA's own line: keys in the first chunk and past it each reach their
 * own MR; a deregistered MR, in either, refuses the WRITE (remote access
 * error, nothing written), and a key past the last MR is no key.
 */
static void test_mr_chunks(void)
{
	enum { NMR = 2 * HCA_MR_CHUNK + 5, LEN = 1024 };
	struct tp t;
	struct hca_wc wc[NMR + 2];
	struct hca_mr *mr[NMR];

	tp_init(&t, NULL, (size_t)NMR * LEN);
	tp_connect(&t, HCA_QPT_RC, 14, 7, 7, 1, 4);
	/* mb is B's key 0; MR k covers bytes [k LEN, (k + 1) LEN) of bufb */
	for (int k = 0; k < NMR; k++) {
		uint8_t *b = t.bufb + (size_t)k * LEN;

		mr[k] = hca_reg_mr(t.b, b, (uintptr_t)b, LEN, ALL_ACCESS, HCA_MEM_HOST);
		CU_ASSERT_FATAL(mr[k] != NULL);
		CU_ASSERT(hca_mr_find(t.b, mr[k]->rkey) == mr[k]);
	}
	CU_ASSERT(hca_mr_find(t.b, mr[NMR - 1]->rkey + 256) == NULL);
	CU_ASSERT(hca_dereg_mr(mr[3]) == 0);
	CU_ASSERT(hca_dereg_mr(mr[HCA_MR_CHUNK + 4]) == 0);
	CU_ASSERT(hca_mr_find(t.b, mr[3]->rkey) == NULL);
	CU_ASSERT(hca_mr_find(t.b, mr[HCA_MR_CHUNK + 4]->rkey) == NULL);
	CU_ASSERT(hca_mr_find(t.b, mr[HCA_MR_CHUNK + 5]->rkey) == mr[HCA_MR_CHUNK + 5]);
	memset(t.bufa, 0x6b, (size_t)NMR * LEN);
	/* a WRITE into every live MR through its own key, then one into a dead one */
	int nw = 0;

	for (int k = 0; k < NMR; k++) {
		if (k == 3 || k == HCA_MR_CHUNK + 4)
			continue;
		struct hca_send_wr w = wr_of(&t, HCA_WR_RDMA_WRITE, (uint64_t)k,
					     (uint32_t)k * LEN, LEN);

		w.rkey = mr[k]->rkey;
		CU_ASSERT(hca_post_send(t.qa, &w) == 0);
		nw++;
	}
	struct hca_send_wr dead = wr_of(&t, HCA_WR_RDMA_WRITE, 777,
					(uint32_t)(HCA_MR_CHUNK + 4) * LEN, LEN);

	dead.rkey = mr[HCA_MR_CHUNK + 4]->rkey;
	CU_ASSERT(hca_post_send(t.qa, &dead) == 0);
	tp_run(&t);
	CU_ASSERT_EQUAL_FATAL(poll_all(t.ca, wc, NMR + 2), nw + 1);
	for (int i = 0; i < nw; i++)
		CU_ASSERT_EQUAL(wc[i].status, HCA_WC_SUCCESS);
	CU_ASSERT_EQUAL(wc[nw].wr_id, 777u);
	CU_ASSERT_EQUAL(wc[nw].status, HCA_WC_REM_ACCESS_ERR);
	for (int k = 0; k < NMR; k++) {
		bool dead_mr = k == 3 || k == HCA_MR_CHUNK + 4;
		const uint8_t *b = t.bufb + (size_t)k * LEN;

		CU_ASSERT(b[0] == (dead_mr ? 0 : 0x6b) && b[LEN - 1] == (dead_mr ? 0 : 0x6b));
	}
	tp_fini(&t);
}

/*
 * A WRITE with immediate consumes a receive whose completion reports the
 * bytes written (ibv_wc.byte_len, IBA 11.4.2.1: the length of the data
 * transferred) and the immediate, on InfiniBand and over TCP alike.
 */
static void test_write_imm_len(void)
{
	static const char *const tcp[] = { "fabric=tcp", NULL };
	const char *const *sets[] = { NULL, tcp };
	enum { LEN = 10000 };	/* three packets at MTU 4096 */

	for (int k = 0; k < 2; k++) {
		struct tp t;
		struct hca_wc wc[4];
		struct hca_recv_wr r = { .wr_id = 9 };

		tp_init(&t, sets[k], LEN);
		tp_connect(&t, HCA_QPT_RC, 14, 7, 7, 12, 16);
		CU_ASSERT(hca_post_recv(t.qb, &r) == 0);
		struct hca_send_wr w = wr_of(&t, HCA_WR_RDMA_WRITE_WITH_IMM, 1, 0, LEN);

		w.imm_data = 0x1234;
		memset(t.bufa, 0x5a, LEN);
		CU_ASSERT(hca_post_send(t.qa, &w) == 0);
		tp_run(&t);
		CU_ASSERT_EQUAL(poll_all(t.ca, wc, 4), 1);
		CU_ASSERT_EQUAL_FATAL(poll_all(t.cb, wc, 4), 1);
		CU_ASSERT_EQUAL(wc[0].status, HCA_WC_SUCCESS);
		CU_ASSERT_EQUAL(wc[0].opcode, HCA_WC_RECV_RDMA_WITH_IMM);
		CU_ASSERT_EQUAL(wc[0].byte_len, LEN);
		CU_ASSERT_EQUAL(wc[0].imm_data, 0x1234);
		CU_ASSERT_EQUAL(wc[0].wr_id, 9);
		CU_ASSERT_EQUAL(t.bufb[LEN - 1], 0x5a);
		tp_fini(&t);
	}
}

/*
 * Every ACK that makes progress re-arms the ACK timer (67 ms at
 * hca.timeout=14); the old one is cancelled lazily. A QP must not leave
 * one dead heap entry per message in its HCA's timer heap (2,000 per HCA
 * on a 1,024-rank ring): 500 messages in flight at once, each ACKed while
 * the others go, must fit the heap's first allocation (256 entries).
 */
static void test_ack_timer_heap(void)
{
	enum { N = 500, LEN = 4096 };
	struct tp t;
	struct hca_wc wc[N];

	tp_init(&t, NULL, LEN);
	tp_connect(&t, HCA_QPT_RC, 14, 7, 7, 1, 16);
	for (int k = 0; k < N; k++) {
		struct hca_send_wr w = wr_of(&t, HCA_WR_RDMA_WRITE, (uint64_t)k, 0, LEN);

		w.send_flags = k == N - 1 ? HCA_SEND_SIGNALED : 0;
		CU_ASSERT_FATAL(hca_post_send(t.qa, &w) == 0);
	}
	tp_run(&t);
	CU_ASSERT_EQUAL(poll_all(t.ca, wc, N), 1);
	CU_ASSERT_EQUAL(wc[0].status, HCA_WC_SUCCESS);
	CU_ASSERT(hca_qp_stats(t.qb)->acks_sent >= N / 2);	/* many re-armings */
	CU_ASSERT(t.a->timers.cap <= 256);
	tp_fini(&t);
}

static void test_retry_exceeded(void)
{
	struct tp t;
	struct hca_wc wc[8];

	tp_init(&t, NULL, 65536);
	tp_connect(&t, HCA_QPT_RC, 1, 2, 7, 1, 4);
	/* Point the requester at a QP that does not exist: nothing answers. */
	t.qa = make_qp(t.a, t.ca, HCA_QPT_RC);
	to_rts(t.qa, t.b, 0x777, &t, 1, 2, 7, 1, 4);
	for (int k = 0; k < 3; k++) {
		struct hca_send_wr w = wr_of(&t, HCA_WR_RDMA_WRITE, (uint64_t)k, 0, 1024);

		CU_ASSERT(hca_post_send(t.qa, &w) == 0);
	}
	tp_run(&t);
	CU_ASSERT_EQUAL_FATAL(poll_all(t.ca, wc, 8), 3);
	CU_ASSERT_EQUAL(wc[0].status, HCA_WC_RETRY_EXC_ERR);
	CU_ASSERT_EQUAL(wc[1].status, HCA_WC_WR_FLUSH_ERR);
	CU_ASSERT_EQUAL(wc[2].status, HCA_WC_WR_FLUSH_ERR);
	CU_ASSERT_EQUAL(hca_qp_state(t.qa), HCA_QPS_ERR);
	/* 1 + retry_cnt (2) tries, each an ACK timeout of 4.096 us x 2^1 */
	CU_ASSERT_EQUAL(hca_qp_stats(t.qa)->timeouts, 3);
	CU_ASSERT(wc[0].time >= 3 * 8192 * SIM_NS);
	/* later work requests complete flushed */
	struct hca_send_wr w = wr_of(&t, HCA_WR_RDMA_WRITE, 9, 0, 8);

	CU_ASSERT(hca_post_send(t.qa, &w) == 0);
	CU_ASSERT_EQUAL_FATAL(poll_all(t.ca, wc, 8), 1);
	CU_ASSERT_EQUAL(wc[0].status, HCA_WC_WR_FLUSH_ERR);
	CU_ASSERT_EQUAL(wc[0].wr_id, 9);
	tp_fini(&t);
}

static void test_rnr(void)
{
	struct tp t;
	struct hca_wc wc[4];
	struct hca_recv_wr r;

	/* A SEND before any receive: RNR NAKs every 10 us until one is posted. */
	tp_init(&t, NULL, 65536);
	tp_connect(&t, HCA_QPT_RC, 14, 7, 7, 1, 4);
	struct hca_send_wr w = wr_of(&t, HCA_WR_SEND, 1, 0, 512);

	CU_ASSERT(hca_post_send(t.qa, &w) == 0);
	sim_run_until(fab_engine(t.f), 35 * SIM_US);
	CU_ASSERT_EQUAL(poll_all(t.ca, wc, 4), 0);
	r = (struct hca_recv_wr){ .wr_id = 5, .sg = { (uintptr_t)t.bufb, 512, t.mb->lkey } };
	CU_ASSERT(hca_post_recv(t.qb, &r) == 0);
	tp_run(&t);
	CU_ASSERT_EQUAL_FATAL(poll_all(t.ca, wc, 4), 1);
	CU_ASSERT_EQUAL(wc[0].status, HCA_WC_SUCCESS);
	CU_ASSERT(wc[0].time > 35 * SIM_US);
	CU_ASSERT(hca_qp_stats(t.qa)->rnr_naks_rcvd >= 3);
	CU_ASSERT_EQUAL(hca_qp_stats(t.qb)->rnr_naks_sent, hca_qp_stats(t.qa)->rnr_naks_rcvd);
	tp_fini(&t);

	/* rnr_retry = 2 and no receive ever: three RNR NAKs, then the error. */
	tp_init(&t, NULL, 65536);
	tp_connect(&t, HCA_QPT_RC, 14, 7, 2, 1, 4);
	w = wr_of(&t, HCA_WR_SEND, 1, 0, 512);
	CU_ASSERT(hca_post_send(t.qa, &w) == 0);
	tp_run(&t);
	CU_ASSERT_EQUAL_FATAL(poll_all(t.ca, wc, 4), 1);
	CU_ASSERT_EQUAL(wc[0].status, HCA_WC_RNR_RETRY_EXC_ERR);
	CU_ASSERT_EQUAL(hca_qp_stats(t.qa)->rnr_naks_rcvd, 3);
	CU_ASSERT_EQUAL(hca_qp_state(t.qa), HCA_QPS_ERR);
	tp_fini(&t);
}

static void test_read_outstanding_limit(void)
{
	struct tp t;
	struct hca_wc wc[64];
	enum { N = 32, LEN = 65536 };

	tp_init(&t, NULL, (size_t)N * LEN);
	tp_connect(&t, HCA_QPT_RC, 14, 7, 7, 1, 4);
	for (int k = 0; k < N; k++) {
		memset(t.bufb + (size_t)k * LEN, 0x40 + k, LEN);
		struct hca_send_wr w = wr_of(&t, HCA_WR_RDMA_READ, (uint64_t)k, (uint32_t)k * LEN, LEN);

		CU_ASSERT(hca_post_send(t.qa, &w) == 0);
	}
	tp_run(&t);
	CU_ASSERT_EQUAL_FATAL(poll_all(t.ca, wc, 64), N);
	for (int k = 0; k < N; k++) {
		CU_ASSERT_EQUAL(wc[k].status, HCA_WC_SUCCESS);
		CU_ASSERT_EQUAL(wc[k].opcode, HCA_WC_RDMA_READ);
	}
	CU_ASSERT(memcmp(t.bufa, t.bufb, (size_t)N * LEN) == 0);
	fprintf(stderr, "READs in flight: at most %u (requester), %u (responder), limit 4\n",
		hca_qp_stats(t.qa)->max_rd_outstanding, hca_qp_stats(t.qb)->max_rd_responding);
	CU_ASSERT_EQUAL(hca_qp_stats(t.qa)->max_rd_outstanding, 4);
	CU_ASSERT(hca_qp_stats(t.qb)->max_rd_responding <= 4);
	tp_fini(&t);

	/* A requester asking more than the responder accepts gets its NAK. */
	tp_init(&t, NULL, (size_t)N * LEN);
	t.qa = make_qp(t.a, t.ca, HCA_QPT_RC);
	t.qb = make_qp(t.b, t.cb, HCA_QPT_RC);
	to_rts(t.qa, t.b, hca_qp_num(t.qb), &t, 14, 7, 7, 1, 8);
	to_rts(t.qb, t.a, hca_qp_num(t.qa), &t, 14, 7, 7, 1, 2);
	for (int k = 0; k < 8; k++) {
		struct hca_send_wr w = wr_of(&t, HCA_WR_RDMA_READ, (uint64_t)k, (uint32_t)k * LEN, LEN);

		CU_ASSERT(hca_post_send(t.qa, &w) == 0);
	}
	tp_run(&t);
	int n = poll_all(t.ca, wc, 64), errs = 0;

	for (int k = 0; k < n; k++)
		errs += wc[k].status == HCA_WC_REM_INV_REQ_ERR;
	CU_ASSERT_EQUAL(n, 8);
	CU_ASSERT_EQUAL(errs, 1);
	CU_ASSERT(hca_qp_stats(t.qb)->max_rd_responding <= 2);
	tp_fini(&t);
}

static void test_atomics(void)
{
	struct tp t;
	struct hca_wc wc[32];
	uint64_t v = 100, got[10];

	tp_init(&t, NULL, 4096);
	tp_connect(&t, HCA_QPT_RC, 14, 7, 7, 1, 4);
	memcpy(t.bufb + 64, &v, 8);
	for (int k = 0; k < 10; k++) {
		struct hca_send_wr w = wr_of(&t, HCA_WR_ATOMIC_FETCH_AND_ADD, (uint64_t)k,
					     (uint32_t)(k * 8), 8);

		w.remote_addr = (uintptr_t)t.bufb + 64;
		w.compare_add = 3;
		CU_ASSERT(hca_post_send(t.qa, &w) == 0);
	}
	tp_run(&t);
	CU_ASSERT_EQUAL_FATAL(poll_all(t.ca, wc, 32), 10);
	memcpy(got, t.bufa, sizeof(got));
	for (int k = 0; k < 10; k++) {
		CU_ASSERT_EQUAL(wc[k].status, HCA_WC_SUCCESS);
		CU_ASSERT_EQUAL(wc[k].opcode, HCA_WC_FETCH_ADD);
		CU_ASSERT_EQUAL(got[k], 100 + 3 * (uint64_t)k);
	}
	memcpy(&v, t.bufb + 64, 8);
	CU_ASSERT_EQUAL(v, 130);
	tp_fini(&t);

	/* compare-and-swap: succeeds when equal, returns the old value either way */
	tp_init(&t, NULL, 4096);
	tp_connect(&t, HCA_QPT_RC, 14, 7, 7, 1, 4);
	v = 5;
	memcpy(t.bufb + 128, &v, 8);
	uint64_t cmp[3] = { 5, 5, 9 }, swp[3] = { 9, 11, 13 };

	for (int k = 0; k < 3; k++) {
		struct hca_send_wr w = wr_of(&t, HCA_WR_ATOMIC_CMP_AND_SWP, (uint64_t)k,
					     (uint32_t)(k * 8), 8);

		w.remote_addr = (uintptr_t)t.bufb + 128;
		w.compare_add = cmp[k];
		w.swap = swp[k];
		CU_ASSERT(hca_post_send(t.qa, &w) == 0);
	}
	tp_run(&t);
	CU_ASSERT_EQUAL_FATAL(poll_all(t.ca, wc, 32), 3);
	memcpy(got, t.bufa, 24);
	CU_ASSERT_EQUAL(got[0], 5);	/* 5 == 5: swapped to 9 */
	CU_ASSERT_EQUAL(got[1], 9);	/* 9 != 5: unchanged */
	CU_ASSERT_EQUAL(got[2], 9);	/* 9 == 9: swapped to 13 */
	memcpy(&v, t.bufb + 128, 8);
	CU_ASSERT_EQUAL(v, 13);
	tp_fini(&t);
}

/* The asynchronous events an HCA raised, in order (hca_async_fn). */
struct async_log {
	int n;
	enum hca_async_event ev[8];
	void *obj[8];
	sim_time_t t[8];
};

static void async_record(struct hca *h, enum hca_async_event ev, void *obj, void *ctx)
{
	struct async_log *l = ctx;

	if (l->n < 8) {
		l->ev[l->n] = ev;
		l->obj[l->n] = obj;
		l->t[l->n++] = hca_now(h);
	}
}

/*
 * The responder QP's remote access enables (ibv_modify_qp(3)'s
 * qp_access_flags) are checked besides the region's: with all three the
 * WRITE, READ and atomic go through; a QP that enables only READ answers a
 * WRITE with a remote access NAK (the requester's completion
 * HCA_WC_REM_ACCESS_ERR, nothing lands), one that enables only WRITE a
 * READ and an atomic likewise. The refusing responder is then in Error
 * (class C: its posted receive flushed) and raised its Local Access
 * Violation event, once; a misaligned atomic ends it with the Invalid
 * Request event. UC drops a WRITE its QP does not enable and goes on.
 */
static void test_qp_access(void)
{
	static const struct { uint32_t access; enum hca_wr_opcode op; bool ok; } c[] = {
		{ HCA_ACCESS_REMOTE_WRITE | HCA_ACCESS_REMOTE_READ | HCA_ACCESS_REMOTE_ATOMIC,
		  HCA_WR_RDMA_WRITE, true },
		{ HCA_ACCESS_REMOTE_WRITE | HCA_ACCESS_REMOTE_READ | HCA_ACCESS_REMOTE_ATOMIC,
		  HCA_WR_RDMA_READ, true },
		{ HCA_ACCESS_REMOTE_ATOMIC, HCA_WR_ATOMIC_FETCH_AND_ADD, true },
		{ HCA_ACCESS_REMOTE_READ, HCA_WR_RDMA_WRITE, false },
		{ 0, HCA_WR_RDMA_WRITE_WITH_IMM, false },
		{ HCA_ACCESS_REMOTE_WRITE, HCA_WR_RDMA_READ, false },
		{ HCA_ACCESS_REMOTE_WRITE | HCA_ACCESS_REMOTE_READ, HCA_WR_ATOMIC_CMP_AND_SWP, false },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct hca_qp_attr at = { .access = c[i].access };
		struct hca_recv_wr r = { .wr_id = 1 };
		struct hca_wc wc[4];
		struct async_log log = { 0 };
		struct tp t;

		tp_init(&t, NULL, 4096);
		tp_connect(&t, HCA_QPT_RC, 14, 7, 7, 1, 4);
		hca_set_async_hook(t.b, async_record, &log);
		CU_ASSERT_FATAL(hca_modify_qp(t.qb, &at, HCA_QP_ACCESS_FLAGS) == 0);
		CU_ASSERT(hca_post_recv(t.qb, &r) == 0);
		memset(t.bufa, 0x3c, 64);
		struct hca_send_wr w = wr_of(&t, c[i].op, 9, 0, c[i].op >= HCA_WR_ATOMIC_CMP_AND_SWP ?
					     8 : 64);

		CU_ASSERT(hca_post_send(t.qa, &w) == 0);
		tp_run(&t);
		CU_ASSERT_EQUAL_FATAL(poll_all(t.ca, wc, 4), 1);
		CU_ASSERT_EQUAL(wc[0].status, c[i].ok ? HCA_WC_SUCCESS : HCA_WC_REM_ACCESS_ERR);
		if (c[i].op == HCA_WR_RDMA_WRITE || c[i].op == HCA_WR_RDMA_WRITE_WITH_IMM)
			CU_ASSERT_EQUAL(t.bufb[0], c[i].ok ? 0x3c : 0);
		CU_ASSERT_EQUAL(hca_qp_state(t.qa), c[i].ok ? HCA_QPS_RTS : HCA_QPS_ERR);
		CU_ASSERT_EQUAL(hca_qp_state(t.qb), c[i].ok ? HCA_QPS_RTS : HCA_QPS_ERR);
		CU_ASSERT_EQUAL(log.n, c[i].ok ? 0 : 1);
		if (!c[i].ok) {
			CU_ASSERT_EQUAL(log.ev[0], HCA_EV_QP_ACCESS_ERR);
			CU_ASSERT_PTR_EQUAL(log.obj[0], t.qb);
			/* the receive it held: flushed (a WRITE_WITH_IMM's, refused) */
			CU_ASSERT_EQUAL_FATAL(poll_all(t.cb, wc, 4), 1);
			CU_ASSERT_EQUAL(wc[0].status, HCA_WC_WR_FLUSH_ERR);
		}
		tp_fini(&t);
	}
	/* an invalid request (a misaligned atomic) ends the responder too,
	 * with the Invalid Request event */
	struct hca_qp_attr at = { .access = HCA_ACCESS_REMOTE_READ };
	struct async_log log = { 0 };
	struct hca_wc wc[4];
	struct tp t;

	tp_init(&t, NULL, 4096);
	tp_connect(&t, HCA_QPT_RC, 14, 7, 7, 1, 4);
	hca_set_async_hook(t.b, async_record, &log);
	struct hca_send_wr a = wr_of(&t, HCA_WR_ATOMIC_FETCH_AND_ADD, 5, 0, 8);

	a.remote_addr += 4;
	CU_ASSERT(hca_post_send(t.qa, &a) == 0);
	tp_run(&t);
	CU_ASSERT_EQUAL_FATAL(poll_all(t.ca, wc, 4), 1);
	CU_ASSERT_EQUAL(wc[0].status, HCA_WC_REM_INV_REQ_ERR);
	CU_ASSERT_EQUAL(hca_qp_state(t.qb), HCA_QPS_ERR);
	CU_ASSERT_EQUAL(log.n, 1);
	CU_ASSERT_EQUAL(log.ev[0], HCA_EV_QP_REQ_ERR);
	tp_fini(&t);

	/* UC: the WRITE is dropped at a QP that does not enable it */

	tp_init(&t, NULL, 4096);
	tp_connect(&t, HCA_QPT_UC, 14, 7, 7, 1, 4);
	CU_ASSERT_FATAL(hca_modify_qp(t.qb, &at, HCA_QP_ACCESS_FLAGS) == 0);
	memset(t.bufa, 0x3c, 64);
	struct hca_send_wr w = wr_of(&t, HCA_WR_RDMA_WRITE, 9, 0, 64);

	CU_ASSERT(hca_post_send(t.qa, &w) == 0);
	tp_run(&t);
	CU_ASSERT_EQUAL(poll_all(t.ca, wc, 4), 1);
	CU_ASSERT_EQUAL(t.bufb[0], 0);
	at.access = HCA_ACCESS_REMOTE_WRITE;
	CU_ASSERT_FATAL(hca_modify_qp(t.qb, &at, HCA_QP_ACCESS_FLAGS) == 0);
	CU_ASSERT(hca_post_send(t.qa, &w) == 0);
	tp_run(&t);
	CU_ASSERT_EQUAL(poll_all(t.ca, wc, 4), 1);
	CU_ASSERT_EQUAL(t.bufb[0], 0x3c);
	tp_fini(&t);

	/* RC over TCP: a socket has no R_Key and no NAK; the bytes of a WRITE
	 * the QP does not enable are not placed, as a bad region's */
	static const char *const tcp[] = { "fabric=tcp", NULL };

	tp_init(&t, tcp, 4096);
	tp_connect(&t, HCA_QPT_RC, 14, 7, 7, 1, 4);
	at.access = HCA_ACCESS_REMOTE_READ;
	CU_ASSERT_FATAL(hca_modify_qp(t.qb, &at, HCA_QP_ACCESS_FLAGS) == 0);
	memset(t.bufa, 0x3c, 64);
	w = wr_of(&t, HCA_WR_RDMA_WRITE, 9, 0, 64);
	CU_ASSERT(hca_post_send(t.qa, &w) == 0);
	tp_run(&t);
	CU_ASSERT_EQUAL(poll_all(t.ca, wc, 4), 1);
	CU_ASSERT_EQUAL(t.bufb[0], 0);
	tp_fini(&t);
}

/*
 * The SRQ limit (ibv_modify_srq(3)): 8 receives posted, the limit at 4;
 * of 6 SENDs the fifth leaves 3 < 4 and raises SRQ_LIMIT_REACHED once
 * (disarmed: the sixth raises nothing), at the time its receive is taken.
 * A limit above the SRQ's size is refused. The QP on the SRQ going to
 * Error raises QP_LAST_WQE_REACHED, once.
 */
static void test_srq_limit(void)
{
	struct async_log log = { 0 };
	struct hca_wc wc[16];
	struct tp t;

	tp_init(&t, NULL, 4096);
	hca_set_async_hook(t.b, async_record, &log);
	struct hca_srq *srq = hca_create_srq(t.b, 16);

	CU_ASSERT_FATAL(srq != NULL);
	struct hca_qp_init_attr ia = {
		.qp_type = HCA_QPT_RC, .send_cq = t.cb, .recv_cq = t.cb, .srq = srq,
		.cap = { .max_send_wr = 16 },
	};

	t.qa = make_qp(t.a, t.ca, HCA_QPT_RC);
	t.qb = hca_create_qp(t.b, &ia);
	CU_ASSERT_FATAL(t.qb != NULL);
	to_rts(t.qa, t.b, hca_qp_num(t.qb), &t, 14, 7, 7, 12, 16);
	to_rts(t.qb, t.a, hca_qp_num(t.qa), &t, 14, 7, 7, 12, 16);
	for (int i = 0; i < 8; i++) {
		struct hca_recv_wr r = { .wr_id = (uint64_t)i,
					 .sg = { (uintptr_t)t.bufb, 64, t.mb->lkey } };

		CU_ASSERT(hca_post_srq_recv(srq, &r) == 0);
	}
	CU_ASSERT_EQUAL(hca_srq_set_limit(srq, 17), -EINVAL);
	CU_ASSERT_EQUAL(hca_srq_set_limit(srq, 4), 0);
	CU_ASSERT_EQUAL(hca_srq_limit(srq), 4);
	for (int i = 0; i < 6; i++) {
		struct hca_send_wr w = wr_of(&t, HCA_WR_SEND, (uint64_t)i, 0, 64);

		CU_ASSERT(hca_post_send(t.qa, &w) == 0);
	}
	tp_run(&t);
	CU_ASSERT_EQUAL(poll_all(t.ca, wc, 16), 6);
	int n = poll_all(t.cb, wc, 16);

	CU_ASSERT_EQUAL_FATAL(n, 6);
	CU_ASSERT_EQUAL_FATAL(log.n, 1);
	CU_ASSERT_EQUAL(log.ev[0], HCA_EV_SRQ_LIMIT_REACHED);
	CU_ASSERT_PTR_EQUAL(log.obj[0], srq);
	/* the fifth receive (wr_id 4) was taken when its SEND arrived, after
	 * the fourth's completion and no later than its own */
	CU_ASSERT(log.t[0] > wc[3].time && log.t[0] <= wc[4].time);
	CU_ASSERT_EQUAL(hca_srq_limit(srq), 0);
	hca_qp_to_error(t.qb);
	hca_qp_to_error(t.qb);
	CU_ASSERT_EQUAL_FATAL(log.n, 2);
	CU_ASSERT_EQUAL(log.ev[1], HCA_EV_QP_LAST_WQE_REACHED);
	CU_ASSERT_PTR_EQUAL(log.obj[1], t.qb);
	tp_fini(&t);
}

static void test_ud(void)
{
	struct tp t;
	struct hca_wc wc[8];
	struct hca_qp_attr at;

	tp_init(&t, NULL, 8192);
	t.qa = make_qp(t.a, t.ca, HCA_QPT_UD);
	t.qb = make_qp(t.b, t.cb, HCA_QPT_UD);
	struct hca_qp *q[2] = { t.qa, t.qb };

	for (int i = 0; i < 2; i++) {
		at = (struct hca_qp_attr){ .qp_state = HCA_QPS_INIT, .qkey = 0x11 };
		CU_ASSERT_FATAL(hca_modify_qp(q[i], &at, HCA_QP_STATE | HCA_QP_QKEY) == 0);
		at.qp_state = HCA_QPS_RTR;
		CU_ASSERT_FATAL(hca_modify_qp(q[i], &at, HCA_QP_STATE) == 0);
		at.qp_state = HCA_QPS_RTS;
		CU_ASSERT_FATAL(hca_modify_qp(q[i], &at, HCA_QP_STATE | HCA_QP_SQ_PSN) == 0);
	}
	struct hca_send_wr w = wr_of(&t, HCA_WR_SEND, 1, 0, 4097);

	w.ah.dlid = hca_lid(t.b);
	w.remote_qpn = hca_qp_num(t.qb);
	w.remote_qkey = 0x11;
	CU_ASSERT_EQUAL(hca_post_send(t.qa, &w), -EINVAL);	/* above the MTU */
	w.opcode = HCA_WR_RDMA_WRITE;
	w.sg.length = 64;
	CU_ASSERT_EQUAL(hca_post_send(t.qa, &w), -EINVAL);	/* no RDMA on UD */
	w.opcode = HCA_WR_SEND;
	for (int k = 0; k < 4; k++) {
		struct hca_recv_wr r = { .wr_id = 50 + k, .sg = { (uintptr_t)t.bufb + 1024 * k,
								  1024, t.mb->lkey } };

		CU_ASSERT(hca_post_recv(t.qb, &r) == 0);
	}
	memset(t.bufa, 0xab, 64);
	for (int k = 0; k < 3; k++) {
		w.wr_id = (uint64_t)k;
		CU_ASSERT(hca_post_send(t.qa, &w) == 0);
	}
	tp_run(&t);
	CU_ASSERT_EQUAL(poll_all(t.ca, wc, 8), 3);
	CU_ASSERT_EQUAL_FATAL(poll_all(t.cb, wc, 8), 3);
	CU_ASSERT_EQUAL(wc[0].src_qp, hca_qp_num(t.qa));
	CU_ASSERT_EQUAL(wc[0].slid, hca_lid(t.a));
	CU_ASSERT_EQUAL(wc[0].byte_len, 64);
	CU_ASSERT_EQUAL(t.bufb[1024 * 2 + 63], 0xab);
	/* No ACK traffic: B's port never transmitted. */
	CU_ASSERT_EQUAL(hca_qp_stats(t.qb)->acks_sent, 0);
	for (int i = 0; i < fab_nports(t.f); i++) {
		const struct fab_port_info *pi = fab_port(t.f, i);

		if (pi->node == t.nb)
			for (int v = 0; v <= FAB_MAX_VLS; v++)
				CU_ASSERT_EQUAL(pi->vl[v].xmit_pkts, 0);
	}
	tp_fini(&t);
}

static void test_uc_loses_whole_messages(void)
{
	static const char *const sets[] = { "link.drop_prob=0.05", NULL };
	enum { N = 100, LEN = 8192 };
	struct tp t;
	struct hca_wc wc[2 * N];

	tp_init(&t, sets, 2 * N * LEN);
	tp_connect(&t, HCA_QPT_UC, 14, 7, 7, 1, 1);
	for (int k = 0; k < N; k++) {
		struct hca_recv_wr r = { .wr_id = (uint64_t)k,
					 .sg = { (uintptr_t)t.bufb + (size_t)k * LEN, LEN, t.mb->lkey } };

		memset(t.bufa + (size_t)k * LEN, k + 1, LEN);
		CU_ASSERT(hca_post_recv(t.qb, &r) == 0);
	}
	for (int k = 0; k < N; k++) {
		struct hca_send_wr w = wr_of(&t, HCA_WR_SEND, (uint64_t)k, (uint32_t)k * LEN, LEN);

		CU_ASSERT(hca_post_send(t.qa, &w) == 0);
	}
	tp_run(&t);
	CU_ASSERT_EQUAL(poll_all(t.ca, wc, 2 * N), N);	/* UC completes when sent */
	int got = poll_all(t.cb, wc, 2 * N);

	fprintf(stderr, "UC at 5%% packet loss: %d of %d messages delivered\n", got, N);
	CU_ASSERT(got > N / 2 && got < N);
	/* whatever arrived arrived whole: receive k holds some one message */
	for (int i = 0; i < got; i++) {
		const uint8_t *b = t.bufb + wc[i].wr_id * LEN;

		CU_ASSERT_EQUAL(wc[i].byte_len, LEN);
		for (size_t j = 1; j < LEN; j++)
			if (b[j] != b[0]) {
				CU_FAIL("a UC message arrived in parts");
				break;
			}
	}
	CU_ASSERT_EQUAL(hca_qp_stats(t.qb)->acks_sent, 0);
	tp_fini(&t);
}

static void test_bad_verbs(void)
{
	struct tp t;
	struct hca_wc wc[8];
	struct hca_qp_attr at = { .qp_state = HCA_QPS_RTS };

	tp_init(&t, NULL, 4096);
	struct hca_qp *q = make_qp(t.a, t.ca, HCA_QPT_RC);
	struct hca_send_wr w = wr_of(&t, HCA_WR_RDMA_WRITE, 1, 0, 64);

	/* posting to a QP in RESET: an immediate error */
	CU_ASSERT_EQUAL(hca_post_send(q, &w), -EINVAL);
	/* RESET -> RTS is not a legal transition */
	CU_ASSERT_EQUAL(hca_modify_qp(q, &at, HCA_QP_STATE), -EINVAL);
	CU_ASSERT_EQUAL(hca_qp_state(q), HCA_QPS_RESET);
	/* no such QP type, no CQ, NULL arguments: refused, not crashed */
	struct hca_qp_init_attr bad = { .qp_type = 7, .send_cq = t.ca, .recv_cq = t.ca,
					.cap = { 4, 4, 0 } };

	CU_ASSERT_PTR_NULL(hca_create_qp(t.a, &bad));
	CU_ASSERT_PTR_NULL(hca_create_qp(t.a, NULL));
	CU_ASSERT_EQUAL(hca_post_send(NULL, &w), -EINVAL);
	CU_ASSERT_EQUAL(hca_poll_cq(NULL, 1, wc), -EINVAL);
	CU_ASSERT_PTR_NULL(hca_reg_mr(t.a, NULL, 0, 64, HCA_ACCESS_REMOTE_WRITE, HCA_MEM_HOST));

	tp_connect(&t, HCA_QPT_RC, 4, 1, 7, 1, 4);
	/* a WR larger than its MR: a local protection error completion */
	w = wr_of(&t, HCA_WR_RDMA_WRITE, 2, 0, 8192);
	CU_ASSERT(hca_post_send(t.qa, &w) == 0);
	CU_ASSERT_EQUAL_FATAL(poll_all(t.ca, wc, 8), 1);
	CU_ASSERT_EQUAL(wc[0].status, HCA_WC_LOC_PROT_ERR);
	/* READ on a UC QP: refused at post */
	struct hca_qp *uc = make_qp(t.a, t.ca, HCA_QPT_UC);

	to_rts(uc, t.b, 0x999, &t, 0, 0, 0, 0, 1);
	w = wr_of(&t, HCA_WR_RDMA_READ, 3, 0, 64);
	CU_ASSERT_EQUAL(hca_post_send(uc, &w), -EINVAL);
	/* a zero-length WRITE names no memory: no key, no address, and it
	 * completes (IBA C9-88; UCX's rc_verbs flushes an endpoint so) */
	w = wr_of(&t, HCA_WR_RDMA_WRITE, 9, 0, 0);
	w.sg.lkey = 0;
	w.sg.addr = 0;
	w.rkey = 0;
	w.remote_addr = 0;
	CU_ASSERT(hca_post_send(t.qa, &w) == 0);
	tp_run(&t);
	CU_ASSERT_EQUAL_FATAL(poll_all(t.ca, wc, 8), 1);
	CU_ASSERT_EQUAL(wc[0].wr_id, 9);
	CU_ASSERT_EQUAL(wc[0].status, HCA_WC_SUCCESS);
	CU_ASSERT_EQUAL(hca_qp_state(t.qa), HCA_QPS_RTS);
	/* a wrong rkey: remote access error, the QP in Error, the next WR flushed */
	w = wr_of(&t, HCA_WR_RDMA_WRITE, 4, 0, 64);
	w.rkey ^= 0x100;
	CU_ASSERT(hca_post_send(t.qa, &w) == 0);
	w = wr_of(&t, HCA_WR_RDMA_WRITE, 5, 0, 64);
	CU_ASSERT(hca_post_send(t.qa, &w) == 0);
	tp_run(&t);
	CU_ASSERT_EQUAL_FATAL(poll_all(t.ca, wc, 8), 2);
	CU_ASSERT_EQUAL(wc[0].status, HCA_WC_REM_ACCESS_ERR);
	CU_ASSERT_EQUAL(wc[1].status, HCA_WC_WR_FLUSH_ERR);
	CU_ASSERT_EQUAL(hca_qp_state(t.qa), HCA_QPS_ERR);
	/* a full CQ overflows: the lost completion is reported once */
	struct hca_cq *small = hca_create_cq(t.a, 1, NULL, NULL);
	struct hca_qp_init_attr ia = { .qp_type = HCA_QPT_RC, .send_cq = small, .recv_cq = small,
				       .cap = { 8, 8, 0 } };
	struct hca_qp *q2 = hca_create_qp(t.a, &ia);

	CU_ASSERT_FATAL(q2 != NULL);
	at.qp_state = HCA_QPS_ERR;
	CU_ASSERT(hca_modify_qp(q2, &at, HCA_QP_STATE) == 0);
	w = wr_of(&t, HCA_WR_RDMA_WRITE, 6, 0, 64);
	CU_ASSERT(hca_post_send(q2, &w) == 0);
	CU_ASSERT(hca_post_send(q2, &w) == 0);
	CU_ASSERT_EQUAL(hca_poll_cq(small, 8, wc), 1);
	CU_ASSERT_EQUAL(hca_poll_cq(small, 8, wc), -EOVERFLOW);
	hca_destroy_cq(small);
	/* a deep CQ's ring grows as completions wait in it (from 16 entries),
	 * wrapped or not: they come out in order, and the depth still bounds
	 * it - the 101st is an overrun */
	struct hca_cq *deep = hca_create_cq(t.a, 100, NULL, NULL);
	struct hca_wc big[128];
	uint64_t next = 0, id = 0;

	CU_ASSERT_FATAL(deep != NULL);
	for (int k = 0; k < 10; k++) {		/* head moved: the growth unwraps */
		hca_cq_push(deep, &(struct hca_wc){ .wr_id = id++ });
		CU_ASSERT_EQUAL(hca_poll_cq(deep, 1, big), 1);
		CU_ASSERT_EQUAL(big[0].wr_id, next++);
	}
	for (int k = 0; k < 101; k++)
		hca_cq_push(deep, &(struct hca_wc){ .wr_id = id++ });
	CU_ASSERT_EQUAL_FATAL(hca_poll_cq(deep, 128, big), 100);
	for (int k = 0; k < 100; k++)
		CU_ASSERT_EQUAL(big[k].wr_id, next++);
	CU_ASSERT_EQUAL(hca_poll_cq(deep, 8, big), -EOVERFLOW);
	hca_destroy_cq(deep);
	tp_fini(&t);
}

/* ---- the synthetic traffic over QPs ------------------------------------------ */

static void test_traffic_ops(void)
{
	struct net n;
	struct fab_params p;
	int h0, h1;

	tf_chain(&n, 1, &h0, &h1);
	for (int op = FAB_OP_WRITE; op <= FAB_OP_SEND; op++) {
		struct fab_msgs m = { 0 };

		tf_params(&p, "hdr");
		p.check = true;
		for (int k = 0; k < 8; k++) {
			struct fab_msg msg = { .src = (uint32_t)h0, .dst = (uint32_t)h1,
					       .bytes = 100000, .after = -1, .op = (uint8_t)op };

			CU_ASSERT(fab_msgs_add(&m, &msg) == 0);
		}
		struct fab *f = tf_run(&n, &p, &m);

		for (size_t i = 0; i < m.n; i++) {
			CU_ASSERT(m.v[i].done && m.v[i].cqe && m.v[i].finished);
			CU_ASSERT_EQUAL(m.v[i].status, 0);
			/* delivery never after the requester's completion */
			CU_ASSERT(m.v[i].end <= m.v[i].completed);
		}
		fab_destroy(f);
		fab_msgs_free(&m);
	}
	net_free(&n);
}

/*
 * A SEND's receive is posted at the destination with the send, not all
 * before the run. Two things follow, each checked: (1) a stream whose
 * messages are posted out of their index order still gives each message a
 * receive of its own length (with every receive posted up front in index
 * order, the 60,000-byte message posted first took the 100-byte receive
 * and failed with a length error); (2) the receive ring of a UD stream
 * holds the datagrams in flight, not all 300 of them (its storage doubles
 * from 16 as receives wait: 512 entries with the up-front posting).
 */
static void test_traffic_recv_with_send(void)
{
	struct net n;
	struct fab_params p;
	int h0, h1;

	tf_chain(&n, 1, &h0, &h1);
	tf_params(&p, "hdr");
	p.check = true;
	struct fab_msgs m = { 0 };
	struct fab_msg late = { .src = (uint32_t)h0, .dst = (uint32_t)h1, .bytes = 100,
				.post = 20 * SIM_US, .after = -1, .op = FAB_OP_SEND };
	struct fab_msg first = late;

	first.bytes = 60000;
	first.post = 0;
	CU_ASSERT(fab_msgs_add(&m, &late) == 0);
	CU_ASSERT(fab_msgs_add(&m, &first) == 0);
	struct fab *f = tf_run(&n, &p, &m);

	for (size_t i = 0; i < m.n; i++) {
		CU_ASSERT(m.v[i].done && m.v[i].finished);
		CU_ASSERT_EQUAL(m.v[i].status, HCA_WC_SUCCESS);
	}
	CU_ASSERT(m.v[1].end < m.v[0].start);	/* the later index went first */
	fab_destroy(f);
	fab_msgs_free(&m);

	enum { N = 300 };
	struct fab_msgs u = { 0 };

	for (int k = 0; k < N; k++) {
		struct fab_msg d = { .src = (uint32_t)h0, .dst = (uint32_t)h1, .bytes = 1000,
				     .post = (sim_time_t)k * 2 * SIM_US, .after = -1,
				     .op = FAB_OP_SEND, .ud = true };

		CU_ASSERT(fab_msgs_add(&u, &d) == 0);
	}
	f = tf_run(&n, &p, &u);
	size_t delivered = 0;

	for (size_t i = 0; i < u.n; i++)
		delivered += u.v[i].done;
	CU_ASSERT_EQUAL(delivered, N);
	struct hca *dst = fab_hca(f, h1);
	uint32_t rings = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dst);
	for (uint32_t i = 0; i < dst->nqps; i++)
		if (dst->qps[i] && dst->qps[i]->type == HCA_QPT_UD) {
			rings++;
			CU_ASSERT(dst->qps[i]->rq_mask + 1 <= 16);
			CU_ASSERT_EQUAL(dst->qps[i]->rq_n, 0);
		}
	CU_ASSERT_EQUAL(rings, 1);
	fab_destroy(f);
	fab_msgs_free(&u);
	net_free(&n);
}

/*
 * A message list carries its results (start, first_tx, end, completed,
 * flags); fab_create clears them in its one pass over the list
 * (scan_msgs), so the same list run again gives the same results, not a
 * run that finds every message already delivered and stops at once.
 */
static void test_traffic_rerun_same_list(void)
{
	struct net n;
	struct fab_params p;
	int h0, h1;

	tf_chain(&n, 1, &h0, &h1);
	tf_params(&p, "hdr");
	p.check = true;
	struct fab_msgs m = { 0 };

	for (int k = 0; k < 4; k++) {
		struct fab_msg x = { .src = (uint32_t)h0, .dst = (uint32_t)h1,
				     .bytes = 3000 + 1000 * (uint64_t)k,
				     .post = (sim_time_t)k * SIM_US, .after = k ? k - 1 : -1, .after_cqe = k > 0,
				     .op = k == 2 ? FAB_OP_SEND : FAB_OP_WRITE };

		CU_ASSERT_FATAL(fab_msgs_add(&m, &x) == 0);
	}
	struct fab *f = tf_run(&n, &p, &m);
	struct fab_msg first[4];
	sim_time_t t1 = fab_engine(f)->now;

	memcpy(first, m.v, sizeof(first));
	fab_destroy(f);
	for (int k = 0; k < 4; k++)
		CU_ASSERT(first[k].done && first[k].finished && first[k].end > first[k].start);
	f = tf_run(&n, &p, &m);
	CU_ASSERT_EQUAL(fab_engine(f)->now, t1);
	CU_ASSERT(t1 > 0);
	CU_ASSERT_EQUAL(memcmp(first, m.v, sizeof(first)), 0);
	fab_destroy(f);
	fab_msgs_free(&m);
	net_free(&n);
}

/* ---- the host behind the HCA: PCIe, DMA, GPUDirect -------------------------- */

/* Wire bytes of an RDMA WRITE (RETH on its first packet) and of its last packet. */
static double write_bytes(uint64_t len, uint32_t mtu, double *last)
{
	uint64_t n = (len + mtu - 1) / mtu;

	*last = pkt_bytes((uint32_t)(len - (n - 1) * mtu), n == 1 ? 16 : 0);
	return msg_bytes(len, mtu, 16, 0, 0, 16);
}

/*
 * One WRITE, SEND or READ with the host model on, against a closed form
 * assembled from the host model's own calls on fresh hosts (test_host
 * checks those against the PCIe formulas): post (doorbell, WQE fetch), the
 * payload read from memory in hca.dma_window chunks (at the requester for
 * WRITE/SEND, at the responder for READ, after the READ request's trip),
 * the wire (whichever of PCIe and the link is narrower sets the pace), the
 * DMA write of the last packet (at the responder; for READ at the
 * requester), and the requester's completion: after the ACK for
 * WRITE/SEND, after the data is in memory for READ, then the CQE write.
 */
static void check_host_op(const char *gen, enum hca_wr_opcode op, uint32_t len)
{
	char set_gen[64];
	const char *sets[] = { "host.model=on", set_gen, NULL };
	struct tp t;
	struct hca_wc wc[2];
	struct host ha, hb;

	snprintf(set_gen, sizeof(set_gen), "host.pcie_gen=%s", gen);
	tp_init(&t, sets, len);
	tp_connect(&t, HCA_QPT_RC, 14, 7, 7, 12, 16);
	if (op == HCA_WR_SEND) {
		struct hca_recv_wr r = { .wr_id = 7, .sg = { (uintptr_t)t.bufb, len, t.mb->lkey } };

		CU_ASSERT(hca_post_recv(t.qb, &r) == 0);
	}
	struct hca_send_wr w = wr_of(&t, op, 1, 0, len);

	CU_ASSERT(hca_post_send(t.qa, &w) == 0);
	tp_run(&t);
	CU_ASSERT_FATAL(poll_all(t.ca, wc, 2) == 1);
	CU_ASSERT_EQUAL(wc[0].status, HCA_WC_SUCCESS);

	host_init(&ha, &t.p.host);	/* the requester's host */
	host_init(&hb, &t.p.host);	/* the responder's */
	uint32_t mtu = t.p.mtu, chunk = t.p.hca_dma_window * mtu;
	double ps = 1e-12, rate = 200e9 / 8 * ps;	/* bytes per ps */
	double hop = (2 * t.p.cable_m * t.p.ps_per_m + t.p.sw_latency_ns * 1e3);
	double ready = (double)(host_post(&ha, 0, 0, HOST_POST_ALONE) + (sim_time_t)t.p.hca_latency_ns * SIM_NS);
	uint64_t c0 = len < chunk ? len : chunk, p0 = len < mtu ? len : mtu;
	double lastpl = (double)(len - (len - 1) / mtu * mtu);
	/* RETH on a WRITE's first packet; AETH on a READ response's first and last */
	uint32_t x_first = op == HCA_WR_RDMA_WRITE ? 16 : op == HCA_WR_RDMA_READ ? 4 : 0;
	uint32_t x_last = op == HCA_WR_RDMA_READ ? 4 : 0;
	uint64_t n = (len + mtu - 1) / mtu;
	double data = msg_bytes(len, mtu, x_first, 0, x_last, x_first ? x_first : x_last);
	double last = pkt_bytes((uint32_t)lastpl, n == 1 ? (x_first ? x_first : x_last) : x_last);
	struct host *rd = op == HCA_WR_RDMA_READ ? &hb : &ha;	/* who reads the data */
	struct host *wr = op == HCA_WR_RDMA_READ ? &ha : &hb;	/* who writes it */
	/* the payload read starts once the WQE is in, overlapping the HCA's
	 * pipeline; a READ's data goes through the responder's after it */
	double hca = (double)t.p.hca_latency_ns * SIM_NS, t0 = ready - hca, go = ready, after = 0;

	if (op == HCA_WR_RDMA_READ) {	/* the request (RETH, no payload) crosses first */
		t0 = ready + pkt_bytes(0, 16) / rate + hop;
		go = 0;
		after = hca;
	}
	struct host one = *rd;
	double first = (double)host_dma_read(&one, (sim_time_t)t0, HCA_MEM_HOST, (uint32_t)c0) -
		       (double)(host_pcie_ser_ps(&t.p.host, host_pcie_wire_bytes(&t.p.host, c0)) -
				host_pcie_ser_ps(&t.p.host, host_pcie_wire_bytes(&t.p.host, p0)));
	double all = (double)host_dma_read(rd, (sim_time_t)t0, HCA_MEM_HOST, len);
	double tail = fmax(fmax(first + after, go) + data / rate, all + after + last / rate) + hop;
	double seen = (double)host_dma_write(wr, (sim_time_t)tail, HCA_MEM_HOST, (uint32_t)lastpl);
	double done = op == HCA_WR_RDMA_READ ? seen :
		      tail + hop + pkt_bytes(0, 4) / rate;	/* the ACK */
	/* the CQE is written as the last packet lands, behind a READ's data */
	double cqe = op == HCA_WR_RDMA_READ ?
		     (double)host_cqe(&ha, (sim_time_t)tail, (sim_time_t)seen) :
		     (double)host_cqe(&ha, (sim_time_t)done, (sim_time_t)done);
	static const char *const names[] = { [HCA_WR_RDMA_WRITE] = "write", [HCA_WR_SEND] = "send",
					     [HCA_WR_RDMA_READ] = "read" };

	fprintf(stderr, "host %s gen%s %u B: CQE %.3f us, closed form %.3f us\n", names[op], gen,
		len, (double)wc[0].time * 1e-6, cqe * 1e-6);
	CU_ASSERT(fabs((double)wc[0].time - cqe) / cqe <= 0.01);
	tp_fini(&t);
}

static void test_host_closed_form(void)
{
	static const enum hca_wr_opcode ops[] = { HCA_WR_RDMA_WRITE, HCA_WR_SEND, HCA_WR_RDMA_READ };
	static const uint32_t sizes[] = { 2, 65536, 1 << 20, 8 << 20 };

	for (unsigned o = 0; o < SIM_ARRAY_SIZE(ops); o++) {
		for (unsigned k = 0; k < SIM_ARRAY_SIZE(sizes); k++)
			check_host_op("4", ops[o], sizes[k]);
		/* PCIe Gen3 x16 is narrower than HDR: PCIe sets the pace */
		check_host_op("3", ops[o], 1 << 20);
		check_host_op("3", ops[o], 8 << 20);
	}
}

/* A stream runs at the narrower of the link and the HCA's PCIe. */
static void test_pcie_bottleneck(void)
{
	const char *gens[] = { "4", "3", "5" };

	for (unsigned g = 0; g < SIM_ARRAY_SIZE(gens); g++) {
		struct net n;
		struct fab_params p;
		struct fab_msgs m = { 0 };
		int h0, h1;
		char kv[64];

		tf_chain(&n, 1, &h0, &h1);
		tf_params(&p, "hdr");
		tf_set(&p, "host.model=on");
		snprintf(kv, sizeof(kv), "host.pcie_gen=%s", gens[g]);
		tf_set(&p, kv);
		for (int k = 0; k < 32; k++)
			tf_add_msg(&m, h0, h1, 1 << 20, 0, 0);
		struct fab *f = tf_run(&n, &p, &m);
		double last, eff = (double)(1 << 20) / write_bytes(1 << 20, p.mtu, &last);
		double link = 200e9 / 8 * eff, pcie = host_pcie_payload_Bps(&p.host);
		double want = fmin(link, pcie);
		double got = 32.0 * (1 << 20) / ((double)(m.v[31].end - m.v[0].first_tx) * 1e-12);

		fprintf(stderr, "PCIe gen %s: stream %.2f GB/s; link %.2f, PCIe payload %.2f GB/s\n",
			gens[g], got / 1e9, link / 1e9, pcie / 1e9);
		CU_ASSERT(fabs(got - want) / want <= 0.01);
		fab_destroy(f);
		fab_msgs_free(&m);
		net_free(&n);
	}
}

/*
 * The same GPU-to-GPU WRITE with GPUDirect RDMA on and off: off, the data
 * is copied GPU -> host memory before the post and host -> GPU after it
 * lands, so the message takes the two staging copies longer (less the
 * peer-to-peer latencies GPUDirect pays), host memory is touched twice per
 * side, and the CPU launches two copies.
 */
static void test_gpudirect(void)
{
	const uint32_t S = 1 << 20;
	sim_time_t t[2];
	struct host_stats st[2][2];

	for (int off = 0; off < 2; off++) {
		struct net n;
		struct fab_params p;
		struct fab_msgs m = { 0 };
		int h0, h1;

		tf_chain(&n, 1, &h0, &h1);
		tf_params(&p, "hdr");
		tf_set(&p, "host.model=on");
		tf_set(&p, off ? "host.gpudirect=off" : "host.gpudirect=on");
		struct fab_msg msg = { .src = (uint32_t)h0, .dst = (uint32_t)h1, .bytes = S,
				       .after = -1, .mem = HCA_MEM_GPU };

		CU_ASSERT(fab_msgs_add(&m, &msg) == 0);
		struct fab *f = tf_run(&n, &p, &m);

		t[off] = m.v[0].end - m.v[0].start;
		st[off][0] = *fab_host_stats(f, h0);
		st[off][1] = *fab_host_stats(f, h1);
		fab_destroy(f);
		fab_msgs_free(&m);
		net_free(&n);
	}
	/* the predicted difference, from the host model's own calls */
	struct fab_params p;
	struct host a, b;

	tf_params(&p, "hdr");
	tf_set(&p, "host.gpudirect=off");
	host_init(&a, &p.host);
	host_init(&b, &p.host);
	double stage = (double)host_stage_gpu_to_host(&a, 0, S) + (double)host_stage_host_to_gpu(&b, 0, S);
	double p2p = 2.0 * p.host.p2p_switch_ns * 1e3;	/* read and write peer to peer */
	double extra = (double)t[1] - (double)t[0];

	fprintf(stderr, "1 MiB GPU->GPU: GPUDirect %.2f us, staged %.2f us (+%.2f us; copies %.2f us)\n",
		(double)t[0] * 1e-6, (double)t[1] * 1e-6, extra * 1e-6, stage * 1e-6);
	CU_ASSERT(fabs(extra - (stage - p2p)) / (stage - p2p) <= 0.05);
	for (int side = 0; side < 2; side++) {
		CU_ASSERT_EQUAL(st[0][side].staging_copies, 0);
		CU_ASSERT_EQUAL(st[1][side].staging_copies, 1);
		/* GPUDirect: host memory sees only WQEs and CQEs; staged: the data twice */
		CU_ASSERT(st[0][side].hostmem_bytes < 1024);
		CU_ASSERT(st[1][side].hostmem_bytes >= 2 * (uint64_t)S);
		CU_ASSERT(st[1][side].cpu_ps >= st[0][side].cpu_ps + p.host.memcpy_launch_ns * 1000ull);
		CU_ASSERT(st[0][side].gpu_pcie_bytes >= S);
	}
}

/*
 * A WQE's local MR is looked up once, at the post (the send path then
 * reads the bytes through it); the MR may be deregistered before the
 * HCA gets to them. No byte may then be read from or written to it: the
 * WRITE carries none, the READ's response lands nowhere, while a WQE on
 * a second MR over the same bytes, still registered, moves them.
 */
static void test_dereg_after_post(void)
{
	enum { LEN = 16384 };
	struct tp t;
	struct hca_wc wc[8];

	tp_init(&t, NULL, 4 * LEN);
	tp_connect(&t, HCA_QPT_RC, 14, 7, 7, 1, 4);
	struct hca_mr *keep = hca_reg_mr(t.a, t.bufa, (uintptr_t)t.bufa, 4 * LEN, ALL_ACCESS,
					 HCA_MEM_HOST);

	CU_ASSERT_FATAL(keep != NULL);
	memset(t.bufa, 0x5a, 2 * LEN);		/* WRITE sources */
	memset(t.bufb + 2 * LEN, 0xa5, 2 * LEN);	/* READ sources */
	struct hca_send_wr w0 = wr_of(&t, HCA_WR_RDMA_WRITE, 0, 0, LEN);
	struct hca_send_wr w1 = wr_of(&t, HCA_WR_RDMA_WRITE, 1, LEN, LEN);
	struct hca_send_wr r2 = wr_of(&t, HCA_WR_RDMA_READ, 2, 2 * LEN, LEN);
	struct hca_send_wr r3 = wr_of(&t, HCA_WR_RDMA_READ, 3, 3 * LEN, LEN);

	w1.sg.lkey = keep->lkey;
	r3.sg.lkey = keep->lkey;
	CU_ASSERT(hca_post_send(t.qa, &w0) == 0);
	CU_ASSERT(hca_post_send(t.qa, &w1) == 0);
	CU_ASSERT(hca_post_send(t.qa, &r2) == 0);
	CU_ASSERT(hca_post_send(t.qa, &r3) == 0);
	CU_ASSERT(hca_dereg_mr(t.ma) == 0);	/* w0 and r2's MR, before a byte moved */
	tp_run(&t);
	CU_ASSERT_EQUAL(poll_all(t.ca, wc, 8), 4);
	uint8_t zero[LEN] = { 0 }, five[LEN], a5[LEN];

	memset(five, 0x5a, LEN);
	memset(a5, 0xa5, LEN);
	CU_ASSERT(memcmp(t.bufb, zero, LEN) == 0);		/* w0: nothing read */
	CU_ASSERT(memcmp(t.bufb + LEN, five, LEN) == 0);	/* w1 */
	CU_ASSERT(memcmp(t.bufa + 2 * LEN, zero, LEN) == 0);	/* r2: nothing written */
	CU_ASSERT(memcmp(t.bufa + 3 * LEN, a5, LEN) == 0);	/* r3 */
	tp_fini(&t);
}

/*
 * A packet reaches the QP its BTH DestQP names, whether the receiver finds
 * it in its first line (QPs 2 and 3, hca_qp_by_num) or in the array
 * (QP 5), and a destroyed QP, near or far, gets nothing: the requester
 * times out. Each A QP writes its own 4 KiB to B.
 */
static void test_qp_numbers(void)
{
	enum { LEN = 4096 };
	struct tp t;
	struct hca_wc wc[16];
	struct hca_qp *qa[4], *qb[4];
	const bool gone[4] = { false, true, false, true };	/* B's QPs 3 and 5 */

	tp_init(&t, NULL, 4 * LEN);
	for (int i = 0; i < 4; i++) {
		qa[i] = make_qp(t.a, t.ca, HCA_QPT_RC);
		qb[i] = make_qp(t.b, t.cb, HCA_QPT_RC);
	}
	/* QPs 2..5 on both sides; A's 2+i talks to B's 2+i */
	for (int i = 0; i < 4; i++) {
		CU_ASSERT_EQUAL(hca_qp_num(qb[i]), 2u + (unsigned)i);
		CU_ASSERT(hca_qp_by_num(t.b, 2u + (unsigned)i) == qb[i]);
		to_rts(qa[i], t.b, hca_qp_num(qb[i]), &t, 1, 1, 7, 1, 4);
		to_rts(qb[i], t.a, hca_qp_num(qa[i]), &t, 1, 1, 7, 1, 4);
	}
	CU_ASSERT(hca_qp_by_num(t.b, 6) == NULL && hca_qp_by_num(t.b, 0) == NULL);
	for (int i = 0; i < 4; i++)
		if (gone[i])
			CU_ASSERT(hca_destroy_qp(qb[i]) == 0);
	CU_ASSERT(hca_qp_by_num(t.b, 3) == NULL && hca_qp_by_num(t.b, 5) == NULL);
	memset(t.bufa, 0x3c, 4 * LEN);
	for (int i = 0; i < 4; i++) {
		struct hca_send_wr w = wr_of(&t, HCA_WR_RDMA_WRITE, (uint64_t)i,
					     (uint32_t)i * LEN, LEN);

		CU_ASSERT(hca_post_send(qa[i], &w) == 0);
	}
	tp_run(&t);
	CU_ASSERT_EQUAL_FATAL(poll_all(t.ca, wc, 16), 4);
	uint8_t want[LEN], zero[LEN] = { 0 };

	memset(want, 0x3c, LEN);
	for (int k = 0; k < 4; k++) {
		int i = (int)wc[k].wr_id;

		CU_ASSERT_EQUAL(wc[k].status, gone[i] ? HCA_WC_RETRY_EXC_ERR : HCA_WC_SUCCESS);
		CU_ASSERT(memcmp(t.bufb + (size_t)i * LEN, gone[i] ? zero : want, LEN) == 0);
	}
	tp_fini(&t);
}

/* ---- the HCA's message rate -------------------------------------------- */

/*
 * N 8-byte WRITEs posted at once on each of q QPs from one host, the
 * posting thread's cost set to 0 so that only the HCA limits them: each
 * WR's completion time (one ACK each) in done[] by wr_id, QP k's i-th WR
 * at k * n + i.
 */
static void rate_run(const char *const *sets, int q, int n, sim_time_t *done)
{
	struct tp t;
	struct hca_qp *qa[4], *qb[4];
	struct hca_wc wc[64];
	int got = 0;

	tp_init(&t, sets, 4096);
	for (int k = 0; k < q; k++) {
		qa[k] = make_qp(t.a, t.ca, HCA_QPT_RC);
		qb[k] = make_qp(t.b, t.cb, HCA_QPT_RC);
		to_rts(qa[k], t.b, hca_qp_num(qb[k]), &t, 14, 7, 7, 12, 16);
		to_rts(qb[k], t.a, hca_qp_num(qa[k]), &t, 14, 7, 7, 12, 16);
	}
	for (int i = 0; i < n; i++)
		for (int k = 0; k < q; k++) {
			struct hca_send_wr w = wr_of(&t, HCA_WR_RDMA_WRITE, (uint64_t)(k * n + i),
						     (uint32_t)(8 * (k * n + i)), 8);

			CU_ASSERT_FATAL(hca_post_send(qa[k], &w) == 0);
		}
	tp_run(&t);
	while (got < q * n) {
		int k = poll_all(t.ca, wc, 64);

		CU_ASSERT_FATAL(k > 0);
		for (int j = 0; j < k; j++) {
			CU_ASSERT_EQUAL(wc[j].status, HCA_WC_SUCCESS);
			done[wc[j].wr_id] = wc[j].time;
		}
		got += k;
	}
	tp_fini(&t);
}

/*
 * hca.wqe_ns: a QP's send engine takes one WQE per wqe_ns, so a QP's
 * completions (one ACK each) come wqe_ns apart; hca.max_mpps: the HCA
 * starts at most that many messages a microsecond over all its QPs, so
 * two QPs together go no faster. Without either the same WRITEs leave
 * back to back on the link (62 wire bytes, 2.5 ns each).
 */
static void test_hca_message_rate(void)
{
	static const char *const free_cpu[] = { "host.model=on", "host.post_cpu_ns=0",
						"host.mmio_cpu_ns=0", "hca.max_mpps=0", NULL };
	static const char *const per_qp[] = { "host.model=on", "host.post_cpu_ns=0",
					      "host.mmio_cpu_ns=0", "hca.max_mpps=0", "hca.wqe_ns=500",
					      NULL };
	static const char *const per_hca[] = { "host.model=on", "host.post_cpu_ns=0",
					       "host.mmio_cpu_ns=0", "hca.max_mpps=2", NULL };
	enum { N = 20 };
	sim_time_t t[2 * N], lo, hi;

	rate_run(free_cpu, 1, N, t);
	CU_ASSERT(t[N - 1] - t[0] < (N - 1) * 50 * SIM_NS);
	rate_run(per_qp, 1, N, t);
	for (int i = 1; i < N; i++)
		CU_ASSERT_EQUAL(t[i] - t[i - 1], 500 * SIM_NS);
	/* two QPs: their engines run side by side */
	rate_run(per_qp, 2, N, t);
	CU_ASSERT(t[N - 1] - t[0] >= (N - 1) * 500 * SIM_NS);
	CU_ASSERT(t[2 * N - 1] - t[N] >= (N - 1) * 500 * SIM_NS);
	CU_ASSERT(t[2 * N - 1] - t[0] < N * 500 * SIM_NS);
	/* 2 million a second over the HCA: 40 messages take 19.5 us or more */
	rate_run(per_hca, 2, N, t);
	lo = hi = t[0];
	for (int i = 0; i < 2 * N; i++) {
		lo = t[i] < lo ? t[i] : lo;
		hi = t[i] > hi ? t[i] : hi;
	}
	CU_ASSERT(hi - lo >= (2 * N - 1) * 500 * SIM_NS);
	CU_ASSERT(hi - lo < 2 * N * 500 * SIM_NS);
}

/*
 * The responder's read engine: small READs outstanding overlap their
 * memory reads, so they complete far closer than one DMA read (250 ns)
 * apart; and 64 KiB READs back to back fill the link, the next READ's
 * data read while the one before is still on the wire.
 */
static void test_read_engine(void)
{
	static const char *const free_cpu[] = { "host.model=on", "host.post_cpu_ns=0",
						"host.mmio_cpu_ns=0", NULL };
	enum { N = 32, BIG = 64 << 10, NB = 16 };
	struct tp t;
	struct hca_wc wc[N];

	tp_init(&t, free_cpu, (size_t)NB * BIG);
	tp_connect(&t, HCA_QPT_RC, 14, 7, 7, 12, 16);
	for (int i = 0; i < N; i++) {
		struct hca_send_wr w = wr_of(&t, HCA_WR_RDMA_READ, (uint64_t)i, (uint32_t)(8 * i), 8);

		CU_ASSERT_FATAL(hca_post_send(t.qa, &w) == 0);
	}
	tp_run(&t);
	CU_ASSERT_FATAL(poll_all(t.ca, wc, N) == N);
	/* 16 READs' completions within 15 x 100 ns, not 15 x 250 */
	CU_ASSERT(wc[N - 1].time - wc[N - 16].time < 15 * 100 * SIM_NS);
	tp_fini(&t);

	tp_init(&t, free_cpu, (size_t)NB * BIG);
	tp_connect(&t, HCA_QPT_RC, 14, 7, 7, 12, 16);
	for (int i = 0; i < NB; i++) {
		struct hca_send_wr w = wr_of(&t, HCA_WR_RDMA_READ, (uint64_t)i, (uint32_t)i * BIG, BIG);

		CU_ASSERT_FATAL(hca_post_send(t.qa, &w) == 0);
	}
	tp_run(&t);
	CU_ASSERT_FATAL(poll_all(t.ca, wc, NB) == NB);
	/* from the first READ's completion to the last: NB - 1 READs at the
	 * link's rate: 16 packets of 4096 bytes and 26 of headers, the first
	 * and the last with a 4-byte AETH; within 1% */
	double per = (double)(16 * (4096 + 26) + 8) * 8 / 200e9 * 1e12;	/* ps */
	double span = (double)(wc[NB - 1].time - wc[0].time);

	CU_ASSERT_DOUBLE_EQUAL(span / ((NB - 1) * per), 1, 0.01);
	tp_fini(&t);
}

static const struct test_case tests[] = {
	{ "long RC messages survive 0.1% loss", test_long_message_loss },
	{ "AckReq along a message (hca.ackreq_pkts)", test_ackreq_along },
	{ "WRITE/SEND/READ latency closed form", test_latency_closed_form },
	{ "loopback: two QPs of one HCA, nothing on the link", test_loopback },
	{ "RC under loss: exactly once, in order", test_rc_loss_exactly_once },
	{ "send queue storage grows past a wrapped head", test_sq_growth },
	{ "a CA port's look-ahead hint: the next QP and WQE at every event", test_tx_hint },
	{ "the look-ahead asks a received packet where it goes: output, QP; a sent one where its credits go", test_rx_guess },
	{ "receive queue storage grows past a wrapped head", test_rq_growth },
	{ "MRs in chunks: every key finds its own, none once deregistered", test_mr_chunks },
	{ "ACK timer: one live heap entry per QP", test_ack_timer_heap },
	{ "retry_cnt exhausted", test_retry_exceeded },
	{ "RNR NAK and rnr_retry", test_rnr },
	{ "READs in flight bounded", test_read_outstanding_limit },
	{ "an MR deregistered after the post moves no bytes", test_dereg_after_post },
	{ "packets find their QP by number, near or far, none once destroyed", test_qp_numbers },
	{ "atomics return the old value", test_atomics },
	{ "the responder QP's remote access enables", test_qp_access },
	{ "WRITE with immediate: the receive reports the bytes", test_write_imm_len },
	{ "UD: MTU limit, no ACKs", test_ud },
	{ "SRQ limit and last WQE: asynchronous events", test_srq_limit },
	{ "UC loses whole messages only", test_uc_loses_whole_messages },
	{ "verbs misuse", test_bad_verbs },
	{ "traffic ops over QPs", test_traffic_ops },
	{ "traffic SENDs: each receive posted with its send", test_traffic_recv_with_send },
	{ "traffic: the same message list run twice, the same results", test_traffic_rerun_same_list },
	{ "host model: WRITE/SEND/READ closed form with PCIe and DMA", test_host_closed_form },
	{ "host model: the narrower of PCIe and the link", test_pcie_bottleneck },
	{ "GPUDirect on and off", test_gpudirect },
	{ "the HCA's message rate: per QP and over all its QPs", test_hca_message_rate },
	{ "READ responder: small READs overlap, large ones fill the link", test_read_engine },
	{ NULL, NULL },
};

TEST_MAIN("transport", tests)
