/* SPDX-License-Identifier: MIT */
/*
 * cli_html.c - the self-contained HTML report; see cli_html.h.
 *
 * The page is four things written in order: the style sheet
 * (tools/html/report.css), the fabric as Graphviz lays it out (an inline
 * SVG whose cables are <g id="cK"> and nodes <g id="nI">), the data as one
 * JSON document in a <script type="application/json">, and the script
 * (tools/html/report.js) that colours the cables for the frame the slider
 * shows and draws the timelines. The per-end series are bytes, 0..250 for
 * 0..1 of the metric, base64 in the JSON (frame-major: frame f, end e at
 * f x ends + e), so a 3,000-cable fabric over 256 frames is 2 MB a metric.
 * Everything written depends only on the inputs: the same run gives the
 * same page byte for byte (Graphviz's own output included).
 */
#define _GNU_SOURCE	/* open_memstream */
#include "tools/cli_html.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_json.h"
#include "sim/sim_stats.h"
#include "tools/cli_dot.h"
#include "tools/plot_svg.h"
#include "traces/trace.h"

extern const char cli_html_css[], cli_html_js[];

enum { DRAW_NONE, DRAW_SWITCHES, DRAW_ALL };

struct html_cable {
	int a, pa, b, pb;	/* nodes and ports: a's end transmits end 2k, b's 2k + 1 */
};

struct html_node {
	char *desc;
	uint8_t type;		/* enum net_node_type */
	bool drawn;
	int level;		/* tier: hosts 0, switches by distance (cli_dot_levels) */
};

struct cli_html_links {
	int draw;		/* DRAW_* */
	int nnodes, maxlevel;
	struct html_node *nodes;
	int ncables;
	struct html_cable *cables;
	int *port_of;		/* per end: its fab port index */
	/* frame boundaries: nb of them, boundary 0 at time 0 */
	size_t nb;
	uint32_t stride, pending;	/* samples per boundary, and since the last */
	uint64_t samples;		/* in all */
	sim_time_t *t;
	uint64_t *busy, *wait, *paused;	/* nb x ends, cumulative */
	uint32_t *buf;		/* nb x ends: the most occupancy seen in the frame ending there */
	uint32_t *cur_buf;	/* per end, since the last boundary */
};

#define MAX_B (2 * CLI_HTML_FRAMES + 1)

static bool skip_node(const struct net *n, int i)
{
	return n->nodes[i].agg;	/* a switch's SHARP aggregation node: inside the switch */
}

static int draw_mode(const struct net *n)
{
	int nodes = 0, sw = 0, cables = 0, swcables = 0;

	for (int i = 0; i < n->nnodes; i++) {
		if (skip_node(n, i))
			continue;
		nodes++;
		sw += n->nodes[i].type == NET_SWITCH;
		for (int p = 1; p <= n->nodes[i].nports; p++) {
			int r = n->nodes[i].ports[p].remote_node;

			if (!cli_dot_cable_end(n, i, p) || skip_node(n, r))
				continue;
			cables++;
			swcables += n->nodes[i].type == NET_SWITCH && n->nodes[r].type == NET_SWITCH;
		}
	}
	if (nodes <= CLI_HTML_ALL_NODES && cables <= CLI_HTML_MAX_CABLES)
		return DRAW_ALL;
	if (sw <= CLI_HTML_MAX_SWITCHES && swcables <= CLI_HTML_MAX_CABLES)
		return DRAW_SWITCHES;
	return DRAW_NONE;
}

static bool drawn_node(const struct net *n, int draw, int i)
{
	return !skip_node(n, i) && (draw == DRAW_ALL || n->nodes[i].type == NET_SWITCH);
}

struct cli_html_links *cli_html_links_new(const struct net *net, const struct fab *f)
{
	struct cli_html_links *h = calloc(1, sizeof(*h));
	int np = fab_nports(f), *base = NULL, total = 0, *idx = NULL, *lv = NULL;
	size_t ends;

	if (!h)
		return NULL;
	h->draw = draw_mode(net);
	h->stride = 1;
	h->nnodes = net->nnodes;
	h->nodes = calloc((size_t)net->nnodes + 1, sizeof(*h->nodes));
	lv = cli_dot_levels(net, &h->maxlevel);
	if (!h->nodes || !lv)
		goto fail;
	for (int i = 0; i < net->nnodes; i++) {
		h->nodes[i] = (struct html_node){ .desc = strdup(net->nodes[i].desc),
						   .type = (uint8_t)net->nodes[i].type,
						   .drawn = drawn_node(net, h->draw, i),
						   .level = lv[i] };
		if (!h->nodes[i].desc)
			goto fail;
	}
	base = malloc(((size_t)net->nnodes + 1) * sizeof(*base));
	if (!base)
		goto fail;
	for (int i = 0; i < net->nnodes; i++) {
		base[i] = total;
		total += net->nodes[i].nports + 1;
	}
	idx = malloc(((size_t)total + 1) * sizeof(*idx));
	if (!idx)
		goto fail;
	for (int i = 0; i < total; i++)
		idx[i] = -1;
	for (int i = 0; i < np; i++) {
		const struct fab_port_info *pi = fab_port(f, i);

		idx[base[pi->node] + pi->port] = i;
	}
	for (int pass = 0; pass < 2; pass++) {	/* count, then fill */
		int k = 0;

		for (int i = 0; h->draw != DRAW_NONE && i < net->nnodes; i++)
			for (int p = 1; p <= net->nodes[i].nports; p++) {
				const struct net_port *pp = &net->nodes[i].ports[p];

				if (!cli_dot_cable_end(net, i, p) || !drawn_node(net, h->draw, i) ||
				    !drawn_node(net, h->draw, pp->remote_node) ||
				    idx[base[i] + p] < 0 ||
				    idx[base[pp->remote_node] + pp->remote_port] < 0)
					continue;
				if (pass) {
					h->cables[k] = (struct html_cable){ i, p, pp->remote_node,
									    pp->remote_port };
					h->port_of[2 * k] = idx[base[i] + p];
					h->port_of[2 * k + 1] = idx[base[pp->remote_node] + pp->remote_port];
				}
				k++;
			}
		if (!pass) {
			h->ncables = k;
			h->cables = calloc((size_t)k + 1, sizeof(*h->cables));
			h->port_of = calloc(2 * (size_t)k + 1, sizeof(*h->port_of));
			if (!h->cables || !h->port_of)
				goto fail;
		}
	}
	ends = 2 * (size_t)h->ncables + 1;
	h->t = calloc(MAX_B, sizeof(*h->t));
	h->busy = calloc(MAX_B * ends, sizeof(*h->busy));
	h->wait = calloc(MAX_B * ends, sizeof(*h->wait));
	h->paused = calloc(MAX_B * ends, sizeof(*h->paused));
	h->buf = calloc(MAX_B * ends, sizeof(*h->buf));
	h->cur_buf = calloc(ends, sizeof(*h->cur_buf));
	if (!h->t || !h->busy || !h->wait || !h->paused || !h->buf || !h->cur_buf)
		goto fail;
	h->nb = 1;	/* time 0, nothing yet */
	free(base);
	free(idx);
	free(lv);
	return h;
fail:
	free(base);
	free(idx);
	free(lv);
	cli_html_links_free(h);
	return NULL;
}

void cli_html_links_free(struct cli_html_links *h)
{
	if (!h)
		return;
	for (int i = 0; h->nodes && i < h->nnodes; i++)
		free(h->nodes[i].desc);
	free(h->nodes);
	free(h->cables);
	free(h->port_of);
	free(h->t);
	free(h->busy);
	free(h->wait);
	free(h->paused);
	free(h->buf);
	free(h->cur_buf);
	free(h);
}

uint64_t cli_html_links_samples(const struct cli_html_links *h)
{
	return h ? h->samples : 0;
}

/* Every other boundary goes (the cumulative figures stay exact); a
 * merged frame's occupancy is the larger of the two. */
static void halve(struct cli_html_links *h)
{
	size_t e = 2 * (size_t)h->ncables, nb = (h->nb + 1) / 2;

	for (size_t j = 1; j < nb; j++) {
		size_t a = 2 * j - 1, b = 2 * j;

		h->t[j] = h->t[b];
		for (size_t k = 0; k < e; k++) {
			uint32_t x = h->buf[a * e + k], y = h->buf[b * e + k];

			h->busy[j * e + k] = h->busy[b * e + k];
			h->wait[j * e + k] = h->wait[b * e + k];
			h->paused[j * e + k] = h->paused[b * e + k];
			h->buf[j * e + k] = x > y ? x : y;
		}
	}
	h->nb = nb;
	h->stride *= 2;
}

void cli_html_links_sample(struct cli_html_links *h, struct fab *f, sim_time_t now)
{
	size_t e = 2 * (size_t)h->ncables;

	h->samples++;
	for (size_t k = 0; k < e; k++) {
		struct fab_sample s;
		uint32_t occ = 0;

		fab_port_sample(f, h->port_of[k], &s);
		for (int v = 0; v < FAB_MAX_VLS; v++)
			occ += s.buf_bytes[v];
		if (occ > h->cur_buf[k])
			h->cur_buf[k] = occ;
	}
	if (++h->pending < h->stride)
		return;
	h->pending = 0;
	if (h->nb == MAX_B)
		halve(h);
	size_t b = h->nb++;

	h->t[b] = now;
	for (size_t k = 0; k < e; k++) {
		const struct fab_port_info *pi = fab_port(f, h->port_of[k]);
		uint64_t w = 0, pz = 0;

		for (int v = 0; v < FAB_MAX_VLS; v++) {
			w += pi->vl[v].xmit_wait_ps;
			pz += pi->vl[v].paused_ps;
		}
		h->busy[b * e + k] = pi->busy_ps;
		h->wait[b * e + k] = w;
		h->paused[b * e + k] = pz;
		h->buf[b * e + k] = h->cur_buf[k];
		h->cur_buf[k] = 0;
	}
}

/* ---- the completion-time chart ------------------------------------------ */

#define CDF_POINTS 200

int cli_html_cdf_svg(struct sim_samples *s, const char *what, char **svg)
{
	double q[CDF_POINTS + 1], x[CDF_POINTS + 1], y[CDF_POINTS + 1];
	uint64_t v[CDF_POINTS + 1];
	char title[96], xl[96];
	size_t len = 0;
	FILE *out;

	*svg = NULL;
	for (int i = 0; i <= CDF_POINTS; i++)
		q[i] = (double)i / CDF_POINTS;
	sim_samples_quantiles(s, q, CDF_POINTS + 1, v);
	for (int i = 0; i <= CDF_POINTS; i++) {
		x[i] = (double)v[i] / SIM_US;
		y[i] = q[i];
	}
	snprintf(title, sizeof(title), "%c%s completion times (CDF of %zu)", what[0] - 32,
		 what + 1, s->n);
	snprintf(xl, sizeof(xl), "%s completion time (\xc2\xb5s, log scale)", what);
	struct plot_series ser = { .name = what, .x = x, .y = y, .n = s->n ? CDF_POINTS + 1 : 0,
				   .step = true };
	struct plot_chart ch = { .title = title, .xlabel = xl, .ylabel = "fraction completed",
				 .xlog = true, .xmin = NAN, .xmax = NAN, .ymin = 0, .ymax = 1,
				 .series = &ser, .nseries = 1 };
	struct plot_svg p;

	out = open_memstream(svg, &len);
	if (!out)
		return -1;
	plot_svg_begin(&p, out, 960, 380, NULL);
	plot_svg_chart(&p, 0, 0, 960, 380, &ch);
	if (plot_svg_end(&p) | fclose(out)) {
		free(*svg);
		*svg = NULL;
		return -1;
	}
	return 0;
}

/* ---- the page ----------------------------------------------------------- */

/* Text for an HTML element's content or a quoted attribute. */
static void html_text(FILE *out, const char *s)
{
	for (; s && *s; s++)
		switch (*s) {
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '&': fputs("&amp;", out); break;
		case '"': fputs("&quot;", out); break;
		default: fputc(*s, out);
		}
}

/* p[0..n) in base64 (RFC 4648) into s, which holds 4 * ceil(n / 3) + 1. */
static void base64(char *s, const unsigned char *p, size_t n)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
			     (i + 2 < n ? p[i + 2] : 0);

		*s++ = a[v >> 18 & 63];
		*s++ = a[v >> 12 & 63];
		*s++ = i + 1 < n ? a[v >> 6 & 63] : '=';
		*s++ = i + 2 < n ? a[v & 63] : '=';
	}
	*s = 0;
}

/* The fabric as DOT: the drawn nodes in tiers, each drawn cable an edge
 * with the id the script finds it by. */
static int topo_dot(const struct cli_html_links *h, char **text, size_t *len)
{
	FILE *out = open_memstream(text, len);

	if (!out)
		return -1;
	fprintf(out, "graph fabric {\n"
		"\tgraph [rankdir=BT, ranksep=1.2, nodesep=0.08, splines=false, outputorder=edgesfirst, fontname=\"Helvetica\", bgcolor=transparent];\n"
		"\tnode [fontname=\"Helvetica\", fontsize=9, style=filled, fillcolor=white, height=0.3, margin=\"0.04,0.02\"];\n"
		"\tedge [color=\"#bbbbbb\", penwidth=1];\n");
	for (int l = 0; l <= h->maxlevel; l++) {
		fprintf(out, "\t{ rank=same;\n");
		for (int i = 0; i < h->nnodes; i++) {
			const struct html_node *nd = &h->nodes[i];

			if (nd->level != l || !nd->drawn)
				continue;
			cli_dot_node(out, i, nd->type, nd->desc, nd->desc, true);
		}
		fprintf(out, "\t}\n");
	}
	for (int k = 0; k < h->ncables; k++) {
		const struct html_cable *c = &h->cables[k];
		/* the lower tier first: Graphviz ranks it below */
		bool up = h->nodes[c->b].level >= h->nodes[c->a].level;

		fprintf(out, "\tn%d -- n%d [id=\"c%d\"];\n", up ? c->a : c->b, up ? c->b : c->a, k);
	}
	fprintf(out, "}\n");
	return fclose(out) ? -1 : 0;
}

/* One byte per (frame, end): 0..250 for 0..1 of the metric. */
static unsigned char q250(double v)
{
	if (!(v > 0))
		return 0;
	return v >= 1 ? 250 : (unsigned char)(v * 250 + 0.5);
}

/* A view's series as JSON fields (frames, t, util, wait, pause, buf). */
static int view_series(struct sim_json *j, const struct cli_html_links *h)
{
	size_t e = 2 * (size_t)h->ncables, nf = h->nb - 1;
	unsigned char *v = malloc(nf * e + 1);
	char *b64 = malloc(4 * (nf * e / 3 + 1) + 1);
	uint32_t bmax = 0;
	static const char *const keys[] = { "util", "wait", "pause", "buf" };

	if (!v || !b64) {
		free(v);
		free(b64);
		return -1;
	}
	sim_json_ku64(j, "frames", nf);
	sim_json_key(j, "t");
	sim_json_arr_begin(j);
	for (size_t b = 0; b < h->nb; b++)
		sim_json_u64(j, h->t[b]);
	sim_json_arr_end(j);
	for (size_t b = 1; b < h->nb; b++)
		for (size_t k = 0; k < e; k++)
			if (h->buf[b * e + k] > bmax)
				bmax = h->buf[b * e + k];
	sim_json_ku64(j, "bufmax", bmax);
	for (int m = 0; m < 4; m++) {
		for (size_t f = 0; f < nf; f++) {
			double dt = (double)(h->t[f + 1] - h->t[f]);

			for (size_t k = 0; k < e; k++) {
				size_t a = f * e + k, b = (f + 1) * e + k;
				double x;

				if (m == 3)
					x = bmax ? (double)h->buf[b] / bmax : 0;
				else {
					const uint64_t *c = m == 0 ? h->busy : m == 1 ? h->wait : h->paused;

					x = dt > 0 ? (double)(c[b] - c[a]) / dt : 0;
				}
				v[f * e + k] = q250(x);
			}
		}
		base64(b64, v, nf * e);
		sim_json_kstr(j, keys[m], b64);
	}
	free(v);
	free(b64);
	return 0;
}

int cli_html_ops(const struct trace *t, const sim_time_t *start, const sim_time_t *end,
		 struct cli_html_op **ops, size_t *n)
{
	size_t k = 0;

	*ops = calloc(t->nops < CLI_HTML_MAX_OPS ? t->nops + 1 : CLI_HTML_MAX_OPS, sizeof(**ops));
	*n = 0;
	if (!*ops)
		return -1;
	for (size_t i = 0; i < t->nops && k < CLI_HTML_MAX_OPS; i++) {
		const struct trace_op *op = &t->ops[i];
		struct cli_html_op *o = &(*ops)[k];

		if (op->kind != TRACE_COLL && op->kind != TRACE_SEND)
			continue;	/* computes and receives: the ranks' own */
		if (op->kind == TRACE_COLL)
			snprintf(o->label, sizeof(o->label), "%s%s%s", op->name,
				 op->name[0] ? ": " : "", trace_coll_names[op->coll]);
		else
			snprintf(o->label, sizeof(o->label), "%s%ssend %d->%d", op->name,
				 op->name[0] ? ": " : "", op->rank, op->peer);
		o->kind = op->kind == TRACE_COLL ? trace_coll_names[op->coll] : "send";
		o->start = start[i];
		o->end = end[i];
		k++;
	}
	*n = k;
	return 0;
}

static void view_ops(struct sim_json *j, const struct cli_html_view *v)
{
	sim_json_key(j, "ops");
	sim_json_arr_begin(j);
	for (size_t i = 0; i < v->nops; i++) {
		sim_json_arr_begin(j);
		sim_json_str(j, v->ops[i].label);
		sim_json_u64(j, v->ops[i].start);
		sim_json_u64(j, v->ops[i].end);
		sim_json_str(j, v->ops[i].kind);
		sim_json_arr_end(j);
	}
	sim_json_arr_end(j);
}

static int write_data(FILE *out, const struct cli_html_page *pg)
{
	const struct cli_html_links *h0 = pg->views[0].links;
	struct sim_json j;
	static const char *const draws[] = { "none", "switches", "all" };

	sim_json_init(&j, out, 0);
	sim_json_obj_begin(&j);
	sim_json_kstr(&j, "draw", draws[h0->draw]);
	sim_json_key(&j, "cables");
	sim_json_arr_begin(&j);
	for (int k = 0; k < h0->ncables; k++) {
		const struct html_cable *c = &h0->cables[k];

		sim_json_arr_begin(&j);
		sim_json_str(&j, h0->nodes[c->a].desc);
		sim_json_i64(&j, c->pa);
		sim_json_str(&j, h0->nodes[c->b].desc);
		sim_json_i64(&j, c->pb);
		sim_json_arr_end(&j);
	}
	sim_json_arr_end(&j);
	sim_json_key(&j, "views");
	sim_json_arr_begin(&j);
	for (int i = 0; i < pg->nviews; i++) {
		const struct cli_html_view *v = &pg->views[i];

		sim_json_obj_begin(&j);
		sim_json_kstr(&j, "name", v->name ? v->name : "");
		sim_json_ku64(&j, "end", v->end_ps);
		if (view_series(&j, v->links))
			return -1;
		view_ops(&j, v);
		sim_json_obj_end(&j);
	}
	sim_json_arr_end(&j);
	sim_json_obj_end(&j);
	return sim_json_finish(&j);
}

/* JSON inside <script>: "</" written as "<\/" so no string ends the element. */
static int put_script_safe(FILE *out, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '<' && i + 1 < n && s[i + 1] == '/') {
			fputs("<\\/", out);
			i++;
			continue;
		}
		fputc(s[i], out);
	}
	return ferror(out) ? -1 : 0;
}

int cli_html_write(FILE *out, const struct cli_html_page *pg, struct sim_diag *d)
{
	const struct cli_html_links *h0 = pg->views[0].links;
	char *dot = NULL, *svg = NULL, *data = NULL;
	size_t dotlen = 0, datalen = 0;
	FILE *mem;
	int rc = -1;

	if (h0->draw != DRAW_NONE) {
		if (topo_dot(h0, &dot, &dotlen))
			return sim_diag_set(d, NULL, 0, 0, "out of memory");
		if (cli_dot_svg(dot, dotlen, &svg, d))
			goto out;
	}
	mem = open_memstream(&data, &datalen);
	if (!mem || write_data(mem, pg) || fclose(mem)) {
		sim_diag_set(d, NULL, 0, 0, "out of memory");
		goto out;
	}
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>", out);
	html_text(out, pg->title);
	fputs("</title>\n<style>\n", out);
	fputs(cli_html_css, out);
	fputs("</style>\n</head>\n<body data-ready=\"0\">\n<header><h1>", out);
	html_text(out, pg->title);
	fputs("</h1>\n<p class=\"sub\">", out);
	html_text(out, pg->subtitle);
	fputs("</p></header>\n<div id=\"errors\" hidden></div>\n", out);
	fputs("<section id=\"fabric\">\n<h2>The fabric over time</h2>\n"
	      "<div class=\"controls\">\n"
	      "<label id=\"viewbox\" hidden>fabric <select id=\"view\"></select></label>\n"
	      "<label>show <select id=\"metric\">"
	      "<option value=\"util\">utilisation (busy / interval)</option>"
	      "<option value=\"wait\">waiting for credits (PortXmitWait / interval)</option>"
	      "<option value=\"pause\">paused by PFC (paused / interval)</option>"
	      "<option value=\"buf\">receive buffer (of the most any port held)</option>"
	      "</select></label>\n"
	      "<button id=\"play\" type=\"button\">play</button>\n"
	      "<input id=\"slider\" type=\"range\" min=\"0\" max=\"0\" value=\"0\" step=\"1\">\n"
	      "<span id=\"when\"></span>\n</div>\n"
	      "<div id=\"legend\"></div>\n<div class=\"row\">\n<div id=\"topo\">", out);
	if (svg)
		fputs(svg, out);
	else
		fputs("<p class=\"note\">This fabric has too many switches and cables to lay out; "
		      "the busiest cable ends are listed beside it, and links.csv (--csv) has "
		      "every port.</p>", out);
	fputs("</div>\n<div id=\"side\"><h3>Busiest cable ends in this frame</h3>"
	      "<table id=\"top\"><thead><tr><th>from</th><th>to</th><th>value</th></tr></thead>"
	      "<tbody></tbody></table></div>\n</div>\n"
	      "<h3>Across the fabric</h3><svg id=\"overall\" width=\"960\" height=\"140\"></svg>\n"
	      "</section>\n"
	      "<section id=\"timeline\" hidden>\n<h2>Collectives and transfers</h2>\n"
	      "<svg id=\"ops\" width=\"960\" height=\"40\"></svg>\n</section>\n", out);
	if (pg->charts_svg) {
		const char *s = strstr(pg->charts_svg, "<svg");

		fputs("<section id=\"charts\">\n<h2>", out);
		html_text(out, pg->charts_title ? pg->charts_title : "Charts");
		fputs("</h2>\n", out);
		fputs(s ? s : "", out);
		fputs("</section>\n", out);
	}
	fputs("<section id=\"summary\">\n<h2>Summary</h2>\n<pre>", out);
	html_text(out, pg->text);
	fputs("</pre>\n</section>\n<script id=\"data\" type=\"application/json\">", out);
	if (put_script_safe(out, data, datalen))
		goto werr;
	fputs("</script>\n<script>\n", out);
	fputs(cli_html_js, out);
	fputs("</script>\n</body>\n</html>\n", out);
	if (ferror(out))
		goto werr;
	rc = 0;
	goto out;
werr:
	sim_diag_set(d, NULL, 0, 0, "write error");
out:
	free(dot);
	free(svg);
	free(data);
	return rc;
}
