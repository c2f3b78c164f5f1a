/* SPDX-License-Identifier: MIT */
/*
 * qp_ib.c - InfiniBand's transports as the HCA's transport row
 * (struct hca_transport_ops, hca_plug.h): RC, UC and UD, over IB or
 * RoCEv2 (whose headers hca_wire_bytes counts). The requester and the
 * completer are qp_req.c's, the responder qp_resp.c's (IBA vol. 1
 * ch. 9); this file joins them: a QP's responses go before its requests,
 * and a response packet goes to the completer, any other to the
 * responder. A QP's state is the QP itself (no per-QP object).
 */
#include "models/hca/hca_int.h"

static int ib_create(struct hca_qp *qp);

static void ib_destroy(struct hca_qp *qp)
{
	qp_ooo_free(qp->ooo_req);
	qp_ooo_free(qp->ooo_rsp);
	qp->ooo_req = qp->ooo_rsp = NULL;
}

/* Work is ready at w->ready (the doorbell, the WQE fetch, the HCA); a
 * payload to read from memory is asked for as soon as the WQE is in
 * (qp_req_has_packet). */
static void ib_post(struct hca_qp *qp, struct hca_swqe *w)
{
	hca_qp_arm_ready(qp, swqe_reads_payload(w) ? w->ready - qp->hca->f->hca_lat : w->ready);
}

static bool ib_has_packet(struct hca_qp *qp)
{
	return qp_resp_has_packet(qp) || qp_req_has_packet(qp);
}

static uint32_t ib_next_size(struct hca_qp *qp)
{
	return qp_resp_has_packet(qp) ? qp_resp_next_size(qp) : qp_req_next_size(qp);
}

static void ib_build(struct hca_qp *qp, struct pkt *p)
{
	if (qp_resp_has_packet(qp))
		qp_resp_build(qp, p);
	else
		qp_req_build(qp, p);
}

static void ib_receive(struct fab *f, struct hca_qp *qp, struct pkt *p)
{
	if (p->opcode >= IB_OP_READ_RESP_FIRST && p->opcode <= IB_OP_ATOMIC_ACK)
		qp_comp_receive(qp, p);
	else
		qp_resp_receive(f, qp, p);
}

/* The ACK / RNR timer (hca_qp_arm_timer) ran out. */
static void ib_timer(struct hca_qp *qp, sim_time_t t)
{
	(void)t;
	qp_req_timer(qp);
}

static const struct hca_transport_ops ib_ops = {
	.atomics = true,
	.create = ib_create,
	.destroy = ib_destroy,
	.post = ib_post,
	.has_packet = ib_has_packet,
	.next_size = ib_next_size,
	.build = ib_build,
	.receive = ib_receive,
	.timer = ib_timer,
	.hca_fini = NULL,
};

/* Every QP carried by these shares it: the state is in the QP. */
static struct hca_xport ib_xport = { &ib_ops };

static int ib_create(struct hca_qp *qp)
{
	qp->xport = &ib_xport;
	return 0;
}

const struct hca_transport_ops *const hca_ib_transport = &ib_ops;
