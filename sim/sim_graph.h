/* SPDX-License-Identifier: MIT */
/*
 * sim_graph.h - depth-first search over a directed graph whose edges a
 * callback gives: the one cycle finder and post-order walk of the workload
 * code (a trace's dependencies, its lowering's order). Iterative, with an
 * explicit stack: a trace may hold millions of ops, too deep for
 * recursion.
 */
#ifndef IBFAB_SIM_GRAPH_H
#define IBFAB_SIM_GRAPH_H

#include <stddef.h>
#include <stdint.h>

/* What sim_dfs returns when it cannot allocate its stacks: callbacks stop
 * the search with other values (-1 with their diagnostic filled). */
#define SIM_DFS_ENOMEM (-1000)

/*
 * The k-th successor of u (k = 0, 1, ...) in *v: return 1 for an edge, 0
 * when u has no more, or a negative value to stop the search. A *v out of
 * range is the callback's to refuse.
 */
typedef int (*sim_dfs_next_fn)(void *ctx, uint32_t u, uint32_t k, uint32_t *v);
/* Every successor of u is finished (post-order): 0, or negative to stop. */
typedef int (*sim_dfs_post_fn)(void *ctx, uint32_t u);
/* A cycle: cyc[0] -> cyc[1] -> ... -> cyc[n-1] -> cyc[0], each an edge.
 * Whatever it returns, sim_dfs returns (non-zero: it stops there). */
typedef int (*sim_dfs_cycle_fn)(void *ctx, const uint32_t *cyc, size_t n);

/*
 * Search from vertex 0, 1, ... n-1 in turn, each vertex's successors in the
 * order `next` gives them, calling `post` (may be NULL) as each vertex is
 * finished: so a vertex is finished after everything it reaches, and among
 * vertices that do not reach each other the lower-numbered first. On the
 * first edge back to a vertex still on the stack, calls `cycle` and
 * returns what it returns. 0 when every vertex is finished.
 */
int sim_dfs(uint32_t n, sim_dfs_next_fn next, sim_dfs_post_fn post, sim_dfs_cycle_fn cycle,
	    void *ctx);

#endif
