/* SPDX-License-Identifier: MIT */
/*
 * ib_pkt.h - a data packet on the simulated wire, and IB header sizes.
 *
 * Packets carry the header fields the model acts on (LRH: SLID, DLID, SL, VL;
 * BTH-level: which message, first/last) and their exact size on the wire:
 * LRH 8 + BTH 12 (+ RETH 16 on the first packet of an RDMA WRITE) + payload
 * padded to 4 bytes (BTH PadCnt, IBA 9.2) + ICRC 4 + VCRC 2 (IBA 7.8).
 * Credits are counted in 64-byte blocks of the whole packet (IBA 7.9.4.2).
 * Packets live in a sim_pool and are linked into queues by index.
 */
#ifndef IBFAB_IB_PKT_H
#define IBFAB_IB_PKT_H

#include <stdint.h>

#include "sim/sim.h"

#define IB_LRH_BYTES	8
#define IB_GRH_BYTES	40
#define IB_BTH_BYTES	12
#define IB_RETH_BYTES	16
#define IB_AETH_BYTES	4
#define IB_DETH_BYTES	8
#define IB_IMM_BYTES	4
#define IB_ICRC_BYTES	4
#define IB_VCRC_BYTES	2
#define IB_FC_PKT_BYTES	6	/* flow-control packet: 4 bytes + 2-byte LPCRC (IBA 7.9.4.1) */
#define IB_BLOCK_BYTES	64	/* one credit */
#define IB_MAD_BYTES	256	/* a management datagram on VL15 */

enum ib_pkt_flags {
	IB_PKT_FIRST = 1 << 0,
	IB_PKT_LAST = 1 << 1,
};

struct ib_pkt {
	uint32_t next;		/* queue link (pool index) */
	uint32_t msg;		/* message this packet belongs to */
	uint16_t slid, dlid;
	uint16_t wire;		/* bytes on the wire */
	uint16_t payload;	/* payload bytes (unpadded) */
	uint8_t sl, vl;
	uint8_t blocks;		/* credits it takes: ceil(wire / 64) */
	uint8_t flags;
	uint8_t in_port;	/* at a switch: the input port holding it */
	uint8_t out_port;	/* at a switch: the LFT's output port */
	uint8_t hops;
	sim_time_t t_event;	/* on a link: when its arrival event fires */
	sim_time_t t_tail;	/* at a hop: when its last bit is received */
};

/* Wire size of an RDMA WRITE packet carrying `payload` bytes. */
static inline uint32_t ib_wire_bytes(uint32_t payload, int first)
{
	return IB_LRH_BYTES + IB_BTH_BYTES + (first ? IB_RETH_BYTES : 0) +
	       ((payload + 3) & ~3u) + IB_ICRC_BYTES + IB_VCRC_BYTES;
}

static inline uint32_t ib_blocks(uint32_t wire)
{
	return (wire + IB_BLOCK_BYTES - 1) / IB_BLOCK_BYTES;
}

#endif
