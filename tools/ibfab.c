/* SPDX-License-Identifier: MIT */
/*
 * ibfab.c - the `ibfab` program: finds the command and hands over to it.
 * Commands live in the ibfab_cli library (cli_*.c) so tests can call them;
 * this file only dispatches, like git's and ip's front ends.
 */
#include <stdio.h>
#include <string.h>

#include "tools/cli_compare.h"
#include "tools/cli_run.h"
#include "tools/cli_serve.h"
#include "tools/cli_topo.h"

static void usage(FILE *out)
{
	fputs("usage: ibfab COMMAND [options]\n"
	      "\n"
	      "A userspace InfiniBand fabric simulator.\n"
	      "\n"
	      "Commands:\n"
	      "  run       simulate traffic over a fabric and report (ibfab run --help)\n"
	      "  compare   one workload on ib, roce, roce-lossy and tcp, side by side\n"
	      "            (ibfab compare --help)\n"
	      "  topo      generate, check and convert topologies (ibfab topo --help)\n"
	      "  serve     run the fabric daemon for unmodified verbs programs (ibfab serve --help)\n"
	      "  exec      run a verbs program on a simulated host (ibfab exec --help)\n"
	      "  help CMD  the help of a command\n"
	      "  version   print the version\n"
	      "\n"
	      "With no options, 'ibfab run' simulates a built-in 16-host fat tree under a\n"
	      "mixed load and prints a summary; 'ibfab compare' runs an allreduce and an\n"
	      "incast on it over four fabrics and draws compare.svg.\n", out);
}

static int is_help(const char *a)
{
	return !strcmp(a, "--help") || !strcmp(a, "-h") || !strcmp(a, "help");
}

int main(int argc, char **argv)
{
	char help_arg[] = "--help";
	const char *cmd = argc > 1 ? argv[1] : NULL;

	if (!cmd) {
		usage(stderr);
		return 2;
	}
	/* "ibfab help run" == "ibfab run --help" */
	if (is_help(cmd) && argc > 2) {
		char *sub[] = { argv[2], help_arg, NULL };

		if (!strcmp(argv[2], "run"))
			return cli_run_main(2, sub);
		if (!strcmp(argv[2], "topo"))
			return cli_topo_main(2, sub);
		if (!strcmp(argv[2], "compare"))
			return cli_compare_main(2, sub);
		if (!strcmp(argv[2], "serve"))
			return cli_serve_main(2, sub);
		if (!strcmp(argv[2], "exec"))
			return cli_exec_main(2, sub);
		if (is_help(argv[2])) {
			usage(stdout);
			return 0;
		}
		fprintf(stderr, "ibfab: no help for unknown command '%s'\n", argv[2]);
		return 2;
	}
	if (is_help(cmd)) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
		printf("ibfab %s\n", IBFAB_VERSION);
		return 0;
	}
	if (!strcmp(cmd, "run"))
		return cli_run_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "topo"))
		return cli_topo_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "compare"))
		return cli_compare_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "serve"))
		return cli_serve_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "exec"))
		return cli_exec_main(argc - 1, argv + 1);
	fprintf(stderr, "ibfab: unknown command '%s' (see 'ibfab --help')\n", cmd);
	return 2;
}
