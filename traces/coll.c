/* SPDX-License-Identifier: MIT */
/*
 * coll.c - the table of collective algorithms and what they share: picking
 * the algorithm for a (collective, algorithm) pair, the buffer model
 * (chunks and their sizes, coll.h), building a step's dependency list, and
 * appending steps. coll_lower() is the entry point trace_lower() calls.
 *
 * The defaults (algo=auto) are what NCCL and MPICH use for large buffers,
 * which is what a fabric simulator is mostly asked about: ring for
 * allreduce, allgather and reducescatter (NCCL's default on one NIC per
 * rank), pairwise exchange for all-to-all (MPICH's for long messages,
 * Thakur, Rabenseifner & Gropp 2005), a pipelined binary tree for
 * broadcast and reduce, and the dissemination barrier (Hensgen, Finkel &
 * Manber 1988; MPICH's barrier).
 *
 * coll_busbw_factor() is nccl-tests' (doc/PERFORMANCE.md): the factor that
 * turns algorithm bandwidth into the bus bandwidth a link must sustain, so
 * busbw can be compared with the link rate whatever N is.
 */
#include "traces/coll.h"
#include "traces/trace_fmt.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_parse.h"

/*
 * Every algorithm, one row each (its struct coll_algo, in its coll_*.c,
 * says which collective and which algo= name it serves, and whether it is
 * that collective's default). A new algorithm is its file and one row.
 */
#define COLL_ALGOS(X) \
	X(coll_ring_allreduce) X(coll_tree_allreduce) X(coll_hd_allreduce) \
	X(coll_direct_alltoall) X(coll_pairwise_alltoall) \
	X(coll_ring_allgather) X(coll_bruck_allgather) \
	X(coll_ring_reducescatter) \
	X(coll_ring_broadcast) X(coll_tree_broadcast) \
	X(coll_ring_reduce) X(coll_tree_reduce) \
	X(coll_dissemination_barrier) \
	X(coll_collnet_allreduce) X(coll_nvls_allreduce) X(coll_nvlstree_allreduce)

#define COLL_ALGO_EXTERN(a) extern const struct coll_algo a;
COLL_ALGOS(COLL_ALGO_EXTERN)
#undef COLL_ALGO_EXTERN

const struct coll_algo *const coll_algos[] = {
#define COLL_ALGO_ROW(a) &a,
	COLL_ALGOS(COLL_ALGO_ROW)
#undef COLL_ALGO_ROW
	NULL
};

const struct coll_algo *coll_algo_find(enum trace_coll coll, enum trace_algo algo)
{
	if ((unsigned)coll >= TRACE_NCOLL || (unsigned)algo >= TRACE_NALGO)
		return NULL;
	for (const struct coll_algo *const *a = coll_algos; *a; a++)
		if ((*a)->coll == coll && (algo == TRACE_ALGO_AUTO ? (*a)->dflt : (*a)->algo == algo))
			return *a;
	return NULL;
}

const char *coll_algo_label(enum trace_coll coll, enum trace_algo algo)
{
	const struct coll_algo *a = coll_algo_find(coll, algo);

	return a ? a->name : "?";
}

const char *coll_op_label(const struct trace *t, const struct trace_op *op)
{
	/* NVLS across NVLink domains is NCCL's NVLSTree, or its NVLS with
	 * CollNet (SHARP between the servers): name it so, as NCCL's logs do */
	if (trace_algo_nvls(op->algo))
		switch (coll_nvls_form(t, op)) {
		case COLL_NVLS_TREE:
			return "nvls tree (NVLSTree)";
		case COLL_NVLS_SHARP:
			return "nvls + SHARP (NVLS with CollNet)";
		default:
			return coll_algo_label(op->coll, TRACE_ALGO_NVLS);
		}
	return coll_algo_label(op->coll, op->algo);
}

double coll_busbw_factor(enum trace_coll c, uint32_t nranks)
{
	double n = nranks;

	if (nranks < 1)
		return 0;
	switch (c) {
	case TRACE_ALLREDUCE:
		return 2 * (n - 1) / n;
	case TRACE_ALLGATHER:
	case TRACE_REDUCESCATTER:
	case TRACE_ALLTOALL:
		return (n - 1) / n;
	case TRACE_BROADCAST:
	case TRACE_REDUCE:
		return 1;
	case TRACE_BARRIER:
	case TRACE_NCOLL:
		break;
	}
	return 0;
}

/* ---- the buffer model -------------------------------------------------------- */

/* Bytes before chunk x: the first S % K chunks are one byte longer. */
static uint64_t bytes_before(uint64_t S, uint32_t K, uint64_t x)
{
	uint64_t rem = S % K;

	return x * (S / K) + (x < rem ? x : rem);
}

uint64_t coll_run_bytes(uint64_t S, uint32_t K, uint32_t first, uint32_t count)
{
	uint64_t end = (uint64_t)first + count;

	if (!K)
		return 0;
	if (end <= K)
		return bytes_before(S, K, end) - bytes_before(S, K, first);
	/* a run that wraps: [first, K) then [0, end - K) */
	return S - bytes_before(S, K, first) + bytes_before(S, K, end - K);
}

void coll_step_chunks(const struct trace_program *p, uint32_t s, uint32_t *first,
		      uint32_t *count)
{
	const struct trace_step *st = &p->steps[s];
	uint32_t K = p->op_nchunks ? p->op_nchunks[st->op] : 0;

	if (!K) {
		*first = st->chunk;
		*count = 1;
		return;
	}
	*first = st->chunk % K;
	*count = st->chunk / K + 1;
}

const char *coll_fmt_bytes(uint64_t b, char *buf, size_t len)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB" };
	int u = -1;

	while (u < 3 && b >= 1024 && !(b % 1024)) {
		b /= 1024;
		u++;
	}
	snprintf(buf, len, "%" PRIu64 " %s", b, u < 0 ? "B" : unit[u]);
	return buf;
}

/* ---- context ---------------------------------------------------------------- */

static int op_err(struct sim_diag *d, const struct trace_op *o, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int op_err(struct sim_diag *d, const struct trace_op *o, const char *fmt, ...)
{
	char msg[sizeof(d->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return sim_diag_set(d, o->file, o->line, 0, "%s", msg);
}

/* "ring, tree or hd": the algorithms coll supports, for messages. */
static void supported(enum trace_coll coll, char *buf, size_t len)
{
	size_t off = 0;
	int n = 0, total = 0;

	for (int a = TRACE_ALGO_AUTO + 1; a < TRACE_NALGO; a++)
		total += coll_algo_find(coll, (enum trace_algo)a) != NULL;
	buf[0] = 0;
	for (int a = TRACE_ALGO_AUTO + 1; a < TRACE_NALGO; a++) {
		if (!coll_algo_find(coll, (enum trace_algo)a))
			continue;
		n++;
		sim_append(buf, len, &off, "%s%s", n == 1 ? "" : n == total ? " or " : ", ",
			   trace_algo_names[a]);
	}
	if (!total)
		sim_append(buf, len, &off, "auto (%s)", coll_algo_find(coll, TRACE_ALGO_AUTO)->name);
}

/* K, the chunk sizes and the limits, once the algorithm is known. */
static int ctx_sizes(struct coll_ctx *c, const struct trace_op *o, struct sim_diag *d)
{
	c->nchunks = c->algo->nchunks(c);
	if (!c->nchunks)
		return op_err(d, o, "%s %s: too many chunks", trace_coll_names[o->coll],
			      c->algo->name);
	c->chunk_bytes = c->bytes / c->nchunks;
	c->chunk_rem = c->bytes % c->nchunks;
	if (c->algo->runs && c->nchunks > COLL_MAX_RANGE_CHUNKS)
		return op_err(d, o, "%s %s over %" PRIu32 " ranks and %" PRIu32
			      " channels cuts the buffer into %" PRIu32 " chunks; at most %u",
			      trace_coll_names[o->coll], c->algo->name, c->n, c->channels,
			      c->nchunks, COLL_MAX_RANGE_CHUNKS);
	if (coll_lazy(c)) {
		/* lazy: nothing is stored, only the numbering must fit (a step's
		 * index travels in 32 bits: the immediate data) */
		if (c->algo->nsteps(c) > (uint64_t)INT32_MAX - c->p->nsteps)
			return op_err(d, o, "%s %s over %" PRIu32 " ranks, %" PRIu32 " channels x %" PRIu32
				      " chunks would take %" PRIu64 " transfers, past the %zu a program may still number (2^31 - 1 in all): use fewer chunks or channels",
				      trace_coll_names[o->coll], c->algo->name, c->n, c->channels,
				      c->pieces, c->algo->nsteps(c),
				      (size_t)INT32_MAX - c->p->nsteps);
	} else if (c->algo->nsteps(c) > COLL_MAX_STEPS)
		return op_err(d, o, "%s %s over %" PRIu32 " ranks, %" PRIu32 " channels x %" PRIu32
			      " chunks would take %" PRIu64 " transfers (at most %llu): use fewer chunks or channels",
			      trace_coll_names[o->coll], c->algo->name, c->n, c->channels,
			      c->pieces, c->algo->nsteps(c), COLL_MAX_STEPS);
	return 0;
}

/* Rings, allreduce trees and SHARP allreduces follow the servers
 * (coll_ctx.rot). */
static bool follows_servers(const struct coll_ctx *c)
{
	return c->t->rank_group &&
	       (c->algo->algo == TRACE_ALGO_RING ||
		((c->algo->algo == TRACE_ALGO_TREE || c->algo->algo == TRACE_ALGO_COLLNET) &&
		 c->op->coll == TRACE_ALLREDUCE));
}

/*
 * NCCL's channels and chunks on GPU servers, for a ring or an allreduce
 * tree whose channels or chunks were not given.
 *
 * Channels: two per NIC (the graph search finds one per NIC, then doubles
 * them: src/graph/search.cc, connect.cc), fewer for small collectives as
 * NCCL cuts them (src/enqueue.cc): while S < nc x threads x threshold, one
 * channel less - a channel's threads each want `threshold` bytes (64 with
 * Simple, 8 with LL and LL128, and a ring's LL 8 per rank; comm.h,
 * tuning.cc), 512 threads a channel (640 with LL128: device.h).
 *
 * Pieces: a step of NCCL's buffer (src/init.cc, src/include/device.h) is
 * Simple's 4 MiB / NCCL_STEPS (8) = 512 KiB (t->auto_step_bytes), LL's
 * 512 KiB of 16-byte lines / 8 = 64 KiB, half of it data, LL128's
 * 120 x 640 x 8 x 8 bytes / 8 = 614,400 of which 15/16 data; a Simple
 * ring takes ALLREDUCE_CHUNKSTEPS (= ALLGATHER_, REDUCESCATTER_) = 4 at a
 * time, 2 MiB (src/include/collectives.h), everything else one
 * (enqueue.cc: chunkSteps is Simple's ring's only), so that a tree's levels
 * pipeline - and a broadcast's or reduce's chain, whose BROADCAST_ and
 * REDUCE_CHUNKSTEPS are 1: a chain's flow is a channel's whole share, not
 * a segment of it.
 */
#define LL_STEP_DATA (8u * 512u * 16u / 2u)			/* 32 KiB */
#define LL128_STEP_DATA (120u * 640u * 8u / 16u * 15u)		/* 576,000 B */

static void server_auto(struct coll_ctx *c)
{
	const struct trace *t = c->t;
	const enum trace_proto proto = trace_op_proto(c->op);
	const bool ring = c->algo->algo == TRACE_ALGO_RING;
	const bool chain = c->op->coll == TRACE_BROADCAST || c->op->coll == TRACE_REDUCE;
	uint64_t seg, p, piece;

	if (!follows_servers(c) || c->algo->algo == TRACE_ALGO_COLLNET)
		return;		/* SHARP's chunks are its own (coll_collnet.c) */
	if (!c->op->channels && t->auto_channels && c->algo->multichannel) {
		const uint64_t per = proto == TRACE_PROTO_SIMPLE ? 512u * 64u :
				     proto == TRACE_PROTO_LL128 ? 640u * 8u :
				     512u * 8u * (ring ? c->n : 1);
		uint64_t nc = c->bytes / per;

		c->channels = nc < 1 ? 1 : nc < t->auto_channels ? (uint32_t)nc : t->auto_channels;
	}
	if (!c->op->chunks && t->auto_step_bytes && c->algo->pipelines) {
		/* a flow's share: a ring segment, a chain's channel, or a tree's half */
		seg = c->bytes / ((uint64_t)(chain ? 1 : ring ? c->n : 2) * c->channels);
		piece = proto == TRACE_PROTO_LL ? LL_STEP_DATA :
			proto == TRACE_PROTO_LL128 ? LL128_STEP_DATA :
			t->auto_step_bytes * (ring && !chain ? 4 : 1);
		p = (seg + piece - 1) / piece;
		c->pieces = p < 1 ? 1 : p > TRACE_MAX_CHUNKS ? TRACE_MAX_CHUNKS : (uint32_t)p;
	}
}

/* coll_ctx.rot for a ring of several channels, an allreduce tree or a
 * SHARP allreduce over GPU servers. */
static int server_runs(struct coll_ctx *c)
{
	const int32_t *g = c->t->rank_group;
	bool any = false;

	if (!follows_servers(c) || (c->algo->algo == TRACE_ALGO_RING && c->channels < 2))
		return 0;
	c->rot = malloc(2 * (size_t)c->n * sizeof(*c->rot));
	if (!c->rot)
		return sim_diag_set(c->d, NULL, 0, 0, "out of memory");
	for (uint32_t i = 0, start = 0; i <= c->n; i++) {
		if (i < c->n && i > start && g[c->ranks[i]] >= 0 &&
		    g[c->ranks[i]] == g[c->ranks[start]])
			continue;
		for (uint32_t j = start; j < i; j++) {
			c->rot[2 * j] = start;
			c->rot[2 * j + 1] = i - start;
		}
		any |= i - start > 1;
		start = i;
	}
	if (!any) {
		free(c->rot);
		c->rot = NULL;
	}
	return 0;
}

int coll_ctx_init(struct coll_ctx *c, const struct trace *t, uint32_t op_index,
		  struct trace_program *p, struct sim_diag *d)
{
	const struct trace_op *o;
	const struct trace_comm *cm;
	char list[128];

	memset(c, 0, sizeof(*c));
	c->t = t;
	c->p = p;
	c->d = d;
	c->op_index = op_index;
	if (op_index >= t->nops)
		return sim_diag_set(d, NULL, 0, 0, "op %" PRIu32 " does not exist (%zu ops)",
				    op_index, t->nops);
	o = c->op = &t->ops[op_index];
	if (o->kind != TRACE_COLL)
		return op_err(d, o, "op %" PRIu32 " is not a collective", op_index);
	if ((unsigned)o->coll >= TRACE_NCOLL || (unsigned)o->algo >= TRACE_NALGO)
		return op_err(d, o, "unknown collective or algorithm");
	if (o->comm >= t->ncomms || !t->comms[o->comm].n)
		return op_err(d, o, "communicator %" PRIu32 " does not exist", o->comm);
	cm = &t->comms[o->comm];
	c->ranks = cm->ranks;
	c->n = cm->n;
	c->algo = coll_algo_find(o->coll, o->algo);
	if (!c->algo) {
		supported(o->coll, list, sizeof(list));
		return op_err(d, o, "%s has no '%s' algorithm (it has %s)",
			      trace_coll_names[o->coll], trace_algo_names[o->algo], list);
	}
	if ((o->algo == TRACE_ALGO_COLLNET || trace_algo_nvls(o->algo)) &&
	    trace_op_proto(o) != TRACE_PROTO_SIMPLE)
		return op_err(d, o, "%s %s has NCCL's Simple protocol only (NCCL runs no other with it): proto must be simple or auto, not %s",
			      trace_coll_names[o->coll], trace_algo_names[o->algo],
			      trace_proto_names[o->proto]);
	c->channels = o->channels ? o->channels : 1;
	c->pieces = o->chunks ? o->chunks : 1;
	if (c->pieces > 1 && !c->algo->pipelines)
		return op_err(d, o,
			      "%s %s does not pipeline: chunks must be 1, not %" PRIu32 " (ring and tree pipeline)",
			      trace_coll_names[o->coll], c->algo->name, c->pieces);
	if (c->channels > 1 && !c->algo->multichannel)
		return op_err(d, o, "%s %s runs on one channel: channels must be 1, not %" PRIu32,
			      trace_coll_names[o->coll], c->algo->name, c->channels);
	if (o->coll == TRACE_BROADCAST || o->coll == TRACE_REDUCE) {
		uint32_t i;

		for (i = 0; i < c->n && c->ranks[i] != o->root; i++)
			;
		if (i == c->n)
			return op_err(d, o, "root %" PRId32 " is not a member of the communicator",
				      o->root);
		c->root = i;
	}
	c->bytes = o->coll == TRACE_BARRIER ? 0 : o->bytes;
	server_auto(c);
	if (server_runs(c))
		return -1;
	if (c->algo->endpoints && c->algo->endpoints(c)) {
		coll_ctx_fini(c);	/* the runs */
		return -1;
	}
	if (ctx_sizes(c, o, d)) {
		coll_ctx_fini(c);	/* the endpoints */
		return -1;
	}
	return 0;
}

void coll_ctx_fini(struct coll_ctx *c)
{
	free(c->dv);
	c->dv = NULL;
	c->dn = c->dcap = 0;
	free(c->xranks);
	free(c->up);
	free(c->height);
	free(c->rot);
	c->rot = NULL;
	free(c->tab);
	c->tab = NULL;
	c->ntab = 0;
	c->xranks = NULL;
	c->up = c->height = NULL;
	c->nx = 0;
}

void coll_dep_grow(struct coll_ctx *c, uint32_t step)
{
	if (c->dn == c->dcap) {
		uint32_t ncap = c->dcap ? 2 * c->dcap : 16;
		uint32_t *nv = realloc(c->dv, ncap * sizeof(*nv));

		if (!nv) {
			c->oom = true;
			return;
		}
		c->dv = nv;
		c->dcap = ncap;
	}
	c->dv[c->dn++] = step;
}

void coll_dep_entry(struct coll_ctx *c, uint32_t member)
{
	if (!c->eoff)
		return;
	for (uint32_t k = c->eoff[member]; k < c->eoff[member + 1]; k++)
		coll_dep(c, c->esteps[k]);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* Sort the dependency list and drop repeats: an entry step may also be
 * the data dependency, and the replay counts each listed dependency. */
static void dep_unique(struct coll_ctx *c)
{
	uint32_t *v = c->dv, n = 0;

	if (c->dn <= 8) {	/* the common case: two or three */
		for (uint32_t i = 1; i < c->dn; i++) {
			uint32_t x = v[i], j = i;

			for (; j > 0 && v[j - 1] > x; j--)
				v[j] = v[j - 1];
			v[j] = x;
		}
	} else {
		qsort(v, c->dn, sizeof(*v), cmp_u32);
	}
	for (uint32_t i = 0; i < c->dn; i++)
		if (!n || v[n - 1] != v[i])
			v[n++] = v[i];
	c->dn = n;
}

/* The trace rank of endpoint x: a member, or one of the algorithm's own
 * endpoints after them (c->nx). */
static int32_t endpoint_rank(const struct coll_ctx *c, uint32_t x)
{
	return x < c->n ? c->ranks[x] : c->xranks[x - c->n];
}

/* The endpoints, bytes and chunk encoding of a transfer of chunks
 * [first, first + count) from member `from` to `to`. */
static void step_fill(const struct coll_ctx *c, uint32_t from, uint32_t to, uint32_t first,
		      uint32_t count, struct trace_step *s)
{
	s->rank = endpoint_rank(c, from);
	s->peer = endpoint_rank(c, to);
	if (count == 1)		/* the common case, without a division */
		s->bytes = c->chunk_bytes + (first < c->chunk_rem);
	else
		s->bytes = coll_run_bytes(c->bytes, c->nchunks, first, count);
	s->chunk = first + (count - 1) * c->nchunks;
}

void coll_gen_step(const struct coll_ctx *c, const struct coll_gstep *g, struct trace_step *s)
{
	*s = (struct trace_step){
		.kind = TS_XFER, .op = c->op_index, .phase = g->phase, .data = g->data,
		.fan = (uint8_t)(g->fan > 1 ? g->fan : 0),
		.fan_tab = g->fan > 1 ? g->fan_tab : 0, .fan_to = g->fan > 1 && g->fan_to,
	};
	step_fill(c, g->from, g->to, g->first, g->count, s);
}

/* What the lazy replay relies on (coll_algo.reach, .near_reach, .far): no
 * step waits for one more than reach back, nor more than near_reach back
 * unless that one is far, and a step that waits for a far one waits for
 * a near one too. NULL, or why not. */
static const char *gen_reach_wrong(const struct coll_ctx *c, uint64_t k,
				   const struct coll_gstep *g, uint64_t reach, uint64_t near)
{
	bool far = false, close = false;

	for (uint32_t j = 0; j < g->ndeps + g->nrun; j++) {
		const uint64_t d = j < g->ndeps ? g->deps[j] : g->run + (j - g->ndeps);

		if (d >= k || k - d > reach)
			return "waits for a step beyond its reach";
		if (k - d <= near)
			close = true;
		else if (c->algo->far && c->algo->far(c, d))
			far = true;
		else
			return "waits for a step beyond its near reach that is not far";
	}
	return far && !close ? "waits for a far step and for none within its near reach" : NULL;
}

static bool same_deps(const struct coll_gstep *a, const struct coll_gstep *b)
{
	if (a->entry != b->entry || a->ndeps != b->ndeps || a->nrun != b->nrun ||
	    (a->nrun && a->run != b->run) || (a->entry && a->from != b->from))
		return false;
	for (uint32_t j = 0; j < a->ndeps; j++)
		if (a->deps[j] != b->deps[j])
			return false;
	return true;
}

/* Is g not step m of the fan that `lead` leads as coll_fan_step makes it:
 * the lead's transfer but for the member c->tab[fan_tab + m] at one end? */
static bool fan_member_wrong(const struct coll_ctx *c, const struct coll_gstep *g,
			     const struct coll_gstep *lead, uint32_t m)
{
	uint32_t x;

	if (!c->tab || (uint64_t)lead->fan_tab + lead->fan > c->ntab)
		return true;
	x = c->tab[lead->fan_tab + m];
	return g->phase != lead->phase || g->first != lead->first || g->count != lead->count ||
	       g->data != lead->data ||
	       (lead->fan_to ? g->from != lead->from || g->to != x :
			       g->to != lead->to || g->from != x);
}

/*
 * What a lazy replay relies on of a fan (coll_gstep.fan): its steps wait
 * for what its first waits for (not nothing), each is its first's
 * transfer with one member of the table at one end (coll_gstep.fan_tab),
 * none is far, and a step waits for all of a fan's steps or none. pos: a
 * byte per step of the op, its place in a fan (1 the first, 0 none);
 * size: a fan's size at its first; *left the steps of the current fan
 * still to come after k, *lead its first's. NULL, or why not.
 */
static const char *gen_fan_wrong(const struct coll_ctx *c, uint64_t k, uint64_t n,
				 const struct coll_gstep *g, uint8_t *pos, uint8_t *size,
				 uint32_t *left, struct coll_gstep *lead)
{
	for (uint32_t j = 0; pos && j < g->ndeps + g->nrun; j++) {
		const uint64_t d = j < g->ndeps ? g->deps[j] : g->run + (j - g->ndeps);
		uint32_t have = 0;

		if (d >= k || !pos[d])
			continue;
		const uint64_t f = d - (pos[d] - 1);	/* its fan's first */

		for (uint32_t x = 0; x < g->ndeps + g->nrun; x++) {
			const uint64_t e = x < g->ndeps ? g->deps[x] : g->run + (x - g->ndeps);

			have += e >= f && e < f + size[f];
		}
		if (have != size[f])
			return "waits for some steps of a fan and not all";
	}
	if (*left) {
		if (g->fan > 1 || !same_deps(g, lead))
			return "is in a fan and waits for other steps than its first";
		if (fan_member_wrong(c, g, lead, lead->fan - *left))
			return "is in a fan and not its first's transfer to or from the fan's next member";
		--*left;
	} else if (g->fan > 1) {
		if (g->fan > 255 || k + g->fan > n)
			return "leads a fan of more than 255 steps or beyond the op";
		if (g->entry || !(g->ndeps + g->nrun))
			return "leads a fan and waits for no step of the op";
		if (fan_member_wrong(c, g, g, 0))
			return "leads a fan and is not its first member's transfer";
		*lead = *g;
		*left = g->fan - 1;
		if (pos)
			size[k] = (uint8_t)g->fan;
	} else {
		return NULL;
	}
	if (c->algo->far && c->algo->far(c, k))
		return "is in a fan and far";
	if (pos)
		pos[k] = (uint8_t)(lead->fan - *left);
	return NULL;
}

int coll_lower_gen(struct coll_ctx *c)
{
	const uint64_t base = c->p->nsteps, n = c->algo->nsteps(c);
	const uint64_t reach = c->algo->reach ? c->algo->reach(c) : UINT64_MAX;
	const uint64_t near = c->algo->near_reach ? c->algo->near_reach(c) : reach;
	struct coll_gstep g, lead = { 0 };
	const char *why;
	uint8_t *fpos = NULL;	/* and a fan's size at its first: fpos + n */
	uint32_t fan_left = 0;
	int rc = 0;

	for (uint64_t k = 0; k < n && !rc; k++) {
		g.nrun = g.fan = 0;	/* only an algorithm with runs or fans sets them */
		c->algo->gen(c, k, &g);
		if (g.fan > 1 && !fpos && !(fpos = calloc(2 * n, 1)))
			return op_err(c->d, c->op, "out of memory lowering %s",
				      trace_coll_names[c->op->coll]);
		if (g.entry && (g.ndeps || g.nrun))	/* coll_lazy_step could not say both */
			why = "waits for its entry and for steps of the op";
		else if (!(why = gen_reach_wrong(c, k, &g, reach, near)))
			why = gen_fan_wrong(c, k, n, &g, fpos, fpos ? fpos + n : NULL, &fan_left,
					    &lead);
		if (why) {
			rc = op_err(c->d, c->op, "internal error: %s %s step %" PRIu64 " %s",
				    trace_coll_names[c->op->coll], c->algo->name, k, why);
			break;
		}
		coll_dep_reset(c);
		if (g.entry)
			coll_dep_entry(c, g.from);
		for (uint32_t j = 0; j < g.ndeps; j++)
			coll_dep(c, (uint32_t)(base + g.deps[j]));
		for (uint32_t j = 0; j < g.nrun; j++)
			coll_dep(c, (uint32_t)(base + g.run + j));
		if (coll_emit(c, g.from, g.to, g.phase, g.first, g.count, g.data) == COLL_NONE)
			rc = -1;
	}
	free(fpos);
	return rc;
}

uint32_t coll_emit(struct coll_ctx *c, uint32_t from, uint32_t to, uint32_t phase,
		   uint32_t first, uint32_t count, enum trace_data data)
{
	struct trace_step s = {
		.kind = TS_XFER,
		.op = c->op_index,
		.phase = phase,
		.data = data,
	};
	int ix;

	if (c->oom) {
		op_err(c->d, c->op, "out of memory lowering %s", trace_coll_names[c->op->coll]);
		return COLL_NONE;
	}
	/* The algorithms compute members and chunks; a slip here is a bug in
	 * one of them, caught before it becomes a strange replay. */
	if (from >= c->n + c->nx || to >= c->n + c->nx || from == to || !count ||
	    count > c->nchunks ||
	    first >= c->nchunks) {
		op_err(c->d, c->op, "internal error: %s %s emitted a transfer %" PRIu32 " -> %" PRIu32
		       " of chunks %" PRIu32 "+%" PRIu32 " (N %" PRIu32 ", K %" PRIu32 ")",
		       trace_coll_names[c->op->coll], c->algo->name, from, to, first, count, c->n,
		       c->nchunks);
		return COLL_NONE;
	}
	step_fill(c, from, to, first, count, &s);
	dep_unique(c);
	ix = trace_program_append(c->p, &s, c->dv, c->dn);
	c->dn = 0;
	if (ix < 0) {
		op_err(c->d, c->op, "out of memory lowering %s (%zu steps)",
		       trace_coll_names[c->op->coll], c->p->nsteps);
		return COLL_NONE;
	}
	return (uint32_t)ix;
}

/* ---- lowering ---------------------------------------------------------------- */

/*
 * Where a member's entry is many steps (the ends of every chunk flow of the
 * collective before it, on that rank) and its own flows are many, each
 * flow's first step would wait for every entry: entries x flows
 * dependencies, 48M for two 4-rank allreduces of 11 channels x 355 chunks
 * (a fuzzed trace: 5 s and 780 MB to lower, and a 32 x 1,000 pair ran out
 * of uint32 indexes). Past COLL_JOIN_MIN such dependencies a member gets one
 * TS_JOIN step that waits for its entries, and its flows wait for that one:
 * the same times, entries + flows dependencies. At 4,096 the data
 * parallel tree allreduces of the 256-GPU example (each member's 16 flows
 * in two trees waiting for the 240 last steps of its NVLS allreduce) held
 * 8M dependencies; at 512 they take a join each, and its peak memory fell
 * from 221 to 140 MB with the same outputs. Below it the lists stay as
 * they were: a small collective keeps its steps and events.
 * The joins go before the op's first step, outside its range: the
 * reduction check, --explain and the op's times see only its transfers.
 * 0, with *jeoff and *jes the lists to use (NULL: the caller's), or -1.
 */
#define COLL_JOIN_MIN 512u

static int coll_joins(struct coll_ctx *c, struct trace_program *p, const uint32_t *eoff,
		      const uint32_t *esteps, const struct coll_whole *w, uint32_t **jeoff,
		      uint32_t **jes)
{
	uint64_t flows = (uint64_t)c->channels * c->pieces;
	uint32_t *o, *e, k = 0;
	bool any = false;

	*jeoff = *jes = NULL;
	if (!eoff)
		return 0;
	for (uint32_t m = 0; m < c->n && !any; m++)
		any = eoff[m + 1] - eoff[m] >= 2 && (eoff[m + 1] - eoff[m]) * flows > COLL_JOIN_MIN;
	if (!any)
		return 0;
	o = malloc(((size_t)c->n + 1) * sizeof(*o));
	e = malloc(((size_t)eoff[c->n] + 1) * sizeof(*e));
	if (!o || !e)
		goto oom;
	for (uint32_t m = 0; m < c->n; m++) {
		uint32_t ne = eoff[m + 1] - eoff[m];

		o[m] = k;
		if (ne >= 2 && ne * flows > COLL_JOIN_MIN) {
			struct trace_step s = {
				.kind = TS_JOIN, .rank = c->ranks[m], .peer = c->ranks[m],
				.op = c->op_index, .data = TD_NONE,
			};
			/* every exit of an earlier lazy collective on the member:
			 * counted as that one's transfers end, not listed (its
			 * exits are spread over all its steps: a list made the
			 * replay hold every step of that collective at once) */
			const bool counted = w && w->op[m] != UINT32_MAX;
			int ix;

			if (counted) {
				s.counted = true;
				s.chunk = w->op[m];
				s.phase = w->cnt[m];
			}
			ix = trace_program_add(p, &s, counted ? NULL : esteps + eoff[m],
					       counted ? 0 : ne);

			if (ix < 0)
				goto oom;
			p->njoins++;
			e[k++] = (uint32_t)ix;
		} else {
			for (uint32_t x = eoff[m]; x < eoff[m + 1]; x++)
				e[k++] = esteps[x];
		}
	}
	o[c->n] = k;
	*jeoff = o;
	*jes = e;
	return 0;
oom:
	free(o);
	free(e);
	return -1;
}

/* Back to the program as it was before an op: nothing half-written. */
static void program_undo(struct trace_program *p, size_t nsteps, size_t ndeps, size_t njoins)
{
	p->nstored -= p->nsteps - nsteps;	/* the op's joins: lazy ops are added last */
	p->nsteps = nsteps;
	p->ndeps = ndeps;
	p->njoins = njoins;
}

/*
 * Record op c as lazy: steps [first, first + n) of p, described by the
 * algorithm when asked (coll_lazy_step). The context keeps what that
 * needs - the members, the buffer model, its own copy of the entries -
 * and nothing of the lowering's scratch.
 */
static int lazy_add(struct trace_program *p, const struct coll_ctx *c, size_t first, uint64_t n)
{
	struct coll_ctx *z = malloc(sizeof(*z));
	size_t ne = c->eoff ? c->eoff[c->n] : 0, before = 0;

	if (!z)
		return -1;
	*z = *c;
	z->d = NULL;
	z->dv = NULL;
	z->dn = z->dcap = 0;
	z->eoff = NULL;
	z->esteps = NULL;
	z->xranks = NULL;
	z->up = z->height = NULL;
	z->nx = 0;
	z->rot = NULL;
	z->tab = NULL;
	z->ntab = 0;
	if (c->ntab) {
		z->tab = malloc(c->ntab * sizeof(*z->tab));
		if (!z->tab)
			goto oom;
		memcpy(z->tab, c->tab, c->ntab * sizeof(*z->tab));
		z->ntab = c->ntab;
	}
	if (c->rot) {
		z->rot = malloc(2 * (size_t)c->n * sizeof(*z->rot));
		if (!z->rot)
			goto oom;
		memcpy(z->rot, c->rot, 2 * (size_t)c->n * sizeof(*z->rot));
	}
	if (c->eoff) {
		uint32_t *eo = malloc(((size_t)c->n + 1) * sizeof(*eo));
		uint32_t *es = malloc((ne ? ne : 1) * sizeof(*es));

		z->eoff = eo;
		z->esteps = es;
		if (!eo || !es)
			goto oom;
		memcpy(eo, c->eoff, ((size_t)c->n + 1) * sizeof(*eo));
		if (ne)		/* esteps may be NULL when no member waits */
			memcpy(es, c->esteps, ne * sizeof(*es));
	}
	if (c->nx) {	/* an algorithm's extra endpoints (NVLS's switches) */
		z->xranks = malloc(c->nx * sizeof(*z->xranks));
		if (!z->xranks)
			goto oom;
		memcpy(z->xranks, c->xranks, c->nx * sizeof(*z->xranks));
		z->nx = c->nx;
	}
	if (sim_grow((void **)&p->lz, &p->lz_cap, p->nlz + 1, sizeof(*p->lz)))
		goto oom;
	if (p->nlz)
		before = p->lz[p->nlz - 1].before + p->lz[p->nlz - 1].n;
	p->lz[p->nlz++] = (struct trace_lazy){
		.op = c->op_index, .first = (uint32_t)first, .n = (uint32_t)n,
		.before = (uint32_t)before, .reach = c->algo->reach(c),
		.near_reach = c->algo->near_reach ? c->algo->near_reach(c) : c->algo->reach(c),
		.c = z,
	};
	p->nsteps += n;
	return 0;
oom:
	coll_lazy_free(z);
	return -1;
}

void coll_lazy_free(struct coll_ctx *z)
{
	if (!z)
		return;
	free((void *)z->eoff);
	free((void *)z->esteps);
	coll_ctx_fini(z);
	free(z);
}

void coll_fan_step(const struct coll_ctx *c, const struct trace_step *lead, uint32_t m,
		   struct trace_step *s)
{
	const int32_t r = endpoint_rank(c, c->tab[lead->fan_tab + m]);

	*s = *lead;
	s->fan = 0;
	s->fan_tab = s->fan_to = 0;
	if (lead->fan_to)
		s->peer = r;
	else
		s->rank = r;
}

bool coll_lazy_far(const struct coll_ctx *c, uint64_t k)
{
	return c->algo->far && c->algo->far(c, k);
}

void coll_lazy_step(const struct coll_ctx *c, uint64_t k, uint32_t first, struct trace_step *s,
		    const uint32_t **deps, uint32_t *buf)
{
	struct coll_gstep g;

	g.nrun = g.fan = 0;
	c->algo->gen(c, k, &g);
	coll_gen_step(c, &g, s);	/* no dep_off: fan_tab in its place */
	if (g.entry) {		/* the member's entry list: sorted and unique */
		*deps = c->eoff ? c->esteps + c->eoff[g.from] : buf;
		s->ndeps = c->eoff ? c->eoff[g.from + 1] - c->eoff[g.from] : 0;
		return;
	}
	for (uint32_t j = 0; j < g.ndeps; j++) {	/* in order, as coll_emit sorts them */
		uint32_t x = first + (uint32_t)g.deps[j], m = j;

		for (; m > 0 && buf[m - 1] > x; m--)
			buf[m] = buf[m - 1];
		buf[m] = x;
	}
	s->ndeps = g.ndeps;
	for (uint32_t j = 0; j < g.nrun; j++) {		/* an NVLS sum's reads */
		uint32_t x = first + (uint32_t)(g.run + j), m = s->ndeps++;

		for (; m > 0 && buf[m - 1] > x; m--)
			buf[m] = buf[m - 1];
		buf[m] = x;
	}
	*deps = buf;
}

int coll_lower_entries(const struct trace *t, uint32_t op_index, struct trace_program *p,
		       const uint32_t *eoff, const uint32_t *esteps, const struct coll_whole *w,
		       struct sim_diag *d)
{
	struct coll_ctx c;
	size_t undo_step = p->nsteps, undo_dep = p->ndeps, undo_joins = p->njoins, first_step;
	uint32_t *jeoff, *jes;
	uint64_t nsteps;
	size_t nentry;
	int rc;

	if (coll_ctx_init(&c, t, op_index, p, d))
		return -1;
	if (p->trace != t)
		return sim_diag_set(d, NULL, 0, 0, "the program was made for another trace");
	if (trace_program_ops_alloc(p))
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	if (coll_joins(&c, p, eoff, esteps, w, &jeoff, &jes)) {
		coll_ctx_fini(&c);
		program_undo(p, undo_step, undo_dep, undo_joins);
		return op_err(d, c.op, "out of memory lowering %s (%zu steps)",
			      trace_coll_names[c.op->coll], p->nsteps);
	}
	if (jeoff) {
		eoff = jeoff;
		esteps = jes;
	}
	first_step = p->nsteps;
	c.eoff = eoff;
	c.esteps = esteps;
	nentry = eoff ? eoff[c.n] : 0;
	nsteps = c.algo->nsteps(&c);
	if (coll_lazy(&c)) {
		rc = lazy_add(p, &c, first_step, nsteps);
		coll_ctx_fini(&c);
		free(jeoff);
		free(jes);
		if (rc) {
			program_undo(p, undo_step, undo_dep, undo_joins);
			return op_err(d, c.op, "out of memory lowering %s",
				      trace_coll_names[c.op->coll]);
		}
		p->op_first[op_index] = (uint32_t)first_step;
		p->op_nsteps[op_index] = (uint32_t)nsteps;
		p->op_nchunks[op_index] = c.nchunks;
		return 0;
	}
	/* Every step waits for two or three others (its data, its own previous
	 * step), plus the entries: reserving once keeps a million-step ring
	 * from being copied by realloc on the way. */
	if (trace_program_reserve(p, nsteps, 3 * nsteps + nentry * c.channels * c.pieces)) {
		coll_ctx_fini(&c);
		free(jeoff);
		free(jes);
		program_undo(p, undo_step, undo_dep, undo_joins);
		return op_err(d, c.op, "out of memory lowering %s (%" PRIu64 " steps)",
			      trace_coll_names[c.op->coll], nsteps);
	}
	rc = c.algo->lower(&c);
	if (!rc && p->nsteps - first_step != nsteps)
		rc = op_err(d, c.op, "internal error: %s %s emitted %zu transfers, its closed form says %" PRIu64,
			    trace_coll_names[c.op->coll], c.algo->name, p->nsteps - first_step, nsteps);
	coll_ctx_fini(&c);
	free(jeoff);
	free(jes);
	if (rc) {
		program_undo(p, undo_step, undo_dep, undo_joins);
		return -1;
	}
	p->op_first[op_index] = (uint32_t)first_step;
	p->op_nsteps[op_index] = (uint32_t)(p->nsteps - first_step);
	p->op_nchunks[op_index] = c.nchunks;
	return 0;
}

int coll_lower(const struct trace *t, uint32_t op_index, struct trace_program *p,
	       const uint32_t *entry, struct sim_diag *d)
{
	uint32_t *eoff = NULL, *es = NULL, n, k = 0;
	int rc;

	if (!entry || op_index >= t->nops || t->ops[op_index].kind != TRACE_COLL ||
	    t->ops[op_index].comm >= t->ncomms)
		return coll_lower_entries(t, op_index, p, NULL, NULL, NULL, d);
	/* one entry step per member, or none: a list of 0 or 1 each */
	n = t->comms[t->ops[op_index].comm].n;
	eoff = malloc(((size_t)n + 1) * sizeof(*eoff));
	es = malloc(((size_t)n + 1) * sizeof(*es));
	if (!eoff || !es) {
		free(eoff);
		free(es);
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	}
	for (uint32_t i = 0; i < n; i++) {
		eoff[i] = k;
		if (entry[i] != COLL_NONE)
			es[k++] = entry[i];
	}
	eoff[n] = k;
	rc = coll_lower_entries(t, op_index, p, eoff, es, NULL, d);
	free(eoff);
	free(es);
	return rc;
}
