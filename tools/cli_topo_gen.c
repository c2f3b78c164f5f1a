/* SPDX-License-Identifier: MIT */
/*
 * cli_topo_gen.c - `ibfab topo gen KIND [options]`: write a generated
 * topology in ibnetdiscover format to stdout. The options are parsed and
 * checked by the library (topo_gen_parse / topo_gen_resolve in
 * topologies/topo_gen.c), so the unit tests see the same messages; this
 * file adds the help text and the exit codes: 0 written, 2 a usage error
 * (nothing written), 1 a write error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_diag.h"
#include "tools/cli_topo.h"
#include "topologies/topo.h"

static void usage_gen(FILE *out)
{
	fputs("usage: ibfab topo gen KIND [options] > FILE\n"
	      "\n"
	      "Write a generated fabric in ibnetdiscover format on stdout; ibfab, ibsim\n"
	      "and the infiniband-diags tools read it. N is a whole number >= 1; every\n"
	      "option also takes the form --option=VALUE. The file's header says the\n"
	      "counts and the full command that regenerates it, byte for byte.\n"
	      "\n"
	      "KIND fattree   radix-k fat tree (k-ary n-tree, folded Clos); 2 levels\n"
	      "               give k^2/2 hosts, 3 levels k^3/4 (k = 8: 128 hosts)\n"
	      "  --radix K        ports per switch, required (8, 16, 32, 40, 64 ...)\n"
	      "  --levels 2|3     leaf-spine, or leaf-spine-core in pods (default 2)\n"
	      "  --oversub A:B    host ports : up-links at every leaf (default 1:1)\n"
	      "  --hosts N        hosts per leaf (default: as many as --oversub allows)\n"
	      "  --leaves N       2 levels: leaves (default: as many as the spines\n"
	      "                   take); 3 levels: leaves per pod (default K/2)\n"
	      "  --spines N       2 levels: spines (default: one per leaf up-link)\n"
	      "  --pods N         3 levels: pods (default K)\n"
	      "  e.g. ibfab topo gen fattree --levels 3 --radix 8 > ft-k8.topo\n"
	      "       ibfab topo gen fattree --radix 12 --oversub 2:1 --leaves 8 > ft-2to1.topo\n"
	      "\n"
	      "KIND leafspine any number of leaves and spines, every spine on every leaf\n"
	      "  --leaves N --spines N --hosts N   required; hosts per leaf\n"
	      "  --links-per-spine N               parallel cables per spine per leaf (1)\n"
	      "  --radix K                         optional port limit per switch\n"
	      "  e.g. ibfab topo gen leafspine --leaves 6 --spines 3 --hosts 12 --links-per-spine 2\n"
	      "\n"
	      "KIND torus     one switch per coordinate, wraparound in every dimension\n"
	      "KIND mesh      the same without wraparound\n"
	      "  --dims AxB[xC]   sizes, each >= 2: --dims 4x4 or 4x4x2 (or 8: a ring/line)\n"
	      "  --hosts N        hosts per switch (default 1)\n"
	      "  --radix K        optional port limit per switch\n"
	      "  Switches are sw_x_y[_z], hosts h0.. in switch order, x fastest.\n"
	      "  e.g. ibfab topo gen torus --dims 4x4 > torus-4x4.topo\n"
	      "       ibfab topo gen mesh --dims 4x4x2 --hosts 2 > mesh.topo\n"
	      "\n"
	      "KIND dragonfly groups of routers cabled all-to-all, global links between\n"
	      "               groups in the absolute (consecutive) arrangement\n"
	      "  --groups N --routers N   required; routers per group\n"
	      "  --global N       global links per router (default routers/2, >= 1)\n"
	      "  --hosts N        hosts per router (default routers/2, >= 1)\n"
	      "  --radix K        optional port limit per router\n"
	      "  Routers are g<group>r<router>, hosts h0.. router by router.\n"
	      "  e.g. ibfab topo gen dragonfly --groups 4 --routers 4 --hosts 2 --global 3\n"
	      "\n"
	      "KIND rail      rail-optimised GPU cluster: one HCA per GPU, HCA g of every\n"
	      "               node on the leaves of rail g, spines above all rail leaves\n"
	      "  --nodes N --gpus N   required; GPUs (and HCAs) per node\n"
	      "  --servers N --server NAME   or: N GPU servers of a preset, dgx-a100\n"
	      "                   (8 A100, 8 x HDR), dgx-h100 (8 H100, 8 x NDR) or\n"
	      "                   gb200-nvl72 (trays of 4 B200, 72 per NVLink domain):\n"
	      "                   its GPUs, NIC rate and leaf radix (a scalable unit\n"
	      "                   per leaf: 20 DGX A100 or 32 DGX H100), and a\n"
	      "                   '# ibfab: server=NAME' line, so `ibfab run` joins\n"
	      "                   each server's GPUs by NVLink (docs/servers.md)\n"
	      "  --radix K        leaf and spine ports; a rail gets several leaves when\n"
	      "                   its nodes do not fit one (default: one leaf per rail)\n"
	      "  --oversub A:B    node ports : up-links at every rail leaf (default 1:1)\n"
	      "  --spines N       spines (default: enough for --oversub)\n"
	      "  --levels 3       pods of rail leaves with spines of their own, cores\n"
	      "                   above (needs --radix): radix 64 and 8 GPUs make pods\n"
	      "                   of 128 nodes, up to 64 pods\n"
	      "  Hosts are n<node>g<gpu>, node by node: host k is rank k.\n"
	      "  e.g. ibfab topo gen rail --nodes 8 --gpus 8 > rail-8x8.topo\n"
	      "       ibfab topo gen rail --nodes 32 --gpus 8 --radix 32\n"
	      "       ibfab topo gen rail --servers 16 --server dgx-h100 > h100-16.topo\n"
	      "\n"
	      "KIND fattree2  the original two-level generator (same file as ever)\n"
	      "  --leaves N --spines N --hosts N   required (--spines 0: one leaf alone)\n"
	      "  --links-per-spine N   default hosts/spines, which gives full bisection\n"
	      "  e.g. ibfab topo gen fattree2 --leaves 4 --spines 2 --hosts 4\n"
	      "\n"
	      "Every kind:\n"
	      "  --rate RATE      every cable's width x speed, e.g. 4xHDR (default), 4xNDR,\n"
	      "                   1xSDR, 12xQDR; 'none' states no rate\n"
	      "\n"
	      "Names are leaf3, spine0, core2, h17...; GUIDs count up from 0x200000\n"
	      "(switches) and 0x100000 (hosts) in file order; LIDs go switches first.\n"
	      "A fabric of more than 49,151 switches and hosts (InfiniBand's unicast\n"
	      "LIDs) is written without LIDs: it runs on Ethernet (--set fabric=roce or\n"
	      "tcp), and InfiniBand refuses it.\n"
	      "topologies/examples/README.md has the files made this way.\n", out);
}

int cli_topo_gen(int argc, char **argv)
{
	struct topo_gen_params p;
	struct sim_diag d;
	char msg[1200];
	char *text;

	/* argv[0] is "gen"; --help anywhere wins, as for the other commands. */
	for (int i = 1; i < argc; i++)
		if (cli_is_help(argv[i])) {
			usage_gen(stdout);
			return 0;
		}
	if (argc < 2) {
		fprintf(stderr, "ibfab topo gen: missing the kind of topology (fattree, leafspine, torus, mesh, dragonfly, rail, fattree2)\n"
			"'ibfab topo gen --help' lists them with their options\n");
		return 2;
	}
	if (topo_gen_parse(&p, argc - 1, argv + 1, &d) ||
	    !(text = topo_gen_str(&p, &d))) {
		sim_diag_format(&d, msg, sizeof(msg));
		fprintf(stderr, "ibfab topo gen: %s\n"
			"'ibfab topo gen --help' lists the kinds and their options\n", msg);
		return 2;
	}
	fputs(text, stdout);
	free(text);
	return fflush(stdout) || ferror(stdout) ? 1 : 0;
}
