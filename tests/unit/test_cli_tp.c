/* SPDX-License-Identifier: MIT */
/*
 * test_cli_tp.c - `ibfab compare`'s throughput sampler (tools/cli_tp.c)
 * cut into partitions gives one list's curve and clock, exactly.
 *
 * Each case runs one fabric through `ibfab run`'s pipeline, as compare
 * does, once on one list, cut 2 and 3 ways on threads in windows and 2
 * ways with null messages (sim_par_set_async), and compares
 * every sample (time and bytes) and the fabric's clock at the end. The
 * cases take each way a run ends: with messages still pending at the stop
 * (RC's timers), drained with 500 ns windows and reports crossing the
 * cut, so the partitions tick past one list's last tick (cut back), and
 * drained with a tick between the partitions' end and the stop (extended
 * with the final counts); and a run whose lost messages leave it
 * incomplete, whose time is then the clock's.
 */
#include "tools/cli_run.h"
#include "tools/cli_tp.h"
#include "test_main.h"

#include <CUnit/CUnit.h>
#include <stdlib.h>
#include <string.h>

struct curve {
	sim_time_t *t;
	uint64_t *bytes;
	size_t n;
	sim_time_t now;
	uint64_t ticks;
};

static int before_run(struct cli_run *run, void *ctx)
{
	struct cli_tp_set *ts = ctx;

	if (cli_tp_init(ts, run->par_size > 1 ? (uint32_t)run->par_size : 1))
		return -1;
	return cli_tp_start(ts, 0, run->fab, &run->net, run->par_size > 1, &run->d);
}

static int before_run_copy(struct cli_run *run, uint32_t k, struct fab *f, struct sim_diag *d)
{
	return cli_tp_start(run->before_run_ctx, k, f, &run->net, true, d);
}

static int after_par_run(struct cli_run *run, struct sim_diag *d)
{
	return cli_tp_par_end(run->before_run_ctx, run->par_ops, d);
}

/* One fabric's run of fattree-16 with sets and traffic, on n threads. */
static void run_curve(const char **sets, int nsets, const char *traffic, uint32_t n,
		      bool null_msgs, struct curve *out)
{
	char topo[512];
	const char *tr[] = { traffic };
	struct cli_run_opts o = { .topo = test_src_path("topologies/examples/fattree-16.topo", topo,
							sizeof(topo)),
				  .traffic = tr, .ntraffic = 1, .sets = sets, .nsets = nsets,
				  .seed = 1, .quiet = true, .reproducible = true,
				  .sync_null = null_msgs };
	struct cli_tp_set ts = { 0 };
	struct cli_run run;

	memset(out, 0, sizeof(*out));
	cli_run_init(&run, &o);
	if (n > 1) {
		run.par_size = (int)n;
		run.par_ops = &cli_par_threads;
	}
	run.before_run = before_run;
	run.before_run_ctx = &ts;
	run.before_run_copy = before_run_copy;
	run.after_par_run = after_par_run;
	CU_ASSERT_FATAL(cli_run_prepare(&run) == 0);
	CU_ASSERT_FATAL(cli_run_simulate(&run) == 0);
	CU_ASSERT_FATAL(cli_tp_finish(&ts, run.fab) == 0);
	out->t = ts.t;
	out->bytes = ts.bytes;
	out->n = ts.nt;
	out->ticks = ts.ticks;
	ts.t = NULL;
	ts.bytes = NULL;
	out->now = fab_engine(run.fab)->now;
	if (run.par_ops)
		run.par_ops->fini(&run);
	cli_run_fini(&run);
	cli_tp_free(&ts);
}

static void same_curves(const char **sets, int nsets, const char *traffic)
{
	struct curve one, cut;

	run_curve(sets, nsets, traffic, 1, false, &one);
	CU_ASSERT(one.n > 10);
	CU_ASSERT(one.n && one.t[one.n - 1] == one.now);
	CU_ASSERT(one.n && one.bytes[one.n - 1] > 0);
	/* 2 and 3 partitions in windows, 2 with null messages (each
	 * partition's ticks then end where it does) */
	for (uint32_t c = 2; c <= 4; c++) {
		const uint32_t n = c < 4 ? c : 2;

		run_curve(sets, nsets, traffic, n, c == 4, &cut);
		CU_ASSERT_EQUAL(cut.n, one.n);
		CU_ASSERT_EQUAL(cut.now, one.now);
		/* in windows every partition ticks at least the one list's ticks */
		CU_ASSERT(c == 4 || cut.ticks >= n * (one.ticks - 1));
		size_t diff = 0;

		for (size_t i = 0; i < one.n && i < cut.n; i++)
			diff += one.t[i] != cut.t[i] || one.bytes[i] != cut.bytes[i];
		CU_ASSERT_EQUAL(diff, 0);
		free(cut.t);
		free(cut.bytes);
	}
	free(one.t);
	free(one.bytes);
}

/* RC: its timers are left at the stop; every tick before it is one list's */
static void test_stopped(void)
{
	const char *sets[] = { "fabric=ib" };

	same_curves(sets, 1, "permutation:size=64KiB");
}

/* datagrams over 100 m cables: nothing left, windows of 500 ns */
static void test_drained_cut_back(void)
{
	const char *sets[] = { "fabric=ib", "link.cable_m=100" };

	same_curves(sets, 2, "incast:dst=h1,size=1000B,count=30,qp=ud");
}

/* datagrams between two hosts of one leaf: nothing crosses the cut (no
 * report ends the run a look-ahead late), and one list's last tick comes
 * after the partitions end */
static void test_drained_extended(void)
{
	const char *sets[] = { "fabric=ib" };

	same_curves(sets, 1, "p2p:src=h0,dst=h1,size=100B,count=3,qp=ud");
}

static void test_roce(void)
{
	const char *sets[] = { "fabric=roce" };

	same_curves(sets, 1, "incast:dst=h0,n=8,size=256KiB");
}

/* messages lost for good (no retries on lossy links): the run is not
 * complete, so its time is the clock's, which the cut must give too */
static void test_incomplete(void)
{
	const char *sets[] = { "fabric=ib", "link.drop_prob=0.3", "hca.retry_cnt=0" };

	same_curves(sets, 3, "permutation:size=1KiB");
}

static const struct test_case tests[] = {
	{ "stopped with timers pending", test_stopped },
	{ "drained: ticks cut back", test_drained_cut_back },
	{ "drained: ticks extended", test_drained_extended },
	{ "roce incast", test_roce },
	{ "messages lost: the clock is the run's time", test_incomplete },
	{ NULL, NULL },
};

TEST_MAIN("cli_tp", tests)
