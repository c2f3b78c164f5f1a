/* SPDX-License-Identifier: MIT */
/*
 * cli_sharp.h - SHARP in a run (cli_sharp.c): giving a --trace job its
 * aggregation tree when a collective asks for collnet (or ib.sharp=on makes
 * algo=auto allreduces collnet), and the report's "sharp" line and object.
 */
#ifndef IBFAB_CLI_SHARP_H
#define IBFAB_CLI_SHARP_H

#include <stdio.h>

#include "tools/cli_run.h"
#include "traces/trace.h"

/* After the ranks are placed, before lowering: 0, or -1 with c->d set
 * (collnet asked for on a fabric without SHARP, no tree possible). */
int cli_sharp_setup(struct cli_run *c);

/* The summary line and the JSON object: nothing when the job had no tree. */
struct sim_json;
struct trace_results;
void cli_sharp_summary(FILE *out, const struct net *net, const struct trace_program *p,
		       const struct trace_results *r);
void cli_sharp_json(struct sim_json *j, const struct net *net, const struct trace_program *p,
		    const struct trace_results *r);

#endif
