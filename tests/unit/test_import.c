/* SPDX-License-Identifier: MIT */
/*
 * test_import.c - the importers (traces/import_*.c) on real-shaped inputs
 * in tests/golden/import/: htsim connection matrices as csg-htsim's
 * generators write them (the ring allreduce has the step structure of a
 * native ring allreduce: transfers, sizes, dependency depth), an HPCC flow
 * file as traffic_gen.py writes it, NCCL INIT/COLL logs of 8-rank jobs
 * (NCCL 2.18 with commIds, 2.7 with one process driving 8 GPUs, COLL-only)
 * and nccl-tests command lines; detection of each format; malformed inputs
 * refused at their file:line; mutated inputs never crash. When the replay
 * is built (traces/trace_replay.h), the imported traces also run on a
 * fabric and give the same per-op times as the equivalent native traces.
 */
#include <CUnit/CUnit.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_parse.h"
#include "tests/unit/test_main.h"
#include "traces/import.h"
#include "traces/trace.h"
#include "traces/trace_fmt.h"

#if __has_include("traces/trace_replay.h")
#include "tests/unit/util_fabric.h"
#include "traces/trace_replay.h"
#define HAVE_REPLAY 1
#endif

typedef int (*import_fn)(const char *path, const char *text, size_t len, struct trace *t,
			 struct sim_diag *d);

/* ---- helpers --------------------------------------------------------------- */

static char *slurp(const char *rel, size_t *len)
{
	char path[1024];
	struct sim_diag d;
	char *buf = NULL;

	test_src_path(rel, path, sizeof(path));
	if (trace_read_file(path, &buf, len, &d)) {
		fprintf(stderr, "\ncannot read %s\n", path);
		CU_FAIL_FATAL("golden input missing");
	}
	return buf;
}

/* Import a golden file with `fn`, then validate; both must succeed. */
static void import_file(import_fn fn, const char *rel, struct trace *t)
{
	struct sim_diag d;
	size_t len;
	char *text = slurp(rel, &len), buf[1024];
	int rc;

	trace_init(t);
	sim_diag_clear(&d);
	rc = fn(rel, text, len, t, &d);
	if (!rc)
		rc = trace_validate(t, &d);
	if (rc) {
		sim_diag_format(&d, buf, sizeof(buf));
		fprintf(stderr, "\nunexpected refusal: %s\n", buf);
	}
	free(text);
	CU_ASSERT_FATAL(rc == 0);
}

static void import_str(import_fn fn, const char *text, struct trace *t)
{
	struct sim_diag d;
	char buf[1024];
	int rc;

	trace_init(t);
	sim_diag_clear(&d);
	rc = fn("t.in", text, strlen(text), t, &d);
	if (!rc)
		rc = trace_validate(t, &d);
	if (rc) {
		sim_diag_format(&d, buf, sizeof(buf));
		fprintf(stderr, "\nunexpected refusal: %s\n", buf);
	}
	CU_ASSERT_FATAL(rc == 0);
}

/* Refused at t.in:line:col (col 0: not checked) with `what` in the message. */
static void refused(import_fn fn, const char *text, int line, int col, const char *what)
{
	struct sim_diag d;
	struct trace t;
	char buf[1024];
	int rc;

	trace_init(&t);
	sim_diag_clear(&d);
	rc = fn("t.in", text, strlen(text), &t, &d);
	if (!rc)
		rc = trace_validate(&t, &d);
	sim_diag_format(&d, buf, sizeof(buf));
	CU_ASSERT_EQUAL(rc, -1);
	CU_ASSERT_STRING_EQUAL(d.file, "t.in");
	CU_ASSERT_EQUAL(d.line, line);
	if (col)
		CU_ASSERT_EQUAL(d.col, col);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, what));
	if (rc != -1 || strcmp(d.file, "t.in") || d.line != line || (col && d.col != col) ||
	    !strstr(d.msg, what))
		fprintf(stderr, "\nexpected t.in:%d:%d: ...%s...\n     got %s\n", line, col, what,
			buf);
	trace_free(&t);
}

static size_t count_kind(const struct trace *t, enum trace_kind k)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nops; i++)
		n += t->ops[i].kind == k;
	return n;
}

static uint32_t dep(const struct trace *t, size_t i, uint32_t k)
{
	return t->deps[t->ops[i].dep_off + k];
}

/*
 * The longest chain of ops of kind `k` through the dependencies (ops are
 * emitted after their deps, which this also checks).
 */
static uint32_t depth(const struct trace *t, enum trace_kind k)
{
	uint32_t *dp = calloc(t->nops + 1, sizeof(*dp)), best = 0;

	CU_ASSERT_FATAL(dp != NULL);
	for (size_t i = 0; i < t->nops; i++) {
		uint32_t m = 0;

		for (uint32_t j = 0; j < t->ops[i].ndeps; j++) {
			CU_ASSERT(dep(t, i, j) < i);
			if (dep(t, i, j) < i && dp[dep(t, i, j)] > m)
				m = dp[dep(t, i, j)];
		}
		dp[i] = m + (t->ops[i].kind == k);
		if (dp[i] > best)
			best = dp[i];
	}
	free(dp);
	return best;
}

static int op_named(const struct trace *t, const char *name)
{
	for (size_t i = 0; i < t->nops; i++)
		if (!strcmp(t->ops[i].name, name))
			return (int)i;
	fprintf(stderr, "\nno op named '%s'\n", name);
	CU_FAIL_FATAL("op not found");
	return -1;
}

static bool has_dep(const struct trace *t, size_t i, uint32_t on)
{
	for (uint32_t j = 0; j < t->ops[i].ndeps; j++)
		if (dep(t, i, j) == on)
			return true;
	return false;
}

/* ---- htsim ------------------------------------------------------------------ */

/*
 * gen_allreduce.py's ring: 8 chains (one per starting node) of 2N-1 = 15
 * flows, each flow started by the previous one's send_done oneshot.
 */
static void test_htsim_generator_ring(void)
{
	struct trace t;

	import_file(import_htsim, "tests/golden/import/ring_allreduce_8.cm", &t);
	CU_ASSERT_EQUAL(t.nranks, 8);
	CU_ASSERT_EQUAL(t.map, TRACE_MAP_LINEAR);
	CU_ASSERT_EQUAL(t.nops, 120);
	CU_ASSERT_EQUAL(count_kind(&t, TRACE_SEND), 120);	/* start 0: no compute */
	for (size_t i = 0; i < t.nops; i++) {
		const struct trace_op *o = &t.ops[i];

		CU_ASSERT_EQUAL(o->bytes, 131072);
		CU_ASSERT_EQUAL(o->peer, (o->rank + 1) % 8);
		CU_ASSERT(o->ndeps <= 1);
		if (o->ndeps) {
			/* the chunk moves on: the flow that fired it delivered to this rank */
			CU_ASSERT_EQUAL(t.ops[dep(&t, i, 0)].peer, o->rank);
		}
		CU_ASSERT_STRING_EQUAL(o->file, "tests/golden/import/ring_allreduce_8.cm");
	}
	CU_ASSERT_EQUAL(depth(&t, TRACE_SEND), 15);
	/* flow 1 (line 4) starts at once; flow 2 (line 5) waits for it */
	CU_ASSERT_EQUAL(t.ops[op_named(&t, "flow 1")].ndeps, 0);
	CU_ASSERT_EQUAL(t.ops[op_named(&t, "flow 1")].line, 4);
	CU_ASSERT(has_dep(&t, (size_t)op_named(&t, "flow 2"), (uint32_t)op_named(&t, "flow 1")));
	trace_free(&t);
}

/* Transfers of a lowered program: count, bytes, and the longest chain. */
struct xfer_shape {
	size_t n;
	uint64_t bytes_min, bytes_max;
	uint32_t depth;
	bool ring;		/* every transfer goes r -> r+1 */
};

static struct xfer_shape program_shape(const struct trace *t)
{
	struct trace_program p;
	struct xfer_shape s = { .bytes_min = UINT64_MAX, .ring = true };
	struct sim_diag d;
	char buf[1024];
	uint32_t *dp;

	trace_program_init(&p, t);
	if (trace_lower(t, &p, &d)) {
		sim_diag_format(&d, buf, sizeof(buf));
		fprintf(stderr, "\ntrace_lower: %s\n", buf);
		CU_FAIL_FATAL("lowering failed");
	}
	dp = calloc(p.nsteps + 1, sizeof(*dp));
	CU_ASSERT_FATAL(dp != NULL);
	/* steps may list deps in any order: relax until nothing changes */
	for (bool changed = true; changed;) {
		changed = false;
		for (size_t i = 0; i < p.nsteps; i++) {
			uint32_t m = 0, v;

			for (uint32_t j = 0; j < p.steps[i].ndeps; j++)
				if (dp[p.deps[p.steps[i].dep_off + j]] > m)
					m = dp[p.deps[p.steps[i].dep_off + j]];
			v = m + (p.steps[i].kind == TS_XFER);
			if (v != dp[i]) {
				dp[i] = v;
				changed = true;
			}
		}
	}
	for (size_t i = 0; i < p.nsteps; i++) {
		const struct trace_step *st = &p.steps[i];

		if (st->kind != TS_XFER)
			continue;
		s.n++;
		if (st->bytes < s.bytes_min)
			s.bytes_min = st->bytes;
		if (st->bytes > s.bytes_max)
			s.bytes_max = st->bytes;
		s.ring &= st->peer == (st->rank + 1) % t->nranks;
		if (dp[i] > s.depth)
			s.depth = dp[i];
	}
	free(dp);
	trace_program_free(&p);
	return s;
}

/*
 * The same generator with the ring's 2(N-1) hops per chunk: the imported
 * .cm and a native `allreduce algo=ring` of S = 1 MiB on 8 ranks lower to
 * the same step structure: 8 x 14 transfers of S/8 to the next rank,
 * 14 deep.
 */
static void test_htsim_ring_matches_native(void)
{
	struct trace cm, nat;
	struct xfer_shape a, b;
	struct sim_diag d;
	int sent[8] = { 0 }, got[8] = { 0 };

	import_file(import_htsim, "tests/golden/import/ring_allreduce_8_2n2.cm", &cm);
	CU_ASSERT_EQUAL(cm.nops, 8 * 14);
	for (size_t i = 0; i < cm.nops; i++) {
		sent[cm.ops[i].rank]++;
		got[cm.ops[i].peer]++;
	}
	for (int r = 0; r < 8; r++) {
		CU_ASSERT_EQUAL(sent[r], 14);
		CU_ASSERT_EQUAL(got[r], 14);
	}
	CU_ASSERT_EQUAL(depth(&cm, TRACE_SEND), 14);

	CU_ASSERT_FATAL(trace_load_string("ranks 8\nallreduce 1MiB algo=ring\n", "n.trace", &nat,
					  &d) == 0);
	a = program_shape(&cm);
	b = program_shape(&nat);
	CU_ASSERT_EQUAL(a.n, 112);
	CU_ASSERT_EQUAL(a.n, b.n);
	CU_ASSERT_EQUAL(a.bytes_min, 131072);
	CU_ASSERT_EQUAL(a.bytes_max, 131072);
	CU_ASSERT_EQUAL(b.bytes_min, 131072);
	CU_ASSERT_EQUAL(b.bytes_max, 131072);
	CU_ASSERT_EQUAL(a.depth, 14);
	CU_ASSERT_EQUAL(a.depth, b.depth);
	CU_ASSERT(a.ring);
	CU_ASSERT(b.ring);
	if (a.n != b.n || a.depth != b.depth)
		fprintf(stderr, "\n.cm: %zu transfers, depth %u; native: %zu, depth %u\n", a.n,
			a.depth, b.n, b.depth);
	trace_free(&cm);
	trace_free(&nat);
}

/* recv_done into a barrier; start times as compute ops on the sources. */
static void test_htsim_barrier_and_starts(void)
{
	struct trace t;
	int f1, f2, f3, c2, c3;

	import_file(import_htsim, "tests/golden/import/incast_barrier.cm", &t);
	CU_ASSERT_EQUAL(t.nranks, 4);
	CU_ASSERT_EQUAL(t.nops, 8);
	CU_ASSERT_EQUAL(count_kind(&t, TRACE_COMPUTE), 2);
	f1 = op_named(&t, "flow 1");
	f2 = op_named(&t, "flow 2");
	f3 = op_named(&t, "flow 3");
	c2 = op_named(&t, "start 2000000ps");
	c3 = op_named(&t, "start 5000000ps");
	CU_ASSERT_EQUAL(t.ops[c2].rank, 2);
	CU_ASSERT_EQUAL(t.ops[c2].duration, 2 * SIM_US);
	CU_ASSERT_EQUAL(t.ops[c3].rank, 3);
	CU_ASSERT_EQUAL(t.ops[c3].duration, 5 * SIM_US);
	CU_ASSERT_EQUAL(t.ops[c3].line, 8);
	CU_ASSERT_EQUAL(t.ops[f1].ndeps, 0);			/* start 0 */
	CU_ASSERT_EQUAL(t.ops[f2].ndeps, 1);
	CU_ASSERT(has_dep(&t, (size_t)f2, (uint32_t)c2));
	CU_ASSERT(has_dep(&t, (size_t)f3, (uint32_t)c3));
	CU_ASSERT_EQUAL(t.ops[f2].bytes, 1000000);
	CU_ASSERT_EQUAL(t.ops[f2].peer, 0);
	for (int k = 4; k <= 6; k++) {
		char name[16];
		int f;

		snprintf(name, sizeof(name), "flow %d", k);
		f = op_named(&t, name);
		/* the barrier waits for all three deliveries */
		CU_ASSERT_EQUAL(t.ops[f].ndeps, 3);
		CU_ASSERT(has_dep(&t, (size_t)f, (uint32_t)f1));
		CU_ASSERT(has_dep(&t, (size_t)f, (uint32_t)f2));
		CU_ASSERT(has_dep(&t, (size_t)f, (uint32_t)f3));
		CU_ASSERT_EQUAL(t.ops[f].rank, 0);
		CU_ASSERT_EQUAL(t.ops[f].peer, k - 3);
		CU_ASSERT_EQUAL(t.ops[f].bytes, 4096);
	}
	trace_free(&t);
}

/*
 * gen_serialn_alltoall.py: per source, rounds of 2 parallel flows chained
 * by multishot triggers (the k-th next flow starts at the k-th completion);
 * every source starts at 1.5 us.
 */
static void test_htsim_multishot(void)
{
	struct trace t;
	size_t nsend;

	import_file(import_htsim, "tests/golden/import/serial_alltoall_8.cm", &t);
	nsend = count_kind(&t, TRACE_SEND);
	CU_ASSERT_EQUAL(nsend, 56);
	CU_ASSERT_EQUAL(count_kind(&t, TRACE_COMPUTE), 8);	/* one start per source */
	for (size_t i = 0; i < t.nops; i++) {
		const struct trace_op *o = &t.ops[i];

		if (o->kind == TRACE_COMPUTE) {
			CU_ASSERT_EQUAL(o->duration, 1500 * SIM_NS);
			continue;
		}
		CU_ASSERT_EQUAL(o->ndeps, 1);
		CU_ASSERT_EQUAL(o->bytes, 65536);
		/* a source's flows only wait for its own earlier flows or start */
		CU_ASSERT_EQUAL(t.ops[dep(&t, i, 0)].rank, o->rank);
	}
	/* flows 3 and 4 are trigger 1's targets: one each of flows 1 and 2 */
	CU_ASSERT(has_dep(&t, (size_t)op_named(&t, "flow 3"), (uint32_t)op_named(&t, "flow 1")));
	CU_ASSERT(has_dep(&t, (size_t)op_named(&t, "flow 4"), (uint32_t)op_named(&t, "flow 2")));
	/* flow 7 (the odd one) waits for the first of trigger 3's activations */
	CU_ASSERT(has_dep(&t, (size_t)op_named(&t, "flow 7"), (uint32_t)op_named(&t, "flow 5")));
	/* 7 flows per source: 3 rounds of 2 in parallel, then the odd one: 4 deep */
	CU_ASSERT_EQUAL(depth(&t, TRACE_SEND), 4);
	trace_free(&t);
}

static void test_htsim_grammar(void)
{
	struct trace t;

	/* comments, blank lines, CRLF, tabs, header order, decimal start, prio, addon */
	import_str(import_htsim,
		   "# made by hand\r\n"
		   "Connections 2\r\n"
		   "Nodes 3\r\n"
		   "\r\n"
		   "0->2\tstart 1.5e6 size 10 prio 3 addon\r\n"
		   "2->1 start 0 size 20   # trailing comment\r\n", &t);
	CU_ASSERT_EQUAL(t.nranks, 3);
	CU_ASSERT_EQUAL(t.nops, 3);
	CU_ASSERT_EQUAL(t.ops[0].kind, TRACE_COMPUTE);
	CU_ASSERT_EQUAL(t.ops[0].duration, 1500 * SIM_NS);
	CU_ASSERT_EQUAL(t.ops[op_named(&t, "flow@5")].ndeps, 1);
	CU_ASSERT_EQUAL(t.ops[op_named(&t, "flow@6")].bytes, 20);
	trace_free(&t);

	/* one source, three start times: a chain of gaps, shared for equal starts */
	import_str(import_htsim,
		   "Nodes 2\nConnections 4\n"
		   "0->1 start 3000 size 1\n0->1 start 1000 size 1\n"
		   "0->1 start 3000 size 1\n0->1 start 7000 size 1\n", &t);
	CU_ASSERT_EQUAL(count_kind(&t, TRACE_COMPUTE), 3);
	CU_ASSERT_EQUAL(t.ops[0].duration, 1000);
	CU_ASSERT_EQUAL(t.ops[1].duration, 2000);
	CU_ASSERT(has_dep(&t, 1, 0));
	CU_ASSERT_EQUAL(t.ops[2].duration, 4000);
	CU_ASSERT(has_dep(&t, 2, 1));
	CU_ASSERT(has_dep(&t, 3, 1));		/* line 3: start 3000 */
	CU_ASSERT(has_dep(&t, 5, 1));		/* line 5: start 3000 too */
	CU_ASSERT(has_dep(&t, 6, 2));
	trace_free(&t);

	/* a flow naming a barrier both as send and recv done counts twice, one dep */
	import_str(import_htsim,
		   "Nodes 3\nConnections 2\nTriggers 1\n"
		   "0->1 id 1 start 0 size 8 send_done_trigger 5 recv_done_trigger 5\n"
		   "1->2 id 2 trigger 5 size 8\n"
		   "trigger id 5 barrier count 2\n", &t);
	CU_ASSERT_EQUAL(t.ops[1].ndeps, 1);
	trace_free(&t);

	/* a trigger declared before the flows that use it, targets before activators */
	import_str(import_htsim,
		   "Nodes 2\nConnections 2\nTriggers 1\n"
		   "trigger id 9 oneshot\n"
		   "1->0 id 2 trigger 9 size 8\n"
		   "0->1 id 1 start 0 size 8 send_done_trigger 9\n", &t);
	CU_ASSERT_STRING_EQUAL(t.ops[0].name, "flow 1");
	CU_ASSERT(has_dep(&t, 1, 0));
	CU_ASSERT_EQUAL(t.ops[1].line, 5);
	trace_free(&t);
}

static void test_htsim_malformed(void)
{
	const char *h = "Nodes 4\nConnections 1\n";

	refused(import_htsim, "Connections 1\n0->1 start 0 size 8\n", 2, 1, "expected 'Nodes <n>'");
	refused(import_htsim, "Nodes 4\nConnections 1\n0->4 start 0 size 8\n", 3, 4,
		"a node number below 4");
	refused(import_htsim, "Nodes 4\nConnections 1\n0 -> 1 start 0 size 8\n", 3, 1,
		"no blanks around '->'");
	refused(import_htsim, "Nodes 4\nConnections 1\n0->1 start 0\n", 3, 0, "expected 'size <bytes>'");
	refused(import_htsim, "Nodes 4\nConnections 1\n0->1 size 8\n", 3, 0,
		"expected 'start <ps>' or 'trigger <id>'");
	refused(import_htsim, "Nodes 4\nConnections 1\n0->1 start soon size 8\n", 3, 12,
		"expected a start time in picoseconds");
	refused(import_htsim, "Nodes 4\nConnections 1\n0->1 start 0 size 8 colour red\n", 3, 21,
		"expected start, size, id, trigger");
	refused(import_htsim, "Nodes 4\nConnections 2\n0->1 start 0 size 8\n", 2, 0,
		"the header says Connections 2 but the file has 1 flow lines");
	refused(import_htsim, "Nodes 4\nConnections 1\nTriggers 1\n"
		"0->1 id 3 trigger 7 size 8\ntrigger id 8 oneshot\n", 4, 19,
		"trigger 7 is never declared");
	refused(import_htsim, "Nodes 4\nConnections 2\nTriggers 2\n"
		"1->0 id 1 start 0 size 8 recv_done_trigger 1\n0->1 id 3 trigger 1 size 8\n"
		"trigger id 1 oneshot\ntrigger id 1 oneshot\n", 7, 0,
		"trigger 1 is declared twice (first at line 6)");
	refused(import_htsim, "Nodes 4\nConnections 1\n0->1 id 1 start 0 trigger 2 size 8\n", 3, 1,
		"both a start time and a trigger");
	refused(import_htsim, "Nodes 4\nConnections 1\n0->1 trigger 2 size 8\n", 3, 1,
		"needs an 'id'");
	refused(import_htsim, "Nodes 4\nConnections 2\nTriggers 1\n"
		"0->1 id 1 start 0 size 8\n1->2 id 2 trigger 1 size 8\ntrigger id 1 oneshot\n", 6, 0,
		"trigger 1 never fires");
	refused(import_htsim, "Nodes 4\nConnections 3\nTriggers 1\n"
		"0->1 id 1 start 0 size 8 send_done_trigger 1\n"
		"2->1 id 2 start 0 size 8 send_done_trigger 1\n"
		"1->3 id 3 trigger 1 size 8\ntrigger id 1 oneshot\n", 7, 0,
		"a oneshot fires once");
	refused(import_htsim, "Nodes 4\nConnections 2\nTriggers 1\n"
		"0->1 id 1 start 0 size 8 send_done_trigger 1\n"
		"1->3 id 3 trigger 1 size 8\ntrigger id 1 barrier count 2\n", 6, 0,
		"it would never fire");
	refused(import_htsim, "Nodes 4\nConnections 3\nTriggers 1\n"
		"0->1 id 1 start 0 size 8 send_done_trigger 1\n"
		"1->3 id 2 trigger 1 size 8\n1->2 id 3 trigger 1 size 8\n"
		"trigger id 1 multishot\n", 7, 0, "the flow at line 6 would never start");
	refused(import_htsim, "Nodes 4\nConnections 2\nTriggers 2\n"
		"0->1 id 1 trigger 2 size 8 send_done_trigger 1\n"
		"1->0 id 2 trigger 1 size 8 send_done_trigger 2\n"
		"trigger id 1 oneshot\ntrigger id 2 oneshot\n", 4, 0, "wait for each other");
	refused(import_htsim, "Nodes 4\nConnections 1\ntrigger id 1 sometimes\n", 3, 14,
		"expected id, count, oneshot");
	refused(import_htsim, "Nodes 4\nConnections 1\ntrigger id 1 barrier\n", 3, 0,
		"a barrier needs 'count <k>'");
	refused(import_htsim, "Nodes 4\nConnections 1\nFailures 1\nfailure switch_type TOR\n", 4, 1,
		"link failures");
	refused(import_htsim, "Nodes 4\nConnections 2\n0->1 id 5 start 0 size 8\n"
		"1->0 id 5 start 0 size 8\n", 4, 0, "flow id 5 is used twice (first at line 3)");
	refused(import_htsim, "Nodes 4\nConnections 1\n2->2 start 0 size 8\n", 3, 1, "to itself");
	refused(import_htsim, "Nodes 0\n", 1, 7, "at least 1");
	refused(import_htsim, "Nodes 4\nConnections 0\n", 1, 0, "no flows");
	refused(import_htsim, "Nodes 4\nConnections 1\n0->1 start 0 size 8\nNodes 5\n", 4, 1,
		"must come before the first flow");
	refused(import_htsim, "Nodes 4\nConnections 1\n0->1 start 0 size 0\n", 3, 19,
		"at least 1 byte");
	(void)h;
}

/* ---- HPCC ------------------------------------------------------------------- */

static void test_hpcc_flow_file(void)
{
	struct trace t;
	int32_t maxnode = 0;
	size_t nsend;
	int f0, f1;

	import_file(import_hpcc, "tests/golden/import/hpcc_flow.txt", &t);
	nsend = count_kind(&t, TRACE_SEND);
	CU_ASSERT_EQUAL(nsend, 24);
	CU_ASSERT_EQUAL(count_kind(&t, TRACE_COMPUTE) + nsend, t.nops);
	for (size_t i = 0; i < t.nops; i++) {
		if (t.ops[i].rank > maxnode)
			maxnode = t.ops[i].rank;
		if (t.ops[i].kind == TRACE_SEND && t.ops[i].peer > maxnode)
			maxnode = t.ops[i].peer;
	}
	CU_ASSERT_EQUAL(t.nranks, maxnode + 1);
	/* line 2: "8 1 3 100 500000 2.000000764", the first flow: time 0 */
	f0 = op_named(&t, "flow 0");
	CU_ASSERT_EQUAL(t.ops[f0].rank, 8);
	CU_ASSERT_EQUAL(t.ops[f0].peer, 1);
	CU_ASSERT_EQUAL(t.ops[f0].bytes, 500000);
	CU_ASSERT_EQUAL(t.ops[f0].ndeps, 0);
	CU_ASSERT_EQUAL(t.ops[f0].line, 2);
	/* line 3: "6 7 3 100 1460 2.000001194": 430 ns after the first */
	f1 = op_named(&t, "flow 1");
	CU_ASSERT_EQUAL(t.ops[f1].rank, 6);
	CU_ASSERT_EQUAL(t.ops[f1].bytes, 1460);
	CU_ASSERT_EQUAL(t.ops[f1].ndeps, 1);
	CU_ASSERT_EQUAL(t.ops[dep(&t, (size_t)f1, 0)].kind, TRACE_COMPUTE);
	CU_ASSERT_EQUAL(t.ops[dep(&t, (size_t)f1, 0)].rank, 6);
	CU_ASSERT_EQUAL(t.ops[dep(&t, (size_t)f1, 0)].duration, 430 * SIM_NS);
	trace_free(&t);

	/* one source: the compute chain holds the gaps; exponents; text after the flows */
	import_str(import_hpcc, "3\n0 1 3 100 10 2\n0 2 3 100 10 2.0000025e0\n"
		   "0 1 3 100 10 2.000004\nFirst line: # of flows\n", &t);
	CU_ASSERT_EQUAL(t.nranks, 3);
	CU_ASSERT_EQUAL(t.nops, 5);
	CU_ASSERT_EQUAL(count_kind(&t, TRACE_COMPUTE), 2);
	CU_ASSERT_EQUAL(t.ops[0].duration, 2500 * SIM_NS);
	CU_ASSERT_EQUAL(t.ops[1].duration, 1500 * SIM_NS);
	CU_ASSERT(has_dep(&t, 1, 0));
	CU_ASSERT_EQUAL(t.ops[op_named(&t, "flow 0")].ndeps, 0);
	CU_ASSERT(has_dep(&t, (size_t)op_named(&t, "flow 1"), 0));
	CU_ASSERT(has_dep(&t, (size_t)op_named(&t, "flow 2"), 1));
	trace_free(&t);
}

static void test_hpcc_malformed(void)
{
	refused(import_hpcc, "two\n", 1, 1, "the number of flows");
	refused(import_hpcc, "0\n", 1, 1, "no flows");
	refused(import_hpcc, "2\n0 1 3 100 10 2\n", 2, 0, "got the end of the file");
	refused(import_hpcc, "1\n0 1 3 100 10\n", 2, 0, "expected a start time");
	refused(import_hpcc, "1\n0 1 9 100 10 2\n", 2, 5, "a priority group 0..7");
	refused(import_hpcc, "1\n0 1 3 70000 10 2\n", 2, 7, "a destination port");
	refused(import_hpcc, "1\n0 1 3 100 0 2\n", 2, 11, "at least 1 byte");
	refused(import_hpcc, "1\n3 3 3 100 10 2\n", 2, 1, "to itself");
	refused(import_hpcc, "1\n0 1 3 100 10 2s\n", 2, 14, "expected a start time in seconds");
	refused(import_hpcc, "2\n0 1 3 100 10 2.5\n1 0 3 100 10 2.4\n", 3, 14,
		"earlier than the previous flow");
	refused(import_hpcc, "1\n-1 1 3 100 10 2\n", 2, 1, "a source node number");
	refused(import_hpcc, "1\n0 1 3 100 10 1e30\n", 2, 14, "too large");
}

/* ---- NCCL logs ---------------------------------------------------------------- */

static void test_nccl_log_ddp_tp(void)
{
	struct trace t;
	int bc, ar[5], ag0 = -1, ag1 = -1, rs0 = -1, rs1 = -1;
	size_t nsend = 0, nrecv = 0;

	import_file(import_nccl_log, "tests/golden/import/nccl_ddp_tp_8rank.log", &t);
	CU_ASSERT_EQUAL(t.nranks, 8);
	CU_ASSERT_EQUAL(t.ncomms, 3);
	CU_ASSERT_EQUAL(t.nops, 17);
	/* the TP communicators: one per node, in their rank order */
	for (uint32_t c = 1; c < 3; c++) {
		CU_ASSERT_EQUAL(t.comms[c].n, 4);
		for (uint32_t i = 0; i < 4; i++)
			CU_ASSERT_EQUAL(t.comms[c].ranks[i], (int32_t)((c - 1) * 4 + i));
	}
	bc = op_named(&t, "Broadcast opCount 0");
	CU_ASSERT_EQUAL(t.ops[bc].kind, TRACE_COLL);
	CU_ASSERT_EQUAL(t.ops[bc].coll, TRACE_BROADCAST);
	CU_ASSERT_EQUAL(t.ops[bc].comm, 0);
	CU_ASSERT_EQUAL(t.ops[bc].root, 0);
	CU_ASSERT_EQUAL(t.ops[bc].bytes, 25557032ULL * 4);
	CU_ASSERT_EQUAL(t.ops[bc].ndeps, 0);
	for (int k = 1; k <= 4; k++) {
		char name[32];

		snprintf(name, sizeof(name), "AllReduce opCount %d", k);
		ar[k] = op_named(&t, name);
		CU_ASSERT_EQUAL(t.ops[ar[k]].coll, TRACE_ALLREDUCE);
		CU_ASSERT_EQUAL(t.ops[ar[k]].comm, 0);
		/* stream order: each waits for the previous call on the world stream */
		CU_ASSERT_EQUAL(t.ops[ar[k]].ndeps, 1);
		CU_ASSERT(has_dep(&t, (size_t)ar[k], (uint32_t)(k == 1 ? bc : ar[k - 1])));
	}
	CU_ASSERT_EQUAL(t.ops[ar[1]].bytes, 6553600ULL * 4);
	CU_ASSERT_EQUAL(t.ops[ar[3]].bytes, 6449832ULL * 4);
	CU_ASSERT_EQUAL(t.ops[ar[4]].bytes, 4);
	for (size_t i = 0; i < t.nops; i++) {
		const struct trace_op *o = &t.ops[i];

		if (o->kind == TRACE_COLL && o->coll == TRACE_ALLGATHER) {
			*(o->comm == 1 ? &ag0 : &ag1) = (int)i;
			/* bf16, count per rank x 4 ranks: nccl-tests' size */
			CU_ASSERT_EQUAL(o->bytes, 1048576ULL * 4 * 2);
			CU_ASSERT_EQUAL(o->ndeps, 0);	/* first on the TP stream */
		}
		if (o->kind == TRACE_COLL && o->coll == TRACE_REDUCESCATTER) {
			*(o->comm == 1 ? &rs0 : &rs1) = (int)i;
			CU_ASSERT_EQUAL(o->bytes, 1048576ULL * 4 * 2);
		}
		if (o->kind == TRACE_SEND || o->kind == TRACE_RECV) {
			/* pipeline: node 1 sends to node 2, after the last allreduce */
			nsend += o->kind == TRACE_SEND;
			nrecv += o->kind == TRACE_RECV;
			CU_ASSERT_EQUAL(o->bytes, 524288ULL * 2);
			CU_ASSERT_EQUAL(o->peer, o->kind == TRACE_SEND ? o->rank + 4 : o->rank - 4);
			CU_ASSERT_EQUAL(o->ndeps, 1);
			CU_ASSERT(has_dep(&t, i, (uint32_t)ar[4]));
		}
	}
	CU_ASSERT_EQUAL(nsend, 4);
	CU_ASSERT_EQUAL(nrecv, 4);
	CU_ASSERT_FATAL(ag0 >= 0 && ag1 >= 0 && rs0 >= 0 && rs1 >= 0);
	CU_ASSERT(has_dep(&t, (size_t)rs0, (uint32_t)ag0));
	CU_ASSERT(has_dep(&t, (size_t)rs1, (uint32_t)ag1));
	CU_ASSERT_EQUAL(t.ops[rs0].ndeps, 1);
	trace_free(&t);
}

/*
 * nccl-tests -g 8 on NCCL 2.7: one thread issues every GPU's call, so all
 * lines say [0]; the comm pointers (and the INIT lines without commId)
 * tell the ranks apart. Warm-up 2, then 2 sizes x (oop, in-place) x
 * (sync + 2 timed): 14 allreduces, one after the other; opCounts in hex.
 */
static void test_nccl_log_one_process(void)
{
	struct trace t;

	import_file(import_nccl_log, "tests/golden/import/nccl_tests_g8_v2.7.log", &t);
	CU_ASSERT_EQUAL(t.nranks, 8);
	CU_ASSERT_EQUAL(t.ncomms, 1);
	CU_ASSERT_EQUAL(t.nops, 14);
	for (size_t i = 0; i < t.nops; i++) {
		CU_ASSERT_EQUAL(t.ops[i].coll, TRACE_ALLREDUCE);
		CU_ASSERT_EQUAL(t.ops[i].ndeps, i ? 1 : 0);
		if (i)
			CU_ASSERT_EQUAL(dep(&t, i, 0), i - 1);
	}
	CU_ASSERT_EQUAL(t.ops[0].bytes, 2 << 20);	/* warm-up at the max size */
	CU_ASSERT_EQUAL(t.ops[1].bytes, 1 << 20);
	CU_ASSERT_EQUAL(t.ops[13].bytes, 2 << 20);
	CU_ASSERT_STRING_EQUAL(t.ops[13].name, "AllReduce opCount d");
	CU_ASSERT_EQUAL(depth(&t, TRACE_COLL), 14);
	trace_free(&t);
}

/* An op's type and reduction for nccl-tests' table: "-" when not given. */
static const char *dt_name(const struct trace_op *o)
{
	return o->dtype && o->dtype <= TRACE_NDTYPES ? trace_dtypes[o->dtype - 1].name : "-";
}

static const char *op_name(const struct trace_op *o)
{
	return o->redop && o->redop <= TRACE_NREDOPS ? trace_redop_names[o->redop - 1] : "-";
}

/* COLL only: ranks are the comm handles in order of appearance. */
static void test_nccl_log_coll_only(void)
{
	struct trace t;

	import_file(import_nccl_log, "tests/golden/import/nccl_coll_only_8rank.log", &t);
	CU_ASSERT_EQUAL(t.nranks, 8);
	CU_ASSERT_EQUAL(t.nops, 4);
	CU_ASSERT_EQUAL(t.ops[0].bytes, 4194304ULL * 4);
	CU_ASSERT_EQUAL(t.ops[2].coll, TRACE_ALLGATHER);
	CU_ASSERT_EQUAL(t.ops[2].bytes, 131072ULL * 8 * 2);	/* fp16, per rank x 8 */
	CU_ASSERT_EQUAL(t.ops[3].bytes, 8);			/* one double */
	CU_ASSERT_EQUAL(depth(&t, TRACE_COLL), 4);
	/* the table's type and op, as logged (1 + trace_dtypes' index) */
	CU_ASSERT_STRING_EQUAL(dt_name(&t.ops[0]), "float");
	CU_ASSERT_STRING_EQUAL(dt_name(&t.ops[2]), "half");
	CU_ASSERT_STRING_EQUAL(dt_name(&t.ops[3]), "double");
	CU_ASSERT_STRING_EQUAL(op_name(&t.ops[0]), "sum");
	trace_free(&t);
	/* bfloat16 and max; an op made at run time (5 on) is nccl-tests'
	 * premultiplied sum */
	import_str(import_nccl_log,
		   "h:1:1 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x2 count 8 datatype 9 op 2 root 0 comm 0x10 [nranks=2] stream 0x1\n"
		   "h:2:2 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x2 count 8 datatype 9 op 2 root 0 comm 0x20 [nranks=2] stream 0x1\n"
		   "h:1:1 [0] NCCL INFO AllReduce: opCount 1 sendbuff 0x1 recvbuff 0x2 count 8 datatype 10 op 7 root 0 comm 0x10 [nranks=2] stream 0x1\n"
		   "h:2:2 [0] NCCL INFO AllReduce: opCount 1 sendbuff 0x1 recvbuff 0x2 count 8 datatype 10 op 7 root 0 comm 0x20 [nranks=2] stream 0x1\n",
		   &t);
	CU_ASSERT_EQUAL_FATAL(t.nops, 2);
	CU_ASSERT_EQUAL(t.ops[0].bytes, 16);
	CU_ASSERT_STRING_EQUAL(dt_name(&t.ops[0]), "bfloat16");
	CU_ASSERT_STRING_EQUAL(op_name(&t.ops[0]), "max");
	CU_ASSERT_STRING_EQUAL(dt_name(&t.ops[1]), "f8e4m3");
	CU_ASSERT_STRING_EQUAL(op_name(&t.ops[1]), "mulsum");
	trace_free(&t);
}

/* Prefixes from launchers, a Send/Recv ring in one group, zero counts. */
static void test_nccl_log_shapes(void)
{
	struct trace t;
	char log[8192];
	size_t off = 0;

	/* 4 ranks: INIT without commId; a ring of Send/Recv grouped; AllReduce after */
	for (int r = 0; r < 4; r++) {
		sim_append(log, sizeof(log), &off,
			   "[1,%d]<stdout>:h%d:10%d:20%d [0] NCCL INFO comm 0x%x rank %d nranks 4 "
			   "cudaDev 0 busId 1000 - Init COMPLETE\n", r, r, r, r, 0x1000 + r, r);
		sim_append(log, sizeof(log), &off,
			   "[1,%d]<stdout>:h%d:10%d:10%d [0] NCCL INFO Recv: opCount 0 sendbuff "
			   "(nil) recvbuff 0x7f00 count 256 datatype 0 op 0 root %d comm 0x%x "
			   "[nranks=4] stream 0x99\n", r, r, r, r, (r + 3) % 4, 0x1000 + r);
		sim_append(log, sizeof(log), &off,
			   "[1,%d]<stdout>:h%d:10%d:10%d [0] NCCL INFO Send: opCount 1 sendbuff "
			   "0x7f00 recvbuff (nil) count 256 datatype 0 op 0 root %d comm 0x%x "
			   "[nranks=4] stream 0x99\n", r, r, r, r, (r + 1) % 4, 0x1000 + r);
		sim_append(log, sizeof(log), &off,
			   "[1,%d]<stdout>:h%d:10%d:10%d [0] NCCL INFO AllReduce: opCount 2 sendbuff "
			   "0x7f00 recvbuff 0x7f00 count 0 datatype 7 op 0 root 0 comm 0x%x "
			   "[nranks=4] stream 0x99\n", r, r, r, r, 0x1000 + r);
		sim_append(log, sizeof(log), &off,
			   "[1,%d]<stdout>:h%d:10%d:10%d [0] NCCL INFO AllReduce: opCount 3 sendbuff "
			   "0x7f00 recvbuff 0x7f00 count 64 datatype 8 op 0 root 0 comm 0x%x "
			   "[nranks=4] stream 0x99\n", r, r, r, r, 0x1000 + r);
	}
	import_str(import_nccl_log, log, &t);
	/* 4 recvs + 4 sends + 1 allreduce (the zero-count one is dropped) */
	CU_ASSERT_EQUAL(t.nops, 9);
	CU_ASSERT_EQUAL(count_kind(&t, TRACE_SEND), 4);
	CU_ASSERT_EQUAL(count_kind(&t, TRACE_RECV), 4);
	for (size_t i = 0; i < t.nops; i++) {
		if (t.ops[i].kind == TRACE_COLL) {
			/* waits for the whole Send/Recv group: 4 ranks x 2 */
			CU_ASSERT_EQUAL(t.ops[i].ndeps, 8);
			CU_ASSERT_EQUAL(t.ops[i].bytes, 512);
		} else {
			/* the group's ops run together: no order inside it */
			CU_ASSERT_EQUAL(t.ops[i].ndeps, 0);
			CU_ASSERT_EQUAL(t.ops[i].bytes, 256);
		}
	}
	trace_free(&t);

	/* NCCL 2.2x: an "nRanks ... localRanks" line before the INIT line, in
	 * which the prefix's device is not the comm's; ncclCommInitRank lines */
	import_str(import_nccl_log,
		   "h:1:5 [0] NCCL INFO comm 0xa rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0\n"
		   "h:1:5 [0] NCCL INFO ncclCommInitRank comm 0xa rank 0 nranks 2 cudaDev 0 nvmlDev 0 "
		   "busId 1000 commId 0x5 - Init COMPLETE\n"
		   "h:2:6 [0] NCCL INFO comm 0xb rank 1 nRanks 2 nNodes 1 localRanks 2 localRank 1 MNNVL 0\n"
		   "h:2:6 [1] NCCL INFO ncclCommInitRank comm 0xb rank 1 nranks 2 cudaDev 1 nvmlDev 1 "
		   "busId 2000 commId 0x5 - Init COMPLETE\n"
		   "h:1:1 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 4 "
		   "datatype 7 op 0 root 0 comm 0xa [nranks=2] stream 0x9\n"
		   "h:2:2 [1] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 4 "
		   "datatype 7 op 0 root 0 comm 0xb [nranks=2] stream 0x9\n", &t);
	CU_ASSERT_EQUAL(t.nranks, 2);
	CU_ASSERT_EQUAL(t.nops, 1);
	CU_ASSERT_EQUAL(t.ops[0].bytes, 16);
	trace_free(&t);
}

static void test_nccl_log_malformed(void)
{
	const char *ar = "h:1:1 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 "
			 "count 8 datatype 7 op 0 root 0 comm 0x10 [nranks=2] stream 0x5\n";
	char buf[2048];

	refused(import_nccl_log, "nothing to see\n", 1, 0, "no NCCL collective");
	refused(import_nccl_log, "h:1:1 [0] NCCL INFO Bootstrap : Using eth0\n", 1, 0,
		"no NCCL collective");
	refused(import_nccl_log, "h:1:1 [0] NCCL INFO Gather: opCount 0 count 8 datatype 7 "
		"root 0 comm 0x10 [nranks=2] stream 0x5\n", 1, 21, "Gather' is not supported");
	refused(import_nccl_log, "h:1:1 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 "
		"count 8 datatype 42 op 0 root 0 comm 0x10 [nranks=2] stream 0x5\n", 1, 72,
		"unknown NCCL datatype 42");
	refused(import_nccl_log, "h:1:1 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 "
		"datatype 7 op 0 root 0 comm 0x10 [nranks=2] stream 0x5\n", 1, 0,
		"expected 'count <elements>'");
	refused(import_nccl_log, "NCCL INFO AllReduce: opCount 0 count 8 datatype 7 root 0 comm "
		"0x10 [nranks=2]\n", 1, 1, "expected the NCCL prefix");
	refused(import_nccl_log, "h:1:1 [0] NCCL INFO AllReduce: opCount 0 count 8 datatype 7 "
		"root 0 comm 0x10 stream 0x5\n", 1, 0, "cannot tell the communicator's size");
	/* one rank of two logged */
	refused(import_nccl_log, ar, 1, 0, "concatenate every rank's log");
	/* no INIT lines and two comm handles of different sizes */
	snprintf(buf, sizeof(buf), "%sh:2:2 [0] NCCL INFO AllReduce: opCount 0 count 8 datatype 7 "
		 "root 0 comm 0x10 [nranks=4] stream 0x5\n", ar);
	refused(import_nccl_log, buf, 2, 0, "only one communicator can be read");
	/* INIT lines: rank 1's call is missing */
	refused(import_nccl_log,
		"h:1:1 [0] NCCL INFO comm 0x10 rank 0 nranks 2 cudaDev 0 commId 0xabc - Init COMPLETE\n"
		"h:2:2 [0] NCCL INFO comm 0x10 rank 1 nranks 2 cudaDev 0 commId 0xabc - Init COMPLETE\n"
		"h:1:1 [0] NCCL INFO AllReduce: opCount 0 count 8 datatype 7 root 0 comm 0x10 "
		"[nranks=2] stream 0x5\n", 3, 0, "was logged by 1 of the communicator's 2 ranks");
	/* the ranks disagree on the call */
	refused(import_nccl_log,
		"h:1:1 [0] NCCL INFO comm 0x10 rank 0 nranks 2 cudaDev 0 commId 0xabc - Init COMPLETE\n"
		"h:2:2 [0] NCCL INFO comm 0x10 rank 1 nranks 2 cudaDev 0 commId 0xabc - Init COMPLETE\n"
		"h:1:1 [0] NCCL INFO AllReduce: opCount 0 count 8 datatype 7 root 0 comm 0x10 stream 0x5\n"
		"h:2:2 [0] NCCL INFO AllReduce: opCount 0 count 9 datatype 7 root 0 comm 0x10 stream 0x5\n",
		4, 0, "the ranks disagree");
	/* a rank of a communicator claimed twice (no commId) */
	refused(import_nccl_log,
		"h:1:1 [0] NCCL INFO comm 0x10 rank 0 nranks 2 cudaDev 0 - Init COMPLETE\n"
		"h:2:2 [0] NCCL INFO comm 0x10 rank 0 nranks 2 cudaDev 0 - Init COMPLETE\n"
		"h:1:1 [0] NCCL INFO AllReduce: opCount 0 count 8 datatype 7 root 0 comm 0x10 stream 0x5\n",
		2, 0, "cannot tell the communicators apart");
	/* root outside the communicator */
	refused(import_nccl_log, "h:1:1 [0] NCCL INFO Broadcast: opCount 0 count 8 datatype 7 "
		"root 5 comm 0x10 [nranks=2] stream 0x5\n", 1, 66, "root 5 is not a rank");
	/* a cross-stream order that deadlocks: A then B on rank 0, B then A on rank 1 */
	refused(import_nccl_log,
		"h:1:1 [0] NCCL INFO comm 0x10 rank 0 nranks 2 cudaDev 0 commId 0xa - Init COMPLETE\n"
		"h:1:1 [0] NCCL INFO comm 0x20 rank 0 nranks 2 cudaDev 0 commId 0xb - Init COMPLETE\n"
		"h:2:2 [0] NCCL INFO comm 0x10 rank 1 nranks 2 cudaDev 0 commId 0xa - Init COMPLETE\n"
		"h:2:2 [0] NCCL INFO comm 0x20 rank 1 nranks 2 cudaDev 0 commId 0xb - Init COMPLETE\n"
		"h:1:1 [0] NCCL INFO AllReduce: opCount 0 count 8 datatype 7 root 0 comm 0x10 stream 0x5\n"
		"h:1:1 [0] NCCL INFO AllReduce: opCount 0 count 8 datatype 7 root 0 comm 0x20 stream 0x5\n"
		"h:2:2 [0] NCCL INFO AllReduce: opCount 0 count 8 datatype 7 root 0 comm 0x20 stream 0x5\n"
		"h:2:2 [0] NCCL INFO AllReduce: opCount 0 count 8 datatype 7 root 0 comm 0x10 stream 0x5\n",
		5, 0, "wait for each other");
}

/* ---- nccl-tests command lines --------------------------------------------------- */

static void test_nccl_tests_sweep(void)
{
	struct trace t;
	uint64_t sz = 8;

	import_file(import_nccl_tests, "tests/golden/import/nccl_tests_sweep.txt", &t);
	CU_ASSERT_EQUAL(t.nranks, 8);
	/* 8, 16, ..., 128 MiB: 25 sizes x 20 timed iterations, one after another */
	CU_ASSERT_EQUAL(t.nops, 25 * 20);
	for (size_t i = 0; i < t.nops; i++) {
		CU_ASSERT_EQUAL(t.ops[i].kind, TRACE_COLL);
		CU_ASSERT_EQUAL(t.ops[i].coll, TRACE_ALLREDUCE);
		CU_ASSERT_EQUAL(t.ops[i].comm, 0);
		CU_ASSERT_EQUAL(t.ops[i].bytes, sz);
		CU_ASSERT_EQUAL(t.ops[i].ndeps, i ? 1 : 0);
		CU_ASSERT_EQUAL(t.ops[i].line, 2);
		if (i % 20 == 19)
			sz *= 2;
	}
	CU_ASSERT_EQUAL(sz, 256u << 20);
	CU_ASSERT_STRING_EQUAL(t.ops[0].name, "allreduce 8B #0");
	trace_free(&t);

	import_file(import_nccl_tests, "tests/golden/import/nccl_tests_mpi.job", &t);
	CU_ASSERT_EQUAL(t.nranks, 16);				/* -np 2 x -g 8 */
	CU_ASSERT_EQUAL(t.nops, 4 * 5);				/* 1M 4M 16M 64M x -n 5 */
	CU_ASSERT_EQUAL(t.ops[0].coll, TRACE_ALLGATHER);
	CU_ASSERT_EQUAL(t.ops[0].bytes, 1 << 20);
	CU_ASSERT_EQUAL(t.ops[19].bytes, 64 << 20);
	CU_ASSERT_EQUAL(t.ops[0].line, 3);
	trace_free(&t);
}

static void test_nccl_tests_options(void)
{
	struct trace t;

	/* per-rank rounding: all_gather's count is cut to a multiple of the ranks */
	import_str(import_nccl_tests, "all_gather_perf -b100 -e 100 -g 3 -n1\n", &t);
	CU_ASSERT_EQUAL(t.nops, 1);
	CU_ASSERT_EQUAL(t.ops[0].bytes, 96);		/* 25 floats -> 24 */
	trace_free(&t);

	/* -i steps, -d, long options with '=', -m aggregation, -G graph launches */
	import_str(import_nccl_tests, "reduce_scatter_perf --minbytes=1K -e 3K -i 1024 -d half "
		   "--iters 2 -m 2 -G 3 -t 2 -g 2\n", &t);
	CU_ASSERT_EQUAL(t.nranks, 4);
	CU_ASSERT_EQUAL(t.nops, 3 * 2 * 2 * 3);
	CU_ASSERT_EQUAL(t.ops[0].bytes, 1024);
	CU_ASSERT_EQUAL(t.ops[t.nops - 1].bytes, 3072);
	/* the table's type and op: half (trace_dtypes[6]) and the default sum */
	CU_ASSERT_STRING_EQUAL(dt_name(&t.ops[0]), "half");
	CU_ASSERT_STRING_EQUAL(op_name(&t.ops[0]), "sum");
	trace_free(&t);

	/* -r all: one sweep per root; -d all: one per type (10 types) */
	import_str(import_nccl_tests, "broadcast_perf -b 1M -e 1M -n 1 -g 4 -r all\n", &t);
	CU_ASSERT_EQUAL(t.nops, 4);
	for (int r = 0; r < 4; r++)
		CU_ASSERT_EQUAL(t.ops[r].root, r);
	trace_free(&t);
	import_str(import_nccl_tests, "reduce_perf -b 64 -e 64 -n 1 -g 2 -d all -o all -r 1\n", &t);
	CU_ASSERT_EQUAL(t.nops, 10 * 6);
	CU_ASSERT_EQUAL(t.ops[0].root, 1);
	/* nccl-tests' order: types outside ops - int8 sum .. mulsum, uint8 sum ... */
	for (size_t i = 0; i < t.nops; i++) {
		CU_ASSERT_EQUAL(t.ops[i].dtype, i / 6 + 1);
		CU_ASSERT_EQUAL(t.ops[i].redop, i % 6 + 1);
	}
	CU_ASSERT_EQUAL(t.ops[59].bytes, 64);	/* bfloat16: 32 elements */
	trace_free(&t);
	/* a collective that reduces nothing has no op; sendrecv_perf loops
	 * over -o all as nccl-tests does (its table prints the op) */
	import_str(import_nccl_tests, "all_gather_perf -b 64 -e 64 -n 1 -g 2 -o max -d f8e5m2\n", &t);
	CU_ASSERT_EQUAL(t.nops, 1);
	CU_ASSERT_EQUAL(t.ops[0].redop, 0);
	CU_ASSERT_STRING_EQUAL(dt_name(&t.ops[0]), "f8e5m2");
	trace_free(&t);
	import_str(import_nccl_tests, "sendrecv_perf -b 64 -e 64 -n 1 -g 2 -o all\n", &t);
	CU_ASSERT_EQUAL(t.nops, 6 * 2 * 2 + 5);	/* 6 sweeps of 2 sends, 2 recvs; 5 barriers */
	CU_ASSERT_EQUAL(t.ops[t.nops - 1].redop, 6);
	trace_free(&t);

	/* sendrecv: a ring of sends and recvs per iteration, in step */
	import_str(import_nccl_tests, "srun -N 2 --ntasks-per-node=2 sendrecv_perf -b 4K -e 4K "
		   "-n 2\n", &t);
	CU_ASSERT_EQUAL(t.nranks, 4);
	CU_ASSERT_EQUAL(count_kind(&t, TRACE_SEND), 8);
	CU_ASSERT_EQUAL(count_kind(&t, TRACE_RECV), 8);
	for (size_t i = 0; i < t.nops; i++) {
		const struct trace_op *o = &t.ops[i];

		CU_ASSERT_EQUAL(o->peer, o->kind == TRACE_SEND ? (o->rank + 1) % 4 : (o->rank + 3) % 4);
		CU_ASSERT_EQUAL(o->ndeps, i < 8 ? 0 : 2);
		CU_ASSERT(o->sendrecv);	/* the table's rows */
	}
	trace_free(&t);
	/* nccl-tests' barrier before each size's loop: a compute of no time on
	 * rank 0 after every rank's last send and receive (and the collective
	 * before), which the next size's first ops, or the next collective,
	 * wait for alone */
	import_str(import_nccl_tests, "all_reduce_perf -b 1M -e 1M -g 4 -n 1\n"
		   "sendrecv_perf -b 1K -e 2K -f 2 -g 4 -n 1\n"
		   "all_reduce_perf -b 1M -e 1M -g 4 -n 1\n", &t);
	CU_ASSERT_EQUAL(t.nops, 1 + 1 + 8 + 1 + 8 + 1 + 1);
	CU_ASSERT_EQUAL(count_kind(&t, TRACE_COMPUTE), 3);
	for (size_t b = 1; b < t.nops; b += 9) {	/* ops 1, 10, 19 */
		const struct trace_op *o = &t.ops[b];

		CU_ASSERT_EQUAL(o->kind, TRACE_COMPUTE);
		CU_ASSERT_EQUAL(o->rank, 0);
		CU_ASSERT_EQUAL(o->duration, 0);
		CU_ASSERT_FALSE(o->sendrecv);
		CU_ASSERT_EQUAL(o->ndeps, b == 1 ? 1 : 8);
		for (size_t k = b - (b == 1 ? 1 : 8); k < b; k++)
			CU_ASSERT(has_dep(&t, b, (uint32_t)k));
		if (b + 1 < t.nops)
			CU_ASSERT(has_dep(&t, b + 1, (uint32_t)b) && t.ops[b + 1].ndeps == 1);
	}
	CU_ASSERT_EQUAL(t.ops[2].bytes, 1024);
	CU_ASSERT_EQUAL(t.ops[11].bytes, 2048);
	CU_ASSERT_EQUAL(t.ops[20].kind, TRACE_COLL);
	CU_ASSERT_EQUAL(t.ranks_per_node, 0);	/* no launcher: the GPUs in order */
	trace_free(&t);

	/* the launcher's processes a node x -t x -g: ranks a server */
	import_str(import_nccl_tests, "srun -N 2 --ntasks-per-node=1 alltoall_perf -b 1M -e 1M -n 1\n",
		   &t);
	CU_ASSERT_EQUAL(t.nranks, 2);
	CU_ASSERT_EQUAL(t.ranks_per_node, 1);
	trace_free(&t);
	import_str(import_nccl_tests, "mpirun -np 4 --map-by ppr:2:node ./all_reduce_perf -g 2 -t 2 "
		   "-b 1M -e 1M -n 1\n", &t);
	CU_ASSERT_EQUAL(t.nranks, 16);
	CU_ASSERT_EQUAL(t.ranks_per_node, 8);
	trace_free(&t);
	import_str(import_nccl_tests, "mpirun -np 2 -npernode 1 ./all_reduce_perf -g 8 -b 1M -e 1M -n 1\n"
		   "mpirun -np 4 --map-by=ppr:2:node ./all_reduce_perf -g 4 -b 1M -e 1M -n 1\n", &t);
	CU_ASSERT_EQUAL(t.ranks_per_node, 8);
	trace_free(&t);
	import_str(import_nccl_tests, "mpirun -np 2 --map-by slot ./all_reduce_perf -g 8 -b 1M -e 1M -n 1\n",
		   &t);
	CU_ASSERT_EQUAL(t.ranks_per_node, 0);
	trace_free(&t);

	/* several commands chain; comments; continuation; env; a path; _mpi builds */
	import_str(import_nccl_tests,
		   "# two runs\n"
		   "NCCL_ALGO=Ring ./build/all_reduce_perf -b 1M -e 2M -f 2 \\\n"
		   "   -g 4 -n 1   # the second line\n"
		   "\n"
		   "mpiexec --np=2 /opt/nccl-tests/alltoall_perf_mpi -b 8M -e 8M -n 1 -g 2\n", &t);
	CU_ASSERT_EQUAL(t.nranks, 4);
	CU_ASSERT_EQUAL(t.nops, 3);
	CU_ASSERT_EQUAL(t.ops[2].coll, TRACE_ALLTOALL);
	CU_ASSERT_EQUAL(t.ops[2].line, 5);
	CU_ASSERT_EQUAL(dep(&t, 2, 0), 1);
	/* NCCL_ALGO=Ring: the ring; all-to-all has none, so stays auto */
	CU_ASSERT_EQUAL(t.ops[0].algo, TRACE_ALGO_RING);
	CU_ASSERT_EQUAL(t.ops[0].proto, TRACE_PROTO_AUTO);
	CU_ASSERT_EQUAL(t.ops[2].algo, TRACE_ALGO_AUTO);
	trace_free(&t);

	/* NCCL_PROTO and NCCL_ALGO lists, before the command and by -x */
	import_str(import_nccl_tests,
		   "NCCL_PROTO=ll128 all_reduce_perf -b 1M -e 1M -g 4 -n 1\n"
		   "mpirun -np 2 -x NCCL_PROTO=^LL -x NCCL_ALGO=^ring,pat ./all_reduce_perf -b 1M -e 1M -g 2 -n 1\n"
		   "NCCL_ALGO=Ring,Tree NCCL_PROTO=LL,Simple all_reduce_perf -b 1M -e 1M -g 4 -n 1\n", &t);
	CU_ASSERT_EQUAL(t.nops, 3);
	CU_ASSERT_EQUAL(t.ops[0].proto, TRACE_PROTO_LL128);
	CU_ASSERT_EQUAL(t.ops[0].protos, 1u << TRACE_PROTO_LL128);
	CU_ASSERT_EQUAL(t.ops[1].algo, TRACE_ALGO_AUTO);	/* tree and collnet left */
	CU_ASSERT_EQUAL(t.ops[1].proto, TRACE_PROTO_AUTO);
	CU_ASSERT_EQUAL(t.ops[1].protos, (1u << TRACE_PROTO_LL128) | (1u << TRACE_PROTO_SIMPLE));
	CU_ASSERT_EQUAL(t.ops[2].algo, TRACE_ALGO_AUTO);
	CU_ASSERT_EQUAL(t.ops[2].protos, (1u << TRACE_PROTO_LL) | (1u << TRACE_PROTO_SIMPLE));
	trace_free(&t);
	import_str(import_nccl_tests, "mpirun -np 2 -x NCCL_ALGO=CollNetChain all_reduce_perf -g 8 -n 1\n"
		   "NCCL_ALGO=NVLSTree mpirun -np 2 all_reduce_perf -g 8 -n 1\n", &t);
	CU_ASSERT_EQUAL(t.ops[0].algo, TRACE_ALGO_COLLNET);
	CU_ASSERT_EQUAL(t.ops[1].algo, TRACE_ALGO_NVLSTREE);
	CU_ASSERT_FALSE(t.ops[0].collnet);
	trace_free(&t);
	/* NCCL_COLLNET_ENABLE=1: CollNet's algorithms are candidates for that
	 * line's collectives (tools/cli_sharp.c gives the job its tree) */
	import_str(import_nccl_tests, "NCCL_COLLNET_ENABLE=1 mpirun -np 2 all_reduce_perf -g 8 -n 1\n"
		   "mpirun -x NCCL_COLLNET_ENABLE=0 -np 2 all_reduce_perf -g 8 -n 1\n", &t);
	CU_ASSERT_TRUE(t.ops[0].collnet);
	CU_ASSERT_EQUAL(t.ops[0].algo, TRACE_ALGO_AUTO);
	CU_ASSERT_FALSE(t.ops[t.nops - 1].collnet);
	trace_free(&t);
	/* NCCL_NVLS_ENABLE=0 leaves auto every algorithm but NVLS; a list of
	 * several leaves auto among them */
	import_str(import_nccl_tests, "NCCL_NVLS_ENABLE=0 all_reduce_perf -g 8 -n 1\n"
		   "NCCL_ALGO=ring,tree all_reduce_perf -g 8 -n 1\n", &t);
	CU_ASSERT_EQUAL(t.ops[0].algo, TRACE_ALGO_AUTO);
	CU_ASSERT_FALSE(t.ops[0].algos & (1u << TRACE_ALGO_NVLS));
	CU_ASSERT_FALSE(t.ops[0].algos & (1u << TRACE_ALGO_NVLSTREE));
	CU_ASSERT_TRUE(t.ops[0].algos & (1u << TRACE_ALGO_RING));
	CU_ASSERT_EQUAL(t.ops[1].algos, (1u << TRACE_ALGO_RING) | (1u << TRACE_ALGO_TREE));
	trace_free(&t);
}

static void test_nccl_tests_malformed(void)
{
	refused(import_nccl_tests, "# nothing\n", 1, 0, "no nccl-tests command");
	refused(import_nccl_tests, "ls -l\n", 1, 1, "expected an nccl-tests program");
	refused(import_nccl_tests, "all_reduce_pref -b 8\n", 1, 1, "expected an nccl-tests program");
	refused(import_nccl_tests, "gather_perf -b 8 -g 2\n", 1, 1, "not supported");
	refused(import_nccl_tests, "foo_perf -g 2\n", 1, 1, "unknown nccl-tests program");
	refused(import_nccl_tests, "all_reduce_perf -b 8 -e 1M -g 8 -q 3\n", 1, 33,
		"unknown nccl-tests option");
	refused(import_nccl_tests, "all_reduce_perf -b 8X -g 8\n", 1, 20, "-b: expected a size");
	refused(import_nccl_tests, "all_reduce_perf -b 1M -e 8 -g 8\n", 1, 1,
		"is larger than maxbytes");
	refused(import_nccl_tests, "all_reduce_perf -b 8 -e 1M\n", 1, 1, "1 rank");
	refused(import_nccl_tests, "all_reduce_perf -g 8 -d float128\n", 1, 25, "-d: expected a type");
	refused(import_nccl_tests, "all_reduce_perf -g 8 -n\n", 1, 22, "expected a value after");
	refused(import_nccl_tests, "all_reduce_perf -g 8 -b 8 -e 1M -i 0\n", 1, 1, "loop forever");
	refused(import_nccl_tests, "all_reduce_perf -g 8\nall_reduce_perf -g 4\n", 2, 1,
		"one trace has one rank count");
	refused(import_nccl_tests, "mpirun -N 8 all_reduce_perf -g 8\n", 1, 1,
		"cannot tell the number of processes");
	refused(import_nccl_tests, "srun -N 2 --ntasks-per-node=1 all_reduce_perf -g 8\n"
		"srun -n 2 all_reduce_perf -g 8\n", 2, 1,
		"this command places 0 ranks a node and the one at line 1 8 (0: the servers' GPUs in order)");
	refused(import_nccl_tests, "mpirun -np 2 --map-by ppr:x:node all_reduce_perf -g 8\n", 1, 27,
		"processes a node");
	refused(import_nccl_tests, "broadcast_perf -g 4 -r 7\n", 1, 1, "root 7 is not a rank");
	refused(import_nccl_tests, "all_reduce_perf -b 8 -e 128M -f 2 -g 8 -n 1000000\n", 1, 1,
		"more than");
	refused(import_nccl_tests, "all_reduce_perf -g 8 extra\n", 1, 22, "expected an option");
	refused(import_nccl_tests, "NCCL_PROTO=LL256 all_reduce_perf -g 8\n", 1, 1,
		"NCCL_PROTO: unknown protocol 'LL256' (NCCL's are LL, LL128, Simple)");
	refused(import_nccl_tests, "NCCL_PROTO=^LL,LL128,Simple all_reduce_perf -g 8\n", 1, 1,
		"leaves no protocol");
	refused(import_nccl_tests, "NCCL_ALGO=allreduce:tree all_reduce_perf -g 8\n", 1, 1,
		"per-collective lists");
	refused(import_nccl_tests, "mpirun -np 2 -x NCCL_ALGO=Tree all_gather_perf -g 8\n", 1, 17,
		"NCCL_ALGO leaves all_gather_perf no algorithm");
	refused(import_nccl_tests, "NCCL_ALGO=PAT all_reduce_perf -g 8\n", 1, 1,
		"leaves no algorithm ibfab models");
}

/* ---- detection ------------------------------------------------------------------ */

static void detect_file(const char *rel, const char *want)
{
	size_t len;
	char *text = slurp(rel, &len);
	const char *got = import_detect(rel, text, len);

	CU_ASSERT_PTR_NOT_NULL(got);
	if (got)
		CU_ASSERT_STRING_EQUAL(got, want);
	if (!got || strcmp(got, want))
		fprintf(stderr, "\n%s: detected %s, expected %s\n", rel, got ? got : "NULL", want);
	free(text);
}

static void test_detect(void)
{
	static const char *const native = "# a native trace\nranks 2\nsend 0 1 1MiB\n";
	static const char junk[] = "\x7f" "ELF\x02\x01\x01\0\0\0";

	detect_file("tests/golden/import/ring_allreduce_8.cm", "htsim");
	detect_file("tests/golden/import/incast_barrier.cm", "htsim");
	detect_file("tests/golden/import/serial_alltoall_8.cm", "htsim");
	detect_file("tests/golden/import/hpcc_flow.txt", "hpcc");
	detect_file("tests/golden/import/nccl_ddp_tp_8rank.log", "nccl-log");
	detect_file("tests/golden/import/nccl_tests_g8_v2.7.log", "nccl-log");
	detect_file("tests/golden/import/nccl_coll_only_8rank.log", "nccl-log");
	detect_file("tests/golden/import/nccl_tests_sweep.txt", "nccl-tests");
	detect_file("tests/golden/import/nccl_tests_mpi.job", "nccl-tests");
	/* the content decides, whatever the name; .cm names htsim */
	CU_ASSERT_STRING_EQUAL(import_detect("x.log", "Nodes 2\n", 8), "htsim");
	CU_ASSERT_STRING_EQUAL(import_detect("x.cm", "garbage\n", 8), "htsim");
	CU_ASSERT_STRING_EQUAL(import_detect("x", "1\n0 1 3 100 64 2.0\n", 18), "hpcc");
	CU_ASSERT_STRING_EQUAL(import_detect("x.trace", native, strlen(native)), "ibfab");
	/* Chakra: NAME.<rank>.et whose first message (a GlobalMetadata of 2
	 * bytes: version "") fits the file; not one that runs past it */
	CU_ASSERT_STRING_EQUAL(import_detect("step.0.et", "\x02\x0a\x00", 3), "chakra");
	CU_ASSERT(!import_detect("step.0.et", "\x09\x0a\x00", 3) ||
		  strcmp(import_detect("step.0.et", "\x09\x0a\x00", 3), "chakra"));
	CU_ASSERT_STRING_EQUAL(import_detect("x.txt", native, strlen(native)), "ibfab");
	CU_ASSERT_PTR_NULL(import_detect("a.out", junk, sizeof(junk) - 1));
	CU_ASSERT_PTR_NULL(import_detect("empty", "", 0));
	CU_ASSERT_PTR_NULL(import_detect("x", "1\n0 1 3 100 64\n", 15));	/* 5 fields */
	CU_ASSERT_PTR_NULL(import_detect("x", "hello world\nNodes 3\n", 20));
	CU_ASSERT_PTR_NULL(import_detect("x", "perf -b 8\n", 10));
}

/* The registry is the one list of formats: every row is whole, and the
 * messages name every row. */
static void test_registry(void)
{
	struct trace t;
	struct sim_diag d;
	const char *path = test_tmpfile("unknown.bin", "\x01\x02 nothing here\n");
	int n = 0;

	for (const struct import_format *f = import_formats; f->name; f++, n++) {
		CU_ASSERT_PTR_NOT_NULL(f->what);
		CU_ASSERT_PTR_NOT_NULL(f->load);
		CU_ASSERT_PTR_NOT_NULL(f->detect);
		CU_ASSERT_PTR_EQUAL(import_format_find(f->name), f);
	}
	CU_ASSERT(n >= 5);
	CU_ASSERT_PTR_NULL(import_format_find("pcap"));
	CU_ASSERT_EQUAL(trace_load(path, NULL, &t, &d), -1);
	trace_free(&t);
	for (const struct import_format *f = import_formats; f->name; f++)
		CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, f->what));
	CU_ASSERT_EQUAL(trace_load(path, "pcap", &t, &d), -1);
	trace_free(&t);
	for (const struct import_format *f = import_formats; f->name; f++)
		CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, f->name));
}

/* trace_load() finds the importer itself, and validates. */
static void test_trace_load(void)
{
	struct trace t;
	struct sim_diag d;
	char path[1024];

	test_src_path("tests/golden/import/nccl_ddp_tp_8rank.log", path, sizeof(path));
	CU_ASSERT_FATAL(trace_load(path, NULL, &t, &d) == 0);
	CU_ASSERT_EQUAL(t.nops, 17);
	trace_free(&t);
	test_src_path("tests/golden/import/hpcc_flow.txt", path, sizeof(path));
	CU_ASSERT_FATAL(trace_load(path, "hpcc", &t, &d) == 0);
	CU_ASSERT_EQUAL(count_kind(&t, TRACE_SEND), 24);
	trace_free(&t);
}

/* ---- mutations: any bytes give a trace or a diagnostic, never a crash ----------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void mutate(char *buf, size_t *len, size_t cap)
{
	static const char *const pieces[] = {
		" ", "\n", "0", "9", "-", "->", "#", "trigger", "id", "0x", "count ", "[nranks=",
		"opCount ", "comm 0x10", "999999999999999999999", "-g", "\\\n", "\0", "\r",
		"NCCL INFO ", ": opCount ", "barrier", "multishot", "rank 0 nranks 9",
	};
	int n = 1 + (int)(rnd() % 4);

	for (int k = 0; k < n && *len; k++) {
		size_t at = rnd() % *len;

		switch (rnd() % 5) {
		case 0:		/* flip a byte */
			buf[at] = (char)rnd();
			break;
		case 1: {	/* delete a run */
			size_t m = 1 + rnd() % 16;

			if (at + m > *len)
				m = *len - at;
			memmove(buf + at, buf + at + m, *len - at - m);
			*len -= m;
			break;
		}
		case 2: {	/* insert a piece of the grammar */
			const char *p = pieces[rnd() % SIM_ARRAY_SIZE(pieces)];
			size_t m = *p ? strlen(p) : 1;

			if (*len + m > cap)
				break;
			memmove(buf + at + m, buf + at, *len - at);
			memcpy(buf + at, p, m);
			*len += m;
			break;
		}
		case 3:		/* truncate */
			*len = at;
			break;
		default: {	/* duplicate a line-sized run */
			size_t m = 1 + rnd() % 80;

			if (at + m > *len)
				m = *len - at;
			if (*len + m > cap)
				break;
			memmove(buf + at + m, buf + at, *len - at);
			*len += m;
			break;
		}
		}
	}
}

static void test_mutations(void)
{
	static const char *const files[] = {
		"tests/golden/import/ring_allreduce_8.cm",
		"tests/golden/import/incast_barrier.cm",
		"tests/golden/import/serial_alltoall_8.cm",
		"tests/golden/import/hpcc_flow.txt",
		"tests/golden/import/nccl_ddp_tp_8rank.log",
		"tests/golden/import/nccl_tests_g8_v2.7.log",
		"tests/golden/import/nccl_coll_only_8rank.log",
		"tests/golden/import/nccl_tests_sweep.txt",
		"tests/golden/import/nccl_tests_mpi.job",
	};
	static const import_fn fns[] = {
		import_htsim, import_hpcc, import_nccl_log, import_nccl_tests,
	};
	const char *env = getenv("IBFAB_FUZZ_ITERS");
	int iters = env ? atoi(env) : 150, accepted = 0, refusedn = 0;

	for (size_t f = 0; f < SIM_ARRAY_SIZE(files); f++) {
		size_t len0, cap;
		char *orig = slurp(files[f], &len0), *buf;

		cap = len0 + 4096;
		buf = malloc(cap);
		CU_ASSERT_FATAL(buf != NULL);
		for (int it = 0; it < iters; it++) {
			size_t len = len0;

			memcpy(buf, orig, len0);
			mutate(buf, &len, cap);
			(void)import_detect(files[f], buf, len);
			for (size_t k = 0; k < SIM_ARRAY_SIZE(fns); k++) {
				struct trace t;
				struct sim_diag d;
				int rc;

				trace_init(&t);
				sim_diag_clear(&d);
				rc = fns[k](files[f], buf, len, &t, &d);
				if (!rc) {
					accepted++;
					(void)trace_validate(&t, &d);
				} else {
					refusedn++;
					/* a refusal always says something */
					CU_ASSERT(d.msg[0] != 0);
				}
				trace_free(&t);
			}
		}
		free(buf);
		free(orig);
	}
	/* both outcomes happen, or the mutations test nothing */
	CU_ASSERT(accepted > 0);
	CU_ASSERT(refusedn > 0);
}

/* ---- replay: imported and equivalent native traces run the same ---------------- */

#ifdef HAVE_REPLAY
/* Replay t on a star of nh hosts; op end times into *end (malloc'd). */
static void replay(struct trace *t, int nh, sim_time_t **end)
{
	struct net net;
	struct fab_params prm;
	struct fab_msgs msgs = { 0 };
	struct trace_program p;
	struct trace_results r;
	struct sim_diag d;
	struct fab *f;
	int hosts[64];
	char buf[1024];

	tf_star(&net, nh, hosts);
	tf_params(&prm, "hdr");
	CU_ASSERT_FATAL(trace_map_ranks(t, &net, &d) == 0);
	trace_program_init(&p, t);
	CU_ASSERT_FATAL(trace_lower(t, &p, &d) == 0);
	f = fab_create(&net, &prm, &msgs, 1, &d);
	CU_ASSERT_FATAL(f != NULL);
	if (trace_replay(&p, f, &r, &d)) {
		sim_diag_format(&d, buf, sizeof(buf));
		fprintf(stderr, "\nreplay: %s\n", buf);
		CU_FAIL_FATAL("replay failed");
	}
	*end = malloc(t->nops * sizeof(**end));
	CU_ASSERT_FATAL(*end != NULL);
	memcpy(*end, r.op_end, t->nops * sizeof(**end));
	trace_results_free(&r);
	fab_destroy(f);
	fab_msgs_free(&msgs);
	trace_program_free(&p);
	net_free(&net);
}

/*
 * Each imported golden input beside its native equivalent (written by
 * hand from the format's semantics, the .trace files beside them): the
 * same ops in the same order, so the per-op end times must be equal.
 */
static void same_times(import_fn fn, const char *in, const char *native, int nh)
{
	struct trace a, b;
	struct sim_diag d;
	sim_time_t *ea, *eb;
	char path[1024], buf[1024];

	import_file(fn, in, &a);
	test_src_path(native, path, sizeof(path));
	if (trace_load(path, "ibfab", &b, &d)) {
		sim_diag_format(&d, buf, sizeof(buf));
		fprintf(stderr, "\n%s\n", buf);
		CU_FAIL_FATAL("native twin does not load");
	}
	CU_ASSERT_FATAL(a.nops == b.nops);
	/* the same ops, waiting for the same ops */
	for (size_t i = 0; i < a.nops; i++) {
		const struct trace_op *x = &a.ops[i], *y = &b.ops[i];
		bool same = x->kind == y->kind && x->rank == y->rank && x->bytes == y->bytes &&
			    x->duration == y->duration && x->ndeps == y->ndeps;

		if (x->kind == TRACE_SEND || x->kind == TRACE_RECV)
			same &= x->peer == y->peer && x->tag == y->tag && x->acked == y->acked;
		if (x->kind == TRACE_COLL)
			same &= x->coll == y->coll && x->root == y->root &&
				a.comms[x->comm].n == b.comms[y->comm].n &&
				!memcmp(a.comms[x->comm].ranks, b.comms[y->comm].ranks,
					a.comms[x->comm].n * sizeof(int32_t));
		for (uint32_t k = 0; same && k < x->ndeps; k++)
			same &= has_dep(&b, i, dep(&a, i, k));
		CU_ASSERT(same);
		if (!same)
			fprintf(stderr, "\n%s op %zu (%s, line %d) differs from %s line %d\n", in, i,
				x->name, x->line, native, y->line);
	}
	replay(&a, nh, &ea);
	replay(&b, nh, &eb);
	for (size_t i = 0; i < a.nops; i++) {
		CU_ASSERT(ea[i] > 0);
		CU_ASSERT_EQUAL(ea[i], eb[i]);
		if (ea[i] != eb[i])
			fprintf(stderr, "\n%s op %zu (%s): %" PRIu64 " ps vs native %" PRIu64 " ps\n",
				in, i, a.ops[i].name, ea[i], eb[i]);
	}
	free(ea);
	free(eb);
	trace_free(&a);
	trace_free(&b);
}

static void test_replay_matches_native(void)
{
	same_times(import_htsim, "tests/golden/import/incast_barrier.cm",
		   "tests/golden/import/incast_barrier.trace", 4);
	same_times(import_htsim, "tests/golden/import/ring_allreduce_8_2n2.cm",
		   "tests/golden/import/ring_allreduce_8_2n2.trace", 8);
	same_times(import_hpcc, "tests/golden/import/hpcc_flow.txt",
		   "tests/golden/import/hpcc_flow.trace", 16);
	same_times(import_nccl_log, "tests/golden/import/nccl_ddp_tp_8rank.log",
		   "tests/golden/import/nccl_ddp_tp_8rank.trace", 8);
}
#endif

static const struct test_case tests[] = {
	{ "htsim: gen_allreduce.py ring, 2N-1 hops", test_htsim_generator_ring },
	{ "htsim: ring of 2(N-1) hops = native ring allreduce", test_htsim_ring_matches_native },
	{ "htsim: recv_done barrier and start times", test_htsim_barrier_and_starts },
	{ "htsim: multishot serial all-to-all", test_htsim_multishot },
	{ "htsim: grammar corners", test_htsim_grammar },
	{ "htsim: malformed refused at file:line", test_htsim_malformed },
	{ "hpcc: traffic_gen flow file", test_hpcc_flow_file },
	{ "hpcc: malformed refused at file:line", test_hpcc_malformed },
	{ "nccl log: DDP + TP + pipeline, 8 ranks, commId", test_nccl_log_ddp_tp },
	{ "nccl log: one process, 8 GPUs, NCCL 2.7", test_nccl_log_one_process },
	{ "nccl log: COLL only", test_nccl_log_coll_only },
	{ "nccl log: prefixes, Send/Recv groups, zero counts", test_nccl_log_shapes },
	{ "nccl log: malformed refused at file:line", test_nccl_log_malformed },
	{ "nccl-tests: sweeps", test_nccl_tests_sweep },
	{ "nccl-tests: options", test_nccl_tests_options },
	{ "nccl-tests: malformed refused at file:line", test_nccl_tests_malformed },
	{ "detect: each format, NULL for others", test_detect },
	{ "registry: one row per format, messages from it", test_registry },
	{ "trace_load: detects and validates", test_trace_load },
	{ "mutations never crash", test_mutations },
#ifdef HAVE_REPLAY
	{ "replay: same per-op times as the native twins", test_replay_matches_native },
#endif
	{ NULL, NULL },
};

TEST_MAIN("import", tests)
