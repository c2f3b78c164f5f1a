/* SPDX-License-Identifier: MIT */
/*
 * sw_ibcc.c - InfiniBand congestion control at the switch (IBA vol. 1
 * Annex A10, SwitchCongestionSetting): each output port counts, per VL,
 * the bytes queued at the switch's inputs for it and marks FECN in the
 * BTH of packets it sends above the threshold, root and victim told
 * apart by whether it waited for credits (models/ib/ib_cc.c has the
 * parameters, the CA side and why this congestion test). Left out: the
 * annex's credit-starvation marking and congestion logs.
 */
#include "models/switch/sw_ibcc.h"

#include <stdlib.h>

#include "models/core/fab_core.h"
#include "models/ib/ib_cc.h"
#include "models/port/port.h"

struct ibcc_port {
	uint32_t threshold;		/* bytes */
	uint32_t queued[PORT_NVL];	/* bytes queued at the switch's inputs for this output */
	uint64_t wait_seen[PORT_NVL];	/* PortVLXmitWait when this VL last sent */
	uint16_t skip[PORT_NVL];		/* eligible packets still to pass over before a mark */
};

int ibcc_sw_init(struct fab *f, struct fab_node *n)
{
	uint32_t thr = ibcc_threshold_bytes(&f->p.ibcc, f->p.vl_buf_bytes);

	for (int k = 1; k <= n->nports; k++) {
		struct port *pt = n->ports[k];

		if (!pt)
			continue;
		pt->ibcc = calloc(1, sizeof(*pt->ibcc));
		if (!pt->ibcc)
			return -1;
		pt->ibcc->threshold = thr;
		pt->has_ibcc = true;
	}
	return 0;
}

void ibcc_sw_fini(struct fab_node *n)
{
	for (int k = 1; k <= n->nports; k++)
		if (n->ports[k]) {
			free(n->ports[k]->ibcc);
			n->ports[k]->ibcc = NULL;
			n->ports[k]->has_ibcc = false;
		}
}

void ibcc_sw_queued(struct port *out, const struct pkt *p)
{
	out->ibcc->queued[p->vl] += p->wire;
}

void ibcc_sw_take(struct port *out, struct pkt *p)
{
	struct ibcc_port *c = out->ibcc;
	const struct ibcc_params *cp = &out->fab->p.ibcc;
	uint8_t vl = p->vl;
	uint32_t queued = c->queued[vl];
	uint64_t wait = out->info.vl[vl].xmit_wait_ps;
	bool victim = wait != c->wait_seen[vl];

	c->queued[vl] -= p->wire;
	c->wait_seen[vl] = wait;
	if (!c->threshold || queued <= c->threshold || vl == 15 ||
	    p->wire < (uint32_t)cp->packet_size * IB_BLOCK_BYTES || (victim && !cp->victim_mark))
		return;
	if (c->skip[vl]) {
		c->skip[vl]--;
		return;
	}
	c->skip[vl] = cp->marking_rate;
	if (!(p->flags & IB_PKT_CE)) {
		p->flags |= IB_PKT_CE;
		out->info.vl[vl].ecn_marked++;
		out->fab->tot.ecn_marks++;
	}
}
