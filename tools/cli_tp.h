/* SPDX-License-Identifier: MIT */
/*
 * cli_tp.h - throughput into the hosts over time, for `ibfab compare`'s
 * chart: the bytes that the ports feeding a channel adapter have sent so
 * far (PortXmitData of every switch -> host link, so wire bytes: headers,
 * ACKs and resent packets included), summed, at ticks every dt. A
 * cumulative curve; when it holds CLI_TP_MAX samples, every other one is
 * dropped and dt doubles, so a run of any length costs at most CLI_TP_MAX
 * samples and log2(length / CLI_TP_DT0) compactions. The sampler is an
 * engine component of its own that only reads counters, so the run is the
 * same with it as without (its events are left out of the event count).
 *
 * One list: a tick reschedules itself while anything else is pending, so
 * the last tick is the first one after the run's last event, or the last
 * before its stop.
 *
 * Cut into partitions (sim_par.h): every partition has a replica
 * (fab_every) that sums the ports it runs, at the same ticks, each tick
 * keyed alike (after every event of its time scheduled at the same time),
 * whatever the cut. Its ticks do not keep the run going (eng->background):
 * each replica ticks on until the run ends. Then the partitions' figures
 * are added (cli_tp_par_end: in this process, or over MPI) and the ticks
 * are those one list takes: cut after the first tick that follows the last
 * event anywhere, or extended with the final counts up to it (nothing
 * moves after the last event) or to the stop; and the fabric's clock is
 * set where one list's ends (that tick, or the last event), since what is
 * still open at the end (a credit stall) is closed there. So the chart and
 * every figure are the bytes of one list's.
 */
#ifndef IBFAB_CLI_TP_H
#define IBFAB_CLI_TP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "models/fabric/fab.h"
#include "models/net/net.h"
#include "sim/sim.h"
#include "sim/sim_diag.h"

#define CLI_TP_DT0 (100 * SIM_NS)
#define CLI_TP_MAX 8192

struct cli_par_ops;
struct cli_tp;			/* one partition's replica (cli_tp.c) */

struct cli_tp_set {
	struct cli_tp *s;	/* [k]: partition k's (threads), or this process's only */
	uint32_t n;
	/* after the run (cli_tp_finish): the curve, CLI_TP_MAX samples at most */
	sim_time_t *t;
	uint64_t *bytes;
	size_t nt;
	uint64_t ticks;		/* events the replicas dispatched, all partitions */
	uint64_t final;		/* the bytes at the run's end, all partitions */
	bool have_final;	/* final is set (cli_tp_par_end) */
};

/* Room for n replicas (1, or a partition each on threads). 0 or -1. */
int cli_tp_init(struct cli_tp_set *ts, uint32_t n);
/* Replica k on fabric f (built, not yet run or cut); `every`: the run is
 * to be cut (the replica then is in every partition). 0, or -1 with *d. */
int cli_tp_start(struct cli_tp_set *ts, uint32_t k, struct fab *f, const struct net *net,
		 bool every, struct sim_diag *d);
/* A cut run's end, in every process (cli_run's after_par_run): ops the
 * back-end's (allreduce for processes; NULL: every partition is here). */
int cli_tp_par_end(struct cli_tp_set *ts, const struct cli_par_ops *ops, struct sim_diag *d);
/* The curve, closed at the fabric's clock (f: the run's fabric, after
 * the run and any gathering). 0, or -1 out of memory. */
int cli_tp_finish(struct cli_tp_set *ts, struct fab *f);
void cli_tp_free(struct cli_tp_set *ts);

#endif
