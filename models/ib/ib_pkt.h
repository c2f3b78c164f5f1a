/* SPDX-License-Identifier: MIT */
/*
 * ib_pkt.h - InfiniBand's headers on a packet (struct pkt:
 * models/core/pkt.h): their sizes, the BTH opcodes, the AETH syndromes.
 *
 * A packet's exact size on the wire is LRH 8 + BTH 12 (+ RETH 16 on the
 * first packet of an RDMA WRITE) + payload padded to 4 bytes (BTH PadCnt,
 * IBA 9.2) + ICRC 4 + VCRC 2 (IBA 7.8). Credits are counted in 64-byte
 * blocks of the whole packet (IBA 7.9.4.2).
 */
#ifndef IBFAB_IB_PKT_H
#define IBFAB_IB_PKT_H

#include <stdint.h>

#include "models/core/pkt.h"
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
	IB_OP_CNP = 0x81,		/* RoCEv2 CNP (IBTA Annex A17), 16 reserved bytes */
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
