/* SPDX-License-Identifier: MIT */
/*
 * test_par.c - the partitioned engine (sim/sim_par.c) against one list.
 *
 * A model made to be sensitive to order: 24 nodes (one component range),
 * each folding every event it gets (time and argument) into a hash and
 * answering with events for itself (0, L/2 or L ahead) and for three
 * neighbours (L, 2L or 3L ahead: many exact ties), drawn from its own
 * random stream, until its budget is spent. Run on one list and cut into
 * 1, 2, 3 and 4 partitions (blocks, round robin, a random cut), every
 * node must see the same events in the same order: the same hashes,
 * counts, clock and total. Beside them 24 mailboxes pass parcels round
 * the ring as copies (sim_schedule_copy), which each mailbox keeps in a
 * slot of its own until it reads them: the same parcels, in the same
 * order. A stop asked for by one node (with the
 * look-ahead as its lag) ends every run at the same event, and so does a
 * stop no partition can see alone (every node has had K events), which
 * the model's hook makes of all partitions' counts; a message under the
 * look-ahead is refused with its sender and receiver named. An
 * observer's background ticks do not keep a cut run going, and events
 * one list has not (sim_aside) stay out of the run's clock.
 */
#include "sim/sim.h"
#include "sim/sim_par.h"
#include "sim/sim_rng.h"
#include "test_main.h"

#include <CUnit/CUnit.h>
#include <stdlib.h>
#include <string.h>

#define NODES 24
#define L ((sim_time_t)4096)

struct pnode {
	uint64_t hash, seen, ties;
	uint64_t bad;		/* failed calls: counted here (CUnit is not thread safe) */
	sim_time_t last;
	sim_time_t at_k;	/* the time of its k-th event (pmodel.k) */
	struct sim_rng rng;
	uint32_t id, budget;
	struct pmodel *m;
};

/* A mailbox: parcels (a copy each, sim_schedule_copy) passed on round the
 * ring, each a slot of its own mailbox while it waits to be read. */
struct parcel {
	uint64_t token, path;
};

struct pbox {
	uint64_t hash, got, bad;
	uint32_t id, budget;
	uint64_t used;			/* slots in use */
	struct parcel slot[64];
	struct pmodel *m;
};

struct cut;

/* The cases run twice: in windows, and with null messages instead. */
static bool async_mode;

static void maybe_async(struct sim_par *p)
{
	if (async_mode)
		CU_ASSERT_FATAL(sim_par_set_async(p, true) == 0);
}

struct pmodel {
	struct pnode node[NODES];
	struct pbox box[NODES];
	uint32_t box0;
	uint32_t comp0;
	sim_time_t near;	/* how far ahead a neighbour's event is at least */
	uint32_t stop_node;
	uint64_t stop_after;	/* 0: never */
	/* stop once every node has had k events (0: never): on one list the
	 * node that makes it all stops the run (at_k_nodes, shared), cut
	 * into partitions the hook does (hook_values, hook_stop) */
	uint64_t k;
	uint32_t at_k_nodes;
	bool by_hook;
	const struct cut *cut;
	/* a component registered alone (sim_register), as a sampler is */
	uint32_t tick_comp;
	uint64_t ticks;
};

static uint64_t mix(uint64_t h, uint64_t a, uint64_t b)
{
	h ^= a + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
	h ^= b + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static void node_fn(struct sim_engine *eng, void *ctx, uint32_t arg)
{
	struct pnode *n = ctx;
	struct pmodel *m = n->m;
	static const int nb[3] = { 1, NODES - 1, 5 };

	n->seen++;
	n->ties += n->seen > 1 && sim_now(eng) == n->last;
	n->last = sim_now(eng);
	n->hash = mix(n->hash, sim_now(eng), arg);
	if (m->stop_after && n->id == m->stop_node && n->seen == m->stop_after)
		sim_stop(eng);
	if (m->k && n->seen == m->k) {
		n->at_k = sim_now(eng);
		if (!m->by_hook && ++m->at_k_nodes == NODES)
			sim_stop(eng);
	}
	if (!n->budget)
		return;
	n->budget--;
	uint32_t tok = n->id << 20 | (uint32_t)(n->seen & 0xfffff);
	uint64_t r = sim_rng_below(&n->rng, 64);

	if (r & 1)	/* itself: 0, L/2 or L ahead */
		n->bad += sim_schedule_in(eng, (r >> 1) % 3 * (L / 2), m->comp0 + n->id, tok) != 0;
	/* one or two neighbours, m->near + 0, L or 2L ahead */
	for (int k = 0; k < 1 + (int)((r >> 3) & 1); k++) {
		uint32_t to = (n->id + (uint32_t)nb[(r >> (4 + 2 * k)) % 3]) % NODES;

		sim_schedule_in(eng, m->near + (r >> 2) % 3 * L, m->comp0 + to, tok + 1);
	}
}

static uint32_t box_import(void *elem, uint32_t arg, const void *data, uint32_t len)
{
	struct pbox *b = elem;
	int k;

	if (len != sizeof(struct parcel) || b->used == ~0ull) {
		b->bad++;
		return arg;
	}
	k = __builtin_ctzll(~b->used);
	b->used |= 1ull << k;
	memcpy(&b->slot[k], data, len);
	return (uint32_t)k << 8 | (arg & 0xff);
}

static void box_fn(struct sim_engine *eng, void *ctx, uint32_t arg)
{
	struct pbox *b = ctx;
	uint32_t k = arg >> 8;
	struct parcel pc = b->slot[k];

	b->used &= ~(1ull << k);
	b->got++;
	b->hash = mix(b->hash, sim_now(eng), pc.token ^ pc.path);
	if (!b->budget)
		return;
	b->budget--;
	pc.path = mix(pc.path, b->id, sim_now(eng));
	/* on to a node 3 along (another partition, often), 1-2.5 L ahead */
	b->bad += sim_schedule_copy(eng, sim_now(eng) + L + (pc.path % 4) * (L / 2),
				    b->m->box0 + (b->id + 3) % NODES, arg & 0xff, &pc, sizeof(pc)) != 0;
}

/* A plain component that ticks every 5L while the nodes run. */
static void tick_fn(struct sim_engine *eng, void *ctx, uint32_t arg)
{
	struct pmodel *m = ctx;

	(void)arg;
	m->ticks++;
	if (m->ticks < 200)
		sim_schedule_in(eng, 5 * L, m->tick_comp, 0);
}

static void model_init(struct sim_engine *eng, struct pmodel *m, uint32_t budget)
{
	memset(m, 0, sizeof(*m));
	m->near = L;
	CU_ASSERT_FATAL(sim_init(eng) == 0);
	m->tick_comp = (uint32_t)sim_register(eng, tick_fn, m, "tick");
	m->comp0 = (uint32_t)sim_register_range(eng, node_fn, m->node, sizeof(m->node[0]), NODES,
						 "node");
	m->box0 = (uint32_t)sim_register_range(eng, box_fn, m->box, sizeof(m->box[0]), NODES, "box");
	sim_range_import(eng, m->box0, box_import);
	for (uint32_t i = 0; i < NODES; i++) {
		struct parcel pc = { .token = 1000 + i, .path = i };

		m->box[i].id = i;
		m->box[i].m = m;
		m->box[i].budget = budget / 4;
		CU_ASSERT(sim_schedule_copy(eng, (i % 4) * L / 2, m->box0 + i, 0, &pc, sizeof(pc)) == 0);
	}
	for (uint32_t i = 0; i < NODES; i++) {
		struct pnode *n = &m->node[i];

		n->id = i;
		n->m = m;
		n->budget = budget;
		sim_rng_init(&n->rng, 7, i);
		/* a few starts at 0 (ties from the first instant) */
		CU_ASSERT(sim_schedule_at(eng, (i % 3) * L / 4, m->comp0 + i, i) == 0);
	}
	CU_ASSERT(sim_schedule_at(eng, L, m->tick_comp, 0) == 0);
}

struct outcome {
	uint64_t hash[NODES], seen[NODES], box[NODES], got[NODES], events, ticks, bad;
	sim_time_t now;
};

static void outcome_of(const struct sim_engine *eng, const struct pmodel *m, struct outcome *o)
{
	o->bad = 0;
	for (int i = 0; i < NODES; i++) {
		o->hash[i] = m->node[i].hash;
		o->seen[i] = m->node[i].seen;
		o->box[i] = m->box[i].hash;
		o->got[i] = m->box[i].got;
		o->bad += m->node[i].bad + m->box[i].bad;
	}
	o->events = eng->events;
	o->ticks = m->ticks;
	o->now = sim_now(eng);
}

/* cuts: 0 blocks, 1 round robin, 2 random (a fixed draw) */
struct cut {
	struct pmodel *m;
	uint32_t n, kind;
};

static uint32_t cut_owner(void *ctx, uint32_t comp)
{
	const struct cut *c = ctx;
	uint32_t i;

	if (!(comp & SIM_COMP_RANGE))
		return c->n - 1;	/* the tick: the last partition */
	i = comp & 0xffffff;
	switch (c->kind) {
	case 0:
		return i * c->n / NODES;
	case 1:
		return i % c->n;
	default:
		return (uint32_t)((i * 2654435761u) >> 7) % c->n;
	}
}

/* The hook: partition k's nodes that had their k-th event, and the last
 * time of those; the stop when all nodes have (as one list stops). */
static void hook_values(void *ctx, uint32_t k, uint64_t sum[SIM_PAR_SUMS], uint64_t *max)
{
	const struct pmodel *m = ctx;

	memset(sum, 0, SIM_PAR_SUMS * sizeof(*sum));
	*max = 0;
	for (uint32_t i = 0; i < NODES; i++)
		if (cut_owner((void *)m->cut, m->comp0 + i) == k && m->node[i].seen >= m->k) {
			sum[0]++;
			sum[1] += m->node[i].seen;	/* not used: the other sums are summed too */
			if (m->node[i].at_k > *max)
				*max = m->node[i].at_k;
		}
}

static sim_time_t hook_stop(void *ctx, const uint64_t sum[SIM_PAR_SUMS], uint64_t max)
{
	(void)ctx;
	return sum[0] == NODES ? max + L : SIM_TIME_MAX;
}

static void run_one_list(struct pmodel *m, struct outcome *o, uint32_t budget, uint64_t stop_after,
			 sim_time_t lag)
{
	struct sim_engine eng;

	model_init(&eng, m, budget);
	m->stop_after = stop_after;
	m->stop_node = 3;
	eng.lag = lag;
	sim_run(&eng);
	outcome_of(&eng, m, o);
	sim_fini(&eng);
}

static int run_cut(struct pmodel *m, struct outcome *o, uint32_t budget, uint64_t stop_after,
		   uint32_t n, uint32_t kind, sim_time_t near, struct sim_par *keep)
{
	struct sim_engine eng;
	struct sim_par p;
	struct cut c = { m, n, kind };
	int rc;

	model_init(&eng, m, budget);
	m->stop_after = stop_after;
	m->stop_node = 3;
	m->near = near;
	CU_ASSERT_FATAL(sim_par_init(&p, &eng, n, L, cut_owner, &c) == 0);
	maybe_async(&p);
	rc = sim_par_run(&p);
	outcome_of(&eng, m, o);
	if (keep) {
		*keep = p;	/* the caller reads it; the lists are freed here */
		keep->part = malloc(n * sizeof(*keep->part));
		memcpy(keep->part, p.part, n * sizeof(*p.part));
	}
	sim_par_fini(&p);
	sim_fini(&eng);
	return rc;
}

static void same(const struct outcome *a, const struct outcome *b, const char *what)
{
	CU_ASSERT(a->bad == 0 && b->bad == 0);
	int ok = !memcmp(a->hash, b->hash, sizeof(a->hash)) && !memcmp(a->seen, b->seen, sizeof(a->seen)) &&
		 !memcmp(a->box, b->box, sizeof(a->box)) && !memcmp(a->got, b->got, sizeof(a->got)) &&
		 a->events == b->events && a->ticks == b->ticks && a->now == b->now;

	if (!ok && getenv("IBFAB_TEST_VERBOSE"))
		fprintf(stderr, "%s: events %llu vs %llu, now %llu vs %llu\n", what,
			(unsigned long long)a->events, (unsigned long long)b->events,
			(unsigned long long)a->now, (unsigned long long)b->now);
	CU_ASSERT(ok);
}

static void test_par_same_as_one_list(void)
{
	struct pmodel *m = malloc(sizeof(*m));
	struct outcome ref, got;
	struct sim_par st;

	CU_ASSERT_FATAL(m != NULL);
	run_one_list(m, &ref, 3000, 0, L);
	CU_ASSERT(ref.events > 50000);
	CU_ASSERT(ref.ticks == 200);
	for (int i = 0; i < NODES; i++)	/* every parcel passed on to the end */
		CU_ASSERT(ref.got[i] > 3000 / 4);
	for (uint32_t n = 1; n <= 4; n++)
		for (uint32_t kind = 0; kind < 3; kind++) {
			char what[64];

			CU_ASSERT(run_cut(m, &got, 3000, 0, n, kind, L, &st) == 0);
			snprintf(what, sizeof(what), "%u partitions, cut %u", n, kind);
			same(&ref, &got, what);
			uint64_t sum = 0, sent = 0;

			for (uint32_t k = 0; k < n; k++) {
				sum += st.part[k].events;
				sent += st.part[k].sent;
			}
			CU_ASSERT(sum == ref.events);
			/* round robin: nearly every neighbour is in another partition */
			if (n > 1)
				CU_ASSERT(sent > 0);
			if (n == 4 && kind == 1)
				CU_ASSERT(sent > ref.events / 3);
			/* null messages run in rounds, each as far as the others' promises */
			CU_ASSERT(async_mode ? st.windows >= 1 : st.windows > 100);
			free(st.part);
		}
	free(m);
}

/*
 * The model is made of ties: many events reach a node at the time of the
 * one before (their order then decides its hash). A wrong order across
 * partitions (a message inserted behind the list's window once made the
 * 3- and 4-way round-robin cuts differ) is seen by the hashes.
 */
static void test_par_ties(void)
{
	struct pmodel *m = malloc(sizeof(*m));
	struct outcome a;
	uint64_t ties = 0;

	CU_ASSERT_FATAL(m != NULL);
	run_one_list(m, &a, 3000, 0, L);
	for (int i = 0; i < NODES; i++)
		ties += m->node[i].ties;
	if (getenv("IBFAB_TEST_VERBOSE"))
		fprintf(stderr, "%llu of %llu events at their node's previous time\n",
			(unsigned long long)ties, (unsigned long long)a.events);
	CU_ASSERT(ties > a.events / 10);
	free(m);
}

static void test_par_stop(void)
{
	struct pmodel *m = malloc(sizeof(*m));
	struct outcome full, ref, got, now;

	CU_ASSERT_FATAL(m != NULL);
	run_one_list(m, &full, 3000, 0, L);
	run_one_list(m, &ref, 3000, 500, L);
	CU_ASSERT(ref.events < full.events / 2);
	CU_ASSERT(ref.seen[3] >= 500);
	/* with no lag the one list stops at the stopping event itself:
	 * fewer events than with the lag (the others still before now + L) */
	run_one_list(m, &now, 3000, 500, 0);
	CU_ASSERT(now.seen[3] == 500);
	CU_ASSERT(now.events < ref.events);
	for (uint32_t n = 2; n <= 4; n++)
		for (uint32_t kind = 0; kind < 3; kind++) {
			CU_ASSERT(run_cut(m, &got, 3000, 500, n, kind, L, NULL) == 0);
			same(&ref, &got, "a stop");
		}
	free(m);
}

/* Run with the every-node-had-k stop: on one list (lag L), or cut n ways
 * with the hook making it (hook false: no stop at all). */
static void run_k(struct pmodel *m, struct outcome *o, uint32_t n, uint32_t kind, bool hook)
{
	struct sim_engine eng;
	struct sim_par p;
	struct cut c = { m, n, kind };
	const struct sim_par_hook h = { hook_values, hook_stop, m };

	model_init(&eng, m, 3000);
	m->k = 400;
	m->by_hook = n > 0;
	m->cut = &c;
	if (!n) {
		eng.lag = L;
		sim_run(&eng);
	} else {
		CU_ASSERT_FATAL(sim_par_init(&p, &eng, n, L, cut_owner, &c) == 0);
		maybe_async(&p);
		if (hook)
			CU_ASSERT_FATAL(sim_par_set_hook(&p, &h) == 0);
		CU_ASSERT(sim_par_run(&p) == 0);
		sim_par_fini(&p);
	}
	outcome_of(&eng, m, o);
	sim_fini(&eng);
}

static void test_par_hook(void)
{
	struct pmodel *m = malloc(sizeof(*m));
	struct outcome full, ref, got;

	CU_ASSERT_FATAL(m != NULL);
	run_one_list(m, &full, 3000, 0, L);
	run_k(m, &ref, 0, 0, false);
	CU_ASSERT(m->at_k_nodes == NODES);
	CU_ASSERT(ref.events < full.events);
	for (uint32_t n = 1; n <= 4; n++)
		for (uint32_t kind = 0; kind < 3; kind++) {
			run_k(m, &got, n, kind, true);
			same(&ref, &got, "the hook's stop");
		}
	/* without the hook no partition sees the stop: the run goes on */
	run_k(m, &got, 3, 1, false);
	CU_ASSERT(got.events == full.events);
	free(m);
}

/* The model built once a partition (sim_par_init_replicas): each node's
 * state is its owner's copy's, and all of it the one list's. */
static void test_par_replicas(void)
{
	struct pmodel *ref_m = malloc(sizeof(*ref_m)), *m[4];
	struct sim_engine eng[4], *pe[4];
	struct outcome ref, got;

	CU_ASSERT_FATAL(ref_m != NULL);
	run_one_list(ref_m, &ref, 3000, 0, L);
	for (int k = 0; k < 4; k++) {
		m[k] = malloc(sizeof(*m[k]));
		CU_ASSERT_FATAL(m[k] != NULL);
		pe[k] = &eng[k];
	}
	for (uint32_t n = 2; n <= 4; n++)
		for (uint32_t kind = 0; kind < 3; kind++) {
			struct cut c = { m[0], n, kind };
			struct sim_par p;

			for (uint32_t k = 0; k < n; k++)
				model_init(&eng[k], m[k], 3000);
			CU_ASSERT_FATAL(sim_par_init_replicas(&p, pe, n, L, cut_owner, &c) == 0);
			maybe_async(&p);
			CU_ASSERT(sim_par_run(&p) == 0);
			outcome_of(&eng[0], m[0], &got);
			got.bad = 0;
			for (int i = 0; i < NODES; i++) {
				const struct pmodel *o = m[cut_owner(&c, m[0]->comp0 + (uint32_t)i)];
				const struct pmodel *b = m[cut_owner(&c, m[0]->box0 + (uint32_t)i)];

				got.hash[i] = o->node[i].hash;
				got.seen[i] = o->node[i].seen;
				got.box[i] = b->box[i].hash;
				got.got[i] = b->box[i].got;
				got.bad += o->node[i].bad + b->box[i].bad;
			}
			got.ticks = m[n - 1]->ticks;	/* the tick's partition */
			same(&ref, &got, "replicas");
			sim_par_fini(&p);
			for (uint32_t k = 0; k < n; k++)
				sim_fini(&eng[k]);
		}
	for (int k = 0; k < 4; k++)
		free(m[k]);
	free(ref_m);
}

/*
 * A component of every partition (SIM_PAR_EVERY), the model built once a
 * partition: four senders (cut 2 and 4 ways) tell it things
 * (sim_schedule_every) one look-ahead or a little more ahead, with ties,
 * and each replica folds what it hears, in order, into a hash and wakes
 * itself after each (an event of its own, which stays in its partition):
 * every replica hears what the one list's hears, in the same order, and
 * wakes as often.
 */
#define EV_SENDERS 4

struct ev_sender {
	struct sim_rng rng;
	uint32_t id, budget, rep;
};

struct ev_model {
	struct ev_sender snd[EV_SENDERS];
	uint64_t hash, heard, wakes;
	uint32_t rep;
	uint64_t bad;
};

static void ev_send(struct sim_engine *eng, void *ctx, uint32_t arg)
{
	struct ev_sender *x = ctx;

	(void)arg;
	if (!x->budget)
		return;
	x->budget--;
	if (sim_schedule_every(eng, eng->now + L + 1000 * sim_rng_below(&x->rng, 3), x->rep,
			       1u << 31 | x->id << 16 | x->budget) ||
	    sim_schedule_at(eng, eng->now + L / 2 * (1 + sim_rng_below(&x->rng, 2)),
			    (uint32_t)x->id, 0))
		x->budget = 0;
}

static void ev_hear(struct sim_engine *eng, void *ctx, uint32_t arg)
{
	struct ev_model *m = ctx;

	if (!arg) {
		m->wakes++;
		return;
	}
	m->hash = m->hash * 1099511628211ULL ^ (eng->now * 31 + arg);
	m->heard++;
	if (sim_schedule_at(eng, eng->now + 7, m->rep, 0))
		m->bad++;
}

static void ev_init(struct sim_engine *eng, struct ev_model *m)
{
	memset(m, 0, sizeof(*m));
	CU_ASSERT_FATAL(sim_init(eng) == 0);
	for (uint32_t i = 0; i < EV_SENDERS; i++) {
		m->snd[i] = (struct ev_sender){ .id = i, .budget = 200 };
		sim_rng_init(&m->snd[i].rng, 7, i);
		CU_ASSERT_FATAL(sim_register(eng, ev_send, &m->snd[i], "sender") == (int)i);
	}
	m->rep = (uint32_t)sim_register(eng, ev_hear, m, "every");
	for (uint32_t i = 0; i < EV_SENDERS; i++) {
		m->snd[i].rep = m->rep;
		CU_ASSERT_FATAL(sim_schedule_at(eng, 100 * (sim_time_t)i, i, 0) == 0);
	}
	eng->lag = L;
}

static uint32_t *ev_n;

static uint32_t ev_owner(void *ctx, uint32_t comp)
{
	(void)ctx;
	return comp < EV_SENDERS ? comp % *ev_n : SIM_PAR_EVERY;
}

static void test_par_every(void)
{
	struct ev_model ref, m[4];
	struct sim_engine one, eng[4], *pe[4];

	ev_init(&one, &ref);
	sim_run(&one);
	if (getenv("IBFAB_TEST_VERBOSE"))
		fprintf(stderr, "\n  every: heard %llu, wakes %llu\n", (unsigned long long)ref.heard,
			(unsigned long long)ref.wakes);
	CU_ASSERT(ref.heard == EV_SENDERS * 200 && ref.wakes == ref.heard && !ref.bad);
	sim_fini(&one);
	for (uint32_t n = 2; n <= 4; n += 2) {
		struct sim_par p;

		ev_n = &n;
		for (uint32_t k = 0; k < n; k++) {
			ev_init(&eng[k], &m[k]);
			pe[k] = &eng[k];
		}
		CU_ASSERT_FATAL(sim_par_init_replicas(&p, pe, n, L, ev_owner, NULL) == 0);
		maybe_async(&p);
		CU_ASSERT(sim_par_run(&p) == 0);
		for (uint32_t k = 0; k < n; k++) {
			CU_ASSERT_EQUAL(m[k].hash, ref.hash);
			CU_ASSERT_EQUAL(m[k].heard, ref.heard);
			CU_ASSERT_EQUAL(m[k].wakes, ref.wakes);
			CU_ASSERT_EQUAL(m[k].bad, 0);
		}
		sim_par_fini(&p);
		for (uint32_t k = 0; k < n; k++)
			sim_fini(&eng[k]);
	}
	/* one model cut into lists: a component in every list needs its own */
	{
		struct sim_par p;
		uint32_t two = 2;

		ev_n = &two;
		ev_init(&one, &ref);
		CU_ASSERT(sim_par_init(&p, &one, 2, L, ev_owner, NULL) == -1);
		CU_ASSERT(strstr(p.why, "every partition") != NULL);
		sim_fini(&one);
	}
}

static void test_par_lookahead_refused(void)
{
	struct pmodel *m = malloc(sizeof(*m));
	struct outcome got;
	struct sim_engine eng;
	struct sim_par p;
	struct cut c = { m, 2, 0 };

	CU_ASSERT_FATAL(m != NULL);
	/* neighbours L/2 ahead: fine on one list, refused across partitions */
	model_init(&eng, m, 100);
	m->near = L / 2;
	CU_ASSERT_FATAL(sim_par_init(&p, &eng, 2, L, cut_owner, &c) == 0);
	maybe_async(&p);
	CU_ASSERT(sim_par_run(&p) == -1);
	CU_ASSERT(strstr(p.why, "node 2") != NULL);
	CU_ASSERT(strstr(p.why, "2048 ps ahead: under the look-ahead of 4096 ps") != NULL);
	if (getenv("IBFAB_TEST_VERBOSE"))
		fprintf(stderr, "%s\n", p.why);
	sim_par_fini(&p);
	sim_fini(&eng);
	/* one partition sends no messages: nothing to refuse */
	CU_ASSERT(run_cut(m, &got, 100, 0, 1, 0, L / 2, NULL) == 0);
	/* bad arguments */
	model_init(&eng, m, 1);
	CU_ASSERT(sim_par_init(&p, &eng, 0, L, cut_owner, &c) == -1);
	CU_ASSERT(sim_par_init(&p, &eng, 2, 0, cut_owner, &c) == -1);
	c.n = 5;	/* owners up to 4 of 2 */
	CU_ASSERT(sim_par_init(&p, &eng, 2, L, cut_owner, &c) == -1);
	CU_ASSERT(strstr(p.why, "has partition") != NULL);
	sim_fini(&eng);
	free(m);
}

/* One list with a lag: a stop lets every event before now + lag run. */
struct lagrec {
	uint32_t n, args[8];
};

static void lag_fn(struct sim_engine *eng, void *ctx, uint32_t arg)
{
	struct lagrec *r = ctx;

	r->args[r->n++] = arg;
	if (arg == 1)
		sim_stop(eng);
}

static void test_par_lag(void)
{
	struct sim_engine eng;
	struct lagrec r = { 0 };
	int c;

	CU_ASSERT_FATAL(sim_init(&eng) == 0);
	c = sim_register(&eng, lag_fn, &r, "lag");
	eng.lag = 100;
	sim_schedule_at(&eng, 10, (uint32_t)c, 1);	/* stops: the lag runs to 110 */
	sim_schedule_at(&eng, 109, (uint32_t)c, 2);	/* runs */
	sim_schedule_at(&eng, 110, (uint32_t)c, 3);	/* does not */
	sim_schedule_at(&eng, SIM_TIME_MAX, (uint32_t)c, 4);
	sim_run(&eng);
	CU_ASSERT(r.n == 2 && r.args[0] == 1 && r.args[1] == 2);
	CU_ASSERT(sim_now(&eng) == 109 && eng.stop && sim_pending(&eng) == 2);
	/* run on: the rest, to the last time there is */
	sim_run(&eng);
	CU_ASSERT(r.n == 4 && r.args[2] == 3 && r.args[3] == 4);
	CU_ASSERT(sim_now(&eng) == SIM_TIME_MAX);
	sim_fini(&eng);
}

/*
 * Aside and background events. Two nodes, one a partition: node 0 sends
 * node 1 work at 2L; node 1 does it, and cut, also reports back to node
 * 0 a look-ahead later, an event one list has not (its handler calls
 * sim_aside). An observer in every partition ticks every 1000 ps, in the
 * background (eng->background), while anything else is pending (one
 * list) or always (cut: the run ends when only ticks are left). The cut
 * run's clock is the last event one list has too (2L), not the report's
 * (3L) nor a tick's.
 */
struct aside_model {
	uint32_t node[2], obs;
	uint64_t work, reports, ticks;
};

static void aside_node(struct sim_engine *eng, void *ctx, uint32_t arg)
{
	struct aside_model *m = ctx;

	if (arg == 2) {		/* the report */
		sim_aside(eng);
		m->reports++;
	} else if (arg == 0) {	/* node 0 starts */
		sim_schedule_at(eng, 2 * L, m->node[1], 1);
	} else {		/* node 1's work */
		m->work++;
		if (eng->par)
			sim_schedule_at(eng, eng->now + L, m->node[0], 2);
	}
}

static void aside_tick(struct sim_engine *eng, void *ctx, uint32_t arg)
{
	struct aside_model *m = ctx;

	(void)arg;
	sim_aside(eng);
	eng->background--;
	m->ticks++;
	if (eng->par || sim_pending(eng) > eng->background) {
		sim_schedule_at(eng, eng->now + 1000, m->obs, 0);
		eng->background++;
	}
}

static void aside_init(struct sim_engine *eng, struct aside_model *m)
{
	memset(m, 0, sizeof(*m));
	CU_ASSERT_FATAL(sim_init(eng) == 0);
	for (int i = 0; i < 2; i++)
		m->node[i] = (uint32_t)sim_register(eng, aside_node, m, "node");
	m->obs = (uint32_t)sim_register(eng, aside_tick, m, "observer");
	sim_schedule_at(eng, 0, m->node[0], 0);
	sim_schedule_at(eng, 0, m->obs, 0);
	eng->background++;
}

static uint32_t aside_owner(void *ctx, uint32_t comp)
{
	(void)ctx;
	return comp < 2 ? comp : SIM_PAR_EVERY;
}

static void test_par_aside(void)
{
	struct aside_model ref, m[2];
	struct sim_engine one, eng[2], *pe[2] = { &eng[0], &eng[1] };
	struct sim_par p;

	aside_init(&one, &ref);
	sim_run(&one);
	/* one list: ticks to the first after the work (9000) */
	CU_ASSERT(ref.work == 1 && ref.reports == 0 && ref.ticks == 10);
	CU_ASSERT_EQUAL(sim_now(&one), 9000);
	sim_fini(&one);
	for (int k = 0; k < 2; k++)
		aside_init(&eng[k], &m[k]);
	CU_ASSERT_FATAL(sim_par_init_replicas(&p, pe, 2, L, aside_owner, NULL) == 0);
	maybe_async(&p);
	CU_ASSERT(sim_par_run(&p) == 0);
	if (p.err)
		fprintf(stderr, "%s\n", p.why);
	/* ended once only ticks were left: past the report at 3L, not for ever */
	CU_ASSERT(m[0].work + m[1].work == 1 && m[0].reports + m[1].reports == 1);
	/* in windows every partition runs the same ticks; with null
	 * messages each runs them as far as its own end */
	if (!async_mode) {
		CU_ASSERT(m[0].ticks == m[1].ticks && m[0].ticks * 1000 > 3 * L);
		CU_ASSERT(m[0].ticks * 1000 < 5 * L);
	}
	CU_ASSERT_EQUAL(p.part[0].main_now, 0);	/* node 0's start; the report is aside */
	CU_ASSERT_EQUAL(p.part[1].main_now, 2 * L);
	CU_ASSERT_EQUAL(sim_now(&eng[0]), 2 * L);	/* the run's clock */
	sim_par_fini(&p);
	for (int k = 0; k < 2; k++)
		sim_fini(&eng[k]);
}

/* The cases above again, with null messages instead of windows. */
static void with_async(void (*fn)(void))
{
	async_mode = true;
	fn();
	async_mode = false;
}

static void test_async_same(void) { with_async(test_par_same_as_one_list); }
static void test_async_ties(void) { with_async(test_par_ties); }
static void test_async_stop(void) { with_async(test_par_stop); }
static void test_async_hook(void) { with_async(test_par_hook); }
static void test_async_replicas(void) { with_async(test_par_replicas); }
static void test_async_every(void) { with_async(test_par_every); }
static void test_async_aside(void) { with_async(test_par_aside); }
static void test_async_refused(void) { with_async(test_par_lookahead_refused); }

static const struct test_case tests[] = {
	{ "a stop's lag: the events before now + lag run, the rest wait", test_par_lag },
	{ "1-4 partitions, three cuts: the same events in the same order as one list",
	  test_par_same_as_one_list },
	{ "the model is made of ties", test_par_ties },
	{ "a stop with the look-ahead as its lag ends every cut at the same event", test_par_stop },
	{ "a message under the look-ahead is refused, named", test_par_lookahead_refused },
	{ "a stop only all partitions' counts show, made by the model's hook", test_par_hook },
	{ "the model built once a partition: the one list's events", test_par_replicas },
	{ "a component of every partition hears what one list's hears", test_par_every },
	{ "aside and background events: the run ends and its clock stops as one list's",
	  test_par_aside },
	{ "null messages: the same events in the same order as one list", test_async_same },
	{ "null messages: ties", test_async_ties },
	{ "null messages: a stop ends every cut at the same event", test_async_stop },
	{ "null messages: the hook's stop", test_async_hook },
	{ "null messages: a model built once a partition", test_async_replicas },
	{ "null messages: a component of every partition", test_async_every },
	{ "null messages: aside and background events", test_async_aside },
	{ "null messages: a message under the look-ahead is refused", test_async_refused },
	{ NULL, NULL },
};

TEST_MAIN("par", tests)
