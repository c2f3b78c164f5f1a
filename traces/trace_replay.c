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
 * Compute steps occupy their rank one at a time. A step becomes ready when
 * its last dependency is done and starts then (a compute step: when its
 * rank is also free). The replay keeps its own small event heap so steps
 * start at the simulated time they become ready.
 */
#include "traces/trace_replay.h"

#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "models/hca/hca.h"
#include "sim/sim_log.h"
#include "sim/sim_mem.h"

enum { EV_START, EV_DONE, EV_ROOM };

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
	struct hca_qp *sqp, *rqp;
	uint32_t nxfer;		/* transfers over it (queue depths) */
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

struct replay {
	const struct trace_program *p;
	const struct trace *t;
	struct fab *f;
	struct sim_engine *eng;
	struct trace_results *r;
	uint32_t comp;
	struct sim_heap heap;
	uint64_t seq;
	struct sim_wake wake;
	uint32_t *left;			/* dependencies not yet done, per step */
	uint32_t *dep_off, *dep;	/* dependents (CSR), per step */
	sim_time_t *rank_free;		/* a rank computes one thing at a time */
	uint32_t *rank_last;		/* its last compute step (critical path) */
	struct pair_qp *pairs;
	size_t npairs, npairs_cap;
	struct hca_mr **mr;		/* per node */
	struct hca_cq **cq;		/* per node */
	bool failed;
	struct sim_diag fail;
	size_t joins_done;		/* TS_JOIN steps among r->steps_done */
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
	sim_stop(rp->eng);
}

/* ---- events ------------------------------------------------------------ */

static void push(struct replay *rp, sim_time_t t, uint32_t step, uint32_t kind)
{
	struct sim_event e = { .time = t, .seq = rp->seq++, .comp = step, .arg = kind };

	if (sim_heap_push(&rp->heap, &e)) {
		replay_fail(rp, "out of memory replaying (%zu of %zu steps done)",
			    steps_shown(rp), steps_total(rp->p));
		return;
	}
	if (sim_wake_at(rp->eng, &rp->wake, sim_heap_top(&rp->heap)->time, rp->comp, 0))
		replay_fail(rp, "out of memory replaying");
}

static struct hca *node_hca(struct replay *rp, int32_t rank)
{
	return fab_hca(rp->f, rp->t->rank_node[rank]);
}

/* Post the pair's next receives at the peer: up to RECV_BATCH, never more
 * than its transfers. Called before each send that would find none left,
 * so a receive is always posted before its WRITE with immediate can
 * arrive, as when all were posted before the run; the work request ids
 * are the same (the transfer's index on the pair). */
static int post_recvs(struct pair_qp *pq)
{
	uint32_t n = pq->nxfer - pq->posted < RECV_BATCH ? pq->nxfer - pq->posted : RECV_BATCH;

	for (uint32_t k = 0; k < n; k++) {
		struct hca_recv_wr r = { .wr_id = pq->posted };

		if (hca_post_recv(pq->rqp, &r))
			return -1;
		pq->posted++;
	}
	return 0;
}

/* Post transfer step s on its pair: a WRITE with immediate (its step). */
static void post_xfer(struct replay *rp, struct pair_qp *pq, uint32_t s)
{
	const struct trace_step *st = &rp->p->steps[s];
	struct hca_send_wr wr = {
		.wr_id = s, .opcode = HCA_WR_RDMA_WRITE_WITH_IMM, .imm_data = s,
		.sg = { .addr = 0, .length = (uint32_t)st->bytes, .lkey = pq->lkey },
		.remote_addr = 0, .rkey = pq->rkey,
	};

	rp->r->step[s].start = rp->eng->now;
	if (pq->sent == pq->posted && post_recvs(pq)) {
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
	if (hca_post_send(pq->sqp, &wr))
		replay_fail(rp, "step %u: the HCA refused the transfer (%" PRIu64 " bytes)",
			    s, st->bytes);
}

static void backlog_push(struct replay *rp, struct pair_backlog *b, uint32_t s)
{
	if (b->len == b->cap) {
		uint32_t cap = b->cap ? 2 * b->cap : 1024;
		uint32_t *q = cap > b->cap ? malloc((size_t)cap * sizeof(*q)) : NULL;

		if (!q) {
			replay_fail(rp, "out of memory replaying (%zu of %zu steps done)",
				    steps_shown(rp), steps_total(rp->p));
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

/* A signalled send of step s's pair has completed: post what now fits. */
static void backlog_room(struct replay *rp, uint32_t s)
{
	const struct trace_step *st = &rp->p->steps[s];
	struct pair_qp *pq = pair_find(rp, st->rank, st->peer, false);
	struct pair_backlog *b = pq ? pq->bl : NULL;

	while (b && b->len && pq->sent - b->acked < PAIR_SQ_MAX && !rp->failed) {
		uint32_t next = b->q[b->head];

		b->head = (b->head + 1) % b->cap;
		b->len--;
		post_xfer(rp, pq, next);
	}
}

static void step_start(struct replay *rp, uint32_t s)
{
	const struct trace_step *st = &rp->p->steps[s];
	struct trace_step_time *tm = &rp->r->step[s];
	sim_time_t now = rp->eng->now;

	if (st->kind == TS_JOIN) {	/* its deps are done: so is it */
		tm->start = now;
		push(rp, now, s, EV_DONE);
		return;
	}
	if (st->kind == TS_COMPUTE) {
		sim_time_t start = now > rp->rank_free[st->rank] ? now : rp->rank_free[st->rank];

		if (start > now && rp->rank_last[st->rank] != UINT32_MAX)
			tm->crit = rp->rank_last[st->rank];	/* waited for its rank */
		tm->start = start;
		rp->rank_free[st->rank] = start + st->duration;
		rp->rank_last[st->rank] = s;
		push(rp, start + st->duration, s, EV_DONE);
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
	post_xfer(rp, pq, s);
}

static void step_done(struct replay *rp, uint32_t s)
{
	struct trace_results *r = rp->r;
	sim_time_t now = rp->eng->now;

	r->step[s].end = now;
	if (now > r->end_ps)
		r->end_ps = now;
	r->steps_done++;
	rp->joins_done += rp->p->steps[s].kind == TS_JOIN;
	for (uint32_t k = rp->dep_off[s]; k < rp->dep_off[s + 1]; k++) {
		uint32_t d = rp->dep[k];
		struct trace_step_time *td = &r->step[d];

		if (now >= td->ready) {
			if (now > td->ready || td->crit == UINT32_MAX)
				td->crit = s;
			td->ready = now;
		}
		if (!--rp->left[d])
			push(rp, td->ready, d, EV_START);
	}
	if (r->steps_done == rp->p->nsteps)
		sim_stop(rp->eng);
}

static void replay_handler(struct sim_engine *eng, void *ctx, uint32_t arg)
{
	struct replay *rp = ctx;
	struct sim_event e;

	(void)arg;
	sim_wake_fired(&rp->wake);
	while (!rp->failed && sim_heap_top(&rp->heap) && sim_heap_top(&rp->heap)->time <= eng->now) {
		sim_heap_pop(&rp->heap, &e);
		if (e.arg == EV_START)
			step_start(rp, e.comp);
		else if (e.arg == EV_DONE)
			step_done(rp, e.comp);
		else
			backlog_room(rp, e.comp);
	}
	const struct sim_event *top = sim_heap_top(&rp->heap);

	if (top && !rp->failed && sim_wake_at(eng, &rp->wake, top->time, rp->comp, 0))
		replay_fail(rp, "out of memory replaying");
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
			if (wc[i].opcode == HCA_WC_RECV_RDMA_WITH_IMM) {
				/* delivered: done, unless it is done when acknowledged */
				if (wc[i].imm_data < rp->p->nsteps &&
				    !rp->p->steps[wc[i].imm_data].acked)
					push(rp, wc[i].time, wc[i].imm_data, EV_DONE);
			} else if (wc[i].opcode == HCA_WC_RDMA_WRITE && s < rp->p->nsteps) {
				const struct trace_step *st = &rp->p->steps[s];
				struct pair_qp *pq = pair_find(rp, st->rank, st->peer, false);

				if (st->acked)	/* acknowledged at its source */
					push(rp, wc[i].time, s, EV_DONE);
				/* a signalled send of a pair with a backlog (the high
				 * half counts the sends gone) */
				if (pq && pq->bl && (wc[i].wr_id >> 32)) {
					pq->bl->acked = (uint32_t)(wc[i].wr_id >> 32);
					push(rp, wc[i].time, s, EV_ROOM);
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
	struct hca *ha = node_hca(rp, a), *hb = node_hca(rp, b);
	struct hca_qp_init_attr ia = {
		.qp_type = HCA_QPT_RC, .send_cq = rp->cq[rp->t->rank_node[a]],
		.recv_cq = rp->cq[rp->t->rank_node[a]],
		.cap = { .max_send_wr = pq->nxfer + 1, .max_recv_wr = 1 },
	};
	struct hca_qp *q[2];

	if (pq->nxfer >= PAIR_SQ_MAX) {
		pq->bl = calloc(1, sizeof(*pq->bl));
		if (!pq->bl)
			return -1;
		ia.cap.max_send_wr = PAIR_SQ_MAX;
	}

	q[0] = pq->sqp = hca_create_qp(ha, &ia);
	ia.send_cq = ia.recv_cq = rp->cq[rp->t->rank_node[b]];
	ia.cap = (struct hca_qp_cap){
		.max_send_wr = 1,
		.max_recv_wr = pq->nxfer < HCA_MAX_QP_WR ? pq->nxfer + 1 : HCA_MAX_QP_WR,
	};
	q[1] = pq->rqp = hca_create_qp(hb, &ia);
	if (!q[0] || !q[1])
		return -1;
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
	pq->lkey = rp->mr[rp->t->rank_node[a]]->lkey;
	pq->rkey = rp->mr[rp->t->rank_node[b]]->rkey;
	return post_recvs(pq);
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

static int setup(struct replay *rp, struct sim_diag *d)
{
	const struct trace_program *p = rp->p;
	const struct trace *t = rp->t;
	const int32_t ne = trace_nendpoints(t);	/* steps may name aggregation nodes */
	size_t n = p->nsteps;
	rp->left = sim_mem_calloc(n ? n : 1, sizeof(*rp->left));
	rp->dep_off = sim_mem_calloc(n + 1, sizeof(*rp->dep_off));
	rp->dep = sim_mem_alloc((p->ndeps ? p->ndeps : 1) * sizeof(*rp->dep));
	rp->rank_free = calloc((size_t)ne, sizeof(*rp->rank_free));
	rp->rank_last = malloc((size_t)ne * sizeof(*rp->rank_last));
	if (!rp->left || !rp->dep_off || !rp->dep || !rp->rank_free || !rp->rank_last)
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	for (int32_t k = 0; k < ne; k++)
		rp->rank_last[k] = UINT32_MAX;
	/* dependents of each step (the program lists dependencies) */
	for (size_t s = 0; s < n; s++) {
		const struct trace_step *st = &p->steps[s];

		rp->left[s] = st->ndeps;
		for (uint32_t k = 0; k < st->ndeps; k++) {
			uint32_t dd = p->deps[st->dep_off + k];

			if (dd >= s)
				return sim_diag_set(d, NULL, 0, 0,
						    "program step %zu depends on step %u, not an earlier one",
						    s, dd);
			rp->dep_off[dd + 1]++;
		}
		if (st->kind == TS_XFER) {
			if (st->rank == st->peer || st->rank < 0 || st->peer < 0 ||
			    st->rank >= ne || st->peer >= ne)
				return sim_diag_set(d, NULL, 0, 0, "program step %zu: transfer %d -> %d",
						    s, st->rank, st->peer);
			if (t->rank_node[st->rank] == t->rank_node[st->peer])
				return sim_diag_set(d, NULL, 0, 0,
						    "ranks %d and %d share a host: a transfer between them does not cross the fabric",
						    st->rank, st->peer);
			if (st->bytes > (1ULL << 31))
				return too_big(t, st, d);
		}
	}
	for (size_t s = 0; s < n; s++)
		rp->dep_off[s + 1] += rp->dep_off[s];
	uint32_t *fill = calloc(n ? n : 1, sizeof(*fill));

	if (!fill)
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	for (size_t s = 0; s < n; s++) {
		const struct trace_step *st = &p->steps[s];

		for (uint32_t k = 0; k < st->ndeps; k++) {
			uint32_t dd = p->deps[st->dep_off + k];

			rp->dep[rp->dep_off[dd] + fill[dd]++] = (uint32_t)s;
		}
	}
	free(fill);
	/* queue pairs: one per ordered pair that transfers, in a hash table */
	rp->mr = calloc((size_t)fab_nodes(rp->f), sizeof(*rp->mr));
	rp->cq = calloc((size_t)fab_nodes(rp->f), sizeof(*rp->cq));
	if (pairs_grow(rp) || !rp->mr || !rp->cq)
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	for (size_t s = 0; s < n; s++) {
		const struct trace_step *st = &p->steps[s];
		struct pair_qp *pq;

		if (st->kind != TS_XFER)
			continue;
		pq = pair_find(rp, st->rank, st->peer, true);
		if (!pq)
			return sim_diag_set(d, NULL, 0, 0, "out of memory");
		pq->nxfer++;
	}
	for (int32_t k = 0; k < ne; k++) {	/* ranks and aggregation nodes */
		int node = t->rank_node[k];
		struct hca *h = fab_hca(rp->f, node);

		if (!h)
			return sim_diag_set(d, NULL, 0, 0, "rank %d is on node %d, which is not a channel adapter",
					    k, node);
		if (rp->mr[node])
			continue;
		rp->mr[node] = hca_reg_mr(h, NULL, 0, 1ULL << 62,
					  HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE |
					  HCA_ACCESS_REMOTE_READ, HCA_MEM_HOST);
		/* cq_notify drains it at every completion: it never holds many */
		rp->cq[node] = hca_create_cq(h, 256, cq_notify, rp);
		if (!rp->mr[node] || !rp->cq[node])
			return sim_diag_set(d, NULL, 0, 0, "out of memory");
	}
	for (size_t i = 0; i < rp->npairs_cap; i++) {
		struct pair_qp *pq = &rp->pairs[i];

		if (!pq->key)
			continue;
		int32_t a = (int32_t)((pq->key - 1) / (uint64_t)ne);
		int32_t b = (int32_t)((pq->key - 1) % (uint64_t)ne);

		if (connect_pair(rp, pq, a, b))
			return sim_diag_set(d, NULL, 0, 0, "could not connect ranks %d and %d", a, b);
	}
	return 0;
}

/* ---- results ------------------------------------------------------------------ */

struct ival {
	sim_time_t a, b;
	uint8_t kind;	/* 0 compute, 1 transfer */
};

static int cmp_ival(const void *x, const void *y)
{
	const struct ival *p = x, *q = y;

	if (p->a != q->a)
		return p->a < q->a ? -1 : 1;
	return (p->b > q->b) - (p->b < q->b);
}

/*
 * Sort a rank's intervals by (start, end). They come in step order, which
 * is nearly start order (a ring rank's sends and the receives from its
 * neighbour interleave, each a place or two from where it belongs): an
 * insertion sort does that in about n moves, where qsort and its
 * comparator calls took 7% of a 1,024-rank ring's instructions. A
 * budget of moves keeps it linear; past it, qsort finishes the job. Equal
 * intervals may end up in another order than qsort's, which none of the
 * unions below can see.
 */
static void sort_ivals(struct ival *v, size_t n)
{
	size_t budget = 4 * n + 64;

	for (size_t i = 1; i < n; i++) {
		struct ival x = v[i];
		size_t j = i;

		while (j > 0 && cmp_ival(&v[j - 1], &x) > 0) {
			v[j] = v[j - 1];
			j--;
			if (!--budget) {
				v[j] = x;
				qsort(v, n, sizeof(*v), cmp_ival);
				return;
			}
		}
		v[j] = x;
	}
}

/* Length of the union of intervals of `kind` (1 bit mask), sorted by start. */
static sim_time_t union_len(const struct ival *v, size_t n, unsigned mask)
{
	sim_time_t total = 0, cur_a = 0, cur_b = 0;
	bool open = false;

	for (size_t i = 0; i < n; i++) {
		if (!(mask & (1u << v[i].kind)))
			continue;
		if (!open || v[i].a > cur_b) {
			if (open)
				total += cur_b - cur_a;
			cur_a = v[i].a;
			cur_b = v[i].b;
			open = true;
		} else if (v[i].b > cur_b) {
			cur_b = v[i].b;
		}
	}
	if (open)
		total += cur_b - cur_a;
	return total;
}

/*
 * Each rank's compute, communication and overlap time: the unions of its
 * steps' intervals (a transfer counts for both its ranks). The steps are
 * bucketed by rank as step numbers (4 bytes each, in step order), and one
 * rank's intervals at a time are gathered, sorted and measured: holding
 * every rank's intervals at once (24 bytes each, two per transfer) was the
 * memory peak of a large replay's end, 98 MB of the 1,024-host 4 MiB
 * ring's 393 MB once its flow list was no longer built.
 */
static int rank_times(const struct trace_program *p, struct trace_results *r)
{
	int32_t nr = trace_nendpoints(p->trace);
	size_t *cnt = calloc((size_t)nr + 1, sizeof(*cnt));
	size_t *off = calloc((size_t)nr + 1, sizeof(*off));
	size_t total = 0, most = 0;
	uint32_t *idx = NULL;
	struct ival *v = NULL;
	int rc = -1;

	if (!cnt || !off)
		goto out;
	for (size_t s = 0; s < p->nsteps; s++) {
		const struct trace_step *st = &p->steps[s];

		if (st->kind == TS_JOIN)	/* no time of its own */
			continue;
		cnt[st->rank]++;
		total++;
		if (st->kind == TS_XFER) {
			cnt[st->peer]++;
			total++;
		}
	}
	for (int32_t k = 0; k < nr; k++) {
		off[k + 1] = off[k] + cnt[k];
		most = cnt[k] > most ? cnt[k] : most;
	}
	idx = malloc((total ? total : 1) * sizeof(*idx));
	v = malloc((most ? most : 1) * sizeof(*v));
	if (!idx || !v)
		goto out;
	memset(cnt, 0, ((size_t)nr + 1) * sizeof(*cnt));
	for (size_t s = 0; s < p->nsteps; s++) {
		const struct trace_step *st = &p->steps[s];

		if (st->kind == TS_JOIN)
			continue;
		idx[off[st->rank] + cnt[st->rank]++] = (uint32_t)s;
		if (st->kind == TS_XFER)
			idx[off[st->peer] + cnt[st->peer]++] = (uint32_t)s;
	}
	for (int32_t k = 0; k < nr; k++) {
		size_t n = cnt[k];
		struct trace_rank_time *rt = &r->rank[k];

		for (size_t i = 0; i < n; i++) {
			uint32_t s = idx[off[k] + i];

			v[i] = (struct ival){ r->step[s].start, r->step[s].end,
					      p->steps[s].kind == TS_XFER };
		}
		sort_ivals(v, n);
		rt->compute_ps = union_len(v, n, 1);
		rt->comm_ps = union_len(v, n, 2);
		rt->overlap_ps = rt->compute_ps + rt->comm_ps - union_len(v, n, 3);
		for (size_t i = 0; i < n; i++)
			if (v[i].b > rt->end_ps)
				rt->end_ps = v[i].b;
	}
	rc = 0;
out:
	free(cnt);
	free(off);
	free(idx);
	free(v);
	return rc;
}

static int critical_path(const struct trace_program *p, struct trace_results *r)
{
	uint32_t last = UINT32_MAX;
	size_t n = 0;

	for (size_t s = 0; s < p->nsteps; s++)
		if (last == UINT32_MAX || r->step[s].end > r->step[last].end)
			last = (uint32_t)s;
	/* a join takes no time and moves nothing: the path goes through it
	 * to what it waited for, and does not list it */
	for (uint32_t s = last; s != UINT32_MAX; s = r->step[s].crit)
		n += p->steps[s].kind != TS_JOIN;
	r->crit_path = malloc((n ? n : 1) * sizeof(*r->crit_path));
	if (!r->crit_path)
		return -1;
	r->ncrit = n;
	for (uint32_t s = last; s != UINT32_MAX; s = r->step[s].crit) {
		if (p->steps[s].kind == TS_JOIN)
			continue;
		r->crit_path[--n] = s;
		sim_time_t dt = r->step[s].end - r->step[s].start;

		if (p->steps[s].kind == TS_COMPUTE)
			r->crit_compute_ps += dt;
		else
			r->crit_comm_ps += dt;
	}
	return 0;
}

int trace_results_flows(const struct trace_program *p, struct trace_results *r)
{
	const struct trace *t = p->trace;
	size_t nxfer = 0;

	if (r->flows_built)
		return 0;

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

int trace_replay(const struct trace_program *p, struct fab *f, struct trace_results *r,
		 struct sim_diag *d)
{
	struct replay rp = { .p = p, .t = p->trace, .f = f, .eng = fab_engine(f), .r = r };
	int rc = -1, c;

	memset(r, 0, sizeof(*r));
	r->step = sim_mem_calloc(p->nsteps ? p->nsteps : 1, sizeof(*r->step));
	r->op_start = calloc(p->trace->nops ? p->trace->nops : 1, sizeof(*r->op_start));
	r->op_end = calloc(p->trace->nops ? p->trace->nops : 1, sizeof(*r->op_end));
	r->rank = calloc((size_t)trace_nendpoints(p->trace), sizeof(*r->rank));
	if (!r->step || !r->op_start || !r->op_end || !r->rank) {
		sim_diag_set(d, NULL, 0, 0, "out of memory");
		goto out;
	}
	for (size_t s = 0; s < p->nsteps; s++)
		r->step[s].crit = UINT32_MAX;
	sim_heap_init(&rp.heap);
	sim_wake_init(&rp.wake);
	if (setup(&rp, d))
		goto out;
	c = sim_register(rp.eng, replay_handler, &rp, "replay");
	if (c < 0) {
		sim_diag_set(d, NULL, 0, 0, "out of memory");
		goto out;
	}
	rp.comp = (uint32_t)c;
	for (size_t s = 0; s < p->nsteps; s++)
		if (!rp.left[s])
			push(&rp, 0, (uint32_t)s, EV_START);
	if (p->nsteps && fab_run(f, d))
		goto out;
	if (rp.failed) {
		*d = rp.fail;
		goto out;
	}
	if (r->steps_done < p->nsteps) {
		size_t s;

		if (fab_time_limit_reached(f)) {
			/* not a stall: the run was told to stop, and a trace's
			 * results (op times, rank times, the critical path)
			 * need every step's end */
			sim_diag_set(d, NULL, 0, 0,
				     "the run reached sim.max_time_ns (%" PRIu64 " ns) with %zu of %zu steps done: a trace's report needs all of them (raise it, or 0 for no limit)",
				     fab_get_params(f)->max_time_ns, steps_shown(&rp), steps_total(p));
			goto out;
		}
		for (s = 0; s < p->nsteps && (r->step[s].end || p->steps[s].kind == TS_JOIN); s++)
			;
		sim_diag_set(d, NULL, 0, 0,
			     "the workload stalled at %.3f us: %zu of %zu steps done; step %zu (rank %d, op %u) never finished",
			     (double)fab_engine(f)->now / SIM_US, steps_shown(&rp), steps_total(p), s,
			     s < p->nsteps ? p->steps[s].rank : -1, s < p->nsteps ? p->steps[s].op : 0);
		goto out;
	}
	/* The run is over, and its counters and dependency lists (12 bytes a
	 * step and more) have no part in the results: freed now, they make
	 * room for rank_times' buckets (8 bytes a transfer), which set the
	 * peak of the 8,192-host ring otherwise (15.2 -> 16.2 GB). */
	free(rp.left);
	free(rp.dep_off);
	free(rp.dep);
	rp.left = NULL;
	rp.dep_off = rp.dep = NULL;
	for (size_t i = 0; i < p->trace->nops; i++) {
		uint32_t a = p->op_first[i], n = p->op_nsteps[i];

		for (uint32_t k = 0; k < n; k++) {
			const struct trace_step_time *tm = &r->step[a + k];

			if (!k || tm->start < r->op_start[i])
				r->op_start[i] = tm->start;
			if (tm->end > r->op_end[i])
				r->op_end[i] = tm->end;
		}
	}
	if (rank_times(p, r) || critical_path(p, r)) {
		sim_diag_set(d, NULL, 0, 0, "out of memory");
		goto out;
	}
	rc = 0;
out:
	sim_heap_free(&rp.heap);
	sim_wake_fini(&rp.wake);
	free(rp.left);
	free(rp.dep_off);
	free(rp.dep);
	free(rp.rank_free);
	free(rp.rank_last);
	for (size_t i = 0; i < rp.npairs_cap; i++) {
		if (rp.pairs[i].bl)
			free(rp.pairs[i].bl->q);
		free(rp.pairs[i].bl);
	}
	free(rp.pairs);
	for (int i = 0; rp.cq && i < fab_nodes(f); i++)
		hca_cq_set_notify(rp.cq[i], NULL, NULL);
	free(rp.mr);	/* the regions and CQs belong to the HCAs' life */
	free(rp.cq);
	/* rp lives on this stack: the engine must not call back into it, nor
	 * the CQs (which stay with the HCAs) */
	if (rp.comp)
		fab_engine(f)->comps[rp.comp].fn = replay_gone;
	return rc;
}

void trace_results_free(struct trace_results *r)
{
	free(r->step);
	free(r->op_start);
	free(r->op_end);
	free(r->rank);
	free(r->crit_path);
	fab_msgs_free(&r->flows);
	memset(r, 0, sizeof(*r));
}

double trace_op_algbw(const struct trace_program *p, const struct trace_results *r, uint32_t op)
{
	sim_time_t dt = r->op_end[op] - r->op_start[op];

	return dt ? (double)p->trace->ops[op].bytes / ((double)dt * 1e-12) : 0;
}
