/* SPDX-License-Identifier: MIT */
/*
 * trace_report.c - what a replay measured, in the shapes people already
 * read: nccl-tests' table (size count type redop root time algbw busbw,
 * as all_reduce_perf prints it, busbw by nccl-tests' factors, and the
 * collective's name last; sendrecv_perf's rows too) and a
 * Chrome-trace / Perfetto timeline (one process per rank; threads for its
 * compute, its collectives and the transfers it sends).
 */
#include "traces/trace_replay.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_json.h"
#include "traces/coll.h"

/*
 * Consecutive identical collectives written by one statement make one row,
 * their times averaged, as nccl-tests averages a size's iterations: an
 * imported sweep's (one command line) and a `repeat` block's (one line of
 * its body). Identical collectives on lines of their own are rows of their
 * own: two layers' allreduces of the same size are two collectives.
 */
static bool same_row(const struct trace_op *a, const struct trace_op *b)
{
	return a->kind == TRACE_COLL && b->kind == TRACE_COLL && a->coll == b->coll &&
	       a->bytes == b->bytes && a->comm == b->comm && a->algo == b->algo &&
	       a->root == b->root && a->line == b->line && a->file == b->file &&
	       a->dtype == b->dtype && a->redop == b->redop;
}

/*
 * nccl-tests' sendrecv_perf (every rank sends to the next and receives
 * from the previous, grouped): its consecutive ops of one size from one
 * command line make one row, its iterations those of one name each. They
 * run back to back on each rank, a fast pair's next iteration beside a
 * slow pair's last, so the row's time is nccl-tests' own: from the first
 * start to the last end, divided by the iterations; busbw = algbw
 * (nccl-tests' factor 1). Returns the op after the row's last.
 */
static bool same_sendrecv_row(const struct trace_op *a, const struct trace_op *b)
{
	return a->sendrecv && b->sendrecv && a->bytes == b->bytes && a->line == b->line &&
	       a->file == b->file && a->dtype == b->dtype && a->redop == b->redop;
}

static size_t sendrecv_row(const struct trace *t, const struct trace_results *r, size_t i,
			   double *time_ps, size_t *iters)
{
	sim_time_t t0 = r->op_start[i], t1 = r->op_end[i];
	size_t j = i;

	*iters = 0;
	for (; j < t->nops && same_sendrecv_row(&t->ops[i], &t->ops[j]); j++) {
		t0 = r->op_start[j] < t0 ? r->op_start[j] : t0;
		t1 = r->op_end[j] > t1 ? r->op_end[j] : t1;
		*iters += j == i || strcmp(t->ops[j].name, t->ops[j - 1].name) != 0;
	}
	*time_ps = (double)(t1 - t0) / (double)*iters;
	return j;
}

void trace_nccl_table(FILE *out, const struct trace_program *p, const struct trace_results *r)
{
	const struct trace *t = p->trace;
	double sum_busbw = 0;
	int rows = 0;

	fprintf(out, "#%12s %13s %9s %7s %7s %10s %8s %8s %6s  %s\n", "size", "count", "type",
		"redop", "root", "time", "algbw", "busbw", "#wrong", "name");
	fprintf(out, "#%12s %13s %9s %7s %7s %10s %8s %8s %6s\n", "(B)", "(elements)", "", "",
		"", "(us)", "(GB/s)", "(GB/s)", "");
	for (size_t i = 0; i < t->nops;) {
		const struct trace_op *op = &t->ops[i];
		size_t j = i + 1, n_avg;
		double time_ps = 0, factor;
		bool red, rooted;

		if (op->sendrecv) {
			j = sendrecv_row(t, r, i, &time_ps, &n_avg);
			factor = 1;
			red = true;	/* nccl-tests prints sum */
			rooted = false;
		} else if (op->kind == TRACE_COLL) {
			while (j < t->nops && same_row(op, &t->ops[j]))
				j++;
			for (size_t k = i; k < j; k++)
				time_ps += (double)(r->op_end[k] - r->op_start[k]);
			n_avg = j - i;
			time_ps /= (double)n_avg;
			factor = coll_busbw_factor(op->coll, t->comms[op->comm].n);
			red = op->coll == TRACE_ALLREDUCE || op->coll == TRACE_REDUCESCATTER ||
			      op->coll == TRACE_REDUCE;
			rooted = op->coll == TRACE_BROADCAST || op->coll == TRACE_REDUCE;
		} else {
			i++;
			continue;
		}
		double algbw = time_ps > 0 ? (double)op->bytes / (time_ps * 1e-12) / 1e9 : 0;
		double busbw = algbw * factor;

		/* the type and op its nccl-tests command line gave (-d, -o), else
		 * nccl-tests' defaults: float, sum */
		const struct trace_dtype *dt = &trace_dtypes[op->dtype ? op->dtype - 1 : TRACE_DTYPE_FLOAT];
		const char *ro = op->redop ? trace_redop_names[op->redop - 1] : "sum";

		fprintf(out, " %12" PRIu64 " %13" PRIu64 " %9s %7s %7d %10.2f %8.2f %8.2f %6s  ",
			op->bytes, op->bytes / dt->size, dt->name, red ? ro : "none",
			rooted ? op->root : -1, time_ps * 1e-6, algbw, busbw, "N/A");
		/* the first one's name (its op id without one), and how many
		 * the row averages */
		if (op->name[0])
			fputs(op->name, out);
		else
			fprintf(out, "op %" PRIu32, op->id);
		if (n_avg > 1)
			fprintf(out, " x%zu", n_avg);
		/* what NCCL's tuning model chose (coll_tune.c) */
		if (op->kind == TRACE_COLL && (op->auto_algo || op->auto_proto))
			fprintf(out, " [%s, %s]", coll_op_label(t, op),
				trace_proto_labels[trace_op_proto(op)]);
		fputc('\n', out);
		sum_busbw += busbw;
		rows++;
		i = j;
	}
	if (rows)
		fprintf(out, "# Avg bus bandwidth    : %g\n", sum_busbw / rows);
}

/* An "X" (complete) event: ts and dur in microseconds, as Chrome-trace wants. */
static void event(FILE *out, bool *first, const char *name, const char *cat, int pid,
		  int tid, sim_time_t start, sim_time_t end)
{
	fprintf(out, "%s\n  {\"name\": ", *first ? "" : ",");
	sim_json_write_string(out, name);
	fprintf(out, ", \"cat\": \"%s\", \"ph\": \"X\", \"pid\": %d, \"tid\": %d, "
		"\"ts\": %.6f, \"dur\": %.6f}", cat, pid, tid, (double)start * 1e-6,
		(double)(end - start) * 1e-6);
	*first = false;
}

int trace_timeline_write(FILE *out, const struct trace_program *p, const struct trace_results *r)
{
	const struct trace *t = p->trace;
	bool first = true;
	char name[96];

	fputs("{\"displayTimeUnit\": \"ns\", \"traceEvents\": [", out);
	for (int32_t k = 0; k < t->nranks; k++) {
		static const char *const threads[] = { "compute", "collectives", "transfers" };

		fprintf(out, "%s\n  {\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, "
			"\"args\": {\"name\": \"rank %d\"}}", first ? "" : ",", k, k);
		first = false;
		for (int th = 0; th < 3; th++)
			fprintf(out, ",\n  {\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, "
				"\"tid\": %d, \"args\": {\"name\": \"%s\"}}", k, th + 1, threads[th]);
	}
	for (size_t i = 0; i < t->nops; i++) {
		const struct trace_op *op = &t->ops[i];

		if (op->kind != TRACE_COLL)
			continue;
		const struct trace_comm *c = &t->comms[op->comm];

		if (op->name[0])
			snprintf(name, sizeof(name), "%s", op->name);
		else
			snprintf(name, sizeof(name), "%s %" PRIu64 " B", trace_coll_names[op->coll],
				 op->bytes);
		for (uint32_t m = 0; m < c->n; m++)
			event(out, &first, name, "collective", c->ranks[m], 2, r->op_start[i],
			      r->op_end[i]);
	}
	for (size_t s = 0; s < p->nsteps; s++) {
		struct trace_step stmp;
		struct trace_step_time ttmp;
		const uint32_t *deps;
		uint32_t buf[TRACE_STEP_MAXDEPS];
		const struct trace_step *st = trace_program_step(p, (uint32_t)s, &stmp, &deps, buf);
		const struct trace_step_time *tt;

		if (st->kind == TS_JOIN)	/* no time, nothing to draw */
			continue;
		if (!(tt = trace_results_time(r, (uint32_t)s, &ttmp)))
			return -1;
		if (st->kind == TS_COMPUTE) {
			snprintf(name, sizeof(name), "compute (op %u)", st->op);
			event(out, &first, name, "compute", st->rank, 1, tt->start, tt->end);
		} else {
			snprintf(name, sizeof(name), "-> %d %" PRIu64 " B (step %u)", st->peer,
				 st->bytes, st->phase);
			event(out, &first, name, "transfer", st->rank, 3, tt->start, tt->end);
		}
	}
	fputs("\n]}\n", out);
	return ferror(out) ? -1 : 0;
}
