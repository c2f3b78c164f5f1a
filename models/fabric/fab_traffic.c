/* SPDX-License-Identifier: MIT */
/*
 * fab_traffic.c - the synthetic traffic of `ibfab run` carried over queue
 * pairs: each stream of messages (fab.h) becomes one QP pair, RC unless
 * the stream is datagrams (fab_msg.ud, the spec's qp=ud) or VL15
 * management traffic: then UD, on the VL the SL maps to, or on VL15 as
 * MADs are. Each message is a work request: an RDMA WRITE, an RDMA READ
 * (the source reads `bytes` from the destination) or a SEND (a receive is
 * posted for it at the destination as it is posted; a UD message is always
 * a SEND).
 * Every HCA registers one region covering its whole address space with no
 * bytes behind it: the traffic measures time, not data.
 *
 * A message is *delivered* when its data is complete where it goes (the
 * responder's last WRITE packet or RECV completion, the requester's last
 * READ response) and *completed* when the requester's work completion
 * appears: after the ACK for RC, when the packet has been sent for UD
 * (IBA 10.7.2.5: an unreliable service completes a send once it is on the
 * wire, whatever becomes of it). A datagram that is dropped (a full VL15,
 * a lossy Ethernet queue, a bad CRC, no route) is counted lost by
 * fab_pkt_drop() and never resent: UD has no ACKs, no PSN checks, no
 * retransmission (IBA 9.8.5). Dependent messages (ping-pong) are posted
 * when what they wait for is delivered at their source.
 */
#include "models/fabric/fab_int.h"

#include "models/hca/hca_plug.h"

#include <stdlib.h>
#include <string.h>

/*
 * A program keeps at most max_qp_wr work requests outstanding on a send
 * queue, and ibv_post_send refuses one more (ENOMEM): ConnectX-4 and later
 * report 32,768 (mlx5 gives 1 << log_max_qp_sz, and log_max_qp_sz is 15).
 * A stream with more messages waiting to go than that posts as such a
 * program must: the rest wait, in order, in the stream's backlog, and
 * each requester completion lets the next one go. A p2p stream of a
 * million messages posted at once held them all in its send queue (192
 * bytes a WQE: 200 MB), and one of more than 2^20, the model HCA's limit
 * on a queue, could not be built at all.
 */
#define FAB_TRAFFIC_SQ_DEPTH 32768u

/* Queue message mi behind the stream's full send queue. */
static int backlog_push(struct fab_stream *s, uint32_t mi)
{
	if (s->bl_len == s->bl_cap) {
		uint32_t cap = s->bl_cap ? 2 * s->bl_cap : 256;
		uint32_t *v = malloc((size_t)cap * sizeof(*v));

		if (!v)
			return -1;
		for (uint32_t i = 0; i < s->bl_len; i++)
			v[i] = s->bl[(s->bl_head + i) & (s->bl_cap - 1)];
		free(s->bl);
		s->bl = v;
		s->bl_cap = cap;
		s->bl_head = 0;
	}
	s->bl[(s->bl_head + s->bl_len++) & (s->bl_cap - 1)] = mi;
	return 0;
}

/* The region covering a node's whole address space in host (k = 0) or GPU
 * (k = 1) memory: node_mr[2 * node + k]. */
static struct hca_mr *whole_mr(struct fab *f, struct hca *h, enum hca_mem mem)
{
	struct hca_mr **mr = &f->node_mr[2 * h->n->idx + (mem == HCA_MEM_GPU)];

	if (!*mr)
		*mr = hca_reg_mr(h, NULL, 0, 1ULL << 62,
				 HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE |
				 HCA_ACCESS_REMOTE_READ | HCA_ACCESS_REMOTE_ATOMIC, mem);
	return *mr;
}

/* The region the HCA touches for message m at node h: a GPU buffer is used
 * in place with GPUDirect, through a host bounce buffer without it or over
 * a socket (fab_msg_stages). */
static struct hca_mr *msg_mr(struct fab *f, struct hca *h, const struct fab_msg *m)
{
	enum hca_mem mem = m->mem == HCA_MEM_GPU && f->p.host_model &&
			   !fab_msg_stages(f, m) ? HCA_MEM_GPU : HCA_MEM_HOST;

	return whole_mr(f, h, mem);
}

static int connect_pair(struct fab *f, struct hca_qp *a, struct hca_qp *b, uint8_t sl)
{
	const struct fab_params *p = &f->p;
	struct hca_qp_attr at = {
		.qp_state = HCA_QPS_INIT,
	};
	uint32_t all = HCA_QP_STATE | HCA_QP_PATH_MTU | HCA_QP_AV | HCA_QP_DEST_QPN |
		       HCA_QP_RQ_PSN | HCA_QP_MAX_DEST_RD_ATOMIC | HCA_QP_MIN_RNR_TIMER;
	struct hca_qp *qp[2] = { a, b };

	for (int i = 0; i < 2; i++) {
		struct hca_qp *me = qp[i], *peer = qp[1 - i];

		if (hca_modify_qp(me, &at, HCA_QP_STATE))
			return -1;
		struct hca_qp_attr rtr = {
			.qp_state = HCA_QPS_RTR, .path_mtu = p->mtu,
			.dlid = hca_lid(peer->hca), .sl = sl, .dest_qp_num = peer->qpn,
			.rq_psn = 0, .max_dest_rd_atomic = p->hca_max_rd_atomic,
			.min_rnr_timer = p->hca_min_rnr_timer,
		};

		if (hca_modify_qp(me, &rtr, all & ~0u))
			return -1;
		struct hca_qp_attr rts = {
			.qp_state = HCA_QPS_RTS, .sq_psn = 0, .timeout = p->hca_timeout,
			.retry_cnt = p->hca_retry_cnt, .rnr_retry = p->hca_rnr_retry,
			.max_rd_atomic = p->hca_max_rd_atomic,
		};

		if (hca_modify_qp(me, &rts, HCA_QP_STATE | HCA_QP_SQ_PSN | HCA_QP_TIMEOUT |
				  HCA_QP_RETRY_CNT | HCA_QP_RNR_RETRY | HCA_QP_MAX_QP_RD_ATOMIC))
			return -1;
	}
	return 0;
}

/*
 * A UD pair: no connection, the destination is named in each work request
 * (its address handle, QPN and Q_Key). The SL rides in the QP here (the
 * HCA takes a UD packet's SL and VL from its QP, not from the AH): sl on
 * the VL ib.sl2vl maps it to, or 0xff for VL15.
 */
#define FAB_UD_QKEY 0x80010000u

static int ud_pair(struct fab *f, struct hca_qp *a, struct hca_qp *b, uint8_t sl)
{
	struct hca_qp *qp[2] = { a, b };

	(void)f;
	for (int i = 0; i < 2; i++) {
		struct hca_qp_attr at = {
			.qp_state = HCA_QPS_INIT, .qkey = FAB_UD_QKEY,
			.dlid = hca_lid(qp[1 - i]->hca), .sl = sl == 0xff ? 0 : sl,
		};

		if (hca_modify_qp(qp[i], &at, HCA_QP_STATE | HCA_QP_QKEY |
				  (sl == 0xff ? 0 : HCA_QP_AV)))
			return -1;
		at.qp_state = HCA_QPS_RTR;
		if (hca_modify_qp(qp[i], &at, HCA_QP_STATE))
			return -1;
		at.qp_state = HCA_QPS_RTS;
		at.sq_psn = 0;
		if (hca_modify_qp(qp[i], &at, HCA_QP_STATE | HCA_QP_SQ_PSN))
			return -1;
		if (sl == 0xff)
			qp[i]->vl = FAB_VL15;	/* management datagrams travel on VL15 */
	}
	return 0;
}

/*
 * The traffic learns what happened from the transport itself
 * (fab_traffic_delivered/completed); its completion queues are polled as
 * each entry appears, as a busy-polling program does, so they stay a few
 * entries deep and in cache. Queues that kept every CQE of a run (up to
 * two per message, 64 bytes each, never read) cost bench/run's B1 over
 * UD 11 MB of its 35 MB and a quarter of its run time (page faults and
 * cache misses: 0.25 s -> 0.18 s), for nothing the report uses.
 */
#define FAB_TRAFFIC_CQE 64

static void traffic_cq_drain(struct hca_cq *cq, void *ctx)
{
	struct hca_wc wc[4];

	(void)ctx;
	while (hca_poll_cq(cq, 4, wc) > 0)
		;
}

int fab_traffic_setup(struct fab *f, const struct fab_scan *sc)
{
	struct fab_msgs *ms = f->msgs;

	f->streams = calloc(ms->nstreams ? ms->nstreams : 1, sizeof(*f->streams));
	f->node_mr = calloc((size_t)f->nnodes * 2, sizeof(*f->node_mr));
	f->node_cq = calloc((size_t)f->nnodes, sizeof(*f->node_cq));
	if (!f->streams || !f->node_mr || !f->node_cq)
		return -1;
	for (uint32_t k = 0; k < sc->nfirst; k++) {
		struct fab_msg tmp;
		const struct fab_msg *m = fab_msgs_in(ms, sc->first[k], &tmp);
		struct fab_stream *s = &f->streams[m->stream];
		struct hca *hs = f->nodes[m->src].hca, *hd = f->nodes[m->dst].hca;

		for (int side = 0; side < 2; side++) {
			struct hca *h = side ? hd : hs;

			if (!f->node_cq[h->n->idx])
				f->node_cq[h->n->idx] = hca_create_cq(h, FAB_TRAFFIC_CQE,
								      traffic_cq_drain, NULL);
			if (!f->node_cq[h->n->idx] || !msg_mr(f, h, m))
				return -1;
		}
		uint32_t count = sc->count[m->stream];
		/* Receives are posted with their SENDs and a datagram's may
		 * outlive its completion (or never be consumed, when it is
		 * dropped): the receive queue takes the whole stream, up to
		 * the HCA's limit, and grows only as it is used. */
		uint32_t rq_depth = count < HCA_MAX_QP_WR ? count + 1 : HCA_MAX_QP_WR;

		/* The model's queue also holds a completed WQE until the ones
		 * before it are (in order, after the completion callback, which
		 * may post the next): room for twice the program's bound. */
		s->depth = count < FAB_TRAFFIC_SQ_DEPTH ? count + 1 : FAB_TRAFFIC_SQ_DEPTH;
		struct hca_qp_init_attr ia = {
			.qp_type = fab_msg_is_ud(m) ? HCA_QPT_UD : HCA_QPT_RC,
			.send_cq = f->node_cq[m->src], .recv_cq = f->node_cq[m->src],
			.cap = { .max_send_wr = count < FAB_TRAFFIC_SQ_DEPTH ? count + 1 :
						2 * FAB_TRAFFIC_SQ_DEPTH,
				 .max_recv_wr = rq_depth,
				 .max_inline_data = f->p.hca_max_inline },
		};

		s->sqp = hca_create_qp(hs, &ia);
		ia.send_cq = ia.recv_cq = f->node_cq[m->dst];
		s->dqp = hca_create_qp(hd, &ia);
		s->dmr = msg_mr(f, hd, m);
		if (!s->sqp || !s->dqp)
			return -1;
		if (fab_msg_is_ud(m) ? ud_pair(f, s->sqp, s->dqp, m->sl) :
				       connect_pair(f, s->sqp, s->dqp, m->sl))
			return -1;
	}
	return 0;
}

void fab_traffic_free(struct fab *f)
{
	for (int i = 0; i < f->nnodes && f->node_cq; i++)
		hca_destroy_cq(f->node_cq[i]);
	free(f->node_cq);
	free(f->node_mr);
	for (uint32_t i = 0; f->streams && i < f->msgs->nstreams; i++) {
		free(f->streams[i].bl);
		free(f->streams[i].parked);
	}
	free(f->streams);
}

bool fab_traffic_stream_full(const struct fab *f, uint32_t stream)
{
	const struct fab_stream *s = &f->streams[stream];

	return s->inflight == s->depth && hca_qp_state(s->sqp) != HCA_QPS_ERR;
}

int fab_traffic_park(struct fab *f, uint32_t r)
{
	struct fab_stream *s = &f->streams[f->msgs->runs[r].m.stream];

	if (s->nparked == s->parked_cap) {
		uint32_t cap = s->parked_cap ? 2 * s->parked_cap : 4;
		uint32_t *v = realloc(s->parked, (size_t)cap * sizeof(*v));

		if (!v)
			return -1;
		s->parked = v;
		s->parked_cap = cap;
	}
	s->parked[s->nparked++] = r;
	return 0;
}

/* A requester completion on the stream: its send queue slot is free, and
 * the stream's oldest waiting message takes it (a compact list's runs
 * parked there wait after the messages in its backlog). */
void fab_traffic_slot_free(struct fab *f, uint32_t stream)
{
	struct fab_stream *s = &f->streams[stream];

	if (s->inflight)
		s->inflight--;
	if (s->bl_len) {
		uint32_t next = s->bl[s->bl_head];

		s->bl_head = (s->bl_head + 1) & (s->bl_cap - 1);
		s->bl_len--;
		fab_traffic_post_now(f, next);
	} else if (s->nparked) {
		fab_plan_unpark(f, s->parked, &s->nparked);
	}
}

/* The receive message mi (a SEND or a datagram) needs, on its stream's
 * responder QP at the destination. */
static void post_recv(struct fab *f, uint32_t mi, const struct fab_msg *m)
{
	struct fab_stream *s = &f->streams[m->stream];
	struct hca_recv_wr r = {
		.wr_id = mi, .sg = { .addr = 0, .length = (uint32_t)m->bytes,
				     .lkey = msg_mr(f, s->dqp->hca, m)->lkey },
	};

	if (hca_post_recv(s->dqp, &r))
		fab_fail(f, "message %u: the destination refused the receive", mi);
}

void fab_traffic_recv(struct fab *f, uint32_t mi)
{
	struct fab_msg tmp;

	post_recv(f, mi, fab_msgs_in(f->msgs, mi, &tmp));
}

/* Post message mi now, on its stream's requester QP. */
void fab_traffic_post_now(struct fab *f, uint32_t mi)
{
	struct fab_msg *m = fab_msg_state(f, mi);

	if (!m) {
		fab_fail(f, "message %u: posted, but not in flight", mi);
		return;
	}
	struct fab_stream *s = &f->streams[m->stream];
	struct hca *src = f->nodes[m->src].hca;
	struct hca_send_wr wr = {
		.wr_id = mi, .send_flags = HCA_SEND_SIGNALED,
		.sg = { .addr = 0, .length = (uint32_t)m->bytes,
			.lkey = msg_mr(f, src, m)->lkey },
		.remote_addr = 0, .rkey = s->dmr->rkey,
	};

	/* A full send queue: the program waits for a completion before it
	 * stages or posts (an errored QP takes every post, completing it at
	 * once as flushed, and frees no slot later). A message back from
	 * staging has its slot already. */
	if (!m->staged && hca_qp_state(s->sqp) != HCA_QPS_ERR) {
		if (s->inflight == s->depth) {
			if (backlog_push(s, mi))
				fab_fail(f, "message %u: out of memory queueing it behind a full send queue", mi);
			return;
		}
		s->inflight++;
	}
	/* GPU data without GPUDirect (or for a socket): the program first
	 * copies it to host memory (cudaMemcpy), then posts (models/host). A
	 * READ stages after. */
	if (!m->staged && m->op != FAB_OP_READ && fab_msg_stages(f, m)) {
		sim_time_t t = host_stage_gpu_to_host(&src->host, f->eng.now, m->bytes);

		m->staged = true;
		m->start = f->eng.now;
		hca_post_at(src, t, mi);
		return;
	}
	if (m->bytes <= f->p.hca_max_inline && m->op != FAB_OP_READ)
		wr.send_flags |= HCA_SEND_INLINE;

	switch (m->op) {
	case FAB_OP_READ: wr.opcode = HCA_WR_RDMA_READ; break;
	case FAB_OP_SEND: wr.opcode = HCA_WR_SEND; break;
	default: wr.opcode = HCA_WR_RDMA_WRITE; break;
	}
	if (fab_msg_is_ud(m)) {
		wr.opcode = HCA_WR_SEND;
		wr.ah.dlid = hca_lid(s->dqp->hca);
		wr.ah.sl = m->sl == 0xff ? 0 : m->sl;
		wr.remote_qpn = s->dqp->qpn;
		wr.remote_qkey = FAB_UD_QKEY;
	}
	if (!m->staged)
		m->start = f->eng.now;
	/* A SEND needs a receive at the destination (a datagram that finds
	 * none is dropped silently, IBA 9.8.5; an RC SEND draws an RNR NAK).
	 * It is posted now, with the send: the packet cannot arrive before a
	 * wire's latency has passed, and the receive queue holds the stream's
	 * messages in flight rather than all of them. Posting every receive
	 * before the run cost bench/run's B1 at 1 s 52 MB of receive rings
	 * (1.19M receives), and a message posted out of its index order found
	 * another message's receive, of another length. A destination in
	 * another partition posts it itself, one look-ahead on (still before
	 * the first packet: that crosses a cable and the HCA's pipeline):
	 * an event of its port, the message's index in the argument. */
	if (m->op == FAB_OP_SEND || fab_msg_is_ud(m)) {
		const struct port *dp = s->dqp->hca->port;
		uint32_t comp = f->port_comp0 + (uint32_t)(dp - f->port_mem);

		if (!f->p.cut_links && sim_local(&f->eng, comp))
			post_recv(f, mi, m);
		else if (mi >= PORT_WIRE_MAX_PKTS ||
			 sim_schedule_at(&f->eng, f->eng.now + f->lookahead, comp, mi << 8 | PORT_EV_RECV))
			fab_fail(f, "message %u: its receive cannot be posted from another partition "
				 "(more than 2^24 messages, or out of memory)", mi);
		else
			f->aside_sent++;	/* an event one list has not (sim_aside) */
	}
	/* (a datagram larger than the MTU was refused by fab_msgs_check) */
	if (hca_post_send_msg(s->sqp, &wr, (int32_t)mi))
		fab_fail(f, "message %u: the HCA refused the work request", mi);
}

/* Queue message mi to be posted at t (the traffic's own post time). */
void fab_traffic_schedule(struct fab *f, uint32_t mi, sim_time_t t)
{
	struct fab_msg *m = f->live ? fab_live_add(f, mi) : fab_msg_state(f, mi);

	if (!m) {
		fab_fail(f, "out of memory for message %u in flight", mi);
		return;
	}

	if (t <= f->eng.now && f->eng.events)
		fab_traffic_post_now(f, mi);
	else
		hca_post_at(f->nodes[m->src].hca, t, mi);
}
