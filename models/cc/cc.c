/* SPDX-License-Identifier: MIT */
/*
 * cc.c - the HCA's congestion-control edge: what DCQCN (cc_dcqcn.c, over
 * models/roce/dcqcn.c) and IB congestion control (cc_ibcc.c, over
 * models/ib/ib_cc.c) need from the transport, and share. What differs
 * between them is each one's struct cc_algo.
 *
 *  - Notification point (the responder of an RC/UC QP): a request packet
 *    arriving with CE (RoCE: IP ECN, set by an Ethernet switch) or FECN
 *    (IB: the BTH bit an IB switch sets) makes the HCA owe the requester a
 *    notification: a RoCEv2 CNP (BTH opcode 0x81, 16 reserved bytes: a
 *    minimal 102-byte frame on the wire with preamble and gap) at most once
 *    per dcqcn.cnp_interval_us per QP, or on IB a congestion notification
 *    packet carrying BECN (LRH, BTH, ICRC, VCRC: 26 bytes) for every FECN
 *    (one waits at a time per QP). Notifications wait in a per-HCA FIFO
 *    and the port sends them before any data: on Ethernet on priority
 *    ETH_CNP_PRIO (strict priority at every switch), on IB on the
 *    QP's VL ahead of that VL's QPs. f->tot.cnps counts them.
 *  - Reaction point (the requester): a CNP feeds the QP's DCQCN machine
 *    (a rate cut), a BECN raises its CCT index. Request packets are then
 *    paced: after a packet of W bytes starts, the next may start W x 8 /
 *    Rc later (DCQCN), or the packet's own serialisation plus the CCT's
 *    injection rate delay later (IB CC). A paced QP leaves its VL's
 *    round robin and is put back by a wake-up at its time (hca.c's ready
 *    timer), so other QPs use the gap. At the line rate the pacing time is
 *    the serialisation time, so an unthrottled QP is never held back.
 * Left out: READ responses and atomic responses are not paced (a READ's
 * data, flowing from the responder, is not rate controlled), and UD QPs
 * have no CC. With CC off (the IB default) the HCA holds NULL pointers and
 * every hook is one test of a pointer.
 */
#include "models/cc/cc.h"

#include <stdlib.h>
#include <string.h>

#include "models/hca/hca_plug.h"

static const struct hca_cc_ops cc_ops;

/* The HCA's state (h->cc set: it is this module's). */
static inline struct cc_hca *cc_of(const struct hca *h)
{
	return (struct cc_hca *)h->cc;
}

/* The algorithms, in the order they are asked whether they apply. */
static const struct cc_algo *const algos[] = { &cc_dcqcn, &cc_ibcc, NULL };

static const struct cc_algo *cc_algo_of(const struct fab_params *p)
{
	for (int i = 0; algos[i]; i++)
		if (algos[i]->applies(p))
			return algos[i];
	return NULL;
}

static int cc_hca_init(struct hca *h)
{
	const struct fab_params *p = &h->f->p;
	const struct cc_algo *algo = cc_algo_of(p);
	struct cc_hca *c;

	if (!algo || !h->port)
		return 0;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -1;
	c->algo = algo;
	c->line_bps = link_data_rate_bps(h->port->rate);
	algo->setup(c, p);
	c->base.ops = &cc_ops;
	h->cc = &c->base;
	return 0;
}

static void cc_hca_fini(struct hca *h)
{
	if (!h->cc)
		return;
	free(cc_of(h)->q);
	free(cc_of(h));
	h->cc = NULL;
}

static struct cc_qp *cc_qp_new(struct hca *h)
{
	struct cc_qp *q = calloc(1, sizeof(*q));

	if (q && cc_of(h)->algo->qp_init)
		cc_of(h)->algo->qp_init(q, cc_of(h));
	return q;
}

/* ---- requester: pacing and reaction ----------------------------------------- */

static bool cc_req_may_send(struct hca_qp *qp)
{
	struct cc_qp *q = qp->cc;

	if (!q->next || q->next <= qp->hca->f->eng.now)
		return true;
	hca_qp_arm_ready(qp, q->next);
	return false;
}

static void cc_req_sent(struct hca_qp *qp, const struct pkt *p)
{
	struct hca *h = qp->hca;
	struct cc_hca *c = cc_of(h);
	struct cc_qp *q = qp->cc;
	sim_time_t now = h->f->eng.now;

	q->next = c->algo->sent(q, c, &h->f->p, now, p->wire);
}

/* Nothing owed: no notification queued for its peer. Its rate state is
 * the QP's alone (DCQCN's and IB CC's timers run lazily, no event). */
static bool cc_qp_idle(const struct hca_qp *qp)
{
	return !qp->cc->owed;
}

static bool is_response(uint8_t op)
{
	return op >= IB_OP_READ_RESP_FIRST && op <= IB_OP_ATOMIC_ACK;
}

/* Queue a notification for the peer of qp. */
static void owe(struct hca_qp *qp)
{
	struct hca *h = qp->hca;
	struct cc_hca *c = cc_of(h);

	if (qp->cc->owed)
		return;
	if (c->n == c->cap) {
		uint32_t cap = c->cap ? c->cap * 2 : 16;
		struct cc_note *nq = malloc(cap * sizeof(*nq));

		if (!nq) {
			fab_fail(h->f, "out of memory for congestion notifications");
			return;
		}
		for (uint32_t i = 0; i < c->n; i++)
			nq[i] = c->q[(c->head + i) % c->cap];
		free(c->q);
		c->q = nq;
		c->head = 0;
		c->cap = cap;
	}
	c->q[(c->head + c->n++) % c->cap] = (struct cc_note){
		.dlid = qp->dlid, .sl = qp->sl, .vl = qp->vl, .qpt = (uint8_t)qp->type,
		.sqpn = qp->qpn, .dqpn = qp->dest_qpn,
	};
	qp->cc->owed = true;
	if (!h->in_take && h->port)
		port_kick(h->port);
}

static bool cc_receive(struct hca_qp *qp, struct pkt *p)
{
	struct hca *h = qp->hca;
	struct cc_hca *c = cc_of(h);
	sim_time_t now = h->f->eng.now;

	if (p->opcode == IB_OP_CNP) {
		c->algo->notified(qp->cc, c, &h->f->p, now);
		return true;
	}
	if (!(p->flags & IB_PKT_CE) || is_response(p->opcode))	/* ACKs are responses */
		return false;
	if (c->algo->may_notify && !c->algo->may_notify(qp->cc, c, now))
		return false;
	owe(qp);
	return false;
}

/* ---- the port ----------------------------------------------------------------- */

static uint8_t note_vl(const struct cc_hca *c)
{
	return c->algo->note_prio >= 0 ? (uint8_t)c->algo->note_prio : c->q[c->head].vl;
}

static int cc_owed_vl(const struct hca *h)
{
	return cc_of(h)->n ? note_vl(cc_of(h)) : -1;
}

static uint16_t cc_offer(struct hca *h, struct port *pt, uint32_t *blocks, uint16_t *ready)
{
	struct cc_hca *c = cc_of(h);
	uint8_t vl;

	if (!c->n)
		return 0;
	vl = note_vl(c);
	blocks[vl] = ib_blocks(c->note_wire);
	if (port_fits(pt, vl, blocks[vl]))
		*ready |= (uint16_t)(1u << vl);
	return (uint16_t)(1u << vl);
}

static uint32_t cc_take(struct hca *h, uint8_t vl)
{
	struct cc_hca *c = cc_of(h);
	struct cc_note nt = c->q[c->head];
	uint32_t idx = hca_alloc_pkt(h);
	struct pkt *p;
	struct hca_qp *qp;

	if (idx == SIM_POOL_NIL)
		return SIM_POOL_NIL;
	c->head = (c->head + 1) % c->cap;
	c->n--;
	qp = hca_qp_by_num(h, nt.sqpn);
	if (qp && qp->cc)
		qp->cc->owed = false;
	p = fab_pkt(h->f, idx);
	p->slid = h->lid;
	p->dlid = nt.dlid;
	p->sl = nt.sl;
	p->vl = vl;
	p->qpt = nt.qpt;
	p->sqpn = nt.sqpn;
	p->dqpn = nt.dqpn;
	p->opcode = IB_OP_CNP;
	p->msg = UINT32_MAX;
	p->wire = (uint16_t)c->note_wire;
	p->blocks = (uint8_t)ib_blocks(p->wire);
	p->flags |= c->algo->note_flags;	/* IB: BECN */
	h->f->tot.cnps++;
	return idx;
}

/* The congestion controls at the HCA, DCQCN and IB CC (hca_plug.h). */
static const struct hca_cc_ops cc_ops = {
	.hca_init = cc_hca_init,
	.hca_fini = cc_hca_fini,
	.qp_new = cc_qp_new,
	.req_may_send = cc_req_may_send,
	.req_sent = cc_req_sent,
	.receive = cc_receive,
	.offer = cc_offer,
	.owed_vl = cc_owed_vl,
	.take = cc_take,
	.qp_idle = cc_qp_idle,
};

const struct hca_cc_ops *cc_for(const struct fab_params *p)
{
	return cc_algo_of(p) ? &cc_ops : NULL;
}
