/* SPDX-License-Identifier: MIT */
/*
 * topo_gen_fattree.c - fat trees of radix-k switches (k-ary n-trees as
 * folded Clos networks), 2 or 3 levels, optionally oversubscribed at the
 * leaves. The top level folds: its switches use all k ports downwards, which
 * is why a radix-k tree has k^2/2 hosts with 2 levels and k^3/4 with 3
 * (Al-Fares, Loukissas, Vahdat, "A Scalable, Commodity Data Center Network
 * Architecture", SIGCOMM 2008; Leiserson, "Fat-Trees", IEEE ToC 1985;
 * Petrini, Vanneschi, "k-ary n-trees", IPPS 1997, for the unfolded form).
 *
 * Leaves: `--oversub A:B` (reduced, default 1:1) splits a leaf into
 * H = m*A host ports and U = m*B up-links, m = floor(k / (A+B)); or
 * `--hosts H` with U = H*B/A. H + U <= k.
 *
 * 2 levels (the fattree2 layout, topo_gen.c): S spines (default U, S must
 * divide U), K = U/S links from each leaf to each spine, L <= k/K leaves
 * (default k/K). Nodes spine*, leaf*, h*.
 *   hosts = L*H, switches = L + S, cables = L*H + L*U.
 * At 1:1 and defaults: k^2/2 hosts, 3k/2 switches, k^2 cables.
 *
 * 3 levels: P pods (default k), each of D leaves (--leaves, default
 * k - k/2) and U pod spines; every leaf has one up-link to each pod spine
 * of its pod; pod spine j has C = k/2 up-links, to cores j*C .. j*C+C-1;
 * core j*C+i has one link to pod spine j of every pod.
 *   hosts = P*D*H, switches = P*D + P*U + U*C,
 *   cables = P*D*H + P*D*U + P*U*C.
 * At 1:1 and defaults: k^3/4 hosts, 5k^2/4 switches, 3k^3/4 cables; the
 * k = 8 tree has 128 hosts, 80 switches, 384 cables.
 * Ports: leaf 1..H hosts, H+1+j pod spine j; pod spine 1..D its leaves,
 * D+1+i core j*C+i; core 1+p pod p. Nodes core*, spine* (pod-major), leaf*
 * (pod-major), h* (leaf-major), so LIDs go cores, spines, leaves, hosts.
 *
 * Every switch has k ports (unused ones stay unconnected). Left out:
 * oversubscription above the leaves, more than 3 levels, trees that mix
 * switch radices, and parallel cables between pod spines and cores.
 */
#include "topologies/topo.h"

#include <inttypes.h>

/* Leaf up-links, from resolved params. */
static int up_links(const struct topo_gen_params *p)
{
	return p->hosts * p->over_up / p->over_hosts;
}

static int resolve2(struct topo_gen_params *p, int u, struct sim_diag *d)
{
	int k = p->radix, K, max_leaves;

	if (p->pods != TOPO_GEN_UNSET)
		return sim_diag_set(d, NULL, 0, 0, "fattree: --pods is for --levels 3");
	if (p->spines == TOPO_GEN_UNSET)
		p->spines = u;
	if (u % p->spines)
		return sim_diag_set(d, NULL, 0, 0,
				    "fattree: --spines %d must divide the %d up-links of each leaf (the same number of links to every spine)",
				    p->spines, u);
	K = u / p->spines;
	max_leaves = k / K;
	if (p->leaves == TOPO_GEN_UNSET)
		p->leaves = max_leaves;
	if (p->leaves > max_leaves)
		return sim_diag_set(d, NULL, 0, 0,
				    "fattree: %d leaves x %d links need spines with %" PRId64 " ports, more than --radix %d (at most %d leaves)",
				    p->leaves, K, (int64_t)p->leaves * K, k, max_leaves);
	return topo_gen_check_size("fattree", (int64_t)p->leaves + p->spines,
				   (int64_t)p->leaves * p->hosts, d);
}

static int resolve3(struct topo_gen_params *p, int u, struct sim_diag *d)
{
	int k = p->radix, C = k / 2, D_max = k - k / 2;

	if (p->spines != TOPO_GEN_UNSET)
		return sim_diag_set(d, NULL, 0, 0,
				    "fattree: --spines is for --levels 2 (with 3 levels a pod has one spine per leaf up-link)");
	if (p->leaves == TOPO_GEN_UNSET)
		p->leaves = D_max;
	if (p->leaves > D_max)
		return sim_diag_set(d, NULL, 0, 0,
				    "fattree: %d leaves per pod need pod spines with %d ports (%d leaves + %d core up-links), more than --radix %d (at most %d leaves per pod)",
				    p->leaves, p->leaves + C, p->leaves, C, k, D_max);
	if (p->pods == TOPO_GEN_UNSET)
		p->pods = k;
	if (p->pods < 2)
		return sim_diag_set(d, NULL, 0, 0,
				    "fattree: one pod has no use for cores; a pod alone is --levels 2");
	if (p->pods > k)
		return sim_diag_set(d, NULL, 0, 0,
				    "fattree: %d pods need cores with %d ports (one per pod), more than --radix %d",
				    p->pods, p->pods, k);
	return topo_gen_check_size("fattree",
				   (int64_t)p->pods * p->leaves + (int64_t)p->pods * u +
				   (int64_t)u * C,
				   (int64_t)p->pods * p->leaves * p->hosts, d);
}

static int ft_resolve(struct topo_gen_params *p, struct sim_diag *d)
{
	int k = p->radix, a, b, u;
	int64_t u64;
	char detail[96];

	if (p->levels == TOPO_GEN_UNSET)
		p->levels = 2;
	if (p->levels != 2 && p->levels != 3)
		return sim_diag_set(d, NULL, 0, 0,
				    "fattree: --levels must be 2 or 3, got %d", p->levels);
	if (k == TOPO_GEN_UNSET)
		return sim_diag_set(d, NULL, 0, 0,
				    "fattree: --radix is required (ports per switch, e.g. --radix 8)");
	if (p->over_hosts == TOPO_GEN_UNSET)
		p->over_hosts = p->over_up = 1;
	a = p->over_hosts;
	b = p->over_up;
	if (p->hosts == TOPO_GEN_UNSET) {
		int m = k / (a + b);

		if (m < 1)
			return sim_diag_set(d, NULL, 0, 0,
					    "fattree: --radix %d is too small for %d:%d (a leaf needs at least %d ports)",
					    k, a, b, a + b);
		p->hosts = m * a;
	} else if (p->hosts % a) {
		return sim_diag_set(d, NULL, 0, 0,
				    "fattree: --hosts %d cannot be split %d:%d into whole up-links; pick a multiple of %d",
				    p->hosts, a, b, a);
	}
	/* 64 bits: --hosts and --oversub may each be up to 100000 here. */
	u64 = (int64_t)p->hosts * b / a;
	snprintf(detail, sizeof(detail), "%d hosts + %" PRId64 " up-links at %d:%d",
		 p->hosts, u64, a, b);
	if (topo_gen_check_ports("fattree", "a leaf", p->hosts + u64, k, detail, d))
		return -1;
	u = (int)u64;	/* now below NET_MAX_PORTS */
	return p->levels == 2 ? resolve2(p, u, d) : resolve3(p, u, d);
}

static int build3(struct topo_gen_build *b, const struct topo_gen_params *p)
{
	int k = p->radix, P = p->pods, D = p->leaves, H = p->hosts;
	int U = up_links(p), C = k / 2;
	int first_core = b->n->nnodes, first_spine, first_leaf, first_host;

	for (int c = 0; c < U * C; c++)
		if (topo_gen_b_switch(b, k, "core%d", c) < 0)
			return -1;
	first_spine = b->n->nnodes;
	for (int s = 0; s < P * U; s++)
		if (topo_gen_b_switch(b, k, "spine%d", s) < 0)
			return -1;
	first_leaf = b->n->nnodes;
	for (int l = 0; l < P * D; l++)
		if (topo_gen_b_switch(b, k, "leaf%d", l) < 0)
			return -1;
	first_host = b->n->nnodes;
	for (int h = 0; h < P * D * H; h++)
		if (topo_gen_b_host(b, "h%d", h) < 0)
			return -1;

	for (int pod = 0; pod < P; pod++) {
		for (int l = 0; l < D; l++) {
			int leaf = first_leaf + pod * D + l;

			for (int j = 0; j < H; j++)
				if (topo_gen_b_link(b, leaf, 1 + j,
						    first_host + (pod * D + l) * H + j, 1))
					return -1;
			for (int j = 0; j < U; j++)
				if (topo_gen_b_link(b, leaf, H + 1 + j,
						    first_spine + pod * U + j, 1 + l))
					return -1;
		}
		for (int j = 0; j < U; j++)
			for (int i = 0; i < C; i++)
				if (topo_gen_b_link(b, first_spine + pod * U + j,
						    D + 1 + i,
						    first_core + j * C + i, 1 + pod))
					return -1;
	}
	return 0;
}

static int ft_build(struct topo_gen_build *b, const struct topo_gen_params *p)
{
	if (p->levels == 3)
		return build3(b, p);
	return topo_gen_b_two_level(b, p->leaves, p->spines, p->hosts,
				    up_links(p) / p->spines, p->radix, p->radix);
}

static void ft_summary(const struct topo_gen_params *p, char *buf, size_t len)
{
	int u = up_links(p);

	if (p->levels == 2)
		snprintf(buf, len,
			 "fattree: 2 levels of radix %d: %d leaves x %d hosts (%d:%d), %d spines x %d link%s per leaf",
			 p->radix, p->leaves, p->hosts, p->over_hosts, p->over_up,
			 p->spines, u / p->spines, u / p->spines == 1 ? "" : "s");
	else
		snprintf(buf, len,
			 "fattree: 3 levels of radix %d: %d pods x %d leaves x %d hosts (%d:%d), %d spines per pod, %d cores",
			 p->radix, p->pods, p->leaves, p->hosts, p->over_hosts,
			 p->over_up, u, u * (p->radix / 2));
}

const struct topo_gen_family topo_gen_fattree_family = {
	.resolve = ft_resolve,
	.build = ft_build,
	.summary = ft_summary,
};
