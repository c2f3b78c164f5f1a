/* SPDX-License-Identifier: MIT */
/*
 * topo_gen_rail.c - rail-optimised GPU clusters: N nodes of G GPUs, one
 * single-port HCA per GPU. HCA g of every node is cabled to the leaves of
 * rail g, so the GPUs with the same local rank talk through one switch
 * (what NCCL's ring and tree algorithms mostly do); spines above connect
 * every rail leaf for cross-rail traffic (NVIDIA DGX SuperPOD reference
 * architecture: 8 rails, one leaf per rail per scalable unit; Wang et al.,
 * "Rail-only: A Low-Cost High-Performance Network for Training LLMs with
 * Trillion Parameters", 2023, for the shape and why it suits collectives).
 *
 * A rail leaf takes up to Dmax nodes: with --radix k and --oversub A:B
 * (default 1:1), Dmax = m*A with m = floor(k / (A+B)); without --radix,
 * Dmax = N (one leaf per rail). A rail then has R = ceil(N / Dmax) leaves,
 * filled in node order (leaf j takes nodes j*Dmax ..), and every leaf has
 * one up-link to each of S spines (default ceil(D*B/A), D = min(N, Dmax)).
 *   hosts = N*G, switches = G*R + S, cables = N*G + G*R*S.
 * Two GPUs of the same rail meet at their leaf (one switch) when R = 1;
 * any two hosts are at most leaf - spine - leaf apart.
 *
 * Names: spines spine0.., rail leaves rail<g> (rail<g>_<j> when a rail has
 * several leaves), hosts n<node>g<gpu>, listed node-major so that host k
 * (and LID order) is rank k = node*G + gpu, one rank per GPU. Ports: rail
 * leaf 1..D its nodes, D+1+s spine s; spine 1+x rail leaf x (rail-major).
 * Switches have exactly the ports they use, or --radix.
 *
 * --levels 3 (with --radix k), for clusters past one spine layer (the
 * DGX SuperPOD's larger forms): pods of rail leaves with spines of their
 * own, cores above, as fattree's 3 levels (topo_gen_fattree.c). A leaf
 * takes Dmax = m*A nodes and has U = m*B up-links, one to each of its
 * pod's U spines; a pod has Lp = floor((k/2) / G) leaves per rail (a pod
 * spine's k/2 down-ports take the pod's G*Lp leaves), and pod spine j has
 * C = k/2 up-links, to cores j*C .. j*C+C-1; core j*C+i has one link to
 * pod spine j of every pod. With R = ceil(N / Dmax) leaves per rail and
 * P = ceil(R / Lp) pods (at most k):
 *   hosts = N*G, switches = U*C + P*U + G*R, cables = N*G + G*R*U + P*U*C.
 * Radix 64, 8 GPUs, 1:1: 32 nodes a leaf, 4 leaves a rail per pod: 128
 * nodes (1,024 GPUs) a pod, up to 64 pods. Names core<x>, pod<p>_spine<j>,
 * rail<g>_<r> (r counted across pods), n<node>g<gpu>. Ports: leaf 1..D its
 * nodes, D+1+j pod spine j; pod spine 1 + g*Lp + (r mod Lp) its leaves,
 * G*Lp+1+i core j*C+i; core 1+p pod p.
 *
 * Left out: more than one HCA port, rail-only fabrics without spines,
 * oversubscription above the leaves. The servers' NVLink is the server
 * model's (models/server, --server).
 */
#include "topologies/topo.h"
#include "models/server/server.h"

#include <inttypes.h>
#include <string.h>

/* Add a hint to a diagnostic that is already set. */
static int hint(struct sim_diag *d, const char *text)
{
	if (d) {
		size_t k = strlen(d->msg);

		snprintf(d->msg + k, sizeof(d->msg) - k, "; %s", text);
	}
	return -1;
}

struct rail_shape {
	int dmax;		/* nodes a leaf may take */
	int d;			/* host ports in use on a full leaf */
	int leaves;		/* per rail */
};

static void shape(const struct topo_gen_params *p, struct rail_shape *s)
{
	s->dmax = p->radix != TOPO_GEN_UNSET ?
		p->radix / (p->over_hosts + p->over_up) * p->over_hosts : p->nodes;
	s->d = s->dmax < p->nodes ? s->dmax : p->nodes;
	s->leaves = s->dmax ? (p->nodes + s->dmax - 1) / s->dmax : 0;
}

/*
 * The hosts n<node>g<gpu>, node-major (host k is rank k), each cabled to
 * port 1 + node % dmax of its rail's leaf node / dmax; the rails' leaves
 * are numbered from first_leaf, `leaves` per rail. 0 or -1.
 */
static int add_hosts(struct topo_gen_build *b, int N, int G, int first_leaf, int leaves,
		     int dmax)
{
	int first_host = b->n->nnodes;

	for (int n = 0; n < N; n++)
		for (int g = 0; g < G; g++)
			if (topo_gen_b_host(b, "n%dg%d", n, g) < 0)
				return -1;
	for (int n = 0; n < N; n++)
		for (int g = 0; g < G; g++)
			if (topo_gen_b_link(b, first_leaf + g * leaves + n / dmax, 1 + n % dmax,
					    first_host + n * G + g, 1))
				return -1;
	return 0;
}

/* --levels 3: pods, from resolved params. */
struct rail3 {
	int dmax, d, up;	/* nodes a leaf takes, host ports in use, up-links */
	int lp;			/* leaves per rail per pod */
	int r, pods, c;		/* leaves per rail, pods, up-links per pod spine */
};

static void shape3(const struct topo_gen_params *p, struct rail3 *s)
{
	int m = p->radix / (p->over_hosts + p->over_up);

	s->dmax = m * p->over_hosts;
	s->up = m * p->over_up;
	s->d = s->dmax < p->nodes ? s->dmax : p->nodes;
	s->lp = p->radix / 2 / p->gpus;
	s->c = p->radix / 2;
	s->r = s->dmax ? (p->nodes + s->dmax - 1) / s->dmax : 0;
	s->pods = s->lp ? (s->r + s->lp - 1) / s->lp : 0;
}

static int rail3_resolve(struct topo_gen_params *p, struct sim_diag *d)
{
	struct rail3 s;

	if (p->radix == TOPO_GEN_UNSET)
		return sim_diag_set(d, NULL, 0, 0, "rail: --levels 3 needs --radix (or --server)");
	if (p->spines != TOPO_GEN_UNSET)
		return sim_diag_set(d, NULL, 0, 0,
				    "rail: --spines is for 2 levels (with 3, every pod has one spine per leaf up-link)");
	shape3(p, &s);
	if (s.dmax < 1 || s.up < 1)
		return sim_diag_set(d, NULL, 0, 0,
				    "rail: --radix %d is too small for %d:%d (a leaf needs at least %d ports)",
				    p->radix, p->over_hosts, p->over_up, p->over_hosts + p->over_up);
	if (s.lp < 1)
		return sim_diag_set(d, NULL, 0, 0,
				    "rail: --levels 3 with --radix %d: a pod spine's %d down-ports cannot take one leaf of each of %d rails",
				    p->radix, p->radix / 2, p->gpus);
	if (s.pods > p->radix)
		return sim_diag_set(d, NULL, 0, 0,
				    "rail: %d nodes need %d pods of %d; a core of radix %d reaches at most %d",
				    p->nodes, s.pods, s.lp * s.dmax, p->radix, p->radix);
	return topo_gen_check_size("rail",
				   (int64_t)s.up * s.c + (int64_t)s.pods * s.up + (int64_t)p->gpus * s.r,
				   (int64_t)p->nodes * p->gpus, d);
}

static int rail3_build(struct topo_gen_build *b, const struct topo_gen_params *p)
{
	const int N = p->nodes, G = p->gpus, k = p->radix;
	int first_core = b->n->nnodes, first_spine, first_leaf;
	struct rail3 s;

	shape3(p, &s);
	for (int x = 0; x < s.up * s.c; x++)
		if (topo_gen_b_switch(b, topo_gen_nports(k, s.pods), "core%d", x) < 0)
			return -1;
	first_spine = b->n->nnodes;
	for (int q = 0; q < s.pods; q++)
		for (int j = 0; j < s.up; j++)
			if (topo_gen_b_switch(b, topo_gen_nports(k, G * s.lp + s.c), "pod%d_spine%d", q,
					      j) < 0)
				return -1;
	first_leaf = b->n->nnodes;
	for (int g = 0; g < G; g++)
		for (int r = 0; r < s.r; r++)
			if (topo_gen_b_switch(b, topo_gen_nports(k, s.d + s.up), "rail%d_%d", g, r) < 0)
				return -1;
	if (add_hosts(b, N, G, first_leaf, s.r, s.dmax))
		return -1;
	for (int g = 0; g < G; g++)
		for (int r = 0; r < s.r; r++)
			for (int j = 0; j < s.up; j++)
				if (topo_gen_b_link(b, first_leaf + g * s.r + r, s.d + 1 + j,
						    first_spine + r / s.lp * s.up + j,
						    1 + g * s.lp + r % s.lp))
					return -1;
	for (int q = 0; q < s.pods; q++)
		for (int j = 0; j < s.up; j++)
			for (int i = 0; i < s.c; i++)
				if (topo_gen_b_link(b, first_spine + q * s.up + j, G * s.lp + 1 + i,
						    first_core + j * s.c + i, 1 + q))
					return -1;
	return 0;
}

static int rail_resolve(struct topo_gen_params *p, struct sim_diag *d)
{
	struct rail_shape s;
	char detail[128];
	int64_t spines;

	if (p->server) {	/* a server preset: its GPUs, NICs and leaf switches */
		const struct srv_preset *sp = srv_preset_find(p->server);

		if (!sp) {
			struct sim_diag tmp = { 0 };

			srv_params_preset(&(struct srv_params){ 0 }, p->server, &tmp);
			return sim_diag_set(d, NULL, 0, 0, "rail: --server: %s", tmp.msg);
		}
		p->server = sp->name;
		if (p->gpus == TOPO_GEN_UNSET)
			p->gpus = (int)sp->gpus;
		else if (p->gpus != (int)sp->gpus)
			return sim_diag_set(d, NULL, 0, 0,
					    "rail: --gpus %d, but a %s server has %u GPUs (leave --gpus out)",
					    p->gpus, sp->name, sp->gpus);
		if (!p->rate_given)
			p->rate = sp->nic_rate;
		if (p->radix == TOPO_GEN_UNSET)
			p->radix = (int)sp->leaf_radix;
	}
	if (p->nodes == TOPO_GEN_UNSET || p->gpus == TOPO_GEN_UNSET)
		return sim_diag_set(d, NULL, 0, 0,
				    "rail: --nodes and --gpus are required (e.g. --nodes 8 --gpus 8), or --servers and --server (e.g. --servers 16 --server dgx-h100)");
	if (p->over_hosts == TOPO_GEN_UNSET)
		p->over_hosts = p->over_up = 1;
	if (p->levels != TOPO_GEN_UNSET && p->levels != 2 && p->levels != 3)
		return sim_diag_set(d, NULL, 0, 0, "rail: --levels must be 2 or 3, not %d", p->levels);
	if (p->levels == 3)
		return rail3_resolve(p, d);
	shape(p, &s);
	if (s.dmax < 1)
		return sim_diag_set(d, NULL, 0, 0,
				    "rail: --radix %d is too small for %d:%d (a leaf needs at least %d ports)",
				    p->radix, p->over_hosts, p->over_up,
				    p->over_hosts + p->over_up);
	/* 64 bits: --nodes and --oversub may each be up to 100000 here. */
	spines = p->spines != TOPO_GEN_UNSET ? p->spines :
		((int64_t)s.d * p->over_up + p->over_hosts - 1) / p->over_hosts;
	snprintf(detail, sizeof(detail), "%d nodes + %" PRId64 " spines", s.d, spines);
	if (topo_gen_check_ports("rail", "a rail leaf", s.d + spines, p->radix,
				 detail, d))
		return p->radix == TOPO_GEN_UNSET ?
			hint(d, "give --radix to split each rail over several leaves") : -1;
	p->spines = (int)spines;	/* now below NET_MAX_PORTS */
	snprintf(detail, sizeof(detail), "%d rails x %d leaves", p->gpus, s.leaves);
	if (topo_gen_check_ports("rail", "a spine",
				 (int64_t)p->gpus * s.leaves, p->radix, detail, d))
		return hint(d, "fewer nodes or GPUs, a bigger radix, or --levels 3");
	return topo_gen_check_size("rail", (int64_t)p->gpus * s.leaves + p->spines,
				   (int64_t)p->nodes * p->gpus, d);
}

static int rail_build(struct topo_gen_build *b, const struct topo_gen_params *p)
{
	int N = p->nodes, G = p->gpus, S = p->spines;
	int first_spine = b->n->nnodes, first_leaf;
	struct rail_shape s;

	if (p->levels == 3)
		return rail3_build(b, p);
	shape(p, &s);
	for (int x = 0; x < S; x++)
		if (topo_gen_b_switch(b, topo_gen_nports(p->radix, G * s.leaves),
				      "spine%d", x) < 0)
			return -1;
	first_leaf = b->n->nnodes;
	for (int g = 0; g < G; g++)
		for (int j = 0; j < s.leaves; j++) {
			int nports = topo_gen_nports(p->radix, s.d + S);
			int rc = s.leaves == 1 ?
				topo_gen_b_switch(b, nports, "rail%d", g) :
				topo_gen_b_switch(b, nports, "rail%d_%d", g, j);

			if (rc < 0)
				return -1;
		}
	if (add_hosts(b, N, G, first_leaf, s.leaves, s.dmax))
		return -1;
	for (int x = 0; x < G * s.leaves; x++)
		for (int y = 0; y < S; y++)
			if (topo_gen_b_link(b, first_leaf + x, s.d + 1 + y,
					    first_spine + y, 1 + x))
				return -1;
	return 0;
}

static void rail_summary(const struct topo_gen_params *p, char *buf, size_t len)
{
	struct rail_shape s;

	if (p->levels == 3) {
		struct rail3 t;

		shape3(p, &t);
		snprintf(buf, len,
			 "rail: %d nodes x %d GPUs (one HCA each), 3 levels: %d pod%s of %d leaves per rail (%d:%d), %d spines per pod, %d cores",
			 p->nodes, p->gpus, t.pods, t.pods == 1 ? "" : "s", t.lp, p->over_hosts,
			 p->over_up, t.up, t.up * t.c);
		return;
	}
	shape(p, &s);
	snprintf(buf, len,
		 "rail: %d nodes x %d GPUs (one HCA each), %d rails of %d leaf%s (%d:%d), %d spines",
		 p->nodes, p->gpus, p->gpus, s.leaves, s.leaves == 1 ? "" : "s",
		 p->over_hosts, p->over_up, p->spines);
}

const struct topo_gen_family topo_gen_rail_family = {
	.resolve = rail_resolve,
	.build = rail_build,
	.summary = rail_summary,
};
