/* SPDX-License-Identifier: MIT */
/*
 * trace_fmt.c - the native trace format: ranks, their placement, and per-rank
 * or all-rank ops with ids and dependencies. docs/trace-format.md is the
 * user's page (grammar, the ordering rule, examples); this is the parser.
 *
 * Two passes. The first reads the lines (following includes, expanding
 * `repeat` blocks and `compute all`) into pending ops that keep their
 * `after=` references as text, because a reference may name an op listed
 * further down. The second walks the ops in order and turns each into a
 * trace op with its full dependency list: the previous non-async op of
 * each of its ranks (the ordering rule) plus its resolved references.
 * Doing the ordering here, once, means lowering and replay see plain
 * dependencies and every importer states its own.
 *
 * Errors are "file:line:col: what was expected". Input is untrusted: any
 * bytes either load or give a diagnostic, and every expansion is bounded
 * (TRACE_MAX_OPS ops, MAX_VISITS line visits) so no input makes the parser
 * run away. Checks that need the whole trace (recv matching, cycles) are
 * trace_validate()'s, in trace.c.
 */
#include "traces/trace_fmt.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_parse.h"
#include "sim/sim_rng.h"
#include "traces/coll.h"

#define NONE UINT32_MAX
#define ID_MAX 32		/* sizeof(trace_op.name): an id with its suffixes, + NUL */
#define REF_MAX 64		/* one after= reference, + NUL */
#define SUFFIX_MAX 48		/* ".3.1" of nested repeats, + NUL */
#define VALUE_MAX 128		/* a number, size or duration, + NUL */
#define HOST_MAX 1024		/* a host name (node descriptions are at most 64 in IB) */
#define MAX_TOKS 64		/* words on one line */
#define MAX_REPEAT (1 << 20)
#define MAX_REPEAT_DEPTH 8
/*
 * Lines read, counting each repeat iteration again. 32M visits is about a
 * second of parsing; a trace whose repeats expand further is a mistake
 * (nested repeats of empty bodies would otherwise spin without making an op).
 */
#define MAX_VISITS (1ul << 25)

struct tok {
	const char *s;		/* the text (without the quotes of a quoted word) */
	int len;
	int col;		/* 1-based column where the word starts */
	bool quoted;
};

struct line {
	const char *file;
	int no;
	const char *ls, *le;	/* the line, without its newline */
	struct tok tok[MAX_TOKS];
	int ntok;
};

/* An op read but not yet resolved. */
struct pop {
	struct trace_op op;
	uint32_t key;		/* arena offset of the id it answers to, or NONE; a
				 * `compute all` group keeps it on its first op */
	uint32_t group;		/* index of the first op of its group (`compute all`, or a
				 * line over a rank list), or NONE */
	uint32_t gn;		/* on a group's first op: its ops, sorted by rank */
	uint32_t ref_off, nref;	/* its after= references */
	bool async;
};

/* One name in after=, resolved once every op is read. */
struct ref {
	uint32_t name, ctx;	/* arena offsets: the text, the repeat suffix in force */
	const char *file;
	int line, col;
};

struct cname {
	uint32_t name;		/* arena offset */
	uint32_t comm;		/* index in trace.comms */
	const char *file;
	int line;
};

/* Open addressing on indexes; the key of an index comes from a callback. */
struct strmap {
	uint32_t *slot;		/* index + 1, 0 = empty */
	uint32_t cap, n;
};

struct fmt {
	struct trace *t;
	struct sim_diag *d;
	struct pop *pops;
	size_t npops, pops_cap;
	struct ref *refs;
	size_t nrefs, refs_cap;
	struct cname *cnames;
	size_t ncnames, cnames_cap;
	char *arena;		/* NUL-terminated strings, addressed by offset */
	size_t narena, arena_cap;
	struct strmap ids, comms;
	char *stack[TRACE_MAX_INCLUDE_DEPTH + 1];	/* realpaths being read */
	int depth;
	char suffix[SUFFIX_MAX];	/* ".k" per enclosing repeat, outermost first */
	uint32_t suffix_off;	/* the suffix in the arena, NONE until a ref needs it */
	int rdepth;
	unsigned long visits;
	const char *ranks_file, *map_file, *host_file;
	int ranks_line, map_line, host_line;
};

static const char *const op_words[] = {
	"send", "recv", "compute", "allreduce", "allgather", "reducescatter",
	"alltoall", "broadcast", "reduce", "barrier",
};
static const char *const header_words[] = {
	"ranks", "map", "host", "comm", "include", "repeat",
};

/* ---- small helpers -------------------------------------------------------- */

static int perr(struct fmt *c, const struct line *L, int col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int perr(struct fmt *c, const struct line *L, int col, const char *fmt, ...)
{
	char msg[sizeof(c->d->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return sim_diag_set(c->d, L->file, L->no, col, "%s", msg);
}

/* Column just past the end of the line: where a missing word was expected. */
static int eol_col(const struct line *L)
{
	return (int)(L->le - L->ls) + 1;
}

/* A word, quoted for a message, cut and with control bytes masked
 * (len >= 8: two quotes, "..." and the NUL always fit). */
static const char *got(const struct tok *k, char *buf, size_t len)
{
	size_t o = 0;

	buf[o++] = '\'';
	for (int i = 0; i < k->len; i++) {
		unsigned char ch = (unsigned char)k->s[i];

		if (o + 5 >= len) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		buf[o++] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
	}
	buf[o++] = '\'';
	buf[o] = 0;
	return buf;
}

static bool tok_is(const struct tok *k, const char *w)
{
	size_t n = strlen(w);

	return !k->quoted && (size_t)k->len == n && !memcmp(k->s, w, n);
}

/* Copy a word into a NUL-terminated buffer; -1 if it does not fit. */
static int tok_copy(const struct tok *k, char *buf, size_t len)
{
	if ((size_t)k->len >= len)
		return -1;
	memcpy(buf, k->s, (size_t)k->len);
	buf[k->len] = 0;
	return 0;
}

static bool id_char(char ch, bool first)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' ||
	       (!first && ((ch >= '0' && ch <= '9') || ch == '-'));
}

static bool is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

/* Decimal digits from s[*i], saturating past any rank (the caller refuses
 * it as out of range rather than wrapping). */
static uint64_t read_num(const char *s, int n, int *i)
{
	uint64_t v = 0;

	for (; *i < n && is_digit(s[*i]); (*i)++)
		if (v <= (uint64_t)TRACE_MAX_RANKS)
			v = v * 10 + (uint64_t)(s[*i] - '0');
	return v;
}

/* Length of the id at s[0..n) (0: not an id start). */
static int id_len(const char *s, int n)
{
	int i = 0;

	while (i < n && id_char(s[i], i == 0))
		i++;
	return i;
}

static bool reserved(const char *s, int n)
{
	static const char *const more[] = { "all", "world", "none" };

	for (size_t i = 0; i < sizeof(op_words) / sizeof(op_words[0]); i++)
		if ((size_t)n == strlen(op_words[i]) && !memcmp(s, op_words[i], (size_t)n))
			return true;
	for (size_t i = 0; i < sizeof(header_words) / sizeof(header_words[0]); i++)
		if ((size_t)n == strlen(header_words[i]) && !memcmp(s, header_words[i], (size_t)n))
			return true;
	for (size_t i = 0; i < sizeof(more) / sizeof(more[0]); i++)
		if ((size_t)n == strlen(more[i]) && !memcmp(s, more[i], (size_t)n))
			return true;
	return false;
}


/* Store s[0..n) in the arena; its offset, or NONE (out of memory). */
static uint32_t intern(struct fmt *c, const char *s, size_t n)
{
	uint32_t off = (uint32_t)c->narena;

	if (c->narena + n + 1 > UINT32_MAX - 1 ||
	    sim_grow((void **)&c->arena, &c->arena_cap, c->narena + n + 1, 1))
		return NONE;
	memcpy(c->arena + c->narena, s, n);
	c->arena[c->narena + n] = 0;
	c->narena += n + 1;
	return off;
}

static const char *str(const struct fmt *c, uint32_t off)
{
	return c->arena + off;
}

/* ---- the two name tables --------------------------------------------------- */

typedef const char *(*key_fn)(const struct fmt *c, uint32_t idx);

static const char *id_key(const struct fmt *c, uint32_t idx)
{
	return str(c, c->pops[idx].key);
}

static const char *comm_key(const struct fmt *c, uint32_t idx)
{
	return str(c, c->cnames[idx].name);
}

static int map_find(const struct fmt *c, const struct strmap *m, key_fn key, const char *k)
{
	uint32_t i;

	if (!m->cap)
		return -1;
	for (i = (uint32_t)sim_hash_str(k) & (m->cap - 1); m->slot[i];
	     i = (i + 1) & (m->cap - 1))
		if (!strcmp(key(c, m->slot[i] - 1), k))
			return (int)(m->slot[i] - 1);
	return -1;
}

static int map_put(struct fmt *c, struct strmap *m, key_fn key, uint32_t idx)
{
	uint32_t i;

	/* Keep the load under a half so probes stay short. */
	if ((m->n + 1) * 2 > m->cap) {
		uint32_t ncap = m->cap ? m->cap * 2 : 256;
		uint32_t *ns = calloc(ncap, sizeof(*ns)), *old = m->slot, ocap = m->cap;

		if (!ns)
			return -1;
		m->slot = ns;
		m->cap = ncap;
		for (uint32_t j = 0; j < ocap; j++) {
			if (!old[j])
				continue;
			for (i = (uint32_t)sim_hash_str(key(c, old[j] - 1)) & (ncap - 1); ns[i];
			     i = (i + 1) & (ncap - 1))
				;
			ns[i] = old[j];
		}
		free(old);
	}
	for (i = (uint32_t)sim_hash_str(key(c, idx)) & (m->cap - 1); m->slot[i];
	     i = (i + 1) & (m->cap - 1))
		;
	m->slot[i] = idx + 1;
	m->n++;
	return 0;
}

/* ---- lines and words --------------------------------------------------------- */

static int tokenize(struct fmt *c, struct line *L)
{
	const char *p = L->ls;

	L->ntok = 0;
	while (p < L->le) {
		struct tok *k;
		unsigned char ch = (unsigned char)*p;

		if (ch == ' ' || ch == '\t' || ch == '\r') {
			p++;
			continue;
		}
		if (ch == '#')
			break;
		if (L->ntok == MAX_TOKS)
			return perr(c, L, (int)(p - L->ls) + 1,
				    "too many words on one line (at most %d)", MAX_TOKS);
		k = &L->tok[L->ntok++];
		k->col = (int)(p - L->ls) + 1;
		k->quoted = ch == '"';
		if (k->quoted) {
			const char *q = memchr(p + 1, '"', (size_t)(L->le - p - 1));

			if (!q)
				return perr(c, L, k->col, "unterminated quoted string: expected a closing '\"'");
			k->s = p + 1;
			k->len = (int)(q - p - 1);
			p = q + 1;
			if (p < L->le && *p != ' ' && *p != '\t' && *p != '\r' && *p != '#')
				return perr(c, L, (int)(p - L->ls) + 1,
					    "expected a space after the closing '\"'");
		} else {
			k->s = p;
			while (p < L->le && *p != ' ' && *p != '\t' && *p != '\r' && *p != '#')
				p++;
			k->len = (int)(p - k->s);
		}
		for (int i = 0; i < k->len; i++) {
			unsigned char b = (unsigned char)k->s[i];

			if (b < 0x20 || b == 0x7f)
				return perr(c, L, k->col + i + k->quoted,
					    "unexpected control character 0x%02x", b);
		}
	}
	return 0;
}

static void line_at(struct line *L, const char *file, int no, const char *p, const char *end,
		    const char **next)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));

	L->file = file;
	L->no = no;
	L->ls = p;
	L->le = nl ? nl : end;
	*next = nl ? nl + 1 : end;
}

/* ---- values -------------------------------------------------------------------- */

static int parse_uint(struct fmt *c, const struct line *L, const struct tok *k, uint64_t max,
		      const char *what, uint64_t *out)
{
	char v[VALUE_MAX], err[256], g[64];

	if (tok_copy(k, v, sizeof(v)))
		return perr(c, L, k->col, "expected %s, got %s", what, got(k, g, sizeof(g)));
	if (sim_parse_uint(v, max, out, err, sizeof(err)))
		return perr(c, L, k->col, "%s: %s", what, err);
	return 0;
}

static int parse_rank(struct fmt *c, const struct line *L, const struct tok *k,
		      const char *what, int32_t *out)
{
	char v[VALUE_MAX], err[256], g[64];
	uint64_t x;

	if (tok_copy(k, v, sizeof(v)) || sim_parse_uint(v, UINT64_MAX, &x, err, sizeof(err)))
		return perr(c, L, k->col, "expected %s (a rank number), got %s", what,
			    got(k, g, sizeof(g)));
	if (x >= (uint64_t)c->t->nranks)
		return perr(c, L, k->col,
			    "rank %s is out of range (the trace has %" PRId32 " ranks, 0..%" PRId32 ")",
			    v, c->t->nranks, c->t->nranks - 1);
	*out = (int32_t)x;
	return 0;
}

static int parse_size(struct fmt *c, const struct line *L, const struct tok *k, uint64_t *out)
{
	char v[VALUE_MAX], err[256], g[64];

	if (tok_copy(k, v, sizeof(v)))
		return perr(c, L, k->col, "expected a size, got %s", got(k, g, sizeof(g)));
	if (sim_parse_size(v, out, err, sizeof(err)))
		return perr(c, L, k->col, "%s", err);
	return 0;
}

/*
 * A rank list "0,1,4-7" (s[0..n), starting at column `col`) into a fresh
 * array, in the order written. Members must be distinct.
 */
static int parse_list(struct fmt *c, const struct line *L, const char *s, int n, int col,
		      int32_t **out, uint32_t *nout)
{
	uint8_t *seen = calloc((size_t)c->t->nranks, 1);
	int32_t *v = NULL;
	size_t nv = 0, cap = 0;
	int i = 0, rc = 0;

	if (!seen)
		return perr(c, L, col, "out of memory");
	if (!n)
		rc = perr(c, L, col, "expected a list of ranks such as 0,1,4-7");
	while (i < n && !rc) {
		int32_t lo, hi;
		uint64_t a, b;
		int st = i, bst = i, ecol;

		if (!is_digit(s[i])) {
			rc = perr(c, L, col + i, "expected a rank in the list (such as 0,1,4-7)");
			break;
		}
		a = read_num(s, n, &i);
		b = a;
		if (i < n && s[i] == '-') {
			bst = ++i;
			if (i >= n || !is_digit(s[i])) {
				rc = perr(c, L, col + i, "expected the end of the range after '-'");
				break;
			}
			b = read_num(s, n, &i);
		}
		ecol = col + st;
		if (i < n && s[i] != ',') {
			rc = perr(c, L, col + i, "unexpected '%c' in the rank list (expected ',' or '-')",
				  s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?');
			break;
		}
		if (a >= (uint64_t)c->t->nranks || b >= (uint64_t)c->t->nranks) {
			/* the number as written: a huge one has saturated */
			int from = a >= (uint64_t)c->t->nranks ? st : bst;
			int to = from;

			while (to < n && is_digit(s[to]))
				to++;
			rc = perr(c, L, col + from,
				  "rank %.*s is out of range (the trace has %" PRId32 " ranks, 0..%" PRId32 ")",
				  to - from, s + from, c->t->nranks, c->t->nranks - 1);
			break;
		}
		if (b < a) {
			rc = perr(c, L, ecol, "the range %" PRIu64 "-%" PRIu64 " runs backwards", a, b);
			break;
		}
		lo = (int32_t)a;
		hi = (int32_t)b;
		if (sim_grow((void **)&v, &cap, nv + (size_t)(hi - lo) + 1, sizeof(*v))) {
			rc = perr(c, L, ecol, "out of memory");
			break;
		}
		for (int32_t r = lo; r <= hi; r++) {
			if (seen[r]++) {
				rc = perr(c, L, ecol, "rank %" PRId32 " is listed twice", r);
				break;
			}
			v[nv++] = r;
		}
		if (i < n && s[i] == ',') {
			i++;
			if (i == n)
				rc = perr(c, L, col + i, "expected a rank after ','");
		}
	}
	free(seen);
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	*nout = (uint32_t)nv;
	return 0;
}

/* ---- header statements ---------------------------------------------------------- */

static int need_ranks(struct fmt *c, const struct line *L, const char *what)
{
	if (c->t->nranks)
		return 0;
	return perr(c, L, L->tok[0].col, "expected 'ranks N' before the first %s", what);
}

static int do_ranks(struct fmt *c, const struct line *L)
{
	uint64_t n;

	if (c->t->nranks)
		return perr(c, L, L->tok[0].col, "'ranks' given twice (first at %s:%d)",
			    c->ranks_file, c->ranks_line);
	if (L->ntok < 2)
		return perr(c, L, eol_col(L), "expected the number of ranks after 'ranks'");
	if (L->ntok > 2)
		return perr(c, L, L->tok[2].col, "unexpected words after the rank count");
	if (parse_uint(c, L, &L->tok[1], TRACE_MAX_RANKS, "the number of ranks", &n))
		return -1;
	if (!n)
		return perr(c, L, L->tok[1].col, "a trace needs at least one rank");
	if (trace_set_ranks(c->t, (int32_t)n, c->d))
		return perr(c, L, L->tok[1].col, "%s", c->d->msg);
	c->ranks_file = L->file;
	c->ranks_line = L->no;
	return 0;
}

static int do_map(struct fmt *c, const struct line *L)
{
	static const struct {
		const char *w;
		enum trace_map m;
	} pol[] = {
		{ "linear", TRACE_MAP_LINEAR }, { "roundrobin", TRACE_MAP_ROUNDROBIN },
		{ "random", TRACE_MAP_RANDOM }, { "gpu", TRACE_MAP_GPU },
	};
	char g[64];
	int i;

	if (c->map_file)
		return perr(c, L, L->tok[0].col, "'map' given twice (first at %s:%d)",
			    c->map_file, c->map_line);
	if (c->host_file)
		return perr(c, L, L->tok[0].col,
			    "'map' cannot be combined with 'host' lines (%s:%d): host lines are the mapping",
			    c->host_file, c->host_line);
	if (L->ntok < 2)
		return perr(c, L, eol_col(L),
			    "expected a mapping after 'map': linear, roundrobin, random or gpu");
	for (i = 0; i < (int)(sizeof(pol) / sizeof(pol[0])); i++)
		if (tok_is(&L->tok[1], pol[i].w))
			break;
	if (i == (int)(sizeof(pol) / sizeof(pol[0])))
		return perr(c, L, L->tok[1].col,
			    "unknown mapping %s (expected linear, roundrobin, random or gpu)",
			    got(&L->tok[1], g, sizeof(g)));
	c->t->map = pol[i].m;
	for (int k = 2; k < L->ntok; k++) {
		const struct tok *o = &L->tok[k];
		struct tok v;

		if (pol[i].m != TRACE_MAP_RANDOM || o->quoted || o->len < 5 ||
		    memcmp(o->s, "seed=", 5) || k > 2)
			return perr(c, L, o->col, "unexpected %s after 'map %s'%s",
				    got(o, g, sizeof(g)), pol[i].w,
				    pol[i].m == TRACE_MAP_RANDOM ? " (expected seed=N)" : "");
		v = (struct tok){ o->s + 5, o->len - 5, o->col + 5, false };
		if (parse_uint(c, L, &v, UINT64_MAX, "the seed", &c->t->map_seed))
			return -1;
	}
	c->map_file = L->file;
	c->map_line = L->no;
	return 0;
}

static int do_host(struct fmt *c, const struct line *L)
{
	struct trace *t = c->t;
	char name[HOST_MAX], g[64];
	int32_t r;

	if (need_ranks(c, L, "'host' line"))
		return -1;
	if (c->map_file)
		return perr(c, L, L->tok[0].col,
			    "'host' lines cannot be combined with 'map' (%s:%d): they are the mapping",
			    c->map_file, c->map_line);
	if (L->ntok < 3)
		return perr(c, L, eol_col(L), "expected 'host <rank> <host name>'");
	if (L->ntok > 3)
		return perr(c, L, L->tok[3].col, "unexpected words after the host name");
	if (parse_rank(c, L, &L->tok[1], "the rank", &r))
		return -1;
	if (!L->tok[2].len || tok_copy(&L->tok[2], name, sizeof(name)))
		return perr(c, L, L->tok[2].col, "expected a host name, got %s",
			    got(&L->tok[2], g, sizeof(g)));
	if (!t->rank_host) {
		t->rank_host = calloc((size_t)t->nranks, sizeof(*t->rank_host));
		if (!t->rank_host)
			return perr(c, L, L->tok[0].col, "out of memory");
	}
	if (t->rank_host[r])
		return perr(c, L, L->tok[1].col, "rank %" PRId32 " already has a host ('%s')", r,
			    t->rank_host[r]);
	t->rank_host[r] = strdup(name);
	if (!t->rank_host[r])
		return perr(c, L, L->tok[0].col, "out of memory");
	t->map = TRACE_MAP_EXPLICIT;
	if (!c->host_file) {
		c->host_file = L->file;
		c->host_line = L->no;
	}
	return 0;
}

/* Register communicator `idx` under `name` (not NUL-terminated). */
static int name_comm(struct fmt *c, const struct line *L, int col, const char *name, int n,
		     uint32_t idx)
{
	struct cname *cn;
	uint32_t off = intern(c, name, (size_t)n);

	if (off == NONE ||
	    sim_grow((void **)&c->cnames, &c->cnames_cap, c->ncnames + 1, sizeof(*c->cnames)))
		return perr(c, L, col, "out of memory");
	cn = &c->cnames[c->ncnames];
	*cn = (struct cname){ off, idx, L->file, L->no };
	if (map_put(c, &c->comms, comm_key, (uint32_t)c->ncnames))
		return perr(c, L, col, "out of memory");
	c->ncnames++;
	return 0;
}

static int do_comm(struct fmt *c, const struct line *L)
{
	const struct tok *nk;
	const char *ls, *eq;
	int nlen, lcol, llen, idx, j;
	char name[ID_MAX], g[64];
	int32_t *members;
	uint32_t n;

	if (need_ranks(c, L, "communicator"))
		return -1;
	if (L->ntok < 2)
		return perr(c, L, eol_col(L), "expected 'comm NAME = 0,1,2-7'");
	nk = &L->tok[1];
	/* `comm tp = 0-3` or `comm tp=0-3` */
	eq = nk->quoted ? NULL : memchr(nk->s, '=', (size_t)nk->len);
	nlen = eq ? (int)(eq - nk->s) : nk->len;
	if (eq && L->ntok == 2) {
		ls = eq + 1;
		llen = nk->len - nlen - 1;
		lcol = nk->col + nlen + 1;
	} else if (!eq && L->ntok == 4 && tok_is(&L->tok[2], "=")) {
		ls = L->tok[3].s;
		llen = L->tok[3].len;
		lcol = L->tok[3].col;
	} else if (!eq && L->ntok > 4 && tok_is(&L->tok[2], "=")) {
		return perr(c, L, L->tok[4].col,
			    "unexpected words after the rank list: expected 'comm NAME = 0,1,2-7' (the list without spaces)");
	} else {
		return perr(c, L, L->ntok > 2 ? L->tok[2].col : eol_col(L),
			    "expected 'comm NAME = 0,1,2-7' (the list without spaces)");
	}
	if (nk->quoted || !nlen || id_len(nk->s, nlen) != nlen || nlen >= ID_MAX ||
	    reserved(nk->s, nlen))
		return perr(c, L, nk->col,
			    "expected a communicator name ([A-Za-z_][A-Za-z0-9_-]*, at most %d characters, not a keyword), got %s",
			    ID_MAX - 1, got(nk, g, sizeof(g)));
	memcpy(name, nk->s, (size_t)nlen);
	name[nlen] = 0;
	j = map_find(c, &c->comms, comm_key, name);
	if (j >= 0)
		return perr(c, L, nk->col, "communicator '%s' is defined twice (first at %s:%d)",
			    name, c->cnames[j].file, c->cnames[j].line);
	if (parse_list(c, L, ls, llen, lcol, &members, &n))
		return -1;
	idx = trace_add_comm(c->t, members, n, c->d);
	free(members);
	if (idx < 0)
		return perr(c, L, lcol, "%s", c->d->msg);
	return name_comm(c, L, nk->col, name, nlen, (uint32_t)idx);
}

/* ---- includes ---------------------------------------------------------------------- */

static int parse_range(struct fmt *c, const char *file, const char *p, const char *end, int no);

static int do_include(struct fmt *c, const struct line *L)
{
	char name[PATH_MAX], path[PATH_MAX * 2], g[64];
	const struct tok *k;
	const char *slash, *stored;
	char *canon, *buf;
	size_t len;
	int rc;

	if (L->ntok < 2)
		return perr(c, L, eol_col(L), "expected a file name after 'include'");
	if (L->ntok > 2)
		return perr(c, L, L->tok[2].col, "unexpected words after the include file name");
	k = &L->tok[1];
	if (!k->len || tok_copy(k, name, sizeof(name)))
		return perr(c, L, k->col, "expected a file name after 'include', got %s",
			    got(k, g, sizeof(g)));
	/* Relative to the including file, as C and the topology files do. */
	slash = strrchr(L->file, '/');
	if (name[0] == '/' || !slash)
		snprintf(path, sizeof(path), "%s", name);
	else
		snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - L->file), L->file, name);
	if (c->depth > TRACE_MAX_INCLUDE_DEPTH)
		return perr(c, L, k->col, "includes nested too deeply (more than %d levels)",
			    TRACE_MAX_INCLUDE_DEPTH);
	canon = realpath(path, NULL);
	if (!canon)
		return perr(c, L, k->col, "cannot include '%s': %s", path, strerror(errno));
	for (int i = 0; i < c->depth; i++)
		if (c->stack[i] && !strcmp(c->stack[i], canon)) {
			free(canon);
			return perr(c, L, k->col,
				    "include loop: '%s' is already being read (it includes, directly or not, %s)",
				    path, L->file);
		}
	if (trace_read_file(path, &buf, &len, c->d)) {
		free(canon);
		return perr(c, L, k->col, "cannot include '%s': %s", path, c->d->msg);
	}
	stored = trace_add_file(c->t, path);
	if (!stored) {
		free(canon);
		free(buf);
		return perr(c, L, k->col, "out of memory");
	}
	c->stack[c->depth++] = canon;
	rc = parse_range(c, stored, buf, buf + len, 1);
	free(c->stack[--c->depth]);
	c->stack[c->depth] = NULL;
	free(buf);
	return rc;
}

/* ---- ops ---------------------------------------------------------------------------- */

enum opt {
	OPT_AFTER, OPT_TAG, OPT_COMM, OPT_RANKS, OPT_ALGO, OPT_PROTO, OPT_CHUNKS, OPT_CHANNELS,
	OPT_ROOT, OPT_ASYNC, OPT_ACKED, NOPT
};
static const char *const opt_names[NOPT] = {
	"after", "tag", "comm", "ranks", "algo", "proto", "chunks", "channels", "root", "async",
	"acked",
};
/* the options that are a bare word, not key=value */
#define FLAG_OPT(o) ((o) == OPT_ASYNC || (o) == OPT_ACKED)

/* Options each kind of op takes (bit per enum opt). */
#define O(x) (1u << OPT_##x)
#define P2P_OPTS (O(AFTER) | O(TAG) | O(ASYNC))
#define SEND_OPTS (P2P_OPTS | O(ACKED))
#define COMPUTE_OPTS (O(AFTER) | O(ASYNC))
#define COLL_OPTS (O(AFTER) | O(COMM) | O(RANKS) | O(ALGO) | O(PROTO) | O(CHUNKS) | O(CHANNELS) | \
		   O(ASYNC))
#define ROOTED_OPTS (COLL_OPTS | O(ROOT))

/* Check one after= reference's shape: ID{.N}[@R]. */
static int check_ref(struct fmt *c, const struct line *L, const char *s, int n, int col)
{
	int i = id_len(s, n);

	if (!i)
		return perr(c, L, col, "expected an op id in after=, got '%.*s'", n > 40 ? 40 : n, s);
	while (i < n && s[i] == '.') {
		int st = ++i;

		while (i < n && is_digit(s[i]))
			i++;
		if (i == st)
			return perr(c, L, col + i, "expected an iteration number after '.'");
	}
	if (i < n && s[i] == '@') {
		int st = ++i;
		uint64_t r = read_num(s, n, &i);

		if (i == st)
			return perr(c, L, col + i, "expected a rank after '@'");
		if (i == n && r >= (uint64_t)c->t->nranks)
			return perr(c, L, col + st,
				    "rank %" PRIu64 " is out of range (the trace has %" PRId32 " ranks)",
				    r, c->t->nranks);
	}
	if (i < n)
		return perr(c, L, col + i, "unexpected '%c' in the op id (expected ID, ID.N or ID@RANK)",
			    s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?');
	if (n >= REF_MAX)
		return perr(c, L, col, "op id too long (at most %d characters)", REF_MAX - 1);
	return 0;
}

static int add_refs(struct fmt *c, const struct line *L, const struct tok *v, uint32_t *off,
		    uint32_t *nref)
{
	int i = 0;

	*off = (uint32_t)c->nrefs;
	*nref = 0;
	if (!v->len)
		return perr(c, L, v->col, "expected op ids after 'after=' (a,b,...)");
	if (c->suffix_off == NONE) {
		c->suffix_off = intern(c, c->suffix, strlen(c->suffix));
		if (c->suffix_off == NONE)
			return perr(c, L, v->col, "out of memory");
	}
	while (i <= v->len) {
		int st = i;
		uint32_t name;

		while (i < v->len && v->s[i] != ',')
			i++;
		if (check_ref(c, L, v->s + st, i - st, v->col + st))
			return -1;
		name = intern(c, v->s + st, (size_t)(i - st));
		if (name == NONE ||
		    sim_grow((void **)&c->refs, &c->refs_cap, c->nrefs + 1, sizeof(*c->refs)))
			return perr(c, L, v->col, "out of memory");
		c->refs[c->nrefs++] = (struct ref){ name, c->suffix_off, L->file, L->no,
						    v->col + st };
		(*nref)++;
		i++;	/* past the ',' (or the end) */
	}
	return 0;
}

/* The collective's communicator from ranks=LIST: one per distinct list text. */
static int list_comm(struct fmt *c, const struct line *L, const struct tok *v, uint32_t *comm)
{
	char key[VALUE_MAX * 2];
	int32_t *members;
	uint32_t n;
	int j, idx;

	/* The key starts with '=', which no communicator name can. */
	if ((size_t)v->len + 2 <= sizeof(key)) {
		key[0] = '=';
		memcpy(key + 1, v->s, (size_t)v->len);
		key[v->len + 1] = 0;
		j = map_find(c, &c->comms, comm_key, key);
		if (j >= 0) {
			*comm = c->cnames[j].comm;
			return 0;
		}
	}
	if (parse_list(c, L, v->s, v->len, v->col, &members, &n))
		return -1;
	idx = trace_add_comm(c->t, members, n, c->d);
	free(members);
	if (idx < 0)
		return perr(c, L, v->col, "%s", c->d->msg);
	*comm = (uint32_t)idx;
	if ((size_t)v->len + 2 <= sizeof(key))
		return name_comm(c, L, v->col, key, v->len + 1, *comm);
	return 0;
}

static int kind_of(const struct tok *k, enum trace_kind *kind, enum trace_coll *coll)
{
	for (int i = 0; i < TRACE_NCOLL; i++)
		if (tok_is(k, trace_coll_names[i])) {
			*kind = TRACE_COLL;
			*coll = (enum trace_coll)i;
			return 0;
		}
	if (tok_is(k, "send"))
		*kind = TRACE_SEND;
	else if (tok_is(k, "recv"))
		*kind = TRACE_RECV;
	else if (tok_is(k, "compute"))
		*kind = TRACE_COMPUTE;
	else
		return -1;
	return 0;
}

static int parse_options(struct fmt *c, const struct line *L, const struct tok *w, int nw,
			 struct pop *p, unsigned allowed, const struct tok **root_tok)
{
	struct trace_op *op = &p->op;
	unsigned seen = 0;
	char g[64];

	for (int i = 0; i < nw; i++) {
		const struct tok *k = &w[i];
		const char *eq = k->quoted ? NULL : memchr(k->s, '=', (size_t)k->len);
		int klen = eq ? (int)(eq - k->s) : k->len, o;
		struct tok v = { eq ? eq + 1 : NULL, eq ? k->len - klen - 1 : 0,
				 k->col + klen + 1, false };
		uint64_t x;

		for (o = 0; o < NOPT; o++)
			if ((size_t)klen == strlen(opt_names[o]) && !memcmp(k->s, opt_names[o], (size_t)klen))
				break;
		if (k->quoted || o == NOPT || FLAG_OPT(o) != !eq)
			return perr(c, L, k->col,
				    "unexpected %s (expected an option: after=, tag=, comm=, ranks=, algo=, proto=, chunks=, channels=, root=, async, acked)",
				    got(k, g, sizeof(g)));
		if (!(allowed & (1u << o)))
			return perr(c, L, k->col, "option '%s' does not apply to this op%s", opt_names[o],
				    o == OPT_ROOT ? " (only broadcast and reduce have a root)" :
				    o == OPT_ACKED ? " (only a send is acknowledged)" : "");
		if (seen & (1u << o))
			return perr(c, L, k->col, "option '%s' given twice", opt_names[o]);
		if ((o == OPT_COMM && (seen & O(RANKS))) || (o == OPT_RANKS && (seen & O(COMM))))
			return perr(c, L, k->col, "give either comm= or ranks=, not both");
		seen |= 1u << o;
		switch ((enum opt)o) {
		case OPT_AFTER:
			if (add_refs(c, L, &v, &p->ref_off, &p->nref))
				return -1;
			break;
		case OPT_TAG:
			if (parse_uint(c, L, &v, UINT32_MAX, "the tag", &x))
				return -1;
			op->tag = (uint32_t)x;
			break;
		case OPT_COMM: {
			char name[ID_MAX];
			int j = -1;

			if (!tok_copy(&v, name, sizeof(name)))
				j = map_find(c, &c->comms, comm_key, name);
			if (tok_is(&v, "world"))
				op->comm = 0;
			else if (j < 0 || name[0] == '=')
				return perr(c, L, v.col,
					    "unknown communicator %s (define it first: comm NAME = 0,1,2-7)",
					    got(&v, g, sizeof(g)));
			else
				op->comm = c->cnames[j].comm;
			break;
		}
		case OPT_RANKS:
			if (list_comm(c, L, &v, &op->comm))
				return -1;
			break;
		case OPT_ALGO: {
			int a;

			for (a = 0; a < TRACE_NALGO; a++)
				if (tok_is(&v, trace_algo_names[a]))
					break;
			if (a == TRACE_NALGO) {
				char names[128];

				return perr(c, L, v.col, "unknown algorithm %s (expected %s)",
					    got(&v, g, sizeof(g)),
					    sim_fmt_names(trace_algo_names, TRACE_NALGO, names,
							  sizeof(names)));
			}
			/* Refused here, with its column, rather than when lowering. */
			if (!coll_algo_find(op->coll, (enum trace_algo)a)) {
				char list[128];
				size_t off = 0;

				list[0] = 0;
				for (int b = TRACE_ALGO_AUTO; b < TRACE_NALGO; b++)
					if (coll_algo_find(op->coll, (enum trace_algo)b))
						sim_append(list, sizeof(list), &off, "%s%s",
							   off ? ", " : "", trace_algo_names[b]);
				return perr(c, L, v.col, "algorithm '%s' does not apply to %s (it has: %s)",
					    trace_algo_names[a], trace_coll_names[op->coll], list);
			}
			op->algo = (enum trace_algo)a;
			break;
		}
		case OPT_PROTO: {
			int a;

			for (a = 0; a < TRACE_NPROTO; a++)
				if (tok_is(&v, trace_proto_names[a]))
					break;
			if (a == TRACE_NPROTO) {
				char names[64];

				return perr(c, L, v.col, "unknown protocol %s (expected %s)",
					    got(&v, g, sizeof(g)),
					    sim_fmt_names(trace_proto_names, TRACE_NPROTO, names,
							  sizeof(names)));
			}
			op->proto = (enum trace_proto)a;
			op->protos = a == TRACE_PROTO_AUTO ? 0 : (uint8_t)(1u << a);
			break;
		}
		case OPT_CHUNKS:
		case OPT_CHANNELS:
			if (parse_uint(c, L, &v, o == OPT_CHUNKS ? TRACE_MAX_CHUNKS : TRACE_MAX_CHANNELS,
				       o == OPT_CHUNKS ? "the chunk count" : "the channel count", &x))
				return -1;
			if (!x)
				return perr(c, L, v.col, "%s must be at least 1", opt_names[o]);
			if (o == OPT_CHUNKS)
				op->chunks = (uint32_t)x;
			else
				op->channels = (uint32_t)x;
			break;
		case OPT_ROOT:
			if (parse_rank(c, L, &v, "the root", &op->root))
				return -1;
			*root_tok = k;
			break;
		case OPT_ASYNC:
			p->async = true;
			break;
		case OPT_ACKED:
			op->acked = true;
			break;
		case NOPT:
			break;
		}
	}
	return 0;
}


/*
 * An op line in four phases: its id ("name:"), its kind and positional
 * arguments (one parser per kind, below), its key=value options, and the
 * ops it adds (one per rank for `compute all`). What they share:
 */
struct op_line {
	struct tok w[MAX_TOKS + 1];
	int nw, i;			/* tokens, and the next one to read */
	const char *id;			/* "name" of "name: op ...", or NULL */
	int idn, id_col;
	struct pop p;
	bool all;			/* compute all */
	/* a line over a rank list (compute LIST, send|recv LIST PEERS): its
	 * ranks, and the peer of each (NULL: op.peer for all); owned */
	int32_t *ranks, *peers;
	uint32_t nlist;
	const struct tok *root_tok;	/* root=, if given */
};

/* "name: op ..." or "name:op ...": the id, and the token the op starts at. */
static int op_id(struct fmt *c, struct line *L, struct op_line *o)
{
	struct tok *w0 = &o->w[0];
	const char *colon;
	char g[64];

	if (w0->quoted || !(colon = memchr(w0->s, ':', (size_t)w0->len)))
		return 0;
	o->id = w0->s;
	o->idn = (int)(colon - w0->s);
	o->id_col = w0->col;
	if (!o->idn || id_len(o->id, o->idn) != o->idn || reserved(o->id, o->idn))
		return perr(c, L, o->id_col,
			    "expected an op id before ':' ([A-Za-z_][A-Za-z0-9_-]*, not a keyword), got %s",
			    got(w0, g, sizeof(g)));
	if (colon + 1 < w0->s + w0->len) {
		w0->len -= o->idn + 1;
		w0->s = colon + 1;
		w0->col += o->idn + 1;
	} else {
		o->i = 1;
	}
	return 0;
}

/* A rank list ("0-63", "0,8,16") where a rank may stand: a ',' or a '-'. */
static bool is_list(const struct tok *k)
{
	return !k->quoted && (memchr(k->s, ',', (size_t)k->len) || memchr(k->s, '-', (size_t)k->len));
}

/* send|recv <rank> <peer> <size>: the options it allows, or -1. Over rank
 * lists, <ranks> <peers> of one length, or <ranks> <peer>: one op a rank. */
static int args_p2p(struct fmt *c, struct line *L, struct op_line *o)
{
	static const char *const what[] = { "the rank", "the peer rank", "the size" };
	struct trace_op *op = &o->p.op;
	const struct tok *w = o->w;

	for (int a = 0; a < 3; a++, o->i++) {
		int i = o->i;

		if (i >= o->nw || memchr(w[i].s, '=', (size_t)w[i].len))
			return perr(c, L, i < o->nw ? w[i].col : eol_col(L),
				    "expected %s: '%s <rank> <peer> <size>'", what[a],
				    op->kind == TRACE_SEND ? "send" : "recv");
		if (a < 2 && is_list(&w[i])) {
			int32_t **l = a ? &o->peers : &o->ranks;
			uint32_t n;

			if (a && !o->ranks)
				return perr(c, L, w[i].col,
					    "a list of peers needs a list of ranks of the same length before it ('%s 0-3 4-7 <size>')",
					    op->kind == TRACE_SEND ? "send" : "recv");
			if (parse_list(c, L, w[i].s, w[i].len, w[i].col, l, &n))
				return -1;
			if (a && n != o->nlist)
				return perr(c, L, w[i].col,
					    "%" PRIu32 " peers for %" PRIu32 " ranks: the lists pair up rank by rank",
					    n, o->nlist);
			o->nlist = n;
			continue;
		}
		if (a == 2 ? parse_size(c, L, &w[i], &op->bytes) :
		    parse_rank(c, L, &w[i], what[a], a ? &op->peer : &op->rank))
			return -1;
	}
	for (uint32_t k = 0; k < o->nlist; k++) {
		const int32_t pr = o->peers ? o->peers[k] : op->peer;

		if (pr == o->ranks[k])
			return perr(c, L, w[o->i - 2].col,
				    "rank %" PRId32 " cannot %s itself (place %" PRIu32 " of the lists)",
				    pr, op->kind == TRACE_SEND ? "send to" : "receive from", k + 1);
	}
	if (!o->nlist && op->peer == op->rank)
		return perr(c, L, w[o->i - 2].col, "rank %" PRId32 " cannot %s itself", op->rank,
			    op->kind == TRACE_SEND ? "send to" : "receive from");
	return op->kind == TRACE_SEND ? SEND_OPTS : P2P_OPTS;
}

/* compute <rank|all> <duration> */
static int args_compute(struct fmt *c, struct line *L, struct op_line *o)
{
	struct trace_op *op = &o->p.op;
	const struct tok *w = o->w;
	char v[VALUE_MAX], err[256], g[64];

	if (o->i >= o->nw)
		return perr(c, L, eol_col(L), "expected the rank (or 'all'): 'compute <rank|all> <duration>'");
	if (tok_is(&w[o->i], "all"))
		o->all = true;
	else if (is_list(&w[o->i])) {
		if (parse_list(c, L, w[o->i].s, w[o->i].len, w[o->i].col, &o->ranks, &o->nlist))
			return -1;
	} else if (parse_rank(c, L, &w[o->i], "the rank or 'all'", &op->rank))
		return -1;
	if (++o->i >= o->nw || memchr(w[o->i].s, '=', (size_t)w[o->i].len))
		return perr(c, L, o->i < o->nw ? w[o->i].col : eol_col(L),
			    "expected a duration with a unit after the rank (e.g. 250us)");
	if (tok_copy(&w[o->i], v, sizeof(v)))
		return perr(c, L, w[o->i].col, "expected a duration such as 250us, got %s",
			    got(&w[o->i], g, sizeof(g)));
	if (sim_parse_time_ps(v, &op->duration, err, sizeof(err)))
		return perr(c, L, w[o->i].col, "%s", err);
	o->i++;
	return COMPUTE_OPTS;
}

/* <collective> <size>, or barrier with none */
static int args_coll(struct fmt *c, struct line *L, struct op_line *o)
{
	struct trace_op *op = &o->p.op;
	const struct tok *w = o->w;
	int i = o->i;
	char g[64];

	if (op->coll != TRACE_BARRIER) {
		if (i >= o->nw || memchr(w[i].s, '=', (size_t)w[i].len))
			return perr(c, L, i < o->nw ? w[i].col : eol_col(L),
				    "expected a size after '%s' (e.g. 64MiB)",
				    trace_coll_names[op->coll]);
		if (parse_size(c, L, &w[i], &op->bytes))
			return -1;
		if (!op->bytes)
			return perr(c, L, w[i].col,
				    "a %s of 0 bytes moves nothing (use barrier to synchronise)",
				    trace_coll_names[op->coll]);
		o->i++;
	} else if (i < o->nw && !memchr(w[i].s, '=', (size_t)w[i].len) && !tok_is(&w[i], "async") &&
		   !tok_is(&w[i], "acked")) {
		return perr(c, L, w[i].col, "barrier takes no size, got %s",
			    got(&w[i], g, sizeof(g)));
	}
	return op->coll == TRACE_BROADCAST || op->coll == TRACE_REDUCE ? ROOTED_OPTS : COLL_OPTS;
}

/* An op kind's positional arguments: the options it allows, or -1. */
static int (*const op_args[])(struct fmt *c, struct line *L, struct op_line *o) = {
	[TRACE_SEND] = args_p2p,
	[TRACE_RECV] = args_p2p,
	[TRACE_COMPUTE] = args_compute,
	[TRACE_COLL] = args_coll,
};

/* A collective's root: its communicator's first member unless root= names
 * one, which must be a member. */
static int op_root(struct fmt *c, struct line *L, struct op_line *o)
{
	struct trace_op *op = &o->p.op;
	const struct trace_comm *cm = &c->t->comms[op->comm];
	uint32_t m = 0;

	if (!o->root_tok) {
		op->root = cm->ranks[0];
		return 0;
	}
	while (m < cm->n && cm->ranks[m] != op->root)
		m++;
	if (m == cm->n)
		return perr(c, L, o->root_tok->col,
			    "root %" PRId32 " is not a member of the communicator", op->root);
	return 0;
}

struct rank_at {
	int32_t rank;
	uint32_t at;	/* its place in the line's list */
};

static int cmp_rank_at(const void *a, const void *b)
{
	const int32_t x = ((const struct rank_at *)a)->rank, y = ((const struct rank_at *)b)->rank;

	return (x > y) - (x < y);
}

/* Name, count, and add: one op per rank for `compute all`, one per rank of
 * a rank list (in rank order: each is on a rank of its own, and a pair of
 * ranks has at most one of them, so the order changes no matching). */
static int op_add(struct fmt *c, struct line *L, struct op_line *o)
{
	const bool grp = o->all || o->nlist;
	size_t count = o->all ? (size_t)c->t->nranks : o->nlist ? o->nlist : 1;
	struct rank_at *order = NULL;
	char full[ID_MAX];

	if (c->npops + count > TRACE_MAX_OPS)
		return perr(c, L, o->w[0].col, "too many ops (more than %u after expanding repeat and 'all')",
			    TRACE_MAX_OPS);
	if (o->id) {
		size_t fl = (size_t)o->idn + strlen(c->suffix);
		char rk[16];
		int j;

		snprintf(rk, sizeof(rk), "@%" PRId32, c->t->nranks - 1);
		if (fl + (grp ? strlen(rk) : 0) >= ID_MAX)
			return perr(c, L, o->id_col,
				    "id '%.*s%s%s' is too long (at most %d characters with the suffixes repeat and 'compute all' add)",
				    o->idn, o->id, c->suffix, grp ? rk : "", ID_MAX - 1);
		snprintf(full, sizeof(full), "%.*s%s", o->idn, o->id, c->suffix);
		j = map_find(c, &c->ids, id_key, full);
		if (j >= 0)
			return perr(c, L, o->id_col, "duplicate id '%s' (first defined at %s:%d)", full,
				    c->pops[j].op.file, c->pops[j].op.line);
		o->p.key = intern(c, full, strlen(full));
		if (o->p.key == NONE)
			return perr(c, L, o->id_col, "out of memory");
	}
	if (sim_grow((void **)&c->pops, &c->pops_cap, c->npops + count, sizeof(*c->pops)))
		return perr(c, L, o->w[0].col, "out of memory");
	if (o->nlist) {
		order = malloc(o->nlist * sizeof(*order));
		if (!order)
			return perr(c, L, o->w[0].col, "out of memory");
		for (uint32_t k = 0; k < o->nlist; k++)
			order[k] = (struct rank_at){ o->ranks[k], k };
		qsort(order, o->nlist, sizeof(*order), cmp_rank_at);
	}
	for (size_t r = 0; r < count; r++) {
		struct pop *q = &c->pops[c->npops + r];

		*q = o->p;
		if (r)
			q->key = NONE;	/* the group answers to its first op's key */
		if (grp) {
			q->group = (uint32_t)c->npops;
			q->gn = r ? 0 : (uint32_t)count;
			q->op.rank = order ? order[r].rank : (int32_t)r;
			if (order && o->peers)
				q->op.peer = o->peers[order[r].at];
			if (o->id)
				snprintf(q->op.name, sizeof(q->op.name), "%s@%" PRId32, full,
					 q->op.rank);
		} else if (o->id) {
			snprintf(q->op.name, sizeof(q->op.name), "%s", full);
		}
	}
	free(order);
	/* Registered last: the table reads the key back from pops[]. */
	if (o->id && map_put(c, &c->ids, id_key, (uint32_t)c->npops))
		return perr(c, L, o->id_col, "out of memory");
	c->npops += count;
	return 0;
}

static int parse_op(struct fmt *c, struct line *L)
{
	struct op_line o = { .nw = L->ntok, .p = { .key = NONE, .group = NONE } };
	struct trace_op *op = &o.p.op;
	const struct tok *w = o.w;
	int allowed;
	char g[64];

	memcpy(o.w, L->tok, sizeof(*o.w) * (size_t)o.nw);
	if (op_id(c, L, &o))
		return -1;
	if (o.i >= o.nw)
		return perr(c, L, eol_col(L), "expected an op after the id '%.*s:'", o.idn, o.id);
	if (kind_of(&w[o.i], &op->kind, &op->coll))
		return perr(c, L, w[o.i].col,
			    "unknown op %s (expected send, recv, compute, allreduce, allgather, reducescatter, alltoall, broadcast, reduce, barrier, or ranks, map, host, comm, include, repeat)%s",
			    got(&w[o.i], g, sizeof(g)),
			    o.i + 1 < o.nw && !kind_of(&w[o.i + 1], &op->kind, &op->coll) ?
			    "; an op id is written with a colon: 'name: op'" : "");
	if (need_ranks(c, L, "op"))
		return -1;
	op->rank = -1;
	op->peer = -1;
	op->root = -1;
	op->chunks = 0;		/* not given: the lowering chooses */
	op->channels = 0;
	op->algo = TRACE_ALGO_AUTO;
	op->file = L->file;
	op->line = L->no;
	o.i++;
	/* kind_of gives one of the table's kinds; anything else reads as a
	 * collective, as it always has */
	allowed = ((unsigned)op->kind < SIM_ARRAY_SIZE(op_args) && op_args[op->kind] ?
		   op_args[op->kind] : args_coll)(c, L, &o);
	int rc = allowed < 0 ||
		 parse_options(c, L, w + o.i, o.nw - o.i, &o.p, (unsigned)allowed, &o.root_tok) ||
		 (op->kind == TRACE_COLL && op_root(c, L, &o)) ? -1 : op_add(c, L, &o);

	free(o.ranks);
	free(o.peers);
	return rc;
}

/* ---- statements, repeat blocks --------------------------------------------------------- */

static int parse_line(struct fmt *c, struct line *L)
{
	const struct tok *k = &L->tok[0];

	if (tok_is(k, "}"))
		return perr(c, L, k->col, "unexpected '}': no repeat block is open");
	if (tok_is(k, "include"))
		return do_include(c, L);
	if (c->rdepth && (tok_is(k, "ranks") || tok_is(k, "map") || tok_is(k, "host") ||
			  tok_is(k, "comm")))
		return perr(c, L, k->col, "'%.*s' is not allowed inside a repeat block", k->len, k->s);
	if (tok_is(k, "ranks"))
		return do_ranks(c, L);
	if (tok_is(k, "map"))
		return do_map(c, L);
	if (tok_is(k, "host"))
		return do_host(c, L);
	if (tok_is(k, "comm"))
		return do_comm(c, L);
	return parse_op(c, L);
}

static bool opens_block(const struct line *L)
{
	return L->ntok >= 2 && tok_is(&L->tok[0], "repeat") && tok_is(&L->tok[L->ntok - 1], "{");
}

/*
 * A `repeat N {` at L: find its closing '}' from `p` on, then read the body
 * N times with ".k" added to the suffix. *next and *next_no get the line
 * after the '}'.
 */
static int do_repeat(struct fmt *c, struct line *L, const char *p, const char *end,
		     const char **next, int *next_no)
{
	const char *body = p, *body_end = NULL;
	int depth = 1, no = L->no + 1;
	size_t slen = strlen(c->suffix);
	uint64_t n;
	struct line M;
	int rc = 0;

	if (L->ntok != 3 || !tok_is(&L->tok[2], "{"))
		return perr(c, L, L->ntok < 3 ? eol_col(L) :
			    L->tok[tok_is(&L->tok[2], "{") ? 3 : 2].col,
			    "expected 'repeat N {' (the '{' as a word of its own at the end of the line)");
	if (parse_uint(c, L, &L->tok[1], MAX_REPEAT, "the repeat count", &n))
		return -1;
	if (!n)
		return perr(c, L, L->tok[1].col, "the repeat count must be at least 1");
	if (c->rdepth >= MAX_REPEAT_DEPTH)
		return perr(c, L, L->tok[0].col, "repeat blocks nested too deeply (more than %d)",
			    MAX_REPEAT_DEPTH);
	while (p < end) {
		const char *after;

		if (++c->visits > MAX_VISITS)
			return perr(c, L, L->tok[0].col,
				    "the trace expands to too many lines (more than %lu read through repeat blocks)",
				    MAX_VISITS);
		line_at(&M, L->file, no, p, end, &after);
		if (tokenize(c, &M))
			return -1;
		if (opens_block(&M))
			depth++;
		else if (M.ntok == 1 && tok_is(&M.tok[0], "}") && !--depth) {
			body_end = p;
			*next = after;
			*next_no = no + 1;
			break;
		}
		p = after;
		no++;
	}
	if (!body_end)
		return perr(c, L, L->tok[0].col,
			    "repeat block not closed: expected '}' on a line of its own");
	if (slen + 1 + 20 >= SUFFIX_MAX)
		return perr(c, L, L->tok[0].col, "repeat blocks nested too deeply");
	c->rdepth++;
	for (uint64_t k = 0; k < n && !rc; k++) {
		size_t before = c->npops;

		snprintf(c->suffix + slen, SUFFIX_MAX - slen, ".%" PRIu64, k);
		c->suffix_off = NONE;
		rc = parse_range(c, L->file, body, body_end, L->no + 1);
		/* A body that made no op makes none the next time either (only
		 * the suffix changes): stop, so nested repeats of nothing end at
		 * once instead of spinning through MAX_VISITS. */
		if (c->npops == before)
			break;
	}
	c->rdepth--;
	c->suffix[slen] = 0;
	c->suffix_off = NONE;
	return rc;
}

static int parse_range(struct fmt *c, const char *file, const char *p, const char *end, int no)
{
	struct line L;

	while (p < end) {
		const char *next;

		if (++c->visits > MAX_VISITS)
			return sim_diag_set(c->d, file, no, 0,
					    "the trace expands to too many lines (more than %lu read through repeat blocks)",
					    MAX_VISITS);
		line_at(&L, file, no, p, end, &next);
		if (tokenize(c, &L))
			return -1;
		if (L.ntok && tok_is(&L.tok[0], "repeat")) {
			if (do_repeat(c, &L, next, end, &p, &no))
				return -1;
			continue;
		}
		if (L.ntok && parse_line(c, &L))
			return -1;
		p = next;
		no++;
	}
	return 0;
}

/* ---- resolving dependencies -------------------------------------------------------------- */

struct depset {
	uint32_t *v;
	size_t n, cap;
	uint32_t *mark;		/* mark[op] == stamp: already in v */
	uint32_t stamp;
};

static int dep_add(struct depset *s, uint32_t op)
{
	if (s->mark[op] == s->stamp)
		return 0;
	if (sim_grow((void **)&s->v, &s->cap, s->n + 1, sizeof(*s->v)))
		return -1;
	s->mark[op] = s->stamp;
	s->v[s->n++] = op;
	return 0;
}

/* Find the op a reference names, from the innermost repeat context out. */
static int find_ref(struct fmt *c, const char *base, const char *ctx)
{
	char name[REF_MAX + SUFFIX_MAX];
	size_t cl = strlen(ctx);

	for (;;) {
		int j;

		snprintf(name, sizeof(name), "%s%.*s", base, (int)cl, ctx);
		j = map_find(c, &c->ids, id_key, name);
		if (j >= 0 || !cl)
			return j;
		while (cl && ctx[cl - 1] != '.')
			cl--;
		if (cl)
			cl--;
	}
}

/* The op of group j (its first op's index) on rank r, or NONE: the
 * group's ops are in rank order, one a rank (every rank's for `compute
 * all`). */
static uint32_t group_member(const struct fmt *c, uint32_t j, int32_t r)
{
	uint32_t lo = 0, hi = c->pops[j].gn;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (c->pops[j + mid].op.rank < r)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->pops[j].gn && c->pops[j + lo].op.rank == r ? j + lo : NONE;
}

static int resolve_ref(struct fmt *c, uint32_t i, const struct ref *rf, struct depset *s)
{
	const struct pop *p = &c->pops[i];
	char base[REF_MAX], *at;
	long rank = -1;
	int j;

	snprintf(base, sizeof(base), "%s", str(c, rf->name));
	at = strchr(base, '@');
	if (at) {
		*at = 0;
		rank = strtol(at + 1, NULL, 10);	/* checked by check_ref() */
	}
	j = find_ref(c, base, str(c, rf->ctx));
	if (j < 0) {
		char hint[2 * REF_MAX + 80] = "";
		char probe[REF_MAX + 4];

		snprintf(probe, sizeof(probe), "%s.0", base);
		if (map_find(c, &c->ids, id_key, probe) >= 0)
			snprintf(hint, sizeof(hint),
				 " (ids inside a repeat block carry the iteration: '%s.0', '%s.1', ...)",
				 base, base);
		return sim_diag_set(c->d, rf->file, rf->line, rf->col, "unknown id '%s' in after=%s",
				    base, hint);
	}
	if (at && c->pops[j].group == NONE)
		return sim_diag_set(c->d, rf->file, rf->line, rf->col,
				    "'%s' is one op, not one per rank: '@rank' needs the id of a 'compute all' or of a line over a rank list",
				    base);
	if (rank >= 0) {
		uint32_t m = group_member(c, (uint32_t)j, (int32_t)rank);

		if (m == NONE)
			return sim_diag_set(c->d, rf->file, rf->line, rf->col,
					    "'%s' has no op on rank %ld (its line's ranks do not include it)",
					    base, rank);
		return dep_add(s, m);
	}
	if (c->pops[j].group == NONE)
		return dep_add(s, (uint32_t)j);
	/* A group: each rank's own member, or for a collective, every
	 * member's; a rank (or a communicator) the group has no op on waits
	 * for all of them. */
	uint32_t found = 0, m;

	if (p->op.kind != TRACE_COLL) {
		m = group_member(c, (uint32_t)j, p->op.rank);
		if (m != NONE)
			return dep_add(s, m);
	} else {
		for (uint32_t k = 0; k < c->t->comms[p->op.comm].n; k++) {
			m = group_member(c, (uint32_t)j, c->t->comms[p->op.comm].ranks[k]);
			if (m != NONE && (++found, dep_add(s, m)))
				return -1;
		}
		if (found)
			return 0;
	}
	for (m = 0; m < c->pops[j].gn; m++)
		if (dep_add(s, (uint32_t)j + m))
			return -1;
	return 0;
}

/*
 * Every op waits for the previous non-async op of each of its ranks, and
 * for what its after= names; async ops do not become anyone's "previous".
 */
static int resolve(struct fmt *c)
{
	struct trace *t = c->t;
	uint32_t *prev = malloc((size_t)t->nranks * sizeof(*prev));
	struct depset s = { .mark = calloc(c->npops ? c->npops : 1, sizeof(uint32_t)) };
	int rc = 0;

	if (!prev || !s.mark) {
		rc = sim_diag_set(c->d, t->files[0], 0, 0, "out of memory");
		goto out;
	}
	for (int32_t r = 0; r < t->nranks; r++)
		prev[r] = NONE;
	for (size_t i = 0; i < c->npops && !rc; i++) {
		struct pop *p = &c->pops[i];
		const int32_t *ranks = &p->op.rank;
		uint32_t nr = 1;

		if (p->op.kind == TRACE_COLL) {
			ranks = t->comms[p->op.comm].ranks;
			nr = t->comms[p->op.comm].n;
		}
		s.n = 0;
		s.stamp = (uint32_t)i + 1;
		for (uint32_t k = 0; k < nr && !rc; k++)
			if (prev[ranks[k]] != NONE && dep_add(&s, prev[ranks[k]]))
				rc = sim_diag_set(c->d, p->op.file, p->op.line, 0, "out of memory");
		for (uint32_t k = 0; k < p->nref && !rc; k++)
			if (resolve_ref(c, (uint32_t)i, &c->refs[p->ref_off + k], &s))
				rc = -1;
		if (rc)
			break;
		p->op.id = (uint32_t)i;
		if (trace_add_op(t, &p->op, s.v, (uint32_t)s.n, c->d) < 0) {
			rc = -1;
			break;
		}
		if (!p->async)
			for (uint32_t k = 0; k < nr; k++)
				prev[ranks[k]] = (uint32_t)i;
	}
out:
	free(prev);
	free(s.v);
	free(s.mark);
	return rc;
}

/* ---- entry points -------------------------------------------------------------------------- */

static int finish(struct fmt *c, const char *file)
{
	struct trace *t = c->t;

	if (!t->nranks)
		return sim_diag_set(c->d, file, 0, 0,
				    "no 'ranks N' line: a trace starts by saying how many ranks it has");
	if (c->host_file)
		for (int32_t r = 0; r < t->nranks; r++)
			if (!t->rank_host[r])
				return sim_diag_set(c->d, c->host_file, c->host_line, 0,
						    "rank %" PRId32 " has no 'host' line (once one rank has a host line, every rank needs one)",
						    r);
	if (!c->npops)
		return sim_diag_set(c->d, file, 0, 0, "the trace has no operations");
	return resolve(c);
}

int trace_fmt_parse(const char *buf, size_t len, const char *name, const char *canon,
		    struct trace *t, struct sim_diag *d)
{
	struct fmt c = { .t = t, .d = d, .suffix_off = NONE };
	const char *stored;
	int rc;

	sim_diag_clear(d);
	stored = trace_add_file(t, name);
	if (!stored)
		return sim_diag_set(d, name, 0, 0, "out of memory");
	if (canon) {
		c.stack[0] = strdup(canon);
		if (!c.stack[0])
			return sim_diag_set(d, name, 0, 0, "out of memory");
	}
	c.depth = 1;
	rc = parse_range(&c, stored, buf, buf + len, 1);
	if (!rc)
		rc = finish(&c, stored);
	free(c.stack[0]);
	free(c.pops);
	free(c.refs);
	free(c.cnames);
	free(c.arena);
	free(c.ids.slot);
	free(c.comms.slot);
	return rc;
}

bool trace_fmt_sniff(const char *text, size_t len)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *w;

		while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
			p++;
		if (p < end && *p == '#') {
			while (p < end && *p != '\n')
				p++;
			continue;
		}
		w = p;
		while (p < end && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n' && *p != '#')
			p++;
		for (size_t i = 0; i < sizeof(header_words) / sizeof(header_words[0]); i++)
			if ((size_t)(p - w) == strlen(header_words[i]) &&
			    !memcmp(w, header_words[i], (size_t)(p - w)))
				return true;
		return false;
	}
	return false;
}

/* The native format as a row of import_formats[] (traces/import.c). */
int trace_fmt_load(const char *path, const char *text, size_t len, struct trace *t,
		   struct sim_diag *d)
{
	char *canon = realpath(path, NULL);
	int rc = trace_fmt_parse(text, len, path, canon, t, d);

	free(canon);
	return rc;
}

/* A native file says so by its extension or its first keyword. */
bool trace_fmt_detect(const char *path, const char *text, size_t len)
{
	size_t pl = path ? strlen(path) : 0;

	return (pl > 6 && !strcmp(path + pl - 6, ".trace")) || trace_fmt_sniff(text, len);
}
