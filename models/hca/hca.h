/* SPDX-License-Identifier: MIT */
/*
 * hca.h - the message-level verbs model of a simulated HCA: protection
 * domains, memory regions, completion queues, shared receive queues and
 * queue pairs (RC, UC, UD), the work requests posted to them and the work
 * completions they produce (IBA vol. 1 ch. 10-11 verbs, ch. 9 transport).
 *
 * This is the API workloads (traces/) and the verbs shim (shim/) drive.
 * Its enumerations take the values of rdma-core's <infiniband/verbs.h>
 * (ibv_wc_status, ibv_wc_opcode, ibv_wr_opcode, ibv_qp_state, ibv_qp_type,
 * access and send flags) so the shim maps them one to one.
 *
 * Everything happens in simulated time: posting a work request schedules
 * the HCA; completions appear in the CQ when the transport says so and the
 * CQ's notify callback (if any) runs at that simulated time. Memory is
 * optional: a region registered with a NULL buffer moves no bytes (timing
 * only); with a buffer, WRITE/READ/SEND copy the bytes and atomics read and
 * modify them, at the simulated time the packets arrive.
 */
#ifndef IBFAB_HCA_H
#define IBFAB_HCA_H

#include <stdbool.h>
#include <stdint.h>

#include "models/core/fab_stats.h"	/* struct fab_flow_paths */
#include "models/core/pkt.h"	/* enum hca_qp_type, net_lid_t */
#include "models/host/host.h"	/* enum hca_mem */
#include "sim/sim.h"

struct hca;
struct fab;
struct port;

/* The HCA of a fabric's CA node, or NULL (the fabric's API, kept with the
 * HCA's: models/fabric/fab.h). */
struct hca *fab_hca(struct fab *f, int node);
struct hca_cq;
struct hca_qp;
struct hca_srq;

/* ibv_qp_state */
enum hca_qp_state {
	HCA_QPS_RESET, HCA_QPS_INIT, HCA_QPS_RTR, HCA_QPS_RTS,
	HCA_QPS_SQD, HCA_QPS_SQE, HCA_QPS_ERR,
};
extern const char *const hca_qp_state_names[];

/* ibv_wr_opcode */
enum hca_wr_opcode {
	HCA_WR_RDMA_WRITE = 0, HCA_WR_RDMA_WRITE_WITH_IMM = 1,
	HCA_WR_SEND = 2, HCA_WR_SEND_WITH_IMM = 3, HCA_WR_RDMA_READ = 4,
	HCA_WR_ATOMIC_CMP_AND_SWP = 5, HCA_WR_ATOMIC_FETCH_AND_ADD = 6,
};

/* ibv_wc_status */
enum hca_wc_status {
	HCA_WC_SUCCESS = 0, HCA_WC_LOC_LEN_ERR = 1, HCA_WC_LOC_QP_OP_ERR = 2,
	HCA_WC_LOC_PROT_ERR = 4, HCA_WC_WR_FLUSH_ERR = 5,
	HCA_WC_BAD_RESP_ERR = 7, HCA_WC_LOC_ACCESS_ERR = 8,
	HCA_WC_REM_INV_REQ_ERR = 9, HCA_WC_REM_ACCESS_ERR = 10,
	HCA_WC_REM_OP_ERR = 11, HCA_WC_RETRY_EXC_ERR = 12,
	HCA_WC_RNR_RETRY_EXC_ERR = 13, HCA_WC_GENERAL_ERR = 21,
};
const char *hca_wc_status_str(enum hca_wc_status s);

/* ibv_wc_opcode */
enum hca_wc_opcode {
	HCA_WC_SEND = 0, HCA_WC_RDMA_WRITE = 1, HCA_WC_RDMA_READ = 2,
	HCA_WC_COMP_SWAP = 3, HCA_WC_FETCH_ADD = 4,
	HCA_WC_RECV = 128, HCA_WC_RECV_RDMA_WITH_IMM = 129,
};

/* ibv_access_flags */
enum {
	HCA_ACCESS_LOCAL_WRITE = 1, HCA_ACCESS_REMOTE_WRITE = 2,
	HCA_ACCESS_REMOTE_READ = 4, HCA_ACCESS_REMOTE_ATOMIC = 8,
};

/* ibv_send_flags */
enum {
	HCA_SEND_FENCE = 1, HCA_SEND_SIGNALED = 2, HCA_SEND_SOLICITED = 4,
	HCA_SEND_INLINE = 8,
	/* not verbs flags: a WR of a list of several posted in one call (mlx5
	 * rings one doorbell, after the last, and fetches their WQEs: no
	 * BlueFlame); LIST_MORE on every one but the last */
	HCA_SEND_LIST = 1u << 30,
	HCA_SEND_LIST_MORE = 1u << 29,
};

struct hca_mr {
	struct hca *hca;
	uint32_t lkey, rkey;
	uint64_t addr, length;	/* the registered range, in the owner's address space */
	uint32_t access;
	enum hca_mem mem;
	void *buf;		/* bytes behind addr (NULL: timing only) */
	bool valid;
};

struct hca_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

struct hca_ah {			/* UD address handle */
	net_lid_t dlid;
	uint8_t sl;
};

/* What every request packet reads comes first, up to remote_addr: 40
 * bytes that share a line with the WQE's own state (struct hca_swqe). */
struct hca_send_wr {
	enum hca_wr_opcode opcode;
	uint32_t send_flags;
	struct hca_sge sg;	/* one gather element (length 0 allowed) */
	uint32_t imm_data;
	uint32_t rkey;
	uint64_t remote_addr;	/* RDMA and atomics */
	uint64_t wr_id;
	uint64_t compare_add;	/* CAS: compare; FAA: add */
	uint64_t swap;
	struct hca_ah ah;	/* UD */
	uint32_t remote_qpn, remote_qkey;
};

struct hca_recv_wr {
	uint64_t wr_id;
	struct hca_sge sg;
};

struct hca_wc {
	uint64_t wr_id;
	enum hca_wc_status status;
	enum hca_wc_opcode opcode;
	uint32_t byte_len;
	uint32_t qp_num;
	uint32_t src_qp;	/* UD receives */
	net_lid_t slid;
	uint32_t imm_data;
	bool with_imm;
	sim_time_t time;	/* simulated time it became visible */
};

struct hca_qp_cap {
	uint32_t max_send_wr, max_recv_wr;
	uint32_t max_inline_data;
};

struct hca_qp_init_attr {
	enum hca_qp_type qp_type;
	struct hca_cq *send_cq, *recv_cq;
	struct hca_srq *srq;	/* NULL: the QP has its own receive queue */
	struct hca_qp_cap cap;
	bool sq_sig_all;
};

/* Attributes of hca_modify_qp() (ibv_qp_attr, the fields timing depends on). */
struct hca_qp_attr {
	enum hca_qp_state qp_state;
	uint32_t path_mtu;	/* bytes: 256 .. 4096 */
	net_lid_t dlid;		/* RC/UC: the peer's LID */
	uint8_t sl;
	uint32_t dest_qp_num;
	uint32_t rq_psn, sq_psn;
	uint8_t timeout;	/* local ACK timeout 4.096 us x 2^timeout; 0 = infinite */
	uint8_t retry_cnt;	/* 0..7 */
	uint8_t rnr_retry;	/* 0..7; 7 = infinite */
	uint8_t min_rnr_timer;	/* IBA encoding 0..31 (Table 45) */
	uint8_t max_rd_atomic;	/* outstanding READ/atomic requests as requester */
	uint8_t max_dest_rd_atomic;	/* ... accepted as responder */
	uint32_t qkey;		/* UD */
	uint32_t access;	/* remote access enables (HCA_ACCESS_REMOTE_*) */
};

enum {
	HCA_QP_STATE = 1 << 0, HCA_QP_PATH_MTU = 1 << 1, HCA_QP_AV = 1 << 2,
	HCA_QP_DEST_QPN = 1 << 3, HCA_QP_RQ_PSN = 1 << 4, HCA_QP_SQ_PSN = 1 << 5,
	HCA_QP_TIMEOUT = 1 << 6, HCA_QP_RETRY_CNT = 1 << 7,
	HCA_QP_RNR_RETRY = 1 << 8, HCA_QP_MIN_RNR_TIMER = 1 << 9,
	HCA_QP_MAX_QP_RD_ATOMIC = 1 << 10, HCA_QP_MAX_DEST_RD_ATOMIC = 1 << 11,
	HCA_QP_QKEY = 1 << 12, HCA_QP_ACCESS_FLAGS = 1 << 13,
};

/* Completion notification: runs at the simulated time a CQE is added. */
typedef void (*hca_cq_notify_fn)(struct hca_cq *cq, void *ctx);

/*
 * Who writes received WRITE/SEND payload into memory (NULL, the default:
 * memcpy when the packet arrives). The verbs shim (shim/serve.c) defers the
 * copy to `vis`, the simulated time the bytes become visible to the CPU, so
 * a program spinning on its memory sees them at that time, not earlier.
 * HCA_PLACE_QUIET: no completion at this HCA tells the program of these
 * bytes (an RDMA WRITE without immediate), so only a program looking at
 * its memory learns of them; a SEND's or WRITE_WITH_IMM's bytes come with
 * a CQE. HCA_PLACE_LAST: they are the message's last packet's.
 */
enum hca_place_flags {
	HCA_PLACE_QUIET = 1,	/* no completion announces these bytes */
	HCA_PLACE_LAST = 2,	/* the message's last packet's */
};
typedef void (*hca_place_fn)(struct hca *h, void *dst, const void *src, uint32_t len,
			     sim_time_t vis, unsigned flags, void *ctx);
void hca_set_place_hook(struct hca *h, hca_place_fn fn, void *ctx);

/*
 * Affiliated asynchronous events (IBA vol. 1 11.6.3; ibv_get_async_event(3)):
 * an SRQ's receives fell below its armed limit (obj: the hca_srq; the limit
 * is then disarmed), a QP attached to an SRQ went to Error and will take no
 * more of its receives (obj: the hca_qp), the first packet reached a
 * connected QP in RTR (Communication Established; obj: the hca_qp, once a
 * QP), an RC responder went to Error after a remote access NAK (Local
 * Access Violation Work Queue Error) or an invalid request NAK (Invalid
 * Request Local Work Queue Error; obj: the hca_qp); and the unaffiliated port
 * events (11.6.3.2): the port's link went down or came back up (obj NULL;
 * hca_port_changed, from a fault during the run). Raised at the simulated
 * instant they happen, to the hook (NULL, the default: dropped).
 */
enum hca_async_event {
	HCA_EV_SRQ_LIMIT_REACHED, HCA_EV_QP_LAST_WQE_REACHED, HCA_EV_COMM_EST, HCA_EV_PORT_ERR,
	HCA_EV_PORT_ACTIVE, HCA_EV_QP_ACCESS_ERR, HCA_EV_QP_REQ_ERR
};
typedef void (*hca_async_fn)(struct hca *h, enum hca_async_event ev, void *obj, void *ctx);
void hca_set_async_hook(struct hca *h, hca_async_fn fn, void *ctx);
/* The HCA's link went down (up = false) or came back up: its port event. */
void hca_port_changed(struct hca *h, bool up);
/* Is the HCA's link up (its port active)? */
bool hca_port_active(const struct hca *h);

/* Objects (return NULL / negative errno on misuse, never crash). */
struct hca_mr *hca_reg_mr(struct hca *h, void *buf, uint64_t addr, uint64_t length,
			  uint32_t access, enum hca_mem mem);
int hca_dereg_mr(struct hca_mr *mr);
struct hca_cq *hca_create_cq(struct hca *h, uint32_t cqe, hca_cq_notify_fn fn, void *ctx);
void hca_destroy_cq(struct hca_cq *cq);
/* Change (or clear, fn = NULL) a CQ's notification callback. */
void hca_cq_set_notify(struct hca_cq *cq, hca_cq_notify_fn fn, void *ctx);
/* Up to n completions, oldest first; returns how many (0 if none), or
 * -EOVERFLOW once if completions were lost to a full CQ. */
int hca_poll_cq(struct hca_cq *cq, int n, struct hca_wc *wc);
struct hca_srq *hca_create_srq(struct hca *h, uint32_t max_wr);
int hca_post_srq_recv(struct hca_srq *srq, const struct hca_recv_wr *wr);
/* Arm the SRQ limit (ibv_modify_srq's srq_limit): when a receive taken
 * leaves fewer than `limit` posted, HCA_EV_SRQ_LIMIT_REACHED, and the limit
 * is 0 again. 0 disarms. -EINVAL above the SRQ's size. */
int hca_srq_set_limit(struct hca_srq *srq, uint32_t limit);
uint32_t hca_srq_limit(const struct hca_srq *srq);
/* The most work requests one queue (send, receive, shared receive) takes:
 * the model's own bound, above any device's max_qp_wr (ConnectX reports
 * 32,768), so that a queue's indexes stay far from wrapping. */
#define HCA_MAX_QP_WR (1u << 20)
struct hca_qp *hca_create_qp(struct hca *h, const struct hca_qp_init_attr *a);
/*
 * A QP number taken now, the QP made later at it (hca_create_qp_at): what
 * a QP's number decides (the flow hash of ECMP and flowlets, the order of
 * the HCA's QPs) stays as if it had been made now. 0 when out of memory.
 */
uint32_t hca_reserve_qpn(struct hca *h);
struct hca_qp *hca_create_qp_at(struct hca *h, const struct hca_qp_init_attr *a, uint32_t qpn);
/* Nothing outstanding or owed: no work request, no unacknowledged or
 * owed packet, no armed timer, no receive posted, no congestion
 * notification owed (hca_cc_ops.qp_idle); destroying it changes nothing
 * the fabric will do. Its counters go on counting in the HCA's sums. */
bool hca_qp_idle(const struct hca_qp *qp);
int hca_destroy_qp(struct hca_qp *qp);
uint32_t hca_qp_num(const struct hca_qp *qp);
enum hca_qp_state hca_qp_state(const struct hca_qp *qp);
/* The work requests its send queue and its own receive queue hold now
 * (posted, not yet completed): what a post would find. */
void hca_qp_used(const struct hca_qp *qp, uint32_t *sq, uint32_t *rq);
/* IBA 10.3.1 state transitions; -EINVAL for an illegal one or missing attrs. */
int hca_modify_qp(struct hca_qp *qp, const struct hca_qp_attr *attr, uint32_t mask);
/* 0, or -errno for an immediate error (IBA 11.4.1.1: QP state, WR too big
 * for UD, bad opcode for the QP type, queue full). */
int hca_post_send(struct hca_qp *qp, const struct hca_send_wr *wr);
int hca_post_recv(struct hca_qp *qp, const struct hca_recv_wr *wr);

/* The HCA's base LID and the simulated time (for callers outside an event). */
net_lid_t hca_lid(const struct hca *h);
/* The host behind the HCA (models/host): a driver that stages GPU data
 * through host memory charges its copies there. */
struct host *hca_host(struct hca *h);
/* Do its RC QPs carry atomics (not over a TCP fabric's sockets)? */
bool hca_rc_atomics(const struct hca *h);
sim_time_t hca_now(const struct hca *h);

/* Per-QP transport counters (for reports and tests). */
struct hca_qp_stats {
	uint64_t pkts_sent, pkts_retransmitted, acks_sent, naks_sent;
	uint64_t rnr_naks_sent, rnr_naks_rcvd, timeouts, seq_naks_rcvd;
	uint64_t dup_pkts_rcvd, pkts_dropped_uc;
	uint64_t ooo_held;		/* packets that arrived ahead of a gap and were held (hca.ooo) */
	uint64_t recovered_ps;		/* when an ACK last made progress after a retry (0: never) */
	uint32_t max_rd_outstanding;	/* high-water mark as requester */
	uint32_t max_rd_responding;	/* high-water mark as responder */
	/* the routes (pkt.route >> 8) of the data packets it received: one
	 * bit each of 256 */
	uint64_t path_bits[4];
	struct fab_flow_paths paths;	/* a sum of QPs (hca.gone): their path_bits told */
};
/* Packet p, carrying data, reached QP stats s. */
static inline void hca_qp_path(struct hca_qp_stats *s, const struct pkt *p)
{
	s->path_bits[p->route >> 14] |= 1ULL << (p->route >> 8 & 63);
}
/* acc += what s says of its flows: its own paths (path_bits), if it
 * received data, and the flows summed into it. */
void hca_flow_paths_add(struct fab_flow_paths *acc, const struct hca_qp_stats *s);
/* The QP's counters, brought up to date. */
const struct hca_qp_stats *hca_qp_stats(struct hca_qp *qp);
/* The QP packet p, arriving at CA port pt, is for: what the look-ahead asks
 * for (port_prefetch), never read through. */
const struct hca_qp *hca_rx_guess(const struct port *pt, const struct pkt *p);
/* sum += s: counts added, high-water marks and the latest recovery kept. */
void hca_qp_stats_add(struct hca_qp_stats *sum, const struct hca_qp_stats *s);

#endif
