/* SPDX-License-Identifier: MIT */
/*
 * trace_fmt.h - the native trace format (docs/trace-format.md), and the
 * trace helpers that parsers, importers and lowering share beyond
 * traces/trace.h.
 *
 * trace_load() and trace_load_string() (trace.h) are the entry points most
 * callers want; they parse, then trace_validate(). The functions here are
 * the pieces, for the importers and for tests.
 */
#ifndef IBFAB_TRACE_FMT_H
#define IBFAB_TRACE_FMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/sim_diag.h"
#include "traces/trace.h"

/* Limits of the native format, and of any trace (documented in
 * docs/trace-format.md; the reasons are next to their use). */
#define TRACE_MAX_RANKS (1 << 20)
#define TRACE_MAX_OPS (1u << 22)
#define TRACE_MAX_CHUNKS 4096
#define TRACE_MAX_CHANNELS 64
#define TRACE_MAX_INCLUDE_DEPTH 16
#define TRACE_MAX_FILE (256u << 20)

/*
 * Parse the native format from buf[0..len) (any bytes) into t, which the
 * caller has trace_init()ed and not filled. `name` is the file name used in
 * messages and as the base of relative includes; `canon` its realpath (NULL
 * when it is not a file: includes of itself are then not recognised as a
 * loop until the second level). Does not validate: trace_load() does.
 * 0, or -1 with d filled ("file:line:col: ..."); t may hold part of the
 * input then (trace_free() it).
 */
int trace_fmt_parse(const char *buf, size_t len, const char *name, const char *canon,
		    struct trace *t, struct sim_diag *d);

/* Does this text look like the native format? True when its first word
 * that is not a comment is a header keyword (ranks, map, host, comm,
 * include, repeat). Used by trace_load() to recognise a file. */
bool trace_fmt_sniff(const char *text, size_t len);

/* The native format's row of import_formats[] (traces/import.c): read a
 * file's text (trace_fmt_parse with its canonical path), and recognise
 * one (a name ending in ".trace", or trace_fmt_sniff). */
int trace_fmt_load(const char *path, const char *text, size_t len, struct trace *t,
		   struct sim_diag *d);
bool trace_fmt_detect(const char *path, const char *text, size_t len);

/*
 * Match every recv with its send: the k-th recv on rank r from rank p with
 * tag t matches the k-th send from p to r with tag t, in op order.
 * send_of[i] (t->nops entries) gets the send's op index for a recv, and
 * UINT32_MAX for every other op. 0, or -1 with d filled (a recv without a
 * send, or with another size), at the recv's file:line.
 */
int trace_match_recvs(const struct trace *t, uint32_t *send_of, struct sim_diag *d);
/*
 * The k-th op that op u waits for (k = 0, 1, ...): its deps, then, for a
 * recv, its matched send (send_of[u], UINT32_MAX for none). 1 with *v, or
 * 0 when u waits for no more: sim_dfs's successors, for the cycle check
 * and the lowering's walk.
 */
static inline int trace_op_next(const struct trace *t, const uint32_t *send_of, uint32_t u,
				uint32_t k, uint32_t *v)
{
	const struct trace_op *o = &t->ops[u];

	if (k < o->ndeps)
		*v = t->deps[o->dep_off + k];
	else if (k == o->ndeps && send_of[u] != UINT32_MAX)
		*v = send_of[u];
	else
		return 0;
	return 1;
}

/* A short name for op i in messages: its name, or "send 0->1 (line 12)". */
const char *trace_op_label(const struct trace *t, uint32_t i, char *buf, size_t len);

/* Read a whole file (at most TRACE_MAX_FILE bytes) into a malloc'd buffer,
 * NUL-terminated (the NUL is not counted in *len). 0, or -1 with d filled. */
int trace_read_file(const char *path, char **buf, size_t *len, struct sim_diag *d);

#endif
