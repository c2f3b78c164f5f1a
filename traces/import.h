/* SPDX-License-Identifier: MIT */
/*
 * import.h - importers: workloads in the formats users already have, turned
 * into a struct trace (traces/trace.h) that ibfab lowers and replays like a
 * native trace.
 *
 *   htsim       csg-htsim connection matrix (.cm): flows, start times,
 *               triggers (import_htsim.c)
 *   hpcc        HPCC / ns-3 RDMA flow file, mix/flow.txt (import_hpcc.c)
 *   nccl-log    NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL logs of every
 *               rank, concatenated (import_nccl.c)
 *   nccl-tests  nccl-tests command lines, "all_reduce_perf -b 8 -e 128M
 *               -f 2 -g 8", one per line (import_nccl.c)
 *   chakra      MLCommons Chakra execution traces, NAME.<rank>.et, one
 *               protobuf file per rank, as ASTRA-sim reads them
 *               (import_chakra.c)
 *
 * docs/importers.md gives each format's grammar, the mapping choices and
 * their reasons, and what is left out.
 *
 * Each importer reads `text` (the whole file, `len` bytes, not necessarily
 * NUL-terminated, any bytes at all) and appends to `t`, which the caller
 * has set up with trace_init() and not filled yet: the importer sets the
 * rank count, the rank mapping (linear) and the ops, and registers `path`
 * with trace_add_file() so every op points back to its line. On error it
 * returns -1 with `d` filled ("file:line:col: what was expected"); `t` may
 * then hold part of the import and the caller frees it with trace_free().
 */
#ifndef IBFAB_IMPORT_H
#define IBFAB_IMPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "sim/sim_diag.h"
#include "traces/trace.h"

/* A trace format: one row of import_formats[] (import.c). */
struct import_format {
	const char *name;	/* --trace-format NAME */
	const char *what;	/* a file of it, for messages: "an HPCC flow file" */
	int (*load)(const char *path, const char *text, size_t len, struct trace *t,
		    struct sim_diag *d);
	/* Is this file one, from its name and first bytes? */
	bool (*detect)(const char *path, const char *text, size_t len);
};

/* Every format, the native one first, in the order detection tries them;
 * a row with a NULL name ends it. */
extern const struct import_format import_formats[];
/* The row named `name`, or NULL. */
const struct import_format *import_format_find(const char *name);
/* The format of a file from its name and first bytes, or NULL (none). */
const char *import_detect(const char *path, const char *text, size_t len);
/* The formats' names ("ibfab, nccl-log, ... or hpcc") and what their files
 * are, for help and messages. */
const char *import_format_names(char *buf, size_t len);
const char *import_format_whats(char *buf, size_t len);

int import_htsim(const char *path, const char *text, size_t len, struct trace *t, struct sim_diag *d);
bool import_htsim_detect(const char *path, const char *text, size_t len);
int import_hpcc(const char *path, const char *text, size_t len, struct trace *t, struct sim_diag *d);
bool import_hpcc_detect(const char *path, const char *text, size_t len);
int import_nccl_log(const char *path, const char *text, size_t len, struct trace *t, struct sim_diag *d);
bool import_nccl_log_detect(const char *path, const char *text, size_t len);
int import_nccl_tests(const char *path, const char *text, size_t len, struct trace *t, struct sim_diag *d);
bool import_nccl_tests_detect(const char *path, const char *text, size_t len);
int import_chakra(const char *path, const char *text, size_t len, struct trace *t, struct sim_diag *d);
bool import_chakra_detect(const char *path, const char *text, size_t len);

/* For the detectors: the first SNIFF_HEAD bytes are all they read (an NCCL
 * log's mark may come later: SNIFF_LOG); the next line that is not blank
 * and not a '#' comment; the next blank-separated word of a line; a run of
 * digits. */
#define IMPORT_SNIFF_HEAD	(64u << 10)
#define IMPORT_SNIFF_LOG	(4u << 20)	/* NCCL logs may open with pages of other output */
struct import_line {
	const char *s, *e;
};
bool import_next_line(const char **p, const char *end, struct import_line *l);
bool import_word(const char **p, const char *e, const char **ws, size_t *wn);
bool import_is_uint(const char *s, size_t n);

#endif
