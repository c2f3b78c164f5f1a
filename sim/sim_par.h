/* SPDX-License-Identifier: MIT */
/*
 * sim_par.h - the engine cut into partitions, run by threads in conservative
 * windows.
 *
 * A model built on one engine (struct sim_engine: its components and the
 * events its set-up scheduled) is cut into N partitions by a function that
 * names each component's partition. Each partition gets its own event list;
 * the first is the model's own engine, the others share its components.
 * An event a component schedules for a component of another partition is a
 * message: it must lie at least the look-ahead L ahead of its sender's
 * clock, and it keeps the key the engine gives every event (time, time
 * scheduled at, scheduler, its order: sim.h), so each partition serves its
 * components the same events in the same order as one list would.
 *
 * The partitions advance in windows (synchronous conservative windows,
 * Lubachevsky's bounded lag, CACM 32(1), 1989): with m the earliest event
 * of all, every partition runs its events before m + L at once, since no
 * message sent in the window can land before m + L; then the messages are
 * handed over and the next window starts at the next earliest event. A
 * stop (sim_stop) takes effect L after it is asked for, in every partition
 * alike, and a run of one list given the same lag (eng->lag) stops at the
 * same event, so results are the same whatever the number of partitions.
 *
 * An event that names a shared object (a packet in a pool) cannot cross
 * as it is: the sender asks whether its target is local (sim_local) and
 * otherwise sends the event with a copy of the object
 * (sim_schedule_copy); the receiving partition's import hook for the
 * target's range makes its own object of the copy and the event's
 * argument, when it takes the event in.
 *
 * The same windows run over MPI processes, one partition each
 * (sim_par_mpi.h): events are records without pointers and copies are
 * bytes, so what crosses between threads crosses between processes.
 *
 * Threads may instead keep in step by null messages (sim_par_set_async:
 * each partition runs as far as the others' promises allow, with no
 * barrier); processes keep windows.
 *
 * Left out: per-link look-ahead (one L for the whole run), and null
 * messages over MPI.
 */
#ifndef IBFAB_SIM_PAR_H
#define IBFAB_SIM_PAR_H

#include "sim/sim.h"

#include <pthread.h>

/* What a partitioned run counted, per partition (sim_par_stats). */
struct sim_par_part {
	uint64_t events;	/* events run */
	uint64_t sent;		/* messages to other partitions */
	uint64_t idle_windows;	/* windows in which it had nothing to run */
	double busy_s;		/* wall time running events (not comparable between runs) */
	double wait_s;		/* wall time waiting for the others at the window's end */
	bool failed;		/* it met an error (sim_par.why) */
	/* its model stopped at once (sim_halt: a model's failure) in a
	 * window, at halt_at: every partition stops after that window */
	bool halted;
	sim_time_t halt_at;
	/* the time of its last event that one list has too (sim_main_now) */
	sim_time_t main_now;
};

/*
 * A model's reduction at every window's end (sim_par_set_hook): each
 * partition's values (sums, summed over the partitions, and one maximum),
 * taken after its window; from the totals, which every partition gets
 * alike, the model's stop (SIM_TIME_MAX: none), which every partition
 * takes as if it had asked for it (a stop request, eng->stop_req). What a
 * model decides from all partitions' state at once: that the last of its
 * messages has finished when no partition holds all of a message.
 */
#define SIM_PAR_SUMS 3

struct sim_par_hook {
	void (*values)(void *ctx, uint32_t k, uint64_t sum[SIM_PAR_SUMS], uint64_t *max);
	sim_time_t (*stop)(void *ctx, const uint64_t sum[SIM_PAR_SUMS], uint64_t max);
	void *ctx;
};

/* A box of messages from one partition to another, for the next window:
 * events, and for those sent with a copy (sim_schedule_copy) where in
 * data it is. */
struct sim_par_copy {
	uint32_t len;		/* 0: none */
	size_t off;
};

struct sim_par_box {
	struct sim_event *ev;
	struct sim_par_copy *copy;
	size_t n, cap;
	unsigned char *data;
	size_t dn, dcap;
};

/*
 * The threads' barrier at a window's ends: the last to come releases the
 * others, who spin for a while, then sleep on a condition variable. A
 * window is often under a microsecond of work (the 16-host fat tree's
 * 15 ns look-ahead: 351,277 windows of 8 events), where a sleep and
 * wake-up (pthread_barrier_wait) cost about 19 us a barrier on a virtual
 * machine: 13.8 s for what one thread runs in 0.3 s, and 0.25 s
 * spinning. No spinning when there are more threads than processors.
 */
struct sim_par_bar {
	unsigned n, spin;
	unsigned count, gen, sleepers;	/* atomics */
	pthread_mutex_t lock;
	pthread_cond_t wake;
};

struct sim_par {
	uint32_t n;			/* partitions */
	sim_time_t lookahead;
	struct sim_engine **eng;	/* eng[0]: the model's engine */
	struct sim_par_box *box;	/* box[from * n + to] */
	uint16_t *owner;		/* sim_register components' partitions */
	uint16_t *range_owner[SIM_MAX_RANGES];
	int self;			/* -1: threads run every list here; else this
					 * process's partition (one process each: sim_par_mpi.h) */
	uint32_t first;			/* the caller's engine's partition (0, or self) */
	bool replicas;			/* every engine the caller's (sim_par_init_replicas) */
	struct sim_par_bar bar;
	bool bar_ok;			/* bar, gate_lock and gate are set up */
	pthread_mutex_t gate_lock;	/* threads start when go is set: 1 run, -1 leave */
	pthread_cond_t gate;
	int go;
	sim_time_t *next, *stop;	/* per partition: published between barriers */
	struct sim_par_hook hook;	/* values NULL: none */
	uint64_t (*hsum)[SIM_PAR_SUMS + 1];	/* per partition: the hook's values and max */
	struct sim_par_part *part;
	uint64_t windows;
	/* after the run: the partition whose model halted first (the earliest
	 * halt_at, the lowest partition among equals), or -1: where a run of
	 * one list would have stopped, so whose failure to report */
	int first_halt;
	/* the first error: a message under the look-ahead, out of memory */
	pthread_mutex_t err_lock;
	int err;
	char why[256];
	/* null messages instead of windows (sim_par_set_async): each
	 * partition's promise, the least time of any message it may still
	 * send (eot: earliest output time, atomic); a lock a box; the count
	 * of partitions at work and messages not yet taken (atomic) */
	bool async;
	sim_time_t *eot;
	pthread_mutex_t *box_lock;
	uint64_t active;
	bool *idle;
};

/* Which partition component comp belongs to (< n), or SIM_PAR_EVERY. */
typedef uint32_t (*sim_par_owner_fn)(void *ctx, uint32_t comp);
/*
 * A component every partition has a replica of (a model built once per
 * partition: sim_par_init_replicas, or one process each over MPI): the
 * events scheduled for it stay in the partition that schedules them, and
 * sim_schedule_every sends one to the replica in every partition. Each
 * replica must then do the same with the same events: a trace replay
 * whose every replica knows every step.
 */
#define SIM_PAR_EVERY 0xffffu

/*
 * Cut eng (set up, not yet run) into n partitions (1..4096) with
 * look-ahead lookahead (> 0), owner naming each component's partition. The
 * events already scheduled move to their components' partitions. No
 * component may be registered after this. Returns 0, or -1 with why set
 * (out of memory, an owner out of range).
 */
int sim_par_init(struct sim_par *p, struct sim_engine *eng, uint32_t n, sim_time_t lookahead,
		 sim_par_owner_fn owner, void *ctx);
/*
 * Run to the end: until no event is left or a stop took effect. Partition
 * 0 runs on the calling thread. Afterwards eng[0]'s clock is the run's
 * (the last event's time) and its event count the total. Returns 0, or -1
 * with p->why set (a component sent a message under the look-ahead, out
 * of memory).
 */
int sim_par_run(struct sim_par *p);
/*
 * As sim_par_init, for a model built n times (eng[k] the engine of the
 * k-th copy, its components registered in the same order: the same ids),
 * partition k running on copy k: each keeps its own partition's events
 * and drops the others' (their copies run them), as processes do. The
 * engines stay the caller's.
 */
int sim_par_init_replicas(struct sim_par *p, struct sim_engine **eng, uint32_t n,
			  sim_time_t lookahead, sim_par_owner_fn owner, void *ctx);
/*
 * Threads without windows: null messages (Chandy and Misra, CACM 24(4),
 * 1981; Bryant, MIT TR-188, 1977), shared-memory style. After each run
 * of its events a partition promises, in eot[k], that it sends nothing
 * earlier than min(its earliest event, its bound) + L, and it runs the
 * events before its bound, the least promise of the others (and before
 * the earliest stop any has published). No barrier: a partition waits
 * only when another's promise holds it. A stop a model's hook makes
 * comes from the values each partition publishes; a failure publishes
 * its time as a stop, so the others run to it and the first failure is
 * one list's. The run ends at the stop, or when no partition has work
 * and no message waits (a count of both). Where every partition's next
 * event is far (an idle stretch), promises climb L a round: windows jump
 * such gaps at once. Before sim_par_run; threads only. 0, or -1 (out of
 * memory).
 */
int sim_par_set_async(struct sim_par *p, bool on);
/* Give the other partitions' lists back; eng[0] stays the caller's. */
void sim_par_fini(struct sim_par *p);
/* Set the model's reduction (before the run); 0, or -1 out of memory. */
int sim_par_set_hook(struct sim_par *p, const struct sim_par_hook *h);

/*
 * For back-ends (threads here, processes in sim_par_mpi.c): set up as
 * sim_par_init, self < 0 with every list in this process, else only
 * partition self's (the caller's engine; events of the others dropped, as
 * their processes run them); what partition k publishes before a window
 * (its earliest event, its stop: 0 when it failed); the window's end from
 * the earliest of all (0: the run is over); run partition k's window; take
 * the messages addressed to k (box[q * n + k], for every q).
 */
int sim_par_setup(struct sim_par *p, struct sim_engine *eng, uint32_t n, sim_time_t lookahead,
		  sim_par_owner_fn owner, void *ctx, int self);
void sim_par_publish(const struct sim_par *p, uint32_t k, sim_time_t *next, sim_time_t *stop);
/* The hook's stop from the totals over partitions (sum[], max), taken by
 * partition k's list; returns it (SIM_TIME_MAX: none). */
sim_time_t sim_par_hook_stop(struct sim_par *p, uint32_t k, const uint64_t sum[SIM_PAR_SUMS],
			     uint64_t max);
sim_time_t sim_par_end(const struct sim_par *p, sim_time_t m, sim_time_t s);
void sim_par_window(struct sim_par *p, uint32_t k, sim_time_t end);
void sim_par_take(struct sim_par *p, uint32_t k);

/* For sim_schedule_at and sim_schedule_copy: an event for a component of
 * another partition, with a copy of data (len 0: none). */
int sim_par_send(struct sim_engine *eng, const struct sim_event *e);
/* For sim_schedule_every: e to partition `to`'s list. */
int sim_par_send_to(struct sim_engine *eng, uint32_t to, const struct sim_event *e);
int sim_par_send_copy(struct sim_engine *eng, const struct sim_event *e, const void *data,
		      uint32_t len);

#endif
