/* SPDX-License-Identifier: MIT */
/*
 * coll_tune.c - what `algo=auto` and `proto=auto` mean on GPU servers:
 * NCCL's tuning model (src/graph/tuning.cc, NCCL 2.30), which estimates
 * each (algorithm, protocol)'s time as a latency plus the size over a
 * bandwidth and takes the least.
 *
 * For a collective of S bytes over nRanks GPUs on nNodes servers (NVLink
 * domains), with nCh search channels of bw GB/s each (one per NIC: 48 on
 * NDR, 24 on HDR; the graph search's speed for a 400 and a 200 Gb/s NIC),
 * nsteps = 2(nRanks-1) for an allreduce, nRanks-1 for allgather and
 * reducescatter, nRanks for broadcast and reduce:
 *
 *   ring  lat = base[p] + (nsteps - x) max(nvl[ring][p], ovh[p]) + x net[ring][p]
 *             x = inter-server steps: 2(nNodes-1) allreduce, nNodes-1 else
 *             (broadcast, reduce: base[p] + nsteps hw[p], hw the network's
 *             across servers, NVLink's on one)
 *             (x 1.4 for a Simple allreduce across servers when
 *             S / (2 nCh nRanks) >= 64: the ring's "plateau")
 *         busBw = nCh bw: Simple;  min(llMax, busBw / 2): LL;
 *                 min(0.92 busBw, nCh ll128Max): LL128
 *         algBw = busBw nRanks / nsteps
 *   tree  (allreduce) lat = base[p] + 2 ((nRanks/nNodes - 1) nvl[tree][p]
 *                                     + floor(log2 nNodes) net[tree][p])
 *         busBw = min(0.92 nCh bw, nCh treeMax), then
 *                 LL: min(busBw / 3.8, llMax);
 *                 LL128: min(busBw x (7/9 on one server, 120/128 across),
 *                            nCh treeLL128Max);
 *                 x treeCorrectionFactor[p][log2(S/64)] below 2^23 x 64
 *         algBw = busBw / 2
 *   time  = lat + S / (1000 algBw)  (us)
 *
 * with NCCL's tables: base latency (6.6 ring LL, 6.8 tree LL, 14 LL128,
 * 8.4 Simple), hardware latency per step by link, algorithm and protocol
 * (NVLink ring 0.6 / 1.9 / 3.4 us for LL / LL128 / Simple, tree 0.6 /
 * 1.25 / 4.0; network ring 2.7 / 4.0 / 14, tree 5.0 / 8.5 / 14; with one
 * GPU per server the network's tree figures for both), ovh the network's
 * overhead per step across servers (1 us on Intel and Arm hosts, 2 us on
 * AMD ones, times 3 for Simple; 0 on one server), and the bandwidth caps
 * below. LL128 is a candidate where NCCL enables it by default
 * (trace_tune.ll128). The candidates: ring, tree and, where the NVLink
 * switches reduce, NVLS (nvls_time) on one domain and NVLSTree
 * (nvlstree_time) across domains for an allreduce, and with CollNet
 * (SHARP) CollNetDirect (collnet_time) and, across domains, NVLS + SHARP
 * (nvls_sharp_time); the ring for
 * allgather, reducescatter, broadcast and reduce (NCCL's without NVLS for
 * them, PAT or CollNet); an all-to-all sends to every peer at once,
 * with Simple. NCCL_ALGO's and NCCL_PROTO's lists (trace_op.algos,
 * .protos) narrow them. docs/servers.md has the crossovers.
 */
#include "traces/coll.h"

#include <math.h>
#include <stdlib.h>

/* Bandwidth caps, [arch: Volta, Ampere, Hopper, Blackwell][nodes: 1, 2, more] */
static const double tree_max_bw[4][3] = {	/* perChMaxTreeBws */
	{ 26.5, 18.5, 10.0 }, { 24.0, 23.6, 17.8 }, { 38.7, 41.4, 36.0 }, { 70.0, 42.8, 24.0 },
};
static const double ring_ll128_max_bw[4][3] = {	/* perChMaxRingLL128Bws */
	{ 20.0, 20.0, 20.0 }, { 20.0, 20.0, 20.0 }, { 36.7, 36.7, 36.7 }, { 40.0, 40.0, 40.0 },
};
static const double tree_ll128_max_bw[4][3] = {	/* perChMaxTreeLL128Bws */
	{ 20.0, 20.0, 20.0 }, { 20.0, 20.0, 20.0 }, { 36.7, 36.7, 29.0 }, { 55.6, 31.67, 20.0 },
};
/* llMaxBws, a whole communicator's: on one server by GPU (rows 0-3), across
 * servers by CPU (row 0 Intel and others, row 1 AMD) */
static const double ll_max_bw[4][3] = {
	{ 39.0, 39.0, 20.4 }, { 87.7, 22.5, 19.0 }, { 141.0, 45.0, 35.0 }, { 282.0, 90.0, 70.0 },
};

/* treeCorrectionFactor[protocol][log2(size / 64)], 64 B .. 256 MiB */
static const double tree_corr[TRACE_NPROTO][23] = {
	[TRACE_PROTO_LL] = { 1, 1, 1, 1, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9,
			     1, 1, 1, 1 },
	[TRACE_PROTO_LL128] = { 1, 1, 1, 1, 1, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9,
				.9, .9, .9, 1, 1 },
	[TRACE_PROTO_SIMPLE] = { .9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7,
				 .8, .7, .7, .8, .9, .9 },
};

/* baseLat[ring, tree][protocol], us */
static const double base_lat[2][TRACE_NPROTO] = {
	{ [TRACE_PROTO_LL] = 6.6, [TRACE_PROTO_LL128] = 14.0, [TRACE_PROTO_SIMPLE] = 8.4 },
	{ [TRACE_PROTO_LL] = 6.8, [TRACE_PROTO_LL128] = 14.0, [TRACE_PROTO_SIMPLE] = 8.4 },
};
/* hwLat[NVLink, network][ring, tree][protocol], us */
static const double hw_lat[2][2][TRACE_NPROTO] = {
	{ { [TRACE_PROTO_LL] = 0.6, [TRACE_PROTO_LL128] = 1.9, [TRACE_PROTO_SIMPLE] = 3.4 },
	  { [TRACE_PROTO_LL] = 0.6, [TRACE_PROTO_LL128] = 1.25, [TRACE_PROTO_SIMPLE] = 4.0 } },
	{ { [TRACE_PROTO_LL] = 2.7, [TRACE_PROTO_LL128] = 4.0, [TRACE_PROTO_SIMPLE] = 14.0 },
	  { [TRACE_PROTO_LL] = 5.0, [TRACE_PROTO_LL128] = 8.5, [TRACE_PROTO_SIMPLE] = 14.0 } },
};
enum { NVL, NET };
enum { RING, TREE };

/* The NVLS graph search's speeds per channel within a server, GB/s
 * (src/graph/search.cc: sm90 and sm100 intra-node speeds; Volta and Ampere
 * have no NVLS) */
static const double nvls_speeds[4][12] = {
	[2] = { 60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3 },
	[3] = { 90, 80, 70, 60, 50, 45, 40, 30, 24, 20, 19, 18 },
};

/*
 * NVLS on one NVLink domain of n GPUs (tuning.cc, search.cc): the NVLS
 * graph has one channel per GPU (at most 32), each headed by one GPU; a
 * channel of speed s loads every GPU's NVLink with s and its head's with s
 * more, so the search's speed is the fastest s with (channels + 1) s
 * within the link. busBw = channels x s x nvlsEfficiency x (channels -
 * 1)/channels x 2 (an allreduce pipelines two operations); latency 25 us
 * (hwLat[NVLINK][NVLS][Simple]), no base latency. -1 where NCCL has none.
 */
static uint32_t ilog2(uint64_t x)
{
	uint32_t l = 0;

	while (x >>= 1)
		l++;
	return l;
}

static double nvls_speed(const struct trace_tune *tu, uint32_t nch)
{
	if (!(tu->nvls_eff > 0) || (tu->arch & 3) < 2 || nch < 2)
		return 0;
	for (size_t i = 0; i < 12; i++)
		if (nvls_speeds[tu->arch & 3][i] > 0 &&
		    (nch + 1) * nvls_speeds[tu->arch & 3][i] <= tu->nvlink_gbps)
			return nvls_speeds[tu->arch & 3][i];
	return 0;
}

static double nvls_time(const struct trace_tune *tu, uint32_t nranks, uint64_t bytes)
{
	const uint32_t nch = nranks < 32 ? nranks : 32;
	const double s = nvls_speed(tu, nch);
	double busbw;

	if (!s)
		return -1;
	busbw = nch * s * tu->nvls_eff * (nch - 1.0) / nch * 2.0;
	return 25.0 + (double)bytes / (1000.0 * busbw * nranks / (2.0 * (nranks - 1)));
}

/* perChMaxNVLSTreeBws, Hopper and Blackwell [nodes: 1, 2, more] (none on one node) */
static const double nvlstree_max_bw[4][3] = {
	[2] = { 0, 57.7, 45.5 }, [3] = { 0, 96.0, 80.0 },
};

/*
 * NVLSTree across nnodes NVLink domains of G GPUs each (tuning.cc): the
 * NVLS graph (min(G, 32) channels, each at the NVLS search speed s within
 * a server and the NIC's speed between them) with a channel's bandwidth
 * min(2 s nvlsEfficiency (nch-1)/nch, NIC x 2 on two nodes (each head
 * both sends and receives half the data: the two trees), the per-channel
 * cap); algBw = busBw nRanks / (2 (nRanks - 1)); latency NVLink's 25 us
 * plus 2 log2(nnodes) network steps of 20.9 us (hwLat[NET][NVLSTree]),
 * no base latency. NCCL also scales it by treeCorrectionFactor on
 * Blackwell with x86 hosts; the Blackwell preset's Grace is Arm.
 */
static double nvlstree_time(const struct trace_tune *tu, uint32_t nranks, uint32_t nnodes,
			    uint64_t bytes)
{
	const uint32_t G = nranks / nnodes, nch = G < 32 ? G : 32;
	const uint32_t ix = nnodes <= 2 ? 1 : 2;
	const double s = nvls_speed(tu, nch);
	double bw, busbw;

	if (!s || nranks % nnodes || !nvlstree_max_bw[tu->arch & 3][ix])
		return -1;
	bw = fmin(fmin(s * tu->nvls_eff * (nch - 1.0) / nch * 2.0, tu->bw * (nnodes <= 2 ? 2 : 1)),
		  nvlstree_max_bw[tu->arch & 3][ix]);
	busbw = nch * bw;
	return 25.0 + 2.0 * ilog2(nnodes) * 20.9 +
	       (double)bytes / (1000.0 * busbw * nranks / (2.0 * (nranks - 1)));
}

/*
 * With CollNet (SHARP), NCCL's NVLS across nnodes domains is NVLS + SHARP
 * (tuning.cc): the NVLS graph's channels (min(G, 32)) at the smaller of
 * its NVLink share 2 s nvlsEfficiency (nch-1)/nch and its network speed
 * bwInter - the NIC's (the search's second pass raises bwInter from s up
 * to the NIC, below 2 s); busBw = nch bw, algBw = busBw nRanks / (2
 * (nRanks - 1)); latency NVLink's 25 us plus one network latency of 18 us
 * (hwLat[NET][NVLS]), no base latency. The algorithm bandwidth, GB/s, 0
 * where NCCL has none (NVLS needs two GPUs a domain).
 */
double coll_tune_nvls_sharp_algbw(const struct trace_tune *tu, uint32_t nranks, uint32_t nnodes)
{
	const uint32_t G = nnodes ? nranks / nnodes : 0, nch = G < 32 ? G : 32;
	const double s = nvls_speed(tu, nch);

	if (!s || nnodes < 2 || nranks % nnodes || !tu->collnet)
		return 0;
	return nch * fmin(2.0 * s * tu->nvls_eff * (nch - 1.0) / nch, fmin(tu->bw, 2 * s)) *
	       nranks / (2.0 * (nranks - 1));
}

static double nvls_sharp_time(const struct trace_tune *tu, uint32_t nranks, uint32_t nnodes,
			      uint64_t bytes)
{
	const double algbw = coll_tune_nvls_sharp_algbw(tu, nranks, nnodes);

	if (!(algbw > 0))
		return -1;
	return 25.0 + 18.0 + (double)bytes / (1000.0 * algbw);
}

/*
 * CollNetDirect (tuning.cc; Simple only; with CollNet, across at least
 * NCCL_COLLNET_NODE_THRESHOLD = 2 servers with NVSwitches): its graph has
 * one channel per head GPU, at most NCCL_MAX_DIRECT_ARITY + 1 = 8, at the
 * NIC's speed between servers (bwInter) and, inside, a bwIntra the
 * search's second pass raises through its speeds up to twice that while
 * NVLink carries 2 bwIntra (each GPU sends its head's share to every other
 * and, as head, the result back: search.cc) - tuning.cc takes bwIntra
 * for CollNet. busBw = nch bwIntra / f, f = ppn/nch - (ppn/nch - 1)/2
 * (one NIC per GPU: 1), x 0.85 from Hopper on; algBw = busBw / 2;
 * latency 2 (min(1, ppn-1) 3.7 + (ppn-1) 0.4) + 31 us (NVLink's 3.7 us,
 * 0.4 us a GPU of the server, the network's 31; one GPU per server: the
 * tree's 14), no base latency. CollNetChain, whose graph is a chain
 * through the server, is not lowered by ibfab: on the presets (one NIC per
 * GPU) CollNetDirect has its bandwidth or more and less latency
 * (2 (ppn-1) 2.8 + 30 us), so NCCL would not choose it there.
 */
static const double inter_speeds[4][20] = {	/* the search's inter-node speeds */
	[0] = { 48, 30, 28, 24, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3, 2.4, 1.2, 0.24, 0.12 },
	[1] = { 48, 30, 28, 24, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3, 2.4, 1.2, 0.24, 0.12 },
	[2] = { 48, 45, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12 },
	[3] = { 96, 86, 80, 48, 45.1, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24,
		0.12 },
};

static double collnet_time(const struct trace_tune *tu, uint32_t nranks, uint32_t nnodes,
			   uint64_t bytes)
{
	const uint32_t ppn = nnodes ? nranks / nnodes : 0, nch = ppn < 8 ? ppn : 8;
	const double *sp = inter_speeds[tu->arch & 3];
	double intra = 0, f, busbw;

	if (!tu->collnet || nnodes < 2 || !ppn || nranks % nnodes)
		return -1;
	for (size_t i = 0; i < 20 && sp[i] > 0 && !intra; i++)
		if (sp[i] <= 2 * tu->bw && 2 * sp[i] <= tu->nvlink_gbps)
			intra = sp[i];
	if (!(intra > 0))
		return -1;
	f = (double)ppn / nch;
	f -= (f - 1) / 2;
	busbw = nch * intra / f * ((tu->arch & 3) >= 2 ? 0.85 : 1.0);
	return 2.0 * ((ppn > 1 ? 3.7 : 0.0) + (ppn - 1.0) * 0.4) + (ppn == 1 ? 14.0 : 31.0) +
	       (double)bytes / (1000.0 * busbw * 0.5);
}

double trace_tune_ll_channel_gbps(const struct trace_tune *tu)
{
	return tu->nchannels ? ll_max_bw[tu->arch & 3][0] / tu->nchannels : 0;
}

double coll_tune_time(const struct trace_tune *tu, enum trace_coll coll, enum trace_algo algo,
		      enum trace_proto proto, uint32_t nranks, uint32_t nnodes, uint64_t bytes)
{
	const double nch = tu->nchannels, n = nranks;
	const uint32_t ix = nnodes <= 2 ? nnodes - 1 : 2, arch = tu->arch & 3;
	const int p = proto;
	const bool tree = algo == TRACE_ALGO_TREE;
	/* LL's cap: by GPU on one server, by CPU across servers */
	const double llmax = ll_max_bw[nnodes == 1 ? arch : tu->amd ? 1 : 0][ix];
	double lat, busbw, algbw, nsteps, intra, inter;

	if (algo == TRACE_ALGO_NVLS || algo == TRACE_ALGO_NVLSTREE || algo == TRACE_ALGO_COLLNET) {
		/* Simple allreduces: NVLS on one NVLink domain, NVLS + SHARP
		 * across them (with CollNet: none without); NVLSTree across
		 * domains only; CollNetDirect */
		if (coll != TRACE_ALLREDUCE || proto != TRACE_PROTO_SIMPLE || !nnodes)
			return -1;
		if (algo == TRACE_ALGO_COLLNET)
			return collnet_time(tu, nranks, nnodes, bytes);
		if (algo == TRACE_ALGO_NVLSTREE)
			return nnodes == 1 ? -1 : nvlstree_time(tu, nranks, nnodes, bytes);
		return nnodes == 1 ? nvls_time(tu, nranks, bytes) :
				     nvls_sharp_time(tu, nranks, nnodes, bytes);
	}
	if (nranks < 2 || !nnodes || !nch || proto == TRACE_PROTO_AUTO ||
	    (algo != TRACE_ALGO_RING && !(tree && coll == TRACE_ALLREDUCE)) ||
	    (proto == TRACE_PROTO_LL128 && !tu->ll128))
		return -1;
	nsteps = coll == TRACE_ALLREDUCE ? 2 * (n - 1) :
		 coll == TRACE_ALLGATHER || coll == TRACE_REDUCESCATTER ? n - 1 : n;
	busbw = nch * tu->bw;
	if (tree) {
		busbw = fmin(busbw * 0.92, nch * tree_max_bw[arch][ix]);
		if (proto == TRACE_PROTO_LL)
			busbw = fmin(busbw / 3.8, llmax);
		else if (proto == TRACE_PROTO_LL128)
			busbw = fmin(busbw * (nnodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
				     nch * tree_ll128_max_bw[arch][ix]);
		if (bytes >= 64 && ilog2(bytes / 64) < 23)
			busbw *= tree_corr[p][ilog2(bytes / 64)];
		algbw = busbw * 0.5;
	} else {
		if (proto == TRACE_PROTO_LL)
			busbw = fmin(llmax, busbw * 0.5);
		else if (proto == TRACE_PROTO_LL128)
			busbw = fmin(busbw * 0.92, nch * ring_ll128_max_bw[arch][ix]);
		algbw = busbw * n / nsteps;
	}
	/* one GPU per server: every step's latency is exposed, the network's
	 * tree figure for both algorithms */
	intra = hw_lat[NVL][tree][p];
	inter = hw_lat[NET][nranks == nnodes ? TREE : tree][p];
	lat = base_lat[tree][p];
	if (tree) {
		lat += 2 * ((double)(nranks / nnodes - 1) * intra + (double)ilog2(nnodes) * inter);
	} else if (coll == TRACE_BROADCAST || coll == TRACE_REDUCE) {
		/* the channels differ (rotated on servers): a latency a step,
		 * the network's across servers; Simple's is the tree's */
		lat += nsteps * hw_lat[nnodes > 1 ? NET : NVL][proto == TRACE_PROTO_SIMPLE][p];
	} else {
		const double ovh = nnodes > 1 ? (tu->amd ? 2.0 : 1.0) *
						(proto == TRACE_PROTO_SIMPLE ? 3 : 1) : 0;
		const double x = nnodes == 1 ? 0 :
				 coll == TRACE_ALLREDUCE ? 2.0 * (nnodes - 1) : nnodes - 1.0;

		lat += (nsteps - x) * fmax(intra, ovh) + x * inter;
		/* the ring's plateau, over NCCL's execution channels (twice the
		 * search's) */
		if (proto == TRACE_PROTO_SIMPLE && nnodes > 1 && coll == TRACE_ALLREDUCE &&
		    bytes / (2 * (uint64_t)tu->nchannels * nranks) >= 64)
			lat *= 1.4;
	}
	return lat + (double)bytes / (1000.0 * algbw);
}

double trace_tune_base_us(enum trace_algo algo, enum trace_proto proto)
{
	if ((algo != TRACE_ALGO_RING && algo != TRACE_ALGO_TREE) || proto == TRACE_PROTO_AUTO)
		return 0;
	return base_lat[algo == TRACE_ALGO_TREE][proto];
}

struct coll_tune_choice coll_tune_pick(const struct trace_tune *tu, enum trace_coll coll,
				       enum trace_algo algo, uint32_t nranks, uint32_t nnodes,
				       uint64_t bytes, uint8_t protos, uint16_t algos)
{
	/* NCCL's order: tree, ring, CollNetDirect, NVLS, NVLSTree, then LL,
	 * LL128, Simple; the first of equal times stays */
	static const enum trace_algo cand[] = { TRACE_ALGO_TREE, TRACE_ALGO_RING, TRACE_ALGO_COLLNET,
						TRACE_ALGO_NVLS, TRACE_ALGO_NVLSTREE };
	static const enum trace_proto order[] = { TRACE_PROTO_LL, TRACE_PROTO_LL128,
						  TRACE_PROTO_SIMPLE };
	struct coll_tune_choice best = { algo, TRACE_PROTO_AUTO, -1 };

	if (algo != TRACE_ALGO_AUTO && algo != TRACE_ALGO_RING && algo != TRACE_ALGO_TREE)
		return best;	/* ibfab's own, CollNet, NVLS: Simple */
	switch (coll) {
	case TRACE_ALLREDUCE:
	case TRACE_ALLGATHER:
	case TRACE_REDUCESCATTER:
	case TRACE_BROADCAST:
	case TRACE_REDUCE:
		for (size_t a = 0; a < SIM_ARRAY_SIZE(cand); a++)
			for (size_t k = 0; k < SIM_ARRAY_SIZE(order); k++) {
				double t;

				if ((algo != TRACE_ALGO_AUTO && algo != cand[a]) ||
				    (algos && !(algos & (1u << cand[a]))) ||
				    (protos && !(protos & (1u << order[k]))))
					continue;
				t = coll_tune_time(tu, coll, cand[a], order[k], nranks, nnodes, bytes);
				if (t >= 0 && (best.us < 0 || t < best.us))
					best = (struct coll_tune_choice){ cand[a], order[k], t };
			}
		return best;
	case TRACE_ALLTOALL:
		/* every peer at once: NCCL's grouped sends and receives, which
		 * PXN gathers on the receivers' rails */
		if (algo == TRACE_ALGO_AUTO)
			best.algo = TRACE_ALGO_DIRECT;
		return best;
	default:
		return best;	/* the barrier: ibfab's own */
	}
}

int trace_tune_ops(struct trace *t)
{
	int32_t *seen, maxg = 0;
	uint32_t stamp = 0, *cnt;

	if (!t->rank_group || !t->tune.nchannels)
		return 0;
	for (int32_t r = 0; r < t->nranks; r++)
		if (t->rank_group[r] > maxg)
			maxg = t->rank_group[r];
	seen = malloc(((size_t)maxg + 1) * sizeof(*seen));
	cnt = malloc(((size_t)maxg + 1) * sizeof(*cnt));
	if (!seen || !cnt) {
		free(seen);
		free(cnt);
		return -1;
	}
	for (int32_t g = 0; g <= maxg; g++)
		seen[g] = -1;
	for (size_t i = 0; i < t->nops; i++) {
		struct trace_op *o = &t->ops[i];
		const struct trace_comm *cm;
		uint32_t nodes = 0;
		bool even = true;	/* as many of its ranks on every server */
		uint16_t algos;

		if (o->kind != TRACE_COLL ||
		    (o->algo != TRACE_ALGO_AUTO && o->proto != TRACE_PROTO_AUTO))
			continue;
		cm = &t->comms[o->comm];
		stamp++;
		/* the servers (NVLink domains) the communicator spans; a rank
		 * in none is a node of its own */
		for (uint32_t k = 0; k < cm->n; k++) {
			int32_t g = t->rank_group[cm->ranks[k]];

			if (g < 0 || seen[g] != (int32_t)stamp) {
				nodes++;
				if (g >= 0) {
					seen[g] = (int32_t)stamp;
					cnt[g] = 0;
				}
			}
			even &= g >= 0;
			if (g >= 0)
				cnt[g]++;
		}
		for (uint32_t k = 1; even && k < cm->n; k++)
			even = cnt[t->rank_group[cm->ranks[k]]] == cnt[t->rank_group[cm->ranks[0]]];
		/* NVLS, NVLSTree and CollNet want as many GPUs on every server
		 * (NCCL's and ibfab's lowerings alike): not candidates else */
		algos = o->algos;
		if (!even) {
			algos = (uint16_t)((algos ? algos : 0xffffu) &
					   ~((1u << TRACE_ALGO_NVLS) | (1u << TRACE_ALGO_NVLSTREE) |
					     (1u << TRACE_ALGO_COLLNET)));
			if (!algos)	/* none left (0 would be all): the default stays */
				algos = 1u << TRACE_ALGO_AUTO;
		}
		struct trace_tune tu = t->tune;

		/* CollNet: for every op with ib.sharp=on, or this one asked */
		tu.collnet = t->nagg > 0 && (tu.collnet || o->collnet);
		struct coll_tune_choice ch = coll_tune_pick(&tu, o->coll, o->algo, cm->n, nodes,
							    o->bytes, o->protos, algos);

		if (o->algo == TRACE_ALGO_AUTO && ch.algo != TRACE_ALGO_AUTO) {
			o->algo = ch.algo;
			o->auto_algo = true;
		}
		if (o->proto == TRACE_PROTO_AUTO && ch.proto != TRACE_PROTO_AUTO) {
			o->proto = ch.proto;
			o->auto_proto = true;
		}
	}
	free(seen);
	free(cnt);
	return 0;
}
