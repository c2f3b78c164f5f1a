/* SPDX-License-Identifier: MIT */
/*
 * test_cut.c - a fabric cut into partitions (models/fabric/fab_cut.c).
 *
 * On fattree-16 and fattree-128, cut 1 to 8 ways: every node has a
 * partition, every HCA shares its leaf's, only switch-to-switch cables
 * join two partitions (both ends marked, nothing else marked), the
 * partitions' ports are within one switch's (with its HCAs) of their
 * mean, and equal where the leaves divide evenly, the same fabric cut
 * twice is cut alike, and every component is named: ports and HCAs by
 * their node's partition, anything else refused. A cut that cannot be
 * made is refused with the reason: more partitions than switches, none,
 * or a cable of no length (no look-ahead).
 */
#include "models/fabric/fab.h"
#include "models/fabric/fab_int.h"
#include "models/hca/hca_plug.h"
#include "models/sm/sm.h"
#include "sim/sim_par.h"
#include "test_main.h"
#include "topologies/topo.h"
#include "util_fabric.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct fab *load(struct net *n, struct fab_msgs *m, const char *file, const char *set)
{
	char path[512];
	struct sim_diag d;
	struct fab_params p;

	CU_ASSERT_FATAL(topo_load(test_src_path(file, path, sizeof(path)), n, &d) == 0);
	CU_ASSERT_FATAL(sm_route(n, "minhop", NULL, &d) == 0);
	tf_params(&p, "hdr");
	if (set)
		tf_set(&p, set);
	memset(m, 0, sizeof(*m));
	struct fab *f = fab_create(n, &p, m, 1, &d);

	CU_ASSERT_FATAL(f != NULL);
	return f;
}

static void check_cut(struct fab *f, uint32_t parts)
{
	struct fab_cut c, again;
	struct sim_diag d;
	uint64_t sum = 0, marked = 0;

	if (fab_cut_plan(f, parts, &c, &d)) {
		fprintf(stderr, "\n  %u parts: %s\n", parts, d.msg);
		CU_FAIL_FATAL("the cut");
	}
	if (getenv("IBFAB_TEST_VERBOSE")) {
		fprintf(stderr, "\n  %u parts, %llu cut links, ports:", parts,
			(unsigned long long)c.cut_links);
		for (uint32_t k = 0; k < parts; k++)
			fprintf(stderr, " %llu", (unsigned long long)c.weight[k]);
		fprintf(stderr, "; switches:");
		for (int i = 0; i < f->nnodes; i++)
			if (f->nodes[i].type == NET_SWITCH)
				fprintf(stderr, " %s:%u", f->net->nodes[i].desc, c.node_part[i]);
	}
	CU_ASSERT(c.n == parts);
	CU_ASSERT(c.lookahead == fab_lookahead(f) && c.lookahead > 0);
	for (uint32_t k = 0; k < parts; k++) {
		CU_ASSERT(c.weight[k] > 0);
		sum += c.weight[k];
	}
	/* balanced as the units allow: each level within its heaviest unit (a
	 * switch with the HCAs on it) of its mean, so the whole within two
	 * (these trees have two levels) */
	uint64_t unit = 0;

	for (int i = 0; i < f->nnodes; i++) {
		const struct fab_node *nd = &f->nodes[i];
		uint64_t u = 1;

		if (nd->type != NET_SWITCH)
			continue;
		for (int q = 1; q <= nd->nports; q++)
			if (nd->ports[q])
				u += nd->ports[q]->peer_is_sw ? 1 : 3;	/* a CA: its port, itself */
		if (u > unit)
			unit = u;
	}
	for (uint32_t k = 0; k < parts; k++)
		CU_ASSERT(c.weight[k] * parts + 2 * unit * parts >= sum &&
			  c.weight[k] * parts <= sum + 2 * unit * parts);
	for (int pi = 0; pi < f->nports; pi++) {
		const struct port *pt = f->ports[pi];
		bool cross = c.node_part[pt->node->idx] != c.node_part[pt->peer->node->idx];

		CU_ASSERT(pt->cut == cross);
		CU_ASSERT(pt->peer->cut == cross);
		if (cross)	/* an HCA goes with its leaf */
			CU_ASSERT(pt->is_sw && pt->peer_is_sw);
		marked += pt->cut;
		/* a port's component is its node's */
		CU_ASSERT(fab_cut_owner(&c, f->port_comp0 + (uint32_t)pi) ==
			  c.node_part[pt->node->idx]);
	}
	CU_ASSERT(marked == 2 * c.cut_links);
	CU_ASSERT(parts == 1 ? c.cut_links == 0 : c.cut_links > 0);
	if (f->nnodes == 144 && 8 % parts == 0)	/* fattree-128: 8 leaves, 8 spines */
		for (uint32_t k = 0; k < parts; k++)
			CU_ASSERT(c.weight[k] == sum / parts);
	for (int i = 0; i < f->nnodes; i++) {
		CU_ASSERT(c.node_part[i] < parts);
		if (f->nodes[i].hca)
			CU_ASSERT(fab_cut_owner(&c, f->nodes[i].hca->comp) == c.node_part[i]);
	}
	/* the same cut again */
	CU_ASSERT_FATAL(fab_cut_plan(f, parts, &again, &d) == 0);
	CU_ASSERT(!memcmp(c.node_part, again.node_part, (size_t)f->nnodes * sizeof(*c.node_part)));
	CU_ASSERT(again.cut_links == c.cut_links);
	fab_cut_free(&again);
	/* a component registered after the cut is not the fabric's */
	int late = sim_register(&f->eng, NULL, NULL, "late");

	CU_ASSERT(late >= 0 && fab_cut_owner(&c, (uint32_t)late) == parts);
	fab_cut_free(&c);
	for (int pi = 0; pi < f->nports; pi++)
		CU_ASSERT(!f->ports[pi]->cut);
}

static void test_cut_trees(void)
{
	static const struct {
		const char *file;
		uint32_t max;
	} trees[] = {
		{ "topologies/examples/fattree-16.topo", 6 },	/* 4 leaves, 2 spines */
		{ "topologies/examples/fattree-128.topo", 8 },
	};

	for (size_t t = 0; t < sizeof(trees) / sizeof(trees[0]); t++) {
		struct net n;
		struct fab_msgs m;
		struct fab *f = load(&n, &m, trees[t].file, NULL);

		for (uint32_t parts = 1; parts <= trees[t].max; parts++)
			check_cut(f, parts);
		fab_destroy(f);
		net_free(&n);
	}
}

/* On fattree-16 two partitions are two leaves and a spine each: the
 * cables from those leaves to the other spine are cut, 2 x 2 x 2. */
static void test_cut_shape(void)
{
	struct net n;
	struct fab_msgs m;
	struct fab *f = load(&n, &m, "topologies/examples/fattree-16.topo", NULL);
	struct fab_cut c;
	struct sim_diag d;
	int sw[2] = { 0, 0 };

	CU_ASSERT_FATAL(fab_cut_plan(f, 2, &c, &d) == 0);
	for (int i = 0; i < f->nnodes; i++)
		if (f->nodes[i].type == NET_SWITCH)
			sw[c.node_part[i]]++;
	CU_ASSERT(sw[0] == 3 && sw[1] == 3);
	CU_ASSERT(c.weight[0] == c.weight[1]);
	CU_ASSERT_EQUAL(c.cut_links, 8);
	fab_cut_free(&c);
	fab_destroy(f);
	net_free(&n);
}

/*
 * A 3-level fat tree (radix 8: 8 pods of 4 leaves and 4 spines,
 * 16 core switches, 128 hosts) cut 2 and 4 ways: every
 * partition gets its share of every level - the hosts, the leaves, the
 * aggregation and the core switches - not hosts in one and switches in
 * another (where hosts move in step, each level's events come at their
 * own instants, and such partitions took turns waiting for each other);
 * pods stay whole, so only cables to the core are cut.
 */
static void test_cut_levels(void)
{
	struct topo_gen_params in, rp;
	struct sim_diag d;
	struct net n;
	struct fab_params p;
	struct fab_msgs m = { 0 };

	topo_gen_params_init(&in, TOPO_GEN_FATTREE);
	in.levels = 3;
	in.radix = 8;
	CU_ASSERT_FATAL(topo_gen_resolve(&in, &rp, &d) == 0);
	CU_ASSERT_FATAL(topo_gen_net(&n, &rp, &d) == 0);
	CU_ASSERT_FATAL(sm_route(&n, "minhop", NULL, &d) == 0);
	tf_params(&p, "hdr");
	struct fab *f = fab_create(&n, &p, &m, 1, &d);

	CU_ASSERT_FATAL(f != NULL);
	for (uint32_t parts = 2; parts <= 4; parts += 2) {
		struct fab_cut c;
		/* per partition: hosts, then switches by their distance from hosts */
		uint32_t cnt[4][4] = { { 0 } };

		CU_ASSERT_FATAL(fab_cut_plan(f, parts, &c, &d) == 0);
		for (int i = 0; i < f->nnodes; i++) {
			const char *name = n.nodes[i].desc;
			int kind = f->nodes[i].type != NET_SWITCH ? 0 :
				   strstr(name, "leaf") ? 1 : strstr(name, "spine") ? 2 : 3;

			cnt[c.node_part[i]][kind]++;
		}
		for (uint32_t k = 0; k < parts; k++) {
			CU_ASSERT_EQUAL(cnt[k][0], 128 / parts);
			CU_ASSERT_EQUAL(cnt[k][1], 32 / parts);
			CU_ASSERT_EQUAL(cnt[k][2], 32 / parts);
			CU_ASSERT_EQUAL(cnt[k][3], 16 / parts);
		}
		/* pods whole: each aggregation switch's 4 core cables, those to
		 * the other partitions' cores cut */
		CU_ASSERT_EQUAL(c.cut_links, 32 * 4 * (parts - 1) / parts);
		fab_cut_free(&c);
	}
	fab_destroy(f);
	net_free(&n);
}

static void test_cut_refused(void)
{
	struct net n;
	struct fab_msgs m;
	struct fab *f = load(&n, &m, "topologies/examples/fattree-16.topo", NULL);
	struct fab_cut c;
	struct sim_diag d;

	CU_ASSERT(fab_cut_plan(f, 7, &c, &d) == -1);	/* 6 switches */
	CU_ASSERT(strstr(d.msg, "6 switches") != NULL);
	CU_ASSERT(fab_cut_plan(f, 0, &c, &d) == -1);
	CU_ASSERT(strstr(d.msg, "want 1 to 4096") != NULL);
	fab_destroy(f);
	net_free(&n);
	/* cables of no length: one partition only */
	f = load(&n, &m, "topologies/examples/fattree-16.topo", "link.cable_m=0");
	CU_ASSERT(fab_lookahead(f) == 0);
	CU_ASSERT(fab_cut_plan(f, 2, &c, &d) == -1);
	CU_ASSERT(strstr(d.msg, "no look-ahead") != NULL);
	CU_ASSERT_FATAL(fab_cut_plan(f, 1, &c, &d) == 0);
	fab_cut_free(&c);
	fab_destroy(f);
	net_free(&n);
}

/* The cut is what the partitioned engine takes: it sets up with it. */
static void test_cut_engine(void)
{
	struct net n;
	struct fab_msgs m;
	struct fab *f = load(&n, &m, "topologies/examples/fattree-128.topo", NULL);
	struct fab_cut c;
	struct sim_diag d;
	struct sim_par p;

	CU_ASSERT_FATAL(fab_cut_plan(f, 4, &c, &d) == 0);
	CU_ASSERT(sim_par_init(&p, &f->eng, 4, c.lookahead, fab_cut_owner, &c) == 0);
	sim_par_fini(&p);
	fab_cut_free(&c);
	fab_destroy(f);
	net_free(&n);
}

static const struct test_case tests[] = {
	{ "fat trees cut 1-8 ways: HCAs with their leaf, balanced, the same twice", test_cut_trees },
	{ "fattree-16 in two: two leaves and a spine each", test_cut_shape },
	{ "a 3-level fat tree: every partition its share of every level", test_cut_levels },
	{ "what cannot be cut is refused, with why", test_cut_refused },
	{ "the partitioned engine sets up with the cut", test_cut_engine },
	{ NULL, NULL },
};

TEST_MAIN("cut", tests)
