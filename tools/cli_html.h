/* SPDX-License-Identifier: MIT */
/*
 * cli_html.h - the visual report of `ibfab run --html FILE` and `ibfab
 * compare --html FILE`: one self-contained HTML page (its data, styles and
 * scripts inline; nothing fetched when it is viewed) with the fabric drawn
 * by Graphviz and its cables coloured, frame by frame, by what happened on
 * them (utilisation, waiting for credits, PFC pauses, buffer occupancy)
 * under a time slider; the fabric-wide figure over time; the collectives'
 * timeline of a trace run; completion-time CDFs; and the run's summary or
 * compare's table. docs/report.md says what each part shows.
 *
 * Left out: per-VL series (the page sums the VLs of a cable end; links.csv
 * has them), packets, and cables of fabrics too large to lay out (the page
 * says so: hosts' cables beyond CLI_HTML_ALL_NODES nodes, every cable
 * beyond CLI_HTML_MAX_SWITCHES switches).
 */
#ifndef IBFAB_CLI_HTML_H
#define IBFAB_CLI_HTML_H

#include <stdio.h>

#include "models/fabric/fab.h"
#include "models/net/net.h"
#include "sim/sim.h"
#include "sim/sim_diag.h"

struct trace;

/* Every cable drawn up to this many nodes; above it, the switches and the
 * cables between them up to this many switches; and at most this many
 * cables either way (dot lays 3,000 cables out in seconds, not more). */
#define CLI_HTML_ALL_NODES 600
#define CLI_HTML_MAX_SWITCHES 600
#define CLI_HTML_MAX_CABLES 3000
/* The page's frames: samples are merged two by two past twice this many. */
#define CLI_HTML_FRAMES 256

/*
 * Per-cable time series of one run, kept for the page: a fab sampler
 * (cli_html_links_sample, at every sim.sample_ns) records each drawn cable
 * end's cumulative busy, credit-wait and paused time and its receive
 * buffer's occupancy; frames are merged two by two as they pass 2 x
 * CLI_HTML_FRAMES, so it holds at most 2 x CLI_HTML_FRAMES + 1 samples of
 * 2 x CLI_HTML_MAX_CABLES ends (28 bytes each) whatever the run's length.
 * It keeps what the drawing needs of the topology (the nodes' names, kinds
 * and tiers) and no pointer into the net or the fabric: it outlives both.
 */
struct cli_html_links;

/* NULL out of memory. */
struct cli_html_links *cli_html_links_new(const struct net *net, const struct fab *f);
void cli_html_links_sample(struct cli_html_links *h, struct fab *f, sim_time_t now);
void cli_html_links_free(struct cli_html_links *h);
/* Samples taken: each was one engine event of the fabric's sampler. */
uint64_t cli_html_links_samples(const struct cli_html_links *h);

/* A bar of the timeline: a trace's collective or send. */
struct cli_html_op {
	char label[80];
	const char *kind;	/* "allreduce" ... (trace_coll_names), "send" */
	sim_time_t start, end;
};
/* At most this many bars (the first in trace order). */
#define CLI_HTML_MAX_OPS 5000

/* The bars of trace t whose ops ran from start[i] to end[i]: *ops
 * (malloc'd, *n of them). 0, or -1 out of memory. */
int cli_html_ops(const struct trace *t, const sim_time_t *start, const sim_time_t *end,
		 struct cli_html_op **ops, size_t *n);

/* One run on the page (`compare` has one per fabric, chosen in the page). */
struct cli_html_view {
	const char *name;			/* the fabric's name; NULL on `run` */
	const struct cli_html_links *links;
	const struct cli_html_op *ops;		/* a trace run's timeline, else none */
	size_t nops;
	sim_time_t end_ps;			/* the run's end */
};

struct cli_html_page {
	const char *title;		/* "ibfab run: ..." */
	const char *subtitle;		/* the topology and workload */
	const char *text;		/* the summary or table, shown as text */
	const char *charts_title;	/* its heading */
	const char *charts_svg;		/* an SVG document (completion-time CDF ...), or NULL */
	const struct cli_html_view *views;
	int nviews;
};

/* A completion-time CDF of the samples (ps), as an SVG document in *svg
 * (malloc'd), `what` naming them ("message", "transfer"). 0, or -1 out of
 * memory. The samples' order changes (sim_samples_quantiles). */
struct sim_samples;
int cli_html_cdf_svg(struct sim_samples *s, const char *what, char **svg);

/* Write the page: 0, or -1 with d filled (Graphviz failed, out of memory,
 * a write error). */
int cli_html_write(FILE *out, const struct cli_html_page *pg, struct sim_diag *d);

#endif
