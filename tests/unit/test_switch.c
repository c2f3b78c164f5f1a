/* SPDX-License-Identifier: MIT */
/*
 * test_switch.c - one switch alone, InfiniBand's (models/switch) and
 * Ethernet's (models/eth), driven by stub ports: the far end of each of
 * its links is a node of a test kind (struct port_node_ops) that sends the
 * packets a case hands it and records those that arrive. No HCA, no
 * transport, no builder: the case assembles the engine, the packet pool,
 * the ports and the switch as the builder would (models/fabric/fab.c),
 * which is what a new node kind or switch model can be tested with.
 *
 * What is checked: a packet's time through an idle switch (cut-through,
 * closed form), the order and spacing of packets two inputs send to one
 * output (and that each arrival is an event of the receiving port), the credits that keep a switch's input buffer from overflowing,
 * a packet for a LID the forwarding table does not know (dropped and
 * counted), and on Ethernet the pause frames of PFC (lossless: nothing
 * dropped) against the drops of a lossy switch with a small buffer.
 */
#include <CUnit/CUnit.h>
#include <stdlib.h>
#include <string.h>

#include "models/core/fab_core.h"
#include "models/eth/eth_ops.h"
#include "models/fabric/fab.h"	/* the parameters' defaults and --set */
#include "models/hca/hca.h"
#include "models/link/link.h"
#include "models/net/net.h"
#include "models/port/port.h"
#include "models/sm/sm_mp.h"
#include "models/switch/sw.h"
#include "test_main.h"

#define NSTUB 4			/* stubs 1..4 on switch ports 1..4, LIDs 1..4 */
#define SW_NODE 0
#define MAX_RX 4096

/* A stub end: the packets it is to send, and what reached it. */
struct stub {
	struct port_pq out;
	uint32_t sent, rcvd;
	sim_time_t rx_t[MAX_RX];
	uint32_t rx_msg[MAX_RX];
	uint8_t rx_src[MAX_RX];
};

/* One switch and its stubs, assembled by hand. */
struct rig {
	struct net net;
	struct fab *f;
	struct stub stub[NSTUB + 1];
	uint32_t lost;
	/* arrival events, and those whose port's receiver took nothing */
	uint64_t arrivals, foreign;
};

static struct rig *the_rig;

static uint16_t stub_candidates(struct port *pt, uint32_t cand[PORT_NVL], uint16_t *has_data)
{
	struct stub *s = &the_rig->stub[pt->node->idx];
	const struct pkt *p;

	*has_data = 0;
	if (!s->out.len)
		return 0;
	p = fab_pkt(pt->fab, s->out.head);
	cand[p->vl] = s->out.head;
	*has_data = (uint16_t)(1u << p->vl);
	return port_fits(pt, p->vl, p->blocks) ? *has_data : 0;
}

static uint32_t stub_take(struct port *pt, uint8_t vl, uint32_t cand)
{
	struct stub *s = &the_rig->stub[pt->node->idx];
	uint32_t idx = port_pq_pop(pt->fab, &s->out);

	(void)vl;
	CU_ASSERT_EQUAL(idx, cand);
	s->sent++;
	return idx;
}

static void stub_sent(struct port *pt)
{
	(void)pt;
}

static void stub_receive(struct port *pt, uint32_t idx)
{
	struct stub *s = &the_rig->stub[pt->node->idx];
	struct pkt *p = fab_pkt(pt->fab, idx);

	port_rx_free(pt, p->vl, p->blocks);
	CU_ASSERT_EQUAL(p->dlid, pt->lid);
	if (s->rcvd < MAX_RX) {
		s->rx_t[s->rcvd] = pt->fab->eng.now;
		s->rx_msg[s->rcvd] = p->msg;
		s->rx_src[s->rcvd] = (uint8_t)p->slid;
	}
	s->rcvd++;
	sim_pool_put(&pt->fab->pkts, idx);
}

/* Every block a port's receiver has taken, on all its VLs. */
static uint64_t rx_blocks(const struct port *pt)
{
	uint64_t n = 0;

	for (int v = 0; v < PORT_NVL; v++)
		n += pt->vl[v].rx_blocks;
	return n;
}

/* The ports' handler, watched: a packet's arrival must be an event of the
 * port that receives it (its own receive buffer takes the blocks), never
 * of the sender's port. */
static void rig_handler(struct sim_engine *eng, void *ctx, uint32_t arg)
{
	const struct port *pt = ctx;
	uint64_t before = rx_blocks(pt);

	port_handler(eng, ctx, arg);
	if ((arg & 0xff) == PORT_EV_WIRE_HEAD) {
		the_rig->arrivals++;
		the_rig->foreign += rx_blocks(pt) == before;
	}
}

static const struct port_node_ops stub_ops = {
	.candidates = stub_candidates,
	.take = stub_take,
	.sent = stub_sent,
	.receive = stub_receive,
};

static void hook_post(struct fab *f, uint32_t msg)
{
	(void)f, (void)msg;
	CU_FAIL("no traffic posts here");
}

static void hook_delivered(struct fab *f, int32_t msg, sim_time_t t)
{
	(void)f, (void)msg, (void)t;
	CU_FAIL("no transport here");
}

static void hook_completed(struct fab *f, int32_t msg, sim_time_t t, uint8_t st)
{
	(void)f, (void)msg, (void)t, (void)st;
	CU_FAIL("no transport here");
}

static void hook_lost(struct fab *f, uint32_t msg)
{
	(void)f, (void)msg;
	the_rig->lost++;
}

static const struct fab_hooks hooks = {
	.post = hook_post, .delivered = hook_delivered, .completed = hook_completed,
	.lost = hook_lost, .given_up = hook_lost,
};

/*
 * The switch (node 0, NSTUB ports) and a stub on each port, every link
 * `rate` with `metres` of cable, but the link of switch port `slow` (0:
 * none) 1x; parameters p (their fabric decides the switch and the link
 * layer).
 */
static struct rig *rig_new(const struct fab_params *p, struct link_rate rate, double metres,
			   int slow)
{
	struct rig *r = calloc(1, sizeof(*r));
	struct sim_diag d;
	struct fab *f;
	int nports = 0;

	CU_ASSERT_FATAL(r != NULL);
	the_rig = r;
	net_init(&r->net);
	CU_ASSERT_FATAL(net_add_node(&r->net, NET_SWITCH, NSTUB, "sw", "sw", &d) == SW_NODE);
	for (int i = 1; i <= NSTUB; i++) {
		char id[16];

		snprintf(id, sizeof(id), "stub%d", i);
		CU_ASSERT_FATAL(net_add_node(&r->net, NET_CA, 1, id, id, &d) == i);
		CU_ASSERT_FATAL(net_connect(&r->net, SW_NODE, i, i, 1, 0, &d) == 0);
	}
	/* the forwarding table: LID i leaves by port i; LID 7 has no route */
	r->net.nodes[SW_NODE].lft_len = 8;
	r->net.nodes[SW_NODE].lft = malloc(8);
	CU_ASSERT_FATAL(r->net.nodes[SW_NODE].lft != NULL);
	memset(r->net.nodes[SW_NODE].lft, 255, 8);
	for (int i = 1; i <= NSTUB; i++)
		r->net.nodes[SW_NODE].lft[i] = (uint8_t)i;

	f = r->f = calloc(1, sizeof(*f));
	CU_ASSERT_FATAL(f != NULL);
	f->net = &r->net;
	f->p = *p;
	f->hooks = &hooks;
	ib_vlarb_map_init(&f->vlarb_map, &p->vlarb);
	f->seed = 1;
	f->sw_lat = (sim_time_t)p->sw_latency_ns * SIM_NS;
	CU_ASSERT_FATAL(sim_init(&f->eng) == 0);
	sim_pool_init(&f->pkts, sizeof(struct pkt));
	/* the nodes and their ports, as the builder lays them out */
	f->nnodes = r->net.nnodes;
	f->nodes = aligned_alloc(64, (size_t)f->nnodes * sizeof(*f->nodes));
	CU_ASSERT_FATAL(f->nodes != NULL);
	memset(f->nodes, 0, (size_t)f->nnodes * sizeof(*f->nodes));
	f->port_mem = aligned_alloc(64, 2 * NSTUB * sizeof(struct port));
	f->ports = calloc(2 * NSTUB, sizeof(*f->ports));
	CU_ASSERT_FATAL(f->port_mem && f->ports);
	memset(f->port_mem, 0, 2 * NSTUB * sizeof(struct port));
	for (int i = 0; i < f->nnodes; i++) {
		struct fab_node *n = &f->nodes[i];

		n->idx = i;
		n->type = r->net.nodes[i].type;
		n->nports = r->net.nodes[i].nports;
		n->ports = calloc((size_t)n->nports + 1, sizeof(*n->ports));
		CU_ASSERT_FATAL(n->ports != NULL);
		for (int k = 1; k <= n->nports; k++) {
			struct port *pt = &f->port_mem[nports];

			pt->fab = f;
			pt->node = n;
			pt->port_no = (uint8_t)k;
			n->ports[k] = pt;
			f->ports[nports++] = pt;
		}
	}
	f->nports = nports;
	/* node kind 0: the stubs; kind 1: the fabric's switch */
	bool eth = fab_is_eth(p);

	f->node_ops[0] = &stub_ops;
	f->node_ops[1] = eth ? &eth_sw_node_ops : &sw_node_ops;
	f->port_links = eth;
	int comp = sim_register_range(&f->eng, rig_handler, f->port_mem, sizeof(struct port),
				      (uint32_t)nports, "port");

	CU_ASSERT_FATAL(comp >= 0);
	f->port_comp0 = (uint32_t)comp;
	for (int pi = 0; pi < nports; pi++) {
		struct port *pt = f->ports[pi];
		const struct net_port *np = &r->net.nodes[pt->node->idx].ports[pt->port_no];

		pt->peer = f->nodes[np->remote_node].ports[np->remote_port];
		pt->rate = rate;
		if (slow && (pt->node->idx == slow || (pt->is_sw && pt->port_no == slow)))
			pt->rate.lanes = 1;
		pt->prop = link_prop_ps(metres, p->ps_per_m);
		pt->is_sw = pt->node->type == NET_SWITCH;
		pt->peer_is_sw = !pt->is_sw;
		pt->kind = pt->is_sw ? 1 : 0;
		pt->lid = pt->is_sw ? 5 : (uint16_t)pt->node->idx;
		pt->comp = (uint32_t)comp + (uint32_t)pi;
		CU_ASSERT_FATAL(port_init(f, pt) == 0);
		if (eth)
			CU_ASSERT_FATAL(eth_port_init(f, pt) == 0);
	}
	for (int pi = 0; pi < nports; pi++)
		port_link_up(f->ports[pi]);
	CU_ASSERT_FATAL((eth ? eth_sw_init : sw_init)(f, &f->nodes[SW_NODE]) == 0);
	for (int i = 1; i <= NSTUB; i++)
		r->stub[i].out.head = r->stub[i].out.tail = SIM_POOL_NIL;
	return r;
}

static void rig_free(struct rig *r)
{
	struct fab *f = r->f;

	(fab_is_eth(&f->p) ? eth_sw_fini : sw_fini)(&f->nodes[SW_NODE]);
	sm_mp_free(f->mp);	/* the builder's part, as fab_destroy does it */
	for (int pi = 0; pi < f->nports; pi++) {
		port_fini(f->ports[pi]);
		if (fab_is_eth(&f->p))
			eth_port_fini(f->ports[pi]);
	}
	for (int i = 0; i < f->nnodes; i++)
		free(f->nodes[i].ports);
	free(f->nodes);
	free(f->ports);
	free(f->port_mem);
	sim_pool_fini(&f->pkts);
	sim_fini(&f->eng);
	free(f);
	net_free(&r->net);
	free(r);
	the_rig = NULL;
}

/* Stub `from` is to send `count` packets of `wire` bytes to LID dlid on
 * VL vl (messages numbered from msg0); they go when its port is free. */
static void send(struct rig *r, int from, uint16_t dlid, uint32_t count, uint16_t wire,
		 uint8_t vl, uint32_t msg0)
{
	struct fab *f = r->f;
	struct port *pt = f->nodes[from].ports[1];

	for (uint32_t i = 0; i < count; i++) {
		uint32_t idx = sim_pool_alloc(&f->pkts);
		struct pkt *p;

		CU_ASSERT_FATAL(idx != SIM_POOL_NIL);
		p = fab_pkt(f, idx);
		memset(p, 0, sizeof(*p));
		p->slid = (uint16_t)from;
		p->dlid = dlid;
		p->vl = vl;
		p->wire = wire;
		p->payload = wire;
		p->blocks = (uint8_t)ib_blocks(wire);
		p->msg = msg0 + i;
		p->qpt = HCA_QPT_UD;	/* a loss is the message's (fab_pkt_drop) */
		p->opcode = IB_OP_NONE;
		port_pq_push(f, &r->stub[from].out, idx);
	}
	port_kick(pt);
}

static struct fab_params params(const char *fabric)
{
	struct fab_params p;
	struct sim_diag d;
	char kv[64];

	fab_params_default(&p);
	snprintf(kv, sizeof(kv), "fabric=%s", fabric);
	CU_ASSERT_FATAL(fab_params_set(&p, kv, &d) == 0);
	return p;
}

static const struct link_rate hdr = { 4, LINK_HDR };

/*
 * One packet through an idle IB switch: its head reaches the switch after
 * the cable, the switch forwards after its latency (cut-through), and the
 * last bit leaves one serialisation later and lands after the second
 * cable: t = 2 prop + sw_lat + ser.
 */
static void test_ib_one_packet(void)
{
	struct fab_params p = params("ib");
	struct rig *r = rig_new(&p, hdr, 2.0, 0);
	struct fab *f = r->f;
	sim_time_t prop = link_prop_ps(2.0, p.ps_per_m), ser = link_ser_ps(hdr, 4150);

	send(r, 1, 3, 1, 4150, 0, 0);
	sim_run(&f->eng);
	CU_ASSERT_FALSE(f->failed);
	CU_ASSERT_EQUAL(r->stub[3].rcvd, 1);
	CU_ASSERT_EQUAL(r->stub[3].rx_t[0], 2 * prop + f->sw_lat + ser);
	CU_ASSERT_EQUAL(f->tot.packet_hops, 2);
	for (int i = 1; i <= NSTUB; i++)
		if (i != 3)
			CU_ASSERT_EQUAL(r->stub[i].rcvd, 0);
	rig_free(r);
}

/*
 * Two inputs to one output: every packet arrives, each input's in its
 * order, and once the output is busy they leave back to back (one
 * serialisation apart): the output is the bottleneck, never idle.
 */
static void test_ib_two_to_one(void)
{
	struct fab_params p = params("ib");
	struct rig *r = rig_new(&p, hdr, 1.0, 0);
	struct fab *f = r->f;
	sim_time_t ser = link_ser_ps(hdr, 2118);
	uint32_t next[3] = { 0, 0, 1000 };

	send(r, 1, 4, 50, 2118, 0, 0);
	send(r, 2, 4, 50, 2118, 0, 1000);
	sim_run(&f->eng);
	CU_ASSERT_FALSE(f->failed);
	CU_ASSERT_EQUAL(r->stub[4].rcvd, 100);
	/* 100 packets, two hops each: 200 arrivals, each the receiver's */
	CU_ASSERT_EQUAL(r->arrivals, 200);
	CU_ASSERT_EQUAL(r->foreign, 0);
	for (uint32_t k = 0; k < r->stub[4].rcvd; k++) {
		uint8_t src = r->stub[4].rx_src[k];

		CU_ASSERT_FATAL(src == 1 || src == 2);
		CU_ASSERT_EQUAL(r->stub[4].rx_msg[k], next[src]);
		next[src]++;
		if (k)
			CU_ASSERT_EQUAL(r->stub[4].rx_t[k] - r->stub[4].rx_t[k - 1], ser);
	}
	rig_free(r);
}

/*
 * Credits: with room for two packets per VL at the switch's input and an
 * output four times slower than the input, the input fills; the stub
 * may send only when the switch's FC packets say so, and the receiver's
 * check (port.c: a credit violation fails the run) never trips.
 */
static void test_ib_credits(void)
{
	struct fab_params p = params("ib");
	struct sim_diag d;

	CU_ASSERT_FATAL(fab_params_set(&p, "ib.buffer=4352", &d) == 0);
	struct rig *r = rig_new(&p, hdr, 1.0, 2);	/* port 2 1x: a quarter of the input */
	struct fab *f = r->f;

	send(r, 1, 2, 200, 2118, 0, 0);
	sim_run(&f->eng);
	CU_ASSERT_FALSE(f->failed);
	CU_ASSERT_EQUAL(r->stub[2].rcvd, 200);
	CU_ASSERT_TRUE(f->nodes[1].ports[1]->waiting || f->tot.fc_pkts > 0);
	/* at most the buffer was ever held at the switch's input */
	CU_ASSERT_TRUE(f->nodes[SW_NODE].ports[1]->vl[0].buf_high <= 4352);
	CU_ASSERT_TRUE(f->nodes[SW_NODE].ports[1]->vl[0].buf_high >= 2 * 64 * ib_blocks(2118));
	rig_free(r);
}

/* A LID the forwarding table does not know: dropped at the switch and
 * counted as a routing drop, its message lost; the others pass. */
static void test_ib_no_route(void)
{
	struct fab_params p = params("ib");
	struct rig *r = rig_new(&p, hdr, 1.0, 0);
	struct fab *f = r->f;

	send(r, 1, 7, 3, 256, 0, 0);
	send(r, 2, 1, 2, 256, 0, 10);
	sim_run(&f->eng);
	CU_ASSERT_FALSE(f->failed);
	CU_ASSERT_EQUAL(f->tot.drops_route, 3);
	CU_ASSERT_EQUAL(f->tot.drops, 3);
	CU_ASSERT_EQUAL(r->lost, 3);
	CU_ASSERT_EQUAL(r->stub[1].rcvd, 2);
	rig_free(r);
}

/*
 * Ethernet: three stubs send 1.2 MB each at line rate to the fourth, a
 * backlog larger than the switch's buffer. With PFC the switch pauses its
 * inputs and drops nothing; a lossy switch with a small buffer drops, and
 * every packet sent is either received or counted as a congestion drop.
 */
static void eth_incast(const char *fabric, bool lossless)
{
	struct fab_params p = params(fabric);
	struct sim_diag d;

	/* lossy: a buffer too small for the backlog (PFC's default XOFF
	 * threshold needs the default buffer) */
	if (!lossless)
		CU_ASSERT_FATAL(fab_params_set(&p, "eth.buffer_per_port=32768", &d) == 0);
	CU_ASSERT_FATAL(fab_params_set(&p, "eth.ecn=off", &d) == 0);
	struct rig *r = rig_new(&p, hdr, 1.0, 0);
	struct fab *f = r->f;

	for (int i = 1; i <= 3; i++)
		send(r, i, 4, 300, 4170, 3, (uint32_t)i * 1000);
	sim_run(&f->eng);
	CU_ASSERT_FALSE(f->failed);
	CU_ASSERT_EQUAL(r->stub[4].rcvd + f->tot.drops_congestion, 900);
	CU_ASSERT_EQUAL(r->lost, f->tot.drops_congestion);
	if (lossless) {
		CU_ASSERT_EQUAL(f->tot.drops, 0);
		CU_ASSERT_EQUAL(r->stub[4].rcvd, 900);
		CU_ASSERT_TRUE(f->tot.pause_frames > 0);
	} else {
		CU_ASSERT_TRUE(f->tot.drops_congestion > 0);
		CU_ASSERT_EQUAL(f->tot.pause_frames, 0);
	}
	rig_free(r);
}

static void test_eth_pfc(void)
{
	eth_incast("roce", true);
}

static void test_eth_lossy(void)
{
	eth_incast("roce-lossy", false);
}

static const struct test_case tests[] = {
	{ "IB switch alone: one packet's time, cut-through", test_ib_one_packet },
	{ "IB switch alone: two inputs to one output", test_ib_two_to_one },
	{ "IB switch alone: credits hold a small input buffer", test_ib_credits },
	{ "IB switch alone: no route drops and counts", test_ib_no_route },
	{ "Ethernet switch alone: PFC pauses, nothing dropped", test_eth_pfc },
	{ "Ethernet switch alone: lossy drops what does not fit", test_eth_lossy },
	{ NULL, NULL },
};

TEST_MAIN("switch", tests)
