/* SPDX-License-Identifier: MIT */
/*
 * fab.h - a simulated InfiniBand fabric built from a fabric graph (net.h):
 * parameters, the messages to carry, and what the run measured.
 *
 * fab_create() instantiates one HCA per channel adapter and one switch per
 * switch node, wires every cable as two link directions with their own
 * propagation delay, installs the LFTs the subnet manager computed, and
 * queues the messages at their source HCAs. fab_run() runs the engine until
 * every message is delivered (or a time limit). Results are read back from
 * the message list (per-message start/end) and the per-port counters.
 */
#ifndef IBFAB_FAB_H
#define IBFAB_FAB_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "models/eth/eth.h"
#include "models/host/host.h"
#include "models/ib/ib_cc.h"
#include "models/ib/ib_vlarb.h"
#include "models/roce/dcqcn.h"
#include "models/server/server.h"
#include "models/tcp/tcp.h"
#include "models/net/net.h"
#include "sim/sim.h"
#include "sim/sim_diag.h"

#define FAB_MAX_VLS 15		/* data VLs 0..14; VL15 is management */
#define FAB_VL15 15
#define FAB_NSL 16
/* sim.max_csv_rows' default: 2^24 rows of links.csv, about 0.7 GB at the
 * 40-50 bytes a row takes */
#define FAB_MAX_CSV_ROWS (1ull << 24)

/*
 * The fabric a run uses on the same topology (docs/architecture.md,
 * "Fabrics"): InfiniBand with credits; RoCEv2 over Ethernet with PFC
 * (lossless) or without it (lossy: drops recovered by go-back-N); or TCP
 * over lossy Ethernet. One line each: its id, its name (fabric=NAME), what
 * it is (for --help), and its properties (struct fab_kind below).
 */
#define FAB_FABRICS(X) \
	X(IB, "ib", "InfiniBand: credit-based flow control, never drops", .ibcc = true) \
	X(ROCE, "roce", "RoCEv2 over Ethernet with PFC (lossless) and ECN", \
	  .eth = true, .pfc = true, .dcqcn = true, .ecn = true) \
	X(ROCE_LOSSY, "roce-lossy", "RoCEv2 without PFC: drops, recovered by go-back-N", \
	  .eth = true, .dcqcn = true, .ecn = true) \
	X(TCP, "tcp", "TCP over lossy Ethernet, with the host stack's cost", \
	  .eth = true, .tcp = true)

enum fab_fabric {
#define FAB_FABRIC_ENUM(id, name, what, ...) FAB_FABRIC_##id,
	FAB_FABRICS(FAB_FABRIC_ENUM)
#undef FAB_FABRIC_ENUM
	FAB_NFABRICS
};
extern const char *const fab_fabric_names[];	/* "ib", "roce", "roce-lossy", "tcp", NULL */

/*
 * What a fabric kind is made of: one line of FAB_FABRICS above (its name,
 * what it is, its properties), from which the enum, fab_fabric_names[] and
 * fab_kinds[] (models/core/fab_core.c) are made. The models ask these
 * properties, never which fabric it is.
 */
struct fab_kind {
	const char *what;	/* one line for --help: what it is */
	bool eth;	/* Ethernet ports and switches (else IB credits and switches) */
	bool pfc;	/* lossless by PFC (else a full Ethernet queue drops) */
	bool tcp;	/* TCP carries the RC queue pairs' messages (else the IB transports) */
	bool dcqcn;	/* dcqcn.on applies (RoCEv2 congestion control) */
	bool ibcc;	/* ib.cc applies (IB congestion control, Annex A10) */
	bool ecn;	/* switches mark ECN under eth.ecn=auto (TCP: only with DCTCP) */
};
extern const struct fab_kind fab_kinds[FAB_NFABRICS];
int fab_fabric_parse(const char *name);		/* enum value, or -1 */

/*
 * One cable's (or a group's) own value of a link key, given as
 * `--set 'link[NODE].KEY=V'` or `link[NODE/PORT]`, `link[NODE/LO-HI]`:
 * the cables at those ports of the nodes NODE names (an id, a
 * description, a GUID as 0x..., or a shell pattern of ids or
 * descriptions), both directions. Later settings win over earlier ones.
 */
#define FAB_LINK_SETS 32
enum fab_link_key { FAB_LK_WIDTH, FAB_LK_SPEED, FAB_LK_CABLE_M, FAB_LK_DROP, FAB_LK_BER, FAB_LK_STATE,
		    FAB_LK_PEER };	/* a new cable from NODE/PORT to peer/peer_port */

struct fab_link_set {
	char node[64];
	uint8_t port_lo, port_hi;	/* 0-255: every port */
	uint8_t key;			/* enum fab_link_key */
	uint8_t lanes, speed;		/* width, speed */
	double value;			/* cable_m, drop_prob, ber; state: 1 down, 0 active */
	char peer[64];			/* peer: the new cable's other end */
	uint8_t peer_port;
};

/* A switch the topology file does not have, given as `--set
 * 'switch[NAME].ports=N'`: added before routing, cabled with
 * link[NAME/P].peer=NODE/Q. */
#define FAB_SWITCH_ADDS 8
struct fab_switch_add {
	char name[64];
	uint8_t ports;
};

struct fab_params {
	uint8_t fabric;			/* fabric: enum fab_fabric */
	/* link */
	uint8_t lanes;			/* link.width  (default for links the file leaves open) */
	uint8_t speed;			/* link.speed  (enum link_speed) */
	bool link_forced;		/* link.width or link.speed given with --set */
	bool width_forced;		/* link.width given: every link's width, the file's too */
	bool speed_forced;		/* link.speed given: every link's speed; each keeps its width */
	double cable_m;			/* link.cable_m */
	uint32_t ps_per_m;		/* link.ps_per_m (propagation) */
	/* IB link layer */
	uint32_t mtu;			/* ib.mtu: 256, 512, 1024, 2048, 4096 */
	uint8_t vls;			/* ib.vls: operational data VLs 1, 2, 4, 8 (or up to 15) */
	uint32_t vl_buf_bytes;		/* ib.buffer: receive buffer per input port and VL */
	uint32_t vl15_buf_bytes;	/* ib.vl15_buffer */
	uint32_t fc_period_ns;		/* ib.fc_period_ns: periodic FC packets (0 = off) */
	uint32_t fc_threshold;		/* ib.fc_threshold: blocks freed before an FC update (0 = never on free) */
	uint8_t sl2vl[FAB_NSL];		/* ib.sl2vl: SL -> VL (same table on every port) */
	struct ib_vlarb_params vlarb;	/* vlarb.high, vlarb.low, vlarb.limit_high */
	/* switch */
	uint32_t sw_latency_ns;		/* switch.latency_ns: port-to-port, head in -> head out */
	/* HCA */
	uint32_t hca_latency_ns;	/* hca.latency_ns: post -> first bit on the wire */
	uint32_t hca_wqe_ns;		/* hca.wqe_ns: a QP starts at most one WQE per this */
	uint32_t hca_max_mpps;		/* hca.max_mpps: messages started per us, all QPs (0 = no cap) */
	uint32_t hca_buf_bytes;		/* hca.buffer: HCA receive buffer per VL */
	/* run */
	uint64_t sample_ns;		/* sim.sample_ns: CSV time-series interval */
	uint64_t max_time_ns;		/* sim.max_time_ns: stop there (0 = none) */
	uint64_t max_memory;		/* sim.max_memory: a trace's lowered program (0 = half of RAM) */
	uint64_t max_csv_rows;		/* sim.max_csv_rows: links.csv stops there (0 = no limit) */
	bool check;			/* sim.check: walk every link's credits after each event */
	char preset[16];
	/* Tables given with fab_params_set() stop following ib.vls (fab_params.c). */
	bool sl2vl_set, vlarb_high_set, vlarb_low_set;
	/* transport (the traffic's QPs; IBA 9.7.6 and Table 45) */
	uint8_t hca_timeout;		/* hca.timeout: local ACK timeout 4.096 us x 2^n (0 = none) */
	uint8_t hca_retry_cnt;		/* hca.retry_cnt */
	uint8_t hca_rnr_retry;		/* hca.rnr_retry (7 = for ever) */
	uint8_t hca_min_rnr_timer;	/* hca.min_rnr_timer (Table 45 code) */
	uint8_t hca_max_rd_atomic;	/* hca.max_rd_atomic: READs/atomics in flight per QP */
	/* fault injection */
	double drop_prob;		/* link.drop_prob: a packet fails its CRC at the receiver */
	double ber;			/* link.ber: bit error rate, per bit on the wire */
	uint32_t hca_max_inline;	/* hca.max_inline: traffic messages up to this size go inline */
	uint32_t hca_dma_window;	/* hca.dma_window: payload DMA reads in flight per QP (packets) */
	/* the host behind every HCA (models/host): host.KEY=VALUE */
	bool host_model;		/* host.model: off = an ideal host (no PCIe, no DMA latency) */
	uint8_t sw_speedup;		/* switch.speedup: packets one input feeds to outputs at once */
	/* adaptive routing at the IB switches (models/switch/sw_lb.c) and
	 * out-of-order arrival at the HCAs (models/hca/qp_ooo.c) */
	bool sw_voq;			/* switch.queues=voq (else fifo) */
	bool ib_ar;			/* ib.ar */
	bool ib_sharp;			/* ib.sharp: algo=auto allreduces use SHARP (collnet) */
	bool ib_ar_flowlet;		/* ib.ar_mode=flowlet (else per packet) */
	uint16_t ib_ar_sl_mask;		/* ib.ar_sl_mask: SLs routed adaptively */
	uint32_t ib_ar_flowlet_ns;	/* ib.ar_flowlet_ns: idle gap that ends a flowlet */
	uint8_t hca_ooo;		/* hca.ooo: enum fab_ooo */
	uint32_t hca_ooo_window;	/* hca.ooo_window: PSNs ahead it holds */
	uint64_t sm_reroute_ns;		/* sm.reroute_ns: a link's change to new tables (0: never) */
	struct host_params host;
	struct eth_params eth;		/* eth.*: Ethernet switches, PFC, ECN (roce, tcp) */
	struct dcqcn_params dcqcn;	/* dcqcn.*: RoCE congestion control */
	struct ibcc_params ibcc;	/* ib.cc*: IB congestion control (Annex A10) */
	struct tcp_params tcp;		/* tcp.*: TCP and the host stack */
	struct srv_params server;	/* server.*: GPU servers and NVLink (models/server) */
	/* link[...].KEY: single cables' own values, in the order given (last,
	 * 2.5 KB, away from the fields the hot path reads) */
	uint8_t nlink_sets;
	struct fab_link_set link_sets[FAB_LINK_SETS];
	uint8_t nswitch_adds;
	struct fab_switch_add switch_adds[FAB_SWITCH_ADDS];
};

static inline const struct fab_kind *fab_kind_of(const struct fab_params *p)
{
	return &fab_kinds[p->fabric];
}

static inline bool fab_is_eth(const struct fab_params *p)
{
	return fab_kind_of(p)->eth;
}

/* hca.ooo: does RC take packets that overtook others (qp_ooo.c)? auto:
 * where the fabric sends one flow's packets over several paths (IB
 * adaptive routing; Ethernet flowlets or spraying), as NCCL turns the
 * HCAs' out-of-order placement on where it turns AR on. */
enum fab_ooo { FAB_OOO_AUTO, FAB_OOO_OFF, FAB_OOO_ON };

static inline bool fab_ooo(const struct fab_params *p)
{
	if (p->hca_ooo != FAB_OOO_AUTO)
		return p->hca_ooo == FAB_OOO_ON;
	return fab_is_eth(p) ? p->eth.lb == ETH_LB_FLOWLET || p->eth.lb == ETH_LB_SPRAY : p->ib_ar;
}

/* Fill with the default preset ("hdr"). */
void fab_params_default(struct fab_params *p);
/* Apply a named preset (sdr ... xdr): returns -1 and fills d when unknown. */
int fab_params_preset(struct fab_params *p, const char *name, struct sim_diag *d);
/* Apply one "key=value" override; -1 with a message naming the key and what was expected. */
int fab_params_set(struct fab_params *p, const char *kv, struct sim_diag *d);
/* Whether link set s names port `port` of node n (its id, description or GUID). */
bool fab_link_set_matches(const struct fab_link_set *s, const struct net_node *n, int port);
/* "link[NODE/PORT].KEY=VALUE" of set s into buf (JSON, messages). */
void fab_link_set_format(const struct fab_link_set *s, char *buf, size_t len);
/* The topology as the settings change it, before it is routed: the
 * switches switch[...] adds, the cables link[...].state=down takes out
 * (a cable that is not there) and those link[...].peer= adds, in that
 * order; 0, or -1 with d naming a setting that matches no cable, a port
 * that is taken or out of range, a node that is not there. */
int fab_link_sets_cut(struct net *n, const struct fab_params *p, struct sim_diag *d);
/* The width and speed settings of link[...] written into n's cables (both
 * ends), for what reads rates from the graph (topo check's findings); a
 * fabric applies them itself. A cable the file gives no rate takes the
 * preset's for what the setting leaves. 0, or -1 with d naming a setting
 * that names no cable. */
int fab_link_sets_rates(struct net *n, const struct fab_params *p, struct sim_diag *d);
/* Cross-field checks (VLs in the tables exist, MTU fits the buffers, ...). */
int fab_params_check(const struct fab_params *p, struct sim_diag *d);
/* Print every key, its current value and meaning (for --help and docs). */
void fab_params_print(const struct fab_params *p, FILE *out);
/* Names of the presets, NULL-terminated. */
extern const char *const fab_preset_names[];

/* What a message is on the wire (the work request its source posts). */
enum fab_op { FAB_OP_WRITE, FAB_OP_READ, FAB_OP_SEND };

/*
 * One message between HCA `src` and HCA `dst` (node indexes in the net):
 * `bytes` written to dst, sent to dst, or - FAB_OP_READ - read by src from
 * dst. Each stream is one RC queue pair, or one UD queue pair when `ud` is
 * set (SENDs of at most one MTU: a datagram each, on the SL's VL) or sl is
 * 0xff (a management datagram on VL15); messages of a stream are work
 * requests posted in order, different streams share the port packet by
 * packet. A message is
 * posted at `post`, or - when after >= 0 - `after_delay` after message
 * `after` was delivered at this message's source (a ping-pong reply), or,
 * with `after_cqe`, after message `after`'s work completion at the
 * requester, which must be this message's source (a send window).
 */
struct fab_msg {
	/* Ordered widest first and the flags in bits: 80 bytes, not the 96 of
	 * declaration order. Traffic specs make one per message (1.19M for
	 * bench/run's B1 at 1 s), and memory first touched costs time. */
	uint64_t bytes;
	sim_time_t post;
	sim_time_t after_delay;
	/* results */
	sim_time_t start;	/* posted (after dependencies) */
	sim_time_t first_tx;	/* first bit of the first packet on the wire */
	sim_time_t end;		/* delivered: its data complete where it goes */
	sim_time_t completed;	/* the requester's work completion (after the ACK, for RC) */
	/* input */
	uint32_t src, dst;
	int32_t after;
	uint32_t stream;
	uint8_t op;		/* enum fab_op */
	uint8_t mem;		/* enum hca_mem: both ends' buffers in host or GPU memory */
	uint8_t sl;
	bool ud : 1;		/* an unreliable datagram (UD QP), not RC: op is SEND */
	/* input: `after` waits for that message's requester completion (its
	 * CQE, polled) rather than its delivery; both messages share a source */
	bool after_cqe : 1;
	/* results */
	bool done : 1;		/* delivered */
	bool cqe : 1;		/* completed at the requester */
	bool lost : 1;		/* will never be delivered (dropped datagram, failed WR) */
	bool finished : 1;	/* delivered or lost, and completed */
	bool staged : 1;	/* GPU data copied to host memory before the post (no GPUDirect) */
	uint8_t status;		/* of that completion (enum hca_wc_status; 0 = success) */
};

/* Carried by a UD queue pair: a datagram on a data VL, or a VL15 MAD. */
static inline bool fab_msg_is_ud(const struct fab_msg *m)
{
	return m->ud || m->sl == 0xff;
}

/*
 * Messages of one stream in compact form: `count` messages like m, the
 * k-th (index first + k) posted at m.post + k * gap. A constant-rate
 * stream of a million messages is one of these, not 80 MB.
 */
struct fab_msg_run {
	struct fab_msg m;	/* the first message's input (no results) */
	uint64_t first, count;
	sim_time_t gap;
};

/*
 * The messages of a run, in one of two forms. Explicit (the default):
 * v[] holds every message, and the fabric writes each one's results there
 * (reports that list messages read them). Compact (`compact` set before
 * the first fab_msgs_add): consecutive messages of a stream that differ
 * only by a constant step in post time, with no dependency, are kept as
 * one run (struct fab_msg_run) and v stays empty; the fabric then holds
 * state only for the messages in flight and keeps their results as
 * running statistics (fab_completions), and, when asked, their records on
 * disk (fab_keep_results, fab_msg_result), so memory follows what is in
 * flight, not what happened. Either way a message is named by its index,
 * 0 .. n-1, and fab_msgs_in() reads its input.
 */
struct fab_msgs {
	struct fab_msg *v;
	size_t n, cap;
	uint32_t nstreams;
	/* what traffic specs may make the list hold, in bytes (trace_spec
	 * refuses a spec past it before making a message); 0 = half of the
	 * memory the process may use. fab_msgs_add itself does not check. */
	uint64_t max_bytes;
	bool compact;
	struct fab_msg_run *runs;	/* compact: in index order */
	size_t nruns, runs_cap;
};

int fab_msgs_add(struct fab_msgs *m, const struct fab_msg *msg);
/* Message i's input: &v[i], or *tmp filled from its run (results zero). */
const struct fab_msg *fab_msgs_in(const struct fab_msgs *m, size_t i, struct fab_msg *tmp);
/* The list as runs, in index order (an explicit list is one run a
 * message): how many, and run r's first message's input with its first
 * index, count and step. */
size_t fab_msgs_nruns(const struct fab_msgs *m);
/* The run holding message i. */
size_t fab_msgs_run_of(const struct fab_msgs *m, size_t i);
const struct fab_msg *fab_msgs_run(const struct fab_msgs *m, size_t r, uint64_t *first,
				   uint64_t *count, sim_time_t *gap);
/* Room for n messages in all (a builder that knows its count allocates
 * once, exactly, instead of doubling). 0 or -1 (out of memory). An
 * explicit list only; a compact one ignores it. */
int fab_msgs_reserve(struct fab_msgs *m, size_t n);
void fab_msgs_free(struct fab_msgs *m);
/* What the list needs of the parameters: a datagram (ud) is a SEND of at
 * most ib.mtu bytes. 0, or -1 with d naming the first message that fails. */
int fab_msgs_check(const struct fab_msgs *m, const struct fab_params *p, struct sim_diag *d);
/* The same for message x, index i of its list (fab_create checks each
 * message once, in its one pass over the list). */
int fab_msg_check(const struct fab_msg *x, size_t i, const struct fab_params *p,
		  struct sim_diag *d);

/* Per port and VL, counted at the transmitter (xmit) or receiver (rcv). */
struct fab_vl_stats {
	uint64_t xmit_bytes;		/* PortXmitData (bytes here; PMA counts 4-byte words) */
	uint64_t xmit_pkts;		/* PortXmitPkts */
	uint64_t rcv_bytes;		/* PortRcvData */
	uint64_t rcv_pkts;		/* PortRcvPkts */
	uint64_t xmit_wait_ps;		/* PortXmitWait: data ready, no credits */
	uint64_t xmit_discards;		/* PortXmitDiscards: stays 0 on IB data VLs */
	uint32_t buf_high;		/* receive-buffer high-water mark, bytes */
	uint64_t fc_pkts;		/* flow-control packets sent for this VL */
	uint64_t rcv_errors;		/* PortRcvErrors: packets received with a bad CRC */
	/* Ethernet (the index is the priority) */
	uint64_t pause_sent;		/* PFC XOFF frames this receiver sent upstream */
	uint64_t paused_ps;		/* this transmitter's time paused by PFC (XOFF landed to XON/expiry) */
	uint64_t ecn_marked;		/* packets this transmitter's queue marked CE (or FECN) */
	uint64_t drops;			/* packets dropped at this port's queue: buffer full */
	uint32_t queue_high;		/* egress queue high-water mark, bytes (Ethernet switch) */
};

struct fab_port_info {
	int node, port;			/* this end */
	int peer_node, peer_port;	/* the other end */
	struct link_rate rate;
	sim_time_t prop_ps;
	uint64_t busy_ps;		/* time the transmitter was serialising */
	struct fab_vl_stats vl[FAB_MAX_VLS + 1];	/* index 15 = VL15 */
};

struct fab;
struct sim_samples;
struct hca;

/* The HCA of a CA node (its verbs API is models/hca/hca.h), or NULL. */
struct hca *fab_hca(struct fab *f, int node);
/* The run's parameters, and the number of nodes (as in the net). */
const struct fab_params *fab_get_params(const struct fab *f);
/* The GPU servers (server.gpus > 0): their map and NVLink pipes; or NULL. */
struct srv_map *fab_server(struct fab *f);
int fab_nodes(const struct fab *f);

struct fab *fab_create(const struct net *net, const struct fab_params *p,
		       struct fab_msgs *msgs, uint64_t seed, struct sim_diag *d);
void fab_destroy(struct fab *f);
struct sim_engine *fab_engine(struct fab *f);

/* Run until every message is delivered, the time limit, or stop. */
int fab_run(struct fab *f, struct sim_diag *d);
/* Did the run reach sim.max_time_ns (rather than end, or stall)? */
bool fab_time_limit_reached(const struct fab *f);

/*
 * Time series: while running, every `sample_ns` the fabric calls `fn` with
 * the current time; the callback reads ports with fab_port_sample(). Set
 * before fab_run(). The samples go on while messages are left, or, in a
 * run without messages (a trace replay), until it is stopped.
 */
struct fab_sample {
	uint64_t xmit_bytes;		/* since the start, all VLs */
	uint32_t buf_bytes[FAB_MAX_VLS];	/* receive-buffer occupancy per data VL */
	int32_t credits[FAB_MAX_VLS];	/* transmitter's available credits (blocks) per data VL */
};
typedef void (*fab_sample_fn)(struct fab *f, sim_time_t now, void *ctx);
void fab_set_sampler(struct fab *f, fab_sample_fn fn, void *ctx);
/*
 * Another driver ends the run (a trace replay beside the fabric's own
 * messages, background traffic): the last message finishing does not stop
 * it, and the sampler goes on while anything can happen. Set before
 * fab_run().
 */
void fab_hold(struct fab *f, bool on);

int fab_nports(const struct fab *f);		/* connected port ends */
const struct fab_port_info *fab_port(const struct fab *f, int i);
void fab_port_sample(const struct fab *f, int i, struct fab_sample *s);

/* What the host behind a CA node did (models/host), or NULL for a switch. */
const struct host_stats *fab_host_stats(const struct fab *f, int node);

/* Totals over the run. */
/*
 * What the kernel's network stack did for the traffic, on one host or in
 * all (fabric=tcp, models/tcp/tcp_host.c; verbs bypass it, and stay 0):
 * system calls (send, recv), interrupts, the reader's wake-ups, the bytes a
 * CPU copied between user and kernel memory, and the CPU time by cost.
 */
struct fab_kernel {
	uint64_t syscalls, interrupts, ctx_switches;
	uint64_t cpu_copy_bytes;
	uint64_t syscall_ps, copy_ps, proto_ps, irq_ps, wake_ps;
};

struct fab_totals {
	uint64_t packets_delivered, bytes_delivered, payload_delivered;
	uint64_t packet_hops;
	uint64_t drops;			/* = drops_vl15 + drops_route + drops_corrupt + drops_congestion
					 * + drops_link */
	uint64_t drops_vl15;		/* VL15 buffer full (not flow controlled) */
	uint64_t drops_route;		/* no route in an LFT, or delivered to the wrong CA */
	uint64_t drops_corrupt;		/* failed CRC (link.drop_prob, link.ber): PortRcvErrors */
	uint64_t drops_congestion;	/* Ethernet: a buffer was full (lossy, or PFC headroom overrun) */
	uint64_t drops_link;		/* sent to, or in flight on, a link that was down (--fault) */
	uint64_t msgs_done, msgs_total;	/* delivered, all */
	uint64_t msgs_finished;
	uint64_t msgs_lost;		/* datagrams (UD, VL15) and UC messages that lost a packet: never resent */
	uint64_t xmit_wait_ps;
	uint64_t fc_pkts;
	/* transport, summed over every QP (models/hca) */
	uint64_t acks, retransmitted, seq_naks, rnr_naks, ack_timeouts;
	uint64_t ooo_held;		/* RC packets that arrived ahead of a gap and were held (hca.ooo) */
	/* load balancing at the switches (ib.ar, eth.lb other than static) */
	uint64_t lb_chosen;		/* packet-hops that had two ports or more to choose from */
	uint64_t lb_moved;		/* of them, sent elsewhere than the LFT's port */
	uint64_t credit_checks;	/* invariant walks done (sim.check) */
	/* Ethernet and congestion control */
	uint64_t pause_frames;		/* PFC XOFF frames sent */
	uint64_t paused_ps;		/* transmitters' time paused by PFC, summed over ports and priorities */
	uint64_t ecn_marks;		/* packets marked CE (Ethernet) or FECN (IB CC) */
	uint64_t cnps;			/* CNPs (DCQCN) or BECNs (IB CC) sent */
	/* TCP */
	uint64_t tcp_segments, tcp_retransmits, tcp_timeouts, tcp_fast_recoveries;
	uint64_t tcp_gave_up;		/* connections given up after tcp.retries2 timeouts */
	/* host CPU time spent on communication, summed over hosts (models/host, tcp) */
	uint64_t cpu_ps;
	/* the kernel's share of it (fabric=tcp; verbs bypass the kernel: 0) */
	struct fab_kernel kernel;
	sim_time_t end_ps;
};
void fab_totals(const struct fab *f, struct fab_totals *t);
/* The completion time (end - start) of every delivered message, finished
 * or not, and how many: the summary's percentiles, in either form of the
 * list (sim_samples: exact to 2^20, then within 1/4096). After the run. */
struct sim_samples *fab_completions(const struct fab *f, uint64_t *n_done);
/* A capture: fn sees every packet that port i (fab_port order) starts to
 * send, at the time its first bit leaves, with its headers as the model
 * has them (models/core/pkt.h). Data and ACK packets, not link-level
 * flow-control packets. Before fab_run; one fn for every tapped port. */
struct pkt;
typedef void (*fab_tap_fn)(void *ctx, int port, const struct pkt *p, sim_time_t t);
void fab_set_tap(struct fab *f, int i, fab_tap_fn fn, void *ctx);

/* Keep every message's record for after the run (a compact list: on disk;
 * an explicit list has them in place). Before fab_run; 0 or -1. */
int fab_keep_results(struct fab *f);
/* Message id's record after the run: its input and results (&v[id], or
 * read back, or - never posted - its input in *tmp); NULL on a read
 * error or when fab_keep_results was not asked. Read in index order. */
const struct fab_msg *fab_msg_result(const struct fab *f, size_t id, struct fab_msg *tmp);
/* Host `node`'s kernel counters (all 0 for a switch or without TCP). */
void fab_host_kernel(const struct fab *f, int node, struct fab_kernel *k);
/* Messages in flight with state of their own (a compact list; 0 else),
 * and the most there were at once. */
size_t fab_live_count(const struct fab *f, size_t *peak);

/* The invariant walk used by tests: credits never negative, blocks conserved
 * on every link and VL, occupancy <= buffer. Returns 0 or -1 with d filled. */
int fab_check_credits(const struct fab *f, struct sim_diag *d);

/*
 * Faults during a run (fab_fault.c): a cable, or every cable of a node,
 * goes down or comes up at a time. The subnet manager notices and installs
 * new tables sm.reroute_ns later, from the rerouter the caller gives (the
 * run's routing engine on the fabric's graph with the cables that are down
 * cut), after checking their channel dependencies. Add before fab_run().
 */
enum fab_fault_kind { FAB_FAULT_DOWN, FAB_FAULT_UP,
		     FAB_FAULT_BER, FAB_FAULT_DROP,	/* a cable's link.ber, link.drop_prob from then on */
		     FAB_FAULT_TABLES };	/* the SM installs the tables of a dump (`tables`) */

struct fab_fault {
	sim_time_t at;
	int node;
	int port;		/* 0: every connected port of the node */
	uint8_t kind;		/* enum fab_fault_kind */
	double value;		/* FAB_FAULT_BER, FAB_FAULT_DROP: the new value */
	char tables[256];	/* FAB_FAULT_TABLES: the dump, for the rerouter (no node) */
	/* filled as the run goes */
	bool applied;
	uint64_t lost_before;	/* drops_link when it was applied */
};

/* Route `n` (LIDs kept) as the run's subnet manager does, or with the
 * tables of the dump `tables` (a FAB_FAULT_TABLES fault); 0 or -1 (d filled). */
typedef int (*fab_reroute_fn)(void *ctx, struct net *n, const char *tables, struct sim_diag *d);

struct fab_reroute {
	sim_time_t at;
	bool ok;		/* routed and installed */
	bool acyclic;		/* the new tables' channel dependency graph */
	uint64_t lost_stale;	/* packets lost to links that were down, since the
				 * fault it follows, with the old tables */
	char note[256];		/* a cycle, or why it failed */
	int fault;		/* the FAB_FAULT_TABLES fault whose dump it installed, or -1 */
};

struct fab_fault_report {
	const struct fab_fault *faults;
	int nfaults;
	const struct fab_reroute *reroutes;
	int nreroutes;
	sim_time_t first;	/* the first fault applied (SIM_TIME_MAX: none) */
	uint64_t lost;		/* packets lost to links that were down (drops_link) */
	/* RC QPs: those that made progress again after spending retries since
	 * the first fault, the last of those moments (after the first fault),
	 * and those left in the error state (retry budget spent) */
	int qps_recovered, qps_failed;
	sim_time_t last_recovery;
	/* each recovered QP: its node, number, and when after the first fault */
	const struct fab_qp_recovery *recovered;
};

struct fab_qp_recovery {
	int node;
	uint32_t qpn;
	sim_time_t after;
};

int fab_fault_add(struct fab *f, const struct fab_fault *x, struct sim_diag *d);
/* The subnet manager: fn routes for it. `sweeps`: it reroutes by itself
 * sm.reroute_ns after each cable that goes down or up (false: a run on a
 * dumped table, which changes only at a FAB_FAULT_TABLES fault). */
void fab_set_rerouter(struct fab *f, fab_reroute_fn fn, void *ctx, bool sweeps);
/* NULL when the run had no fault. */
const struct fab_fault_report *fab_fault_report(const struct fab *f);

#endif
