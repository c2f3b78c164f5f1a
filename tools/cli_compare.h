/* SPDX-License-Identifier: MIT */
/*
 * cli_compare.h - `ibfab compare`: the same topology, routing, workload and
 * seed run on several fabrics (InfiniBand, RoCEv2 with and without PFC,
 * TCP), reported side by side as a table, JSON, CSV and an SVG chart
 * (docs/compare.md). Exit codes as `ibfab run`: 0 done, 1 an input or run
 * error, 2 a usage error.
 */
#ifndef IBFAB_CLI_COMPARE_H
#define IBFAB_CLI_COMPARE_H

#include <stdio.h>

/* argv[0] is "compare". Returns the process exit code. */
int cli_compare_main(int argc, char **argv);
void cli_compare_usage(FILE *out);

#endif
