/* SPDX-License-Identifier: MIT */
/*
 * test_trace_fmt.c - the native trace format and the trace core: every
 * construct parses into the ops, dependencies and communicators the
 * format's page (docs/trace-format.md) promises; the ordering rule holds
 * (an op waits for its rank's previous non-async op and its after= list);
 * includes and repeat blocks; rank placement on small fabrics and on the
 * example topologies; malformed traces refused with the right
 * "file:line:col:"; the example traces load; mutated traces never crash.
 */
#define _GNU_SOURCE		/* nftw's FTW_DEPTH, to remove the include test's files */
#include <CUnit/CUnit.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "models/net/net.h"
#include "sim/sim_parse.h"
#include "tests/unit/test_main.h"
#include "tests/unit/util_fabric.h"
#include "topologies/topo.h"
#include "traces/trace.h"
#include "traces/trace_fmt.h"

#define NONE UINT32_MAX

/* ---- helpers ------------------------------------------------------------- */

static void load_ok(const char *text, struct trace *t)
{
	struct sim_diag d;
	char buf[1024];
	int rc = trace_load_string(text, "t.trace", t, &d);

	if (rc) {
		sim_diag_format(&d, buf, sizeof(buf));
		fprintf(stderr, "\nunexpected refusal: %s\n", buf);
	}
	CU_ASSERT_FATAL(rc == 0);
}

/* Refused at t.trace:line:col (col 0: not checked) with `what` in the message. */
static void refused_at(const char *text, int line, int col, const char *what)
{
	struct sim_diag d;
	struct trace t;
	char buf[1024];
	int rc = trace_load_string(text, "t.trace", &t, &d);

	sim_diag_format(&d, buf, sizeof(buf));
	CU_ASSERT_EQUAL(rc, -1);
	CU_ASSERT_STRING_EQUAL(d.file, "t.trace");
	CU_ASSERT_EQUAL(d.line, line);
	if (col)
		CU_ASSERT_EQUAL(d.col, col);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, what));
	if (rc != -1 || d.line != line || (col && d.col != col) || !strstr(d.msg, what))
		fprintf(stderr, "\nexpected t.trace:%d:%d: ...%s...\n     got %s\n", line, col,
			what, buf);
	/* nothing half-loaded is left behind */
	CU_ASSERT_EQUAL(t.nops, 0);
	CU_ASSERT_PTR_NULL(t.ops);
	CU_ASSERT_EQUAL(t.nfiles, 0);
}

static int find(const struct trace *t, const char *name)
{
	for (size_t i = 0; i < t->nops; i++)
		if (!strcmp(t->ops[i].name, name))
			return (int)i;
	CU_FAIL("no op with that name");
	fprintf(stderr, "\nno op named '%s'\n", name);
	return 0;
}

/* The deps of op i as names, sorted-by-index, comma separated. */
static const char *deps(const struct trace *t, int i, char *buf, size_t len)
{
	const struct trace_op *o = &t->ops[i];
	uint32_t *v = malloc((o->ndeps + 1) * sizeof(*v));
	size_t off = 0;

	CU_ASSERT_FATAL(v != NULL);
	memcpy(v, t->deps + o->dep_off, o->ndeps * sizeof(*v));
	for (uint32_t a = 0; a < o->ndeps; a++)
		for (uint32_t b = a + 1; b < o->ndeps; b++)
			if (v[b] < v[a]) {
				uint32_t x = v[a];

				v[a] = v[b];
				v[b] = x;
			}
	buf[0] = 0;
	for (uint32_t k = 0; k < o->ndeps; k++) {
		const struct trace_op *q = &t->ops[v[k]];

		if (q->name[0])
			sim_append(buf, len, &off, "%s%s", k ? "," : "", q->name);
		else
			sim_append(buf, len, &off, "%s#%u", k ? "," : "", v[k]);
	}
	free(v);
	return buf;
}

#define DEPS_ARE(t, name, want) do { \
	char _b[512]; \
	const char *_g = deps((t), find((t), (name)), _b, sizeof(_b)); \
	CU_ASSERT_STRING_EQUAL(_g, (want)); \
	if (strcmp(_g, (want))) \
		fprintf(stderr, "\n%s waits for '%s', expected '%s'\n", (name), _g, (want)); \
} while (0)

/* ---- every construct ------------------------------------------------------ */

static void test_header(void)
{
	struct trace t;

	load_ok("# comment\n\n  ranks 4   # trailing comment\nmap random seed=42\n"
		"comm tp = 2,0,1\ncomm pp=3-3\nbarrier\n", &t);
	CU_ASSERT_EQUAL(t.nranks, 4);
	CU_ASSERT_EQUAL(t.map, TRACE_MAP_RANDOM);
	CU_ASSERT_EQUAL(t.map_seed, 42);
	CU_ASSERT_EQUAL_FATAL(t.ncomms, 3);
	CU_ASSERT_EQUAL(t.comms[0].n, 4);
	for (int r = 0; r < 4; r++)
		CU_ASSERT_EQUAL(t.comms[0].ranks[r], r);
	/* members in the order written: the ring order */
	CU_ASSERT_EQUAL(t.comms[1].n, 3);
	CU_ASSERT_EQUAL(t.comms[1].ranks[0], 2);
	CU_ASSERT_EQUAL(t.comms[1].ranks[1], 0);
	CU_ASSERT_EQUAL(t.comms[1].ranks[2], 1);
	CU_ASSERT_EQUAL(t.comms[2].n, 1);
	CU_ASSERT_EQUAL(t.comms[2].ranks[0], 3);
	CU_ASSERT_EQUAL_FATAL(t.nfiles, 1);
	CU_ASSERT_STRING_EQUAL(t.files[0], "t.trace");
	trace_free(&t);

	load_ok("ranks 2\nbarrier\n", &t);
	CU_ASSERT_EQUAL(t.map, TRACE_MAP_LINEAR);	/* the default */
	trace_free(&t);
	load_ok("ranks 2\nmap roundrobin\nbarrier\n", &t);
	CU_ASSERT_EQUAL(t.map, TRACE_MAP_ROUNDROBIN);
	trace_free(&t);
	load_ok("ranks 2\nmap gpu\nbarrier\n", &t);
	CU_ASSERT_EQUAL(t.map, TRACE_MAP_GPU);
	trace_free(&t);
	load_ok("ranks 2\nmap random\nbarrier\n", &t);
	CU_ASSERT_EQUAL(t.map_seed, 1);
	trace_free(&t);

	load_ok("ranks 3\nhost 1 h7\nhost 0 \"mlx5_0 node 2\"\nhost 2 n0g1\nbarrier\n", &t);
	CU_ASSERT_EQUAL(t.map, TRACE_MAP_EXPLICIT);
	CU_ASSERT_STRING_EQUAL(t.rank_host[0], "mlx5_0 node 2");
	CU_ASSERT_STRING_EQUAL(t.rank_host[1], "h7");
	/* '#' inside a word is a comment: "#4" must be quoted */
	trace_free(&t);
	refused_at("ranks 3\nhost 0 a\nhost 1 b\nhost 2 #4\nbarrier\n", 4, 0,
		   "expected 'host <rank> <host name>'");
	load_ok("ranks 1\nhost 0 \"#4\"\nbarrier\n", &t);
	CU_ASSERT_STRING_EQUAL(t.rank_host[0], "#4");
	trace_free(&t);
}

static void test_p2p(void)
{
	struct trace t;
	const struct trace_op *o;

	load_ok("ranks 3\n"
		"s1: send 0 2 4KiB tag=7\n"
		"send 0 2 1MiB\n"
		"r1: recv 2 0 4KiB tag=7\n"
		"recv 2 0 0x100000\n", &t);
	CU_ASSERT_EQUAL_FATAL(t.nops, 4);
	o = &t.ops[0];
	CU_ASSERT_EQUAL(o->kind, TRACE_SEND);
	CU_ASSERT_EQUAL(o->rank, 0);
	CU_ASSERT_EQUAL(o->peer, 2);
	CU_ASSERT_EQUAL(o->bytes, 4096);
	CU_ASSERT_EQUAL(o->tag, 7);
	CU_ASSERT_STRING_EQUAL(o->name, "s1");
	CU_ASSERT_STRING_EQUAL(o->file, "t.trace");
	CU_ASSERT_EQUAL(o->line, 2);
	CU_ASSERT_EQUAL(t.ops[1].bytes, 1 << 20);
	CU_ASSERT_EQUAL(t.ops[1].tag, 0);
	CU_ASSERT_EQUAL(t.ops[2].kind, TRACE_RECV);
	CU_ASSERT_EQUAL(t.ops[3].bytes, 1 << 20);
	/* op ids are unique: the op's index */
	for (uint32_t i = 0; i < t.nops; i++)
		CU_ASSERT_EQUAL(t.ops[i].id, i);
	/* the second send waits for the first (same rank), the recvs likewise */
	CU_ASSERT_EQUAL(t.ops[0].ndeps, 0);
	DEPS_ARE(&t, "r1", "");
	CU_ASSERT_EQUAL(t.ops[1].ndeps, 1);
	CU_ASSERT_EQUAL(t.deps[t.ops[1].dep_off], 0);
	CU_ASSERT_EQUAL(t.ops[3].ndeps, 1);
	CU_ASSERT_EQUAL(t.deps[t.ops[3].dep_off], 2);

	/* matching: tag 7 recv <- tag 7 send, the untagged pair together */
	uint32_t send_of[8];	/* the largest trace below has 5 ops */
	struct sim_diag d;

	CU_ASSERT_EQUAL(trace_match_recvs(&t, send_of, &d), 0);
	CU_ASSERT_EQUAL(send_of[0], NONE);
	CU_ASSERT_EQUAL(send_of[1], NONE);
	CU_ASSERT_EQUAL(send_of[2], 0);
	CU_ASSERT_EQUAL(send_of[3], 1);
	trace_free(&t);

	/* in order: the k-th recv meets the k-th send, even listed first */
	load_ok("ranks 2\nrecv 1 0 1KiB\nrecv 1 0 2KiB\nsend 0 1 1KiB\nsend 0 1 2KiB\n"
		"send 0 1 8KiB\n", &t);
	CU_ASSERT_EQUAL(trace_match_recvs(&t, send_of, &d), 0);
	CU_ASSERT_EQUAL(send_of[0], 2);
	CU_ASSERT_EQUAL(send_of[1], 3);
	trace_free(&t);
	/* a zero-byte send is a message too */
	load_ok("ranks 2\nsend 0 1 0\nrecv 1 0 0\n", &t);
	CU_ASSERT_EQUAL(t.ops[0].bytes, 0);
	trace_free(&t);
}

static void test_compute(void)
{
	struct trace t;
	char name[32];

	load_ok("ranks 4\nc: compute 2 1.5us\nfwd: compute all 3ms\ncompute all 0\n", &t);
	CU_ASSERT_EQUAL_FATAL(t.nops, 9);
	CU_ASSERT_EQUAL(t.ops[0].kind, TRACE_COMPUTE);
	CU_ASSERT_EQUAL(t.ops[0].rank, 2);
	CU_ASSERT_EQUAL(t.ops[0].duration, 1500000);
	for (int r = 0; r < 4; r++) {
		const struct trace_op *o = &t.ops[1 + r];

		snprintf(name, sizeof(name), "fwd@%d", r);
		CU_ASSERT_STRING_EQUAL(o->name, name);
		CU_ASSERT_EQUAL(o->rank, r);
		CU_ASSERT_EQUAL(o->duration, 3000000000ull);
		CU_ASSERT_EQUAL(t.ops[5 + r].rank, r);
		CU_ASSERT_EQUAL(t.ops[5 + r].duration, 0);
		CU_ASSERT_STRING_EQUAL(t.ops[5 + r].name, "");
	}
	DEPS_ARE(&t, "fwd@2", "c");
	DEPS_ARE(&t, "fwd@1", "");
	trace_free(&t);
}

static void test_collectives(void)
{
	struct trace t;

	load_ok("ranks 8\ncomm tp = 4-7,0\n"
		"allreduce 64MiB\n"
		"allgather 1MiB comm=tp algo=bruck\n"
		"reducescatter 8MiB ranks=0,2,4-5 chunks=4 channels=2\n"
		"alltoall 256KiB algo=pairwise comm=world\n"
		"broadcast 1KiB comm=tp\n"
		"reduce 1KiB comm=tp root=6 algo=tree\n"
		"barrier ranks=0,2,4-5\n"
		"allreduce 1GiB algo=hd ranks=1-2\n", &t);
	CU_ASSERT_EQUAL_FATAL(t.nops, 8);
	/* world, tp, 0,2,4-5 (one communicator for both uses), 1-2 */
	CU_ASSERT_EQUAL_FATAL(t.ncomms, 4);
	CU_ASSERT_EQUAL(t.comms[2].n, 4);
	CU_ASSERT_EQUAL(t.comms[2].ranks[3], 5);
	const struct trace_op *o = t.ops;

	CU_ASSERT_EQUAL(o[0].kind, TRACE_COLL);
	CU_ASSERT_EQUAL(o[0].coll, TRACE_ALLREDUCE);
	CU_ASSERT_EQUAL(o[0].bytes, 64ull << 20);
	CU_ASSERT_EQUAL(o[0].comm, 0);
	CU_ASSERT_EQUAL(o[0].algo, TRACE_ALGO_AUTO);
	CU_ASSERT_EQUAL(o[0].chunks, 0);	/* not given: the lowering's choice */
	CU_ASSERT_EQUAL(o[0].channels, 0);
	CU_ASSERT_EQUAL(o[0].rank, -1);
	CU_ASSERT_EQUAL(o[1].coll, TRACE_ALLGATHER);
	CU_ASSERT_EQUAL(o[1].comm, 1);
	CU_ASSERT_EQUAL(o[1].algo, TRACE_ALGO_BRUCK);
	CU_ASSERT_EQUAL(o[2].coll, TRACE_REDUCESCATTER);
	CU_ASSERT_EQUAL(o[2].comm, 2);
	CU_ASSERT_EQUAL(o[2].chunks, 4);
	CU_ASSERT_EQUAL(o[2].channels, 2);
	CU_ASSERT_EQUAL(o[3].coll, TRACE_ALLTOALL);
	CU_ASSERT_EQUAL(o[3].algo, TRACE_ALGO_PAIRWISE);
	CU_ASSERT_EQUAL(o[3].comm, 0);
	CU_ASSERT_EQUAL(o[4].coll, TRACE_BROADCAST);
	CU_ASSERT_EQUAL(o[4].root, 4);	/* default: the communicator's first member */
	CU_ASSERT_EQUAL(o[5].coll, TRACE_REDUCE);
	CU_ASSERT_EQUAL(o[5].root, 6);
	CU_ASSERT_EQUAL(o[5].algo, TRACE_ALGO_TREE);
	CU_ASSERT_EQUAL(o[6].coll, TRACE_BARRIER);
	CU_ASSERT_EQUAL(o[6].bytes, 0);
	CU_ASSERT_EQUAL(o[6].comm, 2);
	CU_ASSERT_EQUAL(o[7].algo, TRACE_ALGO_HD);
	CU_ASSERT_EQUAL(o[7].bytes, 1ull << 30);
	CU_ASSERT_EQUAL(o[7].comm, 3);
	/* each collective waits for the previous op of each of its members */
	CU_ASSERT_EQUAL(o[1].ndeps, 1);	/* the allreduce, once */
	CU_ASSERT_EQUAL(t.deps[o[1].dep_off], 0);
	/* reducescatter on 0,2,4,5: allgather (on 4,5) and the allreduce (0,2) */
	CU_ASSERT_EQUAL(o[2].ndeps, 2);
	/* the last one (1,2): rank 1's previous is the alltoall, rank 2's the barrier */
	char b[128];

	CU_ASSERT_STRING_EQUAL(deps(&t, 7, b, sizeof(b)), "#3,#6");
	/* the name tables the reports use */
	CU_ASSERT_STRING_EQUAL(trace_coll_names[TRACE_REDUCESCATTER], "reducescatter");
	CU_ASSERT_STRING_EQUAL(trace_algo_names[TRACE_ALGO_PAIRWISE], "pairwise");
	trace_free(&t);
}

/* The ordering rule, on the example of docs/trace-format.md. */
static void test_order(void)
{
	struct trace t;

	load_ok("ranks 2\n"
		"a: compute 0 1ms\n"
		"b: send 0 1 4MiB async\n"
		"c: compute 0 1ms\n"
		"d: compute 0 1ms after=b\n"
		"x: compute 1 1ms\n"
		"e: allreduce 1MiB async\n"
		"f: compute 1 1ms\n"
		"g: barrier after=e\n"
		"h: compute 0 1ms after=f\n", &t);
	DEPS_ARE(&t, "a", "");
	DEPS_ARE(&t, "b", "a");
	DEPS_ARE(&t, "c", "a");		/* not b: b is async */
	DEPS_ARE(&t, "d", "b,c");	/* its rank's previous, and its after= */
	DEPS_ARE(&t, "e", "d,x");	/* each member's previous */
	DEPS_ARE(&t, "f", "x");		/* not e: async */
	DEPS_ARE(&t, "g", "d,e,f");
	DEPS_ARE(&t, "h", "f,g");	/* after= adds to the rank's order */
	trace_free(&t);

	/* forward references are fine */
	load_ok("ranks 2\na: compute 0 1ms after=b\nb: compute 1 1ms\n", &t);
	DEPS_ARE(&t, "a", "b");
	trace_free(&t);
}

/* Lines over rank lists: one op a rank, in rank order, named by rank;
 * after= finds a rank's own, or all of them from a rank outside. */
static void test_rank_lists(void)
{
	struct trace t;

	load_ok("ranks 8\n"
		"f: compute 3,1,2 1ms\n"
		"s: send 3,1,2 6,4,5 1MiB async\n"
		"r: recv 6,4,5 3,1,2 1MiB after=f\n"
		"in: send 4-7 0 1KiB\n"
		"x: compute 1 1us after=f,s\n"
		"y: compute 7 1us after=f\n"
		"z: compute 0 1us after=s@2\n", &t);
	CU_ASSERT_EQUAL_FATAL(t.nops, 3 + 3 + 3 + 4 + 3);
	for (int k = 0; k < 3; k++) {
		CU_ASSERT_EQUAL(t.ops[k].kind, TRACE_COMPUTE);
		CU_ASSERT_EQUAL(t.ops[k].rank, k + 1);		/* in rank order */
		CU_ASSERT_EQUAL(t.ops[3 + k].rank, k + 1);
		CU_ASSERT_EQUAL(t.ops[3 + k].peer, k + 4);	/* each with its own peer */
		CU_ASSERT_EQUAL(t.ops[6 + k].rank, k + 4);
		CU_ASSERT_EQUAL(t.ops[6 + k].peer, k + 1);
	}
	for (int k = 0; k < 4; k++) {
		CU_ASSERT_EQUAL(t.ops[9 + k].rank, 4 + k);
		CU_ASSERT_EQUAL(t.ops[9 + k].peer, 0);
	}
	CU_ASSERT_STRING_EQUAL(t.ops[0].name, "f@1");
	CU_ASSERT_STRING_EQUAL(t.ops[4].name, "s@2");
	DEPS_ARE(&t, "s@2", "f@2");
	DEPS_ARE(&t, "r@4", "f@1,f@2,f@3");	/* rank 4 has no f: all of it */
	DEPS_ARE(&t, "x", "f@1,s@1");
	DEPS_ARE(&t, "y", "f@1,f@2,f@3,in@7");
	DEPS_ARE(&t, "z", "s@2");
	trace_free(&t);
	refused_at("ranks 8\nsend 0-3 4-6 1MiB\n", 2, 10, "3 peers for 4 ranks");
	refused_at("ranks 8\nsend 0-3 1,2,0,3 1MiB\n", 2, 10, "rank 3 cannot send to itself (place 4");
	refused_at("ranks 8\nrecv 0-1 1 1MiB\n", 2, 10, "rank 1 cannot receive from itself (place 2");
	refused_at("ranks 8\nsend 0 4-7 1MiB\n", 2, 8, "a list of peers needs a list of ranks");
	refused_at("ranks 8\ncompute 1,1 1ms\n", 2, 11, "rank 1 is listed twice");
	refused_at("ranks 8\nx: compute 0-3 1ms\ncompute 5 1ms after=x@5\n", 3, 21,
		   "'x' has no op on rank 5");
}

static void test_group_refs(void)
{
	struct trace t;

	load_ok("ranks 4\ncomm lo = 0-1\n"
		"fwd: compute all 1ms\n"
		"s: send 3 0 1KiB async after=fwd\n"
		"ar: allreduce 1MiB comm=lo after=fwd async\n"
		"one: compute 2 1ms after=fwd@1\n"
		"bwd: compute all 1ms after=fwd,ar\n", &t);
	DEPS_ARE(&t, "s", "fwd@3");
	DEPS_ARE(&t, "ar", "fwd@0,fwd@1");
	DEPS_ARE(&t, "one", "fwd@1,fwd@2");
	DEPS_ARE(&t, "bwd@0", "fwd@0,ar");
	DEPS_ARE(&t, "bwd@3", "fwd@3,ar");
	trace_free(&t);
}

static void test_repeat(void)
{
	struct trace t;

	load_ok("ranks 2\n"
		"start: compute all 1ms\n"
		"repeat 2 {\n"
		"  f: compute all 1ms\n"
		"  ar: allreduce 1MiB async\n"
		"  repeat 2 {  # nested\n"
		"    s: send 0 1 1KiB after=ar,start@1\n"
		"  }\n"
		"  opt: compute 0 1ms after=ar\n"
		"}\n"
		"end: barrier after=ar.0,s.1.1\n", &t);
	/* 2 + 2 x (2 + 1 + 2 + 1) + 1 */
	CU_ASSERT_EQUAL(t.nops, 15);
	DEPS_ARE(&t, "f.0@0", "start@0");
	DEPS_ARE(&t, "ar.0", "f.0@0,f.0@1");
	DEPS_ARE(&t, "s.0.0", "start@1,f.0@0,ar.0");	/* the same iteration's ar */
	DEPS_ARE(&t, "s.0.1", "start@1,ar.0,s.0.0");
	DEPS_ARE(&t, "opt.0", "ar.0,s.0.1");
	/* the order runs on across iterations: rank 0's last op was opt.0 */
	DEPS_ARE(&t, "f.1@0", "opt.0");
	DEPS_ARE(&t, "f.1@1", "f.0@1");
	DEPS_ARE(&t, "s.1.0", "start@1,f.1@0,ar.1");
	DEPS_ARE(&t, "end", "ar.0,f.1@1,s.1.1,opt.1");
	CU_ASSERT_EQUAL(t.ops[find(&t, "s.1.1")].line, 7);
	trace_free(&t);

	/* another iteration by its full name, from inside the body */
	load_ok("ranks 2\nrepeat 3 {\n  x: compute 0 1ms\n  y: compute 1 1ms after=x.0\n}\n", &t);
	CU_ASSERT_EQUAL(t.nops, 6);
	DEPS_ARE(&t, "y.2", "x.0,y.1");
	trace_free(&t);
	/* ... which is a cycle from iteration 0 */
	refused_at("ranks 2\nrepeat 3 {\n  x: compute 0 1ms after=x.1\n}\n", 3, 0,
		   "dependency cycle");
	refused_at("ranks 2\nrepeat 2 {\n  x: compute 0 1ms\n}\nbarrier after=x\n", 5, 15,
		   "unknown id 'x' in after= (ids inside a repeat block carry the iteration: 'x.0'");
	refused_at("ranks 2\nrepeat 2 {\n  ranks 3\n}\n", 3, 3,
		   "'ranks' is not allowed inside a repeat block");
	refused_at("ranks 2\nrepeat 2 {\n  barrier\n", 2, 1, "repeat block not closed");
	refused_at("ranks 2\nrepeat 2\n  barrier\n}\n", 2, 9, "expected 'repeat N {'");
	refused_at("ranks 2\nrepeat 0 {\n}\n", 2, 8, "at least 1");
	refused_at("ranks 2\nbarrier\n}\n", 3, 1, "unexpected '}'");
	/* nested repeats that expand to nothing end at once (10^12 visits otherwise) */
	load_ok("ranks 2\nrepeat 1000000 {\n  repeat 1000000 {\n    # nothing\n  }\n}\nbarrier\n", &t);
	CU_ASSERT_EQUAL(t.nops, 1);
	trace_free(&t);
}

static char tmpdir[256];

static const char *tmp_write(const char *name, const char *text)
{
	static char path[16][512];
	static unsigned slot;
	char *p = path[slot++ % 16];
	FILE *f;

	snprintf(p, 512, "%s/%s", tmpdir, name);
	f = fopen(p, "w");
	CU_ASSERT_FATAL(f != NULL);
	fputs(text, f);
	fclose(f);
	return p;
}

static void make_tmpdir(void)
{
	const char *base = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/ibfab-trace-XXXXXX", base ? base : "/tmp");
	CU_ASSERT_FATAL(mkdtemp(tmpdir) != NULL);
	CU_ASSERT_FATAL(mkdir(strcat(strcpy((char[512]){ 0 }, tmpdir), "/sub"), 0700) == 0);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void rm_tmpdir(void)
{
	CU_ASSERT(nftw(tmpdir, rm_one, 8, FTW_DEPTH | FTW_PHYS) == 0);
}

static bool sniff(const char *s)
{
	return trace_fmt_sniff(s, strlen(s));
}

static void test_include(void)
{
	struct sim_diag d;
	struct trace t;
	char buf[1024];
	const char *main_path;

	make_tmpdir();
	tmp_write("sub/header.trace", "ranks 4\ncomm pair = 0,1\ninclude \"../ops.trace\"\n");
	tmp_write("ops.trace", "ar: allreduce 1MiB comm=pair\n");
	main_path = tmp_write("main.trace", "# a job\ninclude \"sub/header.trace\"\n"
			      "post: compute 0 1ms after=ar\n");
	CU_ASSERT_EQUAL_FATAL(trace_load(main_path, NULL, &t, &d), 0);
	CU_ASSERT_EQUAL(t.nranks, 4);
	CU_ASSERT_EQUAL(t.nops, 2);
	CU_ASSERT_EQUAL(t.nfiles, 3);
	CU_ASSERT_PTR_NOT_NULL(strstr(t.ops[0].file, "ops.trace"));
	CU_ASSERT_EQUAL(t.ops[0].line, 1);
	CU_ASSERT_STRING_EQUAL(t.ops[1].file, main_path);
	CU_ASSERT_EQUAL(t.ops[1].line, 3);
	trace_free(&t);

	/* an error inside an included file points into it */
	tmp_write("bad.trace", "barrier\nsend 0 9 1KiB\n");
	main_path = tmp_write("main2.trace", "ranks 2\ninclude bad.trace\n");
	CU_ASSERT_EQUAL(trace_load(main_path, NULL, &t, &d), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.file, "bad.trace"));
	CU_ASSERT_EQUAL(d.line, 2);
	CU_ASSERT_EQUAL(d.col, 8);

	/* a loop: a -> b -> a, refused where b includes a */
	main_path = tmp_write("a.trace", "ranks 2\ninclude \"b.trace\"\nbarrier\n");
	tmp_write("b.trace", "\n\ninclude \"a.trace\"\n");
	CU_ASSERT_EQUAL(trace_load(main_path, NULL, &t, &d), -1);
	sim_diag_format(&d, buf, sizeof(buf));
	CU_ASSERT_PTR_NOT_NULL(strstr(d.file, "b.trace"));
	CU_ASSERT_EQUAL(d.line, 3);
	CU_ASSERT_EQUAL(d.col, 9);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "include loop"));
	/* a file that includes itself */
	main_path = tmp_write("self.trace", "ranks 2\ninclude self.trace\n");
	CU_ASSERT_EQUAL(trace_load(main_path, NULL, &t, &d), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "include loop"));
	CU_ASSERT_EQUAL(d.line, 2);
	/* the same file twice (not nested) is fine; its ids clash, though */
	tmp_write("one.trace", "compute 0 1ms\n");
	main_path = tmp_write("twice.trace", "ranks 1\ninclude one.trace\ninclude one.trace\n");
	CU_ASSERT_EQUAL(trace_load(main_path, NULL, &t, &d), 0);
	CU_ASSERT_EQUAL(t.nops, 2);
	CU_ASSERT_EQUAL(t.nfiles, 2);
	trace_free(&t);
	/* a missing file */
	main_path = tmp_write("missing.trace", "ranks 1\ninclude nope.trace\n");
	CU_ASSERT_EQUAL(trace_load(main_path, NULL, &t, &d), -1);
	CU_ASSERT_EQUAL(d.line, 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "cannot include"));

	/* format detection and forcing: native by content without .trace */
	main_path = tmp_write("job.txt", "# x\n\nranks 2\nbarrier\n");
	CU_ASSERT_EQUAL(trace_load(main_path, NULL, &t, &d), 0);
	trace_free(&t);
	CU_ASSERT_EQUAL(trace_load(main_path, "ibfab", &t, &d), 0);
	trace_free(&t);
	CU_ASSERT_EQUAL(trace_load(main_path, "pcap", &t, &d), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "unknown trace format 'pcap'"));
	main_path = tmp_write("job.trace", "barrier\n");	/* .trace: native, and wrong */
	CU_ASSERT_EQUAL(trace_load(main_path, NULL, &t, &d), -1);
	CU_ASSERT_EQUAL(d.line, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "expected 'ranks N'"));
	CU_ASSERT_EQUAL(trace_load("/nonexistent/x.trace", NULL, &t, &d), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "cannot open"));
	CU_ASSERT(sniff("  # c\n\n\tranks 4\n"));
	CU_ASSERT(sniff("include \"x\"\n"));
	CU_ASSERT(sniff("repeat 2 {"));
	CU_ASSERT(!sniff("Nodes 16\nConnections 1\n"));
	CU_ASSERT(!sniff("ranksy 4\n"));
	CU_ASSERT(!sniff("# only a comment\n"));
	CU_ASSERT(!sniff(""));
	rm_tmpdir();
}

/* ---- malformed traces ------------------------------------------------------- */

static void test_malformed(void)
{
	static const struct {
		const char *text;
		int line, col;
		const char *what;
	} bad[] = {
		{ "ranks 2\nalreduce 1MiB\n", 2, 1, "unknown op 'alreduce'" },
		{ "ranks 2\nar allreduce 1MiB\n", 2, 1, "written with a colon" },
		{ "ranks 4\nsend 0 9 1MiB\n", 2, 8, "rank 9 is out of range (the trace has 4 ranks, 0..3)" },
		{ "ranks 4\ncompute 4 1ms\n", 2, 9, "rank 4 is out of range" },
		{ "ranks 2\nallreduce\n", 2, 10, "expected a size after 'allreduce'" },
		{ "ranks 2\nallreduce algo=ring\n", 2, 11, "expected a size after 'allreduce'" },
		{ "ranks 2\nsend 0 1\n", 2, 9, "expected the size" },
		{ "ranks 2\nsend 0 1 4Kb\n", 2, 10, "4Kb" },
		{ "ranks 2\ncompute 0 10\n", 2, 11, "unit" },
		{ "ranks 2\nsend 0 0 1KiB\n", 2, 8, "cannot send to itself" },
		{ "ranks 2\nrecv 1 0 1MiB\n", 2, 0, "has no matching send" },
		{ "ranks 2\nsend 0 1 1MiB\nrecv 1 0 2MiB\n", 3, 0, "sizes differ" },
		{ "ranks 2\nsend 0 1 1MiB tag=1\nrecv 1 0 1MiB\n", 3, 0, "has no matching send" },
		{ "ranks 2\na: barrier\na: barrier\n", 3, 1, "duplicate id 'a' (first defined at t.trace:2)" },
		{ "ranks 2\nrepeat 2 {\na: barrier\na: barrier\n}\n", 4, 1, "duplicate id 'a.0' (first defined at t.trace:3)" },
		{ "ranks 2\na.1: barrier\n", 2, 1, "expected an op id before ':'" },
		{ "ranks 2\nbarrier after=nope\n", 2, 15, "unknown id 'nope' in after=" },
		{ "ranks 2\nbarrier after=\n", 2, 15, "expected op ids" },
		{ "ranks 2\nx: barrier\nbarrier after=x,\n", 3, 17, "expected an op id" },
		{ "ranks 2\nx: barrier\nbarrier after=x@1\n", 3, 15, "'@rank' needs the id of a 'compute all' or of a line over a rank list" },
		{ "ranks 2\nx: compute all 1us\nbarrier after=x@2\n", 3, 17, "rank 2 is out of range" },
		{ "ranks 2\nallreduce 1MiB comm=tp\n", 2, 21, "unknown communicator 'tp'" },
		{ "ranks 4\ncomm tp = 0,1\ncomm tp = 2,3\n", 3, 6, "defined twice" },
		{ "ranks 4\ncomm tp = 0,1,1\n", 2, 15, "rank 1 is listed twice" },
		{ "ranks 4\ncomm tp = 0,5\n", 2, 13, "rank 5 is out of range" },
		{ "ranks 4\ncomm tp = 0,1-99999999999999999999999\n", 2, 15, "rank 99999999999999999999999 is out of range" },
		{ "ranks 4\nhost 0 \"a\"b\n", 2, 11, "expected a space after the closing" },
		{ "ranks 4\ncomm tp = 3-1\n", 2, 11, "runs backwards" },
		{ "ranks 4\ncomm world = 0\n", 2, 6, "expected a communicator name" },
		{ "ranks 4\ncomm tp = 0 1\n", 2, 13, "the list without spaces" },
		{ "ranks 4\ncomm tp 0-1\n", 2, 9, "expected 'comm NAME = 0,1,2-7'" },
		{ "ranks 4\ncomm tp = 0,1\nbroadcast 1MiB comm=tp root=3\n", 3, 24, "root 3 is not a member" },
		{ "ranks 4\nallreduce 1MiB root=0\n", 2, 16, "only broadcast and reduce have a root" },
		{ "ranks 4\nallreduce 1MiB comm=world ranks=0,1\n", 2, 27, "either comm= or ranks=" },
		{ "ranks 4\nallreduce 1MiB algo=fast\n", 2, 21, "unknown algorithm 'fast'" },
		{ "ranks 4\nallreduce 1MiB algo=bruck\n", 2, 21, "algorithm 'bruck' does not apply to allreduce (it has: auto, ring" },
		{ "ranks 4\nbarrier algo=ring\n", 2, 14, "does not apply to barrier" },
		{ "ranks 4\nallreduce 1MiB chunks=0\n", 2, 23, "at least 1" },
		{ "ranks 4\nallreduce 1MiB channels=65\n", 2, 25, "at most 64" },
		{ "ranks 4\nallreduce 1MiB tag=3\n", 2, 16, "does not apply" },
		{ "ranks 4\nrecv 1 0 1MiB acked\n", 2, 15, "only a send is acknowledged" },
		{ "ranks 4\nbarrier acked\n", 2, 9, "only a send is acknowledged" },
		{ "ranks 4\nsend 0 1 1MiB acked=1\n", 2, 15, "unexpected 'acked=1'" },
		{ "ranks 4\nallreduce 1MiB algo=ring algo=tree\n", 2, 26, "given twice" },
		{ "ranks 4\nallreduce 0\n", 2, 11, "0 bytes" },
		{ "ranks 4\nbarrier 1MiB\n", 2, 9, "barrier takes no size" },
		{ "ranks 4\nsend 0 1 1KiB 5\n", 2, 15, "unexpected '5'" },
		{ "ranks 4\nsend 0 1 1KiB tag=x\n", 2, 19, "the tag" },
		{ "send 0 1 1KiB\n", 1, 1, "expected 'ranks N' before the first op" },
		{ "ranks 2\nranks 2\n", 2, 1, "'ranks' given twice" },
		{ "ranks 0\n", 1, 7, "at least one rank" },
		{ "ranks 2000000\n", 1, 7, "the number of ranks" },
		{ "ranks -1\n", 1, 7, "negative" },
		{ "ranks 2\nmap linear\nmap gpu\n", 3, 1, "'map' given twice" },
		{ "ranks 2\nmap nearest\n", 2, 5, "unknown mapping 'nearest'" },
		{ "ranks 2\nmap linear seed=3\n", 2, 12, "unexpected 'seed=3'" },
		{ "ranks 2\nmap linear\nhost 0 h0\n", 3, 1, "cannot be combined" },
		{ "ranks 2\nhost 0 h0\nhost 0 h1\n", 3, 6, "already has a host" },
		{ "ranks 2\nhost 0 h0\nbarrier\n", 2, 0, "rank 1 has no 'host' line" },
		{ "ranks 2\nhost 0 \"h0\nbarrier\n", 2, 8, "unterminated quoted string" },
		{ "ranks 2\n", 0, 0, "no operations" },
		{ "# nothing\n", 0, 0, "no 'ranks N' line" },
		{ "ranks 2\nsend 0 1 1KiB\x01\n", 2, 14, "control character 0x01" },
		{ "ranks 2\n1x: barrier\n", 2, 1, "expected an op id before ':'" },
		{ "ranks 2\nall: barrier\n", 2, 1, "expected an op id before ':'" },
		{ "ranks 2\nx:\n", 2, 3, "expected an op after the id 'x:'" },
		{ "ranks 2\nabcdefghijabcdefghijabcdefghij: compute all 1ms\n", 2, 1, "too long" },
		{ "ranks 2\ninclude\n", 2, 8, "expected a file name" },
		/* cycles: through after=, and a deadlock through recv -> send */
		{ "ranks 3\na: compute 0 1ms after=c\nb: compute 1 1ms after=a\nc: compute 2 1ms after=b\n",
		  2, 0, "dependency cycle (each op waits for the next): a -> c -> b -> a" },
		{ "ranks 1\na: compute 0 1ms after=a\n", 2, 0, "dependency cycle (each op waits for the next): a -> a" },
		{ "ranks 2\nr0: recv 0 1 1KiB\ns0: send 0 1 1KiB\nr1: recv 1 0 1KiB\ns1: send 1 0 1KiB\n",
		  2, 0, "dependency cycle (each op waits for the next): r0 -> s1 -> r1 -> s0 -> r0" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		refused_at(bad[i].text, bad[i].line, bad[i].col, bad[i].what);
}

/* trace_validate() on traces an importer might build: the same checks. */
static void test_validate_api(void)
{
	struct trace_op op = { .kind = TRACE_SEND, .rank = 0, .peer = 1, .bytes = 8,
			       .chunks = 1, .channels = 1, .line = 3 };
	struct sim_diag d;
	struct trace t;
	int32_t members[] = { 1, 2 };
	uint32_t dep;

	trace_init(&t);
	op.file = trace_add_file(&t, "imp.cm");
	CU_ASSERT_EQUAL(trace_add_file(&t, "imp.cm"), op.file);	/* kept once */
	CU_ASSERT_EQUAL(trace_set_ranks(&t, 3, &d), 0);
	CU_ASSERT_EQUAL(trace_set_ranks(&t, 3, &d), -1);
	CU_ASSERT_EQUAL(trace_add_comm(&t, members, 2, &d), 1);
	members[1] = 1;
	CU_ASSERT_EQUAL(trace_add_comm(&t, members, 2, &d), -1);
	members[1] = 3;
	CU_ASSERT_EQUAL(trace_add_comm(&t, members, 2, &d), -1);
	CU_ASSERT_EQUAL(trace_add_op(&t, &op, NULL, 0, &d), 0);
	CU_ASSERT_EQUAL(trace_validate(&t, &d), 0);

	/* ids must be unique: both ops have id 0 */
	dep = 0;
	op.line = 4;
	CU_ASSERT_EQUAL(trace_add_op(&t, &op, &dep, 1, &d), 1);
	CU_ASSERT_EQUAL(trace_validate(&t, &d), -1);
	CU_ASSERT_STRING_EQUAL(d.file, "imp.cm");
	CU_ASSERT_EQUAL(d.line, 4);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "duplicate op id 0 (also at imp.cm:3)"));
	t.ops[1].id = 1;
	CU_ASSERT_EQUAL(trace_validate(&t, &d), 0);

	/* a dependency on an op that does not exist */
	t.deps[t.ops[1].dep_off] = 7;
	CU_ASSERT_EQUAL(trace_validate(&t, &d), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "op 7, which does not exist"));
	t.deps[t.ops[1].dep_off] = 0;

	/* a peer out of range */
	t.ops[1].peer = 3;
	CU_ASSERT_EQUAL(trace_validate(&t, &d), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "peer 3 is out of range"));
	t.ops[1].peer = 1;

	/* a collective whose root is not in its communicator */
	op = (struct trace_op){ .id = 2, .kind = TRACE_COLL, .rank = -1, .coll = TRACE_BROADCAST,
				.comm = 1, .root = 0, .bytes = 64, .chunks = 1, .channels = 1,
				.file = op.file, .line = 9 };
	CU_ASSERT_EQUAL(trace_add_op(&t, &op, NULL, 0, &d), 2);
	CU_ASSERT_EQUAL(trace_validate(&t, &d), -1);
	CU_ASSERT_EQUAL(d.line, 9);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "root 0 is not a member"));
	t.ops[2].root = 2;
	CU_ASSERT_EQUAL(trace_validate(&t, &d), 0);
	t.ops[2].comm = 5;
	CU_ASSERT_EQUAL(trace_validate(&t, &d), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "communicator 5 does not exist"));
	t.ops[2].comm = 1;
	/* explicit mapping needs a host per rank */
	t.map = TRACE_MAP_EXPLICIT;
	CU_ASSERT_EQUAL(trace_validate(&t, &d), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "rank 0 has no host"));
	trace_free(&t);
	trace_free(&t);	/* safe twice */
	CU_ASSERT_EQUAL(t.nops, 0);
}

/* ---- rank placement ----------------------------------------------------------- */

static struct trace ranks_trace(int n, const char *map)
{
	char text[256];
	struct trace t;

	snprintf(text, sizeof(text), "ranks %d\n%s\nbarrier\n", n, map);
	load_ok(text, &t);
	return t;
}

static void map_fails(struct trace *t, const struct net *n, const char *what)
{
	struct sim_diag d;

	CU_ASSERT_EQUAL(trace_map_ranks(t, n, &d), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, what));
	if (!strstr(d.msg, what))
		fprintf(stderr, "\nexpected '%s', got '%s'\n", what, d.msg);
	CU_ASSERT_PTR_NULL(t->rank_node);
}

static void test_map_star(void)
{
	struct sim_diag d;
	struct net n;
	struct trace t;
	int hosts[8];

	tf_star(&n, 8, hosts);
	t = ranks_trace(8, "map linear");
	CU_ASSERT_EQUAL_FATAL(trace_map_ranks(&t, &n, &d), 0);
	for (int r = 0; r < 8; r++)
		CU_ASSERT_EQUAL(t.rank_node[r], hosts[r]);
	trace_free(&t);

	t = ranks_trace(3, "host 0 h5\nhost 1 \"#2\"\nhost 2 h0");
	CU_ASSERT_EQUAL_FATAL(trace_map_ranks(&t, &n, &d), 0);
	CU_ASSERT_EQUAL(t.rank_node[0], hosts[5]);
	CU_ASSERT_EQUAL(t.rank_node[1], hosts[2]);
	CU_ASSERT_EQUAL(t.rank_node[2], hosts[0]);
	trace_free(&t);

	t = ranks_trace(2, "host 0 h5\nhost 1 h5");
	map_fails(&t, &n, "ranks 0 and 1 are both placed on host 'h5'");
	trace_free(&t);
	t = ranks_trace(2, "host 0 h5\nhost 1 h99");
	map_fails(&t, &n, "rank 1 is placed on 'h99', which is not a connected host");
	trace_free(&t);
	t = ranks_trace(2, "host 0 h5\nhost 1 sw0");	/* a switch is no host */
	map_fails(&t, &n, "rank 1 is placed on 'sw0'");
	trace_free(&t);
	t = ranks_trace(9, "map linear");
	map_fails(&t, &n, "the trace has 9 ranks but the fabric has 8 hosts");
	trace_free(&t);
	t = ranks_trace(2, "map gpu");
	map_fails(&t, &n, "hosts named n<node>g<gpu>");
	trace_free(&t);

	/* random: a permutation of distinct hosts, the same for the same seed */
	int32_t first[8];
	bool differs = false;

	t = ranks_trace(8, "map random seed=7");
	CU_ASSERT_EQUAL_FATAL(trace_map_ranks(&t, &n, &d), 0);
	memcpy(first, t.rank_node, sizeof(first));
	trace_free(&t);
	t = ranks_trace(8, "map random seed=7");
	CU_ASSERT_EQUAL_FATAL(trace_map_ranks(&t, &n, &d), 0);
	CU_ASSERT_EQUAL(memcmp(first, t.rank_node, sizeof(first)), 0);
	for (int a = 0; a < 8; a++)
		for (int b = a + 1; b < 8; b++)
			CU_ASSERT_NOT_EQUAL(first[a], first[b]);
	trace_free(&t);
	/* a few seeds: at least one gives another order, none the identity always */
	for (int s = 1; s <= 4 && !differs; s++) {
		char m[32];

		snprintf(m, sizeof(m), "map random seed=%d", 100 + s);
		t = ranks_trace(8, m);
		CU_ASSERT_EQUAL_FATAL(trace_map_ranks(&t, &n, &d), 0);
		differs = memcmp(first, t.rank_node, sizeof(first)) != 0;
		trace_free(&t);
	}
	CU_ASSERT(differs);
	net_free(&n);
}

static void load_topo(const char *rel, struct net *n)
{
	struct sim_diag d;
	char path[512];

	CU_ASSERT_FATAL(topo_load(test_src_path(rel, path, sizeof(path)), n, &d) == 0);
}

static int leaf_of(const struct net *n, int node)
{
	return n->nodes[node].ports[net_first_port(n, node)].remote_node;
}

static void test_map_fattree(void)
{
	struct sim_diag d;
	struct net n;
	struct trace t;

	load_topo("topologies/examples/fattree-16.topo", &n);	/* 4 leaves x 4 hosts */
	t = ranks_trace(16, "map roundrobin");
	CU_ASSERT_EQUAL_FATAL(trace_map_ranks(&t, &n, &d), 0);
	for (int r = 0; r < 16; r++) {
		/* consecutive ranks on different leaves; rank r on leaf r mod 4 */
		CU_ASSERT_NOT_EQUAL(leaf_of(&n, t.rank_node[r]), leaf_of(&n, t.rank_node[(r + 1) % 16]));
		CU_ASSERT_EQUAL(leaf_of(&n, t.rank_node[r]), leaf_of(&n, t.rank_node[r % 4]));
		for (int q = 0; q < r; q++)
			CU_ASSERT_NOT_EQUAL(t.rank_node[q], t.rank_node[r]);
	}
	CU_ASSERT_STRING_EQUAL(n.nodes[t.rank_node[0]].desc, "h0");
	CU_ASSERT_STRING_EQUAL(n.nodes[t.rank_node[1]].desc, "h4");
	CU_ASSERT_STRING_EQUAL(n.nodes[t.rank_node[4]].desc, "h1");
	trace_free(&t);
	/* fewer ranks than hosts: still spread over the leaves */
	t = ranks_trace(6, "map roundrobin");
	CU_ASSERT_EQUAL_FATAL(trace_map_ranks(&t, &n, &d), 0);
	CU_ASSERT_STRING_EQUAL(n.nodes[t.rank_node[3]].desc, "h12");
	CU_ASSERT_STRING_EQUAL(n.nodes[t.rank_node[5]].desc, "h5");
	trace_free(&t);
	/* linear keeps rings inside leaves */
	t = ranks_trace(16, "map linear");
	CU_ASSERT_EQUAL_FATAL(trace_map_ranks(&t, &n, &d), 0);
	CU_ASSERT_EQUAL(leaf_of(&n, t.rank_node[0]), leaf_of(&n, t.rank_node[3]));
	trace_free(&t);
	/* a launcher's ranks a node where no host is a server's GPU: one a host */
	t = ranks_trace(16, "map linear");
	t.ranks_per_node = 4;
	CU_ASSERT_EQUAL_FATAL(trace_map_ranks(&t, &n, &d), 0);
	for (int r = 0; r < 16; r++)
		CU_ASSERT_EQUAL(t.rank_node[r], net_host(&n, r));
	trace_free(&t);
	net_free(&n);

	load_topo("topologies/examples/rail-8x8.topo", &n);	/* n<i>g<j> */
	t = ranks_trace(64, "map gpu");
	CU_ASSERT_EQUAL_FATAL(trace_map_ranks(&t, &n, &d), 0);
	for (int r = 0; r < 64; r++) {
		char want[16];

		snprintf(want, sizeof(want), "n%dg%d", r / 8, r % 8);
		CU_ASSERT_STRING_EQUAL(n.nodes[t.rank_node[r]].desc, want);
	}
	trace_free(&t);
	t = ranks_trace(65, "map gpu");
	map_fails(&t, &n, "the trace has 65 ranks but the fabric has 64 hosts");
	trace_free(&t);
	/* linear with a launcher's ranks a server: each server's first K GPUs */
	for (int32_t K = 1; K <= 8; K++) {
		t = ranks_trace(8, "map linear");
		t.ranks_per_node = K;
		CU_ASSERT_EQUAL_FATAL(trace_map_ranks(&t, &n, &d), 0);
		for (int r = 0; r < 8; r++) {
			char want[16];

			snprintf(want, sizeof(want), "n%dg%d", r / K, r % K);
			CU_ASSERT_STRING_EQUAL(n.nodes[t.rank_node[r]].desc, want);
		}
		trace_free(&t);
	}
	t = ranks_trace(16, "map linear");
	t.ranks_per_node = 9;
	map_fails(&t, &n, "9 ranks a server (the launcher's processes a node x -t x -g), but server n0 has 8 GPUs");
	trace_free(&t);
	t = ranks_trace(9, "map linear");
	t.ranks_per_node = 1;
	map_fails(&t, &n, "the trace has 9 ranks, 1 a server, but the fabric's 8 servers (hosts n<node>g<gpu>) take 8 of them");
	trace_free(&t);
	net_free(&n);
}

/* ---- the examples ------------------------------------------------------------- */

static void load_example(const char *name, struct trace *t)
{
	struct sim_diag d;
	char path[512], rel[128], buf[1024];
	int rc;

	snprintf(rel, sizeof(rel), "traces/examples/%s", name);
	rc = trace_load(test_src_path(rel, path, sizeof(path)), NULL, t, &d);
	if (rc) {
		sim_diag_format(&d, buf, sizeof(buf));
		fprintf(stderr, "\n%s\n", buf);
	}
	CU_ASSERT_FATAL(rc == 0);
	CU_ASSERT_EQUAL(trace_validate(t, &d), 0);
}

static size_t count_kind(const struct trace *t, enum trace_kind k)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nops; i++)
		n += t->ops[i].kind == k;
	return n;
}

static size_t count_coll(const struct trace *t, enum trace_coll c)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nops; i++)
		n += t->ops[i].kind == TRACE_COLL && t->ops[i].coll == c;
	return n;
}

static void test_examples(void)
{
	struct trace t;

	load_example("dp-train.trace", &t);
	CU_ASSERT_EQUAL(t.nranks, 8);
	CU_ASSERT_EQUAL(count_coll(&t, TRACE_ALLREDUCE), 6);
	/* the layer-3 allreduce overlaps bwd2: bwd2 does not wait for it */
	DEPS_ARE(&t, "bwd2.0@5", "bwd3.0@5");
	DEPS_ARE(&t, "opt.1@0", "ar3.1,ar2.1,bwd1.1@0,ar1.1");
	DEPS_ARE(&t, "fwd.1@3", "opt.0@3");
	trace_free(&t);

	load_example("moe.trace", &t);
	CU_ASSERT_EQUAL(t.nranks, 16);
	CU_ASSERT_EQUAL(count_coll(&t, TRACE_ALLTOALL), 8);
	CU_ASSERT_EQUAL(t.ncomms, 3);
	/* the two groups' all-to-alls do not wait for each other */
	DEPS_ARE(&t, "dispatch1.0", "attn.0@8,attn.0@9,attn.0@10,attn.0@11,attn.0@12,attn.0@13,attn.0@14,attn.0@15");
	trace_free(&t);

	load_example("pipeline.trace", &t);
	CU_ASSERT_EQUAL(t.nranks, 4);
	{
		size_t sends = 0, recvs = 0;

		for (size_t i = 0; i < t.nops; i++) {
			sends += t.ops[i].kind == TRACE_SEND;
			recvs += t.ops[i].kind == TRACE_RECV;
		}
		CU_ASSERT_EQUAL(sends, 24);	/* 3 hops x 4 micro-batches x 2 directions */
		CU_ASSERT_EQUAL(recvs, 24);
	}
	trace_free(&t);

	load_example("nccl-sweep.trace", &t);
	CU_ASSERT_EQUAL_FATAL(t.nops, 25);
	for (size_t i = 0; i < t.nops; i++) {
		CU_ASSERT_EQUAL(t.ops[i].coll, TRACE_ALLREDUCE);
		CU_ASSERT_EQUAL(t.ops[i].bytes, 8ull << i);
		CU_ASSERT_EQUAL(t.ops[i].ndeps, i ? 1 : 0);
	}
	CU_ASSERT_EQUAL(t.ops[24].bytes, 128ull << 20);
	trace_free(&t);

	/* a few hundred GPUs: eight expert groups of 32, side by side */
	load_example("moe-256.trace", &t);
	CU_ASSERT_EQUAL(t.nranks, 256);
	CU_ASSERT_EQUAL(t.ncomms, 9);
	CU_ASSERT_EQUAL(count_coll(&t, TRACE_ALLTOALL), 32);
	CU_ASSERT_EQUAL(count_coll(&t, TRACE_ALLREDUCE), 1);
	DEPS_ARE(&t, "dispatch7.1",
		 "attn.1@224,attn.1@225,attn.1@226,attn.1@227,attn.1@228,attn.1@229,attn.1@230,attn.1@231,"
		 "attn.1@232,attn.1@233,attn.1@234,attn.1@235,attn.1@236,attn.1@237,attn.1@238,attn.1@239,"
		 "attn.1@240,attn.1@241,attn.1@242,attn.1@243,attn.1@244,attn.1@245,attn.1@246,attn.1@247,"
		 "attn.1@248,attn.1@249,attn.1@250,attn.1@251,attn.1@252,attn.1@253,attn.1@254,attn.1@255");
	trace_free(&t);

	/* TP inside servers, DP across them: 32 + 8 communicators; a layer's
	 * DP allreduce does not hold the next backward up, the optimizer
	 * waits for all 32 of a rank's */
	load_example("dp-tp-256.trace", &t);
	CU_ASSERT_EQUAL(t.nranks, 256);
	CU_ASSERT_EQUAL(t.ncomms, 41);
	CU_ASSERT_EQUAL(count_coll(&t, TRACE_ALLREDUCE), 8 * 32 + 4 * 8);
	CU_ASSERT_EQUAL(t.comms[33].n, 32);	/* dp0: ranks 0, 8, ..., 248 */
	CU_ASSERT_EQUAL(t.comms[33].ranks[31], 248);
	DEPS_ARE(&t, "bwd2@9", "ba3_1");
	trace_free(&t);

	/* TP x PP x DP: 64 sends a stage boundary a micro-batch each way, a
	 * stage's ranks receiving from the stage before (after), the 32
	 * data-parallel groups, the optimizer after all of them */
	load_example("3d-256.trace", &t);
	CU_ASSERT_EQUAL(t.nranks, 256);
	CU_ASSERT_EQUAL(count_coll(&t, TRACE_ALLREDUCE), 4 * 4 * 8 * 2 + 32);
	CU_ASSERT_EQUAL(count_kind(&t, TRACE_SEND), 4 * 3 * 64 * 2);
	CU_ASSERT_EQUAL(count_kind(&t, TRACE_RECV), 4 * 3 * 64 * 2);
	CU_ASSERT_EQUAL(count_kind(&t, TRACE_COMPUTE), 4 * 4 * 64 * 2 + 256);
	for (size_t i = 0; i < t.nops; i++)
		if (t.ops[i].kind == TRACE_SEND)
			CU_ASSERT_EQUAL(abs(t.ops[i].peer - t.ops[i].rank), 64);
	{
		const struct trace_op *f = &t.ops[find(&t, "fwd1.0@70")];
		const struct trace_op *r = &t.ops[t.deps[f->dep_off]];

		CU_ASSERT_EQUAL(f->ndeps, 1);	/* its recv of micro-batch 0 */
		CU_ASSERT(r->kind == TRACE_RECV && r->rank == 70 && r->peer == 6);
	}
	trace_free(&t);
}

/* ---- fuzz ------------------------------------------------------------------------ */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state % n);
}

static const char *const dict[] = {
	"\n", " ", "\t", "#", "\"", ":", "=", ",", "-", "@", ".", "{", "}", "\n}\n",
	"repeat 3 {\n", "repeat 2 {\n", "ranks 4\n", "ranks 0\n", "map gpu\n", "map random seed=",
	"host 1 h1\n", "comm c = 0-2\n", "comm=c ", "ranks=0,1 ", "after=", "after=a ", "a:",
	"b: ", "c", "send 0 1 1KiB", "recv 1 0 1KiB", "compute all 1us", "compute 3 2ms",
	"allreduce 1MiB ", "barrier ", "broadcast 4 root=2", "async", "acked", "tag=9", "algo=tree",
	"chunks=4096", "channels=", "99999999999999999999", "-1", "0x", "1.5KiB", "4Kb",
	"include x.trace\n", "\0", "\xff", "\r\n", "@9", "a.0", "a@1",
};

static void fuzz_one(const char *buf, size_t len, unsigned *ok, unsigned *refused)
{
	struct sim_diag d;
	struct trace t;
	int rc;

	trace_init(&t);
	rc = trace_fmt_parse(buf, len, "fuzz.trace", NULL, &t, &d);
	if (!rc)
		rc = trace_validate(&t, &d);
	if (rc) {
		/* every refusal says where (a file) and why */
		CU_ASSERT(d.file[0] != 0);
		CU_ASSERT(d.msg[0] != 0);
		(*refused)++;
	} else {
		/* whatever loads is consistent */
		CU_ASSERT(t.nops > 0);
		for (size_t i = 0; i < t.nops; i++)
			for (uint32_t k = 0; k < t.ops[i].ndeps; k++)
				CU_ASSERT(t.deps[t.ops[i].dep_off + k] < t.nops);
		(*ok)++;
	}
	trace_free(&t);
}

static void test_fuzz(void)
{
	static const char *const seeds[] = {
		"ranks 4\ncomm c = 0-2\na: compute all 1ms\nrepeat 2 {\n  b: allreduce 1MiB comm=c async after=a\n"
		"  send 0 1 1KiB tag=2\n  recv 1 0 1KiB tag=2\n}\nc: barrier after=b.1,a@3\n",
		"ranks 3\nhost 0 h0\nhost 1 \"h 1\"\nhost 2 \"#2\"\nx: broadcast 64KiB root=2 chunks=2\n"
		"y: compute 1 1us after=x\n",
	};
	unsigned ok = 0, refused = 0;
	char *buf = malloc(8192);

	CU_ASSERT_FATAL(buf != NULL);
	for (size_t s = 0; s < sizeof(seeds) / sizeof(seeds[0]); s++) {
		size_t slen = strlen(seeds[s]);

		for (size_t cut = 0; cut <= slen; cut++)	/* every prefix */
			fuzz_one(seeds[s], cut, &ok, &refused);
		for (unsigned r = 0; r < 3000; r++) {
			size_t len = slen;

			memcpy(buf, seeds[s], slen);
			for (unsigned e = 1 + rnd(2); e; e--) {
				size_t at = rnd((uint32_t)len + 1);

				switch (rnd(3)) {
				case 0:	/* delete a run */
					if (len) {
						size_t n = 1 + rnd(8);

						if (at + n > len)
							n = len - at;
						memmove(buf + at, buf + at + n, len - at - n);
						len -= n;
					}
					break;
				case 1:	/* flip a byte */
					if (at < len)
						buf[at] = (char)rnd(256);
					break;
				default: {	/* insert a word of the language */
					const char *w = dict[rnd(sizeof(dict) / sizeof(dict[0]))];
					size_t n = w[0] ? strlen(w) : 1;

					if (len + n < 8000) {
						memmove(buf + at + n, buf + at, len - at);
						memcpy(buf + at, w, n);
						len += n;
					}
				}
				}
			}
			fuzz_one(buf, len, &ok, &refused);
		}
	}
	free(buf);
	/* the mutations exercise both outcomes */
	CU_ASSERT(ok > 50);
	CU_ASSERT(refused > 1000);
}

/*
 * Random traces from the grammar: mostly well-formed, with ids referenced
 * forwards and backwards, repeats, groups and communicators, so the
 * resolver, the matcher and the cycle search see shapes nobody wrote by
 * hand. Whatever loads must hold no dependency cycle (checked here
 * independently with Kahn's algorithm over deps and recv->send matches).
 */
static bool acyclic(const struct trace *t)
{
	uint32_t *indeg = calloc(t->nops, sizeof(uint32_t)), *send_of = malloc(t->nops * 4);
	uint32_t *queue = malloc(t->nops * 4), head = 0, tail = 0, seen = 0;
	struct sim_diag d;

	CU_ASSERT_FATAL(indeg && send_of && queue);
	CU_ASSERT_FATAL(trace_match_recvs(t, send_of, &d) == 0);
	/* edge u -> v: u waits for v; count what each op waits for */
	for (size_t u = 0; u < t->nops; u++)
		indeg[u] = t->ops[u].ndeps + (send_of[u] != NONE);
	for (size_t u = 0; u < t->nops; u++)
		if (!indeg[u])
			queue[tail++] = (uint32_t)u;
	while (head < tail) {
		uint32_t v = queue[head++];

		seen++;
		for (size_t u = 0; u < t->nops; u++) {
			uint32_t k, hits = send_of[u] == v;

			for (k = 0; k < t->ops[u].ndeps; k++)
				hits += t->deps[t->ops[u].dep_off + k] == v;
			if (hits && !(indeg[u] -= hits))
				queue[tail++] = (uint32_t)u;
		}
	}
	free(indeg);
	free(send_of);
	free(queue);
	return seen == t->nops;
}

static void test_fuzz_grammar(void)
{
	static const char *const ops[] = {
		"send %d %d 1KiB", "recv %d %d 1KiB", "compute %d 1us", "compute all 2us",
		"allreduce 1MiB", "alltoall 64KiB ranks=0-2", "barrier comm=c", "broadcast 8 root=%d",
		"compute %d,%d 3us", "send %d,%d 3,2 1KiB",
	};
	unsigned ok = 0, refused = 0, cyc = 0;
	char *text = malloc(16384);

	CU_ASSERT_FATAL(text != NULL);
	for (unsigned round = 0; round < 400; round++) {
		size_t off = 0;
		int nid = 0, depth = 0;

		sim_append(text, 16384, &off, "ranks 4\ncomm c = 3,1\n");
		for (unsigned k = 0, n = 2 + rnd(14); k < n; k++) {
			int a = (int)rnd(4), b = (int)((a + 1 + rnd(3)) % 4);

			if (rnd(8) == 0 && depth < 2) {
				sim_append(text, 16384, &off, "repeat %u {\n", 1 + rnd(3));
				depth++;
				continue;
			}
			if (depth && rnd(6) == 0) {
				sim_append(text, 16384, &off, "}\n");
				depth--;
				continue;
			}
			if (rnd(2))
				sim_append(text, 16384, &off, "i%d: ", nid++);
			sim_append(text, 16384, &off, ops[rnd(SIM_ARRAY_SIZE(ops))], a, b);
			if (rnd(3) == 0)
				sim_append(text, 16384, &off, " async");
			if (rnd(3) == 0)
				sim_append(text, 16384, &off, " after=i%u", rnd((uint32_t)nid + 2));
			sim_append(text, 16384, &off, "\n");
		}
		while (depth--)
			sim_append(text, 16384, &off, "}\n");

		struct sim_diag d;
		struct trace t;

		if (trace_load_string(text, "g.trace", &t, &d)) {
			refused++;
			cyc += strstr(d.msg, "dependency cycle") != NULL;
			CU_ASSERT_STRING_EQUAL(d.file, "g.trace");
			CU_ASSERT(d.msg[0] != 0);
			continue;
		}
		ok++;
		CU_ASSERT(acyclic(&t));
		trace_free(&t);
	}
	free(text);
	/* both outcomes, and the cycle search, are exercised */
	CU_ASSERT(ok > 40);
	CU_ASSERT(refused > 40);
	CU_ASSERT(cyc > 5);
}

static const struct test_case tests[] = {
	{ "header", test_header },
	{ "p2p", test_p2p },
	{ "compute", test_compute },
	{ "collectives", test_collectives },
	{ "order", test_order },
	{ "group_refs", test_group_refs },
	{ "rank_lists", test_rank_lists },
	{ "repeat", test_repeat },
	{ "include", test_include },
	{ "malformed", test_malformed },
	{ "validate_api", test_validate_api },
	{ "map_star", test_map_star },
	{ "map_fattree", test_map_fattree },
	{ "examples", test_examples },
	{ "fuzz", test_fuzz },
	{ "fuzz_grammar", test_fuzz_grammar },
	{ NULL, NULL },
};

TEST_MAIN("trace_fmt", tests)
