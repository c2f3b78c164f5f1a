/* SPDX-License-Identifier: MIT */
/*
 * topo_gen_dragonfly.c - dragonflies (Kim, Dally, Scott, Abts,
 * "Technology-Driven, Highly-Scalable Dragonfly Topology", ISCA 2008): G
 * groups of A routers, the routers of a group cabled all-to-all (local
 * links), each router with h global links to other groups and p hosts.
 * Kim et al. balance it with A = 2p = 2h and at most G = A*h + 1 groups;
 * by default p = h = max(1, A/2) here, and any G from 2 to A*h + 1 works.
 *
 * Global links: the "absolute" arrangement (also called consecutive;
 * Camarero, Vallejo, Beivide, ACM TACO 2014; Hastings et al., "Comparing
 * Global Link Arrangements for Dragonfly Networks", IEEE Cluster 2015).
 * A group's A*h global ports are numbered j = r*h + k (router r, its k-th
 * global port). Port j goes to the other group numbered o = j mod (G-1)
 * among the G-1 others in increasing order (group i's others are 0..i-1,
 * i+1..G-1), as that pair's (j div (G-1))-th cable. So every two groups
 * get M = floor(A*h / (G-1)) cables and the A*h - M*(G-1) ports left over
 * in each group stay unconnected (none with G = A*h + 1: one cable per pair,
 * the classic maximal dragonfly).
 *
 *   switches = G*A, hosts = G*A*p,
 *   cables = G*A*p + G*A*(A-1)/2 + M*G*(G-1)/2.
 * Any two routers are at most local + global + local apart (M >= 1).
 *
 * Router r of group g is g<g>r<r>; hosts h0.. follow their routers
 * (router-major). Router ports: 1..p hosts; p+1+o the o-th other router of
 * the group (in increasing order, skipping itself); p+A+k its k-th global
 * port. Routers have p + (A-1) + h ports, or --radix. Left out: the
 * relative and circulant arrangements, groups built from several switches
 * (e.g. a 2D flattened butterfly per group), different local and global
 * rates.
 */
#include "topologies/topo.h"

#include <inttypes.h>

static int df_resolve(struct topo_gen_params *p, struct sim_diag *d)
{
	int64_t per_group, pairs;
	char detail[128];

	if (p->groups == TOPO_GEN_UNSET || p->routers == TOPO_GEN_UNSET)
		return sim_diag_set(d, NULL, 0, 0,
				    "dragonfly: --groups and --routers are required (e.g. --groups 4 --routers 4 --hosts 2 --global 3)");
	if (p->groups < 2)
		return sim_diag_set(d, NULL, 0, 0,
				    "dragonfly: --groups must be at least 2 (one group has no global links), got %d",
				    p->groups);
	if (p->global == TOPO_GEN_UNSET)
		p->global = p->routers / 2 > 1 ? p->routers / 2 : 1;
	if (p->hosts == TOPO_GEN_UNSET)
		p->hosts = p->routers / 2 > 1 ? p->routers / 2 : 1;
	per_group = (int64_t)p->routers * p->global;
	pairs = p->groups - 1;
	if (per_group < pairs)
		return sim_diag_set(d, NULL, 0, 0,
				    "dragonfly: %d groups need at least %" PRId64 " global ports per group to reach every other group, %d routers x %d global links give %" PRId64 " (raise --global or --routers, or use at most %" PRId64 " groups)",
				    p->groups, pairs, p->routers, p->global,
				    per_group, per_group + 1);
	snprintf(detail, sizeof(detail), "%d hosts + %d local + %d global",
		 p->hosts, p->routers - 1, p->global);
	if (topo_gen_check_ports("dragonfly", "a router",
				 (int64_t)p->hosts + p->routers - 1 + p->global,
				 p->radix, detail, d))
		return -1;
	return topo_gen_check_size("dragonfly", (int64_t)p->groups * p->routers,
				   (int64_t)p->groups * p->routers * p->hosts, d);
}

static int df_build(struct topo_gen_build *b, const struct topo_gen_params *p)
{
	int G = p->groups, A = p->routers, P = p->hosts, h = p->global;
	int M = A * h / (G - 1), first = b->n->nnodes, first_host;
	int nports = topo_gen_nports(p->radix, P + A - 1 + h);

	for (int g = 0; g < G; g++)
		for (int r = 0; r < A; r++)
			if (topo_gen_b_switch(b, nports, "g%dr%d", g, r) < 0)
				return -1;
	first_host = b->n->nnodes;
	for (int x = 0; x < G * A * P; x++)
		if (topo_gen_b_host(b, "h%d", x) < 0)
			return -1;
	for (int g = 0; g < G; g++) {
		for (int r = 0; r < A; r++) {
			int me = first + g * A + r;

			for (int j = 0; j < P; j++)
				if (topo_gen_b_link(b, me, 1 + j,
						    first_host + (g * A + r) * P + j, 1))
					return -1;
			/* local: r < q; at r, q is other number q-1; at q, r is r */
			for (int q = r + 1; q < A; q++)
				if (topo_gen_b_link(b, me, P + q, first + g * A + q,
						    P + 1 + r))
					return -1;
		}
	}
	for (int i = 0; i < G; i++) {
		for (int t = i + 1; t < G; t++) {
			for (int m = 0; m < M; m++) {
				/* at i, t is other number t-1; at t, i is i */
				int ji = m * (G - 1) + t - 1, jt = m * (G - 1) + i;

				if (topo_gen_b_link(b, first + i * A + ji / h,
						    P + A + ji % h,
						    first + t * A + jt / h,
						    P + A + jt % h))
					return -1;
			}
		}
	}
	return 0;
}

static void df_summary(const struct topo_gen_params *p, char *buf, size_t len)
{
	snprintf(buf, len,
		 "dragonfly: %d groups x %d routers x %d hosts, %d global links per router, %d cables between every two groups (absolute arrangement)",
		 p->groups, p->routers, p->hosts, p->global,
		 p->routers * p->global / (p->groups - 1));
}

const struct topo_gen_family topo_gen_dragonfly_family = {
	.resolve = df_resolve,
	.build = df_build,
	.summary = df_summary,
};
