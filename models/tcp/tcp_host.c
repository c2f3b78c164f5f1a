/* SPDX-License-Identifier: MIT */
/*
 * tcp_host.c - the host-stack cost of TCP: what the kernel path costs that
 * RDMA's kernel bypass does not pay, as time on the critical path and as
 * CPU time on the host (added to the host's cpu_ps, which also holds the
 * verbs costs of models/host: post, poll).
 *
 * Three pipelines per host, each a "free at" time, so back-to-back work
 * queues and the CPU can become the bottleneck (as a single core does at
 * 100 Gb/s and above, Cai et al., SIGCOMM 2021):
 *
 *   sending thread   send(): syscall_ns, then the copy of the message into
 *                    the socket buffer at the copy rate plus seg_cpu_ns per
 *                    segment (TCP/IP output, the driver's descriptor). The
 *                    stream's bytes become available to the NIC linearly
 *                    over that copy, so a large message streams out while
 *                    it is being copied; send() returns at its end.
 *   receive softirq  per arriving segment: an interrupt (irq_ns) when the
 *                    softirq was idle or the current interrupt has served
 *                    irq_coalesce segments (NAPI's batching under load,
 *                    interrupt moderation by frame count), then seg_cpu_ns
 *                    of protocol processing (IP, TCP, the ACK decision).
 *   receiving thread the blocked reader is woken by the first bytes of a
 *                    message (ctx_switch_ns: wake-up and context switch),
 *                    copies each segment to the user buffer as the softirq
 *                    hands it over, and recv() returns (syscall_ns) after
 *                    the last: the message is then "seen".
 *
 * Defaults and where they come from (estimates unless a measurement is
 * named; all are keys, so a measured host can be described):
 *   syscall_ns 500     the sendmsg/recvmsg path through the socket layer
 *                      (a bare system call on current x86 is ~0.1 us; the
 *                      socket layer, locking and the TCP send/receive entry
 *                      points make it several times that). Estimate.
 *   copy_gbps 0        = host.mem_gbps / 2: a copy reads and writes every
 *                      byte, so memory bandwidth halves. A single core's
 *                      memcpy is lower (~10-20 GB/s); Cai et al. measure
 *                      the receiver's kernel-to-user copy as the bottleneck
 *                      of one flow at 100 Gb/s (about 42 Gb/s per core).
 *                      Set tcp.copy_gbps to model a single-core flow.
 *   seg_cpu_ns 100     TCP/IP processing per 4 KiB segment per side with
 *                      GSO/GRO amortising the per-packet work; Cai et al.
 *                      find protocol processing a small share next to the
 *                      copy. Estimate.
 *   irq_ns 1500        interrupt entry, NAPI scheduling and softirq start.
 *                      Estimate (1-2 us is the usual order).
 *   irq_coalesce 64    NAPI's default poll budget (netdev_budget weight 64
 *                      per device): at most 64 segments per poll.
 *   ctx_switch_ns 3000 waking the reader: a thread switch measured with
 *                      pipes is 1-2.5 us on current x86 (LMbench-style
 *                      ping-pong, e.g. 1.1 us thread / 2.4 us process on an
 *                      11th-gen Core, Linux 6.6), plus the scheduler's
 *                      wake-up path and the cache refill. Estimate.
 * Left out: TSO/GSO batching on the send side beyond seg_cpu_ns, zero-copy
 * (MSG_ZEROCOPY), busy polling, RSS spreading one host over several cores
 * (each host is one core per direction here), the NIC's interrupt
 * moderation timer (rx-usecs: an isolated segment is interrupted at once),
 * socket buffer limits on the sender (send() never blocks).
 */
#include "models/tcp/tcp.h"

#include <math.h>

void tcp_params_default(struct tcp_params *p)
{
	*p = (struct tcp_params){
		.cc = TCP_CC_CUBIC,
		.mss = 0,
		.init_cwnd = 10,
		.min_rto_us = 200000,
		.max_rto_us = 60000000,
		.delack_us = 40000,
		.dupthresh = 3,
		.retries2 = 15,
		.timestamps = true,
		.rwnd = 6u << 20,
		.msg_hdr = 16,
		.dctcp_g = 1.0 / 16,
		.syscall_ns = 500,
		.copy_gbps = 0,
		.seg_cpu_ns = 100,
		.irq_ns = 1500,
		.irq_coalesce = 64,
		.ctx_switch_ns = 3000,
	};
}

double tcp_copy_gbps(const struct tcp_params *p, double mem_gbps)
{
	if (p->copy_gbps > 0)
		return p->copy_gbps;
	return mem_gbps > 0 ? mem_gbps / 2 : 10;
}

sim_time_t tcp_copy_ps(uint64_t bytes, double gbps)
{
	if (!(gbps > 0) || !bytes)
		return 0;
	return (sim_time_t)ceil((double)bytes * 1000.0 / gbps);
}

static sim_time_t max_t(sim_time_t a, sim_time_t b)
{
	return a > b ? a : b;
}

sim_time_t tcp_host_send(struct tcp_host *th, const struct tcp_params *p, double gbps,
			 sim_time_t t, uint64_t bytes, uint32_t nseg, sim_time_t *c0)
{
	sim_time_t s = max_t(t, th->tx_free) + (sim_time_t)p->syscall_ns * SIM_NS;
	sim_time_t work = tcp_copy_ps(bytes, gbps) + (sim_time_t)nseg * p->seg_cpu_ns * SIM_NS;

	*c0 = s;
	th->tx_free = s + work;
	th->st.cpu_ps += (sim_time_t)p->syscall_ns * SIM_NS + work;
	th->st.syscalls++;
	th->st.segs_tx += nseg;
	th->st.copy_bytes += bytes;
	return s + work;
}

sim_time_t tcp_host_rx_seg(struct tcp_host *th, const struct tcp_params *p, sim_time_t t)
{
	sim_time_t s = t;
	sim_time_t irq = (sim_time_t)p->irq_ns * SIM_NS, seg = (sim_time_t)p->seg_cpu_ns * SIM_NS;

	if (th->rx_free <= t || th->batch >= p->irq_coalesce) {
		/* a new interrupt: the softirq was idle, or its batch is spent */
		s = max_t(t, th->rx_free) + irq;
		th->batch = 0;
		th->st.irqs++;
		th->st.cpu_ps += irq;
	} else {
		s = th->rx_free;
	}
	th->batch++;
	th->rx_free = s + seg;
	th->st.cpu_ps += seg;
	th->st.segs_rx++;
	return s + seg;
}

sim_time_t tcp_host_rx_copy(struct tcp_host *th, const struct tcp_params *p, double gbps,
			    sim_time_t t, uint64_t bytes, bool first, bool last)
{
	sim_time_t s = max_t(t, th->app_free), c = tcp_copy_ps(bytes, gbps);

	if (first) {
		s += (sim_time_t)p->ctx_switch_ns * SIM_NS;
		th->st.cpu_ps += (sim_time_t)p->ctx_switch_ns * SIM_NS;
		th->st.ctx_switches++;
	}
	s += c;
	th->st.cpu_ps += c;
	th->st.copy_bytes += bytes;
	if (last) {
		s += (sim_time_t)p->syscall_ns * SIM_NS;
		th->st.cpu_ps += (sim_time_t)p->syscall_ns * SIM_NS;
		th->st.syscalls++;
	}
	th->app_free = s;
	return s;
}
