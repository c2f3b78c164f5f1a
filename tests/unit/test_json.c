/* SPDX-License-Identifier: MIT */
/*
 * test_sim_json.c - the streaming JSON writer (tools/sim_json.c): escaping
 * of quotes, backslashes, control characters and non-ASCII (including
 * invalid UTF-8), nesting, deterministic doubles, misuse detection. Every
 * document written is also run through a small RFC 8259 validator below,
 * so "the output parses" is checked, not assumed.
 */
#include "tests/unit/test_main.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_json.h"
#include "tools/cli_report.h"

/* ---- a minimal validating JSON parser (accept/reject only) ---- */

struct vp {
	const char *s;
	int depth;
};

static bool v_value(struct vp *p);

static void v_ws(struct vp *p)
{
	while (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r')
		p->s++;
}

static bool v_lit(struct vp *p, const char *lit)
{
	size_t n = strlen(lit);

	if (strncmp(p->s, lit, n))
		return false;
	p->s += n;
	return true;
}

static bool v_string(struct vp *p)
{
	if (*p->s != '"')
		return false;
	p->s++;
	for (;;) {
		unsigned char c = (unsigned char)*p->s;

		if (c == '"') {
			p->s++;
			return true;
		}
		if (c < 0x20)		/* includes the terminating NUL */
			return false;
		if (c == '\\') {
			p->s++;
			if (*p->s == 'u') {
				for (int i = 1; i <= 4; i++)
					if (!strchr("0123456789abcdefABCDEF", p->s[i]) || !p->s[i])
						return false;
				p->s += 5;
				continue;
			}
			if (!*p->s || !strchr("\"\\/bfnrt", *p->s))
				return false;
		}
		p->s++;
	}
}

static bool v_number(struct vp *p)
{
	const char *s = p->s;

	if (*s == '-')
		s++;
	if (*s == '0')
		s++;
	else if (*s >= '1' && *s <= '9')
		while (*s >= '0' && *s <= '9')
			s++;
	else
		return false;
	if (*s == '.') {
		s++;
		if (!(*s >= '0' && *s <= '9'))
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (!(*s >= '0' && *s <= '9'))
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	p->s = s;
	return true;
}

static bool v_container(struct vp *p, char open, char close, bool obj)
{
	if (*p->s != open || ++p->depth > 64)
		return false;
	p->s++;
	v_ws(p);
	if (*p->s == close) {
		p->s++;
		p->depth--;
		return true;
	}
	for (;;) {
		v_ws(p);
		if (obj) {
			if (!v_string(p))
				return false;
			v_ws(p);
			if (*p->s++ != ':')
				return false;
		}
		if (!v_value(p))
			return false;
		v_ws(p);
		if (*p->s == ',') {
			p->s++;
			continue;
		}
		if (*p->s++ != close)
			return false;
		p->depth--;
		return true;
	}
}

static bool v_value(struct vp *p)
{
	v_ws(p);
	switch (*p->s) {
	case '{': return v_container(p, '{', '}', true);
	case '[': return v_container(p, '[', ']', false);
	case '"': return v_string(p);
	case 't': return v_lit(p, "true");
	case 'f': return v_lit(p, "false");
	case 'n': return v_lit(p, "null");
	default: return v_number(p);
	}
}

static bool json_valid(const char *s)
{
	struct vp p = { .s = s };

	if (!v_value(&p))
		return false;
	v_ws(&p);
	return *p.s == 0;
}

/* ---- helpers ---- */

struct buf {
	char *text;
	size_t len;
	FILE *f;
	struct sim_json j;
};

static void buf_open(struct buf *b, int indent)
{
	b->text = NULL;
	b->f = open_memstream(&b->text, &b->len);
	CU_ASSERT_FATAL(b->f != NULL);
	sim_json_init(&b->j, b->f, indent);
}

/* Finish the document; returns sim_json_finish's result, text in b->text. */
static int buf_close(struct buf *b)
{
	int rc = sim_json_finish(&b->j);

	fclose(b->f);
	return rc;
}

/* One string value as a whole document; returns malloc'd text. */
static char *one_string(const char *s)
{
	struct buf b;

	buf_open(&b, 0);
	sim_json_str(&b.j, s);
	CU_ASSERT_EQUAL(buf_close(&b), 0);
	CU_ASSERT(json_valid(b.text));
	return b.text;
}

static void check_string(const char *in, const char *want)
{
	char *got = one_string(in);
	char expect[512];

	snprintf(expect, sizeof(expect), "%s\n", want);
	CU_ASSERT_STRING_EQUAL(got, expect);
	if (strcmp(got, expect))
		fprintf(stderr, "\n  got  %s  want %s", got, expect);
	free(got);
}

/* ---- tests ---- */

static void test_escape_ascii(void)
{
	check_string("plain", "\"plain\"");
	check_string("", "\"\"");
	check_string("say \"hi\"", "\"say \\\"hi\\\"\"");
	check_string("C:\\dir\\", "\"C:\\\\dir\\\\\"");
	check_string("a/b", "\"a/b\"");
	check_string("tab\tnl\ncr\rbs\bff\f", "\"tab\\tnl\\ncr\\rbs\\bff\\f\"");
	check_string("\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\"");
}

static void test_escape_utf8(void)
{
	check_string("caf\xc3\xa9", "\"caf\\u00e9\"");			/* é, 2 bytes */
	check_string("\xe2\x82\xac", "\"\\u20ac\"");			/* €, 3 bytes */
	check_string("\xf0\x9f\x98\x80", "\"\\ud83d\\ude00\"");		/* U+1F600, pair */
	check_string("\xf4\x8f\xbf\xbf", "\"\\udbff\\udfff\"");		/* U+10FFFF */
	/* invalid: lone continuation, truncated sequence, overlong '/', surrogate,
	 * above U+10FFFF - each byte that fails becomes U+FFFD */
	check_string("a\x80z", "\"a\\ufffdz\"");
	check_string("\xc3", "\"\\ufffd\"");
	check_string("\xe2\x82", "\"\\ufffd\\ufffd\"");
	check_string("\xc0\xaf", "\"\\ufffd\\ufffd\"");
	check_string("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");
	check_string("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
	check_string("\xff", "\"\\ufffd\"");
}

static void test_nesting_compact(void)
{
	struct buf b;

	buf_open(&b, 0);
	sim_json_obj_begin(&b.j);
	sim_json_kstr(&b.j, "name", "leaf\"0");
	sim_json_ku64(&b.j, "big", UINT64_MAX);
	sim_json_ki64(&b.j, "neg", INT64_MIN);
	sim_json_kbool(&b.j, "t", true);
	sim_json_key(&b.j, "n");
	sim_json_null(&b.j);
	sim_json_key(&b.j, "arr");
	sim_json_arr_begin(&b.j);
	sim_json_u64(&b.j, 1);
	sim_json_arr_begin(&b.j);
	sim_json_arr_end(&b.j);
	sim_json_obj_begin(&b.j);
	sim_json_obj_end(&b.j);
	sim_json_obj_begin(&b.j);
	sim_json_kstr(&b.j, "k", NULL);
	sim_json_obj_end(&b.j);
	sim_json_arr_end(&b.j);
	sim_json_obj_end(&b.j);
	CU_ASSERT_EQUAL(buf_close(&b), 0);
	CU_ASSERT_STRING_EQUAL(b.text,
		"{\"name\":\"leaf\\\"0\",\"big\":18446744073709551615,"
		"\"neg\":-9223372036854775808,\"t\":true,\"n\":null,"
		"\"arr\":[1,[],{},{\"k\":null}]}\n");
	CU_ASSERT(json_valid(b.text));
	free(b.text);
}

static void test_nesting_pretty(void)
{
	struct buf b;

	buf_open(&b, 2);
	sim_json_obj_begin(&b.j);
	sim_json_ku64(&b.j, "a", 1);
	sim_json_key(&b.j, "b");
	sim_json_arr_begin(&b.j);
	sim_json_u64(&b.j, 2);
	sim_json_u64(&b.j, 3);
	sim_json_arr_end(&b.j);
	sim_json_key(&b.j, "e");
	sim_json_arr_begin(&b.j);
	sim_json_arr_end(&b.j);
	sim_json_obj_end(&b.j);
	CU_ASSERT_EQUAL(buf_close(&b), 0);
	CU_ASSERT_STRING_EQUAL(b.text,
		"{\n  \"a\": 1,\n  \"b\": [\n    2,\n    3\n  ],\n  \"e\": []\n}\n");
	CU_ASSERT(json_valid(b.text));
	free(b.text);
}

static void test_doubles(void)
{
	static const struct {
		double v;
		const char *want;
	} cases[] = {
		{ 0.1, "0.1" }, { 1.0, "1" }, { -2.5, "-2.5" }, { 200.0, "200" },
		{ 1.0 / 3.0, "0.333333333" }, { 1e21, "1e+21" }, { 1.5e-7, "1.5e-07" },
		{ -0.0, "0" }, { 123456789012.0, "1.23456789e+11" },
	};
	struct buf b;

	buf_open(&b, 0);
	sim_json_arr_begin(&b.j);
	for (size_t i = 0; i < SIM_ARRAY_SIZE(cases); i++)
		sim_json_double(&b.j, cases[i].v);
	sim_json_double(&b.j, NAN);		/* JSON has no NaN: null */
	sim_json_double(&b.j, INFINITY);
	sim_json_arr_end(&b.j);
	CU_ASSERT_EQUAL(buf_close(&b), 0);
	CU_ASSERT_STRING_EQUAL(b.text,
		"[0.1,1,-2.5,200,0.333333333,1e+21,1.5e-07,0,1.23456789e+11,null,null]\n");
	CU_ASSERT(json_valid(b.text));
	free(b.text);

	/* the same value twice gives the same text */
	char *x = NULL, *y = NULL;
	size_t n;

	for (int k = 0; k < 2; k++) {
		FILE *f = open_memstream(k ? &y : &x, &n);
		struct sim_json j;

		sim_json_init(&j, f, 0);
		sim_json_double(&j, 2.0 / 7.0 * 1e9);
		CU_ASSERT_EQUAL(sim_json_finish(&j), 0);
		fclose(f);
	}
	CU_ASSERT_STRING_EQUAL(x, y);
	free(x);
	free(y);
}

static void test_misuse(void)
{
	struct buf b;

	/* value in an object without a key */
	buf_open(&b, 0);
	sim_json_obj_begin(&b.j);
	sim_json_u64(&b.j, 1);
	sim_json_obj_end(&b.j);
	CU_ASSERT_NOT_EQUAL(buf_close(&b), 0);
	free(b.text);

	/* key inside an array */
	buf_open(&b, 0);
	sim_json_arr_begin(&b.j);
	sim_json_key(&b.j, "k");
	sim_json_arr_end(&b.j);
	CU_ASSERT_NOT_EQUAL(buf_close(&b), 0);
	free(b.text);

	/* unbalanced and mismatched ends */
	buf_open(&b, 0);
	sim_json_obj_begin(&b.j);
	CU_ASSERT_NOT_EQUAL(buf_close(&b), 0);
	free(b.text);
	buf_open(&b, 0);
	sim_json_obj_begin(&b.j);
	sim_json_arr_end(&b.j);
	CU_ASSERT_NOT_EQUAL(buf_close(&b), 0);
	free(b.text);

	/* key without its value */
	buf_open(&b, 0);
	sim_json_obj_begin(&b.j);
	sim_json_key(&b.j, "k");
	sim_json_obj_end(&b.j);
	CU_ASSERT_NOT_EQUAL(buf_close(&b), 0);
	free(b.text);

	/* two top-level values, and none at all */
	buf_open(&b, 0);
	sim_json_u64(&b.j, 1);
	sim_json_u64(&b.j, 2);
	CU_ASSERT_NOT_EQUAL(buf_close(&b), 0);
	free(b.text);
	buf_open(&b, 0);
	CU_ASSERT_NOT_EQUAL(buf_close(&b), 0);
	free(b.text);

	/* too deep: refused, not overflowed */
	buf_open(&b, 0);
	for (int i = 0; i < SIM_JSON_MAX_DEPTH + 5; i++)
		sim_json_arr_begin(&b.j);
	for (int i = 0; i < SIM_JSON_MAX_DEPTH + 5; i++)
		sim_json_arr_end(&b.j);
	CU_ASSERT_NOT_EQUAL(buf_close(&b), 0);
	free(b.text);

	/* exactly the maximum depth is fine */
	buf_open(&b, 0);
	for (int i = 0; i < SIM_JSON_MAX_DEPTH; i++)
		sim_json_arr_begin(&b.j);
	for (int i = 0; i < SIM_JSON_MAX_DEPTH; i++)
		sim_json_arr_end(&b.j);
	CU_ASSERT_EQUAL(buf_close(&b), 0);
	CU_ASSERT(json_valid(b.text));
	free(b.text);
}

/* The validator itself must reject what it should, or the checks above mean nothing. */
static void test_validator(void)
{
	CU_ASSERT(json_valid("{\"a\":[1,2.5e3,-0,true,null,\"x\\u00e9\"]}"));
	CU_ASSERT(!json_valid("{\"a\":1,}"));
	CU_ASSERT(!json_valid("[1 2]"));
	CU_ASSERT(!json_valid("\"tab\there\""));
	CU_ASSERT(!json_valid("\"bad \\x escape\""));
	CU_ASSERT(!json_valid("01"));
	CU_ASSERT(!json_valid("{\"a\":1"));
	CU_ASSERT(!json_valid("nan"));
}

/* Every byte value in a string: the output still validates and is ASCII. */
static void test_all_bytes(void)
{
	char in[256];
	char *out;

	for (int i = 1; i < 256; i++)
		in[i - 1] = (char)i;
	in[255] = 0;
	out = one_string(in);
	for (const char *p = out; *p; p++)
		CU_ASSERT((unsigned char)*p < 0x80);
	free(out);
}

static void test_csv_field(void)
{
	char *text = NULL;
	size_t n;
	FILE *f = open_memstream(&text, &n);

	cli_csv_field(f, "leaf0");
	fputc('|', f);
	cli_csv_field(f, "a,b");
	fputc('|', f);
	cli_csv_field(f, "say \"x\"");
	fclose(f);
	CU_ASSERT_STRING_EQUAL(text, "leaf0|\"a,b\"|\"say \"\"x\"\"\"");
	free(text);
}

static void test_fmt(void)
{
	char b[32];

	CU_ASSERT_STRING_EQUAL(cli_fmt_time(800, b, sizeof(b)), "800 ps");
	CU_ASSERT_STRING_EQUAL(cli_fmt_time(1500, b, sizeof(b)), "1.500 ns");
	CU_ASSERT_STRING_EQUAL(cli_fmt_time(12345678, b, sizeof(b)), "12.346 us");
	CU_ASSERT_STRING_EQUAL(cli_fmt_time(3 * SIM_MS, b, sizeof(b)), "3.000 ms");
	CU_ASSERT_STRING_EQUAL(cli_fmt_bytes(64, b, sizeof(b)), "64 B");
	CU_ASSERT_STRING_EQUAL(cli_fmt_bytes(1536, b, sizeof(b)), "1.50 KiB");
	CU_ASSERT_STRING_EQUAL(cli_fmt_bytes(1 << 20, b, sizeof(b)), "1 MiB");
	CU_ASSERT_STRING_EQUAL(cli_fmt_bytes(32768, b, sizeof(b)), "32 KiB");
	CU_ASSERT_STRING_EQUAL(cli_fmt_bytes((1 << 20) + 1, b, sizeof(b)), "1.00 MiB");
	CU_ASSERT_STRING_EQUAL(cli_fmt_bytes(UINT64_MAX, b, sizeof(b)), "16384.00 PiB");
}

static const struct test_case tests[] = {
	{ "escape ASCII", test_escape_ascii },
	{ "escape UTF-8 and invalid bytes", test_escape_utf8 },
	{ "nesting, compact", test_nesting_compact },
	{ "nesting, pretty", test_nesting_pretty },
	{ "doubles", test_doubles },
	{ "misuse is detected", test_misuse },
	{ "validator sanity", test_validator },
	{ "all byte values", test_all_bytes },
	{ "CSV fields", test_csv_field },
	{ "time and size formats", test_fmt },
	{ NULL, NULL },
};

TEST_MAIN("json", tests)
