/* SPDX-License-Identifier: MIT */
/*
 * tcp_host.c - the host-stack cost of TCP: what the kernel path costs that
 * RDMA's kernel bypass does not pay, as time on the critical path and as
 * CPU time on the host (added to the host's cpu_ps, which also holds the
 * verbs costs of models/host: post, poll).
 *
 * Three pipelines per connection, each a "free at" time, so back-to-back
 * work queues and the CPU can become the bottleneck (as a single core does
 * at 100 Gb/s and above, Cai et al., SIGCOMM 2021). Linux processes one
 * flow on one core at each end: RSS steers its segments to one receive
 * queue and its softirq, and the application's thread sends and reads it.
 * So each connection has its own core (struct tcp_host) unless tcp.cores
 * makes a host's connections share that many:
 *
 *   sending thread   send(): syscall_ns, then the copy of the message into
 *                    the socket buffer at the copy rate plus seg_cpu_ns per
 *                    segment (TCP/IP output, the driver's descriptor;
 *                    skb_cpu_ns more without GSO). The stream's bytes
 *                    become available to the NIC linearly over that copy,
 *                    so a large message streams out while it is being
 *                    copied; send() returns at its end.
 *   receive softirq  per arriving segment: taken by the running poll while
 *                    the softirq is busy; otherwise an interrupt (irq_ns)
 *                    when the NIC raises it (interrupt moderation holds it
 *                    back: tcp_conn.c's window, tcp_host_rx_fire), and a
 *                    new poll at that cost once one has served
 *                    irq_coalesce segments (NAPI's budget); then
 *                    seg_cpu_ns of protocol processing (IP, TCP, the ACK
 *                    decision; skb_cpu_ns more without GRO).
 *   receiving thread the blocked reader is woken by the first bytes of a
 *                    message (ctx_switch_ns: wake-up and context switch),
 *                    copies each segment to the user buffer as the softirq
 *                    hands it over (at copy_hot_gbps while the data is
 *                    still in the cache: the NIC has not yet written
 *                    ddio_bytes more since it wrote it), and recv() returns
 *                    (syscall_ns) after the last: the message is then
 *                    "seen".
 *
 * Defaults and where they come from (estimates unless a measurement is
 * named; all are keys, so a measured host can be described; docs/tcp.md
 * has the table):
 *   mss 1448           Ethernet's standard MTU 1500 less IPv4 (20), TCP
 *                      (20) and the timestamps option (12); 8948 for MTU
 *                      9000. Segments are what the wire carries; the
 *                      per-segment costs below are paid per segment.
 *   syscall_ns 500     the sendmsg/recvmsg path through the socket layer
 *                      (a bare system call on current x86 is ~0.1 us; the
 *                      socket layer, locking and the TCP send/receive entry
 *                      points make it several times that). Estimate.
 *   copy_gbps 6        one core's kernel<->user copy of network data.
 *                      Dumazet's zero-copy receive (Linux 4.18, "tcp:
 *                      implement mmap() for zero copy receive") saved
 *                      71-83 us of CPU per MB received against
 *                      recvmsg() at 33.8 Gb/s: a copy of
 *                      12.6-14.8 GB/s while the data is still in the
 *                      cache. At 100 Gb/s DDIO's share of the last-level
 *                      cache overflows and the copy misses (Cai et al.
 *                      measure a 49% miss rate on one flow, whose copy
 *                      bounds it near 42 Gb/s per core): about half that
 *                      rate. With the costs below one flow gets 34 Gb/s
 *                      at MTU 1500 and 45 at 9000, in ESnet's 15-35 Gb/s
 *                      for a single stream on a 100G host and near Cai's
 *                      42. 0 = host.mem_gbps / 2 (a copy bound by memory
 *                      bandwidth alone).
 *   copy_hot_gbps 13.6 the receiver's copy of data still in the cache: the
 *                      middle of Dumazet's 12.6-14.8 GB/s above (his
 *                      reader kept up with a 34 Gb/s flow).
 *   ddio_bytes 3.5 MiB the cache the NIC writes into: Intel DDIO's default
 *                      2 of 11 LLC ways (IIO LLC WAYS 0x600; Farshin et
 *                      al., USENIX ATC 2020) of Cai et al.'s 19.25 MiB
 *                      Xeon Gold 6128. Data has left it once the NIC
 *                      wrote that much more, at most at its line rate.
 *   seg_cpu_ns 100     TCP/IP processing per segment per side with
 *                      GSO/GRO amortising the per-packet work; Cai et al.
 *                      find protocol processing a small share next to the
 *                      copy. Estimate.
 *   gso, gro on        Linux's defaults (64 KiB super-segments).
 *   skb_cpu_ns 200     what each segment adds at a side without them: its
 *                      own pass through IP and TCP. Estimate (fraglist
 *                      GRO/GSO saved ~380 ns a packet on a UDP forwarding
 *                      stream that passes IP twice: 1.34 -> 2.74 Mpps,
 *                      netdev, December 2018).
 *   irq_ns 1500        interrupt entry, NAPI scheduling and softirq start.
 *                      Estimate (1-2 us is the usual order).
 *   irq_coalesce 64    NAPI's default poll budget (netdev_budget weight 64
 *                      per device): at most 64 segments per poll.
 *   rx_usecs 3, rx_frames 32, rx_cqe_mode on
 *                      mlx5's interrupt moderation defaults (en.h:
 *                      ..._RX_CQ_MODERATION_USEC_FROM_CQE 3,
 *                      ..._RX_CQ_MODERATION_PKTS 32), in the CQE-based
 *                      mode the driver picks where the firmware has it:
 *                      the timer restarts at each completion (Linux
 *                      commit "net/mlx5e: CQE based moderation"), so an
 *                      interrupt comes 3 us after a burst's last segment
 *                      or once 32 wait. DIM, which retunes both, is left
 *                      out.
 *   ctx_switch_ns 3000 waking the reader: a thread switch measured with
 *                      pipes is 1-2.5 us on current x86 (LMbench-style
 *                      ping-pong, e.g. 1.1 us thread / 2.4 us process on an
 *                      11th-gen Core, Linux 6.6), plus the scheduler's
 *                      wake-up path and the cache refill. Estimate.
 *   cores 0            one core per connection at each end (RSS and a
 *                      thread per socket); N: the host's connections share
 *                      N cores, connection k on core k mod N.
 * Left out: GRO's fewer ACKs (a merged super-segment is acknowledged at
 * once), adaptive moderation (DIM), zero-copy (MSG_ZEROCOPY), busy
 * polling, socket buffer limits on the sender (send() never blocks), DDIO
 * shared between flows (each connection's data leaves the cache after
 * ddio_bytes at the line rate, whatever else the host receives).
 */
#include "models/tcp/tcp.h"

#include <math.h>

void tcp_params_default(struct tcp_params *p)
{
	*p = (struct tcp_params){
		.cc = TCP_CC_CUBIC,
		.mss = 1448,	/* Ethernet MTU 1500 - IPv4 20 - TCP 20 - timestamps 12 */
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
		.copy_gbps = 6,
		.seg_cpu_ns = 100,
		.gso = true,
		.gro = true,
		.skb_cpu_ns = 200,
		.irq_ns = 1500,
		.irq_coalesce = 64,
		.rx_usecs = 3,
		.rx_frames = 32,
		.rx_cqe_mode = true,
		.copy_hot_gbps = 13.6,
		.ddio_bytes = 3584u << 10,
		.ctx_switch_ns = 3000,
		.cores = 0,
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

sim_time_t tcp_seg_ps(const struct tcp_params *p, bool offload)
{
	return ((sim_time_t)p->seg_cpu_ns + (offload ? 0 : p->skb_cpu_ns)) * SIM_NS;
}

static sim_time_t max_t(sim_time_t a, sim_time_t b)
{
	return a > b ? a : b;
}

sim_time_t tcp_host_send(struct tcp_host *th, const struct tcp_params *p, double gbps,
			 sim_time_t t, uint64_t bytes, uint32_t nseg, sim_time_t *c0)
{
	sim_time_t s = max_t(t, th->tx_free) + (sim_time_t)p->syscall_ns * SIM_NS;
	sim_time_t seg = tcp_seg_ps(p, p->gso);
	sim_time_t work = tcp_copy_ps(bytes, gbps) + (sim_time_t)nseg * seg;

	*c0 = s;
	th->tx_free = s + work;
	th->st.cpu_ps += (sim_time_t)p->syscall_ns * SIM_NS + work;
	th->st.syscall_ps += (sim_time_t)p->syscall_ns * SIM_NS;
	th->st.copy_ps += tcp_copy_ps(bytes, gbps);
	th->st.proto_ps += (sim_time_t)nseg * seg;
	th->st.syscalls++;
	th->st.segs_tx += nseg;
	th->st.copy_bytes += bytes;
	return s + work;
}

bool tcp_host_rx_polling(const struct tcp_host *th, const struct tcp_params *p, sim_time_t t)
{
	return th->rx_free > t && th->batch < p->irq_coalesce;
}

sim_time_t tcp_host_rx_fire(const struct tcp_params *p, sim_time_t first, sim_time_t last)
{
	return (p->rx_cqe_mode ? last : first) + (sim_time_t)p->rx_usecs * SIM_US;
}

sim_time_t tcp_host_rx_seg(struct tcp_host *th, const struct tcp_params *p, sim_time_t t,
			   sim_time_t irq)
{
	sim_time_t s;
	sim_time_t irq_ps = (sim_time_t)p->irq_ns * SIM_NS, seg = tcp_seg_ps(p, p->gro);

	if (tcp_host_rx_polling(th, p, t)) {
		s = th->rx_free;	/* the running poll takes it */
	} else {
		/* a new interrupt: the softirq was idle (the NIC raises it at
		 * irq), or its poll's budget is spent (a new poll at once) */
		s = max_t(irq > t ? irq : t, th->rx_free) + irq_ps;
		th->batch = 0;
		th->st.irqs++;
		th->st.cpu_ps += irq_ps;
		th->st.irq_ps += irq_ps;
	}
	th->batch++;
	th->rx_free = s + seg;
	th->st.cpu_ps += seg;
	th->st.proto_ps += seg;
	th->st.segs_rx++;
	return s + seg;
}

sim_time_t tcp_hot_ps(const struct tcp_params *p, double nic_bps)
{
	if (!(p->copy_hot_gbps > 0) || !(nic_bps > 0))
		return 0;
	return (sim_time_t)((double)p->ddio_bytes * 8.0 / nic_bps * 1e12);
}

sim_time_t tcp_host_rx_copy(struct tcp_host *th, const struct tcp_params *p, double gbps,
			    sim_time_t t, sim_time_t hot_until, uint64_t bytes, bool first,
			    bool last)
{
	sim_time_t s = max_t(t, th->app_free), c;

	if (first) {
		s += (sim_time_t)p->ctx_switch_ns * SIM_NS;
		th->st.cpu_ps += (sim_time_t)p->ctx_switch_ns * SIM_NS;
		th->st.wake_ps += (sim_time_t)p->ctx_switch_ns * SIM_NS;
		th->st.ctx_switches++;
	}
	/* still in the cache: the NIC has not yet written tcp.ddio_bytes more
	 * (a copy_gbps set above the cache's rate stays: "as fast as memory") */
	if (p->copy_hot_gbps > 0 && s <= hot_until) {
		if (p->copy_hot_gbps > gbps)
			gbps = p->copy_hot_gbps;
		th->st.hot_bytes += bytes;
	}
	c = tcp_copy_ps(bytes, gbps);
	s += c;
	th->st.cpu_ps += c;
	th->st.copy_ps += c;
	th->st.copy_bytes += bytes;
	if (last) {
		s += (sim_time_t)p->syscall_ns * SIM_NS;
		th->st.cpu_ps += (sim_time_t)p->syscall_ns * SIM_NS;
		th->st.syscall_ps += (sim_time_t)p->syscall_ns * SIM_NS;
		th->st.syscalls++;
	}
	th->app_free = s;
	return s;
}
