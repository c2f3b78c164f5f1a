/* SPDX-License-Identifier: MIT */
/*
 * par_mpi.c - `mpirun -np N ibfab run ...`: one partition a process
 * (sim/sim_par_mpi.h), built where Open MPI is installed.
 *
 * Every process parses the same arguments and builds the same fabric and
 * workload; the fabric is cut into N partitions (models/fabric/fab_cut.c)
 * and each process runs its own, the windows and the messages between
 * them over MPI. The run ends when the last message is finished, which
 * the partitions' counts at each window's end show (fab_part_values).
 * Then every process's own results go to rank 0 (fab_part_pack, one
 * process after another; the totals' changes summed, the two maxima
 * apart), which writes the outputs as one run would have: the same bytes
 * but for the events, the engine and the partitions.
 *
 * A process is one of a partitioned run when mpirun started two or more
 * (OMPI_COMM_WORLD_SIZE, or PMI_SIZE of other launchers); alone, ibfab
 * runs as it always does and MPI is not started.
 */
#include "tools/cli_run.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/sim_par_mpi.h"

struct par_mpi {
	struct cli_run *c;
	struct sim_par p;
	bool p_init;
	struct fab_cut cut;
	struct fab *f;
	uint64_t tot0[FAB_PART_TOTALS];	/* the totals before the run */
	int rank;
	struct sim_par_part *parts;	/* rank 0: every process's figures (--profile) */
	bool same_error;		/* every process has the run's failure (run()) */
};

static bool started;
static uint32_t nlocal = 1;	/* processes of the run on this machine */

static int mpi_init(int *argc, char ***argv, int *rank, int *size)
{
	const char *n = getenv("OMPI_COMM_WORLD_SIZE");

	if (!n)
		n = getenv("PMI_SIZE");
	*rank = 0;
	*size = 1;
	if (!n || atoi(n) < 2)
		return 0;
	if (MPI_Init(argc, argv) != MPI_SUCCESS)
		return -1;
	started = true;
	MPI_Comm_rank(MPI_COMM_WORLD, rank);
	MPI_Comm_size(MPI_COMM_WORLD, size);
	MPI_Comm node;
	int n_node = 1;

	if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, *rank, MPI_INFO_NULL,
				&node) == MPI_SUCCESS) {
		MPI_Comm_size(node, &n_node);
		MPI_Comm_free(&node);
	}
	nlocal = n_node > 1 ? (uint32_t)n_node : 1;
	return 0;
}

static uint32_t mpi_local(void)
{
	return nlocal;
}

static int run(void *ctx, struct sim_diag *d)
{
	struct par_mpi *st = ctx;

	if (sim_par_mpi_run(&st->p, MPI_COMM_WORLD))
		return sim_diag_set(d, NULL, 0, 0, "%s", st->p.why);
	if (st->p.first_halt >= 0) {
		/* the failure one process would have stopped at, to every
		 * process: all report the same (rank 0 says it: fab_failure) */
		const struct sim_diag *fd = fab_failure(st->f);

		sim_diag_clear(d);
		if (st->rank == st->p.first_halt && fd)
			*d = *fd;
		else if (st->rank == st->p.first_halt)
			snprintf(d->msg, sizeof(d->msg), "partition %d stopped", st->rank);
		MPI_Bcast(d->msg, (int)sizeof(d->msg), MPI_CHAR, st->p.first_halt, MPI_COMM_WORLD);
		st->same_error = true;
		return -1;
	}
	if (st->c->after_par_run && st->c->after_par_run(st->c, d)) {
		st->same_error = true;
		return -1;
	}
	return 0;
}

/*
 * What each process's engine counted (struct sim_par_part: three counts,
 * two times) to rank 0, for --profile: a few words a process, gathered
 * whether asked for or not. Rank 0 keeps NULL when out of memory (no
 * profile then).
 */
static void gather_parts(struct par_mpi *st)
{
	uint32_t n = st->cut.n;
	const struct sim_par_part *me = &st->p.part[st->rank];
	uint64_t cnt[3] = { me->events, me->sent, me->idle_windows };
	double tm[2] = { me->busy_s, me->wait_s };
	uint64_t *ac = st->rank ? NULL : malloc(3 * (size_t)n * sizeof(*ac));
	double *at = st->rank ? NULL : malloc(2 * (size_t)n * sizeof(*at));

	MPI_Gather(cnt, 3, MPI_UINT64_T, ac, 3, MPI_UINT64_T, 0, MPI_COMM_WORLD);
	MPI_Gather(tm, 2, MPI_DOUBLE, at, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
	if (!st->rank && ac && at && (st->parts = calloc(n, sizeof(*st->parts))))
		for (uint32_t k = 0; k < n; k++)
			st->parts[k] = (struct sim_par_part){ .events = ac[3 * k], .sent = ac[3 * k + 1],
							      .idle_windows = ac[3 * k + 2],
							      .busy_s = at[2 * k], .wait_s = at[2 * k + 1] };
	free(ac);
	free(at);
}

/*
 * Every process's own results to rank 0, one process after another (the
 * largest partition's words at a time), and the totals as rank 0's before
 * the run plus every process's change; the two maxima as maxima.
 */
static int merge(void *ctx, struct sim_diag *d)
{
	struct par_mpi *st = ctx;
	const uint16_t *np = st->cut.node_part;
	uint32_t n = st->cut.n, me = (uint32_t)st->rank;
	size_t most = 0;
	uint64_t tot[FAB_PART_TOTALS], sum[FAB_PART_TOTALS], mx[FAB_PART_MAX], all[FAB_PART_MAX];

	for (uint32_t k = 0; k < n; k++) {
		size_t w = fab_part_words(st->f, np, k);

		if (w > most)
			most = w;
	}
	uint64_t *buf = malloc((most ? most : 1) * sizeof(*buf));
	int ok = buf != NULL, all_ok = 0;

	MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (!all_ok) {
		free(buf);
		return sim_diag_set(d, NULL, 0, 0, "out of memory gathering the partitions' results");
	}
	for (uint32_t k = 1; k < n; k++) {
		size_t w = fab_part_words(st->f, np, k);

		if (me == k)
			fab_part_pack(st->f, np, k, buf);
		/* in pieces: MPI counts are ints */
		for (size_t i = 0; i < w; i += 1u << 26) {
			int c = (int)(w - i < (1u << 26) ? w - i : 1u << 26);

			if (me == k)
				MPI_Send(buf + i, c, MPI_UINT64_T, 0, 0, MPI_COMM_WORLD);
			else if (me == 0)
				MPI_Recv(buf + i, c, MPI_UINT64_T, (int)k, 0, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
		}
		if (me == 0)
			fab_part_unpack(st->f, np, k, buf);
	}
	free(buf);
	fab_part_totals(st->f, tot);
	for (size_t i = 0; i < FAB_PART_TOTALS; i++)
		tot[i] -= st->tot0[i];
	MPI_Reduce(tot, sum, FAB_PART_TOTALS, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
	fab_part_max(st->f, mx);
	MPI_Reduce(mx, all, FAB_PART_MAX, MPI_UINT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
	gather_parts(st);
	if (me)
		return 1;	/* gathered in rank 0 */
	for (size_t i = 0; i < FAB_PART_TOTALS; i++)
		sum[i] += st->tot0[i];
	fab_part_set_totals(st->f, sum);
	fab_part_set_max(st->f, all);
	if (fab_part_rebuild(st->f))
		return sim_diag_set(d, NULL, 0, 0, "out of memory for the completion times");
	return 0;
}

static const struct fab_par_ops ops = { run, merge };

static int mpi_setup(struct cli_run *c)
{
	struct par_mpi *st = calloc(1, sizeof(*st));
	const struct sim_par_hook hook = { fab_part_values, fab_part_stop, c->fab };

	if (!st)
		return sim_diag_set(&c->d, NULL, 0, 0, "out of memory");
	c->par_state = st;
	st->c = c;
	st->f = c->fab;
	st->rank = c->par_rank;
	if (fab_cut_plan(c->fab, (uint32_t)c->par_size, &st->cut, &c->d))
		return -1;
	if (sim_par_mpi_init(&st->p, fab_engine(c->fab), st->cut.lookahead, fab_cut_owner, &st->cut,
			     MPI_COMM_WORLD))
		return sim_diag_set(&c->d, NULL, 0, 0, "%s", st->p.why);
	st->p_init = true;
	if (sim_par_set_hook(&st->p, &hook))
		return sim_diag_set(&c->d, NULL, 0, 0, "out of memory");
	fab_part_totals(c->fab, st->tot0);
	fab_set_par(c->fab, &ops, st);
	return 0;
}

static void mpi_fini(struct cli_run *c)
{
	struct par_mpi *st = c ? c->par_state : NULL;

	if (st) {
		if (st->p_init)
			sim_par_fini(&st->p);
		fab_cut_free(&st->cut);
		free(st->parts);
		free(st);
		c->par_state = NULL;
		return;	/* one run's state: MPI stays for the next (compare's fabrics) */
	}
	if (!c && started) {
		MPI_Finalize();
		started = false;
	}
}

static int mpi_allreduce(uint64_t *v, size_t n, bool max)
{
	return MPI_Allreduce(MPI_IN_PLACE, v, (int)n, MPI_UINT64_T, max ? MPI_MAX : MPI_SUM,
			     MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -1;
}

/* The run failed alike in every process: rank 0 says so. */
static bool mpi_failed_alike(const struct cli_run *c)
{
	const struct par_mpi *st = c->par_state;

	return st && st->same_error;
}

/* --profile, in rank 0: the figures merge() gathered */
static int mpi_profile(struct cli_run *c)
{
	struct par_mpi *st = c->par_state;

	if (!st->parts || cli_profile_cut(c, &st->cut, st->p.windows))
		return -1;
	for (uint32_t k = 0; k < st->cut.n; k++)
		cli_profile_part(c, k, &st->parts[k]);
	return 0;
}

static const struct cli_par_ops mpi_ops = {
	.engine = "processes (MPI)",
	.init = mpi_init,
	.setup = mpi_setup,
	.fini = mpi_fini,
	.profile = mpi_profile,
	.failed_alike = mpi_failed_alike,
	.allreduce = mpi_allreduce,
	.local = mpi_local,
};

void par_mpi_attach(void);

void par_mpi_attach(void)
{
	cli_par = &mpi_ops;
}
