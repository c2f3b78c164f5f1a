/* SPDX-License-Identifier: MIT */
/*
 * plot_svg.c - line charts as SVG 1.1, written straight to a stream
 * (plot_svg.h). What it draws: frames, linear and log10 axes with ticks,
 * grid lines and labels, polylines or staircases, legends. What it leaves
 * out: bars, scatter marks, a second y axis, text measuring (labels are
 * placed with fixed margins sized for the tools' short labels).
 *
 * Determinism: every number goes through fmt() below ("%.2f" for
 * coordinates, C locale: the tools never call setlocale), series keep their
 * index's colour, and clip-path ids count up from 0 per document, so the
 * same inputs give the same bytes.
 */
#include "tools/plot_svg.h"

#include <math.h>
#include <string.h>

/* Chart margins inside its rectangle, px: room for tick labels, the axis
 * labels, the title and the legend. */
#define M_LEFT 72
#define M_TOP 30
#define M_BOTTOM 46
#define M_LEGEND 150
#define TICK_LEN 5

static const char *const palette[] = {
	"#0072B2",	/* blue */
	"#009E73",	/* bluish green */
	"#D55E00",	/* vermillion */
	"#CC79A7",	/* reddish purple */
	"#E69F00",	/* orange */
	"#56B4E9",	/* sky blue */
	"#000000",	/* black */
	"#F0E442",	/* yellow */
};

const char *plot_color(int i)
{
	int n = (int)(sizeof(palette) / sizeof(palette[0]));

	return palette[((i % n) + n) % n];
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when it is not one
 * (overlong forms, surrogates and code points above U+10FFFF refused). */
static int utf8_len(const unsigned char *s)
{
	unsigned int cp;
	int n;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	for (int i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return n;
}

/* Text for an attribute or element: the XML specials escaped, control
 * characters and bytes that are not UTF-8 (a file name, say) as '?', so
 * the document stays well-formed whatever the labels hold. */
static void esc(FILE *out, const char *s)
{
	for (; s && *s; s++) {
		if ((unsigned char)*s >= 0x80) {
			int n = utf8_len((const unsigned char *)s);

			if (!n) {
				fputc('?', out);
				continue;
			}
			fwrite(s, 1, (size_t)n, out);
			s += n - 1;
			continue;
		}
		switch (*s) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&apos;", out); break;
		default:
			/* XML 1.0 allows no control characters but tab, CR and LF */
			if ((unsigned char)*s < 0x20 && *s != '\t' && *s != '\n' && *s != '\r')
				fputc('?', out);
			else
				fputc(*s, out);
		}
	}
}

/* A coordinate: two decimals, and never "-0.00". */
static void fmt(FILE *out, double v)
{
	if (fabs(v) < 0.005)
		v = 0;
	fprintf(out, "%.2f", v);
}

void plot_svg_text(struct plot_svg *p, double x, double y, const char *anchor, int size,
		   const char *text)
{
	fputs("<text x=\"", p->out);
	fmt(p->out, x);
	fputs("\" y=\"", p->out);
	fmt(p->out, y);
	fprintf(p->out, "\" font-size=\"%d\" text-anchor=\"%s\">", size, anchor);
	esc(p->out, text);
	fputs("</text>\n", p->out);
}

static void line(FILE *out, double x1, double y1, double x2, double y2, const char *style)
{
	fputs("<line x1=\"", out);
	fmt(out, x1);
	fputs("\" y1=\"", out);
	fmt(out, y1);
	fputs("\" x2=\"", out);
	fmt(out, x2);
	fputs("\" y2=\"", out);
	fmt(out, y2);
	fprintf(out, "\" %s/>\n", style);
}

void plot_svg_begin(struct plot_svg *p, FILE *out, int width, int height, const char *title)
{
	memset(p, 0, sizeof(*p));
	p->out = out;
	p->width = width;
	p->height = height;
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", out);
	fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n",
		width, height, width, height);
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n",
		width, height);
	if (title)
		plot_svg_text(p, width / 2.0, 22, "middle", 16, title);
}

int plot_svg_end(struct plot_svg *p)
{
	fputs("</svg>\n", p->out);
	return ferror(p->out) ? -1 : 0;
}

double plot_nice_step(double lo, double hi, int want, double *first, double *last)
{
	double raw, mag, f, step;

	if (!(hi > lo))
		hi = lo + 1;
	if (want < 1)
		want = 1;
	raw = (hi - lo) / want;
	mag = pow(10, floor(log10(raw)));
	f = raw / mag;
	step = (f <= 1 + 1e-9 ? 1 : f <= 2 + 1e-9 ? 2 : f <= 5 + 1e-9 ? 5 : 10) * mag;
	/* the small slack keeps 0.30000000000000004 from asking for one more tick */
	*first = floor(lo / step + 1e-9) * step;
	*last = ceil(hi / step - 1e-9) * step;
	return step;
}

void plot_fmt_tick(char *buf, size_t len, double v, double step)
{
	int dec = 0;

	if (step > 0 && step < 1)
		dec = (int)ceil(-log10(step) - 1e-9);
	if (fabs(v) < step * 1e-6)
		v = 0;
	snprintf(buf, len, "%.*f", dec, v);
}

/* log10 tick label for 10^k */
static void fmt_decade(char *buf, size_t len, int k)
{
	if (k >= -3 && k <= 6)
		snprintf(buf, len, "%.*f", k < 0 ? -k : 0, pow(10, k));
	else
		snprintf(buf, len, "1e%d", k);
}

struct axis {
	bool log;
	double lo, hi;		/* in data units (log: the decades' values) */
	double step;		/* linear: tick step */
	double a, b;		/* pixel range */
};

static double ax_map(const struct axis *ax, double v)
{
	double t;

	if (ax->log)
		t = (log10(v) - log10(ax->lo)) / (log10(ax->hi) - log10(ax->lo));
	else
		t = (v - ax->lo) / (ax->hi - ax->lo);
	return ax->a + t * (ax->b - ax->a);
}

static bool usable(double v, bool log)
{
	return isfinite(v) && (!log || v > 0);
}

/* The data range of one coordinate over every series. */
static bool data_range(const struct plot_chart *c, bool want_x, bool log, double *mn, double *mx)
{
	bool any = false;

	for (int s = 0; s < c->nseries; s++) {
		const struct plot_series *se = &c->series[s];

		for (size_t i = 0; i < se->n; i++) {
			double v = want_x ? se->x[i] : se->y[i];

			if (!usable(se->x[i], c->xlog) || !isfinite(se->y[i]) || !usable(v, log))
				continue;
			if (!any || v < *mn)
				*mn = v;
			if (!any || v > *mx)
				*mx = v;
			any = true;
		}
	}
	return any;
}

static void axis_setup(struct axis *ax, const struct plot_chart *c, bool is_x, double gmin,
		       double gmax)
{
	double mn = 0, mx = 1;
	bool any;

	ax->log = is_x && c->xlog;
	any = data_range(c, is_x, ax->log, &mn, &mx);
	if (ax->log) {
		if (!any) {
			mn = 1;
			mx = 10;
		}
		int dlo = (int)floor(log10(isnan(gmin) || gmin <= 0 ? mn : gmin) + 1e-9);
		int dhi = (int)ceil(log10(isnan(gmax) || gmax <= 0 ? mx : gmax) - 1e-9);

		if (dhi <= dlo)
			dhi = dlo + 1;
		ax->lo = pow(10, dlo);
		ax->hi = pow(10, dhi);
		return;
	}
	if (!any) {
		mn = 0;
		mx = 1;
	}
	double lo = isnan(gmin) ? (mn >= 0 ? 0 : mn) : gmin;
	double hi = isnan(gmax) ? mx : gmax;
	double first, last;

	if (!(hi > lo))
		hi = lo + (lo ? fabs(lo) : 1);
	ax->step = plot_nice_step(lo, hi, is_x ? 8 : 5, &first, &last);
	ax->lo = isnan(gmin) ? first : lo;
	ax->hi = isnan(gmax) ? last : hi;
}

static void draw_ticks(struct plot_svg *p, const struct axis *ax, bool is_x, double left,
		       double top, double right, double bottom)
{
	FILE *out = p->out;
	const char *grid = "stroke=\"#dddddd\" stroke-width=\"1\"";
	const char *tick = "stroke=\"#000000\" stroke-width=\"1\"";
	char lb[32];

	if (ax->log) {
		int dlo = (int)lround(log10(ax->lo)), dhi = (int)lround(log10(ax->hi));

		for (int k = dlo; k <= dhi; k++) {
			double v = pow(10, k), px = ax_map(ax, v);

			line(out, px, top, px, bottom, grid);
			line(out, px, bottom, px, bottom + TICK_LEN, tick);
			fmt_decade(lb, sizeof(lb), k);
			plot_svg_text(p, px, bottom + TICK_LEN + 13, "middle", 11, lb);
			for (int m = 2; k < dhi && m <= 9; m++) {	/* minor ticks */
				double mpx = ax_map(ax, m * v);

				line(out, mpx, bottom, mpx, bottom + TICK_LEN - 2, tick);
			}
		}
		return;
	}
	/* ticks at the multiples of step inside [lo, hi] */
	long i0 = (long)ceil(ax->lo / ax->step - 1e-9), i1 = (long)floor(ax->hi / ax->step + 1e-9);

	for (long i = i0; i <= i1 && i - i0 <= 100; i++) {
		double v = (double)i * ax->step, px = ax_map(ax, v);

		plot_fmt_tick(lb, sizeof(lb), v, ax->step);
		if (is_x) {
			line(out, px, top, px, bottom, grid);
			line(out, px, bottom, px, bottom + TICK_LEN, tick);
			plot_svg_text(p, px, bottom + TICK_LEN + 13, "middle", 11, lb);
		} else {
			line(out, left, px, right, px, grid);
			line(out, left - TICK_LEN, px, left, px, tick);
			plot_svg_text(p, left - TICK_LEN - 3, px + 4, "end", 11, lb);
		}
	}
}

static void draw_series(struct plot_svg *p, const struct axis *xa, const struct axis *ya,
			const struct plot_series *se, int idx)
{
	FILE *out = p->out;
	double prev_y = 0;
	bool have_prev = false;
	int npts = 0;

	fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
		"stroke-linejoin=\"round\" points=\"", plot_color(idx));
	for (size_t i = 0; i < se->n; i++) {
		double x = se->x[i], y = se->y[i], px, py;

		if (!usable(x, xa->log) || !isfinite(y))
			continue;
		px = ax_map(xa, x);
		py = ax_map(ya, y);
		if (se->step && have_prev) {
			fputs(npts % 8 ? " " : "\n", out);
			fmt(out, px);
			fputc(',', out);
			fmt(out, prev_y);
			npts++;
		}
		fputs(npts % 8 ? " " : (npts ? "\n" : ""), out);
		fmt(out, px);
		fputc(',', out);
		fmt(out, py);
		npts++;
		prev_y = py;
		have_prev = true;
	}
	fputs("\"/>\n", out);
}

void plot_svg_chart(struct plot_svg *p, double x, double y, double w, double h,
		    const struct plot_chart *c)
{
	FILE *out = p->out;
	double left = x + M_LEFT, top = y + M_TOP;
	double right = x + w - M_LEGEND, bottom = y + h - M_BOTTOM;
	struct axis xa = { 0 }, ya = { 0 };
	int clip = p->nclip++;

	if (right < left + 10)
		right = left + 10;
	if (bottom < top + 10)
		bottom = top + 10;
	axis_setup(&xa, c, true, c->xmin, c->xmax);
	axis_setup(&ya, c, false, c->ymin, c->ymax);
	xa.a = left;
	xa.b = right;
	ya.a = bottom;		/* y grows upwards */
	ya.b = top;

	fputs("<g>\n", out);
	if (c->title)
		plot_svg_text(p, (left + right) / 2, y + 18, "middle", 14, c->title);
	draw_ticks(p, &xa, true, left, top, right, bottom);
	draw_ticks(p, &ya, false, left, top, right, bottom);
	/* the frame over the grid */
	fputs("<rect x=\"", out);
	fmt(out, left);
	fputs("\" y=\"", out);
	fmt(out, top);
	fputs("\" width=\"", out);
	fmt(out, right - left);
	fputs("\" height=\"", out);
	fmt(out, bottom - top);
	fputs("\" fill=\"none\" stroke=\"#000000\" stroke-width=\"1\"/>\n", out);
	if (c->xlabel)
		plot_svg_text(p, (left + right) / 2, bottom + 40, "middle", 12, c->xlabel);
	if (c->ylabel) {
		double ly = (top + bottom) / 2, lx = x + 16;

		fputs("<text x=\"", out);
		fmt(out, lx);
		fputs("\" y=\"", out);
		fmt(out, ly);
		fputs("\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 ", out);
		fmt(out, lx);
		fputc(' ', out);
		fmt(out, ly);
		fputs(")\">", out);
		esc(out, c->ylabel);
		fputs("</text>\n", out);
	}
	/* the data, clipped to the plot area */
	fprintf(out, "<clipPath id=\"plot-clip-%d\"><rect x=\"", clip);
	fmt(out, left);
	fputs("\" y=\"", out);
	fmt(out, top - 1);
	fputs("\" width=\"", out);
	fmt(out, right - left);
	fputs("\" height=\"", out);
	fmt(out, bottom - top + 2);
	fputs("\"/></clipPath>\n", out);
	fprintf(out, "<g clip-path=\"url(#plot-clip-%d)\">\n", clip);
	for (int s = 0; s < c->nseries; s++)
		draw_series(p, &xa, &ya, &c->series[s], s);
	fputs("</g>\n", out);
	/* the legend, right of the plot area */
	for (int s = 0; s < c->nseries; s++) {
		double ly = top + 12 + 20 * s, lx = right + 14;
		char style[80];

		snprintf(style, sizeof(style), "stroke=\"%s\" stroke-width=\"3\"", plot_color(s));
		line(out, lx, ly - 4, lx + 24, ly - 4, style);
		plot_svg_text(p, lx + 30, ly, "start", 12, c->series[s].name ? c->series[s].name : "");
	}
	fputs("</g>\n", out);
}
