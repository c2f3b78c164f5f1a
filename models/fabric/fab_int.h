/* SPDX-License-Identifier: MIT */
/*
 * fab_int.h - the simulation's internal state, shared by the port
 * (models/port), the switch (models/switch/sw.c), the HCA edge
 * (models/hca/hca.c) and the builder (models/fabric/fab.c). Not a public API.
 * The ports themselves are models/port/port.h's.
 */
#ifndef IBFAB_FAB_INT_H
#define IBFAB_FAB_INT_H

#include <stddef.h>

#include "models/fabric/fab.h"
#include "models/ib/ib_pkt.h"
#include "models/ib/ib_vlarb.h"
#include "models/port/port.h"
#include "sim/sim.h"
#include "sim/sim_pool.h"
#include "sim/sim_rng.h"

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
 * A node. Line 0 is what a packet through a switch reads (routing,
 * requests, the kick's Ethernet test); the array is 64-byte aligned, so
 * that line is one line: at 88 bytes a node straddled two for most nodes.
 */
struct fab_node {
	struct port **ports;	/* by port number; NULL if unconnected */
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
	struct port **ports;	/* every connected port end */
	struct port *port_mem;	/* their storage, one block (ports[i] = &port_mem[i]) */
	int nports;
	uint64_t seed;
	/* the ports' node kinds (port.kind indexes it), and whether the
	 * ports have a link layer of their own (port.link: Ethernet) */
	const struct port_node_ops *node_ops[PORT_NODE_KINDS];
	bool port_links;
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

/* sw.c: switch input queues and output requests */
int sw_init(struct fab *f, struct fab_node *n);
void sw_fini(struct fab_node *n);
/* A packet's head arrived at input `in` (after the pipeline latency). */
void sw_receive(struct port *in, uint32_t pkt);
/* The LFT's output port for the packet at input `in`, or -1 when it has
 * none (the packet is then dropped and counted). */
int sw_route(struct port *in, uint32_t pkt);
/* Output arbitration: the best packet for output `out` on each VL. Fills
 * cand[vl] with a packet index or SIM_POOL_NIL and returns the VL mask. */
uint16_t sw_candidates(struct port *out, uint32_t cand[PORT_NVL], uint16_t *has_data);
/* The output started sending cand packet: dequeue it at its input. */
uint32_t sw_take(struct port *out, uint8_t vl, uint32_t pkt);
/* The output finished sending it: free the input buffer, re-request. */
void sw_sent(struct port *out);
/* The node kind "InfiniBand switch": the four above. */
extern const struct port_node_ops sw_node_ops;

/* eth_port.c: the Ethernet link layer (fabrics roce, roce-lossy, tcp),
 * a port_link whose ops are these (set by eth_port_init). Receivers count the 64-byte cells they hold per priority (rx_used, as the
 * IB receiver counts credit blocks); PFC sends XOFF upstream above
 * eth.pfc_xoff and XON below eth.pfc_xon; transmitters honour pauses. */
int eth_port_init(struct fab *f, struct port *pt);
void eth_port_fini(struct port *pt);
/* May this transmitter start a packet on priority prio now (not paused)? */
bool eth_port_fits(const struct port *pt, uint8_t prio);
/* A packet's cells entered this receiver (after rx_used grew): XOFF? */
void eth_port_ingress(struct port *rx, uint8_t prio);
/* Cells left this receiver (after rx_used shrank): XON? */
void eth_port_egress(struct port *rx, uint8_t prio);
/* Its events (from PORT_EV_LINK): a pause ending, a pause to refresh. */
void eth_port_handler(struct port *pt, uint32_t arg);
/* Pick the priority to serve among `ready` (strict for CNPs, then eth.sched). */
int eth_port_pick(struct port *pt, uint16_t ready);
/* The transmitter is blocked by pauses on every priority with data. */
void eth_port_blocked(struct port *pt, uint16_t has_data);

/* eth_sw.c: the Ethernet switch (shared buffer, output queues, ECN) */
int eth_sw_init(struct fab *f, struct fab_node *n);
void eth_sw_fini(struct fab_node *n);
void eth_sw_receive(struct port *in, uint32_t pkt);
uint16_t eth_sw_candidates(struct port *out, uint32_t cand[PORT_NVL], uint16_t *has_data);
uint32_t eth_sw_take(struct port *out, uint8_t vl, uint32_t pkt);
void eth_sw_sent(struct port *out);
/* The node kind "Ethernet switch": the four above. */
extern const struct port_node_ops eth_sw_node_ops;

/* hca.c: the traffic edge */
int hca_init(struct fab *f, struct fab_node *n);
void hca_fini(struct fab_node *n);
uint16_t hca_candidates(struct port *pt, uint32_t blocks[PORT_NVL], uint16_t *has_data);
/* Build the next packet on VL vl (the one hca_candidates sized). */
uint32_t hca_take(struct port *pt, uint8_t vl, uint32_t blocks);
void hca_sent(struct port *pt);
/* The tail of a packet reached this HCA. */
void hca_receive(struct port *pt, uint32_t pkt);
/* The node kind "HCA": the four above. */
extern const struct port_node_ops hca_node_ops;

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

#endif
