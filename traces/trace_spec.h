/* SPDX-License-Identifier: MIT */
/*
 * trace_spec.h - synthetic traffic from a one-line SPEC (ibfab run --traffic).
 *
 *   PATTERN[:key=value,...]     e.g.  incast:dst=h0,size=1MiB,n=8
 *
 * Patterns: p2p, pingpong, incast, alltoall, permutation, shift (see
 * trace_spec_help() for each one's keys). Hosts are channel adapters with a
 * connected port, named by node description ("h3"), node id, or "#k" for
 * the k-th host (0-based, in the order net_host() gives).
 */
#ifndef IBFAB_TRACE_SPEC_H
#define IBFAB_TRACE_SPEC_H

#include <stdint.h>
#include <stdio.h>

#include "models/fabric/fab.h"
#include "models/net/net.h"
#include "sim/sim_diag.h"

/* Most messages one spec may create (a struct fab_msg is ~80 bytes). */
#define TRACE_SPEC_MAX_MSGS (1u << 22)

/*
 * Append the messages of `spec` to `out`. Stream ids continue from
 * out->nstreams, so several specs can share one list. `seed` is the run
 * seed; patterns that draw random numbers use it unless the spec gives
 * seed=. On error returns -1, leaves `out` as it was, and fills d: the
 * message quotes the spec ("--traffic 'incast:dst=h99,size=1MiB': unknown
 * host 'h99' (...)") and d->col is the 1-based position of the offending
 * text in the spec (d->file and d->line are left empty).
 */
int trace_spec_parse(const char *spec, const struct net *net, uint64_t seed,
		     struct fab_msgs *out, struct sim_diag *d);

/* The SPEC language, for ibfab run --help. */
void trace_spec_help(FILE *out);

#endif
