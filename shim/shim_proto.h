/* SPDX-License-Identifier: MIT */
/*
 * shim_proto.h - the wire protocol between the verbs shim (libibverbs.so.1,
 * linked into an unmodified RDMA program) and the fabric daemon (ibfab
 * serve). docs/shim.md describes the design; this file is the contract.
 *
 * Transport: one SOCK_SEQPACKET Unix socket per process, so every message
 * keeps its boundaries and a short or oversized message is detected, not
 * resynchronised. A message is a fixed struct shim_req (op + union of
 * bodies) optionally followed by inline payload bytes and by the sender's
 * CPU time (shim_cpu_trailer); file descriptors
 * (memory segments, the completion channel's eventfd, a blocking socket)
 * travel with it as SCM_RIGHTS. Every request gets exactly one reply, in
 * order, except SHIM_OP_IO_BEGIN and SHIM_OP_BUSY, notifications, and a
 * post or CQ arm sent with SHIM_OP_QUIET: the shim has already checked
 * everything that could refuse it, so it goes on without waiting for an
 * answer (a doorbell, not a system call), and the daemon takes it in
 * order before anything the program sends after it.
 * A "wait" request (an empty poll, get_cq_event, sleep, a clock spin) is
 * answered only when the daemon's simulated clock has moved on: that is
 * how the daemon knows the program is waiting and time may advance.
 *
 * Only fixed-width types, no pointers: the daemon validates every field
 * and never trusts a handle (an index into the sender's own table).
 */
#ifndef IBFAB_SHIM_PROTO_H
#define IBFAB_SHIM_PROTO_H

#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#define SHIM_MAGIC	0x31466249u	/* "IbF1" */
#define SHIM_VERSION	13		/* 2: IO_END answered, CPU time trailer;
					 * 3: segments sealed (F_SEAL_SHRINK);
					 * 4: post lists flagged, hello says atomics;
					 * 5: gather/scatter lists;
					 * 6: the connection manager (CM_*),
					 * the interval timer (ALARM), IO
					 * waits with a deadline, a connection
					 * per thread (HELLO join);
					 * 7: IO waits say if the fabric may
					 * end them, BUSY;
					 * 8: SEG_ADD names the segments it
					 * takes the place of; asynchronous
					 * events (ASYNC_FD, GET_ASYNC), the
					 * SRQ limit (MODIFY_SRQ);
					 * 9: IO waits say if a process
					 * outside may end them;
					 * 10: posts and CQ arms without a
					 * reply (SHIM_OP_QUIET); a post's
					 * reply says what its queues hold;
					 * a CQ event brings its completions;
					 * 11: the port's state (QUERY_PORT),
					 * a thread's sched_yield (YIELD), a
					 * QP's access flags;
					 * 12: a program on its way (PENDING);
					 * 13: RUNS, the clock page's alive
					 * stamps (hello's alive_slot) */
#define SHIM_MAX_WC	16		/* completions per poll reply */
#define SHIM_IO_TIMEOUT	0xffffffffu	/* shim_rep.count: an IO wait's deadline passed */
/* shim_req.u.io.outside: what may make an IO wait's descriptors ready */
#define SHIM_IO_OUTSIDE	 1u	/* a process the daemon does not run, or not yet:
				 * the timeout passes in real time as well */
#define SHIM_IO_OUTSIDER 2u	/* ... and not a simulated host's program, as far
				 * as the shim can tell: the daemon waits for its
				 * answer a while (OUTSIDE_HOLD_S) */
#define SHIM_MAX_INLINE	256		/* inline bytes carried in one post */
/* In a post's send_flags beside ibv's own (which stay below bit 8): a WR
 * of an ibv_post_send list of several (mlx5 rings one doorbell after the
 * last and uses no BlueFlame), and one that is not the list's last. */
#define SHIM_SEND_LIST		(1u << 30)
#define SHIM_SEND_LIST_MORE	(1u << 29)
/*
 * Gather/scatter lists: a post whose WR has several SGEs carries them all
 * after the request (inline_len = num_sge x sizeof(struct shim_wire_sge);
 * on POST_SEND flagged SHIM_SEND_SGL, since inline data uses the same
 * tail). 30 per WR, as ConnectX HCAs report max_sge; READs take one
 * (max_sge_rd).
 */
#define SHIM_SEND_SGL		(1u << 28)
#define SHIM_MAX_SGE	30
#define SHIM_NAME_LEN	64
#define SHIM_UD_GRH	40		/* UD receive buffers start with a GRH slot */

/*
 * Each simulated host has an IPv4 address in 127.0.0.0/8, so that nothing
 * a program sends to it leaves the machine: the k-th host of the topology
 * (0-based) is 127.1.0.0 + k + 1, h0 = 127.1.0.1. rdma_cm resolves these
 * addresses to the hosts' LIDs; any other 127.x address is the program's
 * own host, as a loopback address is.
 */
#define SHIM_ADDR_BASE	0x7f010001u
#define SHIM_ADDR_MAX_HOSTS (0x00ffffffu - 0x00010001u)
static inline uint32_t shim_host_addr(uint32_t k)
{
	return SHIM_ADDR_BASE + k;
}
/* The host index of an address, or -1 if it names none of the plan. */
static inline int64_t shim_addr_host(uint32_t a)
{
	return a >= SHIM_ADDR_BASE && a - SHIM_ADDR_BASE < SHIM_ADDR_MAX_HOSTS ?
	       (int64_t)(a - SHIM_ADDR_BASE) : -1;
}

/* Beside the socket, the daemon writes the hosts' names and addresses in
 * /etc/hosts form: "<socket>.hosts". */
#define SHIM_HOSTS_SUFFIX ".hosts"

/* Private data the CM messages carry after rdma_cm's header (IBA 12.6:
 * REQ 92, REP 196, REJ 148, DREQ 220, SIDR_REQ 216 bytes; the rdma_cm
 * header takes 36 of a REQ's and a SIDR_REQ's). */
#define SHIM_CM_PDATA	196
#define SHIM_CM_PDATA_REQ	56
#define SHIM_CM_PDATA_REP	196
#define SHIM_CM_PDATA_REJ	148
#define SHIM_CM_PDATA_SIDR_REQ	180
#define SHIM_CM_PDATA_SIDR_REP	136

/* Addresses on the wire: IPv4, host byte order. */
struct shim_cm_addr {
	uint32_t ip;
	uint16_t port, pad;
};

/* Connection parameters (struct rdma_conn_param without its pointer). */
struct shim_cm_param {
	uint32_t qpn, psn, qkey;
	uint8_t responder_resources, initiator_depth, flow_control, retry_count;
	uint8_t rnr_retry_count, srq, qp_type, pad;
};

/* A CM event as the channel delivers it (struct rdma_cm_event's content). */
struct shim_cm_event {
	uint32_t event;		/* enum rdma_cm_event_type */
	int32_t status;
	uint32_t id;		/* handle of the id it concerns (a new one for CONNECT_REQUEST) */
	int32_t listen_id;	/* CONNECT_REQUEST: the listening id, else -1 */
	struct shim_cm_addr src, dst;	/* the id's addresses (new ids, ADDR_RESOLVED) */
	struct shim_cm_param param;	/* the peer's */
	uint16_t dlid;		/* the peer's LID */
	uint8_t sl, pdata_len;
	uint8_t pdata[SHIM_CM_PDATA];
};

/* In shim_req.op: no reply (POST_SEND, POST_RECV, REQ_NOTIFY only). */
#define SHIM_OP_QUIET	0x100u

enum shim_op {
	SHIM_OP_HELLO = 1,
	SHIM_OP_SEG_ADD,	/* fd: a memfd mapped over the program's pages; tail:
				 * the handles of segments whose pages it now holds */
	SHIM_OP_REG_MR,
	SHIM_OP_DEREG_MR,
	SHIM_OP_CREATE_CQ,
	SHIM_OP_DESTROY_CQ,
	SHIM_OP_REQ_NOTIFY,
	SHIM_OP_POLL_CQ,	/* may wait */
	SHIM_OP_CREATE_CHANNEL,	/* fd: the channel's eventfd */
	SHIM_OP_DESTROY_CHANNEL,
	SHIM_OP_GET_CQ_EVENT,	/* waits */
	SHIM_OP_CREATE_SRQ,
	SHIM_OP_DESTROY_SRQ,
	SHIM_OP_POST_SRQ_RECV,
	SHIM_OP_CREATE_QP,
	SHIM_OP_MODIFY_QP,
	SHIM_OP_DESTROY_QP,
	SHIM_OP_POST_SEND,
	SHIM_OP_POST_RECV,
	SHIM_OP_SLEEP,		/* waits */
	SHIM_OP_CLOCK_WAIT,	/* waits: the program spins on the clock */
	SHIM_OP_IO_BEGIN,	/* notification, fd: about to block reading it (or
				 * polling: an epoll set), until a deadline or
				 * not; a passed deadline is said by a message
				 * whose count is SHIM_IO_TIMEOUT */
	SHIM_OP_IO_END,		/* it is readable: answered before the program reads */
	/* the connection manager (librdmacm; shim/serve_cm.c) */
	SHIM_OP_CM_CREATE_CHANNEL,	/* fd: the channel's eventfd */
	SHIM_OP_CM_DESTROY_CHANNEL,
	SHIM_OP_CM_CREATE_ID,
	SHIM_OP_CM_DESTROY_ID,
	SHIM_OP_CM_BIND,
	SHIM_OP_CM_RESOLVE_ADDR,
	SHIM_OP_CM_RESOLVE_ROUTE,
	SHIM_OP_CM_LISTEN,
	SHIM_OP_CM_CONNECT,	/* tail: private data */
	SHIM_OP_CM_ACCEPT,	/* tail: private data */
	SHIM_OP_CM_REJECT,	/* tail: private data */
	SHIM_OP_CM_ESTABLISH,	/* the active side's QP is ready: RTU */
	SHIM_OP_CM_DISCONNECT,
	SHIM_OP_CM_GET_EVENT,	/* waits, unless nonblocking */
	SHIM_OP_CM_MIGRATE,	/* an id to another channel */
	SHIM_OP_ALARM,		/* the process's ITIMER_REAL, in simulated time */
	SHIM_OP_BUSY,		/* notification: the shim works for the program
				 * (copying pages to share them) until its
				 * next message: it runs, it does not spin */
	SHIM_OP_ASYNC_FD,	/* fd: the context's async eventfd, one count per event */
	SHIM_OP_GET_ASYNC,	/* the oldest asynchronous event (EAGAIN: none) */
	SHIM_OP_MODIFY_SRQ,	/* arm (or with mask 0 read) an SRQ's limit */
	SHIM_OP_QUERY_PORT,	/* the port's state now (asked where faults are scheduled) */
	SHIM_OP_YIELD,		/* sched_yield of a process whose threads take turns */
	SHIM_OP_PENDING,	/* the first message of a connection (as HELLO's
				 * fields) from a simulated host's program that
				 * will attach: it counts as running until it
				 * does or ends, but for the waits it reports
				 * (IO_BEGIN/IO_END) */
	SHIM_OP_RUNS,		/* the program reads a clock that moved while it
				 * ran (the daemon took it for spinning or
				 * asleep): it runs, and the clock stands
				 * still from the answer on */
	SHIM_OP_MAX
};

/* GET_ASYNC's event types */
enum shim_async {
	SHIM_ASYNC_SRQ_LIMIT,	/* an SRQ's limit reached (handle: the SRQ) */
	SHIM_ASYNC_LAST_WQE,	/* a QP on an SRQ in Error (handle: the QP) */
	SHIM_ASYNC_CQ_ERR,	/* a CQ overrun (handle: the CQ) */
	SHIM_ASYNC_COMM_EST,	/* a packet reached a QP in RTR (handle: the QP) */
	SHIM_ASYNC_PORT_ERR,	/* the port's link went down (handle: the port, 1) */
	SHIM_ASYNC_PORT_ACTIVE,	/* it came back up */
	SHIM_ASYNC_QP_ACCESS_ERR,	/* an RC responder's remote access NAK: the QP in Error */
	SHIM_ASYNC_QP_REQ_ERR,	/* ... its invalid request NAK */
};

struct shim_wire_sge {
	uint64_t addr;
	uint32_t length, lkey;
};

/* The most bytes a request carries after itself: inline data or an SGE list. */
#define SHIM_MAX_TAIL	(SHIM_MAX_SGE * sizeof(struct shim_wire_sge) > SHIM_MAX_INLINE ? \
			 SHIM_MAX_SGE * sizeof(struct shim_wire_sge) : SHIM_MAX_INLINE)

struct shim_wire_wc {
	uint64_t wr_id;
	uint32_t status, opcode, byte_len, qp_num, src_qp, imm;
	uint16_t slid;
	uint8_t with_imm, pad;
};

struct shim_qp_attr {
	uint32_t mask;		/* HCA_QP_* bits */
	uint32_t qp_state, path_mtu, dest_qp_num, rq_psn, sq_psn, qkey;
	uint16_t dlid;
	uint8_t sl, timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t max_rd_atomic, max_dest_rd_atomic, pad[3];
	uint32_t access;	/* qp_access_flags (HCA_QP_ACCESS_FLAGS) */
};

struct shim_req {
	uint32_t op;
	uint32_t inline_len;	/* bytes after the struct: inline data or an SGE list */
	union {
		struct {
			uint32_t magic, version, pid;
			char host[SHIM_NAME_LEN];	/* "" = next host in turn */
			uint32_t tid;		/* a thread's connection: the thread */
			uint64_t join;		/* ... and the token of its process */
		} hello;
		struct { uint64_t base, length; } seg;
		struct { uint32_t seg; uint32_t access; uint64_t addr, length, offset; } reg_mr;
		struct { uint32_t handle; } obj;	/* destroy/dereg/req_notify... */
		struct { uint32_t cqe; int32_t channel; } create_cq;
		struct { uint32_t cq; uint32_t solicited_only; } notify;
		struct { uint32_t cq; uint32_t n; } poll;
		struct { uint32_t max_wr; } create_srq;
		struct { uint32_t srq, mask, limit; } modify_srq;	/* mask: IBV_SRQ_LIMIT or 0 */
		struct {
			uint32_t type, send_cq, recv_cq;
			int32_t srq;
			uint32_t max_send_wr, max_recv_wr, max_inline;
			uint32_t sq_sig_all;
			uint32_t max_send_sge, max_recv_sge;
		} create_qp;
		struct { uint32_t qp; struct shim_qp_attr attr; } modify_qp;
		struct {
			uint32_t qp, opcode, send_flags, imm;
			uint64_t wr_id;
			struct shim_wire_sge sg;
			uint32_t num_sge, rkey;
			uint64_t remote_addr, compare_add, swap;
			uint16_t dlid;
			uint8_t sl, pad;
			uint32_t remote_qpn, remote_qkey;
		} send;
		struct { uint32_t qp; uint32_t num_sge; uint64_t wr_id; struct shim_wire_sge sg; } recv;
		struct { uint64_t ps; } sleep;
		struct { uint64_t seen; } clock;
		struct { uint64_t at, every; } alarm;	/* ps; at 0: disarmed */
		struct {
			uint64_t deadline;	/* IO_BEGIN: ps, 0 none */
			uint32_t fabric;	/* a fabric channel is among the fds */
			uint32_t outside;	/* SHIM_IO_OUTSIDE bits */
		} io;
		struct { uint32_t channel, ps, qp_type; } cm_id;
		struct {
			uint32_t id;
			struct shim_cm_addr src, dst;	/* bind: src only */
			uint32_t backlog;		/* listen */
			struct shim_cm_param param;	/* connect, accept: ours */
			int32_t reason;			/* reject */
		} cm;
		struct { uint32_t channel, nonblock; } cm_get;
		struct { uint32_t id, channel; } cm_migrate;
	} u;
};

/* After a request and its inline bytes, the shim sends the CPU time its
 * process had used at that moment (ns): the daemon tells a program spinning
 * on its memory from one the host has paused by the CPU time it uses after
 * its last message. Optional: without it the daemon reads the time itself,
 * less exactly. */
typedef uint64_t shim_cpu_trailer;

struct shim_rep {
	int32_t status;		/* 0 or a positive errno */
	uint32_t count;		/* POLL_CQ: number of wc[] */
	union {
		struct {
			uint32_t host_index, nhosts;	/* host_index: its node */
			uint32_t addr;	/* its IPv4 address (shim_host_addr) */
			uint16_t lid, sm_lid;
			uint8_t lanes, speed, mtu_code, link_layer;
			uint8_t atomics;	/* RC QPs carry atomics (not on fabric=tcp) */
			uint8_t faults;		/* faults are scheduled: ask QUERY_PORT */
			uint64_t guid;
			uint32_t max_mtu_code;
			uint32_t alive_slot;	/* its stamp on the clock page, or SHIM_ALIVE_NONE */
			char host[SHIM_NAME_LEN];
			char fabric[16];
			uint64_t token;	/* what the process's other threads quote */
		} hello;
		struct { uint32_t handle, lkey, rkey; } obj;
		struct { uint32_t handle, qpn, max_send_wr, max_recv_wr, max_inline; } qp;
		struct shim_wire_wc wc[SHIM_MAX_WC];
		/* GET_CQ_EVENT: the CQ, and (count of) its completions visible
		 * at that instant, taken as a poll would take them: the poll a
		 * program makes after an event finds them in the shim */
		struct {
			uint32_t cq, pad;
			struct shim_wire_wc wc[SHIM_MAX_WC - 1];
		} event;
		struct { uint32_t type, handle; } async;	/* enum ibv_event_type, its object */
		struct { uint32_t limit; } srq;			/* MODIFY_SRQ: the limit now */
		struct { uint32_t active; } port;		/* QUERY_PORT: 1 active, 0 down */
		/* POST_SEND, POST_RECV: the work requests the QP's send and
		 * receive queues hold after it (the shim's bound for quiet posts) */
		struct { uint32_t sq_used, rq_used; } post;
		struct shim_cm_event cm;	/* CM_GET_EVENT */
		struct {
			struct shim_cm_addr src, dst;	/* bind, resolve_addr */
			uint16_t dlid;			/* resolve: the destination's LID */
			uint8_t sl, pad;
			uint32_t handle;		/* create_id, create_channel */
		} cm_addr;
	} u;
};

/* Alive stamps on the clock page: as many as fill its 4,096 bytes. */
#define SHIM_ALIVE_SLOTS 509
#define SHIM_ALIVE_NONE	0xffffffffu	/* hello's alive_slot: none free */

/* The clock page the daemon shares read-only with every process. */
struct shim_clock {
	volatile uint64_t now_ps;	/* the simulated time */
	volatile uint64_t epoch_s;	/* what gettimeofday shows at now_ps = 0 */
	volatile uint64_t seq;		/* bumped at every advance */
	/* per attached process (hello's alive_slot): the simulated time
	 * from which the daemon counts it as running (its last message, its
	 * wake-up, bytes landing while it spun). While now_ps equals it, the
	 * clock has not moved since; if now_ps is later, the daemon took the
	 * process for waiting (spinning, asleep) and ran the clock on. */
	volatile uint64_t alive_ps[SHIM_ALIVE_SLOTS];
};
_Static_assert(sizeof(struct shim_clock) <= 4096, "the clock page is one page");

/* Room for the one file descriptor a message may carry (SCM_RIGHTS). */
union shim_fd_cmsg {
	char buf[CMSG_SPACE(sizeof(int))];
	struct cmsghdr align;
};

/* Attach fd (when >= 0) to m, its control data in u: the daemon and the
 * client pass memfds and sockets to each other this way. */
static inline void shim_msg_attach_fd(struct msghdr *m, union shim_fd_cmsg *u, int fd)
{
	struct cmsghdr *cm;

	if (fd < 0)
		return;
	memset(u, 0, sizeof(*u));
	m->msg_control = u->buf;
	m->msg_controllen = sizeof(u->buf);
	cm = CMSG_FIRSTHDR(m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
}

#endif
