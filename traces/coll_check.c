/* SPDX-License-Identifier: MIT */
/*
 * coll_check.c - the reduction check: proof, run by machine, that a
 * lowered collective does what the collective promises, whatever the
 * algorithm and the member count.
 *
 * The steps of the op are run symbolically, in program order (a valid
 * order: a step comes after every step it waits for). For every (member,
 * chunk) the check keeps the set of contributions that member's copy of
 * the chunk holds, as a bitset over the members:
 *
 *   TD_REDUCE  the receiver adds the sender's set to its own. A
 *              contribution already there would be counted twice: refused
 *              on the spot, naming the step.
 *   TD_COPY    the receiver's copy becomes the sender's. A copy that
 *              changes nothing is a redundant transfer: refused - but
 *              once for an NVSwitch's copy back to the GPU whose store
 *              it holds (NVLS: a multimem store writes every GPU, the
 *              writer too, and the bytes cross the writer's port).
 *   TD_NONE    (barrier) the message carries what its sender knows when
 *              it leaves: its own arrival and what the messages it waited
 *              for carried. The receiver must learn something from it.
 *
 * A sender must hold the chunk it sends. At the end the collective's
 * promise is checked for every member and chunk: allreduce, everyone has
 * every contribution exactly once; reducescatter, member j its block j;
 * reduce, the root; allgather, everyone has every member's block;
 * alltoall, member r the block every s addressed to r; broadcast, everyone
 * the root's data; barrier, everyone knows that everyone arrived.
 *
 * Program order is one order the replay might run the steps in; it proves
 * the result for all of them only if data never outruns its dependencies.
 * So the check also verifies that every step that sends chunk c from
 * member a waits - directly or through other steps - for each step that
 * wrote a's copy of c since it was last overwritten (the dependency that
 * gives the replay its timing), and that a reduction into a copy is ordered
 * after the copy it adds to. Concurrent reductions into one copy commute
 * and are allowed. Not checked: that a copy lands after the reductions it
 * overwrites (it would need reachability between distant steps; every
 * algorithm here orders them through the data they carry).
 *
 * Structure: every step belongs to the op, waits only for earlier steps,
 * moves data between two different members, carries the bytes of its
 * chunks in the buffer model (coll.h), and every member takes part.
 */
#include "traces/coll.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_parse.h"

#define NONE UINT32_MAX

/* A write into a (member, chunk) copy not yet known to be ordered before
 * everything after it: a linked list per copy, nodes from a pool. */
struct wnode {
	uint32_t step, next;
};

struct chk {
	const struct trace_program *p;
	struct coll_ctx c;
	const struct trace_op *o;
	uint32_t N, E, K, W, a, b;	/* E: endpoints (the members, then the algorithm's own) */
	uint64_t *set;		/* E x K x W words */
	uint64_t *tmp;		/* W words */
	int32_t *midx;		/* rank -> member index, -1 */
	uint8_t *seen;		/* member took part */
	uint32_t *head;		/* N x K: pending writes */
	struct wnode *pool;
	size_t npool, poolcap;
	uint32_t freel;
	/* ancestors of the current step (computed when a dependency is not direct) */
	uint32_t *stamp, *stack;
	uint32_t anc_of;	/* the step stamp[] describes, NONE */
	uint64_t *carried;	/* barrier: per step, the arrivals its message tells */
	uint8_t *echoed;	/* per endpoint and chunk: an NVSwitch's echo is done */
};

static uint64_t *cset(struct chk *k, uint32_t m, uint32_t c)
{
	return k->set + ((size_t)m * k->K + c) * k->W;
}

static int err(struct chk *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int err(struct chk *k, const char *fmt, ...)
{
	char msg[sizeof(k->c.d->msg)], lab[64];
	size_t off = 0;
	va_list ap;

	if (k->o->name[0])
		snprintf(lab, sizeof(lab), "'%s'", k->o->name);
	else
		snprintf(lab, sizeof(lab), "op %" PRIu32, k->c.op_index);
	sim_append(msg, sizeof(msg), &off, "%s %s %s over %" PRIu32 " ranks: ",
		   trace_coll_names[k->o->coll], lab, k->c.algo->name, k->N);
	va_start(ap, fmt);
	vsnprintf(msg + off, sizeof(msg) - off, fmt, ap);
	va_end(ap);
	return sim_diag_set(k->c.d, k->o->file, k->o->line, 0, "%s", msg);
}

/* "ranks 2, 5 and 7" (global numbers) for the members in bits, at most 6. */
static const char *who(struct chk *k, const uint64_t *bits, char *buf, size_t len)
{
	size_t off = 0;
	uint32_t n = 0, total = 0;

	for (uint32_t m = 0; m < k->N; m++)
		total += (bits[m / 64] >> (m % 64)) & 1;
	buf[0] = 0;
	sim_append(buf, len, &off, "rank%s ", total == 1 ? "" : "s");
	for (uint32_t m = 0; m < k->N && n < 6; m++) {
		if (!((bits[m / 64] >> (m % 64)) & 1))
			continue;
		n++;
		sim_append(buf, len, &off, "%s%" PRId32,
			   n == 1 ? "" : n == total ? " and " : ", ", k->c.ranks[m]);
	}
	if (total > n)
		sim_append(buf, len, &off, " and %" PRIu32 " more", total - n);
	return buf;
}

static bool empty(const uint64_t *s, uint32_t W)
{
	for (uint32_t w = 0; w < W; w++)
		if (s[w])
			return false;
	return true;
}

/* ---- pending writes ---------------------------------------------------------- */

static int wpush(struct chk *k, uint32_t *head, uint32_t step)
{
	uint32_t ix;

	if (k->freel != NONE) {
		ix = k->freel;
		k->freel = k->pool[ix].next;
	} else {
		if (k->npool == k->poolcap) {
			size_t nc = k->poolcap ? 2 * k->poolcap : 1024;
			struct wnode *np = realloc(k->pool, nc * sizeof(*np));

			if (!np || nc >= NONE)
				return -1;
			k->pool = np;
			k->poolcap = nc;
		}
		ix = (uint32_t)k->npool++;
	}
	k->pool[ix] = (struct wnode){ step, *head };
	*head = ix;
	return 0;
}

static void wclear(struct chk *k, uint32_t *head)
{
	while (*head != NONE) {
		uint32_t ix = *head;

		*head = k->pool[ix].next;
		k->pool[ix].next = k->freel;
		k->freel = ix;
	}
}

static bool direct_dep(const struct trace_program *p, uint32_t s, uint32_t w)
{
	const struct trace_step *st = &p->steps[s];

	for (uint32_t j = 0; j < st->ndeps; j++)
		if (p->deps[st->dep_off + j] == w)
			return true;
	return false;
}

/* Does step s wait for step w (w < s), directly or through other steps?
 * The first indirect question about s marks all of s's ancestors inside
 * the op once; later questions about s are then one lookup. */
static int waits_for(struct chk *k, uint32_t s, uint32_t w, bool *yes)
{
	const struct trace_program *p = k->p;
	size_t sp = 0;

	if (direct_dep(p, s, w)) {
		*yes = true;
		return 0;
	}
	if (!k->stamp) {
		k->stamp = malloc((size_t)(k->b - k->a) * sizeof(*k->stamp));
		k->stack = malloc((size_t)(k->b - k->a) * sizeof(*k->stack));
		if (!k->stamp || !k->stack)
			return -1;
		for (uint32_t i = 0; i < k->b - k->a; i++)
			k->stamp[i] = NONE;
	}
	if (k->anc_of != s) {
		k->anc_of = s;
		k->stack[sp++] = s;
		while (sp) {
			const struct trace_step *st = &p->steps[k->stack[--sp]];

			for (uint32_t j = 0; j < st->ndeps; j++) {
				uint32_t x = p->deps[st->dep_off + j];

				if (x < k->a || k->stamp[x - k->a] == s)
					continue;
				k->stamp[x - k->a] = s;
				k->stack[sp++] = x;
			}
		}
	}
	*yes = k->stamp[w - k->a] == s;
	return 0;
}

/* ---- the run ------------------------------------------------------------------- */

static const char *data_name(enum trace_data d)
{
	return d == TD_REDUCE ? "reduce" : d == TD_COPY ? "copy" : "sync";
}

/*
 * A barrier message: it tells the receiver what its sender knew when it
 * left - the sender's own arrival and what the messages the step waits for
 * told the sender. A message the step does not wait for may land after it
 * leaves: it is not counted (no error: knowledge only grows).
 */
/*
 * A copy from an NVSwitch endpoint that brings rank st->peer nothing: the
 * multicast of a store back to the GPU that made it - once per store
 * (echoed, cleared by the next copy into the switch). Anything else that
 * changes nothing is redundant.
 */
static bool echo(struct chk *k, const struct trace_step *st, uint32_t from, uint32_t c)
{
	uint8_t *e;

	if (!k->echoed || !trace_is_nvs(k->c.t, st->rank))
		return false;
	e = &k->echoed[(size_t)from * k->K + c];
	if (*e)
		return false;
	for (uint32_t w = k->head[(size_t)from * k->K + c]; w != NONE; w = k->pool[w].next) {
		const struct trace_step *x = &k->p->steps[k->pool[w].step];

		if (x->data == TD_COPY && x->rank == st->peer) {
			*e = 1;
			return true;
		}
	}
	return false;
}

static int sync_step(struct chk *k, uint32_t s, uint32_t from, uint32_t to)
{
	const struct trace_step *st = &k->p->steps[s];
	uint64_t *cs, *dst = cset(k, to, 0);
	bool yes, news = false;

	if (!k->carried) {
		k->carried = calloc((size_t)(k->b - k->a) * k->W, sizeof(*k->carried));
		if (!k->carried)
			return err(k, "out of memory");
	}
	cs = k->carried + (size_t)(s - k->a) * k->W;
	cs[from / 64] |= 1ull << (from % 64);
	for (uint32_t w = k->head[from]; w != NONE; w = k->pool[w].next) {
		const uint64_t *cw = k->carried + (size_t)(k->pool[w].step - k->a) * k->W;

		if (waits_for(k, s, k->pool[w].step, &yes))
			return err(k, "out of memory");
		for (uint32_t x = 0; yes && x < k->W; x++)
			cs[x] |= cw[x];
	}
	for (uint32_t x = 0; x < k->W; x++) {
		news |= (cs[x] & ~dst[x]) != 0;
		dst[x] |= cs[x];
	}
	if (!news)
		return err(k, "step %" PRIu32 " (rank %" PRId32 " -> rank %" PRId32
			   ") is redundant: rank %" PRId32 " learns nothing new", s - k->a,
			   st->rank, st->peer, st->peer);
	if (wpush(k, &k->head[to], s))
		return err(k, "out of memory");
	return 0;
}

static int check_step(struct chk *k, uint32_t s)
{
	const struct trace_program *p = k->p;
	const struct trace_step *st = &p->steps[s];
	enum trace_coll coll = k->o->coll;
	uint32_t first, count, from, to;
	char b1[96];

	if (st->op != k->c.op_index)
		return err(k, "step %" PRIu32 " belongs to op %" PRIu32, s - k->a, st->op);
	for (uint32_t j = 0; j < st->ndeps; j++)
		if (p->deps[st->dep_off + j] >= s)
			return err(k, "step %" PRIu32 " waits for program step %" PRIu32
				   ", which is not an earlier one", s - k->a, p->deps[st->dep_off + j]);
	if (st->kind != TS_XFER)
		return err(k, "step %" PRIu32 " is not a transfer", s - k->a);
	if (st->rank < 0 || st->peer < 0 || st->rank >= trace_nendpoints(k->c.t) ||
	    st->peer >= trace_nendpoints(k->c.t) || k->midx[st->rank] < 0 ||
	    k->midx[st->peer] < 0 || st->rank == st->peer)
		return err(k, "step %" PRIu32 " (rank %" PRId32 " -> rank %" PRId32
			   ") is not between two members", s - k->a, st->rank, st->peer);
	from = (uint32_t)k->midx[st->rank];
	to = (uint32_t)k->midx[st->peer];
	if (from < k->N)
		k->seen[from] = 1;
	if (to < k->N)
		k->seen[to] = 1;
	first = st->chunk % k->K;
	count = st->chunk / k->K + 1;
	if (count > k->K)
		return err(k, "step %" PRIu32 " carries %" PRIu32 " chunks of %" PRIu32, s - k->a,
			   count, k->K);
	if (st->bytes != coll_run_bytes(k->c.bytes, k->K, first, count))
		return err(k, "step %" PRIu32 " (rank %" PRId32 " -> rank %" PRId32 ") carries %" PRIu64
			   " bytes, but chunks %" PRIu32 "+%" PRIu32 " hold %" PRIu64, s - k->a,
			   st->rank, st->peer, st->bytes, first, count,
			   coll_run_bytes(k->c.bytes, k->K, first, count));
	if ((st->data == TD_NONE) != (coll == TRACE_BARRIER) ||
	    (st->data == TD_REDUCE && coll != TRACE_ALLREDUCE && coll != TRACE_REDUCESCATTER &&
	     coll != TRACE_REDUCE))
		return err(k, "step %" PRIu32 ": a %s has no '%s' transfer", s - k->a,
			   trace_coll_names[coll], data_name(st->data));

	if (st->data == TD_NONE)
		return sync_step(k, s, from, to);
	for (uint32_t i = 0; i < count; i++) {
		uint32_t c = (first + i) % k->K;
		uint64_t *src = cset(k, from, c), *dst = cset(k, to, c);
		uint32_t *hs = &k->head[(size_t)from * k->K + c];
		uint32_t *hd = &k->head[(size_t)to * k->K + c];
		bool yes;

		if (empty(src, k->W))
			return err(k, "step %" PRIu32 ": rank %" PRId32 " sends chunk %" PRIu32
				   " to rank %" PRId32 " but holds nothing of it", s - k->a,
				   st->rank, c, st->peer);
		/* the data it sends must have arrived before it leaves */
		for (uint32_t w = *hs; w != NONE; w = k->pool[w].next) {
			if (waits_for(k, s, k->pool[w].step, &yes))
				return err(k, "out of memory");
			if (!yes)
				return err(k, "step %" PRIu32 " (rank %" PRId32 " -> rank %" PRId32
					   ", chunk %" PRIu32 ") does not wait for step %" PRIu32
					   ", which brought that chunk to rank %" PRId32, s - k->a,
					   st->rank, st->peer, c, k->pool[w].step - k->a, st->rank);
		}
		switch (st->data) {
		case TD_REDUCE:
			for (uint32_t w = 0; w < k->W; w++)
				k->tmp[w] = src[w] & dst[w];
			if (!empty(k->tmp, k->W))
				return err(k, "step %" PRIu32 " (rank %" PRId32 " -> rank %" PRId32
					   ", chunk %" PRIu32 ") counts the contribution of %s twice",
					   s - k->a, st->rank, st->peer, c, who(k, k->tmp, b1, sizeof(b1)));
			/* writes it waits for need no longer be remembered; a copy
			 * it does not wait for is a race */
			for (uint32_t *pw = hd; *pw != NONE;) {
				uint32_t w = k->pool[*pw].step, ix = *pw;

				if (direct_dep(p, s, w)) {
					*pw = k->pool[ix].next;
					k->pool[ix].next = k->freel;
					k->freel = ix;
					continue;
				}
				if (p->steps[w].data == TD_COPY) {
					if (waits_for(k, s, w, &yes))
						return err(k, "out of memory");
					if (!yes)
						return err(k, "step %" PRIu32 " reduces into rank %" PRId32
							   "'s chunk %" PRIu32 " while step %" PRIu32
							   " may still be copying into it", s - k->a,
							   st->peer, c, w - k->a);
				}
				pw = &k->pool[ix].next;
			}
			for (uint32_t w = 0; w < k->W; w++)
				dst[w] |= src[w];
			if (wpush(k, hd, s))
				return err(k, "out of memory");
			break;
		case TD_COPY:
			if (!memcmp(src, dst, k->W * sizeof(*src)) && !echo(k, st, from, c))
				return err(k, "step %" PRIu32 " (rank %" PRId32 " -> rank %" PRId32
					   ", chunk %" PRIu32 ") is redundant: rank %" PRId32
					   " already holds what it brings", s - k->a, st->rank, st->peer,
					   c, st->peer);
			memcpy(dst, src, k->W * sizeof(*src));
			if (k->echoed)	/* a new store: its echo is to come */
				k->echoed[(size_t)to * k->K + c] = 0;
			wclear(k, hd);
			if (wpush(k, hd, s))
				return err(k, "out of memory");
			break;
		default:
			return err(k, "step %" PRIu32 ": unknown data kind %d", s - k->a,
				   (int)st->data);
		}
	}
	return 0;
}

/* Block j of chunk c, in the layout c = (h B + j) P + q with B = N. */
static uint32_t block_of(const struct chk *k, uint32_t c)
{
	return (c / k->c.pieces) % k->N;
}

/* The promise: what member m must hold of chunk c at the end, into want;
 * false when the collective promises nothing there. */
static bool promise(struct chk *k, uint32_t m, uint32_t c, uint64_t *want)
{
	memset(want, 0, k->W * sizeof(*want));
	switch (k->o->coll) {
	case TRACE_ALLREDUCE:
	case TRACE_BARRIER:
		break;
	case TRACE_REDUCESCATTER:
		if (block_of(k, c) != m)
			return false;
		break;
	case TRACE_REDUCE:
		if (m != k->c.root)
			return false;
		break;
	case TRACE_ALLGATHER:
	case TRACE_ALLTOALL:
		want[block_of(k, c) / 64] = 1ull << (block_of(k, c) % 64);
		return true;
	case TRACE_BROADCAST:
		want[k->c.root / 64] = 1ull << (k->c.root % 64);
		return true;
	case TRACE_NCOLL:
		return false;
	}
	for (uint32_t i = 0; i < k->N; i++)
		want[i / 64] |= 1ull << (i % 64);
	return true;
}

static int start(struct chk *k)
{
	size_t nsets = (size_t)k->E * k->K;

	if ((double)nsets * k->W * 8 > (double)COLL_CHECK_MAX_BYTES)
		return err(k, "too large to check (%" PRIu32 " ranks x %" PRIu32
			   " chunks: more than %llu MiB of state)", k->N, k->K,
			   COLL_CHECK_MAX_BYTES >> 20);
	k->set = calloc(nsets * k->W, sizeof(*k->set));
	k->tmp = calloc(k->W, sizeof(*k->tmp));
	k->head = malloc(nsets * sizeof(*k->head));
	k->midx = malloc((size_t)trace_nendpoints(k->c.t) * sizeof(*k->midx));
	k->seen = calloc(k->N, 1);
	for (uint32_t x = 0; x < k->c.nx && !k->echoed; x++)	/* NVLS's switches */
		if (trace_is_nvs(k->c.t, k->c.xranks[x]) && !(k->echoed = calloc(nsets, 1)))
			return err(k, "out of memory");
	if (!k->set || !k->tmp || !k->head || !k->midx || !k->seen)
		return err(k, "out of memory");
	for (size_t i = 0; i < nsets; i++)
		k->head[i] = NONE;
	for (int32_t r = 0; r < trace_nendpoints(k->c.t); r++)
		k->midx[r] = -1;
	for (uint32_t m = 0; m < k->N; m++)
		k->midx[k->c.ranks[m]] = (int32_t)m;
	for (uint32_t x = 0; x < k->c.nx; x++)	/* they start with nothing */
		k->midx[k->c.xranks[x]] = (int32_t)(k->N + x);
	/* what each member holds before the first step */
	for (uint32_t m = 0; m < k->N; m++)
		for (uint32_t c = 0; c < k->K; c++) {
			bool own;

			switch (k->o->coll) {
			case TRACE_ALLGATHER:
			case TRACE_ALLTOALL:
				own = block_of(k, c) == m;
				break;
			case TRACE_BROADCAST:
				own = m == k->c.root;
				break;
			default:
				own = true;
			}
			if (own)
				cset(k, m, c)[m / 64] |= 1ull << (m % 64);
		}
	return 0;
}

static int finish(struct chk *k)
{
	uint64_t *want = malloc(k->W * sizeof(*want)), *miss = malloc(k->W * sizeof(*miss));
	char b1[96], b2[96];
	int rc = 0;

	if (!want || !miss) {
		free(want);
		free(miss);
		return err(k, "out of memory");
	}
	for (uint32_t m = 0; m < k->N && !rc; m++)
		if (k->N > 1 && !k->seen[m])
			rc = err(k, "rank %" PRId32 " takes no part in it", k->c.ranks[m]);
	for (uint32_t m = 0; m < k->N && !rc; m++)
		for (uint32_t c = 0; c < k->K && !rc; c++) {
			const uint64_t *have = cset(k, m, c);
			bool missing = false, extra = false;

			if (!promise(k, m, c, want))
				continue;
			for (uint32_t w = 0; w < k->W; w++) {
				miss[w] = want[w] & ~have[w];
				missing |= miss[w] != 0;
				extra |= (have[w] & ~want[w]) != 0;
			}
			if (missing)
				rc = err(k, "after all %" PRIu32 " steps, rank %" PRId32 "'s chunk %" PRIu32
					 " lacks the %s of %s", k->b - k->a, k->c.ranks[m], c,
					 k->o->coll == TRACE_BARRIER ? "arrival" :
					 k->o->coll == TRACE_ALLGATHER || k->o->coll == TRACE_ALLTOALL ||
					 k->o->coll == TRACE_BROADCAST ? "data" : "contribution",
					 who(k, miss, b1, sizeof(b1)));
			else if (extra) {
				for (uint32_t w = 0; w < k->W; w++)
					miss[w] = have[w] & ~want[w];
				rc = err(k, "after all %" PRIu32 " steps, rank %" PRId32 "'s chunk %" PRIu32
					 " holds %s, which it should not (%s)", k->b - k->a,
					 k->c.ranks[m], c, who(k, miss, b1, sizeof(b1)),
					 who(k, want, b2, sizeof(b2)));
			}
		}
	free(want);
	free(miss);
	return rc;
}

int coll_check(const struct trace_program *p, uint32_t op_index, struct sim_diag *d)
{
	struct chk k = { .p = p, .freel = NONE, .anc_of = NONE };
	int rc = -1;

	if (!p->trace || !p->op_first || !p->op_nsteps || !p->op_nchunks)
		return sim_diag_set(d, NULL, 0, 0, "the program is not lowered");
	if (coll_ctx_init(&k.c, p->trace, op_index, NULL, d))
		return -1;
	k.o = k.c.op;
	k.N = k.c.n;
	k.E = k.c.n + k.c.nx;
	k.K = k.c.nchunks;
	k.W = (k.N + 63) / 64;
	k.a = p->op_first[op_index];
	k.b = k.a + p->op_nsteps[op_index];
	if (k.b > p->nsteps || k.b < k.a) {
		rc = err(&k, "its steps %" PRIu32 "..%" PRIu32 " are not in the program (%zu steps)",
			 k.a, k.b, p->nsteps);
		goto out;
	}
	if (p->op_nchunks[op_index] != k.K) {
		rc = err(&k, "the program cuts it into %" PRIu32 " chunks, the algorithm into %" PRIu32,
			 p->op_nchunks[op_index], k.K);
		goto out;
	}
	if (start(&k))
		goto out;
	for (uint32_t s = k.a; s < k.b; s++)
		if (check_step(&k, s))
			goto out;
	rc = finish(&k);
out:
	free(k.set);
	free(k.tmp);
	free(k.head);
	free(k.midx);
	free(k.seen);
	free(k.echoed);
	free(k.pool);
	free(k.stamp);
	free(k.stack);
	free(k.carried);
	coll_ctx_fini(&k.c);
	return rc;
}
