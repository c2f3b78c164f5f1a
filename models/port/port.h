/* SPDX-License-Identifier: MIT */
/*
 * port.h - one end of a link, the component every fabric is made of: its
 * transmitter (each packet it puts on the wire is an arrival event of the
 * peer; a FIFO of flow-control packets in flight), the credit state for the receiver at
 * the other end, and its own receiver (per-VL buffer accounting and, at a
 * switch, the per-VL input queues). A port is one engine component; its
 * events are the transmitter finishing a packet, a packet of the peer's
 * wire arriving, credits arriving while it is blocked, its
 * periodic flow-control timer, and its link layer's own timers.
 *
 * Two tables plug into a port, set once when the fabric is built:
 *  - the node kind (struct port_node_ops): the node the port belongs to
 *    (an HCA, an InfiniBand switch, an Ethernet switch) offers the
 *    transmitter its candidate packet per VL, hands over the one VL
 *    arbitration chose, hears when it has left, and takes the packets that
 *    arrive. This is the pull model credits and VL arbitration need;
 *  - the link layer. InfiniBand's credits per VL and VL arbitration
 *    (IBA vol. 1 7.6.9, 7.9) are the port's own: their state is in every
 *    port (struct port_vl), and they run inline on the hot path. A port
 *    whose `link` is set runs another link layer instead (Ethernet's
 *    priorities, PFC and ECN: models/eth), through that link's ops.
 * The IB path tests one NULL pointer for it.
 */
#ifndef IBFAB_PORT_H
#define IBFAB_PORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "models/core/fab_stats.h"	/* struct fab_port_info: the counters a port keeps */
#include "models/ib/ib_credit.h"
#include "models/ib/ib_pkt.h"
#include "models/ib/ib_vlarb.h"
#include "models/link/link.h"
#include "sim/sim.h"
#include "sim/sim_rng.h"

#define PORT_NVL 16		/* VL 0..14 data, 15 management */

/* The port's events (the low byte of an event's argument). A link layer
 * numbers its own from PORT_EV_LINK. */
enum port_ev {
	PORT_EV_TX_DONE,	/* transmitter finished serialising its packet */
	PORT_EV_WIRE_HEAD,	/* a packet's head (at a switch) or tail (at a CA) arrives
				 * over the wire: the receiver's event, which its sender
				 * scheduled; the packet's index in the upper 24 bits */
	PORT_EV_FC_WAKE,	/* a blocked transmitter's credits arrive (sim_timer tag) */
	PORT_EV_FC_TIMER,	/* periodic flow-control update (sim_timer tag) */
	PORT_EV_LOOP,		/* a packet sent to this port's own LID is in (the
				 * packet's index in the upper 24 bits) */
	PORT_EV_REPORT_DELIVERED, /* a message this node sent (its index in the
				 * upper 24 bits) was delivered in another partition
				 * one look-ahead before now, */
	PORT_EV_REPORT_LOST,	/* or lost */
	PORT_EV_RECV,		/* post the receive of a message to this node, whose
				 * source is in another partition (its index in the
				 * upper 24 bits) */
	PORT_EV_NONE,		/* nothing (a packet from another partition that
				 * found no memory: the run is failing) */
	PORT_EV_FC_MSG,		/* an FC packet from the peer's receiver reaches this
				 * transmitter's side of the link, before it lands
				 * (port.fc_msg: port_fc_msg_arg) */
	PORT_EV_NOTIFY,		/* a notification from the peer switch reaches this port
				 * (an adaptive routing notification: sw.c; what it
				 * says in the upper 24 bits) */
	PORT_EV_LINK,		/* the first of the link layer's events */
};

/* Packets a run may have at once (an arrival event names its packet in
 * 24 bits): far above what fills every buffer of the largest fabrics. */
#define PORT_WIRE_MAX_PKTS (1u << 24)

/* A FIFO of pool-indexed packets linked through pkt.next. */
struct port_pq {
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
struct port_fc {
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
struct port_fc_ring {
	struct port_fc *v;		/* &one, or spill */
	struct port_fc *spill;
	uint16_t head, n, cap;		/* power-of-two capacity of v */
	uint16_t spill_cap;
	struct port_fc one;
};

void port_fc_ring_init(struct port_fc_ring *r);
void port_fc_ring_free(struct port_fc_ring *r);
/* port_fc_ring_add()'s slow path: back to `one` when drained, to the heap
 * ring (grown if needed) when full; 0, or -1 when out of memory. */
int port_fc_ring_room(struct port_fc_ring *r);

/* The i-th oldest (i < n). */
static inline struct port_fc *port_fc_ring_at(const struct port_fc_ring *r, uint32_t i)
{
	return &r->v[(r->head + i) & (r->cap - 1)];
}

/* A new newest entry for the caller to fill; NULL when out of memory. */
static inline struct port_fc *port_fc_ring_add(struct port_fc_ring *r)
{
	if ((r->n == r->cap || (!r->n && r->v != &r->one)) && port_fc_ring_room(r))
		return NULL;
	return &r->v[(r->head + r->n++) & (r->cap - 1)];
}

static inline void port_fc_ring_pop(struct port_fc_ring *r)
{
	r->head = (uint16_t)((r->head + 1) & (r->cap - 1));
	r->n--;
}

struct fab;
struct fab_node;
struct hca;
struct hca_qp;
struct hca_swqe;
struct ibcc_port;
struct port;

/*
 * A node kind: what a port's node does with the packets it sends and
 * receives. The builder keeps one table per kind (struct fab.node_ops) and
 * gives each port the index of its node's (port.kind).
 */
struct port_node_ops {
	/* The transmitter is idle: fill cand[vl] for every VL with a packet
	 * to send (a packet index, or at an HCA the packet's size in
	 * blocks), set *has_data to the VLs with data, and return those
	 * whose candidate fits its credits (port_fits). */
	uint16_t (*candidates)(struct port *pt, uint32_t cand[PORT_NVL], uint16_t *has_data);
	/* Arbitration chose VL vl: hand over its packet (cand is what
	 * candidates() put in cand[vl]); SIM_POOL_NIL when out of memory,
	 * the run then failing. */
	uint32_t (*take)(struct port *pt, uint8_t vl, uint32_t cand);
	/* The packet take() handed over has left the transmitter. */
	void (*sent)(struct port *pt);
	/* A packet arrived at this port's receiver: its head at a switch
	 * (after the pipeline latency: cut-through), its tail at an HCA. */
	void (*receive)(struct port *pt, uint32_t pkt);
	/* A packet this CA port sent to its own LID is in: looped back
	 * inside the node, never on the link and never in the receive
	 * buffer (IBA vol. 1 17.3.1). NULL for a switch. */
	void (*loopback)(struct port *pt, uint32_t pkt);
	/* A notification from the peer switch (PORT_EV_NOTIFY) reached this
	 * port, `what` being its 24 bits. NULL where none is ever sent: an
	 * HCA's port. */
	void (*notify)(struct port *pt, uint32_t what);
	/* The look-ahead (port_prefetch), one event before packet p, in the
	 * cache, arrives at this port: ask for the lines its receive will
	 * read (at an HCA, its QP's; at a switch, its output's); change
	 * nothing. Optional. */
	void (*rx_prefetch)(const struct port *pt, const struct pkt *p);
	/* The look-ahead one event before port pt's transmitter is done
	 * (PORT_EV_TX_DONE): ask for what choosing its next packet will
	 * read; change nothing. Optional. */
	void (*tx_prefetch)(const struct port *pt);
};


/*
 * A link layer other than InfiniBand's credits. Its state for a port
 * begins with a struct port_link, which port.link points to.
 */
struct port_link_ops {
	/* May the transmitter start a packet on VL (priority) vl now? */
	bool (*fits)(const struct port *pt, uint8_t vl);
	/* The transmitter is about to ask for candidates. */
	void (*prepare)(struct port *pt);
	/* Choose the VL to serve among `ready` (VL arbitration's place). */
	int (*pick)(struct port *pt, uint16_t ready);
	/* Data waits on `has_data` and none of it may go. */
	void (*blocked)(struct port *pt, uint16_t has_data);
	/* A packet left this receiver's buffer (rx_used has shrunk). */
	void (*egress)(struct port *rx, uint8_t vl);
	/* One of its events, numbered from PORT_EV_LINK. */
	void (*event)(struct port *pt, uint32_t arg);
};

struct port_link {
	const struct port_link_ops *ops;
};

/*
 * One virtual lane of a port end: the sender's credit state for the peer's
 * buffer of that VL, and this end's own receive buffer and input queue,
 * with the counters every packet bumps. A packet-hop on a large fabric is
 * a string of cache misses, so what one packet touches on one VL shares a
 * cache line: the first line is the transmitter's, the second the
 * receiver's (per-field arrays of 16 VLs put each field on its own line).
 * The counters are copied into fab_port_info when it is read (fab_port()).
 */
struct port_vl {
	/* transmitter: credits for the peer's receive buffer of this VL */
	uint64_t tx_blocks;		/* shadow of FCTBS, unwrapped */
	uint64_t limit_abs;		/* shadow of FCCL, unwrapped */
	uint64_t xmit_bytes, xmit_pkts;	/* PortXmitData, PortXmitPkts (bytes here) */
	uint64_t fc_sent_wraps;		/* times fc_sent wrapped past 2^32 */
	uint16_t fctbs;			/* FCTBS */
	uint16_t fccl;			/* the last FCCL received */
	uint32_t tx_cap;		/* the credits of an empty peer buffer (link up):
					 * tx_cap - (limit_abs - tx_blocks) are held
					 * downstream or on the wire */
	/* receiver (packets arriving from the peer), from byte 64 */
	uint64_t rx_blocks __attribute__((aligned(64)));	/* shadow of ABR, unwrapped */
	uint64_t rx_freed;		/* blocks freed since start */
	uint64_t rcv_bytes, rcv_pkts;	/* PortRcvData, PortRcvPkts */
	uint32_t rx_cap;		/* buffer capacity in blocks */
	uint32_t rx_used;		/* blocks occupied */
	uint32_t fc_pending;		/* blocks freed since the last FC update */
	uint32_t buf_high;		/* receive-buffer high-water mark, bytes */
	uint32_t fc_sent;		/* FC packets sent for this VL (mod 2^32: fc_sent_wraps) */
	struct port_pq inq;		/* switch input: packets queued on this VL */
} __attribute__((aligned(64)));

_Static_assert(sizeof(struct port_vl) == 128, "one line per side of a VL");

struct port {
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
	struct port *peer;
	struct hca *hca;		/* node->hca, or NULL at a switch */
	sim_time_t tx_end;
	uint32_t comp;			/* engine component id */
	net_lid_t lid;			/* this end's LID (its switch's at a switch port) */
	uint8_t port_no;
	uint8_t kind;			/* its node's kind: fab.node_ops[kind] */
	bool tx_busy;
	bool is_sw : 1, peer_is_sw : 1;	/* this end, the other end: a switch (else a CA) */
	bool has_ibcc : 1;		/* ibcc is set */
	bool tap : 1;			/* its packets go to fab.tap_fn as they leave (a capture) */
	bool down : 1;			/* its link is down (a fault): what it sends and
					 * what reaches it is lost (port_set_down) */
	bool cut : 1;			/* its link joins two partitions: its packets cross
					 * as copies, its FC packets as events (port.c) */
	bool wide : 1;			/* a SHARP aggregation node's internal link: its
					 * credits are the buffer, not IB's 12-bit window */
	bool voq : 1;			/* switch input: queued per output (sw.c) */
	uint8_t in_flight;		/* switch input: packets it is feeding to outputs now */
	uint8_t speedup;		/* switch input: in_flight's limit (switch.speedup; a
					 * SHARP aggregation node's port: the streams it carries) */
	/* a switch port */
	uint8_t tx_src_vl;
	uint8_t tx_src_blocks;
	uint16_t inq_vls;		/* switch input: VLs whose queue holds packets */
	uint16_t fc_held;		/* receiver: VLs with an FC packet waiting behind the
					 * transmitter's current packet (port_send_fc) */
	uint32_t rx_nqps;		/* a CA's port: hca.nqps, with rx_qps on line 1 */

	/* Line 1: the transmitter, when it starts a packet (line 0 is
	 * full) */
	struct ib_vlarb vlarb __attribute__((aligned(64)));
	uint32_t ps_per_byte;		/* link_ps_per_byte(rate): port_ser() without a division */
	sim_time_t prop;
	sim_time_t busy_ps;		/* fab_port_info.busy_ps, kept here (fab_port()) */
	/*
	 * The rest of line 1: as a sender, a switch port keeps where its
	 * packet came from (tx_src: to free its input buffer at TX_DONE;
	 * with cut-through the next hop may already hold, and relabel, it),
	 * a CA's port the QP whose packet is likely next and that QP's next
	 * send WQE (hca_hint_next: tx_hint, tx_hint_wqe). A switch port also
	 * keeps the port its FC packet will go to when the packet is sent
	 * (tx_fc: the input's peer, the sender upstream, whose lines 0 and 2
	 * port_send_fc reads and writes). Each port writes only its own.
	 * The hints are for the look-ahead (port_prefetch), never read through: they may be stale (a send
	 * queue that grew, a QP destroyed), and a prefetch of a stale address
	 * costs a line and nothing else. (Where a packet goes once received,
	 * the look-ahead asks the packet: the node's rx_prefetch.)
	 */
	union {
		struct port *tx_src;
		const struct hca_qp *tx_hint;
	};
	union {
		struct port *tx_fc;	/* a switch port */
		const struct hca_swqe *tx_hint_wqe;	/* a CA's */
	};
	/* A CA's port: its HCA's QPs by number (hca.qps, rx_nqps of them),
	 * so that the look-ahead finds the QP an arriving packet is for with
	 * one miss, not two (the HCA's line, then the array's) */
	struct hca_qp *const *rx_qps;

	/*
	 * Line 2: the transmitter, when it looks at its credits and sends,
	 * and all the peer's receiver touches here when it sends an FC
	 * packet (the queue with its usual one entry, its delay, whether
	 * this sender waits for it).
	 */
	sim_time_t fc_delay __attribute__((aligned(64)));	/* an FC packet's serialisation
								 * plus propagation */
	/* FC packets in flight to this port (sent by the peer's receiver):
	 * the sender takes in those that have landed (models/port/port.c) */
	struct port_fc_ring fcq;
	/* A link layer other than IB's credits (Ethernet: models/eth), else
	 * NULL. All ports of a fabric have one or none (fab.port_links says
	 * which without reading a port's line 2). */
	struct port_link *link;
	bool waiting;			/* PortXmitWait: data, and no VL has the credits */
	uint16_t vl_waiting;		/* VLs with data but no credits */

	/* Line 3: timers and what only some runs read */
	struct sim_timer fc_wake;	/* blocked on credits: when the next FC packet lands */
	struct sim_timer fc_timer;	/* receiver: periodic FC update */
	sim_time_t wait_since;		/* PortXmitWait: since when the port waits */
	struct link_rate rate;
	/* Where ps_per_byte is 0 (FDR, FDR10): link_ser_ps() divides 128-bit
	 * numbers, so remember the two sizes last serialised (a packet's
	 * wire size fits 16 bits) and their times */
	uint16_t ser_bytes[2];
	sim_time_t ser_ps[2];

	struct port_vl vl[PORT_NVL] __attribute__((aligned(64)));	/* per VL: credits, receive buffer, input queue */

	struct fab_port_info info;	/* public counters (fab.h) */
	struct sim_rng rng;		/* fault injection at this receiver */
	/* FC packets as events (cut): only those runs read these */
	sim_time_t fc_ser;		/* an FC packet's serialisation on the peer's side */
	uint8_t fc_epoch;		/* link-down count (mod 128): FC messages sent before
					 * the link went down are lost */
	uint32_t fc_msgs;		/* FC messages sent: their order (port_send_fc) */
	/* IB CC at a switch output (models/ib/ib_cc.c), else NULL: read
	 * only where has_ibcc (line 0) says so */
	struct ibcc_port *ibcc;
};

_Static_assert(offsetof(struct port, vlarb) == 64 && offsetof(struct port, fc_delay) == 128 &&
	       offsetof(struct port, tx_hint_wqe) < 128 && offsetof(struct port, tx_fc) < 128 &&
	       offsetof(struct port, waiting) < 192 && offsetof(struct port, fc_wake) == 192 &&
	       offsetof(struct port, vl) == 256,
	       "port's lines as its comments say");

/* A FIFO of packets (the switch's input queues). */
void port_pq_push(struct fab *f, struct port_pq *q, uint32_t idx);
uint32_t port_pq_pop(struct fab *f, struct port_pq *q);

int port_init(struct fab *f, struct port *pt);
/* Link initialisation: learn the peer's empty buffers as credits. */
void port_link_up(struct port *pt);
void port_fini(struct port *pt);
void port_handler(struct sim_engine *eng, void *ctx, uint32_t arg);
void port_prefetch(const void *ctx, uint32_t arg);
/* Two events before: the packet an arrival names (ctx: the fabric). */
void port_prefetch_early(const void *ctx, uint32_t arg);
/* For a node's rx_prefetch: the lines of the switch output a packet
 * will be queued for. */
void port_prefetch_output(const struct port *out);
/* The port range's import hook (sim_range_import): a packet from another
 * partition becomes this partition's own. */
uint32_t port_import(void *elem, uint32_t arg, const void *data, uint32_t len);
/* Try to start a packet on this port's transmitter (idle, credits allowing). */
void port_kick(struct port *pt);
/* The engine component of this port's peer (for a key naming it). */
uint32_t port_peer_comp(const struct port *pt);
/*
 * A link fault (models/fabric/fab_fault.c), on both ends of pt's cable.
 * Down: each transmitter still takes its packets at the link's rate but
 * they are lost (a switch discards what it routes to a port that is not
 * active, IBA 18.2.4.3, until the tables change), credits no longer count,
 * FC packets in flight are lost, and what was on the wire is lost when it
 * lands. Up: the link trains again (IBA 7.9.4): each sender's credit state
 * is set afresh from its peer's buffer as it is now.
 */
void port_set_down(struct port *pt);
void port_set_up(struct port *pt);

/* Release `blocks` of the receive buffer of VL vl at this port (packet left). */
void port_rx_free(struct port *pt, uint8_t vl, uint32_t blocks);

/* The blocks of the peer's buffer of VL vl that this transmitter has
 * filled and not had back by now: packets on the wire or waiting there,
 * and credits on their way back (every FC packet landed by now taken in,
 * so the figure is the same in one partition or cut across several). */
uint32_t port_credits_held(struct port *pt, uint8_t vl);

/* Can a packet of `blocks` go out on VL vl now? */
static inline bool port_fits(const struct port *pt, uint8_t vl, uint32_t blocks)
{
	if (pt->link)
		return pt->link->ops->fits(pt, vl);
	if (vl == 15)
		return true;	/* VL15 is not flow controlled */
	if (__builtin_expect(pt->wide, 0))	/* port_init: the limit, unwrapped */
		return pt->vl[vl].tx_blocks + blocks <= pt->vl[vl].limit_abs;
	return ib_credit_fits(pt->vl[vl].fccl, pt->vl[vl].fctbs, blocks);
}

#endif
