/* SPDX-License-Identifier: MIT */
/* sim_graph.c - iterative depth-first search, post-order and the first
 * cycle; see sim_graph.h. */
#include "sim/sim_graph.h"

#include <stdlib.h>

int sim_dfs(uint32_t n, sim_dfs_next_fn next, sim_dfs_post_fn post, sim_dfs_cycle_fn cycle,
	    void *ctx)
{
	uint8_t *color = calloc(n ? n : 1, 1);	/* 0 new, 1 on the stack, 2 finished */
	uint32_t *pos = calloc(n ? n : 1, sizeof(*pos));	/* next successor to look at */
	uint32_t *stack = malloc((n ? n : 1) * sizeof(*stack));
	int rc = 0;

	if (!color || !pos || !stack) {
		rc = SIM_DFS_ENOMEM;
		goto out;
	}
	for (uint32_t root = 0; root < n && !rc; root++) {
		size_t sp = 0;

		if (color[root])
			continue;
		stack[sp++] = root;
		color[root] = 1;
		while (sp && !rc) {
			uint32_t u = stack[sp - 1], v;
			int e = next(ctx, u, pos[u]++, &v);

			if (e < 0) {
				rc = e;
			} else if (!e) {
				color[u] = 2;
				sp--;
				if (post)
					rc = post(ctx, u);
			} else if (color[v] == 1) {
				size_t from = sp;	/* v is on the stack: v .. u is the cycle */

				while (stack[from - 1] != v)
					from--;
				rc = cycle(ctx, stack + from - 1, sp - from + 1);
			} else if (!color[v]) {
				color[v] = 1;
				stack[sp++] = v;
			}
		}
	}
out:
	free(color);
	free(pos);
	free(stack);
	return rc;
}
