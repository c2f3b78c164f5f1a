/* SPDX-License-Identifier: MIT */
/*
 * test_ud.c - datagram traffic (the spec's qp=ud: a UD queue pair per
 * stream, each message one SEND packet) carried end to end, from the
 * --traffic spec through the fabric, against closed forms and counts:
 *  - a p2p stream on two hosts delivers every datagram with no ACK: the
 *    packets delivered and the packet-hops are the data's alone;
 *  - a lone datagram's delivery time is the closed form of IBA ch. 9's
 *    headers (LRH, BTH, DETH, payload, ICRC, VCRC) at the link rate, to
 *    the picosecond, and it is the RC WRITE's delivery time less the
 *    serialisation of 8 bytes (a WRITE-only packet carries a 16-byte RETH
 *    where the UD SEND carries an 8-byte DETH): same first bit on the wire;
 *  - the sender's completion comes when the packet is sent (IBA 10.7.2.5),
 *    not a round trip later as RC's does;
 *  - an incast of datagrams over IB's credits loses nothing; over
 *    roce-lossy some are dropped, each counted lost once and never resent;
 *  - a datagram larger than ib.mtu is refused with a message naming it.
 * Expected values come from numbers.md's rates and the header sizes, not
 * from the model's tables.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "models/fabric/fab.h"
#include "models/net/net.h"
#include "tests/unit/test_main.h"
#include "tests/unit/util_fabric.h"
#include "traces/trace_spec.h"

#define HDR_BPS 200e9		/* 4xHDR data rate (numbers.md) */

/* Bytes on the wire of a one-packet message (IBA 9.2-9.3, 7.8): LRH 8, BTH
 * 12, then DETH 8 (UD) or RETH 16 (RDMA WRITE only), the payload padded to
 * 4 bytes, ICRC 4, VCRC 2. */
static double ud_send_wire(uint64_t payload)
{
	return 8 + 12 + 8 + (double)((payload + 3) / 4 * 4) + 4 + 2;
}

static double rc_write_wire(uint64_t payload)
{
	return 8 + 12 + 16 + (double)((payload + 3) / 4 * 4) + 4 + 2;
}

static void spec(const struct net *n, const char *s, struct fab_msgs *m)
{
	struct sim_diag d;

	if (trace_spec_parse(s, n, 1, m, &d))
		fprintf(stderr, "\n  '%s': %s\n", s, d.msg);
	CU_ASSERT_FATAL(m->n > 0);
}

/* ---- p2p: delivery, no ACKs, closed form ------------------------------- */

static void check_p2p(uint64_t bytes)
{
	const int count = 20;
	struct net n;
	struct fab_params p;
	struct fab_msgs ud = { 0 }, rc = { 0 };
	struct fab_totals tu, tr;
	char s[160];
	int h0, h1;

	tf_chain(&n, 1, &h0, &h1);
	tf_params(&p, "hdr");
	p.check = true;
	/* 1 us apart: every datagram is alone on the path (the closed form) */
	snprintf(s, sizeof(s), "p2p:src=h0,dst=h1,size=%llu,count=%d,gap=1us,qp=ud",
		 (unsigned long long)bytes, count);
	spec(&n, s, &ud);
	snprintf(s, sizeof(s), "p2p:src=h0,dst=h1,size=%llu,count=%d,gap=1us",
		 (unsigned long long)bytes, count);
	spec(&n, s, &rc);
	struct fab *fu = tf_run(&n, &p, &ud);
	struct fab *fr = tf_run(&n, &p, &rc);

	fab_totals(fu, &tu);
	fab_totals(fr, &tr);
	/* every datagram, and nothing but data: one packet per message, two
	 * links per packet, no ACK packet anywhere */
	CU_ASSERT_EQUAL(tu.msgs_done, (uint64_t)count);
	CU_ASSERT_EQUAL(tu.msgs_lost, 0);
	CU_ASSERT_EQUAL(tu.msgs_finished, (uint64_t)count);
	CU_ASSERT_EQUAL(tu.acks, 0);
	CU_ASSERT_EQUAL(tu.retransmitted, 0);
	CU_ASSERT_EQUAL(tu.drops, 0);
	CU_ASSERT_EQUAL(tu.packets_delivered, (uint64_t)count);
	CU_ASSERT_EQUAL(tu.packet_hops, 2 * (uint64_t)count);
	CU_ASSERT_EQUAL(tu.payload_delivered, bytes * count);
	CU_ASSERT_EQUAL(tu.bytes_delivered, (uint64_t)ud_send_wire(bytes) * count);
	/* the RC WRITEs beside them: an ACK per message, back over two links */
	CU_ASSERT_EQUAL(tr.msgs_done, (uint64_t)count);
	CU_ASSERT_EQUAL(tr.acks, (uint64_t)count);
	CU_ASSERT_EQUAL(tr.packet_hops, 4 * (uint64_t)count);

	double prop = p.cable_m * p.ps_per_m * 1e-12;
	double base = p.hca_latency_ns * 1e-9 + 2 * prop + p.sw_latency_ns * 1e-9;
	double expect = base + ud_send_wire(bytes) * 8 / HDR_BPS;
	double d8 = (rc_write_wire(bytes) - ud_send_wire(bytes)) * 8 / HDR_BPS;

	CU_ASSERT_DOUBLE_EQUAL(d8, 8 * 8 / HDR_BPS, 1e-15);	/* RETH - DETH */
	for (int i = 0; i < count; i++) {
		const struct fab_msg *u = &ud.v[i], *r = &rc.v[i];
		double got = (double)(u->end - u->start) * 1e-12;

		CU_ASSERT_TRUE(u->ud);
		CU_ASSERT_TRUE(u->done && u->cqe && u->finished);
		CU_ASSERT_FALSE(u->lost);
		CU_ASSERT_EQUAL(u->status, 0);
		if (fabs(got - expect) > 1.5e-12)
			fprintf(stderr, "\n  UD %llu B #%d: delivered after %.3f ps, closed form %.3f ps\n",
				(unsigned long long)bytes, i, got * 1e12, expect * 1e12);
		/* integer picoseconds: within one of the closed form */
		CU_ASSERT(fabs(got - expect) <= 1.5e-12);
		/* the same first bit on the wire as the WRITE, 8 bytes shorter */
		CU_ASSERT_EQUAL(u->start, r->start);
		CU_ASSERT_EQUAL(u->first_tx, r->first_tx);
		CU_ASSERT(fabs((double)(r->end - u->end) * 1e-12 - d8) <= 1.5e-12);
		/* complete when sent: no later than the packet's last bit leaves
		 * (the WRITE's completion waits for the ACK, after delivery) */
		CU_ASSERT(u->completed >= u->first_tx);
		CU_ASSERT((double)(u->completed - u->first_tx) * 1e-12 <=
			  ud_send_wire(bytes) * 8 / HDR_BPS + 1e-12);
		CU_ASSERT(u->completed < u->end);
		CU_ASSERT(r->completed > r->end);
	}
	/* the run ends with the last datagram's delivery */
	CU_ASSERT_EQUAL(tu.end_ps, ud.v[count - 1].end);
	CU_ASSERT(fab_check_credits(fu, NULL) == 0);
	fab_destroy(fu);
	fab_destroy(fr);
	fab_msgs_free(&ud);
	fab_msgs_free(&rc);
	net_free(&n);
}

static void test_p2p(void)
{
	check_p2p(8);
	check_p2p(1000);
	check_p2p(4096);
}

/* A datagram on a data SL travels on the VL the SL maps to, with credits. */
static void test_sl_vl(void)
{
	struct net n;
	struct fab_params p;
	struct fab_msgs m = { 0 };
	int h0, h1;

	tf_chain(&n, 1, &h0, &h1);
	tf_params(&p, "hdr");
	tf_set(&p, "ib.vls=4");
	p.check = true;
	spec(&n, "p2p:src=h0,dst=h1,size=2000,count=10,sl=2,qp=ud", &m);
	struct fab *f = tf_run(&n, &p, &m);
	uint8_t vl = p.sl2vl[2];
	uint64_t on_vl = 0, elsewhere = 0;

	CU_ASSERT_NOT_EQUAL(vl, 0);
	for (int i = 0; i < fab_nports(f); i++) {
		const struct fab_port_info *pi = fab_port(f, i);

		for (int v = 0; v <= FAB_MAX_VLS; v++)
			*(v == vl ? &on_vl : &elsewhere) += pi->vl[v].xmit_pkts;
	}
	CU_ASSERT_EQUAL(on_vl, 20);	/* 10 datagrams x 2 links */
	CU_ASSERT_EQUAL(elsewhere, 0);
	fab_destroy(f);
	fab_msgs_free(&m);
	net_free(&n);
}

/* ---- incast: lossless with credits, lossy without ----------------------- */

struct incast {
	struct fab_totals t;
	uint64_t done, lost, cqe, wait_senders;
};

static void run_incast(const char *fabric, struct incast *r)
{
	const int senders = 8, count = 200;
	struct net n;
	struct fab_params p;
	struct fab_msgs m = { 0 };
	int hosts[9];
	char kv[64];

	memset(r, 0, sizeof(*r));
	tf_star(&n, senders + 1, hosts);
	tf_params(&p, "hdr");
	snprintf(kv, sizeof(kv), "fabric=%s", fabric);
	tf_set(&p, kv);
	p.check = !strcmp(fabric, "ib");	/* the credit walk after every event */
	/* every sender at line rate into one port: 8x overload */
	spec(&n, "incast:dst=h0,size=4096,count=200,qp=ud", &m);
	CU_ASSERT_EQUAL_FATAL(m.n, (size_t)(senders * count));
	struct fab *f = tf_run(&n, &p, &m);

	fab_totals(f, &r->t);
	for (size_t i = 0; i < m.n; i++) {
		const struct fab_msg *x = &m.v[i];

		r->done += x->done;
		r->lost += x->lost;
		r->cqe += x->cqe && x->status == 0;
		CU_ASSERT(x->done != x->lost);	/* one or the other, never both */
		CU_ASSERT_TRUE(x->finished);
	}
	for (int i = 0; i < fab_nports(f); i++) {
		const struct fab_port_info *pi = fab_port(f, i);

		if (n.nodes[pi->node].type == NET_CA && pi->node != hosts[0])
			for (int v = 0; v <= FAB_MAX_VLS; v++)
				r->wait_senders += pi->vl[v].xmit_wait_ps + pi->vl[v].paused_ps;
	}
	fprintf(stderr, "\n  UD incast 8-to-1 on %s: %llu delivered, %llu lost, %llu drops, "
		"%llu retransmitted, end %.3f us\n", fabric, (unsigned long long)r->done,
		(unsigned long long)r->lost, (unsigned long long)r->t.drops,
		(unsigned long long)r->t.retransmitted, (double)r->t.end_ps * 1e-6);
	CU_ASSERT_EQUAL(r->done + r->lost, m.n);
	CU_ASSERT_EQUAL(r->t.msgs_done, r->done);
	CU_ASSERT_EQUAL(r->t.msgs_lost, r->lost);
	CU_ASSERT_EQUAL(r->t.msgs_finished, m.n);
	/* every send completes at its sender, lost or not (unreliable service) */
	CU_ASSERT_EQUAL(r->cqe, m.n);
	/* no transport underneath: no ACK, no retransmission, one packet each */
	CU_ASSERT_EQUAL(r->t.acks, 0);
	CU_ASSERT_EQUAL(r->t.retransmitted, 0);
	CU_ASSERT_EQUAL(r->t.packets_delivered, r->done);
	fab_destroy(f);
	fab_msgs_free(&m);
	net_free(&n);
}

static void test_incast_lossless(void)
{
	struct incast r;

	run_incast("ib", &r);
	CU_ASSERT_EQUAL(r.done, 8 * 200);
	CU_ASSERT_EQUAL(r.lost, 0);
	CU_ASSERT_EQUAL(r.t.drops, 0);
	CU_ASSERT(r.t.credit_checks > 1000);
	/* it was congested: the senders waited for credits, not dropped */
	CU_ASSERT(r.wait_senders > 0);
	/* the receiver's link was the bottleneck: 1600 packets back to back */
	double ideal = 8 * 200 * ud_send_wire(4096) * 8 / HDR_BPS;

	CU_ASSERT((double)r.t.end_ps * 1e-12 >= ideal);
	CU_ASSERT((double)r.t.end_ps * 1e-12 <= ideal * 1.02);
}

static void test_incast_lossy(void)
{
	struct incast r;

	run_incast("roce-lossy", &r);
	CU_ASSERT(r.lost > 0);
	CU_ASSERT(r.done > 0);
	/* each drop loses exactly one datagram: a message is one packet */
	CU_ASSERT_EQUAL(r.t.drops, r.lost);
	CU_ASSERT_EQUAL(r.t.drops_congestion, r.lost);
	/* with PFC the same incast is lossless */
	run_incast("roce", &r);
	CU_ASSERT_EQUAL(r.lost, 0);
	CU_ASSERT_EQUAL(r.t.drops, 0);
	CU_ASSERT_EQUAL(r.done, 8 * 200);
}

/* ---- refused: a datagram larger than the MTU ----------------------------- */

static void test_mtu(void)
{
	struct net n;
	struct fab_params p;
	struct fab_msgs m = { 0 };
	struct sim_diag d;
	int h0, h1;

	tf_chain(&n, 1, &h0, &h1);
	tf_params(&p, "hdr");
	tf_set(&p, "ib.mtu=1024");
	spec(&n, "p2p:src=h0,dst=h1,size=1024,qp=ud", &m);
	spec(&n, "p2p:src=h0,dst=h1,size=1025,qp=ud", &m);
	CU_ASSERT_EQUAL_FATAL(m.n, 2);
	/* the check fab_create() makes before building the fabric */
	sim_diag_clear(&d);
	CU_ASSERT_EQUAL(fab_msgs_check(&m, &p, &d), -1);
	CU_ASSERT_STRING_EQUAL(d.msg, "message 1: a 1025-byte datagram (qp=ud) does not fit one "
			       "packet of ib.mtu=1024: UD carries one packet per message "
			       "(lower size= or raise ib.mtu)");
	/* a datagram is a SEND */
	m.v[1].bytes = 1024;
	CU_ASSERT_EQUAL(fab_msgs_check(&m, &p, &d), 0);
	m.v[0].op = FAB_OP_WRITE;
	CU_ASSERT_EQUAL(fab_msgs_check(&m, &p, &d), -1);
	CU_ASSERT_STRING_EQUAL(d.msg, "message 0: a datagram (UD) is a SEND, not an RDMA WRITE");
	m.v[0].op = FAB_OP_SEND;
	/* fab_create() makes the same check: a library caller cannot start a
	 * run that would fail at the post */
	m.v[1].bytes = 1025;
	sim_diag_clear(&d);
	CU_ASSERT_PTR_NULL(fab_create(&n, &p, &m, 1, &d));
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "message 1: a 1025-byte datagram (qp=ud) does not fit"));
	fab_msgs_free(&m);
	net_free(&n);
}

static const struct test_case tests[] = {
	{ "UD p2p: every datagram, no ACK, closed form to the ps", test_p2p },
	{ "UD on a data SL uses that SL's VL", test_sl_vl },
	{ "UD incast over IB credits loses nothing", test_incast_lossless },
	{ "UD incast on roce-lossy: lost, counted, not resent", test_incast_lossy },
	{ "UD larger than ib.mtu is refused", test_mtu },
	{ NULL, NULL },
};

TEST_MAIN("ud", tests)
