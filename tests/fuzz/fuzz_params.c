/* SPDX-License-Identifier: MIT */
/*
 * fuzz_params.c - what a user types on the command line: `--set KEY=VALUE`
 * lines (first byte odd), one per line, then the cross-field checks; or a
 * `--traffic` spec (first byte even) on the small fabric of fuzz.h, then
 * the checks a message list gets before a run.
 */
#include "tests/fuzz/fuzz.h"

#include <stdlib.h>
#include <string.h>

#include "models/fabric/fab.h"
#include "models/net/net.h"
#include "sim/sim_diag.h"
#include "topologies/topo.h"
#include "traces/trace_spec.h"

static struct net base;
static int have_base;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sim_diag d;
	struct fab_params p;
	char *z;

	if (!size)
		return 0;
	if (!have_base) {
		if (topo_load_string(FUZZ_BASE_TOPO, "base.topo", &base, &d))
			abort();
		have_base = 1;
	}
	z = malloc(size);
	if (!z)
		return 0;
	memcpy(z, data + 1, size - 1);
	z[size - 1] = 0;
	fab_params_default(&p);
	if (data[0] & 1) {
		char *save = NULL;

		for (char *kv = strtok_r(z, "\n", &save); kv; kv = strtok_r(NULL, "\n", &save))
			if (fab_params_set(&p, kv, &d))
				break;
		fab_params_check(&p, &d);
	} else {
		struct fab_msgs m = { 0 };

		if (!trace_spec_parse(z, &base, 1, &m, &d))
			fab_msgs_check(&m, &p, &d);
		fab_msgs_free(&m);
	}
	free(z);
	return 0;
}
