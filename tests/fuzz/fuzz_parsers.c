/* SPDX-License-Identifier: MIT */
/*
 * fuzz_parsers.c - every file format ibfab reads, from untrusted bytes:
 * the first byte picks the parser, the rest is the file. Topologies
 * (ibnetdiscover, ibsim net) and validation; an LFT dump onto the small
 * fabric of fuzz.h; the native trace format and its validation; the htsim,
 * HPCC, NCCL-log and nccl-tests importers. Each must accept or refuse
 * (with a message), never crash, leak or hang (tests/fuzz/README.md).
 */
#include "tests/fuzz/fuzz.h"

#include <stdlib.h>
#include <string.h>

#include "models/net/net.h"
#include "sim/sim_diag.h"
#include "topologies/lft.h"
#include "topologies/topo.h"
#include "traces/import.h"
#include "traces/trace.h"
#include "traces/trace_fmt.h"

static void topology(const char *buf, size_t len)
{
	struct sim_diag d;
	struct net n;

	if (!topo_load_buffer(buf, len, "fuzz.topo", &n, &d)) {
		net_validate(&n, &d);
		net_free(&n);
	}
}

static void lft(const char *buf, size_t len)
{
	struct sim_diag d;
	struct net n;

	if (topo_load_string(FUZZ_BASE_TOPO, "base.topo", &n, &d))
		abort();
	lft_load_buffer(&n, buf, len, "fuzz.lft", &d);
	net_free(&n);
}

static void trace_native(const char *buf, size_t len)
{
	struct sim_diag d;
	struct trace t;

	trace_init(&t);
	if (!trace_fmt_parse(buf, len, "fuzz.trace", NULL, &t, &d))
		trace_validate(&t, &d);
	trace_free(&t);
}

/* The importers take NUL-terminated text (they are given a whole file). */
static void trace_import(unsigned which, const char *buf, size_t len)
{
	struct sim_diag d;
	struct trace t;
	char *z = malloc(len + 1);
	int rc;

	if (!z)
		return;
	memcpy(z, buf, len);
	z[len] = 0;
	trace_init(&t);
	if (which == 0)
		rc = import_htsim("fuzz.cm", z, len, &t, &d);
	else if (which == 1)
		rc = import_hpcc("fuzz.txt", z, len, &t, &d);
	else if (which == 2)
		rc = import_nccl_log("fuzz.log", z, len, &t, &d);
	else
		rc = import_nccl_tests("fuzz.out", z, len, &t, &d);
	if (!rc)
		trace_validate(&t, &d);
	trace_free(&t);
	free(z);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data + 1;
	size_t len = size - 1;

	if (!size)
		return 0;
	switch (data[0] % 7) {
	case 0:
		topology(buf, len);
		break;
	case 1:
		lft(buf, len);
		break;
	case 2:
		trace_native(buf, len);
		break;
	default:
		trace_import(data[0] % 7 - 3u, buf, len);
		break;
	}
	return 0;
}
