/* SPDX-License-Identifier: MIT */
/*
 * trace_sat.c - SHARP's streaming aggregation trees as a resource.
 *
 * A SHARP allreduce of more than one chunk streams through its tree (a
 * streaming aggregation tree, SAT: SHARPv2); one of a single chunk takes
 * the low-latency path, which has no such limit. The switches hold few
 * streams at once (NVIDIA SHARP documentation, "General Information"):
 * "The number of SHARP streaming aggregation operations is limited to one
 * active tree per switch" on Quantum; on Quantum-2 several "can be
 * operated in parallel by a single switch. The limit is one active tree
 * per port." So two collnet allreduces of different communicators whose
 * trees meet in a switch (Quantum) or on a port (Quantum-2: a link of
 * both trees) do not stream at once: the later waits until the earlier
 * ends, as SHARP's lock on a tree's resources makes it (the collective
 * library takes it per operation, SHARP_COLL_SAT_LOCK_BATCH_SIZE). Ops of
 * one communicator share its tree and its lock, and are ordered by the
 * program already.
 *
 * Here an op holds, from its first step that may start to its last step's
 * end, the aggregation nodes of its tree (ib.sharp_sat=switch) or its
 * tree's links, child to aggregation node (port); another op that needs
 * any of them waits, and waiting ops are let go in the order they asked,
 * each once nothing active holds what it needs (a later one may go before
 * an earlier one that still waits). Left out: the aggregation nodes'
 * buffers and the number of trees a subnet has (63 / 511 streaming trees),
 * a job's several trees, and the fallback to the low-latency path that
 * SHARP's library may take when the lock is not had.
 */
#include "traces/trace_sat.h"

#include <stdlib.h>
#include <string.h>

enum { SAT_IDLE, SAT_ACTIVE, SAT_WAITING, SAT_DONE };

struct sat_op {
	uint64_t *res;		/* what it holds, sorted: aggregation nodes or links */
	uint32_t nres, cap;
	uint32_t comm;
	uint8_t state;
	bool streams;
};

struct trace_sat {
	enum fab_sat lim;
	struct sat_op *op;
	uint32_t nops;
	uint32_t *active, nactive;	/* ops streaming now */
	uint32_t *wait, nwait;		/* ops waiting, in the order they asked */
};

struct trace_sat *sat_new(uint32_t nops, enum fab_sat lim)
{
	struct trace_sat *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->lim = lim;
	s->nops = nops;
	s->op = calloc(nops ? nops : 1, sizeof(*s->op));
	s->active = malloc((nops ? nops : 1) * sizeof(*s->active));
	s->wait = malloc((nops ? nops : 1) * sizeof(*s->wait));
	if (!s->op || !s->active || !s->wait) {
		sat_free(s);
		return NULL;
	}
	return s;
}

void sat_free(struct trace_sat *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; s->op && i < s->nops; i++)
		free(s->op[i].res);
	free(s->op);
	free(s->active);
	free(s->wait);
	free(s);
}

static int cmp_u64(const void *a, const void *b)
{
	const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Sort and drop repeats: every chunk goes up the same links. */
static void uniq(struct sat_op *o)
{
	uint32_t k = 0;

	if (o->nres < 2)
		return;		/* (and qsort is not given the NULL of an empty list) */
	qsort(o->res, o->nres, sizeof(*o->res), cmp_u64);
	for (uint32_t i = 0; i < o->nres; i++)
		if (!k || o->res[k - 1] != o->res[i])
			o->res[k++] = o->res[i];
	o->nres = k;
}

int sat_note(struct trace_sat *s, uint32_t op, uint32_t comm, int32_t child, int32_t an)
{
	struct sat_op *o = &s->op[op];
	const uint64_t r = s->lim == FAB_SAT_PORT ?
				   (uint64_t)(uint32_t)child << 32 | (uint32_t)an :
				   (uint32_t)an;

	o->streams = true;
	o->comm = comm;
	if (o->nres && o->res[o->nres - 1] == r)
		return 0;
	if (o->nres == o->cap) {
		uniq(o);	/* the repeats first: the list grows only with the tree */
		if (!o->cap || o->nres * 2 > o->cap) {
			uint32_t cap = o->cap ? o->cap * 2 : 16;
			uint64_t *v = realloc(o->res, cap * sizeof(*v));

			if (!v)
				return -1;
			o->res = v;
			o->cap = cap;
		}
	}
	o->res[o->nres++] = r;
	return 0;
}

void sat_seal(struct trace_sat *s)
{
	for (uint32_t i = 0; i < s->nops; i++)
		if (s->op[i].streams)
			uniq(&s->op[i]);
}

bool sat_streams(const struct trace_sat *s, uint32_t op)
{
	return s && op < s->nops && s->op[op].streams;
}

/* Do ops a and b need one thing at once? (sorted lists) */
static bool clash(const struct trace_sat *s, uint32_t a, uint32_t b)
{
	const struct sat_op *x = &s->op[a], *y = &s->op[b];
	uint32_t i = 0, j = 0;

	if (x->comm == y->comm)
		return false;	/* one tree, one lock: the program orders them */
	while (i < x->nres && j < y->nres) {
		if (x->res[i] == y->res[j])
			return true;
		if (x->res[i] < y->res[j])
			i++;
		else
			j++;
	}
	return false;
}

static bool free_for(const struct trace_sat *s, uint32_t op)
{
	for (uint32_t k = 0; k < s->nactive; k++)
		if (clash(s, s->active[k], op))
			return false;
	return true;
}

bool sat_acquire(struct trace_sat *s, uint32_t op)
{
	struct sat_op *o = &s->op[op];

	if (o->state != SAT_IDLE)
		return o->state == SAT_ACTIVE;
	if (free_for(s, op)) {
		o->state = SAT_ACTIVE;
		s->active[s->nactive++] = op;
		return true;
	}
	o->state = SAT_WAITING;
	s->wait[s->nwait++] = op;
	return false;
}

bool sat_waiting(const struct trace_sat *s, uint32_t op)
{
	return s && op < s->nops && s->op[op].state == SAT_WAITING;
}

uint32_t sat_nwaiting(const struct trace_sat *s)
{
	return s ? s->nwait : 0;
}

void sat_release(struct trace_sat *s, uint32_t op, void (*granted)(void *ctx, uint32_t op),
		 void *ctx)
{
	struct sat_op *o = &s->op[op];
	uint32_t k = 0;

	if (o->state != SAT_ACTIVE) {
		o->state = SAT_DONE;
		return;
	}
	o->state = SAT_DONE;
	for (uint32_t i = 0; i < s->nactive; i++)
		if (s->active[i] != op)
			s->active[k++] = s->active[i];
	s->nactive = k;
	k = 0;
	for (uint32_t i = 0; i < s->nwait; i++) {
		const uint32_t w = s->wait[i];

		if (free_for(s, w)) {
			s->op[w].state = SAT_ACTIVE;
			s->active[s->nactive++] = w;
			granted(ctx, w);
		} else {
			s->wait[k++] = w;
		}
	}
	s->nwait = k;
}
