/* SPDX-License-Identifier: MIT */
/*
 * pkt.h - a packet on the simulated wire, whatever the fabric: the fields
 * every hop acts on (the LRH-level addresses and lane, its size on the
 * wire and in 64-byte blocks, where it is queued and when it lands) on
 * its first cache line, then its transport's headers. Packets live in a
 * sim_pool (fab.pkts) and are linked into queues by index.
 */
#ifndef IBFAB_PKT_H
#define IBFAB_PKT_H

#include <stddef.h>
#include <stdint.h>

#include "models/net/net.h"	/* net_lid_t */
#include "sim/sim.h"

/* ibv_qp_type: a packet's sender's (pkt.qpt), which decides whether a
 * lost one is resent (fab_core.c's drop rule) */
enum hca_qp_type { HCA_QPT_RC = 2, HCA_QPT_UC = 3, HCA_QPT_UD = 4 };

enum ib_pkt_flags {
	IB_PKT_FIRST = 1 << 0,		/* first packet of its message */
	IB_PKT_LAST = 1 << 1,		/* last packet of its message */
	IB_PKT_ACKREQ = 1 << 2,		/* BTH AckReq */
	IB_PKT_SOLICITED = 1 << 3,	/* BTH SE */
	IB_PKT_CORRUPT = 1 << 4,	/* fault injection: fails its CRC at the next receiver */
	IB_PKT_RETRANS = 1 << 5,	/* sent again by go-back-N (statistics) */
	IB_PKT_CE = 1 << 6,		/* congestion experienced: IP ECN CE (Ethernet
					 * switches) or BTH FECN (IB CC, Annex A10) */
	IB_PKT_ECE = 1 << 7,		/* congestion echoed back: BTH BECN (IB CC) or
					 * TCP's ECE flag */
};

struct pkt {
	uint32_t next;		/* queue link (pool index) */
	uint32_t msg;		/* message this packet belongs to */
	net_lid_t slid, dlid;
	uint16_t wire;		/* bytes on the wire */
	uint16_t payload;	/* payload bytes (unpadded) */
	uint8_t sl, vl;
	uint8_t blocks;		/* credits it takes: ceil(wire / 64) */
	uint8_t flags;
	uint8_t in_port;	/* at a switch: the input port holding it */
	uint8_t out_port;	/* at a switch: the LFT's output port */
	uint16_t route;		/* the outputs chosen among equal-cost ports on its
				 * way, hashed (pkt_route_step): its path, as far
				 * as the choices make it (path diversity) */
	sim_time_t t_event;	/* on a link: when its arrival event fires */
	sim_time_t t_tail;	/* at a hop: when its last bit is received */
	/* in a switch input queued per output (models/switch/sw.c): the
	 * packet before it in its VL's queue, and the next one bound for
	 * its output */
	uint32_t qprev, vnext;
	/* transport headers: InfiniBand's (BTH, DETH, RETH, AETH, AtomicETH,
	 * ImmDt), which RoCEv2 carries as they are; a TCP segment keeps its
	 * message's fields in them (opcode, msg, va, rkey...) and its
	 * sequence numbers in tcp */
	uint8_t opcode;		/* enum ib_opcode */
	uint8_t qpt;		/* enum hca_qp_type of the sender */
	uint8_t aeth;		/* AETH syndrome (ACKs, NAKs, read responses) */
	uint32_t dqpn, sqpn;	/* BTH DestQP; DETH SrcQP (UD) */
	uint32_t psn;		/* 24 bits */
	uint32_t msn;		/* AETH MSN */
	uint64_t va;		/* RETH / AtomicETH virtual address */
	uint32_t rkey;
	uint32_t dma_len;	/* RETH DMA length */
	uint32_t imm;
	union {
		uint64_t atomic[2];	/* AtomicETH compare/add, swap; AtomicAckETH original value */
		struct {
			uint64_t seq;	/* the segment's first stream byte */
			uint64_t ack;	/* the ACK every segment carries */
		} tcp;
	};
	const uint8_t *data;	/* the payload's bytes at the sender (NULL: timing only) */
} __attribute__((aligned(64)));

/* Packet p leaves switch `node` by output `port`, which it chose among
 * equal-cost ports (adaptive routing, ECMP, spraying): fold the choice
 * into its route. The packets of a flow that made the same choices have
 * the same route. */
static inline void pkt_route_step(struct pkt *p, uint32_t node, uint8_t port)
{
	uint64_t z = ((uint64_t)p->route << 40 | (uint64_t)node << 8 | port) * 0x9e3779b97f4a7c15ULL;

	p->route = (uint16_t)(z >> 48);
}

_Static_assert(offsetof(struct pkt, vnext) + sizeof(uint32_t) <= 64 && sizeof(struct pkt) == 128,
	       "a packet's per-hop fields are its first line");

#endif
