/* SPDX-License-Identifier: MIT */
/*
 * fab_params.h - a run's parameters (struct fab_params: every module's,
 * from the preset, the topology file and --set) and the fabric kinds,
 * which every layer of models/ may read; models/fabric/fab_params.c parses
 * and prints them, models/core/fab_core.c holds the kinds' rows.
 */
#ifndef IBFAB_FAB_PARAMS_H
#define IBFAB_FAB_PARAMS_H

#include <stdbool.h>
#include <stdint.h>

#include "models/host/host.h"
#include "models/params/dcqcn_params.h"
#include "models/params/eth_params.h"
#include "models/params/ibcc_params.h"
#include "models/params/tcp_params.h"
#include "models/params/vlarb_params.h"
#include "models/server/server.h"

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
	bool cut_links;		/* sim.cut_links: every link as between two partitions */
	char preset[16];
	/* Tables given with fab_params_set() stop following ib.vls (fab_params.c). */
	bool sl2vl_set, vlarb_high_set, vlarb_low_set;
	/* transport (the traffic's QPs; IBA 9.7.6 and Table 45) */
	uint8_t hca_timeout;		/* hca.timeout: local ACK timeout 4.096 us x 2^n (0 = none) */
	uint8_t hca_retry_cnt;		/* hca.retry_cnt */
	uint8_t hca_rnr_retry;		/* hca.rnr_retry (7 = for ever) */
	uint8_t hca_min_rnr_timer;	/* hca.min_rnr_timer (Table 45 code) */
	uint8_t hca_max_rd_atomic;	/* hca.max_rd_atomic: READs/atomics in flight per QP */
	uint32_t hca_ackreq_pkts;	/* hca.ackreq_pkts: AckReq on every Nth packet of an RC
					 * message (a power of two; 0 = its last packet only) */
	/* fault injection */
	double drop_prob;		/* link.drop_prob: a packet fails its CRC at the receiver */
	double ber;			/* link.ber: bit error rate, per bit on the wire */
	uint32_t hca_max_inline;	/* hca.max_inline: traffic messages up to this size go inline */
	/* MPI over UCX for a replay's CPU ranks (traces/mpi_proto.c): mpi.KEY */
	bool mpi_ucx;			/* mpi.proto: ucx (eager SENDs, rendezvous by READ); write */
	uint32_t mpi_short_bytes;	/* mpi.short_bytes: data bytes sent inline */
	uint32_t mpi_seg_bytes;		/* mpi.seg_bytes: a SEND's payload at most */
	uint64_t mpi_rndv_bytes;	/* mpi.rndv_bytes: rendezvous from (0: UCX's auto threshold) */
	uint32_t mpi_ppn;		/* mpi.ppn: processes per node, as UCX is told */
	uint32_t mpi_bcopy_mibps;	/* mpi.bcopy_mibps: UCX's copy-rate estimate (UCX_BCOPY_BW) */
	uint32_t hca_dma_window;	/* hca.dma_window: payload DMA reads in flight per QP (packets) */
	/* the host behind every HCA (models/host): host.KEY=VALUE */
	bool host_model;		/* host.model: off = an ideal host (no PCIe, no DMA latency) */
	uint8_t sw_speedup;		/* switch.speedup: packets one input feeds to outputs at once */
	/* adaptive routing at the IB switches (models/switch/sw_lb.c) and
	 * out-of-order arrival at the HCAs (models/hca/qp_ooo.c) */
	bool sw_voq;			/* switch.queues=voq (else fifo) */
	bool ib_ar;			/* ib.ar */
	bool ib_arn;			/* ib.arn: adaptive routing notifications (with ib.ar) */
	bool ib_sharp;			/* ib.sharp: algo=auto allreduces use SHARP (collnet) */
	uint8_t ib_sharp_sat;		/* ib.sharp_sat: enum fab_sat */
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
/*
 * ib.sharp_sat: how many SHARP streaming aggregations the switches take at
 * once (NVIDIA SHARP documentation, "General Information"): one active
 * tree per switch (Quantum), one per port (Quantum-2), or no limit; auto
 * is the preset's switch (fab_sharp_sat).
 */
enum fab_sat { FAB_SAT_AUTO, FAB_SAT_SWITCH, FAB_SAT_PORT, FAB_SAT_NONE };
enum fab_sat fab_sharp_sat(const struct fab_params *p);

static inline bool fab_ooo(const struct fab_params *p)
{
	if (p->hca_ooo != FAB_OOO_AUTO)
		return p->hca_ooo == FAB_OOO_ON;
	return fab_is_eth(p) ? p->eth.lb == ETH_LB_FLOWLET || p->eth.lb == ETH_LB_SPRAY : p->ib_ar;
}

#endif
