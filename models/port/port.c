/* SPDX-License-Identifier: MIT */
/*
 * port.c - one end of a link: transmitter, wire, credits, receiver.
 *
 * What it models (IBA vol. 1 ch. 7, link layer):
 *  - the transmitter serialises one packet at a time at the link's exact
 *    data rate; when idle it asks its node (switch or HCA) for the candidate
 *    packet of each VL, keeps only those whose every block fits the credit
 *    limit (7.9.4.3), and lets VL arbitration (7.6.9) choose;
 *  - the wire is a FIFO of packets in flight with a constant propagation
 *    delay; only the head's arrival is scheduled (docs/architecture.md). A packet
 *    bound for a switch "arrives" when its head has crossed the wire and the
 *    switch pipeline (virtual cut-through: forwarding may start before the
 *    tail is in); one bound for an HCA arrives when its tail is in;
 *  - the receiver counts blocks per VL in its buffer; when a packet leaves
 *    the buffer its blocks are freed and a flow-control packet carrying the
 *    new FCCL goes back over the reverse direction (when the freed blocks
 *    reach ib.fc_threshold, and/or every ib.fc_period_ns). An FC packet
 *    waits for the reverse transmitter's current packet to end, then takes
 *    6 bytes of wire time plus propagation. FC packets still waiting to
 *    depart are coalesced (the later FCCL replaces the earlier), as a real
 *    link sends the current value when it gets the chance;
 *  - credits are applied lazily: FC packets in flight sit on the link
 *    (the sender's fcq) and the sender takes in every one that has landed
 *    whenever it looks at its credits. Only a sender blocked on credits
 *    needs an event, at the landing time of the next FC packet: a third
 *    fewer events than one per FC packet, and the same decisions (every
 *    decision sees exactly the FC packets that have arrived by then).
 *    The receiver decides alone what it sends (coalescing by its own
 *    fc_held); what the sender does with an FC packet it is given
 *    (port_fc_take: queue it, wake itself if it waits for credits) is the
 *    sender's. Within one partition the receiver hands it over at once;
 *    across partitions (port.cut, or sim.cut_links on every link) it
 *    travels as an event of the sender, due when the FC packet has crossed
 *    the cable and before it lands (look-ahead: the propagation delay).
 *    The wake has one key, whoever arms it (port_fc_arm), so both ways
 *    give the same run; only the count of events differs.
 * What it leaves out: the 6 bytes of bandwidth an FC packet takes from the
 * reverse data stream (at most one per data packet: < 0.15% at MTU 4096);
 * link errors and the FCTBS/ABR resynchronisation they need (no errors are
 * modelled, so ABR always equals the blocks received).
 *
 * PortXmitWait (PMA, IBA 16.1.3.5) accumulates the time the port had a
 * packet to send and sent nothing because no VL had the credits for it;
 * the per-VL figure (PortVLXmitWait) splits it by the VLs that were blocked.
 *
 * The same transmitter, wire and receiver serve the Ethernet fabrics: there
 * a port has a `link` (models/eth/eth_port.c), "fits" means "not paused by
 * PFC" instead of credits, the link's pick() replaces VL arbitration, the
 * receiver's freed cells may send XON instead of an FC packet. The IB
 * paths only test a NULL pointer. What a port's node does with packets
 * (an HCA, an IB switch, Ethernet's output-queued switch) is its node
 * kind's table (port.h): this file names none of them.
 */
#include "models/port/port.h"

#include "models/core/fab_core.h"
#include "models/port/port.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/link/link.h"
#include "sim/sim_log.h"

void port_pq_push(struct fab *f, struct port_pq *q, uint32_t idx)
{
	fab_pkt(f, idx)->next = SIM_POOL_NIL;
	if (q->len)
		fab_pkt(f, q->tail)->next = idx;
	else
		q->head = idx;
	q->tail = idx;
	q->len++;
}

uint32_t port_pq_pop(struct fab *f, struct port_pq *q)
{
	uint32_t idx = q->head;

	if (!q->len)
		return SIM_POOL_NIL;
	q->head = fab_pkt(f, idx)->next;
	if (!--q->len)
		q->head = q->tail = SIM_POOL_NIL;
	return idx;
}

int port_fc_ring_room(struct port_fc_ring *r)
{
	if (!r->n && r->v != &r->one) {
		/* Drained: back to the entry in the port's line. */
		r->v = &r->one;
		r->cap = 1;
		r->head = 0;
	}
	if (r->n < r->cap)
		return 0;
	struct port_fc *nv = r->spill;
	uint32_t cap = r->spill_cap;

	if (r->v == r->spill || !nv) {
		/* Grow: a fresh ring twice the size (at least 8). The 16-bit
		 * counts suffice: each FC packet in flight frees at least one
		 * block of a buffer of at most 2,048 (IB_CREDIT_WINDOW), so at
		 * most 15 x 2,048 are in flight, below 32,768. */
		cap = r->cap < 8 ? 8 : (uint32_t)r->cap * 2;
		if (cap > UINT16_MAX / 2 + 1 || !(nv = malloc(cap * sizeof(*nv))))
			return -1;
	}
	for (uint32_t i = 0; i < r->n; i++)
		nv[i] = *port_fc_ring_at(r, i);
	if (nv != r->spill) {
		free(r->spill);
		r->spill = nv;
		r->spill_cap = (uint16_t)cap;
	}
	r->v = nv;
	r->head = 0;
	r->cap = (uint16_t)cap;
	return 0;
}

void port_fc_ring_init(struct port_fc_ring *r)
{
	*r = (struct port_fc_ring){ .v = &r->one, .cap = 1 };
}

void port_fc_ring_free(struct port_fc_ring *r)
{
	free(r->spill);
	port_fc_ring_init(r);
}

int port_init(struct fab *f, struct port *pt)
{
	const struct fab_params *p = &f->p;
	bool hca = pt->node->type != NET_SWITCH;
	/* Both ends of a SHARP aggregation node's port carry one stream per
	 * 4x of its width: each stream gets a cable's buffer, or the credits
	 * would cap them (the buffer must cover rate x round trip). That link
	 * is the switch's own data path, not an IB link, so its credits are
	 * that whole buffer (wide): IB's 12-bit FCCL would cap any link at
	 * 2,048 blocks, 128 KiB - four streams' worth - and an aggregation
	 * node of 32 children sent at half its width. */
	bool internal = f->net->nodes[pt->node->idx].ports[pt->port_no].internal;
	uint32_t scale = internal && pt->rate.lanes > 4 ? pt->rate.lanes / 4u : 1u;

	pt->wide = internal;
	/* a switch's input from its aggregation node queues per output
	 * whatever switch.queues says (sw.c): the node's results go to the
	 * switch's outputs from within, and none waits behind another's */
	pt->voq = pt->is_sw && (p->sw_voq || internal);

	/* a switch input feeds switch.speedup outputs at once; an aggregation
	 * node's port every child at once (the switch replicates its result) */
	pt->speedup = internal ? pt->rate.lanes : p->sw_speedup;
	port_fc_ring_init(&pt->fcq);
	for (int v = 0; v < PORT_NVL; v++) {
		pt->vl[v].inq.head = pt->vl[v].inq.tail = SIM_POOL_NIL;
		if (v < p->vls)
			pt->vl[v].rx_cap = scale * ((hca ? p->hca_buf_bytes : p->vl_buf_bytes) /
						    IB_BLOCK_BYTES);
	}
	pt->vl[15].rx_cap = p->vl15_buf_bytes / IB_BLOCK_BYTES;
	ib_vlarb_init(&pt->vlarb, &p->vlarb);
	pt->ps_per_byte = link_ps_per_byte(pt->rate);
	sim_rng_init(&pt->rng, f->seed, 0x504f525400000000ULL |
		     ((uint64_t)pt->node->idx << 8) | pt->port_no);
	return 0;
}

/* Link initialisation: each sender learns the peer's empty buffer (7.9.4). */
void port_link_up(struct port *pt)
{
	for (int v = 0; v < PORT_NVL - 1; v++) {
		uint32_t cap = pt->peer->vl[v].rx_cap;

		pt->vl[v].limit_abs = cap < IB_CREDIT_WINDOW || pt->wide ? cap : IB_CREDIT_WINDOW;
		pt->vl[v].tx_cap = (uint32_t)pt->vl[v].limit_abs;
		pt->vl[v].fccl = (uint16_t)(pt->vl[v].limit_abs & IB_CREDIT_MASK);
	}
	/* the peer's receiver sends this port its FC packets */
	pt->fc_ser = link_ser_ps(pt->peer->rate, IB_FC_PKT_BYTES);
	pt->fc_delay = pt->fc_ser + pt->peer->prop;
	/* FC packets across partitions carry FCCL's 12 bits: a wide link's
	 * limit may move further between two; fab_cut keeps it whole */
	pt->cut = pt->fab->p.cut_links && !pt->wide;
}

/* One end of a link that goes down: FC packets to it are lost, and its
 * transmitter may take any packet (credits are not counted while down). */
static void end_down(struct port *pt)
{
	while (pt->fcq.n)
		port_fc_ring_pop(&pt->fcq);
	pt->down = true;
	pt->fc_held = 0;
	pt->fc_epoch = (pt->fc_epoch + 1) & 0x7f;
	for (int v = 0; v < PORT_NVL - 1; v++) {
		pt->vl[v].fccl = (uint16_t)((pt->vl[v].fctbs + IB_CREDIT_WINDOW) & IB_CREDIT_MASK);
		pt->vl[v].limit_abs = pt->vl[v].tx_blocks + IB_CREDIT_WINDOW;
	}
}

/*
 * One end of a link that comes up: its credits for the peer's buffer as
 * the buffer is (what it holds, and what is still on the wire to it). The
 * blocks sent (tx_blocks) are the blocks the peer has taken in (rx_blocks,
 * which counts those lost on arrival while the link was down as taken and
 * freed at once) and those still on the wire: the count stands, and the
 * limit follows the peer's buffer.
 */
static void end_up(struct port *pt)
{
	struct port *rx = pt->peer;

	while (pt->fcq.n)
		port_fc_ring_pop(&pt->fcq);
	pt->down = false;
	for (int v = 0; v < PORT_NVL - 1; v++) {
		uint64_t cap = rx->vl[v].rx_cap < IB_CREDIT_WINDOW || pt->wide ? rx->vl[v].rx_cap :
			       IB_CREDIT_WINDOW;

		pt->vl[v].fctbs = (uint16_t)(pt->vl[v].tx_blocks & IB_CREDIT_MASK);
		pt->vl[v].limit_abs = rx->vl[v].rx_freed + cap;
		if (pt->vl[v].limit_abs < pt->vl[v].tx_blocks)
			pt->vl[v].limit_abs = pt->vl[v].tx_blocks;
		pt->vl[v].fccl = (uint16_t)(pt->vl[v].limit_abs & IB_CREDIT_MASK);
		rx->vl[v].fc_pending = 0;
	}
}

/* Both ends may send at once (what they send is lost): a transmitter that
 * waited for credits when the link died would otherwise wait for ever
 * unless a new packet came for it, and with adaptive routing none does. */
void port_set_down(struct port *pt)
{
	end_down(pt);
	end_down(pt->peer);
	port_kick(pt);
	port_kick(pt->peer);
}

void port_set_up(struct port *pt)
{
	end_up(pt);
	end_up(pt->peer);
	port_kick(pt);
	port_kick(pt->peer);
}

void port_fini(struct port *pt)
{
	port_fc_ring_free(&pt->fcq);
}

/*
 * Close the current waiting interval (if any) and open a new one when the
 * port has data blocked on credits (`blocked`) and is sending nothing.
 */
static void port_wait_update(struct port *pt, uint16_t blocked)
{
	sim_time_t now = pt->fab->eng.now;

	if (pt->waiting) {
		sim_time_t dt = now - pt->wait_since;

		for (uint16_t m = pt->vl_waiting; m; m &= m - 1)
			pt->info.vl[__builtin_ctz(m)].xmit_wait_ps += dt;
		pt->waiting = false;
	}
	if (blocked) {
		pt->waiting = true;
		pt->wait_since = now;
		pt->vl_waiting = blocked;
	}
}

/* Take in every FC packet from the peer that has landed by now. */
static void port_apply_fc(struct port *pt)
{
	struct port_fc_ring *q = &pt->fcq;
	sim_time_t now = pt->fab->eng.now;

	while (q->n) {
		const struct port_fc *fc = port_fc_ring_at(q, 0);

		if (fc->arrive > now)
			break;
		struct port_vl *v = &pt->vl[fc->vl];

		v->fccl = (uint16_t)(fc->limit & IB_CREDIT_MASK);
		v->limit_abs += (uint32_t)(fc->limit - (uint32_t)v->limit_abs);
		port_fc_ring_pop(q);
	}
}

uint32_t port_credits_held(struct port *pt, uint8_t vl)
{
	port_apply_fc(pt);
	return pt->vl[vl].tx_cap - (uint32_t)(pt->vl[vl].limit_abs - pt->vl[vl].tx_blocks);
}

/* The engine component of this port's peer, without reading its lines. */
static inline uint32_t peer_comp(const struct port *pt)
{
	return pt->fab->port_comp0 + (uint32_t)(pt->peer - pt->fab->port_mem);
}

/*
 * Wake this transmitter where an FC packet for `vl` lands. The wake's key
 * (sim_timer_arm_key) is as if the peer's port, which sent the FC packet,
 * had scheduled it when the packet left (arrive - fc_delay), after all
 * else it scheduled then (bit 31), the VL telling apart the FC packets of
 * one departure: the same whether the transmitter arms it as it blocks
 * or the FC packet does as it reaches the transmitter (port_fc_take), in
 * this partition or from another one.
 */
static void port_fc_arm(struct port *tx, sim_time_t arrive, uint8_t vl)
{
	sim_timer_arm_key(&tx->fab->eng, &tx->fc_wake, arrive, tx->comp, PORT_EV_FC_WAKE,
			  arrive - tx->fc_delay,
			  (uint64_t)(peer_comp(tx) + 1) << 32 | 1u << 31 | vl);
}

/* Blocked on credits: wake at the next FC packet's landing, if one is coming. */
static void port_fc_wait(struct port *pt)
{
	const struct port_fc_ring *q = &pt->fcq;
	const struct port_fc *fc;

	if (!q->n)
		return;		/* the next FC packet will arm it (port_fc_take) */
	fc = &q->v[q->head & (q->cap - 1)];
	if (!pt->fc_wake.armed || fc->arrive < pt->fc_wake.when)
		port_fc_arm(pt, fc->arrive, fc->vl);
}

/*
 * Serialisation time of `bytes` on this port: a product where the rate is
 * a whole number of ps per byte (link_ps_per_byte), else through a
 * two-entry memo. A WRITE's first, middle and last packets and its ACKs
 * are four sizes, too many for the memo: link_ser_ps() divided
 * 128-bit numbers (and missed its rate table) for most packets.
 */
static inline sim_time_t port_ser(struct port *pt, uint32_t bytes)
{
	if (pt->ps_per_byte)
		return (sim_time_t)bytes * pt->ps_per_byte;
	if (pt->ser_bytes[0] == bytes)
		return pt->ser_ps[0];
	if (pt->ser_bytes[1] != bytes) {
		pt->ser_bytes[1] = (uint16_t)bytes;
		pt->ser_ps[1] = link_ser_ps(pt->rate, bytes);
	}
	/* Most recent first. */
	uint16_t b = pt->ser_bytes[1];
	sim_time_t t = pt->ser_ps[1];

	pt->ser_bytes[1] = pt->ser_bytes[0];
	pt->ser_ps[1] = pt->ser_ps[0];
	pt->ser_bytes[0] = b;
	pt->ser_ps[0] = t;
	return t;
}

uint32_t port_peer_comp(const struct port *pt)
{
	return peer_comp(pt);
}

/* Out of packet numbers for the arrival event (rare, kept out of line). */
static __attribute__((noinline, cold)) void port_wire_oom(struct fab *f)
{
	fab_fail(f, "more than %u packets in flight", PORT_WIRE_MAX_PKTS);
}

/* A packet's arrival: an event of the receiving port, the packet's index
 * in the argument's upper 24 bits (PORT_WIRE_MAX_PKTS). */
static inline uint32_t wire_arg(struct fab *f, uint32_t idx)
{
	if (__builtin_expect(idx >= PORT_WIRE_MAX_PKTS, 0))
		port_wire_oom(f);
	return idx << 8 | PORT_EV_WIRE_HEAD;
}

/*
 * A CA's packet to its own LID (IBA vol. 1 17.3.1: an HCA loops back a
 * packet sent to itself, without it appearing on the physical link and
 * without a switch). It takes its turn in the transmitter at the port's
 * rate, as the HCA's send pipeline does, but no credits, no wire, no
 * capture and no port counters; its tail is in when it has been
 * serialised. Rare, kept out of line.
 */
static __attribute__((noinline, cold)) void port_loopback(struct port *pt, uint32_t idx,
							  enum ib_vlarb_table table, sim_time_t end)
{
	struct fab *f = pt->fab;
	struct pkt *p = fab_pkt(f, idx);

	if (!pt->link)
		ib_vlarb_sent(&pt->vlarb, table, p->wire, p->blocks);
	pt->tx_busy = true;
	pt->tx_end = end;
	sim_schedule_at(&f->eng, end, pt->comp, PORT_EV_TX_DONE);
	p->t_event = p->t_tail = end;
	if (__builtin_expect(idx >= PORT_WIRE_MAX_PKTS, 0))
		port_wire_oom(f);
	sim_schedule_at(&f->eng, end, pt->comp, idx << 8 | PORT_EV_LOOP);
	SIM_LOG(SIM_LOG_LINK, f->eng.now, "node %d port %u loopback vl %u %u B until %llu",
		pt->node->idx, pt->port_no, p->vl, p->wire, (unsigned long long)end);
}

/*
 * A packet onto a link between partitions: its arrival carries a copy,
 * which the receiver's partition makes its own packet (port_import), and
 * the sender's goes back to its pool. No one reads a packet once it has
 * left (a switch output keeps where it came from in its own fields), so
 * the copy is all the receiver needs. Out of line: only cut links.
 */
static __attribute__((noinline)) void port_send_copy(struct port *pt, uint32_t idx)
{
	struct fab *f = pt->fab;
	const struct pkt *p = fab_pkt(f, idx);

	if (sim_schedule_copy(&f->eng, p->t_event, peer_comp(pt), PORT_EV_WIRE_HEAD, p, sizeof(*p)))
		fab_fail(f, "out of memory for packets between partitions");
	sim_pool_put(&f->pkts, idx);
}

uint32_t port_import(void *elem, uint32_t arg, const void *data, uint32_t len)
{
	struct port *pt = elem;
	struct fab *f = pt->fab;
	uint32_t idx = sim_pool_alloc(&f->pkts);

	if (idx == SIM_POOL_NIL) {
		fab_fail(f, "out of memory for packets");
		return PORT_EV_NONE;
	}
	(void)arg;
	memcpy(fab_pkt(f, idx), data, len);
	return wire_arg(f, idx);
}

static void port_start_tx(struct port *pt, uint32_t idx, enum ib_vlarb_table table)
{
	struct fab *f = pt->fab;
	struct pkt *p = fab_pkt(f, idx);
	sim_time_t now = f->eng.now;
	sim_time_t end = now + port_ser(pt, p->wire);
	uint8_t vl = p->vl;

	/* Cut-through: the last bit cannot leave before it has arrived. */
	if (pt->is_sw && end < p->t_tail)
		end = p->t_tail;
	if (__builtin_expect(pt->down, 0)) {
		/* a link that is down: taken at its rate, and lost */
		fab_pkt_drop(f, idx, FAB_DROP_LINK);
		pt->tx_busy = true;
		pt->tx_end = end;
		sim_schedule_at(&f->eng, end, pt->comp, PORT_EV_TX_DONE);
		return;
	}
	if (__builtin_expect(p->dlid == pt->lid, 0) && !pt->is_sw) {
		port_loopback(pt, idx, table, end);
		return;
	}
	if (pt->link) {
		/* another link layer: no credits, no VLArb (its pick() chose) */
	} else if (vl != 15) {
		pt->vl[vl].fctbs = (uint16_t)((pt->vl[vl].fctbs + p->blocks) & IB_CREDIT_MASK);
		pt->vl[vl].tx_blocks += p->blocks;
	}
	if (!pt->link)
		ib_vlarb_sent(&pt->vlarb, table, p->wire, p->blocks);
	pt->vl[vl].xmit_bytes += p->wire;
	pt->vl[vl].xmit_pkts++;
	pt->busy_ps += end - now;
	pt->tx_busy = true;
	pt->tx_end = end;
	sim_schedule_at(&f->eng, end, pt->comp, PORT_EV_TX_DONE);

	/* Onto the wire. */
	f->tot.packet_hops++;
	if (pt->tap)	/* a capture (fab_set_tap): its first bit leaves now */
		f->tap_fn(f->tap_ctx, (int)(pt->comp - f->port_comp0), p, now);
	if (pt->peer_is_sw)
		p->t_event = now + pt->prop + f->sw_lat;
	else
		p->t_event = end + pt->prop;
	p->t_tail = end + pt->prop;
	p->next = SIM_POOL_NIL;
	/* its arrival, an event of the peer: the wire holds no state of its
	 * own, so the link is the only thing the two ends share */
	if (__builtin_expect(pt->cut, 0))
		port_send_copy(pt, idx);
	else
		sim_schedule_at(&f->eng, p->t_event, peer_comp(pt), wire_arg(f, idx));
	SIM_LOG(SIM_LOG_LINK, now, "node %d port %u tx vl %u dlid %u %u B until %llu",
		pt->node->idx, pt->port_no, vl, p->dlid, p->wire,
		(unsigned long long)end);
}

void port_kick(struct port *pt)
{
	uint32_t cand[PORT_NVL];
	uint16_t ready, has_data = 0;
	struct fab *f = pt->fab;

	if (pt->tx_busy)
		return;
	const struct port_node_ops *node = f->node_ops[pt->kind];

	if (pt->link)
		pt->link->ops->prepare(pt);
	else
		port_apply_fc(pt);
	ready = node->candidates(pt, cand, &has_data);
	if (!has_data) {
		port_wait_update(pt, 0);
		return;
	}
	enum ib_vlarb_table table = IB_VLARB_LOW;
	int vl = !ready ? -1 : pt->link ? pt->link->ops->pick(pt, ready) :
		 ib_vlarb_pick(&pt->vlarb, &f->p.vlarb, &f->vlarb_map, ready, &table);

	if (vl < 0) {
		/* Data, but nothing fits its credits (or all of it is paused):
		 * PortXmitWait runs. */
		if (!pt->waiting || pt->vl_waiting != (has_data & ~ready))
			port_wait_update(pt, has_data & ~ready ? has_data & ~ready : has_data);
		if (pt->link)
			pt->link->ops->blocked(pt, has_data);
		else
			port_fc_wait(pt);
		SIM_LOG(SIM_LOG_CREDIT, f->eng.now, "node %d port %u blocked: data vls 0x%x ready 0x%x",
			pt->node->idx, pt->port_no, has_data, ready);
		return;
	}
	port_wait_update(pt, 0);
	SIM_LOG(SIM_LOG_VLARB, f->eng.now, "node %d port %u ready 0x%x -> vl %d (%s)",
		pt->node->idx, pt->port_no, ready, vl,
		table == IB_VLARB_HIGH ? "high" : table == IB_VLARB_LOW ? "low" : "vl15");
	uint32_t idx;

	/* Busy from here: taking a packet may kick other ports (a switch
	 * input below its speedup offers its next head), and a kick that
	 * comes back to this port must not start a second packet. */
	pt->tx_busy = true;
	idx = node->take(pt, (uint8_t)vl, cand[vl]);
	if (idx == SIM_POOL_NIL)
		return;		/* out of memory: the run is failing */
	port_start_tx(pt, idx, table);
}

/* Out of memory for an FC packet: the run stops (rare, kept out of line). */
static __attribute__((noinline, cold)) void port_fc_oom(struct fab *f)
{
	f->failed = true;
	sim_diag_set(&f->fail, NULL, 0, 0, "out of memory for flow-control packets");
	sim_halt(&f->eng);
}

/* port_apply_fc() for a transmitter whose queue of FC packets is full:
 * out of line, so that port_fc_take() (every FC packet) stays small. */
static __attribute__((noinline)) void port_apply_fc_full(struct port *tx)
{
	port_apply_fc(tx);
}

/*
 * The transmitter tx is given an FC packet of its peer's receiver that
 * lands at `arrive`, or (update) the later limit for one still in flight
 * (it waited behind the same data packet). Run by the receiver's event in
 * one partition, by tx's own (PORT_EV_FC_MSG) across partitions. Inline:
 * a call per FC packet cost 1% of the instructions of a ring allreduce.
 */
static inline __attribute__((always_inline)) void
port_fc_take(struct port *tx, sim_time_t arrive, uint32_t limit, uint8_t vl, bool update)
{
	struct port_fc_ring *q = &tx->fcq;
	struct port_fc *e;

	if (update) {
		for (uint32_t i = q->n; i-- > 0;) {
			e = port_fc_ring_at(q, i);
			if (e->arrive != arrive)
				break;
			if (e->vl == vl) {
				e->limit = limit;
				return;
			}
		}
		return;		/* not there: lost with its link (end_down) */
	}
	/* An idle sender takes in its FC packets only when it next has data:
	 * those landed meanwhile would fill its queue. Applying them now is
	 * what its next kick would do first, and keeps the queue to the FC
	 * packets really in flight (nearly always one: the port's own line). */
	if (q->n == q->cap)
		port_apply_fc_full(tx);
	e = port_fc_ring_add(q);
	if (!e) {
		port_fc_oom(tx->fab);
		return;
	}
	e->arrive = arrive;
	e->limit = limit;
	e->vl = vl;
	/* Only a sender waiting for credits needs telling. */
	if (tx->waiting && !tx->tx_busy && (!tx->fc_wake.armed || arrive < tx->fc_wake.when))
		port_fc_arm(tx, arrive, vl);
}

/*
 * An FC packet as an event of the transmitter (port.cut), in the
 * argument above the tag: the update flag (bit 8), the VL (4 bits), the
 * FCCL (12 bits) and the link's down count (7 bits). It is due when the
 * FC packet has crossed the cable, fc_ser before it lands. FCCL's 12 bits
 * say the limit: it rises by at most 2,048 blocks between two FC packets
 * of one VL (IB_CREDIT_WINDOW; IBA 7.9.4.3 relies on this too).
 */
static inline uint32_t port_fc_msg_arg(const struct port *pt, uint32_t limit, uint8_t vl,
				       bool update)
{
	return (uint32_t)pt->fc_epoch << 25 | (limit & IB_CREDIT_MASK) << 13 |
	       (uint32_t)vl << 9 | (uint32_t)update << 8 | PORT_EV_FC_MSG;
}

static __attribute__((noinline)) void port_fc_msg(struct port *tx, uint32_t arg)
{
	uint8_t vl = (arg >> 9) & 0xf;
	uint32_t fccl = (arg >> 13) & IB_CREDIT_MASK;
	uint32_t base = (uint32_t)tx->vl[vl].limit_abs;
	const struct port_fc_ring *q = &tx->fcq;

	if (tx->down || (arg >> 25) != tx->fc_epoch)
		return;		/* sent before its link went down: lost */
	for (uint32_t i = q->n; i-- > 0;)
		if (port_fc_ring_at(q, i)->vl == vl) {
			base = port_fc_ring_at(q, i)->limit;
			break;
		}
	port_fc_take(tx, tx->fab->eng.now + tx->fc_ser, base + ((fccl - base) & IB_CREDIT_MASK),
		     vl, (arg >> 8) & 1);
}

static void port_send_fc(struct port *pt, uint8_t vl)
{
	struct fab *f = pt->fab;
	sim_time_t now = f->eng.now;
	uint32_t free_blocks = pt->vl[vl].rx_cap - pt->vl[vl].rx_used;
	/* FCCL = (ABR + free, at most the window) mod 4096: the low bits of
	 * the limit (ib_credit_fccl); a wide link advertises all its free
	 * buffer (port_init) */
	uint32_t limit = (uint32_t)pt->vl[vl].rx_blocks +
			 (free_blocks < IB_CREDIT_WINDOW || pt->wide ? free_blocks : IB_CREDIT_WINDOW);
	struct port *tx = pt->peer;	/* the data's sender, to whom this FC packet goes */
	/* It waits for this port's current packet to end, if one is going
	 * out: one that waits already for this VL carries the later limit. */
	bool behind = pt->tx_busy && pt->tx_end > now;
	bool update = behind && (pt->fc_held >> vl & 1);
	sim_time_t arrive = (behind ? pt->tx_end : now) + tx->fc_delay;

	pt->vl[vl].fc_pending = 0;
	if (pt->down)
		return;		/* lost: the link trains afresh when it comes up */
	if (!update) {
		if (behind)
			pt->fc_held |= (uint16_t)(1u << vl);
		if (!++pt->vl[vl].fc_sent)
			pt->vl[vl].fc_sent_wraps++;
		f->tot.fc_pkts++;
	}
	if (__builtin_expect(pt->cut, 0))
		/* keyed in the order they are sent: two sent at one instant by
		 * the events of two switch ports would otherwise go by those
		 * ports' order */
		sim_schedule_key(&f->eng, arrive - tx->fc_ser, peer_comp(pt),
				 port_fc_msg_arg(pt, limit, vl, update), arrive - tx->fc_delay,
				 (uint64_t)(pt->comp + 1) << 32 | 1u << 31 |
				 (pt->fc_msgs++ & 0x7fffffffu));
	else
		port_fc_take(tx, arrive, limit, vl, update);
	SIM_LOG(SIM_LOG_CREDIT, now, "node %d port %u FC vl %u fccl %u (free %u blocks)",
		pt->node->idx, pt->port_no, vl, limit & IB_CREDIT_MASK, free_blocks);
}

void port_rx_free(struct port *pt, uint8_t vl, uint32_t blocks)
{
	const struct fab_params *p = &pt->fab->p;

	pt->vl[vl].rx_used -= blocks;
	pt->vl[vl].rx_freed += blocks;
	if (pt->fab->port_links) {	/* pt->link is set: read only now (line 2) */
		pt->link->ops->egress(pt, vl);
		return;
	}
	if (vl == 15)
		return;
	pt->vl[vl].fc_pending += blocks;
	if (p->fc_threshold && pt->vl[vl].fc_pending >= p->fc_threshold)
		port_send_fc(pt, vl);
	else if (p->fc_period_ns && !pt->fc_timer.armed)
		sim_timer_arm(&pt->fab->eng, &pt->fc_timer,
			      pt->fab->eng.now + (sim_time_t)p->fc_period_ns * SIM_NS,
			      pt->comp, PORT_EV_FC_TIMER);
}

/*
 * Fault injection: does this packet arrive with a bad CRC? With a drop
 * probability d and a bit error rate b, P = 1 - (1 - d)(1 - b)^bits.
 */
static bool port_corrupt(struct port *rx, const struct pkt *p)
{
	const struct fab *f = rx->fab;
	double drop = f->p.drop_prob, ber = f->p.ber;

	if (f->port_fault) {	/* a link[...] setting: this receiver's own */
		const struct fab_port_fault *pf = &f->port_fault[rx->comp - f->port_comp0];

		drop = pf->drop_prob;
		ber = pf->ber;
		if (!(drop > 0 || ber > 0))
			return false;	/* a clean cable draws nothing */
	}
	double ok = 1.0 - drop;

	if (ber > 0)
		ok *= exp((double)p->wire * 8 * log1p(-ber));
	return sim_rng_double(&rx->rng) >= ok;
}

/* Packet idx reaches this port's receiver over the wire (an event of the
 * receiver, scheduled by the sender when the packet left it). */
static void port_wire_head(struct port *rx, uint32_t idx)
{
	struct fab *f = rx->fab;
	struct pkt *p = fab_pkt(f, idx);
	uint8_t vl = p->vl;

	if (__builtin_expect(rx->down, 0)) {
		/* on the wire when it went down: lost, its blocks taken and
		 * freed at once (the sender counted them: end_up) */
		if (vl != 15) {
			rx->vl[vl].rx_blocks += p->blocks;
			rx->vl[vl].rx_freed += p->blocks;
		}
		fab_pkt_drop(f, idx, FAB_DROP_LINK);
		return;
	}
	if (vl == 15 && !rx->link && rx->vl[15].rx_used + p->blocks > rx->vl[15].rx_cap) {
		/* VL15 is not flow controlled: a full buffer drops (IBA 7.9.4). */
		rx->info.vl[15].xmit_discards++;
		fab_pkt_drop(f, idx, FAB_DROP_VL15);
		return;
	}
	rx->vl[vl].rx_used += p->blocks;
	rx->vl[vl].rx_blocks += p->blocks;
	if ((f->p.drop_prob > 0 || f->p.ber > 0 || f->port_fault) && port_corrupt(rx, p)) {
		/* A bad CRC: the receiver takes the blocks, finds the error at
		 * the tail, discards the packet and frees them (IBA 7.8). */
		rx->info.vl[vl].rcv_errors++;
		port_rx_free(rx, vl, p->blocks);
		fab_pkt_drop(f, idx, FAB_DROP_CORRUPT);
		return;
	}
	if (rx->vl[vl].rx_used > rx->vl[vl].rx_cap && !rx->link && !f->failed) {
		f->failed = true;
		sim_diag_set(&f->fail, NULL, 0, 0,
			     "credit violation: node %d port %u VL %u holds %u blocks > buffer %u",
			     rx->node->idx, rx->port_no, vl, rx->vl[vl].rx_used, rx->vl[vl].rx_cap);
		sim_halt(&f->eng);
	}
	uint32_t bytes = rx->vl[vl].rx_used * IB_BLOCK_BYTES;

	if (bytes > rx->vl[vl].buf_high)
		rx->vl[vl].buf_high = bytes;
	rx->vl[vl].rcv_bytes += p->wire;
	rx->vl[vl].rcv_pkts++;
	f->node_ops[rx->kind]->receive(rx, idx);
}

/*
 * The engine's look-ahead (sim_range_prefetch), one event before the port's
 * event (arg) runs and with its lines 0 and 1 in the cache: ask for the next
 * links of the chain the handler will walk. A packet lands here: the
 * packet (named by the event), this port's VL 0 receive line (most traffic
 * rides VL 0; another VL's line costs what it did), the sender's line 0
 * (the wire), and, from the packet (asked for an event before this, by
 * port_prefetch_early), its next step: the QP at a CA, the output port at
 * a switch (the node's rx_prefetch). A CA takes the packet whole at once
 * and returns its credits then: the sender's line 2, where the FC packet
 * queues.
 * The transmitter is done:
 * its lines 1 and 2 (arbiter and rate, then credits), read when it starts
 * the next packet; at a switch the input whose buffer the packet leaves
 * (tx_src: its line 0 and the VL's receive line, which the credits it
 * returns are counted on); at a CA's port the HCA and the QP it will likely
 * send from (tx_hint). Reads this port's lines 0 and 1, the packet pool's
 * table of chunks, and changes nothing.
 */
void port_prefetch(const void *ctx, uint32_t arg)
{
	const struct port *pt = ctx;

	switch (arg & 0xff) {
	case PORT_EV_WIRE_HEAD: {
		/* pt receives: the packet and this port's VL 0 receive line */
		const struct port_node_ops *node = pt->fab->node_ops[pt->kind];

		__builtin_prefetch(fab_pkt(pt->fab, arg >> 8), 1);
		__builtin_prefetch(&pt->vl[0].rx_blocks, 1);
		if (!pt->is_sw) {
			/* A CA: the sender's lines 0 and 2 (whether it is busy,
			 * its FC queue), which its credits join at once
			 * (port_send_fc) */
			__builtin_prefetch(pt->peer, 1);
			__builtin_prefetch(&pt->peer->fc_delay, 1);
		}
		/* where the packet goes next, as the packet (asked for an
		 * event ago: port_prefetch_early) says: the QP at a CA, the
		 * output at a switch */
		if (node->rx_prefetch)
			node->rx_prefetch(pt, fab_pkt(pt->fab, arg >> 8));
		break;
	}
	case PORT_EV_TX_DONE:
		/* line 2; the engine asked for line 1 (the arbiter) with line 0;
		 * and VL 0's credits, which starting the next packet checks
		 * (port_fits) and FC packets come back to (most traffic rides
		 * VL 0; another VL's line costs what it did) */
		__builtin_prefetch(&pt->fc_delay, 1);
		__builtin_prefetch(&pt->vl[0], 1);
		/* A switch's output: the input the packet leaves, whose buffer
		 * it frees (sw_sent). It pays only because the engine asks for
		 * line 1, where tx_src is, with line 0: read uncached here it
		 * stalled, and the ring's traffic lost more than this won. */
		if (pt->is_sw && pt->tx_src) {
			__builtin_prefetch(pt->tx_src, 1);
			__builtin_prefetch(&pt->tx_src->vl[pt->tx_src_vl].rx_blocks, 1);
			/* and the sender upstream, to which the credits go
			 * (port_send_fc): its lines 0 and 2 */
			__builtin_prefetch(pt->tx_fc, 1);
			__builtin_prefetch(&pt->tx_fc->fc_delay, 1);
		}
		/* what the node's arbiter reads choosing the next packet */
		if (pt->fab->node_ops[pt->kind]->tx_prefetch)
			pt->fab->node_ops[pt->kind]->tx_prefetch(pt);
		/* A CA's port: the HCA's line 0, the QP's lines 0 and 1
		 * (scheduling, send queue) and the WQE's line 0 that choosing
		 * and building the next packet read, all at once rather than as
		 * the chain port -> HCA -> QP -> WQE. */
		if (!pt->is_sw && pt->tx_hint) {
			__builtin_prefetch(pt->hca, 1);
			__builtin_prefetch(pt->tx_hint, 1);
			__builtin_prefetch((const char *)pt->tx_hint + 64, 1);
			if (pt->tx_hint_wqe)
				__builtin_prefetch(pt->tx_hint_wqe, 1);
		}
		break;
	default:
		break;
	}
}

/* A switch's output a packet is queued for (and kicks when idle): its
 * lines 0-2 and its VL 0 credits. */
void port_prefetch_output(const struct port *out)
{
	__builtin_prefetch(out, 1);
	__builtin_prefetch(&out->vlarb, 1);
	__builtin_prefetch(&out->fc_delay, 1);
	__builtin_prefetch(&out->vl[0], 1);
}

/*
 * Two events before an event of a port (sim_range_prefetch_early), with
 * only the fabric and the event's argument: a packet's arrival asks for
 * the packet's two lines, so that the hook of the next stage (above) can
 * read which QP it is for and ask for that. Reads the packet pool's table
 * of chunks, and changes nothing.
 */
void port_prefetch_early(const void *ctx, uint32_t arg)
{
	const struct fab *f = ctx;

	if ((arg & 0xff) == PORT_EV_WIRE_HEAD) {
		const char *p = (const char *)fab_pkt(f, arg >> 8);

		__builtin_prefetch(p, 1);
		__builtin_prefetch(p + 64, 1);
	}
}

/* What a partitioned run sends a node in place of a call (a report of a
 * message's fate to its source, a receive to post): events one list has
 * not (sim_aside). Out of the handler's way: rare. */
static __attribute__((noinline, cold)) void port_cross(struct port *pt, uint32_t arg)
{
	struct fab *f = pt->fab;

	sim_aside(&f->eng);
	if ((arg & 0xff) == PORT_EV_RECV)
		f->hooks->recv(f, arg >> 8);
	else
		f->hooks->report(f, arg >> 8, f->eng.now - f->lookahead,
				 (arg & 0xff) == PORT_EV_REPORT_LOST ? FAB_REPORT_LOST : FAB_REPORT_DELIVERED);
}

void port_handler(struct sim_engine *eng, void *ctx, uint32_t arg)
{
	struct port *pt = ctx;

	(void)eng;
	switch (arg & 0xff) {
	case PORT_EV_TX_DONE:
		pt->tx_busy = false;
		pt->fc_held = 0;	/* the FC packets behind it have left */
		pt->fab->node_ops[pt->kind]->sent(pt);
		port_kick(pt);
		break;
	case PORT_EV_WIRE_HEAD:
		port_wire_head(pt, arg >> 8);
		break;
	case PORT_EV_LOOP:
		pt->fab->node_ops[pt->kind]->loopback(pt, arg >> 8);
		break;
	case PORT_EV_FC_MSG:
		port_fc_msg(pt, arg);
		break;
	case PORT_EV_NOTIFY:
		pt->fab->node_ops[pt->kind]->notify(pt, arg >> 8);
		break;
	case PORT_EV_REPORT_DELIVERED:
	case PORT_EV_REPORT_LOST:
	case PORT_EV_RECV:
		port_cross(pt, arg);
		break;
	case PORT_EV_NONE:
		break;
	case PORT_EV_FC_WAKE:
		if (sim_timer_fire(&pt->fc_wake, arg))
			port_kick(pt);
		break;
	case PORT_EV_FC_TIMER:
		if (!sim_timer_fire(&pt->fc_timer, arg))
			break;
		for (uint8_t v = 0; v < PORT_NVL - 1; v++)
			if (pt->vl[v].fc_pending)
				port_send_fc(pt, v);
		break;
	default:
		pt->link->ops->event(pt, arg);
		break;
	}
}

