/* SPDX-License-Identifier: MIT */
/*
 * sw.c - an input-buffered IB switch with virtual cut-through.
 *
 * What it models (IBA vol. 1 ch. 18, switches):
 *  - every input port keeps one FIFO per VL in its receive buffer; a packet
 *    enters it once its head has crossed the switch pipeline
 *    (switch.latency_ns, port to port) and its DLID has been looked up in the
 *    linear forwarding table (IBA 18.2.4.3);
 *  - only the head packet of each input VL competes for its output port, so
 *    head-of-line blocking emerges: a head waiting for credits on a congested
 *    output holds back everything behind it in that input VL, whatever their
 *    destinations, while other VLs of the same input go on;
 *  - an input feeds at most switch.speedup packets to outputs at once (the
 *    crossbar's speedup, 2 by default); at that limit its other heads wait,
 *    below it the next head of the same VL competes as soon as its
 *    predecessor has started (switch.speedup=1: one packet at a time);
 *  - each output serves the VL that VL arbitration picks (ib_vlarb.c) and,
 *    within a VL, the requesting inputs round-robin, skipping heads whose
 *    blocks do not fit the output's credits;
 *  - the SL-to-VL table is the same on every port (ib.sl2vl), so a packet
 *    keeps its VL from hop to hop;
 *  - a packet whose DLID has no route (LFT entry 255, or an unconnected
 *    port) is discarded and counted, as IBA 18.2.4.3 requires;
 *  - with adaptive routing (ib.ar=on, the Quantum presets' default), a
 *    packet of an AR-enabled SL (ib.ar_sl_mask) keeps the LFT's port
 *    while no queue forms on it, and otherwise goes to the least loaded
 *    port of its destination's AR group (sw_lb.c), per packet or per
 *    flowlet (ib.ar_mode), as the packet arrives. The load of an output
 *    is its egress queue - the blocks queued for it at this switch's
 *    inputs and the packet it is sending - and the credits the next hop
 *    holds beyond two packets; a switch that takes a queued link to
 *    another switch notifies the switch upstream, which then avoids that
 *    way to the packet's destination while the queue drains (ib.arn:
 *    sw_arn.c). With switch.queues=fifo (the default
 *    before HDR) a
 *    packet waits behind the ones ahead of it in its input whatever
 *    outputs they chose, so on the way down, where there is no choice,
 *    sprayed traffic meets the head-of-line blocking of input-queued
 *    switches; switch.queues=voq lets an output take the first packet for
 *    it anywhere in an input's FIFO (docs/routing.md, adaptive routing).
 *    The input from a SHARP aggregation node (its internal port) queues
 *    so always: the node is in the switch's data path, its results
 *    written towards their outputs, not sent down a cable (docs/sharp.md).
 * The input buffer space is released, and a credit update goes upstream,
 * when the packet's last bit has left through the output.
 */
#include "models/switch/sw.h"

#include <stdlib.h>

#include "models/switch/sw_arn.h"
#include "models/switch/sw_ibcc.h"
#include "models/switch/sw_lb.h"

#include "sim/sim_log.h"

/*
 * The request bitsets and round-robin pointers are laid out by VL, then
 * output: a run on one VL (most runs) finds all of a switch's in a few
 * lines, not one line (or two) per output.
 */
static inline uint64_t *req_word(struct fab_node *n, int o, int v)
{
	return &n->req[((size_t)v * (size_t)(n->nports + 1) + (size_t)o) * n->req_words];
}

static inline uint8_t *rr_at(struct fab_node *n, int o, int v)
{
	return &n->rr[(size_t)v * (size_t)(n->nports + 1) + (size_t)o];
}

static void req_set(struct fab_node *n, int o, int v, int in)
{
	req_word(n, o, v)[in >> 6] |= 1ULL << (in & 63);
	n->req_vls[o] |= (uint16_t)(1u << v);
}

static void req_clear(struct fab_node *n, int o, int v, int in)
{
	uint64_t *w = req_word(n, o, v);

	w[in >> 6] &= ~(1ULL << (in & 63));
	for (int i = 0; i < n->req_words; i++)
		if (w[i])
			return;
	n->req_vls[o] &= (uint16_t)~(1u << v);
}

/* Adaptive routing's state at one switch. */
struct sw_ar {
	struct sw_lb lb;
	uint16_t sl_mask;	/* SLs routed adaptively */
	int64_t held_free;	/* blocks a next hop may hold before they count */
	struct sw_arn arn;	/* notifications to and from the neighbours (ib.arn) */
	uint32_t outq[];	/* per output: blocks queued for it at the inputs */
};

/* The blocks queued for output `out` at this switch's inputs and the
 * packet it is sending: its egress queue, in a switch that queues at the
 * output. */
static inline int64_t ar_queued(const struct fab_node *n, const struct port *out)
{
	return (int64_t)n->ar->outq[out->port_no] + (out->tx_busy ? out->tx_src_blocks : 0);
}

/* The load of output `out`: its egress queue; the next hop's buffer, the
 * credits it holds beyond what a cable and a switch keep in flight at line
 * rate, so that a downstream buffer that fills shows before packets stop
 * leaving; and, where the next hop notified a queue towards p's
 * destination, more than any queue (sw_arn.c). 0 when idle. */
static int64_t ar_load(const struct fab_node *n, struct port *out, const struct pkt *p)
{
	int64_t held = out->link ? 0 : port_credits_held(out, p->vl);

	return ar_queued(n, out) + (held > n->ar->held_free ? held - n->ar->held_free : 0) +
	       (sw_arn_notified(&n->ar->arn, out->fab, out->port_no, p) ? SW_ARN_LOAD : 0);
}

/* Whether packet p is routed adaptively here: an AR-enabled SL, and a
 * data VL (subnet management packets on VL15 follow the LFT). */
static inline bool ar_applies(const struct fab_node *n, const struct pkt *p)
{
	return (n->sw_modes & FAB_SW_AR) && (n->ar->sl_mask >> p->sl & 1) && p->vl != 15;
}

static int ar_init(struct fab *f, struct fab_node *n)
{
	struct sw_ar *ar = calloc(1, sizeof(*ar) + ((size_t)n->nports + 1) * sizeof(ar->outq[0]));

	if (!ar)
		return -1;
	n->ar = ar;
	ar->sl_mask = f->p.ib_ar_sl_mask;
	if (sw_lb_init(&ar->lb, f, n, ar_load, f->p.ib_ar_flowlet ? f->p.ib_ar_flowlet_ns : 0))
		return -1;
	/* one packet of the MTU: the one it is sending, or one waiting */
	ar->lb.keep_lft = ib_blocks(ib_wire_bytes(f->p.mtu, 1));
	ar->held_free = 2 * ar->lb.keep_lft;
	/* a queue beyond that notifies the switch upstream */
	return sw_arn_init(&ar->arn, n, f->p.ib_arn, ar->lb.keep_lft);
}

/*
 * Virtual output queues (switch.queues=voq): each input VL's packets, in
 * one FIFO as ever, counted per output, so that an output can take the
 * first packet for it wherever it stands in the FIFO. has[] is the set of
 * outputs an input VL holds packets for: what it asks for. The data VLs
 * and VL15 (subnet management) have a slot each: nvl = data VLs + 1.
 */
struct sw_voq {
	int nvl;
	uint16_t *cnt;		/* [(in * nvl + slot) * (nports + 1) + o] packets for o */
	uint64_t *has;		/* [(in * nvl + slot) * req_words + w] outputs with cnt > 0 */
	/* as cnt: the first and last of them, linked by pkt.vnext (and the
	 * VL's queue back by pkt.qprev): finding the first for an output and
	 * taking it out touch no other packet (a scan of the queue walked
	 * 3.2 packets more for each, each a cache miss, on 16 DGX H100) */
	uint32_t *head, *tail;
};

/* VL v's slot: the data VLs in order, VL15 the last. */
static inline size_t voq_slot(const struct fab_node *n, int v)
{
	return v < n->voq->nvl - 1 ? (size_t)v : (size_t)n->voq->nvl - 1;
}

/* Slot s's VL. */
static inline int voq_vl(const struct fab_node *n, int s)
{
	return s < n->voq->nvl - 1 ? s : 15;
}

static inline uint16_t *voq_cnt(struct fab_node *n, int in, int v, int o)
{
	return &n->voq->cnt[((size_t)in * (size_t)n->voq->nvl + voq_slot(n, v)) *
			    (size_t)(n->nports + 1) + (size_t)o];
}

static inline uint64_t *voq_has(struct fab_node *n, int in, int v)
{
	return &n->voq->has[((size_t)in * (size_t)n->voq->nvl + voq_slot(n, v)) *
			    (size_t)n->req_words];
}

static int voq_init(struct fab *f, struct fab_node *n)
{
	size_t nin = (size_t)n->nports + 1, nvl = (f->p.vls ? f->p.vls : 1) + 1;

	n->voq = calloc(1, sizeof(*n->voq));
	if (!n->voq)
		return -1;
	n->voq->nvl = (int)nvl;
	n->voq->cnt = calloc(nin * nvl * nin, sizeof(*n->voq->cnt));
	n->voq->has = calloc(nin * nvl * (size_t)n->req_words, sizeof(*n->voq->has));
	/* zeroed: the look-ahead (sw_tx_prefetch) may read a head never set */
	n->voq->head = calloc(nin * nvl * nin, sizeof(*n->voq->head));
	n->voq->tail = malloc(nin * nvl * nin * sizeof(*n->voq->tail));
	return n->voq->cnt && n->voq->has && n->voq->head && n->voq->tail ? 0 : -1;
}

/* Where input in's VL v keeps output o's packets (an index of cnt). */
static inline size_t voq_ix(const struct fab_node *n, int in, int v, int o)
{
	return ((size_t)in * (size_t)n->voq->nvl + voq_slot(n, v)) * (size_t)(n->nports + 1) +
	       (size_t)o;
}

/* The first packet on input in's VL v bound for output o (there is one). */
static uint32_t voq_first(const struct port *in, int v, int o)
{
	const struct fab_node *n = in->node;

	return n->voq->head[voq_ix(n, in->port_no, v, o)];
}

/* Packet idx (p), queued on its input's VL (its qprev set before),
 * joins the end of its output's packets there: the cnt-th of them. */
static void voq_push(struct fab *f, struct fab_node *n, struct port *in, struct pkt *p,
		     uint32_t idx, uint32_t cnt)
{
	const size_t x = voq_ix(n, in->port_no, p->vl, p->out_port);

	p->vnext = SIM_POOL_NIL;
	if (cnt == 1)
		n->voq->head[x] = idx;
	else
		fab_pkt(f, n->voq->tail[x])->vnext = idx;
	n->voq->tail[x] = idx;
}

/* Take packet idx, the first for output o, out of its input's VL queue q,
 * wherever it stands there. */
static void voq_remove(struct fab *f, struct fab_node *n, struct port *in, struct port_pq *q,
		       uint32_t idx, int o)
{
	const struct pkt *p = fab_pkt(f, idx);
	const size_t x = voq_ix(n, in->port_no, p->vl, o);

	n->voq->head[x] = p->vnext;
	if (p->qprev == SIM_POOL_NIL)
		q->head = p->next;
	else
		fab_pkt(f, p->qprev)->next = p->next;
	if (p->next == SIM_POOL_NIL)
		q->tail = p->qprev;
	else
		fab_pkt(f, p->next)->qprev = p->qprev;
	if (!--q->len)
		q->head = q->tail = SIM_POOL_NIL;
}

uint64_t *sw_lb_words(struct fab_node *n)
{
	_Static_assert(offsetof(struct sw_lb, moved) == offsetof(struct sw_lb, chosen) + 8 &&
		       offsetof(struct sw_lb, notified) == offsetof(struct sw_lb, chosen) + 16 &&
		       SW_LB_WORDS == 3, "chosen, moved, notified");
	return n->ar ? &n->ar->lb.chosen : NULL;
}

int sw_init(struct fab *f, struct fab_node *n)
{
	const struct net_node *nn = &f->net->nodes[n->idx];
	size_t nout = (size_t)n->nports + 1;

	n->lft = nn->lft;
	n->lft_len = nn->lft ? nn->lft_len : 0;
	n->req_words = (n->nports + 1 + 63) / 64;
	n->req = calloc(nout * PORT_NVL * n->req_words, sizeof(*n->req));
	n->req_vls = calloc(nout, sizeof(*n->req_vls));
	n->rr = calloc(nout * PORT_NVL, sizeof(*n->rr));
	if (f->p.ibcc.on && ibcc_sw_init(f, n))		/* FECN marking (sw_ibcc.c) */
		return -1;
	if (f->p.ib_ar && ar_init(f, n))
		return -1;
	bool voq = f->p.sw_voq;

	for (int q = 1; q <= n->nports && !voq; q++)	/* an aggregation node's input */
		voq = nn->ports[q].internal;
	if (voq && voq_init(f, n))
		return -1;
	n->sw_modes = (uint8_t)((n->ar ? FAB_SW_AR : 0) | (n->voq ? FAB_SW_VOQ : 0));
	return n->req && n->req_vls && n->rr ? 0 : -1;
}

void sw_fini(struct fab_node *n)
{
	free(n->req);
	free(n->req_vls);
	free(n->rr);
	ibcc_sw_fini(n);
	if (n->ar) {
		sw_lb_fini(&n->ar->lb);
		sw_arn_fini(&n->ar->arn);
		free(n->ar);
		n->ar = NULL;
	}
	if (n->voq) {
		free(n->voq->cnt);
		free(n->voq->has);
		free(n->voq->head);
		free(n->voq->tail);
		free(n->voq);
		n->voq = NULL;
	}
}

/* VOQ: every output the input holds packets for asks (the requests
 * first, then the kicks: a kick may take packets and change has[]). */
static void voq_request(struct port *in, struct port *except)
{
	struct fab_node *n = in->node;
	uint64_t kick[4] = { 0 };	/* port numbers fit a byte: 4 words */

	for (int s = 0; s < n->voq->nvl; s++) {
		int v = voq_vl(n, s);
		const uint64_t *h = voq_has(n, in->port_no, v);

		if (!(in->inq_vls >> v & 1))
			continue;
		for (int w = 0; w < n->req_words; w++)
			for (uint64_t b = h[w]; b; b &= b - 1) {
				int o = w * 64 + __builtin_ctzll(b);

				req_set(n, o, v, in->port_no);
				kick[w] |= 1ULL << (o & 63);
			}
	}
	for (int w = 0; w < n->req_words; w++)
		for (uint64_t b = kick[w]; b; b &= b - 1) {
			struct port *out = n->ports[w * 64 + __builtin_ctzll(b)];

			if (out != except)
				port_kick(out);
		}
}

/* VOQ: the input feeds all it can: withdraw every request it made. */
static void voq_withdraw(struct port *in)
{
	struct fab_node *n = in->node;

	for (int s = 0; s < n->voq->nvl; s++) {
		int v = voq_vl(n, s);
		const uint64_t *h = voq_has(n, in->port_no, v);

		if (!(in->inq_vls >> v & 1))
			continue;
		for (int w = 0; w < n->req_words; w++)
			for (uint64_t b = h[w]; b; b &= b - 1)
				req_clear(n, w * 64 + __builtin_ctzll(b), v, in->port_no);
	}
}

/* The input's head packets (one per VL) ask for their outputs. */
static void input_request(struct port *in, struct port *except)
{
	struct fab *f = in->fab;
	struct fab_node *n = in->node;

	if (in->voq) {
		voq_request(in, except);
		return;
	}
	/* The VLs in order, as inq_vls says now (a kick may take a head). */
	for (unsigned v = 0; v < PORT_NVL && (in->inq_vls >> v); v++) {
		v += (unsigned)__builtin_ctz(in->inq_vls >> v);
		struct pkt *p = fab_pkt(f, in->vl[v].inq.head);
		struct port *out = n->ports[p->out_port];

		req_set(n, p->out_port, v, in->port_no);
		if (out != except)
			port_kick(out);
	}
}

static void drop(struct port *in, uint32_t idx, const char *why)
{
	struct fab *f = in->fab;
	struct pkt *p = fab_pkt(f, idx);

	SIM_LOG(SIM_LOG_SWITCH, f->eng.now, "node %d port %u drops dlid %u: %s",
		in->node->idx, in->port_no, p->dlid, why);
	in->info.vl[p->vl].xmit_discards++;
	port_rx_free(in, p->vl, p->blocks);
	fab_pkt_drop(f, idx, FAB_DROP_ROUTE);
}

/* The LFT's output (sw_route), inlined into sw_receive: one call less
 * per packet-hop. */
static inline __attribute__((always_inline)) int lft_route(struct port *in, uint32_t idx)
{
	struct fab_node *n = in->node;
	struct pkt *p = fab_pkt(in->fab, idx);
	uint8_t out;

	if (p->dlid >= n->lft_len || (out = n->lft[p->dlid]) == 255 ||
	    out > n->nports) {
		drop(in, idx, "no route in the LFT");
		return -1;
	}
	if (out == 0 || !n->ports[out] || out == in->port_no) {
		/* Port 0 is the switch itself; there is no management agent in
		 * this model. Sending back out of the input port is legal in IB
		 * but only a broken LFT would do it for a CA's LID. */
		drop(in, idx, out == 0 ? "addressed to the switch" :
			      out == in->port_no ? "LFT points back to the input" :
			      "LFT points to an unconnected port");
		return -1;
	}
	return out;
}

int sw_route(struct port *in, uint32_t idx)
{
	return lft_route(in, idx);
}

/* Packet idx, bound for `out`, joins its input's queue on its VL. */
static inline __attribute__((always_inline)) void enqueue(struct fab *f, struct fab_node *n,
							  struct port *in, struct pkt *p,
							  uint32_t idx, int out)
{
	p->in_port = in->port_no;
	p->out_port = (uint8_t)out;
	port_pq_push(f, &in->vl[p->vl].inq, idx);
	in->inq_vls |= (uint16_t)(1u << p->vl);
	if (n->ports[out]->has_ibcc)
		ibcc_sw_queued(n->ports[out], p);
}

/*
 * sw_receive with adaptive routing or VOQs (kept out of the common path:
 * one test of sw_modes there): the output AR chooses, and the VOQ's
 * counts and request.
 */
static __attribute__((noinline)) void receive_modes(struct port *in, uint32_t idx, int out)
{
	struct fab *f = in->fab;
	struct fab_node *n = in->node;
	struct pkt *p = fab_pkt(f, idx);

	if (ar_applies(n, p)) {
		int o = sw_lb_pick(&n->ar->lb, f, n, p, out);

		if (o > 0) {
			out = o;
			pkt_route_step(p, (uint32_t)n->idx, (uint8_t)o);
		}
		/* a queue on the way to another switch: the switch the packet
		 * came from may have another way there (sw_arn.c) */
		if (n->ar->arn.on && n->ports[out]->peer_is_sw) {
			int64_t q = ar_queued(n, n->ports[out]);

			if (q > n->ar->arn.threshold && sw_arn_send(&n->ar->arn, f, in, p, q))
				n->ar->lb.notified++;
		}
		n->ar->outq[out] += p->blocks;
	}
	if (in->voq) {	/* the packet it queues behind */
		const struct port_pq *q = &in->vl[p->vl].inq;

		p->qprev = q->len ? q->tail : SIM_POOL_NIL;
	}
	enqueue(f, n, in, p, idx, out);
	if (in->voq) {
		const uint16_t c = ++*voq_cnt(n, in->port_no, p->vl, out);

		voq_push(f, n, in, p, idx, c);
		if (c > 1)
			return;		/* the output knows of the input's packets */
		voq_has(n, in->port_no, p->vl)[out >> 6] |= 1ULL << (out & 63);
		if (in->in_flight < in->speedup) {
			req_set(n, out, p->vl, in->port_no);
			port_kick(n->ports[out]);
		}
	} else if (in->vl[p->vl].inq.len == 1 && in->in_flight < in->speedup) {
		req_set(n, out, p->vl, in->port_no);
		port_kick(n->ports[out]);
	}
}

void sw_receive(struct port *in, uint32_t idx)
{
	struct fab *f = in->fab;
	struct fab_node *n = in->node;
	struct pkt *p = fab_pkt(f, idx);
	int out = lft_route(in, idx);

	if (out < 0)
		return;
	if (__builtin_expect(n->sw_modes, 0)) {
		receive_modes(in, idx, out);
		return;
	}
	enqueue(f, n, in, p, idx, out);
	SIM_LOG(SIM_LOG_SWITCH, f->eng.now, "node %d in %u vl %u dlid %u -> out %u (queue %u)",
		n->idx, in->port_no, p->vl, p->dlid, out, in->vl[p->vl].inq.len);
	if (in->vl[p->vl].inq.len == 1 && in->in_flight < in->speedup) {
		req_set(n, out, p->vl, in->port_no);
		port_kick(n->ports[out]);
	}
}

/*
 * The first requesting input, in round-robin order after `after`, whose head
 * packet (with VOQs: first packet for this output) fits the output's
 * credits on VL v, and that packet in *pkt; -1 if none. Two passes over the
 * bitset: inputs above `after`, then from 0 up to it.
 */
static int rr_pick(struct port *out, const uint64_t *w, int words, int after,
		   uint8_t v, uint32_t *pkt)
{
	struct fab *f = out->fab;
	struct fab_node *n = out->node;
	/* after is a port number, below nbits: no division (an idiv was 4% of
	 * port_kick on bench/run's B1) */
	int nbits = words * 64, s = after + 1 < nbits ? after + 1 : 0;

	for (int pass = 0; pass < 2; pass++) {
		int lo = pass ? 0 : s, hi = pass ? s : nbits;

		for (int wi = lo >> 6; wi * 64 < hi; wi++) {
			uint64_t word = w[wi];

			if (wi == lo >> 6)
				word &= ~0ULL << (lo & 63);
			if (hi < wi * 64 + 64)
				word &= (1ULL << (hi & 63)) - 1;
			for (; word; word &= word - 1) {
				int i = wi * 64 + __builtin_ctzll(word);
				uint32_t idx = (n->sw_modes & FAB_SW_VOQ) && n->ports[i]->voq ?
					       voq_first(n->ports[i], v, out->port_no) :
					       n->ports[i]->vl[v].inq.head;

				if (port_fits(out, v, fab_pkt(f, idx)->blocks)) {
					*pkt = idx;
					return i;
				}
			}
		}
	}
	return -1;
}

uint16_t sw_candidates(struct port *out, uint32_t cand[PORT_NVL], uint16_t *has_data)
{
	struct fab_node *n = out->node;
	int o = out->port_no;
	uint16_t ready = 0, vls = n->req_vls[o];

	*has_data = vls;
	for (uint16_t m = vls; m; m &= m - 1) {
		int v = __builtin_ctz(m);
		uint32_t idx;
		int i = rr_pick(out, req_word(n, o, v), n->req_words, *rr_at(n, o, v),
				(uint8_t)v, &idx);

		if (i >= 0) {
			cand[v] = idx;
			ready |= (uint16_t)(1u << v);
		}
	}
	return ready;
}

/* sw_take with VOQs: the packet leaves its FIFO wherever it stands; the
 * input asks for this output as long as it holds packets for it. */
static uint32_t voq_take(struct port *out, struct port *in, struct pkt *p, uint32_t idx)
{
	struct fab *f = out->fab;
	struct fab_node *n = out->node;
	uint8_t vl = p->vl;
	int o = out->port_no;

	voq_remove(f, n, in, &in->vl[vl].inq, idx, o);
	if (!in->vl[vl].inq.len)
		in->inq_vls &= (uint16_t)~(1u << vl);
	if (!--*voq_cnt(n, in->port_no, vl, o)) {
		voq_has(n, in->port_no, vl)[o >> 6] &= ~(1ULL << (o & 63));
		req_clear(n, o, vl, in->port_no);
	}
	if (out->has_ibcc)
		ibcc_sw_take(out, p);
	*rr_at(n, o, vl) = p->in_port;
	out->tx_src = in;
	out->tx_fc = in->peer;
	out->tx_src_vl = vl;
	out->tx_src_blocks = p->blocks;
	if (++in->in_flight >= in->speedup)
		voq_withdraw(in);
	return idx;
}

uint32_t sw_take(struct port *out, uint8_t chosen, uint32_t idx)
{
	struct fab *f = out->fab;
	struct fab_node *n = out->node;
	struct pkt *p = fab_pkt(f, idx);
	struct port *in = n->ports[p->in_port];
	uint8_t vl = p->vl;	/* the arbiter's choice (chosen): cand[chosen] is on it */

	(void)chosen;
	if (__builtin_expect(n->sw_modes, 0)) {
		if (ar_applies(n, p))
			n->ar->outq[out->port_no] -= p->blocks;
		if (in->voq)
			return voq_take(out, in, p, idx);
	}
	req_clear(n, out->port_no, vl, in->port_no);
	port_pq_pop(f, &in->vl[vl].inq);
	if (!in->vl[vl].inq.len)
		in->inq_vls &= (uint16_t)~(1u << vl);
	if (out->has_ibcc)
		ibcc_sw_take(out, p);
	*rr_at(n, out->port_no, vl) = p->in_port;
	out->tx_src = in;
	out->tx_fc = in->peer;
	out->tx_src_vl = vl;
	out->tx_src_blocks = p->blocks;
	if (++in->in_flight >= in->speedup) {
		/* The input feeds all it can: withdraw its other heads. */
		for (uint16_t m = in->inq_vls; m; m &= (uint16_t)(m - 1)) {
			int v = __builtin_ctz(m);

			req_clear(n, fab_pkt(f, in->vl[v].inq.head)->out_port, v, in->port_no);
		}
		return idx;
	}
	/* Below the speedup: the VL's next packet is now its head and asks for
	 * its output (not this one, which is about to start sending). */
	if (in->vl[vl].inq.len) {
		struct pkt *h = fab_pkt(f, in->vl[vl].inq.head);

		req_set(n, h->out_port, vl, in->port_no);
		if (h->out_port != out->port_no)
			port_kick(n->ports[h->out_port]);
	}
	return idx;
}

void sw_sent(struct port *out)
{
	struct port *in = out->tx_src;

	port_rx_free(in, out->tx_src_vl, out->tx_src_blocks);
	/* Back below the speedup: the heads withdrawn at the limit ask again. */
	if (in->in_flight-- == in->speedup)
		input_request(in, out);
}

/* A notification from the switch at the other end of pt's link. */
static void sw_notify(struct port *pt, uint32_t what)
{
	if (pt->node->ar)
		sw_arn_receive(&pt->node->ar->arn, pt, what);
}

/* The look-ahead, one event before packet p arrives at input pt
 * (port_prefetch): the output the LFT gives its LID, where it will be
 * queued (adaptive routing takes another for about a quarter of the
 * packets of a rail-optimised GPU cluster; the output the last packet
 * went on to, as before, was right for a quarter: an input's packets go
 * to the tree's peers and back as ACKs in turn). Reads the node's line 0
 * and the LFT's byte. */
const struct port *sw_rx_guess(const struct port *pt, const struct pkt *p)
{
	const struct fab_node *n = pt->node;
	uint8_t out;

	if (p->dlid < n->lft_len && (out = n->lft[p->dlid]) != 255 && (int)out <= n->nports)
		return n->ports[out];
	return NULL;
}

static void sw_rx_prefetch(const struct port *pt, const struct pkt *p)
{
	const struct port *out = sw_rx_guess(pt, p);

	if (out)
		port_prefetch_output(out);
}

/*
 * The look-ahead, one event before output `out` is done sending
 * (port_prefetch): the packet its arbiter will likely take next - on the
 * lowest VL asking, the first input after the one served last (rr_pick)
 * - and what taking it reads: the input's line 0 and its VL's queue, its
 * VOQ counter, and the packet (whose size the arbiter checks against the
 * credits), found through the queue's head, which is read here: the
 * handler would wait for it all the same, and the packet's miss then
 * overlaps an event's handling instead of following the head's. Input,
 * queue and packet were 40% of sw_candidates, the largest function of a
 * 1,024-GPU allreduce, each a miss to memory. A guess (the event between
 * may change the queues): it checks the index it reads, and changes
 * nothing (test_fabric: the look-ahead changes nothing). Its code sits
 * apart from the hot paths': in line among them it moved their
 * alignment, and B1 (a small fabric, which never runs it) measured 3.7%
 * slower.
 */
static __attribute__((section(".text.lookahead"))) void sw_tx_prefetch(const struct port *out)
{
	const struct fab *f = out->fab;
	struct fab_node *n = out->node;
	const int o = out->port_no;
	const uint16_t vls = n->req_vls[o];

	if (!vls)
		return;
	const int v = __builtin_ctz(vls), nb = n->req_words * 64;
	const uint64_t *w = req_word(n, o, v);
	const int s = *rr_at(n, o, v) + 1 < nb ? *rr_at(n, o, v) + 1 : 0;
	int i = -1;

	/* the first bit at or after s, else the first before it */
	for (int k = s >> 6; k < n->req_words && i < 0; k++) {
		uint64_t x = w[k] & (k == s >> 6 ? ~0ULL << (s & 63) : ~0ULL);

		if (x)
			i = k * 64 + __builtin_ctzll(x);
	}
	for (int k = 0; k <= s >> 6 && k < n->req_words && i < 0; k++)
		if (w[k])
			i = k * 64 + __builtin_ctzll(w[k]);
	if (i < 0 || i > n->nports || !n->ports[i])
		return;

	const struct port *in = n->ports[i];
	uint32_t idx;

	__builtin_prefetch(in, 1);
	if (n->sw_modes & FAB_SW_VOQ) {
		/* every input queues per output (switch.queues=voq) but an
		 * aggregation node's in a FIFO switch: there the head is the
		 * queue's, read below (a stale index is checked, and costs a
		 * line at most) */
		const size_t x = voq_ix(n, i, v, o);

		__builtin_prefetch(&n->voq->cnt[x], 1);
		idx = f->p.sw_voq ? n->voq->head[x] : in->vl[v].inq.head;
	} else {
		idx = in->vl[v].inq.head;
	}
	__builtin_prefetch(&in->vl[v].inq, 1);
	if (idx != SIM_POOL_NIL && (idx >> SIM_POOL_CHUNK_SHIFT) < f->pkts.nchunks)
		__builtin_prefetch(fab_pkt(f, idx), 1);
}

/* The node kind "InfiniBand switch" (port.h). */
const struct port_node_ops sw_node_ops = {
	.candidates = sw_candidates,
	.take = sw_take,
	.sent = sw_sent,
	.receive = sw_receive,
	.notify = sw_notify,
	.rx_prefetch = sw_rx_prefetch,
	.tx_prefetch = sw_tx_prefetch,
};
