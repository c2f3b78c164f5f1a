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

/* BTH opcodes (IBA 9.2.1, Table 38): RC 0x00-0x14, UC 0x20 + the same
 * SEND/WRITE codes, UD 0x64/0x65. The transport keeps the RC numbering
 * and the QP type; ib_opcode_wire() gives the byte the wire would carry. */
enum ib_opcode {
	IB_OP_SEND_FIRST = 0x00, IB_OP_SEND_MIDDLE = 0x01, IB_OP_SEND_LAST = 0x02,
	IB_OP_SEND_LAST_IMM = 0x03, IB_OP_SEND_ONLY = 0x04, IB_OP_SEND_ONLY_IMM = 0x05,
	IB_OP_WRITE_FIRST = 0x06, IB_OP_WRITE_MIDDLE = 0x07, IB_OP_WRITE_LAST = 0x08,
	IB_OP_WRITE_LAST_IMM = 0x09, IB_OP_WRITE_ONLY = 0x0a, IB_OP_WRITE_ONLY_IMM = 0x0b,
	IB_OP_READ_REQUEST = 0x0c, IB_OP_READ_RESP_FIRST = 0x0d,
	IB_OP_READ_RESP_MIDDLE = 0x0e, IB_OP_READ_RESP_LAST = 0x0f,
	IB_OP_READ_RESP_ONLY = 0x10, IB_OP_ACK = 0x11, IB_OP_ATOMIC_ACK = 0x12,
	IB_OP_CMP_SWAP = 0x13, IB_OP_FETCH_ADD = 0x14,
	IB_OP_NONE = 0xff,		/* a raw packet of the foundation's traffic edge */
};

/* AETH syndrome classes (IBA 9.7.5.1.3, Table 41). */
enum ib_aeth {
	IB_AETH_ACK = 0x00,		/* + credit count in the low 5 bits */
	IB_AETH_RNR_NAK = 0x20,		/* + RNR timer code */
	IB_AETH_NAK_SEQ = 0x60,
	IB_AETH_NAK_INV_REQ = 0x61,
	IB_AETH_NAK_REM_ACCESS = 0x62,
	IB_AETH_NAK_REM_OP = 0x63,
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
	sim_time_t t_event;	/* on a link: when its arrival event fires */
	sim_time_t t_tail;	/* at a hop: when its last bit is received */
	/* transport headers (BTH, DETH, RETH, AETH, AtomicETH, ImmDt) */
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
	uint64_t atomic[2];	/* AtomicETH compare/add, swap; AtomicAckETH original value */
	const uint8_t *data;	/* the payload's bytes at the sender (NULL: timing only) */
} __attribute__((aligned(64)));

_Static_assert(offsetof(struct ib_pkt, t_tail) + sizeof(sim_time_t) <= 64 && sizeof(struct ib_pkt) == 128,
	       "a packet's per-hop fields are its first line");

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
