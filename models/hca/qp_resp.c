/* SPDX-License-Identifier: MIT */
/*
 * qp_resp.c - the responder of a queue pair (IBA 9.7.5 reliable, 9.8 UC,
 * 9.8.5 UD; rxe's resp.c does the same).
 *
 * RC: a request with the expected PSN is executed: a SEND fills the next
 * receive work request (none posted: an RNR NAK carrying min_rnr_timer,
 * and the PSN is not consumed), a WRITE lands in the region its R_Key names
 * (checked for range and access - the region's, and the QP's remote
 * access enables, ibv_modify_qp(3)'s qp_access_flags, a ConnectX QP
 * context's RWE/RRE/RAE bits: a remote access NAK otherwise; a READ and an
 * atomic likewise), a READ is
 * queued as response packets within max_dest_rd_atomic, an atomic reads,
 * modifies and returns the original 8 bytes. A packet asking for an ACK
 * gets one (a pending, unsent ACK is updated rather than doubled: ACK
 * coalescing). A PSN beyond the expected one is held until the gap fills
 * where the HCA takes packets out of order (hca.ooo, qp_ooo.c), else a
 * sequence error: one NAK per expected PSN, then silence until the
 * requester rewinds. A duplicate
 * (PSN behind) is acknowledged again, a duplicate READ answered again,
 * a duplicate atomic replayed from its saved result, never re-executed.
 *
 * UC: no ACKs; a missing packet drops the rest of its message, and the
 * next FIRST or ONLY starts afresh. UD: one packet per message into the
 * next receive, or silently dropped when none is posted.
 */
#include "models/hca/hca_int.h"

#include <stdlib.h>
#include <string.h>

#include "sim/sim_log.h"

/* The response ring's slot i places after its head. Its capacity starts at
 * 16 and doubles, a power of two: a mask, not a division per ACK. */
static inline uint32_t rsp_slot(const struct hca_qp *qp, uint32_t i)
{
	return (qp->rsp_head + i) & (qp->rsp_cap - 1);
}

static struct hca_resp *resp_push(struct hca_qp *qp)
{
	if (qp->rsp_n == qp->rsp_cap) {
		uint32_t cap = qp->rsp_cap * 2;
		struct hca_resp *n = malloc(cap * sizeof(*n));

		if (!n) {
			fab_fail(qp->hca->f, "out of memory for responses");
			return NULL;
		}
		for (uint32_t i = 0; i < qp->rsp_n; i++)
			n[i] = qp->rsp[rsp_slot(qp, i)];
		free(qp->rsp);
		qp->rsp = n;
		qp->rsp_head = 0;
		qp->rsp_cap = cap;
	}
	struct hca_resp *r = &qp->rsp[rsp_slot(qp, qp->rsp_n++)];

	memset(r, 0, sizeof(*r));
	return r;
}

static struct hca_resp *resp_head(const struct hca_qp *qp)
{
	return &qp->rsp[qp->rsp_head];
}

static void resp_pop(struct hca_qp *qp)
{
	qp->rsp_head = rsp_slot(qp, 1);
	qp->rsp_n--;
}

/* Queue an ACK or NAK; an ACK still waiting at the tail is updated instead. */
static void queue_ack(struct hca_qp *qp, uint8_t aeth, uint32_t psn)
{
	if (aeth == IB_AETH_ACK && qp->rsp_n) {
		struct hca_resp *t = &qp->rsp[rsp_slot(qp, qp->rsp_n - 1)];

		if (t->kind == RESP_ACK && t->aeth == IB_AETH_ACK) {
			t->psn = psn;
			t->msn = qp->msn;
			return;
		}
	}
	struct hca_resp *r = resp_push(qp);

	if (!r)
		return;
	r->kind = RESP_ACK;
	r->aeth = aeth;
	r->psn = psn;
	r->msn = qp->msn;
	if (aeth == IB_AETH_ACK)
		qp->st.acks_sent++;
	else if ((aeth & 0xe0) == IB_AETH_RNR_NAK)
		qp->st.rnr_naks_sent++;
	else
		qp->st.naks_sent++;
	hca_qp_update_active(qp);
}

static uint8_t read_opcode(const struct hca_resp *r, uint32_t mtu, uint32_t *payload)
{
	uint32_t left = r->len - r->off;
	bool first = !r->first_sent, last;

	*payload = left < mtu ? left : mtu;
	last = r->off + *payload >= r->len;
	return first && last ? IB_OP_READ_RESP_ONLY : first ? IB_OP_READ_RESP_FIRST :
	       last ? IB_OP_READ_RESP_LAST : IB_OP_READ_RESP_MIDDLE;
}

/*
 * The responder's read engine asks for a READ's data as soon as the
 * request is decoded, not when its response reaches the head of the
 * queue: with up to hca.max_rd_atomic READs outstanding their DMA round
 * trips overlap, as a real HCA's do, and small READs do not go one per
 * dma_read_ns. As for a request's payload (prefetch_next in qp_req.c), a
 * queued READ's first chunk (hca.dma_window packets at most) is booked
 * once the READs before it have less than a window of packets left to
 * send; a READ once started reads on by itself (resp_ready), so that a
 * long one is not held up behind the next one's data on the PCIe pipe.
 * Called as each READ request arrives and each READ response packet
 * leaves.
 */
static void read_engine(struct hca_qp *qp)
{
	uint32_t mtu = qp->mtu, window = qp->hca->f->p.hca_dma_window;
	uint64_t ahead = 0, chunk = (uint64_t)window * mtu;

	if (!qp->hca->host_on)
		return;
	for (uint32_t i = 0; i < qp->rsp_n; i++) {
		struct hca_resp *r = &qp->rsp[rsp_slot(qp, i)];
		uint64_t hi;

		if (r->kind != RESP_READ || !r->len)
			continue;
		if (r->dma.hi) {
			/* it reads on by itself: all it has left to send */
			ahead += (r->len - r->off + mtu - 1) / mtu;
			continue;
		}
		if (ahead >= window)
			return;
		hi = r->len < chunk ? r->len : chunk;
		hca_dma_ready(qp->hca, &r->dma, r->mr ? r->mr->mem : HCA_MEM_HOST, r->len, 0,
			      hi < mtu ? hi : mtu, mtu);
		ahead += (hi + mtu - 1) / mtu;
	}
}

/* When the head response can go: READ data and atomics need memory first. */
static sim_time_t resp_ready(struct hca_qp *qp, struct hca_resp *r)
{
	uint32_t payload;
	sim_time_t t;

	switch (r->kind) {
	case RESP_READ:
		if (!r->len)
			return r->go + qp->hca->f->hca_lat;
		read_opcode(r, qp->mtu, &payload);
		t = hca_dma_ready(qp->hca, &r->dma, r->mr ? r->mr->mem : HCA_MEM_HOST, r->len,
				  r->off, r->off + payload, qp->mtu);
		/* the data then goes through the send pipeline */
		return (t > r->go ? t : r->go) + qp->hca->f->hca_lat;
	case RESP_ATOMIC:
		/* the read of the 8 bytes (set when executed) */
		return (r->dma.done > r->go ? r->dma.done : r->go) + qp->hca->f->hca_lat;
	default:
		return 0;
	}
}

bool qp_resp_has_packet(struct hca_qp *qp)
{
	sim_time_t t;

	if (!qp->rsp_n)
		return false;
	t = resp_ready(qp, &qp->rsp[qp->rsp_head]);
	if (t > qp->hca->f->eng.now) {
		hca_qp_arm_ready(qp, t);
		return false;
	}
	return true;
}


uint32_t qp_resp_next_size(const struct hca_qp *qp)
{
	const struct hca_resp *r = resp_head(qp);
	uint32_t payload = 0;

	switch (r->kind) {
	case RESP_ACK:
		return hca_wire_bytes(qp, IB_OP_ACK, 0);
	case RESP_ATOMIC:
		return hca_wire_bytes(qp, IB_OP_ATOMIC_ACK, 0);
	case RESP_READ: {
		/* two statements: in one call, payload could be read before
		 * read_opcode sets it (C leaves the order of arguments open),
		 * and the port would check credits for the headers alone */
		uint8_t op = read_opcode(r, qp->mtu, &payload);

		return hca_wire_bytes(qp, op, payload);
	}
	}
	return 0;
}

void qp_resp_build(struct hca_qp *qp, struct pkt *p)
{
	struct hca_resp *r = resp_head(qp);
	uint32_t payload = 0;

	p->msg = r->msg;
	p->aeth = r->aeth;
	p->msn = r->msn;
	p->psn = r->psn;
	switch (r->kind) {
	case RESP_ACK:
		p->opcode = IB_OP_ACK;
		resp_pop(qp);
		/* a remote access or invalid request NAK ends the responder
		 * (class C): the NAK leaves, then the QP is in Error */
		if (p->aeth == IB_AETH_NAK_REM_ACCESS || p->aeth == IB_AETH_NAK_INV_REQ)
			hca_qp_resp_fatal(qp, p->aeth == IB_AETH_NAK_REM_ACCESS);
		break;
	case RESP_ATOMIC:
		p->opcode = IB_OP_ATOMIC_ACK;
		p->aeth = IB_AETH_ACK;
		p->atomic[0] = r->orig;
		resp_pop(qp);
		qp->rd_responding--;
		break;
	case RESP_READ:
		p->opcode = read_opcode(r, qp->mtu, &payload);
		p->aeth = IB_AETH_ACK;
		p->payload = (uint16_t)payload;
		{
			const uint8_t *b = hca_mr_ptr(r->mr, r->va);

			p->data = b ? b + r->off : NULL;
		}
		r->first_sent = true;
		r->off += payload;
		r->psn = psn_add(r->psn, 1);
		if (r->off >= r->len) {
			resp_pop(qp);
			qp->rd_responding--;
		}
		read_engine(qp);
		break;
	}
	p->wire = (uint16_t)hca_wire_bytes(qp, p->opcode, payload);
}

static bool is_send(uint8_t op)
{
	return op <= IB_OP_SEND_ONLY_IMM;
}

static bool is_write(uint8_t op)
{
	return op >= IB_OP_WRITE_FIRST && op <= IB_OP_WRITE_ONLY_IMM;
}

static bool op_first(uint8_t op)
{
	return op == IB_OP_SEND_FIRST || op == IB_OP_SEND_ONLY || op == IB_OP_SEND_ONLY_IMM ||
	       op == IB_OP_WRITE_FIRST || op == IB_OP_WRITE_ONLY || op == IB_OP_WRITE_ONLY_IMM;
}

static bool op_last(uint8_t op)
{
	return op == IB_OP_SEND_LAST || op == IB_OP_SEND_LAST_IMM || op == IB_OP_SEND_ONLY ||
	       op == IB_OP_SEND_ONLY_IMM || op == IB_OP_WRITE_LAST ||
	       op == IB_OP_WRITE_LAST_IMM || op == IB_OP_WRITE_ONLY || op == IB_OP_WRITE_ONLY_IMM;
}

static bool op_imm(uint8_t op)
{
	return op == IB_OP_SEND_LAST_IMM || op == IB_OP_SEND_ONLY_IMM ||
	       op == IB_OP_WRITE_LAST_IMM || op == IB_OP_WRITE_ONLY_IMM;
}

/* The payload goes to memory over PCIe: note when it is visible there. */
static void copy_in(struct fab *f, struct hca_qp *qp, struct hca_mr *mr, uint64_t va,
		    const struct pkt *p, bool quiet)
{
	struct hca *h = qp->hca;
	sim_time_t now = f->eng.now, vis = now;
	uint8_t *dst;

	/*
	 * The MR is read only for what needs it: the host model's memory
	 * kind, and the bytes when the packet carries some. A run of timing
	 * only (traffic, traces, no host model) never touches it, which on a
	 * large fabric is a cache miss per packet. The checks are
	 * hca_dma_write()'s and hca_mr_ptr()'s.
	 */
	if (qp->ooo_waiting && qp->held_vis)	/* ooo_waiting first: it is on this line */
		vis = qp->held_vis;	/* placed as it landed (qp_ooo.c) */
	else if (h->host_on && p->payload)
		vis = hca_dma_write(h, now, mr ? mr->mem : HCA_MEM_HOST, p->payload);
	if (p->data && p->payload && (dst = hca_mr_ptr(mr, va)) != NULL) {
		/* the verbs shim makes the bytes appear when they are visible */
		if (h->place_fn)
			h->place_fn(h, dst, p->data, p->payload, vis,
				    (quiet ? HCA_PLACE_QUIET : 0u) |
				    (p->flags & IB_PKT_LAST ? HCA_PLACE_LAST : 0u), h->place_ctx);
		else
			memcpy(dst, p->data, p->payload);
	}
	if (vis > qp->rx_visible)
		qp->rx_visible = vis;
}

/* When the message just received is complete in memory. */
static sim_time_t visible(const struct hca_qp *qp)
{
	sim_time_t now = qp->hca->f->eng.now;

	return qp->rx_visible > now ? qp->rx_visible : now;
}

/* A receive completes once its data is in memory; returns when the CPU sees the CQE. */
static sim_time_t recv_complete(struct hca_qp *qp, const struct hca_recv_wr *r,
				enum hca_wc_status st, enum hca_wc_opcode op, uint32_t len,
				const struct pkt *p)
{
	struct hca_wc wc = {
		.wr_id = r->wr_id, .status = st, .opcode = op, .byte_len = len,
		.qp_num = qp->qpn, .src_qp = p->sqpn, .slid = p->slid,
		.imm_data = p->imm, .with_imm = op_imm(p->opcode),
		.time = hca_cqe_time(qp->hca, qp->hca->f->eng.now, visible(qp)),
	};

	hca_cq_push(qp->rcq, &wc);
	return wc.time;
}

/* UD (IBA 9.8.5): one packet, one receive, or a silent drop. */
static void ud_receive(struct fab *f, struct hca_qp *qp, struct pkt *p)
{
	struct hca_recv_wr r;

	if ((uint32_t)p->va != qp->qkey || !hca_qp_take_recv(qp, &r)) {
		/* IBA 9.8.5 / 10.2.x: no receive or a bad Q_Key: silently gone */
		qp->st.pkts_dropped_uc++;
		fab_traffic_lost(f, p->msg);
		return;
	}
	if (p->payload > r.sg.length) {
		recv_complete(qp, &r, HCA_WC_LOC_LEN_ERR, HCA_WC_RECV, 0, p);
		return;
	}
	copy_in(f, qp, hca_mr_find(qp->hca, r.sg.lkey), r.sg.addr, p, false);
	/* a datagram is "there" when the program sees its receive completion */
	sim_time_t seen = recv_complete(qp, &r, HCA_WC_SUCCESS, HCA_WC_RECV, p->payload, p);

	if ((int32_t)p->msg >= 0)
		fab_traffic_delivered(f, (int32_t)p->msg, seen);
}

/*
 * Executing a request with the expected PSN, one function per kind (rxe's
 * responder states): each returns false if it refused the request (a NAK
 * or RNR NAK went back, or UC dropped it) and the PSN is not consumed.
 */
static bool exec_send(struct fab *f, struct hca_qp *qp, struct pkt *p, bool rc)
{
	struct hca *h = qp->hca;
	uint8_t op = p->opcode;

	if (op_first(op) && !qp->recv_active) {
		if (!hca_qp_take_recv(qp, &qp->cur_recv)) {
			if (rc)
				queue_ack(qp, (uint8_t)(IB_AETH_RNR_NAK | qp->min_rnr_timer), p->psn);
			return false;
		}
		qp->recv_active = true;
		qp->recv_off = 0;
	}
	if (!qp->recv_active || (op_first(op) && qp->recv_off)) {
		if (rc)
			queue_ack(qp, IB_AETH_NAK_INV_REQ, p->psn);
		return false;
	}
	if (qp->recv_off + p->payload > qp->cur_recv.sg.length) {
		/* IBA 9.7.5.2.5: too long for the receive buffer */
		recv_complete(qp, &qp->cur_recv, HCA_WC_LOC_LEN_ERR, HCA_WC_RECV, 0, p);
		qp->recv_active = false;
		if (rc)
			queue_ack(qp, IB_AETH_NAK_INV_REQ, p->psn);
		return false;
	}
	copy_in(f, qp, hca_mr_find(h, qp->cur_recv.sg.lkey), qp->cur_recv.sg.addr + qp->recv_off, p,
		false);
	qp->recv_off += p->payload;
	if (op_last(op)) {
		qp->recv_active = false;
		qp->msn++;
		/* a SEND is "there" when the receive completion is seen
		 * (what ib_send_lat's responder waits for) */
		sim_time_t seen = recv_complete(qp, &qp->cur_recv, HCA_WC_SUCCESS,
						HCA_WC_RECV, qp->recv_off, p);

		if ((int32_t)p->msg >= 0)
			fab_traffic_delivered(f, (int32_t)p->msg, seen);
	}
	return true;
}

static bool exec_write(struct fab *f, struct hca_qp *qp, struct pkt *p, bool rc)
{
	struct hca *h = qp->hca;
	uint8_t op = p->opcode;
	struct hca_recv_wr r;

	if (op_first(op)) {
		struct hca_mr *mr = hca_mr_find(h, p->rkey);

		/* a zero-length WRITE names no memory: its R_Key and VA are not
		 * checked (IBA C9-88; UCX's rc_verbs flushes with one, rkey 0) */
		if (!(qp->access & HCA_ACCESS_REMOTE_WRITE) ||
		    (p->dma_len && hca_mr_check(mr, p->va, p->dma_len, HCA_ACCESS_REMOTE_WRITE))) {
			if (rc)
				queue_ack(qp, IB_AETH_NAK_REM_ACCESS, p->psn);
			return false;
		}
		qp->wr_mr = mr;
		qp->wr_va = p->va;
		qp->wr_left = p->dma_len;
		qp->wr_len = p->dma_len;
	}
	/* WRITE with immediate consumes a receive: RNR before touching memory. */
	if (op_imm(op) && !hca_qp_take_recv(qp, &r)) {
		if (rc)
			queue_ack(qp, (uint8_t)(IB_AETH_RNR_NAK | qp->min_rnr_timer), p->psn);
		return false;
	}
	if (p->payload > qp->wr_left) {
		if (rc)
			queue_ack(qp, IB_AETH_NAK_INV_REQ, p->psn);
		return false;
	}
	/* (a WRITE_WITH_IMM's first and middle packets look like a plain
	 * WRITE's: counted quiet, as a program spinning on them would see them) */
	copy_in(f, qp, qp->wr_mr, qp->wr_va, p, !op_imm(op));
	qp->wr_va += p->payload;
	qp->wr_left -= p->payload;
	if (op_last(op)) {
		qp->msn++;
		/* a plain WRITE is there when its last byte is (a program
		 * polling memory sees it); with immediate, at the CQE */
		sim_time_t seen = op_imm(op) ?
			recv_complete(qp, &r, HCA_WC_SUCCESS, HCA_WC_RECV_RDMA_WITH_IMM, qp->wr_len, p) :
			visible(qp);

		if ((int32_t)p->msg >= 0)
			fab_traffic_delivered(f, (int32_t)p->msg, seen);
	}
	return true;
}

/* A READ request: its response is queued (resp_push) and sent as the
 * responder's resources allow. */
static bool exec_read(struct hca_qp *qp, struct pkt *p)
{
	struct hca_mr *mr = hca_mr_find(qp->hca, p->rkey);
	struct hca_resp *r;

	if (!(qp->access & HCA_ACCESS_REMOTE_READ) ||
	    (p->dma_len && hca_mr_check(mr, p->va, p->dma_len, HCA_ACCESS_REMOTE_READ))) {
		queue_ack(qp, IB_AETH_NAK_REM_ACCESS, p->psn);
		return false;
	}
	r = resp_push(qp);
	if (!r)
		return false;
	r->kind = RESP_READ;
	r->go = qp->hca->f->eng.now;
	r->mr = mr;
	r->va = p->va;
	r->len = p->dma_len;
	r->psn = p->psn;
	r->msg = p->msg;
	qp->msn++;
	r->msn = qp->msn;
	read_engine(qp);
	return true;
}

/* A compare-and-swap or fetch-and-add, done at once on the 8 bytes. */
static bool exec_atomic(struct fab *f, struct hca_qp *qp, struct pkt *p)
{
	struct hca *h = qp->hca;
	uint8_t op = p->opcode;
	struct hca_mr *mr = hca_mr_find(h, p->rkey);
	struct hca_resp *r;
	uint64_t orig = 0;
	uint8_t *mem;

	if ((p->va & 7) || !(qp->access & HCA_ACCESS_REMOTE_ATOMIC) ||
	    hca_mr_check(mr, p->va, 8, HCA_ACCESS_REMOTE_ATOMIC)) {
		queue_ack(qp, (p->va & 7) ? IB_AETH_NAK_INV_REQ : IB_AETH_NAK_REM_ACCESS,
			  p->psn);
		return false;
	}
	mem = hca_mr_ptr(mr, p->va);
	if (mem) {
		memcpy(&orig, mem, 8);
		uint64_t v = op == IB_OP_CMP_SWAP ? (orig == p->atomic[0] ? p->atomic[1] : orig) :
			     orig + p->atomic[0];

		memcpy(mem, &v, 8);
	}
	qp->last_atomic_psn = p->psn;
	qp->last_atomic_orig = orig;
	qp->last_atomic_valid = true;
	r = resp_push(qp);
	if (!r)
		return false;
	/* The HCA reads the 8 bytes over PCIe before it can answer; the
	 * write of the new value is posted behind it. */
	if (h->host_on) {
		r->dma.done = host_dma_read(&h->host, f->eng.now, mr->mem, 8);
		hca_dma_write(h, r->dma.done, mr->mem, 8);
	}
	r->kind = RESP_ATOMIC;
	r->go = qp->hca->f->eng.now;
	r->orig = orig;
	r->psn = p->psn;
	r->msg = p->msg;
	qp->msn++;
	r->msn = qp->msn;
	return true;
}

static bool execute(struct fab *f, struct hca_qp *qp, struct pkt *p)
{
	bool rc = qp->type == HCA_QPT_RC;
	uint8_t op = p->opcode;

	if (is_send(op))
		return exec_send(f, qp, p, rc);
	if (is_write(op))
		return exec_write(f, qp, p, rc);
	/* READ and atomics: RC only, limited by the responder's resources. */
	if (qp->rd_responding >= qp->max_dest_rd_atomic) {
		queue_ack(qp, IB_AETH_NAK_INV_REQ, p->psn);
		return false;
	}
	if (!(op == IB_OP_READ_REQUEST ? exec_read(qp, p) : exec_atomic(f, qp, p)))
		return false;
	qp->rd_responding++;
	if (qp->rd_responding > qp->st.max_rd_responding)
		qp->st.max_rd_responding = qp->rd_responding;
	hca_qp_update_active(qp);
	return true;
}

static uint32_t psns_of(const struct hca_qp *qp, const struct pkt *p)
{
	if (p->opcode == IB_OP_READ_REQUEST)
		return p->dma_len ? (p->dma_len + qp->mtu - 1) / qp->mtu : 1;
	return 1;
}

/* A duplicate (PSN behind): answer again, never execute again. */
static void duplicate(struct hca_qp *qp, struct pkt *p)
{
	qp->st.dup_pkts_rcvd++;
	if (p->opcode == IB_OP_READ_REQUEST) {
		struct hca_mr *mr = hca_mr_find(qp->hca, p->rkey);
		struct hca_resp *r;

		if (p->dma_len && hca_mr_check(mr, p->va, p->dma_len, HCA_ACCESS_REMOTE_READ))
			return;
		r = resp_push(qp);
		if (!r)
			return;
		r->kind = RESP_READ;
		r->go = qp->hca->f->eng.now;
		r->mr = mr;
		r->va = p->va;
		r->len = p->dma_len;
		r->psn = p->psn;
		r->msg = p->msg;
		r->msn = qp->msn;
		read_engine(qp);
		qp->rd_responding++;
		hca_qp_update_active(qp);
		return;
	}
	if (p->opcode == IB_OP_CMP_SWAP || p->opcode == IB_OP_FETCH_ADD) {
		struct hca_resp *r;

		if (!qp->last_atomic_valid || qp->last_atomic_psn != p->psn)
			return;
		r = resp_push(qp);
		if (!r)
			return;
		r->kind = RESP_ATOMIC;
		r->go = qp->hca->f->eng.now;
		r->orig = qp->last_atomic_orig;
		r->psn = p->psn;
		r->msg = p->msg;
		r->msn = qp->msn;
		qp->rd_responding++;
		hca_qp_update_active(qp);
		return;
	}
	queue_ack(qp, IB_AETH_ACK, psn_add(qp->epsn, HCA_PSN_MASK));	/* epsn - 1 */
}

/* An executed request that asks for an ACK gets one (READs and atomics
 * are answered by their responses). */
static inline void ack_if_asked(struct hca_qp *qp, const struct pkt *p)
{
	if ((p->flags & IB_PKT_ACKREQ) && p->opcode != IB_OP_READ_REQUEST &&
	    p->opcode != IB_OP_CMP_SWAP && p->opcode != IB_OP_FETCH_ADD)
		queue_ack(qp, IB_AETH_ACK, p->psn);
}

/* Forget the requests held ahead of a gap (qp_ooo.c). */
static void held_drop(struct hca_qp *qp)
{
	qp_ooo_flush(qp->ooo_req);
	qp->ooo_waiting = false;
}

/* The gap is filled: execute the requests held behind it, in order, as
 * qp_resp_receive does one with the expected PSN. */
static __attribute__((noinline)) void held_run(struct fab *f, struct hca_qp *qp)
{
	struct pkt p;

	while (qp_ooo_take(qp->ooo_req, qp->epsn, &p)) {
		bool ok;

		qp->held_vis = p.t_tail;
		ok = execute(f, qp, &p);
		qp->held_vis = 0;
		if (!ok) {
			held_drop(qp);
			return;
		}
		qp->epsn = psn_add(qp->epsn, psns_of(qp, &p));
		ack_if_asked(qp, &p);
	}
	qp->ooo_waiting = qp_ooo_count(qp->ooo_req) > 0;
}

/* Where a request held ahead of a gap writes its payload as it lands: a
 * WRITE's first packet names its region, a later one goes where the WRITE
 * being received goes (a QP's WRITEs land in one kind of memory), a SEND
 * into the receive it is filling; else host memory. */
static enum hca_mem held_mem(struct hca_qp *qp, const struct pkt *p)
{
	struct hca_mr *mr = NULL;

	switch (p->opcode) {
	case IB_OP_WRITE_FIRST: case IB_OP_WRITE_ONLY: case IB_OP_WRITE_ONLY_IMM:
		mr = hca_mr_find(qp->hca, p->rkey);
		break;
	case IB_OP_WRITE_MIDDLE: case IB_OP_WRITE_LAST: case IB_OP_WRITE_LAST_IMM:
		mr = qp->wr_mr;
		break;
	default:
		if (qp->recv_active)
			mr = hca_mr_find(qp->hca, qp->cur_recv.sg.lkey);
		break;
	}
	return mr ? mr->mem : HCA_MEM_HOST;
}

void qp_resp_receive(struct fab *f, struct hca_qp *qp, struct pkt *p)
{
	int32_t d;

	if (qp->state != HCA_QPS_RTR && qp->state != HCA_QPS_RTS && qp->state != HCA_QPS_SQD)
		return;
	if (qp->type == HCA_QPT_UD) {
		ud_receive(f, qp, p);
		return;
	}
	if (__builtin_expect(qp->state == HCA_QPS_RTR, 0))
		hca_qp_comm_est(qp);
	d = psn_diff(p->psn, qp->epsn);
	if (qp->type == HCA_QPT_UC) {
		/* UC (IBA 9.8.3): a gap loses the message; resynchronise on a FIRST/ONLY. */
		if (d != 0 || qp->uc_drop) {
			if (!op_first(p->opcode)) {
				qp->uc_drop = true;
				qp->epsn = psn_add(p->psn, 1);
				qp->st.pkts_dropped_uc++;
				return;
			}
			qp->recv_active = false;	/* the broken message's receive is reused */
			qp->uc_drop = false;
		}
		if (!execute(f, qp, p))
			qp->uc_drop = !op_last(p->opcode);
		qp->epsn = psn_add(p->psn, 1);
		return;
	}
	if (d < 0) {
		duplicate(qp, p);
		return;
	}
	if (d > 0) {
		/* ahead of a gap: held where the HCA places out of order */
		if (fab_ooo(&f->p) && qp_ooo_hold(qp, &qp->ooo_req, p, (uint32_t)d, held_mem(qp, p))) {
			qp->ooo_waiting = true;
			return;
		}
		if (!qp->nak_seq_sent) {
			queue_ack(qp, IB_AETH_NAK_SEQ, qp->epsn);
			qp->nak_seq_sent = true;
		}
		return;
	}
	qp->nak_seq_sent = false;
	if (!execute(f, qp, p)) {
		if (qp->ooo_waiting)
			held_drop(qp);	/* the requester sends them again */
		return;
	}
	qp->epsn = psn_add(qp->epsn, psns_of(qp, p));
	ack_if_asked(qp, p);
	if (qp->ooo_waiting)
		held_run(f, qp);
}
