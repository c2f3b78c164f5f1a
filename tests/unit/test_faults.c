/* SPDX-License-Identifier: MIT */
/*
 * test_faults.c - adaptive routing, per-output switch queues, out-of-order
 * RC and faults during a run, through the fabric's API (so that the
 * sanitizer builds run them too; tests/e2e/adaptive.sh and faults.sh check
 * the figures through the command line):
 *  - an all-to-all on fattree-16 with ib.ar=on and switch.queues=voq is
 *    delivered whole, with packets held out of order and choices made,
 *    every credit invariant walked after each event (sim.check);
 *  - net_dup copies a routed fabric: the same tables, freed apart;
 *  - a spine cable dies mid-run: with a rerouter the new tables are
 *    installed, acyclic, and everything is delivered; without one and
 *    with the cable back later (sim.check on), everything too; with
 *    neither, the QPs crossing it end in error.
 */
#include <CUnit/CUnit.h>
#include <stdlib.h>
#include <string.h>

#include "models/fabric/fab.h"
#include "models/net/net.h"
#include "models/sm/sm.h"
#include "tests/unit/test_main.h"
#include "tests/unit/util_fabric.h"
#include "topologies/topo.h"

static void load_tree(struct net *n)
{
	char path[512];
	struct sim_diag d;

	CU_ASSERT_FATAL(topo_load(test_src_path("topologies/examples/fattree-16.topo", path,
						sizeof(path)), n, &d) == 0);
	CU_ASSERT_FATAL(sm_route(n, "minhop", NULL, &d) == 0);
}

/* Every host to every other: 240 messages of `bytes`. */
static void alltoall(const struct net *n, struct fab_msgs *m, uint64_t bytes)
{
	uint32_t s = 0;

	for (int a = 0; a < net_nhosts(n); a++)
		for (int b = 0; b < net_nhosts(n); b++)
			if (a != b)
				tf_add_msg(m, net_host(n, a), net_host(n, b), bytes, s++, 0);
}

static void test_ar_voq(void)
{
	struct net n;
	struct fab_params p;
	struct fab_msgs m = { 0 };
	struct fab_totals t;

	load_tree(&n);
	tf_params(&p, "hdr");
	tf_set(&p, "ib.ar=on");
	tf_set(&p, "switch.queues=voq");
	tf_set(&p, "sim.check=1");
	alltoall(&n, &m, 64 << 10);
	struct fab *f = tf_run(&n, &p, &m);

	fab_totals(f, &t);
	CU_ASSERT_EQUAL(t.msgs_done, 240);
	CU_ASSERT(t.lb_chosen > 0 && t.lb_moved > 0 && t.lb_moved < t.lb_chosen);
	CU_ASSERT(t.ooo_held > 0);
	CU_ASSERT_EQUAL(t.retransmitted, 0);
	CU_ASSERT(t.credit_checks > 0);
	fab_destroy(f);
	fab_msgs_free(&m);
	net_free(&n);
}

static void test_net_dup(void)
{
	struct net n, c;

	load_tree(&n);
	CU_ASSERT_FATAL(net_dup(&c, &n) == 0);
	CU_ASSERT_EQUAL(c.nnodes, n.nnodes);
	CU_ASSERT_EQUAL(c.max_lid, n.max_lid);
	for (int i = 0; i < n.nnodes; i++) {
		CU_ASSERT_STRING_EQUAL(c.nodes[i].desc, n.nodes[i].desc);
		CU_ASSERT(c.nodes[i].ports != n.nodes[i].ports);
		CU_ASSERT_EQUAL(c.nodes[i].lft_len, n.nodes[i].lft_len);
		if (n.nodes[i].lft)
			CU_ASSERT(!memcmp(c.nodes[i].lft, n.nodes[i].lft, n.nodes[i].lft_len));
	}
	CU_ASSERT_EQUAL(net_find_host(&c, "spine0"), net_find_host(&n, "spine0"));
	net_free(&n);	/* the copy stands alone */
	CU_ASSERT_EQUAL(net_nhosts(&c), 16);
	net_free(&c);
}

static int reroute(void *ctx, struct net *n, const char *tables, struct sim_diag *d)
{
	(*(int *)ctx)++;
	CU_ASSERT_PTR_NULL(tables);	/* no dump given: the engine */
	return sm_route(n, "minhop", NULL, d);
}

/* spine0's port 1 dies at 20 us (and comes back at `up_ps`, when set);
 * the switches follow their tables, or with `ar` adaptive routing, which
 * never chooses a dead port. */
static struct fab *fault_run(struct net *n, struct fab_msgs *m, bool rr, sim_time_t up_ps,
			     int retries, int *calls, bool ar)
{
	struct fab_params p;
	struct sim_diag d;
	struct fab_fault x = { .at = 20 * SIM_US, .node = net_find_host(n, "spine0"), .port = 1,
			       .kind = FAB_FAULT_DOWN };
	char kv[32];

	tf_params(&p, "hdr");
	tf_set(&p, "hca.timeout=10");
	tf_set(&p, "sm.reroute_ns=1ms");
	tf_set(&p, "sim.check=1");
	tf_set(&p, ar ? "ib.ar=on" : "ib.ar=off");
	snprintf(kv, sizeof(kv), "hca.retry_cnt=%d", retries);
	tf_set(&p, kv);
	alltoall(n, m, 256 << 10);
	struct fab *f = fab_create(n, &p, m, 1, &d);

	CU_ASSERT_FATAL(f != NULL);
	CU_ASSERT_FATAL(fab_fault_add(f, &x, &d) == 0);
	if (up_ps) {
		x.at = up_ps;
		x.kind = FAB_FAULT_UP;
		CU_ASSERT_FATAL(fab_fault_add(f, &x, &d) == 0);
	}
	if (rr)
		fab_set_rerouter(f, reroute, calls, true);
	if (fab_run(f, &d)) {
		char msg[512];

		sim_diag_format(&d, msg, sizeof(msg));
		CU_FAIL(msg);
		fprintf(stderr, "\n  fab_run: %s\n", msg);
	}
	return f;
}

static void test_link_down(void)
{
	struct net n;
	struct fab_msgs m = { 0 };
	struct fab_totals t;
	struct sim_diag d;
	struct fab_fault bad = { .at = 1, .node = 0, .port = 99 };
	int calls = 0;

	load_tree(&n);
	/* rerouted after 1 ms */
	struct fab *f = fault_run(&n, &m, true, 0, 7, &calls, false);
	const struct fab_fault_report *r = fab_fault_report(f);

	fab_totals(f, &t);
	CU_ASSERT_EQUAL(t.msgs_done, 240);
	CU_ASSERT(t.drops_link > 0 && t.drops == t.drops_link && t.retransmitted > 0);
	CU_ASSERT_FATAL(r != NULL);
	CU_ASSERT_EQUAL(calls, 1);
	CU_ASSERT_EQUAL(r->nreroutes, 1);
	CU_ASSERT(r->reroutes[0].ok && r->reroutes[0].acyclic);
	CU_ASSERT_EQUAL(r->reroutes[0].at, 20 * SIM_US + SIM_MS);
	CU_ASSERT(r->qps_recovered > 0 && r->qps_failed == 0 && r->lost == t.drops_link);
	CU_ASSERT_EQUAL(fab_fault_add(f, &bad, &d), -1);
	fab_destroy(f);
	fab_msgs_free(&m);

	/* back at 2 ms, no rerouter */
	memset(&m, 0, sizeof(m));
	f = fault_run(&n, &m, false, 2 * SIM_MS, 7, &calls, false);
	fab_totals(f, &t);
	CU_ASSERT_EQUAL(t.msgs_done, 240);
	CU_ASSERT_EQUAL(fab_fault_report(f)->nreroutes, 0);
	fab_destroy(f);
	fab_msgs_free(&m);

	/* neither: two retries, then the QPs crossing it are in error */
	memset(&m, 0, sizeof(m));
	f = fault_run(&n, &m, false, 0, 2, &calls, false);
	fab_totals(f, &t);
	CU_ASSERT(t.msgs_done < 240 && t.msgs_lost > 0);
	CU_ASSERT(fab_fault_report(f)->qps_failed > 0);
	fab_destroy(f);
	fab_msgs_free(&m);

	/* the same with adaptive routing (ib.ar=on): the packets on the
	 * cable when it died are lost and resent, later ones take the other
	 * spine's ports (a switch never chooses a dead port), and every QP
	 * recovers without the subnet manager. The packets already queued
	 * for the dead port leave on it at once (lost): no new packet comes
	 * for that port to wake it */
	memset(&m, 0, sizeof(m));
	f = fault_run(&n, &m, false, 0, 2, &calls, true);
	fab_totals(f, &t);
	CU_ASSERT_EQUAL(t.msgs_done, 240);
	CU_ASSERT(t.drops_link > 0 && t.retransmitted > 0);
	CU_ASSERT_EQUAL(fab_fault_report(f)->qps_failed, 0);
	fab_destroy(f);
	fab_msgs_free(&m);
	net_free(&n);
}

static const struct test_case tests[] = {
	{ "all-to-all with AR and VOQs: whole, reordered, credits kept", test_ar_voq },
	{ "net_dup: a routed fabric copied, freed apart", test_net_dup },
	{ "a spine cable dies: rerouted, back up, or QPs in error", test_link_down },
	{ NULL, NULL },
};

TEST_MAIN("faults", tests)
