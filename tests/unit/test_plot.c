/* SPDX-License-Identifier: MIT */
/*
 * test_plot.c - the SVG chart writer (tools/plot_svg.c): every document is
 * run through a small XML well-formedness checker below (tags balanced and
 * properly nested, attributes quoted, only the five predefined entities,
 * no stray '<' or '&'), so "a browser can open it" is checked, not assumed;
 * the same inputs give the same bytes; labels are escaped, and bytes that
 * are not UTF-8 replaced; empty, NaN and non-positive (log axis) data do
 * not break the output; ticks are 1-2-5.
 */
#include "tests/unit/test_main.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tools/plot_svg.h"

/* ---- a minimal XML well-formedness checker ---- */

#define XMAX_DEPTH 64

struct xp {
	const char *s;
	char stack[XMAX_DEPTH][32];
	int depth;
	int elements;
};

static bool x_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_' || c == ':' || c == '.';
}

static bool x_name(struct xp *p, char *out, size_t len)
{
	size_t n = 0;

	if (!x_name_char(*p->s) || (*p->s >= '0' && *p->s <= '9'))
		return false;
	while (x_name_char(*p->s)) {
		if (n + 1 < len)
			out[n++] = *p->s;
		p->s++;
	}
	out[n] = 0;
	return true;
}

/* An entity after '&': one of the five XML predefines them. */
static bool x_entity(struct xp *p)
{
	static const char *const ents[] = { "amp;", "lt;", "gt;", "quot;", "apos;" };

	for (size_t i = 0; i < sizeof(ents) / sizeof(ents[0]); i++)
		if (!strncmp(p->s, ents[i], strlen(ents[i]))) {
			p->s += strlen(ents[i]);
			return true;
		}
	return false;
}

static void x_ws(struct xp *p)
{
	while (*p->s == ' ' || *p->s == '\n' || *p->s == '\t' || *p->s == '\r')
		p->s++;
}

/* One tag; its element's name goes to name (32 bytes). */
static bool x_tag(struct xp *p, char *name)
{
	char attr[32][32];
	int nattr = 0;
	bool close = false;

	p->s++;			/* '<' */
	if (*p->s == '/') {
		close = true;
		p->s++;
	}
	if (!x_name(p, name, 32))
		return false;
	if (close) {
		x_ws(p);
		if (*p->s != '>' || !p->depth || strcmp(p->stack[p->depth - 1], name))
			return false;
		p->s++;
		p->depth--;
		return true;
	}
	for (;;) {
		x_ws(p);
		if (*p->s == '>' || (*p->s == '/' && p->s[1] == '>'))
			break;
		if (nattr == 32 || !x_name(p, attr[nattr], sizeof(attr[0])))
			return false;
		for (int i = 0; i < nattr; i++)	/* no attribute twice */
			if (!strcmp(attr[i], attr[nattr]))
				return false;
		nattr++;
		x_ws(p);
		if (*p->s++ != '=')
			return false;
		x_ws(p);
		char q = *p->s++;

		if (q != '"' && q != '\'')
			return false;
		while (*p->s != q) {
			if (!*p->s || *p->s == '<')
				return false;
			if (*p->s++ == '&' && !x_entity(p))
				return false;
		}
		p->s++;
	}
	p->elements++;
	if (*p->s == '/') {
		p->s += 2;
		return true;
	}
	p->s++;
	if (p->depth == XMAX_DEPTH)
		return false;
	snprintf(p->stack[p->depth++], sizeof(p->stack[0]), "%s", name);
	return true;
}

/* Well-formed, with one root element named `root`. */
static bool xml_ok(const char *doc, const char *root)
{
	struct xp p = { .s = doc };
	bool seen_root = false;

	if (!strncmp(p.s, "<?xml ", 6)) {
		p.s = strstr(p.s, "?>");
		if (!p.s)
			return false;
		p.s += 2;
	}
	for (;;) {
		x_ws(&p);
		if (!*p.s)
			return seen_root && !p.depth;
		if (*p.s == '<') {
			if (!p.depth && seen_root)
				return false;	/* a second root */
			bool at_root = !p.depth;
			char name[32];

			if (!x_tag(&p, name))
				return false;
			if (at_root) {
				if (strcmp(name, root))
					return false;
				seen_root = true;
			}
			continue;
		}
		if (!p.depth)
			return false;	/* text outside the root */
		while (*p.s && *p.s != '<') {
			if (*p.s++ == '&' && !x_entity(&p))
				return false;
		}
	}
}

/* ---- helpers ---- */

/* The document in memory; the caller owns it (free(d->text)). */
struct doc {
	char *text;
	size_t len;
};

static char *render_into(struct doc *d, const struct plot_chart *c, int ncharts)
{
	FILE *f = open_memstream(&d->text, &d->len);
	struct plot_svg svg;

	CU_ASSERT_FATAL(f != NULL);
	plot_svg_begin(&svg, f, 800, 300 * ncharts + 40, "a <title> & \"quotes\"");
	for (int i = 0; i < ncharts; i++)
		plot_svg_chart(&svg, 0, 40 + 300 * i, 800, 300, &c[i]);
	CU_ASSERT_EQUAL(plot_svg_end(&svg), 0);
	fclose(f);
	return d->text;
}

#define render(c, n) render_into(&(struct doc){ 0 }, (c), (n))

static size_t count(const char *s, const char *needle)
{
	size_t n = 0;

	for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

static const double tx[] = { 0, 10, 20, 30, 40 }, ty[] = { 0, 150, 190, 180, 20 };
static const double cx[] = { 1.5, 12, 300, 4000 }, cy[] = { 0.25, 0.5, 0.75, 1 };

/* ---- tests ---- */

static void test_checker(void)
{
	/* the checker itself: accepts what it must, refuses what it must */
	CU_ASSERT(xml_ok("<svg a=\"1\"><g><t>x &amp; y</t></g><r/></svg>", "svg"));
	CU_ASSERT(xml_ok("<?xml version=\"1.0\"?>\n<svg/>\n", "svg"));
	CU_ASSERT(!xml_ok("<svg><g></svg></g>", "svg"));
	CU_ASSERT(!xml_ok("<svg><g></svg>", "svg"));
	CU_ASSERT(!xml_ok("<svg a=1/>", "svg"));
	CU_ASSERT(!xml_ok("<svg a=\"1\" a=\"2\"/>", "svg"));
	CU_ASSERT(!xml_ok("<svg>a & b</svg>", "svg"));
	CU_ASSERT(!xml_ok("<svg>&nbsp;</svg>", "svg"));
	CU_ASSERT(!xml_ok("<svg/><svg/>", "svg"));
	CU_ASSERT(!xml_ok("<html/>", "svg"));
}

static void test_well_formed(void)
{
	struct plot_series ts[] = {
		{ .name = "ib", .x = tx, .y = ty, .n = 5, .step = true },
		{ .name = "roce-lossy <&>", .x = tx, .y = ty, .n = 3 },
	};
	struct plot_series cs[] = { { .name = "tcp", .x = cx, .y = cy, .n = 4, .step = true } };
	struct plot_chart c[] = {
		{ .title = "Goodput", .xlabel = "time (\xc2\xb5s)", .ylabel = "Gb/s",
		  .xmin = 0, .xmax = NAN, .ymin = 0, .ymax = NAN, .series = ts, .nseries = 2 },
		{ .title = "CDF", .xlabel = "completion", .ylabel = "fraction", .xlog = true,
		  .xmin = NAN, .xmax = NAN, .ymin = 0, .ymax = 1, .series = cs, .nseries = 1 },
	};
	char *doc = render(c, 2);

	CU_ASSERT(xml_ok(doc, "svg"));
	CU_ASSERT(strstr(doc, "xmlns=\"http://www.w3.org/2000/svg\"") != NULL);
	/* escaped, never raw */
	CU_ASSERT(strstr(doc, "roce-lossy &lt;&amp;&gt;") != NULL);
	CU_ASSERT(strstr(doc, "a &lt;title&gt; &amp; &quot;quotes&quot;") != NULL);
	/* one polyline per series, one clip path per chart, legends */
	CU_ASSERT_EQUAL(count(doc, "<polyline"), 3);
	CU_ASSERT_EQUAL(count(doc, "<clipPath id="), 2);
	CU_ASSERT(strstr(doc, "plot-clip-0") && strstr(doc, "plot-clip-1"));
	CU_ASSERT(strstr(doc, ">ib</text>") != NULL);
	CU_ASSERT(strstr(doc, ">tcp</text>") != NULL);
	/* axis labels and ticks: 0..200 by 50 on the y axis (data up to 190),
	 * decades 1 .. 10000 on the log axis */
	CU_ASSERT(strstr(doc, ">Gb/s</text>") != NULL);
	CU_ASSERT(strstr(doc, ">200</text>") != NULL);
	CU_ASSERT(strstr(doc, ">50</text>") != NULL);
	CU_ASSERT(strstr(doc, ">10000</text>") != NULL);
	CU_ASSERT(strstr(doc, ">0.1</text>") == NULL);	/* 1.5 starts at the decade 1 */
	CU_ASSERT(strstr(doc, ">1</text>") != NULL);
	CU_ASSERT(strstr(doc, "-0.00") == NULL);
	CU_ASSERT(strstr(doc, "nan") == NULL && strstr(doc, "inf") == NULL);
	/* a step series: 5 points drawn as 9 vertices */
	{
		const char *pl = strstr(doc, "<polyline");
		const char *pts = strstr(pl, "points=\"") + 8;
		const char *end = strchr(pts, '"');
		int commas = 0;

		for (const char *q = pts; q < end; q++)
			commas += *q == ',';
		CU_ASSERT_EQUAL(commas, 9);
	}
	free(doc);
}

static void test_deterministic(void)
{
	struct plot_series ts[] = { { .name = "a", .x = tx, .y = ty, .n = 5 } };
	struct plot_chart c = { .title = "t", .xlabel = "x", .ylabel = "y", .xmin = NAN,
				.xmax = NAN, .ymin = NAN, .ymax = NAN, .series = ts, .nseries = 1 };
	char *a = render(&c, 1), *b = render(&c, 1);

	CU_ASSERT_STRING_EQUAL(a, b);
	free(a);
	free(b);
}

static void test_degenerate(void)
{
	static const double nx[] = { NAN, 1, INFINITY, 2, -5, 0 };
	static const double ny[] = { 1, NAN, 2, 3, 4, 5 };
	struct plot_series s[] = {
		{ .name = "empty", .x = NULL, .y = NULL, .n = 0 },
		{ .name = "odd", .x = nx, .y = ny, .n = 6, .step = true },
		{ .name = NULL, .x = tx, .y = ty, .n = 1 },
	};
	struct plot_chart c[] = {
		{ .title = NULL, .xlabel = NULL, .ylabel = NULL, .xmin = NAN, .xmax = NAN,
		  .ymin = NAN, .ymax = NAN, .series = s, .nseries = 3 },
		{ .title = "log", .xlog = true, .xmin = NAN, .xmax = NAN, .ymin = NAN,
		  .ymax = NAN, .series = s, .nseries = 3 },
		{ .title = "nothing", .xmin = NAN, .xmax = NAN, .ymin = NAN, .ymax = NAN,
		  .series = s, .nseries = 1 },
		{ .title = "flat", .xmin = NAN, .xmax = NAN, .ymin = NAN, .ymax = NAN,
		  .series = &s[2], .nseries = 1 },
	};
	char *doc = render(c, 4);

	CU_ASSERT(xml_ok(doc, "svg"));
	CU_ASSERT(strstr(doc, "nan") == NULL && strstr(doc, "inf") == NULL);
	free(doc);
}

/* Labels with bytes that are not UTF-8 or are control characters (a file
 * name can hold anything) still give a well-formed, valid UTF-8 document. */
static void test_bytes(void)
{
	/* separate literals: a hex escape would swallow the letter after it */
	static const char label[] = "a\x01" "b\xff\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"
				    "\xc0\xaf\xed\xa0\x80\xc3";
	struct plot_series ts[] = { { .name = label, .x = tx, .y = ty, .n = 5 } };
	struct plot_chart c = { .title = label, .xlabel = label, .ylabel = label, .xmin = NAN,
				.xmax = NAN, .ymin = NAN, .ymax = NAN, .series = ts, .nseries = 1 };
	char *doc = render(&c, 1);

	CU_ASSERT(xml_ok(doc, "svg"));
	/* the valid sequences (e acute, euro, an emoji) kept, the rest '?' */
	CU_ASSERT(strstr(doc, "a?b?\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80??????" "<") != NULL);
	CU_ASSERT(strchr(doc, '\x01') == NULL && strchr(doc, '\xff') == NULL);
	free(doc);
}

static void test_ticks(void)
{
	double first, last, step;
	char b[32];

	step = plot_nice_step(0, 190, 5, &first, &last);
	CU_ASSERT_DOUBLE_EQUAL(step, 50, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(first, 0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(last, 200, 1e-9);
	step = plot_nice_step(0, 5149.0, 8, &first, &last);
	CU_ASSERT_DOUBLE_EQUAL(step, 1000, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(last, 6000, 1e-9);
	step = plot_nice_step(0.1, 0.3, 2, &first, &last);
	CU_ASSERT_DOUBLE_EQUAL(step, 0.1, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(last, 0.3, 1e-12);	/* no extra tick from 0.30000000000000004 */
	step = plot_nice_step(0, 1, 5, &first, &last);
	CU_ASSERT_DOUBLE_EQUAL(step, 0.2, 1e-12);
	plot_fmt_tick(b, sizeof(b), 0.6000000000000001, 0.2);
	CU_ASSERT_STRING_EQUAL(b, "0.6");
	plot_fmt_tick(b, sizeof(b), 2500, 500);
	CU_ASSERT_STRING_EQUAL(b, "2500");
	plot_fmt_tick(b, sizeof(b), -1e-17, 0.05);
	CU_ASSERT_STRING_EQUAL(b, "0.00");
	CU_ASSERT_STRING_EQUAL(plot_color(0), plot_color(8));
	CU_ASSERT_STRING_NOT_EQUAL(plot_color(0), plot_color(1));
}

static const struct test_case tests[] = {
	{ "xml checker", test_checker },
	{ "well-formed SVG, escaped labels, ticks, legend", test_well_formed },
	{ "same inputs, same bytes", test_deterministic },
	{ "empty, NaN, Inf and non-positive data", test_degenerate },
	{ "labels that are not UTF-8", test_bytes },
	{ "1-2-5 ticks and their labels", test_ticks },
	{ NULL, NULL },
};

TEST_MAIN("plot_svg", tests)
