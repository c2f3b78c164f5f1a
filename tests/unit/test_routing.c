/* SPDX-License-Identifier: MIT */
/*
 * test_routing.c - the routing engines (updn, ftree, dor, and minhop with
 * LMC), LID assignment with LMC, and the LFT dump reader and writer.
 *
 * Every property is checked by code written here, not by the library's own
 * helpers: paths are walked LFT entry by LFT entry (walk()), up/down is
 * judged against a ranking computed here from the roots, link loads are
 * counted per path, dimension order is read from coordinates parsed here,
 * and deadlock freedom is a cycle search in a channel dependency graph
 * built here. Each check is also shown to fail where it should (minhop on
 * a 3-level tree has shift contention, minhop and dor on a torus have CDG
 * cycles), so none of them passes vacuously.
 */
#include <CUnit/CUnit.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/net/net.h"
#include "models/sm/sm.h"
#include "models/sm/sm_mp.h"
#include "tests/unit/test_main.h"
#include "topologies/lft.h"
#include "topologies/topo.h"

/* ---- fabrics ------------------------------------------------------------ */

static void report(const struct sim_diag *d, const char *what)
{
	char msg[1200];

	sim_diag_format(d, msg, sizeof(msg));
	fprintf(stderr, "\n  %s: %s\n", what, msg);
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

/* `ibfab topo gen` arguments, space separated. */
static void gen(struct net *n, const char *args)
{
	struct topo_gen_params p;
	struct sim_diag d;
	char buf[256], *argv[16];
	int argc = 0;

	snprintf(buf, sizeof(buf), "%s", args);
	for (char *t = strtok(buf, " "); t && argc < 16; t = strtok(NULL, " "))
		argv[argc++] = t;
	if (topo_gen_parse(&p, argc, argv, &d) || topo_gen_net(n, &p, &d)) {
		report(&d, args);
		CU_FAIL_FATAL("generator");
	}
	CU_ASSERT_FATAL(net_validate(n, &d) == 0);
}

static int route(struct net *n, const char *engine, const char *roots, int lmc)
{
	struct sim_diag d;
	char note[256];
	struct sm_opts o = { .roots = roots, .lmc = (uint8_t)lmc, .note = note,
			     .note_len = sizeof(note) };
	int rc = sm_route(n, engine, &o, &d);

	if (rc)
		report(&d, engine);
	return rc;
}

/* ---- walking the tables (the reference) ------------------------------- */

#define MAXHOPS 64

/*
 * Follow the LFTs from CA src's first port to dlid: nodes[] and the port
 * each was left by. Returns the number of nodes (>= 2) on delivery to the
 * LID's own port, or -1.
 */
static int walk(const struct net *n, int src, uint16_t dlid, int *nodes, int *outp)
{
	int cur = src, port = net_first_port(n, src), k = 0;

	if (port < 0 || !n->lid_node || dlid > n->max_lid || n->lid_node[dlid] < 0)
		return -1;
	while (k < MAXHOPS) {
		const struct net_port *pp = &n->nodes[cur].ports[port];
		const struct net_node *nx;

		nodes[k] = cur;
		outp[k++] = port;
		if (pp->remote_node < 0)
			return -1;
		cur = pp->remote_node;
		nx = &n->nodes[cur];
		if (nx->type != NET_SWITCH) {
			nodes[k] = cur;
			outp[k] = pp->remote_port;
			return cur == n->lid_node[dlid] &&
			       pp->remote_port == n->lid_port[dlid] ? k + 1 : -1;
		}
		if (!nx->lft || dlid >= nx->lft_len || nx->lft[dlid] == 255 ||
		    nx->lft[dlid] > nx->nports)
			return -1;
		if (nx->lft[dlid] == 0) {
			nodes[k] = cur;
			outp[k] = 0;
			return cur == n->lid_node[dlid] ? k + 1 : -1;
		}
		port = nx->lft[dlid];
	}
	return -1;
}

/* From switch s, LFT by LFT, to the owner of lid: hops or -1. */
static int sw_walk(const struct net *n, int s, uint16_t lid)
{
	for (int h = 0; h < MAXHOPS; h++) {
		const struct net_node *sw = &n->nodes[s];
		int p = lid < sw->lft_len ? sw->lft[lid] : 255, r;

		if (p == 0)
			return s == n->lid_node[lid] ? h : -1;
		if (p > sw->nports || (r = sw->ports[p].remote_node) < 0)
			return -1;
		if (n->nodes[r].type != NET_SWITCH)
			return r == n->lid_node[lid] && sw->ports[p].remote_port == n->lid_port[lid] ?
			       h + 1 : -1;
		s = r;
	}
	return -1;
}

static bool is_ca_lid(const struct net *n, uint32_t l)
{
	return n->lid_node[l] >= 0 && n->nodes[n->lid_node[l]].type != NET_SWITCH;
}

/* Every switch reaches every CA LID; every host reaches every LID. */
static void check_reach(const struct net *n, const char *what)
{
	int nodes[MAXHOPS + 1], outp[MAXHOPS + 1], bad = 0;

	for (int s = 0; s < n->nnodes; s++) {
		if (n->nodes[s].type != NET_SWITCH)
			continue;
		for (uint32_t l = 1; l <= n->max_lid; l++)
			if (is_ca_lid(n, l) && sw_walk(n, s, (uint16_t)l) < 0 && bad++ < 3)
				fprintf(stderr, "\n  %s: switch %s does not reach LID %u",
					what, n->nodes[s].desc, l);
	}
	for (int h = 0; h < net_nhosts(n); h++)
		for (uint32_t l = 1; l <= n->max_lid; l++) {
			int src = net_host(n, h);

			if (n->lid_node[l] < 0 || n->lid_node[l] == src)
				continue;
			if (walk(n, src, (uint16_t)l, nodes, outp) < 0 && bad++ < 3)
				fprintf(stderr, "\n  %s: host %s does not reach LID %u",
					what, n->nodes[src].desc, l);
		}
	CU_ASSERT_EQUAL(bad, 0);
}

/* ---- reachability on every supported topology -------------------------- */

static void reach(const char *engine, const char *args, const char *example)
{
	struct net n;

	if (example)
		load_example(&n, example);
	else
		gen(&n, args);
	CU_ASSERT_EQUAL_FATAL(route(&n, engine, NULL, 0), 0);
	check_reach(&n, example ? example : args);
	net_free(&n);
}

static void test_reach_all(void)
{
	static const char *const trees[] = {
		"fattree --radix 8", "fattree --levels 3 --radix 4",
		"fattree --radix 12 --oversub 2:1 --leaves 6",
		"leafspine --leaves 5 --spines 3 --hosts 6 --links-per-spine 2",
	};
	static const char *const grids[] = {
		"torus --dims 4x4", "mesh --dims 3x3 --hosts 2", "torus --dims 6",
		"mesh --dims 3x2x2", "torus --dims 3x3x3",
	};

	for (size_t i = 0; i < sizeof(trees) / sizeof(*trees); i++) {
		reach("minhop", trees[i], NULL);
		reach("updn", trees[i], NULL);
		reach("ftree", trees[i], NULL);
		reach("dor", trees[i], NULL);	/* by port number: any graph */
	}
	for (size_t i = 0; i < sizeof(grids) / sizeof(*grids); i++) {
		reach("minhop", grids[i], NULL);
		reach("updn", grids[i], NULL);
		reach("dor", grids[i], NULL);
	}
	reach("updn", NULL, "fattree-128.topo");
	reach("ftree", NULL, "fattree-128.topo");
	reach("ftree", NULL, "fattree-16.topo");
	reach("updn", NULL, "star-6.net");
	reach("dor", "dragonfly --groups 4 --routers 4 --hosts 2 --global 3", NULL);
	reach("updn", "dragonfly --groups 4 --routers 4 --hosts 2 --global 3", NULL);
}

/* ---- up/down ------------------------------------------------------------ */

static uint64_t sw_guid(const struct net_node *nd)
{
	return nd->guid ? nd->guid : nd->ports[0].guid;
}

/* height[] = place in (BFS rank from the roots, GUID, index) order. */
static void rank_here(const struct net *n, const char *roots, int *height)
{
	int *rank = malloc(sizeof(int) * n->nnodes), *q = malloc(sizeof(int) * n->nnodes);
	int head = 0, tail = 0;
	char buf[256];

	CU_ASSERT_FATAL(rank && q);
	for (int i = 0; i < n->nnodes; i++)
		rank[i] = -1;
	snprintf(buf, sizeof(buf), "%s", roots);
	for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
		int r = net_find_host(n, t);

		CU_ASSERT_FATAL(r >= 0 && n->nodes[r].type == NET_SWITCH);
		rank[r] = 0;
		q[tail++] = r;
	}
	while (head < tail) {
		int u = q[head++];

		for (int p = 1; p <= n->nodes[u].nports; p++) {
			int v = n->nodes[u].ports[p].remote_node;

			if (v >= 0 && n->nodes[v].type == NET_SWITCH && rank[v] < 0) {
				rank[v] = rank[u] + 1;
				q[tail++] = v;
			}
		}
	}
	/* height: count the switches strictly above (a quadratic sort is fine) */
	for (int i = 0; i < n->nnodes; i++) {
		height[i] = -1;
		if (n->nodes[i].type != NET_SWITCH)
			continue;
		height[i] = 0;
		for (int j = 0; j < n->nnodes; j++) {
			if (n->nodes[j].type != NET_SWITCH || j == i)
				continue;
			if (rank[j] < rank[i] ||
			    (rank[j] == rank[i] && (sw_guid(&n->nodes[j]) < sw_guid(&n->nodes[i]) ||
						    (sw_guid(&n->nodes[j]) == sw_guid(&n->nodes[i]) && j < i))))
				height[i]++;
		}
	}
	free(rank);
	free(q);
}

/* Count paths (host -> every other CA LID) that turn from down to up. */
static int down_up_turns(const struct net *n, const int *height)
{
	int nodes[MAXHOPS + 1], outp[MAXHOPS + 1], bad = 0;

	for (int h = 0; h < net_nhosts(n); h++) {
		int src = net_host(n, h);

		for (uint32_t l = 1; l <= n->max_lid; l++) {
			bool down = false;
			int k;

			if (!is_ca_lid(n, l) || n->lid_node[l] == src)
				continue;
			k = walk(n, src, (uint16_t)l, nodes, outp);
			CU_ASSERT_FATAL(k > 0);
			/* switch-to-switch hops: nodes[1..k-2] */
			for (int i = 1; i + 1 < k - 1; i++) {
				bool up = height[nodes[i + 1]] < height[nodes[i]];

				if (up && down)
					bad++;
				down |= !up;
			}
		}
	}
	return bad;
}

static void updn_case(struct net *n, const char *roots, bool shortest)
{
	int *height = malloc(sizeof(int) * n->nnodes);

	CU_ASSERT_FATAL(height != NULL);
	CU_ASSERT_EQUAL_FATAL(route(n, "updn", roots, 0), 0);
	check_reach(n, roots);
	rank_here(n, roots, height);
	CU_ASSERT_EQUAL(down_up_turns(n, height), 0);
	/* on trees up/down costs nothing: every route is a shortest path */
	if (shortest)
		for (int s = 0; s < n->nnodes; s++)
			for (uint32_t l = 1; l <= n->max_lid && n->nodes[s].type == NET_SWITCH; l++)
				if (is_ca_lid(n, l))
					CU_ASSERT_EQUAL(sw_walk(n, s, (uint16_t)l), sm_hops(n, s, (uint16_t)l));
	free(height);
}

static void test_updn(void)
{
	struct net n;
	int height[64];
	char note[128];
	struct sim_diag d;
	struct sm_opts o = { .note = note, .note_len = sizeof(note) };

	load_example(&n, "fattree-16.topo");
	updn_case(&n, "spine0,spine1", true);
	/* automatic roots on a fat tree are its spines, as OpenSM picks them */
	CU_ASSERT_EQUAL(sm_route(&n, "updn", &o, &d), 0);
	CU_ASSERT_STRING_EQUAL(note, "updn roots spine0,spine1 (automatic)");
	net_free(&n);

	gen(&n, "fattree --levels 3 --radix 4");
	updn_case(&n, "core0,core1,core2,core3", true);
	net_free(&n);

	/* a torus: legal only if up-then-down w.r.t. the root given */
	gen(&n, "torus --dims 4x4");
	CU_ASSERT_FATAL(n.nnodes <= 64);
	updn_case(&n, "sw_1_2", false);
	/* minhop on the torus breaks the rule for that ranking */
	CU_ASSERT_EQUAL_FATAL(route(&n, "minhop", NULL, 0), 0);
	rank_here(&n, "sw_1_2", height);
	CU_ASSERT(down_up_turns(&n, height) > 0);
	/* automatic roots on a torus: OpenSM finds none; one central root */
	CU_ASSERT_EQUAL(sm_route(&n, "updn", &o, &d), 0);
	CU_ASSERT(strstr(note, "(automatic)") != NULL);
	check_reach(&n, "torus auto roots");
	net_free(&n);

	/* roots by GUID and by id; errors name the item */
	load_example(&n, "fattree-16.topo");
	CU_ASSERT_EQUAL(route(&n, "updn", "0x200000,S-0000000000200001", 0), 0);
	o.roots = "spine0,nosuch";
	CU_ASSERT_EQUAL(sm_route(&n, "updn", &o, &d), -1);
	CU_ASSERT(strstr(d.msg, "nosuch") != NULL);
	o.roots = "h3";
	CU_ASSERT_EQUAL(sm_route(&n, "updn", &o, &d), -1);
	CU_ASSERT(strstr(d.msg, "not a switch") != NULL);
	/* a leaf as the only root: leaves under other leaves, still complete */
	updn_case(&n, "leaf2", false);
	net_free(&n);
}

/* ---- deadlock: a channel dependency graph built here -------------------- */

/*
 * Channels are (node, out port); a path that leaves by channel a and then
 * by channel b makes b a dependency of a. A cycle among switch channels
 * means a possible credit loop with one VL (Dally and Seitz).
 */
static bool cdg_has_cycle(const struct net *n)
{
	int *base = malloc(sizeof(int) * (n->nnodes + 1)), nch = 0;
	int nodes[MAXHOPS + 1], outp[MAXHOPS + 1];
	char *dep, *color;
	int *stack, *iter;
	bool cycle = false;

	CU_ASSERT_FATAL(base != NULL);
	for (int i = 0; i < n->nnodes; i++) {
		base[i] = nch;
		nch += n->nodes[i].nports + 1;
	}
	dep = calloc((size_t)nch * nch, 1);
	color = calloc(nch, 1);
	stack = malloc(sizeof(int) * nch);
	iter = malloc(sizeof(int) * nch);
	CU_ASSERT_FATAL(dep && color && stack && iter);
	for (int h = 0; h < net_nhosts(n); h++) {
		int src = net_host(n, h);

		for (uint32_t l = 1; l <= n->max_lid; l++) {
			int k;

			if (!is_ca_lid(n, l) || n->lid_node[l] == src)
				continue;
			k = walk(n, src, (uint16_t)l, nodes, outp);
			for (int i = 1; i + 2 < k; i++)
				dep[(size_t)(base[nodes[i]] + outp[i]) * nch +
				    base[nodes[i + 1]] + outp[i + 1]] = 1;
		}
	}
	/* iterative DFS: grey on the stack, black done */
	for (int s = 0; s < nch && !cycle; s++) {
		int sp = 0;

		if (color[s])
			continue;
		stack[sp] = s;
		iter[sp++] = 0;
		color[s] = 1;
		while (sp && !cycle) {
			int u = stack[sp - 1], v = iter[sp - 1]++;

			if (v >= nch) {
				color[u] = 2;
				sp--;
				continue;
			}
			if (!dep[(size_t)u * nch + v])
				continue;
			if (color[v] == 1)
				cycle = true;
			else if (!color[v]) {
				color[v] = 1;
				stack[sp] = v;
				iter[sp++] = 0;
			}
		}
	}
	free(base);
	free(dep);
	free(color);
	free(stack);
	free(iter);
	return cycle;
}

static void test_deadlock_freedom(void)
{
	struct net n;

	gen(&n, "torus --dims 4x4");
	CU_ASSERT_EQUAL_FATAL(route(&n, "updn", NULL, 0), 0);
	CU_ASSERT(!cdg_has_cycle(&n));
	CU_ASSERT_EQUAL_FATAL(route(&n, "minhop", NULL, 0), 0);
	CU_ASSERT(cdg_has_cycle(&n));	/* the check can fail */
	CU_ASSERT_EQUAL_FATAL(route(&n, "dor", NULL, 0), 0);
	CU_ASSERT(cdg_has_cycle(&n));	/* documented: dor on a torus, one VL */
	net_free(&n);

	gen(&n, "mesh --dims 4x3");
	CU_ASSERT_EQUAL_FATAL(route(&n, "dor", NULL, 0), 0);
	CU_ASSERT(!cdg_has_cycle(&n));
	net_free(&n);

	gen(&n, "fattree --levels 3 --radix 4");
	CU_ASSERT_EQUAL_FATAL(route(&n, "ftree", NULL, 0), 0);
	CU_ASSERT(!cdg_has_cycle(&n));
	CU_ASSERT_EQUAL_FATAL(route(&n, "updn", NULL, 0), 0);
	CU_ASSERT(!cdg_has_cycle(&n));
	net_free(&n);
}

/* ---- ftree: shift permutations, paths per link counted here ------------ */

/*
 * For every shift k (host i sends to host i+k mod N, base LIDs, as the
 * `shift` traffic pattern does), the most paths any directed cable carries.
 * Returns the worst over all k, and how many k have a cable with 2 or more.
 */
static int shift_worst(const struct net *n, int *contended)
{
	int nh = net_nhosts(n), worst = 0, base = 0;
	int nodes[MAXHOPS + 1], outp[MAXHOPS + 1];
	int *off = malloc(sizeof(int) * (n->nnodes + 1)), *use;

	CU_ASSERT_FATAL(off != NULL);
	for (int i = 0; i < n->nnodes; i++) {
		off[i] = base;
		base += n->nodes[i].nports + 1;
	}
	use = malloc(sizeof(int) * base);
	CU_ASSERT_FATAL(use != NULL);
	*contended = 0;
	for (int k = 1; k < nh; k++) {
		int most = 0;

		memset(use, 0, sizeof(int) * base);
		for (int i = 0; i < nh; i++) {
			int src = net_host(n, i), dst = net_host(n, (i + k) % nh);
			uint16_t dlid = net_lid_of(n, dst, net_first_port(n, dst));
			int len = walk(n, src, dlid, nodes, outp);

			CU_ASSERT_FATAL(len > 0);
			for (int j = 0; j + 1 < len; j++)
				if (++use[off[nodes[j]] + outp[j]] > most)
					most = use[off[nodes[j]] + outp[j]];
		}
		*contended += most > 1;
		if (most > worst)
			worst = most;
	}
	free(off);
	free(use);
	return worst;
}

static void shift_case(struct net *n, const char *what, bool minhop_contends)
{
	int contended, worst;

	CU_ASSERT_EQUAL_FATAL(route(n, "ftree", NULL, 0), 0);
	worst = shift_worst(n, &contended);
	CU_ASSERT_EQUAL(worst, 1);
	CU_ASSERT_EQUAL(contended, 0);
	CU_ASSERT_EQUAL_FATAL(route(n, "minhop", NULL, 0), 0);
	worst = shift_worst(n, &contended);
	fprintf(stderr, "\n  %s: ftree 1 path per cable on every shift; minhop up to %d on %d of %d shifts",
		what, worst, contended, net_nhosts(n) - 1);
	if (minhop_contends)
		CU_ASSERT(contended > 0);
}

/*
 * Give the hosts' LIDs in a scrambled order, as an SM assigning LIDs by
 * GUID does on a fabric whose GUIDs do not follow the cabling: ftree does
 * not care (it indexes hosts by their place in the tree), minhop's
 * balancing by LID order does.
 */
static void scramble_lids(struct net *n)
{
	struct sim_diag d;
	int nh = net_nhosts(n);
	uint16_t *lids = malloc(sizeof(uint16_t) * nh);
	uint32_t x = 12345;

	CU_ASSERT_FATAL(lids && n->lid_node);
	for (int i = 0; i < nh; i++) {
		int h = net_host(n, i);

		lids[i] = n->nodes[h].ports[net_first_port(n, h)].lid;
	}
	for (int i = nh - 1; i > 0; i--) {
		int j;
		uint16_t t;

		x = x * 1103515245u + 12345u;
		j = (int)((x >> 8) % (uint32_t)(i + 1));
		t = lids[i];
		lids[i] = lids[j];
		lids[j] = t;
	}
	for (int i = 0; i < nh; i++) {
		int h = net_host(n, i);

		n->nodes[h].ports[net_first_port(n, h)].lid = lids[i];
	}
	CU_ASSERT_FATAL(net_install_lids(n, &d) == 0);
	free(lids);
}

static void test_ftree_shift_paths(void)
{
	struct net n;

	/* minhop visits each switch's CAs by port, as OpenSM does, not by
	 * LID: scrambled LIDs change nothing on two levels */
	load_example(&n, "fattree-16.topo");
	shift_case(&n, "fattree-16", false);
	scramble_lids(&n);
	shift_case(&n, "fattree-16, scrambled LIDs", false);
	net_free(&n);

	load_example(&n, "fattree-128.topo");
	shift_case(&n, "fattree-128", false);
	scramble_lids(&n);
	shift_case(&n, "fattree-128, scrambled LIDs", false);
	net_free(&n);

	gen(&n, "leafspine --leaves 6 --spines 2 --hosts 6 --links-per-spine 3");
	shift_case(&n, "leafspine 6x2x3", false);
	net_free(&n);

	/* 3 levels: minhop's per-switch balance piles destinations on cores */
	gen(&n, "fattree --levels 3 --radix 4");
	shift_case(&n, "fattree k=4 3 levels", true);
	net_free(&n);
	gen(&n, "fattree --levels 3 --radix 8");
	shift_case(&n, "fattree k=8 3 levels", true);
	net_free(&n);
}

/*
 * ftree computes OpenSM's tables (tests/interop/opensm.sh compares every
 * entry with the real OpenSM): on fattree-16, the ports the spines and the
 * first leaf send h0..h15 to are those of OpenSM 3.3.23's dump. A spine's
 * two cables to a leaf take its four hosts in the order the path counts
 * give (1 2 2 1 on spine0, 1 1 2 2 on spine1); leaf0 sends the hosts of
 * every other leaf up by 5 7 6 8 (the main paths alternate spines, each
 * spine's least used cable next).
 */
static int node_named(const struct net *n, const char *desc)
{
	for (int i = 0; i < n->nnodes; i++)
		if (!strcmp(n->nodes[i].desc, desc))
			return i;
	return -1;
}

static void test_ftree_opensm(void)
{
	static const char *const sw[] = { "spine0", "spine1", "leaf0" };
	static const uint8_t want[3][16] = {
		{ 1, 2, 2, 1, 3, 4, 4, 3, 5, 6, 6, 5, 7, 8, 8, 7 },
		{ 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8 },
		{ 1, 2, 3, 4, 5, 7, 6, 8, 5, 7, 6, 8, 5, 7, 6, 8 },
	};
	struct net n;

	load_example(&n, "fattree-16.topo");
	CU_ASSERT_EQUAL_FATAL(route(&n, "ftree", NULL, 0), 0);
	for (int k = 0; k < 3; k++) {
		int s = node_named(&n, sw[k]);

		CU_ASSERT_FATAL(s >= 0);
		for (int h = 0; h < 16; h++) {
			char name[8];

			snprintf(name, sizeof(name), "h%d", h);
			CU_ASSERT_EQUAL(n.nodes[s].lft[net_lid_of(&n, net_find_host(&n, name), 1)],
					want[k][h]);
		}
	}
	net_free(&n);
	/* a cable missing (spine0[1] - leaf0[5]): OpenSM's check would refuse
	 * the tree; the same algorithm routes it, and every host still reaches
	 * every host up then down */
	load_example(&n, "fattree-16.topo");
	{
		int sp = node_named(&n, "spine0"), lf = node_named(&n, "leaf0");

		CU_ASSERT_FATAL(sp >= 0 && lf >= 0 && n.nodes[sp].ports[1].remote_node == lf);
		n.nodes[sp].ports[1].remote_node = -1;
		n.nodes[lf].ports[5].remote_node = -1;
	}
	CU_ASSERT_EQUAL_FATAL(route(&n, "ftree", NULL, 0), 0);
	check_reach(&n, "fattree-16 without spine0[1]");
	net_free(&n);
}

static void test_ftree_refuses(void)
{
	struct net n;
	struct sim_diag d;

	gen(&n, "torus --dims 3x3");
	CU_ASSERT_EQUAL(sm_route(&n, "ftree", NULL, &d), -1);
	CU_ASSERT(strstr(d.msg, "not a fat tree") != NULL);
	CU_ASSERT(strstr(d.msg, "same level") != NULL);
	net_free(&n);

	/* two leaves cabled to each other besides their spine */
	CU_ASSERT_FATAL(topo_load_string(
		"Switch 4 \"s\"\n[1] \"a\"[3]\n[2] \"b\"[3]\n"
		"Switch 4 \"a\"\n[1] \"h0\"[1]\n[2] \"b\"[2]\n"
		"Switch 4 \"b\"\n[1] \"h1\"[1]\n"
		"Ca 1 \"h0\"\nCa 1 \"h1\"\n", "leaves.net", &n, &d) == 0);
	CU_ASSERT_EQUAL(sm_route(&n, "ftree", NULL, &d), -1);
	CU_ASSERT(strstr(d.msg, "\"a\"[2]") != NULL);
	/* updn handles it */
	CU_ASSERT_EQUAL(route(&n, "updn", NULL, 0), 0);
	check_reach(&n, "leaves.net");
	net_free(&n);
}

/* ---- dor ---------------------------------------------------------------- */

/* Coordinates from "sw_x_y[_z]", parsed here; dims found. */
static int coords(const char *desc, int *c)
{
	const char *p = strchr(desc, '_');
	int k = 0;

	while (p && k < 3) {
		c[k++] = atoi(p + 1);
		p = strchr(p + 1, '_');
	}
	return k;
}

static void dor_case(const char *args, bool torus)
{
	struct net n;
	int nodes[MAXHOPS + 1], outp[MAXHOPS + 1], size[3] = { 0 }, ndim = 0, bad = 0;

	gen(&n, args);
	CU_ASSERT_EQUAL_FATAL(route(&n, "dor", NULL, 0), 0);
	check_reach(&n, args);
	for (int i = 0; i < n.nnodes; i++) {
		int c[3];

		if (n.nodes[i].type != NET_SWITCH)
			continue;
		ndim = coords(n.nodes[i].desc, c);
		for (int j = 0; j < ndim; j++)
			if (c[j] + 1 > size[j])
				size[j] = c[j] + 1;
	}
	CU_ASSERT_FATAL(ndim >= 1);
	for (int h = 0; h < net_nhosts(&n); h++) {
		int src = net_host(&n, h);

		for (int g = 0; g < net_nhosts(&n); g++) {
			int dst = net_host(&n, g), k, last_dim = -1, expect = 0;
			int a[3], b[3];
			uint16_t dlid = net_lid_of(&n, dst, 1);

			if (dst == src)
				continue;
			k = walk(&n, src, dlid, nodes, outp);
			CU_ASSERT_FATAL(k > 0);
			/* each switch hop moves one step in one dimension, never back to a lower one */
			for (int i = 1; i + 1 < k - 1; i++) {
				int dim = -1, steps = 0;

				coords(n.nodes[nodes[i]].desc, a);
				coords(n.nodes[nodes[i + 1]].desc, b);
				for (int j = 0; j < ndim; j++) {
					int diff = abs(a[j] - b[j]);

					if (!diff)
						continue;
					dim = j;
					steps++;
					if (diff != 1 && !(torus && diff == size[j] - 1))
						steps = 99;
				}
				if (steps != 1 || dim < last_dim)
					bad++;
				last_dim = dim;
			}
			/* and the path is as short as the grid allows */
			coords(n.nodes[nodes[1]].desc, a);
			coords(n.nodes[nodes[k - 2]].desc, b);
			for (int j = 0; j < ndim; j++) {
				int diff = abs(a[j] - b[j]);

				expect += torus && size[j] - diff < diff ? size[j] - diff : diff;
			}
			CU_ASSERT_EQUAL(k - 3, expect);
		}
	}
	CU_ASSERT_EQUAL(bad, 0);
	net_free(&n);
}

static void test_dor(void)
{
	struct net n;
	struct sim_diag d;

	dor_case("mesh --dims 4x4", false);
	dor_case("mesh --dims 3x2x2 --hosts 2", false);
	dor_case("torus --dims 4x4", true);
	dor_case("torus --dims 5x3", true);
	dor_case("torus --dims 3x3x3", true);
	dor_case("torus --dims 7", true);
	/* minhop on a mesh turns back to x after y somewhere: the check can fail */
	gen(&n, "mesh --dims 4x4");
	CU_ASSERT_EQUAL(route(&n, "minhop", NULL, 0), 0);
	{
		int nodes[MAXHOPS + 1], outp[MAXHOPS + 1], turns = 0, a[3], b[3];

		for (int h = 0; h < net_nhosts(&n); h++)
			for (int g = 0; g < net_nhosts(&n); g++) {
				int k, last = -1, dst = net_host(&n, g);

				if (g == h)
					continue;
				k = walk(&n, net_host(&n, h), net_lid_of(&n, dst, 1), nodes, outp);
				for (int i = 1; i + 1 < k - 1; i++) {
					coords(n.nodes[nodes[i]].desc, a);
					coords(n.nodes[nodes[i + 1]].desc, b);
					int dim = a[0] != b[0] ? 0 : 1;

					turns += dim < last;
					last = dim;
				}
			}
		CU_ASSERT(turns > 0);
	}
	net_free(&n);
	/* a cable that is not between grid neighbours is refused by name */
	CU_ASSERT_FATAL(topo_load_string(
		"Switch 4 \"sw_0_0\"\n[1] \"sw_1_0\"[1]\n[2] \"sw_1_1\"[2]\n[3] \"h0\"[1]\n"
		"Switch 4 \"sw_1_0\"\n[3] \"h1\"[1]\n"
		"Switch 4 \"sw_1_1\"\n[3] \"h2\"[1]\n"
		"Ca 1 \"h0\"\nCa 1 \"h1\"\nCa 1 \"h2\"\n", "diag.net", &n, &d) == 0);
	/* a cable that is not between grid neighbours: the names are not a
	 * grid, so the routes go by port number, as OpenSM's do, and the note
	 * says why */
	char note[400] = "";
	struct sm_opts o = { .note = note, .note_len = sizeof(note) };

	CU_ASSERT_EQUAL(sm_route(&n, "dor", &o, &d), 0);
	CU_ASSERT(strstr(note, "does not join grid neighbours") != NULL);
	CU_ASSERT(strstr(note, "routing by port number") != NULL);
	check_reach(&n, "dor, no grid in the names");
	net_free(&n);

	/* A torus whose switches are named "sw2_2": only the last number is
	 * read, the coordinates collide, and the routes are OpenSM's by port
	 * number: the same as with names that carry no numbers at all. */
	struct net m;

	gen(&n, "torus --dims 4x4");
	gen(&m, "torus --dims 4x4");
	for (int i = 0; i < n.nnodes; i++) {
		char *p;

		if (n.nodes[i].type != NET_SWITCH)
			continue;
		p = strchr(n.nodes[i].desc, '_');
		if (p)
			memmove(p, p + 1, strlen(p));	/* "sw_2_2" -> "sw2_2" */
		for (p = m.nodes[i].desc; *p; p++)
			if (isdigit((unsigned char)*p) || *p == '_')
				*p = 'x';		/* "sw_2_2" -> "swxxxx" */
	}
	note[0] = 0;
	CU_ASSERT_EQUAL(sm_route(&n, "dor", &o, &d), 0);
	CU_ASSERT(strstr(note, "same coordinates") != NULL);
	CU_ASSERT_EQUAL(sm_route(&m, "dor", NULL, &d), 0);
	check_reach(&n, "dor, torus named sw2_2");
	for (int i = 0; i < n.nnodes; i++)
		if (n.nodes[i].type == NET_SWITCH) {
			CU_ASSERT_EQUAL_FATAL(n.nodes[i].lft_len, m.nodes[i].lft_len);
			CU_ASSERT(!memcmp(n.nodes[i].lft, m.nodes[i].lft, n.nodes[i].lft_len));
		}
	net_free(&n);
	net_free(&m);
}

/* ---- LMC ---------------------------------------------------------------- */

static void lmc_case(const char *engine, const char *args, const char *example, int lmc)
{
	struct net n;
	unsigned c = 1u << lmc;

	if (example)
		load_example(&n, example);
	else
		gen(&n, args);
	CU_ASSERT_EQUAL_FATAL(route(&n, engine, NULL, lmc), 0);
	CU_ASSERT_EQUAL(n.lmc, lmc);
	/* every CA port: 2^lmc LIDs from an aligned base, each its own */
	for (int i = 0; i < n.nnodes; i++) {
		const struct net_node *nd = &n.nodes[i];

		if (nd->type == NET_SWITCH) {
			CU_ASSERT_EQUAL(n.lid_node[nd->lid], i);
			CU_ASSERT_EQUAL(net_lid_count(&n, i, 0), 1);
			continue;
		}
		for (int p = 1; p <= nd->nports; p++) {
			uint16_t b = nd->ports[p].lid;

			if (nd->ports[p].remote_node < 0)
				continue;
			CU_ASSERT_EQUAL(b % c, 0);
			CU_ASSERT_EQUAL(net_lid_count(&n, i, p), c);
			for (unsigned k = 0; k < c; k++) {
				CU_ASSERT_EQUAL(n.lid_node[b + k], i);
				CU_ASSERT_EQUAL(n.lid_port[b + k], p);
			}
		}
	}
	check_reach(&n, engine);
	net_free(&n);
}

/* The 2^lmc LIDs of one host, seen from another leaf: distinct up-links. */
static void test_lmc(void)
{
	struct net n;
	int nodes[MAXHOPS + 1], outp[MAXHOPS + 1];

	lmc_case("minhop", NULL, "fattree-16.topo", 1);
	lmc_case("updn", NULL, "fattree-16.topo", 2);
	lmc_case("ftree", NULL, "fattree-16.topo", 2);
	lmc_case("ftree", "fattree --levels 3 --radix 4", NULL, 1);
	lmc_case("dor", "torus --dims 3x3", NULL, 1);
	lmc_case("updn", "torus --dims 3x3", NULL, 3);

	for (int e = 0; e < 2; e++) {
		int h0, h5, ports[4], distinct = 0;

		load_example(&n, "fattree-16.topo");
		CU_ASSERT_EQUAL_FATAL(route(&n, e ? "updn" : "ftree", NULL, 2), 0);
		h0 = net_find_host(&n, "h0");
		h5 = net_find_host(&n, "h5");
		for (int k = 0; k < 4; k++) {
			CU_ASSERT_FATAL(walk(&n, h0, (uint16_t)(net_lid_of(&n, h5, 1) + k), nodes,
					     outp) == 5);
			ports[k] = outp[1];	/* leaf0's up-port */
			distinct++;
			for (int j = 0; j < k; j++)
				distinct -= ports[j] == ports[k];
		}
		CU_ASSERT_EQUAL(distinct, 4);
		net_free(&n);
	}

	/* the file's LMC is kept when its LIDs are aligned, else reassigned */
	{
		struct sim_diag d;
		const char *text =
			"Switch 4 \"S-1\" # \"sw\" base port 0 lid 1 lmc 0\n"
			"[1] \"H-a\"[1] # \"a\" lid 4\n[2] \"H-b\"[1] # \"b\" lid 8\n"
			"Ca 1 \"H-a\" # \"a\"\n[1] \"S-1\"[1] # lid 4 lmc 2 \"sw\" lid 1\n"
			"Ca 1 \"H-b\" # \"b\"\n[1] \"S-1\"[2] # lid 8 lmc 2 \"sw\" lid 1\n";

		CU_ASSERT_FATAL(topo_load_string(text, "lmc.topo", &n, &d) == 0);
		CU_ASSERT_EQUAL_FATAL(net_assign_lids(&n, &d), 0);
		CU_ASSERT_EQUAL(n.lmc, 2);
		CU_ASSERT_EQUAL(n.max_lid, 11);
		CU_ASSERT_EQUAL(n.lid_node[6], net_find_host(&n, "a"));
		CU_ASSERT_EQUAL(n.lid_node[9], net_find_host(&n, "b"));
		/* LMC 3 does not fit base 4: all reassigned, aligned to 8 */
		CU_ASSERT_EQUAL_FATAL(net_assign_lids_lmc(&n, 3, &d), 0);
		CU_ASSERT_EQUAL(n.nodes[net_find_host(&n, "a")].ports[1].lid % 8, 0);
		CU_ASSERT_EQUAL(n.nodes[net_find_host(&n, "b")].ports[1].lid % 8, 0);
		CU_ASSERT_EQUAL(net_assign_lids_lmc(&n, 8, &d), -1);
		net_free(&n);
	}
}

/* ---- balance: sm_balance against counting path by path ------------------ */

static void test_balance_differential(void)
{
	static const char *const cases[] = { "ftree", "minhop", "updn" };
	struct net n;
	struct sm_balance b;
	struct sim_diag d;
	int nodes[MAXHOPS + 1], outp[MAXHOPS + 1];

	for (int c = 0; c < 3; c++) {
		uint32_t **ref;
		uint64_t pairs = 0;
		int mismatch = 0;

		gen(&n, "fattree --levels 3 --radix 4");
		CU_ASSERT_EQUAL_FATAL(route(&n, cases[c], NULL, 0), 0);
		ref = calloc(n.nnodes, sizeof(*ref));
		CU_ASSERT_FATAL(ref != NULL);
		for (int i = 0; i < n.nnodes; i++)
			ref[i] = calloc(n.nodes[i].nports + 1, sizeof(uint32_t));
		for (int h = 0; h < net_nhosts(&n); h++)
			for (int g = 0; g < net_nhosts(&n); g++) {
				int src = net_host(&n, h), dst = net_host(&n, g), k;

				if (g == h)
					continue;
				k = walk(&n, src, net_lid_of(&n, dst, 1), nodes, outp);
				CU_ASSERT_FATAL(k > 0);
				pairs++;
				for (int j = 0; j + 1 < k; j++)
					ref[nodes[j]][outp[j]]++;
			}
		CU_ASSERT_EQUAL_FATAL(sm_balance(&n, SM_BAL_PATHS, &b, &d), 0);
		CU_ASSERT_EQUAL(b.pairs, pairs);
		CU_ASSERT_EQUAL(b.unrouted, 0);
		for (int i = 0; i < n.nnodes; i++)
			for (int p = 0; p <= n.nodes[i].nports; p++)
				mismatch += ref[i][p] != b.paths[i][p];
		CU_ASSERT_EQUAL(mismatch, 0);
		sm_balance_free(&n, &b);
		for (int i = 0; i < n.nnodes; i++)
			free(ref[i]);
		free(ref);
		net_free(&n);
	}
	/* an LFT hole shows as unrouted pairs */
	load_example(&n, "fattree-16.topo");
	CU_ASSERT_EQUAL_FATAL(route(&n, "minhop", NULL, 0), 0);
	n.nodes[net_find_host(&n, "leaf0")].lft[net_lid_of(&n, net_find_host(&n, "h15"), 1)] = 255;
	CU_ASSERT_EQUAL_FATAL(sm_balance(&n, 0, &b, &d), 0);
	CU_ASSERT_EQUAL(b.unrouted, 4);	/* h0..h3 -> h15 */
	CU_ASSERT_EQUAL(b.pairs, 240);
	net_free(&n);
}

/* ---- LFT dumps ------------------------------------------------------------ */

static char *dump_to_string(const struct net *n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CU_ASSERT_FATAL(f != NULL);
	CU_ASSERT(lft_write_dump(n, f) == 0);
	fclose(f);
	return buf;
}

/* Same LIDs and the same table entry for every LID on every switch. */
static void same_routes(const struct net *a, const struct net *b)
{
	int diff = 0;

	CU_ASSERT_EQUAL_FATAL(a->nnodes, b->nnodes);
	CU_ASSERT_EQUAL_FATAL(a->max_lid, b->max_lid);
	for (uint32_t l = 1; l <= a->max_lid; l++) {
		CU_ASSERT_EQUAL(a->lid_node[l], b->lid_node[l]);
		CU_ASSERT_EQUAL(a->lid_port[l], b->lid_port[l]);
	}
	for (int i = 0; i < a->nnodes; i++) {
		if (a->nodes[i].type != NET_SWITCH)
			continue;
		CU_ASSERT_FATAL(b->nodes[i].lft != NULL);
		for (uint32_t l = 0; l <= a->max_lid; l++)
			diff += a->nodes[i].lft[l] != b->nodes[i].lft[l];
	}
	CU_ASSERT_EQUAL(diff, 0);
}

static void round_trip(const char *engine, const char *example, const char *args, int lmc)
{
	struct net a, b;
	struct sim_diag d;
	char *text, *again;

	if (example) {
		load_example(&a, example);
		load_example(&b, example);
	} else {
		gen(&a, args);
		gen(&b, args);
	}
	CU_ASSERT_EQUAL_FATAL(route(&a, engine, NULL, lmc), 0);
	text = dump_to_string(&a);
	if (lft_load_buffer(&b, text, strlen(text), "dump", &d))
		report(&d, "round trip");
	same_routes(&a, &b);
	/* and writing it again gives the same bytes */
	again = dump_to_string(&b);
	CU_ASSERT_STRING_EQUAL(text, again);
	free(text);
	free(again);
	net_free(&a);
	net_free(&b);
}

/* The same tables as `ibroute` prints them, one switch after another. */
static char *as_ibroute(const struct net *n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	for (int s = 0; s < n->nnodes; s++) {
		const struct net_node *sw = &n->nodes[s];
		int count = 0;

		if (sw->type != NET_SWITCH)
			continue;
		fprintf(f, "Unicast lids [0x0-0x%x] of switch Lid %u guid 0x%016llx (%s):\n",
			n->max_lid, sw->lid, (unsigned long long)sw->guid, sw->desc);
		fputs("  Lid  Out   Destination\n       Port     Info \n", f);
		for (uint32_t l = 1; l <= n->max_lid; l++) {
			int o = n->lid_node[l];
			const struct net_node *on;
			uint16_t base;

			if (o < 0 || sw->lft[l] == 255)
				continue;
			on = &n->nodes[o];
			base = net_lid_of(n, o, n->lid_port[l]);
			count++;
			if (l != base)
				fprintf(f, "0x%04x %03u : (path #%u out of %u: portguid 0x%016llx)\n", l,
					sw->lft[l], l - base + 1, net_lid_count(n, o, n->lid_port[l]),
					(unsigned long long)on->ports[n->lid_port[l]].guid);
			else
				fprintf(f, "0x%04x %03u : (%s portguid 0x%016llx: '%s')\n", l, sw->lft[l],
					on->type == NET_SWITCH ? "Switch" : "Channel Adapter",
					(unsigned long long)(on->type == NET_SWITCH ? on->guid :
							     on->ports[n->lid_port[l]].guid),
					on->desc);
		}
		fprintf(f, "%d valid lids dumped \n", count);
	}
	fclose(f);
	return buf;
}

static void test_dump_round_trip(void)
{
	struct net a, b;
	struct sim_diag d;
	char *text;

	round_trip("minhop", "fattree-16.topo", NULL, 0);
	round_trip("ftree", "fattree-128.topo", NULL, 0);
	round_trip("updn", "fattree-16.topo", NULL, 2);
	round_trip("dor", NULL, "torus --dims 3x3 --hosts 2", 1);

	/* ibroute's format, with LMC "path #k" lines, reads to the same tables */
	load_example(&a, "fattree-16.topo");
	load_example(&b, "fattree-16.topo");
	CU_ASSERT_EQUAL_FATAL(route(&a, "ftree", NULL, 1), 0);
	text = as_ibroute(&a);
	if (lft_load_buffer(&b, text, strlen(text), "ibroute.txt", &d))
		report(&d, "ibroute");
	same_routes(&a, &b);
	CU_ASSERT_EQUAL(b.lmc, 1);
	free(text);
	net_free(&a);
	net_free(&b);

	/* no GUIDs, no LIDs (an ibsim net file): ibsim's GUIDs, the switch
	 * 0x200000, the first CA 0x100000 with its port 0x100001 */
	load_example(&a, "star-6.net");
	load_example(&b, "star-6.net");
	CU_ASSERT_EQUAL_FATAL(route(&a, "minhop", NULL, 0), 0);
	text = dump_to_string(&a);
	CU_ASSERT(strstr(text, "guid 0x0000000000200000 ('sw0')") != NULL);
	CU_ASSERT(strstr(text, "portguid 0x0000000000100001: 'h0'") != NULL);
	if (lft_load_buffer(&b, text, strlen(text), "star.dump", &d))
		report(&d, "by description");
	same_routes(&a, &b);
	free(text);
	net_free(&a);
	net_free(&b);
}

/*
 * A well-formed dump for the 2-switch fabric below, and what each damage
 * to it must produce: the line and a phrase of the message.
 */
static const char small_topo[] =
	"switchguid=0x10\nSwitch 4 \"S-10\" # \"swA\" base port 0 lid 1 lmc 0\n"
	"[1] \"H-20\"[1](21) # \"h0\" lid 3\n[3] \"S-11\"[3] # \"swB\" lid 2\n"
	"switchguid=0x11\nSwitch 4 \"S-11\" # \"swB\" base port 0 lid 2 lmc 0\n"
	"[1] \"H-30\"[1](31) # \"h1\" lid 4\n[3] \"S-10\"[3] # \"swA\" lid 1\n"
	"caguid=0x20\nCa 1 \"H-20\" # \"h0\"\n[1](21) \"S-10\"[1] # lid 3 lmc 0 \"swA\" lid 1\n"
	"caguid=0x30\nCa 1 \"H-30\" # \"h1\"\n[1](31) \"S-11\"[1] # lid 4 lmc 0 \"swB\" lid 2\n";

static const char good_dump[] =
	"Unicast lids [0-4] of switch Lid 1 guid 0x0000000000000010 ('swA'):\n"	/* 1 */
	"0x0001 000 # Switch portguid 0x0000000000000010: 'swA'\n"
	"0x0002 003 # Switch portguid 0x0000000000000011: 'swB'\n"
	"0x0003 001 # Channel Adapter portguid 0x0000000000000021: 'h0'\n"
	"0x0004 003 # Channel Adapter portguid 0x0000000000000031: 'h1'\n"		/* 5 */
	"4 lids dumped\n"
	"Unicast lids [0-4] of switch Lid 2 guid 0x0000000000000011 ('swB'):\n"	/* 7 */
	"0x0001 003 # Switch portguid 0x0000000000000010: 'swA'\n"
	"0x0002 000 # Switch portguid 0x0000000000000011: 'swB'\n"
	"0x0003 003 # Channel Adapter portguid 0x0000000000000021: 'h0'\n"		/* 10 */
	"0x0004 001 # Channel Adapter portguid 0x0000000000000031: 'h1'\n"
	"4 lids dumped\n";

/* Replace line `ln` (1-based) of good_dump with `with` (NULL: delete it). */
static char *damage(int ln, const char *with)
{
	char *out = malloc(sizeof(good_dump) + 512), *o = out;
	const char *p = good_dump;

	for (int i = 1; *p; i++) {
		const char *nl = strchr(p, '\n');

		if (i == ln) {
			if (with)
				o += sprintf(o, "%s\n", with);
		} else {
			memcpy(o, p, (size_t)(nl - p + 1));
			o += nl - p + 1;
		}
		p = nl + 1;
	}
	*o = 0;
	return out;
}

static void expect_bad_text(const char *text, int want_line, const char *phrase)
{
	struct net n;
	struct sim_diag d;
	uint8_t *lft_before;
	int rc;

	CU_ASSERT_FATAL(topo_load_string(small_topo, "small.topo", &n, &d) == 0);
	CU_ASSERT_EQUAL_FATAL(route(&n, "minhop", NULL, 0), 0);
	lft_before = n.nodes[0].lft;
	rc = lft_load_buffer(&n, text, strlen(text), "bad.dump", &d);
	CU_ASSERT_EQUAL(rc, -1);
	if (rc == -1) {
		char msg[1200];

		sim_diag_format(&d, msg, sizeof(msg));
		if (d.line != want_line || !strstr(d.msg, phrase))
			fprintf(stderr, "\n  wanted line %d '%s', got %s", want_line, phrase, msg);
		CU_ASSERT_EQUAL(d.line, want_line);
		CU_ASSERT(strstr(d.msg, phrase) != NULL);
		CU_ASSERT_STRING_EQUAL(d.file, "bad.dump");
	}
	/* refused: the net keeps its LIDs and tables */
	CU_ASSERT(n.nodes[0].lft == lft_before);
	CU_ASSERT_EQUAL(n.max_lid, 4);
	net_free(&n);
}

static void expect_bad(int ln, const char *with, int want_line, const char *phrase)
{
	char *text = damage(ln, with);

	expect_bad_text(text, want_line, phrase);
	free(text);
}

static void test_dump_malformed(void)
{
	struct net n;
	struct sim_diag d;

	/* the undamaged dump loads and routes h0 -> h1 over swA port 3 */
	CU_ASSERT_FATAL(topo_load_string(small_topo, "small.topo", &n, &d) == 0);
	CU_ASSERT_EQUAL_FATAL(lft_load_buffer(&n, good_dump, strlen(good_dump), "good", &d), 0);
	CU_ASSERT_EQUAL(n.nodes[0].lft[4], 3);
	net_free(&n);

	expect_bad(1, "0x0001 000 # Switch portguid 0x10: 'swA'", 1, "before any");
	expect_bad(1, "Unicast lids [0-4] of switch Lid 1 ('swA'):", 1, "guid 0x");
	expect_bad(1, "Unicast lids [0-4] of switch Lid 1 guid 0x10 ('swA')", 1, "end with '):'");
	expect_bad(3, "0xZZ02 003 # Switch portguid 0x11: 'swB'", 3, "hex LID");
	expect_bad(3, "0x0002 three # Switch portguid 0x11: 'swB'", 3, "output port");
	expect_bad(3, "0x0002 009 # Switch portguid 0x11: 'swB'", 3, "has 4 ports");
	expect_bad(4, "0x0002 003 # Switch portguid 0x11: 'swB'", 4, "twice");
	expect_bad(5, "0x0009 003 # Channel Adapter portguid 0x31: 'h1'", 5, "past the range");
	expect_bad(5, "0xc001 003 # Channel Adapter portguid 0x31: 'h1'", 5, "not a unicast LID");
	expect_bad(6, "7 lids dumped", 6, "trailer");	/* a table cut or edited */
	expect_bad(6, "7 valid lids dumped", 6, "trailer");
	expect_bad(7, "Unicast lids [0-4] of switch Lid 2 guid 0x0000000000000099 ('swB'):", 7,
		   "not in the topology");
	expect_bad(10, "0x0003 003 # Channel Adapter portguid 0x0000000000000031: 'h1'", 10,
		   "LID 0x0003");	/* LID 3 claimed by h1's port, h0's elsewhere */
	expect_bad(10, "0x0003 003 # Channel Adapter portguid 0x00000000000000aa: 'hx'", 10,
		   "not in the topology");
	expect_bad(11, "0x0004 002 # Channel Adapter portguid 0x31: 'h1'", 11, "no cable");
	expect_bad(11, "0x0004 000 # Channel Adapter portguid 0x31: 'h1'", 11, "port 0");
	expect_bad(11, "Multicast mlids [0xc000-0xc01f] of switch Lid 2 guid 0x11 (swB):", 11,
		   "multicast");
	expect_bad(11, "garbage here", 11, "expected");
	expect_bad(11, "0x0004 001 @ Channel Adapter", 11, "after the port");
	expect_bad(11, "0x0004 001 # Channel Adapter portguid 0xzz: 'h1'", 11, "hex digits");
	/* LMC: h1 on LIDs 5 and 6 is not an aligned block of 2 */
	expect_bad_text("Unicast lids [0-6] of switch Lid 1 guid 0x10 ('swA'):\n"
			"0x0001 000 # Switch portguid 0x10: 'swA'\n"
			"0x0002 003 # Switch portguid 0x11: 'swB'\n"
			"0x0003 001 # Channel Adapter portguid 0x21: 'h0'\n"
			"0x0005 003 # Channel Adapter portguid 0x31: 'h1'\n"
			"0x0006 003 # Channel Adapter portguid 0x31: 'h1'\n"
			"Unicast lids [0-6] of switch Lid 2 guid 0x11 ('swB'):\n"
			"0x0001 003 # Switch portguid 0x10: 'swA'\n", 5, "aligned block");
	/* whole tables missing */
	{
		char *text = damage(7, NULL);
		/* drop swB's table entirely: lines 7..12 */
		char *cut = strstr(text, "0x0001 003");

		*cut = 0;
		CU_ASSERT_FATAL(topo_load_string(small_topo, "small.topo", &n, &d) == 0);
		CU_ASSERT_EQUAL(lft_load_buffer(&n, text, strlen(text), "bad.dump", &d), -1);
		CU_ASSERT(strstr(d.msg, "no table for switch \"swB\"") != NULL);
		CU_ASSERT(n.lid_node == NULL);	/* nothing installed */
		net_free(&n);
		free(text);
	}
	CU_ASSERT_FATAL(topo_load_string(small_topo, "small.topo", &n, &d) == 0);
	CU_ASSERT_EQUAL(lft_load_buffer(&n, "", 0, "empty.dump", &d), -1);
	CU_ASSERT(strstr(d.msg, "no 'Unicast lids") != NULL);
	CU_ASSERT_EQUAL(lft_load_buffer(&n, "a\0b", 3, "bin.dump", &d), -1);
	CU_ASSERT(strstr(d.msg, "binary") != NULL);
	CU_ASSERT_EQUAL(lft_load(&n, "/nonexistent/x.dump", &d), -1);
	CU_ASSERT(strstr(d.msg, "cannot open") != NULL);
	net_free(&n);
}

/* A dump whose LIDs differ from the topology's: matched by GUID, its LIDs win. */
static void test_dump_relabelled(void)
{
	struct net n;
	struct sim_diag d;
	static const char dump[] =
		"Unicast lids [0x0-0x21] of switch Lid 7 guid 0x0000000000000010 (swA):\n"
		"  Lid  Out   Destination\n       Port     Info \n"
		"0x0007 000 : (Switch portguid 0x0000000000000010: 'swA')\n"
		"0x0008 003 : (Switch portguid 0x0000000000000011: 'swB')\n"
		"0x0010 001 : (Channel Adapter portguid 0x0000000000000021: 'h0')\n"
		"0x0011 001 : (path #2 out of 2: portguid 0x0000000000000021)\n"
		"0x0020 003 : (Channel Adapter portguid 0x0000000000000031: 'h1')\n"
		"0x0021 003 : (path #2 out of 2: portguid 0x0000000000000031)\n"
		"6 valid lids dumped \n"
		"Unicast lids [0x0-0x21] of switch Lid 8 guid 0x0000000000000011 (swB):\n"
		"0x0007 003 : (Switch portguid 0x0000000000000010: 'swA')\n"
		"0x0008 000 : (Switch portguid 0x0000000000000011: 'swB')\n"
		"0x0010 003 : (Channel Adapter portguid 0x0000000000000021: 'h0')\n"
		"0x0011 003 : (path #2 out of 2: portguid 0x0000000000000021)\n"
		"0x0020 001 : (Channel Adapter portguid 0x0000000000000031: 'h1')\n"
		"0x0021 001 : (path #2 out of 2: portguid 0x0000000000000031)\n"
		"6 valid lids dumped \n";

	CU_ASSERT_FATAL(topo_load_string(small_topo, "small.topo", &n, &d) == 0);
	if (lft_load_buffer(&n, dump, strlen(dump), "relabel", &d))
		report(&d, "relabel");
	CU_ASSERT_EQUAL_FATAL(n.max_lid, 0x21);
	CU_ASSERT_EQUAL(n.lmc, 1);
	CU_ASSERT_EQUAL(net_lid_of(&n, net_find_host(&n, "h1"), 1), 0x20);
	CU_ASSERT_EQUAL(n.nodes[net_find_host(&n, "swA")].lid, 7);
	CU_ASSERT_EQUAL(sm_lft_hops(&n, net_find_host(&n, "swA"), 0x21), 2);
	check_reach(&n, "relabelled");
	net_free(&n);
}

static void test_engine_table(void)
{
	struct net n;
	struct sim_diag d;

	load_example(&n, "fattree-16.topo");
	CU_ASSERT_EQUAL(sm_route(&n, "lash", NULL, &d), -1);
	CU_ASSERT(strstr(d.msg, "known: minhop, updn, ftree, dor") != NULL);
	for (int i = 0; sm_engines[i]; i++) {
		/* deterministic: the same tables twice */
		uint8_t *first;
		int s = net_find_host(&n, "leaf2");

		CU_ASSERT_EQUAL_FATAL(route(&n, sm_engines[i]->name, NULL, 0), 0);
		first = malloc(n.nodes[s].lft_len);
		memcpy(first, n.nodes[s].lft, n.nodes[s].lft_len);
		CU_ASSERT_EQUAL_FATAL(route(&n, sm_engines[i]->name, NULL, 0), 0);
		CU_ASSERT(memcmp(first, n.nodes[s].lft, n.nodes[s].lft_len) == 0);
		free(first);
		CU_ASSERT(sm_engines[i]->help && *sm_engines[i]->help);
	}
	net_free(&n);
}

/* ---- adaptive routing's and ECMP's sets (sm_mp.c) ------------------------ */

/* Every switch's set towards every CA LID, walked from every switch:
 * every branch must go up, then down, and reach the destination's switch
 * in the hops the set promises. Returns the number of non-empty sets; on
 * fat trees (minimal) each set must hold all the ports one hop closer. */
static int mp_walk(const struct net *n, const struct sm_mp *mp, const struct sm_mp_sw *sw,
		   int from, int dst_sw, uint16_t lid, bool went_down, int depth)
{
	const uint8_t *ports;
	uint32_t cnt = sm_mp_ports(mp, &sw[from], lid, &ports);

	if (from == dst_sw) {
		CU_ASSERT_EQUAL(cnt, 0);	/* its own hosts: the LFT */
		return 0;
	}
	CU_ASSERT_FATAL(depth < 16);
	if (cnt == 0)
		return 0;
	for (uint32_t k = 0; k < cnt; k++) {
		int v = n->nodes[from].ports[ports[k]].remote_node;
		bool down = mp->level[v] < mp->level[from];

		CU_ASSERT_EQUAL_FATAL(n->nodes[v].type, NET_SWITCH);
		CU_ASSERT(mp->level[v] != mp->level[from]);
		CU_ASSERT(!(went_down && !down));	/* never up after down */
		CU_ASSERT(mp_walk(n, mp, sw, v, dst_sw, lid, down, depth + 1) >= 0);
		if (v != dst_sw)
			CU_ASSERT_NOT_EQUAL(sm_mp_ports(mp, &sw[v], lid, &ports), 0);
		sm_mp_ports(mp, &sw[from], lid, &ports);
	}
	return 1;
}

static int mp_check(const struct net *n, bool minimal)
{
	struct sm_mp *mp = sm_mp_build(n);
	struct sm_mp_sw *sw = calloc((size_t)n->nnodes, sizeof(*sw));
	int sets = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mp);
	for (int i = 0; i < n->nnodes; i++)
		if (n->nodes[i].type == NET_SWITCH)
			CU_ASSERT_FATAL(sm_mp_sw_init(&sw[i], mp, n, i) == 0);
	for (int h = 0; h < n->nnodes; h++) {
		if (n->nodes[h].type == NET_SWITCH)
			continue;
		int dst_sw = n->nodes[h].ports[1].remote_node;
		uint16_t lid = net_lid_of(n, h, 1);

		for (int s = 0; s < n->nnodes; s++) {
			const uint8_t *ports;
			uint32_t cnt;

			if (n->nodes[s].type != NET_SWITCH)
				continue;
			sets += mp_walk(n, mp, sw, s, dst_sw, lid, false, 0);
			cnt = sm_mp_ports(mp, &sw[s], lid, &ports);
			if (!minimal || s == dst_sw)
				continue;
			/* minimal: the ports whose far switch is one hop closer */
			int want = 0, here = sm_hops(n, s, lid);

			for (int pp = 1; pp <= n->nodes[s].nports; pp++) {
				int v = n->nodes[s].ports[pp].remote_node;

				if (v >= 0 && n->nodes[v].type == NET_SWITCH &&
				    sm_hops(n, v, lid) == here - 1)
					want++;
			}
			CU_ASSERT_EQUAL(cnt, (uint32_t)want);
		}
	}
	for (int i = 0; i < n->nnodes; i++)
		sm_mp_sw_fini(&sw[i]);
	free(sw);
	sm_mp_free(mp);
	return sets;
}

static void test_multipath_sets(void)
{
	struct net n;
	struct sim_diag d;
	int l0, l1, s0, s1, c, h0, h1;

	/* fat trees: every minimal port, and up then down */
	static const char *const trees[] = {
		"fattree --radix 8", "fattree --levels 3 --radix 4",
		"fattree --radix 12 --oversub 2:1 --leaves 6",
	};
	for (size_t i = 0; i < sizeof(trees) / sizeof(*trees); i++) {
		gen(&n, trees[i]);
		CU_ASSERT_EQUAL_FATAL(route(&n, "minhop", NULL, 0), 0);
		CU_ASSERT(mp_check(&n, true) > 0);
		net_free(&n);
	}
	/* a torus: every switch has hosts, one level, no set (the LFT) */
	gen(&n, "torus --dims 4x4");
	CU_ASSERT_EQUAL_FATAL(route(&n, "dor", NULL, 0), 0);
	CU_ASSERT_EQUAL(mp_check(&n, false), 0);
	net_free(&n);
	/*
	 * l0 - s0 - c - s1 - l1, and l0 - s1: from s0, l1 is three hops by
	 * the core (up, down, down) and three by l0 (down, up, down). Only
	 * the first is up then down: s0's set towards l1 is the core alone.
	 */
	net_init(&n);
	l0 = net_add_node(&n, NET_SWITCH, 4, "l0", "l0", &d);
	l1 = net_add_node(&n, NET_SWITCH, 4, "l1", "l1", &d);
	s0 = net_add_node(&n, NET_SWITCH, 4, "s0", "s0", &d);
	s1 = net_add_node(&n, NET_SWITCH, 4, "s1", "s1", &d);
	c = net_add_node(&n, NET_SWITCH, 4, "c", "c", &d);
	h0 = net_add_node(&n, NET_CA, 1, "h0", "h0", &d);
	h1 = net_add_node(&n, NET_CA, 1, "h1", "h1", &d);
	CU_ASSERT_FATAL(!net_connect(&n, h0, 1, l0, 1, 0, &d) && !net_connect(&n, h1, 1, l1, 1, 0, &d) &&
			!net_connect(&n, l0, 2, s0, 1, 0, &d) && !net_connect(&n, l0, 3, s1, 1, 0, &d) &&
			!net_connect(&n, l1, 2, s1, 2, 0, &d) && !net_connect(&n, s0, 2, c, 1, 0, &d) &&
			!net_connect(&n, s1, 3, c, 2, 0, &d));
	CU_ASSERT_FATAL(net_validate(&n, &d) == 0);
	CU_ASSERT_EQUAL_FATAL(route(&n, "minhop", NULL, 0), 0);
	CU_ASSERT(mp_check(&n, false) > 0);
	{
		struct sm_mp *mp = sm_mp_build(&n);
		struct sm_mp_sw sw;
		const uint8_t *ports;

		CU_ASSERT_FATAL(mp && sm_mp_sw_init(&sw, mp, &n, s0) == 0);
		CU_ASSERT_EQUAL(sm_mp_ports(mp, &sw, net_lid_of(&n, h1, 1), &ports), 1);
		CU_ASSERT_EQUAL(ports[0], 2);	/* to the core */
		/* both ways are as short: three switch hops, and the cable to h1 */
		CU_ASSERT_EQUAL(sm_hops(&n, s0, net_lid_of(&n, h1, 1)), 4);
		sm_mp_sw_fini(&sw);
		sm_mp_free(mp);
	}
	net_free(&n);
}

static const struct test_case tests[] = {
	{ "every engine reaches every LID", test_reach_all },
	{ "updn: up then down, shortest on trees", test_updn },
	{ "CDG: updn, ftree, dor on a mesh acyclic", test_deadlock_freedom },
	{ "ftree: one path per cable on shifts", test_ftree_shift_paths },
	{ "ftree refuses non-trees", test_ftree_refuses },
	{ "ftree: OpenSM's tables, a cable missing", test_ftree_opensm },
	{ "dor: dimension by dimension", test_dor },
	{ "LMC: aligned LIDs, all routed", test_lmc },
	{ "sm_balance matches a path walk", test_balance_differential },
	{ "dump write/read round trip", test_dump_round_trip },
	{ "malformed dumps", test_dump_malformed },
	{ "dump LIDs win over the topology's", test_dump_relabelled },
	{ "engine table", test_engine_table },
	{ "AR and ECMP sets: minimal on trees, up then down, none on a torus", test_multipath_sets },
	{ NULL, NULL },
};

TEST_MAIN("routing", tests)
