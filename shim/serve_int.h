/* SPDX-License-Identifier: MIT */
/*
 * serve_int.h - the daemon's internals shared by its files: serve.c (the
 * loop, the clock, the verbs objects) and serve_cm.c (the connection
 * manager behind the rdma_cm shim). Nothing here is seen outside shim/.
 */
#ifndef IBFAB_SERVE_INT_H
#define IBFAB_SERVE_INT_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "models/fabric/fab.h"
#include "models/hca/hca.h"
#include "models/net/net.h"
#include "shim/shim_proto.h"
#include "sim/sim.h"

#define LINGER_PS	(1 * SIM_MS)	/* a dead process's objects outlive it */
/* An empty poll parks the program at most what the host takes for one
 * (host.poll_cpu_ns, at least 1 ns: srv_poll_q_min), then twice that for
 * each empty poll in a row, up to POLL_Q_MAX; a completion ends the park at
 * once. A program that polls until empty and moves on (libfabric's rxm,
 * UCX) is charged a real poll's cost, not a quantum. */
#define POLL_Q_MAX	(100 * SIM_US)
#define CLOCK_Q_MIN	(1 * SIM_US)
#define CLOCK_Q_MAX	(1000 * SIM_US)
#define MAX_OBJS	65536
#define MAX_CLIENTS	1024	/* connections at once (a program's, one per thread that calls) */
#define HELLO_LIMIT_S	5.0	/* from connect to HELLO; the shim sends it at once */
#define OUTSIDE_HOLD_S	0.05	/* a wait on what a process outside the simulation
				 * may make ready holds the clock this long (real
				 * time) from its start, or to its timeout */
#define PENDING_LIMIT_S	10.0	/* a program on its way runs this long without a
				 * word (real time): the clock goes on without it */
#define WATCH_S		0.25	/* how often watch_cb looks (real time) */
/*
 * A process that says nothing while not in a wait may spin on its memory
 * (perftest's write-latency loop): the clock must move for it. Or the
 * host's scheduler may merely have paused it, and then the clock must not
 * move, or what it prints would depend on the host's load. So silence is
 * measured in the process's own CPU time, which a paused process does not
 * use, never in real time: each message carries the CPU time the process
 * had used when it sent it (exact), and the daemon reads what it has used
 * since (clock_getcpuclockid: the kernel brings another process's clock up
 * to date only at a scheduler tick or switch, so that reading lags by up
 * to a tick, 4 ms at HZ=250: it may notice a spinner late, never early,
 * and it never counts a pause). A process with a
 * connected QP that has used SPIN_FIRST_S of CPU since its last message
 * is taken to spin; SPIN_GRACE_S once it is known to spin (bytes landed in
 * its memory while it was taken to spin), SPIN_GRACE_EXACT_S where its
 * main thread's CPU time is read exactly (perf's task clock, no tick's
 * lag); IBFAB_SPIN_GRACE_US overrides both.
 * A spinner whose memory just received bytes is expected to react: it
 * runs until its next message, or until it has used SPIN_REACT_S of CPU.
 *
 * The one real-time rule is a safety net for waits the shim does not see
 * (a futex, pause(); poll/select/epoll are watched: IO_BEGIN with an epoll
 * set and a deadline): a process with every thread asleep
 * in the kernel that has used no CPU for SPIN_ASLEEP_S waits too. A paused
 * process is runnable, not asleep, so this never fires for it either.
 */
#define SPIN_GRACE_S	0.001
#define SPIN_GRACE_EXACT_S 0.0001	/* ... where perf reads it exactly (perf_cpu) */
#define SPIN_FIRST_S	0.020
#define SPIN_REACT_S	0.100
#define SPIN_ASLEEP_S	0.020
#define SPIN_RECHECK_S	0.0002	/* the spin timer's shortest delay */

enum obj_type { O_FREE, O_SEG, O_MR, O_CQ, O_CHAN, O_SRQ, O_QP, O_CMCH, O_CMID };

struct dcmch;
struct dcmid;
struct cm_srv;

struct client;

struct dcq {
	struct hca_cq *cq;
	struct client *c;
	uint32_t h;
	int32_t chan;		/* handle of its completion channel, -1 none */
	struct hca_wc *q;	/* completions taken from the model, not yet polled */
	uint64_t *qseq;
	struct sgl **qsg;	/* a receive's scatter list, done when it is polled */
	uint32_t cap, head, n;
	uint64_t pushed;	/* sequence of the next completion */
	bool armed;
	bool overrun;		/* a completion found it full: its error event was queued */
	uint64_t arm_seq;
	sim_time_t arm_time;
	/* how long the last run of empty polls on it waited for a completion
	 * (op_poll_cq): a program polling two CQs in turn (perftest's send
	 * latency: receives on one, sends on the other) keeps each one's */
	sim_time_t poll_peak;
};

struct dchan {
	int efd;
	uint32_t *ev;		/* CQ handles with a pending event */
	uint32_t n, cap;
};

/* A send's gathered bytes, one per send queue entry (see "gather/scatter"). */
struct gslot {
	uint8_t *buf;
	uint64_t cap;
	struct hca_mr *mr;
};

struct dqp {
	struct hca_qp *qp;
	int type;
	uint32_t scq, rcq;	/* handles of its CQs: they may not go first */
	int32_t srq;		/* handle of its SRQ, -1 none */
	uint32_t max_send_wr;
	uint32_t max_send_sge, max_recv_sge;
	struct hca_mr *bounce;	/* inline data's home until the model reads it */
	uint8_t *bounce_buf;
	uint32_t bounce_next;
	struct gslot *gs;	/* max_send_wr of them, once a list is posted */
	uint32_t gnext;
	/* max_recv_sge > 1: every receive posted, in order (the receive
	 * queue completes in order, IBA 10.8.3) */
	struct sgl *rq, **rq_tail;
};

struct dseg {
	void *map;
	size_t len;
	uint64_t base;
};

struct obj {
	enum obj_type t;
	union {
		struct dseg seg;
		struct hca_mr *mr;
		struct dcq *cq;
		struct dchan *ch;
		struct hca_srq *srq;
		struct dcmch *cmch;
		struct dcmid *cmid;
		struct dqp *qp;
	} u;
};

enum wait_kind { W_NONE, W_POLL, W_EVENT, W_SLEEP, W_CLOCK, W_IO, W_CMEV, W_YIELD };

/*
 * One connection of a process. The first (its HELLO attached the process)
 * holds the process: its objects, HCA, CPU-time state and timer (p points
 * to itself). Each other thread of the process that calls the shim has a
 * connection of its own that joined it (HELLO with the process's token):
 * p points to the first, and only the fields of a connection are its own
 * (the socket, what that thread waits for).
 */
struct client {
	struct srv *s;
	struct client *next;
	struct client *p;	/* the process's first connection */
	int alive_slot;		/* the process's stamp on the clock page (alive), -1 none */
	int fd;
	ev_io w;
	bool hello, zombie;
	bool pending;		/* PENDING: a program on its way, not attached yet */
	int pend_node;		/* ... the host it named (a node), -1 none */
	bool quiet;		/* handling a request sent without a reply (SHIM_OP_QUIET) */
	bool quiet_refused;	/* one was refused: said once */
	sim_time_t zombie_until;
	uint64_t token;		/* first connection: what a thread's HELLO quotes */
	pid_t tid;		/* the thread (joined connections) */
	int tperf_fd;		/* that thread's task clock (perf), -1 none */
	double tperf_seen;	/* its value at the last look, -1 none yet */
	double tquiet;		/* joined: that clock at its last message or wake-up, -1 unknown */
	bool tspinner;		/* joined: it has been seen to spin without a word */
	uint32_t nthreads;	/* first connection: how many threads joined it */
	uint32_t pid;
	int node;
	struct hca *hca;
	struct obj *objs;
	uint32_t nobjs;
	/* what the process waits for */
	enum wait_kind wait;
	sim_time_t deadline;
	uint32_t wait_h, wait_n;
	uint64_t wait_cqe_gen;	/* W_POLL: any new completion of this client wakes it */
	sim_time_t wait_t0;	/* when it parked: a CQE visible since wakes a W_POLL too */
	uint64_t wait_quiet_gen;	/* W_POLL: ... and any quiet bytes landing in its memory */
	int io_fd;
	bool io_fabric;		/* W_IO: a fabric channel is among its fds */
	double io_real_due;	/* W_IO: its timeout may pass only from this
				 * real time on (ev_time(); 0: at once) */
	double io_hold_rt;	/* W_IO on what an outsider may make ready: the
				 * clock waits for the answer until this real
				 * time (ev_time(); 0: not at all) */
	sim_time_t poll_q, clock_q;
	/* empty polls of one CQ in a row (op_poll_cq): which CQ, how many,
	 * since when; how long the last run of them waited for its completion */
	uint32_t poll_cq, poll_empty;
	sim_time_t poll_t0;
	uint64_t cqe_gen;
	uint64_t quiet_gen;	/* process: quiet bytes (an RDMA WRITE's) landed in its memory */
	/* silence (see SPIN_*): since its last message, wake-up or bytes landing */
	pid_t peer;		/* its pid (SO_PEERCRED), 0 if unknown */
	clockid_t cpu_clk;	/* its CPU-time clock ... */
	bool cpu_ok;		/* ... if it can be read */
	int perf_fd;		/* its main thread's task clock (perf), -1 none */
	int pf_fd;		/* its main thread's page faults (perf), -1 none */
	int64_t faults_quiet;	/* their count at quiet_cpu, -1 unknown */
	double perf_quiet, perf_idle;	/* that clock (s) at quiet_cpu, idle_cpu */
	double quiet_cpu;	/* its CPU time (s) at that moment */
	double sent_cpu;	/* its CPU time (s) as it sent its last message */
	ev_tstamp quiet_rt;	/* the real time then (only without a CPU clock) */
	double idle_cpu;	/* its CPU time when last seen to change ... */
	ev_tstamp idle_rt;	/* ... and the real time of that */
	bool spinning;		/* taken to spin on memory (not: asleep) */
	bool busy;		/* this connection said BUSY: the shim works for its
				 * thread until its next message */
	uint64_t spun_in;	/* taken to spin in that advance() call */
	bool spinner;		/* bytes landed while it spun: it spins on memory */
	bool connected;		/* it has a QP ready to receive: it may spin */
	bool holds;		/* advance() last counted it as running */
	bool touched;		/* ... and it has not reacted yet */
	struct sgl *srq_sgls;	/* receives with lists posted to its SRQs, oldest first */
	/* asynchronous events (hca_async_fn) not yet read, oldest first, and
	 * the context's eventfd, one count written per event (-1: none) */
	/*
	 * Turns (docs/shim.md, "Threads"): while a process has several threads
	 * that call the shim, one of them at a time runs between two answers
	 * and the others wait in the daemon for theirs. Which thread runs next,
	 * and so what each one finds when it does, is then the daemon's choice,
	 * made at a call, not the host scheduler's.
	 */
	struct client *turn;	/* process: the connection whose thread has it, NULL none */
	struct client *turn_last;	/* process: the last one to have it (round robin) */
	bool turn_q;		/* its request waits for the turn (its watcher stopped) */
	bool yielded;		/* its sched_yield waits for the turn */
	uint64_t turn_gen;	/* process: turns taken so far */
	uint64_t yield_gen;	/* W_YIELD: turn_gen when it parked */
	uint32_t yield_run;	/* yields in a row that found no one else to run */
	bool io_latched;	/* W_IO: its descriptors were ready while another thread ran */
	struct { uint32_t type, handle; } *aq;
	uint32_t aq_n, aq_cap;
	int async_efd;
	/* its ITIMER_REAL (setitimer, alarm) in simulated time: SIGALRM at
	 * alarm_at, then every alarm_every (0: once) */
	sim_time_t alarm_at, alarm_every;
};

/*
 * The memory of a process that is gone stays mapped a little longer: packets
 * it sent may still be in the fabric, pointing at their payload there.
 */
struct grave {
	struct grave *next;
	void *map;
	size_t len;		/* 0: a malloc'ed buffer of the daemon's */
	sim_time_t until;
};
#define GRAVE_PS	(10 * SIM_MS)

/* Received bytes waiting for the time they become visible (hca_place_fn). */
struct place {
	struct place *next;
	sim_time_t vis;
	uint8_t *dst;
	uint32_t len;
	bool quiet;	/* no completion announces them (hca_place_fn) */
	bool last;	/* a message's last packet's */
	uint8_t data[];
};

struct srv {
	struct ev_loop *loop;
	int async_mute;		/* destroying an object: the events it raises go nowhere */
	ev_io listen_w;
	ev_timer idle_w;
	ev_signal stop_w[4];	/* SIGINT, SIGTERM, SIGHUP, SIGQUIT */
	ev_timer watch_w;	/* silent clients (watch_cb) */
	double hold_limit_s;
	uint32_t nlive;		/* attached, not detached */
	uint64_t evicted;
	uint64_t requests, attached;	/* for the line at exit (bench/soak reads it) */
	int lfd;
	char path[108];		/* sizeof(sockaddr_un.sun_path) */
	char hosts_path[108 + sizeof(SHIM_HOSTS_SUFFIX)];	/* hosts_write */
	dev_t sock_dev;		/* the socket file it made (unlink_socket) */
	ino_t sock_ino;
	struct net net;
	struct fab_params p;
	struct fab *f;
	struct sim_engine *eng;
	struct fab_msgs msgs;
	struct shim_clock *clk;
	int clk_fd;
	uint64_t alive_used[(SHIM_ALIVE_SLOTS + 63) / 64];	/* the clock page's stamps taken */
	struct client *clients;
	uint32_t next_host;
	int nhosts;
	double idle_exit_s;
	bool quiet;
	bool trace;		/* $IBFAB_SERVE_TRACE: a line per request */
	bool in_advance;
	struct place *places, **places_tail;
	struct grave *graves;
	ev_io spin_w;		/* spin_tfd: when the silent ones may count as waiting */
	int spin_tfd;
	double spin_grace;
	uint64_t advances;	/* advance() calls so far */
	struct cm_srv *cm;	/* the connection manager (serve_cm.c), NULL until used */
	const char *routing;	/* --routing: the engine a fault's reroute runs */
	bool faults;		/* --fault: link changes are scheduled */
};

/* serve.c's helpers for the other files of the daemon */
void srv_log(struct srv *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void srv_reply(struct client *c, const struct shim_rep *r, int fd);
void srv_status(struct client *c, int status);
int srv_obj_new(struct client *c, enum obj_type t, uint32_t *h);
struct obj *srv_obj_get(struct client *c, uint32_t h, enum obj_type t);
void srv_park(struct client *c, enum wait_kind k, sim_time_t deadline, uint32_t h, uint32_t n);
sim_time_t srv_sat_add(sim_time_t a, sim_time_t b);

/*
 * The connection manager (serve_cm.c): rdma_cm's ids and event channels
 * as objects of a client, its messages as datagrams between the hosts.
 */
int cm_op(struct client *c, const struct shim_req *q, const uint8_t *tail, int *fd);
/* Free an O_CMCH or O_CMID object (the peer hears of it as on hardware). */
void cm_obj_destroy(struct client *c, struct obj *o, uint32_t h);
/* W_CMEV: answer if the channel has an event; true if woken. */
bool cm_try_wake(struct client *c);
/* Deliver the messages that have arrived by now; the next arrival. */
void cm_apply(struct srv *s);
sim_time_t cm_next(const struct srv *s);
void cm_fini(struct srv *s);

#endif
