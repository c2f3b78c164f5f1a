/* SPDX-License-Identifier: MIT */
/* cli_topo_check.c - placeholder until the topology issue lands these commands. */
#include <stdio.h>

#include "tools/cli_topo.h"

int cli_topo_check(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "ibfab topo check: not implemented yet\n");
	return 2;
}

int cli_topo_dot(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "ibfab topo dot: not implemented yet\n");
	return 2;
}
