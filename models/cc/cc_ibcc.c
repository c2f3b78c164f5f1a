/* SPDX-License-Identifier: MIT */
/*
 * cc_ibcc.c - InfiniBand congestion control (IBA vol. 1 Annex A10) as the
 * HCA's congestion control on the ib fabric: the CA's CCT index and the
 * switch's FECN marking are models/ib/ib_cc.c's; this row says what the
 * HCA's edge (cc.c) does with them. A notification is a congestion
 * notification packet carrying BECN (LRH, BTH, ICRC, VCRC: 26 bytes) on
 * the QP's VL, one for every FECN; a QP is paced by its CCT entry's
 * injection rate delay.
 */
#include "models/cc/cc.h"

#include "models/params/fab_params.h"
#include "models/hca/hca_plug.h"

static bool ibcc_applies(const struct fab_params *p)
{
	return fab_kind_of(p)->ibcc && p->ibcc.on;
}

static void ibcc_setup(struct cc_hca *c, const struct fab_params *p)
{
	c->note_wire = IB_LRH_BYTES + IB_BTH_BYTES + IB_ICRC_BYTES + IB_VCRC_BYTES;
	c->ibcc_timer = ibcc_timer_ps(&p->ibcc, c->line_bps, p->mtu);
}

/* The packet's own time plus the delay. In floating point on purpose: one
 * more caller of link_ser_ps() made GCC stop inlining it into the link
 * layer, +6% instructions on every IB run. */
static sim_time_t ibcc_sent(struct cc_qp *q, const struct cc_hca *c, const struct fab_params *p,
			    sim_time_t now, uint32_t wire)
{
	ibcc_ca_advance(&q->ca, &p->ibcc, c->ibcc_timer, now);
	uint32_t ird = q->ca.ccti ? ibcc_ird_units(&p->ibcc, q->ca.ccti) : 0;

	return ird ? now + (sim_time_t)(((double)wire + (double)ird * IB_BLOCK_BYTES) * 8e12 /
					c->line_bps + 0.5) : 0;
}

static void ibcc_notified(struct cc_qp *q, const struct cc_hca *c, const struct fab_params *p,
			  sim_time_t now)
{
	ibcc_ca_becn(&q->ca, &p->ibcc, c->ibcc_timer, now);
}

const struct cc_algo cc_ibcc = {
	.name = "ib.cc",
	.applies = ibcc_applies,
	.setup = ibcc_setup,
	.qp_init = NULL,
	.sent = ibcc_sent,
	.notified = ibcc_notified,
	.may_notify = NULL,
	.note_prio = -1,
	.note_flags = IB_PKT_ECE,
};
