/* SPDX-License-Identifier: MIT */
/*
 * cli_compare.c - `ibfab compare`: one workload, several fabrics, one table.
 *
 * The question it answers: on this topology and this workload,
 * what does lossless InfiniBand buy over RoCE, and RDMA over TCP? Each
 * fabric runs through exactly the pipeline of `ibfab run` (cli_run.h):
 * the same parameters with `fabric=NAME` put first (so every --set still
 * applies on top), the same topology and routes, the same traffic or trace,
 * the same seed. Only the link layer and transport differ (docs/architecture.md, "Fabrics").
 * Each fabric's run may be cut into partitions (--threads N, mpirun: as
 * `ibfab run`), with the same results; rank 0 writes the outputs.
 * The runs are sequential and independent; each one's figures are copied
 * out (totals, message completion times, per-collective times, the data
 * for the charts) and its fabric freed before the next starts, so memory
 * stays that of one run.
 *
 * Figures: completion time is the simulated time when the last message (or
 * trace step) finished; throughput the payload delivered over that time;
 * message completion times are end - start of each delivered message (for
 * a trace: of each lowered transfer); the counters are fab_totals()'s. The
 * chart's throughput over time comes from a sampler of our own
 * (tools/cli_tp.c), not the fabric's: that one stops when the fabric's
 * message list is done, and a trace replay's is empty. Its intervals are about
 * 1/200 of the longest run, or equal on a log time axis when the runs'
 * lengths differ more than 20-fold (bins_make).
 *
 * Outputs follow `ibfab run`: the table on stdout (stderr with --json -),
 * --json, --csv and the SVG written under temporary names and renamed only
 * when every run succeeded, so an error leaves nothing behind.
 */
#define _GNU_SOURCE	/* open_memstream */
#include "tools/cli_compare.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/fabric/fab.h"
#include "sim/sim_diag.h"
#include "sim/sim_log.h"
#include "sim/sim_parse.h"
#include "sim/sim_stats.h"
#include "sim/sim_json.h"
#include "tools/cli_help.h"
#include "tools/cli_html.h"
#include "tools/cli_report.h"
#include "tools/cli_run.h"
#include "tools/cli_tp.h"
#include "tools/plot_svg.h"
#include "traces/coll.h"
#include "traces/trace.h"
#include "traces/trace_fmt.h"
#include "traces/trace_replay.h"

#define NFABRICS 4		/* enum fab_fabric */
#define DEFAULT_SEED 1
#define DEFAULT_PLOT "compare.svg"

/*
 * The built-in workload (no --trace, no --traffic): a 64 MiB ring allreduce
 * over every rank, and at the same time an 8-to-1 incast onto rank 0 from
 * the last 8 ranks - on the built-in fat tree h8..h15, the two far leaves,
 * so the incast crosses the spines and meets the ring's own h15 -> h0 hop
 * at h0's leaf port. Written in the native trace format (async sends start
 * at time 0 beside the collective) so one replay carries both, and the
 * allreduce's time is reported as a collective.
 *
 * Incast size: 8 x 4 MiB = 32 MiB arriving at up to 8 x 200 Gb/s into one
 * 200 Gb/s port must queue about 7/8 of it, 28 MiB, while one queue of a
 * leaf may hold about half its shared buffer (8 ports x eth.buffer_per_port
 * 1 MiB, dynamic threshold alpha 1): 4 MiB. roce-lossy and tcp drop, roce
 * pauses, IB stalls on credits. 4 MiB is the smallest size (of 512 KiB,
 * 1, 2, 4 MiB) at which TCP's losses end in its 200 ms RTO, the incast
 * tail the literature describes; measurements in docs/compare.md.
 */
#define BUILTIN_RANKS 16
#define BUILTIN_SENDERS 8
#define BUILTIN_AR_BYTES "64MiB"
#define BUILTIN_INCAST_BYTES "4MiB"
#define BUILTIN_NAME "built-in compare workload"

struct cmp_opts {
	struct cli_run_opts run;	/* shared by every fabric's run */
	int fabric[NFABRICS];
	int nfabrics;
	const char *fabrics_arg;
	const char *json;
	const char *csv;
	const char *plot;
	bool no_plot;
	const char *html;		/* --html FILE: the visual report (cli_html.h) */
	bool reproducible;
	bool quiet;
	int nsets;			/* the user's --set, at run.sets[1..] */
	uint32_t threads;		/* --threads N: partitions on threads (0, 1: none) */
};

struct cmp_coll {
	char label[64];
	const char *collective;	/* static names */
	const char *algorithm;
	uint64_t bytes;
	uint32_t ranks;
	sim_time_t start_ps, end_ps;
	double algbw_gbps, busbw_gbps;
};

/* What one fabric's run measured. */
struct cmp_result {
	int fabric;
	const char *lb;			/* how its switches choose paths (cli_lb_name) */
	struct fab_totals t;
	bool complete;
	sim_time_t end_ps;
	double gbps;
	uint64_t msgs_total, msgs_done;
	uint64_t c_min, c_p50, c_p99, c_max;
	uint64_t *mct;			/* sorted completion times (ps), msgs_done of them */
	sim_time_t *tp_t;		/* the throughput curve: cumulative bytes into */
	uint64_t *tp_bytes;		/* hosts at times tp_t (cli_tp.h) */
	size_t tp_n;
	uint64_t cpu_ps;		/* host CPU time on communication, all hosts */
	int nhosts;
	int nactive;			/* hosts that posted, completed or received */
	uint64_t events;
	double wall_s;
	struct cmp_coll *coll;		/* trace collectives, in trace order */
	size_t ncoll;
	bool has_sends;			/* trace point-to-point sends: when the last ended */
	sim_time_t sends_end_ps;
	/* --html: the cables' series and the timeline's bars */
	struct cli_html_links *hl;
	struct cli_html_op *ops;
	size_t nops;
};

struct cmp_ctx {
	struct cmp_opts *o;
	struct sim_diag d;
	struct cmp_result res[NFABRICS];
	int nres;
	/* what every run shared, for the reports */
	char topo_desc[512];
	bool topo_default;
	int nhosts, nswitches, nlinks;
	char workload[512];
	bool workload_default;
	bool is_trace;
	char *builtin_text;		/* the built-in trace, when used */
	/* outputs */
	struct cli_out json, csv, plot, html;
	bool json_stdout;
	bool progress;
	/* cut into partitions (cli_run.h): this process's rank, their count,
	 * the back-end; an error every process met alike (rank 0 tells it) */
	int par_rank, par_size;
	const struct cli_par_ops *par_ops;
	bool same_error;
};

/* ---- help --------------------------------------------------------------- */

void cli_compare_usage(FILE *out)
{
	cli_help_put(
"usage: ibfab compare [options]\n"
"\n"
"Run the same workload on several fabrics - the same topology, routes and\n"
"seed, only the link layer and transport differ - and report them side by\n"
"side: completion time, throughput, message completion p50/p99/max, drops,\n"
"retransmissions, PFC pause frames and paused time, credit stalls\n"
"(PortXmitWait), ECN marks and CNPs, CPU time per host, and for a trace\n"
"each collective's time. A chart (SVG) shows each fabric's throughput over\n"
"time and the distribution of message completion times.\n"
"\n"
"Fabrics (docs/compare.md):\n"
"@fabric-lines@"
"\n"
"Inputs (as for 'ibfab run'; see 'ibfab run --help'):\n"
"  --topo FILE        topology in ibnetdiscover or ibsim net format.\n"
"                     Default: the built-in 16-host two-level fat tree at\n"
"                     4xHDR (200 Gb/s), routed with minhop.\n"
"  --trace FILE       replay a workload (native .trace or an importer's format).\n"
"  --traffic SPEC     traffic patterns instead (repeatable; 'ibfab run --help').\n"
"                     Default, with neither: a 64 MiB ring allreduce over 16\n"
"                     ranks (h0..h15) and, at the same time, an 8-to-1 incast\n"
"                     of 4 MiB per sender from h8..h15 onto h0. On a --topo\n"
"                     file with fewer hosts: over min(16, hosts) ranks, with\n"
"                     min(8, ranks - 1) senders.\n"
"  --fabrics LIST     comma-separated, in the order of the columns\n"
"                     (default @fabrics,@).\n"
"  --preset NAME      parameter preset (default hdr; 'ibfab run --help-params').\n"
"  --set KEY=VALUE    override a parameter for every fabric; repeatable, applied\n"
"                     in order after the preset and the fabric (eth.*, dcqcn.*,\n"
"                     tcp.* act only on the fabrics that use them). 'fabric'\n"
"                     itself is chosen by --fabrics.\n"
"  --routing NAME     @engines@.\n"
"  --seed N           seed of every random choice (default 1), the same for\n"
"                     every fabric.\n"
"  --threads N        cut each fabric into N partitions, one a thread, as\n"
"                     'ibfab run --threads N' does; 'mpirun -np N ibfab\n"
"                     compare ...' runs them one a process. The table, CSV,\n"
"                     chart and JSON are the one-thread run's, byte for byte,\n"
"                     but for \"events\", \"engine\" and \"partitions\".\n"
"                     Not yet with --fault, --html, or what 'ibfab run\n"
"                     --help' lists under Parallel.\n"
"  --sync windows|null  how the threads keep in step ('ibfab run --help').\n"
"\n"
"Outputs:\n"
"  (stdout)           the table, one column per fabric.\n"
"  --json FILE|-      one document: {ibfab_version seed reproducible engine\n"
"                     partitions topology workload params fabrics[] plot},\n"
"                     one object per fabric in fabrics[] (keys below). With\n"
"                     '-', JSON goes to stdout and the table to stderr (or\n"
"                     nowhere with --quiet).\n"
"  --csv FILE         one row per fabric, the JSON keys as columns (collectives\n"
"                     as coll:NAME:time_ps columns).\n"
"  --html FILE        a self-contained HTML report for a browser: every\n"
"                     fabric's run drawn as 'ibfab run --html' draws one (a\n"
"                     menu picks the fabric; the time slider, cable colours,\n"
"                     timeline), the charts and the table (docs/report.md).\n"
"  --plot FILE.svg    the chart (default compare.svg in the current directory);\n"
"                     its path is printed under the table.\n"
"  --no-plot          write no chart.\n"
"  --reproducible     leave wall-clock figures out (wall_s written as 0): two\n"
"                     runs with the same inputs then give byte-identical table,\n"
"                     JSON and CSV. The chart never holds wall-clock figures.\n"
"  --fault SPEC       the same failure during every fabric's run (repeatable;\n"
"                     'ibfab run --help', docs/faults.md): what a dead link\n"
"                     carries is lost, each transport recovers its way, the\n"
"                     subnet manager reroutes sm.reroute_ns later.\n"
"  --quiet            nothing on stderr but errors (no progress line; with\n"
"                     --json -, no table).\n"
"  --help             this text.\n"
"\n"
"Per fabric (JSON keys; times in ps, sizes in bytes):\n"
"  fabric complete (nothing left pending: every message delivered or lost)\n"
"  sim_time_ps relative_time (to the first column)\n"
"  throughput_gbps (payload over the simulated time) messages_total\n"
"  messages_delivered messages_lost completion_ps {count min p50 p99 max}\n"
"  drops drops_congestion drops_corrupt drops_link (on links a --fault took\n"
"  down) retransmissions (RDMA packets or TCP segments resent)\n"
"  retransmitted_packets seq_naks ack_timeouts tcp_segments\n"
"  tcp_retransmits tcp_timeouts tcp_fast_recoveries timeouts (ACK timeouts or\n"
"  TCP RTOs) pause_frames paused_ps xmit_wait_ps (credit stalls) ecn_marks\n"
"  cnps (CNPs, or BECNs with IB CC) cpu_ps cpu_ps_per_host (per active host)\n"
"  active_hosts kernel {syscalls interrupts context_switches cpu_copy_bytes\n"
"  cached_copy_bytes syscall_ps copy_ps protocol_ps interrupt_ps wakeup_ps}\n"
"  events wall_s\n"
"  collectives [{name collective algorithm bytes ranks start_ps end_ps\n"
"  time_ps algbw_gbps busbw_gbps}] (GB/s, as nccl-tests and 'ibfab run')\n"
"  sends_end_ps (traces: when the last point-to-point send was delivered)\n"
"\n"
"Output files are written under a temporary name and renamed when every\n"
"fabric's run succeeded; on any error none is left behind. Exit status: 0\n"
"done, 1 an input or run error, 2 a usage error.\n"
"\n"
"Examples:\n"
"  ibfab compare\n"
"  ibfab compare --traffic incast:dst=h0,size=4MiB --fabrics ib,roce-lossy\n"
"  ibfab compare --topo fabric.topo --trace job.trace --json cmp.json --plot cmp.svg\n"
"  ibfab compare --set eth.ecn=off --reproducible --csv cmp.csv\n", out);
}

/* ---- options ------------------------------------------------------------ */

enum cmp_opt_id {
	CO_HELP, CO_TOPO, CO_TRACE, CO_TRAFFIC, CO_FABRICS, CO_PRESET, CO_SET, CO_SEED,
	CO_ROUTING, CO_JSON, CO_CSV, CO_PLOT, CO_NO_PLOT, CO_REPRODUCIBLE, CO_QUIET, CO_FAULT,
	CO_HTML, CO_THREADS, CO_SYNC,
};

static const struct cli_opt cmp_options[] = {
	{ "--help", CO_HELP, false },
	{ "-h", CO_HELP, false },
	{ "--topo", CO_TOPO, true },
	{ "--trace", CO_TRACE, true },
	{ "--traffic", CO_TRAFFIC, true },
	{ "--fabrics", CO_FABRICS, true },
	{ "--preset", CO_PRESET, true },
	{ "--set", CO_SET, true },
	{ "--seed", CO_SEED, true },
	{ "--routing", CO_ROUTING, true },
	{ "--json", CO_JSON, true },
	{ "--csv", CO_CSV, true },
	{ "--plot", CO_PLOT, true },
	{ "--no-plot", CO_NO_PLOT, false },
	{ "--html", CO_HTML, true },
	{ "--reproducible", CO_REPRODUCIBLE, false },
	{ "--quiet", CO_QUIET, false },
	{ "-q", CO_QUIET, false },
	{ "--fault", CO_FAULT, true },
	{ "--threads", CO_THREADS, true },
	{ "--sync", CO_SYNC, true },
};

static int usage_error(const char *fmt, const char *a, const char *b)
{
	return cli_usage_error("compare", fmt, a, b);
}

static int set_once(const char **slot, const char *name, const char *val)
{
	return cli_set_once("compare", slot, name, val);
}

/* "ib,roce,..." -> o->fabric[]; every name known, none twice. */
static int parse_fabrics(struct cmp_opts *o, const char *list)
{
	char known[96] = "";
	const char *s = list;

	for (int i = 0; fab_fabric_names[i]; i++)
		snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s%s",
			 i ? ", " : "", fab_fabric_names[i]);
	o->nfabrics = 0;
	for (;;) {
		const char *comma = strchr(s, ',');
		size_t len = comma ? (size_t)(comma - s) : strlen(s);
		char name[32];
		int fb;

		if (!len)
			return usage_error("--fabrics: expected a comma-separated list of %s, not '%s'",
					   known, list);
		snprintf(name, sizeof(name), "%.*s", (int)(len < sizeof(name) ? len : sizeof(name) - 1), s);
		fb = len < sizeof(name) ? fab_fabric_parse(name) : -1;
		if (fb < 0) {
			fprintf(stderr, "ibfab compare: --fabrics: unknown fabric '%.*s' (known: %s)"
				" (see 'ibfab compare --help')\n", (int)len, s, known);
			return 2;
		}
		for (int k = 0; k < o->nfabrics; k++)
			if (o->fabric[k] == fb)
				return usage_error("--fabrics: '%s' is listed twice%s",
						   fab_fabric_names[fb], "");
		if (o->nfabrics == NFABRICS)	/* cannot happen: no duplicates */
			return usage_error("--fabrics: too many fabrics%s%s", "", "");
		o->fabric[o->nfabrics++] = fb;
		if (!comma)
			return 0;
		s = comma + 1;
	}
}

/* 0 to run, -1 when help was printed, 2 on a usage error (said). */
static int parse_args(int argc, char **argv, struct cmp_opts *o)
{
	for (int i = 1; i < argc; i++) {
		const char *val;
		char name[64], err[256];
		int rc = 0;
		int k = cli_opt_next("compare", cmp_options, SIM_ARRAY_SIZE(cmp_options), argc, argv,
				     &i, name, sizeof(name), &val);

		if (k < 0)
			return 2;
		switch (cmp_options[k].id) {
		case CO_HELP:
			cli_compare_usage(stdout);
			return -1;
		case CO_TOPO:
			rc = set_once(&o->run.topo, name, val);
			break;
		case CO_TRACE:
			rc = set_once(&o->run.trace, name, val);
			break;
		case CO_TRAFFIC:
			if (!*val)
				return usage_error("option '%s' needs a non-empty value%s", name, "");
			o->run.traffic[o->run.ntraffic++] = val;
			break;
		case CO_FAULT:
			o->run.faults[o->run.nfaults++] = val;
			break;
		case CO_FABRICS:
			rc = set_once(&o->fabrics_arg, name, val);
			if (!rc)
				rc = parse_fabrics(o, val);
			break;
		case CO_PRESET:
			rc = set_once(&o->run.preset, name, val);
			break;
		case CO_SET:
			if (!strncmp(val, "fabric=", 7) || !strcmp(val, "fabric"))
				return usage_error("--set %s: compare runs every fabric of --fabrics; "
						   "choose them there%s", val, "");
			/* slot 0 is the fabric's own "fabric=NAME" */
			o->run.sets[1 + o->nsets++] = val;
			break;
		case CO_SEED:
			if (o->run.seed_given)
				return usage_error("option '%s' given twice%s", name, "");
			if (sim_parse_u64(val, &o->run.seed, err, sizeof(err)))
				return usage_error("%s: %s", name, err);
			o->run.seed_given = true;
			break;
		case CO_ROUTING:
			rc = set_once(&o->run.routing, name, val);
			break;
		case CO_JSON:
			rc = set_once(&o->json, name, val);
			break;
		case CO_CSV:
			rc = set_once(&o->csv, name, val);
			break;
		case CO_PLOT:
			rc = set_once(&o->plot, name, val);
			break;
		case CO_NO_PLOT:
			o->no_plot = true;
			break;
		case CO_HTML:
			rc = set_once(&o->html, name, val);
			break;
		case CO_REPRODUCIBLE:
			o->reproducible = true;
			break;
		case CO_QUIET:
			o->quiet = true;
			break;
		case CO_THREADS:
			rc = cli_parse_threads("compare", name, val, &o->threads);
			break;
		case CO_SYNC:
			rc = cli_parse_sync("compare", name, val, &o->run.sync_null);
			break;
		}
		if (rc)
			return rc;
	}
	if (o->run.trace && o->run.ntraffic)
		return usage_error("--trace and --traffic are two ways to say what runs: give one%s%s",
				   "", "");
	if (o->plot && o->no_plot)
		return usage_error("--plot and --no-plot contradict each other%s%s", "", "");
	if (o->json && o->csv && !strcmp(o->json, o->csv))
		return usage_error("--json and --csv name the same file '%s'%s", o->json, "");
	if (!o->no_plot && !o->plot)
		o->plot = DEFAULT_PLOT;
	if (o->plot && ((o->json && !strcmp(o->plot, o->json)) || (o->csv && !strcmp(o->plot, o->csv))))
		return usage_error("--plot names the same file as --json or --csv: '%s'%s", o->plot, "");
	if (o->html && ((o->json && !strcmp(o->html, o->json)) || (o->csv && !strcmp(o->html, o->csv)) ||
			(o->plot && !strcmp(o->html, o->plot))))
		return usage_error("--html names the same file as --json, --csv or --plot: '%s'%s",
				   o->html, "");
	o->run.html = o->html;	/* each run keeps its cables' series (cli_run_simulate) */
	if (!o->nfabrics) {
		for (int f = 0; f < NFABRICS; f++)
			o->fabric[f] = f;
		o->nfabrics = NFABRICS;
	}
	return 0;
}

/* ---- the built-in workload --------------------------------------------- */

/* The built-in trace on `nhosts` hosts (>= 2); malloc'd text or NULL. */
static char *builtin_trace(int nhosts, int *nranks_out, int *nsend_out)
{
	int n = nhosts < BUILTIN_RANKS ? nhosts : BUILTIN_RANKS;
	int ns = n - 1 < BUILTIN_SENDERS ? n - 1 : BUILTIN_SENDERS;
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);

	if (!m)
		return NULL;
	fprintf(m, "# ibfab compare's built-in workload (tools/cli_compare.c)\n"
		"ranks %d\nmap linear\n", n);
	/* async: the sends start at time 0, beside the allreduce */
	for (int r = n - ns; r < n; r++)
		fprintf(m, "incast%d: send %d 0 %s async\n", r, r, BUILTIN_INCAST_BYTES);
	fprintf(m, "ring_allreduce: allreduce %s algo=ring\n", BUILTIN_AR_BYTES);
	if (fclose(m)) {
		free(text);
		return NULL;
	}
	*nranks_out = n;
	*nsend_out = ns;
	return text;
}

/* ---- one fabric --------------------------------------------------------- */

/* cli_run's hooks: the chart's sampler (cli_tp.h) on the run's fabric,
 * on each copy of it (--threads), and a cut run's end */
static int tp_before_run(struct cli_run *run, void *ctx)
{
	struct cli_tp_set *ts = ctx;
	uint32_t n = run->par_ops == &cli_par_threads ? (uint32_t)run->par_size : 1;

	if (cli_tp_init(ts, n))
		return sim_diag_set(&run->d, NULL, 0, 0, "out of memory");
	return cli_tp_start(ts, 0, run->fab, &run->net, run->par_size > 1, &run->d);
}

static int tp_before_run_copy(struct cli_run *run, uint32_t k, struct fab *f, struct sim_diag *d)
{
	return cli_tp_start(run->before_run_ctx, k, f, &run->net, true, d);
}

static int tp_after_par_run(struct cli_run *run, struct sim_diag *d)
{
	return cli_tp_par_end(run->before_run_ctx, run->par_ops, d);
}

/* Copy out of a finished run what the reports need. 0 or -1 (memory). */
static int collect(struct cli_run *run, struct cli_tp_set *tp, struct cmp_result *res,
		   struct sim_diag *d)
{
	struct cli_report rep;
	struct sim_samples cs;
	uint64_t host_cpu = 0;

	cli_run_fill_report(run, &rep);
	fab_totals(run->fab, &res->t);
	res->end_ps = rep.tres ? rep.tres->end_ps : res->t.end_ps;
	res->complete = rep.tres ? true : res->t.msgs_done + res->t.msgs_lost >= res->t.msgs_total;
	/* the curve (with a chart to draw), closed where the run ended */
	if (tp->s && cli_tp_finish(tp, run->fab))
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	/* the chart's and the HTML page's samplers only read counters: their
	 * events are not the run's */
	res->events = rep.events - tp->ticks - cli_html_links_samples(run->hl);
	res->tp_t = tp->t;
	res->tp_bytes = tp->bytes;
	res->tp_n = tp->nt;
	tp->t = NULL;
	tp->bytes = NULL;
	res->wall_s = run->wall_s;
	res->msgs_total = rep.msgs->n;
	sim_samples_init(&cs);
	cs.exact_max = SIZE_MAX;	/* every value: the chart's distribution is drawn from them */
	for (size_t i = 0; i < rep.msgs->n; i++) {
		const struct fab_msg *m = &rep.msgs->v[i];

		if (!m->done)
			continue;
		res->msgs_done++;
		if (sim_samples_add(&cs, m->end - m->start)) {
			sim_samples_fini(&cs);
			return sim_diag_set(d, NULL, 0, 0, "out of memory");
		}
	}
	if (cs.n) {
		res->c_min = sim_samples_quantile(&cs, 0);
		res->c_p50 = sim_samples_quantile(&cs, 0.5);
		res->c_p99 = sim_samples_quantile(&cs, 0.99);
		res->c_max = sim_samples_quantile(&cs, 1);
		res->mct = cs.v;	/* sorted by the quantiles: keep it */
		cs.v = NULL;
	}
	sim_samples_fini(&cs);
	if (res->end_ps)
		res->gbps = (double)res->t.payload_delivered * 8000.0 / (double)res->end_ps;
	for (int i = 0; i < run->net.nnodes; i++) {
		const struct host_stats *h = fab_host_stats(run->fab, i);

		if (h)
			host_cpu += h->cpu_ps;
		if (h && (h->posts || h->dma_writes || h->cqes))
			res->nactive++;
	}
	res->nhosts = net_nhosts(&run->net);
	/* the subnet manager's tables, a flow hash (Ethernet's ECMP), or a
	 * choice by load (IB adaptive routing, flowlets, spraying) */
	res->lb = cli_lb_name(&run->p);
	/* the HCA host model's CPU time, or the fabric's total when it counts
	 * more (the TCP stack's system calls, copies and interrupts) */
	res->cpu_ps = res->t.cpu_ps > host_cpu ? res->t.cpu_ps : host_cpu;

	if (!rep.prog)
		return 0;
	const struct trace *t = rep.prog->trace;

	for (size_t i = 0; i < t->nops; i++) {
		if (t->ops[i].kind == TRACE_SEND) {
			res->has_sends = true;
			if (rep.tres->op_end[i] > res->sends_end_ps)
				res->sends_end_ps = rep.tres->op_end[i];
		}
		res->ncoll += t->ops[i].kind == TRACE_COLL;
	}
	if (!res->ncoll)
		return 0;
	res->coll = calloc(res->ncoll, sizeof(*res->coll));
	if (!res->coll)
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	for (size_t i = 0, k = 0; i < t->nops; i++) {
		const struct trace_op *op = &t->ops[i];
		struct cmp_coll *c = &res->coll[k];

		if (op->kind != TRACE_COLL)
			continue;
		k++;
		trace_op_label(t, (uint32_t)i, c->label, sizeof(c->label));
		c->collective = trace_coll_names[op->coll];
		c->algorithm = coll_op_label(t, op);
		c->bytes = op->bytes;
		c->ranks = t->comms[op->comm].n;
		c->start_ps = rep.tres->op_start[i];
		c->end_ps = rep.tres->op_end[i];
		double algbw = trace_op_algbw(rep.prog, rep.tres, (uint32_t)i);

		/* GB/s, as nccl-tests and `ibfab run --json` (algbw_gbps) give them */
		c->algbw_gbps = algbw / 1e9;
		c->busbw_gbps = algbw * coll_busbw_factor(op->coll, c->ranks) / 1e9;
	}
	return 0;
}

static void result_free(struct cmp_result *r)
{
	free(r->mct);
	free(r->tp_t);
	free(r->tp_bytes);
	free(r->coll);
	cli_html_links_free(r->hl);
	free(r->ops);
	memset(r, 0, sizeof(*r));
}

/* What every run shares, for the reports: from the first run. */
static void describe(struct cmp_ctx *c, struct cli_run *run)
{
	const struct cmp_opts *o = c->o;

	snprintf(c->topo_desc, sizeof(c->topo_desc), "%s", run->topo_desc);
	c->topo_default = !o->run.topo;
	c->nhosts = net_nhosts(&run->net);
	c->nswitches = net_count(&run->net, NET_SWITCH);
	c->nlinks = net_nlinks(&run->net);
	c->is_trace = o->run.trace != NULL;
	if (o->run.trace_text) {
		/* described where the text is made */
	} else if (o->run.trace) {
		snprintf(c->workload, sizeof(c->workload), "trace %s", o->run.trace);
	} else {
		size_t off = 0;

		for (int i = 0; i < run->ntraffic; i++)
			sim_append(c->workload, sizeof(c->workload), &off, "%s%s", i ? " + " : "",
				   run->traffic[i]);
		if (run->traffic_default)
			sim_append(c->workload, sizeof(c->workload), &off, " (the 'run' default)");
	}
}

static void progress_label(struct cmp_ctx *c, int k)
{
	if (c->progress)
		fprintf(stderr, "\r  [%d/%d] %s\033[K", k + 1, c->o->nfabrics,
			fab_fabric_names[c->o->fabric[k]]);
}

static int run_fabric(struct cmp_ctx *c, int k)
{
	struct cmp_opts *o = c->o;
	char fabric_set[48];
	struct cli_tp_set tp = { 0 };
	struct cli_run run;
	int rc;

	snprintf(fabric_set, sizeof(fabric_set), "fabric=%s", fab_fabric_names[o->fabric[k]]);
	o->run.sets[0] = fabric_set;
	progress_label(c, k);
	cli_run_init(&run, &o->run);
	run.progress = c->progress;
	/* cut into partitions (--threads, mpirun): as `ibfab run` is */
	run.par_rank = c->par_rank;
	run.par_size = c->par_size;
	run.par_ops = c->par_ops;
	if (c->o->plot || c->o->html) {	/* the chart's throughput curve */
		run.before_run = tp_before_run;
		run.before_run_ctx = &tp;
		run.before_run_copy = tp_before_run_copy;
		run.after_par_run = tp_after_par_run;
	}
	/* an input error shows in the first fabric's preparation, and is not
	 * about that fabric: say which fabric only when it may be */
	int prc = cli_run_prepare(&run);
	bool input_error = prc && k == 0;

	rc = prc || cli_run_simulate(&run);
	if (!rc && !run.par_rank) {	/* rank 0 gathered the results and writes them */
		if (k == 0)
			describe(c, &run);
		c->res[k].fabric = o->fabric[k];
		rc = collect(&run, &tp, &c->res[k], &run.d);
		c->nres = k + 1;
		/* the page's series outlive the run's fabric */
		c->res[k].hl = run.hl;
		run.hl = NULL;
		if (!rc && o->html && run.replayed &&
		    cli_html_ops(&run.trace, run.tres.op_start, run.tres.op_end, &c->res[k].ops,
				 &c->res[k].nops))
			rc = sim_diag_set(&run.d, NULL, 0, 0, "out of memory");
	}
	if (rc) {
		char buf[1100];

		/* what every process meets alike, rank 0 tells */
		c->same_error = prc || run.par_same_error ||
				(run.par_ops && run.par_ops->failed_alike && run.par_ops->failed_alike(&run));
		sim_diag_format(&run.d, buf, sizeof(buf));
		if (input_error)
			sim_diag_set(&c->d, NULL, 0, 0, "%s", buf);
		else
			sim_diag_set(&c->d, NULL, 0, 0, "fabric %s: %s", fab_fabric_names[o->fabric[k]], buf);
	}
	if (run.par_ops)
		run.par_ops->fini(&run);
	cli_run_fini(&run);
	cli_tp_free(&tp);
	o->run.sets[0] = NULL;
	return rc ? -1 : 0;
}

/* ---- the table ---------------------------------------------------------- */

#define LABEL_W 22
#define COL_W 14

enum cell_kind { CELL_COUNT, CELL_TIME, CELL_BYTES };

static void row_vals(FILE *out, const struct cmp_ctx *c, const char *label, const uint64_t *v,
		     enum cell_kind kind)
{
	char buf[64];

	fprintf(out, "%-*s", LABEL_W, label);
	for (int k = 0; k < c->nres; k++) {
		if (kind == CELL_TIME)
			cli_fmt_time(v[k], buf, sizeof(buf));
		else if (kind == CELL_BYTES)
			cli_fmt_bytes(v[k], buf, sizeof(buf));
		else
			snprintf(buf, sizeof(buf), "%" PRIu64, v[k]);
		fprintf(out, "%*s", COL_W, buf);
	}
	fputc('\n', out);
}

/* One row: `expr` evaluated with `r` naming each fabric's result. */
#define ROW(out, c, label, kind, expr) do {					\
	uint64_t v_[NFABRICS];							\
	for (int k_ = 0; k_ < (c)->nres; k_++) {				\
		const struct cmp_result *r = &(c)->res[k_];			\
		v_[k_] = (expr);						\
	}									\
	row_vals((out), (c), (label), v_, (kind));				\
} while (0)

/* A row of formatted cells: `fmt_stmt` writes into cell_ (64 bytes). */
#define ROW_FMT(out, c, label, fmt_stmt) do {					\
	fprintf((out), "%-*s", LABEL_W, (label));				\
	for (int k_ = 0; k_ < (c)->nres; k_++) {				\
		const struct cmp_result *r = &(c)->res[k_];			\
		char cell_[64];							\
		fmt_stmt;							\
		fprintf((out), "%*s", COL_W, cell_);				\
	}									\
	fputc('\n', (out));							\
} while (0)

/*
 * Packets (RDMA) or segments (TCP) resent, and retransmission timeouts. On
 * fabric=tcp every QP carries a TCP connection, and the TCP model also
 * counts its resends and RTOs in the QP's generic counters (retransmitted,
 * ack_timeouts), so the two are not added: the larger is the count,
 * whether or not the model mirrors them.
 */
static uint64_t retransmissions(const struct cmp_result *r)
{
	return r->t.retransmitted > r->t.tcp_retransmits ? r->t.retransmitted
							 : r->t.tcp_retransmits;
}

static uint64_t timeouts(const struct cmp_result *r)
{
	return r->t.ack_timeouts > r->t.tcp_timeouts ? r->t.ack_timeouts : r->t.tcp_timeouts;
}

/* Over the hosts that took part, not every host of the topology: an
 * incast's idle hosts would thin it out. */
static uint64_t cpu_per_host(const struct cmp_result *r)
{
	return r->nactive ? r->cpu_ps / (uint64_t)r->nactive : 0;
}


#define TABLE_MAX_COLLS 12	/* more go to --json / --csv only */

static void print_table(FILE *out, const struct cmp_ctx *c)
{
	const struct cmp_opts *o = c->o;
	const struct cmp_result *r0 = &c->res[0];
	bool any_incomplete = false;
	char lb[96];

	fprintf(out, "topology   %s%s\n", c->topo_desc, c->topo_default ? " (default)" : "");
	fprintf(out, "           %d host%s, %d switch%s, %d link%s; routing %s; preset %s; seed %" PRIu64 "\n",
		c->nhosts, c->nhosts == 1 ? "" : "s", c->nswitches, c->nswitches == 1 ? "" : "es",
		c->nlinks, c->nlinks == 1 ? "" : "s", o->run.routing ? o->run.routing : "minhop",
		o->run.preset ? o->run.preset : "hdr", o->run.seed);
	fprintf(out, "workload   %s%s\n", c->workload,
		c->workload_default ? " (default: no --trace or --traffic given)" : "");
	for (int i = 0; i < o->nsets; i++)
		fprintf(out, "%s--set %s\n", i ? "           " : "params     ", o->run.sets[1 + i]);
	fputc('\n', out);

	fprintf(out, "%-*s", LABEL_W, "");
	for (int k = 0; k < c->nres; k++)
		fprintf(out, "%*s", COL_W, fab_fabric_names[c->res[k].fabric]);
	fputc('\n', out);
	ROW(out, c, "completion time", CELL_TIME, r->end_ps);
	if (c->nres > 1) {
		snprintf(lb, sizeof(lb), "  relative to %s", fab_fabric_names[r0->fabric]);
		ROW_FMT(out, c, lb, r0->end_ps ?
			snprintf(cell_, sizeof(cell_), "%.2fx", (double)r->end_ps / (double)r0->end_ps) :
			snprintf(cell_, sizeof(cell_), "-"));
	}
	ROW_FMT(out, c, "throughput", snprintf(cell_, sizeof(cell_), "%.1f Gb/s", r->gbps));
	ROW_FMT(out, c, "paths", snprintf(cell_, sizeof(cell_), "%s", r->lb));
	ROW_FMT(out, c, c->is_trace ? "transfers done" : "messages done",
		snprintf(cell_, sizeof(cell_), "%" PRIu64 "/%" PRIu64 "%s", r->msgs_done,
			 r->msgs_total, r->msgs_done < r->msgs_total ? "!" : ""));
	ROW(out, c, c->is_trace ? "transfer time p50" : "message time p50", CELL_TIME, r->c_p50);
	ROW(out, c, "                 p99", CELL_TIME, r->c_p99);
	ROW(out, c, "                 max", CELL_TIME, r->c_max);
	ROW(out, c, "drops", CELL_COUNT, r->t.drops);
	ROW(out, c, "retransmissions", CELL_COUNT, retransmissions(r));
	ROW(out, c, "timeouts", CELL_COUNT, timeouts(r));
	ROW(out, c, "pause frames (PFC)", CELL_COUNT, r->t.pause_frames);
	ROW(out, c, "paused time", CELL_TIME, r->t.paused_ps);
	ROW(out, c, "credit stalls", CELL_TIME, r->t.xmit_wait_ps);
	ROW(out, c, "ECN marks", CELL_COUNT, r->t.ecn_marks);
	ROW(out, c, "CNPs", CELL_COUNT, r->t.cnps);
	ROW(out, c, "CPU per active host", CELL_TIME, cpu_per_host(r));
	ROW(out, c, "system calls", CELL_COUNT, r->t.kernel.syscalls);
	ROW(out, c, "interrupts", CELL_COUNT, r->t.kernel.interrupts);
	ROW(out, c, "copied by a CPU", CELL_BYTES, r->t.kernel.cpu_copy_bytes);
	if (r0->has_sends)
		ROW(out, c, "sends done at", CELL_TIME, r->sends_end_ps);
	for (size_t i = 0; i < r0->ncoll && i < TABLE_MAX_COLLS; i++) {
		snprintf(lb, sizeof(lb), "%.*s", LABEL_W - 1, r0->coll[i].label);
		ROW(out, c, lb, CELL_TIME, i < r->ncoll ? r->coll[i].end_ps - r->coll[i].start_ps : 0);
		ROW_FMT(out, c, "  bus bandwidth",
			snprintf(cell_, sizeof(cell_), "%.2f GB/s",
				 i < r->ncoll ? r->coll[i].busbw_gbps : 0.0));
	}
	if (r0->ncoll > TABLE_MAX_COLLS)
		fprintf(out, "(%zu more collectives in --json and --csv)\n",
			r0->ncoll - TABLE_MAX_COLLS);
	for (int k = 0; k < c->nres; k++)
		any_incomplete |= c->res[k].msgs_done < c->res[k].msgs_total;
	if (any_incomplete)
		fputs("! not every message was delivered: lost (retries exhausted), or the run\n"
		      "  stopped at sim.max_time_ns\n", out);
	fputc('\n', out);
	fputs("completion time: when the last message was delivered; throughput: payload\n"
	      "over that time; credit stalls: PortXmitWait summed over ports; paused time:\n"
	      "transmitters held by PFC (XOFF landed to XON or expiry), summed over ports\n"
	      "and priorities; CPU: host time spent on communication (posts, polls,\n"
	      "copies; for tcp the kernel stack).\n", out);
	if (!o->reproducible) {
		double all = 0;

		for (int k = 0; k < c->nres; k++)
			all += c->res[k].wall_s;
		fprintf(out, "wall       %.2f s (", all);
		for (int k = 0; k < c->nres; k++)
			fprintf(out, "%s%s %.2f s", k ? ", " : "", fab_fabric_names[c->res[k].fabric],
				c->res[k].wall_s);
		fputs(")\n", out);
	}
	if (c->plot.path)
		fprintf(out, "plot       %s (throughput over time, completion time CDF; open it in a browser)\n",
			c->plot.path);
}

/* ---- JSON and CSV ------------------------------------------------------- */

static void json_fabric(struct sim_json *j, const struct cmp_ctx *c, const struct cmp_result *r)
{
	sim_json_obj_begin(j);
	sim_json_kstr(j, "fabric", fab_fabric_names[r->fabric]);
	sim_json_kstr(j, "load_balancing", r->lb);
	sim_json_kbool(j, "complete", r->complete);
	sim_json_ku64(j, "sim_time_ps", r->end_ps);
	sim_json_kdouble(j, "relative_time",
			 c->res[0].end_ps ? (double)r->end_ps / (double)c->res[0].end_ps : 0);
	sim_json_kdouble(j, "throughput_gbps", r->gbps);
	sim_json_ku64(j, "messages_total", r->msgs_total);
	sim_json_ku64(j, "messages_delivered", r->msgs_done);
	sim_json_ku64(j, "messages_lost", r->t.msgs_lost);
	sim_json_key(j, "completion_ps");
	sim_json_obj_begin(j);
	sim_json_ku64(j, "count", r->msgs_done);
	sim_json_ku64(j, "min", r->c_min);
	sim_json_ku64(j, "p50", r->c_p50);
	sim_json_ku64(j, "p99", r->c_p99);
	sim_json_ku64(j, "max", r->c_max);
	sim_json_obj_end(j);
	sim_json_ku64(j, "drops", r->t.drops);
	sim_json_ku64(j, "drops_congestion", r->t.drops_congestion);
	sim_json_ku64(j, "drops_link", r->t.drops_link);
	sim_json_ku64(j, "drops_corrupt", r->t.drops_corrupt);
	sim_json_ku64(j, "retransmissions", retransmissions(r));
	sim_json_ku64(j, "retransmitted_packets", r->t.retransmitted);
	sim_json_ku64(j, "seq_naks", r->t.seq_naks);
	sim_json_ku64(j, "ack_timeouts", r->t.ack_timeouts);
	sim_json_ku64(j, "tcp_segments", r->t.tcp_segments);
	sim_json_ku64(j, "tcp_retransmits", r->t.tcp_retransmits);
	sim_json_ku64(j, "tcp_timeouts", r->t.tcp_timeouts);
	sim_json_ku64(j, "tcp_fast_recoveries", r->t.tcp_fast_recoveries);
	sim_json_ku64(j, "timeouts", timeouts(r));
	sim_json_ku64(j, "pause_frames", r->t.pause_frames);
	sim_json_ku64(j, "paused_ps", r->t.paused_ps);
	sim_json_ku64(j, "xmit_wait_ps", r->t.xmit_wait_ps);
	sim_json_ku64(j, "ecn_marks", r->t.ecn_marks);
	sim_json_ku64(j, "cnps", r->t.cnps);
	sim_json_ku64(j, "cpu_ps", r->cpu_ps);
	sim_json_ku64(j, "cpu_ps_per_host", cpu_per_host(r));
	sim_json_ku64(j, "active_hosts", (uint64_t)r->nactive);
	cli_json_kernel(j, &r->t.kernel);
	sim_json_ku64(j, "events", r->events);
	sim_json_kdouble(j, "wall_s", c->o->reproducible ? 0 : r->wall_s);
	if (c->is_trace) {
		sim_json_key(j, "collectives");
		sim_json_arr_begin(j);
		for (size_t i = 0; i < r->ncoll; i++) {
			const struct cmp_coll *cl = &r->coll[i];

			sim_json_obj_begin(j);
			sim_json_kstr(j, "name", cl->label);
			sim_json_kstr(j, "collective", cl->collective);
			sim_json_kstr(j, "algorithm", cl->algorithm);
			sim_json_ku64(j, "bytes", cl->bytes);
			sim_json_ku64(j, "ranks", cl->ranks);
			sim_json_ku64(j, "start_ps", cl->start_ps);
			sim_json_ku64(j, "end_ps", cl->end_ps);
			sim_json_ku64(j, "time_ps", cl->end_ps - cl->start_ps);
			sim_json_kdouble(j, "algbw_gbps", cl->algbw_gbps);
			sim_json_kdouble(j, "busbw_gbps", cl->busbw_gbps);
			sim_json_obj_end(j);
		}
		sim_json_arr_end(j);
		if (r->has_sends)
			sim_json_ku64(j, "sends_end_ps", r->sends_end_ps);
		else
			sim_json_kstr(j, "sends_end_ps", NULL);
	}
	sim_json_obj_end(j);
}

static int write_json(FILE *out, const struct cmp_ctx *c)
{
	const struct cmp_opts *o = c->o;
	struct sim_json j;

	sim_json_init(&j, out, 2);
	sim_json_obj_begin(&j);
	sim_json_kstr(&j, "ibfab_version", IBFAB_VERSION);
	sim_json_ku64(&j, "seed", o->run.seed);
	sim_json_kbool(&j, "reproducible", o->reproducible);
	/* one list, or cut (the results are the same but for "events") */
	sim_json_kstr(&j, "engine", c->par_size > 1 ? cli_par_engine(c->par_ops, o->run.sync_null) :
							"sequential");
	sim_json_ku64(&j, "partitions", (uint64_t)(c->par_size > 1 ? c->par_size : 1));
	sim_json_key(&j, "topology");
	sim_json_obj_begin(&j);
	sim_json_kstr(&j, "source", c->topo_desc);
	sim_json_kbool(&j, "default", c->topo_default);
	sim_json_ku64(&j, "hosts", (uint64_t)c->nhosts);
	sim_json_ku64(&j, "switches", (uint64_t)c->nswitches);
	sim_json_ku64(&j, "links", (uint64_t)c->nlinks);
	sim_json_kstr(&j, "routing", o->run.routing ? o->run.routing : "minhop");
	sim_json_obj_end(&j);
	sim_json_key(&j, "workload");
	sim_json_obj_begin(&j);
	sim_json_kstr(&j, "kind", c->is_trace ? "trace" : "traffic");
	sim_json_kbool(&j, "default", c->workload_default);
	sim_json_kstr(&j, "description", c->workload);
	if (c->builtin_text)
		sim_json_kstr(&j, "trace_text", c->builtin_text);
	sim_json_obj_end(&j);
	sim_json_key(&j, "params");
	sim_json_obj_begin(&j);
	sim_json_kstr(&j, "preset", o->run.preset ? o->run.preset : "hdr");
	sim_json_key(&j, "sets");
	sim_json_arr_begin(&j);
	for (int i = 0; i < o->nsets; i++)
		sim_json_str(&j, o->run.sets[1 + i]);
	sim_json_arr_end(&j);
	sim_json_obj_end(&j);
	sim_json_key(&j, "fabrics");
	sim_json_arr_begin(&j);
	for (int k = 0; k < c->nres; k++)
		json_fabric(&j, c, &c->res[k]);
	sim_json_arr_end(&j);
	sim_json_kstr(&j, "plot", c->plot.path);
	sim_json_obj_end(&j);
	return sim_json_finish(&j);
}

static int write_csv(FILE *out, const struct cmp_ctx *c)
{
	const struct cmp_result *r0 = &c->res[0];
	char name[96];

	fputs("fabric,complete,sim_time_ps,relative_time,throughput_gbps,messages_total,"
	      "messages_delivered,messages_lost,completion_count,completion_min_ps,"
	      "completion_p50_ps,completion_p99_ps,completion_max_ps,drops,drops_congestion,"
	      "drops_corrupt,retransmissions,retransmitted_packets,seq_naks,ack_timeouts,"
	      "tcp_segments,tcp_retransmits,tcp_timeouts,tcp_fast_recoveries,timeouts,"
	      "pause_frames,paused_ps,xmit_wait_ps,ecn_marks,cnps,cpu_ps,cpu_ps_per_host,"
	      "events,wall_s", out);
	if (r0->has_sends)
		fputs(",sends_end_ps", out);
	for (size_t i = 0; i < r0->ncoll; i++) {
		fputc(',', out);
		snprintf(name, sizeof(name), "coll:%s:time_ps", r0->coll[i].label);
		cli_csv_field(out, name);
	}
	fputc('\n', out);
	for (int k = 0; k < c->nres; k++) {
		const struct cmp_result *r = &c->res[k];

		fprintf(out, "%s,%d,%" PRIu64 ",%.6f,%.3f,%" PRIu64 ",%" PRIu64 ",%" PRIu64
			",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64,
			fab_fabric_names[r->fabric], r->complete, r->end_ps,
			r0->end_ps ? (double)r->end_ps / (double)r0->end_ps : 0, r->gbps,
			r->msgs_total, r->msgs_done, r->t.msgs_lost, r->msgs_done, r->c_min,
			r->c_p50, r->c_p99, r->c_max);
		fprintf(out, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64,
			r->t.drops, r->t.drops_congestion, r->t.drops_corrupt, retransmissions(r),
			r->t.retransmitted, r->t.seq_naks, r->t.ack_timeouts, r->t.tcp_segments,
			r->t.tcp_retransmits, r->t.tcp_timeouts, r->t.tcp_fast_recoveries,
			timeouts(r));
		fprintf(out, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			",%" PRIu64 ",%" PRIu64 ",%.3f",
			r->t.pause_frames, r->t.paused_ps, r->t.xmit_wait_ps, r->t.ecn_marks,
			r->t.cnps, r->cpu_ps, cpu_per_host(r), r->events,
			c->o->reproducible ? 0.0 : r->wall_s);
		if (r0->has_sends)
			fprintf(out, ",%" PRIu64, r->sends_end_ps);
		for (size_t i = 0; i < r0->ncoll; i++)
			fprintf(out, ",%" PRIu64, i < r->ncoll ? r->coll[i].end_ps - r->coll[i].start_ps : 0);
		fputc('\n', out);
	}
	return ferror(out) ? -1 : 0;
}

/* ---- the chart ---------------------------------------------------------- */

#define PLOT_BINS 200		/* linear time axis: about this many 1-2-5 intervals */
#define LOG_BINS_PER_DECADE 25	/* log time axis */
#define LOG_SPREAD 20		/* runs this many times longer than the shortest: log axis */
#define CDF_POINTS 2000		/* more messages than this: sampled at even ranks */

/* Time in the unit the chart uses: us below 10 ms, ms above. */
static double time_unit(sim_time_t max_ps, const char **name)
{
	if (max_ps < 10 * SIM_MS) {
		*name = "\xc2\xb5s";	/* µs */
		return (double)SIM_US;
	}
	*name = "ms";
	return (double)SIM_MS;
}

/*
 * The throughput chart's intervals: edge[0] = 0 < edge[1] < ... < edge[n] =
 * tmax. Linear: a 1-2-5 step. When one run is more than LOG_SPREAD times
 * longer than the shortest (an RTO-bound TCP run beside IB), a linear axis
 * would squash the short runs into its first pixels, so the axis is log10
 * and the intervals equal on it, from the decade below a hundredth of the
 * shortest run (the first interval starts at 0, and averages up to there;
 * narrower intervals would show single packets, not rates).
 */
struct bins {
	double *edge;
	size_t n;
	bool log;
	double step;		/* linear: the interval, ps */
};

static int bins_make(struct bins *b, sim_time_t tmin, sim_time_t tmax)
{
	double first, last;

	memset(b, 0, sizeof(*b));
	if (tmin && tmax / tmin > LOG_SPREAD) {
		double lo = fmax(1, pow(10, floor(log10((double)tmin / 100))));
		size_t n = 1 + (size_t)ceil(LOG_BINS_PER_DECADE * log10((double)tmax / lo) - 1e-9);

		b->edge = calloc(n + 1, sizeof(double));
		if (!b->edge)
			return -1;
		b->log = true;
		b->n = n;
		for (size_t k = 1; k < n; k++)
			b->edge[k] = lo * pow(10, (double)(k - 1) / LOG_BINS_PER_DECADE);
		b->edge[n] = (double)tmax;
		return 0;
	}
	b->step = plot_nice_step(0, (double)tmax, PLOT_BINS, &first, &last);
	if (b->step < 1)
		b->step = 1;
	b->n = (size_t)ceil((double)tmax / b->step);
	if (!b->n)
		b->n = 1;
	b->edge = calloc(b->n + 1, sizeof(double));
	if (!b->edge)
		return -1;
	for (size_t k = 0; k < b->n; k++)
		b->edge[k] = (double)k * b->step;
	b->edge[b->n] = (double)tmax;	/* the last interval ends with the longest run */
	return 0;
}

/* The cumulative bytes into hosts at t: linear between samples. */
static double tp_at(const struct cmp_result *r, double t)
{
	size_t lo = 0, hi = r->tp_n;

	if (!r->tp_n || t <= (double)r->tp_t[0])
		return r->tp_n ? (double)r->tp_bytes[0] : 0;
	if (t >= (double)r->tp_t[r->tp_n - 1])
		return (double)r->tp_bytes[r->tp_n - 1];
	while (hi - lo > 1) {	/* tp_t[lo] <= t < tp_t[hi] */
		size_t mid = (lo + hi) / 2;

		if ((double)r->tp_t[mid] <= t)
			lo = mid;
		else
			hi = mid;
	}
	double t0 = (double)r->tp_t[lo], t1 = (double)r->tp_t[hi];
	double b0 = (double)r->tp_bytes[lo], b1 = (double)r->tp_bytes[hi];

	return b0 + (b1 - b0) * (t - t0) / (t1 - t0);
}

/* Throughput per interval, Gb/s, into y[0..n); y[n] repeats y[n-1] to
 * close the staircase. */
static void throughput(const struct bins *b, const struct cmp_result *r, double *y)
{
	for (size_t k = 0; k < b->n; k++) {
		double w = b->edge[k + 1] - b->edge[k];

		/* bytes x 8 / (ps x 1e-12) / 1e9 = Gb/s */
		y[k] = w > 0 ? (tp_at(r, b->edge[k + 1]) - tp_at(r, b->edge[k])) * 8000.0 / w : 0;
	}
	y[b->n] = b->n ? y[b->n - 1] : 0;
}

static int write_plot(FILE *out, const struct cmp_ctx *c)
{
	struct plot_series tp[NFABRICS], cdf[NFABRICS];
	double *buf[4 * NFABRICS] = { 0 };
	sim_time_t tmax = 0, tmin = 0;
	uint64_t cmax = 0;
	double tu, cu;
	const char *tun, *cun;
	char title[700], xl[80], cxl[80], tpt[160];
	struct plot_chart ch;
	struct plot_svg svg;
	struct bins bins;
	int rc = -1;

	for (int k = 0; k < c->nres; k++) {
		const struct cmp_result *r = &c->res[k];

		if (r->end_ps > tmax)
			tmax = r->end_ps;
		if (r->end_ps && (!tmin || r->end_ps < tmin))
			tmin = r->end_ps;
		if (r->msgs_done && r->mct[r->msgs_done - 1] > cmax)
			cmax = r->mct[r->msgs_done - 1];
	}
	if (!tmax)
		tmax = 1;
	if (bins_make(&bins, tmin, tmax))
		return -1;
	tu = time_unit(tmax, &tun);
	cu = time_unit(cmax, &cun);

	for (int k = 0; k < c->nres; k++) {
		const struct cmp_result *r = &c->res[k];
		double *x, *y;
		size_t n = r->msgs_done, np;

		y = buf[4 * k] = calloc(bins.n + 1, sizeof(double));
		x = buf[4 * k + 1] = calloc(bins.n + 1, sizeof(double));
		if (!x || !y)
			goto out;
		throughput(&bins, r, y);
		for (size_t b = 0; b <= bins.n; b++)	/* log: the first interval drawn from edge[1] */
			x[b] = (bins.log && !b ? bins.edge[1] : bins.edge[b]) / tu;
		tp[k] = (struct plot_series){ .name = fab_fabric_names[r->fabric], .x = x,
					      .y = y, .n = bins.n + 1, .step = true };

		/* the CDF: (t, 0) then (t_i, i/n) at up to CDF_POINTS ranks */
		np = n > CDF_POINTS ? CDF_POINTS : n;
		x = buf[4 * k + 2] = calloc(np + 1, sizeof(double));
		y = buf[4 * k + 3] = calloc(np + 1, sizeof(double));
		if (!x || !y)
			goto out;
		for (size_t i = 0; i < np; i++) {
			size_t rank = n > CDF_POINTS ? ((i + 1) * n + np - 1) / np : i + 1;

			x[i + 1] = (double)r->mct[rank - 1] / cu;
			y[i + 1] = (double)rank / (double)n;
		}
		if (np) {
			x[0] = x[1];
			y[0] = 0;
		}
		cdf[k] = (struct plot_series){ .name = fab_fabric_names[r->fabric], .x = x, .y = y,
					       .n = np ? np + 1 : 0, .step = true };
	}

	snprintf(title, sizeof(title), "ibfab compare: %s", c->workload);
	plot_svg_begin(&svg, out, 960, 800, title);
	plot_svg_text(&svg, 480, 42, "middle", 12, c->topo_desc);
	if (bins.log) {
		snprintf(tpt, sizeof(tpt), "Throughput into the hosts (wire bytes per interval, %d per decade)",
			 LOG_BINS_PER_DECADE);
		snprintf(xl, sizeof(xl), "simulated time (%s, log scale)", tun);
	} else {
		double st = bins.step;

		/* the interval is 1, 2 or 5 x 10^k ps: a whole number of ns, us or ms */
		snprintf(tpt, sizeof(tpt), "Throughput into the hosts (wire bytes per %.0f %s)",
			 st >= 1e9 ? st / 1e9 : st >= 1e6 ? st / 1e6 : st >= 1e3 ? st / 1e3 : st,
			 st >= 1e9 ? "ms" : st >= 1e6 ? "\xc2\xb5s" : st >= 1e3 ? "ns" : "ps");
		snprintf(xl, sizeof(xl), "simulated time (%s)", tun);
	}
	ch = (struct plot_chart){ .title = tpt, .xlabel = xl, .ylabel = "throughput (Gb/s)",
				  .xlog = bins.log, .xmin = bins.log ? NAN : 0, .xmax = NAN,
				  .ymin = 0, .ymax = NAN, .series = tp, .nseries = c->nres };
	plot_svg_chart(&svg, 0, 56, 960, 370, &ch);
	snprintf(cxl, sizeof(cxl), "%s completion time (%s, log scale)",
		 c->is_trace ? "transfer" : "message", cun);
	ch = (struct plot_chart){
		.title = c->is_trace ? "Transfer completion times (CDF)" : "Message completion times (CDF)",
		.xlabel = cxl, .ylabel = "fraction completed", .xlog = true,
		.xmin = NAN, .xmax = NAN, .ymin = 0, .ymax = 1, .series = cdf, .nseries = c->nres };
	plot_svg_chart(&svg, 0, 430, 960, 370, &ch);
	rc = plot_svg_end(&svg);
out:
	for (size_t i = 0; i < SIM_ARRAY_SIZE(buf); i++)
		free(buf[i]);
	free(bins.edge);
	return rc;
}

/* ---- the pipeline ------------------------------------------------------- */

/* The host count of the user's topology, for the built-in workload. */
static int probe_hosts(struct cmp_ctx *c, int *nhosts)
{
	struct cli_run_opts ro = c->o->run;
	const char *tr[] = { "permutation:size=1" };
	struct cli_run run;
	int rc;

	ro.traffic = tr;
	ro.ntraffic = 1;
	ro.sets = &c->o->run.sets[1];	/* without fabric= */
	ro.nsets = c->o->nsets;
	ro.quiet = true;
	cli_run_init(&run, &ro);
	rc = cli_run_prepare(&run);
	if (rc) {
		char buf[1100];

		sim_diag_format(&run.d, buf, sizeof(buf));
		sim_diag_set(&c->d, NULL, 0, 0, "%s", buf);
	} else {
		*nhosts = net_nhosts(&run.net);
	}
	cli_run_fini(&run);
	return rc;
}

static int setup_workload(struct cmp_ctx *c)
{
	struct cmp_opts *o = c->o;
	int nhosts = BUILTIN_RANKS, nranks, nsend;

	if (o->run.trace || o->run.ntraffic)
		return 0;
	if (o->run.topo && probe_hosts(c, &nhosts))
		return -1;
	if (nhosts < 2)
		return sim_diag_set(&c->d, o->run.topo, 0, 0,
				    "the built-in workload needs at least 2 hosts, the topology has %d; "
				    "give --trace or --traffic", nhosts);
	c->builtin_text = builtin_trace(nhosts, &nranks, &nsend);
	if (!c->builtin_text)
		return sim_diag_set(&c->d, NULL, 0, 0, "out of memory");
	o->run.trace = BUILTIN_NAME;
	o->run.trace_text = c->builtin_text;
	c->workload_default = true;
	snprintf(c->workload, sizeof(c->workload),
		 "ring allreduce %s over %d ranks + %d-to-1 incast of %s per sender "
		 "(ranks %d..%d -> 0)", BUILTIN_AR_BYTES, nranks, nsend, BUILTIN_INCAST_BYTES,
		 nranks - nsend, nranks - 1);
	return 0;
}

static int outputs_open(struct cmp_ctx *c)
{
	const struct cmp_opts *o = c->o;

	if (o->json && !strcmp(o->json, "-"))
		c->json_stdout = true;
	else if (o->json && cli_out_open(&c->json, o->json, false, &c->d))
		return -1;
	if (o->csv && cli_out_open(&c->csv, o->csv, false, &c->d))
		return -1;
	if (o->plot && cli_out_open(&c->plot, o->plot, false, &c->d))
		return -1;
	if (o->html && cli_out_open(&c->html, o->html, false, &c->d))
		return -1;
	return 0;
}

/* --html: the page with every fabric's run, the table and the charts. */
static int write_html(FILE *out, struct cmp_ctx *c)
{
	struct cli_html_view v[NFABRICS];
	char *text = NULL, *charts = NULL, sub[1100];
	size_t tl = 0, cl = 0;
	FILE *tm = open_memstream(&text, &tl), *cm = open_memstream(&charts, &cl);
	bool bad = !tm || !cm;
	int rc = -1;

	if (tm) {
		print_table(tm, c);
		bad |= fclose(tm) != 0;
	}
	if (cm) {
		bad |= write_plot(cm, c) != 0;
		bad |= fclose(cm) != 0;
	}
	if (bad) {
		sim_diag_set(&c->d, c->html.path, 0, 0, "out of memory");
		goto out;
	}
	for (int k = 0; k < c->nres; k++)
		v[k] = (struct cli_html_view){ .name = fab_fabric_names[c->res[k].fabric],
					       .links = c->res[k].hl, .ops = c->res[k].ops,
					       .nops = c->res[k].nops, .end_ps = c->res[k].end_ps };
	snprintf(sub, sizeof(sub), "%s; %s", c->topo_desc, c->workload);
	struct cli_html_page pg = { .title = "ibfab compare", .subtitle = sub, .text = text,
				    .charts_title = "Throughput and completion times",
				    .charts_svg = charts, .views = v, .nviews = c->nres };

	if (cli_html_write(out, &pg, &c->d)) {
		if (!c->d.file[0])
			snprintf(c->d.file, sizeof(c->d.file), "%s", c->html.path);
		goto out;
	}
	rc = 0;
out:
	free(text);
	free(charts);
	return rc;
}

static int outputs_write(struct cmp_ctx *c)
{
	FILE *table = stdout;

	if (c->json_stdout) {
		if (write_json(stdout, c))
			return sim_diag_set(&c->d, "<stdout>", 0, 0, "write error");
		table = c->o->quiet ? NULL : stderr;
	} else if (c->json.f && write_json(c->json.f, c)) {
		return sim_diag_set(&c->d, c->json.path, 0, 0, "write error");
	}
	if (c->csv.f && write_csv(c->csv.f, c))
		return sim_diag_set(&c->d, c->csv.path, 0, 0, "write error");
	if (c->plot.f && write_plot(c->plot.f, c))
		return sim_diag_set(&c->d, c->plot.path, 0, 0, "write error (or out of memory)");
	if (c->html.f && write_html(c->html.f, c))
		return -1;
	if (cli_out_close(&c->json, &c->d) || cli_out_close(&c->csv, &c->d) ||
	    cli_out_close(&c->plot, &c->d) || cli_out_close(&c->html, &c->d))
		return -1;
	if (cli_out_commit(&c->json, &c->d) || cli_out_commit(&c->csv, &c->d) ||
	    cli_out_commit(&c->plot, &c->d) || cli_out_commit(&c->html, &c->d))
		return -1;
	if (table)
		print_table(table, c);
	if (fflush(stdout) || ferror(stdout))
		return sim_diag_set(&c->d, "<stdout>", 0, 0, "write error");
	return 0;
}

/* 0 done, -1 failed with c->d filled, 1 failed and already said why. */
static int compare_pipeline(struct cmp_ctx *c)
{
	if (sim_log_init_from_env())
		return 1;
	if (setup_workload(c)) {
		c->same_error = true;	/* the inputs: every process alike */
		return -1;
	}
	if (!c->par_rank && outputs_open(c))
		return -1;
	for (int k = 0; k < c->o->nfabrics; k++)
		if (run_fabric(c, k))
			return -1;
	if (c->progress)
		fputs("\r\033[K", stderr);
	return c->par_rank ? 0 : outputs_write(c);	/* rank 0 writes what all ran */
}

int cli_compare_main(int argc, char **argv)
{
	struct cmp_opts o = { .run = { .seed = DEFAULT_SEED } };
	struct cmp_ctx c;
	char buf[1200];
	int rc, rank = 0, size = 1;

	if (cli_par_start("compare", &argc, &argv, &rank, &size))
		return 1;
	/* each repeatable option appears at most argc times; sets[0] is fabric= */
	o.run.traffic = calloc((size_t)argc + 1, sizeof(*o.run.traffic));
	o.run.sets = calloc((size_t)argc + 2, sizeof(*o.run.sets));
	o.run.faults = calloc((size_t)argc + 1, sizeof(*o.run.faults));
	if (!o.run.traffic || !o.run.sets || !o.run.faults) {
		fputs("ibfab compare: out of memory\n", stderr);
		rc = 1;
		goto out_opts;
	}
	rc = parse_args(argc, argv, &o);
	if (rc) {
		rc = rc < 0 ? 0 : rc;
		goto out_opts;
	}
	o.run.nsets = o.nsets + 1;	/* the fabric's own, first */
	o.run.reproducible = o.reproducible;
	o.run.quiet = o.quiet;

	memset(&c, 0, sizeof(c));
	c.o = &o;
	c.par_rank = rank;
	rc = cli_par_choose("compare", o.threads, size, &c.par_size, &c.par_ops);
	if (rc)
		goto out_opts;
	c.progress = !o.quiet && isatty(STDERR_FILENO) && c.par_size == 1;
	rc = compare_pipeline(&c);
	if (c.progress)
		fputs("\r\033[K", stderr);
	if (rc < 0) {
		sim_diag_format(&c.d, buf, sizeof(buf));
		if (size == 1)
			fprintf(stderr, "ibfab compare: %s\n", buf);
		else if (!c.same_error || !rank)	/* what all meet alike, rank 0 says */
			fprintf(stderr, "ibfab compare: process %d of %d: %s\n", rank, size, buf);
		rc = 1;
	}
	cli_out_free(&c.json);
	cli_out_free(&c.csv);
	cli_out_free(&c.plot);
	cli_out_free(&c.html);
	for (int k = 0; k < NFABRICS; k++)
		result_free(&c.res[k]);
	free(c.builtin_text);
out_opts:
	if (size > 1)
		cli_par->fini(NULL);	/* MPI itself */
	free(o.run.traffic);
	free(o.run.sets);
	free(o.run.faults);
	return rc;
}
