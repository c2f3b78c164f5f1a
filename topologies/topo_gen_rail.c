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
 * Switches have exactly the ports they use, or --radix. Left out: NVLink
 * inside a node (cross-rail traffic goes through the spines here, where a
 * real node would hop over NVLink first), more than one HCA port, a third
 * level, rail-only fabrics without spines.
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
		return hint(d, "fewer nodes or GPUs, or a bigger radix (a third level is not generated)");
	return topo_gen_check_size("rail", (int64_t)p->gpus * s.leaves + p->spines,
				   (int64_t)p->nodes * p->gpus, d);
}

static int rail_build(struct topo_gen_build *b, const struct topo_gen_params *p)
{
	int N = p->nodes, G = p->gpus, S = p->spines;
	int first_spine = b->n->nnodes, first_leaf, first_host;
	struct rail_shape s;

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
	first_host = b->n->nnodes;
	for (int n = 0; n < N; n++)
		for (int g = 0; g < G; g++)
			if (topo_gen_b_host(b, "n%dg%d", n, g) < 0)
				return -1;
	for (int n = 0; n < N; n++)
		for (int g = 0; g < G; g++)
			if (topo_gen_b_link(b, first_leaf + g * s.leaves + n / s.dmax,
					    1 + n % s.dmax, first_host + n * G + g, 1))
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
