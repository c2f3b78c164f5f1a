/* SPDX-License-Identifier: MIT */
/*
 * cli_topo.h - `ibfab topo`: look at, compare and generate topology files.
 *
 *   ibfab topo links FILE    the canonical cable list (topo_print_links)
 *   ibfab topo show FILE     counts, cables with rates, LIDs after routing
 *   ibfab topo gen KIND ...  generators (cli_topo_gen.c)
 *   ibfab topo route|path    routing engines, LFT dumps (cli_topo_route.c)
 *   ibfab topo check|dot     deadlock analysis, Graphviz (cli_topo_check.c)
 *
 * FILE may be "-" for standard input. Exit codes: 0 done, 1 an input error
 * (one "file:line:col: message" line on stderr), 2 a usage error.
 */
#ifndef IBFAB_CLI_TOPO_H
#define IBFAB_CLI_TOPO_H

#include <stdbool.h>
#include <stdio.h>

struct net;
struct sim_diag;

/* argv[0] is "topo". Returns the process exit code. */
int cli_topo_main(int argc, char **argv);
void cli_topo_usage(FILE *out);

/* Subcommands: argv[0] is the subcommand's name; each returns the exit code. */
int cli_topo_gen(int argc, char **argv);	/* cli_topo_gen.c */
int cli_topo_route(int argc, char **argv);	/* cli_topo_route.c */
int cli_topo_path(int argc, char **argv);	/* cli_topo_route.c */
int cli_topo_check(int argc, char **argv);	/* cli_topo_check.c */
int cli_topo_dot(int argc, char **argv);	/* cli_topo_check.c */

/* Shared by the subcommands. */
bool cli_is_help(const char *arg);		/* --help or -h */
/* topo_load(), or the whole of stdin when path is "-". */
int cli_topo_load(const char *path, struct net *n, struct sim_diag *d);
/* Print "ibfab topo: file:line:col: msg" on stderr; returns 1. */
int cli_topo_report(const struct sim_diag *d);

#endif
