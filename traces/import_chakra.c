/* SPDX-License-Identifier: MIT */
/*
 * import_chakra.c - read a Chakra execution trace (MLCommons Chakra,
 * schema/protobuf/et_def.proto; what ASTRA-sim replays) into a trace.
 *
 * A Chakra trace is one file per rank, NAME.0.et ... NAME.{N-1}.et; give
 * rank 0's and the others are read beside it (N = the files there are).
 * Each file is a stream of protobuf messages, each preceded by its length
 * as a varint (Chakra's protoio): a GlobalMetadata, then the rank's Nodes.
 * The decoder here reads the wire format itself (varints, length-delimited
 * fields, fixed 32 and 64-bit fields) for the fields it needs and skips the
 * rest, so no protobuf library is involved and a field Chakra adds later is
 * passed over.
 *
 * The mapping (docs/importers.md has the reasons):
 *   - rank k = file k, mapped linearly;
 *   - a node waits for its data_deps (ids in the same file), and for
 *     nothing else: as Chakra's own feeder (src/feeder/et_feeder.cpp,
 *     which ASTRA-sim runs) issues a node once its data_deps are done, a
 *     node without them may start at once, whatever comes before it in the
 *     file, and ctrl_deps (the converter's record of the host's call
 *     order, naming nodes it may not have kept) are not waited for;
 *   - COMP_NODE: a compute op of duration_micros (num_ops and a roofline
 *     are not used); METADATA_NODE, MEM_LOAD_NODE and MEM_STORE_NODE are
 *     computes of their duration_micros too (usually 0: ibfab has no
 *     remote memory to load from);
 *   - COMM_SEND_NODE / COMM_RECV_NODE: a send to comm_dst, a recv from
 *     comm_src, of comm_size bytes (tensor_size when comm_size is absent),
 *     matched by comm_tag;
 *   - COMM_COLL_NODE: the k-th collective of a process group (pg_name) on
 *     every member rank is one collective op over the ranks whose files
 *     have that group (no pg_name: every rank, each with as many), member r waiting for what its own
 *     node waits for; comm_type ALL_REDUCE, REDUCE, ALL_GATHER, BROADCAST,
 *     ALL_TO_ALL, REDUCE_SCATTER(_BLOCK) and BARRIER map to ibfab's
 *     collectives with algo=auto (REDUCE and BROADCAST rooted at the
 *     group's first rank: Chakra names no root); GATHER and SCATTER are
 *     refused. comm_size is the collective's buffer size, nccl-tests'
 *     "size" (every member must give the same type and size);
 *   - a communication node marked is_cpu_op (PyTorch's c10d call on the
 *     host, which the converter keeps beside the GPU's NCCL kernel node
 *     that carries comm_type and comm_size) is a compute of its
 *     duration_micros, as every CPU op: ASTRA-sim refuses communication
 *     on the CPU, and the kernel node is the collective;
 *   - comm_priority, involved_dim and the tensors' shapes are not used,
 *     and a rank computes one thing at a time (ASTRA-sim keeps a CPU op,
 *     a GPU compute and a GPU communication in flight at once).
 * Errors name the file, the record (1 is the GlobalMetadata) and the byte
 * offset in the file.
 */
#include "traces/import.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_file.h"
#include "sim/sim_parse.h"
#include "traces/trace_fmt.h"

/* Chakra's NodeType and CollectiveCommType (et_def.proto). */
enum { CK_INVALID, CK_METADATA, CK_MEM_LOAD, CK_MEM_STORE, CK_COMP, CK_SEND, CK_RECV, CK_COLL };
enum { CT_ALL_REDUCE, CT_REDUCE, CT_ALL_GATHER, CT_GATHER, CT_SCATTER, CT_BROADCAST,
       CT_ALL_TO_ALL, CT_REDUCE_SCATTER, CT_REDUCE_SCATTER_BLOCK, CT_BARRIER, CT_N };

static const char *const ct_names[CT_N] = {
	"ALL_REDUCE", "REDUCE", "ALL_GATHER", "GATHER", "SCATTER", "BROADCAST", "ALL_TO_ALL",
	"REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK", "BARRIER",
};

#define MAX_RANKS 65536		/* files read beside rank 0's */

/* What a node says, as far as the mapping reads it. */
struct cnode {
	uint64_t id;
	uint32_t type;
	uint32_t dep_off, ndeps;	/* into the rank's deps: its data_deps */
	uint64_t dur_us;
	int64_t comm_type, comm_size, src, dst, tag;
	uint64_t tensor_size;
	bool has_type, has_size, has_src, has_dst, has_tensor, cpu;
	char name[32];
	char pg[64];
	int record;
	size_t offset;
	uint32_t grp, k;	/* a collective: its group, and which of the group's */
	uint32_t unit;		/* the trace op it becomes */
};

struct crank {
	const char *file;	/* trace_add_file's copy */
	struct cnode *n;
	size_t nn, ncap;
	uint64_t *deps;
	size_t ndeps, dcap;
};

struct ck {
	struct trace *t;
	struct sim_diag *d;
	struct crank *r;
	int nranks;
};

static int ck_err(struct ck *c, const struct crank *r, int record, size_t off, const char *fmt,
		  ...) __attribute__((format(printf, 5, 6)));

static int ck_err(struct ck *c, const struct crank *r, int record, size_t off, const char *fmt,
		  ...)
{
	char msg[sizeof(c->d->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return sim_diag_set(c->d, r ? r->file : NULL, record, 0, "record %d at byte %zu: %s",
			    record, off, msg);
}

/* ---- the protobuf wire format ------------------------------------------------ */

struct pb {
	const uint8_t *p, *e;
};

static int pb_varint(struct pb *b, uint64_t *v)
{
	uint64_t x = 0;

	for (int s = 0; s < 70; s += 7) {
		if (b->p == b->e)
			return -1;
		uint8_t c = *b->p++;

		x |= (uint64_t)(c & 0x7f) << s;
		if (!(c & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -1;	/* more than 10 bytes */
}

static int pb_sub(struct pb *b, struct pb *out)
{
	uint64_t n;

	if (pb_varint(b, &n) || n > (uint64_t)(b->e - b->p))
		return -1;
	out->p = b->p;
	out->e = b->p + n;
	b->p += n;
	return 0;
}

/* The value of a field of wire type `wire` as an integer (varint, fixed
 * 32 or 64 bits), or skip it (length-delimited); -1 when truncated or an
 * unknown wire type. */
static int pb_value(struct pb *b, uint32_t wire, uint64_t *v, struct pb *sub)
{
	*v = 0;
	switch (wire) {
	case 0:
		return pb_varint(b, v);
	case 1:
	case 5: {
		size_t n = wire == 1 ? 8 : 4;

		if ((size_t)(b->e - b->p) < n)
			return -1;
		for (size_t k = 0; k < n; k++)
			*v |= (uint64_t)b->p[k] << (8 * k);
		b->p += n;
		return 0;
	}
	case 2:
		return pb_sub(b, sub);
	default:
		return -1;
	}
}

/* ---- a node ---------------------------------------------------------------------- */

static void pb_str(const struct pb *s, char *buf, size_t len)
{
	size_t n = (size_t)(s->e - s->p) < len - 1 ? (size_t)(s->e - s->p) : len - 1;

	memcpy(buf, s->p, n);
	buf[n] = 0;
}

static int64_t zigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* An AttributeProto: the attributes the mapping reads, any integer field
 * taken for an integer (int32 and int64 varints are two's complement). */
static int attr(struct cnode *n, struct pb *a)
{
	char name[32] = "";
	int64_t iv = 0;
	bool has_int = false;
	struct pb str = { NULL, NULL };

	while (a->p < a->e) {
		uint64_t key, v;
		struct pb sub = { NULL, NULL };

		if (pb_varint(a, &key) || pb_value(a, (uint32_t)(key & 7), &v, &sub))
			return -1;
		uint32_t f = (uint32_t)(key >> 3);

		if (f == 1 && (key & 7) == 2) {
			pb_str(&sub, name, sizeof(name));
		} else if (f == 29 && (key & 7) == 2) {
			str = sub;
		} else if ((key & 7) != 2 && f >= 7 && f <= 26 && f % 2) {
			/* int32 7, int64 9, uint32 11, uint64 13, sint32 15, sint64 17,
			 * fixed32 19, fixed64 21, sfixed32 23, sfixed64 25 */
			iv = f == 15 || f == 17 ? zigzag(v) : f == 7 || f == 23 ? (int32_t)v : (int64_t)v;
			has_int = true;
		} else if (f == 27) {
			iv = (int64_t)v;
			has_int = true;
		}
	}
	if (!strcmp(name, "pg_name") && str.p)
		pb_str(&str, n->pg, sizeof(n->pg));
	if (!has_int)
		return 0;
	if (!strcmp(name, "comm_type")) {
		n->comm_type = iv;
		n->has_type = true;
	} else if (!strcmp(name, "comm_size")) {
		n->comm_size = iv;
		n->has_size = true;
	} else if (!strcmp(name, "comm_src")) {
		n->src = iv;
		n->has_src = true;
	} else if (!strcmp(name, "comm_dst")) {
		n->dst = iv;
		n->has_dst = true;
	} else if (!strcmp(name, "comm_tag")) {
		n->tag = iv;
	} else if (!strcmp(name, "is_cpu_op")) {
		n->cpu = iv != 0;
	} else if (!strcmp(name, "tensor_size")) {
		n->tensor_size = (uint64_t)iv;
		n->has_tensor = true;
	}
	return 0;
}

static int dep_push(struct crank *r, uint64_t id)
{
	if (sim_grow((void **)&r->deps, &r->dcap, r->ndeps + 1, sizeof(*r->deps)))
		return -1;
	r->deps[r->ndeps++] = id;
	return 0;
}

/* A Node message into n (its deps appended to r's); 0, -1 malformed, -2 oom. */
static int node(struct crank *r, struct cnode *n, struct pb *b)
{
	n->dep_off = (uint32_t)r->ndeps;
	while (b->p < b->e) {
		uint64_t key, v;
		struct pb sub = { NULL, NULL };

		if (pb_varint(b, &key) || pb_value(b, (uint32_t)(key & 7), &v, &sub))
			return -1;
		switch (key >> 3) {
		case 1: n->id = v; break;
		case 2:		/* the name, as printable ASCII: reports print it */
			if ((key & 7) == 2) {
				pb_str(&sub, n->name, sizeof(n->name));
				for (char *q = n->name; *q; q++)
					if (*q < 0x20 || *q > 0x7e)
						*q = '?';
			}
			break;
		case 3: n->type = (uint32_t)v; break;
		case 4:		/* ctrl_deps: not dependencies for a replay (below) */
			break;
		case 5:		/* data_deps: packed or not */
			if ((key & 7) == 2) {
				while (sub.p < sub.e) {
					if (pb_varint(&sub, &v))
						return -1;
					if (dep_push(r, v))
						return -2;
				}
			} else if (dep_push(r, v)) {
				return -2;
			}
			break;
		case 7: n->dur_us = v; break;
		case 10:
			if ((key & 7) == 2 && attr(n, &sub))
				return -1;
			break;
		default: break;		/* start time, inputs, outputs, later fields */
		}
	}
	n->ndeps = (uint32_t)(r->ndeps - n->dep_off);
	return 0;
}

/* One rank's file: the GlobalMetadata, then its nodes. */
static int read_rank(struct ck *c, struct crank *r, const char *text, size_t len)
{
	struct pb b = { (const uint8_t *)text, (const uint8_t *)text + len };
	int record = 0;

	while (b.p < b.e) {
		size_t off = (size_t)(b.p - (const uint8_t *)text);
		struct pb msg;

		record++;
		if (pb_sub(&b, &msg))
			return ck_err(c, r, record, off,
				      "a message's length runs past the end of the file (expected Chakra's varint-length-delimited messages)");
		if (record == 1)
			continue;	/* GlobalMetadata: its version is not checked */
		if (sim_grow((void **)&r->n, &r->ncap, r->nn + 1, sizeof(*r->n)))
			return sim_diag_set(c->d, r->file, 0, 0, "out of memory");
		struct cnode *n = &r->n[r->nn];

		memset(n, 0, sizeof(*n));
		n->record = record;
		n->offset = off;
		int rc = node(r, n, &msg);

		if (rc == -2)
			return sim_diag_set(c->d, r->file, 0, 0, "out of memory");
		if (rc)
			return ck_err(c, r, record, off, "not a Chakra Node (a field runs past its message)");
		if (n->cpu && (n->type == CK_COLL || n->type == CK_SEND || n->type == CK_RECV))
			n->type = CK_COMP;	/* the host's call into the library (below) */
		r->nn++;
	}
	if (!record)
		return ck_err(c, r, 1, 0, "empty: expected a GlobalMetadata, then the rank's nodes");
	return 0;
}

/* ---- detection, the files ------------------------------------------------------- */

static bool ends_with(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);

	return n >= m && !strcmp(s + n - m, suf);
}

bool import_chakra_detect(const char *path, const char *text, size_t len)
{
	struct pb b = { (const uint8_t *)text, (const uint8_t *)text + len }, m;

	/* NAME.<rank>.et whose first message fits the file */
	return path && ends_with(path, ".et") && len && !pb_sub(&b, &m);
}

/* NAME of rank 0's file NAME.0.et, or NULL. */
static char *prefix_of(const char *path)
{
	size_t n = strlen(path);
	char *p;

	if (n < 6 || !ends_with(path, ".0.et"))
		return NULL;
	p = malloc(n - 4);
	if (p) {
		memcpy(p, path, n - 5);
		p[n - 5] = 0;
	}
	return p;
}

/* ---- the mapping ----------------------------------------------------------------- */

struct group {			/* one process group's collectives */
	char pg[64];
	int *count;		/* per rank: how many it has */
	uint32_t *unit;		/* the k-th collective's op, made on first sight */
	const struct cnode **node;	/* [k * nmembers + m]: member m's node of it */
	int32_t *members;
	uint32_t nmembers, comm;
};

static struct group *group_find(struct group **g, size_t *ng, size_t *gcap, const char *pg,
				int nranks)
{
	for (size_t k = 0; k < *ng; k++)
		if (!strcmp((*g)[k].pg, pg))
			return &(*g)[k];
	if (sim_grow((void **)g, gcap, *ng + 1, sizeof(**g)))
		return NULL;
	struct group *x = &(*g)[(*ng)++];

	memset(x, 0, sizeof(*x));
	snprintf(x->pg, sizeof(x->pg), "%s", pg);
	x->count = calloc((size_t)nranks, sizeof(*x->count));
	return x->count ? x : NULL;
}

static int cnode_cmp_id(const void *a, const void *b)
{
	const struct cnode *const *x = a, *const *y = b;

	return ((*x)->id > (*y)->id) - ((*x)->id < (*y)->id);
}

/* The node of rank r with id `id`, by binary search in `byid`. */
static const struct cnode *find_id(struct cnode **byid, size_t n, uint64_t id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (byid[mid]->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && byid[lo]->id == id ? byid[lo] : NULL;
}

static int coll_of(int64_t ct, enum trace_coll *out)
{
	static const int map[CT_N] = {
		TRACE_ALLREDUCE, TRACE_REDUCE, TRACE_ALLGATHER, -1, -1, TRACE_BROADCAST,
		TRACE_ALLTOALL, TRACE_REDUCESCATTER, TRACE_REDUCESCATTER, TRACE_BARRIER,
	};

	if (ct < 0 || ct >= CT_N || map[ct] < 0)
		return -1;
	*out = (enum trace_coll)map[ct];
	return 0;
}

/*
 * Every node becomes an op; the k-th collective of a group on each member
 * is one op. Units are numbered rank by rank in file order (a collective
 * where one of its members first shows it), ops added in that order with
 * their dependencies by unit: trace_validate finds a cycle, if any.
 */
static int build(struct ck *c)
{
	struct group *g = NULL;
	size_t ng = 0, gcap = 0;
	uint32_t nunits = 0, *deps = NULL;
	size_t dcap = 0;
	struct cnode **byid = NULL;
	size_t bcap = 0;
	int rc = -1;

	/* the groups, each rank's collectives numbered within its group */
	for (int r = 0; r < c->nranks; r++)
		for (size_t i = 0; i < c->r[r].nn; i++) {
			struct cnode *n = &c->r[r].n[i];
			struct group *x;

			if (n->type != CK_COLL)
				continue;
			x = group_find(&g, &ng, &gcap, n->pg, c->nranks);
			if (!x)
				goto oom;
			n->grp = (uint32_t)(x - g);
			n->k = (uint32_t)x->count[r]++;
		}
	for (size_t k = 0; k < ng; k++) {
		struct group *x = &g[k];
		int first = -1;

		x->members = malloc((size_t)c->nranks * sizeof(*x->members));
		if (!x->members)
			goto oom;
		for (int r = 0; r < c->nranks; r++) {
			if (!x->count[r] && x->pg[0])
				continue;	/* a named group: the ranks that have it */
			if (first < 0)
				first = r;
			if (x->count[r] != x->count[first]) {
				rc = sim_diag_set(c->d, c->r[r].file, 0, 0,
						  "process group '%s': %d collectives in this file, %d in %s: every member takes part in each",
						  x->pg, x->count[r], x->count[first], c->r[first].file);
				goto out;
			}
			x->members[x->nmembers++] = r;
		}
		if (x->nmembers == (uint32_t)c->nranks) {
			x->comm = 0;
		} else {
			int ix = trace_add_comm(c->t, x->members, x->nmembers, c->d);

			if (ix < 0)
				goto out;
			x->comm = (uint32_t)ix;
		}
		x->unit = malloc((size_t)x->count[first] * sizeof(*x->unit));
		x->node = malloc((size_t)x->count[first] * x->nmembers * sizeof(*x->node));
		if (!x->unit || !x->node)
			goto oom;
		for (int q = 0; q < x->count[first]; q++)
			x->unit[q] = UINT32_MAX;
	}
	/* units: rank by rank, in file order */
	for (int r = 0; r < c->nranks; r++)
		for (size_t i = 0; i < c->r[r].nn; i++) {
			struct cnode *n = &c->r[r].n[i];

			if (n->type == CK_COLL) {
				struct group *x = &g[n->grp];
				uint32_t m = 0;

				while (x->members[m] != r)	/* r is a member: it has the group */
					m++;
				x->node[(size_t)n->k * x->nmembers + m] = n;
				if (x->unit[n->k] == UINT32_MAX)
					x->unit[n->k] = nunits++;
				n->unit = x->unit[n->k];
			} else {
				n->unit = nunits++;
			}
		}
	/* the ops, in unit order: each unit's first node (rank by rank) makes it */
	uint32_t made = 0;

	for (int r = 0; r < c->nranks; r++) {
		struct crank *R = &c->r[r];

		if (sim_grow((void **)&byid, &bcap, R->nn + 1, sizeof(*byid)))
			goto oom;
		for (size_t i = 0; i < R->nn; i++)
			byid[i] = &R->n[i];
		qsort(byid, R->nn, sizeof(*byid), cnode_cmp_id);
		for (size_t i = 1; i < R->nn; i++)
			if (byid[i]->id == byid[i - 1]->id) {
				const struct cnode *n = byid[i]->record > byid[i - 1]->record ? byid[i] : byid[i - 1];

				rc = ck_err(c, R, n->record, n->offset, "node id %" PRIu64 " again (ids are unique in a rank's file)",
					    n->id);
				goto out;
			}
		/* every dependency names a node of the file: the units they are */
		for (size_t i = 0; i < R->nn; i++) {
			struct cnode *n = &R->n[i];

			for (uint32_t k = 0; k < n->ndeps; k++) {
				const struct cnode *dn = find_id(byid, R->nn, R->deps[n->dep_off + k]);

				if (!dn) {
					rc = ck_err(c, R, n->record, n->offset,
						    "node %" PRIu64 " waits for node %" PRIu64 ", which is not in this file",
						    n->id, R->deps[n->dep_off + k]);
					goto out;
				}
				R->deps[n->dep_off + k] = dn->unit;
			}
		}
	}
	/* the ops in unit order: units were numbered in this same scan, so a
	 * node whose unit is the next one makes it, and a collective's other
	 * members find theirs made */
	for (int r = 0; r < c->nranks; r++) {
		struct crank *R = &c->r[r];

		for (size_t i = 0; i < R->nn; i++) {
			const struct cnode *n = &R->n[i];
			struct trace_op op = {
				.id = made, .rank = r, .file = R->file, .line = n->record,
				.algo = TRACE_ALGO_AUTO,	/* chunks, channels: the lowering's */
			};
			uint32_t nd = 0;

			if (n->unit != made)
				continue;
			snprintf(op.name, sizeof(op.name), "%s", n->name);
			if (n->type == CK_COLL) {
				struct group *x = &g[n->grp];

				if (!n->has_type || coll_of(n->comm_type, &op.coll)) {
					rc = ck_err(c, R, n->record, n->offset,
						    "collective node %" PRIu64 ": comm_type %s%s (expected ALL_REDUCE, REDUCE, ALL_GATHER, BROADCAST, ALL_TO_ALL, REDUCE_SCATTER or BARRIER)",
						    n->id, !n->has_type ? "missing" :
						    n->comm_type >= 0 && n->comm_type < CT_N ? ct_names[n->comm_type] : "unknown",
						    n->has_type && (n->comm_type == CT_GATHER || n->comm_type == CT_SCATTER) ?
						    ", which ibfab has no algorithm for" : "");
					goto out;
				}
				if (op.coll != TRACE_BARRIER && (!n->has_size || n->comm_size < 0)) {
					rc = ck_err(c, R, n->record, n->offset,
						    "collective node %" PRIu64 ": expected comm_size (bytes, >= 0)",
						    n->id);
					goto out;
				}
				op.kind = TRACE_COLL;
				op.rank = -1;
				op.comm = x->comm;
				op.bytes = op.coll == TRACE_BARRIER ? 0 : (uint64_t)n->comm_size;
				op.root = x->members[0];
				/* every member's node: the same collective, its deps */
				for (uint32_t m = 0; m < x->nmembers; m++) {
					const struct crank *M = &c->r[x->members[m]];
					const struct cnode *o = x->node[(size_t)n->k * x->nmembers + m];

					if (o->comm_type != n->comm_type ||
					    (op.coll != TRACE_BARRIER && o->comm_size != n->comm_size)) {
						rc = ck_err(c, M, o->record, o->offset,
							    "this rank's collective is %s of %" PRId64 " bytes, %s (record %d) has %s of %" PRId64 ": the k-th collective of a group is one on every member",
							    o->comm_type >= 0 && o->comm_type < CT_N ? ct_names[o->comm_type] : "?",
							    o->comm_size, R->file, n->record,
							    ct_names[n->comm_type], n->comm_size);
						goto out;
					}
					if (sim_grow((void **)&deps, &dcap, nd + o->ndeps + 1, sizeof(*deps)))
						goto oom;
					for (uint32_t k = 0; k < o->ndeps; k++)	/* units by now */
						deps[nd++] = (uint32_t)M->deps[o->dep_off + k];
				}
			} else if (n->type == CK_SEND || n->type == CK_RECV) {
				bool send = n->type == CK_SEND;
				int64_t peer = send ? n->dst : n->src;

				if (!(send ? n->has_dst : n->has_src) || peer < 0 || peer >= c->nranks ||
				    peer == r) {
					rc = ck_err(c, R, n->record, n->offset,
						    "%s node %" PRIu64 ": expected %s, another rank 0..%d",
						    send ? "send" : "recv", n->id, send ? "comm_dst" : "comm_src",
						    c->nranks - 1);
					goto out;
				}
				if ((n->has_size && n->comm_size < 0) || (!n->has_size && !n->has_tensor)) {
					rc = ck_err(c, R, n->record, n->offset,
						    "%s node %" PRIu64 ": expected comm_size or tensor_size (bytes)",
						    send ? "send" : "recv", n->id);
					goto out;
				}
				op.kind = send ? TRACE_SEND : TRACE_RECV;
				op.peer = (int32_t)peer;
				op.bytes = n->has_size ? (uint64_t)n->comm_size : n->tensor_size;
				op.tag = (uint32_t)n->tag;
			} else {
				if (n->dur_us > UINT64_MAX / SIM_US) {
					rc = ck_err(c, R, n->record, n->offset, "duration_micros %" PRIu64 " is too long",
						    n->dur_us);
					goto out;
				}
				op.kind = TRACE_COMPUTE;
				op.duration = n->dur_us * SIM_US;
			}
			if (n->type != CK_COLL) {
				if (sim_grow((void **)&deps, &dcap, n->ndeps + 1, sizeof(*deps)))
					goto oom;
				for (uint32_t k = 0; k < n->ndeps; k++)
					deps[nd++] = (uint32_t)R->deps[n->dep_off + k];
			}
			if (trace_add_op(c->t, &op, deps, nd, c->d) < 0)
				goto out;
			made++;
		}
	}
	rc = 0;
	goto out;
oom:
	rc = sim_diag_set(c->d, NULL, 0, 0, "out of memory reading the Chakra trace");
out:
	for (size_t k = 0; k < ng; k++) {
		free(g[k].count);
		free(g[k].unit);
		free(g[k].node);
		free(g[k].members);
	}
	free(g);
	free(deps);
	free(byid);
	return rc;
}

int import_chakra(const char *path, const char *text, size_t len, struct trace *t,
		  struct sim_diag *d)
{
	struct ck c = { .t = t, .d = d };
	char *prefix = prefix_of(path), *name = NULL;
	size_t rcap = 0;
	int rc = -1;

	if (!prefix)
		return sim_diag_set(d, path, 0, 0,
				    "a Chakra trace is one file per rank, NAME.0.et ... NAME.<N-1>.et: give rank 0's");
	name = malloc(strlen(prefix) + 24);
	if (!name)
		goto oom;
	/* the ranks: NAME.0.et (already read), NAME.1.et, ... while they exist */
	for (int r = 0;; r++) {
		char *buf = NULL;
		size_t n = 0;
		int err = 0;

		if (r == MAX_RANKS)
			break;
		sprintf(name, "%s.%d.et", prefix, r);
		if (r && (err = sim_read_file(name, TRACE_MAX_FILE, &buf, &n))) {
			if (err == ENOENT)
				break;
			char why[128];

			rc = sim_diag_set(d, name, 0, 0, "%s", sim_read_error(err, TRACE_MAX_FILE, why,
									      sizeof(why)));
			goto out;
		}
		if (sim_grow((void **)&c.r, &rcap, (size_t)r + 1, sizeof(*c.r))) {
			free(buf);
			goto oom;
		}
		memset(&c.r[r], 0, sizeof(c.r[r]));
		c.nranks = r + 1;
		c.r[r].file = trace_add_file(t, r ? name : path);
		if (!c.r[r].file) {
			free(buf);
			goto oom;
		}
		err = read_rank(&c, &c.r[r], r ? buf : text, r ? n : len);
		free(buf);
		if (err)
			goto out;
	}
	t->map = TRACE_MAP_LINEAR;
	if (trace_set_ranks(t, c.nranks, d) || build(&c))
		goto out;
	rc = 0;
	goto out;
oom:
	rc = sim_diag_set(d, path, 0, 0, "out of memory reading the Chakra trace");
out:
	for (int r = 0; r < c.nranks; r++) {
		free(c.r[r].n);
		free(c.r[r].deps);
	}
	free(c.r);
	free(name);
	free(prefix);
	return rc;
}
