/* SPDX-License-Identifier: MIT */
/*
 * fuzz_lower.c - native traces past the parser: validation, ranks mapped
 * onto the small fabric of fuzz.h, and the lowering of every op into a
 * program of steps (collective algorithms, channels and chunks, the
 * dependencies between ops). Traces of more than 64 ranks or 256 ops are
 * skipped: their cost is the trace's size, which the format bounds
 * (COLL_MAX_STEPS), not a bug. It found the entries x flows dependencies
 * that join steps now bound (traces/coll.c).
 */
#include "tests/fuzz/fuzz.h"

#include <stdlib.h>

#include "models/net/net.h"
#include "sim/sim_diag.h"
#include "topologies/topo.h"
#include "traces/trace.h"
#include "traces/trace_fmt.h"

static struct net base;
static int have_base;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sim_diag d;
	struct trace t;

	if (!have_base) {
		if (topo_load_string(FUZZ_BASE_TOPO, "base.topo", &base, &d))
			abort();
		have_base = 1;
	}
	trace_init(&t);
	if (!trace_fmt_parse((const char *)data, size, "fuzz.trace", NULL, &t, &d) &&
	    t.nranks <= 64 && t.nops <= 256 && !trace_validate(&t, &d) &&
	    !trace_map_ranks(&t, &base, &d)) {
		struct trace_program p;

		trace_program_init(&p, &t);
		trace_lower(&t, &p, &d);
		trace_program_free(&p);
	}
	trace_free(&t);
	return 0;
}
