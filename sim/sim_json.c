/* SPDX-License-Identifier: MIT */
/*
 * sim_json.c - the streaming JSON writer behind `ibfab run --json` (see
 * sim_json.h for the contract). It keeps one bit of state per nesting level
 * (object or array, first element or not) and nothing else; the output is
 * RFC 8259 JSON in pure ASCII. Pretty-printing is optional and purely
 * cosmetic; both forms are deterministic.
 */
#include "sim/sim_json.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

void sim_json_init(struct sim_json *j, FILE *out, int indent)
{
	memset(j, 0, sizeof(*j));
	j->out = out;
	j->indent = indent;
}

static void newline(struct sim_json *j)
{
	if (!j->indent)
		return;
	fputc('\n', j->out);
	for (int i = 0; i < j->depth * j->indent; i++)
		fputc(' ', j->out);
}

/*
 * Called before every value: checks that a value may go here and writes the
 * separator. Returns false (and latches err) on misuse.
 */
static bool before_value(struct sim_json *j)
{
	if (j->err)
		return false;
	if (j->depth == 0) {
		if (j->done)	/* a second top-level value */
			return !(j->err = true);
		return true;
	}
	if (j->is_obj[j->depth - 1]) {
		if (!j->want_value)	/* value without a key */
			return !(j->err = true);
		j->want_value = false;
		return true;
	}
	if (j->nonempty[j->depth - 1])
		fputc(',', j->out);
	j->nonempty[j->depth - 1] = true;
	newline(j);
	return true;
}

static void after_value(struct sim_json *j)
{
	if (j->depth == 0)
		j->done = true;
}

static void begin(struct sim_json *j, bool obj)
{
	if (!before_value(j))
		return;
	if (j->depth == SIM_JSON_MAX_DEPTH) {
		j->err = true;
		return;
	}
	fputc(obj ? '{' : '[', j->out);
	j->is_obj[j->depth] = obj;
	j->nonempty[j->depth] = false;
	j->depth++;
}

static void end(struct sim_json *j, bool obj)
{
	if (j->err)
		return;
	if (!j->depth || j->is_obj[j->depth - 1] != obj || j->want_value) {
		j->err = true;
		return;
	}
	j->depth--;
	if (j->nonempty[j->depth])
		newline(j);
	fputc(obj ? '}' : ']', j->out);
	after_value(j);
}

void sim_json_obj_begin(struct sim_json *j) { begin(j, true); }
void sim_json_obj_end(struct sim_json *j) { end(j, true); }
void sim_json_arr_begin(struct sim_json *j) { begin(j, false); }
void sim_json_arr_end(struct sim_json *j) { end(j, false); }

void sim_json_key(struct sim_json *j, const char *key)
{
	if (j->err)
		return;
	if (!j->depth || !j->is_obj[j->depth - 1] || j->want_value || !key) {
		j->err = true;
		return;
	}
	if (j->nonempty[j->depth - 1])
		fputc(',', j->out);
	j->nonempty[j->depth - 1] = true;
	newline(j);
	sim_json_write_string(j->out, key);
	fputs(j->indent ? ": " : ":", j->out);
	j->want_value = true;
}

/*
 * Decode one UTF-8 sequence at s (n bytes left). Returns its length and the
 * code point in *cp, or 0 when the bytes are not well-formed UTF-8 (overlong
 * forms, surrogates and values above U+10FFFF are refused, as RFC 3629 says).
 */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	static const uint32_t min_cp[5] = { 0, 0, 0x80, 0x800, 0x10000 };
	size_t len;
	uint32_t c;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	} else if ((s[0] & 0xe0) == 0xc0) {
		len = 2;
		c = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3;
		c = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4;
		c = s[0] & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min_cp[len] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

void sim_json_write_string(FILE *out, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n = strlen(str);

	fputc('"', out);
	while (n) {
		uint32_t cp;
		size_t len = utf8_decode(s, n, &cp);

		if (!len) {		/* invalid byte: U+FFFD, resync on the next */
			cp = 0xfffd;
			len = 1;
		}
		s += len;
		n -= len;
		switch (cp) {
		case '"':  fputs("\\\"", out); continue;
		case '\\': fputs("\\\\", out); continue;
		case '\b': fputs("\\b", out); continue;
		case '\f': fputs("\\f", out); continue;
		case '\n': fputs("\\n", out); continue;
		case '\r': fputs("\\r", out); continue;
		case '\t': fputs("\\t", out); continue;
		}
		if (cp >= 0x20 && cp < 0x7f) {
			fputc((int)cp, out);
		} else if (cp < 0x10000) {
			fprintf(out, "\\u%04x", (unsigned)cp);
		} else {		/* UTF-16 surrogate pair */
			cp -= 0x10000;
			fprintf(out, "\\u%04x\\u%04x", 0xd800 + (unsigned)(cp >> 10),
				0xdc00 + (unsigned)(cp & 0x3ff));
		}
	}
	fputc('"', out);
}

void sim_json_str(struct sim_json *j, const char *s)
{
	if (!s) {
		sim_json_null(j);
		return;
	}
	if (!before_value(j))
		return;
	sim_json_write_string(j->out, s);
	after_value(j);
}

void sim_json_u64(struct sim_json *j, uint64_t v)
{
	if (!before_value(j))
		return;
	fprintf(j->out, "%" PRIu64, v);
	after_value(j);
}

void sim_json_i64(struct sim_json *j, int64_t v)
{
	if (!before_value(j))
		return;
	fprintf(j->out, "%" PRId64, v);
	after_value(j);
}

/*
 * "%.9g": 9 significant digits (a float's round-trip precision) are more
 * than any rate or fraction we report is known to, and stay readable (0.1
 * prints as 0.1, not 0.10000000000000001); exact values are integers. glibc's printf is correctly rounded, so the
 * same double always gives the same text. We never call setlocale(), so the
 * decimal point is '.'.
 */
void sim_json_double(struct sim_json *j, double v)
{
	if (!isfinite(v)) {
		sim_json_null(j);
		return;
	}
	if (!before_value(j))
		return;
	if (v == 0)
		v = 0;		/* no "-0" */
	fprintf(j->out, "%.9g", v);
	after_value(j);
}

void sim_json_bool(struct sim_json *j, bool v)
{
	if (!before_value(j))
		return;
	fputs(v ? "true" : "false", j->out);
	after_value(j);
}

void sim_json_null(struct sim_json *j)
{
	if (!before_value(j))
		return;
	fputs("null", j->out);
	after_value(j);
}

void sim_json_kstr(struct sim_json *j, const char *key, const char *s)
{
	sim_json_key(j, key);
	sim_json_str(j, s);
}

void sim_json_ku64(struct sim_json *j, const char *key, uint64_t v)
{
	sim_json_key(j, key);
	sim_json_u64(j, v);
}

void sim_json_ki64(struct sim_json *j, const char *key, int64_t v)
{
	sim_json_key(j, key);
	sim_json_i64(j, v);
}

void sim_json_kdouble(struct sim_json *j, const char *key, double v)
{
	sim_json_key(j, key);
	sim_json_double(j, v);
}

void sim_json_kbool(struct sim_json *j, const char *key, bool v)
{
	sim_json_key(j, key);
	sim_json_bool(j, v);
}

int sim_json_finish(struct sim_json *j)
{
	if (j->err || j->depth || !j->done)
		return -1;
	fputc('\n', j->out);
	return ferror(j->out) ? -1 : 0;
}
