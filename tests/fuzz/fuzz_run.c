/* SPDX-License-Identifier: MIT */
/*
 * fuzz_run.c - a whole short run from untrusted input. Byte 0 picks the
 * routing engine (minhop, updn, ftree, dor), byte 1 the fabric (ib, roce,
 * roce-lossy, tcp) and, in its bit 2, the host model; then one line of
 * `--traffic` spec and a topology of at most 48 nodes. What loads, routes
 * and passes the checks is simulated for up to 100 us of simulated time:
 * the model must finish, stop at the limit or report a stall, never crash.
 * Lists of more than 400 messages or messages over 1 MiB are skipped, to
 * keep each input short.
 */
#include "tests/fuzz/fuzz.h"

#include <string.h>

#include "models/fabric/fab.h"
#include "models/net/net.h"
#include "models/sm/sm.h"
#include "sim/sim_diag.h"
#include "topologies/topo.h"
#include "traces/trace_spec.h"

static const char *const engines[] = { "minhop", "updn", "ftree", "dor" };
static const char *const fabrics[] = { "fabric=ib", "fabric=roce", "fabric=roce-lossy",
				       "fabric=tcp" };

static void run(const struct net *n, const struct fab_params *p, struct fab_msgs *m)
{
	struct sim_diag d;
	struct fab *f;

	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].bytes > (1u << 20))
			return;
	f = fab_create(n, p, m, 1, &d);
	if (f) {
		fab_run(f, &d);
		fab_destroy(f);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *rest = (const char *)data + 2, *nl;
	struct fab_msgs m = { 0 };
	struct fab_params p;
	struct sim_diag d;
	struct net n;
	char spec[256];
	size_t len;

	if (size < 3)
		return 0;
	len = size - 2;
	nl = memchr(rest, '\n', len);
	if (!nl || nl - rest >= (long)sizeof(spec) || memchr(rest, 0, (size_t)(nl - rest)))
		return 0;
	memcpy(spec, rest, (size_t)(nl - rest));
	spec[nl - rest] = 0;
	if (topo_load_buffer(nl + 1, len - (size_t)(nl - rest) - 1, "fuzz.topo", &n, &d))
		return 0;
	fab_params_default(&p);
	p.host_model = data[1] & 4;
	if (n.nnodes <= 48 && !net_validate(&n, &d) &&
	    !sm_route(&n, engines[data[0] % 4], NULL, &d) &&
	    !fab_params_set(&p, fabrics[data[1] % 4], &d) &&
	    !fab_params_set(&p, "sim.max_time_ns=100us", &d) && !fab_params_check(&p, &d) &&
	    !trace_spec_parse(spec, &n, 1, &m, &d) && m.n <= 400 && !fab_msgs_check(&m, &p, &d))
		run(&n, &p, &m);
	fab_msgs_free(&m);
	net_free(&n);
	return 0;
}
