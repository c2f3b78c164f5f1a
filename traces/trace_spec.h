/* SPDX-License-Identifier: MIT */
/*
 * trace_spec.h - synthetic traffic from a one-line SPEC (ibfab run --traffic).
 *
 *   PATTERN[:key=value,...]     e.g.  incast:dst=h0,size=1MiB,n=8
 *
 * Patterns: p2p, pingpong, incast, alltoall, permutation, shift, and the
 * perftest sweep (see trace_spec_help() for each one's keys). Hosts are
 * channel adapters with a connected port, named by node description ("h3"),
 * node id, or "#k" for the k-th host (0-based, in the order net_host()
 * gives).
 */
#ifndef IBFAB_TRACE_SPEC_H
#define IBFAB_TRACE_SPEC_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "models/fabric/fab.h"
#include "models/net/net.h"
#include "sim/sim_diag.h"

/* Most messages one spec may create; the list as a whole is also held to
 * fab_msgs.max_bytes at TRACE_SPEC_MSG_BYTES a message (its struct
 * fab_msg, 80 bytes, its place in its host's post plan and its completion
 * time in the summary's samples). */
#define TRACE_SPEC_MAX_MSGS (1u << 27)
#define TRACE_SPEC_MSG_BYTES 96u

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

/*
 * A perftest sweep (perftest:op=write,sizes=2..8M,...) as laid out in the
 * message list, so a report can find each size's messages again
 * (tools/cli_perftest.c). From message `first`, size k (k < nsizes) owns
 * a block of `iters` x per_iter messages, in order:
 *   bw:                 the iters WRs src -> dst, one stream;
 *   lat, write or send: ping r (src -> dst) then pong r (dst -> src);
 *   lat, read:          the iters READs, each posted at the last one's CQE.
 */
#define TRACE_PERFTEST_MAX_SIZES 64

enum trace_perftest_mode { TRACE_PERFTEST_BW, TRACE_PERFTEST_LAT };

struct trace_perftest {
	bool valid;			/* the spec was a perftest sweep */
	uint8_t op;			/* enum fab_op */
	uint8_t mode;			/* enum trace_perftest_mode */
	uint8_t mem;			/* enum hca_mem */
	bool range;			/* sizes given as MIN..MAX (perftest -a) */
	int src, dst;			/* nodes: the client (requester) and the server */
	uint32_t iters;			/* per size */
	uint32_t tx_depth, cq_mod;	/* bw: WRs in flight, WRs per polled CQE */
	uint32_t per_iter;		/* messages per iteration: 2 for a ping-pong, else 1 */
	uint32_t nsizes;
	uint64_t sizes[TRACE_PERFTEST_MAX_SIZES];
	size_t first;			/* index of its first message in the list */
	size_t count;			/* messages it added: nsizes x iters x per_iter */
};

/*
 * trace_spec_parse(), and when `pt` is not NULL, *pt describes the sweep
 * (pt->valid false when the spec is another pattern or was refused).
 */
int trace_spec_parse_sweep(const char *spec, const struct net *net, uint64_t seed,
			   struct fab_msgs *out, struct trace_perftest *pt,
			   struct sim_diag *d);

/* The SPEC language, for ibfab run --help. */
void trace_spec_help(FILE *out);

#endif
