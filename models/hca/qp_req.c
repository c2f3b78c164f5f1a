/* SPDX-License-Identifier: MIT */
/*
 * qp_req.c - the requester and the completer of a queue pair (IBA 9.7,
 * reliable and unreliable service; rxe's req.c and comp.c do the same).
 *
 * Requester: the send queue's work requests become packets when the port
 * takes them: SEND and RDMA WRITE segmented at the path MTU into
 * FIRST/MIDDLE/LAST or ONLY (RETH on a WRITE's first, ImmDt on the last),
 * one READ request per READ (it takes as many PSNs as the response has
 * packets), one AtomicETH packet per atomic. Each packet takes the next
 * 24-bit PSN; an RC message's last packet asks for an ACK (AckReq). READs
 * and atomics in flight never exceed max_rd_atomic (IBA 9.7.3.1.4).
 *
 * Completer (RC): an ACK retires every SEND/WRITE up to its PSN, a READ
 * response's data lands in the local buffer and retires the READ, an
 * atomic ACK brings back the original value. Work requests complete in
 * order. A NAK-sequence-error, or the local ACK timer (4.096 us x
 * 2^timeout, IBA 9.7.6.1.3) running out, rewinds to the first unacknowledged
 * PSN and resends from there (go-back-N), spending one of retry_cnt (which
 * any progress, an ACK or a NAK past the last one, fills again); an RNR
 * NAK waits the responder's RNR timer (Table 45) and spends one of
 * rnr_retry (7 = for ever). Exhausted counters complete the work request
 * with the retry-exceeded status and move the QP to the Error state, which
 * flushes the rest. UC and UD complete a send when its last packet leaves.
 */
#include "models/hca/hca_int.h"

#include <string.h>

#include "sim/sim_log.h"

static bool is_rd_atomic(enum hca_wr_opcode op)
{
	return op == HCA_WR_RDMA_READ || op == HCA_WR_ATOMIC_CMP_AND_SWP ||
	       op == HCA_WR_ATOMIC_FETCH_AND_ADD;
}

/* IBA Table 45: RNR NAK timer codes, in microseconds x 100. */
static const uint32_t rnr_timer_10us[32] = {
	65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288,
	16384, 24576, 32768, 49152,
};

static sim_time_t rnr_delay(uint8_t code)
{
	return (sim_time_t)rnr_timer_10us[code & 31] * 10 * SIM_US;
}

static sim_time_t ack_timeout(const struct hca_qp *qp)
{
	/* 4.096 us x 2^timeout; 0 means infinite (IBA 9.7.6.1.3). */
	return qp->timeout ? (sim_time_t)4096 * SIM_NS << qp->timeout : 0;
}

static uint32_t swqe_len(const struct hca_swqe *w)
{
	return w->wr.sg.length;
}

/*
 * What the next request packet of the WQE at sq_next is. Inlined into its
 * three callers (a packet asks it when the port looks for work, sizes the
 * packet and builds it): each uses part of the answer, and through
 * pointers to a call the compiler could drop none of it (B1: 1.7% of the
 * instructions, the 128-host ring 3%).
 */
static inline __attribute__((always_inline)) void
next_req(struct hca_qp *qp, uint8_t *op, uint32_t *payload, bool *first, bool *last)
{
	struct hca_swqe *w = hca_swqe_at(qp, qp->sq_next);
	uint32_t len = swqe_len(w);
	uint64_t off = qp->seg_off;
	uint32_t mtu = qp->mtu;
	bool imm;

	*first = off == 0;
	*payload = 0;
	*last = true;
	switch (w->wr.opcode) {
	case HCA_WR_RDMA_READ:
		*op = IB_OP_READ_REQUEST;
		return;
	case HCA_WR_ATOMIC_CMP_AND_SWP:
		*op = IB_OP_CMP_SWAP;
		return;
	case HCA_WR_ATOMIC_FETCH_AND_ADD:
		*op = IB_OP_FETCH_ADD;
		return;
	default:
		break;
	}
	*payload = len - off < mtu ? (uint32_t)(len - off) : mtu;
	*last = off + *payload >= len;
	imm = w->wr.opcode == HCA_WR_SEND_WITH_IMM || w->wr.opcode == HCA_WR_RDMA_WRITE_WITH_IMM;
	if (w->wr.opcode == HCA_WR_SEND || w->wr.opcode == HCA_WR_SEND_WITH_IMM)
		*op = *first && *last ? (imm ? IB_OP_SEND_ONLY_IMM : IB_OP_SEND_ONLY) :
		      *first ? IB_OP_SEND_FIRST :
		      *last ? (imm ? IB_OP_SEND_LAST_IMM : IB_OP_SEND_LAST) : IB_OP_SEND_MIDDLE;
	else
		*op = *first && *last ? (imm ? IB_OP_WRITE_ONLY_IMM : IB_OP_WRITE_ONLY) :
		      *first ? IB_OP_WRITE_FIRST :
		      *last ? (imm ? IB_OP_WRITE_LAST_IMM : IB_OP_WRITE_LAST) : IB_OP_WRITE_MIDDLE;
}

/*
 * The HCA's read-ahead does not stop at a work request's end: once the
 * current one's payload is all booked and less than half a DMA window is
 * left to send, the first chunks of the following ready work requests are
 * booked too, up to a window of packets, so back-to-back messages - small
 * ones above all - leave back to back (an HCA keeps many WQEs and reads in
 * flight).
 */
static void prefetch_next(struct hca_qp *qp, const struct hca_swqe *w, uint64_t end)
{
	struct hca *h = qp->hca;
	uint32_t window = h->f->p.hca_dma_window;
	uint64_t chunk = (uint64_t)window * qp->mtu;
	uint64_t ahead;

	if (w->dma.hi < swqe_len(w) || swqe_len(w) - end >= chunk / 2)
		return;
	ahead = (swqe_len(w) - end + qp->mtu - 1) / qp->mtu;
	for (uint32_t i = qp->sq_next + 1; i != qp->sq_tail && ahead < window; i++) {
		struct hca_swqe *nx = hca_swqe_at(qp, i);
		uint64_t len = swqe_len(nx);

		if (nx->ready - h->f->hca_lat > h->f->eng.now)
			break;	/* not fetched yet: it is booked when it becomes ready */
		if (is_rd_atomic(nx->wr.opcode) || (nx->wr.send_flags & HCA_SEND_INLINE) || !len)
			continue;
		if (!nx->dma.hi)
			hca_dma_ready(h, &nx->dma, nx->mem, len, 0, len < qp->mtu ? len : qp->mtu,
				      qp->mtu);
		ahead += (nx->dma.hi - nx->dma.lo + qp->mtu - 1) / qp->mtu;
	}
}

bool qp_req_has_packet(struct hca_qp *qp)
{
	struct hca_swqe *w;
	sim_time_t now = qp->hca->f->eng.now;

	if (qp->state != HCA_QPS_RTS || qp->rnr_wait || qp->sq_next == qp->sq_tail)
		return false;
	w = hca_swqe_at(qp, qp->sq_next);
	/* Not ready: but the payload read is asked for once the WQE is in
	 * the HCA, overlapping the HCA's own pipeline (hca.latency_ns), as a
	 * real HCA gathers while it schedules (the packet still waits for
	 * w->ready, below). */
	if (w->ready > now &&
	    (w->started || !swqe_reads_payload(w) || w->ready - qp->hca->f->hca_lat > now))
		return false;
	/* A new WQE waits for the QP's send engine (one per hca.wqe_ns) and
	 * for the HCA's message rate over all QPs (hca.max_mpps). */
	if (!w->started) {
		sim_time_t at = qp->wqe_free > qp->hca->msg_free ? qp->wqe_free : qp->hca->msg_free;

		if (at > now) {
			hca_qp_arm_ready(qp, at);
			return false;
		}
	}
	if (is_rd_atomic(w->wr.opcode) && qp->rd_outstanding >= qp->max_rd_atomic)
		return false;
	/* Fence: wait until every earlier READ/atomic has completed. */
	if ((w->wr.send_flags & HCA_SEND_FENCE) && qp->rd_outstanding)
		return false;
	/* The payload must be in the HCA (read from memory over PCIe). */
	if (!is_rd_atomic(w->wr.opcode) && !(w->wr.send_flags & HCA_SEND_INLINE)) {
		uint8_t op;
		uint32_t payload;
		bool first, last;
		sim_time_t ready;

		next_req(qp, &op, &payload, &first, &last);
		ready = hca_dma_ready(qp->hca, &w->dma, w->mem, swqe_len(w), qp->seg_off,
				      qp->seg_off + payload, qp->mtu);
		if (qp->hca->host_on)
			prefetch_next(qp, w, qp->seg_off + payload);
		if (ready < w->ready)
			ready = w->ready;
		if (ready > now) {
			hca_qp_arm_ready(qp, ready);
			return false;
		}
	}
	/* Congestion control paces the QP's requests (models/cc/cc.c). */
	if (qp->cc && !qp->hca->cc->ops->req_may_send(qp))
		return false;
	return true;
}

uint32_t qp_req_next_size(struct hca_qp *qp)
{
	uint8_t op;
	uint32_t payload;
	bool first, last;

	next_req(qp, &op, &payload, &first, &last);
	return hca_wire_bytes(qp, op, payload);
}

/* Retire completed WQEs from the head, in order, with their CQEs. */
static void retire(struct hca_qp *qp)
{
	while (qp->sq_head != qp->sq_next) {
		struct hca_swqe *w = hca_swqe_at(qp, qp->sq_head);

		if (w->state != SWQE_DONE)
			break;
		qp->sq_head++;
	}
}

void qp_req_complete(struct hca_qp *qp, struct hca_swqe *w, enum hca_wc_status st)
{
	struct fab *f = qp->hca->f;
	static const enum hca_wc_opcode wc_op[] = {
		[HCA_WR_RDMA_WRITE] = HCA_WC_RDMA_WRITE,
		[HCA_WR_RDMA_WRITE_WITH_IMM] = HCA_WC_RDMA_WRITE,
		[HCA_WR_SEND] = HCA_WC_SEND, [HCA_WR_SEND_WITH_IMM] = HCA_WC_SEND,
		[HCA_WR_RDMA_READ] = HCA_WC_RDMA_READ,
		[HCA_WR_ATOMIC_CMP_AND_SWP] = HCA_WC_COMP_SWAP,
		[HCA_WR_ATOMIC_FETCH_AND_ADD] = HCA_WC_FETCH_ADD,
	};

	sim_time_t t = f->eng.now;
	int32_t msg = w->msg;	/* w may move if a CQ callback posts (sq_reserve) */

	if (w->state == SWQE_DONE)
		return;
	w->state = SWQE_DONE;
	/* READ/atomic data lands in memory first: the CQE is written behind it. */
	t = hca_cqe_time(qp->hca, t, st == HCA_WC_SUCCESS && is_rd_atomic(w->wr.opcode) &&
				     w->rd_visible > t ? w->rd_visible : t);
	if (st != HCA_WC_SUCCESS || qp->sq_sig_all || (w->wr.send_flags & HCA_SEND_SIGNALED)) {
		struct hca_wc wc = {
			.wr_id = w->wr.wr_id, .status = st, .opcode = wc_op[w->wr.opcode],
			.byte_len = w->wr.opcode == HCA_WR_RDMA_READ ? w->wr.sg.length :
				    is_rd_atomic(w->wr.opcode) ? 8 : 0,
			.qp_num = qp->qpn, .time = t,
		};

		hca_cq_push(qp->scq, &wc);
	}
	if (msg >= 0)
		fab_traffic_completed(f, msg, t, st);
}

void qp_req_build(struct hca_qp *qp, struct pkt *p)
{
	struct hca *h = qp->hca;
	struct hca_swqe *w = hca_swqe_at(qp, qp->sq_next);
	uint8_t op;
	uint32_t payload;
	bool first, last;

	next_req(qp, &op, &payload, &first, &last);
	if (!w->started) {
		w->first_psn = qp->snd_psn;
		w->started = true;
		qp->wqe_free = h->f->eng.now + h->f->hca_wqe;
		if (h->f->hca_msg)
			h->msg_free = h->f->eng.now + h->f->hca_msg;
		if (w->msg >= 0)
			fab_traffic_sent(h->f, w->msg, h->f->eng.now);
	}
	p->opcode = op;
	p->psn = qp->snd_psn;
	p->payload = (uint16_t)payload;
	p->wire = (uint16_t)hca_wire_bytes(qp, op, payload);
	p->msg = (uint32_t)w->msg;
	p->imm = w->wr.imm_data;
	if (qp->type == HCA_QPT_UD) {
		p->dlid = w->wr.ah.dlid;
		p->dqpn = w->wr.remote_qpn;
		p->va = w->wr.remote_qkey;	/* DETH Q_Key rides in va */
	}
	if (first)
		p->flags |= IB_PKT_FIRST;
	if (last)
		p->flags |= IB_PKT_LAST;
	if (w->wr.send_flags & HCA_SEND_SOLICITED)
		p->flags |= IB_PKT_SOLICITED;
	if (psn_diff(qp->snd_psn, qp->psn_hi) < 0)
		p->flags |= IB_PKT_RETRANS;
	/* The bytes: from the registered buffer (or the WR for inline data). */
	if (payload && (!(w->wr.send_flags & HCA_SEND_INLINE) || w->mr_bytes)) {
		const uint8_t *b = swqe_buf(w);

		p->data = b ? b + qp->seg_off : NULL;
	}
	switch (op) {
	case IB_OP_READ_REQUEST:
		/* A (re)issued READ asks for what is still missing. */
		p->va = w->wr.remote_addr + qp->seg_off;
		p->rkey = w->wr.rkey;
		p->dma_len = (uint32_t)(swqe_len(w) - qp->seg_off);
		p->flags |= IB_PKT_ACKREQ;
		qp->rd_resp_psn = qp->snd_psn;
		qp->snd_psn = psn_add(qp->snd_psn, p->dma_len ?
				      (p->dma_len + qp->mtu - 1) / qp->mtu : 1);
		qp->rd_outstanding++;
		if (qp->rd_outstanding > qp->st.max_rd_outstanding)
			qp->st.max_rd_outstanding = qp->rd_outstanding;
		qp->seg_off = swqe_len(w);
		break;
	case IB_OP_CMP_SWAP:
	case IB_OP_FETCH_ADD:
		p->va = w->wr.remote_addr;
		p->rkey = w->wr.rkey;
		p->atomic[0] = w->wr.compare_add;
		p->atomic[1] = w->wr.swap;
		p->flags |= IB_PKT_ACKREQ;
		qp->snd_psn = psn_add(qp->snd_psn, 1);
		qp->rd_outstanding++;
		if (qp->rd_outstanding > qp->st.max_rd_outstanding)
			qp->st.max_rd_outstanding = qp->rd_outstanding;
		qp->seg_off = swqe_len(w);
		break;
	default:
		if (op == IB_OP_WRITE_FIRST || op == IB_OP_WRITE_ONLY || op == IB_OP_WRITE_ONLY_IMM) {
			p->va = w->wr.remote_addr + qp->seg_off;
			p->rkey = w->wr.rkey;
			p->dma_len = (uint32_t)(swqe_len(w) - qp->seg_off);
		}
		/* the last packet, and every hca.ackreq_pkts-th of the message
		 * (counted from its first PSN: a resent packet asks again) */
		if (qp->type == HCA_QPT_RC &&
		    (last || ((psn_diff(p->psn, w->first_psn) + 1) & h->f->hca_ackreq_mask) == 0))
			p->flags |= IB_PKT_ACKREQ;
		qp->snd_psn = psn_add(qp->snd_psn, 1);
		qp->seg_off += payload;
		break;
	}
	if (qp->cc)
		qp->hca->cc->ops->req_sent(qp, p);
	qp->pkts_sent++;
	if (p->flags & IB_PKT_RETRANS)
		qp->st.pkts_retransmitted++;
	if (psn_diff(qp->snd_psn, qp->psn_hi) > 0)
		qp->psn_hi = qp->snd_psn;
	if (!last)
		return;
	/* The whole request is out. */
	w->state = SWQE_SENT;
	qp->sq_next++;		/* hca_take() then moves the port's hint on */
	qp->seg_off = 0;
	if (qp->type != HCA_QPT_RC) {
		/* UC/UD: complete when sent (IBA 10.7.2.5). */
		qp_req_complete(qp, w, HCA_WC_SUCCESS);
		retire(qp);
		return;
	}
	if (!qp->timer_at && ack_timeout(qp))
		hca_qp_arm_timer(qp, h->f->eng.now + ack_timeout(qp), false);
}

/* Which WQE in flight holds PSN psn; returns its index or sq_next. */
static uint32_t wqe_of_psn(struct hca_qp *qp, uint32_t psn)
{
	for (uint32_t i = qp->sq_head; i != qp->sq_next; i++) {
		struct hca_swqe *w = hca_swqe_at(qp, i);

		if (w->state != SWQE_DONE && w->started &&
		    psn_diff(psn, w->first_psn) >= 0 &&
		    psn_diff(psn, psn_add(w->first_psn, w->npsn)) < 0)
			return i;
	}
	return qp->sq_next;
}

/* Go-back-N: resend everything from PSN psn on (IBA 9.7.4.1.3-4). */
static void go_back(struct hca_qp *qp, uint32_t psn)
{
	uint32_t i = wqe_of_psn(qp, psn);

	if (i == qp->sq_next)
		return;		/* nothing in flight there: nothing to resend */
	for (uint32_t k = i; k != qp->sq_next; k++) {
		struct hca_swqe *w = hca_swqe_at(qp, k);

		if (w->state == SWQE_SENT && is_rd_atomic(w->wr.opcode))
			qp->rd_outstanding--;
		if (w->state != SWQE_DONE)
			w->state = SWQE_QUEUED;
		memset(&w->dma, 0, sizeof(w->dma));	/* resent bytes are read again */
	}
	struct hca_swqe *w = hca_swqe_at(qp, i);

	qp->sq_next = i;
	hca_hint_next(qp->hca);
	qp->snd_psn = psn;
	qp->seg_off = (uint64_t)(uint32_t)psn_diff(psn, w->first_psn) * qp->mtu;
	if (w->wr.opcode == HCA_WR_RDMA_READ)
		w->rd_rcvd = (uint32_t)qp->seg_off;
	else if (is_rd_atomic(w->wr.opcode))
		qp->seg_off = 0;
	SIM_LOG(SIM_LOG_HCA, qp->hca->f->eng.now, "qp %u go back to psn %u (wqe %u)",
		qp->qpn, psn, i);
	hca_qp_update_active(qp);
}

static void fail_oldest(struct hca_qp *qp, enum hca_wc_status st)
{
	if (qp->sq_head != qp->sq_next)
		qp_req_complete(qp, hca_swqe_at(qp, qp->sq_head), st);
	hca_qp_to_error(qp);
}

static void restart_timer(struct hca_qp *qp)
{
	bool outstanding = qp->sq_head != qp->sq_next;

	if (outstanding && ack_timeout(qp))
		hca_qp_arm_timer(qp, qp->hca->f->eng.now + ack_timeout(qp), false);
	else
		hca_qp_disarm_timer(qp);
}

/* Retire SEND/WRITE WQEs whose every PSN is before `upto` (exclusive). */
static bool ack_upto(struct hca_qp *qp, uint32_t upto)
{
	bool progress = false;

	for (uint32_t i = qp->sq_head; i != qp->sq_next; i++) {
		struct hca_swqe *w = hca_swqe_at(qp, i);

		if (w->state == SWQE_DONE)
			continue;
		if (psn_diff(psn_add(w->first_psn, w->npsn), upto) > 0)
			break;
		if (is_rd_atomic(w->wr.opcode))
			break;	/* only its response completes a READ/atomic */
		qp_req_complete(qp, w, HCA_WC_SUCCESS);
		progress = true;
	}
	if (psn_diff(upto, qp->una_psn) > 0) {
		qp->una_psn = upto;
		progress = true;
	}
	return progress;
}

/* The oldest READ/atomic WQE still in flight, if it is next to complete. */
static struct hca_swqe *pending_rd(struct hca_qp *qp)
{
	for (uint32_t i = qp->sq_head; i != qp->sq_next; i++) {
		struct hca_swqe *w = hca_swqe_at(qp, i);

		if (w->state == SWQE_DONE)
			continue;
		return is_rd_atomic(w->wr.opcode) && w->state == SWQE_SENT ? w : NULL;
	}
	return NULL;
}

static void read_response(struct hca_qp *qp, struct pkt *p)
{
	struct fab *f = qp->hca->f;
	struct hca_swqe *w;
	uint32_t expect;

	/* A response implicitly acknowledges every request before it. */
	ack_upto(qp, p->psn);
	w = pending_rd(qp);
	if (!w || w->wr.opcode != HCA_WR_RDMA_READ)
		return;		/* stale (a duplicate response): drop */
	expect = psn_add(w->first_psn, w->rd_rcvd / qp->mtu);
	if (p->psn != expect) {
		int32_t ahead = psn_diff(p->psn, expect);

		/* ahead of a gap: held where the HCA takes responses out of
		 * order (qp_ooo.c), else lost: the ACK timer recovers */
		if (ahead > 0 && fab_ooo(&f->p) &&
		    qp_ooo_hold(qp, &qp->ooo_rsp, p, (uint32_t)ahead, w->mem))
			return;
		qp->st.dup_pkts_rcvd++;
		return;
	}
	if (p->payload) {
		uint8_t *dst = swqe_buf(w);

		if (dst && p->data)
			memcpy(dst + w->rd_rcvd, p->data, p->payload);
		if (qp->ooo_rsp && qp->held_vis) {	/* placed as it landed (qp_ooo.c) */
			if (qp->held_vis > w->rd_visible)
				w->rd_visible = qp->held_vis;
		} else {
			w->rd_visible = hca_dma_write(qp->hca, f->eng.now, w->mem, p->payload);
		}
	}
	w->rd_rcvd += p->payload;
	qp->una_psn = psn_add(p->psn, 1);
	if (p->opcode == IB_OP_READ_RESP_LAST || p->opcode == IB_OP_READ_RESP_ONLY) {
		qp->rd_outstanding--;
		if (w->msg >= 0)
			fab_traffic_delivered(f, w->msg, w->rd_visible > f->eng.now ?
					      w->rd_visible : f->eng.now);
		qp_req_complete(qp, w, HCA_WC_SUCCESS);
	}
}

static void atomic_ack(struct hca_qp *qp, struct pkt *p)
{
	struct fab *f = qp->hca->f;
	struct hca_swqe *w;

	ack_upto(qp, p->psn);
	w = pending_rd(qp);
	if (w && fab_ooo(&f->p) && psn_diff(p->psn, w->first_psn) > 0) {
		/* ahead of the READ or atomic before it: held (qp_ooo.c) */
		qp_ooo_hold(qp, &qp->ooo_rsp, p, (uint32_t)psn_diff(p->psn, w->first_psn), w->mem);
		return;
	}
	if (!w || w->wr.opcode == HCA_WR_RDMA_READ || w->first_psn != p->psn)
		return;
	uint8_t *dst = swqe_buf(w);

	if (dst)
		memcpy(dst, &p->atomic[0], 8);
	w->rd_visible = hca_dma_write(qp->hca, f->eng.now, w->mem, 8);
	qp->una_psn = psn_add(p->psn, 1);
	qp->rd_outstanding--;
	if (w->msg >= 0)
		fab_traffic_delivered(f, w->msg, w->rd_visible);
	qp_req_complete(qp, w, HCA_WC_SUCCESS);
}

/* The responses held ahead of a gap (qp_ooo.c) that are now next. */
static void comp_drain(struct hca_qp *qp)
{
	struct pkt h;

	while (qp->ooo_rsp && qp->state != HCA_QPS_ERR) {
		struct hca_swqe *w = pending_rd(qp);
		uint32_t want;

		if (!w)
			return;
		want = w->wr.opcode == HCA_WR_RDMA_READ ?
		       psn_add(w->first_psn, w->rd_rcvd / qp->mtu) : w->first_psn;
		if (!qp_ooo_take(qp->ooo_rsp, want, &h))
			return;
		if (h.opcode == IB_OP_ATOMIC_ACK) {
			atomic_ack(qp, &h);
		} else {
			qp->held_vis = h.t_tail;
			read_response(qp, &h);
			qp->held_vis = 0;
		}
	}
}

void qp_comp_receive(struct hca_qp *qp, struct pkt *p)
{
	struct fab *f = qp->hca->f;

	if (qp->type != HCA_QPT_RC || qp->state == HCA_QPS_ERR)
		return;
	switch (p->opcode) {
	case IB_OP_READ_RESP_FIRST: case IB_OP_READ_RESP_MIDDLE:
	case IB_OP_READ_RESP_LAST: case IB_OP_READ_RESP_ONLY:
		read_response(qp, p);
		comp_drain(qp);
		break;
	case IB_OP_ATOMIC_ACK:
		atomic_ack(qp, p);
		comp_drain(qp);
		break;
	case IB_OP_ACK:
		switch (p->aeth & 0xe0) {
		case IB_AETH_ACK:
			/* progress restores the retry budgets */
			if (ack_upto(qp, psn_add(p->psn, 1))) {
				if (qp->retry_left != qp->retry_cnt)
					qp->st.recovered_ps = f->eng.now;	/* back after a retry */
				qp->retry_left = qp->retry_cnt;
				qp->rnr_left = qp->rnr_retry;
			}
			break;
		case IB_AETH_RNR_NAK:
			ack_upto(qp, p->psn);
			qp->st.rnr_naks_rcvd++;
			if (qp->rnr_retry != 7) {
				if (!qp->rnr_left) {
					fail_oldest(qp, HCA_WC_RNR_RETRY_EXC_ERR);
					return;
				}
				qp->rnr_left--;
			}
			qp->rnr_wait = true;
			qp->una_psn = p->psn;
			hca_qp_update_active(qp);
			hca_qp_arm_timer(qp, f->eng.now + rnr_delay(p->aeth & 31), true);
			retire(qp);
			return;
		default:	/* NAKs */
			/* a NAK acknowledges what came before its PSN: progress
			 * restores the retry budgets before this NAK spends one
			 * (IBA 9.7.5: the retry counts bound attempts without
			 * progress) */
			if (ack_upto(qp, p->psn)) {
				qp->retry_left = qp->retry_cnt;
				qp->rnr_left = qp->rnr_retry;
			}
			if (p->aeth == IB_AETH_NAK_SEQ) {
				qp->st.seq_naks_rcvd++;
				if (!qp->retry_left) {
					fail_oldest(qp, HCA_WC_RETRY_EXC_ERR);
					return;
				}
				qp->retry_left--;
				go_back(qp, p->psn);
				break;
			}
			{
				uint32_t i = wqe_of_psn(qp, p->psn);
				enum hca_wc_status st =
					p->aeth == IB_AETH_NAK_REM_ACCESS ? HCA_WC_REM_ACCESS_ERR :
					p->aeth == IB_AETH_NAK_REM_OP ? HCA_WC_REM_OP_ERR :
					HCA_WC_REM_INV_REQ_ERR;

				if (i != qp->sq_next)
					qp_req_complete(qp, hca_swqe_at(qp, i), st);
				hca_qp_to_error(qp);
				return;
			}
		}
		break;
	default:
		return;
	}
	retire(qp);
	restart_timer(qp);
	hca_qp_update_active(qp);
}

void qp_req_timer(struct hca_qp *qp)
{
	if (qp->state != HCA_QPS_RTS)
		return;
	if (qp->timer_rnr) {
		qp->rnr_wait = false;
		go_back(qp, qp->una_psn);
		restart_timer(qp);
		return;
	}
	if (qp->sq_head == qp->sq_next)
		return;		/* nothing outstanding */
	qp->st.timeouts++;
	if (!qp->retry_left) {
		fail_oldest(qp, HCA_WC_RETRY_EXC_ERR);
		return;
	}
	qp->retry_left--;
	SIM_LOG(SIM_LOG_HCA, qp->hca->f->eng.now, "qp %u ACK timeout, %u retries left",
		qp->qpn, qp->retry_left);
	go_back(qp, qp->una_psn);
	restart_timer(qp);
}
