/* SPDX-License-Identifier: MIT */
/*
 * test_gen.c - the topology generators (topologies/topo_gen*.c). For every
 * family and several sizes: host, switch and cable counts equal closed
 * formulas written here from the shape (not taken from the generator);
 * every switch stays within its radix and has the links its place in the
 * shape asks for; every host reaches every other, within the diameter the
 * shape promises; the bisection (max flow between the two halves of the
 * hosts, by a plain augmenting-path max flow written here) is what the
 * shape gives. Every file reloads with the same cables and writes back
 * byte for byte; the same options give the same bytes; the shipped
 * examples are what the commands in topologies/examples/README.md make,
 * and its table is right; bad options are refused with messages that say
 * what is wrong, by the library and by `ibfab topo gen` (exit 2).
 */
#include <CUnit/CUnit.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "models/net/net.h"
#include "tests/unit/test_main.h"
#include "topologies/topo.h"

#define MAX_ARGS 40

/* ---- helpers ----------------------------------------------------------- */

/* Split "kind --opt v ..." in place on spaces into argv; returns argc. */
static int split(char *s, char **argv)
{
	int n = 0;

	for (char *t = strtok(s, " "); t && n < MAX_ARGS; t = strtok(NULL, " "))
		argv[n++] = t;
	return n;
}

static void report(const char *what, const struct sim_diag *d)
{
	char msg[1200];

	sim_diag_format(d, msg, sizeof(msg));
	fprintf(stderr, "\n  %s: %s\n", what, msg);
}

/*
 * Parse `cmd` (without "ibfab topo gen") into `p`; fatal if it is refused.
 * `buf` holds the words, which `p` points into (the rate), so it must
 * outlive `p`.
 */
static void parse(const char *cmd, struct topo_gen_params *p, char *buf,
		  size_t len)
{
	char *argv[MAX_ARGS];
	struct sim_diag d;
	int argc, rc;

	snprintf(buf, len, "%s", cmd);
	argc = split(buf, argv);
	rc = topo_gen_parse(p, argc, argv, &d);
	if (rc)
		report(cmd, &d);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
}

static void gen(const char *cmd, struct net *n)
{
	struct topo_gen_params p;
	struct sim_diag d;
	char buf[512];
	int rc;

	parse(cmd, &p, buf, sizeof(buf));
	rc = topo_gen_net(n, &p, &d);
	if (rc)
		report(cmd, &d);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
}

static char *gen_text(const char *cmd)
{
	struct topo_gen_params p;
	struct sim_diag d;
	char buf[512], *t;

	parse(cmd, &p, buf, sizeof(buf));
	t = topo_gen_str(&p, &d);
	if (!t)
		report(cmd, &d);
	CU_ASSERT_FATAL(t != NULL);
	return t;
}

static char *links_of(const struct net *n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CU_ASSERT_FATAL(f != NULL);
	topo_print_links(n, f);
	fclose(f);
	return buf;
}

static char *write_of(const struct net *n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CU_ASSERT_FATAL(f != NULL);
	CU_ASSERT_EQUAL(topo_write_ibnd(n, f), 0);
	fclose(f);
	return buf;
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long len;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)len + 1);
	CU_ASSERT_FATAL(buf != NULL);
	CU_ASSERT_FATAL(fread(buf, 1, (size_t)len, f) == (size_t)len);
	buf[len] = 0;
	fclose(f);
	return buf;
}

/* Connected ports of a node. */
static int degree(const struct net *n, int i)
{
	int c = 0;

	for (int p = 1; p <= n->nodes[i].nports; p++)
		c += n->nodes[i].ports[p].remote_node >= 0;
	return c;
}

/* Number of cables between two nodes. */
static int cables_between(const struct net *n, int a, int b)
{
	int c = 0;

	for (int p = 1; p <= n->nodes[a].nports; p++)
		c += n->nodes[a].ports[p].remote_node == b;
	return c;
}

static int by_desc(const struct net *n, const char *desc)
{
	int i = net_find_host(n, desc);

	if (i < 0)
		fprintf(stderr, "\n  no node \"%s\"\n", desc);
	CU_ASSERT_FATAL(i >= 0);
	return i;
}

/*
 * Hosts are one-port CAs on a switch; switches have `radix` ports when it
 * is given (else at least the ports they use), every rate is `rate`.
 */
static void check_nodes(const struct net *n, int radix, int lanes, int speed)
{
	for (int i = 0; i < n->nnodes; i++) {
		const struct net_node *nd = &n->nodes[i];

		if (nd->type == NET_SWITCH) {
			if (radix > 0)
				CU_ASSERT_EQUAL(nd->nports, radix);
			CU_ASSERT(degree(n, i) <= nd->nports);
			CU_ASSERT(degree(n, i) >= 1);
		} else {
			CU_ASSERT_EQUAL(nd->type, NET_CA);
			CU_ASSERT_EQUAL(nd->nports, 1);
			CU_ASSERT_EQUAL_FATAL(degree(n, i), 1);
			CU_ASSERT_EQUAL(n->nodes[nd->ports[1].remote_node].type,
					NET_SWITCH);
		}
		for (int p = 1; p <= nd->nports; p++)
			if (nd->ports[p].remote_node >= 0) {
				CU_ASSERT_EQUAL(nd->ports[p].lanes, lanes);
				CU_ASSERT_EQUAL(nd->ports[p].speed, speed);
			}
	}
	/* GUIDs unique (ids are made from them) */
	for (int i = 0; i < n->nnodes; i++)
		for (int j = i + 1; j < n->nnodes && j < i + 64; j++)
			CU_ASSERT_NOT_EQUAL(n->nodes[i].guid, n->nodes[j].guid);
}

/*
 * The most switches on a shortest path between two hosts, by BFS from
 * every host; -1 if some host cannot reach another.
 */
static int diameter(const struct net *n)
{
	int *dist = malloc(sizeof(int) * n->nnodes), *q = malloc(sizeof(int) * n->nnodes);
	int nh = net_nhosts(n), worst = 0;

	CU_ASSERT_FATAL(dist && q);
	for (int k = 0; k < nh && worst >= 0; k++) {
		int src = net_host(n, k), head = 0, tail = 0;

		for (int i = 0; i < n->nnodes; i++)
			dist[i] = -1;
		dist[src] = 0;
		q[tail++] = src;
		while (head < tail) {
			int u = q[head++];

			if (u != src && n->nodes[u].type != NET_SWITCH)
				continue;	/* hosts do not forward */
			for (int p = 1; p <= n->nodes[u].nports; p++) {
				int r = n->nodes[u].ports[p].remote_node;

				if (r >= 0 && dist[r] < 0) {
					dist[r] = dist[u] + 1;
					q[tail++] = r;
				}
			}
		}
		for (int j = 0; j < nh; j++) {
			int dj = dist[net_host(n, j)];

			if (dj < 0) {
				worst = -1;
				break;
			}
			if (j != k && dj - 1 > worst)
				worst = dj - 1;
		}
	}
	free(dist);
	free(q);
	return worst;
}

/*
 * Max flow in cables from hosts 0..N/2-1 to hosts N/2..N-1 (host order),
 * every cable carrying 1 each way: shortest augmenting paths on a residual
 * graph of arc pairs.
 */
struct arc {
	int to, cap, next;
};

static int bisection(const struct net *n)
{
	int V = n->nnodes + 2, src = n->nnodes, snk = n->nnodes + 1;
	int nh = net_nhosts(n), narcs = 0, cap = 4 * n->nnodes + 4 * nh + 16;
	struct arc *a;
	int *head = malloc(sizeof(int) * V), *prev = malloc(sizeof(int) * V);
	int *q = malloc(sizeof(int) * V), flow = 0;

	for (int i = 0; i < n->nnodes; i++)
		cap += 2 * n->nodes[i].nports;
	a = malloc(sizeof(*a) * cap);
	CU_ASSERT_FATAL(a && head && prev && q);
	for (int v = 0; v < V; v++)
		head[v] = -1;
#define ADD(u, v, c1, c2) do { \
		a[narcs] = (struct arc){ (v), (c1), head[u] }; head[u] = narcs++; \
		a[narcs] = (struct arc){ (u), (c2), head[v] }; head[v] = narcs++; \
	} while (0)
	for (int i = 0; i < n->nnodes; i++)
		for (int p = 1; p <= n->nodes[i].nports; p++) {
			int r = n->nodes[i].ports[p].remote_node;
			int rp = n->nodes[i].ports[p].remote_port;

			/* each cable once: undirected, capacity 1 both ways */
			if (r > i || (r == i && rp > p))
				ADD(i, r, 1, 1);
		}
	for (int k = 0; k < nh; k++) {
		if (k < nh / 2)
			ADD(src, net_host(n, k), 1 << 20, 0);
		else
			ADD(net_host(n, k), snk, 1 << 20, 0);
	}
#undef ADD
	for (;;) {
		int qh = 0, qt = 0;

		for (int v = 0; v < V; v++)
			prev[v] = -1;
		prev[src] = -2;
		q[qt++] = src;
		while (qh < qt && prev[snk] == -1) {
			int u = q[qh++];

			for (int e = head[u]; e >= 0; e = a[e].next)
				if (a[e].cap > 0 && prev[a[e].to] == -1) {
					prev[a[e].to] = e;
					q[qt++] = a[e].to;
				}
		}
		if (prev[snk] == -1)
			break;
		for (int v = snk; v != src; v = a[prev[v] ^ 1].to) {
			a[prev[v]].cap--;
			a[prev[v] ^ 1].cap++;
		}
		flow++;
	}
	free(a);
	free(head);
	free(prev);
	free(q);
	return flow;
}

/*
 * The generated file reloads with the same cables, rates, descriptions,
 * GUIDs and LIDs, and writing the reloaded fabric gives the same bytes as
 * writing the generated one (the file minus its header comment).
 */
static void roundtrip(const char *cmd)
{
	char *text = gen_text(cmd), *body, *a, *b, *wa, *wb;
	struct sim_diag d;
	struct net g, m;
	int rc;

	gen(cmd, &g);
	rc = topo_load_string(text, cmd, &m, &d);
	if (rc)
		report(cmd, &d);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	a = links_of(&g);
	b = links_of(&m);
	CU_ASSERT_STRING_EQUAL(a, b);
	wa = write_of(&g);
	wb = write_of(&m);
	CU_ASSERT_STRING_EQUAL(wa, wb);
	/* the file is the header comment, then exactly that */
	body = strstr(text, "\n\n");
	CU_ASSERT_FATAL(body != NULL);
	CU_ASSERT_STRING_EQUAL(body + 2, wa);
	CU_ASSERT_EQUAL(net_assign_lids(&m, &d), 0);
	CU_ASSERT_EQUAL(m.max_lid, g.max_lid);
	CU_ASSERT_EQUAL(m.nnodes, g.nnodes);
	for (int i = 0; i < g.nnodes && i < m.nnodes; i++) {
		int port = g.nodes[i].type == NET_SWITCH ? 0 : 1;

		CU_ASSERT_EQUAL(m.nodes[i].guid, g.nodes[i].guid);
		CU_ASSERT_EQUAL(net_lid_of(&m, i, port), net_lid_of(&g, i, port));
	}
	free(a);
	free(b);
	free(wa);
	free(wb);
	free(text);
	net_free(&g);
	net_free(&m);
}

/* Counts, nodes, reachability and (for small fabrics) diameter and bisection. */
struct expect {
	long hosts, switches, cables;
	int radix;		/* 0: not given */
	int diameter;		/* switches on the longest shortest path; 0: skip */
	bool diameter_max;	/* diameter is an upper bound, not exact */
	int bisection;		/* 0: skip */
};

static void check_shape(const char *cmd, const struct net *n, const struct expect *e)
{
	int dm;

	if (net_nhosts(n) != e->hosts || net_count(n, NET_SWITCH) != e->switches ||
	    net_nlinks(n) != e->cables)
		fprintf(stderr, "\n  %s: %d hosts, %d switches, %d cables; expected %ld, %ld, %ld\n",
			cmd, net_nhosts(n), net_count(n, NET_SWITCH), net_nlinks(n),
			e->hosts, e->switches, e->cables);
	CU_ASSERT_EQUAL(net_nhosts(n), e->hosts);
	CU_ASSERT_EQUAL(net_count(n, NET_CA), e->hosts);
	CU_ASSERT_EQUAL(net_count(n, NET_SWITCH), e->switches);
	CU_ASSERT_EQUAL(n->nnodes, e->hosts + e->switches);
	CU_ASSERT_EQUAL(net_nlinks(n), e->cables);
	check_nodes(n, e->radix, 4, LINK_HDR);
	if (n->nnodes > 800)
		return;
	dm = diameter(n);
	CU_ASSERT(dm >= 1);	/* -1: some host cannot reach another */
	if (e->diameter) {
		if (e->diameter_max ? dm > e->diameter : dm != e->diameter)
			fprintf(stderr, "\n  %s: diameter %d switches, expected %s%d\n",
				cmd, dm, e->diameter_max ? "<= " : "", e->diameter);
		CU_ASSERT(e->diameter_max ? dm <= e->diameter : dm == e->diameter);
	}
	if (e->bisection) {
		int b = bisection(n);

		if (b != e->bisection)
			fprintf(stderr, "\n  %s: bisection %d, expected %d\n", cmd,
				b, e->bisection);
		CU_ASSERT_EQUAL(b, e->bisection);
	}
}

/* ---- fat trees --------------------------------------------------------- */

/*
 * By hand for each case: H hosts and U up-links per leaf; 2 levels: L
 * leaves, S spines; 3 levels: P pods of D leaves, U pod spines each with
 * k/2 up-links to as many cores.
 */
static const struct ft_case {
	const char *cmd;
	int levels, k, H, U, L, S, P, D;
	int bisection;		/* 0: skip */
} ft_cases[] = {
	{ "fattree --radix 8", 2, 8, 4, 4, 8, 4, 0, 0, 16 },
	{ "fattree --radix 8 --oversub 3:1", 2, 8, 6, 2, 8, 2, 0, 0, 8 },
	{ "fattree --radix 12 --oversub 2:1 --leaves 8", 2, 12, 8, 4, 8, 4, 0, 0, 16 },
	{ "fattree --radix 12 --oversub 4:2 --leaves 6 --spines 2", 2, 12, 8, 4, 6, 2, 0, 0, 12 },
	{ "fattree --radix 16 --hosts 4 --leaves 6", 2, 16, 4, 4, 6, 4, 0, 0, 12 },
	{ "fattree --radix 40 --levels 2", 2, 40, 20, 20, 40, 20, 0, 0, 0 },
	{ "fattree --levels 3 --radix 4", 3, 4, 2, 2, 0, 0, 4, 2, 8 },
	{ "fattree --levels 3 --radix 8", 3, 8, 4, 4, 0, 0, 8, 4, 64 },
	{ "fattree --levels 3 --radix 8 --pods 2", 3, 8, 4, 4, 0, 0, 2, 4, 16 },
	{ "fattree --levels 3 --radix 8 --pods 4 --leaves 2", 3, 8, 4, 4, 0, 0, 4, 2, 16 },
	{ "fattree --levels 3 --radix 12 --oversub 2:1 --pods 4", 3, 12, 8, 4, 0, 0, 4, 6, 48 },
	{ "fattree --levels 3 --radix 16", 3, 16, 8, 8, 0, 0, 16, 8, 0 },
};

static void test_fattree_counts(void)
{
	for (unsigned i = 0; i < SIM_ARRAY_SIZE(ft_cases); i++) {
		const struct ft_case *c = &ft_cases[i];
		struct expect e = { .radix = c->k, .bisection = c->bisection };
		struct net n;

		if (c->levels == 2) {
			e.hosts = (long)c->L * c->H;
			e.switches = c->L + c->S;
			e.cables = (long)c->L * c->H + (long)c->L * c->U;
			e.diameter = 3;
		} else {
			e.hosts = (long)c->P * c->D * c->H;
			e.switches = (long)c->P * c->D + (long)c->P * c->U +
				     (long)c->U * (c->k / 2);
			e.cables = e.hosts + (long)c->P * c->D * c->U +
				   (long)c->P * c->U * (c->k / 2);
			e.diameter = c->P > 1 ? 5 : 3;
		}
		gen(c->cmd, &n);
		check_shape(c->cmd, &n, &e);
		/* every leaf: H hosts on ports 1..H, then U up-links */
		for (int l = 0; l < (c->levels == 2 ? c->L : c->P * c->D); l++) {
			char name[16];
			int leaf;

			snprintf(name, sizeof(name), "leaf%d", l);
			leaf = by_desc(&n, name);
			CU_ASSERT_EQUAL(degree(&n, leaf), c->H + c->U);
			for (int p = 1; p <= c->H; p++)
				CU_ASSERT_EQUAL(n.nodes[n.nodes[leaf].ports[p].remote_node].type,
						NET_CA);
		}
		net_free(&n);
	}
}

/* The closed forms of the full trees: k^2/2 and k^3/4 hosts. */
static void test_fattree_full(void)
{
	static const int ks2[] = { 4, 8, 16, 32, 40, 64 }, ks3[] = { 4, 8, 16, 32 };
	char cmd[64];

	for (unsigned i = 0; i < SIM_ARRAY_SIZE(ks2); i++) {
		long k = ks2[i];
		struct expect e = { k * k / 2, 3 * k / 2, k * k, (int)k, 0, false, 0 };
		struct net n;

		snprintf(cmd, sizeof(cmd), "fattree --radix %ld", k);
		gen(cmd, &n);
		check_shape(cmd, &n, &e);
		net_free(&n);
	}
	for (unsigned i = 0; i < SIM_ARRAY_SIZE(ks3); i++) {
		long k = ks3[i];
		struct expect e = { k * k * k / 4, 5 * k * k / 4, 3 * k * k * k / 4,
				    (int)k, 0, false, 0 };
		struct net n;

		snprintf(cmd, sizeof(cmd), "fattree --levels 3 --radix %ld", k);
		gen(cmd, &n);
		check_shape(cmd, &n, &e);
		/* every core meets every pod once: one link to each pod spine group */
		CU_ASSERT_EQUAL(degree(&n, by_desc(&n, "core0")), k);
		net_free(&n);
	}
}

/* leafspine: the fattree2 shape with any counts; fattree2 itself unchanged. */
static void test_leafspine(void)
{
	static const struct { int L, S, H, K, radix; } cs[] = {
		{ 4, 2, 4, 2, 0 }, { 6, 3, 12, 2, 0 }, { 1, 1, 3, 1, 0 },
		{ 10, 4, 20, 1, 32 }, { 3, 5, 2, 3, 0 },
	};

	for (unsigned i = 0; i < SIM_ARRAY_SIZE(cs); i++) {
		struct expect e = {
			(long)cs[i].L * cs[i].H, cs[i].L + cs[i].S,
			(long)cs[i].L * cs[i].H + (long)cs[i].L * cs[i].S * cs[i].K,
			cs[i].radix, cs[i].L > 1 ? 3 : 1, false,
			/* hosts or up-links of a half, whichever is less */
			cs[i].L % 2 ? 0 : cs[i].L / 2 *
				(cs[i].H < cs[i].S * cs[i].K ? cs[i].H : cs[i].S * cs[i].K),
		};
		char cmd[160], *a, *b;
		struct sim_diag d;
		struct net n, f;

		snprintf(cmd, sizeof(cmd), "leafspine --leaves %d --spines %d --hosts %d --links-per-spine %d",
			 cs[i].L, cs[i].S, cs[i].H, cs[i].K);
		if (cs[i].radix)
			snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd),
				 " --radix %d", cs[i].radix);
		gen(cmd, &n);
		check_shape(cmd, &n, &e);
		/* the same cabling as the original generator */
		CU_ASSERT_EQUAL_FATAL(topo_gen_fattree2_net(&f, cs[i].L, cs[i].S,
							    cs[i].H, cs[i].K,
							    "4xHDR", &d), 0);
		a = links_of(&n);
		b = links_of(&f);
		CU_ASSERT_STRING_EQUAL(a, b);
		free(a);
		free(b);
		net_free(&n);
		net_free(&f);
	}
}

static void test_fattree2_unchanged(void)
{
	struct sim_diag d;
	char *a = gen_text("fattree2 --leaves 4 --spines 2 --hosts 4 --links-per-spine 2 --rate 4xHDR");
	char *b = topo_gen_fattree2_str(4, 2, 4, 2, "4xHDR", &d);
	char *c = gen_text("fattree2 --leaves 1 --spines 0 --hosts 3");

	CU_ASSERT_FATAL(b != NULL);
	CU_ASSERT_STRING_EQUAL(a, b);
	/* the old default: links per spine = hosts / spines */
	free(a);
	a = gen_text("fattree2 --leaves 8 --spines 8 --hosts 16");
	free(b);
	b = topo_gen_fattree2_str(8, 8, 16, 2, "4xHDR", &d);
	CU_ASSERT_FATAL(b != NULL);
	CU_ASSERT_STRING_EQUAL(a, b);
	CU_ASSERT_PTR_NOT_NULL(strstr(c, "\"h2\""));
	free(a);
	free(b);
	free(c);
}

/* ---- tori and meshes --------------------------------------------------- */

/* Coordinates from "sw_x_y_z"; returns how many. */
static int coords(const char *desc, int *c)
{
	int n = 0;

	CU_ASSERT_FATAL(!strncmp(desc, "sw", 2));
	for (const char *s = desc + 2; *s == '_' && n < 3; n++)
		c[n] = (int)strtol(s + 1, (char **)&s, 10);
	return n;
}

static void test_torus_mesh(void)
{
	static const struct { const char *dims; int nd, n[3], H; } cs[] = {
		{ "4x4", 2, { 4, 4 }, 1 }, { "3x5", 2, { 3, 5 }, 2 },
		{ "2x2x2", 3, { 2, 2, 2 }, 1 }, { "4x4x2", 3, { 4, 4, 2 }, 1 },
		{ "8", 1, { 8 }, 1 }, { "2x3", 2, { 2, 3 }, 3 },
		{ "3x3x4", 3, { 3, 3, 4 }, 2 },
	};

	for (unsigned i = 0; i < SIM_ARRAY_SIZE(cs); i++) {
		for (int torus = 0; torus < 2; torus++) {
			long N = 1, H = cs[i].H, mesh_links = 0, diam = 1;
			int last = cs[i].n[cs[i].nd - 1];
			struct expect e;
			char cmd[96];
			struct net n;

			for (int k = 0; k < cs[i].nd; k++)
				N *= cs[i].n[k];
			for (int k = 0; k < cs[i].nd; k++) {
				mesh_links += N / cs[i].n[k] * (cs[i].n[k] - 1);
				diam += torus ? cs[i].n[k] / 2 : cs[i].n[k] - 1;
			}
			e = (struct expect){
				N * H, N, N * H + (torus ? cs[i].nd * N : mesh_links),
				0, (int)diam, false, 0,
			};
			/* halves cut the slowest dimension in two when it is even */
			if (last % 2 == 0) {
				long cut = (torus ? 2 : 1) * N / last;

				e.bisection = (int)(cut < N * H / 2 ? cut : N * H / 2);
			}
			snprintf(cmd, sizeof(cmd), "%s --dims %s --hosts %d",
				 torus ? "torus" : "mesh", cs[i].dims, cs[i].H);
			gen(cmd, &n);
			check_shape(cmd, &n, &e);
			for (int s = 0; s < n.nnodes; s++) {
				int c[3] = { 0 }, want = (int)H;

				if (n.nodes[s].type != NET_SWITCH)
					continue;
				CU_ASSERT_EQUAL(coords(n.nodes[s].desc, c), cs[i].nd);
				CU_ASSERT_EQUAL(n.nodes[s].nports, H + 2 * cs[i].nd);
				for (int k = 0; k < cs[i].nd; k++)
					want += torus ? 2 : (c[k] > 0) + (c[k] < cs[i].n[k] - 1);
				CU_ASSERT_EQUAL(degree(&n, s), want);
				/* every switch cable joins neighbours: one step, one dimension */
				for (int p = 1; p <= n.nodes[s].nports; p++) {
					int r = n.nodes[s].ports[p].remote_node, rc[3] = { 0 }, diff = 0;

					if (r < 0 || n.nodes[r].type != NET_SWITCH)
						continue;
					coords(n.nodes[r].desc, rc);
					for (int k = 0; k < cs[i].nd; k++) {
						int dd = abs(c[k] - rc[k]);

						if (torus && dd == cs[i].n[k] - 1)
							dd = 1;
						diff += dd;
					}
					CU_ASSERT_EQUAL(diff, 1);
				}
			}
			net_free(&n);
		}
	}
	/* a size-2 torus dimension: two cables between the pair */
	{
		struct net n;

		gen("torus --dims 2x3", &n);
		CU_ASSERT_EQUAL(cables_between(&n, by_desc(&n, "sw_0_1"),
					       by_desc(&n, "sw_1_1")), 2);
		CU_ASSERT_EQUAL(cables_between(&n, by_desc(&n, "sw_0_0"),
					       by_desc(&n, "sw_0_2")), 1);
		/* hosts follow their switches, x fastest: h3 is on sw_1_1 */
		CU_ASSERT_EQUAL(n.nodes[by_desc(&n, "h3")].ports[1].remote_node,
				by_desc(&n, "sw_1_1"));
		net_free(&n);
	}
}

/* ---- dragonflies ------------------------------------------------------- */

static void test_dragonfly(void)
{
	static const struct { int G, A, p, h; } cs[] = {
		{ 4, 4, 2, 3 }, { 5, 4, 2, 1 }, { 9, 4, 2, 2 }, { 3, 2, 1, 1 },
		{ 6, 4, 2, 2 }, { 2, 3, 1, 1 }, { 17, 8, 4, 2 },
	};

	for (unsigned i = 0; i < SIM_ARRAY_SIZE(cs); i++) {
		long G = cs[i].G, A = cs[i].A, P = cs[i].p, h = cs[i].h;
		long M = A * h / (G - 1);
		struct expect e = {
			G * A * P, G * A, G * A * P + G * A * (A - 1) / 2 + M * G * (G - 1) / 2,
			0, 4, true, 0,
		};
		int *grp;
		char cmd[128];
		struct net n;

		snprintf(cmd, sizeof(cmd), "dragonfly --groups %ld --routers %ld --hosts %ld --global %ld",
			 G, A, P, h);
		gen(cmd, &n);
		check_shape(cmd, &n, &e);
		/* group of each router, from its name g<g>r<r> */
		grp = calloc((size_t)n.nnodes, sizeof(int));
		CU_ASSERT_FATAL(grp != NULL);
		for (int s = 0; s < n.nnodes; s++) {
			int g, r;

			grp[s] = -1;
			if (n.nodes[s].type == NET_SWITCH) {
				CU_ASSERT_EQUAL_FATAL(sscanf(n.nodes[s].desc, "g%dr%d", &g, &r), 2);
				grp[s] = g;
				CU_ASSERT_EQUAL(n.nodes[s].nports, P + A - 1 + h);
			}
		}
		/* M cables between every two groups, one between two routers of a group */
		for (int x = 0; x < G; x++)
			for (int y = 0; y < G; y++) {
				long c = 0;

				for (int s = 0; s < n.nnodes; s++)
					for (int p = 1; grp[s] == x && p <= n.nodes[s].nports; p++) {
						int r = n.nodes[s].ports[p].remote_node;

						c += r >= 0 && grp[r] == y;
					}
				/* inside a group each cable is seen from both ends */
				CU_ASSERT_EQUAL(c, x == y ? A * (A - 1) : M);
			}
		for (int s = 0; s < n.nnodes; s++)
			for (int t = s + 1; t < n.nnodes; t++)
				if (grp[s] >= 0 && grp[s] == grp[t])
					CU_ASSERT_EQUAL(cables_between(&n, s, t), 1);
		free(grp);
		net_free(&n);
	}
}

/* ---- rail-optimised ---------------------------------------------------- */

static void test_rail(void)
{
	/* by hand: R leaves per rail, D node ports per leaf, S spines */
	static const struct { const char *cmd; int N, G, R, D, S, radix, bisection; } cs[] = {
		{ "rail --nodes 8 --gpus 8", 8, 8, 1, 8, 8, 0, 32 },
		{ "rail --nodes 8 --gpus 8 --radix 16", 8, 8, 1, 8, 8, 16, 32 },
		{ "rail --nodes 20 --gpus 4 --radix 16", 20, 4, 3, 8, 8, 16, 40 },
		{ "rail --nodes 4 --gpus 2 --oversub 2:1", 4, 2, 1, 4, 2, 0, 4 },
		{ "rail --nodes 12 --gpus 4 --radix 8 --oversub 3:1", 12, 4, 2, 6, 2, 8, 8 },
		{ "rail --nodes 3 --gpus 1", 3, 1, 1, 3, 3, 0, 1 },
		{ "rail --nodes 8 --gpus 4 --radix 8 --spines 2", 8, 4, 2, 4, 2, 8, 8 },
	};

	for (unsigned i = 0; i < SIM_ARRAY_SIZE(cs); i++) {
		long N = cs[i].N, G = cs[i].G, R = cs[i].R, S = cs[i].S;
		struct expect e = { N * G, G * R + S, N * G + G * R * S, cs[i].radix,
				    R == 1 && G == 1 ? 1 : 3, false, cs[i].bisection };
		struct net n;

		gen(cs[i].cmd, &n);
		check_shape(cs[i].cmd, &n, &e);
		/* host k is rank k: node k / G, GPU k % G, on a leaf of rail k % G */
		for (int k = 0; k < net_nhosts(&n); k++) {
			int hi = net_host(&n, k), leaf, g, ni, rg;
			char want[32];

			snprintf(want, sizeof(want), "n%ldg%ld", k / G, k % G);
			CU_ASSERT_STRING_EQUAL(n.nodes[hi].desc, want);
			CU_ASSERT_EQUAL(sscanf(n.nodes[hi].desc, "n%dg%d", &ni, &g), 2);
			leaf = n.nodes[hi].ports[1].remote_node;
			CU_ASSERT_EQUAL(sscanf(n.nodes[leaf].desc, "rail%d", &rg), 1);
			CU_ASSERT_EQUAL(rg, g);
			CU_ASSERT_EQUAL(strchr(n.nodes[leaf].desc, '_') != NULL, R > 1);
			CU_ASSERT_EQUAL(n.nodes[hi].ports[1].remote_port, ni % cs[i].D + 1);
		}
		/* every rail leaf has one cable to each spine */
		for (int s = 0; s < S; s++) {
			char name[16];
			int sp;

			snprintf(name, sizeof(name), "spine%d", s);
			sp = by_desc(&n, name);
			CU_ASSERT_EQUAL(degree(&n, sp), G * R);
		}
		net_free(&n);
	}
	/* same rail, one leaf: one switch between the two GPUs' HCAs */
	{
		struct net n;
		int a, b;

		gen("rail --nodes 8 --gpus 8", &n);
		a = by_desc(&n, "n0g5");
		b = by_desc(&n, "n7g5");
		CU_ASSERT_EQUAL(n.nodes[a].ports[1].remote_node,
				n.nodes[b].ports[1].remote_node);
		CU_ASSERT_STRING_EQUAL(n.nodes[n.nodes[a].ports[1].remote_node].desc, "rail5");
		net_free(&n);
	}
}

/*
 * --levels 3, by hand: k = 8, 2 GPUs: a leaf takes 4 nodes and has 4
 * up-links, a pod 2 leaves per rail (a pod spine's 4 down-ports take 2
 * rails x 2), 4 spines per pod, 4 x 4 = 16 cores. 8 nodes: one pod, every
 * path within it (leaf, pod spine, leaf: 3 switches); 16 nodes: two pods,
 * a core between them (5), and the pods' 16 core up-links carry half the
 * hosts: full bisection. 256 DGX H100-like servers: k = 64, 4 leaves per
 * rail a pod of 128 servers, 2 pods, 32 spines each, 1,024 cores.
 */
static void test_rail3(void)
{
	static const struct { const char *cmd; long hosts, switches, cables; int k, diam, bis; } cs[] = {
		{ "rail --levels 3 --radix 8 --nodes 8 --gpus 2", 16, 16 + 4 + 4, 16 + 16 + 16, 8, 3, 8 },
		{ "rail --levels 3 --radix 8 --nodes 16 --gpus 2", 32, 16 + 8 + 8, 32 + 32 + 32, 8, 5, 16 },
		{ "rail --levels 3 --radix 8 --nodes 10 --gpus 2", 20, 16 + 8 + 6, 20 + 24 + 32, 8, 5, 0 },
		{ "rail --levels 3 --servers 256 --server dgx-h100 --rate 4xHDR", 2048, 1024 + 64 + 64,
		  2048 + 2048 + 2048, 64, 0, 0 },
	};

	for (unsigned i = 0; i < SIM_ARRAY_SIZE(cs); i++) {
		struct expect e = { cs[i].hosts, cs[i].switches, cs[i].cables, cs[i].k, cs[i].diam,
				    false, cs[i].bis };
		struct net n;

		gen(cs[i].cmd, &n);
		check_shape(cs[i].cmd, &n, &e);
		net_free(&n);
	}
	/* pod spine j has one cable to each of its pod's leaves and to its
	 * 4 cores; core j*4+i one to spine j of each pod; a host's leaf is on
	 * its rail */
	{
		struct net n;
		int sp, co, h;

		gen("rail --levels 3 --radix 8 --nodes 16 --gpus 2", &n);
		sp = by_desc(&n, "pod1_spine2");
		CU_ASSERT_EQUAL(degree(&n, sp), 4 + 4);
		co = by_desc(&n, "core9");	/* j = 2, i = 1 */
		CU_ASSERT_EQUAL(degree(&n, co), 2);
		CU_ASSERT_EQUAL(n.nodes[co].ports[2].remote_node, sp);
		h = by_desc(&n, "n13g1");	/* node 13: leaf 3 of rail 1, in pod 1 */
		CU_ASSERT_STRING_EQUAL(n.nodes[n.nodes[h].ports[1].remote_node].desc, "rail1_3");
		CU_ASSERT_EQUAL(n.nodes[h].ports[1].remote_port, 13 % 4 + 1);
		net_free(&n);
	}
}

/* ---- files: round trip, determinism, rates, examples ------------------- */

static const char *const small_cmds[] = {
	"fattree --radix 8",
	"fattree --levels 3 --radix 4",
	"rail --levels 3 --radix 8 --nodes 10 --gpus 2",
	"fattree --levels 3 --radix 8 --oversub 3:1 --pods 3",
	"fattree --radix 12 --oversub 2:1 --leaves 8",
	"leafspine --leaves 4 --spines 3 --hosts 5 --links-per-spine 2 --radix 12",
	"torus --dims 4x4",
	"torus --dims 2x3x2 --hosts 2",
	"mesh --dims 4x4",
	"mesh --dims 5 --hosts 3 --radix 8",
	"dragonfly --groups 4 --routers 4 --hosts 2 --global 3",
	"dragonfly --groups 9 --routers 4",
	"rail --nodes 8 --gpus 8",
	"rail --nodes 20 --gpus 4 --radix 16",
	"fattree2 --leaves 2 --spines 1 --hosts 3",
};

static void test_roundtrip(void)
{
	for (unsigned i = 0; i < SIM_ARRAY_SIZE(small_cmds); i++)
		roundtrip(small_cmds[i]);
}

static void test_determinism(void)
{
	for (unsigned i = 0; i < SIM_ARRAY_SIZE(small_cmds); i++) {
		char *a = gen_text(small_cmds[i]), *b = gen_text(small_cmds[i]);

		CU_ASSERT_STRING_EQUAL(a, b);
		/* the header's command makes the same file again */
		if (strncmp(small_cmds[i], "fattree2", 8)) {
			char cmd[512], *s = strstr(a, "# ibfab topo gen "), *c;

			CU_ASSERT_FATAL(s != NULL);
			snprintf(cmd, sizeof(cmd), "%s", s + strlen("# ibfab topo gen "));
			*strchr(cmd, '\n') = 0;
			c = gen_text(cmd);
			CU_ASSERT_STRING_EQUAL(a, c);
			free(c);
		}
		free(a);
		free(b);
	}
}

/* Any width x speed goes on every cable; GUIDs and ids are stable. */
static void test_rates_and_ids(void)
{
	static const struct { const char *rate; int lanes, speed; } rs[] = {
		{ "1xSDR", 1, LINK_SDR }, { "12xNDR", 12, LINK_NDR }, { "4xEDR", 4, LINK_EDR },
	};
	struct net n;
	char cmd[96];

	for (unsigned i = 0; i < SIM_ARRAY_SIZE(rs); i++) {
		snprintf(cmd, sizeof(cmd), "torus --dims 3x3 --rate %s", rs[i].rate);
		gen(cmd, &n);
		check_nodes(&n, 0, rs[i].lanes, rs[i].speed);
		net_free(&n);
	}
	gen("dragonfly --groups 3 --routers 2 --rate none", &n);
	check_nodes(&n, 0, 0, LINK_SPEED_NONE);
	net_free(&n);
	/* switch i: 0x200000 + i, host i: 0x100000 + 2i, in file order */
	gen("fattree --levels 3 --radix 4", &n);
	CU_ASSERT_EQUAL(n.nodes[0].guid, 0x200000);
	CU_ASSERT_STRING_EQUAL(n.nodes[0].id, "S-0000000000200000");
	CU_ASSERT_STRING_EQUAL(n.nodes[0].desc, "core0");
	CU_ASSERT_EQUAL(n.nodes[by_desc(&n, "h3")].guid, 0x100006);
	CU_ASSERT_EQUAL(n.nodes[by_desc(&n, "h3")].ports[1].guid, 0x100007);
	CU_ASSERT_STRING_EQUAL(n.nodes[by_desc(&n, "leaf0")].id, "S-000000000020000c");
	/* LIDs: switches first, in order */
	CU_ASSERT_EQUAL(n.nodes[by_desc(&n, "core0")].lid, 1);
	CU_ASSERT_EQUAL(net_lid_of(&n, by_desc(&n, "h0"), 1), 21);
	net_free(&n);
}

/*
 * topologies/examples/README.md: every `ibfab topo gen ... > FILE` line
 * makes FILE byte for byte, every expected file has such a line, and every
 * table row `| `FILE` | shape | hosts | switches | cables | bisection |`
 * matches the file.
 */
static void test_shipped_examples(void)
{
	static const char *const must[] = {
		"fattree-16.topo", "fattree-128.topo", "fattree-k8-3level.topo",
		"fattree-64-2to1.topo", "torus-4x4.topo", "mesh-4x4.topo",
		"dragonfly-4x4x2.topo", "rail-8x8.topo",
	};
	bool made[SIM_ARRAY_SIZE(must)] = { false }, rowed[SIM_ARRAY_SIZE(must)] = { false };
	char path[512], *readme, *line, *save = NULL;
	int commands = 0, rows = 0;

	readme = read_file(test_src_path("topologies/examples/README.md", path,
					 sizeof(path)));
	CU_ASSERT_FATAL(readme != NULL);
	for (line = strtok_r(readme, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "ibfab topo gen ", 15)) {
			char cmd[512], *gt, file[128], rel[200], *want, *got;

			snprintf(cmd, sizeof(cmd), "%s", line + 15);
			gt = strstr(cmd, " > ");
			CU_ASSERT_FATAL(gt != NULL);
			*gt = 0;
			snprintf(file, sizeof(file), "%s", gt + 3);
			snprintf(rel, sizeof(rel), "topologies/examples/%s", file);
			want = read_file(test_src_path(rel, path, sizeof(path)));
			if (!want)
				fprintf(stderr, "\n  README names %s, which is missing\n", rel);
			CU_ASSERT_FATAL(want != NULL);
			got = gen_text(cmd);
			if (strcmp(want, got))
				fprintf(stderr, "\n  %s differs from: ibfab topo gen %s\n",
					rel, cmd);
			CU_ASSERT_STRING_EQUAL(want, got);
			for (unsigned k = 0; k < SIM_ARRAY_SIZE(must); k++)
				made[k] |= !strcmp(file, must[k]);
			commands++;
			free(want);
			free(got);
		} else if (!strncmp(line, "| `", 3)) {
			char file[128], rel[200];
			long hosts, sw, cables, bis;
			const char *f = line;
			struct sim_diag d;
			struct net n;

			/* columns: file, shape, hosts, switches, cables, bisection */
			CU_ASSERT_FATAL(sscanf(line, "| `%127[^`]`", file) == 1);
			for (int col = 0; col < 2; col++) {
				f = strchr(f + 1, '|');
				CU_ASSERT_FATAL(f != NULL);
			}
			CU_ASSERT_FATAL(sscanf(f, "| %ld | %ld | %ld | %ld |", &hosts,
					       &sw, &cables, &bis) == 4);
			snprintf(rel, sizeof(rel), "topologies/examples/%s", file);
			if (topo_load(test_src_path(rel, path, sizeof(path)), &n, &d)) {
				report(rel, &d);
				CU_FAIL_FATAL("a README row names a file that does not load");
			}
			if (net_nhosts(&n) != hosts || net_count(&n, NET_SWITCH) != sw ||
			    net_nlinks(&n) != cables || bisection(&n) != bis)
				fprintf(stderr, "\n  README row for %s: file has %d hosts, %d switches, %d cables, bisection %d\n",
					file, net_nhosts(&n), net_count(&n, NET_SWITCH),
					net_nlinks(&n), bisection(&n));
			CU_ASSERT_EQUAL(net_nhosts(&n), hosts);
			CU_ASSERT_EQUAL(net_count(&n, NET_SWITCH), sw);
			CU_ASSERT_EQUAL(net_nlinks(&n), cables);
			CU_ASSERT_EQUAL(bisection(&n), bis);
			for (unsigned k = 0; k < SIM_ARRAY_SIZE(must); k++)
				rowed[k] |= !strcmp(file, must[k]);
			rows++;
			net_free(&n);
		}
	}
	for (unsigned k = 0; k < SIM_ARRAY_SIZE(must); k++) {
		if (!made[k] || !rowed[k])
			fprintf(stderr, "\n  README: no command or no table row for %s\n",
				must[k]);
		CU_ASSERT(made[k] && rowed[k]);
	}
	CU_ASSERT(commands >= (int)SIM_ARRAY_SIZE(must));
	CU_ASSERT(rows >= (int)SIM_ARRAY_SIZE(must));
	free(readme);
}

/* ---- bad options ------------------------------------------------------- */

static const struct { const char *cmd, *msg, *msg2; } bad[] = {
	{ "", "missing the kind", NULL },
	{ "hypercube --dims 4", "unknown topology 'hypercube'", "known: fattree" },
	{ "torus --dims 4x4 --foo 1", "unknown option '--foo'", "--dims" },
	{ "torus --dims", "--dims needs a value", NULL },
	{ "fattree --radix", "--radix needs a value", NULL },
	{ "fattree --radix 0", "--radix wants a whole number from 1", "got '0'" },
	{ "leafspine --leaves -3 --spines 2 --hosts 4", "--leaves wants a whole number", "'-3'" },
	{ "torus --dims 4x4 --hosts 2x", "--hosts wants a whole number", NULL },
	{ "fattree --radix 8 --hosts 1000000", "from 1 to 100000", NULL },
	{ "fattree --levels 4 --radix 8", "--levels must be 2 or 3", NULL },
	{ "fattree --levels 3", "--radix is required", NULL },
	{ "fattree --levels 3 --radix 1", "--radix 1 is too small", NULL },
	{ "fattree --radix 8 --hosts 6", "a leaf needs 12 ports", "more than --radix 8" },
	{ "fattree --radix 300", "more than a switch can have", "254" },
	{ "fattree --radix 8 --oversub 2", "--oversub wants", "2:1" },
	{ "fattree --radix 8 --oversub 0:1", "--oversub wants", NULL },
	{ "fattree --radix 8 --oversub 2:1 --hosts 3", "cannot be split 2:1", NULL },
	{ "fattree --radix 8 --spines 3", "--spines 3 must divide the 4 up-links", NULL },
	{ "fattree --radix 8 --leaves 9", "at most 8 leaves", NULL },
	{ "fattree --radix 8 --pods 2", "--pods is for --levels 3", NULL },
	{ "fattree --levels 3 --radix 8 --spines 2", "--spines is for --levels 2", NULL },
	{ "fattree --levels 3 --radix 8 --pods 9", "9 pods need cores with 9 ports", NULL },
	{ "fattree --levels 3 --radix 8 --leaves 5", "at most 4 leaves per pod", NULL },
	{ "fattree --levels 3 --radix 8 --pods 1", "one pod has no use for cores", NULL },
	{ "fattree --radix 8 --rate 4xFOO", "--rate wants width x speed", "4xFOO" },
	{ "leafspine --leaves 300 --spines 1 --hosts 1", "a spine needs 300 ports", "254" },
	{ "leafspine --leaves 4 --spines 2", "--leaves, --spines and --hosts are required", NULL },
	{ "leafspine --leaves 4 --spines 2 --hosts 8 --radix 8", "a leaf needs 10 ports", NULL },
	{ "torus --hosts 2", "--dims is required", NULL },
	{ "torus --dims 4x1", "dimension 2 has size 1", "at least 2" },
	{ "torus --dims 4x4x4x4", "--dims wants 1 to 3 sizes", NULL },
	{ "mesh --dims 4xx4", "--dims wants", NULL },
	{ "mesh --dims 0x4", "--dims wants", NULL },
	{ "torus --dims 5000x5000", "nodes a fabric may have", NULL },
	{ "mesh --dims 4x4 --hosts 8 --radix 8", "a switch needs 12 ports", "--radix 8" },
	{ "torus --dims 4x4 --leaves 2", "--leaves is not an option of torus", NULL },
	{ "torus --dims 4x4 --hosts 2 --hosts 3", "--hosts is given twice", NULL },
	{ "dragonfly --routers 4", "--groups and --routers are required", NULL },
	{ "dragonfly --groups 1 --routers 4", "--groups must be at least 2", NULL },
	{ "dragonfly --groups 10 --routers 2 --global 1", "10 groups need at least 9 global ports", "at most 3 groups" },
	{ "dragonfly --groups 4 --routers 4 --hosts 2 --global 3 --radix 6", "a router needs 8 ports", NULL },
	{ "rail --nodes 8", "--nodes and --gpus are required", NULL },
	{ "rail --nodes 200 --gpus 8", "a rail leaf needs 400 ports", "give --radix" },
	{ "rail --nodes 64 --gpus 8 --radix 8", "a spine needs 128 ports", "--levels 3" },
	{ "rail --levels 3 --nodes 8 --gpus 8", "--levels 3 needs --radix", NULL },
	{ "rail --levels 3 --nodes 8 --gpus 8 --radix 8", "cannot take one leaf of each of 8 rails", NULL },
	{ "rail --levels 3 --nodes 300 --gpus 2 --radix 8", "need 38 pods of 8", "at most 8" },
	{ "rail --levels 3 --nodes 8 --gpus 2 --radix 8 --spines 2", "--spines is for 2 levels", NULL },
	{ "rail --levels 4 --nodes 8 --gpus 2 --radix 8", "--levels must be 2 or 3", NULL },
	{ "rail --nodes 8 --gpus 8 --radix 1", "--radix 1 is too small", NULL },
	{ "rail --nodes 8 --gpus 8 --dims 2", "--dims is not an option of rail", NULL },
	{ "fattree2 --leaves 0 --spines 1 --hosts 1", "--leaves wants a whole number from 1", NULL },
	{ "fattree2 --leaves 2 --spines 0 --hosts 1", "2 leaves need at least one spine", NULL },
};

static void test_bad_options(void)
{
	for (unsigned i = 0; i < SIM_ARRAY_SIZE(bad); i++) {
		char buf[256], *argv[MAX_ARGS], *text = NULL;
		struct topo_gen_params p;
		struct sim_diag d;
		int argc, rc;

		snprintf(buf, sizeof(buf), "%s", bad[i].cmd);
		argc = split(buf, argv);
		rc = topo_gen_parse(&p, argc, argv, &d);
		if (!rc) {
			text = topo_gen_str(&p, &d);
			rc = text ? 0 : -1;
		}
		if (!rc || !strstr(d.msg, bad[i].msg) ||
		    (bad[i].msg2 && !strstr(d.msg, bad[i].msg2)))
			fprintf(stderr, "\n  '%s': %s; expected a message with '%s'%s%s\n",
				bad[i].cmd, rc ? d.msg : "accepted", bad[i].msg,
				bad[i].msg2 ? " and " : "", bad[i].msg2 ? bad[i].msg2 : "");
		CU_ASSERT_EQUAL(rc, -1);
		CU_ASSERT_PTR_NULL(text);
		CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, bad[i].msg));
		if (bad[i].msg2)
			CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, bad[i].msg2));
		free(text);
	}
}

/*
 * Random option sets (a fixed xorshift seed, so a failure replays): each is
 * either refused with a message or makes a file that loads back. Values are
 * small or invalid so the accepted fabrics stay small.
 */
static void test_random_options(void)
{
	static const char *const kinds_[] = {
		"fattree", "leafspine", "torus", "mesh", "dragonfly", "rail", "fattree2", "ring",
	};
	static const char *const names[] = {
		"--levels", "--radix", "--dims", "--groups", "--routers", "--global",
		"--nodes", "--gpus", "--pods", "--leaves", "--spines", "--hosts",
		"--links-per-spine", "--oversub", "--rate", "--bogus", "-h2",
	};
	static const char *const vals[] = {
		"0", "1", "2", "3", "4", "6", "8", "12", "-1", "", "255", "100001",
		"4x4", "2x3x2", "2:1", "0:1", "3:", "4xHDR", "none", "x", "07", "1e3",
	};
	/* the options each kind needs, in kinds_ order */
	static const char *const bases[] = {
		"--radix 8", "--leaves 3 --spines 2 --hosts 2", "--dims 3x2",
		"--dims 2x2x3", "--groups 3 --routers 2", "--nodes 3 --gpus 2",
		"--leaves 2 --spines 1 --hosts 3", "--dims 4",
	};
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	int accepted = 0, refused = 0;

	for (int it = 0; it < 3000; it++) {
		char *argv[MAX_ARGS], *text;
		struct topo_gen_params p;
		struct sim_diag d;
		int argc = 0, nopt, kind, nowned = 0;
		char *owned[1];

#define RND(n) (x ^= x << 13, x ^= x >> 7, x ^= x << 17, (int)(x % (n)))
		kind = RND(SIM_ARRAY_SIZE(kinds_));
		argv[argc++] = (char *)kinds_[kind];
		/* mostly with what the kind needs, so that many get through */
		if (RND(4)) {
			char *base = strdup(bases[kind]), *save = NULL;

			CU_ASSERT_FATAL(base != NULL);
			owned[nowned++] = base;
			for (char *t = strtok_r(base, " ", &save); t;
			     t = strtok_r(NULL, " ", &save))
				argv[argc++] = t;
		}
		nopt = RND(4);
		for (int k = 0; k < nopt; k++) {
			argv[argc++] = (char *)names[RND(SIM_ARRAY_SIZE(names))];
			if (RND(8))
				argv[argc++] = (char *)vals[RND(SIM_ARRAY_SIZE(vals))];
		}
#undef RND
		text = NULL;
		if (topo_gen_parse(&p, argc, argv, &d) || !(text = topo_gen_str(&p, &d))) {
			CU_ASSERT(d.msg[0] != 0);
			refused++;
		} else {
			struct net n;

			CU_ASSERT_EQUAL(topo_load_string(text, "random", &n, &d), 0);
			CU_ASSERT(net_nhosts(&n) >= 1);
			net_free(&n);
			accepted++;
		}
		free(text);
		while (nowned)
			free(owned[--nowned]);
	}
	/* the pool makes both kinds of outcome */
	if (accepted < 300 || refused < 300)
		fprintf(stderr, "\n  %d accepted, %d refused\n", accepted, refused);
	CU_ASSERT(accepted >= 300);
	CU_ASSERT(refused >= 300);
}

/* Library callers who fill the struct themselves get the same checks. */
static void test_bad_params(void)
{
	struct topo_gen_params p;
	struct sim_diag d;
	struct net n;

	topo_gen_params_init(&p, TOPO_GEN_TORUS);
	p.ndims = 2;
	p.dims[0] = p.dims[1] = 4;
	CU_ASSERT_EQUAL(topo_gen_net(&n, &p, &d), 0);
	CU_ASSERT_EQUAL(net_nhosts(&n), 16);
	net_free(&n);
	p.hosts = 0;
	CU_ASSERT_EQUAL(topo_gen_net(&n, &p, &d), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "--hosts must be a whole number from 1"));
	CU_ASSERT_EQUAL(n.nnodes, 0);
	net_free(&n);
	p.hosts = -7;
	CU_ASSERT_EQUAL(topo_gen_net(&n, &p, &d), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "got -7"));
	p.hosts = TOPO_GEN_UNSET;
	p.dims[1] = -2;
	CU_ASSERT_EQUAL(topo_gen_net(&n, &p, &d), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "--dims size 2 is -2"));
	p.dims[1] = 4;
	p.leaves = 3;
	CU_ASSERT_EQUAL(topo_gen_net(&n, &p, &d), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "--leaves is not an option of torus"));
	p.leaves = TOPO_GEN_UNSET;
	p.rate = "fast";
	CU_ASSERT_PTR_NULL(topo_gen_str(&p, &d));
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "bad rate 'fast'"));
	p.rate = NULL;
	p.kind = TOPO_GEN_KIND_COUNT;
	CU_ASSERT_EQUAL(topo_gen_net(&n, &p, &d), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "unknown topology kind"));
	topo_gen_params_init(&p, TOPO_GEN_FATTREE);
	p.radix = 8;
	p.over_hosts = 2;	/* half a ratio */
	CU_ASSERT_EQUAL(topo_gen_net(&n, &p, &d), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "--oversub wants two whole numbers"));
	/* names round trip */
	for (int k = 0; k < TOPO_GEN_KIND_COUNT; k++)
		CU_ASSERT_EQUAL(topo_gen_kind_parse(topo_gen_kind_name(k)), k);
	CU_ASSERT_EQUAL(topo_gen_kind_parse("Torus"), -1);
}

/* ---- the command ------------------------------------------------------- */

/* Run ibfab with `args`; exit status, stdout and stderr into the buffers. */
static int run_ibfab(const char *args, char **out, char **err)
{
	const char *bin = getenv("IBFAB_BIN");
	char cmd[1024], po[256], pe[256];
	int st;

	snprintf(po, sizeof(po), "%s", test_tmpfile("gen.out", ""));
	snprintf(pe, sizeof(pe), "%s", test_tmpfile("gen.err", ""));
	snprintf(cmd, sizeof(cmd), "'%s' %s >'%s' 2>'%s'", bin, args, po, pe);
	st = system(cmd);
	*out = read_file(po);
	*err = read_file(pe);
	remove(po);
	remove(pe);
	CU_ASSERT_FATAL(*out && *err && st != -1 && WIFEXITED(st));
	return WEXITSTATUS(st);
}

static void test_cli(void)
{
	static const char *const words[] = {
		"fattree", "leafspine", "torus", "mesh", "dragonfly", "rail", "fattree2",
		"--radix", "--levels", "--oversub", "--hosts", "--leaves", "--spines",
		"--pods", "--links-per-spine", "--dims", "--groups", "--routers",
		"--global", "--nodes", "--gpus", "--rate",
		"e.g. ibfab topo gen fattree", "e.g. ibfab topo gen leafspine",
		"e.g. ibfab topo gen torus", "mesh --dims", "e.g. ibfab topo gen dragonfly",
		"e.g. ibfab topo gen rail", "e.g. ibfab topo gen fattree2",
	};
	char *out, *err, *want;

	if (!getenv("IBFAB_BIN")) {
		fprintf(stderr, "\n  IBFAB_BIN is not set (ctest sets it): command checks skipped\n");
		return;
	}
	CU_ASSERT_EQUAL(run_ibfab("topo gen --help", &out, &err), 0);
	for (unsigned i = 0; i < SIM_ARRAY_SIZE(words); i++) {
		if (!strstr(out, words[i]))
			fprintf(stderr, "\n  help does not mention '%s'\n", words[i]);
		CU_ASSERT_PTR_NOT_NULL(strstr(out, words[i]));
	}
	/* every example in the help works */
	{
		int examples = 0;

		for (char *e = strstr(out, "ibfab topo gen "); e;
		     e = strstr(e + 1, "ibfab topo gen ")) {
			char cmd[256], *gt, *t;
			size_t len = strcspn(e, "\n");

			if (!strncmp(e + 15, "KIND", 4))
				continue;	/* the usage line */
			snprintf(cmd, sizeof(cmd), "%.*s", (int)len - 15, e + 15);
			gt = strstr(cmd, " >");
			if (gt)
				*gt = 0;
			t = gen_text(cmd);
			free(t);
			examples++;
		}
		CU_ASSERT(examples >= 7);
	}
	free(out);
	free(err);
	CU_ASSERT_EQUAL(run_ibfab("topo gen torus --help", &out, &err), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "usage: ibfab topo gen"));
	free(out);
	free(err);
	/* a good command prints the library's text, and nothing on stderr */
	CU_ASSERT_EQUAL(run_ibfab("topo gen dragonfly --groups 3 --routers 2 --rate=4xNDR",
				  &out, &err), 0);
	want = gen_text("dragonfly --groups 3 --routers 2 --rate 4xNDR");
	CU_ASSERT_STRING_EQUAL(out, want);
	/* NDR: the text rate, no e= code (Debian's ibsim refuses e=8) */
	CU_ASSERT_PTR_NOT_NULL(strstr(out, " 4xNDR s=4 w=2\n"));
	CU_ASSERT_PTR_NULL(strstr(out, "e=8"));
	CU_ASSERT_STRING_EQUAL(err, "");
	free(want);
	free(out);
	free(err);
	CU_ASSERT_EQUAL(run_ibfab("topo gen torus --dims 4x4", &out, &err), 0);
	want = gen_text("torus --dims 4x4");
	CU_ASSERT_STRING_EQUAL(out, want);
	free(want);
	free(out);
	free(err);
	/* usage errors: status 2, nothing on stdout, the reason on stderr */
	for (unsigned i = 0; i < SIM_ARRAY_SIZE(bad); i++) {
		char args[300];

		if (!*bad[i].cmd)
			continue;
		snprintf(args, sizeof(args), "topo gen %s", bad[i].cmd);
		CU_ASSERT_EQUAL(run_ibfab(args, &out, &err), 2);
		CU_ASSERT_STRING_EQUAL(out, "");
		CU_ASSERT_PTR_NOT_NULL(strstr(err, bad[i].msg));
		CU_ASSERT(!strncmp(err, "ibfab topo gen: ", 16));
		free(out);
		free(err);
	}
	CU_ASSERT_EQUAL(run_ibfab("topo gen", &out, &err), 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "missing the kind"));
	free(out);
	free(err);
}

static const struct test_case tests[] = {
	{ "fattree counts, degrees, diameter, bisection", test_fattree_counts },
	{ "fattree k^2/2 and k^3/4", test_fattree_full },
	{ "leafspine = fattree2 cabling", test_leafspine },
	{ "fattree2 unchanged", test_fattree2_unchanged },
	{ "torus and mesh", test_torus_mesh },
	{ "dragonfly", test_dragonfly },
	{ "rail-optimised", test_rail },
	{ "rail-optimised, 3 levels", test_rail3 },
	{ "round trip", test_roundtrip },
	{ "determinism and header command", test_determinism },
	{ "rates, GUIDs, LIDs", test_rates_and_ids },
	{ "shipped examples = README commands", test_shipped_examples },
	{ "bad options refused", test_bad_options },
	{ "bad params refused", test_bad_params },
	{ "random option sets", test_random_options },
	{ "ibfab topo gen", test_cli },
	{ NULL, NULL },
};

TEST_MAIN("gen", tests)
