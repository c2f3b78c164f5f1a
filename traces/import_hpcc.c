/* SPDX-License-Identifier: MIT */
/*
 * import_hpcc.c - read an HPCC / ns-3 RDMA flow file (mix/flow.txt) into a
 * trace.
 *
 * The format is what HPCC's simulator (alibaba-edu/High-Precision-
 * Congestion-Control, simulation/scratch/third.cc, ReadFlowInput) reads
 * with `flowf >> ...`, and what its traffic generator writes:
 *
 *   <n>                                         number of flows
 *   <src> <dst> <pg> <dport> <size> <start>     n times
 *
 * src and dst are ns-3 node numbers (HPCC's topology numbers the hosts
 * before the switches), pg the priority group (3 for data in every HPCC
 * example), dport the destination UDP port, size the message size in
 * bytes, start the start time in seconds. Fields are separated by any
 * white space, as `>>` reads them. Like HPCC, only the first n flows are
 * read and whatever follows is ignored (HPCC's own mix/flow.txt has text
 * after its flows). HPCC schedules flows in file order, so start times
 * must not decrease ("Please order the flows in ascending start_time!").
 *
 * The mapping (docs/importers.md has the reasons):
 *   - rank k = ns-3 node k, mapped linearly; ranks = 1 + the largest node
 *     number in the file (HPCC's host numbering then lands rank k on the
 *     k-th host of the ibfab topology);
 *   - each flow is a TRACE_SEND src -> dst of `size` bytes (no TRACE_RECV:
 *     in ibfab a send is done when delivered);
 *   - times are taken relative to the first flow: HPCC's traffic generator
 *     starts traffic at 2 s to let the network settle, and an idle prefix
 *     would only add 2 s to every total. A later start is a chain of
 *     TRACE_COMPUTE ops on the source rank (one per distinct start time,
 *     each the gap since the previous one: a rank computes one thing at a
 *     time) that the flow depends on; transfers are not held up by compute;
 *   - pg must be 0..7 (HPCC switches have 8 queues) and is not carried
 *     over: a trace op has no service level yet, so all flows share SL 0.
 *     dport is checked (0..65535) and dropped.
 */
#include "traces/import.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_parse.h"
#include "traces/trace_fmt.h"

#define TOK_MAX 64

struct tok {
	const char *s;
	size_t n;
	int line, col;
};

struct hp {
	const char *file;		/* as given, for messages */
	const char *ofile;		/* registered with trace_add_file */
	const char *p, *end, *ls;	/* cursor, end, start of the cursor's line */
	int line;
	int last_line, last_col;	/* just after the last token: where EOF is reported */
	struct sim_diag *d;
	struct trace *t;
};

struct hp_flow {
	int32_t src, dst;
	uint64_t size;
	sim_time_t start;		/* ps since the first flow */
	int line;
};

struct hp_start {
	int32_t rank;
	sim_time_t start;
	int line;
	int op;
};

static bool is_blank(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' || ch == '\v' || ch == '\f';
}

/* The next white-space separated token; false at the end of the text. */
static bool next_tok(struct hp *h, struct tok *k)
{
	while (h->p < h->end && is_blank(*h->p)) {
		if (*h->p == '\n') {
			h->line++;
			h->ls = h->p + 1;
		}
		h->p++;
	}
	if (h->p >= h->end)
		return false;
	k->s = h->p;
	k->line = h->line;
	k->col = (int)(h->p - h->ls) + 1;
	while (h->p < h->end && !is_blank(*h->p))
		h->p++;
	k->n = (size_t)(h->p - k->s);
	h->last_line = k->line;
	h->last_col = k->col + (int)k->n;
	return true;
}

static int terr(struct hp *h, const struct tok *k, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int terr(struct hp *h, const struct tok *k, const char *fmt, ...)
{
	char msg[sizeof(h->d->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* the end of the file is reported just after the last token */
	return sim_diag_set(h->d, h->file, k ? k->line : h->last_line ? h->last_line : 1,
			    k ? k->col : h->last_col ? h->last_col : 1, "%s", msg);
}

/* A token quoted for a message (sim_quote), cut after 24 characters. */
static const char *quote(const struct tok *k, char *buf, size_t len)
{
	return sim_quote(k->s, k->n, 24, buf, len);
}

/* The next token as an unsigned integer at most max (k: where it was). */
static int get_uint(struct hp *h, uint64_t max, uint64_t *v, const char *what, struct tok *k)
{
	char buf[TOK_MAX], err[128], q[64];

	if (!next_tok(h, k))
		return terr(h, NULL, "expected %s, got the end of the file", what);
	if (k->n >= sizeof(buf))
		return terr(h, k, "expected %s, got %s", what, quote(k, q, sizeof(q)));
	memcpy(buf, k->s, k->n);
	buf[k->n] = 0;
	if (sim_parse_uint(buf, max, v, err, sizeof(err)))
		return terr(h, k, "expected %s, got %s", what, quote(k, q, sizeof(q)));
	return 0;
}


static int cmp_start(const void *a, const void *b)
{
	const struct hp_start *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->line - y->line;
}

static int add_op(struct hp *h, struct trace_op *op, const uint32_t *deps, uint32_t nd, int line)
{
	op->id = (uint32_t)h->t->nops;
	op->file = h->ofile;
	op->line = line;
	op->chunks = op->channels = 0;	/* the lowering chooses */
	return trace_add_op(h->t, op, deps, nd, h->d);
}

/*
 * The ops: per source rank, one compute op per distinct start time > 0,
 * chained (each lasts the gap to the previous one), then the flows, each
 * depending on the compute op that ends at its start.
 */
static int emit(struct hp *h, const struct hp_flow *fl, size_t n)
{
	struct hp_start *st;
	size_t ns = 0, nu = 0;
	int rc = -1;

	st = malloc((n + 1) * sizeof(*st));
	if (!st)
		return sim_diag_set(h->d, h->file, 0, 0, "out of memory");
	for (size_t i = 0; i < n; i++)
		if (fl[i].start)
			st[ns++] = (struct hp_start){ fl[i].src, fl[i].start, fl[i].line, -1 };
	qsort(st, ns, sizeof(*st), cmp_start);
	for (size_t i = 0; i < ns; i++) {
		struct hp_start *prev = nu ? &st[nu - 1] : NULL;
		bool chain = prev && prev->rank == st[i].rank;
		struct trace_op op;
		uint32_t dep;

		if (chain && prev->start == st[i].start)
			continue;
		memset(&op, 0, sizeof(op));
		op.kind = TRACE_COMPUTE;
		op.rank = st[i].rank;
		op.peer = -1;
		op.duration = st[i].start - (chain ? prev->start : 0);
		snprintf(op.name, sizeof(op.name), "start %" PRIu64 "ps", st[i].start);
		dep = chain ? (uint32_t)prev->op : 0;
		st[nu] = st[i];
		st[nu].op = add_op(h, &op, &dep, chain, st[i].line);
		if (st[nu].op < 0)
			goto out;
		nu++;
	}
	for (size_t i = 0; i < n; i++) {
		struct trace_op op;
		uint32_t dep = 0, nd = 0;

		if (fl[i].start) {
			struct hp_start key = { fl[i].src, fl[i].start, 0, -1 };
			size_t lo = 0, hi = nu;

			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;

				if (cmp_start(&st[mid], &key) < 0)
					lo = mid + 1;
				else
					hi = mid;
			}
			dep = (uint32_t)st[lo].op;
			nd = 1;
		}
		memset(&op, 0, sizeof(op));
		op.kind = TRACE_SEND;
		op.rank = fl[i].src;
		op.peer = fl[i].dst;
		op.bytes = fl[i].size;
		snprintf(op.name, sizeof(op.name), "flow %zu", i);
		if (add_op(h, &op, &dep, nd, fl[i].line) < 0)
			goto out;
	}
	rc = 0;
out:
	free(st);
	return rc;
}

int import_hpcc(const char *path, const char *text, size_t len, struct trace *t,
		struct sim_diag *d)
{
	struct hp h = { .file = path, .p = text, .end = text + len, .ls = text, .line = 1,
			.d = d, .t = t };
	struct hp_flow *fl = NULL;
	size_t cap = 0;
	uint64_t n, v, first = 0;
	int32_t maxnode = 0;
	sim_time_t prev = 0;
	struct tok k, ksrc;
	int rc = -1;
	char what[96], q[64];

	if (get_uint(&h, TRACE_MAX_OPS, &n, "the number of flows on the first line", &k))
		return -1;
	if (!n)
		return terr(&h, &k, "the file has no flows (count 0): nothing to replay");
	for (uint64_t i = 0; i < n; i++) {
		struct hp_flow *f;
		int r;

		if (i == cap) {
			/* grow as flows arrive: the count alone is no reason to allocate */
			size_t ncap = cap ? cap * 2 : 256;
			void *nf = realloc(fl, ncap * sizeof(*fl));

			if (!nf) {
				sim_diag_set(d, path, h.line, 0, "out of memory");
				goto out;
			}
			fl = nf;
			cap = ncap;
		}
		f = &fl[i];
		snprintf(what, sizeof(what), "flow %" PRIu64 " of %" PRIu64 ": a source node number",
			 i + 1, n);
		if (get_uint(&h, TRACE_MAX_RANKS - 1, &v, what, &ksrc))
			goto out;
		f->src = (int32_t)v;
		f->line = ksrc.line;
		if (get_uint(&h, TRACE_MAX_RANKS - 1, &v, "a destination node number", &k))
			goto out;
		f->dst = (int32_t)v;
		if (f->src == f->dst) {
			terr(&h, &ksrc, "a flow from node %d to itself: expected two different nodes",
			     f->src);
			goto out;
		}
		if (get_uint(&h, 7, &v, "a priority group 0..7 (HPCC switches have 8 queues)", &k) ||
		    get_uint(&h, 65535, &v, "a destination port 0..65535", &k) ||
		    get_uint(&h, UINT64_MAX, &f->size, "a size in bytes", &k))
			goto out;
		if (!f->size) {
			terr(&h, &k, "expected a size of at least 1 byte");
			goto out;
		}
		if (!next_tok(&h, &k)) {
			terr(&h, NULL, "expected a start time in seconds, got the end of the file");
			goto out;
		}
		r = sim_parse_dec_scaled(k.s, k.n, 12, &v);
		if (r) {
			terr(&h, &k, r == -2 ? "start time %s is too large" :
			     "expected a start time in seconds (such as 2 or 2.000001), got %s",
			     quote(&k, q, sizeof(q)));
			goto out;
		}
		if (i && v < prev) {
			terr(&h, &k, "start time %s is earlier than the previous flow's: HPCC "
			     "reads flows in order, so expected start times that never decrease",
			     quote(&k, q, sizeof(q)));
			goto out;
		}
		if (!i)
			first = v;
		prev = v;
		f->start = v - first;
		if (f->src > maxnode)
			maxnode = f->src;
		if (f->dst > maxnode)
			maxnode = f->dst;
	}
	h.ofile = trace_add_file(t, path);
	if (!h.ofile) {
		sim_diag_set(d, path, 0, 0, "out of memory");
		goto out;
	}
	t->map = TRACE_MAP_LINEAR;
	if (trace_set_ranks(t, maxnode + 1, d) || emit(&h, fl, n))
		goto out;
	rc = 0;
out:
	free(fl);
	return rc;
}

/* ---- detection ---------------------------------------------------------- */

static bool hpcc_head(const char *text, const char *end)
{
	struct import_line l;
	const char *p = text, *q, *ws;
	size_t wn;
	int n = 0;

	if (!import_next_line(&p, end, &l))
		return false;
	q = l.s;
	if (!import_word(&q, l.e, &ws, &wn) || !import_is_uint(ws, wn) || import_word(&q, l.e, &ws, &wn))
		return false;
	if (!import_next_line(&p, end, &l))
		return false;
	/* the shape, not the values: a size of -1000 or a time of nan is the
	 * importer's to name by field (file:line:col), not a reason to call
	 * the file unknown */
	q = l.s;
	while (import_word(&q, l.e, &ws, &wn)) {
		if (n < 4 && !import_is_uint(ws, wn))
			return false;
		n++;
	}
	return n == 6;
}

/* Detection (import.c): the first line is one number (the flow count) and
 * the next has six fields, the first four integers (src dst pg dport size
 * start: the importer checks the size and the time). */
bool import_hpcc_detect(const char *path, const char *text, size_t len)
{
	(void)path;
	return hpcc_head(text, text + (len < IMPORT_SNIFF_HEAD ? len : IMPORT_SNIFF_HEAD));
}
