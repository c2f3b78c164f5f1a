/* SPDX-License-Identifier: MIT */
/*
 * sim_engine.c - the future-event list and the dispatch loop.
 *
 * The list is a calendar queue (R. Brown, CACM 31(10), 1988) over a sliding
 * window: SIM_CAL_N buckets of 2048 ps cover the next 4.2 us; a bucket
 * takes its events in chunks of eight, as they come, until the window
 * reaches it; then they move into one array, sorted in (time, at, seq)
 * order, from which they are taken; a bitmap finds the next non-empty
 * bucket; events beyond the window wait outside it and move into the
 * buckets as the window slides over them: in a ring when they come in
 * order (an HCA's next post, far ahead), else in a 4-ary heap. Why: a fabric schedules almost
 * every event 65-262 ns ahead (a packet's serialisation, a cable plus a
 * switch pipeline: measured on the 128-rank ring allreduce, 99.8% of
 * events), so they land in buckets, usually at the tail (an append), and
 * the next one is a few bits further in the bitmap: O(1) per event where
 * the heap it replaces sifted through log4(600) levels of 24-byte records
 * (26% of all instructions of that run). Timers far ahead (ACK timeouts,
 * RTOs) take the heap path and cost what they did.
 *
 * Order is one total order, (time, at, seq), whatever the structure
 * (tests/unit/test_sim.c compares it with the heap on random schedules).
 * A bucket the window has not reached yet takes events as they come, at
 * its tail, and is sorted once when the window reaches it (cal_load,
 * cal_sort); the window's own bucket keeps its array sorted as events come.
 * Events at one time fire in the order of the simulated time they were
 * scheduled at (at), and those scheduled at one instant by the component
 * that scheduled them (seq's high half, lowest id first), each in the
 * order it scheduled them (the low half: a count of the schedules at this
 * instant, which keeps one component's in order and is compared with no
 * other component's). A global counter of schedules
 * (this engine's order before) would depend on how every component's
 * events interleave; this order depends only on each component's own
 * history, so an engine cut into partitions serves every component the
 * same events in the same order as one list. `at` keeps the order of
 * scheduling wherever simulated time tells it: only ties of both times
 * go by component.
 *
 * The 4-ary heap stays for the overflow and for components' own queues:
 * with 32-byte records four children span two cache lines, and the tree
 * is half as deep as a binary heap.
 */
#include "sim/sim.h"
#include "sim/sim_mem.h"
#include "sim/sim_par.h"

#include <stdlib.h>
#include <string.h>

static inline bool ev_less(const struct sim_event *a, const struct sim_event *b)
{
	return a->time < b->time ||
	       (a->time == b->time && (a->at < b->at || (a->at == b->at && a->seq < b->seq)));
}

void sim_heap_init(struct sim_heap *h)
{
	memset(h, 0, sizeof(*h));
}

void sim_heap_free(struct sim_heap *h)
{
	free(h->ev);
	memset(h, 0, sizeof(*h));
}

int sim_heap_push(struct sim_heap *h, const struct sim_event *e)
{
	if (h->n == h->cap) {
		/* from 16: every HCA has a heap of timers that holds a few, and
		 * 256 each were 12 MB on 1,024 hosts */
		size_t cap = h->cap ? h->cap * 2 : 16;
		struct sim_event *nev = sim_mem_realloc(h->ev, cap * sizeof(*nev));

		if (!nev)
			return -1;
		h->ev = nev;
		h->cap = cap;
	}
	size_t i = h->n++;

	while (i > 0) {
		size_t parent = (i - 1) / 4;

		if (!ev_less(e, &h->ev[parent]))
			break;
		h->ev[i] = h->ev[parent];
		i = parent;
	}
	h->ev[i] = *e;
	return 0;
}

bool sim_heap_pop(struct sim_heap *h, struct sim_event *out)
{
	if (!h->n)
		return false;
	*out = h->ev[0];
	struct sim_event last = h->ev[--h->n];
	size_t n = h->n, i = 0;

	if (!n)
		return true;
	for (;;) {
		size_t c = 4 * i + 1, best;

		if (c >= n)
			break;
		best = c;
		if (c + 4 <= n) {
			/* all four children: straight-line compares, no loop */
			if (ev_less(&h->ev[c + 1], &h->ev[best]))
				best = c + 1;
			if (ev_less(&h->ev[c + 2], &h->ev[best]))
				best = c + 2;
			if (ev_less(&h->ev[c + 3], &h->ev[best]))
				best = c + 3;
		} else {
			for (size_t j = c + 1; j < n; j++)
				if (ev_less(&h->ev[j], &h->ev[best]))
					best = j;
		}
		if (!ev_less(&h->ev[best], &last))
			break;
		h->ev[i] = h->ev[best];
		i = best;
	}
	h->ev[i] = last;
	return true;
}

/* ---- the calendar --------------------------------------------------------- */

#define CAL_NIL UINT32_MAX
#define CAL_MASK (SIM_CAL_N - 1)
#define CAL_NONE UINT64_MAX

static int cal_init(struct sim_cal *c)
{
	memset(c, 0, sizeof(*c));
	c->bucket = malloc(SIM_CAL_N * sizeof(*c->bucket));
	c->bits = calloc(SIM_CAL_N / 64, sizeof(*c->bits));
	c->free = c->after = CAL_NIL;
	c->far_bucket = UINT64_MAX;
	c->loaded = CAL_NONE;
	sim_heap_init(&c->over);
	if (!c->bucket || !c->bits)
		return -1;
	for (uint32_t i = 0; i < SIM_CAL_N; i++)
		c->bucket[i] = (struct sim_cal_bucket){ .head = CAL_NIL, .tail = CAL_NIL };
	return 0;
}

static void cal_fini(struct sim_cal *c)
{
	free(c->far);
	free(c->chunk);
	free(c->chunk_next);
	free(c->v);
	free(c->tmp);
	free(c->runs);
	free(c->bucket);
	free(c->bits);
	sim_heap_free(&c->over);
	memset(c, 0, sizeof(*c));
}

static inline bool node_less(const struct sim_cal_node *a, sim_time_t t, sim_time_t at,
			     uint64_t seq)
{
	return a->time < t || (a->time == t && (a->at < at || (a->at == at && a->seq < seq)));
}

/* The chunk pool is empty: double it (line-aligned, so that a chunk is
 * four whole lines). */
static __attribute__((noinline, cold)) int cal_grow(struct sim_cal *c)
{
	uint32_t cap = c->chunks ? c->chunks * 2 : 256;
	size_t bytes = (size_t)cap * SIM_CAL_CHUNK * sizeof(struct sim_cal_node);
	struct sim_cal_node *nv;
	uint32_t *nn;

	if (cap < c->chunks || !(nv = aligned_alloc(64, bytes)))
		return -1;
	nn = realloc(c->chunk_next, cap * sizeof(*nn));
	if (!nn) {
		free(nv);
		return -1;
	}
	if (c->chunks)
		memcpy(nv, c->chunk, (size_t)c->chunks * SIM_CAL_CHUNK * sizeof(*nv));
	free(c->chunk);
	c->chunk = nv;
	c->chunk_next = nn;
	/* Thread the new chunks onto the free list, lowest index first. */
	for (uint32_t i = cap; i-- > c->chunks;) {
		nn[i] = c->free;
		c->free = i;
	}
	c->chunks = cap;
	return 0;
}

/* A chunk off the free list, the last of its chain (CAL_NIL: no memory). */
static inline uint32_t chunk_take(struct sim_cal *c)
{
	uint32_t i;

	if (__builtin_expect(c->free == CAL_NIL, 0) && cal_grow(c))
		return CAL_NIL;
	i = c->free;
	c->free = c->chunk_next[i];
	c->chunk_next[i] = CAL_NIL;
	return i;
}

/* Room for n events in the window's bucket array (and the sort's). */
static __attribute__((noinline, cold)) int cal_vgrow(struct sim_cal *c, uint32_t n)
{
	uint32_t cap = c->vcap ? c->vcap : 64;
	struct sim_cal_node *v, *t;
	uint32_t *r;

	while (cap < n) {
		if (cap > UINT32_MAX / 4)
			return -1;
		cap *= 2;
	}
	v = realloc(c->v, cap * sizeof(*v));
	if (v)
		c->v = v;
	t = realloc(c->tmp, cap * sizeof(*t));
	if (t)
		c->tmp = t;
	r = realloc(c->runs, (cap + 1) * sizeof(*r));
	if (r)
		c->runs = r;
	if (!v || !t || !r)
		return -1;
	c->vcap = cap;
	return 0;
}

/*
 * Insert into the window's bucket, kept sorted: before the first event
 * that does not come before it (of equal keys the later scheduled first),
 * moving the shorter side - the events before it down into the room the
 * popped ones left, or those after it up. Most inserts here are due now
 * and go before nearly everything still in the bucket, or after all of it.
 */
static __attribute__((noinline)) int cal_insert_loaded(struct sim_cal *c, sim_time_t t,
						       sim_time_t at, uint64_t seq, uint32_t comp,
						       uint32_t arg)
{
	const struct sim_cal_node x = { t, at, seq, comp, arg };
	uint32_t lo = c->head, hi = c->end;

	if (lo == hi) {
		/* empty: from the start, the bucket's bit set again */
		uint32_t b = (uint32_t)c->loaded & CAL_MASK;

		c->bits[b >> 6] |= 1ULL << (b & 63);
		lo = hi = c->head = c->end = 0;
	}
	if (lo == hi || node_less(&c->v[hi - 1], t, at, seq)) {
		lo = hi;	/* after everything in it */
	} else {
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;

			if (node_less(&c->v[mid], t, at, seq))
				lo = mid + 1;
			else
				hi = mid;
		}
		if (c->head && (lo - c->head < c->end - lo || c->end == c->vcap)) {
			memmove(&c->v[c->head - 1], &c->v[c->head], (lo - c->head) * sizeof(x));
			c->head--;
			c->v[lo - 1] = x;
			c->nb++;
			return 0;
		}
	}
	if (c->end == c->vcap && c->head) {
		/* full at its end: the room the popped events left, first */
		memmove(c->v, &c->v[c->head], (c->end - c->head) * sizeof(x));
		lo -= c->head;
		c->end -= c->head;
		c->head = 0;
	} else if (c->end == c->vcap && cal_vgrow(c, c->vcap + 1)) {
		return -1;
	}
	memmove(&c->v[lo + 1], &c->v[lo], (c->end - lo) * sizeof(x));
	c->end++;
	c->v[lo] = x;
	c->nb++;
	return 0;
}

/*
 * Put an event into its bucket (inside the window). Inline: nearly every
 * event of a fabric is an append to a later bucket, a dozen instructions;
 * one due in the window's own bucket is a call.
 */
static inline int cal_insert_in(struct sim_cal *c, uint64_t a, sim_time_t t, sim_time_t at,
				uint64_t seq, uint32_t comp, uint32_t arg)
{
	uint32_t b = (uint32_t)a & CAL_MASK;
	struct sim_cal_bucket *k = &c->bucket[b];
	struct sim_cal_node *x;

	if (a == c->loaded)
		return cal_insert_loaded(c, t, at, seq, comp, arg);
	uint32_t slot = k->n % SIM_CAL_CHUNK;

	bool earliest = true;

	if (!k->n) {
		if ((k->head = k->tail = chunk_take(c)) == CAL_NIL)
			return -1;
		c->bits[b >> 6] |= 1ULL << (b & 63);
	} else {
		/* in order while each comes after the one before */
		const struct sim_cal_node *last =
			&c->chunk[(size_t)k->tail * SIM_CAL_CHUNK + (slot ? slot : SIM_CAL_CHUNK) - 1];

		earliest = false;
		if (!node_less(last, t, at, seq)) {
			k->unsorted = 1;
			earliest = !node_less(&c->chunk[k->min], t, at, seq);
		}
		if (!slot) {
			uint32_t i = chunk_take(c);

			if (i == CAL_NIL)
				return -1;
			c->chunk_next[k->tail] = i;
			k->tail = i;
		}
	}
	if (earliest)
		k->min = k->tail * SIM_CAL_CHUNK + slot;
	x = &c->chunk[(size_t)k->tail * SIM_CAL_CHUNK + slot];
	x->time = t;
	x->at = at;
	x->seq = seq;
	x->comp = comp;
	x->arg = arg;
	k->n++;
	c->nb++;
	return 0;
}

/* Its bucket by its time (the engine's events: never before the window). */
static inline int cal_insert(struct sim_cal *c, sim_time_t t, sim_time_t at, uint64_t seq,
			     uint32_t comp, uint32_t arg)
{
	return cal_insert_in(c, t >> SIM_CAL_SHIFT, t, at, seq, comp, arg);
}

/* Merge the sorted runs a[i..m) and a[m..e) into o[i..e); of equal keys
 * the right run's first (it was scheduled later). */
static void cal_merge(const struct sim_cal_node *a, uint32_t i, uint32_t m, uint32_t e,
		      struct sim_cal_node *o)
{
	uint32_t l = i, r = m, w = i;

	while (l < m && r < e) {
		if (node_less(&a[l], a[r].time, a[r].at, a[r].seq))
			o[w++] = a[l++];
		else
			o[w++] = a[r++];
	}
	memcpy(&o[w], &a[l], (m - l) * sizeof(*o));
	w += m - l;
	memcpy(&o[w], &a[r], (e - r) * sizeof(*o));
}

/*
 * Sort a[0..n) (o: room for n), filled out of order: its strictly
 * ascending runs, merged by pairs of neighbours until one is left; the
 * result in *pa, the other array in *po. Runs break at equal keys and only
 * neighbours merge, the left one scheduled before the right: so of equal
 * keys the later scheduled comes first, as an insert goes before its
 * equals.
 */
static void cal_runs_sort(struct sim_cal_node **pa, struct sim_cal_node **po, uint32_t *r,
			  uint32_t n)
{
	struct sim_cal_node *a = *pa, *o = *po;
	uint32_t nr = 1;

	r[0] = 0;
	for (uint32_t i = 1; i < n; i++)
		if (!node_less(&a[i - 1], a[i].time, a[i].at, a[i].seq))
			r[nr++] = i;
	r[nr] = n;
	while (nr > 1) {
		uint32_t k = 0, j = 0;

		for (; j + 1 < nr; j += 2) {
			cal_merge(a, r[j], r[j + 1], r[j + 2], o);
			r[k++] = r[j];
		}
		if (j < nr) {
			memcpy(&o[r[j]], &a[r[j]], (n - r[j]) * sizeof(*o));
			r[k++] = r[j];
		}
		r[k] = n;
		nr = k;
		struct sim_cal_node *x = a;

		a = o;
		o = x;
	}
	*pa = a;
	*po = o;
}

/* Bits of a bucket's time span that cal_sort's two counting passes take. */
#define CAL_RADIX_BITS	6
#define CAL_RADIX	(1u << CAL_RADIX_BITS)

/*
 * Sort v[0..n), filled out of order. Why not insert each in place: where
 * thousands of hosts move in step, hundreds of events share one time and
 * one scheduling instant, and the handlers that schedule them run in the
 * order of their own events, not in the order of their ids that breaks
 * such ties (inserting each in place was 71% of the 8,192-host
 * permutation's time). A bucket's times lie within its 2^SIM_CAL_SHIFT
 * ps: two stable counting passes over 6 bits each put them in time order
 * (128 DGX H100-like servers' sorted buckets hold 77 events in 11
 * ascending runs on average, whose merge took 3.4 passes), and only the
 * events of one time that did not come in (at, seq) order are sorted
 * among themselves as the runs' merge sorts them - the order, ties
 * included, is the merge's of the whole bucket. A bucket holding an event
 * from before the window (cal_insert_in takes those into its first
 * bucket) may span more than the passes cover: the merge sorts it.
 */
static __attribute__((noinline)) void cal_sort(struct sim_cal *c, uint32_t n)
{
	struct sim_cal_node *a = c->v, *o = c->tmp;
	sim_time_t lo = a[0].time, hi = a[0].time;
	uint32_t h1[CAL_RADIX] = { 0 }, h2[CAL_RADIX] = { 0 };

	for (uint32_t i = 1; i < n; i++) {
		lo = a[i].time < lo ? a[i].time : lo;
		hi = a[i].time > hi ? a[i].time : hi;
	}
	if (hi - lo >= (sim_time_t)CAL_RADIX * CAL_RADIX) {
		cal_runs_sort(&c->v, &c->tmp, c->runs, n);
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		const uint32_t d = (uint32_t)(a[i].time - lo);

		h1[d & (CAL_RADIX - 1)]++;
		h2[d >> CAL_RADIX_BITS]++;
	}
	for (uint32_t k = 0, s1 = 0, s2 = 0; k < CAL_RADIX; k++) {
		const uint32_t x1 = h1[k], x2 = h2[k];

		h1[k] = s1;
		h2[k] = s2;
		s1 += x1;
		s2 += x2;
	}
	for (uint32_t i = 0; i < n; i++)
		o[h1[(uint32_t)(a[i].time - lo) & (CAL_RADIX - 1)]++] = a[i];
	for (uint32_t i = 0; i < n; i++)
		a[h2[(uint32_t)(o[i].time - lo) >> CAL_RADIX_BITS]++] = o[i];
	/* one time's events in (at, seq) order */
	for (uint32_t g = 0, e; g < n; g = e) {
		bool in_order = true;

		for (e = g + 1; e < n && a[e].time == a[g].time; e++)
			if (!node_less(&a[e - 1], a[e].time, a[e].at, a[e].seq))
				in_order = false;
		if (!in_order) {
			struct sim_cal_node *x = a + g, *y = o + g;

			cal_runs_sort(&x, &y, c->runs, e - g);
			if (x != a + g)
				memcpy(a + g, x, (e - g) * sizeof(*a));
		}
	}
}

/*
 * The window reaches bucket b (absolute number a): its events into the
 * array, in the order they came, sorted if they came out of order, and its
 * chunks back to the pool. Why chunks and one array, not a list of nodes
 * in a pool: on a fabric of a thousand nodes and more, the nodes of one
 * bucket were scattered over the pool and written a hundred nanoseconds
 * of simulated time (thousands of events) before the window got there, so
 * walking the list to sort it missed the cache at every node, one after
 * another (the 1,024-GPU allreduce: 10% of its time). Chunks are four
 * lines each, asked for all at once before they are read.
 * The array is empty whenever another bucket is loaded: one is loaded only
 * to take its first event, which makes it the window's start, and the
 * window's start is where cal_first begins, so no bucket comes before it
 * while it holds events.
 */
static __attribute__((noinline)) int cal_load(struct sim_cal *c, uint32_t b, uint64_t a)
{
	struct sim_cal_bucket *k = &c->bucket[b];
	uint32_t n = k->n, w = 0;

	if (n > c->vcap && cal_vgrow(c, n))
		return -1;
	for (uint32_t i = k->head; i != CAL_NIL; i = c->chunk_next[i]) {
		const char *p = (const char *)&c->chunk[(size_t)i * SIM_CAL_CHUNK];

		for (uint32_t l = 0; l < SIM_CAL_CHUNK * sizeof(struct sim_cal_node); l += SIM_LINE)
			__builtin_prefetch(p + l);
	}
	for (uint32_t i = k->head; i != CAL_NIL; i = c->chunk_next[i]) {
		uint32_t m = n - w < SIM_CAL_CHUNK ? n - w : SIM_CAL_CHUNK;

		memcpy(&c->v[w], &c->chunk[(size_t)i * SIM_CAL_CHUNK], m * sizeof(*c->v));
		w += m;
	}
	c->chunk_next[k->tail] = c->free;	/* the chain onto the free list */
	c->free = k->head;
	if (k->unsorted)
		cal_sort(c, n);
	*k = (struct sim_cal_bucket){ .head = CAL_NIL, .tail = CAL_NIL };
	c->head = 0;
	c->end = n;
	c->loaded = a;
	return 0;
}

/* The first event of bucket b (absolute number a, not empty) without
 * loading it (a peek, or a bounded pop that may not take it). */
static const struct sim_cal_node *cal_front(const struct sim_cal *c, uint32_t b, uint64_t a)
{
	if (a == c->loaded)
		return &c->v[c->head];
	return &c->chunk[c->bucket[b].min];
}

/* Its earliest time (for peeks and bounded pops). */
static sim_time_t cal_min(const struct sim_cal *c, uint32_t b, uint64_t a)
{
	return cal_front(c, b, a)->time;
}

/* ---- the far events: a ring for those in order, a heap for the rest ---- */

static inline const struct sim_event *far_front(const struct sim_cal *c)
{
	return c->far_n ? &c->far[c->far_head] : NULL;
}

/* The earliest far event, or NULL. */
static inline const struct sim_event *far_top(const struct sim_cal *c)
{
	const struct sim_event *r = far_front(c), *h = sim_heap_top(&c->over);

	if (!r)
		return h;
	return h && ev_less(h, r) ? h : r;
}

/* Remove the earliest far event (there is one). far_bucket is the
 * caller's to set again (cal_migrate_slow, when it has moved them all). */
static void far_pop(struct sim_cal *c)
{
	const struct sim_event *r = far_front(c), *h = sim_heap_top(&c->over);

	if (r && !(h && ev_less(h, r))) {
		c->far_head = (c->far_head + 1) & (c->far_cap - 1);
		c->far_n--;
	} else {
		struct sim_event e;

		sim_heap_pop(&c->over, &e);
	}
	c->nfar--;
}

static int far_push_heap(struct sim_cal *c, const struct sim_event *e)
{
	if (sim_heap_push(&c->over, e))
		return -1;
	c->nfar++;
	return 0;
}

/*
 * A far event: at the ring's end when it comes after the ring's last, so
 * that in-order far events cost an append and a read, not a heap's sift
 * down and up (on B1 one a message: 1.9% of its instructions); else into
 * the heap. Either way the next far event is the earlier front (far_top),
 * so the order is the same total order.
 */
static int far_push(struct sim_cal *c, const struct sim_event *e)
{
	if ((e->time >> SIM_CAL_SHIFT) < c->far_bucket)
		c->far_bucket = e->time >> SIM_CAL_SHIFT;
	if (c->far_n && ev_less(e, &c->far[(c->far_head + c->far_n - 1) & (c->far_cap - 1)]))
		return far_push_heap(c, e);
	if (c->far_n == c->far_cap) {
		uint32_t cap = c->far_cap ? c->far_cap * 2 : 64;
		struct sim_event *nf = malloc(cap * sizeof(*nf));

		if (!nf || cap < c->far_cap) {	/* out of memory, or 2^31 events */
			free(nf);
			return far_push_heap(c, e);	/* the heap keeps the order too */
		}
		for (uint32_t k = 0; k < c->far_n; k++)	/* unwrap into the new ring */
			nf[k] = c->far[(c->far_head + k) & (c->far_cap - 1)];
		free(c->far);
		c->far = nf;
		c->far_head = 0;
		c->far_cap = cap;
	}
	c->far[(c->far_head + c->far_n++) & (c->far_cap - 1)] = *e;
	c->nfar++;
	return 0;
}

/* Move the far events the window now covers into their buckets. */
static __attribute__((noinline)) int cal_migrate_slow(struct sim_cal *c)
{
	const struct sim_event *top;

	while ((top = far_top(c)) && (top->time >> SIM_CAL_SHIFT) < c->cur + SIM_CAL_N) {
		/* Insert first: out of memory leaves the event where it was. */
		if (cal_insert(c, top->time, top->at, top->seq, top->comp, top->arg))
			return -1;
		far_pop(c);
	}
	/* the earliest left: beyond the window, or none */
	c->far_bucket = top ? top->time >> SIM_CAL_SHIFT : UINT64_MAX;
	return 0;
}

/* The same, after the window moved: usually nothing is due (a compare). */
static inline int cal_migrate(struct sim_cal *c)
{
	if (c->far_bucket >= c->cur + SIM_CAL_N)
		return 0;
	return cal_migrate_slow(c);
}

/* The first non-empty bucket, scanning the window from its start. */
static uint32_t cal_first(const struct sim_cal *c)
{
	uint32_t b = (uint32_t)c->cur & CAL_MASK;
	uint32_t w = b >> 6;
	uint64_t word = c->bits[w] & (~0ULL << (b & 63));

	for (uint32_t k = 0; k <= SIM_CAL_N / 64; k++) {
		if (word)
			return (w << 6) + (uint32_t)__builtin_ctzll(word);
		w = (w + 1) & (SIM_CAL_N / 64 - 1);
		word = c->bits[w];
	}
	return CAL_NIL;	/* not reached while nb > 0 */
}

/*
 * The next event into *out, unless there is none or it lies after last
 * (false either way, the list untouched: its window must not move past
 * events still to come, such as another partition's messages).
 */
static inline bool cal_pop(struct sim_cal *c, struct sim_event *out, sim_time_t last)
{
	if (!c->nb) {
		const struct sim_event *top = far_top(c);

		if (!top || top->time > last)
			return false;
		/* Nothing in the window: jump it to the earliest far event. */
		c->cur = top->time >> SIM_CAL_SHIFT;
		if (cal_migrate(c) || !c->nb) {
			c->oom = true;
			return false;
		}
	}
	uint32_t b = cal_first(c);
	uint64_t a = c->cur + ((b - (uint32_t)c->cur) & CAL_MASK);

	if (a != c->loaded) {
		struct sim_cal_bucket *k = &c->bucket[b];

		/* a bucket a bounded run may end inside: loaded only when its
		 * first event is to be taken (an event comes before no other
		 * in the bucket the window is at: sim_par, sim_peek_time) */
		if (__builtin_expect(((a + 1) << SIM_CAL_SHIFT) - 1 > last, 0) &&
		    cal_min(c, b, a) > last)
			return false;
		if (k->n == 1) {
			/* alone in its bucket (sparse events: bench/run's B1),
			 * taken from its chunk */
			const struct sim_cal_node *x = &c->chunk[(size_t)k->head * SIM_CAL_CHUNK];

			*out = (struct sim_event){ .time = x->time, .at = x->at, .seq = x->seq,
						   .comp = x->comp, .arg = x->arg };
			c->chunk_next[k->head] = c->free;
			c->free = k->head;
			*k = (struct sim_cal_bucket){ .head = CAL_NIL, .tail = CAL_NIL };
			c->bits[b >> 6] &= ~(1ULL << (b & 63));
			c->after = CAL_NIL;
			c->nb--;
			goto taken;
		}
		if (cal_load(c, b, a)) {
			c->oom = true;
			return false;
		}
	}
	const struct sim_cal_node *x = &c->v[c->head];

	if (__builtin_expect(x->time > last, 0))
		return false;
	*out = (struct sim_event){ .time = x->time, .at = x->at, .seq = x->seq, .comp = x->comp,
				   .arg = x->arg };
	if (++c->head == c->end) {
		c->head = c->end = 0;
		c->bits[b >> 6] &= ~(1ULL << (b & 63));
		c->after = CAL_NIL;
	} else {
		c->after = c->head;
	}
	c->nb--;
taken:
	a = out->time >> SIM_CAL_SHIFT;
	if (a > c->cur) {	/* (an event due before it, sim_cal_push: the window stays) */
		c->cur = a;
		if (cal_migrate(c))
			c->oom = true;	/* the run stops after this event (sim_step) */
	}
	return true;
}

bool sim_peek_time(struct sim_engine *eng, sim_time_t *t)
{
	return sim_cal_peek(&eng->cal, t);
}

int sim_cal_init(struct sim_cal *c)
{
	if (cal_init(c)) {
		cal_fini(c);
		return -1;
	}
	return 0;
}

void sim_cal_fini(struct sim_cal *c)
{
	cal_fini(c);
}

int sim_cal_push(struct sim_cal *c, const struct sim_event *e)
{
	uint64_t a = e->time >> SIM_CAL_SHIFT;

	if (a >= c->cur + SIM_CAL_N)
		return far_push(c, e);
	/* before the bucket of the last taken (a component's event may be due
	 * in the past, as on a heap): into that bucket, where it sorts first */
	return cal_insert_in(c, a < c->cur ? c->cur : a, e->time, e->at, e->seq, e->comp, e->arg);
}

bool sim_cal_pop(struct sim_cal *c, struct sim_event *out, sim_time_t last)
{
	return cal_pop(c, out, last);
}

bool sim_cal_peek(struct sim_cal *c, sim_time_t *t)
{
	if (c->nb) {
		uint32_t b = cal_first(c);

		*t = cal_min(c, b, c->cur + ((b - (uint32_t)c->cur) & CAL_MASK));
		return true;
	}
	const struct sim_event *far = far_top(c);

	if (far) {
		*t = far->time;
		return true;
	}
	return false;
}

bool sim_cal_peek_event(struct sim_cal *c, struct sim_event *e)
{
	if (c->nb) {
		const uint32_t b = cal_first(c);
		const struct sim_cal_node *x =
			cal_front(c, b, c->cur + ((b - (uint32_t)c->cur) & CAL_MASK));

		*e = (struct sim_event){ .time = x->time, .at = x->at, .seq = x->seq, .comp = x->comp,
					 .arg = x->arg };
		return true;
	}
	const struct sim_event *far = far_top(c);

	if (far) {
		*e = *far;
		return true;
	}
	return false;
}

int sim_init(struct sim_engine *eng)
{
	memset(eng, 0, sizeof(*eng));
	eng->stop_at = eng->stop_req = SIM_TIME_MAX;
	if (cal_init(&eng->cal)) {
		cal_fini(&eng->cal);
		return -1;
	}
	return 0;
}

void sim_fini(struct sim_engine *eng)
{
	cal_fini(&eng->cal);
	free(eng->comps);
	memset(eng, 0, sizeof(*eng));
}

int sim_register(struct sim_engine *eng, sim_handler_fn fn, void *ctx,
		 const char *name)
{
	if (eng->ncomps == SIM_COMP_RANGE)
		return -1;	/* the id would read as a range's */
	if (eng->ncomps == eng->comps_cap) {
		uint32_t cap = eng->comps_cap ? eng->comps_cap * 2 : 64;
		struct sim_component *nc = realloc(eng->comps, cap * sizeof(*nc));

		if (!nc)
			return -1;
		eng->comps = nc;
		eng->comps_cap = cap;
	}
	eng->comps[eng->ncomps] = (struct sim_component){ fn, ctx, name, NULL, NULL };
	return (int)eng->ncomps++;
}

int sim_register_range(struct sim_engine *eng, sim_handler_fn fn, void *base, size_t stride,
		       uint32_t n, const char *name)
{
	if (eng->nranges == SIM_MAX_RANGES || n >= 1u << 24)
		return -1;
	eng->ranges[eng->nranges] = (struct sim_comp_range){ .fn = fn, .base = base,
							     .stride = stride, .name = name,
							     .n = n };
	if ((size_t)n * stride >= SIM_PREFETCH_BYTES)
		eng->prefetch = true;
	return (int)(SIM_COMP_RANGE | eng->nranges++ << 24);
}

static inline void note_pending(struct sim_engine *eng)
{
	if (sim_pending(eng) > eng->heap_high)
		eng->heap_high = sim_pending(eng);
}

/* An event beyond the window: to the far events. Out of line, so that the
 * usual insert into a bucket builds no event record on the stack. */
static __attribute__((noinline)) int schedule_far(struct sim_engine *eng, sim_time_t t,
						  sim_time_t at, uint64_t seq, uint32_t comp,
						  uint32_t arg)
{
	struct sim_event e = { .time = t, .at = at, .seq = seq, .comp = comp, .arg = arg };

	if (far_push(&eng->cal, &e))
		return -1;
	note_pending(eng);
	return 0;
}

/* The key's second half for an event scheduled now (sim.h, struct sim_event). */
static inline uint64_t next_seq(struct sim_engine *eng)
{
	return eng->key++;	/* src << 32 | nth, and nth + 1 (nth stays below 2^32) */
}

int sim_schedule_at(struct sim_engine *eng, sim_time_t t, uint32_t comp,
		    uint32_t arg)
{
	struct sim_cal *c = &eng->cal;
	uint64_t seq = next_seq(eng);

	if (t < eng->now)
		t = eng->now;
	if (__builtin_expect(eng->par != NULL, 0) && sim_owner(eng, comp) != eng->part) {
		struct sim_event e = { .time = t, .at = eng->now, .seq = seq, .comp = comp, .arg = arg };

		return sim_par_send(eng, &e);
	}
	if ((t >> SIM_CAL_SHIFT) >= c->cur + SIM_CAL_N)
		return schedule_far(eng, t, eng->now, seq, comp, arg);
	if (cal_insert(c, t, eng->now, seq, comp, arg))
		return -1;
	note_pending(eng);
	return 0;
}

int sim_schedule_every(struct sim_engine *eng, sim_time_t t, uint32_t comp, uint32_t arg)
{
	struct sim_event e = { .time = t < eng->now ? eng->now : t, .at = eng->now,
			       .seq = next_seq(eng), .comp = comp, .arg = arg };

	if (sim_insert(eng, &e))
		return -1;
	for (uint32_t q = 0; eng->par && q < eng->par->n; q++)
		if (q != eng->part && sim_par_send_to(eng, q, &e))
			return -1;
	return 0;
}

/*
 * On a fabric of thousands of ports nearly every event's component (its
 * port) is a miss all the way to memory, and the handler stalls on a chain
 * of them: the port's first line, then the packet and the peer port it
 * names, then what those name. The next events are very likely the nodes
 * after this one in its bucket (on the 8,192-host tree about 200 events
 * share a bucket of 1 ns), so the engine runs a pipeline, one stage an event:
 *
 *   event + 2: its component's first two lines (its id is in its node,
 *              in the window's array with this one's), and what its
 *              argument names (the range's early hook: a packet);
 *   event + 1: the range's hook (sim_range_prefetch) reads those lines,
 *              asked for one event ago, and asks for the lines they name
 *              (the QP a packet is for, which only the packet says).
 *
 * Each wait overlaps one whole event's handler instead of stalling the
 * next. Only prefetches: an event inserted in between only makes one
 * of them early or wasted. Only when a range outgrows the caches: below
 * that the lines are there already and the hints cost instructions.
 * Paired with a one-line prefetch (concurrent runs, user time): 8,192
 * hosts 0.87-0.90, 1,024 hosts (where it was off) 0.93. The second line
 * is the hook's: a port keeps its hints there, and a hook that read it
 * uncached stalled as the handler would have (the 8,192-host shift: 0.87
 * of the CPU with it, faster in 8 pairs of 8).
 */
static inline const struct sim_comp_range *comp_range(const struct sim_engine *eng, uint32_t comp)
{
	return &eng->ranges[(comp >> 24) & 0x3f];
}

/* The element of its range that component id comp (SIM_COMP_RANGE set) is. */
static inline char *range_elem(const struct sim_comp_range *r, uint32_t comp)
{
	return r->base + (size_t)(comp & 0xffffff) * r->stride;
}

void sim_range_prefetch(struct sim_engine *eng, uint32_t comp, sim_prefetch_fn pf)
{
	eng->ranges[(comp >> 24) & 0x3f].pf = pf;
}

void sim_range_prefetch_early(struct sim_engine *eng, uint32_t comp, sim_prefetch_early_fn fn,
			      const void *range_ctx)
{
	eng->ranges[(comp >> 24) & 0x3f].pfe = fn;
	eng->ranges[(comp >> 24) & 0x3f].pfe_ctx = range_ctx;
}

void sim_range_import(struct sim_engine *eng, uint32_t comp, sim_import_fn fn)
{
	eng->ranges[(comp >> 24) & 0x3f].import = fn;
}

int sim_schedule_copy(struct sim_engine *eng, sim_time_t t, uint32_t comp, uint32_t arg,
		      const void *data, uint32_t len)
{
	const struct sim_comp_range *r = comp_range(eng, comp);

	if (!(comp & SIM_COMP_RANGE) || !r->import || len > SIM_COPY_MAX)
		return -1;
	if (sim_local(eng, comp))
		return sim_schedule_at(eng, t, comp, r->import(range_elem(r, comp), arg, data, len));
	if (t < eng->now)
		t = eng->now;
	struct sim_event e = { .time = t, .at = eng->now, .seq = next_seq(eng), .comp = comp,
			       .arg = arg };

	return sim_par_send_copy(eng, &e, data, len);
}

static inline __attribute__((always_inline)) void prefetch_next(const struct sim_engine *eng, uint32_t a1)
{
	const struct sim_cal *c = &eng->cal;
	const struct sim_cal_node *n1 = &c->v[a1];

	if (a1 + 1 < c->end) {
		const struct sim_cal_node *n2 = n1 + 1;

		if (n2->comp & SIM_COMP_RANGE) {
			const struct sim_comp_range *r2 = comp_range(eng, n2->comp);
			const char *e2 = range_elem(r2, n2->comp);

			__builtin_prefetch(e2, 1);
			if (r2->stride > SIM_LINE)
				__builtin_prefetch(e2 + SIM_LINE, 1);
			if (r2->pfe)
				r2->pfe(r2->pfe_ctx, n2->arg);
		} else if (eng->comps[n2->comp].pfe) {
			eng->comps[n2->comp].pfe(eng->comps[n2->comp].ctx, n2->arg);
		}
	}
	if (n1->comp & SIM_COMP_RANGE) {
		const struct sim_comp_range *r = comp_range(eng, n1->comp);

		if (r->pf)
			r->pf(range_elem(r, n1->comp), n1->arg);
		else
			__builtin_prefetch(range_elem(r, n1->comp), 1);
	} else if (eng->comps[n1->comp].pf) {
		eng->comps[n1->comp].pf(eng->comps[n1->comp].ctx, n1->arg);
	}
}

void sim_comp_prefetch(struct sim_engine *eng, uint32_t comp, sim_prefetch_fn pf,
		       sim_prefetch_early_fn pfe)
{
	eng->comps[comp].pf = pf;
	eng->comps[comp].pfe = pfe;
}

/* One event. Inlined into sim_run's loop: a call per event and the
 * spills around it cost about 20 instructions an event (B1: 2.5%).
 * Unbounded (sim_run before any stop is asked for), no event comes after
 * stop_at, and the compare is compiled out (B1: 0.36% of instructions). */
static inline __attribute__((always_inline)) bool step(struct sim_engine *eng, bool bounded)
{
	struct sim_event e;

	if (!cal_pop(&eng->cal, &e, bounded ? eng->stop_at : SIM_TIME_MAX)) {
		/* none left, or a stop's lag ran out (sim_stop), or a window's end */
		if (eng->stop_at != SIM_TIME_MAX && sim_pending(eng))
			eng->stop = true;
		return false;
	}
	if (e.time != eng->now) {	/* a new instant */
		eng->nth = 0;
		/* for sim_aside, which only a partitioned run needs (its
		 * windows and rounds are bounded runs): one list's unbounded
		 * loop, the hot one, does not pay the two stores */
		if (bounded) {
			eng->prev_instant = eng->now;
			eng->instant_first = eng->events;
		}
	}
	eng->now = e.time;
	eng->src = e.comp + 1;
	eng->events++;
	if (eng->prefetch && eng->cal.after != CAL_NIL)
		prefetch_next(eng, eng->cal.after);
	if (e.comp & SIM_COMP_RANGE) {
		const struct sim_comp_range *r = comp_range(eng, e.comp);

		r->fn(eng, range_elem(r, e.comp), e.arg);
	} else {
		const struct sim_component *c = &eng->comps[e.comp];

		c->fn(eng, c->ctx, e.arg);
	}
	if (eng->cal.oom)
		eng->stop = eng->halt = true;
	if (__builtin_expect(!(eng->events & (SIM_MEM_WATCH_EVENTS - 1)), 0))
		sim_mem_heap_watch();
	if (eng->after_event)
		eng->after_event(eng, eng->after_event_ctx);
	return true;
}

int sim_insert(struct sim_engine *eng, const struct sim_event *e)
{
	struct sim_cal *c = &eng->cal;

	if ((e->time >> SIM_CAL_SHIFT) >= c->cur + SIM_CAL_N) {
		if (far_push(c, e))
			return -1;
	} else if (cal_insert(c, e->time, e->at, e->seq, e->comp, e->arg)) {
		return -1;
	}
	note_pending(eng);
	return 0;
}

struct sim_event *sim_drain(struct sim_engine *eng, size_t *n)
{
	struct sim_cal *c = &eng->cal;
	struct sim_event *v;
	size_t k = 0;

	*n = sim_pending(eng);
	if (!*n)
		return NULL;
	v = malloc(*n * sizeof(*v));
	if (!v)
		return NULL;
	while (k < *n && cal_pop(c, &v[k], SIM_TIME_MAX))
		k++;
	/* empty now: its window back at the first event, for inserts */
	c->cur = v[0].time >> SIM_CAL_SHIFT;
	c->far_bucket = UINT64_MAX;
	c->loaded = CAL_NONE;
	*n = k;
	return v;
}

void sim_run_before(struct sim_engine *eng, sim_time_t end)
{
	eng->stop_at = (end < eng->stop_req ? end : eng->stop_req) - 1;
	while (!eng->stop && step(eng, true))
		;
	eng->stop = eng->cal.oom;	/* reaching the window's end is no stop */
	eng->src = SIM_SRC_DRIVER;
}

bool sim_step(struct sim_engine *eng)
{
	bool r = step(eng, true);

	eng->src = SIM_SRC_DRIVER;	/* what the caller schedules next is its own */
	return r;
}

void sim_run(struct sim_engine *eng)
{
	eng->stop = eng->halt = false;
	eng->stop_at = eng->stop_req = SIM_TIME_MAX;
	eng->unbounded = true;
	while (!eng->stop && step(eng, false))
		;
	eng->unbounded = false;
	if (eng->stop && !eng->halt) {	/* a lagged stop: the events before it */
		eng->stop = false;
		while (!eng->stop && step(eng, true))
			;
	}
	eng->src = SIM_SRC_DRIVER;
}

void sim_run_until(struct sim_engine *eng, sim_time_t t)
{
	eng->stop = false;
	eng->stop_at = eng->stop_req = SIM_TIME_MAX;
	while (!eng->stop) {
		sim_time_t next;

		if (!sim_peek_time(eng, &next) || next > t)
			break;
		sim_step(eng);
	}
	if (!eng->stop && eng->now < t)
		eng->now = t;
}

int sim_timer_arm(struct sim_engine *eng, struct sim_timer *t, sim_time_t when,
		  uint32_t comp, uint8_t tag)
{
	t->gen = (t->gen + 1) & 0xffffff;
	t->armed = true;
	t->when = when;
	return sim_schedule_at(eng, when, comp, (t->gen << 8) | tag);
}

int sim_timer_arm_key(struct sim_engine *eng, struct sim_timer *t, sim_time_t when,
		      uint32_t comp, uint8_t tag, sim_time_t at, uint64_t seq)
{
	t->gen = (t->gen + 1) & 0xffffff;
	t->armed = true;
	t->when = when;
	return sim_schedule_key(eng, when, comp, (t->gen << 8) | tag, at, seq);
}

int sim_schedule_key(struct sim_engine *eng, sim_time_t t, uint32_t comp, uint32_t arg,
		     sim_time_t at, uint64_t seq)
{
	struct sim_event e = { .time = t < eng->now ? eng->now : t, .at = at, .seq = seq,
			       .comp = comp, .arg = arg };

	if (__builtin_expect(eng->par != NULL, 0) && sim_owner(eng, comp) != eng->part)
		return sim_par_send(eng, &e);
	return sim_insert(eng, &e);
}

void sim_wake_init(struct sim_wake *w)
{
	sim_heap_init(&w->pending);
	w->seq = 0;
}

void sim_wake_fini(struct sim_wake *w)
{
	sim_heap_free(&w->pending);
}

int sim_wake_at(struct sim_engine *eng, struct sim_wake *w, sim_time_t t, uint32_t comp,
		uint32_t arg)
{
	const struct sim_event *first = sim_heap_top(&w->pending);
	struct sim_event e;

	if (t < eng->now)
		t = eng->now;
	if (first && first->time <= t)
		return 0;	/* an event already comes by then */
	e = (struct sim_event){ .time = t, .seq = w->seq++ };
	if (sim_heap_push(&w->pending, &e))
		return -1;
	return sim_schedule_at(eng, t, comp, arg);
}

void sim_wake_fired(struct sim_wake *w)
{
	struct sim_event e;

	sim_heap_pop(&w->pending, &e);	/* events fire in time order: the earliest */
}

bool sim_timer_fire(struct sim_timer *t, uint32_t arg)
{
	if (!t->armed || (arg >> 8) != t->gen)
		return false;
	t->armed = false;
	return true;
}
