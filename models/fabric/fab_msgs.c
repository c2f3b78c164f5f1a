/* SPDX-License-Identifier: MIT */
/*
 * fab_msgs.c - the list of messages a run carries (struct fab_msgs).
 *
 * A growable array: traffic specs and trace readers append, the fabric
 * reads it and writes each message's results in place; or, compact, the
 * same messages as runs of a stream (fab.h). Capacity doubles
 * from 64; from 2 MiB on the array grows by moving its pages, not copying
 * them (sim_mem_resize), so free it with fab_msgs_free() only. It is
 * addressed by index (fab_msg.after), never by pointer, so growth is safe.
 */
#include "models/fabric/fab.h"
#include "sim/sim_mem.h"

#include <stdlib.h>
#include <string.h>

#define FAB_MSGS_MIN_CAP 64

/* fab.h orders struct fab_msg for this; a new field should find room. */
_Static_assert(sizeof(struct fab_msg) <= 80, "struct fab_msg grew past 80 bytes");

int fab_msgs_reserve(struct fab_msgs *m, size_t n)
{
	struct fab_msg *v;

	if (m->compact || n <= m->cap)
		return 0;
	if (n > SIZE_MAX / sizeof(*v))
		return -1;
	v = sim_mem_resize(m->v, m->cap * sizeof(*v), n * sizeof(*v));
	if (!v)
		return -1;
	m->v = v;
	m->cap = n;
	return 0;
}

/* Whether msg continues run r: the same stream and fields, no
 * dependency, posted one step after its last message (the second message
 * sets the step). */
static bool run_takes(const struct fab_msg_run *r, const struct fab_msg *x)
{
	const struct fab_msg *a = &r->m;

	if (x->after >= 0 || a->after >= 0 || x->stream != a->stream || x->src != a->src ||
	    x->dst != a->dst || x->bytes != a->bytes || x->op != a->op || x->mem != a->mem ||
	    x->sl != a->sl || x->ud != a->ud || x->after_cqe != a->after_cqe ||
	    x->after_delay != a->after_delay)
		return false;
	if (r->count == 1)
		return x->post >= a->post;
	return x->post - a->post == r->count * r->gap && x->post >= a->post;
}

static int add_compact(struct fab_msgs *m, const struct fab_msg *msg)
{
	struct fab_msg_run *r = m->nruns ? &m->runs[m->nruns - 1] : NULL;

	if (r && run_takes(r, msg)) {
		if (r->count == 1)
			r->gap = msg->post - r->m.post;
		r->count++;
		m->n++;
		return 0;
	}
	if (m->nruns == m->runs_cap) {
		size_t cap = m->runs_cap ? 2 * m->runs_cap : 16;
		struct fab_msg_run *v = realloc(m->runs, cap * sizeof(*v));

		if (!v)
			return -1;
		m->runs = v;
		m->runs_cap = cap;
	}
	r = &m->runs[m->nruns++];
	memset(r, 0, sizeof(*r));
	r->m = *msg;
	r->m.start = r->m.first_tx = r->m.end = r->m.completed = 0;
	r->m.done = r->m.cqe = r->m.lost = r->m.finished = r->m.staged = false;
	r->m.status = 0;
	r->first = m->n++;
	r->count = 1;
	return 0;
}

/* The run holding message i (i < n): the last whose first is <= i. */
static size_t run_of(const struct fab_msgs *m, size_t i)
{
	size_t lo = 0, hi = m->nruns;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->runs[mid].first <= i)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

const struct fab_msg *fab_msgs_in(const struct fab_msgs *m, size_t i, struct fab_msg *tmp)
{
	if (!m->compact)
		return &m->v[i];
	const struct fab_msg_run *r = &m->runs[run_of(m, i)];

	*tmp = r->m;
	tmp->post = r->m.post + (i - r->first) * r->gap;
	return tmp;
}

size_t fab_msgs_run_of(const struct fab_msgs *m, size_t i)
{
	return m->compact ? run_of(m, i) : i;
}

size_t fab_msgs_nruns(const struct fab_msgs *m)
{
	return m->compact ? m->nruns : m->n;
}

const struct fab_msg *fab_msgs_run(const struct fab_msgs *m, size_t r, uint64_t *first,
				   uint64_t *count, sim_time_t *gap)
{
	if (!m->compact) {
		*first = r;
		*count = 1;
		*gap = 0;
		return &m->v[r];
	}
	*first = m->runs[r].first;
	*count = m->runs[r].count;
	*gap = m->runs[r].gap;
	return &m->runs[r].m;
}

int fab_msgs_add(struct fab_msgs *m, const struct fab_msg *msg)
{
	struct fab_msg *e;

	if (msg->stream == UINT32_MAX)	/* nstreams = stream + 1 must fit */
		return -1;
	if (m->compact) {
		if (add_compact(m, msg))
			return -1;
		if (msg->stream >= m->nstreams)
			m->nstreams = msg->stream + 1;
		return 0;
	}
	if (m->n == m->cap &&
	    (m->cap * 2 < m->cap || fab_msgs_reserve(m, m->cap ? m->cap * 2 : FAB_MSGS_MIN_CAP)))
		return -1;
	e = &m->v[m->n++];
	*e = *msg;
	/* Results belong to the run, not to whoever built the message. */
	e->start = 0;
	e->first_tx = 0;
	e->end = 0;
	e->done = false;
	if (msg->stream >= m->nstreams)
		m->nstreams = msg->stream + 1;
	return 0;
}

/*
 * What a message list must satisfy on a given fabric, beyond what
 * fab_create() checks against the graph: a datagram (UD, fab_msg.ud) is a
 * SEND of one packet, so at most ib.mtu bytes (IBA 9.8.5; the HCA refuses
 * a larger UD work request, hca_post_send). VL15 MADs (sl 0xff) have their
 * own 256-byte bound, checked by fab_create().
 */
int fab_msg_check(const struct fab_msg *x, size_t i, const struct fab_params *p,
		  struct sim_diag *d)
{
	if (!x->ud)
		return 0;
	if (x->op != FAB_OP_SEND)
		return sim_diag_set(d, NULL, 0, 0,
				    "message %zu: a datagram (UD) is a SEND, not an RDMA %s",
				    i, x->op == FAB_OP_READ ? "READ" : "WRITE");
	if (x->bytes > p->mtu)
		return sim_diag_set(d, NULL, 0, 0,
				    "message %zu: a %llu-byte datagram (qp=ud) does not fit one packet of ib.mtu=%u: "
				    "UD carries one packet per message (lower size= or raise ib.mtu)",
				    i, (unsigned long long)x->bytes, p->mtu);
	return 0;
}

int fab_msgs_check(const struct fab_msgs *m, const struct fab_params *p, struct sim_diag *d)
{
	uint64_t first = 0, count;
	sim_time_t gap;

	for (size_t r = 0; r < fab_msgs_nruns(m); r++) {
		const struct fab_msg *x = fab_msgs_run(m, r, &first, &count, &gap);

		if (fab_msg_check(x, first, p, d))
			return -1;
	}
	return 0;
}

int fab_msgs_copy(struct fab_msgs *dst, const struct fab_msgs *src)
{
	*dst = *src;
	dst->v = NULL;
	dst->cap = 0;
	dst->runs = NULL;
	dst->runs_cap = 0;
	if (src->compact) {
		if (src->nruns && !(dst->runs = malloc(src->nruns * sizeof(*dst->runs)))) {
			memset(dst, 0, sizeof(*dst));
			return -1;
		}
		dst->runs_cap = src->nruns;
		if (src->nruns)
			memcpy(dst->runs, src->runs, src->nruns * sizeof(*dst->runs));
		return 0;
	}
	dst->compact = false;
	if (fab_msgs_reserve(dst, src->n ? src->n : 1)) {
		memset(dst, 0, sizeof(*dst));
		return -1;
	}
	if (src->n)
		memcpy(dst->v, src->v, src->n * sizeof(*dst->v));
	return 0;
}

void fab_msgs_free(struct fab_msgs *m)
{
	sim_mem_free_sized(m->v, m->cap * sizeof(*m->v));
	free(m->runs);
	memset(m, 0, sizeof(*m));
}
