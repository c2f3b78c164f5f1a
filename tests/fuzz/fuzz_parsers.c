/* SPDX-License-Identifier: MIT */
/*
 * fuzz_parsers.c - every file format ibfab reads, from untrusted bytes:
 * the first byte picks the parser, the rest is the file. Topologies
 * (ibnetdiscover, ibsim net), validation and the GPU servers a topology's
 * "# ibfab: server=NAME" line makes of its hosts; an LFT dump onto the small
 * fabric of fuzz.h; the native trace format and its validation; the htsim,
 * HPCC, NCCL-log and nccl-tests importers; and Chakra execution traces,
 * whose input is up to four ranks' files joined by CHAKRA_SEP (rank 0's is
 * read from memory, the others from a directory of this process's own).
 * Each must accept or refuse (with a message), never crash, leak or hang
 * (tests/fuzz/README.md).
 */
#include "tests/fuzz/fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/net/net.h"
#include "models/server/server.h"
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
		const struct srv_preset *sp = srv_preset_find(n.server);
		struct srv_params sv;
		struct srv_map m;

		/* "# ibfab: server=NAME": the hosts' servers, as `ibfab run` maps them */
		if (!net_validate(&n, &d) && sp) {
			srv_params_default(&sv);
			if (!srv_params_preset(&sv, sp->name, &d) && !srv_map_build(&m, &n, &sv, &d))
				srv_map_free(&m);
		}
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

/* Chakra: NAME.0.et from memory, NAME.1.et ... from files beside it, each
 * written for this input and removed after it. */
#define CHAKRA_SEP "@rank@"
#define CHAKRA_RANKS 4

static const char *sep_find(const char *p, const char *end)
{
	const size_t sl = sizeof(CHAKRA_SEP) - 1;

	for (; (size_t)(end - p) >= sl; p++)
		if (!memcmp(p, CHAKRA_SEP, sl))
			return p;
	return NULL;
}

static char dir[] = "/tmp/ibfab-fuzz-XXXXXX";

static void dir_remove(void)
{
	rmdir(dir);
}

static void chakra(const char *buf, size_t len)
{
	static int have_dir;
	char path[CHAKRA_RANKS][sizeof(dir) + 16];
	const size_t sl = sizeof(CHAKRA_SEP) - 1;
	struct sim_diag d;
	struct trace t;
	size_t len0 = len;
	int n = 1;

	if (!have_dir) {
		if (!mkdtemp(dir))
			abort();
		atexit(dir_remove);
		have_dir = 1;
	}
	for (int r = 0; r < CHAKRA_RANKS; r++)
		snprintf(path[r], sizeof(path[r]), "%s/fz.%d.et", dir, r);
	/* rank 0's bytes end at the first separator, rank k's at the next */
	for (const char *p = buf, *end = buf + len; n < CHAKRA_RANKS;) {
		const char *q = sep_find(p, end);
		const char *next = q ? q + sl : NULL;
		const char *stop;
		FILE *f;

		if (!q)
			break;
		if (n == 1)
			len0 = (size_t)(q - buf);
		stop = sep_find(next, end);
		if (!stop)
			stop = end;
		f = fopen(path[n], "wb");
		if (!f)
			abort();
		if (stop > next && fwrite(next, (size_t)(stop - next), 1, f) != 1)
			abort();
		fclose(f);
		n++;
		p = stop;
	}
	trace_init(&t);
	if (!import_chakra(path[0], buf, len0, &t, &d))
		trace_validate(&t, &d);
	trace_free(&t);
	for (int r = 1; r < n; r++)
		unlink(path[r]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data + 1;
	size_t len = size - 1;

	if (!size)
		return 0;
	switch (data[0] % 8) {
	case 0:
		topology(buf, len);
		break;
	case 1:
		lft(buf, len);
		break;
	case 2:
		trace_native(buf, len);
		break;
	case 7:
		chakra(buf, len);
		break;
	default:
		trace_import(data[0] % 8 - 3u, buf, len);
		break;
	}
	return 0;
}
