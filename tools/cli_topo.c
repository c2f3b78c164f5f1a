/* SPDX-License-Identifier: MIT */
/*
 * cli_topo.c - `ibfab topo`: links, show, gen (see cli_topo.h).
 *
 * `links` prints one line per cable in a canonical order and names ends by
 * node description, so an ibsim net file and the ibnetdiscover dump of the
 * fabric ibsim builds from it print the same list although one names nodes
 * "Switch1" and the other "S-0000000000200000" (tests/interop does this).
 * `show` adds counts and the LIDs the built-in subnet manager assigns.
 */
#include "tools/cli_topo.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "models/net/net.h"
#include "models/sm/sm.h"
#include "sim/sim_diag.h"
#include "topologies/topo.h"

void cli_topo_usage(FILE *out)
{
	fputs("usage: ibfab topo links FILE\n"
	      "       ibfab topo show FILE\n"
	      "       ibfab topo gen fattree2 --leaves N --spines N --hosts N\n"
	      "                               [--links-per-spine N] [--rate 4xHDR]\n"
	      "\n"
	      "Read topologies in ibnetdiscover or ibsim net format (FILE '-' is stdin).\n"
	      "\n"
	      "  links  one line per cable, \"descA\"[pA] <-> \"descB\"[pB] rate, sorted;\n"
	      "         files describing the same cabling print the same list\n"
	      "  show   node, switch, CA and link counts, the cables with their rates,\n"
	      "         and the LIDs the min-hop subnet manager assigns\n"
	      "  gen    write a generated topology in ibnetdiscover format to stdout\n"
	      "\n"
	      "'ibfab topo COMMAND --help' shows the help of one command.\n", out);
}

static void usage_links(FILE *out)
{
	fputs("usage: ibfab topo links FILE\n"
	      "\n"
	      "Print every cable once as  \"<descA>\"[pA] <-> \"<descB>\"[pB] <rate>,\n"
	      "the smaller (description, port) on the left, lines sorted. The rate is\n"
	      "like 4xHDR, or '-' when the file states none. Compare two files with\n"
	      "  diff <(ibfab topo links a.topo) <(ibfab topo links b.topo)\n", out);
}

static void usage_show(FILE *out)
{
	fputs("usage: ibfab topo show FILE\n"
	      "\n"
	      "Print the node, switch, CA, router, host and link counts, the cables\n"
	      "with their rates, then every LID after min-hop routing (LIDs the file\n"
	      "gives are kept when complete and unique, else assigned in file order).\n", out);
}

static void usage_gen(FILE *out)
{
	fputs("usage: ibfab topo gen fattree2 --leaves N --spines N --hosts N\n"
	      "                               [--links-per-spine N] [--rate RATE]\n"
	      "\n"
	      "A two-level fat tree (leaf-spine) in ibnetdiscover format on stdout:\n"
	      "N leaves with --hosts hosts each, every spine cabled to every leaf with\n"
	      "--links-per-spine parallel links (default: hosts / spines, at least 1,\n"
	      "which gives full bisection when it divides evenly). RATE is width x\n"
	      "speed, default 4xHDR. Descriptions are leaf0.., spine0.., h0.. (hosts\n"
	      "numbered leaf by leaf).\n"
	      "\n"
	      "Example: ibfab topo gen fattree2 --leaves 4 --spines 2 --hosts 4\n", out);
}

static bool is_help(const char *a)
{
	return !strcmp(a, "--help") || !strcmp(a, "-h");
}

static int load_any(const char *path, struct net *n, struct sim_diag *d)
{
	size_t cap = 65536, len = 0;
	char *buf, *nb;
	int rc;

	if (strcmp(path, "-"))
		return topo_load(path, n, d);
	buf = malloc(cap);
	while (buf) {
		len += fread(buf + len, 1, cap - len, stdin);
		if (len < cap)
			break;
		nb = realloc(buf, cap * 2);
		if (!nb) {
			free(buf);
			buf = NULL;
			break;
		}
		buf = nb;
		cap *= 2;
	}
	if (!buf) {
		net_init(n);
		return sim_diag_set(d, "<stdin>", 0, 0, "out of memory");
	}
	rc = topo_load_buffer(buf, len, "<stdin>", n, d);
	free(buf);
	return rc;
}

static int report(const struct sim_diag *d)
{
	char buf[1200];

	sim_diag_format(d, buf, sizeof(buf));
	fprintf(stderr, "ibfab topo: %s\n", buf);
	return 1;
}

/* `links FILE` and `show FILE` take exactly one file. */
static int one_file(int argc, char **argv, void (*usage)(FILE *),
		    const char **file)
{
	if (argc == 2 && is_help(argv[1])) {
		usage(stdout);
		return 0;
	}
	if (argc != 2 || (argv[1][0] == '-' && argv[1][1])) {
		if (argc == 2)
			fprintf(stderr, "ibfab topo %s: unknown option '%s'\n",
				argv[0], argv[1]);
		else
			fprintf(stderr, "ibfab topo %s: %s\n", argv[0],
				argc < 2 ? "missing FILE" : "too many arguments");
		usage(stderr);
		return 2;
	}
	*file = argv[1];
	return -1;
}

static int cmd_links(int argc, char **argv)
{
	struct sim_diag d;
	const char *file;
	struct net n;
	int rc = one_file(argc, argv, usage_links, &file);

	if (rc >= 0)
		return rc;
	if (load_any(file, &n, &d))
		return report(&d);
	topo_print_links(&n, stdout);
	net_free(&n);
	return fflush(stdout) ? 1 : 0;
}

static const char *type_name(enum net_node_type t)
{
	return t == NET_SWITCH ? "switch" : t == NET_ROUTER ? "router" : "CA";
}

static int cmd_show(int argc, char **argv)
{
	struct sim_diag d;
	const char *file;
	struct net n;
	int rc = one_file(argc, argv, usage_show, &file);

	if (rc >= 0)
		return rc;
	if (load_any(file, &n, &d))
		return report(&d);
	if (sm_route_minhop(&n, &d)) {
		net_free(&n);
		return report(&d);
	}
	printf("%s: %d nodes (%d switches, %d CAs, %d routers), %d hosts, %d links\n",
	       file, n.nnodes, net_count(&n, NET_SWITCH), net_count(&n, NET_CA),
	       net_count(&n, NET_ROUTER), net_nhosts(&n), net_nlinks(&n));
	printf("\nlinks:\n");
	fflush(stdout);
	topo_print_links(&n, stdout);
	printf("\nLIDs (minhop, max LID %u):\n", n.max_lid);
	for (uint32_t l = 1; l <= n.max_lid; l++) {
		int node = n.lid_node[l];

		if (node < 0)
			continue;
		if (n.nodes[node].type == NET_SWITCH)
			printf("%5u  %-6s \"%s\"\n", l, type_name(n.nodes[node].type),
			       n.nodes[node].desc);
		else
			printf("%5u  %-6s \"%s\"[%u]\n", l,
			       type_name(n.nodes[node].type), n.nodes[node].desc,
			       n.lid_port[l]);
	}
	net_free(&n);
	return fflush(stdout) ? 1 : 0;
}

/* A count for --leaves and friends: a whole number in 0..100000. */
static int parse_count(const char *opt, const char *s, int *v)
{
	char *end;
	long x;

	errno = 0;
	x = strtol(s, &end, 10);
	if (end == s || *end || errno || x < 0 || x > 100000) {
		fprintf(stderr, "ibfab topo gen: %s wants a whole number, got '%s'\n",
			opt, s);
		return -1;
	}
	*v = (int)x;
	return 0;
}

static int cmd_gen(int argc, char **argv)
{
	int leaves = -1, spines = -1, hosts = -1, links = -1;
	const char *rate = TOPO_DEFAULT_RATE;
	struct sim_diag d;
	char *text;

	if (argc >= 2 && is_help(argv[1])) {
		usage_gen(stdout);
		return 0;
	}
	if (argc < 2) {
		fprintf(stderr, "ibfab topo gen: missing the kind of topology (fattree2)\n");
		usage_gen(stderr);
		return 2;
	}
	if (strcmp(argv[1], "fattree2")) {
		fprintf(stderr, "ibfab topo gen: unknown topology '%s' (known: fattree2)\n",
			argv[1]);
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		static const char *const opts[] = { "--leaves", "--spines", "--hosts",
						    "--links-per-spine", "--rate" };
		int *dst[] = { &leaves, &spines, &hosts, &links, NULL };
		const char *a = argv[i], *val = NULL;
		unsigned k;

		if (is_help(a)) {
			usage_gen(stdout);
			return 0;
		}
		for (k = 0; k < SIM_ARRAY_SIZE(opts); k++) {
			size_t ol = strlen(opts[k]);

			if (!strncmp(a, opts[k], ol) && (a[ol] == '=' || !a[ol])) {
				val = a[ol] == '=' ? a + ol + 1 : NULL;
				break;
			}
		}
		if (k == SIM_ARRAY_SIZE(opts)) {
			fprintf(stderr, "ibfab topo gen: unknown option '%s'\n", a);
			usage_gen(stderr);
			return 2;
		}
		if (!val) {
			if (i + 1 >= argc) {
				fprintf(stderr, "ibfab topo gen: %s needs a value\n", opts[k]);
				return 2;
			}
			val = argv[++i];
		}
		if (!dst[k])
			rate = val;
		else if (parse_count(opts[k], val, dst[k]))
			return 2;
	}
	if (leaves < 0 || spines < 0 || hosts < 0) {
		fprintf(stderr, "ibfab topo gen fattree2: --leaves, --spines and --hosts are required\n");
		usage_gen(stderr);
		return 2;
	}
	if (links < 0)
		links = spines > 0 && hosts / spines > 0 ? hosts / spines : 1;
	text = topo_gen_fattree2_str(leaves, spines, hosts, links, rate, &d);
	if (!text) {
		char buf[1200];

		sim_diag_format(&d, buf, sizeof(buf));
		fprintf(stderr, "ibfab topo gen: %s\n", buf);
		return 2;
	}
	fputs(text, stdout);
	free(text);
	return fflush(stdout) ? 1 : 0;
}

int cli_topo_main(int argc, char **argv)
{
	if (argc < 2) {
		cli_topo_usage(stderr);
		return 2;
	}
	if (is_help(argv[1]) || !strcmp(argv[1], "help")) {
		cli_topo_usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "links"))
		return cmd_links(argc - 1, argv + 1);
	if (!strcmp(argv[1], "show"))
		return cmd_show(argc - 1, argv + 1);
	if (!strcmp(argv[1], "gen"))
		return cmd_gen(argc - 1, argv + 1);
	fprintf(stderr, "ibfab topo: unknown command '%s' (links, show, gen)\n",
		argv[1]);
	return 2;
}
