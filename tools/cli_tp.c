/* SPDX-License-Identifier: MIT */
/*
 * cli_tp.c - the throughput sampler of `ibfab compare`'s chart, in one
 * list or cut into partitions (cli_tp.h says what it samples and how a cut
 * run gives one list's curve).
 */
#include "tools/cli_tp.h"

#include <stdlib.h>
#include <string.h>

#include "sim/sim_par.h"
#include "tools/cli_run.h"

/* After every event of its time scheduled at the same time: a key no
 * component's event carries (sim.h, sim_schedule_key), the same whatever
 * the ids the sampler and a trace replay got in this run. */
#define TICK_KEY UINT64_MAX

struct cli_tp {
	struct fab *fab;
	struct sim_engine *eng;
	uint32_t comp;
	int *ports;			/* port ends whose peer is a CA */
	int nports;
	bool ports_cut;			/* only this partition's (from the first tick) */
	/* the ticks: the chart's count (vn: CLI_TP_MAX rule), the distance and
	 * time of the next */
	size_t vn;
	sim_time_t dt, next;
	/* every tick: its time and this partition's bytes */
	sim_time_t *rt;
	uint64_t *rv;
	size_t rn, rcap;
	uint64_t ev_last;		/* events one list has too (sim_aside) by the last tick */
	size_t act;			/* the first tick after this list's last such event */
	uint64_t ticks;
};

/* The tick after one at t, the chart then holding *vn samples. */
static sim_time_t tick_after(sim_time_t t, size_t *vn, sim_time_t *dt)
{
	if (*vn == CLI_TP_MAX) {	/* every other sample goes: dt doubles */
		*vn = CLI_TP_MAX / 2;
		*dt *= 2;
	}
	(*vn)++;
	return *dt > SIM_TIME_MAX - t ? SIM_TIME_MAX : t + *dt;
}

static uint64_t local_bytes(const struct cli_tp *s)
{
	uint64_t b = 0;

	for (int i = 0; i < s->nports; i++)
		b += fab_port_xmit_bytes(s->fab, s->ports[i]);
	return b;
}

static int raw_push(struct cli_tp *s, sim_time_t t, uint64_t v)
{
	if (s->rn == s->rcap) {
		size_t cap = s->rcap ? 2 * s->rcap : 1024;
		sim_time_t *nt = realloc(s->rt, cap * sizeof(*nt));

		if (!nt)
			return -1;
		s->rt = nt;
		uint64_t *nv = realloc(s->rv, cap * sizeof(*nv));

		if (!nv)
			return -1;
		s->rv = nv;
		s->rcap = cap;
	}
	s->rt[s->rn] = t;
	s->rv[s->rn++] = v;
	return 0;
}

static void tick(struct sim_engine *eng, void *ctx, uint32_t arg)
{
	struct cli_tp *s = ctx;
	uint64_t main;

	(void)arg;
	sim_aside(eng);		/* an observer's: the run's clock leaves it out */
	main = eng->events - eng->aside_n;
	eng->background--;
	s->ticks++;
	if (!s->ports_cut) {	/* the cut is made after the start */
		int n = 0;

		for (int i = 0; i < s->nports; i++)
			if (fab_port_local(s->fab, s->ports[i]))
				s->ports[n++] = s->ports[i];
		s->nports = n;
		s->ports_cut = true;
	}
	if (main != s->ev_last)	/* one list's events ran since the last tick */
		s->act = s->rn;
	s->ev_last = main;
	if (raw_push(s, eng->now, local_bytes(s))) {
		fab_driver_fail(s->fab, "out of memory for the chart's samples");
		return;
	}
	s->next = tick_after(eng->now, &s->vn, &s->dt);
	/* one list: only while something else can happen, so the run ends;
	 * cut, the ticks do not keep it going (eng->background) */
	if (s->next == SIM_TIME_MAX || (!eng->par && sim_pending(eng) <= eng->background))
		return;
	if (sim_schedule_key(eng, s->next, s->comp, 0, eng->now, TICK_KEY))
		fab_driver_fail(s->fab, "out of memory for the chart's sampler");
	else
		eng->background++;
}

int cli_tp_init(struct cli_tp_set *ts, uint32_t n)
{
	memset(ts, 0, sizeof(*ts));
	ts->s = calloc(n ? n : 1, sizeof(*ts->s));
	if (!ts->s)
		return -1;
	ts->n = n ? n : 1;
	return 0;
}

int cli_tp_start(struct cli_tp_set *ts, uint32_t k, struct fab *f, const struct net *net,
		 bool every, struct sim_diag *d)
{
	struct cli_tp *s = &ts->s[k];
	struct sim_engine *eng = fab_engine(f);
	int np = fab_nports(f), c;

	s->fab = f;
	s->eng = eng;
	s->dt = CLI_TP_DT0;
	s->ports = calloc((size_t)np + 1, sizeof(*s->ports));
	if (!s->ports)
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	for (int i = 0; i < np; i++) {
		int peer = fab_port(f, i)->peer_node;

		if (peer >= 0 && peer < net->nnodes && net->nodes[peer].type == NET_CA)
			s->ports[s->nports++] = i;
	}
	c = sim_register(eng, tick, s, "compare-sampler");
	if (c < 0)
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	if (every && fab_every(f, (uint32_t)c))
		return sim_diag_set(d, NULL, 0, 0, "too many components in every partition");
	s->comp = (uint32_t)c;
	s->ev_last = eng->events - eng->aside_n;
	if (sim_schedule_key(eng, 0, s->comp, 0, 0, TICK_KEY))
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	eng->background++;
	return 0;
}

/* ---- the curve ------------------------------------------------------- */

static int chart_alloc(struct cli_tp_set *ts)
{
	ts->t = calloc(CLI_TP_MAX + 1, sizeof(*ts->t));
	ts->bytes = calloc(CLI_TP_MAX + 1, sizeof(*ts->bytes));
	ts->nt = 0;
	return ts->t && ts->bytes ? 0 : -1;
}

/* A sample at t, unless the curve is there already; at CLI_TP_MAX, every
 * other one goes (t is then a multiple of the doubled dt). */
static void chart_add(struct cli_tp_set *ts, sim_time_t t, uint64_t b)
{
	if (ts->nt && ts->t[ts->nt - 1] >= t)
		return;
	if (ts->nt == CLI_TP_MAX) {
		for (size_t k = 0; k < CLI_TP_MAX / 2; k++) {
			ts->t[k] = ts->t[2 * k];
			ts->bytes[k] = ts->bytes[2 * k];
		}
		ts->nt = CLI_TP_MAX / 2;
	}
	ts->t[ts->nt] = t;
	ts->bytes[ts->nt++] = b;
}

/* Figures the partitions add (sum) or take the largest of (max). */
enum { S_FG, S_ASIDE_SENT, S_ASIDE_RUN, S_FINAL, S_TICKS, NSUM };
enum { M_ACT, M_NOT_STOP, M_RN, M_NOT_RN, M_NOW, M_OOM, NMAX };

int cli_tp_par_end(struct cli_tp_set *ts, const struct cli_par_ops *ops, struct sim_diag *d)
{
	/* Windows run every partition to the same tick; null messages
	 * (threads) each to its own end, after which its counts stay: the
	 * ticks it did not reach hold them. The longest list of ticks is s0. */
	const struct cli_tp *s0 = &ts->s[0];

	for (uint32_t k = 1; k < ts->n; k++)
		if (ts->s[k].rn > s0->rn)
			s0 = &ts->s[k];

	uint64_t sum[NSUM] = { 0 }, mx[NMAX] = { 0 };
	size_t rn = s0->rn;
	uint64_t *v = calloc(rn ? rn : 1, sizeof(*v));
	int rc = -1;

	mx[M_OOM] = !v;
	for (uint32_t k = 0; k < ts->n; k++) {
		const struct cli_tp *s = &ts->s[k];
		const struct sim_engine *eng = s->eng;
		const struct sim_par_part *pp = &eng->par->part[eng->part];
		/* one list's events ran since its last tick: the next tick is
		 * the first after them */
		uint64_t main = pp->events - eng->aside_n;
		uint64_t act = main != s->ev_last ? s->rn : s->act;

		/* pending, the observer's ticks aside; the events one list has
		 * not (sent, not yet run) are taken off the total below */
		sum[S_FG] += sim_pending(eng) - eng->background;
		sum[S_ASIDE_SENT] += fab_aside_sent(s->fab);
		sum[S_ASIDE_RUN] += eng->aside_n - s->ticks;
		sum[S_FINAL] += local_bytes(s);
		sum[S_TICKS] += s->ticks;
		if (act > mx[M_ACT])
			mx[M_ACT] = act;
		if (~eng->stop_req > mx[M_NOT_STOP])
			mx[M_NOT_STOP] = ~eng->stop_req;
		if (s->rn > mx[M_RN])
			mx[M_RN] = s->rn;
		if (~(uint64_t)s->rn > mx[M_NOT_RN])
			mx[M_NOT_RN] = ~(uint64_t)s->rn;
		if (pp->main_now > mx[M_NOW])
			mx[M_NOW] = pp->main_now;
		const uint64_t last = local_bytes(s);

		for (size_t i = 0; v && i < rn; i++)
			v[i] += i < s->rn ? s->rv[i] : last;
	}
	if (ops && ops->allreduce &&
	    (ops->allreduce(sum, NSUM, false) || ops->allreduce(mx, NMAX, true))) {
		free(v);
		return sim_diag_set(d, NULL, 0, 0, "the chart's samples could not be gathered");
	}
	if (mx[M_OOM]) {
		free(v);
		return sim_diag_set(d, NULL, 0, 0, "out of memory for the chart's samples");
	}
	/* processes add their samples in one vector: the same length each
	 * (windows: the same ticks in every partition) */
	if (mx[M_RN] != rn || (ops && ops->allreduce && ~mx[M_NOT_RN] != rn)) {
		free(v);
		return sim_diag_set(d, NULL, 0, 0, "the partitions' samplers took %llu to %llu ticks",
				    (unsigned long long)~mx[M_NOT_RN], (unsigned long long)mx[M_RN]);
	}
	if (ops && ops->allreduce && rn && ops->allreduce(v, rn, false)) {
		free(v);
		return sim_diag_set(d, NULL, 0, 0, "the chart's samples could not be gathered");
	}

	/* The ticks one list takes: to the first after the last event when
	 * nothing is left (it then stops rescheduling), else every one before
	 * the stop; those past what ran here hold the final counts. */
	bool drained = sum[S_FG] == sum[S_ASIDE_SENT] - sum[S_ASIDE_RUN];
	sim_time_t stop = ~mx[M_NOT_STOP];
	size_t act = mx[M_ACT], want = drained ? act + 1 : stop == SIM_TIME_MAX ? rn : SIZE_MAX;
	size_t vn = s0->vn, L = 0;
	sim_time_t dt = s0->dt, t = s0->next, last = 0;

	if (chart_alloc(ts)) {
		sim_diag_set(d, NULL, 0, 0, "out of memory for the chart");
		goto out;
	}
	for (; L < want && L < rn; L++) {
		last = s0->rt[L];
		chart_add(ts, last, v[L]);
	}
	for (; L < want && rn && t < stop && t != SIM_TIME_MAX; L++) {
		last = t;
		chart_add(ts, t, sum[S_FINAL]);
		t = tick_after(t, &vn, &dt);
	}
	/* its clock: that tick, or the last event after the last tick */
	sim_time_t now = drained && L == act + 1 ? last : last > mx[M_NOW] ? last : mx[M_NOW];

	for (uint32_t k = 0; k < ts->n; k++)
		ts->s[k].eng->now = now;
	ts->final = sum[S_FINAL];
	ts->have_final = true;
	ts->ticks = sum[S_TICKS];
	rc = 0;
out:
	free(v);
	return rc;
}

int cli_tp_finish(struct cli_tp_set *ts, struct fab *f)
{
	if (!ts->have_final) {	/* one list: its ticks are the curve */
		const struct cli_tp *s0 = &ts->s[0];

		if (chart_alloc(ts))
			return -1;
		for (size_t i = 0; i < s0->rn; i++)
			chart_add(ts, s0->rt[i], s0->rv[i]);
		ts->final = local_bytes(s0);
		ts->ticks = s0->ticks;
	}
	/* closed where the run ended */
	chart_add(ts, fab_engine(f)->now, ts->final);
	return 0;
}

void cli_tp_free(struct cli_tp_set *ts)
{
	for (uint32_t k = 0; ts->s && k < ts->n; k++) {
		free(ts->s[k].ports);
		free(ts->s[k].rt);
		free(ts->s[k].rv);
	}
	free(ts->s);
	free(ts->t);
	free(ts->bytes);
	memset(ts, 0, sizeof(*ts));
}
