/* SPDX-License-Identifier: MIT */
/*
 * cli_fault.h - `ibfab run --fault SPEC` (cli_fault.c): parsing a fault,
 * rerouting with the run's engine or a dump's tables, and the report's
 * lines.
 */
#ifndef IBFAB_CLI_FAULT_H
#define IBFAB_CLI_FAULT_H

#include <stdio.h>

#include "models/fabric/fab.h"
#include "models/net/net.h"
#include "sim/sim_diag.h"
#include "tools/cli_run.h"

/* One --fault SPEC against the topology, into x[0..max): how many faults
 * it makes (a flap: a down and an up each time), or -1 (d names the spec). */
#define CLI_FAULT_MAX 2000
int cli_fault_parse(const char *spec, const struct net *net, struct fab_fault *x, int max,
		    struct sim_diag *d);
/* fab_reroute_fn for the run: ctx is its struct cli_run_opts; with
 * `tables` (an 'lft FILE at TIME' fault) the dump's tables, else the
 * run's engine. */
int cli_fault_reroute(void *ctx, struct net *n, const char *tables, struct sim_diag *d);
/* The summary's "faults" lines and the JSON's "faults" object (nothing
 * when the run had no fault). */
void cli_fault_summary(FILE *out, const struct fab *f, const struct net *net);
struct sim_json;
void cli_fault_json(struct sim_json *j, const struct fab *f, const struct net *net);

#endif
