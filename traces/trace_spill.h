/* SPDX-License-Identifier: MIT */
/*
 * trace_spill.h - the steps' times of a lazy replay on disk
 * (trace_spill.c), for traces/trace_replay.c; the outputs read them with
 * trace_results_time() (trace_replay.h).
 */
#ifndef IBFAB_TRACE_SPILL_H
#define IBFAB_TRACE_SPILL_H

#include <stdint.h>

#include "traces/trace_replay.h"

/* Give r a file for nsteps steps' times: 0, or -1 (errno says why). */
int trace_spill_open(struct trace_results *r, uint64_t nsteps);
/* Step s ran from start to end: 0, or -1 (out of memory, a write error). */
int trace_spill_put(struct trace_spill *sp, uint64_t s, sim_time_t start, sim_time_t end);
void trace_spill_close(struct trace_spill *sp);

#endif
