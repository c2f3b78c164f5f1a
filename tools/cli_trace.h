/* SPDX-License-Identifier: MIT */
/*
 * cli_trace.h - `ibfab run --trace FILE`: what a replayed workload
 * reports beside the fabric's summary (cli_trace.c).
 */
#ifndef IBFAB_CLI_TRACE_H
#define IBFAB_CLI_TRACE_H

#include <stdio.h>

#include "sim/sim_diag.h"

struct sim_json;
struct net;
struct cli_report;
struct trace_program;
struct trace_results;

/* The collectives in nccl-tests' shape, the ranks' compute / communication
 * split and the critical path, after the summary. */
void cli_trace_summary(FILE *out, const struct trace_program *p, const struct trace_results *r);
/* JSON "collectives", "ranks" and "critical_path" (nothing without a trace). */
void cli_trace_json(struct sim_json *j, const struct cli_report *r);
/* collectives.csv: name,collective,algorithm,bytes,ranks,start_ps,end_ps,
 * algbw_gbps,busbw_gbps - one row per collective. 0 or -1 (write error). */
int cli_trace_csv(FILE *out, const struct net *net, const struct trace_program *p,
		  const struct trace_results *r);
/* --explain OP: the lowered steps of a collective, named by its id or its
 * index in the trace. 0, or -1 with d filled (no such collective). */
int cli_trace_explain(const struct trace_program *p, const char *which, FILE *out,
		      struct sim_diag *d);

#endif
