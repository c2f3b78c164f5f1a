/* SPDX-License-Identifier: MIT */
/*
 * cc_dcqcn.c - DCQCN (Zhu et al., SIGCOMM 2015) as the HCA's congestion
 * control on the RoCE fabrics: the reaction point's rate machine and the
 * notification point's CNP interval are models/roce/dcqcn.c's; this row
 * says what the HCA's edge (cc.c) does with them. A CNP is a RoCEv2 frame
 * on priority ETH_CNP_PRIO; a QP is paced at its current rate Rc.
 */
#include "models/cc/cc.h"

#include "models/eth/eth.h"
#include "models/params/fab_params.h"
#include "models/hca/hca_plug.h"

static bool dcqcn_applies(const struct fab_params *p)
{
	return fab_kind_of(p)->dcqcn && p->dcqcn.on;
}

static void dcqcn_setup(struct cc_hca *c, const struct fab_params *p)
{
	dcqcn_cfg_resolve(&c->dcqcn, &p->dcqcn, c->line_bps);
	/* Ethernet + 802.1Q + IPv4 + UDP + BTH + 16 reserved + ICRC + FCS,
	 * at least 64, then preamble and inter-frame gap. */
	c->note_wire = ETH_HDR_BYTES + ETH_VLAN_BYTES + IPV4_HDR_BYTES + UDP_HDR_BYTES +
		       IB_BTH_BYTES + ROCE_CNP_PAYLOAD + IB_ICRC_BYTES + ETH_FCS_BYTES;
	if (c->note_wire < ETH_MIN_FRAME)
		c->note_wire = ETH_MIN_FRAME;
	c->note_wire += ETH_PREAMBLE_BYTES + ETH_IFG_BYTES;
}

static void dcqcn_qp_init(struct cc_qp *q, const struct cc_hca *c)
{
	dcqcn_rp_init(&q->rp, &c->dcqcn);
}

/* Paced at Rc: the next packet W x 8 / Rc after this one starts (none at
 * the line rate). */
static sim_time_t dcqcn_sent(struct cc_qp *q, const struct cc_hca *c, const struct fab_params *p,
			     sim_time_t now, uint32_t wire)
{
	(void)p;
	dcqcn_rp_sent(&q->rp, &c->dcqcn, now, wire);
	return q->rp.rc < c->line_bps ? now + (sim_time_t)((double)wire * 8e12 / q->rp.rc + 0.5) : 0;
}

static void dcqcn_notified(struct cc_qp *q, const struct cc_hca *c, const struct fab_params *p,
			   sim_time_t now)
{
	(void)p;
	dcqcn_rp_cnp(&q->rp, &c->dcqcn, now);
}

/* At most one CNP per QP per dcqcn.cnp_interval_us. */
static bool dcqcn_may_notify(struct cc_qp *q, const struct cc_hca *c, sim_time_t now)
{
	return dcqcn_np_may_send(&q->np_last, &q->np_sent, &c->dcqcn, now);
}

const struct cc_algo cc_dcqcn = {
	.name = "dcqcn",
	.applies = dcqcn_applies,
	.setup = dcqcn_setup,
	.qp_init = dcqcn_qp_init,
	.sent = dcqcn_sent,
	.notified = dcqcn_notified,
	.may_notify = dcqcn_may_notify,
	.note_prio = ETH_CNP_PRIO,
	.note_flags = 0,
};
