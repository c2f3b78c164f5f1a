/* SPDX-License-Identifier: MIT */
/*
 * fuzz_servers.c - traces on GPU servers, past the parser: the ranks mapped
 * onto a small rail cluster of GPU servers, each rank's NVLink domain and
 * NCCL's tuning inputs (cli_server_groups, as `ibfab run` sets them up),
 * algo=auto's choice (trace_tune_ops) and the lowering of every op into
 * steps: NCCL's ring and tree over NVLink and the rails, NVLS and NVLSTree,
 * PXN, the all-to-all. Byte 0 picks the server (bits 0-1: dgx-h100,
 * dgx-a100, gb200-nvl72), how many (bit 2: 2 or 3 servers) and the input's
 * format (bit 3: the native trace format or nccl-tests command lines);
 * bit 4 replays the program on the fabric (minhop routes), the steps made
 * as the replay reaches them (bit 5, as `ibfab run` does: and then the
 * stored program too, which must give the same run) or all before it,
 * for up to 200 us of simulated time, where no op moves more than 4 MiB. The rest is the file. As fuzz_lower, traces of more than 64
 * ranks or 256 ops, and here of an op over 1 GiB, are skipped: their cost
 * is their size (a 16 GiB allreduce on 16 GPUs takes 7 s to lower, most
 * of it finding its exits, a pass over its steps), not a bug. The replay
 * must finish, stop at the limit or report a stall, never crash.
 */
#include "tests/fuzz/fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/fabric/fab.h"
#include "models/net/net.h"
#include "models/server/server.h"
#include "models/sm/sm.h"
#include "sim/sim_diag.h"
#include "tools/cli_run.h"
#include "topologies/topo.h"
#include "traces/import.h"
#include "traces/trace.h"
#include "traces/trace_fmt.h"

static const char *const kinds[] = { "dgx-h100", "dgx-a100", "gb200-nvl72", "dgx-h100" };

struct cluster {
	struct net n;
	struct fab_params p;
};

static struct cluster cl[4][2];
static bool have[4][2];

/* `ibfab topo gen rail --servers N --server NAME`, and the parameters
 * `ibfab run` takes from its "# ibfab: server=NAME" line. */
static struct cluster *cluster(unsigned kind, unsigned servers)
{
	struct cluster *c = &cl[kind][servers - 2];
	char nbuf[8];
	char *argv[] = { "rail", "--servers", nbuf, "--server", (char *)kinds[kind] };
	struct topo_gen_params gp;
	const struct srv_preset *sp;
	struct sim_diag d;
	char *text;

	if (have[kind][servers - 2])
		return c;
	snprintf(nbuf, sizeof(nbuf), "%u", servers);
	if (topo_gen_parse(&gp, 5, argv, &d) || !(text = topo_gen_str(&gp, &d)))
		abort();
	if (topo_load_string(text, "rail.topo", &c->n, &d) || sm_route(&c->n, "minhop", NULL, &d))
		abort();
	free(text);
	sp = srv_preset_find(c->n.server);
	fab_params_default(&c->p);
	if (!sp || fab_params_preset(&c->p, sp->fabric, &d) ||
	    srv_params_preset(&c->p.server, sp->name, &d) ||
	    fab_params_set(&c->p, "sim.max_time_ns=200us", &d) || fab_params_check(&c->p, &d))
		abort();
	have[kind][servers - 2] = true;
	return c;
}

/* No op of t moves more than max bytes. */
static bool small(const struct trace *t, uint64_t max)
{
	for (size_t i = 0; i < t->nops; i++)
		if (t->ops[i].bytes > max)
			return false;
	return true;
}

/* What a replay ended with: compared between the lazy and the stored
 * program, which must give the same run to the picosecond. */
struct outcome {
	int rc;
	uint64_t steps, end;
	uint64_t events;
	char msg[sizeof(((struct sim_diag *)0)->msg)];
};

/* The program on the cluster's fabric: ends, stops at the limit or stalls. */
static void replay(const struct trace_program *p, const struct cluster *c, struct outcome *o)
{
	struct fab_msgs none = { 0 };
	struct trace_results r;
	struct sim_diag d;
	struct fab *f;

	memset(o, 0, sizeof(*o));
	f = fab_create(&c->n, &c->p, &none, 1, &d);
	if (!f) {
		o->rc = -2;
		return;
	}
	memset(&r, 0, sizeof(r));
	memset(&d, 0, sizeof(d));
	o->rc = trace_replay(p, f, &r, &d);
	o->steps = r.steps_done;
	o->end = r.end_ps;
	o->events = fab_engine(f)->events;
	snprintf(o->msg, sizeof(o->msg), "%s", o->rc ? d.msg : "");
	trace_results_free(&r);
	fab_destroy(f);
}

/* The lazy program's replay against the stored one's (bit 5): a lazy
 * replay's shortcuts - steps made late, counted joins - may change
 * nothing. A difference aborts, as a crash would. */
static void replay_both(const struct trace *t, const struct trace_program *lz, const struct cluster *c)
{
	struct trace_program st;
	struct outcome a, b;
	struct sim_diag d;

	replay(lz, c, &a);
	trace_program_init(&st, t);
	st.max_bytes = lz->max_bytes;
	if (!trace_lower(t, &st, &d)) {
		replay(&st, c, &b);
		if (a.rc != b.rc || a.steps != b.steps || a.end != b.end || a.events != b.events ||
		    strcmp(a.msg, b.msg)) {
			fprintf(stderr, "lazy and stored replays differ: rc %d/%d, %llu/%llu steps, end %llu/%llu ps, %llu/%llu events\n  %s\n  %s\n",
				a.rc, b.rc, (unsigned long long)a.steps, (unsigned long long)b.steps,
				(unsigned long long)a.end, (unsigned long long)b.end,
				(unsigned long long)a.events, (unsigned long long)b.events, a.msg, b.msg);
			abort();
		}
	}
	trace_program_free(&st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sim_diag d;
	struct trace t;
	struct cluster *c;
	char *z;
	int rc;

	if (!size)
		return 0;
	c = cluster(data[0] & 3, data[0] & 4 ? 3 : 2);
	z = malloc(size);
	if (!z)
		return 0;
	memcpy(z, data + 1, size - 1);
	z[size - 1] = 0;	/* the importers take a whole file, NUL-terminated */
	trace_init(&t);
	rc = data[0] & 8 ? import_nccl_tests("fuzz.out", z, size - 1, &t, &d) :
			   trace_fmt_parse(z, size - 1, "fuzz.trace", NULL, &t, &d);
	if (!rc && t.nranks <= 64 && t.nops <= 256 && small(&t, 1u << 30) && !trace_validate(&t, &d) &&
	    !trace_map_ranks(&t, &c->n, &d) && !cli_server_groups(&t, &c->n, &c->p, &d) &&
	    !trace_set_nvs(&t, &d) && !trace_tune_ops(&t)) {
		struct trace_program p;

		trace_program_init(&p, &t);
		p.max_bytes = 256u << 20;	/* a program of 8 GiB sweeps is only big */
		p.lazy = data[0] & 32;
		if (!trace_lower(&t, &p, &d) && data[0] & 16 && small(&t, 4u << 20)) {
			struct outcome o;

			if (p.lazy)
				replay_both(&t, &p, c);
			else
				replay(&p, c, &o);
		}
		trace_program_free(&p);
	}
	trace_free(&t);
	free(z);
	return 0;
}
