/* SPDX-License-Identifier: MIT */
/* cli_topo_route.c - placeholder until the topology issue lands these commands. */
#include <stdio.h>

#include "tools/cli_topo.h"

int cli_topo_route(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "ibfab topo route: not implemented yet\n");
	return 2;
}

int cli_topo_path(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "ibfab topo path: not implemented yet\n");
	return 2;
}
