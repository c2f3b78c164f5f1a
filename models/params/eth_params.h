/* SPDX-License-Identifier: MIT */
/*
 * eth_params.h - the Ethernet parameters (eth.*) every layer may read:
 * switch buffers, PFC, ECN, scheduling and load balancing (models/eth has
 * the model).
 */
#ifndef IBFAB_ETH_PARAMS_H
#define IBFAB_ETH_PARAMS_H

#include <stdint.h>

enum eth_sched { ETH_SCHED_STRICT, ETH_SCHED_WRR };
/* How a switch picks among equal-cost output ports (eth.lb). */
enum eth_lb { ETH_LB_ECMP, ETH_LB_STATIC, ETH_LB_FLOWLET, ETH_LB_SPRAY };
/* The fields of the 5-tuple ECMP hashes (eth.hash_fields: a set). */
enum eth_hash_field {
	ETH_HASH_SIP = 1, ETH_HASH_DIP = 2, ETH_HASH_PROTO = 4, ETH_HASH_SPORT = 8,
	ETH_HASH_DPORT = 16, ETH_HASH_ALL = 31
};

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
	uint8_t hash_fields;	/* eth.hash_fields: enum eth_hash_field, a set */
	uint32_t flowlet_ns;	/* eth.flowlet_ns: idle gap that ends a flowlet (eth.lb=flowlet) */
};

#endif
