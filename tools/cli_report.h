/* SPDX-License-Identifier: MIT */
/*
 * cli_report.h - what `ibfab run` reports once a fabric has run: the human
 * summary, the --json document, and the --csv time series and flow table.
 *
 * Kept apart from option parsing (cli_run.c) so tests can build a fabric,
 * run it and call these directly. Every writer is deterministic: the same
 * inputs and seed give the same bytes, except the wall-clock figures, which
 * `reproducible` removes (wall_s written as 0, rates left out).
 */
#ifndef IBFAB_CLI_REPORT_H
#define IBFAB_CLI_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "models/fabric/fab.h"
#include "models/net/net.h"

/* Everything a report needs; filled by cli_run.c (or a test). */
struct trace_program;
struct trace_results;

/*
 * --profile: where a run's wall time went. The set-up's stages (reading
 * the topology, the subnet manager's routes, the traffic or workload,
 * building the fabric, cutting it into partitions) and the run; for a
 * partitioned run each partition's share: its switches and hosts, events,
 * messages to other partitions, windows it had nothing to run in, and
 * the wall time it ran events and waited for the others at a window's
 * end. Times are wall-clock (0 with --reproducible); the counts are the
 * same in every run of the same inputs.
 */
struct cli_prof_part {
	uint32_t switches, hosts;
	uint64_t events, sent, idle_windows;
	double busy_s, wait_s;
};

struct cli_profile {
	double topo_s, route_s, traffic_s, build_s, part_s;
	uint32_t n;			/* partitions (0: one list) */
	uint64_t windows, cut_links, links;
	sim_time_t lookahead;
	struct cli_prof_part *part;	/* n of them */
};

struct cli_report {
	const struct net *net;
	const struct fab_params *params;
	const struct fab_msgs *msgs;
	const struct fab *fab;
	uint64_t events;		/* engine events dispatched */
	uint32_t partitions;		/* a partitioned run's (0 or 1: one list) */
	const char *engine;		/* how it ran: NULL for one list ("sequential") */
	uint64_t seed;
	const char *topo_source;	/* file name, or a description of the default */
	bool topo_default;		/* no --topo: the built-in fat tree */
	const char *const *traffic;	/* the SPECs run, in order */
	int ntraffic;
	bool traffic_default;		/* no --traffic: the built-in load */
	double wall_s;			/* wall time of fab_run() */
	bool reproducible;		/* leave wall-clock figures out */
	bool no_flows;			/* leave "flows" out of the JSON (--no-flows) */
	const struct cli_profile *profile;	/* --profile, else NULL */
	/* --trace: the replayed workload (NULL otherwise); its flows are msgs */
	const struct trace_program *prog;
	const struct trace_results *tres;
	/* --traffic beside --trace: background load, the fabric's messages
	 * (msgs), which the workload's end cuts short */
	const char *const *background;
	int nbackground;
};

/* A "kernel" object: what the kernel's stack did (struct fab_kernel), as
 * run's and compare's JSON give it. */
struct sim_json;
void cli_json_kernel(struct sim_json *j, const struct fab_kernel *k);

/* How the fabric's switches choose among equal-cost paths, in a word or
 * two: "table" (the subnet manager's LFT), "ecmp", "flowlet", "spray",
 * "ar" (IB adaptive routing per packet), "ar flowlet". */
struct fab_params;
const char *cli_lb_name(const struct fab_params *p);

/* The human summary (docs/architecture.md, "Inputs and outputs"). */
void cli_report_summary(FILE *out, const struct cli_report *r);

/* The --json document; 0, or -1 on a write error. */
int cli_report_json(FILE *out, const struct cli_report *r);

/* flows.csv: one row per message; 0 or -1 on a write error. */
int cli_report_flows_csv(FILE *out, const struct cli_report *r);

/*
 * links.csv: a fab sampler that writes one row per (sample time, port, VL)
 * for the VLs in `vl_mask`:
 *   time_ps,node,port,peer,vl,util,buf_bytes,credits
 * util is the fraction of the interval since the previous sample that the
 * port's transmitter spent serialising (all VLs together, so it repeats on
 * every VL row of a port), from the growth of xmit_bytes and the link rate.
 */
struct cli_links_csv {
	FILE *out;
	const struct net *net;
	uint16_t vl_mask;
	int nports;
	uint64_t *prev_bytes;		/* xmit_bytes at the previous sample, per port */
	sim_time_t prev_t;
	uint64_t rows;
	uint64_t max_rows;		/* sim.max_csv_rows (0 = no limit) */
	bool cut;			/* a sample was dropped for max_rows */
	sim_time_t cut_at;		/* the first one */
};

int cli_links_csv_init(struct cli_links_csv *c, FILE *out, const struct net *net,
		       const struct fab *f, uint16_t vl_mask, uint64_t max_rows);
void cli_links_csv_sample(struct fab *f, sim_time_t now, void *ctx);
void cli_links_csv_fini(struct cli_links_csv *c);

/* The data VLs the messages can use: the SL-to-VL table applied to their SLs. */
uint16_t cli_used_vls(const struct fab_params *p, const struct fab_msgs *m);

/* A lower bound on the run's length, ps (0: out of memory): cli_report.c. */
sim_time_t cli_run_estimate_ps(const struct net *net, const struct fab_params *p,
				const struct fab_msgs *m);
/* The same for a trace's lowered program (its ranks placed). */
struct trace_program;
sim_time_t cli_trace_estimate_ps(const struct net *net, const struct fab_params *p,
				  const struct trace_program *prog);
/* The data VLs a trace's transfers use (they go on SL 0). */
uint16_t cli_trace_vls(const struct fab_params *p);
/* Rows links.csv takes per sample: two ports a link, one row per used VL. */
uint64_t cli_csv_rows_per_sample(const struct net *net, uint16_t vls);
/*
 * A sampling interval for sim.sample_ns = 0: about 1000 samples over `est`,
 * an estimate of the run's length (cli_run_estimate_ps,
 * cli_trace_estimate_ps), rounded to the nearest 1, 2 or 5 times a power of
 * ten nanoseconds; coarser where that would take more than half of
 * sim.max_csv_rows with `vls` in use.
 */
uint64_t cli_auto_sample_ns(const struct net *net, const struct fab_params *p,
			    sim_time_t est, uint16_t vls);

/* "12.345 us", "800 ps", "1.500 ms"; "1.50 MiB", "64 B". Return buf. */
const char *cli_fmt_time(sim_time_t ps, char *buf, size_t len);
const char *cli_fmt_bytes(uint64_t bytes, char *buf, size_t len);

/* Large counts for people: "1234", "12.3 k", "4.56 M", "7.89 G". */
const char *cli_fmt_count(double v, char *buf, size_t len);

/* A CSV field: as is, or quoted (RFC 4180) when it holds , " CR or LF. */
void cli_csv_field(FILE *out, const char *s);

#endif
