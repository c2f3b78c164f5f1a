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

#include <stddef.h>

#include "sim/sim_diag.h"
#include "traces/trace.h"

/* The format of a file from its name and first bytes: "htsim", "hpcc", "nccl-log", "nccl-tests", or NULL (not one of these). */
const char *import_detect(const char *path, const char *text, size_t len);
int import_htsim(const char *path, const char *text, size_t len, struct trace *t, struct sim_diag *d);
int import_hpcc(const char *path, const char *text, size_t len, struct trace *t, struct sim_diag *d);
int import_nccl_log(const char *path, const char *text, size_t len, struct trace *t, struct sim_diag *d);
int import_nccl_tests(const char *path, const char *text, size_t len, struct trace *t, struct sim_diag *d);

#endif
