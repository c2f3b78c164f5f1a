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
 *    port) is discarded and counted, as IBA 18.2.4.3 requires.
 * The input buffer space is released, and a credit update goes upstream,
 * when the packet's last bit has left through the output.
 */
#include "models/switch/sw.h"

#include <stdlib.h>

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
	if (f->p.ibcc.on && ibcc_sw_init(f, n))		/* FECN marking (ib_cc.c) */
		return -1;
	return n->req && n->req_vls && n->rr ? 0 : -1;
}

void sw_fini(struct fab_node *n)
{
	free(n->req);
	free(n->req_vls);
	free(n->rr);
	ibcc_sw_fini(n);
}

/* The input's head packets (one per VL) ask for their outputs. */
static void input_request(struct port *in, struct port *except)
{
	struct fab *f = in->fab;
	struct fab_node *n = in->node;

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

int sw_route(struct port *in, uint32_t idx)
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

void sw_receive(struct port *in, uint32_t idx)
{
	struct fab *f = in->fab;
	struct fab_node *n = in->node;
	struct pkt *p = fab_pkt(f, idx);
	int out = sw_route(in, idx);

	if (out < 0)
		return;
	/* The next packet over this link likely goes the same way: the
	 * input keeps the output for the look-ahead (port_prefetch), where
	 * it runs. */
	if (f->eng.prefetch)
		in->fwd_hint = n->ports[out];
	p->in_port = in->port_no;
	p->out_port = (uint8_t)out;
	port_pq_push(f, &in->vl[p->vl].inq, idx);
	in->inq_vls |= (uint16_t)(1u << p->vl);
	if (n->ports[out]->has_ibcc)
		ibcc_sw_queued(n->ports[out], p);
	SIM_LOG(SIM_LOG_SWITCH, f->eng.now, "node %d in %u vl %u dlid %u -> out %u (queue %u)",
		n->idx, in->port_no, p->vl, p->dlid, out, in->vl[p->vl].inq.len);
	if (in->vl[p->vl].inq.len == 1 && in->in_flight < f->p.sw_speedup) {
		req_set(n, out, p->vl, in->port_no);
		port_kick(n->ports[out]);
	}
}

/*
 * The first requesting input, in round-robin order after `after`, whose head
 * packet fits the output's credits on VL v; -1 if none. Two passes over the
 * bitset: inputs above `after`, then from 0 up to it.
 */
static int rr_pick(struct port *out, const uint64_t *w, int words, int after,
		   uint8_t v)
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
				uint32_t idx = n->ports[i]->vl[v].inq.head;

				if (port_fits(out, v, fab_pkt(f, idx)->blocks))
					return i;
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
		int i = rr_pick(out, req_word(n, o, v), n->req_words, *rr_at(n, o, v),
				(uint8_t)v);

		if (i >= 0) {
			cand[v] = n->ports[i]->vl[v].inq.head;
			ready |= (uint16_t)(1u << v);
		}
	}
	return ready;
}

uint32_t sw_take(struct port *out, uint8_t chosen, uint32_t idx)
{
	struct fab *f = out->fab;
	struct fab_node *n = out->node;
	struct pkt *p = fab_pkt(f, idx);
	struct port *in = n->ports[p->in_port];
	uint8_t vl = p->vl;	/* the arbiter's choice (chosen): cand[chosen] is on it */

	(void)chosen;
	req_clear(n, out->port_no, vl, in->port_no);
	port_pq_pop(f, &in->vl[vl].inq);
	if (!in->vl[vl].inq.len)
		in->inq_vls &= (uint16_t)~(1u << vl);
	if (out->has_ibcc)
		ibcc_sw_take(out, p);
	*rr_at(n, out->port_no, vl) = p->in_port;
	out->tx_src = in;
	out->tx_src_vl = vl;
	out->tx_src_blocks = p->blocks;
	if (++in->in_flight >= f->p.sw_speedup) {
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
	struct fab *f = out->fab;

	port_rx_free(in, out->tx_src_vl, out->tx_src_blocks);
	/* Back below the speedup: the heads withdrawn at the limit ask again. */
	if (in->in_flight-- == f->p.sw_speedup)
		input_request(in, out);
}

/* The node kind "InfiniBand switch" (port.h). */
const struct port_node_ops sw_node_ops = {
	.candidates = sw_candidates,
	.take = sw_take,
	.sent = sw_sent,
	.receive = sw_receive,
};
