/* SPDX-License-Identifier: MIT */
/*
 * import_nccl.c - NCCL debug logs and nccl-tests command lines into a trace.
 *
 * 1. NCCL logs (NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL), every rank's
 *    log in one file (cat rank*.log > job.log). NCCL prints, per call
 *    (src/enqueue.cc, ncclEnqueueCheck; src/init.cc):
 *
 *      host:pid:tid [dev] NCCL INFO AllReduce: opCount 3 sendbuff 0x.. recvbuff 0x..
 *          count 262144 datatype 7 op 0 root 0 comm 0x55d1.. [nranks=8] stream 0x..
 *      host:pid:tid [dev] NCCL INFO comm 0x55d1.. rank 3 nranks 8 cudaDev 3 busId
 *          41000 [commId 0x9ad9..] - Init COMPLETE        (also "ncclCommInitRank comm ...")
 *
 *    opCount is hex, count is in elements, root (and, for Send/Recv, the
 *    peer) a rank of the communicator. Anything before "host:pid:tid" (mpirun
 *    --tag-output, pdsh, Ray prefixes) and every other line is skipped.
 *
 *    A comm pointer is one rank's handle, valid in one process: the INIT
 *    lines tell its rank, and its communicator is the one with the same
 *    commId (NCCL >= 2.13) or, in older logs, the k-th communicator of that
 *    size the device joined. Without INIT lines, only a single communicator
 *    can be read: its ranks are the comm pointers in order of first
 *    appearance. The largest communicator is the world: trace rank r is its
 *    rank r, and the others become trace communicators of world ranks.
 *
 *    Lines of one communicator with the same opCount (the k-th such line of
 *    each rank, if a rank repeats an opCount) are one collective; every rank
 *    must have logged it. S (trace_op.bytes) is nccl-tests' "size", so busbw
 *    comes out as nccl-tests prints it: count x type size for AllReduce,
 *    Broadcast, Reduce; count x nranks x type size for AllGather and
 *    ReduceScatter (NCCL's count is per rank there) and AlltoAll. Send/Recv
 *    lines are point-to-point ops (tag = the communicator). Order is stream
 *    order: an op waits for the previous op on the same CUDA stream; a run
 *    of consecutive Send/Recv lines on a stream is taken as one
 *    ncclGroupStart/End group (their ops run together, as NCCL fuses them).
 *    Zero-count calls move nothing and are skipped.
 *
 * 2. nccl-tests command lines (nccl-tests src/common.cu): one per line,
 *    '\' continues a line, '#' starts a comment, VAR=value prefixes and an
 *    mpirun/mpiexec/srun launcher (-np/-n/--ntasks N; srun -N x
 *    --ntasks-per-node) are understood. Ranks = processes x -t x -g. The
 *    sweep is nccl-tests': sizes from -b to -e, times -f (or plus -i), each
 *    size's timed loop of -n x -m (x -G graph launches) collectives, run
 *    back to back on one stream; -d/-o/-r "all" repeat the sweep per type,
 *    op or root, -N repeats it. Warm-up (-w), the data-check iterations
 *    (-c) and the in-place pass (the same traffic again) are not timed by
 *    nccl-tests' out-of-place column and are left out. Sizes are rounded
 *    as nccl-tests rounds them (count = size / type size, per rank for
 *    all_gather, reduce_scatter, alltoall).
 *
 * docs/importers.md has the reasons and the limits.
 */
#include "traces/import.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim/sim_parse.h"
#include "traces/coll.h"
#include "traces/trace_fmt.h"

#define NONE UINT32_MAX


static const char *find(const char *s, const char *e, const char *pat)
{
	size_t n = strlen(pat);

	for (; s + n <= e; s++) {
		s = memchr(s, pat[0], (size_t)(e - s));
		if (!s || s + n > e)
			return NULL;
		if (!memcmp(s, pat, n))
			return s;
	}
	return NULL;
}

static bool lit(const char **p, const char *e, const char *w)
{
	size_t n = strlen(w);

	if ((size_t)(e - *p) < n || memcmp(*p, w, n))
		return false;
	*p += n;
	return true;
}

static void skip_blanks(const char **p, const char *e)
{
	while (*p < e && (**p == ' ' || **p == '\t'))
		(*p)++;
}

static bool scan_dec(const char **p, const char *e, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;

	for (; s < e && isdigit((unsigned char)*s); s++) {
		if (x > (UINT64_MAX - 9) / 10)
			return false;
		x = x * 10 + (uint64_t)(*s - '0');
	}
	if (s == *p)
		return false;
	*p = s;
	*v = x;
	return true;
}

/* Hex with or without "0x"; "(nil)" (glibc's %p of NULL) is 0. */
static bool scan_hex(const char **p, const char *e, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;
	int nd = 0;

	if (lit(p, e, "(nil)")) {
		*v = 0;
		return true;
	}
	if (e - s >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; s < e && isxdigit((unsigned char)*s); s++, nd++) {
		if (nd >= 16)
			return false;
		x = x * 16 + (uint64_t)(isdigit((unsigned char)*s) ? *s - '0' :
					(tolower((unsigned char)*s) - 'a' + 10));
	}
	if (!nd)
		return false;
	*p = s;
	*v = x;
	return true;
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;	/* FNV-1a */
	return h;
}

static uint64_t hash_u64(uint64_t h, uint64_t v)
{
	return hash_bytes(h, &v, sizeof(v));
}

#define HASH0 0xcbf29ce484222325ULL

/*
 * A small open-addressing table from a 64-bit key hash to an index; the
 * caller compares the full key (eq) since hashes may collide.
 */
struct ht {
	uint64_t *h;		/* 0: empty slot */
	uint32_t *v;
	size_t cap, n;
};

static void ht_free(struct ht *t)
{
	free(t->h);
	free(t->v);
	memset(t, 0, sizeof(*t));
}

static int ht_rehash(struct ht *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 1024;
	uint64_t *nh = calloc(ncap, sizeof(*nh));
	uint32_t *nv = malloc(ncap * sizeof(*nv));

	if (!nh || !nv) {
		free(nh);
		free(nv);
		return -1;
	}
	for (size_t i = 0; i < t->cap; i++) {
		size_t j;

		if (!t->h[i])
			continue;
		for (j = t->h[i] & (ncap - 1); nh[j]; j = (j + 1) & (ncap - 1))
			;
		nh[j] = t->h[i];
		nv[j] = t->v[i];
	}
	free(t->h);
	free(t->v);
	t->h = nh;
	t->v = nv;
	t->cap = ncap;
	return 0;
}

typedef bool (*ht_eq_fn)(const void *ctx, uint32_t val, const void *key);

/* The slot holding the value for this key, or NULL. */
static uint32_t *ht_find(struct ht *t, uint64_t hash, ht_eq_fn eq, const void *ctx,
			 const void *key)
{
	hash |= 1;
	if (!t->cap)
		return NULL;
	for (size_t j = hash & (t->cap - 1); t->h[j]; j = (j + 1) & (t->cap - 1))
		if (t->h[j] == hash && eq(ctx, t->v[j], key))
			return &t->v[j];
	return NULL;
}

static int ht_add(struct ht *t, uint64_t hash, uint32_t val)
{
	size_t j;

	hash |= 1;
	if ((t->n + 1) * 2 > t->cap && ht_rehash(t))
		return -1;
	for (j = hash & (t->cap - 1); t->h[j]; j = (j + 1) & (t->cap - 1))
		;
	t->h[j] = hash;
	t->v[j] = val;
	t->n++;
	return 0;
}

/* ncclDataType_t (nccl.h): its size in bytes; 0 for unknown. */
static unsigned dtype_size(uint64_t dt)
{
	static const unsigned char sz[] = {
		1, 1, 4, 4, 8, 8,	/* int8 uint8 int32 uint32 int64 uint64 */
		2, 4, 8, 2,		/* float16 float32 float64 bfloat16 */
		1, 1,			/* float8e4m3 float8e5m2 (NCCL 2.24+) */
	};

	return dt < sizeof(sz) ? sz[dt] : 0;
}

/* An op's label, cut to fit trace_op.name. */
static void op_name(struct trace_op *op, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void op_name(struct trace_op *op, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(op->name, sizeof(op->name), fmt, ap);
	va_end(ap);
}

/* A token quoted for a message (sim_quote), cut after 32 characters. */
static const char *quote(const char *s, size_t n, char *buf, size_t len)
{
	return sim_quote(s, n, 32, buf, len);
}

/* ============================================================================
 * NCCL logs
 * ========================================================================== */

enum rec_kind { REC_COLL, REC_SEND, REC_RECV };

/* A process, "host:pid" as the prefix prints it (points into the text). */
struct nl_proc {
	const char *s;
	size_t n;
};

/* Lines seen per (communicator, rank, opCount), to pair repeats in order. */
struct occ_ent {
	uint32_t g;
	int32_t rank;
	uint64_t opcount;
	uint32_t n;
};

/* A GPU of a process (cudaDev as the INIT line gives it). */
struct nl_dev {
	uint32_t proc;
	uint64_t cuda;
	int32_t world;		/* its world rank, -1 until known */
	uint32_t ncomm_by_size;	/* scratch: comms of one size seen so far */
};

/* One rank's handle of a communicator (a comm pointer in one process). */
struct nl_lcomm {
	uint32_t proc, dev;	/* dev NONE when there is no INIT line */
	uint64_t ptr;
	int32_t rank;		/* -1: no INIT line seen */
	uint32_t nranks;
	uint64_t commid;
	bool has_commid;
	bool has_cuda;		/* dev from the line's cudaDev, not the prefix */
	int line;
	uint32_t g;		/* its communicator (index into gcomms) */
	bool used;		/* a collective line names it */
};

/* A communicator: its members by rank. */
struct nl_gcomm {
	uint32_t nranks;
	uint32_t *member;	/* lcomm per rank, NONE: not seen */
	uint32_t nmembers;
	int line;
	bool used;
	int tcomm;		/* index into trace.comms */
	uint64_t key_a, key_b;	/* what grouped it: commId or (size, ordinal) */
};

/* One collective or point-to-point line. */
struct nl_rec {
	enum rec_kind kind;
	enum trace_coll coll;
	const char *name;	/* as printed, for messages */
	size_t namelen;
	uint64_t opcount, count, dtype, root, stream;
	uint64_t redop;		/* ncclRedOp_t; UINT64_MAX: not printed */
	uint32_t lcomm;
	int line, col_dtype, col_root;
	uint32_t node;		/* the op it belongs to */
};

/* One op of the output, before ordering. */
struct nl_node {
	uint32_t rec;		/* first record */
	uint32_t nrec;		/* records in it (collectives: one per rank) */
	uint32_t dep_off, ndeps;	/* into nl.deps, node indexes */
	uint32_t occ;		/* collectives: which repeat of its opCount */
	uint32_t pending;	/* Kahn: deps not yet emitted */
	int op;
};

/* Per CUDA stream: what the next op waits for. */
struct nl_stream {
	uint32_t proc;
	uint64_t ptr;
	uint64_t who;		/* NULL stream: the device it belongs to */
	uint32_t *front, nfront, front_cap;	/* nodes the next op waits for */
	uint32_t *base, nbase, base_cap;	/* what a Send/Recv run waits for */
	bool in_run;
};

struct nl {
	const char *file;
	const char *ofile;
	struct sim_diag *d;
	struct trace *t;
	struct nl_proc *procs;
	size_t nprocs, procs_cap;
	struct nl_dev *devs;
	size_t ndevs, devs_cap;
	struct nl_lcomm *lc;
	size_t nlc, lc_cap;
	struct nl_gcomm *gc;
	size_t ngc, gc_cap;
	struct nl_rec *recs;
	size_t nrecs, recs_cap;
	struct nl_node *nodes;
	size_t nnodes, nodes_cap;
	uint32_t *deps;
	size_t ndeps, deps_cap;
	struct nl_stream *streams;
	size_t nstreams, streams_cap;
	struct ht proc_ht, dev_ht, lc_ht, stream_ht, grp_ht, occ_ht;
	struct occ_ent *occ;	/* per (communicator, rank, opCount): lines so far */
	size_t nocc, occ_cap;
	bool any_init;
	int32_t world_n;
	uint32_t world;
};

static int nerr(struct nl *s, int line, int col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int nerr(struct nl *s, int line, int col, const char *fmt, ...)
{
	char msg[sizeof(s->d->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return sim_diag_set(s->d, s->file, line, col, "%s", msg);
}

static int oom(struct nl *s, int line)
{
	return nerr(s, line, 0, "out of memory");
}

static bool proc_eq(const void *ctx, uint32_t v, const void *key)
{
	const struct nl *s = ctx;
	const struct nl_proc *k = key;

	return s->procs[v].n == k->n && !memcmp(s->procs[v].s, k->s, k->n);
}

static bool dev_eq(const void *ctx, uint32_t v, const void *key)
{
	const struct nl *s = ctx;
	const struct nl_dev *k = key;

	return s->devs[v].proc == k->proc && s->devs[v].cuda == k->cuda;
}

static bool lc_eq(const void *ctx, uint32_t v, const void *key)
{
	const struct nl *s = ctx;
	const struct nl_lcomm *k = key;

	return s->lc[v].proc == k->proc && s->lc[v].ptr == k->ptr;
}

static bool stream_eq(const void *ctx, uint32_t v, const void *key)
{
	const struct nl *s = ctx;
	const struct nl_stream *k = key;

	return s->streams[v].proc == k->proc && s->streams[v].ptr == k->ptr &&
	       s->streams[v].who == k->who;
}

static int get_proc(struct nl *s, const char *p, size_t n, uint32_t *out, int line)
{
	struct nl_proc k = { p, n };
	uint64_t h = hash_bytes(HASH0, p, n);
	uint32_t *v = ht_find(&s->proc_ht, h, proc_eq, s, &k);

	if (v) {
		*out = *v;
		return 0;
	}
	if (sim_grow((void **)&s->procs, &s->procs_cap, s->nprocs + 1, sizeof(k)) ||
	    ht_add(&s->proc_ht, h, (uint32_t)s->nprocs))
		return oom(s, line);
	s->procs[s->nprocs] = k;
	*out = (uint32_t)s->nprocs++;
	return 0;
}

static int get_dev(struct nl *s, uint32_t proc, uint64_t cuda, uint32_t *out, int line)
{
	struct nl_dev k = { .proc = proc, .cuda = cuda, .world = -1 };
	uint64_t h = hash_u64(hash_u64(HASH0, proc), cuda);
	uint32_t *v = ht_find(&s->dev_ht, h, dev_eq, s, &k);

	if (v) {
		*out = *v;
		return 0;
	}
	if (sim_grow((void **)&s->devs, &s->devs_cap, s->ndevs + 1, sizeof(k)) ||
	    ht_add(&s->dev_ht, h, (uint32_t)s->ndevs))
		return oom(s, line);
	s->devs[s->ndevs] = k;
	*out = (uint32_t)s->ndevs++;
	return 0;
}

static uint64_t lc_hash(uint32_t proc, uint64_t ptr)
{
	return hash_u64(hash_u64(HASH0 ^ 0x5a, proc), ptr);
}

/*
 * The prefix before "NCCL INFO": [anything ]host:pid:tid [dev]. Gives the
 * process ("host:pid") and the device number in brackets.
 */
static bool parse_prefix(const char *ls, const char *pe, const char **ps, size_t *pn,
			 uint64_t *dev)
{
	const char *p = pe, *rb, *lb, *te, *tb, *c2 = NULL, *c1 = NULL;
	uint64_t v;

	while (p > ls && (p[-1] == ' ' || p[-1] == '\t'))
		p--;
	if (p == ls || p[-1] != ']')
		return false;
	rb = p - 1;
	for (lb = rb; lb > ls && lb[-1] != '['; lb--)
		;
	if (lb == ls)
		return false;
	{
		const char *q = lb;

		if (!scan_dec(&q, rb, &v) || q != rb)
			return false;
	}
	*dev = v;
	te = lb - 1;		/* the '[' */
	while (te > ls && (te[-1] == ' ' || te[-1] == '\t'))
		te--;
	for (tb = te; tb > ls && tb[-1] != ' ' && tb[-1] != '\t'; tb--)
		;
	/* host:pid:tid - the last two colons split it */
	for (const char *q = te; q > tb; q--)
		if (q[-1] == ':') {
			if (!c2)
				c2 = q - 1;
			else {
				c1 = q - 1;
				break;
			}
		}
	if (!c1 || c1 == tb || c2 + 1 >= te)
		return false;
	for (const char *q = c1 + 1; q < c2; q++)
		if (!isdigit((unsigned char)*q))
			return false;
	if (c1 + 1 == c2)
		return false;
	for (const char *q = c2 + 1; q < te; q++)
		if (!isdigit((unsigned char)*q))
			return false;
	*ps = tb;
	*pn = (size_t)(c2 - tb);
	return true;
}

static const struct {
	const char *name;
	enum rec_kind kind;
	enum trace_coll coll;
} nccl_funcs[] = {
	{ "AllReduce", REC_COLL, TRACE_ALLREDUCE },
	{ "AllGather", REC_COLL, TRACE_ALLGATHER },
	{ "ReduceScatter", REC_COLL, TRACE_REDUCESCATTER },
	{ "Broadcast", REC_COLL, TRACE_BROADCAST },
	{ "Bcast", REC_COLL, TRACE_BROADCAST },		/* legacy ncclBcast() */
	{ "Reduce", REC_COLL, TRACE_REDUCE },
	{ "AlltoAll", REC_COLL, TRACE_ALLTOALL },	/* ncclAlltoAll (NCCL 2.28) */
	{ "AllToAll", REC_COLL, TRACE_ALLTOALL },
	{ "Send", REC_SEND, TRACE_ALLREDUCE },
	{ "Recv", REC_RECV, TRACE_ALLREDUCE },
};

/* The value after " key " in [p, e), as a decimal or hex number. */
static bool field(const char *p, const char *e, const char *key, bool hex, uint64_t *v,
		  const char **at)
{
	const char *k = find(p, e, key);

	if (!k)
		return false;
	k += strlen(key);
	skip_blanks(&k, e);
	*at = k;
	return hex ? scan_hex(&k, e, v) : scan_dec(&k, e, v);
}

/* An INIT line: "comm 0x.. rank R nranks N [cudaDev D] ... [commId 0x..]". */
static int parse_init(struct nl *s, uint32_t proc, uint64_t pdev, const char *m,
		      const char *e, int line)
{
	const char *p = find(m, e, "comm ");
	uint64_t ptr, rank, nranks, cuda = pdev, commid = 0;
	bool has_commid = false, has_cuda = false;
	struct nl_lcomm k, *l;
	const char *at;
	uint32_t *slot, dev = 0;

	if (!p)
		return 0;
	p += 5;
	if (!scan_hex(&p, e, &ptr))
		return 0;
	skip_blanks(&p, e);
	if (!lit(&p, e, "rank"))
		return 0;
	skip_blanks(&p, e);
	if (!scan_dec(&p, e, &rank))
		return 0;
	skip_blanks(&p, e);
	if (!lit(&p, e, "nranks") && !lit(&p, e, "nRanks"))
		return 0;
	skip_blanks(&p, e);
	if (!scan_dec(&p, e, &nranks))
		return 0;
	if (!nranks || nranks > TRACE_MAX_RANKS || rank >= nranks)
		return nerr(s, line, (int)(p - m), "comm 0x%" PRIx64 ": rank %" PRIu64
			    " of %" PRIu64 " ranks is out of range", ptr, rank, nranks);
	{
		uint64_t v;

		if (field(p, e, " cudaDev ", false, &v, &at)) {
			cuda = v;
			has_cuda = true;
		}
		if (field(p, e, " commId ", true, &v, &at)) {
			commid = v;
			has_commid = true;
		}
	}
	s->any_init = true;
	if (get_dev(s, proc, cuda, &dev, line))
		return -1;
	k = (struct nl_lcomm){ .proc = proc, .dev = dev, .ptr = ptr, .rank = (int32_t)rank,
			       .nranks = (uint32_t)nranks, .commid = commid,
			       .has_commid = has_commid, .has_cuda = has_cuda, .line = line,
			       .g = NONE };
	slot = ht_find(&s->lc_ht, lc_hash(proc, ptr), lc_eq, s, &k);
	if (slot) {
		l = &s->lc[*slot];
		/*
		 * START and COMPLETE lines of one init say the same thing;
		 * lines that name no cudaDev (the 2.2x "nRanks ... localRanks"
		 * line) take the printing thread's, which the others correct.
		 */
		if (l->rank == k.rank && l->nranks == k.nranks &&
		    (!l->has_commid || !has_commid || l->commid == commid) &&
		    (l->dev == dev || !l->has_cuda || !has_cuda)) {
			if (has_commid && !l->has_commid) {
				l->commid = commid;
				l->has_commid = true;
			}
			if (has_cuda && !l->has_cuda) {
				l->dev = dev;
				l->has_cuda = true;
			}
			return 0;
		}
		/* a new communicator at a freed comm's address */
	}
	if (sim_grow((void **)&s->lc, &s->lc_cap, s->nlc + 1, sizeof(k)))
		return oom(s, line);
	s->lc[s->nlc] = k;
	if (slot)
		*slot = (uint32_t)s->nlc;
	else if (ht_add(&s->lc_ht, lc_hash(proc, ptr), (uint32_t)s->nlc))
		return oom(s, line);
	s->nlc++;
	return 0;
}

/* "Name: opCount X ... count N datatype D op O root R comm 0x.. [nranks=N] stream 0x..". */
static int parse_coll(struct nl *s, uint32_t proc, const char *ls, const char *m,
		      const char *ne, const char *e, int line)
{
	struct nl_rec r = { .line = line, .node = NONE };
	struct nl_lcomm k;
	uint64_t ptr, nr = 0;
	const char *p = ne + 1, *at;
	uint32_t *slot;
	size_t f;
	char q[64];

	for (f = 0; f < SIM_ARRAY_SIZE(nccl_funcs); f++)
		if (strlen(nccl_funcs[f].name) == (size_t)(ne - m) &&
		    !memcmp(nccl_funcs[f].name, m, (size_t)(ne - m)))
			break;
	if (f == SIM_ARRAY_SIZE(nccl_funcs))
		return nerr(s, line, (int)(m - ls) + 1, "NCCL operation %s is not supported "
			    "(expected AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, "
			    "AlltoAll, Send or Recv)", quote(m, (size_t)(ne - m), q, sizeof(q)));
	r.kind = nccl_funcs[f].kind;
	r.coll = nccl_funcs[f].coll;
	r.name = m;
	r.namelen = (size_t)(ne - m);
	skip_blanks(&p, e);
	if (!lit(&p, e, "opCount"))
		return nerr(s, line, (int)(p - ls) + 1, "expected 'opCount <hex>'");
	skip_blanks(&p, e);
	if (!scan_hex(&p, e, &r.opcount))
		return nerr(s, line, (int)(p - ls) + 1, "expected the opCount (hex)");
	if (!field(p, e, " count ", false, &r.count, &at))
		return nerr(s, line, 0, "expected 'count <elements>' in the "
			    "%.*s line", (int)r.namelen, r.name);
	if (!field(p, e, " datatype ", false, &r.dtype, &at))
		return nerr(s, line, 0, "expected 'datatype <n>' in the %.*s line",
			    (int)r.namelen, r.name);
	r.col_dtype = (int)(at - ls) + 1;
	if (!dtype_size(r.dtype))
		return nerr(s, line, r.col_dtype, "unknown NCCL datatype %" PRIu64 " (expected "
			    "0..11: int8 uint8 int32 uint32 int64 uint64 float16 float32 "
			    "float64 bfloat16 fp8e4m3 fp8e5m2)", r.dtype);
	if (!field(p, e, " op ", false, &r.redop, &at))
		r.redop = UINT64_MAX;
	if (field(p, e, " root ", false, &r.root, &at))
		r.col_root = (int)(at - ls) + 1;
	else if (r.kind != REC_COLL || r.coll == TRACE_BROADCAST || r.coll == TRACE_REDUCE)
		return nerr(s, line, 0, "expected 'root <rank>' in the %.*s line",
			    (int)r.namelen, r.name);
	if (!field(p, e, " comm ", true, &ptr, &at))
		return nerr(s, line, 0, "expected 'comm 0x<pointer>' in the %.*s line",
			    (int)r.namelen, r.name);
	{
		const char *b = find(p, e, "[nranks=");

		if (b) {
			b += 8;
			if (!scan_dec(&b, e, &nr) || !nr || nr > TRACE_MAX_RANKS)
				return nerr(s, line, (int)(b - ls) + 1, "expected [nranks=N] with N "
					    "from 1 to %d", TRACE_MAX_RANKS);
		}
	}
	if (!field(p, e, " stream ", true, &r.stream, &at))
		r.stream = 0;	/* not printed: one stream per comm handle */
	k = (struct nl_lcomm){ .proc = proc, .ptr = ptr };
	slot = ht_find(&s->lc_ht, lc_hash(proc, ptr), lc_eq, s, &k);
	if (!slot) {
		/* no INIT line (yet) for this handle */
		if (!nr)
			return nerr(s, line, 0, "comm 0x%" PRIx64 " has no INIT line and the %.*s "
				    "line has no [nranks=N]: cannot tell the communicator's size",
				    ptr, (int)r.namelen, r.name);
		k = (struct nl_lcomm){ .proc = proc, .dev = NONE, .ptr = ptr, .rank = -1,
				       .nranks = (uint32_t)nr, .line = line, .g = NONE };
		if (sim_grow((void **)&s->lc, &s->lc_cap, s->nlc + 1, sizeof(k)) ||
		    ht_add(&s->lc_ht, lc_hash(proc, ptr), (uint32_t)s->nlc))
			return oom(s, line);
		s->lc[s->nlc] = k;
		r.lcomm = (uint32_t)s->nlc++;
	} else {
		r.lcomm = *slot;
		if (nr && nr != s->lc[r.lcomm].nranks)
			return nerr(s, line, 0, "comm 0x%" PRIx64 " has %" PRIu32 " ranks (INIT line "
				    "%d) but this line says [nranks=%" PRIu64 "]", ptr,
				    s->lc[r.lcomm].nranks, s->lc[r.lcomm].line, nr);
	}
	s->lc[r.lcomm].used = true;
	if (r.kind != REC_COLL || r.coll == TRACE_BROADCAST || r.coll == TRACE_REDUCE) {
		if (r.root >= s->lc[r.lcomm].nranks)
			return nerr(s, line, r.col_root, "%s %" PRIu64 " is not a rank of the "
				    "communicator (%" PRIu32 " ranks)", r.kind == REC_COLL ?
				    "root" : "peer", r.root, s->lc[r.lcomm].nranks);
	}
	if (!r.count)
		return 0;	/* moves nothing */
	if (sim_grow((void **)&s->recs, &s->recs_cap, s->nrecs + 1, sizeof(r)))
		return oom(s, line);
	s->recs[s->nrecs++] = r;
	return 0;
}

static int parse_log(struct nl *s, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	int line = 0;

	while (p < end) {
		const char *ls = p, *le = memchr(p, '\n', (size_t)(end - p)), *info, *m, *ne;
		const char *ps;
		size_t pn;
		uint64_t dev = 0;
		uint32_t proc = 0;
		bool coll;

		if (!le)
			le = end;
		p = le < end ? le + 1 : end;
		line++;
		if (le > ls && le[-1] == '\r')
			le--;
		info = find(ls, le, "NCCL INFO ");
		if (!info)
			continue;
		m = info + 10;
		/* "Name: opCount" marks a collective or point-to-point call */
		for (ne = m; ne < le && isalpha((unsigned char)*ne); ne++)
			;
		coll = ne > m && ne < le && *ne == ':' && find(ne, le, ": opCount ") == ne;
		if (!parse_prefix(ls, info, &ps, &pn, &dev)) {
			if (coll)
				return nerr(s, line, 1, "expected the NCCL prefix 'host:pid:tid "
					    "[cudaDev]' before 'NCCL INFO'");
			continue;
		}
		if (get_proc(s, ps, pn, &proc, line))
			return -1;
		if (coll) {
			if (parse_coll(s, proc, ls, m, ne, le, line))
				return -1;
		} else if (parse_init(s, proc, dev, m, le, line)) {
			return -1;
		}
	}
	if (!s->nrecs)
		return nerr(s, line ? line : 1, 0, "no NCCL collective or Send/Recv lines with a "
			    "count: expected lines like 'host:pid:tid [0] NCCL INFO AllReduce: "
			    "opCount 0 ... count N datatype 7 ...' (log with NCCL_DEBUG=INFO "
			    "NCCL_DEBUG_SUBSYS=INIT,COLL)");
	return 0;
}

/* ---- communicators ----------------------------------------------------------- */

struct gkey {
	uint64_t a, b;
	uint32_t nranks;
};

static bool gc_eq(const void *ctx, uint32_t v, const void *key)
{
	const struct nl *s = ctx;
	const struct gkey *k = key;

	return s->gc[v].key_a == k->a && s->gc[v].key_b == k->b && s->gc[v].nranks == k->nranks;
}

static int lc_label(const struct nl *s, uint32_t l, char *buf, size_t len)
{
	const struct nl_lcomm *c = &s->lc[l];
	const struct nl_proc *pr = &s->procs[c->proc];

	return snprintf(buf, len, "comm 0x%" PRIx64 " of %.*s", c->ptr, (int)pr->n, pr->s);
}

static int add_member(struct nl *s, uint32_t g, uint32_t l, int32_t rank)
{
	struct nl_gcomm *gc = &s->gc[g];
	char a[160], b[160];

	if (gc->member[rank] != NONE) {
		lc_label(s, gc->member[rank], a, sizeof(a));
		lc_label(s, l, b, sizeof(b));
		return nerr(s, s->lc[l].line, 0, "two handles claim rank %" PRId32 " of one "
			    "communicator (%s, line %d, and %s): cannot tell the communicators "
			    "apart; NCCL 2.13 and later print a commId in the INIT lines that "
			    "settles it", rank, a, s->lc[gc->member[rank]].line, b);
	}
	gc->member[rank] = l;
	gc->nmembers++;
	s->lc[l].g = g;
	return 0;
}

static int new_gcomm(struct nl *s, const struct gkey *k, int line, uint32_t *out)
{
	struct nl_gcomm g = { .nranks = k->nranks, .line = line, .tcomm = -1,
			      .key_a = k->a, .key_b = k->b };

	g.member = malloc(k->nranks * sizeof(*g.member));
	if (!g.member || sim_grow((void **)&s->gc, &s->gc_cap, s->ngc + 1, sizeof(g))) {
		free(g.member);
		return oom(s, line);
	}
	for (uint32_t i = 0; i < k->nranks; i++)
		g.member[i] = NONE;
	s->gc[s->ngc] = g;
	*out = (uint32_t)s->ngc++;
	return 0;
}

/*
 * Group the handles into communicators. With INIT lines: by commId, or by
 * (size, k) for the k-th communicator of that size on the device. Without:
 * one communicator, ranks in order of first appearance.
 */
struct ord_ent {
	uint32_t dev, nranks, n;
};

static bool ord_eq(const void *ctx, uint32_t v, const void *key)
{
	const struct ord_ent *e = &((const struct ord_ent *)ctx)[v], *k = key;

	return e->dev == k->dev && e->nranks == k->nranks;
}

static int group_comms(struct nl *s)
{
	struct ht ght = { 0 }, oht = { 0 };
	struct ord_ent *ords = NULL;
	size_t nords = 0, ords_cap = 0;
	int rc = 0;

	if (!s->any_init) {
		uint32_t n = s->lc[0].nranks, g;
		struct gkey k = { 0, 0, n };

		for (size_t i = 1; i < s->nlc; i++)
			if (s->lc[i].nranks != n)
				return nerr(s, s->lc[i].line, 0, "the log has no INIT lines, so only "
					    "one communicator can be read, but comm 0x%" PRIx64 " has "
					    "%" PRIu32 " ranks and comm 0x%" PRIx64 " (line %d) has %"
					    PRIu32 ": log with NCCL_DEBUG_SUBSYS=INIT,COLL",
					    s->lc[i].ptr, s->lc[i].nranks, s->lc[0].ptr,
					    s->lc[0].line, n);
		if (s->nlc != n)
			return nerr(s, s->lc[s->nlc - 1].line, 0, "the log has no INIT lines, so "
				    "the ranks are the comm handles in order of appearance, but it "
				    "shows %zu handle(s) for a communicator of %" PRIu32 " ranks: "
				    "concatenate every rank's log, or log with "
				    "NCCL_DEBUG_SUBSYS=INIT,COLL", s->nlc, n);
		if (new_gcomm(s, &k, s->lc[0].line, &g))
			return -1;
		for (size_t i = 0; i < s->nlc; i++) {
			s->lc[i].rank = (int32_t)i;
			if (add_member(s, g, (uint32_t)i, (int32_t)i))
				return -1;
		}
		return 0;
	}
	for (size_t i = 0; i < s->nlc; i++) {
		struct nl_lcomm *l = &s->lc[i];
		struct gkey k = { 0, 0, l->nranks };
		uint32_t *slot, g;

		if (l->rank < 0) {
			char a[160];

			lc_label(s, (uint32_t)i, a, sizeof(a));
			rc = nerr(s, l->line, 0, "%s has no INIT line telling its rank: log with "
				  "NCCL_DEBUG_SUBSYS=INIT,COLL and concatenate the whole log of "
				  "every rank", a);
			break;
		}
		if (l->has_commid) {
			k.a = l->commid;
			k.b = 1;
		} else {
			/* the k-th communicator of this size that the device joined */
			struct ord_ent ok = { l->dev, l->nranks, 0 };
			uint64_t oh = hash_u64(hash_u64(HASH0 ^ 0x0d, l->dev), l->nranks);
			uint32_t *ov = ht_find(&oht, oh, ord_eq, ords, &ok);

			if (!ov) {
				if (sim_grow((void **)&ords, &ords_cap, nords + 1, sizeof(ok)) ||
				    ht_add(&oht, oh, (uint32_t)nords)) {
					rc = oom(s, l->line);
					break;
				}
				ords[nords++] = ok;
				k.a = 0;
			} else {
				k.a = ++ords[*ov].n;
			}
			k.b = 2;
		}
		slot = ht_find(&ght, hash_u64(hash_u64(hash_u64(HASH0, k.a), k.b), k.nranks),
			       gc_eq, s, &k);
		if (slot) {
			g = *slot;
		} else {
			if (new_gcomm(s, &k, l->line, &g) ||
			    ht_add(&ght, hash_u64(hash_u64(hash_u64(HASH0, k.a), k.b), k.nranks), g)) {
				rc = -1;
				break;
			}
		}
		if (add_member(s, g, (uint32_t)i, l->rank)) {
			rc = -1;
			break;
		}
	}
	ht_free(&ght);
	ht_free(&oht);
	free(ords);
	return rc;
}

/* The world: the largest complete communicator; then every device's rank. */
static int pick_world(struct nl *s)
{
	uint32_t best = NONE;

	for (size_t g = 0; g < s->ngc; g++) {
		const struct nl_gcomm *c = &s->gc[g];

		for (uint32_t i = 0; i < c->nranks; i++)
			if (c->member[i] != NONE && s->lc[c->member[i]].used)
				s->gc[g].used = true;
	}
	for (size_t g = 0; g < s->ngc; g++) {
		const struct nl_gcomm *c = &s->gc[g];

		if (c->used && c->nmembers < c->nranks) {
			uint32_t miss = 0;

			while (c->member[miss] != NONE)
				miss++;
			return nerr(s, c->line, 0, "a communicator of %" PRIu32 " ranks (first seen "
				    "here) has only %" PRIu32 " of them in the log (rank %" PRIu32
				    " is missing): concatenate every rank's log into one file",
				    c->nranks, c->nmembers, miss);
		}
		if (c->nmembers == c->nranks && (best == NONE || c->nranks > s->gc[best].nranks))
			best = (uint32_t)g;
	}
	s->world = best;
	s->world_n = (int32_t)s->gc[best].nranks;
	if (!s->any_init)
		return 0;
	for (uint32_t r = 0; r < s->gc[best].nranks; r++) {
		struct nl_dev *dv = &s->devs[s->lc[s->gc[best].member[r]].dev];

		if (dv->world >= 0)
			return nerr(s, s->lc[s->gc[best].member[r]].line, 0, "one device holds "
				    "ranks %" PRId32 " and %" PRIu32 " of the same communicator",
				    dv->world, r);
		dv->world = (int32_t)r;
	}
	for (size_t i = 0; i < s->nlc; i++) {
		const struct nl_lcomm *l = &s->lc[i];

		if (s->gc[l->g].used && s->devs[l->dev].world < 0) {
			char a[160];

			lc_label(s, (uint32_t)i, a, sizeof(a));
			return nerr(s, l->line, 0, "%s (cudaDev %" PRIu64 ") is not part of the "
				    "largest communicator (%" PRId32 " ranks), which ibfab takes as "
				    "the world: its rank there is unknown", a, s->devs[l->dev].cuda,
				    s->world_n);
		}
	}
	return 0;
}

static int32_t world_rank(const struct nl *s, uint32_t lcomm)
{
	const struct nl_lcomm *l = &s->lc[lcomm];

	return s->any_init ? s->devs[l->dev].world : l->rank;
}

/* Trace communicators: the world is comms[0]; the others by world rank. */
static int make_comms(struct nl *s)
{
	int32_t *ranks = NULL;
	int rc = 0;

	for (size_t g = 0; g < s->ngc && !rc; g++) {
		struct nl_gcomm *c = &s->gc[g];
		bool ident = c->nranks == (uint32_t)s->world_n;

		if (!c->used)
			continue;
		free(ranks);
		ranks = malloc(c->nranks * sizeof(*ranks));
		if (!ranks)
			return oom(s, c->line);
		for (uint32_t r = 0; r < c->nranks; r++) {
			ranks[r] = world_rank(s, c->member[r]);
			ident &= ranks[r] == (int32_t)r;
		}
		if (ident) {
			c->tcomm = 0;
			continue;
		}
		c->tcomm = trace_add_comm(s->t, ranks, c->nranks, s->d);
		if (c->tcomm < 0)
			rc = nerr(s, c->line, 0, "%s", s->d->msg);
	}
	free(ranks);
	return rc;
}

/* ---- ops and their order ----------------------------------------------------- */

struct grp_key {
	uint32_t g;
	uint64_t opcount;
	uint32_t occ;
};

static bool grp_eq(const void *ctx, uint32_t v, const void *key)
{
	const struct nl *s = ctx;
	const struct grp_key *k = key;
	const struct nl_rec *r = &s->recs[s->nodes[v].rec];

	return s->lc[r->lcomm].g == k->g && r->opcount == k->opcount && s->nodes[v].occ == k->occ;
}

static bool occ_eq(const void *ctx, uint32_t v, const void *key)
{
	const struct nl *s = ctx;
	const struct occ_ent *e = &s->occ[v], *k = key;

	return e->g == k->g && e->rank == k->rank && e->opcount == k->opcount;
}

/* How many lines of (communicator, rank, opCount) came before this one. */
static int occurrence(struct nl *s, uint32_t g, int32_t rank, uint64_t opcount, uint32_t *k,
		      int line)
{
	struct occ_ent key = { g, rank, opcount, 0 };
	uint64_t h = hash_u64(hash_u64(hash_u64(HASH0, g), (uint64_t)rank), opcount);
	uint32_t *v = ht_find(&s->occ_ht, h, occ_eq, s, &key);

	if (v) {
		*k = s->occ[*v].n++;
		return 0;
	}
	if (sim_grow((void **)&s->occ, &s->occ_cap, s->nocc + 1, sizeof(key)) ||
	    ht_add(&s->occ_ht, h, (uint32_t)s->nocc))
		return oom(s, line);
	key.n = 1;
	s->occ[s->nocc++] = key;
	*k = 0;
	return 0;
}

/*
 * The stream a line runs on: its stream pointer within the process. The
 * NULL stream is per device (the legacy default stream), so there the
 * device (or, with no INIT line, the comm handle) tells them apart.
 */
static int stream_of(struct nl *s, const struct nl_rec *r, struct nl_stream **out)
{
	const struct nl_lcomm *l = &s->lc[r->lcomm];
	uint64_t who = r->stream ? 0 : l->dev != NONE ? l->dev : (r->lcomm | (1ULL << 32));
	struct nl_stream k = { .proc = l->proc, .ptr = r->stream, .who = who };
	uint64_t h = hash_u64(hash_u64(hash_u64(HASH0 ^ 0x77, l->proc), r->stream), who);
	uint32_t *v = ht_find(&s->stream_ht, h, stream_eq, s, &k);

	if (v) {
		*out = &s->streams[*v];
		return 0;
	}
	if (sim_grow((void **)&s->streams, &s->streams_cap, s->nstreams + 1, sizeof(k)) ||
	    ht_add(&s->stream_ht, h, (uint32_t)s->nstreams))
		return oom(s, r->line);
	s->streams[s->nstreams] = k;
	*out = &s->streams[s->nstreams++];
	return 0;
}

static int push(uint32_t **arr, uint32_t *n, uint32_t *cap, uint32_t v)
{
	size_t c = *cap;

	if (sim_grow((void **)arr, &c, (size_t)*n + 1, sizeof(**arr)))
		return -1;
	*cap = (uint32_t)c;
	(*arr)[(*n)++] = v;
	return 0;
}

/* Per-node dependency lists are built as (node, dep) edges, then sorted. */
struct edge {
	uint32_t node, dep;
};

static int cmp_edge(const void *a, const void *b)
{
	const struct edge *x = a, *y = b;

	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return x->dep < y->dep ? -1 : x->dep > y->dep;
}

/* Check one rank's line against the first line of its collective. */
static int same_call(struct nl *s, const struct nl_rec *a, const struct nl_rec *b)
{
	if (a->kind != b->kind || a->coll != b->coll || a->count != b->count ||
	    a->dtype != b->dtype ||
	    ((a->coll == TRACE_BROADCAST || a->coll == TRACE_REDUCE) && a->root != b->root))
		return nerr(s, b->line, 0, "%.*s opCount %" PRIx64 " differs from the call of the "
			    "same opCount on another rank (line %d: %.*s count %" PRIu64
			    " datatype %" PRIu64 " root %" PRIu64 "): the ranks disagree on "
			    "the collective", (int)b->namelen, b->name, b->opcount, a->line,
			    (int)a->namelen, a->name, a->count, a->dtype, a->root);
	return 0;
}

static int add_edge(struct nl *s, struct edge **e, size_t *n, size_t *cap, uint32_t node,
		    uint32_t dep, int line)
{
	if (node == dep)
		return 0;	/* two ranks of one collective on one stream */
	if (sim_grow((void **)e, cap, *n + 1, sizeof(**e)))
		return oom(s, line);
	(*e)[(*n)++] = (struct edge){ node, dep };
	return 0;
}

/* Records to nodes (a collective's lines merge), and stream-order edges. */
static int build_nodes(struct nl *s, struct edge **edges, size_t *nedges)
{
	size_t ecap = 0;

	*edges = NULL;
	*nedges = 0;
	for (size_t i = 0; i < s->nrecs; i++) {
		struct nl_rec *r = &s->recs[i];
		uint32_t g = s->lc[r->lcomm].g, node = NONE, k = 0;
		struct grp_key gk;
		uint64_t gh = 0;
		struct nl_stream *st = NULL;

		if (r->kind == REC_COLL) {
			uint32_t *gv;

			if (occurrence(s, g, s->lc[r->lcomm].rank, r->opcount, &k, r->line))
				return -1;
			gk = (struct grp_key){ g, r->opcount, k };
			gh = hash_u64(hash_u64(hash_u64(HASH0 ^ 0x33, g), r->opcount), k);
			gv = ht_find(&s->grp_ht, gh, grp_eq, s, &gk);
			if (gv) {
				node = *gv;
				if (same_call(s, &s->recs[s->nodes[node].rec], r))
					return -1;
				s->nodes[node].nrec++;
			}
		}
		if (node == NONE) {
			struct nl_node n = { .rec = (uint32_t)i, .nrec = 1, .occ = k, .op = -1 };

			if (sim_grow((void **)&s->nodes, &s->nodes_cap, s->nnodes + 1, sizeof(n)))
				return oom(s, r->line);
			node = (uint32_t)s->nnodes;
			s->nodes[s->nnodes++] = n;
			if (r->kind == REC_COLL && ht_add(&s->grp_ht, gh, node))
				return oom(s, r->line);
		}
		r->node = node;

		/* stream order */
		if (stream_of(s, r, &st))
			return -1;
		if (r->kind == REC_COLL) {
			for (uint32_t j = 0; j < st->nfront; j++)
				if (add_edge(s, edges, nedges, &ecap, node, st->front[j], r->line))
					return -1;
			st->nfront = 0;
			st->in_run = false;
			if (push(&st->front, &st->nfront, &st->front_cap, node))
				return oom(s, r->line);
			continue;
		}
		if (!st->in_run) {
			/* a Send/Recv run starts: all of it waits for the same ops */
			uint32_t *tmp = st->base, tcap = st->base_cap;

			st->base = st->front;
			st->base_cap = st->front_cap;
			st->nbase = st->nfront;
			st->front = tmp;
			st->front_cap = tcap;
			st->nfront = 0;
			st->in_run = true;
		}
		for (uint32_t j = 0; j < st->nbase; j++)
			if (add_edge(s, edges, nedges, &ecap, node, st->base[j], r->line))
				return -1;
		if (push(&st->front, &st->nfront, &st->front_cap, node))
			return oom(s, r->line);
	}
	/* every rank of a collective's communicator must have logged it */
	for (size_t n = 0; n < s->nnodes; n++) {
		const struct nl_rec *r = &s->recs[s->nodes[n].rec];
		const struct nl_gcomm *c = &s->gc[s->lc[r->lcomm].g];

		if (r->kind == REC_COLL && s->nodes[n].nrec != c->nranks)
			return nerr(s, r->line, 0, "%.*s opCount %" PRIx64 " was logged by %" PRIu32
				    " of the communicator's %" PRIu32 " ranks: concatenate every "
				    "rank's log into one file", (int)r->namelen, r->name, r->opcount,
				    s->nodes[n].nrec, c->nranks);
	}
	return 0;
}

static int emit_node(struct nl *s, struct nl_node *n)
{
	const struct nl_rec *r = &s->recs[n->rec];
	const struct nl_lcomm *l = &s->lc[r->lcomm];
	const struct nl_gcomm *c = &s->gc[l->g];
	struct trace_op op;
	uint32_t *deps;
	uint64_t mult = 1, bytes;
	int ix;

	memset(&op, 0, sizeof(op));
	op.id = (uint32_t)s->t->nops;
	op.file = s->ofile;
	op.line = r->line;
	op.chunks = op.channels = 0;	/* the lowering chooses */
	op.peer = -1;
	if (r->kind == REC_COLL && (r->coll == TRACE_ALLGATHER || r->coll == TRACE_REDUCESCATTER ||
				    r->coll == TRACE_ALLTOALL))
		mult = c->nranks;	/* NCCL's count is per rank; S is the whole buffer */
	if (r->count > UINT64_MAX / mult / dtype_size(r->dtype))
		return nerr(s, r->line, 0, "count %" PRIu64 " is too large", r->count);
	bytes = r->count * mult * dtype_size(r->dtype);
	op.bytes = bytes;
	/* the table's type and op (trace_dtypes is ncclDataType_t's order;
	 * ncclRedOp_t's are sum prod max min avg, and an op made at run time,
	 * 5 on, is nccl-tests' premultiplied sum, its "mulsum") */
	op.dtype = (uint8_t)(r->dtype + 1);
	if (r->redop != UINT64_MAX)
		op.redop = (uint8_t)((r->redop < TRACE_NREDOPS - 1 ? r->redop : TRACE_NREDOPS - 1) + 1);
	if (r->kind == REC_COLL) {
		op.kind = TRACE_COLL;
		op.rank = -1;
		op.coll = r->coll;
		op.algo = TRACE_ALGO_AUTO;
		op.comm = (uint32_t)c->tcomm;
		op.root = world_rank(s, c->member[r->root < c->nranks ? r->root : 0]);
		op_name(&op, "%.*s opCount %" PRIx64,
			 (int)(r->namelen > 13 ? 13 : r->namelen), r->name, r->opcount);
	} else {
		op.kind = r->kind == REC_SEND ? TRACE_SEND : TRACE_RECV;
		op.rank = world_rank(s, r->lcomm);
		op.peer = world_rank(s, c->member[r->root]);
		op.tag = (uint32_t)c->tcomm;
		if (op.peer == op.rank)
			return nerr(s, r->line, r->col_root, "%.*s to its own rank", (int)r->namelen,
				    r->name);
		op_name(&op, "%.*s opCount %" PRIx64, (int)r->namelen,
			 r->name, r->opcount);
	}
	deps = malloc((n->ndeps + 1) * sizeof(*deps));
	if (!deps)
		return oom(s, r->line);
	for (uint32_t j = 0; j < n->ndeps; j++)
		deps[j] = (uint32_t)s->nodes[s->deps[n->dep_off + j]].op;
	ix = trace_add_op(s->t, &op, deps, n->ndeps, s->d);
	free(deps);
	if (ix < 0)
		return -1;
	n->op = ix;
	return 0;
}

/* Nodes in dependency order (Kahn; ready nodes in order of first line). */
static int emit_nodes(struct nl *s, struct edge *e, size_t ne)
{
	uint32_t *uoff = NULL, *users = NULL, *queue = NULL, head = 0, tail = 0;
	size_t k = 0;
	int rc = -1;

	if (ne)
		qsort(e, ne, sizeof(*e), cmp_edge);
	/* drop repeats: a collective waits once for the previous one, not per rank */
	for (size_t i = 0; i < ne; i++)
		if (!k || e[i].node != e[k - 1].node || e[i].dep != e[k - 1].dep)
			e[k++] = e[i];
	ne = k;
	s->deps = malloc((ne + 1) * sizeof(*s->deps));
	uoff = calloc(s->nnodes + 1, sizeof(*uoff));
	users = malloc((ne + 1) * sizeof(*users));
	queue = malloc((s->nnodes + 1) * sizeof(*queue));
	if (!s->deps || !uoff || !users || !queue) {
		oom(s, 0);
		goto out;
	}
	for (size_t i = 0, j = 0; i < s->nnodes; i++) {
		s->nodes[i].dep_off = (uint32_t)j;
		s->nodes[i].ndeps = 0;
		for (; j < ne && e[j].node == i; j++) {
			s->deps[j] = e[j].dep;
			s->nodes[i].ndeps++;
			uoff[e[j].dep + 1]++;
		}
	}
	for (size_t i = 0; i < s->nnodes; i++)
		uoff[i + 1] += uoff[i];
	{
		uint32_t *fill = calloc(s->nnodes + 1, sizeof(*fill));

		if (!fill) {
			oom(s, 0);
			goto out;
		}
		for (size_t j = 0; j < ne; j++)
			users[uoff[e[j].dep] + fill[e[j].dep]++] = e[j].node;
		free(fill);
	}
	for (size_t i = 0; i < s->nnodes; i++) {
		s->nodes[i].pending = s->nodes[i].ndeps;
		if (!s->nodes[i].pending)
			queue[tail++] = (uint32_t)i;
	}
	while (head < tail) {
		uint32_t i = queue[head++];

		if (emit_node(s, &s->nodes[i]))
			goto out;
		for (uint32_t u = uoff[i]; u < uoff[i + 1]; u++)
			if (!--s->nodes[users[u]].pending)
				queue[tail++] = users[u];
	}
	if (tail < s->nnodes) {
		/* some ops wait for each other across streams: report two of them */
		size_t a = 0;
		const struct nl_rec *ra, *rb;

		while (s->nodes[a].op >= 0 || !s->nodes[a].ndeps)
			a++;
		for (size_t step = 0; step < s->nnodes; step++) {
			const struct nl_node *na = &s->nodes[a];

			for (uint32_t j = 0; j < na->ndeps; j++)
				if (s->nodes[s->deps[na->dep_off + j]].op < 0) {
					a = s->deps[na->dep_off + j];
					break;
				}
		}
		ra = &s->recs[s->nodes[a].rec];
		for (uint32_t j = 0; j < s->nodes[a].ndeps; j++)
			if (s->nodes[s->deps[s->nodes[a].dep_off + j]].op < 0)
				break;
		rb = &s->recs[s->nodes[s->deps[s->nodes[a].dep_off]].rec];
		for (uint32_t j = 0; j < s->nodes[a].ndeps; j++) {
			const struct nl_node *nb = &s->nodes[s->deps[s->nodes[a].dep_off + j]];

			if (nb->op < 0) {
				rb = &s->recs[nb->rec];
				break;
			}
		}
		nerr(s, ra->line, 0, "the ranks issue their calls in orders that wait for each "
		     "other (NCCL would hang too): this %.*s opCount %" PRIx64 " comes after the "
		     "%.*s opCount %" PRIx64 " of line %d on one rank's stream, and before it on "
		     "another's", (int)ra->namelen, ra->name, ra->opcount, (int)rb->namelen,
		     rb->name, rb->opcount, rb->line);
		goto out;
	}
	rc = 0;
out:
	free(uoff);
	free(users);
	free(queue);
	return rc;
}

static void nl_free(struct nl *s)
{
	free(s->procs);
	free(s->devs);
	free(s->lc);
	for (size_t g = 0; g < s->ngc; g++)
		free(s->gc[g].member);
	free(s->gc);
	free(s->recs);
	free(s->nodes);
	free(s->deps);
	for (size_t i = 0; i < s->nstreams; i++) {
		free(s->streams[i].front);
		free(s->streams[i].base);
	}
	free(s->streams);
	free(s->occ);
	ht_free(&s->proc_ht);
	ht_free(&s->dev_ht);
	ht_free(&s->lc_ht);
	ht_free(&s->stream_ht);
	ht_free(&s->grp_ht);
	ht_free(&s->occ_ht);
}

int import_nccl_log(const char *path, const char *text, size_t len, struct trace *t,
		    struct sim_diag *d)
{
	struct nl s;
	struct edge *edges = NULL;
	size_t nedges = 0;
	int rc = -1;

	memset(&s, 0, sizeof(s));
	s.file = path;
	s.d = d;
	s.t = t;
	if (parse_log(&s, text, len) || group_comms(&s) || pick_world(&s))
		goto out;
	s.ofile = trace_add_file(t, path);
	if (!s.ofile) {
		oom(&s, 0);
		goto out;
	}
	t->map = TRACE_MAP_LINEAR;
	if (trace_set_ranks(t, s.world_n, d) || make_comms(&s) ||
	    build_nodes(&s, &edges, &nedges) || emit_nodes(&s, edges, nedges))
		goto out;
	rc = 0;
out:
	free(edges);
	nl_free(&s);
	return rc;
}

/* ============================================================================
 * nccl-tests command lines
 * ========================================================================== */

enum nt_kind { NT_COLL, NT_SENDRECV, NT_UNSUPPORTED };

static const struct nt_prog {
	const char *name;
	enum nt_kind kind;
	enum trace_coll coll;
	bool reduces;		/* -o all repeats the sweep per op (sendrecv_perf's too: it prints the op) */
	bool rooted;		/* -r all repeats it per root */
	bool per_rank;		/* count is split over the ranks (all_gather, ...) */
} nt_progs[] = {
	{ "all_reduce_perf", NT_COLL, TRACE_ALLREDUCE, true, false, false },
	{ "all_gather_perf", NT_COLL, TRACE_ALLGATHER, false, false, true },
	{ "reduce_scatter_perf", NT_COLL, TRACE_REDUCESCATTER, true, false, true },
	{ "alltoall_perf", NT_COLL, TRACE_ALLTOALL, false, false, true },
	{ "broadcast_perf", NT_COLL, TRACE_BROADCAST, false, true, false },
	{ "reduce_perf", NT_COLL, TRACE_REDUCE, true, true, false },
	{ "sendrecv_perf", NT_SENDRECV, TRACE_ALLREDUCE, true, false, false },
	{ "gather_perf", NT_UNSUPPORTED, TRACE_ALLREDUCE, false, true, true },
	{ "scatter_perf", NT_UNSUPPORTED, TRACE_ALLREDUCE, false, true, true },
	{ "hypercube_perf", NT_UNSUPPORTED, TRACE_ALLREDUCE, false, false, true },
};

/* `-d all`: nccl-tests' types but its FP8 two (trace_dtypes' first ten),
 * as a build without FP8 or a GPU before Hopper runs it */
#define NT_ALL_TYPES 10

struct ntok {
	const char *s;
	size_t n;
	int line, col;
};

struct nt {
	const char *file, *ofile;
	struct sim_diag *d;
	struct trace *t;
	int32_t nranks;		/* of the first command; 0 before it */
	int first_line;
	int prev;		/* the last op emitted, -1: none (the chain) */
	int32_t *prev_rank;	/* sendrecv: per rank, its last op of the previous step */
	bool sr_open;		/* sendrecv ops since the last barrier (nt_barrier) */
	uint64_t rpn;		/* ranks a node, of the first command (0: not said) */
};

struct nt_cmd {
	const struct nt_prog *prog;
	int line;
	uint64_t np, nthreads, ngpus, minb, maxb, stepb, stepf, iters, agg, graphs, cycles;
	uint64_t per_node;	/* the launcher's processes a node, 0 not said */
	int type, op, root;	/* -1: all */
	bool np_given;
	/* NCCL_ALGO's and NCCL_PROTO's lists (nt_env): the algorithms of
	 * ibfab's it leaves (bit per enum trace_algo: ring, tree, collnet;
	 * 0 = not given) and the protocols (bit per enum trace_proto) */
	unsigned algos;
	uint8_t protos;
	const struct ntok *algo_tok;	/* where NCCL_ALGO was given */
	bool no_nvls;		/* NCCL_NVLS_ENABLE=0 */
	bool collnet;		/* NCCL_COLLNET_ENABLE=1 */
};

static int nterr(struct nt *s, const struct ntok *k, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int nterr(struct nt *s, const struct ntok *k, const char *fmt, ...)
{
	char msg[sizeof(s->d->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return sim_diag_set(s->d, s->file, k->line, k->col, "%s", msg);
}

static bool tok_eq(const struct ntok *k, const char *w)
{
	return strlen(w) == k->n && !memcmp(k->s, w, k->n);
}

/* The last path component of a token. */
static void basename_of(const struct ntok *k, const char **b, size_t *n)
{
	const char *s = k->s;

	for (size_t i = 0; i < k->n; i++)
		if (k->s[i] == '/')
			s = k->s + i + 1;
	*b = s;
	*n = (size_t)(k->s + k->n - s);
}

static bool ends_with(const char *s, size_t n, const char *suf)
{
	size_t m = strlen(suf);

	return n >= m && !memcmp(s + n - m, suf, m);
}

/* An nccl-tests program name: "all_reduce_perf", also "..._perf_mpi". */
static bool is_prog(const struct ntok *k)
{
	const char *b;
	size_t n;

	basename_of(k, &b, &n);
	if (ends_with(b, n, "_mpi"))
		n -= 4;
	if (!ends_with(b, n, "_perf") || n == 5)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!islower((unsigned char)b[i]) && b[i] != '_')
			return false;
	return true;
}

/* strtol(s, NULL, 0) as nccl-tests reads its numbers, but whole-token. */
static int nt_int(struct nt *s, const struct ntok *k, const char *opt, uint64_t max,
		  uint64_t *v)
{
	char buf[40], *e;
	unsigned long long x;

	if (!k->n || k->n >= sizeof(buf) || k->s[0] == '-' || k->s[0] == '+')
		goto bad;
	memcpy(buf, k->s, k->n);
	buf[k->n] = 0;
	errno = 0;
	x = strtoull(buf, &e, 0);
	if (errno || *e || x > max)
		goto bad;
	*v = x;
	return 0;
bad:
	{
		char q[64];

		return nterr(s, k, "%s: expected a whole number from 0 to %" PRIu64 ", got %s",
			     opt, max, quote(k->s, k->n, q, sizeof(q)));
	}
}

/*
 * A size as nccl-tests' parsesize() reads it: a number, then optionally
 * K, M or G (either case, powers of 1024); "128MB" and "1GiB" read as
 * nccl-tests reads them (the letters after the first are ignored there).
 */
static int nt_size(struct nt *s, const struct ntok *k, const char *opt, uint64_t *v)
{
	char buf[48], *e, q[64];
	double x, unit = 1;

	if (!k->n || k->n >= sizeof(buf) || !(isdigit((unsigned char)k->s[0]) || k->s[0] == '.'))
		goto bad;
	memcpy(buf, k->s, k->n);
	buf[k->n] = 0;
	errno = 0;
	x = strtod(buf, &e);
	if (errno || e == buf)
		goto bad;
	if (*e) {
		switch (*e) {
		case 'K': case 'k': unit = 1024.0; break;
		case 'M': case 'm': unit = 1024.0 * 1024; break;
		case 'G': case 'g': unit = 1024.0 * 1024 * 1024; break;
		default: goto bad;
		}
		e++;
		if (*e && strcmp(e, "B") && strcmp(e, "iB"))
			goto bad;
	}
	x *= unit;
	if (!(x >= 0) || x >= 9.2e18)
		goto bad;
	*v = (uint64_t)x;
	return 0;
bad:
	return nterr(s, k, "%s: expected a size in bytes such as 8, 64K, 128M or 1G, got %s", opt,
		     quote(k->s, k->n, q, sizeof(q)));
}

/* Long option names and their short letters (nccl-tests' longopts). */
static const struct {
	const char *name;
	char letter;
} nt_long[] = {
	{ "nthreads", 't' }, { "ngpus", 'g' }, { "minbytes", 'b' }, { "maxbytes", 'e' },
	{ "stepbytes", 'i' }, { "stepfactor", 'f' }, { "iters", 'n' }, { "agg_iters", 'm' },
	{ "warmup_iters", 'w' }, { "parallel_init", 'p' }, { "check", 'c' }, { "op", 'o' },
	{ "datatype", 'd' }, { "root", 'r' }, { "blocking", 'z' }, { "stream_null", 'y' },
	{ "timeout", 'T' }, { "cudagraph", 'G' }, { "report_cputime", 'C' }, { "average", 'a' },
	{ "output_file", 'F' }, { "run_cycles", 'N' }, { "local_register", 'R' },
};

static int nt_option(struct nt *s, struct nt_cmd *c, char letter, const struct ntok *opt,
		     const struct ntok *val)
{
	char o[4] = { '-', letter, 0, 0 };
	uint64_t v;

	switch (letter) {
	case 't':
		if (nt_int(s, val, o, 1024, &c->nthreads))
			return -1;
		return c->nthreads ? 0 : nterr(s, val, "-t: expected at least 1 thread");
	case 'g':
		if (nt_int(s, val, o, 1024, &c->ngpus))
			return -1;
		return c->ngpus ? 0 : nterr(s, val, "-g: expected at least 1 GPU per thread");
	case 'b':
		return nt_size(s, val, o, &c->minb);
	case 'e':
		return nt_size(s, val, o, &c->maxb);
	case 'i':
		return nt_int(s, val, o, UINT64_MAX / 2, &c->stepb);
	case 'f':
		return nt_int(s, val, o, 1u << 20, &c->stepf);
	case 'n':
		if (nt_int(s, val, o, TRACE_MAX_OPS, &c->iters))
			return -1;
		return c->iters ? 0 : nterr(s, val, "-n: 0 iterations time nothing; expected at least 1");
	case 'm':
		if (nt_int(s, val, o, TRACE_MAX_OPS, &c->agg))
			return -1;
		return c->agg ? 0 : nterr(s, val, "-m: expected at least 1 op per iteration");
	case 'G':
		return nt_int(s, val, o, TRACE_MAX_OPS, &c->graphs);
	case 'N':
		if (nt_int(s, val, o, TRACE_MAX_OPS, &c->cycles))
			return -1;
		return c->cycles ? 0 : nterr(s, val, "-N 0 runs forever: expected a number of cycles");
	case 'd':
		if (tok_eq(val, "all")) {
			c->type = -1;
			return 0;
		}
		for (size_t i = 0; i < TRACE_NDTYPES; i++)
			if (tok_eq(val, trace_dtypes[i].name)) {
				c->type = (int)i;
				return 0;
			}
		return nterr(s, val, "-d: expected a type (int8 uint8 int32 uint32 int64 uint64 "
			     "half float double bfloat16 f8e4m3 f8e5m2) or all");
	case 'o':
		if (tok_eq(val, "all")) {
			c->op = -1;
			return 0;
		}
		for (size_t i = 0; i < TRACE_NREDOPS; i++)
			if (tok_eq(val, trace_redop_names[i])) {
				c->op = (int)i;
				return 0;
			}
		return nterr(s, val, "-o: expected sum, prod, max, min, avg, mulsum or all");
	case 'r':
		if (tok_eq(val, "all") || tok_eq(val, "-1")) {
			c->root = -1;
			return 0;
		}
		if (nt_int(s, val, o, TRACE_MAX_RANKS, &v))
			return -1;
		c->root = (int)v;
		return 0;
	case 'w': case 'p': case 'c': case 'z': case 'y': case 'T': case 'C': case 'a': case 'R':
		/* warm-up, checks, blocking, timeouts, reporting: no traffic that is timed */
		return nt_int(s, val, o, UINT32_MAX, &v);
	case 'F':
		return 0;
	}
	return nterr(s, opt, "unknown nccl-tests option");
}

/* Launcher options that give the process count. */
static int launcher_opt(struct nt *s, struct nt_cmd *c, bool srun, const struct ntok *k,
			const struct ntok *next, uint64_t *nodes, uint64_t *per_node, int *used)
{
	static const char *const np_mpi[] = { "-np", "-n", "--np", "--n", "-c" };
	static const char *const np_srun[] = { "-n", "--ntasks" };
	const char *const *names = srun ? np_srun : np_mpi;
	size_t nn = srun ? SIM_ARRAY_SIZE(np_srun) : SIM_ARRAY_SIZE(np_mpi);
	struct ntok val = *k;
	const char *eq = memchr(k->s, '=', k->n);
	size_t namelen = eq ? (size_t)(eq - k->s) : k->n;
	uint64_t *dst = NULL;

	*used = 0;
	for (size_t i = 0; i < nn && !dst; i++)
		if (strlen(names[i]) == namelen && !memcmp(k->s, names[i], namelen))
			dst = &c->np;
	if (srun && !dst) {
		if ((namelen == 2 && !memcmp(k->s, "-N", 2)) ||
		    (namelen == 7 && !memcmp(k->s, "--nodes", 7)))
			dst = nodes;
		else if (namelen == 17 && !memcmp(k->s, "--ntasks-per-node", 17))
			dst = per_node;
	}
	if (!srun && !dst && ((namelen == 2 && !memcmp(k->s, "-N", 2)) ||
			      (namelen == 9 && !memcmp(k->s, "-npernode", 9)) ||
			      (namelen == 10 && !memcmp(k->s, "--npernode", 10)) ||
			      (namelen == 4 && !memcmp(k->s, "-ppn", 4))))
		dst = per_node;
	/* Open MPI's --map-by ppr:K:node: K processes a node (other
	 * mappings are skipped, as other launcher options) */
	if (!srun && !dst && namelen == 8 && !memcmp(k->s, "--map-by", 8) && (eq || next)) {
		struct ntok v = eq ? (struct ntok){ .s = eq + 1, .n = k->n - 9, .line = k->line,
						    .col = k->col + 9 } : *next;

		*used = !eq;
		if (v.n > 9 && !memcmp(v.s, "ppr:", 4) && !memcmp(v.s + v.n - 5, ":node", 5)) {
			v.s += 4;
			v.n -= 9;
			v.col += 4;
			return nt_int(s, &v, "processes a node", TRACE_MAX_RANKS, per_node);
		}
		return 0;
	}
	if (!dst)
		return 0;
	if (eq) {
		val.s = eq + 1;
		val.n = k->n - namelen - 1;
		val.col = k->col + (int)namelen + 1;
	} else {
		if (!next)
			return nterr(s, k, "expected a number after the launcher option");
		val = *next;
		*used = 1;
	}
	if (nt_int(s, &val, "process count", TRACE_MAX_RANKS, dst))
		return -1;
	if (dst == &c->np)
		c->np_given = true;
	return 0;
}

/*
 * NCCL_ALGO=LIST and NCCL_PROTO=LIST (a VAR=value before the command, or
 * mpirun's -x VAR=value): NCCL's comma-separated names, case-insensitive,
 * all of them but the list's with a leading '^' (NCCL's parseList in
 * src/graph/tuning.cc). The per-collective form ("allreduce:tree;...")
 * is refused. PAT, which ibfab does not model, is simply never chosen,
 * as when NCCL finds it unavailable; CollNetDirect and CollNetChain are
 * ibfab's collnet, NVLS and NVLSTree its nvls and nvlstree. Other variables are
 * ignored. 0, or -1 with the error at the token.
 */
static int nt_env(struct nt *s, struct nt_cmd *c, const struct ntok *k)
{
	static const struct {
		const char *name;
		int algo;	/* enum trace_algo, -1: not modelled */
	} algos[] = {
		{ "ring", TRACE_ALGO_RING }, { "tree", TRACE_ALGO_TREE },
		{ "collnetdirect", TRACE_ALGO_COLLNET }, { "collnetchain", TRACE_ALGO_COLLNET },
		{ "collnet", TRACE_ALGO_COLLNET }, { "nvls", TRACE_ALGO_NVLS },
		{ "nvlstree", TRACE_ALGO_NVLSTREE }, { "pat", -1 },
	};
	static const struct {
		const char *name;
		enum trace_proto proto;
	} protos[] = {
		{ "ll", TRACE_PROTO_LL }, { "ll128", TRACE_PROTO_LL128 },
		{ "simple", TRACE_PROTO_SIMPLE },
	};
	const char *eq = memchr(k->s, '=', k->n);
	size_t nl = eq ? (size_t)(eq - k->s) : 0;
	bool is_algo = nl == 9 && !memcmp(k->s, "NCCL_ALGO", 9);
	const char *v, *e = k->s + k->n;
	bool neg;
	unsigned set = 0, all;
	char q[64];

	if (nl == 16 && !memcmp(k->s, "NCCL_NVLS_ENABLE", 16)) {
		/* 0: no NVLS nor NVLSTree (src/transport/nvls.cc) */
		if (k->n - nl - 1 == 1 && eq[1] == '0')
			c->no_nvls = true;
		return 0;
	}
	if (nl == 19 && !memcmp(k->s, "NCCL_COLLNET_ENABLE", 19)) {
		/* 1: CollNet (SHARP) on, where the fabric has it (src/init.cc) */
		c->collnet = k->n - nl - 1 == 1 && eq[1] == '1';
		return 0;
	}
	if (!is_algo && !(nl == 10 && !memcmp(k->s, "NCCL_PROTO", 10)))
		return 0;
	v = eq + 1;
	if (memchr(v, ':', (size_t)(e - v)) || memchr(v, ';', (size_t)(e - v)))
		return nterr(s, k, "%.*s: per-collective lists (\"allreduce:tree;...\") are not supported: give one list for all collectives",
			     (int)nl, k->s);
	neg = v < e && *v == '^';
	v += neg;
	while (v < e) {
		const char *comma = memchr(v, ',', (size_t)(e - v));
		size_t n = (size_t)((comma ? comma : e) - v);
		size_t i, m = is_algo ? SIM_ARRAY_SIZE(algos) : SIM_ARRAY_SIZE(protos);

		for (i = 0; i < m; i++) {
			const char *name = is_algo ? algos[i].name : protos[i].name;

			if (strlen(name) == n && !strncasecmp(v, name, n))
				break;
		}
		if (i == m)
			return nterr(s, k, "%.*s: unknown %s %s (NCCL's are %s)", (int)nl, k->s,
				     is_algo ? "algorithm" : "protocol", quote(v, n, q, sizeof(q)),
				     is_algo ? "Ring, Tree, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT" :
				     "LL, LL128, Simple");
		if (is_algo && algos[i].algo >= 0)
			set |= 1u << algos[i].algo;
		else if (!is_algo)
			set |= 1u << protos[i].proto;
		v += n + (comma != NULL);
	}
	all = is_algo ? (1u << TRACE_ALGO_RING) | (1u << TRACE_ALGO_TREE) | (1u << TRACE_ALGO_COLLNET) |
			(1u << TRACE_ALGO_NVLS) | (1u << TRACE_ALGO_NVLSTREE) :
	      (1u << TRACE_PROTO_LL) | (1u << TRACE_PROTO_LL128) | (1u << TRACE_PROTO_SIMPLE);
	if (neg)
		set = all & ~set;
	if (!set)
		return nterr(s, k, "%.*s leaves no %s ibfab models (%s)", (int)nl, k->s,
			     is_algo ? "algorithm" : "protocol",
			     is_algo ? "ring, tree, collnet, nvls" : "LL, LL128, Simple");
	if (is_algo) {
		c->algos = set;
		c->algo_tok = k;
	} else {
		c->protos = (uint8_t)set;
	}
	return 0;
}

/* One command: [VAR=val ...] [launcher opts] program opts. */
static int nt_parse_cmd(struct nt *s, const struct ntok *tk, size_t nt, struct nt_cmd *c)
{
	size_t i = 0;
	uint64_t nodes = 0, per_node = 0;
	bool launcher = false, srun = false;
	const char *b;
	size_t bn;
	char q[64];

	*c = (struct nt_cmd){ .line = tk[0].line, .np = 1, .nthreads = 1, .ngpus = 1,
			      .minb = 32u << 20, .maxb = 32u << 20, .stepb = 1u << 20,
			      .stepf = 1, .iters = 20, .agg = 1, .cycles = 1, .type = TRACE_DTYPE_FLOAT,
			      .op = 0, .root = 0 };
	/* environment assignments before the command */
	for (; i < nt; i++) {
		size_t j = 0;

		if (tok_eq(&tk[i], "env"))
			continue;
		while (j < tk[i].n && (isalnum((unsigned char)tk[i].s[j]) || tk[i].s[j] == '_'))
			j++;
		if (!j || j >= tk[i].n || tk[i].s[j] != '=' || isdigit((unsigned char)tk[i].s[0]))
			break;
		if (nt_env(s, c, &tk[i]))
			return -1;
	}
	if (i == nt)
		return nterr(s, &tk[nt - 1], "expected a command after the variable assignments");
	basename_of(&tk[i], &b, &bn);
	if ((bn == 6 && !memcmp(b, "mpirun", 6)) || (bn == 7 && !memcmp(b, "mpiexec", 7)) ||
	    (bn == 13 && !memcmp(b, "mpiexec.hydra", 13)) || (bn == 7 && !memcmp(b, "orterun", 7)) ||
	    (bn == 7 && !memcmp(b, "prterun", 7)) || (bn == 4 && !memcmp(b, "srun", 4))) {
		launcher = true;
		srun = bn == 4;
		for (i++; i < nt && !is_prog(&tk[i]); i++) {
			int used;

			/* Open MPI's -x VAR=value exports a variable to the ranks */
			if (!srun && tok_eq(&tk[i], "-x") && i + 1 < nt) {
				if (nt_env(s, c, &tk[++i]))
					return -1;
				continue;
			}
			if (launcher_opt(s, c, srun, &tk[i], i + 1 < nt ? &tk[i + 1] : NULL, &nodes,
					 &per_node, &used))
				return -1;
			i += (size_t)used;
		}
		if (i >= nt)
			return nterr(s, &tk[0], "expected an nccl-tests program (all_reduce_perf, "
				     "all_gather_perf, ...) after the launcher");
		c->per_node = per_node;
		if (!c->np_given) {
			if (srun && nodes && per_node)
				c->np = nodes * per_node;
			else if (per_node || nodes)
				return nterr(s, &tk[0], "cannot tell the number of processes from "
					     "per-node counts alone: give the total (-np N, or srun -n N)");
		}
	}
	if (!is_prog(&tk[i]))
		return nterr(s, &tk[i], "expected an nccl-tests program such as all_reduce_perf%s, "
			     "got %s", launcher ? "" : " (or mpirun/srun)",
			     quote(tk[i].s, tk[i].n, q, sizeof(q)));
	basename_of(&tk[i], &b, &bn);
	if (ends_with(b, bn, "_mpi"))
		bn -= 4;
	for (size_t p = 0; p < SIM_ARRAY_SIZE(nt_progs); p++)
		if (strlen(nt_progs[p].name) == bn && !memcmp(nt_progs[p].name, b, bn))
			c->prog = &nt_progs[p];
	if (!c->prog)
		return nterr(s, &tk[i], "unknown nccl-tests program %s (expected all_reduce_perf, "
			     "all_gather_perf, reduce_scatter_perf, alltoall_perf, broadcast_perf, "
			     "reduce_perf or sendrecv_perf)", quote(b, bn, q, sizeof(q)));
	if (c->prog->kind == NT_UNSUPPORTED)
		return nterr(s, &tk[i], "%s has no collective in ibfab's trace model (gather, "
			     "scatter and hypercube are not supported)", c->prog->name);
	for (i++; i < nt; i++) {
		const struct ntok *k = &tk[i];
		struct ntok val;
		char letter = 0;

		/* shell plumbing ends the command: "> out.log 2>&1", "| tee", "&&" */
		if (strchr("><|&;", k->s[0]) || (k->n >= 2 && isdigit((unsigned char)k->s[0]) &&
						  k->s[1] == '>'))
			break;
		if (k->n >= 2 && k->s[0] == '-' && k->s[1] == '-') {
			const char *eq = memchr(k->s, '=', k->n);
			size_t nl = (eq ? (size_t)(eq - k->s) : k->n) - 2;

			if (nl == 4 && !memcmp(k->s + 2, "help", 4))
				return nterr(s, k, "--help prints the usage and runs nothing");
			for (size_t j = 0; j < SIM_ARRAY_SIZE(nt_long); j++)
				if (strlen(nt_long[j].name) == nl && !memcmp(nt_long[j].name, k->s + 2, nl))
					letter = nt_long[j].letter;
			if (!letter)
				return nterr(s, k, "unknown nccl-tests option %s",
					     quote(k->s, k->n, q, sizeof(q)));
			if (eq) {
				val = (struct ntok){ eq + 1, k->n - nl - 3, k->line,
						     k->col + (int)nl + 3 };
			} else {
				if (i + 1 >= nt)
					return nterr(s, k, "expected a value after %s",
						     quote(k->s, k->n, q, sizeof(q)));
				val = tk[++i];
			}
		} else if (k->n >= 2 && k->s[0] == '-') {
			letter = k->s[1];
			if (letter == 'h')
				return nterr(s, k, "-h prints the usage and runs nothing");
			if (!strchr("tgbeifnmwpcodrzyTGCaFNR", letter))
				return nterr(s, k, "unknown nccl-tests option %s",
					     quote(k->s, k->n, q, sizeof(q)));
			if (k->n > 2) {
				val = (struct ntok){ k->s + 2, k->n - 2, k->line, k->col + 2 };
			} else {
				if (i + 1 >= nt)
					return nterr(s, k, "expected a value after %s",
						     quote(k->s, k->n, q, sizeof(q)));
				val = tk[++i];
			}
		} else {
			return nterr(s, k, "expected an option such as -b 8, got %s",
				     quote(k->s, k->n, q, sizeof(q)));
		}
		if (nt_option(s, c, letter, k, &val))
			return -1;
	}
	return 0;
}

static int nt_add(struct nt *s, struct trace_op *op, const uint32_t *deps, uint32_t nd,
		  int line)
{
	op->id = (uint32_t)s->t->nops;
	op->file = s->ofile;
	op->line = line;
	op->chunks = op->channels = 0;	/* the lowering chooses */
	return trace_add_op(s->t, op, deps, nd, s->d);
}

static uint64_t mul_sat(uint64_t a, uint64_t b)
{
	return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

/*
 * nccl-tests' host barrier before each size's timed loop (common.cu,
 * BenchTime: Barrier(args), then the timer): an op that waits for
 * everything before it - every rank's last send and receive, or the
 * chain's last op - and that what follows waits for. A compute of no
 * time on rank 0: one op and at most 2n dependencies, where each first
 * send and receive waiting for every rank's last would be 4n^2. Only
 * sendrecv_perf needs it: a collective already waits for the one before.
 */
static int nt_barrier(struct nt *s, int line)
{
	uint32_t *deps = malloc((2 * (size_t)s->nranks + 1) * sizeof(*deps));
	struct trace_op op;
	uint32_t nd = 0;
	int b;

	if (!deps)
		return sim_diag_set(s->d, s->file, line, 0, "out of memory");
	/* the sends and receives since the last barrier (each after it), or
	 * else the chain's last op (after every earlier one) */
	if (!s->sr_open && s->prev >= 0)
		deps[nd++] = (uint32_t)s->prev;
	for (int32_t k = 0; s->sr_open && k < 2 * s->nranks; k++)
		if (s->prev_rank[k] >= 0 && (!nd || deps[nd - 1] != (uint32_t)s->prev_rank[k]))
			deps[nd++] = (uint32_t)s->prev_rank[k];
	memset(&op, 0, sizeof(op));
	op.kind = TRACE_COMPUTE;
	op.rank = 0;
	op.peer = -1;
	op_name(&op, "barrier");
	b = nt_add(s, &op, deps, nd, line);
	free(deps);
	if (b < 0)
		return -1;
	s->prev = b;
	for (int32_t k = 0; k < 2 * s->nranks; k++)
		s->prev_rank[k] = b;
	s->sr_open = false;
	return 0;
}

/* Append one command's sweep, chained after whatever came before. */
static int nt_emit(struct nt *s, const struct nt_cmd *c, const struct ntok *k0)
{
	int32_t n = s->nranks;
	int ntypes = c->type < 0 ? NT_ALL_TYPES : 1;
	int nops = c->prog->reduces && c->op < 0 ? TRACE_NREDOPS : 1;
	int nroots = c->prog->rooted && c->root < 0 ? n : 1;
	uint64_t reps = mul_sat(mul_sat(c->iters, c->agg), c->graphs ? c->graphs : 1);
	uint64_t nsizes = 0, total;

	if (c->minb > c->maxb)
		return nterr(s, k0, "minbytes (-b %" PRIu64 ") is larger than maxbytes (-e %" PRIu64
			     "): nccl-tests refuses that", c->minb, c->maxb);
	if (c->stepf > 1 && !c->minb)
		return nterr(s, k0, "-b 0 with -f %" PRIu64 " never grows: nccl-tests would loop "
			     "forever", c->stepf);
	if (c->stepf <= 1 && !c->stepb)
		return nterr(s, k0, "-i 0 never grows the size: nccl-tests would loop forever");
	if (c->prog->rooted && c->root >= n)
		return nterr(s, k0, "root %d is not a rank (the run has %" PRId32 " ranks)", c->root, n);
	/* NCCL_ALGO: the one algorithm it leaves this collective, if one;
	 * auto (the tuning model's choice) if more, an error if none */
	enum trace_algo algo = TRACE_ALGO_AUTO;
	enum trace_proto proto = TRACE_PROTO_AUTO;
	unsigned algos = 0;

	if (c->algos && c->prog->kind == NT_COLL) {
		unsigned have = 0;

		for (int a = TRACE_ALGO_RING; a < TRACE_NALGO; a++)
			if ((c->algos & (1u << a)) && coll_algo_find(c->prog->coll, (enum trace_algo)a))
				have |= 1u << a;
		if (!have)
			return nterr(s, c->algo_tok, "NCCL_ALGO leaves %s no algorithm (NCCL refuses it too)",
				     c->prog->name);
		if (!(have & (have - 1)))
			algo = (enum trace_algo)__builtin_ctz(have);
		else
			algos = have;	/* auto chooses among them */
	}
	if (c->no_nvls && c->prog->kind == NT_COLL && algo == TRACE_ALGO_AUTO)
		algos = (algos ? algos : ~0u) &
			~((1u << TRACE_ALGO_NVLS) | (1u << TRACE_ALGO_NVLSTREE)) & 0xffffu;
	if (c->protos && !(c->protos & (c->protos - 1)))
		proto = (enum trace_proto)__builtin_ctz(c->protos);
	/* sizes b, b*f (or b+i), ... while <= e; a product past 2^64 ends it */
	for (uint64_t sz = c->minb;;) {
		uint64_t next = c->stepf > 1 ? mul_sat(sz, c->stepf) : sz + c->stepb;

		if (++nsizes > TRACE_MAX_OPS || next <= sz || next > c->maxb)
			break;
		sz = next;
	}
	total = mul_sat(mul_sat(mul_sat(nsizes, reps), (uint64_t)ntypes * (uint64_t)nops),
			mul_sat(mul_sat((uint64_t)nroots, c->cycles),
				c->prog->kind == NT_SENDRECV ? 2 * (uint64_t)n : 1));
	if (total > TRACE_MAX_OPS)
		return nterr(s, k0, "this sweep makes more than %u ops (%" PRIu64 " sizes x %" PRIu64
			     " iterations%s): use fewer sizes or iterations", TRACE_MAX_OPS, nsizes,
			     reps, c->prog->kind == NT_SENDRECV ? " x 2 per rank" : "");
	/*
	 * One sweep per (cycle, type, op, root), in nccl-tests' loop order
	 * (types outside ops outside roots); the op changes no traffic.
	 */
	for (uint64_t sw = 0; sw < c->cycles * (uint64_t)(ntypes * nops * nroots); sw++) {
		int ty = (int)(sw / (uint64_t)(nops * nroots) % (uint64_t)ntypes);
		int rt = (int)(sw % (uint64_t)nroots);
		int ro = (int)(sw / (uint64_t)nroots % (uint64_t)nops);
		const int dt = c->type < 0 ? ty : c->type;
		unsigned ws = trace_dtypes[dt].size;
		int root = c->root < 0 ? rt : c->root;
		uint64_t sz = c->minb;

		for (uint64_t si = 0; si < nsizes; si++) {
			uint64_t count = sz / ws, S;

			if (c->prog->per_rank)
				count = count / (uint64_t)n * (uint64_t)n;
			S = count * ws;
			for (uint64_t it = 0; S && it < reps; it++) {
				struct trace_op op;

				memset(&op, 0, sizeof(op));
				if (c->prog->kind == NT_COLL) {
					if (s->sr_open && nt_barrier(s, c->line))
						return -1;
					uint32_t dep = (uint32_t)s->prev;

					op.kind = TRACE_COLL;
					op.rank = op.peer = -1;
					op.coll = c->prog->coll;
					op.algo = algo;
					op.proto = proto;
					op.protos = c->protos;
					op.algos = (uint16_t)algos;
					op.collnet = c->collnet;
					op.comm = 0;
					op.bytes = S;
					op.root = root;
					op.dtype = (uint8_t)(dt + 1);
					op.redop = c->prog->reduces ?
						   (uint8_t)((c->op < 0 ? ro : c->op) + 1) : 0;
					op_name(&op, "%s %" PRIu64 "B #%" PRIu64,
						 trace_coll_names[op.coll], S, it);
					s->prev = nt_add(s, &op, &dep, s->prev >= 0, c->line);
					if (s->prev < 0)
						return -1;
					continue;
				}
				/* sendrecv: rank r sends to r+1 and receives from r-1,
				 * grouped; a size's iterations back to back, after a
				 * barrier (but the run's first) */
				if (!it && (s->prev >= 0 || s->sr_open) && nt_barrier(s, c->line))
					return -1;
				for (int32_t r = 0; r < n; r++) {
					uint32_t deps[2];
					uint32_t nd = 0;
					int a, b;

					if (s->prev_rank[2 * r] >= 0) {
						deps[nd++] = (uint32_t)s->prev_rank[2 * r];
						if (s->prev_rank[2 * r + 1] != s->prev_rank[2 * r])
							deps[nd++] = (uint32_t)s->prev_rank[2 * r + 1];
					}
					memset(&op, 0, sizeof(op));
					op.kind = TRACE_SEND;
					op.rank = r;
					op.peer = (r + 1) % n;
					op.bytes = S;
					op.sendrecv = true;
					op.dtype = (uint8_t)(dt + 1);
					op.redop = (uint8_t)((c->op < 0 ? ro : c->op) + 1);
					op_name(&op, "sendrecv %" PRIu64 "B #%" PRIu64,
						 S, it);
					a = nt_add(s, &op, deps, nd, c->line);
					op.kind = TRACE_RECV;
					op.peer = (r + n - 1) % n;
					b = a < 0 ? -1 : nt_add(s, &op, deps, nd, c->line);
					if (b < 0)
						return -1;
					s->prev_rank[2 * r] = a;
					s->prev_rank[2 * r + 1] = b;
					s->sr_open = true;
				}
			}
			sz = c->stepf > 1 ? mul_sat(sz, c->stepf) : sz + c->stepb;
		}
	}
	return 0;
}

/* Split the text into commands of tokens: blanks separate, '\' newline
 * continues, '#' at a token's start comments out the rest of the line,
 * quotes group (and are dropped). */
static int nt_tokenize_cmd(struct nt *s, const char **pp, const char *end, int *line,
			   const char **ls, struct ntok **tk, size_t *ntk, size_t *cap)
{
	const char *p = *pp;

	*ntk = 0;
	while (p < end) {
		struct ntok k;

		if (*p == ' ' || *p == '\t' || *p == '\r') {
			p++;
			continue;
		}
		if (*p == '\\' && (p + 1 < end && (p[1] == '\n' ||
						   (p[1] == '\r' && p + 2 < end && p[2] == '\n')))) {
			p += p[1] == '\n' ? 2 : 3;
			(*line)++;
			*ls = p;
			continue;
		}
		if (*p == '\n') {
			p++;
			(*line)++;
			*ls = p;
			if (*ntk)
				break;
			continue;
		}
		if (*p == '#') {
			while (p < end && *p != '\n')
				p++;
			continue;
		}
		k.line = *line;
		k.col = (int)(p - *ls) + 1;
		if (*p == '\'' || *p == '"') {
			const char *qe = memchr(p + 1, *p, (size_t)(end - p - 1));

			if (!qe || memchr(p, '\n', (size_t)(qe - p))) {
				struct ntok at = { p, 1, k.line, k.col };

				return nterr(s, &at, "unterminated quote");
			}
			k.s = p + 1;
			k.n = (size_t)(qe - p - 1);
			p = qe + 1;
		} else {
			k.s = p;
			while (p < end && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
				p++;
			k.n = (size_t)(p - k.s);
		}
		if (sim_grow((void **)tk, cap, *ntk + 1, sizeof(k)))
			return nterr(s, &k, "out of memory");
		(*tk)[(*ntk)++] = k;
	}
	*pp = p;
	return 0;
}

int import_nccl_tests(const char *path, const char *text, size_t len, struct trace *t,
		      struct sim_diag *d)
{
	struct nt s = { .file = path, .d = d, .t = t, .prev = -1 };
	const char *p = text, *end = text + len, *ls = text;
	struct ntok *tk = NULL;
	size_t ntk = 0, cap = 0;
	int line = 1, rc = -1;

	s.ofile = trace_add_file(t, path);
	if (!s.ofile)
		return sim_diag_set(d, path, 0, 0, "out of memory");
	t->map = TRACE_MAP_LINEAR;
	for (;;) {
		struct nt_cmd c;
		uint64_t ranks;

		if (nt_tokenize_cmd(&s, &p, end, &line, &ls, &tk, &ntk, &cap))
			goto out;
		if (!ntk)
			break;
		if (nt_parse_cmd(&s, tk, ntk, &c))
			goto out;
		ranks = c.np * c.nthreads * c.ngpus;
		if (ranks < 2 || ranks > TRACE_MAX_RANKS) {
			nterr(&s, &tk[0], "%" PRIu64 " rank%s (processes x -t x -g = %" PRIu64 " x %"
			      PRIu64 " x %" PRIu64 "): expected 2 to %d, so that data crosses the "
			      "fabric", ranks, ranks == 1 ? "" : "s", c.np, c.nthreads, c.ngpus,
			      TRACE_MAX_RANKS);
			goto out;
		}
		/* the launcher's processes a node place the ranks on servers */
		uint64_t rpn = c.per_node ? c.per_node * c.nthreads * c.ngpus : 0;

		if (rpn > (uint64_t)TRACE_MAX_RANKS)
			rpn = (uint64_t)TRACE_MAX_RANKS;
		if (s.nranks && rpn != s.rpn) {
			nterr(&s, &tk[0], "this command places %" PRIu64 " ranks a node and the one at "
			      "line %d %" PRIu64 " (0: the servers' GPUs in order): one trace has one "
			      "placement", rpn, s.first_line, s.rpn);
			goto out;
		}
		if (!s.nranks) {
			s.rpn = rpn;
			t->ranks_per_node = (int32_t)rpn;
			s.nranks = (int32_t)ranks;
			s.first_line = c.line;
			s.prev_rank = malloc(2 * (size_t)ranks * sizeof(*s.prev_rank));
			if (!s.prev_rank || trace_set_ranks(t, s.nranks, d)) {
				if (!s.prev_rank)
					sim_diag_set(d, path, c.line, 0, "out of memory");
				goto out;
			}
			for (uint64_t r = 0; r < 2 * ranks; r++)
				s.prev_rank[r] = -1;
		} else if (ranks != (uint64_t)s.nranks) {
			nterr(&s, &tk[0], "this command runs on %" PRIu64 " ranks but the one at line "
			      "%d on %" PRId32 ": one trace has one rank count", ranks, s.first_line,
			      s.nranks);
			goto out;
		}
		if (nt_emit(&s, &c, &tk[0]))
			goto out;
	}
	if (!s.nranks) {
		sim_diag_set(d, path, 1, 0, "no nccl-tests command: expected a line such as "
			     "'all_reduce_perf -b 8 -e 128M -f 2 -g 8'");
		goto out;
	}
	if (!t->nops) {
		sim_diag_set(d, path, s.first_line, 0, "every size of the sweep rounds to 0 bytes: "
			     "nothing to run");
		goto out;
	}
	rc = 0;
out:
	free(tk);
	free(s.prev_rank);
	return rc;
}

/* ---- detection ---------------------------------------------------------- */

static bool has_nccl_info(const char *text, size_t len)
{
	static const char pat[] = "NCCL INFO ";
	const char *p = text, *end = text + (len < IMPORT_SNIFF_LOG ? len : IMPORT_SNIFF_LOG);

	while ((p = memchr(p, 'N', (size_t)(end - p))) && (size_t)(end - p) >= sizeof(pat) - 1) {
		if (!memcmp(p, pat, sizeof(pat) - 1))
			return true;
		p++;
	}
	return false;
}

/* The first command (lines joined by a trailing '\') names a program. */
static bool nccl_tests_head(const char *text, const char *end)
{
	struct import_line l;
	const char *p = text, *q, *ws;
	size_t wn;

	for (int lines = 0; lines < 16 && import_next_line(&p, end, &l); lines++) {
		bool more = l.e[-1] == '\\';

		q = l.s;
		while (import_word(&q, more ? l.e - 1 : l.e, &ws, &wn))
			if (is_prog(&(struct ntok){ .s = ws, .n = wn }))
				return true;
		if (!more)
			break;
	}
	return false;
}

/* Detection (import.c): a line with "NCCL INFO " (every NCCL debug line
 * has it). */
bool import_nccl_log_detect(const char *path, const char *text, size_t len)
{
	(void)path;
	return has_nccl_info(text, len);
}

/* Detection (import.c): the first command line names an nccl-tests
 * program ("..._perf", after VAR=value and an mpirun/srun launcher). */
bool import_nccl_tests_detect(const char *path, const char *text, size_t len)
{
	(void)path;
	return nccl_tests_head(text, text + (len < IMPORT_SNIFF_HEAD ? len : IMPORT_SNIFF_HEAD));
}
