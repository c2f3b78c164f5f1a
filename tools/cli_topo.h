/* SPDX-License-Identifier: MIT */
/*
 * cli_topo.h - `ibfab topo`: look at, compare and generate topology files.
 *
 *   ibfab topo links FILE    the canonical cable list (topo_print_links)
 *   ibfab topo show FILE     counts, cables with rates, LIDs after minhop
 *   ibfab topo gen fattree2 --leaves N --spines N --hosts N
 *                           [--links-per-spine N] [--rate 4xHDR]
 *
 * FILE may be "-" for standard input. Exit codes: 0 done, 1 an input error
 * (one "file:line:col: message" line on stderr), 2 a usage error.
 */
#ifndef IBFAB_CLI_TOPO_H
#define IBFAB_CLI_TOPO_H

#include <stdio.h>

/* argv[0] is "topo". Returns the process exit code. */
int cli_topo_main(int argc, char **argv);
void cli_topo_usage(FILE *out);

#endif
