/* SPDX-License-Identifier: MIT */
/*
 * cli_run.c - `ibfab run`: options, the pipeline, output files, progress.
 *
 * The pipeline is fixed (docs/architecture.md): debug switches from IBFAB_DEBUG;
 * parameters = defaults, then --preset, then every --set in command-line
 * order, then the cross checks; the topology (a file, or the built-in fat
 * tree generated into memory); routes (--routing, default minhop, or the
 * tables of --lft); every --traffic spec; the
 * output files are opened; the fabric is built and run; reports written.
 * Each step either succeeds or fills one diagnostic, which becomes the one
 * line `ibfab run: file:line:col: message` on stderr and exit status 1.
 * The steps are public (cli_run.h: cli_run_prepare, cli_run_simulate,
 * cli_run_fill_report) so `ibfab compare` runs the same pipeline once per
 * fabric, and so are the staged output files.
 *
 * Output files are never half-written (tools/cli_out.h): a regular file is
 * staged under a hidden temporary name beside it and renamed into place
 * only after everything succeeded; devices and FIFOs are written in place.
 * On an error the temporaries are removed, and so is a --csv directory we
 * created; SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGPIPE do the same.
 *
 * Progress goes on stderr only when it is a terminal: the engine's
 * after_event hook (if the fabric left it free) looks at the clock every
 * 2^16 events, so the cost is one branch per event, and redraws one line
 * at most every 0.5 s.
 */
#define _GNU_SOURCE	/* asprintf */
#include "tools/cli_run.h"

#include "tools/cli_fault.h"
#include "tools/cli_sharp.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "models/fabric/fab.h"
#include "models/net/net.h"
#include "models/sm/sm.h"
#include "sim/sim_diag.h"
#include "sim/sim_log.h"
#include "sim/sim_par.h"
#include "sim/sim_parse.h"
#include "tools/cli_help.h"
#include "tools/cli_perftest.h"
#include "tools/cli_report.h"
#include "tools/cli_trace.h"
#include "traces/trace_replay.h"
#include "topologies/lft.h"
#include "topologies/topo.h"
#include "traces/trace_spec.h"

#define DEFAULT_SEED 1

/*
 * The built-in load on the built-in fat tree, chosen to finish in well under
 * a second of wall time yet show what the model is for: a random permutation
 * of 1 MiB messages loads every link and the spine uplinks (with 2 links per
 * spine per leaf the fabric is not blocking, but minhop's static routes make
 * some uplinks carry two flows); a 4-to-1 incast of 256 KiB onto h0 backs
 * up credits into the leaf and spines (PortXmitWait); and a 64-byte
 * ping-pong between h5 and h10, across the spines, shows latency under load.
 */
static const char *const default_traffic[] = {
	"permutation:size=1MiB",
	"incast:dst=h0,n=4,size=256KiB",
	"pingpong:a=h5,b=h10,size=64B,count=100",
};
/* On a user's topology without --traffic: host names are unknown, so only
 * the permutation, which works on any fabric with two hosts or more. */
static const char *const default_traffic_user[] = {
	"permutation:size=1MiB",
};

/* ---- help --------------------------------------------------------------- */

void cli_run_usage(FILE *out)
{
	cli_help_put(
"usage: ibfab run [options]\n"
"\n"
"Simulate traffic over an InfiniBand fabric and report what happened.\n"
"\n"
"Inputs:\n"
"  --topo FILE        topology in ibnetdiscover or ibsim net format.\n"
"                     Default: a built-in two-level fat tree, 16 hosts h0..h15\n"
"                     at 4xHDR (4 leaves x 4 hosts, 2 spines, 2 links per spine\n"
"                     per leaf), routed with minhop (see Routing).\n"
"  --traffic SPEC     traffic to run; repeat to combine (see Traffic below).\n"
"                     Default on the built-in topology:\n"
"                       permutation:size=1MiB\n"
"                       incast:dst=h0,n=4,size=256KiB\n"
"                       pingpong:a=h5,b=h10,size=64B,count=100\n"
"                     and permutation:size=1MiB on a --topo file.\n"
"  --preset NAME      fabric parameter preset (default hdr; see --help-params).\n"
"  --set KEY=VALUE    override one parameter; repeatable, applied in order\n"
"                     after the preset (see --help-params for every key);\n"
"                     'link[sw1/3].speed=EDR' sets one cable's (or a group's);\n"
"                     'link[sw1/9].peer=sw2/9' adds a cable, 'switch[s9].ports=8'\n"
"                     a switch (--help-params).\n"
"                     --set fabric=@fabrics|@ runs the same\n"
"                     topology and traffic on InfiniBand (default), RoCEv2\n"
"                     with PFC, RoCEv2 without it, or TCP (eth.*, dcqcn.*,\n"
"                     tcp.* keys); --set ib.cc=on adds IB congestion\n"
"                     control. 'ibfab compare' runs them side by side.\n"
"  --seed N           seed of every random choice (default 1).\n"
"  --threads N        cut the fabric into N partitions, one a thread (the\n"
"                     same results; see Parallel below).\n"
"  --sync windows|null  how the threads keep in step: a barrier every\n"
"                     look-ahead of simulated time (windows, the default) or\n"
"                     null messages, each partition running as far as the\n"
"                     others' promises allow, with no barrier (the same\n"
"                     results; docs/performance.md says where each wins).\n"
"  --op write|read|send  the work request of every --traffic spec that names\n"
"                     none (default write; the spec key op= overrides it).\n"
"\n"
"Workloads (docs/trace-format.md, docs/collectives.md, docs/importers.md):\n"
"  --trace FILE       replay a workload: the native .trace format (ranks,\n"
"                     placement, send/recv/compute and collectives with\n"
"                     algorithms), an htsim connection matrix (.cm), an HPCC\n"
"                     flow file, an NCCL COLL log, an nccl-tests command line\n"
"                     or a Chakra execution trace (NAME.0.et). Collectives are\n"
"                     lowered to point-to-point transfers (RDMA WRITE with\n"
"                     immediate, one RC QP per rank pair) and the report adds\n"
"                     nccl-tests' table (time, algbw, busbw), each rank's\n"
"                     compute and communication time and the critical path.\n"
"                     --traffic beside it is background load on the same\n"
"                     fabric: the run ends with the workload, and the report\n"
"                     says how much of the background got through by then.\n"
"                     Repeated, --trace runs several jobs at once, each on\n"
"                     the hosts after the previous jobs' ranks.\n"
"  --trace-format F   @trace-formats@\n"
"                     (default: recognised from the file).\n"
"  --explain OP       print the point-to-point steps one collective is\n"
"                     lowered to (OP: its id, or index in the trace) and exit.\n"
"  --timeline FILE    a Chrome-trace / Perfetto JSON timeline: one track per\n"
"                     rank with its compute, collectives and transfers.\n"
"                     With --csv DIR, DIR/collectives.csv has one row per\n"
"                     collective (the JSON \"collectives\" fields).\n"
"\n"
"Routing (docs/routing.md):\n"
"  --routing NAME     the subnet manager's routing engine, by OpenSM's names:\n"
"@engine-lines@"
"  --roots LIST       updn roots: switch descriptions, ids or GUIDs, comma\n"
"                     separated (default: chosen as OpenSM does).\n"
"  --lmc N            give each CA port 2^N LIDs (0..7, IBA 7.11.1), each\n"
"                     routed on its own; traffic uses the base LID. 0 keeps\n"
"                     the LMC of LIDs the topology file gives.\n"
"  --sm NODE          where the subnet manager runs, for a topology without\n"
"                     LIDs: its port gets LID 1, the others follow by port\n"
"                     GUID, as OpenSM assigns them (default: the file's\n"
"                     first node, where ibsim attaches the SM).\n"
"  --lft FILE         do not route: use the forwarding tables (and LIDs) of\n"
"                     OpenSM's opensm-lfts.dump or of concatenated 'ibroute'\n"
"                     output taken on the fabric; switches and ports are\n"
"                     matched by GUID. Excludes --routing, --roots, --lmc,\n"
"                     --sm.\n"
"  --allow-unreachable  run even when the forwarding tables give some pair of\n"
"                     hosts the traffic uses no route (a split fabric, a\n"
"                     partial --lft dump): their messages are lost. Without\n"
"                     it such a run is refused before it starts, naming the\n"
"                     pairs.\n"
"\n"
"Outputs:\n"
"  (stdout)           a human summary.\n"
"  --json FILE|-      the results as JSON (format below). With '-', JSON goes\n"
"                     to stdout and the summary to stderr (or nowhere, with\n"
"                     --quiet).\n"
"  --no-flows         leave \"flows\" out of the JSON: one record a message or,\n"
"                     for a trace, a transfer, which a collective on\n"
"                     thousands of GPUs makes gigabytes of (flows.csv still\n"
"                     lists them; a trace's replay then builds no flow list).\n"
"  --csv DIR          time series and a flow table: DIR/links.csv and\n"
"                     DIR/flows.csv (DIR is created if missing). The interval\n"
"                     is sim.sample_ns; 0 (the default) picks one that gives\n"
"                     roughly 1000 samples from an estimate of the run length,\n"
"                     fewer where that would be more than half of\n"
"                     sim.max_csv_rows rows. links.csv stops at that many\n"
"                     rows (whole samples), with a warning before the run\n"
"                     when the interval given would reach it, and one after.\n"
"  --html FILE        a self-contained HTML report for a browser: the fabric\n"
"                     drawn by Graphviz (dot), each cable coloured by its\n"
"                     utilisation, credit waits, PFC pauses or buffer\n"
"                     occupancy in the frame a time slider shows (sampled\n"
"                     every sim.sample_ns, chosen as for --csv), the busiest\n"
"                     cable ends, the fabric-wide figure over time, a trace's\n"
"                     collectives and sends on a timeline, the completion-time\n"
"                     CDF and the summary (docs/report.md). Fabrics of more\n"
"                     than 600 nodes are drawn without their hosts.\n"
"  --pcap FILE        the packets as a capture (pcap, nanosecond times) for\n"
"                     Wireshark or tshark: native InfiniBand, or RoCEv2 and\n"
"                     TCP over Ethernet, headers as the model has them.\n"
"                     Without --pcap-filter: what every host sends.\n"
"  --pcap-filter F    KEY=V[,KEY=V...]: node=NODE[/PORT] (both directions of\n"
"                     the cables there; a name, GUID or pattern, as in\n"
"                     link[...]), from=TIME, to=TIME, count=N (the first N).\n"
"  --fault SPEC       a failure during the run (repeatable): 'link NODE/PORT\n"
"                     down at TIME' (the cable at that port, both ends),\n"
"                     'link NODE/PORT up at TIME', 'node NODE down|up at TIME'\n"
"                     (every cable of a switch or host); 'link NODE/PORT\n"
"                     ber=X at TIME' or drop_prob=P: it corrupts from then\n"
"                     on; 'link NODE/PORT flap at TIME for DURATION [every\n"
"                     PERIOD count N]'. What a dead link carries is lost;\n"
"                     RC retries; the subnet manager installs new tables\n"
"                     (the run's --routing, checked for credit loops)\n"
"                     sm.reroute_ns later (0: never). 'lft FILE at TIME':\n"
"                     the tables of an OpenSM LFT dump for the new state are\n"
"                     installed then (a run on --lft reroutes only so).\n"
"                     docs/faults.md.\n"
"  --reproducible     leave every wall-clock figure out of the outputs (wall_s\n"
"                     is written as 0): two runs with the same inputs and seed\n"
"                     then give byte-identical JSON and CSV, which is what the\n"
"                     determinism tests compare.\n"
"  --quiet            nothing on stderr but errors and warnings: no progress\n"
"                     line (shown only when stderr is a terminal) and, with\n"
"                     --json -, no summary.\n"
"  --help             this text.   --help-params   parameters and presets.\n"
"\n"
"Output files never destroy what is at their path. A regular file (or a new\n"
"one) is written under a hidden temporary name beside it and renamed into\n"
"place, keeping the old file's mode, only when the run succeeded: on any\n"
"error, or SIGINT, SIGTERM, SIGHUP or SIGQUIT, none is left behind. A\n"
"symbolic link is followed (the file it points to is written; the link\n"
"stays). A character device (/dev/null) or a FIFO is written in place; a\n"
"FIFO nobody reads is an error. A directory, socket or block device is\n"
"refused. Every write is checked, stdout's too: a full disk is exit 1.\n"
"\n"
"JSON (keys in this order; times in ps, sizes in bytes):\n"
"  ibfab_version seed reproducible complete sim_time_ps events engine\n"
"  partitions wall_s\n"
"  events_per_s packet_hops_per_s            (left out with --reproducible)\n"
"  profile {setup_s {topology routes traffic fabric cut} run_s lookahead_ps\n"
"          cables cut_cables windows [trace_steps trace_steps_stored\n"
"          trace_steps_held] partitions[] {switches hosts events\n"
"          messages_out idle_windows busy_s wait_s}}   (--profile)\n"
"  messages_total messages_delivered messages_lost\n"
"  background {specs messages_total messages_delivered messages_lost\n"
"          completion_p50_ps completion_p99_ps}  (--traffic beside --trace)\n"
"  packets_delivered\n"
"  bytes_delivered (on the wire) payload_bytes_delivered packet_hops drops\n"
"  drops_vl15 drops_route drops_corrupt drops_congestion drops_link\n"
"  pause_frames\n"
"  paused_ps ecn_marks cnps tcp_segments tcp_retransmits tcp_timeouts\n"
"  tcp_fast_recoveries cpu_ps kernel {syscalls interrupts context_switches\n"
"  cpu_copy_bytes cached_copy_bytes syscall_ps copy_ps protocol_ps\n"
"  interrupt_ps wakeup_ps} acks\n"
"  retransmitted_packets seq_naks rnr_naks ack_timeouts\n"
"  load_balancing lb_choices lb_off_table    table, ecmp, ar, spray...: the\n"
"                                             choices among equal-cost ports\n"
"                                             and those off the LFT's port\n"
"  ar_notifications                           sent between IB switches (ib.arn)\n"
"  path_diversity {flows mean max spread}     the paths each flow's data took\n"
"                                             (told by the choices among\n"
"                                             equal-cost ports): flows, paths\n"
"                                             per flow, the most, those over 2+\n"
"  ooo_held                                   RC packets held out of order\n"
"  fc_packets xmit_wait_ps throughput_gbps\n"
"  completion_ps {count min p50 p99 max}      end - start of each message\n"
"  link_load {switch_links mean max node port}  switch-to-switch links:\n"
"                                             busy time over simulated time\n"
"  faults {events [{what at_ps applied}] reroutes [{at_ps ok acyclic\n"
"          lost_with_old_tables note [tables]}] packets_lost qps_recovered\n"
"          last_recovery_ps recovered [{node qpn after_ps}] qps_failed}\n"
"                                             (with --fault only)\n"
"  sharp {aggregation_nodes levels root reductions bytes_reduced\n"
"          peak_reductions peak_node tree_waits tree_wait_ps}\n"
"                                             (a SHARP tree: algo=collnet)\n"
"  buf_high {bytes node port vl}              the fullest receive buffer\n"
"  params {every --set key}                   sizes in bytes\n"
"  topology {source default nodes switches cas routers hosts links}\n"
"  traffic {default specs[]}\n"
"  flows [{id src dst bytes sl stream after op done start_ps first_tx_ps\n"
"          end_ps completed_ps status}]      end: data delivered; completed:\n"
"                                             the sender's work completion;\n"
"                                             times null when not known;\n"
"                                             none with --no-flows\n"
"  hosts [{node pcie_rd_bytes pcie_wr_bytes gpu_pcie_bytes root_complex_bytes\n"
"          hostmem_bytes cpu_ps staging_copies posts cqes}]  (host.model=on)\n"
"  ports [{node node_id node_type port peer peer_id peer_port rate rate_gbps\n"
"          prop_ps busy_ps vls [{vl PortXmitData PortXmitPkts PortRcvData\n"
"          PortRcvPkts PortXmitWait_ps PortXmitDiscards buf_high_bytes\n"
"          fc_pkts PortRcvErrors}]}]          VLs that carried nothing left out\n"
"  collectives [{name collective algorithm protocol auto bytes ranks\n"
"          start_ps end_ps algbw_gbps busbw_gbps}]   auto: NCCL's tuning chose\n"
"  ranks [{rank host compute_ps comm_ps\n"
"          overlap_ps end_ps}]  critical_path {steps compute_ps comm_ps}\n"
"                                             (--trace)\n"
"  mpi {rndv_bytes short eager rendezvous sends}   (--trace, mpi.proto=ucx)\n""  perftest [{spec test op mode ... rows}]   perftest specs only (docs/perftest.md)\n"
"  PortXmitData and PortRcvData count bytes (the PMA counts 4-byte words).\n"
"\n"
"CSV:\n"
"  links.csv  time_ps,node,port,peer,vl,util,buf_bytes,credits\n"
"             one row per sample, port and VL in use; util is the fraction\n"
"             of the interval the port's transmitter was busy (all VLs),\n"
"             buf_bytes the port's receive-buffer occupancy on that VL,\n"
"             credits the transmitter's available credits (64-byte blocks).\n"
"  flows.csv  id,src,dst,bytes,sl,stream,after,done,start_ps,first_tx_ps,\n"
"             end_ps,completion_ps   (times empty for unfinished messages)\n"
"\n"
"Parallel: '--threads N' or 'mpirun -np N ibfab run ...' cuts the fabric\n"
"into N partitions (a switch with its HCAs the unit), one a thread or a\n"
"process; each builds the same model and runs its own part, the first\n"
"writes the outputs. The results are the one-thread run's, byte for byte,\n"
"but for \"events\", \"engine\" and \"partitions\" (docs/architecture.md);\n"
"'ibfab compare' cuts each fabric's run the same way.\n"
"A --trace gets a replay in every partition. Not yet with --fault, --csv,\n"
"--html, --pcap, sim.check, sim.max_time_ns, --traffic beside --trace, GPU\n"
"transfers staged through host memory (NCCL's LL between servers,\n"
"host.gpudirect=off), mpi.proto=ucx, nor both at once.\n"
"  --profile          where the wall time went: the set-up's stages\n"
"                     (topology, routes, traffic, fabric, the cut), a trace's\n"
"                     steps and the most the replay held at once and, cut\n"
"                     into partitions, each one's switches and hosts, events,\n"
"                     messages to the others, idle windows, time running and\n"
"                     waiting, and the imbalance (summary and JSON; the times\n"
"                     are 0 with --reproducible).\n"
"Environment: IBFAB_DEBUG=credit,vlarb,... turns on debug logs (stderr).\n"
"Exit status: 0 done (also when sim.max_time_ns cut a run of messages\n"
"short: see 'complete' in the JSON), 1 bad input or a failed run (one line\n"
"on stderr; a --trace run cut short by sim.max_time_ns is one: its report\n"
"needs every step), 2 bad usage (unknown option, missing or malformed value).\n"
"\n", out);
	trace_spec_help(out);
	fputs(
"\n"
"Examples:\n"
"  ibfab run\n"
"  ibfab run --topo fabric.topo --traffic alltoall:size=64KiB --json out.json\n"
"  ibfab run --preset edr --set ib.vls=2 --traffic permutation:size=4MiB --csv ts\n"
"  ibfab run --routing ftree --traffic shift:k=5,size=1MiB\n"
"  ibfab run --json - --quiet --reproducible | python3 -m json.tool\n", out);
}

void cli_run_help_params(FILE *out)
{
	struct fab_params p;

	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);

	fab_params_default(&p);
	fputs("Fabric parameters (ibfab run --set KEY=VALUE), with the default values:\n\n", out);
	/* the keys' meanings name lists from their tables (cli_help.h) */
	if (m) {
		fab_params_print(&p, m);
		fclose(m);
		cli_help_put(text, out);
		free(text);
	} else {
		fab_params_print(&p, out);
	}
	fputs("\nOne cable or a group (what-ifs): --set 'link[NODE].KEY=VALUE',\n"
	      "'link[NODE/PORT].KEY=VALUE' or 'link[NODE/LO-HI].KEY=VALUE' sets KEY (width,\n"
	      "speed, cable_m, drop_prob, ber; state=down takes the cable out before routing,\n"
	      "state=active puts it back) for the cables at those ports of NODE: a node's id,\n"
	      "description or GUID (0x...), or a shell pattern ('leaf*'). Both ends of a\n"
	      "cable take it; later settings win. A setting that names no cable is refused.\n"
	      "A cable the file does not have: 'link[NODE/PORT].peer=NODE2/PORT2' joins two\n"
	      "free ports (the preset's rate, unless width or speed settings name it); a\n"
	      "switch: 'switch[NAME].ports=N' adds one of N ports, cabled with peer settings.\n"
	      "Switches are added, then cables cut (state=down), then added, then routed.\n", out);
	fputs("\nPresets (ibfab run --preset NAME):", out);
	for (int i = 0; fab_preset_names[i]; i++)
		fprintf(out, " %s", fab_preset_names[i]);
	fputs("\n", out);
}

/* ---- options ------------------------------------------------------------ */

enum opt_id {
	OPT_HELP, OPT_HELP_PARAMS, OPT_TOPO, OPT_TRAFFIC, OPT_PRESET, OPT_SET,
	OPT_SEED, OPT_JSON, OPT_CSV, OPT_REPRODUCIBLE, OPT_QUIET,
	OPT_ROUTING, OPT_ROOTS, OPT_LMC, OPT_SM, OPT_LFT,
	OPT_TRACE, OPT_TRACE_FORMAT, OPT_EXPLAIN, OPT_TIMELINE, OPT_HTML, OPT_OP,
	OPT_ALLOW_UNREACHABLE, OPT_PCAP, OPT_PCAP_FILTER, OPT_FAULT, OPT_THREADS,
	OPT_PROFILE, OPT_NO_FLOWS, OPT_SYNC,
};

static const struct cli_opt run_options[] = {
	{ "--help", OPT_HELP, false },
	{ "-h", OPT_HELP, false },
	{ "--help-params", OPT_HELP_PARAMS, false },
	{ "--topo", OPT_TOPO, true },
	{ "--traffic", OPT_TRAFFIC, true },
	{ "--preset", OPT_PRESET, true },
	{ "--set", OPT_SET, true },
	{ "--seed", OPT_SEED, true },
	{ "--json", OPT_JSON, true },
	{ "--csv", OPT_CSV, true },
	{ "--reproducible", OPT_REPRODUCIBLE, false },
	{ "--quiet", OPT_QUIET, false },
	{ "-q", OPT_QUIET, false },
	{ "--routing", OPT_ROUTING, true },
	{ "--roots", OPT_ROOTS, true },
	{ "--lmc", OPT_LMC, true },
	{ "--sm", OPT_SM, true },
	{ "--lft", OPT_LFT, true },
	{ "--trace", OPT_TRACE, true },
	{ "--trace-format", OPT_TRACE_FORMAT, true },
	{ "--explain", OPT_EXPLAIN, true },
	{ "--timeline", OPT_TIMELINE, true },
	{ "--html", OPT_HTML, true },
	{ "--pcap", OPT_PCAP, true },
	{ "--pcap-filter", OPT_PCAP_FILTER, true },
	{ "--op", OPT_OP, true },
	{ "--allow-unreachable", OPT_ALLOW_UNREACHABLE, false },
	{ "--fault", OPT_FAULT, true },
	{ "--threads", OPT_THREADS, true },
	{ "--profile", OPT_PROFILE, false },
	{ "--no-flows", OPT_NO_FLOWS, false },
	{ "--sync", OPT_SYNC, true },
};

int cli_usage_error(const char *cmd, const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "ibfab %s: ", cmd);
	fprintf(stderr, fmt, a, b);
	fprintf(stderr, " (see 'ibfab %s --help')\n", cmd);
	return 2;
}

/* An option that may be given once: refuse a second one rather than guess. */
int cli_set_once(const char *cmd, const char **slot, const char *name, const char *val)
{
	if (*slot)
		return cli_usage_error(cmd, "option '%s' given twice%s", name, "");
	if (!*val)
		return cli_usage_error(cmd, "option '%s' needs a non-empty value%s", name, "");
	*slot = val;
	return 0;
}

int cli_opt_next(const char *cmd, const struct cli_opt *opts, size_t nopts, int argc,
		 char **argv, int *i, char *name, size_t namelen, const char **val)
{
	const char *arg = argv[*i], *eq;
	size_t k;

	*val = NULL;
	if (arg[0] != '-' || !arg[1]) {
		cli_usage_error(cmd, "unexpected argument '%s'%s", arg, "");
		return -1;
	}
	eq = strchr(arg, '=');
	snprintf(name, namelen, "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
	for (k = 0; k < nopts; k++)
		if (!strcmp(name, opts[k].name))
			break;
	if (k == nopts) {
		cli_usage_error(cmd, "unknown option '%s'%s", name, "");
		return -1;
	}
	if (opts[k].arg) {
		if (eq)
			*val = eq + 1;
		else if (*i + 1 < argc)
			*val = argv[++*i];
		else {
			cli_usage_error(cmd, "option '%s' needs a value%s", name, "");
			return -1;
		}
	} else if (eq) {
		cli_usage_error(cmd, "option '%s' takes no value%s", name, "");
		return -1;
	}
	return (int)k;
}

static int usage_error(const char *fmt, const char *a, const char *b)
{
	return cli_usage_error("run", fmt, a, b);
}

static int set_once(const char **slot, const char *name, const char *val)
{
	return cli_set_once("run", slot, name, val);
}

/*
 * Returns 0 to run, -1 when help was printed (exit 0), or 2 (usage error,
 * message printed). Accepts "--opt VALUE" and "--opt=VALUE".
 */
static int parse_args(int argc, char **argv, struct cli_run_opts *o)
{
	for (int i = 1; i < argc; i++) {
		const char *val;
		char name[64];
		int k = cli_opt_next("run", run_options, SIM_ARRAY_SIZE(run_options), argc, argv,
				     &i, name, sizeof(name), &val);

		if (k < 0)
			return 2;

		int rc = 0;
		char err[256];

		switch (run_options[k].id) {
		case OPT_HELP:
			cli_run_usage(stdout);
			return -1;
		case OPT_HELP_PARAMS:
			cli_run_help_params(stdout);
			return -1;
		case OPT_TOPO:
			rc = set_once(&o->topo, name, val);
			break;
		case OPT_PRESET:
			rc = set_once(&o->preset, name, val);
			break;
		case OPT_JSON:
			rc = set_once(&o->json, name, val);
			break;
		case OPT_CSV:
			rc = set_once(&o->csv, name, val);
			break;
		case OPT_TRAFFIC:
			o->traffic[o->ntraffic++] = val;
			break;
		case OPT_SET:
			o->sets[o->nsets++] = val;
			break;
		case OPT_SEED:
			if (o->seed_given)
				return usage_error("option '%s' given twice%s", name, "");
			if (sim_parse_u64(val, &o->seed, err, sizeof(err)))
				return usage_error("%s: %s", name, err);
			o->seed_given = true;
			break;
		case OPT_THREADS:
			if (cli_parse_threads("run", name, val, &o->threads))
				return 2;
			break;
		case OPT_REPRODUCIBLE:
			o->reproducible = true;
			break;
		case OPT_PROFILE:
			o->profile = true;
			break;
		case OPT_NO_FLOWS:
			o->no_flows = true;
			break;
		case OPT_SYNC:
			if (cli_parse_sync("run", name, val, &o->sync_null))
				return 2;
			break;
		case OPT_QUIET:
			o->quiet = true;
			break;
		case OPT_ALLOW_UNREACHABLE:
			o->allow_unreachable = true;
			break;
		case OPT_ROUTING:
			rc = set_once(&o->routing, name, val);
			if (!rc && !sm_engine_find(val)) {
				char known[128] = "";

				for (int e = 0; sm_engines[e]; e++)
					snprintf(known + strlen(known), sizeof(known) - strlen(known),
						 "%s%s", e ? ", " : "", sm_engines[e]->name);
				fprintf(stderr, "ibfab run: unknown routing engine '%s' (known: %s)"
					" (see 'ibfab run --help')\n", val, known);
				return 2;
			}
			break;
		case OPT_ROOTS:
			rc = set_once(&o->roots, name, val);
			break;
		case OPT_SM:
			rc = set_once(&o->sm, name, val);
			break;
		case OPT_LMC:
			rc = set_once(&o->lmc, name, val);
			if (!rc && (strlen(val) != 1 || val[0] < '0' || val[0] > '7'))
				return usage_error("%s: expected 0..7, not '%s'", name, val);
			break;
		case OPT_LFT:
			rc = set_once(&o->lft, name, val);
			break;
		case OPT_TRACE:	/* repeatable: jobs side by side */
			if (!o->trace)
				o->trace = val;
			else
				o->more_traces[o->nmore_traces++] = val;
			break;
		case OPT_TRACE_FORMAT:
			rc = set_once(&o->trace_format, name, val);
			break;
		case OPT_EXPLAIN:
			rc = set_once(&o->explain, name, val);
			break;
		case OPT_TIMELINE:
			rc = set_once(&o->timeline, name, val);
			break;
		case OPT_HTML:
			rc = set_once(&o->html, name, val);
			break;
		case OPT_PCAP:
			rc = set_once(&o->pcap, name, val);
			break;
		case OPT_PCAP_FILTER:
			rc = set_once(&o->pcap_filter, name, val);
			break;
		case OPT_FAULT:
			o->faults[o->nfaults++] = val;
			break;
		case OPT_OP:
			rc = set_once(&o->op, name, val);
			if (!rc && strcmp(val, "write") && strcmp(val, "read") && strcmp(val, "send"))
				return usage_error("%s: expected write, read or send, not '%s'", name, val);
			break;
		}
		if (rc)
			return rc;
	}

	if (!o->trace && (o->trace_format || o->explain || o->timeline))
		return usage_error("--trace-format, --explain and --timeline need --trace%s%s", "", "");
	if (o->pcap_filter && !o->pcap)
		return usage_error("--pcap-filter needs --pcap FILE%s%s", "", "");
	if (o->lft && (o->routing || o->roots || o->lmc || o->sm))
		return usage_error("--lft loads the routes: it excludes --routing, --roots, --lmc and --sm%s%s",
				   "", "");
	return 0;
}

/* ---- output files (tools/cli_out.h) ------------------------------------ */

static int csv_open(struct cli_run *c, struct sim_diag *d)
{
	const char *dir = c->o->csv;
	char *p;
	int rc;

	if (cli_out_mkdir(dir, &c->csv_dir_created, d))
		return -1;
	if (asprintf(&p, "%s/links.csv", dir) < 0)
		return sim_diag_set(d, dir, 0, 0, "out of memory");
	rc = cli_out_open(&c->links, p, false, d);
	free(p);
	if (rc)
		return rc;
	if (asprintf(&p, "%s/flows.csv", dir) < 0)
		return sim_diag_set(d, dir, 0, 0, "out of memory");
	rc = cli_out_open(&c->flows, p, false, d);
	free(p);
	if (rc || !c->o->trace)
		return rc;
	if (asprintf(&p, "%s/collectives.csv", dir) < 0)
		return sim_diag_set(d, dir, 0, 0, "out of memory");
	rc = cli_out_open(&c->colls, p, false, d);
	free(p);
	return rc;
}

static int outputs_open(struct cli_run *c)
{
	/* a bad filter is refused before any output is made */
	if (c->o->pcap && cli_pcap_filter(&c->pcap, c->o->pcap_filter, &c->d))
		return -1;
	if (c->o->json && !strcmp(c->o->json, "-"))
		c->json_stdout = true;
	else if (c->o->json && cli_out_open(&c->json, c->o->json, false, &c->d))
		return -1;
	if (c->o->csv && csv_open(c, &c->d))
		return -1;
	if (c->o->timeline && cli_out_open(&c->timeline, c->o->timeline, false, &c->d))
		return -1;
	if (c->o->html && cli_out_open(&c->html, c->o->html, false, &c->d))
		return -1;
	if (c->o->pcap && cli_out_open(&c->pcap_out, c->o->pcap, false, &c->d))
		return -1;
	return 0;
}

/* On failure: no temporary left, and no directory we made. */
static void outputs_free(struct cli_run *c, bool failed)
{
	cli_out_free(&c->json);
	cli_out_free(&c->links);
	cli_out_free(&c->flows);
	cli_out_free(&c->timeline);
	cli_out_free(&c->html);
	cli_out_free(&c->colls);
	cli_out_free(&c->pcap_out);
	if (failed && c->csv_dir_created)
		rmdir(c->o->csv);
	cli_out_untrack_dir();
}

/* ---- pipeline ----------------------------------------------------------- */

/*
 * Defaults, then the topology's GPU servers (its "# ibfab: server=NAME":
 * their server.* keys and the fabric preset of their HCAs), then --preset,
 * then every --set: what the user says wins over what the file implies.
 */
static int setup_params(struct cli_run *c, const char *server)
{
	const struct srv_preset *sp = srv_preset_find(server);

	fab_params_default(&c->p);
	if (sp && (fab_params_preset(&c->p, sp->fabric, &c->d) ||
		   srv_params_preset(&c->p.server, sp->name, &c->d)))
		return -1;
	if (c->o->preset && fab_params_preset(&c->p, c->o->preset, &c->d))
		return -1;
	for (int i = 0; i < c->o->nsets; i++)
		if (fab_params_set(&c->p, c->o->sets[i], &c->d))
			return -1;
	return fab_params_check(&c->p, &c->d);
}

/* The built-in fat tree, generated as text and parsed like any file. */
static int load_default_topology(struct cli_run *c)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	int rc;

	if (!mem)
		return sim_diag_set(&c->d, "built-in topology", 0, 0, "out of memory");
	rc = topo_gen_fattree2(mem, TOPO_DEFAULT_LEAVES, TOPO_DEFAULT_SPINES,
			       TOPO_DEFAULT_HOSTS, TOPO_DEFAULT_LINKS,
			       TOPO_DEFAULT_RATE);
	if (fclose(mem) || rc < 0 || !text) {
		free(text);
		return sim_diag_set(&c->d, "built-in topology", 0, 0,
				    "the fat-tree generator failed");
	}
	rc = topo_load_string(text, "built-in-fattree2", &c->net, &c->d);
	free(text);
	snprintf(c->topo_desc, sizeof(c->topo_desc),
		 "built-in fat tree: %d leaves x %d hosts, %d spines, %d links per spine per leaf, %s",
		 TOPO_DEFAULT_LEAVES, TOPO_DEFAULT_HOSTS, TOPO_DEFAULT_SPINES,
		 TOPO_DEFAULT_LINKS, TOPO_DEFAULT_RATE);
	return rc;
}

/* A monotonic clock in seconds, for --profile's stages. */
static double mono_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int load_topology(struct cli_run *c)
{
	/* --lmc was checked to be one digit 0..7 */
	struct sm_opts so = {
		.roots = c->o->roots,
		.sm = c->o->sm,
		.lmc = (uint8_t)(c->o->lmc ? c->o->lmc[0] - '0' : 0),
	};
	double t0 = mono_s();
	int rc;

	if (c->o->topo) {
		snprintf(c->topo_desc, sizeof(c->topo_desc), "%s", c->o->topo);
		rc = topo_load(c->o->topo, &c->net, &c->d);
	} else {
		rc = load_default_topology(c);
	}
	if (rc || fab_link_sets_cut(&c->net, &c->p, &c->d))
		return -1;
	/* the GPU servers the file names: the parameters again, with theirs */
	if (c->net.server[0] && setup_params(c, c->net.server))
		return -1;
	/* Ethernet has no LIDs: the model's addresses may go past IB's */
	if (fab_is_eth(&c->p))
		c->net.lid_limit = NET_ADDR_MAX;
	double t1 = mono_s();

	c->prof.topo_s = t1 - t0;
	/* the tables the user's SM wrote, or our engine's */
	rc = c->o->lft ? lft_load(&c->net, c->o->lft, &c->d) :
			 sm_route(&c->net, c->o->routing, &so, &c->d);
	c->prof.route_s = mono_s() - t1;
	return rc;
}

/* On GPU servers: each rank's NVLink domain, which rings follow. */
int cli_server_groups(struct trace *t, const struct net *n, const struct fab_params *p,
		      struct sim_diag *d)
{
	struct srv_map m;
	int32_t *g;
	int rc;

	if (!p->server.gpus)
		return 0;
	if (srv_map_build(&m, n, &p->server, d))
		return -1;
	g = malloc((size_t)(t->nranks ? t->nranks : 1) * sizeof(*g));
	if (!g) {
		srv_map_free(&m);
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	}
	for (int32_t r = 0; r < t->nranks; r++)
		g[r] = srv_domain(&m, t->rank_node[r]);
	/* two channels per NIC, one NIC per GPU; NCCL's Simple steps of 512 KiB */
	rc = trace_set_groups(t, g, 2 * p->server.gpus, 512u << 10, d);
	const struct srv_preset *sp = srv_preset_find(p->server.preset);

	/* NCCL's tuning model: one search channel per NIC. LL128 is on by
	 * default where each NIC is near its GPU (NCCL's typeInter up to
	 * PXB); a NIC across the CPU puts the path at PHB/SYS, and no GPU is
	 * near it for PXN to reach it through. */
	if (sp)
		t->tune = (struct trace_tune){
			.arch = sp->nccl_arch, .amd = sp->amd_cpu, .nchannels = p->server.gpus,
			.bw = sp->nccl_bw, .ll128 = !p->host_model || p->host.gpu_same_switch,
			.nvlink_gbps = p->server.nvlink_gbps, .nvls_eff = p->server.nvls_eff };
	free(g);
	srv_map_free(&m);
	return rc;
}

/* --trace: load (any format), place the ranks, lower the collectives. */
static int load_trace(struct cli_run *c)
{
	int rc;

	if (c->o->trace_text)	/* a built-in workload (ibfab compare) */
		rc = trace_load_string(c->o->trace_text, c->o->trace, &c->trace, &c->d);
	else
		rc = trace_load(c->o->trace, c->o->trace_format, &c->trace, &c->d);
	/* more --trace: jobs beside the first, their ranks after its ranks */
	for (int i = 0; !rc && i < c->o->nmore_traces; i++) {
		struct trace job;

		rc = trace_load(c->o->more_traces[i], c->o->trace_format, &job, &c->d) ||
		     trace_append(&c->trace, &job, c->o->more_traces[i], &c->d);
		trace_free(&job);
	}
	if (rc || trace_map_ranks(&c->trace, &c->net, &c->d) ||
	    cli_server_groups(&c->trace, &c->net, &c->p, &c->d) ||
	    cli_sharp_setup(c) || trace_set_nvs(&c->trace, &c->d))
		return -1;
	/* on GPU servers, algo=auto is what NCCL's tuning model picks */
	if (trace_tune_ops(&c->trace))
		return sim_diag_set(&c->d, NULL, 0, 0, "out of memory");
	trace_program_init(&c->prog, &c->trace);
	c->prog.max_bytes = c->p.max_memory;
	/* each partition's replay holds its own steps (run and compare
	 * alike): threads in this process, MPI processes on this machine */
	c->prog.replays = c->par_size < 2 ? 1 :
			  c->par_ops->local ? c->par_ops->local() : (uint32_t)c->par_size;
	/*
	 * Collectives whose algorithm describes each step by itself are made
	 * as the replay reaches them (not for --explain, which prints them
	 * from the program, nor `ibfab compare`, which keeps the flows). The
	 * outputs that list every step's times - the JSON document's and
	 * flows.csv's flows, the timeline, SHARP's peak - read them back from
	 * a file the replay writes as the steps finish.
	 */
	c->prog.lazy = c->o->streamed && !c->o->explain;
	c->prog.keep_times = c->o->json || c->o->csv || c->o->timeline || c->trace.nagg;
	if (trace_lower(&c->trace, &c->prog, &c->d))
		return -1;
	/* the summary's "traffic" lines: every --trace, in order */
	c->trace_names = malloc((size_t)(1 + c->o->nmore_traces) * sizeof(*c->trace_names));
	if (!c->trace_names)
		return sim_diag_set(&c->d, "", 0, 0, "out of memory");
	c->trace_names[0] = c->o->trace;
	for (int i = 0; i < c->o->nmore_traces; i++)
		c->trace_names[i + 1] = c->o->more_traces[i];
	c->traffic = c->trace_names;
	c->ntraffic = 1 + c->o->nmore_traces;
	return 0;
}

/* The --traffic specs (or the defaults) into c->msgs. */
static int parse_specs(struct cli_run *c)
{
	c->msgs.max_bytes = c->p.max_memory;
	/* The compact list, whose memory follows the messages in flight
	 * (fab.h); the outputs that list messages read them back from disk
	 * (fab_keep_results). A perftest table reads its sweep's messages by
	 * place, from the explicit list. */
	c->msgs.compact = c->o->streamed;
	for (int i = 0; i < c->ntraffic; i++)
		if (!strncmp(c->traffic[i], "perftest", 8))
			c->msgs.compact = false;
	for (int i = 0; i < c->ntraffic; i++) {
		const char *spec = c->traffic[i];
		char *with_op = NULL;
		int rc;

		/* --op X: as if every spec that names no op said op=X */
		if (c->o->op && !strstr(spec, "op=") &&
		    asprintf(&with_op, "%s%sop=%s", spec, strchr(spec, ':') ? "," : ":",
			     c->o->op) < 0)
			return sim_diag_set(&c->d, "", 0, 0, "out of memory");
		rc = trace_spec_parse(with_op ? with_op : spec, &c->net, c->o->seed, &c->msgs, &c->d);
		free(with_op);
		if (rc)
			return -1;
	}
	if (!c->msgs.n)
		return sim_diag_set(&c->d, "", 0, 0, "the traffic specs produced no messages");
	return 0;
}

static int load_traffic(struct cli_run *c)
{
	if (c->o->trace) {
		/* a workload, and beside it the --traffic specs as background
		 * load: the run ends with the workload (fab_hold) */
		if (load_trace(c))
			return -1;
		if (!c->o->ntraffic)
			return 0;
		c->background = c->o->traffic;
		c->nbackground = c->o->ntraffic;
		c->traffic = c->o->traffic;
		c->ntraffic = c->o->ntraffic;
		int rc = parse_specs(c);

		c->traffic = c->trace_names;
		c->ntraffic = 1 + c->o->nmore_traces;
		return rc;
	}
	if (c->o->ntraffic) {
		c->traffic = c->o->traffic;
		c->ntraffic = c->o->ntraffic;
	} else if (!c->o->topo) {
		c->traffic = default_traffic;
		c->ntraffic = (int)SIM_ARRAY_SIZE(default_traffic);
		c->traffic_default = true;
	} else {
		c->traffic = default_traffic_user;
		c->ntraffic = (int)SIM_ARRAY_SIZE(default_traffic_user);
		c->traffic_default = true;
	}
	return parse_specs(c);
}

static double elapsed(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

/* Engine hook: one branch per event; the clock every 2^16 events. */
static void progress_hook(struct sim_engine *eng, void *ctx)
{
	struct cli_run *c = ctx;
	struct timespec now;
	char a[32], b[32], c2[32];
	double t;

	if (eng->events & 0xffff)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (elapsed(&c->last, &now) < 0.5)
		return;
	c->last = now;
	t = elapsed(&c->t0, &now);
	fprintf(stderr, "\r  simulated %s   %s events   %s events/s\033[K",
		cli_fmt_time(sim_now(eng), a, sizeof(a)),
		cli_fmt_count((double)eng->events, b, sizeof(b)),
		cli_fmt_count(t > 0 ? (double)eng->events / t : 0, c2, sizeof(c2)));
	c->progress_shown = true;
}

/*
 * sim.sample_ns given with --csv: say before the run if links.csv would
 * pass sim.max_csv_rows even at the run's lower-bound length (1 ns over a
 * 1 MiB message on the default fat tree is 4M rows, 150 MB).
 */
#define CSV_ROW_BYTES 40.0		/* a links.csv row: 37 bytes on the default fat tree */
#define CSV_WARN_BYTES 64e6		/* past this, say how big links.csv will be */

/* The run's estimated length and the data VLs it uses: a trace's, or the messages'. */
static sim_time_t run_estimate_ps(const struct cli_run *c)
{
	return c->o->trace ? cli_trace_estimate_ps(&c->net, &c->p, &c->prog)
			   : cli_run_estimate_ps(&c->net, &c->p, &c->msgs);
}

static uint16_t run_vls(const struct cli_run *c)
{
	return c->o->trace ? cli_trace_vls(&c->p) : cli_used_vls(&c->p, &c->msgs);
}

static void csv_budget_warn(struct cli_run *c)
{
	sim_time_t est = run_estimate_ps(c);
	uint64_t per = cli_csv_rows_per_sample(&c->net, run_vls(c));
	double rows = (double)est / SIM_NS / (double)c->p.sample_ns * (double)per;

	if (c->p.max_csv_rows && rows > (double)c->p.max_csv_rows)
		fprintf(stderr,
			"ibfab run: warning: sim.sample_ns=%" PRIu64 " gives links.csv at least %.0f rows (%" PRIu64 " a sample over a run of at least %.3f us); it keeps the first %" PRIu64 " (sim.max_csv_rows)\n",
			c->p.sample_ns, rows, per, (double)est / SIM_US, c->p.max_csv_rows);
	else if (rows * CSV_ROW_BYTES > CSV_WARN_BYTES)
		fprintf(stderr,
			"ibfab run: warning: sim.sample_ns=%" PRIu64 " gives links.csv at least %.0f rows, about %.0f MB (%" PRIu64 " a sample over a run of at least %.3f us)\n",
			c->p.sample_ns, rows, rows * CSV_ROW_BYTES / 1e6, per, (double)est / SIM_US);
}

/* After the run: links.csv was cut at sim.max_csv_rows. */
static void csv_cut_warn(const struct cli_run *c)
{
	char t[32];

	if (c->lc_init && c->lc.cut)
		fprintf(stderr,
			"ibfab run: warning: %s/links.csv stops at %s simulated, after %" PRIu64 " rows (sim.max_csv_rows); raise sim.sample_ns or sim.max_csv_rows for the rest\n",
			c->o->csv, cli_fmt_time(c->lc.cut_at, t, sizeof(t)), c->lc.rows);
}

static int par_setup(struct cli_run *c);

/* The fabric's sampler: links.csv and the HTML report's series. */
static void run_sample(struct fab *f, sim_time_t now, void *ctx)
{
	struct cli_run *c = ctx;

	if (c->lc_init)
		cli_links_csv_sample(f, now, &c->lc);
	if (c->hl)
		cli_html_links_sample(c->hl, f, now);
}

int cli_run_simulate(struct cli_run *c)
{
	struct sim_engine *eng;
	struct timespec t1;
	int rc;

	/* --csv or --html with sim.sample_ns = 0: choose, and record the
	 * choice in params */
	if ((c->o->csv || c->o->html) && !c->p.sample_ns)
		c->p.sample_ns = cli_auto_sample_ns(&c->net, &c->p, run_estimate_ps(c), run_vls(c));
	else if (c->o->csv)
		csv_budget_warn(c);
	double b0 = mono_s();

	c->fab = fab_create(&c->net, &c->p, &c->msgs, c->o->seed, &c->d);
	if (!c->fab)
		return -1;
	c->prof.build_s = mono_s() - b0;
	if (c->o->nfaults) {
		struct fab_fault *x = malloc(CLI_FAULT_MAX * sizeof(*x));
		int bad = x ? 0 : sim_diag_set(&c->d, NULL, 0, 0, "out of memory");

		for (int i = 0; !bad && i < c->o->nfaults; i++) {
			int k = cli_fault_parse(c->o->faults[i], &c->net, x, CLI_FAULT_MAX, &c->d);

			bad = k < 0 ? -1 : 0;
			for (int q = 0; !bad && q < k; q++)
				bad = fab_fault_add(c->fab, &x[q], &c->d);
		}
		free(x);
		if (bad)
			return -1;
	}
	/* the SM reroutes with the run's engine; a run on a dumped table
	 * changes tables only when a fault gives the next dump */
	if (c->o->nfaults)
		fab_set_rerouter(c->fab, cli_fault_reroute, c->o, !c->o->lft);
	if ((c->o->json || c->o->csv) && !c->o->trace && fab_keep_results(c->fab))
		return sim_diag_set(&c->d, "", 0, 0, "cannot make a temporary file for the messages' records: %s",
				    strerror(errno));
	if (c->pcap_out.f && cli_pcap_start(&c->pcap, c->pcap_out.f, c->fab, &c->net, &c->d))
		return -1;
	b0 = mono_s();
	/* cut into partitions, a replay in every one: this one's, on this
	 * fabric, before the cut (each copy gets its own: cli_threads.c) */
	if (c->o->trace && c->par_size > 1) {
		c->par_same_error = true;	/* what every process meets alike */
		if (!(c->rp = trace_replay_start(&c->prog, c->fab, &c->tres, true, &c->d)))
			return -1;
		c->par_same_error = false;
	}
	if (c->before_run && c->before_run(c, c->before_run_ctx))
		return -1;
	if (c->par_size > 1 && par_setup(c))
		return -1;
	c->prof.part_s = mono_s() - b0;
	if (c->o->csv) {
		if (cli_links_csv_init(&c->lc, c->links.f, &c->net, c->fab, run_vls(c),
				       c->p.max_csv_rows))
			return sim_diag_set(&c->d, "", 0, 0, "out of memory");
		c->lc_init = true;
	}
	if (c->o->html && !(c->hl = cli_html_links_new(&c->net, c->fab)))
		return sim_diag_set(&c->d, "", 0, 0, "out of memory");
	if (c->o->csv || c->o->html)
		fab_set_sampler(c->fab, run_sample, c);
	if (c->o->trace) {
		/* the workload drives the HCAs itself (traces/trace_replay.c) */
		clock_gettime(CLOCK_MONOTONIC, &c->t0);
		if (c->rp) {
			bool ran = !c->prog.nsteps || !fab_run(c->fab, &c->d);

			rc = trace_replay_finish(c->rp, ran, &c->d);
			c->rp = NULL;
		} else {
			rc = trace_replay(&c->prog, c->fab, &c->tres, &c->d);
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		c->wall_s = elapsed(&c->t0, &t1);
		c->replayed = !rc;
		if (!rc && !c->o->streamed && trace_results_flows(&c->prog, &c->tres))
			rc = sim_diag_set(&c->d, NULL, 0, 0, "out of memory for the flow list");
		csv_cut_warn(c);
		return rc;
	}
	eng = fab_engine(c->fab);
	/* Progress only if the fabric does not use the hook itself (sim.check). */
	if (c->progress && !eng->after_event) {
		eng->after_event = progress_hook;
		eng->after_event_ctx = c;
	}
	clock_gettime(CLOCK_MONOTONIC, &c->t0);
	c->last = c->t0;
	rc = fab_run(c->fab, &c->d);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	c->wall_s = elapsed(&c->t0, &t1);
	if (eng->after_event == progress_hook) {
		eng->after_event = NULL;
		eng->after_event_ctx = NULL;
	}
	if (c->progress_shown)
		fputs("\r\033[K", stderr);
	csv_cut_warn(c);
	return rc;
}

/* --html: the page (cli_html.h) with the summary as the terminal shows it. */
static int write_html(struct cli_run *c, const struct cli_report *r)
{
	char *text = NULL, *chart = NULL, sub[700];
	struct cli_html_op *ops = NULL;
	size_t len = 0, nops = 0;
	FILE *mem = open_memstream(&text, &len);
	struct sim_samples *ct;
	uint64_t ndone;
	int rc = -1;

	if (!mem)
		return sim_diag_set(&c->d, c->html.path, 0, 0, "out of memory");
	cli_report_summary(mem, r);
	if (r->prog)
		cli_trace_summary(mem, r->prog, r->tres);
	if (fclose(mem)) {
		free(text);
		return sim_diag_set(&c->d, c->html.path, 0, 0, "out of memory");
	}
	ct = c->o->trace ? &c->tres.xfer_times : fab_completions(c->fab, &ndone);
	if (ct && cli_html_cdf_svg(ct, c->o->trace ? "transfer" : "message", &chart)) {
		sim_diag_set(&c->d, c->html.path, 0, 0, "out of memory");
		goto out;
	}
	if (c->o->trace && cli_html_ops(&c->trace, c->tres.op_start, c->tres.op_end, &ops, &nops)) {
		sim_diag_set(&c->d, c->html.path, 0, 0, "out of memory");
		goto out;
	}
	snprintf(sub, sizeof(sub), "%s; %s; %s", c->topo_desc,
		 c->o->trace ? c->o->trace : c->ntraffic == 1 ? c->traffic[0] : "the traffic below",
		 fab_fabric_names[c->p.fabric]);
	struct cli_html_view v = {
		.links = c->hl,
		.ops = ops,
		.nops = nops,
		.end_ps = c->o->trace ? c->tres.end_ps : fab_engine(c->fab)->now,
	};
	struct cli_html_page pg = { .title = "ibfab run", .subtitle = sub,
				    .text = text, .charts_title = "Completion times",
				    .charts_svg = chart, .views = &v, .nviews = 1 };

	if (cli_html_write(c->html.f, &pg, &c->d)) {
		if (!c->d.file[0])	/* Graphviz's failure: say which output */
			snprintf(c->d.file, sizeof(c->d.file), "%s", c->html.path);
		goto out;
	}
	rc = cli_out_close(&c->html, &c->d) || cli_out_commit(&c->html, &c->d) ? -1 : 0;
out:
	free(text);
	free(chart);
	free(ops);
	return rc;
}

static int write_outputs(struct cli_run *c, const struct cli_report *r)
{
	FILE *sum = stdout;

	if (c->json_stdout) {
		if (cli_report_json(stdout, r))
			return sim_diag_set(&c->d, "<stdout>", 0, 0, "write error");
		sum = c->o->quiet ? NULL : stderr;
	} else if (c->json.f && cli_report_json(c->json.f, r)) {
		return sim_diag_set(&c->d, c->json.path, 0, 0, "write error");
	}
	if (c->flows.f && cli_report_flows_csv(c->flows.f, r))
		return sim_diag_set(&c->d, c->flows.path, 0, 0, "write error");
	if (c->colls.f && cli_trace_csv(c->colls.f, &c->net, &c->prog, &c->tres))
		return sim_diag_set(&c->d, c->colls.path, 0, 0, "write error");
	if (cli_out_close(&c->colls, &c->d) || cli_out_commit(&c->colls, &c->d))
		return -1;
	if (c->timeline.f && trace_timeline_write(c->timeline.f, &c->prog, &c->tres))
		return sim_diag_set(&c->d, c->timeline.path, 0, 0, "write error");
	if (cli_out_close(&c->timeline, &c->d) || cli_out_commit(&c->timeline, &c->d))
		return -1;
	if (c->pcap.err)
		return sim_diag_set(&c->d, c->pcap_out.path, 0, 0, "write error");
	if (cli_out_close(&c->pcap_out, &c->d) || cli_out_commit(&c->pcap_out, &c->d))
		return -1;
	if (c->html.f && write_html(c, r))
		return -1;
	if (cli_out_close(&c->json, &c->d) || cli_out_close(&c->links, &c->d) ||
	    cli_out_close(&c->flows, &c->d))
		return -1;
	if (cli_out_commit(&c->json, &c->d) || cli_out_commit(&c->links, &c->d) ||
	    cli_out_commit(&c->flows, &c->d))
		return -1;
	if (sum)
		cli_report_summary(sum, r);
	if (sum && r->prog)
		cli_trace_summary(sum, r->prog, r->tres);
	if (sum && cli_perftest_report(sum, r))
		return sim_diag_set(&c->d, "", 0, 0, "perftest table: out of memory, or messages unlike the specs");
	if (fflush(stdout) || ferror(stdout))
		return sim_diag_set(&c->d, "<stdout>", 0, 0, "write error");
	return 0;
}

void cli_run_fill_report(struct cli_run *c, struct cli_report *r)
{
	memset(r, 0, sizeof(*r));
	r->net = &c->net;
	r->params = &c->p;
	r->msgs = &c->msgs;
	r->fab = c->fab;
	r->events = fab_engine(c->fab)->events;
	if (c->par_size > 1) {
		r->partitions = (uint32_t)c->par_size;
		r->engine = cli_par_engine(c->par_ops, c->o->sync_null);
	}
	r->seed = c->o->seed;
	r->topo_source = c->topo_desc;
	r->topo_default = !c->o->topo;
	r->traffic = c->traffic;
	r->ntraffic = c->ntraffic;
	r->traffic_default = c->traffic_default;
	r->background = c->background;
	r->nbackground = c->nbackground;
	r->wall_s = c->wall_s;
	r->reproducible = c->o->reproducible;
	r->no_flows = c->o->no_flows;
	if (c->o->profile)
		r->profile = &c->prof;
	if (c->replayed) {
		r->prog = &c->prog;
		r->tres = &c->tres;
		r->msgs = &c->tres.flows;	/* one flow per transfer */
	}
}

/* ---- routes ---------------------------------------------------------------- */

/*
 * The (source, destination) node pairs the run sends between, each once: an
 * open-addressing set, half full at most. A run of a million messages has a
 * few hundred pairs; the last pair is remembered, since a stream's messages
 * come one after another.
 */
struct pairset {
	uint64_t *v;		/* src * nnodes + dst + 1; 0 = empty */
	size_t n, cap;
	uint64_t last;
};

static int pairset_add(struct pairset *s, uint64_t key, bool *added)
{
	*added = false;
	if (key == s->last)
		return 0;
	s->last = key;
	if (2 * (s->n + 1) > s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		uint64_t *v = calloc(cap, sizeof(*v));

		if (!v)
			return -1;
		for (size_t i = 0; i < s->cap; i++) {
			size_t j = (size_t)(s->v[i] * 0x9e3779b97f4a7c15ULL >> 17) & (cap - 1);

			if (!s->v[i])
				continue;
			while (v[j])
				j = (j + 1) & (cap - 1);
			v[j] = s->v[i];
		}
		free(s->v);
		s->v = v;
		s->cap = cap;
	}
	size_t j = (size_t)(key * 0x9e3779b97f4a7c15ULL >> 17) & (s->cap - 1);

	while (s->v[j] && s->v[j] != key)
		j = (j + 1) & (s->cap - 1);
	if (!s->v[j]) {
		s->v[j] = key;
		s->n++;
		*added = true;
	}
	return 0;
}

static const char *node_name(const struct net *n, int node)
{
	return n->nodes[node].desc ? n->nodes[node].desc : n->nodes[node].id;
}

struct route_check {
	struct pairset seen;
	int *nodes, *ports, max;
	uint64_t bad;		/* pairs with no route */
	char list[256];		/* the first few, for the message */
	size_t off;
};

/* src -> dst (nodes); `reply`: the way back too (RC and TCP acknowledge). */
static int route_check_pair(struct cli_run *c, struct route_check *rc, uint32_t src,
			    uint32_t dst, bool reply)
{
	const struct net *n = &c->net;
	bool added;

	if (src == dst)		/* refused elsewhere, with its own reason */
		return 0;
	if (pairset_add(&rc->seen, (uint64_t)src * (uint64_t)n->nnodes + dst + 1, &added))
		return -1;
	if (!added)
		return 0;
	for (int way = 0; way < 1 + reply; way++) {
		int a = (int)(way ? dst : src), b = (int)(way ? src : dst);

		if (sm_path(n, a, net_lid_of(n, b, net_first_port(n, b)), rc->nodes, rc->ports,
			    rc->max) >= 2)
			continue;
		if (rc->bad++ < 4)
			sim_append(rc->list, sizeof(rc->list), &rc->off, "%s%s -> %s",
				   rc->bad > 1 ? ", " : "", node_name(n, a), node_name(n, b));
		break;
	}
	return 0;
}

/*
 * Every pair of hosts the run sends between has a route in the forwarding
 * tables, both ways where the transport acknowledges: else the run is
 * refused before it starts, naming the pairs (--allow-unreachable runs it,
 * and those messages are lost after their retries). A split fabric or a
 * partial --lft dump would otherwise show up as lost messages at the end.
 */
static int check_routes(struct cli_run *c)
{
	struct route_check rc = { .max = c->net.nnodes + 2 };
	uint64_t pairs;
	int rcode = 0;

	if (c->o->allow_unreachable)
		return 0;
	rc.nodes = malloc(sizeof(int) * (size_t)rc.max);
	rc.ports = malloc(sizeof(int) * (size_t)rc.max);
	if (!rc.nodes || !rc.ports) {
		rcode = -1;
		goto out;
	}
	if (c->o->trace) {
		const struct trace_program *p = &c->prog;
		/* each rank's last peer: a ring's million steps are 2 pairs a
		 * rank, and a hash probe each would be 2% of the run */
		int32_t ne = trace_nendpoints(&c->trace);	/* and SHARP's aggregation nodes */
		int32_t *last = malloc(sizeof(*last) * (size_t)(ne ? ne : 1));

		if (!last) {
			rcode = -1;
			goto out;
		}
		for (int32_t r = 0; r < ne; r++)
			last[r] = -1;
		struct trace_walk tw;

		trace_walk_init(&tw, p, 0);
		for (size_t s = 0; s < p->nsteps && !rcode; s++) {
			const uint32_t *deps;
			const struct trace_step *st = trace_walk_step(&tw, (uint32_t)s, &deps);

			if (st->kind != TS_XFER || last[st->rank] == st->peer)
				continue;
			last[st->rank] = st->peer;
			rcode = route_check_pair(c, &rc, (uint32_t)c->trace.rank_node[st->rank],
						 (uint32_t)c->trace.rank_node[st->peer], true);
		}
		free(last);
	} else {
		uint64_t first, count;
		sim_time_t gap;

		for (size_t r = 0; r < fab_msgs_nruns(&c->msgs) && !rcode; r++) {
			const struct fab_msg *m = fab_msgs_run(&c->msgs, r, &first, &count, &gap);

			if (m->sl != 0xff)	/* VL15 MADs go by directed route */
				rcode = route_check_pair(c, &rc, m->src, m->dst, !m->ud);
		}
	}
out:
	pairs = rc.seen.n;
	free(rc.seen.v);
	free(rc.nodes);
	free(rc.ports);
	if (rcode)
		return sim_diag_set(&c->d, "", 0, 0, "out of memory checking routes");
	if (rc.bad)
		return sim_diag_set(&c->d, c->o->lft ? c->o->lft : c->topo_desc, 0, 0,
				    "%" PRIu64 " of %" PRIu64 " host pairs the %s sends between %s no route in the forwarding tables: %s%s; run anyway with --allow-unreachable (their messages are lost)",
				    rc.bad, pairs, c->o->trace ? "trace" : "traffic",
				    rc.bad == 1 ? "has" : "have", rc.list, rc.bad > 4 ? ", ..." : "");
	return 0;
}

int cli_run_prepare(struct cli_run *c)
{
	double t0;

	if (setup_params(c, NULL) || load_topology(c))
		return -1;
	t0 = mono_s();
	if (load_traffic(c))
		return -1;
	c->prof.traffic_s = mono_s() - t0;
	/* --explain runs nothing: its routes do not matter */
	if (!c->o->explain && check_routes(c))
		return -1;
	return 0;
}

void cli_run_init(struct cli_run *c, struct cli_run_opts *o)
{
	memset(c, 0, sizeof(*c));
	c->o = o;
	c->progress = !o->quiet && isatty(STDERR_FILENO);
	net_init(&c->net);
}

void cli_run_fini(struct cli_run *c)
{
	if (c->rp) {		/* started, and the run never came */
		struct sim_diag d;

		trace_replay_finish(c->rp, false, &d);
		c->rp = NULL;
	}
	if (c->lc_init)
		cli_links_csv_fini(&c->lc);
	cli_html_links_free(c->hl);
	if (c->o->trace) {
		trace_results_free(&c->tres);
		trace_program_free(&c->prog);
		trace_free(&c->trace);
	}
	if (c->fab)
		fab_destroy(c->fab);
	fab_msgs_free(&c->msgs);
	net_free(&c->net);
	free(c->trace_names);
	free(c->prof.part);
	memset(c, 0, sizeof(*c));
}

const struct cli_par_ops *cli_par;

int cli_par_start(const char *cmd, int *argc, char ***argv, int *rank, int *size)
{
	*rank = 0;
	*size = 1;
	if (cli_par && cli_par->init(argc, argv, rank, size)) {
		fprintf(stderr, "ibfab %s: the partitioned run could not start\n", cmd);
		return 1;
	}
	if (!cli_par && getenv("OMPI_COMM_WORLD_SIZE") && atoi(getenv("OMPI_COMM_WORLD_SIZE")) > 1) {
		/* each process would run the whole fabric and write the same files */
		fprintf(stderr, "ibfab %s: this ibfab was built without MPI (Open MPI's development "
			"files were missing): under mpirun it cannot cut the fabric; use --threads N\n",
			cmd);
		return 1;
	}
	return 0;
}

int cli_parse_threads(const char *cmd, const char *name, const char *val, uint32_t *threads)
{
	char err[256];
	uint64_t t;

	if (*threads)
		return cli_usage_error(cmd, "option '%s' given twice%s", name, "");
	if (sim_parse_u64(val, &t, err, sizeof(err)) || t < 1 || t > 4096)
		return cli_usage_error(cmd, "%s: want 1 to 4096 threads, got '%s'", name, val);
	*threads = (uint32_t)t;
	return 0;
}

const char *cli_par_engine(const struct cli_par_ops *ops, bool sync_null)
{
	return ops == &cli_par_threads && sync_null ? "threads (null messages)" : ops->engine;
}

int cli_parse_sync(const char *cmd, const char *name, const char *val, bool *null_msgs)
{
	if (strcmp(val, "windows") && strcmp(val, "null"))
		return cli_usage_error(cmd, "%s: expected windows or null, not '%s'", name, val);
	*null_msgs = val[0] == 'n';
	return 0;
}

int cli_par_choose(const char *cmd, uint32_t threads, int size, int *par_size,
		   const struct cli_par_ops **ops)
{
	*par_size = size;
	*ops = size > 1 ? cli_par : NULL;
	if (threads > 1 && size > 1) {
		fprintf(stderr, "ibfab %s: --threads with mpirun: one or the other, not both yet\n", cmd);
		return 2;
	}
	if (threads > 1) {
		*par_size = (int)threads;
		*ops = &cli_par_threads;
	}
	return 0;
}

int cli_profile_cut(struct cli_run *c, const struct fab_cut *cut, uint64_t windows)
{
	struct cli_profile *pr = &c->prof;

	free(pr->part);
	pr->part = calloc(cut->n, sizeof(*pr->part));
	if (!pr->part)
		return -1;
	pr->n = cut->n;
	pr->windows = windows;
	pr->cut_links = cut->cut_links;
	pr->links = (uint64_t)net_nlinks(&c->net);
	pr->lookahead = cut->lookahead;
	for (int i = 0; i < c->net.nnodes; i++) {
		struct cli_prof_part *q = &pr->part[cut->node_part[i]];

		if (c->net.nodes[i].type == NET_SWITCH)
			q->switches++;
		else
			q->hosts++;
	}
	return 0;
}

void cli_profile_part(struct cli_run *c, uint32_t k, const struct sim_par_part *pp)
{
	struct cli_prof_part *q = &c->prof.part[k];

	q->events = pp->events;
	q->sent = pp->sent;
	q->idle_windows = pp->idle_windows;
	q->busy_s = pp->busy_s;
	q->wait_s = pp->wait_s;
}

/*
 * A run cut into partitions (cli_par): what it does not run yet is
 * refused by name. Every process makes the same fabric and workload; the
 * message list is kept whole (each process has the records of what its
 * nodes send, gathered at the end: models/fabric/fab_part.c).
 */
static int par_setup(struct cli_run *c)
{
	const char *no = c->nbackground ? "--traffic beside --trace" :
			 c->o->nfaults ? "--fault" : c->o->csv ? "--csv (its samples)" :
			 c->o->html ? "--html (its samples)" : c->o->pcap ? "--pcap" :
			 c->p.check ? "sim.check" : c->p.max_time_ns ? "sim.max_time_ns" :
			 c->p.cut_links ? "sim.cut_links" :
			 c->o->sync_null && c->par_ops != &cli_par_threads ?
			 "--sync null (processes keep windows)" : NULL;

	/* what every process refuses alike, rank 0 says */
	c->par_same_error = true;
	if (no)
		return sim_diag_set(&c->d, NULL, 0, 0, "a run in %d partitions does not take %s yet",
				    c->par_size, no);
	int rc = c->par_ops->setup(c);

	c->par_same_error = false;
	return rc;
}

/* 0 done, -1 failed with c->d filled, 1 failed and already said why. */
static int run_pipeline(struct cli_run *c)
{
	struct cli_report r;

	if (sim_log_init_from_env())
		return 1;
	if (c->par_size > 1) {
		/* the messages' list whole: each process gathers its nodes'
		 * records at the end (a trace keeps its lazy lowering: every
		 * replica makes its steps as it reaches them) */
		if (!c->o->trace)
			c->o->streamed = false;
		c->progress = false;
	}
	if (cli_run_prepare(c))
		return -1;
	if (c->o->explain)	/* print the algorithm's steps; nothing runs */
		return c->par_rank ? 0 :
		       cli_trace_explain(&c->prog, c->o->explain, stdout, &c->d) ? -1 : 0;
	if (!c->par_rank && outputs_open(c))
		return -1;
	c->summary_only = ((!c->json_stdout && !c->json.f) || c->o->no_flows) && !c->flows.f;
	if (cli_run_simulate(c))
		return -1;
	if (c->par_rank)
		return 0;	/* rank 0 writes what all ran */
	if (c->o->profile && c->par_ops && c->par_ops->profile && c->par_ops->profile(c))
		return sim_diag_set(&c->d, NULL, 0, 0, "out of memory for the profile");
	cli_run_fill_report(c, &r);
	return write_outputs(c, &r);
}

int cli_run_main(int argc, char **argv)
{
	struct cli_run_opts o = { .seed = DEFAULT_SEED, .streamed = true };
	struct cli_run c;
	char buf[1100];
	int rc, rank = 0, size = 1;

	if (cli_par_start("run", &argc, &argv, &rank, &size))
		return 1;
	/* each repeatable option appears at most argc times */
	o.traffic = calloc((size_t)argc + 1, sizeof(*o.traffic));
	o.sets = calloc((size_t)argc + 1, sizeof(*o.sets));
	o.faults = calloc((size_t)argc + 1, sizeof(*o.faults));
	o.more_traces = calloc((size_t)argc + 1, sizeof(*o.more_traces));
	if (!o.traffic || !o.sets || !o.faults || !o.more_traces) {
		fputs("ibfab run: out of memory\n", stderr);
		rc = 1;
		goto out_opts;
	}
	rc = parse_args(argc, argv, &o);
	if (rc) {
		rc = rc < 0 ? 0 : rc;
		goto out_opts;
	}

	cli_run_init(&c, &o);
	c.par_rank = rank;
	rc = cli_par_choose("run", o.threads, size, &c.par_size, &c.par_ops);
	if (rc)
		goto out_run;

	rc = run_pipeline(&c);
	if (rc < 0) {
		if (c.par_ops && c.par_ops->failed_alike && c.par_ops->failed_alike(&c))
			c.par_same_error = true;
		sim_diag_format(&c.d, buf, sizeof(buf));
		if (size == 1)
			fprintf(stderr, "ibfab run: %s\n", buf);
		else if (!c.par_same_error || !rank)	/* what all meet alike, rank 0 says */
			fprintf(stderr, "ibfab run: process %d of %d: %s\n", rank, size, buf);
		rc = 1;
	}
out_run:
	outputs_free(&c, rc != 0);
	if (c.par_ops)
		c.par_ops->fini(&c);
	if (size > 1)
		cli_par->fini(NULL);	/* MPI itself */
	cli_run_fini(&c);
	size = 1;
out_opts:
	if (size > 1)
		cli_par->fini(NULL);
	free(o.traffic);
	free(o.sets);
	free(o.faults);
	free(o.more_traces);
	return rc;
}
