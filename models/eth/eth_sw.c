/* SPDX-License-Identifier: MIT */
/*
 * eth_sw.c - an Ethernet switch for the RoCE and TCP fabrics: a shared
 * packet buffer with output queues per port and priority, as the
 * shared-memory ASICs of datacenter ToRs (Broadcom Trident/Tomahawk,
 * NVIDIA Spectrum) are built.
 *
 * What it models:
 *  - forwarding by the same LFT as the IB fabric (the subnet manager's
 *    routes stand for the L3 routes a RoCE fabric would use; ECMP is not
 *    modelled), with the same port-to-port latency and cut-through;
 *  - admission into the shared buffer (eth.buffer_per_port x ports, in
 *    64-byte cells): a packet of a lossy class (every class without PFC;
 *    CNPs) is dropped when its output queue would exceed alpha x the free
 *    buffer (the dynamic threshold of Choudhury and Hahne, eth.dt_alpha)
 *    or eth.queue_max; with PFC the lossless class is not dropped by the
 *    threshold: its ingress port pauses upstream instead (eth_port.c), and
 *    the buffer keeps headroom for what is still in flight (2 x cable +
 *    2 frames per ingress port). A packet that finds no room at all is
 *    dropped and counted even under PFC ("headroom overrun": it means
 *    the thresholds were set wrong, and tests check it stays zero);
 *  - ingress accounting per (input port, priority) for PFC: a packet counts
 *    against its input until its last bit has left through the output;
 *  - ECN (RFC 3168) marking of ECN-capable packets at enqueue, RED-style on
 *    the instantaneous output queue: no mark below Kmin, probability rising
 *    linearly to Pmax at Kmax, every packet above Kmax (as DCQCN's switches
 *    and ns-3's RdmaHw setups do; eth.kmin = eth.kmax with eth.pmax=1 is
 *    DCTCP's step marking);
 *  - each output serves its priority queues FIFO, CNPs first, then strict
 *    priority or round robin (eth_port_pick), never a paused priority.
 * Output queues live in the output port's inq[] (unused by Ethernet
 * inputs, which queue nothing: output queueing has no head-of-line
 * blocking between outputs; PFC brings it back between priorities).
 */
#include "models/eth/eth_int.h"

#include <stdlib.h>

#include "sim/sim_log.h"

static bool ecn_enabled(const struct fab_params *p)
{
	if (p->eth.ecn != ETH_ECN_AUTO)
		return p->eth.ecn == ETH_ECN_ON;
	/* RoCE marks for DCQCN; TCP's senders react to marks only with
	 * DCTCP (models/tcp), the others get drop-tail. */
	return fab_kind_of(p)->ecn || tcp_wants_ecn(&p->tcp);
}

int eth_sw_init(struct fab *f, struct fab_node *n)
{
	struct eth_sw *s = calloc(1, sizeof(*s));
	const struct net_node *nn = &f->net->nodes[n->idx];
	uint32_t ports = 0;

	if (!s)
		return -1;
	n->eth = s;
	n->lft = nn->lft;
	n->lft_len = nn->lft ? nn->lft_len : 0;
	for (int i = 1; i <= n->nports; i++) {
		struct port *pt = n->ports[i];

		if (!pt)
			continue;
		ports++;
		eth_ecn_thresholds(&f->p, pt->rate, &eth_of(pt)->kmin_cells, &eth_of(pt)->kmax_cells);
		eth_of(pt)->kmin_cells /= IB_BLOCK_BYTES;
		eth_of(pt)->kmax_cells /= IB_BLOCK_BYTES;
		if (eth_of(pt)->pfc) {
			uint32_t h = eth_headroom(&f->p, pt);

			s->headroom_cells += (h + IB_BLOCK_BYTES - 1) / IB_BLOCK_BYTES;
		}
	}
	s->cap_cells = (uint32_t)((uint64_t)f->p.eth.buffer_per_port * ports / IB_BLOCK_BYTES);
	/* The headroom comes on top of the shared pool (ASICs reserve it). */
	s->cap_cells += s->headroom_cells;
	s->ecn = ecn_enabled(&f->p);
	sim_rng_init(&s->rng, f->seed, 0x45434e0000000000ULL | (uint64_t)n->idx);
	return eth_ecmp_init(f, n, s);
}

uint64_t *eth_sw_lb_words(struct fab_node *n)
{
	return n->eth ? &n->eth->lb.chosen : NULL;
}

void eth_sw_fini(struct fab_node *n)
{
	if (n->eth) {
		sw_lb_fini(&n->eth->lb);
	}
	free(n->eth);
	n->eth = NULL;
}

static void drop(struct port *in, struct port *out, uint32_t idx)
{
	struct fab *f = in->fab;
	struct pkt *p = fab_pkt(f, idx);

	SIM_LOG(SIM_LOG_SWITCH, f->eng.now, "node %d drops dlid %u at out %u prio %u: buffer",
		in->node->idx, p->dlid, out->port_no, p->vl);
	out->info.vl[p->vl].drops++;
	out->info.vl[p->vl].xmit_discards++;
	port_rx_free(in, p->vl, p->blocks);
	fab_pkt_drop(f, idx, FAB_DROP_CONGESTION);
}

/* Mark CE with the RED probability of this queue length (cells). */
static void ecn_mark(struct eth_sw *s, struct port *out, struct pkt *p, uint32_t q)
{
	struct eth_port *e = eth_of(out);
	const struct fab_params *fp = &out->fab->p;
	bool mark;

	if (q <= e->kmin_cells)
		return;
	if (q > e->kmax_cells)
		mark = true;
	else
		mark = sim_rng_double(&s->rng) <
		       fp->eth.pmax * (double)(q - e->kmin_cells) /
		       (double)(e->kmax_cells - e->kmin_cells + 1);
	if (!mark || (p->flags & IB_PKT_CE))
		return;
	p->flags |= IB_PKT_CE;
	out->info.vl[p->vl].ecn_marked++;
	out->fab->tot.ecn_marks++;
}

void eth_sw_receive(struct port *in, uint32_t idx)
{
	struct fab *f = in->fab;
	struct fab_node *n = in->node;
	struct eth_sw *s = n->eth;
	struct pkt *p = fab_pkt(f, idx);
	int o = s->lb.mp.grp ? eth_ecmp_route(in, idx) : sw_route(in, idx);
	struct port *out;
	uint8_t prio = p->vl;
	uint32_t q;

	if (o < 0)
		return;
	out = n->ports[o];
	q = eth_of(out)->q_cells[prio];
	if (s->used_cells + p->blocks > s->cap_cells) {
		drop(in, out, idx);
		return;
	}
	if (!eth_of(in)->pfc || prio == ETH_CNP_PRIO) {
		uint32_t free_cells = s->cap_cells - s->headroom_cells > s->used_cells ?
				      s->cap_cells - s->headroom_cells - s->used_cells : 0;
		double limit = f->p.eth.alpha * free_cells;

		if ((double)(q + p->blocks) > limit ||
		    (f->p.eth.queue_max &&
		     (uint64_t)(q + p->blocks) * IB_BLOCK_BYTES > f->p.eth.queue_max)) {
			drop(in, out, idx);
			return;
		}
	}
	s->used_cells += p->blocks;
	if (s->ecn && prio != ETH_CNP_PRIO)
		ecn_mark(s, out, p, q);
	p->in_port = in->port_no;
	p->out_port = (uint8_t)o;
	eth_of(out)->q_cells[prio] = q + p->blocks;
	if ((q + p->blocks) * IB_BLOCK_BYTES > out->info.vl[prio].queue_high)
		out->info.vl[prio].queue_high = (q + p->blocks) * IB_BLOCK_BYTES;
	port_pq_push(f, &out->vl[prio].inq, idx);
	eth_port_ingress(in, prio);
	SIM_LOG(SIM_LOG_SWITCH, f->eng.now, "node %d in %u prio %u dlid %u -> out %u (queue %u cells)",
		n->idx, in->port_no, prio, p->dlid, o, eth_of(out)->q_cells[prio]);
	port_kick(out);
}

uint16_t eth_sw_candidates(struct port *out, uint32_t cand[PORT_NVL], uint16_t *has_data)
{
	uint16_t ready = 0, data = 0;

	for (int prio = 0; prio < ETH_NPRIO; prio++) {
		if (!out->vl[prio].inq.len)
			continue;
		data |= (uint16_t)(1u << prio);
		if (eth_port_fits(out, (uint8_t)prio)) {
			cand[prio] = out->vl[prio].inq.head;
			ready |= (uint16_t)(1u << prio);
		}
	}
	*has_data = data;
	return ready;
}

uint32_t eth_sw_take(struct port *out, uint8_t chosen, uint32_t idx)
{
	(void)chosen;	/* the packet's own priority */
	struct fab *f = out->fab;
	struct pkt *p = fab_pkt(f, idx);

	port_pq_pop(f, &out->vl[p->vl].inq);
	eth_of(out)->q_cells[p->vl] -= p->blocks;
	out->tx_src = out->node->ports[p->in_port];
	out->tx_src_vl = p->vl;
	out->tx_src_blocks = p->blocks;
	return idx;
}

void eth_sw_sent(struct port *out)
{
	struct eth_sw *s = out->node->eth;

	s->used_cells -= out->tx_src_blocks;
	port_rx_free(out->tx_src, out->tx_src_vl, out->tx_src_blocks);
}

/* The node kind "Ethernet switch" (port.h). */
const struct port_node_ops eth_sw_node_ops = {
	.candidates = eth_sw_candidates,
	.take = eth_sw_take,
	.sent = eth_sw_sent,
	.receive = eth_sw_receive,
};
