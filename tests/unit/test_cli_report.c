/* SPDX-License-Identifier: MIT */
/*
 * test_cli_report.c - the reports of `ibfab run` (tools/cli_report.c) on a
 * small fabric built and run here: node names that need escaping reach the
 * JSON and the CSV intact, the JSON is the same twice, the time series has
 * one row per sample, port and VL in use, utilisation is right on a link
 * that is busy all the time, and the automatic sample interval lands near
 * 1000 samples.
 */
#include <CUnit/CUnit.h>
#include <stdlib.h>
#include <string.h>

#include "models/fabric/fab.h"
#include "models/net/net.h"
#include "models/sm/sm.h"
#include "tests/unit/test_main.h"
#include "tools/cli_compare.h"
#include "tools/cli_help.h"
#include "tools/cli_report.h"
#include "tools/cli_run.h"
#include "traces/import.h"
#include "traces/trace.h"

/* Names a topology file may contain (net.h refuses '"'): a comma, a
 * backslash, non-ASCII. */
#define H0 "h,0 C:\\hca"
#define H1 "h1 caf\xc3\xa9"

struct world {
	struct net net;
	struct fab_params p;
	struct fab_msgs msgs;
	struct fab *fab;
};

/* H0 - sw - H1, one message of `bytes` from H0 to H1, plus a ping-pong. */
static void build(struct world *w, uint64_t bytes)
{
	struct sim_diag d;
	int h0, h1, sw;

	memset(w, 0, sizeof(*w));
	net_init(&w->net);
	h0 = net_add_node(&w->net, NET_CA, 1, "H-0", H0, &d);
	h1 = net_add_node(&w->net, NET_CA, 1, "H-1", H1, &d);
	sw = net_add_node(&w->net, NET_SWITCH, 4, "S-0", "sw", &d);
	CU_ASSERT_FATAL(h0 >= 0 && h1 >= 0 && sw >= 0);
	CU_ASSERT_FATAL(net_connect(&w->net, h0, 1, sw, 1, 0, &d) == 0);
	CU_ASSERT_FATAL(net_connect(&w->net, h1, 1, sw, 2, 0, &d) == 0);
	CU_ASSERT_FATAL(sm_route_minhop(&w->net, &d) == 0);
	fab_params_default(&w->p);
	w->p.host_model = false;	/* times below are the fabric's: hca.latency only */

	struct fab_msg m = { .src = (uint32_t)h0, .dst = (uint32_t)h1, .bytes = bytes,
			     .after = -1, .stream = 0 };
	struct fab_msg ping = { .src = (uint32_t)h1, .dst = (uint32_t)h0, .bytes = 64,
				.after = -1, .stream = 1, .sl = 1 };
	struct fab_msg pong = { .src = (uint32_t)h0, .dst = (uint32_t)h1, .bytes = 64,
				.after = 1, .stream = 2, .sl = 1 };

	CU_ASSERT_FATAL(fab_msgs_add(&w->msgs, &m) == 0);
	CU_ASSERT_FATAL(fab_msgs_add(&w->msgs, &ping) == 0);
	CU_ASSERT_FATAL(fab_msgs_add(&w->msgs, &pong) == 0);
	w->msgs.nstreams = 3;
}

static void create(struct world *w)
{
	struct sim_diag d;

	w->fab = fab_create(&w->net, &w->p, &w->msgs, 1, &d);
	CU_ASSERT_FATAL(w->fab != NULL);
}

static void run(struct world *w)
{
	struct sim_diag d;

	CU_ASSERT_FATAL(fab_run(w->fab, &d) == 0);
}

static void destroy(struct world *w)
{
	fab_destroy(w->fab);
	fab_msgs_free(&w->msgs);
	net_free(&w->net);
}

static void fill_report(struct world *w, struct cli_report *r)
{
	static const char *const specs[] = { "by hand" };

	memset(r, 0, sizeof(*r));
	r->net = &w->net;
	r->params = &w->p;
	r->msgs = &w->msgs;
	r->fab = w->fab;
	r->events = fab_engine(w->fab)->events;
	r->seed = 1;
	r->topo_source = "test";
	r->traffic = specs;
	r->ntraffic = 1;
	r->wall_s = 0.25;
	r->reproducible = true;
}

static char *json_of(uint64_t bytes)
{
	struct world w;
	struct cli_report r;
	char *text = NULL;
	size_t len;
	FILE *f;

	build(&w, bytes);
	create(&w);
	run(&w);
	fill_report(&w, &r);
	f = open_memstream(&text, &len);
	CU_ASSERT_FATAL(f != NULL);
	CU_ASSERT_EQUAL(cli_report_json(f, &r), 0);
	fclose(f);
	destroy(&w);
	return text;
}

static void test_json(void)
{
	char *a = json_of(65536), *b = json_of(65536);

	CU_ASSERT_STRING_EQUAL(a, b);		/* deterministic */
	/* escaped names, and pure ASCII out */
	CU_ASSERT_PTR_NOT_NULL(strstr(a, "\"src\": \"h,0 C:\\\\hca\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(a, "\"dst\": \"h1 caf\\u00e9\""));
	for (const char *p = a; *p; p++)
		CU_ASSERT_FATAL((unsigned char)*p < 0x80);
	/* --reproducible: wall_s 0 and no rates */
	CU_ASSERT_PTR_NOT_NULL(strstr(a, "\"wall_s\": 0,"));
	CU_ASSERT_PTR_NULL(strstr(a, "events_per_s"));
	CU_ASSERT_PTR_NOT_NULL(strstr(a, "\"messages_delivered\": 3,"));
	CU_ASSERT_PTR_NOT_NULL(strstr(a, "\"drops\": 0,"));
	CU_ASSERT_PTR_NOT_NULL(strstr(a, "\"complete\": true,"));
	/* the 64 KiB message went on VL0, the ping-pong (SL1) on VL1 */
	CU_ASSERT_PTR_NOT_NULL(strstr(a, "\"vl\": 1,"));
	/* VLs 2 and 3 exist (ib.vls=4) but carried nothing: left out */
	const char *ports = strstr(a, "\"ports\": [");

	CU_ASSERT_PTR_NOT_NULL_FATAL(ports);
	CU_ASSERT_PTR_NOT_NULL(strstr(ports, "\"vl\": 0,"));
	CU_ASSERT_PTR_NULL(strstr(ports, "\"vl\": 2,"));
	CU_ASSERT_PTR_NULL(strstr(ports, "\"vl\": 3,"));
	free(a);
	free(b);
}

static void test_summary(void)
{
	struct world w;
	struct cli_report r;
	char *text = NULL;
	size_t len;
	FILE *f;

	build(&w, 65536);
	create(&w);
	run(&w);
	fill_report(&w, &r);
	r.reproducible = false;
	f = open_memstream(&text, &len);
	cli_report_summary(f, &r);
	fclose(f);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "3 / 3 delivered"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "64.12 KiB payload"));	/* 65536 + 2 x 64 */
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "0.250 s"));
	CU_ASSERT_PTR_NULL(strstr(text, "INCOMPLETE"));
	free(text);
	destroy(&w);
}

/* Count lines of `text` starting with `prefix`. */
static int count_lines(const char *text, const char *prefix)
{
	int n = 0;
	size_t pl = strlen(prefix);

	for (const char *p = text; p && *p; ) {
		if (!strncmp(p, prefix, pl))
			n++;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return n;
}

/* sim.sample_ns = 0's choice for the world's messages */
static uint64_t auto_ns(const struct world *w)
{
	return cli_auto_sample_ns(&w->net, &w->p, cli_run_estimate_ps(&w->net, &w->p, &w->msgs),
				  cli_used_vls(&w->p, &w->msgs));
}

static void test_links_csv(void)
{
	struct world w;
	struct cli_report r;
	struct cli_links_csv c;
	char *text = NULL, *flows = NULL;
	size_t len;
	FILE *f;
	uint16_t vls;
	int samples, nports;

	build(&w, 4 << 20);		/* 4 MiB: about 168 us at HDR */
	vls = cli_used_vls(&w.p, &w.msgs);
	CU_ASSERT_EQUAL(vls, 0x3);	/* SL0 -> VL0, SL1 -> VL1 */
	w.p.sample_ns = auto_ns(&w);
	/* 4 MiB / 25 B/ns = 168 us, / 1000 = 168 ns, nearest 1-2-5: 200 ns */
	CU_ASSERT_EQUAL(w.p.sample_ns, 200);
	create(&w);
	f = open_memstream(&text, &len);
	CU_ASSERT_FATAL(cli_links_csv_init(&c, f, &w.net, w.fab, vls, w.p.max_csv_rows) == 0);
	fab_set_sampler(w.fab, cli_links_csv_sample, &c);
	run(&w);
	fclose(f);
	nports = fab_nports(w.fab);
	CU_ASSERT_EQUAL(nports, 4);
	/* one row per sample, port end and VL in use */
	samples = count_lines(text, "0,") / (nports * 2);	/* rows at time 0 */
	CU_ASSERT_EQUAL(samples, 1);
	CU_ASSERT_EQUAL(c.rows % (uint64_t)(nports * 2), 0);
	samples = (int)(c.rows / (uint64_t)(nports * 2));
	CU_ASSERT(samples >= 300 && samples <= 3000);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "time_ps,node,port,peer,vl,util,buf_bytes,credits\n"));
	/* the sender's link is saturated in mid-run: util 1 (to 4 digits, less
	 * the packet headers' share, which counts as busy too) */
	CU_ASSERT(count_lines(strstr(text, "\n") + 1, "") > 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, ",\"h,0 C:\\hca\",1,sw,0,1.0000,"));
	CU_ASSERT_FALSE(c.cut);
	cli_links_csv_fini(&c);

	fill_report(&w, &r);
	f = open_memstream(&flows, &len);
	CU_ASSERT_EQUAL(cli_report_flows_csv(f, &r), 0);
	fclose(f);
	CU_ASSERT_EQUAL(count_lines(flows, ""), 4);
	CU_ASSERT_PTR_NOT_NULL(strstr(flows, "\n0,\"h,0 C:\\hca\",h1 caf\xc3\xa9,4194304,0,0,-1,1,0,"));
	free(text);
	free(flows);
	destroy(&w);
}

/* A run cut short: unknown times are null / empty, not zero. */
static void test_unfinished(void)
{
	struct world w;
	struct cli_report r;
	char *text = NULL, *csv = NULL;
	size_t len;
	FILE *f;

	build(&w, 4 << 20);
	w.p.max_time_ns = 2000;		/* 2 us: the big message is not done */
	create(&w);
	run(&w);
	fill_report(&w, &r);
	f = open_memstream(&text, &len);
	CU_ASSERT_EQUAL(cli_report_json(f, &r), 0);
	fclose(f);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"complete\": false,"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"end_ps\": null"));
	f = open_memstream(&csv, &len);
	CU_ASSERT_EQUAL(cli_report_flows_csv(f, &r), 0);
	fclose(f);
	CU_ASSERT_PTR_NOT_NULL(strstr(csv, ",4194304,0,0,-1,0,0,250000,,,write,,pending\n"));
	free(text);
	free(csv);
	destroy(&w);
}

/*
 * The JSON and flows.csv of a compact message list (records kept on disk,
 * fab_keep_results) equal the explicit list's byte for byte: a stream of
 * 3,000 messages at a constant rate and a ping-pong, run to the end, and
 * cut at 1 ms (messages in flight written at the end, later ones never
 * made: their input, no results).
 */
static void outputs_of(bool compact, uint64_t max_time_ns, char **json, char **csv)
{
	struct world w;
	struct cli_report r;
	size_t len;
	FILE *f;

	build(&w, 4096);
	fab_msgs_free(&w.msgs);
	w.msgs.compact = compact;
	for (int i = 0; i < 3000; i++) {
		struct fab_msg m = { .src = 0, .dst = 1, .bytes = 4096, .after = -1,
				     .post = (sim_time_t)i * 500 * SIM_NS };

		CU_ASSERT_FATAL(fab_msgs_add(&w.msgs, &m) == 0);
	}
	for (int i = 0; i < 20; i++) {
		struct fab_msg m = { .src = (uint32_t)(i % 2 ? 0 : 1), .dst = (uint32_t)(i % 2 ? 1 : 0),
				     .bytes = 64, .after = i ? (int32_t)w.msgs.n - 1 : -1,
				     .stream = 1 + (uint32_t)(i % 2), .sl = 1 };

		CU_ASSERT_FATAL(fab_msgs_add(&w.msgs, &m) == 0);
	}
	w.p.max_time_ns = max_time_ns;
	create(&w);
	if (compact)
		CU_ASSERT_FATAL(fab_keep_results(w.fab) == 0);
	run(&w);
	fill_report(&w, &r);
	f = open_memstream(json, &len);
	CU_ASSERT_EQUAL(cli_report_json(f, &r), 0);
	fclose(f);
	f = open_memstream(csv, &len);
	CU_ASSERT_EQUAL(cli_report_flows_csv(f, &r), 0);
	fclose(f);
	destroy(&w);
}

static void test_compact_outputs(void)
{
	static const uint64_t cut[2] = { 0, 1000000 };

	for (int k = 0; k < 2; k++) {
		char *je, *ce, *jc, *cc;

		outputs_of(false, cut[k], &je, &ce);
		outputs_of(true, cut[k], &jc, &cc);
		CU_ASSERT_STRING_EQUAL(je, jc);
		CU_ASSERT_STRING_EQUAL(ce, cc);
		CU_ASSERT_PTR_NOT_NULL(strstr(je, "\"id\": 3019,"));
		/* cut at 1 ms: delivered, in flight and never posted all listed */
		if (k)
			CU_ASSERT(strstr(ce, "\n2999,") && strstr(je, "\"start_ps\": null"));
		free(je);
		free(ce);
		free(jc);
		free(cc);
	}
}

/* sim.max_csv_rows: whole samples up to the budget, then none, and the
 * time of the first one dropped. */
static void test_links_csv_budget(void)
{
	struct world w;
	struct cli_links_csv c;
	char *text = NULL;
	size_t len;
	FILE *f;
	uint16_t vls;
	uint64_t per;

	build(&w, 4 << 20);
	vls = cli_used_vls(&w.p, &w.msgs);
	w.p.sample_ns = 200;	/* about 840 samples over the 168 us */
	create(&w);
	per = (uint64_t)fab_nports(w.fab) * 2;	/* two VLs */
	CU_ASSERT_EQUAL(per, cli_csv_rows_per_sample(&w.net, cli_used_vls(&w.p, &w.msgs)));
	f = open_memstream(&text, &len);
	/* 100 samples and half of one: the half is not written */
	CU_ASSERT_FATAL(cli_links_csv_init(&c, f, &w.net, w.fab, vls, 100 * per + per / 2) == 0);
	fab_set_sampler(w.fab, cli_links_csv_sample, &c);
	run(&w);
	fclose(f);
	CU_ASSERT_EQUAL(c.rows, 100 * per);
	CU_ASSERT_EQUAL((uint64_t)count_lines(text, ""), 100 * per + 1);	/* and the header */
	CU_ASSERT(c.cut);
	CU_ASSERT_EQUAL(c.cut_at, 100 * 200 * SIM_NS);	/* samples at 0, 200 ns, ... */
	cli_links_csv_fini(&c);
	free(text);
	destroy(&w);
}

static void test_auto_sample(void)
{
	struct world w;

	build(&w, 1 << 30);		/* 1 GiB at 200 Gb/s: 43 ms -> 43 us -> 50 us */
	CU_ASSERT_EQUAL(auto_ns(&w), 50000);
	w.msgs.v[0].bytes = 3 << 20;	/* 126 us -> 126 ns -> 100 ns */
	CU_ASSERT_EQUAL(auto_ns(&w), 100);
	w.msgs.v[0].bytes = 1;		/* tiny: never below 1 ns */
	CU_ASSERT(auto_ns(&w) >= 1);
	/* a row budget the ~1000 samples would pass: 126 us at 8 rows a
	 * sample (2 links x 2 ends x 2 VLs) within 1000 rows (half of 2000)
	 * wants >= 1008 ns, so 2 us */
	w.msgs.v[0].bytes = 3 << 20;
	w.p.max_csv_rows = 2000;
	CU_ASSERT_EQUAL(cli_csv_rows_per_sample(&w.net, cli_used_vls(&w.p, &w.msgs)), 8);
	CU_ASSERT_EQUAL(auto_ns(&w), 2000);
	w.p.max_csv_rows = 0;		/* no limit: as before */
	CU_ASSERT_EQUAL(auto_ns(&w), 100);
	fab_msgs_free(&w.msgs);
	net_free(&w.net);
}

/* The output of a help function as a string (free it). */
static char *help_text(void (*fn)(FILE *))
{
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);

	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	fn(m);
	fclose(m);
	return text;
}

/* The lists in the helps are printed from the tables that own them: every
 * fabric kind, routing engine and trace format appears, and no @mark@ is
 * left unexpanded. */
static void test_help_lists(void)
{
	char *run = help_text(cli_run_usage), *cmp = help_text(cli_compare_usage);
	char *prm = help_text(cli_run_help_params);

	for (int i = 0; fab_fabric_names[i]; i++) {
		char want[64];

		snprintf(want, sizeof(want), "  %-10s  %s\n", fab_fabric_names[i], fab_kinds[i].what);
		CU_ASSERT_PTR_NOT_NULL(strstr(cmp, want));
		CU_ASSERT_PTR_NOT_NULL(strstr(run, fab_fabric_names[i]));
		CU_ASSERT_PTR_NOT_NULL(strstr(prm, fab_fabric_names[i]));
	}
	for (int i = 0; sm_engines[i]; i++) {
		CU_ASSERT_PTR_NOT_NULL(strstr(run, sm_engines[i]->name));
		CU_ASSERT_PTR_NOT_NULL(strstr(cmp, sm_engines[i]->name));
	}
	for (const struct import_format *f = import_formats; f->name; f++)
		CU_ASSERT_PTR_NOT_NULL(strstr(run, f->name));
	CU_ASSERT_PTR_NULL(strstr(run, "@fabric"));
	CU_ASSERT_PTR_NULL(strstr(cmp, "@fabric"));
	CU_ASSERT_PTR_NULL(strstr(prm, "@fabric"));
	CU_ASSERT_PTR_NULL(strstr(run, "@engine"));
	/* what is not a mark stays as it is */
	{
		char *t = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&t, &len);

		char want[256];
		size_t off = 0;

		cli_help_put("a@b, @unknown@ and @fabrics,@", m);
		fclose(m);
		off += (size_t)snprintf(want, sizeof(want), "a@b, @unknown@ and ");
		for (int i = 0; fab_fabric_names[i]; i++)
			off += (size_t)snprintf(want + off, sizeof(want) - off, "%s%s", i ? "," : "",
						fab_fabric_names[i]);
		CU_ASSERT_STRING_EQUAL(t, want);
		free(t);
	}
	free(run);
	free(cmp);
	free(prm);
}

/*
 * The estimate of a trace's length (sim.sample_ns = 0): a compute step has
 * no peer (-1), whose node must not be read; the bound is at least the
 * compute and the transfer after it.
 */
static void test_trace_estimate(void)
{
	struct world w;
	struct trace t;
	struct trace_program p;
	struct sim_diag d;

	build(&w, 4096);
	trace_init(&t);
	CU_ASSERT_EQUAL_FATAL(trace_load_string("ranks 2\ncompute 0 10us\nsend 0 1 1MiB\n",
						"estimate", &t, &d), 0);
	CU_ASSERT_EQUAL_FATAL(trace_map_ranks(&t, &w.net, &d), 0);
	trace_program_init(&p, &t);
	CU_ASSERT_EQUAL_FATAL(trace_lower(&t, &p, &d), 0);
	/* 10 us, then 1 MiB at 4xHDR's 200 Gb/s: about 42 us more */
	sim_time_t est = cli_trace_estimate_ps(&w.net, &w.p, &p);

	CU_ASSERT(est >= 10 * SIM_US + 40 * SIM_US);
	CU_ASSERT(est < 10 * SIM_US + 60 * SIM_US);
	trace_program_free(&p);
	trace_free(&t);
	fab_msgs_free(&w.msgs);
	net_free(&w.net);
}

static const struct test_case tests[] = {
	{ "help lists come from their tables", test_help_lists },
	{ "JSON: escaping, determinism, VLs", test_json },
	{ "JSON and flows.csv: a compact list's equal the explicit list's", test_compact_outputs },
	{ "summary", test_summary },
	{ "links.csv and flows.csv", test_links_csv },
	{ "unfinished messages", test_unfinished },
	{ "links.csv row budget", test_links_csv_budget },
	{ "automatic sample interval", test_auto_sample },
	{ "a trace's estimate: compute steps have no peer", test_trace_estimate },
	{ NULL, NULL },
};

TEST_MAIN("cli_report", tests)
