/* SPDX-License-Identifier: MIT */
/*
 * test_host.c - the host model (models/host/): PCIe link rates for every
 * generation, each call's closed form to the picosecond, queueing of
 * back-to-back DMAs (throughput = bandwidth), full duplex, the host-memory
 * cap, PCIe becoming the bottleneck of an HDR link at Gen3 but not Gen4,
 * GPUDirect RDMA on and off for the same transfer (the staging copies, the
 * extra root-complex crossings and host-memory bytes, the time the formulas
 * predict), peer-to-peer under one switch against through the root complex,
 * the staging contract, statistics, and parameter parsing.
 *
 * The expected values do not come from host.c's tables: link rates come
 * from the per-lane data rates after each generation's line code (Gen3 8
 * GT/s x 128/130 = 1024/130 Gb/s, Gen4 2048/130, Gen5 4096/130, Gen6 64
 * x 236/256 = 59 Gb/s), checked against the published GB/s per direction,
 * and TLP counts, wire bytes and latencies are recomputed here from the
 * defaults written out as numbers.
 */
#include "tests/unit/test_main.h"

#include "models/host/host.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS	1000ull			/* ps */
#define MPS	256ull			/* default max payload size */
#define OVH	26ull			/* default TLP overhead */
#define MiB	(1024ull * 1024)

/* The defaults as numbers (host.c's comment gives their sources). */
#define RD_NS	250ull
#define WR_NS	250ull
#define DB_NS	200ull
#define WQE_NS	250ull
#define CQE_NS	250ull
#define SW_NS	100ull
#define RC_NS	300ull
#define RC_GBPS	8.0
#define CPY_NS	5000ull
#define POST_NS	100ull
#define MMIO_NS	280ull
#define POLL_NS	50ull

static struct sim_diag d;

/* Per-lane data rate after the line code, Gb/s, as N/D. */
static const struct {
	unsigned gen;
	uint64_t n, d;
	double x16_GBps;	/* published per-direction figure, GB/s */
} lane_rate[] = {
	{ 3, 1024, 130, 15.754 },
	{ 4, 2048, 130, 31.508 },
	{ 5, 4096, 130, 63.015 },
	{ 6, 59, 1, 118.0 },	/* FLIT: 236 of 256 bytes carry TLPs */
};

static uint64_t wire_of(uint64_t bytes, uint64_t mps, uint64_t ovh)
{
	return bytes + (bytes + mps - 1) / mps * ovh;
}

static uint64_t wire(uint64_t bytes)
{
	return wire_of(bytes, MPS, OVH);
}

/* wire bytes at `lanes` x N/D Gb/s, in ps rounded up. */
static sim_time_t ser_gen(unsigned gen, unsigned lanes, uint64_t wire_bytes)
{
	for (size_t i = 0; i < SIM_ARRAY_SIZE(lane_rate); i++) {
		if (lane_rate[i].gen != gen)
			continue;
		unsigned __int128 num = (unsigned __int128)wire_bytes * 8 * 1000 * lane_rate[i].d;
		unsigned __int128 den = (unsigned __int128)lanes * lane_rate[i].n;

		return (sim_time_t)((num + den - 1) / den);
	}
	CU_FAIL("no such generation");
	return 0;
}

/* Gen4 x16, the default link. */
static sim_time_t ser(uint64_t wire_bytes)
{
	return ser_gen(4, 16, wire_bytes);
}

/* bytes at gbps GB/s, ps rounded up. */
static sim_time_t at_gbps(uint64_t bytes, double gbps)
{
	return (sim_time_t)ceil((double)bytes * 1000.0 / gbps);
}

static sim_time_t maxt(sim_time_t a, sim_time_t b)
{
	return a > b ? a : b;
}

static bool close_rel(double got, double want, double rel)
{
	return fabs(got - want) <= rel * fabs(want);
}

/* A host with the default parameters (kept here: the host reads them). */
static void mk(struct host *h)
{
	static struct host_params p;

	host_params_default(&p);
	host_init(h, &p);
}

/* ---- link rates ----------------------------------------------------------- */

static void test_defaults(void)
{
	struct host_params p;

	host_params_default(&p);
	CU_ASSERT_EQUAL(p.pcie_gen, 4);
	CU_ASSERT_EQUAL(p.pcie_lanes, 16);
	CU_ASSERT_EQUAL(p.pcie_mps, MPS);
	CU_ASSERT_EQUAL(p.tlp_overhead, OVH);
	CU_ASSERT_EQUAL(p.dma_read_ns, RD_NS);
	CU_ASSERT_EQUAL(p.dma_write_ns, WR_NS);
	CU_ASSERT_EQUAL(p.doorbell_ns, DB_NS);
	CU_ASSERT_EQUAL(p.wqe_fetch_ns, WQE_NS);
	CU_ASSERT_EQUAL(p.cqe_ns, CQE_NS);
	CU_ASSERT_EQUAL(p.p2p_switch_ns, SW_NS);
	CU_ASSERT_EQUAL(p.p2p_rc_penalty_ns, RC_NS);
	CU_ASSERT_EQUAL(p.p2p_rc_gbps, RC_GBPS);
	CU_ASSERT_EQUAL(p.memcpy_launch_ns, CPY_NS);
	CU_ASSERT_EQUAL(p.post_cpu_ns, POST_NS);
	CU_ASSERT_EQUAL(p.mmio_cpu_ns, MMIO_NS);
	CU_ASSERT_EQUAL(p.poll_cpu_ns, POLL_NS);
	CU_ASSERT_EQUAL(p.mem_gbps, 150);
	CU_ASSERT_EQUAL(p.gpu_pcie_gbps, 0);
	CU_ASSERT_TRUE(p.gpudirect);
	CU_ASSERT_TRUE(p.gpu_same_switch);
	CU_ASSERT_EQUAL(host_params_check(&p, &d), 0);
	/* ConnectX-6 class on Gen4 x16: 31.5 GB/s raw, about 28.6 of payload. */
	CU_ASSERT(close_rel(host_pcie_raw_Bps(&p), 16e9 * 16 * 128 / 130 / 8, 1e-12));
	CU_ASSERT(close_rel(host_pcie_payload_Bps(&p), 31.5077e9 * 256 / 282, 1e-5));
	CU_ASSERT(host_pcie_payload_Bps(&p) > 26e9 && host_pcie_payload_Bps(&p) < 29e9);
}

static void test_link_rates(void)
{
	static const unsigned lanes[] = { 1, 2, 4, 8, 16 };
	static const unsigned mps[] = { 128, 256, 512, 4096 };
	static const unsigned ovh[] = { 0, 24, 26, 54 };
	struct host_params p;

	host_params_default(&p);
	for (size_t g = 0; g < SIM_ARRAY_SIZE(lane_rate); g++) {
		p.pcie_gen = (uint8_t)lane_rate[g].gen;
		for (size_t l = 0; l < SIM_ARRAY_SIZE(lanes); l++) {
			double raw = (double)lane_rate[g].n / lane_rate[g].d * 1e9 * lanes[l] / 8;

			p.pcie_lanes = (uint8_t)lanes[l];
			CU_ASSERT(close_rel(host_pcie_raw_Bps(&p), raw, 1e-12));
			if (lanes[l] == 16)
				CU_ASSERT(close_rel(raw, lane_rate[g].x16_GBps * 1e9, 1e-4));
			for (size_t m = 0; m < SIM_ARRAY_SIZE(mps); m++)
				for (size_t o = 0; o < SIM_ARRAY_SIZE(ovh); o++) {
					p.pcie_mps = mps[m];
					p.tlp_overhead = ovh[o];
					CU_ASSERT(close_rel(host_pcie_payload_Bps(&p),
							    raw * mps[m] / (mps[m] + ovh[o]), 1e-12));
					CU_ASSERT_EQUAL(host_pcie_wire_bytes(&p, 1000),
							wire_of(1000, mps[m], ovh[o]));
				}
			p.pcie_mps = MPS;
			p.tlp_overhead = OVH;
			/* up to 2^50 bytes: past the 64-bit path (below 2^40) */
			for (uint64_t w = 1; w < (1ULL << 50); w = w * 3 + 7)
				CU_ASSERT_EQUAL(host_pcie_ser_ps(&p, w), ser_gen(lane_rate[g].gen, lanes[l], w));
		}
	}
	/* Gen6 FLIT: 282 wire bytes at 16 x 59 Gb/s = 2389.8 -> 2390 ps. */
	p.pcie_gen = 6;
	p.pcie_lanes = 16;
	CU_ASSERT_EQUAL(host_pcie_ser_ps(&p, 282), 2390);
}

/*
 * HDR 4x carries 200 Gb/s of data (numbers.md): 25 GB/s, of which an MTU
 * 4096 packet (4122 wire bytes) delivers 4096. Gen4 x16 carries that
 * payload; Gen3 x16 cannot, and a stream of DMA reads at the HDR packet
 * rate then backs up at the PCIe rate. EDR (12.5 GB/s) still fits Gen3 x16.
 */
static void test_pcie_bottleneck_hdr(void)
{
	const double hdr = 25e9 * 4096 / 4122, edr = 12.5e9 * 4096 / 4122;
	const sim_time_t pkt_ps = 164880;	/* 4122 B at 25 GB/s */
	const int n = 2000;
	struct host_params p;
	struct host h;

	host_params_default(&p);
	CU_ASSERT(host_pcie_payload_Bps(&p) > hdr);
	p.pcie_gen = 3;
	CU_ASSERT(host_pcie_payload_Bps(&p) < hdr);
	CU_ASSERT(host_pcie_payload_Bps(&p) > edr);
	CU_ASSERT(close_rel(host_pcie_payload_Bps(&p), 15.754e9 * 256 / 282, 1e-4));

	for (unsigned gen = 3; gen <= 4; gen++) {
		sim_time_t occ = ser_gen(gen, 16, wire(4096)), last = 0;

		p.pcie_gen = (uint8_t)gen;
		host_init(&h, &p);
		for (int i = 0; i < n; i++)
			last = host_dma_read(&h, (sim_time_t)i * pkt_ps, HCA_MEM_HOST, 4096);
		if (gen == 4) {
			/* Keeps up: the last packet's payload is in after one DMA. */
			CU_ASSERT(occ < pkt_ps);
			CU_ASSERT_EQUAL(last, (sim_time_t)(n - 1) * pkt_ps + occ + RD_NS * NS);
		} else {
			/* PCIe is the bottleneck: payload arrives at the Gen3 rate. */
			double rate;

			CU_ASSERT(occ > pkt_ps);
			CU_ASSERT_EQUAL(last, (sim_time_t)n * occ + RD_NS * NS);
			rate = (double)n * 4096 / ((double)(last - RD_NS * NS) / 1e12);
			CU_ASSERT(close_rel(rate, host_pcie_payload_Bps(&p), 1e-4));
			CU_ASSERT(rate < 0.6 * hdr);
		}
	}
}

/* ---- closed forms of each call ------------------------------------------- */

static const uint32_t sizes[] = { 1, 63, 64, 255, 256, 257, 4096, 65536, 1048576, 4000000000u };

static void test_dma_read_write_closed_form(void)
{
	const sim_time_t t0 = 1234567;
	struct host h;

	for (size_t i = 0; i < SIM_ARRAY_SIZE(sizes); i++) {
		uint64_t b = sizes[i], w = wire(b);
		sim_time_t occ = maxt(ser(w), at_gbps(b, 150));

		mk(&h);
		CU_ASSERT_EQUAL(host_dma_read(&h, t0, HCA_MEM_HOST, sizes[i]), t0 + occ + RD_NS * NS);
		CU_ASSERT_EQUAL(h.rd_free, t0 + occ);
		CU_ASSERT_EQUAL(h.wr_free, 0);
		CU_ASSERT_EQUAL(h.st.pcie_rd_bytes, w);
		CU_ASSERT_EQUAL(h.st.pcie_wr_bytes, 0);
		CU_ASSERT_EQUAL(h.st.rc_bytes, w);
		CU_ASSERT_EQUAL(h.st.hostmem_bytes, b);
		CU_ASSERT_EQUAL(h.st.gpu_pcie_bytes, 0);
		CU_ASSERT_EQUAL(h.st.dma_reads, 1);

		mk(&h);
		CU_ASSERT_EQUAL(host_dma_write(&h, t0, HCA_MEM_HOST, sizes[i]), t0 + occ + WR_NS * NS);
		CU_ASSERT_EQUAL(h.wr_free, t0 + occ);
		CU_ASSERT_EQUAL(h.rd_free, 0);
		CU_ASSERT_EQUAL(h.st.pcie_wr_bytes, w);
		CU_ASSERT_EQUAL(h.st.hostmem_bytes, b);
		CU_ASSERT_EQUAL(h.st.dma_writes, 1);
	}
	/* Worked numbers: 64 B is one TLP, 90 wire bytes, 2857 ps at Gen4 x16;
	 * 1 MiB is 4096 TLPs, 1155072 wire bytes, 36.660 us exactly. */
	CU_ASSERT_EQUAL(wire(64), 90);
	CU_ASSERT_EQUAL(ser(90), 2857);
	CU_ASSERT_EQUAL(wire(MiB), 1155072);
	CU_ASSERT_EQUAL(ser(wire(MiB)), 36660000);
	/* 257 bytes need a second TLP: 26 bytes more than 256 + 1. */
	CU_ASSERT_EQUAL(wire(257) - wire(256), 1 + OVH);
}

static void test_post_closed_form(void)
{
	static const struct {
		uint32_t inl;
		uint64_t segs;	/* control, remote address, inline header + data (16-byte units) */
		uint64_t wqe;	/* in 64-byte blocks */
	} c[] = { { 0, 48, 64 }, { 1, 48, 64 }, { 28, 64, 64 }, { 29, 80, 128 }, { 64, 112, 128 },
		  { 100, 144, 192 }, { 192, 240, 256 }, { 220, 256, 256 }, { 221, 272, 320 },
		  { 448, 496, 512 } };
	const sim_time_t t0 = 10 * NS, big = ser(wire(MiB));
	struct host h;
	struct host_params nobf;

	for (size_t i = 0; i < SIM_ARRAY_SIZE(c); i++) {
		sim_time_t occ = ser(wire(c[i].wqe));
		/* BlueFlame: data inline, posted alone, segments within 256 bytes */
		bool bf = c[i].inl && c[i].segs <= 256;

		/* In a list (not alone): the doorbell, then the WQE is fetched. */
		mk(&h);
		CU_ASSERT_EQUAL(host_post(&h, t0, c[i].inl, HOST_POST_LIST_LAST),
				t0 + (POST_NS + DB_NS) * NS + occ + WQE_NS * NS);
		CU_ASSERT_EQUAL(h.st.posts, 1);
		CU_ASSERT_EQUAL(h.st.bf_posts, 0);
		CU_ASSERT_EQUAL(h.st.cpu_ps, (POST_NS + MMIO_NS) * NS);
		CU_ASSERT_EQUAL(h.st.pcie_rd_bytes, wire(8) + wire(c[i].wqe));
		/* Not the list's last: no doorbell of its own, no MMIO. */
		mk(&h);
		CU_ASSERT_EQUAL(host_post(&h, t0, c[i].inl, HOST_POST_LIST),
				t0 + POST_NS * NS + occ + WQE_NS * NS);
		CU_ASSERT_EQUAL(h.st.cpu_ps, POST_NS * NS);
		CU_ASSERT_EQUAL(h.st.pcie_rd_bytes, wire(c[i].wqe));
		CU_ASSERT_EQUAL(h.st.hostmem_bytes, c[i].wqe);
		/* Alone: BlueFlame when it qualifies, the WQE crossing once as
		 * the doorbell; the fetch otherwise. */
		mk(&h);
		CU_ASSERT_EQUAL(host_post(&h, t0, c[i].inl, HOST_POST_ALONE),
				bf ? t0 + POST_NS * NS + occ + DB_NS * NS :
				     t0 + (POST_NS + DB_NS) * NS + occ + WQE_NS * NS);
		CU_ASSERT_EQUAL(h.st.bf_posts, bf);
		CU_ASSERT_EQUAL(h.st.pcie_rd_bytes, (bf ? 0 : wire(8)) + wire(c[i].wqe));
	}
	/* Default post of a 0-inline WR: 100 + 200 + 2.857 + 250 ns; of a
	 * 2-byte inline one by BlueFlame: 100 + 2.857 (a 64-byte WQE) + 200. */
	mk(&h);
	CU_ASSERT_EQUAL(host_post(&h, 0, 0, HOST_POST_ALONE), 552857);
	mk(&h);
	CU_ASSERT_EQUAL(host_post(&h, 0, 2, HOST_POST_ALONE), 302857);
	/* bf_bytes = 0: never BlueFlame. */
	host_params_default(&nobf);
	nobf.bf_bytes = 0;
	host_init(&h, &nobf);
	CU_ASSERT_EQUAL(host_post(&h, 0, 2, HOST_POST_ALONE), (POST_NS + DB_NS) * NS + ser(wire(64)) +
						 WQE_NS * NS);

	/* The WQE fetch shares the rd pipe: it waits behind a 1 MiB payload read. */
	mk(&h);
	host_dma_read(&h, 0, HCA_MEM_HOST, MiB);
	CU_ASSERT_EQUAL(host_post(&h, 0, 0, HOST_POST_ALONE), big + ser(90) + WQE_NS * NS);

	/* One posting thread: ten posts asked for at once leave POST_NS +
	 * MMIO_NS apart (the CPU, not PCIe, sets their rate); in a list,
	 * only the last one's doorbell costs the MMIO. */
	mk(&h);
	for (int i = 0; i < 10; i++)
		CU_ASSERT_EQUAL(host_post(&h, t0, 0, HOST_POST_ALONE),
				t0 + (sim_time_t)i * (POST_NS + MMIO_NS) * NS + POST_NS * NS +
				DB_NS * NS + ser(90) + WQE_NS * NS);
	mk(&h);
	for (int i = 0; i < 10; i++)
		host_post(&h, t0, 0, i < 9 ? HOST_POST_LIST : HOST_POST_LIST_LAST);
	CU_ASSERT_EQUAL(h.cpu_free, t0 + (10 * POST_NS + MMIO_NS) * NS);
	CU_ASSERT_EQUAL(h.st.cpu_ps, (10 * POST_NS + MMIO_NS) * NS);
}

static void test_cqe_closed_form(void)
{
	struct host h;

	mk(&h);
	CU_ASSERT_EQUAL(host_cqe(&h, 7 * NS, 0), 7 * NS + ser(90) + CQE_NS * NS + POLL_NS * NS);
	CU_ASSERT_EQUAL(h.st.cqes, 1);
	CU_ASSERT_EQUAL(h.st.cpu_ps, POLL_NS * NS);
	CU_ASSERT_EQUAL(h.st.pcie_wr_bytes, 90);
	CU_ASSERT_EQUAL(h.st.hostmem_bytes, 64);
	/* The CQE queues behind payload the HCA is writing (same direction). */
	host_dma_write(&h, 0, HCA_MEM_HOST, MiB);
	CU_ASSERT_EQUAL(host_cqe(&h, 0, 0), 7 * NS + ser(90) + ser(wire(MiB)) + ser(90) +
			(CQE_NS + POLL_NS) * NS);
	/* Never visible before the data it completes (posted writes stay in
	 * order): a CQE issued with the data's last byte, whose write is
	 * slower, is seen right behind it. */
	mk(&h);
	CU_ASSERT_EQUAL(host_cqe(&h, 0, 900 * NS), 900 * NS + POLL_NS * NS);
}

/* ---- queueing ------------------------------------------------------------- */

static void test_back_to_back(void)
{
	const int n = 10000;
	const sim_time_t occ = ser(wire(4096));
	struct host h;
	sim_time_t done = 0;
	double rate;

	mk(&h);
	for (int k = 0; k < n; k++) {
		done = host_dma_read(&h, 0, HCA_MEM_HOST, 4096);
		CU_ASSERT_EQUAL(done, (sim_time_t)(k + 1) * occ + RD_NS * NS);
	}
	/* Throughput = the link's payload bandwidth (4096 = 16 full TLPs). */
	rate = (double)n * 4096 / ((double)(done - RD_NS * NS) / 1e12);
	CU_ASSERT(close_rel(rate, host_pcie_payload_Bps(h.p), 1e-5));

	/* Spaced wider than occ: no queueing, each takes occ + latency. */
	mk(&h);
	for (int k = 0; k < 100; k++) {
		sim_time_t t = (sim_time_t)k * SIM_US;

		CU_ASSERT_EQUAL(host_dma_write(&h, t, HCA_MEM_HOST, 4096), t + occ + WR_NS * NS);
	}
}

/* The two directions of the link are independent (full duplex). */
static void test_full_duplex(void)
{
	const sim_time_t occ = ser(wire(MiB));
	struct host h;

	mk(&h);
	CU_ASSERT_EQUAL(host_dma_read(&h, 0, HCA_MEM_HOST, MiB), occ + RD_NS * NS);
	CU_ASSERT_EQUAL(host_dma_write(&h, 0, HCA_MEM_HOST, MiB), occ + WR_NS * NS);
	CU_ASSERT_EQUAL(host_dma_read(&h, 0, HCA_MEM_HOST, MiB), 2 * occ + RD_NS * NS);
}

/* Host memory bandwidth caps host buffers, not GPU buffers reached by P2P. */
static void test_mem_cap(void)
{
	struct host_params p;
	struct host h;

	host_params_default(&p);
	p.mem_gbps = 10;
	host_init(&h, &p);
	/* 1 MiB at 10 GB/s = 104.8576 us, longer than 36.66 us of PCIe. */
	CU_ASSERT_EQUAL(host_dma_read(&h, 0, HCA_MEM_HOST, MiB), 104857600 + RD_NS * NS);
	CU_ASSERT_EQUAL(host_dma_write(&h, 0, HCA_MEM_HOST, MiB), 104857600 + WR_NS * NS);
	host_init(&h, &p);
	CU_ASSERT_EQUAL(host_dma_read(&h, 0, HCA_MEM_GPU, MiB),
			ser(wire(MiB)) + (RD_NS + SW_NS) * NS);
	/* Staging copies touch host memory: capped too. */
	host_init(&h, &p);
	CU_ASSERT_EQUAL(host_stage_gpu_to_host(&h, 0, MiB), CPY_NS * NS + 104857600 + WR_NS * NS);
}

/* ---- GPUDirect RDMA --------------------------------------------------------- */

struct xfer {
	struct host a, b;	/* sender's host, receiver's host */
	sim_time_t done;
};

/*
 * Move S bytes from a GPU buffer on host a to a GPU buffer on host b the
 * way the transport will: stage if needed, DMA read, `net` ps of fabric,
 * DMA write, stage if needed.
 */
static void gpu_to_gpu(struct xfer *x, bool gdr, uint32_t S, sim_time_t t0, sim_time_t net)
{
	struct host_params p;
	sim_time_t t = t0;

	host_params_default(&p);
	p.gpudirect = gdr;
	host_init(&x->a, &p);
	host_init(&x->b, &p);
	CU_ASSERT_EQUAL(host_needs_staging(&p, HCA_MEM_GPU), !gdr);
	if (host_needs_staging(&p, HCA_MEM_GPU))
		t = host_stage_gpu_to_host(&x->a, t, S);
	t = host_dma_read(&x->a, t, HCA_MEM_GPU, S);
	t = host_dma_write(&x->b, t + net, HCA_MEM_GPU, S);
	if (host_needs_staging(&p, HCA_MEM_GPU))
		t = host_stage_host_to_gpu(&x->b, t, S);
	x->done = t;
}

static void test_gpudirect_on_off(void)
{
	static const uint32_t S[] = { 8, 4096, MiB, 8 * MiB };
	const sim_time_t t0 = 3 * NS, net = 1500 * NS;

	for (size_t i = 0; i < SIM_ARRAY_SIZE(S); i++) {
		uint64_t w = wire(S[i]);
		sim_time_t occ = ser(w);
		struct xfer on, off;
		sim_time_t want_on, want_off;

		gpu_to_gpu(&on, true, S[i], t0, net);
		gpu_to_gpu(&off, false, S[i], t0, net);

		/* GPUDirect under one switch: read P2P, write P2P. */
		want_on = t0 + occ + (RD_NS + SW_NS) * NS + net + occ + (WR_NS + SW_NS) * NS;
		CU_ASSERT_EQUAL(on.done, want_on);
		/* Staged: copy out, read, fabric, write, copy in; each copy
		 * launched by the CPU and crossing the GPU's link. */
		want_off = t0 + CPY_NS * NS + occ + WR_NS * NS	/* GPU -> host memory */
			   + occ + RD_NS * NS			/* HCA reads host memory */
			   + net
			   + occ + WR_NS * NS			/* HCA writes host memory */
			   + CPY_NS * NS + occ + RD_NS * NS;	/* host memory -> GPU */
		CU_ASSERT_EQUAL(off.done, want_off);
		/* The difference the formulas predict: two copies' worth of link
		 * time and launch, less the P2P extras GPUDirect pays. */
		CU_ASSERT_EQUAL(off.done - on.done, 2 * occ + (2 * CPY_NS + RD_NS + WR_NS - 2 * SW_NS) * NS);

		/* Bytes: the HCA's link and the GPU's link carry the message
		 * once either way; only staging goes through the root complex
		 * and host memory: in and out again on each side. */
		CU_ASSERT_EQUAL(on.a.st.pcie_rd_bytes, w);
		CU_ASSERT_EQUAL(off.a.st.pcie_rd_bytes, w);
		CU_ASSERT_EQUAL(on.b.st.pcie_wr_bytes, w);
		CU_ASSERT_EQUAL(off.b.st.pcie_wr_bytes, w);
		CU_ASSERT_EQUAL(on.a.st.gpu_pcie_bytes, w);
		CU_ASSERT_EQUAL(off.a.st.gpu_pcie_bytes, w);
		CU_ASSERT_EQUAL(on.a.st.rc_bytes + on.b.st.rc_bytes, 0);
		CU_ASSERT_EQUAL(off.a.st.rc_bytes, 2 * w);
		CU_ASSERT_EQUAL(off.b.st.rc_bytes, 2 * w);
		CU_ASSERT_EQUAL(on.a.st.hostmem_bytes + on.b.st.hostmem_bytes, 0);
		CU_ASSERT_EQUAL(off.a.st.hostmem_bytes, 2ull * S[i]);
		CU_ASSERT_EQUAL(off.b.st.hostmem_bytes, 2ull * S[i]);
		CU_ASSERT_EQUAL(on.a.st.staging_copies + on.b.st.staging_copies, 0);
		CU_ASSERT_EQUAL(off.a.st.staging_copies, 1);
		CU_ASSERT_EQUAL(off.b.st.staging_copies, 1);
		/* CPU: zero per message with GPUDirect (the transport adds the
		 * post and the poll); a copy launch per side without it. */
		CU_ASSERT_EQUAL(on.a.st.cpu_ps + on.b.st.cpu_ps, 0);
		CU_ASSERT_EQUAL(off.a.st.cpu_ps, CPY_NS * NS);
		CU_ASSERT_EQUAL(off.b.st.cpu_ps, CPY_NS * NS);
		/* The two extra crossings per side, counted in PCIe link traversals
		 * (GPU link, root complex, HCA link): 2 with GPUDirect, 4 staged. */
		CU_ASSERT_EQUAL((on.a.st.pcie_rd_bytes + on.a.st.gpu_pcie_bytes + on.a.st.rc_bytes) / w, 2);
		CU_ASSERT_EQUAL((off.a.st.pcie_rd_bytes + off.a.st.gpu_pcie_bytes + off.a.st.rc_bytes) / w, 4);
	}
}

/*
 * Staging under the HCA's switch shares its uplink: a device-to-host copy
 * and the HCA's DMA writes (both towards the root complex) queue behind
 * each other. A GPU on its own root port does not interfere.
 */
static void test_staging_shares_uplink(void)
{
	const sim_time_t occ = ser(wire(MiB));
	struct host_params p;
	struct host h;

	host_params_default(&p);
	p.gpudirect = false;
	host_init(&h, &p);
	CU_ASSERT_EQUAL(host_stage_gpu_to_host(&h, 0, MiB), CPY_NS * NS + occ + WR_NS * NS);
	CU_ASSERT_EQUAL(host_dma_write(&h, 0, HCA_MEM_HOST, MiB), CPY_NS * NS + 2 * occ + WR_NS * NS);
	CU_ASSERT_EQUAL(host_stage_host_to_gpu(&h, 0, MiB), CPY_NS * NS + occ + RD_NS * NS);
	CU_ASSERT_EQUAL(host_dma_read(&h, 0, HCA_MEM_HOST, MiB), CPY_NS * NS + 2 * occ + RD_NS * NS);

	p.gpu_same_switch = false;
	host_init(&h, &p);
	CU_ASSERT_EQUAL(host_stage_gpu_to_host(&h, 0, MiB), CPY_NS * NS + occ + WR_NS * NS);
	CU_ASSERT_EQUAL(host_dma_write(&h, 0, HCA_MEM_HOST, MiB), occ + WR_NS * NS);
	/* ... but the GPU's own link still queues its copies. */
	CU_ASSERT_EQUAL(host_stage_gpu_to_host(&h, 0, MiB), CPY_NS * NS + 2 * occ + WR_NS * NS);
}

/* Peer to peer under one PCIe switch vs through the root complex. */
static void test_p2p_switch_vs_rc(void)
{
	const sim_time_t occ = ser(wire(MiB)), rc_occ = at_gbps(MiB, RC_GBPS);
	struct host_params ps, pr;
	struct host sw, rc;
	sim_time_t t = 0;
	double rate;

	host_params_default(&ps);
	pr = ps;
	pr.gpu_same_switch = false;
	host_init(&sw, &ps);
	host_init(&rc, &pr);
	CU_ASSERT_EQUAL(rc_occ, 131072000);	/* 1 MiB at 8 GB/s */
	CU_ASSERT(rc_occ > occ);

	CU_ASSERT_EQUAL(host_dma_read(&sw, 0, HCA_MEM_GPU, MiB), occ + (RD_NS + SW_NS) * NS);
	CU_ASSERT_EQUAL(host_dma_read(&rc, 0, HCA_MEM_GPU, MiB), rc_occ + (RD_NS + RC_NS) * NS);
	CU_ASSERT_EQUAL(host_dma_write(&sw, 0, HCA_MEM_GPU, MiB), occ + (WR_NS + SW_NS) * NS);
	CU_ASSERT_EQUAL(host_dma_write(&rc, 0, HCA_MEM_GPU, MiB), rc_occ + (WR_NS + RC_NS) * NS);
	/* Under the switch nothing reaches the root complex or host memory. */
	CU_ASSERT_EQUAL(sw.st.rc_bytes, 0);
	CU_ASSERT_EQUAL(rc.st.rc_bytes, 2 * wire(MiB));
	CU_ASSERT_EQUAL(sw.st.hostmem_bytes + rc.st.hostmem_bytes, 0);
	CU_ASSERT_EQUAL(sw.st.gpu_pcie_bytes, 2 * wire(MiB));

	/* Small transfers: the difference is the latency penalty plus 64 B at 8 GB/s. */
	host_init(&sw, &ps);
	host_init(&rc, &pr);
	CU_ASSERT_EQUAL(host_dma_read(&rc, 0, HCA_MEM_GPU, 64) - host_dma_read(&sw, 0, HCA_MEM_GPU, 64),
			(RC_NS - SW_NS) * NS + at_gbps(64, RC_GBPS) - ser(90));

	/* Back to back through the root complex: throughput = p2p_rc_gbps. */
	host_init(&rc, &pr);
	for (int k = 0; k < 1000; k++)
		t = host_dma_read(&rc, 0, HCA_MEM_GPU, 65536);
	rate = 1000.0 * 65536 / ((double)(t - (RD_NS + RC_NS) * NS) / 1e12);
	CU_ASSERT(close_rel(rate, RC_GBPS * 1e9, 1e-6));
}

/* A GPU on a slower link of its own caps staging and P2P. */
static void test_gpu_link_rate(void)
{
	struct host_params p;
	struct host h;

	host_params_default(&p);
	p.gpudirect = false;
	host_init(&h, &p);
	/* 0: the GPU's link is the HCA's. */
	CU_ASSERT_EQUAL(host_stage_host_to_gpu(&h, 0, MiB), CPY_NS * NS + ser(wire(MiB)) + RD_NS * NS);
	CU_ASSERT_EQUAL(h.gpu_in_free, CPY_NS * NS + ser(wire(MiB)));
	p.gpu_pcie_gbps = 12;
	host_init(&h, &p);
	CU_ASSERT_EQUAL(host_stage_host_to_gpu(&h, 0, MiB), CPY_NS * NS + 87381334 + RD_NS * NS);
	p.gpudirect = true;
	host_init(&h, &p);
	CU_ASSERT_EQUAL(host_dma_read(&h, 0, HCA_MEM_GPU, MiB), 87381334 + (RD_NS + SW_NS) * NS);
	CU_ASSERT_EQUAL(h.gpu_free, 87381334);
	CU_ASSERT_EQUAL(h.rd_free, 87381334);
	/* A host buffer does not touch the GPU's link. */
	CU_ASSERT_EQUAL(host_dma_read(&h, 0, HCA_MEM_HOST, 4096),
			87381334 + ser(wire(4096)) + RD_NS * NS);
	CU_ASSERT_EQUAL(h.gpu_free, 87381334);
}

/* Without GPUDirect the HCA's DMAs touch the staged copy in host memory. */
static void test_staging_contract(void)
{
	struct host_params p;
	struct host g, m;

	host_params_default(&p);
	CU_ASSERT_FALSE(host_needs_staging(&p, HCA_MEM_HOST));
	CU_ASSERT_FALSE(host_needs_staging(&p, HCA_MEM_GPU));
	p.gpudirect = false;
	CU_ASSERT_FALSE(host_needs_staging(&p, HCA_MEM_HOST));
	CU_ASSERT_TRUE(host_needs_staging(&p, HCA_MEM_GPU));
	host_init(&g, &p);
	host_init(&m, &p);
	for (size_t i = 0; i < SIM_ARRAY_SIZE(sizes) - 1; i++) {
		CU_ASSERT_EQUAL(host_dma_read(&g, 5, HCA_MEM_GPU, sizes[i]),
				host_dma_read(&m, 5, HCA_MEM_HOST, sizes[i]));
		CU_ASSERT_EQUAL(host_dma_write(&g, 5, HCA_MEM_GPU, sizes[i]),
				host_dma_write(&m, 5, HCA_MEM_HOST, sizes[i]));
	}
	CU_ASSERT_EQUAL(memcmp(&g.st, &m.st, sizeof(g.st)), 0);
	CU_ASSERT_EQUAL(g.st.gpu_pcie_bytes, 0);
}

/* Zero bytes move nothing and cost nothing. */
static void test_zero_bytes(void)
{
	struct host h, before;

	mk(&h);
	host_dma_read(&h, 0, HCA_MEM_HOST, 4096);
	memcpy(&before, &h, sizeof(h));
	CU_ASSERT_EQUAL(host_dma_read(&h, 42, HCA_MEM_HOST, 0), 42);
	CU_ASSERT_EQUAL(host_dma_write(&h, 42, HCA_MEM_GPU, 0), 42);
	CU_ASSERT_EQUAL(host_stage_gpu_to_host(&h, 42, 0), 42);
	CU_ASSERT_EQUAL(host_stage_host_to_gpu(&h, 42, 0), 42);
	CU_ASSERT_EQUAL(memcmp(&h, &before, sizeof(h)), 0);
}

/* Every counter adds up over a mixed sequence. */
static void test_stats_accounting(void)
{
	struct host_params p;
	struct host h;
	uint64_t rd = 0, wr = 0, gpu = 0, rc = 0, mem = 0;

	host_params_default(&p);
	p.gpudirect = false;
	host_init(&h, &p);
	for (int i = 0; i < 10; i++) {
		uint32_t s = 1000u * (uint32_t)(i + 1);
		sim_time_t t = (sim_time_t)i * SIM_US;

		/* send side: post, stage, read, completion */
		/* i * 16 bytes inline: 36 bytes of segments before them (48
		 * without), in 16-byte units, then in 64-byte blocks */
		uint64_t segs = i ? (36 + (uint64_t)i * 16 + 15) / 16 * 16 : 48;
		uint64_t wqe = (segs + 63) / 64 * 64;

		t = host_post(&h, t, (uint32_t)i * 16, HOST_POST_LIST_LAST);
		rd += wire(8) + wire(wqe);
		rc += wire(8) + wire(wqe);
		mem += wqe;
		t = host_stage_gpu_to_host(&h, t, s);
		gpu += wire(s);
		rc += wire(s);
		mem += s;
		t = host_dma_read(&h, t, HCA_MEM_GPU, s);
		rd += wire(s);
		rc += wire(s);
		mem += s;
		t = host_cqe(&h, t, t);
		wr += wire(64);
		rc += wire(64);
		mem += 64;
		/* receive side: write, completion, stage in */
		t = host_dma_write(&h, t, HCA_MEM_GPU, s);
		wr += wire(s);
		rc += wire(s);
		mem += s;
		t = host_cqe(&h, t, t);
		wr += wire(64);
		rc += wire(64);
		mem += 64;
		host_stage_host_to_gpu(&h, t, s);
		gpu += wire(s);
		rc += wire(s);
		mem += s;
	}
	CU_ASSERT_EQUAL(h.st.pcie_rd_bytes, rd);
	CU_ASSERT_EQUAL(h.st.pcie_wr_bytes, wr);
	CU_ASSERT_EQUAL(h.st.gpu_pcie_bytes, gpu);
	CU_ASSERT_EQUAL(h.st.rc_bytes, rc);
	CU_ASSERT_EQUAL(h.st.hostmem_bytes, mem);
	CU_ASSERT_EQUAL(h.st.posts, 10);
	CU_ASSERT_EQUAL(h.st.cqes, 20);
	CU_ASSERT_EQUAL(h.st.staging_copies, 20);
	CU_ASSERT_EQUAL(h.st.dma_reads, 10);
	CU_ASSERT_EQUAL(h.st.dma_writes, 10);
	CU_ASSERT_EQUAL(h.st.cpu_ps, (10 * (POST_NS + MMIO_NS) + 20 * POLL_NS + 20 * CPY_NS) * NS);
}

/* ---- parameters ------------------------------------------------------------ */

#define SET_OK(p, k, v) do {						\
	int rc_ = host_params_set((p), (k), (v), &d);			\
	if (rc_)							\
		fprintf(stderr, "\n  set %s=%s: %s\n", (k), (v), d.msg);\
	CU_ASSERT_EQUAL(rc_, 0);					\
} while (0)

static void test_params_every_key(void)
{
	struct host_params p, q;
	char line[256];
	int n = 0;
	FILE *f;

	host_params_default(&p);
	SET_OK(&p, "pcie_gen", "5");
	SET_OK(&p, "host.pcie_lanes", "8");
	SET_OK(&p, "pcie_mps", "512");
	SET_OK(&p, "tlp_overhead", "24");
	SET_OK(&p, "dma_read_ns", "600");
	SET_OK(&p, "dma_write_ns", "0.3us");
	SET_OK(&p, "doorbell_ns", "150");
	SET_OK(&p, "wqe_fetch_ns", "0");
	SET_OK(&p, "cqe_ns", "260ns");
	SET_OK(&p, "mem_gbps", "204.8");
	SET_OK(&p, "gpu_pcie_gbps", "12.5");
	SET_OK(&p, "gpudirect", "off");
	SET_OK(&p, "gpu_same_switch", "no");
	SET_OK(&p, "p2p_switch_ns", "120");
	SET_OK(&p, "p2p_rc_penalty_ns", "1us");
	SET_OK(&p, "p2p_rc_gbps", "3.5");
	SET_OK(&p, "memcpy_launch_ns", "8us");
	SET_OK(&p, "post_cpu_ns", "70");
	SET_OK(&p, "bf_bytes", "128");
	SET_OK(&p, "mmio_cpu_ns", "300");
	SET_OK(&p, "POLL_CPU_NS", "40");
	CU_ASSERT_EQUAL(p.pcie_gen, 5);
	CU_ASSERT_EQUAL(p.pcie_lanes, 8);
	CU_ASSERT_EQUAL(p.pcie_mps, 512);
	CU_ASSERT_EQUAL(p.tlp_overhead, 24);
	CU_ASSERT_EQUAL(p.dma_read_ns, 600);
	CU_ASSERT_EQUAL(p.dma_write_ns, 300);
	CU_ASSERT_EQUAL(p.doorbell_ns, 150);
	CU_ASSERT_EQUAL(p.wqe_fetch_ns, 0);
	CU_ASSERT_EQUAL(p.cqe_ns, 260);
	CU_ASSERT_EQUAL(p.mem_gbps, 204.8);
	CU_ASSERT_EQUAL(p.gpu_pcie_gbps, 12.5);
	CU_ASSERT_FALSE(p.gpudirect);
	CU_ASSERT_FALSE(p.gpu_same_switch);
	CU_ASSERT_EQUAL(p.p2p_switch_ns, 120);
	CU_ASSERT_EQUAL(p.p2p_rc_penalty_ns, 1000);
	CU_ASSERT_EQUAL(p.p2p_rc_gbps, 3.5);
	CU_ASSERT_EQUAL(p.memcpy_launch_ns, 8000);
	CU_ASSERT_EQUAL(p.post_cpu_ns, 70);
	CU_ASSERT_EQUAL(p.bf_bytes, 128);
	CU_ASSERT_EQUAL(p.mmio_cpu_ns, 300);
	CU_ASSERT_EQUAL(p.poll_cpu_ns, 40);
	CU_ASSERT_EQUAL(host_params_check(&p, &d), 0);

	/* Spellings users bring from lspci and perftest. */
	SET_OK(&p, "pcie_gen", "Gen3");
	CU_ASSERT_EQUAL(p.pcie_gen, 3);
	SET_OK(&p, "pcie_lanes", "x16");
	CU_ASSERT_EQUAL(p.pcie_lanes, 16);
	SET_OK(&p, "pcie_mps", "4KiB");
	CU_ASSERT_EQUAL(p.pcie_mps, 4096);
	SET_OK(&p, "gpudirect", "on");
	CU_ASSERT_TRUE(p.gpudirect);
	SET_OK(&p, "gpu_pcie_gbps", "0");
	CU_ASSERT_EQUAL(p.gpu_pcie_gbps, 0);

	/* print -> set round trip: every key once, values that parse back. */
	f = tmpfile();
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	host_params_print(&p, f);
	rewind(f);
	host_params_default(&q);
	while (fgets(line, sizeof(line), f)) {
		char key[64], val[64];

		CU_ASSERT_EQUAL_FATAL(sscanf(line, "%63s = %63s", key, val), 2);
		CU_ASSERT(!strncmp(key, "host.", 5));
		CU_ASSERT_PTR_NOT_NULL(strstr(line, "  # "));
		SET_OK(&q, key, val);
		n++;
	}
	fclose(f);
	CU_ASSERT_EQUAL(n, 21);
	CU_ASSERT_EQUAL(memcmp(&p, &q, sizeof(p)), 0);
}

/* Refused, the message names the key (and holds each needle), and p is unchanged. */
static void set_bad(const char *key, const char *val, const char *n1, const char *n2)
{
	struct host_params p, before;

	host_params_default(&p);
	memcpy(&before, &p, sizeof(p));
	sim_diag_clear(&d);
	CU_ASSERT_EQUAL(host_params_set(&p, key, val, &d), -1);
	if ((n1 && !strstr(d.msg, n1)) || (n2 && !strstr(d.msg, n2)))
		fprintf(stderr, "\n  set %s=%s: message '%s' lacks '%s' / '%s'\n", key, val, d.msg,
			n1 ? n1 : "", n2 ? n2 : "");
	if (n1)
		CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, n1));
	if (n2)
		CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, n2));
	CU_ASSERT_EQUAL(memcmp(&p, &before, sizeof(p)), 0);
}

static void test_params_bad(void)
{
	/* unknown keys */
	set_bad("pcie_gne", "4", "unknown parameter 'host.pcie_gne'", "did you mean 'host.pcie_gen'?");
	set_bad("host.mem_gpbs", "4", "unknown", "did you mean 'host.mem_gbps'?");
	set_bad("lanes", "16", "unknown", "did you mean 'host.pcie_lanes'?");
	set_bad("dma_read", "500", "unknown", "did you mean 'host.dma_read_ns'?");
	set_bad("gpu_direct", "on", "unknown", "did you mean 'host.gpudirect'?");
	set_bad("zzz", "1", "unknown parameter 'host.zzz'", NULL);
	CU_ASSERT_PTR_NULL(strstr(d.msg, "did you mean"));
	set_bad("", "1", "empty parameter", NULL);
	set_bad(NULL, "1", "empty parameter", NULL);
	/* bad values name the key and say what is expected */
	set_bad("pcie_gen", "7", "host.pcie_gen:", "3, 4, 5 or 6");
	set_bad("pcie_gen", "2", "host.pcie_gen:", "got '2'");
	set_bad("pcie_gen", "", "host.pcie_gen:", NULL);
	set_bad("pcie_gen", "gen", "host.pcie_gen:", NULL);
	set_bad("pcie_lanes", "3", "host.pcie_lanes:", "1, 2, 4, 8 or 16");
	set_bad("pcie_lanes", "32", "host.pcie_lanes:", NULL);
	set_bad("pcie_lanes", "0", "host.pcie_lanes:", NULL);
	set_bad("pcie_mps", "300", "host.pcie_mps:", "128, 256");
	set_bad("pcie_mps", "64", "host.pcie_mps:", NULL);
	set_bad("pcie_mps", "8KiB", "host.pcie_mps:", NULL);
	set_bad("pcie_mps", "12XB", "host.pcie_mps:", "12XB");
	set_bad("tlp_overhead", "2000", "host.tlp_overhead:", "out of range (0..1024)");
	set_bad("tlp_overhead", "-1", "host.tlp_overhead:", "negative");
	set_bad("dma_read_ns", "5xs", "host.dma_read_ns:", "5xs");
	set_bad("dma_read_ns", "0.5ns", "host.dma_read_ns:", "whole number of nanoseconds");
	set_bad("dma_write_ns", "5000000000", "host.dma_write_ns:", "out of range");
	set_bad("cqe_ns", "", "host.cqe_ns:", "empty");
	set_bad("mem_gbps", "0", "host.mem_gbps:", "out of range");
	set_bad("mem_gbps", "-3", "host.mem_gbps:", "out of range");
	set_bad("mem_gbps", "nan", "host.mem_gbps:", NULL);
	set_bad("mem_gbps", "abc", "host.mem_gbps:", "expected a number");
	set_bad("mem_gbps", "1e9", "host.mem_gbps:", "out of range");
	set_bad("gpu_pcie_gbps", "-1", "host.gpu_pcie_gbps:", "out of range");
	set_bad("p2p_rc_gbps", "0", "host.p2p_rc_gbps:", "out of range");
	set_bad("gpudirect", "maybe", "host.gpudirect:", "on/off");
	set_bad("gpu_same_switch", "2", "host.gpu_same_switch:", NULL);
	set_bad("memcpy_launch_ns", "1h", "host.memcpy_launch_ns:", NULL);
	set_bad("post_cpu_ns", NULL, "host.post_cpu_ns:", "empty");
}

static void check_bad(const struct host_params *p, const char *needle)
{
	sim_diag_clear(&d);
	CU_ASSERT_EQUAL(host_params_check(p, &d), -1);
	if (!strstr(d.msg, needle))
		fprintf(stderr, "\n  check: message '%s' lacks '%s'\n", d.msg, needle);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, needle));
}

static void test_params_check(void)
{
	struct host_params p;

	host_params_default(&p);
	CU_ASSERT_EQUAL(host_params_check(&p, &d), 0);
	CU_ASSERT_EQUAL(host_params_check(&p, NULL), 0);
#define BAD(field, value, needle) do {	\
	host_params_default(&p);	\
	p.field = (value);		\
	check_bad(&p, needle);		\
} while (0)
	BAD(pcie_gen, 2, "host.pcie_gen");
	BAD(pcie_gen, 7, "host.pcie_gen");
	BAD(pcie_lanes, 0, "host.pcie_lanes");
	BAD(pcie_lanes, 12, "host.pcie_lanes");
	BAD(pcie_mps, 100, "host.pcie_mps");
	BAD(pcie_mps, 384, "host.pcie_mps");
	BAD(pcie_mps, 8192, "host.pcie_mps");
	BAD(tlp_overhead, 5000, "host.tlp_overhead");
	BAD(mem_gbps, 0, "host.mem_gbps");
	BAD(mem_gbps, NAN, "host.mem_gbps");
	BAD(gpu_pcie_gbps, -1, "host.gpu_pcie_gbps");
	BAD(gpu_pcie_gbps, INFINITY, "host.gpu_pcie_gbps");
	BAD(p2p_rc_gbps, 0, "host.p2p_rc_gbps");
#undef BAD
	/* A refused struct still reports -1 without a diagnostic to fill. */
	p.p2p_rc_gbps = 0;
	CU_ASSERT_EQUAL(host_params_check(&p, NULL), -1);
}

static const struct test_case tests[] = {
	{ "defaults", test_defaults },
	{ "link rates, every gen and width", test_link_rates },
	{ "PCIe bottleneck: HDR on Gen3 vs Gen4 x16", test_pcie_bottleneck_hdr },
	{ "DMA read/write closed forms", test_dma_read_write_closed_form },
	{ "post closed form (doorbell, WQE, inline)", test_post_closed_form },
	{ "CQE closed form", test_cqe_closed_form },
	{ "back-to-back DMAs queue: throughput = bandwidth", test_back_to_back },
	{ "full duplex", test_full_duplex },
	{ "host memory cap", test_mem_cap },
	{ "GPUDirect on vs off: copies, crossings, bytes, time", test_gpudirect_on_off },
	{ "staging shares the switch uplink", test_staging_shares_uplink },
	{ "P2P under a switch vs through the root complex", test_p2p_switch_vs_rc },
	{ "GPU link rate", test_gpu_link_rate },
	{ "staging contract", test_staging_contract },
	{ "zero bytes", test_zero_bytes },
	{ "stats accounting", test_stats_accounting },
	{ "params: every key, print round trip", test_params_every_key },
	{ "params: bad keys and values", test_params_bad },
	{ "params: check", test_params_check },
	{ NULL, NULL },
};

TEST_MAIN("host", tests)
