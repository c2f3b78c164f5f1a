/* SPDX-License-Identifier: MIT */
/*
 * cli_run.h - `ibfab run`: build a fabric from a topology, parameters and
 * traffic specs, run it, and report (cli_report.h). Exit codes: 0 done,
 * 1 an input or run error (one line on stderr), 2 a usage error. SIGINT,
 * SIGTERM, SIGHUP, SIGQUIT and SIGPIPE remove partial outputs, then end the
 * process as the signal would have.
 */
#ifndef IBFAB_CLI_RUN_H
#define IBFAB_CLI_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "models/fabric/fab.h"
#include "models/net/net.h"
#include "sim/sim_diag.h"
#include "tools/cli_html.h"
#include "tools/cli_out.h"
#include "tools/cli_pcap.h"
#include "tools/cli_report.h"
#include "traces/trace.h"
#include "traces/trace_replay.h"

#ifndef IBFAB_VERSION
#define IBFAB_VERSION "0.1.0"	/* keep in step with project() in CMakeLists.txt */
#endif

/* argv[0] is "run". Returns the process exit code. */
int cli_run_main(int argc, char **argv);
void cli_run_usage(FILE *out);
/* `ibfab run --help-params`: the parameters with their defaults, the presets. */
void cli_run_help_params(FILE *out);


/*
 * The pieces of `ibfab run` that other commands reuse (`ibfab compare` runs
 * the same pipeline once per fabric): the options, one run's state, the
 * pipeline's steps, and output files that are never half-written.
 */
struct cli_run_opts {
	const char *topo;
	const char **traffic;
	int ntraffic;
	const char *preset;
	const char **sets;
	int nsets;
	uint64_t seed;
	bool seed_given;
	const char *json;
	const char *csv;
	bool reproducible;
	bool quiet;
	bool allow_unreachable;	/* --allow-unreachable: run with pairs that have no route */
	/* routing (docs/routing.md) */
	const char *routing;
	const char *roots;
	const char *sm;		/* --sm: the node the SM runs on (LID assignment) */
	const char *lmc;
	const char *lft;
	/* workloads (docs/trace-format.md) */
	const char *trace;	/* the first --trace */
	const char **more_traces;	/* the others: jobs beside it (cli_run.c) */
	int nmore_traces;
	const char *trace_text;	/* the native trace itself, named `trace` (built-in workloads) */
	const char *trace_format;
	const char *explain;
	const char *timeline;
	const char *html;	/* --html FILE: the visual report (cli_html.h) */
	const char *op;		/* --op: the default op= of every --traffic spec */
	const char *pcap;	/* --pcap FILE: the packets as a capture (cli_pcap.c) */
	const char *pcap_filter;	/* --pcap-filter: which of them */
	const char **faults;	/* --fault SPEC, in order (cli_fault.c) */
	int nfaults;
	uint32_t threads;	/* --threads N: partitions on threads (0, 1: none) */
	bool profile;		/* --profile: where the wall time went */
	bool no_flows;		/* --no-flows: no "flows" in the JSON */
	bool sync_null;		/* --sync null: threads by null messages */
	/* results kept streamed (`ibfab run`): the traffic as a compact list
	 * (fab.h) whose records an output reads back from disk, a trace's
	 * flows read from its steps; unset (compare), every message and
	 * transfer is in a list the report reads by place */
	bool streamed;
};

/* One run: what it loaded, the fabric, its outputs. */
struct cli_run {
	struct cli_run_opts *o;
	struct sim_diag d;
	struct fab_params p;
	struct net net;
	struct fab_msgs msgs;
	struct fab *fab;
	char topo_desc[512];
	const char *const *traffic;
	int ntraffic;
	bool traffic_default;
	const char *const *background;	/* --traffic beside --trace */
	int nbackground;
	const char **trace_names;	/* every --trace, for the summary */
	/* outputs */
	struct cli_out json;
	bool json_stdout;
	struct cli_out links, flows, timeline, colls;
	struct cli_out html;
	struct cli_html_links *hl;	/* --html: the cables' series, kept past the fabric */
	struct cli_out pcap_out;
	struct cli_pcap pcap;
	/* --trace */
	struct trace trace;
	struct trace_program prog;
	struct trace_results tres;
	bool replayed;
	/* a partitioned run's replay, started before the cut (trace_replay_start) */
	struct replay *rp;
	/* --trace with no output that lists flows (--json, flows.csv): the
	 * replay's flows are not built, the summary reads its steps */
	bool summary_only;
	bool csv_dir_created;
	struct cli_links_csv lc;
	bool lc_init;
	/* run */
	double wall_s;
	bool progress;
	struct timespec t0, last;
	bool progress_shown;
	/* Called by cli_run_simulate once the fabric is built, before it runs
	 * (`ibfab compare` registers its sampler there): 0, or -1 with d. */
	int (*before_run)(struct cli_run *c, void *ctx);
	void *before_run_ctx;
	/* A partitioned run on threads (--threads): what before_run did to
	 * the run's fabric, done to copy k's (1 .. N-1) once it is built, on
	 * copy k's own thread; 0, or -1 with *d filled. */
	int (*before_run_copy)(struct cli_run *c, uint32_t k, struct fab *f, struct sim_diag *d);
	/* A partitioned run, in every process: after the engine's run (every
	 * partition stopped, none failed), before the partitions' results are
	 * gathered and the fabric's clock closes what is open (fab_run). Where
	 * before_run's observer sets the clock as a run of one list ends it.
	 * 0, or -1 with *d filled (every process alike). */
	int (*after_par_run)(struct cli_run *c, struct sim_diag *d);
	/* a partitioned run (cli_par): this process's rank and their count
	 * (1: not partitioned); the back-end's state */
	int par_rank, par_size;
	const struct cli_par_ops *par_ops;	/* cli_par, or cli_par_threads */
	void *par_state;
	bool par_same_error;	/* an error every process meets alike: rank 0 tells */
	struct cli_profile prof;	/* --profile (its part[] the run's own) */
};

/*
 * A partitioned run's back-end, where the program is built with it
 * (tools/par_mpi.c: one partition a process, `mpirun -np N ibfab run`),
 * else NULL. init() learns this process's rank and the count (1: not
 * started by mpirun with two or more); setup() cuts the built fabric and
 * sets its engine up (fab_set_par), 0 or -1 with c->d; fini(c) frees one
 * run's state (compare runs several), fini(NULL) ends MPI itself.
 * Rank 0 writes the outputs; the others print nothing.
 */
struct cli_par_ops {
	const char *engine;
	int (*init)(int *argc, char ***argv, int *rank, int *size);
	int (*setup)(struct cli_run *c);
	void (*fini)(struct cli_run *c);
	/* after the run, where the outputs are written: c->prof's partitions
	 * (cli_profile_cut for the cut's share); 0, or -1 out of memory */
	int (*profile)(struct cli_run *c);
	/* after a failed run: every process has the same failure to tell
	 * (the first partition's to fail), so only rank 0 tells it */
	bool (*failed_alike)(const struct cli_run *c);
	/* processes (MPI): v[0..n) summed (max false) or their maximum taken
	 * over every process, in place, in every process; 0 or -1. NULL for
	 * threads, whose partitions are all in this process. */
	int (*allreduce)(uint64_t *v, size_t n, bool max);
	/* the run's partitions on this machine (MPI: the processes sharing
	 * its memory), each with its own copy of a trace's steps; NULL: all
	 * of them (threads, in this process) */
	uint32_t (*local)(void);
};
/* --profile: the partitions' switches, hosts and cut cables from a cut,
 * and the engine's figures of partition k (sim_par.h) into c->prof. */
struct fab_cut;
struct sim_par_part;
int cli_profile_cut(struct cli_run *c, const struct fab_cut *cut, uint64_t windows);
void cli_profile_part(struct cli_run *c, uint32_t k, const struct sim_par_part *pp);
extern const struct cli_par_ops *cli_par;
/* A command's start under mpirun (cli_par's init): this process's rank
 * and the count (1: alone); 0, or 1 when it cannot start (said). */
int cli_par_start(const char *cmd, int *argc, char ***argv, int *rank, int *size);
/* The JSON's "engine" of a partitioned run. */
const char *cli_par_engine(const struct cli_par_ops *ops, bool sync_null);
/* --sync windows|null: 0, or a usage error (2, said). */
int cli_parse_sync(const char *cmd, const char *name, const char *val, bool *null_msgs);
/* --threads N (1 to 4096, once): 0, or a usage error (2, said). */
int cli_parse_threads(const char *cmd, const char *name, const char *val, uint32_t *threads);
/* Partitions from --threads and the process count: their number and
 * back-end (NULL for none); 0, or 2 when both are asked for (said). */
int cli_par_choose(const char *cmd, uint32_t threads, int size, int *par_size,
		   const struct cli_par_ops **ops);
/* --threads N (tools/cli_threads.c): a copy of the fabric a thread. */
extern const struct cli_par_ops cli_par_threads;

void cli_run_init(struct cli_run *c, struct cli_run_opts *o);
/* On GPU servers (p->server.gpus): each rank's NVLink domain and NCCL's
 * tuning inputs, after trace_map_ranks. */
int cli_server_groups(struct trace *t, const struct net *n, const struct fab_params *p,
		      struct sim_diag *d);
/* Parameters (defaults, --preset, every --set in order, the cross checks),
 * the topology and its routes, the traffic or the lowered trace.
 * 0, or -1 with c->d filled. */
int cli_run_prepare(struct cli_run *c);
/* Build the fabric and run it (or replay the trace). 0, or -1 with c->d. */
int cli_run_simulate(struct cli_run *c);
/* What the report writers (cli_report.h) need, after cli_run_simulate. */
void cli_run_fill_report(struct cli_run *c, struct cli_report *r);
/* Free the fabric, trace, messages and net (not the output files). */
void cli_run_fini(struct cli_run *c);

/*
 * Command-line options shared by `run` and `compare`: a table of
 * "--name" (or "-x") with or without a value, taken as "--name V" or
 * "--name=V". cli_opt_next() reads the option at argv[*i] (advancing *i
 * past its value) and returns its table index, or prints a usage error for
 * command `cmd` and returns -1 (the caller exits 2).
 */
struct cli_opt {
	const char *name;
	int id;
	bool arg;	/* takes a value */
};

int cli_opt_next(const char *cmd, const struct cli_opt *opts, size_t nopts, int argc,
		 char **argv, int *i, char *name, size_t namelen, const char **val);
/* "ibfab CMD: <fmt with a and b> (see 'ibfab CMD --help')" on stderr; returns 2. */
int cli_usage_error(const char *cmd, const char *fmt, const char *a, const char *b);
/* An option that may be given once, with a non-empty value: 0 or a usage error (2). */
int cli_set_once(const char *cmd, const char **slot, const char *name, const char *val);

#endif
