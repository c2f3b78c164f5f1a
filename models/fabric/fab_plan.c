/* SPDX-License-Identifier: MIT */
/*
 * fab_plan.c - the traffic's posts known before the run: per HCA, in
 * (post time, message index) order, the head's time in hca.plan_at.
 *
 * An explicit message list plans every message that waits for no other:
 * a sorted array of indexes per HCA, read from the front (a constant-rate
 * run's posts are planned in index order and their times rise, so the
 * array is sorted already; else it is sorted once). A compact list plans
 * its runs instead: each HCA keeps a heap of its runs keyed by their next
 * message's (post time, index), which gives the same order, and a
 * message gets its state (fab_live.c) only when it is posted. A run whose
 * stream has its send queue full (fab_traffic.c: 32,768 outstanding) is
 * parked on the stream instead of making messages that could only wait,
 * and the stream's next completion posts its next message: what the
 * explicit list's backlog does, message by message.
 *
 * The wake-ups are asked for as the explicit list always asked: message by
 * message in index order (a run's later messages never come before its
 * first), so both forms schedule the same engine events in the same order.
 */
#define _GNU_SOURCE	/* qsort_r */
#include "models/fabric/fab_int.h"

#include "models/hca/hca_plug.h"

#include <stdlib.h>
#include <string.h>

struct fab_plan {
	/* explicit list: message indexes in (post, index) order */
	uint32_t *v;
	size_t n, cap, next;
	sim_time_t last;	/* the last planned post's time */
	bool unsorted;		/* a post planned before an earlier one */
	/* compact list: runs by their next message (time, index; comp = run):
	 * the first in `head` (head.comp = NONE: none), the others in the
	 * heap. A host with one run (a constant-rate sender) never touches
	 * the heap: its next post just replaces the head. */
	struct sim_event head;
	struct sim_heap runs;
};

#define NO_RUN UINT32_MAX

static inline bool ev_before(const struct sim_event *a, const struct sim_event *b)
{
	return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

static int plan_push(struct fab_plan *pl, const struct fab_msgs *ms, uint32_t mi)
{
	if (pl->n == pl->cap) {
		size_t cap = pl->cap ? 2 * pl->cap : 64;
		uint32_t *v = realloc(pl->v, cap * sizeof(*v));

		if (!v)
			return -1;
		pl->v = v;
		pl->cap = cap;
	}
	sim_time_t t = ms->v[mi].post;

	/* posts are planned in message order: the plan is sorted unless a
	 * time goes back (known here, where the message is in cache) */
	if (pl->n && (t < pl->last || (t == pl->last && mi < pl->v[pl->n - 1])))
		pl->unsorted = true;
	pl->last = t;
	pl->v[pl->n++] = mi;
	return 0;
}

static int plan_cmp(const void *a, const void *b, void *ctx)
{
	const struct fab_msg *v = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (v[x].post != v[y].post)
		return v[x].post < v[y].post ? -1 : 1;
	return (x > y) - (x < y);	/* planned in message order */
}

/* The next post of run r (message k of it) into its source's plan. */
static int run_push(struct fab *f, uint32_t r)
{
	const struct fab_msg_run *run = &f->msgs->runs[r];
	uint64_t k = f->run_next[r];
	struct fab_plan *pl = &f->plans[run->m.src];
	struct sim_event e = {
		.time = run->m.post + k * run->gap, .seq = run->first + k, .comp = r,
	};

	if (pl->head.comp == NO_RUN) {
		pl->head = e;
		return 0;
	}
	if (ev_before(&e, &pl->head)) {
		struct sim_event t = pl->head;

		pl->head = e;
		e = t;
	}
	return sim_heap_push(&pl->runs, &e);
}

/* Take the plan's first run out: the heap's top becomes the head. */
static struct sim_event run_pop(struct fab_plan *pl)
{
	struct sim_event e = pl->head;

	if (!sim_heap_pop(&pl->runs, &pl->head))
		pl->head.comp = NO_RUN;
	return e;
}

/* What h's plan holds next, into h->plan_at. */
static void plan_head(struct fab *f, struct hca *h)
{
	struct fab_plan *pl = &f->plans[h->n->idx];

	if (f->msgs->compact) {
		h->plan_at = pl->head.comp != NO_RUN ? pl->head.time : SIM_TIME_MAX;
	} else {
		h->plan_at = pl->next < pl->n ? f->msgs->v[pl->v[pl->next]].post : SIM_TIME_MAX;
	}
}

int fab_plan_build(struct fab *f)
{
	const struct fab_msgs *ms = f->msgs;
	uint64_t first, count;
	sim_time_t gap;

	f->plans = calloc((size_t)f->nnodes, sizeof(*f->plans));
	if (!f->plans)
		return -1;
	for (int i = 0; i < f->nnodes; i++) {
		sim_heap_init(&f->plans[i].runs);
		f->plans[i].head.comp = NO_RUN;
	}
	if (ms->compact && !(f->run_next = calloc(ms->nruns ? ms->nruns : 1, sizeof(*f->run_next))))
		return -1;
	for (size_t r = 0; r < fab_msgs_nruns(ms); r++) {
		const struct fab_msg *m = fab_msgs_run(ms, r, &first, &count, &gap);
		struct hca *h = f->nodes[m->src].hca;

		if (m->after >= 0)
			continue;
		if (ms->compact ? run_push(f, (uint32_t)r) : plan_push(&f->plans[m->src], ms, (uint32_t)r))
			return -1;
		if (hca_plan_wake(h, m->post))
			return -1;
	}
	for (int i = 0; i < f->nnodes; i++) {
		struct fab_plan *pl = &f->plans[i];

		if (!f->nodes[i].hca)
			continue;
		if (pl->unsorted)
			qsort_r(pl->v, pl->n, sizeof(*pl->v), plan_cmp, ms->v);
		plan_head(f, f->nodes[i].hca);
	}
	return 0;
}

void fab_plan_free(struct fab *f)
{
	for (int i = 0; f->plans && i < f->nnodes; i++) {
		free(f->plans[i].v);
		sim_heap_free(&f->plans[i].runs);
	}
	free(f->plans);
	free(f->run_next);
}

/*
 * The message list of a constant-rate run is far larger than the caches
 * (B1 at 1 s: 95 MB), and each message is read cold twice: its post time
 * when the HCA arms its wake for it, and all of it when it is posted. As
 * one is posted, the message two plan entries on is fetched (the next
 * one's time is read at once): that one is first read a post period later,
 * its lines in cache by then. A struct fab_msg spans two lines.
 */
static inline void plan_prefetch(const struct fab *f, const struct fab_plan *pl, size_t i)
{
	if (i < pl->n) {
		const char *m = (const char *)&f->msgs->v[pl->v[i]];

		__builtin_prefetch(m);
		__builtin_prefetch(m + sizeof(struct fab_msg) - 1);
	}
}

/* Run r's next message is due: plan the one after, then post it (its
 * state made now), plan_at already moved on as the explicit list moves it
 * (a post may arm the HCA's wake, which reads it). */
static void run_post(struct fab *f, struct hca *h, uint32_t r)
{
	const struct fab_msg_run *run = &f->msgs->runs[r];
	uint32_t id = (uint32_t)(run->first + f->run_next[r]);

	if (!fab_live_add_run(f, id, run)) {
		fab_fail(f, "out of memory for message %u in flight", id);
		return;
	}
	if (++f->run_next[r] < run->count && run_push(f, r))
		fab_fail(f, "out of memory planning posts");
	plan_head(f, h);
	fab_traffic_post_now(f, id);
}

void fab_plan_post(struct fab *f, struct hca *h)
{
	struct fab_plan *pl = &f->plans[h->n->idx];

	if (!f->msgs->compact) {
		uint32_t mi = pl->v[pl->next++];

		plan_prefetch(f, pl, pl->next + 1);
		plan_head(f, h);
		fab_traffic_post_now(f, mi);
		return;
	}
	struct sim_event e = run_pop(pl);

	if (fab_traffic_stream_full(f, f->msgs->runs[e.comp].m.stream)) {
		if (fab_traffic_park(f, e.comp))
			fab_fail(f, "out of memory parking a stream's posts");
		plan_head(f, h);
		return;
	}
	run_post(f, h, e.comp);
}

/* A slot of a stream with parked runs is free: the parked run whose next
 * message comes first posts it now (it was due when parked); the run goes
 * back to its plan when its next is not due yet, and stays parked while
 * the queue is full again. */
void fab_plan_unpark(struct fab *f, uint32_t *parked, uint32_t *nparked)
{
	const struct fab_msg_run *runs = f->msgs->runs;
	uint32_t best = 0;

	for (uint32_t i = 1; i < *nparked; i++) {
		const struct fab_msg_run *a = &runs[parked[i]], *b = &runs[parked[best]];
		sim_time_t ta = a->m.post + f->run_next[parked[i]] * a->gap;
		sim_time_t tb = b->m.post + f->run_next[parked[best]] * b->gap;

		if (ta < tb || (ta == tb && a->first + f->run_next[parked[i]] <
					    b->first + f->run_next[parked[best]]))
			best = i;
	}
	uint32_t r = parked[best];
	const struct fab_msg_run *run = &runs[r];
	struct hca *h = f->nodes[run->m.src].hca;

	parked[best] = parked[--*nparked];
	/* run_post plans the run's next message; a due one would only find
	 * the queue full again and park, so it stays parked instead */
	uint64_t k = f->run_next[r] + 1;

	if (k < run->count && run->m.post + k * run->gap <= f->eng.now) {
		uint32_t id = (uint32_t)(run->first + f->run_next[r]);

		if (!fab_live_add_run(f, id, run)) {
			fab_fail(f, "out of memory for message %u in flight", id);
			return;
		}
		f->run_next[r] = k;
		parked[(*nparked)++] = r;
		fab_traffic_post_now(f, id);
		return;
	}
	run_post(f, h, r);
	if (h->plan_at != SIM_TIME_MAX && hca_plan_wake(h, h->plan_at))
		fab_fail(f, "out of memory for HCA timers");
}
