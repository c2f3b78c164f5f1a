/* SPDX-License-Identifier: MIT */
/*
 * cli_perftest.c - perftest's result tables for the perftest sweeps of
 * `ibfab run` (the pattern is traces/trace_spec.c's; docs/perftest.md).
 *
 * perftest stamps the CPU cycle counter before each post (tposted[]) and
 * when a completion is polled (tcompleted[]); the simulator has the same
 * two instants per message: `start` (posted, after its dependencies) and
 * `completed` (the requester's CQE, polled). The reports below follow
 * perftest's print_report_bw() and print_report_lat() step by step, with
 * picoseconds for cycles, so the same definitions give the same columns:
 *
 *   BW average = bytes x iters / (tcompleted[iters-1] - tposted[0]);
 *   BW peak    = bytes / min over i <= j, j a polled completion, of
 *                floor((tcompleted[j] - tposted[i]) / (j - i + 1));
 *   latency    = the iters - 1 gaps between consecutive posts, halved for
 *                ping-pongs (WRITE, SEND), whole for READ; sorted, the two
 *                largest dropped, then min, median, mean, stdev and the
 *                99% and 99.9% entries as perftest indexes them.
 *
 * perftest finds the peak with an O(iters^2 / cq_mod) double loop; here a
 * binary search on the answer with one O(iters) scan per step gives the
 * same integer minimum, so long sweeps do not stall the report.
 *
 * The sweeps are found by parsing the run's --traffic specs again, in the
 * same order, with the same net and seed: trace_spec_parse() is a pure
 * function of those, so the messages land at the same indexes. The
 * messages are checked against the run's list all the same, and a
 * mismatch is an error rather than a wrong table.
 */
#include "tools/cli_perftest.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_json.h"
#include "tools/cli_report.h"

/* perftest_parameters.h: RESULT_LINE, RESULT_FMT_G, RESULT_FMT_LAT (+ RESULT_EXT) */
#define RESULT_LINE "---------------------------------------------------------------------------------------\n"
const char cli_perftest_bw_header[] =
	" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n";
const char cli_perftest_lat_header[] =
	" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]"
	"    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n";

/* perftest's REPORT_FMT, REPORT_FMT_EXT (average under 0.1 Gb/s) and REPORT_FMT_LAT */
#define REPORT_FMT " %-7" PRIu64 "    %-10" PRIu32 "       %-7.2f            %-7.2f\t\t   %-7.6f\n"
#define REPORT_FMT_EXT " %-7" PRIu64 "    %" PRIu32 "           %-7.6f            %-7.6f            %-7.6f\n"
#define REPORT_FMT_LAT " %-7" PRIu64 " %" PRIu32 "          %-7.2f        %-7.2f      %-7.2f  \t" \
	"       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n"

/* perftest's LAT_MEASURE_TAIL: the largest samples left out of the statistics */
#define LAT_TAIL 2

static const char *const op_names[] = {
	[FAB_OP_WRITE] = "write", [FAB_OP_READ] = "read", [FAB_OP_SEND] = "send",
};

/* perftest's test titles ("RDMA_Write BW Test"): testsStr[] + " BW Test" / " Latency Test" */
static const char *const verb_titles[] = {
	[FAB_OP_WRITE] = "RDMA_Write", [FAB_OP_READ] = "RDMA_Read", [FAB_OP_SEND] = "Send",
};

static const char *host_name(const struct net *net, int node)
{
	if (!net || node < 0 || node >= net->nnodes)
		return "?";
	return net->nodes[node].desc ? net->nodes[node].desc : net->nodes[node].id;
}

static bool msg_ok(const struct fab_msg *m)
{
	return m->finished && m->done && m->cqe && m->status == 0;
}

/*
 * Is there a window i <= j, with j a polled completion, whose
 * floor((c[j] - p[i]) / (j - i + 1)) is at most lam? With L = lam + 1 that
 * is c[j] - p[i] <= L (j - i + 1) - 1, i.e.
 * c[j] - L (j + 1) + 1 <= max over i <= j of (p[i] - L i): one scan.
 */
static bool window_fits(const sim_time_t *p, const sim_time_t *c, uint32_t n, uint32_t cqm,
			uint64_t lam)
{
	__int128 L = (__int128)lam + 1, best = 0;

	for (uint32_t j = 0; j < n; j++) {
		__int128 g = (__int128)p[j] - L * j;

		if (!j || g > best)
			best = g;
		/* perftest signals WR j when j % cq_mod == cq_mod - 1, and the last */
		if ((j % cqm == cqm - 1 || j == n - 1) &&
		    (__int128)c[j] - L * ((__int128)j + 1) + 1 <= best)
			return true;
	}
	return false;
}

/* The smallest per-message time over the windows, in ps (perftest's opt_delta). */
static uint64_t peak_delta(const sim_time_t *p, const sim_time_t *c, uint32_t n, uint32_t cqm)
{
	uint64_t lo = 0, hi = c[n - 1] - p[0];	/* the whole run, a window that fits */

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (window_fits(p, c, n, cqm, mid))
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static int bw_row(const struct trace_perftest *pt, const struct fab_msgs *m, size_t base,
		  struct cli_perftest_row *row)
{
	uint32_t n = pt->iters;
	sim_time_t *p, *c;
	uint64_t total, opt;

	for (uint32_t i = 0; i < n; i++)
		if (!msg_ok(&m->v[base + i]))
			return 0;
	p = malloc(sizeof(*p) * n);
	c = malloc(sizeof(*c) * n);
	if (!p || !c) {
		free(p);
		free(c);
		return -1;
	}
	for (uint32_t i = 0; i < n; i++) {
		p[i] = m->v[base + i].start;
		c[i] = m->v[base + i].completed;
	}
	total = c[n - 1] - p[0];
	opt = peak_delta(p, c, n, pt->cq_mod ? pt->cq_mod : 1);
	free(p);
	free(c);
	if (!total || !opt)
		return 0;	/* no time passed: not a measurement */
	/* bits per ps = Tb/s; x 1000 = Gb/s (perftest's 125000000 B/s per Gb/s) */
	row->bw_avg_gbps = (double)row->bytes * n * 8 * 1e3 / (double)total;
	row->msg_rate_mpps = (double)n * 1e6 / (double)total;
	row->bw_peak_gbps = (double)row->bytes * 8 * 1e3 / (double)opt;
	row->ok = true;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int lat_row(const struct trace_perftest *pt, const struct fab_msgs *m, size_t base,
		   struct cli_perftest_row *row)
{
	uint32_t n = pt->iters, per = pt->per_iter, cnt;
	double f = pt->op == FAB_OP_READ ? 1 : 2;	/* perftest's rtt_factor */
	double us = 1e6 * f, var = 0, avg;
	unsigned __int128 sum = 0;
	uint64_t *d;

	for (uint32_t i = 0; i < n * per; i++)
		if (!msg_ok(&m->v[base + i]))
			return 0;
	d = malloc(sizeof(*d) * (n - 1));
	if (!d)
		return -1;
	/* the client's posts: ping r is message base + r x per */
	for (uint32_t r = 0; r + 1 < n; r++) {
		const struct fab_msg *ping = &m->v[base + (size_t)r * per];

		d[r] = ping[per].start - ping->start;
	}
	qsort(d, n - 1, sizeof(*d), cmp_u64);
	cnt = n - 1 - LAT_TAIL;		/* iters >= 5 (the parser's minimum): cnt >= 2 */
	/* in whole ps first, so equal samples give a mean equal to each of
	 * them and a deviation of exactly 0 (an idle fabric) */
	for (uint32_t i = 0; i < cnt; i++)
		sum += d[i];
	avg = (double)(uint64_t)(sum / cnt) + (double)(uint64_t)(sum % cnt) / cnt;
	for (uint32_t i = 0; i < cnt; i++)
		var += ((double)d[i] - avg) * ((double)d[i] - avg);
	avg /= us;
	var /= us * us;
	row->t_min = (double)d[0] / us;
	row->t_max = (double)d[cnt] / us;	/* perftest: delta[measure_cnt] */
	/* perftest's get_median(): the middle one, or the mean of the middle two */
	row->t_typical = (cnt - 1) % 2 ? ((double)d[cnt / 2] + (double)d[cnt / 2 - 1]) / 2 / us :
					 (double)d[cnt / 2] / us;
	row->t_avg = avg;
	row->t_stdev = sqrt(var / cnt);
	row->t_p99 = (double)d[(size_t)ceil(cnt * 0.99)] / us;
	row->t_p999 = (double)d[(size_t)ceil(cnt * 0.999)] / us;
	row->ok = true;
	free(d);
	return 0;
}

int cli_perftest_rows(const struct trace_perftest *pt, const struct fab_msgs *m,
		      struct cli_perftest_row *rows)
{
	size_t block = (size_t)pt->iters * pt->per_iter;

	if (!pt->valid || pt->nsizes > TRACE_PERFTEST_MAX_SIZES || pt->iters < LAT_TAIL + 3 ||
	    !pt->per_iter || pt->first + block * pt->nsizes > m->n)
		return -1;
	for (uint32_t k = 0; k < pt->nsizes; k++) {
		size_t base = pt->first + block * k;
		struct cli_perftest_row *row = &rows[k];

		memset(row, 0, sizeof(*row));
		row->bytes = pt->sizes[k];
		row->iters = pt->iters;
		if (pt->mode == TRACE_PERFTEST_BW ? bw_row(pt, m, base, row) :
						    lat_row(pt, m, base, row))
			return -1;
	}
	return 0;
}

static const char *test_title(const struct trace_perftest *pt, char *buf, size_t len)
{
	snprintf(buf, len, "%s %s Test", verb_titles[pt->op],
		 pt->mode == TRACE_PERFTEST_BW ? "BW" : "Latency");
	return buf;
}

/* The perftest command line that runs the same test on real hardware. */
static void compare_cmd(FILE *out, const struct trace_perftest *pt, const struct fab_params *p)
{
	bool bw = pt->mode == TRACE_PERFTEST_BW;

	fprintf(out, "ib_%s_%s", op_names[pt->op], bw ? "bw" : "lat");
	if (pt->range && pt->nsizes && pt->sizes[0] == 2 && pt->sizes[pt->nsizes - 1] == 8 << 20)
		fputs(" -a", out);
	else if (pt->nsizes == 1)
		fprintf(out, " -s %" PRIu64, pt->sizes[0]);
	else
		fputs(" -s SIZE (once per size)", out);
	fprintf(out, " -n %" PRIu32, pt->iters);
	if (bw)
		fprintf(out, " -t %" PRIu32 " -Q %" PRIu32, pt->tx_depth, pt->cq_mod);
	if (p) {
		fprintf(out, " -m %" PRIu32, p->mtu);
		/* the model inlines every WR up to hca.max_inline; perftest's
		 * default is 220/236 B in latency tests and none in bandwidth
		 * tests, so name it. READs carry no data out: no inline. */
		if (pt->op != FAB_OP_READ)
			fprintf(out, " -I %" PRIu32, p->hca_max_inline);
	}
	if (pt->mem == HCA_MEM_GPU)
		fputs(" --use_cuda=0", out);
	if (bw)
		fputs(" --report_gbits", out);
}

void cli_perftest_table(FILE *out, const struct trace_perftest *pt, const char *spec,
			const struct net *net, const struct fab_params *p,
			const struct cli_perftest_row *rows)
{
	bool bw = pt->mode == TRACE_PERFTEST_BW;
	uint32_t missing = 0;
	char title[64];

	fputs(RESULT_LINE, out);
	fprintf(out, "                    %s\n", test_title(pt, title, sizeof(title)));
	fprintf(out, " Simulated       : %s -> %s, %s\n", host_name(net, pt->src),
		host_name(net, pt->dst), spec ? spec : "perftest");
	fputs(" Compare with    : ", out);
	compare_cmd(out, pt, p);
	fputs("\n" RESULT_LINE, out);
	fputs(bw ? cli_perftest_bw_header : cli_perftest_lat_header, out);
	for (uint32_t k = 0; k < pt->nsizes; k++) {
		const struct cli_perftest_row *r = &rows[k];

		if (!r->ok) {
			missing++;
			continue;
		}
		if (!bw)
			fprintf(out, REPORT_FMT_LAT, r->bytes, r->iters, r->t_min, r->t_max,
				r->t_typical, r->t_avg, r->t_stdev, r->t_p99, r->t_p999);
		else if (r->bw_avg_gbps < 0.1)	/* perftest's inc_accuracy */
			fprintf(out, REPORT_FMT_EXT, r->bytes, r->iters, r->bw_peak_gbps,
				r->bw_avg_gbps, r->msg_rate_mpps);
		else
			fprintf(out, REPORT_FMT, r->bytes, r->iters, r->bw_peak_gbps,
				r->bw_avg_gbps, r->msg_rate_mpps);
	}
	fputs(RESULT_LINE, out);
	if (missing)
		fprintf(out, " %" PRIu32 " of %" PRIu32 " sizes did not finish (run cut short, or a failed work request)\n",
			missing, pt->nsizes);
}

/* ---- finding the sweeps of a run ---------------------------------------- */

struct sweep {
	const char *spec;
	struct trace_perftest pt;
};

/* Do the run's messages from `off` on match the ones this spec makes? */
static bool same_layout(const struct fab_msgs *run, size_t off, const struct fab_msgs *one)
{
	if (off + one->n > run->n)
		return false;
	for (size_t i = 0; i < one->n; i++) {
		const struct fab_msg *a = &run->v[off + i], *b = &one->v[i];

		if (a->src != b->src || a->dst != b->dst || a->bytes != b->bytes ||
		    a->op != b->op || a->after_cqe != b->after_cqe ||
		    (b->after < 0 ? a->after >= 0 : a->after != b->after + (int32_t)off))
			return false;
	}
	return true;
}

/* The perftest sweeps among r's specs, with their place in r->msgs. */
static int find_sweeps(const struct cli_report *r, struct sweep **out, int *n)
{
	struct sweep *v = NULL;
	size_t off = 0;
	int k = 0;

	*out = NULL;
	*n = 0;
	for (int i = 0; i < r->ntraffic; i++)
		if (!strncmp(r->traffic[i], "perftest", 8) &&
		    (!r->traffic[i][8] || r->traffic[i][8] == ':'))
			k++;
	if (!k)
		return 0;
	v = calloc((size_t)k, sizeof(*v));
	if (!v)
		return -1;
	k = 0;
	for (int i = 0; i < r->ntraffic; i++) {
		struct fab_msgs one = { 0 };
		struct trace_perftest pt;
		struct sim_diag d;

		if (trace_spec_parse_sweep(r->traffic[i], r->net, r->seed, &one, &pt, &d)) {
			fab_msgs_free(&one);
			free(v);
			return -1;
		}
		if (pt.valid) {
			if (!same_layout(r->msgs, off, &one)) {
				fab_msgs_free(&one);
				free(v);
				return -1;
			}
			pt.first += off;
			v[k].spec = r->traffic[i];
			v[k++].pt = pt;
		}
		off += one.n;
		fab_msgs_free(&one);
	}
	*out = v;
	*n = k;
	return 0;
}

int cli_perftest_report(FILE *out, const struct cli_report *r)
{
	struct cli_perftest_row rows[TRACE_PERFTEST_MAX_SIZES];
	struct sweep *v;
	int n, rc = 0;

	if (find_sweeps(r, &v, &n))
		return -1;
	for (int i = 0; i < n && !rc; i++) {
		rc = cli_perftest_rows(&v[i].pt, r->msgs, rows);
		if (!rc) {
			fputc('\n', out);
			cli_perftest_table(out, &v[i].pt, v[i].spec, r->net, r->params, rows);
		}
	}
	free(v);
	return rc;
}

static void json_row(struct sim_json *j, const struct trace_perftest *pt,
		     const struct cli_perftest_row *row)
{
	sim_json_obj_begin(j);
	sim_json_ku64(j, "bytes", row->bytes);
	sim_json_ku64(j, "iterations", row->iters);
	if (pt->mode == TRACE_PERFTEST_BW) {
		sim_json_kdouble(j, "bw_peak_gbps", row->bw_peak_gbps);
		sim_json_kdouble(j, "bw_avg_gbps", row->bw_avg_gbps);
		sim_json_kdouble(j, "msg_rate_mpps", row->msg_rate_mpps);
	} else {
		sim_json_kdouble(j, "t_min_us", row->t_min);
		sim_json_kdouble(j, "t_max_us", row->t_max);
		sim_json_kdouble(j, "t_typical_us", row->t_typical);
		sim_json_kdouble(j, "t_avg_us", row->t_avg);
		sim_json_kdouble(j, "t_stdev_us", row->t_stdev);
		sim_json_kdouble(j, "p99_us", row->t_p99);
		sim_json_kdouble(j, "p99_9_us", row->t_p999);
	}
	sim_json_obj_end(j);
}

void cli_perftest_json(struct sim_json *j, const struct cli_report *r)
{
	struct cli_perftest_row rows[TRACE_PERFTEST_MAX_SIZES];
	struct sweep *v;
	char title[64];
	int n;

	if (find_sweeps(r, &v, &n)) {
		j->err = true;
		return;
	}
	if (!n)
		return;
	sim_json_key(j, "perftest");
	sim_json_arr_begin(j);
	for (int i = 0; i < n; i++) {
		const struct trace_perftest *pt = &v[i].pt;
		bool complete = true;

		if (cli_perftest_rows(pt, r->msgs, rows)) {
			j->err = true;
			break;
		}
		for (uint32_t k = 0; k < pt->nsizes; k++)
			complete &= rows[k].ok;
		sim_json_obj_begin(j);
		sim_json_kstr(j, "spec", v[i].spec);
		sim_json_kstr(j, "test", test_title(pt, title, sizeof(title)));
		sim_json_kstr(j, "op", op_names[pt->op]);
		sim_json_kstr(j, "mode", pt->mode == TRACE_PERFTEST_BW ? "bw" : "lat");
		sim_json_kstr(j, "src", host_name(r->net, pt->src));
		sim_json_kstr(j, "dst", host_name(r->net, pt->dst));
		sim_json_ku64(j, "iters", pt->iters);
		sim_json_ku64(j, "tx_depth", pt->tx_depth);
		sim_json_ku64(j, "cq_mod", pt->cq_mod);
		sim_json_kbool(j, "complete", complete);
		sim_json_key(j, "rows");
		sim_json_arr_begin(j);
		for (uint32_t k = 0; k < pt->nsizes; k++)
			if (rows[k].ok)
				json_row(j, pt, &rows[k]);
		sim_json_arr_end(j);
		sim_json_obj_end(j);
	}
	sim_json_arr_end(j);
	free(v);
}
