/* SPDX-License-Identifier: MIT */
/*
 * cli_perftest.h - perftest's result tables for the perftest sweeps of
 * `ibfab run --traffic 'perftest:...'` (traces/trace_spec.h), so a run can
 * be laid beside the output of ib_write_bw, ib_read_lat and the others.
 *
 * The figures are computed from the messages' post and completion times
 * the way perftest computes them from its tposted[] and tcompleted[]
 * cycle stamps (print_report_bw, print_report_lat in perftest's
 * perftest_parameters.c); docs/perftest.md gives the formulas.
 */
#ifndef IBFAB_CLI_PERFTEST_H
#define IBFAB_CLI_PERFTEST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "models/fabric/fab.h"
#include "models/net/net.h"
#include "traces/trace_spec.h"

struct sim_json;
struct cli_report;

/* One line of the table: one message size. */
struct cli_perftest_row {
	uint64_t bytes;
	uint32_t iters;
	bool ok;		/* every message of the size finished successfully */
	/* mode=bw (#bytes #iterations BW peak BW average MsgRate) */
	double bw_peak_gbps, bw_avg_gbps, msg_rate_mpps;
	/* mode=lat, microseconds: one way (half the round trip), or the
	 * whole round trip for READ, as perftest reports them */
	double t_min, t_max, t_typical, t_avg, t_stdev, t_p99, t_p999;
};

/* The exact header lines perftest prints (with --report_gbits for bw). */
extern const char cli_perftest_bw_header[];
extern const char cli_perftest_lat_header[];

/*
 * Fill rows[0 .. pt->nsizes-1] from the messages of a finished run. A size
 * whose messages did not all complete successfully gets ok = false (a run
 * cut short by sim.max_time_ns). Returns 0, or -1 when the messages are not
 * the sweep's layout or memory runs out.
 */
int cli_perftest_rows(const struct trace_perftest *pt, const struct fab_msgs *m,
		      struct cli_perftest_row *rows);

/*
 * One sweep's table: a banner (the test's perftest name, the hosts, the
 * perftest command line to compare with), the header, one line per size
 * that finished, in perftest's own formats. `p` (may be NULL) supplies the
 * MTU and inline size for that command line.
 */
void cli_perftest_table(FILE *out, const struct trace_perftest *pt, const char *spec,
			const struct net *net, const struct fab_params *p,
			const struct cli_perftest_row *rows);

/*
 * For ibfab run: the tables of every perftest spec among r->traffic,
 * printed after the summary. 0, or -1 when memory runs out.
 */
int cli_perftest_report(FILE *out, const struct cli_report *r);

/*
 * The --json hook (called by cli_report_json): a top-level key
 * "perftest": [{spec test op mode src dst iters tx_depth cq_mod complete
 * rows[]}] when r has perftest specs, nothing otherwise. On failure it
 * marks `j` failed, so the JSON write reports an error.
 */
void cli_perftest_json(struct sim_json *j, const struct cli_report *r);

#endif
