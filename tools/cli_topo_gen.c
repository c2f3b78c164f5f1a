/* SPDX-License-Identifier: MIT */
/*
 * cli_topo_gen.c - `ibfab topo gen KIND [options]`: write a generated
 * topology in ibnetdiscover format to stdout (topologies/topo_gen.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "sim/sim_diag.h"
#include "tools/cli_topo.h"
#include "topologies/topo.h"

static void usage_gen(FILE *out)
{
	fputs("usage: ibfab topo gen fattree2 --leaves N --spines N --hosts N\n"
	      "                               [--links-per-spine N] [--rate RATE]\n"
	      "\n"
	      "A two-level fat tree (leaf-spine) in ibnetdiscover format on stdout:\n"
	      "N leaves with --hosts hosts each, every spine cabled to every leaf with\n"
	      "--links-per-spine parallel links (default: hosts / spines, at least 1,\n"
	      "which gives full bisection when it divides evenly). RATE is width x\n"
	      "speed, default 4xHDR. Descriptions are leaf0.., spine0.., h0.. (hosts\n"
	      "numbered leaf by leaf).\n"
	      "\n"
	      "Example: ibfab topo gen fattree2 --leaves 4 --spines 2 --hosts 4\n", out);
}

/* A count for --leaves and friends: a whole number in 0..100000. */
static int parse_count(const char *opt, const char *s, int *v)
{
	char *end;
	long x;

	errno = 0;
	x = strtol(s, &end, 10);
	if (end == s || *end || errno || x < 0 || x > 100000) {
		fprintf(stderr, "ibfab topo gen: %s wants a whole number, got '%s'\n",
			opt, s);
		return -1;
	}
	*v = (int)x;
	return 0;
}

int cli_topo_gen(int argc, char **argv)
{
	int leaves = -1, spines = -1, hosts = -1, links = -1;
	const char *rate = TOPO_DEFAULT_RATE;
	struct sim_diag d;
	char *text;

	if (argc >= 2 && cli_is_help(argv[1])) {
		usage_gen(stdout);
		return 0;
	}
	if (argc < 2) {
		fprintf(stderr, "ibfab topo gen: missing the kind of topology (fattree2)\n");
		usage_gen(stderr);
		return 2;
	}
	if (strcmp(argv[1], "fattree2")) {
		fprintf(stderr, "ibfab topo gen: unknown topology '%s' (known: fattree2)\n",
			argv[1]);
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		static const char *const opts[] = { "--leaves", "--spines", "--hosts",
						    "--links-per-spine", "--rate" };
		int *dst[] = { &leaves, &spines, &hosts, &links, NULL };
		const char *a = argv[i], *val = NULL;
		unsigned k;

		if (cli_is_help(a)) {
			usage_gen(stdout);
			return 0;
		}
		for (k = 0; k < SIM_ARRAY_SIZE(opts); k++) {
			size_t ol = strlen(opts[k]);

			if (!strncmp(a, opts[k], ol) && (a[ol] == '=' || !a[ol])) {
				val = a[ol] == '=' ? a + ol + 1 : NULL;
				break;
			}
		}
		if (k == SIM_ARRAY_SIZE(opts)) {
			fprintf(stderr, "ibfab topo gen: unknown option '%s'\n", a);
			usage_gen(stderr);
			return 2;
		}
		if (!val) {
			if (i + 1 >= argc) {
				fprintf(stderr, "ibfab topo gen: %s needs a value\n", opts[k]);
				return 2;
			}
			val = argv[++i];
		}
		if (!dst[k])
			rate = val;
		else if (parse_count(opts[k], val, dst[k]))
			return 2;
	}
	if (leaves < 0 || spines < 0 || hosts < 0) {
		fprintf(stderr, "ibfab topo gen fattree2: --leaves, --spines and --hosts are required\n");
		usage_gen(stderr);
		return 2;
	}
	if (links < 0)
		links = spines > 0 && hosts / spines > 0 ? hosts / spines : 1;
	text = topo_gen_fattree2_str(leaves, spines, hosts, links, rate, &d);
	if (!text) {
		char buf[1200];

		sim_diag_format(&d, buf, sizeof(buf));
		fprintf(stderr, "ibfab topo gen: %s\n", buf);
		return 2;
	}
	fputs(text, stdout);
	free(text);
	return fflush(stdout) ? 1 : 0;
}

