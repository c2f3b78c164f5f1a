/* SPDX-License-Identifier: MIT */
/*
 * coll_explain.c - `ibfab run --trace FILE --explain`: the lowered steps of
 * one op, printed so that a student can follow the algorithm with a pencil.
 *
 * A header names the collective, the algorithm, N and S, how the buffer is
 * cut (channels x chunks = K chunks of S/K), the algorithm's closed form
 * and the counts it implies, checked against what was lowered. Then the
 * steps phase by phase (the algorithm's step number: all the transfers of
 * a phase can run at once), one per line:
 *
 *	phase 1 (reduce-scatter):
 *	  step 3: rank 2 -> rank 3: 2 MiB (chunk 1, reduce) after 0
 *
 * Step numbers count from the op's first step; "after" lists the steps of
 * the op it waits for ("entry" when it waits for what came before the
 * collective on its rank). Point-to-point ops get one line.
 */
#include "traces/coll.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_parse.h"

static const char *data_word(enum trace_data d)
{
	return d == TD_REDUCE ? "reduce" : d == TD_COPY ? "copy" : "sync";
}

/* "7", or "4-7" */
static void span(char *buf, size_t len, size_t *off, uint32_t a, uint32_t b)
{
	if (a == b)
		sim_append(buf, len, off, "%" PRIu32, a);
	else
		sim_append(buf, len, off, "%" PRIu32 "-%" PRIu32, a, b);
}

/* "chunk 3", "chunks 4-7", or for a run that wraps "chunks 4 and 0-1" */
static void chunk_text(uint32_t first, uint32_t count, uint32_t K, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	sim_append(buf, len, &off, "chunk%s ", count > 1 ? "s" : "");
	if (first + count <= K) {
		span(buf, len, &off, first, first + count - 1);
		return;
	}
	span(buf, len, &off, first, K - 1);
	sim_append(buf, len, &off, " and ");
	span(buf, len, &off, 0, first + count - K - 1);
}

static void step_line(const struct trace_program *p, uint32_t a, uint32_t s, FILE *out)
{
	const struct trace_step *st = &p->steps[s];
	uint32_t first, count;
	char cb[64], bb[32];
	bool entry = false, any = false;

	coll_step_chunks(p, s, &first, &count);
	chunk_text(first, count, p->op_nchunks[st->op], cb, sizeof(cb));
	fprintf(out, "  step %" PRIu32 ": rank %" PRId32 " -> rank %" PRId32 ": %s (%s, %s)",
		s - a, st->rank, st->peer, coll_fmt_bytes(st->bytes, bb, sizeof(bb)), cb,
		data_word(st->data));
	for (uint32_t j = 0; j < st->ndeps; j++) {
		uint32_t d = p->deps[st->dep_off + j];

		if (d < a) {
			entry = true;
			continue;
		}
		fprintf(out, "%s%" PRIu32, any ? ", " : " after ", d - a);
		any = true;
	}
	if (entry)
		fprintf(out, "%sentry", any ? ", " : " after ");
	fputc('\n', out);
}

static void explain_p2p(const struct trace_program *p, uint32_t op, FILE *out)
{
	const struct trace_op *o = &p->trace->ops[op];
	char bb[32];

	if (o->kind == TRACE_SEND)
		fprintf(out, "send (%s:%d): rank %" PRId32 " -> rank %" PRId32 ": %s, program step %"
			PRIu32 "\n", o->file ? o->file : "-", o->line, o->rank, o->peer,
			coll_fmt_bytes(o->bytes, bb, sizeof(bb)), p->op_first[op]);
	else if (o->kind == TRACE_RECV)
		fprintf(out, "recv (%s:%d): rank %" PRId32 " <- rank %" PRId32
			": done when program step %" PRIu32 " (its send) has landed and what it waits for is done\n",
			o->file ? o->file : "-", o->line, o->rank, o->peer, p->op_first[op]);
	else
		fprintf(out, "compute (%s:%d): rank %" PRId32 " busy for %.3f us, program step %" PRIu32
			"\n", o->file ? o->file : "-", o->line, o->rank,
			(double)o->duration / SIM_US, p->op_first[op]);
}

void trace_explain(const struct trace_program *p, uint32_t op_index, FILE *out)
{
	const struct trace *t = p->trace;
	struct coll_ctx c;
	struct sim_diag d;
	uint32_t a, n, maxph = 0, *cnt = NULL, *order = NULL, per_rank_max = 0;
	uint32_t *sent = NULL;
	char sb[32], kb[32], kb2[32];

	if (!t || op_index >= t->nops || !p->op_first) {
		fprintf(out, "op %" PRIu32 " is not in the lowered program\n", op_index);
		return;
	}
	if (t->ops[op_index].kind != TRACE_COLL) {
		explain_p2p(p, op_index, out);
		return;
	}
	sim_diag_clear(&d);
	if (coll_ctx_init(&c, t, op_index, NULL, &d)) {
		fprintf(out, "%s\n", d.msg);
		return;
	}
	a = p->op_first[op_index];
	n = p->op_nsteps[op_index];

	/* the header */
	fprintf(out, "%s%s%s (%s:%d): %s, %" PRIu32 " ranks, S = %s\n",
		trace_coll_names[c.op->coll], c.op->name[0] ? " " : "", c.op->name,
		c.op->file ? c.op->file : "-", c.op->line, coll_op_label(t, c.op), c.n,
		coll_fmt_bytes(c.bytes, sb, sizeof(sb)));
	if (c.op->proto != TRACE_PROTO_AUTO)	/* given, or NCCL's tuning model's */
		fprintf(out, "protocol: NCCL's %s%s (%" PRIu64 " bytes on the wire for a 4 KiB step)\n",
			trace_proto_labels[c.op->proto],
			c.op->auto_proto ? ", as NCCL's tuning model picks it" : "",
			trace_proto_wire(c.op->proto, 4096));
	if (c.op->coll == TRACE_BROADCAST || c.op->coll == TRACE_REDUCE)
		fprintf(out, "root: rank %" PRId32 "\n", c.ranks[c.root]);
	if (c.op->coll != TRACE_BARRIER)
		fprintf(out, "buffer: %" PRIu32 " channel%s x %" PRIu32 " chunk%s: K = %" PRIu32
			" chunks of %s%s%s\n", c.channels, c.channels > 1 ? "s" : "", c.pieces,
			c.pieces > 1 ? "s" : "", c.nchunks,
			coll_fmt_bytes(coll_run_bytes(c.bytes, c.nchunks, 0, 1), kb, sizeof(kb)),
			c.bytes % c.nchunks ? " or " : "",
			c.bytes % c.nchunks ?
			coll_fmt_bytes(coll_run_bytes(c.bytes, c.nchunks, c.nchunks - 1, 1), kb2,
				       sizeof(kb2)) : "");
	c.algo->describe(&c, out);

	/* what was lowered, against the closed form */
	sent = calloc((size_t)trace_nendpoints(t), sizeof(*sent));
	for (uint32_t s = a; s < a + n; s++) {
		if (p->steps[s].phase > maxph)
			maxph = p->steps[s].phase;
		if (sent && ++sent[p->steps[s].rank] > per_rank_max)
			per_rank_max = sent[p->steps[s].rank];
	}
	fprintf(out, "lowered: %" PRIu32 " transfers in %" PRIu32 " phases (closed form: %" PRIu64
		"), at most %" PRIu32 " sent by one rank", n, maxph, c.algo->nsteps(&c),
		per_rank_max);
	if (n)
		fprintf(out, "; program steps %" PRIu32 "..%" PRIu32, a, a + n - 1);
	fputc('\n', out);
	if (!n) {
		fprintf(out, "(no transfers: %s)\n", c.n < 2 ? "one rank" : "nothing to move");
		goto out;
	}

	/* phase by phase, in step order within each */
	cnt = calloc((size_t)maxph + 2, sizeof(*cnt));
	order = malloc(n * sizeof(*order));
	if (!cnt || !order) {
		fprintf(out, "(out of memory listing the steps)\n");
		goto out;
	}
	for (uint32_t s = a; s < a + n; s++)
		cnt[p->steps[s].phase + 1]++;
	for (uint32_t ph = 0; ph <= maxph; ph++)
		cnt[ph + 1] += cnt[ph];
	for (uint32_t s = a; s < a + n; s++)
		order[cnt[p->steps[s].phase]++] = s;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t s = order[k], ph = p->steps[s].phase;

		if (!k || p->steps[order[k - 1]].phase != ph)
			fprintf(out, "phase %" PRIu32 " (%s):\n", ph, c.algo->phase_name(&c, ph));
		step_line(p, a, s, out);
	}
out:
	free(cnt);
	free(order);
	free(sent);
	coll_ctx_fini(&c);
}
