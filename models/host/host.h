/* SPDX-License-Identifier: MIT */
/*
 * host.h - the host behind an HCA: its PCIe link, host memory, GPU memory,
 * GPUDirect RDMA, and the CPU time a verbs program spends.
 *
 * The HCA transport (models/hca) calls this model at five points, each with
 * a simulated time in picoseconds, and gets back the time the step is done:
 * a post (doorbell, WQE fetch), the DMA read of a packet's payload before it
 * is sent, the DMA write of an arriving payload, the CQE write, and, for a
 * GPU buffer without GPUDirect RDMA, the staging copies through host memory.
 * docs/host-model.md explains the model, its defaults and their sources.
 *
 * Pipelines. The HCA's path to the root complex is two independent pipes,
 * one per direction of the full-duplex link:
 *   rd  host -> HCA: doorbells, WQE fetches, payload the HCA reads;
 *   wr  HCA -> host: payload the HCA writes, CQEs.
 * The GPU's link is two more pipes: gpu_free (GPU -> rest of the system:
 * device-to-host staging, the HCA reading GPU memory) and gpu_in_free (the
 * other way). Each pipe is a "free at" time. A transfer of `bytes` that
 * uses the set of pipes P, is asked for at time t and has latency L:
 *
 *   tlps  = ceil(bytes / pcie_mps)
 *   wire  = bytes + tlps * tlp_overhead                  (bytes on the link)
 *   ser   = ceil(wire * 8 / raw)                         (ps, exact integers)
 *           raw = pcie_gen's GT/s * lanes * code, code = 128/130 for gen
 *           3-5, 236/256 for gen 6 (FLIT mode, see host.c)
 *   occ   = max(ser, bytes / every other rate cap on the path)
 *   start = max(t, free of every pipe in P)
 *   free  = start + occ                                  (for every pipe in P)
 *   done  = start + occ + L
 *
 * so back-to-back transfers queue (their throughput is bytes / occ) while
 * an isolated one takes occ + L. The caps and L by call:
 *
 *   call                         pipes             caps                 L
 *   host_dma_read, host memory   rd                mem_gbps             dma_read_ns
 *   host_dma_read, GPU + GDR,    rd, gpu           GPU link             dma_read_ns + p2p_switch_ns
 *     same PCIe switch
 *   host_dma_read, GPU + GDR,    rd, gpu           GPU link, p2p_rc     dma_read_ns + p2p_rc_penalty_ns
 *     across the root complex
 *   host_dma_write               wr (+ gpu_in)     as for reads         dma_write_ns (+ the same P2P extras)
 *   host_post (WQE of W bytes)   rd, after         mem_gbps             wqe_fetch_ns
 *                                t + post_cpu_ns + doorbell_ns
 *   host_post, BlueFlame         rd, after         mem_gbps             doorbell_ns
 *     (inline, W <= bf_bytes)    t + post_cpu_ns
 *   host_cqe (64-byte CQE)       wr                mem_gbps             cqe_ns, then + poll_cpu_ns
 *   host_stage_gpu_to_host       gpu (+ wr if      GPU link, mem_gbps   dma_write_ns (the copy engine's
 *                                same switch),                           posted writes into host memory)
 *                                after t + memcpy_launch_ns
 *   host_stage_host_to_gpu       gpu_in (+ rd if   GPU link, mem_gbps   dma_read_ns (the copy engine
 *                                same switch),                           reads host memory)
 *                                after t + memcpy_launch_ns
 *
 * where "GPU link" is ser on the GPU's link: the HCA's link formula when
 * gpu_pcie_gbps is 0, bytes / gpu_pcie_gbps otherwise. When the GPU and the
 * HCA sit under one PCIe switch they share its uplink to the root complex,
 * so staging copies also occupy the HCA's pipe in their direction; P2P
 * under that switch never reaches the uplink.
 *
 * Contract with the transport. Without GPUDirect RDMA the HCA cannot reach
 * GPU memory: the transport stages first (host_stage_gpu_to_host() before
 * reading a send buffer; host_stage_host_to_gpu() after writing a receive
 * buffer) and the HCA's DMAs then touch the bounce buffer in host memory.
 * host_dma_read/write() therefore treat HCA_MEM_GPU as host memory when
 * gpudirect is off; host_needs_staging() tells the transport when to stage.
 * Inline data (IBV_SEND_INLINE) rides in the WQE: the transport skips the
 * payload DMA read for it. Call host_dma_read/write once per packet, and
 * ask for a packet's payload ahead of the wire (HCAs keep many reads
 * outstanding): asking only when the wire is free adds dma_read_ns to
 * every packet. Staging copies cover the whole message (a cudaMemcpy of
 * the buffer before the post), so their cost is store-and-forward.
 *
 * The CPU is charged (st.cpu_ps): post_cpu_ns per post plus mmio_cpu_ns
 * per doorbell, poll_cpu_ns per polled CQE, memcpy_launch_ns per staging
 * copy. Posts also queue on one posting thread per host (cpu_free): that
 * is what bounds a single-threaded program's message rate (one WR per
 * post_cpu_ns + mmio_cpu_ns); polls and copies are charged, not queued.
 *
 * State is per host (one HCA); no call reads another entity's state, as
 * the parallel engine requires (docs/architecture.md).
 */
#ifndef IBFAB_HOST_H
#define IBFAB_HOST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/sim_param.h"
#include "sim/sim.h"
#include "sim/sim_diag.h"

/* Where a buffer an HCA reaches lives: host memory or a GPU's (this model
 * decides what reaching it costs) */
enum hca_mem { HCA_MEM_HOST, HCA_MEM_GPU };

#define HOST_WQE_BYTES		64	/* a send WQE: mlx5's 64-byte WQE basic block */
/* An RDMA WRITE's segments before its inline data: control 16, remote
 * address 16, the inline segment's byte count 4 (mlx5, in 16-byte units);
 * without inline data, control, remote address and one data segment, 48. */
#define HOST_WQE_INLINE_HDR	36
#define HOST_WQE_DATA_SEGS	48
#define HOST_CQE_BYTES		64	/* mlx5 CQE size */
#define HOST_DOORBELL_BYTES	8	/* one 64-bit MMIO write to the HCA's doorbell page */

struct host_params {
	uint8_t pcie_gen;	/* 3, 4, 5, 6: 8, 16, 32, 64 GT/s per lane; 128b/130b (gen 6: FLIT, 236/256) */
	uint8_t pcie_lanes;	/* 1, 2, 4, 8, 16 */
	uint32_t pcie_mps;	/* max payload size, bytes (128..4096, a power of 2): one TLP per MPS chunk */
	uint32_t tlp_overhead;	/* bytes per TLP beside its payload: 24 framing + header + LCRC, 2 DLLP share */
	uint32_t dma_read_ns;	/* HCA-issued read request -> first data back (round trip) */
	uint32_t dma_write_ns;	/* posted write -> visible in memory */
	uint32_t doorbell_ns;	/* MMIO doorbell write reaching the HCA */
	uint32_t wqe_fetch_ns;	/* WQE fetch (a DMA read of 64 B) */
	uint32_t bf_bytes;	/* BlueFlame: an inline WQE up to this size, posted alone, goes by MMIO (0 = never) */
	uint32_t cqe_ns;	/* CQE write visible to a polling CPU */
	double mem_gbps;	/* host memory bandwidth, GB/s */
	double gpu_pcie_gbps;	/* GPU's own PCIe link, GB/s of payload, if it differs; 0 = same as HCA's */
	bool gpudirect;		/* HCA reads/writes GPU memory directly */
	bool gpu_same_switch;	/* GPU and HCA under one PCIe switch (peer-to-peer stays below the root complex) */
	uint32_t p2p_switch_ns;	/* extra latency of P2P under one switch (GPU BAR access, switch hop) */
	uint32_t p2p_rc_penalty_ns; /* extra latency when P2P crosses the root complex */
	double p2p_rc_gbps;	/* P2P bandwidth through the root complex (often much lower) */
	uint32_t memcpy_launch_ns; /* CPU time to launch one staging copy (cudaMemcpy) */
	uint32_t post_cpu_ns;	/* CPU time to build and post a WR from user space (no syscall) */
	uint32_t mmio_cpu_ns;	/* CPU time of a doorbell's (or BlueFlame's) MMIO write and its flush */
	uint32_t poll_cpu_ns;	/* CPU time per polled completion */
};

void host_params_default(struct host_params *p);
/*
 * Set one parameter from "host.KEY=VALUE" text: `key` without the "host."
 * prefix (a leading "host." is accepted too). Returns 0, or -1 with a
 * message in d naming the key: an unknown key gets a did-you-mean, a bad
 * value the expected form or range. A refused value changes nothing.
 */
int host_params_set(struct host_params *p, const char *key, const char *value, struct sim_diag *d);
/* The host.* keys, rows of the parameter schema (sim/sim_param.h). */
extern const struct sim_param host_param_keys[];	/* a NULL name ends them */
/* Every parameter, one "host.key = value  # meaning" line each; the values
 * parse back with host_params_set(). */
void host_params_print(const struct host_params *p, FILE *out);
/* Cross-field and range checks for a struct filled by code; 0 or -1 + d. */
int host_params_check(const struct host_params *p, struct sim_diag *d);

/* In the order a DMA write changes them first (struct host's line). */
struct host_stats {
	uint64_t pcie_wr_bytes;			/* payload + TLP overhead crossing the HCA's link,
						 * HCA -> host */
	uint64_t dma_writes;			/* host_dma_write() calls moving bytes */
	uint64_t gpu_pcie_bytes;		/* crossing the GPU's link (staging or P2P) */
	uint64_t rc_bytes;			/* through the root complex: host-memory DMA, staging,
						 * P2P not under one switch (0 for GPUDirect under a switch) */
	uint64_t hostmem_bytes;			/* host memory touched (DMA, staging, and a TCP stack's copies) */
	uint64_t pcie_rd_bytes;			/* the same, host -> HCA */
	uint64_t dma_reads;			/* host_dma_read() calls moving bytes */
	uint64_t cpu_ps;			/* CPU time charged */
	uint64_t staging_copies;
	uint64_t posts, cqes;			/* host_post() and host_cqe() calls: CPU time per message */
	uint64_t bf_posts;			/* posts whose WQE went by BlueFlame (no fetch) */
};

/*
 * A DMA write, which every data packet an HCA receives makes, reads and
 * changes one line: the parameters' address, its two pipes and its five
 * counters. The parameters are shared (every HCA of a fabric reads the
 * fabric's one copy, which stays in the cache), where a copy in each host
 * was four lines more for every packet received on a large fabric.
 */
struct host {
	const struct host_params *p;	/* host_init's: it outlives the host */
	/* pipelines: each a "free at" time, so back-to-back DMAs queue behind each other */
	sim_time_t wr_free;		/* the HCA's link, HCA -> host */
	sim_time_t gpu_in_free;		/* the GPU's link, into the GPU */
	struct host_stats st;
	sim_time_t rd_free;		/* the HCA's link, host -> HCA */
	sim_time_t gpu_free;		/* the GPU's link, out of the GPU */
	sim_time_t cpu_free;		/* the posting thread: posts queue behind each other */
} __attribute__((aligned(64)));

/* p must pass host_params_check() and outlive h (h reads it, not a
 * copy). Pipes free at 0, statistics zero. */
void host_init(struct host *h, const struct host_params *p);
/* How a WR was posted: alone (one per call), or in a list of several,
 * whose last one rings the doorbell (mlx5: no BlueFlame for a list). */
enum host_post_kind { HOST_POST_ALONE, HOST_POST_LIST, HOST_POST_LIST_LAST };
/*
 * When the HCA holds the WR of a post made at t: the posting thread's time
 * (posts queue on it: post_cpu_ns, and mmio_cpu_ns for the WR that rings
 * the doorbell), then BlueFlame (an inline WQE of at most bf_bytes posted
 * alone: the CPU writes it by MMIO as the doorbell) or the doorbell and
 * the WQE fetch. `inline_bytes` ride in the WQE.
 */
sim_time_t host_post(struct host *h, sim_time_t t, uint32_t inline_bytes,
		     enum host_post_kind kind);
/* The HCA asks at t for `bytes` of payload in `mem`; returns when the last byte is in the HCA. */
sim_time_t host_dma_read(struct host *h, sim_time_t t, enum hca_mem mem, uint32_t bytes);
/* `bytes` arrive at the HCA at t to be written into `mem`; returns when they are visible. */
sim_time_t host_dma_write(struct host *h, sim_time_t t, enum hca_mem mem, uint32_t bytes);
/* Staging copies when a GPU buffer is used without GPUDirect; return the end time. */
sim_time_t host_stage_gpu_to_host(struct host *h, sim_time_t t, uint64_t bytes);
sim_time_t host_stage_host_to_gpu(struct host *h, sim_time_t t, uint64_t bytes);
/* The same moves made by the GPU's own threads, storing to or loading from
 * host memory over PCIe (NCCL's LL protocol between servers: its buffers
 * are in host memory): the copy's pipes and latency, no cudaMemcpy
 * launch, not counted as a staging copy. */
sim_time_t host_gpu_store(struct host *h, sim_time_t t, uint64_t bytes);
sim_time_t host_gpu_load(struct host *h, sim_time_t t, uint64_t bytes);
/*
 * A CQE the HCA writes at t: when a polling CPU has it (visible, then
 * poll_cpu_ns). It follows the data it completes on the same pipe, and
 * PCIe keeps posted writes in order: it is never visible before `after`,
 * when that data is.
 */
sim_time_t host_cqe(struct host *h, sim_time_t t, sim_time_t after);
/* True when a buffer in `mem` must be staged through host memory. */
bool host_needs_staging(const struct host_params *p, enum hca_mem mem);

/*
 * Closed forms used by tests and by the perftest-style report: the data rate
 * of the HCA's PCIe link for payload (bytes/s, after encoding and TLP
 * overhead): raw * pcie_mps / (pcie_mps + tlp_overhead).
 */
double host_pcie_payload_Bps(const struct host_params *p);
/* Bytes/s per direction after the line code, before TLP overhead. */
double host_pcie_raw_Bps(const struct host_params *p);
/* Bytes on the HCA's link for a transfer of `bytes` payload (TLP overhead per MPS chunk). */
uint64_t host_pcie_wire_bytes(const struct host_params *p, uint64_t bytes);
/* Time the HCA's link is busy with those wire bytes (ser above), whole ps rounded up. */
sim_time_t host_pcie_ser_ps(const struct host_params *p, uint64_t wire_bytes);

#endif
