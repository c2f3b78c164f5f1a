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
#include "models/server/server.h"
#include "models/sm/sm.h"
#include "shim/shim_proto.h"
#include "sim/sim_diag.h"
#include "topologies/topo.h"

void cli_topo_usage(FILE *out)
{
	fputs("usage: ibfab topo COMMAND [options]\n"
	      "\n"
	      "Read, check, route, draw and generate topologies in ibnetdiscover or\n"
	      "ibsim net format (FILE '-' is stdin).\n"
	      "\n"
	      "  links FILE          one line per cable, \"descA\"[pA] <-> \"descB\"[pB] rate,\n"
	      "                      sorted: files describing the same cabling print the same list\n"
	      "  show FILE           node, switch, CA and link counts, the cables with their\n"
	      "                      rates, and the LIDs the subnet manager assigns\n"
	      "  gen KIND [options]  write a generated topology to stdout: fattree2, fattree,\n"
	      "                      leafspine, torus, mesh, dragonfly, rail\n"
	      "  route FILE          route with a routing engine and write OpenSM's LFT dump\n"
	      "  path FILE SRC DST   the hop-by-hop route between two hosts (like ibtracert)\n"
	      "  check FILE          hop counts, routing balance and the deadlock verdict\n"
	      "                      (channel dependency graph); exit 1 on a cycle\n"
	      "  health FILE         check with its health findings: slow or missing cables,\n"
	      "                      idle switches, unreachable pairs, the bisection\n"
	      "  dot FILE            Graphviz DOT, switch tiers ranked; --run colours links by\n"
	      "                      the utilisation an `ibfab run --json` measured\n"
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
	      "gives are kept when complete and unique, else assigned in file order).\n"
	      "A host's line ends with its address under `ibfab exec` (127.1.0.0 + k + 1\n"
	      "for the k-th host): rdma_cm programs and the shim's name lookups use it.\n", out);
}

bool cli_is_help(const char *a)
{
	return !strcmp(a, "--help") || !strcmp(a, "-h");
}

int cli_topo_load(const char *path, struct net *n, struct sim_diag *d)
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

int cli_topo_report(const struct sim_diag *d)
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
	if (argc == 2 && cli_is_help(argv[1])) {
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
	if (cli_topo_load(file, &n, &d))
		return cli_topo_report(&d);
	topo_print_links(&n, stdout);
	net_free(&n);
	return fflush(stdout) ? 1 : 0;
}

static const char *type_name(enum net_node_type t)
{
	return t == NET_SWITCH ? "switch" : t == NET_ROUTER ? "router" : "CA";
}

/* The GPU servers a file names: how many, of what, and the hosts outside. */
static int show_servers(const struct net *n, struct sim_diag *d)
{
	const struct srv_preset *sp = srv_preset_find(n->server);
	struct srv_params p;
	struct srv_map m;
	int out = 0;

	srv_params_default(&p);
	if (srv_params_preset(&p, n->server, d) || srv_map_build(&m, n, &p, d))
		return -1;
	for (int k = 0; k < net_nhosts(n); k++)
		out += m.server[net_host(n, k)] < 0;
	printf("servers: %d x %s (%u %s, %s at %.12g GB/s per GPU per direction; "
	       "NVLink domains of %u GPUs), %d host%s in none\n",
	       m.nservers, sp->name, sp->gpus, sp->gpu, sp->nvlink, sp->nvlink_gbps, sp->domain,
	       out, out == 1 ? "" : "s");
	srv_map_free(&m);
	return 0;
}

static int cmd_show(int argc, char **argv)
{
	struct sim_diag d;
	const char *file;
	struct net n;
	int rc = one_file(argc, argv, usage_show, &file);

	if (rc >= 0)
		return rc;
	if (cli_topo_load(file, &n, &d))
		return cli_topo_report(&d);
	if (sm_route_minhop(&n, &d)) {
		net_free(&n);
		return cli_topo_report(&d);
	}
	printf("%s: %d nodes (%d switches, %d CAs, %d routers), %d hosts, %d links\n",
	       file, n.nnodes, net_count(&n, NET_SWITCH), net_count(&n, NET_CA),
	       net_count(&n, NET_ROUTER), net_nhosts(&n), net_nlinks(&n));
	if (n.server[0] && show_servers(&n, &d)) {	/* "# ibfab: server=NAME" */
		net_free(&n);
		return cli_topo_report(&d);
	}
	printf("\nlinks:\n");
	fflush(stdout);
	topo_print_links(&n, stdout);
	/* a host's address under `ibfab exec` (rdma_cm, the shim's names) */
	int *host_of = malloc((size_t)n.nnodes * sizeof(*host_of));

	if (!host_of) {
		net_free(&n);
		fprintf(stderr, "ibfab topo show: out of memory\n");
		return 1;
	}
	for (int i = 0; i < n.nnodes; i++)
		host_of[i] = -1;
	for (int k = 0; k < net_nhosts(&n); k++)
		host_of[net_host(&n, k)] = k;
	printf("\nLIDs (minhop, max LID %u) and hosts' addresses:\n", n.max_lid);
	for (uint32_t l = 1; l <= n.max_lid; l++) {
		int node = n.lid_node[l];

		if (node < 0)
			continue;
		if (n.nodes[node].type == NET_SWITCH) {
			printf("%5u  %-6s \"%s\"\n", l, type_name(n.nodes[node].type),
			       n.nodes[node].desc);
		} else if (host_of[node] >= 0) {
			uint32_t a = shim_host_addr((uint32_t)host_of[node]);

			printf("%5u  %-6s \"%s\"[%u]  %u.%u.%u.%u\n", l,
			       type_name(n.nodes[node].type), n.nodes[node].desc,
			       n.lid_port[l], a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
		} else {
			printf("%5u  %-6s \"%s\"[%u]\n", l,
			       type_name(n.nodes[node].type), n.nodes[node].desc,
			       n.lid_port[l]);
		}
	}
	free(host_of);
	net_free(&n);
	return fflush(stdout) ? 1 : 0;
}

/*
 * The subcommands. Each family lives in its own file (gen: cli_topo_gen.c;
 * route and path: cli_topo_route.c; check and dot: cli_topo_check.c).
 */
static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} cmds[] = {
	{ "links", cmd_links },
	{ "show", cmd_show },
	{ "gen", cli_topo_gen },
	{ "route", cli_topo_route },
	{ "path", cli_topo_path },
	{ "check", cli_topo_check },
	{ "health", cli_topo_check },	/* check --health */
	{ "dot", cli_topo_dot },
};

int cli_topo_main(int argc, char **argv)
{
	if (argc < 2) {
		cli_topo_usage(stderr);
		return 2;
	}
	if (cli_is_help(argv[1]) || !strcmp(argv[1], "help")) {
		cli_topo_usage(stdout);
		return 0;
	}
	for (unsigned i = 0; i < SIM_ARRAY_SIZE(cmds); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "ibfab topo: unknown command '%s' (", argv[1]);
	for (unsigned i = 0; i < SIM_ARRAY_SIZE(cmds); i++)
		fprintf(stderr, "%s%s", i ? ", " : "", cmds[i].name);
	fprintf(stderr, ")\n");
	return 2;
}
