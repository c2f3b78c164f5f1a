/* SPDX-License-Identifier: MIT */
/*
 * fab_msgs.c - the list of messages a run carries (struct fab_msgs).
 *
 * A growable array: traffic specs and trace readers append, the fabric
 * reads it and writes each message's results in place. Capacity doubles
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

	if (n <= m->cap)
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

int fab_msgs_add(struct fab_msgs *m, const struct fab_msg *msg)
{
	struct fab_msg *e;

	if (msg->stream == UINT32_MAX)	/* nstreams = stream + 1 must fit */
		return -1;
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
	for (size_t i = 0; i < m->n; i++)
		if (fab_msg_check(&m->v[i], i, p, d))
			return -1;
	return 0;
}

void fab_msgs_free(struct fab_msgs *m)
{
	sim_mem_free_sized(m->v, m->cap * sizeof(*m->v));
	memset(m, 0, sizeof(*m));
}
