/* SPDX-License-Identifier: MIT */
/*
 * test_ftree_shift.c - simulated shift permutations on full-bisection fat
 * trees: what ftree routing is for (Zahavi et al., 2009).
 *
 * For every shift k (host i sends 64 KiB to host i+k mod N, all at once,
 * the `shift:k=K` traffic pattern), the fabric runs with ftree routes and
 * must show no credit stall on any port, switch or host (PortXmitWait 0),
 * and every
 * message must complete within 1% of the closed form of a message alone on
 * its path: hca.latency + (h+1) x propagation + h x switch latency + its
 * wire bytes at the link rate, computed here from IBA ch. 9 header sizes and
 * the 4xHDR data rate (200 Gb/s), not from the model.
 *
 * The same shifts with minhop routes show the difference: on the 3-level
 * tree minhop's per-switch balance stacks destinations on the same core
 * links, while ftree, which indexes hosts by their place in the tree, does
 * not. On the 2-level trees minhop spreads the shifts like ftree, whatever
 * the hosts' LIDs (scrambled as an SM assigning them by GUID order does):
 * it visits each leaf's hosts by port, as OpenSM does, not by LID.
 *
 * Trees: topologies/examples/fattree-16.topo and fattree-128.topo (2
 * levels, 2 parallel cables per leaf and spine) and the generator's 3-level
 * k=8 fat tree (128 hosts, 80 switches).
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/fabric/fab.h"
#include "models/net/net.h"
#include "models/sm/sm.h"
#include "tests/unit/test_main.h"
#include "tests/unit/util_fabric.h"
#include "topologies/topo.h"
#include "traces/trace_spec.h"

#define MSG_BYTES 65536
#define RATE_4XHDR 200e9	/* 4 lanes x 53.125 Gb/s PAM4, RS FEC, 256b/257b */

static void report(const struct sim_diag *d, const char *what)
{
	char msg[1200];

	sim_diag_format(d, msg, sizeof(msg));
	fprintf(stderr, "\n  %s: %s\n", what, msg);
}

/* Wire bytes of an RDMA WRITE of `bytes` at `mtu` (IBA ch. 9). */
static double wire_bytes(uint64_t bytes, uint32_t mtu)
{
	double total = 0;
	uint64_t left = bytes;
	int first = 1;

	do {
		uint64_t pl = left < mtu ? left : mtu;

		/* LRH 8 + BTH 12 + RETH 16 (first) + payload padded to 4 + ICRC 4 + VCRC 2 */
		total += 8 + 12 + (first ? 16 : 0) + (double)((pl + 3) / 4 * 4) + 4 + 2;
		left -= pl;
		first = 0;
	} while (left);
	return total;
}

/* Switches between two hosts, following the tables (the path's h). */
static int switches_on_path(const struct net *n, int src, int dst)
{
	int nodes[64], ports[64];
	int k = sm_path(n, src, net_lid_of(n, dst, net_first_port(n, dst)), nodes, ports, 64);

	CU_ASSERT_FATAL(k >= 3);
	return k - 2;
}

struct shift_result {
	int stalled;		/* shifts with PortXmitWait on a switch port */
	int host_stalled;	/* shifts with PortXmitWait on a host port */
	int slow;		/* shifts with a message more than 1% over its closed form */
	double worst;		/* worst (completion / closed form) - 1 */
	uint64_t wait_ps;	/* switch-port PortXmitWait over all shifts */
};

static void run_shift(const struct net *n, int k, bool ar, struct shift_result *r)
{
	struct fab_params p;
	struct fab_msgs m = { 0 };
	struct fab_totals t;
	struct sim_diag d;
	char spec[64];
	uint64_t wait = 0, host_wait = 0;
	double worst = 0;
	struct fab *f;

	tf_params(&p, "hdr");	/* adaptive routing, per-output queues */
	if (!ar)
		tf_tables(&p);
	snprintf(spec, sizeof(spec), "shift:k=%d,size=%d", k, MSG_BYTES);
	if (trace_spec_parse(spec, n, 1, &m, &d))
		report(&d, spec);
	CU_ASSERT_FATAL(m.n == (size_t)net_nhosts(n));
	f = fab_create(n, &p, &m, 1, &d);
	if (!f)
		report(&d, "fab_create");
	CU_ASSERT_FATAL(f != NULL);
	if (fab_run(f, &d))
		report(&d, "fab_run");
	fab_totals(f, &t);
	CU_ASSERT_EQUAL(t.msgs_done, m.n);
	CU_ASSERT_EQUAL(t.drops, 0);
	for (int i = 0; i < fab_nports(f); i++) {
		const struct fab_port_info *pi = fab_port(f, i);

		for (int v = 0; v <= FAB_MAX_VLS; v++) {
			if (n->nodes[pi->node].type == NET_SWITCH)
				wait += pi->vl[v].xmit_wait_ps;
			else
				host_wait += pi->vl[v].xmit_wait_ps;
		}
	}
	for (size_t i = 0; i < m.n; i++) {
		const struct fab_msg *msg = &m.v[i];
		int h = switches_on_path(n, (int)msg->src, (int)msg->dst);
		double prop = p.cable_m * p.ps_per_m * 1e-12;
		double expect = p.hca_latency_ns * 1e-9 + (h + 1) * prop +
				h * p.sw_latency_ns * 1e-9 +
				wire_bytes(msg->bytes, p.mtu) * 8 / RATE_4XHDR;
		double got = (double)(msg->end - msg->start) * 1e-12;

		CU_ASSERT_FATAL(msg->done);
		if (got / expect - 1 > worst)
			worst = got / expect - 1;
	}
	r->stalled += wait > 0;
	r->host_stalled += host_wait > 0;
	r->slow += worst > 0.01;
	r->wait_ps += wait;
	if (worst > r->worst)
		r->worst = worst;
	fab_destroy(f);
	fab_msgs_free(&m);
}

static void all_shifts(struct net *n, const char *engine, bool ar, struct shift_result *r)
{
	struct sim_diag d;

	memset(r, 0, sizeof(*r));
	if (sm_route(n, engine, NULL, &d))
		report(&d, engine);
	CU_ASSERT_FATAL(n->nodes[net_host(n, 0)].type == NET_CA);
	for (int k = 1; k < net_nhosts(n); k++)
		run_shift(n, k, ar, r);
}

static void print(const char *tree, const char *engine, const struct net *n,
		  const struct shift_result *r)
{
	fprintf(stderr, "\n  %s, %s: %d shifts; credit stalls on %d at switch ports (%.3f us in all), "
		"on %d at host ports; %d over 1%%, worst +%.2f%%", tree, engine,
		net_nhosts(n) - 1, r->stalled, (double)r->wait_ps * 1e-6, r->host_stalled,
		r->slow, r->worst * 100);
}

/* Hosts' LIDs in a scrambled (fixed) order: see the header. */
static void scramble_lids(struct net *n)
{
	struct sim_diag d;
	int nh = net_nhosts(n);
	uint16_t *lids = malloc(sizeof(uint16_t) * nh);
	uint32_t x = 12345;

	CU_ASSERT_FATAL(lids && n->lid_node);
	for (int i = 0; i < nh; i++)
		lids[i] = net_lid_of(n, net_host(n, i), 1);
	for (int i = nh - 1; i > 0; i--) {
		uint16_t t;
		int j;

		x = x * 1103515245u + 12345u;
		j = (int)((x >> 8) % (uint32_t)(i + 1));
		t = lids[i];
		lids[i] = lids[j];
		lids[j] = t;
	}
	for (int i = 0; i < nh; i++)
		n->nodes[net_host(n, i)].ports[1].lid = lids[i];
	CU_ASSERT_FATAL(net_install_lids(n, &d) == 0);
	free(lids);
}

/*
 * By the tables: ftree, no stall and the closed form on every shift;
 * minhop contends if told so. With the preset's adaptive routing (HDR:
 * ib.ar=on, per-output queues) ftree's shifts stay exactly that - a
 * switch keeps the LFT's port while no queue forms on it - and where
 * minhop's tables collide, the packets that queue take the group's other
 * ports: no credit stall, within 5% of the closed form.
 */
static void check_tree(struct net *n, const char *tree, bool minhop_contends)
{
	struct shift_result r;

	all_shifts(n, "ftree", false, &r);
	print(tree, "ftree", n, &r);
	CU_ASSERT_EQUAL(r.stalled, 0);
	CU_ASSERT_EQUAL(r.host_stalled, 0);
	CU_ASSERT_EQUAL(r.slow, 0);
	CU_ASSERT(r.worst <= 0.01);
	all_shifts(n, "minhop", false, &r);
	print(tree, "minhop", n, &r);
	/*
	 * Where two flows share a leaf's up-link the leaf's input buffers fill
	 * and the hosts wait for credits; deeper in a 3-level tree the
	 * switches do too.
	 */
	if (minhop_contends) {
		CU_ASSERT(r.stalled + r.host_stalled > 0);
		CU_ASSERT(r.slow > 0);
	}
	all_shifts(n, "ftree", true, &r);
	print(tree, "ftree, AR", n, &r);
	CU_ASSERT_EQUAL(r.stalled + r.host_stalled, 0);
	CU_ASSERT(r.worst <= 0.01);
	all_shifts(n, "minhop", true, &r);
	print(tree, "minhop, AR", n, &r);
	CU_ASSERT_EQUAL(r.stalled + r.host_stalled, 0);
	CU_ASSERT(r.worst <= 0.05);
}

static void load_example(struct net *n, const char *name)
{
	char path[512], rel[128];
	struct sim_diag d;

	snprintf(rel, sizeof(rel), "topologies/examples/%s", name);
	if (topo_load(test_src_path(rel, path, sizeof(path)), n, &d))
		report(&d, name);
	CU_ASSERT_FATAL(n->nnodes > 0);
}

static void two_level(const char *file, int hosts)
{
	struct net n;

	load_example(&n, file);
	CU_ASSERT_EQUAL_FATAL(net_nhosts(&n), hosts);
	check_tree(&n, file, false);
	scramble_lids(&n);
	check_tree(&n, "same, LIDs scrambled", false);
	net_free(&n);
}

static void test_fattree_16(void)
{
	two_level("fattree-16.topo", 16);
}

static void test_fattree_128(void)
{
	two_level("fattree-128.topo", 128);
}

static void test_fattree_3_levels(void)
{
	char *argv[] = { "fattree", "--levels", "3", "--radix", "8" };
	struct topo_gen_params p;
	struct sim_diag d;
	struct net n;

	if (topo_gen_parse(&p, 5, argv, &d) || topo_gen_net(&n, &p, &d)) {
		report(&d, "topo gen fattree --levels 3 --radix 8");
		CU_FAIL_FATAL("generator");
	}
	CU_ASSERT_FATAL(net_validate(&n, &d) == 0);
	CU_ASSERT_EQUAL_FATAL(net_nhosts(&n), 128);
	check_tree(&n, "fattree --levels 3 --radix 8", true);
	net_free(&n);
}

static const struct test_case tests[] = {
	{ "fattree-16: every shift at line rate with ftree", test_fattree_16 },
	{ "fattree-128: every shift at line rate with ftree", test_fattree_128, .heavy = true },
	{ "3-level k=8: every shift at line rate with ftree", test_fattree_3_levels, .heavy = true },
	{ NULL, NULL },
};

TEST_MAIN("ftree_shift", tests)
