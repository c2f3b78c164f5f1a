/* SPDX-License-Identifier: MIT */
/*
 * test_ibcc.c - IB congestion control (IBA Annex A10, models/ib/ib_cc.c).
 *
 *  - the CA's CCT index against a hand-computed trace: +CCTI_Increase per
 *    BECN up to CCTI_Limit, -1 per CCTI_Timer down to CCTI_Min;
 *  - the switch threshold and the table's delays from their definitions;
 *  - the keys: ib.cc=on, ib.cc.* values and refusals;
 *  - a lone flow: ib.cc=on changes nothing (no queue, no mark, no delay);
 *  - the hot spot: four senders to one host, one of them sharing its
 *    switch-to-switch link with a victim flow to another host. Without CC
 *    the victim is stuck behind the hot packets in the next switch's input
 *    buffer (head-of-line blocking) and gets about the hot sender's share
 *    of the hot link; with ib.cc=on the root switch marks FECN, the hot
 *    senders throttle, and the victim's throughput rises.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

#include "models/fabric/fab.h"
#include "models/ib/ib_cc.h"
#include "models/net/net.h"
#include "tests/unit/test_main.h"
#include "tests/unit/util_fabric.h"

static void test_ca_trace(void)
{
	struct ibcc_params p;
	struct ibcc_ca ca = { 0 };
	const sim_time_t us = SIM_US;

	ibcc_params_default(&p);
	p.ccti_timer_us = 10;
	p.ccti_increase = 3;
	p.ccti_limit = 7;
	p.ccti_min = 1;
	const sim_time_t T = ibcc_timer_ps(&p, 200e9, 4096);

	CU_ASSERT_EQUAL(T, 10 * us);	/* set: the rate and MTU do not matter */
	/* t=0: 0 + 3 = 3, the timer starts: decrements due at 10, 20, 30 ... */
	ibcc_ca_becn(&ca, &p, T, 0);
	CU_ASSERT_EQUAL(ca.ccti, 3);
	/* t=5: 3 + 3 = 6 */
	ibcc_ca_becn(&ca, &p, T, 5 * us);
	CU_ASSERT_EQUAL(ca.ccti, 6);
	/* t=6: 6 + 3 = 9, capped at the limit 7 */
	ibcc_ca_becn(&ca, &p, T, 6 * us);
	CU_ASSERT_EQUAL(ca.ccti, 7);
	/* t=25: decrements at 10 and 20: 5 */
	ibcc_ca_advance(&ca, &p, T, 25 * us);
	CU_ASSERT_EQUAL(ca.ccti, 5);
	/* t=30 exactly: one more: 4 */
	ibcc_ca_advance(&ca, &p, T, 30 * us);
	CU_ASSERT_EQUAL(ca.ccti, 4);
	/* t=1000: down to CCTI_Min (1), never below; the timer stops */
	ibcc_ca_advance(&ca, &p, T, 1000 * us);
	CU_ASSERT_EQUAL(ca.ccti, 1);
	CU_ASSERT_EQUAL(ca.next_dec, 0);
	/* t=1003: 1 + 3 = 4; the timer restarts from here: 1013, 1023 */
	ibcc_ca_becn(&ca, &p, T, 1003 * us);
	CU_ASSERT_EQUAL(ca.ccti, 4);
	ibcc_ca_advance(&ca, &p, T, 1022 * us);
	CU_ASSERT_EQUAL(ca.ccti, 3);
	CU_ASSERT_EQUAL(ca.becns, 4);
}

static void test_tables(void)
{
	struct ibcc_params p;

	ibcc_params_default(&p);
	/* 4-bit threshold: (16 - t)/16 of the buffer; 0 never marks */
	p.threshold = 8;
	CU_ASSERT_EQUAL(ibcc_threshold_bytes(&p, 32768), 16384);
	p.threshold = 15;
	CU_ASSERT_EQUAL(ibcc_threshold_bytes(&p, 32768), 2048);
	p.threshold = 0;
	CU_ASSERT_EQUAL(ibcc_threshold_bytes(&p, 32768), 0);
	/* shipped table: entry i = i^2 / 2 blocks */
	CU_ASSERT_EQUAL(ibcc_ird_units(&p, 0), 0);
	CU_ASSERT_EQUAL(ibcc_ird_units(&p, 20), 200);
	CU_ASSERT_EQUAL(ibcc_ird_units(&p, 127), 8064);
	/* shift:multiplier = multiplier << shift */
	struct fab_params fp;

	tf_params(&fp, "hdr");
	tf_set(&fp, "ib.cc.cct=0,1:3,2:5,3:16383");
	CU_ASSERT_EQUAL(fp.ibcc.cct_len, 4);
	CU_ASSERT_EQUAL(ibcc_ird_units(&fp.ibcc, 1), 6);
	CU_ASSERT_EQUAL(ibcc_ird_units(&fp.ibcc, 2), 20);
	CU_ASSERT_EQUAL(ibcc_ird_units(&fp.ibcc, 3), 16383u << 3);
	CU_ASSERT_EQUAL(fp.ibcc.ccti_limit, 3);	/* follows the shorter table */

	/* the automatic CCTI_Timer (ccti_timer_us=0): 2 x 4 flows x (marking
	 * rate + 1) packets of MTU payload + 26 header bytes at the CA's data
	 * rate, + 2 us for the loop: 4xHDR, MTU 4096: 32 x 164.88 ns + 2 us */
	CU_ASSERT_EQUAL(p.ccti_timer_us, 0);
	CU_ASSERT_EQUAL(ibcc_timer_ps(&p, 200e9, 4096), 5276160 + 2 * SIM_US);
	/* 4xQDR (32 Gb/s of data), MTU 2048: 32 x 518.5 ns + 2 us */
	CU_ASSERT_EQUAL(ibcc_timer_ps(&p, 32e9, 2048), 16592000 + 2 * SIM_US);
	p.marking_rate = 0;	/* every eligible packet marked: 8 packets */
	CU_ASSERT_EQUAL(ibcc_timer_ps(&p, 200e9, 4096), 1319040 + 2 * SIM_US);
	p.ccti_timer_us = 5;	/* set: as given */
	CU_ASSERT_EQUAL(ibcc_timer_ps(&p, 200e9, 4096), 5 * SIM_US);
}

static void test_keys(void)
{
	struct fab_params p;
	struct sim_diag d;

	tf_params(&p, "hdr");
	CU_ASSERT_FALSE(p.ibcc.on);	/* off by default */
	tf_set(&p, "ib.cc=on");
	tf_set(&p, "ib.cc.threshold=12");
	tf_set(&p, "ib.cc.ccti_timer_us=150");
	tf_set(&p, "ib.cc.ccti_increase=2");
	tf_set(&p, "ib.cc.ccti_limit=100");
	tf_set(&p, "ib.cc.marking_rate=0");
	CU_ASSERT(p.ibcc.on);
	CU_ASSERT_EQUAL(p.ibcc.threshold, 12);
	CU_ASSERT_EQUAL(p.ibcc.ccti_timer_us, 150);
	CU_ASSERT_EQUAL(p.ibcc.ccti_increase, 2);
	CU_ASSERT_EQUAL(p.ibcc.ccti_limit, 100);
	CU_ASSERT_EQUAL(p.ibcc.marking_rate, 0);
	CU_ASSERT_EQUAL(fab_params_check(&p, &d), 0);
	CU_ASSERT_NOT_EQUAL(fab_params_set(&p, "ib.cc.threshold=16", &d), 0);
	CU_ASSERT_NOT_EQUAL(fab_params_set(&p, "ib.cc.bogus=1", &d), 0);
	CU_ASSERT_NOT_EQUAL(fab_params_set(&p, "ib.cc.cct=4:1", &d), 0);
	CU_ASSERT_NOT_EQUAL(fab_params_set(&p, "ib.cc=maybe", &d), 0);
	tf_set(&p, "ib.cc.ccti_min=120");
	CU_ASSERT_NOT_EQUAL(fab_params_check(&p, &d), 0);	/* min above limit */
}

/* A lone flow: CC on must not change its time (nothing queues, nothing is
 * marked, the index stays 0 and the pacing is a no-op). */
static void test_lone_flow_unchanged(void)
{
	struct net n;
	struct fab_params p;
	sim_time_t t[2];
	int h0, h1;

	tf_chain(&n, 2, &h0, &h1);
	for (int on = 0; on < 2; on++) {
		struct fab_msgs m = { 0 };
		struct fab_totals tot;

		tf_params(&p, "hdr");
		if (on)
			tf_set(&p, "ib.cc=on");
		tf_add_msg(&m, h0, h1, 4 << 20, 0, 0);
		struct fab *f = tf_run(&n, &p, &m);

		fab_totals(f, &tot);
		CU_ASSERT_EQUAL(tot.ecn_marks, 0);
		CU_ASSERT_EQUAL(tot.cnps, 0);
		t[on] = m.v[0].end - m.v[0].start;
		fab_destroy(f);
		fab_msgs_free(&m);
	}
	CU_ASSERT_EQUAL(t[0], t[1]);
	net_free(&n);
}

/*
 * sw0: S1 (port 1), V (port 2), uplink (port 8)
 * sw1: H (1), W (2), S2 (3), S3 (4), S4 (5), uplink (8)
 * S1..S4 -> H (hot spot), V -> W (victim, shares sw0 -> sw1 with S1).
 */
struct hotspot {
	double victim_gbps, hot_gbps;
	uint64_t marks, cnps;
	double seconds;
};

static void hotspot_run(bool cc, uint64_t hot_bytes, uint64_t victim_bytes,
			struct hotspot *r)
{
	struct net n;
	struct fab_params p;
	struct fab_msgs m = { 0 };
	struct fab_totals tot;
	int s[4], v, h, w;

	tf_victim(&n, s, &v, &h, &w);

	tf_params(&p, "hdr");
	if (cc)
		tf_set(&p, "ib.cc=on");
	for (int i = 0; i < 4; i++)
		tf_add_msg(&m, s[i], h, hot_bytes, (uint32_t)i, 0);
	/* the victim starts once the hot spot has formed (and CC has reacted) */
	struct fab_msg vm = { .src = (uint32_t)v, .dst = (uint32_t)w, .bytes = victim_bytes,
			      .after = -1, .stream = 4, .post = 100 * SIM_US };

	CU_ASSERT_FATAL(fab_msgs_add(&m, &vm) == 0);
	struct fab *f = tf_run(&n, &p, &m);

	fab_totals(f, &tot);
	const struct fab_msg *vv = &m.v[4];
	sim_time_t hot_end = 0;

	for (int i = 0; i < 4; i++)
		if (m.v[i].end > hot_end)
			hot_end = m.v[i].end;
	/* the victim must have run inside the hot spot for the figure to mean anything */
	CU_ASSERT(vv->end < hot_end);
	r->victim_gbps = (double)victim_bytes * 8 / ((double)(vv->end - vv->start) * 1e-12) / 1e9;
	r->hot_gbps = (double)hot_bytes * 4 * 8 / ((double)hot_end * 1e-12) / 1e9;
	r->marks = tot.ecn_marks;
	r->cnps = tot.cnps;
	r->seconds = (double)hot_end * 1e-12;
	CU_ASSERT_EQUAL(tot.drops, 0);
	fab_destroy(f);
	fab_msgs_free(&m);
	net_free(&n);
}

static void test_hotspot_victim(void)
{
	struct hotspot off, on;
	uint64_t hot = 8 << 20, victim = 2 << 20;	/* 20 ms even under ASan */

	hotspot_run(false, hot, victim, &off);
	hotspot_run(true, hot, victim, &on);
	fprintf(stderr,
		"\n  hot spot, HDR: victim %.1f Gb/s without CC, %.1f Gb/s with ib.cc=on "
		"(hot link %.1f / %.1f Gb/s; %llu FECN, %llu BECN)\n",
		off.victim_gbps, on.victim_gbps, off.hot_gbps, on.hot_gbps,
		(unsigned long long)on.marks, (unsigned long long)on.cnps);
	CU_ASSERT_EQUAL(off.marks, 0);
	CU_ASSERT_EQUAL(off.cnps, 0);
	CU_ASSERT(on.marks > 0);
	CU_ASSERT(on.cnps > 0);
	/* Without CC the victim gets about the hot sender's share (1/4 of the
	 * hot link); with CC it takes most of the shared link. */
	CU_ASSERT(off.victim_gbps < 0.4 * 200);
	CU_ASSERT(on.victim_gbps > 1.5 * off.victim_gbps);
	/* and the hot spot is still served at most of its rate */
	CU_ASSERT(on.hot_gbps > 0.9 * off.hot_gbps);
}

static const struct test_case tests[] = {
	{ "CA: CCT index trace (increase, limit, timer, min)", test_ca_trace },
	{ "threshold and CCT delays", test_tables },
	{ "ib.cc keys", test_keys },
	{ "a lone flow is unchanged by ib.cc=on", test_lone_flow_unchanged },
	{ "hot spot: ib.cc raises the victim's throughput", test_hotspot_victim },
	{ NULL, NULL },
};

TEST_MAIN("ibcc", tests)
