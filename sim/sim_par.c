/* SPDX-License-Identifier: MIT */
/*
 * sim_par.c - partitions of one engine run by threads in windows (sim_par.h).
 *
 * One window, seen from partition k (every partition runs the same loop):
 *
 *   publish the time of its earliest event and of its stop, if any;
 *   barrier;
 *   m = the earliest of all, S = the earliest stop: nothing left before
 *   S, and the run is over; else run every event before min(m + L, S),
 *   messages for other partitions going into boxes (one per pair, written
 *   only by the sender);
 *   barrier;
 *   take the boxes addressed to k into its list, and empty them.
 *
 * A box is emptied by its receiver after the second barrier and filled by
 * its sender only after the next first barrier, so two barriers a window
 * are all the locking. Every partition computes m and S from the same
 * published values, so all agree on the window without a leader. Messages
 * carry their engine keys, so the order they are taken in does not matter.
 * The window's pieces (sim_par_publish, sim_par_end, sim_par_window,
 * sim_par_take) are also the MPI processes' (sim_par_mpi.c). Threads may
 * run without windows instead, by null messages (par_loop_async,
 * sim_par_set_async): the boxes are then locked.
 */
#define _GNU_SOURCE
#include "sim/sim_par.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A component's name: its own, with its index in its range. */
static const char *comp_name(const struct sim_engine *eng, uint32_t comp, char *buf, size_t len)
{
	if (comp & SIM_COMP_RANGE) {
		const char *n = eng->ranges[(comp >> 24) & 0x3f].name;

		snprintf(buf, len, "%s %u", n ? n : "?", comp & 0xffffff);
	} else {
		snprintf(buf, len, "%s",
			 comp < eng->ncomps && eng->comps[comp].name ? eng->comps[comp].name : "?");
	}
	return buf;
}

static void par_fail(struct sim_par *p, const char *why)
{
	pthread_mutex_lock(&p->err_lock);
	if (!p->err) {
		p->err = -1;
		snprintf(p->why, sizeof(p->why), "%s", why);
	}
	pthread_mutex_unlock(&p->err_lock);
}

int sim_par_send(struct sim_engine *eng, const struct sim_event *e)
{
	return sim_par_send_copy(eng, e, NULL, 0);
}

static int send_to(struct sim_engine *eng, uint32_t to, const struct sim_event *e,
		   const void *data, uint32_t len);
static int box_put(struct sim_engine *eng, struct sim_par *p, struct sim_par_box *b,
		   const struct sim_event *e, const void *data, uint32_t len);

int sim_par_send_copy(struct sim_engine *eng, const struct sim_event *e, const void *data,
		      uint32_t len)
{
	uint32_t to = sim_owner(eng, e->comp);

	if (to == SIM_PAR_EVERY)	/* this partition's replica */
		return sim_insert(eng, e);
	return send_to(eng, to, e, data, len);
}

int sim_par_send_to(struct sim_engine *eng, uint32_t to, const struct sim_event *e)
{
	return send_to(eng, to, e, NULL, 0);
}

static int send_to(struct sim_engine *eng, uint32_t to, const struct sim_event *e,
		   const void *data, uint32_t len)
{
	struct sim_par *p = eng->par;
	size_t bi = (size_t)eng->part * p->n + to;
	struct sim_par_box *b = &p->box[bi];
	int rc;

	if (p->async) {	/* the receiver takes while the sender runs */
		pthread_mutex_lock(&p->box_lock[bi]);
		rc = box_put(eng, p, b, e, data, len);
		if (!rc)
			__atomic_add_fetch(&p->active, 1, __ATOMIC_SEQ_CST);
		pthread_mutex_unlock(&p->box_lock[bi]);
		return rc;
	}
	return box_put(eng, p, b, e, data, len);
}

static int box_put(struct sim_engine *eng, struct sim_par *p, struct sim_par_box *b,
		   const struct sim_event *e, const void *data, uint32_t len)
{
	if (e->time - eng->now < p->lookahead) {
		char why[256], a[64], b2[64];

		snprintf(why, sizeof(why),
			 "%s scheduled %s, in another partition, %llu ps ahead: under the look-ahead of "
			 "%llu ps",
			 eng->src ? comp_name(eng, eng->src - 1, a, sizeof(a)) : "the driver",
			 comp_name(eng, e->comp, b2, sizeof(b2)), (unsigned long long)(e->time - eng->now),
			 (unsigned long long)p->lookahead);
		par_fail(p, why);
		p->part[eng->part].failed = true;
		eng->stop = true;	/* this window ends here */
		return -1;
	}
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 256;
		struct sim_event *v = realloc(b->ev, cap * sizeof(*v));
		struct sim_par_copy *c = v ? realloc(b->copy, cap * sizeof(*c)) : NULL;

		if (v)
			b->ev = v;
		if (!c)
			goto oom;
		b->copy = c;
		b->cap = cap;
	}
	if (len && b->dn + len > b->dcap) {
		size_t cap = b->dcap ? 2 * b->dcap : 4096;
		unsigned char *d;

		while (cap < b->dn + len)
			cap *= 2;
		d = realloc(b->data, cap);
		if (!d)
			goto oom;
		b->data = d;
		b->dcap = cap;
	}
	b->ev[b->n] = *e;
	b->copy[b->n] = (struct sim_par_copy){ len, b->dn };
	if (len) {
		memcpy(b->data + b->dn, data, len);
		b->dn += len;
	}
	b->n++;
	p->part[eng->part].sent++;
	return 0;
oom:
	par_fail(p, "out of memory for messages between partitions");
	p->part[eng->part].failed = true;
	eng->stop = true;
	return -1;
}

void sim_par_take(struct sim_par *p, uint32_t k)
{
	struct sim_engine *eng = p->eng[k];

	for (uint32_t q = 0; q < p->n; q++) {
		struct sim_par_box *b = &p->box[(size_t)q * p->n + k];
		size_t got = b->n;

		if (p->async) {
			pthread_mutex_lock(&p->box_lock[(size_t)q * p->n + k]);
			got = b->n;
			if (got && p->idle[k]) {	/* at work again, before the messages go */
				p->idle[k] = false;
				__atomic_add_fetch(&p->active, 1, __ATOMIC_SEQ_CST);
			}
		}

		for (size_t i = 0; i < b->n; i++) {
			struct sim_event *e = &b->ev[i];

			if (b->copy[i].len) {
				/* the target's range makes its own object of the copy */
				const struct sim_comp_range *r = &eng->ranges[(e->comp >> 24) & 0x3f];

				e->arg = r->import(r->base + (size_t)(e->comp & 0xffffff) * r->stride, e->arg,
						   b->data + b->copy[i].off, b->copy[i].len);
			}
			if (sim_insert(eng, e)) {
				par_fail(p, "out of memory for events");
				p->part[k].failed = true;
				break;
			}
		}
		b->n = 0;
		b->dn = 0;
		if (p->async) {
			__atomic_sub_fetch(&p->active, got, __ATOMIC_SEQ_CST);
			pthread_mutex_unlock(&p->box_lock[(size_t)q * p->n + k]);
		}
	}
}

void sim_par_window(struct sim_par *p, uint32_t k, sim_time_t end)
{
	struct sim_engine *eng = p->eng[k];
	struct sim_par_part *me = &p->part[k];
	uint64_t ev0 = eng->events;
	double b0 = wall_s();

	if (k == p->first)
		p->windows++;
	sim_run_before(eng, end);
	if (eng->halt && !me->halted) {	/* the model failed: all stop */
		me->halted = true;
		me->halt_at = eng->now;
	}
	if (eng->cal.oom) {
		par_fail(p, "out of memory for events");
		me->failed = true;
	}
	me->busy_s += wall_s() - b0;
	if (eng->events == ev0)
		me->idle_windows++;
}

/* The end of the next window from every partition's earliest event and
 * stop (SIM_TIME_MAX for none): 0 when the run is over. */
sim_time_t sim_par_end(const struct sim_par *p, sim_time_t m, sim_time_t s)
{
	sim_time_t end;

	if (m == SIM_TIME_MAX || m >= s)
		return 0;
	end = m > SIM_TIME_MAX - p->lookahead ? SIM_TIME_MAX : m + p->lookahead;
	return s < end ? s : end;
}

int sim_par_set_hook(struct sim_par *p, const struct sim_par_hook *h)
{
	free(p->hsum);
	p->hsum = calloc(p->n, sizeof(*p->hsum));
	if (!p->hsum)
		return -1;
	p->hook = *h;
	return 0;
}

sim_time_t sim_par_hook_stop(struct sim_par *p, uint32_t k, const uint64_t sum[SIM_PAR_SUMS],
			     uint64_t max)
{
	struct sim_engine *eng = p->eng[k];
	sim_time_t t = p->hook.stop(p->hook.ctx, sum, max);

	/* as sim_stop would have asked it (stop_at: events before t) */
	if (t < eng->stop_req) {
		eng->stop_req = t;
		eng->stop_at = t ? t - 1 : 0;
	}
	return t;
}

/* What partition k publishes before a window: its earliest event and its
 * stop (0 when it failed: everybody stops). */
void sim_par_publish(const struct sim_par *p, uint32_t k, sim_time_t *next, sim_time_t *stop)
{
	struct sim_engine *eng = p->eng[k];
	sim_time_t t;

	/* only an observer's ticks left (eng->background): nothing to wait for */
	*next = sim_pending(eng) > eng->background && sim_peek_time(eng, &t) ? t : SIM_TIME_MAX;
	*stop = p->part[k].failed || p->part[k].halted || eng->cal.oom ? 0 : eng->stop_req;
}

/* Spins before a waiter sleeps: about 1 ms of pause instructions */
#define BAR_SPIN (1u << 14)

static void bar_init(struct sim_par_bar *b, unsigned n)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	memset(b, 0, sizeof(*b));
	b->n = n;
	b->spin = cpus > 0 && n <= (unsigned long)cpus ? BAR_SPIN : 0;
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->wake, NULL);
}

static void bar_fini(struct sim_par_bar *b)
{
	pthread_mutex_destroy(&b->lock);
	pthread_cond_destroy(&b->wake);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* What every thread wrote before it is seen by every thread after. */
static void bar_wait(struct sim_par_bar *b)
{
	unsigned g = __atomic_load_n(&b->gen, __ATOMIC_ACQUIRE);

	if (__atomic_add_fetch(&b->count, 1, __ATOMIC_ACQ_REL) == b->n) {
		__atomic_store_n(&b->count, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&b->gen, g + 1, __ATOMIC_SEQ_CST);
		/* a sleeper counted itself before it looked at gen */
		if (__atomic_load_n(&b->sleepers, __ATOMIC_SEQ_CST)) {
			pthread_mutex_lock(&b->lock);
			pthread_cond_broadcast(&b->wake);
			pthread_mutex_unlock(&b->lock);
		}
		return;
	}
	for (unsigned i = 0; i < b->spin; i++) {
		if (__atomic_load_n(&b->gen, __ATOMIC_ACQUIRE) != g)
			return;
		cpu_relax();
	}
	pthread_mutex_lock(&b->lock);
	__atomic_add_fetch(&b->sleepers, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&b->gen, __ATOMIC_SEQ_CST) == g)
		pthread_cond_wait(&b->wake, &b->lock);
	__atomic_sub_fetch(&b->sleepers, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&b->lock);
}

struct par_thread {
	struct sim_par *p;
	uint32_t k;
};

/* Wait until every thread is there; false when one could not be started. */
static bool gate_wait(struct sim_par *p)
{
	pthread_mutex_lock(&p->gate_lock);
	while (!p->go)
		pthread_cond_wait(&p->gate, &p->gate_lock);
	pthread_mutex_unlock(&p->gate_lock);
	return p->go > 0;
}

static void *par_loop(void *arg)
{
	struct par_thread *th = arg;
	struct sim_par *p = th->p;
	uint32_t k = th->k;
	struct sim_par_part *me = &p->part[k];

	if (!gate_wait(p))
		return NULL;
	for (;;) {
		sim_time_t m = SIM_TIME_MAX, s = SIM_TIME_MAX, end;

		sim_par_publish(p, k, &p->next[k], &p->stop[k]);
		if (p->hook.values)
			p->hook.values(p->hook.ctx, k, p->hsum[k], &p->hsum[k][SIM_PAR_SUMS]);
		double w0 = wall_s();

		bar_wait(&p->bar);
		me->wait_s += wall_s() - w0;
		for (uint32_t q = 0; q < p->n; q++) {
			if (p->next[q] < m)
				m = p->next[q];
			if (p->stop[q] < s)
				s = p->stop[q];
		}
		if (p->hook.values) {
			uint64_t sum[SIM_PAR_SUMS] = { 0 }, max = 0;

			for (uint32_t q = 0; q < p->n; q++) {
				for (int i = 0; i < SIM_PAR_SUMS; i++)
					sum[i] += p->hsum[q][i];
				if (p->hsum[q][SIM_PAR_SUMS] > max)
					max = p->hsum[q][SIM_PAR_SUMS];
			}
			sim_time_t t = sim_par_hook_stop(p, k, sum, max);

			if (t < s)
				s = t;
		}
		/* every partition has read next[] and stop[] before any
		 * writes them again: the second barrier lies between */
		end = sim_par_end(p, m, s);
		if (!end)
			break;
		sim_par_window(p, k, end);
		w0 = wall_s();
		bar_wait(&p->bar);
		me->wait_s += wall_s() - w0;
		sim_par_take(p, k);
	}
	return NULL;
}

/*
 * Null messages (sim_par_set_async). A partition's hook values, for the
 * others to read without a barrier: the maximum first, the first sum last
 * (release), so that a reader who sees a partition's first sum sees the
 * rest at least as new; the values only grow (a count of finished
 * messages, the latest finish), so an old reading makes a later stop or
 * none, never an earlier one.
 */
static void hook_publish(struct sim_par *p, uint32_t k)
{
	uint64_t v[SIM_PAR_SUMS + 1];

	p->hook.values(p->hook.ctx, k, v, &v[SIM_PAR_SUMS]);
	for (int i = SIM_PAR_SUMS; i >= 0; i--)
		__atomic_store_n(&p->hsum[k][i], v[i], __ATOMIC_RELEASE);
}

static sim_time_t hook_read(struct sim_par *p, uint32_t k)
{
	uint64_t sum[SIM_PAR_SUMS] = { 0 }, max = 0;

	for (uint32_t q = 0; q < p->n; q++) {
		for (int i = 0; i < SIM_PAR_SUMS; i++)
			sum[i] += __atomic_load_n(&p->hsum[q][i], __ATOMIC_ACQUIRE);
		uint64_t m = __atomic_load_n(&p->hsum[q][SIM_PAR_SUMS], __ATOMIC_ACQUIRE);

		if (m > max)
			max = m;
	}
	return sim_par_hook_stop(p, k, sum, max);
}

/*
 * One partition's loop with null messages: read the others' promises,
 * stops and hook values (in that order: each partition publishes them in
 * the reverse one), take the messages sent before those promises, run
 * the events before the least promise and the earliest stop, then publish
 * values, stop and the new promise. Why it is safe: a message from q is
 * sent by an event of q no earlier than its promise less L, so at or
 * after the promise; an event here runs only before every other's
 * promise. A stop made from an old reading of the values is later, never
 * earlier (hook_publish); the last finish that makes the stop is an event
 * of some partition q at t, whose promise stays at most t + L, no later
 * than the stop, until it has run and published it.
 */
static void *par_loop_async(void *arg)
{
	struct par_thread *th = arg;
	struct sim_par *p = th->p;
	const uint32_t k = th->k, n = p->n;
	struct sim_par_part *me = &p->part[k];
	struct sim_engine *eng = p->eng[k];
	unsigned spins = 0;
	double w0 = 0;

	if (!gate_wait(p))
		return NULL;
	for (;;) {
		sim_time_t bound = SIM_TIME_MAX, s = SIM_TIME_MAX, t, next;

		for (uint32_t q = 0; q < n; q++)
			if (q != k && (t = __atomic_load_n(&p->eot[q], __ATOMIC_ACQUIRE)) < bound)
				bound = t;
		for (uint32_t q = 0; q < n; q++)
			if ((t = __atomic_load_n(&p->stop[q], __ATOMIC_ACQUIRE)) < s)
				s = t;
		if (p->hook.values && (t = hook_read(p, k)) < s)
			s = t;
		sim_par_take(p, k);
		if (eng->stop_req < s)
			s = eng->stop_req;
		sim_time_t end = bound < s ? bound : s;
		const bool any = sim_peek_time(eng, &next);

		/* No further than L past this round's first event: a stop the
		 * hook makes comes at least L after the event that makes it, so
		 * the next round sees it; and the promise after this round lets
		 * the others run on while this one goes on (a round as long as
		 * the bound makes the partitions take turns) */
		if (any && next < SIM_TIME_MAX - p->lookahead && next + p->lookahead < end)
			end = next + p->lookahead;
		if (any && next < end && !me->failed && !me->halted) {
			if (spins)
				me->wait_s += wall_s() - w0;
			spins = 0;
			sim_par_window(p, k, end);
		} else if (!spins++) {
			w0 = wall_s();
		}
		/* values, stop, promise: the reverse of the order read above */
		if (p->hook.values)
			hook_publish(p, k);
		const bool out = me->failed || eng->cal.oom;
		const sim_time_t st = out ? 0 : me->halted ? me->halt_at : eng->stop_req;

		__atomic_store_n(&p->stop[k], st, __ATOMIC_RELEASE);
		const sim_time_t fg = sim_pending(eng) > eng->background && sim_peek_time(eng, &t) ?
				      t : SIM_TIME_MAX;
		const sim_time_t low = fg < bound ? fg : bound;
		const sim_time_t promise = out || me->halted || low > SIM_TIME_MAX - p->lookahead ?
					   SIM_TIME_MAX : low + p->lookahead;

		if (promise > p->eot[k])
			__atomic_store_n(&p->eot[k], promise, __ATOMIC_RELEASE);
		/* the end: a failure (everybody's), its own halt (published as
		 * a stop: the others run to it), nothing before the stop here
		 * nor to come, or no work and no message anywhere */
		if (out || s == 0 || me->halted || low >= s)
			break;
		if (fg == SIM_TIME_MAX && !p->idle[k]) {
			p->idle[k] = true;
			__atomic_sub_fetch(&p->active, 1, __ATOMIC_SEQ_CST);
		}
		if (p->idle[k] && !__atomic_load_n(&p->active, __ATOMIC_SEQ_CST))
			break;
		/* waiting: spin as at a barrier (not at all with more threads
		 * than processors), then let the others run */
		if (spins > p->bar.spin)
			sched_yield();
		else if (spins)
			cpu_relax();
	}
	if (spins)
		me->wait_s += wall_s() - w0;
	return NULL;
}

/* What sim_par_set_async made (locks: its box locks were set up). */
static void async_free(struct sim_par *p, bool locks)
{
	for (size_t i = 0; locks && p->box_lock && i < (size_t)p->n * p->n; i++)
		pthread_mutex_destroy(&p->box_lock[i]);
	free(p->box_lock);
	free(p->eot);
	free(p->idle);
	p->box_lock = NULL;
	p->eot = NULL;
	p->idle = NULL;
	p->async = false;
}

int sim_par_set_async(struct sim_par *p, bool on)
{
	const size_t nb = (size_t)p->n * p->n;

	if (!on || p->eot) {	/* off, or on already */
		p->async = on;
		return 0;
	}
	p->eot = calloc(p->n, sizeof(*p->eot));
	p->idle = calloc(p->n, sizeof(*p->idle));
	p->box_lock = calloc(nb, sizeof(*p->box_lock));
	if (!p->eot || !p->idle || !p->box_lock) {
		async_free(p, false);
		return -1;
	}
	for (size_t i = 0; i < nb; i++)
		pthread_mutex_init(&p->box_lock[i], NULL);
	for (uint32_t k = 0; k < p->n; k++)
		p->stop[k] = SIM_TIME_MAX;
	p->active = p->n;
	p->async = true;
	return 0;
}

int sim_par_init(struct sim_par *p, struct sim_engine *eng, uint32_t n, sim_time_t lookahead,
		 sim_par_owner_fn owner, void *ctx)
{
	return sim_par_setup(p, eng, n, lookahead, owner, ctx, -1);
}

static int setup(struct sim_par *p, struct sim_engine *eng, struct sim_engine **replicas,
		 uint32_t n, sim_time_t lookahead, sim_par_owner_fn owner, void *ctx, int self);

int sim_par_setup(struct sim_par *p, struct sim_engine *eng, uint32_t n, sim_time_t lookahead,
		  sim_par_owner_fn owner, void *ctx, int self)
{
	return setup(p, eng, NULL, n, lookahead, owner, ctx, self);
}

int sim_par_init_replicas(struct sim_par *p, struct sim_engine **eng, uint32_t n,
			  sim_time_t lookahead, sim_par_owner_fn owner, void *ctx)
{
	for (uint32_t k = 1; k < n; k++)
		if (eng[k]->ncomps != eng[0]->ncomps || eng[k]->nranges != eng[0]->nranges) {
			memset(p, 0, sizeof(*p));
			pthread_mutex_init(&p->err_lock, NULL);
			snprintf(p->why, sizeof(p->why), "replica %u is not the model partition 0 holds", k);
			return -1;
		}
	return setup(p, eng[0], eng, n, lookahead, owner, ctx, -1);
}

static int setup(struct sim_par *p, struct sim_engine *eng, struct sim_engine **replicas,
		 uint32_t n, sim_time_t lookahead, sim_par_owner_fn owner, void *ctx, int self)
{
	memset(p, 0, sizeof(*p));
	pthread_mutex_init(&p->err_lock, NULL);
	if (n < 1 || n > 4096 || !lookahead) {
		snprintf(p->why, sizeof(p->why), "want 1 to 4096 partitions and a look-ahead above 0");
		return -1;
	}
	p->n = n;
	p->lookahead = lookahead;
	p->eng = calloc(n, sizeof(*p->eng));
	p->box = calloc((size_t)n * n, sizeof(*p->box));
	p->next = calloc(n, sizeof(*p->next));
	p->stop = calloc(n, sizeof(*p->stop));
	p->part = calloc(n, sizeof(*p->part));
	p->owner = calloc(eng->ncomps ? eng->ncomps : 1, sizeof(*p->owner));
	if (!p->eng || !p->box || !p->next || !p->stop || !p->part || !p->owner)
		goto oom;
	/* every component's partition */
	for (uint32_t c = 0; c < eng->ncomps; c++)
		p->owner[c] = (uint16_t)owner(ctx, c);
	for (uint32_t r = 0; r < eng->nranges; r++) {
		uint32_t cnt = eng->ranges[r].n, first = SIM_COMP_RANGE | r << 24;

		p->range_owner[r] = malloc((cnt ? cnt : 1) * sizeof(**p->range_owner));
		if (!p->range_owner[r])
			goto oom;
		for (uint32_t i = 0; i < cnt; i++) {
			uint32_t o = owner(ctx, first | i);

			if (o >= n) {
				char nm[64];

				snprintf(p->why, sizeof(p->why), "component %s has partition %u of %u",
					 comp_name(eng, first | i, nm, sizeof(nm)), o, n);
				goto fail;
			}
			p->range_owner[r][i] = (uint16_t)o;
		}
	}
	for (uint32_t c = 0; c < eng->ncomps; c++) {
		char nm[64];

		if (p->owner[c] == SIM_PAR_EVERY && self < 0 && !replicas) {
			snprintf(p->why, sizeof(p->why),
				 "component %s is in every partition: that needs a model per partition",
				 comp_name(eng, c, nm, sizeof(nm)));
			goto fail;
		}
		if (p->owner[c] >= n && p->owner[c] != SIM_PAR_EVERY) {
			snprintf(p->why, sizeof(p->why), "component %s has partition %u of %u",
				 comp_name(eng, c, nm, sizeof(nm)), p->owner[c], n);
			goto fail;
		}
	}
	p->self = self;
	p->first = self < 0 ? 0 : (uint32_t)self;
	if (self >= (int)n) {
		snprintf(p->why, sizeof(p->why), "partition %d of %u", self, n);
		goto fail;
	}
	p->eng[p->first] = eng;
	p->replicas = replicas != NULL;
	for (uint32_t k = 0; k < n && replicas; k++)
		p->eng[k] = replicas[k];
	for (uint32_t k = 0; k < n && self < 0 && !replicas; k++) {
		if (k == p->first)
			continue;
		struct sim_engine *e = malloc(sizeof(*e));

		if (!e || sim_init(e)) {
			free(e);
			goto oom;
		}
		p->eng[k] = e;
		/* the same components: the tables are eng's, read only from now */
		e->comps = eng->comps;
		e->ncomps = e->comps_cap = eng->ncomps;
		memcpy(e->ranges, eng->ranges, sizeof(e->ranges));
		e->nranges = eng->nranges;
		e->prefetch = eng->prefetch;
		e->now = eng->now;
	}
	for (uint32_t k = 0; k < n; k++) {
		struct sim_engine *e = p->eng[k];

		if (!e)
			continue;	/* another process's */
		e->par = p;
		e->part = k;
		e->lag = lookahead;
		e->owner = p->owner;
		for (uint32_t r = 0; r < eng->nranges; r++)
			e->ranges[r].owner = p->range_owner[r];
	}
	if (self < 0) {
		bar_init(&p->bar, n);
		p->bar_ok = true;
		pthread_mutex_init(&p->gate_lock, NULL);
		pthread_cond_init(&p->gate, NULL);
	}
	/* the events set-up scheduled, to their components' partitions; a
	 * replica keeps its own partition's (the others' are their replicas') */
	for (uint32_t k = 0; k < (replicas ? n : 1); k++) {
		struct sim_engine *from = replicas ? replicas[k] : eng;
		size_t nev;
		struct sim_event *ev = sim_drain(from, &nev);

		if (!ev && nev)
			goto oom;
		for (size_t i = 0; i < nev; i++) {
			uint32_t o = sim_owner(from, ev[i].comp);
			/* a component of every partition: each keeps its own */
			struct sim_engine *to = o == SIM_PAR_EVERY ? from :
						replicas ? (o == k ? from : NULL) : p->eng[o];

			if (!to)
				continue;	/* another process's or replica's runs it */
			if (sim_insert(to, &ev[i])) {
				free(ev);
				goto oom;
			}
		}
		free(ev);
	}
	return 0;
oom:
	snprintf(p->why, sizeof(p->why), "out of memory for %u partitions", n);
fail:
	sim_par_fini(p);
	return -1;
}

int sim_par_run(struct sim_par *p)
{
	pthread_t *tid = calloc(p->n, sizeof(*tid));
	struct par_thread *th = calloc(p->n, sizeof(*th));
	uint32_t started = 1;

	if (!tid || !th) {
		free(tid);
		free(th);
		snprintf(p->why, sizeof(p->why), "out of memory for threads");
		return -1;
	}
	for (uint32_t k = 0; k < p->n; k++)
		th[k] = (struct par_thread){ p, k };
	void *(*loop)(void *) = p->async ? par_loop_async : par_loop;

	for (uint32_t k = 1; k < p->n; k++, started++)
		if (pthread_create(&tid[k], NULL, loop, &th[k]))
			break;
	/* The barrier counts n: the threads wait at the gate until all are
	 * there, or leave at once when one could not be started. */
	pthread_mutex_lock(&p->gate_lock);
	p->go = started == p->n ? 1 : -1;
	pthread_cond_broadcast(&p->gate);
	pthread_mutex_unlock(&p->gate_lock);
	if (started == p->n)
		loop(&th[0]);
	for (uint32_t k = 1; k < started; k++)
		pthread_join(tid[k], NULL);
	free(tid);
	free(th);
	if (started < p->n) {
		snprintf(p->why, sizeof(p->why), "could not start thread %u of %u", started + 1, p->n);
		return p->err = -1;
	}
	/* null messages: what was sent to a partition after it had left (at
	 * or after the stop) waits in the lists, as windows leave it */
	for (uint32_t k = 0; p->async && k < p->n; k++) {
		sim_par_take(p, k);
		/* and the hook's stop from every partition's last values, which
		 * a partition that left with no work may not have read: its
		 * engine says it as the windows' do */
		if (p->hook.values)
			hook_read(p, k);
	}
	/* the run's clock and count on eng[0] */
	struct sim_engine *e0 = p->eng[0];

	/* the clock: the last event one list has too (sim_aside) */
	for (uint32_t k = 0; k < p->n; k++) {
		p->part[k].events = p->eng[k]->events;
		p->part[k].main_now = sim_main_now(p->eng[k]);
	}
	e0->now = 0;
	for (uint32_t k = 0; k < p->n; k++)
		if (p->part[k].main_now > e0->now)
			e0->now = p->part[k].main_now;
	for (uint32_t k = 1; k < p->n; k++)
		e0->events += p->eng[k]->events;
	e0->stop = true;
	p->first_halt = -1;
	for (uint32_t k = 0; k < p->n; k++)
		if (p->part[k].halted &&
		    (p->first_halt < 0 || p->part[k].halt_at < p->part[p->first_halt].halt_at))
			p->first_halt = (int)k;
	return p->err;
}

void sim_par_fini(struct sim_par *p)
{
	if (p->eng) {
		for (uint32_t k = 0; k < p->n; k++) {
			struct sim_engine *e = p->eng[k];

			if (!e || k == p->first || p->replicas)
				continue;
			e->comps = NULL;	/* the caller's engine's */
			sim_fini(e);
			free(e);
		}
		for (uint32_t k = 0; k < p->n; k++) {
			struct sim_engine *e = p->eng[k];

			if (!e || (k != p->first && !p->replicas))
				continue;	/* freed above */
			e->par = NULL;
			e->owner = NULL;
			e->lag = 0;
			for (uint32_t r = 0; r < e->nranges; r++)
				e->ranges[r].owner = NULL;
		}
	}
	if (p->bar_ok) {
		bar_fini(&p->bar);
		pthread_mutex_destroy(&p->gate_lock);
		pthread_cond_destroy(&p->gate);
	}
	p->bar_ok = false;
	if (p->box)
		for (size_t i = 0; i < (size_t)p->n * p->n; i++) {
			free(p->box[i].ev);
			free(p->box[i].copy);
			free(p->box[i].data);
		}
	for (uint32_t r = 0; r < SIM_MAX_RANGES; r++)
		free(p->range_owner[r]);
	async_free(p, p->eot != NULL);
	free(p->box);
	free(p->eng);
	free(p->next);
	free(p->stop);
	free(p->part);
	free(p->owner);
	free(p->hsum);
	p->hsum = NULL;
	p->hook.values = NULL;
	pthread_mutex_destroy(&p->err_lock);
	p->eng = NULL;
	p->box = NULL;
	p->next = p->stop = NULL;
	p->part = NULL;
	p->owner = NULL;
	memset(p->range_owner, 0, sizeof(p->range_owner));
}
