/* SPDX-License-Identifier: MIT */
/*
 * cli_topo_check.c - `ibfab topo check` (and `topo health`, check with
 * --health) and `ibfab topo dot`.
 *
 * check: what a subnet manager's operator looks at after a sweep - node and
 * cable counts, rates, LIDs - then what the routing does with them: the
 * hop count of every (CA, CA) path, how evenly the paths spread over the
 * links between switches (OpenSM's "paths per port" balance), and whether
 * the channel dependency graph of the LFTs has a cycle (Dally & Seitz 1987;
 * models/sm/sm_cdg.c), in which case a credit loop can freeze the fabric.
 * The exit status is the verdict, so scripts can gate on it.
 *
 * dot: the fabric as a Graphviz graph with the switch tiers ranked (hosts at
 * the bottom, each switch at its BFS distance from the nearest host, which
 * puts leaves, then spines, then cores on their own rows in a fat tree),
 * and with a run's result (`ibfab run --json`), each cable coloured and
 * thickened by its utilisation - busy time over simulated time, the busier
 * direction - so hot spots show. The JSON is read by a small, non-recursive
 * tokenizer (jsmn's approach): only sim_time_ps and the ports array matter.
 *
 * Left out: per-VL CDGs for SL-aware engines (every pair on VL 0 until an
 * engine assigns SLs), multicast, and the link-level view of LMC paths
 * (every LID of a CA port counts as a destination in the CDG; the hop and
 * balance figures use each host's base LID, as the traffic does).
 */
#include <errno.h>
#include <stdarg.h>
#include <spawn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "models/link/link.h"
#include "models/net/net.h"
#include "models/sm/sm.h"
#include "models/sm/sm_cdg.h"
#include "models/sm/sm_mp.h"
#include "sim/sim.h"
#include "sim/sim_diag.h"
#include "sim/sim_json.h"
#include "tools/cli_dot.h"
#include "tools/cli_out.h"
#include "tools/cli_topo.h"
#include "topologies/lft.h"
#include "topologies/topo.h"
#include "traces/trace_spec.h"

extern char **environ;

/* check --json: where each section writes its figures too, NULL without
 * (the sections print and write in one pass, so the two never disagree) */
static struct sim_json *J;

/* ---- options ------------------------------------------------------------- */

struct topo_opts {
	const char *cmd;	/* "check" or "dot" */
	const char *file;
	const char *routing;	/* NULL: minhop */
	const char *roots;
	const char *lft;	/* check: the tables a subnet manager dumped, not an engine's */
	bool health;		/* check --health: the findings against the fabric's pattern */
	bool ar;		/* check --ar: adaptive routing's groups in the CDG */
	const char *json;	/* check --json FILE: the same figures as JSON */
	const char *run;	/* dot: RESULT.json */
	const char *out;	/* dot: -o OUT.dot */
	const char *render;	/* dot: svg | png */
	char note[256];		/* what the routing engine chose ("roots spine0") */
	/* check: --set what-ifs (switches and cables added or cut, one cable's
	 * rate), and the parameters health's short runs use */
	const char *sets[FAB_LINK_SETS + FAB_SWITCH_ADDS];
	int nsets;
	struct fab_params fp;
};

static void usage_check(FILE *out)
{
	fputs("usage: ibfab topo check FILE [--routing NAME] [--roots LIST] [--lft DUMP] [--health]\n"
	      "                        [--ar] [--json FILE] [--set KEY=VALUE]...\n"
	      "\n"
	      "Route FILE (ibnetdiscover or ibsim net format, '-' for stdin) and print:\n"
	      "  - nodes by type, cables by rate, the LIDs assigned;\n"
	      "  - the hop-count histogram over every ordered (host, host) pair;\n"
	      "  - routing balance: paths per link direction between switches\n"
	      "    (min, mean, max) and the five busiest;\n"
	      "  - the deadlock verdict: whether the channel dependency graph of the\n"
	      "    routing (per VL; every pair on VL 0) has a cycle, and one cycle as\n"
	      "    the switch ports it crosses, \"sw0[3] -> sw1[3] -> ... -> sw0[3]\".\n"
	      "    See docs/deadlock.md.\n"
	      "\n"
	      "  - with --health, what differs from the fabric's own pattern: cables\n"
	      "    slower or narrower than the others of their tier (a 1x among 4x,\n"
	      "    EDR among HDR), switches with fewer cables up or down than the\n"
	      "    others of their level (a missing cable), switches the routing\n"
	      "    sends no path through, and host pairs without a route.\n"
	      "\n"
	      "  --routing NAME   routing engine (default minhop; see 'ibfab topo route --help')\n"
	      "  --roots LIST     updn/ftree roots: comma list of node names or GUIDs\n"
	      "  --lft DUMP       the forwarding tables a subnet manager dumped (OpenSM's\n"
	      "                   ibroute / dump_lfts format) instead of a routing engine\n"
	      "  --health         add the health findings (above)\n"
	      "  --json FILE      the same figures as JSON (nodes, cables, lids, hops,\n"
	      "                   balance, health {findings bisection expected}, deadlock)\n"
	      "  --ar             the deadlock verdict with adaptive routing's groups too\n"
	      "                   (what ib.ar=on lets a switch choose: docs/routing.md)\n"
	      "  --set KEY=VALUE  a what-if before routing, as 'ibfab run --set' takes it:\n"
	      "                   'link[NODE/PORT].state=down' cuts a cable, '.peer=N/P'\n"
	      "                   adds one, '.speed=EDR' or '.width=1x' changes one,\n"
	      "                   'switch[NAME].ports=N' adds a switch; other keys go to\n"
	      "                   --health's short runs (repeatable)\n"
	      "\n"
	      "Exit status: 0 the CDG is acyclic (no credit loop is possible);\n"
	      "1 the CDG has a cycle (the routing can deadlock: the cycle is printed and\n"
	      "one line on stderr says so), or FILE could not be loaded or routed;\n"
	      "2 bad usage.\n", out);
}

static void usage_dot(FILE *out)
{
	fputs("usage: ibfab topo dot FILE [--routing NAME] [--roots LIST] [--run RESULT.json]\n"
	      "                          [-o OUT.dot] [--render svg|png]\n"
	      "\n"
	      "Write FILE as a Graphviz graph (DOT) to OUT.dot or stdout: hosts on the\n"
	      "bottom row, switches ranked by their distance from the hosts (leaves,\n"
	      "then spines, ...), nodes labelled with their descriptions, cables with\n"
	      "their rates. The output depends only on the inputs.\n"
	      "\n"
	      "  --routing NAME   also route (default: don't) and put each cable's path\n"
	      "                   counts, both directions, in its tooltip\n"
	      "  --roots LIST     updn/ftree roots\n"
	      "  --run FILE       the JSON of 'ibfab run --json FILE' on the same\n"
	      "                   topology: colour and thicken each cable by its\n"
	      "                   utilisation, busy_ps / sim_time_ps of its busier\n"
	      "                   direction, with a legend (blue idle ... red saturated)\n"
	      "  -o OUT.dot       write there instead of stdout: a regular file is\n"
	      "                   replaced atomically (mode kept), a symlink followed,\n"
	      "                   a device or FIFO written in place; '-' is stdout\n"
	      "  --render FMT     also run Graphviz: dot -TFMT OUT.dot -o OUT.FMT\n"
	      "                   (needs -o and the 'dot' program)\n"
	      "\n"
	      "Example:\n"
	      "  ibfab run --topo ft.topo --traffic incast:dst=h0,size=1MiB --json r.json\n"
	      "  ibfab topo dot ft.topo --run r.json -o ft.dot --render svg\n"
	      "\n"
	      "Exit status: 0 done, 1 bad input or a failed render, 2 bad usage.\n", out);
}

static int usage_err(const struct topo_opts *o, const char *fmt, const char *arg)
{
	fprintf(stderr, "ibfab topo %s: ", o->cmd);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	(!strcmp(o->cmd, "dot") ? usage_dot : usage_check)(stderr);
	return 2;
}

/* Returns -1 to go on, else the exit code. */
static int parse_opts(int argc, char **argv, bool dot, struct topo_opts *o)
{
	static const struct {
		const char *name;
		bool dot_only;
		size_t off;
	} opts[] = {
		{ "--routing", false, offsetof(struct topo_opts, routing) },
		{ "--roots", false, offsetof(struct topo_opts, roots) },
		{ "--lft", false, offsetof(struct topo_opts, lft) },
		{ "--json", false, offsetof(struct topo_opts, json) },
		{ "--run", true, offsetof(struct topo_opts, run) },
		{ "-o", true, offsetof(struct topo_opts, out) },
		{ "--render", true, offsetof(struct topo_opts, render) },
	};

	memset(o, 0, sizeof(*o));
	o->cmd = argv[0];
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL;
		unsigned k;
		size_t nl;

		if (cli_is_help(a)) {
			(dot ? usage_dot : usage_check)(stdout);
			return 0;
		}
		if (!dot && !strcmp(a, "--health")) {
			o->health = true;
			continue;
		}
		if (!dot && !strcmp(a, "--ar")) {
			o->ar = true;
			continue;
		}
		if (!dot && (!strcmp(a, "--set") || !strncmp(a, "--set=", 6))) {
			const char *v = a[5] == '=' ? a + 6 : i + 1 < argc ? argv[++i] : NULL;

			if (!v || !*v)
				return usage_err(o, "'--set' needs KEY=VALUE%s", "");
			if (o->nsets == (int)SIM_ARRAY_SIZE(o->sets))
				return usage_err(o, "too many --set%s", "");
			o->sets[o->nsets++] = v;
			continue;
		}
		if (a[0] != '-' || !a[1]) {
			if (o->file)
				return usage_err(o, "unexpected argument '%s' (one FILE only)", a);
			o->file = a;
			continue;
		}
		for (k = 0; k < SIM_ARRAY_SIZE(opts); k++) {
			nl = strlen(opts[k].name);
			if (!strncmp(a, opts[k].name, nl) && (!a[nl] || a[nl] == '='))
				break;
		}
		if (k == SIM_ARRAY_SIZE(opts) || (opts[k].dot_only && !dot))
			return usage_err(o, "unknown option '%s'", a);
		val = a[nl] == '=' ? a + nl + 1 : (i + 1 < argc ? argv[++i] : NULL);
		if (!val || !*val)
			return usage_err(o, "'%s' needs a value", opts[k].name);
		const char **slot = (const char **)((char *)o + opts[k].off);

		if (*slot)
			return usage_err(o, "'%s' given twice", opts[k].name);
		*slot = val;
	}
	if (!o->file)
		return usage_err(o, "missing FILE%s", "");
	if (o->lft && (o->routing || o->roots))
		return usage_err(o, "--lft (the dumped tables) excludes --routing and --roots%s", "");
	if (o->routing && !sm_engine_find(o->routing)) {
		fprintf(stderr, "ibfab topo %s: unknown routing engine '%s' (known:", o->cmd,
			o->routing);
		for (int i = 0; sm_engines[i]; i++)
			fprintf(stderr, "%s %s", i ? "," : "", sm_engines[i]->name);
		fprintf(stderr, ")\n");
		return 2;
	}
	if (o->out && !strcmp(o->out, "-"))
		o->out = NULL;	/* "-o -": stdout */
	if (o->render && strcmp(o->render, "svg") && strcmp(o->render, "png"))
		return usage_err(o, "--render wants svg or png, got '%s'", o->render);
	if (o->render && (!o->out || !strcmp(o->out, "-")))
		return usage_err(o, "--render needs -o OUT.dot (the image goes beside it)%s", "");
	return -1;
}

/* What routed the fabric, for the report: "minhop routing", or "the tables
 * of DUMP" (--lft). */
static const char *routes_of(const struct topo_opts *o)
{
	static char buf[600];

	if (o->lft)
		snprintf(buf, sizeof(buf), "the tables of %s", o->lft);
	else
		snprintf(buf, sizeof(buf), "%s routing", o->routing ? o->routing : "minhop");
	return buf;
}

static int load_and_route(struct topo_opts *o, struct net *n, bool route)
{
	struct sim_diag d;
	struct sm_opts so = { .roots = o->roots, .note = o->note,
			      .note_len = sizeof(o->note) };

	fab_params_default(&o->fp);
	for (int i = 0; i < o->nsets; i++)
		if (fab_params_set(&o->fp, o->sets[i], &d))
			return cli_topo_report(&d);
	if (cli_topo_load(o->file, n, &d))
		return cli_topo_report(&d);
	/* the what-ifs, as `ibfab run --set` makes them before routing */
	if (fab_link_sets_cut(n, &o->fp, &d) || fab_link_sets_rates(n, &o->fp, &d)) {
		net_free(n);
		return cli_topo_report(&d);
	}
	if (route && o->lft) {
		if (lft_load(n, o->lft, &d)) {
			net_free(n);
			return cli_topo_report(&d);
		}
		return 0;
	}
	if (route ? sm_route(n, o->routing, &so, &d) :
		    (!n->lid_node && net_assign_lids(n, &d))) {
		net_free(n);
		return cli_topo_report(&d);
	}
	return 0;
}

/* ---- paths: hop counts and link load ------------------------------------- */

struct paths {
	uint32_t *pe_base;	/* node -> first port end */
	uint64_t *load;		/* paths leaving by each port end */
	uint64_t *hist;		/* pairs by links crossed */
	int maxhops;
	uint64_t pairs, unreachable;
};

static void paths_free(struct paths *p)
{
	free(p->pe_base);
	free(p->load);
	free(p->hist);
}

/* Follow the LFTs for every ordered (host, host) pair. -1: out of memory. */
static int paths_count(const struct net *n, struct paths *p)
{
	int nh = net_nhosts(n), max = n->nnodes + 2;
	uint32_t npe = 0;
	int *nodes = malloc(sizeof(int) * max), *ports = malloc(sizeof(int) * max);

	memset(p, 0, sizeof(*p));
	p->pe_base = malloc(sizeof(*p->pe_base) * ((size_t)n->nnodes + 1));
	p->hist = calloc((size_t)max + 1, sizeof(*p->hist));
	if (!nodes || !ports || !p->pe_base || !p->hist)
		goto nomem;
	for (int i = 0; i < n->nnodes; i++) {
		p->pe_base[i] = npe;
		npe += (uint32_t)n->nodes[i].nports + 1;
	}
	p->pe_base[n->nnodes] = npe;
	p->load = calloc(npe ? npe : 1, sizeof(*p->load));
	if (!p->load)
		goto nomem;
	for (int a = 0; a < nh; a++) {
		int src = net_host(n, a);

		for (int b = 0; b < nh; b++) {
			int dst = net_host(n, b), k;

			if (a == b)
				continue;
			p->pairs++;
			k = sm_path(n, src, net_lid_of(n, dst, net_first_port(n, dst)),
				    nodes, ports, max);
			if (k < 2) {
				p->unreachable++;
				continue;
			}
			p->hist[k - 1]++;
			if (k - 1 > p->maxhops)
				p->maxhops = k - 1;
			for (int i = 0; i + 1 < k; i++)
				p->load[p->pe_base[nodes[i]] + ports[i]]++;
		}
	}
	free(nodes);
	free(ports);
	return 0;
nomem:
	free(nodes);
	free(ports);
	paths_free(p);
	return -1;
}

/* ---- check --------------------------------------------------------------- */

struct rate_count {
	char rate[32];
	int n;
};

static int cmp_rate(const void *a, const void *b)
{
	return strcmp(((const struct rate_count *)a)->rate, ((const struct rate_count *)b)->rate);
}

static void print_inventory(const struct net *n)
{
	struct rate_count rc[16];
	int nrc = 0, other = 0, lmc = 0, nsw_lid = 0, nca_lid = 0;
	char rate[32];

	int nsw = net_count(n, NET_SWITCH), nca = net_count(n, NET_CA);
	int nrt = net_count(n, NET_ROUTER), nh = net_nhosts(n);

	printf("nodes        %d: %d switch%s, %d CA%s, %d router%s; %d host%s (CAs with a cable)\n",
	       n->nnodes, nsw, nsw == 1 ? "" : "es", nca, nca == 1 ? "" : "s",
	       nrt, nrt == 1 ? "" : "s", nh, nh == 1 ? "" : "s");
	for (int i = 0; i < n->nnodes; i++)
		for (int p = 1; p <= n->nodes[i].nports; p++) {
			int k;

			if (!cli_dot_cable_end(n, i, p))
				continue;
			topo_rate_str(n, i, p, rate, sizeof(rate));
			for (k = 0; k < nrc && strcmp(rc[k].rate, rate); k++)
				;
			if (k == nrc && nrc == (int)SIM_ARRAY_SIZE(rc)) {
				other++;
				continue;
			}
			if (k == nrc) {
				snprintf(rc[nrc].rate, sizeof(rc[nrc].rate), "%s", rate);
				rc[nrc++].n = 0;
			}
			rc[k].n++;
		}
	qsort(rc, (size_t)nrc, sizeof(rc[0]), cmp_rate);
	printf("cables       %d:", net_nlinks(n));
	for (int k = 0; k < nrc; k++)
		printf("%s %d x %s", k ? "," : "", rc[k].n,
		       strcmp(rc[k].rate, "-") ? rc[k].rate : "rate not stated (the preset's applies)");
	if (other)
		printf(", %d at other rates", other);
	printf("\n");
	for (uint32_t l = 1; l <= n->max_lid; l++) {
		int node = n->lid_node[l];

		if (node < 0)
			continue;
		if (n->nodes[node].type == NET_SWITCH)
			nsw_lid++;
		else
			nca_lid++;
		if (n->nodes[node].lmc > lmc)
			lmc = n->nodes[node].lmc;
	}
	printf("LIDs         %d assigned, 1..%u: %d switches, %d CA/router ports; LMC %d\n",
	       nsw_lid + nca_lid, n->max_lid, nsw_lid, nca_lid, lmc);
	if (!J)
		return;
	sim_json_key(J, "nodes");
	sim_json_obj_begin(J);
	sim_json_ki64(J, "total", n->nnodes);
	sim_json_ki64(J, "switches", nsw);
	sim_json_ki64(J, "cas", nca);
	sim_json_ki64(J, "routers", nrt);
	sim_json_ki64(J, "hosts", nh);
	sim_json_obj_end(J);
	sim_json_key(J, "cables");
	sim_json_obj_begin(J);
	sim_json_ki64(J, "total", net_nlinks(n));
	for (int k = 0; k < nrc; k++)
		sim_json_ki64(J, strcmp(rc[k].rate, "-") ? rc[k].rate : "unstated", rc[k].n);
	sim_json_obj_end(J);
	sim_json_key(J, "lids");
	sim_json_obj_begin(J);
	sim_json_ki64(J, "assigned", nsw_lid + nca_lid);
	sim_json_ki64(J, "max", n->max_lid);
	sim_json_ki64(J, "lmc", lmc);
	sim_json_obj_end(J);
}

static void print_hops(const struct paths *p)
{
	uint64_t most = 1, sum = 0, routed = p->pairs - p->unreachable;

	printf("\nhop count    links crossed, host to host, over %llu ordered pairs\n",
	       (unsigned long long)p->pairs);
	for (int h = 1; h <= p->maxhops; h++)
		if (p->hist[h] > most)
			most = p->hist[h];
	int minh = 1;

	while (minh < p->maxhops && !p->hist[minh])
		minh++;
	for (int h = minh; h <= p->maxhops; h++) {
		int bar = (int)((p->hist[h] * 40 + most - 1) / most);

		sum += p->hist[h] * (uint64_t)h;
		printf("  %3d hop%s %10llu  %.*s\n", h, h == 1 ? " " : "s", (unsigned long long)p->hist[h],
		       p->hist[h] ? bar : 0, "########################################");
	}
	if (routed)
		printf("  mean %.2f hops", (double)sum / (double)routed);
	else
		printf("  no routed pair");
	if (p->unreachable)
		printf("; %llu pairs UNREACHABLE (no route, or the LFTs loop)",
		       (unsigned long long)p->unreachable);
	printf("\n");
	if (!J)
		return;
	sim_json_key(J, "hops");
	sim_json_obj_begin(J);
	sim_json_ku64(J, "pairs", p->pairs);
	sim_json_ku64(J, "unreachable", p->unreachable);
	sim_json_kdouble(J, "mean", routed ? (double)sum / (double)routed : 0.0);
	sim_json_key(J, "histogram");
	sim_json_arr_begin(J);
	for (int h = minh; h <= p->maxhops; h++) {
		sim_json_obj_begin(J);
		sim_json_ki64(J, "hops", h);
		sim_json_ku64(J, "pairs", p->hist[h]);
		sim_json_obj_end(J);
	}
	sim_json_arr_end(J);
	sim_json_obj_end(J);
}

struct hot {
	int node, port;
	uint64_t load;
};

static void print_balance(const struct net *n, const struct paths *p)
{
	struct hot top[5];
	int ntop = 0, nlinks = 0;
	uint64_t lo = UINT64_MAX, hi = 0, sum = 0;

	for (int i = 0; i < n->nnodes; i++) {
		if (n->nodes[i].type != NET_SWITCH)
			continue;
		for (int q = 1; q <= n->nodes[i].nports; q++) {
			int r = n->nodes[i].ports[q].remote_node;
			uint64_t l = p->load[p->pe_base[i] + q];
			int k;

			if (r < 0 || n->nodes[r].type != NET_SWITCH)
				continue;
			nlinks++;
			sum += l;
			lo = l < lo ? l : lo;
			hi = l > hi ? l : hi;
			/* keep the five busiest, ties in port order */
			for (k = ntop; k > 0 && top[k - 1].load < l; k--)
				if (k < 5)
					top[k] = top[k - 1];
			if (k < 5) {
				top[k] = (struct hot){ i, q, l };
				if (ntop < 5)
					ntop++;
			}
		}
	}
	printf("\nbalance      paths per link direction between switches\n");
	if (J) {
		sim_json_key(J, "balance");
		sim_json_obj_begin(J);
		sim_json_ki64(J, "directions", nlinks);
		sim_json_ku64(J, "min", nlinks ? lo : 0);
		sim_json_kdouble(J, "mean", nlinks ? (double)sum / nlinks : 0.0);
		sim_json_ku64(J, "max", hi);
		sim_json_obj_end(J);
	}
	if (!nlinks) {
		printf("  no cable joins two switches\n");
		return;
	}
	printf("  %d directions: min %llu, mean %.1f, max %llu (max/mean %.2f)\n", nlinks,
	       (unsigned long long)lo, (double)sum / nlinks, (unsigned long long)hi,
	       sum ? (double)hi * nlinks / (double)sum : 0.0);
	for (int k = 0; k < ntop; k++) {
		const struct net_port *pp = &n->nodes[top[k].node].ports[top[k].port];
		char a[300];

		snprintf(a, sizeof(a), "%s[%d] -> %s[%d]", n->nodes[top[k].node].desc,
			 top[k].port, n->nodes[pp->remote_node].desc, pp->remote_port);
		printf("  %-40s %llu paths\n", a, (unsigned long long)top[k].load);
	}
}

/* ---- health: what differs from the fabric's own pattern ------------------ */


/* The most common value among v[0..k): ties go to the larger (the
 * fabric as built, where a fault only removes or slows). */
static int mode_of(const int *v, int k)
{
	int best = 0, bestn = 0;

	for (int i = 0; i < k; i++) {
		int c = 0;

		for (int j = 0; j < k; j++)
			c += v[j] == v[i];
		if (c > bestn || (c == bestn && v[i] > best)) {
			best = v[i];
			bestn = c;
		}
	}
	return best;
}

static const char *level_name(int level, int maxlevel)
{
	return level == 1 ? "leaf" : level == maxlevel ? "top switch" : "switch of its level";
}

/*
 * Bisection: the max flow, in Gb/s of data, from the first half of the
 * hosts (file order) to the second half, every cable a capacity its rate
 * gives in each direction (4xHDR where the file states none), by Dinic's
 * algorithm; against the full-bisection ideal, half the hosts at their
 * own links' rates. -1 when out of memory.
 */
struct arc {
	int to, next;
	double cap;
};

static double cable_gbps(const struct net *n, int i, int q)
{
	const struct net_port *a = &n->nodes[i].ports[q];
	const struct net_port *b = &n->nodes[a->remote_node].ports[a->remote_port];
	struct link_rate r = { a->lanes ? a->lanes : b->lanes ? b->lanes : 4,
			       a->speed != LINK_SPEED_NONE ? a->speed :
			       b->speed != LINK_SPEED_NONE ? b->speed : LINK_HDR };

	return link_data_rate_bps(r) / 1e9;
}

static double bisection_gbps(const struct net *n, double *ideal)
{
	int nn = n->nnodes + 2, src = n->nnodes, dst = n->nnodes + 1, na = 0, cap = 16;
	int nh = net_nhosts(n), *head = malloc(sizeof(int) * (size_t)nn);
	int *lvl = malloc(sizeof(int) * (size_t)nn), *it = malloc(sizeof(int) * (size_t)nn);
	int *q = malloc(sizeof(int) * (size_t)nn), *stk = malloc(sizeof(int) * (size_t)nn);
	struct arc *a = malloc(sizeof(*a) * (size_t)cap);
	double flow = 0;

	*ideal = 0;
	if (!head || !lvl || !it || !q || !stk || !a)
		goto nomem;
	for (int i = 0; i < nn; i++)
		head[i] = -1;
#define ADD(u, v, c) do {							\
		if (na + 2 > cap) {						\
			struct arc *x_ = realloc(a, sizeof(*a) * (size_t)(cap *= 2)); \
			if (!x_)						\
				goto nomem;					\
			a = x_;							\
		}								\
		a[na] = (struct arc){ v, head[u], c }; head[u] = na++;		\
		a[na] = (struct arc){ u, head[v], 0 }; head[v] = na++;		\
	} while (0)
	for (int i = 0; i < n->nnodes; i++)
		for (int qq = 1; qq <= n->nodes[i].nports; qq++)
			if (cli_dot_cable_end(n, i, qq)) {
				int r = n->nodes[i].ports[qq].remote_node;
				double c = cable_gbps(n, i, qq);

				ADD(i, r, c);
				ADD(r, i, c);
			}
	for (int h = 0; h < nh; h++) {
		int node = net_host(n, h), port = net_first_port(n, node);

		if (h < nh / 2) {
			ADD(src, node, 1e18);
			*ideal += port > 0 ? cable_gbps(n, node, port) : 0;
		} else if (h >= nh - nh / 2) {
			ADD(node, dst, 1e18);
		}
	}
#undef ADD
	for (;;) {	/* Dinic: levels by breadth-first search, then blocking flows */
		int qh = 0, qt = 0;

		for (int i = 0; i < nn; i++)
			lvl[i] = -1;
		lvl[src] = 0;
		q[qt++] = src;
		while (qh < qt) {
			int u = q[qh++];

			for (int e = head[u]; e >= 0; e = a[e].next)
				if (a[e].cap > 1e-9 && lvl[a[e].to] < 0) {
					lvl[a[e].to] = lvl[u] + 1;
					q[qt++] = a[e].to;
				}
		}
		if (lvl[dst] < 0)
			break;
		for (int i = 0; i < nn; i++)
			it[i] = head[i];
		for (;;) {	/* augmenting paths along the levels, iteratively */
			int depth = 0, u = src;
			double f = 1e18;

			while (u != dst) {
				int e = it[u];

				while (e >= 0 && !(a[e].cap > 1e-9 && lvl[a[e].to] == lvl[u] + 1))
					e = it[u] = a[e].next;
				if (e < 0) {	/* dead end: retreat */
					lvl[u] = -1;
					if (!depth)
						break;
					u = a[stk[--depth] ^ 1].to;
					continue;
				}
				stk[depth++] = e;
				u = a[e].to;
			}
			if (u != dst)
				break;
			for (int k = 0; k < depth; k++)
				f = a[stk[k]].cap < f ? a[stk[k]].cap : f;
			for (int k = 0; k < depth; k++) {
				a[stk[k]].cap -= f;
				a[stk[k] ^ 1].cap += f;
			}
			flow += f;
		}
	}
	free(head), free(lvl), free(it), free(q), free(stk), free(a);
	return flow;
nomem:
	free(head), free(lvl), free(it), free(q), free(stk), free(a);
	return -1;
}

/*
 * The findings a cluster engineer looks for first, each against the
 * fabric's own majority rather than a model of what it should be: a cable
 * whose rate differs from the most common rate of cables between the same
 * two levels (a 1x among 4x, EDR among HDR); a switch with fewer cables
 * up or down than most switches of its level (a missing cable); a switch
 * above the leaves that the routing sends no host-to-host path through
 * (updn can leave a spine idle); host pairs with no route. Levels are hop
 * distances from the hosts (leaves 1). Returns the number of findings.
 */
/*
 * A short simulation of `spec` on the routed fabric (the default preset,
 * the file's rates): bytes each host sent over the time, GB/s, or -1 when
 * it could not run (err says why).
 */
static double short_run(const struct net *n, const struct fab_params *params, const char *spec,
			char *err, size_t errlen)
{
	struct fab_params fp = *params;
	struct fab_msgs m = { 0 };
	struct fab_totals t;
	struct sim_diag d;
	struct fab *f = NULL;
	double gbs = -1;
	int hosts = net_nhosts(n);

	if (trace_spec_parse(spec, n, 1, &m, &d) || !(f = fab_create(n, &fp, &m, 1, &d)) ||
	    fab_run(f, &d)) {
		snprintf(err, errlen, "%s", d.msg);
		goto out;
	}
	fab_totals(f, &t);
	if (t.msgs_done == t.msgs_total && t.end_ps && hosts)
		gbs = (double)t.payload_delivered / hosts / ((double)t.end_ps * 1e-12) / 1e9;
	else
		snprintf(err, errlen, "%llu of %llu messages delivered",
			 (unsigned long long)t.msgs_done, (unsigned long long)t.msgs_total);
out:
	if (f)
		fab_destroy(f);
	fab_msgs_free(&m);
	return gbs;
}

/*
 * What the fabric should give the collectives a job runs on it, by two
 * short simulations with its own routes: an all-to-all (nccl-tests' bus
 * bandwidth is the bytes a rank sends to the others over the time, and a
 * host sends 1 MiB in all, or 4 KiB to each other host at least) and a
 * shift by one host (a ring allreduce's steps: its bus bandwidth is the
 * rate each host sends to the next, 4 MiB here). Up to 512 hosts: beyond,
 * the all-to-all alone is 2^18 messages and more (run it with ibfab run).
 */
static void print_expected(const struct net *n, const struct fab_params *fp)
{
	int hosts = net_nhosts(n);
	char spec[96], err[sizeof(((struct sim_diag *)0)->msg)];
	double line = 0, a2a, ring;

	if (hosts < 2)
		return;
	if (hosts > 512) {
		printf("  expected     %d hosts: run the all-to-all and allreduce yourself "
		       "(ibfab run --traffic alltoall:size=..., a collective --trace)\n", hosts);
		return;
	}
	for (int i = 0; i < n->nnodes; i++)	/* the hosts' own links, the fastest */
		if (n->nodes[i].type != NET_SWITCH)
			for (int q = 1; q <= n->nodes[i].nports; q++)
				if (n->nodes[i].ports[q].remote_node >= 0 && cable_gbps(n, i, q) > line)
					line = cable_gbps(n, i, q);
	uint64_t per = ((1u << 20) / (uint64_t)(hosts - 1) + 4095) / 4096 * 4096;

	snprintf(spec, sizeof(spec), "alltoall:size=%lluKiB", (unsigned long long)(per >> 10));
	a2a = short_run(n, fp, spec, err, sizeof(err));
	if (a2a < 0)
		printf("  expected     all-to-all: %s\n", err);
	else
		printf("  expected     all-to-all busbw %.1f GB/s per host (%s), %.2f of a host link\n",
		       a2a, spec, line ? a2a * 8 / line : 0.0);
	if (J) {
		sim_json_key(J, "expected");
		sim_json_obj_begin(J);
		sim_json_kstr(J, "alltoall_spec", spec);
		sim_json_kdouble(J, "alltoall_busbw_gbs", a2a);	/* -1: it could not run */
	}
	ring = short_run(n, fp, "shift:size=4MiB,k=1", err, sizeof(err));
	if (ring < 0)
		printf("  expected     allreduce: %s\n", err);
	else
		printf("  expected     ring allreduce busbw %.1f GB/s (shift:size=4MiB,k=1: each host to the next), %.2f of a host link\n",
		       ring, line ? ring * 8 / line : 0.0);
	if (J) {
		sim_json_kdouble(J, "allreduce_busbw_gbs", ring);
		sim_json_kdouble(J, "host_link_gbps", line);
		sim_json_obj_end(J);
	}
}

/* One health finding: a line of the summary, an entry of the JSON. */
static void __attribute__((format(printf, 3, 4))) finding(int *found, const char *kind,
							   const char *fmt, ...)
{
	char text[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	printf("  %-13s%s\n", kind, text);
	(*found)++;
	if (J) {
		sim_json_obj_begin(J);
		sim_json_kstr(J, "kind", kind);
		sim_json_kstr(J, "text", text);
		sim_json_obj_end(J);
	}
}

static int print_health(const struct net *n, const struct paths *p, const char *routing,
			const struct fab_params *fp)
{
	int maxlevel, found = 0, *lv = cli_dot_levels(n, &maxlevel);
	char rate[32], want[32];

	printf("\nhealth       against the fabric's own pattern\n");
	if (J) {
		sim_json_key(J, "health");
		sim_json_obj_begin(J);
		sim_json_key(J, "findings");
		sim_json_arr_begin(J);
	}
	if (!lv) {
		printf("  out of memory\n");
		return 0;
	}
	/* rates, per pair of levels: the majority's, and the others */
	for (int lo = 0; lo < maxlevel; lo++) {
		struct rate_count rc[16];
		int nrc = 0;

		for (int i = 0; i < n->nnodes; i++)
			for (int q = 1; q <= n->nodes[i].nports; q++) {
				int r = n->nodes[i].ports[q].remote_node, k;

				if (!cli_dot_cable_end(n, i, q) ||
				    (lv[i] < lv[r] ? lv[i] : lv[r]) != lo || abs(lv[i] - lv[r]) != 1)
					continue;
				topo_rate_str(n, i, q, rate, sizeof(rate));
				for (k = 0; k < nrc && strcmp(rc[k].rate, rate); k++)
					;
				if (k == nrc && nrc < (int)SIM_ARRAY_SIZE(rc)) {
					snprintf(rc[nrc].rate, sizeof(rc[nrc].rate), "%s", rate);
					rc[nrc++].n = 0;
				}
				if (k < nrc)
					rc[k].n++;
			}
		if (nrc < 2)
			continue;
		int top = 0;

		for (int k = 1; k < nrc; k++)
			if (rc[k].n > rc[top].n)
				top = k;
		snprintf(want, sizeof(want), "%s", rc[top].rate);
		for (int i = 0; i < n->nnodes; i++)
			for (int q = 1; q <= n->nodes[i].nports; q++) {
				const struct net_port *pp = &n->nodes[i].ports[q];
				int r = pp->remote_node;

				if (!cli_dot_cable_end(n, i, q) ||
				    (lv[i] < lv[r] ? lv[i] : lv[r]) != lo || abs(lv[i] - lv[r]) != 1)
					continue;
				topo_rate_str(n, i, q, rate, sizeof(rate));
				if (!strcmp(rate, want) || !strcmp(rate, "-"))
					continue;
				finding(&found, "slow cable", "%s[%d] <-> %s[%d] runs %s; %d of the %s cables between levels %d and %d run %s",
					n->nodes[i].desc, q, n->nodes[r].desc, pp->remote_port, rate,
					rc[top].n, lo ? "switch" : "host", lo, lo + 1, want);
			}
	}
	/* cables up and down, per level of switches */
	for (int l = 1; l <= maxlevel; l++) {
		int k = 0, *up = malloc(sizeof(int) * (size_t)n->nnodes),
		    *down = malloc(sizeof(int) * (size_t)n->nnodes), *who = malloc(sizeof(int) * (size_t)n->nnodes);

		if (!up || !down || !who) {
			free(up), free(down), free(who);
			break;
		}
		for (int i = 0; i < n->nnodes; i++) {
			if (lv[i] != l || n->nodes[i].type != NET_SWITCH)
				continue;
			up[k] = down[k] = 0;
			for (int q = 1; q <= n->nodes[i].nports; q++) {
				int r = n->nodes[i].ports[q].remote_node;

				if (r >= 0 && lv[r] == l + 1)
					up[k]++;
				else if (r >= 0 && lv[r] == l - 1)
					down[k]++;
			}
			who[k++] = i;
		}
		int mu = mode_of(up, k), md = mode_of(down, k);

		for (int j = 0; j < k && k > 1; j++) {
			if (l < maxlevel && up[j] < mu) {
				finding(&found, "missing", "%s (%s) has %d cable%s up, most %s have %d",
					n->nodes[who[j]].desc, level_name(l, maxlevel), up[j],
					up[j] == 1 ? "" : "s", l == 1 ? "leaves" : "switches of its level", mu);
			}
			if (l > 1 && down[j] < md) {
				finding(&found, "missing", "%s (%s) has %d cable%s down, most of its level have %d",
					n->nodes[who[j]].desc, level_name(l, maxlevel), down[j],
					down[j] == 1 ? "" : "s", md);
			}
		}
		free(up), free(down), free(who);
	}
	/* switches above the leaves that carry no path */
	for (int i = 0; i < n->nnodes; i++) {
		uint64_t carried = 0;

		if (n->nodes[i].type != NET_SWITCH || lv[i] < 2)
			continue;
		for (int q = 1; q <= n->nodes[i].nports; q++)
			carried += p->load[p->pe_base[i] + q];
		if (!carried && p->pairs) {
			finding(&found, "idle", "%s carries none of the %llu host-to-host paths (%s)",
				n->nodes[i].desc, (unsigned long long)p->pairs, routing);
		}
	}
	if (p->unreachable) {
		finding(&found, "unreachable", "%llu of the %llu host pairs have no route",
			(unsigned long long)p->unreachable, (unsigned long long)p->pairs);
	}
	double ideal, bis = bisection_gbps(n, &ideal);

	if (J)
		sim_json_arr_end(J);
	if (bis >= 0 && ideal > 0) {
		printf("  bisection    %.0f Gb/s from the first half of the hosts to the second, %.2f of full bisection (%.0f Gb/s)\n",
		       bis, bis / ideal, ideal);
		if (J) {
			sim_json_key(J, "bisection");
			sim_json_obj_begin(J);
			sim_json_kdouble(J, "gbps", bis);
			sim_json_kdouble(J, "full_gbps", ideal);
			sim_json_kdouble(J, "ratio", bis / ideal);
			sim_json_obj_end(J);
		}
	}
	fflush(stdout);
	print_expected(n, fp);
	if (!found)
		printf("  no finding: every cable runs at its tier's rate, every switch has its level's cables, every switch above the leaves carries paths, every host pair has a route\n");
	else
		printf("  %d finding%s\n", found, found == 1 ? "" : "s");
	if (J)
		sim_json_obj_end(J);
	free(lv);
	return found;
}

/* --ar: the subnet manager's AR groups for every switch (sm_mp.h). */
static struct sm_mp_sw *ar_groups(const struct net *n, struct sm_mp **mp)
{
	struct sm_mp_sw *sw = calloc((size_t)n->nnodes + 1, sizeof(*sw));

	*mp = sm_mp_build(n);
	for (int i = 0; sw && *mp && i < n->nnodes; i++)
		if (n->nodes[i].type == NET_SWITCH && sm_mp_sw_init(&sw[i], *mp, n, i)) {
			free(sw);
			sw = NULL;
		}
	return sw;
}

static void ar_groups_free(const struct net *n, struct sm_mp *mp, struct sm_mp_sw *sw)
{
	for (int i = 0; sw && i < n->nnodes; i++)
		sm_mp_sw_fini(&sw[i]);
	free(sw);
	sm_mp_free(mp);
}

/* Returns 0 acyclic, 1 cycle, -1 error (reported). */
static int print_cdg(const struct net *n, const struct topo_opts *o)
{
	struct sm_cdg g;
	struct sm_cdg_cycle c;
	struct sim_diag d;
	struct sm_cdg_opts co = { 0 };
	struct sm_mp *mp = NULL;
	struct sm_mp_sw *sw = NULL;
	int rc;

	if (o->ar && !(sw = ar_groups(n, &mp))) {
		ar_groups_free(n, mp, sw);
		sim_diag_set(&d, NULL, 0, 0, "adaptive routing's groups: out of memory");
		cli_topo_report(&d);
		return -1;
	}
	co.mp = mp;
	co.mp_sw = sw;
	rc = sm_cdg_build(&g, n, &co, &d);
	ar_groups_free(n, mp, sw);
	if (rc) {
		cli_topo_report(&d);
		return -1;
	}
	rc = sm_cdg_find_cycle(&g, &c, &d);
	if (rc < 0) {
		sm_cdg_free(&g);
		cli_topo_report(&d);
		return -1;
	}
	printf("\ndeadlock     channel dependency graph of %s, all pairs on VL 0:\n", routes_of(o));
	printf("  %u channels carry traffic, %llu dependencies, %llu (CA port, LID) pairs",
	       g.nused, (unsigned long long)g.nedges, (unsigned long long)g.pairs);
	if (g.pairs_unrouted || g.pairs_looping)
		printf(", %llu without a route, %llu in a routing loop (first: %s)",
		       (unsigned long long)g.pairs_unrouted, (unsigned long long)g.pairs_looping,
		       g.first_bad);
	printf("\n");
	if (o->ar)
		printf("  with adaptive routing's groups (up then down; docs/routing.md): %llu\n"
		       "  (switch, LID) pairs with a choice of ports\n",
		       (unsigned long long)g.ar_choices);
	if (J) {
		sim_json_key(J, "deadlock");
		sim_json_obj_begin(J);
		sim_json_kbool(J, "acyclic", rc == 0);
		sim_json_ku64(J, "channels", g.nused);
		sim_json_ku64(J, "dependencies", g.nedges);
		sim_json_ku64(J, "pairs", g.pairs);
		sim_json_ku64(J, "pairs_unrouted", g.pairs_unrouted);
		sim_json_ku64(J, "pairs_looping", g.pairs_looping);
		if (o->ar)
			sim_json_ku64(J, "ar_choices", g.ar_choices);
		if (rc == 1) {
			int need = sm_cdg_cycle_str(&g, &c, NULL, 0);
			char *cs = malloc((size_t)need + 1);

			if (cs) {
				sm_cdg_cycle_str(&g, &c, cs, (size_t)need + 1);
				sim_json_kstr(J, "cycle", cs);
				free(cs);
			}
		}
		sim_json_obj_end(J);
	}
	if (rc == 0) {
		printf("  acyclic: no credit loop can form with this routing%s\n",
		       o->ar ? ", adaptive or not" : "");
	} else {
		int need = sm_cdg_cycle_str(&g, &c, NULL, 0);
		char *s = malloc((size_t)need + 1);

		printf("  CYCLE on VL %d: %u channels in %u cyclic component%s; one cycle of %u:\n",
		       c.vl, c.nchans, c.nsccs, c.nsccs == 1 ? "" : "s", c.len);
		if (s) {
			sm_cdg_cycle_str(&g, &c, s, (size_t)need + 1);
			printf("  %s\n", s);
			free(s);
		}
		printf("  under load these buffers can fill and wait for each other for ever\n"
		       "  (a credit loop): use a deadlock-free routing (updn, ftree, dor on a\n"
		       "  mesh) or more VLs; see docs/deadlock.md\n");
	}
	sm_cdg_cycle_free(&c);
	sm_cdg_free(&g);
	return rc;
}

int cli_topo_check(int argc, char **argv)
{
	struct topo_opts o;
	struct paths p;
	struct net n;
	int rc = parse_opts(argc, argv, false, &o), verdict;

	if (rc >= 0)
		return rc;
	if (!strcmp(o.cmd, "health"))
		o.health = true;	/* `topo health` is check --health */
	rc = load_and_route(&o, &n, true);
	if (rc)
		return rc;
	if (o.lft || !strcmp(o.note, o.routing ? o.routing : "minhop"))
		o.note[0] = '\0';	/* says nothing more than the name */
	struct cli_out jout = { 0 };
	struct sim_json jw;
	struct sim_diag jd;

	if (o.json) {
		if (cli_out_open(&jout, o.json, false, &jd)) {
			cli_topo_report(&jd);
			net_free(&n);
			return 1;
		}
		sim_json_init(&jw, jout.f, 1);
		J = &jw;
		sim_json_obj_begin(J);
		sim_json_kstr(J, "file", o.file);
		sim_json_kstr(J, "routing", o.lft ? routes_of(&o) : o.routing ? o.routing : "minhop");
	}
	printf("%s, routed with %s%s%s%s\n", o.file,
	       o.lft ? routes_of(&o) : o.routing ? o.routing : "minhop",
	       o.note[0] ? " (" : "", o.note, o.note[0] ? ")" : "");
	print_inventory(&n);
	if (paths_count(&n, &p)) {
		net_free(&n);
		fprintf(stderr, "ibfab topo check: out of memory\n");
		return 1;
	}
	print_hops(&p);
	print_balance(&n, &p);
	if (o.health)
		print_health(&n, &p, routes_of(&o), &o.fp);
	paths_free(&p);
	fflush(stdout);
	verdict = print_cdg(&n, &o);
	net_free(&n);
	if (J) {
		sim_json_obj_end(J);
		J = NULL;
		if (sim_json_finish(&jw) || cli_out_close(&jout, &jd) || cli_out_commit(&jout, &jd)) {
			if (!jd.msg[0])
				sim_diag_set(&jd, o.json, 0, 0, "could not write the JSON");
			cli_topo_report(&jd);
			cli_out_free(&jout);
			return 1;
		}
		cli_out_free(&jout);
	}
	if (fflush(stdout))
		return 1;
	if (verdict == 1)
		fprintf(stderr, "ibfab topo check: %s: the channel dependency graph of %s has a cycle: the fabric can deadlock under load\n",
			o.file, routes_of(&o));
	return verdict ? 1 : 0;
}

/* ---- a small JSON tokenizer ---------------------------------------------- */

enum jtype { JT_OBJ, JT_ARR, JT_STR, JT_PRIM };

struct jtok {
	enum jtype type;
	uint32_t start, len;	/* text (strings: between the quotes, escapes kept) */
	uint32_t next;		/* the token after this value and all it holds */
	uint32_t size;		/* containers: members (object: keys) */
};

struct json {
	const char *text;
	size_t textlen;
	struct jtok *t;
	uint32_t n, cap;
};

#define JSON_MAX_DEPTH 256

/* true, false, null, or a number as JSON writes it (RFC 8259 §6). */
static bool jprim_ok(const char *s, size_t n)
{
	size_t i = 0;

	if ((n == 4 && !memcmp(s, "true", 4)) || (n == 5 && !memcmp(s, "false", 5)) ||
	    (n == 4 && !memcmp(s, "null", 4)))
		return true;
	if (i < n && s[i] == '-')
		i++;
	if (i < n && s[i] == '0')
		i++;
	else if (i < n && s[i] >= '1' && s[i] <= '9')
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++;
	else
		return false;
	if (i < n && s[i] == '.') {
		if (++i >= n || s[i] < '0' || s[i] > '9')
			return false;
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		if (++i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		if (i >= n || s[i] < '0' || s[i] > '9')
			return false;
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++;
	}
	return i == n;
}

static int jerr(const struct json *j, size_t at, const char *what, char *err, size_t elen)
{
	int line = 1, col = 1;

	for (size_t i = 0; i < at && i < j->textlen; i++) {
		if (j->text[i] == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
	}
	snprintf(err, elen, "%d:%d: %s", line, col, what);
	return -1;
}

static int jpush(struct json *j, enum jtype type, size_t start)
{
	if (j->n == j->cap) {
		uint32_t cap = j->cap ? j->cap * 2 : 1024;
		struct jtok *t = realloc(j->t, cap * sizeof(*t));

		if (!t || cap < j->cap)
			return -1;
		j->t = t;
		j->cap = cap;
	}
	j->t[j->n] = (struct jtok){ type, (uint32_t)start, 0, j->n + 1, 0 };
	return (int)j->n++;
}

/*
 * Tokenize a whole document, checking its grammar, with an explicit stack
 * of open containers (depth limited, no recursion). 0, or -1 with err set.
 */
static int json_parse(struct json *j, char *err, size_t elen)
{
	uint32_t stack[JSON_MAX_DEPTH];
	int depth = 0;
	/* what may come next: a value, a key, ',' or the end of a container, ':' */
	enum { W_VALUE, W_KEY, W_COMMA, W_COLON } want = W_VALUE;
	bool first = true, done = false;
	const char *s = j->text;
	size_t i = 0, n = j->textlen;

	if (n >= UINT32_MAX)
		return jerr(j, 0, "file too large", err, elen);
	while (i < n) {
		char ch = s[i];
		int k;

		if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
			i++;
			continue;
		}
		if (done)
			return jerr(j, i, "text after the end of the document", err, elen);
		if (want == W_COLON) {
			if (ch != ':')
				return jerr(j, i, "expected ':'", err, elen);
			want = W_VALUE;
			i++;
			continue;
		}
		if (ch == '}' || ch == ']') {
			bool obj = ch == '}';

			if (!depth || (j->t[stack[depth - 1]].type == JT_OBJ) != obj ||
			    (want == W_VALUE && !first) || (want == W_KEY && !first))
				return jerr(j, i, "unexpected close bracket", err, elen);
			j->t[stack[--depth]].next = j->n;
			j->t[stack[depth]].len = (uint32_t)(i + 1 - j->t[stack[depth]].start);
			i++;
			want = W_COMMA;
			first = false;
			if (!depth)
				done = true;
			continue;
		}
		if (ch == ',') {
			if (want != W_COMMA || !depth)
				return jerr(j, i, "unexpected ','", err, elen);
			want = j->t[stack[depth - 1]].type == JT_OBJ ? W_KEY : W_VALUE;
			first = false;
			i++;
			continue;
		}
		if (want == W_COMMA)
			return jerr(j, i, "expected ',' or a close bracket", err, elen);
		if (want == W_KEY && ch != '"')
			return jerr(j, i, "expected a key", err, elen);
		if (depth && (want == W_KEY || j->t[stack[depth - 1]].type == JT_ARR))
			j->t[stack[depth - 1]].size++;
		if (ch == '{' || ch == '[') {
			if (depth == JSON_MAX_DEPTH)
				return jerr(j, i, "nested too deeply", err, elen);
			k = jpush(j, ch == '{' ? JT_OBJ : JT_ARR, i);
			if (k < 0)
				return jerr(j, i, "out of memory", err, elen);
			stack[depth++] = (uint32_t)k;
			want = ch == '{' ? W_KEY : W_VALUE;
			first = true;
			i++;
			continue;
		}
		if (ch == '"') {
			size_t e = i + 1;

			while (e < n && s[e] != '"') {
				if ((unsigned char)s[e] < 0x20)
					return jerr(j, e, "control character in a string", err, elen);
				e += s[e] == '\\' ? 2 : 1;
			}
			if (e >= n)
				return jerr(j, i, "unterminated string", err, elen);
			k = jpush(j, JT_STR, i + 1);
			if (k < 0)
				return jerr(j, i, "out of memory", err, elen);
			j->t[k].len = (uint32_t)(e - i - 1);
			want = want == W_KEY ? W_COLON : W_COMMA;
			i = e + 1;
		} else {
			size_t e = i;

			while (e < n && strchr("0123456789+-.eEtruefalsn", s[e]) && s[e])
				e++;
			if (e == i || !jprim_ok(s + i, e - i))
				return jerr(j, i, "expected a value", err, elen);
			k = jpush(j, JT_PRIM, i);
			if (k < 0)
				return jerr(j, i, "out of memory", err, elen);
			j->t[k].len = (uint32_t)(e - i);
			want = W_COMMA;
			i = e;
		}
		first = false;
		if (!depth)
			done = true;
	}
	if (!done || depth)
		return jerr(j, n, "unexpected end of file", err, elen);
	return 0;
}

static bool jkey_is(const struct json *j, uint32_t k, const char *key)
{
	return j->t[k].type == JT_STR && j->t[k].len == strlen(key) &&
	       !memcmp(j->text + j->t[k].start, key, j->t[k].len);
}

/* The value of `key` in object `obj`, or 0 (no token 0 is ever a value). */
static uint32_t jget(const struct json *j, uint32_t obj, const char *key)
{
	uint32_t k = obj + 1;

	if (j->t[obj].type != JT_OBJ)
		return 0;
	for (uint32_t m = 0; m < j->t[obj].size; m++) {
		if (jkey_is(j, k, key))
			return k + 1;
		k = j->t[k + 1].next;
	}
	return 0;
}

/* A non-negative integer value (JSON number without sign, fraction or exponent). */
static int jget_u64(const struct json *j, uint32_t obj, const char *key, uint64_t *v)
{
	uint32_t k = jget(j, obj, key);
	uint64_t x = 0;

	if (!k || j->t[k].type != JT_PRIM || !j->t[k].len)
		return -1;
	for (uint32_t i = 0; i < j->t[k].len; i++) {
		char c = j->text[j->t[k].start + i];

		if (c < '0' || c > '9' || x > (UINT64_MAX - 9) / 10)
			return -1;
		x = x * 10 + (uint64_t)(c - '0');
	}
	*v = x;
	return 0;
}

static void put_utf8(char *o, size_t *n, uint32_t cp)
{
	if (cp < 0x80) {
		o[(*n)++] = (char)cp;
	} else if (cp < 0x800) {
		o[(*n)++] = (char)(0xc0 | cp >> 6);
		o[(*n)++] = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		o[(*n)++] = (char)(0xe0 | cp >> 12);
		o[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[(*n)++] = (char)(0x80 | (cp & 0x3f));
	} else {
		o[(*n)++] = (char)(0xf0 | cp >> 18);
		o[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
		o[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[(*n)++] = (char)(0x80 | (cp & 0x3f));
	}
}

static int hex4(const char *s, uint32_t *v)
{
	*v = 0;
	for (int i = 0; i < 4; i++) {
		char c = s[i];

		*v <<= 4;
		if (c >= '0' && c <= '9')
			*v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			*v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			*v |= (uint32_t)(c - 'A' + 10);
		else
			return -1;
	}
	return 0;
}

/* A string value, unescaped into buf (NUL-terminated). -1: missing or bad. */
static int jget_str(const struct json *j, uint32_t obj, const char *key, char *buf,
		    size_t len)
{
	uint32_t k = jget(j, obj, key);
	const char *s;
	size_t n = 0;

	if (!k || j->t[k].type != JT_STR)
		return -1;
	s = j->text + j->t[k].start;
	for (uint32_t i = 0; i < j->t[k].len; i++) {
		uint32_t cp;

		if (n + 5 >= len)
			return -1;
		if (s[i] != '\\') {
			buf[n++] = s[i];
			continue;
		}
		if (++i >= j->t[k].len)
			return -1;
		switch (s[i]) {
		case '"': case '\\': case '/': buf[n++] = s[i]; break;
		case 'b': buf[n++] = '\b'; break;
		case 'f': buf[n++] = '\f'; break;
		case 'n': buf[n++] = '\n'; break;
		case 'r': buf[n++] = '\r'; break;
		case 't': buf[n++] = '\t'; break;
		case 'u':
			if (i + 4 >= j->t[k].len || hex4(s + i + 1, &cp))
				return -1;
			i += 4;
			if (cp >= 0xd800 && cp < 0xdc00 && i + 6 < j->t[k].len &&
			    s[i + 1] == '\\' && s[i + 2] == 'u') {
				uint32_t lo;

				if (hex4(s + i + 3, &lo) || lo < 0xdc00 || lo > 0xdfff)
					return -1;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				i += 6;
			}
			put_utf8(buf, &n, cp);
			break;
		default:
			return -1;
		}
	}
	buf[n] = '\0';
	return 0;
}

/* ---- dot ----------------------------------------------------------------- */

/* Read a whole file; NULL with errno set. */
static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 65536, n = 0;
	char *buf = NULL, *nb;

	if (!f)
		return NULL;
	for (;;) {
		nb = realloc(buf, cap + 1);
		if (!nb) {
			free(buf);
			fclose(f);
			errno = ENOMEM;
			return NULL;
		}
		buf = nb;
		n += fread(buf + n, 1, cap - n, f);
		if (n < cap)
			break;
		cap *= 2;
	}
	if (ferror(f)) {
		free(buf);
		fclose(f);
		errno = EIO;
		return NULL;
	}
	fclose(f);
	buf[n] = '\0';
	*len = n;
	return buf;
}

/*
 * Utilisation of every port end from a run's JSON: busy_ps / sim_time_ps.
 * Ports are matched by (node_id, port) and their cable checked, so a result
 * of another topology is refused. 0, or 1 with a message on stderr.
 */
static int read_run(const struct net *n, const char *path, const uint32_t *pe_base,
		    double *util)
{
	struct json j = { 0 };
	char err[256], id[512], peer[512];
	uint64_t sim, busy, port, peer_port;
	uint32_t ports;
	int rc = 1;

	j.text = read_file(path, &j.textlen);
	if (!j.text) {
		fprintf(stderr, "ibfab topo dot: %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (memchr(j.text, '\0', j.textlen)) {
		fprintf(stderr, "ibfab topo dot: %s: not a JSON file (binary data)\n", path);
		goto out;
	}
	if (json_parse(&j, err, sizeof(err))) {
		fprintf(stderr, "ibfab topo dot: %s:%s\n", path, err);
		goto out;
	}
	if (j.t[0].type != JT_OBJ || jget_u64(&j, 0, "sim_time_ps", &sim)) {
		fprintf(stderr, "ibfab topo dot: %s: no \"sim_time_ps\" (is this the JSON of 'ibfab run --json'?)\n",
			path);
		goto out;
	}
	ports = jget(&j, 0, "ports");
	if (!ports || j.t[ports].type != JT_ARR) {
		fprintf(stderr, "ibfab topo dot: %s: no \"ports\" array (is this the JSON of 'ibfab run --json'?)\n",
			path);
		goto out;
	}
	if (!sim) {
		fprintf(stderr, "ibfab topo dot: %s: the run simulated no time (sim_time_ps 0): nothing to colour\n",
			path);
		goto out;
	}
	for (uint32_t m = 0, k = ports + 1; m < j.t[ports].size; m++, k = j.t[k].next) {
		int node, pn, ppn;
		const struct net_port *pp;

		if (jget_str(&j, k, "node_id", id, sizeof(id)) ||
		    jget_str(&j, k, "peer_id", peer, sizeof(peer)) ||
		    jget_u64(&j, k, "port", &port) || jget_u64(&j, k, "peer_port", &peer_port) ||
		    jget_u64(&j, k, "busy_ps", &busy)) {
			fprintf(stderr, "ibfab topo dot: %s: ports[%u] lacks node_id, port, peer_id, peer_port or busy_ps\n",
				path, m);
			goto out;
		}
		node = net_find(n, id);
		pn = (int)(port < 255 ? port : 255);
		ppn = (int)(peer_port < 255 ? peer_port : 255);
		if (node < 0 || pn < 1 || pn > n->nodes[node].nports) {
			fprintf(stderr, "ibfab topo dot: %s: port %s[%llu] is not in the topology (was the run made on another one?)\n",
				path, id, (unsigned long long)port);
			goto out;
		}
		pp = &n->nodes[node].ports[pn];
		if (pp->remote_node < 0 || strcmp(n->nodes[pp->remote_node].id, peer) ||
		    pp->remote_port != ppn) {
			fprintf(stderr, "ibfab topo dot: %s: %s[%d] is cabled to %s[%llu] in the run but not in the topology\n",
				path, id, pn, peer, (unsigned long long)peer_port);
			goto out;
		}
		util[pe_base[node] + pn] = busy >= sim ? 1.0 : (double)busy / (double)sim;
	}
	rc = 0;
out:
	free((char *)j.text);
	free(j.t);
	return rc;
}

static void write_dot(FILE *out, const struct net *n, const struct topo_opts *o,
		      const int *lv, int maxlevel, const struct paths *p,
		      const double *util)
{
	char rate[32], tip[1400];

	fprintf(out, "// ibfab topo dot: ");
	for (const char *c = o->file; *c; c++)
		fputc(*c == '\n' ? ' ' : *c, out);
	fprintf(out, "%s%s%s\n", o->routing ? " --routing " : "", o->routing ? o->routing : "",
		util ? " --run" : "");
	fprintf(out, "graph fabric {\n"
		"\tgraph [rankdir=BT, ranksep=1.5, nodesep=0.1, outputorder=edgesfirst, fontname=\"Helvetica\", label=");
	cli_dot_str(out, o->file);
	fprintf(out, ", labelloc=t];\n"
		"\tnode [fontname=\"Helvetica\", fontsize=10, style=filled, fillcolor=white];\n"
		"\tedge [fontname=\"Helvetica\", fontsize=7, color=\"#555555\"];\n");
	for (int l = 0; l <= maxlevel; l++) {
		if (l)
			fprintf(out, "\t{ rank=same; // switch tier %d\n", l);
		else
			fprintf(out, "\t{ rank=same; // hosts\n");
		for (int i = 0; i < n->nnodes; i++) {
			const struct net_node *nd = &n->nodes[i];

			if (lv[i] != l)
				continue;
			cli_dot_node(out, i, nd->type, nd->desc, nd->id, false);
		}
		fprintf(out, "\t}\n");
	}
	/* Cables, lower tier first so Graphviz ranks the tail below the head. */
	for (int i = 0; i < n->nnodes; i++)
		for (int q = 1; q <= n->nodes[i].nports; q++) {
			const struct net_port *pp = &n->nodes[i].ports[q];
			int a = i, pa = q, b = pp->remote_node, pb = pp->remote_port;

			if (!cli_dot_cable_end(n, i, q))
				continue;
			if (lv[b] < lv[a]) {
				a = b;
				pa = pb;
				b = i;
				pb = q;
			}
			topo_rate_str(n, a, pa, rate, sizeof(rate));
			snprintf(tip, sizeof(tip), "%s[%d] -- %s[%d]%s%s", n->nodes[a].desc, pa,
				 n->nodes[b].desc, pb, strcmp(rate, "-") ? " " : "",
				 strcmp(rate, "-") ? rate : "");
			fprintf(out, "\tn%d -- n%d [", a, b);
			if (util) {
				double ua = util[p->pe_base[a] + pa], ub = util[p->pe_base[b] + pb];
				double u = ua > ub ? ua : ub;
				size_t l = strlen(tip);

				fprintf(out, "label=\"%s\\n%.0f%%\", color=\"%s\", penwidth=%.2f, ",
					strcmp(rate, "-") ? rate : "", u * 100, cli_dot_util_colour(u), 1 + 7 * u);
				snprintf(tip + l, sizeof(tip) - l, "; busy %.1f%% up, %.1f%% down",
					 ua * 100, ub * 100);
			} else {
				fprintf(out, "label=\"%s\", ", strcmp(rate, "-") ? rate : "");
			}
			if (p->load) {
				size_t l = strlen(tip);

				snprintf(tip + l, sizeof(tip) - l, "; paths %llu up, %llu down",
					 (unsigned long long)p->load[p->pe_base[a] + pa],
					 (unsigned long long)p->load[p->pe_base[b] + pb]);
			}
			fprintf(out, "tooltip=");
			cli_dot_str(out, tip);
			fprintf(out, "];\n");
		}
	if (util) {
		/* One table node: a cluster of nodes would be spread over the ranks. */
		fprintf(out, "\tlegend [shape=plaintext, fontsize=9, label=<<table border=\"0\" cellborder=\"1\" cellspacing=\"0\" cellpadding=\"4\">"
			"<tr><td colspan=\"%u\">link utilisation: busy / simulated time, busier direction</td></tr><tr>",
			(unsigned)CLI_DOT_NSCALE);
		for (unsigned k = 0; k < CLI_DOT_NSCALE; k++)
			fprintf(out, "<td bgcolor=\"%s\">%s</td>", cli_dot_scale[k].colour,
				cli_dot_scale[k].label);
		fprintf(out, "</tr></table>>];\n");
	}
	fprintf(out, "}\n");
}

/* OUT.dot -> OUT.svg (or OUT.dot.svg when OUT has no .dot suffix). */
static char *image_path(const char *out, const char *fmt)
{
	size_t l = strlen(out);
	char *s = malloc(l + strlen(fmt) + 2);

	if (!s)
		return NULL;
	if (l > 4 && !strcmp(out + l - 4, ".dot"))
		l -= 4;
	memcpy(s, out, l);
	s[l] = '.';
	strcpy(s + l + 1, fmt);
	return s;
}

static int dot_fail(struct sim_diag *d)
{
	char buf[1100];

	sim_diag_format(d, buf, sizeof(buf));
	fprintf(stderr, "ibfab topo dot: %s\n", buf);
	return 1;
}

/* Run Graphviz into the image's cli_out file (staged, or the device or FIFO
 * itself), put it in place on success. 0 or 1. */
static int render(const char *dotfile, const char *fmt)
{
	char *img = image_path(dotfile, fmt), tflag[16];
	struct cli_out o;
	struct sim_diag d;
	pid_t pid;
	int st, rc = 1, e;

	if (!img) {
		fprintf(stderr, "ibfab topo dot: out of memory\n");
		return 1;
	}
	if (cli_out_open(&o, img, false, &d)) {
		rc = dot_fail(&d);
		goto out;
	}
	/* Graphviz writes the file by name: ours is closed first, unwritten */
	if (cli_out_close(&o, &d)) {
		rc = dot_fail(&d);
		goto out;
	}
	snprintf(tflag, sizeof(tflag), "-T%s", fmt);
	char *args[] = { (char *)"dot", tflag, (char *)"-o", (char *)cli_out_file(&o),
			 (char *)dotfile, NULL };

	e = posix_spawnp(&pid, "dot", NULL, NULL, args, environ);
	if (e) {
		fprintf(stderr, "ibfab topo dot: cannot run Graphviz 'dot' (%s): install graphviz (apt-get install graphviz) or render %s yourself\n",
			strerror(e), dotfile);
		goto out;
	}
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "ibfab topo dot: waiting for Graphviz: %s\n", strerror(errno));
			goto out;
		}
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 127) {
		fprintf(stderr, "ibfab topo dot: Graphviz 'dot' is not installed: install graphviz (apt-get install graphviz) or render %s yourself\n",
			dotfile);
	} else if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "ibfab topo dot: Graphviz 'dot -T%s' failed on %s\n", fmt, dotfile);
	} else if (cli_out_commit(&o, &d)) {
		rc = dot_fail(&d);
	} else {
		rc = 0;
	}
out:
	cli_out_free(&o);
	free(img);
	return rc;
}

int cli_topo_dot(int argc, char **argv)
{
	struct topo_opts o;
	struct paths p = { 0 };
	struct net n;
	double *util = NULL;
	int *lv = NULL, maxlevel, rc = parse_opts(argc, argv, true, &o);
	struct cli_out outf = { 0 };
	struct sim_diag d;
	FILE *out = stdout;

	if (rc >= 0)
		return rc;
	rc = load_and_route(&o, &n, o.routing != NULL);
	if (rc)
		return rc;
	rc = 1;
	lv = cli_dot_levels(&n, &maxlevel);
	if (!lv)
		goto nomem;
	if (o.routing) {
		if (paths_count(&n, &p))
			goto nomem;
	} else {
		uint32_t npe = 0;

		/* port-end numbering for --run without the path counts */
		p.pe_base = malloc(sizeof(*p.pe_base) * ((size_t)n.nnodes + 1));
		if (!p.pe_base)
			goto nomem;
		for (int i = 0; i < n.nnodes; i++) {
			p.pe_base[i] = npe;
			npe += (uint32_t)n.nodes[i].nports + 1;
		}
		p.pe_base[n.nnodes] = npe;
	}
	if (o.run) {
		util = calloc(p.pe_base[n.nnodes] + 1, sizeof(*util));
		if (!util)
			goto nomem;
		if (read_run(&n, o.run, p.pe_base, util))
			goto done;
	}
	if (o.out) {
		if (cli_out_open(&outf, o.out, true, &d)) {
			dot_fail(&d);
			goto done;
		}
		out = outf.f;
		if (o.render && !outf.tmp) {
			/* Graphviz reads the file back: a FIFO or a device cannot be */
			sim_diag_set(&d, o.out, 0, 0, "--render needs -o to name a regular file");
			dot_fail(&d);
			goto done;
		}
	}
	write_dot(out, &n, &o, lv, maxlevel, &p, util);
	if (o.out) {
		out = NULL;
		if (cli_out_close(&outf, &d) || cli_out_commit(&outf, &d)) {
			dot_fail(&d);
			goto done;
		}
		if (o.render && render(o.out, o.render))
			goto done;
	} else if (fflush(stdout)) {
		goto done;
	}
	rc = 0;
	goto done;
nomem:
	fprintf(stderr, "ibfab topo dot: out of memory\n");
done:
	cli_out_free(&outf);
	free(util);
	free(lv);
	paths_free(&p);
	net_free(&n);
	return rc;
}
