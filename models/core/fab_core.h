/* SPDX-License-Identifier: MIT */
/*
 * fab_core.h - the state every model of one simulated fabric shares, and
 * the services the models report to.
 *
 * The state: the engine, the parameters, the packet pool, the nodes and
 * their ports (models/port), the totals and the run's failure. The
 * services: stopping the run on an error (fab_fail), dropping a packet
 * (fab_pkt_drop), and a traffic message's post, delivery, completion and
 * loss, which the builder (models/fabric) learns through the hooks it
 * installs (struct fab_hooks): the models below it never name it.
 * Not a public API: tools and tests use models/fabric/fab.h.
 */
#ifndef IBFAB_FAB_CORE_H
#define IBFAB_FAB_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "models/core/fab_stats.h"	/* the totals, the callbacks */
#include "models/core/pkt.h"
#include "models/params/fab_params.h"
#include "models/params/vlarb_params.h"	/* struct ib_vlarb_map */
#include "sim/sim.h"
#include "sim/sim_diag.h"
#include "sim/sim_pool.h"

struct eth_sw;
struct sm_mp;
struct hca;
struct sw_ar;
struct fab_par_ops;
struct sw_voq;
struct fab_faults;
struct hca_cq;
struct hca_mr;
struct port;
struct port_node_ops;
struct fab_stream;
struct hca_transport_ops;
struct hca_cc_ops;

/* At most this many node kinds in one fabric (port.kind indexes fab.node_ops). */
#define FAB_NODE_KINDS 4

/*
 * Where the models report a traffic message's fate (msg: its index in
 * fab.msgs; a message of the replay or the verbs daemon has none, and
 * the builder ignores it). Installed by the builder.
 */
struct fab_hooks {
	/* Post message msg now (its planned time has come: hca_post_at). */
	void (*post)(struct fab *f, uint32_t msg);
	/* Post the next of h's posts known before the run (h->plan_at has
	 * come), and move h->plan_at to the one after. */
	void (*post_planned)(struct fab *f, struct hca *h);
	/* Its first packet is on the wire at t (kept if it is the first). */
	void (*sent)(struct fab *f, int32_t msg, sim_time_t t);
	/* Its data is all at the responder, visible at t. */
	void (*delivered)(struct fab *f, int32_t msg, sim_time_t t);
	/* The requester's completion at t, with its status (enum hca_wc_status). */
	void (*completed)(struct fab *f, int32_t msg, sim_time_t t, uint8_t status);
	/* A datagram's or UC message's packet was lost: the message is. */
	void (*lost)(struct fab *f, uint32_t msg);
	/* The transport gave up on it (TCP's retries2). */
	void (*given_up)(struct fab *f, uint32_t msg);
	/* A report of its fate from another node (delivered at t, or lost:
	 * enum fab_report_kind) reaches its source in another partition
	 * (PORT_EV_REPORT_*). */
	void (*report)(struct fab *f, uint32_t msg, sim_time_t t, uint8_t kind);
	/* Post msg's receive at its destination, which is in another partition
	 * than its source (PORT_EV_RECV). */
	void (*recv)(struct fab *f, uint32_t msg);
};

/*
 * A message's record belongs to its source; what happens to it at another
 * node (delivered at its destination, a packet of it lost in a switch)
 * reaches the source as a report, one look-ahead later (fab_lookahead),
 * as it must between two partitions of a parallel run (models/fabric/fab.c).
 */
enum fab_report_kind { FAB_REPORT_DELIVERED, FAB_REPORT_LOST };

/*
 * A node. Line 0 is what a packet through a switch reads (routing,
 * requests, the kick's Ethernet test); the array is 64-byte aligned, so
 * that line is one line: at 88 bytes a node straddled two for most nodes.
 */
enum { FAB_SW_AR = 1, FAB_SW_VOQ = 2 };

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
	uint8_t type;			/* enum net_node_type */
	/* an IB switch's modes, on the line every packet reads (sw.c):
	 * FAB_SW_AR adaptive routing (ar below), FAB_SW_VOQ per-output
	 * queues (voq); 0 for neither, the common case */
	uint8_t sw_modes;
	/* line 1 */
	int idx;			/* node index in the net */
	/* HCA */
	struct hca *hca;
	/* IB switch with adaptive routing, with virtual output queues
	 * (models/switch/sw.c), else NULL */
	struct sw_ar *ar;
	struct sw_voq *voq;
} __attribute__((aligned(64)));

_Static_assert(offsetof(struct fab_node, type) < 64 && sizeof(struct fab_node) == 128,
	       "fab_node's line 0 as its comment says");

/* A receiver's fault injection, where a link[...] setting gives one its own. */
struct fab_port_fault {
	double drop_prob, ber;
};

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
	uint32_t port_comp0;	/* port_mem[i]'s engine component is port_comp0 + i */
	uint64_t seed;
	/* the ports' node kinds (port.kind indexes it), and whether the
	 * ports have a link layer of their own (port.link: Ethernet) */
	const struct port_node_ops *node_ops[FAB_NODE_KINDS];
	bool port_links;
	/* timing constants */
	sim_time_t sw_lat, hca_lat;
	sim_time_t lookahead;		/* fab_lookahead: a stop's lag, a report's delay */
	sim_time_t finish_max;		/* when the last message finished was known (fab.c) */
	const struct fab_par_ops *par;	/* a partitioned run's engine (fab_set_par), or NULL */
	void *par_ctx;
	sim_time_t hca_wqe, hca_msg;	/* per WQE on one QP; per message on the HCA */
	uint32_t hca_ackreq_mask;	/* hca.ackreq_pkts - 1 (UINT32_MAX: the last packet only) */
	/* results */
	struct fab_totals tot;
	sim_time_t last_done;
	bool failed;
	bool held;		/* another driver ends the run (fab_hold) */
	/* components of every partition (fab_every): a driver's, such as a
	 * trace replay whose every partition has a replica */
	uint32_t every[4], nevery;
	struct sim_diag fail;
	/* the builder's from here on (models/fabric) */
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
	/* the posts known before the run, per node (fab_plan.c); the state of
	 * the messages in flight when the list is compact, and the completion
	 * times of every delivered message (fab_live.c) */
	struct fab_port_fault *port_fault;	/* per port (f->ports order), or NULL: p's */
	struct sm_mp *mp;		/* the switches' equal-cost sets (models/sm/sm_mp.h), or NULL */
	fab_tap_fn tap_fn;		/* the capture the tapped ports' packets go to */
	void *tap_ctx;
	struct fab_plan *plans;
	uint64_t *run_next;	/* compact list: each run's next message to post */
	struct fab_live *live;
	struct fab_done *done;
	struct fab_faults *faults;	/* faults during the run (fab_fault.c), or NULL */
	/* where the models' message reports go (the builder's hooks) */
	const struct fab_hooks *hooks;
	/* read when a QP or an HCA is made, kept off the lines every packet
	 * reads: the transport of the QPs (InfiniBand's), the one for RC QPs
	 * when another carries them (TCP) or NULL; congestion control at the
	 * HCAs (models/cc), or NULL when off */
	const struct hca_transport_ops *transport, *rc_transport;
	const struct hca_cc_ops *cc;
	/* the GPU servers and their NVLink (models/server), or NULL */
	struct srv_map *srv;
	/* events sent to another partition in place of a call (reports,
	 * receives: PORT_EV_REPORT_*, PORT_EV_RECV), which one list has not
	 * (their handlers call sim_aside) */
	uint64_t aside_sent;
};

static inline struct pkt *fab_pkt(const struct fab *f, uint32_t idx)
{
	return sim_pool_get(&f->pkts, idx);
}

/* Stop the run with an error (out of memory, a broken invariant). */
void fab_fail(struct fab *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Drop packet idx (counted), marking its message lost. Data VLs never drop
 * for lack of buffer: the credit checker fails the run before that. */
enum fab_drop { FAB_DROP_VL15, FAB_DROP_ROUTE, FAB_DROP_CORRUPT, FAB_DROP_CONGESTION,
		FAB_DROP_LINK };
void fab_pkt_drop(struct fab *f, uint32_t idx, enum fab_drop why);

/* The reports, through the builder's hooks. */
static inline void fab_traffic_post(struct fab *f, uint32_t msg)
{
	f->hooks->post(f, msg);
}

static inline void fab_traffic_post_planned(struct fab *f, struct hca *h)
{
	f->hooks->post_planned(f, h);
}

static inline void fab_traffic_sent(struct fab *f, int32_t msg, sim_time_t t)
{
	f->hooks->sent(f, msg, t);
}

static inline void fab_traffic_delivered(struct fab *f, int32_t msg, sim_time_t t)
{
	f->hooks->delivered(f, msg, t);
}

static inline void fab_traffic_completed(struct fab *f, int32_t msg, sim_time_t t, uint8_t status)
{
	f->hooks->completed(f, msg, t, status);
}

static inline void fab_traffic_lost(struct fab *f, uint32_t msg)
{
	f->hooks->lost(f, msg);
}

static inline void fab_traffic_given_up(struct fab *f, uint32_t msg)
{
	f->hooks->given_up(f, msg);
}

#endif
