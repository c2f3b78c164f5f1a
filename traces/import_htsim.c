/* SPDX-License-Identifier: MIT */
/*
 * import_htsim.c - read a csg-htsim connection matrix (.cm) into a trace.
 *
 * The format is the one ConnectionMatrix::load() reads (csg-htsim,
 * sim/datacenter/connection_matrix.cpp) and its generators write
 * (sim/datacenter/connection_matrices/gen_*.py):
 *
 *   Nodes <n>                 header lines, any order, before the body
 *   Connections <m>           number of flow lines (checked, as htsim does)
 *   Triggers <k>              number of trigger lines (checked; absent = 0)
 *   Failures <f>              number of failure lines (absent = 0)
 *   <src>-><dst> [id <n>] start <ps> | trigger <tid>  size <bytes>
 *             [send_done_trigger <tid>] [recv_done_trigger <tid>] [prio <p>] [addon]
 *   trigger id <tid> oneshot|multishot|barrier [count <k>]
 *
 * `start` is in picoseconds: htsim's RoCE, NDP and EQDS drivers pass it to
 * connect() as a simtime_picosec, and gen_permutation.py writes its
 * microsecond offsets multiplied by 10^6. A flow with `trigger X` starts
 * when trigger X fires; a flow's send_done_trigger fires when its source
 * has had everything acknowledged, its recv_done_trigger when the sink has
 * received everything. A oneshot fires its targets on its (single)
 * activation, a barrier on its count-th, a multishot starts its next
 * target (in file order) on each activation (sim/trigger.cpp).
 *
 * The mapping (docs/importers.md has the reasons):
 *   - ranks = Nodes, mapped linearly (rank k on host k);
 *   - each flow is a TRACE_SEND src -> dst of `size` bytes. No TRACE_RECV:
 *     in ibfab a send is done when delivered, so whatever waits for the
 *     receiver (recv_done) waits for the send itself;
 *   - a flow with a send_done trigger (and no recv_done one) is an `acked`
 *     send: done when its source has everything acknowledged (its RC work
 *     completion), as htsim fires send_done on the last ACK; with both,
 *     the delivery (recv_done, the earlier) serves both;
 *   - a start time t > 0 is a chain of TRACE_COMPUTE ops on the source rank
 *     (one per distinct start time, each lasting the gap to the previous
 *     one, since a rank computes one thing at a time) and the flow depends
 *     on the op that ends at t. Transfers are not held up by compute;
 *   - triggers become dependencies: a oneshot's targets depend on its one
 *     activating flow, a barrier's on all `count` of them, a multishot's
 *     k-th target on its k-th activating flow in file order (exact when the
 *     activating flows finish in file order, an approximation otherwise).
 * What htsim would leave hanging or crash on is refused with a message: a
 * trigger that never fires while flows wait for it, a oneshot activated
 * twice, a barrier whose count differs from its activations, a multishot
 * with more targets than activations, trigger cycles, flows without size.
 * `prio` and `addon` are read and ignored; `failure` lines (link failures
 * in htsim's own fat tree) are refused.
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

#define CM_MAX_NODES	TRACE_MAX_RANKS
#define TOK_MAX		64		/* longest number we copy out to parse */

/* ---- lexing --------------------------------------------------------------- */

struct lex {
	const char *file;
	const char *end;
	const char *ls, *le;	/* current line [ls, le), without "\r\n" */
	const char *next;	/* start of the following line */
	const char *p;		/* cursor in the line */
	int line;
	struct sim_diag *d;
};

static void lex_init(struct lex *x, const char *file, const char *text, size_t len,
		     struct sim_diag *d)
{
	memset(x, 0, sizeof(*x));
	x->file = file;
	x->end = text + len;
	x->next = text;
	x->d = d;
}

static bool lex_line(struct lex *x)
{
	if (x->next >= x->end)
		return false;
	x->ls = x->next;
	x->le = memchr(x->ls, '\n', (size_t)(x->end - x->ls));
	if (!x->le)
		x->le = x->end;
	x->next = x->le < x->end ? x->le + 1 : x->end;
	if (x->le > x->ls && x->le[-1] == '\r')
		x->le--;
	x->p = x->ls;
	x->line++;
	return true;
}

/* Next blank-separated token of the line; false at the end or at '#'. */
static bool lex_tok(struct lex *x, const char **ts, size_t *tl)
{
	while (x->p < x->le && (*x->p == ' ' || *x->p == '\t'))
		x->p++;
	if (x->p >= x->le || *x->p == '#')
		return false;
	*ts = x->p;
	while (x->p < x->le && *x->p != ' ' && *x->p != '\t')
		x->p++;
	*tl = (size_t)(x->p - *ts);
	return true;
}

static int lex_col(const struct lex *x, const char *at)
{
	return at ? (int)(at - x->ls) + 1 : 0;
}

static int perr(struct lex *x, const char *at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int perr(struct lex *x, const char *at, const char *fmt, ...)
{
	char msg[sizeof(x->d->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return sim_diag_set(x->d, x->file, x->line, lex_col(x, at), "%s", msg);
}

/* A token quoted for a message (sim_quote), cut after 24 characters. */
static const char *quote(const char *s, size_t n, char *buf, size_t len)
{
	return sim_quote(s, n, 24, buf, len);
}

static bool tok_is(const char *s, size_t n, const char *word)
{
	return strlen(word) == n && !memcmp(s, word, n);
}

/* An unsigned integer token, at most max; on error says what was expected. */
static int tok_uint(struct lex *x, const char *s, size_t n, uint64_t max, uint64_t *v,
		    const char *what)
{
	char buf[TOK_MAX], err[128], q[64];

	if (n >= sizeof(buf) || !n)
		return perr(x, s, "expected %s, got %s", what, quote(s, n, q, sizeof(q)));
	memcpy(buf, s, n);
	buf[n] = 0;
	if (sim_parse_uint(buf, max, v, err, sizeof(err)))
		return perr(x, s, "expected %s, got %s", what, quote(s, n, q, sizeof(q)));
	return 0;
}


/* ---- the parsed file ------------------------------------------------------ */

enum trig_type { TRIG_NONE, TRIG_ONESHOT, TRIG_MULTISHOT, TRIG_BARRIER };

struct cm_flow {
	uint32_t id;			/* 0: none given */
	int32_t src, dst;
	uint64_t size;
	sim_time_t start;
	bool timed;			/* `start` given (else `trigger`) */
	uint32_t trig, sdone, rdone;	/* trigger ids, 0: none */
	uint32_t trig_ix;		/* index into cm.trigs of `trig` */
	uint32_t tgt_pos;		/* its place among the trigger's targets */
	int line, trig_col;
	/* dependencies on other flows, into cm.fdeps */
	uint32_t dep_off, ndeps;
	uint32_t pending;		/* Kahn: deps not yet emitted */
	int op;				/* trace op index once emitted, -1 before */
};

struct cm_trig {
	uint32_t id;
	enum trig_type type;
	uint32_t count;
	int line;
	uint32_t act_off, nact;		/* activating flows, into cm.acts */
	uint32_t tgt_off, ntgt;		/* flows it starts, into cm.tgts */
};

/* One distinct (rank, start time) pair: a compute op ending at `start`. */
struct cm_start {
	int32_t rank;
	sim_time_t start;
	int op;
	int line;			/* first flow starting then, for reports */
};

struct cm {
	struct lex x;
	struct trace *t;
	const char *file;		/* registered with trace_add_file */
	uint64_t nodes, conns, ntrig_hdr, nfail_hdr;
	int nodes_line, conns_line, trig_line;
	bool have_nodes, have_conns, have_trig, in_body;
	struct cm_flow *flows;
	size_t nflows, flows_cap;
	struct cm_trig *trigs;
	size_t ntrigs, trigs_cap;
	uint32_t *acts, *tgts, *fdeps;
	size_t nfdeps;
	struct cm_start *starts;
	size_t nstarts;
};


static void cm_free(struct cm *c)
{
	free(c->flows);
	free(c->trigs);
	free(c->acts);
	free(c->tgts);
	free(c->fdeps);
	free(c->starts);
}

/* ---- header and body lines ------------------------------------------------ */

static int parse_header(struct cm *c, const char *ts, size_t tl)
{
	struct lex *x = &c->x;
	const char *vs;
	size_t vl;
	uint64_t v;
	char q[64];

	if (c->in_body)
		return perr(x, ts, "%s must come before the first flow or trigger line",
			    quote(ts, tl, q, sizeof(q)));
	if (!lex_tok(x, &vs, &vl))
		return perr(x, x->p, "expected a number after %s", quote(ts, tl, q, sizeof(q)));
	if (tok_is(ts, tl, "Nodes")) {
		if (tok_uint(x, vs, vl, CM_MAX_NODES, &v, "a node count (1 to 1048576)"))
			return -1;
		if (!v)
			return perr(x, vs, "expected a node count of at least 1");
		if (c->have_nodes)
			return perr(x, ts, "'Nodes' given twice (first at line %d)", c->nodes_line);
		c->nodes = v;
		c->have_nodes = true;
		c->nodes_line = x->line;
	} else if (tok_is(ts, tl, "Connections")) {
		if (tok_uint(x, vs, vl, UINT32_MAX, &v, "a connection count"))
			return -1;
		if (c->have_conns)
			return perr(x, ts, "'Connections' given twice (first at line %d)",
				    c->conns_line);
		c->conns = v;
		c->have_conns = true;
		c->conns_line = x->line;
	} else if (tok_is(ts, tl, "Triggers")) {
		if (tok_uint(x, vs, vl, UINT32_MAX, &v, "a trigger count"))
			return -1;
		if (c->have_trig)
			return perr(x, ts, "'Triggers' given twice (first at line %d)", c->trig_line);
		c->ntrig_hdr = v;
		c->have_trig = true;
		c->trig_line = x->line;
	} else {
		if (tok_uint(x, vs, vl, UINT32_MAX, &v, "a failure count"))
			return -1;
		c->nfail_hdr = v;
	}
	if (lex_tok(x, &vs, &vl))
		return perr(x, vs, "expected the end of the line after the count, got %s",
			    quote(vs, vl, q, sizeof(q)));
	return 0;
}

/* A trigger id operand (> 0). */
static int trig_operand(struct cm *c, const char *key, size_t kl, uint32_t *out, int *col)
{
	struct lex *x = &c->x;
	const char *vs;
	size_t vl;
	uint64_t v;
	char q[64], what[96];

	snprintf(what, sizeof(what), "a trigger id (1 or more) after %s", quote(key, kl, q, sizeof(q)));
	if (!lex_tok(x, &vs, &vl))
		return perr(x, x->p, "expected %s", what);
	if (tok_uint(x, vs, vl, UINT32_MAX, &v, what))
		return -1;
	if (!v)
		return perr(x, vs, "trigger id 0 is not allowed (htsim reserves it for 'none')");
	*out = (uint32_t)v;
	if (col)
		*col = lex_col(x, vs);
	return 0;
}

static int parse_flow(struct cm *c, const char *ts, size_t tl)
{
	struct lex *x = &c->x;
	struct cm_flow f = { .op = -1, .line = x->line };
	const char *arrow = NULL, *ks, *vs;
	size_t kl, vl;
	uint64_t v;
	bool have_size = false, have_id = false, have_prio = false, have_addon = false;
	char q[64], what[64];

	for (size_t i = 0; i + 1 < tl; i++)
		if (ts[i] == '-' && ts[i + 1] == '>') {
			arrow = ts + i;
			break;
		}
	if (!c->have_nodes)
		return perr(x, ts, "expected 'Nodes <n>' before the first flow");
	snprintf(what, sizeof(what), "a node number below %" PRIu64 " (Nodes)", c->nodes);
	if (tok_uint(x, ts, (size_t)(arrow - ts), c->nodes - 1, &v, what))
		return -1;
	f.src = (int32_t)v;
	if (tok_uint(x, arrow + 2, tl - (size_t)(arrow + 2 - ts), c->nodes - 1, &v, what))
		return -1;
	f.dst = (int32_t)v;
	if (f.src == f.dst)
		return perr(x, ts, "a flow from node %d to itself: expected two different nodes",
			    f.src);

	while (lex_tok(x, &ks, &kl)) {
		if (tok_is(ks, kl, "addon")) {
			if (have_addon)
				return perr(x, ks, "'addon' given twice");
			have_addon = true;	/* UEC-specific, no meaning here */
			continue;
		}
		if (tok_is(ks, kl, "trigger")) {
			if (f.trig)
				return perr(x, ks, "'trigger' given twice");
			if (trig_operand(c, ks, kl, &f.trig, &f.trig_col))
				return -1;
			continue;
		}
		if (tok_is(ks, kl, "send_done_trigger")) {
			if (f.sdone)
				return perr(x, ks, "'send_done_trigger' given twice");
			if (trig_operand(c, ks, kl, &f.sdone, NULL))
				return -1;
			continue;
		}
		if (tok_is(ks, kl, "recv_done_trigger")) {
			if (f.rdone)
				return perr(x, ks, "'recv_done_trigger' given twice");
			if (trig_operand(c, ks, kl, &f.rdone, NULL))
				return -1;
			continue;
		}
		if (!tok_is(ks, kl, "start") && !tok_is(ks, kl, "size") && !tok_is(ks, kl, "id") &&
		    !tok_is(ks, kl, "prio"))
			return perr(x, ks, "expected start, size, id, trigger, send_done_trigger, "
				    "recv_done_trigger, prio or addon, got %s",
				    quote(ks, kl, q, sizeof(q)));
		if (!lex_tok(x, &vs, &vl))
			return perr(x, x->p, "expected a value after %s", quote(ks, kl, q, sizeof(q)));
		if (tok_is(ks, kl, "start")) {
			int rc;

			if (f.timed)
				return perr(x, ks, "'start' given twice");
			rc = sim_parse_dec_scaled(vs, vl, 0, &v);
			if (rc == -1)
				return perr(x, vs, "expected a start time in picoseconds (such as 0 "
					    "or 2000000), got %s", quote(vs, vl, q, sizeof(q)));
			if (rc == -2)
				return perr(x, vs, "start time %s is too large (more than 2^64 ps)",
					    quote(vs, vl, q, sizeof(q)));
			f.start = v;
			f.timed = true;
		} else if (tok_is(ks, kl, "size")) {
			if (have_size)
				return perr(x, ks, "'size' given twice");
			if (tok_uint(x, vs, vl, UINT64_MAX, &v, "a flow size in bytes"))
				return -1;
			if (!v)
				return perr(x, vs, "expected a flow size of at least 1 byte");
			f.size = v;
			have_size = true;
		} else if (tok_is(ks, kl, "id")) {
			if (have_id)
				return perr(x, ks, "'id' given twice");
			if (tok_uint(x, vs, vl, UINT32_MAX, &v, "a flow id"))
				return -1;
			if (!v)
				return perr(x, vs, "flow id 0 is not allowed (htsim refuses it)");
			f.id = (uint32_t)v;
			have_id = true;
		} else {
			if (have_prio)
				return perr(x, ks, "'prio' given twice");
			if (tok_uint(x, vs, vl, UINT64_MAX, &v, "a priority"))
				return -1;
			have_prio = true;	/* no per-op priority in a trace */
		}
	}
	if (!have_size)
		return perr(x, x->p, "expected 'size <bytes>': without a size htsim runs the flow "
			    "forever, which a replay cannot finish");
	if (f.timed && f.trig)
		return perr(x, ts, "both a start time and a trigger: expected one of them");
	if (!f.timed && !f.trig)
		return perr(x, x->p, "expected 'start <ps>' or 'trigger <id>' (how the flow starts)");
	if (f.trig && !f.id)
		return perr(x, ts, "a flow started by a trigger needs an 'id' (htsim requires it)");
	if (sim_grow((void **)&c->flows, &c->flows_cap, c->nflows + 1, sizeof(f)))
		return perr(x, NULL, "out of memory");
	c->flows[c->nflows++] = f;
	return 0;
}

static int parse_trigger(struct cm *c, const char *ts)
{
	struct lex *x = &c->x;
	struct cm_trig tr = { .line = x->line };
	const char *ks;
	size_t kl;
	bool have_count = false;
	char q[64];

	while (lex_tok(x, &ks, &kl)) {
		enum trig_type ty = TRIG_NONE;

		if (tok_is(ks, kl, "id")) {
			if (tr.id)
				return perr(x, ks, "'id' given twice");
			if (trig_operand(c, ks, kl, &tr.id, NULL))
				return -1;
			continue;
		}
		if (tok_is(ks, kl, "count")) {
			const char *vs;
			size_t vl;
			uint64_t v;

			if (have_count)
				return perr(x, ks, "'count' given twice");
			if (!lex_tok(x, &vs, &vl))
				return perr(x, x->p, "expected a number after 'count'");
			if (tok_uint(x, vs, vl, UINT32_MAX, &v, "a count"))
				return -1;
			tr.count = (uint32_t)v;
			have_count = true;
			continue;
		}
		if (tok_is(ks, kl, "oneshot"))
			ty = TRIG_ONESHOT;
		else if (tok_is(ks, kl, "multishot"))
			ty = TRIG_MULTISHOT;
		else if (tok_is(ks, kl, "barrier"))
			ty = TRIG_BARRIER;
		else
			return perr(x, ks, "expected id, count, oneshot, multishot or barrier, got %s",
				    quote(ks, kl, q, sizeof(q)));
		if (tr.type)
			return perr(x, ks, "a trigger has one type: expected one of oneshot, "
				    "multishot, barrier");
		tr.type = ty;
	}
	if (!tr.id)
		return perr(x, ts, "expected 'id <n>' in the trigger line");
	if (!tr.type)
		return perr(x, x->p, "expected the trigger's type: oneshot, multishot or barrier");
	if (tr.type == TRIG_BARRIER && !tr.count)
		return perr(x, x->p, "a barrier needs 'count <k>' (how many completions it waits for)");
	if (sim_grow((void **)&c->trigs, &c->trigs_cap, c->ntrigs + 1, sizeof(tr)))
		return perr(x, NULL, "out of memory");
	c->trigs[c->ntrigs++] = tr;
	return 0;
}

static int parse(struct cm *c)
{
	struct lex *x = &c->x;
	const char *ts;
	size_t tl;
	char q[64];

	while (lex_line(x)) {
		if (!lex_tok(x, &ts, &tl))
			continue;
		if (tok_is(ts, tl, "Nodes") || tok_is(ts, tl, "Connections") ||
		    tok_is(ts, tl, "Triggers") || tok_is(ts, tl, "Failures")) {
			if (parse_header(c, ts, tl))
				return -1;
			continue;
		}
		c->in_body = true;
		if (tok_is(ts, tl, "trigger")) {
			if (parse_trigger(c, ts))
				return -1;
		} else if (tok_is(ts, tl, "failure")) {
			return perr(x, ts, "link failures ('failure' lines) are not supported: they "
				    "name switches of htsim's own fat tree; fail links in the "
				    "ibfab topology instead");
		} else if (memchr(ts, '>', tl) && tl > 2) {
			bool arrow = false;

			for (size_t i = 0; i + 1 < tl; i++)
				arrow |= ts[i] == '-' && ts[i + 1] == '>';
			if (!arrow)
				return perr(x, ts, "expected a flow '<src>-><dst>', got %s",
					    quote(ts, tl, q, sizeof(q)));
			if (parse_flow(c, ts, tl))
				return -1;
		} else {
			return perr(x, ts, "expected a flow '<src>-><dst> ...' (no blanks around "
				    "'->'), a 'trigger id ...' line or a header (Nodes, "
				    "Connections, Triggers, Failures), got %s",
				    quote(ts, tl, q, sizeof(q)));
		}
	}
	return 0;
}

/* ---- checks and dependencies ---------------------------------------------- */

static int cmp_trig(const void *a, const void *b)
{
	const struct cm_trig *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id ? 1 : x->line - y->line;
}

static struct cm_trig *find_trig(struct cm *c, uint32_t id)
{
	size_t lo = 0, hi = c->ntrigs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->trigs[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->ntrigs && c->trigs[lo].id == id ? &c->trigs[lo] : NULL;
}

static int ferr(struct cm *c, const struct cm_flow *f, int col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int ferr(struct cm *c, const struct cm_flow *f, int col, const char *fmt, ...)
{
	char msg[sizeof(c->x.d->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return sim_diag_set(c->x.d, c->x.file, f->line, col, "%s", msg);
}

static int check_counts(struct cm *c)
{
	struct sim_diag *d = c->x.d;

	if (!c->have_nodes)
		return sim_diag_set(d, c->x.file, 1, 1, "expected a 'Nodes <n>' header line");
	if (!c->nflows)
		return sim_diag_set(d, c->x.file, c->nodes_line, 0,
				    "the file has no flows: nothing to replay");
	/* htsim compares both counts and stops on a mismatch; so do we. */
	if (c->conns != c->nflows)
		return sim_diag_set(d, c->x.file, c->have_conns ? c->conns_line : 1, 0,
				    "%s %" PRIu64 " but the file has %zu flow lines",
				    c->have_conns ? "the header says Connections" :
				    "no 'Connections' header, which htsim reads as", c->conns,
				    c->nflows);
	if (c->ntrig_hdr != c->ntrigs)
		return sim_diag_set(d, c->x.file, c->have_trig ? c->trig_line : 1, 0,
				    "%s %" PRIu64 " but the file has %zu trigger lines",
				    c->have_trig ? "the header says Triggers" :
				    "no 'Triggers' header, which htsim reads as", c->ntrig_hdr,
				    c->ntrigs);
	return 0;
}

struct id_line {
	uint32_t id;
	int line;
};

static int cmp_id_line(const void *a, const void *b)
{
	const struct id_line *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->line - y->line;
}

/* Flow ids must be unique (htsim asserts so when it builds its flow map). */
static int check_flow_ids(struct cm *c)
{
	struct id_line *ix = malloc((c->nflows + 1) * sizeof(*ix));
	size_t n = 0;
	int rc = 0;

	if (!ix)
		return sim_diag_set(c->x.d, c->x.file, 0, 0, "out of memory");
	for (size_t i = 0; i < c->nflows; i++)
		if (c->flows[i].id)
			ix[n++] = (struct id_line){ c->flows[i].id, c->flows[i].line };
	qsort(ix, n, sizeof(*ix), cmp_id_line);
	for (size_t i = 1; i < n; i++)
		if (ix[i - 1].id == ix[i].id) {
			rc = sim_diag_set(c->x.d, c->x.file, ix[i].line, 0,
					  "flow id %" PRIu32 " is used twice (first at line %d)",
					  ix[i].id, ix[i - 1].line);
			break;
		}
	free(ix);
	return rc;
}

/*
 * Triggers, in four phases (link_triggers): resolve the flows' trigger
 * references and count, per trigger, the flows that activate it and the
 * flows it starts; list both (in file order); refuse what would leave a
 * flow waiting for ever or crash htsim; then each flow's dependencies on
 * other flows.
 */
static int resolve_triggers(struct cm *c, size_t *nact, size_t *ntgt)
{
	if (c->ntrigs)
		qsort(c->trigs, c->ntrigs, sizeof(*c->trigs), cmp_trig);
	for (size_t i = 1; i < c->ntrigs; i++)
		if (c->trigs[i].id == c->trigs[i - 1].id)
			return sim_diag_set(c->x.d, c->x.file, c->trigs[i].line, 0,
					    "trigger %" PRIu32 " is declared twice (first at line %d)",
					    c->trigs[i].id, c->trigs[i - 1].line);
	*nact = *ntgt = 0;
	for (size_t i = 0; i < c->nflows; i++) {
		struct cm_flow *f = &c->flows[i];
		uint32_t ids[3] = { f->trig, f->sdone, f->rdone };
		const char *keys[3] = { "trigger", "send_done_trigger", "recv_done_trigger" };

		for (int j = 0; j < 3; j++) {
			struct cm_trig *tr;

			if (!ids[j])
				continue;
			tr = find_trig(c, ids[j]);
			if (!tr)
				return ferr(c, f, j ? 0 : f->trig_col,
					    "%s %" PRIu32 " is never declared: expected a line "
					    "'trigger id %" PRIu32 " oneshot|multishot|barrier'",
					    keys[j], ids[j], ids[j]);
			if (j) {
				tr->nact++;
				(*nact)++;
			} else {
				f->trig_ix = (uint32_t)(tr - c->trigs);
				tr->ntgt++;
				(*ntgt)++;
			}
		}
	}
	return 0;
}

/* Per trigger, its activating flows (acts) and the flows it starts (tgts). */
static int list_triggers(struct cm *c, size_t nact, size_t ntgt)
{
	c->acts = malloc((nact + 1) * sizeof(*c->acts));
	c->tgts = malloc((ntgt + 1) * sizeof(*c->tgts));
	if (!c->acts || !c->tgts)
		return sim_diag_set(c->x.d, c->x.file, 0, 0, "out of memory");
	nact = ntgt = 0;
	for (size_t i = 0; i < c->ntrigs; i++) {
		c->trigs[i].act_off = (uint32_t)nact;
		c->trigs[i].tgt_off = (uint32_t)ntgt;
		nact += c->trigs[i].nact;
		ntgt += c->trigs[i].ntgt;
		c->trigs[i].nact = c->trigs[i].ntgt = 0;
	}
	for (size_t i = 0; i < c->nflows; i++) {
		struct cm_flow *f = &c->flows[i];
		struct cm_trig *tr;

		if (f->trig) {
			tr = &c->trigs[f->trig_ix];
			f->tgt_pos = tr->ntgt;
			c->tgts[tr->tgt_off + tr->ntgt++] = (uint32_t)i;
		}
		if (f->sdone) {
			tr = find_trig(c, f->sdone);
			c->acts[tr->act_off + tr->nact++] = (uint32_t)i;
		}
		if (f->rdone) {
			tr = find_trig(c, f->rdone);
			c->acts[tr->act_off + tr->nact++] = (uint32_t)i;
		}
	}
	return 0;
}

/* Refuse what would leave flows waiting forever or crash htsim. */
static int check_triggers(struct cm *c)
{
	for (size_t i = 0; i < c->ntrigs; i++) {
		const struct cm_trig *tr = &c->trigs[i];
		const struct cm_flow *first;

		if (!tr->ntgt)
			continue;	/* fires nobody: harmless */
		first = &c->flows[c->tgts[tr->tgt_off]];
		if (!tr->nact)
			return sim_diag_set(c->x.d, c->x.file, tr->line, 0,
					    "trigger %" PRIu32 " never fires: no flow names it in "
					    "send_done_trigger or recv_done_trigger, so the flow at "
					    "line %d would never start", tr->id, first->line);
		if (tr->type == TRIG_ONESHOT && tr->nact > 1)
			return sim_diag_set(c->x.d, c->x.file, tr->line, 0,
					    "oneshot trigger %" PRIu32 " is activated by %" PRIu32
					    " completions (lines %d and %d, ...); a oneshot fires "
					    "once (htsim asserts on the second): use 'barrier count "
					    "%" PRIu32 "' to wait for all of them", tr->id, tr->nact,
					    c->flows[c->acts[tr->act_off]].line,
					    c->flows[c->acts[tr->act_off + 1]].line, tr->nact);
		if (tr->type == TRIG_BARRIER && tr->nact != tr->count)
			return sim_diag_set(c->x.d, c->x.file, tr->line, 0,
					    "barrier trigger %" PRIu32 " has count %" PRIu32 " but %"
					    PRIu32 " flow completions name it: %s", tr->id, tr->count,
					    tr->nact, tr->nact < tr->count ?
					    "it would never fire" :
					    "it would fire on whichever completes first, which ibfab "
					    "cannot know before the run");
		if (tr->type == TRIG_MULTISHOT && tr->ntgt > tr->nact)
			return sim_diag_set(c->x.d, c->x.file, tr->line, 0,
					    "multishot trigger %" PRIu32 " starts one flow per firing "
					    "but has %" PRIu32 " flows to start and fires only %" PRIu32
					    " times: the flow at line %d would never start", tr->id,
					    tr->ntgt, tr->nact,
					    c->flows[c->tgts[tr->tgt_off + tr->nact]].line);
	}
	return 0;
}

/* Each triggered flow's dependencies on the flows that fire it: counted,
 * then filled. */
static int flow_deps(struct cm *c)
{
	size_t k;

	for (int pass = 0; pass < 2; pass++) {
		k = 0;
		for (size_t i = 0; i < c->nflows; i++) {
			struct cm_flow *f = &c->flows[i];
			const struct cm_trig *tr;
			uint32_t lo = 0, hi = 0;

			f->dep_off = (uint32_t)k;
			f->ndeps = 0;
			if (!f->trig)
				continue;
			tr = &c->trigs[f->trig_ix];
			if (tr->type == TRIG_MULTISHOT) {
				/* the k-th target waits for the k-th activation */
				lo = f->tgt_pos;
				hi = lo + 1;
			} else {
				lo = 0;
				hi = tr->type == TRIG_ONESHOT ? 1 : tr->nact;
			}
			for (uint32_t j = lo; j < hi; j++, k++) {
				uint32_t a = c->acts[tr->act_off + j];

				/*
				 * A flow naming the barrier as both send_done and
				 * recv_done activates it twice, next to each other
				 * in acts[]: one dependency.
				 */
				if (pass && !(f->ndeps && c->fdeps[f->dep_off + f->ndeps - 1] == a))
					c->fdeps[f->dep_off + f->ndeps++] = a;
			}
		}
		if (!pass) {
			c->fdeps = malloc((k + 1) * sizeof(*c->fdeps));
			if (!c->fdeps)
				return sim_diag_set(c->x.d, c->x.file, 0, 0, "out of memory");
		}
	}
	return 0;
}

static int link_triggers(struct cm *c)
{
	size_t nact = 0, ntgt = 0;

	if (resolve_triggers(c, &nact, &ntgt) || list_triggers(c, nact, ntgt) ||
	    check_triggers(c) || flow_deps(c))
		return -1;
	return 0;
}

/* ---- emitting the trace ---------------------------------------------------- */

static int cmp_start(const void *a, const void *b)
{
	const struct cm_start *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->line - y->line;	/* the earliest line names the op */
}

static int add_op(struct cm *c, struct trace_op *op, const uint32_t *deps, uint32_t ndeps,
		  int line)
{
	int ix;

	op->id = (uint32_t)c->t->nops;
	op->file = c->file;
	op->line = line;
	ix = trace_add_op(c->t, op, deps, ndeps, c->x.d);
	return ix;
}

/* One compute op per distinct (rank, start > 0), chained per rank. */
static int emit_starts(struct cm *c)
{
	size_t n = 0;

	for (size_t i = 0; i < c->nflows; i++)
		n += c->flows[i].timed && c->flows[i].start;
	if (!n)
		return 0;
	c->starts = malloc(n * sizeof(*c->starts));
	if (!c->starts)
		return sim_diag_set(c->x.d, c->x.file, 0, 0, "out of memory");
	n = 0;
	for (size_t i = 0; i < c->nflows; i++)
		if (c->flows[i].timed && c->flows[i].start)
			c->starts[n++] = (struct cm_start){ c->flows[i].src, c->flows[i].start, -1,
							    c->flows[i].line };
	qsort(c->starts, n, sizeof(*c->starts), cmp_start);
	c->nstarts = 0;
	for (size_t i = 0; i < n; i++) {
		struct cm_start *prev = c->nstarts ? &c->starts[c->nstarts - 1] : NULL;
		struct trace_op op;
		uint32_t dep;
		bool chain;

		if (prev && prev->rank == c->starts[i].rank && prev->start == c->starts[i].start)
			continue;
		chain = prev && prev->rank == c->starts[i].rank;
		memset(&op, 0, sizeof(op));
		op.kind = TRACE_COMPUTE;
		op.rank = c->starts[i].rank;
		op.peer = -1;
		op.duration = c->starts[i].start - (chain ? prev->start : 0);
		op.chunks = op.channels = 0;	/* the lowering chooses */
		snprintf(op.name, sizeof(op.name), "start %" PRIu64 "ps", c->starts[i].start);
		dep = chain ? (uint32_t)prev->op : 0;
		c->starts[c->nstarts] = c->starts[i];
		c->starts[c->nstarts].op = add_op(c, &op, &dep, chain, c->starts[i].line);
		if (c->starts[c->nstarts].op < 0)
			return -1;
		c->nstarts++;
	}
	return 0;
}

static int start_op(const struct cm *c, int32_t rank, sim_time_t start)
{
	size_t lo = 0, hi = c->nstarts;
	struct cm_start key = { rank, start, -1, 0 };

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cmp_start(&c->starts[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return c->starts[lo].op;
}

static int emit_flow(struct cm *c, struct cm_flow *f)
{
	struct trace_op op;
	uint32_t *deps, nd = 0;
	int ix;

	deps = malloc((f->ndeps + 1) * sizeof(*deps));
	if (!deps)
		return sim_diag_set(c->x.d, c->x.file, 0, 0, "out of memory");
	if (f->timed && f->start)
		deps[nd++] = (uint32_t)start_op(c, f->src, f->start);
	for (uint32_t j = 0; j < f->ndeps; j++)
		deps[nd++] = (uint32_t)c->flows[c->fdeps[f->dep_off + j]].op;
	memset(&op, 0, sizeof(op));
	op.kind = TRACE_SEND;
	op.rank = f->src;
	op.peer = f->dst;
	op.bytes = f->size;
	op.chunks = op.channels = 0;	/* the lowering chooses */
	/* what waits for it waits for its send_done: everything acknowledged
	 * at the source (with a recv_done too, the earlier, delivery) */
	op.acked = f->sdone && !f->rdone;
	if (f->id)
		snprintf(op.name, sizeof(op.name), "flow %" PRIu32, f->id);
	else
		snprintf(op.name, sizeof(op.name), "flow@%d", f->line);
	ix = add_op(c, &op, deps, nd, f->line);
	free(deps);
	if (ix < 0)
		return -1;
	f->op = ix;
	return 0;
}

/* A cycle among the unemitted flows, as "line a -> line b -> ...". */
static int report_cycle(struct cm *c)
{
	size_t start = 0, cur;
	char path[384];
	size_t off = 0;
	int steps = 0;

	while (c->flows[start].op >= 0)
		start++;
	/* walk deps among unemitted flows long enough to land inside the cycle */
	cur = start;
	for (size_t i = 0; i < c->nflows; i++) {
		const struct cm_flow *f = &c->flows[cur];

		for (uint32_t j = 0; j < f->ndeps; j++)
			if (c->flows[c->fdeps[f->dep_off + j]].op < 0) {
				cur = c->fdeps[f->dep_off + j];
				break;
			}
	}
	start = cur;
	do {
		const struct cm_flow *f = &c->flows[cur];

		sim_append(path, sizeof(path), &off, "%s%d", steps ? " <- " : "", f->line);
		for (uint32_t j = 0; j < f->ndeps; j++)
			if (c->flows[c->fdeps[f->dep_off + j]].op < 0) {
				cur = c->fdeps[f->dep_off + j];
				break;
			}
	} while (cur != start && ++steps < 12);
	if (cur != start)
		sim_append(path, sizeof(path), &off, " <- ...");
	return ferr(c, &c->flows[start], 0,
		    "the flows wait for each other through triggers, so none of them can start: "
		    "line %s <- %d", path, c->flows[start].line);
}

/* Emit flows in dependency order (Kahn, ties in file order). */
static int emit_flows(struct cm *c)
{
	uint32_t *queue, *uoff, *users, head = 0, tail = 0;
	int rc = 0;

	queue = malloc((c->nflows + 1) * sizeof(*queue));
	uoff = calloc(c->nflows + 1, sizeof(*uoff));
	users = malloc((c->nfdeps + c->nflows + 1) * sizeof(*users));
	if (!queue || !uoff || !users) {
		rc = sim_diag_set(c->x.d, c->x.file, 0, 0, "out of memory");
		goto out;
	}
	/* reverse edges: who waits for flow i */
	for (size_t i = 0; i < c->nflows; i++)
		for (uint32_t j = 0; j < c->flows[i].ndeps; j++)
			uoff[c->fdeps[c->flows[i].dep_off + j] + 1]++;
	for (size_t i = 0; i < c->nflows; i++)
		uoff[i + 1] += uoff[i];
	{
		uint32_t *fill = calloc(c->nflows + 1, sizeof(*fill));

		if (!fill) {
			rc = sim_diag_set(c->x.d, c->x.file, 0, 0, "out of memory");
			goto out;
		}
		for (size_t i = 0; i < c->nflows; i++)
			for (uint32_t j = 0; j < c->flows[i].ndeps; j++) {
				uint32_t dflow = c->fdeps[c->flows[i].dep_off + j];

				users[uoff[dflow] + fill[dflow]++] = (uint32_t)i;
			}
		free(fill);
	}
	for (size_t i = 0; i < c->nflows; i++) {
		c->flows[i].pending = c->flows[i].ndeps;
		if (!c->flows[i].pending)
			queue[tail++] = (uint32_t)i;
	}
	while (head < tail) {
		uint32_t i = queue[head++];

		if (emit_flow(c, &c->flows[i])) {
			rc = -1;
			goto out;
		}
		for (uint32_t u = uoff[i]; u < uoff[i + 1]; u++)
			if (!--c->flows[users[u]].pending)
				queue[tail++] = users[u];
	}
	if (tail < c->nflows)
		rc = report_cycle(c);
out:
	free(queue);
	free(uoff);
	free(users);
	return rc;
}

int import_htsim(const char *path, const char *text, size_t len, struct trace *t,
		 struct sim_diag *d)
{
	struct cm c;
	int rc = -1;

	memset(&c, 0, sizeof(c));
	lex_init(&c.x, path, text, len, d);
	c.t = t;
	if (parse(&c) || check_counts(&c) || check_flow_ids(&c) || link_triggers(&c))
		goto out;
	for (size_t i = 0; i < c.nflows; i++)
		c.nfdeps += c.flows[i].ndeps;
	c.file = trace_add_file(t, path);
	if (!c.file) {
		sim_diag_set(d, path, 0, 0, "out of memory");
		goto out;
	}
	t->map = TRACE_MAP_LINEAR;
	if (trace_set_ranks(t, (int32_t)c.nodes, d) || emit_starts(&c) || emit_flows(&c))
		goto out;
	rc = 0;
out:
	cm_free(&c);
	return rc;
}

/* ---- detection ---------------------------------------------------------- */

static bool htsim_head(const char *text, const char *end)
{
	struct import_line l;
	const char *p = text, *ws;
	size_t wn;

	if (!import_next_line(&p, end, &l))
		return false;
	p = l.s;
	if (!import_word(&p, l.e, &ws, &wn))
		return false;
	/* htsim reads its header lines in any order */
	if (!(wn == 5 && !memcmp(ws, "Nodes", 5)) && !(wn == 11 && !memcmp(ws, "Connections", 11)) &&
	    !(wn == 8 && !memcmp(ws, "Triggers", 8)) && !(wn == 8 && !memcmp(ws, "Failures", 8)))
		return false;
	return import_word(&p, l.e, &ws, &wn) && import_is_uint(ws, wn);
}

/* Detection (import.c): the first line is a .cm header line ("Nodes 16",
 * or Connections, Triggers, Failures and a number), or the name ends in
 * ".cm". */
bool import_htsim_detect(const char *path, const char *text, size_t len)
{
	size_t pl = path ? strlen(path) : 0;

	return htsim_head(text, text + (len < IMPORT_SNIFF_HEAD ? len : IMPORT_SNIFF_HEAD)) ||
	       (pl > 3 && !strcmp(path + pl - 3, ".cm"));
}
