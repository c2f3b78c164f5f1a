/* SPDX-License-Identifier: MIT */
/*
 * cli_topo_route.c - `ibfab topo route` and `ibfab topo path`: run a routing
 * engine (or load the tables a real subnet manager wrote) and look at the
 * result without simulating anything.
 *
 *   route  writes the LFTs in OpenSM's dump format (--lft-out), so OpenSM's
 *          `file` engine can program a fabric with them, and prints what
 *          the tables do: LIDs, path lengths, paths per link (the balance
 *          figure OpenSM's engines are compared by); --hops lists the hop
 *          count of every (switch, destination) pair, keyed by GUID so
 *          tables from two SMs with different LIDs can be diffed.
 *   path   prints one route hop by hop in ibtracert's format (out port,
 *          node, in port, LID range), so it can be compared with the real
 *          ibtracert on the same tables.
 *
 * Both take the routing options of `ibfab run` (--routing, --roots, --lmc,
 * --lft). Exit codes as the other topo commands: 0, 1 input error (one
 * "file:line:col: message" line), 2 usage error.
 */
#define _GNU_SOURCE	/* asprintf */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "models/net/net.h"
#include "models/sm/sm.h"
#include "sim/sim_diag.h"
#include "tools/cli_out.h"
#include "tools/cli_topo.h"
#include "topologies/lft.h"

struct route_args {
	const char *file;
	const char *routing;
	const char *roots;
	const char *sm;
	const char *lmc;
	const char *lft;
	const char *lft_out;
	bool hops;
	const char *pos[2];	/* path: SRC DST */
	int npos;
};

static void usage_route(FILE *out)
{
	fputs("usage: ibfab topo route FILE [--routing NAME] [--roots LIST] [--lmc N]\n"
	      "                             [--sm NODE] [--lft DUMP] [--lft-out OUT] [--hops]\n"
	      "\n"
	      "Route FILE (ibnetdiscover or ibsim net format) and report what the\n"
	      "forwarding tables do:\n"
	      "  LIDs, host pairs routed, path lengths in links, and paths per\n"
	      "  switch-to-switch link direction (max, min, mean) for the paths from\n"
	      "  every host to the base LID of every other host.\n"
	      "\n"
	      "  --routing NAME   engine:", out);
	for (int i = 0; sm_engines[i]; i++)
		fprintf(out, " %s", sm_engines[i]->name);
	fputs(" (default minhop)\n", out);
	for (int i = 0; sm_engines[i]; i++)
		fprintf(out, "                     %-7s %s\n", sm_engines[i]->name,
			sm_engines[i]->help);
	fputs("  --roots LIST     updn roots: node descriptions, ids or GUIDs, comma\n"
	      "                   separated (default: chosen as OpenSM does)\n"
	      "  --lmc N          2^N LIDs per CA port, 0..7 (IBA 7.11.1); 0 keeps\n"
	      "                   the LMC of the file's LIDs\n"
	      "  --sm NODE        where the subnet manager runs, when the file has no\n"
	      "                   LIDs: its port gets LID 1, the others follow by port\n"
	      "                   GUID, as OpenSM assigns them (default: the file's\n"
	      "                   first node, where ibsim attaches it)\n"
	      "  --lft DUMP       do not route: load OpenSM's opensm-lfts.dump or\n"
	      "                   concatenated `ibroute` output (LIDs come from it)\n"
	      "  --lft-out OUT    write the tables in OpenSM's dump format ('-':\n"
	      "                   stdout, the report then goes to stderr); OpenSM\n"
	      "                   loads it with `opensm -R file -U OUT`\n"
	      "  --hops           instead of the report, one line per switch and\n"
	      "                   destination LID: SWITCH DEST/k HOPS, switches and\n"
	      "                   destination ports by GUID (by \"description\" when\n"
	      "                   unknown), k the LID's offset from the port's base,\n"
	      "                   HOPS the links the tables cross ('-': no route)\n", out);
}

static void usage_path(FILE *out)
{
	fputs("usage: ibfab topo path FILE SRC DST [--routing NAME] [--roots LIST]\n"
	      "                                    [--lmc N] [--sm NODE] [--lft DUMP]\n"
	      "\n"
	      "Print the route from SRC to DST in ibtracert's format:\n"
	      "  From ca {node GUID} portnum P lid A-B \"desc\"\n"
	      "  [out port] -> switch port {port GUID}[in port] lid A-B \"desc\"\n"
	      "  ...\n"
	      "  To ca {node GUID} portnum P lid A-B \"desc\"\n"
	      "SRC and DST are node descriptions, node ids, \"#k\" (the k-th host), or\n"
	      "LIDs (decimal or 0x hex; a LID picks the port, and with LMC the path).\n"
	      "A host name means its first cabled port and its base LID. Routing\n"
	      "options as for 'ibfab topo route'. Exit status 1 when the tables do\n"
	      "not deliver (the hops up to the failure are printed).\n", out);
}

static int usage_err(const char *cmd, const char *msg, const char *arg)
{
	fprintf(stderr, "ibfab topo %s: %s%s%s%s (see 'ibfab topo %s --help')\n", cmd, msg,
		arg ? " '" : "", arg ? arg : "", arg ? "'" : "", cmd);
	return 2;
}

/* Returns -1 to go on, else the exit code. */
static int parse(int argc, char **argv, struct route_args *a, bool path)
{
	const char *cmd = argv[0];

	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], **slot = NULL, *eq = strchr(arg, '=');
		char name[32];

		if (cli_is_help(arg)) {
			(path ? usage_path : usage_route)(stdout);
			return 0;
		}
		if (arg[0] != '-' || !arg[1]) {
			if (!a->file)
				a->file = arg;
			else if (path && a->npos < 2)
				a->pos[a->npos++] = arg;
			else
				return usage_err(cmd, "unexpected argument", arg);
			continue;
		}
		snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
		if (!strcmp(name, "--hops") && !path) {
			if (eq)
				return usage_err(cmd, "option takes no value:", name);
			a->hops = true;
			continue;
		}
		if (!strcmp(name, "--routing"))
			slot = &a->routing;
		else if (!strcmp(name, "--roots"))
			slot = &a->roots;
		else if (!strcmp(name, "--lmc"))
			slot = &a->lmc;
		else if (!strcmp(name, "--sm"))
			slot = &a->sm;
		else if (!strcmp(name, "--lft"))
			slot = &a->lft;
		else if (!strcmp(name, "--lft-out") && !path)
			slot = &a->lft_out;
		else
			return usage_err(cmd, "unknown option", name);
		if (*slot)
			return usage_err(cmd, "option given twice:", name);
		if (eq)
			*slot = eq + 1;
		else if (i + 1 < argc)
			*slot = argv[++i];
		else
			return usage_err(cmd, "option needs a value:", name);
		if (!**slot)
			return usage_err(cmd, "option needs a non-empty value:", name);
	}
	if (!a->file)
		return usage_err(cmd, "missing FILE", NULL);
	if (path && a->npos < 2)
		return usage_err(cmd, "missing SRC and DST", NULL);
	if (a->routing && !sm_engine_find(a->routing)) {
		char known[128] = "";

		for (int e = 0; sm_engines[e]; e++)
			snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s%s",
				 e ? ", " : "", sm_engines[e]->name);
		fprintf(stderr, "ibfab topo %s: unknown routing engine '%s' (known: %s)\n",
			cmd, a->routing, known);
		return 2;
	}
	if (a->lft && (a->routing || a->roots || a->lmc || a->sm))
		return usage_err(cmd, "--lft loads the tables; it cannot be combined with --routing, --roots, --lmc or --sm", NULL);
	if (a->lmc) {
		char *end;
		long v;

		errno = 0;
		v = strtol(a->lmc, &end, 10);
		if (*end || errno || v < 0 || v > NET_LMC_MAX)
			return usage_err(cmd, "--lmc wants 0..7, not", a->lmc);
	}
	return -1;
}

/* Load FILE and route it (or load the dump). Returns 0 or 1 (reported). */
static int load_and_route(const struct route_args *a, struct net *n, char *note,
			  unsigned note_len)
{
	struct sim_diag d;
	struct sm_opts o = { .roots = a->roots, .sm = a->sm, .note = note, .note_len = note_len };

	note[0] = 0;
	if (a->lmc)
		o.lmc = (uint8_t)atoi(a->lmc);
	if (cli_topo_load(a->file, n, &d))
		return cli_topo_report(&d);
	if (a->lft ? lft_load(n, a->lft, &d) : sm_route(n, a->routing, &o, &d)) {
		net_free(n);
		return cli_topo_report(&d);
	}
	if (a->lft)
		snprintf(note, note_len, "tables from %s", a->lft);
	return 0;
}

/* The dump through cli_out: staged and renamed, or in place ("-" too). */
static int write_dump(const struct net *n, const char *out)
{
	struct cli_out o;
	struct sim_diag d;
	char buf[1100];
	int rc = 0;

	if (cli_out_open(&o, out, true, &d) ||
	    (lft_write_dump(n, o.f) ? sim_diag_set(&d, out, 0, 0, "write error") : 0) ||
	    cli_out_close(&o, &d) || cli_out_commit(&o, &d)) {
		sim_diag_format(&d, buf, sizeof(buf));
		fprintf(stderr, "ibfab topo route: %s\n", buf);
		rc = 1;
	}
	cli_out_free(&o);
	return rc;
}

/* "0x<guid>" when known, else "\"desc\"" */
static const char *node_key(const struct net *n, int node, int port, char *buf,
			    size_t len)
{
	const struct net_node *nd = &n->nodes[node];
	uint64_t g = nd->type == NET_SWITCH ? (nd->ports[0].guid ? nd->ports[0].guid : nd->guid) :
		     nd->ports[port].guid;

	if (g)
		snprintf(buf, len, "0x%016" PRIx64, g);
	else if (nd->type == NET_SWITCH)
		snprintf(buf, len, "\"%s\"", nd->desc);
	else
		snprintf(buf, len, "\"%s\"[%d]", nd->desc, port);
	return buf;
}

static void print_hops(const struct net *n, FILE *out)
{
	char a[160], b[160];

	for (int s = 0; s < n->nnodes; s++) {
		if (n->nodes[s].type != NET_SWITCH)
			continue;
		node_key(n, s, 0, a, sizeof(a));
		for (uint32_t lid = 1; lid <= n->max_lid; lid++) {
			int o = n->lid_node[lid], p, h;
			net_lid_t base;

			if (o < 0)
				continue;
			p = n->lid_port[lid];
			base = net_lid_of(n, o, p);
			h = sm_lft_hops(n, s, (net_lid_t)lid);
			fprintf(out, "%s %s/%u ", a, node_key(n, o, p, b, sizeof(b)),
				lid - base);
			if (h < 0)
				fputs("-\n", out);
			else
				fprintf(out, "%d\n", h);
		}
	}
}

static void print_report(const struct route_args *a, const struct net *n,
			 const char *note, const struct sm_balance *b, FILE *out)
{
	uint64_t sum = 0, cnt = 0;
	int lids = 0;

	for (uint32_t l = 1; l <= n->max_lid; l++)
		lids += n->lid_node[l] >= 0;
	fprintf(out, "%s: %s\n", a->file, note);
	fprintf(out, "LIDs            %d in use, max LID %u, LMC %u\n", lids, n->max_lid,
		n->lmc);
	fprintf(out, "host pairs      %" PRIu64 " routed, %" PRIu64 " unrouted\n",
		b->pairs - b->unrouted, b->unrouted);
	fputs("path lengths   ", out);
	for (int h = 0; h <= b->max_hops; h++)
		if (b->hops[h]) {
			fprintf(out, "%s %d links: %" PRIu64, cnt ? "," : "", h, b->hops[h]);
			sum += b->hops[h] * (uint64_t)h;
			cnt += b->hops[h];
		}
	fprintf(out, "%s (mean %.2f)\n", cnt ? "" : " -", cnt ? (double)sum / (double)cnt : 0.0);
	if (b->links && b->max_node >= 0) {
		const struct net_node *nd = &n->nodes[b->max_node];
		const struct net_port *pp = &nd->ports[b->max_port];

		fprintf(out, "paths per link  max %u (\"%s\"[%d] -> \"%s\"[%d]), min %u, mean %.2f over %d switch-to-switch link directions\n",
			b->max_paths, nd->desc, b->max_port, n->nodes[pp->remote_node].desc,
			pp->remote_port, b->min_paths, b->mean_paths, b->links);
	} else {
		fputs("paths per link  no switch-to-switch links\n", out);
	}
}

int cli_topo_route(int argc, char **argv)
{
	struct route_args a = { 0 };
	struct sm_balance b;
	struct sim_diag d;
	char note[300];
	struct net n;
	FILE *rep;
	int rc = parse(argc, argv, &a, false);

	if (rc >= 0)
		return rc;
	if (load_and_route(&a, &n, note, sizeof(note)))
		return 1;
	rep = a.lft_out && !strcmp(a.lft_out, "-") ? stderr : stdout;
	if (a.lft_out && write_dump(&n, a.lft_out)) {
		net_free(&n);
		return 1;
	}
	if (a.hops) {
		print_hops(&n, rep);
	} else {
		if (sm_balance(&n, 0, &b, &d)) {
			net_free(&n);
			return cli_topo_report(&d);
		}
		print_report(&a, &n, note, &b, rep);
	}
	net_free(&n);
	return fflush(rep) || ferror(rep) ? 1 : 0;
}

/* ---- path ------------------------------------------------------------- */

/* A node name, or a LID: node and port (port: first cabled for a name). */
static int find_end(const struct net *n, const char *s, int *node, int *port,
		    net_lid_t *lid)
{
	char *end;
	unsigned long v;

	*node = net_find_host(n, s);
	if (*node >= 0) {
		const struct net_node *nd = &n->nodes[*node];

		*port = nd->type == NET_SWITCH ? 0 : net_first_port(n, *node);
		if (*port < 0)
			return -1;
		*lid = net_lid_of(n, *node, *port);
		return *lid ? 0 : -1;
	}
	errno = 0;
	v = strtoul(s, &end, 0);
	if (*end || errno || !v || v > n->max_lid || n->lid_node[v] < 0)
		return -1;
	*node = n->lid_node[v];
	*port = n->lid_port[v];
	*lid = (uint16_t)v;
	return 0;
}

static void lid_range(const struct net *n, int node, int port, char *buf, size_t len)
{
	net_lid_t base = net_lid_of(n, node, port);

	snprintf(buf, len, "%u-%u", base, base + net_lid_count(n, node, port) - 1);
}

static uint64_t node_guid(const struct net_node *nd)
{
	return nd->guid ? nd->guid : nd->ports[0].guid;
}

static uint64_t hop_guid(const struct net_node *nd, int port)
{
	/* ibtracert names a switch by its port 0 GUID, a CA port by its own */
	if (nd->type == NET_SWITCH)
		return nd->ports[0].guid ? nd->ports[0].guid : nd->guid;
	return nd->ports[port].guid;
}

static const char *kind(const struct net_node *nd)
{
	return nd->type == NET_SWITCH ? "switch" : nd->type == NET_ROUTER ? "router" : "ca";
}

int cli_topo_path(int argc, char **argv)
{
	struct route_args a = { 0 };
	int src, sport, dst, dport, cur, port, rc = parse(argc, argv, &a, true);
	net_lid_t slid, dlid;
	char note[300], r[32];
	struct net n;

	if (rc >= 0)
		return rc;
	if (load_and_route(&a, &n, note, sizeof(note)))
		return 1;
	if (find_end(&n, a.pos[0], &src, &sport, &slid)) {
		fprintf(stderr, "ibfab topo path: no node or LID '%s' in %s (or it has no cabled port)\n",
			a.pos[0], a.file);
		net_free(&n);
		return 1;
	}
	if (find_end(&n, a.pos[1], &dst, &dport, &dlid)) {
		fprintf(stderr, "ibfab topo path: no node or LID '%s' in %s (or it has no cabled port)\n",
			a.pos[1], a.file);
		net_free(&n);
		return 1;
	}
	lid_range(&n, src, sport, r, sizeof(r));
	printf("From %s {0x%016" PRIx64 "} portnum %d lid %s \"%s\"\n",
	       kind(&n.nodes[src]), node_guid(&n.nodes[src]), sport, r, n.nodes[src].desc);
	cur = src;
	port = sport;
	rc = 1;
	/* a loop-free route visits each node once */
	for (int steps = 0; steps <= n.nnodes; steps++) {
		const struct net_node *nd = &n.nodes[cur];
		const struct net_port *pp;
		const struct net_node *nx;

		if (nd->type == NET_SWITCH) {
			unsigned out = nd->lft && dlid < nd->lft_len ? nd->lft[dlid] : SM_NO_ROUTE;

			if (out == 0) {
				rc = cur == dst ? 0 : 1;
				if (rc)
					fprintf(stderr, "ibfab topo path: \"%s\" takes LID %u for its own\n",
						nd->desc, dlid);
				break;
			}
			if (out > (unsigned)nd->nports) {
				fprintf(stderr, "ibfab topo path: \"%s\" has no route to LID %u\n",
					nd->desc, dlid);
				break;
			}
			port = (int)out;
		} else if (cur != src) {
			rc = cur == dst && port == dport ? 0 : 1;
			if (rc)
				fprintf(stderr, "ibfab topo path: LID %u delivered to \"%s\" port %d\n",
					dlid, nd->desc, port);
			break;
		}
		pp = &nd->ports[port];
		if (pp->remote_node < 0) {
			fprintf(stderr, "ibfab topo path: \"%s\" port %d is not cabled\n",
				nd->desc, port);
			break;
		}
		nx = &n.nodes[pp->remote_node];
		lid_range(&n, pp->remote_node, nx->type == NET_SWITCH ? 0 : pp->remote_port,
			  r, sizeof(r));
		printf("[%d] -> %s port {0x%016" PRIx64 "}[%d] lid %s \"%s\"\n", port, kind(nx),
		       hop_guid(nx, pp->remote_port), pp->remote_port, r, nx->desc);
		cur = pp->remote_node;
		port = pp->remote_port;
	}
	if (rc == 0) {
		lid_range(&n, dst, dport, r, sizeof(r));
		printf("To %s {0x%016" PRIx64 "} portnum %d lid %s \"%s\"\n",
		       kind(&n.nodes[dst]), node_guid(&n.nodes[dst]), dport, r,
		       n.nodes[dst].desc);
	}
	net_free(&n);
	if (fflush(stdout))
		return 1;
	return rc;
}
