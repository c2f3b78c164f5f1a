/* SPDX-License-Identifier: MIT */
/*
 * cli_threads.c - `ibfab run --threads N`: the fabric cut into N
 * partitions, one a thread (sim/sim_par.h), as `mpirun -np N` runs them
 * one a process (par_mpi.c), in one process.
 *
 * The models reach their engine, packet pool and totals through their
 * fabric, so a thread gets a fabric of its own: the run's fabric is built
 * again N - 1 times from the same inputs (each with its own copy of the
 * message list, whose records the fabric writes), all cut alike
 * (models/fabric/fab_cut.c), and thread k runs partition k on copy k
 * (sim_par_init_replicas). Then each copy's own results (fab_part_pack
 * of partition k) go into the first, with the totals' changes summed and
 * the two maxima merged, and the first writes the outputs: the one-thread
 * run's bytes but for the events, the engine and the partitions. The
 * copies are built at once, a thread each (the inputs are only read):
 * memory is N times one fabric's. A trace gets a replay on every copy
 * (trace_replay_start, `every`), which keeps every step; the first's
 * results are the run's. What the caller's before_run did to the run's
 * fabric (compare's chart sampler) its before_run_copy does to each copy,
 * and after the run its after_par_run sees every partition's (cli_run.h).
 */
#include "tools/cli_run.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct par_threads {
	struct cli_run *c;
	struct sim_par p;
	bool p_init;
	uint32_t n;
	struct fab **fab;		/* [0] the run's, [k] partition k's copy */
	struct fab_msgs *msgs;		/* the copies' message lists ([0] unused) */
	struct fab_cut *cut;		/* each copy's cut (the same) */
	struct replay **rp;		/* --trace: each copy's replay ([0]: the run's, c->rp) */
	struct trace_results *tres;	/* and its results ([0] unused) */
	uint64_t tot0[FAB_PART_TOTALS];	/* the totals before the run */
};

static void values(void *ctx, uint32_t k, uint64_t sum[SIM_PAR_SUMS], uint64_t *max)
{
	struct par_threads *st = ctx;

	fab_part_values(st->fab[k], k, sum, max);
}

static sim_time_t stop(void *ctx, const uint64_t sum[SIM_PAR_SUMS], uint64_t max)
{
	struct par_threads *st = ctx;

	return fab_part_stop(st->fab[0], sum, max);
}

static int run(void *ctx, struct sim_diag *d)
{
	struct par_threads *st = ctx;

	if (sim_par_run(&st->p))
		return sim_diag_set(d, NULL, 0, 0, "%s", st->p.why);
	if (st->p.first_halt >= 0) {	/* where one thread would have stopped */
		const struct sim_diag *fd = fab_failure(st->fab[st->p.first_halt]);

		if (fd) {
			*d = *fd;
			return -1;
		}
		return sim_diag_set(d, NULL, 0, 0, "partition %d stopped", st->p.first_halt);
	}
	return st->c->after_par_run ? st->c->after_par_run(st->c, d) : 0;
}

static int merge(void *ctx, struct sim_diag *d)
{
	struct par_threads *st = ctx;
	struct fab *f0 = st->fab[0];
	const uint16_t *np = st->cut[0].node_part;
	uint64_t tot[FAB_PART_TOTALS], sum[FAB_PART_TOTALS], mx[FAB_PART_MAX], all[FAB_PART_MAX];
	size_t most = 0;

	for (uint32_t k = 1; k < st->n; k++) {
		size_t w = fab_part_words(st->fab[k], np, k);

		if (w > most)
			most = w;
	}
	uint64_t *buf = malloc((most ? most : 1) * sizeof(*buf));

	if (!buf)
		return sim_diag_set(d, NULL, 0, 0, "out of memory gathering the partitions' results");
	fab_part_totals(f0, sum);
	fab_part_max(f0, all);
	for (uint32_t k = 1; k < st->n; k++) {
		struct fab *f = st->fab[k];

		fab_part_finish(f, fab_engine(f0)->now);
		fab_part_pack(f, np, k, buf);
		fab_part_unpack(f0, np, k, buf);
		fab_part_totals(f, tot);
		for (size_t i = 0; i < FAB_PART_TOTALS; i++)
			sum[i] += tot[i] - st->tot0[i];
		fab_part_max(f, mx);
		for (int i = 0; i < FAB_PART_MAX; i++)
			if (mx[i] > all[i])
				all[i] = mx[i];
	}
	free(buf);
	fab_part_set_totals(f0, sum);
	fab_part_set_max(f0, all);
	if (fab_part_rebuild(f0))
		return sim_diag_set(d, NULL, 0, 0, "out of memory for the completion times");
	return 0;
}

static const struct fab_par_ops ops = { run, merge };

/* Copy k of the fabric, built on a thread of its own (the inputs are
 * only read), its diagnostic kept for the caller. */
struct copy_job {
	struct cli_run *c;
	struct par_threads *st;
	uint32_t k;
	struct sim_diag d;
	pthread_t tid;
	bool started;
};

static void *build_copy(void *arg)
{
	struct copy_job *j = arg;
	struct par_threads *st = j->st;

	if (fab_msgs_copy(&st->msgs[j->k], &j->c->msgs)) {
		sim_diag_set(&j->d, NULL, 0, 0, "out of memory for partition %u's messages", j->k);
		return NULL;
	}
	st->fab[j->k] = fab_create(&j->c->net, &j->c->p, &st->msgs[j->k], j->c->o->seed, &j->d);
	if (st->fab[j->k] && j->c->o->trace &&
	    !(st->rp[j->k] = trace_replay_start(&j->c->prog, st->fab[j->k], &st->tres[j->k], true,
						  &j->d))) {
		trace_results_free(&st->tres[j->k]);
		fab_destroy(st->fab[j->k]);
		st->fab[j->k] = NULL;
	}
	/* the caller's observer, as on the run's fabric (its components
	 * registered in the same order: the same ids) */
	if (st->fab[j->k] && j->c->before_run_copy &&
	    j->c->before_run_copy(j->c, j->k, st->fab[j->k], &j->d)) {
		if (st->rp[j->k]) {
			struct sim_diag d;

			trace_replay_finish(st->rp[j->k], false, &d);
			st->rp[j->k] = NULL;
			trace_results_free(&st->tres[j->k]);
		}
		fab_destroy(st->fab[j->k]);
		st->fab[j->k] = NULL;
	}
	return NULL;
}

/* The copies 1 .. n-1, all at once (one thread each; a thread that cannot
 * be started builds its copy here). */
static int build_copies(struct cli_run *c, struct par_threads *st)
{
	struct copy_job *job = calloc(st->n, sizeof(*job));
	int rc = 0;

	if (!job)
		return sim_diag_set(&c->d, NULL, 0, 0, "out of memory");
	for (uint32_t k = 1; k < st->n; k++) {
		job[k] = (struct copy_job){ .c = c, .st = st, .k = k };
		job[k].started = !pthread_create(&job[k].tid, NULL, build_copy, &job[k]);
		if (!job[k].started)
			build_copy(&job[k]);
	}
	for (uint32_t k = 1; k < st->n; k++) {
		if (job[k].started)
			pthread_join(job[k].tid, NULL);
		if (!st->fab[k] && !rc) {
			c->d = job[k].d;
			rc = -1;
		}
	}
	free(job);
	return rc;
}

static int threads_setup(struct cli_run *c)
{
	uint32_t n = (uint32_t)c->par_size;
	struct par_threads *st = calloc(1, sizeof(*st));
	struct sim_engine **eng = calloc(n, sizeof(*eng));
	const struct sim_par_hook hook = { values, stop, NULL };
	int rc = -1;

	if (!st || !eng || !(st->fab = calloc(n, sizeof(*st->fab))) ||
	    !(st->msgs = calloc(n, sizeof(*st->msgs))) || !(st->cut = calloc(n, sizeof(*st->cut))) ||
	    !(st->rp = calloc(n, sizeof(*st->rp))) || !(st->tres = calloc(n, sizeof(*st->tres)))) {
		if (st) {
			free(st->fab);
			free(st->msgs);
			free(st->cut);
			free(st->rp);
		}
		free(st);
		free(eng);
		return sim_diag_set(&c->d, NULL, 0, 0, "out of memory");
	}
	c->par_state = st;
	st->c = c;
	st->n = n;
	st->fab[0] = c->fab;
	if (build_copies(c, st))
		goto out;
	for (uint32_t k = 0; k < n; k++) {
		if (fab_cut_plan(st->fab[k], n, &st->cut[k], &c->d))
			goto out;
		eng[k] = fab_engine(st->fab[k]);
	}
	if (sim_par_init_replicas(&st->p, eng, n, st->cut[0].lookahead, fab_cut_owner, &st->cut[0])) {
		sim_diag_set(&c->d, NULL, 0, 0, "%s", st->p.why);
		goto out;
	}
	st->p_init = true;
	if (sim_par_set_async(&st->p, c->o->sync_null)) {	/* --sync null */
		sim_diag_set(&c->d, NULL, 0, 0, "out of memory");
		goto out;
	}
	struct sim_par_hook h = hook;

	h.ctx = st;
	if (sim_par_set_hook(&st->p, &h)) {
		sim_diag_set(&c->d, NULL, 0, 0, "out of memory");
		goto out;
	}
	fab_part_totals(c->fab, st->tot0);
	fab_set_par(c->fab, &ops, st);
	rc = 0;
out:
	free(eng);
	return rc;
}

static void threads_fini(struct cli_run *c)
{
	struct par_threads *st = c ? c->par_state : NULL;

	if (!st)
		return;
	if (st->p_init)
		sim_par_fini(&st->p);
	for (uint32_t k = 0; k < st->n; k++) {
		if (st->cut[k].f)
			fab_cut_free(&st->cut[k]);
		if (k) {
			if (st->rp[k]) {	/* its results are the first's */
				struct sim_diag d;

				trace_replay_finish(st->rp[k], false, &d);
				trace_results_free(&st->tres[k]);
			}
			if (st->fab[k])
				fab_destroy(st->fab[k]);
			fab_msgs_free(&st->msgs[k]);
		}
	}
	if (st->fab[0])
		fab_set_par(st->fab[0], NULL, NULL);
	free(st->cut);
	free(st->fab);
	free(st->msgs);
	free(st->rp);
	free(st->tres);
	free(st);
	c->par_state = NULL;
}

/* --profile: every thread's figures are here */
static int threads_profile(struct cli_run *c)
{
	struct par_threads *st = c->par_state;

	if (cli_profile_cut(c, &st->cut[0], st->p.windows))
		return -1;
	for (uint32_t k = 0; k < st->n; k++)
		cli_profile_part(c, k, &st->p.part[k]);
	return 0;
}

const struct cli_par_ops cli_par_threads = {
	.engine = "threads",
	.setup = threads_setup,
	.fini = threads_fini,
	.profile = threads_profile,
};
