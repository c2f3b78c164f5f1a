/* SPDX-License-Identifier: MIT */
/*
 * test_perftest.c - perftest sweeps (--traffic 'perftest:...') from spec to
 * table, on two hosts behind one HDR switch with the host model on:
 *  - the spec's layout: sizes (MIN..MAX doubling, S1:S2 lists), perftest's
 *    defaults and clamps (iters, tx_depth, cq_mod), the dependencies that
 *    make the send window and the ping-pong;
 *  - the fabric's after_cqe dependency: posted at the dependency's CQE,
 *    refused across hosts;
 *  - bandwidth: the large-message BW average within 1% of link rate x
 *    payload efficiency on PCIe Gen4, and of the PCIe payload rate on Gen3,
 *    and peak >= average;
 *  - latency: the 2-byte WRITE and SEND latency equals the one-way closed
 *    form assembled from the host model's calls within 1%, and an idle
 *    fabric gives t_min == t_max, no deviation;
 *  - the window: never more than tx_depth WRs posted and not completed,
 *    the window is used in full, and each refill comes with the polled
 *    completion perftest's loop would wait for;
 *  - the table: perftest's header strings, rows whose columns parse back
 *    to the figures, unfinished sizes left out and counted;
 *  - malformed specs: refused with a message naming what is wrong, at the
 *    right column, with the message list untouched.
 */
#define _GNU_SOURCE	/* open_memstream */
#include <CUnit/CUnit.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/fabric/fab.h"
#include "models/host/host.h"
#include "models/link/link.h"
#include "tests/unit/test_main.h"
#include "tests/unit/util_fabric.h"
#include "tools/cli_perftest.h"
#include "traces/trace_spec.h"

/* LRH 8 + BTH 12 + extension headers + payload padded to 4 + ICRC 4 + VCRC 2 */
static double pkt_bytes(uint64_t payload, uint32_t extra)
{
	return 8 + 12 + extra + (double)((payload + 3) / 4 * 4) + 4 + 2;
}

/* An RDMA WRITE's wire bytes: MTU packets, the RETH (16 B) on the first. */
static double write_wire_bytes(uint64_t len, uint32_t mtu)
{
	uint64_t n = (len + mtu - 1) / mtu;

	return (double)n * pkt_bytes(0, 0) + (double)len + 16 + (double)((4 - len % 4) % 4);
}

struct pt_run {
	struct net n;
	struct fab_params p;
	struct fab_msgs m;
	struct trace_perftest pt;
	struct fab *f;
	int h0, h1;
	struct cli_perftest_row rows[TRACE_PERFTEST_MAX_SIZES];
};

/* Parse `spec` on h0 - sw0 - h1 (HDR, host model on, `sets` applied), run, tabulate. */
static void pt_run(struct pt_run *r, const char *spec, const char *const *sets)
{
	struct sim_diag d;

	memset(r, 0, sizeof(*r));
	tf_chain(&r->n, 1, &r->h0, &r->h1);
	tf_params(&r->p, "hdr");
	tf_set(&r->p, "host.model=on");
	for (; sets && *sets; sets++)
		tf_set(&r->p, *sets);
	if (trace_spec_parse_sweep(spec, &r->n, 1, &r->m, &r->pt, &d))
		fprintf(stderr, "\n  %s: %s\n", spec, d.msg);
	CU_ASSERT_FATAL(r->pt.valid);
	r->f = tf_run(&r->n, &r->p, &r->m);
	CU_ASSERT_FATAL(cli_perftest_rows(&r->pt, &r->m, r->rows) == 0);
}

static void pt_free(struct pt_run *r)
{
	fab_destroy(r->f);
	fab_msgs_free(&r->m);
	net_free(&r->n);
}

/* ---- the spec's layout ---------------------------------------------------- */

static int parse(const struct net *n, const char *spec, struct fab_msgs *m,
		 struct trace_perftest *pt)
{
	struct sim_diag d;
	int rc = trace_spec_parse_sweep(spec, n, 1, m, pt, &d);

	if (rc)
		fprintf(stderr, "\n  %s: %s\n", spec, d.msg);
	return rc;
}

static void test_layout(void)
{
	struct net n;
	struct fab_msgs m = { 0 };
	struct trace_perftest pt;
	int h0, h1;

	tf_chain(&n, 1, &h0, &h1);

	/* perftest -a: 2 B to 8 MiB doubling; ib_write_bw's defaults */
	CU_ASSERT_FATAL(parse(&n, "perftest:sizes=2..8M", &m, &pt) == 0);
	CU_ASSERT(pt.valid && pt.range);
	CU_ASSERT_EQUAL(pt.nsizes, 23);
	CU_ASSERT_EQUAL(pt.sizes[0], 2);
	CU_ASSERT_EQUAL(pt.sizes[22], 8u << 20);
	CU_ASSERT_EQUAL(pt.iters, 5000);
	CU_ASSERT_EQUAL(pt.tx_depth, 128);
	CU_ASSERT_EQUAL(pt.cq_mod, 100);
	CU_ASSERT_EQUAL(pt.per_iter, 1);
	CU_ASSERT_EQUAL(pt.op, FAB_OP_WRITE);
	CU_ASSERT_EQUAL(pt.mode, TRACE_PERFTEST_BW);
	CU_ASSERT_EQUAL(pt.src, h0);
	CU_ASSERT_EQUAL(pt.dst, h1);
	CU_ASSERT_EQUAL(pt.first, 0);
	CU_ASSERT_EQUAL(pt.count, 23 * 5000);
	CU_ASSERT_EQUAL_FATAL(m.n, 23 * 5000);
	CU_ASSERT_EQUAL(m.nstreams, 1);
	/* the first tx_depth WRs go at once; WR 128 waits for the polled CQE
	 * of WR 99 (ccnt 100 >= 128 - 128 + 1); WR 228 for WR 199 */
	CU_ASSERT_EQUAL(m.v[127].after, -1);
	CU_ASSERT_EQUAL(m.v[128].after, 99);
	CU_ASSERT_TRUE(m.v[128].after_cqe);
	CU_ASSERT_EQUAL(m.v[227].after, 99);
	CU_ASSERT_EQUAL(m.v[228].after, 199);
	/* the next size starts once the last WR of this one has completed */
	CU_ASSERT_EQUAL(m.v[5000].after, 4999);
	CU_ASSERT_EQUAL(m.v[5127].after, 4999);
	CU_ASSERT_EQUAL(m.v[5128].after, 5099);
	CU_ASSERT_EQUAL(m.v[5000].bytes, 4);
	for (size_t i = 0; i < m.n; i++)
		CU_ASSERT(m.v[i].after < 0 ? !m.v[i].after_cqe :
			  m.v[i].after_cqe && (size_t)m.v[i].after < i);
	fab_msgs_free(&m);

	/* a single size above 8 KiB without -a: CQ moderation off, as perftest */
	CU_ASSERT_FATAL(parse(&n, "perftest:sizes=64K", &m, &pt) == 0);
	CU_ASSERT_EQUAL(pt.cq_mod, 1);
	CU_ASSERT_FALSE(pt.range);
	fab_msgs_free(&m);
	CU_ASSERT_FATAL(parse(&n, "perftest:sizes=64K..64K", &m, &pt) == 0);
	CU_ASSERT_EQUAL(pt.cq_mod, 100);
	fab_msgs_free(&m);
	/* tx_depth <= iters, cq_mod <= tx_depth */
	CU_ASSERT_FATAL(parse(&n, "perftest:sizes=64,iters=10,tx_depth=50", &m, &pt) == 0);
	CU_ASSERT_EQUAL(pt.tx_depth, 10);
	CU_ASSERT_EQUAL(pt.cq_mod, 10);
	fab_msgs_free(&m);

	/* MIN..MAX doubles while it stays <= MAX; lists keep their order */
	CU_ASSERT_FATAL(parse(&n, "perftest:sizes=3..100,iters=5", &m, &pt) == 0);
	CU_ASSERT_EQUAL(pt.nsizes, 6);
	CU_ASSERT_EQUAL(pt.sizes[5], 96);
	fab_msgs_free(&m);
	CU_ASSERT_FATAL(parse(&n, "perftest:sizes=1M:64:4KiB,iters=5,src=h1", &m, &pt) == 0);
	CU_ASSERT_EQUAL(pt.nsizes, 3);
	CU_ASSERT_EQUAL(pt.sizes[0], 1 << 20);
	CU_ASSERT_EQUAL(pt.sizes[1], 64);
	CU_ASSERT_EQUAL(pt.sizes[2], 4096);
	CU_ASSERT_EQUAL(pt.src, h1);
	CU_ASSERT_EQUAL(pt.dst, h0);	/* the first host other than src */
	fab_msgs_free(&m);

	/* ib_write_lat: ping r, then pong r once the ping has landed */
	CU_ASSERT_FATAL(parse(&n, "perftest:sizes=2:4,mode=lat", &m, &pt) == 0);
	CU_ASSERT_EQUAL(pt.iters, 1000);
	CU_ASSERT_EQUAL(pt.per_iter, 2);
	CU_ASSERT_EQUAL_FATAL(m.n, 2 * 2 * 1000);
	CU_ASSERT_EQUAL(m.nstreams, 2);
	CU_ASSERT_EQUAL(m.v[0].after, -1);
	CU_ASSERT_EQUAL(m.v[1].after, 0);
	CU_ASSERT_EQUAL(m.v[2].after, 1);
	CU_ASSERT_EQUAL(m.v[2000].after, 1999);	/* size 4 after the last pong of size 2 */
	CU_ASSERT(m.v[1].src == (uint32_t)h1 && m.v[1].dst == (uint32_t)h0);
	for (size_t i = 0; i < m.n; i++)
		CU_ASSERT_FALSE(m.v[i].after_cqe);
	fab_msgs_free(&m);

	/* ib_read_lat: each READ posted at the completion of the one before */
	CU_ASSERT_FATAL(parse(&n, "perftest:op=read,sizes=2,mode=lat,iters=7", &m, &pt) == 0);
	CU_ASSERT_EQUAL(pt.per_iter, 1);
	CU_ASSERT_EQUAL_FATAL(m.n, 7);
	for (size_t i = 1; i < m.n; i++)
		CU_ASSERT(m.v[i].after == (int32_t)i - 1 && m.v[i].after_cqe &&
			  m.v[i].op == FAB_OP_READ);
	fab_msgs_free(&m);

	/* appended to a list: indexes and streams continue */
	struct fab_msg one = { .src = (uint32_t)h0, .dst = (uint32_t)h1, .bytes = 1, .after = -1 };

	CU_ASSERT_FATAL(fab_msgs_add(&m, &one) == 0);
	CU_ASSERT_FATAL(parse(&n, "perftest:sizes=2,iters=200", &m, &pt) == 0);
	CU_ASSERT_EQUAL(pt.first, 1);
	CU_ASSERT_EQUAL(m.v[1].stream, 1);
	CU_ASSERT_EQUAL(m.v[129].after, 100);	/* WR 128 of the sweep -> its WR 99 */
	fab_msgs_free(&m);

	/* another pattern leaves the description invalid */
	CU_ASSERT_FATAL(parse(&n, "p2p:src=h0,dst=h1,size=1", &m, &pt) == 0);
	CU_ASSERT_FALSE(pt.valid);
	fab_msgs_free(&m);
	net_free(&n);
}

/* ---- the fabric's completion dependency ----------------------------------- */

static void test_after_cqe(void)
{
	struct net n;
	struct fab_params p;
	struct fab_msgs m = { 0 };
	struct sim_diag d;
	int h0, h1;

	tf_chain(&n, 1, &h0, &h1);
	tf_params(&p, "hdr");
	tf_set(&p, "host.model=on");
	struct fab_msg a = { .src = (uint32_t)h0, .dst = (uint32_t)h1, .bytes = 65536,
			     .after = -1 };
	struct fab_msg b = a, c = a, e = a;

	b.after = 0;
	b.after_cqe = true;
	c.after = 0;
	c.after_cqe = true;
	c.after_delay = 1000 * SIM_NS;
	e.after = 0;		/* a plain dependency: delivered, not completed */
	e.src = (uint32_t)h1;
	e.dst = (uint32_t)h0;
	e.stream = 1;
	CU_ASSERT_FATAL(!fab_msgs_add(&m, &a) && !fab_msgs_add(&m, &b) &&
			!fab_msgs_add(&m, &c) && !fab_msgs_add(&m, &e));
	struct fab *f = tf_run(&n, &p, &m);

	CU_ASSERT(m.v[0].cqe && m.v[0].completed > m.v[0].end);
	CU_ASSERT_EQUAL(m.v[1].start, m.v[0].completed);
	CU_ASSERT_EQUAL(m.v[2].start, m.v[0].completed + 1000 * SIM_NS);
	CU_ASSERT_EQUAL(m.v[3].start, m.v[0].end);
	CU_ASSERT(m.v[1].finished && m.v[2].finished && m.v[3].finished);
	fab_destroy(f);

	/* a completion happens at the requester: waiting for it elsewhere is refused */
	m.v[3].after_cqe = true;
	CU_ASSERT_PTR_NULL(fab_create(&n, &p, &m, 1, &d));
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "message 3: waits for message 0 completed at another host"));
	fab_msgs_free(&m);
	net_free(&n);
}

/* ---- bandwidth -------------------------------------------------------------- */

/*
 * READ is checked at 8 MiB: the model's responder pays its DMA read latency
 * (about 0.5 us) once per READ before the responses flow, which is 1.2% of
 * a 1 MiB READ at HDR but 0.15% of an 8 MiB one.
 */
static void test_bw_link_rate(void)
{
	static const struct { const char *op; uint64_t size; } cases[] = {
		{ "write", 1 << 20 }, { "send", 1 << 20 }, { "read", 8 << 20 },
	};

	for (unsigned o = 0; o < SIM_ARRAY_SIZE(cases); o++) {
		uint64_t S = cases[o].size;
		struct pt_run r;
		char spec[128];

		snprintf(spec, sizeof(spec), "perftest:op=%s,sizes=64K:%" PRIu64 ",iters=%d",
			 cases[o].op, S, S > (1 << 20) ? 10 : 40);
		pt_run(&r, spec, NULL);
		double eff = (double)S / write_wire_bytes(S, r.p.mtu);
		double link = 200.0 * eff;	/* Gb/s of payload at 4x HDR */
		const struct cli_perftest_row *big = &r.rows[1];

		fprintf(stderr, "\n  %s bw %" PRIu64 " B: average %.3f, peak %.3f Gb/s; link x efficiency %.3f",
			cases[o].op, S, big->bw_avg_gbps, big->bw_peak_gbps, link);
		CU_ASSERT(big->ok && r.rows[0].ok);
		CU_ASSERT(fabs(big->bw_avg_gbps - link) / link <= 0.01);
		CU_ASSERT(big->bw_peak_gbps >= big->bw_avg_gbps);
		CU_ASSERT(big->bw_peak_gbps <= link * 1.001);
		/* MsgRate x bytes is the average */
		CU_ASSERT(fabs(big->msg_rate_mpps * 1e6 * (double)S * 8 / 1e9 - big->bw_avg_gbps) <=
			  1e-9 * link);
		pt_free(&r);
	}
}

/* PCIe Gen3 x16 (14.3 GB/s of payload) is narrower than HDR: it sets the pace. */
static void test_bw_pcie_gen3(void)
{
	static const char *const sets[] = { "host.pcie_gen=3", NULL };
	static const char *const ops[] = { "write", "read" };

	for (unsigned o = 0; o < 2; o++) {
		struct pt_run r;
		char spec[128];

		snprintf(spec, sizeof(spec), "perftest:op=%s,sizes=1M,iters=40,cq_mod=10", ops[o]);
		pt_run(&r, spec, sets);
		double pcie = host_pcie_payload_Bps(&r.p.host) * 8 / 1e9;

		fprintf(stderr, "\n  %s bw on Gen3: average %.3f Gb/s, PCIe payload %.3f Gb/s",
			ops[o], r.rows[0].bw_avg_gbps, pcie);
		CU_ASSERT(r.rows[0].ok);
		CU_ASSERT(fabs(r.rows[0].bw_avg_gbps - pcie) / pcie <= 0.01);
		pt_free(&r);
	}
}

/* ---- latency ---------------------------------------------------------------- */

/*
 * One way, 2 bytes: the post, the HCA, the packet's serialisation once
 * (cut-through), two cables and the switch, and the DMA write of the data
 * at the receiver. Inline (under hca.max_inline), the CPU writes the WQE
 * with the data in it by BlueFlame with the doorbell; otherwise the HCA
 * fetches the WQE, then reads the 2 bytes, overlapping its own pipeline
 * (hca.latency_ns). ib_write_lat's other side polls that memory and
 * answers at once; ib_send_lat's polls its receive completion, so a SEND
 * also waits for the CQE written behind the data (send_cqe).
 */
static double one_way_2b(const struct fab_params *p, uint32_t extra, bool send_cqe)
{
	struct host hs, hr;
	double rate = link_data_rate_bps((struct link_rate){ p->lanes, p->speed });
	sim_time_t ready, hca = (sim_time_t)p->hca_latency_ns * SIM_NS;
	double wire = pkt_bytes(2, extra) * 8 / rate * 1e12;
	double hop = 2 * p->cable_m * p->ps_per_m + p->sw_latency_ns * 1e3;
	bool inl = p->hca_max_inline >= 2;

	host_init(&hs, &p->host);
	host_init(&hr, &p->host);
	ready = host_post(&hs, 0, inl ? 2 : 0, HOST_POST_ALONE);
	if (!inl) {
		sim_time_t data = host_dma_read(&hs, ready, HCA_MEM_HOST, 2);

		ready = data > ready + hca ? data : ready + hca;
	} else {
		ready += hca;
	}
	sim_time_t at = (sim_time_t)((double)ready + wire + hop);
	sim_time_t seen = host_dma_write(&hr, at, HCA_MEM_HOST, 2);

	/* the CQE is written as the packet lands, behind its data */
	return (double)(send_cqe ? host_cqe(&hr, at, seen) : seen);
}

static void test_lat_closed_form(void)
{
	static const char *const no_inline[] = { "hca.max_inline=0", NULL };
	static const struct { const char *op; uint32_t extra; bool send; const char *const *sets; }
	cases[] = {
		{ "write", 16, false, NULL },	/* RETH */
		{ "send", 0, true, NULL },
		{ "write", 16, false, no_inline },
	};

	for (unsigned k = 0; k < SIM_ARRAY_SIZE(cases); k++) {
		struct pt_run r;
		char spec[128];

		snprintf(spec, sizeof(spec), "perftest:op=%s,sizes=2:4096:64K,mode=lat,iters=9", cases[k].op);
		pt_run(&r, spec, cases[k].sets);
		double want = one_way_2b(&r.p, cases[k].extra, cases[k].send) / 1e6;	/* us */
		const struct cli_perftest_row *two = &r.rows[0];

		fprintf(stderr, "\n  %s lat 2 B%s: t_typical %.4f us, closed form %.4f us",
			cases[k].op, cases[k].sets ? " (not inline)" : "", two->t_typical, want);
		CU_ASSERT(two->ok);
		CU_ASSERT(fabs(two->t_typical - want) / want <= 0.01);
		for (unsigned s = 0; s < 3; s++) {
			const struct cli_perftest_row *x = &r.rows[s];

			/* nothing else on the fabric: every round trip is the same */
			CU_ASSERT(x->ok);
			CU_ASSERT_DOUBLE_EQUAL(x->t_min, x->t_max, 0);
			CU_ASSERT_DOUBLE_EQUAL(x->t_min, x->t_typical, 0);
			CU_ASSERT_DOUBLE_EQUAL(x->t_min, x->t_avg, 0);
			CU_ASSERT_DOUBLE_EQUAL(x->t_stdev, 0, 0);
			CU_ASSERT_DOUBLE_EQUAL(x->t_p99, x->t_min, 0);
			CU_ASSERT_DOUBLE_EQUAL(x->t_p999, x->t_min, 0);
			if (s)
				CU_ASSERT(x->t_min > r.rows[s - 1].t_min);
		}
		pt_free(&r);
	}
}

/* READ latency is the whole round trip (perftest's rtt_factor 1): more than a WRITE's one way. */
static void test_lat_read(void)
{
	struct pt_run r, w;

	pt_run(&r, "perftest:op=read,sizes=2,mode=lat,iters=6", NULL);
	pt_run(&w, "perftest:op=write,sizes=2,mode=lat,iters=6", NULL);
	CU_ASSERT(r.rows[0].ok && w.rows[0].ok);
	CU_ASSERT_DOUBLE_EQUAL(r.rows[0].t_min, r.rows[0].t_max, 0);
	/* one READ = request + response + the CQE poll: the gap between posts */
	CU_ASSERT_DOUBLE_EQUAL(r.rows[0].t_min * 1e6,
			       (double)(r.m.v[1].start - r.m.v[0].start), 0.5);
	CU_ASSERT_EQUAL(r.m.v[1].start, r.m.v[0].completed);
	CU_ASSERT(r.rows[0].t_min > 1.5 * w.rows[0].t_min);
	pt_free(&r);
	pt_free(&w);
}

/* ---- the send window -------------------------------------------------------- */

struct ev {
	sim_time_t t;
	int d;		/* +1 posted, -1 completed */
};

static int ev_cmp(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;

	/* at one instant a completion frees its slot before the post it allows */
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->d - y->d;
}

static void check_window(const char *spec, uint32_t depth, uint32_t cqm)
{
	struct pt_run r;
	struct ev *ev;
	int cur = 0, hi = 0;

	pt_run(&r, spec, NULL);
	CU_ASSERT_EQUAL(r.pt.tx_depth, depth);
	CU_ASSERT_EQUAL(r.pt.cq_mod, cqm);
	ev = calloc(2 * r.m.n, sizeof(*ev));
	CU_ASSERT_FATAL(ev != NULL);
	for (size_t i = 0; i < r.m.n; i++) {
		CU_ASSERT(r.m.v[i].finished && r.m.v[i].status == 0);
		ev[2 * i] = (struct ev){ r.m.v[i].start, +1 };
		ev[2 * i + 1] = (struct ev){ r.m.v[i].completed, -1 };
	}
	qsort(ev, 2 * r.m.n, sizeof(*ev), ev_cmp);
	for (size_t i = 0; i < 2 * r.m.n; i++) {
		cur += ev[i].d;
		if (cur > hi)
			hi = cur;
	}
	fprintf(stderr, "\n  %s: at most %d WRs outstanding", spec, hi);
	CU_ASSERT(hi <= (int)depth);
	CU_ASSERT_EQUAL(hi, (int)depth);	/* and the window is used */
	/* each refill is posted when perftest's loop would poll its CQE */
	for (uint32_t k = 0; k < r.pt.nsizes; k++) {
		size_t base = (size_t)k * r.pt.iters;

		for (uint32_t i = 0; i < r.pt.iters; i++) {
			const struct fab_msg *x = &r.m.v[base + i];

			sim_time_t want = i >= depth ?
					  r.m.v[base + (i - depth + cqm) / cqm * cqm - 1].completed :
					  k ? r.m.v[base - 1].completed : 0;

			CU_ASSERT_EQUAL(x->start, want);
			if (i)
				CU_ASSERT(x->start >= x[-1].start);	/* posted in order */
		}
	}
	free(ev);
	pt_free(&r);
}

static void test_tx_depth(void)
{
	check_window("perftest:op=write,sizes=4K:64K,iters=60,tx_depth=8,cq_mod=3", 8, 3);
	check_window("perftest:op=read,sizes=64K,iters=30,tx_depth=5", 5, 1);
	check_window("perftest:op=send,sizes=2:8K,iters=50,tx_depth=16", 16, 16);
}

/* ---- the figures against perftest's own arithmetic ------------------------ */

/* A finished message with the given post and completion times. */
static void synth(struct fab_msgs *m, sim_time_t post, sim_time_t done)
{
	struct fab_msg x = { .src = 0, .dst = 1, .bytes = 4096, .after = -1 };

	CU_ASSERT_FATAL(fab_msgs_add(m, &x) == 0);
	m->v[m->n - 1].start = post;
	m->v[m->n - 1].end = m->v[m->n - 1].completed = done;
	m->v[m->n - 1].done = m->v[m->n - 1].cqe = m->v[m->n - 1].finished = true;
}

/*
 * BW peak, differential: perftest's double loop over (posted i, polled
 * completion j >= i) in integer division, against the binary search the
 * report uses, on irregular times (a deterministic LCG: bursts and stalls).
 */
static void test_peak_vs_perftest(void)
{
	static const uint32_t cqms[] = { 1, 2, 7, 100 };
	uint64_t x = 12345;

	for (unsigned t = 0; t < 40; t++) {
		uint32_t n = 20 + t * 7, cqm = cqms[t % 4] > n ? n : cqms[t % 4];
		struct trace_perftest pt = {
			.valid = true, .op = FAB_OP_WRITE, .mode = TRACE_PERFTEST_BW, .iters = n,
			.tx_depth = n, .cq_mod = cqm, .per_iter = 1, .nsizes = 1, .sizes = { 4096 },
		};
		struct cli_perftest_row row;
		struct fab_msgs m = { 0 };
		sim_time_t post = 0, done = 0;
		uint64_t opt = UINT64_MAX;

		for (uint32_t i = 0; i < n; i++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			post += (x >> 33) % 3 ? (x >> 40) % 50 : (x >> 40) % 5000;
			done = (done > post ? done : post) + 1 + (x >> 20) % 900;
			synth(&m, post, done);
		}
		/* perftest's print_report_bw(), post_list 1 */
		for (uint32_t i = 0; i < n; i++) {
			for (uint32_t j = (i + 1 + cqm - 1) / cqm * cqm - 1; j < n; j += cqm) {
				uint64_t d = (m.v[j].completed - m.v[i].start) / (j - i + 1);

				opt = d < opt ? d : opt;
			}
			if (n % cqm) {
				uint64_t d = (m.v[n - 1].completed - m.v[i].start) / (n - i);

				opt = d < opt ? d : opt;
			}
		}
		CU_ASSERT_FATAL(cli_perftest_rows(&pt, &m, &row) == 0);
		CU_ASSERT(row.ok);
		CU_ASSERT_DOUBLE_EQUAL(row.bw_peak_gbps, 4096.0 * 8 * 1e3 / (double)opt, 1e-9);
		double total = (double)(m.v[n - 1].completed - m.v[0].start);

		CU_ASSERT_DOUBLE_EQUAL(row.bw_avg_gbps, 4096.0 * n * 8 * 1e3 / total, 1e-9);
		fab_msgs_free(&m);
	}
}

/*
 * Latency statistics worked by hand, as perftest's print_report_lat()
 * computes them: 7 iterations give 6 gaps between posts; sorted, the 2
 * largest are left out of the mean, median and deviation; t_max is the
 * first one left out; the percentiles index ceil(4 x 0.99) = 4.
 */
static void test_lat_stats(void)
{
	static const sim_time_t gap_us[] = { 30, 10, 1000, 50, 20, 40 };
	struct trace_perftest pt = {
		.valid = true, .op = FAB_OP_SEND, .mode = TRACE_PERFTEST_LAT, .iters = 7,
		.tx_depth = 1, .cq_mod = 1, .per_iter = 2, .nsizes = 1, .sizes = { 2 },
	};
	struct cli_perftest_row row;
	struct fab_msgs m = { 0 };
	sim_time_t t = 0;

	for (unsigned r = 0; r < 7; r++) {
		synth(&m, t, t + 1);		/* the ping: its post is the sample */
		synth(&m, t + 1, t + 2);	/* the pong */
		if (r < 6)
			t += gap_us[r] * SIM_US;
	}
	CU_ASSERT_FATAL(cli_perftest_rows(&pt, &m, &row) == 0);
	CU_ASSERT(row.ok);
	/* sorted: 10 20 30 40 | 50 1000; halved (a ping-pong) */
	CU_ASSERT_DOUBLE_EQUAL(row.t_min, 5, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(row.t_max, 25, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(row.t_typical, 12.5, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(row.t_avg, 12.5, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(row.t_stdev, sqrt(125.0) / 2, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(row.t_p99, 25, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(row.t_p999, 25, 1e-12);
	/* READ: the whole round trip (rtt_factor 1) */
	pt.op = FAB_OP_READ;
	pt.per_iter = 1;
	for (unsigned r = 0; r < 7; r++)
		m.v[r].start = m.v[2 * r].start;
	CU_ASSERT_FATAL(cli_perftest_rows(&pt, &m, &row) == 0);
	CU_ASSERT_DOUBLE_EQUAL(row.t_min, 10, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(row.t_typical, 25, 1e-12);
	/* an odd count: the middle one (8 iterations: 7 gaps, 5 kept) */
	pt.iters = 8;
	m.v[7].start = m.v[6].start + 60 * SIM_US;
	m.v[7].completed = m.v[7].start + 1;
	CU_ASSERT_FATAL(cli_perftest_rows(&pt, &m, &row) == 0);
	CU_ASSERT_DOUBLE_EQUAL(row.t_typical, 30, 1e-12);	/* 10 20 [30] 40 50 | 60 1000 */
	CU_ASSERT_DOUBLE_EQUAL(row.t_max, 60, 1e-12);
	fab_msgs_free(&m);
}

/* ---- the table -------------------------------------------------------------- */

static char *table_text(const struct trace_perftest *pt, const struct cli_perftest_row *rows)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CU_ASSERT_FATAL(f != NULL);
	cli_perftest_table(f, pt, "perftest:test", NULL, NULL, rows);
	CU_ASSERT_FATAL(fclose(f) == 0);
	return buf;
}

/* The rows after `header`: each must parse into `ncol` numbers. Returns the count. */
static int parse_rows(const char *text, const char *header, int ncol, double (*vals)[9])
{
	const char *p = strstr(text, header);
	int n = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_PTR_NULL(strstr(p + 1, header));	/* once */
	for (p += strlen(header); *p == ' '; n++) {
		const char *eol = strchr(p, '\n');
		char *end;
		int c = 0;

		CU_ASSERT_PTR_NOT_NULL_FATAL(eol);
		for (const char *q = p; q < eol; q = end) {
			double v = strtod(q, &end);

			if (end == q)
				break;
			if (c < 9)
				vals[n][c] = v;
			c++;
			while (*end == ' ' || *end == '\t')
				end++;
		}
		if (c != ncol)
			fprintf(stderr, "\n  row '%.*s': %d columns, want %d", (int)(eol - p), p, c, ncol);
		CU_ASSERT_EQUAL(c, ncol);
		p = eol + 1;
	}
	CU_ASSERT(!strncmp(p, "-----", 5));	/* the closing line */
	return n;
}

static void test_table(void)
{
	struct trace_perftest pt = {
		.valid = true, .op = FAB_OP_WRITE, .mode = TRACE_PERFTEST_BW, .src = -1, .dst = -1,
		.iters = 5000, .tx_depth = 128, .cq_mod = 100, .per_iter = 1, .nsizes = 3,
		.sizes = { 2, 65536, 1 << 20 },
	};
	struct cli_perftest_row rows[3] = {
		{ .bytes = 2, .iters = 5000, .ok = true, .bw_peak_gbps = 0.081234,
		  .bw_avg_gbps = 0.080012, .msg_rate_mpps = 5.000750 },
		{ .bytes = 65536, .iters = 5000, .ok = true, .bw_peak_gbps = 198.7012,
		  .bw_avg_gbps = 198.6601, .msg_rate_mpps = 0.378906 },
		{ .bytes = 1 << 20, .iters = 5000, .ok = false },
	};
	double v[8][9];
	char *t;

	/* perftest's own strings (perftest_parameters.h), byte for byte */
	CU_ASSERT_STRING_EQUAL(cli_perftest_bw_header,
		" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n");
	CU_ASSERT_STRING_EQUAL(cli_perftest_lat_header,
		" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]"
		"    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n");

	t = table_text(&pt, rows);
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "RDMA_Write BW Test"));
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "ib_write_bw -s SIZE (once per size) -n 5000 -t 128 -Q 100 --report_gbits"));
	CU_ASSERT_EQUAL(parse_rows(t, cli_perftest_bw_header, 5, v), 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(t, " 1 of 3 sizes did not finish"));
	/* under 0.1 Gb/s perftest prints 6 decimals; else 2, and 6 for MsgRate */
	CU_ASSERT(v[0][0] == 2 && v[0][1] == 5000);
	CU_ASSERT_DOUBLE_EQUAL(v[0][2], 0.081234, 5e-7);
	CU_ASSERT_DOUBLE_EQUAL(v[0][3], 0.080012, 5e-7);
	CU_ASSERT_DOUBLE_EQUAL(v[0][4], 5.000750, 5e-7);
	CU_ASSERT(v[1][0] == 65536 && v[1][1] == 5000);
	CU_ASSERT_DOUBLE_EQUAL(v[1][2], 198.70, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(v[1][3], 198.66, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(v[1][4], 0.378906, 5e-7);
	free(t);

	/* a latency table from a real run */
	struct pt_run r;

	pt_run(&r, "perftest:op=send,sizes=2..4096,mode=lat,iters=5", NULL);
	t = NULL;
	{
		size_t len = 0;
		FILE *f = open_memstream(&t, &len);

		CU_ASSERT_FATAL(f != NULL);
		cli_perftest_table(f, &r.pt, "perftest:op=send,sizes=2..4096,mode=lat,iters=5",
				   &r.n, &r.p, r.rows);
		CU_ASSERT_FATAL(fclose(f) == 0);
	}
	double lv[16][9];

	CU_ASSERT_PTR_NOT_NULL(strstr(t, "Send Latency Test"));
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "Simulated       : h0 -> h1, perftest:op=send"));
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "ib_send_lat -s SIZE (once per size) -n 5 -m 4096 -I 220"));
	CU_ASSERT_EQUAL_FATAL(parse_rows(t, cli_perftest_lat_header, 9, lv), 12);
	for (int k = 0; k < 12; k++) {
		CU_ASSERT_EQUAL(lv[k][0], (double)(2u << k));
		CU_ASSERT_EQUAL(lv[k][1], 5);
		CU_ASSERT_DOUBLE_EQUAL(lv[k][2], r.rows[k].t_min, 0.005 + 1e-9);
		CU_ASSERT_DOUBLE_EQUAL(lv[k][4], r.rows[k].t_typical, 0.005 + 1e-9);
		CU_ASSERT_DOUBLE_EQUAL(lv[k][8], r.rows[k].t_p999, 0.005 + 1e-9);
	}
	free(t);
	pt_free(&r);
}

/* A run cut short: the sizes that did not finish are not measured. */
static void test_incomplete(void)
{
	static const char *const sets[] = { "sim.max_time_ns=20000", NULL };
	struct pt_run r;

	pt_run(&r, "perftest:op=write,sizes=2:1M,iters=20", sets);
	CU_ASSERT_TRUE(r.rows[0].ok);
	CU_ASSERT_FALSE(r.rows[1].ok);
	/* not the sweep's layout: refused, not misread */
	struct trace_perftest bad = r.pt;

	bad.first = 1;
	CU_ASSERT_EQUAL(cli_perftest_rows(&bad, &r.m, r.rows), -1);
	bad = r.pt;
	bad.valid = false;
	CU_ASSERT_EQUAL(cli_perftest_rows(&bad, &r.m, r.rows), -1);
	pt_free(&r);
}

/* ---- malformed specs -------------------------------------------------------- */

static struct net bad_net;

static void bad(const char *spec, int col, const char *needle)
{
	struct fab_msgs m = { 0 };
	struct fab_msg one = { .src = 0, .dst = 1, .bytes = 1, .after = -1 };
	struct trace_perftest pt = { .valid = true };
	struct sim_diag d;
	char prefix[1200];

	CU_ASSERT_FATAL(fab_msgs_add(&m, &one) == 0);
	sim_diag_clear(&d);
	CU_ASSERT_EQUAL(trace_spec_parse_sweep(spec, &bad_net, 1, &m, &pt, &d), -1);
	snprintf(prefix, sizeof(prefix), "--traffic '%.200s': ", spec);
	if (strncmp(d.msg, prefix, strlen(prefix)) || !strstr(d.msg, needle) || (col && d.col != col))
		fprintf(stderr, "\n  '%s': got col %d '%s', want col %d and '%s'", spec, d.col, d.msg,
			col, needle);
	CU_ASSERT_EQUAL(strncmp(d.msg, prefix, strlen(prefix)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, needle));
	if (col)
		CU_ASSERT_EQUAL(d.col, col);
	CU_ASSERT_EQUAL(m.n, 1);	/* nothing half-written */
	CU_ASSERT_EQUAL(m.nstreams, 1);
	CU_ASSERT_FALSE(pt.valid);
	fab_msgs_free(&m);
}

static void test_malformed(void)
{
	char many[400] = "perftest:sizes=1";
	int h0, h1;

	tf_chain(&bad_net, 1, &h0, &h1);
	bad("perftest", 0, "perftest needs sizes= (missing: sizes)");
	bad("perftest:op=write", 0, "perftest needs sizes=");
	bad("perftest:sizes=8..2", 16, "sizes: '8..2': MIN is larger than MAX");
	bad("perftest:sizes=0..8", 16, "sizes: must be more than 0 bytes");
	bad("perftest:sizes=2..4G", 19, "sizes: '4G' is more than 2GiB");
	bad("perftest:sizes=..8M", 16, "expected MIN..MAX, such as 2..8M");
	bad("perftest:sizes=2..", 19, "expected MIN..MAX, such as 2..8M");
	bad("perftest:sizes=2..8M..16M", 19, "sizes: '2..8M..16M': expected MIN..MAX");
	bad("perftest:sizes=2Kb..8M", 16, "bits");
	bad("perftest:sizes=64::4096", 19, "sizes: empty size in '64::4096'");
	bad("perftest:sizes=64:", 19, "sizes: empty size");
	bad("perftest:sizes=64:x", 19, "sizes: expected a size");
	for (int i = 0; i < 64; i++)
		strcat(many, ":1");
	bad(many, 16 + 2 * 64, "sizes: more than 64 sizes");
	bad("perftest:sizes=64,iters=4", 25, "iters: at least 5, as perftest requires");
	bad("perftest:sizes=64,iters=100000001", 25, "iters:");
	bad("perftest:sizes=64,mode=fast", 24, "mode: expected bw or lat, got 'fast'");
	bad("perftest:sizes=64,mode=lat,tx_depth=4", 37, "tx_depth: only for mode=bw");
	bad("perftest:sizes=64,cq_mod=4,mode=lat", 26, "cq_mod: only for mode=bw");
	bad("perftest:sizes=64,tx_depth=0", 28, "tx_depth: must be at least 1");
	bad("perftest:sizes=64,tx_depth=15001", 28, "tx_depth:");
	bad("perftest:sizes=64,cq_mod=0", 26, "cq_mod: must be at least 1");
	bad("perftest:sizes=64,cq_mod=1025", 26, "cq_mod:");
	bad("perftest:sizes=64,src=h0,dst=h0", 30, "src and dst are the same host");
	bad("perftest:sizes=64,dst=h0", 23, "src and dst are the same host");
	bad("perftest:sizes=64,dst=sw0", 23, "'sw0' is a switch, not a host");
	bad("perftest:sizes=64,sl=mgmt", 22, "sl=mgmt: perftest runs over RC queue pairs");
	bad("perftest:sizes=64,op=atomic", 22, "op: expected write, read or send, got 'atomic'");
	bad("perftest:sizes=64,size=64", 19,
	    "unknown key 'size' for perftest (valid: src, dst, start, sl, op, mem, sizes, iters, "
	    "mode, tx_depth, cq_mod)");
	bad("perftest:sizes=64,iters=5,iters=6", 27, "iters given twice");
	bad("perf:sizes=64", 1, "unknown pattern 'perf'");
	bad("perf:sizes=64", 1, "did you mean 'perftest'?");
	bad("bogus:sizes=64", 1, "(patterns: p2p, pingpong, incast, alltoall, permutation, shift), "
	    "or perftest for a sweep");
	/* 5 x 2^20 x 1 > the 2^22 messages one spec may make */
	bad("perftest:sizes=1:2,iters=100000000", 1, "this spec makes 200000000 messages (at most 134217728 per spec)");
	net_free(&bad_net);

	/* one host: nobody to talk to */
	int one[1];

	tf_star(&bad_net, 1, one);
	bad("perftest:sizes=64", 0, "perftest needs 2 hosts, the topology has 1");
	net_free(&bad_net);
}

static const struct test_case tests[] = {
	{ "spec layout: sizes, perftest's defaults and clamps, dependencies", test_layout },
	{ "after_cqe: posted at the dependency's CQE, local to the sender", test_after_cqe },
	{ "bw: large messages at link rate x payload efficiency (Gen4)", test_bw_link_rate },
	{ "bw: PCIe Gen3 payload rate is the bottleneck", test_bw_pcie_gen3 },
	{ "lat: 2 B one-way closed form; t_min == t_max when idle", test_lat_closed_form },
	{ "lat: READ is the whole round trip", test_lat_read },
	{ "bw: tx_depth bounds the WRs in flight; cq_mod refills", test_tx_depth },
	{ "bw peak: same as perftest's double loop", test_peak_vs_perftest },
	{ "lat statistics: perftest's, worked by hand", test_lat_stats },
	{ "table: perftest's headers, columns parse", test_table },
	{ "table: unfinished sizes left out; wrong layout refused", test_incomplete },
	{ "malformed perftest specs", test_malformed },
	{ NULL, NULL },
};

TEST_MAIN("perftest", tests)
