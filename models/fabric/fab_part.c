/* SPDX-License-Identifier: MIT */
/*
 * fab_part.c - a partitioned run's results and its stop (sim/sim_par.h).
 *
 * Every process of a run over MPI builds the same fabric and runs only
 * its partition's nodes (fab_cut.c): after the run each holds the results
 * of its own nodes (their ports' counters, the HCAs' host, QP and
 * switches' load-balancing counters), the records of the messages its
 * nodes sent (a record belongs to its source: fab.c), and its share of the
 * fabric's totals; the rest of its copy is as set-up left it. So the
 * process that writes the outputs takes every other process's own words
 * (fab_part_pack of partition k, fab_part_unpack of the same in the same
 * order: every process knows the cut), and the totals as their value
 * before the run plus every process's change (fab_part_totals). The two
 * maxima (the last delivery, the last finish) are merged apart.
 *
 * The stop: a message is finished in its source's partition, so no
 * partition sees the last one finish; at each window's end the hook
 * (sim_par_set_hook) sums the partitions' finished messages and takes the
 * latest finish, and every partition stops a look-ahead after it, as one
 * run does (msg_check_finished).
 *
 * Left out (refused before a partitioned run): a compact message list
 * (the run keeps every record), faults, samplers, captures and the trace
 * replay.
 */
#include "models/fabric/fab_int.h"

#include "models/eth/eth_ops.h"
#include "models/hca/hca_plug.h"
#include "models/switch/sw.h"
#include "models/switch/sw_lb.h"
#include "models/tcp/tcp.h"

#include <string.h>

/*
 * The ranges of partition k's result words, in one order in every process
 * (k = FAB_PART_ALL: every node's): its nodes' ports (the VLs a run uses:
 * the data VLs, at least the 8 Ethernet priorities, and VL15), HCAs and
 * switches, and the records of the messages they send.
 */
typedef void (*range_fn)(void *ctx, void *p, size_t bytes);

static bool vl_used(const struct fab *f, int v)
{
	return v < 8 || v < f->p.vls || v == PORT_NVL - 1;
}

static void walk(struct fab *f, const uint16_t *node_part, uint32_t k, range_fn fn, void *ctx)
{
	_Static_assert(sizeof(struct fab_vl_stats) % 8 == 0 && sizeof(struct host_stats) % 8 == 0 &&
		       sizeof(struct hca_qp_stats) % 8 == 0 && sizeof(struct fab_msg) % 8 == 0 &&
		       sizeof(struct port_vl) % 8 == 0, "whole words");
	for (int pi = 0; pi < f->nports; pi++) {
		struct port *pt = f->ports[pi];

		if (k != FAB_PART_ALL && node_part[pt->node->idx] != k)
			continue;
		fn(ctx, &pt->busy_ps, sizeof(pt->busy_ps));
		for (int v = 0; v < PORT_NVL; v++)
			if (vl_used(f, v)) {
				fn(ctx, &pt->vl[v], sizeof(pt->vl[v]));
				fn(ctx, &pt->info.vl[v], sizeof(pt->info.vl[v]));
			}
	}
	for (int i = 0; i < f->nnodes; i++) {
		struct fab_node *n = &f->nodes[i];
		struct hca *h = n->hca;
		uint64_t *lb = n->type != NET_SWITCH ? NULL : n->eth ? eth_sw_lb_words(n) : sw_lb_words(n);

		if (k != FAB_PART_ALL && node_part[i] != k)
			continue;
		if (lb)
			fn(ctx, lb, SW_LB_WORDS * sizeof(*lb));
		if (!h)
			continue;
		fn(ctx, &h->host.st, sizeof(h->host.st));
		for (uint32_t q = 0; q < h->nqps; q++)
			if (h->qps[q]) {
				hca_qp_stats(h->qps[q]);	/* brought up to date */
				fn(ctx, &h->qps[q]->st, sizeof(h->qps[q]->st));
			}
		fn(ctx, &h->gone, sizeof(h->gone));
		if (f->rc_transport)	/* the kernel's stack carries the QPs */
			tcp_result_ranges(h, fn, ctx);
	}
	for (size_t i = 0; !f->live && i < f->msgs->n; i++)
		if (k == FAB_PART_ALL || node_part[f->msgs->v[i].src] == k)
			fn(ctx, &f->msgs->v[i], sizeof(f->msgs->v[i]));
}

static void count(void *ctx, void *p, size_t bytes)
{
	(void)p;
	*(size_t *)ctx += bytes / 8;
}

size_t fab_part_words(struct fab *f, const uint16_t *node_part, uint32_t k)
{
	size_t n = 0;

	walk(f, node_part, k, count, &n);
	return n;
}

struct cursor {
	uint64_t *w;
	bool in;	/* unpack: words into the fabric */
};

static void copy(void *ctx, void *p, size_t bytes)
{
	struct cursor *c = ctx;

	if (c->in)
		memcpy(p, c->w, bytes);
	else
		memcpy(c->w, p, bytes);
	c->w += bytes / 8;
}

void fab_part_pack(struct fab *f, const uint16_t *node_part, uint32_t k, uint64_t *w)
{
	struct cursor c = { w, false };

	walk(f, node_part, k, copy, &c);
}

void fab_part_unpack(struct fab *f, const uint16_t *node_part, uint32_t k, const uint64_t *w)
{
	struct cursor c = { (uint64_t *)w, true };

	walk(f, node_part, k, copy, &c);
}

void fab_part_totals(const struct fab *f, uint64_t w[FAB_PART_TOTALS])
{
	memcpy(w, &f->tot, sizeof(f->tot));
}

void fab_part_set_totals(struct fab *f, const uint64_t w[FAB_PART_TOTALS])
{
	memcpy(&f->tot, w, sizeof(f->tot));
}

void fab_part_max(const struct fab *f, uint64_t v[FAB_PART_MAX])
{
	v[0] = f->last_done;
	v[1] = f->finish_max;
}

void fab_part_set_max(struct fab *f, const uint64_t v[FAB_PART_MAX])
{
	f->last_done = v[0];
	f->finish_max = v[1];
}

void fab_part_values(void *ctx, uint32_t k, uint64_t sum[SIM_PAR_SUMS], uint64_t *max)
{
	const struct fab *f = ctx;

	(void)k;
	memset(sum, 0, SIM_PAR_SUMS * sizeof(*sum));
	sum[0] = f->tot.msgs_finished;
	*max = f->finish_max;
}

sim_time_t fab_part_stop(void *ctx, const uint64_t sum[SIM_PAR_SUMS], uint64_t max)
{
	const struct fab *f = ctx;

	if (!f->tot.msgs_total || sum[0] < f->tot.msgs_total || f->held)
		return SIM_TIME_MAX;
	return max > SIM_TIME_MAX - f->lookahead ? SIM_TIME_MAX : max + f->lookahead;
}
