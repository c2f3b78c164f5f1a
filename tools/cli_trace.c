/* SPDX-License-Identifier: MIT */
/*
 * cli_trace.c - reports of a replayed workload (ibfab run --trace): the
 * collectives as nccl-tests prints them (algbw = S / time, busbw = algbw x
 * nccl-tests' factor), each rank's compute and communication time, the
 * critical path, the same in JSON, and --explain.
 */
#include "tools/cli_trace.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_parse.h"
#include "sim/sim_json.h"
#include "tools/cli_report.h"
#include "tools/cli_run.h"
#include "traces/coll.h"
#include "traces/trace_fmt.h"
#include "traces/trace_replay.h"

void cli_trace_summary(FILE *out, const struct trace_program *p, const struct trace_results *r)
{
	const struct trace *t = p->trace;
	sim_time_t comp = 0, comm = 0, over = 0;
	char a[32], b[32], c[32];
	size_t ncoll = 0;

	for (size_t i = 0; i < t->nops; i++)
		ncoll += t->ops[i].kind == TRACE_COLL;
	for (int32_t k = 0; k < t->nranks; k++) {
		comp += r->rank[k].compute_ps;
		comm += r->rank[k].comm_ps;
		over += r->rank[k].overlap_ps;
	}
	fprintf(out, "\nworkload       %d ranks, %zu ops (%zu collectives), %zu steps, ended at %s\n",
		t->nranks, t->nops, ncoll, p->nsteps - p->njoins, cli_fmt_time(r->end_ps, a, sizeof(a)));
	fprintf(out, "per rank       compute %s, communication %s, overlapped %s (averages)\n",
		cli_fmt_time(comp / (sim_time_t)t->nranks, a, sizeof(a)),
		cli_fmt_time(comm / (sim_time_t)t->nranks, b, sizeof(b)),
		cli_fmt_time(over / (sim_time_t)t->nranks, c, sizeof(c)));
	fprintf(out, "critical path  %zu steps: compute %s, communication %s\n", r->ncrit,
		cli_fmt_time(r->crit_compute_ps, a, sizeof(a)),
		cli_fmt_time(r->crit_comm_ps, b, sizeof(b)));
	if (r->nvlink_xfers)	/* GPU servers (models/server) */
		fprintf(out, "nvlink         %" PRIu64 " transfers, %s, between GPUs of one NVLink domain; "
			"%" PRIu64 " sends to other servers relayed to the receiver's rail (PXN)\n",
			r->nvlink_xfers, sim_fmt_size(r->nvlink_bytes, a, sizeof(a)), r->pxn_xfers);
	if (r->mpi_rndv_bytes)	/* mpi.proto=ucx */
		fprintf(out, "mpi over ucx   %" PRIu64 " messages inline, %" PRIu64 " eager in %" PRIu64
			" sends, %" PRIu64 " by rendezvous (from %s)\n", r->mpi_msgs[0], r->mpi_msgs[1],
			r->mpi_sends - r->mpi_msgs[0] - r->mpi_msgs[2], r->mpi_msgs[2],
			sim_fmt_size(r->mpi_rndv_bytes, a, sizeof(a)));
	bool table = ncoll > 0;	/* collectives', or sendrecv_perf's, rows */

	for (size_t i = 0; i < t->nops && !table; i++)
		table = t->ops[i].sendrecv;
	if (!table)
		return;
	fprintf(out, "\n");
	trace_nccl_table(out, p, r);
}

void cli_trace_json(struct sim_json *j, const struct cli_report *rep)
{
	const struct trace_program *p = rep->prog;
	const struct trace_results *r = rep->tres;
	char label[96];

	if (!p || !r)
		return;
	const struct trace *t = p->trace;

	sim_json_key(j, "collectives");
	sim_json_arr_begin(j);
	for (size_t i = 0; i < t->nops; i++) {
		const struct trace_op *op = &t->ops[i];

		if (op->kind != TRACE_COLL)
			continue;
		uint32_t n = t->comms[op->comm].n;
		double algbw = trace_op_algbw(p, r, (uint32_t)i);

		sim_json_obj_begin(j);
		sim_json_kstr(j, "name", trace_op_label(t, (uint32_t)i, label, sizeof(label)));
		sim_json_kstr(j, "collective", trace_coll_names[op->coll]);
		sim_json_kstr(j, "algorithm", coll_op_label(t, op));
		sim_json_kstr(j, "protocol", trace_proto_labels[trace_op_proto(op)]);
		/* algo=auto or proto=auto on GPU servers: what NCCL's tuning
		 * model chose */
		if (op->auto_algo || op->auto_proto)
			sim_json_kbool(j, "auto", true);
		sim_json_ku64(j, "bytes", op->bytes);
		sim_json_ku64(j, "ranks", n);
		sim_json_ku64(j, "start_ps", r->op_start[i]);
		sim_json_ku64(j, "end_ps", r->op_end[i]);
		sim_json_kdouble(j, "algbw_gbps", algbw / 1e9);
		sim_json_kdouble(j, "busbw_gbps", algbw * coll_busbw_factor(op->coll, n) / 1e9);
		sim_json_obj_end(j);
	}
	sim_json_arr_end(j);
	sim_json_key(j, "ranks");
	sim_json_arr_begin(j);
	for (int32_t k = 0; k < t->nranks; k++) {
		const struct trace_rank_time *rt = &r->rank[k];

		sim_json_obj_begin(j);
		sim_json_ku64(j, "rank", (uint64_t)k);
		sim_json_kstr(j, "host", rep->net->nodes[t->rank_node[k]].desc);
		sim_json_ku64(j, "compute_ps", rt->compute_ps);
		sim_json_ku64(j, "comm_ps", rt->comm_ps);
		sim_json_ku64(j, "overlap_ps", rt->overlap_ps);
		sim_json_ku64(j, "end_ps", rt->end_ps);
		sim_json_obj_end(j);
	}
	sim_json_arr_end(j);
	sim_json_key(j, "critical_path");
	sim_json_obj_begin(j);
	sim_json_ku64(j, "steps", r->ncrit);
	sim_json_ku64(j, "compute_ps", r->crit_compute_ps);
	sim_json_ku64(j, "comm_ps", r->crit_comm_ps);
	sim_json_obj_end(j);
	if (r->mpi_rndv_bytes) {	/* mpi.proto=ucx: the CPU ranks' messages */
		sim_json_key(j, "mpi");
		sim_json_obj_begin(j);
		sim_json_ku64(j, "rndv_bytes", r->mpi_rndv_bytes);
		sim_json_ku64(j, "short", r->mpi_msgs[0]);
		sim_json_ku64(j, "eager", r->mpi_msgs[1]);
		sim_json_ku64(j, "rendezvous", r->mpi_msgs[2]);
		sim_json_ku64(j, "sends", r->mpi_sends);
		sim_json_obj_end(j);
	}
	if (r->nvlink_xfers) {	/* GPU servers: what went over NVLink */
		sim_json_key(j, "nvlink");
		sim_json_obj_begin(j);
		sim_json_ku64(j, "transfers", r->nvlink_xfers);
		sim_json_ku64(j, "bytes", r->nvlink_bytes);
		sim_json_ku64(j, "pxn_relays", r->pxn_xfers);
		sim_json_obj_end(j);
	}
}

int cli_trace_csv(FILE *out, const struct net *net, const struct trace_program *p,
		  const struct trace_results *r)
{
	const struct trace *t = p->trace;
	char label[96];

	(void)net;
	fputs("name,collective,algorithm,protocol,bytes,ranks,start_ps,end_ps,algbw_gbps,busbw_gbps\n",
	      out);
	for (size_t i = 0; i < t->nops; i++) {
		const struct trace_op *op = &t->ops[i];

		if (op->kind != TRACE_COLL)
			continue;
		uint32_t n = t->comms[op->comm].n;
		double algbw = trace_op_algbw(p, r, (uint32_t)i);

		cli_csv_field(out, trace_op_label(t, (uint32_t)i, label, sizeof(label)));
		fprintf(out, ",%s,%s,%s,%" PRIu64 ",%u,%" PRIu64 ",%" PRIu64 ",%.6f,%.6f\n",
			trace_coll_names[op->coll], coll_op_label(t, op),
			trace_proto_labels[trace_op_proto(op)], op->bytes,
			n, r->op_start[i], r->op_end[i], algbw / 1e9,
			algbw * coll_busbw_factor(op->coll, n) / 1e9);
	}
	return ferror(out) ? -1 : 0;
}

int cli_trace_explain(const struct trace_program *p, const char *which, FILE *out,
		      struct sim_diag *d)
{
	const struct trace *t = p->trace;
	char label[96], *end;
	unsigned long idx = strtoul(which, &end, 10);
	size_t i;

	for (i = 0; i < t->nops; i++)
		if (!strcmp(trace_op_label(t, (uint32_t)i, label, sizeof(label)), which))
			break;
	if (i == t->nops && *which && !*end && idx < t->nops)
		i = idx;
	if (i == t->nops || t->ops[i].kind != TRACE_COLL) {
		char some[256] = "";
		size_t off = 0;
		int n = 0;

		for (size_t k = 0; k < t->nops && n < 6; k++)
			if (t->ops[k].kind == TRACE_COLL) {
				sim_append(some, sizeof(some), &off, "%s%s (%zu)", n ? ", " : "",
					   trace_op_label(t, (uint32_t)k, label, sizeof(label)), k);
				n++;
			}
		return sim_diag_set(d, NULL, 0, 0,
				    "--explain %s: no collective with that id or index (collectives: %s%s)",
				    which, n ? some : "none", n == 6 ? ", ..." : "");
	}
	trace_explain(p, (uint32_t)i, out);
	return 0;
}
