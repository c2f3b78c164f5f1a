/* SPDX-License-Identifier: MIT */
/*
 * trace_replay.c - runs a lowered workload on the simulated fabric through
 * the HCA's verbs model (models/hca/hca.h); see trace_replay.h.
 *
 * Transfers are RDMA WRITEs with immediate data carrying the step's index,
 * one RC queue pair per ordered (rank, peer) pair used, a receive posted
 * at the peer ahead of every transfer (a batch at a time); the peer's
 * RECV_RDMA_WITH_IMM completion, at the time its CQE is visible, marks the
 * step done. That is how NCCL's IB transport signals arrival, and what a
 * program could see.
 * On GPU servers (fab_server: models/server) a transfer between two GPUs
 * of one NVLink domain goes over NVLink instead - the GPU's port queue
 * (nvq), the server model's pipes, no queue pair - and a transfer to
 * another server whose GPU index differs is relayed over NVLink to the
 * local GPU on the receiver's rail, whose HCA posts it (PXN); the ranks'
 * buffers are GPU memory, staged through host bounce buffers when
 * GPUDirect RDMA is off (host.gpudirect). A collective's NCCL protocol
 * (trace_op_proto) sets its transfers' bytes on the wire and NVLink
 * latency, and LL's between servers go through host memory (ll_staged);
 * where NCCL's tuning model applies, a collective's steps wait for its
 * kernel's launch (coll_launch_ps).
 * Compute steps occupy their rank one at a time. A step becomes ready when
 * its last dependency is done and starts then (a compute step: when its
 * rank is also free). The replay keeps its own small event heap so steps
 * start at the simulated time they become ready.
 *
 * What it holds grows with the steps in flight, not with the program. A
 * step is *made* - given a record with its dependency count, its ready
 * time and the critical path so far - no later than the first of its
 * dependencies finishes, in order within its segment (each lazy op, each
 * run of stored steps between them, has a frontier of its own): a
 * finished step has every step that waits for it made first - its
 * dependents in the same lazy collective are at most the algorithm's
 * reach after it, the others are listed per segment before the run. The
 * record is freed when the step finishes. A pair's queue pairs likewise:
 * their numbers are taken at the start, in the table's order, so that
 * what a QP number decides (ECMP's and flowlets' flow hash, the HCA's
 * order of QPs) is as if all were made then; the QPs themselves are made
 * at the pair's first transfer and destroyed once idle after its last
 * (hca_qp_idle: nothing unacknowledged, owed or armed), oldest pair first
 * - an all-to-all holds the pairs in flight, not N(N-1). Kept to the end
 * on fabric=tcp (a connection's CPU core is chosen in creation order) and
 * in runs with faults (the fault report counts every QP's state).
 * Results are kept as running
 * sums: each rank's compute, communication and overlap time by a sweep
 * over its intervals as they close, each op's first start and last end,
 * the critical path's length and split carried from step to step. Only
 * when the program is not lazy does the replay also keep every step's
 * times (trace_results.step); a lazy one with keep_times writes them to a
 * file for the outputs that list steps (trace_spill.c). Messages of the
 * fabric's own may run beside the steps (background load): the last step
 * ends the run (fab_hold).
 * With mpi.proto=ucx a transfer between CPU ranks is an MPI message as UCX
 * sends it (traces/mpi_proto.c): SENDs (the last with the step as
 * immediate data) up to the rendezvous threshold; from it a request, the
 * receiver's RDMA READ and its acknowledgement back, whose arrival at the
 * sender completes the step (a SEND with immediate, received on the
 * sender's QP). A pair then counts its SEND work requests where it counts
 * transfers (nxfer, done).
 */
#include "traces/trace_replay.h"
#include "traces/mpi_proto.h"
#include "traces/trace_spill.h"
#include "traces/trace_fmt.h"
#include "traces/trace_sat.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/hca/hca.h"
#include "models/host/host.h"
#include "sim/sim_log.h"
#include "sim/sim_mem.h"
#include "sim/sim_parse.h"
#include "sim/sim_pool.h"

/*
 * A pair with more transfers than a send queue holds (the model HCA takes
 * at most HCA_MAX_QP_WR, 2^20, work requests a queue) posts at most
 * PAIR_SQ_MAX at a time; the rest wait, in order, in its backlog. Every
 * PAIR_SIGNAL_EVERY-th send it posts is signalled: its completion says
 * that it and every send before it on the RC queue pair have left the send
 * queue (IBA 10.8.6: completions in order), and the backlog moves on. The
 * pairs of ordinary traces never get a backlog: their queues hold all
 * their transfers, and nothing about them changes.
 */
#define PAIR_SQ_MAX (HCA_MAX_QP_WR - RECV_BATCH - 1)
#define PAIR_SIGNAL_EVERY 4096u

struct pair_backlog {
	uint32_t *q;		/* steps ready but not posted: a FIFO ring */
	uint32_t head, len, cap;
	uint32_t acked;		/* sends known to have left the send queue */
};

struct pair_qp {
	uint64_t key;		/* rank * nranks + peer + 1; 0 = empty slot */
	struct hca_qp *sqp, *rqp;	/* NULL before its first transfer and once idle after its last */
	uint32_t sqpn, rqpn;	/* their numbers, taken at the start (hca_reserve_qpn) */
	uint32_t nxfer;		/* transfers over it (queue depths); mpi.proto=ucx: SENDs */
	uint32_t done;		/* of them, done */
	uint32_t lkey, rkey;	/* the sender's and the peer's MR: read here, not through rank_node and mr */
	uint32_t sent, posted;	/* transfers posted at the sender, receives at the peer */
	struct pair_backlog *bl;	/* only where nxfer > PAIR_SQ_MAX */
};

/* Receives are posted at the peer this many at a time, ahead of the
 * sends (post_recvs): all of them before the run took 24 bytes per
 * transfer (50 MB on a 1,024-rank ring), one with each send touched the
 * peer's QP at the sender's time (4.7% more cache misses). At most
 * sends in flight + RECV_BATCH are posted: within the receive queue's
 * HCA_MAX_QP_WR when the sends are within PAIR_SQ_MAX. */
#define RECV_BATCH 16

/* EV_POST: a relayed (PXN) transfer's first bytes are at the relay GPU:
 * its HCA may start sending; EV_NVQ: a GPU's NVLink port is free (its
 * node in the event's step field) */
/* EV_READ: an MPI rendezvous request is in at the receiver, which reads
 * the data; EV_ATS: the read is done, the receiver acknowledges */
/* EV_FAN: steps of a fan are done (its first step in the event's step
 * field; the kind's bits 8-15 the first's place in the fan, bits 16-23
 * how many more after it end at the same time) */
enum { EV_START, EV_DONE, EV_ROOM, EV_POST, EV_NVQ, EV_READ, EV_ATS, EV_FAN };

/* A step the replay has made and not finished (see the top of the file). */
struct live {
	struct trace_step st;
	sim_time_t ready, start;
	/* the critical path up to the dependency chosen (trace_step_time.crit):
	 * its steps, and their compute and communication time */
	uint64_t cn;
	sim_time_t ccomp, ccomm;
	uint32_t crit;		/* that dependency, UINT32_MAX none */
	uint32_t left;		/* dependencies not yet done */
	bool crank;		/* it waited for its rank's previous compute instead */
	bool relayed;		/* began before its post: a PXN relay's NVLink hop, or a
				 * staging copy (its start and comm time count from then) */
	/* finished, kept for the steps beyond its op's near reach that wait
	 * for it (coll_algo.far): `ready` is when it ended, cn, ccomp and
	 * ccomm the critical path to its end */
	bool finished;
	/* a fan's first step (trace_step.fan), made with its fan: its steps
	 * not yet done; the table finds the record by each of them */
	bool fanned;
	uint8_t fan_left;
	uint32_t s;		/* its step */
	/* the steps made so far that wait for it, as their records' pool
	 * indexes: no table lookup for each when it finishes */
	uint32_t nd, dcap;
	union {
		uint32_t in[2];	/* up to two (a ring step has two) */
		uint32_t *v;
	} d;
};

/* The critical path ending at a finished step: what its dependents copy. */
struct crit_sum {
	uint64_t n;
	sim_time_t comp, comm;
};

/* A counted join's wait (trace_step.counted): the transfers of its op
 * that involve its rank and are still to end, and the last end so far
 * with the critical path to it - what tell_dependents gives a join that
 * lists the exits among them (every transfer on the rank ends before one
 * of those, so the last end is an exit's). */
struct cwait {
	uint32_t join;		/* its step */
	uint32_t left;
	uint32_t crit;		/* the transfer that ended last (the first such), UINT32_MAX none */
	uint32_t next;		/* the next wait on the same op and rank, + 1; 0 none */
	sim_time_t ready;
	struct crit_sum sum;
};

struct seg {
	uint32_t first, end, made;	/* its steps [first, end), made [first, made) */
	const struct trace_lazy *z;	/* a lazy op, or NULL: stored steps */
};

struct xdep {
	uint32_t s, seg, max;
};

/* An endpoint's running times (trace_rank_time by a sweep). */
struct rank_sweep {
	uint32_t inflight;	/* transfers to or from it */
	sim_time_t open;	/* since when, while inflight */
	/* compute intervals that may still overlap a transfer: in start order
	 * (a rank computes one thing at a time), a FIFO ring */
	sim_time_t (*ci)[2];
	uint32_t chead, clen, ccap;
	struct crit_sum last;	/* its last finished compute step's path */
};

struct replay {
	const struct trace_program *p;
	const struct trace *t;
	struct fab *f;
	struct sim_engine *eng;
	struct trace_results *r;
	uint32_t comp;
	struct sim_cal q;		/* the replay's own events ahead (push), in (time, seq) order */
	uint64_t seq;
	struct pair_backlog now;	/* events due now, as (step, kind) pairs (push) */
	struct sim_wake wake;
	/* the step its queue's first event is for (UINT32_MAX: none, or not
	 * a step's), as its last wake-up left it: the look-ahead's guess */
	uint32_t hint;
	/* how long after its CQE the program acts on a transfer's completion:
	 * the fabric's look-ahead (fab_lookahead), see done_seen() */
	sim_time_t seen;
	/* a replica in every partition of a partitioned run (trace_replay_start):
	 * every replica keeps every step; an HCA is posted to only where its
	 * node runs, and a completion is told to every replica */
	bool every;
	/* no completion needs its step's record (cq_bare) */
	bool cq_bare;
	/* the most steps it may hold at once: a lazy program's share of
	 * sim.max_memory (trace_program.max_bytes: `share`, this replay's
	 * when several hold theirs) beyond its stored steps */
	size_t live_max;
	uint64_t share;
	uint32_t *zero;			/* the steps that start at once, until the run */
	size_t nzero;
	/* the steps made and not finished: records from a pool, found by
	 * step through a window (slot s mod wcap: the record's pool index + 1,
	 * 0 empty) and, for a step whose slot another holds, an overflow
	 * table (open addressing, key s + 1, 0 empty): live_get() */
	struct sim_pool pool;
	uint32_t *win;
	size_t wcap, wn, spilled;
	struct { uint32_t key, ix; } *tab;
	size_t tcap, tn;
	/* the program in segments - each lazy op, each run of stored steps
	 * between them - each made in order up to its own frontier */
	struct seg *seg;
	size_t nseg;
	/* for each step that others wait for (but a lazy op's own, within its
	 * reach): per segment, the last step there that waits for it. The
	 * frontiers pass those before the step finishes. Sorted by step. */
	struct xdep *xdep;
	size_t nxdep;
	/* the finished steps kept (live.finished) until their op's frontier
	 * is a reach past them, in the order they finished */
	struct pair_backlog kept;
	sim_time_t *rank_free;		/* a rank computes one thing at a time */
	uint32_t *rank_last;		/* its last compute step (critical path) */
	struct rank_sweep *sw;		/* per endpoint */
	bool *op_seen;			/* per op: a step has started */
	struct crit_sum best;		/* the path to the last step to end */
	uint32_t best_s;
	sim_time_t best_end;
	struct pair_qp *pairs;
	size_t npairs, npairs_cap;
	struct pair_qp **bls;		/* the pairs with a backlog */
	size_t nbls, nbls_cap;
	/* a pair's QPs are made at its first transfer and destroyed once idle
	 * after its last (not on TCP, whose connections keep their own state,
	 * nor with faults, whose report counts the QPs): the pairs done, in
	 * order, waiting for their QPs to be idle */
	bool qp_life;
	struct pair_backlog retire;	/* a FIFO of pair indexes, as a backlog's of steps */
	size_t qp_live, qp_peak;	/* pairs holding QPs */
	struct hca_mr **mr;		/* per node */
	/* per GPU node: a region in its host memory, for LL's buffers between
	 * servers (ll_staged); NULL where there is none */
	struct hca_mr **mr_host;
	struct hca_cq **cq;		/* per node */
	bool failed;
	struct sim_diag fail;
	size_t joins_done;		/* TS_JOIN steps among r->steps_done */
	/* GPU servers (models/server): transfers within an NVLink domain go
	 * over NVLink, not the fabric; a send to another server may be
	 * relayed to the GPU on the receiver's rail (PXN). NULL: none. */
	struct srv_map *srv;
	/* an LL transfer's data over NVLink at most at LL's rate on one
	 * channel (trace_tune_ll_channel_gbps): ps per KiB; 0 = the port's */
	uint64_t ll_ps_per_kb;
	/* GPU buffers without GPUDirect RDMA (host.gpudirect=off): a transfer
	 * over the fabric is copied to a host bounce buffer before it is
	 * posted and from one after it lands (models/host), as NCCL does
	 * without GDR; no PXN relay then (its relay reads GPU memory) */
	bool stage;
	bool host_model;		/* host.model=on: staging costs what models/host says */
	uint32_t max_inline;		/* hca.max_inline: a CPU rank's transfers up to it go inline */
	bool mpi;			/* mpi.proto=ucx: CPU ranks' transfers as UCX sends them */
	struct mpi_params mp;
	/* GPU servers with NCCL's tuning model (trace.tune): per op, when its
	 * collective's kernel has started (coll_launch_ps); NULL elsewhere */
	sim_time_t *op_go;
	struct pair_backlog *nvq;	/* per net node: steps waiting for its GPU's NVLink port */
	bool *nvq_armed;		/* an EV_NVQ is pending for the node */
	/* SHARP's streaming trees (trace_sat.c, ib.sharp_sat), NULL without
	 * a streaming collnet op or a limit: per op, its steps done (its end
	 * frees its tree), the steps that wait for its tree, since when */
	struct trace_sat *sat;
	uint32_t *op_done;
	struct pair_backlog *sat_q;
	sim_time_t *sat_t0;
	/* counted joins (trace_step.counted): their waits, found per op and
	 * rank through cwtab[op][rank] (+ 1; NULL for an op none waits for);
	 * the joins a transfer's end has just released, in step order */
	struct cwait *cw;
	size_t ncw, cwcap;
	uint32_t **cwtab;
	uint32_t *cwgo;
	size_t ncwgo, cwgocap;
};

/* Steps done and in all, as the report counts them: without the joins,
 * which the lowering adds and no user wrote (traces/coll.c). */
static size_t steps_shown(const struct replay *rp)
{
	return rp->r->steps_done - rp->joins_done;
}

static size_t steps_total(const struct trace_program *p)
{
	return p->nsteps - p->njoins;
}

/* Is node's HCA run here (every node, in a run of one list)? A replica
 * (rp->every) keeps every step, and posts only to the HCAs it runs. */
static bool node_here(const struct replay *rp, int node)
{
	return fab_node_local(rp->f, node);
}
/* ---- queue pairs per (rank, peer) -------------------------------------- */

static uint64_t pair_key(const struct replay *rp, int32_t a, int32_t b)
{
	return (uint64_t)a * (uint64_t)trace_nendpoints(rp->t) + (uint64_t)b + 1;
}

static struct pair_qp *pair_slot(struct pair_qp *v, size_t cap, uint64_t key)
{
	size_t mask = cap - 1;
	size_t i = (size_t)(key * 0x9e3779b97f4a7c15ULL >> 20) & mask;

	while (v[i].key && v[i].key != key)
		i = (i + 1) & mask;
	return &v[i];
}

/* The table holds one entry per ordered pair that transfers (a ring: 2 per
 * rank, however many steps), kept at most half full: it doubles as pairs
 * are added rather than being sized by the number of transfers. */
static int pairs_grow(struct replay *rp)
{
	size_t cap = rp->npairs_cap ? 2 * rp->npairs_cap : 64;
	struct pair_qp *v = calloc(cap, sizeof(*v));

	if (!v)
		return -1;
	for (size_t i = 0; i < rp->npairs_cap; i++)
		if (rp->pairs[i].key)
			*pair_slot(v, cap, rp->pairs[i].key) = rp->pairs[i];
	free(rp->pairs);
	rp->pairs = v;
	rp->npairs_cap = cap;
	return 0;
}

static struct pair_qp *pair_find(struct replay *rp, int32_t a, int32_t b, bool add)
{
	uint64_t key = pair_key(rp, a, b);
	struct pair_qp *pq;

	if (!rp->npairs_cap)
		return NULL;
	pq = pair_slot(rp->pairs, rp->npairs_cap, key);
	if (pq->key || !add)
		return pq->key ? pq : NULL;
	if (2 * (rp->npairs + 1) > rp->npairs_cap) {
		if (pairs_grow(rp))
			return NULL;
		pq = pair_slot(rp->pairs, rp->npairs_cap, key);
	}
	pq->key = key;
	rp->npairs++;
	return pq;
}

static void replay_fail(struct replay *rp, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void replay_fail(struct replay *rp, const char *fmt, ...)
{
	va_list ap;

	if (rp->failed)
		return;
	rp->failed = true;
	sim_diag_clear(&rp->fail);
	va_start(ap, fmt);
	vsnprintf(rp->fail.msg, sizeof(rp->fail.msg), fmt, ap);
	va_end(ap);
	fab_driver_fail(rp->f, rp->fail.msg);	/* halts; fab_run returns it */
}

static int connect_pair(struct replay *rp, struct pair_qp *pq, int32_t a, int32_t b);
static void pair_ranks(const struct replay *rp, const struct pair_qp *pq, int32_t *a, int32_t *b);

static void oom_fail(struct replay *rp)
{
	replay_fail(rp, "out of memory replaying (%zu of %zu steps done)", steps_shown(rp),
		    steps_total(rp->p));
}

/*
 * A lazy program's set-up check counts a few reaches of each collective
 * (trace_lower_estimate); should the replay need more at once, it stops
 * with this rather than run the machine out of memory.
 */
static void hold_fail(struct replay *rp, uint32_t op)
{
	const struct trace_op *o = &rp->t->ops[op];
	char lab[64], hb[32], hl[32];

	replay_fail(rp,
		    "making %s at %s:%d (%zu of %zu steps done), the replay would hold more than %zu steps at once, about %s at %u bytes a step: all that its share of sim.max_memory, %s%s, leaves it; raise it (--set sim.max_memory=SIZE), or use fewer ranks, chunks or channels",
		    o->name[0] ? trace_op_label(rp->t, op, lab, sizeof(lab)) :
		    o->kind == TRACE_COLL ? trace_coll_names[o->coll] : "a step",
		    o->file ? o->file : "?", o->line,
		    steps_shown(rp), steps_total(rp->p), rp->live_max,
		    sim_fmt_mem((uint64_t)rp->live_max * TRACE_STEP_BYTES, hb, sizeof(hb)),
		    TRACE_STEP_BYTES, sim_fmt_mem(rp->share, hl, sizeof(hl)),
		    rp->p->replays > 1 ? " (one partition's on this machine)" :
		    rp->p->max_bytes ? "" : " (half of the memory this process may use)");
}

/* ---- the steps in flight ---------------------------------------------------- */

/*
 * Where a step's record is. Most lookups are of steps near one another in
 * the collective's order (a step's dependencies, made a few steps before
 * it; a domain's G NVLink reads and its multicasts, finishing together),
 * and the steps in flight are a window of the order, so a step's slot is
 * its number modulo the window (wcap, a power of two): 16 consecutive
 * steps share one 64-byte line, which the lookups of a block's steps
 * meet in turn, where a hash table of (step, index) pairs misses the
 * cache at nearly every lookup (2.5 lookups a step; its probe took 5.8%
 * of 128 DGX H100-like servers' allreduce). A slot names a record,
 * and the record its step (a fan's steps all name their leader's), so a
 * slot another step holds - two in flight a multiple of wcap apart - is
 * told apart, and the second step goes to the overflow table. The window
 * doubles while the overflow holds more than an eighth of the steps, up
 * to WIN_SPREAD slots a step in flight: a program whose steps in flight
 * are spread thin (concurrent collectives far apart in its order) keeps
 * the rest in the overflow rather than a window as wide as the program.
 */
#define WIN_MIN		4096
#define WIN_SPREAD	16

static bool live_is(const struct live *l, uint32_t s)
{
	return l->s == s || (l->fanned && s - l->s < l->st.fan);
}

/* The step in window slot j, whose record is l (a fan's: one of its steps). */
static uint32_t win_step(size_t wcap, size_t j, const struct live *l)
{
	return l->s + (uint32_t)((j - l->s) & (wcap - 1));
}

/* The overflow: a key's home slot, by Fibonacci hashing. */
static size_t tab_home(const struct replay *rp, uint32_t key)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 24) & (rp->tcap - 1);
}

static struct live *ovf_get(const struct replay *rp, uint32_t s)
{
	uint32_t key = s + 1;

	for (size_t i = tab_home(rp, key);; i = (i + 1) & (rp->tcap - 1)) {
		if (rp->tab[i].key == key)
			return sim_pool_get(&rp->pool, rp->tab[i].ix);
		if (!rp->tab[i].key)
			return NULL;
	}
}

static struct live *live_get(const struct replay *rp, uint32_t s)
{
	if (!rp->wcap)
		return NULL;
	const uint32_t v = rp->win[s & (rp->wcap - 1)];

	if (v) {
		struct live *l = sim_pool_get(&rp->pool, v - 1);

		if (live_is(l, s))
			return l;
	}
	return rp->tn ? ovf_get(rp, s) : NULL;
}

/* Room for one more entry in the overflow: kept at most half full. */
static int ovf_room(struct replay *rp)
{
	size_t cap = rp->tcap ? 2 * rp->tcap : 1024, old = rp->tcap;
	__typeof__(rp->tab) v, o = rp->tab;

	if (2 * (rp->tn + 1) <= rp->tcap)
		return 0;
	v = calloc(cap, sizeof(*v));
	if (!v)
		return -1;
	rp->tab = v;
	rp->tcap = cap;
	for (size_t k = 0; k < old; k++) {
		if (!o[k].key)
			continue;
		size_t i = tab_home(rp, o[k].key);

		while (v[i].key)
			i = (i + 1) & (cap - 1);
		v[i] = o[k];
	}
	free(o);
	return 0;
}

static void ovf_put(struct replay *rp, uint32_t s, uint32_t ix)
{
	size_t i = tab_home(rp, s + 1);

	while (rp->tab[i].key)
		i = (i + 1) & (rp->tcap - 1);
	rp->tab[i].key = s + 1;
	rp->tab[i].ix = ix;
	rp->tn++;
}

/* Take s out of the overflow, moving back the entries its slot held up
 * (linear probing's deletion: no tombstones to slow the lookups). */
static uint32_t ovf_del(struct replay *rp, uint32_t s)
{
	size_t m = rp->tcap - 1, i = tab_home(rp, s + 1), j;
	uint32_t ix;

	while (rp->tab[i].key != s + 1)
		i = (i + 1) & m;
	ix = rp->tab[i].ix;
	for (j = (i + 1) & m; rp->tab[j].key; j = (j + 1) & m) {
		size_t h = tab_home(rp, rp->tab[j].key);

		/* move j to i unless its home lies cyclically in (i, j] */
		if (i <= j ? (h <= i || h > j) : (h <= i && h > j)) {
			rp->tab[i] = rp->tab[j];
			i = j;
		}
	}
	rp->tab[i].key = 0;
	rp->tn--;
	return ix;
}

/* Step s (record ix) into its slot, or the overflow (room made: tab_room). */
static void tab_put(struct replay *rp, uint32_t s, uint32_t ix)
{
	uint32_t *v = &rp->win[s & (rp->wcap - 1)];

	if (*v) {
		ovf_put(rp, s, ix);
		rp->spilled++;
		return;
	}
	*v = ix + 1;
	rp->wn++;
}

/* A window of cap slots, every step in flight moved into it. */
static int win_grow(struct replay *rp, size_t cap)
{
	uint32_t *old = rp->win, *v = sim_mem_calloc(cap, sizeof(*v));	/* huge pages */
	__typeof__(rp->tab) o = rp->tab;
	const size_t ocap = rp->wcap, otcap = rp->tcap;

	if (!v)
		return -1;
	rp->win = v;
	rp->wcap = cap;
	rp->wn = 0;
	rp->tab = NULL;
	rp->tcap = rp->tn = 0;
	for (size_t j = 0; j < ocap; j++) {
		if (!old[j])
			continue;
		const uint32_t s = win_step(ocap, j, sim_pool_get(&rp->pool, old[j] - 1));

		if (v[s & (cap - 1)] && ovf_room(rp))
			goto oom;
		tab_put(rp, s, old[j] - 1);
	}
	for (size_t k = 0; k < otcap; k++) {
		if (!o[k].key)
			continue;
		if (v[(o[k].key - 1) & (cap - 1)] && ovf_room(rp))
			goto oom;
		tab_put(rp, o[k].key - 1, o[k].ix);
	}
	free(old);
	free(o);
	return 0;
oom:	/* as it was */
	free(v);
	free(rp->tab);
	rp->win = old;
	rp->wcap = ocap;
	rp->tab = o;
	rp->tcap = otcap;
	rp->wn = rp->tn = 0;
	for (size_t j = 0; j < ocap; j++)
		rp->wn += old[j] != 0;
	for (size_t k = 0; k < otcap; k++)
		rp->tn += o[k].key != 0;
	return -1;
}

/* Room for one more step: the window, wider while the overflow holds
 * more than an eighth of the steps, and the overflow's room. */
static int tab_room(struct replay *rp)
{
	const size_t n = rp->wn + rp->tn;

	if (!rp->wcap)
		return win_grow(rp, WIN_MIN);
	if (rp->tn >= 64 && 8 * rp->tn > n && rp->wcap < WIN_SPREAD * n &&
	    win_grow(rp, 2 * rp->wcap))
		return -1;
	return ovf_room(rp);
}

/* Take step s out: its record's index. */
static uint32_t tab_del(struct replay *rp, uint32_t s)
{
	uint32_t *v = &rp->win[s & (rp->wcap - 1)];

	if (*v && live_is(sim_pool_get(&rp->pool, *v - 1), s)) {
		const uint32_t ix = *v - 1;

		*v = 0;
		rp->wn--;
		return ix;
	}
	return ovf_del(rp, s);
}

/* The segment holding step s. */
static struct seg *seg_of(const struct replay *rp, uint32_t s)
{
	size_t lo = 0, hi = rp->nseg;

	while (lo < hi) {	/* the last segment that starts at or before s */
		size_t mid = lo + (hi - lo) / 2;

		if (rp->seg[mid].first <= s)
			lo = mid + 1;
		else
			hi = mid;
	}
	return &rp->seg[lo - 1];
}

/* Made after dependency dl finished (it was kept: coll_algo.far): what
 * step_done tells a dependent, the first of equal ends taking it. */
static void dep_finished(struct live *l, const struct live *dl)
{
	if (dl->ready >= l->ready) {
		if (dl->ready > l->ready || l->crit == UINT32_MAX) {
			l->crit = dl->s;
			l->cn = dl->cn;
			l->ccomp = dl->ccomp;
			l->ccomm = dl->ccomm;
		}
		l->ready = dl->ready;
	}
	l->left--;
}

static int dependent_add(struct live *l, uint32_t ix)
{
	/* a fan's steps share l: a step that waits for all of them (one
	 * after another in its list) is told once a step of it is done, as
	 * by each alone */
	if (l->fanned && l->nd && (l->dcap ? l->d.v : l->d.in)[l->nd - 1] == ix)
		return 0;
	if (l->nd < 2 && !l->dcap) {
		l->d.in[l->nd++] = ix;
		return 0;
	}
	if (l->nd == l->dcap || !l->dcap) {
		uint32_t cap = l->dcap ? 2 * l->dcap : 8;
		uint32_t *v = malloc(cap * sizeof(*v));

		if (!v)
			return -1;
		memcpy(v, l->dcap ? l->d.v : l->d.in, l->nd * sizeof(*v));
		if (l->dcap)
			free(l->d.v);
		l->d.v = v;
		l->dcap = cap;
	}
	l->d.v[l->nd++] = ix;
	return 0;
}

/* The first entry of the list of waits across segments for step s or a
 * later one (nxdep if none). */
static size_t xdep_from(const struct replay *rp, uint32_t s)
{
	size_t lo = 0, hi = rp->nxdep;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rp->xdep[mid].s < s)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Does a step of another segment wait for one of the steps [a, b)? */
static bool xdep_any(const struct replay *rp, uint32_t a, uint32_t b)
{
	size_t lo = xdep_from(rp, a);

	return lo < rp->nxdep && rp->xdep[lo].s < b;
}

/* Make the steps of segment g up to `upto` (exclusive): each registers
 * with the dependencies it waits for, none of which has finished (see
 * the top of the file). */
static void make_upto(struct replay *rp, struct seg *g, uint64_t upto)
{
	const struct trace_program *p = rp->p;
	uint32_t buf[TRACE_STEP_MAXDEPS];

	if (upto > g->end)
		upto = g->end;
	while (g->made < upto && !rp->failed) {
		uint32_t s = g->made, ix;
		const uint32_t *deps;
		struct trace_step tmp;
		const struct trace_step *st = trace_program_step(p, s, &tmp, &deps, buf);
		struct live *l;

		if (tab_room(rp) || (ix = sim_pool_alloc(&rp->pool)) == SIM_POOL_NIL) {
			oom_fail(rp);
			return;
		}
		if (rp->pool.live > rp->live_max) {
			sim_pool_put(&rp->pool, ix);
			hold_fail(rp, st->op);
			return;
		}
		l = sim_pool_get(&rp->pool, ix);
		memset(l, 0, sizeof(*l));
		l->st = *st;
		l->s = s;
		l->left = st->ndeps;
		l->crit = UINT32_MAX;
		for (uint32_t k = 0; k < st->ndeps; k++) {
			struct live *dl = live_get(rp, deps[k]);
			struct seg *ge;

			if (dl && dl->finished) {
				/* done already (a far step, kept): as step_done
				 * would have told it, the first to end first */
				dep_finished(l, dl);
				continue;
			}

			if (!dl && deps[k] >= (ge = seg_of(rp, deps[k]))->made) {
				/* not made yet, in an earlier segment: made first */
				make_upto(rp, ge, (uint64_t)deps[k] + 1);
				dl = live_get(rp, deps[k]);
			}
			if (!dl) {
				replay_fail(rp, "internal error: step %u was made after step %u, which it waits for, finished",
					    s, deps[k]);
				sim_pool_put(&rp->pool, ix);
				return;
			}
			if (dependent_add(dl, ix)) {
				oom_fail(rp);
				sim_pool_put(&rp->pool, ix);
				return;
			}
		}
		if (!l->left && st->ndeps) {
			/* the algorithm's near reach let every step it waits for
			 * finish first (coll_lower_gen checks that it cannot) */
			replay_fail(rp, "internal error: step %u was made after every step it waits for finished", s);
			sim_pool_put(&rp->pool, ix);
			return;
		}
		tab_put(rp, s, ix);
		if (st->fan > 1 && !xdep_any(rp, s, s + st->fan)) {
			/* its fan comes with it: one record, which each of its
			 * steps finds (unless a step of another segment waits
			 * for one of them: an op after it) */
			l->fanned = true;
			l->fan_left = st->fan;
			for (uint32_t i = 1; i < st->fan; i++) {
				if (tab_room(rp)) {
					oom_fail(rp);
					return;
				}
				tab_put(rp, s + i, ix);
			}
			g->made += st->fan;
		} else {
			g->made++;
		}
	}
}

/* The record of step s, made now if the replay has not reached it (a step
 * with no dependencies, started from the list made before the run). */
static struct live *live_need(struct replay *rp, uint32_t s)
{
	struct seg *g = seg_of(rp, s);

	if (s >= g->made)
		make_upto(rp, g, (uint64_t)s + 1);
	return live_get(rp, s);
}

static void live_free(struct replay *rp, uint32_t s)
{
	uint32_t ix = tab_del(rp, s);
	struct live *l = sim_pool_get(&rp->pool, ix);

	for (uint32_t i = 1; l->fanned && i < l->st.fan; i++)
		tab_del(rp, s + i);

	if (l->dcap)
		free(l->d.v);
	sim_pool_put(&rp->pool, ix);
}

/* Drop the finished steps kept whose op's frontier is a reach past them:
 * every step that waits for them is made. In the order they finished,
 * which is close to step order; one kept a little long costs a record. */
static void kept_drain(struct replay *rp)
{
	struct pair_backlog *q = &rp->kept;

	while (q->len) {
		const uint32_t s = q->q[q->head];
		const struct seg *g = seg_of(rp, s);

		if (g->made < g->end && g->made - s <= g->z->reach)
			return;
		live_free(rp, s);
		q->head = (q->head + 1) % q->cap;
		q->len--;
	}
}

/* Before step s finishes: make every step that waits for it - its lazy
 * op's own within reach, and the last one in each segment the list
 * before the run names. */
static void make_dependents(struct replay *rp, uint32_t s)
{
	struct seg *g = seg_of(rp, s);
	size_t lo;

	if (g->z)
		make_upto(rp, g, (uint64_t)s + g->z->near_reach + 1);
	for (lo = xdep_from(rp, s); lo < rp->nxdep && rp->xdep[lo].s == s && !rp->failed; lo++)
		make_upto(rp, &rp->seg[rp->xdep[lo].seg], (uint64_t)rp->xdep[lo].max + 1);
}

/* A step's dependents in step order, as the replay processes them: they
 * were made segment by segment, not always in that order. */
static void dependents_sort(const struct replay *rp, struct live *l)
{
	uint32_t *v = l->dcap ? l->d.v : l->d.in;

	for (uint32_t i = 1; i < l->nd; i++) {
		const uint32_t x = v[i], xs = ((const struct live *)sim_pool_get(&rp->pool, x))->s;
		uint32_t j = i;

		for (; j > 0 && ((const struct live *)sim_pool_get(&rp->pool, v[j - 1]))->s > xs; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

/* ---- events ------------------------------------------------------------ */

static void backlog_push(struct replay *rp, struct pair_backlog *b, uint32_t s);

/*
 * An event of the replay at t. One due now (most: a step whose last
 * dependency has just finished starts at once) goes on the FIFO `now`
 * instead of the heap: it would come after every event the heap holds for
 * now (they were pushed before the clock got here, with lower sequence
 * numbers) and before anything pushed later, which is the FIFO's order -
 * the same run without a heap push and pop (292 instructions a pop on the
 * heap of 16k that 16 DGX H100-like servers' allreduce keeps).
 */
static void push(struct replay *rp, sim_time_t t, uint32_t step, uint32_t kind)
{
	if (t == rp->eng->now) {
		backlog_push(rp, &rp->now, step);	/* (step, kind) pairs */
		backlog_push(rp, &rp->now, kind);
	} else {
		struct sim_event e = { .time = t, .seq = rp->seq++, .comp = step, .arg = kind };

		if (sim_cal_push(&rp->q, &e)) {
			oom_fail(rp);
			return;
		}
	}
	/* a wake is armed for the earliest event whenever there is one: this
	 * one's time, or now, is enough (sim_wake_at keeps an earlier one) */
	if (sim_wake_at(rp->eng, &rp->wake, rp->now.len ? rp->eng->now : t, rp->comp, 0))
		replay_fail(rp, "out of memory replaying");
}

static struct hca *node_hca(struct replay *rp, int32_t rank)
{
	return fab_hca(rp->f, rp->t->rank_node[rank]);
}

/* The node whose HCA sends rank a's transfers to rank b: a's own, or with
 * PXN the GPU of a's server on b's rail (srv_proxy). */
static int send_node(const struct replay *rp, int32_t a, int32_t b)
{
	const int32_t *rn = rp->t->rank_node;

	return rp->srv && !rp->stage ? srv_proxy(rp->srv, rn[a], rn[b]) : rn[a];
}

/* Ranks a and b are GPUs of one NVLink domain, or one is a GPU and the
 * other its domain's NVSwitch (NVLS): they talk over NVLink. */
static bool nvlink_pair(const struct replay *rp, int32_t a, int32_t b)
{
	const struct trace *t = rp->t;

	if (!rp->srv)
		return false;
	if (a < t->nranks && b < t->nranks)
		return srv_same_domain(rp->srv, t->rank_node[a], t->rank_node[b]);
	if (trace_is_nvs(t, a) && b < t->nranks)
		return t->rank_group[b] == trace_nvs_domain(t, a);
	if (trace_is_nvs(t, b) && a < t->nranks)
		return t->rank_group[a] == trace_nvs_domain(t, b);
	return false;
}

/* The protocol of step st's op (trace_op_proto): Simple but for collectives
 * given or tuned to LL or LL128. */
static enum trace_proto step_proto(const struct replay *rp, const struct trace_step *st)
{
	return trace_op_proto(&rp->t->ops[st->op]);
}

/*
 * Transfer st goes between GPUs of two servers with NCCL's LL protocol:
 * NCCL keeps LL's network buffers in host memory at both ends, GPUDirect
 * RDMA or not (src/transport/net.cc maps them as host memory), because
 * the GPU polls each line's flag - so the sending GPU writes its lines to
 * host memory, the HCAs move them host to host, and the receiving GPU
 * reads them from there: staged as without GPUDirect (where every
 * protocol already is), and no PXN hop over NVLink (any HCA of the server
 * reads its host memory).
 */
static bool ll_staged(const struct replay *rp, const struct trace_step *st)
{
	const int32_t *rn = rp->t->rank_node;

	return rp->srv && !rp->stage && rp->host_model && st->rank < rp->t->nranks &&
	       st->peer < rp->t->nranks && rp->srv->server[rn[st->rank]] >= 0 &&
	       rp->srv->server[rn[st->peer]] >= 0 && !nvlink_pair(rp, st->rank, st->peer) &&
	       step_proto(rp, st) == TRACE_PROTO_LL;
}

/* Staged through host bounce buffers at both ends (host.gpudirect=off, or
 * LL between servers). */
static bool staged(const struct replay *rp, const struct trace_step *st)
{
	return (rp->stage && st->rank < rp->t->nranks &&
		rp->srv->server[rp->t->rank_node[st->rank]] >= 0) || ll_staged(rp, st);
}

/* A transfer an MPI library over UCX sends (mpi.proto=ucx): between CPU
 * ranks; pl its work requests. */
static bool mpi_step(const struct replay *rp, const struct trace_step *st, struct mpi_plan *pl)
{
	if (!rp->mpi || (rp->srv && rp->srv->server[send_node(rp, st->rank, st->peer)] >= 0))
		return false;
	mpi_plan(&rp->mp, st->bytes, !st->acked, pl);
	return true;
}

/* Post the pair's next receives at the peer: up to RECV_BATCH, never more
 * than its transfers. Called before each send that would find none left,
 * so a receive is always posted before its WRITE with immediate can
 * arrive, as when all were posted before the run; the work request ids
 * are the same (the transfer's index on the pair). */
static int post_recvs(const struct replay *rp, struct pair_qp *pq)
{
	uint32_t n = pq->nxfer - pq->posted < RECV_BATCH ? pq->nxfer - pq->posted : RECV_BATCH;
	int32_t a, b;

	pair_ranks(rp, pq, &a, &b);
	const bool here = node_here(rp, rp->t->rank_node[b]);

	for (uint32_t k = 0; k < n; k++) {
		struct hca_recv_wr r = { .wr_id = pq->posted };

		if (here && hca_post_recv(pq->rqp, &r))
			return -1;
		pq->posted++;
	}
	return 0;
}

/* post_recvs for MPI's SENDs (mpi.proto=ucx): each lands in a receive
 * buffer of a segment, as in UCX's receive queue. */
static int post_recvs_mpi(const struct replay *rp, struct pair_qp *pq)
{
	uint32_t n = pq->nxfer - pq->posted < RECV_BATCH ? pq->nxfer - pq->posted : RECV_BATCH;
	int32_t a, b;

	pair_ranks(rp, pq, &a, &b);
	for (uint32_t k = 0; k < n; k++) {
		struct hca_recv_wr r = {
			.wr_id = pq->posted,
			.sg = { .addr = 0, .length = rp->mp.seg_bytes,
				.lkey = rp->mr[rp->t->rank_node[b]]->lkey },
		};

		if (hca_post_recv(pq->rqp, &r))
			return -1;
		pq->posted++;
	}
	return 0;
}

/* A transfer to or from endpoint e begins now. */
static void comm_open(struct replay *rp, int32_t e)
{
	struct rank_sweep *w = &rp->sw[e];

	if (!w->inflight++)
		w->open = rp->eng->now;
}

/* One ends now: when it was the last, [open, now] is communication time,
 * and overlap where the endpoint computed meanwhile. Compute intervals
 * ending by now can overlap no later transfer (those start now or later). */
static void comm_close(struct replay *rp, int32_t e)
{
	struct rank_sweep *w = &rp->sw[e];
	struct trace_rank_time *rt = &rp->r->rank[e];
	sim_time_t a = w->open, b = rp->eng->now;

	if (--w->inflight)
		return;
	rt->comm_ps += b - a;
	for (uint32_t k = 0; k < w->clen; k++) {
		const sim_time_t *c = w->ci[(w->chead + k) % w->ccap];
		sim_time_t lo = c[0] > a ? c[0] : a, hi = c[1] < b ? c[1] : b;

		if (hi > lo)
			rt->overlap_ps += hi - lo;
	}
	while (w->clen && w->ci[w->chead][1] <= b) {
		w->chead = (w->chead + 1) % w->ccap;
		w->clen--;
	}
}

static int compute_add(struct rank_sweep *w, sim_time_t a, sim_time_t b)
{
	if (w->clen == w->ccap) {
		uint32_t cap = w->ccap ? 2 * w->ccap : 4;
		sim_time_t (*v)[2] = malloc(cap * sizeof(*v));

		if (!v)
			return -1;
		for (uint32_t k = 0; k < w->clen; k++)
			memcpy(v[k], w->ci[(w->chead + k) % w->ccap], sizeof(*v));
		free(w->ci);
		w->ci = v;
		w->ccap = cap;
		w->chead = 0;
	}
	w->ci[(w->chead + w->clen++) % w->ccap][0] = a;
	w->ci[(w->chead + w->clen - 1) % w->ccap][1] = b;
	return 0;
}

/*
 * An MPI message over UCX (mpi.proto=ucx): its SENDs, the last with the
 * step as immediate data (the others' completions at the receiver are
 * fragments, not the step), inline when UCX sends it so (eager short, the
 * rendezvous request). A SEND signalled for the backlog that is not the
 * step's last carries UINT32_MAX for its step.
 */
static void mpi_post(struct replay *rp, struct pair_qp *pq, uint32_t s, const struct trace_step *st,
		     const struct mpi_plan *pl)
{
	while (pq->posted < pq->sent + pl->nsend && pq->posted < pq->nxfer)
		if (post_recvs_mpi(rp, pq)) {
			replay_fail(rp, "step %u: the HCA refused the receive for it", s);
			return;
		}
	rp->r->mpi_msgs[pl->kind]++;
	rp->r->mpi_sends += pl->nsend;
	if (pl->kind == MPI_RNDV) {	/* where the acknowledgement will land */
		struct hca_recv_wr r = {
			.wr_id = s, .sg = { .addr = 0, .length = rp->mp.seg_bytes,
					    .lkey = rp->mr[send_node(rp, st->rank, st->peer)]->lkey },
		};

		if (hca_post_recv(pq->sqp, &r)) {
			replay_fail(rp, "step %u: the HCA refused the receive for its acknowledgement", s);
			return;
		}
	}
	for (uint32_t i = 0; i < pl->nsend; i++) {
		const bool last = i + 1 == pl->nsend;
		struct hca_send_wr wr = {
			.wr_id = s, .opcode = last ? HCA_WR_SEND_WITH_IMM : HCA_WR_SEND, .imm_data = s,
			.sg = { .addr = 0, .length = mpi_send_bytes(pl, i), .lkey = pq->lkey },
		};

		if (pl->kind != MPI_EAGER && wr.sg.length <= rp->max_inline)
			wr.send_flags |= HCA_SEND_INLINE;
		if (pq->bl && pq->sent % PAIR_SIGNAL_EVERY == PAIR_SIGNAL_EVERY - 1) {
			wr.send_flags |= HCA_SEND_SIGNALED;
			wr.wr_id = (last ? s : UINT32_MAX) | (uint64_t)(pq->sent + 1) << 32;
		}
		if (st->acked && last)
			wr.send_flags |= HCA_SEND_SIGNALED;
		pq->sent++;
		if (hca_post_send(pq->sqp, &wr)) {
			replay_fail(rp, "step %u: the HCA refused the transfer (%" PRIu64 " bytes)",
				    s, st->bytes);
			return;
		}
	}
}

/* The rendezvous of MPI message s: at the receiver, once the request is
 * in, an RDMA READ of the data; once it is done, the acknowledgement back
 * (EV_ATS), whose arrival ends the step: the sender's request completes
 * then (a blocking MPI_Send returns, a Waitall on both ends), and MPI's
 * collectives go on when a rank's sends and receives are both done. */
static void mpi_rndv(struct replay *rp, uint32_t s, bool ats)
{
	const struct live *l = live_get(rp, s);
	const struct trace_step *st = l ? &l->st : NULL;
	struct pair_qp *pq = st ? pair_find(rp, st->rank, st->peer, false) : NULL;

	if (!pq || !pq->rqp) {
		replay_fail(rp, "step %u: its rendezvous has no queue pair", s);
		return;
	}
	struct hca_send_wr wr = {
		.wr_id = s, .opcode = ats ? HCA_WR_SEND_WITH_IMM : HCA_WR_RDMA_READ,
		.send_flags = ats ? HCA_SEND_INLINE : HCA_SEND_SIGNALED, .imm_data = s,
		.sg = { .addr = 0, .length = ats ? MPI_ATS_BYTES : (uint32_t)st->bytes,
			.lkey = rp->mr[rp->t->rank_node[st->peer]]->lkey },
		.remote_addr = 0, .rkey = rp->mr[send_node(rp, st->rank, st->peer)]->rkey,
	};

	if (ats && wr.sg.length > rp->max_inline)
		wr.send_flags = 0;
	if (hca_post_send(pq->rqp, &wr))
		replay_fail(rp, "step %u: the HCA refused its rendezvous %s", s, ats ? "acknowledgement" : "read");
}

/* Post transfer step s on its pair: a WRITE with immediate (its step). */
static void post_xfer(struct replay *rp, struct pair_qp *pq, uint32_t s, struct live *l)
{
	const struct trace_step *st = &l->st;
	struct hca_send_wr wr = {
		.wr_id = s, .opcode = HCA_WR_RDMA_WRITE_WITH_IMM, .imm_data = s,
		.sg = { .addr = 0, .length = (uint32_t)trace_proto_wire(step_proto(rp, st), st->bytes),
			.lkey = pq->lkey },
		.remote_addr = 0, .rkey = pq->rkey,
	};

	if (ll_staged(rp, st)) {	/* host memory at both ends */
		wr.sg.lkey = rp->mr_host[send_node(rp, st->rank, st->peer)]->lkey;
		wr.rkey = rp->mr_host[rp->t->rank_node[st->peer]]->rkey;
	}
	/* A CPU rank's small transfer goes inline, as the traffic specs'
	 * and a verbs program's do (MPI over UCX or libfabric sends its
	 * short messages inline: the WQE carries the bytes, by BlueFlame,
	 * with no WQE fetch and no payload read). A GPU's data never does:
	 * the CPU cannot read GPU memory into a WQE. */
	if (wr.sg.length && wr.sg.length <= rp->max_inline &&
	    !(rp->srv && rp->srv->server[send_node(rp, st->rank, st->peer)] >= 0))
		wr.send_flags |= HCA_SEND_INLINE;

	if (!pq->sqp) {		/* its first transfer: the pair's QPs now */
		int32_t a, b;

		pair_ranks(rp, pq, &a, &b);
		if (connect_pair(rp, pq, a, b)) {
			replay_fail(rp, "step %u: could not connect ranks %d and %d", s, a, b);
			return;
		}
	}
	if (!l->relayed) {	/* a relayed one began at its NVLink hop */
		l->start = rp->eng->now;
		comm_open(rp, st->rank);
		comm_open(rp, st->peer);
	}
	struct mpi_plan pl;

	if (rp->mpi && mpi_step(rp, st, &pl)) {
		mpi_post(rp, pq, s, st, &pl);
		return;
	}
	if (pq->sent == pq->posted && post_recvs(rp, pq)) {
		replay_fail(rp, "step %u: the HCA refused the receive for it", s);
		return;
	}
	if (pq->bl && pq->sent % PAIR_SIGNAL_EVERY == PAIR_SIGNAL_EVERY - 1) {
		/* the high half: how many sends have left once this one has */
		wr.send_flags = HCA_SEND_SIGNALED;
		wr.wr_id |= (uint64_t)(pq->sent + 1) << 32;
	}
	if (st->acked)		/* done at this completion, not at the delivery */
		wr.send_flags = HCA_SEND_SIGNALED;
	pq->sent++;
	if (node_here(rp, send_node(rp, st->rank, st->peer)) && hca_post_send(pq->sqp, &wr))
		replay_fail(rp, "step %u: the HCA refused the transfer (%" PRIu64 " bytes)",
			    s, st->bytes);
}

static void backlog_push(struct replay *rp, struct pair_backlog *b, uint32_t s)
{
	if (b->len == b->cap) {
		uint32_t cap = b->cap ? 2 * b->cap : 1024;
		uint32_t *q = cap > b->cap ? malloc((size_t)cap * sizeof(*q)) : NULL;

		if (!q) {
			oom_fail(rp);
			return;
		}
		for (uint32_t k = 0; k < b->len; k++)
			q[k] = b->q[(b->head + k) % b->cap];
		free(b->q);
		b->q = q;
		b->cap = cap;
		b->head = 0;
	}
	b->q[(b->head + b->len++) % b->cap] = s;
}

/* A signalled send of pair pairs[i] has completed: post what now fits. */
static void backlog_room(struct replay *rp, uint32_t i)
{
	struct pair_qp *pq = &rp->pairs[i];
	struct pair_backlog *b = pq->bl;

	while (b && b->len && pq->sent - b->acked < PAIR_SQ_MAX && !rp->failed) {
		uint32_t next = b->q[b->head];

		b->head = (b->head + 1) % b->cap;
		b->len--;
		post_xfer(rp, pq, next, live_get(rp, next));
	}
}

/* Start NVLink transfer s (its port is free): to its peer, or to its
 * PXN relay (l->relayed), whose HCA posts it when the first bytes are in. */
static void nvl_begin_at(struct replay *rp, const struct trace_step *st, bool relayed,
			 uint32_t s, uint32_t kind)
{
	const int32_t *rn = rp->t->rank_node;
	const struct srv_params *sp = &rp->srv->p;
	const enum trace_proto proto = step_proto(rp, st);
	const uint64_t wire = trace_proto_wire(proto, st->bytes);
	const uint32_t lat = proto == TRACE_PROTO_LL ? sp->nvlink_lat_ll_ns :
			     proto == TRACE_PROTO_LL128 ? sp->nvlink_lat_ll128_ns : sp->nvlink_lat_ns;
	sim_time_t now = rp->eng->now, first, end;

	if (trace_is_nvs(rp->t, st->peer)) {	/* NVLS: into the NVSwitch */
		push(rp, srv_nvs_send(rp->srv, rn[st->rank], now, wire, sp->nvlink_lat_ns), s,
		     kind);
		return;
	}
	if (!relayed) {
		end = srv_nvlink(rp->srv, rn[st->rank], rn[st->peer], now, wire, lat, NULL);
		if (proto == TRACE_PROTO_LL && rp->ll_ps_per_kb) {
			/* LL's lines go at its threads' rate, not the port's */
			sim_time_t ll = now + lat * SIM_NS + st->bytes * rp->ll_ps_per_kb / 1024;

			if (ll > end)
				end = ll;
		}
		push(rp, end, s, kind);
		return;
	}
	srv_nvlink(rp->srv, rn[st->rank], send_node(rp, st->rank, st->peer), now, wire, lat,
		   &first);
	rp->srv->pxn_xfers++;
	push(rp, first, s, EV_POST);
}

/* Transfer s (record l) begins on its GPU's NVLink port now. */
static void nvl_begin(struct replay *rp, uint32_t s, struct live *l)
{
	nvl_begin_at(rp, &l->st, l->relayed, s, EV_DONE);
}

/* The port of GPU node src is free now or later: begin step x (a step
 * alone, s = x, or of the fan that s leads, i its place in it), or queue
 * it behind the port's others (EV_NVQ). */
static void nvl_issue(struct replay *rp, int src, uint32_t x, uint32_t s, uint32_t i,
		      const struct trace_step *st, struct live *l)
{
	if (rp->nvq[src].len || rp->srv->out_free[src] > rp->eng->now) {
		backlog_push(rp, &rp->nvq[src], x);
		if (!rp->nvq_armed[src]) {
			rp->nvq_armed[src] = true;
			push(rp, rp->srv->out_free[src], (uint32_t)src, EV_NVQ);
		}
		return;
	}
	if (x == s && !l->fan_left)
		nvl_begin(rp, s, l);
	else
		nvl_begin_at(rp, st, false, s, EV_FAN | i << 8);
}

/*
 * The fan step s leads starts: each of its steps as xfer_nvlink would
 * start it alone, in order, now - they were made, became ready and
 * started together; the first is xfer_nvlink's own. Out of the NVSwitch
 * (its multicast to a domain's GPUs), which never queues; or each GPU of
 * a domain to the NVSwitch (the reads of the head's ld_reduce), each on
 * its own port, queued behind what that port has to send.
 */
static void fan_start(struct replay *rp, uint32_t s, struct live *l, bool from_nvs)
{
	const int32_t *rn = rp->t->rank_node;
	const sim_time_t now = rp->eng->now;

	/* out of the NVSwitch: the ends, pushed one after another, so those
	 * of consecutive steps at one time would be served one after another
	 * too: one event for them (the multicast's usually all end at once;
	 * grouping the reads that begin at once saved nothing measurable) */
	sim_time_t t0 = 0;
	uint32_t i0 = 0, n0 = 0;

	for (uint32_t i = 0; i < l->st.fan && !rp->failed; i++) {
		struct trace_step tmp;
		const struct trace_step *st = trace_program_fan_step(rp->p, s, &l->st, i, &tmp);

		if (i) {
			comm_open(rp, st->rank);
			comm_open(rp, st->peer);
		}
		if (!from_nvs) {
			nvl_issue(rp, rn[st->rank], s + i, s, i, st, l);
			continue;
		}
		const sim_time_t end = srv_nvs_recv(rp->srv, rn[st->peer], now,
						    trace_proto_wire(step_proto(rp, st), st->bytes),
						    rp->srv->p.nvlink_lat_ns);

		if (n0 && end == t0) {
			n0++;
			continue;
		}
		if (n0)
			push(rp, t0, s, EV_FAN | i0 << 8 | (n0 - 1) << 16);
		t0 = end;
		i0 = i;
		n0 = 1;
	}
	if (n0 && !rp->failed)
		push(rp, t0, s, EV_FAN | i0 << 8 | (n0 - 1) << 16);
}

/*
 * Transfer s is all or partly over NVLink: within a domain it is an
 * NVLink transfer, done when in the peer's memory; relayed by PXN, its
 * first hop is, and the relay's HCA posts it when the first bytes are
 * there (EV_POST; NVLink's rate is several times a NIC's, so the relay
 * never waits for more). A GPU's NVLink port sends one transfer at a
 * time, in the order they are issued: one issued while the port is busy
 * waits in the GPU's queue (nvq) and starts when the port frees
 * (EV_NVQ), so that every transfer takes the receiving port in the order
 * it arrives there. true when it took the step.
 */
static bool xfer_nvlink(struct replay *rp, uint32_t s, struct live *l)
{
	const struct trace_step *st = &l->st;
	const int32_t *rn = rp->t->rank_node;
	sim_time_t now = rp->eng->now;
	int src = rn[st->rank];

	if (!nvlink_pair(rp, st->rank, st->peer)) {
		if (st->rank >= rp->t->nranks || st->peer >= rp->t->nranks ||
		    send_node(rp, st->rank, st->peer) == src || ll_staged(rp, st))
			return false;
		l->relayed = true;
	}
	l->start = now;
	comm_open(rp, st->rank);
	comm_open(rp, st->peer);
	if (trace_is_nvs(rp->t, st->rank)) {	/* NVLS: out of the NVSwitch, which never queues */
		if (l->fan_left) {
			fan_start(rp, s, l, true);
			return true;
		}
		push(rp, srv_nvs_recv(rp->srv, rn[st->peer], now,
				      trace_proto_wire(step_proto(rp, st), st->bytes),
				      rp->srv->p.nvlink_lat_ns), s, EV_DONE);
		return true;
	}
	if (l->fan_left)
		fan_start(rp, s, l, false);
	else
		nvl_issue(rp, src, s, s, 0, st, l);
	return true;
}

/* GPU node's NVLink port is free: start what waits for it, in order. */
static void nvq_run(struct replay *rp, uint32_t node)
{
	struct pair_backlog *q = &rp->nvq[node];

	rp->nvq_armed[node] = false;
	while (q->len && rp->srv->out_free[node] <= rp->eng->now && !rp->failed) {
		uint32_t s = q->q[q->head];

		q->head = (q->head + 1) % q->cap;
		q->len--;
		struct live *l = live_get(rp, s);

		if (!l->fan_left) {
			nvl_begin(rp, s, l);
		} else {	/* a step of the fan l->s leads */
			struct trace_step tmp;
			const struct trace_step *st = trace_program_fan_step(rp->p, l->s, &l->st,
									     s - l->s, &tmp);

			nvl_begin_at(rp, st, false, l->s, EV_FAN | (s - l->s) << 8);
		}
	}
	if (q->len) {
		rp->nvq_armed[node] = true;
		push(rp, rp->srv->out_free[node], node, EV_NVQ);
	}
}

/* A relayed transfer's first bytes are at its relay: post it there. */
static void relay_post(struct replay *rp, uint32_t s)
{
	struct live *l = live_get(rp, s);
	struct pair_qp *pq;

	if (!l)
		return;
	pq = pair_find(rp, l->st.rank, l->st.peer, false);
	if (!pq) {
		replay_fail(rp, "step %u: no queue pair for ranks %d and %d", s, l->st.rank,
			    l->st.peer);
		return;
	}
	if (pq->bl && (pq->bl->len || pq->sent - pq->bl->acked >= PAIR_SQ_MAX)) {
		backlog_push(rp, pq->bl, s);
		return;
	}
	post_xfer(rp, pq, s, l);
}

/*
 * A collective on GPU servers is a kernel: its first step cannot start
 * before the kernel has been launched and has set up its work, NCCL's
 * base latency for the algorithm and protocol (trace_tune_base_us: 6.6 us
 * for a ring with LL, 8.4 with Simple, ...), counted from when its first
 * step is ready - and in its time. 0 for the rest (NCCL's table has none
 * for CollNet, and all-to-all's sends are ibfab's own).
 */
static sim_time_t coll_launch_ps(const struct replay *rp, const struct trace_op *o)
{
	if (!rp->op_go || o->kind != TRACE_COLL)
		return 0;
	if (trace_algo_nvls(o->algo)) {
		/* NCCL gives NVLS one latency, 25 us, for its launch and its
		 * multimem round trip: the launch is what the round trip's two
		 * NVLink transfers (srv_nvs_send, srv_nvs_recv) leave of it */
		sim_time_t all = 25 * SIM_US, trip = 2 * (sim_time_t)rp->srv->p.nvlink_lat_ns * SIM_NS;

		return all > trip ? all - trip : 0;
	}
	return (sim_time_t)(trace_tune_base_us(o->algo, trace_op_proto(o)) * 1e6 + 0.5);
}

static void step_start(struct replay *rp, uint32_t s)
{
	struct live *l = live_need(rp, s);
	const struct trace_step *st;
	sim_time_t now = rp->eng->now;

	if (!l)
		return;		/* failed making it */
	st = &l->st;
	if (!rp->op_seen[st->op] && st->kind != TS_JOIN) {
		rp->op_seen[st->op] = true;
		rp->r->op_start[st->op] = UINT64_MAX;
		if (rp->op_go)
			rp->op_go[st->op] = now + coll_launch_ps(rp, &rp->t->ops[st->op]);
	}
	if (st->kind == TS_JOIN) {	/* its deps are done: so is it */
		l->start = now;
		push(rp, now, s, EV_DONE);
		return;
	}
	if (rp->op_go && now < rp->op_go[st->op]) {	/* its kernel is not running yet */
		push(rp, rp->op_go[st->op], s, EV_START);
		return;
	}
	if (sat_streams(rp->sat, st->op) &&
	    (sat_waiting(rp->sat, st->op) || !sat_acquire(rp->sat, st->op))) {
		/* its tree is another's now: it streams once that one ends */
		if (!rp->sat_t0[st->op]) {
			rp->sat_t0[st->op] = now + 1;	/* (0: not waiting) */
			rp->r->sat_waits++;
		}
		backlog_push(rp, &rp->sat_q[st->op], s);
		return;
	}
	if (st->kind == TS_COMPUTE) {
		sim_time_t start = now > rp->rank_free[st->rank] ? now : rp->rank_free[st->rank];

		if (start > now && rp->rank_last[st->rank] != UINT32_MAX) {
			l->crit = rp->rank_last[st->rank];	/* waited for its rank */
			l->crank = true;
		}
		l->start = start;
		rp->rank_free[st->rank] = start + st->duration;
		rp->rank_last[st->rank] = s;
		rp->r->rank[st->rank].compute_ps += st->duration;
		if (compute_add(&rp->sw[st->rank], start, start + st->duration))
			oom_fail(rp);
		push(rp, start + st->duration, s, EV_DONE);
		return;
	}
	if (rp->srv && xfer_nvlink(rp, s, l))
		return;
	if (rp->srv && staged(rp, st)) {
		/* the GPU's data to the host bounce buffer first (cudaMemcpy; LL:
		 * the GPU's own stores of its lines) */
		l->start = now;
		l->relayed = true;
		comm_open(rp, st->rank);
		comm_open(rp, st->peer);
		struct host *h = hca_host(node_hca(rp, st->rank));
		const uint64_t wire = trace_proto_wire(step_proto(rp, st), st->bytes);

		push(rp, rp->stage ? host_stage_gpu_to_host(h, now, wire) : host_gpu_store(h, now, wire),
		     s, EV_POST);
		return;
	}
	struct pair_qp *pq = pair_find(rp, st->rank, st->peer, false);

	if (!pq) {
		replay_fail(rp, "step %u: no queue pair for ranks %d and %d", s, st->rank,
			    st->peer);
		return;
	}
	if (pq->bl && (pq->bl->len || pq->sent - pq->bl->acked >= PAIR_SQ_MAX)) {
		backlog_push(rp, pq->bl, s);
		return;
	}
	post_xfer(rp, pq, s, l);
}

/* A transfer of the pair of st is done: after its last, the pair waits
 * for its QPs to go idle (the last ACKs are on their way). */
static void pair_done(struct replay *rp, const struct trace_step *st)
{
	struct pair_qp *pq = pair_find(rp, st->rank, st->peer, false);
	struct mpi_plan pl;

	if (!pq || (pq->done += rp->mpi && mpi_step(rp, st, &pl) ? pl.nsend : 1) < pq->nxfer)
		return;
	backlog_push(rp, &rp->retire, (uint32_t)(pq - rp->pairs));
}

/* Destroy the QPs of the pairs done, oldest first, as they go idle: the
 * QPs held are those of the pairs in flight. Idle QPs have nothing the
 * fabric would do with them (hca_qp_idle), so the run is the same. */
static void retire_idle(struct replay *rp)
{
	struct pair_backlog *r = &rp->retire;

	while (r->len) {
		struct pair_qp *pq = &rp->pairs[r->q[r->head]];

		if (!hca_qp_idle(pq->sqp) || !hca_qp_idle(pq->rqp))
			return;
		hca_destroy_qp(pq->sqp);
		hca_destroy_qp(pq->rqp);
		pq->sqp = pq->rqp = NULL;
		rp->qp_live--;
		r->head = (r->head + 1) % r->cap;
		r->len--;
	}
}

/* Op g may stream now: its steps that waited start, in the order they came. */
static void sat_granted(void *ctx, uint32_t g)
{
	struct replay *rp = ctx;
	struct pair_backlog *q = &rp->sat_q[g];
	const sim_time_t now = rp->eng->now;

	rp->r->sat_wait_ps += now - (rp->sat_t0[g] - 1);
	while (q->len && !rp->failed) {
		const uint32_t s = q->q[q->head];

		q->head = (q->head + 1) % q->cap;
		q->len--;
		push(rp, now, s, EV_START);
	}
}

/*
 * What finishing step s (st, its record l: its start, its critical path
 * so far) does to the results: the times, the rank sweeps, the critical
 * path's candidate, the step's times when kept. The critical path to s
 * is returned.
 */
static struct crit_sum step_finish(struct replay *rp, uint32_t s, const struct live *l,
				   const struct trace_step *st)
{
	struct trace_results *r = rp->r;
	sim_time_t now = rp->eng->now;
	struct crit_sum own;

	if (now > r->end_ps)
		r->end_ps = now;
	r->steps_done++;
	/* the critical path to s: the one to what it waited for, and s */
	own = l->crank ? rp->sw[st->rank].last : (struct crit_sum){ l->cn, l->ccomp, l->ccomm };
	if (st->kind == TS_JOIN) {
		rp->joins_done++;
	} else {
		own.n++;
		if (st->kind == TS_COMPUTE)
			own.comp += now - l->start;
		else
			own.comm += now - l->start;
		if (l->start < r->op_start[st->op])
			r->op_start[st->op] = l->start;
		/* a collective's time counts from its kernel's launch */
		if (rp->op_go) {
			sim_time_t issued = rp->op_go[st->op] -
					    coll_launch_ps(rp, &rp->t->ops[st->op]);

			if (issued < r->op_start[st->op])
				r->op_start[st->op] = issued;
		}
		if (now > r->op_end[st->op])
			r->op_end[st->op] = now;
		if (now > r->rank[st->rank].end_ps)
			r->rank[st->rank].end_ps = now;
	}
	if (st->kind == TS_COMPUTE)
		rp->sw[st->rank].last = own;
	if (st->kind == TS_XFER) {
		if (now > r->rank[st->peer].end_ps)
			r->rank[st->peer].end_ps = now;
		comm_close(rp, st->rank);
		comm_close(rp, st->peer);
		if (sim_samples_add(&r->xfer_times, now - l->start))
			oom_fail(rp);
		/* a transfer over NVLink has no pair (scan): no lookup (9 in
		 * 10 of NVLSTree's transfers; their probes of the pairs' table
		 * were most of its 1.7% on 128 servers) */
		if (rp->qp_life && !nvlink_pair(rp, st->rank, st->peer))
			pair_done(rp, st);
	}
	retire_idle(rp);
	/* the last step to end, the lowest-numbered of those that end last */
	if (rp->best_s == UINT32_MAX || now > rp->best_end ||
	    (now == rp->best_end && s < rp->best_s)) {
		rp->best_s = s;
		rp->best_end = now;
		rp->best = own;
	}
	if (r->step)
		r->step[s] = (struct trace_step_time){ l->ready, l->start, now, l->crit };
	else if (r->spill && trace_spill_put(r->spill, s, l->start, now))
		replay_fail(rp, "could not keep the steps' times in a temporary file (TMPDIR): %s",
			    strerror(errno ? errno : ENOSPC));
	return own;
}

/* Op op has one more step done: its SHARP tree is free after its last. */
static void op_step_done(struct replay *rp, uint32_t op)
{
	if (rp->sat && ++rp->op_done[op] == rp->p->op_nsteps[op] && sat_streams(rp->sat, op))
		sat_release(rp->sat, op, sat_granted, rp);
}

static void cw_note(struct replay *rp, uint32_t s, const struct trace_step *st, struct crit_sum own);

/* Step s is done (own: the critical path to it): the steps waiting for it
 * (l's), in step order, one dependency fewer each; the last end they wait
 * for and the path to it are theirs (the first of equal ends). The
 * counted joins s has released (cw_note) start in their places among
 * them, as if they had listed s. */
static void tell_dependents(struct replay *rp, struct live *l, uint32_t s, struct crit_sum own)
{
	const sim_time_t now = rp->eng->now;

	size_t g = 0;	/* counted joins s has released (cw_note): started in step order */

	dependents_sort(rp, l);
	for (uint32_t k = 0; k < l->nd; k++) {
		struct live *ld = sim_pool_get(&rp->pool, l->dcap ? l->d.v[k] : l->d.in[k]);
		const uint32_t d = ld->s;

		for (; g < rp->ncwgo && rp->cw[rp->cwgo[g]].join < d; g++)
			push(rp, rp->cw[rp->cwgo[g]].ready, rp->cw[rp->cwgo[g]].join, EV_START);

		if (now >= ld->ready) {
			if (now > ld->ready || ld->crit == UINT32_MAX) {
				ld->crit = s;
				ld->cn = own.n;
				ld->ccomp = own.comp;
				ld->ccomm = own.comm;
			}
			ld->ready = now;
		}
		if (!--ld->left)
			push(rp, ld->ready, d, EV_START);
	}
	for (; g < rp->ncwgo; g++)
		push(rp, rp->cw[rp->cwgo[g]].ready, rp->cw[rp->cwgo[g]].join, EV_START);
	rp->ncwgo = 0;
}

static void step_done(struct replay *rp, uint32_t s)
{
	sim_time_t now = rp->eng->now;
	struct live *l = live_get(rp, s);
	struct crit_sum own;

	if (!l || l->finished || l->fanned)
		return;
	own = step_finish(rp, s, l, &l->st);
	/* every step that waits for s is made before s is done with */
	make_dependents(rp, s);
	if (rp->failed)
		return;
	cw_note(rp, s, &l->st, own);
	if (rp->failed)
		return;
	tell_dependents(rp, l, s, own);
	op_step_done(rp, l->st.op);
	const struct seg *g = seg_of(rp, s);

	if (g->z && g->z->near_reach < g->z->reach && g->made < g->end &&
	    trace_program_far(g->z, s)) {
		/* steps beyond the near reach wait for it: kept until made */
		if (l->dcap)
			free(l->d.v);
		l->nd = l->dcap = 0;
		l->finished = true;
		l->ready = now;
		l->cn = own.n;
		l->ccomp = own.comp;
		l->ccomm = own.comm;
		backlog_push(rp, &rp->kept, s);
	} else {
		live_free(rp, s);
	}
	kept_drain(rp);
	if (rp->r->steps_done == rp->p->nsteps)
		sim_stop(rp->eng);
}

/* Step s + i of the fan that step s leads is done (EV_FAN): as step_done,
 * from the fan's one record, whose dependents wait for every step of it. */
static void fan_done_one(struct replay *rp, uint32_t s, uint32_t i)
{
	struct live *l = live_get(rp, s);
	struct trace_step tmp;

	if (!l || !l->fan_left)
		return;
	const struct trace_step *st = trace_program_fan_step(rp->p, s, &l->st, i, &tmp);
	const uint32_t op = st->op;

	const struct crit_sum own = step_finish(rp, s + i, l, st);

	/* the frontier moves on as it would from a step alone */
	make_dependents(rp, s + i);
	if (rp->failed)
		return;
	cw_note(rp, s + i, st, own);
	if (rp->failed)
		return;
	tell_dependents(rp, l, s + i, own);
	op_step_done(rp, op);
	if (!--l->fan_left)
		live_free(rp, s);
	kept_drain(rp);
	if (rp->r->steps_done == rp->p->nsteps)
		sim_stop(rp->eng);
}

/* Steps s + i ... s + i + n - 1 of the fan s leads are done (one EV_FAN):
 * in order, as their events one after another would have them. */
static void fan_done(struct replay *rp, uint32_t s, uint32_t i, uint32_t n)
{
	for (uint32_t k = 0; k < n && !rp->failed; k++)
		fan_done_one(rp, s, i + k);
}

static void replay_event(struct replay *rp, uint32_t comp, uint32_t kind)
{
	if (kind == EV_START)
		step_start(rp, comp);
	else if (kind == EV_DONE)
		step_done(rp, comp);
	else if (kind == EV_POST)
		relay_post(rp, comp);
	else if (kind == EV_NVQ)
		nvq_run(rp, comp);
	else if (kind == EV_READ || kind == EV_ATS)
		mpi_rndv(rp, comp, kind == EV_ATS);
	else if ((kind & 0xff) == EV_FAN)
		fan_done(rp, comp, kind >> 8 & 0xff, (kind >> 16 & 0xff) + 1);
	else
		backlog_room(rp, comp);
}

static void replay_handler(struct sim_engine *eng, void *ctx, uint32_t arg)
{
	struct replay *rp = ctx;
	struct sim_event e;

	if (arg) {	/* a transfer the program sees done now (done_seen) */
		if (!rp->failed)
			step_done(rp, arg - 1);
		return;
	}
	sim_wake_fired(&rp->wake);
	/* the queue's events for now first, then the FIFO's (see push) */
	while (!rp->failed && sim_cal_pop(&rp->q, &e, eng->now))
		replay_event(rp, e.comp, e.arg);
	if (rp->q.oom)
		oom_fail(rp);
	while (!rp->failed && rp->now.len) {
		struct pair_backlog *q = &rp->now;
		const uint32_t step = q->q[q->head], kind = q->q[(q->head + 1) % q->cap];

		q->head = (q->head + 2) % q->cap;
		q->len -= 2;
		replay_event(rp, step, kind);
	}
	rp->hint = UINT32_MAX;
	if (!rp->failed && sim_cal_peek_event(&rp->q, &e)) {
		if (e.arg != EV_NVQ && e.arg != EV_ROOM)
			rp->hint = e.comp;
		if (sim_wake_at(eng, &rp->wake, e.time, rp->comp, 0))
			replay_fail(rp, "out of memory replaying");
	}
}

/*
 * The engine's look-ahead (sim_comp_prefetch) for the replay's next
 * wake-up: the record of the step it is for - a transfer the program sees
 * done (arg, the step + 1), or the first of its queue (hint_step). Two
 * events ahead the step's window slot, one event ahead (the slot in the
 * cache) its record: the record of a step that ends was made and last
 * touched microseconds of simulated time before, a miss, as its slot is.
 * Reads only; a guess that is wrong (an event queued since) costs a
 * prefetch.
 */
static uint32_t hint_step(const struct replay *rp, uint32_t arg)
{
	return arg ? arg - 1 : rp->hint;
}

static void replay_prefetch_early(const void *ctx, uint32_t arg)
{
	const struct replay *rp = ctx;
	const uint32_t s = hint_step(rp, arg);

	if (s != UINT32_MAX && rp->wcap)
		__builtin_prefetch(&rp->win[s & (rp->wcap - 1)]);
}

static void replay_prefetch(const void *ctx, uint32_t arg)
{
	const struct replay *rp = ctx;
	const uint32_t s = hint_step(rp, arg);

	if (s == UINT32_MAX || !rp->wcap)
		return;
	const uint32_t v = rp->win[s & (rp->wcap - 1)];

	if (v) {
		const char *r = sim_pool_get(&rp->pool, v - 1);

		__builtin_prefetch(r, 1);
		__builtin_prefetch(r + 64, 1);
	}
}

/* The pair whose send queue is qp (a pair with a backlog), as its index. */
static uint32_t backlog_pair(const struct replay *rp, uint32_t qp_num)
{
	for (size_t i = 0; i < rp->nbls; i++)
		if (rp->bls[i]->sqpn == qp_num)
			return (uint32_t)(rp->bls[i] - rp->pairs);
	return UINT32_MAX;
}

/*
 * Transfer s completed at t (its CQE's time at the node that completes
 * it): it is done when the program sees it, one look-ahead later (the
 * fabric's least cable latency, 15 ns on 3 m: about one pass of a loop
 * polling the CQ), and what waits for it, at this node or another, is
 * ready then. Why not at once: no node learns of another's completion
 * sooner than a cable's latency, and a run cut into partitions learns
 * nothing sooner than that, so one rule for every completion gives the
 * same events on one thread and on many. An event of the replay's own
 * component, its step + 1 in the argument (0 is the replay's wake).
 */
static void done_seen(struct replay *rp, sim_time_t t, uint32_t s)
{
	if (sim_schedule_every(rp->eng, t + rp->seen, rp->comp, s + 1))
		oom_fail(rp);
}

/*
 * Whether every completion is what it says, without its step's record:
 * no MPI protocol (mpi_step), nothing staged (host.gpudirect=off, or LL
 * between servers: ll_staged), no op done at its source (acked). Then a
 * receive is its step's end and a send's completion nothing, and
 * cq_notify looks up no record: a miss saved at each network transfer
 * (step_done reads the record a look-ahead later, asked for by then).
 */
static bool cq_bare(const struct replay *rp)
{
	if (rp->mpi || rp->stage)
		return false;
	for (size_t i = 0; i < rp->t->nops; i++)
		if (rp->t->ops[i].acked || trace_op_proto(&rp->t->ops[i]) == TRACE_PROTO_LL)
			return false;
	return true;
}

/* A completion at some host: a transfer's arrival (or an error). */
static void cq_notify(struct hca_cq *cq, void *ctx)
{
	struct replay *rp = ctx;
	struct hca_wc wc[16];
	int n;

	while ((n = hca_poll_cq(cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			uint32_t s = (uint32_t)wc[i].wr_id;

			if (wc[i].status != HCA_WC_SUCCESS) {
				replay_fail(rp, "transfer step %" PRIu32 " failed: %s", s,
					    hca_wc_status_str(wc[i].status));
				return;
			}
			if (wc[i].opcode == HCA_WC_RECV_RDMA_WITH_IMM ||
			    (wc[i].opcode == HCA_WC_RECV && wc[i].with_imm)) {
				if (rp->cq_bare) {	/* delivered: done */
					assert(live_get(rp, wc[i].imm_data) &&
					       !live_get(rp, wc[i].imm_data)->finished);
					done_seen(rp, wc[i].time, wc[i].imm_data);
					continue;
				}
				/* delivered: done, unless it is done when acknowledged
				 * (and then perhaps already done with) */
				const struct live *l = live_get(rp, wc[i].imm_data);
				sim_time_t t = wc[i].time;
				struct mpi_plan pl;

				/* an MPI rendezvous: its request at the receiver,
				 * which reads; its acknowledgement at the sender */
				if (rp->mpi && l && mpi_step(rp, &l->st, &pl) && pl.kind == MPI_RNDV) {
					/* (QP numbers are per HCA: which CQ it is says
					 * where it landed) */
					const bool at_sender =
						cq == rp->cq[send_node(rp, l->st.rank, l->st.peer)];

					if (at_sender)
						done_seen(rp, t, wc[i].imm_data);
					else
						push(rp, t, wc[i].imm_data, EV_READ);
					continue;
				}

				/* staged: from the bounce buffer to the GPU */
				if (l && rp->stage && l->st.peer < rp->t->nranks &&
				    rp->srv->server[rp->t->rank_node[l->st.peer]] >= 0)
					t = host_stage_host_to_gpu(hca_host(node_hca(rp, l->st.peer)), t,
								   trace_proto_wire(step_proto(rp, &l->st),
										    l->st.bytes));
				else if (l && ll_staged(rp, &l->st))	/* LL: the GPU reads its lines */
					t = host_gpu_load(hca_host(node_hca(rp, l->st.peer)), t,
							  trace_proto_wire(TRACE_PROTO_LL, l->st.bytes));
				if (l && !l->st.acked)
					done_seen(rp, t, wc[i].imm_data);
			} else if (wc[i].opcode == HCA_WC_RDMA_READ) {
				/* an MPI rendezvous's data is in: acknowledge it */
				push(rp, wc[i].time, s, EV_ATS);
			} else if (wc[i].opcode == HCA_WC_RDMA_WRITE || wc[i].opcode == HCA_WC_SEND) {
				const struct live *l =
					s == UINT32_MAX || rp->cq_bare ? NULL : live_get(rp, s);

				if (l && l->st.acked)	/* acknowledged at its source */
					done_seen(rp, wc[i].time, s);
				/* a signalled send of a pair with a backlog (the high
				 * half counts the sends gone) */
				if (wc[i].wr_id >> 32) {
					uint32_t pi = backlog_pair(rp, wc[i].qp_num);

					if (pi != UINT32_MAX) {
						rp->pairs[pi].bl->acked = (uint32_t)(wc[i].wr_id >> 32);
						push(rp, wc[i].time, pi, EV_ROOM);
					}
				}
			}
		}
	}
	if (n == -EOVERFLOW)
		replay_fail(rp, "a completion queue overflowed");
}

static void replay_gone(struct sim_engine *eng, void *ctx, uint32_t arg)
{
	(void)eng;
	(void)ctx;
	(void)arg;
}

/* ---- set-up ----------------------------------------------------------------- */

static int connect_pair(struct replay *rp, struct pair_qp *pq, int32_t a, int32_t b)
{
	const struct fab_params *fp = fab_get_params(rp->f);
	const int na = send_node(rp, a, b);
	struct hca *ha = fab_hca(rp->f, na), *hb = node_hca(rp, b);
	struct hca_qp_init_attr ia = {
		.qp_type = HCA_QPT_RC, .send_cq = rp->cq[na], .recv_cq = rp->cq[na],
		/* MPI rendezvous: its acknowledgement comes back to the sender */
		.cap = { .max_send_wr = pq->nxfer + 1,
			 .max_recv_wr = rp->mpi && pq->nxfer < HCA_MAX_QP_WR ? pq->nxfer + 1 :
				        rp->mpi ? HCA_MAX_QP_WR : 1 },
	};
	struct hca_qp *q[2];

	/* host memory at the sender, not a GPU server's rank: small
	 * transfers inline (post_xfer) */
	if (!(rp->srv && rp->srv->server[na] >= 0))
		ia.cap.max_inline_data = rp->max_inline;

	if (pq->nxfer >= PAIR_SQ_MAX)
		ia.cap.max_send_wr = PAIR_SQ_MAX;
	q[0] = pq->sqp = hca_create_qp_at(ha, &ia, pq->sqpn);
	ia.send_cq = ia.recv_cq = rp->cq[rp->t->rank_node[b]];
	ia.cap = (struct hca_qp_cap){
		/* MPI rendezvous: a READ and an acknowledgement per message */
		.max_send_wr = !rp->mpi ? 1 : pq->nxfer < HCA_MAX_QP_WR / 2 ? 2 * pq->nxfer + 1 :
		       HCA_MAX_QP_WR,
		.max_recv_wr = pq->nxfer < HCA_MAX_QP_WR ? pq->nxfer + 1 : HCA_MAX_QP_WR,
	};
	if (rp->mpi)	/* the acknowledgement, inline */
		ia.cap.max_inline_data = rp->max_inline;
	q[1] = pq->rqp = hca_create_qp_at(hb, &ia, pq->rqpn);
	if (!q[0] || !q[1])
		return -1;
	if (++rp->qp_live > rp->qp_peak)
		rp->qp_peak = rp->qp_live;
	for (int i = 0; i < 2; i++) {
		struct hca_qp_attr at = { .qp_state = HCA_QPS_INIT };
		struct hca *peer = i ? ha : hb;

		if (hca_modify_qp(q[i], &at, HCA_QP_STATE))
			return -1;
		at = (struct hca_qp_attr){
			.qp_state = HCA_QPS_RTR, .path_mtu = fp->mtu, .dlid = hca_lid(peer),
			.dest_qp_num = hca_qp_num(q[1 - i]), .rq_psn = 0,
			.min_rnr_timer = fp->hca_min_rnr_timer,
			.max_dest_rd_atomic = fp->hca_max_rd_atomic,
		};
		if (hca_modify_qp(q[i], &at, HCA_QP_STATE | HCA_QP_PATH_MTU | HCA_QP_AV |
				  HCA_QP_DEST_QPN | HCA_QP_RQ_PSN | HCA_QP_MIN_RNR_TIMER |
				  HCA_QP_MAX_DEST_RD_ATOMIC))
			return -1;
		at = (struct hca_qp_attr){
			.qp_state = HCA_QPS_RTS, .sq_psn = 0, .timeout = fp->hca_timeout,
			.retry_cnt = fp->hca_retry_cnt, .rnr_retry = fp->hca_rnr_retry,
			.max_rd_atomic = fp->hca_max_rd_atomic,
		};
		if (hca_modify_qp(q[i], &at, HCA_QP_STATE | HCA_QP_SQ_PSN | HCA_QP_TIMEOUT |
				  HCA_QP_RETRY_CNT | HCA_QP_RNR_RETRY | HCA_QP_MAX_QP_RD_ATOMIC))
			return -1;
	}
	/* the first receives for the WRITEs with immediate (the rest: post_recvs) */
	return rp->mpi ? post_recvs_mpi(rp, pq) : post_recvs(rp, pq);
}

/* The ranks of pair pq. */
static void pair_ranks(const struct replay *rp, const struct pair_qp *pq, int32_t *a, int32_t *b)
{
	const int32_t ne = trace_nendpoints(rp->t);

	*a = (int32_t)((pq->key - 1) / (uint64_t)ne);
	*b = (int32_t)((pq->key - 1) % (uint64_t)ne);
}

/*
 * A transfer over 2^31 bytes, the largest IB message (IBA 9.4.1: the DMA
 * length is 32 bits, and ConnectX's max_msg_sz is 2 GiB): named at its op's
 * line, with the op's size rather than the step's (a collective's steps
 * carry a chunk of it), and what would make it fit.
 */
static int too_big(const struct trace *t, const struct trace_step *st, struct sim_diag *d)
{
	const struct trace_op *o = &t->ops[st->op];

	if (o->kind != TRACE_COLL)
		return sim_diag_set(d, o->file, o->line, 0,
				    "a send of %" PRIu64 " bytes is more than one IB message (2 GiB = 2147483648 bytes): split it into several sends",
				    o->bytes);
	return sim_diag_set(d, o->file, o->line, 0,
			    "%s of %" PRIu64 " bytes: its transfers carry %" PRIu64 " bytes, more than one IB message (2 GiB = 2147483648 bytes); give it chunks=%" PRIu64 " or more",
			    trace_coll_names[o->coll], o->bytes, st->bytes,
			    (uint64_t)((o->chunks ? o->chunks : 1) *
				       ((st->bytes + (1ULL << 31) - 1) >> 31)));
}

static int cmp_xdep(const void *a, const void *b)
{
	const struct xdep *x = a, *y = b;

	if (x->s != y->s)
		return x->s < y->s ? -1 : 1;
	if (x->seg != y->seg)
		return x->seg < y->seg ? -1 : 1;
	return (x->max > y->max) - (x->max < y->max);
}

/*
 * Where scan last noted each (step, segment), by a hash of the two: a
 * step waited for again from the same segment updates its entry instead
 * of adding one. A member's entry is waited for by each of its first
 * steps, a collective's after many: the tree allreduce of 32 GPUs after
 * an NVLS one waits for 240 steps from each of 32 per member, and the
 * 256-GPU data and tensor parallel example's scan noted 23.3M waits for
 * some hundred thousand pairs (831 MB at its peak, with the sort's copy).
 * A slot taken by another pair is overwritten: that pair's next wait adds
 * an entry, which xdep_close merges.
 */
#define XDEP_HINT_BITS 16

static uint32_t xdep_hint_slot(uint32_t e, uint32_t seg)
{
	return (e * 0x9E3779B1u ^ seg * 0x85EBCA6Bu) >> (32 - XDEP_HINT_BITS);
}

/* Step s (in segment sg) waits for e: the frontier of sg must pass s
 * before e finishes - said by the reach when both are of one lazy op.
 * Steps come in order, so the latest s is the largest. */
static int note_dep(struct replay *rp, uint32_t e, uint32_t s, const struct seg *sg, size_t *xcap,
		    uint32_t *hint)
{
	/* most wait for a step of their own op: no search */
	const struct seg *ge = e >= sg->first && e < sg->end ? sg : seg_of(rp, e);
	const uint32_t g = (uint32_t)(sg - rp->seg);
	uint32_t *h;

	if (ge == sg && sg->z)
		return 0;
	if (rp->nxdep && rp->xdep[rp->nxdep - 1].s == e && rp->xdep[rp->nxdep - 1].seg == g) {
		rp->xdep[rp->nxdep - 1].max = s;	/* a step's deps often repeat */
		return 0;
	}
	h = &hint[xdep_hint_slot(e, g)];
	if (*h && rp->xdep[*h - 1].s == e && rp->xdep[*h - 1].seg == g) {
		rp->xdep[*h - 1].max = s;
		return 0;
	}
	if (sim_grow((void **)&rp->xdep, xcap, rp->nxdep + 1, sizeof(*rp->xdep)))
		return -1;
	rp->xdep[rp->nxdep++] = (struct xdep){ e, g, s };
	*h = rp->nxdep <= UINT32_MAX ? (uint32_t)rp->nxdep : 0;
	return 0;
}

/* Counted join s waits for the st->phase transfers of op st->chunk that
 * involve rank st->rank (the lowering counted them). 0, or -1 with d. */
static int cw_add(struct replay *rp, uint32_t s, const struct trace_step *st, struct sim_diag *d)
{
	const struct trace *t = rp->t;
	const uint32_t op = st->chunk;
	uint32_t *x;

	if (op >= t->nops || op == st->op || st->rank < 0 || st->rank >= t->nranks || !st->phase)
		return sim_diag_set(d, NULL, 0, 0,
				    "program step %" PRIu32 ": a join counting %" PRIu32 " transfers of op %" PRIu32 " on rank %d",
				    s, st->phase, op, st->rank);
	if ((!rp->cwtab && !(rp->cwtab = calloc(t->nops, sizeof(*rp->cwtab)))) ||
	    (!rp->cwtab[op] && !(rp->cwtab[op] = calloc((size_t)t->nranks, sizeof(**rp->cwtab)))) ||
	    sim_grow((void **)&rp->cw, &rp->cwcap, rp->ncw + 1, sizeof(*rp->cw)))
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	x = &rp->cwtab[op][st->rank];
	rp->cw[rp->ncw] = (struct cwait){ .join = s, .left = st->phase, .crit = UINT32_MAX,
					  .next = *x };
	*x = (uint32_t)++rp->ncw;
	return 0;
}

/* Rank r's waits on transfer s of op st->op, ended now (own: the critical
 * path to it): as tell_dependents tells a join that lists it; the joins
 * whose count this ends go on cwgo. */
static void cw_rank(struct replay *rp, uint32_t s, int32_t r, uint32_t op, struct crit_sum own)
{
	const sim_time_t now = rp->eng->now;

	for (uint32_t x = rp->cwtab[op][r]; x; x = rp->cw[x - 1].next) {
		struct cwait *w = &rp->cw[x - 1];

		if (!w->left)
			continue;
		if (now >= w->ready) {
			if (now > w->ready || w->crit == UINT32_MAX) {
				w->crit = s;
				w->sum = own;
			}
			w->ready = now;
		}
		if (--w->left)
			continue;
		if (sim_grow((void **)&rp->cwgo, &rp->cwgocap, rp->ncwgo + 1, sizeof(*rp->cwgo))) {
			oom_fail(rp);
			return;
		}
		rp->cwgo[rp->ncwgo++] = x - 1;
	}
}

/*
 * Transfer s (st) has ended: the counted joins waiting on its op and its
 * ranks count it; a join whose count is done is made with the end and
 * the path its last transfer gave it, and tell_dependents starts it in
 * its place among s's dependents (cwgo, sorted by step).
 */
static void cw_note(struct replay *rp, uint32_t s, const struct trace_step *st, struct crit_sum own)
{
	rp->ncwgo = 0;
	if (st->kind != TS_XFER || !rp->cwtab || !rp->cwtab[st->op])
		return;
	if (st->rank >= 0 && st->rank < rp->t->nranks)
		cw_rank(rp, s, st->rank, st->op, own);
	if (st->peer >= 0 && st->peer < rp->t->nranks && st->peer != st->rank)
		cw_rank(rp, s, st->peer, st->op, own);
	for (size_t k = 0; k < rp->ncwgo && !rp->failed; k++) {
		const struct cwait *w = &rp->cw[rp->cwgo[k]];
		struct live *l = live_need(rp, w->join);

		if (!l)
			return;		/* failed making it */
		l->ready = w->ready;
		l->crit = w->crit;
		l->cn = w->sum.n;
		l->ccomp = w->sum.comp;
		l->ccomm = w->sum.comm;
		l->left = 0;
	}
	/* in step order, as tell_dependents meets its dependents */
	for (size_t i = 1; i < rp->ncwgo; i++)
		for (size_t j = i; j > 0 && rp->cw[rp->cwgo[j - 1]].join > rp->cw[rp->cwgo[j]].join; j--) {
			uint32_t x = rp->cwgo[j];

			rp->cwgo[j] = rp->cwgo[j - 1];
			rp->cwgo[j - 1] = x;
		}
}

/* Sort the list by step and segment; keep each pair's last dependent. */
static void xdep_close(struct replay *rp)
{
	size_t m = 0;

	if (rp->nxdep > 1)
		qsort(rp->xdep, rp->nxdep, sizeof(*rp->xdep), cmp_xdep);
	for (size_t k = 0; k < rp->nxdep; k++) {
		if (m && rp->xdep[m - 1].s == rp->xdep[k].s && rp->xdep[m - 1].seg == rp->xdep[k].seg)
			rp->xdep[m - 1].max = rp->xdep[k].max;	/* sorted: the larger */
		else
			rp->xdep[m++] = rp->xdep[k];
	}
	rp->nxdep = m;
}

/* The segments: each lazy op, and the stored runs before, between and
 * after them. */
static int segs_make(struct replay *rp)
{
	const struct trace_program *p = rp->p;
	uint32_t at = 0;

	rp->seg = malloc((2 * p->nlz + 1) * sizeof(*rp->seg));
	if (!rp->seg)
		return -1;
	for (size_t k = 0; k <= p->nlz; k++) {
		uint32_t first = k < p->nlz ? p->lz[k].first : (uint32_t)p->nsteps;

		if (first > at)
			rp->seg[rp->nseg++] = (struct seg){ at, first, at, NULL };
		if (k < p->nlz) {
			rp->seg[rp->nseg++] = (struct seg){ first, first + p->lz[k].n, first,
							   &p->lz[k] };
			at = first + p->lz[k].n;
		}
	}
	if (!rp->nseg)		/* an empty program: one empty segment */
		rp->seg[rp->nseg++] = (struct seg){ 0, 0, 0, NULL };
	return 0;
}

/*
 * One pass over the program, made step by step and dropped (a lazy op's
 * steps are never all held): the checks, the transfers of each pair (its
 * queue depths), the last dependent of each step the frontier must pass,
 * and the steps with nothing to wait for, which start at time 0. A rank's
 * last pair is remembered: a ring's billion steps are 2 pairs a rank.
 */
/* Op streams through a SHARP tree: a collnet allreduce of more than one
 * chunk (one chunk is SHARP's low-latency mode, which has no such limit),
 * or an NVLS one with SHARP between the servers of more than a chunk's
 * bytes (its heads' sends reach the tree only in that form). */
static bool sat_op(const struct replay *rp, uint32_t op)
{
	const struct trace_op *o = &rp->t->ops[op];

	if (o->kind != TRACE_COLL)
		return false;
	if (o->algo == TRACE_ALGO_NVLS)
		return rp->t->nagg > 0 && o->bytes > TRACE_SHARP_CHUNK;
	return o->algo == TRACE_ALGO_COLLNET && rp->p->op_nchunks && rp->p->op_nchunks[op] > 1;
}

static int scan(struct replay *rp, uint32_t **zero, size_t *nzero, struct sim_diag *d)
{
	const struct trace_program *p = rp->p;
	const struct trace *t = rp->t;
	const int32_t ne = trace_nendpoints(t);	/* steps may name aggregation nodes */
	struct pair_qp **lastpq = calloc((size_t)ne, sizeof(*lastpq));
	uint32_t *hint = calloc((size_t)1 << XDEP_HINT_BITS, sizeof(*hint));
	size_t zcap = 0, xcap = 0, ngrow = 0;
	struct trace_walk tw;
	size_t gi = 0;
	int rc = -1;

	if (!lastpq || !hint || pairs_grow(rp))
		goto oom;
	trace_walk_init(&tw, p, 0);
	for (uint32_t s = 0; s < p->nsteps; s++) {
		const uint32_t *deps;
		const struct trace_step *st = trace_walk_step(&tw, s, &deps);
		const struct seg *sg;

		while (rp->seg[gi].end <= s && gi + 1 < rp->nseg)
			gi++;	/* the segment s is in: s only grows */
		sg = &rp->seg[gi];

		if (st->kind == TS_JOIN && st->counted) {
			/* started when its count is done (cw_note), not at 0 */
			if (cw_add(rp, s, st, d))
				goto out;
		} else if (!st->ndeps) {
			if (sim_grow((void **)zero, &zcap, *nzero + 1, sizeof(**zero)))
				goto oom;
			(*zero)[(*nzero)++] = s;
		}
		for (uint32_t k = 0; k < st->ndeps; k++) {
			if (deps[k] >= s) {
				rc = sim_diag_set(d, NULL, 0, 0,
						  "program step %" PRIu32 " depends on step %u, not an earlier one",
						  s, deps[k]);
				goto out;
			}
			if (note_dep(rp, deps[k], s, sg, &xcap, hint))
				goto oom;
		}
		if (st->kind != TS_XFER)
			continue;
		if (rp->sat && st->data == TD_REDUCE && st->peer >= t->nranks &&
		    st->peer < t->nranks + t->nagg && sat_op(rp, st->op) &&
		    sat_note(rp->sat, st->op, t->ops[st->op].comm, st->rank, st->peer))
			goto oom;
		if (st->rank == st->peer || st->rank < 0 || st->peer < 0 || st->rank >= ne ||
		    st->peer >= ne) {
			rc = sim_diag_set(d, NULL, 0, 0, "program step %" PRIu32 ": transfer %d -> %d",
					  s, st->rank, st->peer);
			goto out;
		}
		if ((trace_is_nvs(t, st->rank) || trace_is_nvs(t, st->peer)) && t->nnvs) {
			if (!nvlink_pair(rp, st->rank, st->peer)) {
				rc = sim_diag_set(d, NULL, 0, 0,
						  "program step %" PRIu32 ": transfer %d -> %d is not between a GPU and its NVSwitch",
						  s, st->rank, st->peer);
				goto out;
			}
			if (!(rp->srv->p.nvls_eff > 0)) {
				rc = sim_diag_set(d, t->ops[st->op].file, t->ops[st->op].line, 0,
						  "%s algo=nvls needs NVSwitches that reduce (NVLink SHARP: NVSwitch gen3, DGX H100 and later): this run's servers have server.nvls_efficiency=0",
						  trace_coll_names[t->ops[st->op].coll]);
				goto out;
			}
			continue;	/* over NVLink, to or from the switch */
		}
		if (t->rank_node[st->rank] == t->rank_node[st->peer]) {
			rc = sim_diag_set(d, NULL, 0, 0,
					  "ranks %d and %d share a host: a transfer between them does not cross the fabric",
					  st->rank, st->peer);
			goto out;
		}
		if (nvlink_pair(rp, st->rank, st->peer))
			continue;	/* over NVLink: no queue pair, no size limit */
		if (trace_proto_wire(trace_op_proto(&t->ops[st->op]), st->bytes) > (1ULL << 31)) {
			rc = too_big(t, st, d);
			goto out;
		}
		struct pair_qp *pq = lastpq[st->rank];

		if (!pq || pq->key != pair_key(rp, st->rank, st->peer)) {
			pq = pair_find(rp, st->rank, st->peer, true);
			if (!pq)
				goto oom;
			if (rp->npairs_cap != ngrow) {	/* the table moved */
				memset(lastpq, 0, (size_t)ne * sizeof(*lastpq));
				ngrow = rp->npairs_cap;
			}
			lastpq[st->rank] = pq;
		}
		struct mpi_plan pl;

		pq->nxfer += rp->mpi && mpi_step(rp, st, &pl) ? pl.nsend : 1;
	}
	xdep_close(rp);
	rc = 0;
	goto out;
oom:
	rc = sim_diag_set(d, NULL, 0, 0, "out of memory");
out:
	free(lastpq);
	free(hint);
	return rc;
}

/* Node's memory region and completion queue, once. 0 or -1 (out of memory). */
static int node_setup(struct replay *rp, int node)
{
	struct hca *h = fab_hca(rp->f, node);

	if (rp->mr[node])
		return 0;
	/* a GPU server's ranks are GPUs: their buffers are in GPU memory, which
	 * the HCA reaches by GPUDirect RDMA, or through host memory without it
	 * (models/host); anywhere else, host memory */
	rp->mr[node] = hca_reg_mr(h, NULL, 0, 1ULL << 62,
				  HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE |
				  HCA_ACCESS_REMOTE_READ,
				  rp->srv && rp->srv->server[node] >= 0 && !rp->stage ?
				  HCA_MEM_GPU : HCA_MEM_HOST);
	if (rp->srv && rp->srv->server[node] >= 0 && !rp->stage && rp->host_model &&
	    !(rp->mr_host[node] = hca_reg_mr(h, NULL, 0, 1ULL << 62,
					     HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE |
					     HCA_ACCESS_REMOTE_READ, HCA_MEM_HOST)))
		return -1;
	/* cq_notify drains it at every completion: it never holds many */
	rp->cq[node] = hca_create_cq(h, 256, cq_notify, rp);
	return rp->mr[node] && rp->cq[node] ? 0 : -1;
}

static int setup(struct replay *rp, uint32_t **zero, size_t *nzero, struct sim_diag *d)
{
	const struct trace *t = rp->t;
	const int32_t ne = trace_nendpoints(t);	/* steps may name aggregation nodes */

	rp->rank_free = calloc((size_t)ne, sizeof(*rp->rank_free));
	rp->rank_last = malloc((size_t)ne * sizeof(*rp->rank_last));
	rp->sw = calloc((size_t)ne, sizeof(*rp->sw));
	rp->op_seen = calloc(t->nops ? t->nops : 1, sizeof(*rp->op_seen));
	if (!rp->rank_free || !rp->rank_last || !rp->sw || !rp->op_seen || segs_make(rp))
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	for (int32_t k = 0; k < ne; k++)
		rp->rank_last[k] = UINT32_MAX;
	/* SHARP's streaming trees, where an op streams and the switches limit it */
	const struct fab_params *fp = fab_get_params(rp->f);
	bool streams = false;

	for (uint32_t o = 0; o < t->nops && !streams; o++)
		streams = sat_op(rp, o);
	if (streams && !fab_is_eth(fp) && fab_sharp_sat(fp) != FAB_SAT_NONE) {
		const size_t n = t->nops;

		rp->sat = sat_new((uint32_t)n, fab_sharp_sat(fp));
		rp->op_done = calloc(n, sizeof(*rp->op_done));
		rp->sat_q = calloc(n, sizeof(*rp->sat_q));
		rp->sat_t0 = calloc(n, sizeof(*rp->sat_t0));
		if (!rp->sat || !rp->op_done || !rp->sat_q || !rp->sat_t0)
			return sim_diag_set(d, NULL, 0, 0, "out of memory");
	}
	if (scan(rp, zero, nzero, d))
		return -1;
	if (rp->sat)
		sat_seal(rp->sat);
	/* queue pairs: one per ordered pair that transfers, in a hash table */
	rp->mr = calloc((size_t)fab_nodes(rp->f), sizeof(*rp->mr));
	rp->cq = calloc((size_t)fab_nodes(rp->f), sizeof(*rp->cq));
	rp->mr_host = calloc((size_t)fab_nodes(rp->f), sizeof(*rp->mr_host));
	if (!rp->mr || !rp->cq || !rp->mr_host)
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	for (int32_t k = 0; k < ne; k++) {	/* ranks and aggregation nodes */
		int node = t->rank_node[k];

		if (!fab_hca(rp->f, node))
			return sim_diag_set(d, NULL, 0, 0, "rank %d is on node %d, which is not a channel adapter",
					    k, node);
		if (node_setup(rp, node))
			return sim_diag_set(d, NULL, 0, 0, "out of memory");
	}
	/* a replica cannot see whether another partition's QPs are idle: it
	 * keeps them all, as the TCP fabric and runs with faults do */
	rp->qp_life = !fab_kind_of(fab_get_params(rp->f))->tcp && !fab_fault_report(rp->f) &&
		      !rp->every;
	for (size_t i = 0; i < rp->npairs_cap; i++) {
		struct pair_qp *pq = &rp->pairs[i];
		int32_t a, b;

		if (!pq->key)
			continue;
		pair_ranks(rp, pq, &a, &b);
		/* a PXN relay's HCA sends: it needs its region and queue too */
		if (node_setup(rp, send_node(rp, a, b)))
			return sim_diag_set(d, NULL, 0, 0, "out of memory");
		/* the QPs' numbers now, in this order, whenever they are made */
		pq->sqpn = hca_reserve_qpn(fab_hca(rp->f, send_node(rp, a, b)));
		pq->rqpn = hca_reserve_qpn(node_hca(rp, b));
		pq->lkey = rp->mr[send_node(rp, a, b)]->lkey;
		pq->rkey = rp->mr[t->rank_node[b]]->rkey;
		if (pq->nxfer >= PAIR_SQ_MAX && !(pq->bl = calloc(1, sizeof(*pq->bl))))
			return sim_diag_set(d, NULL, 0, 0, "out of memory");
		if (!pq->sqpn || !pq->rqpn || (!rp->qp_life && connect_pair(rp, pq, a, b)))
			return sim_diag_set(d, NULL, 0, 0, "could not connect ranks %d and %d", a, b);
		if (pq->bl) {
			if (sim_grow((void **)&rp->bls, &rp->nbls_cap, rp->nbls + 1, sizeof(*rp->bls)))
				return sim_diag_set(d, NULL, 0, 0, "out of memory");
			rp->bls[rp->nbls++] = pq;
		}
	}
	return 0;
}

/* mpi.proto=ucx: the message protocol's sizes, and UCX's rendezvous
 * threshold where mpi.rndv_bytes leaves it to UCX (auto): for the port of
 * rank 0's host, with the job's ranks as endpoints, as Open MPI tells UCX. */
static int mpi_setup(struct replay *rp, const struct fab_params *fp, struct sim_diag *d)
{
	if (fab_kind_of(fp)->tcp)
		return sim_diag_set(d, NULL, 0, 0,
				    "mpi.proto=ucx models MPI over UCX's verbs transport: it needs fabric=ib or roce");
	if (fp->mpi_short_bytes + 9 > fp->mpi_seg_bytes || fp->mpi_seg_bytes < 64)
		return sim_diag_set(d, NULL, 0, 0,
				    "mpi.seg_bytes (%u) must hold mpi.short_bytes (%u) and 9 bytes of headers",
				    fp->mpi_seg_bytes, fp->mpi_short_bytes);
	rp->mpi = true;
	rp->mp = (struct mpi_params){ .short_bytes = fp->mpi_short_bytes,
				      .seg_bytes = fp->mpi_seg_bytes,
				      .rndv_bytes = fp->mpi_rndv_bytes };
	if (!rp->mp.rndv_bytes && rp->t->nranks) {
		const int node = rp->t->rank_node[0];
		double bps = 0;

		for (int i = 0; i < fab_nports(rp->f) && !bps; i++)
			if (fab_port(rp->f, i)->node == node)
				bps = link_data_rate_bps(fab_port(rp->f, i)->rate);
		rp->mp.rndv_bytes = mpi_ucx_rndv_thresh(bps / 8, fab_is_eth(fp), fp->mpi_ppn,
							(uint32_t)rp->t->nranks,
							fp->mpi_bcopy_mibps * 1048576.0, fp->mpi_seg_bytes);
	}
	rp->r->mpi_rndv_bytes = rp->mp.rndv_bytes;
	return 0;
}

/* ---- results ------------------------------------------------------------------ */

/* The chain of critical dependencies from the last step (the program is
 * not lazy: every step's times are kept), for the tests and tools that
 * read it step by step. */
static int critical_path(const struct trace_program *p, struct trace_results *r, uint32_t last)
{
	size_t n = 0;

	for (uint32_t s = last; s != UINT32_MAX; s = r->step[s].crit)
		n += p->steps[s].kind != TS_JOIN;
	r->crit_path = malloc((n ? n : 1) * sizeof(*r->crit_path));
	if (!r->crit_path)
		return -1;
	for (uint32_t s = last; s != UINT32_MAX; s = r->step[s].crit)
		if (p->steps[s].kind != TS_JOIN)
			r->crit_path[--n] = s;
	return 0;
}

int trace_results_flows(const struct trace_program *p, struct trace_results *r)
{
	const struct trace *t = p->trace;
	size_t nxfer = 0;

	if (r->flows_built)
		return 0;
	if (!r->step)		/* a lazy program's steps were not kept */
		return -1;
	for (size_t s = 0; s < p->nsteps; s++)
		nxfer += p->steps[s].kind == TS_XFER;
	if (fab_msgs_reserve(&r->flows, nxfer))
		return -1;
	for (size_t s = 0; s < p->nsteps; s++) {
		const struct trace_step *st = &p->steps[s];

		if (st->kind != TS_XFER)
			continue;
		struct fab_msg m = {
			.src = (uint32_t)t->rank_node[st->rank], .dst = (uint32_t)t->rank_node[st->peer],
			.bytes = st->bytes, .after = -1, .stream = 0,
		};

		if (fab_msgs_add(&r->flows, &m))
			return -1;
		struct fab_msg *f = &r->flows.v[r->flows.n - 1];

		f->start = r->step[s].start;
		f->first_tx = r->step[s].start;
		f->end = f->completed = r->step[s].end;
		f->done = f->cqe = f->finished = true;
	}
	r->flows_built = true;
	return 0;
}

/* The first step not done, for the stall message. */
static uint64_t first_undone(const struct replay *rp)
{
	uint64_t first = rp->p->nsteps;

	for (size_t j = 0; j < rp->wcap; j++) {	/* made and not finished */
		if (rp->win[j]) {
			const uint32_t s = win_step(rp->wcap, j, sim_pool_get(&rp->pool, rp->win[j] - 1));

			first = s < first ? s : first;
		}
	}
	for (size_t i = 0; i < rp->tcap; i++)
		if (rp->tab[i].key && rp->tab[i].key - 1 < first)
			first = rp->tab[i].key - 1;
	for (size_t k = 0; k < rp->nseg; k++)	/* not made */
		if (rp->seg[k].made < rp->seg[k].end && rp->seg[k].made < first)
			first = rp->seg[k].made;
	return first;
}

/* What a replay holds, freed (its results stay in r). */
static void replay_free(struct replay *rp)
{
	struct fab *f = rp->f;

	free(rp->zero);
	sim_cal_fini(&rp->q);
	free(rp->now.q);
	free(rp->kept.q);
	if (rp->sat) {
		for (size_t i = 0; i < rp->t->nops; i++)
			free(rp->sat_q[i].q);
	}
	sat_free(rp->sat);
	free(rp->op_done);
	free(rp->sat_q);
	free(rp->sat_t0);
	for (size_t i = 0; rp->cwtab && i < rp->t->nops; i++)
		free(rp->cwtab[i]);
	free(rp->cwtab);
	free(rp->cw);
	free(rp->cwgo);
	sim_wake_fini(&rp->wake);
	/* each record's list of dependents once: by its own step's entry */
	for (size_t j = 0; j < rp->wcap; j++) {
		if (rp->win[j]) {
			struct live *l = sim_pool_get(&rp->pool, rp->win[j] - 1);

			if (l->dcap && win_step(rp->wcap, j, l) == l->s)
				free(l->d.v);
		}
	}
	for (size_t i = 0; i < rp->tcap; i++) {
		if (rp->tab[i].key) {
			struct live *l = sim_pool_get(&rp->pool, rp->tab[i].ix);

			if (l->dcap && rp->tab[i].key - 1 == l->s)
				free(l->d.v);
		}
	}
	free(rp->win);
	free(rp->tab);
	sim_pool_fini(&rp->pool);
	free(rp->seg);
	free(rp->xdep);
	free(rp->rank_free);
	free(rp->rank_last);
	for (int32_t k = 0; rp->sw && k < trace_nendpoints(rp->t); k++)
		free(rp->sw[k].ci);
	free(rp->sw);
	free(rp->op_seen);
	for (size_t i = 0; i < rp->npairs_cap; i++) {
		if (rp->pairs[i].bl)
			free(rp->pairs[i].bl->q);
		free(rp->pairs[i].bl);
	}
	free(rp->pairs);
	free(rp->bls);
	free(rp->retire.q);
	for (int i = 0; rp->nvq && i < fab_nodes(f); i++)
		free(rp->nvq[i].q);
	free(rp->nvq);
	free(rp->nvq_armed);
	for (int i = 0; rp->cq && i < fab_nodes(f); i++)
		hca_cq_set_notify(rp->cq[i], NULL, NULL);
	free(rp->mr);	/* the regions and CQs belong to the HCAs' life */
	free(rp->mr_host);
	free(rp->op_go);
	free(rp->cq);
	/* the engine must not call back into it, nor the CQs (which stay
	 * with the HCAs) */
	if (rp->comp)
		fab_engine(f)->comps[rp->comp].fn = replay_gone;
	free(rp);
}

/* What a replay in every partition does not take yet, or NULL. */
static const char *every_refused(const struct replay *rp)
{
	const struct fab_params *fp = fab_get_params(rp->f);

	if (rp->stage)
		return "GPU servers without GPUDirect RDMA (host.gpudirect=off: staging reads the host's state)";
	/* LL is staged only between servers (ll_staged): ranks on two or more */
	bool servers = false;

	for (int32_t k = 1; rp->srv && k < rp->t->nranks && !servers; k++)
		servers = rp->srv->server[rp->t->rank_node[k]] !=
			  rp->srv->server[rp->t->rank_node[0]];
	for (size_t i = 0; servers && rp->host_model && i < rp->t->nops; i++)
		if (rp->t->ops[i].kind == TRACE_COLL &&
		    trace_op_proto(&rp->t->ops[i]) == TRACE_PROTO_LL)
			return "NCCL's LL protocol between GPU servers (host memory at both ends: the host's state)";
	if (fp->mpi_ucx)
		return "mpi.proto=ucx";
	if (fab_fault_report(rp->f))
		return "faults";
	if (rp->nbls)
		return "a rank pair with more transfers than a send queue holds";
	return NULL;
}

struct replay *trace_replay_start(const struct trace_program *p, struct fab *f,
				  struct trace_results *r, bool every, struct sim_diag *d)
{
	struct replay *rp = calloc(1, sizeof(*rp));
	const struct fab_params *fp = fab_get_params(f);
	int c;

	if (!rp) {
		sim_diag_set(d, NULL, 0, 0, "out of memory");
		return NULL;
	}
	*rp = (struct replay){ .p = p, .t = p->trace, .f = f, .eng = fab_engine(f), .r = r,
			       .best_s = UINT32_MAX, .srv = fab_server(f), .every = every };
	rp->stage = rp->srv && fp->host_model && !fp->host.gpudirect;
	if (rp->srv && trace_tune_ll_channel_gbps(&rp->t->tune) > 0)
		rp->ll_ps_per_kb = (uint64_t)(1024.0 * 1000.0 / trace_tune_ll_channel_gbps(&rp->t->tune) + 0.5);
	rp->seen = fab_lookahead(f);
	rp->host_model = fp->host_model;
	rp->max_inline = fp->hca_max_inline;
	memset(r, 0, sizeof(*r));
	sim_samples_init(&r->xfer_times);
	sim_pool_init(&rp->pool, sizeof(struct live));
	rp->live_max = SIZE_MAX;
	if (p->nlz) {
		const uint64_t stored = (uint64_t)p->nstored * TRACE_STEP_BYTES;

		rp->share = (p->max_bytes ? p->max_bytes : trace_mem_budget_default()) /
			    (p->replays > 1 ? p->replays : 1);
		rp->live_max = rp->share > stored ? (rp->share - stored) / TRACE_STEP_BYTES : 0;
		if (rp->live_max < 64)	/* a run's first steps, whatever the budget */
			rp->live_max = 64;
	}
	if (sim_cal_init(&rp->q)) {
		sim_diag_set(d, NULL, 0, 0, "out of memory");
		goto fail;
	}
	sim_wake_init(&rp->wake);
	if (rp->srv) {		/* the GPUs' NVLink port queues; the kernels' launches */
		rp->nvq = calloc((size_t)fab_nodes(f), sizeof(*rp->nvq));
		rp->nvq_armed = calloc((size_t)fab_nodes(f), sizeof(*rp->nvq_armed));
		if (rp->t->tune.nchannels)
			rp->op_go = calloc(rp->t->nops ? rp->t->nops : 1, sizeof(*rp->op_go));
		if (!rp->nvq || !rp->nvq_armed || (rp->t->tune.nchannels && !rp->op_go)) {
			sim_diag_set(d, NULL, 0, 0, "out of memory");
			goto fail;
		}
	}
	if (!p->lazy) {		/* every step's times, for the outputs that list them */
		r->step = sim_mem_calloc(p->nsteps ? p->nsteps : 1, sizeof(*r->step));
		if (!r->step) {
			sim_diag_set(d, NULL, 0, 0, "out of memory");
			goto fail;
		}
	} else if (p->keep_times && trace_spill_open(r, p->nsteps)) {
		sim_diag_set(d, NULL, 0, 0,
			     "could not make a temporary file for the steps' times (TMPDIR): %s",
			     strerror(errno));
		goto fail;
	}
	r->op_start = calloc(p->trace->nops ? p->trace->nops : 1, sizeof(*r->op_start));
	r->op_end = calloc(p->trace->nops ? p->trace->nops : 1, sizeof(*r->op_end));
	r->rank = calloc((size_t)trace_nendpoints(p->trace), sizeof(*r->rank));
	if (!r->op_start || !r->op_end || !r->rank) {
		sim_diag_set(d, NULL, 0, 0, "out of memory");
		goto fail;
	}
	if (p->nsteps >= UINT32_MAX) {	/* a step's number + 1 is an event's argument */
		sim_diag_set(d, NULL, 0, 0, "%zu steps: at most %u", p->nsteps, UINT32_MAX - 1);
		goto fail;
	}
	if (fp->mpi_ucx && mpi_setup(rp, fp, d))
		goto fail;
	rp->cq_bare = cq_bare(rp);
	if (setup(rp, &rp->zero, &rp->nzero, d))
		goto fail;
	if (every && every_refused(rp)) {
		sim_diag_set(d, NULL, 0, 0, "a replay in partitions does not take %s yet",
			     every_refused(rp));
		goto fail;
	}
	c = sim_register(rp->eng, replay_handler, rp, "replay");
	if (c < 0 || (every && fab_every(f, (uint32_t)c))) {
		sim_diag_set(d, NULL, 0, 0, "out of memory");
		goto fail;
	}
	rp->comp = (uint32_t)c;
	rp->hint = UINT32_MAX;
	sim_comp_prefetch(rp->eng, rp->comp, replay_prefetch, replay_prefetch_early);
	/* messages of the fabric's own (background traffic) do not end the
	 * run: the workload does, when its last step is done */
	fab_hold(f, true);
	for (size_t k = 0; k < rp->nzero; k++)
		push(rp, 0, rp->zero[k], EV_START);
	free(rp->zero);
	rp->zero = NULL;
	return rp;
fail:
	replay_free(rp);
	return NULL;
}

int trace_replay_finish(struct replay *rp, bool ran, struct sim_diag *d)
{
	const struct trace_program *p = rp->p;
	struct trace_results *r = rp->r;
	struct fab *f = rp->f;
	int rc = -1;

	if (!ran)
		goto out;
	if (rp->failed) {
		*d = rp->fail;
		goto out;
	}
	if (r->steps_done < p->nsteps) {
		uint64_t s = first_undone(rp);
		struct trace_step tmp;
		const uint32_t *deps;
		uint32_t buf[TRACE_STEP_MAXDEPS];
		const struct trace_step *st = trace_program_step(p, (uint32_t)s, &tmp, &deps, buf);

		if (fab_time_limit_reached(f)) {
			/* not a stall: the run was told to stop, and a trace's
			 * results (op times, rank times, the critical path)
			 * need every step's end */
			sim_diag_set(d, NULL, 0, 0,
				     "the run reached sim.max_time_ns (%" PRIu64 " ns) with %zu of %zu steps done: a trace's report needs all of them (raise it, or 0 for no limit)",
				     fab_get_params(f)->max_time_ns, steps_shown(rp), steps_total(p));
			goto out;
		}
		sim_diag_set(d, NULL, 0, 0,
			     "the workload stalled at %.3f us: %zu of %zu steps done; step %" PRIu64 " (rank %d, op %u) never finished%s",
			     (double)fab_engine(f)->now / SIM_US, steps_shown(rp), steps_total(p), s,
			     st ? st->rank : -1, st ? st->op : 0,
			     sat_nwaiting(rp->sat) ?
				     "; allreduces through SHARP (collnet, nvls + SHARP) wait for trees that others hold, which wait for them (ib.sharp_sat=none lifts the switches' limit)" :
				     "");
		goto out;
	}
	/* a recv is timed as the send it waits for: its range is that step */
	for (size_t i = 0; i < p->trace->nops; i++) {
		if (!p->op_nsteps[i]) {
			r->op_start[i] = r->op_end[i] = 0;
			continue;
		}
		if (p->trace->ops[i].kind == TRACE_RECV) {
			struct trace_step tmp;
			const uint32_t *deps;
			uint32_t buf[TRACE_STEP_MAXDEPS];
			const struct trace_step *st = trace_program_step(p, p->op_first[i], &tmp,
									 &deps, buf);

			r->op_start[i] = r->op_start[st->op];
			r->op_end[i] = r->op_end[st->op];
		}
	}
	r->live_peak = rp->pool.high;
	r->live_slots = rp->wcap;
	r->live_spilled = rp->spilled;
	r->qp_pairs = rp->npairs;
	r->qp_pairs_peak = rp->qp_peak;
	if (rp->srv) {
		r->nvlink_xfers = rp->srv->xfers;
		r->nvlink_bytes = rp->srv->bytes;
		r->pxn_xfers = rp->srv->pxn_xfers;
	}
	r->ncrit = rp->best.n;
	r->crit_compute_ps = rp->best.comp;
	r->crit_comm_ps = rp->best.comm;
	if (r->step && critical_path(p, r, rp->best_s)) {
		sim_diag_set(d, NULL, 0, 0, "out of memory");
		goto out;
	}
	rc = 0;
out:
	replay_free(rp);
	return rc;
}

int trace_replay(const struct trace_program *p, struct fab *f, struct trace_results *r,
		 struct sim_diag *d)
{
	struct replay *rp = trace_replay_start(p, f, r, false, d);
	bool ran;

	if (!rp)
		return -1;
	ran = !p->nsteps || !fab_run(f, d);
	return trace_replay_finish(rp, ran, d);
}

void trace_results_free(struct trace_results *r)
{
	free(r->step);
	free(r->op_start);
	free(r->op_end);
	free(r->rank);
	free(r->crit_path);
	trace_spill_close(r->spill);
	sim_samples_fini(&r->xfer_times);
	fab_msgs_free(&r->flows);
	memset(r, 0, sizeof(*r));
}

double trace_op_algbw(const struct trace_program *p, const struct trace_results *r, uint32_t op)
{
	sim_time_t dt = r->op_end[op] - r->op_start[op];

	return dt ? (double)p->trace->ops[op].bytes / ((double)dt * 1e-12) : 0;
}
