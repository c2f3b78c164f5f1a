/* SPDX-License-Identifier: MIT */
/*
 * trace_program.c - lowering a trace into a program: the point-to-point
 * transfers and compute delays the replay runs, each with the steps it
 * waits for.
 *
 * Each op is lowered after the ops it waits for (a depth-first walk over
 * the trace's dependencies plus the edge from each recv to its send, as
 * trace_validate() checks them), so a step only ever waits for earlier
 * steps and the program is in an order that runs:
 *
 *   send     one TS_XFER rank -> peer. It does not wait for the recv: the
 *            transfer is a one-sided RDMA write (docs/trace-format.md).
 *   compute  one TS_COMPUTE on its rank.
 *   recv     no step of its own. Its range [op_first, op_first + 1) is the
 *            matching send's step (steps[op_first].op is the send's index),
 *            so the replay times the recv as the transfer it waits for. A
 *            recv is done when that transfer has landed *and* what the recv
 *            itself waited for (its rank's previous op, its after=) is done:
 *            ops that wait for the recv wait for both. Without the second
 *            half, an op listed after a recv would run as soon as the data
 *            landed, even if its rank were still busy with what came before
 *            the recv: a wrong trace would be silently too fast.
 *   collective  coll_lower_entries(): the algorithm's transfers.
 *
 * What an op waits for "on a rank". An op is done on some ranks (a send on
 * its two ranks, a compute or recv on its rank, a collective on each
 * member), each when some of its steps are done: its exits, a list of
 * (rank, step). An op X on rank y that waits for op D waits for D's exits
 * on y, or for all of D's exits when D does not run on y (an after= that
 * crosses ranks).
 *
 * A collective waits per member: member r starts when r's deps are done on
 * r - its previous op, its after= - not when every member's are. A dep
 * that runs on another member concerns that member only; one that runs on
 * no member concerns them all. That is the trace format's rule ("it waits,
 * on each member, for that member's previous op"; after=fwd means each
 * member's fwd) and NCCL's: a rank enters a collective when its stream
 * reaches it, with no barrier before. Likewise a collective is done on
 * member r when the last transfers r sends and receives in each chunk flow
 * have landed (its per-rank sinks), so the next op on r waits for r's part
 * only; a member that sends nothing (a broadcast leaf) adds its entry,
 * or the op after the broadcast on that leaf would not wait for the op
 * before it.
 *
 * No join steps are made: the replay runs compute steps one at a time per
 * rank, so a zero-length "join" compute would wait behind an unrelated
 * async compute. An op that waits for a collective lists the collective's
 * last steps on its rank instead (64 for a ring over 8 channels x 4
 * chunks: a last send and a last receive per flow).
 */
#include "traces/trace.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "sim/sim_graph.h"
#include "sim/sim_parse.h"
#include "traces/coll.h"
#include "traces/trace_fmt.h"

#define NONE UINT32_MAX

void trace_program_init(struct trace_program *p, const struct trace *t)
{
	memset(p, 0, sizeof(*p));
	p->trace = t;
}

void trace_program_free(struct trace_program *p)
{
	const struct trace *t = p->trace;
	uint64_t max_bytes = p->max_bytes;
	uint32_t replays = p->replays;
	bool lazy = p->lazy, keep = p->keep_times;

	for (size_t i = 0; i < p->nlz; i++)
		coll_lazy_free(p->lz[i].c);
	free(p->lz);
	free(p->steps);
	free(p->deps);
	free(p->op_first);
	free(p->op_nsteps);
	free(p->op_nchunks);
	/* empty again, for the same trace: a second free or a new lowering is safe */
	trace_program_init(p, t);
	p->max_bytes = max_bytes;
	p->replays = replays;
	p->lazy = lazy;
	p->keep_times = keep;
}

const struct trace_lazy *trace_program_lazy(const struct trace_program *p, uint32_t s)
{
	size_t lo = 0, hi = p->nlz;

	while (lo < hi) {	/* the last lazy op that starts at or before s */
		size_t mid = lo + (hi - lo) / 2;

		if (p->lz[mid].first <= s)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && s - p->lz[lo - 1].first < p->lz[lo - 1].n ? &p->lz[lo - 1] : NULL;
}

uint32_t trace_program_stored(const struct trace_program *p, uint32_t s)
{
	size_t lo = 0, hi = p->nlz;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->lz[mid].first <= s)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? s - p->lz[lo - 1].before - p->lz[lo - 1].n : s;
}

bool trace_program_far(const struct trace_lazy *z, uint32_t s)
{
	return coll_lazy_far(z->c, s - z->first);
}

/* Step s of lazy op z: trace_program_step without the search for its op. */
static const struct trace_step *trace_lazy_step(const struct trace_lazy *z, uint32_t s,
						struct trace_step *tmp, const uint32_t **deps,
						uint32_t *buf)
{
	coll_lazy_step(z->c, s - z->first, z->first, tmp, deps, buf);
	return tmp;
}

const struct trace_step *trace_program_step(const struct trace_program *p, uint32_t s,
					    struct trace_step *tmp, const uint32_t **deps,
					    uint32_t *buf)
{
	size_t lo = 0, hi = p->nlz;
	const struct trace_step *st;

	if (s >= p->nsteps)
		return NULL;
	while (lo < hi) {	/* as trace_program_lazy, keeping the storage offset */
		size_t mid = lo + (hi - lo) / 2;

		if (p->lz[mid].first <= s)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo) {
		const struct trace_lazy *z = &p->lz[lo - 1];

		if (s - z->first < z->n) {
			coll_lazy_step(z->c, s - z->first, z->first, tmp, deps, buf);
			return tmp;
		}
		s -= z->before + z->n;
	}
	st = &p->steps[s];
	/* a program whose stored steps wait for nothing has no list at all */
	*deps = p->deps ? p->deps + st->dep_off : NULL;
	return st;
}


const struct trace_step *trace_program_fan_step(const struct trace_program *p, uint32_t s,
						const struct trace_step *lead, uint32_t m,
						struct trace_step *tmp)
{
	if (!m)
		return lead;
	coll_fan_step(trace_program_lazy(p, s)->c, lead, m, tmp);
	return tmp;
}

void trace_walk_init(struct trace_walk *w, const struct trace_program *p, uint32_t from)
{
	w->p = p;
	w->lz = 0;
	while (w->lz < p->nlz && p->lz[w->lz].first + p->lz[w->lz].n <= from)
		w->lz++;
	w->fan_deps = NULL;
	w->fan_s = w->fan_end = from;
}

const struct trace_step *trace_walk_step(struct trace_walk *w, uint32_t s, const uint32_t **deps)
{
	const struct trace_program *p = w->p;
	const struct trace_step *st;

	if (s < w->fan_end) {	/* in lazy op lz, as its first step was */
		*deps = w->fan_deps;
		if (s == w->fan_s)
			return &w->fan;
		coll_fan_step(p->lz[w->lz].c, &w->fan, s - w->fan_s, &w->tmp);
		return &w->tmp;
	}
	while (w->lz < p->nlz && p->lz[w->lz].first + p->lz[w->lz].n <= s)
		w->lz++;
	if (w->lz < p->nlz && p->lz[w->lz].first <= s) {
		st = trace_lazy_step(&p->lz[w->lz], s, &w->tmp, deps, w->buf);
		if (st->fan > 1) {
			w->fan = *st;
			w->fan_deps = *deps;
			w->fan_s = s;
			w->fan_end = s + st->fan;
		}
		return st;
	}
	/* stored: after lz - 1, the last lazy op before it */
	st = &p->steps[w->lz ? s - p->lz[w->lz - 1].before - p->lz[w->lz - 1].n : s];
	*deps = p->deps ? p->deps + st->dep_off : NULL;
	return st;
}

/*
 * Ask for transparent huge pages on a big array. A 128-rank ring allreduce
 * with 8 channels x 4 chunks is a million steps, 58 MiB: in 4 KiB pages
 * that is 15000 page faults, which cost more than lowering itself (3.6 us
 * each measured here, 55 ms, against 40 ms of user time); in 2 MiB pages,
 * 30. Only a hint: where THP is off, nothing changes.
 */
static void huge_hint(void *arr, size_t bytes)
{
	const uintptr_t huge = 2u << 20;
	uintptr_t a = ((uintptr_t)arr + huge - 1) & ~(huge - 1);
	uintptr_t e = ((uintptr_t)arr + bytes) & ~(huge - 1);

	if (e > a)
		madvise((void *)a, e - a, MADV_HUGEPAGE);
}

int trace_program_reserve(struct trace_program *p, size_t steps, size_t deps)
{
	size_t scap = p->steps_cap, dcap = p->deps_cap;

	if (sim_grow((void **)&p->steps, &p->steps_cap, p->nstored + steps, sizeof(*p->steps)) ||
	    sim_grow((void **)&p->deps, &p->deps_cap, p->ndeps + deps, sizeof(*p->deps)))
		return -1;
	if (p->steps_cap != scap)
		huge_hint(p->steps, p->steps_cap * sizeof(*p->steps));
	if (p->deps_cap != dcap)
		huge_hint(p->deps, p->deps_cap * sizeof(*p->deps));
	return 0;
}

int trace_program_ops_alloc(struct trace_program *p)
{
	size_t n = p->trace && p->trace->nops ? p->trace->nops : 1;

	if (p->op_first && p->op_nsteps && p->op_nchunks)
		return 0;
	free(p->op_first);
	free(p->op_nsteps);
	free(p->op_nchunks);
	p->op_first = calloc(n, sizeof(*p->op_first));
	p->op_nsteps = calloc(n, sizeof(*p->op_nsteps));
	p->op_nchunks = calloc(n, sizeof(*p->op_nchunks));
	if (p->op_first && p->op_nsteps && p->op_nchunks)
		return 0;
	free(p->op_first);
	free(p->op_nsteps);
	free(p->op_nchunks);
	p->op_first = p->op_nsteps = p->op_nchunks = NULL;
	return -1;
}

int trace_program_add(struct trace_program *p, const struct trace_step *s,
		      const uint32_t *deps, uint32_t ndeps)
{
	return trace_program_append(p, s, deps, ndeps);
}

/* ---- lowering ---------------------------------------------------------------- */

struct exit_ent {
	int32_t rank;
	uint32_t step;
};
/* An exit of a collective for a rank that is not a member: the op is
 * done once these are (coll_exits). */
#define EXIT_ANY (-1)

struct exit_ends {
	int32_t rank, peer;
};

struct lower {
	const struct trace *t;
	struct trace_program *p;
	struct sim_diag *d;
	uint32_t *send_of;
	/* the exits of op i: ex[xoff[i] .. xoff[i] + xn[i]), by (rank, step) */
	struct exit_ent *ex;
	size_t nex, excap;
	size_t *xoff;
	uint32_t *xn;
	/* scratch: a dependency list, a collective's entry lists, sink marks */
	uint32_t *buf;
	size_t nbuf, bufcap;
	uint32_t *es, *eoff;
	size_t nes, escap, eoffcap;
	/* coll_exits' ring: each step's marks, and a lazy op's steps' ends */
	uint8_t *mark;
	size_t markcap;
	struct exit_ends *ends;
	size_t endscap;
	uint8_t *waited;	/* per op: some op waits for it */
	/* per op: the ops not yet lowered that wait for it (its exits are
	 * dropped at 0), and the exits so dropped but still in ex */
	uint32_t *nwait;
	size_t ndead;
	int32_t *midx;		/* rank -> member index of the collective at hand, -1 */
	uint8_t *touch, *sends;	/* per dep: runs on a member; per member: sends */
	size_t touchcap, sendscap;
	/* per lazy collective waited for: per member, the transfers that
	 * involve it, or UINT32_MAX for a member that sends none (its exits
	 * are then its entries too); NULL for any other op */
	uint32_t **xcnt;
	/* scratch, per member of the collective at hand: the lazy collective
	 * whose every exit on it is its entry (UINT32_MAX none), and the
	 * transfers of that one that involve it (coll_lower_entries) */
	uint32_t *wop, *wcnt;
	size_t wopcap, wcntcap;
};

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static int cmp_exit(const void *a, const void *b)
{
	const struct exit_ent *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return (x->step > y->step) - (x->step < y->step);
}

static int buf_push(struct lower *L, uint32_t s)
{
	if (sim_grow((void **)&L->buf, &L->bufcap, L->nbuf + 1, sizeof(*L->buf)))
		return -1;
	L->buf[L->nbuf++] = s;
	return 0;
}

/* Sort buf[from..] and drop repeats. */
static void buf_unique(struct lower *L, size_t from)
{
	size_t n = from;

	if (L->nbuf - from < 2)
		return;		/* nothing to sort (and buf may not exist yet) */
	size_t k = from + 1;

	while (k < L->nbuf && L->buf[k - 1] < L->buf[k])
		k++;
	if (k == L->nbuf)
		return;		/* one op's exits on a rank: in order already */
	qsort(L->buf + from, L->nbuf - from, sizeof(*L->buf), cmp_u32);
	for (size_t i = from; i < L->nbuf; i++)
		if (n == from || L->buf[n - 1] != L->buf[i])
			L->buf[n++] = L->buf[i];
	L->nbuf = n;
}

/* Append to buf what rank y waits for when it waits for op dd: dd's exits
 * on y; if dd does not run on y, the steps that end it (a collective's
 * EXIT_ANY list) or, for an op without one, all its exits - unless
 * `others` (dd runs on another member of y's collective, and concerns
 * that member only). */
static int gather(struct lower *L, int32_t y, uint32_t dd, bool others)
{
	const struct exit_ent *e;
	uint32_t n = L->xn[dd], lo = 0, hi = n;

	if (!n)		/* dd has no exits (one rank, no steps): L->ex may be NULL */
		return 0;
	e = L->ex + L->xoff[dd];
	while (lo < hi) {		/* first exit with rank >= y */
		uint32_t mid = lo + (hi - lo) / 2;

		if (e[mid].rank < y)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (hi = lo; hi < n && e[hi].rank == y; hi++)
		;
	if (lo == hi) {
		if (others)
			return 0;
		/* EXIT_ANY sorts first */
		for (hi = 0; hi < n && e[hi].rank == EXIT_ANY; hi++)
			;
		lo = 0;
		if (!hi)
			hi = n;
	}
	for (uint32_t k = lo; k < hi; k++)
		if (buf_push(L, e[k].step))
			return -1;
	return 0;
}

/* Everything op i waits for, as it concerns rank y, into buf (sorted,
 * unique). touch[k] (collectives): dep k runs on some member. */
static int gather_deps(struct lower *L, uint32_t i, int32_t y, const uint8_t *touch)
{
	const struct trace_op *o = &L->t->ops[i];
	size_t from = L->nbuf;

	for (uint32_t k = 0; k < o->ndeps; k++)
		if (gather(L, y, L->t->deps[o->dep_off + k], touch && touch[k]))
			return -1;
	buf_unique(L, from);
	return 0;
}

static int exit_push(struct lower *L, int32_t rank, uint32_t step)
{
	if (sim_grow((void **)&L->ex, &L->excap, L->nex + 1, sizeof(*L->ex)))
		return -1;
	L->ex[L->nex++] = (struct exit_ent){ rank, step };
	return 0;
}

/*
 * Sort n exits by (rank, step). A big collective's exits come by step,
 * ranks interleaved (coll_exits): counted into their ranks' buckets, in
 * order, and each bucket is sorted already but for a member's entries
 * added at the end. qsort was a third of lowering nccl-tests' 20
 * iterations of 31 sizes (27k exits a member at 1 GiB on 16 GPUs). Where
 * the ranks are sparse, or memory short, qsort.
 */
static void exit_sort(struct exit_ent *e, size_t n)
{
	int32_t lo = e[0].rank, hi = e[0].rank;
	size_t nb, *at = NULL;
	struct exit_ent *v = NULL;

	for (size_t k = 1; k < n; k++) {
		lo = e[k].rank < lo ? e[k].rank : lo;
		hi = e[k].rank > hi ? e[k].rank : hi;
	}
	nb = (size_t)((int64_t)hi - lo) + 1;
	if (n < 64 || nb > n || !(at = calloc(nb + 1, sizeof(*at))) ||
	    !(v = malloc(n * sizeof(*v)))) {
		free(at);
		qsort(e, n, sizeof(*e), cmp_exit);
		return;
	}
	for (size_t k = 0; k < n; k++)
		at[e[k].rank - lo + 1]++;
	for (size_t b = 0; b < nb; b++)
		at[b + 1] += at[b];
	for (size_t k = 0; k < n; k++)
		v[at[e[k].rank - lo]++] = e[k];
	/* at[b] is now where bucket b ends */
	for (size_t b = 0, from = 0; b < nb; from = at[b++])
		for (size_t k = from + 1; k < at[b]; k++)
			if (v[k - 1].step > v[k].step) {
				qsort(v + from, at[b] - from, sizeof(*v), cmp_exit);
				break;
			}
	memcpy(e, v, n * sizeof(*e));
	free(v);
	free(at);
}

/* Close op i's exit list (begun at L->xoff[i]): sorted, unique. */
static void exit_close(struct lower *L, uint32_t i)
{
	size_t n = L->nex - L->xoff[i], m = 0;
	struct exit_ent *e;

	if (!n) {	/* L->ex may still be NULL: no offset from it */
		L->xn[i] = 0;
		return;
	}
	e = L->ex + L->xoff[i];
	if (n > 1)
		exit_sort(e, n);
	for (size_t k = 0; k < n; k++)
		if (!m || e[m - 1].rank != e[k].rank || e[m - 1].step != e[k].step)
			e[m++] = e[k];
	L->nex = L->xoff[i] + m;
	L->xn[i] = (uint32_t)m;
}

static int oom(struct lower *L)
{
	return sim_diag_set(L->d, NULL, 0, 0, "out of memory lowering the trace (%zu steps)",
			    L->p->nsteps);
}

static int lower_p2p(struct lower *L, uint32_t i)
{
	const struct trace_op *o = &L->t->ops[i];
	struct trace_program *p = L->p;
	struct trace_step s = { .op = i, .rank = o->rank, .peer = o->peer };
	int ix;

	L->nbuf = 0;
	if (gather_deps(L, i, o->rank, NULL))
		return oom(L);
	if (o->kind == TRACE_SEND) {
		s.kind = TS_XFER;
		s.bytes = o->bytes;
		s.acked = o->acked;
	} else {
		s.kind = TS_COMPUTE;
		s.peer = -1;
		s.duration = o->duration;
	}
	ix = trace_program_add(p, &s, L->buf, (uint32_t)L->nbuf);
	if (ix < 0)
		return oom(L);
	p->op_first[i] = (uint32_t)ix;
	p->op_nsteps[i] = 1;
	if (exit_push(L, o->rank, (uint32_t)ix) ||
	    (o->kind == TRACE_SEND && exit_push(L, o->peer, (uint32_t)ix)))
		return oom(L);
	return 0;
}

static int lower_recv(struct lower *L, uint32_t i)
{
	const struct trace_op *o = &L->t->ops[i];
	uint32_t send = L->send_of[i], step;

	if (send == NONE || L->t->ops[send].kind != TRACE_SEND || L->p->op_nsteps[send] != 1)
		return sim_diag_set(L->d, o->file, o->line, 0,
				    "recv on rank %" PRId32 " from rank %" PRId32 " has no matching send",
				    o->rank, o->peer);
	step = L->p->op_first[send];
	L->p->op_first[i] = step;	/* borrowed: the send's step (see above) */
	L->p->op_nsteps[i] = 1;
	L->nbuf = 0;
	if (gather_deps(L, i, o->rank, NULL) || buf_push(L, step))
		return oom(L);
	for (size_t k = 0; k < L->nbuf; k++)
		if (exit_push(L, o->rank, L->buf[k]))
			return oom(L);
	return 0;
}

/*
 * A collective's exits: for each member, the steps of the collective that
 * involve it (as sender or receiver) and that no later step involving it
 * waits for. Once they are done, so is every step of the collective on
 * that member, and - since every step a member sends waits for its entry
 * - whatever the member did before. A member that sends nothing (a leaf of
 * a broadcast, the root of a reduce, the only member) adds its entry.
 * For a rank outside the op (an `after=` to another communicator's
 * collective), its EXIT_ANY exits: the steps no other step of the op waits
 * for, and the entries of members that send nothing. Every step of the op
 * comes before one of those steps, so when they are done the op is; the
 * members' exits together were nearly every step of a 32-rank tree (1,952
 * of 1,984), which an optimizer step waiting for eight such allreduces
 * a layer held as dependencies, 55,088 a rank.
 */

/* Marks of a step whose exits are not settled yet, from the later steps
 * that wait for it: one involving its sender, its receiver, any; and
 * whether it is a transfer. */
#define EXIT_M_SENDER 1u
#define EXIT_M_RECEIVER 2u
#define EXIT_M_ANY 4u
#define EXIT_M_XFER 8u

/* The ends of step s: of a lazy op, kept in the ring as it was made; of a
 * stored one, read from the program (no gen, and a byte a step of ring
 * rather than nine for a stored op, whose ring is the whole op). */
static struct exit_ends exit_ends_of(const struct lower *L, bool lazy, uint64_t w, uint32_t a,
				     uint32_t s)
{
	const struct trace_step *st;

	if (lazy)
		return L->ends[(s - a) % w];
	st = &L->p->steps[trace_program_stored(L->p, s)];
	return (struct exit_ends){ st->rank, st->peer };
}

/* Step s's marks m are final (every step that may wait for it is seen):
 * push its exits. */
static int exit_settle(struct lower *L, uint8_t m, struct exit_ends e, uint32_t s)
{
	if (!(m & EXIT_M_XFER))
		return 0;
	if (e.rank < L->t->nranks && !(m & EXIT_M_SENDER) && exit_push(L, e.rank, s))
		return -1;
	if (e.peer < L->t->nranks && !(m & EXIT_M_RECEIVER) && exit_push(L, e.peer, s))
		return -1;
	if (!(m & EXIT_M_ANY) && exit_push(L, EXIT_ANY, s))
		return -1;
	return 0;
}

/*
 * One pass, first step first, each step made once: a step's marks come
 * from the later steps that wait for it, which a lazy op places at most
 * its reach later, so a ring of reach + 1 slots holds every step still
 * unsettled, and a slot is settled as the step reach + 1 later takes it.
 * A fan's steps are its first's with another member at one end
 * (trace_walk: 7 in 10 of NVLSTree's are not generated). A million-step
 * ring is read once.
 */
static int coll_exits(struct lower *L, uint32_t i)
{
	const struct trace_program *p = L->p;
	const struct trace_comm *cm = &L->t->comms[L->t->ops[i].comm];
	uint32_t a = p->op_first[i], b = a + p->op_nsteps[i];
	const struct trace_lazy *z = trace_program_lazy(p, a);
	const bool lazy = z != NULL;
	uint64_t w = z && z->reach < b - a ? z->reach + 1 : b - a;
	struct trace_walk tw;
	uint32_t *cnt = NULL;	/* a lazy op's: its transfers on each member (L->xcnt) */

	if (sim_grow((void **)&L->sends, &L->sendscap, cm->n, 1) ||
	    sim_grow((void **)&L->mark, &L->markcap, w + 1, 1) ||
	    (lazy && sim_grow((void **)&L->ends, &L->endscap, w + 1, sizeof(*L->ends))))
		return -1;
	if (z && !(cnt = L->xcnt[i] = calloc(cm->n ? cm->n : 1, sizeof(*cnt))))
		return -1;
	memset(L->sends, 0, cm->n);
	trace_walk_init(&tw, p, a);
	for (uint32_t s = a; s < b; s++) {
		const uint32_t *deps;
		const struct trace_step *st = trace_walk_step(&tw, s, &deps);
		const uint64_t j = (s - a) % w;

		if (s - a >= w && exit_settle(L, L->mark[j], exit_ends_of(L, lazy, w, a, s - (uint32_t)w),
					      s - (uint32_t)w))
			return -1;
		L->mark[j] = st->kind == TS_XFER ? EXIT_M_XFER : 0;
		if (lazy)
			L->ends[j] = (struct exit_ends){ st->rank, st->peer };
		if (st->kind != TS_XFER)
			continue;
		/* ranks only: an aggregation node (collnet) runs no later op */
		if (st->rank < L->t->nranks)
			L->sends[L->midx[st->rank]] = 1;
		if (cnt) {
			if (st->rank < L->t->nranks)
				cnt[L->midx[st->rank]]++;
			if (st->peer < L->t->nranks && st->peer != st->rank)
				cnt[L->midx[st->peer]]++;
		}
		for (uint32_t k = 0; k < st->ndeps; k++) {
			uint32_t dd = deps[k];
			struct exit_ends de;
			uint8_t *m;

			if (dd < a)
				continue;
			de = exit_ends_of(L, lazy, w, a, dd);
			m = &L->mark[(dd - a) % w];
			*m |= EXIT_M_ANY;
			if (de.rank == st->rank || de.rank == st->peer)
				*m |= EXIT_M_SENDER;
			if (de.peer == st->rank || de.peer == st->peer)
				*m |= EXIT_M_RECEIVER;
		}
	}
	for (uint32_t s = b - a > w ? b - (uint32_t)w : a; s < b; s++)
		if (exit_settle(L, L->mark[(s - a) % w], exit_ends_of(L, lazy, w, a, s), s))
			return -1;
	for (uint32_t m = 0; m < cm->n; m++) {
		if (cnt && !L->sends[m])
			cnt[m] = UINT32_MAX;
		for (uint32_t k = L->eoff[m]; k < L->eoff[m + 1] && !L->sends[m]; k++)
			if (exit_push(L, cm->ranks[m], L->es[k]) || exit_push(L, EXIT_ANY, L->es[k]))
				return -1;
	}
	return 0;
}

static int lower_coll(struct lower *L, uint32_t i)
{
	const struct trace_op *o = &L->t->ops[i];
	const struct trace_comm *cm;
	int rc;

	if (o->comm >= L->t->ncomms)
		return sim_diag_set(L->d, o->file, o->line, 0,
				    "communicator %" PRIu32 " does not exist", o->comm);
	cm = &L->t->comms[o->comm];
	for (uint32_t m = 0; m < cm->n; m++)
		if (cm->ranks[m] < 0 || cm->ranks[m] >= L->t->nranks)
			return sim_diag_set(L->d, o->file, o->line, 0,
					    "communicator member %" PRId32 " out of range", cm->ranks[m]);
	/* each member's entry: the collective's deps as they concern it */
	if (sim_grow((void **)&L->eoff, &L->eoffcap, (size_t)cm->n + 1, sizeof(*L->eoff)) ||
	    sim_grow((void **)&L->touch, &L->touchcap, (size_t)o->ndeps + 1, 1))
		return oom(L);
	for (uint32_t m = 0; m < cm->n; m++)
		L->midx[cm->ranks[m]] = (int32_t)m;
	for (uint32_t k = 0; k < o->ndeps; k++) {
		uint32_t dd = L->t->deps[o->dep_off + k];

		L->touch[k] = 0;
		for (uint32_t x = 0; x < L->xn[dd] && !L->touch[k]; x++)
			L->touch[k] = L->ex[L->xoff[dd] + x].rank != EXIT_ANY &&
				      L->midx[L->ex[L->xoff[dd] + x].rank] >= 0;
	}
	L->nes = 0;
	for (uint32_t m = 0; m < cm->n; m++) {
		L->nbuf = 0;
		if (gather_deps(L, i, cm->ranks[m], L->touch))
			return oom(L);
		L->eoff[m] = (uint32_t)L->nes;
		if (sim_grow((void **)&L->es, &L->escap, L->nes + L->nbuf, sizeof(*L->es)))
			return oom(L);
		if (L->nbuf)
			memcpy(L->es + L->nes, L->buf, L->nbuf * sizeof(*L->buf));
		L->nes += L->nbuf;
	}
	L->eoff[cm->n] = (uint32_t)L->nes;
	/* a member that waits for one earlier lazy collective of its
	 * communicator, in which it sends: its entries are every exit of that
	 * one on it, which a join may count rather than list */
	if (sim_grow((void **)&L->wop, &L->wopcap, cm->n, sizeof(*L->wop)) ||
	    sim_grow((void **)&L->wcnt, &L->wcntcap, cm->n, sizeof(*L->wcnt)))
		return oom(L);
	for (uint32_t m = 0; m < cm->n; m++) {
		uint32_t dd = o->ndeps == 1 ? L->t->deps[o->dep_off] : UINT32_MAX;
		bool whole = dd < L->t->nops && L->xcnt[dd] && L->t->ops[dd].kind == TRACE_COLL &&
			     L->t->ops[dd].comm == o->comm && L->xcnt[dd][m] != UINT32_MAX &&
			     L->xcnt[dd][m] > 0 && L->eoff[m + 1] > L->eoff[m];

		L->wop[m] = whole ? dd : UINT32_MAX;
		L->wcnt[m] = whole ? L->xcnt[dd][m] : 0;
	}
	L->p->op_first[i] = (uint32_t)L->p->nsteps;	/* if it emits nothing */
	rc = coll_lower_entries(L->t, i, L->p, L->eoff, L->es,
				&(struct coll_whole){ L->wop, L->wcnt }, L->d);
	/* exits cost a pass over the steps: only for a collective waited for */
	if (!rc && L->waited[i] && coll_exits(L, i))
		rc = oom(L);
	for (uint32_t m = 0; m < cm->n; m++)
		L->midx[cm->ranks[m]] = -1;
	return rc;
}

static int lower_op(struct lower *L, uint32_t i)
{
	const struct trace_op *o = &L->t->ops[i];
	int rc;

	L->xoff[i] = L->nex;
	switch (o->kind) {
	case TRACE_SEND:
	case TRACE_COMPUTE:
		if (o->rank < 0 || o->rank >= L->t->nranks ||
		    (o->kind == TRACE_SEND && (o->peer < 0 || o->peer >= L->t->nranks ||
					       o->peer == o->rank)))
			return sim_diag_set(L->d, o->file, o->line, 0,
					    "rank %" PRId32 " or peer %" PRId32 " out of range (run trace_validate first)",
					    o->rank, o->peer);
		rc = lower_p2p(L, i);
		break;
	case TRACE_RECV:
		rc = lower_recv(L, i);
		break;
	case TRACE_COLL:
		rc = lower_coll(L, i);
		break;
	default:
		return sim_diag_set(L->d, o->file, o->line, 0, "unknown op kind %d", (int)o->kind);
	}
	if (!rc)
		exit_close(L, i);
	return rc;
}

static int cycle_err(void *ctx, const uint32_t *cyc, size_t n)
{
	struct lower *L = ctx;
	char msg[512], lab[64];
	size_t off = 0;
	const struct trace_op *o = &L->t->ops[cyc[0]];

	sim_append(msg, sizeof(msg), &off, "dependency cycle: ");
	for (size_t k = 0; k < n && k < 8; k++)
		sim_append(msg, sizeof(msg), &off, "%s -> ",
			   trace_op_label(L->t, cyc[k], lab, sizeof(lab)));
	sim_append(msg, sizeof(msg), &off, "%s",
		   trace_op_label(L->t, cyc[0], lab, sizeof(lab)));
	return sim_diag_set(L->d, o->file, o->line, 0, "%s", msg);
}

/* An op's edges for the walk: its deps, then a recv's matched send. */
static int walk_next(void *ctx, uint32_t u, uint32_t k, uint32_t *v)
{
	struct lower *L = ctx;
	const struct trace_op *o = &L->t->ops[u];

	if (!trace_op_next(L->t, L->send_of, u, k, v))
		return 0;
	if (*v >= L->t->nops)
		return sim_diag_set(L->d, o->file, o->line, 0,
				    "dependency on op %" PRIu32 ", which does not exist", *v);
	return 1;
}

/*
 * Exits no op still to be lowered waits for are dropped: ex keeps what is
 * live, compacted once more than half of it and 1M entries are not (a
 * 1 GiB NVLSTree allreduce on 16 GPUs has 27k exits a member, and
 * nccl-tests' 20 iterations kept 67 MB of them to the end). 0 or -1.
 */
#define EXITS_COMPACT_MIN (1u << 20)

static void exits_drop(struct lower *L, uint32_t i)
{
	L->ndead += L->xn[i];
	L->xn[i] = 0;
	free(L->xcnt[i]);	/* its counts too: no join left to count them */
	L->xcnt[i] = NULL;
}

static int exits_compact(struct lower *L)
{
	struct exit_ent *v;
	size_t n = 0;

	if (L->ndead < EXITS_COMPACT_MIN || 2 * L->ndead < L->nex)
		return 0;
	v = malloc((L->nex - L->ndead ? L->nex - L->ndead : 1) * sizeof(*v));
	if (!v)
		return -1;
	for (size_t i = 0; i < L->t->nops; i++) {
		if (!L->xn[i])
			continue;
		memcpy(v + n, L->ex + L->xoff[i], L->xn[i] * sizeof(*v));
		L->xoff[i] = n;
		n += L->xn[i];
	}
	free(L->ex);
	L->ex = v;
	L->excap = n ? n : 1;
	L->nex = n;
	L->ndead = 0;
	return 0;
}

static int walk_post(void *ctx, uint32_t u)
{
	struct lower *L = ctx;
	const struct trace_op *o = &L->t->ops[u];
	int rc = lower_op(L, u);

	if (rc)
		return rc;
	for (uint32_t k = 0; k < o->ndeps; k++) {
		uint32_t dd = L->t->deps[o->dep_off + k];

		if (dd < L->t->nops && !--L->nwait[dd])
			exits_drop(L, dd);
	}
	if (!L->nwait[u])
		exits_drop(L, u);
	return exits_compact(L) ? oom(L) : 0;
}

/*
 * Each op is lowered when everything it waits for is (sim_dfs's
 * post-order), so the walk from op 0, 1, ... keeps the trace's order
 * wherever the trace allows it.
 */
static int walk(struct lower *L)
{
	int rc = sim_dfs((uint32_t)L->t->nops, walk_next, walk_post, cycle_err, L);

	return rc == SIM_DFS_ENOMEM ? oom(L) : rc;
}

void trace_lower_estimate(const struct trace *t, bool lazy, uint64_t *steps, uint64_t *bytes,
			  uint32_t *big, uint64_t *big_steps)
{
	uint64_t n = 0, most = 0;

	*big = UINT32_MAX;
	for (size_t i = 0; i < t->nops; i++) {
		const struct trace_op *o = &t->ops[i];
		uint64_t k = 0;

		if (o->kind == TRACE_SEND || o->kind == TRACE_COMPUTE) {
			k = 1;
		} else if (o->kind == TRACE_COLL) {
			struct coll_ctx c;
			struct sim_diag d;

			/* coll_ctx_init refuses what lowering would: count it 0 */
			if (!coll_ctx_init(&c, t, (uint32_t)i, NULL, &d)) {
				k = c.algo->nsteps(&c);
				/* the replay holds a few reaches of it at once */
				const uint64_t nr = c.algo->lazy_reaches ? c.algo->lazy_reaches :
								  TRACE_LAZY_REACHES;

				if (lazy && coll_gen_ok(&c) && c.algo->reach(&c) < k / nr)
					k = nr * c.algo->reach(&c);
			}
			coll_ctx_fini(&c);
		}
		if (k > most) {
			most = k;
			*big = (uint32_t)i;
		}
		n = n + k < n ? UINT64_MAX : n + k;
	}
	*steps = n;
	*big_steps = most;
	*bytes = n > UINT64_MAX / TRACE_STEP_BYTES ? UINT64_MAX : n * TRACE_STEP_BYTES;
}

/* A cgroup v2 limit on this process's memory, or UINT64_MAX ("max", none). */
static uint64_t cgroup_limit(void)
{
	char path[512], line[512];
	unsigned long long v;
	uint64_t lim = UINT64_MAX;
	FILE *f = fopen("/proc/self/cgroup", "r");

	/* "0::/some/group": the unified hierarchy's line */
	if (!f)
		return lim;
	while (fgets(line, sizeof(line), f)) {
		size_t n = strcspn(line, "\n");

		line[n] = 0;
		if (strncmp(line, "0::", 3) ||
		    snprintf(path, sizeof(path), "/sys/fs/cgroup%s/memory.max",
			     strcmp(line + 3, "/") ? line + 3 : "") >= (int)sizeof(path))
			continue;
		FILE *m = fopen(path, "r");

		if (m && fscanf(m, "%llu", &v) == 1 && v < lim)
			lim = v;
		if (m)
			fclose(m);
	}
	fclose(f);
	return lim;
}

uint64_t trace_mem_budget_default(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	uint64_t lim = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : UINT64_MAX;
	static const int res[] = { RLIMIT_AS, RLIMIT_DATA };
	struct rlimit rl;
	uint64_t cg = cgroup_limit();

	for (size_t i = 0; i < SIM_ARRAY_SIZE(res); i++)
		if (!getrlimit(res[i], &rl) && rl.rlim_cur != RLIM_INFINITY &&
		    (uint64_t)rl.rlim_cur < lim)
			lim = (uint64_t)rl.rlim_cur;
	if (cg < lim)
		lim = cg;
	return lim / 2;
}

/*
 * The budget check, before anything is made: a 4 MB trace of 200,000
 * small allreduces lowers to 96M steps (11 GB), and making them first
 * would find that out only when the machine runs short.
 */
static int check_budget(const struct trace *t, const struct trace_program *p,
			struct sim_diag *d)
{
	uint64_t steps, bytes, k, budget = p->max_bytes ? p->max_bytes : trace_mem_budget_default();
	uint32_t big;
	char lab[64], what[160] = "", hb[32], hl[32];
	const char *file = t->nfiles ? t->files[0] : NULL;

	uint64_t all = 0, ab, ak;
	uint32_t abig;
	char held[160] = "";

	const uint32_t nrep = p->replays > 1 ? p->replays : 1;
	char reps[96] = "";

	trace_lower_estimate(t, p->lazy, &steps, &bytes, &big, &k);
	if (bytes <= budget / nrep)
		return 0;
	if (p->lazy) {
		trace_lower_estimate(t, false, &all, &ab, &abig, &ak);
		if (all != steps)
			snprintf(held, sizeof(held),
				 " held at once (of %" PRIu64 " in all: a collective made as the replay reaches it counts the reaches of it the replay holds)",
				 all);
	}
	if (nrep > 1)
		snprintf(reps, sizeof(reps), " by each of %" PRIu32 " replays on this machine",
			 nrep);
	if (big != UINT32_MAX) {
		const struct trace_op *o = &t->ops[big];

		snprintf(what, sizeof(what), "; the largest, %s at %s:%d, makes %" PRIu64,
			 o->name[0] ? trace_op_label(t, big, lab, sizeof(lab)) :
			 o->kind == TRACE_COLL ? trace_coll_names[o->coll] :
			 o->kind == TRACE_SEND ? "send" : "compute",
			 o->file ? o->file : "?", o->line, k);
	}
	return sim_diag_set(d, file, 0, 0,
			    "the trace lowers to %" PRIu64 " steps (%zu ops%s)%s%s, about %s at %u bytes a step: more than sim.max_memory, %s%s; raise it (--set sim.max_memory=SIZE), or use fewer ops, ranks, chunks or channels",
			    steps, t->nops, what,
			    held, reps,
			    sim_fmt_mem(bytes > UINT64_MAX / nrep ? UINT64_MAX : bytes * nrep, hb, sizeof(hb)),
			    TRACE_STEP_BYTES,
			    sim_fmt_mem(budget, hl, sizeof(hl)),
			    p->max_bytes ? "" : " (half of the memory this process may use)");
}

int trace_lower(const struct trace *t, struct trace_program *p, struct sim_diag *d)
{
	struct lower L = { .t = t, .p = p, .d = d };
	int rc = -1;

	if (!p->trace)
		p->trace = t;
	if (p->trace != t)
		return sim_diag_set(d, NULL, 0, 0, "the program was made for another trace");
	if (p->nsteps)
		return sim_diag_set(d, NULL, 0, 0, "the program is already lowered");
	if (trace_program_ops_alloc(p))
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	L.send_of = malloc((t->nops ? t->nops : 1) * sizeof(*L.send_of));
	L.xoff = calloc(t->nops ? t->nops : 1, sizeof(*L.xoff));
	L.xn = calloc(t->nops ? t->nops : 1, sizeof(*L.xn));
	L.midx = malloc((t->nranks > 0 ? (size_t)t->nranks : 1) * sizeof(*L.midx));
	L.waited = calloc(t->nops ? t->nops : 1, 1);
	L.xcnt = calloc(t->nops ? t->nops : 1, sizeof(*L.xcnt));
	L.nwait = calloc(t->nops ? t->nops : 1, sizeof(*L.nwait));
	if (!L.send_of || !L.xoff || !L.xn || !L.midx || !L.waited || !L.xcnt || !L.nwait) {
		oom(&L);
		goto out;
	}
	for (int32_t r = 0; r < t->nranks; r++)
		L.midx[r] = -1;
	for (size_t k = 0; k < t->ndeps; k++)
		if (t->deps[k] < t->nops) {
			L.waited[t->deps[k]] = 1;
			L.nwait[t->deps[k]]++;
		}
	if (trace_match_recvs(t, L.send_of, d) || check_budget(t, p, d))
		goto out;
	rc = walk(&L);
out:
	if (rc) {
		/* nothing half-lowered: an empty program again */
		trace_program_free(p);
	}
	free(L.send_of);
	free(L.xoff);
	free(L.xn);
	free(L.ex);
	free(L.buf);
	free(L.es);
	free(L.eoff);
	free(L.mark);
	free(L.ends);
	free(L.midx);
	free(L.waited);
	free(L.nwait);
	free(L.touch);
	free(L.sends);
	for (size_t k = 0; L.xcnt && k < t->nops; k++)
		free(L.xcnt[k]);
	free(L.xcnt);
	free(L.wop);
	free(L.wcnt);
	return rc;
}
