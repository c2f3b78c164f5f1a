/* SPDX-License-Identifier: MIT */
/*
 * coll_ring.c - ring algorithms, as NCCL runs them (src/device/all_reduce.h
 * and friends): allreduce as a reduce-scatter then an all-gather around a
 * ring, the two halves alone as reducescatter and allgather, and pipelined
 * chains for broadcast and reduce.
 *
 * Ring allreduce over N ranks cuts the buffer into N segments. In round k
 * (k = 0 .. N-2, the reduce-scatter) the rank at ring position i sends
 * segment (i - 1 - k) mod N to position i + 1, which adds its own
 * contribution: after N-1 rounds position i holds segment i complete. In
 * rounds N-1 .. 2N-3 (the all-gather) each position forwards the complete
 * segment it got last (first its own), and the receiver overwrites its
 * copy. That is 2(N-1) steps of S/N bytes per rank, every link of the ring
 * busy in every round: T = 2(N-1)(a + S/(N B)) (numbers.md), the
 * bandwidth-optimal allreduce (Patarasuk & Yuan 2009). Rank i ends the
 * reduce-scatter with segment i, which is what ncclReduceScatter returns.
 *
 * Chunks and channels. `channels` splits the buffer into Ch parts, each
 * reduced by its own ring (NCCL's channels); `chunks` cuts each segment
 * into P pieces that go round the ring independently, so a rank forwards
 * piece q while piece q+1 is still arriving (NCCL's loop over chunkSize).
 * Each (channel, piece) is a chunk flow of its own: 2(N-1) steps of
 * S/(N Ch P) bytes. The flows share the ring's links, so the bandwidth term
 * stays 2(N-1) S/(N B); what pipelining buys is hiding the per-step
 * latency a behind the other flows' data (docs/collectives.md). Every
 * channel follows the communicator's rank order: on one NIC per rank,
 * NCCL's search also gives every channel the same ring (a rotated ring has
 * the same edges); channels then mean more, smaller transfers in flight.
 * On GPU servers (trace.rank_group) channel h's ring instead visits each
 * server's GPUs rotated by h, so that channel h enters each server at its
 * h-th GPU and leaves it from the one before: with PXN, on rail h. NCCL's
 * rings on such servers each enter and leave a server through one NIC
 * (its graph search, src/graph/search.cc); the segments follow the
 * members, so block j still belongs to member j.
 *
 * A step waits for the step that brought its data (the previous round's
 * transfer into the sender) and for the sender's own previous step in the
 * flow, which keeps each connection in order as NCCL's FIFO does and ties
 * every step of a rank to its entry.
 *
 * The chains (broadcast from the root along the ring, reduce toward it)
 * are the same idea with one segment: N-1 hops, and with P pieces the
 * pipeline T = (N - 2 + P)(a + S/(P B)). On GPU servers channel h's chain
 * runs along channel h's rotated ring from the root, as NCCL's broadcast
 * follows each channel's ring (src/device/broadcast.h).
 */
#include "traces/coll.h"

#include <inttypes.h>

/* ---- allreduce, reducescatter, allgather ---------------------------------- */

static uint32_t ring_nchunks(const struct coll_ctx *c)
{
	uint64_t k = (uint64_t)c->channels * c->n * c->pieces;

	return k > UINT32_MAX / 2 ? 0 : (uint32_t)k;
}

/* Reduce-scatter and all-gather rounds of the collective. */
static void ring_rounds(const struct coll_ctx *c, uint32_t *nrs, uint32_t *nag)
{
	uint32_t n1 = c->n - 1;

	*nrs = c->op->coll == TRACE_ALLGATHER ? 0 : n1;
	*nag = c->op->coll == TRACE_REDUCESCATTER ? 0 : n1;
}

static uint64_t ring_nsteps(const struct coll_ctx *c)
{
	uint32_t nrs, nag;

	ring_rounds(c, &nrs, &nag);
	return (uint64_t)(nrs + nag) * c->channels * c->pieces * c->n;
}

/*
 * Step k, round-major (round, then chunk flow, then ring position), so a
 * step's dependencies (the previous round) come before it and --explain
 * reads in time order: k = (round F + f) N + i. The ring describes every
 * step by itself, so it can be lowered lazily (trace_program.lazy).
 */
static void ring_gen(const struct coll_ctx *c, uint64_t k, struct coll_gstep *g)
{
	const uint32_t N = c->n, P = c->pieces, F = c->channels * c->pieces;
	const uint64_t per = (uint64_t)F * N;
	const uint32_t r = (uint32_t)(k / per), f = (uint32_t)(k % per / N), i = (uint32_t)(k % N);
	const uint32_t h = f / P, q = f % P;
	uint32_t nrs, nag, seg;

	ring_rounds(c, &nrs, &nag);
	if (r < nrs) {
		seg = (i + 2 * N - 1 - r) % N;
		g->data = TD_REDUCE;
	} else {
		seg = (i + N - (r - nrs)) % N;
		g->data = TD_COPY;
	}
	/* positions to members: channel h's own ring on GPU servers */
	g->from = coll_ring_member(c, h, i);
	g->to = coll_ring_member(c, h, (i + 1) % N);
	g->phase = r + 1;
	g->first = (h * N + coll_ring_member(c, h, seg)) * P + q;
	g->count = 1;
	g->entry = !r;
	g->ndeps = 0;
	if (r) {
		uint64_t prev = ((uint64_t)(r - 1) * F + f) * N;

		g->ndeps = 2;
		g->deps[0] = prev + (i + N - 1) % N;	/* its data */
		g->deps[1] = prev + i;			/* its own last step */
	}
}

/* A step's dependents are its own next step and its successor's: one
 * round (F N steps) and one position later at most. */
static uint64_t ring_reach(const struct coll_ctx *c)
{
	return (uint64_t)c->channels * c->pieces * c->n + 1;
}

static const char *ring_phase(const struct coll_ctx *c, uint32_t phase)
{
	uint32_t nrs, nag;

	ring_rounds(c, &nrs, &nag);
	return phase <= nrs ? "reduce-scatter" : "all-gather";
}

static void ring_describe(const struct coll_ctx *c, FILE *out)
{
	uint32_t nrs, nag;
	char b[32];

	ring_rounds(c, &nrs, &nag);
	fprintf(out, "closed form: %s%" PRIu32 " steps per rank in each of the %" PRIu32
		" chunk flows (%" PRIu32 " reduce-scatter + %" PRIu32 " all-gather), each S/(N Ch P) = %s\n",
		nrs && nag ? "2(N-1) = " : "N-1 = ", nrs + nag, c->channels * c->pieces, nrs, nag,
		coll_fmt_bytes(coll_run_bytes(c->bytes, c->nchunks, 0, 1), b, sizeof(b)));
	fprintf(out, "  T = %s(a + S/(N B)) with one channel and one chunk; chunks hide a behind the other flows\n",
		nrs && nag ? "2(N-1)" : "(N-1)");
}

const struct coll_algo coll_ring_allreduce = {
	.name = "ring",
	.coll = TRACE_ALLREDUCE,
	.algo = TRACE_ALGO_RING,
	.dflt = true,
	.pipelines = true,
	.multichannel = true,
	.nchunks = ring_nchunks,
	.nsteps = ring_nsteps,
	.lower = coll_lower_gen,
	.gen = ring_gen,
	.reach = ring_reach,
	.phase_name = ring_phase,
	.describe = ring_describe,
};

const struct coll_algo coll_ring_reducescatter = {
	.name = "ring",
	.coll = TRACE_REDUCESCATTER,
	.algo = TRACE_ALGO_RING,
	.dflt = true,
	.pipelines = true,
	.multichannel = true,
	.nchunks = ring_nchunks,
	.nsteps = ring_nsteps,
	.lower = coll_lower_gen,
	.gen = ring_gen,
	.reach = ring_reach,
	.phase_name = ring_phase,
	.describe = ring_describe,
};

const struct coll_algo coll_ring_allgather = {
	.name = "ring",
	.coll = TRACE_ALLGATHER,
	.algo = TRACE_ALGO_RING,
	.dflt = true,
	.pipelines = true,
	.multichannel = true,
	.nchunks = ring_nchunks,
	.nsteps = ring_nsteps,
	.lower = coll_lower_gen,
	.gen = ring_gen,
	.reach = ring_reach,
	.phase_name = ring_phase,
	.describe = ring_describe,
};

/* ---- chains: broadcast and reduce ------------------------------------------ */

static uint32_t chain_nchunks(const struct coll_ctx *c)
{
	uint64_t k = (uint64_t)c->channels * c->pieces;

	return k > UINT32_MAX / 2 ? 0 : (uint32_t)k;
}

static uint64_t chain_nsteps(const struct coll_ctx *c)
{
	return (uint64_t)(c->n - 1) * c->channels * c->pieces;
}

/* Member at position i of channel h's chain: a broadcast starts at the
 * root and follows the channel's ring (on GPU servers each channel's own:
 * coll_ring_member), a reduce follows it from the root's successor and
 * ends at the root - NCCL's ring broadcast and reduce on that channel. */
static uint32_t chain_member(const struct coll_ctx *c, uint32_t h, uint32_t i)
{
	uint32_t start = coll_ring_pos(c, h, c->root) + (c->op->coll == TRACE_BROADCAST ? 0 : 1);

	return coll_ring_member(c, h, (start + i) % c->n);
}

static int chain_lower(struct coll_ctx *c)
{
	const uint32_t F = c->channels * c->pieces;
	const uint64_t base = c->p->nsteps;
	const bool bcast = c->op->coll == TRACE_BROADCAST;

	/* Hop-major: hop i of every flow, then hop i + 1. Each piece is
	 * forwarded as soon as it has arrived, independently of the others.
	 * Within a hop, piece-major: piece q of every channel, then piece q +
	 * 1, so that a GPU's port, which sends what is ready in program order,
	 * takes the channels in turn as NCCL's channels run side by side (in
	 * channel order the root sent all of channel 0 before channel 1, and
	 * on two servers each rail in its turn: 238 GB/s where the all-gather
	 * gives 364). Step x of a hop carries piece x / Ch of channel x % Ch,
	 * the buffer model's chunk h P + q. */
	for (uint32_t i = 0; i + 1 < c->n; i++) {
		for (uint32_t x = 0; x < F; x++) {
			const uint32_t h = x % c->channels, f = h * c->pieces + x / c->channels;

			coll_dep_reset(c);
			coll_dep_entry(c, chain_member(c, h, i));
			if (i)
				coll_dep(c, (uint32_t)(base + (uint64_t)(i - 1) * F + x));
			if (coll_emit(c, chain_member(c, h, i), chain_member(c, h, i + 1), i + 1, f,
				      1, bcast ? TD_COPY : TD_REDUCE) == COLL_NONE)
				return -1;
		}
	}
	return 0;
}

static const char *chain_phase(const struct coll_ctx *c, uint32_t phase)
{
	(void)phase;
	return c->op->coll == TRACE_BROADCAST ? "down the chain" : "toward the root";
}

static void chain_describe(const struct coll_ctx *c, FILE *out)
{
	char b[32];

	fprintf(out, "closed form: a chain of N-1 = %" PRIu32 " hops %s root rank %" PRId32
		", %" PRIu32 " pieces of S/(Ch P) = %s pipelined along it\n",
		c->n - 1, c->op->coll == TRACE_BROADCAST ? "from" : "to", c->ranks[c->root],
		c->channels * c->pieces,
		coll_fmt_bytes(coll_run_bytes(c->bytes, c->nchunks, 0, 1), b, sizeof(b)));
	fprintf(out, "  T = (N - 2 + P)(a + S/(P B)) for P pieces on one channel\n");
}

const struct coll_algo coll_ring_broadcast = {
	.name = "ring (pipelined chain)",
	.coll = TRACE_BROADCAST,
	.algo = TRACE_ALGO_RING,
	.pipelines = true,
	.multichannel = true,
	.nchunks = chain_nchunks,
	.nsteps = chain_nsteps,
	.lower = chain_lower,
	.phase_name = chain_phase,
	.describe = chain_describe,
};

const struct coll_algo coll_ring_reduce = {
	.name = "ring (pipelined chain)",
	.coll = TRACE_REDUCE,
	.algo = TRACE_ALGO_RING,
	.pipelines = true,
	.multichannel = true,
	.nchunks = chain_nchunks,
	.nsteps = chain_nsteps,
	.lower = chain_lower,
	.phase_name = chain_phase,
	.describe = chain_describe,
};
