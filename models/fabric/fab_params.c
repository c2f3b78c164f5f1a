/* SPDX-License-Identifier: MIT */
/*
 * fab_params.c - fabric parameters: named presets, "key=value" overrides,
 * cross-field checks, and the listing used by --help-params and reports.
 *
 * A preset describes one InfiniBand generation as a cluster of that era
 * would typically run it: 4x links, 3 m copper cables, the MTU its HCAs
 * used, 4 data VLs, and per-VL receive buffers sized by the rule below. Every
 * key can then be overridden, in order: "preset=" resets the fabric keys
 * (link.*, ib.*, vlarb.*, switch.*, hca.*) but keeps the run keys (sim.*),
 * so it belongs first.
 *
 * Per-VL receive buffer. A VL keeps its link busy only if the sender never
 * waits for credits: the buffer must cover the data sent during one credit
 * round trip (the blocks of a packet are returned only once the packet has
 * left the receiver: switch pipeline latency, then the flow-control packet
 * crosses the cable back) plus one whole packet, since a packet is started
 * only when all of its blocks fit (IBA 7.9.4.3). We size for a 30 m cable
 * (optical leaf-spine uplinks; in-rack copper is 3 m) and 10 ns for the FC
 * packet itself and its processing:
 *   need = rate x (2 x 30 m x 5 ns/m + switch latency + 10 ns) + max packet
 * then double it and round up to a power of two. The factor 2 covers an FC
 * packet waiting behind a full data packet on the reverse link (one more
 * max-packet time), fc_threshold batching, and an HCA that drains slower
 * than the link. HDR: 25 B/ns x 440 ns + 4160 B = 15160 B, x2 = 30320 ->
 * 32 KiB; NDR: 50 x 440 + 4160 = 26160, x2 -> 64 KiB; XDR -> 128 KiB, which
 * is also the most a receiver can advertise: credits are 12-bit counters
 * and a receiver reports at most 2048 free 64-byte blocks (IBA 7.9.4.3,
 * models/ib/ib_credit.h). tests/unit/test_params.c recomputes the rule.
 *
 * Switch port-to-port latency. Vendor figures for the switch ASIC of each
 * generation, as commonly quoted in Mellanox/NVIDIA product briefs. None of
 * these could be checked against a datasheet in the sources available when
 * this was written, except that a reseller's comparison page for the
 * Quantum-2 QM9700 gives "under 150 nanoseconds" (consistent with 130):
 *   SDR 200 ns, DDR 140 ns (InfiniScale III era; unverified),
 *   QDR 100 ns (InfiniScale IV; unverified), FDR10/FDR 170 ns (SwitchX-2;
 *   unverified), EDR 90 ns (Switch-IB 2; unverified), HDR 130 ns (Quantum;
 *   unverified), NDR 130 ns (Quantum-2; "<150 ns" seen), XDR 130 ns (no
 *   public figure found: NDR's value carried over).
 * Treat them as the right order of magnitude, and override with
 * switch.latency_ns when a measured number exists.
 *
 * HCA latency (hca.latency_ns): the HCA's send pipeline, from holding a WR
 * (its WQE fetched or written by BlueFlame; its payload read overlaps this)
 * to the first bit on the wire; a READ's response passes through it too.
 * The host's costs (posting, doorbell, WQE fetch, DMA) are the host
 * model's (models/host). EDR 200 ns and HDR/NDR 250 ns are fitted with the
 * host's DMA read round trip (dma_ns below) to published perftest runs
 * (docs/validation.md): ConnectX-4 EDR back to back, ib_send_lat 0.81-0.83
 * us at 32 bytes, 1.52-1.61 at 1 KiB, 2.25-2.28 at 4 KiB, 4.56-4.58 at 32
 * KiB (D. Potter, MSc thesis, RWTH Aachen 2018), and an mlx5 host at 0.93
 * us (ib_write_lat inline), 1.32 (not inline), 1.91 (ib_read_lat)
 * (perftest issue #131). Older generations: estimates, a share of the
 * commonly reported ib_write_lat half round trip (about 2-3 us for
 * InfiniHost-era SDR/DDR, 1.3 us ConnectX-2 QDR, 0.7-1 us ConnectX-3).
 *
 * Host DMA read round trip (host.dma_read_ns, wqe_fetch_ns): 400 ns for
 * the PCIe Gen3 servers of EDR and before (Potter's Xeon E5-2643 v4: the
 * WQE fetch and payload read add 0.7 us to a 1 KiB SEND; pcie-bench
 * measures 546-560 ns on a Xeon E5-2630 v4 with the IOMMU on and its own
 * slower DMA engine), 250 ns for Gen4 and later (docs/host-model.md).
 *
 * HCA message rate (hca.max_mpps): the vendors' figures, ConnectX-5 one
 * message per 5 ns, ConnectX-6 215 million a second, ConnectX-7 330-370
 * million (docs/host-model.md); none found for earlier or later ones.
 *
 * Flow control. fc_threshold 1: a receiver sends an FC update as soon as
 * any block frees. Blocks free a packet at a time, so this means one FC
 * packet per packet forwarded: the prompt return hardware does. Larger
 * values batch updates (fewer events, slower credit return). The periodic
 * FC packet (ib.fc_period_ns; IBA 7.9.4 requires one at least every 65,536
 * symbol times, from memory: ~262 us at SDR) only repairs FC packets lost
 * to bit errors, which the simulator does not model, so it is off (0).
 */
#include "models/fabric/fab.h"

#include <ctype.h>
#include <fnmatch.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "models/ib/ib_credit.h"
#include "models/ib/ib_pkt.h"
#include "models/link/link.h"
#include "sim/sim_param.h"
#include "sim/sim_parse.h"

#define DEFAULT_PRESET	"hdr"
#define DEFAULT_LANES	4
#define DEFAULT_CABLE_M	3.0		/* in-rack copper (DAC) */
#define DEFAULT_PS_PER_M 5000		/* ~5 ns/m in copper and fibre (numbers.md) */
#define DEFAULT_VLS	4
#define DEFAULT_WEIGHT	64		/* 64 x 64 B = 4 KiB: one MTU packet per turn */
#define VL15_BUF_BYTES	1024		/* three MAD packets (290 B, 5 blocks each) + margin:
					 * back-to-back MADs at line rate must not drop */
#define LIGHT_PS_PER_M	3336		/* speed of light in vacuum: nothing is faster */
#define MAX_CABLE_M	100000.0	/* 100 km: long-haul range extenders */
#define MAX_BUF_BYTES	(IB_CREDIT_WINDOW * IB_BLOCK_BYTES)	/* 128 KiB */

/* One MAD on VL15: LRH + BTH + DETH + 256-byte MAD + ICRC + VCRC = 290 B. */
#define VL15_PKT_BYTES	(IB_LRH_BYTES + IB_BTH_BYTES + IB_DETH_BYTES + IB_MAD_BYTES + \
			 IB_ICRC_BYTES + IB_VCRC_BYTES)

struct preset {
	const char *name;
	enum link_speed speed;
	uint32_t mtu;
	uint32_t vl_buf;	/* bytes, by the rule in the header comment */
	uint32_t sw_ns;
	uint32_t hca_ns;
	uint8_t pcie_gen;	/* the HCA generation's PCIe (x16) */
	uint32_t hca_mpps;	/* the HCA's message rate, all QPs (0: no published figure) */
	uint32_t dma_ns;	/* its host's DMA read round trip (host.dma_read_ns, wqe_fetch_ns) */
	const char *what;
};

static const struct preset presets[] = {
	{ "sdr",   LINK_SDR,   2048,   8192, 200, 1000, 3,   0, 400, "4x SDR, 8 Gb/s (InfiniScale III era)" },
	{ "ddr",   LINK_DDR,   2048,   8192, 140,  800, 3,   0, 400, "4x DDR, 16 Gb/s" },
	{ "qdr",   LINK_QDR,   2048,   8192, 100,  500, 3,   0, 400, "4x QDR, 32 Gb/s (InfiniScale IV, ConnectX-2)" },
	{ "fdr10", LINK_FDR10, 4096,  16384, 170,  350, 3,   0, 400, "4x FDR10, 40 Gb/s (SwitchX-2, ConnectX-3)" },
	{ "fdr",   LINK_FDR,   4096,  16384, 170,  350, 3,   0, 400, "4x FDR, 54.5 Gb/s (SwitchX-2, ConnectX-3)" },
	{ "edr",   LINK_EDR,   4096,  32768,  90,  200, 3, 200, 400, "4x EDR, 100 Gb/s (Switch-IB 2, ConnectX-4/5)" },
	{ "hdr",   LINK_HDR,   4096,  32768, 130,  250, 4, 215, 250, "4x HDR, 200 Gb/s (Quantum, ConnectX-6)" },
	{ "ndr",   LINK_NDR,   4096,  65536, 130,  250, 5, 330, 250, "4x NDR, 400 Gb/s (Quantum-2, ConnectX-7)" },
	{ "xdr",   LINK_XDR,   4096, 131072, 130,  250, 6,   0, 250, "4x XDR, 800 Gb/s (Quantum-X800, ConnectX-8)" },
};

const char *const fab_preset_names[] = {
	"sdr", "ddr", "qdr", "fdr10", "fdr", "edr", "hdr", "ndr", "xdr", NULL
};

/* ---- small helpers ---------------------------------------------------- */


static uint32_t max_pkt_bytes(uint32_t mtu)
{
	/* The largest data packet: first packet of an RDMA WRITE, full MTU. */
	return ib_blocks(ib_wire_bytes(mtu, 1)) * IB_BLOCK_BYTES;
}

static void default_sl2vl(struct fab_params *p)
{
	for (int sl = 0; sl < FAB_NSL; sl++)
		p->sl2vl[sl] = (uint8_t)(sl % p->vls);
}

static void default_vlarb_high(struct fab_params *p)
{
	memset(p->vlarb.high, 0, sizeof(p->vlarb.high));
	p->vlarb.nhigh = 0;
}

/* Every data VL once at the same weight: equal shares, round robin. */
static void default_vlarb_low(struct fab_params *p)
{
	memset(p->vlarb.low, 0, sizeof(p->vlarb.low));
	for (int vl = 0; vl < p->vls; vl++) {
		p->vlarb.low[vl].vl = (uint8_t)vl;
		p->vlarb.low[vl].weight = DEFAULT_WEIGHT;
	}
	p->vlarb.nlow = p->vls;
}

static const struct preset *find_preset(const char *name)
{
	for (size_t i = 0; i < SIM_ARRAY_SIZE(presets); i++)
		if (!strcasecmp(name, presets[i].name))
			return &presets[i];
	return NULL;
}

static void apply_preset(struct fab_params *p, const struct preset *pr)
{
	p->lanes = DEFAULT_LANES;
	p->speed = (uint8_t)pr->speed;
	p->link_forced = p->width_forced = p->speed_forced = false;
	p->cable_m = DEFAULT_CABLE_M;
	p->ps_per_m = DEFAULT_PS_PER_M;
	p->mtu = pr->mtu;
	p->vls = DEFAULT_VLS;
	p->vl_buf_bytes = pr->vl_buf;
	p->vl15_buf_bytes = VL15_BUF_BYTES;
	p->fc_period_ns = 0;
	p->fc_threshold = 1;
	default_sl2vl(p);
	default_vlarb_high(p);
	default_vlarb_low(p);
	p->vlarb.limit = 0;
	p->sw_latency_ns = pr->sw_ns;
	p->hca_latency_ns = pr->hca_ns;
	/* the vendors' message rates (docs/host-model.md); no per-QP
	 * ceiling below the posting thread's is published */
	p->hca_max_mpps = pr->hca_mpps;
	p->hca_wqe_ns = 0;
	/* HCAs drain to host memory at PCIe speed, at least the link rate:
	 * the same per-VL buffer keeps them from stalling the last hop. */
	p->hca_buf_bytes = pr->vl_buf;
	snprintf(p->preset, sizeof(p->preset), "%s", pr->name);
	p->sl2vl_set = p->vlarb_high_set = p->vlarb_low_set = false;
	/* perftest's defaults: timeout 14 (67 ms), 7 retries, RNR for ever */
	p->hca_timeout = 14;
	p->hca_retry_cnt = 7;
	p->hca_rnr_retry = 7;
	p->hca_min_rnr_timer = 12;	/* 0.64 ms (IBA Table 45) */
	p->hca_max_rd_atomic = 16;	/* ConnectX's max_qp_rd_atom */
	/* AckReq on a message's last packet and at least every 256th: the
	 * Mellanox QP context's ack_req_freq ("ACK required bit will be set
	 * in every 2^AckReqFreq packets at least", InfiniHost's QP context;
	 * log_ack_req_freq in ConnectX's mlx5_ifc.h), which the mlx4 driver
	 * sets to 8 on every QP (MLX4_IB_ACK_REQ_FREQ,
	 * drivers/infiniband/hw/mlx4/qp.c) and UCX to 8 on the mlx5 QPs it
	 * creates itself (log_ack_req_freq, uct/ib/mlx5/dv). A long message's
	 * progress is acknowledged every MiB at MTU 4096. Linux rxe asks
	 * every 64 (RXE_MAX_PKT_PER_ACK); 0 = the last packet only. */
	p->hca_ackreq_pkts = 256;
	p->drop_prob = 0;
	p->ber = 0;
	/* perftest's default inline size on mlx5: small writes skip the payload DMA */
	p->hca_max_inline = 220;
	/* a replay's transfers are RDMA WRITEs, as NCCL's; mpi.proto=ucx: as
	 * UCX 1.13 sends MPI messages over rc_verbs on a ConnectX (its QPs ask
	 * for 64 bytes of inline room and get 124: 123 of UCT payload, 115
	 * of data after the headers; UCX_RC_VERBS_SEG_SIZE 8,256; the auto
	 * rendezvous threshold with one process per node and UCX's copy-rate
	 * estimate for Intel CPUs, UCX_BCOPY_BW=auto: 5,800 MiB/s) */
	p->mpi_ucx = false;
	p->mpi_short_bytes = 115;
	p->mpi_seg_bytes = 8256;
	p->mpi_rndv_bytes = 0;
	p->mpi_ppn = 1;
	p->mpi_bcopy_mibps = 5800;
	/* outstanding payload reads per QP: 16 MTU packets cover a 500 ns read
	 * round trip at 800 Gb/s (64 KiB > 50 GB/s x 0.5 us + margin) */
	p->hca_dma_window = 16;
	/* crossbars run faster than a port (about 1.5-2x in shared-memory and
	 * crossbar ASICs): an input can feed two outputs at once, so two flows
	 * leaving one input for two busy outputs share each fairly */
	p->sw_speedup = 2;
	/* Adaptive routing, with per-output queues, on the Quantum
	 * generations (HDR on): NVIDIA's subnet manager ships it on ("AR is
	 * enabled by default in the opensm.conf file", engine ar_updn:
	 * InfiniBand Cluster Bring-up Procedure); off before, as OpenSM
	 * routes unless an AR engine is configured (docs/routing.md). Every
	 * SL may use it once on; per packet, which the
	 * HCAs' out-of-order placement allows (ConnectX-5 and later, RC:
	 * NVIDIA's "Out-of-Order (OOO) Data Placement"), on by hca.ooo=auto
	 * wherever the fabric spreads a flow (ConnectX-4, before it: set
	 * hca.ooo=off). The flowlet gap,
	 * 5 us, exceeds what queues of ib.buffer at a few hops can make two
	 * paths differ by at HDR (32 KiB drains in 1.3 us). The window is
	 * the model's: PSNs ahead of the expected one that RC holds. */
	p->sw_voq = pr->speed >= LINK_HDR;	/* LINK_* in generation order */
	p->ib_ar = pr->speed >= LINK_HDR;
	p->ib_ar_flowlet = false;
	/* Adaptive routing notifications: NVIDIA's subnet manager enables
	 * SHIELD, ARN with it, by default (InfiniBand Cluster Bring-up
	 * Procedure, "SHIELD": shield_mode in opensm.conf); they act only
	 * where ib.ar is on (models/switch/sw.c). */
	p->ib_arn = true;
	p->ib_ar_sl_mask = 0xffff;
	p->ib_ar_flowlet_ns = 5000;
	p->hca_ooo = FAB_OOO_AUTO;
	p->hca_ooo_window = 4096;
	/* SHARP: off, as NCCL's CollNet is unless NCCL_COLLNET_ENABLE=1 and
	 * the SHARP plugin and aggregation manager are there (NCCL's
	 * environment variables documentation). */
	p->ib_sharp = false;
	p->ib_sharp_sat = FAB_SAT_AUTO;
	/* After a link changes, the subnet manager's new tables are in the
	 * switches 100 ms later: a trap 128 (port state change) starts a
	 * sweep at once (OpenSM's trap handling), and routing and
	 * programming a few hundred switches' LFTs by MADs takes tens to
	 * hundreds of ms; beyond one RC timeout at hca.timeout 14 (67 ms),
	 * within its retry budget (7 x 67 ms), as fabrics are tuned. */
	p->sm_reroute_ns = 100000000;
	p->host_model = true;
	host_params_default(&p->host);
	eth_params_default(&p->eth);
	dcqcn_params_default(&p->dcqcn);	/* models/roce/dcqcn.c */
	ibcc_params_default(&p->ibcc);		/* models/ib/ib_cc.c */
	tcp_params_default(&p->tcp);		/* models/tcp/tcp_host.c */
	p->host.pcie_gen = pr->pcie_gen;	/* the PCIe of that generation's HCAs */
	p->host.dma_read_ns = pr->dma_ns;	/* and of the servers they were built into */
	p->host.wqe_fetch_ns = pr->dma_ns;
}

void fab_params_default(struct fab_params *p)
{
	memset(p, 0, sizeof(*p));
	p->max_csv_rows = FAB_MAX_CSV_ROWS;
	apply_preset(p, find_preset(DEFAULT_PRESET));
	/* no GPU servers unless the topology or server.preset says so; a
	 * preset= keeps them (they are not the fabric's generation) */
	srv_params_default(&p->server);
}


static void preset_list(char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	for (size_t i = 0; i < SIM_ARRAY_SIZE(presets); i++)
		sim_append(buf, len, &off, "%s%s", i ? ", " : "", presets[i].name);
}

int fab_params_preset(struct fab_params *p, const char *name, struct sim_diag *d)
{
	const struct preset *pr = find_preset(name);
	char list[128];

	if (!pr) {
		const char *best = NULL;
		unsigned bd = 3;

		for (size_t i = 0; i < SIM_ARRAY_SIZE(presets); i++) {
			unsigned e = sim_edit_distance(name, presets[i].name);

			if (e < bd) {
				bd = e;
				best = presets[i].name;
			}
		}
		preset_list(list, sizeof(list));
		if (best)
			return sim_diag_set(d, NULL, 0, 0,
					    "unknown preset '%s' (presets: %s); did you mean '%s'?",
					    name, list, best);
		return sim_diag_set(d, NULL, 0, 0, "unknown preset '%s' (presets: %s)",
				    name, list);
	}
	apply_preset(p, pr);
	return 0;
}

/* ---- keys ------------------------------------------------------------- */

/*
 * The keys of struct fab_params, rows of the parameter schema
 * (sim/sim_param.h); the host's, DCQCN's and IB CC's are their modules'
 * tables, set through the same call (fab_params_set).
 */

/* ib.buffer, hca.buffer: a credit buffer is whole 64-byte blocks, and at
 * most what a receiver can advertise. */
static int check_buf(const struct sim_param *k, uint64_t x, const char *v, char *err,
		     size_t errlen)
{
	char a[32];

	if (x % IB_BLOCK_BYTES) {
		snprintf(err, errlen,
			 "'%s' is not a multiple of the 64-byte credit block (IBA 7.9.4)", v);
		return -1;
	}
	if (x > k->max) {
		snprintf(err, errlen,
			 "'%s' is more than a receiver can advertise: %u credit blocks = %s (IBA 7.9.4.3)",
			 v, IB_CREDIT_WINDOW, sim_fmt_size(k->max, a, sizeof(a)));
		return -1;
	}
	return 0;
}

/* -- link -- */

static int set_width(void *obj, const struct sim_param *k, const char *v,
		     char *err, size_t errlen)
{
	struct fab_params *p = obj;
	int w = link_width_parse(v);

	(void)k;
	if (!w) {
		snprintf(err, errlen, "expected 1x, 2x, 4x, 8x or 12x, got '%s'", v);
		return -1;
	}
	p->lanes = (uint8_t)w;
	p->link_forced = p->width_forced = true;
	return 0;
}

static void print_width(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	const struct fab_params *p = obj;

	(void)k;
	snprintf(buf, len, "%ux", p->lanes);
}

static int set_speed(void *obj, const struct sim_param *k, const char *v,
		     char *err, size_t errlen)
{
	struct fab_params *p = obj;
	enum link_speed s = link_speed_parse(v);

	(void)k;
	if (s == LINK_SPEED_NONE) {
		snprintf(err, errlen,
			 "expected SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR or XDR, got '%s'", v);
		return -1;
	}
	p->speed = (uint8_t)s;
	p->link_forced = p->speed_forced = true;
	return 0;
}

static void print_speed(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	const struct fab_params *p = obj;

	(void)k;
	snprintf(buf, len, "%s", link_speed_info(p->speed)->name);
}

static int set_cable(void *obj, const struct sim_param *k, const char *v,
		     char *err, size_t errlen)
{
	struct fab_params *p = obj;
	double m;

	(void)k;
	if (sim_parse_double(v, &m, err, errlen))
		return -1;
	if (m < 0 || m > MAX_CABLE_M) {
		snprintf(err, errlen, "'%s' is out of range (0..%g metres)", v, MAX_CABLE_M);
		return -1;
	}
	p->cable_m = m;
	return 0;
}

static void print_cable(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	const struct fab_params *p = obj;

	(void)k;
	snprintf(buf, len, "%g", p->cable_m);
}

/* -- ib -- */

static int set_mtu(void *obj, const struct sim_param *k, const char *v,
		   char *err, size_t errlen)
{
	struct fab_params *p = obj;
	uint64_t x;

	(void)k;
	if (sim_parse_size(v, &x, err, errlen))
		return -1;
	if (x != 256 && x != 512 && x != 1024 && x != 2048 && x != 4096) {
		snprintf(err, errlen, "expected 256, 512, 1024, 2048 or 4096 (IBA MTU), got '%s'", v);
		return -1;
	}
	p->mtu = (uint32_t)x;
	return 0;
}

static void print_mtu(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	const struct fab_params *p = obj;

	(void)k;
	snprintf(buf, len, "%u", p->mtu);
}

static int set_vls(void *obj, const struct sim_param *k, const char *v,
		   char *err, size_t errlen)
{
	struct fab_params *p = obj;
	uint64_t x;

	(void)k;
	if (sim_parse_u64(v, &x, err, errlen))
		return -1;
	if (x < 1 || x > FAB_MAX_VLS) {
		snprintf(err, errlen, "'%s' is out of range (1..%d data VLs)", v, FAB_MAX_VLS);
		return -1;
	}
	p->vls = (uint8_t)x;
	/* Tables nobody set follow the new VL count. */
	if (!p->sl2vl_set)
		default_sl2vl(p);
	if (!p->vlarb_low_set)
		default_vlarb_low(p);
	return 0;
}

static void print_vls(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	const struct fab_params *p = obj;

	(void)k;
	snprintf(buf, len, "%u", p->vls);
}

/* Split at commas into at most `max` items of at most 31 characters. */
static int split_list(const char *v, char items[][32], int max, char *err, size_t errlen)
{
	int n = 0;
	const char *s = v;

	for (;;) {
		const char *c = strchr(s, ',');
		size_t l = c ? (size_t)(c - s) : strlen(s);

		if (n == max) {
			snprintf(err, errlen, "more than %d entries", max);
			return -1;
		}
		if (!l || l >= 32) {
			snprintf(err, errlen, "entry %d is %s", n + 1, l ? "too long" : "empty");
			return -1;
		}
		memcpy(items[n], s, l);
		items[n][l] = 0;
		n++;
		if (!c)
			break;
		s = c + 1;
	}
	return n;
}

static int parse_data_vl(const char *s, uint8_t *vl, char *err, size_t errlen)
{
	uint64_t x;

	if (sim_parse_uint(s, FAB_MAX_VLS - 1, &x, NULL, 0)) {
		snprintf(err, errlen, "VL '%.31s' is not a data VL (0..14; VL15 is management only)", s);
		return -1;
	}
	*vl = (uint8_t)x;
	return 0;
}

/*
 * "0,1,2,3" -> SL i maps to entry i mod 4. Sixteen entries give the full
 * table; fewer repeat, so "0" sends every SL to VL0 and "0,1" alternates.
 */
static int set_sl2vl(void *obj, const struct sim_param *k, const char *v,
		     char *err, size_t errlen)
{
	struct fab_params *p = obj;
	char items[FAB_NSL][32], e[160];
	uint8_t vl[FAB_NSL];
	int n;

	(void)k;
	n = split_list(v, items, FAB_NSL, err, errlen);
	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		if (parse_data_vl(items[i], &vl[i], e, sizeof(e))) {
			snprintf(err, errlen, "entry %d (SL %d): %s", i + 1, i, e);
			return -1;
		}
	}
	for (int sl = 0; sl < FAB_NSL; sl++)
		p->sl2vl[sl] = vl[sl % n];
	p->sl2vl_set = true;
	return 0;
}

static void print_sl2vl(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	const struct fab_params *p = obj;

	(void)k;
	size_t off = 0;

	buf[0] = 0;
	for (int sl = 0; sl < FAB_NSL; sl++)
		sim_append(buf, len, &off, "%s%u", sl ? "," : "", p->sl2vl[sl]);
}

/* "vl:weight,vl:weight" (or "none" / empty for an empty table). */
static int parse_vlarb(const char *v, struct ib_vlarb_entry *tab, uint8_t *n,
		       char *err, size_t errlen)
{
	char items[IB_VLARB_ENTRIES][32], e[160];
	struct ib_vlarb_entry t[IB_VLARB_ENTRIES];
	int cnt;

	if (!*v || !strcasecmp(v, "none")) {
		memset(tab, 0, sizeof(t));
		*n = 0;
		return 0;
	}
	cnt = split_list(v, items, IB_VLARB_ENTRIES, err, errlen);
	if (cnt < 0)
		return -1;
	memset(t, 0, sizeof(t));
	for (int i = 0; i < cnt; i++) {
		char *colon = strchr(items[i], ':');
		uint64_t w;

		if (!colon) {
			snprintf(err, errlen, "entry %d '%s': expected VL:WEIGHT such as 0:64", i + 1,
				 items[i]);
			return -1;
		}
		*colon = 0;
		if (parse_data_vl(items[i], &t[i].vl, e, sizeof(e))) {
			snprintf(err, errlen, "entry %d: %s", i + 1, e);
			return -1;
		}
		if (sim_parse_uint(colon + 1, 255, &w, e, sizeof(e))) {
			snprintf(err, errlen, "entry %d: weight %s (0..255, in 64-byte units)", i + 1, e);
			return -1;
		}
		t[i].weight = (uint8_t)w;
	}
	memcpy(tab, t, sizeof(t));
	*n = (uint8_t)cnt;
	return 0;
}

static int set_vlarb_high(void *obj, const struct sim_param *k, const char *v,
			  char *err, size_t errlen)
{
	struct fab_params *p = obj;
	(void)k;
	if (parse_vlarb(v, p->vlarb.high, &p->vlarb.nhigh, err, errlen))
		return -1;
	p->vlarb_high_set = true;
	return 0;
}

static int set_vlarb_low(void *obj, const struct sim_param *k, const char *v,
			 char *err, size_t errlen)
{
	struct fab_params *p = obj;
	(void)k;
	if (parse_vlarb(v, p->vlarb.low, &p->vlarb.nlow, err, errlen))
		return -1;
	p->vlarb_low_set = true;
	return 0;
}

static void print_vlarb(const struct ib_vlarb_entry *t, int n, char *buf, size_t len)
{
	size_t off = 0;

	snprintf(buf, len, "none");
	for (int i = 0; i < n; i++)
		sim_append(buf, len, &off, "%s%u:%u", i ? "," : "", t[i].vl, t[i].weight);
}

static void print_vlarb_high(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	const struct fab_params *p = obj;

	(void)k;
	print_vlarb(p->vlarb.high, p->vlarb.nhigh, buf, len);
}

static void print_vlarb_low(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	const struct fab_params *p = obj;

	(void)k;
	print_vlarb(p->vlarb.low, p->vlarb.nlow, buf, len);
}

static int set_check(void *obj, const struct sim_param *k, const char *v,
		     char *err, size_t errlen)
{
	struct fab_params *p = obj;
	(void)k;
	return sim_parse_bool(v, &p->check, err, errlen);
}

static void print_check(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	const struct fab_params *p = obj;

	(void)k;
	snprintf(buf, len, "%s", p->check ? "on" : "off");
}

/* A probability or rate in [0, 1). */
static int set_unit(double *out, const char *v, char *err, size_t errlen)
{
	double x;

	if (sim_parse_double(v, &x, err, errlen))
		return -1;
	if (!(x >= 0 && x < 1)) {
		snprintf(err, errlen, "expected a number in [0, 1), got '%s'", v);
		return -1;
	}
	*out = x;
	return 0;
}

static int set_drop(void *obj, const struct sim_param *k, const char *v,
		    char *err, size_t errlen)
{
	struct fab_params *p = obj;
	(void)k;
	return set_unit(&p->drop_prob, v, err, errlen);
}

static void print_drop(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	const struct fab_params *p = obj;

	(void)k;
	snprintf(buf, len, "%g", p->drop_prob);
}

static int set_ber(void *obj, const struct sim_param *k, const char *v,
		   char *err, size_t errlen)
{
	struct fab_params *p = obj;
	(void)k;
	return set_unit(&p->ber, v, err, errlen);
}

static void print_ber(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	const struct fab_params *p = obj;

	(void)k;
	snprintf(buf, len, "%g", p->ber);
}

static int set_preset(void *obj, const struct sim_param *k, const char *v,
		      char *err, size_t errlen)
{
	struct fab_params *p = obj;
	struct sim_diag d;

	(void)k;
	if (fab_params_preset(p, v, &d)) {
		snprintf(err, errlen, "%s", d.msg);
		return -1;
	}
	return 0;
}

static void print_preset(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	const struct fab_params *p = obj;

	(void)k;
	snprintf(buf, len, "%s", p->preset[0] ? p->preset : "-");
}

/* -- TCP (models/tcp) -- */

static int set_tcp_cc(void *obj, const struct sim_param *k, const char *v,
		      char *err, size_t errlen)
{
	struct fab_params *p = obj;
	int cc = tcp_cc_parse(v);

	(void)k;
	if (cc < 0) {
		char names[64];

		snprintf(err, errlen, "expected %s, got '%s'",
			 sim_fmt_names(tcp_cc_names, TCP_CC_COUNT, names, sizeof(names)), v);
		return -1;
	}
	p->tcp.cc = (uint8_t)cc;
	return 0;
}

static void print_tcp_cc(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	const struct fab_params *p = obj;

	(void)k;
	snprintf(buf, len, "%s", tcp_cc_names[p->tcp.cc]);
}

static int set_tcp_ts(void *obj, const struct sim_param *k, const char *v,
		      char *err, size_t errlen)
{
	struct fab_params *p = obj;
	(void)k;
	return sim_parse_bool(v, &p->tcp.timestamps, err, errlen);
}

static void print_tcp_ts(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	const struct fab_params *p = obj;

	(void)k;
	snprintf(buf, len, "%s", p->tcp.timestamps ? "on" : "off");
}

/* tcp.copy_gbps, tcp.copy_hot_gbps: a copy rate in GB/s at the row's
 * field (0: the key's own rule, which its meaning states) */
static int set_tcp_gbps(void *obj, const struct sim_param *k, const char *v,
			char *err, size_t errlen)
{
	double x;

	if (sim_parse_double(v, &x, err, errlen))
		return -1;
	if (!(x >= 0 && x <= 1e4)) {
		snprintf(err, errlen, "expected GB/s in [0, 10000] (0: %s), got '%s'",
			 k->off == offsetof(struct fab_params, tcp.copy_gbps) ? "host.mem_gbps / 2" :
			 "always tcp.copy_gbps", v);
		return -1;
	}
	*(double *)((char *)obj + k->off) = x;
	return 0;
}

static void print_tcp_gbps(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	snprintf(buf, len, "%g", *(const double *)((const char *)obj + k->off));
}

static int set_tcp_g(void *obj, const struct sim_param *k, const char *v,
		     char *err, size_t errlen)
{
	struct fab_params *p = obj;
	double x;

	(void)k;
	if (sim_parse_double(v, &x, err, errlen))
		return -1;
	if (!(x > 0 && x <= 1)) {
		snprintf(err, errlen, "expected a gain in (0, 1], got '%s'", v);
		return -1;
	}
	p->tcp.dctcp_g = x;
	return 0;
}

static void print_tcp_g(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	const struct fab_params *p = obj;

	(void)k;
	snprintf(buf, len, "%g", p->tcp.dctcp_g);
}

/* -- fabric and Ethernet (models/eth) -- */

int fab_fabric_parse(const char *name)
{
	for (int i = 0; fab_fabric_names[i]; i++)
		if (!strcasecmp(name, fab_fabric_names[i]))
			return i;
	return -1;
}

static int set_fabric(void *obj, const struct sim_param *k, const char *v,
		      char *err, size_t errlen)
{
	struct fab_params *p = obj;
	int fb = fab_fabric_parse(v);

	(void)k;
	if (fb < 0) {
		char names[64];

		snprintf(err, errlen, "expected %s, got '%s'",
			 sim_fmt_names(fab_fabric_names, -1, names, sizeof(names)), v);
		return -1;
	}
	p->fabric = (uint8_t)fb;
	return 0;
}

static void print_fabric(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	const struct fab_params *p = obj;

	(void)k;
	snprintf(buf, len, "%s", fab_fabric_names[p->fabric]);
}

static int set_alpha(void *obj, const struct sim_param *k, const char *v,
		     char *err, size_t errlen)
{
	struct fab_params *p = obj;
	double x;

	(void)k;
	if (sim_parse_double(v, &x, err, errlen))
		return -1;
	if (!(x > 0 && x <= 64)) {
		snprintf(err, errlen, "expected a number in (0, 64], got '%s'", v);
		return -1;
	}
	p->eth.alpha = x;
	return 0;
}

static void print_alpha(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	const struct fab_params *p = obj;

	(void)k;
	snprintf(buf, len, "%g", p->eth.alpha);
}

static int set_pfc_alpha(void *obj, const struct sim_param *k, const char *v,
			 char *err, size_t errlen)
{
	struct fab_params *p = obj;
	double x;

	(void)k;
	if (sim_parse_double(v, &x, err, errlen))
		return -1;
	if (!(x >= 0 && x <= 64)) {
		snprintf(err, errlen, "expected a number in [0, 64] (0 = static eth.pfc_xoff), got '%s'", v);
		return -1;
	}
	p->eth.pfc_alpha = x;
	return 0;
}

static void print_pfc_alpha(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	const struct fab_params *p = obj;

	(void)k;
	snprintf(buf, len, "%g", p->eth.pfc_alpha);
}

static int set_pmax(void *obj, const struct sim_param *k, const char *v,
		    char *err, size_t errlen)
{
	struct fab_params *p = obj;
	double x;

	(void)k;
	if (sim_parse_double(v, &x, err, errlen))
		return -1;
	if (!(x >= 0 && x <= 1)) {
		snprintf(err, errlen, "expected a probability in [0, 1], got '%s'", v);
		return -1;
	}
	p->eth.pmax = x;
	return 0;
}

static void print_pmax(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	const struct fab_params *p = obj;

	(void)k;
	snprintf(buf, len, "%g", p->eth.pmax);
}

static int set_ecn(void *obj, const struct sim_param *k, const char *v,
		   char *err, size_t errlen)
{
	struct fab_params *p = obj;
	bool b;

	(void)k;
	if (!strcasecmp(v, "auto")) {
		p->eth.ecn = ETH_ECN_AUTO;
		return 0;
	}
	if (sim_parse_bool(v, &b, err, errlen)) {
		snprintf(err, errlen, "expected on, off or auto, got '%s'", v);
		return -1;
	}
	p->eth.ecn = b ? ETH_ECN_ON : ETH_ECN_OFF;
	return 0;
}

static void print_ecn(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	const struct fab_params *p = obj;

	(void)k;
	snprintf(buf, len, "%s", p->eth.ecn == ETH_ECN_AUTO ? "auto" :
				 p->eth.ecn == ETH_ECN_ON ? "on" : "off");
}

static int set_sched(void *obj, const struct sim_param *k, const char *v,
		     char *err, size_t errlen)
{
	struct fab_params *p = obj;
	(void)k;
	if (!strcasecmp(v, "strict"))
		p->eth.sched = ETH_SCHED_STRICT;
	else if (!strcasecmp(v, "wrr") || !strcasecmp(v, "rr"))
		p->eth.sched = ETH_SCHED_WRR;
	else {
		snprintf(err, errlen, "expected strict or wrr, got '%s'", v);
		return -1;
	}
	return 0;
}

static void print_sched(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	const struct fab_params *p = obj;

	(void)k;
	snprintf(buf, len, "%s", p->eth.sched == ETH_SCHED_STRICT ? "strict" : "wrr");
}

static const char *const lb_names[] = {
	[ETH_LB_ECMP] = "ecmp", [ETH_LB_STATIC] = "static",
	[ETH_LB_FLOWLET] = "flowlet", [ETH_LB_SPRAY] = "spray",
};

static int set_lb(void *obj, const struct sim_param *k, const char *v,
		  char *err, size_t errlen)
{
	struct fab_params *p = obj;

	(void)k;
	for (uint8_t i = 0; i < SIM_ARRAY_SIZE(lb_names); i++)
		if (!strcasecmp(v, lb_names[i])) {
			p->eth.lb = i;
			return 0;
		}
	snprintf(err, errlen, "expected ecmp, flowlet, spray or static, got '%s'", v);
	return -1;
}


static void print_lb(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	const struct fab_params *p = obj;

	(void)k;
	snprintf(buf, len, "%s", lb_names[p->eth.lb]);
}

static const char *const hash_field_names[] = { "sip", "dip", "proto", "sport", "dport" };

/* eth.hash_fields: a comma list of the names above, or all */
static int set_hash_fields(void *obj, const struct sim_param *k, const char *v,
			   char *err, size_t errlen)
{
	struct fab_params *p = obj;
	uint8_t set = 0;
	const char *s = v;

	(void)k;
	if (!strcasecmp(v, "all")) {
		p->eth.hash_fields = ETH_HASH_ALL;
		return 0;
	}
	while (*s) {
		size_t n = strcspn(s, ",");
		uint8_t i;

		for (i = 0; i < SIM_ARRAY_SIZE(hash_field_names); i++)
			if (strlen(hash_field_names[i]) == n && !strncasecmp(s, hash_field_names[i], n))
				break;
		if (i == SIM_ARRAY_SIZE(hash_field_names)) {
			snprintf(err, errlen, "expected all or a comma list of sip, dip, proto, "
				 "sport and dport, got '%.*s'", (int)n, s);
			return -1;
		}
		set |= (uint8_t)(1u << i);
		s += n;
		if (*s)
			s++;
	}
	if (!set) {
		snprintf(err, errlen, "expected all or a comma list of sip, dip, proto, sport and dport");
		return -1;
	}
	p->eth.hash_fields = set;
	return 0;
}

static void print_hash_fields(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	uint8_t set = ((const struct fab_params *)obj)->eth.hash_fields;
	size_t at = 0;

	(void)k;
	buf[0] = 0;
	for (uint8_t i = 0; i < SIM_ARRAY_SIZE(hash_field_names); i++)
		if (set >> i & 1 && at < len)
			at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? "," : "",
					       hash_field_names[i]);
}

static int set_onoff(bool *b, const char *v, char *err, size_t errlen)
{
	if (!strcasecmp(v, "on") || !strcmp(v, "1") || !strcasecmp(v, "true"))
		*b = true;
	else if (!strcasecmp(v, "off") || !strcmp(v, "0") || !strcasecmp(v, "false"))
		*b = false;
	else {
		snprintf(err, errlen, "expected on or off, got '%s'", v);
		return -1;
	}
	return 0;
}

static int set_ar(void *obj, const struct sim_param *k, const char *v, char *err, size_t errlen)
{
	(void)k;
	return set_onoff(&((struct fab_params *)obj)->ib_ar, v, err, errlen);
}

static void print_ar(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	(void)k;
	snprintf(buf, len, "%s", ((const struct fab_params *)obj)->ib_ar ? "on" : "off");
}

static int set_arn(void *obj, const struct sim_param *k, const char *v, char *err, size_t errlen)
{
	(void)k;
	return set_onoff(&((struct fab_params *)obj)->ib_arn, v, err, errlen);
}

static void print_arn(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	(void)k;
	snprintf(buf, len, "%s", ((const struct fab_params *)obj)->ib_arn ? "on" : "off");
}

static int set_sharp(void *obj, const struct sim_param *k, const char *v, char *err,
		     size_t errlen)
{
	(void)k;
	return set_onoff(&((struct fab_params *)obj)->ib_sharp, v, err, errlen);
}

static void print_sharp(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	(void)k;
	snprintf(buf, len, "%s", ((const struct fab_params *)obj)->ib_sharp ? "on" : "off");
}

static const char *const sat_names[] = {
	[FAB_SAT_AUTO] = "auto", [FAB_SAT_SWITCH] = "switch", [FAB_SAT_PORT] = "port",
	[FAB_SAT_NONE] = "none",
};

/* Quantum (HDR) streams one tree per switch; Quantum-2 (NDR) and the
 * generation after (XDR) one per port; the generations before HDR have
 * no streaming aggregation, and their SHARPv1 is kept to Quantum's rule. */
enum fab_sat fab_sharp_sat(const struct fab_params *p)
{
	if (p->ib_sharp_sat != FAB_SAT_AUTO)
		return (enum fab_sat)p->ib_sharp_sat;
	return !strcmp(p->preset, "ndr") || !strcmp(p->preset, "xdr") ? FAB_SAT_PORT : FAB_SAT_SWITCH;
}

static int set_sharp_sat(void *obj, const struct sim_param *k, const char *v, char *err,
			 size_t errlen)
{
	(void)k;
	for (uint8_t i = 0; i < SIM_ARRAY_SIZE(sat_names); i++)
		if (!strcasecmp(v, sat_names[i])) {
			((struct fab_params *)obj)->ib_sharp_sat = i;
			return 0;
		}
	snprintf(err, errlen, "expected auto, switch, port or none, got '%s'", v);
	return -1;
}

static void print_sharp_sat(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	const struct fab_params *p = obj;

	(void)k;
	if (p->ib_sharp_sat == FAB_SAT_AUTO)
		snprintf(buf, len, "auto (%s)", sat_names[fab_sharp_sat(p)]);
	else
		snprintf(buf, len, "%s", sat_names[p->ib_sharp_sat]);
}

static int set_ar_mode(void *obj, const struct sim_param *k, const char *v,
		       char *err, size_t errlen)
{
	struct fab_params *p = obj;

	(void)k;
	if (!strcasecmp(v, "packet"))
		p->ib_ar_flowlet = false;
	else if (!strcasecmp(v, "flowlet"))
		p->ib_ar_flowlet = true;
	else {
		snprintf(err, errlen, "expected packet or flowlet, got '%s'", v);
		return -1;
	}
	return 0;
}

static void print_ar_mode(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	(void)k;
	snprintf(buf, len, "%s", ((const struct fab_params *)obj)->ib_ar_flowlet ? "flowlet" : "packet");
}

static int set_queues(void *obj, const struct sim_param *k, const char *v,
		      char *err, size_t errlen)
{
	struct fab_params *p = obj;

	(void)k;
	if (!strcasecmp(v, "fifo"))
		p->sw_voq = false;
	else if (!strcasecmp(v, "voq"))
		p->sw_voq = true;
	else {
		snprintf(err, errlen, "expected fifo or voq, got '%s'", v);
		return -1;
	}
	return 0;
}

static void print_queues(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	(void)k;
	snprintf(buf, len, "%s", ((const struct fab_params *)obj)->sw_voq ? "voq" : "fifo");
}

static int set_mpi_proto(void *obj, const struct sim_param *k, const char *v, char *err,
			 size_t errlen)
{
	struct fab_params *p = obj;

	(void)k;
	if (!strcasecmp(v, "write") || !strcasecmp(v, "ucx")) {
		p->mpi_ucx = !strcasecmp(v, "ucx");
		return 0;
	}
	snprintf(err, errlen, "expected write or ucx, got '%s'", v);
	return -1;
}

static void print_mpi_proto(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	(void)k;
	snprintf(buf, len, "%s", ((const struct fab_params *)obj)->mpi_ucx ? "ucx" : "write");
}

static int set_ooo(void *obj, const struct sim_param *k, const char *v, char *err, size_t errlen)
{
	struct fab_params *p = obj;
	bool on;

	(void)k;
	if (!strcasecmp(v, "auto")) {
		p->hca_ooo = FAB_OOO_AUTO;
		return 0;
	}
	if (set_onoff(&on, v, err, errlen)) {
		snprintf(err, errlen, "expected auto, on or off, got '%s'", v);
		return -1;
	}
	p->hca_ooo = on ? FAB_OOO_ON : FAB_OOO_OFF;
	return 0;
}

static void print_ooo(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	static const char *const names[] = { "auto", "off", "on" };

	(void)k;
	snprintf(buf, len, "%s", names[((const struct fab_params *)obj)->hca_ooo]);
}

#define K_UINT SIM_PARAM_UINT
#define K_NS SIM_PARAM_NS
#define K_SIZE SIM_PARAM_SIZE
#define GEN(n, kind, f, lo, hi, m) \
	{ n, kind, SIM_PARAM_FIELD(struct fab_params, f), lo, hi, NULL, NULL, NULL, m }
/* a credit buffer: sizes in whole 64-byte blocks, at most 128 KiB */
#define BUF(n, f, lo, hi, m) \
	{ n, SIM_PARAM_SIZE, SIM_PARAM_FIELD(struct fab_params, f), lo, hi, NULL, NULL, check_buf, m }
#define SPECIAL(n, s, pr, m) { n, SIM_PARAM_SPECIAL, 0, 0, 0, 0, s, pr, NULL, m }

/* In print order: the order of --help-params and of run reports. */
static const struct sim_param keys[] = {
	SPECIAL("preset", set_preset, print_preset,
		"starting point: sdr ddr qdr fdr10 fdr edr hdr ndr xdr (resets all but sim.*)"),
	SPECIAL("fabric", set_fabric, print_fabric,
		"@fabrics-and@ ('ibfab compare --help' says what each is)"),
	SPECIAL("link.width", set_width, print_width,
		"lanes per link: 1x 2x 4x 8x 12x (setting it overrides the topology file)"),
	SPECIAL("link.speed", set_speed, print_speed,
		"lane speed: SDR DDR QDR FDR10 FDR EDR HDR NDR XDR (overrides the file; widths stay)"),
	SPECIAL("link.cable_m", set_cable, print_cable,
		"cable length in metres where the topology gives none"),
	GEN("link.ps_per_m", K_UINT, ps_per_m, LIGHT_PS_PER_M, 100000,
	    "propagation delay, ps per metre (~5000 in copper and fibre)"),
	SPECIAL("ib.mtu", set_mtu, print_mtu,
		"path MTU in bytes: 256 512 1024 2048 4096"),
	SPECIAL("ib.vls", set_vls, print_vls,
		"operational data VLs, 1..15 (tables not set follow it)"),
	BUF("ib.buffer", vl_buf_bytes, IB_BLOCK_BYTES, MAX_BUF_BYTES,
	    "switch receive buffer per input port and data VL (64-byte blocks)"),
	GEN("ib.vl15_buffer", K_SIZE, vl15_buf_bytes, VL15_PKT_BYTES, 1 << 20,
	    "VL15 (management) receive buffer; not flow controlled"),
	GEN("ib.fc_period_ns", K_NS, fc_period_ns, 0, UINT32_MAX,
	    "periodic flow-control packet interval, ns (0 = off)"),
	GEN("ib.fc_threshold", K_UINT, fc_threshold, 0, IB_CREDIT_WINDOW,
	    "blocks freed before a flow-control update (0 = periodic only)"),
	SPECIAL("ib.sl2vl", set_sl2vl, print_sl2vl,
		"VL of SL 0..15; fewer entries repeat (\"0,1\" = SL i -> VL i mod 2)"),
	SPECIAL("vlarb.high", set_vlarb_high, print_vlarb_high,
		"high-priority VLArb table VL:WEIGHT,... (weight x 64 bytes; none = empty)"),
	SPECIAL("vlarb.low", set_vlarb_low, print_vlarb_low,
		"low-priority VLArb table VL:WEIGHT,... (up to 64 entries)"),
	GEN("vlarb.limit_high", K_UINT, vlarb.limit, 0, 255,
	    "LimitOfHighPriority: x 4 KiB of high before one low packet (255 = no limit)"),
	GEN("switch.latency_ns", K_NS, sw_latency_ns, 0, UINT32_MAX,
	    "switch port-to-port latency, head in to head out, ns"),
	GEN("switch.speedup", K_UINT, sw_speedup, 1, 8,
	    "packets one input port feeds to outputs at once (crossbar speedup; 1 = none)"),
	SPECIAL("switch.queues", set_queues, print_queues,
		"input queues: fifo (only each VL's head competes: head-of-line blocking) or voq (per output); the preset's: voq from hdr on"),
	SPECIAL("ib.ar", set_ar, print_ar,
		"adaptive routing: on = a switch keeps the LFT's port while no queue forms on it, else the least loaded port on a shortest path; the preset's: on from hdr (Quantum) on"),
	SPECIAL("ib.ar_mode", set_ar_mode, print_ar_mode,
		"adaptive routing per packet, or per flowlet (a flow keeps its port until idle ib.ar_flowlet_ns)"),
	SPECIAL("ib.arn", set_arn, print_arn,
		"adaptive routing notifications (SHIELD's ARN), with ib.ar=on: a switch whose least loaded link towards a destination switch queues over one packet tells the switch upstream, which takes another of its ports to that destination, where it has one, until the queue could drain"),
	GEN("ib.ar_sl_mask", K_UINT, ib_ar_sl_mask, 0, 0xffff,
	    "SLs that may be routed adaptively, bit i for SL i (the others follow the LFT)"),
	GEN("ib.ar_flowlet_ns", K_NS, ib_ar_flowlet_ns, 1, UINT32_MAX,
	    "adaptive routing per flowlet: the idle gap that starts a new flowlet, ns"),
	SPECIAL("ib.sharp", set_sharp, print_sharp,
		"SHARP in-network allreduce (NCCL with NCCL_COLLNET_ENABLE=1): on = algo=auto allreduces run as collnet in the switches; on GPU servers NCCL's tuning model adds CollNet and NVLS + SHARP to its choices"),
	SPECIAL("ib.sharp_sat", set_sharp_sat, print_sharp_sat,
		"SHARP streaming aggregations at once: switch (one tree per switch, Quantum), port (one per port, Quantum-2), none, or auto (the preset's)"),
	GEN("hca.latency_ns", K_NS, hca_latency_ns, 0, UINT32_MAX,
	    "HCA post to first bit on the wire, ns"),
	GEN("hca.wqe_ns", K_NS, hca_wqe_ns, 0, UINT32_MAX,
	    "HCA time per WQE on one QP: a QP starts at most one message per this, ns"),
	GEN("hca.max_mpps", K_UINT, hca_max_mpps, 0, 100000,
	    "HCA message rate over all its QPs, millions per second (0 = no limit)"),
	BUF("hca.buffer", hca_buf_bytes, IB_BLOCK_BYTES, MAX_BUF_BYTES,
	    "HCA receive buffer per data VL"),
	GEN("hca.timeout", K_UINT, hca_timeout, 0, 31,
	    "local ACK timeout: 4.096 us x 2^N (14 = 67 ms; 0 = none)"),
	GEN("hca.retry_cnt", K_UINT, hca_retry_cnt, 0, 7,
	    "retries after a timeout or sequence NAK before the QP fails"),
	GEN("hca.rnr_retry", K_UINT, hca_rnr_retry, 0, 7,
	    "retries after an RNR NAK (7 = for ever)"),
	GEN("hca.min_rnr_timer", K_UINT, hca_min_rnr_timer, 0, 31,
	    "RNR NAK timer code (IBA Table 45: 12 = 0.64 ms, 1 = 10 us)"),
	GEN("hca.max_rd_atomic", K_UINT, hca_max_rd_atomic, 1, 255,
	    "READs/atomics in flight per QP (requester and responder)"),
	GEN("hca.ackreq_pkts", K_UINT, hca_ackreq_pkts, 0, 65536,
	    "RC: AckReq on every Nth packet of a message as well as its last (a power of two; 0 = the last only)"),
	GEN("hca.max_inline", K_SIZE, hca_max_inline, 0, 1024,
	    "traffic messages up to this size are sent inline (no payload DMA read)"),
	SPECIAL("mpi.proto", set_mpi_proto, print_mpi_proto,
		"a replay's transfers between CPU ranks: write (one RDMA WRITE each, as NCCL) or ucx (MPI over UCX: eager SENDs, rendezvous by RDMA READ)"),
	GEN("mpi.short_bytes", K_SIZE, mpi_short_bytes, 0, 1024,
	    "mpi.proto=ucx: messages up to this many data bytes go inline (UCX's eager short)"),
	GEN("mpi.seg_bytes", K_SIZE, mpi_seg_bytes, 64, 1 << 20,
	    "mpi.proto=ucx: a SEND carries at most this many bytes (UCX_RC_VERBS_SEG_SIZE)"),
	GEN("mpi.rndv_bytes", K_SIZE, mpi_rndv_bytes, 0, UINT64_MAX,
	    "mpi.proto=ucx: rendezvous from this many data bytes (0 = UCX's auto threshold)"),
	GEN("mpi.ppn", K_UINT, mpi_ppn, 1, 4096,
	    "mpi.proto=ucx: processes per node UCX is told of (its auto threshold shares the port)"),
	GEN("mpi.bcopy_mibps", K_UINT, mpi_bcopy_mibps, 1, 1000000,
	    "mpi.proto=ucx: UCX's estimate of a core's copy rate, MiB/s (UCX_BCOPY_BW; AMD: 5008)"),
	GEN("hca.dma_window", K_UINT, hca_dma_window, 1, 256,
	    "payload DMA reads in flight per QP, in packets (the HCA's prefetch)"),
	GEN("sm.reroute_ns", K_NS, sm_reroute_ns, 0, UINT64_MAX,
	    "after a --fault, the subnet manager's new tables are in the switches this much later (0 = never)"),
	SPECIAL("hca.ooo", set_ooo, print_ooo,
		"RC takes packets out of order (ConnectX-5 and later): auto = where ib.ar or eth.lb spreads a flow; off = go-back-N on any gap"),
	GEN("hca.ooo_window", K_UINT, hca_ooo_window, 1, 1u << 22,
	    "out of order: PSNs ahead of the expected one an RC QP holds (beyond: go-back-N)"),
	GEN("eth.buffer_per_port", K_SIZE, eth.buffer_per_port, 16 << 10, 1u << 30,
	    "Ethernet switch: shared buffer per port (the switch has ports x this)"),
	SPECIAL("eth.dt_alpha", set_alpha, print_alpha,
		"dynamic threshold: a lossy queue may hold alpha x the free buffer"),
	GEN("eth.queue_max", K_SIZE, eth.queue_max, 0, 1u << 30,
	    "static limit per output queue, bytes (0 = dynamic threshold only)"),
	GEN("eth.pfc_xoff", K_SIZE, eth.pfc_xoff, 4096, 1u << 30,
	    "PFC: ingress bytes per port and priority that send XOFF (fabric=roce)"),
	GEN("eth.pfc_xon", K_SIZE, eth.pfc_xon, 0, 1u << 30,
	    "PFC: at or below this many bytes, send XON"),
	SPECIAL("eth.pfc_alpha", set_pfc_alpha, print_pfc_alpha,
		"PFC: > 0 = dynamic XOFF at alpha x the free shared buffer (0 = static)"),
	GEN("eth.pfc_headroom", K_SIZE, eth.pfc_headroom, 0, 1u << 30,
	    "PFC headroom per ingress port (0 = 2 x cable delay x rate + 2 frames)"),
	GEN("eth.pfc_quanta", K_UINT, eth.pfc_quanta, 1, 65535,
	    "pause time an XOFF asks for, in 512-bit quanta"),
	SPECIAL("eth.ecn", set_ecn, print_ecn,
		"ECN marking: on, off, auto (roce; tcp with DCTCP)"),
	GEN("eth.kmin", K_SIZE, eth.kmin, 0, 1u << 30,
	    "ECN: no marks below this egress queue (0 = 100 KB per 25 Gb/s; DCTCP 30 KB per 10)"),
	GEN("eth.kmax", K_SIZE, eth.kmax, 0, 1u << 30,
	    "ECN: every packet marked above this (0 = 400 KB per 25 Gb/s; DCTCP = kmin)"),
	SPECIAL("eth.pmax", set_pmax, print_pmax,
		"ECN: marking probability at kmax (RED-style between kmin and kmax)"),
	SPECIAL("eth.sched", set_sched, print_sched,
		"between data priorities: strict or wrr (CNPs always first)"),
	SPECIAL("eth.lb", set_lb, print_lb,
		"load balancing at the switches: ecmp (a flow's hash picks one of the shortest paths), flowlet (the least loaded, anew after an idle eth.flowlet_ns), spray (the least loaded per packet) or static (the subnet manager's table)"),
	SPECIAL("eth.hash_fields", set_hash_fields, print_hash_fields,
		"ECMP: the 5-tuple's fields the switches hash, a comma list of sip, dip, proto, sport, dport (RoCEv2's dport is 4791 and its sport the NIC's per QP pair), or all"),
	GEN("eth.hash_seed", SIM_PARAM_UINT, eth.hash_seed, 0, UINT64_MAX,
	    "ECMP: mixed into every switch's flow hash (another seed, other collisions)"),
	GEN("eth.flowlet_ns", K_NS, eth.flowlet_ns, 1, UINT32_MAX,
	    "eth.lb=flowlet: the idle gap that starts a new flowlet, ns"),
	SPECIAL("tcp.cc", set_tcp_cc, print_tcp_cc,
		"TCP congestion control: newreno, cubic (Linux's default), dctcp (fabric=tcp)"),
	GEN("tcp.mss", K_SIZE, tcp.mss, 0, 9000,
	    "TCP payload bytes per segment (1448: MTU 1500; 8948: MTU 9000; 0 = ib.mtu)"),
	GEN("tcp.init_cwnd", K_UINT, tcp.init_cwnd, 1, 100000,
	    "initial congestion window, segments (RFC 6928: 10)"),
	GEN("tcp.min_rto_us", K_UINT, tcp.min_rto_us, 1, UINT32_MAX,
	    "RTO floor, us (Linux 200000; datacenter tunings use 1000-10000)"),
	GEN("tcp.max_rto_us", K_UINT, tcp.max_rto_us, 1, UINT32_MAX,
	    "RTO ceiling after exponential backoff, us (RFC 6298: at least 60 s)"),
	GEN("tcp.delack_us", K_UINT, tcp.delack_us, 0, UINT32_MAX,
	    "delayed-ACK timer, us (Linux 40000; 0 = acknowledge every segment)"),
	GEN("tcp.dupthresh", K_UINT, tcp.dupthresh, 1, 255,
	    "duplicate ACKs that trigger fast retransmit (3)"),
	/* at least 1: a connection that never gives up on a path that drops
	 * everything would back off until the clock's end (2^64 ps) */
	GEN("tcp.retries2", K_UINT, tcp.retries2, 1, 1000,
	    "RTO timeouts in a row before the connection is given up (Linux tcp_retries2: 15)"),
	SPECIAL("tcp.timestamps", set_tcp_ts, print_tcp_ts,
		"TCP timestamps option: 12 more header bytes per segment (Linux: on)"),
	GEN("tcp.rwnd", K_SIZE, tcp.rwnd, 4096, 1u << 30,
	    "receive window, bytes (Linux tcp_rmem max: 6 MiB)"),
	GEN("tcp.msg_hdr", K_SIZE, tcp.msg_hdr, 0, 4096,
	    "application header in front of each message on the stream, bytes"),
	SPECIAL("tcp.dctcp_g", set_tcp_g, print_tcp_g,
		"DCTCP's alpha gain g (RFC 8257: 1/16)"),
	GEN("tcp.syscall_ns", K_NS, tcp.syscall_ns, 0, UINT32_MAX,
	    "host stack: one send()/recv() through the socket layer, ns"),
	{ "tcp.copy_gbps", SIM_PARAM_SPECIAL, SIM_PARAM_FIELD(struct fab_params, tcp.copy_gbps), 0, 0,
	  set_tcp_gbps, print_tcp_gbps, NULL,
	  "host stack: one core's user<->kernel copy rate, GB/s (0 = host.mem_gbps / 2)" },
	{ "tcp.copy_hot_gbps", SIM_PARAM_SPECIAL, SIM_PARAM_FIELD(struct fab_params, tcp.copy_hot_gbps),
	  0, 0, set_tcp_gbps, print_tcp_gbps, NULL,
	  "host stack: the receiver's copy of data still in the cache, GB/s (0 = always tcp.copy_gbps)" },
	GEN("tcp.ddio_bytes", K_SIZE, tcp.ddio_bytes, 0, 1u << 30,
	    "host stack: the last-level cache the NIC writes into (DDIO); older data has left it"),
	GEN("tcp.seg_cpu_ns", K_NS, tcp.seg_cpu_ns, 0, UINT32_MAX,
	    "host stack: TCP/IP processing per segment on each side, with GSO/GRO on, ns"),
	{ "tcp.gso", SIM_PARAM_BOOL, SIM_PARAM_FIELD(struct fab_params, tcp.gso), 0, 1,
	  NULL, NULL, NULL, "host stack: TSO/GSO, segments cut below TCP/IP (off: each pays tcp.skb_cpu_ns more)" },
	{ "tcp.gro", SIM_PARAM_BOOL, SIM_PARAM_FIELD(struct fab_params, tcp.gro), 0, 1,
	  NULL, NULL, NULL, "host stack: GRO, segments merged before TCP/IP (off: each pays tcp.skb_cpu_ns more)" },
	GEN("tcp.skb_cpu_ns", K_NS, tcp.skb_cpu_ns, 0, UINT32_MAX,
	    "host stack: the IP/TCP layers' work per segment that GSO/GRO spread over 64 KiB, ns"),
	GEN("tcp.irq_ns", K_NS, tcp.irq_ns, 0, UINT32_MAX,
	    "host stack: one receive interrupt (entry, NAPI poll start), ns"),
	GEN("tcp.irq_coalesce", K_UINT, tcp.irq_coalesce, 1, 65536,
	    "host stack: segments one interrupt serves at most (NAPI budget 64)"),
	GEN("tcp.rx_usecs", K_UINT, tcp.rx_usecs, 0, 1000000,
	    "host stack: the NIC's interrupt moderation timer (ethtool rx-usecs), us; 0 = an interrupt at once"),
	GEN("tcp.rx_frames", K_UINT, tcp.rx_frames, 1, 65536,
	    "host stack: an interrupt once this many segments wait, timer or not (ethtool rx-frames)"),
	{ "tcp.rx_cqe_mode", SIM_PARAM_BOOL, SIM_PARAM_FIELD(struct fab_params, tcp.rx_cqe_mode), 0, 1,
	  NULL, NULL, NULL, "host stack: the moderation timer restarts at each segment (on, mlx5's "
	  "default) or runs from the first (off)" },
	GEN("tcp.ctx_switch_ns", K_NS, tcp.ctx_switch_ns, 0, UINT32_MAX,
	    "host stack: waking the blocked receiver (wake-up + context switch), ns"),
	GEN("tcp.cores", K_UINT, tcp.cores, 0, 65536,
	    "host stack: cores a host's connections share (0 = one per connection, as RSS gives)"),
	SPECIAL("link.drop_prob", set_drop, print_drop,
		"fault injection: probability a packet fails its CRC at a receiver"),
	SPECIAL("link.ber", set_ber, print_ber,
		"fault injection: bit error rate on every link (per bit on the wire)"),
	/* times in ns become picoseconds on the engine's 64-bit clock (about
	 * 213 days): more would wrap to a small time and cut the run short */
	GEN("sim.sample_ns", K_NS, sample_ns, 0, UINT64_MAX / SIM_NS,
	    "time-series sample interval, ns (0 = automatic)"),
	GEN("sim.max_time_ns", K_NS, max_time_ns, 0, UINT64_MAX / SIM_NS,
	    "stop the run at this simulated time, ns (0 = run to completion)"),
	/* budgets that keep a small input from taking the machine: a trace's
	 * steps are counted before they are made (trace_lower), and links.csv
	 * stops at its row budget (about 45 bytes a row: 2^24 is 0.7 GB) */
	GEN("sim.max_memory", K_SIZE, max_memory, 0, UINT64_MAX,
	    "memory a trace's lowered steps, or the traffic specs' messages, may take (0 = half of the machine's)"),
	GEN("sim.max_csv_rows", K_UINT, max_csv_rows, 0, UINT64_MAX,
	    "rows links.csv holds at most; later samples are dropped with a warning (0 = no limit)"),
	SPECIAL("sim.check", set_check, print_check,
		"check credit invariants after every event: on/off (slow)"),
	{ "sim.cut_links", SIM_PARAM_BOOL, SIM_PARAM_FIELD(struct fab_params, cut_links), 0, 1,
	  NULL, NULL, NULL,
	  "every link as if it joined two partitions of a parallel run (packets copied, credits and PFC frames as events): on/off (the same results, more events)" },
	{ NULL },
};

static const struct sim_param_table fab_table = { keys, 0, 17, 12 };

/* host.model: whether the host is modelled (the rest of host.* is the
 * host model's own) */
static const struct sim_param host_model_key[] = {
	{ "host.model", SIM_PARAM_BOOL, SIM_PARAM_FIELD(struct fab_params, host_model), 0, 1,
	  NULL, NULL, NULL, "model the host: PCIe, DMA, memory, CPU (off = an ideal host)" },
	{ NULL },
};
static const struct sim_param_table host_model_table = { host_model_key, 0, 22, 8 };
static const struct sim_param_table host_table = {
	host_param_keys, offsetof(struct fab_params, host), 22, 8,
};
static const struct sim_param_table dcqcn_table = {
	dcqcn_param_keys, offsetof(struct fab_params, dcqcn), 22, 8,
};
static const struct sim_param_table ibcc_table = {
	ibcc_param_keys, offsetof(struct fab_params, ibcc), 22, 8,
};
static const struct sim_param_table server_table = {
	srv_param_keys, offsetof(struct fab_params, server), 26, 8,
};

/* The tables fab_params_set() reads, in print order. */
static const struct sim_param_table *const tables[] = {
	&fab_table, &host_model_table, &host_table, &dcqcn_table, &ibcc_table, &server_table,
	NULL,
};

/* ---- link[NODE/PORT].KEY=VALUE: one cable's own value ---------------------- */

/* state: down (the cable is not there) or active (it is, undoing an
 * earlier down); kept in drop_prob's place of the scratch copy. */
static int set_state(void *obj, const struct sim_param *k, const char *v,
		     char *err, size_t errlen)
{
	struct fab_params *p = obj;

	(void)k;
	if (strcmp(v, "down") && strcmp(v, "active")) {
		snprintf(err, errlen, "expected down or active, got '%s'", v);
		return -1;
	}
	p->drop_prob = !strcmp(v, "down");
	return 0;
}

/* peer: checked and kept by set_link itself (a node and a port, not a number) */
static int set_peer(void *obj, const struct sim_param *k, const char *v, char *err, size_t errlen)
{
	(void)obj;
	(void)k;
	(void)v;
	(void)err;
	(void)errlen;
	return 0;
}

static const struct {
	const char *name;
	enum fab_link_key key;
	int (*set)(void *obj, const struct sim_param *k, const char *v, char *err, size_t errlen);
} link_keys[] = {
	{ "width", FAB_LK_WIDTH, set_width },
	{ "speed", FAB_LK_SPEED, set_speed },
	{ "cable_m", FAB_LK_CABLE_M, set_cable },
	{ "drop_prob", FAB_LK_DROP, set_drop },
	{ "ber", FAB_LK_BER, set_ber },
	{ "state", FAB_LK_STATE, set_state },
	{ "peer", FAB_LK_PEER, set_peer },
};

/* "NODE/PORT" (a port 1..254) into node and *port; 0 or -1. */
static int node_port(const char *v, char *node, size_t len, uint8_t *port)
{
	const char *slash = strrchr(v, '/');
	char *end;
	unsigned long q;

	if (!slash || slash == v || (size_t)(slash - v) >= len)
		return -1;
	q = strtoul(slash + 1, &end, 10);
	if (end == slash + 1 || *end || q < 1 || q > 254)
		return -1;
	memcpy(node, v, (size_t)(slash - v));
	node[slash - v] = 0;
	*port = (uint8_t)q;
	return 0;
}

static int set_link(struct fab_params *p, const char *kv, struct sim_diag *d)
{
	const char *close = strchr(kv, ']'), *eq = strchr(kv, '=');
	struct fab_link_set ls = { .port_lo = 0, .port_hi = 255 };
	char sel[128], key[32], err[256];
	size_t n;

	if (!close || close[1] != '.' || !eq || eq < close)
		return sim_diag_set(d, NULL, 0, 0,
				    "%s: expected link[NODE].KEY=VALUE or link[NODE/PORT].KEY=VALUE", kv);
	n = (size_t)(close - kv - 5);
	if (!n || n >= sizeof(sel))
		return sim_diag_set(d, NULL, 0, 0, "%s: expected a node (id, description, GUID or pattern) in link[...]", kv);
	memcpy(sel, kv + 5, n);
	sel[n] = 0;
	char *slash = strrchr(sel, '/');

	if (slash) {
		char *end;
		unsigned long lo = strtoul(slash + 1, &end, 10), hi = lo;

		if (*end == '-')
			hi = strtoul(end + 1, &end, 10);
		if (end == slash + 1 || *end || lo < 1 || hi < lo || hi > 254)
			return sim_diag_set(d, NULL, 0, 0,
					    "%s: '%s' is not a port or a range of ports (1..254, as 3 or 1-8)",
					    kv, slash + 1);
		ls.port_lo = (uint8_t)lo;
		ls.port_hi = (uint8_t)hi;
		*slash = 0;
	}
	if (!sel[0] || strlen(sel) >= sizeof(ls.node))
		return sim_diag_set(d, NULL, 0, 0, "%s: expected a node name of 1 to %zu characters", kv,
				    sizeof(ls.node) - 1);
	strcpy(ls.node, sel);
	n = (size_t)(eq - close - 2);
	if (!n || n >= sizeof(key))
		return sim_diag_set(d, NULL, 0, 0, "%s: expected a key after link[...]", kv);
	memcpy(key, close + 2, n);
	key[n] = 0;
	for (size_t i = 0; i < sizeof(link_keys) / sizeof(link_keys[0]); i++) {
		struct fab_params tmp = *p;

		if (strcmp(key, link_keys[i].name))
			continue;
		if (link_keys[i].set(&tmp, NULL, eq + 1, err, sizeof(err)))
			return sim_diag_set(d, NULL, 0, 0, "%s: %s", kv, err);
		if (p->nlink_sets == FAB_LINK_SETS)
			return sim_diag_set(d, NULL, 0, 0, "%s: at most %d link[...] settings", kv,
					    FAB_LINK_SETS);
		ls.key = (uint8_t)link_keys[i].key;
		if (ls.key == FAB_LK_PEER &&
		    (ls.port_lo != ls.port_hi || !ls.port_lo || strpbrk(ls.node, "*?[") ||
		     node_port(eq + 1, ls.peer, sizeof(ls.peer), &ls.peer_port) ||
		     strpbrk(ls.peer, "*?[")))
			return sim_diag_set(d, NULL, 0, 0,
					    "%s: a new cable joins one port to one port: expected link[NODE/PORT].peer=NODE/PORT (no pattern, no range)",
					    kv);
		ls.lanes = tmp.lanes;
		ls.speed = tmp.speed;
		ls.value = ls.key == FAB_LK_CABLE_M ? tmp.cable_m :
			   ls.key == FAB_LK_DROP || ls.key == FAB_LK_STATE ? tmp.drop_prob : tmp.ber;
		p->link_sets[p->nlink_sets++] = ls;
		return 0;
	}
	return sim_diag_set(d, NULL, 0, 0,
			    "%s: '%s' is not a key of one link (width, speed, cable_m, drop_prob, ber, state, peer)",
			    kv, key);
}

bool fab_link_set_matches(const struct fab_link_set *s, const struct net_node *n, int port)
{
	if (port < s->port_lo || port > s->port_hi)
		return false;
	if (!strcmp(s->node, n->id) || !strcmp(s->node, n->desc))
		return true;
	if (!strncmp(s->node, "0x", 2) || !strncmp(s->node, "0X", 2)) {
		char *end;
		unsigned long long g = strtoull(s->node, &end, 16);

		if (!*end && n->guid && g == n->guid)
			return true;
	}
	return strpbrk(s->node, "*?[") &&
	       (!fnmatch(s->node, n->id, 0) || !fnmatch(s->node, n->desc, 0));
}

void fab_link_set_format(const struct fab_link_set *s, char *buf, size_t len)
{
	char port[16] = "", val[32];

	if (s->port_lo == s->port_hi)
		snprintf(port, sizeof(port), "/%u", s->port_lo);
	else if (s->port_lo > 0 || s->port_hi < 255)
		snprintf(port, sizeof(port), "/%u-%u", s->port_lo, s->port_hi);
	switch ((enum fab_link_key)s->key) {
	case FAB_LK_WIDTH: snprintf(val, sizeof(val), "%ux", s->lanes); break;
	case FAB_LK_SPEED: snprintf(val, sizeof(val), "%s", link_speed_info(s->speed)->name); break;
	case FAB_LK_STATE: snprintf(val, sizeof(val), "%s", s->value > 0 ? "down" : "active"); break;
	case FAB_LK_PEER: snprintf(val, sizeof(val), "%.20s/%u", s->peer, s->peer_port); break;
	default: snprintf(val, sizeof(val), "%g", s->value); break;
	}
	snprintf(buf, len, "link[%s%s].%s=%s", s->node, port,
		 link_keys[s->key].name, val);
}

/* The one node a peer setting names (id, description or GUID), or -1
 * with d saying none or several. */
static int one_node(const struct net *n, const char *name, const char *what, struct sim_diag *d)
{
	struct fab_link_set s = { .port_lo = 0, .port_hi = 255 };
	int found = -1;

	snprintf(s.node, sizeof(s.node), "%s", name);
	for (int i = 0; i < n->nnodes; i++) {
		if (!fab_link_set_matches(&s, &n->nodes[i], 1))
			continue;
		if (found >= 0)
			return sim_diag_set(d, NULL, 0, 0, "%s: '%s' names more than one node (give its id or GUID)",
					    what, name);
		found = i;
	}
	if (found < 0)
		sim_diag_set(d, NULL, 0, 0, "%s: no node '%s' (an id, description or GUID)", what, name);
	return found;
}

/* The switches switch[...] adds: GUIDs after the fabric's largest. */
static int add_switches(struct net *n, const struct fab_params *p, struct sim_diag *d)
{
	uint64_t guid = 0;

	for (int i = 0; i < n->nnodes; i++)
		if (n->nodes[i].guid > guid)
			guid = n->nodes[i].guid;
	for (int k = 0; k < p->nswitch_adds; k++) {
		const struct fab_switch_add *a = &p->switch_adds[k];
		int ix;

		struct fab_link_set s = { .port_lo = 0, .port_hi = 255 };

		snprintf(s.node, sizeof(s.node), "%s", a->name);
		for (int i = 0; i < n->nnodes; i++)
			if (fab_link_set_matches(&s, &n->nodes[i], 1))
				return sim_diag_set(d, NULL, 0, 0,
						    "switch[%s].ports=%u: the fabric has a node '%s' already",
						    a->name, a->ports, a->name);
		ix = net_add_node(n, NET_SWITCH, a->ports, a->name, a->name, d);
		if (ix < 0)
			return -1;
		n->nodes[ix].guid = ++guid;
	}
	return 0;
}

/* The cables link[...].peer= adds, at the preset's rate unless a width or
 * speed setting names them too. */
static int add_cables(struct net *n, const struct fab_params *p, struct sim_diag *d)
{
	char what[160];

	for (int k = 0; k < p->nlink_sets; k++) {
		const struct fab_link_set *s = &p->link_sets[k];
		int a, b;

		if (s->key != FAB_LK_PEER)
			continue;
		fab_link_set_format(s, what, sizeof(what));
		a = one_node(n, s->node, what, d);
		b = a < 0 ? -1 : one_node(n, s->peer, what, d);
		if (b < 0)
			return -1;
		if (s->port_lo > n->nodes[a].nports || s->peer_port > n->nodes[b].nports) {
			const struct net_node *x = &n->nodes[s->port_lo > n->nodes[a].nports ? a : b];

			return sim_diag_set(d, NULL, 0, 0, "%s: %s has ports 1..%d", what, x->desc,
					    x->nports);
		}
		if (net_connect_at(n, a, s->port_lo, b, s->peer_port, "--set", 0, 0, d)) {
			char msg[sizeof(d->msg)];

			snprintf(msg, sizeof(msg), "%s", d->msg);
			return sim_diag_set(d, NULL, 0, 0, "%s: %s", what, msg);
		}
	}
	return 0;
}

int fab_link_sets_rates(struct net *n, const struct fab_params *p, struct sim_diag *d)
{
	bool used[FAB_LINK_SETS] = { false };
	char what[160];

	for (int a = 0; a < n->nnodes; a++) {
		for (int pa = 1; pa <= n->nodes[a].nports; pa++) {
			const struct net_port *x = &n->nodes[a].ports[pa];
			int b = x->remote_node, pb = x->remote_port;
			uint8_t lanes = x->lanes ? x->lanes : p->lanes;
			uint8_t speed = x->speed != LINK_SPEED_NONE ? x->speed : p->speed;
			bool hit = false;

			if (b < 0 || b < a || (b == a && pb < pa))
				continue;	/* each cable once */
			for (int k = 0; k < p->nlink_sets; k++) {
				const struct fab_link_set *s = &p->link_sets[k];

				if ((s->key != FAB_LK_WIDTH && s->key != FAB_LK_SPEED) ||
				    (!fab_link_set_matches(s, &n->nodes[a], pa) &&
				     !fab_link_set_matches(s, &n->nodes[b], pb)))
					continue;
				hit = used[k] = true;
				if (s->key == FAB_LK_WIDTH)
					lanes = s->lanes;
				else
					speed = s->speed;
			}
			if (hit)
				net_set_link_rate(n, a, pa, lanes, speed);
		}
	}
	for (int k = 0; k < p->nlink_sets; k++)
		if ((p->link_sets[k].key == FAB_LK_WIDTH || p->link_sets[k].key == FAB_LK_SPEED) &&
		    !used[k]) {
			fab_link_set_format(&p->link_sets[k], what, sizeof(what));
			return sim_diag_set(d, NULL, 0, 0,
					    "%s: no cable at those ports (a node's id, description or GUID, or a pattern of them)",
					    what);
		}
	return 0;
}

int fab_link_sets_cut(struct net *n, const struct fab_params *p, struct sim_diag *d)
{
	bool hit[FAB_LINK_SETS] = { false };
	char what[160];

	if (add_switches(n, p, d))
		return -1;
	/* each cable once, from its end with the lower (node, port) */
	for (int a = 0; a < n->nnodes; a++) {
		for (int pa = 1; pa <= n->nodes[a].nports; pa++) {
			struct net_port *x = &n->nodes[a].ports[pa];
			int b = x->remote_node, pb = x->remote_port;
			bool down = false;

			if (b < 0 || b < a || (b == a && pb < pa))
				continue;
			for (int k = 0; k < p->nlink_sets; k++) {
				const struct fab_link_set *s = &p->link_sets[k];

				if (s->key != FAB_LK_STATE ||
				    (!fab_link_set_matches(s, &n->nodes[a], pa) &&
				     !fab_link_set_matches(s, &n->nodes[b], pb)))
					continue;
				hit[k] = true;
				down = s->value > 0;	/* the last setting wins */
			}
			if (down) {
				struct net_port *y = &n->nodes[b].ports[pb];

				x->remote_node = y->remote_node = -1;
				x->remote_port = y->remote_port = -1;
			}
		}
	}
	for (int k = 0; k < p->nlink_sets; k++)
		if (p->link_sets[k].key == FAB_LK_STATE && !hit[k]) {
			fab_link_set_format(&p->link_sets[k], what, sizeof(what));
			return sim_diag_set(d, NULL, 0, 0,
					    "%s: no cable at those ports (a node's id, description or GUID, or a pattern of them)",
					    what);
		}
	return add_cables(n, p, d);
}

/* switch[NAME].ports=N: a switch of N ports (1..254) the file does not have */
static int set_switch(struct fab_params *p, const char *kv, struct sim_diag *d)
{
	const char *close = strchr(kv, ']');
	struct fab_switch_add a = { 0 };
	size_t n = close ? (size_t)(close - kv - 7) : 0;
	unsigned long ports;
	char *end;

	if (!close || strncmp(close, "].ports=", 8) || !n || n >= sizeof(a.name))
		return sim_diag_set(d, NULL, 0, 0,
				    "%s: expected switch[NAME].ports=N (a new switch, NAME of 1 to %zu characters)",
				    kv, sizeof(a.name) - 1);
	ports = strtoul(close + 8, &end, 10);
	if (end == close + 8 || *end || ports < 1 || ports > 254)
		return sim_diag_set(d, NULL, 0, 0, "%s: expected 1 to 254 ports, got '%s'", kv,
				    close + 8);
	if (p->nswitch_adds == FAB_SWITCH_ADDS)
		return sim_diag_set(d, NULL, 0, 0, "%s: at most %d switch[...] settings", kv,
				    FAB_SWITCH_ADDS);
	memcpy(a.name, kv + 7, n);
	a.name[n] = 0;
	if (strpbrk(a.name, "*?[/"))
		return sim_diag_set(d, NULL, 0, 0, "%s: a new switch's name is one name, not a pattern or a port",
				    kv);
	a.ports = (uint8_t)ports;
	p->switch_adds[p->nswitch_adds++] = a;
	return 0;
}

int fab_params_set(struct fab_params *p, const char *kv, struct sim_diag *d)
{
	if (kv && !strncmp(kv, "link[", 5))
		return set_link(p, kv, d);
	if (kv && !strncmp(kv, "switch[", 7))
		return set_switch(p, kv, d);
	return sim_param_set(tables, p, kv, "ibfab run --help-params", d);
}

/* ---- cross-field checks ----------------------------------------------- */

static int check_vlarb(const struct fab_params *p, const char *key,
		       const struct ib_vlarb_entry *t, int n, struct sim_diag *d)
{
	if (n > IB_VLARB_ENTRIES)
		return sim_diag_set(d, NULL, 0, 0, "%s: %d entries (at most %d)", key, n,
				    IB_VLARB_ENTRIES);
	for (int i = 0; i < n; i++)
		if (t[i].vl >= p->vls)
			return sim_diag_set(d, NULL, 0, 0,
					    "%s: entry %d names VL %u, but ib.vls is %u (VLs 0..%u)",
					    key, i + 1, t[i].vl, p->vls, p->vls - 1);
	return 0;
}

static int check_buffer(const char *key, uint32_t bytes, uint32_t mtu, struct sim_diag *d)
{
	uint32_t need = max_pkt_bytes(mtu);
	char a[32], b[32];

	if (bytes % IB_BLOCK_BYTES)
		return sim_diag_set(d, NULL, 0, 0, "%s: %u bytes is not a multiple of 64-byte blocks",
				    key, bytes);
	if (bytes > MAX_BUF_BYTES)
		return sim_diag_set(d, NULL, 0, 0,
				    "%s: %s is more than a receiver can advertise (%s, IBA 7.9.4.3)",
				    key, sim_fmt_size(bytes, a, sizeof(a)),
				    sim_fmt_size(MAX_BUF_BYTES, b, sizeof(b)));
	if (bytes < need)
		return sim_diag_set(d, NULL, 0, 0,
				    "%s: %s cannot hold one packet of ib.mtu=%u: it takes %u bytes "
				    "(%u payload + %u bytes of LRH, BTH, RETH, ICRC, VCRC, in 64-byte blocks)",
				    key, sim_fmt_size(bytes, a, sizeof(a)), mtu, need, mtu,
				    ib_wire_bytes(mtu, 1) - mtu);
	return 0;
}

int fab_params_check(const struct fab_params *p, struct sim_diag *d)
{
	uint16_t weighted = 0;
	uint32_t min_blocks;

	if (srv_params_check(&p->server, d))
		return -1;
	if (host_params_check(&p->host, d))
		return -1;
	{
		char err[256];

		if (dcqcn_params_check(&p->dcqcn, err, sizeof(err)) ||
		    ibcc_params_check(&p->ibcc, err, sizeof(err)))
			return sim_diag_set(d, NULL, 0, 0, "%s", err);
	}
	if (p->fabric >= FAB_NFABRICS)
		return sim_diag_set(d, NULL, 0, 0, "fabric: %u is not a fabric", p->fabric);
	/* Ethernet has 8 priorities (802.1Q PCP) and the SL-to-VL table gives
	 * the priority there; 7 carries CNPs, served first and never paused. */
	for (int sl = 0; fab_is_eth(p) && sl < FAB_NSL; sl++)
		if (p->sl2vl[sl] >= ETH_CNP_PRIO)
			return sim_diag_set(d, NULL, 0, 0,
					    "ib.sl2vl: SL %d maps to priority %u, but on fabric=%s data "
					    "priorities are 0..6 (802.1Q has 8; 7 carries CNPs)",
					    sl, p->sl2vl[sl], fab_fabric_names[p->fabric]);
	if (fab_is_eth(p) && p->eth.pfc_xon > p->eth.pfc_xoff)
		return sim_diag_set(d, NULL, 0, 0,
				    "eth.pfc_xon (%u bytes) is above eth.pfc_xoff (%u bytes): "
				    "a paused port would never resume", p->eth.pfc_xon, p->eth.pfc_xoff);
	if (fab_is_eth(p) && p->eth.kmin && p->eth.kmax && p->eth.kmax < p->eth.kmin)
		return sim_diag_set(d, NULL, 0, 0, "eth.kmax (%u bytes) is below eth.kmin (%u bytes)",
				    p->eth.kmax, p->eth.kmin);
	if (p->hca_ackreq_pkts & (p->hca_ackreq_pkts - 1))
		return sim_diag_set(d, NULL, 0, 0,
				    "hca.ackreq_pkts: %u is not a power of two (or 0: the last packet only)",
				    p->hca_ackreq_pkts);
	if (!link_width_valid(p->lanes))
		return sim_diag_set(d, NULL, 0, 0, "link.width: %u lanes is not an IB width", p->lanes);
	if (p->speed == LINK_SPEED_NONE || p->speed >= LINK_SPEED_COUNT)
		return sim_diag_set(d, NULL, 0, 0, "link.speed: not set");
	if (!(p->cable_m >= 0 && p->cable_m <= MAX_CABLE_M))
		return sim_diag_set(d, NULL, 0, 0, "link.cable_m: %g is out of range (0..%g)",
				    p->cable_m, MAX_CABLE_M);
	if (p->ps_per_m < LIGHT_PS_PER_M)
		return sim_diag_set(d, NULL, 0, 0,
				    "link.ps_per_m: %u is faster than light (%u ps/m)",
				    p->ps_per_m, LIGHT_PS_PER_M);
	if (p->mtu != 256 && p->mtu != 512 && p->mtu != 1024 && p->mtu != 2048 && p->mtu != 4096)
		return sim_diag_set(d, NULL, 0, 0, "ib.mtu: %u is not an IBA MTU", p->mtu);
	if (p->vls < 1 || p->vls > FAB_MAX_VLS)
		return sim_diag_set(d, NULL, 0, 0, "ib.vls: %u is out of range (1..%d)", p->vls,
				    FAB_MAX_VLS);
	for (int sl = 0; sl < FAB_NSL; sl++)
		if (p->sl2vl[sl] >= p->vls)
			return sim_diag_set(d, NULL, 0, 0,
					    "ib.sl2vl: SL %d maps to VL %u, but ib.vls is %u (VLs 0..%u)",
					    sl, p->sl2vl[sl], p->vls, p->vls - 1);
	if (check_vlarb(p, "vlarb.high", p->vlarb.high, p->vlarb.nhigh, d) ||
	    check_vlarb(p, "vlarb.low", p->vlarb.low, p->vlarb.nlow, d))
		return -1;
	/*
	 * A VL that some SL uses but neither table serves with weight > 0 is
	 * never picked by the arbiter (IBA 7.6.9): its packets would wait
	 * forever and the run could not finish.
	 */
	for (int i = 0; i < p->vlarb.nhigh; i++)
		if (p->vlarb.high[i].weight)
			weighted |= (uint16_t)(1u << p->vlarb.high[i].vl);
	for (int i = 0; i < p->vlarb.nlow; i++)
		if (p->vlarb.low[i].weight)
			weighted |= (uint16_t)(1u << p->vlarb.low[i].vl);
	for (int sl = 0; sl < FAB_NSL; sl++)
		if (!(weighted & (1u << p->sl2vl[sl])))
			return sim_diag_set(d, NULL, 0, 0,
					    "vlarb: VL %u (used by SL %d) has no entry with weight > 0 in "
					    "vlarb.high or vlarb.low, so nothing would ever be sent on it",
					    p->sl2vl[sl], sl);
	if (check_buffer("ib.buffer", p->vl_buf_bytes, p->mtu, d) ||
	    check_buffer("hca.buffer", p->hca_buf_bytes, p->mtu, d))
		return -1;
	if (p->vl15_buf_bytes < VL15_PKT_BYTES)
		return sim_diag_set(d, NULL, 0, 0,
				    "ib.vl15_buffer: %u bytes cannot hold one MAD packet (%d bytes)",
				    p->vl15_buf_bytes, VL15_PKT_BYTES);
	if (!p->fc_threshold && !p->fc_period_ns)
		return sim_diag_set(d, NULL, 0, 0,
				    "ib.fc_threshold=0 and ib.fc_period_ns=0: credits would never be returned");
	min_blocks = (p->vl_buf_bytes < p->hca_buf_bytes ? p->vl_buf_bytes : p->hca_buf_bytes) /
		     IB_BLOCK_BYTES;
	if (p->fc_threshold > min_blocks)
		return sim_diag_set(d, NULL, 0, 0,
				    "ib.fc_threshold: %u blocks is more than a buffer holds (%u blocks): "
				    "an update would never be due",
				    p->fc_threshold, min_blocks);
	return 0;
}

/* ---- listing ---------------------------------------------------------- */

void fab_params_print(const struct fab_params *p, FILE *out)
{
	sim_param_print(tables, p, out);
}
