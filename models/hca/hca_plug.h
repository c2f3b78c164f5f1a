/* SPDX-License-Identifier: MIT */
/*
 * hca_plug.h - the HCA as the modules plugged into it see it (as a
 * provider sees rdma-core through its driver.h): its state (the HCA, QPs,
 * WQEs, CQs, SRQs), the tables of a transport (qp_ib.c, models/tcp) and
 * of congestion control (models/cc), and the services they call. The builder
 * reads it too (the traffic's QPs, the totals). Not a public API: see
 * hca.h; what only the HCA's own files share is hca_int.h.
 */
#ifndef IBFAB_HCA_PLUG_H
#define IBFAB_HCA_PLUG_H

#include "models/core/fab_core.h"
#include "models/eth/eth.h"
#include "models/hca/hca.h"
#include "models/host/host.h"
#include "models/ib/ib_pkt.h"
#include "models/port/port.h"

#define HCA_PSN_MASK 0xffffffu

/* Signed distance a - b between 24-bit PSNs (IBA 9.7.1: the window is half). */
static inline int32_t psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

static inline uint32_t psn_add(uint32_t a, uint32_t n)
{
	return (a + n) & HCA_PSN_MASK;
}

struct hca_cq {
	struct hca *hca;
	uint32_t slot;		/* in hca->objs */
	uint32_t cap;		/* its depth: a CQE past it is an overrun */
	struct hca_wc *ring;	/* alloc entries, doubled as the CQ fills up to cap */
	uint32_t alloc;
	uint32_t head, n;
	bool overflow;
	hca_cq_notify_fn fn;
	void *ctx;
};

struct hca_srq {
	struct hca *hca;
	uint32_t slot;		/* in hca->objs */
	uint32_t cap, head, n;
	uint32_t limit;		/* armed SRQ limit (0: none) */
	struct hca_recv_wr *ring;
};

enum swqe_state { SWQE_QUEUED, SWQE_SENT, SWQE_DONE };

/*
 * The payload DMA of a message being sent (a WQE's data, or a READ
 * response's): booked over the host's PCIe pipe a chunk of hca.dma_window
 * packets at a time, bytes [lo, hi) arriving in the HCA by `done`.
 */
struct hca_dma {
	uint64_t lo, hi;	/* the chunk being sent */
	sim_time_t done;
	uint64_t nlo, nhi;	/* the next chunk, booked while half of this one is left */
	sim_time_t ndone;
};

/*
 * A send work request inside the QP, with its transport state. On a large
 * fabric, where the WQE is out of cache at every packet, a packet reads
 * one line of it: line 0 holds the WQE's own state that a packet reads
 * (ready, message, state, first PSN) and the work request's first 40
 * bytes (opcode, flags, gather element, immediate, remote address and
 * key: hca.h orders them so). The rest of the work request (the wr_id
 * for the completion, atomics' operands, UD's address) follows, then the
 * host model's DMA booking and READ state. With the work request first,
 * a packet would read two lines. The queue holds WQEs
 * on line boundaries (3 KiB for the first 16).
 */
struct hca_swqe {
	sim_time_t ready;	/* doorbell + WQE fetch + the HCA's pipeline done: may start
				 * (its payload read may start hca.latency_ns before) */
	int32_t msg;		/* fab message it carries (traffic), or -1 */
	enum swqe_state state : 8;
	bool started;		/* PSNs assigned */
	/* `mr_bytes`: the local buffer's MR (mr, found once at the post;
	 * NULL: inline or empty) has bytes behind it, so a run of timing
	 * only (traffic, traces) never reads the MR. The MR's slot outlives
	 * deregistration, so swqe_buf() need only look at `valid`. */
	bool mr_bytes;
	enum hca_mem mem : 8;	/* where the local buffer lives */
	uint32_t first_psn;	/* PSN of its first packet (set when first sent) */
	uint32_t npsn;		/* PSNs it takes: packets, or a READ's response packets */
	struct hca_send_wr wr;
	/* line 1 on */
	uint32_t npkts;		/* request packets it sends */
	struct hca_mr *mr;
	struct hca_dma dma;	/* its payload on the way from memory */
	uint32_t rd_rcvd;	/* READ: response bytes received */
	sim_time_t rd_visible;	/* READ/atomic: the last byte received lands in memory */
	sim_time_t xport_done;	/* another transport (TCP): when its completion is due (0 = not yet known) */
} __attribute__((aligned(64)));

_Static_assert(offsetof(struct hca_swqe, wr) + offsetof(struct hca_send_wr, remote_addr) +
	       sizeof(uint64_t) == 64 && sizeof(struct hca_swqe) == 192,
	       "hca_swqe's lines as its comment says");

/* A response the responder owes the requester, sent in order. */
enum resp_kind { RESP_ACK, RESP_READ, RESP_ATOMIC };

struct hca_resp {
	enum resp_kind kind;
	uint8_t aeth;		/* ACK or NAK syndrome */
	uint32_t psn;		/* ACK: the PSN acknowledged; READ: next response PSN */
	uint32_t msn;
	/* READ */
	struct hca_mr *mr;
	uint64_t va;
	uint32_t len, off;	/* bytes in all, bytes already sent */
	bool first_sent;
	struct hca_dma dma;
	/* ATOMIC */
	uint64_t orig;
	uint32_t msg;		/* fab message it answers (traffic), or UINT32_MAX */
	sim_time_t go;		/* READ/atomic: when it was executed; hca.latency_ns after it, or
				 * after its data is in, the response may leave (the send pipeline) */
};

/*
 * A queue pair. The fields are grouped by who touches them per packet, so
 * that on a large fabric (where every packet-hop finds the QP out of cache)
 * a packet costs few cache lines: line 0 what both sides read (and the
 * round's next QP, which every packet taken reads), line 1 the requester's
 * packet, line 2 the responder's packet, line 3 the responder's message
 * and the requester's timers, then the scheduling ring, the counters, and
 * what only set-up, errors and reports read. hca_create_qp allocates it on
 * a 64-byte boundary for this; the assertions below hold the lines to it
 * (without them a requester's packet read five lines, a responder's
 * three).
 */
struct hca_qp {
	/* line 0: both sides */
	struct hca *hca;
	struct hca_xport *xport;	/* the transport carrying it (qp_ib.c, models/tcp) */
	/* congestion control (models/cc/cc.c): pacing, DCQCN or IB CC
	 * state; NULL when CC is off */
	struct cc_qp *cc;
	struct hca_qp *ring_next;	/* its VL's round of active QPs (ring_prev below) */
	uint32_t qpn;
	enum hca_qp_type type;
	enum hca_qp_state state;
	uint32_t mtu;
	net_lid_t dlid;
	uint32_t dest_qpn;
	uint32_t rsp_n;		/* responses owed (rsp below): "has it a packet?" */
	uint8_t sl, vl;
	bool active;		/* in its VL's round */
	bool rnr_wait;		/* after an RNR NAK: wait for the timer */

	/* line 1: requester. Send queue: ring of WQEs; [head, next) sent or
	 * in flight, [next, tail) queued. sq_cap is the verbs capacity
	 * (max_send_wr); the storage holds sq_mask + 1 entries, a power of two
	 * that doubles as the queue fills (sq_reserve in hca.c), so a QP
	 * created deep but used shallow costs little memory and indexing is a
	 * mask, not a division. */
	struct hca_swqe *sq __attribute__((aligned(64)));
	uint32_t sq_cap, sq_mask, sq_head, sq_next, sq_tail;	/* free-running indexes */
	uint32_t snd_psn;	/* next PSN to send */
	uint64_t seg_off;	/* bytes of sq[sq_next] already packetised */
	uint32_t psn_hi;	/* first PSN never sent: below it is a retransmission */
	uint32_t una_psn;	/* oldest PSN not yet acknowledged */
	uint64_t pkts_sent;	/* st.pkts_sent, kept here (hca_qp_stats()) */
	sim_time_t timer_at;	/* 0: not armed */

	/* line 2: the responder, what each packet it receives reads (its
	 * PSN, the WRITE or the SEND being received, when its bytes land) */
	uint32_t epsn;		/* expected PSN */
	uint32_t recv_off;
	bool nak_seq_sent;	/* one sequence NAK per expected PSN */
	bool ooo_waiting;	/* requests held ahead of a gap (ooo_req) */
	bool recv_active;	/* a SEND is being received into cur_recv */
	bool uc_drop;		/* UC: discarding until the next FIRST/ONLY */
	uint32_t wr_left;
	struct hca_mr *wr_mr;	/* WRITE being received */
	uint64_t wr_va;
	sim_time_t rx_visible;	/* the last payload byte received lands in memory */
	struct hca_recv_wr cur_recv;

	/* line 3: the responder once a message (its MSN, a receive taken,
	 * the responses owed), then the requester's timers and reads */
	uint32_t msn;
	/* Receive queue: a ring of rq_mask + 1 entries, a power of two that
	 * doubles as receives are posted (rq_reserve in hca.c) up to rq_cap
	 * (max_recv_wr, below); [rq_head, rq_head + rq_n) posted. */
	uint32_t rq_head, rq_n, rq_mask;
	struct hca_recv_wr *rq;
	/* responses owed (rsp_n on line 0) */
	struct hca_resp *rsp;
	uint32_t rsp_cap, rsp_head;
	sim_time_t timer_q;	/* its entry in the HCA's heap not known dead (0: none) */
	uint32_t rd_outstanding;	/* READ/atomic requests in flight */
	uint32_t rd_responding;	/* READ/atomic responses queued */
	uint32_t rd_resp_psn;	/* requester: next READ response PSN expected */
	uint8_t retry_left, rnr_left;
	bool timer_rnr;		/* the armed timer is the RNR wait */
	/* RC packets that arrived ahead of a gap (qp_ooo.c; hca.ooo):
	 * requests at the responder, READ responses and atomic ACKs at the
	 * requester; NULL until the first one */
	struct hca_ooo *ooo_req, *ooo_rsp;

	/* the scheduling ring, the counters; the requester's "ready" wake-up
	 * (once per message) */
	struct hca_qp *ring_prev;
	sim_time_t wait_at;	/* a "ready" wake-up is armed for this time (0: none) */
	sim_time_t wqe_free;	/* its send engine takes the next WQE from then (hca.wqe_ns) */
	uint32_t wr_len;	/* the WRITE being received: its length, which a WRITE with
				 * immediate's receive completion reports (once a message) */
	struct hca_qp_stats st;

	/* set-up, errors, reports */
	uint32_t rq_cap;
	struct hca_cq *scq, *rcq;
	struct hca_srq *srq;
	bool sq_sig_all;
	struct hca_qp_cap cap;
	uint32_t qkey;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t max_rd_atomic, max_dest_rd_atomic;
	/* the responder's remote access enables (RDMA Write, RDMA Read,
	 * Atomic: ibv_modify_qp(3)'s qp_access_flags), HCA_ACCESS_REMOTE_*:
	 * all three until set, as ibfab's own traffic needs them; a verbs
	 * program sets them at INIT */
	uint32_t access;
	uint32_t last_atomic_psn;	/* replay a duplicate atomic with its result */
	uint64_t last_atomic_orig;
	bool last_atomic_valid;
	bool comm_est;		/* its Communication Established event was raised */
	/* out-of-order placement: while a packet held ahead of a gap is
	 * executed, when its payload was in memory (0: not placed yet) */
	sim_time_t held_vis;
};

_Static_assert(offsetof(struct hca_qp, rnr_wait) < 64 && offsetof(struct hca_qp, sq) == 64 &&
	       offsetof(struct hca_qp, timer_at) + sizeof(sim_time_t) == 128 &&
	       offsetof(struct hca_qp, epsn) == 128 &&
	       offsetof(struct hca_qp, cur_recv) + sizeof(struct hca_recv_wr) == 192 &&
	       offsetof(struct hca_qp, timer_rnr) < 256,
	       "struct hca_qp's lines as its comments say");

struct hca_timer_ev {
	sim_time_t t;
	uint32_t qpn, gen;
};

/* QPs 2 .. 2 + HCA_QP_NEAR - 1 (the first a host creates: a ring's two, a
 * permutation's one or two) are found from the HCA's first line. */
#define HCA_QP_NEAR 2

struct hca {
	/*
	 * Line 0: what every packet sent reads (choosing it, building it),
	 * with the current QP of each of the first four VLs' rounds. cur[]
	 * holds pointers, not QP numbers, so that choosing the next packet
	 * does not read the qps array's line too; it goes on into lines 1
	 * and 2 for VLs 4-15. With the senders' fields on line 0 beside the
	 * receivers' and cur[] from line 1, a packet sent would read two
	 * lines of its HCA.
	 */
	struct fab *f;
	struct port *port;		/* the port traffic leaves by */
	struct hca_cc *cc;		/* congestion control (models/cc/cc.c), NULL when off */
	net_lid_t lid;
	uint16_t active_vls;
	bool in_take;			/* building a packet: do not kick the port */
	bool hint : 1;			/* keep port->tx_hint (hca_hint_next): the look-ahead runs */
	bool host_on : 1;		/* host.model, and a host behind it (not a switch's
					 * SHARP aggregation node): PCIe, DMA, CQE costs */
	struct hca_qp *cur[PORT_NVL] __attribute__((aligned(32)));
	/* line 2, after cur[12..15]: what every packet received reads (it
	 * finds its QP; the fabric comes from the port, qp_resp_receive) */
	struct hca_qp **qps;		/* by QP number (0 and 1 reserved: QP0/QP1) */
	/* qps[2 ..] again: on 1,000 hosts the array's line was a miss for
	 * every packet received and every QP timer (hca_qp_by_num) */
	struct hca_qp *qp_near[HCA_QP_NEAR];
	uint32_t nqps;
	/* line 3: MRs, CQ/SRQ ownership, the timer heap */
	struct fab_node *n;
	/* MRs by key index i, in chunks of HCA_MR_CHUNK that never move
	 * (mr_chunks, below): mr0 is the first chunk, so that a lookup reads
	 * the MR, not a line of pointers to it first */
	struct hca_mr *mr0;
	uint32_t nmrs;
	uint32_t comp;			/* engine component: timers */
	uint32_t qps_cap, mr_chunks_cap;
	/* CQs and SRQs it owns: freed with the HCA unless destroyed before */
	struct hca_obj {
		void *p;	/* NULL once destroyed */
		bool cq;	/* else an SRQ */
	} *objs;
	uint32_t nobjs, objs_cap;
	/* a small heap of timers: QP ACK/RNR timers (comp = qpn, arg
	 * TIMER_ACK), WQE ready times (arg TIMER_READY), traffic posts decided
	 * during the run (comp = message, arg TIMER_POST) */
	struct sim_heap timers;
	uint64_t timer_seq;
	/* the time of the traffic's next post known before the run
	 * (SIM_TIME_MAX: none): the builder keeps that plan, in (post time,
	 * index) order beside the heap rather than in it, and posts its head
	 * through fab_traffic_post_planned(), which moves plan_at on */
	sim_time_t plan_at;
	struct sim_wake wake;		/* engine events for the heap top (sim.h) */
	sim_time_t msg_free;		/* the next message may start then (hca.max_mpps) */
	struct host host;		/* PCIe, memory, CPU behind this HCA (models/host) */
	void *xport_host;		/* another transport's state for this HCA (TCP: the kernel
				 * stack's CPU pipelines), its own; NULL until it makes it */
	hca_place_fn place_fn;		/* hca_set_place_hook(): NULL = memcpy at once */
	void *place_ctx;
	hca_async_fn async_fn;		/* hca_set_async_hook(): NULL = no one listens */
	void *async_ctx;
	struct hca_mr **mr_chunks;	/* chunk k: keys k * HCA_MR_CHUNK .. (mr0 above) */
	/* the counters of the QPs destroyed so far, summed (hca_qp_stats_add):
	 * a run's totals count what a QP did after it is gone */
	struct hca_qp_stats gone;
};

/* the senders' fields and cur[0..3] fill line 0, the receivers' follow
 * cur[] on line 2; n, mr0 and nmrs share line 3 with the timer heap's
 * array and count */
_Static_assert(offsetof(struct hca, cur) == 32 && offsetof(struct hca, cur[4]) == 64 &&
	       offsetof(struct hca, qps) >= 128 && offsetof(struct hca, nqps) + 4 <= 192 &&
	       offsetof(struct hca, n) == 192 &&
	       offsetof(struct hca, nmrs) < 256 && offsetof(struct hca, timers) + 16 <= 256,
	       "struct hca's lines as their comments say");

#define HCA_MR_CHUNK 16

/* QP number qpn, or NULL. */
static inline struct hca_qp *hca_qp_by_num(const struct hca *h, uint32_t qpn)
{
	if (qpn - 2 < HCA_QP_NEAR)
		return h->qp_near[qpn - 2];
	return qpn < h->nqps ? h->qps[qpn] : NULL;
}

/* Does the requester read this WQE's payload from memory (not inline,
 * not a READ or an atomic)? */
static inline bool swqe_reads_payload(const struct hca_swqe *w)
{
	return !(w->wr.send_flags & HCA_SEND_INLINE) && w->wr.opcode != HCA_WR_RDMA_READ &&
	       w->wr.opcode != HCA_WR_ATOMIC_CMP_AND_SWP && w->wr.opcode != HCA_WR_ATOMIC_FETCH_AND_ADD;
}

/* The send WQE with free-running index i. */
static inline struct hca_swqe *hca_swqe_at(struct hca_qp *qp, uint32_t i)
{
	return &qp->sq[i & qp->sq_mask];
}

/*
 * Tell the port which packet is likely next (port.tx_hint): the
 * current QP of the lowest active VL, and that QP's next send WQE. The
 * engine's look-ahead asks for their lines (and the HCA's) an event before
 * the port's transmitter finishes, so that choosing and building the next
 * packet does not wait for the HCA, then the QP, then the WQE, one after
 * the other: on 8,192 hosts each was a miss. Called where the current QP
 * or its next WQE changes; kept only where the look-ahead runs (h->hint:
 * a fabric too small for it, such as B1's, is spared the instructions).
 */
void hca_hint_set(struct hca *h);	/* hca.c: out of line, off B1's path */

static inline void hca_hint_next(struct hca *h)
{
	if (h->hint)
		hca_hint_set(h);
}

#define TIMER_POST (UINT32_MAX - 1)
#define TIMER_XPORT (UINT32_MAX - 2)	/* another transport's QP timer (hca_qp_arm_xport) */

/*
 * A transport: what carries a QP's work requests as packets. Every QP has
 * one (qp.xport), whose state for the QP begins with a struct hca_xport:
 * InfiniBand's RC, UC and UD, over IB or RoCEv2 (qp_ib.c, with the
 * requester and completer of qp_req.c and the responder of qp_resp.c),
 * or TCP for a TCP fabric's RC QPs (models/tcp). The builder names them
 * (fab.transport, and fab.rc_transport for RC QPs when another carries
 * those); the HCA names none. A new transport is its own file with one
 * of these.
 */
struct hca_transport_ops {
	bool atomics;				/* it carries atomic operations */
	/* give qp its state (qp->xport): 0, or -1 out of memory */
	int (*create)(struct hca_qp *qp);
	void (*destroy)(struct hca_qp *qp);
	/* a work request was posted (after hca_post_send's checks) */
	void (*post)(struct hca_qp *qp, struct hca_swqe *w);
	/* the port asks: a packet to send now? its wire size? build it */
	bool (*has_packet)(struct hca_qp *qp);
	uint32_t (*next_size)(struct hca_qp *qp);
	void (*build)(struct hca_qp *qp, struct pkt *p);
	/* a packet for qp arrived (its tail at the HCA); f is the port's */
	void (*receive)(struct fab *f, struct hca_qp *qp, struct pkt *p);
	/* its timer (hca_qp_arm_xport, or the ACK timer) fired at t */
	void (*timer)(struct hca_qp *qp, sim_time_t t);
	/* free its state for the HCA (hca.xport_host) */
	void (*hca_fini)(struct hca *h);
};

struct hca_xport {
	const struct hca_transport_ops *ops;
};

/*
 * Congestion control at the HCA (models/cc: DCQCN or IB CC): it paces a
 * QP's request packets, answers congestion marks with notifications, and
 * offers the port the notifications it owes, ahead of the QPs. Its state
 * for the HCA begins with a struct hca_cc (hca.cc; NULL when CC is off:
 * every hook below is then one test of a pointer), its state per QP is
 * qp.cc. The builder names it (fab.cc), and the HCA sets it up with
 * hca_init().
 */
struct hca_cc_ops {
	/* set up h->cc (or leave it NULL: no port); 0 or -1 */
	int (*hca_init)(struct hca *h);
	void (*hca_fini)(struct hca *h);
	/* a QP's state (freed with free()), NULL out of memory */
	struct cc_qp *(*qp_new)(struct hca *h);
	/* requester: may the next request packet start now? (arms a wake-up if not) */
	bool (*req_may_send)(struct hca_qp *qp);
	/* requester: packet p (its wire size set) starts now */
	void (*req_sent)(struct hca_qp *qp, const struct pkt *p);
	/* a packet for qp carrying CE/FECN, or a notification: true if consumed */
	bool (*receive)(struct hca_qp *qp, struct pkt *p);
	/* the port looks for packets: a notification owed goes first on its
	 * VL; returns that VL's bit (0: none), sets blocks[vl] and the ready
	 * bit if it fits */
	uint16_t (*offer)(struct hca *h, struct port *pt, uint32_t *blocks, uint16_t *ready);
	/* the VL of the notification owed next, or -1 */
	int (*owed_vl)(const struct hca *h);
	/* build the notification offered on vl (pool index) */
	uint32_t (*take)(struct hca *h, uint8_t vl);
	/* the QP's state holds nothing another entity waits for: it may go */
	bool (*qp_idle)(const struct hca_qp *qp);
};

struct hca_cc {
	const struct hca_cc_ops *ops;
};

/* hca.c */
void hca_qp_update_active(struct hca_qp *qp);
/* hca_post_send() for the traffic adapter: the WQE carries fab message msg. */
int hca_post_send_msg(struct hca_qp *qp, const struct hca_send_wr *wr, int32_t msg);
/* Re-evaluate the QP at `at` (a work request becomes ready). */
void hca_qp_arm_ready(struct hca_qp *qp, sim_time_t at);
/* Call fab_traffic_post(f, msg) at `at`. */
void hca_post_at(struct hca *h, sim_time_t at, uint32_t msg);
/* A post known before the run starts, at t: the wake-up it needs (the
 * builder plans posts in index order and sets plan_at when done). 0 or
 * -1 (out of memory). */
int hca_plan_wake(struct hca *h, sim_time_t t);
void hca_qp_arm_timer(struct hca_qp *qp, sim_time_t at, bool rnr);
void hca_qp_disarm_timer(struct hca_qp *qp);
/* Call qp's transport's timer() at `at` (qp->xport set). */
void hca_qp_arm_xport(struct hca_qp *qp, sim_time_t at);
void hca_cq_push(struct hca_cq *cq, const struct hca_wc *wc);
struct hca_mr *hca_mr_find(struct hca *h, uint32_t key);
/* Check that [va, va+len) lies in mr with `access`; 0 or -1. */
int hca_mr_check(const struct hca_mr *mr, uint64_t va, uint64_t len, uint32_t access);
void *hca_mr_ptr(const struct hca_mr *mr, uint64_t va);

/* The bytes at the WQE's local address, as hca_mr_ptr(hca_mr_find(lkey))
 * would find them now: NULL without bytes or once the MR is deregistered. */
static inline uint8_t *swqe_buf(const struct hca_swqe *w)
{
	return w->mr_bytes && w->mr->valid ? hca_mr_ptr(w->mr, w->wr.sg.addr) : NULL;
}

uint32_t hca_alloc_pkt(struct hca *h);
/* Move the QP to the error state: flush every WQE and receive. */
void hca_qp_to_error(struct hca_qp *qp);
bool hca_qp_take_recv(struct hca_qp *qp, struct hca_recv_wr *out);

/* Retire WQE w with status st: its completion (and the QP's error state). */
void qp_req_complete(struct hca_qp *qp, struct hca_swqe *w, enum hca_wc_status st);

/*
 * The host model (ideal when host.model is off): when bytes [.., end) of a
 * message of `len` bytes in `mem` are in the HCA; when `bytes` written at
 * t are visible in memory; when a CQE written at t is seen by the CPU.
 */
sim_time_t hca_dma_ready(struct hca *h, struct hca_dma *d, enum hca_mem mem, uint64_t len,
			 uint64_t start, uint64_t end, uint32_t mtu);
sim_time_t hca_dma_write(struct hca *h, sim_time_t t, enum hca_mem mem, uint32_t bytes);
/* A CQE the HCA writes at t, behind data that is visible at `after`
 * (posted writes stay in order): when the polling CPU has it. */
sim_time_t hca_cqe_time(struct hca *h, sim_time_t t, sim_time_t after);

/*
 * RoCEv2 (IBTA Annex A17) replaces LRH and VCRC by an Ethernet frame with
 * an 802.1Q tag (its PCP carries the PFC priority), IPv4 and UDP (port
 * 4791); BTH, the extension headers and the ICRC stay. On the wire the
 * frame also pays FCS, preamble and the inter-frame gap, and is at least
 * 64 bytes: 14 + 4 + 20 + 8 + 12 + 4 + 4 + 8 + 12 = 86 bytes around a
 * middle packet's payload (numbers.md's 82 plus the VLAN tag).
 *
 * Wire size of a packet of this QP with these headers around `payload`
 * bytes: IB (LRH ... VCRC), or RoCEv2 on the Ethernet fabrics. Inline: a
 * packet asks it twice, and a caller with a constant opcode (an ACK)
 * folds the switch away.
 */
static inline uint32_t hca_wire_bytes(const struct hca_qp *qp, uint8_t op, uint32_t payload)
{
	bool eth = fab_is_eth(&qp->hca->f->p);
	uint32_t b = IB_BTH_BYTES + IB_ICRC_BYTES +
		     (eth ? IPV4_HDR_BYTES + UDP_HDR_BYTES : IB_LRH_BYTES + IB_VCRC_BYTES);

	if (qp->type == HCA_QPT_UD)
		b += IB_DETH_BYTES;
	switch (op) {
	case IB_OP_WRITE_FIRST: case IB_OP_WRITE_ONLY: case IB_OP_READ_REQUEST:
		b += IB_RETH_BYTES;
		break;
	case IB_OP_WRITE_ONLY_IMM:
		b += IB_RETH_BYTES + IB_IMM_BYTES;
		break;
	case IB_OP_SEND_LAST_IMM: case IB_OP_SEND_ONLY_IMM: case IB_OP_WRITE_LAST_IMM:
		b += IB_IMM_BYTES;
		break;
	case IB_OP_READ_RESP_FIRST: case IB_OP_READ_RESP_LAST:
	case IB_OP_READ_RESP_ONLY: case IB_OP_ACK:
		b += IB_AETH_BYTES;
		break;
	case IB_OP_ATOMIC_ACK:
		b += IB_AETH_BYTES + 8;	/* AtomicAckETH */
		break;
	case IB_OP_CMP_SWAP: case IB_OP_FETCH_ADD:
		b += 28;		/* AtomicETH */
		break;
	default:
		break;
	}
	b += (payload + 3) & ~3u;
	if (eth) {
		b += ETH_HDR_BYTES + ETH_VLAN_BYTES + ETH_FCS_BYTES;
		if (b < ETH_MIN_FRAME)
			b = ETH_MIN_FRAME;
		b += ETH_PREAMBLE_BYTES + ETH_IFG_BYTES;
	}
	return b;
}

#endif
