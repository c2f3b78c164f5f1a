/* SPDX-License-Identifier: MIT */
/*
 * topo_gen_torus.c - tori and meshes in 1 to 3 dimensions (`--dims 8`,
 * `4x4`, `4x4x2`): one switch per coordinate, `--hosts H` hosts on each,
 * and a cable to the next switch along every dimension; a torus also closes
 * every ring with a wraparound cable (Dally, Towles, "Principles and
 * Practices of Interconnection Networks", ch. 5). Dimension-order routing
 * (dor) is the natural routing on both; min-hop on a torus with one VL has
 * credit loops, which the deadlock labs rely on.
 *
 * With sizes n_0 .. n_{d-1} (each >= 2) and N = n_0 * ... * n_{d-1}:
 *   switches = N, hosts = N*H,
 *   torus cables = N*H + d*N,
 *   mesh cables  = N*H + sum_i (N / n_i) * (n_i - 1).
 * A torus dimension of size 2 gets two cables between the pair (the
 * wraparound is a second cable, as a 2-node ring has), so every torus
 * switch has the same degree H + 2d and the formula holds for every size.
 *
 * Switch (x, y, z) is sw_x_y_z (sw_x_y in 2D, sw_x in 1D), listed with x
 * varying fastest: index x + n_0*(y + n_1*z). Hosts h0.. follow their
 * switches: switch s has hosts h(s*H) .. h(s*H+H-1) on ports 1..H. Port
 * H+1+2i goes to the next switch along dimension i (+1), port H+2+2i to the
 * previous one (-1); on a mesh's faces those ports stay unconnected, so
 * every switch has the same port numbering. Switches have H + 2d ports, or
 * --radix. Left out: twisted tori, express links, per-dimension rates.
 */
#include "topologies/topo.h"

#include <inttypes.h>

static const char *name_of(const struct topo_gen_params *p)
{
	return p->kind == TOPO_GEN_TORUS ? "torus" : "mesh";
}

static int torus_resolve(struct topo_gen_params *p, struct sim_diag *d)
{
	const char *kind = name_of(p);
	int64_t n = 1;
	char detail[96];

	if (!p->ndims)
		return sim_diag_set(d, NULL, 0, 0,
				    "%s: --dims is required (e.g. --dims 4x4 or --dims 4x4x2)",
				    kind);
	for (int i = 0; i < p->ndims; i++) {
		if (p->dims[i] < 2)
			return sim_diag_set(d, NULL, 0, 0,
					    "%s: dimension %d has size %d; every size must be at least 2 (leave the dimension out instead)",
					    kind, i + 1, p->dims[i]);
		n *= p->dims[i];
		/* Stop early: 100000^3 would still fit, but say it plainly. */
		if (n > NET_ADDR_MAX)
			return sim_diag_set(d, NULL, 0, 0,
					    "%s: more than the %d nodes a fabric may have",
					    kind, NET_ADDR_MAX);
	}
	if (p->hosts == TOPO_GEN_UNSET)
		p->hosts = 1;
	snprintf(detail, sizeof(detail), "%d hosts + %d neighbours", p->hosts,
		 2 * p->ndims);
	if (topo_gen_check_ports(kind, "a switch",
				 (int64_t)p->hosts + 2 * p->ndims, p->radix,
				 detail, d))
		return -1;
	return topo_gen_check_size(kind, n, n * p->hosts, d);
}

static int torus_build(struct topo_gen_build *b, const struct topo_gen_params *p)
{
	int nd = p->ndims, H = p->hosts, N = 1, first_sw = b->n->nnodes;
	int first_host, stride[TOPO_GEN_MAX_DIMS];
	bool wrap = p->kind == TOPO_GEN_TORUS;

	for (int i = 0; i < nd; i++) {
		stride[i] = N;
		N *= p->dims[i];
	}
	for (int s = 0; s < N; s++) {
		char desc[48] = "sw";
		size_t k = 2;

		for (int i = 0; i < nd; i++)
			k += (size_t)snprintf(desc + k, sizeof(desc) - k, "_%d",
					      s / stride[i] % p->dims[i]);
		if (topo_gen_b_switch(b, topo_gen_nports(p->radix, H + 2 * nd),
				      "%s", desc) < 0)
			return -1;
	}
	first_host = b->n->nnodes;
	for (int h = 0; h < N * H; h++)
		if (topo_gen_b_host(b, "h%d", h) < 0)
			return -1;
	for (int s = 0; s < N; s++) {
		for (int j = 0; j < H; j++)
			if (topo_gen_b_link(b, first_sw + s, 1 + j,
					    first_host + s * H + j, 1))
				return -1;
		for (int i = 0; i < nd; i++) {
			int c = s / stride[i] % p->dims[i], next;

			if (c + 1 < p->dims[i])
				next = s + stride[i];
			else if (wrap)
				next = s - c * stride[i];
			else
				continue;
			/* my +i port to the neighbour's -i port */
			if (topo_gen_b_link(b, first_sw + s, H + 1 + 2 * i,
					    first_sw + next, H + 2 + 2 * i))
				return -1;
		}
	}
	return 0;
}

static void torus_summary(const struct topo_gen_params *p, char *buf, size_t len)
{
	size_t k = (size_t)snprintf(buf, len, "%s: ", name_of(p));

	for (int i = 0; i < p->ndims && k < len; i++)
		k += snprintf(buf + k, len - k, "%s%d", i ? " x " : "", p->dims[i]);
	if (k < len)
		snprintf(buf + k, len - k, " switches, %d host%s each%s", p->hosts,
			 p->hosts == 1 ? "" : "s",
			 p->kind == TOPO_GEN_TORUS ? ", wraparound" : "");
}

const struct topo_gen_family topo_gen_torus_family = {
	.resolve = torus_resolve,
	.build = torus_build,
	.summary = torus_summary,
};
