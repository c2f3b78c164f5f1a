/* SPDX-License-Identifier: MIT */
/*
 * eth_port.c - one end of an Ethernet link on the RoCE and TCP fabrics:
 * priority flow control (IEEE 802.1Qbb) and the transmitter's choice
 * between priorities.
 *
 * What it models:
 *  - a receiver counts, per priority, the 64-byte cells it holds (the same
 *    rx_used counters the IB receiver keeps in credit blocks; switch MMUs
 *    account in cells of this order too). With PFC on (fabric=roce), when
 *    a data priority's count passes eth.pfc_xoff the receiver sends an
 *    XOFF frame for it upstream, with eth.pfc_quanta pause quanta (one
 *    quantum = 512 bit times at the link's rate), and refreshes it at half
 *    that time while still above eth.pfc_xon; at or below eth.pfc_xon it
 *    sends XON (a frame with zero quanta). What arrives in the meantime
 *    fills the headroom (eth_sw.c reserves it);
 *  - a PFC frame is a 64-byte MAC control frame: it waits for the packet
 *    the reverse transmitter is sending (it cannot pre-empt it), then takes
 *    84 bytes of wire time (with preamble and gap) plus propagation;
 *  - the transmitter starts nothing on a paused priority. Frames are applied
 *    lazily, as IB credits are (models/port/port.c): in flight they sit in
 *    the transmitter's queue and it takes in every one that has landed
 *    when it looks; only a transmitter with all its data paused needs an
 *    event, at the next landing or the earliest pause expiry. The receiver
 *    hands its frame over at once (eth_pfc_take, the transmitter's step)
 *    or, across partitions (port.cut), as an event of the transmitter
 *    due when the frame has crossed the cable; the wakes are keyed by the
 *    frames that cause them (eth_wake_arm), so both ways give one run;
 *  - between ready priorities: CNPs (ETH_CNP_PRIO) strictly first, then
 *    eth.sched: strict priority (highest first) or round robin per packet.
 * Paused time (per port and priority) counts from the frame's landing to
 * the XON or the expiry, whether or not data was waiting, as switches'
 * pause-duration counters do.
 * Left out: PFC frames' own bandwidth on the reverse link (84 bytes per
 * pause, negligible next to the data they stop), and 802.3x global pause.
 */
#include "models/eth/eth_int.h"

#include <stdlib.h>
#include <string.h>

#include "models/link/link.h"
#include "sim/sim_log.h"
#include "sim/sim_parse.h"

void eth_params_default(struct eth_params *p)
{
	memset(p, 0, sizeof(*p));
	/*
	 * 1 MiB of shared buffer per port: 16 MiB for a 16-port switch, the
	 * order of a Tomahawk/Spectrum-class ToR per port at 100-200 Gb/s
	 * (16-64 MB for 32-64 ports). Alpha 1 is the usual dynamic-threshold
	 * default (Choudhury and Hahne): one congested queue may take half.
	 */
	p->buffer_per_port = 1u << 20;
	p->alpha = 1.0;
	/* XOFF at 256 KiB per ingress port and priority; XON two jumbo
	 * frames lower, so a pause is not lifted by one packet leaving. */
	p->pfc_xoff = 256u << 10;
	p->pfc_xon = p->pfc_xoff - 2 * 4352;
	p->pfc_quanta = 0xffff;
	p->ecn = ETH_ECN_AUTO;
	p->pmax = 0.2;
	p->sched = ETH_SCHED_WRR;
	/* a flowlet ends after 50 us idle: more than a queue of 1 MiB (the
	 * default share of one port) takes to drain at 200 Gb/s (42 us), so
	 * the new path cannot overtake the old; LetFlow (Vanini et al.,
	 * NSDI 2017) uses 50-500 us at 10-40 Gb/s */
	p->flowlet_ns = 50000;
	/* the whole 5-tuple, as switches hash by default (e.g. NVIDIA
	 * Cumulus Linux's ECMP hash: source and destination IP, protocol,
	 * source and destination port) */
	p->hash_fields = ETH_HASH_ALL;
}

/*
 * ECN thresholds for an egress port of this rate, unless eth.kmin/kmax are
 * given: for RoCE the values public RoCE simulators use (HPCC's ns-3
 * scripts: Kmin 100 KB, Kmax 400 KB per 25 Gb/s; numbers.md); for DCTCP
 * the step at K = 30 KB per 10 Gb/s those scripts use (600 KB at 200 Gb/s;
 * Kmin = Kmax: below, no mark, above, every packet).
 */
void eth_ecn_thresholds(const struct fab_params *p, struct link_rate r, uint32_t *kmin,
			uint32_t *kmax)
{
	double gbps = link_data_rate_bps(r) / 1e9;
	bool dctcp = fab_kind_of(p)->tcp;
	uint32_t lo = dctcp ? (uint32_t)(30000 * gbps / 10) : (uint32_t)(100000 * gbps / 25);
	uint32_t hi = dctcp ? lo : (uint32_t)(400000 * gbps / 25);

	*kmin = p->eth.kmin ? p->eth.kmin : lo;
	*kmax = p->eth.kmax ? p->eth.kmax : hi;
	if (*kmax < *kmin)
		*kmax = *kmin;
}

/*
 * Headroom: what still arrives after the XOFF threshold is crossed. The
 * XOFF waits for one maximum frame on the reverse link, crosses the cable,
 * the upstream transmitter finishes the frame it has started, and
 * everything sent meanwhile crosses the cable: 2 x propagation at the link
 * rate, plus two maximum frames and the PFC frame (the standard sizing, as
 * in IEEE 802.1Qbb Annex N, without the PHY/MAC response delays).
 */
uint32_t eth_headroom(const struct fab_params *p, const struct port *pt)
{
	double bytes_per_ps = (link_data_rate_bps(pt->rate) / 1e9) / 8.0 / 1000.0;
	uint32_t frame = 2 * 4352;	/* a 4096-byte payload in any fabric's frame, rounded up */

	if (p->eth.pfc_headroom)
		return p->eth.pfc_headroom;
	return (uint32_t)(2.0 * (double)pt->prop * bytes_per_ps) + 2 * frame + ETH_PFC_WIRE_BYTES;
}

static const struct port_link_ops eth_link_ops;

int eth_port_init(struct fab *f, struct port *pt)
{
	struct eth_port *e = calloc(1, sizeof(*e));

	if (!e)
		return -1;
	e->link.ops = &eth_link_ops;
	pt->link = &e->link;
	e->pfc = fab_kind_of(&f->p)->pfc;
	e->quantum_ps = link_ser_ps(pt->rate, ETH_PAUSE_QUANTUM_BITS / 8);
	e->xoff_cells = (f->p.eth.pfc_xoff + IB_BLOCK_BYTES - 1) / IB_BLOCK_BYTES;
	e->xon_cells = f->p.eth.pfc_xon / IB_BLOCK_BYTES;
	return 0;
}

void eth_port_fini(struct port *pt)
{
	if (pt->link)
		free(eth_of(pt)->fq.v);
	free(eth_of(pt));
	pt->link = NULL;
}

static int fq_push(struct eth_fq *q, const struct eth_pfc_frame *fr)
{
	if (q->n == q->cap) {
		uint32_t cap = q->cap ? q->cap * 2 : 8;
		struct eth_pfc_frame *nv = malloc(cap * sizeof(*nv));

		if (!nv)
			return -1;
		for (uint32_t i = 0; i < q->n; i++)
			nv[i] = q->v[(q->head + i) & (q->cap - 1)];
		free(q->v);
		q->v = nv;
		q->head = 0;
		q->cap = cap;
	}
	q->v[(q->head + q->n++) & (q->cap - 1)] = *fr;
	return 0;
}

/* Close priority prio's pause interval if it has expired by `now`. */
static void pause_close(struct port *pt, int prio, sim_time_t now)
{
	struct eth_port *e = eth_of(pt);

	if (!(e->paused & (1u << prio)) || e->paused_until[prio] > now)
		return;
	pt->info.vl[prio].paused_ps += e->paused_until[prio] - e->pause_from[prio];
	e->paused &= (uint8_t)~(1u << prio);
}

/* Take in every PFC frame from the peer that has landed by now. */
static void eth_apply(struct port *pt)
{
	struct eth_port *e = eth_of(pt);
	struct eth_fq *q = &e->fq;
	sim_time_t now = pt->fab->eng.now;

	while (q->n) {
		const struct eth_pfc_frame *fr = &q->v[q->head & (q->cap - 1)];
		int prio = fr->prio;

		if (fr->arrive > now)
			break;
		pause_close(pt, prio, fr->arrive);
		if (fr->quanta) {
			if (!(e->paused & (1u << prio))) {
				e->paused |= (uint8_t)(1u << prio);
				e->pause_from[prio] = fr->arrive;
			}
			e->paused_until[prio] = fr->arrive + (sim_time_t)fr->quanta * e->quantum_ps;
			e->pause_depart[prio] = fr->depart;
		} else if (e->paused & (1u << prio)) {
			/* XON ends the pause at its landing. */
			e->paused_until[prio] = fr->arrive;
			pause_close(pt, prio, fr->arrive);
		}
		q->head = (q->head + 1) & (q->cap - 1);
		q->n--;
	}
	for (uint8_t m = e->paused; m; m &= (uint8_t)(m - 1))
		pause_close(pt, __builtin_ctz(m), now);
}

bool eth_port_fits(const struct port *pt, uint8_t prio)
{
	const struct eth_port *e = eth_of(pt);

	return !(e->paused & (1u << prio)) || e->paused_until[prio] <= pt->fab->eng.now;
}

void eth_port_prepare(struct port *pt)
{
	eth_apply(pt);
}

int eth_port_pick(struct port *pt, uint16_t ready)
{
	struct eth_port *e = eth_of(pt);
	uint16_t data = ready & (uint16_t)~(1u << ETH_CNP_PRIO);

	if (ready & (1u << ETH_CNP_PRIO))
		return ETH_CNP_PRIO;
	if (!data)
		return -1;
	if (pt->fab->p.eth.sched == ETH_SCHED_STRICT)
		return 15 - __builtin_clz((unsigned)data << 16);
	/* Round robin: the first ready priority after the last one served. */
	uint16_t after = (uint16_t)(data & ~((2u << e->rr) - 1));
	int prio = __builtin_ctz(after ? after : data);

	e->rr = (uint8_t)prio;
	return prio;
}

/*
 * The transmitter's wake, keyed by the frame that causes it (a frame's
 * landing, or the expiry of the pause an XOFF set: ETH_NPRIO + prio), as
 * if the peer had scheduled it when that frame left (sim_timer_arm_key):
 * it falls at one place among equal times whoever arms it, the
 * transmitter as it finds all its data paused or the frame as it reaches
 * the transmitter, in one partition or from another.
 */
struct eth_wake_key {
	sim_time_t when, at;
	uint32_t what;
};

static bool key_before(const struct eth_wake_key *a, const struct eth_wake_key *b)
{
	return a->when < b->when || (a->when == b->when &&
				     (a->at < b->at || (a->at == b->at && a->what < b->what)));
}

static void eth_wake_arm(struct port *tx, const struct eth_wake_key *k)
{
	struct eth_port *e = eth_of(tx);

	if (e->wake.armed && k->when >= e->wake.when)
		return;
	sim_timer_arm_key(&tx->fab->eng, &e->wake, k->when, tx->comp, ETH_EV_WAKE, k->at,
			  (uint64_t)(port_peer_comp(tx) + 1) << 32 | 1u << 31 | k->what);
}

/* Every priority with data is paused: wake at the next frame's landing or
 * the earliest expiry of a pause that blocks data. */
void eth_port_blocked(struct port *pt, uint16_t has_data)
{
	struct eth_port *e = eth_of(pt);
	const struct eth_fq *q = &e->fq;
	struct eth_wake_key k = { .when = SIM_TIME_MAX };

	if (q->n) {
		const struct eth_pfc_frame *fr = &q->v[q->head & (q->cap - 1)];

		k = (struct eth_wake_key){ fr->arrive, fr->depart, fr->prio };
	}
	for (uint16_t m = has_data & e->paused; m; m &= (uint16_t)(m - 1)) {
		int prio = __builtin_ctz(m);
		struct eth_wake_key x = { e->paused_until[prio], e->pause_depart[prio],
					  ETH_NPRIO + (uint32_t)prio };

		if (key_before(&x, &k))
			k = x;
	}
	if (k.when != SIM_TIME_MAX)
		eth_wake_arm(pt, &k);
}

/* The transmitter tx is given a frame of its peer's receiver (at once in
 * one partition, as ETH_EV_PFC_MSG from another). */
static void eth_pfc_take(struct port *tx, const struct eth_pfc_frame *fr)
{
	if (fq_push(&eth_of(tx)->fq, fr)) {
		fab_fail(tx->fab, "out of memory for PFC frames");
		return;
	}
	/* A transmitter blocked by this pause learns of the XON by an event;
	 * an XOFF needs none (it is applied when the transmitter next looks). */
	if (!fr->quanta && eth_of(tx)->wake.armed) {
		struct eth_wake_key k = { fr->arrive, fr->depart, fr->prio };

		eth_wake_arm(tx, &k);
	}
}

/* A frame sent as an event (ETH_EV_PFC_MSG): due when it has crossed the
 * cable, its serialisation before it lands. */
static void eth_pfc_msg(struct port *tx, uint32_t arg)
{
	sim_time_t now = tx->fab->eng.now;
	struct eth_pfc_frame fr = {
		.depart = now - tx->peer->prop,
		.arrive = now + link_ser_ps(tx->peer->rate, ETH_PFC_WIRE_BYTES),
		.quanta = (uint16_t)(arg >> 16),
		.prio = (uint8_t)((arg >> 8) & (ETH_NPRIO - 1)),
	};

	eth_pfc_take(tx, &fr);
}

/* Send a PFC frame for `prio` upstream (to the peer's transmitter). */
static void send_pfc(struct port *rx, int prio, uint16_t quanta)
{
	struct fab *f = rx->fab;
	struct eth_port *e = eth_of(rx);
	struct port *tx = rx->peer;
	sim_time_t now = f->eng.now;
	struct eth_pfc_frame fr = { .prio = (uint8_t)prio, .quanta = quanta };

	/* It follows the packet our transmitter is sending, and frames stay
	 * in order on the wire. */
	fr.depart = rx->tx_busy && rx->tx_end > now ? rx->tx_end : now;
	if (fr.depart < e->last_depart)
		fr.depart = e->last_depart;
	e->last_depart = fr.depart;
	fr.arrive = fr.depart + link_ser_ps(rx->rate, ETH_PFC_WIRE_BYTES) + rx->prop;
	if (quanta) {
		rx->info.vl[prio].pause_sent++;
		f->tot.pause_frames++;
		e->xoff_at[prio] = now;
	}
	if (rx->cut)
		/* keyed in the order they are sent, as IB's FC packets */
		sim_schedule_key(&f->eng, fr.depart + rx->prop, tx->comp,
				 (uint32_t)quanta << 16 | (uint32_t)prio << 8 | ETH_EV_PFC_MSG,
				 fr.depart, (uint64_t)(rx->comp + 1) << 32 | 1u << 31 |
				 (e->pfc_msgs++ & 0x7fffffffu));
	else
		eth_pfc_take(tx, &fr);
	SIM_LOG(SIM_LOG_CREDIT, now, "node %d port %u PFC prio %d quanta %u (holds %u cells)",
		rx->node->idx, rx->port_no, prio, quanta, rx->vl[prio].rx_used);
}

/* Refresh XOFF at half its pause time while the priority stays congested. */
static void refresh_arm(struct port *rx)
{
	struct eth_port *e = eth_of(rx);
	sim_time_t half = (sim_time_t)rx->fab->p.eth.pfc_quanta * e->quantum_ps / 2;
	sim_time_t at = SIM_TIME_MAX;

	for (uint8_t m = e->xoff; m; m &= (uint8_t)(m - 1)) {
		sim_time_t t = e->xoff_at[__builtin_ctz(m)] + half;

		if (t < at)
			at = t;
	}
	if (at != SIM_TIME_MAX && (!e->refresh.armed || at < e->refresh.when))
		sim_timer_arm(&rx->fab->eng, &e->refresh, at, rx->comp, ETH_EV_PFC_REFRESH);
}

/*
 * The XOFF threshold of this ingress, in cells: static (eth.pfc_xoff), or
 * with eth.pfc_alpha > 0 dynamic, alpha x the free shared buffer, as
 * switch MMUs set it (Broadcom's "dynamic ingress threshold"): a lone
 * congested port may fill much of an idle buffer, many congested ports
 * share it and pause earlier. NICs (no shared buffer) stay static.
 */
static uint32_t xoff_threshold(const struct port *rx)
{
	const struct fab_params *p = &rx->fab->p;
	const struct eth_sw *s = rx->node->eth;

	if (p->eth.pfc_alpha <= 0 || !s)
		return eth_of(rx)->xoff_cells;
	uint32_t pool = s->cap_cells - s->headroom_cells;
	uint32_t free_cells = pool > s->used_cells ? pool - s->used_cells : 0;

	return (uint32_t)(p->eth.pfc_alpha * free_cells);
}

void eth_port_ingress(struct port *rx, uint8_t prio)
{
	struct eth_port *e = eth_of(rx);

	if (!e->pfc || prio == ETH_CNP_PRIO || (e->xoff & (1u << prio)) ||
	    rx->vl[prio].rx_used <= xoff_threshold(rx))
		return;
	e->xoff |= (uint8_t)(1u << prio);
	send_pfc(rx, prio, (uint16_t)rx->fab->p.eth.pfc_quanta);
	refresh_arm(rx);
}

void eth_port_egress(struct port *rx, uint8_t prio)
{
	struct eth_port *e = eth_of(rx);

	uint32_t xon = e->xon_cells;

	if (rx->fab->p.eth.pfc_alpha > 0 && rx->node->eth) {
		/* dynamic: resume the same hysteresis below the moving threshold */
		uint32_t th = xoff_threshold(rx), gap = e->xoff_cells - e->xon_cells;

		xon = th > gap ? th - gap : 0;
	}
	if (!(e->xoff & (1u << prio)) || rx->vl[prio].rx_used > xon)
		return;
	e->xoff &= (uint8_t)~(1u << prio);
	send_pfc(rx, prio, 0);
}

/*
 * PFC deadlock (the Ethernet twin of an IB credit loop, fab_deadlock.c).
 * An ingress port X paused upstream on `prio` waits for the outputs its
 * packets are queued at; an output paused by its downstream receiver Y
 * waits for Y. If following "X holds a packet queued at an output that Y
 * pauses" comes back to X, nothing on the cycle can ever move again: the
 * XOFF refreshes would keep the run alive for ever, so it stops here with
 * the cycle spelled out. Checked only when an XOFF is refreshed (a pause
 * has lasted half its quanta), so it costs nothing while traffic flows.
 */
static bool holds_for(const struct fab *f, const struct port *out, uint8_t prio,
		      uint8_t in_port)
{
	for (uint32_t i = out->vl[prio].inq.head; i != SIM_POOL_NIL; i = fab_pkt(f, i)->next)
		if (fab_pkt(f, i)->in_port == in_port)
			return true;
	return false;
}

static bool pfc_cycle(struct port *start, struct port *x, uint8_t prio, int depth,
		      struct port **path)
{
	struct fab *f = x->fab;
	struct fab_node *n = x->node;

	if (depth >= 64 || n->type != NET_SWITCH)
		return false;
	path[depth] = x;
	for (int o = 1; o <= n->nports; o++) {
		struct port *out = n->ports[o];
		struct port *y;

		if (!out || !out->vl[prio].inq.len || eth_port_fits(out, prio))
			continue;
		y = out->peer;
		if (!(eth_of(y)->xoff & (1u << prio)) || !holds_for(f, out, prio, x->port_no))
			continue;
		if (y == start) {
			path[depth + 1] = NULL;
			return true;
		}
		bool seen = false;

		for (int k = 0; k <= depth; k++)
			seen |= path[k] == y;
		if (!seen && pfc_cycle(start, y, prio, depth + 1, path))
			return true;
	}
	return false;
}

static void pfc_deadlock_check(struct port *pt, uint8_t prio)
{
	struct fab *f = pt->fab;
	struct port *path[66];
	char buf[768];
	size_t off = 0;

	eth_port_prepare(pt);
	for (int o = 1; o <= pt->node->nports; o++)
		if (pt->node->ports[o])
			eth_port_prepare(pt->node->ports[o]);
	if (!pfc_cycle(pt, pt, prio, 0, path))
		return;
	buf[0] = 0;
	for (int k = 0; path[k] && k < 65; k++) {
		const struct port *x = path[k];

		sim_append(buf, sizeof(buf), &off, "%s[%u] -> ",
			   f->net->nodes[x->node->idx].desc, x->port_no);
	}
	sim_append(buf, sizeof(buf), &off, "%s[%u]", f->net->nodes[pt->node->idx].desc,
		   pt->port_no);
	fab_fail(f, "PFC deadlock on priority %u: ingress ports pause each other in a cycle, "
		 "each holding packets queued for an output the next one pauses: %s", prio, buf);
}

void eth_port_handler(struct port *pt, uint32_t arg)
{
	struct eth_port *e = eth_of(pt);

	switch (arg & 0xff) {
	case ETH_EV_WAKE:
		if (sim_timer_fire(&e->wake, arg))
			port_kick(pt);
		break;
	case ETH_EV_PFC_REFRESH: {
		sim_time_t now = pt->fab->eng.now;
		sim_time_t half = (sim_time_t)pt->fab->p.eth.pfc_quanta * e->quantum_ps / 2;

		if (!sim_timer_fire(&e->refresh, arg))
			break;
		for (uint8_t m = e->xoff; m; m &= (uint8_t)(m - 1)) {
			int prio = __builtin_ctz(m);

			if (e->xoff_at[prio] + half > now)
				continue;
			if (pt->node->type == NET_SWITCH)
				pfc_deadlock_check(pt, (uint8_t)prio);
			if (pt->fab->failed)
				return;
			send_pfc(pt, prio, (uint16_t)pt->fab->p.eth.pfc_quanta);
		}
		refresh_arm(pt);
		break;
	}
	case ETH_EV_PFC_MSG:
		eth_pfc_msg(pt, arg);
		break;
	}
}

/* End of run: close the pause intervals still open, up to `now`. */
void eth_port_finish(struct port *pt, sim_time_t now)
{
	struct eth_port *e = eth_of(pt);

	eth_apply(pt);
	for (uint8_t m = e->paused; m; m &= (uint8_t)(m - 1)) {
		int prio = __builtin_ctz(m);
		sim_time_t end = e->paused_until[prio] < now ? e->paused_until[prio] : now;

		pt->info.vl[prio].paused_ps += end - e->pause_from[prio];
		e->pause_from[prio] = end;
	}
}

/* The link layer a port of an Ethernet fabric runs (port.h). */
static const struct port_link_ops eth_link_ops = {
	.fits = eth_port_fits,
	.prepare = eth_port_prepare,
	.pick = eth_port_pick,
	.blocked = eth_port_blocked,
	.egress = eth_port_egress,
	.event = eth_port_handler,
};
