/* SPDX-License-Identifier: MIT */
/*
 * tcp_params.h - the TCP parameters (tcp.*) every layer may read: the
 * protocol, its congestion control and the host stack's costs (models/tcp
 * has the model).
 */
#ifndef IBFAB_TCP_PARAMS_H
#define IBFAB_TCP_PARAMS_H

#include <stdbool.h>
#include <stdint.h>

enum tcp_cc_algo { TCP_CC_NEWRENO, TCP_CC_CUBIC, TCP_CC_DCTCP, TCP_CC_COUNT };

struct tcp_params {
	uint8_t cc;		/* tcp.cc: enum tcp_cc_algo (default cubic, Linux's) */
	uint32_t mss;		/* tcp.mss: payload bytes per segment (0 = ib.mtu) */
	uint32_t init_cwnd;	/* tcp.init_cwnd: segments (RFC 6928: 10) */
	uint32_t min_rto_us;	/* tcp.min_rto_us: RTO floor (Linux 200 ms) */
	uint32_t max_rto_us;	/* tcp.max_rto_us: RTO ceiling after backoff (RFC 6298: >= 60 s) */
	uint32_t delack_us;	/* tcp.delack_us: delayed-ACK timer (Linux 40 ms) */
	uint8_t dupthresh;	/* tcp.dupthresh: duplicate ACKs before fast retransmit (3) */
	uint32_t retries2;	/* tcp.retries2: timeouts in a row before the connection is
				 * given up (Linux net.ipv4.tcp_retries2: 15) */
	bool timestamps;	/* tcp.timestamps: the 12-byte option on every segment (Linux: on) */
	uint32_t rwnd;		/* tcp.rwnd: receive window, bytes (Linux tcp_rmem max 6 MiB) */
	uint32_t msg_hdr;	/* tcp.msg_hdr: bytes of the application's message header */
	double dctcp_g;		/* tcp.dctcp_g: DCTCP's EWMA gain (RFC 8257: 1/16) */
	/* the host stack (tcp_host.c gives the sources) */
	uint32_t syscall_ns;	/* tcp.syscall_ns: one send()/recv() through the socket layer */
	double copy_gbps;	/* tcp.copy_gbps: user <-> kernel copy rate (0 = host.mem_gbps / 2) */
	double copy_hot_gbps;	/* tcp.copy_hot_gbps: the receiver's copy of data still in the
				 * cache (0: as copy_gbps) */
	uint32_t ddio_bytes;	/* tcp.ddio_bytes: the last-level cache the NIC writes into */
	uint32_t seg_cpu_ns;	/* tcp.seg_cpu_ns: protocol processing per segment, each side */
	bool gso, gro;		/* tcp.gso, tcp.gro: segmentation / receive offload (Linux: on) */
	uint32_t skb_cpu_ns;	/* tcp.skb_cpu_ns: what each segment adds at a side without them */
	uint32_t irq_ns;	/* tcp.irq_ns: one receive interrupt (entry, NAPI poll start) */
	uint32_t irq_coalesce;	/* tcp.irq_coalesce: segments one interrupt serves at most */
	uint32_t rx_usecs;	/* tcp.rx_usecs: the NIC's interrupt moderation timer, us (0: off) */
	uint32_t rx_frames;	/* tcp.rx_frames: ... or this many segments, whichever first */
	bool rx_cqe_mode;	/* tcp.rx_cqe_mode: the timer restarts at each segment (mlx5) */
	uint32_t ctx_switch_ns;	/* tcp.ctx_switch_ns: waking the blocked receiver (wake-up + switch) */
	uint32_t cores;		/* tcp.cores: cores a host's connections share (0 = one each) */
};

/* Do this fabric's TCP senders react to ECN marks (DCTCP), so the Ethernet
 * switches should mark rather than drop (eth.ecn=auto)? */
static inline bool tcp_wants_ecn(const struct tcp_params *p)
{
	return p->cc == TCP_CC_DCTCP;
}

#endif
