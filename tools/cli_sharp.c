/* SPDX-License-Identifier: MIT */
/*
 * cli_sharp.c - SHARP in `ibfab run --trace` and `ibfab compare`: when a
 * collective asks for algo=collnet, or ib.sharp=on lets algo=auto
 * allreduces use it (NCCL with NCCL_COLLNET_ENABLE=1), the aggregation
 * manager (models/sm/sm_sharp.c) gives the job a tree in the InfiniBand switches
 * before the collectives are lowered (traces/coll_collnet.c, and NVLS
 * across servers: traces/coll_nvls.c). On GPU servers NCCL's tuning
 * model then chooses per allreduce among its algorithms, CollNetDirect
 * and NVLS + SHARP among them (coll_tune.c); elsewhere (hosts, where no
 * tuning model runs) every algo=auto allreduce becomes collnet. The report
 * says where the tree is and how busy its aggregation nodes were.
 */
#include "tools/cli_sharp.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "models/sm/sm_sharp.h"
#include "sim/sim_json.h"
#include "tools/cli_report.h"
#include "traces/trace_replay.h"

int cli_sharp_setup(struct cli_run *c)
{
	struct trace *t = &c->trace;
	const struct trace_op *asked = NULL;
	bool any = false;
	struct sm_sharp_tree tree;
	int32_t *ra;
	int rc;

	for (size_t i = 0; i < t->nops; i++) {
		const struct trace_op *o = &t->ops[i];

		if (o->kind != TRACE_COLL || o->coll != TRACE_ALLREDUCE)
			continue;
		if (o->algo == TRACE_ALGO_COLLNET && !asked)
			asked = o;
		any |= o->algo == TRACE_ALGO_COLLNET ||
		       ((o->algo == TRACE_ALGO_AUTO || o->algo == TRACE_ALGO_NVLS) &&
			(c->p.ib_sharp || o->collnet));
	}
	if (!any)
		return 0;
	if (fab_is_eth(&c->p)) {
		if (!asked)	/* ib.sharp on Ethernet: auto stays what it is */
			return 0;
		return sim_diag_set(&c->d, asked->file, asked->line, 0,
				    "allreduce algo=collnet is SHARP, a reduction in InfiniBand switches: this run's fabric is %s (use fabric=ib, or algo=auto)",
				    fab_fabric_names[c->p.fabric]);
	}
	ra = malloc((size_t)t->nranks * sizeof(*ra));
	if (!ra)
		return sim_diag_set(&c->d, NULL, 0, 0, "out of memory");
	rc = sm_sharp_attach(&c->net, t->rank_node, t->nranks, &tree, ra, &c->d);
	if (!rc)
		rc = trace_set_agg(t, tree.nagg, tree.node, tree.parent, ra, &c->d);
	free(ra);
	sm_sharp_tree_free(&tree);
	if (rc)
		return -1;
	t->tune.collnet = c->p.ib_sharp;	/* NCCL's CollNet on for every op */
	if (!t->tune.nchannels)
		for (size_t i = 0; i < t->nops; i++)
			if (t->ops[i].kind == TRACE_COLL && t->ops[i].coll == TRACE_ALLREDUCE &&
			    t->ops[i].algo == TRACE_ALGO_AUTO && (c->p.ib_sharp || t->ops[i].collnet))
				t->ops[i].algo = TRACE_ALGO_COLLNET;
	return 0;
}

/* What the tree did: reductions into aggregation nodes, their bytes, and
 * the most chunks one node was taking in at once. */
struct sharp_use {
	int root;		/* the root aggregation node's net node, -1 */
	int32_t levels;
	uint64_t reductions, bytes;
	uint32_t peak;		/* most reductions in progress at one node */
	int peak_node;
};

struct ev {
	sim_time_t t;
	int32_t d;	/* +1 start, -1 end */
};

static int cmp_ev(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return (x->d > y->d) - (x->d < y->d);	/* ends first */
}

/* Endpoint e is an aggregation node (not a rank, nor an NVSwitch). */
static bool is_agg(const struct trace *t, int32_t e)
{
	return e >= t->nranks && e < t->nranks + t->nagg;
}

static bool sharp_use(const struct trace_program *p, const struct trace_results *r,
		      struct sharp_use *u)
{
	const struct trace *t = p ? p->trace : NULL;
	size_t *cnt, *off;
	struct ev *v;
	struct trace_step stmp;
	struct trace_step_time ttmp;
	const uint32_t *deps;
	uint32_t buf[TRACE_STEP_MAXDEPS];

	memset(u, 0, sizeof(*u));
	u->root = u->peak_node = -1;
	if (!t || t->nagg < 1)
		return false;
	for (int32_t a = 0; a < t->nagg; a++) {
		int32_t h = 1;

		for (int32_t x = t->agg_parent[a]; x >= 0 && h <= t->nagg; x = t->agg_parent[x])
			h++;
		if (t->agg_parent[a] < 0)
			u->root = t->rank_node[t->nranks + a];
		if (h > u->levels)
			u->levels = h;
	}
	cnt = calloc((size_t)t->nagg + 1, sizeof(*cnt));
	off = calloc((size_t)t->nagg + 1, sizeof(*off));
	if (!cnt || !off)
		goto out;
	for (size_t s = 0; s < p->nsteps; s++) {
		const struct trace_step *st = trace_program_step(p, (uint32_t)s, &stmp, &deps, buf);

		if (st->kind != TS_XFER || st->data != TD_REDUCE || !is_agg(t, st->peer))
			continue;
		u->reductions++;
		u->bytes += st->bytes;
		cnt[st->peer - t->nranks]++;
	}
	if (!r || (!r->step && !r->spill))
		goto out;
	for (int32_t a = 0; a < t->nagg; a++)
		off[a + 1] = off[a] + 2 * cnt[a];
	v = malloc((off[t->nagg] ? off[t->nagg] : 1) * sizeof(*v));
	if (!v)
		goto out;
	memset(cnt, 0, ((size_t)t->nagg + 1) * sizeof(*cnt));
	for (size_t s = 0; s < p->nsteps; s++) {
		const struct trace_step *st = trace_program_step(p, (uint32_t)s, &stmp, &deps, buf);
		const struct trace_step_time *tt;
		int32_t a;

		if (st->kind != TS_XFER || st->data != TD_REDUCE || !is_agg(t, st->peer))
			continue;
		if (!(tt = trace_results_time(r, (uint32_t)s, &ttmp))) {
			free(v);
			goto out;	/* a read error: no peak, the rest stands */
		}
		a = st->peer - t->nranks;
		v[off[a] + cnt[a]++] = (struct ev){ tt->start, 1 };
		v[off[a] + cnt[a]++] = (struct ev){ tt->end, -1 };
	}
	for (int32_t a = 0; a < t->nagg; a++) {
		int32_t now = 0;

		qsort(v + off[a], cnt[a], sizeof(*v), cmp_ev);
		for (size_t k = 0; k < cnt[a]; k++) {
			now += v[off[a] + k].d;
			if (now > (int32_t)u->peak) {
				u->peak = (uint32_t)now;
				u->peak_node = t->rank_node[t->nranks + a];
			}
		}
	}
	free(v);
out:
	free(cnt);
	free(off);
	return true;
}

void cli_sharp_summary(FILE *out, const struct net *net, const struct trace_program *p,
		       const struct trace_results *r)
{
	struct sharp_use u;
	char b[32];

	if (!sharp_use(p, r, &u))
		return;
	fprintf(out, "%-15s%" PRId32 " aggregation nodes, %" PRId32 " level%s, root in %s; %" PRIu64
		" chunk reductions (%s) in the switches",
		"sharp", p->trace->nagg, u.levels, u.levels == 1 ? "" : "s",
		u.root >= 0 ? net->nodes[u.root].desc : "?", u.reductions,
		cli_fmt_bytes(u.bytes, b, sizeof(b)));
	if (u.peak_node >= 0)
		fprintf(out, ", at most %" PRIu32 " at once in %s", u.peak,
			net->nodes[u.peak_node].desc);
	if (r && r->sat_waits)
		fprintf(out, "; %" PRIu32 " allreduce%s waited %.3f us in all for a streaming tree another held (ib.sharp_sat)",
			r->sat_waits, r->sat_waits == 1 ? "" : "s", (double)r->sat_wait_ps / SIM_US);
	fputc('\n', out);
}

void cli_sharp_json(struct sim_json *j, const struct net *net, const struct trace_program *p,
		    const struct trace_results *r)
{
	struct sharp_use u;

	if (!sharp_use(p, r, &u))
		return;
	sim_json_key(j, "sharp");
	sim_json_obj_begin(j);
	sim_json_ki64(j, "aggregation_nodes", p->trace->nagg);
	sim_json_ki64(j, "levels", u.levels);
	sim_json_kstr(j, "root", u.root >= 0 ? net->nodes[u.root].desc : "");
	sim_json_ku64(j, "reductions", u.reductions);
	sim_json_ku64(j, "bytes_reduced", u.bytes);
	sim_json_ku64(j, "peak_reductions", u.peak);
	sim_json_kstr(j, "peak_node", u.peak_node >= 0 ? net->nodes[u.peak_node].desc : "");
	sim_json_ku64(j, "tree_waits", r ? r->sat_waits : 0);
	sim_json_ku64(j, "tree_wait_ps", r ? r->sat_wait_ps : 0);
	sim_json_obj_end(j);
}
