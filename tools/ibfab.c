/* SPDX-License-Identifier: MIT */
/*
 * ibfab.c - the `ibfab` program: finds the command and hands over to it.
 * Commands live in the ibfab_cli library (cli_*.c) so tests can call them;
 * this file only dispatches, like git's and ip's front ends.
 */
#include <stdio.h>
#include <string.h>

#include "tools/cli_compare.h"
#include "tools/cli_help.h"
#include "tools/cli_out.h"
#include "tools/cli_run.h"
#include "tools/cli_serve.h"
#include "tools/cli_topo.h"

static void usage(FILE *out)
{
	cli_help_put("usage: ibfab COMMAND [options]\n"
	      "\n"
	      "A userspace InfiniBand fabric simulator.\n"
	      "\n"
	      "Commands:\n"
	      "  run       simulate traffic over a fabric and report (ibfab run --help)\n"
	      "  compare   one workload on @fabrics-and@, side by side\n"
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

/* The commands: `ibfab help NAME` and `ibfab NAME ...` both look here. */
static const struct {
	const char *name;
	int (*main)(int argc, char **argv);	/* argv[0] is the command's name */
} commands[] = {
	{ "run", cli_run_main },
	{ "topo", cli_topo_main },
	{ "compare", cli_compare_main },
	{ "serve", cli_serve_main },
	{ "exec", cli_exec_main },
};

static int (*find(const char *name))(int, char **)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, name))
			return commands[i].main;
	return NULL;
}

static int dispatch(int argc, char **argv)
{
	char help_arg[] = "--help";
	const char *cmd = argc > 1 ? argv[1] : NULL;
	int (*fn)(int, char **);

	if (!cmd) {
		usage(stderr);
		return 2;
	}
	/* "ibfab help run" == "ibfab run --help" */
	if (is_help(cmd) && argc > 2) {
		char *sub[] = { argv[2], help_arg, NULL };

		if ((fn = find(argv[2])))
			return fn(2, sub);
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
	if ((fn = find(cmd)))
		return fn(argc - 1, argv + 1);
	fprintf(stderr, "ibfab: unknown command '%s' (see 'ibfab --help')\n", cmd);
	return 2;
}

#ifdef IBFAB_MPI
void par_mpi_attach(void);	/* tools/par_mpi.c: mpirun -np N ibfab run */
#endif

int main(int argc, char **argv)
{
#ifdef IBFAB_MPI
	par_mpi_attach();
#endif
	int rc = dispatch(argc, argv);

	/* whatever the command printed must have reached stdout: `ibfab run
	 * --help > /dev/full` fails, as a lost report would */
	if (cli_out_stdout_check("ibfab") && rc == 0)
		rc = 1;
	return rc;
}
