/* SPDX-License-Identifier: MIT */
/*
 * test_tcp.c - TCP (models/tcp): the congestion-control state machines
 * against hand-computed windows (slow start doubling, NewReno's halving and
 * recovery, CUBIC's W(t) = C (t - K)^3 + W_max and fast convergence, DCTCP's
 * alpha), the RFC 6298 estimator, the host-stack cost arithmetic, and on
 * fabric=tcp: a long flow at link rate minus the TCP/IP/Ethernet header
 * overhead (and the three fabrics' throughputs apart by exactly their
 * per-packet overheads), the host-stack CPU time and small-message latency
 * above RDMA's by what the host-stack parameters predict, a 32-to-1 incast
 * on shallow buffers collapsing into RTO-driven completion, and DCTCP
 * holding the bottleneck queue near its marking threshold K.
 *
 * Expected values are written out from the RFCs' formulas and the
 * defaults as numbers, not read from the model's tables.
 */
#include "tests/unit/test_main.h"
#include "tests/unit/util_fabric.h"

#include "models/fabric/fab.h"
#include "models/hca/hca.h"
#include "models/link/link.h"
#include "models/tcp/tcp.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MSS	1000u
#define NS	1000ull			/* ps */
#define US	1000000ull
#define MS	1000000000ull
#define MiB	(1024ull * 1024)

/* The defaults as numbers (tcp_host.c gives their sources). */
#define SYSCALL_NS	500ull
#define SEG_NS		100ull
#define IRQ_NS		1500ull
#define COALESCE	64u
#define CTX_NS		3000ull
#define HDR		16u
#define TCP_OVH		94u	/* 20 TCP + 12 timestamps + 20 IPv4 + 14 Eth + 4 VLAN + 4 FCS + 8 + 12 */

static double segs(const struct tcp_cc *cc)
{
	return cc->cwnd / cc->mss;
}

/* ---- congestion control ---------------------------------------------- */

static void test_slow_start(void)
{
	struct tcp_cc cc;

	tcp_cc_init(&cc, TCP_CC_NEWRENO, MSS, 10, 0);
	CU_ASSERT_DOUBLE_EQUAL(segs(&cc), 10, 1e-9);
	/* one round: 10 segments acknowledged (delayed ACKs: 5 ACKs of 2) */
	for (int i = 0; i < 5; i++)
		tcp_cc_on_ack(&cc, 2 * MSS, 0, 0);
	CU_ASSERT_DOUBLE_EQUAL(segs(&cc), 20, 1e-9);
	for (int i = 0; i < 20; i++)
		tcp_cc_on_ack(&cc, MSS, 0, 0);
	CU_ASSERT_DOUBLE_EQUAL(segs(&cc), 40, 1e-9);
	/* slow start stops at ssthresh; the rest of the ACK goes to avoidance */
	cc.ssthresh = 41.0 * MSS;
	tcp_cc_on_ack(&cc, 2 * MSS, 0, 0);
	CU_ASSERT_DOUBLE_EQUAL(segs(&cc), 41 + 1.0 / 41, 1e-9);
}

static void test_newreno(void)
{
	struct tcp_cc cc;
	double w = 20;

	tcp_cc_init(&cc, TCP_CC_NEWRENO, MSS, 20, 0);
	cc.ssthresh = 20.0 * MSS;
	/* congestion avoidance: + mss^2/cwnd per acknowledged segment, about
	 * one segment per window: 20 ACKs of one segment */
	for (int i = 0; i < 20; i++) {
		tcp_cc_on_ack(&cc, MSS, 0, 0);
		w += 1 / w;
	}
	CU_ASSERT_DOUBLE_EQUAL(segs(&cc), w, 1e-9);
	CU_ASSERT(segs(&cc) > 20.97 && segs(&cc) < 21);
	/* a loss with 20 segments in flight: ssthresh = 10, cwnd = 10 */
	tcp_cc_on_loss(&cc, 20 * MSS, 0);
	CU_ASSERT_DOUBLE_EQUAL(cc.ssthresh / MSS, 10, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(segs(&cc), 10, 1e-9);
	/* never below two segments */
	tcp_cc_on_loss(&cc, 3 * MSS, 0);
	CU_ASSERT_DOUBLE_EQUAL(cc.ssthresh / MSS, 2, 1e-9);
	/* a timeout: loss window of one segment, ssthresh = FlightSize / 2 */
	tcp_cc_on_timeout(&cc, 16 * MSS, 0);
	CU_ASSERT_DOUBLE_EQUAL(segs(&cc), 1, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(cc.ssthresh / MSS, 8, 1e-9);
	/* then slow start again up to 8, linear above */
	for (int i = 0; i < 7; i++)
		tcp_cc_on_ack(&cc, MSS, 0, 0);
	CU_ASSERT_DOUBLE_EQUAL(segs(&cc), 8, 1e-9);
	tcp_cc_on_ack(&cc, MSS, 0, 0);
	CU_ASSERT_DOUBLE_EQUAL(segs(&cc), 8.125, 1e-9);
	CU_ASSERT_EQUAL(tcp_cc_parse("reno"), TCP_CC_NEWRENO);
	CU_ASSERT_EQUAL(tcp_cc_parse("CUBIC"), TCP_CC_CUBIC);
	CU_ASSERT_EQUAL(tcp_cc_parse("vegas"), -1);
}

static void test_cubic(void)
{
	struct tcp_cc cc;
	double k = cbrt(100 * (1 - 0.7) / 0.4);	/* RFC 8312 eq. 2: 4.2172 s */

	tcp_cc_init(&cc, TCP_CC_CUBIC, MSS, 100, 0);
	cc.ssthresh = 50.0 * MSS;	/* in avoidance */
	tcp_cc_on_loss(&cc, 100 * MSS, 0);
	CU_ASSERT_DOUBLE_EQUAL(segs(&cc), 70, 1e-9);	/* beta = 0.7 */
	CU_ASSERT_DOUBLE_EQUAL(cc.ssthresh / MSS, 70, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(cc.w_max, 100, 1e-9);
	/* the epoch starts at the first ACK: K from the window there */
	tcp_cc_on_ack(&cc, MSS, 1 * MS, 0);
	CU_ASSERT_DOUBLE_EQUAL(cc.k_s, cbrt((100 - 70.0) / 0.4), 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(cc.k_s, k, 1e-9);
	/* W(t) = C (t - K)^3 + W_max: 70 at t = 0, W_max at K, then convex */
	CU_ASSERT_DOUBLE_EQUAL(tcp_cubic_w(&cc, 0), 70, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(tcp_cubic_w(&cc, k), 100, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(tcp_cubic_w(&cc, 1), 0.4 * pow(1 - k, 3) + 100, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(tcp_cubic_w(&cc, 6), 0.4 * pow(6 - k, 3) + 100, 1e-9);
	/* the window follows W(t + RTT): at t = K - RTT, 2000 ACKs bring it to W_max */
	for (int i = 0; i < 2000; i++)
		tcp_cc_on_ack(&cc, MSS, 1 * MS + (sim_time_t)((k - 0.01) * 1e12), 10 * MS);
	CU_ASSERT(segs(&cc) > 99.9 && segs(&cc) <= 100.01);
	/* growth is capped at half a segment per acknowledged segment */
	{
		struct tcp_cc c2;

		tcp_cc_init(&c2, TCP_CC_CUBIC, MSS, 10, 0);
		c2.ssthresh = 10.0 * MSS;
		tcp_cc_on_ack(&c2, MSS, 1 * MS, 0);
		tcp_cc_on_ack(&c2, 4 * MSS, 1 * MS + 100000 * MS, 0);
		CU_ASSERT(segs(&c2) <= 10 + 0.01 + 2 + 1e-9);
	}
	/* fast convergence: a loss below the last W_max releases bandwidth */
	cc.cwnd = 90.0 * MSS;
	tcp_cc_on_loss(&cc, 90 * MSS, 0);
	CU_ASSERT_DOUBLE_EQUAL(cc.w_max, 90 * 1.7 / 2, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(segs(&cc), 63, 1e-9);
	/* a timeout: one segment, ssthresh = 0.7 cwnd */
	cc.cwnd = 50.0 * MSS;
	tcp_cc_on_timeout(&cc, 50 * MSS, 0);
	CU_ASSERT_DOUBLE_EQUAL(segs(&cc), 1, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(cc.ssthresh / MSS, 35, 1e-9);
}

static void test_dctcp(void)
{
	struct tcp_cc cc;
	double a;

	tcp_cc_init(&cc, TCP_CC_DCTCP, MSS, 40, 1.0 / 16);
	CU_ASSERT_DOUBLE_EQUAL(cc.alpha, 1, 1e-12);	/* RFC 8257 / Linux: starts at 1 */
	/* a window without marks: alpha = 15/16 */
	CU_ASSERT_FALSE(tcp_cc_on_ecn(&cc, 10 * MSS, false, 10 * MSS, 20 * MSS, 0));
	CU_ASSERT_DOUBLE_EQUAL(cc.alpha, 15.0 / 16, 1e-12);
	/* half the next window marked: the first ECE cuts by alpha / 2, once */
	CU_ASSERT_TRUE(tcp_cc_on_ecn(&cc, 5 * MSS, true, 15 * MSS, 30 * MSS, 0));
	CU_ASSERT_DOUBLE_EQUAL(segs(&cc), 40 * (1 - 15.0 / 32), 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(cc.ssthresh, cc.cwnd, 1e-9);
	a = segs(&cc);
	CU_ASSERT_FALSE(tcp_cc_on_ecn(&cc, 5 * MSS, false, 20 * MSS, 30 * MSS, 0));
	CU_ASSERT_DOUBLE_EQUAL(segs(&cc), a, 1e-9);
	/* the window ended at 20: F = 5/10, alpha = (15/16)^2 + 1/32 = 233/256 */
	CU_ASSERT_DOUBLE_EQUAL(cc.alpha, 233.0 / 256, 1e-12);
	/* marks past the first cut's window: the window ending at 30 was all
	 * marked (F = 1), alpha = 233/256 15/16 + 1/16, then the cut uses it */
	CU_ASSERT_TRUE(tcp_cc_on_ecn(&cc, 10 * MSS, true, 30 * MSS, 40 * MSS, 0));
	CU_ASSERT_DOUBLE_EQUAL(cc.alpha, 233.0 / 256 * 15 / 16 + 1.0 / 16, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(segs(&cc), a * (1 - cc.alpha / 2), 1e-9);
	/* many windows without marks: alpha decays to (15/16)^n */
	for (int i = 0; i < 40; i++)
		tcp_cc_on_ecn(&cc, MSS, false, (41 + (uint64_t)i) * MSS, (42 + (uint64_t)i) * MSS, 0);
	CU_ASSERT(cc.alpha < 0.1);
	/* NewReno reacts to ECE as to a loss, once per window */
	tcp_cc_init(&cc, TCP_CC_NEWRENO, MSS, 40, 0);
	CU_ASSERT_TRUE(tcp_cc_on_ecn(&cc, MSS, true, MSS, 40 * MSS, 0));
	CU_ASSERT_DOUBLE_EQUAL(segs(&cc), 20, 1e-9);
	CU_ASSERT_FALSE(tcp_cc_on_ecn(&cc, MSS, true, 2 * MSS, 40 * MSS, 0));
	CU_ASSERT_DOUBLE_EQUAL(segs(&cc), 20, 1e-9);
}

static void test_rto(void)
{
	struct tcp_rtt r;
	sim_time_t min = 200 * MS, max = 60000 * MS;

	tcp_rtt_init(&r, min);
	CU_ASSERT_EQUAL(r.rto, min);
	/* first sample 10 us: SRTT 10, RTTVAR 5, RTO = 30 us -> the floor */
	tcp_rtt_sample(&r, 10 * US, min, max);
	CU_ASSERT_EQUAL(r.srtt, 10 * US);
	CU_ASSERT_EQUAL(r.rttvar, 5 * US);
	CU_ASSERT_EQUAL(r.rto, min);
	/* second 18 us: RTTVAR = 3/4 5 + 1/4 8 = 5.75, SRTT = 7/8 10 + 1/8 18 = 11 */
	tcp_rtt_sample(&r, 18 * US, 1, max);
	CU_ASSERT_EQUAL(r.rttvar, 5750 * NS);
	CU_ASSERT_EQUAL(r.srtt, 11 * US);
	CU_ASSERT_EQUAL(r.rto, 11 * US + 4 * 5750 * NS);
	/* a 100 s sample: the ceiling */
	tcp_rtt_sample(&r, 100000 * MS, 1, max);
	CU_ASSERT_EQUAL(r.rto, max);
}

/* ---- host-stack arithmetic ------------------------------------------- */

static void test_host_costs(void)
{
	struct tcp_params p;
	struct tcp_host th = { 0 };
	sim_time_t c0, t;
	double g;

	tcp_params_default(&p);
	CU_ASSERT_DOUBLE_EQUAL(tcp_copy_gbps(&p, 150), 6, 1e-12);	/* one core's copy */
	p.copy_gbps = 0;
	g = tcp_copy_gbps(&p, 150);
	CU_ASSERT_DOUBLE_EQUAL(g, 75, 1e-12);	/* 0: memory bound; a copy reads and writes */
	CU_ASSERT_EQUAL(tcp_copy_ps(7500, 75), 100 * NS);
	/* send(): syscall, then copy + per-segment processing */
	t = tcp_host_send(&th, &p, 75, 1 * US, 7500 * 2, 4, &c0);
	CU_ASSERT_EQUAL(c0, 1 * US + SYSCALL_NS * NS);
	CU_ASSERT_EQUAL(t, c0 + 200 * NS + 4 * SEG_NS * NS);
	/* a second send at once queues behind the first */
	CU_ASSERT_EQUAL(tcp_host_send(&th, &p, 75, 1 * US, 0, 1, &c0), t + SYSCALL_NS * NS + SEG_NS * NS);
	CU_ASSERT_EQUAL(th.st.cpu_ps, 2 * SYSCALL_NS * NS + 200 * NS + 5 * SEG_NS * NS);
	/* receive: an idle softirq takes an interrupt; a busy one batches */
	memset(&th, 0, sizeof(th));
	t = tcp_host_rx_seg(&th, &p, 10 * US, 10 * US);
	CU_ASSERT_EQUAL(t, 10 * US + (IRQ_NS + SEG_NS) * NS);
	CU_ASSERT(tcp_host_rx_polling(&th, &p, 10 * US + 100 * NS));
	CU_ASSERT_EQUAL(tcp_host_rx_seg(&th, &p, 10 * US + 100 * NS, 10 * US + 100 * NS),
			t + SEG_NS * NS);
	CU_ASSERT_EQUAL(th.st.irqs, 1);
	for (unsigned i = 2; i < COALESCE; i++)
		tcp_host_rx_seg(&th, &p, 10 * US + 200 * NS, 10 * US + 200 * NS);
	CU_ASSERT_EQUAL(th.st.irqs, 1);
	CU_ASSERT(!tcp_host_rx_polling(&th, &p, 10 * US + 200 * NS));	/* budget spent */
	tcp_host_rx_seg(&th, &p, 10 * US + 200 * NS, 10 * US + 200 * NS);	/* the 65th: a new poll */
	CU_ASSERT_EQUAL(th.st.irqs, 2);
	CU_ASSERT_EQUAL(th.st.cpu_ps, 2 * IRQ_NS * NS + (COALESCE + 1) * SEG_NS * NS);
	/* a moderated interrupt: raised 3 us after the segment (rx-usecs),
	 * restarted by each segment in mlx5's CQE mode, from the first without */
	memset(&th, 0, sizeof(th));
	CU_ASSERT_EQUAL(tcp_host_rx_fire(&p, 1 * US, 2 * US), 5 * US);
	p.rx_cqe_mode = false;
	CU_ASSERT_EQUAL(tcp_host_rx_fire(&p, 1 * US, 2 * US), 4 * US);
	p.rx_cqe_mode = true;
	CU_ASSERT(!tcp_host_rx_polling(&th, &p, 1 * US));
	t = tcp_host_rx_seg(&th, &p, 1 * US, 4 * US);
	CU_ASSERT_EQUAL(t, 4 * US + (IRQ_NS + SEG_NS) * NS);
	CU_ASSERT_EQUAL(tcp_host_rx_seg(&th, &p, 2 * US, 4 * US), t + SEG_NS * NS);
	CU_ASSERT_EQUAL(th.st.irqs, 1);
	/* the reader: woken once, copies each segment, recv() returns after the last */
	memset(&th, 0, sizeof(th));
	t = tcp_host_rx_copy(&th, &p, 75, 1 * US, 0, 7500, true, false);
	CU_ASSERT_EQUAL(t, 1 * US + CTX_NS * NS + 100 * NS);
	t = tcp_host_rx_copy(&th, &p, 75, 1 * US, 0, 7500, false, true);
	CU_ASSERT_EQUAL(t, 1 * US + CTX_NS * NS + 200 * NS + SYSCALL_NS * NS);
	CU_ASSERT_EQUAL(th.st.ctx_switches, 1);
	CU_ASSERT_EQUAL(th.st.syscalls, 1);
	CU_ASSERT_EQUAL(th.st.hot_bytes, 0);
	/* data still in the cache is copied at tcp.copy_hot_gbps: 3.5 MiB of
	 * DDIO at 100 Gb/s is 293.6 us; a copy starting by then is hot */
	CU_ASSERT_EQUAL(tcp_hot_ps(&p, 100e9), 293601280 * (sim_time_t)1);
	memset(&th, 0, sizeof(th));
	p.copy_hot_gbps = 15;
	t = tcp_host_rx_copy(&th, &p, 6, 1 * US, 1 * US + CTX_NS * NS, 7500, true, false);
	CU_ASSERT_EQUAL(t, 1 * US + CTX_NS * NS + 500 * NS);
	t = tcp_host_rx_copy(&th, &p, 6, 1 * US, 1 * US + CTX_NS * NS, 6000, false, false);
	CU_ASSERT_EQUAL(t, 1 * US + CTX_NS * NS + 1500 * NS);	/* started late: cold */
	CU_ASSERT_EQUAL(th.st.hot_bytes, 7500);
}

static void test_wire_and_params(void)
{
	struct fab_params p;
	struct sim_diag d;

	fab_params_default(&p);
	CU_ASSERT_EQUAL(p.tcp.cc, TCP_CC_CUBIC);
	CU_ASSERT_EQUAL(p.tcp.init_cwnd, 10);
	CU_ASSERT_EQUAL(p.tcp.min_rto_us, 200000);
	CU_ASSERT_EQUAL(tcp_wire_bytes(&p.tcp, 4096), 4096 + TCP_OVH);
	CU_ASSERT_EQUAL(tcp_wire_bytes(&p.tcp, 0), TCP_OVH);
	CU_ASSERT_EQUAL(fab_params_set(&p, "tcp.timestamps=off", &d), 0);
	CU_ASSERT_EQUAL(tcp_wire_bytes(&p.tcp, 4096), 4096 + TCP_OVH - 12);
	/* 14 + 4 + 20 + 20 + 4 = 62 bytes: padded to the 64-byte minimum */
	CU_ASSERT_EQUAL(tcp_wire_bytes(&p.tcp, 0), 64 + 20);
	CU_ASSERT_EQUAL(fab_params_set(&p, "tcp.cc=dctcp", &d), 0);
	CU_ASSERT_EQUAL(p.tcp.cc, TCP_CC_DCTCP);
	CU_ASSERT_TRUE(tcp_wants_ecn(&p.tcp));
	CU_ASSERT_EQUAL(fab_params_set(&p, "tcp.min_rto_us=1000", &d), 0);
	CU_ASSERT_EQUAL(p.tcp.min_rto_us, 1000);
	CU_ASSERT_EQUAL(fab_params_set(&p, "tcp.ctx_switch_ns=2us", &d), 0);
	CU_ASSERT_EQUAL(p.tcp.ctx_switch_ns, 2000);
	CU_ASSERT_EQUAL(fab_params_set(&p, "tcp.copy_gbps=12.5", &d), 0);
	CU_ASSERT_DOUBLE_EQUAL(p.tcp.copy_gbps, 12.5, 1e-12);
	CU_ASSERT_EQUAL(fab_params_set(&p, "tcp.cc=vegas", &d), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "newreno"));
	CU_ASSERT_EQUAL(fab_params_set(&p, "tcp.copy_gbps=-1", &d), -1);
}

/* ---- on the fabric --------------------------------------------------- */

static void dump(const char *what, struct fab *f)
{
	struct fab_totals t;

	fab_totals(f, &t);
	if (getenv("IBFAB_TEST_VERBOSE"))
		fprintf(stderr, "%s: end %.3f us segs %llu rtx %llu rto %llu fr %llu drops %llu "
			"marks %llu cpu %.3f us\n", what, t.end_ps / 1e6,
			(unsigned long long)t.tcp_segments, (unsigned long long)t.tcp_retransmits,
			(unsigned long long)t.tcp_timeouts, (unsigned long long)t.tcp_fast_recoveries,
			(unsigned long long)t.drops_congestion, (unsigned long long)t.ecn_marks,
			t.cpu_ps / 1e6);
}

/*
 * The protocol's closed forms below want a host that keeps up with the
 * wire: segments of ib.mtu bytes (as RoCE's and IB's packets) and a copy
 * at memory speed. test_one_core checks the calibrated defaults instead.
 */
static void wire_host(struct fab_params *p)
{
	tf_set(p, "tcp.mss=0");
	tf_set(p, "tcp.copy_gbps=0");
	tf_set(p, "tcp.rx_usecs=0");	/* an interrupt at once: the protocol's own timing */
}

/* One message of `bytes` from h0 to h1 over h0 - sw - h1 on fabric fb. */
struct one {
	struct net n;
	struct fab_msgs m;
	struct fab *f;
	struct fab_totals t;
	double rate_bps;
};

static void one_run(struct one *o, const char *fb, uint64_t bytes, const char *const *sets,
		    bool host_model)
{
	struct fab_params p;
	char kv[64];
	int h0, h1;

	memset(o, 0, sizeof(*o));
	tf_chain(&o->n, 1, &h0, &h1);
	tf_params(&p, "hdr");
	p.host_model = host_model;
	snprintf(kv, sizeof(kv), "fabric=%s", fb);
	tf_set(&p, kv);
	wire_host(&p);
	for (; sets && *sets; sets++)
		tf_set(&p, *sets);
	tf_add_msg(&o->m, h0, h1, bytes, 0, 0);
	o->f = tf_run(&o->n, &p, &o->m);
	fab_totals(o->f, &o->t);
	o->rate_bps = link_data_rate_bps(fab_port(o->f, 0)->rate);
	dump(fb, o->f);
}

static void one_free(struct one *o)
{
	fab_destroy(o->f);
	fab_msgs_free(&o->m);
	net_free(&o->n);
}

/* Payload rate of one message: bytes over first bit out to delivery. */
static double goodput(const struct one *o)
{
	const struct fab_msg *m = &o->m.v[0];

	CU_ASSERT_FATAL(m->done);
	return (double)m->bytes * 8 / ((double)(m->end - m->first_tx) * 1e-12);
}

static void test_long_flow(void)
{
	uint64_t bytes = (test_quick() ? 32 : 64) * MiB, mtu = 4096;
	/* TCP: the stream is the message plus its 16-byte header, cut at the
	 * MSS; every segment pays 94 bytes */
	uint64_t stream = bytes + HDR, nseg = (stream + mtu - 1) / mtu;
	double eff_tcp = (double)bytes / (double)(stream + nseg * TCP_OVH);
	/* RoCEv2: 86 bytes per packet, RETH (16) on the first; IB: 26 + 16 */
	uint64_t npkt = bytes / mtu;
	double eff_roce = (double)bytes / (double)(bytes + npkt * 86 + 16);
	double eff_ib = (double)bytes / (double)(bytes + npkt * 26 + 16);
	struct one tcp, roce, ib;
	double g_tcp, g_roce, g_ib;

	one_run(&tcp, "tcp", bytes, NULL, false);
	one_run(&roce, "roce", bytes, NULL, false);
	one_run(&ib, "ib", bytes, NULL, false);
	g_tcp = goodput(&tcp);
	g_roce = goodput(&roce);
	g_ib = goodput(&ib);
	if (getenv("IBFAB_TEST_VERBOSE"))
		fprintf(stderr, "goodput tcp %.4f (exp %.4f) roce %.4f (%.4f) ib %.4f (%.4f) Gb/s\n",
			g_tcp / 1e9, tcp.rate_bps * eff_tcp / 1e9, g_roce / 1e9,
			roce.rate_bps * eff_roce / 1e9, g_ib / 1e9, ib.rate_bps * eff_ib / 1e9);
	/* link rate minus header overhead, within 1% */
	CU_ASSERT_DOUBLE_EQUAL(g_tcp / (tcp.rate_bps * eff_tcp), 1, 0.01);
	CU_ASSERT_DOUBLE_EQUAL(g_roce / (roce.rate_bps * eff_roce), 1, 0.01);
	CU_ASSERT_DOUBLE_EQUAL(g_ib / (ib.rate_bps * eff_ib), 1, 0.01);
	/* the three differ by their per-packet overheads (same nominal rate) */
	CU_ASSERT_DOUBLE_EQUAL((g_tcp / g_roce) / (eff_tcp / eff_roce), 1, 0.003);
	CU_ASSERT_DOUBLE_EQUAL((g_roce / g_ib) / (eff_roce / eff_ib), 1, 0.003);
	CU_ASSERT(g_tcp < g_roce && g_roce < g_ib);
	CU_ASSERT_EQUAL(tcp.t.tcp_retransmits, 0);
	CU_ASSERT_EQUAL(tcp.t.tcp_segments >= nseg, true);
	one_free(&tcp);
	one_free(&roce);
	one_free(&ib);
}

/*
 * The defaults: MTU 1500 (1448-byte segments) and one core's copy at 6
 * GB/s. One flow is then bound by its sending core, which copies each
 * segment and processes it (seg_cpu_ns): 1448 B per 241.3 + 100 ns, 33.9
 * Gb/s of payload, in ESnet's 15-35 Gb/s for one stream; at MTU 9000
 * (8948-byte segments) 45.0 Gb/s, near Cai et al.'s 42 per core. A
 * second flow from another host runs on its own cores: the receiver is
 * not the limit. Without GSO the sender pays tcp.skb_cpu_ns (200 ns) more
 * per segment: 541.3 ns, 21.4 Gb/s; without GRO the receiver does, and
 * the rate stays.
 */
static void test_one_core(void)
{
	static const uint32_t mss[] = { 1448, 8948, 1448, 1448 };
	static const char *const off[] = { NULL, NULL, "tcp.gso=off", "tcp.gro=off" };
	uint64_t bytes = (test_quick() ? 8 : 32) * MiB, proto_rx[4] = { 0 };

	for (unsigned k = 0; k < 4; k++) {
		struct fab_params p;
		struct net n;
		struct fab_msgs m = { 0 };
		struct fab *f;
		char kv[64];
		int h0, h1;
		double per_seg, want, got;

		tf_chain(&n, 1, &h0, &h1);
		tf_params(&p, "hdr");
		tf_set(&p, "fabric=tcp");
		snprintf(kv, sizeof(kv), "tcp.mss=%u", mss[k]);
		tf_set(&p, kv);
		CU_ASSERT_EQUAL(p.tcp.cores, 0);
		CU_ASSERT_DOUBLE_EQUAL(p.tcp.copy_gbps, 6, 1e-12);
		CU_ASSERT(p.tcp.gso && p.tcp.gro);
		if (off[k])
			tf_set(&p, off[k]);
		tf_add_msg(&m, h0, h1, bytes, 0, 0);
		f = tf_run(&n, &p, &m);
		struct fab_kernel kr = { 0 };

		fab_host_kernel(f, h1, &kr);
		proto_rx[k] = kr.proto_ps;
		per_seg = (double)mss[k] / 6.0 + (double)SEG_NS + (k == 2 ? 200.0 : 0);	/* ns */
		want = (double)mss[k] * 8 / per_seg;			/* Gb/s */
		got = (double)m.v[0].bytes * 8 / (double)(m.v[0].end - m.v[0].first_tx) * 1e3;
		if (getenv("IBFAB_TEST_VERBOSE"))
			fprintf(stderr, "one flow, MSS %u%s%s: %.2f Gb/s (one core: %.2f)\n", mss[k],
				off[k] ? ", " : "", off[k] ? off[k] : "", got, want);
		CU_ASSERT_DOUBLE_EQUAL(got / want, 1, 0.02);
		CU_ASSERT(got < 50);
		fab_destroy(f);
		fab_msgs_free(&m);
		net_free(&n);
	}
	/* without GRO the receiver's protocol work grows by 200 ns a segment */
	uint64_t nseg = (bytes + HDR + 1447) / 1448;

	CU_ASSERT_EQUAL(proto_rx[3] - proto_rx[0], nseg * 200 * NS);
	CU_ASSERT_EQUAL(proto_rx[2], proto_rx[0]);
}

/* copy time of `bytes` at memory speed (host.mem_gbps 150 / 2: wire_host) */
static uint64_t copy_ps(uint64_t bytes)
{
	return (bytes * 1000 + 74) / 75;
}

static void test_small_latency(void)
{
	uint64_t size = 64, stream = size + HDR;
	struct one tcp, roce;
	double lat_tcp, lat_roce, extra;

	one_run(&tcp, "tcp", size, NULL, false);
	one_run(&roce, "roce", size, NULL, false);
	lat_tcp = (double)(tcp.m.v[0].end - tcp.m.v[0].start);
	lat_roce = (double)(roce.m.v[0].end - roce.m.v[0].start);
	/* send(): syscall + copy + one segment's processing; receive: an
	 * interrupt + one segment's processing, the reader's wake-up, its
	 * copy and recv() returning */
	extra = (double)((SYSCALL_NS + SEG_NS) * NS + copy_ps(stream)) +
		(double)((IRQ_NS + SEG_NS + CTX_NS + SYSCALL_NS) * NS + copy_ps(stream));
	/* plus 8 more bytes on the wire (TCP 80 + 94, RoCE 64 + 86 + RETH 16):
	 * under 1 ns at 200 Gb/s */
	if (getenv("IBFAB_TEST_VERBOSE"))
		fprintf(stderr, "64 B one way: tcp %.3f us, roce %.3f us, extra %.3f (expected %.3f) us\n",
			lat_tcp / 1e6, lat_roce / 1e6, (lat_tcp - lat_roce) / 1e6, extra / 1e6);
	CU_ASSERT_DOUBLE_EQUAL(lat_tcp - lat_roce, extra, 1000);
	CU_ASSERT(lat_tcp > 3 * lat_roce);
	/* the kernel's counters take the extra time apart: every cost it
	 * charged lies on this lone message's path, so they add up to it
	 * (within 1%), and verbs charged none */
	struct fab_totals tt, tr;

	fab_totals(tcp.f, &tt);
	fab_totals(roce.f, &tr);
	double parts = (double)(tt.kernel.syscall_ps + tt.kernel.copy_ps + tt.kernel.proto_ps +
				tt.kernel.irq_ps + tt.kernel.wake_ps);

	CU_ASSERT_DOUBLE_EQUAL(parts / (lat_tcp - lat_roce), 1, 0.01);
	CU_ASSERT(tt.kernel.syscalls == 2 && tt.kernel.interrupts == 1 && tt.kernel.ctx_switches == 1);
	CU_ASSERT_EQUAL(tt.kernel.cpu_copy_bytes, 2 * stream);
	CU_ASSERT(tr.kernel.syscalls == 0 && tr.kernel.interrupts == 0 && tr.kernel.cpu_copy_bytes == 0);
	/* the NIC's interrupt moderation (mlx5's CQE mode, 3 us): a lone
	 * segment's interrupt comes 3 us after it, on the path but not on
	 * the CPU */
	static const char *const mod[] = { "tcp.rx_usecs=3", NULL };
	struct one tcpm;
	struct fab_totals tm;

	one_run(&tcpm, "tcp", size, mod, false);
	fab_totals(tcpm.f, &tm);
	CU_ASSERT_EQUAL(tcpm.m.v[0].end - tcpm.m.v[0].start, tcp.m.v[0].end - tcp.m.v[0].start + 3 * US);
	CU_ASSERT_EQUAL(tm.kernel.irq_ps + tm.kernel.proto_ps + tm.kernel.copy_ps,
			tt.kernel.irq_ps + tt.kernel.proto_ps + tt.kernel.copy_ps);
	CU_ASSERT_EQUAL(tm.kernel.interrupts, 1);
	one_free(&tcpm);
	one_free(&tcp);
	one_free(&roce);
}

/* One 1 MiB message h0 -> h1 from and to GPU memory (or host memory):
 * its completion time, and the staging copies the hosts made. */
static sim_time_t gpu_run(const char *fb, const char *gpudirect, bool gpu, uint64_t *staged)
{
	struct net n;
	struct fab_params p;
	struct fab_msgs m = { 0 };
	char kv[64];
	int h0, h1;

	tf_chain(&n, 1, &h0, &h1);
	tf_params(&p, "hdr");
	p.host_model = true;
	snprintf(kv, sizeof(kv), "fabric=%s", fb);
	tf_set(&p, kv);
	snprintf(kv, sizeof(kv), "host.gpudirect=%s", gpudirect);
	tf_set(&p, kv);
	tf_add_msg(&m, h0, h1, 1 << 20, 0, 0);
	m.v[0].mem = gpu ? HCA_MEM_GPU : HCA_MEM_HOST;
	struct fab *f = tf_run(&n, &p, &m);
	sim_time_t t = m.v[0].end - m.v[0].start;

	*staged = 0;
	for (int i = 0; i < n.nnodes; i++) {
		const struct host_stats *h = fab_host_stats(f, i);

		*staged += h ? h->staging_copies : 0;
	}
	fab_destroy(f);
	fab_msgs_free(&m);
	net_free(&n);
	return t;
}

/*
 * A socket cannot read or write GPU memory: TCP from GPU buffers copies
 * through host memory at both ends (cudaMemcpy before send(), after
 * recv()), GPUDirect or not, and pays the same two staging copies RoCE
 * pays without GPUDirect.
 */
static void test_gpu_staging(void)
{
	uint64_t st_host, st_gpu, st_gpu_off, st_roce_on, st_roce_off;
	sim_time_t host = gpu_run("tcp", "on", false, &st_host);
	sim_time_t gpu = gpu_run("tcp", "on", true, &st_gpu);
	sim_time_t gpu_off = gpu_run("tcp", "off", true, &st_gpu_off);
	sim_time_t roce_on = gpu_run("roce", "on", true, &st_roce_on);
	sim_time_t roce_off = gpu_run("roce", "off", true, &st_roce_off);

	CU_ASSERT(st_host == 0 && st_gpu == 2 && st_gpu_off == 2);
	CU_ASSERT(st_roce_on == 0 && st_roce_off == 2);
	CU_ASSERT_EQUAL(gpu, gpu_off);
	/* the two copies: what RoCE loses without GPUDirect, within 1% */
	CU_ASSERT_DOUBLE_EQUAL((double)(gpu - host) / (double)(roce_off - roce_on), 1, 0.01);
	if (getenv("IBFAB_TEST_VERBOSE"))
		fprintf(stderr, "1 MiB from GPU memory: tcp %.3f us (host memory %.3f us), roce %.3f us (%.3f without GPUDirect)\n",
			(double)gpu / 1e6, (double)host / 1e6, (double)roce_on / 1e6, (double)roce_off / 1e6);
}

static void test_cpu_per_gib(void)
{
	uint64_t bytes = (test_quick() ? 4 : 64) * MiB, stream = bytes + HDR, mtu = 4096;
	uint64_t nseg = (stream + mtu - 1) / mtu, last = stream - (nseg - 1) * mtu;
	static const char *const every_irq[] = { "tcp.irq_coalesce=1", NULL };
	static const char *const mod[] = { "tcp.rx_usecs=3", "tcp.rx_frames=32", NULL };
	struct one tcp, tcp1, tcpm, roce;
	double stack, rx_copy, per_gib_tcp, per_gib_roce, lo, hi;

	one_run(&roce, "roce", bytes, NULL, true);
	one_run(&tcp1, "tcp", bytes, every_irq, true);
	one_run(&tcp, "tcp", bytes, NULL, true);
	/* the reader copies segment by segment (each rounded up to a ps) */
	rx_copy = (double)((nseg - 1) * copy_ps(mtu) + copy_ps(last));
	/* both sides: a syscall and the copy; per segment, processing on each
	 * side; one wake-up of the reader */
	stack = (double)(2 * SYSCALL_NS * NS + copy_ps(stream)) + rx_copy +
		(double)(2 * nseg * SEG_NS * NS + CTX_NS * NS);
	/* an interrupt per segment: exact */
	CU_ASSERT_DOUBLE_EQUAL((double)(tcp1.t.cpu_ps - roce.t.cpu_ps),
			       stack + (double)(nseg * IRQ_NS * NS), 10);
	/* NAPI batching: between one per 64 segments and one per segment */
	lo = stack + (double)((nseg + COALESCE - 1) / COALESCE * IRQ_NS * NS);
	hi = stack + (double)(nseg * IRQ_NS * NS);
	CU_ASSERT((double)(tcp.t.cpu_ps - roce.t.cpu_ps) >= lo - 10);
	CU_ASSERT((double)(tcp.t.cpu_ps - roce.t.cpu_ps) <= hi + 10);
	per_gib_tcp = (double)tcp.t.cpu_ps / ((double)bytes / (1024.0 * MiB));
	per_gib_roce = (double)roce.t.cpu_ps / ((double)bytes / (1024.0 * MiB));
	if (getenv("IBFAB_TEST_VERBOSE"))
		fprintf(stderr, "CPU per GiB: tcp %.3f ms (irq per segment %.3f ms, bounds %.3f..%.3f), "
			"roce %.6f ms\n", per_gib_tcp / 1e9,
			(double)tcp1.t.cpu_ps / ((double)bytes / (1024.0 * MiB)) / 1e9,
			lo / ((double)bytes / (1024.0 * MiB)) / 1e9,
			hi / ((double)bytes / (1024.0 * MiB)) / 1e9, per_gib_roce / 1e9);
	/* RDMA pays a post and a poll per message (430 ns), TCP per byte: at
	 * 4 MiB (quick runs) TCP's CPU per GiB is ~900 times RDMA's, at 64 MiB
	 * ~14,000 times */
	CU_ASSERT(per_gib_tcp > 500 * per_gib_roce);
	/* with the NIC's moderation (rx-usecs 3, rx-frames 32) a 4 KiB
	 * segment comes every 0.17 us at 200 Gb/s: the interrupt waits for 32
	 * of them, and the poll it starts takes those that arrive meanwhile
	 * (up to its budget of 64); otherwise the same work */
	one_run(&tcpm, "tcp", bytes, mod, true);
	if (getenv("IBFAB_TEST_VERBOSE"))
		fprintf(stderr, "moderated: %llu interrupts for %llu segments (%llu without)\n",
			(unsigned long long)tcpm.t.kernel.interrupts, (unsigned long long)nseg,
			(unsigned long long)tcp.t.kernel.interrupts);
	CU_ASSERT(tcpm.t.kernel.interrupts <= nseg / 32 + 1);
	CU_ASSERT(tcpm.t.kernel.interrupts >= nseg / COALESCE);
	CU_ASSERT(tcpm.t.kernel.interrupts < tcp.t.kernel.interrupts);
	CU_ASSERT_EQUAL((double)(tcpm.t.cpu_ps - tcpm.t.kernel.irq_ps),
			(double)(tcp.t.cpu_ps - tcp.t.kernel.irq_ps));
	one_free(&tcpm);
	one_free(&tcp);
	one_free(&tcp1);
	one_free(&roce);
}

/* n senders to h0 on one switch, `bytes` each. */
struct star {
	struct net n;
	struct fab_msgs m;
	struct fab *f;
	struct fab_totals t;
	int hosts[64];
};

static void star_run(struct star *s, int senders, uint64_t bytes, const char *const *sets)
{
	struct fab_params p;

	memset(s, 0, sizeof(*s));
	tf_star(&s->n, senders + 1, s->hosts);
	tf_params(&p, "hdr");
	tf_set(&p, "fabric=tcp");
	wire_host(&p);
	for (; sets && *sets; sets++)
		tf_set(&p, *sets);
	for (int i = 1; i <= senders; i++)
		tf_add_msg(&s->m, s->hosts[i], s->hosts[0], bytes, (uint32_t)i - 1, 0);
	s->f = tf_run(&s->n, &p, &s->m);
	fab_totals(s->f, &s->t);
	dump("star", s->f);
}

static void star_free(struct star *s)
{
	fab_destroy(s->f);
	fab_msgs_free(&s->m);
	net_free(&s->n);
}

/* The switch port towards h0: its egress queue's high-water mark. */
static uint32_t queue_to_h0(const struct star *s)
{
	for (int i = 0; i < fab_nports(s->f); i++) {
		const struct fab_port_info *pi = fab_port(s->f, i);

		if (pi->peer_node == s->hosts[0])
			return pi->vl[0].queue_high;
	}
	return 0;
}

static void test_incast(void)
{
	static const char *const shallow[] = { "eth.buffer_per_port=16KiB", NULL };
	static const char *const shallow_1ms[] = { "eth.buffer_per_port=16KiB",
						   "tcp.min_rto_us=1000", NULL };
	uint64_t bytes = 256 * 1024;
	int n = 32;
	struct star s, fast;
	double ideal = (double)n * bytes * 8 / 200e9 * 1e12;	/* ps */

	star_run(&s, n, bytes, shallow);
	if (getenv("IBFAB_TEST_VERBOSE"))
		fprintf(stderr, "incast %d x 256 KiB: %.3f ms (ideal %.3f ms), goodput %.2f Gb/s, "
			"queue high %u B\n", n, s.t.end_ps / 1e9, ideal / 1e9,
			(double)n * bytes * 8 / (s.t.end_ps * 1e-12) / 1e9, queue_to_h0(&s));
	CU_ASSERT_EQUAL(s.t.msgs_done, (uint64_t)n);
	CU_ASSERT(s.t.drops_congestion > 0);
	CU_ASSERT(s.t.tcp_retransmits > 0);
	CU_ASSERT(s.t.tcp_timeouts > 0);
	/* the tail is the minimum RTO: completion >= 200 ms, ~600x the ideal */
	CU_ASSERT(s.t.end_ps >= 200 * MS);
	CU_ASSERT(s.t.end_ps < 200 * MS * 8);
	CU_ASSERT((double)s.t.end_ps > 100 * ideal);
	/* a datacenter RTO floor of 1 ms shortens the tail by two orders */
	star_run(&fast, n, bytes, shallow_1ms);
	if (getenv("IBFAB_TEST_VERBOSE"))
		fprintf(stderr, "  with min RTO 1 ms: %.3f ms, %llu timeouts\n", fast.t.end_ps / 1e9,
			(unsigned long long)fast.t.tcp_timeouts);
	CU_ASSERT(fast.t.tcp_timeouts > 0);
	CU_ASSERT(fast.t.end_ps >= 1 * MS);
	CU_ASSERT(fast.t.end_ps * 20 < s.t.end_ps);
	/* the same inputs give the same run, losses and timeouts included */
	{
		struct star again;

		star_run(&again, n, bytes, shallow_1ms);
		CU_ASSERT_EQUAL(again.t.end_ps, fast.t.end_ps);
		CU_ASSERT_EQUAL(again.t.tcp_segments, fast.t.tcp_segments);
		CU_ASSERT_EQUAL(again.t.tcp_timeouts, fast.t.tcp_timeouts);
		CU_ASSERT_EQUAL(again.t.drops_congestion, fast.t.drops_congestion);
		CU_ASSERT_EQUAL(again.t.cpu_ps, fast.t.cpu_ps);
		star_free(&again);
	}
	star_free(&s);
	star_free(&fast);
}

/* The bottleneck queue over time: every switch port facing a sender counts
 * the cells its packets hold in the shared buffer until they leave
 * (ingress accounting), so their sum is what waits for h0. */
struct qsample {
	const struct star *s;
	sim_time_t from, to;	/* sample in [from, to) (to 0: to the end) */
	double sum;
	uint64_t n;
	uint32_t max;
};

static bool is_host(const struct star *s, int node, int upto)
{
	for (int k = 0; k <= upto; k++)
		if (s->hosts[k] == node)
			return true;
	return false;
}

static void q_sampler(struct fab *f, sim_time_t now, void *ctx)
{
	struct qsample *q = ctx;
	uint32_t bytes = 0;

	if (now < q->from || (q->to && now >= q->to))
		return;
	for (int i = 0; i < fab_nports(f); i++) {
		const struct fab_port_info *pi = fab_port(f, i);
		struct fab_sample smp;

		/* the switch's ports facing h1..h4 */
		if (is_host(q->s, pi->node, 4) || !is_host(q->s, pi->peer_node, 4) ||
		    pi->peer_node == q->s->hosts[0])
			continue;
		fab_port_sample(f, i, &smp);
		bytes += smp.buf_bytes[0];
	}
	q->sum += bytes;
	q->n++;
	if (bytes > q->max)
		q->max = bytes;
}

static void star_run_sampled(struct star *s, int senders, uint64_t bytes, const char *const *sets,
			     struct qsample *q)
{
	struct fab_params p;
	struct sim_diag d;

	memset(s, 0, sizeof(*s));
	tf_star(&s->n, senders + 1, s->hosts);
	tf_params(&p, "hdr");
	tf_set(&p, "fabric=tcp");
	wire_host(&p);
	tf_set(&p, "sim.sample_ns=1000");
	for (; sets && *sets; sets++)
		tf_set(&p, *sets);
	for (int i = 1; i <= senders; i++)
		tf_add_msg(&s->m, s->hosts[i], s->hosts[0], bytes, (uint32_t)i - 1, 0);
	s->f = fab_create(&s->n, &p, &s->m, 1, &d);
	CU_ASSERT_FATAL(s->f != NULL);
	q->s = s;
	fab_set_sampler(s->f, q_sampler, q);
	CU_ASSERT_FATAL(fab_run(s->f, &d) == 0);
	fab_totals(s->f, &s->t);
	dump("star", s->f);
}

static void test_dctcp_queue(void)
{
	/* K = 30 KB x 200 Gb/s / 10 Gb/s (numbers.md): a step at 600 KB */
	static const char *const dctcp[] = { "tcp.cc=dctcp", "eth.ecn=on", "eth.kmin=600000",
					     "eth.kmax=600000", "eth.pmax=1", NULL };
	static const char *const cubic[] = { "tcp.cc=cubic", "eth.ecn=off", NULL };
	uint64_t bytes = (test_quick() ? 8 : 32) * MiB;
	uint32_t k = 600000, qd, qc;
	struct star d, c;
	double gd;

	/* CUBIC's queue is sampled while the flows send (the 32 MiB take 5.5
	 * ms at the link rate), not through a retransmission timeout's wait
	 * at the end (no SACK or tail-loss probe here: docs/tcp.md) */
	struct qsample qs = { .from = 500 * US }, qcs = { .from = 500 * US, .to = 5 * MS };

	star_run_sampled(&d, 4, bytes, dctcp, &qs);
	star_run_sampled(&c, 4, bytes, cubic, &qcs);
	qd = queue_to_h0(&d);
	qc = queue_to_h0(&c);
	gd = 4.0 * bytes * 8 / (d.t.end_ps * 1e-12);
	if (getenv("IBFAB_TEST_VERBOSE"))
		fprintf(stderr, "4 flows: dctcp queue high %u B (K %u), after 0.5 ms mean %.0f max %u B, "
			"%.1f Gb/s, %llu marks; cubic queue high %u B, mean %.0f, %llu drops, %.3f ms\n",
			qd, k, qs.sum / (double)qs.n, qs.max, gd / 1e9,
			(unsigned long long)d.t.ecn_marks, qc, qcs.sum / (double)qcs.n,
			(unsigned long long)c.t.drops_congestion, c.t.end_ps / 1e9);
	CU_ASSERT(d.t.ecn_marks > 0);
	CU_ASSERT_EQUAL(d.t.drops_congestion, 0);
	CU_ASSERT(qs.n > 100);
	/* after slow start (whose overshoot reaches 2 K), the queue stays at K:
	 * on average within 25%, and never 25% above it */
	CU_ASSERT(qs.sum / (double)qs.n > 0.75 * k && qs.sum / (double)qs.n < 1.25 * k);
	CU_ASSERT(qs.max < 1.25 * k);
	/* CUBIC on the same buffer fills it until it drops, and holds more
	 * than DCTCP's K, and more than DCTCP's queue, on average while it
	 * sends. How much more depends on which packets the full buffer
	 * drops: without SACK a flow that lost several packets of a window
	 * spends a round trip on each (NewReno), or waits out a timeout, and
	 * the queue drains meanwhile (1.2 K here; 1.9 K when one flow's
	 * losses led to a timeout, while the others kept the queue full) */
	CU_ASSERT(c.t.drops_congestion > 0);
	if (!test_quick()) {
		CU_ASSERT(qcs.sum / (double)qcs.n > 1.1 * k);
		CU_ASSERT(qcs.sum / (double)qcs.n > 1.1 * qs.sum / (double)qs.n);
	}
	CU_ASSERT(gd > 0.95 * 200e9 * 4096 / (4096 + TCP_OVH));
	CU_ASSERT(qc > 2 * k);
	star_free(&d);
	star_free(&c);
}

/*
 * Three hosts send 16 MiB each to a fourth. Each connection has a core of
 * its own at each end: the three flows run at one core's rate each (33.9
 * Gb/s, 3.96 ms). tcp.cores=1 puts the receiver's three connections on one
 * core, whose thread copies every segment of all three: at 6 GB/s when
 * none is still in the cache (tcp.copy_hot_gbps=0), 48 Gb/s together, 8.4
 * ms. With the cache (13.6 GB/s while the NIC has written less than
 * tcp.ddio_bytes since) the reader keeps up with 102 Gb/s only while it
 * is not behind: once behind, the data it copies has left the cache, it
 * falls further behind, and the run takes as long as its copies do.
 */
static void test_cores(void)
{
	static const char *const own[] = { "tcp.mss=1448", "tcp.copy_gbps=6", NULL };
	static const char *const one[] = { "tcp.mss=1448", "tcp.copy_gbps=6", "tcp.cores=1",
					   "tcp.copy_hot_gbps=0", NULL };
	static const char *const hot[] = { "tcp.mss=1448", "tcp.copy_gbps=6", "tcp.cores=1", NULL };
	uint64_t bytes = 16 * MiB;
	struct star a, b, c;
	struct fab_kernel k = { 0 };
	double ta, tb, tc, one_core = (double)bytes * 8 / 33.94e9 * 1e12;

	star_run(&a, 3, bytes, own);
	star_run(&b, 3, bytes, one);
	star_run(&c, 3, bytes, hot);
	ta = (double)a.t.end_ps;
	tb = (double)b.t.end_ps;
	tc = (double)c.t.end_ps;
	fab_host_kernel(c.f, c.hosts[0], &k);
	if (getenv("IBFAB_TEST_VERBOSE"))
		fprintf(stderr, "3 flows into one host: %.3f ms on their own cores, %.3f ms on one "
			"(%.3f ms with the cache: %.1f of %.1f MiB hot, copies %.3f ms)\n",
			ta / 1e9, tb / 1e9, tc / 1e9, (double)k.cached_copy_bytes / MiB,
			(double)k.cpu_copy_bytes / MiB, (double)k.copy_ps / 1e9);
	CU_ASSERT_DOUBLE_EQUAL(ta / one_core, 1, 0.03);
	CU_ASSERT_DOUBLE_EQUAL(tb / (3 * (double)bytes / 6e9 * 1e12), 1, 0.05);
	CU_ASSERT(k.cached_copy_bytes > 0 && k.cached_copy_bytes < k.cpu_copy_bytes);
	CU_ASSERT(tc < tb && tc > ta);
	CU_ASSERT_DOUBLE_EQUAL(tc / (double)k.copy_ps, 1, 0.05);
	star_free(&a);
	star_free(&b);
	star_free(&c);
}

/* ---- the verbs API over TCP, with real bytes and losses -------------- */

#define ALL_ACCESS (HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE | HCA_ACCESS_REMOTE_READ)

struct scribble {
	uint8_t *buf;
	size_t len;
	int sends;
};

/* At each send completion, reuse the source buffer at once (a socket lets
 * the program do so once send() has returned). */
static void scribble_cq(struct hca_cq *cq, void *ctx)
{
	struct scribble *sc = ctx;

	(void)cq;
	sc->sends++;
	memset(sc->buf, 0xee, sc->len);
}

static void connect_qp(struct hca_qp *qp, struct hca *peer, uint32_t dqpn)
{
	struct hca_qp_attr at = { .qp_state = HCA_QPS_INIT };

	CU_ASSERT_FATAL(hca_modify_qp(qp, &at, HCA_QP_STATE) == 0);
	at = (struct hca_qp_attr){ .qp_state = HCA_QPS_RTR, .path_mtu = 4096,
				   .dlid = hca_lid(peer), .dest_qp_num = dqpn,
				   .max_dest_rd_atomic = 4 };
	CU_ASSERT_FATAL(hca_modify_qp(qp, &at, HCA_QP_STATE | HCA_QP_PATH_MTU | HCA_QP_AV |
				      HCA_QP_DEST_QPN | HCA_QP_RQ_PSN |
				      HCA_QP_MAX_DEST_RD_ATOMIC) == 0);
	at = (struct hca_qp_attr){ .qp_state = HCA_QPS_RTS, .max_rd_atomic = 4 };
	CU_ASSERT_FATAL(hca_modify_qp(qp, &at, HCA_QP_STATE | HCA_QP_SQ_PSN |
				      HCA_QP_MAX_QP_RD_ATOMIC) == 0);
}

static void test_verbs_bytes(void)
{
	const size_t wlen = 1 << 20, slen = 64 << 10, rlen = 256 << 10, len = 2 << 20;
	struct net n;
	struct fab_msgs m = { 0 };
	struct fab_params p;
	struct sim_diag d;
	struct fab *f;
	struct fab_totals t;
	int na, nb;
	uint8_t *a = calloc(1, len), *b = calloc(1, len), *expect = malloc(len);
	struct scribble sc = { 0 };
	struct hca_wc wc[8];
	int k;

	CU_ASSERT_FATAL(a && b && expect);
	tf_chain(&n, 1, &na, &nb);
	tf_params(&p, "hdr");
	tf_set(&p, "fabric=tcp");
	wire_host(&p);
	tf_set(&p, "link.drop_prob=0.02");	/* losses: fast retransmits, RTOs, reordering */
	tf_set(&p, "tcp.min_rto_us=1000");
	f = fab_create(&n, &p, &m, 7, &d);
	CU_ASSERT_FATAL(f != NULL);
	struct hca *ha = fab_hca(f, na), *hb = fab_hca(f, nb);
	struct hca_mr *ma = hca_reg_mr(ha, a, (uintptr_t)a, len, ALL_ACCESS, HCA_MEM_HOST);
	struct hca_mr *mb = hca_reg_mr(hb, b, (uintptr_t)b, len, ALL_ACCESS, HCA_MEM_HOST);
	struct hca_cq *ca = hca_create_cq(ha, 64, scribble_cq, &sc);
	struct hca_cq *cb = hca_create_cq(hb, 64, NULL, NULL);
	struct hca_qp_init_attr ia = { .qp_type = HCA_QPT_RC, .send_cq = ca, .recv_cq = ca,
				       .cap = { .max_send_wr = 16, .max_recv_wr = 16 } };
	struct hca_qp *qa = hca_create_qp(ha, &ia), *qb;

	ia.send_cq = ia.recv_cq = cb;
	qb = hca_create_qp(hb, &ia);
	CU_ASSERT_FATAL(ma && mb && ca && cb && qa && qb);
	connect_qp(qa, hb, hca_qp_num(qb));
	connect_qp(qb, ha, hca_qp_num(qa));
	for (size_t i = 0; i < len; i++)
		a[i] = (uint8_t)(i * 7 + 3), b[i] = (uint8_t)(i * 13 + 1);
	memcpy(expect, a, len);
	struct hca_recv_wr r = { .wr_id = 9, .sg = { (uintptr_t)b + wlen, (uint32_t)slen, mb->lkey } };
	struct hca_send_wr w = { .wr_id = 1, .opcode = HCA_WR_RDMA_WRITE,
				 .send_flags = HCA_SEND_SIGNALED,
				 .sg = { (uintptr_t)a, (uint32_t)wlen, ma->lkey },
				 .remote_addr = (uintptr_t)b, .rkey = mb->rkey };

	CU_ASSERT_EQUAL(hca_post_recv(qb, &r), 0);
	CU_ASSERT_EQUAL(hca_post_send(qa, &w), 0);
	w = (struct hca_send_wr){ .wr_id = 2, .opcode = HCA_WR_SEND, .send_flags = HCA_SEND_SIGNALED,
				  .sg = { (uintptr_t)a + wlen, (uint32_t)slen, ma->lkey } };
	CU_ASSERT_EQUAL(hca_post_send(qa, &w), 0);
	/* READ B's untouched upper half into A's [1.5 MiB, 1.75 MiB) */
	w = (struct hca_send_wr){ .wr_id = 3, .opcode = HCA_WR_RDMA_READ, .send_flags = HCA_SEND_SIGNALED,
				  .sg = { (uintptr_t)a + wlen + wlen / 2, (uint32_t)rlen, ma->lkey },
				  .remote_addr = (uintptr_t)b + wlen + wlen / 2, .rkey = mb->rkey };
	memcpy(expect + wlen + wlen / 2, b + wlen + wlen / 2, rlen);
	CU_ASSERT_EQUAL(hca_post_send(qa, &w), 0);
	/* no atomics over a socket */
	w = (struct hca_send_wr){ .wr_id = 4, .opcode = HCA_WR_ATOMIC_FETCH_AND_ADD,
				  .sg = { (uintptr_t)a, 8, ma->lkey }, .remote_addr = (uintptr_t)b,
				  .rkey = mb->rkey };
	CU_ASSERT_EQUAL(hca_post_send(qa, &w), -EOPNOTSUPP);
	/* the program reuses [0, 1 MiB + 64 KiB) at the first send completion */
	sc.buf = a;
	sc.len = wlen + slen;
	CU_ASSERT_EQUAL(fab_run(f, &d), 0);
	fab_totals(f, &t);
	/* every byte arrived, although the source was overwritten in flight */
	CU_ASSERT_EQUAL(memcmp(b, expect, wlen), 0);
	CU_ASSERT_EQUAL(memcmp(b + wlen, expect + wlen, slen), 0);
	CU_ASSERT_EQUAL(memcmp(a + wlen + wlen / 2, expect + wlen + wlen / 2, rlen), 0);
	CU_ASSERT_EQUAL(sc.sends, 3);
	k = hca_poll_cq(ca, 8, wc);
	CU_ASSERT_EQUAL(k, 3);
	for (int i = 0; i < k; i++) {
		CU_ASSERT_EQUAL(wc[i].status, HCA_WC_SUCCESS);
		CU_ASSERT_EQUAL(wc[i].wr_id, (uint64_t)i + 1);
	}
	k = hca_poll_cq(cb, 8, wc);
	CU_ASSERT_EQUAL(k, 1);
	CU_ASSERT_EQUAL(wc[0].wr_id, 9);
	CU_ASSERT_EQUAL(wc[0].opcode, HCA_WC_RECV);
	CU_ASSERT_EQUAL(wc[0].byte_len, slen);
	/* the losses were repaired by TCP */
	CU_ASSERT(t.drops_corrupt > 0);
	CU_ASSERT(t.tcp_retransmits > 0);
	if (getenv("IBFAB_TEST_VERBOSE"))
		fprintf(stderr, "verbs over tcp with 2%% loss: %llu drops, %llu retransmits, %llu FR, "
			"%llu RTO, %.3f ms\n", (unsigned long long)t.drops_corrupt,
			(unsigned long long)t.tcp_retransmits, (unsigned long long)t.tcp_fast_recoveries,
			(unsigned long long)t.tcp_timeouts, fab_engine(f)->now / 1e9);
	fab_destroy(f);
	fab_msgs_free(&m);
	net_free(&n);
	free(a);
	free(b);
	free(expect);
}

static const struct test_case tests[] = {
	{ "slow start doubles per round trip", test_slow_start },
	{ "NewReno: avoidance, halving, timeout", test_newreno },
	{ "CUBIC: W(t) = C(t-K)^3 + W_max, beta, fast convergence", test_cubic },
	{ "DCTCP: alpha and the alpha/2 cut", test_dctcp },
	{ "RTO estimator (RFC 6298)", test_rto },
	{ "host-stack cost arithmetic", test_host_costs },
	{ "wire sizes and tcp.* keys", test_wire_and_params },
	{ "a long flow: link rate minus header overhead, vs RoCE and IB", test_long_flow },
	{ "one flow at the defaults: bound by one core", test_one_core },
	{ "a connection's own core, or tcp.cores shared", test_cores },
	{ "small-message latency: RDMA's plus the host stack", test_small_latency },
	{ "GPU memory over TCP: two staging copies, GPUDirect or not", test_gpu_staging },
	{ "CPU time per GiB: the host stack's closed form", test_cpu_per_gib },
	{ "32-to-1 incast on shallow buffers: RTO-driven tail", test_incast },
	{ "DCTCP holds the queue near K", test_dctcp_queue },
	{ "verbs over TCP: bytes, completions, losses repaired", test_verbs_bytes },
	{ NULL, NULL },
};

TEST_MAIN("tcp", tests)
