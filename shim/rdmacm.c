/* SPDX-License-Identifier: MIT */
/*
 * rdmacm.c - the shim's librdmacm.so.1: rdma_cm (rdma_cma(7)) for
 * unmodified programs on the simulated fabric (docs/shim.md, "rdma_cm").
 *
 * Built against Debian's librdmacm-dev headers and never linked to the
 * real library; its exports are its version script (librdmacm.map), every
 * symbol rdma-core's librdmacm exports. It rides on the verbs shim: the
 * device is the shim's, and every CM request goes to the daemon over the
 * process's one connection (ibfab_shim_rpc), where shim/serve_cm.c keeps
 * the ids, the listeners and the event channels and sends the CM's
 * messages through the fabric.
 *
 * What the library itself does is what rdma-core's librdmacm does in user
 * space: the QP transitions (rdma_create_qp to INIT, or to RTS for UD;
 * rdma_accept to RTR and RTS before the REP; on the REP, RTR, RTS and the
 * RTU, reported as ESTABLISHED; rdma_disconnect to the error state), the
 * synchronous ids of rdma_create_ep (a NULL channel: each call waits for
 * its event), and the rdma_getaddrinfo of the fabric's host names and
 * addresses (127.1.0.0 + k + 1 for the k-th host, shim_proto.h).
 *
 * Refused, with one line on stderr and the errno a program checks:
 * multicast joins (ENOSYS), rsockets (ENOSYS), IPv6 and AF_IB addresses
 * (EAFNOSUPPORT).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>

#include "shim/shim_int.h"	/* struct shim_conn_info; its functions are not ours */

#define EXPORT __attribute__((visibility("default")))

struct cm_chan {
	struct rdma_event_channel ch;
	uint32_t h;
};

struct cm_id {
	struct rdma_cm_id id;
	uint32_t h;
	bool sync;			/* made with no channel: calls wait (rdma_create_ep) */
	bool own_cqs;			/* rdma_create_qp made id's CQs */
	struct ibv_qp_init_attr *ep_attr;	/* rdma_create_ep's, for rdma_get_request */
	struct ibv_sa_path_rec path;
	struct shim_cm_param remote;	/* the peer's, from its REQ, REP or SIDR_REP */
	uint16_t dlid;
	uint8_t resp_res, init_depth;	/* ours */
	uint8_t retry;			/* the REQ's retry count, both ends use it */
	uint32_t psn;			/* our first send PSN */
};

struct cm_event {
	struct rdma_cm_event ev;
	uint8_t pdata[SHIM_CM_PDATA];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct ibv_context *ctx;
static struct ibv_pd *def_pd;
static struct cm_id **ids;		/* by the daemon's handle */
static uint32_t nids;

/* ---- the device and the daemon ------------------------------------------ */

static struct ibv_context *device(void)
{
	struct ibv_device **l;

	pthread_mutex_lock(&lock);
	if (!ctx && (l = ibv_get_device_list(NULL))) {
		if (l[0])
			ctx = ibv_open_device(l[0]);
		ibv_free_device_list(l);
	}
	pthread_mutex_unlock(&lock);
	if (!ctx && !errno)
		errno = ENODEV;
	return ctx;
}

/* A request; -1 with errno set on failure. */
static int rpc(struct shim_req *q, const void *tail, uint32_t len, int fd, struct shim_rep *r)
{
	struct shim_rep tmp;
	int rc;

	q->inline_len = len;
	rc = ibfab_shim_rpc(q, tail, len, fd, r ? r : &tmp, NULL);
	if (rc) {
		errno = rc;
		return -1;
	}
	return 0;
}

static int remember(struct cm_id *i)
{
	pthread_mutex_lock(&lock);
	if (i->h >= nids) {
		uint32_t n = i->h + 64;
		struct cm_id **v = realloc(ids, n * sizeof(*v));

		if (!v) {
			pthread_mutex_unlock(&lock);
			errno = ENOMEM;
			return -1;
		}
		memset(v + nids, 0, (n - nids) * sizeof(*v));
		ids = v;
		nids = n;
	}
	ids[i->h] = i;
	pthread_mutex_unlock(&lock);
	return 0;
}

static struct cm_id *lookup(uint32_t h)
{
	struct cm_id *i;

	pthread_mutex_lock(&lock);
	i = h < nids ? ids[h] : NULL;
	pthread_mutex_unlock(&lock);
	return i;
}

static void forget(struct cm_id *i)
{
	pthread_mutex_lock(&lock);
	if (i->h < nids && ids[i->h] == i)
		ids[i->h] = NULL;
	pthread_mutex_unlock(&lock);
}

static void to_wire(struct shim_cm_addr *w, const struct sockaddr *sa)
{
	memset(w, 0, sizeof(*w));
	if (sa && sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		w->ip = ntohl(in->sin_addr.s_addr);
		w->port = ntohs(in->sin_port);
	}
}

static void from_wire(struct sockaddr_storage *ss, const struct shim_cm_addr *w)
{
	struct sockaddr_in *in = (struct sockaddr_in *)ss;

	memset(ss, 0, sizeof(*ss));
	in->sin_family = AF_INET;
	in->sin_addr.s_addr = htonl(w->ip);
	in->sin_port = htons(w->port);
}

static bool inet_ok(const struct sockaddr *sa)
{
	if (sa && sa->sa_family != AF_INET) {
		ibfab_shim_unsupported("an rdma_cm address other than IPv4");
		errno = EAFNOSUPPORT;
		return false;
	}
	return true;
}

/* The simulated host's LID and the path to dlid (rdma_route.path_rec). */
static void fill_route(struct cm_id *i, uint16_t dlid)
{
	struct ibv_port_attr pa;
	const struct shim_conn_info *inf = ibfab_shim_info();

	i->dlid = dlid;
	memset(&i->path, 0, sizeof(i->path));
	if (inf) {
		i->path.slid = htons(inf->lid);
		i->path.sgid.global.interface_id = htobe64(inf->guid);
	}
	i->path.dlid = htons(dlid);
	i->path.pkey = htons(0xffff);
	i->path.numb_path = 1;
	i->path.reversible = 1;
	if (!ibv_query_port(i->id.verbs, 1, &pa))
		i->path.mtu = (uint8_t)pa.active_mtu;
	i->path.mtu_selector = 2;	/* exactly */
	i->id.route.path_rec = &i->path;
	i->id.route.num_paths = 1;
}

/*
 * The address vector of a peer at dlid: its LID on InfiniBand; on RoCE
 * (an Ethernet link layer) a GRH to its GID, ::ffff:10.0.x.y with the LID
 * in x.y as the verbs shim gives it, and no LID, as RoCE's address
 * vectors are.
 */
static void fill_ah(struct ibv_context *c, struct ibv_ah_attr *a, uint16_t dlid, uint8_t sl)
{
	struct ibv_port_attr pa;

	memset(a, 0, sizeof(*a));
	a->port_num = 1;
	a->sl = sl;
	if (!c || ibv_query_port(c, 1, &pa) || pa.link_layer != IBV_LINK_LAYER_ETHERNET) {
		a->dlid = dlid;
		return;
	}
	a->is_global = 1;
	a->grh.hop_limit = 64;
	a->grh.sgid_index = 0;
	a->grh.dgid.raw[10] = 0xff;
	a->grh.dgid.raw[11] = 0xff;
	a->grh.dgid.raw[12] = 10;
	a->grh.dgid.raw[14] = (uint8_t)(dlid >> 8);
	a->grh.dgid.raw[15] = (uint8_t)dlid;
}

/* ---- event channels ----------------------------------------------------- */

EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct shim_req q = { .op = SHIM_OP_CM_CREATE_CHANNEL };
	struct shim_rep r;
	struct cm_chan *c;

	if (!device())
		return NULL;
	if (!(c = calloc(1, sizeof(*c))))
		return NULL;
	c->ch.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (c->ch.fd < 0 || rpc(&q, NULL, 0, c->ch.fd, &r)) {
		int e = errno;

		if (c->ch.fd >= 0)
			close(c->ch.fd);
		free(c);
		errno = e;
		return NULL;
	}
	c->h = r.u.cm_addr.handle;
	ibfab_shim_fabric_fd(c->ch.fd, true);
	return &c->ch;
}

EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *ch)
{
	struct cm_chan *c = (struct cm_chan *)ch;
	struct shim_req q = { .op = SHIM_OP_CM_DESTROY_CHANNEL };

	if (!c)
		return;
	q.u.obj.handle = c->h;
	if (rpc(&q, NULL, 0, -1, NULL))
		return;	/* ids still use it (EBUSY): as librdmacm, it stays */
	ibfab_shim_fabric_fd(c->ch.fd, false);
	close(c->ch.fd);
	free(c);
}

/* ---- ids ---------------------------------------------------------------- */

static struct cm_id *new_id(struct rdma_event_channel *ch, void *context,
			    enum rdma_port_space ps, enum ibv_qp_type qpt, uint32_t h)
{
	struct cm_id *i = calloc(1, sizeof(*i));

	if (!i)
		return NULL;
	i->id.verbs = ctx;
	i->id.channel = ch;
	i->id.context = context;
	i->id.ps = ps;
	i->id.qp_type = qpt;
	i->id.port_num = 1;
	i->h = h;
	i->resp_res = i->init_depth = 16;
	if (remember(i)) {
		free(i);
		return NULL;
	}
	return i;
}

static int create_id(struct rdma_event_channel *ch, struct rdma_cm_id **out, void *context,
		     enum rdma_port_space ps, enum ibv_qp_type qpt)
{
	struct shim_req q = { .op = SHIM_OP_CM_CREATE_ID };
	struct shim_rep r;
	bool sync = !ch;
	struct cm_id *i;

	if (!out || !device()) {
		errno = out ? errno : EINVAL;
		return -1;
	}
	if (sync && !(ch = rdma_create_event_channel()))
		return -1;
	q.u.cm_id.channel = ((struct cm_chan *)ch)->h;
	q.u.cm_id.ps = ps;
	q.u.cm_id.qp_type = qpt;
	if (rpc(&q, NULL, 0, -1, &r) || !(i = new_id(ch, context, ps, qpt, r.u.cm_addr.handle))) {
		int e = errno;

		if (sync)
			rdma_destroy_event_channel(ch);
		errno = e;
		return -1;
	}
	i->sync = sync;
	*out = &i->id;
	return 0;
}

EXPORT int rdma_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **id, void *context,
			  enum rdma_port_space ps)
{
	return create_id(ch, id, context, ps, ps == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC);
}

static void free_id(struct cm_id *i)
{
	forget(i);
	if (i->sync)
		rdma_destroy_event_channel(i->id.channel);
	free(i->ep_attr);
	free(i);
}

EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct cm_id *i = (struct cm_id *)id;
	struct shim_req q = { .op = SHIM_OP_CM_DESTROY_ID };

	if (!i) {
		errno = EINVAL;
		return -1;
	}
	q.u.cm.id = i->h;
	if (rpc(&q, NULL, 0, -1, NULL))
		return -1;
	free_id(i);
	return 0;
}

EXPORT int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *ch)
{
	struct cm_id *i = (struct cm_id *)id;
	struct shim_req q = { .op = SHIM_OP_CM_MIGRATE };
	bool sync = !ch;

	if (sync && !(ch = rdma_create_event_channel()))
		return -1;
	q.u.cm_migrate.id = i->h;
	q.u.cm_migrate.channel = ((struct cm_chan *)ch)->h;
	if (rpc(&q, NULL, 0, -1, NULL)) {
		int e = errno;

		if (sync)
			rdma_destroy_event_channel(ch);
		errno = e;
		return -1;
	}
	if (i->sync)
		rdma_destroy_event_channel(id->channel);
	id->channel = ch;
	i->sync = sync;
	return 0;
}

static void set_addrs(struct cm_id *i, const struct shim_rep *r, bool dst)
{
	from_wire(&i->id.route.addr.src_storage, &r->u.cm_addr.src);
	if (dst)
		from_wire(&i->id.route.addr.dst_storage, &r->u.cm_addr.dst);
}

EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cm_id *i = (struct cm_id *)id;
	struct shim_req q = { .op = SHIM_OP_CM_BIND };
	struct shim_rep r;

	if (!inet_ok(addr))
		return -1;
	q.u.cm.id = i->h;
	to_wire(&q.u.cm.src, addr);
	if (rpc(&q, NULL, 0, -1, &r))
		return -1;
	set_addrs(i, &r, false);
	return 0;
}

/* A synchronous id's call waits for its event (librdmacm's ucma_complete). */
static int complete(struct cm_id *i, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *e;

	if (!i->sync)
		return 0;
	if (i->id.event) {
		rdma_ack_cm_event(i->id.event);
		i->id.event = NULL;
	}
	if (rdma_get_cm_event(i->id.channel, &e))
		return -1;
	i->id.event = e;
	if (e->event != want) {
		errno = e->status < 0 ? -e->status :
			e->event == RDMA_CM_EVENT_REJECTED ? ECONNREFUSED : EIO;
		return -1;
	}
	return 0;
}

EXPORT int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst,
			     int timeout_ms)
{
	struct cm_id *i = (struct cm_id *)id;
	struct shim_req q = { .op = SHIM_OP_CM_RESOLVE_ADDR };
	struct shim_rep r;

	(void)timeout_ms;
	if (!dst || !inet_ok(src) || !inet_ok(dst)) {
		errno = dst ? errno : EINVAL;
		return -1;
	}
	q.u.cm.id = i->h;
	to_wire(&q.u.cm.src, src);
	to_wire(&q.u.cm.dst, dst);
	if (rpc(&q, NULL, 0, -1, &r))
		return -1;
	if (r.u.cm_addr.dst.ip) {
		set_addrs(i, &r, true);
	} else {
		/* unreachable: the event says so; the addresses are the asked ones */
		memcpy(&i->id.route.addr.dst_storage, dst, sizeof(struct sockaddr_in));
	}
	return complete(i, RDMA_CM_EVENT_ADDR_RESOLVED);
}

EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct cm_id *i = (struct cm_id *)id;
	struct shim_req q = { .op = SHIM_OP_CM_RESOLVE_ROUTE };
	struct shim_rep r;

	(void)timeout_ms;
	q.u.cm.id = i->h;
	if (rpc(&q, NULL, 0, -1, &r))
		return -1;
	fill_route(i, r.u.cm_addr.dlid);
	return complete(i, RDMA_CM_EVENT_ROUTE_RESOLVED);
}

EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct cm_id *i = (struct cm_id *)id;
	struct shim_req q = { .op = SHIM_OP_CM_LISTEN };

	q.u.cm.id = i->h;
	q.u.cm.backlog = backlog < 0 ? 0 : (uint32_t)backlog;
	return rpc(&q, NULL, 0, -1, NULL);
}

/* ---- QPs ---------------------------------------------------------------- */

static int qp_init(struct cm_id *i)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .pkey_index = 0 };

	if (i->id.qp->qp_type == IBV_QPT_UD) {
		a.qkey = RDMA_UDP_QKEY;
		if (ibv_modify_qp(i->id.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_QKEY))
			return -1;
		a.qp_state = IBV_QPS_RTR;
		if (ibv_modify_qp(i->id.qp, &a, IBV_QP_STATE))
			return -1;
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = 0;
		return ibv_modify_qp(i->id.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	}
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	return ibv_modify_qp(i->id.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			     IBV_QP_ACCESS_FLAGS);
}

/* Our first PSN: the kernel's CM draws a random one; here it follows from
 * the QP number, so runs repeat. */
static uint32_t first_psn(uint32_t qpn)
{
	return (qpn * 2654435761u) & 0xffffff;
}

static int make_cqs(struct cm_id *i, struct ibv_qp_init_attr *a)
{
	int n = (int)(a->cap.max_send_wr + a->cap.max_recv_wr);

	if (a->send_cq && a->recv_cq)
		return 0;
	if (n <= 0)
		n = 1;
	i->id.recv_cq_channel = ibv_create_comp_channel(i->id.verbs);
	i->id.send_cq_channel = ibv_create_comp_channel(i->id.verbs);
	if (i->id.recv_cq_channel)
		i->id.recv_cq = ibv_create_cq(i->id.verbs, n, &i->id, i->id.recv_cq_channel, 0);
	if (i->id.send_cq_channel)
		i->id.send_cq = ibv_create_cq(i->id.verbs, n, &i->id, i->id.send_cq_channel, 0);
	i->own_cqs = true;
	if (!i->id.recv_cq || !i->id.send_cq)
		return -1;
	if (!a->send_cq)
		a->send_cq = i->id.send_cq;
	if (!a->recv_cq)
		a->recv_cq = i->id.recv_cq;
	return 0;
}

static void free_cqs(struct cm_id *i)
{
	if (!i->own_cqs)
		return;
	if (i->id.send_cq)
		ibv_destroy_cq(i->id.send_cq);
	if (i->id.recv_cq)
		ibv_destroy_cq(i->id.recv_cq);
	if (i->id.send_cq_channel)
		ibv_destroy_comp_channel(i->id.send_cq_channel);
	if (i->id.recv_cq_channel)
		ibv_destroy_comp_channel(i->id.recv_cq_channel);
	i->id.send_cq = i->id.recv_cq = NULL;
	i->id.send_cq_channel = i->id.recv_cq_channel = NULL;
	i->own_cqs = false;
}

static struct ibv_pd *pd_for(struct cm_id *i, struct ibv_pd *pd)
{
	if (pd)
		return pd;
	if (i->id.pd)
		return i->id.pd;
	pthread_mutex_lock(&lock);
	if (!def_pd)
		def_pd = ibv_alloc_pd(ctx);
	pthread_mutex_unlock(&lock);
	return def_pd;
}

EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	struct cm_id *i = (struct cm_id *)id;
	struct ibv_qp_init_attr a;
	struct ibv_qp *qp;

	if (!attr || id->qp) {
		errno = EINVAL;
		return -1;
	}
	memset(&a, 0, sizeof(a));
	a.send_cq = attr->send_cq;
	a.recv_cq = attr->recv_cq;
	a.cap = attr->cap;
	if (make_cqs(i, &a))
		goto fail;
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd)
		attr->pd = pd_for(i, NULL);
	if (!attr->pd)
		goto fail;
	attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
	attr->send_cq = a.send_cq;
	attr->recv_cq = a.recv_cq;
	if (!attr->srq)
		attr->srq = id->srq;
	qp = ibv_create_qp_ex(id->verbs, attr);
	if (!qp)
		goto fail;
	id->qp = qp;
	id->pd = attr->pd;
	if (qp_init(i)) {
		int e = errno;

		ibv_destroy_qp(qp);
		id->qp = NULL;
		errno = e;
		goto fail;
	}
	i->psn = first_psn(qp->qp_num);
	return 0;
fail:
	free_cqs(i);
	return -1;
}

EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
			  struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex a;
	int rc;

	if (!qp_init_attr) {
		errno = EINVAL;
		return -1;
	}
	/* as librdmacm: the extended call with the PD, the caps read back */
	memset(&a, 0, sizeof(a));
	memcpy(&a, qp_init_attr, sizeof(*qp_init_attr));
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = pd ? pd : id->pd;
	rc = rdma_create_qp_ex(id, &a);
	memcpy(qp_init_attr, &a, sizeof(*qp_init_attr));
	return rc;
}

EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
	struct cm_id *i = (struct cm_id *)id;

	if (id->qp)
		ibv_destroy_qp(id->qp);
	id->qp = NULL;
	free_cqs(i);
}

EXPORT int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq_init_attr a;

	if (!attr) {
		errno = EINVAL;
		return -1;
	}
	memset(&a, 0, sizeof(a));
	a.srq_context = attr->srq_context;
	a.attr = attr->attr;
	return rdma_create_srq(id, (attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) ? attr->pd : NULL,
			       &a);
}

EXPORT int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
			   struct ibv_srq_init_attr *attr)
{
	struct cm_id *i = (struct cm_id *)id;

	if (!(pd = pd_for(i, pd)))
		return -1;
	id->srq = ibv_create_srq(pd, attr);
	if (!id->srq)
		return -1;
	id->pd = pd;
	return 0;
}

EXPORT void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (id->srq)
		ibv_destroy_srq(id->srq);
	id->srq = NULL;
}

/* The attributes of the next transition (rdma_init_qp_attr(3)). */
EXPORT int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *a, int *mask)
{
	struct cm_id *i = (struct cm_id *)id;
	struct ibv_port_attr pa;
	enum ibv_qp_state want = a->qp_state;

	memset(a, 0, sizeof(*a));
	a->qp_state = want;
	a->port_num = 1;
	switch (want) {
	case IBV_QPS_INIT:
		if (id->qp_type == IBV_QPT_UD) {
			a->qkey = RDMA_UDP_QKEY;
			*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
		} else {
			a->qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
			*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				IBV_QP_ACCESS_FLAGS;
		}
		return 0;
	case IBV_QPS_RTR:
		if (ibv_query_port(id->verbs, 1, &pa))
			return -1;
		a->path_mtu = pa.active_mtu;
		a->dest_qp_num = i->remote.qpn;
		a->rq_psn = i->remote.psn;
		a->max_dest_rd_atomic = i->resp_res;
		a->min_rnr_timer = 12;	/* 0.64 ms, as the kernel's CM sets it */
		fill_ah(id->verbs, &a->ah_attr, i->dlid, 0);
		*mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		return 0;
	case IBV_QPS_RTS:
		a->sq_psn = i->psn;
		a->timeout = 14;	/* 67 ms: the kernel's CM from a subnet's packet life */
		a->retry_cnt = i->retry > 7 ? 7 : i->retry;
		/* the peer's parameter says how often our sends retry on RNR
		 * (rdma_connect(3), rdma_accept(3)) */
		a->rnr_retry = i->remote.rnr_retry_count > 7 ? 7 : i->remote.rnr_retry_count;
		a->max_rd_atomic = i->init_depth;
		*mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		return 0;
	default:
		errno = EINVAL;
		return -1;
	}
}

static int qp_to(struct cm_id *i, enum ibv_qp_state st)
{
	struct ibv_qp_attr a = { .qp_state = st };
	int mask;

	if (rdma_init_qp_attr(&i->id, &a, &mask))
		return -1;
	return ibv_modify_qp(i->id.qp, &a, mask);
}

/* ---- connecting --------------------------------------------------------- */

static void take_param(struct cm_id *i, struct shim_cm_param *w,
		       const struct rdma_conn_param *p)
{
	memset(w, 0, sizeof(*w));
	if (p) {
		i->resp_res = p->responder_resources;
		i->init_depth = p->initiator_depth;
		w->responder_resources = p->responder_resources;
		w->initiator_depth = p->initiator_depth;
		w->flow_control = p->flow_control;
		w->retry_count = p->retry_count;
		w->rnr_retry_count = p->rnr_retry_count;
		w->srq = p->srq;
		w->qpn = p->qp_num;
	}
	if (i->id.qp) {
		w->qpn = i->id.qp->qp_num;
		w->srq = i->id.srq != NULL;
	}
	w->psn = i->psn ? i->psn : first_psn(w->qpn);
	i->psn = w->psn;
	w->qkey = RDMA_UDP_QKEY;
	w->qp_type = (uint8_t)i->id.qp_type;
}

static int pdata_ok(const struct rdma_conn_param *p)
{
	if (p && p->private_data_len && !p->private_data) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

EXPORT int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *p)
{
	struct cm_id *i = (struct cm_id *)id;
	struct shim_req q = { .op = SHIM_OP_CM_CONNECT };

	if (pdata_ok(p))
		return -1;
	q.u.cm.id = i->h;
	take_param(i, &q.u.cm.param, p);
	if (!p)
		q.u.cm.param.retry_count = 7;	/* librdmacm's default */
	i->retry = q.u.cm.param.retry_count;
	if (rpc(&q, p ? p->private_data : NULL, p ? p->private_data_len : 0, -1, NULL))
		return -1;
	return complete(i, RDMA_CM_EVENT_ESTABLISHED);
}

EXPORT int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *p)
{
	struct cm_id *i = (struct cm_id *)id;
	struct shim_req q = { .op = SHIM_OP_CM_ACCEPT };

	if (pdata_ok(p))
		return -1;
	q.u.cm.id = i->h;
	take_param(i, &q.u.cm.param, p);
	/* the QP is ready before the REP leaves (librdmacm's rdma_accept) */
	if (id->qp && id->qp_type != IBV_QPT_UD &&
	    (qp_to(i, IBV_QPS_RTR) || qp_to(i, IBV_QPS_RTS)))
		return -1;
	if (rpc(&q, p ? p->private_data : NULL, p ? p->private_data_len : 0, -1, NULL))
		return -1;
	if (id->qp_type == IBV_QPT_UD)
		return 0;
	return complete(i, RDMA_CM_EVENT_ESTABLISHED);
}

static int reject(struct rdma_cm_id *id, const void *pdata, uint8_t len)
{
	struct cm_id *i = (struct cm_id *)id;
	struct shim_req q = { .op = SHIM_OP_CM_REJECT };

	if (len && !pdata) {
		errno = EINVAL;
		return -1;
	}
	q.u.cm.id = i->h;
	return rpc(&q, pdata, len, -1, NULL);
}

EXPORT int rdma_reject(struct rdma_cm_id *id, const void *pdata, uint8_t len)
{
	return reject(id, pdata, len);
}

EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *pdata, uint8_t len)
{
	return reject(id, pdata, len);
}

EXPORT int rdma_establish(struct rdma_cm_id *id)
{
	struct cm_id *i = (struct cm_id *)id;
	struct shim_req q = { .op = SHIM_OP_CM_ESTABLISH };

	q.u.cm.id = i->h;
	return rpc(&q, NULL, 0, -1, NULL);
}

EXPORT int rdma_disconnect(struct rdma_cm_id *id)
{
	struct cm_id *i = (struct cm_id *)id;
	struct shim_req q = { .op = SHIM_OP_CM_DISCONNECT };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	/* librdmacm moves an IB QP to the error state first */
	if (id->qp && id->qp_type != IBV_QPT_UD && ibv_modify_qp(id->qp, &a, IBV_QP_STATE))
		return -1;
	q.u.cm.id = i->h;
	if (rpc(&q, NULL, 0, -1, NULL))
		return -1;
	return complete(i, RDMA_CM_EVENT_DISCONNECTED);
}

EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	(void)id;
	(void)event;
	return 0;	/* the CM of the simulated fabric learns of RTU by itself */
}

EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
			   size_t optlen)
{
	(void)id;
	(void)optval;
	(void)optlen;
	/* taken and without effect: the type of service, address reuse, IPv6
	 * only, an ACK timeout or a path record of the program's own */
	if (level == RDMA_OPTION_ID || level == RDMA_OPTION_IB)
		return 0;
	(void)optname;
	errno = ENOSYS;
	return -1;
}

/* ---- events ------------------------------------------------------------- */

/* The active side's REP: the QP goes to RTS and the RTU leaves; the program
 * sees ESTABLISHED (librdmacm's ucma_process_conn_resp). */
static int conn_resp(struct cm_id *i)
{
	struct shim_req q = { .op = SHIM_OP_CM_REJECT };

	if (!qp_to(i, IBV_QPS_RTR) && !qp_to(i, IBV_QPS_RTS) && !rdma_establish(&i->id))
		return 0;
	q.u.cm.id = i->h;
	(void)rpc(&q, NULL, 0, -1, NULL);
	return -1;
}

EXPORT int rdma_get_cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **out)
{
	struct cm_chan *c = (struct cm_chan *)ch;
	struct shim_req q = { .op = SHIM_OP_CM_GET_EVENT };
	struct shim_rep r;
	struct cm_event *e;
	struct cm_id *i, *l = NULL;
	const struct shim_cm_event *w = &r.u.cm;
	uint64_t one;
	int fl;

	if (!c || !out) {
		errno = EINVAL;
		return -1;
	}
	fl = fcntl(ch->fd, F_GETFL);
	q.u.cm_get.channel = c->h;
	q.u.cm_get.nonblock = fl >= 0 && (fl & O_NONBLOCK);
	if (!(e = calloc(1, sizeof(*e))))
		return -1;
	if (rpc(&q, NULL, 0, -1, &r)) {
		int err = errno;

		free(e);
		errno = err;
		return -1;
	}
	/* consume the count the daemon wrote for this event */
	if (read(ch->fd, &one, sizeof(one)) < 0) {
		/* nothing to undo: the event came with the reply */
	}
	e->ev.event = (enum rdma_cm_event_type)w->event;
	e->ev.status = w->status;
	if (w->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		l = w->listen_id >= 0 ? lookup((uint32_t)w->listen_id) : NULL;
		i = new_id(ch, l ? l->id.context : NULL, l ? l->id.ps : RDMA_PS_TCP,
			   l ? l->id.qp_type : IBV_QPT_RC, w->id);
		if (!i) {
			free(e);
			return -1;
		}
		from_wire(&i->id.route.addr.src_storage, &w->src);
		from_wire(&i->id.route.addr.dst_storage, &w->dst);
		fill_route(i, w->dlid);
		i->remote = w->param;
		i->retry = w->param.retry_count;
		if (l) {
			i->id.pd = l->id.pd;
			i->id.srq = l->id.srq;
		}
	} else {
		i = lookup(w->id);
	}
	if (!i) {
		free(e);
		errno = EIO;
		return -1;
	}
	e->ev.id = &i->id;
	e->ev.listen_id = l ? &l->id : NULL;
	memcpy(e->pdata, w->pdata, w->pdata_len);
	if (w->event == RDMA_CM_EVENT_CONNECT_RESPONSE || w->event == RDMA_CM_EVENT_REJECTED ||
	    (w->event == RDMA_CM_EVENT_ESTABLISHED && i->id.qp_type == IBV_QPT_UD))
		i->remote = w->param, i->dlid = w->dlid ? w->dlid : i->dlid;
	if (w->event == RDMA_CM_EVENT_CONNECT_RESPONSE && i->id.qp) {
		if (conn_resp(i)) {
			e->ev.event = RDMA_CM_EVENT_CONNECT_ERROR;
			e->ev.status = -errno;
		} else {
			e->ev.event = RDMA_CM_EVENT_ESTABLISHED;
		}
	}
	if (i->id.qp_type == IBV_QPT_UD) {
		e->ev.param.ud.private_data = w->pdata_len ? e->pdata : NULL;
		e->ev.param.ud.private_data_len = w->pdata_len;
		e->ev.param.ud.qp_num = w->param.qpn;
		e->ev.param.ud.qkey = w->param.qkey;
		fill_ah(i->id.verbs, &e->ev.param.ud.ah_attr, w->dlid, w->sl);
	} else {
		e->ev.param.conn.private_data = w->pdata_len ? e->pdata : NULL;
		e->ev.param.conn.private_data_len = w->pdata_len;
		e->ev.param.conn.responder_resources = w->param.responder_resources;
		e->ev.param.conn.initiator_depth = w->param.initiator_depth;
		e->ev.param.conn.flow_control = w->param.flow_control;
		e->ev.param.conn.retry_count = w->param.retry_count;
		e->ev.param.conn.rnr_retry_count = w->param.rnr_retry_count;
		e->ev.param.conn.srq = w->param.srq;
		e->ev.param.conn.qp_num = w->param.qpn;
	}
	*out = &e->ev;
	return 0;
}

EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	if (!event) {
		errno = EINVAL;
		return -1;
	}
	free(event);
	return 0;
}

EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const s[] = {
		"RDMA_CM_EVENT_ADDR_RESOLVED", "RDMA_CM_EVENT_ADDR_ERROR",
		"RDMA_CM_EVENT_ROUTE_RESOLVED", "RDMA_CM_EVENT_ROUTE_ERROR",
		"RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
		"RDMA_CM_EVENT_CONNECT_ERROR", "RDMA_CM_EVENT_UNREACHABLE",
		"RDMA_CM_EVENT_REJECTED", "RDMA_CM_EVENT_ESTABLISHED",
		"RDMA_CM_EVENT_DISCONNECTED", "RDMA_CM_EVENT_DEVICE_REMOVAL",
		"RDMA_CM_EVENT_MULTICAST_JOIN", "RDMA_CM_EVENT_MULTICAST_ERROR",
		"RDMA_CM_EVENT_ADDR_CHANGE", "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};

	return (unsigned)event < sizeof(s) / sizeof(s[0]) ? s[event] : "UNKNOWN EVENT";
}

/* ---- addresses ---------------------------------------------------------- */

EXPORT uint16_t rdma_get_src_port(struct rdma_cm_id *id)
{
	return id->route.addr.src_sin.sin_port;
}

EXPORT uint16_t rdma_get_dst_port(struct rdma_cm_id *id)
{
	return id->route.addr.dst_sin.sin_port;
}

/* A host name or address to an IPv4 address: getaddrinfo, which the verbs
 * shim answers for the fabric's host names (shim_client.c). */
static int name_addr(const char *node, uint32_t *ip)
{
	struct in_addr a;
	struct addrinfo h = { .ai_family = AF_INET }, *res;

	if (inet_pton(AF_INET, node, &a) == 1) {
		*ip = ntohl(a.s_addr);
		return 0;
	}
	if (getaddrinfo(node, NULL, &h, &res))
		return EAI_NONAME;
	*ip = ntohl(((struct sockaddr_in *)res->ai_addr)->sin_addr.s_addr);
	freeaddrinfo(res);
	return 0;
}

static struct sockaddr *sin_new(uint32_t ip, uint16_t port)
{
	struct sockaddr_in *s = calloc(1, sizeof(*s));

	if (s) {
		s->sin_family = AF_INET;
		s->sin_addr.s_addr = htonl(ip);
		s->sin_port = htons(port);
	}
	return (struct sockaddr *)s;
}

static int addr_dup(struct sockaddr **dst, socklen_t *dst_len, const struct sockaddr *src,
		    socklen_t len)
{
	if (!(*dst = malloc(len)))
		return ENOMEM;
	memcpy(*dst, src, len);
	*dst_len = len;
	return 0;
}

/*
 * As rdma-core's: a node or service is looked up (the fabric's host names
 * through the shim's getaddrinfo); with neither, the hints' addresses are
 * the answer (libfabric's verbs provider resolves an address it was sent
 * this way); a source address in the hints is kept when the lookup gave
 * none. Errors: getaddrinfo's EAI_* code, or -1 and errno.
 */
EXPORT int rdma_getaddrinfo(const char *node, const char *service,
			    const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	struct rdma_addrinfo *ai;
	uint32_t ip = 0;
	long port = 0;
	char *end;
	int rc = 0;

	if (!res || (!node && !service && !hints)) {
		errno = EINVAL;
		return -1;
	}
	/* RAI_SA (0x10, newer rdma-core than bookworm's headers): ask the SA for a
	 * service record; there is no SA service database to ask. */
	if (hints && (hints->ai_flags & 0x10)) {
		ibfab_shim_unsupported("rdma_getaddrinfo from the SA (RAI_SA)");
		errno = EOPNOTSUPP;
		return -1;
	}
	if ((node || service) && hints && hints->ai_family && hints->ai_family != AF_INET) {
		ibfab_shim_unsupported("an rdma_cm address other than IPv4");
		return EAI_FAMILY;
	}
	if (service) {
		port = strtol(service, &end, 10);
		if (*end || port < 0 || port > 65535) {
			struct servent *se = getservbyname(service, "tcp");

			if (!se)
				return EAI_SERVICE;
			port = ntohs((uint16_t)se->s_port);
		}
	}
	/* getaddrinfo's answer for no node: the wildcard when passive, else loopback */
	if (node && (rc = name_addr(node, &ip)))
		return rc;
	if (!node && !(hints && (hints->ai_flags & RAI_PASSIVE)))
		ip = INADDR_LOOPBACK;
	if (!(ai = calloc(1, sizeof(*ai)))) {
		errno = ENOMEM;
		return -1;
	}
	ai->ai_flags = hints ? hints->ai_flags : 0;
	ai->ai_port_space = hints && hints->ai_port_space ? hints->ai_port_space : RDMA_PS_TCP;
	ai->ai_qp_type = hints && hints->ai_qp_type ? hints->ai_qp_type :
			 ai->ai_port_space == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC;
	if (node || service) {
		struct sockaddr *sa = sin_new(ip, (uint16_t)port);

		ai->ai_family = AF_INET;
		if (!sa)
			rc = ENOMEM;
		else if (ai->ai_flags & RAI_PASSIVE) {
			ai->ai_src_addr = sa;
			ai->ai_src_len = sizeof(struct sockaddr_in);
		} else {
			ai->ai_dst_addr = sa;
			ai->ai_dst_len = sizeof(struct sockaddr_in);
		}
	} else {
		ai->ai_family = hints->ai_family;
		if (hints->ai_dst_len && hints->ai_dst_addr)
			rc = addr_dup(&ai->ai_dst_addr, &ai->ai_dst_len, hints->ai_dst_addr,
				      hints->ai_dst_len);
	}
	if (!rc && !ai->ai_src_len && hints && hints->ai_src_len && hints->ai_src_addr)
		rc = addr_dup(&ai->ai_src_addr, &ai->ai_src_len, hints->ai_src_addr,
			      hints->ai_src_len);
	if (rc) {
		rdma_freeaddrinfo(ai);
		errno = rc;
		return -1;
	}
	*res = ai;
	return 0;
}

EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *n = res->ai_next;

		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
		res = n;
	}
}

/* ---- endpoints (rdma_create_ep(3), rdma_get_request(3)) ------------------ */

EXPORT int rdma_create_ep(struct rdma_cm_id **out, struct rdma_addrinfo *res, struct ibv_pd *pd,
			  struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *id;
	struct cm_id *i;

	if (!out || !res) {
		errno = EINVAL;
		return -1;
	}
	if (create_id(NULL, &id, NULL, (enum rdma_port_space)res->ai_port_space,
		      (enum ibv_qp_type)res->ai_qp_type))
		return -1;
	i = (struct cm_id *)id;
	if (res->ai_flags & RAI_PASSIVE) {
		if (rdma_bind_addr(id, res->ai_src_addr))
			goto fail;
		if (qp_init_attr) {
			if (!(i->ep_attr = malloc(sizeof(*i->ep_attr))))
				goto fail;
			*i->ep_attr = *qp_init_attr;
			i->ep_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
		}
		id->pd = pd;
		*out = id;
		return 0;
	}
	if (rdma_resolve_addr(id, res->ai_src_addr, res->ai_dst_addr, 2000) ||
	    rdma_resolve_route(id, 2000))
		goto fail;
	if (qp_init_attr) {
		qp_init_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
		if (rdma_create_qp(id, pd, qp_init_attr))
			goto fail;
	}
	*out = id;
	return 0;
fail:
	{
		int e = errno;

		rdma_destroy_id(id);
		errno = e;
		return -1;
	}
}

EXPORT void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (!id)
		return;
	if (id->qp)
		rdma_destroy_qp(id);
	if (id->srq)
		rdma_destroy_srq(id);
	rdma_destroy_id(id);
}

EXPORT int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **out)
{
	struct cm_id *l = (struct cm_id *)listen;
	struct rdma_cm_event *e;
	struct rdma_cm_id *id;

	if (!l->sync) {
		errno = EINVAL;
		return -1;
	}
	for (;;) {
		if (rdma_get_cm_event(listen->channel, &e))
			return -1;
		if (e->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			break;
		rdma_ack_cm_event(e);	/* not a request: librdmacm drops it too */
	}
	id = e->id;
	if (rdma_migrate_id(id, NULL)) {
		int err = errno;

		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		rdma_ack_cm_event(e);
		errno = err;
		return -1;
	}
	if (l->ep_attr) {
		struct ibv_qp_init_attr a = *l->ep_attr;

		if (rdma_create_qp(id, listen->pd, &a)) {
			int err = errno;

			rdma_reject(id, NULL, 0);
			rdma_destroy_id(id);
			rdma_ack_cm_event(e);
			errno = err;
			return -1;
		}
	}
	((struct cm_id *)id)->id.event = e;
	*out = id;
	return 0;
}

EXPORT struct ibv_context **rdma_get_devices(int *num)
{
	struct ibv_context **v;

	if (!device()) {
		if (num)
			*num = 0;
		return NULL;
	}
	if (!(v = calloc(2, sizeof(*v))))
		return NULL;
	v[0] = ctx;
	if (num)
		*num = 1;
	return v;
}

EXPORT void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}

/* ---- what the simulated fabric does not offer ---------------------------- */

static int refuse(const char *what, int err)
{
	ibfab_shim_unsupported(what);
	errno = err;
	return -1;
}

EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	(void)id;
	(void)addr;
	(void)context;
	return refuse("rdma_join_multicast", ENOSYS);
}

EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *mc,
				  void *context)
{
	(void)id;
	(void)mc;
	(void)context;
	return refuse("rdma_join_multicast_ex", ENOSYS);
}

EXPORT int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	(void)id;
	(void)addr;
	return refuse("rdma_leave_multicast", ENOSYS);
}

EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id;
	(void)ece;
	return 0;	/* no enhanced connection options to negotiate: none are used */
}

EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id;
	if (ece)
		memset(ece, 0, sizeof(*ece));
	return 0;
}

/* rsockets: rpoll and rselect wait on ordinary descriptors (the CM's
 * channel fds are eventfds); every other rsocket call is refused. */
EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	return poll(fds, nfds, timeout);
}

EXPORT int rselect(int nfds, fd_set *r, fd_set *w, fd_set *x, struct timeval *t)
{
	return select(nfds, r, w, x, t);
}

/* the refused calls' parameters are their prototypes' only */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define RSOCKET_REFUSED(name, ret, args) \
	EXPORT ret name args { return (ret)refuse("rsockets (" #name ")", ENOSYS); }

RSOCKET_REFUSED(rsocket, int, (int d, int t, int p))
RSOCKET_REFUSED(rbind, int, (int s, const struct sockaddr *a, socklen_t l))
RSOCKET_REFUSED(rlisten, int, (int s, int b))
RSOCKET_REFUSED(raccept, int, (int s, struct sockaddr *a, socklen_t *l))
RSOCKET_REFUSED(rconnect, int, (int s, const struct sockaddr *a, socklen_t l))
RSOCKET_REFUSED(rshutdown, int, (int s, int h))
RSOCKET_REFUSED(rclose, int, (int s))
RSOCKET_REFUSED(rrecv, ssize_t, (int s, void *b, size_t l, int f))
RSOCKET_REFUSED(rrecvfrom, ssize_t, (int s, void *b, size_t l, int f, struct sockaddr *a,
				     socklen_t *al))
RSOCKET_REFUSED(rrecvmsg, ssize_t, (int s, struct msghdr *m, int f))
RSOCKET_REFUSED(rsend, ssize_t, (int s, const void *b, size_t l, int f))
RSOCKET_REFUSED(rsendto, ssize_t, (int s, const void *b, size_t l, int f,
				   const struct sockaddr *a, socklen_t al))
RSOCKET_REFUSED(rsendmsg, ssize_t, (int s, const struct msghdr *m, int f))
RSOCKET_REFUSED(rread, ssize_t, (int s, void *b, size_t c))
RSOCKET_REFUSED(rreadv, ssize_t, (int s, const struct iovec *v, int c))
RSOCKET_REFUSED(rwrite, ssize_t, (int s, const void *b, size_t c))
RSOCKET_REFUSED(rwritev, ssize_t, (int s, const struct iovec *v, int c))
RSOCKET_REFUSED(rgetpeername, int, (int s, struct sockaddr *a, socklen_t *l))
RSOCKET_REFUSED(rgetsockname, int, (int s, struct sockaddr *a, socklen_t *l))
RSOCKET_REFUSED(rsetsockopt, int, (int s, int lv, int o, const void *v, socklen_t l))
RSOCKET_REFUSED(rgetsockopt, int, (int s, int lv, int o, void *v, socklen_t *l))
RSOCKET_REFUSED(riomap, off_t, (int s, void *b, size_t l, int p, int f, off_t o))
RSOCKET_REFUSED(riounmap, int, (int s, void *b, size_t l))
RSOCKET_REFUSED(riowrite, size_t, (int s, const void *b, size_t c, off_t o, int f))

EXPORT int rfcntl(int s, int cmd, ...)
{
	(void)s;
	(void)cmd;
	return refuse("rsockets (rfcntl)", ENOSYS);
}
