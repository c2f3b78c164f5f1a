/* SPDX-License-Identifier: MIT */
/*
 * test_sm.c - min-hop routing, checked against a naive model: for fat trees,
 * the ibsim examples, a real dump, a ring and a random irregular fabric,
 * every switch routes every CA LID, and following the LFTs from any CA
 * reaches every other CA in exactly the hop count of a plain BFS written
 * here (not the library's sm_hops, which is checked against it too). Then
 * the balance minhop promises on fat trees, determinism, unreachable parts,
 * and the time on a 10k-host fabric.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "models/net/net.h"
#include "models/sm/sm.h"
#include "tests/unit/test_main.h"
#include "topologies/topo.h"

static void route(struct net *n)
{
	struct sim_diag d;
	char msg[1200];
	int rc = sm_route_minhop(n, &d);

	if (rc) {
		sim_diag_format(&d, msg, sizeof(msg));
		fprintf(stderr, "\n  route: %s\n", msg);
	}
	CU_ASSERT_EQUAL_FATAL(rc, 0);
}

/*
 * The reference: hops from CA `src` (leaving by its first connected port)
 * to (dst, dport), by BFS over nodes where only switches pass packets on.
 */
static int ref_hops(const struct net *n, int src, int dst, int dport)
{
	int *dist = malloc(sizeof(int) * n->nnodes);
	int *q = malloc(sizeof(int) * n->nnodes);
	int head = 0, tail = 0, sp = net_first_port(n, src), first, res = -1;
	const struct net_port *in = &n->nodes[dst].ports[dport];

	CU_ASSERT_FATAL(dist && q && sp > 0);
	for (int i = 0; i < n->nnodes; i++)
		dist[i] = -1;
	first = n->nodes[src].ports[sp].remote_node;
	if (first == dst && n->nodes[src].ports[sp].remote_port == dport) {
		res = 1;
		goto out;
	}
	dist[src] = 0;
	dist[first] = 1;
	q[tail++] = first;
	while (head < tail) {
		int u = q[head++];

		if (n->nodes[u].type != NET_SWITCH)
			continue;
		for (int p = 1; p <= n->nodes[u].nports; p++) {
			int r = n->nodes[u].ports[p].remote_node;

			if (r >= 0 && dist[r] < 0) {
				dist[r] = dist[u] + 1;
				q[tail++] = r;
			}
		}
	}
	if (in->remote_node >= 0 && n->nodes[in->remote_node].type == NET_SWITCH &&
	    dist[in->remote_node] >= 0)
		res = dist[in->remote_node] + 1;
out:
	free(dist);
	free(q);
	return res;
}

/* Every check that holds on any connected fabric. Returns pairs checked. */
static long check_fabric(struct net *n, const char *what)
{
	int nodes[64], ports[64];
	long pairs = 0;
	unsigned bad = 0;

	route(n);
	for (int s = 0; s < n->nnodes; s++) {
		const struct net_node *sw = &n->nodes[s];

		if (sw->type != NET_SWITCH)
			continue;
		CU_ASSERT_EQUAL(sw->lft_len, (uint32_t)n->max_lid + 1);
		CU_ASSERT_EQUAL(sw->lft[sw->lid], 0);
		for (uint32_t l = 1; l <= n->max_lid; l++) {
			int out = sw->lft[l];

			if (n->lid_node[l] < 0) {
				CU_ASSERT_EQUAL(out, SM_NO_ROUTE);
				continue;
			}
			if (l == sw->lid)
				continue;
			/* a route to every LID, over a cabled port */
			if (out < 1 || out > sw->nports || sw->ports[out].remote_node < 0)
				bad++;
		}
	}
	CU_ASSERT_EQUAL(bad, 0);

	for (int a = 0; a < n->nnodes; a++) {
		if (n->nodes[a].type != NET_CA || net_first_port(n, a) < 0)
			continue;
		const struct net_port *ap = &n->nodes[a].ports[net_first_port(n, a)];

		for (int b = 0; b < n->nnodes; b++) {
			if (n->nodes[b].type != NET_CA || b == a)
				continue;
			for (int p = 1; p <= n->nodes[b].nports; p++) {
				uint16_t lid = net_lid_of(n, b, p);
				int k, want;

				if (!lid)
					continue;
				want = ref_hops(n, a, b, p);
				k = sm_path(n, a, lid, nodes, ports, 64);
				if (k < 2 || k - 1 != want || nodes[k - 1] != b ||
				    ports[k - 1] != p || nodes[0] != a) {
					fprintf(stderr, "\n  %s: %s -> %s[%d] (lid %u): path %d nodes, BFS %d hops\n",
						what, n->nodes[a].desc, n->nodes[b].desc,
						p, lid, k, want);
					CU_FAIL("LFT path is not a shortest path");
					return pairs;
				}
				/* sm_hops agrees with the naive BFS */
				CU_ASSERT_EQUAL(sm_hops(n, ap->remote_node, lid), want - 1);
				pairs++;
			}
		}
	}
	return pairs;
}

static void test_fat_trees(void)
{
	static const struct { int l, s, h, k; } ft[] = {
		{ 4, 2, 4, 2 },		/* the default: 16 hosts */
		{ 8, 8, 16, 2 },	/* fattree-128 */
		{ 3, 2, 3, 1 },		/* oversubscribed 3:2 */
		{ 5, 3, 2, 2 },		/* more up than down */
		{ 1, 0, 6, 1 },		/* one switch, no spines */
	};
	struct sim_diag d;

	for (unsigned i = 0; i < SIM_ARRAY_SIZE(ft); i++) {
		struct net n;
		int hosts = ft[i].l * ft[i].h;

		CU_ASSERT_EQUAL_FATAL(topo_gen_fattree2_net(&n, ft[i].l, ft[i].s, ft[i].h,
							    ft[i].k, "4xHDR", &d), 0);
		/* every ordered pair of hosts was checked */
		CU_ASSERT_EQUAL(check_fabric(&n, "fattree2"), (long)hosts * (hosts - 1));
		net_free(&n);
	}
}

static void test_files(void)
{
	static const char *const ex[] = {
		"net", "net.1", "net.2sw2path", "net.2sw2path4hca",
		"net.2sw2path4hca2port",
	};
	const char *dir = getenv("IBSIM_EXAMPLES");
	char path[512];
	struct sim_diag d;
	struct net n;

	for (unsigned i = 0; i < SIM_ARRAY_SIZE(ex); i++) {
		snprintf(path, sizeof(path), "%s/%s",
			 dir ? dir : "/usr/share/doc/ibsim-utils/net-examples", ex[i]);
		CU_ASSERT_EQUAL_FATAL(topo_load(path, &n, &d), 0);
		CU_ASSERT(check_fabric(&n, ex[i]) > 0);
		net_free(&n);
	}
	CU_ASSERT_EQUAL_FATAL(topo_load(test_src_path("tests/golden/ibnd-2sw2path4hca.topo",
						      path, sizeof(path)), &n, &d), 0);
	/* 4 hosts, 3 others each */
	CU_ASSERT_EQUAL(check_fabric(&n, "ibnd"), 12);
	/* Routes follow OpenSM's kept LIDs: Switch1 reaches Hca3 (LID 5) on port 2. */
	CU_ASSERT_EQUAL(n.nodes[net_find_host(&n, "Switch1")].lft[5], 2);
	net_free(&n);
}

/* 6 switches in a ring, one host each: both directions matter. */
static void test_ring_and_random(void)
{
	struct sim_diag d;
	struct net n;
	char name[16];
	int sw[32], h;
	uint64_t x = 12345;

	net_init(&n);
	for (int i = 0; i < 6; i++) {
		snprintf(name, sizeof(name), "sw%d", i);
		sw[i] = net_add_node(&n, NET_SWITCH, 4, name, name, &d);
		snprintf(name, sizeof(name), "h%d", i);
		h = net_add_node(&n, NET_CA, 1, name, name, &d);
		CU_ASSERT_FATAL(sw[i] >= 0 && h >= 0);
		CU_ASSERT_EQUAL(net_connect(&n, sw[i], 1, h, 1, 0, &d), 0);
	}
	for (int i = 0; i < 6; i++)
		CU_ASSERT_EQUAL(net_connect(&n, sw[i], 2, sw[(i + 1) % 6], 3, 0, &d), 0);
	CU_ASSERT_EQUAL_FATAL(net_validate(&n, &d), 0);
	CU_ASSERT_EQUAL(check_fabric(&n, "ring"), 30);
	/*
	 * From sw0, h3 is 3 hops either way round. CA LIDs are routed in order:
	 * h1 and h2 (shorter one way) already use port 2, so the balance sends
	 * h3 out of port 3; the tie-break alone would have said port 2.
	 */
	CU_ASSERT_EQUAL(n.nodes[sw[0]].lft[net_lid_of(&n, net_find_host(&n, "h1"), 1)], 2);
	CU_ASSERT_EQUAL(n.nodes[sw[0]].lft[net_lid_of(&n, net_find_host(&n, "h2"), 1)], 2);
	CU_ASSERT_EQUAL(n.nodes[sw[0]].lft[net_lid_of(&n, net_find_host(&n, "h3"), 1)], 3);
	/*
	 * Switch LIDs come after all CAs and do not count in the balance
	 * (OpenSM's port_profile_switch_nodes is off). Loads then: port 2 = 2
	 * (h1, h2), port 3 = 3 (h3..h5), whatever sw1 and sw2 (nearer by port
	 * 2) took, so sw3, 3 hops both ways, goes to port 2.
	 */
	CU_ASSERT_EQUAL(n.nodes[sw[0]].lft[n.nodes[sw[3]].lid], 2);
	net_free(&n);

	/* A random connected irregular fabric, 24 switches, 2 hosts each. */
	net_init(&n);
	for (int i = 0; i < 24; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		sw[i] = net_add_node(&n, NET_SWITCH, 12, name, name, &d);
	}
	for (int i = 0; i < 48; i++) {
		snprintf(name, sizeof(name), "h%d", i);
		h = net_add_node(&n, NET_CA, 1, name, name, &d);
		CU_ASSERT_EQUAL(net_connect(&n, sw[i / 2], 1 + i % 2, h, 1, 0, &d), 0);
	}
	{
		int used[24];

		for (int i = 0; i < 24; i++)
			used[i] = 2;
		/* a spanning tree first (connected), then random extra cables */
		for (int i = 1; i < 24; i++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			int j = (int)((x >> 33) % (uint64_t)i);

			if (used[i] < 12 && used[j] < 12)
				CU_ASSERT_EQUAL(net_connect(&n, sw[i], ++used[i], sw[j],
							    ++used[j], 0, &d), 0);
		}
		for (int e = 0; e < 30; e++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			int a = (int)((x >> 33) % 24), b = (int)((x >> 17) % 24);

			if (a != b && used[a] < 12 && used[b] < 12)
				CU_ASSERT_EQUAL(net_connect(&n, sw[a], ++used[a], sw[b],
							    ++used[b], 0, &d), 0);
		}
	}
	CU_ASSERT_EQUAL_FATAL(net_validate(&n, &d), 0);
	CU_ASSERT_EQUAL(check_fabric(&n, "random"), 48 * 47);
	net_free(&n);
}

/*
 * Balance: on a leaf, every remote CA LID may leave by any up-port; minhop
 * must spread them evenly (counts differ by at most 1). On a spine, the
 * CAs of one leaf spread over the parallel links to that leaf.
 */
static void check_balance(int L, int S, int H, int K)
{
	struct sim_diag d;
	struct net n;
	int up = S * K;

	CU_ASSERT_EQUAL_FATAL(topo_gen_fattree2_net(&n, L, S, H, K, "4xHDR", &d), 0);
	route(&n);
	for (int i = 0; i < n.nnodes; i++) {
		const struct net_node *nd = &n.nodes[i];
		int cnt[256] = { 0 }, lo = 1 << 30, hi = 0, total = 0;

		if (nd->type != NET_SWITCH || strncmp(nd->desc, "leaf", 4))
			continue;
		for (uint32_t l = 1; l <= n.max_lid; l++) {
			int o = n.lid_node[l];

			if (o < 0 || n.nodes[o].type != NET_CA)
				continue;
			if (nd->lft[l] > H) {	/* leaves by an up-port */
				cnt[nd->lft[l]]++;
				total++;
			}
		}
		for (int p = H + 1; p <= H + up; p++) {
			lo = cnt[p] < lo ? cnt[p] : lo;
			hi = cnt[p] > hi ? cnt[p] : hi;
		}
		CU_ASSERT_EQUAL(total, (L - 1) * H);	/* all remote CAs go up */
		if (hi - lo > 1)
			fprintf(stderr, "\n  %s: up-ports carry %d..%d CA LIDs\n", nd->desc, lo, hi);
		CU_ASSERT(hi - lo <= 1);
	}
	for (int i = 0; i < n.nnodes; i++) {
		const struct net_node *nd = &n.nodes[i];

		if (nd->type != NET_SWITCH || strncmp(nd->desc, "spine", 5))
			continue;
		for (int leaf = 0; leaf < L; leaf++) {
			int cnt[256] = { 0 }, lo = 1 << 30, hi = 0;

			for (uint32_t l = 1; l <= n.max_lid; l++) {
				int o = n.lid_node[l];

				if (o >= 0 && n.nodes[o].type == NET_CA &&
				    (nd->lft[l] - 1) / K == leaf)
					cnt[nd->lft[l]]++;
			}
			for (int p = 1 + leaf * K; p <= (leaf + 1) * K; p++) {
				lo = cnt[p] < lo ? cnt[p] : lo;
				hi = cnt[p] > hi ? cnt[p] : hi;
			}
			CU_ASSERT(hi - lo <= 1);
			CU_ASSERT(lo >= H / K);
		}
	}
	net_free(&n);
}

static void test_balance(void)
{
	check_balance(4, 2, 4, 2);	/* 16 hosts: 12 remote over 4 up-ports = 3 each */
	check_balance(8, 8, 16, 2);
	check_balance(3, 2, 5, 2);	/* uneven: 10 over 4 */
	check_balance(6, 4, 7, 1);
}

static void test_deterministic(void)
{
	struct sim_diag d;
	struct net a, b;

	CU_ASSERT_EQUAL_FATAL(topo_gen_fattree2_net(&a, 8, 8, 16, 2, "4xHDR", &d), 0);
	CU_ASSERT_EQUAL_FATAL(topo_gen_fattree2_net(&b, 8, 8, 16, 2, "4xHDR", &d), 0);
	route(&a);
	route(&b);
	route(&b);		/* routing again gives the same tables */
	for (int i = 0; i < a.nnodes; i++) {
		if (a.nodes[i].type != NET_SWITCH)
			continue;
		CU_ASSERT_EQUAL_FATAL(a.nodes[i].lft_len, b.nodes[i].lft_len);
		CU_ASSERT(!memcmp(a.nodes[i].lft, b.nodes[i].lft, a.nodes[i].lft_len));
	}
	net_free(&a);
	net_free(&b);
}

static void test_unreachable(void)
{
	static const char text[] =
		"Switch 4 \"A\"\n[1] \"ha\"[1]\n\n"
		"Switch 4 \"B\"\n[1] \"hb\"[1]\n\n"
		"Ca 1 \"ha\"\n[1] \"A\"[1]\n\n"
		"Ca 1 \"hb\"\n[1] \"B\"[1]\n\n"
		"Ca 1 \"alone\"\n";
	int nodes[8], ports[8];
	struct sim_diag d;
	struct net n;
	int A, hb, ha;

	CU_ASSERT_EQUAL_FATAL(topo_load_string(text, "islands.topo", &n, &d), 0);
	route(&n);
	A = net_find(&n, "A");
	ha = net_find(&n, "ha");
	hb = net_find(&n, "hb");
	CU_ASSERT_EQUAL(n.max_lid, 4);	/* A, B, ha, hb; "alone" has no cable */
	CU_ASSERT_EQUAL(n.nodes[A].lft[net_lid_of(&n, hb, 1)], SM_NO_ROUTE);
	CU_ASSERT_EQUAL(n.nodes[A].lft[net_lid_of(&n, ha, 1)], 1);
	CU_ASSERT_EQUAL(sm_hops(&n, A, net_lid_of(&n, hb, 1)), -1);
	CU_ASSERT_EQUAL(sm_hops(&n, A, net_lid_of(&n, ha, 1)), 1);
	CU_ASSERT_EQUAL(sm_hops(&n, A, n.nodes[A].lid), 0);
	CU_ASSERT_EQUAL(sm_hops(&n, ha, 1), -1);	/* not a switch */
	CU_ASSERT_EQUAL(sm_path(&n, ha, net_lid_of(&n, hb, 1), nodes, ports, 8), -1);
	/* to a switch's own LID the path ends on port 0 */
	CU_ASSERT_EQUAL(sm_path(&n, ha, n.nodes[A].lid, nodes, ports, 8), 2);
	CU_ASSERT_EQUAL(nodes[1], A);
	CU_ASSERT_EQUAL(ports[1], 0);
	/* too little room */
	CU_ASSERT_EQUAL(sm_path(&n, ha, n.nodes[A].lid, nodes, ports, 1), -1);
	CU_ASSERT_EQUAL(sm_path(&n, ha, 999, nodes, ports, 8), -1);
	net_free(&n);
}

/* A 10k-host two-level fat tree: 100 leaves x 100 hosts, 100 spines. */
static void test_big(void)
{
	struct sim_diag d;
	struct net n;
	clock_t t0;
	double secs;
	int nodes[16], ports[16];
	/* IBFAB_TIME_SCALE: more room on slow machines; valgrind (which
	 * preloads its vgpreload_*.so) is about 50x slower. */
	const char *pre = getenv("LD_PRELOAD");
	double scale = getenv("IBFAB_TIME_SCALE") ? atof(getenv("IBFAB_TIME_SCALE")) :
		pre && strstr(pre, "vgpreload") ? 100 : 1;

	CU_ASSERT_EQUAL_FATAL(topo_gen_fattree2_net(&n, 100, 100, 100, 1, "4xHDR", &d), 0);
	CU_ASSERT_EQUAL(net_nhosts(&n), 10000);
	t0 = clock();
	route(&n);
	secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
	fprintf(stderr, "(minhop on %d nodes: %.3f s) ", n.nnodes, secs);
	CU_ASSERT(secs < 1.0 * scale);
	/* a sample of pairs, against the reference */
	for (int k = 0; k < 200; k++) {
		int a = net_host(&n, (k * 7919) % 10000), b = net_host(&n, (k * 104729 + 13) % 10000);
		int m;

		if (a == b)
			continue;
		m = sm_path(&n, a, net_lid_of(&n, b, 1), nodes, ports, 16);
		CU_ASSERT_EQUAL(m - 1, ref_hops(&n, a, b, 1));
	}
	net_free(&n);
}

static const struct test_case tests[] = {
	{ "fat trees: routes and shortest paths", test_fat_trees },
	{ "ibsim examples and a real dump", test_files },
	{ "ring and random irregular fabric", test_ring_and_random },
	{ "minhop balance on fat trees", test_balance },
	{ "deterministic", test_deterministic },
	{ "unreachable parts, sm_hops, sm_path edges", test_unreachable },
	{ "10k hosts in well under a second", test_big },
	{ NULL, NULL },
};

TEST_MAIN("sm", tests)
