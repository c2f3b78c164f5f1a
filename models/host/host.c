/* SPDX-License-Identifier: MIT */
/*
 * host.c - the host behind an HCA: PCIe link, host memory, GPU memory,
 * GPUDirect RDMA, CPU accounting. host.h gives the formulas; this file
 * gives the numbers and where they come from.
 *
 * Modelled: each direction of the HCA's PCIe link as a pipe (latency plus
 * occupancy), TLP overhead per max-payload chunk, host memory bandwidth as
 * a cap, the GPU's link, GPUDirect peer-to-peer under one PCIe switch or
 * through the root complex, staging copies without GPUDirect, and the CPU
 * time of posting, polling and launching copies. Left out: read requests
 * (a 24-byte MRd per max read request, 512 B, about 5% of the reverse
 * direction), read completions split at the read-completion boundary,
 * PCIe tags and credits, the IOMMU, NUMA, BlueFlame (WQE by MMIO),
 * contention for host memory between concurrent transfers (it is a cap per
 * transfer: by default 150 GB/s against 28.6 GB/s of PCIe, so it only
 * matters when set low), and the CPU as a queue (it is charged, not
 * contended). docs/host-model.md says the same at more length.
 *
 * Link rate (PCI Express Base Specification, per-lane transfer rates, as
 * tabulated in pcie-bench's model, github.com/pcie-bench/pcie-model,
 * model/pcie.py): gen 3, 4, 5 run 8, 16, 32 GT/s with 128b/130b coding, so
 * Gen4 x16 = 16 GT/s x 16 x 128/130 / 8 = 31.51 GB/s per direction. Gen 6
 * runs 64 GT/s PAM4 in FLIT mode: a 256-byte flit carries 236 bytes of
 * TLPs, 6 DLP bytes (what DLLPs carried before: Acks, credits), 8 CRC and
 * 6 FEC bytes, so the TLP rate is 64 x 236/256. (pcie-model and some
 * write-ups use 242/256, counting the DLP bytes as data; they never carry
 * TLP bytes, so 236/256 is the rate payload sees.)
 *
 * TLP overhead, 26 bytes per TLP by default:
 *   - 24 bytes of a memory write TLP with a 64-bit address: 8 bytes of
 *     physical and data-link layer (framing, 2-byte sequence number, 4-byte
 *     LCRC), a 4-byte common header and 12 bytes of MWr header (pcie-model:
 *     DLLP_Hdr + TLP_Hdr + TLP_MWr_64_Hdr; Intel AN 708 gives 5-7 dwords
 *     per TLP without ECRC). A read completion's header is 4 bytes shorter
 *     (CplD, 20 bytes); one figure serves both directions (1.4% apart).
 *   - 2 bytes per TLP for Ack and UpdateFC DLLPs and SKP ordered sets
 *     (estimate). DLLPs are 8 bytes. The spec's Ack latency limit at x16
 *     and MPS 256 is 168 symbol times (the table in pcie-model), which at
 *     x16 is 2688 bytes of link time: one Ack and one UpdateFC per interval
 *     is 0.6%, SKP ordered sets (4 per 1538 symbols) 0.26%, so about 2.4
 *     bytes per 282-byte TLP. pcie-model divides by 168 as if it were bytes
 *     and deducts 9.8% at x16; we read the limit in symbol times.
 * Gen4 x16 payload: 31.51 x 256 / 282 = 28.60 GB/s; Gen3 x16: 14.30 GB/s,
 * below HDR's 25 GB/s and above EDR's 12.5. This is the ceiling the
 * protocol allows. Measured DMA rates are lower (completions split at
 * 64-128 bytes, tags, the root complex); to calibrate to a measured rate
 * R, set tlp_overhead = mps x (raw / R - 1), e.g. 54 for 26 GB/s at Gen4
 * x16. In FLIT mode (gen 6) framing, LCRC and DLLPs live in the flit: set
 * tlp_overhead=16 (the 4-DW header alone); the default 26 understates a
 * Gen6 link's payload rate by 3.5%.
 *
 * Latencies (ns). Estimates unless a measurement is named:
 *   dma_read_ns 250   a ConnectX-class HCA's read of host memory. Fitted
 *                     to perftest on an mlx5 host (perftest issue #131,
 *                     2-byte ib_write_lat 0.93 us inline, 1.32 us without
 *                     inline, ib_read_lat 1.91 us): the WQE fetch and the
 *                     payload read add 0.39 us to a WRITE, about 200 ns a
 *                     read round trip, and a READ's round trip puts it
 *                     nearer 300; 250 keeps all three within 8%. An upper
 *                     bound: pcie-bench (github.com/pcie-bench/data,
 *                     NFP-6000 on a Xeon E5-2630v4, IOMMU on) measures a
 *                     64-byte read at 560 ns median, its own slower DMA
 *                     engine included.
 *   dma_write_ns 250  estimate. Same data set: a 64-byte write followed by
 *                     a read takes 773 ns median, ~210 ns more than the read
 *                     alone; a posted write is one trip plus the write into
 *                     the last-level cache (DDIO).
 *   doorbell_ns 200   estimate: a posted MMIO write crosses the root complex
 *                     and the link once, about half a read round trip.
 *   wqe_fetch_ns 250  = dma_read_ns: fetching a WQE is a 64-byte DMA read.
 *                     BlueFlame skips it (bf_bytes).
 *   bf_bytes 256      mlx5 writes a WQE through the BlueFlame register
 *                     when it is posted alone, carries its data inline and
 *                     fits half of the 512-byte register (rdma-core,
 *                     providers/mlx5/qp.c: nreq == 1, inline, size <=
 *                     bf->buf_size / 16 in 16-byte units). That is why
 *                     perftest inlines up to 220 bytes of a WRITE (16 + 16
 *                     + 4 + 220 = 256).
 *   cqe_ns 250        = dma_write_ns: a CQE is a 64-byte posted write.
 *   p2p_switch_ns 100 estimate: a read of GPU memory through its BAR under a
 *                     switch; NCCL's documentation notes that reading GPU
 *                     memory is slightly slower than host memory on PCIe
 *                     platforms (hence NCCL_NET_GDR_READ off there).
 *   p2p_rc_penalty_ns 300  estimate: the root complex's peer-to-peer path.
 * Bandwidths (GB/s):
 *   mem_gbps 150      estimate: one socket of 8 DDR4-3200 channels is
 *                     8 x 25.6 = 204.8 GB/s peak, about 75% sustained.
 *   p2p_rc_gbps 8     estimate, and the most platform-dependent number here:
 *                     NVIDIA's GPUDirect RDMA documentation (Supported
 *                     Systems) says P2P with only PCIe switches on the path
 *                     performs best, through a single CPU "works, but yields
 *                     worse performance (especially peer-to-peer read
 *                     bandwidth has been shown to be severely limited on
 *                     some processor architectures)", and across sockets
 *                     may not work. 8 is below HDR's 25 on purpose: the
 *                     model then shows why GPU servers put each GPU and its
 *                     HCA under one switch (as DGX-class systems do).
 * CPU (ns):
 *   post_cpu_ns 100   ibv_post_send builds the WQE and its doorbell record
 *                     from user space, no system call;
 *   mmio_cpu_ns 280   and writes the doorbell (or the WQE, BlueFlame) to
 *                     write-combining MMIO and flushes it (sfence), which
 *                     holds the CPU. Together 380 ns a WR: perftest's
 *                     default single-QP rate on mlx5 hosts, 2.64 Mpps for
 *                     ib_write_bw and 2.45-2.56 for ib_read_bw at 2-16
 *                     bytes (perftest issue #132, UCX issue #8851), is
 *                     bound by the posting thread. The split is an
 *                     estimate: flushing write-combined MMIO costs more
 *                     than building a WQE, which is why doorbell batching
 *                     raises a core's rate (Kalia et al., ATC 2016).
 *   poll_cpu_ns 50    ibv_poll_cq reads one 64-byte CQE from the cache.
 *   memcpy_launch_ns 5000  the fixed cost of a small cudaMemcpy (driver,
 *                     copy-engine start, synchronisation): several us.
 * GPUDirect on and GPU under the HCA's switch: the layout GPU servers built
 * for GPUDirect RDMA use. Turn either off to see what it buys.
 */
#include "models/host/host.h"

#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "sim/sim_param.h"
#include "sim/sim_parse.h"

/* ---- the PCIe link ---------------------------------------------------- */

struct pcie_gen {
	uint8_t gen;
	uint32_t gts;		/* GT/s per lane (Gb/s per lane for gen 6 PAM4) */
	uint32_t num, den;	/* fraction of the line rate that carries TLP bytes
				 * (den <= 256: host_pcie_ser_ps's 64-bit path) */
};

static const struct pcie_gen pcie_gens[] = {
	{ 3,  8, 128, 130 },	/* 128b/130b */
	{ 4, 16, 128, 130 },
	{ 5, 32, 128, 130 },
	{ 6, 64, 236, 256 },	/* FLIT: 236 TLP bytes per 256-byte flit */
};

static const struct pcie_gen *find_gen(unsigned gen)
{
	for (size_t i = 0; i < SIM_ARRAY_SIZE(pcie_gens); i++)
		if (pcie_gens[i].gen == gen)
			return &pcie_gens[i];
	return NULL;
}

static bool lanes_valid(unsigned lanes)
{
	return lanes == 1 || lanes == 2 || lanes == 4 || lanes == 8 || lanes == 16;
}

static bool mps_valid(uint64_t mps)
{
	return mps >= 128 && mps <= 4096 && !(mps & (mps - 1));
}

static bool gbps_valid(double g, bool zero_ok)
{
	return isfinite(g) && (g > 0 || (zero_ok && g == 0)) && g <= 1e5;
}

uint64_t host_pcie_wire_bytes(const struct host_params *p, uint64_t bytes)
{
	uint64_t mps = p->pcie_mps ? p->pcie_mps : 256;
	uint64_t tlps = bytes / mps + (bytes % mps != 0);

	return bytes + tlps * p->tlp_overhead;
}

/*
 * ps = wire * 8 bits / (lanes * GT/s * num/den) = wire * 8000 * den /
 * (lanes * gts * num), in 128-bit integers, rounded up: exact, like
 * link_ser_ps(). Gen4 x16: 282 wire bytes -> 8950.2 -> 8951 ps.
 */
sim_time_t host_pcie_ser_ps(const struct host_params *p, uint64_t wire_bytes)
{
	const struct pcie_gen *g = find_gen(p->pcie_gen);
	unsigned __int128 n, d;

	if (!g || !p->pcie_lanes)
		return 0;	/* host_params_check() refuses these */
	if (wire_bytes < (1ULL << 40)) {
		/* the same in 64 bits, as every packet's and message's is
		 * (den <= 256: below 2^61): the 128-bit division, a call to
		 * __udivti3 at each packet a CA sends, was 1.3% of a
		 * 16-server GPU run */
		const uint64_t n64 = wire_bytes * 8000u * g->den;
		const uint64_t d64 = (uint64_t)p->pcie_lanes * g->gts * g->num;

		return (sim_time_t)((n64 + d64 - 1) / d64);
	}
	n = (unsigned __int128)wire_bytes * 8000u * g->den;
	d = (unsigned __int128)p->pcie_lanes * g->gts * g->num;
	return (sim_time_t)((n + d - 1) / d);
}

double host_pcie_raw_Bps(const struct host_params *p)
{
	const struct pcie_gen *g = find_gen(p->pcie_gen);

	if (!g)
		return 0;
	return (double)g->gts * 1e9 * p->pcie_lanes * g->num / g->den / 8;
}

double host_pcie_payload_Bps(const struct host_params *p)
{
	return host_pcie_raw_Bps(p) * p->pcie_mps / (p->pcie_mps + p->tlp_overhead);
}

/* bytes at gbps GB/s, in whole ps rounded up: bytes / (gbps * 1e9) s. */
static sim_time_t rate_ps(uint64_t bytes, double gbps)
{
	if (!(gbps > 0))
		return 0;	/* host_params_check() refuses these */
	return (sim_time_t)ceil((double)bytes * 1000.0 / gbps);
}

static sim_time_t max_t(sim_time_t a, sim_time_t b)
{
	return a > b ? a : b;
}

/* Time on the GPU's link: the HCA's link formula, or its own payload rate. */
static sim_time_t gpu_link_ps(const struct host_params *p, uint64_t bytes)
{
	if (p->gpu_pcie_gbps > 0)
		return rate_ps(bytes, p->gpu_pcie_gbps);
	return host_pcie_ser_ps(p, host_pcie_wire_bytes(p, bytes));
}

/*
 * One transfer over up to two pipes: it starts when all are free (and not
 * before t), holds them for occ, and is done lat after it leaves them.
 */
static sim_time_t run(sim_time_t t, sim_time_t *a, sim_time_t *b, sim_time_t occ,
		      sim_time_t lat)
{
	sim_time_t start = max_t(t, *a);

	if (b)
		start = max_t(start, *b);
	*a = start + occ;
	if (b)
		*b = start + occ;
	return start + occ + lat;
}

/*
 * A post's own transfer (its WQE by BlueFlame, or the WQE fetch) at t,
 * which the posting thread's queue may have put later than the payload
 * reads the HCA books meanwhile: booked on the pipe only when it queues
 * behind them. One that starts later than everything booked so far does
 * not hold the pipe, so that the DMA reads of work posted earlier are not
 * pushed behind it; it takes the pipe for a few ns (a 64-byte WQE: 2.9 ns
 * at Gen4 x16), which a DMA overlapping it does not see.
 */
static sim_time_t run_post(sim_time_t t, sim_time_t *pipe, sim_time_t occ, sim_time_t lat)
{
	if (t > *pipe)
		return t + occ + lat;
	return run(t, pipe, NULL, occ, lat);
}

/* ---- the model --------------------------------------------------------- */

void host_init(struct host *h, const struct host_params *p)
{
	memset(h, 0, sizeof(*h));
	h->p = p;
}

bool host_needs_staging(const struct host_params *p, enum hca_mem mem)
{
	return mem == HCA_MEM_GPU && !p->gpudirect;
}

sim_time_t host_post(struct host *h, sim_time_t t, uint32_t inline_bytes,
		     enum host_post_kind kind)
{
	const struct host_params *p = h->p;
	/* Inline data follows the WQE's segments (16-byte units); what
	 * crosses PCIe is whole 64-byte blocks. A 220-byte inline WRITE is
	 * 256 bytes of segments: BlueFlame's half register exactly, which is
	 * why perftest inlines up to 220 (docs/host-model.md). */
	uint64_t segs = inline_bytes ? ((uint64_t)HOST_WQE_INLINE_HDR + inline_bytes + 15) / 16 * 16 :
				       HOST_WQE_DATA_SEGS;
	uint64_t wqe = (segs + HOST_WQE_BYTES - 1) / HOST_WQE_BYTES * HOST_WQE_BYTES;
	uint64_t db_wire = host_pcie_wire_bytes(p, HOST_DOORBELL_BYTES);
	uint64_t wqe_wire = host_pcie_wire_bytes(p, wqe);
	sim_time_t occ = max_t(host_pcie_ser_ps(p, wqe_wire), rate_ps(wqe, p->mem_gbps));
	/* mlx5's rule (rdma-core providers/mlx5, post_send_db): one WR in the
	 * call, data inline, WQE within the BlueFlame buffer's half */
	bool bf = kind == HOST_POST_ALONE && inline_bytes && segs <= p->bf_bytes;
	sim_time_t mmio = kind == HOST_POST_LIST ? 0 : (sim_time_t)p->mmio_cpu_ns * SIM_NS;

	h->st.posts++;
	h->st.cpu_ps += (uint64_t)p->post_cpu_ns * SIM_NS + mmio;
	h->st.rc_bytes += wqe_wire;
	h->st.hostmem_bytes += wqe;	/* the send queue lives in host memory */
	/* One posting thread: a post starts when the last one is done. The
	 * MMIO write leaves once the WQE is built; flushing it holds the CPU
	 * (mmio) but does not delay its way to the HCA. */
	t = max_t(t, h->cpu_free) + (sim_time_t)p->post_cpu_ns * SIM_NS;
	h->cpu_free = t + mmio;
	if (bf) {
		/* The WQE is the doorbell: a write-combined MMIO burst of its
		 * bytes crosses the link once; nothing is fetched. */
		h->st.pcie_rd_bytes += wqe_wire;
		h->st.bf_posts++;
		return run_post(t, &h->rd_free, occ, (sim_time_t)p->doorbell_ns * SIM_NS);
	}
	if (kind == HOST_POST_LIST) {
		/* no doorbell of its own: the list's last WR rings it (the
		 * HCA is told a little late by the rest of the list's posts;
		 * left out) */
		h->st.pcie_rd_bytes += wqe_wire;
		return run_post(t, &h->rd_free, occ, (sim_time_t)p->wqe_fetch_ns * SIM_NS);
	}
	h->st.pcie_rd_bytes += db_wire + wqe_wire;
	h->st.rc_bytes += db_wire;
	/*
	 * The doorbell is latency only: its 34 wire bytes are 1 ns at Gen4 x16.
	 * The WQE fetch then queues on the rd pipe behind payload reads.
	 */
	t += (sim_time_t)p->doorbell_ns * SIM_NS;
	return run_post(t, &h->rd_free, occ, (sim_time_t)p->wqe_fetch_ns * SIM_NS);
}

/*
 * One payload DMA, reads and writes alike: `hca` is the HCA's pipe in that
 * direction, `gpu` the GPU link's pipe a P2P transfer also holds.
 */
static sim_time_t dma(struct host *h, sim_time_t t, enum hca_mem mem, uint32_t bytes,
		      sim_time_t *hca, sim_time_t *gpu, uint32_t lat_ns, uint64_t *dir_bytes)
{
	const struct host_params *p = h->p;
	uint64_t wire = host_pcie_wire_bytes(p, bytes);
	sim_time_t occ = host_pcie_ser_ps(p, wire);
	sim_time_t lat = (sim_time_t)lat_ns * SIM_NS;

	*dir_bytes += wire;
	if (mem == HCA_MEM_GPU && p->gpudirect) {
		/* Peer to peer: GPU link -> (switch | root complex) -> HCA link. */
		h->st.gpu_pcie_bytes += wire;
		if (p->gpu_pcie_gbps > 0)
			occ = max_t(occ, rate_ps(bytes, p->gpu_pcie_gbps));
		if (p->gpu_same_switch) {
			lat += (sim_time_t)p->p2p_switch_ns * SIM_NS;
		} else {
			occ = max_t(occ, rate_ps(bytes, p->p2p_rc_gbps));
			lat += (sim_time_t)p->p2p_rc_penalty_ns * SIM_NS;
			h->st.rc_bytes += wire;
		}
		return run(t, hca, gpu, occ, lat);
	}
	/* Host memory (or, without GPUDirect, the staged bounce buffer). */
	occ = max_t(occ, rate_ps(bytes, p->mem_gbps));
	h->st.rc_bytes += wire;
	h->st.hostmem_bytes += bytes;
	return run(t, hca, NULL, occ, lat);
}

sim_time_t host_dma_read(struct host *h, sim_time_t t, enum hca_mem mem, uint32_t bytes)
{
	if (!bytes)
		return t;
	h->st.dma_reads++;
	return dma(h, t, mem, bytes, &h->rd_free, &h->gpu_free, h->p->dma_read_ns,
		   &h->st.pcie_rd_bytes);
}

sim_time_t host_dma_write(struct host *h, sim_time_t t, enum hca_mem mem, uint32_t bytes)
{
	if (!bytes)
		return t;
	h->st.dma_writes++;
	return dma(h, t, mem, bytes, &h->wr_free, &h->gpu_in_free, h->p->dma_write_ns,
		   &h->st.pcie_wr_bytes);
}

/*
 * A staging copy over the GPU's link by its copy engine, after the CPU has
 * launched it. Under the HCA's switch it also crosses the switch uplink in
 * the same direction as the HCA's `hca` pipe (GPU -> memory shares the
 * uplink with the HCA's writes, memory -> GPU with its reads).
 */
/* A copy between the GPU and host memory: by the copy engine after a
 * cudaMemcpyAsync's launch (copy), or by the GPU's own threads' loads and
 * stores (no launch, no copy counted). */
static sim_time_t stage(struct host *h, sim_time_t t, uint64_t bytes, sim_time_t *gpu,
			sim_time_t *hca, uint32_t lat_ns, bool copy)
{
	const struct host_params *p = h->p;
	uint64_t wire = host_pcie_wire_bytes(p, bytes);
	sim_time_t occ = max_t(gpu_link_ps(p, bytes), rate_ps(bytes, p->mem_gbps));

	h->st.gpu_pcie_bytes += wire;
	h->st.rc_bytes += wire;
	h->st.hostmem_bytes += bytes;
	if (copy) {
		h->st.staging_copies++;
		h->st.cpu_ps += (uint64_t)p->memcpy_launch_ns * SIM_NS;
		t += (sim_time_t)p->memcpy_launch_ns * SIM_NS;
	}
	return run(t, gpu, p->gpu_same_switch ? hca : NULL, occ, (sim_time_t)lat_ns * SIM_NS);
}

sim_time_t host_stage_gpu_to_host(struct host *h, sim_time_t t, uint64_t bytes)
{
	if (!bytes)
		return t;
	/* The copy engine's posted writes into host memory. */
	return stage(h, t, bytes, &h->gpu_free, &h->wr_free, h->p->dma_write_ns, true);
}

sim_time_t host_gpu_store(struct host *h, sim_time_t t, uint64_t bytes)
{
	if (!bytes)
		return t;
	return stage(h, t, bytes, &h->gpu_free, &h->wr_free, h->p->dma_write_ns, false);
}

sim_time_t host_gpu_load(struct host *h, sim_time_t t, uint64_t bytes)
{
	if (!bytes)
		return t;
	return stage(h, t, bytes, &h->gpu_in_free, &h->rd_free, h->p->dma_read_ns, false);
}

sim_time_t host_stage_host_to_gpu(struct host *h, sim_time_t t, uint64_t bytes)
{
	if (!bytes)
		return t;
	/* The copy engine reads host memory: a read round trip. */
	return stage(h, t, bytes, &h->gpu_in_free, &h->rd_free, h->p->dma_read_ns, true);
}

sim_time_t host_cqe(struct host *h, sim_time_t t, sim_time_t after)
{
	const struct host_params *p = h->p;
	uint64_t wire = host_pcie_wire_bytes(p, HOST_CQE_BYTES);
	sim_time_t occ = max_t(host_pcie_ser_ps(p, wire), rate_ps(HOST_CQE_BYTES, p->mem_gbps));
	sim_time_t seen;

	h->st.cqes++;
	h->st.cpu_ps += (uint64_t)p->poll_cpu_ns * SIM_NS;
	h->st.pcie_wr_bytes += wire;
	h->st.rc_bytes += wire;
	h->st.hostmem_bytes += HOST_CQE_BYTES;
	seen = max_t(run(t, &h->wr_free, NULL, occ, (sim_time_t)p->cqe_ns * SIM_NS), after);
	return seen + (sim_time_t)p->poll_cpu_ns * SIM_NS;
}

/* ---- parameters --------------------------------------------------------- */

void host_params_default(struct host_params *p)
{
	memset(p, 0, sizeof(*p));
	p->pcie_gen = 4;		/* ConnectX-6 class: PCIe Gen4 x16 */
	p->pcie_lanes = 16;
	p->pcie_mps = 256;		/* the common server setting */
	p->tlp_overhead = 26;		/* 24 TLP + 2 DLLP share: see the top of this file */
	p->dma_read_ns = 250;
	p->dma_write_ns = 250;
	p->doorbell_ns = 200;
	p->wqe_fetch_ns = 250;
	p->bf_bytes = 256;	/* mlx5: half of the 512-byte BlueFlame register */
	p->cqe_ns = 250;
	p->mem_gbps = 150;
	p->gpu_pcie_gbps = 0;
	p->gpudirect = true;
	p->gpu_same_switch = true;
	p->p2p_switch_ns = 100;
	p->p2p_rc_penalty_ns = 300;
	p->p2p_rc_gbps = 8;
	p->memcpy_launch_ns = 5000;
	p->post_cpu_ns = 100;
	p->mmio_cpu_ns = 280;
	p->poll_cpu_ns = 50;
}

/*
 * host.* keys, rows of the parameter schema (sim/sim_param.h): PCIe's
 * generation, lanes and payload size and the GB/s rates have their own
 * parsers, the rest are generic.
 */

/* Skip an optional case-insensitive prefix ("gen4", "x16"). */
static const char *skip_prefix(const char *v, const char *pre)
{
	size_t n = strlen(pre);

	return strncasecmp(v, pre, n) ? v : v + n;
}

static int set_gen(void *obj, const struct sim_param *k, const char *v, char *err, size_t errlen)
{
	uint64_t x = 0;

	(void)k;
	if (sim_parse_uint(skip_prefix(v, "gen"), 255, &x, NULL, 0) || !find_gen((unsigned)x)) {
		snprintf(err, errlen, "expected 3, 4, 5 or 6 (PCIe generation), got '%s'", v);
		return -1;
	}
	((struct host_params *)obj)->pcie_gen = (uint8_t)x;
	return 0;
}

static int set_lanes(void *obj, const struct sim_param *k, const char *v, char *err,
		     size_t errlen)
{
	uint64_t x = 0;

	(void)k;
	if (sim_parse_uint(skip_prefix(v, "x"), 255, &x, NULL, 0) || !lanes_valid((unsigned)x)) {
		snprintf(err, errlen, "expected 1, 2, 4, 8 or 16 (PCIe lanes), got '%s'", v);
		return -1;
	}
	((struct host_params *)obj)->pcie_lanes = (uint8_t)x;
	return 0;
}

static int check_mps(const struct sim_param *k, uint64_t x, const char *v, char *err,
		     size_t errlen)
{
	(void)k;
	if (mps_valid(x))
		return 0;
	snprintf(err, errlen,
		 "expected 128, 256, 512, 1024, 2048 or 4096 (PCIe max payload size), got '%s'", v);
	return -1;
}

/* GB/s in a double: above 0 (rows with min 1), or 0 too (min 0). */
static int set_gbps(void *obj, const struct sim_param *k, const char *v, char *err,
		    size_t errlen)
{
	double g;

	if (sim_parse_double(v, &g, err, errlen))
		return -1;
	if (!gbps_valid(g, !k->min)) {
		snprintf(err, errlen, "'%s' is out of range (%s up to 100000 GB/s)", v,
			 !k->min ? "0, or above 0" : "above 0");
		return -1;
	}
	*(double *)((char *)obj + k->off) = g;
	return 0;
}

static void print_gbps(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	snprintf(buf, len, "%.12g", *(const double *)((const char *)obj + k->off));
}

#define F(f) SIM_PARAM_FIELD(struct host_params, f)
#define NS(n, f, m) { "host." n, SIM_PARAM_NS, F(f), 0, UINT32_MAX, NULL, NULL, NULL, m }
#define GBPS(n, f, zero_ok, m) \
	{ "host." n, SIM_PARAM_SPECIAL, F(f), (zero_ok) ? 0 : 1, 0, set_gbps, print_gbps, NULL, m }
#define BOOL(n, f, m) { "host." n, SIM_PARAM_BOOL, F(f), 0, 1, NULL, NULL, NULL, m }

/* In print order. */
const struct sim_param host_param_keys[] = {
	{ "host.pcie_gen", SIM_PARAM_SPECIAL, F(pcie_gen), 0, 0, set_gen, sim_param_print_number,
	  NULL,
	  "PCIe generation of the HCA's link: 3 4 5 6 (8 16 32 64 GT/s per lane)" },
	{ "host.pcie_lanes", SIM_PARAM_SPECIAL, F(pcie_lanes), 0, 0, set_lanes,
	  sim_param_print_number, NULL,
	  "PCIe lanes of the HCA's link: 1 2 4 8 16" },
	{ "host.pcie_mps", SIM_PARAM_SIZE, F(pcie_mps), 0, UINT32_MAX, NULL,
	  sim_param_print_number, check_mps,
	  "PCIe max payload size, bytes (128..4096): TLP overhead per chunk" },
	{ "host.tlp_overhead", SIM_PARAM_UINT, F(tlp_overhead), 0, 1024, NULL, NULL, NULL,
	  "bytes per TLP beside payload: framing, header, LCRC, DLLP share" },
	NS("dma_read_ns", dma_read_ns, "DMA read round trip: request to first data back, ns"),
	NS("dma_write_ns", dma_write_ns, "DMA write: posted write to visible in memory, ns"),
	NS("doorbell_ns", doorbell_ns, "MMIO doorbell write reaching the HCA, ns"),
	NS("wqe_fetch_ns", wqe_fetch_ns,
	   "WQE fetch, a 64-byte DMA read of a WQE not sent by BlueFlame, ns"),
	{ "host.bf_bytes", SIM_PARAM_SIZE, F(bf_bytes), 0, 4096, NULL, sim_param_print_number, NULL,
	  "BlueFlame: an inline WQE up to this size, posted alone, is written by MMIO (0 = never)" },
	NS("cqe_ns", cqe_ns, "CQE write to visible to a polling CPU, ns"),
	GBPS("mem_gbps", mem_gbps, false,
	     "host memory bandwidth, GB/s (a cap on each host-memory transfer)"),
	GBPS("gpu_pcie_gbps", gpu_pcie_gbps, true,
	     "GPU's PCIe link, GB/s of payload (0 = same as the HCA's link)"),
	BOOL("gpudirect", gpudirect,
	     "GPUDirect RDMA: the HCA reads and writes GPU memory directly: on/off"),
	BOOL("gpu_same_switch", gpu_same_switch,
	     "GPU and HCA under one PCIe switch (P2P stays below the root complex): on/off"),
	NS("p2p_switch_ns", p2p_switch_ns, "extra latency of P2P under one switch, ns"),
	NS("p2p_rc_penalty_ns", p2p_rc_penalty_ns, "extra latency of P2P through the root complex, ns"),
	GBPS("p2p_rc_gbps", p2p_rc_gbps, false, "P2P bandwidth through the root complex, GB/s"),
	NS("memcpy_launch_ns", memcpy_launch_ns,
	   "CPU time to launch one staging copy (cudaMemcpy), ns"),
	NS("post_cpu_ns", post_cpu_ns, "CPU time to build and post one WR from user space, ns"),
	NS("mmio_cpu_ns", mmio_cpu_ns, "CPU time of one doorbell or BlueFlame MMIO write and its flush, ns"),
	NS("poll_cpu_ns", poll_cpu_ns, "CPU time per polled completion, ns"),
	{ NULL },
};

#undef F
#undef NS
#undef GBPS
#undef BOOL

static const struct sim_param_table host_table = {
	host_param_keys, 0, 22, 8,
};

int host_params_set(struct host_params *p, const char *key, const char *value,
		    struct sim_diag *d)
{
	static const struct sim_param_table *const tables[] = { &host_table, NULL };
	char kv[600];

	if (!key || !*key)
		return sim_diag_set(d, NULL, 0, 0, "empty parameter name (expected host.KEY=VALUE)");
	snprintf(kv, sizeof(kv), "%s%s=%s", strncasecmp(key, "host.", 5) ? "host." : "", key,
		 value ? value : "");
	return sim_param_set(tables, p, kv, "ibfab run --help-params", d);
}

void host_params_print(const struct host_params *p, FILE *out)
{
	static const struct sim_param_table *const tables[] = { &host_table, NULL };

	sim_param_print(tables, p, out);
}

int host_params_check(const struct host_params *p, struct sim_diag *d)
{
	if (!find_gen(p->pcie_gen))
		return sim_diag_set(d, NULL, 0, 0, "host.pcie_gen: %u is not supported (3, 4, 5 or 6)",
				    p->pcie_gen);
	if (!lanes_valid(p->pcie_lanes))
		return sim_diag_set(d, NULL, 0, 0, "host.pcie_lanes: %u is not a PCIe width (1, 2, 4, 8 or 16)",
				    p->pcie_lanes);
	if (!mps_valid(p->pcie_mps))
		return sim_diag_set(d, NULL, 0, 0,
				    "host.pcie_mps: %u is not a PCIe max payload size (128..4096, a power of 2)",
				    p->pcie_mps);
	if (p->tlp_overhead > 1024)
		return sim_diag_set(d, NULL, 0, 0, "host.tlp_overhead: %u is out of range (0..1024)",
				    p->tlp_overhead);
	if (!gbps_valid(p->mem_gbps, false))
		return sim_diag_set(d, NULL, 0, 0, "host.mem_gbps: %g is out of range (above 0, up to 100000)",
				    p->mem_gbps);
	if (!gbps_valid(p->gpu_pcie_gbps, true))
		return sim_diag_set(d, NULL, 0, 0,
				    "host.gpu_pcie_gbps: %g is out of range (0, or above 0 up to 100000)",
				    p->gpu_pcie_gbps);
	if (!gbps_valid(p->p2p_rc_gbps, false))
		return sim_diag_set(d, NULL, 0, 0,
				    "host.p2p_rc_gbps: %g is out of range (above 0, up to 100000)",
				    p->p2p_rc_gbps);
	return 0;
}
