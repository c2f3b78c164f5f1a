/* SPDX-License-Identifier: MIT */
/*
 * trace.c - the trace core: building a struct trace, checking it before
 * anything runs, placing its ranks on the fabric's hosts, and loading a
 * trace file in whichever format it is written.
 *
 * trace_validate() is the gate every trace passes, whoever wrote it (the
 * native parser or an importer): ranks and communicators in range, each
 * recv matched with its send, and no cycle in the waits. A cycle is looked
 * for in the graph the replay will run - the ops' dependencies plus the
 * edge from each recv to its matched send - so a trace that would deadlock
 * (two ranks each receiving before sending) is refused before the run with
 * the chain of ops, instead of stalling half-way through it. Collectives
 * count as one node: a cycle through one is refused even if some rooted
 * algorithm might have slipped past it.
 *
 * trace_map_ranks() keeps one rank per host: the fabric moves data between
 * HCAs and has no intra-host path, so two ranks on one host could not talk
 * to each other (docs/trace-format.md, "One rank per host").
 */
#include "traces/trace.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_file.h"
#include "sim/sim_graph.h"
#include "sim/sim_parse.h"
#include "sim/sim_rng.h"
#include "traces/import.h"
#include "traces/trace_fmt.h"

#define NONE UINT32_MAX

const char *const trace_coll_names[TRACE_NCOLL] = {
	[TRACE_ALLREDUCE] = "allreduce",
	[TRACE_ALLGATHER] = "allgather",
	[TRACE_REDUCESCATTER] = "reducescatter",
	[TRACE_ALLTOALL] = "alltoall",
	[TRACE_BROADCAST] = "broadcast",
	[TRACE_REDUCE] = "reduce",
	[TRACE_BARRIER] = "barrier",
};

const char *const trace_algo_names[TRACE_NALGO] = {
#define TRACE_ALGO_NAME(id, name) [TRACE_ALGO_##id] = name,
	TRACE_ALGOS(TRACE_ALGO_NAME)
#undef TRACE_ALGO_NAME
};

const char *const trace_proto_names[TRACE_NPROTO] = {
#define TRACE_PROTO_NAME(id, name) [TRACE_PROTO_##id] = name,
	TRACE_PROTOS(TRACE_PROTO_NAME)
#undef TRACE_PROTO_NAME
};

const char *const trace_proto_labels[TRACE_NPROTO] = {
	[TRACE_PROTO_AUTO] = "auto", [TRACE_PROTO_SIMPLE] = "Simple", [TRACE_PROTO_LL] = "LL",
	[TRACE_PROTO_LL128] = "LL128",
};

/* in nccl-tests' order; the two FP8 types where it is built with them
 * (CUDA 11.8 and NCCL 2.24 on), which `-d all` leaves out here */
const struct trace_dtype trace_dtypes[TRACE_NDTYPES] = {
	{ "int8", 1 }, { "uint8", 1 }, { "int32", 4 }, { "uint32", 4 }, { "int64", 8 },
	{ "uint64", 8 }, { "half", 2 }, { "float", 4 }, { "double", 8 }, { "bfloat16", 2 },
	{ "f8e4m3", 1 }, { "f8e5m2", 1 },
};

const char *const trace_redop_names[TRACE_NREDOPS] = {
	"sum", "prod", "max", "min", "avg", "mulsum",
};

uint64_t trace_proto_wire(enum trace_proto p, uint64_t bytes)
{
	switch (p) {
	case TRACE_PROTO_LL:	/* 16-byte lines of two 4-byte data words and two flags
				 * (union ncclLLFifoLine) */
		return (bytes + 7) / 8 * 16;
	case TRACE_PROTO_LL128:	/* 120 of every 128 bytes (NCCL_LL128_DATAELEMS of _LINEELEMS) */
		return (bytes + 119) / 120 * 128;
	default:
		return bytes;
	}
}

/* ---- building ------------------------------------------------------------ */

void trace_init(struct trace *t)
{
	memset(t, 0, sizeof(*t));
	t->map = TRACE_MAP_LINEAR;
	t->map_seed = 1;
}

void trace_free(struct trace *t)
{
	if (t->rank_host)
		for (int32_t r = 0; r < t->nranks; r++)
			free(t->rank_host[r]);
	free(t->rank_host);
	free(t->rank_node);
	free(t->agg_parent);
	free(t->rank_agg);
	free(t->rank_group);
	free(t->ops);
	free(t->deps);
	for (size_t i = 0; i < t->ncomms; i++)
		free(t->comms[i].ranks);
	free(t->comms);
	for (int i = 0; i < t->nfiles; i++)
		free(t->files[i]);
	free(t->files);
	free(t->job_file);
	free(t->job_ranks);
	/* An empty trace again, so a second trace_free() or a reload is safe. */
	trace_init(t);
}


const char *trace_add_file(struct trace *t, const char *path)
{
	char **nf, *copy;

	/* The same file included twice keeps one copy. */
	for (int i = 0; i < t->nfiles; i++)
		if (!strcmp(t->files[i], path))
			return t->files[i];
	copy = strdup(path);
	nf = realloc(t->files, (size_t)(t->nfiles + 1) * sizeof(*nf));
	if (!copy || !nf) {
		free(copy);
		if (nf)
			t->files = nf;
		return NULL;
	}
	t->files = nf;
	t->files[t->nfiles++] = copy;
	return copy;
}

int trace_set_ranks(struct trace *t, int32_t nranks, struct sim_diag *d)
{
	int32_t *all;

	if (t->nranks || t->ncomms)
		return sim_diag_set(d, NULL, 0, 0, "the rank count is already set (%" PRId32 ")",
				    t->nranks);
	if (nranks < 1 || nranks > TRACE_MAX_RANKS)
		return sim_diag_set(d, NULL, 0, 0, "rank count %" PRId32 " is out of range (1..%d)",
				    nranks, TRACE_MAX_RANKS);
	all = malloc((size_t)nranks * sizeof(*all));
	t->comms = calloc(1, sizeof(*t->comms));
	if (!all || !t->comms) {
		free(all);
		free(t->comms);
		t->comms = NULL;
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	}
	for (int32_t r = 0; r < nranks; r++)
		all[r] = r;
	t->comms[0].ranks = all;
	t->comms[0].n = (uint32_t)nranks;
	t->ncomms = 1;
	t->nranks = nranks;
	return 0;
}

/* Job njobs (of `ranks` ranks, read from `name`) joins t; the first
 * job, t's own before the first append, is noted with it. */
static int note_job(struct trace *t, int32_t base, int32_t ranks, const char *name)
{
	const int n = t->njobs ? t->njobs + 1 : 2;
	const char **jf = realloc(t->job_file, (size_t)n * sizeof(*jf));

	if (!jf)
		return -1;
	t->job_file = jf;
	int32_t *jr = realloc(t->job_ranks, (size_t)n * sizeof(*jr));

	if (!jr)
		return -1;
	t->job_ranks = jr;
	if (!t->njobs) {
		jf[0] = t->nfiles ? t->files[0] : "the first trace";
		jr[0] = base;
		t->njobs = 1;
	}
	if (!(jf[t->njobs] = trace_add_file(t, name)))
		return -1;
	jr[t->njobs++] = ranks;
	return 0;
}

int trace_ranks_text(const struct trace *t, char *buf, size_t len)
{
	int k = t->njobs < 2 ? snprintf(buf, len, "the trace has %" PRId32 " ranks", t->nranks) :
		snprintf(buf, len, "the %d jobs have %" PRId32 " ranks (", t->njobs, t->nranks);

	for (int j = 0; t->njobs > 1 && j < t->njobs && k >= 0 && (size_t)k < len; j++)
		k += snprintf(buf + k, len - (size_t)k, "%s%s %" PRId32 "%s", j ? ", " : "",
			      t->job_file[j], t->job_ranks[j], j + 1 < t->njobs ? "" : ")");
	return k;
}

int trace_append(struct trace *t, const struct trace *src, const char *name, struct sim_diag *d)
{
	const int32_t base = t->nranks;
	const size_t op_base = t->nops;
	uint32_t id_base = 0, *cmap = NULL, *deps = NULL;
	size_t dcap = 0;
	int rc = -1;

	if (t->rank_node || src->rank_node || t->nagg || src->nagg || t->nnvs || src->nnvs)
		return sim_diag_set(d, name, 0, 0, "a job is added before the ranks are placed");
	if (t->map != src->map || (t->map != TRACE_MAP_LINEAR && t->map != TRACE_MAP_EXPLICIT))
		return sim_diag_set(d, name, 0, 0,
				    "jobs side by side are placed linearly (one after the other on the hosts) or all by host lines; this one's placement differs from the first's");
	if (t->ranks_per_node != src->ranks_per_node)
		return sim_diag_set(d, name, 0, 0,
				    "jobs side by side take the servers' GPUs in order; this one places %" PRId32 " ranks a server, the first %" PRId32 " (0: in order)",
				    src->ranks_per_node, t->ranks_per_node);
	if ((int64_t)t->nranks + src->nranks > TRACE_MAX_RANKS)
		return sim_diag_set(d, name, 0, 0, "the jobs have more than %d ranks together",
				    TRACE_MAX_RANKS);
	for (size_t i = 0; i < t->nops; i++)	/* ids stay unique */
		if (t->ops[i].id >= id_base)
			id_base = t->ops[i].id + 1;
	/* t's collectives over "all ranks" keep to t's ranks: a communicator of
	 * their own, and comms[0] grows to every job's ranks */
	bool uses_all = false;

	for (size_t i = 0; i < t->nops && !uses_all; i++)
		uses_all = t->ops[i].kind == TRACE_COLL && !t->ops[i].comm;
	if (uses_all) {
		int own = trace_add_comm(t, t->comms[0].ranks, t->comms[0].n, d);

		if (own < 0)
			return -1;
		for (size_t i = 0; i < t->nops; i++)
			if (t->ops[i].kind == TRACE_COLL && !t->ops[i].comm)
				t->ops[i].comm = (uint32_t)own;
	}
	int32_t *all = realloc(t->comms[0].ranks, (size_t)(base + src->nranks) * sizeof(*all));

	if (!all)
		return sim_diag_set(d, name, 0, 0, "out of memory");
	t->comms[0].ranks = all;
	for (int32_t r = 0; r < src->nranks; r++)
		all[base + r] = base + r;
	t->comms[0].n = (uint32_t)(base + src->nranks);
	if (t->map == TRACE_MAP_EXPLICIT) {
		char **h = realloc(t->rank_host, (size_t)(base + src->nranks) * sizeof(*h));

		if (!h)
			return sim_diag_set(d, name, 0, 0, "out of memory");
		t->rank_host = h;
		for (int32_t r = 0; r < src->nranks; r++)
			h[base + r] = NULL;
		t->nranks = base + src->nranks;	/* so trace_free frees them */
		for (int32_t r = 0; r < src->nranks; r++)
			if (src->rank_host[r] && !(h[base + r] = strdup(src->rank_host[r])))
				return sim_diag_set(d, name, 0, 0, "out of memory");
	}
	t->nranks = base + src->nranks;
	if (note_job(t, base, src->nranks, name))
		goto oom;
	/* its communicators, its "all ranks" among them, shifted */
	cmap = malloc((src->ncomms ? src->ncomms : 1) * sizeof(*cmap));
	if (!cmap)
		goto oom;
	for (size_t k = 0; k < src->ncomms; k++) {
		int32_t *m = malloc((src->comms[k].n ? src->comms[k].n : 1) * sizeof(*m));
		int ix;

		if (!m)
			goto oom;
		for (uint32_t i = 0; i < src->comms[k].n; i++)
			m[i] = src->comms[k].ranks[i] + base;
		ix = trace_add_comm(t, m, src->comms[k].n, d);
		free(m);
		if (ix < 0)
			goto out;
		cmap[k] = (uint32_t)ix;
	}
	for (size_t i = 0; i < src->nops; i++) {
		struct trace_op o = src->ops[i];

		o.id += id_base;
		if (o.rank >= 0)
			o.rank += base;
		if (o.kind == TRACE_SEND || o.kind == TRACE_RECV)
			o.peer += base;
		if (o.kind == TRACE_COLL) {
			o.comm = o.comm < src->ncomms ? cmap[o.comm] : o.comm;
			if (o.root >= 0)	/* a rank (broadcast, reduce); -1 none */
				o.root += base;
		}
		if (o.file && !(o.file = trace_add_file(t, o.file)))
			goto oom;
		if (sim_grow((void **)&deps, &dcap, (size_t)o.ndeps + 1, sizeof(*deps)))
			goto oom;
		for (uint32_t k = 0; k < o.ndeps; k++)
			deps[k] = src->deps[o.dep_off + k] + (uint32_t)op_base;
		if (trace_add_op(t, &o, deps, o.ndeps, d) < 0)
			goto out;
	}
	rc = 0;
	goto out;
oom:
	rc = sim_diag_set(d, name, 0, 0, "out of memory");
out:
	free(cmap);
	free(deps);
	return rc;
}

int trace_add_comm(struct trace *t, const int32_t *ranks, uint32_t n, struct sim_diag *d)
{
	struct trace_comm *nc;
	int32_t *copy;
	uint8_t *seen;

	if (!t->ncomms)
		return sim_diag_set(d, NULL, 0, 0, "a communicator before the rank count");
	if (n < 1)
		return sim_diag_set(d, NULL, 0, 0, "a communicator needs at least one member");
	seen = calloc((size_t)t->nranks, 1);
	if (!seen)
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		if (ranks[i] < 0 || ranks[i] >= t->nranks) {
			free(seen);
			return sim_diag_set(d, NULL, 0, 0,
					    "communicator member %" PRId32 " is out of range (0..%" PRId32 ")",
					    ranks[i], t->nranks - 1);
		}
		if (seen[ranks[i]]++) {
			free(seen);
			return sim_diag_set(d, NULL, 0, 0,
					    "rank %" PRId32 " is listed twice in a communicator", ranks[i]);
		}
	}
	free(seen);
	copy = malloc((size_t)n * sizeof(*copy));
	nc = realloc(t->comms, (t->ncomms + 1) * sizeof(*nc));
	if (!copy || !nc) {
		free(copy);
		if (nc)
			t->comms = nc;
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	}
	memcpy(copy, ranks, (size_t)n * sizeof(*copy));
	t->comms = nc;
	t->comms[t->ncomms].ranks = copy;
	t->comms[t->ncomms].n = n;
	return (int)t->ncomms++;
}

int trace_add_op(struct trace *t, const struct trace_op *op, const uint32_t *deps,
		 uint32_t ndeps, struct sim_diag *d)
{
	struct trace_op *o;

	/* The index must fit the int we return (and the uint32_t deps). */
	if (t->nops >= TRACE_MAX_OPS)
		return sim_diag_set(d, op->file, op->line, 0,
				    "too many ops (more than %u)", TRACE_MAX_OPS);
	if (sim_grow((void **)&t->ops, &t->ops_cap, t->nops + 1, sizeof(*t->ops)) ||
	    sim_grow((void **)&t->deps, &t->deps_cap, t->ndeps + ndeps, sizeof(*t->deps)))
		return sim_diag_set(d, op->file, op->line, 0, "out of memory");
	o = &t->ops[t->nops];
	*o = *op;
	o->dep_off = (uint32_t)t->ndeps;
	o->ndeps = ndeps;
	if (ndeps)
		memcpy(t->deps + t->ndeps, deps, ndeps * sizeof(*deps));
	t->ndeps += ndeps;
	return (int)t->nops++;
}

/* ---- checking -------------------------------------------------------------- */

const char *trace_op_label(const struct trace *t, uint32_t i, char *buf, size_t len)
{
	const struct trace_op *o = &t->ops[i];

	if (o->name[0])
		snprintf(buf, len, "%s", o->name);
	else if (o->kind == TRACE_SEND)
		snprintf(buf, len, "send %" PRId32 "->%" PRId32 " (line %d)", o->rank, o->peer,
			 o->line);
	else if (o->kind == TRACE_RECV)
		snprintf(buf, len, "recv %" PRId32 "<-%" PRId32 " (line %d)", o->rank, o->peer,
			 o->line);
	else if (o->kind == TRACE_COMPUTE)
		snprintf(buf, len, "compute %" PRId32 " (line %d)", o->rank, o->line);
	else if (o->kind == TRACE_COLL && (unsigned)o->coll < TRACE_NCOLL)
		snprintf(buf, len, "%s (line %d)", trace_coll_names[o->coll], o->line);
	else
		snprintf(buf, len, "op %" PRIu32 " (line %d)", i, o->line);
	return buf;
}

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

/* One send or recv, keyed by the channel it travels on. */
struct chan_ent {
	int32_t src, dst;
	uint32_t tag;
	uint32_t op;
};

static int chan_cmp(const void *a, const void *b)
{
	const struct chan_ent *x = a, *y = b;

	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	if (x->dst != y->dst)
		return x->dst < y->dst ? -1 : 1;
	if (x->tag != y->tag)
		return x->tag < y->tag ? -1 : 1;
	return x->op < y->op ? -1 : x->op > y->op;
}

int trace_match_recvs(const struct trace *t, uint32_t *send_of, struct sim_diag *d)
{
	struct chan_ent *e;
	size_t n = 0, i, j;
	int rc = 0;

	for (i = 0; i < t->nops; i++) {
		send_of[i] = NONE;
		n += t->ops[i].kind == TRACE_SEND || t->ops[i].kind == TRACE_RECV;
	}
	if (!n)
		return 0;
	e = malloc(n * sizeof(*e));
	if (!e)
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	n = 0;
	for (i = 0; i < t->nops; i++) {
		const struct trace_op *o = &t->ops[i];

		if (o->kind == TRACE_SEND)
			e[n++] = (struct chan_ent){ o->rank, o->peer, o->tag, (uint32_t)i };
		else if (o->kind == TRACE_RECV)
			e[n++] = (struct chan_ent){ o->peer, o->rank, o->tag, (uint32_t)i };
	}
	/* Sorted by channel, then op order: within a channel, the k-th recv
	 * meets the k-th send by walking both in step. */
	qsort(e, n, sizeof(*e), chan_cmp);
	for (i = 0; i < n && !rc; i = j) {
		size_t s = i;	/* the next send of the channel not yet matched */

		for (j = i; j < n && e[j].src == e[i].src && e[j].dst == e[i].dst &&
			    e[j].tag == e[i].tag; j++)
			;
		for (size_t k = i; k < j && !rc; k++) {
			const struct trace_op *r = &t->ops[e[k].op], *so;
			char a[32], b[32];

			if (r->kind != TRACE_RECV)
				continue;
			while (s < j && t->ops[e[s].op].kind != TRACE_SEND)
				s++;
			if (s == j) {
				rc = op_err(d, r,
					    "recv on rank %" PRId32 " from rank %" PRId32 " (tag %" PRIu32
					    ") has no matching send: rank %" PRId32 " lists fewer sends to rank %"
					    PRId32 " with this tag than rank %" PRId32 " lists recvs",
					    r->rank, r->peer, r->tag, r->peer, r->rank, r->rank);
				break;
			}
			so = &t->ops[e[s].op];
			if (so->bytes != r->bytes) {
				rc = op_err(d, r,
					    "recv of %s on rank %" PRId32 " from rank %" PRId32 " (tag %" PRIu32
					    ") matches the send of %s at %s:%d: the sizes differ",
					    sim_fmt_size(r->bytes, a, sizeof(a)), r->rank, r->peer, r->tag,
					    sim_fmt_size(so->bytes, b, sizeof(b)), so->file, so->line);
				break;
			}
			send_of[e[k].op] = e[s++].op;
		}
	}
	free(e);
	return rc;
}

/* Cycle message: the ops of stack[from..top], each waiting for the next,
 * rotated to start at the one listed first. */
static int cycle_err(const struct trace *t, const uint32_t *cyc, size_t n, struct sim_diag *d)
{
	char msg[sizeof(d->msg)], lab[64];
	size_t off = 0, first = 0, shown;

	for (size_t k = 1; k < n; k++)
		if (cyc[k] < cyc[first])
			first = k;
	sim_append(msg, sizeof(msg), &off, "dependency cycle (each op waits for the next): ");
	/* A long cycle is cut so the message keeps its shape: the first dozen
	 * ops, then the count. */
	shown = n > 12 ? 12 : n;
	for (size_t k = 0; k < shown; k++)
		sim_append(msg, sizeof(msg), &off, "%s -> ",
			   trace_op_label(t, cyc[(first + k) % n], lab, sizeof(lab)));
	if (shown < n)
		sim_append(msg, sizeof(msg), &off, "... (%zu ops in the cycle) -> ", n);
	sim_append(msg, sizeof(msg), &off, "%s", trace_op_label(t, cyc[first], lab, sizeof(lab)));
	return op_err(d, &t->ops[cyc[first]], "%s", msg);
}

/* The edges of op u: its deps, then, for a recv, its matched send. */
struct cycle_walk {
	const struct trace *t;
	const uint32_t *send_of;
	struct sim_diag *d;
};

static int op_next(void *ctx, uint32_t u, uint32_t k, uint32_t *v)
{
	const struct cycle_walk *w = ctx;

	return trace_op_next(w->t, w->send_of, u, k, v);
}

static int op_cycle(void *ctx, const uint32_t *cyc, size_t n)
{
	const struct cycle_walk *w = ctx;

	return cycle_err(w->t, cyc, n, w->d);
}

static int find_cycle(const struct trace *t, const uint32_t *send_of, struct sim_diag *d)
{
	struct cycle_walk w = { .t = t, .send_of = send_of, .d = d };
	int rc = sim_dfs((uint32_t)t->nops, op_next, NULL, op_cycle, &w);

	if (rc == SIM_DFS_ENOMEM)
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	return rc;
}

struct id_ent {
	uint32_t id, op;
};

static int id_cmp(const void *a, const void *b)
{
	const struct id_ent *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->op < y->op ? -1 : x->op > y->op;
}

static bool comm_has(const struct trace_comm *c, int32_t r)
{
	for (uint32_t i = 0; i < c->n; i++)
		if (c->ranks[i] == r)
			return true;
	return false;
}

static int check_ops(const struct trace *t, struct sim_diag *d)
{
	for (size_t i = 0; i < t->nops; i++) {
		const struct trace_op *o = &t->ops[i];
		int32_t last = t->nranks - 1;

		switch (o->kind) {
		case TRACE_SEND:
		case TRACE_RECV:
		case TRACE_COMPUTE:
			if (o->rank < 0 || o->rank > last)
				return op_err(d, o, "rank %" PRId32 " is out of range (ranks 0..%" PRId32 ")",
					      o->rank, last);
			if (o->kind == TRACE_COMPUTE)
				break;
			if (o->peer < 0 || o->peer > last)
				return op_err(d, o, "peer %" PRId32 " is out of range (ranks 0..%" PRId32 ")",
					      o->peer, last);
			if (o->peer == o->rank)
				return op_err(d, o, "rank %" PRId32 " %s itself", o->rank,
					      o->kind == TRACE_SEND ? "sends to" : "receives from");
			break;
		case TRACE_COLL:
			if ((unsigned)o->coll >= TRACE_NCOLL)
				return op_err(d, o, "unknown collective %d", (int)o->coll);
			if ((unsigned)o->algo >= TRACE_NALGO)
				return op_err(d, o, "unknown algorithm %d", (int)o->algo);
			if (o->comm >= t->ncomms)
				return op_err(d, o, "communicator %" PRIu32 " does not exist (%zu defined)",
					      o->comm, t->ncomms);
			if ((o->coll == TRACE_BROADCAST || o->coll == TRACE_REDUCE) &&
			    !comm_has(&t->comms[o->comm], o->root))
				return op_err(d, o, "root %" PRId32 " is not a member of the communicator",
					      o->root);
			break;
		default:
			return op_err(d, o, "unknown op kind %d", (int)o->kind);
		}
		if ((uint64_t)o->dep_off + o->ndeps > t->ndeps)
			return op_err(d, o, "dependency list out of range");
		for (uint32_t k = 0; k < o->ndeps; k++)
			if (t->deps[o->dep_off + k] >= t->nops)
				return op_err(d, o, "dependency on op %" PRIu32 ", which does not exist",
					      t->deps[o->dep_off + k]);
	}
	return 0;
}

static int check_ids(const struct trace *t, struct sim_diag *d)
{
	struct id_ent *e = malloc((t->nops ? t->nops : 1) * sizeof(*e));

	if (!e)
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	for (size_t i = 0; i < t->nops; i++)
		e[i] = (struct id_ent){ t->ops[i].id, (uint32_t)i };
	qsort(e, t->nops, sizeof(*e), id_cmp);
	for (size_t i = 1; i < t->nops; i++)
		if (e[i].id == e[i - 1].id) {
			const struct trace_op *a = &t->ops[e[i - 1].op], *b = &t->ops[e[i].op];
			int rc = op_err(d, b, "duplicate op id %" PRIu32 " (also at %s:%d)", b->id,
					a->file, a->line);

			free(e);
			return rc;
		}
	free(e);
	return 0;
}

static int check_comms(const struct trace *t, struct sim_diag *d)
{
	uint32_t *seen = calloc((size_t)t->nranks, sizeof(*seen));

	if (!seen)
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	/* seen[r] holds the last communicator (+1) r was found in: one pass,
	 * no clearing between communicators. */
	for (size_t c = 0; c < t->ncomms; c++) {
		const struct trace_comm *cm = &t->comms[c];

		if (!cm->n || !cm->ranks) {
			free(seen);
			return sim_diag_set(d, NULL, 0, 0, "communicator %zu is empty", c);
		}
		for (uint32_t i = 0; i < cm->n; i++) {
			int32_t r = cm->ranks[i];

			if (r < 0 || r >= t->nranks || seen[r] == c + 1) {
				free(seen);
				return sim_diag_set(d, NULL, 0, 0,
						    r < 0 || r >= t->nranks ?
						    "communicator %zu: member %" PRId32 " out of range" :
						    "communicator %zu: rank %" PRId32 " listed twice",
						    c, r);
			}
			seen[r] = (uint32_t)c + 1;
		}
	}
	free(seen);
	return 0;
}

int trace_validate(const struct trace *t, struct sim_diag *d)
{
	const char *f = t->nfiles && t->njobs < 2 ? t->files[0] : NULL;	/* jobs: all of them */
	uint32_t *send_of;
	int rc;

	if (t->nranks < 1 || !t->ncomms)
		return sim_diag_set(d, f, 0, 0, "the trace has no ranks");
	if ((unsigned)t->map > TRACE_MAP_GPU)
		return sim_diag_set(d, f, 0, 0, "unknown rank mapping %d", (int)t->map);
	if (t->map == TRACE_MAP_EXPLICIT)
		for (int32_t r = 0; r < t->nranks; r++)
			if (!t->rank_host || !t->rank_host[r])
				return sim_diag_set(d, f, 0, 0, "rank %" PRId32 " has no host", r);
	if (!t->nops)
		return sim_diag_set(d, f, 0, 0, "the trace has no operations");
	if (check_comms(t, d) || check_ops(t, d) || check_ids(t, d))
		return -1;
	send_of = malloc(t->nops * sizeof(*send_of));
	if (!send_of)
		return sim_diag_set(d, f, 0, 0, "out of memory");
	rc = trace_match_recvs(t, send_of, d);
	if (!rc)
		rc = find_cycle(t, send_of, d);
	free(send_of);
	return rc;
}

/* ---- placing ranks on hosts ---------------------------------------------- */

/* "n<i>g<j>", digits only: the names `ibfab topo gen rail` gives GPUs. */
static bool gpu_name(const char *s, long *node, long *gpu)
{
	char *e;

	if (s[0] != 'n' || !isdigit((unsigned char)s[1]))
		return false;
	errno = 0;
	*node = strtol(s + 1, &e, 10);
	if (errno || *e != 'g' || !isdigit((unsigned char)e[1]))
		return false;
	*gpu = strtol(e + 1, &e, 10);
	return !errno && !*e;
}

struct gpu_ent {
	long node, gpu;
	int host;
};

static int gpu_cmp(const void *a, const void *b)
{
	const struct gpu_ent *x = a, *y = b;

	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	if (x->gpu != y->gpu)
		return x->gpu < y->gpu ? -1 : 1;
	return x->host - y->host;
}

/* The hosts named n<i>g<j> (server i, GPU j) into e, sorted by (i, j): how many. */
static int gpu_hosts(const struct net *net, int nh, struct gpu_ent *e)
{
	int ne = 0;

	for (int h = 0; h < nh; h++) {
		const struct net_node *nd = &net->nodes[net_host(net, h)];
		long ni, gi;

		if (gpu_name(nd->desc, &ni, &gi) || gpu_name(nd->id, &ni, &gi))
			e[ne++] = (struct gpu_ent){ ni, gi, h };
	}
	qsort(e, (size_t)ne, sizeof(*e), gpu_cmp);
	return ne;
}

/*
 * Linear with ranks_per_node K on GPU servers: each server's first K GPUs
 * (by GPU number) in server order, as a launcher's K processes a node
 * each take the GPU of their local rank. 1 where no host is named
 * n<i>g<j> (one rank a host, as before), else 0 or -1.
 */
static int per_node_order(const struct trace *t, const struct net *net, int nh, int *order,
			  struct sim_diag *d)
{
	const char *f = t->nfiles && t->njobs < 2 ? t->files[0] : NULL;	/* jobs: all of them */
	const int32_t K = t->ranks_per_node;
	struct gpu_ent *e = malloc((size_t)nh * sizeof(*e));
	int ne, k = 0, rc = 0, nsrv = 0;

	if (!e)
		return sim_diag_set(d, f, 0, 0, "out of memory");
	ne = gpu_hosts(net, nh, e);
	if (!ne) {
		free(e);
		return 1;
	}
	for (int i = 0; i < ne && k < t->nranks && !rc; nsrv++) {
		int j = i;

		while (j < ne && e[j].node == e[i].node)
			j++;
		if (j - i < K && k + (j - i) < t->nranks)
			rc = sim_diag_set(d, f, 0, 0,
					  "%" PRId32 " ranks a server (the launcher's processes a node x -t x -g), but server n%ld has %d GPUs",
					  K, e[i].node, j - i);
		for (int g = i; g < j && g < i + K && k < t->nranks; g++)
			order[k++] = e[g].host;
		i = j;
	}
	if (!rc && k < t->nranks) {
		char what[512];

		trace_ranks_text(t, what, sizeof(what));
		rc = sim_diag_set(d, f, 0, 0,
				  "%s, %" PRId32 " a server, but the fabric's %d servers (hosts n<node>g<gpu>) take %d of them",
				  what, K, nsrv, k);
	}
	free(e);
	return rc ? -1 : 0;
}

/* Hosts (net_host indexes) in the order the policy gives ranks; fills
 * order[0..nranks). 0 or -1. */
static int map_order(const struct trace *t, const struct net *net, int nh, int *order,
		     struct sim_diag *d)
{
	const char *f = t->nfiles && t->njobs < 2 ? t->files[0] : NULL;	/* jobs: all of them */

	switch (t->map) {
	case TRACE_MAP_LINEAR: {
		int rc = t->ranks_per_node > 0 ? per_node_order(t, net, nh, order, d) : 1;

		for (int k = 0; rc > 0 && k < t->nranks; k++)
			order[k] = k;
		return rc < 0 ? -1 : 0;
	}
	case TRACE_MAP_RANDOM: {
		struct sim_rng rng;
		int *all = malloc((size_t)nh * sizeof(*all));

		if (!all)
			return sim_diag_set(d, f, 0, 0, "out of memory");
		/* Fisher-Yates on its own stream, so the placement depends on
		 * map_seed alone, not on the run's seed or other draws. */
		sim_rng_init(&rng, t->map_seed, sim_hash_str("trace.map"));
		for (int k = 0; k < nh; k++)
			all[k] = k;
		for (int k = nh - 1; k > 0; k--) {
			int j = (int)sim_rng_below(&rng, (uint64_t)k + 1), x = all[k];

			all[k] = all[j];
			all[j] = x;
		}
		memcpy(order, all, (size_t)t->nranks * sizeof(*order));
		free(all);
		return 0;
	}
	case TRACE_MAP_ROUNDROBIN: {
		/* Group hosts by the switch (or node) their first port is cabled
		 * to, groups in order of first appearance; then one host per
		 * group in turn. */
		int *grp_of_node = malloc((size_t)net->nnodes * sizeof(int));
		int *grp = malloc((size_t)nh * sizeof(int));
		int *start = calloc((size_t)nh + 1, sizeof(int));
		int *byg = malloc((size_t)nh * sizeof(int));
		int *taken = calloc((size_t)nh + 1, sizeof(int));
		int ng = 0, k = 0, rc = 0;

		if (!grp_of_node || !grp || !start || !byg || !taken) {
			rc = sim_diag_set(d, f, 0, 0, "out of memory");
			goto rr_out;
		}
		for (int i = 0; i < net->nnodes; i++)
			grp_of_node[i] = -1;
		for (int h = 0; h < nh; h++) {
			int node = net_host(net, h), p = net_first_port(net, node);
			int leaf = p >= 0 ? net->nodes[node].ports[p].remote_node : node;

			if (leaf < 0)
				leaf = node;
			if (grp_of_node[leaf] < 0)
				grp_of_node[leaf] = ng++;
			grp[h] = grp_of_node[leaf];
			start[grp[h] + 1]++;
		}
		for (int g = 0; g < ng; g++)
			start[g + 1] += start[g];
		for (int h = 0; h < nh; h++)
			byg[start[grp[h]] + taken[grp[h]]++] = h;
		memset(taken, 0, (size_t)ng * sizeof(int));
		while (k < t->nranks)
			for (int g = 0; g < ng && k < t->nranks; g++)
				if (start[g] + taken[g] < start[g + 1])
					order[k++] = byg[start[g] + taken[g]++];
rr_out:
		free(grp_of_node);
		free(grp);
		free(start);
		free(byg);
		free(taken);
		return rc;
	}
	case TRACE_MAP_GPU: {
		struct gpu_ent *e = malloc((size_t)nh * sizeof(*e));
		int ne;

		if (!e)
			return sim_diag_set(d, f, 0, 0, "out of memory");
		ne = gpu_hosts(net, nh, e);
		if (ne < t->nranks) {
			char what[512];

			free(e);
			trace_ranks_text(t, what, sizeof(what));
			return sim_diag_set(d, f, 0, 0,
					    "map gpu: %s but the fabric has %d hosts named n<node>g<gpu>%s",
					    what, ne,
					    ne ? "" : " (rail-optimised clusters, as 'ibfab topo gen rail' writes them)");
		}
		for (int k = 1; k < ne; k++)
			if (e[k].node == e[k - 1].node && e[k].gpu == e[k - 1].gpu) {
				int rc = sim_diag_set(d, f, 0, 0,
						      "map gpu: two hosts are named n%ldg%ld",
						      e[k].node, e[k].gpu);

				free(e);
				return rc;
			}
		for (int k = 0; k < t->nranks; k++)
			order[k] = e[k].host;
		free(e);
		return 0;
	}
	case TRACE_MAP_EXPLICIT:
		break;
	}
	return sim_diag_set(d, f, 0, 0, "unknown rank mapping %d", (int)t->map);
}

static const char *const map_names[] = {
	[TRACE_MAP_EXPLICIT] = "host lines",
	[TRACE_MAP_LINEAR] = "map linear",
	[TRACE_MAP_ROUNDROBIN] = "map roundrobin",
	[TRACE_MAP_RANDOM] = "map random",
	[TRACE_MAP_GPU] = "map gpu",
};

int trace_map_ranks(struct trace *t, const struct net *net, struct sim_diag *d)
{
	const char *f = t->nfiles && t->njobs < 2 ? t->files[0] : NULL;	/* jobs: all of them */
	int nh = net_nhosts(net), rc = 0;
	int32_t *node_rank = NULL, *rn = NULL;
	int *order = NULL;

	if (t->nranks < 1)
		return sim_diag_set(d, f, 0, 0, "the trace has no ranks");
	if ((unsigned)t->map > TRACE_MAP_GPU)
		return sim_diag_set(d, f, 0, 0, "unknown rank mapping %d", (int)t->map);
	if (t->map != TRACE_MAP_EXPLICIT && t->nranks > nh) {
		char what[512];

		trace_ranks_text(t, what, sizeof(what));
		return sim_diag_set(d, f, 0, 0, "%s but the fabric has %d hosts (one rank per host)",
				    what, nh);
	}
	rn = malloc((size_t)t->nranks * sizeof(*rn));
	order = malloc((size_t)t->nranks * sizeof(*order));
	node_rank = malloc((size_t)(net->nnodes ? net->nnodes : 1) * sizeof(*node_rank));
	if (!rn || !order || !node_rank) {
		rc = sim_diag_set(d, f, 0, 0, "out of memory");
		goto out;
	}
	if (t->map == TRACE_MAP_EXPLICIT) {
		for (int32_t r = 0; r < t->nranks && !rc; r++) {
			const char *h = t->rank_host ? t->rank_host[r] : NULL;
			int node = h ? net_find_host(net, h) : -1;

			if (!h)
				rc = sim_diag_set(d, f, 0, 0, "rank %" PRId32 " has no host", r);
			else if (node < 0 || net->nodes[node].type == NET_SWITCH ||
				 net_first_port(net, node) < 0)
				rc = sim_diag_set(d, f, 0, 0,
						  "rank %" PRId32 " is placed on '%s', which is not a connected host of the fabric",
						  r, h);
			else
				rn[r] = node;
		}
	} else {
		rc = map_order(t, net, nh, order, d);
		for (int32_t r = 0; r < t->nranks && !rc; r++)
			rn[r] = net_host(net, order[r]);
	}
	if (rc)
		goto out;
	for (int i = 0; i < net->nnodes; i++)
		node_rank[i] = -1;
	for (int32_t r = 0; r < t->nranks; r++) {
		if (node_rank[rn[r]] >= 0) {
			rc = sim_diag_set(d, f, 0, 0,
					  "ranks %" PRId32 " and %" PRId32 " are both placed on host '%s' (%s): ibfab needs one rank per host, since the fabric has no path inside a host; model a multi-GPU server as one host per GPU",
					  node_rank[rn[r]], r, net->nodes[rn[r]].desc,
					  map_names[t->map]);
			goto out;
		}
		node_rank[rn[r]] = r;
	}
	free(t->rank_node);
	t->rank_node = rn;
	rn = NULL;
	/* a new placement: the old tree's leaves no longer hold */
	free(t->agg_parent);
	free(t->rank_agg);
	free(t->rank_group);
	t->agg_parent = t->rank_agg = t->rank_group = NULL;
	t->nagg = t->nnvs = 0;
out:
	free(rn);
	free(order);
	free(node_rank);
	return rc;
}

/* ---- loading ---------------------------------------------------------------- */

int trace_read_file(const char *path, char **buf, size_t *len, struct sim_diag *d)
{
	char why[128];
	int err = sim_read_file(path, TRACE_MAX_FILE, buf, len);

	if (err)
		return sim_diag_set(d, path, 0, 0, "%s",
				    sim_read_error(err, TRACE_MAX_FILE, why, sizeof(why)));
	return 0;
}

int trace_load(const char *path, const char *format, struct trace *t, struct sim_diag *d)
{
	const struct import_format *fmt;
	char *buf;
	size_t len;
	int rc;

	trace_init(t);
	sim_diag_clear(d);
	if (trace_read_file(path, &buf, &len, d))
		return -1;
	/* Each format recognises its own files (import.c). */
	if (!format)
		format = import_detect(path, buf, len);
	if (!format) {
		char whats[512];

		free(buf);
		return sim_diag_set(d, path, 0, 0,
				    "cannot tell the trace format: expected %s; name the format with --trace-format",
				    import_format_whats(whats, sizeof(whats)));
	}
	if (!(fmt = import_format_find(format))) {
		char names[256];

		free(buf);
		return sim_diag_set(d, path, 0, 0, "unknown trace format '%s' (expected %s)",
				    format, import_format_names(names, sizeof(names)));
	}
	rc = fmt->load(path, buf, len, t, d);
	free(buf);
	if (!rc)
		rc = trace_validate(t, d);
	if (rc)
		trace_free(t);
	return rc;
}

int trace_load_string(const char *text, const char *name, struct trace *t, struct sim_diag *d)
{
	int rc;

	trace_init(t);
	sim_diag_clear(d);
	rc = trace_fmt_parse(text, strlen(text), name ? name : "<string>", NULL, t, d);
	if (!rc)
		rc = trace_validate(t, d);
	if (rc)
		trace_free(t);
	return rc;
}

int trace_set_agg(struct trace *t, int32_t nagg, const int *agg_node, const int32_t *parent,
		  const int32_t *rank_agg, struct sim_diag *d)
{
	int32_t *rn, *par, *ra;

	if (!t->rank_node || nagg < 1 || t->nnvs)
		return sim_diag_set(d, NULL, 0, 0, "internal error: an aggregation tree before the ranks are placed");
	rn = realloc(t->rank_node, ((size_t)t->nranks + (size_t)nagg) * sizeof(*rn));
	if (!rn)
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	t->rank_node = rn;
	par = malloc((size_t)nagg * sizeof(*par));
	ra = malloc((size_t)t->nranks * sizeof(*ra));
	if (!par || !ra) {
		free(par);
		free(ra);
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	}
	for (int32_t i = 0; i < nagg; i++) {
		rn[t->nranks + i] = agg_node[i];
		par[i] = parent[i];
	}
	memcpy(ra, rank_agg, (size_t)t->nranks * sizeof(*ra));
	free(t->agg_parent);
	free(t->rank_agg);
	t->agg_parent = par;
	t->rank_agg = ra;
	t->nagg = nagg;
	return 0;
}

int trace_set_groups(struct trace *t, const int32_t *group, uint32_t channels,
		     uint64_t step_bytes, struct sim_diag *d)
{
	int32_t *g = malloc((size_t)(t->nranks ? t->nranks : 1) * sizeof(*g));

	if (!g)
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	memcpy(g, group, (size_t)t->nranks * sizeof(*g));
	free(t->rank_group);
	t->rank_group = g;
	t->auto_channels = channels;
	t->auto_step_bytes = step_bytes;
	return 0;
}

int trace_set_nvs(struct trace *t, struct sim_diag *d)
{
	int32_t maxg = -1, *rn;

	if (!t->rank_node || !t->rank_group || t->nnvs)
		return 0;
	for (int32_t r = 0; r < t->nranks; r++)
		if (t->rank_group[r] > maxg)
			maxg = t->rank_group[r];
	if (maxg < 0)
		return 0;
	rn = realloc(t->rank_node, ((size_t)t->nranks + (size_t)t->nagg +
				    2 * ((size_t)maxg + 1)) * sizeof(*rn));
	if (!rn)
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	t->rank_node = rn;
	/* each on a node of its domain (its first rank's): the replay only
	 * ever moves its data over that domain's NVLink */
	for (int32_t e = 0; e < 2 * (maxg + 1); e++)
		rn[t->nranks + t->nagg + e] = rn[0];
	for (int32_t r = t->nranks - 1; r >= 0; r--)
		if (t->rank_group[r] >= 0)
			rn[t->nranks + t->nagg + 2 * t->rank_group[r]] =
				rn[t->nranks + t->nagg + 2 * t->rank_group[r] + 1] = rn[r];
	t->nnvs = 2 * (maxg + 1);
	return 0;
}
