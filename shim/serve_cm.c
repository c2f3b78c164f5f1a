/* SPDX-License-Identifier: MIT */
/*
 * serve_cm.c - the connection manager behind the rdma_cm shim
 * (shim/rdmacm.c, docs/shim.md "rdma_cm"): ids, event channels and
 * listeners, and the CM's messages (IBA 12.6: REQ, REP, RTU, REJ, DREQ,
 * DREP; 12.11: SIDR_REQ and SIDR_REP for UD) as datagrams between the
 * hosts, so that connecting costs what the fabric says, at the simulated
 * time it happens.
 *
 * A host whose programs use rdma_cm gets a UD QP of the daemon's, standing
 * for the HCA's QP1 (the General Services Interface, IBA 13.5.1); every CM
 * message is one 256-byte MAD sent on it (IBA 13.4.1) to the peer host's.
 * The message's content stays in the daemon, named by the datagram's
 * immediate data, and takes effect when its receive completion becomes
 * visible at the peer.
 *
 * The states follow the IBA's CM state machine (12.9.6) as rdma_cm uses
 * it: the active side's REQ finds a listener by address and port (else a
 * REJ with reason 8, invalid service ID, 12.6.7.2); the passive side's
 * ACCEPT sends REP; the active side's library moves its QP to RTS on the
 * REP and sends RTU (ESTABLISHED at both ends); DREQ and DREP end it, one
 * DISCONNECTED event at each end. An id destroyed, or a process that dies,
 * says so to its peer as the kernel's CM would (REJ before RTU, DREQ after).
 *
 * Left out: address and route resolution are immediate (the kernel's ARP
 * over IPoIB and the SA's PathRecord query are not simulated: the daemon
 * knows every host's LID); a lost message is not retried (lossless IB
 * loses none; rdma_cm's response timeout is 4.3 s, 4.096 us x 2^20); no
 * MRA, LAP/APR (path migration), timewait, multicast joins or ECE.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim/serve_int.h"

#define GSI_QKEY	0x80010000u	/* QP1's well-known Q_Key (IBA 13.5.1) */
#define MAD_BYTES	256		/* IBA 13.4.1 */
#define GSI_RECVS	256
#define EPHEMERAL_LO	32768		/* ports an unbound id is given */
#define EPHEMERAL_N	28232		/* 32768 .. 60999, Linux's default range */
#define REJ_INVALID_SID	8		/* IBA 12.6.7.2 Table 112 */
#define REJ_CONSUMER	28
#define REJ_STALE	30		/* stale connection */
#define SIDR_REJECT	2		/* IBA 12.11.2 Table 120 */
#define SIDR_UNSUPPORTED 1

enum mad_type { M_REQ, M_REP, M_RTU, M_REJ, M_DREQ, M_DREP, M_SIDR_REQ, M_SIDR_REP };

struct cm_mad {
	struct cm_mad *next;
	uint32_t tag;
	enum mad_type type;
	int src_node, dst_node;
	uint32_t src_comm, dst_comm;	/* the ids at each end (0: none yet) */
	uint32_t ps;
	struct shim_cm_addr src, dst;	/* sender's address, receiver's (the service) */
	struct shim_cm_param param;
	int32_t reason;			/* REJ reason, SIDR_REP status */
	uint16_t src_lid;
	uint8_t pdata_len;
	uint8_t pdata[SHIM_CM_PDATA];
	sim_time_t due;
};

struct cm_gsi {
	struct srv *s;
	struct hca_qp *qp;
	struct hca_cq *cq;
	struct hca_mr *mr;
	uint8_t *buf;
	uint32_t qpn;
	uint16_t lid;
};

struct cm_srv {
	struct dcmid **ids;		/* by comm ID - 1; NULL once destroyed */
	uint32_t nids, capids;
	struct cm_gsi **gsi;		/* by node, made on first use */
	int *host_of;			/* node -> host index (-1: a switch) */
	int nnodes;
	struct cm_mad *flight;		/* sent, receive not yet completed */
	struct cm_mad *due, **due_tail;	/* received, in order of arrival */
	uint32_t next_tag, next_port;
};

struct cm_ev {
	struct cm_ev *next;
	struct shim_cm_event e;
};

struct dcmch {
	int efd;
	struct cm_ev *head, **tail;
};

enum cm_state {
	CS_IDLE, CS_BOUND, CS_ADDR, CS_ROUTE, CS_LISTEN, CS_REQ_SENT, CS_REQ_RCVD,
	CS_REP_SENT, CS_REP_RCVD, CS_CONNECTED, CS_DREQ_SENT, CS_DREQ_RCVD, CS_DONE,
};

struct dcmid {
	struct client *c;
	uint32_t h, chan, ps, comm, peer_comm;
	uint8_t qp_type;
	enum cm_state st;
	int peer_node;
	struct shim_cm_addr src, dst;
	bool told_disc;		/* DISCONNECTED delivered */
};

/* ---- the server's CM state ---------------------------------------------- */

static struct cm_srv *cm_get(struct srv *s)
{
	struct cm_srv *m = s->cm;

	if (m)
		return m;
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->nnodes = s->net.nnodes;
	m->gsi = calloc((size_t)m->nnodes, sizeof(*m->gsi));
	m->host_of = malloc((size_t)m->nnodes * sizeof(*m->host_of));
	if (!m->gsi || !m->host_of) {
		free(m->gsi);
		free(m->host_of);
		free(m);
		return NULL;
	}
	for (int i = 0; i < m->nnodes; i++)
		m->host_of[i] = -1;
	for (int k = 0; k < s->nhosts; k++)
		m->host_of[net_host(&s->net, k)] = k;
	m->due_tail = &m->due;
	m->next_tag = 1;
	s->cm = m;
	return m;
}

static uint32_t node_addr(const struct cm_srv *m, int node)
{
	return shim_host_addr((uint32_t)m->host_of[node]);
}

/* The node an address names for a program on `own`, or -1. */
static int addr_node(const struct srv *s, int own, uint32_t ip)
{
	int64_t k = shim_addr_host(ip);

	if (k >= 0)
		return k < s->nhosts ? net_host(&s->net, (int)k) : -1;
	if ((ip >> 24) == 127 || ip == 0)
		return own;	/* loopback, or any: the program's own host */
	return -1;
}

/* Room for one more id in the table of comm IDs. */
static bool ids_room(struct cm_srv *m)
{
	if (m->nids == m->capids) {
		uint32_t n = m->capids ? m->capids * 2 : 64;
		struct dcmid **v = realloc(m->ids, n * sizeof(*v));

		if (!v)
			return false;
		m->ids = v;
		m->capids = n;
	}
	return true;
}

static struct dcmid *id_by_comm(const struct cm_srv *m, uint32_t comm)
{
	return comm && comm <= m->nids ? m->ids[comm - 1] : NULL;
}

/* A new id of client c on channel chan, with its handle and comm ID. */
static struct dcmid *id_new(struct client *c, uint32_t chan, uint32_t ps, uint8_t qp_type)
{
	struct cm_srv *m = c->s->cm;
	struct dcmid *d;
	uint32_t h;

	if (!ids_room(m) || !(d = calloc(1, sizeof(*d))))
		return NULL;
	if (srv_obj_new(c, O_CMID, &h)) {
		free(d);
		return NULL;
	}
	m->ids[m->nids++] = d;
	d->comm = m->nids;
	d->c = c->p;
	d->h = h;
	d->chan = chan;
	d->ps = ps;
	d->qp_type = qp_type;
	d->peer_node = -1;
	c->p->objs[h].u.cmid = d;
	return d;
}

/* ---- the GSI QPs and the messages --------------------------------------- */

static void gsi_post_recv(struct cm_gsi *g)
{
	struct hca_recv_wr r = { .wr_id = 1,
				 .sg = { (uint64_t)(uintptr_t)g->buf + MAD_BYTES,
					 MAD_BYTES + SHIM_UD_GRH, g->mr->lkey } };

	(void)hca_post_recv(g->qp, &r);
}

static void gsi_notify(struct hca_cq *cq, void *ctx)
{
	struct cm_gsi *g = ctx;
	struct cm_srv *m = g->s->cm;
	struct hca_wc wc;

	while (hca_poll_cq(cq, 1, &wc) == 1) {
		if (wc.opcode != HCA_WC_RECV)
			continue;	/* a send's completion: nothing to do */
		if (wc.status == HCA_WC_SUCCESS) {
			for (struct cm_mad **pp = &m->flight; *pp; pp = &(*pp)->next) {
				struct cm_mad *x = *pp;

				if (x->tag != wc.imm_data)
					continue;
				*pp = x->next;
				x->next = NULL;
				x->due = wc.time;
				*m->due_tail = x;
				m->due_tail = &x->next;
				break;
			}
		}
		gsi_post_recv(g);
	}
}

static struct cm_gsi *gsi_get(struct srv *s, int node)
{
	struct cm_srv *m = s->cm;
	struct cm_gsi *g = m->gsi[node];
	struct hca *h = fab_hca(s->f, node);
	struct hca_qp_init_attr a = { .qp_type = HCA_QPT_UD };
	struct hca_qp_attr at = { .qp_state = HCA_QPS_INIT, .qkey = GSI_QKEY };

	if (g)
		return g->mr ? g : NULL;	/* made, or found impossible once */
	if (!h)
		return NULL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->s = s;
	g->buf = calloc(1, 2 * MAD_BYTES + SHIM_UD_GRH);
	g->cq = g->buf ? hca_create_cq(h, 2 * GSI_RECVS, gsi_notify, g) : NULL;
	a.send_cq = a.recv_cq = g->cq;
	a.cap.max_send_wr = GSI_RECVS;
	a.cap.max_recv_wr = GSI_RECVS;
	a.sq_sig_all = true;
	g->qp = g->cq ? hca_create_qp(h, &a) : NULL;
	g->mr = g->qp ? hca_reg_mr(h, g->buf, (uint64_t)(uintptr_t)g->buf,
				   2 * MAD_BYTES + SHIM_UD_GRH, HCA_ACCESS_LOCAL_WRITE,
				   HCA_MEM_HOST) : NULL;
	if (!g->mr || hca_modify_qp(g->qp, &at, HCA_QP_STATE | HCA_QP_QKEY) ||
	    (at.qp_state = HCA_QPS_RTR, hca_modify_qp(g->qp, &at, HCA_QP_STATE)) ||
	    (at.qp_state = HCA_QPS_RTS, hca_modify_qp(g->qp, &at, HCA_QP_STATE | HCA_QP_SQ_PSN))) {
		srv_log(s, "host %s: no UD QP for the connection manager: its messages arrive "
			"at once", s->net.nodes[node].desc);
		/* kept, marked (no MR), so that this is tried once, not per
		 * message; the model's half-made objects stay with its HCA,
		 * unused, and the buffer until cm_fini */
		g->mr = NULL;
		m->gsi[node] = g;
		return NULL;
	}
	g->qpn = hca_qp_num(g->qp);
	g->lid = hca_lid(h);
	for (int i = 0; i < GSI_RECVS; i++)
		gsi_post_recv(g);
	m->gsi[node] = g;
	return g;
}

/*
 * Send a message: a 256-byte datagram from src's GSI QP to dst's. Where
 * no datagram can go (a fabric without UD), it arrives at once.
 */
static void mad_send(struct srv *s, struct cm_mad *x)
{
	struct cm_srv *m = s->cm;
	struct cm_gsi *a = gsi_get(s, x->src_node), *b = gsi_get(s, x->dst_node);

	x->tag = m->next_tag++;
	if (!m->next_tag)
		m->next_tag = 1;
	x->src_lid = a ? a->lid : 0;
	if (s->trace)
		fprintf(stderr, "ibfab serve: t=%" PRIu64 " CM message %u (type %d) from host %d "
			"to host %d%s\n", (uint64_t)sim_now(s->eng), x->tag, (int)x->type,
			x->src_node, x->dst_node, a && b ? "" : " (no CM QP: at once)");
	if (a && b) {
		struct hca_send_wr w = {
			.opcode = HCA_WR_SEND_WITH_IMM,
			.send_flags = HCA_SEND_SIGNALED,
			.sg = { (uint64_t)(uintptr_t)a->buf, MAD_BYTES, a->mr->lkey },
			.imm_data = x->tag,
			.ah = { .dlid = b->lid, .sl = 0 },
			.remote_qpn = b->qpn,
			.remote_qkey = GSI_QKEY,
		};

		if (!hca_post_send(a->qp, &w)) {
			x->next = m->flight;
			m->flight = x;
			return;
		}
	}
	x->next = NULL;
	x->due = sim_now(s->eng);
	*m->due_tail = x;
	m->due_tail = &x->next;
}

static void mad_reply(struct srv *s, const struct cm_mad *to, enum mad_type t, uint32_t my_comm,
		      int32_t reason)
{
	struct cm_mad *x = calloc(1, sizeof(*x));

	if (!x)
		return;
	x->type = t;
	x->src_node = to->dst_node;
	x->dst_node = to->src_node;
	x->src_comm = my_comm;
	x->dst_comm = to->src_comm;
	x->ps = to->ps;
	x->src = to->dst;
	x->dst = to->src;
	x->reason = reason;
	mad_send(s, x);
}

/* A message from an id to its peer. */
static int mad_to_peer(struct dcmid *d, enum mad_type t, const struct shim_cm_param *p,
		       int32_t reason, const uint8_t *pdata, uint32_t len)
{
	struct cm_mad *x = calloc(1, sizeof(*x));

	if (!x)
		return ENOMEM;
	x->type = t;
	x->src_node = d->c->p->node;
	x->dst_node = d->peer_node;
	x->src_comm = d->comm;
	x->dst_comm = d->peer_comm;
	x->ps = d->ps;
	x->src = d->src;
	x->dst = d->dst;
	if (p)
		x->param = *p;
	x->reason = reason;
	x->pdata_len = (uint8_t)len;
	if (len)
		memcpy(x->pdata, pdata, len);
	mad_send(d->c->s, x);
	return 0;
}

/* ---- events ------------------------------------------------------------- */

static struct cm_ev *ev_push(struct dcmid *d, uint32_t type, int32_t status,
			     const struct cm_mad *x)
{
	struct obj *o = srv_obj_get(d->c, d->chan, O_CMCH);
	struct cm_ev *e;
	uint64_t one = 1;

	if (!o || d->c->zombie || !(e = calloc(1, sizeof(*e))))
		return NULL;
	e->e.event = type;
	e->e.status = status;
	e->e.id = d->h;
	e->e.listen_id = -1;
	e->e.src = d->src;
	e->e.dst = d->dst;
	if (x) {
		e->e.param = x->param;
		e->e.dlid = x->src_lid;
		e->e.pdata_len = x->pdata_len;
		memcpy(e->e.pdata, x->pdata, x->pdata_len);
	}
	*o->u.cmch->tail = e;
	o->u.cmch->tail = &e->next;
	if (write(o->u.cmch->efd, &one, sizeof(one)) < 0) {
		/* a full eventfd cannot happen at these counts */
	}
	return e;
}

/*
 * An id destroyed with events not yet taken: they go with it (as the
 * kernel's rdma_cm purges a destroyed id's events), each with its count on
 * the channel's eventfd; a connect request to a listener that goes no
 * longer names it.
 */
static void ev_purge(struct client *c, uint32_t chan, uint32_t h)
{
	struct obj *o = srv_obj_get(c, chan, O_CMCH);
	uint64_t one;

	if (!o)
		return;
	for (struct cm_ev **pp = &o->u.cmch->head; *pp;) {
		struct cm_ev *e = *pp;

		if (e->e.listen_id == (int32_t)h)
			e->e.listen_id = -1;
		if (e->e.id != h) {
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		free(e);
		if (read(o->u.cmch->efd, &one, sizeof(one)) < 0) {
			/* the program took the count already: nothing to undo */
		}
	}
	o->u.cmch->tail = &o->u.cmch->head;
	while (*o->u.cmch->tail)
		o->u.cmch->tail = &(*o->u.cmch->tail)->next;
}

bool cm_try_wake(struct client *c)
{
	struct obj *o = srv_obj_get(c, c->wait_h, O_CMCH);
	struct cm_ev *e;
	struct shim_rep r;

	/* its channel destroyed by another thread: the kernel leaves a read
	 * of a closed descriptor blocked, and so do we (rping's CM thread is
	 * still in rdma_get_cm_event when its main thread ends the program) */
	if (!o)
		return false;
	if (!(e = o->u.cmch->head))
		return false;
	if (!(o->u.cmch->head = e->next))
		o->u.cmch->tail = &o->u.cmch->head;
	memset(&r, 0, sizeof(r));
	r.u.cm = e->e;
	free(e);
	c->wait = W_NONE;
	srv_reply(c, &r, -1);
	return true;
}

/* ---- receiving ---------------------------------------------------------- */

static struct dcmid *find_listener(struct srv *s, const struct cm_mad *x)
{
	struct cm_srv *m = s->cm;

	for (uint32_t i = 0; i < m->nids; i++) {
		struct dcmid *d = m->ids[i];

		if (d && d->st == CS_LISTEN && !d->c->zombie && d->c->p->node == x->dst_node &&
		    d->ps == x->ps && d->src.port == x->dst.port &&
		    (!d->src.ip || d->src.ip == x->dst.ip))
			return d;
	}
	return NULL;
}

static void on_req(struct srv *s, struct cm_mad *x)
{
	struct dcmid *l = find_listener(s, x), *d;
	bool ud = x->type == M_SIDR_REQ;

	if (!l) {
		if (ud)
			mad_reply(s, x, M_SIDR_REP, 0, SIDR_UNSUPPORTED);
		else
			mad_reply(s, x, M_REJ, 0, REJ_INVALID_SID);
		return;
	}
	if (!(d = id_new(l->c, l->chan, l->ps, l->qp_type))) {
		mad_reply(s, x, ud ? M_SIDR_REP : M_REJ, 0, ud ? SIDR_REJECT : REJ_CONSUMER);
		return;
	}
	d->st = CS_REQ_RCVD;
	d->peer_node = x->src_node;
	d->peer_comm = x->src_comm;
	d->src = x->dst;
	d->dst = x->src;
	struct cm_ev *e = ev_push(d, RDMA_CM_EVENT_CONNECT_REQUEST, 0, x);

	if (e)
		e->e.listen_id = (int32_t)l->h;	/* the event names the listener too */
}

static void on_mad(struct srv *s, struct cm_mad *x)
{
	struct dcmid *d;

	if (x->type == M_REQ || x->type == M_SIDR_REQ) {
		on_req(s, x);
		return;
	}
	d = id_by_comm(s->cm, x->dst_comm);
	if (d && (d->c->zombie || d->peer_node != x->src_node ||
		  (d->peer_comm && d->peer_comm != x->src_comm)))
		d = NULL;
	switch (x->type) {
	case M_REP:
		if (!d || d->st != CS_REQ_SENT) {
			/* nobody waits for it: the passive side hears so */
			mad_reply(s, x, M_REJ, 0, REJ_STALE);
			return;
		}
		d->peer_comm = x->src_comm;
		d->st = CS_REP_RCVD;
		ev_push(d, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, x);
		return;
	case M_RTU:
		if (d && d->st == CS_REP_SENT) {
			d->st = CS_CONNECTED;
			ev_push(d, RDMA_CM_EVENT_ESTABLISHED, 0, x);
		}
		return;
	case M_REJ:
		if (!d)
			return;
		if (d->st == CS_REQ_SENT || d->st == CS_REP_SENT || d->st == CS_REP_RCVD) {
			d->st = CS_DONE;
			ev_push(d, RDMA_CM_EVENT_REJECTED, x->reason, x);
		}
		return;
	case M_DREQ:
		if (!d) {
			/* a connection already gone still answers (IBA 12.9.6.7) */
			mad_reply(s, x, M_DREP, 0, 0);
			return;
		}
		if (d->st == CS_DREQ_SENT) {
			/* both ends disconnect at once */
			mad_to_peer(d, M_DREP, NULL, 0, NULL, 0);
			d->st = CS_DONE;
		} else if (d->st == CS_CONNECTED || d->st == CS_REP_SENT || d->st == CS_REP_RCVD) {
			d->st = CS_DREQ_RCVD;
		} else {
			mad_reply(s, x, M_DREP, d->comm, 0);
			return;
		}
		if (!d->told_disc) {
			d->told_disc = true;
			ev_push(d, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
		}
		return;
	case M_DREP:
		if (d && d->st == CS_DREQ_SENT) {
			d->st = CS_DONE;
			if (!d->told_disc) {
				d->told_disc = true;
				ev_push(d, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
			}
		}
		return;
	case M_SIDR_REP:
		if (!d || d->st != CS_REQ_SENT)
			return;
		if (x->reason) {
			d->st = CS_DONE;
			ev_push(d, RDMA_CM_EVENT_UNREACHABLE, -ECONNREFUSED, x);
		} else {
			d->st = CS_CONNECTED;
			ev_push(d, RDMA_CM_EVENT_ESTABLISHED, 0, x);
		}
		return;
	case M_REQ:
	case M_SIDR_REQ:
		return;
	}
}

void cm_apply(struct srv *s)
{
	struct cm_srv *m = s->cm;
	sim_time_t now = sim_now(s->eng);

	if (!m)
		return;
	/* in order of arrival; a message acted on may send others */
	while (m->due && m->due->due <= now) {
		struct cm_mad *x = m->due;

		if (!(m->due = x->next))
			m->due_tail = &m->due;
		if (s->trace)
			fprintf(stderr, "ibfab serve: t=%" PRIu64 " CM message %u arrives\n",
				(uint64_t)now, x->tag);
		on_mad(s, x);
		free(x);
	}
}

sim_time_t cm_next(const struct srv *s)
{
	sim_time_t t = SIM_TIME_MAX;

	if (s->cm)
		for (const struct cm_mad *x = s->cm->due; x; x = x->next)
			if (x->due < t)
				t = x->due;
	return t;
}

/* ---- requests ----------------------------------------------------------- */

static struct dcmid *id_get(struct client *c, uint32_t h)
{
	struct obj *o = srv_obj_get(c, h, O_CMID);

	return o ? o->u.cmid : NULL;
}

static int reply_addr(struct client *c, const struct dcmid *d, uint32_t h)
{
	struct shim_rep r;

	memset(&r, 0, sizeof(r));
	r.u.cm_addr.handle = h;
	if (d) {
		r.u.cm_addr.src = d->src;
		r.u.cm_addr.dst = d->dst;
		if (d->peer_node >= 0 && fab_hca(c->s->f, d->peer_node))
			r.u.cm_addr.dlid = hca_lid(fab_hca(c->s->f, d->peer_node));
	}
	srv_reply(c, &r, -1);
	return -1;
}

static bool port_taken(const struct cm_srv *m, const struct dcmid *self, int node, uint32_t ps,
		       uint16_t port)
{
	for (uint32_t i = 0; i < m->nids; i++) {
		const struct dcmid *d = m->ids[i];

		if (d && d != self && !d->c->zombie && d->c->p->node == node && d->ps == ps &&
		    d->src.port == port && d->st != CS_IDLE && d->st != CS_DONE &&
		    d->st != CS_REQ_RCVD && d->st != CS_REP_SENT && d->st != CS_CONNECTED &&
		    d->st != CS_DREQ_RCVD)
			return true;
	}
	return false;
}

static int do_bind(struct client *c, struct dcmid *d, struct shim_cm_addr a)
{
	struct cm_srv *m = c->s->cm;
	int node = addr_node(c->s, c->p->node, a.ip);

	if (d->st != CS_IDLE)
		return EINVAL;
	if (node != c->p->node)
		return EADDRNOTAVAIL;
	if (a.ip)
		a.ip = node_addr(m, c->p->node);	/* any loopback address is the host's own */
	if (!a.port) {
		for (uint32_t i = 0; i < EPHEMERAL_N && !a.port; i++) {
			uint16_t p = (uint16_t)(EPHEMERAL_LO + (m->next_port++ % EPHEMERAL_N));

			if (!port_taken(m, d, c->p->node, d->ps, p))
				a.port = p;
		}
		if (!a.port)
			return EADDRINUSE;
	} else if (port_taken(m, d, c->p->node, d->ps, a.port)) {
		return EADDRINUSE;
	}
	d->src = a;
	d->st = CS_BOUND;
	return 0;
}

static int op_create_id(struct client *c, const struct shim_req *q)
{
	struct dcmid *d;

	if (!cm_get(c->s))
		return ENOMEM;
	if (!srv_obj_get(c, q->u.cm_id.channel, O_CMCH))
		return EBADF;
	if (q->u.cm_id.ps != RDMA_PS_TCP && q->u.cm_id.ps != RDMA_PS_UDP &&
	    q->u.cm_id.ps != RDMA_PS_IB)
		return EPROTONOSUPPORT;
	if (!(d = id_new(c, q->u.cm_id.channel, q->u.cm_id.ps, (uint8_t)q->u.cm_id.qp_type)))
		return ENOMEM;
	return reply_addr(c, NULL, d->h);
}

static bool is_ud(const struct dcmid *d)
{
	return d->ps == RDMA_PS_UDP || d->qp_type == IBV_QPT_UD;
}

int cm_op(struct client *c, const struct shim_req *q, const uint8_t *tail, int *fd)
{
	struct srv *s = c->s;
	struct cm_srv *m = cm_get(s);
	struct dcmid *d = NULL;
	struct obj *o;
	uint32_t h;
	int rc;

	if (!m)
		return ENOMEM;
	switch (q->op) {
	case SHIM_OP_CM_CREATE_CHANNEL: {
		struct dcmch *ch;

		if (*fd < 0)
			return EBADF;
		if (!(ch = calloc(1, sizeof(*ch))))
			return ENOMEM;
		if ((rc = srv_obj_new(c, O_CMCH, &h))) {
			free(ch);
			return rc;
		}
		ch->efd = *fd;
		*fd = -1;
		ch->tail = &ch->head;
		c->p->objs[h].u.cmch = ch;
		return reply_addr(c, NULL, h);
	}
	case SHIM_OP_CM_DESTROY_CHANNEL:
		if (!(o = srv_obj_get(c, q->u.obj.handle, O_CMCH)))
			return EBADF;
		for (uint32_t i = 0; i < c->p->nobjs; i++)
			if (c->p->objs[i].t == O_CMID && c->p->objs[i].u.cmid->chan == q->u.obj.handle)
				return EBUSY;
		cm_obj_destroy(c, o, q->u.obj.handle);
		return 0;
	case SHIM_OP_CM_CREATE_ID:
		return op_create_id(c, q);
	case SHIM_OP_CM_GET_EVENT:
		if (!(o = srv_obj_get(c, q->u.cm_get.channel, O_CMCH)))
			return EBADF;
		if (!o->u.cmch->head && q->u.cm_get.nonblock)
			return EAGAIN;
		srv_park(c, W_CMEV, SIM_TIME_MAX, q->u.cm_get.channel, 0);
		cm_try_wake(c);
		return -1;
	default:
		break;
	}
	/* the rest name an id */
	h = q->op == SHIM_OP_CM_MIGRATE ? q->u.cm_migrate.id : q->u.cm.id;
	if (!(d = id_get(c, h)))
		return EBADF;
	switch (q->op) {
	case SHIM_OP_CM_DESTROY_ID:
		cm_obj_destroy(c, &c->p->objs[h], h);
		return 0;
	case SHIM_OP_CM_MIGRATE:
		if (!srv_obj_get(c, q->u.cm_migrate.channel, O_CMCH))
			return EBADF;
		d->chan = q->u.cm_migrate.channel;
		return 0;
	case SHIM_OP_CM_BIND:
		if ((rc = do_bind(c, d, q->u.cm.src)))
			return rc;
		return reply_addr(c, d, h);
	case SHIM_OP_CM_RESOLVE_ADDR: {
		int node = addr_node(s, c->p->node, q->u.cm.dst.ip);

		if (d->st == CS_IDLE) {
			if ((rc = do_bind(c, d, q->u.cm.src)))
				return rc;
		} else if (d->st != CS_BOUND && d->st != CS_ADDR) {
			return EINVAL;
		}
		if (!d->src.ip)
			d->src.ip = node_addr(m, c->p->node);
		d->dst = q->u.cm.dst;
		if (node < 0) {
			ev_push(d, RDMA_CM_EVENT_ADDR_ERROR, -EHOSTUNREACH, NULL);
			return 0;
		}
		d->dst.ip = node_addr(m, node);
		d->peer_node = node;
		d->st = CS_ADDR;
		ev_push(d, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL);
		return reply_addr(c, d, h);
	}
	case SHIM_OP_CM_RESOLVE_ROUTE:
		if (d->st != CS_ADDR)
			return EINVAL;
		d->st = CS_ROUTE;
		ev_push(d, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL);
		return reply_addr(c, d, h);
	case SHIM_OP_CM_LISTEN:
		if (d->st == CS_IDLE && (rc = do_bind(c, d, (struct shim_cm_addr){ 0 })))
			return rc;
		if (d->st != CS_BOUND)
			return EINVAL;
		d->st = CS_LISTEN;
		/* scripts wait for this line before they start a client */
		srv_log(s, "pid %u (host %s, %s) listens on rdma_cm port %u", c->p->pid,
			s->net.nodes[c->p->node].desc,
			d->ps == RDMA_PS_UDP ? "UDP" : d->ps == RDMA_PS_IB ? "IB" : "TCP", d->src.port);
		return 0;
	case SHIM_OP_CM_CONNECT:
		if (d->st != CS_ROUTE)
			return EINVAL;
		if (q->inline_len > (is_ud(d) ? SHIM_CM_PDATA_SIDR_REQ : SHIM_CM_PDATA_REQ))
			return EINVAL;
		d->peer_comm = 0;
		if ((rc = mad_to_peer(d, is_ud(d) ? M_SIDR_REQ : M_REQ, &q->u.cm.param, 0, tail,
				      q->inline_len)))
			return rc;
		d->st = CS_REQ_SENT;
		return 0;
	case SHIM_OP_CM_ACCEPT:
		if (d->st != CS_REQ_RCVD)
			return EINVAL;
		if (q->inline_len > (is_ud(d) ? SHIM_CM_PDATA_SIDR_REP : SHIM_CM_PDATA_REP))
			return EINVAL;
		if ((rc = mad_to_peer(d, is_ud(d) ? M_SIDR_REP : M_REP, &q->u.cm.param, 0, tail,
				      q->inline_len)))
			return rc;
		d->st = is_ud(d) ? CS_CONNECTED : CS_REP_SENT;
		return 0;
	case SHIM_OP_CM_REJECT:
		if (d->st != CS_REQ_RCVD)
			return EINVAL;
		if (q->inline_len > (is_ud(d) ? SHIM_CM_PDATA_SIDR_REP : SHIM_CM_PDATA_REJ))
			return EINVAL;
		if ((rc = mad_to_peer(d, is_ud(d) ? M_SIDR_REP : M_REJ, NULL,
				      is_ud(d) ? SIDR_REJECT : REJ_CONSUMER, tail, q->inline_len)))
			return rc;
		d->st = CS_DONE;
		return 0;
	case SHIM_OP_CM_ESTABLISH:
		if (d->st != CS_REP_RCVD)
			return EINVAL;
		if ((rc = mad_to_peer(d, M_RTU, NULL, 0, NULL, 0)))
			return rc;
		d->st = CS_CONNECTED;
		return 0;
	case SHIM_OP_CM_DISCONNECT:
		if (d->st == CS_DREQ_RCVD) {
			d->st = CS_DONE;
			return mad_to_peer(d, M_DREP, NULL, 0, NULL, 0);
		}
		if (d->st != CS_CONNECTED && d->st != CS_REP_SENT && d->st != CS_REP_RCVD)
			return EINVAL;
		if (is_ud(d)) {
			d->st = CS_DONE;
			return 0;
		}
		d->st = CS_DREQ_SENT;
		return mad_to_peer(d, M_DREQ, NULL, 0, NULL, 0);
	default:
		return EPROTO;
	}
}

/* ---- destruction -------------------------------------------------------- */

void cm_obj_destroy(struct client *c, struct obj *o, uint32_t h)
{
	struct cm_srv *m = c->s->cm;

	if (o->t == O_CMCH) {
		struct dcmch *ch = o->u.cmch;

		while (ch->head) {
			struct cm_ev *e = ch->head;

			ch->head = e->next;
			free(e);
		}
		close(ch->efd);
		free(ch);
	} else if (o->t == O_CMID) {
		struct dcmid *d = o->u.cmid;

		if (d->st == CS_LISTEN)
			srv_log(c->s, "pid %u (host %s) no longer listens on rdma_cm port %u",
				c->p->pid, c->s->net.nodes[c->p->node].desc, d->src.port);
		/* the peer hears of it as from the kernel's CM */
		if (!is_ud(d)) {
			if (d->st == CS_REQ_RCVD)
				mad_to_peer(d, M_REJ, NULL, REJ_CONSUMER, NULL, 0);
			else if (d->st == CS_CONNECTED || d->st == CS_REP_SENT ||
				 d->st == CS_REP_RCVD)
				mad_to_peer(d, M_DREQ, NULL, 0, NULL, 0);
			else if (d->st == CS_DREQ_RCVD)
				mad_to_peer(d, M_DREP, NULL, 0, NULL, 0);
		}
		if (m && d->comm && d->comm <= m->nids)
			m->ids[d->comm - 1] = NULL;
		ev_purge(c, d->chan, h);
		free(d);
	}
	memset(&c->p->objs[h], 0, sizeof(c->p->objs[h]));
}

void cm_fini(struct srv *s)
{
	struct cm_srv *m = s->cm;

	if (!m)
		return;
	for (struct cm_mad *x = m->flight, *n; x; x = n) {
		n = x->next;
		free(x);
	}
	for (struct cm_mad *x = m->due, *n; x; x = n) {
		n = x->next;
		free(x);
	}
	for (int i = 0; i < m->nnodes; i++) {
		if (m->gsi[i]) {
			free(m->gsi[i]->buf);
			free(m->gsi[i]);
		}
	}
	free(m->gsi);
	free(m->host_of);
	free(m->ids);
	free(m);
	s->cm = NULL;
}
