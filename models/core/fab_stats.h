/* SPDX-License-Identifier: MIT */
/*
 * fab_stats.h - what a run counts: per port and VL (fab_port_info, the
 * PMA's counters), the samples of a time series, the kernel's work and the
 * totals; and the callbacks that read them while it runs (models/fabric/
 * fab.h has the API that returns them).
 */
#ifndef IBFAB_FAB_STATS_H
#define IBFAB_FAB_STATS_H

#include <stdint.h>

#include "models/link/link.h"
#include "models/params/fab_params.h"
#include "sim/sim.h"

struct fab;
struct pkt;

/*
 * Path diversity: the paths the data of each flow (a QP's incoming
 * packets that carry payload) took, told apart by their routes (struct
 * pkt.route) in 256 buckets (struct hca_qp_stats.path_bits): exact for a
 * few paths, about 6% under at 32 (256 (1 - (255/256)^32) = 30.1).
 */
struct fab_flow_paths {
	uint64_t flows;		/* flows that received data */
	uint64_t paths;		/* their paths, summed */
	uint64_t spread;	/* flows over two paths or more */
	uint64_t max;		/* the most paths of one flow */
};

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

struct fab_sample {
	uint64_t xmit_bytes;		/* since the start, all VLs */
	uint32_t buf_bytes[FAB_MAX_VLS];	/* receive-buffer occupancy per data VL */
	int32_t credits[FAB_MAX_VLS];	/* transmitter's available credits (blocks) per data VL */
};
typedef void (*fab_sample_fn)(struct fab *f, sim_time_t now, void *ctx);

/*
 * What the kernel's network stack did for the traffic, on one host or in
 * all (fabric=tcp, models/tcp/tcp_host.c; verbs bypass it, and stay 0):
 * system calls (send, recv), interrupts, the reader's wake-ups, the bytes a
 * CPU copied between user and kernel memory (and how many of them the
 * receiver found in the cache), and the CPU time by cost.
 */
struct fab_kernel {
	uint64_t syscalls, interrupts, ctx_switches;
	uint64_t cpu_copy_bytes;
	uint64_t cached_copy_bytes;	/* ... of them, copied while still in the cache (DDIO) */
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
	uint64_t lb_notified;		/* adaptive routing notifications sent (ib.arn) */
	struct fab_flow_paths flow_paths;	/* path diversity per flow */
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

typedef void (*fab_tap_fn)(void *ctx, int port, const struct pkt *p, sim_time_t t);

#endif
