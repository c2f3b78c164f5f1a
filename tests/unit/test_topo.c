/* SPDX-License-Identifier: MIT */
/*
 * test_topo.c - topology files: the ibsim examples and a real ibnetdiscover
 * dump load with the cabling their authors wrote; write -> read round trips;
 * every malformed input is refused with the right "file:line:" and message;
 * truncated and mutated files never crash the parser.
 *
 * The ibsim examples are read from /usr/share/doc/ibsim-utils/net-examples
 * (Debian ibsim-utils) or $IBSIM_EXAMPLES; the expected counts below were
 * read off those files by hand.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/net/net.h"
#include "tests/unit/test_main.h"
#include "topologies/topo.h"

static const char *example(const char *name, char *buf, unsigned len)
{
	const char *dir = getenv("IBSIM_EXAMPLES");

	snprintf(buf, len, "%s/%s",
		 dir ? dir : "/usr/share/doc/ibsim-utils/net-examples", name);
	return buf;
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

/* Drop the rate column (the last field of every line). */
static char *strip_rates(char *s)
{
	char *w = s, *line = s;

	for (char *r = s; *r; r++) {
		if (*r != '\n')
			continue;
		char *sp = r;

		while (sp > line && sp[-1] != ' ')
			sp--;
		if (sp > line)
			sp--;		/* the space itself */
		memmove(w, line, (size_t)(sp - line));
		w += sp - line;
		*w++ = '\n';
		line = r + 1;
	}
	*w = 0;
	return s;
}

/* Load a file and fail the test (with the diagnostic) if it does not load. */
static int must_load(const char *path, struct net *n)
{
	struct sim_diag d;
	char msg[1200];
	int rc = topo_load(path, n, &d);

	if (rc) {
		sim_diag_format(&d, msg, sizeof(msg));
		fprintf(stderr, "\n  %s\n", msg);
	}
	CU_ASSERT_FATAL(rc == 0);
	return rc;
}

static int node_of(const struct net *n, const char *desc)
{
	int i = net_find_host(n, desc);

	CU_ASSERT_FATAL(i >= 0);
	return i;
}

/* (a, pa) is cabled to (b, pb), by descriptions. */
static void check_cable(const struct net *n, const char *a, int pa,
			const char *b, int pb)
{
	int x = node_of(n, a), y = node_of(n, b);

	CU_ASSERT_EQUAL(n->nodes[x].ports[pa].remote_node, y);
	CU_ASSERT_EQUAL(n->nodes[x].ports[pa].remote_port, pb);
	CU_ASSERT_EQUAL(n->nodes[y].ports[pb].remote_node, x);
	CU_ASSERT_EQUAL(n->nodes[y].ports[pb].remote_port, pa);
}

/* ---- the ibsim examples ------------------------------------------------ */

struct ex {
	const char *file;
	int switches, cas, links;
};

static const struct ex examples[] = {
	{ "net", 2, 2, 4 },
	{ "net.1", 1, 2, 2 },
	{ "net.2sw2path", 2, 2, 4 },
	{ "net.2sw2path4hca", 2, 4, 6 },
	{ "net.2sw2path4hca2port", 2, 2, 6 },
};

static void test_ibsim_examples(void)
{
	char path[512];

	for (unsigned i = 0; i < SIM_ARRAY_SIZE(examples); i++) {
		const struct ex *e = &examples[i];
		struct net n;

		if (access(example(e->file, path, sizeof(path)), R_OK)) {
			fprintf(stderr, "\n  %s missing: install ibsim-utils or set IBSIM_EXAMPLES\n",
				path);
			CU_FAIL_FATAL("ibsim example missing");
		}
		must_load(path, &n);
		CU_ASSERT_EQUAL(n.nnodes, e->switches + e->cas);
		CU_ASSERT_EQUAL(net_count(&n, NET_SWITCH), e->switches);
		CU_ASSERT_EQUAL(net_count(&n, NET_CA), e->cas);
		CU_ASSERT_EQUAL(net_nlinks(&n), e->links);
		/* ibsim files state no rates: nothing may be invented. */
		for (int k = 0; k < n.nnodes; k++)
			for (int p = 1; p <= n.nodes[k].nports; p++) {
				CU_ASSERT_EQUAL(n.nodes[k].ports[p].lanes, 0);
				CU_ASSERT_EQUAL(n.nodes[k].ports[p].speed, LINK_SPEED_NONE);
			}
		/* Descriptions default to the ids; the first node is the first in the file. */
		CU_ASSERT_STRING_EQUAL(n.nodes[0].desc, "Switch1");
		CU_ASSERT_EQUAL(n.nodes[0].nports, 8);
		net_free(&n);
	}

	/* Specific cables, including the odd ones. */
	struct net n;

	must_load(example("net", path, sizeof(path)), &n);
	check_cable(&n, "Switch1", 2, "Hca2", 2);	/* a CA's second port */
	check_cable(&n, "Switch1", 4, "Switch2", 4);
	CU_ASSERT_EQUAL(net_first_port(&n, node_of(&n, "Hca2")), 2);
	net_free(&n);
	must_load(example("net.1", path, sizeof(path)), &n);
	check_cable(&n, "Hca2", 1, "Switch1", 4);
	net_free(&n);
	must_load(example("net.2sw2path4hca2port", path, sizeof(path)), &n);
	check_cable(&n, "Hca1", 2, "Switch1", 2);
	check_cable(&n, "Hca2", 1, "Switch2", 1);
	net_free(&n);
}

/* ---- a real ibnetdiscover dump ----------------------------------------- */

static void test_ibnd_dump(void)
{
	char path[512], expath[512];
	struct sim_diag d;
	struct net n, ex;
	char *a, *b;

	must_load(test_src_path("tests/golden/ibnd-2sw2path4hca.topo", path,
				sizeof(path)), &n);
	CU_ASSERT_EQUAL(net_count(&n, NET_SWITCH), 2);
	CU_ASSERT_EQUAL(net_count(&n, NET_CA), 4);
	CU_ASSERT_EQUAL(net_nlinks(&n), 6);
	/* Ids are GUIDs, descriptions come from the comments. */
	CU_ASSERT_EQUAL(net_find(&n, "S-0000000000200000"), node_of(&n, "Switch1"));
	CU_ASSERT_EQUAL(n.nodes[node_of(&n, "Switch1")].guid, 0x200000);
	CU_ASSERT_EQUAL(n.nodes[node_of(&n, "Hca1")].ports[1].guid, 0x100001);
	for (int k = 0; k < n.nnodes; k++)
		for (int p = 1; p <= n.nodes[k].nports; p++) {
			if (n.nodes[k].ports[p].remote_node < 0)
				continue;
			CU_ASSERT_EQUAL(n.nodes[k].ports[p].lanes, 4);
			CU_ASSERT_EQUAL(n.nodes[k].ports[p].speed, LINK_SDR);
		}
	/* OpenSM's LIDs are complete and unique: they are kept. */
	CU_ASSERT_EQUAL_FATAL(net_assign_lids(&n, &d), 0);
	CU_ASSERT_EQUAL(n.max_lid, 6);
	CU_ASSERT_EQUAL(n.nodes[node_of(&n, "Switch1")].lid, 1);
	CU_ASSERT_EQUAL(n.nodes[node_of(&n, "Switch2")].lid, 3);
	CU_ASSERT_EQUAL(net_lid_of(&n, node_of(&n, "Hca1"), 1), 2);
	CU_ASSERT_EQUAL(net_lid_of(&n, node_of(&n, "Hca4"), 1), 6);
	CU_ASSERT_EQUAL(n.lid_node[5], node_of(&n, "Hca3"));
	CU_ASSERT_EQUAL(n.lid_port[5], 1);

	/* Same cabling as the ibsim file it was discovered from (which states
	 * no rates: ibsim's default 4xSDR is what ibnetdiscover saw). */
	must_load(example("net.2sw2path4hca", expath, sizeof(expath)), &ex);
	a = strip_rates(links_of(&n));
	b = strip_rates(links_of(&ex));
	CU_ASSERT_STRING_EQUAL(a, b);
	free(a);
	free(b);
	net_free(&ex);
	net_free(&n);
}

/* `ibnetdiscover -f` of ibsim running a file with w=/s=/e= options. */
static const char ibnd_full[] =
	"#\n# Topology file: generated by ibnetdiscover -f (infiniband-diags 44.0) over ibsim 0.10\n#\n"
	"\n"
	"sysimgguid=0x200001\n"
	"switchguid=0x200001(200001)\n"
	"Switch\t8 \"S-0000000000200001\"\t\t# \"Switch2\" base port 0 lid 0 lmc 0\n"
	"[1]\t\"H-0000000000100003\"[1](100004) \t\t# \"Hca2\" lid 0 4xSDR s=1 w=2 v=4\n"
	"[3]\t\"S-0000000000200000\"[3]\t\t# \"Switch1\" lid 0 12xQDR s=4 w=8 v=4\n"
	"[5]\t\"S-0000000000200000\"[5]\t\t# \"Switch1\" lid 0 4xEDR s=2 w=2 v=4\n"
	"[6]\t\"S-0000000000200000\"[6]\t\t# \"Switch1\" lid 0 4xHDR s=1 w=2 v=4\n"
	"\n"
	"sysimgguid=0x200000\n"
	"switchguid=0x200000(200000)\n"
	"Switch\t8 \"S-0000000000200000\"\t\t# \"Switch1\" base port 0 lid 0 lmc 0\n"
	"[1]\t\"H-0000000000100000\"[1](100001) \t\t# \"Hca1\" lid 0 12xSDR s=1 w=8 v=4\n"
	"[3]\t\"S-0000000000200001\"[3]\t\t# \"Switch2\" lid 0 12xQDR s=4 w=8 v=4\n"
	"[5]\t\"S-0000000000200001\"[5]\t\t# \"Switch2\" lid 0 4xEDR s=2 w=2 v=4\n"
	"[6]\t\"S-0000000000200001\"[6]\t\t# \"Switch2\" lid 0 4xHDR s=1 w=2 v=4\n"
	"\n"
	"sysimgguid=0x100003\n"
	"caguid=0x100003\n"
	"Ca\t2 \"H-0000000000100003\"\t\t# \"Hca2\"\n"
	"[1](100004) \t\"S-0000000000200001\"[1]\t\t# lid 0 lmc 0 \"Switch2\" lid 0 4xSDR s=1 w=2 v=4\n"
	"\n"
	"sysimgguid=0x100000\n"
	"caguid=0x100000\n"
	"Ca\t2 \"H-0000000000100000\"\t\t# \"Hca1\"\n"
	"[1](100001) \t\"S-0000000000200000\"[1]\t\t# lid 0 lmc 0 \"Switch1\" lid 0 12xSDR s=1 w=8 v=4\n";

static void test_ibnd_full_codes(void)
{
	struct sim_diag d;
	struct net n;
	char *l;

	CU_ASSERT_EQUAL_FATAL(topo_load_string(ibnd_full, "full.topo", &n, &d), 0);
	l = links_of(&n);
	/* The text rate wins over s= (LinkSpeedActive reads SDR on an HDR link). */
	CU_ASSERT_STRING_EQUAL(l,
		"\"Hca1\"[1] <-> \"Switch1\"[1] 12xSDR\n"
		"\"Hca2\"[1] <-> \"Switch2\"[1] 4xSDR\n"
		"\"Switch1\"[3] <-> \"Switch2\"[3] 12xQDR\n"
		"\"Switch1\"[5] <-> \"Switch2\"[5] 4xEDR\n"
		"\"Switch1\"[6] <-> \"Switch2\"[6] 4xHDR\n");
	free(l);
	/* LIDs all 0 (no SM ran): not kept, assigned as OpenSM does: the
	 * SM's node (the file's first, Switch2) first, then by the port GUID
	 * byte-swapped (OpenSM's table keys are in network byte order): the
	 * lowest byte first, Switch1's 0x200000, Hca1's 0x100001, Hca2's
	 * 0x100004. */
	CU_ASSERT_EQUAL_FATAL(net_assign_lids(&n, &d), 0);
	CU_ASSERT_EQUAL(n.nodes[node_of(&n, "Switch2")].lid, 1);
	CU_ASSERT_EQUAL(n.nodes[node_of(&n, "Switch1")].lid, 2);
	CU_ASSERT_EQUAL(net_lid_of(&n, node_of(&n, "Hca1"), 1), 3);
	CU_ASSERT_EQUAL(net_lid_of(&n, node_of(&n, "Hca2"), 1), 4);
	/* in file order for the generators (LIDs assigned once are kept:
	 * load afresh) */
	net_free(&n);
	CU_ASSERT_EQUAL_FATAL(topo_load_string(ibnd_full, "full.topo", &n, &d), 0);
	CU_ASSERT_EQUAL_FATAL(net_assign_lids_file_order(&n, &d), 0);
	CU_ASSERT_EQUAL(n.nodes[node_of(&n, "Switch1")].lid, 2);
	CU_ASSERT_EQUAL(net_lid_of(&n, node_of(&n, "Hca1"), 1), 4);
	/* the SM elsewhere (an option names its node): its port first */
	net_free(&n);
	CU_ASSERT_EQUAL_FATAL(topo_load_string(ibnd_full, "full.topo", &n, &d), 0);
	n.sm_node = node_of(&n, "Hca2");
	CU_ASSERT_EQUAL_FATAL(net_assign_lids(&n, &d), 0);
	CU_ASSERT_EQUAL(net_lid_of(&n, node_of(&n, "Hca2"), 1), 1);
	CU_ASSERT_EQUAL(n.nodes[node_of(&n, "Switch1")].lid, 2);
	CU_ASSERT_EQUAL(net_lid_of(&n, node_of(&n, "Hca1"), 1), 3);	/* 0x..10 01 before */
	CU_ASSERT_EQUAL(n.nodes[node_of(&n, "Switch2")].lid, 4);	/* 0x..20 01 */
	net_free(&n);
}

/* ibsim options without text: w=/s=/e= masks, and the global defaults. */
static void test_ibsim_options(void)
{
	static const char text[] =
		"width=8\n"
		"speed=2\n"
		"Switch 8 \"S1\"\n"
		"[1] \"H1\"[1]\n"			/* globals: 12xDDR */
		"[2] \"H2\"\tw=3 s=7\n"			/* masks: widest 4x, fastest QDR; [rp] = 1 */
		"[3] \"S2\"[3] w=2 s=4 e=6 # e= beats s=\n"
		"do start\n"
		"\n"
		"Switch 8 \"S2\"\n"
		"[3] \"S1\"[3] w=2 e=4\n"
		"\n"
		"Hca 1 \"H1\"\n"
		"[1] \"S1\"[1]\n"
		"Hca 1 \"H2\"\n"
		"[1] \"S1\"[2] w=2 s=4\n";	/* without: 12xDDR from the globals, a clash */
	struct sim_diag d;
	struct net n;
	char *l;
	int rc = topo_load_string(text, "opts.net", &n, &d);

	if (rc)
		fprintf(stderr, "\n  %s:%d:%d: %s\n", d.file, d.line, d.col, d.msg);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	l = links_of(&n);
	CU_ASSERT_STRING_EQUAL(l,
		"\"H1\"[1] <-> \"S1\"[1] 12xDDR\n"
		"\"H2\"[1] <-> \"S1\"[2] 4xQDR\n"
		"\"S1\"[3] <-> \"S2\"[3] 4xHDR\n");
	free(l);
	net_free(&n);
}

/* Header comments without quotes, as ibsim reads them. */
static void test_unquoted_desc(void)
{
	static const char text[] =
		"Switch 4 \"a\" # lid 5 lmc 0\n"		/* no description */
		"[1] \"b\"[1]\n"
		"Switch 4 \"b\" #  my  spine  base port 0 lid 6\n"
		"[1] \"a\"[1]\n"
		"Switch 4 \"c\" #\n";
	struct sim_diag d;
	struct net n;

	CU_ASSERT_EQUAL_FATAL(topo_load_string(text, "u.net", &n, &d), 0);
	CU_ASSERT_STRING_EQUAL(n.nodes[0].desc, "a");
	CU_ASSERT_EQUAL(n.nodes[0].lid, 5);
	CU_ASSERT_STRING_EQUAL(n.nodes[1].desc, "my  spine");
	CU_ASSERT_EQUAL(n.nodes[1].lid, 6);
	CU_ASSERT_STRING_EQUAL(n.nodes[2].desc, "c");
	net_free(&n);
}

/* ---- round trip -------------------------------------------------------- */

static void roundtrip(struct net *n, const char *what)
{
	struct sim_diag d;
	struct net m;
	char *text = NULL, *a, *b;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	CU_ASSERT_FATAL(f != NULL);
	CU_ASSERT_EQUAL_FATAL(net_assign_lids(n, &d), 0);
	CU_ASSERT_EQUAL(topo_write_ibnd(n, f), 0);
	fclose(f);
	if (topo_load_string(text, what, &m, &d)) {
		fprintf(stderr, "\n--- written:\n%s---\n", text);
		char msg[1200];

		sim_diag_format(&d, msg, sizeof(msg));
		fprintf(stderr, "\n  re-reading %s: %s\n", what, msg);
		CU_FAIL_FATAL("round trip does not load");
	}
	a = links_of(n);
	b = links_of(&m);
	CU_ASSERT_STRING_EQUAL(a, b);
	if (strcmp(a, b))
		fprintf(stderr, "\n--- %s: written:\n%s--- links before:\n%s--- after:\n%s---\n",
			what, text, a, b);
	CU_ASSERT_EQUAL(m.nnodes, n->nnodes);
	CU_ASSERT_EQUAL_FATAL(net_assign_lids(&m, &d), 0);
	CU_ASSERT_EQUAL(m.max_lid, n->max_lid);
	for (int i = 0; i < n->nnodes && i < m.nnodes; i++) {
		CU_ASSERT_STRING_EQUAL(m.nodes[i].id, n->nodes[i].id);
		CU_ASSERT_STRING_EQUAL(m.nodes[i].desc, n->nodes[i].desc);
		CU_ASSERT_EQUAL(m.nodes[i].type, n->nodes[i].type);
		CU_ASSERT_EQUAL(m.nodes[i].nports, n->nodes[i].nports);
		CU_ASSERT_EQUAL(m.nodes[i].guid, n->nodes[i].guid);
		for (int p = 0; p <= n->nodes[i].nports; p++)
			CU_ASSERT_EQUAL(net_lid_of(&m, i, p), net_lid_of(n, i, p));
	}
	free(a);
	free(b);
	free(text);
	net_free(&m);
}

static void test_roundtrip(void)
{
	char path[512];
	struct sim_diag d;
	struct net n;

	for (unsigned i = 0; i < SIM_ARRAY_SIZE(examples); i++) {
		must_load(example(examples[i].file, path, sizeof(path)), &n);
		roundtrip(&n, examples[i].file);
		net_free(&n);
	}
	must_load(test_src_path("tests/golden/ibnd-2sw2path4hca.topo", path,
				sizeof(path)), &n);
	roundtrip(&n, "ibnd");
	net_free(&n);
	CU_ASSERT_EQUAL_FATAL(topo_load_string(ibnd_full, "full.topo", &n, &d), 0);
	roundtrip(&n, "full");
	net_free(&n);
	CU_ASSERT_EQUAL_FATAL(topo_default(&n, &d), 0);
	roundtrip(&n, "default");
	net_free(&n);
	/* Every speed, and half-known rates, survive the text and the codes. */
	CU_ASSERT_EQUAL_FATAL(topo_gen_fattree2_net(&n, 2, 1, 9, 1, "1xSDR", &d), 0);
	for (int s = LINK_SDR; s < LINK_SPEED_COUNT; s++)
		net_set_link_rate(&n, node_of(&n, "leaf0"), s - LINK_SDR + 1,
				  (uint8_t)(s % 2 ? 12 : 2), (uint8_t)s);
	net_set_link_rate(&n, node_of(&n, "leaf1"), 1, 8, LINK_SPEED_NONE);
	net_set_link_rate(&n, node_of(&n, "leaf1"), 2, 0, LINK_FDR10);
	net_set_link_rate(&n, node_of(&n, "leaf1"), 3, 0, LINK_SPEED_NONE);
	roundtrip(&n, "rates");
	net_free(&n);
}

/* The shipped examples are what the generator makes (README says how). */
static void test_shipped_examples(void)
{
	static const struct { const char *file; int l, s, h, k; } ships[] = {
		{ "topologies/examples/fattree-16.topo", 4, 2, 4, 2 },
		{ "topologies/examples/fattree-128.topo", 8, 8, 16, 2 },
	};
	char path[512];

	for (unsigned i = 0; i < SIM_ARRAY_SIZE(ships); i++) {
		struct sim_diag d;
		struct net f, g;
		char *a, *b;

		must_load(test_src_path(ships[i].file, path, sizeof(path)), &f);
		CU_ASSERT_EQUAL_FATAL(topo_gen_fattree2_net(&g, ships[i].l, ships[i].s,
							    ships[i].h, ships[i].k,
							    "4xHDR", &d), 0);
		a = links_of(&f);
		b = links_of(&g);
		CU_ASSERT_STRING_EQUAL(a, b);
		CU_ASSERT_EQUAL(net_nhosts(&f), ships[i].l * ships[i].h);
		CU_ASSERT_EQUAL(net_count(&f, NET_SWITCH), ships[i].l + ships[i].s);
		/* full bisection: each leaf has as many up-links as hosts */
		CU_ASSERT_EQUAL(ships[i].s * ships[i].k, ships[i].h);
		CU_ASSERT_EQUAL(net_nlinks(&f), 2 * ships[i].l * ships[i].h);
		free(a);
		free(b);
		net_free(&f);
		net_free(&g);
	}
}

/* ---- lookups and LIDs -------------------------------------------------- */

static void test_find_host_and_lids(void)
{
	static const char text[] =
		"Switch 4 \"S-1\" # \"sw\" base port 0 lid 7 lmc 0\n"
		"[1] \"H-a\"[1] # \"alpha\" lid 9\n"
		"[2] \"H-b\"[2] # \"beta\" lid 8\n"
		"\n"
		"Ca 2 \"H-lonely\" # \"lonely\"\n"
		"\n"
		"Ca 2 \"H-a\" # \"alpha\"\n"
		"[1](aa1) \"S-1\"[1] # lid 9 lmc 0 \"sw\" lid 7 4xEDR\n"
		"\n"
		"Ca 2 \"H-b\" # \"beta\"\n"
		"[2](bb2) \"S-1\"[2] # lid 8 lmc 0 \"sw\" lid 7 4xEDR\n";
	static const char dup[] =
		"Switch 4 \"S-1\" # \"sw\" base port 0 lid 7 lmc 0\n"
		"[1] \"H-a\"[1]\n"
		"[2] \"H-b\"[2]\n"
		"\n"
		"Ca 2 \"H-a\" # \"alpha\"\n"
		"[1] \"S-1\"[1] # lid 9 lmc 0 \"sw\" lid 7\n"
		"Ca 2 \"H-b\" # \"beta\"\n"
		"[2] \"S-1\"[2] # lid 9 lmc 0 \"sw\" lid 7\n";
	struct sim_diag d;
	struct net n;

	CU_ASSERT_EQUAL_FATAL(topo_load_string(text, "lids.topo", &n, &d), 0);
	CU_ASSERT_EQUAL(net_find_host(&n, "alpha"), 2);
	CU_ASSERT_EQUAL(net_find_host(&n, "H-b"), 3);
	CU_ASSERT_EQUAL(net_find_host(&n, "#0"), 2);	/* "lonely" has no cable */
	CU_ASSERT_EQUAL(net_find_host(&n, "#1"), 3);
	CU_ASSERT_EQUAL(net_find_host(&n, "#2"), -1);
	CU_ASSERT_EQUAL(net_find_host(&n, "#x"), -1);
	CU_ASSERT_EQUAL(net_find_host(&n, "gamma"), -1);
	CU_ASSERT_EQUAL(net_nhosts(&n), 2);
	CU_ASSERT_EQUAL(net_host(&n, 1), 3);
	CU_ASSERT_EQUAL(n.nodes[2].ports[1].guid, 0xaa1);
	/* Complete and unique: kept, holes stay empty. */
	CU_ASSERT_EQUAL_FATAL(net_assign_lids(&n, &d), 0);
	CU_ASSERT_EQUAL(n.max_lid, 9);
	CU_ASSERT_EQUAL(n.lid_node[7], 0);
	CU_ASSERT_EQUAL(n.lid_node[9], 2);
	CU_ASSERT_EQUAL(n.lid_port[8], 2);
	CU_ASSERT_EQUAL(n.lid_node[1], -1);
	CU_ASSERT_EQUAL(net_lid_of(&n, 1, 1), 0);	/* unconnected: no LID */
	net_free(&n);

	/* One duplicate and the file's LIDs are ignored: file order from 1. */
	CU_ASSERT_EQUAL_FATAL(topo_load_string(dup, "lids.topo", &n, &d), 0);
	CU_ASSERT_EQUAL_FATAL(net_assign_lids(&n, &d), 0);
	CU_ASSERT_EQUAL(n.max_lid, 3);
	CU_ASSERT_EQUAL(n.nodes[0].lid, 1);
	CU_ASSERT_EQUAL(net_lid_of(&n, 1, 1), 2);
	CU_ASSERT_EQUAL(net_lid_of(&n, 2, 2), 3);
	CU_ASSERT_EQUAL(n.lid_node[3], 2);
	net_free(&n);
}

/* ---- includes ---------------------------------------------------------- */

static void test_include(void)
{
	char name[64], bad[64], txt[512];
	const char *main_path, *p;
	struct sim_diag d;
	struct net n;

	snprintf(name, sizeof(name), "ibfab-test-%d-part.net", (int)getpid());
	p = test_tmpfile("part.net", "Hca 1 \"H1\"\n[1] \"S1\"[1]\n");
	CU_ASSERT_FATAL(p && strstr(p, name));
	snprintf(txt, sizeof(txt),
		 "Switch 4 \"S1\"\n[1] \"H1\"[1]\n\ninclude %s\ninclude \"%s\"   # twice is fine\n",
		 name, name);
	/* the same file twice declares H1 twice: a duplicate, in part.net */
	main_path = test_tmpfile("main.net", txt);
	CU_ASSERT_EQUAL(topo_load(main_path, &n, &d), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.file, name));
	CU_ASSERT_EQUAL(d.line, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "duplicate node id"));

	snprintf(txt, sizeof(txt), "Switch 4 \"S1\"\n[1] \"H1\"[1]\n\ninclude %s\n", name);
	main_path = test_tmpfile("main.net", txt);
	CU_ASSERT_EQUAL_FATAL(topo_load(main_path, &n, &d), 0);
	CU_ASSERT_EQUAL(net_nlinks(&n), 1);
	CU_ASSERT_EQUAL(n.nfiles, 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(n.nodes[1].file, name));
	net_free(&n);

	/* An error inside an included file names that file and its line. */
	snprintf(bad, sizeof(bad), "ibfab-test-%d-bad.net", (int)getpid());
	test_tmpfile("bad.net", "# fine\nHca 1 \"H1\"\n[1] \"S1\"[7]\n");
	snprintf(txt, sizeof(txt), "Switch 4 \"S1\"\n\ninclude %s\n", bad);
	main_path = test_tmpfile("main.net", txt);
	CU_ASSERT_EQUAL(topo_load(main_path, &n, &d), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.file, bad));
	CU_ASSERT_EQUAL(d.line, 3);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "remote port 7 out of range 1..4"));

	/* a -> b -> a */
	snprintf(name, sizeof(name), "ibfab-test-%d-loopb.net", (int)getpid());
	snprintf(txt, sizeof(txt), "Switch 4 \"S1\"\n\ninclude %s\n", name);
	main_path = test_tmpfile("loopa.net", txt);
	snprintf(txt, sizeof(txt), "\n\ninclude ibfab-test-%d-loopa.net\n", (int)getpid());
	test_tmpfile("loopb.net", txt);
	CU_ASSERT_EQUAL(topo_load(main_path, &n, &d), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.file, name));
	CU_ASSERT_EQUAL(d.line, 3);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "include loop"));
	/* a file including itself */
	snprintf(txt, sizeof(txt), "include ibfab-test-%d-self.net\n", (int)getpid());
	main_path = test_tmpfile("self.net", txt);
	CU_ASSERT_EQUAL(topo_load(main_path, &n, &d), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "include loop"));
	CU_ASSERT_EQUAL(n.nnodes, 0);	/* nothing half-loaded */
}

/* ---- malformed input --------------------------------------------------- */

struct bad {
	const char *text;
	int line, col;		/* col 0: not checked */
	const char *what;	/* in the message */
};

static const struct bad bads[] = {
	{ "Swtch 8 \"a\"\n", 1, 1, "unknown node type 'Swtch'" },
	{ "Switch 4 \"a\"\n[1] \"b\"[1]\n\nSwitch \"b\"\n", 4, 8, "expected a port count after 'Switch', got '\"b'" },
	{ "Switch 300 \"a\"\n", 1, 8, "port count '300' out of range 1..254" },
	{ "Switch 0 \"a\"\n", 1, 8, "out of range 1..254" },
	{ "Switch 99999999999999999999999999 \"a\"\n", 1, 8, "out of range" },
	{ "Switch 4 \"a\"\n[5] \"b\"[1]\n", 2, 2, "port number '5' out of range 1..4 for \"a\"" },
	{ "Switch 4 \"a\"\n[0] \"b\"[1]\n", 2, 2, "management port" },
	{ "Switch 4 \"a\"\n# 2\n# 3\n# 4\n# 5\n# 6\n# 7\n# 8\n# 9\n# 10\n# 11\n[x] \"b\"[1]\n", 12, 2, "expected a port number in brackets, got 'x'" },
	{ "Switch 4 \"a\"\n[1 \"b\"[1]\n", 2, 3, "expected ']' after the port number" },
	{ "Switch 4 \"abc\n", 1, 10, "unterminated quote" },
	{ "Switch 4 \"a\"\n[1] \"b[1]\n", 2, 5, "unterminated quote" },
	{ "Switch 4 \"\"\n", 1, 10, "empty node id" },
	{ "Switch 4 \"a\"\n\nCa 4 \"a\"\n", 3, 6, "duplicate node id \"a\" (first declared at bad.topo:1)" },
	{ "Switch 4 \"a\"\n[1] \"nope\"[1]\n", 2, 5, "link to undeclared node \"nope\"" },
	{ "Switch 4 \"a\"\n[1] \"h\"[3]\n\nHca 1 \"h\"\n", 2, 5, "remote port 3 out of range 1..1" },
	{ "Switch 4 \"a\"\n[1] \"h\"[0]\n", 2, 9, "remote port number '0' out of range" },
	{ "Switch 4 \"a\"\n[1] \"h\"[1]\n[2] \"h\"[1]\n\nHca 1 \"h\"\n", 3, 5, "conflicting link: \"h\"[1] is already connected to \"a\"[1] (bad.topo:2)" },
	{ "Switch 4 \"a\"\n[1] \"a\"[1]\n", 2, 5, "cabled to itself" },
	{ "Switch 4 \"a\"\n[1] \"h\"[1] # \"h\" lid 0 5xHDR\n\nHca 1 \"h\"\n", 2, 24, "bad link rate '5xHDR'" },
	{ "Switch 4 \"a\"\n[1] \"h\"[1] # \"h\" lid 0 4xFOO\n\nHca 1 \"h\"\n", 2, 24, "bad link rate '4xFOO'" },
	{ "Switch 4 \"a\"\n[1] \"h\"[1] w=64\n\nHca 1 \"h\"\n", 2, 14, "bad width code" },
	{ "Switch 4 \"a\"\n[1] \"h\"[1] s=9\n\nHca 1 \"h\"\n", 2, 14, "bad speed code" },
	{ "Switch 4 \"a\"\n[1] \"h\"[1] s=x\n\nHca 1 \"h\"\n", 2, 14, "expected a number after 's='" },
	{ "Switch 4 \"a\"\n[1] \"h\"[1] q=1\n\nHca 1 \"h\"\n", 2, 12, "unknown port option 'q='" },
	{ "Switch 4 \"a\"\n[1] \"h\"[1] # 4xHDR\n\nHca 1 \"h\"\n[1] \"a\"[1] # 4xEDR\n", 5, 5, "link speed EDR disagrees with HDR stated for the other end (bad.topo:2)" },
	{ "Switch 4 \"a\"\n[1] \"h\"[1] w=8\n\nHca 1 \"h\"\n[1] \"a\"[1] w=2\n", 5, 5, "link width 4x disagrees with 12x" },
	{ "include nothere.topo\n", 1, 9, "include file not found" },
	{ "include\n", 1, 8, "expected a file name after 'include'" },
	{ "", 0, 0, "no nodes" },
	{ "# nothing but comments\n\n   \n", 0, 0, "no nodes" },
	{ "\x7f" "ELF\x02\x01\x01", 1, 1, "control character 0x7f" },
	{ "Switch 4 \"a\"\n\x01\x02\x03\n", 2, 1, "control character 0x01" },
	{ "Switch 4 \"a\"\n\n[1] \"b\"[1]\n", 3, 1, "port line outside a node block" },
	{ "hello world\n", 1, 1, "unknown directive 'hello'" },
	{ "switchguid=0xZZ\n", 1, 12, "expected a number after 'switchguid='" },
	{ "vendid 3\n", 1, 8, "expected '=' after 'vendid'" },
	{ "Switch 4 \"a\" junk\n", 1, 14, "unexpected 'junk' after the node id" },
	{ "Switch 4 \"a\"\n[1] \"h\"[1] junk\n", 2, 12, "unexpected 'junk' after the remote port" },
	{ "module=\"m\"\n", 1, 1, "not supported" },
	{ "Switch 4 \"a\"\n@1 \"x\"\n", 2, 1, "aliases" },
	{ "{}\n", 1, 1, "expected a node header" },
	{ "width=0\n", 1, 7, "bad width code" },
};

static void test_malformed(void)
{
	for (unsigned i = 0; i < SIM_ARRAY_SIZE(bads); i++) {
		const struct bad *b = &bads[i];
		char msg[1200], want[64];
		struct sim_diag d;
		struct net n;
		int rc = topo_load_string(b->text, "bad.topo", &n, &d);

		sim_diag_format(&d, msg, sizeof(msg));
		if (b->line && b->col)
			snprintf(want, sizeof(want), "bad.topo:%d:%d: ", b->line, b->col);
		else if (b->line)
			snprintf(want, sizeof(want), "bad.topo:%d:", b->line);
		else
			snprintf(want, sizeof(want), "bad.topo: ");
		if (rc != -1 || strncmp(msg, want, strlen(want)) ||
		    !strstr(msg, b->what)) {
			fprintf(stderr, "\n  case %u: rc %d, got \"%s\", want \"%s...%s\"\n",
				i, rc, msg, want, b->what);
			CU_FAIL("wrong diagnostic");
		}
		CU_ASSERT_EQUAL(n.nnodes, 0);	/* nothing half-loaded */
	}
}

static void test_binary(void)
{
	static const char nul[] = "Switch 4 \"a\"\n[1]\0\"b\"[1]\n";
	struct sim_diag d;
	struct net n;
	char huge[4096];

	CU_ASSERT_EQUAL(topo_load_buffer(nul, sizeof(nul) - 1, "bin.topo", &n, &d), -1);
	CU_ASSERT_EQUAL(d.line, 2);
	CU_ASSERT_EQUAL(d.col, 4);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "NUL byte"));
	CU_ASSERT_EQUAL(topo_load("/nonexistent/ibfab.topo", &n, &d), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "cannot open"));
	/* Ids longer than a NodeDescription could ever be. */
	memset(huge, 'a', sizeof(huge));
	memcpy(huge, "Switch 4 \"", 10);
	memcpy(huge + sizeof(huge) - 3, "\"\n", 3);
	CU_ASSERT_EQUAL(topo_load_string(huge, "long.topo", &n, &d), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "too long"));

	/* A 1 MiB line: of brackets, of digits as a port count, of comment. */
	{
		size_t len = 1 << 20;
		char *big = malloc(len + 64);

		CU_ASSERT_FATAL(big != NULL);
		memset(big, '[', len);
		big[len] = 0;
		CU_ASSERT_EQUAL(topo_load_string(big, "big.topo", &n, &d), -1);
		CU_ASSERT_EQUAL(d.line, 1);
		memcpy(big, "Switch ", 7);
		memset(big + 7, '9', len - 7);
		CU_ASSERT_EQUAL(topo_load_string(big, "big.topo", &n, &d), -1);
		CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "out of range"));
		CU_ASSERT(strlen(d.msg) < 200);		/* the excerpt is cut */
		memcpy(big, "Switch 4 \"a\" #", 14);
		memset(big + 14, 'x', len - 14);
		strcpy(big + len - 8, "\n[1] \"a");
		CU_ASSERT_EQUAL(topo_load_string(big, "big.topo", &n, &d), -1);
		CU_ASSERT_EQUAL(d.line, 2);
		CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "unterminated quote"));
		free(big);
	}
}

/* ---- fuzz -------------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state % n);
}

static const char *const dict[] = {
	"[", "]", "\"", "#", "(", ")", "\n", "\n\n", " ", "\t", "=", "@",
	"Switch 4 ", "Ca 2 ", "Hca 1 ", "Rt 1 ", "[1]", "[255]", "[0]",
	"\"S-0000000000200000\"", "\"H-0000000000100000\"[1]", "lid 65535 ",
	"lid 7 ", "lmc 9 ", "4xHDR", "12xQDR", "4x???", "??EDR", "w=2", "s=4",
	"e=4", "v=4", "w=", "include nofile.topo\n", "include \"", "do x\n",
	"switchguid=0x1(", "caguid=", "99999999999999999999999", "-1", "\0",
	"\xff\xfe", "\r", "width=8\n",
};

struct fuzz_stats {
	unsigned ok, refused;
};

static void fuzz_one(const char *buf, size_t len, struct fuzz_stats *st)
{
	struct sim_diag d;
	struct net n;
	int rc = topo_load_buffer(buf, len, "fuzz.topo", &n, &d);

	if (rc) {
		/* every refusal says where and why */
		CU_ASSERT_STRING_EQUAL(d.file, "fuzz.topo");
		CU_ASSERT(d.msg[0] != 0);
		CU_ASSERT_EQUAL(n.nnodes, 0);
		st->refused++;
		return;
	}
	st->ok++;
	/* Whatever loads is consistent, routes, and survives a round trip. */
	CU_ASSERT_EQUAL(net_validate(&n, &d), 0);
	if (st->ok % 8 == 0)
		roundtrip(&n, "fuzz-rt");
	net_free(&n);
}

static void fuzz_from(const char *seed, size_t slen, unsigned rounds,
		      struct fuzz_stats *st)
{
	char *buf = malloc(slen * 4 + 4096);

	CU_ASSERT_FATAL(buf != NULL);
	/* every prefix */
	for (size_t cut = 0; cut <= slen; cut++)
		fuzz_one(seed, cut, st);
	for (unsigned r = 0; r < rounds; r++) {
		size_t len = slen;
		unsigned edits = 1 + rnd(4);

		memcpy(buf, seed, slen);
		for (unsigned e = 0; e < edits; e++) {
			size_t at = len ? rnd((uint32_t)len) : 0;

			switch (rnd(5)) {
			case 0:		/* flip a byte */
				if (len)
					buf[at] = (char)rnd(256);
				break;
			case 1: {	/* delete a run */
				size_t k = rnd(40);

				if (at + k > len)
					k = len - at;
				memmove(buf + at, buf + at + k, len - at - k);
				len -= k;
				break;
			}
			case 2: {	/* insert a token */
				const char *t = dict[rnd(SIM_ARRAY_SIZE(dict))];
				size_t k = *t ? strlen(t) : 1;	/* "\0" is one NUL */

				if (len + k > slen * 4 + 4000)
					break;
				memmove(buf + at + k, buf + at, len - at);
				memcpy(buf + at, t, k);
				len += k;
				break;
			}
			case 3: {	/* duplicate a run (repeats lines, blocks) */
				size_t k = rnd(120);

				if (at + k > len)
					k = len - at;
				if (len + k > slen * 4 + 4000)
					break;
				memmove(buf + at + k, buf + at, len - at);
				len += k;
				break;
			}
			default:	/* cut the file short */
				len = at;
				break;
			}
		}
		fuzz_one(buf, len, st);
	}
	free(buf);
}

static void test_fuzz(void)
{
	char path[512], *text = NULL;
	struct fuzz_stats st = { 0 };
	struct sim_diag d;
	struct net n;
	size_t len = 0;
	FILE *f;
	/* IBFAB_FUZZ_ROUNDS / IBFAB_FUZZ_SEED: longer or different runs by hand */
	unsigned rounds = getenv("IBFAB_FUZZ_ROUNDS") ?
		(unsigned)atoi(getenv("IBFAB_FUZZ_ROUNDS")) : 3000;

	if (getenv("IBFAB_FUZZ_SEED"))
		rng_state ^= strtoull(getenv("IBFAB_FUZZ_SEED"), NULL, 0) * 0x2545f4914f6cdd1dULL;
	if (!rng_state)
		rng_state = 1;

	/* seeds: the real dump, the -f dump with codes, an ibsim file */
	f = fopen(test_src_path("tests/golden/ibnd-2sw2path4hca.topo", path,
				sizeof(path)), "r");
	CU_ASSERT_FATAL(f != NULL);
	{
		char buf[8192];
		size_t k = fread(buf, 1, sizeof(buf), f);

		fclose(f);
		fuzz_from(buf, k, rounds, &st);
	}
	fuzz_from(ibnd_full, sizeof(ibnd_full) - 1, rounds, &st);
	{
		static const char net[] =
			"Switch\t8 \"Switch1\"\n[1]\t\"Hca1\"[1]\n[2]\t\"Hca2\"[2]\tw=12\n"
			"[3]\t\"Switch2\"[3]\n\nSwitch 8 \"Switch2\"\n[3]\t\"Switch1\"[3]\n\n"
			"Hca\t2 \"Hca1\"\n[1]\t\"Switch1\"[1]\n\nHca\t2 \"Hca2\"\n"
			"[2]\t\"Switch1\"[2]\n";

		fuzz_from(net, sizeof(net) - 1, rounds, &st);
	}
	/* the generated default, written out */
	CU_ASSERT_EQUAL_FATAL(topo_default(&n, &d), 0);
	f = open_memstream(&text, &len);
	topo_write_ibnd(&n, f);
	fclose(f);
	net_free(&n);
	fuzz_from(text, len, rounds / 3, &st);
	free(text);
	/* Both outcomes must have happened, or the fuzzer tested nothing. */
	CU_ASSERT(st.ok > 100);
	CU_ASSERT(st.refused > 100);
}

static const struct test_case tests[] = {
	{ "ibsim examples load with their cabling", test_ibsim_examples },
	{ "real ibnetdiscover dump: rates, GUIDs, LIDs", test_ibnd_dump },
	{ "ibnetdiscover -f: text rate wins over codes", test_ibnd_full_codes },
	{ "ibsim w=/s=/e= options and globals", test_ibsim_options },
	{ "ibsim unquoted descriptions", test_unquoted_desc },
	{ "write -> read round trip", test_roundtrip },
	{ "shipped examples = generator output", test_shipped_examples },
	{ "net_find_host and LID keeping", test_find_host_and_lids },
	{ "include, nested errors, include loops", test_include },
	{ "malformed input: file:line:col and message", test_malformed },
	{ "binary input, long ids, missing file", test_binary },
	{ "fuzz: truncated and mutated files", test_fuzz },
	{ NULL, NULL },
};

TEST_MAIN("topo", tests)
