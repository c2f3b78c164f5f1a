/* SPDX-License-Identifier: MIT */
/*
 * eth.h - parameters of the Ethernet link layer that the RoCE and TCP
 * fabrics run on (models/eth): the switch's shared packet buffer and its
 * per-queue thresholds, ECN marking, PFC (IEEE 802.1Qbb), and the wire
 * overheads of an Ethernet frame. The model is in eth_port.c (pause frames,
 * ingress accounting) and eth_sw.c (shared-buffer, output-queued switch).
 */
#ifndef IBFAB_ETH_H
#define IBFAB_ETH_H

#include <stdbool.h>
#include <stdint.h>

#define ETH_NPRIO	8	/* IEEE 802.1Q priorities */
#define ETH_HDR_BYTES	14	/* destination, source, EtherType */
#define ETH_VLAN_BYTES	4	/* 802.1Q tag: carries the PCP that PFC acts on */
#define ETH_FCS_BYTES	4
#define ETH_PREAMBLE_BYTES 8	/* preamble + SFD */
#define ETH_IFG_BYTES	12	/* inter-frame gap */
#define ETH_MIN_FRAME	64	/* FCS included */
#define IPV4_HDR_BYTES	20
#define UDP_HDR_BYTES	8
/* Bytes a frame takes on the wire around its L2 payload: header, VLAN tag,
 * FCS, preamble and gap (what a 64-byte PFC frame pays too). */
#define ETH_WIRE_OVERHEAD (ETH_HDR_BYTES + ETH_VLAN_BYTES + ETH_FCS_BYTES + \
			   ETH_PREAMBLE_BYTES + ETH_IFG_BYTES)
#define ETH_PFC_WIRE_BYTES (ETH_MIN_FRAME + ETH_PREAMBLE_BYTES + ETH_IFG_BYTES)
#define ETH_PAUSE_QUANTUM_BITS 512	/* one pause quantum: 512 bit times */
#define ETH_CNP_PRIO	7	/* CNPs' priority: served first, never paused; data uses 0..6 */

enum eth_sched { ETH_SCHED_STRICT, ETH_SCHED_WRR };
/* How a switch picks among equal-cost output ports (eth.lb). */
enum eth_lb { ETH_LB_ECMP, ETH_LB_STATIC, ETH_LB_FLOWLET, ETH_LB_SPRAY };

/* eth.ecn: mark on every Ethernet fabric, never, or by fabric (RoCE:
 * for DCQCN; TCP: only for DCTCP, whose senders react to it). */
enum eth_ecn { ETH_ECN_OFF, ETH_ECN_ON, ETH_ECN_AUTO };

struct eth_params {
	uint32_t buffer_per_port; /* eth.buffer_per_port: the switch's shared buffer is
				 * this times its port count, bytes */
	double alpha;		/* eth.dt_alpha: dynamic threshold: a queue may hold
				 * alpha x the free shared buffer (lossy classes) */
	uint32_t queue_max;	/* eth.queue_max: static per-queue limit, bytes (0 = none) */
	uint32_t pfc_xoff;	/* eth.pfc_xoff: ingress bytes per (port, priority) that send XOFF */
	uint32_t pfc_xon;	/* eth.pfc_xon: back at or below this, send XON */
	double pfc_alpha;	/* eth.pfc_alpha: > 0: XOFF above alpha x the free shared
				 * buffer (dynamic, as MMUs do) instead of pfc_xoff */
	uint32_t pfc_headroom;	/* eth.pfc_headroom: reserved above XOFF (0 = from cable and rate) */
	uint32_t pfc_quanta;	/* eth.pfc_quanta: pause time in an XOFF frame (512-bit units) */
	uint8_t ecn;		/* eth.ecn: enum eth_ecn */
	uint32_t kmin, kmax;	/* eth.kmin / eth.kmax: egress queue bytes (0 = by link rate) */
	double pmax;		/* eth.pmax: marking probability at kmax (above: every packet) */
	uint8_t sched;		/* eth.sched: enum eth_sched, between data priorities */
	uint8_t lb;		/* eth.lb: enum eth_lb */
	uint64_t hash_seed;	/* eth.hash_seed: mixed into every switch's ECMP hash */
	uint32_t flowlet_ns;	/* eth.flowlet_ns: idle gap that ends a flowlet (eth.lb=flowlet) */
};

void eth_params_default(struct eth_params *p);

#endif
