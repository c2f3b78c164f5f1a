/* SPDX-License-Identifier: MIT */
/*
 * sim.h - the discrete-event engine: time, the future-event list, components.
 *
 * Time is an integer count of picoseconds (docs/architecture.md): no floating-point
 * time anywhere, so two runs with the same inputs order every event the same
 * way. The future-event list is keyed by (time, at, seq): events at equal
 * times fire in the order of the simulated time they were scheduled at,
 * then by the component that scheduled them and, for one component, in
 * the order it scheduled them (sim_schedule_at): an order
 * that follows from each component's own history alone, so a fabric cut
 * into partitions, each with its own list, serves every component's events
 * in the same order as one list does. An event is a 32-byte record naming
 * a component (an index into the engine's handler table) and a 32-bit
 * argument; it carries no pointer, so the lists stay compact and cache
 * friendly.
 *
 * Components schedule per component, not per packet (a link schedules only
 * the arrival of its head packet; a transmitter only its next "done"), which
 * keeps the heap at O(ports) entries. Cancellation is lazy: a component puts
 * a generation number in the argument and ignores stale events (sim_timer).
 *
 * The engine knows nothing about InfiniBand.
 */
#ifndef IBFAB_SIM_H
#define IBFAB_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint64_t sim_time_t;		/* picoseconds */

#define SIM_PS	((sim_time_t)1)
#define SIM_NS	((sim_time_t)1000)
#define SIM_US	((sim_time_t)1000000)
#define SIM_MS	((sim_time_t)1000000000)
#define SIM_S	((sim_time_t)1000000000000ULL)
#define SIM_TIME_MAX UINT64_MAX

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

#define SIM_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

struct sim_engine;

/* A component's event handler: arg is whatever the scheduler passed. */
typedef void (*sim_handler_fn)(struct sim_engine *eng, void *ctx, uint32_t arg);
/* A range's prefetch hook (sim_range_prefetch): asks for the lines the
 * event (ctx, arg) will read, reading only ctx's first two lines and what
 * stays in the cache anyway (a pool's table of chunks, say). */
typedef void (*sim_prefetch_fn)(const void *ctx, uint32_t arg);
/* A range's early hook (sim_range_prefetch_early): asks for the lines the
 * event's argument alone names (a packet), given the range's context. */
typedef void (*sim_prefetch_early_fn)(const void *range_ctx, uint32_t arg);
/* A range's import hook (sim_range_import): an event that came with a
 * copy of data (sim_schedule_copy) for element elem; returns the argument
 * the event is to carry (naming what the hook made of the copy). */
typedef uint32_t (*sim_import_fn)(void *elem, uint32_t arg, const void *data, uint32_t len);

/* The cache line the look-ahead prefetches by (sim_range_prefetch). */
#define SIM_LINE 64

/*
 * (at, seq): the order among events at one time. Those the engine schedules
 * carry the time they were scheduled at in at (earlier first), and in seq
 * the scheduling component's key (SIM_SRC_DRIVER outside any handler, else
 * its id + 1) in the high 32 bits and the count of events scheduled before
 * it at that instant in the low 32 bits (sim_schedule_at). Other users of
 * these records (a component's own queue) number them as they like.
 */
struct sim_event {
	sim_time_t time;
	sim_time_t at;		/* when it was scheduled (the engine's; others leave it 0) */
	uint64_t seq;
	uint32_t comp;
	uint32_t arg;
};

struct sim_heap {
	struct sim_event *ev;
	size_t n, cap;
};

void sim_heap_init(struct sim_heap *h);
void sim_heap_free(struct sim_heap *h);
int sim_heap_push(struct sim_heap *h, const struct sim_event *e);
/* Remove the smallest (time, at, seq) into *out; false when empty. */
bool sim_heap_pop(struct sim_heap *h, struct sim_event *out);
static inline const struct sim_event *sim_heap_top(const struct sim_heap *h)
{
	return h->n ? &h->ev[0] : NULL;
}

struct sim_component {
	sim_handler_fn fn;
	void *ctx;
	const char *name;
	/* the look-ahead's hooks, with ctx (sim_comp_prefetch): NULL none */
	sim_prefetch_fn pf;
	sim_prefetch_early_fn pfe;
};

/* The key of what schedules outside any handler (set-up, a driver between
 * sim_run_until calls): before every component at equal times. */
#define SIM_SRC_DRIVER 0u

/*
 * The engine's future-event list: a calendar queue (Brown, CACM 1988) over a
 * sliding window of SIM_CAL_N buckets of 2^SIM_CAL_SHIFT ps each, with a
 * heap for the events beyond the window. sim_engine.c says why.
 */
#define SIM_CAL_SHIFT	11		/* bucket width 2048 ps */
#define SIM_CAL_N	2048		/* window: 4.2 us of simulated time */

struct sim_cal_node {
	sim_time_t time;
	sim_time_t at;
	uint64_t seq;
	uint32_t comp, arg;
};

/* A bucket the window has not reached holds its events in chunks of
 * SIM_CAL_CHUNK nodes (256 bytes, four lines), in the order they came. */
#define SIM_CAL_CHUNK	8

/*
 * A bucket: its chain of chunks and how many events they hold (the last
 * chunk is full up to n % SIM_CAL_CHUNK). Where events are sparse (bench/
 * run's B1: one per ~100 buckets) an insert or a load reads the three
 * together: one line.
 */
struct sim_cal_bucket {
	uint32_t head, tail;		/* its chunks, by index (UINT32_MAX: none) */
	uint32_t n : 31;		/* events in them */
	uint32_t unsorted : 1;		/* not filled in (time, at, seq) order */
	/* its earliest event (chunk x SIM_CAL_CHUNK + slot), kept as events
	 * come: a peek at a bucket not loaded (the replay's, at every wake)
	 * reads it instead of scanning the bucket (6% of the instructions of
	 * 128 DGX H100-like servers' allreduce: docs/performance.md) */
	uint32_t min;
};

struct sim_cal {
	struct sim_cal_node *chunk;	/* pool of chunks, SIM_CAL_CHUNK nodes each, line-aligned */
	uint32_t *chunk_next;		/* each chunk's next in its bucket or the free list */
	uint32_t chunks, free;		/* pool size in chunks; the free list's first */
	struct sim_cal_bucket *bucket;	/* SIM_CAL_N */
	uint64_t *bits;			/* non-empty buckets */
	uint64_t cur;			/* absolute bucket number of the window start */
	size_t nb;			/* events in buckets */
	/*
	 * The bucket the window is at, once an event of it is taken: its
	 * events moved into one array, sorted, v[head..end), and kept sorted
	 * as events come; tmp and runs serve the sort.
	 */
	struct sim_cal_node *v, *tmp;
	uint32_t *runs;
	uint32_t head, end, vcap;
	uint64_t loaded;		/* its absolute number (UINT64_MAX: none) */
	struct sim_heap over;
	struct sim_event *far;		/* the ring: far_n events from far_head, in order */
	uint32_t far_head, far_n, far_cap;	/* far_cap: 0 or a power of two */
	uint64_t far_bucket;		/* the earliest far event's bucket (UINT64_MAX: none; lower
					 * after a push that failed, until the next migration) */
	size_t nfar;			/* far events: over.n + far_n */
	uint32_t after;			/* v's index of the event after the one popped last */
	bool oom;			/* a node could not be allocated: the run stops */
};

/*
 * The same calendar as a component's own queue of events, for a queue of
 * thousands whose events mostly fall a few microseconds ahead (a trace's
 * replay): (time, at, seq) order, as the heap's, at the cost of a chunk
 * append and an array read where a heap of 100k sifts through nine levels
 * of cache misses. An event pushed must not come before the last popped.
 */
int sim_cal_init(struct sim_cal *c);
void sim_cal_fini(struct sim_cal *c);
int sim_cal_push(struct sim_cal *c, const struct sim_event *e);
/* The earliest event into *out, unless it comes after last or there is
 * none (false; c->oom when memory ran out). */
bool sim_cal_pop(struct sim_cal *c, struct sim_event *out, sim_time_t last);
/* The earliest event's time, or false when there is none. */
bool sim_cal_peek(struct sim_cal *c, sim_time_t *t);
/* The next event itself into *e (false: none), the list untouched. */
bool sim_cal_peek_event(struct sim_cal *c, struct sim_event *e);
static inline size_t sim_cal_count(const struct sim_cal *c)
{
	return c->nb + c->nfar;
}

#define SIM_MAX_RANGES	8
#define SIM_COMP_RANGE	0x40000000u	/* the id bit of a component in a range */

struct sim_engine {
	struct sim_cal cal;
	sim_time_t now;
	/* the next event's seq (struct sim_event) as one word: the running
	 * component's id + 1 (or SIM_SRC_DRIVER) high, the events scheduled
	 * at this instant so far low, so that a schedule takes it and adds 1
	 * (sim_engine.c, next_seq) */
	union {
		struct {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			uint32_t nth, src;
#else
			uint32_t src, nth;
#endif
		};
		uint64_t key;
	};
	uint64_t events;		/* events dispatched so far */
	size_t heap_high;		/* most events pending at once */
	struct sim_component *comps;
	uint32_t ncomps, comps_cap;
	/* component ranges (sim_register_range): ids SIM_COMP_RANGE | k << 24 | i, k < 64 */
	struct sim_comp_range {
		sim_handler_fn fn;
		char *base;
		size_t stride;
		const char *name;
		sim_prefetch_fn pf;	/* optional (sim_range_prefetch) */
		sim_prefetch_early_fn pfe;	/* optional (sim_range_prefetch_early) */
		const void *pfe_ctx;
		uint32_t n;		/* elements */
		sim_import_fn import;	/* optional (sim_range_import) */
		const uint16_t *owner;	/* a partitioned run's: each element's partition */
	} ranges[SIM_MAX_RANGES];
	uint32_t nranges;
	bool prefetch;			/* a range outgrows the caches: prefetch (sim_step) */
	bool stop;
	/* sim_run: no stop asked yet, its loop does not compare each event's
	 * time with stop_at (a lagged stop leaves that loop for one that
	 * does); halt: the stop is at once (sim_halt, a stop without lag,
	 * out of memory), not a lagged one's */
	bool unbounded, halt;
	/*
	 * A stop's lag (sim_stop): 0, or every event before the stopping
	 * event's time + lag still runs. A partitioned run (sim_par.h) has
	 * its look-ahead here, and so must a run of one list that is to give
	 * its results.
	 */
	sim_time_t lag;
	sim_time_t stop_req;		/* the earliest lagged stop asked for (SIM_TIME_MAX: none) */
	sim_time_t stop_at;		/* no event after it runs: before stop_req, or a window's end */
	/* A partitioned run's (sim_par.h); NULL, 0 and NULL in a run of one list. */
	struct sim_par *par;
	uint32_t part;			/* this list's partition */
	const uint16_t *owner;		/* the partition of every sim_register component */
	/* Optional hook called after every event (invariant checkers in tests). */
	void (*after_event)(struct sim_engine *eng, void *ctx);
	void *after_event_ctx;
	/*
	 * Pending events that do not keep a partitioned run going (an
	 * observer's ticks: a sampler that reads counters at fixed times):
	 * the component that schedules them counts them here. A partition
	 * whose list holds no others publishes no earliest event
	 * (sim_par_publish), so the run ends when every partition has only
	 * these left, as a run of one list ends when its observer stops
	 * rescheduling itself because nothing else is pending.
	 */
	size_t background;
	/*
	 * Events a run of one list does not have (sim_aside): an observer's
	 * ticks, and in a partitioned run what a model sends between its
	 * partitions in place of a call (a report to a message's source).
	 * Their count, the count of events at the last, and the time of the
	 * last other event before it.
	 */
	uint64_t aside_n, aside_last;
	sim_time_t main_last;
	/* where the current instant began: the instant before it, and the
	 * events dispatched before its first (sim_aside); kept by bounded
	 * runs only (a partitioned run's windows, a run after a lagged stop) */
	sim_time_t prev_instant;
	uint64_t instant_first;
};

/*
 * A partitioned run's: the partition of component comp (sim_owner); is it
 * this engine's (sim_local: always, in a run of one list)? A model whose
 * events name shared objects (a packet in a pool) sends a copy instead
 * where it is not (sim_schedule_copy).
 */
static inline uint32_t sim_owner(const struct sim_engine *eng, uint32_t comp)
{
	if (comp & SIM_COMP_RANGE)
		return eng->ranges[(comp >> 24) & 0x3f].owner[comp & 0xffffff];
	return eng->owner[comp];
}

static inline bool sim_local(const struct sim_engine *eng, uint32_t comp)
{
	return !eng->par || sim_owner(eng, comp) == eng->part;
}

int sim_init(struct sim_engine *eng);
void sim_fini(struct sim_engine *eng);

/* Register a component; returns its id (>= 0) or -1 on allocation failure. */
int sim_register(struct sim_engine *eng, sim_handler_fn fn, void *ctx,
		 const char *name);

/*
 * Register n components of one kind stored in one array (element i at
 * base + i * stride, the context its handler gets). Returns the id of the
 * first (the others follow it), or -1 when n >= 2^24 or SIM_MAX_RANGES are
 * taken. Dispatching them reads one small table that stays in the cache,
 * not a line of a per-component table: at 7,000 ports that line is mostly
 * a cache miss per event. A range of SIM_PREFETCH_BYTES
 * or more turns on the look-ahead prefetch (sim_engine.c, prefetch_next):
 * 4 MiB, what the last-level cache of a shared virtual machine keeps
 * for one process (docs/performance.md, "What bounds it"). The 1,024-host tree (26 MB of ports) gains 7% from it; the
 * 128-host one (3.2 MB) nothing either way, so it stays off there.
 */
#define SIM_PREFETCH_BYTES ((size_t)4 << 20)
int sim_register_range(struct sim_engine *eng, sim_handler_fn fn, void *base, size_t stride,
		       uint32_t n, const char *name);
/*
 * Give the range whose first id is comp a prefetch hook: while look-ahead
 * is on, it is called with the element and arg of the next event, one event
 * before that runs, once the element's first line, and its second where the
 * stride is longer than SIM_LINE, are (very likely) in the cache. It may
 * read those lines (sim_prefetch_fn says what else), must change nothing,
 * and asks for what the handler will read next (__builtin_prefetch): the
 * next links of a chain of misses. Without a hook the engine prefetches
 * those lines and no more.
 */
void sim_range_prefetch(struct sim_engine *eng, uint32_t comp, sim_prefetch_fn pf);
/*
 * And an early hook, called with range_ctx and the arg of the event after
 * the next, two events before it runs, while the engine asks for its
 * element's lines: it may read only what stays in the cache anyway, and
 * asks for what the argument names, so that the hook of the next stage
 * (sim_range_prefetch) finds it there and can follow it one link further.
 */
void sim_range_prefetch_early(struct sim_engine *eng, uint32_t comp, sim_prefetch_early_fn fn,
			      const void *range_ctx);
/* The same two hooks for a component of its own (sim_register), each
 * called with its ctx: pf one event before its event, pfe two. */
void sim_comp_prefetch(struct sim_engine *eng, uint32_t comp, sim_prefetch_fn pf,
		       sim_prefetch_early_fn pfe);

/*
 * Schedule comp (an element of a range with an import hook) at t with a
 * copy of data (len bytes, at most 2^20): the hook, run in comp's
 * partition before the event is due, makes the event's argument from arg
 * and the copy. In comp's own partition the hook runs at once. Returns 0
 * or -1.
 */
#define SIM_COPY_MAX ((uint32_t)1 << 20)
int sim_schedule_copy(struct sim_engine *eng, sim_time_t t, uint32_t comp, uint32_t arg,
		      const void *data, uint32_t len);
void sim_range_import(struct sim_engine *eng, uint32_t comp, sim_import_fn fn);

/* Schedule comp's handler at absolute time t (t >= now). Returns 0 or -1. */
int sim_schedule_at(struct sim_engine *eng, sim_time_t t, uint32_t comp,
		    uint32_t arg);
/*
 * An event for a component every partition has a replica of (sim_par.h,
 * SIM_PAR_EVERY): here and, in a partitioned run, to every other
 * partition's replica, the look-ahead ahead at least, with one key. In a
 * run of one list, sim_schedule_at. 0, or -1 (out of memory, under the
 * look-ahead: the run fails).
 */
int sim_schedule_every(struct sim_engine *eng, sim_time_t t, uint32_t comp, uint32_t arg);
static inline int sim_schedule_in(struct sim_engine *eng, sim_time_t dt,
				  uint32_t comp, uint32_t arg)
{
	/* Saturate: a huge dt means "never", not a wrap into the past. */
	sim_time_t t = dt > SIM_TIME_MAX - eng->now ? SIM_TIME_MAX : eng->now + dt;

	return sim_schedule_at(eng, t, comp, arg);
}

/* Dispatch one event; false when the list is empty. */
bool sim_step(struct sim_engine *eng);
/* Run until the list is empty or sim_stop() was called. */
void sim_run(struct sim_engine *eng);
/*
 * Run every event with time <= t, then set now = t (if t is later). Used by
 * drivers that feed external events (the verbs daemon): they advance the
 * clock to a point, inject, and advance again.
 */
void sim_run_until(struct sim_engine *eng, sim_time_t t);
/*
 * Stop the run: at once, or with a lag (eng->lag) once every event before
 * now + lag has run. A partitioned run cannot stop between two events
 * (other partitions run ahead of this one by up to the look-ahead), so it
 * stops with its look-ahead as the lag; a run of one list with the same
 * lag stops at the same event.
 */
static inline void sim_stop(struct sim_engine *eng)
{
	if (!eng->lag) {
		eng->stop = eng->halt = true;
	} else {
		sim_time_t t = eng->lag > SIM_TIME_MAX - eng->now ? SIM_TIME_MAX : eng->now + eng->lag;

		if (t < eng->stop_req)
			eng->stop_req = t;
		if (t - 1 < eng->stop_at)
			eng->stop_at = t - 1;
		eng->stop |= eng->unbounded;	/* sim_run: to its bounded loop */
	}
}
/* Stop as sim_stop would have at time t (t >= now): every event before
 * t + lag runs. */
static inline void sim_stop_at(struct sim_engine *eng, sim_time_t t)
{
	sim_time_t end = eng->lag > SIM_TIME_MAX - t ? SIM_TIME_MAX : t + eng->lag;

	if (!eng->lag && t <= eng->now) {
		eng->stop = eng->halt = true;
		return;
	}
	if (end < eng->stop_req)
		eng->stop_req = end;
	if (end - 1 < eng->stop_at)
		eng->stop_at = end - 1;
	eng->stop |= eng->unbounded;	/* sim_run: to its bounded loop */
}

/*
 * Called first by the handler of an event that one list does not have
 * (struct sim_engine, aside_n): the count of the others, and the time of
 * the last of them (sim_main_now), leave it out. The previous event ran
 * at this instant when one ran before this event at it, else at the one
 * before. Exact in a partitioned run (the time is kept by bounded runs);
 * a run of one list has its own clock and count.
 */
static inline void sim_aside(struct sim_engine *eng)
{
	if (eng->events - 1 > eng->aside_last)	/* the previous one was not aside */
		eng->main_last = eng->events - 1 > eng->instant_first ? eng->now : eng->prev_instant;
	eng->aside_last = eng->events;
	eng->aside_n++;
}
/* The time of the last event dispatched that was not aside. */
static inline sim_time_t sim_main_now(const struct sim_engine *eng)
{
	return eng->events > eng->aside_last ? eng->now : eng->main_last;
}

/* Stop at once whatever the lag: a failure, after which nothing may run. */
static inline void sim_halt(struct sim_engine *eng)
{
	eng->stop = eng->halt = true;
}
static inline sim_time_t sim_now(const struct sim_engine *eng) { return eng->now; }
static inline size_t sim_pending(const struct sim_engine *eng)
{
	return sim_cal_count(&eng->cal);
}
/* The time of the next event, if any (drivers that interleave external input). */
bool sim_peek_time(struct sim_engine *eng, sim_time_t *t);
/*
 * For sim_par: run every event before end (and before stop_req), leaving
 * now at the last one's time; insert an event with the key it was given
 * (its time not before now). Returns 0, or -1 when out of memory.
 */
void sim_run_before(struct sim_engine *eng, sim_time_t end);
int sim_insert(struct sim_engine *eng, const struct sim_event *e);
/* For sim_par: every pending event, in order, in a new array (*n of them;
 * NULL when none or out of memory, the events then left where they were). */
struct sim_event *sim_drain(struct sim_engine *eng, size_t *n);

/*
 * A cancellable one-shot timer built on lazy cancellation: arming bumps the
 * generation and schedules an event carrying (gen << 8 | tag); a stale event
 * fires, sim_timer_fire() sees the old generation and tells the handler to
 * ignore it. The low 8 bits of arg are the caller's tag.
 */
struct sim_timer {
	uint32_t gen;		/* 24 bits used */
	bool armed;
	sim_time_t when;
};

int sim_timer_arm(struct sim_engine *eng, struct sim_timer *t, sim_time_t when,
		  uint32_t comp, uint8_t tag);
/*
 * sim_timer_arm with the event's place among equal times given (at, seq;
 * struct sim_event) instead of taken from the arming handler: for an
 * expiry that more than one component may arm (a cause in one partition,
 * its effect in another), so that it falls at one place whoever arms it.
 * The key must be one no scheduled event carries (sim_schedule_at's low
 * halves of seq count from 0: keys with bit 31 set are free).
 */
int sim_timer_arm_key(struct sim_engine *eng, struct sim_timer *t, sim_time_t when,
		      uint32_t comp, uint8_t tag, sim_time_t at, uint64_t seq);
/* sim_schedule_at with the key given, as sim_timer_arm_key. */
int sim_schedule_key(struct sim_engine *eng, sim_time_t t, uint32_t comp, uint32_t arg,
		     sim_time_t at, uint64_t seq);
static inline void sim_timer_cancel(struct sim_timer *t)
{
	t->armed = false;
	t->gen = (t->gen + 1) & 0xffffff;
}
/* True if the event with this arg is the live expiry of t (and disarms t). */
bool sim_timer_fire(struct sim_timer *t, uint32_t arg);

/*
 * A wake-up for a component that keeps its own queue of things due (an
 * HCA's timers, a workload's steps): "wake me by t". A new engine event is
 * scheduled only when none is already pending at or before t; an event
 * that fires with nothing due is harmless. Unlike re-arming a sim_timer,
 * which leaves the superseded (often far-future) event in the list, this
 * never piles events up: a component pulled earlier and later again keeps
 * at most the events it really needs. The handler calls sim_wake_fired()
 * once per event it receives.
 */
struct sim_wake {
	struct sim_heap pending;	/* times of this component's events in the list */
	uint64_t seq;
};

void sim_wake_init(struct sim_wake *w);
void sim_wake_fini(struct sim_wake *w);
int sim_wake_at(struct sim_engine *eng, struct sim_wake *w, sim_time_t t, uint32_t comp,
		uint32_t arg);
void sim_wake_fired(struct sim_wake *w);

#endif
