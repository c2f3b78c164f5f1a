/* SPDX-License-Identifier: MIT */
/*
 * plot_svg.h - a small SVG line-chart writer for the command-line tools
 * (`ibfab compare` draws its throughput and latency charts with it), so a
 * picture needs no gnuplot, Graphviz or library.
 *
 * A canvas holds one or more charts, each in its own rectangle: a frame,
 * "nice" ticks (1, 2 or 5 times a power of ten; decades on a log axis) with
 * grid lines and labels, axis labels, a title, one polyline per series
 * (clipped to the plot area), and a legend to the right of the plot area.
 * The output is streamed to a FILE and is deterministic: coordinates go
 * through one fixed format ("%.2f", C locale), colours come from a fixed
 * palette by series index, and nothing depends on time or addresses.
 * Strings are XML-escaped; the file opens in any browser.
 */
#ifndef IBFAB_PLOT_SVG_H
#define IBFAB_PLOT_SVG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct plot_series {
	const char *name;	/* legend label */
	const double *x, *y;	/* n points, x ascending (NaN or Inf points are skipped) */
	size_t n;
	bool step;		/* a staircase: horizontal to the next x, then vertical (a CDF) */
};

struct plot_chart {
	const char *title;
	const char *xlabel, *ylabel;
	bool xlog;		/* log10 x axis: decades; points with x <= 0 are skipped */
	/* the axis ranges; NaN: from the data (a linear axis then starts at 0
	 * when the data are all >= 0, and is widened to whole ticks) */
	double xmin, xmax, ymin, ymax;
	const struct plot_series *series;
	int nseries;
};

struct plot_svg {
	FILE *out;
	int width, height;
	int nclip;		/* clip paths written (one per chart) */
};

/* The palette, by series index (modulo its size): Okabe-Ito's colour-blind
 * safe colours. */
const char *plot_color(int i);

/* The XML prolog and <svg> element, a white background and the title
 * (NULL: none) centred on top. */
void plot_svg_begin(struct plot_svg *p, FILE *out, int width, int height, const char *title);
/* One chart in the rectangle (x, y, w, h) of the canvas; its legend takes
 * the rightmost 150 px of it. */
void plot_svg_chart(struct plot_svg *p, double x, double y, double w, double h,
		    const struct plot_chart *c);
/* A line of text (XML-escaped); anchor "start", "middle" or "end". */
void plot_svg_text(struct plot_svg *p, double x, double y, const char *anchor, int size,
		   const char *text);
/* Close the document. 0, or -1 when the stream had a write error. */
int plot_svg_end(struct plot_svg *p);

/* Ticks for [lo, hi] on a linear axis: step = 1, 2 or 5 x 10^k giving about
 * `want` intervals. Returns the step; *first and *last are the outermost
 * multiples of it that enclose [lo, hi]. */
double plot_nice_step(double lo, double hi, int want, double *first, double *last);
/* A tick label: v with the decimals its step needs ("0.5", "20", "1.25"). */
void plot_fmt_tick(char *buf, size_t len, double v, double step);

#endif
