/* SPDX-License-Identifier: MIT */
/*
 * trace_sat.h - SHARP's streaming aggregation as a resource of the switches
 * (trace_sat.c): which collnet allreduces may stream through their trees
 * at once, and which wait for another to end.
 */
#ifndef IBFAB_TRACE_SAT_H
#define IBFAB_TRACE_SAT_H

#include <stdbool.h>
#include <stdint.h>

#include "models/params/fab_params.h"

struct trace_sat;

/* For ops [0, nops) under limit lim (not FAB_SAT_NONE): NULL when out of
 * memory. */
struct trace_sat *sat_new(uint32_t nops, enum fab_sat lim);
void sat_free(struct trace_sat *s);
/* Before the run: op, of communicator comm, streams (a collnet allreduce
 * of more than one chunk) and sends from endpoint child up to the
 * aggregation node an (one of its tree's links). -1 when out of memory. */
int sat_note(struct trace_sat *s, uint32_t op, uint32_t comm, int32_t child, int32_t an);
/* After the last sat_note. */
void sat_seal(struct trace_sat *s);
/* Whether op streams through a tree (it was noted). */
bool sat_streams(const struct trace_sat *s, uint32_t op);
/* op's first step wants its tree: true if op may stream now (nothing
 * active holds what it needs), else it waits, in the order asked. */
bool sat_acquire(struct trace_sat *s, uint32_t op);
/* Whether op waits for its tree. */
bool sat_waiting(const struct trace_sat *s, uint32_t op);
/* op has ended: what it held is free; granted(ctx, g) for each waiting op
 * that may stream now, in the order they asked. */
void sat_release(struct trace_sat *s, uint32_t op, void (*granted)(void *ctx, uint32_t op),
		 void *ctx);
/* Ops waiting now (a stall's report). */
uint32_t sat_nwaiting(const struct trace_sat *s);

#endif
