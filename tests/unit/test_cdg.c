/* SPDX-License-Identifier: MIT */
/*
 * test_cdg.c - deadlock analysis: the channel dependency graph of a routing
 * (models/sm/sm_cdg.c) and the run-time credit-loop report
 * (models/fabric/fab_deadlock.c).
 *
 * The CDG is checked against a naive model written here: follow sm_path()
 * for every ordered host pair and collect (channel, next channel) pairs in
 * a plain sorted array. The library's graph must hold exactly those
 * dependencies, on fat trees (acyclic under minhop) and on a ring (cyclic).
 * A reported cycle must be a cycle of that naive graph, edge by edge. Then
 * the simulator: minhop on a 4-switch ring with one VL under all-to-all
 * load must stop with a credit-loop report whose ports form a real loop of
 * cables, and a routing with an acyclic CDG (a line through the ring,
 * computed here; updn when the engine exists) must carry the same load to
 * the end. dor on a mesh and updn on a torus run when those engines exist.
 * Last, bad input (no LIDs, holes and loops in the LFTs, bad VLs) and the
 * time to build the CDG of 128- and 1024-host fat trees.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "models/fabric/fab.h"
#include "models/net/net.h"
#include "models/sm/sm.h"
#include "models/sm/sm_cdg.h"
#include "models/sm/sm_mp.h"
#include "tests/unit/test_main.h"
#include "topologies/topo.h"

/* ---- fabrics ------------------------------------------------------------- */

static int add_node(struct net *n, enum net_node_type t, int ports, const char *name)
{
	struct sim_diag d;
	int i = net_add_node(n, t, ports, name, name, &d);

	CU_ASSERT_FATAL(i >= 0);
	return i;
}

static void link2(struct net *n, int a, int pa, int b, int pb)
{
	struct sim_diag d;

	CU_ASSERT_FATAL(net_connect(n, a, pa, b, pb, 0, &d) == 0);
}

/*
 * A ring of nsw switches with hps hosts each, laid out as
 * topologies/examples/ring-4.net: sw i ports 1..hps to its hosts, port
 * hps+1 clockwise to sw i+1 (its port hps+2). Switches are nodes 0..nsw-1.
 */
static void build_ring(struct net *n, int nsw, int hps)
{
	char name[32];
	struct sim_diag d;

	net_init(n);
	for (int i = 0; i < nsw; i++) {
		snprintf(name, sizeof(name), "sw%d", i);
		add_node(n, NET_SWITCH, hps + 2, name);
	}
	for (int i = 0; i < nsw; i++) {
		for (int h = 0; h < hps; h++) {
			snprintf(name, sizeof(name), "h%d", i * hps + h);
			link2(n, i, h + 1, add_node(n, NET_CA, 1, name), 1);
		}
		link2(n, i, hps + 1, (i + 1) % nsw, hps + 2);
	}
	CU_ASSERT_FATAL(net_validate(n, &d) == 0);
}

static void route(struct net *n, const char *engine)
{
	struct sim_diag d;
	char msg[1200];
	int rc = sm_route(n, engine, NULL, &d);

	if (rc) {
		sim_diag_format(&d, msg, sizeof(msg));
		fprintf(stderr, "\n  route %s: %s\n", engine, msg);
	}
	CU_ASSERT_FATAL(rc == 0);
}

/*
 * Routes that never use the cable sw(nsw-1) -> sw0: the ring as a line, a
 * tree, so its CDG is acyclic (what up/down routing rooted at sw0 does).
 */
static void route_line(struct net *n, int nsw, int hps)
{
	struct sim_diag d;

	CU_ASSERT_FATAL(net_assign_lids(n, &d) == 0);
	for (int s = 0; s < nsw; s++) {
		struct net_node *nd = &n->nodes[s];

		free(nd->lft);
		nd->lft_len = (uint32_t)n->max_lid + 1;
		nd->lft = malloc(nd->lft_len);
		CU_ASSERT_FATAL(nd->lft != NULL);
		memset(nd->lft, SM_NO_ROUTE, nd->lft_len);
		for (uint32_t l = 1; l <= n->max_lid; l++) {
			int dn = n->lid_node[l];
			int ds = n->nodes[dn].type == NET_SWITCH ? dn :
				 n->nodes[dn].ports[1].remote_node;

			if (ds == s)
				nd->lft[l] = n->nodes[dn].type == NET_SWITCH ? 0 :
					     (uint8_t)n->nodes[dn].ports[1].remote_port;
			else
				nd->lft[l] = (uint8_t)(ds > s ? hps + 1 : hps + 2);
		}
	}
}

static int load_file(struct net *n, const char *rel)
{
	char path[1024], msg[1200];
	struct sim_diag d;
	int rc = topo_load(test_src_path(rel, path, sizeof(path)), n, &d);

	if (rc) {
		sim_diag_format(&d, msg, sizeof(msg));
		fprintf(stderr, "\n  %s\n", msg);
	}
	return rc;
}

/* ---- the naive reference ------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Every dependency of every host pair, by sm_path(), sorted and unique. */
static uint64_t *naive_edges(const struct sm_cdg *g, size_t *count)
{
	const struct net *n = g->net;
	int nh = net_nhosts(n), max = n->nnodes + 2;
	int *nodes = malloc(sizeof(int) * max), *ports = malloc(sizeof(int) * max);
	size_t cap = 1024, k = 0, u = 0;
	uint64_t *e = malloc(cap * sizeof(*e));

	CU_ASSERT_FATAL(nodes && ports && e);
	for (int a = 0; a < nh; a++)
		for (int b = 0; b < nh; b++) {
			int src = net_host(n, a), dst = net_host(n, b), len;

			if (a == b)
				continue;
			len = sm_path(n, src, net_lid_of(n, dst, 1), nodes, ports, max);
			CU_ASSERT_FATAL(len >= 2);
			for (int i = 0; i + 2 < len; i++) {
				int64_t c1 = sm_cdg_chan(g, nodes[i], ports[i], 0);
				int64_t c2 = sm_cdg_chan(g, nodes[i + 1], ports[i + 1], 0);

				CU_ASSERT_FATAL(c1 >= 0 && c2 >= 0);
				if (k == cap) {
					cap *= 2;
					e = realloc(e, cap * sizeof(*e));
					CU_ASSERT_FATAL(e != NULL);
				}
				e[k++] = (uint64_t)c1 << 32 | (uint64_t)c2;
			}
		}
	qsort(e, k, sizeof(*e), cmp_u64);
	for (size_t i = 0; i < k; i++)
		if (!u || e[u - 1] != e[i])
			e[u++] = e[i];
	free(nodes);
	free(ports);
	*count = u;
	return e;
}

static bool naive_has(const uint64_t *e, size_t cnt, uint32_t a, uint32_t b)
{
	uint64_t key = (uint64_t)a << 32 | b;

	return bsearch(&key, e, cnt, sizeof(*e), cmp_u64) != NULL;
}

/* The library's graph holds exactly the naive dependencies. */
static void check_against_naive(const struct sm_cdg *g)
{
	size_t cnt;
	uint64_t *e = naive_edges(g, &cnt);
	size_t missing = 0;

	CU_ASSERT_EQUAL(g->nedges, cnt);
	for (size_t i = 0; i < cnt; i++)
		if (!sm_cdg_has_edge(g, (uint32_t)(e[i] >> 32), (uint32_t)e[i]))
			missing++;
	CU_ASSERT_EQUAL(missing, 0);
	/* and no extra one: walk the CSR */
	for (uint32_t c = 0; c < g->nchan; c++)
		for (uint32_t k = g->off[c]; k < g->off[c + 1]; k++)
			if (!naive_has(e, cnt, c, g->adj[k]))
				missing++;
	CU_ASSERT_EQUAL(missing, 0);
	free(e);
}

static void build_cdg(struct sm_cdg *g, const struct net *n)
{
	struct sim_diag d;

	CU_ASSERT_FATAL(sm_cdg_build(g, n, NULL, &d) == 0);
}

/* A cycle is made of dependencies of real paths, and is a closed walk of switch ports. */
static void check_cycle(const struct sm_cdg *g, const struct sm_cdg_cycle *c)
{
	size_t cnt;
	uint64_t *e = naive_edges(g, &cnt);

	CU_ASSERT_FATAL(c->len >= 2 && c->chan != NULL);
	for (uint32_t i = 0; i < c->len; i++) {
		uint32_t a = c->chan[i], b = c->chan[(i + 1) % c->len];
		int na, pa, va, nb, pb, vb;

		CU_ASSERT(naive_has(e, cnt, a, b));
		CU_ASSERT(sm_cdg_has_edge(g, a, b));
		sm_cdg_chan_parts(g, a, &na, &pa, &va);
		sm_cdg_chan_parts(g, b, &nb, &pb, &vb);
		/* a's cable ends at b's switch */
		CU_ASSERT_EQUAL(g->net->nodes[na].ports[pa].remote_node, nb);
		CU_ASSERT_EQUAL(g->net->nodes[na].type, NET_SWITCH);
		CU_ASSERT_EQUAL(va, c->vl);
		CU_ASSERT_EQUAL(vb, c->vl);
		for (uint32_t j = 0; j < i; j++)
			CU_ASSERT(c->chan[j] != a);	/* simple cycle */
	}
	free(e);
}

/* ---- CDG ------------------------------------------------------------------ */

static void test_tree_acyclic(void)
{
	struct net n;
	struct sm_cdg g;
	struct sm_cdg_cycle c;
	struct sim_diag d;

	CU_ASSERT_FATAL(load_file(&n, "topologies/examples/fattree-16.topo") == 0);
	route(&n, "minhop");
	build_cdg(&g, &n);
	CU_ASSERT_EQUAL(g.pairs, 16 * 15);
	CU_ASSERT_EQUAL(g.pairs_unrouted + g.pairs_looping, 0);
	CU_ASSERT(g.nedges > 0);
	check_against_naive(&g);
	CU_ASSERT_EQUAL(sm_cdg_find_cycle(&g, &c, &d), 0);
	CU_ASSERT_EQUAL(c.len, 0);
	CU_ASSERT_EQUAL(c.nsccs, 0);
	CU_ASSERT_EQUAL(c.vl_mask, 0);
	sm_cdg_cycle_free(&c);
	sm_cdg_free(&g);
	net_free(&n);
}

static void test_ring_cyclic(void)
{
	struct net n;
	struct sm_cdg g;
	struct sm_cdg_cycle c;
	struct sim_diag d;
	char buf[512], first[64];
	int need;

	CU_ASSERT_FATAL(load_file(&n, "topologies/examples/ring-4.net") == 0);
	route(&n, "minhop");
	build_cdg(&g, &n);
	check_against_naive(&g);
	CU_ASSERT_EQUAL_FATAL(sm_cdg_find_cycle(&g, &c, &d), 1);
	CU_ASSERT_EQUAL(c.vl, 0);
	CU_ASSERT_EQUAL(c.vl_mask, 1);
	CU_ASSERT(c.nsccs >= 1);
	CU_ASSERT(c.nchans >= c.len);
	/* a 4-ring's loop goes round all four switches */
	CU_ASSERT_EQUAL(c.len, 4);
	check_cycle(&g, &c);
	need = sm_cdg_cycle_str(&g, &c, buf, sizeof(buf));
	CU_ASSERT(need > 0 && (size_t)need < sizeof(buf));
	CU_ASSERT_EQUAL((size_t)need, strlen(buf));
	sm_cdg_chan_str(&g, c.chan[0], first, sizeof(first));
	CU_ASSERT(!strncmp(buf, first, strlen(first)));
	CU_ASSERT(!strcmp(buf + strlen(buf) - strlen(first), first));
	CU_ASSERT(strstr(buf, " -> ") != NULL);
	/* truncation is like snprintf's */
	char small[10];

	CU_ASSERT_EQUAL(sm_cdg_cycle_str(&g, &c, small, sizeof(small)), need);
	CU_ASSERT_EQUAL(strlen(small), sizeof(small) - 1);
	CU_ASSERT(!strncmp(small, buf, sizeof(small) - 1));
	sm_cdg_cycle_free(&c);
	sm_cdg_free(&g);
	net_free(&n);
}

/* The same ring, routed as a line: no dependency crosses sw3 -> sw0. */
static void test_ring_line_acyclic(void)
{
	struct net n;
	struct sm_cdg g;
	struct sm_cdg_cycle c;
	struct sim_diag d;

	build_ring(&n, 4, 2);
	route_line(&n, 4, 2);
	build_cdg(&g, &n);
	check_against_naive(&g);
	CU_ASSERT_EQUAL(g.pairs_unrouted, 0);
	CU_ASSERT_EQUAL(sm_cdg_find_cycle(&g, &c, &d), 0);
	/* sw3 -> sw0 carries nothing at all */
	CU_ASSERT_EQUAL(g.off[sm_cdg_chan(&g, 3, 3, 0) + 1] - g.off[sm_cdg_chan(&g, 3, 3, 0)], 0);
	sm_cdg_cycle_free(&c);
	sm_cdg_free(&g);
	net_free(&n);
}

/* A larger ring: 8 switches, 3 hosts each, minhop loops both ways. */
static void test_ring8(void)
{
	struct net n;
	struct sm_cdg g;
	struct sm_cdg_cycle c;
	struct sim_diag d;

	build_ring(&n, 8, 3);
	route(&n, "minhop");
	build_cdg(&g, &n);
	check_against_naive(&g);
	CU_ASSERT_EQUAL_FATAL(sm_cdg_find_cycle(&g, &c, &d), 1);
	check_cycle(&g, &c);
	CU_ASSERT_EQUAL(c.len, 8);
	/* both directions of the ring are loops: two components */
	CU_ASSERT_EQUAL(c.nsccs, 2);
	CU_ASSERT_EQUAL(c.nchans, 16);
	sm_cdg_cycle_free(&c);
	sm_cdg_free(&g);
	net_free(&n);
}

static int vl_const(void *ctx, int src_node, int src_port, net_lid_t dlid)
{
	(void)src_node;
	(void)src_port;
	(void)dlid;
	return *(int *)ctx;
}

/* Dateline: traffic that would cross sw3 -> sw0 clockwise (or sw0 -> sw3
 * the other way) goes on VL 1 from its source, so no VL sees the whole ring. */
struct dateline {
	const struct net *n;
};

static int vl_dateline(void *ctx, int src_node, int src_port, net_lid_t dlid)
{
	const struct dateline *dl = ctx;
	const struct net *n = dl->n;
	int nodes[16], ports[16], len;

	(void)src_port;	/* one-port hosts: sm_path leaves by port 1 */
	len = sm_path(n, src_node, dlid, nodes, ports, 16);
	if (len < 2)
		return 0;
	for (int i = 1; i + 1 < len; i++) {
		int from = nodes[i], to = n->nodes[from].ports[ports[i]].remote_node;

		if ((from == 3 && to == 0) || (from == 0 && to == 3))
			return 1;
	}
	return 0;
}

static void test_vl_callback(void)
{
	struct net n;
	struct sm_cdg g;
	struct sm_cdg_cycle c;
	struct sim_diag d;
	struct sm_cdg_opts o = { .nvls = 2, .vl_of = vl_const };
	struct dateline dl;
	int vl = 1;

	build_ring(&n, 4, 2);
	route(&n, "minhop");

	/* everything on VL 1: the loop moves to VL 1 */
	o.ctx = &vl;
	CU_ASSERT_FATAL(sm_cdg_build(&g, &n, &o, &d) == 0);
	CU_ASSERT_EQUAL_FATAL(sm_cdg_find_cycle(&g, &c, &d), 1);
	CU_ASSERT_EQUAL(c.vl, 1);
	CU_ASSERT_EQUAL(c.vl_mask, 2);
	sm_cdg_cycle_free(&c);
	sm_cdg_free(&g);

	/* no pair carries data: no dependency, no cycle */
	vl = -1;
	CU_ASSERT_FATAL(sm_cdg_build(&g, &n, &o, &d) == 0);
	CU_ASSERT_EQUAL(g.nedges, 0);
	CU_ASSERT_EQUAL(g.pairs, 0);
	CU_ASSERT_EQUAL(sm_cdg_find_cycle(&g, &c, &d), 0);
	sm_cdg_cycle_free(&c);
	sm_cdg_free(&g);

	/* a VL out of range is refused with a message */
	vl = 2;
	CU_ASSERT_EQUAL(sm_cdg_build(&g, &n, &o, &d), -1);
	CU_ASSERT(strstr(d.msg, "VL 2") != NULL);

	/* dateline VLs break every loop */
	dl.n = &n;
	o.vl_of = vl_dateline;
	o.ctx = &dl;
	CU_ASSERT_FATAL(sm_cdg_build(&g, &n, &o, &d) == 0);
	CU_ASSERT_EQUAL(sm_cdg_find_cycle(&g, &c, &d), 0);
	CU_ASSERT(g.nedges > 0);
	sm_cdg_cycle_free(&c);
	sm_cdg_free(&g);
	net_free(&n);
}

/* Holes and loops in the LFTs are counted, not followed for ever. */
static void test_bad_lfts(void)
{
	struct net n;
	struct sm_cdg g;
	struct sm_cdg_cycle c;
	struct sim_diag d;
	struct sm_cdg_opts o = { .nvls = 99 };
	int h7;
	uint16_t lid7;

	build_ring(&n, 4, 2);
	/* no LIDs yet */
	CU_ASSERT_EQUAL(sm_cdg_build(&g, &n, NULL, &d), -1);
	CU_ASSERT(strstr(d.msg, "LIDs") != NULL);
	route(&n, "minhop");
	CU_ASSERT_EQUAL(sm_cdg_build(&g, &n, &o, &d), -1);
	CU_ASSERT(strstr(d.msg, "VLs") != NULL);

	/* a hole: sw1 forgets h7 */
	h7 = net_find(&n, "h7");
	lid7 = net_lid_of(&n, h7, 1);
	n.nodes[1].lft[lid7] = SM_NO_ROUTE;
	build_cdg(&g, &n);
	CU_ASSERT(g.pairs_unrouted >= 2);	/* h2, h3 at least */
	CU_ASSERT(strstr(g.first_bad, "sw1") != NULL);
	CU_ASSERT(strstr(g.first_bad, "h7") != NULL);
	sm_cdg_free(&g);

	/* a loop: sw1 and sw2 send h7's LID to each other */
	n.nodes[1].lft[lid7] = 3;	/* clockwise to sw2 */
	n.nodes[2].lft[lid7] = 4;	/* back to sw1 */
	build_cdg(&g, &n);
	CU_ASSERT(g.pairs_looping >= 2);
	CU_ASSERT(strstr(g.first_bad, "loop") != NULL);
	/* the ping-pong between sw1 and sw2 is a two-channel cycle */
	CU_ASSERT(sm_cdg_has_edge(&g, (uint32_t)sm_cdg_chan(&g, 1, 3, 0),
				  (uint32_t)sm_cdg_chan(&g, 2, 4, 0)));
	CU_ASSERT(sm_cdg_has_edge(&g, (uint32_t)sm_cdg_chan(&g, 2, 4, 0),
				  (uint32_t)sm_cdg_chan(&g, 1, 3, 0)));
	CU_ASSERT_EQUAL(sm_cdg_find_cycle(&g, &c, &d), 1);
	sm_cdg_cycle_free(&c);
	sm_cdg_free(&g);

	/* an LFT pointing at an unconnected port, and at a wrong CA */
	n.nodes[2].lft[lid7] = 7;	/* no such port */
	build_cdg(&g, &n);
	CU_ASSERT(g.pairs_unrouted > 0);
	sm_cdg_free(&g);
	n.nodes[1].lft[lid7] = 1;	/* h2 instead of h7 */
	build_cdg(&g, &n);
	CU_ASSERT(g.pairs_unrouted > 0);
	CU_ASSERT(strstr(g.first_bad, "instead") != NULL);
	sm_cdg_free(&g);

	/* no LFT at all on sw0 */
	free(n.nodes[0].lft);
	n.nodes[0].lft = NULL;
	n.nodes[0].lft_len = 0;
	build_cdg(&g, &n);
	CU_ASSERT(g.pairs_unrouted >= 2 * 7);	/* h0 and h1 reach nothing */
	sm_cdg_free(&g);
	CU_ASSERT_EQUAL(sm_cdg_chan(&g, 0, 1, 0), -1);	/* freed graph: no channel */
	net_free(&n);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The times are printed, not asserted: a unit test on a shared 2-core
 * machine (and under the sanitizers) cannot hold a wall-clock limit
 * without flaking; speed is bench/'s to report. What is asserted is that
 * the whole graph is built and searched. */
static void time_cdg(struct net *n, const char *what, int hosts)
{
	struct sm_cdg g;
	struct sm_cdg_cycle c;
	struct sim_diag d;
	double t0, t1, t2;

	t0 = now_s();
	build_cdg(&g, n);
	t1 = now_s();
	CU_ASSERT_EQUAL(sm_cdg_find_cycle(&g, &c, &d), 0);
	t2 = now_s();
	CU_ASSERT_EQUAL(g.pairs, (uint64_t)hosts * (hosts - 1));
	CU_ASSERT_EQUAL(g.pairs_unrouted + g.pairs_looping, 0);
	fprintf(stderr, "\n  %s: %u channels, %llu dependencies: build %.1f ms, cycle search %.1f ms ",
		what, g.nchan, (unsigned long long)g.nedges, (t1 - t0) * 1e3, (t2 - t1) * 1e3);
	sm_cdg_cycle_free(&c);
	sm_cdg_free(&g);
}

static void test_large_fattree(void)
{
	struct net n;
	struct sim_diag d;

	CU_ASSERT_FATAL(load_file(&n, "topologies/examples/fattree-128.topo") == 0);
	route(&n, "minhop");
	{
		struct sm_cdg g;

		build_cdg(&g, &n);
		check_against_naive(&g);
		sm_cdg_free(&g);
	}
	time_cdg(&n, "fattree-128", 128);
	net_free(&n);

	/* 1024 hosts: 32 leaves x 32, 16 spines x 2 links */
	CU_ASSERT_FATAL(topo_gen_fattree2_net(&n, 32, 16, 32, 2, "4xHDR", &d) == 0);
	route(&n, "minhop");
	time_cdg(&n, "fattree-1024", 1024);
	net_free(&n);
}

/* ---- run time --------------------------------------------------------------- */

static void alltoall(const struct net *n, struct fab_msgs *m, uint64_t bytes)
{
	int nh = net_nhosts(n);
	uint32_t stream = 0;

	memset(m, 0, sizeof(*m));
	for (int a = 0; a < nh; a++)
		for (int k = 1; k < nh; k++) {
			struct fab_msg msg = {
				.src = (uint32_t)net_host(n, a),
				.dst = (uint32_t)net_host(n, (a + k) % nh),
				.bytes = bytes, .after = -1, .stream = stream++,
			};

			CU_ASSERT_FATAL(fab_msgs_add(m, &msg) == 0);
		}
}

static void one_vl(struct fab_params *p)
{
	struct sim_diag d;

	fab_params_default(p);
	CU_ASSERT_FATAL(fab_params_set(p, "ib.vls=1", &d) == 0);
	CU_ASSERT_FATAL(fab_params_set(p, "sim.check=on", &d) == 0);
}

/* Run; returns fab_run's result, the diagnostic in d, totals in t. */
static int run_load(const struct net *n, struct fab_msgs *m, struct sim_diag *d,
		    struct fab_totals *t)
{
	struct fab_params p;
	struct fab *f;
	int rc;

	one_vl(&p);
	f = fab_create(n, &p, m, 1, d);
	CU_ASSERT_FATAL(f != NULL);
	rc = fab_run(f, d);
	fab_totals(f, t);
	fab_destroy(f);
	return rc;
}

/*
 * Parse "credit loop ...: A[p] -> B[q] (full, head for X) -> B[r] -> ..." and
 * check it: it closes on itself, every "->" out of an output port crosses a
 * cable to the named input port, and every input's head leaves by the next
 * output port named, on the same switch. Returns the number of switches.
 */
static int check_report(const struct net *n, const char *msg)
{
	const char *s = strstr(msg, "credit loop on VL 0");
	int node[64] = { 0 }, port[64] = { 0 }, k = 0, switches = 0;

	CU_ASSERT_FATAL(s != NULL);
	s = strstr(s, "): ");
	CU_ASSERT_FATAL(s != NULL);
	s += 3;
	/* tokens "name[port]", skipping the parenthesised notes */
	while (*s && k < 64) {
		char name[64];
		int p, used;

		if (*s == '(') {
			s = strchr(s, ')');
			CU_ASSERT_FATAL(s != NULL);
			s++;
			continue;
		}
		if (sscanf(s, "%63[^[ ][%d]%n", name, &p, &used) == 2) {
			node[k] = net_find(n, name);
			port[k] = p;
			CU_ASSERT_FATAL(node[k] >= 0);
			k++;
			s += used;
			continue;
		}
		s++;
	}
	/* out (in out)* ... in out: odd count, first = last */
	CU_ASSERT_FATAL(k >= 3 && k % 2 == 1);
	CU_ASSERT_EQUAL(node[0], node[k - 1]);
	CU_ASSERT_EQUAL(port[0], port[k - 1]);
	for (int i = 0; i + 1 < k; i += 2) {
		const struct net_port *out = &n->nodes[node[i]].ports[port[i]];

		CU_ASSERT_EQUAL(n->nodes[node[i]].type, NET_SWITCH);
		CU_ASSERT_EQUAL(out->remote_node, node[i + 1]);	/* a cable */
		CU_ASSERT_EQUAL(out->remote_port, port[i + 1]);
		CU_ASSERT_EQUAL(node[i + 1], node[i + 2]);	/* same switch */
		CU_ASSERT(port[i + 1] != port[i + 2]);
		switches++;
	}
	return switches;
}

static void test_runtime_loop(void)
{
	struct net n;
	struct fab_msgs m;
	struct fab_totals t;
	struct sim_diag d;

	CU_ASSERT_FATAL(load_file(&n, "topologies/examples/ring-4.net") == 0);
	route(&n, "minhop");
	alltoall(&n, &m, 1 << 20);
	CU_ASSERT_EQUAL_FATAL(run_load(&n, &m, &d, &t), -1);
	fprintf(stderr, "\n  report: %s ", d.msg);
	CU_ASSERT(strstr(d.msg, "stalled") != NULL);
	CU_ASSERT(strstr(d.msg, "(full, head for h") != NULL);
	CU_ASSERT(strstr(d.msg, "stuck packets are in its buffers") != NULL);
	CU_ASSERT_EQUAL(check_report(&n, d.msg), 4);
	CU_ASSERT(t.msgs_done < t.msgs_total);
	CU_ASSERT_EQUAL(t.drops, 0);
	fab_msgs_free(&m);
	net_free(&n);
}

/* A long loop is shortened in the middle so the report fits its buffer. */
static void test_runtime_long_loop(void)
{
	struct net n;
	struct fab_msgs m;
	struct fab_totals t;
	struct sim_diag d;
	const char *s;

	build_ring(&n, 16, 2);
	route(&n, "minhop");
	alltoall(&n, &m, 256 << 10);
	CU_ASSERT_EQUAL_FATAL(run_load(&n, &m, &d, &t), -1);
	fprintf(stderr, "\n  report: %s ", d.msg);
	s = strstr(d.msg, "credit loop on VL 0 through ");
	CU_ASSERT_FATAL(s != NULL);
	CU_ASSERT(strstr(s, "more hops) ...") != NULL);
	/* it still closes: the first port named is the last */
	const char *colon = strstr(s, "): "), *end = d.msg + strlen(d.msg);
	char first[32] = "";

	CU_ASSERT_FATAL(colon != NULL);
	CU_ASSERT(sscanf(colon + 3, "%31s", first) == 1);
	CU_ASSERT(end - strlen(first) > colon && !strcmp(end - strlen(first), first));
	fab_msgs_free(&m);
	net_free(&n);
}

/* The same load on a routing with an acyclic CDG completes. */
static void test_runtime_acyclic_completes(void)
{
	struct net n;
	struct fab_msgs m;
	struct fab_totals t;
	struct sim_diag d;

	build_ring(&n, 4, 2);
	route_line(&n, 4, 2);
	alltoall(&n, &m, 1 << 20);
	CU_ASSERT_EQUAL(run_load(&n, &m, &d, &t), 0);
	CU_ASSERT_EQUAL(t.msgs_done, t.msgs_total);
	CU_ASSERT_EQUAL(t.msgs_total, 56);
	fab_msgs_free(&m);
	net_free(&n);
}

/*
 * A stall that is no credit loop: h0's message to h2 is dropped (sw0 has no
 * route to h2) and lost, and h2's reply waits for it for ever. Nothing is
 * buffered; the report says what the last message waits for.
 */
static void test_runtime_no_loop(void)
{
	struct net n;
	struct sim_diag d;
	struct fab_params p;
	struct fab_msgs m = { 0 };
	struct fab *f;
	int sw, h[3];
	char name[8];

	net_init(&n);
	sw = add_node(&n, NET_SWITCH, 4, "sw0");
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "h%d", i);
		h[i] = add_node(&n, NET_CA, 1, name);
		link2(&n, sw, i + 1, h[i], 1);
	}
	route(&n, "minhop");
	n.nodes[sw].lft[net_lid_of(&n, h[2], 1)] = SM_NO_ROUTE;
	struct fab_msg a = { .src = (uint32_t)h[0], .dst = (uint32_t)h[2], .bytes = 4096,
			     .after = -1, .stream = 0 };
	struct fab_msg b = { .src = (uint32_t)h[2], .dst = (uint32_t)h[0], .bytes = 4096,
			     .after = 0, .stream = 1 };

	CU_ASSERT_FATAL(fab_msgs_add(&m, &a) == 0 && fab_msgs_add(&m, &b) == 0);
	fab_params_default(&p);
	f = fab_create(&n, &p, &m, 1, &d);
	CU_ASSERT_FATAL(f != NULL);
	CU_ASSERT_EQUAL(fab_run(f, &d), -1);
	CU_ASSERT(strstr(d.msg, "credit loop") == NULL);
	CU_ASSERT(strstr(d.msg, "nothing waits for credits; 1 of the 1 messages left wait for a message that was lost") != NULL);
	fab_destroy(f);
	fab_msgs_free(&m);
	net_free(&n);
}

/* Routing engines of the topology issue, when they exist. */
static int gen(struct net *n, enum topo_gen_kind kind, int x, int y, int hosts)
{
	struct topo_gen_params p;
	struct sim_diag d;
	char msg[1200];
	int rc;

	topo_gen_params_init(&p, kind);
	p.ndims = 2;
	p.dims[0] = x;
	p.dims[1] = y;
	p.hosts = hosts;
	rc = topo_gen_net(n, &p, &d);
	if (rc) {
		sim_diag_format(&d, msg, sizeof(msg));
		fprintf(stderr, "\n  gen: %s\n", msg);
	}
	return rc;
}

static void expect_acyclic_and_completes(struct net *n, const char *engine)
{
	struct sm_cdg g;
	struct sm_cdg_cycle c;
	struct sim_diag d;
	struct fab_msgs m;
	struct fab_totals t;
	char msg[1200];
	int rc;

	route(n, engine);
	build_cdg(&g, n);
	CU_ASSERT_EQUAL(g.pairs_unrouted + g.pairs_looping, 0);
	rc = sm_cdg_find_cycle(&g, &c, &d);
	if (rc) {
		sm_cdg_cycle_str(&g, &c, msg, sizeof(msg));
		fprintf(stderr, "\n  %s: cycle %s\n", engine, msg);
	}
	CU_ASSERT_EQUAL(rc, 0);
	sm_cdg_cycle_free(&c);
	sm_cdg_free(&g);
	alltoall(n, &m, 256 << 10);
	rc = run_load(n, &m, &d, &t);
	if (rc)
		fprintf(stderr, "\n  %s: %s\n", engine, d.msg);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_EQUAL(t.msgs_done, t.msgs_total);
	fab_msgs_free(&m);
}

static void test_engines(void)
{
	struct net n;

	if (sm_engine_find("updn")) {
		build_ring(&n, 4, 2);
		expect_acyclic_and_completes(&n, "updn");
		net_free(&n);
		if (gen(&n, TOPO_GEN_TORUS, 4, 4, 1) == 0) {
			struct sm_cdg g;
			struct sm_cdg_cycle c;
			struct sim_diag d;

			/* minhop on the torus loops; updn does not */
			route(&n, "minhop");
			build_cdg(&g, &n);
			CU_ASSERT_EQUAL(sm_cdg_find_cycle(&g, &c, &d), 1);
			if (c.len)
				check_cycle(&g, &c);
			sm_cdg_cycle_free(&c);
			sm_cdg_free(&g);
			expect_acyclic_and_completes(&n, "updn");
			net_free(&n);
		} else {
			CU_FAIL("torus generator");
		}
	} else {
		fprintf(stderr, "\n  (no updn engine yet: skipped) ");
	}
	if (sm_engine_find("dor")) {
		if (gen(&n, TOPO_GEN_MESH, 4, 4, 1) == 0) {
			expect_acyclic_and_completes(&n, "dor");
			net_free(&n);
		} else {
			CU_FAIL("mesh generator");
		}
	} else {
		fprintf(stderr, "\n  (no dor engine yet: skipped) ");
	}
}

/*
 * Adaptive routing's groups in the CDG (sm_cdg_opts.mp). The ring routed
 * as a line is acyclic; groups that let every switch send either way
 * round (hand-made: the subnet manager's own have none on a ring) close
 * the loop the line avoided, and the check must see it. On a fat tree the
 * real groups (up then down) add dependencies and stay acyclic.
 */
static void test_ar_groups(void)
{
	struct net n;
	struct sm_cdg g;
	struct sm_cdg_cycle c;
	struct sim_diag d;
	struct sm_cdg_opts o = { 0 };
	struct sm_mp *mp;
	struct sm_mp_sw sw[4] = { { 0 } };
	char path[512];

	build_ring(&n, 4, 2);
	route_line(&n, 4, 2);
	mp = sm_mp_build(&n);
	CU_ASSERT_PTR_NOT_NULL_FATAL(mp);
	for (int i = 0; i < 4; i++) {
		CU_ASSERT_FATAL(sm_mp_sw_init(&sw[i], mp, &n, i) == 0);
		for (uint32_t k = 0; k < mp->ndst; k++)
			CU_ASSERT_EQUAL(sw[i].grp[k], 0);	/* one level: none */
		/* every other switch's hosts: both ring ports (3 and 4) */
		free(sw[i].port);
		sw[i].port = malloc(2);
		CU_ASSERT_FATAL(sw[i].port != NULL);
		sw[i].port[0] = 3;
		sw[i].port[1] = 4;
		for (int h = 4; h < n.nnodes; h++) {
			uint32_t dst = mp->dst_of_lid[net_lid_of(&n, h, 1)];

			if (n.nodes[h].ports[1].remote_node != i)
				sw[i].grp[dst] = 0 << 8 | 2;
		}
	}
	o.mp = mp;
	o.mp_sw = sw;
	CU_ASSERT_FATAL(sm_cdg_build(&g, &n, NULL, &d) == 0);
	CU_ASSERT_EQUAL(sm_cdg_find_cycle(&g, &c, &d), 0);
	sm_cdg_cycle_free(&c);
	sm_cdg_free(&g);
	CU_ASSERT_FATAL(sm_cdg_build(&g, &n, &o, &d) == 0);
	/* every LID (8 hosts): the three switches not its own have a choice */
	CU_ASSERT_EQUAL(g.ar_choices, 8 * 3);
	CU_ASSERT_EQUAL_FATAL(sm_cdg_find_cycle(&g, &c, &d), 1);
	CU_ASSERT(c.len >= 2);	/* there and back, or round the ring */
	for (uint32_t i = 0; i < c.len; i++)
		CU_ASSERT(sm_cdg_has_edge(&g, c.chan[i], c.chan[(i + 1) % c.len]));
	sm_cdg_cycle_free(&c);
	sm_cdg_free(&g);
	for (int i = 0; i < 4; i++)
		sm_mp_sw_fini(&sw[i]);
	sm_mp_free(mp);
	net_free(&n);

	/* fattree-16: the real groups add dependencies, and no cycle */
	CU_ASSERT_FATAL(topo_load(test_src_path("topologies/examples/fattree-16.topo", path,
						sizeof(path)), &n, &d) == 0);
	route(&n, "minhop");
	mp = sm_mp_build(&n);
	struct sm_mp_sw *ts = calloc((size_t)n.nnodes, sizeof(*ts));
	uint64_t plain;

	CU_ASSERT_FATAL(mp && ts);
	for (int i = 0; i < n.nnodes; i++)
		if (n.nodes[i].type == NET_SWITCH)
			CU_ASSERT_FATAL(sm_mp_sw_init(&ts[i], mp, &n, i) == 0);
	CU_ASSERT_FATAL(sm_cdg_build(&g, &n, NULL, &d) == 0);
	plain = g.nedges;
	sm_cdg_free(&g);
	o.mp = mp;
	o.mp_sw = ts;
	CU_ASSERT_FATAL(sm_cdg_build(&g, &n, &o, &d) == 0);
	CU_ASSERT(g.nedges > plain);
	CU_ASSERT(g.ar_choices > 0);
	CU_ASSERT_EQUAL(sm_cdg_find_cycle(&g, &c, &d), 0);
	sm_cdg_cycle_free(&c);
	sm_cdg_free(&g);
	for (int i = 0; i < n.nnodes; i++)
		sm_mp_sw_fini(&ts[i]);
	free(ts);
	sm_mp_free(mp);
	net_free(&n);
}

static const struct test_case tests[] = {
	{ "fat tree, minhop: acyclic, same edges as the naive model", test_tree_acyclic },
	{ "ring-4, minhop: cyclic, the cycle is real", test_ring_cyclic },
	{ "ring-4 routed as a line: acyclic", test_ring_line_acyclic },
	{ "ring-8, minhop: a loop each way", test_ring8 },
	{ "VL per pair: moves and breaks loops", test_vl_callback },
	{ "holes and loops in the LFTs", test_bad_lfts },
	{ "fat trees of 128 and 1024 hosts: time", test_large_fattree },
	{ "run time: ring-4 minhop 1 VL all-to-all reports the loop", test_runtime_loop },
	{ "run time: a 16-switch loop, shortened", test_runtime_long_loop },
	{ "run time: acyclic routing carries the same load", test_runtime_acyclic_completes },
	{ "run time: a stall without a loop is explained", test_runtime_no_loop },
	{ "updn on ring and torus, dor on mesh (when the engines exist)", test_engines },
	{ "adaptive routing's groups: a loop they close is seen; a tree's add none", test_ar_groups },
	{ NULL, NULL },
};

TEST_MAIN("cdg", tests)
