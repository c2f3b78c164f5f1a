/* SPDX-License-Identifier: MIT */
/*
 * test_eth.c - the Ethernet link layer of the RoCE and TCP fabrics
 * (models/eth): RoCEv2 frame overheads against IB's, PFC keeping an incast
 * lossless where the lossy fabric drops, pause frames spreading congestion
 * to a victim flow that VLs isolate on IB, PFC headroom on long cables,
 * and the report of a PFC deadlock on a ring.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "models/eth/eth.h"
#include "models/fabric/fab.h"
#include "models/net/net.h"
#include "models/sm/sm.h"
#include "tests/unit/test_main.h"
#include "tests/unit/util_fabric.h"
#include "topologies/topo.h"

static sim_time_t run_one(const char *fabric, uint64_t bytes, struct fab_totals *t)
{
	struct net n;
	struct fab_params p;
	struct fab_msgs m = { 0 };
	struct fab *f;
	int h0, h1;
	sim_time_t end;

	tf_chain(&n, 1, &h0, &h1);
	tf_params(&p, "hdr");
	tf_set(&p, fabric);
	tf_set(&p, "dcqcn.on=0");
	tf_add_msg(&m, h0, h1, bytes, 0, 0);
	f = tf_run(&n, &p, &m);
	fab_totals(f, t);
	end = m.v[0].end - m.v[0].first_tx;
	fab_destroy(f);
	fab_msgs_free(&m);
	net_free(&n);
	return end;
}

/*
 * The same 64 MiB WRITE over one switch: a middle RoCEv2 packet takes
 * 4096 + 12 (BTH) + 4 (ICRC) + 20 (IPv4) + 8 (UDP) + 14 + 4 (Ethernet,
 * VLAN) + 4 (FCS) + 8 + 12 (preamble, gap) = 4182 bytes on the wire, an IB
 * one 4096 + 8 + 12 + 4 + 2 = 4122: the transfer times differ by exactly
 * that ratio (to 0.01%: the first packet's RETH and the ends add a little).
 */
static void test_overheads(void)
{
	struct fab_totals ti, tr;
	sim_time_t ib = run_one("fabric=ib", 64 << 20, &ti);
	sim_time_t roce = run_one("fabric=roce", 64 << 20, &tr);
	double ratio = (double)roce / (double)ib;

	CU_ASSERT_DOUBLE_EQUAL(ratio, 4182.0 / 4122.0, 1e-4);
	CU_ASSERT_EQUAL(ti.payload_delivered, tr.payload_delivered);
	CU_ASSERT_EQUAL(tr.drops + ti.drops, 0);
	CU_ASSERT_EQUAL(tr.pause_frames, 0);	/* one flow, line rate: no pause */
}

/* n senders to h0 on one switch, `bytes` each; totals back. */
static void incast(const char *fabric, int nsend, uint64_t bytes, const char *extra,
		   struct fab_totals *t, bool *all_done)
{
	struct net n;
	struct fab_params p;
	struct fab_msgs m = { 0 };
	struct fab *f;
	int hosts[33];

	tf_star(&n, nsend + 1, hosts);
	tf_params(&p, "hdr");
	tf_set(&p, fabric);
	tf_set(&p, "dcqcn.on=0");
	tf_set(&p, "hca.timeout=8");	/* 1 ms: lossy recovery without 67 ms waits */
	if (extra)
		tf_set(&p, extra);
	for (int i = 1; i <= nsend; i++)
		tf_add_msg(&m, hosts[i], hosts[0], bytes, (uint32_t)(i - 1), 0);
	f = tf_run(&n, &p, &m);
	fab_totals(f, t);
	*all_done = t->msgs_done == (uint64_t)nsend;
	fab_destroy(f);
	fab_msgs_free(&m);
	net_free(&n);
}

/*
 * 16-to-1: IB and RoCE with PFC lose nothing (IB waits on credits, RoCE
 * pauses); without PFC the switch's buffer overflows and go-back-N
 * resends what was dropped.
 */
static void test_incast_16(void)
{
	struct fab_totals t;
	bool done;
	uint64_t sz = test_quick() ? 1 << 20 : 4 << 20;

	incast("fabric=ib", 16, sz, NULL, &t, &done);
	CU_ASSERT_TRUE(done);
	CU_ASSERT_EQUAL(t.drops, 0);
	CU_ASSERT(t.xmit_wait_ps > 0);
	CU_ASSERT_EQUAL(t.pause_frames, 0);

	incast("fabric=roce", 16, sz, NULL, &t, &done);
	CU_ASSERT_TRUE(done);
	CU_ASSERT_EQUAL(t.drops, 0);
	CU_ASSERT_EQUAL(t.retransmitted, 0);
	CU_ASSERT(t.pause_frames > 0);
	CU_ASSERT(t.paused_ps > 0);

	incast("fabric=roce-lossy", 16, sz, NULL, &t, &done);
	CU_ASSERT_TRUE(done);
	CU_ASSERT(t.drops > 0);
	CU_ASSERT_EQUAL(t.drops, t.drops_congestion);
	CU_ASSERT(t.retransmitted >= t.drops);
	CU_ASSERT_EQUAL(t.pause_frames, 0);
}

/*
 * Headroom: on 300 m cables 3 us of data per direction are in flight when
 * an XOFF goes out; the reserved headroom (2 x cable x rate + 2 frames)
 * absorbs them, so a 16-to-1 incast with a buffer only just above the
 * XOFF thresholds still drops nothing.
 */
static void test_headroom(void)
{
	struct fab_totals t;
	bool done;
	struct net n;
	struct fab_params p;
	struct fab_msgs m = { 0 };
	struct fab *f;
	int hosts[17];

	tf_star(&n, 17, hosts);
	tf_params(&p, "hdr");
	tf_set(&p, "fabric=roce");
	tf_set(&p, "dcqcn.on=0");
	tf_set(&p, "link.cable_m=300");
	tf_set(&p, "eth.buffer_per_port=300KiB");	/* XOFF at 256 KiB per ingress */
	for (int i = 1; i <= 16; i++)
		tf_add_msg(&m, hosts[i], hosts[0], test_quick() ? 1 << 20 : 4 << 20,
			   (uint32_t)(i - 1), 0);
	f = tf_run(&n, &p, &m);
	fab_totals(f, &t);
	done = t.msgs_done == 16;
	CU_ASSERT_TRUE(done);
	CU_ASSERT_EQUAL(t.drops, 0);
	CU_ASSERT(t.pause_frames > 0);
	fab_destroy(f);
	fab_msgs_free(&m);
	net_free(&n);
}

/*
 * Dynamic PFC thresholds (eth.pfc_alpha): an ingress pauses above alpha x
 * the free shared buffer. With 16 congested ingresses each holding x,
 * x = alpha (pool - 16 x): at alpha = 1/16 every ingress settles at
 * pool / 32 (544 KiB of a 17 MiB pool), more than the static 256 KiB, and
 * still nothing is dropped.
 */
static void test_pfc_dynamic(void)
{
	struct net n;
	struct fab_params p;
	struct fab_msgs m = { 0 };
	struct fab_totals t;
	struct fab *f;
	int hosts[17];
	uint32_t high = 0;

	tf_star(&n, 17, hosts);
	tf_params(&p, "hdr");
	tf_set(&p, "fabric=roce");
	tf_set(&p, "dcqcn.on=0");
	tf_set(&p, "eth.pfc_alpha=0.0625");
	for (int i = 1; i <= 16; i++)
		tf_add_msg(&m, hosts[i], hosts[0], 4 << 20, (uint32_t)(i - 1), 0);
	f = tf_run(&n, &p, &m);
	fab_totals(f, &t);
	CU_ASSERT_EQUAL(t.msgs_done, 16);
	CU_ASSERT_EQUAL(t.drops, 0);
	CU_ASSERT(t.pause_frames > 0);
	for (int i = 0; i < fab_nports(f); i++) {
		const struct fab_port_info *pi = fab_port(f, i);

		/* the switch's inputs from the senders */
		if (pi->node == 0 && pi->peer_node != hosts[0] && pi->vl[0].buf_high > high)
			high = pi->vl[0].buf_high;
	}
	double fixed = 17.0 * (1 << 20) / 32;

	fprintf(stderr, "  ingress high-water %u B, fixed point pool/32 = %.0f B\n", high, fixed);
	CU_ASSERT(high > 300u << 10);		/* above the static threshold */
	CU_ASSERT(fabs(high - fixed) <= 0.10 * fixed);
	fab_destroy(f);
	fab_msgs_free(&m);
	net_free(&n);
}

/*
 * Congestion spreading. sw0 holds h1 (sending to h0) and the victim
 * source h5; sw1 holds h0, the local senders h7 and h8 (also to h0), and
 * the victim's destination h6. The link sw0 -> sw1 carries h1's flow and
 * the victim's; h0's port is shared three ways. Alone the victim would
 * take the 2/3 of the link h1 leaves it. Under PFC, sw1's ingress from
 * sw0 fills with h1's packets and pauses the whole priority on that link:
 * the victim crawls at h1's pace. On IB with the victim on its own VL
 * (SL 1 -> VL 1), credits are per VL and the victim keeps its share.
 */
static double victim_gbps(const char *fabric, uint8_t victim_sl)
{
	struct net n;
	struct fab_params p;
	struct fab_msgs m = { 0 };
	struct fab *f;
	int sw0, sw1, h[9];
	char name[8];
	double gbps;

	net_init(&n);
	sw0 = tf_add_node(&n, NET_SWITCH, 8, "sw0");
	sw1 = tf_add_node(&n, NET_SWITCH, 8, "sw1");
	for (int i = 0; i < 9; i++) {
		snprintf(name, sizeof(name), "h%d", i);
		h[i] = tf_add_node(&n, NET_CA, 1, name);
	}
	tf_link(&n, sw0, 8, sw1, 8);
	tf_link(&n, h[1], 1, sw0, 1);
	tf_link(&n, h[5], 1, sw0, 5);
	tf_link(&n, h[0], 1, sw1, 1);
	tf_link(&n, h[6], 1, sw1, 6);
	tf_link(&n, h[7], 1, sw1, 7);
	tf_link(&n, h[8], 1, sw1, 2);
	tf_route(&n);
	tf_params(&p, "hdr");
	tf_set(&p, fabric);
	tf_set(&p, "dcqcn.on=0");
	uint64_t big = test_quick() ? 4 << 20 : 16 << 20;

	tf_add_msg(&m, h[1], h[0], big, 0, 0);
	tf_add_msg(&m, h[7], h[0], big, 1, 0);
	tf_add_msg(&m, h[8], h[0], big, 2, 0);
	tf_add_msg(&m, h[5], h[6], big / 4, 3, victim_sl);
	f = tf_run(&n, &p, &m);
	gbps = (double)m.v[3].bytes * 8 / (double)(m.v[3].end - m.v[3].first_tx) * 1e3;
	fab_destroy(f);
	fab_msgs_free(&m);
	net_free(&n);
	return gbps;
}

static void test_victim(void)
{
	double ib_vl = victim_gbps("fabric=ib", 1);
	double roce = victim_gbps("fabric=roce", 0);

	/* Its fair share is 200 - 200/3 = 133 Gb/s; the IB VL keeps it. */
	CU_ASSERT(ib_vl > 120.0);
	/* PFC drags it down towards h1's 67 Gb/s. */
	CU_ASSERT(roce < 0.75 * ib_vl);
	fprintf(stderr, "  victim: IB own VL %.1f Gb/s, RoCE+PFC %.1f Gb/s\n", ib_vl, roce);
}

/*
 * ring-4.net with min-hop routes (eth.lb=static) and all-to-all: the clockwise channels
 * wait for each other. On IB this is a credit loop; with PFC the ingress
 * ports pause each other in a cycle. The run must stop and say so, not
 * refresh its pauses for ever.
 */
static void test_pfc_deadlock(void)
{
	struct net n;
	struct fab_params p;
	struct fab_msgs m = { 0 };
	struct sim_diag d;
	struct fab *f;
	char path[512];

	if (topo_load(test_src_path("topologies/examples/ring-4.net", path, sizeof(path)), &n, &d)) {
		fprintf(stderr, "\n  %s: %s\n", path, d.msg);
		CU_FAIL_FATAL("ring-4.net does not load");
	}
	CU_ASSERT_FATAL(sm_route_minhop(&n, &d) == 0);
	tf_params(&p, "hdr");
	tf_set(&p, "fabric=roce");
	tf_set(&p, "eth.lb=static");	/* the min-hop table's routes, not ECMP's spread */
	tf_set(&p, "dcqcn.on=0");
	tf_set(&p, "ib.vls=1");
	tf_set(&p, "eth.pfc_xoff=32KiB");
	tf_set(&p, "eth.pfc_xon=16KiB");
	for (int s = 0; s < 8; s++)
		for (int t = 0; t < 8; t++) {
			char a[8], b[8];

			if (s == t)
				continue;
			snprintf(a, sizeof(a), "h%d", s);
			snprintf(b, sizeof(b), "h%d", t);
			tf_add_msg(&m, net_find_host(&n, a), net_find_host(&n, b), 1 << 20,
				   (uint32_t)(s * 8 + t), 0);
		}
	f = fab_create(&n, &p, &m, 1, &d);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(fab_run(f, &d), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "PFC deadlock"));
	fprintf(stderr, "  %s\n", d.msg);
	fab_destroy(f);
	fab_msgs_free(&m);
	net_free(&n);
}

/* Ethernet has 8 priorities and 7 is the CNPs': data on 7 or above is refused. */
static void test_priorities_checked(void)
{
	struct fab_params p;
	struct sim_diag d;

	tf_params(&p, "hdr");
	tf_set(&p, "fabric=roce");
	tf_set(&p, "ib.vls=8");
	tf_set(&p, "ib.sl2vl=0,1,2,3,4,5,6");
	CU_ASSERT_EQUAL(fab_params_check(&p, &d), 0);
	tf_set(&p, "ib.sl2vl=0,1,2,3,4,5,6,7");
	CU_ASSERT_EQUAL(fab_params_check(&p, &d), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "priorities are 0..6"));
	tf_set(&p, "fabric=ib");	/* IB has 15 data VLs */
	CU_ASSERT_EQUAL(fab_params_check(&p, &d), 0);
}

/*
 * ECMP (eth.lb=ecmp) on fattree-16: leaf0's four hosts each send one flow
 * to a host of leaf1; leaf0 has four up-links. A flow keeps one path (no
 * packet out of order: no NAK, no retransmission, on a lossless fabric),
 * and the flows fall on the up-links as balls into bins: over 200 hash
 * seeds the mean number of up-links used is 4 (1 - (3/4)^4) = 2.734 and
 * all four are used with probability 4!/4^4 = 0.094 (the collisions that
 * cost RoCE throughput). eth.lb=static follows the table: the up-links
 * minhop gave the four destinations.
 */
static int uplinks_used(struct net *n, const char *lb, uint64_t seed, int *ooo)
{
	struct fab_params p;
	struct fab_msgs m = { 0 };
	struct fab_totals t;
	char kv[64];
	int leaf0 = net_find(n, "S-0000000000200002"), used = 0;

	tf_params(&p, "hdr");
	tf_set(&p, "fabric=roce");
	tf_set(&p, "dcqcn.on=0");
	snprintf(kv, sizeof(kv), "eth.lb=%s", lb);
	tf_set(&p, kv);
	snprintf(kv, sizeof(kv), "eth.hash_seed=%llu", (unsigned long long)seed);
	tf_set(&p, kv);
	for (int i = 0; i < 4; i++) {
		char a[8], b[8];

		snprintf(a, sizeof(a), "h%d", i);
		snprintf(b, sizeof(b), "h%d", 4 + i);
		tf_add_msg(&m, net_find_host(n, a), net_find_host(n, b), 256 << 10, (uint32_t)i, 0);
	}
	struct fab *f = tf_run(n, &p, &m);

	for (int i = 0; i < fab_nports(f); i++) {
		const struct fab_port_info *pi = fab_port(f, i);

		if (pi->node == leaf0 && n->nodes[pi->peer_node].type == NET_SWITCH &&
		    pi->vl[0].xmit_bytes > (200 << 10))
			used++;
	}
	fab_totals(f, &t);
	*ooo += (int)(t.retransmitted + t.seq_naks);
	CU_ASSERT_EQUAL(t.msgs_done, 4);
	fab_destroy(f);
	fab_msgs_free(&m);
	return used;
}

static void test_ecmp(void)
{
	struct net n;
	struct sim_diag d;
	char path[512];
	int ooo = 0, all4 = 0, sum = 0, seeds = 200;

	CU_ASSERT_FATAL(topo_load(test_src_path("topologies/examples/fattree-16.topo", path,
						  sizeof(path)), &n, &d) == 0);
	CU_ASSERT_FATAL(sm_route_minhop(&n, &d) == 0);
	for (int s = 0; s < seeds; s++) {
		int u = uplinks_used(&n, "ecmp", (uint64_t)s, &ooo);

		sum += u;
		all4 += u == 4;
	}
	double mean = (double)sum / seeds, p4 = (double)all4 / seeds;

	fprintf(stderr, "\n  ECMP, 4 flows on 4 up-links over %d seeds: %.3f used on average (balls into bins: 2.734), all four %.3f (0.094)\n",
		seeds, mean, p4);
	CU_ASSERT_EQUAL(ooo, 0);
	CU_ASSERT_DOUBLE_EQUAL(mean, 2.734, 0.15);
	CU_ASSERT_DOUBLE_EQUAL(p4, 0.094, 0.06);
	/* static: the table's up-links, whatever the seed */
	int leaf0 = net_find(&n, "S-0000000000200002");
	uint64_t ports = 0;

	for (int i = 4; i < 8; i++) {
		char b[8];

		snprintf(b, sizeof(b), "h%d", i);
		ports |= 1ull << n.nodes[leaf0].lft[net_lid_of(&n, net_find_host(&n, b), 1)];
	}
	CU_ASSERT_EQUAL(uplinks_used(&n, "static", 1, &ooo), __builtin_popcountll(ports));
	CU_ASSERT_EQUAL(uplinks_used(&n, "static", 2, &ooo), __builtin_popcountll(ports));
	net_free(&n);
}

static const struct test_case tests[] = {
	{ "RoCEv2 and IB differ by their frame overheads", test_overheads },
	{ "16-to-1 incast: IB and PFC lossless, lossy drops", test_incast_16 },
	{ "PFC headroom covers 300 m cables", test_headroom },
	{ "dynamic PFC thresholds settle at alpha x free buffer", test_pfc_dynamic },
	{ "PFC spreads congestion to a victim; IB VLs isolate it", test_victim },
	{ "PFC deadlock on a ring is reported", test_pfc_deadlock },
	{ "ECMP: a flow keeps its path, flows fall as balls into bins", test_ecmp },
	{ "Ethernet priorities: data on 0..6 only", test_priorities_checked },
	{ NULL, NULL },
};

TEST_MAIN("eth", tests)
