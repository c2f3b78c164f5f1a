/* SPDX-License-Identifier: MIT */
/*
 * cli_dot.h - what `ibfab topo dot` and the HTML report (cli_html.c) share
 * to draw a fabric with Graphviz: each cable once, the tiers of a layered
 * drawing (hosts at the bottom, switches by their distance from the
 * hosts), DOT string literals, the utilisation colours, and running `dot`
 * on a graph held in memory.
 */
#ifndef IBFAB_CLI_DOT_H
#define IBFAB_CLI_DOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "models/net/net.h"
#include "sim/sim_diag.h"

/* Each cable once: true at the end with the smaller (node, port). */
bool cli_dot_cable_end(const struct net *n, int node, int port);
/* Tier of each node: hosts 0, switches by BFS distance from the hosts (a
 * switch out of their reach starts a tier 1 of its own); *maxlevel the
 * highest. malloc'd, NULL out of memory. */
int *cli_dot_levels(const struct net *n, int *maxlevel);
/* A DOT string literal: quotes and backslashes escaped, bad bytes as '?'. */
void cli_dot_str(FILE *out, const char *s);

/* Node i of kind `type` (enum net_node_type) as a DOT node statement:
 * labelled `label`, with `tooltip`, shaped by kind (switches boxes,
 * routers hexagons, CAs ellipses); with_id adds id="nI" to its SVG. */
void cli_dot_node(FILE *out, int i, int type, const char *label, const char *tooltip, bool with_id);

/* Utilisation colours (ColorBrewer RdYlBu, reversed): idle blue to
 * saturated red, in five classes of 20%. */
struct cli_dot_class {
	double below;
	const char *colour, *label;
};
#define CLI_DOT_NSCALE 5
extern const struct cli_dot_class cli_dot_scale[CLI_DOT_NSCALE];
const char *cli_dot_util_colour(double u);

/*
 * Lay out the graph `dot` (len bytes of DOT) with Graphviz's dot into SVG:
 * *svg (malloc'd, NUL-terminated) from its <svg element on, without the
 * XML prolog. Nothing is written to disk but an unlinked temporary file.
 * 0, or -1 with d filled (dot not installed, failed, out of memory).
 */
int cli_dot_svg(const char *dot, size_t len, char **svg, struct sim_diag *d);

#endif
