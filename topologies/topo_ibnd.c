/* SPDX-License-Identifier: MIT */
/*
 * topo_ibnd.c - read and write topology files in the ibnetdiscover output
 * format (infiniband-diags, man ibnetdiscover "TOPOLOGY FILE FORMAT") and
 * the ibsim net format, which is the same grammar plus a few extensions.
 *
 * Accepted, line by line:
 *   Switch|Hca|Ca|Rt <nports> "<id>"  [# "<desc>" [base|enhanced port 0] lid N lmc M]
 *   [p] "<remote id>"[rp](<guid>)     [w=.. s=.. e=..] [# "<desc>" lid N 4xHDR s= w= v= e=]
 *   [p](<guid>) "<remote id>"[rp]     [...] [# lid N lmc M "<desc>" lid N 4xHDR ...]
 *   vendid= devid= sysimgguid= switchguid=0x..(..) caguid= hcaguids= rtguid=
 *   width=<mask> speed=<mask>          (ibsim: defaults for later ports)
 *   include <file> | include "<file>"  (relative to the including file)
 *   do <ibsim console command>         (ignored)
 *   # comments, blank lines (a blank line ends a node's port list)
 * A missing [rp] means port 1, as in ibsim. Cables may name nodes declared
 * further down (ibsim files do); they are resolved once everything is read.
 *
 * Rates: the text in the comment ("4xHDR", as ibnetdiscover prints it) wins;
 * otherwise the codes: w= is a LinkWidth bit mask (1 1x, 2 4x, 4 8x, 8 12x,
 * 16 2x; the widest bit counts, as ibsim does), s= a LinkSpeed mask (1 SDR,
 * 2 DDR, 4 QDR) and e= a LinkSpeedExt mask (1 FDR, 2 EDR, 4 HDR, 8 NDR),
 * IBA vol. 1 §14.2.5.6 PortInfo. The text wins because ibnetdiscover -f
 * prints LinkSpeedActive as s= even on HDR links (s=1 next to "4xHDR"), and
 * FDR10 has no code at all. Codes are still checked for garbage.
 *
 * Left out: ibsim's '@' port aliases and `module` name prefixes (refused
 * with a message), ibnetdiscover -g chassis grouping, cable lengths.
 *
 * Every error is "file:line:col: what was expected". Input is untrusted:
 * any byte sequence either loads or gives a diagnostic (tests/unit fuzz it).
 */
#include "topologies/topo.h"
#include "models/server/server.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_file.h"

#define ID_MAX 1024		/* node ids and descriptions, with the NUL */
#define FILE_MAX (256u << 20)	/* refuse to slurp more than 256 MiB */

struct ctx {
	struct net *n;
	struct sim_diag *d;
	char *stack[TOPO_MAX_INCLUDE_DEPTH + 1];	/* canonical paths being read */
	int depth;
	uint8_t g_lanes, g_speed;	/* ibsim `width` / `speed` globals */
};

struct ps {
	struct ctx *c;
	const char *file;	/* as reported (stored in net->files) */
	int line;
	const char *ls, *le;	/* current line [ls, le) */
	const char *p;		/* cursor */
	int cur;		/* node whose port lines follow, -1: none */
	uint64_t guid;		/* from the last *guid= line, for the next node */
};

/* Codes and rates gathered from one port line. */
struct rate_bits {
	uint8_t t_lanes, t_speed;	/* from the "4xHDR" text */
	uint8_t w_lanes, s_speed, e_speed;	/* from w= s= e= */
};

/* ---- small lexing helpers ---------------------------------------------- */

static int col(const struct ps *s, const char *at)
{
	return (int)(at - s->ls) + 1;
}

static int perr(struct ps *s, const char *at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int perr(struct ps *s, const char *at, const char *fmt, ...)
{
	char msg[sizeof(s->c->d->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return sim_diag_set(s->c->d, s->file, s->line, at ? col(s, at) : 0,
			    "%s", msg);
}

/*
 * The token at `at`, quoted for a message: at least one character, then up
 * to white space or punctuation of the format ("[x]" gives 'x').
 * Non-printables escaped, long tokens cut.
 */
static const char *got(const struct ps *s, const char *at, char *buf,
		       unsigned len)
{
	unsigned k = 0;

	if (at >= s->le)
		return "end of line";
	if (*at == ' ' || *at == '\t')
		return "white space";
	buf[k++] = '\'';
	for (const char *q = at; q < s->le && !isspace((unsigned char)*q); q++) {
		unsigned char ch = (unsigned char)*q;

		if (q > at && ch && strchr("[]()\"#=", ch))
			break;
		if (k + 8 >= len || q - at >= 24) {
			k += snprintf(buf + k, len - k, "...");
			break;
		}
		if (ch < 0x20 || ch >= 0x7f)
			k += snprintf(buf + k, len - k, "\\x%02x", ch);
		else
			buf[k++] = (char)ch;
	}
	buf[k++] = '\'';
	buf[k] = 0;
	return buf;
}

static void skip_ws(struct ps *s)
{
	while (s->p < s->le && (*s->p == ' ' || *s->p == '\t'))
		s->p++;
}

static bool at_end(const struct ps *s)
{
	return s->p >= s->le;
}

/* Decimal digits; saturates at UINT64_MAX. false if there are none. */
static bool read_dec(struct ps *s, uint64_t *v)
{
	const char *st = s->p;
	uint64_t x = 0;

	while (s->p < s->le && isdigit((unsigned char)*s->p)) {
		unsigned dg = (unsigned)(*s->p++ - '0');

		x = x > (UINT64_MAX - dg) / 10 ? UINT64_MAX : x * 10 + dg;
	}
	*v = x;
	return s->p > st;
}

/* Hex digits without prefix (GUIDs in parentheses). */
static bool read_hex(struct ps *s, uint64_t *v, bool *overflow)
{
	const char *st = s->p;
	uint64_t x = 0;

	*overflow = false;
	while (s->p < s->le && isxdigit((unsigned char)*s->p)) {
		unsigned dg = isdigit((unsigned char)*s->p) ? (unsigned)(*s->p - '0') :
			(unsigned)(tolower((unsigned char)*s->p) - 'a' + 10);

		if (x >> 60)
			*overflow = true;
		x = (x << 4) | dg;
		s->p++;
	}
	*v = x;
	return s->p > st;
}

/* 0x-prefixed hex or decimal, as strtoul(.., 0) takes in ibsim. */
static bool read_num(struct ps *s, uint64_t *v, bool *overflow)
{
	if (s->le - s->p >= 2 && s->p[0] == '0' && (s->p[1] == 'x' || s->p[1] == 'X')) {
		s->p += 2;
		if (read_hex(s, v, overflow))
			return true;
		s->p -= 2;	/* "0x" alone: point at it */
		return false;
	}
	if (!read_dec(s, v))
		return false;
	*overflow = *v == UINT64_MAX;
	return true;
}

/* A "quoted" string into buf; the cursor is on the opening quote. */
static int read_quoted(struct ps *s, char *buf, size_t len, const char *what)
{
	const char *open = s->p, *q;
	char tmp[64];

	if (s->p >= s->le || *s->p != '"')
		return perr(s, s->p, "expected a quoted %s, got %s", what,
			    got(s, s->p, tmp, sizeof(tmp)));
	q = memchr(open + 1, '"', (size_t)(s->le - open - 1));
	if (!q)
		return perr(s, open, "unterminated quote in %s (no closing '\"' on this line)",
			    what);
	if ((size_t)(q - open - 1) >= len)
		return perr(s, open + 1, "%s too long (more than %zu bytes)", what,
			    len - 1);
	memcpy(buf, open + 1, (size_t)(q - open - 1));
	buf[q - open - 1] = 0;
	s->p = q + 1;
	return 0;
}

static bool word_is(const char *w, size_t wl, const char *kw)
{
	return strlen(kw) == wl && !memcmp(w, kw, wl);
}

/* ---- rates ------------------------------------------------------------- */

static uint8_t widest_of_mask(uint64_t m)
{
	/* Widest first: 12x (8), 8x (4), 4x (2), 2x (16), 1x (1). */
	static const struct { unsigned bit; uint8_t lanes; } order[] = {
		{ 8, 12 }, { 4, 8 }, { 2, 4 }, { 16, 2 }, { 1, 1 },
	};

	for (unsigned i = 0; i < SIM_ARRAY_SIZE(order); i++)
		if (m & order[i].bit)
			return order[i].lanes;
	return 0;
}

static uint8_t fastest_of_mask(uint64_t m, bool ext)
{
	for (unsigned bit = ext ? 8 : 4; bit; bit >>= 1)
		if (m & bit)
			return (uint8_t)(ext ? link_speed_from_ext_code(bit) :
					 link_speed_from_code(bit));
	return LINK_SPEED_NONE;
}

int topo_rate_parse(const char *str, struct link_rate *r)
{
	const char *x = strpbrk(str, "xX");
	char wbuf[8];
	int lanes;
	enum link_speed sp;

	if (!x || x == str || (size_t)(x - str) >= sizeof(wbuf))
		return -1;
	memcpy(wbuf, str, (size_t)(x - str));
	wbuf[x - str] = 0;
	for (const char *q = wbuf; *q; q++)
		if (!isdigit((unsigned char)*q))
			return -1;
	lanes = link_width_parse(wbuf);
	sp = link_speed_parse(x + 1);
	if (!lanes || sp == LINK_SPEED_NONE)
		return -1;
	r->lanes = (uint8_t)lanes;
	r->speed = (uint8_t)sp;
	return 0;
}

/*
 * A rate token in a comment: "4xHDR", or with ibnetdiscover's unknown
 * markers "4x???" (speed unknown) and "??HDR" (width unknown). Returns 1 if
 * the token is one (filled), 0 if it is not a rate at all, -1 if it looks
 * like a rate but is not a valid one.
 */
static int rate_token(const char *t, size_t tl, struct rate_bits *rb)
{
	bool no_width = tl >= 2 && t[0] == '?' && t[1] == '?', qmarks = true;
	enum link_speed speed = LINK_SPEED_NONE;
	char buf[32];
	size_t wl = 0, sl;
	const char *sp;
	int lanes = 0;

	if (no_width) {
		sp = t + 2;
	} else {
		while (wl < tl && isdigit((unsigned char)t[wl]))
			wl++;
		if (!wl || wl + 1 >= tl || (t[wl] != 'x' && t[wl] != 'X'))
			return 0;	/* "4x" alone, "12", prose */
		if (wl >= sizeof(buf))
			return -1;
		memcpy(buf, t, wl);
		buf[wl] = 0;
		lanes = link_width_parse(buf);
		if (!lanes)
			return -1;
		sp = t + wl + 1;
	}
	sl = tl - (size_t)(sp - t);
	for (size_t i = 0; i < sl; i++)
		qmarks &= sp[i] == '?';
	if (!qmarks) {
		/* "??" + something that is not a speed is someone's prose */
		if (sl >= sizeof(buf))
			return no_width ? 0 : -1;
		memcpy(buf, sp, sl);
		buf[sl] = 0;
		speed = link_speed_parse(buf);
		if (speed == LINK_SPEED_NONE)
			return no_width ? 0 : -1;
	} else if (no_width) {
		return 0;	/* "??" or "?????": nothing known */
	}
	rb->t_lanes = (uint8_t)lanes;
	rb->t_speed = (uint8_t)speed;
	return 1;
}

/*
 * key=value port option (w, s, e, v) at the cursor. in_comment: unknown
 * keys are someone's prose, not an error.
 */
static int port_option(struct ps *s, struct rate_bits *rb, bool in_comment)
{
	const char *k = s->p, *vp;
	uint64_t v;
	bool ovf;
	char tmp[64];

	s->p += 2;		/* "k=" */
	vp = s->p;
	if (*k != 'w' && *k != 's' && *k != 'e' && *k != 'v') {
		if (in_comment)
			return 0;
		return perr(s, k, "unknown port option '%c=' (expected w=, s= or e=)", *k);
	}
	if (!read_num(s, &v, &ovf) ||
	    (s->p < s->le && !isspace((unsigned char)*s->p))) {
		if (in_comment) {	/* "e= beats s=" is prose, not a code */
			while (s->p < s->le && !isspace((unsigned char)*s->p))
				s->p++;
			return 0;
		}
		return perr(s, vp, "expected a number after '%c=', got %s", *k,
			    got(s, vp, tmp, sizeof(tmp)));
	}
	switch (*k) {
	case 'w':
		if (ovf || v < 1 || v > 31)
			return perr(s, vp, "bad width code w=%s (a LinkWidth bit mask 1..31: 1=1x 2=4x 4=8x 8=12x 16=2x)",
				    got(s, vp, tmp, sizeof(tmp)));
		rb->w_lanes = widest_of_mask(v);
		break;
	case 's':
		if (ovf || v < 1 || v > 7)
			return perr(s, vp, "bad speed code s=%s (a LinkSpeed bit mask 1..7: 1=SDR 2=DDR 4=QDR)",
				    got(s, vp, tmp, sizeof(tmp)));
		rb->s_speed = fastest_of_mask(v, false);
		break;
	case 'e':
		if (ovf || v > 15)
			return perr(s, vp, "bad extended speed code e=%s (a LinkSpeedExt bit mask 0..15: 1=FDR 2=EDR 4=HDR 8=NDR)",
				    got(s, vp, tmp, sizeof(tmp)));
		rb->e_speed = fastest_of_mask(v, true);
		break;
	default:		/* v=: VL capability, not modelled here */
		if (ovf || v > 15)
			return perr(s, vp, "bad VL capability v=%s (0..15)",
				    got(s, vp, tmp, sizeof(tmp)));
		break;
	}
	return 0;
}

static bool is_option(const struct ps *s)
{
	return s->le - s->p >= 2 && isalpha((unsigned char)s->p[0]) && s->p[1] == '=';
}

/* ---- comments ---------------------------------------------------------- */

/* The token at the cursor (up to white space); advances past it. */
static size_t token(struct ps *s, const char **t)
{
	*t = s->p;
	while (s->p < s->le && !isspace((unsigned char)*s->p))
		s->p++;
	return (size_t)(s->p - *t);
}

/* "lid N" / "lmc N" numbers in comments: tolerant, 0 when malformed. */
static unsigned comment_num(struct ps *s)
{
	uint64_t v;

	skip_ws(s);
	if (!read_dec(s, &v) || (s->p < s->le && !isspace((unsigned char)*s->p)))
		return 0;
	return v > 0xffff ? 0 : (unsigned)v;
}

/*
 * Header comment: `# "desc" base port 0 lid N lmc M`. Without quotes, ibsim
 * takes the text up to " base port", " enhanced port", " lid " or " lmc ".
 */
static int header_comment(struct ps *s, char *desc, unsigned *lid, unsigned *lmc)
{
	static const char *const stops[] = { " enhanced port", " base port",
					     " lid ", " lmc " };
	const char *q;

	s->p++;			/* '#' */
	skip_ws(s);
	desc[0] = 0;
	if (s->p < s->le && *s->p == '"') {
		if (read_quoted(s, desc, ID_MAX, "node description"))
			return -1;
	} else {
		const char *e = s->le;
		size_t l;

		for (unsigned i = 0; i < SIM_ARRAY_SIZE(stops); i++) {
			size_t sl = strlen(stops[i]);

			/* from the blank before the text: "# lid 3" has no desc */
			for (const char *x = s->p - 1; x + sl <= e; x++)
				if (!memcmp(x, stops[i], sl)) {
					e = x;
					break;
				}
		}
		if (e < s->p)
			e = s->p;
		l = (size_t)(e - s->p);
		while (l && isspace((unsigned char)s->p[l - 1]))
			l--;
		q = memchr(s->p, '"', l);
		if (q)
			return perr(s, q, "unexpected '\"' in an unquoted node description (quote all of it)");
		if (l >= ID_MAX)
			l = ID_MAX - 1;
		memcpy(desc, s->p, l);
		desc[l] = 0;
		s->p = e;
	}
	while (!at_end(s)) {
		const char *t;
		size_t tl;

		skip_ws(s);
		tl = token(s, &t);
		if (word_is(t, tl, "lid"))
			*lid = comment_num(s);
		else if (word_is(t, tl, "lmc"))
			*lmc = comment_num(s);
	}
	if (*lmc > 7)		/* LMC is 3 bits (IBA 14.2.5.6) */
		*lmc = 0;
	return 0;
}

/*
 * Port line comment. Switch: `# "desc" lid N 4xHDR [s= w= v= e=]` (the LID
 * is the remote's). CA: `# lid N lmc M "desc" lid N 4xHDR ...`: the LID
 * before the quoted description is this port's own.
 */
static int port_comment(struct ps *s, bool own_lid_first, struct rate_bits *rb,
			unsigned *lid, unsigned *lmc)
{
	bool seen_desc = false;
	char tmp[64], dbuf[ID_MAX];

	s->p++;			/* '#' */
	for (;;) {
		const char *t;
		size_t tl;
		int r;

		skip_ws(s);
		if (at_end(s))
			return 0;
		if (*s->p == '"') {
			if (read_quoted(s, dbuf, sizeof(dbuf), "remote node description"))
				return -1;
			seen_desc = true;
			continue;
		}
		if (is_option(s)) {
			if (port_option(s, rb, true))
				return -1;
			continue;
		}
		tl = token(s, &t);
		if (word_is(t, tl, "lid")) {
			unsigned v = comment_num(s);

			if (own_lid_first && !seen_desc)
				*lid = v;
		} else if (word_is(t, tl, "lmc")) {
			unsigned v = comment_num(s);

			if (own_lid_first && !seen_desc && v <= 7)
				*lmc = v;
		} else if ((r = rate_token(t, tl, rb)) < 0) {
			return perr(s, t, "bad link rate %s (expected width x speed, e.g. 4xHDR)",
				    got(s, t, tmp, sizeof(tmp)));
		}
	}
}

/* ---- node headers and port lines -------------------------------------- */

static int node_header(struct ps *s, enum net_node_type type, const char *kw)
{
	struct net *n = s->c->n;
	char id[ID_MAX], desc[ID_MAX] = "", tmp[64];
	const char *np, *idp;
	struct net_node *nd;
	unsigned lid = 0, lmc = 0;
	uint64_t nports;
	int idx;

	skip_ws(s);
	np = s->p;
	if (!read_dec(s, &nports))
		return perr(s, np, "expected a port count after '%s', got %s", kw,
			    got(s, np, tmp, sizeof(tmp)));
	if (nports < 1 || nports > NET_MAX_PORTS)
		return perr(s, np, "port count %s out of range 1..%d",
			    got(s, np, tmp, sizeof(tmp)), NET_MAX_PORTS);
	if (s->p < s->le && !isspace((unsigned char)*s->p))
		return perr(s, np, "expected a port count after '%s', got %s", kw,
			    got(s, np, tmp, sizeof(tmp)));
	skip_ws(s);
	idp = s->p;
	if (read_quoted(s, id, sizeof(id), "node id"))
		return -1;
	if (!id[0])
		return perr(s, idp, "empty node id");
	skip_ws(s);
	if (!at_end(s)) {
		if (*s->p != '#')
			return perr(s, s->p, "unexpected %s after the node id (comments start with '#')",
				    got(s, s->p, tmp, sizeof(tmp)));
		if (header_comment(s, desc, &lid, &lmc))
			return -1;
	}
	idx = net_add_node(n, type, (int)nports, id, desc, s->c->d);
	if (idx < 0) {
		s->c->d->line = s->line;
		s->c->d->col = col(s, idp);
		snprintf(s->c->d->file, sizeof(s->c->d->file), "%s", s->file);
		return -1;
	}
	nd = &n->nodes[idx];
	nd->file = s->file;
	nd->line = s->line;
	nd->guid = s->guid;
	if (type == NET_SWITCH) {
		nd->lid = (net_lid_t)lid;
		nd->lmc = (uint8_t)lmc;
		nd->ports[0].guid = s->guid;
	}
	s->guid = 0;
	s->cur = idx;
	return 0;
}

static int port_line(struct ps *s)
{
	struct net *n = s->c->n;
	struct net_node *nd = &n->nodes[s->cur];
	struct rate_bits rb = { 0 };
	char rid[ID_MAX], tmp[64];
	const char *pp, *rp_at, *ridp;
	uint64_t port, rport = 1, guid = 0;
	unsigned lid = 0, lmc = 0;
	bool ovf, has_guid = false;
	uint8_t lanes, speed;

	s->p++;			/* '[' */
	pp = s->p;
	if (!read_dec(s, &port))
		return perr(s, pp, "expected a port number in brackets, got %s",
			    got(s, pp, tmp, sizeof(tmp)));
	if (port < 1 || port > (uint64_t)nd->nports)
		return perr(s, pp, "port number %s out of range 1..%d for \"%s\"%s",
			    got(s, pp, tmp, sizeof(tmp)), nd->nports, nd->id,
			    port == 0 ? " (port 0 is the switch's management port)" : "");
	if (at_end(s) || *s->p != ']')
		return perr(s, s->p, "expected ']' after the port number, got %s",
			    got(s, s->p, tmp, sizeof(tmp)));
	s->p++;
	if (!at_end(s) && *s->p == '(') {
		const char *g = ++s->p;

		if (!read_hex(s, &guid, &ovf) || ovf || at_end(s) || *s->p != ')')
			return perr(s, g, "expected a hex port GUID in parentheses, got %s",
				    got(s, g, tmp, sizeof(tmp)));
		s->p++;
		has_guid = true;
	}
	skip_ws(s);
	ridp = s->p;
	if (!at_end(s) && *s->p != '"')
		return perr(s, s->p, "expected a quoted remote node id after [%" PRIu64 "], got %s",
			    port, got(s, s->p, tmp, sizeof(tmp)));
	if (read_quoted(s, rid, sizeof(rid), "remote node id"))
		return -1;
	if (!rid[0])
		return perr(s, ridp, "empty remote node id");
	if (!at_end(s) && *s->p == '[') {
		rp_at = ++s->p;
		if (!read_dec(s, &rport))
			return perr(s, rp_at, "expected a remote port number in brackets, got %s",
				    got(s, rp_at, tmp, sizeof(tmp)));
		if (rport < 1 || rport > NET_MAX_PORTS)
			return perr(s, rp_at, "remote port number %s out of range 1..%d",
				    got(s, rp_at, tmp, sizeof(tmp)), NET_MAX_PORTS);
		if (at_end(s) || *s->p != ']')
			return perr(s, s->p, "expected ']' after the remote port number, got %s",
				    got(s, s->p, tmp, sizeof(tmp)));
		s->p++;
	}
	if (!at_end(s) && *s->p == '(') {
		const char *g = ++s->p;
		uint64_t rg;

		if (!read_hex(s, &rg, &ovf) || ovf || at_end(s) || *s->p != ')')
			return perr(s, g, "expected a hex port GUID in parentheses, got %s",
				    got(s, g, tmp, sizeof(tmp)));
		s->p++;
	}
	for (;;) {
		skip_ws(s);
		if (at_end(s))
			break;
		if (*s->p == '#') {
			if (port_comment(s, nd->type != NET_SWITCH, &rb, &lid, &lmc))
				return -1;
			break;
		}
		if (!is_option(s))
			return perr(s, s->p, "unexpected %s after the remote port (expected w=, s=, e= or a '#' comment)",
				    got(s, s->p, tmp, sizeof(tmp)));
		if (port_option(s, &rb, false))
			return -1;
	}

	lanes = rb.t_lanes ? rb.t_lanes : rb.w_lanes ? rb.w_lanes : s->c->g_lanes;
	speed = rb.t_speed ? rb.t_speed : rb.e_speed ? rb.e_speed :
		rb.s_speed ? rb.s_speed : s->c->g_speed;
	if (has_guid)
		nd->ports[port].guid = guid;
	if (nd->type != NET_SWITCH) {
		nd->ports[port].lid = (net_lid_t)lid;
		if (lmc)
			nd->lmc = (uint8_t)lmc;
	}
	return net_refer(n, s->cur, (int)port, rid, (int)rport, lanes, speed,
			 s->file, s->line, col(s, ridp), s->c->d);
}

/* ---- directives -------------------------------------------------------- */

/* key=value (or key+value, ibsim's relative GUID base) with a number. */
static int kv_number(struct ps *s, const char *kw, uint64_t *v, bool guid_paren)
{
	char tmp[64];
	const char *vp;
	bool ovf;

	skip_ws(s);
	if (at_end(s) || (*s->p != '=' && *s->p != '+'))
		return perr(s, s->p, "expected '=' after '%s', got %s", kw,
			    got(s, s->p, tmp, sizeof(tmp)));
	s->p++;
	skip_ws(s);
	vp = s->p;
	if (!read_num(s, v, &ovf) || ovf)
		return perr(s, vp, "expected a number after '%s=', got %s", kw,
			    got(s, vp, tmp, sizeof(tmp)));
	if (guid_paren && !at_end(s) && *s->p == '(') {
		const char *g = ++s->p;
		uint64_t pg;

		if (!read_hex(s, &pg, &ovf) || ovf || at_end(s) || *s->p != ')')
			return perr(s, g, "expected a hex GUID in parentheses, got %s",
				    got(s, g, tmp, sizeof(tmp)));
		s->p++;
	}
	skip_ws(s);
	if (!at_end(s) && *s->p != '#')
		return perr(s, s->p, "unexpected %s after the value of '%s'",
			    got(s, s->p, tmp, sizeof(tmp)), kw);
	return 0;
}

static int parse_buffer(struct ctx *c, const char *file, const char *buf,
			size_t len);

static int include_file(struct ps *s)
{
	struct ctx *c = s->c;
	char name[PATH_MAX], path[PATH_MAX * 2], tmp[64], why[128];
	const char *np, *slash, *stored;
	char *canon, *buf;
	size_t len;
	int err, rc;

	skip_ws(s);
	np = s->p;
	if (!at_end(s) && *s->p == '"') {
		if (read_quoted(s, name, sizeof(name), "include file name"))
			return -1;
	} else {
		const char *t;
		size_t tl = token(s, &t);

		if (tl >= sizeof(name))
			return perr(s, np, "include file name too long");
		memcpy(name, t, tl);
		name[tl] = 0;
	}
	if (!name[0])
		return perr(s, np, "expected a file name after 'include', got %s",
			    got(s, np, tmp, sizeof(tmp)));
	skip_ws(s);
	if (!at_end(s) && *s->p != '#')
		return perr(s, s->p, "unexpected %s after the include file name",
			    got(s, s->p, tmp, sizeof(tmp)));
	slash = strrchr(s->file, '/');
	if (name[0] == '/' || !slash)
		snprintf(path, sizeof(path), "%s", name);
	else
		snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - s->file),
			 s->file, name);
	if (c->depth >= TOPO_MAX_INCLUDE_DEPTH)
		return perr(s, np, "includes nested too deeply (more than %d levels)",
			    TOPO_MAX_INCLUDE_DEPTH);
	canon = realpath(path, NULL);
	if (!canon)
		return perr(s, np, "include file not found: cannot open '%s': %s",
			    path, strerror(errno));
	for (int i = 0; i < c->depth; i++)
		if (!strcmp(c->stack[i], canon)) {
			free(canon);
			return perr(s, np, "include loop: '%s' is already being read",
				    path);
		}
	err = sim_read_file(path, FILE_MAX, &buf, &len);
	if (err) {
		free(canon);
		return perr(s, np, "include file '%s': %s", path,
			    sim_read_error(err, FILE_MAX, why, sizeof(why)));
	}
	stored = net_add_file(c->n, path);
	if (!stored) {
		free(canon);
		free(buf);
		return perr(s, np, "out of memory");
	}
	c->stack[c->depth++] = canon;
	rc = parse_buffer(c, stored, buf, len);
	free(c->stack[--c->depth]);
	free(buf);
	return rc;
}

/* ibsim's `width=<mask>` / `speed=<mask>`: defaults for the ports after it. */
static int global_rate(struct ps *s, bool width)
{
	const char *kw = width ? "width" : "speed", *vp;
	char tmp[64];
	uint64_t v;
	bool ovf;

	skip_ws(s);
	if (at_end(s) || *s->p != '=')
		return perr(s, s->p, "expected '=' after '%s', got %s", kw,
			    got(s, s->p, tmp, sizeof(tmp)));
	s->p++;
	skip_ws(s);
	vp = s->p;
	if (!read_num(s, &v, &ovf) || ovf)
		return perr(s, vp, "expected a number after '%s=', got %s", kw,
			    got(s, vp, tmp, sizeof(tmp)));
	if (width && (v < 1 || v > 31))
		return perr(s, vp, "bad width code %" PRIu64 " (a LinkWidth bit mask 1..31)", v);
	if (!width && (v < 1 || v > 7))
		return perr(s, vp, "bad speed code %" PRIu64 " (a LinkSpeed bit mask 1..7)", v);
	if (width)
		s->c->g_lanes = widest_of_mask(v);
	else
		s->c->g_speed = fastest_of_mask(v, false);
	skip_ws(s);
	if (!at_end(s) && *s->p != '#')
		return perr(s, s->p, "unexpected %s after the value of '%s'",
			    got(s, s->p, tmp, sizeof(tmp)), kw);
	return 0;
}

static int directive(struct ps *s)
{
	const char *w = s->p, *after;
	size_t wl;
	uint64_t v;
	char tmp[64];

	while (s->p < s->le && (isalnum((unsigned char)*s->p) || *s->p == '_'))
		s->p++;
	wl = (size_t)(s->p - w);
	if (!wl || !isalpha((unsigned char)*w))
		return perr(s, w, "expected a node header (Switch, Hca, Ca, Rt), a port line '[n] ...' or a directive, got %s",
			    got(s, w, tmp, sizeof(tmp)));
	s->cur = -1;		/* anything but a port line ends a node's list */
	if (word_is(w, wl, "Switch"))
		return node_header(s, NET_SWITCH, "Switch");
	if (word_is(w, wl, "Hca") || word_is(w, wl, "Ca"))
		return node_header(s, NET_CA, wl == 3 ? "Hca" : "Ca");
	if (word_is(w, wl, "Rt"))
		return node_header(s, NET_ROUTER, "Rt");
	if (word_is(w, wl, "vendid") || word_is(w, wl, "devid") ||
	    word_is(w, wl, "sysimgguid"))
		return kv_number(s, word_is(w, wl, "vendid") ? "vendid" :
				 word_is(w, wl, "devid") ? "devid" : "sysimgguid",
				 &v, false);
	if (word_is(w, wl, "switchguid") || word_is(w, wl, "caguid") ||
	    word_is(w, wl, "hcaguids") || word_is(w, wl, "rtguid")) {
		char kw[16];

		memcpy(kw, w, wl);
		kw[wl] = 0;
		if (kv_number(s, kw, &v, true))
			return -1;
		s->guid = v;
		return 0;
	}
	if (word_is(w, wl, "width") || word_is(w, wl, "speed"))
		return global_rate(s, *w == 'w');
	if (word_is(w, wl, "include"))
		return include_file(s);
	if (word_is(w, wl, "do") || word_is(w, wl, "pdebug"))
		return 0;	/* ibsim console commands / its parser's debug flag */
	if (word_is(w, wl, "module"))
		return perr(s, w, "ibsim 'module' name prefixes are not supported");
	after = s->p;
	while (after < s->le && (*after == ' ' || *after == '\t'))
		after++;
	if (after > s->p && after < s->le && isdigit((unsigned char)*after))
		return perr(s, w, "unknown node type %s (expected Switch, Hca, Ca or Rt)",
			    got(s, w, tmp, sizeof(tmp)));
	return perr(s, w, "unknown directive %s (expected a node header, a port line, a GUID line, include or do)",
		    got(s, w, tmp, sizeof(tmp)));
}

/* ---- the line loop ----------------------------------------------------- */


/*
 * A comment, or the one directive a comment may carry: "# ibfab:
 * server=NAME" names the GPU servers the hosts belong to (a models/server
 * preset; docs/servers.md), which other tools read as a comment.
 */
static int comment(struct ps *s)
{
	static const char tag[] = "ibfab:";
	const char *p = s->p + 1, *v;
	size_t n;

	while (p < s->le && (*p == ' ' || *p == '\t'))
		p++;
	if ((size_t)(s->le - p) < sizeof(tag) - 1 || memcmp(p, tag, sizeof(tag) - 1))
		return 0;
	p += sizeof(tag) - 1;
	while (p < s->le && (*p == ' ' || *p == '\t'))
		p++;
	if ((size_t)(s->le - p) < 7 || memcmp(p, "server=", 7))
		return perr(s, p, "unknown ibfab directive (expected '# ibfab: server=NAME')");
	v = p + 7;
	n = 0;
	while (v + n < s->le && v[n] != ' ' && v[n] != '\t')
		n++;
	char name[sizeof(s->c->n->server)] = "";

	if (n && n < sizeof(name))
		memcpy(name, v, n);
	if (!n || n >= sizeof(name) || !srv_preset_find(name))
		return perr(s, v, "unknown server '%.*s' (expected dgx-a100, dgx-h100 or gb200-nvl72)",
			    (int)n, v);
	if (s->c->n->server[0] && strcmp(s->c->n->server, name))
		return perr(s, v, "server=%s, but an earlier line said server=%s", name,
			    s->c->n->server);
	memcpy(s->c->n->server, name, sizeof(name));
	return 0;
}

static int parse_line(struct ps *s)
{
	for (const char *q = s->ls; q < s->le; q++) {
		unsigned char ch = (unsigned char)*q;

		if (ch == 0)
			return perr(s, q, "binary data: NUL byte (not a topology file?)");
		if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
			return perr(s, q, "unexpected control character 0x%02x (not a topology file?)",
				    ch);
	}
	s->p = s->ls;
	skip_ws(s);
	if (at_end(s)) {
		s->cur = -1;	/* a blank line ends a node's port list */
		return 0;
	}
	if (*s->p == '#')
		return comment(s);
	if (*s->p == '[') {
		if (s->cur < 0)
			return perr(s, s->p, "port line outside a node block (a blank line or a directive ends a node's port list)");
		return port_line(s);
	}
	if (*s->p == '@')
		return perr(s, s->p, "ibsim port aliases ('@') are not supported");
	return directive(s);
}

static int parse_buffer(struct ctx *c, const char *file, const char *buf,
			size_t len)
{
	struct ps s = { .c = c, .file = file, .cur = -1 };
	const char *p = buf, *end = buf + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;

		s.line++;
		s.ls = p;
		s.le = le;
		if (le > p && le[-1] == '\r')
			s.le--;
		if (s.line == INT_MAX)
			return perr(&s, NULL, "too many lines");
		if (parse_line(&s))
			return -1;
		p = nl ? nl + 1 : end;
	}
	return 0;
}

/*
 * A file that gives no GUID at all (an ibsim net file, as written by
 * hand) gets the ones ibsim gives its nodes (ibsim/sim_net.c): in the
 * order the nodes are declared, a CA takes the next of 0x100000, 0x100001,
 * ... as its node GUID, its port p the node GUID + p, and reserves its
 * ports + 1 of them; a switch takes the next of 0x200000, ... for itself
 * and its port 0. OpenSM then sees the same fabric through ibsim as ibfab
 * reads from the file: its LIDs (by port GUID) and tables can be compared.
 */
static void ibsim_guids(struct net *n)
{
	uint64_t ca = 0x100000, sw = 0x200000;

	for (int i = 0; i < n->nnodes; i++) {
		const struct net_node *nd = &n->nodes[i];

		if (nd->guid)
			return;
		for (int p = 0; p <= nd->nports; p++)
			if (nd->ports[p].guid)
				return;
	}
	for (int i = 0; i < n->nnodes; i++) {
		struct net_node *nd = &n->nodes[i];

		if (nd->type == NET_SWITCH) {
			nd->guid = nd->ports[0].guid = sw++;
		} else if (nd->type == NET_CA) {
			nd->guid = ca;
			for (int p = 1; p <= nd->nports; p++)
				nd->ports[p].guid = ca + (uint64_t)p;
			ca += (uint64_t)nd->nports + 1;
		}
	}
}

static int load(const char *buf, size_t len, const char *name, char *canon,
		struct net *out, struct sim_diag *d)
{
	struct ctx c = { .n = out, .d = d };
	const char *stored;
	int rc;

	net_init(out);
	sim_diag_clear(d);
	stored = net_add_file(out, name);
	if (!stored) {
		free(canon);
		return sim_diag_set(d, name, 0, 0, "out of memory");
	}
	c.stack[c.depth++] = canon ? canon : strdup(name);
	rc = parse_buffer(&c, stored, buf, len);
	free(c.stack[0]);
	if (!rc && out->nnodes == 0)
		rc = sim_diag_set(d, stored, 0, 0,
				  "no nodes: expected at least one 'Switch', 'Ca' or 'Hca' header (empty topology)");
	if (!rc) {
		ibsim_guids(out);
		rc = net_validate(out, d);
	}
	if (rc)
		net_free(out);
	return rc;
}

int topo_load_buffer(const char *buf, size_t len, const char *name,
		     struct net *out, struct sim_diag *d)
{
	return load(buf, len, name ? name : "<string>",
		    name ? realpath(name, NULL) : NULL, out, d);
}

int topo_load_string(const char *text, const char *name, struct net *out,
		     struct sim_diag *d)
{
	return topo_load_buffer(text, strlen(text), name, out, d);
}

int topo_load(const char *path, struct net *out, struct sim_diag *d)
{
	char *buf, why[128];
	size_t len;
	int err, rc;

	net_init(out);
	err = sim_read_file(path, FILE_MAX, &buf, &len);
	if (err)
		return sim_diag_set(d, path, 0, 0, "%s",
				    sim_read_error(err, FILE_MAX, why, sizeof(why)));
	rc = load(buf, len, path, realpath(path, NULL), out, d);
	free(buf);
	return rc;
}

/* ---- writing ----------------------------------------------------------- */

static const char *type_kw(enum net_node_type t)
{
	return t == NET_SWITCH ? "Switch" : t == NET_ROUTER ? "Rt" : "Ca";
}

/* Text and ibnetdiscover -f codes for a port's rate, leading space. */
static void rate_text(const struct net_port *pp, char *buf, unsigned len)
{
	static const uint8_t wcode[13] = { [1] = 1, [2] = 16, [4] = 2, [8] = 4, [12] = 8 };
	unsigned k = 0;
	unsigned s_code = 0, e_code = 0;

	buf[0] = 0;
	switch (pp->speed) {
	case LINK_SDR: s_code = 1; break;
	case LINK_DDR: s_code = 2; break;
	case LINK_QDR: case LINK_FDR10: s_code = 4; break;
	case LINK_FDR: s_code = 4; e_code = 1; break;
	case LINK_EDR: s_code = 4; e_code = 2; break;
	case LINK_HDR: s_code = 4; e_code = 4; break;
	case LINK_NDR: s_code = 4; break;	/* no e=: see below */
	default: break;	/* none, or XDR (LinkSpeedExt2: no code) */
	/* NDR's LinkSpeedExt bit (8) is refused by Debian's ibsim 0.10 ("bad
	 * extended speed 8"), which would not load the file; the text rate
	 * (4xNDR) carries the speed for ibfab and for readers. ibsim warns
	 * about that text ("invalid speed") and runs the link at the s= rate,
	 * which only matters to ibsim. */
	}
	if (pp->lanes && pp->speed)
		k += snprintf(buf + k, len - k, " %ux%s", pp->lanes,
			      link_speed_info(pp->speed)->name);
	else if (pp->lanes)
		k += snprintf(buf + k, len - k, " %ux???", pp->lanes);
	else if (pp->speed)
		k += snprintf(buf + k, len - k, " ??%s",
			      link_speed_info(pp->speed)->name);
	if (s_code && k < len)
		k += snprintf(buf + k, len - k, " s=%u", s_code);
	if (pp->lanes <= 12 && wcode[pp->lanes] && k < len)
		k += snprintf(buf + k, len - k, " w=%u", wcode[pp->lanes]);
	if (e_code && k < len)
		snprintf(buf + k, len - k, " e=%u", e_code);
}

int topo_write_ibnd(const struct net *n, FILE *out)
{
	char rate[64];
	/* a fabric beyond InfiniBand's LIDs (Ethernet only) is written
	 * without them: the tools that read these files know 16-bit LIDs */
	bool lids = n->max_lid <= NET_LID_UCAST_MAX;

	if (n->server[0])	/* the GPU servers, read back by comment() */
		fprintf(out, "# ibfab: server=%s\n\n", n->server);
	for (int i = 0; i < n->nnodes; i++) {
		const struct net_node *nd = &n->nodes[i];

		if (nd->guid) {
			fprintf(out, "sysimgguid=0x%" PRIx64 "\n", nd->guid);
			if (nd->type == NET_SWITCH)
				fprintf(out, "switchguid=0x%" PRIx64 "(%" PRIx64 ")\n",
					nd->guid, nd->ports[0].guid ? nd->ports[0].guid : nd->guid);
			else
				fprintf(out, "%s=0x%" PRIx64 "\n",
					nd->type == NET_ROUTER ? "rtguid" : "caguid",
					nd->guid);
		}
		fprintf(out, "%s\t%d \"%s\"\t\t# \"%s\"", type_kw(nd->type),
			nd->nports, nd->id, nd->desc);
		if (nd->type == NET_SWITCH && lids)
			fprintf(out, " base port 0 lid %u lmc %u", nd->lid, nd->lmc);
		fputc('\n', out);
		for (int p = 1; p <= nd->nports; p++) {
			const struct net_port *pp = &nd->ports[p];
			const struct net_node *rn;
			const struct net_port *rp;

			if (pp->remote_node < 0)
				continue;
			rn = &n->nodes[pp->remote_node];
			rp = &rn->ports[pp->remote_port];
			rate_text(pp, rate, sizeof(rate));
			if (nd->type == NET_SWITCH) {
				fprintf(out, "[%d]\t\"%s\"[%d]", p, rn->id, pp->remote_port);
				if (rn->type != NET_SWITCH && rp->guid)
					fprintf(out, "(%" PRIx64 ") ", rp->guid);
				if (lids)
					fprintf(out, "\t\t# \"%s\" lid %u%s\n", rn->desc,
						net_lid_of(n, pp->remote_node, pp->remote_port),
						rate);
				else
					fprintf(out, "\t\t# \"%s\"%s\n", rn->desc, rate);
			} else {
				fprintf(out, "[%d]", p);
				if (pp->guid)
					fprintf(out, "(%" PRIx64 ") ", pp->guid);
				if (lids)
					fprintf(out, "\t\"%s\"[%d]\t\t# lid %u lmc %u \"%s\" lid %u%s\n",
						rn->id, pp->remote_port, pp->lid, nd->lmc,
						rn->desc,
						net_lid_of(n, pp->remote_node, pp->remote_port),
						rate);
				else
					fprintf(out, "\t\"%s\"[%d]\t\t# \"%s\"%s\n", rn->id,
						pp->remote_port, rn->desc, rate);
			}
		}
		fputc('\n', out);
	}
	return fflush(out) || ferror(out) ? -1 : 0;
}

/* ---- the canonical link list ------------------------------------------ */

struct end {
	const char *desc;
	int port;
};

struct cable {
	struct end a, b;
	int node, port;		/* for the rate */
};

static int end_cmp(const struct end *x, const struct end *y)
{
	int c = strcmp(x->desc, y->desc);

	return c ? c : (x->port > y->port) - (x->port < y->port);
}

static int cable_cmp(const void *x, const void *y)
{
	const struct cable *a = x, *b = y;
	int c = end_cmp(&a->a, &b->a);

	return c ? c : end_cmp(&a->b, &b->b);
}

const char *topo_rate_str(const struct net *n, int node, int port, char *buf,
			  unsigned len)
{
	const struct net_port *pp = &n->nodes[node].ports[port];

	if (pp->lanes && pp->speed)
		snprintf(buf, len, "%ux%s", pp->lanes, link_speed_info(pp->speed)->name);
	else if (pp->lanes)
		snprintf(buf, len, "%ux", pp->lanes);
	else if (pp->speed)
		snprintf(buf, len, "%s", link_speed_info(pp->speed)->name);
	else
		snprintf(buf, len, "-");
	return buf;
}

void topo_print_links(const struct net *n, FILE *out)
{
	int cnt = net_nlinks(n), k = 0;
	struct cable *v = malloc(sizeof(*v) * (cnt ? cnt : 1));
	char rate[32];

	if (!v) {
		fprintf(out, "# out of memory\n");
		return;
	}
	for (int i = 0; i < n->nnodes; i++) {
		const struct net_node *nd = &n->nodes[i];

		for (int p = 1; p <= nd->nports; p++) {
			int r = nd->ports[p].remote_node, rp = nd->ports[p].remote_port;
			struct cable c;

			if (!(r > i || (r == i && rp > p)) || k >= cnt)
				continue;
			c.a = (struct end){ nd->desc, p };
			c.b = (struct end){ n->nodes[r].desc, rp };
			if (end_cmp(&c.b, &c.a) < 0) {
				struct end t = c.a;

				c.a = c.b;
				c.b = t;
			}
			c.node = i;
			c.port = p;
			v[k++] = c;
		}
	}
	qsort(v, k, sizeof(*v), cable_cmp);
	for (int i = 0; i < k; i++)
		fprintf(out, "\"%s\"[%d] <-> \"%s\"[%d] %s\n", v[i].a.desc,
			v[i].a.port, v[i].b.desc, v[i].b.port,
			topo_rate_str(n, v[i].node, v[i].port, rate, sizeof(rate)));
	free(v);
}
