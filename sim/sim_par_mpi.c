/* SPDX-License-Identifier: MIT */
/*
 * sim_par_mpi.c - sim_par's windows over MPI processes (sim_par_mpi.h).
 *
 * One window, in every process alike: publish the earliest event and stop
 * (MPI_Allreduce, minimum of both; with a model's hook its values too,
 * summed and maximised, and the stop it makes of them); the run is over when nothing is left
 * before the earliest stop; run the partition's events before the
 * window's end; exchange what the partitions sent each other: the counts
 * (events, bytes of copies) by MPI_Alltoall, then the events, their copy
 * records and the copies' bytes by MPI_Alltoallv, into the boxes the
 * threads' back-end reads (box[q * n + k]: from q to this process k), and
 * take them in. An error anywhere is a stop of 0 in the next reduction,
 * so every process leaves the loop at the same window.
 */
#include "sim/sim_par_mpi.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sim_par_mpi_init(struct sim_par *p, struct sim_engine *eng, sim_time_t lookahead,
		     sim_par_owner_fn owner, void *ctx, MPI_Comm comm)
{
	int size, rank;

	MPI_Comm_size(comm, &size);
	MPI_Comm_rank(comm, &rank);
	int rc = sim_par_setup(p, eng, (uint32_t)size, lookahead, owner, ctx, rank), all = 0;

	/* every process goes on, or none: a lone failure would leave the
	 * others waiting in the first window's reduction */
	MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MIN, comm);
	if (all && !rc) {
		sim_par_fini(p);
		snprintf(p->why, sizeof(p->why), "another process could not set up its partition");
	}
	return all;
}

/* Room for n items of size sz in *v (cap in items); 0 or -1. */
static int reserve(void **v, size_t *cap, size_t n, size_t sz)
{
	if (n <= *cap)
		return 0;
	size_t c = *cap ? *cap : 64;

	while (c < n)
		c *= 2;
	void *x = realloc(*v, c * sz);

	if (!x)
		return -1;
	*v = x;
	*cap = c;
	return 0;
}

/* The per-pair counts and displacements, allocated once a run. */
struct scratch {
	uint64_t *cnt_out, *cnt_in;	/* 2 n each: events, bytes */
	int *sc;			/* 6 n */
};

/*
 * Send every box from k to the others and fill the boxes to k from them.
 * MPI's counts and displacements are ints: a window's messages (one
 * look-ahead of simulated time) stay far below 2^31 bytes; past that the
 * run stops with an error.
 */
static int exchange(struct sim_par *p, uint32_t k, MPI_Comm comm, const struct scratch *x)
{
	uint32_t n = p->n;
	uint64_t *cnt_out = x->cnt_out, *cnt_in = x->cnt_in;
	int *sc = x->sc;
	int rc = -1, ok = 1, all_ok = 0;
	struct sim_event *eo = NULL, *ei = NULL;
	struct sim_par_copy *co = NULL, *ci = NULL;
	unsigned char *dout = NULL, *din = NULL;
	int *ecnt = NULL;

	/* Every process takes part in every collective below: each says
	 * whether it can go on (memory, sizes) before the first that moves
	 * data, and all give up together if one cannot. */
	int *sd = sc + n, *rcnt = sc + 2 * n, *rd = sc + 3 * n, *sdd = sc + 4 * n, *rdd = sc + 5 * n;

	for (uint32_t q = 0; q < n; q++) {
		const struct sim_par_box *b = &p->box[(size_t)k * n + q];

		cnt_out[2 * q] = q == k ? 0 : b->n;
		cnt_out[2 * q + 1] = q == k ? 0 : b->dn;
	}
	MPI_Alltoall(cnt_out, 2, MPI_UINT64_T, cnt_in, 2, MPI_UINT64_T, comm);
	/* pack what goes out, per destination, one after another */
	size_t ne_out = 0, nd_out = 0, ne_in = 0, nd_in = 0;

	for (uint32_t q = 0; q < n; q++) {
		ne_out += cnt_out[2 * q];
		nd_out += cnt_out[2 * q + 1];
		ne_in += cnt_in[2 * q];
		nd_in += cnt_in[2 * q + 1];
	}
	if (ne_out > INT_MAX / sizeof(struct sim_event) || ne_in > INT_MAX / sizeof(struct sim_event) ||
	    nd_out > INT_MAX || nd_in > INT_MAX)
		ok = 0;	/* over what one window may carry */
	eo = malloc((ne_out ? ne_out : 1) * sizeof(*eo));
	co = malloc((ne_out ? ne_out : 1) * sizeof(*co));
	dout = malloc(nd_out ? nd_out : 1);
	ei = malloc((ne_in ? ne_in : 1) * sizeof(*ei));
	ci = malloc((ne_in ? ne_in : 1) * sizeof(*ci));
	din = malloc(nd_in ? nd_in : 1);
	ecnt = malloc(4 * (size_t)n * sizeof(int));
	ok = ok && eo && co && dout && ei && ci && din && ecnt;
	MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
	if (!all_ok)
		goto out;
	size_t e = 0, d = 0;
	int *edis = ecnt + n, *recnt = ecnt + 2 * n, *redis = ecnt + 3 * n;

	for (uint32_t q = 0; q < n; q++) {
		struct sim_par_box *b = &p->box[(size_t)k * n + q];
		size_t m = cnt_out[2 * q];

		sc[q] = (int)(m * sizeof(struct sim_event));
		sd[q] = (int)(e * sizeof(struct sim_event));
		ecnt[q] = (int)(m * sizeof(struct sim_par_copy));
		edis[q] = (int)(e * sizeof(struct sim_par_copy));
		sdd[q] = (int)d;
		if (m) {
			memcpy(eo + e, b->ev, m * sizeof(*eo));
			for (size_t i = 0; i < m; i++)	/* offsets from the box's start */
				co[e + i] = b->copy[i];
			if (b->dn)	/* events with no copied bytes: no data array */
				memcpy(dout + d, b->data, b->dn);
		}
		e += m;
		d += cnt_out[2 * q + 1];
		b->n = 0;
		b->dn = 0;
	}
	size_t ei_n = 0, di_n = 0;

	for (uint32_t q = 0; q < n; q++) {
		rcnt[q] = (int)(cnt_in[2 * q] * sizeof(struct sim_event));
		rd[q] = (int)(ei_n * sizeof(struct sim_event));
		recnt[q] = (int)(cnt_in[2 * q] * sizeof(struct sim_par_copy));
		redis[q] = (int)(ei_n * sizeof(struct sim_par_copy));
		rdd[q] = (int)di_n;
		ei_n += cnt_in[2 * q];
		di_n += cnt_in[2 * q + 1];
	}
	MPI_Alltoallv(eo, sc, sd, MPI_BYTE, ei, rcnt, rd, MPI_BYTE, comm);
	MPI_Alltoallv(co, ecnt, edis, MPI_BYTE, ci, recnt, redis, MPI_BYTE, comm);
	/* the bytes: counts are the byte totals per pair */
	for (uint32_t q = 0; q < n; q++) {
		sc[q] = (int)cnt_out[2 * q + 1];
		rcnt[q] = (int)cnt_in[2 * q + 1];
	}
	MPI_Alltoallv(dout, sc, sdd, MPI_BYTE, din, rcnt, rdd, MPI_BYTE, comm);
	/* into the boxes to k, as the threads' back-end leaves them */
	e = 0;
	d = 0;
	for (uint32_t q = 0; q < n; q++) {
		struct sim_par_box *b = &p->box[(size_t)q * n + k];
		size_t m = cnt_in[2 * q], bytes = cnt_in[2 * q + 1];

		if (q == k)
			continue;	/* a partition's box to itself stays empty */
		if (reserve((void **)&b->ev, &b->cap, m, sizeof(*b->ev)))
			goto out;
		size_t cap = b->cap;	/* the copy records follow the events' capacity */
		struct sim_par_copy *c = realloc(b->copy, (cap ? cap : 1) * sizeof(*b->copy));

		if (!c)
			goto out;
		b->copy = c;
		if (reserve((void **)&b->data, &b->dcap, bytes, 1))
			goto out;
		if (m) {	/* (an empty box may have no array: memcpy wants one) */
			memcpy(b->ev, ei + e, m * sizeof(*b->ev));
			memcpy(b->copy, ci + e, m * sizeof(*b->copy));
		}
		if (bytes)
			memcpy(b->data, din + d, bytes);
		b->n = m;
		b->dn = bytes;
		e += m;
		d += bytes;
	}
	rc = 0;
out:
	free(ecnt);
	free(eo);
	free(co);
	free(dout);
	free(ei);
	free(ci);
	free(din);
	return rc;
}

/* A window's reduction: the minimum of the earliest event and stop, the
 * sum of the hook's sums, the maximum of its maximum. */
#define WIN_WORDS (2 + SIM_PAR_SUMS + 1)

static void window_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
	const uint64_t *a = in;
	uint64_t *b = inout;

	(void)type;
	for (int i = 0; i + WIN_WORDS <= *len; i += WIN_WORDS) {
		for (int j = 0; j < 2; j++)
			b[i + j] = a[i + j] < b[i + j] ? a[i + j] : b[i + j];
		for (int j = 2; j < 2 + SIM_PAR_SUMS; j++)
			b[i + j] += a[i + j];
		if (a[i + WIN_WORDS - 1] > b[i + WIN_WORDS - 1])
			b[i + WIN_WORDS - 1] = a[i + WIN_WORDS - 1];
	}
}

int sim_par_mpi_run(struct sim_par *p, MPI_Comm comm)
{
	uint32_t k = p->first;
	struct sim_engine *eng = p->eng[k];
	struct scratch x = { calloc(2 * (size_t)p->n, sizeof(uint64_t)),
			     calloc(2 * (size_t)p->n, sizeof(uint64_t)),
			     calloc(6 * (size_t)p->n, sizeof(int)) };
	int ok = x.cnt_out && x.cnt_in && x.sc, all_ok = 0;

	MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
	if (!all_ok) {
		free(x.cnt_out);
		free(x.cnt_in);
		free(x.sc);
		snprintf(p->why, sizeof(p->why), "out of memory for the exchange between processes");
		return p->err = -1;
	}
	MPI_Op op;

	MPI_Op_create(window_op, 1, &op);
	for (;;) {
		/* one reduction: the earliest event and stop, the hook's sums and maximum */
		uint64_t mine[WIN_WORDS] = { 0 }, all[WIN_WORDS];

		sim_par_publish(p, k, &mine[0], &mine[1]);
		if (p->hook.values)
			p->hook.values(p->hook.ctx, k, &mine[2], &mine[2 + SIM_PAR_SUMS]);
		double w0 = MPI_Wtime();

		MPI_Allreduce(mine, all, WIN_WORDS, MPI_UINT64_T, op, comm);
		if (p->hook.values) {
			sim_time_t t = sim_par_hook_stop(p, k, &all[2], all[2 + SIM_PAR_SUMS]);

			if (t < all[1])
				all[1] = t;
		}
		p->part[k].wait_s += MPI_Wtime() - w0;
		sim_time_t end = sim_par_end(p, all[0], all[1]);

		if (!end)
			break;
		sim_par_window(p, k, end);
		w0 = MPI_Wtime();
		int bad = exchange(p, k, comm, &x);

		p->part[k].wait_s += MPI_Wtime() - w0;
		if (bad) {
			if (!p->err) {
				p->err = -1;
				snprintf(p->why, sizeof(p->why),
					 "out of memory (or over 1 GiB in one window) for messages between processes");
			}
			p->part[k].failed = true;
			continue;	/* the next reduction stops everybody */
		}
		sim_par_take(p, k);
	}
	MPI_Op_free(&op);
	free(x.cnt_out);
	free(x.cnt_in);
	free(x.sc);
	/* the run's clock and event count, in every process */
	/* the clock: the last event one list has too (sim_aside) */
	uint64_t v[2] = { sim_main_now(eng), eng->events }, mx = 0, sum = 0;
	int err = p->err, any = 0;

	MPI_Allreduce(&v[0], &mx, 1, MPI_UINT64_T, MPI_MAX, comm);
	MPI_Allreduce(&v[1], &sum, 1, MPI_UINT64_T, MPI_SUM, comm);
	MPI_Allreduce(&err, &any, 1, MPI_INT, MPI_MIN, comm);
	p->part[k].events = eng->events;
	p->part[k].main_now = v[0];
	eng->now = mx;
	eng->events = sum;
	eng->stop = true;
	/* the process whose model halted first (sim_par.first_halt): the
	 * earliest time, then the lowest rank */
	uint64_t h = p->part[k].halted ? p->part[k].halt_at : UINT64_MAX, hmin = 0;
	int who = INT32_MAX, first = INT32_MAX;

	MPI_Allreduce(&h, &hmin, 1, MPI_UINT64_T, MPI_MIN, comm);
	if (p->part[k].halted && h == hmin)
		who = (int)k;
	MPI_Allreduce(&who, &first, 1, MPI_INT, MPI_MIN, comm);
	p->first_halt = first == INT32_MAX ? -1 : first;
	if (any && !p->err) {
		p->err = -1;
		snprintf(p->why, sizeof(p->why), "another process failed");
	}
	return p->err;
}
