/* SPDX-License-Identifier: MIT */
/*
 * verbs.c - the public verbs of the shim libibverbs.so.1: one simulated
 * device per process (the HCA of the simulated host the daemon assigned),
 * and the verbs objects of models/hca/hca.h reached over the daemon socket.
 *
 * The context is an extended one (struct verbs_context, abi_compat =
 * __VERBS_ABI_IS_EXTENDED) so the inline verbs in <infiniband/verbs.h>
 * find query_port and query_device_ex; the data path (post_send, post_recv,
 * poll_cq, req_notify_cq) is the context's ops table, as in every rdma-core
 * provider. Memory is shared, not copied: ibv_reg_mr moves the pages of the
 * region onto a memfd (same contents, same addresses) and gives the fd to
 * the daemon, whose HCA model then reads and writes the program's bytes at
 * the simulated time the packets arrive - even while the program spins on
 * its memory or sits in a TCP read. The device is the ConnectX of the
 * link's generation (fill_device), the new post-send API (ibv_qp_ex)
 * batches work requests into one post, and the extended CQ (ibv_cq_ex)
 * reads the completions ibv_poll_cq would. What the model does not have
 * (multiple gather entries that are not contiguous, memory windows, XRC,
 * DM, flows) fails with EOPNOTSUPP and one line on stderr.
 */
#define _GNU_SOURCE
#include <infiniband/verbs.h>

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim/shim_int.h"

#define SHIM_EXPORT __attribute__((visibility("default")))
#ifndef container_of
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))
#endif

/* ---- objects ------------------------------------------------------------ */

struct shim_ctx {
	struct verbs_context vctx;	/* context last member: the program sees &vctx.context */
};

struct shim_cq {
	union {				/* an ibv_cq_ex begins as an ibv_cq does */
		struct ibv_cq cq;
		struct ibv_cq_ex cqx;	/* made by ibv_create_cq_ex */
	};
	uint32_t h;
	/* the extended API's batch: [pos, nbuf) not yet consumed */
	struct ibv_wc buf[SHIM_MAX_WC];
	int pos, nbuf;
	/* completions that came with its last event, [ppre, npre) not yet
	 * polled (pre_lock: the thread that waits for events is not always
	 * the one that polls) */
	pthread_mutex_t pre_lock;
	struct shim_wire_wc *pre;
	uint32_t ppre, npre, pre_cap;
};

struct shim_wr;

struct shim_qp {
	struct ibv_qp qp;
	uint32_t h;
	struct ibv_qp_cap cap;
	struct ibv_qp_attr attr;	/* what the program set, for ibv_query_qp */
	int attr_mask;
	/* the extended post-send API, when created with send_ops_flags */
	bool ex;
	uint64_t send_ops;		/* IBV_QP_EX_WITH_* it was created for */
	struct ibv_qp_ex qpx;
	struct shim_wr *wrs;		/* the batch between wr_start and wr_complete */
	uint32_t nwr, wr_cap;
	int wr_err;
	/* At most this many work requests in its send / receive queue: set
	 * from a post's answer, one more per post, one less per completion
	 * polled (a signalled send may retire unsignalled ones before it, so
	 * the bound may be high, never low). Below the queue's size a post
	 * cannot find it full, and may go without waiting (SHIM_OP_QUIET). */
	uint32_t sq_out, rq_out;
};

struct shim_srq {
	struct ibv_srq srq;
	uint32_t h;
	uint32_t max_wr;
};

struct shim_mr {
	struct ibv_mr mr;
	uint32_t h;
};

struct shim_ah {
	struct ibv_ah ah;
	uint16_t dlid;
	uint8_t sl;
};

struct shim_chan {
	struct ibv_comp_channel ch;
	uint32_t h;
};

/* A region moved onto shared memory (pages, in the program's addresses). */
struct shim_seg {
	uintptr_t base;
	size_t len;
	uint32_t h;
	uint64_t ino;		/* its memfd's inode: still mapped where we put it? */
};

static pthread_mutex_t obj_lock = PTHREAD_MUTEX_INITIALIZER;
/* QPs and SRQs by the daemon's handle: what an asynchronous event names */
static void **hobjs;
static size_t nhobjs;

static void hobj_set(uint32_t h, void *obj)
{
	pthread_mutex_lock(&obj_lock);
	if (h >= nhobjs && obj) {
		size_t n = (size_t)h + 16;
		void **v = realloc(hobjs, n * sizeof(*v));

		if (v) {
			memset(v + nhobjs, 0, (n - nhobjs) * sizeof(*v));
			hobjs = v;
			nhobjs = n;
		}
	}
	if (h < nhobjs)
		hobjs[h] = obj;
	pthread_mutex_unlock(&obj_lock);
}

static void *hobj_get(uint32_t h)
{
	void *o;

	pthread_mutex_lock(&obj_lock);
	o = h < nhobjs ? hobjs[h] : NULL;
	pthread_mutex_unlock(&obj_lock);
	return o;
}
/*
 * What the shim checks before a quiet post (one sent without waiting for
 * the daemon's answer, SHIM_OP_QUIET): the memory regions by lkey (a
 * receive into memory no region covers with local write is refused at
 * once), and the QPs by number (a polled completion frees its queue's
 * slot). Under obj_lock.
 */
struct mr_ent {
	uint32_t lkey;
	unsigned int access;
	uintptr_t lo, hi;
};
static struct mr_ent *mrtab;
static size_t nmrtab, mrtab_cap;
static struct shim_qp **qptab;
static size_t nqptab, qptab_cap;

static void mrtab_add(const struct ibv_mr *mr, unsigned int access)
{
	pthread_mutex_lock(&obj_lock);
	if (nmrtab == mrtab_cap) {
		size_t n = mrtab_cap ? mrtab_cap * 2 : 16;
		struct mr_ent *v = realloc(mrtab, n * sizeof(*v));

		if (!v) {	/* not listed: its receives wait for their answers */
			pthread_mutex_unlock(&obj_lock);
			return;
		}
		mrtab = v;
		mrtab_cap = n;
	}
	mrtab[nmrtab++] = (struct mr_ent){ .lkey = mr->lkey, .access = access,
					   .lo = (uintptr_t)mr->addr,
					   .hi = (uintptr_t)mr->addr + mr->length };
	pthread_mutex_unlock(&obj_lock);
}

static void mrtab_del(uint32_t lkey)
{
	pthread_mutex_lock(&obj_lock);
	for (size_t i = 0; i < nmrtab; i++)
		if (mrtab[i].lkey == lkey) {
			mrtab[i] = mrtab[--nmrtab];
			break;
		}
	pthread_mutex_unlock(&obj_lock);
}

/* Does a region cover [addr, addr + len) with local write? */
static bool mrtab_writable(uint32_t lkey, uint64_t addr, uint32_t len)
{
	bool ok = false;

	pthread_mutex_lock(&obj_lock);
	for (size_t i = 0; i < nmrtab && !ok; i++)
		ok = mrtab[i].lkey == lkey && (mrtab[i].access & IBV_ACCESS_LOCAL_WRITE) &&
		     addr >= mrtab[i].lo && addr + len <= mrtab[i].hi && addr + len >= addr;
	pthread_mutex_unlock(&obj_lock);
	return ok;
}

static void qptab_set(struct shim_qp *q, bool on)
{
	pthread_mutex_lock(&obj_lock);
	for (size_t i = 0; i < nqptab && !on; i++)
		if (qptab[i] == q)
			qptab[i] = qptab[--nqptab];
	if (on && nqptab == qptab_cap) {
		size_t n = qptab_cap ? qptab_cap * 2 : 16;
		struct shim_qp **v = realloc(qptab, n * sizeof(*v));

		if (v) {
			qptab = v;
			qptab_cap = n;
		}
	}
	if (on && nqptab < qptab_cap)
		qptab[nqptab++] = q;
	pthread_mutex_unlock(&obj_lock);
}

/* A completion taken from the daemon frees one slot of its queue (at
 * least): what a post's answer counts no longer holds it. */
static void qptab_done(uint32_t qpn, bool recv)
{
	pthread_mutex_lock(&obj_lock);
	for (size_t i = 0; i < nqptab; i++) {
		struct shim_qp *q = qptab[i];

		if (q->qp.qp_num != qpn)
			continue;
		uint32_t *out = recv ? &q->rq_out : &q->sq_out;

		if (*out)
			(*out)--;
		break;
	}
	pthread_mutex_unlock(&obj_lock);
}
static struct shim_seg *segs;
static size_t nsegs;
/* Handle -> CQ, for completion events. */
static struct shim_cq **cqs;
static size_t ncqs;

static struct ibv_device the_dev = {
	.node_type = IBV_NODE_CA,
	.transport_type = IBV_TRANSPORT_IB,
	.name = SHIM_DEV_NAME,
	.dev_name = "uverbs0",
	.dev_path = "/sys/class/infiniband_verbs/uverbs0",
	.ibdev_path = "/sys/class/infiniband/ibfab0",
};

static int rpc0(struct shim_req *req, struct shim_rep *rep)
{
	return shim_rpc(req, NULL, 0, -1, rep, NULL);
}

/* ---- devices ------------------------------------------------------------ */

SHIM_EXPORT struct ibv_device **__ibv_get_device_list(int *num);
SHIM_EXPORT struct ibv_device **__ibv_get_device_list(int *num)
{
	struct ibv_device **l;

	if (num)
		*num = 0;
	if (shim_attach())
		return NULL;	/* errno set: ENODEV, as with no RDMA devices */
	l = calloc(2, sizeof(*l));
	if (!l) {
		errno = ENOMEM;
		return NULL;
	}
	l[0] = &the_dev;
	if (num)
		*num = 1;
	return l;
}

#undef ibv_get_device_list
SHIM_EXPORT struct ibv_device **ibv_get_device_list(int *num);
struct ibv_device **ibv_get_device_list(int *num)
{
	return __ibv_get_device_list(num);
}

SHIM_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

SHIM_EXPORT const char *ibv_get_device_name(struct ibv_device *dev)
{
	return dev ? dev->name : NULL;
}

SHIM_EXPORT int ibv_get_device_index(struct ibv_device *dev)
{
	return dev == &the_dev ? 0 : -1;
}

SHIM_EXPORT __be64 ibv_get_device_guid(struct ibv_device *dev)
{
	(void)dev;
	return htobe64(shim_info()->guid);
}

static uint8_t width_code(uint8_t lanes)
{
	switch (lanes) {
	case 1: return 1;
	case 2: return 16;
	case 8: return 4;
	case 12: return 8;
	default: return 2;	/* 4x */
	}
}

/* enum link_speed (models/link) -> PortInfo LinkSpeedActive as verbs shows it. */
static uint8_t speed_code(uint8_t s)
{
	static const uint8_t code[] = { 0, 1, 2, 4, 8, 16, 32, 64, 128, 128 };

	return s < sizeof(code) ? code[s] : 64;
}

/* The port's state: active, unless the daemon schedules faults and its
 * link is down now (then a question to the daemon each time). */
static bool port_active(void)
{
	struct shim_req req = { .op = SHIM_OP_QUERY_PORT };
	struct shim_rep rep;

	if (!shim_info()->faults)
		return true;
	return rpc0(&req, &rep) || rep.u.port.active;
}

static void fill_port(struct ibv_port_attr *a, bool compat)
{
	const struct shim_conn_info *i = shim_info();
	bool up = port_active();

	a->state = up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
	a->max_mtu = IBV_MTU_4096;
	a->active_mtu = i->mtu_code ? (enum ibv_mtu)i->mtu_code : IBV_MTU_4096;
	a->gid_tbl_len = 1;
	a->port_cap_flags = 0;
	a->max_msg_sz = 1u << 31;
	a->pkey_tbl_len = 1;
	a->lid = i->link_layer == IBV_LINK_LAYER_ETHERNET ? 0 : i->lid;
	a->sm_lid = i->link_layer == IBV_LINK_LAYER_ETHERNET ? 0 : i->sm_lid;
	a->max_vl_num = 4;	/* 8 VLs */
	a->subnet_timeout = 18;
	a->active_width = width_code(i->lanes);
	a->active_speed = speed_code(i->speed);
	a->phys_state = up ? 5 : 2;	/* LinkUp, or Polling (IBA 14.2.5.6) */
	a->link_layer = i->link_layer;
	if (!compat)
		a->port_cap_flags2 = 0;
}

static int query_port_ex(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *a,
			 size_t len)
{
	struct ibv_port_attr tmp;

	(void)ctx;
	if (port != 1)
		return EINVAL;
	memset(&tmp, 0, sizeof(tmp));
	fill_port(&tmp, false);
	memcpy(a, &tmp, len < sizeof(tmp) ? len : sizeof(tmp));
	return 0;
}

#undef ibv_query_port
struct _compat_ibv_port_attr;
SHIM_EXPORT int ibv_query_port(struct ibv_context *ctx, uint8_t port,
			       struct _compat_ibv_port_attr *a);
int ibv_query_port(struct ibv_context *ctx, uint8_t port, struct _compat_ibv_port_attr *a)
{
	/* the compat layout ends before port_cap_flags2 */
	return query_port_ex(ctx, port, (struct ibv_port_attr *)a,
			     offsetof(struct ibv_port_attr, port_cap_flags2));
}

static void fill_device(struct ibv_device_attr *a)
{
	const struct shim_conn_info *i = shim_info();

	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "ibfab-0.1 (%s)", i->fabric);
	a->node_guid = htobe64(i->guid);
	a->sys_image_guid = htobe64(i->guid);
	a->max_mr_size = 1ULL << 40;
	a->page_size_cap = 4096;
	/* The ConnectX of the link's generation (Mellanox's vendor ID and the
	 * adapter's PCI device ID), so that programs that tune themselves by
	 * device take their ConnectX defaults: perftest inlines small WRITEs
	 * and SENDs and posts with the ibv_wr API, as on the real adapter. */
	static const uint16_t part[] = {
		[1] = 26428, [2] = 26428, [3] = 26428,	/* SDR-QDR: ConnectX-2 */
		[4] = 4099, [5] = 4099,			/* FDR10, FDR: ConnectX-3 */
		[6] = 4119,				/* EDR: ConnectX-5 */
		[7] = 4123,				/* HDR: ConnectX-6 */
		[8] = 4129,				/* NDR: ConnectX-7 */
		[9] = 4131,				/* XDR: ConnectX-8 */
	};
	a->vendor_id = 0x02c9;
	a->vendor_part_id = i->speed < sizeof(part) / sizeof(part[0]) && part[i->speed] ?
			    part[i->speed] : 4123;
	a->hw_ver = 1;
	a->max_qp = 65536;
	a->max_qp_wr = 32768;
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT |
			      IBV_DEVICE_SRQ_RESIZE;
	a->max_sge = SHIM_MAX_SGE;	/* ConnectX's; READs scatter into one */
	a->max_sge_rd = 1;
	a->max_cq = 65536;
	a->max_cqe = 1 << 20;
	a->max_mr = 1 << 20;
	a->max_pd = 1 << 16;
	a->max_qp_rd_atom = 16;
	a->max_res_rd_atom = 1 << 20;
	a->max_qp_init_rd_atom = 16;
	/* sockets carry no atomics: the model refuses them on fabric=tcp */
	a->atomic_cap = i->atomics ? IBV_ATOMIC_HCA : IBV_ATOMIC_NONE;
	a->max_ah = 1 << 20;
	a->max_srq = 1 << 16;
	a->max_srq_wr = 32768;
	a->max_srq_sge = 1;
	a->max_pkeys = 1;
	a->local_ca_ack_delay = 16;
	a->phys_port_cnt = 1;
}

SHIM_EXPORT int ibv_query_device(struct ibv_context *ctx, struct ibv_device_attr *a)
{
	(void)ctx;
	fill_device(a);
	return 0;
}

static int query_device_ex(struct ibv_context *ctx, const struct ibv_query_device_ex_input *in,
			   struct ibv_device_attr_ex *a, size_t len)
{
	struct ibv_device_attr_ex tmp;

	(void)ctx;
	(void)in;
	memset(&tmp, 0, sizeof(tmp));
	fill_device(&tmp.orig_attr);
	tmp.max_dm_size = 0;
	memcpy(a, &tmp, len < sizeof(tmp) ? len : sizeof(tmp));
	return 0;
}

/*
 * GID 0. On InfiniBand, the link-local fe80::GUID. On the RoCE fabric, a
 * RoCEv2 IPv4-mapped address ::ffff:10.0.L.L that carries the simulated
 * port's address (its LID in the model, which routes by LID whatever the
 * fabric): the programs exchange GIDs only, and the shim reads the LID back
 * out of the destination GID (gid_to_lid).
 */
static void my_gid(union ibv_gid *gid)
{
	const struct shim_conn_info *i = shim_info();

	memset(gid, 0, sizeof(*gid));
	if (i->link_layer == IBV_LINK_LAYER_ETHERNET) {
		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		gid->raw[12] = 10;
		gid->raw[14] = (uint8_t)(i->lid >> 8);
		gid->raw[15] = (uint8_t)i->lid;
	} else {
		gid->global.subnet_prefix = htobe64(0xfe80000000000000ULL);
		gid->global.interface_id = htobe64(i->guid);
	}
}

static uint16_t gid_to_lid(const union ibv_gid *gid)
{
	if (gid->raw[10] == 0xff && gid->raw[11] == 0xff && gid->raw[12] == 10)
		return (uint16_t)(gid->raw[14] << 8 | gid->raw[15]);
	return 0;
}

/* The destination of an address vector: its LID, or the LID in its GID. */
static uint16_t av_dlid(const struct ibv_ah_attr *a)
{
	if (!a->dlid && a->is_global)
		return gid_to_lid(&a->grh.dgid);
	return a->dlid;
}

SHIM_EXPORT int ibv_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid)
{
	(void)ctx;
	if (port != 1 || index != 0)
		return -1;
	my_gid(gid);
	return 0;
}

SHIM_EXPORT int _ibv_query_gid_ex(struct ibv_context *ctx, uint32_t port, uint32_t index,
				  struct ibv_gid_entry *e, uint32_t flags, size_t len);
int _ibv_query_gid_ex(struct ibv_context *ctx, uint32_t port, uint32_t index,
		      struct ibv_gid_entry *e, uint32_t flags, size_t len)
{
	struct ibv_gid_entry tmp = { 0 };

	(void)flags;
	if (port != 1 || index != 0)
		return ENODATA;
	ibv_query_gid(ctx, 1, 0, &tmp.gid);
	tmp.gid_index = 0;
	tmp.port_num = 1;
	tmp.gid_type = shim_info()->link_layer == IBV_LINK_LAYER_ETHERNET ?
		       IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_IB;
	tmp.ndev_ifindex = 0;
	memcpy(e, &tmp, len < sizeof(tmp) ? len : sizeof(tmp));
	return 0;
}

/* The port has one GID (index 0): its table is that entry. */
SHIM_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *e,
					 size_t max, uint32_t flags, size_t len);
ssize_t _ibv_query_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *e, size_t max,
			     uint32_t flags, size_t len)
{
	if (!max || len < sizeof(*e))
		return -EINVAL;
	return _ibv_query_gid_ex(ctx, 1, 0, e, flags, len) ? -ENODATA : 1;
}

/* enum ibv_gid_type_sysfs of rdma-core's private driver.h: IB_ROCE_V1 = 0, ROCE_V2 = 1 */
SHIM_EXPORT int ibv_query_gid_type(struct ibv_context *ctx, uint8_t port, unsigned int index,
				   int *type);
int ibv_query_gid_type(struct ibv_context *ctx, uint8_t port, unsigned int index, int *type)
{
	(void)ctx;
	if (port != 1 || index != 0)
		return -1;
	*type = shim_info()->link_layer == IBV_LINK_LAYER_ETHERNET ? 1 : 0;
	return 0;
}

SHIM_EXPORT int ibv_query_pkey(struct ibv_context *ctx, uint8_t port, int index, __be16 *pkey)
{
	(void)ctx;
	if (port != 1 || index != 0)
		return -1;
	*pkey = htobe16(0xffff);
	return 0;
}

SHIM_EXPORT int ibv_get_pkey_index(struct ibv_context *ctx, uint8_t port, __be16 pkey)
{
	(void)ctx;
	return port == 1 && be16toh(pkey) == 0xffff ? 0 : -1;
}

/* ---- data path ops ------------------------------------------------------ */

static int op_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
static int op_req_notify(struct ibv_cq *cq, int solicited);
static int op_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
static int op_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
static int op_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			    struct ibv_recv_wr **bad);
static struct ibv_mw *op_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type t);
static struct ibv_qp *op_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *a);
static struct ibv_cq_ex *op_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *a);

SHIM_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *dev)
{
	struct shim_ctx *c;
	struct ibv_context *ctx;

	if (dev != &the_dev || shim_attach()) {
		errno = ENODEV;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	ctx = &c->vctx.context;
	ctx->device = dev;
	ctx->cmd_fd = -1;
	/* pollable, as the kernel's: the daemon writes one count per
	 * asynchronous event (an SRQ's limit, a QP's last WQE); UCX makes it
	 * non-blocking and watches it in its async thread */
	ctx->async_fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (ctx->async_fd < 0) {
		free(c);
		return NULL;
	}
	{
		struct shim_req req = { .op = SHIM_OP_ASYNC_FD };
		struct shim_rep rep;
		int rc = shim_rpc(&req, NULL, 0, ctx->async_fd, &rep, NULL);

		if (rc) {
			close(ctx->async_fd);
			free(c);
			errno = rc;
			return NULL;
		}
	}
	shim_fabric_fd(ctx->async_fd, true);
	ctx->num_comp_vectors = 1;
	pthread_mutex_init(&ctx->mutex, NULL);
	ctx->abi_compat = __VERBS_ABI_IS_EXTENDED;
	c->vctx.sz = sizeof(c->vctx);
	c->vctx.query_port = query_port_ex;
	c->vctx.query_device_ex = query_device_ex;
	c->vctx.create_qp_ex = op_create_qp_ex;
	c->vctx.create_cq_ex = op_create_cq_ex;
	ctx->ops.poll_cq = op_poll_cq;
	ctx->ops.req_notify_cq = op_req_notify;
	ctx->ops.post_send = op_post_send;
	ctx->ops.post_recv = op_post_recv;
	ctx->ops.post_srq_recv = op_post_srq_recv;
	ctx->ops.alloc_mw = op_alloc_mw;
	return ctx;
}

SHIM_EXPORT int ibv_close_device(struct ibv_context *ctx)
{
	if (!ctx)
		return EINVAL;
	if (ctx->async_fd >= 0) {
		shim_fabric_fd(ctx->async_fd, false);
		close(ctx->async_fd);
	}
	free(container_of(ctx, struct shim_ctx, vctx.context));
	return 0;
}

static struct ibv_mw *op_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type t)
{
	(void)pd;
	(void)t;
	shim_unsupported("ibv_alloc_mw");
	errno = EOPNOTSUPP;
	return NULL;
}

/*
 * The simulated HCA's asynchronous events: an SRQ's limit reached, the last
 * WQE of a QP attached to an SRQ (the daemon queues them and writes a count
 * on the async fd for each). Non-blocking, as UCX and libfabric read it:
 * EAGAIN when none is there, as the kernel's. Blocking: the thread waits
 * for the fd in simulated time, as for a completion channel.
 */
SHIM_EXPORT int ibv_get_async_event(struct ibv_context *ctx, struct ibv_async_event *ev)
{
	struct shim_req req = { .op = SHIM_OP_GET_ASYNC };
	struct shim_rep rep;
	uint64_t v;
	int fl, rc;

	if (!ctx || !ev) {
		errno = EINVAL;
		return -1;
	}
	fl = fcntl(ctx->async_fd, F_GETFL);
again:
	if (!(fl >= 0 && (fl & O_NONBLOCK)) && shim_wait_readable(ctx->async_fd))
		return -1;
	/* one count per event (a semaphore eventfd): EAGAIN when none */
	if (syscall(SYS_read, ctx->async_fd, &v, sizeof(v)) < 0)
		return -1;
	rc = rpc0(&req, &rep);
	if (rc == EAGAIN)
		goto again;	/* its object was destroyed before it was read */
	if (rc) {
		errno = rc;
		return -1;
	}
	memset(ev, 0, sizeof(*ev));
	switch (rep.u.async.type) {
	case SHIM_ASYNC_SRQ_LIMIT:
		ev->event_type = IBV_EVENT_SRQ_LIMIT_REACHED;
		ev->element.srq = hobj_get(rep.u.async.handle);
		break;
	case SHIM_ASYNC_LAST_WQE:
	case SHIM_ASYNC_COMM_EST:
	case SHIM_ASYNC_QP_ACCESS_ERR:
	case SHIM_ASYNC_QP_REQ_ERR:
		ev->event_type = rep.u.async.type == SHIM_ASYNC_COMM_EST ? IBV_EVENT_COMM_EST :
				 rep.u.async.type == SHIM_ASYNC_QP_ACCESS_ERR ? IBV_EVENT_QP_ACCESS_ERR :
				 rep.u.async.type == SHIM_ASYNC_QP_REQ_ERR ? IBV_EVENT_QP_REQ_ERR :
				 IBV_EVENT_QP_LAST_WQE_REACHED;
		ev->element.qp = hobj_get(rep.u.async.handle);
		break;
	case SHIM_ASYNC_PORT_ERR:
	case SHIM_ASYNC_PORT_ACTIVE:
		ev->event_type = rep.u.async.type == SHIM_ASYNC_PORT_ERR ? IBV_EVENT_PORT_ERR :
									   IBV_EVENT_PORT_ACTIVE;
		ev->element.port_num = (int)rep.u.async.handle;
		return 0;
	case SHIM_ASYNC_CQ_ERR:
		ev->event_type = IBV_EVENT_CQ_ERR;
		pthread_mutex_lock(&obj_lock);
		ev->element.cq = rep.u.async.handle < ncqs && cqs[rep.u.async.handle] ?
				 &cqs[rep.u.async.handle]->cq : NULL;
		pthread_mutex_unlock(&obj_lock);
		break;
	default:
		errno = EPROTO;
		return -1;
	}
	if (!ev->element.qp)
		goto again;	/* destroyed here since the daemon queued it */
	return 0;
}

SHIM_EXPORT void ibv_ack_async_event(struct ibv_async_event *ev)
{
	(void)ev;
}

/* ---- PD ----------------------------------------------------------------- */

SHIM_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *ctx)
{
	struct ibv_pd *pd = calloc(1, sizeof(*pd));

	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->context = ctx;
	return pd;
}

SHIM_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
	free(pd);
	return 0;
}

/* ---- MR ----------------------------------------------------------------- */

/*
 * Put [addr, addr+len) on shared memory: a memfd holding a copy of the
 * pages, mapped over them at the same addresses (MAP_FIXED), so the program
 * keeps its pointers and the daemon maps the same pages. A region inside
 * one already moved reuses it.
 */
/*
 * Whole pages, including bytes around the region the program never gave us:
 * not through memcpy, which a sanitizer in the program would intercept and
 * flag (the shim itself is never instrumented).
 */
static void page_copy(void *dst, const void *src, size_t n)
{
	volatile uint64_t *d = dst;
	const volatile uint64_t *s = src;

	for (size_t i = 0; i < n / sizeof(uint64_t); i++)
		d[i] = s[i];
}

/*
 * Are the pages [lo, hi) of segment g still its memfd's, mapped where it
 * put them? A program (its malloc, its MPI library) may have unmapped them
 * since, and mapped fresh memory at the same addresses (free() of a large
 * buffer, then malloc() of the next): registering that memory must not
 * reuse the old pages, or the daemon would read and write bytes the
 * program no longer sees. /proc/self/maps says: every mapping over the
 * range must be of the memfd's inode, at the file offset its address gives.
 * Read by raw system calls (the shim's own read() is interposed).
 */
static bool seg_live(const struct shim_seg *g, uintptr_t lo, uintptr_t hi)
{
	char buf[8192], line[512];
	size_t ll = 0;
	uintptr_t covered = lo;
	bool ok = true;
	ssize_t n;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;	/* cannot tell: a fresh segment is always right */
	while (ok && covered < hi && (n = syscall(SYS_read, fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n && ok && covered < hi; i++) {
			if (buf[i] != '\n') {
				if (ll < sizeof(line) - 1)
					line[ll++] = buf[i];
				continue;
			}
			line[ll] = 0;
			ll = 0;
			unsigned long a, b, offs, ino;
			char perm[8];

			if (sscanf(line, "%lx-%lx %7s %lx %*s %lu", &a, &b, perm, &offs, &ino) != 5 ||
			    b <= covered || a >= hi)
				continue;
			/* the first mapping past what is covered must start at it
			 * (no hole) and be the memfd's pages for these addresses */
			ok = a <= covered && ino == g->ino && offs == a - g->base;
			covered = b;
		}
	}
	syscall(SYS_close, fd);
	return ok && covered >= hi;
}

/*
 * The segment a region [addr, addr+len) lies in: one already moved that
 * holds all of it, or a new one. A new one covers the region's pages and
 * every live segment they touch (a registration cache merging regions,
 * buffers side by side sharing a page): the program's pages of all of
 * them, old segments' included, are copied into one memfd mapped over the
 * whole range, and the daemon maps each old segment's view onto the new
 * memfd's pages (the alias handles sent with it), so that regions
 * registered before keep seeing the program's bytes. A segment whose
 * pages are no longer its own (unmapped, mapped again) is forgotten.
 */
static int seg_for(uintptr_t addr, size_t len, uint32_t *h, uint64_t *off)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t base = addr & ~(uintptr_t)(pg - 1);
	uintptr_t end = (addr + len + (uintptr_t)pg - 1) & ~(uintptr_t)(pg - 1);
	enum { MAX_ALIAS = SHIM_MAX_TAIL / sizeof(uint32_t) };
	uint32_t alias[MAX_ALIAS];
	size_t nalias = 0, sz;
	struct shim_req req = { .op = SHIM_OP_SEG_ADD };
	struct shim_rep rep;
	struct shim_seg *ns;
	void *tmp;
	int fd, rc;

	for (size_t i = 0; i < nsegs; i++)
		if (addr >= segs[i].base && addr + len <= segs[i].base + segs[i].len) {
			if (!seg_live(&segs[i], base, end)) {
				/* unmapped and mapped again: forget it (its regions
				 * keep the old pages in the daemon until deregistered) */
				segs[i--] = segs[--nsegs];
				continue;
			}
			*h = segs[i].h;
			*off = addr - segs[i].base;
			return 0;
		}
	/* the union with every live segment it overlaps, until none is left
	 * outside (one may reach into another) */
	for (bool grew = true; grew;) {
		grew = false;
		for (size_t i = 0; i < nsegs; i++) {
			uintptr_t gb = segs[i].base, ge = segs[i].base + segs[i].len;

			if (ge <= base || gb >= end)
				continue;
			if (!seg_live(&segs[i], gb, ge)) {
				segs[i--] = segs[--nsegs];
				continue;
			}
			if (nalias == MAX_ALIAS)
				return ENOMEM;
			alias[nalias++] = segs[i].h;
			base = gb < base ? gb : base;
			end = ge > end ? ge : end;
			segs[i--] = segs[--nsegs];	/* the new one takes its place */
			grew = true;
		}
	}
	sz = end - base;
	fd = memfd_create("ibfab-mr", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return errno;
	struct stat st;

	/* the daemon maps it too: it takes only a file that cannot shrink */
	if (fstat(fd, &st) || ftruncate(fd, (off_t)sz) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK)) {
		rc = errno;
		close(fd);
		return rc;
	}
	/* copying takes about 1 ms per MiB (page faults on both sides): say
	 * so, or the daemon would take that much silent CPU for a spin */
	if (sz >= (1u << 20)) {
		struct shim_req busy = { .op = SHIM_OP_BUSY };

		shim_notify(&busy, -1);
	}
	tmp = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (tmp == MAP_FAILED) {
		rc = errno;
		close(fd);
		return rc;
	}
	page_copy(tmp, (const void *)base, sz);
	if (mmap((void *)base, sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
	    MAP_FAILED) {
		rc = errno;
		munmap(tmp, sz);
		close(fd);
		return rc;
	}
	munmap(tmp, sz);
	req.u.seg.base = base;
	req.u.seg.length = sz;
	req.inline_len = (uint32_t)(nalias * sizeof(alias[0]));
	rc = shim_rpc(&req, alias, req.inline_len, fd, &rep, NULL);
	close(fd);
	if (rc)
		return rc;
	ns = realloc(segs, (nsegs + 1) * sizeof(*segs));
	if (!ns)
		return ENOMEM;
	segs = ns;
	segs[nsegs++] = (struct shim_seg){ .base = base, .len = sz, .h = rep.u.obj.handle,
					   .ino = (uint64_t)st.st_ino };
	*h = rep.u.obj.handle;
	*off = addr - base;
	return 0;
}

static struct ibv_mr *reg_mr(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
			     unsigned int access)
{
	struct shim_req req = { .op = SHIM_OP_REG_MR };
	struct shim_rep rep;
	struct shim_mr *m;
	uint32_t seg = 0;
	uint64_t off = 0;
	int rc;

	if (!pd || (!addr && len)) {
		errno = EINVAL;
		return NULL;
	}
	if (iova != (uintptr_t)addr) {
		shim_unsupported("ibv_reg_mr_iova with an iova other than the address");
		errno = EOPNOTSUPP;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&obj_lock);
	rc = seg_for((uintptr_t)addr, len ? len : 1, &seg, &off);
	pthread_mutex_unlock(&obj_lock);
	if (!rc) {
		req.u.reg_mr.seg = seg;
		req.u.reg_mr.offset = off;
		req.u.reg_mr.addr = (uintptr_t)addr;
		req.u.reg_mr.length = len;
		/* optional bits (relaxed ordering ...) mean nothing to the model */
		req.u.reg_mr.access = access & 0xf;
		rc = rpc0(&req, &rep);
	}
	if (rc) {
		free(m);
		errno = rc;
		return NULL;
	}
	m->h = rep.u.obj.handle;
	m->mr.context = pd->context;
	m->mr.pd = pd;
	m->mr.addr = addr;
	m->mr.length = len;
	m->mr.handle = m->h;
	m->mr.lkey = rep.u.obj.lkey;
	m->mr.rkey = rep.u.obj.rkey;
	mrtab_add(&m->mr, access);
	return &m->mr;
}

#undef ibv_reg_mr
SHIM_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access);
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	return reg_mr(pd, addr, len, (uintptr_t)addr, (unsigned int)access);
}

SHIM_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t len,
					    uint64_t iova, unsigned int access)
{
	return reg_mr(pd, addr, len, iova, access);
}

#undef ibv_reg_mr_iova
SHIM_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t len,
					   uint64_t iova, int access);
struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
			       int access)
{
	return reg_mr(pd, addr, len, iova, (unsigned int)access);
}

/* A dma-buf is device memory exported by another driver (a GPU's); the
 * simulated HCA sees only the process's own pages, so there is nothing to map.
 * libfabric and UCX probe it and fall back to ibv_reg_mr on EOPNOTSUPP. */
SHIM_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t len,
					     uint64_t iova, int fd, int access);
struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t len, uint64_t iova,
				 int fd, int access)
{
	(void)pd;
	(void)offset;
	(void)len;
	(void)iova;
	(void)fd;
	(void)access;
	shim_unsupported("ibv_reg_dmabuf_mr (dma-buf memory)");
	errno = EOPNOTSUPP;
	return NULL;
}

SHIM_EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
	struct shim_mr *m = container_of(mr, struct shim_mr, mr);
	struct shim_req req = { .op = SHIM_OP_DEREG_MR, .u.obj.handle = m->h };
	struct shim_rep rep;
	int rc = rpc0(&req, &rep);

	/* the pages stay on their memfd: the program may still use them */
	if (rc && rc != EPIPE)
		return rc;
	mrtab_del(m->mr.lkey);
	free(m);
	return 0;
}

/* ---- completion channels and CQs ---------------------------------------- */

SHIM_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *ctx)
{
	struct shim_req req = { .op = SHIM_OP_CREATE_CHANNEL };
	struct shim_rep rep;
	struct shim_chan *c = calloc(1, sizeof(*c));
	int rc;

	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	/* A real pollable fd: the daemon writes one count per event. */
	c->ch.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (c->ch.fd < 0) {
		free(c);
		return NULL;
	}
	rc = shim_rpc(&req, NULL, 0, c->ch.fd, &rep, NULL);
	if (rc) {
		close(c->ch.fd);
		free(c);
		errno = rc;
		return NULL;
	}
	c->h = rep.u.obj.handle;
	c->ch.context = ctx;
	c->ch.refcnt = 0;
	shim_fabric_fd(c->ch.fd, true);
	return &c->ch;
}

SHIM_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	struct shim_chan *c = container_of(ch, struct shim_chan, ch);
	struct shim_req req = { .op = SHIM_OP_DESTROY_CHANNEL, .u.obj.handle = c->h };
	struct shim_rep rep;

	if (ch->refcnt)
		return EBUSY;
	rpc0(&req, &rep);
	shim_fabric_fd(ch->fd, false);
	close(ch->fd);
	free(c);
	return 0;
}

SHIM_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *ctx, int cqe, void *cq_ctx,
					 struct ibv_comp_channel *ch, int vector)
{
	struct shim_req req = { .op = SHIM_OP_CREATE_CQ };
	struct shim_rep rep;
	struct shim_cq *c;
	int rc;

	(void)vector;
	if (cqe < 1) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	req.u.create_cq.cqe = (uint32_t)cqe + 1;	/* a CQ holds cqe+1 entries */
	req.u.create_cq.channel = ch ? (int32_t)container_of(ch, struct shim_chan, ch)->h : -1;
	rc = rpc0(&req, &rep);
	if (rc) {
		free(c);
		errno = rc;
		return NULL;
	}
	c->h = rep.u.obj.handle;
	c->cq.context = ctx;
	c->cq.channel = ch;
	c->cq.cq_context = cq_ctx;
	c->cq.handle = c->h;
	c->cq.cqe = cqe;
	pthread_mutex_init(&c->cq.mutex, NULL);
	pthread_cond_init(&c->cq.cond, NULL);
	pthread_mutex_init(&c->pre_lock, NULL);
	pthread_mutex_lock(&obj_lock);
	if (c->h >= ncqs) {
		size_t n = c->h + 16;
		struct shim_cq **v = realloc(cqs, n * sizeof(*v));

		if (v) {
			memset(v + ncqs, 0, (n - ncqs) * sizeof(*v));
			cqs = v;
			ncqs = n;
		}
	}
	if (c->h < ncqs)
		cqs[c->h] = c;
	pthread_mutex_unlock(&obj_lock);
	if (ch)
		ch->refcnt++;
	return &c->cq;
}

SHIM_EXPORT int ibv_destroy_cq(struct ibv_cq *cq)
{
	struct shim_cq *c = container_of(cq, struct shim_cq, cq);
	struct shim_req req = { .op = SHIM_OP_DESTROY_CQ, .u.obj.handle = c->h };
	struct shim_rep rep;
	int rc = rpc0(&req, &rep);

	if (rc && rc != EPIPE)
		return rc;
	pthread_mutex_lock(&obj_lock);
	if (c->h < ncqs)
		cqs[c->h] = NULL;
	pthread_mutex_unlock(&obj_lock);
	if (cq->channel)
		cq->channel->refcnt--;
	pthread_mutex_destroy(&c->pre_lock);
	free(c->pre);
	free(c);
	return 0;
}

static int op_req_notify(struct ibv_cq *cq, int solicited)
{
	struct shim_cq *c = container_of(cq, struct shim_cq, cq);
	struct shim_req req = { .op = SHIM_OP_REQ_NOTIFY };
	struct shim_rep rep;

	req.u.notify.cq = c->h;
	req.u.notify.solicited_only = solicited ? 1 : 0;
	/* the CQ is ours: nothing can refuse arming it */
	if (shim_quiet_on()) {
		int rc = shim_quiet(&req, NULL, 0);

		if (rc != EAGAIN)
			return rc;
	}
	return rpc0(&req, &rep);
}

SHIM_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **ctx)
{
	struct shim_chan *c = container_of(ch, struct shim_chan, ch);
	struct shim_req req = { .op = SHIM_OP_GET_CQ_EVENT, .u.obj.handle = c->h };
	struct shim_rep rep;
	struct shim_cq *sc = NULL;
	uint64_t one;
	int fl = fcntl(ch->fd, F_GETFL), rc;
	bool nonblock = fl >= 0 && (fl & O_NONBLOCK);

	/*
	 * A channel made non-blocking (UCX drains it so before it arms a CQ)
	 * answers EAGAIN when no event is there, as the kernel's read would:
	 * the daemon writes one count on the eventfd per event it holds, so
	 * taking a count first says whether the request will find one.
	 */
	if (nonblock && syscall(SYS_read, ch->fd, &one, sizeof(one)) < 0)
		return -1;	/* errno EAGAIN (or EINTR) */
	rc = rpc0(&req, &rep);
	if (rc) {
		errno = rc;
		return -1;
	}
	/* consume the count the daemon wrote for this event */
	if (!nonblock && read(ch->fd, &one, sizeof(one)) < 0) {
		/* nothing to undo: the event itself came with the reply */
	}
	pthread_mutex_lock(&obj_lock);
	if (rep.u.event.cq < ncqs)
		sc = cqs[rep.u.event.cq];
	pthread_mutex_unlock(&obj_lock);
	if (!sc || rep.count > SHIM_MAX_WC - 1) {
		errno = EINVAL;
		return -1;
	}
	if (rep.count) {	/* what its next poll finds (after any left before) */
		pthread_mutex_lock(&sc->pre_lock);
		if (sc->ppre) {		/* what is left to the front */
			memmove(sc->pre, sc->pre + sc->ppre,
				(sc->npre - sc->ppre) * sizeof(*sc->pre));
			sc->npre -= sc->ppre;
			sc->ppre = 0;
		}
		if (sc->npre + rep.count > sc->pre_cap) {
			uint32_t n = sc->npre + rep.count + SHIM_MAX_WC;
			struct shim_wire_wc *v = realloc(sc->pre, n * sizeof(*v));

			if (!v) {	/* they are the program's: never dropped */
				pthread_mutex_unlock(&sc->pre_lock);
				fprintf(stderr, "ibfab shim: out of memory for completions\n");
				abort();
			}
			sc->pre = v;
			sc->pre_cap = n;
		}
		memcpy(sc->pre + sc->npre, rep.u.event.wc, rep.count * sizeof(*sc->pre));
		sc->npre += rep.count;
		pthread_mutex_unlock(&sc->pre_lock);
		/* taken from the daemon: the queues' bounds count them now,
		 * as a post's answer no longer does */
		for (uint32_t i = 0; i < rep.count; i++)
			qptab_done(rep.u.event.wc[i].qp_num, rep.u.event.wc[i].opcode & IBV_WC_RECV);
	}
	*cq = &sc->cq;
	*ctx = sc->cq.cq_context;
	return 0;
}

SHIM_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int n)
{
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += n;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

static void wc_from_wire(struct ibv_wc *wc, const struct shim_wire_wc *w);

static int op_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct shim_cq *c = container_of(cq, struct shim_cq, cq);
	struct shim_req req = { .op = SHIM_OP_POLL_CQ };
	struct shim_rep rep;
	int rc, k = 0;

	if (n <= 0)
		return 0;
	/* those its last event brought: taken at that instant, and the clock
	 * has not moved since (this program ran) */
	pthread_mutex_lock(&c->pre_lock);
	while (k < n && c->ppre < c->npre)
		wc_from_wire(&wc[k++], &c->pre[c->ppre++]);
	pthread_mutex_unlock(&c->pre_lock);
	if (k)
		return k;
	req.u.poll.cq = c->h;
	req.u.poll.n = (uint32_t)(n > SHIM_MAX_WC ? SHIM_MAX_WC : n);
	rc = rpc0(&req, &rep);
	if (rc)
		return -rc;
	if (rep.count > req.u.poll.n)
		return -EPROTO;
	for (uint32_t i = 0; i < rep.count; i++) {
		wc_from_wire(&wc[i], &rep.u.wc[i]);
		qptab_done(rep.u.wc[i].qp_num, rep.u.wc[i].opcode & IBV_WC_RECV);
	}
	return (int)rep.count;
}

/* A completion as the daemon sent it, as the program reads it. */
static void wc_from_wire(struct ibv_wc *wc, const struct shim_wire_wc *w)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = w->wr_id;
	wc->status = (enum ibv_wc_status)w->status;
	wc->opcode = (enum ibv_wc_opcode)w->opcode;
	wc->byte_len = w->byte_len;
	wc->imm_data = w->imm;
	wc->qp_num = w->qp_num;
	wc->src_qp = w->src_qp;
	wc->wc_flags = w->with_imm ? IBV_WC_WITH_IMM : 0;
	wc->slid = w->slid;
	wc->pkey_index = 0;
}

/* ---- the extended CQ (ibv_cq_ex) ----------------------------------------- */

/*
 * ibv_start_poll() takes the next completion (and fetches a batch from the
 * daemon when none is left), ibv_next_poll() the one after, ibv_end_poll()
 * consumes the current one; the ibv_wc_read_*() calls read the current
 * one. Every field of an ibv_wc can be read; completion timestamps, VLANs,
 * flow tags and tag matching are not there (ibv_create_cq_ex refuses
 * wc_flags that ask for them).
 */
static struct shim_cq *cqx_of(struct ibv_cq_ex *x)
{
	return container_of(x, struct shim_cq, cqx);
}

/* Make buf[pos] current, fetching a batch when the buffer is spent: 0,
 * ENOENT (empty), or an errno. */
static int cqx_current(struct shim_cq *c)
{
	if (c->pos >= c->nbuf) {
		int n = op_poll_cq(&c->cq, SHIM_MAX_WC, c->buf);

		c->pos = 0;
		c->nbuf = n > 0 ? n : 0;
		if (n < 0)
			return -n;
		if (!n)
			return ENOENT;
	}
	c->cqx.status = c->buf[c->pos].status;
	c->cqx.wr_id = c->buf[c->pos].wr_id;
	return 0;
}

static int cqx_start_poll(struct ibv_cq_ex *x, struct ibv_poll_cq_attr *attr)
{
	(void)attr;
	return cqx_current(cqx_of(x));
}

static int cqx_next_poll(struct ibv_cq_ex *x)
{
	struct shim_cq *c = cqx_of(x);

	c->pos++;
	return cqx_current(c);
}

static void cqx_end_poll(struct ibv_cq_ex *x)
{
	cqx_of(x)->pos++;
}

static const struct ibv_wc *cqx_wc(struct ibv_cq_ex *x)
{
	struct shim_cq *c = cqx_of(x);

	return &c->buf[c->pos < c->nbuf ? c->pos : 0];
}

/* The ibv_wc_read_*() of the current completion: one field each. */
#define CQX_READ(name, type, field) \
	static type cqx_##name(struct ibv_cq_ex *x) \
	{ \
		return cqx_wc(x)->field; \
	}
CQX_READ(opcode, enum ibv_wc_opcode, opcode)
CQX_READ(vendor_err, uint32_t, vendor_err)
CQX_READ(byte_len, uint32_t, byte_len)
CQX_READ(imm, __be32, imm_data)
CQX_READ(qp_num, uint32_t, qp_num)
CQX_READ(src_qp, uint32_t, src_qp)
CQX_READ(wc_flags, unsigned int, wc_flags)
CQX_READ(slid, uint32_t, slid)
CQX_READ(sl, uint8_t, sl)
CQX_READ(path_bits, uint8_t, dlid_path_bits)
#undef CQX_READ

static struct ibv_cq_ex *op_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *a)
{
	struct ibv_cq *cq;
	struct shim_cq *c;

	if (!a || a->comp_mask || (a->wc_flags & ~(uint64_t)IBV_WC_STANDARD_FLAGS)) {
		shim_unsupported("ibv_create_cq_ex beyond the standard completion fields "
				 "(timestamps, VLANs, flow tags, parent domains)");
		errno = EOPNOTSUPP;
		return NULL;
	}
	cq = ibv_create_cq(ctx, (int)a->cqe, a->cq_context, a->channel, (int)a->comp_vector);
	if (!cq)
		return NULL;
	c = container_of(cq, struct shim_cq, cq);
	c->cqx.start_poll = cqx_start_poll;
	c->cqx.next_poll = cqx_next_poll;
	c->cqx.end_poll = cqx_end_poll;
	c->cqx.read_opcode = cqx_opcode;
	c->cqx.read_vendor_err = cqx_vendor_err;
	c->cqx.read_byte_len = cqx_byte_len;
	c->cqx.read_imm_data = cqx_imm;
	c->cqx.read_qp_num = cqx_qp_num;
	c->cqx.read_src_qp = cqx_src_qp;
	c->cqx.read_wc_flags = cqx_wc_flags;
	c->cqx.read_slid = cqx_slid;
	c->cqx.read_sl = cqx_sl;
	c->cqx.read_dlid_path_bits = cqx_path_bits;
	return &c->cqx;
}

/* ---- SRQ ---------------------------------------------------------------- */

SHIM_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *a)
{
	struct shim_req req = { .op = SHIM_OP_CREATE_SRQ };
	struct shim_rep rep;
	struct shim_srq *s;
	int rc;

	if (!pd || !a || !a->attr.max_wr || a->attr.max_sge > SHIM_MAX_SGE) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	req.u.create_srq.max_wr = a->attr.max_wr;
	rc = rpc0(&req, &rep);
	if (rc) {
		free(s);
		errno = rc;
		return NULL;
	}
	s->h = rep.u.obj.handle;
	s->max_wr = a->attr.max_wr;
	hobj_set(s->h, &s->srq);
	a->attr.max_sge = SHIM_MAX_SGE;
	s->srq.context = pd->context;
	s->srq.srq_context = a->srq_context;
	s->srq.pd = pd;
	s->srq.handle = s->h;
	pthread_mutex_init(&s->srq.mutex, NULL);
	pthread_cond_init(&s->srq.cond, NULL);
	return &s->srq;
}

SHIM_EXPORT int ibv_destroy_srq(struct ibv_srq *srq)
{
	struct shim_srq *s = container_of(srq, struct shim_srq, srq);
	struct shim_req req = { .op = SHIM_OP_DESTROY_SRQ, .u.obj.handle = s->h };
	struct shim_rep rep;
	int rc = rpc0(&req, &rep);

	if (rc && rc != EPIPE)
		return rc;
	hobj_set(s->h, NULL);
	free(s);
	return 0;
}

/* One gather/scatter entry for the model: several only when contiguous. */
/*
 * A WR's SGEs for the daemon: one in *out when they are one contiguous
 * range of one MR (the HCA reads the same bytes), else all of them in
 * list[] (returned: how many; the daemon gathers and scatters them), or -1
 * for more than SHIM_MAX_SGE.
 */
static int sge_list(const struct ibv_sge *sg, int n, struct shim_wire_sge *out,
		    struct shim_wire_sge *list)
{
	bool one = true;

	memset(out, 0, sizeof(*out));
	if (n <= 0)
		return 0;
	if (n > SHIM_MAX_SGE)
		return -1;
	out->addr = sg[0].addr;
	out->length = sg[0].length;
	out->lkey = sg[0].lkey;
	for (int i = 1; i < n && one; i++) {
		if (sg[i].lkey != out->lkey || sg[i].addr != out->addr + out->length ||
		    sg[i].length > UINT32_MAX - out->length)
			one = false;
		else
			out->length += sg[i].length;
	}
	if (one)
		return 0;
	for (int i = 0; i < n; i++)
		list[i] = (struct shim_wire_sge){ .addr = sg[i].addr, .length = sg[i].length,
						  .lkey = sg[i].lkey };
	*out = list[0];
	return n;
}

/*
 * Can this receive go without waiting for the daemon's answer? Only if
 * nothing would refuse it (hca_post_recv, do_post_recv): the QP is out of
 * RESET and has no SRQ, its queue has room, one SGE (or one contiguous
 * range) within its max_recv_sge, in a region with local write (a UD
 * receive holds the 40-byte GRH at least).
 */
static bool recv_quiet(const struct shim_qp *q, const struct ibv_recv_wr *wr,
		       const struct shim_wire_sge *sg, int nl)
{
	if (!q || !shim_quiet_on() || nl || q->qp.srq || q->qp.state == IBV_QPS_RESET ||
	    wr->num_sge < 0 || (uint32_t)wr->num_sge > q->cap.max_recv_sge ||
	    q->rq_out >= q->cap.max_recv_wr)
		return false;
	if (q->qp.qp_type == IBV_QPT_UD && sg->length < 40)
		return false;
	return !sg->length || mrtab_writable(sg->lkey, sg->addr, sg->length);
}

static int post_recv_common(uint32_t op, uint32_t h, struct shim_qp *q, struct ibv_recv_wr *wr,
			    struct ibv_recv_wr **bad)
{
	for (; wr; wr = wr->next) {
		struct shim_req req = { .op = op };
		struct shim_rep rep;
		int rc;

		struct shim_wire_sge list[SHIM_MAX_SGE];
		int nl;

		req.u.recv.qp = h;
		req.u.recv.wr_id = wr->wr_id;
		req.u.recv.num_sge = (uint32_t)wr->num_sge;
		nl = sge_list(wr->sg_list, wr->num_sge, &req.u.recv.sg, list);
		if (nl < 0) {
			rc = EINVAL;
		} else if (recv_quiet(q, wr, &req.u.recv.sg, nl) &&
			   (rc = shim_quiet(&req, NULL, 0)) != EAGAIN) {
			if (!rc)
				q->rq_out++;
		} else {
			req.inline_len = (uint32_t)nl * sizeof(list[0]);
			rc = shim_rpc(&req, list, req.inline_len, -1, &rep, NULL);
			if (q && (!rc || rc == ENOMEM))
				q->rq_out = rep.u.post.rq_used;
		}
		if (rc) {
			if (bad)
				*bad = wr;
			return rc;
		}
	}
	return 0;
}

static int op_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			    struct ibv_recv_wr **bad)
{
	return post_recv_common(SHIM_OP_POST_SRQ_RECV,
				container_of(srq, struct shim_srq, srq)->h, NULL, wr, bad);
}

static int op_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct shim_qp *q = container_of(qp, struct shim_qp, qp);

	return post_recv_common(SHIM_OP_POST_RECV, q->h, q, wr, bad);
}

/* ---- QP ----------------------------------------------------------------- */

/*
 * The inline capacity a ConnectX reports for a new send queue, as
 * rdma-core's mlx5 provider computes it (providers/mlx5/verbs.c,
 * mlx5_calc_send_wqe and sq_overhead): a WQE is its control segment plus
 * the largest operation segments the QP's operations may need (RDMA
 * address 16 B; atomics 32 B; memory-window binds and local invalidation,
 * which every RC/UC QP created without send_ops_flags may post, a UMR
 * control, mkey context and 64-B list: 192 B in all; UD adds its 48-B
 * datagram segment), then either the gather list (16 B an SGE) or the
 * inline segment (4 B + the data, in 16-B units), rounded up to 64-B
 * blocks; what that WQE holds beyond the segments is the inline capacity
 * reported back. So asking for 64 bytes on an RC QP gives 124 (UCX asks for
 * 64 and sends up to 123 inline), asking for none with one SGE gives 60
 * (the shim counts a QP created with no SGE as one).
 * Capped at what one post carries to the daemon (SHIM_MAX_INLINE).
 */
static uint32_t mlx5_inline_cap(enum ibv_qp_type t, uint64_t ops, uint32_t sge, uint32_t inl)
{
	uint32_t ovh = 16, size, tot;

	if (t == IBV_QPT_UD) {
		ovh += 48;
	} else {
		if (ops & (IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
			   IBV_QP_EX_WITH_RDMA_READ))
			ovh = 32;
		if (ops & (IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD))
			ovh = 48;
		if (ops & (IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV))
			ovh = 192;
	}
	size = ovh + sge * 16;
	if (inl && ovh + ((4 + inl + 15) & ~15u) > size)
		size = ovh + ((4 + inl + 15) & ~15u);
	tot = (size + 63) & ~63u;
	return tot - ovh - 4 > SHIM_MAX_INLINE ? SHIM_MAX_INLINE : tot - ovh - 4;
}

/* The operations an RC/UC QP created without send_ops_flags may post. */
#define MLX5_DEFAULT_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_INV | \
			  IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_WRITE | \
			  IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ | \
			  IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
			  IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV | \
			  IBV_QP_EX_WITH_BIND_MW)

static struct ibv_qp *create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a, uint64_t ops);

SHIM_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
	return create_qp(pd, a, MLX5_DEFAULT_OPS);
}

static struct ibv_qp *create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a, uint64_t ops)
{
	struct shim_req req = { .op = SHIM_OP_CREATE_QP };
	struct shim_rep rep;
	struct shim_qp *q;
	int rc;

	if (!pd || !a || !a->send_cq || (!a->recv_cq && !a->srq)) {
		errno = EINVAL;
		return NULL;
	}
	if (a->qp_type != IBV_QPT_RC && a->qp_type != IBV_QPT_UC && a->qp_type != IBV_QPT_UD) {
		shim_unsupported("this QP type (only RC, UC and UD are modelled)");
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (a->cap.max_send_sge > SHIM_MAX_SGE || a->cap.max_recv_sge > SHIM_MAX_SGE) {
		errno = EINVAL;		/* more than query_device's max_sge */
		return NULL;
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		errno = ENOMEM;
		return NULL;
	}
	req.u.create_qp.type = a->qp_type;
	req.u.create_qp.send_cq = container_of(a->send_cq, struct shim_cq, cq)->h;
	req.u.create_qp.recv_cq = container_of(a->recv_cq ? a->recv_cq : a->send_cq,
					       struct shim_cq, cq)->h;
	req.u.create_qp.srq = a->srq ? (int32_t)container_of(a->srq, struct shim_srq, srq)->h : -1;
	req.u.create_qp.max_send_wr = a->cap.max_send_wr ? a->cap.max_send_wr : 1;
	req.u.create_qp.max_recv_wr = a->cap.max_recv_wr ? a->cap.max_recv_wr : 1;
	req.u.create_qp.sq_sig_all = a->sq_sig_all ? 1 : 0;
	req.u.create_qp.max_send_sge = a->cap.max_send_sge ? a->cap.max_send_sge : 1;
	if (a->cap.max_inline_data > SHIM_MAX_INLINE) {
		free(q);
		errno = EINVAL;
		return NULL;
	}
	req.u.create_qp.max_inline = mlx5_inline_cap(a->qp_type, ops, req.u.create_qp.max_send_sge,
						     a->cap.max_inline_data);
	req.u.create_qp.max_recv_sge = a->cap.max_recv_sge ? a->cap.max_recv_sge : 1;
	rc = rpc0(&req, &rep);
	if (rc) {
		free(q);
		errno = rc;
		return NULL;
	}
	q->h = rep.u.qp.handle;
	hobj_set(q->h, &q->qp);
	a->cap.max_send_wr = rep.u.qp.max_send_wr;
	a->cap.max_recv_wr = a->srq ? 0 : rep.u.qp.max_recv_wr;
	a->cap.max_send_sge = req.u.create_qp.max_send_sge;
	a->cap.max_recv_sge = a->srq ? 0 : req.u.create_qp.max_recv_sge;
	a->cap.max_inline_data = rep.u.qp.max_inline;
	q->cap = a->cap;
	q->qp.context = pd->context;
	q->qp.qp_context = a->qp_context;
	q->qp.pd = pd;
	q->qp.send_cq = a->send_cq;
	q->qp.recv_cq = a->recv_cq;
	q->qp.srq = a->srq;
	q->qp.handle = q->h;
	q->qp.qp_num = rep.u.qp.qpn;
	q->qp.state = IBV_QPS_RESET;
	q->qp.qp_type = a->qp_type;
	pthread_mutex_init(&q->qp.mutex, NULL);
	pthread_cond_init(&q->qp.cond, NULL);
	qptab_set(q, true);
	return &q->qp;
}

static uint32_t mtu_bytes(enum ibv_mtu m)
{
	return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128u << m : 0;
}

SHIM_EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	struct shim_qp *q = container_of(qp, struct shim_qp, qp);
	struct shim_req req = { .op = SHIM_OP_MODIFY_QP };
	struct shim_qp_attr *w = &req.u.modify_qp.attr;
	struct shim_rep rep;
	int rc;

	req.u.modify_qp.qp = q->h;
	/* enum hca_qp_attr mask bits (models/hca/hca.h) */
	if (mask & IBV_QP_STATE) {
		w->mask |= 1 << 0;
		w->qp_state = a->qp_state;
	}
	if (mask & IBV_QP_PATH_MTU) {
		w->mask |= 1 << 1;
		w->path_mtu = mtu_bytes(a->path_mtu);
	}
	if (mask & IBV_QP_AV) {
		w->mask |= 1 << 2;
		w->dlid = av_dlid(&a->ah_attr);
		w->sl = a->ah_attr.sl;
	}
	if (mask & IBV_QP_DEST_QPN) {
		w->mask |= 1 << 3;
		w->dest_qp_num = a->dest_qp_num;
	}
	if (mask & IBV_QP_RQ_PSN) {
		w->mask |= 1 << 4;
		w->rq_psn = a->rq_psn;
	}
	if (mask & IBV_QP_SQ_PSN) {
		w->mask |= 1 << 5;
		w->sq_psn = a->sq_psn;
	}
	if (mask & IBV_QP_TIMEOUT) {
		w->mask |= 1 << 6;
		w->timeout = a->timeout;
	}
	if (mask & IBV_QP_RETRY_CNT) {
		w->mask |= 1 << 7;
		w->retry_cnt = a->retry_cnt;
	}
	if (mask & IBV_QP_RNR_RETRY) {
		w->mask |= 1 << 8;
		w->rnr_retry = a->rnr_retry;
	}
	if (mask & IBV_QP_MIN_RNR_TIMER) {
		w->mask |= 1 << 9;
		w->min_rnr_timer = a->min_rnr_timer;
	}
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC) {
		w->mask |= 1 << 10;
		w->max_rd_atomic = a->max_rd_atomic;
	}
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) {
		w->mask |= 1 << 11;
		w->max_dest_rd_atomic = a->max_dest_rd_atomic;
	}
	if (mask & IBV_QP_QKEY) {
		w->mask |= 1 << 12;
		w->qkey = a->qkey;
	}
	if (mask & IBV_QP_ACCESS_FLAGS) {
		w->mask |= 1 << 13;
		w->access = (uint32_t)a->qp_access_flags;
	}
	rc = rpc0(&req, &rep);
	if (rc)
		return rc;
	if (mask & IBV_QP_STATE)
		qp->state = a->qp_state;
	/* remember what was set, for ibv_query_qp */
	{
		struct ibv_qp_attr *s = &q->attr;

#define KEEP(bit, field) do { if (mask & (bit)) s->field = a->field; } while (0)
		KEEP(IBV_QP_STATE, qp_state);
		KEEP(IBV_QP_PATH_MTU, path_mtu);
		KEEP(IBV_QP_AV, ah_attr);
		KEEP(IBV_QP_DEST_QPN, dest_qp_num);
		KEEP(IBV_QP_RQ_PSN, rq_psn);
		KEEP(IBV_QP_SQ_PSN, sq_psn);
		KEEP(IBV_QP_TIMEOUT, timeout);
		KEEP(IBV_QP_RETRY_CNT, retry_cnt);
		KEEP(IBV_QP_RNR_RETRY, rnr_retry);
		KEEP(IBV_QP_MIN_RNR_TIMER, min_rnr_timer);
		KEEP(IBV_QP_MAX_QP_RD_ATOMIC, max_rd_atomic);
		KEEP(IBV_QP_MAX_DEST_RD_ATOMIC, max_dest_rd_atomic);
		KEEP(IBV_QP_QKEY, qkey);
		KEEP(IBV_QP_PKEY_INDEX, pkey_index);
		KEEP(IBV_QP_PORT, port_num);
		KEEP(IBV_QP_ACCESS_FLAGS, qp_access_flags);
#undef KEEP
		q->attr_mask |= mask;
	}
	return 0;
}

SHIM_EXPORT int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask,
			     struct ibv_qp_init_attr *init)
{
	struct shim_qp *q = container_of(qp, struct shim_qp, qp);

	(void)mask;
	*a = q->attr;
	a->qp_state = qp->state;
	a->cur_qp_state = qp->state;
	a->cap = q->cap;
	if (init) {
		memset(init, 0, sizeof(*init));
		init->qp_context = qp->qp_context;
		init->send_cq = qp->send_cq;
		init->recv_cq = qp->recv_cq;
		init->srq = qp->srq;
		init->cap = q->cap;
		init->qp_type = qp->qp_type;
	}
	return 0;
}

SHIM_EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
	struct shim_qp *q = container_of(qp, struct shim_qp, qp);
	struct shim_req req = { .op = SHIM_OP_DESTROY_QP, .u.obj.handle = q->h };
	struct shim_rep rep;
	int rc = rpc0(&req, &rep);

	if (rc && rc != EPIPE)
		return rc;
	hobj_set(q->h, NULL);
	qptab_set(q, false);
	free(q->wrs);
	free(q);
	return 0;
}

/*
 * Can this send go without waiting for the daemon's answer? Only if
 * nothing would refuse it (hca_post_send, do_post_send): the QP is in RTS
 * (the HCA itself only ever moves it on to an error state, where a post
 * completes with a flush error and is not refused), its send queue has
 * room, the opcode suits its type (atomics wait: the fabric may not carry
 * them), one SGE or one contiguous range within max_send_sge, a UD
 * message within the MTU, inline data within max_inline_data.
 */
static bool send_quiet(const struct shim_qp *q, const struct ibv_send_wr *wr,
		       const struct shim_req *req)
{
	uint32_t len = req->u.send.sg.length;
	enum ibv_qp_type t = q->qp.qp_type;
	uint8_t mtu = shim_info()->mtu_code;

	if (!shim_quiet_on() || q->qp.state != IBV_QPS_RTS ||
	    (req->u.send.send_flags & SHIM_SEND_SGL) || wr->num_sge < 0 ||
	    (uint32_t)wr->num_sge > q->cap.max_send_sge || q->sq_out >= q->cap.max_send_wr ||
	    len > (1u << 31))
		return false;
	switch (wr->opcode) {
	case IBV_WR_SEND: case IBV_WR_SEND_WITH_IMM:
		break;
	case IBV_WR_RDMA_WRITE: case IBV_WR_RDMA_WRITE_WITH_IMM:
		if (t == IBV_QPT_UD)
			return false;
		break;
	case IBV_WR_RDMA_READ:
		if (t != IBV_QPT_RC)
			return false;
		break;
	default:
		return false;
	}
	if (t == IBV_QPT_UD && (!wr->wr.ud.ah || mtu < IBV_MTU_256 || mtu > IBV_MTU_4096 ||
				len > (128u << mtu)))
		return false;
	return !req->inline_len || (req->inline_len == len && len <= q->cap.max_inline_data);
}

static int op_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct shim_qp *q = container_of(qp, struct shim_qp, qp);

	for (bool first = true; wr; wr = wr->next, first = false) {
		struct shim_req req = { .op = SHIM_OP_POST_SEND };
		struct shim_rep rep;
		char inl[SHIM_MAX_INLINE];
		struct shim_wire_sge list[SHIM_MAX_SGE];
		uint32_t inl_len = 0, tail_len = 0;
		const void *tail = NULL;
		int rc = 0;

		req.u.send.qp = q->h;
		req.u.send.wr_id = wr->wr_id;
		req.u.send.opcode = wr->opcode;
		req.u.send.send_flags = wr->send_flags;
		if (!first || wr->next)
			req.u.send.send_flags |= SHIM_SEND_LIST;
		if (wr->next)
			req.u.send.send_flags |= SHIM_SEND_LIST_MORE;
		req.u.send.imm = wr->imm_data;
		req.u.send.num_sge = (uint32_t)wr->num_sge;
		if (wr->opcode > IBV_WR_ATOMIC_FETCH_AND_ADD) {
			shim_unsupported("this work request opcode");
			rc = EOPNOTSUPP;
		} else if ((wr->send_flags & IBV_SEND_INLINE) && wr->opcode != IBV_WR_RDMA_READ &&
			   wr->opcode < IBV_WR_ATOMIC_CMP_AND_SWP) {
			/* inline: the bytes are copied now, from memory that may be
			 * unregistered; they travel with the request */
			for (int i = 0; i < wr->num_sge && !rc; i++) {
				if (inl_len + wr->sg_list[i].length > sizeof(inl)) {
					rc = EINVAL;
					break;
				}
				memcpy(inl + inl_len, (void *)(uintptr_t)wr->sg_list[i].addr,
				       wr->sg_list[i].length);
				inl_len += wr->sg_list[i].length;
			}
			req.u.send.sg.length = inl_len;
			tail = inl;
			tail_len = inl_len;
		} else {
			int nl = sge_list(wr->sg_list, wr->num_sge, &req.u.send.sg, list);

			if (nl < 0) {
				rc = EINVAL;
			} else if (nl) {
				/* READs scatter into one SGE (max_sge_rd), atomics take one */
				if (wr->opcode == IBV_WR_RDMA_READ ||
				    wr->opcode >= IBV_WR_ATOMIC_CMP_AND_SWP)
					rc = EINVAL;
				req.u.send.send_flags |= SHIM_SEND_SGL;
				tail = list;
				tail_len = (uint32_t)nl * sizeof(list[0]);
			}
		}
		if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		    wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			req.u.send.remote_addr = wr->wr.atomic.remote_addr;
			req.u.send.rkey = wr->wr.atomic.rkey;
			req.u.send.compare_add = wr->wr.atomic.compare_add;
			req.u.send.swap = wr->wr.atomic.swap;
		} else if (qp->qp_type == IBV_QPT_UD) {
			struct shim_ah *ah = wr->wr.ud.ah ?
					     container_of(wr->wr.ud.ah, struct shim_ah, ah) : NULL;

			if (!ah)
				rc = EINVAL;
			else {
				req.u.send.dlid = ah->dlid;
				req.u.send.sl = ah->sl;
			}
			req.u.send.remote_qpn = wr->wr.ud.remote_qpn;
			req.u.send.remote_qkey = wr->wr.ud.remote_qkey;
		} else {
			req.u.send.remote_addr = wr->wr.rdma.remote_addr;
			req.u.send.rkey = wr->wr.rdma.rkey;
		}
		req.inline_len = tail_len;
		int qrc = !rc && send_quiet(q, wr, &req) ? shim_quiet(&req, tail, tail_len) : EAGAIN;

		if (qrc != EAGAIN) {
			rc = qrc;
			if (!rc)
				q->sq_out++;
		} else if (!rc) {
			rc = shim_rpc(&req, tail, tail_len, -1, &rep, NULL);
			if (!rc || rc == ENOMEM)
				q->sq_out = rep.u.post.sq_used;
		}
		if (rc) {
			if (bad)
				*bad = wr;
			return rc;
		}
	}
	return 0;
}

/* ---- the extended post-send API (ibv_qp_ex, ibv_wr_*) ------------------- */

/*
 * ibv_wr_start() opens a batch; each ibv_wr_<opcode>() starts one WR with
 * the qp_ex's wr_id and wr_flags of that moment, the ibv_wr_set_*() calls
 * that follow fill it in, and ibv_wr_complete() posts the batch as one
 * ibv_post_send() list (so one doorbell, as mlx5 rings it). Inline data is
 * copied when it is set, as the API says. An error in the batch (an
 * operation the QP was not created for, no WR to set data on, too much
 * inline data) is returned by ibv_wr_complete(), which then posts nothing.
 */
struct shim_wr {
	struct ibv_send_wr wr;
	struct ibv_sge sge[SHIM_MAX_SGE];	/* its SGEs (sg_list is set at wr_complete:
						 * the batch's array may move as it grows) */
	bool inl_used;			/* the SGE is inl[] */
	char inl[SHIM_MAX_INLINE];
};

static struct shim_qp *qpx_of(struct ibv_qp_ex *x)
{
	return container_of(x, struct shim_qp, qpx);
}

/* A new WR of the batch, or NULL (the batch has failed). */
static struct ibv_send_wr *wr_new(struct ibv_qp_ex *x, enum ibv_wr_opcode op, uint64_t flag)
{
	struct shim_qp *q = qpx_of(x);
	struct shim_wr *w;

	if (q->wr_err)
		return NULL;
	if (!(q->send_ops & flag)) {
		q->wr_err = EOPNOTSUPP;
		return NULL;
	}
	if (q->nwr == q->wr_cap) {
		uint32_t cap = q->wr_cap ? 2 * q->wr_cap : 8;
		struct shim_wr *v = realloc(q->wrs, cap * sizeof(*v));

		if (!v) {
			q->wr_err = ENOMEM;
			return NULL;
		}
		q->wrs = v;
		q->wr_cap = cap;
	}
	w = &q->wrs[q->nwr++];
	memset(&w->wr, 0, sizeof(w->wr));
	w->wr.wr_id = x->wr_id;
	w->wr.send_flags = x->wr_flags;
	w->wr.opcode = op;
	w->inl_used = false;
	return &w->wr;
}

/* The batch's last WR, for the wr_set_* calls. */
static struct shim_wr *wr_last(struct ibv_qp_ex *x)
{
	struct shim_qp *q = qpx_of(x);

	if (q->wr_err)
		return NULL;
	if (!q->nwr) {
		q->wr_err = EINVAL;
		return NULL;
	}
	return &q->wrs[q->nwr - 1];
}

static void wrx_start(struct ibv_qp_ex *x)
{
	struct shim_qp *q = qpx_of(x);

	q->nwr = 0;
	q->wr_err = 0;
}

static void wrx_abort(struct ibv_qp_ex *x)
{
	wrx_start(x);
}

static int wrx_complete(struct ibv_qp_ex *x)
{
	struct shim_qp *q = qpx_of(x);
	struct ibv_send_wr *bad;
	int rc = q->wr_err;

	if (!rc && q->nwr) {
		for (uint32_t i = 0; i < q->nwr; i++) {
			struct shim_wr *w = &q->wrs[i];

			w->wr.next = i + 1 < q->nwr ? &q->wrs[i + 1].wr : NULL;
			w->wr.sg_list = w->wr.num_sge ? w->sge : NULL;
			if (w->inl_used)
				w->sge[0].addr = (uintptr_t)w->inl;
		}
		rc = op_post_send(&q->qp, &q->wrs[0].wr, &bad);
	}
	wrx_start(x);
	return rc;
}

/* A new WR with a remote address: RDMA WRITE or READ. */
static struct ibv_send_wr *wr_rdma(struct ibv_qp_ex *x, enum ibv_wr_opcode op, uint64_t flag,
				   uint32_t rkey, uint64_t raddr)
{
	struct ibv_send_wr *wr = wr_new(x, op, flag);

	if (wr) {
		wr->wr.rdma.rkey = rkey;
		wr->wr.rdma.remote_addr = raddr;
	}
	return wr;
}

/* A new atomic WR on the 8 bytes at raddr. */
static void wr_atomic(struct ibv_qp_ex *x, enum ibv_wr_opcode op, uint64_t flag, uint32_t rkey,
		      uint64_t raddr, uint64_t compare_add, uint64_t swap)
{
	struct ibv_send_wr *wr = wr_new(x, op, flag);

	if (wr) {
		wr->wr.atomic.rkey = rkey;
		wr->wr.atomic.remote_addr = raddr;
		wr->wr.atomic.compare_add = compare_add;
		wr->wr.atomic.swap = swap;
	}
}

static void wrx_rdma_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t raddr)
{
	wr_rdma(x, IBV_WR_RDMA_WRITE, IBV_QP_EX_WITH_RDMA_WRITE, rkey, raddr);
}

static void wrx_rdma_write_imm(struct ibv_qp_ex *x, uint32_t rkey, uint64_t raddr, __be32 imm)
{
	struct ibv_send_wr *wr = wr_rdma(x, IBV_WR_RDMA_WRITE_WITH_IMM,
					 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM, rkey, raddr);

	if (wr)
		wr->imm_data = imm;
}

static void wrx_rdma_read(struct ibv_qp_ex *x, uint32_t rkey, uint64_t raddr)
{
	wr_rdma(x, IBV_WR_RDMA_READ, IBV_QP_EX_WITH_RDMA_READ, rkey, raddr);
}

static void wrx_send(struct ibv_qp_ex *x)
{
	wr_new(x, IBV_WR_SEND, IBV_QP_EX_WITH_SEND);
}

static void wrx_send_imm(struct ibv_qp_ex *x, __be32 imm)
{
	struct ibv_send_wr *wr = wr_new(x, IBV_WR_SEND_WITH_IMM, IBV_QP_EX_WITH_SEND_WITH_IMM);

	if (wr)
		wr->imm_data = imm;
}

static void wrx_cmp_swp(struct ibv_qp_ex *x, uint32_t rkey, uint64_t raddr, uint64_t compare,
			uint64_t swap)
{
	wr_atomic(x, IBV_WR_ATOMIC_CMP_AND_SWP, IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP, rkey, raddr,
		  compare, swap);
}

static void wrx_fetch_add(struct ibv_qp_ex *x, uint32_t rkey, uint64_t raddr, uint64_t add)
{
	wr_atomic(x, IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD, rkey, raddr,
		  add, 0);
}

static void wrx_set_ud_addr(struct ibv_qp_ex *x, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
	struct shim_wr *w = wr_last(x);

	if (w) {
		w->wr.wr.ud.ah = ah;
		w->wr.wr.ud.remote_qpn = qpn;
		w->wr.wr.ud.remote_qkey = qkey;
	}
}

static void wrx_set_sge(struct ibv_qp_ex *x, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct shim_wr *w = wr_last(x);

	if (w) {
		w->sge[0] = (struct ibv_sge){ .addr = addr, .length = length, .lkey = lkey };
		w->inl_used = false;
		w->wr.num_sge = 1;
	}
}

static void wrx_set_sge_list(struct ibv_qp_ex *x, size_t n, const struct ibv_sge *sg)
{
	struct shim_wr *w = wr_last(x);

	if (!w)
		return;
	if (n > qpx_of(x)->cap.max_send_sge) {		/* as the QP was created */
		qpx_of(x)->wr_err = EINVAL;
		return;
	}
	memcpy(w->sge, sg, n * sizeof(*sg));
	w->inl_used = false;
	w->wr.num_sge = (int)n;
}

/* Inline data: copied now into the WR's own buffer. */
static void wrx_set_inline_list(struct ibv_qp_ex *x, size_t n, const struct ibv_data_buf *b)
{
	struct shim_wr *w = wr_last(x);
	size_t len = 0;

	if (!w)
		return;
	for (size_t i = 0; i < n; i++) {
		if (b[i].length > sizeof(w->inl) - len) {
			qpx_of(x)->wr_err = EINVAL;
			return;
		}
		memcpy(w->inl + len, b[i].addr, b[i].length);
		len += b[i].length;
	}
	w->sge[0] = (struct ibv_sge){ .addr = (uintptr_t)w->inl, .length = (uint32_t)len };
	w->inl_used = true;
	w->wr.num_sge = 1;
	w->wr.send_flags |= IBV_SEND_INLINE;
}

static void wrx_set_inline(struct ibv_qp_ex *x, void *addr, size_t length)
{
	struct ibv_data_buf b = { .addr = addr, .length = length };

	wrx_set_inline_list(x, 1, &b);
}

/* The send operations ibv_create_qp_ex may ask for (the rest: EOPNOTSUPP). */
#define SHIM_SEND_OPS (IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
		       IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | \
		       IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
		       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)

static struct ibv_qp *op_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *a)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp *qp;
	struct shim_qp *q;

	if (!a || !(a->comp_mask & IBV_QP_INIT_ATTR_PD) ||
	    (a->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))) {
		shim_unsupported("ibv_create_qp_ex beyond a PD and send_ops_flags");
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) && (a->send_ops_flags & ~SHIM_SEND_OPS)) {
		shim_unsupported("these send operations (memory windows, invalidation, TSO)");
		errno = EOPNOTSUPP;
		return NULL;
	}
	(void)ctx;
	ia = (struct ibv_qp_init_attr){
		.qp_context = a->qp_context, .send_cq = a->send_cq, .recv_cq = a->recv_cq,
		.srq = a->srq, .cap = a->cap, .qp_type = a->qp_type, .sq_sig_all = a->sq_sig_all,
	};
	qp = create_qp(a->pd, &ia, a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS ?
				   a->send_ops_flags : MLX5_DEFAULT_OPS);
	if (!qp)
		return NULL;
	a->cap = ia.cap;
	q = container_of(qp, struct shim_qp, qp);
	if (a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		struct ibv_qp_ex *x = &q->qpx;

		q->send_ops = a->send_ops_flags;
		x->qp_base = *qp;
		x->wr_start = wrx_start;
		x->wr_complete = wrx_complete;
		x->wr_abort = wrx_abort;
		x->wr_rdma_write = wrx_rdma_write;
		x->wr_rdma_write_imm = wrx_rdma_write_imm;
		x->wr_rdma_read = wrx_rdma_read;
		x->wr_send = wrx_send;
		x->wr_send_imm = wrx_send_imm;
		x->wr_atomic_cmp_swp = wrx_cmp_swp;
		x->wr_atomic_fetch_add = wrx_fetch_add;
		x->wr_set_ud_addr = wrx_set_ud_addr;
		x->wr_set_sge = wrx_set_sge;
		x->wr_set_sge_list = wrx_set_sge_list;
		x->wr_set_inline_data = wrx_set_inline;
		x->wr_set_inline_data_list = wrx_set_inline_list;
		q->ex = true;
	}
	return qp;
}


/* ---- address handles ---------------------------------------------------- */

SHIM_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *a)
{
	struct shim_ah *ah;

	if (!pd || !a) {
		errno = EINVAL;
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	ah->ah.context = pd->context;
	ah->ah.pd = pd;
	ah->dlid = av_dlid(a);
	ah->sl = a->sl;
	return &ah->ah;
}

SHIM_EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
	free(container_of(ah, struct shim_ah, ah));
	return 0;
}

SHIM_EXPORT int ibv_init_ah_from_wc(struct ibv_context *ctx, uint8_t port, struct ibv_wc *wc,
				    struct ibv_grh *grh, struct ibv_ah_attr *a)
{
	(void)ctx;
	(void)grh;
	memset(a, 0, sizeof(*a));
	a->dlid = wc->slid;
	a->sl = wc->sl;
	a->port_num = port;
	return 0;
}

SHIM_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
						 struct ibv_grh *grh, uint8_t port)
{
	struct ibv_ah_attr a;

	ibv_init_ah_from_wc(pd->context, port, wc, grh, &a);
	return ibv_create_ah(pd, &a);
}

/* ---- misc --------------------------------------------------------------- */

/* ---- static rates (IBA 9.2 StaticRate; verbs.h enum ibv_rate) ----------- */

/* Each rate as a multiple of 2.5 Gb/s (0: not one) and in Mb/s of data
 * (the 64b/66b rates are not multiples, as rdma-core's tables have them). */
static const struct { enum ibv_rate r; int mult; int mbps; } rates[] = {
	{ IBV_RATE_2_5_GBPS, 1, 2500 },     { IBV_RATE_5_GBPS, 2, 5000 },
	{ IBV_RATE_10_GBPS, 4, 10000 },     { IBV_RATE_20_GBPS, 8, 20000 },
	{ IBV_RATE_30_GBPS, 12, 30000 },    { IBV_RATE_40_GBPS, 16, 40000 },
	{ IBV_RATE_60_GBPS, 24, 60000 },    { IBV_RATE_80_GBPS, 32, 80000 },
	{ IBV_RATE_120_GBPS, 48, 120000 },  { IBV_RATE_14_GBPS, 0, 14062 },
	{ IBV_RATE_56_GBPS, 0, 56250 },     { IBV_RATE_112_GBPS, 0, 112500 },
	{ IBV_RATE_168_GBPS, 0, 168750 },   { IBV_RATE_25_GBPS, 0, 25781 },
	{ IBV_RATE_100_GBPS, 0, 103125 },   { IBV_RATE_200_GBPS, 0, 206250 },
	{ IBV_RATE_300_GBPS, 0, 309375 },   { IBV_RATE_28_GBPS, 0, 28125 },
	{ IBV_RATE_50_GBPS, 0, 53125 },     { IBV_RATE_400_GBPS, 0, 425000 },
	{ IBV_RATE_600_GBPS, 0, 637500 },   { IBV_RATE_800_GBPS, 0, 850000 },
	{ IBV_RATE_1200_GBPS, 0, 1275000 },
};

SHIM_EXPORT int ibv_rate_to_mult(enum ibv_rate rate);
int ibv_rate_to_mult(enum ibv_rate rate)
{
	for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++)
		if (rates[i].r == rate && rates[i].mult)
			return rates[i].mult;
	return -1;
}

SHIM_EXPORT enum ibv_rate mult_to_ibv_rate(int mult);
enum ibv_rate mult_to_ibv_rate(int mult)
{
	for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++)
		if (rates[i].mult && rates[i].mult == mult)
			return rates[i].r;
	return IBV_RATE_MAX;
}

SHIM_EXPORT int ibv_rate_to_mbps(enum ibv_rate rate);
int ibv_rate_to_mbps(enum ibv_rate rate)
{
	for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++)
		if (rates[i].r == rate)
			return rates[i].mbps;
	return -1;
}

SHIM_EXPORT enum ibv_rate mbps_to_ibv_rate(int mbps);
enum ibv_rate mbps_to_ibv_rate(int mbps)
{
	for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++)
		if (rates[i].mbps == mbps)
			return rates[i].r;
	return IBV_RATE_MAX;
}

/* 0 is the answer that is never wrong: with adaptive routing the model's RC
 * responder places packets that arrive out of order where they belong, so
 * the order of writes to memory is not the order of the payload. */
SHIM_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op,
					   uint32_t flags);
int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	(void)qp;
	(void)op;
	(void)flags;
	return 0;
}

SHIM_EXPORT const char *ibv_wc_status_str(enum ibv_wc_status s)
{
	static const char *const str[] = {
		[IBV_WC_SUCCESS] = "success",
		[IBV_WC_LOC_LEN_ERR] = "local length error",
		[IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
		[IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
		[IBV_WC_LOC_PROT_ERR] = "local protection error",
		[IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
		[IBV_WC_MW_BIND_ERR] = "memory management operation error",
		[IBV_WC_BAD_RESP_ERR] = "bad response error",
		[IBV_WC_LOC_ACCESS_ERR] = "local access error",
		[IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
		[IBV_WC_REM_ACCESS_ERR] = "remote access error",
		[IBV_WC_REM_OP_ERR] = "remote operation error",
		[IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
		[IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
		[IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
		[IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
		[IBV_WC_REM_ABORT_ERR] = "aborted error",
		[IBV_WC_INV_EECN_ERR] = "invalid EE context number",
		[IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
		[IBV_WC_FATAL_ERR] = "fatal error",
		[IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
		[IBV_WC_GENERAL_ERR] = "general error",
		[IBV_WC_TM_ERR] = "TM error",
		[IBV_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
	};

	return (unsigned)s < sizeof(str) / sizeof(str[0]) && str[s] ? str[s] : "unknown";
}

SHIM_EXPORT const char *ibv_node_type_str(enum ibv_node_type t)
{
	switch (t) {
	case IBV_NODE_CA: return "InfiniBand channel adapter";
	case IBV_NODE_SWITCH: return "InfiniBand switch";
	case IBV_NODE_ROUTER: return "InfiniBand router";
	case IBV_NODE_RNIC: return "iWARP NIC";
	default: return "unknown";
	}
}

SHIM_EXPORT const char *ibv_port_state_str(enum ibv_port_state s)
{
	static const char *const str[] = { "PORT_NOP", "PORT_DOWN", "PORT_INIT", "PORT_ARMED",
					   "PORT_ACTIVE", "PORT_ACTIVE_DEFER" };

	return (unsigned)s < 6 ? str[s] : "invalid state";
}

SHIM_EXPORT const char *ibv_event_type_str(enum ibv_event_type e)
{
	(void)e;
	return "unknown";
}

SHIM_EXPORT int ibv_fork_init(void)
{
	return 0;
}

SHIM_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_DISABLED;
}

SHIM_EXPORT int ibv_dontfork_range(void *base, size_t size);
int ibv_dontfork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}

SHIM_EXPORT int ibv_dofork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}

SHIM_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	struct shim_qp *q = qp ? container_of(qp, struct shim_qp, qp) : NULL;

	if (q && q->ex)
		return &q->qpx;
	shim_unsupported("ibv_qp_to_qp_ex on a QP created without send_ops_flags");
	errno = EOPNOTSUPP;
	return NULL;
}

SHIM_EXPORT int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	(void)cq;
	(void)cqe;
	shim_unsupported("ibv_resize_cq");
	return EOPNOTSUPP;
}

/* The SRQ limit (IBV_SRQ_LIMIT) is armed in the model; resizing
 * (IBV_SRQ_MAX_WR) is not supported. */
SHIM_EXPORT int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *a, int mask)
{
	struct shim_srq *s = container_of(srq, struct shim_srq, srq);
	struct shim_req req = { .op = SHIM_OP_MODIFY_SRQ };
	struct shim_rep rep;

	if (!srq || !a || (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)))
		return EINVAL;
	if (mask & IBV_SRQ_MAX_WR) {
		shim_unsupported("ibv_modify_srq with IBV_SRQ_MAX_WR (resizing an SRQ)");
		return EOPNOTSUPP;
	}
	if (!(mask & IBV_SRQ_LIMIT))
		return 0;
	req.u.modify_srq.srq = s->h;
	req.u.modify_srq.mask = IBV_SRQ_LIMIT;
	req.u.modify_srq.limit = a->srq_limit;
	return rpc0(&req, &rep);
}

SHIM_EXPORT int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *a)
{
	struct shim_srq *s = container_of(srq, struct shim_srq, srq);

	struct shim_req req = { .op = SHIM_OP_MODIFY_SRQ, .u.modify_srq.srq = s->h };
	struct shim_rep rep;
	int rc = rpc0(&req, &rep);	/* mask 0: the limit as it is now */

	if (rc)
		return rc;
	memset(a, 0, sizeof(*a));
	a->max_wr = s->max_wr;
	a->max_sge = SHIM_MAX_SGE;
	a->srq_limit = rep.u.srq.limit;
	return 0;
}

SHIM_EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)qp;
	(void)gid;
	(void)lid;
	shim_unsupported("multicast (ibv_attach_mcast)");
	return EOPNOTSUPP;
}

SHIM_EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)qp;
	(void)gid;
	(void)lid;
	return EOPNOTSUPP;
}

SHIM_EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
			     size_t length, int access)
{
	(void)mr;
	(void)flags;
	(void)pd;
	(void)addr;
	(void)length;
	(void)access;
	shim_unsupported("ibv_rereg_mr");
	return EOPNOTSUPP;
}

SHIM_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp;
	(void)ece;
	return EOPNOTSUPP;
}

SHIM_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp;
	(void)ece;
	return EOPNOTSUPP;
}

SHIM_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *ctx, struct ibv_ah_attr *a,
					    uint8_t eth_mac[6], uint16_t *vid);
int ibv_resolve_eth_l2_from_gid(struct ibv_context *ctx, struct ibv_ah_attr *a,
				uint8_t eth_mac[6], uint16_t *vid)
{
	(void)ctx;
	(void)a;
	memset(eth_mac, 0, 6);
	if (vid)
		*vid = 0xffff;
	return 0;
}
