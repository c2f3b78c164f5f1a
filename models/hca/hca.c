/* SPDX-License-Identifier: MIT */
/*
 * hca.c - a channel adapter: verbs objects (IBA ch. 10-11), the port's
 * scheduling across queue pairs, timers, and the dispatch of arriving
 * packets to the requester/completer (qp_req.c) or responder (qp_resp.c).
 *
 * Scheduling: a QP with something to send (a response it owes, or a
 * request packet it may start) sits in the ring of its VL; the port takes
 * packets round-robin across the ring, one packet per turn, responses
 * before requests within a QP, and VL arbitration chooses among VLs as on
 * any IB port. Packets are built only when the transmitter takes them, so
 * per-QP state, not per-packet allocation, holds the work.
 *
 * Timers (local ACK timeout, RNR wait, a work request becoming ready) sit
 * in a small per-HCA heap with one engine event for its top; cancellation
 * is lazy (a per-QP generation). Receiving is an infinitely fast sink, as
 * in the foundation: blocks are freed when a packet's tail arrives.
 * Asynchronous events: an SRQ's limit reached and a QP's last WQE
 * (IBA 11.6.3), to a hook; no port, CQ or QP error events.
 * Left out: memory windows, reliable datagram, XRC, multicast, APM.
 */
#include "models/hca/hca_int.h"
#include "models/hca/hca_node.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_log.h"

const char *const hca_qp_state_names[] = {
	[HCA_QPS_RESET] = "RESET", [HCA_QPS_INIT] = "INIT", [HCA_QPS_RTR] = "RTR",
	[HCA_QPS_RTS] = "RTS", [HCA_QPS_SQD] = "SQD", [HCA_QPS_SQE] = "SQE",
	[HCA_QPS_ERR] = "ERR",
};

const char *hca_wc_status_str(enum hca_wc_status s)
{
	switch (s) {
	case HCA_WC_SUCCESS: return "success";
	case HCA_WC_LOC_LEN_ERR: return "local length error";
	case HCA_WC_LOC_QP_OP_ERR: return "local QP operation error";
	case HCA_WC_LOC_PROT_ERR: return "local protection error";
	case HCA_WC_WR_FLUSH_ERR: return "work request flushed";
	case HCA_WC_BAD_RESP_ERR: return "bad response";
	case HCA_WC_LOC_ACCESS_ERR: return "local access error";
	case HCA_WC_REM_INV_REQ_ERR: return "remote invalid request";
	case HCA_WC_REM_ACCESS_ERR: return "remote access error";
	case HCA_WC_REM_OP_ERR: return "remote operation error";
	case HCA_WC_RETRY_EXC_ERR: return "transport retry counter exceeded";
	case HCA_WC_RNR_RETRY_EXC_ERR: return "RNR retry counter exceeded";
	case HCA_WC_GENERAL_ERR: return "general error";
	}
	return "unknown status";
}

/* ---- the host behind the HCA (models/host) ----------------------------- */

/* PCIe serialisation of `bytes` of payload on the HCA's link, TLPs included. */
static sim_time_t pcie_ser(const struct host *hs, uint64_t bytes)
{
	return host_pcie_ser_ps(hs->p, host_pcie_wire_bytes(hs->p, bytes));
}

/*
 * Payload bytes [start, end) of a `len`-byte message: when are they in the
 * HCA? The HCA reads ahead of the wire, as its many outstanding reads let
 * it: a chunk of hca.dma_window packets is booked on the PCIe pipe at once
 * (host_dma_read), and the next one while half of it is still to be sent,
 * so the read latency hides behind the wire when PCIe keeps up. Within a
 * chunk the bytes stream in at the pipe's rate: the packet ending at `end`
 * is in `ser(hi - lo) - ser(end - lo)` before the chunk's last byte.
 * Retransmission (go-back-N) rewinds below `lo` and reads again.
 */
sim_time_t hca_dma_ready(struct hca *h, struct hca_dma *d, enum hca_mem mem, uint64_t len,
			 uint64_t start, uint64_t end, uint32_t mtu)
{
	const struct fab_params *fp = &h->f->p;
	sim_time_t now = h->f->eng.now;
	uint64_t chunk = (uint64_t)fp->hca_dma_window * mtu;

	if (!h->host_on || end <= start)
		return 0;
	if (end > d->hi && d->nhi > d->nlo && start >= d->nlo && end <= d->nhi) {
		d->lo = d->nlo;
		d->hi = d->nhi;
		d->done = d->ndone;
		d->nlo = d->nhi = 0;
	}
	if (start < d->lo || end > d->hi) {
		d->lo = start;
		d->hi = start + chunk < len ? start + chunk : len;
		d->done = host_dma_read(&h->host, now, mem, (uint32_t)(d->hi - d->lo));
		d->nlo = d->nhi = 0;
	}
	if (d->nhi <= d->nlo && d->hi < len && d->hi - end < chunk / 2) {
		d->nlo = d->hi;
		d->nhi = d->hi + chunk < len ? d->hi + chunk : len;
		d->ndone = host_dma_read(&h->host, now, mem, (uint32_t)(d->nhi - d->nlo));
	}
	return d->done - (pcie_ser(&h->host, d->hi - d->lo) - pcie_ser(&h->host, end - d->lo));
}

sim_time_t hca_dma_write(struct hca *h, sim_time_t t, enum hca_mem mem, uint32_t bytes)
{
	if (!h->host_on || !bytes)
		return t;
	return host_dma_write(&h->host, t, mem, bytes);
}

sim_time_t hca_cqe_time(struct hca *h, sim_time_t t, sim_time_t after)
{
	if (!h->host_on)
		return t > after ? t : after;
	return host_cqe(&h->host, t, after);
}

/* ---- memory regions ----------------------------------------------------- */

/* Keys: index in the table times 256 plus a tag, so a made-up key rarely hits. */
#define MR_KEY_TAG 0x5a

struct hca_mr *hca_reg_mr(struct hca *h, void *buf, uint64_t addr, uint64_t length,
			  uint32_t access, enum hca_mem mem)
{
	if (!h || (access & ~0xfu))
		return NULL;
	/* IBA 10.6.3.1: remote write/atomic need local write. */
	if ((access & (HCA_ACCESS_REMOTE_WRITE | HCA_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & HCA_ACCESS_LOCAL_WRITE))
		return NULL;
	uint32_t k = h->nmrs / HCA_MR_CHUNK;

	if (h->nmrs % HCA_MR_CHUNK == 0) {	/* a new chunk */
		if (k == h->mr_chunks_cap) {
			uint32_t cap = h->mr_chunks_cap ? h->mr_chunks_cap * 2 : 4;
			struct hca_mr **n = realloc(h->mr_chunks, cap * sizeof(*n));

			if (!n)
				return NULL;
			h->mr_chunks = n;
			h->mr_chunks_cap = cap;
		}
		h->mr_chunks[k] = calloc(HCA_MR_CHUNK, sizeof(struct hca_mr));
		if (!h->mr_chunks[k])
			return NULL;
		h->mr0 = h->mr_chunks[0];
	}
	struct hca_mr *mr = &h->mr_chunks[k][h->nmrs % HCA_MR_CHUNK];

	mr->hca = h;
	mr->lkey = mr->rkey = h->nmrs * 256u + MR_KEY_TAG;
	mr->addr = addr;
	mr->length = length;
	mr->access = access;
	mr->mem = mem;
	mr->buf = buf;
	mr->valid = true;
	h->nmrs++;
	return mr;
}

int hca_dereg_mr(struct hca_mr *mr)
{
	if (!mr || !mr->valid)
		return -EINVAL;
	mr->valid = false;	/* the slot stays: later keys must not alias it */
	return 0;
}

struct hca_mr *hca_mr_find(struct hca *h, uint32_t key)
{
	uint32_t i = key / 256u;

	struct hca_mr *mr;

	if ((key & 0xff) != MR_KEY_TAG || i >= h->nmrs)
		return NULL;
	mr = i < HCA_MR_CHUNK ? &h->mr0[i] : &h->mr_chunks[i / HCA_MR_CHUNK][i % HCA_MR_CHUNK];
	return mr->valid ? mr : NULL;
}

int hca_mr_check(const struct hca_mr *mr, uint64_t va, uint64_t len, uint32_t access)
{
	if (!mr || (mr->access & access) != access)
		return -1;
	if (va < mr->addr || len > mr->length || va - mr->addr > mr->length - len)
		return -1;
	return 0;
}

void *hca_mr_ptr(const struct hca_mr *mr, uint64_t va)
{
	return mr && mr->buf ? (char *)mr->buf + (va - mr->addr) : NULL;
}

/* ---- completion queues and shared receive queues --------------------------- */

/* The HCA owns its CQs and SRQs (as a device context does): what is left
 * when it goes away is freed with it. Returns the slot or UINT32_MAX. */
static uint32_t own(struct hca *h, void *obj, bool cq)
{
	if (h->nobjs == h->objs_cap) {
		uint32_t cap = h->objs_cap ? h->objs_cap * 2 : 16;
		struct hca_obj *n = realloc(h->objs, cap * sizeof(*n));

		if (!n)
			return UINT32_MAX;
		h->objs = n;
		h->objs_cap = cap;
	}
	h->objs[h->nobjs] = (struct hca_obj){ obj, cq };
	return h->nobjs++;
}

#define HCA_CQ_ALLOC_MIN 16u	/* a new CQ's ring, before it fills */

struct hca_cq *hca_create_cq(struct hca *h, uint32_t cqe, hca_cq_notify_fn fn, void *ctx)
{
	struct hca_cq *cq;

	if (!h || !cqe || cqe > (1u << 22))
		return NULL;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	/* The ring grows as completions wait in it: a CQ of 4,096 that a
	 * program drains at every completion holds one, and 1,024 hosts'
	 * CQs of 256 each held 12 MB. */
	cq->alloc = cqe < HCA_CQ_ALLOC_MIN ? cqe : HCA_CQ_ALLOC_MIN;
	cq->ring = calloc(cq->alloc, sizeof(*cq->ring));
	if (!cq->ring) {
		free(cq);
		return NULL;
	}
	cq->hca = h;
	cq->cap = cqe;
	cq->fn = fn;
	cq->ctx = ctx;
	cq->slot = own(h, cq, true);
	if (cq->slot == UINT32_MAX) {
		free(cq->ring);
		free(cq);
		return NULL;
	}
	return cq;
}

void hca_destroy_cq(struct hca_cq *cq)
{
	if (!cq)
		return;
	cq->hca->objs[cq->slot].p = NULL;
	free(cq->ring);
	free(cq);
}

void hca_set_place_hook(struct hca *h, hca_place_fn fn, void *ctx)
{
	if (h) {
		h->place_fn = fn;
		h->place_ctx = ctx;
	}
}

void hca_cq_set_notify(struct hca_cq *cq, hca_cq_notify_fn fn, void *ctx)
{
	if (!cq)
		return;
	cq->fn = fn;
	cq->ctx = ctx;
}

/* Double the CQ's ring (up to its depth), its entries in order from 0. */
static int cq_grow(struct hca_cq *cq)
{
	uint32_t alloc = cq->alloc > cq->cap / 2 ? cq->cap : 2 * cq->alloc;
	struct hca_wc *v = malloc((size_t)alloc * sizeof(*v));

	if (!v)
		return -1;
	for (uint32_t k = 0; k < cq->n; k++)
		v[k] = cq->ring[(cq->head + k) % cq->alloc];
	free(cq->ring);
	cq->ring = v;
	cq->alloc = alloc;
	cq->head = 0;
	return 0;
}

void hca_cq_push(struct hca_cq *cq, const struct hca_wc *wc)
{
	if (!cq)
		return;
	if (cq->n == cq->cap) {
		/* IBA 11.4.2.1: a CQ overrun is an error; the CQE is lost. */
		cq->overflow = true;
		return;
	}
	if (cq->n == cq->alloc && cq_grow(cq)) {
		cq->overflow = true;	/* no memory for it: lost, as an overrun */
		return;
	}
	/* head and n are below alloc: a wrap, not a division (a 32-bit div
	 * per CQE showed in bench/run's B1 profile) */
	uint32_t at = cq->head + cq->n++;

	cq->ring[at >= cq->alloc ? at - cq->alloc : at] = *wc;
	if (cq->fn)
		cq->fn(cq, cq->ctx);
}

int hca_poll_cq(struct hca_cq *cq, int n, struct hca_wc *wc)
{
	int k = 0;

	if (!cq || n < 0 || (n && !wc))
		return -EINVAL;
	while (k < n && cq->n) {
		wc[k++] = cq->ring[cq->head];
		cq->head = cq->head + 1 == cq->alloc ? 0 : cq->head + 1;
		cq->n--;
	}
	if (!k && cq->overflow) {
		cq->overflow = false;
		return -EOVERFLOW;
	}
	return k;
}

struct hca_srq *hca_create_srq(struct hca *h, uint32_t max_wr)
{
	struct hca_srq *s;

	if (!h || !max_wr || max_wr > HCA_MAX_QP_WR)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->ring = calloc(max_wr, sizeof(*s->ring));
	if (!s->ring) {
		free(s);
		return NULL;
	}
	s->hca = h;
	s->cap = max_wr;
	s->slot = own(h, s, false);
	if (s->slot == UINT32_MAX) {
		free(s->ring);
		free(s);
		return NULL;
	}
	return s;
}

int hca_srq_set_limit(struct hca_srq *srq, uint32_t limit)
{
	if (!srq || limit > srq->cap)
		return -EINVAL;
	srq->limit = limit;
	return 0;
}

uint32_t hca_srq_limit(const struct hca_srq *srq)
{
	return srq ? srq->limit : 0;
}

void hca_set_async_hook(struct hca *h, hca_async_fn fn, void *ctx)
{
	h->async_fn = fn;
	h->async_ctx = ctx;
}

static void async_event(struct hca *h, enum hca_async_event ev, void *obj)
{
	if (h->async_fn)
		h->async_fn(h, ev, obj, h->async_ctx);
}

/*
 * An RC responder's class C error (the NAK has just been built): the QP
 * goes to Error, its work requests flushed, and its owner hears of it
 * (rxe's responder does the same, "Class C"; the events are
 * ibv_get_async_event(3)'s IBV_EVENT_QP_ACCESS_ERR and
 * IBV_EVENT_QP_REQ_ERR).
 */
void hca_qp_resp_fatal(struct hca_qp *qp, bool access)
{
	if (qp->state == HCA_QPS_ERR)
		return;
	hca_qp_to_error(qp);
	async_event(qp->hca, access ? HCA_EV_QP_ACCESS_ERR : HCA_EV_QP_REQ_ERR, qp);
}

void hca_qp_comm_est(struct hca_qp *qp)
{
	if (qp->comm_est)
		return;
	qp->comm_est = true;
	async_event(qp->hca, HCA_EV_COMM_EST, qp);
}

void hca_port_changed(struct hca *h, bool up)
{
	if (h)
		async_event(h, up ? HCA_EV_PORT_ACTIVE : HCA_EV_PORT_ERR, NULL);
}

bool hca_port_active(const struct hca *h)
{
	return h && h->port && !h->port->down;
}

int hca_post_srq_recv(struct hca_srq *srq, const struct hca_recv_wr *wr)
{
	if (!srq || !wr)
		return -EINVAL;
	if (srq->n == srq->cap)
		return -ENOMEM;
	srq->ring[(srq->head + srq->n++) % srq->cap] = *wr;
	return 0;
}

/* ---- queue pairs ---------------------------------------------------------- */

/* Room for one more WQE in the send queue's storage: double it when full
 * (entries keep their free-running index, so each moves to its place
 * under the wider mask). The verbs limit, sq_cap, is checked by the
 * caller; this only spares a deep, little-used queue its memory. */
static int sq_reserve(struct hca_qp *qp)
{
	uint32_t n = qp->sq_mask + 1;

	if (qp->sq_tail - qp->sq_head < n)
		return 0;
	struct hca_swqe *v = aligned_alloc(64, 2 * (size_t)n * sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (uint32_t i = qp->sq_head; i != qp->sq_tail; i++)
		v[i & (2 * n - 1)] = qp->sq[i & qp->sq_mask];
	free(qp->sq);
	qp->sq = v;
	qp->sq_mask = 2 * n - 1;
	hca_hint_next(qp->hca);		/* the hinted WQE may have moved */
	return 0;
}

/* The node's ports keep the QP table for the look-ahead (port.rx_qps). */
static void rx_qps_sync(struct hca *h)
{
	for (int k = 0; k <= h->n->nports; k++)
		if (h->n->ports[k]) {
			h->n->ports[k]->rx_qps = h->qps;
			h->n->ports[k]->rx_nqps = h->nqps;
		}
}

uint32_t hca_reserve_qpn(struct hca *h)
{
	if (!h)
		return 0;
	if (h->nqps == h->qps_cap) {
		uint32_t cap = h->qps_cap ? h->qps_cap * 2 : 16;
		struct hca_qp **n = realloc(h->qps, cap * sizeof(*n));

		if (!n)
			return 0;
		h->qps = n;
		h->qps_cap = cap;
		if (!h->nqps)	/* QP0 and QP1 are the SMI and GSI (IBA 3.9.8) */
			h->qps[h->nqps++] = NULL, h->qps[h->nqps++] = NULL;
	}
	h->qps[h->nqps++] = NULL;
	rx_qps_sync(h);
	return h->nqps - 1;
}

struct hca_qp *hca_create_qp(struct hca *h, const struct hca_qp_init_attr *a)
{
	uint32_t qpn;
	struct hca_qp *qp;

	if (!h || !a)
		return NULL;
	qpn = hca_reserve_qpn(h);
	if (!qpn)
		return NULL;
	qp = hca_create_qp_at(h, a, qpn);
	if (!qp && qpn == h->nqps - 1) {
		h->nqps--;	/* the number goes back: nothing took it */
		rx_qps_sync(h);
	}
	return qp;
}

struct hca_qp *hca_create_qp_at(struct hca *h, const struct hca_qp_init_attr *a, uint32_t qpn)
{
	struct hca_qp *qp;

	if (!h || !a || !a->send_cq || !a->recv_cq || qpn < 2 || qpn >= h->nqps || h->qps[qpn])
		return NULL;
	if (a->qp_type != HCA_QPT_RC && a->qp_type != HCA_QPT_UC && a->qp_type != HCA_QPT_UD)
		return NULL;
	if (!a->cap.max_send_wr || a->cap.max_send_wr > HCA_MAX_QP_WR ||
	    a->cap.max_recv_wr > HCA_MAX_QP_WR || (!a->srq && !a->cap.max_recv_wr))
		return NULL;
	/* on a cache line: struct hca_qp groups its fields by line */
	qp = aligned_alloc(64, (sizeof(*qp) + 63) & ~(size_t)63);
	if (!qp)
		return NULL;
	memset(qp, 0, sizeof(*qp));
	qp->sq_cap = a->cap.max_send_wr;
	qp->sq_mask = 0;	/* up to 16 entries at first; more with use (sq_reserve) */
	while (qp->sq_mask + 1 < qp->sq_cap && qp->sq_mask < 15)
		qp->sq_mask = 2 * qp->sq_mask + 1;
	/* on line boundaries: a packet reads a WQE's first line (hca_int.h) */
	size_t sq_size = ((size_t)qp->sq_mask + 1) * sizeof(*qp->sq);

	qp->sq = aligned_alloc(64, sq_size);
	if (qp->sq)
		memset(qp->sq, 0, sq_size);
	qp->rq_cap = a->srq ? 0 : a->cap.max_recv_wr;
	qp->rq_mask = 0;	/* like the send queue: 16 entries at first (rq_reserve) */
	while (qp->rq_mask + 1 < qp->rq_cap && qp->rq_mask < 15)
		qp->rq_mask = 2 * qp->rq_mask + 1;
	qp->rq = qp->rq_cap ? calloc((size_t)qp->rq_mask + 1, sizeof(*qp->rq)) : NULL;
	qp->rsp_cap = 16;
	qp->rsp = calloc(qp->rsp_cap, sizeof(*qp->rsp));
	qp->cc = h->cc && a->qp_type != HCA_QPT_UD ? h->cc->ops->qp_new(h) : NULL;
	if (!qp->sq || (qp->rq_cap && !qp->rq) || !qp->rsp ||
	    (h->cc && a->qp_type != HCA_QPT_UD && !qp->cc)) {
		free(qp->sq);
		free(qp->rq);
		free(qp->rsp);
		free(qp->cc);
		free(qp);
		return NULL;
	}
	qp->hca = h;
	qp->qpn = qpn;
	qp->type = a->qp_type;
	qp->state = HCA_QPS_RESET;
	qp->scq = a->send_cq;
	qp->rcq = a->recv_cq;
	qp->srq = a->srq;
	qp->sq_sig_all = a->sq_sig_all;
	qp->cap = a->cap;
	qp->mtu = h->f->p.mtu;
	qp->max_rd_atomic = qp->max_dest_rd_atomic = 1;
	qp->access = HCA_ACCESS_REMOTE_WRITE | HCA_ACCESS_REMOTE_READ | HCA_ACCESS_REMOTE_ATOMIC;
	/* its transport: the fabric's, or another for RC QPs (TCP) */
	const struct hca_transport_ops *t = qp->type == HCA_QPT_RC && h->f->rc_transport ?
					    h->f->rc_transport : h->f->transport;

	if (t->create(qp)) {
		free(qp->sq);
		free(qp->rq);
		free(qp->rsp);
		free(qp);
		return NULL;
	}
	if (qp->qpn - 2 < HCA_QP_NEAR)
		h->qp_near[qp->qpn - 2] = qp;
	h->qps[qpn] = qp;
	return qp;
}

bool hca_qp_idle(const struct hca_qp *qp)
{
	return qp->sq_head == qp->sq_tail && qp->una_psn == qp->snd_psn && !qp->timer_at &&
	       !qp->rd_outstanding && !qp->rsp_n && !qp->rq_n && !qp->active && !qp->recv_active &&
	       !qp->wait_at && (!qp->cc || qp->hca->cc->ops->qp_idle(qp));
}

uint32_t hca_qp_num(const struct hca_qp *qp)
{
	return qp ? qp->qpn : 0;
}

enum hca_qp_state hca_qp_state(const struct hca_qp *qp)
{
	return qp->state;
}

void hca_qp_used(const struct hca_qp *qp, uint32_t *sq, uint32_t *rq)
{
	*sq = qp->sq_tail - qp->sq_head;
	*rq = qp->srq ? 0 : qp->rq_n;
}

const struct hca_qp_stats *hca_qp_stats(struct hca_qp *qp)
{
	qp->st.pkts_sent = qp->pkts_sent;	/* counted on the requester's line */
	return &qp->st;
}

void hca_qp_stats_add(struct hca_qp_stats *sum, const struct hca_qp_stats *s)
{
	sum->pkts_sent += s->pkts_sent;
	sum->pkts_retransmitted += s->pkts_retransmitted;
	sum->acks_sent += s->acks_sent;
	sum->naks_sent += s->naks_sent;
	sum->rnr_naks_sent += s->rnr_naks_sent;
	sum->rnr_naks_rcvd += s->rnr_naks_rcvd;
	sum->timeouts += s->timeouts;
	sum->seq_naks_rcvd += s->seq_naks_rcvd;
	sum->dup_pkts_rcvd += s->dup_pkts_rcvd;
	sum->pkts_dropped_uc += s->pkts_dropped_uc;
	sum->ooo_held += s->ooo_held;
	if (s->recovered_ps > sum->recovered_ps)	/* the latest */
		sum->recovered_ps = s->recovered_ps;
	if (s->max_rd_outstanding > sum->max_rd_outstanding)
		sum->max_rd_outstanding = s->max_rd_outstanding;
	if (s->max_rd_responding > sum->max_rd_responding)
		sum->max_rd_responding = s->max_rd_responding;
	hca_flow_paths_add(&sum->paths, s);
}

void hca_flow_paths_add(struct fab_flow_paths *acc, const struct hca_qp_stats *s)
{
	uint64_t n = 0;

	for (int w = 0; w < 4; w++)
		n += (uint64_t)__builtin_popcountll(s->path_bits[w]);
	acc->flows += s->paths.flows + (n > 0);
	acc->paths += s->paths.paths + n;
	acc->spread += s->paths.spread + (n > 1);
	if (s->paths.max > acc->max)
		acc->max = s->paths.max;
	if (n > acc->max)
		acc->max = n;
}

static void ring_remove(struct hca_qp *qp);

int hca_destroy_qp(struct hca_qp *qp)
{
	struct hca *h;

	if (!qp)
		return -EINVAL;
	h = qp->hca;
	if (qp->active)
		ring_remove(qp);
	hca_qp_stats_add(&h->gone, hca_qp_stats(qp));
	h->qps[qp->qpn] = NULL;
	if (qp->qpn - 2 < HCA_QP_NEAR)
		h->qp_near[qp->qpn - 2] = NULL;
	qp->xport->ops->destroy(qp);
	free(qp->sq);
	free(qp->rq);
	free(qp->rsp);
	free(qp->cc);
	free(qp);
	return 0;
}

/* IBA 10.3.1 (Figure 124): the transitions modify_qp accepts. */
static bool transition_ok(enum hca_qp_state from, enum hca_qp_state to)
{
	if (to == HCA_QPS_RESET || to == HCA_QPS_ERR)
		return true;
	switch (from) {
	case HCA_QPS_RESET: return to == HCA_QPS_INIT;
	case HCA_QPS_INIT: return to == HCA_QPS_INIT || to == HCA_QPS_RTR;
	case HCA_QPS_RTR: return to == HCA_QPS_RTS;
	case HCA_QPS_RTS: return to == HCA_QPS_RTS || to == HCA_QPS_SQD;
	case HCA_QPS_SQD: return to == HCA_QPS_RTS || to == HCA_QPS_SQD;
	case HCA_QPS_SQE: return to == HCA_QPS_RTS;
	default: return false;
	}
}

static void qp_reset(struct hca_qp *qp)
{
	if (qp->active)
		ring_remove(qp);
	qp->sq_head = qp->sq_next = qp->sq_tail = 0;
	qp->seg_off = 0;
	qp->rq_head = qp->rq_n = 0;
	qp->rsp_head = qp->rsp_n = 0;
	qp->rd_outstanding = qp->rd_responding = 0;
	qp->recv_active = qp->rnr_wait = qp->uc_drop = false;
	qp->timer_at = 0;
	qp_ooo_flush(qp->ooo_req);
	qp_ooo_flush(qp->ooo_rsp);
	qp->ooo_waiting = false;
}

int hca_modify_qp(struct hca_qp *qp, const struct hca_qp_attr *at, uint32_t mask)
{
	if (!qp || !at)
		return -EINVAL;
	if (mask & HCA_QP_STATE) {
		if (!transition_ok(qp->state, at->qp_state))
			return -EINVAL;
		/* RTR needs the path (RC/UC) and RTS the requester's timers */
		if (at->qp_state == HCA_QPS_RTR && qp->type != HCA_QPT_UD &&
		    (mask & (HCA_QP_AV | HCA_QP_DEST_QPN | HCA_QP_RQ_PSN)) !=
		    (HCA_QP_AV | HCA_QP_DEST_QPN | HCA_QP_RQ_PSN))
			return -EINVAL;
		if (at->qp_state == HCA_QPS_RTS && qp->state == HCA_QPS_RTR &&
		    !(mask & HCA_QP_SQ_PSN))
			return -EINVAL;
	}
	if (mask & HCA_QP_PATH_MTU) {
		uint32_t m = at->path_mtu;

		if (m != 256 && m != 512 && m != 1024 && m != 2048 && m != 4096)
			return -EINVAL;
		qp->mtu = m < qp->hca->f->p.mtu ? m : qp->hca->f->p.mtu;
	}
	if (mask & HCA_QP_AV) {
		if (at->sl >= FAB_NSL)
			return -EINVAL;
		qp->dlid = at->dlid;
		qp->sl = at->sl;
	}
	if ((mask & HCA_QP_TIMEOUT) && at->timeout > 31)
		return -EINVAL;
	if (((mask & HCA_QP_RETRY_CNT) && at->retry_cnt > 7) ||
	    ((mask & HCA_QP_RNR_RETRY) && at->rnr_retry > 7) ||
	    ((mask & HCA_QP_MIN_RNR_TIMER) && at->min_rnr_timer > 31))
		return -EINVAL;
	if (mask & HCA_QP_DEST_QPN)
		qp->dest_qpn = at->dest_qp_num & HCA_PSN_MASK;
	if (mask & HCA_QP_RQ_PSN)
		qp->epsn = at->rq_psn & HCA_PSN_MASK;
	if (mask & HCA_QP_SQ_PSN)
		qp->snd_psn = qp->una_psn = qp->psn_hi = at->sq_psn & HCA_PSN_MASK;
	if (mask & HCA_QP_TIMEOUT)
		qp->timeout = at->timeout;
	if (mask & HCA_QP_RETRY_CNT)
		qp->retry_cnt = qp->retry_left = at->retry_cnt;
	if (mask & HCA_QP_RNR_RETRY)
		qp->rnr_retry = qp->rnr_left = at->rnr_retry;
	if (mask & HCA_QP_MIN_RNR_TIMER)
		qp->min_rnr_timer = at->min_rnr_timer;
	if (mask & HCA_QP_MAX_QP_RD_ATOMIC)
		qp->max_rd_atomic = at->max_rd_atomic ? at->max_rd_atomic : 1;
	if (mask & HCA_QP_MAX_DEST_RD_ATOMIC)
		qp->max_dest_rd_atomic = at->max_dest_rd_atomic;
	if (mask & HCA_QP_QKEY)
		qp->qkey = at->qkey;
	if (mask & HCA_QP_ACCESS_FLAGS)
		qp->access = at->access & (HCA_ACCESS_REMOTE_WRITE | HCA_ACCESS_REMOTE_READ |
					   HCA_ACCESS_REMOTE_ATOMIC);
	qp->vl = qp->hca->f->p.sl2vl[qp->sl];
	if (mask & HCA_QP_STATE) {
		enum hca_qp_state to = at->qp_state;

		if (to == HCA_QPS_RESET)
			qp_reset(qp);
		if (to == HCA_QPS_ERR && qp->state != HCA_QPS_ERR) {
			hca_qp_to_error(qp);
			return 0;
		}
		qp->state = to;
		if (to == HCA_QPS_RTS)
			hca_qp_update_active(qp);
	}
	return 0;
}

static int send_opcode_ok(enum hca_qp_type t, enum hca_wr_opcode op)
{
	switch (op) {
	case HCA_WR_SEND: case HCA_WR_SEND_WITH_IMM:
		return 1;
	case HCA_WR_RDMA_WRITE: case HCA_WR_RDMA_WRITE_WITH_IMM:
		return t != HCA_QPT_UD;
	case HCA_WR_RDMA_READ: case HCA_WR_ATOMIC_CMP_AND_SWP:
	case HCA_WR_ATOMIC_FETCH_AND_ADD:
		return t == HCA_QPT_RC;
	}
	return 0;
}

static void complete_now(struct hca_qp *qp, const struct hca_send_wr *wr,
			 enum hca_wc_status st)
{
	struct hca_wc wc = {
		.wr_id = wr->wr_id, .status = st, .qp_num = qp->qpn,
		.time = qp->hca->f->eng.now,
	};

	hca_cq_push(qp->scq, &wc);
}

int hca_post_send(struct hca_qp *qp, const struct hca_send_wr *wr)
{
	return hca_post_send_msg(qp, wr, -1);
}

int hca_post_send_msg(struct hca_qp *qp, const struct hca_send_wr *wr, int32_t msg)
{
	struct hca *h;
	uint32_t mtu;

	if (!qp || !wr)
		return -EINVAL;
	h = qp->hca;
	/* IBA 11.4.1.1: posting is refused before RTS (an immediate error). */
	if (qp->state == HCA_QPS_RESET || qp->state == HCA_QPS_INIT ||
	    qp->state == HCA_QPS_RTR)
		return -EINVAL;
	if (!send_opcode_ok(qp->type, wr->opcode))
		return -EINVAL;
	mtu = qp->type == HCA_QPT_UD ? h->f->p.mtu : qp->mtu;
	if (qp->type == HCA_QPT_UD && wr->sg.length > mtu)
		return -EINVAL;		/* UD: one packet per message */
	if (wr->sg.length > (1u << 31))
		return -EINVAL;		/* 2^31 bytes: the largest IB message */
	if ((wr->send_flags & HCA_SEND_INLINE) && wr->sg.length > qp->cap.max_inline_data)
		return -EINVAL;
	if (qp->sq_tail - qp->sq_head == qp->sq_cap || sq_reserve(qp))
		return -ENOMEM;
	if (qp->state == HCA_QPS_ERR) {
		complete_now(qp, wr, HCA_WC_WR_FLUSH_ERR);
		return 0;
	}
	bool atomic = wr->opcode == HCA_WR_ATOMIC_CMP_AND_SWP ||
		      wr->opcode == HCA_WR_ATOMIC_FETCH_AND_ADD;

	if (atomic && wr->sg.length != 8)
		return -EINVAL;
	if (atomic && !qp->xport->ops->atomics)
		return -EOPNOTSUPP;	/* no atomics over a socket */
	/* The local buffer must be registered (inline data needs no key). */
	struct hca_mr *mr = NULL;

	if (wr->sg.length && !(wr->send_flags & HCA_SEND_INLINE)) {
		uint32_t need = wr->opcode == HCA_WR_RDMA_READ || atomic ?
				HCA_ACCESS_LOCAL_WRITE : 0;

		mr = hca_mr_find(h, wr->sg.lkey);
		if (hca_mr_check(mr, wr->sg.addr, wr->sg.length, need)) {
			complete_now(qp, wr, HCA_WC_LOC_PROT_ERR);
			return 0;
		}
	} else if (wr->sg.length && wr->sg.lkey) {
		/* Inline data copied by the caller into a buffer it registered
		 * (the verbs shim's per-slot copy): the bytes come from there,
		 * the timing is inline's. */
		mr = hca_mr_find(h, wr->sg.lkey);
		if (hca_mr_check(mr, wr->sg.addr, wr->sg.length, 0))
			mr = NULL;
	}
	struct hca_swqe *w = hca_swqe_at(qp, qp->sq_tail++);

	memset(w, 0, sizeof(*w));
	w->wr = *wr;
	w->msg = msg;
	w->state = SWQE_QUEUED;
	if (wr->opcode == HCA_WR_RDMA_READ) {
		w->npkts = 1;
		w->npsn = wr->sg.length ? (wr->sg.length + mtu - 1) / mtu : 1;
	} else if (atomic) {
		w->npkts = w->npsn = 1;
	} else {
		/* most messages are one packet: no division for them */
		w->npkts = w->npsn = wr->sg.length <= mtu ? 1 : (wr->sg.length + mtu - 1) / mtu;
	}
	w->mem = mr ? mr->mem : HCA_MEM_HOST;
	w->mr = mr;
	w->mr_bytes = mr && mr->buf;
	/* The doorbell and the WQE fetch (inline data rides in the WQE), then
	 * the HCA's own processing. */
	w->ready = h->f->eng.now;
	if (h->host_on)
		w->ready = host_post(&h->host, w->ready,
				     (wr->send_flags & HCA_SEND_INLINE) ? wr->sg.length : 0,
				     !(wr->send_flags & HCA_SEND_LIST) ? HOST_POST_ALONE :
				     (wr->send_flags & HCA_SEND_LIST_MORE) ? HOST_POST_LIST :
				     HOST_POST_LIST_LAST);
	w->ready += h->f->hca_lat;
	qp->xport->ops->post(qp, w);	/* TCP: send() into the socket */
	return 0;
}

bool hca_qp_take_recv(struct hca_qp *qp, struct hca_recv_wr *out)
{
	if (qp->srq) {
		struct hca_srq *s = qp->srq;

		if (!s->n)
			return false;
		*out = s->ring[s->head];
		s->head = (s->head + 1) % s->cap;
		s->n--;
		if (s->limit && s->n < s->limit) {
			s->limit = 0;	/* disarmed as it fires (ibv_modify_srq(3)) */
			async_event(s->hca, HCA_EV_SRQ_LIMIT_REACHED, s);
		}
		return true;
	}
	if (!qp->rq_n)
		return false;
	*out = qp->rq[qp->rq_head & qp->rq_mask];
	qp->rq_head++;
	qp->rq_n--;
	return true;
}

/* Room for one more receive: double the ring when it is full (it never
 * grows past rq_cap, which hca_post_recv checks first). */
static int rq_reserve(struct hca_qp *qp)
{
	uint32_t n = qp->rq_mask + 1;

	if (qp->rq_n < n)
		return 0;
	struct hca_recv_wr *v = malloc(2 * (size_t)n * sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (uint32_t i = 0; i < qp->rq_n; i++)
		v[(qp->rq_head + i) & (2 * n - 1)] = qp->rq[(qp->rq_head + i) & qp->rq_mask];
	free(qp->rq);
	qp->rq = v;
	qp->rq_mask = 2 * n - 1;
	return 0;
}

int hca_post_recv(struct hca_qp *qp, const struct hca_recv_wr *wr)
{
	if (!qp || !wr || qp->srq)
		return -EINVAL;
	if (qp->state == HCA_QPS_RESET)
		return -EINVAL;
	if (qp->rq_n == qp->rq_cap)
		return -ENOMEM;
	if (qp->state == HCA_QPS_ERR) {
		struct hca_wc wc = { .wr_id = wr->wr_id, .status = HCA_WC_WR_FLUSH_ERR,
				     .opcode = HCA_WC_RECV, .qp_num = qp->qpn,
				     .time = qp->hca->f->eng.now };

		hca_cq_push(qp->rcq, &wc);
		return 0;
	}
	if (wr->sg.length) {
		struct hca_mr *mr = hca_mr_find(qp->hca, wr->sg.lkey);

		if (hca_mr_check(mr, wr->sg.addr, wr->sg.length, HCA_ACCESS_LOCAL_WRITE))
			return -EINVAL;
	}
	if (rq_reserve(qp))	/* only a receive that is kept takes room */
		return -ENOMEM;
	qp->rq[(qp->rq_head + qp->rq_n++) & qp->rq_mask] = *wr;
	return 0;
}

/* IBA 10.3.1: entering Error flushes every outstanding work request. */
void hca_qp_to_error(struct hca_qp *qp)
{
	struct hca_recv_wr r;
	bool was_err = qp->state == HCA_QPS_ERR;

	qp->state = HCA_QPS_ERR;
	qp->timer_at = 0;
	qp->rsp_n = 0;
	for (uint32_t i = qp->sq_head; i != qp->sq_tail; i++) {
		struct hca_swqe *w = hca_swqe_at(qp, i);

		if (w->state != SWQE_DONE)
			qp_req_complete(qp, w, HCA_WC_WR_FLUSH_ERR);
	}
	qp->sq_head = qp->sq_next = qp->sq_tail;
	/* it takes no more of its SRQ's receives: the last one it took is
	 * done (IBA 11.6.3, Last WQE Reached) */
	if (qp->srq && !was_err)
		async_event(qp->hca, HCA_EV_QP_LAST_WQE_REACHED, qp);
	while (!qp->srq && hca_qp_take_recv(qp, &r)) {
		struct hca_wc wc = { .wr_id = r.wr_id, .status = HCA_WC_WR_FLUSH_ERR,
				     .opcode = HCA_WC_RECV, .qp_num = qp->qpn,
				     .time = qp->hca->f->eng.now };

		hca_cq_push(qp->rcq, &wc);
	}
	if (qp->active)
		ring_remove(qp);
}

/* ---- scheduling ------------------------------------------------------------ */

void hca_hint_set(struct hca *h)
{
	const struct hca_qp *qp = h->active_vls ? h->cur[__builtin_ctz(h->active_vls)] : NULL;

	h->port->tx_hint = qp;
	h->port->tx_hint_wqe = qp && qp->sq ? &qp->sq[qp->sq_next & qp->sq_mask] : NULL;
}

static void ring_insert(struct hca_qp *qp)
{
	struct hca *h = qp->hca;
	uint8_t vl = qp->vl;

	qp->active = true;
	if (!(h->active_vls & (1u << vl))) {
		qp->ring_prev = qp->ring_next = qp;
		h->cur[vl] = qp;
		h->active_vls |= (uint16_t)(1u << vl);
		/* the port may be busy: no packet taken now puts the hint right */
		hca_hint_next(h);
		return;
	}
	/* Join at the end of the round: just before the current QP. */
	struct hca_qp *c = h->cur[vl], *p = c->ring_prev;

	qp->ring_next = c;
	qp->ring_prev = p;
	p->ring_next = qp;
	c->ring_prev = qp;
}

static void ring_remove(struct hca_qp *qp)
{
	struct hca *h = qp->hca;
	uint8_t vl = qp->vl;

	qp->active = false;
	if (qp->ring_next == qp) {
		h->active_vls &= (uint16_t)~(1u << vl);
		hca_hint_next(h);
		return;
	}
	qp->ring_prev->ring_next = qp->ring_next;
	qp->ring_next->ring_prev = qp->ring_prev;
	if (h->cur[vl] == qp) {
		h->cur[vl] = qp->ring_next;
		hca_hint_next(h);
	}
}

static bool qp_has_packet(struct hca_qp *qp)
{
	return qp->xport->ops->has_packet(qp);
}

void hca_qp_update_active(struct hca_qp *qp)
{
	struct hca *h = qp->hca;
	bool has = qp->state != HCA_QPS_RESET && qp->state != HCA_QPS_ERR && qp_has_packet(qp);

	if (has && !qp->active) {
		ring_insert(qp);
		if (!h->in_take && h->port)
			port_kick(h->port);
	} else if (!has && qp->active) {
		ring_remove(qp);
	}
}

uint16_t hca_candidates(struct port *pt, uint32_t blocks[PORT_NVL], uint16_t *has_data)
{
	struct hca *h = pt->hca;
	uint16_t ready = 0;

	*has_data = 0;
	if (!h || pt != h->port)
		return 0;
	/* A congestion notification owed goes first on its VL (cc.c). */
	uint16_t note = h->cc ? h->cc->ops->offer(h, pt, blocks, &ready) : 0;

	*has_data = h->active_vls | note;
	for (uint16_t m = h->active_vls & ~note; m; m &= m - 1) {
		int v = __builtin_ctz(m);
		struct hca_qp *qp = h->cur[v];
		uint32_t wire = qp->xport->ops->next_size(qp);

		blocks[v] = ib_blocks(wire);
		if (port_fits(pt, (uint8_t)v, blocks[v]))
			ready |= (uint16_t)(1u << v);
	}
	return ready;
}

uint32_t hca_alloc_pkt(struct hca *h)
{
	uint32_t idx = sim_pool_alloc(&h->f->pkts);

	if (idx == SIM_POOL_NIL) {
		fab_fail(h->f, "out of memory for packets");
		return SIM_POOL_NIL;
	}
	memset(fab_pkt(h->f, idx), 0, sizeof(struct pkt));
	return idx;
}

uint32_t hca_take(struct port *pt, uint8_t vl, uint32_t blocks)
{
	(void)blocks;	/* hca_candidates' size of it: the QP builds it again */
	struct hca *h = pt->hca;
	struct hca_qp *qp;
	uint32_t idx;
	struct pkt *p;

	if (h->cc && h->cc->ops->owed_vl(h) == vl)
		return h->cc->ops->take(h, vl);
	qp = h->cur[vl];
	idx = hca_alloc_pkt(h);
	if (idx == SIM_POOL_NIL)
		return SIM_POOL_NIL;
	p = fab_pkt(h->f, idx);
	p->slid = h->lid;
	p->dlid = qp->dlid;
	p->sl = qp->sl;
	p->vl = vl;
	p->qpt = (uint8_t)qp->type;
	p->sqpn = qp->qpn;
	p->dqpn = qp->dest_qpn;
	h->in_take = true;
	qp->xport->ops->build(qp, p);
	p->blocks = (uint8_t)ib_blocks(p->wire);
	/* Round-robin: the next QP of this VL gets the next turn; the
	 * port's hint follows it, or this QP's next WQE when it is alone. */
	if (qp->active) {
		h->cur[vl] = qp->ring_next;
		hca_hint_next(h);
	}
	hca_qp_update_active(qp);
	h->in_take = false;
	return idx;
}

void hca_sent(struct port *pt)
{
	(void)pt;
}

/* The node kind "HCA" (port.h). */
static void hca_loopback(struct port *pt, uint32_t idx);

const struct hca_qp *hca_rx_guess(const struct port *pt, const struct pkt *p)
{
	/* through the port's copy of the QP table (port.rx_qps) */
	return p->dqpn < pt->rx_nqps ? pt->rx_qps[p->dqpn] : NULL;
}

/* The look-ahead, one event before packet p arrives (port_prefetch): its
 * QP's line 0 (state, type) and line 2 (the responder). The packet is
 * asked for an event before that (port_prefetch_early): by the QP the
 * last packet went to, as it was, the guess was wrong for 87% of the
 * packets of 32 DGX H100-like servers' allreduce, where data from the
 * tree's peers and the ACKs of a GPU's own sends come in turn. */
static void hca_rx_prefetch(const struct port *pt, const struct pkt *p)
{
	/* through the port's copy of the QP table (its lines 0 and 1 are
	 * in): one miss for the table's entry, where the HCA's line and then
	 * the table's were two in a row (6% of a 1,024-GPU allreduce); the
	 * HCA's lines the receive reads are asked for beside it: the QP
	 * table's, line 0 (host_on) and, for the payload's DMA write, the
	 * host's line (struct host) */
	const struct hca_qp *qp = hca_rx_guess(pt, p);

	if (pt->hca) {
		__builtin_prefetch(pt->hca, 0);
		__builtin_prefetch(&pt->hca->qps, 0);
		if (p->payload)
			__builtin_prefetch(&pt->hca->host, 1);
	}
	if (qp) {
		__builtin_prefetch(qp, 1);
		__builtin_prefetch((const char *)qp + 128, 1);
	}
}

const struct port_node_ops hca_node_ops = {
	.candidates = hca_candidates,
	.take = hca_take,
	.sent = hca_sent,
	.receive = hca_receive,
	.loopback = hca_loopback,
	.rx_prefetch = hca_rx_prefetch,
};

/* A packet is in, its blocks out of the receive buffer (or never in it):
 * to its QP's transport. */
static inline __attribute__((always_inline)) void hca_deliver(struct port *pt, uint32_t idx)
{
	struct fab *f = pt->fab;
	struct hca *h = pt->hca;
	struct pkt *p = fab_pkt(f, idx);
	struct hca_qp *qp;

	if (p->dlid != pt->lid) {
		SIM_LOG(SIM_LOG_HCA, f->eng.now, "node %d: misrouted packet for dlid %u",
			pt->node->idx, p->dlid);
		pt->info.vl[p->vl].xmit_discards++;
		fab_pkt_drop(f, idx, FAB_DROP_ROUTE);
		return;
	}
	f->tot.packets_delivered++;
	f->tot.bytes_delivered += p->wire;
	f->tot.payload_delivered += p->payload;
	qp = hca_qp_by_num(h, p->dqpn);
	if (!qp || qp->state == HCA_QPS_RESET || qp->state == HCA_QPS_INIT ||
	    qp->state == HCA_QPS_ERR || qp->type != p->qpt) {
		/* IBA 9.6.1.1: a packet for no QP (or a QP not receiving) is
		 * silently dropped. */
		SIM_LOG(SIM_LOG_HCA, f->eng.now, "node %d: no receiving QP %u",
			pt->node->idx, p->dqpn);
		sim_pool_put(&f->pkts, idx);
		return;
	}
	if (qp->cc && (p->opcode == IB_OP_CNP || (p->flags & IB_PKT_CE)) &&
	    h->cc->ops->receive(qp, p)) {
		sim_pool_put(&f->pkts, idx);
		return;
	}
	if (p->payload)		/* its data's path (path diversity, fab_stats.h) */
		hca_qp_path(&qp->st, p);
	qp->xport->ops->receive(f, qp, p);
	sim_pool_put(&f->pkts, idx);
}

void hca_receive(struct port *pt, uint32_t idx)
{
	const struct pkt *p = fab_pkt(pt->fab, idx);

	port_rx_free(pt, p->vl, p->blocks);
	hca_deliver(pt, idx);
}

/* Sent to this port's own LID: it never used the receive buffer. */
static void hca_loopback(struct port *pt, uint32_t idx)
{
	hca_deliver(pt, idx);
}

/* ---- timers ------------------------------------------------------------------ */

/* Wake the HCA by its next timer or planned post. Inlined into its three
 * callers (two events a message on B1: 0.6% of its instructions). */
static inline __attribute__((always_inline)) void wake_arm(struct hca *h)
{
	const struct sim_event *t = sim_heap_top(&h->timers);
	sim_time_t at = t ? t->time : SIM_TIME_MAX;

	if (h->plan_at < at)
		at = h->plan_at;
	if (at != SIM_TIME_MAX && sim_wake_at(&h->f->eng, &h->wake, at, h->comp, 0))
		fab_fail(h->f, "out of memory for HCA timers");
}

static void timer_push(struct hca *h, sim_time_t at, uint32_t qpn, uint32_t arg)
{
	struct sim_event e = { .time = at, .seq = h->timer_seq++, .comp = qpn, .arg = arg };

	if (sim_heap_push(&h->timers, &e)) {
		fab_fail(h->f, "out of memory for HCA timers");
		return;
	}
	wake_arm(h);
}

#define TIMER_READY UINT32_MAX		/* arg of a "work request ready" event */
#define TIMER_ACK (UINT32_MAX - 3)	/* the QP's ACK / RNR timer */

void hca_qp_arm_ready(struct hca_qp *qp, sim_time_t at)
{
	if (at <= qp->hca->f->eng.now) {
		hca_qp_update_active(qp);
		return;
	}
	/* One wake-up per time: the QP is looked at often while it waits. */
	if (qp->wait_at == at)
		return;
	qp->wait_at = at;
	timer_push(qp->hca, at, qp->qpn, TIMER_READY);
}

/*
 * The ACK / RNR timer is cancelled lazily (timer_at = 0), and it is re-armed
 * at every ACK that makes progress: a QP sending a message every few
 * microseconds with a 67 ms timeout would leave thousands of dead entries
 * in its HCA's heap, every one of them paid for at each push and pop. So a
 * QP keeps at most one entry that is not known dead (timer_q): arming
 * later than it adds nothing, and when it comes due while the timer stands
 * armed later, it is pushed again for then (hca_handler). The timer fires
 * at exactly the time it is armed for, as before.
 */
void hca_qp_arm_timer(struct hca_qp *qp, sim_time_t at, bool rnr)
{
	qp->timer_at = at;
	qp->timer_rnr = rnr;
	if (qp->timer_q && qp->timer_q <= at)
		return;		/* an entry comes due first: it re-arms then */
	qp->timer_q = at;
	timer_push(qp->hca, at, qp->qpn, TIMER_ACK);
}

void hca_qp_arm_xport(struct hca_qp *qp, sim_time_t at)
{
	timer_push(qp->hca, at, qp->qpn, TIMER_XPORT);
}

void hca_qp_disarm_timer(struct hca_qp *qp)
{
	qp->timer_at = 0;
}

static void hca_handler(struct sim_engine *eng, void *ctx, uint32_t arg)
{
	struct hca *h = ctx;
	struct sim_event e;

	(void)arg;
	sim_wake_fired(&h->wake);
	for (;;) {
		const struct sim_event *top = sim_heap_top(&h->timers);

		/* a planned post goes before a heap timer of the same time: it
		 * was known first (as if pushed before the run, the lowest seq) */
		if (h->plan_at <= eng->now && (!top || h->plan_at <= top->time)) {
			fab_traffic_post_planned(h->f, h);
			continue;
		}
		if (!top || top->time > eng->now)
			break;
		sim_heap_pop(&h->timers, &e);
		if (e.arg == TIMER_POST) {
			fab_traffic_post(h->f, e.comp);
			continue;
		}
		struct hca_qp *qp = hca_qp_by_num(h, e.comp);

		if (!qp)
			continue;
		if (e.arg == TIMER_XPORT) {
			qp->xport->ops->timer(qp, e.time);
			continue;
		}
		if (e.arg == TIMER_READY) {
			if (qp->wait_at == e.time)
				qp->wait_at = 0;
			hca_qp_update_active(qp);
			continue;
		}
		/* the ACK / RNR timer (hca_qp_arm_timer) */
		if (qp->timer_q != e.time)
			continue;	/* superseded by an earlier entry */
		qp->timer_q = 0;
		if (!qp->timer_at)
			continue;	/* cancelled */
		if (qp->timer_at > e.time) {
			qp->timer_q = qp->timer_at;	/* re-armed for later */
			timer_push(h, qp->timer_at, qp->qpn, TIMER_ACK);
			continue;
		}
		qp->timer_at = 0;
		qp->xport->ops->timer(qp, e.time);	/* the ACK / RNR timer */
	}
	wake_arm(h);
}

void hca_post_at(struct hca *h, sim_time_t at, uint32_t msg)
{
	timer_push(h, at, msg, TIMER_POST);
}

/* Posts known before the run (constant-rate traffic: 74,000 per sender
 * per simulated second on B1) are not pushed into the heap, where they
 * would make every timer operation walk a deep, cold tree: the builder
 * keeps them in order and the handler reads plan_at beside the heap. */
int hca_plan_wake(struct hca *h, sim_time_t t)
{
	/* the wake-up a heap push would have asked for, in the same order */
	return sim_wake_at(&h->f->eng, &h->wake, t, h->comp, 0);
}

/* ---- life cycle --------------------------------------------------------------- */

int hca_init(struct fab *f, struct fab_node *n)
{
	/* aligned: the first two lines are the hot ones (hca_int.h) */
	struct hca *h = aligned_alloc(64, (sizeof(*h) + 63) & ~(size_t)63);
	int port = net_first_port(f->net, n->idx);
	int c;

	if (!h)
		return -1;
	memset(h, 0, sizeof(*h));
	n->hca = h;
	for (int k = 0; k <= n->nports; k++)
		if (n->ports[k])
			n->ports[k]->hca = h;	/* the receive path's first step */
	h->f = f;
	h->n = n;
	h->plan_at = SIM_TIME_MAX;
	h->port = port > 0 ? n->ports[port] : NULL;
	h->hint = f->eng.prefetch && h->port;	/* the ports are registered: the look-ahead is decided */
	h->lid = port > 0 ? net_lid_of(f->net, n->idx, port) : 0;
	/* a SHARP aggregation node is the switch's own: no PCIe, no host */
	h->host_on = f->p.host_model && !f->net->nodes[n->idx].agg;
	sim_heap_init(&h->timers);
	sim_wake_init(&h->wake);
	host_init(&h->host, &f->p.host);
	if (f->cc && f->cc->hca_init(h))
		return -1;
	c = sim_register(&f->eng, hca_handler, h, "hca");
	if (c < 0)
		return -1;
	h->comp = (uint32_t)c;
	return 0;
}

void hca_fini(struct fab_node *n)
{
	struct hca *h = n->hca;

	if (!h)
		return;
	for (uint32_t i = 0; i < h->nqps; i++)
		if (h->qps[i]) {
			if (h->qps[i]->xport)
				h->qps[i]->xport->ops->destroy(h->qps[i]);
			free(h->qps[i]->sq);
			free(h->qps[i]->rq);
			free(h->qps[i]->rsp);
			free(h->qps[i]->cc);
			free(h->qps[i]);
		}
	for (uint32_t k = 0; k * HCA_MR_CHUNK < h->nmrs; k++)
		free(h->mr_chunks[k]);
	/* the CQs and SRQs nobody destroyed */
	for (uint32_t i = 0; i < h->nobjs; i++) {
		void *o = h->objs[i].p;

		if (!o)
			continue;
		if (h->objs[i].cq)
			free(((struct hca_cq *)o)->ring);
		else
			free(((struct hca_srq *)o)->ring);
		free(o);
	}
	free(h->objs);
	free(h->qps);
	free(h->mr_chunks);
	sim_heap_free(&h->timers);
	sim_wake_fini(&h->wake);
	if (h->xport_host)
		h->f->rc_transport->hca_fini(h);
	if (h->cc)
		h->cc->ops->hca_fini(h);
	free(h);
	n->hca = NULL;
	for (int k = 0; k <= n->nports; k++)
		if (n->ports[k])
			n->ports[k]->hca = NULL;
}

net_lid_t hca_lid(const struct hca *h)
{
	return h->lid;
}

struct host *hca_host(struct hca *h)
{
	return &h->host;
}

bool hca_rc_atomics(const struct hca *h)
{
	const struct hca_transport_ops *t = h->f->rc_transport ? h->f->rc_transport :
					    h->f->transport;

	return t && t->atomics;
}

sim_time_t hca_now(const struct hca *h)
{
	return h->f->eng.now;
}

struct hca *fab_hca(struct fab *f, int node)
{
	if (node < 0 || node >= f->nnodes)
		return NULL;
	return f->nodes[node].hca;
}
