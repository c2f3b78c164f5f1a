/* SPDX-License-Identifier: MIT */
/*
 * fab_int.h - the simulation's internal state, shared by the link layer
 * (models/ib/ib_port.c), the switch (models/switch/sw.c), the HCA edge
 * (models/hca/hca.c) and the builder (models/fabric/fab.c). Not a public API.
 *
 * Every connected port end is a `struct fab_port`: its transmitter (with the
 * outgoing wire, a FIFO of packets in flight, and a FIFO of flow-control
 * packets in flight), the credit state for the receiver at the other end,
 * and its own receiver (per-VL buffer accounting and, at a switch, the
 * per-VL input queues). A port is one engine component; its events are the
 * transmitter finishing a packet, the head packet of its wire arriving at
 * the peer, credits arriving while it is blocked, and its periodic
 * flow-control timer.
 */
#ifndef IBFAB_FAB_INT_H
#define IBFAB_FAB_INT_H

#include <stddef.h>

#include "models/fabric/fab.h"
#include "models/ib/ib_pkt.h"
#include "models/ib/ib_vlarb.h"
#include "sim/sim.h"
#include "sim/sim_pool.h"
#include "sim/sim_rng.h"

#define FAB_NVL 16		/* VL 0..14 data, 15 management */

enum fab_port_ev {
	FAB_EV_TX_DONE,		/* transmitter finished serialising its packet */
	FAB_EV_WIRE_HEAD,	/* head of the wire FIFO reaches the peer */
	FAB_EV_FC_WAKE,		/* a blocked transmitter's credits arrive (sim_timer tag) */
	FAB_EV_FC_TIMER,	/* periodic flow-control update (sim_timer tag) */
	FAB_EV_ETH_WAKE,	/* Ethernet: a paused transmitter may resume (sim_timer tag) */
	FAB_EV_PFC_REFRESH,	/* Ethernet: re-send XOFF before its pause expires (sim_timer tag) */
};

/* A FIFO of pool-indexed packets linked through ib_pkt.next. */
struct fab_pq {
	uint32_t head, tail, len;
};

/*
 * A flow-control packet in flight: the advertised limit for one VL. Its
 * FCCL is the low 12 bits of the limit (ib_credit_fccl), and the sender's
 * unwrapped limit (the invariant checker's shadow) only grows, by less than
 * 2^32 blocks between two FC packets: the low 32 bits say all of it. It
 * left the receiver fc_delay (the sender port's constant) before it lands.
 * 16 bytes.
 */
struct fab_fc {
	sim_time_t arrive;
	uint32_t limit;			/* unwrapped limit mod 2^32 */
	uint8_t vl;
};

/*
 * The FC packets in flight to a port, in arrival order. Nearly always at
 * most one is: it lives in the port's own line (one), and a ring on the
 * heap (spill, kept once allocated) takes over only while more are in
 * flight. In a ring of its own each entry cost the sender and the
 * receiver a miss per FC packet on a 1,024-host fabric.
 */
struct fab_fc_ring {
	struct fab_fc *v;		/* &one, or spill */
	struct fab_fc *spill;
	uint16_t head, n, cap;		/* power-of-two capacity of v */
	uint16_t spill_cap;
	struct fab_fc one;
};

void fab_fc_ring_init(struct fab_fc_ring *r);
void fab_fc_ring_free(struct fab_fc_ring *r);
/* fab_fc_ring_add()'s slow path: back to `one` when drained, to the heap
 * ring (grown if needed) when full; 0, or -1 when out of memory. */
int fab_fc_ring_room(struct fab_fc_ring *r);

/* The i-th oldest (i < n). */
static inline struct fab_fc *fab_fc_ring_at(const struct fab_fc_ring *r, uint32_t i)
{
	return &r->v[(r->head + i) & (r->cap - 1)];
}

/* A new newest entry for the caller to fill; NULL when out of memory. */
static inline struct fab_fc *fab_fc_ring_add(struct fab_fc_ring *r)
{
	if ((r->n == r->cap || (!r->n && r->v != &r->one)) && fab_fc_ring_room(r))
		return NULL;
	return &r->v[(r->head + r->n++) & (r->cap - 1)];
}

static inline void fab_fc_ring_pop(struct fab_fc_ring *r)
{
	r->head = (uint16_t)((r->head + 1) & (r->cap - 1));
	r->n--;
}

struct fab_node;
struct hca_qp;
struct hca_swqe;
struct eth_port;
struct eth_sw;
struct ibcc_port;

/* Ethernet fabrics: the priority CNPs (DCQCN) travel on, served strictly
 * before data (the ConnectX default puts CNPs on a high priority). In
 * Ethernet mode a packet's `vl` field is its 802.1Q priority. */
#define FAB_ETH_CNP_PRIO ETH_CNP_PRIO	/* models/eth/eth.h */

/*
 * One virtual lane of a port end: the sender's credit state for the peer's
 * buffer of that VL, and this end's own receive buffer and input queue,
 * with the counters every packet bumps. A packet-hop on a large fabric is
 * a string of cache misses, so what one packet touches on one VL shares a
 * cache line: the first line is the transmitter's, the second the
 * receiver's (per-field arrays of 16 VLs put each field on its own line).
 * The counters are copied into fab_port_info when it is read (fab_port()).
 */
struct fab_port_vl {
	/* transmitter: credits for the peer's receive buffer of this VL */
	uint64_t tx_blocks;		/* shadow of FCTBS, unwrapped */
	uint64_t limit_abs;		/* shadow of FCCL, unwrapped */
	uint64_t xmit_bytes, xmit_pkts;	/* PortXmitData, PortXmitPkts (bytes here) */
	uint64_t fc_sent_wraps;		/* times fc_sent wrapped past 2^32 */
	uint16_t fctbs;			/* FCTBS */
	uint16_t fccl;			/* the last FCCL received */
	/* receiver (packets arriving from the peer), from byte 64 */
	uint64_t rx_blocks __attribute__((aligned(64)));	/* shadow of ABR, unwrapped */
	uint64_t rx_freed;		/* blocks freed since start */
	uint64_t rcv_bytes, rcv_pkts;	/* PortRcvData, PortRcvPkts */
	uint32_t rx_cap;		/* buffer capacity in blocks */
	uint32_t rx_used;		/* blocks occupied */
	uint32_t fc_pending;		/* blocks freed since the last FC update */
	uint32_t buf_high;		/* receive-buffer high-water mark, bytes */
	uint32_t fc_sent;		/* FC packets sent for this VL (mod 2^32: fc_sent_wraps) */
	struct fab_pq inq;		/* switch input: packets queued on this VL */
} __attribute__((aligned(64)));

_Static_assert(sizeof(struct fab_port_vl) == 128, "one line per side of a VL");

struct fab_port {
	/*
	 * One hop touches two ports (the packet's sender and its receiver)
	 * and, with 1,000 hosts, finds almost none of their lines in the
	 * core's cache: the fields are grouped by the events that read them,
	 * so that each hop misses as few lines as it can.
	 * Line 0: what every event at this port reads, as sender or receiver,
	 * and what the receiver reads when it sends credits back (its own
	 * transmitter's state: an FC packet waits for the current packet).
	 */
	struct fab *fab;
	struct fab_node *node;
	struct fab_port *peer;
	struct hca *hca;		/* node->hca, or NULL at a switch */
	/* packets in flight to the peer, a FIFO linked through ib_pkt.next
	 * (empty: head is SIM_POOL_NIL, and tail then means nothing; the
	 * length was never needed). Here, not on line 2: the event of
	 * a packet's head reaching the peer reads nothing else of this end
	 * but the fabric, the peer and the component (0.4 misses a hop
	 * fewer on 8,192 hosts; where the receiver is an HCA its credits go
	 * back at once and read line 2 anyway). */
	uint32_t wire_head, wire_tail;
	sim_time_t tx_end;
	uint32_t comp;			/* engine component id */
	uint16_t lid;			/* this end's LID (its switch's at a switch port) */
	uint8_t port_no;
	bool is_sw, peer_is_sw;		/* this end, the other end: a switch (else a CA) */
	bool tx_busy;
	bool has_ibcc;			/* ibcc is set */
	uint8_t in_flight;		/* switch input: packets it is feeding to outputs now */
	union {
		struct {	/* a switch port */
			uint8_t tx_src_vl;
			uint8_t tx_src_blocks;
			uint16_t inq_vls;	/* switch input: VLs whose queue holds packets */
		};
		/* A CA's port into a switch: the output port there that took
		 * its last packet, as 1 + its index in fab.port_mem (0: none),
		 * for the look-ahead (sw_receive, ib_port_prefetch; fwd_hint's
		 * counterpart, whose slot on line 1 a CA's port uses for its
		 * own hints) */
		uint32_t fwd_idx;
	};

	/* Line 1: the transmitter, when it starts a packet */
	struct ib_vlarb vlarb;
	uint32_t ps_per_byte;		/* link_ps_per_byte(rate): port_ser() without a division */
	sim_time_t prop;
	sim_time_t busy_ps;		/* fab_port_info.busy_ps, kept here (fab_port()) */
	/*
	 * The rest of line 1 is a switch port's, or a CA port's. A switch
	 * port keeps where its packet came from (tx_src: to free its input
	 * buffer at TX_DONE; with cut-through the next hop may already hold,
	 * and relabel, it) and what the last packet over this link went on
	 * to: where its peer is a CA, the QP that received it (rx_hint,
	 * hca_receive); where a switch, the output port there that took it
	 * (fwd_hint, sw_receive). A CA's port keeps the QP whose packet is
	 * likely next and that QP's next send WQE (hca_hint_next, tx_hint and
	 * tx_hint_wqe), and its fwd_hint as an index on line 0 (fwd_idx).
	 * The hints are for the look-ahead (ib_port_prefetch), never read
	 * through: they may be stale (a send queue that grew, a QP
	 * destroyed), and a prefetch of a stale address costs a line and
	 * nothing else.
	 */
	union {
		struct fab_port *tx_src;
		const struct hca_qp *tx_hint;
	};
	/* Where ps_per_byte is 0 (FDR, FDR10): link_ser_ps() divides 128-bit
	 * numbers, so remember the two sizes last serialised and their times */
	uint32_t ser_bytes[2];
	union {
		const struct hca_qp *rx_hint;
		const struct fab_port *fwd_hint;
		const struct hca_swqe *tx_hint_wqe;
	};

	/*
	 * Line 2: the transmitter, when it looks at its credits and sends,
	 * and all the peer's receiver touches here when it sends an FC
	 * packet (the queue with its usual one entry, its delay, whether
	 * this sender waits for it).
	 */
	sim_time_t fc_delay;		/* an FC packet's serialisation plus propagation */
	/* FC packets in flight to this port (sent by the peer's receiver):
	 * the sender takes in those that have landed (ib_port.c) */
	struct fab_fc_ring fcq;
	/* Ethernet fabrics: PFC state (models/eth), else NULL. Every port of
	 * an Ethernet fabric has it (fab_build), so where only the mode is
	 * asked the code asks fab_is_eth() and reads no line of the port. */
	struct eth_port *eth;
	bool waiting;			/* PortXmitWait: data, and no VL has the credits */
	uint16_t vl_waiting;		/* VLs with data but no credits */

	/* Line 3: timers and what only some runs read */
	struct sim_timer fc_wake;	/* blocked on credits: when the next FC packet lands */
	struct sim_timer fc_timer;	/* receiver: periodic FC update */
	sim_time_t wait_since;		/* PortXmitWait: since when the port waits */
	struct link_rate rate;
	sim_time_t ser_ps[2];		/* the times of ser_bytes (line 1) */

	struct fab_port_vl vl[FAB_NVL] __attribute__((aligned(64)));	/* per VL: credits, receive buffer, input queue */

	struct fab_port_info info;	/* public counters (fab.h) */
	struct sim_rng rng;		/* fault injection at this receiver */
	/* IB CC at a switch output (models/ib/ib_cc.c), else NULL: read
	 * only where has_ibcc (line 0) says so */
	struct ibcc_port *ibcc;
};

_Static_assert(offsetof(struct fab_port, vlarb) == 64 && offsetof(struct fab_port, fc_delay) == 128 &&
	       offsetof(struct fab_port, tx_hint_wqe) < 128 &&
	       offsetof(struct fab_port, waiting) < 192 && offsetof(struct fab_port, fc_wake) == 192 &&
	       offsetof(struct fab_port, vl) == 256,
	       "fab_port's lines as its comments say");

/*
 * A node. Line 0 is what a packet through a switch reads (routing,
 * requests, the kick's Ethernet test); the array is 64-byte aligned, so
 * that line is one line: at 88 bytes a node straddled two for most nodes.
 */
struct fab_node {
	struct fab_port **ports;	/* by port number; NULL if unconnected */
	/* switch */
	const uint8_t *lft;
	/* requests: for output o and VL v, bitset of input ports whose head
	 * packet wants o on v; rr pointer per (o, v) */
	uint64_t *req;			/* [(v * (nports + 1) + o) * req_words + w] */
	uint16_t *req_vls;		/* per output: VLs with any request */
	uint8_t *rr;			/* [v * (nports + 1) + o] last input served */
	/* Ethernet switch (models/eth/eth_sw.c), else NULL */
	struct eth_sw *eth;
	int nports;
	uint32_t lft_len;
	int req_words;
	enum net_node_type type;
	/* line 1 */
	int idx;			/* node index in the net */
	/* HCA */
	struct hca *hca;
} __attribute__((aligned(64)));

_Static_assert(offsetof(struct fab_node, type) < 64 && sizeof(struct fab_node) == 128,
	       "fab_node's line 0 as its comment says");

struct fab {
	struct sim_engine eng;
	const struct net *net;
	struct fab_params p;
	struct ib_vlarb_map vlarb_map;	/* p's VLArb tables by VL */
	struct fab_msgs *msgs;
	struct sim_pool pkts;
	struct fab_node *nodes;
	int nnodes;
	struct fab_port **ports;	/* every connected port end */
	struct fab_port *port_mem;	/* their storage, one block (ports[i] = &port_mem[i]) */
	int nports;
	uint64_t seed;
	/* timing constants */
	sim_time_t sw_lat, hca_lat;
	/* results */
	struct fab_totals tot;
	sim_time_t last_done;
	bool failed;
	struct sim_diag fail;
	/* sampling */
	fab_sample_fn sample_fn;
	void *sample_ctx;
	uint32_t sample_comp;
	/* traffic (fab_traffic.c): a QP pair per stream, per-node region and CQ */
	struct fab_stream *streams;
	struct hca_mr **node_mr;
	struct hca_cq **node_cq;
	/* messages: dependents of each message (CSR arrays) */
	uint32_t *dep_off, *dep;
};

static inline struct ib_pkt *fab_pkt(const struct fab *f, uint32_t idx)
{
	return sim_pool_get(&f->pkts, idx);
}

void fab_pq_push(struct fab *f, struct fab_pq *q, uint32_t idx);
uint32_t fab_pq_pop(struct fab *f, struct fab_pq *q);

/* ib_port.c: the link layer */
int ib_port_init(struct fab *f, struct fab_port *pt);
/* Link initialisation: learn the peer's empty buffers as credits. */
void ib_port_link_up(struct fab_port *pt);
void ib_port_fini(struct fab_port *pt);
void ib_port_handler(struct sim_engine *eng, void *ctx, uint32_t arg);
void ib_port_prefetch(const void *ctx, uint32_t arg);
/* Try to start a packet on this port's transmitter (idle, credits allowing). */
void ib_port_kick(struct fab_port *pt);
/* Release `blocks` of the receive buffer of VL vl at this port (packet left). */
void ib_port_rx_free(struct fab_port *pt, uint8_t vl, uint32_t blocks);
/* Can a packet of `blocks` go out on VL vl now? */
static inline bool ib_port_fits(const struct fab_port *pt, uint8_t vl, uint32_t blocks);

/* sw.c: switch input queues and output requests */
int sw_init(struct fab *f, struct fab_node *n);
void sw_fini(struct fab_node *n);
/* A packet's head arrived at input `in` (after the pipeline latency). */
void sw_receive(struct fab_port *in, uint32_t pkt);
/* The LFT's output port for the packet at input `in`, or -1 when it has
 * none (the packet is then dropped and counted). */
int sw_route(struct fab_port *in, uint32_t pkt);
/* Output arbitration: the best packet for output `out` on each VL. Fills
 * cand[vl] with a packet index or SIM_POOL_NIL and returns the VL mask. */
uint16_t sw_candidates(struct fab_port *out, uint32_t cand[FAB_NVL], uint16_t *has_data);
/* The output started sending cand packet: dequeue it at its input. */
void sw_take(struct fab_port *out, uint32_t pkt);
/* The output finished sending it: free the input buffer, re-request. */
void sw_sent(struct fab_port *out);

/* eth_port.c: the Ethernet link layer (fabrics roce, roce-lossy, tcp).
 * Receivers count the 64-byte cells they hold per priority (rx_used, as the
 * IB receiver counts credit blocks); PFC sends XOFF upstream above
 * eth.pfc_xoff and XON below eth.pfc_xon; transmitters honour pauses. */
int eth_port_init(struct fab *f, struct fab_port *pt);
void eth_port_fini(struct fab_port *pt);
/* May this transmitter start a packet on priority prio now (not paused)? */
bool eth_port_fits(const struct fab_port *pt, uint8_t prio);
/* A packet's cells entered this receiver (after rx_used grew): XOFF? */
void eth_port_ingress(struct fab_port *rx, uint8_t prio);
/* Cells left this receiver (after rx_used shrank): XON? */
void eth_port_egress(struct fab_port *rx, uint8_t prio);
/* Pause bookkeeping when the transmitter goes idle or wakes. */
void eth_port_handler(struct fab_port *pt, uint32_t arg);
/* Pick the priority to serve among `ready` (strict for CNPs, then eth.sched). */
int eth_port_pick(struct fab_port *pt, uint16_t ready);
/* The transmitter is blocked by pauses on every priority with data. */
void eth_port_blocked(struct fab_port *pt, uint16_t has_data);

/* eth_sw.c: the Ethernet switch (shared buffer, output queues, ECN) */
int eth_sw_init(struct fab *f, struct fab_node *n);
void eth_sw_fini(struct fab_node *n);
void eth_sw_receive(struct fab_port *in, uint32_t pkt);
uint16_t eth_sw_candidates(struct fab_port *out, uint32_t cand[FAB_NVL], uint16_t *has_data);
void eth_sw_take(struct fab_port *out, uint32_t pkt);
void eth_sw_sent(struct fab_port *out);

/* hca.c: the traffic edge */
int hca_init(struct fab *f, struct fab_node *n);
void hca_fini(struct fab_node *n);
uint16_t hca_candidates(struct fab_port *pt, uint32_t blocks[FAB_NVL], uint16_t *has_data);
/* Build the next packet on VL vl (the one hca_candidates sized). */
uint32_t hca_take(struct fab_port *pt, uint8_t vl);
void hca_sent(struct fab_port *pt);
/* The tail of a packet reached this HCA. */
void hca_receive(struct fab_port *pt, uint32_t pkt);

/* What fab_create's one pass over the message list learns for the set-up. */
struct fab_scan {
	uint32_t *count;	/* messages per stream */
	uint32_t *first;	/* each stream's first message, in list order */
	uint32_t nfirst;
	size_t waiting;		/* messages that wait for another */
};

/* fab_traffic.c: a QP pair per stream, in the order of sc->first */
int fab_traffic_setup(struct fab *f, const struct fab_scan *sc);
void fab_traffic_free(struct fab *f);
void fab_traffic_schedule(struct fab *f, uint32_t mi, sim_time_t t);

/* fab_deadlock.c: when the fabric stalls with packets still buffered,
 * explain why (e.g. the cycle of ports waiting for each other's credits)
 * into buf; an empty string when there is nothing to add. */
void fab_deadlock_explain(const struct fab *f, char *buf, size_t len);

/* fab.c */
/* Stop the run with an error (out of memory, a broken invariant). */
void fab_fail(struct fab *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Drop packet idx (counted), marking its message lost. Data VLs never drop
 * for lack of buffer: the credit checker fails the run before that. */
enum fab_drop { FAB_DROP_VL15, FAB_DROP_ROUTE, FAB_DROP_CORRUPT, FAB_DROP_CONGESTION };
void fab_pkt_drop(struct fab *f, uint32_t idx, enum fab_drop why);

#include "models/ib/ib_credit.h"

static inline bool ib_port_fits(const struct fab_port *pt, uint8_t vl, uint32_t blocks)
{
	if (pt->eth)
		return eth_port_fits(pt, vl);
	if (vl == 15)
		return true;	/* VL15 is not flow controlled */
	return ib_credit_fits(pt->vl[vl].fccl, pt->vl[vl].fctbs, blocks);
}

#endif
