/* SPDX-License-Identifier: MIT */
/*
 * qp_ooo.c - out-of-order arrival at an RC queue pair: the packets that
 * overtook others on the fabric's other paths (adaptive routing, packet
 * spraying) are held until the gap before them fills.
 *
 * ConnectX-5 and later HCAs place RC packets that arrive out of order
 * (NVIDIA's "Out-of-Order (OOO) Data Placement": RC, XRC and DC QPs), so
 * that adaptive routing costs no retransmission; an HCA without it sees a
 * sequence error and the requester goes back N (IBA 9.7.5.1.2). The
 * responder here holds requests whose PSN is ahead of the expected one by
 * less than hca.ooo_window and executes them in PSN order once the missing
 * ones arrive; the requester holds READ responses and atomic ACKs the same
 * way. Acknowledgements stay cumulative (the AETH's PSN is the last one
 * executed in order), as the IBA's are.
 * A held packet's payload is written to memory as it lands, as the real
 * HCA places it, so that its DMA write takes the host's PCIe and memory
 * when the packet arrives, not in a burst once the gap fills; the message
 * completes in order. The memory is the one its WRITE or its receive
 * names (qp_resp.c's held_mem), a READ response's its WQE's.
 *
 * The ring is indexed by PSN modulo its capacity, a power of two above the
 * farthest PSN held ahead: the held PSNs all lie within one capacity of
 * the expected one, so no two share a slot. It starts at 16 and doubles
 * as needed; a QP that never sees a gap never allocates one.
 */
#include "models/hca/hca_int.h"

#include <stdlib.h>
#include <string.h>

struct hca_ooo {
	struct pkt *slot;
	uint32_t *psn;		/* the PSN slot i holds, or OOO_EMPTY */
	uint32_t cap;
	uint32_t n;		/* held now */
};

#define OOO_EMPTY UINT32_MAX

static int ooo_grow(struct hca_ooo *o, uint32_t need)
{
	uint32_t cap = o->cap ? o->cap : 16;

	while (cap <= need)
		cap *= 2;
	if (cap == o->cap)
		return 0;
	struct pkt *slot = malloc((size_t)cap * sizeof(*slot));
	uint32_t *psn = malloc((size_t)cap * sizeof(*psn));

	if (!slot || !psn) {
		free(slot);
		free(psn);
		return -1;
	}
	for (uint32_t i = 0; i < cap; i++)
		psn[i] = OOO_EMPTY;
	for (uint32_t i = 0; i < o->cap; i++)
		if (o->psn[i] != OOO_EMPTY) {
			uint32_t k = o->psn[i] & (cap - 1);

			slot[k] = o->slot[i];
			psn[k] = o->psn[i];
		}
	free(o->slot);
	free(o->psn);
	o->slot = slot;
	o->psn = psn;
	o->cap = cap;
	return 0;
}

bool qp_ooo_hold(struct hca_qp *qp, struct hca_ooo **op, const struct pkt *p, uint32_t ahead,
		 enum hca_mem mem)
{
	struct hca_ooo *o = *op;

	if (ahead >= qp->hca->f->p.hca_ooo_window)
		return false;
	if (!o) {
		o = calloc(1, sizeof(*o));
		if (!o)
			return false;
		*op = o;
	}
	if (ooo_grow(o, ahead))
		return false;
	uint32_t k = p->psn & (o->cap - 1);

	if (o->psn[k] == p->psn)
		return true;	/* held already: a retransmitted copy */
	if (o->psn[k] == OOO_EMPTY)
		o->n++;
	o->slot[k] = *p;
	o->slot[k].t_tail = qp->hca->host_on && p->payload ?
			    hca_dma_write(qp->hca, qp->hca->f->eng.now, mem, p->payload) : 0;
	o->psn[k] = p->psn;
	qp->st.ooo_held++;
	return true;
}

bool qp_ooo_take(struct hca_ooo *o, uint32_t psn, struct pkt *out)
{
	uint32_t k;

	if (!o || !o->n)
		return false;
	k = psn & (o->cap - 1);
	if (o->psn[k] != psn)
		return false;
	*out = o->slot[k];
	o->psn[k] = OOO_EMPTY;
	o->n--;
	return true;
}

void qp_ooo_flush(struct hca_ooo *o)
{
	if (!o || !o->n)
		return;
	for (uint32_t i = 0; i < o->cap; i++)
		o->psn[i] = OOO_EMPTY;
	o->n = 0;
}

uint32_t qp_ooo_count(const struct hca_ooo *o)
{
	return o ? o->n : 0;
}

void qp_ooo_free(struct hca_ooo *o)
{
	if (!o)
		return;
	free(o->slot);
	free(o->psn);
	free(o);
}
