/* SPDX-License-Identifier: MIT */
/*
 * topo.h - topology files: the ibnetdiscover output format and the ibsim net
 * format (one parser reads both), a writer, a canonical link list, and
 * generators. See /work/shared/reference/formats.md and
 * topologies/examples/README.md.
 *
 * Every loader returns 0, or -1 with `d` filled as "file:line:col: what was
 * expected" and `out` left empty (net_free()d): nothing is half-loaded.
 */
#ifndef IBFAB_TOPO_H
#define IBFAB_TOPO_H

#include <stdio.h>

#include "models/link/link.h"
#include "models/net/net.h"
#include "sim/sim_diag.h"

#define TOPO_MAX_INCLUDE_DEPTH 16

/*
 * Read a topology file (and its includes) into `out` (initialised here) and
 * validate it: every cable resolved and consistent. LIDs are not assigned
 * (net_assign_lids / sm_route_minhop do that), but LIDs the file gives are
 * kept in the nodes and ports so they can be.
 */
int topo_load(const char *path, struct net *out, struct sim_diag *d);
/* Same from memory; `name` is used in diagnostics and to resolve includes. */
int topo_load_string(const char *text, const char *name, struct net *out,
		     struct sim_diag *d);
/* Same from a buffer that may contain NUL bytes (refused as binary). */
int topo_load_buffer(const char *buf, size_t len, const char *name,
		     struct net *out, struct sim_diag *d);

/*
 * Write `n` in ibnetdiscover format: GUID lines when GUIDs are known, node
 * headers with `# "desc" ... lid N` comments, both ends of every cable with
 * its rate as text ("4xHDR") and as ibnetdiscover -f codes (s= w= e=), which
 * ibsim also honours. Reading the output back gives the same links, rates,
 * descriptions and LIDs. Returns 0 or -1 (write error).
 */
int topo_write_ibnd(const struct net *n, FILE *out);

/*
 * One line per cable, sorted: `"<descA>"[pA] <-> "<descB>"[pB] <rate>` with
 * the smaller (description, port) on the left; rate "4xHDR", or "4x" / "HDR"
 * when only half is known, or "-". Two files describing the same cabling
 * print the same list, whatever their ids and GUIDs.
 */
void topo_print_links(const struct net *n, FILE *out);
/* The rate column of topo_print_links() for (node, port). */
const char *topo_rate_str(const struct net *n, int node, int port, char *buf,
			  unsigned len);
/* Parse "4xHDR" (case-insensitive) into lanes and speed; 0 or -1. */
int topo_rate_parse(const char *s, struct link_rate *r);

/*
 * Two-level fat tree (leaf-spine): `leaves` leaf switches with
 * `hosts_per_leaf` hosts each, `spines` spine switches, each spine cabled to
 * every leaf with `links_per_spine` parallel links. Full bisection when
 * spines * links_per_spine == hosts_per_leaf. Descriptions leaf0.., spine0..,
 * h0.. (hosts numbered leaf-major); ids and GUIDs in ibnetdiscover style.
 * `rate` like "4xHDR" (NULL: none stated).
 */
int topo_gen_fattree2_net(struct net *out, int leaves, int spines,
			  int hosts_per_leaf, int links_per_spine,
			  const char *rate, struct sim_diag *d);
/* The same written in ibnetdiscover format; 0 or -1 (bad parameters, I/O). */
int topo_gen_fattree2(FILE *out, int leaves, int spines, int hosts_per_leaf,
		      int links_per_spine, const char *rate);
/* The same as a malloc()ed string (NULL on bad parameters, diag filled). */
char *topo_gen_fattree2_str(int leaves, int spines, int hosts_per_leaf,
			    int links_per_spine, const char *rate,
			    struct sim_diag *d);

/*
 * The built-in default fabric: 4 leaves x 4 hosts, 2 spines each with 2
 * links to every leaf (full bisection), 4xHDR. Same as
 * topologies/examples/fattree-16.topo.
 */
#define TOPO_DEFAULT_LEAVES 4
#define TOPO_DEFAULT_SPINES 2
#define TOPO_DEFAULT_HOSTS 4
#define TOPO_DEFAULT_LINKS 2
#define TOPO_DEFAULT_RATE "4xHDR"
int topo_default(struct net *out, struct sim_diag *d);

#endif
