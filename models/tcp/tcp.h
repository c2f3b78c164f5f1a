/* SPDX-License-Identifier: MIT */
/*
 * tcp.h - TCP over the Ethernet fabric: parameters of the congestion
 * control (NewReno, CUBIC, DCTCP), timers, and the host-stack cost.
 * The model is in tcp*.c; docs/tcp.md explains it.
 *
 * Three layers, each usable on its own:
 *   - tcp_cc.c: the congestion-control state machines and the RTO
 *     estimator, pure functions of the events fed to them (unit tested
 *     against hand-computed windows);
 *   - tcp_host.c: the kernel path's costs (system calls, copies,
 *     per-segment protocol processing, interrupts, wake-ups), as the time
 *     they add and the CPU time they take on one host;
 *   - tcp_conn.c: the connection under a queue pair (fabric=tcp): byte
 *     stream, segments, ACKs, retransmission, the hooks the HCA calls.
 */
#ifndef IBFAB_TCP_H
#define IBFAB_TCP_H

#include <stdbool.h>
#include <stdint.h>

#include "models/params/tcp_params.h"
#include "sim/sim.h"

extern const char *const tcp_cc_names[];	/* "newreno", "cubic", "dctcp" */
int tcp_cc_parse(const char *name);		/* enum value, or -1 */

/* Wire bytes of a TCP/IPv4 segment around its payload (numbers.md):
 * TCP 20 (+12 timestamps option) + IPv4 20 + Ethernet 14 + VLAN 4 +
 * FCS 4 + preamble 8 + IFG 12. */
#define TCP_HDR_BYTES		20
#define TCP_TS_OPT_BYTES	12


void tcp_params_default(struct tcp_params *p);


/* ---- congestion control (tcp_cc.c) ---------------------------------- */

/*
 * Windows are in bytes (doubles: CUBIC and DCTCP scale them by fractions);
 * mss converts to segments where an RFC counts segments. Time in ps.
 */
struct tcp_cc {
	uint8_t algo;		/* enum tcp_cc_algo */
	uint32_t mss;
	double cwnd, ssthresh;
	/* CUBIC (RFC 8312) */
	double w_max;		/* segments: window before the last reduction */
	double w_last_max;	/* fast convergence */
	double k_s;		/* seconds to reach w_max again */
	double origin;		/* segments: the plateau of the current epoch */
	sim_time_t epoch;	/* start of the current epoch (0 = none yet) */
	double w_est;		/* segments: the Reno-friendly estimate */
	/* DCTCP (RFC 8257) */
	double alpha, g;
	uint64_t dc_acked, dc_marked;	/* bytes in this observation window */
	uint64_t dc_next;		/* the window ends when this is acknowledged */
	uint64_t ecn_hold;		/* react to ECE once per window: until this is acked */
};

#define TCP_CUBIC_C	0.4
#define TCP_CUBIC_BETA	0.7

void tcp_cc_init(struct tcp_cc *cc, uint8_t algo, uint32_t mss, uint32_t init_cwnd, double g);
/* New data acknowledged outside recovery: slow start or congestion avoidance. */
void tcp_cc_on_ack(struct tcp_cc *cc, uint64_t acked, sim_time_t now, sim_time_t srtt);
/*
 * ECN feedback on an ACK that acknowledged `acked` bytes (una..: the new
 * snd_una, snd_max: highest byte sent). DCTCP counts marked bytes, updates
 * alpha once per window of data and cuts cwnd by alpha/2 once per window
 * of marks; NewReno and CUBIC respond to ECE as to a loss, once per
 * window (RFC 3168 6.1.2). Returns true when cwnd was reduced.
 */
bool tcp_cc_on_ecn(struct tcp_cc *cc, uint64_t acked, bool ece, uint64_t una, uint64_t snd_max,
		   sim_time_t now);
/* Loss detected by duplicate ACKs (fast retransmit): sets ssthresh, cwnd = ssthresh. */
void tcp_cc_on_loss(struct tcp_cc *cc, uint64_t flight, sim_time_t now);
/* Retransmission timeout: ssthresh as for a loss, cwnd = 1 segment (RFC 5681 3.1). */
void tcp_cc_on_timeout(struct tcp_cc *cc, uint64_t flight, sim_time_t now);
/* CUBIC's window at time t (seconds) after the epoch: C (t - K)^3 + origin, segments. */
double tcp_cubic_w(const struct tcp_cc *cc, double t);

/* RTO estimator (RFC 6298). Times in ps. */
struct tcp_rtt {
	sim_time_t srtt, rttvar, rto;
	bool valid;		/* a sample was taken */
};
void tcp_rtt_init(struct tcp_rtt *r, sim_time_t min_rto);
void tcp_rtt_sample(struct tcp_rtt *r, sim_time_t rtt, sim_time_t min_rto, sim_time_t max_rto);

/* ---- the host stack (tcp_host.c) ------------------------------------ */

/*
 * The CPU work of one host's TCP stack as three pipelines, each a "free
 * at" time: the sending thread (send(): system call, copy into the socket
 * buffer, transmit processing per segment), the receive softirq
 * (interrupt, protocol processing per segment) and the receiving thread
 * (wake-up, copy to the user buffer, recv() returning).
 */
/* One core's pipelines: a connection's sending thread, its receive queue's
 * softirq (RSS) and its receiving thread (tcp_host.c). */
struct tcp_rxwait;
struct tcp_host {
	sim_time_t tx_free, rx_free, app_free;
	uint32_t batch;		/* segments served by the current interrupt */
	/* interrupt moderation (tcp.rx_usecs, tcp_conn.c): the segments the
	 * NIC has written since the softirq went idle, waiting for the
	 * interrupt, in the order they came */
	struct tcp_rxwait *wait;
	uint32_t wait_n, wait_cap;
	struct tcp_host_stats {
		uint64_t cpu_ps;
		uint64_t syscalls, irqs, ctx_switches, segs_tx, segs_rx, copy_bytes;
		uint64_t hot_bytes;	/* ... of copy_bytes, copied while still in the cache */
		/* cpu_ps by cost: system calls, copies, per-segment protocol
		 * work, interrupts, waking the reader */
		uint64_t syscall_ps, copy_ps, proto_ps, irq_ps, wake_ps;
	} st;
};

/* A host's cores (hca.xport_host): connection k of the host runs on core
 * k, or k mod tcp.cores when that is set. */
struct tcp_cores {
	struct tcp_host *v;
	uint32_t n, cap, next;
};

/* The copy rate in bytes per ps used for `copy_gbps` (0 = mem_gbps / 2). */
double tcp_copy_gbps(const struct tcp_params *p, double mem_gbps);
/* One segment's protocol work at a side, with its offload (GSO sending,
 * GRO receiving) on or off: tcp.seg_cpu_ns, plus tcp.skb_cpu_ns without. */
sim_time_t tcp_seg_ps(const struct tcp_params *p, bool offload);
/* ps to copy `bytes` at `gbps` GB/s, rounded up. */
sim_time_t tcp_copy_ps(uint64_t bytes, double gbps);
/*
 * send() of `bytes` stream bytes in `nseg` segments, called at t: the
 * copy into the socket buffer runs from *c0 (after the system call entry
 * and any earlier send on this host) to the returned time, when send()
 * returns; the stream's bytes become available linearly in between.
 */
sim_time_t tcp_host_send(struct tcp_host *th, const struct tcp_params *p, double gbps,
			 sim_time_t t, uint64_t bytes, uint32_t nseg, sim_time_t *c0);
/*
 * A segment's data visible in host memory at t, its interrupt raised at irq
 * (>= t; later when the NIC moderates): when the softirq is done with it.
 * A softirq still busy at t takes it in its running poll, interrupt or not.
 */
sim_time_t tcp_host_rx_seg(struct tcp_host *th, const struct tcp_params *p, sim_time_t t,
			   sim_time_t irq);
/* Is the softirq still polling at t, with room in its budget (a segment
 * visible then needs no interrupt of its own)? */
bool tcp_host_rx_polling(const struct tcp_host *th, const struct tcp_params *p, sim_time_t t);
/* When the NIC raises the interrupt for a moderation window whose segments
 * became visible from first to last (tcp.rx_usecs after the last with
 * tcp.rx_cqe_mode on, after the first with it off). */
sim_time_t tcp_host_rx_fire(const struct tcp_params *p, sim_time_t first, sim_time_t last);
/*
 * How long received data stays in the last-level cache: the NIC's writes
 * fill tcp.ddio_bytes of it (DDIO) at most at the line rate (nic_bps, bits
 * per second); 0 when no copy is hot (tcp.copy_hot_gbps 0).
 */
sim_time_t tcp_hot_ps(const struct tcp_params *p, double nic_bps);
/*
 * The receiving thread consumes `bytes` of a message that the softirq
 * finished at t (first: the message's first bytes, the thread is woken;
 * last: recv() returns), copying them at tcp.copy_hot_gbps when it starts
 * by hot_until (they are still in the cache), at gbps after. Returns when
 * those bytes are in the user buffer (for the last, when recv() has
 * returned).
 */
sim_time_t tcp_host_rx_copy(struct tcp_host *th, const struct tcp_params *p, double gbps,
			    sim_time_t t, sim_time_t hot_until, uint64_t bytes, bool first,
			    bool last);

/* ---- the connection under a QP (tcp_conn.c) ------------------------- */

struct hca_qp;
struct hca_swqe;
struct pkt;
struct fab;
struct fab_totals;
struct fab_kernel;
struct hca;

/* The transport that carries a TCP fabric's RC QPs (tcp_conn.c: the
 * connection under a QP); the builder sets fab.rc_transport to it. */
struct hca_transport_ops;
extern const struct hca_transport_ops *const tcp_transport;

/* Wire bytes of a segment carrying `len` stream bytes. */
uint32_t tcp_wire_bytes(const struct tcp_params *p, uint32_t len);
/* Add this fabric's TCP counters and host-stack CPU time to t. */
void tcp_totals(const struct fab *f, struct fab_totals *t);
/* Add the kernel counters of host h's cores to k. */
void tcp_host_kernel(const struct hca *h, struct fab_kernel *k);
/* The host's TCP counters (its cores' and its connections'), range by
 * range in a fixed order, for a partitioned run's results (fab_part.c). */
void tcp_result_ranges(struct hca *h, void (*fn)(void *ctx, void *p, size_t bytes), void *ctx);

struct tcp_conn_stats {
	uint64_t segs_sent, segs_rcvd, retransmits, timeouts, fast_recoveries;
	uint32_t gave_up;	/* 1 once tcp.retries2 timeouts in a row ended it */
	uint64_t acks_sent, dupacks_rcvd, ece_rcvd, ce_rcvd, ooo_segs;
	uint32_t max_ooo;
};

#endif
