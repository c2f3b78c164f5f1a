/* SPDX-License-Identifier: MIT */
/*
 * hca.c - the traffic edge of a channel adapter: messages in, packets out,
 * packets in, messages delivered.
 *
 * What it models: a message is segmented into path-MTU packets as an RDMA
 * WRITE is (IBA 9.7.3: FIRST/MIDDLE/LAST or ONLY; the first carries the
 * RETH), each packet built only when the transmitter takes it, so nothing is
 * allocated per message and at most the packets on the wire exist. Messages
 * of one stream leave in order; the streams of a VL share the port packet by
 * packet, round-robin, as an HCA's send queues do; VLs are arbitrated by the
 * port's VLArb like any IB port. A message is posted at its time (or when
 * the message it waits for is delivered here) and its first packet may go
 * hca.latency_ns later. The receiver is an infinitely fast sink: a packet's
 * blocks are freed, and credits returned, when its tail arrives.
 * What it leaves out (the HCA issue adds them): queue pairs, ACKs, PSNs,
 * retransmission, PCIe and host memory.
 */
#include "models/fabric/fab_int.h"

#include <stdlib.h>
#include <string.h>

#include "sim/sim_log.h"

/* A stream's posted messages, linked through fab's msg_next. */
struct hca_stream {
	uint32_t head, tail;		/* posted, not fully segmented */
	uint64_t off;			/* bytes of head already segmented */
	uint32_t prev, next;		/* ring of active streams of its VL */
	bool active;
	uint8_t vl;
};

struct hca {
	struct fab *f;
	struct fab_node *n;
	struct fab_port *port;		/* the port traffic leaves by */
	uint16_t lid;
	uint32_t comp;
	struct sim_heap posts;		/* (ready time, seq, msg) */
	uint64_t post_seq;
	struct sim_timer post_timer;
	uint32_t cur[FAB_NVL];		/* current stream of each VL's ring */
	uint16_t active_vls;
};

/* Shared per run: streams and the per-message link, owned by fab. */
struct hca_shared {
	struct hca_stream *streams;
	uint32_t *msg_next;
	uint64_t *rcvd;
};

static struct hca_shared *shared_of(struct fab *f);

static void ring_insert(struct hca *h, uint32_t s)
{
	struct hca_stream *st = shared_of(h->f)->streams;
	uint8_t vl = st[s].vl;

	st[s].active = true;
	if (!(h->active_vls & (1u << vl))) {
		st[s].prev = st[s].next = s;
		h->cur[vl] = s;
		h->active_vls |= (uint16_t)(1u << vl);
		return;
	}
	/* Join at the end of the round: just before the current stream. */
	uint32_t c = h->cur[vl], p = st[c].prev;

	st[s].next = c;
	st[s].prev = p;
	st[p].next = s;
	st[c].prev = s;
}

static void ring_remove(struct hca *h, uint32_t s)
{
	struct hca_stream *st = shared_of(h->f)->streams;
	uint8_t vl = st[s].vl;

	st[s].active = false;
	if (st[s].next == s) {
		h->active_vls &= (uint16_t)~(1u << vl);
		return;
	}
	st[st[s].prev].next = st[s].next;
	st[st[s].next].prev = st[s].prev;
	if (h->cur[vl] == s)
		h->cur[vl] = st[s].next;
}

/* Size of the next packet of stream s. */
static void next_pkt(struct fab *f, const struct hca_stream *st, uint32_t *payload,
		     uint32_t *wire)
{
	const struct fab_msg *m = &f->msgs->v[st->head];
	uint64_t left = m->bytes - st->off;
	uint32_t mtu = m->sl == 0xff ? IB_MAD_BYTES : f->p.mtu;

	*payload = left < mtu ? (uint32_t)left : mtu;
	*wire = ib_wire_bytes(*payload, st->off == 0 && m->sl != 0xff);
}

uint16_t hca_candidates(struct fab_port *pt, uint32_t blocks[FAB_NVL], uint16_t *has_data)
{
	struct hca *h = pt->node->hca;
	struct hca_stream *st = shared_of(pt->fab)->streams;
	uint16_t ready = 0;

	*has_data = 0;
	if (!h || pt != h->port)
		return 0;
	*has_data = h->active_vls;
	for (uint16_t m = h->active_vls; m; m &= m - 1) {
		int v = __builtin_ctz(m);
		uint32_t payload, wire;

		next_pkt(pt->fab, &st[h->cur[v]], &payload, &wire);
		blocks[v] = ib_blocks(wire);
		if (ib_port_fits(pt, (uint8_t)v, blocks[v]))
			ready |= (uint16_t)(1u << v);
	}
	return ready;
}

uint32_t hca_take(struct fab_port *pt, uint8_t vl)
{
	struct fab *f = pt->fab;
	struct hca *h = pt->node->hca;
	struct hca_shared *sh = shared_of(f);
	uint32_t s = h->cur[vl];
	struct hca_stream *st = &sh->streams[s];
	struct fab_msg *m = &f->msgs->v[st->head];
	uint32_t payload, wire;
	uint32_t idx = sim_pool_alloc(&f->pkts);

	if (idx == SIM_POOL_NIL) {
		/* Out of memory: fail the run cleanly rather than crash. */
		f->failed = true;
		sim_diag_set(&f->fail, NULL, 0, 0, "out of memory for packets");
		sim_stop(&f->eng);
		idx = 0;
	}
	struct ib_pkt *p = fab_pkt(f, idx);

	next_pkt(f, st, &payload, &wire);
	memset(p, 0, sizeof(*p));
	p->msg = st->head;
	p->slid = h->lid;
	p->dlid = net_lid_of(f->net, (int)m->dst, net_first_port(f->net, (int)m->dst));
	p->sl = m->sl == 0xff ? 0 : m->sl;
	p->vl = vl;
	p->wire = (uint16_t)wire;
	p->payload = (uint16_t)payload;
	p->blocks = (uint8_t)ib_blocks(wire);
	if (st->off == 0) {
		p->flags |= IB_PKT_FIRST;
		m->first_tx = f->eng.now;
	}
	st->off += payload;
	if (st->off >= m->bytes) {
		p->flags |= IB_PKT_LAST;
		st->off = 0;
		st->head = sh->msg_next[st->head];
		if (st->head == UINT32_MAX) {
			st->tail = UINT32_MAX;
			ring_remove(h, s);
			return idx;
		}
	}
	/* Round-robin among the VL's streams, packet by packet. */
	h->cur[vl] = st->next;
	return idx;
}

void hca_sent(struct fab_port *pt)
{
	(void)pt;
}

void hca_receive(struct fab_port *pt, uint32_t idx)
{
	struct fab *f = pt->fab;
	struct ib_pkt *p = fab_pkt(f, idx);
	struct hca_shared *sh = shared_of(f);
	uint32_t mi = p->msg;
	struct fab_msg *m = &f->msgs->v[mi];
	uint8_t vl = p->vl;
	uint32_t blocks = p->blocks;

	ib_port_rx_free(pt, vl, blocks);
	if ((uint32_t)pt->node->idx != m->dst) {
		SIM_LOG(SIM_LOG_HCA, f->eng.now, "node %d: misrouted packet for dlid %u",
			pt->node->idx, p->dlid);
		pt->info.vl[vl].xmit_discards++;
		fab_pkt_drop(f, idx, FAB_DROP_ROUTE);
		return;
	}
	f->tot.packets_delivered++;
	f->tot.bytes_delivered += p->wire;
	f->tot.payload_delivered += p->payload;
	sh->rcvd[mi] += p->payload;
	bool last = (p->flags & IB_PKT_LAST) && sh->rcvd[mi] >= m->bytes;

	sim_pool_put(&f->pkts, idx);
	if (last) {
		m->end = f->eng.now;
		m->done = true;
		SIM_LOG(SIM_LOG_HCA, f->eng.now, "msg %u delivered (%llu B, %llu ps)", mi,
			(unsigned long long)m->bytes,
			(unsigned long long)(m->end - m->start));
		fab_msg_done(f, mi);
	}
}

static void post_arm(struct hca *h)
{
	const struct sim_event *top = sim_heap_top(&h->posts);

	if (!top)
		return;
	if (h->post_timer.armed && h->post_timer.when <= top->time)
		return;
	sim_timer_arm(&h->f->eng, &h->post_timer, top->time, h->comp, 0);
}

static void post_now(struct hca *h, uint32_t mi)
{
	struct fab *f = h->f;
	struct hca_shared *sh = shared_of(f);
	struct fab_msg *m = &f->msgs->v[mi];
	struct hca_stream *st = &sh->streams[m->stream];

	sh->msg_next[mi] = UINT32_MAX;
	if (st->head == UINT32_MAX) {
		st->head = st->tail = mi;
		st->off = 0;
	} else {
		sh->msg_next[st->tail] = mi;
		st->tail = mi;
	}
	if (!st->active)
		ring_insert(h, m->stream);
	SIM_LOG(SIM_LOG_HCA, f->eng.now, "node %d posts msg %u (%llu B to node %u)",
		h->n->idx, mi, (unsigned long long)m->bytes, m->dst);
}

static void hca_handler(struct sim_engine *eng, void *ctx, uint32_t arg)
{
	struct hca *h = ctx;
	struct sim_event e;
	bool posted = false;

	if (!sim_timer_fire(&h->post_timer, arg))
		return;
	while (sim_heap_top(&h->posts) && sim_heap_top(&h->posts)->time <= eng->now) {
		sim_heap_pop(&h->posts, &e);
		post_now(h, e.comp);
		posted = true;
	}
	post_arm(h);
	if (posted)
		ib_port_kick(h->port);
}

void hca_post(struct fab *f, uint32_t mi, sim_time_t t)
{
	struct fab_msg *m = &f->msgs->v[mi];
	struct hca *h = f->nodes[m->src].hca;
	struct sim_event e = { .time = t + f->hca_lat, .seq = h->post_seq++, .comp = mi };

	m->start = t;
	if (sim_heap_push(&h->posts, &e)) {
		f->failed = true;
		sim_diag_set(&f->fail, NULL, 0, 0, "out of memory posting messages");
		sim_stop(&f->eng);
		return;
	}
	post_arm(h);
}

int hca_init(struct fab *f, struct fab_node *n)
{
	struct hca *h = calloc(1, sizeof(*h));
	int port = net_first_port(f->net, n->idx);

	if (!h)
		return -1;
	n->hca = h;
	h->f = f;
	h->n = n;
	h->port = port > 0 ? n->ports[port] : NULL;
	h->lid = port > 0 ? net_lid_of(f->net, n->idx, port) : 0;
	sim_heap_init(&h->posts);
	int c = sim_register(&f->eng, hca_handler, h, "hca");

	if (c < 0)
		return -1;
	h->comp = (uint32_t)c;
	return 0;
}

void hca_fini(struct fab_node *n)
{
	if (!n->hca)
		return;
	sim_heap_free(&n->hca->posts);
	free(n->hca);
	n->hca = NULL;
}

/* ---- per-run shared state ------------------------------------------------ */

struct hca_shared *hca_shared_new(struct fab *f)
{
	struct hca_shared *sh = calloc(1, sizeof(*sh));
	size_t nm = f->msgs->n ? f->msgs->n : 1, ns = f->msgs->nstreams ? f->msgs->nstreams : 1;

	if (!sh)
		return NULL;
	sh->streams = calloc(ns, sizeof(*sh->streams));
	sh->msg_next = calloc(nm, sizeof(*sh->msg_next));
	sh->rcvd = calloc(nm, sizeof(*sh->rcvd));
	if (!sh->streams || !sh->msg_next || !sh->rcvd) {
		hca_shared_free(sh);
		return NULL;
	}
	for (size_t s = 0; s < ns; s++) {
		sh->streams[s].head = sh->streams[s].tail = UINT32_MAX;
	}
	for (size_t i = 0; i < f->msgs->n; i++) {
		const struct fab_msg *m = &f->msgs->v[i];

		sh->streams[m->stream].vl = m->sl == 0xff ? 15 : f->p.sl2vl[m->sl];
	}
	return sh;
}

void hca_shared_free(struct hca_shared *sh)
{
	if (!sh)
		return;
	free(sh->streams);
	free(sh->msg_next);
	free(sh->rcvd);
	free(sh);
}

static struct hca_shared *shared_of(struct fab *f)
{
	return f->hca_shared;
}
