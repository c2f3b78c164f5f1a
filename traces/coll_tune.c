/* SPDX-License-Identifier: MIT */
/*
 * coll_tune.c - what `algo=auto` means on GPU servers: NCCL's tuning model
 * (src/graph/tuning.cc, NCCL 2.30), which estimates each algorithm's time
 * as a latency plus the size over a bandwidth and takes the least.
 *
 * For an allreduce of S bytes over nRanks GPUs on nNodes servers (NVLink
 * domains), with nCh search channels of bw GB/s each (one per NIC: 48 on
 * NDR, 24 on HDR; the graph search's speed for a 400 and a 200 Gb/s NIC):
 *
 *   ring  lat = 8.4 + (2(nRanks-1) - 2(nNodes-1)) max(3.4, ovh) + 2(nNodes-1) 14
 *             (x 1.4 across servers when S / (nCh nRanks) >= 64: the "plateau")
 *         busBw = nCh bw;  algBw = busBw nRanks / (2(nRanks-1))
 *   tree  lat = 8.4 + 2 ((nRanks/nNodes - 1) 4.0 + floor(log2 nNodes) 14)
 *         busBw = min(0.92 nCh bw, nCh perChMaxTreeBw[arch][nodes]),
 *                 x treeCorrectionFactor[Simple][log2(S/64)] below 2^23 x 64;
 *         algBw = busBw / 2
 *   time  = lat + S / (1000 algBw)  (us)
 *
 * baseLat 8.4 us (Simple), hwLat per hop of the Simple protocol: NVLink
 * 3.4 (ring) and 4.0 (tree), network 14; ovh, the network's overhead per
 * step, 3 x 1 us on Intel and Arm hosts, 3 x 2 us on AMD (getNetOverhead,
 * times 3 for Simple), 0 on one server. Only the Simple protocol is
 * modelled (LL and LL128 are not), so the choice is among Simple's: ring
 * or tree for an allreduce; allgather and reducescatter are rings, as NCCL
 * runs them without NVLS or PAT; an all-to-all sends to every peer at
 * once. docs/servers.md has the crossovers.
 */
#include "traces/coll.h"

#include <math.h>
#include <stdlib.h>

/* perChMaxTreeBws[arch][nodes index: 1, 2, more] (tuning.cc) */
static const double tree_max_bw[4][3] = {
	{ 26.5, 18.5, 10.0 },	/* Volta */
	{ 24.0, 23.6, 17.8 },	/* Ampere */
	{ 38.7, 41.4, 36.0 },	/* Hopper */
	{ 70.0, 42.8, 24.0 },	/* Blackwell */
};

/* treeCorrectionFactor[Simple][log2(size / 64)], 64 B .. 256 MiB */
static const double tree_corr[23] = {
	.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9,
};

#define BASE_LAT 8.4		/* baseLat[Ring, Tree][Simple] */
#define NVL_RING_LAT 3.4	/* hwLat[NVLINK][Ring][Simple] */
#define NVL_TREE_LAT 4.0	/* hwLat[NVLINK][Tree][Simple] */
#define NET_LAT 14.0		/* hwLat[NET][Ring, Tree][Simple] */

static uint32_t ilog2(uint32_t x)
{
	uint32_t l = 0;

	while (x >>= 1)
		l++;
	return l;
}

double coll_tune_time(const struct trace_tune *tu, enum trace_algo algo, uint32_t nranks,
		      uint32_t nnodes, uint64_t bytes)
{
	const double nch = tu->nchannels, bw = tu->bw;
	double lat, busbw, algbw;

	if (nranks < 2 || !nnodes)
		return 0;
	if (algo == TRACE_ALGO_TREE) {
		const uint32_t ix = nnodes <= 2 ? nnodes - 1 : 2;

		lat = BASE_LAT + 2 * ((double)(nranks / nnodes - 1) * NVL_TREE_LAT +
				      (double)ilog2(nnodes) * NET_LAT);
		busbw = fmin(0.92 * nch * bw, nch * tree_max_bw[tu->arch & 3][ix]);
		if (bytes >= 64) {
			uint32_t ls = ilog2((uint32_t)(bytes / 64 > UINT32_MAX ? UINT32_MAX : bytes / 64));

			if (ls < 23)
				busbw *= tree_corr[ls];
		}
		algbw = busbw * 0.5;
	} else {
		const double ovh = nnodes > 1 ? 3.0 * (tu->amd ? 2.0 : 1.0) : 0;
		const double inter = 2.0 * (nnodes - 1), steps = 2.0 * (nranks - 1);

		lat = BASE_LAT + (steps - inter) * fmax(NVL_RING_LAT, ovh) + inter * NET_LAT;
		if (nnodes > 1 && bytes / ((uint64_t)tu->nchannels * nranks) >= 64)
			lat *= 1.4;
		busbw = nch * bw;
		algbw = busbw * nranks / steps;
	}
	return lat + (double)bytes / (1000.0 * algbw);
}

enum trace_algo coll_tune_pick(const struct trace_tune *tu, enum trace_coll coll,
			       uint32_t nranks, uint32_t nnodes, uint64_t bytes)
{
	switch (coll) {
	case TRACE_ALLREDUCE:
		/* the least time; NCCL tries Tree before Ring and keeps the
		 * first of equal times */
		return coll_tune_time(tu, TRACE_ALGO_RING, nranks, nnodes, bytes) <
		       coll_tune_time(tu, TRACE_ALGO_TREE, nranks, nnodes, bytes) ?
		       TRACE_ALGO_RING : TRACE_ALGO_TREE;
	case TRACE_ALLGATHER:
	case TRACE_REDUCESCATTER:
	case TRACE_BROADCAST:
	case TRACE_REDUCE:
		return TRACE_ALGO_RING;	/* NCCL's only one of these without NVLS, PAT, CollNet */
	case TRACE_ALLTOALL:
		/* every peer at once: NCCL's grouped sends and receives, which
		 * PXN gathers on the receivers' rails */
		return TRACE_ALGO_DIRECT;
	default:
		return TRACE_ALGO_AUTO;	/* the barrier: ibfab's own */
	}
}

int trace_tune_ops(struct trace *t)
{
	int32_t *seen, maxg = 0;
	uint32_t stamp = 0;

	if (!t->rank_group || !t->tune.nchannels)
		return 0;
	for (int32_t r = 0; r < t->nranks; r++)
		if (t->rank_group[r] > maxg)
			maxg = t->rank_group[r];
	seen = malloc(((size_t)maxg + 1) * sizeof(*seen));
	if (!seen)
		return -1;
	for (int32_t g = 0; g <= maxg; g++)
		seen[g] = -1;
	for (size_t i = 0; i < t->nops; i++) {
		struct trace_op *o = &t->ops[i];
		const struct trace_comm *cm;
		uint32_t nodes = 0;

		if (o->kind != TRACE_COLL || o->algo != TRACE_ALGO_AUTO)
			continue;
		cm = &t->comms[o->comm];
		stamp++;
		/* the servers (NVLink domains) the communicator spans; a rank
		 * in none is a node of its own */
		for (uint32_t k = 0; k < cm->n; k++) {
			int32_t g = t->rank_group[cm->ranks[k]];

			if (g < 0 || seen[g] != (int32_t)stamp) {
				nodes++;
				if (g >= 0)
					seen[g] = (int32_t)stamp;
			}
		}
		o->algo = coll_tune_pick(&t->tune, o->coll, cm->n, nodes, o->bytes);
		o->auto_algo = o->algo != TRACE_ALGO_AUTO;
	}
	free(seen);
	return 0;
}
