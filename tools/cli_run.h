/* SPDX-License-Identifier: MIT */
/*
 * cli_run.h - `ibfab run`: build a fabric from a topology, parameters and
 * traffic specs, run it, and report (cli_report.h). Exit codes: 0 done,
 * 1 an input or run error (one line on stderr), 2 a usage error. SIGINT
 * and SIGTERM remove partial outputs, then end the process as the signal
 * would have.
 */
#ifndef IBFAB_CLI_RUN_H
#define IBFAB_CLI_RUN_H

#include <stdio.h>

#ifndef IBFAB_VERSION
#define IBFAB_VERSION "0.1.0"	/* keep in step with project() in CMakeLists.txt */
#endif

/* argv[0] is "run". Returns the process exit code. */
int cli_run_main(int argc, char **argv);
void cli_run_usage(FILE *out);
/* `ibfab run --help-params`: the parameters with their defaults, the presets. */
void cli_run_help_params(FILE *out);

#endif
