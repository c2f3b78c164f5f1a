/* SPDX-License-Identifier: MIT */
/*
 * cli_serve.h - `ibfab serve` (the fabric daemon of the verbs shim) and
 * `ibfab exec` (run a verbs program on a simulated host). docs/shim.md.
 */
#ifndef IBFAB_CLI_SERVE_H
#define IBFAB_CLI_SERVE_H

#include <stdio.h>

/* argv[0] is "serve" / "exec". Return the process exit code. */
int cli_serve_main(int argc, char **argv);
int cli_exec_main(int argc, char **argv);
void cli_serve_usage(FILE *out);
void cli_exec_usage(FILE *out);

#endif
