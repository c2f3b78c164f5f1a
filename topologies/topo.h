/* SPDX-License-Identifier: MIT */
/*
 * topo.h - topology files: the ibnetdiscover output format and the ibsim net
 * format (one parser reads both), a writer, a canonical link list, and
 * generators. The formats: ibnetdiscover(8) (infiniband-diags), ibsim's
 * net files (ibsim/README in rdma-core's ibsim), and
 * topologies/examples/README.md.
 *
 * Every loader returns 0, or -1 with `d` filled as "file:line:col: what was
 * expected" and `out` left empty (net_free()d): nothing is half-loaded.
 */
#ifndef IBFAB_TOPO_H
#define IBFAB_TOPO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
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

/* ---- generators for every family (topo_gen*.c) --------------------------
 *
 * `ibfab topo gen KIND [options]` is topo_gen_parse() + topo_gen_write().
 * Each family's file opens with its shape, port layout and closed formulas;
 * topologies/examples/README.md lists the conventions they share:
 *   - switches first (top tier first), then hosts, so LIDs follow that order;
 *   - GUIDs follow ibsim's scheme (switch i: 0x200000 + i, CA i: 0x100000 +
 *     2i, port GUID = node GUID + port), ids are ibnetdiscover's S-/H-<guid>;
 *   - every host is a one-port CA, every cable carries the --rate;
 *   - a switch has --radix ports when a radix is given (unused ones stay
 *     unconnected), else exactly the ports it uses.
 */
enum topo_gen_kind {
	TOPO_GEN_FATTREE2,	/* the original leaf-spine generator, kept as is */
	TOPO_GEN_LEAFSPINE,	/* any leaves x spines x hosts x links */
	TOPO_GEN_FATTREE,	/* radix-k fat tree, 2 or 3 levels, oversubscription */
	TOPO_GEN_TORUS,		/* 1D..3D, wraparound */
	TOPO_GEN_MESH,		/* 1D..3D, no wraparound */
	TOPO_GEN_DRAGONFLY,	/* groups of all-to-all routers, absolute global links */
	TOPO_GEN_RAIL,		/* rail-optimised: N nodes x G GPUs, a rail per GPU */
	TOPO_GEN_KIND_COUNT
};

#define TOPO_GEN_UNSET (-1)	/* an option that was not given: its default */
#define TOPO_GEN_MAX_DIMS 3
#define TOPO_GEN_MAX_COUNT 100000	/* largest count an option accepts */

/*
 * The options of every family; which apply to which kind is in the option
 * table of topo_gen.c (and `ibfab topo gen --help`). Counts are
 * TOPO_GEN_UNSET when not given; topo_gen_resolve() fills the defaults.
 * `rate` points at caller memory (argv): "4xHDR", or NULL for no rate.
 */
struct topo_gen_params {
	enum topo_gen_kind kind;
	const char *rate;
	int radix;		/* ports per switch (fattree: required) */
	int levels;		/* fattree: 2 or 3 */
	int hosts;		/* per leaf, per switch (torus/mesh), per router */
	int leaves;		/* leafspine, fattree 2: all; fattree 3: per pod */
	int spines;		/* leafspine, fattree 2, rail */
	int links;		/* leafspine, fattree2: cables per spine per leaf */
	int pods;		/* fattree 3 */
	int over_hosts, over_up;	/* --oversub A:B, host ports : up-links */
	int ndims;		/* torus, mesh: 0 unset, else 1..3 */
	int dims[TOPO_GEN_MAX_DIMS];
	int groups, routers, global;	/* dragonfly (global: links per router) */
	int nodes, gpus;	/* rail (--servers is --nodes) */
	const char *server;	/* rail --server: a server preset (models/server), NULL none */
	bool rate_given;	/* --rate was given (a server preset's NIC rate does not apply) */
};

/* Every count TOPO_GEN_UNSET, rate TOPO_DEFAULT_RATE. */
void topo_gen_params_init(struct topo_gen_params *p, enum topo_gen_kind kind);
/* "fattree" <-> TOPO_GEN_FATTREE; -1 for an unknown name. */
int topo_gen_kind_parse(const char *name);
const char *topo_gen_kind_name(enum topo_gen_kind kind);

/*
 * Parse `KIND --opt VALUE ...` (argv[0] is the kind; --opt=VALUE works too)
 * into `p` (initialised here). Refuses an unknown kind or option, an option
 * the kind does not take, a missing value, a count that is not a whole
 * number in 1..TOPO_GEN_MAX_COUNT (fattree2 --spines may be 0), a bad --dims
 * or --oversub, and an option given twice. Shapes are checked by
 * topo_gen_resolve(). Returns 0 or -1 with `d` filled.
 */
int topo_gen_parse(struct topo_gen_params *p, int argc, char *const argv[],
		   struct sim_diag *d);

/*
 * Fill the defaults of `in` into `out` and check the shape: required
 * options present, counts positive, every switch within its radix and
 * NET_MAX_PORTS, the whole fabric within the unicast LIDs. After this every
 * option that applies to the kind is set, so writing them out (as the
 * generated file's header does) gives a command that makes the same file.
 */
int topo_gen_resolve(const struct topo_gen_params *in,
		     struct topo_gen_params *out, struct sim_diag *d);
/* `ibfab topo gen ...` for resolved params, without the leading "ibfab topo gen ". */
void topo_gen_command(const struct topo_gen_params *p, char *buf, size_t len);

/* Build the fabric (initialises `out`; nothing left allocated on error). */
int topo_gen_net(struct net *out, const struct topo_gen_params *p,
		 struct sim_diag *d);
/*
 * Write it in ibnetdiscover format, after a header comment with the shape,
 * the counts and the command that regenerates it. Same params, same bytes.
 * Returns 0, or -1 with `d` filled (bad params, write error).
 */
int topo_gen_write(FILE *out, const struct topo_gen_params *p,
		   struct sim_diag *d);
/* The same as a malloc()ed string; NULL with `d` filled on error. */
char *topo_gen_str(const struct topo_gen_params *p, struct sim_diag *d);

/*
 * Generator plumbing shared by topologies/topo_gen*.c, not meant for other
 * callers. A family is an ops table: resolve() fills defaults and checks
 * the shape (params already hold the kind), build() adds nodes and cables
 * through the topo_gen_b_*() helpers, summary() says in one line what the
 * resolved params describe.
 */
struct topo_gen_build {
	struct net *n;
	struct sim_diag *d;
	const char *kind;	/* prefixes messages */
	int nswitch, nca;	/* next GUID offsets */
};

struct topo_gen_family {
	int (*resolve)(struct topo_gen_params *p, struct sim_diag *d);
	int (*build)(struct topo_gen_build *b, const struct topo_gen_params *p);
	void (*summary)(const struct topo_gen_params *p, char *buf, size_t len);
};

extern const struct topo_gen_family topo_gen_fattree_family;	/* topo_gen_fattree.c */
extern const struct topo_gen_family topo_gen_torus_family;	/* topo_gen_torus.c (mesh too) */
extern const struct topo_gen_family topo_gen_dragonfly_family;	/* topo_gen_dragonfly.c */
extern const struct topo_gen_family topo_gen_rail_family;	/* topo_gen_rail.c */

/* A switch or a one-port host with the next GUID; description printf-style. Index or -1. */
int topo_gen_b_switch(struct topo_gen_build *b, int nports, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int topo_gen_b_host(struct topo_gen_build *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* net_connect() without a file position; 0 or -1. */
int topo_gen_b_link(struct topo_gen_build *b, int x, int px, int y, int py);
/*
 * The leaf-spine block of fattree2, leafspine and the 2-level fattree:
 * spines, then leaves, then hosts, with the port layout of fattree2.
 */
int topo_gen_b_two_level(struct topo_gen_build *b, int leaves, int spines,
			 int hosts_per_leaf, int links_per_spine,
			 int leaf_ports, int spine_ports);
/* Refuse a fabric with more nodes than unicast LIDs, before allocating it. */
int topo_gen_check_size(const char *kind, int64_t switches, int64_t hosts,
			struct sim_diag *d);
/* Refuse `need` ports on a switch of `radix` (TOPO_GEN_UNSET: NET_MAX_PORTS). */
int topo_gen_check_ports(const char *kind, const char *what, int64_t need,
			 int radix, const char *detail, struct sim_diag *d);
/* The port count to give a switch that uses `used` ports. */
int topo_gen_nports(int radix, int used);

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
