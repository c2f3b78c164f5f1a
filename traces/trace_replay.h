/* SPDX-License-Identifier: MIT */
/*
 * trace_replay.h - run a lowered workload (struct trace_program) on a
 * simulated fabric and measure it.
 *
 * A step starts when every step it depends on is done; a compute step
 * occupies its rank (a rank computes one thing at a time); a transfer is an
 * RDMA WRITE with immediate from the rank's HCA to the peer's over one RC
 * queue pair per ordered rank pair (as NCCL's IB transport moves data), and
 * is done when the peer's receive completion says the data is in its
 * memory; between GPUs of one server it goes over NVLink (docs/servers.md). Results: per step and per op start/end, per collective algbw and
 * busbw as nccl-tests defines them, per rank compute / communication /
 * idle time, and the critical path (the chain of steps, each the last of its
 * step's dependencies to finish, that ends at the last step).
 */
#ifndef IBFAB_TRACE_REPLAY_H
#define IBFAB_TRACE_REPLAY_H

#include <stdio.h>

#include "models/fabric/fab.h"
#include "sim/sim_stats.h"
#include "traces/trace.h"

struct trace_spill;

struct trace_step_time {
	sim_time_t ready, start, end;
	uint32_t crit;		/* the dependency that finished last (UINT32_MAX: none) */
};

struct trace_rank_time {
	sim_time_t compute_ps;	/* busy computing */
	sim_time_t comm_ps;	/* at least one transfer in flight, to or from it */
	sim_time_t overlap_ps;	/* computing while a transfer is in flight */
	sim_time_t end_ps;	/* its last step's end */
};

struct trace_results {
	/* per program step, unless the program is lazy (trace_program.lazy):
	 * then NULL, and so are crit_path and the flows */
	struct trace_step_time *step;
	sim_time_t *op_start, *op_end;	/* per trace op */
	struct trace_rank_time *rank;	/* per rank (then per aggregation node: trace_nendpoints) */
	uint32_t *crit_path;		/* steps, first to last */
	size_t ncrit;
	sim_time_t crit_compute_ps, crit_comm_ps;	/* the critical path's split */
	sim_time_t end_ps;		/* the last step's end */
	size_t steps_done;
	/* each transfer's time from its post to its end, as they finish */
	struct sim_samples xfer_times;
	/* the most steps made and not yet finished at once: what the replay
	 * held of the program (all of it were every step made up front) */
	size_t live_peak;
	/* how the replay found them (trace_replay.c, live_get): the slots of
	 * its window at the end, and the entries that went to its overflow
	 * (a step whose slot another in flight held) */
	size_t live_slots, live_spilled;
	/* the ordered rank pairs that exchange data (an RC QP pair each), and
	 * the most of them holding their QPs at once: a pair's QPs are made at
	 * its first transfer and destroyed once idle after its last, except
	 * on fabric=tcp and in runs with faults, which keep them all */
	size_t qp_pairs, qp_pairs_peak;
	/* on GPU servers (models/server): transfers over NVLink (a PXN
	 * relay's first hop counted too) and their bytes, and the transfers
	 * to other servers a relay on the receiver's rail sent (PXN) */
	uint64_t nvlink_xfers, nvlink_bytes, pxn_xfers;
	/* mpi.proto=ucx: the rendezvous threshold used (0: mpi.proto=write),
	 * the CPU ranks' messages by protocol (enum mpi_kind: short, eager,
	 * rendezvous) and the SENDs they took */
	uint64_t mpi_rndv_bytes, mpi_msgs[3], mpi_sends;
	/* SHARP (ib.sharp_sat): collnet allreduces that waited for a
	 * streaming tree another held, and their waits summed */
	uint32_t sat_waits;
	sim_time_t sat_wait_ps;
	/* a lazy program's step times, when it keeps them (trace_results_time) */
	struct trace_spill *spill;
	/* one per transfer step, for the reports that list flows: built by
	 * trace_results_flows() on request, empty until then */
	struct fab_msgs flows;
	bool flows_built;
};

/*
 * Run p on f, with the trace's ranks already mapped to nodes. f may carry
 * messages of its own (background traffic): they run beside the steps,
 * and the run ends with the last step (fab_hold). Fills r
 * (free with trace_results_free). 0, or -1 with d filled (a stall: some
 * steps could never start, the fabric failed).
 */
int trace_replay(const struct trace_program *p, struct fab *f, struct trace_results *r,
		 struct sim_diag *d);
/*
 * trace_replay in two halves, for a run cut into partitions: start sets
 * the replay up on f (its component registered, its first steps due),
 * then the caller runs f (fab_run), then finish checks and fills r and
 * frees the replay (ran false: the run failed, r is not filled). With
 * `every`, the replay is one of a replica in every partition
 * (fab_every): each is started on its partition's copy of the fabric
 * before the cut, keeps every step, posts only to the HCAs its partition
 * runs, and tells every replica of a completion; not yet with GPU
 * transfers staged through host memory (LL between servers, no
 * GPUDirect), mpi.proto=ucx, faults or a pair of more than a send queue.
 */
struct replay;
struct replay *trace_replay_start(const struct trace_program *p, struct fab *f,
				  struct trace_results *r, bool every, struct sim_diag *d);
int trace_replay_finish(struct replay *rp, bool ran, struct sim_diag *d);
void trace_results_free(struct trace_results *r);
/*
 * The flows of a replay: one struct fab_msg per transfer step (src and dst
 * nodes, bytes, start, end: the step's times), in step order, for `ibfab
 * compare`. Built on request because they copy what the steps hold, 80
 * bytes a transfer at the end of the run when memory peaks: on the
 * 1,024-host 4 MiB ring 164 of its 457 MB. `ibfab run`'s summary, JSON
 * document and flows.csv make the same records from the steps one at a
 * time instead (cli_report). 0, or -1 out of memory. Once built, a second
 * call does nothing.
 */
int trace_results_flows(const struct trace_program *p, struct trace_results *r);

/*
 * When step s started and ended (ready and crit only where the steps'
 * times are kept whole, r->step): from r->step, or, for a lazy program
 * with keep_times, from the file they were written to as the steps
 * finished - read a block of 4,096 at a time, so read in step order.
 * NULL if neither has them, or on a read error.
 */
const struct trace_step_time *trace_results_time(const struct trace_results *r, uint32_t s,
						 struct trace_step_time *tmp);

/* Per collective: algbw = S / time, busbw = algbw x coll_busbw_factor. */
double trace_op_algbw(const struct trace_program *p, const struct trace_results *r,
		      uint32_t op);

/* A Chrome-trace / Perfetto JSON timeline: one track per rank with its
 * compute, each collective and each transfer. 0 or -1 (write error). */
int trace_timeline_write(FILE *out, const struct trace_program *p,
			 const struct trace_results *r);

/* nccl-tests' table for the collectives of the trace, one row per op:
 * size count type redop root time algbw busbw (as all_reduce_perf prints). */
void trace_nccl_table(FILE *out, const struct trace_program *p, const struct trace_results *r);

#endif
