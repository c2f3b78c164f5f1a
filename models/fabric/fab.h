/* SPDX-License-Identifier: MIT */
/*
 * fab.h - a simulated InfiniBand fabric built from a fabric graph (net.h):
 * parameters, the messages to carry, and what the run measured.
 *
 * fab_create() instantiates one HCA per channel adapter and one switch per
 * switch node, wires every cable as two link directions with their own
 * propagation delay, installs the LFTs the subnet manager computed, and
 * queues the messages at their source HCAs. fab_run() runs the engine until
 * every message is delivered (or a time limit). Results are read back from
 * the message list (per-message start/end) and the per-port counters.
 */
#ifndef IBFAB_FAB_H
#define IBFAB_FAB_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "models/eth/eth.h"
#include "models/host/host.h"
#include "models/ib/ib_cc.h"
#include "models/ib/ib_vlarb.h"
#include "models/roce/dcqcn.h"
#include "models/server/server.h"
#include "models/tcp/tcp.h"
#include "models/net/net.h"
#include "sim/sim_par.h"
#include "sim/sim.h"
#include "sim/sim_diag.h"

#include "models/params/fab_params.h"
#include "models/core/fab_stats.h"

/* Fill with the default preset ("hdr"). */
void fab_params_default(struct fab_params *p);
/* Apply a named preset (sdr ... xdr): returns -1 and fills d when unknown. */
int fab_params_preset(struct fab_params *p, const char *name, struct sim_diag *d);
/* Apply one "key=value" override; -1 with a message naming the key and what was expected. */
int fab_params_set(struct fab_params *p, const char *kv, struct sim_diag *d);
/* Whether link set s names port `port` of node n (its id, description or GUID). */
bool fab_link_set_matches(const struct fab_link_set *s, const struct net_node *n, int port);
/* "link[NODE/PORT].KEY=VALUE" of set s into buf (JSON, messages). */
void fab_link_set_format(const struct fab_link_set *s, char *buf, size_t len);
/* The topology as the settings change it, before it is routed: the
 * switches switch[...] adds, the cables link[...].state=down takes out
 * (a cable that is not there) and those link[...].peer= adds, in that
 * order; 0, or -1 with d naming a setting that matches no cable, a port
 * that is taken or out of range, a node that is not there. */
int fab_link_sets_cut(struct net *n, const struct fab_params *p, struct sim_diag *d);
/* The width and speed settings of link[...] written into n's cables (both
 * ends), for what reads rates from the graph (topo check's findings); a
 * fabric applies them itself. A cable the file gives no rate takes the
 * preset's for what the setting leaves. 0, or -1 with d naming a setting
 * that names no cable. */
int fab_link_sets_rates(struct net *n, const struct fab_params *p, struct sim_diag *d);
/* Cross-field checks (VLs in the tables exist, MTU fits the buffers, ...). */
int fab_params_check(const struct fab_params *p, struct sim_diag *d);
/* Print every key, its current value and meaning (for --help and docs). */
void fab_params_print(const struct fab_params *p, FILE *out);
/* Names of the presets, NULL-terminated. */
extern const char *const fab_preset_names[];

/* What a message is on the wire (the work request its source posts). */
enum fab_op { FAB_OP_WRITE, FAB_OP_READ, FAB_OP_SEND };

/*
 * One message between HCA `src` and HCA `dst` (node indexes in the net):
 * `bytes` written to dst, sent to dst, or - FAB_OP_READ - read by src from
 * dst. Each stream is one RC queue pair, or one UD queue pair when `ud` is
 * set (SENDs of at most one MTU: a datagram each, on the SL's VL) or sl is
 * 0xff (a management datagram on VL15); messages of a stream are work
 * requests posted in order, different streams share the port packet by
 * packet. A message is
 * posted at `post`, or - when after >= 0 - `after_delay` after message
 * `after` was delivered at this message's source (a ping-pong reply), or,
 * with `after_cqe`, after message `after`'s work completion at the
 * requester, which must be this message's source (a send window).
 */
struct fab_msg {
	/* Ordered widest first and the flags in bits: 80 bytes, not the 96 of
	 * declaration order. Traffic specs make one per message (1.19M for
	 * bench/run's B1 at 1 s), and memory first touched costs time. */
	uint64_t bytes;
	sim_time_t post;
	sim_time_t after_delay;
	/* results */
	sim_time_t start;	/* posted (after dependencies) */
	sim_time_t first_tx;	/* first bit of the first packet on the wire */
	sim_time_t end;		/* delivered: its data complete where it goes */
	sim_time_t completed;	/* the requester's work completion (after the ACK, for RC) */
	/* input */
	uint32_t src, dst;
	int32_t after;
	uint32_t stream;
	uint8_t op;		/* enum fab_op */
	uint8_t mem;		/* enum hca_mem: both ends' buffers in host or GPU memory */
	uint8_t sl;
	bool ud : 1;		/* an unreliable datagram (UD QP), not RC: op is SEND */
	/* input: `after` waits for that message's requester completion (its
	 * CQE, polled) rather than its delivery; both messages share a source */
	bool after_cqe : 1;
	/* results */
	bool done : 1;		/* delivered */
	bool cqe : 1;		/* completed at the requester */
	bool lost : 1;		/* will never be delivered (dropped datagram, failed WR) */
	bool finished : 1;	/* delivered or lost, and completed */
	bool staged : 1;	/* GPU data copied to host memory before the post (no GPUDirect) */
	uint8_t status;		/* of that completion (enum hca_wc_status; 0 = success) */
};

/* Carried by a UD queue pair: a datagram on a data VL, or a VL15 MAD. */
static inline bool fab_msg_is_ud(const struct fab_msg *m)
{
	return m->ud || m->sl == 0xff;
}

/*
 * Messages of one stream in compact form: `count` messages like m, the
 * k-th (index first + k) posted at m.post + k * gap. A constant-rate
 * stream of a million messages is one of these, not 80 MB.
 */
struct fab_msg_run {
	struct fab_msg m;	/* the first message's input (no results) */
	uint64_t first, count;
	sim_time_t gap;
};

/*
 * The messages of a run, in one of two forms. Explicit (the default):
 * v[] holds every message, and the fabric writes each one's results there
 * (reports that list messages read them). Compact (`compact` set before
 * the first fab_msgs_add): consecutive messages of a stream that differ
 * only by a constant step in post time, with no dependency, are kept as
 * one run (struct fab_msg_run) and v stays empty; the fabric then holds
 * state only for the messages in flight and keeps their results as
 * running statistics (fab_completions), and, when asked, their records on
 * disk (fab_keep_results, fab_msg_result), so memory follows what is in
 * flight, not what happened. Either way a message is named by its index,
 * 0 .. n-1, and fab_msgs_in() reads its input.
 */
struct fab_msgs {
	struct fab_msg *v;
	size_t n, cap;
	uint32_t nstreams;
	/* what traffic specs may make the list hold, in bytes (trace_spec
	 * refuses a spec past it before making a message); 0 = half of the
	 * memory the process may use. fab_msgs_add itself does not check. */
	uint64_t max_bytes;
	bool compact;
	struct fab_msg_run *runs;	/* compact: in index order */
	size_t nruns, runs_cap;
};

int fab_msgs_add(struct fab_msgs *m, const struct fab_msg *msg);
/* dst a copy of src (its own memory): 0, or -1 out of memory. */
int fab_msgs_copy(struct fab_msgs *dst, const struct fab_msgs *src);
/* Message i's input: &v[i], or *tmp filled from its run (results zero). */
const struct fab_msg *fab_msgs_in(const struct fab_msgs *m, size_t i, struct fab_msg *tmp);
/* The list as runs, in index order (an explicit list is one run a
 * message): how many, and run r's first message's input with its first
 * index, count and step. */
size_t fab_msgs_nruns(const struct fab_msgs *m);
/* The run holding message i. */
size_t fab_msgs_run_of(const struct fab_msgs *m, size_t i);
const struct fab_msg *fab_msgs_run(const struct fab_msgs *m, size_t r, uint64_t *first,
				   uint64_t *count, sim_time_t *gap);
/* Room for n messages in all (a builder that knows its count allocates
 * once, exactly, instead of doubling). 0 or -1 (out of memory). An
 * explicit list only; a compact one ignores it. */
int fab_msgs_reserve(struct fab_msgs *m, size_t n);
void fab_msgs_free(struct fab_msgs *m);
/* What the list needs of the parameters: a datagram (ud) is a SEND of at
 * most ib.mtu bytes. 0, or -1 with d naming the first message that fails. */
int fab_msgs_check(const struct fab_msgs *m, const struct fab_params *p, struct sim_diag *d);
/* The same for message x, index i of its list (fab_create checks each
 * message once, in its one pass over the list). */
int fab_msg_check(const struct fab_msg *x, size_t i, const struct fab_params *p,
		  struct sim_diag *d);


struct fab;
struct sim_samples;
struct hca;

/* The run's parameters, and the number of nodes (as in the net). */
const struct fab_params *fab_get_params(const struct fab *f);
/* The GPU servers (server.gpus > 0): their map and NVLink pipes; or NULL. */
struct srv_map *fab_server(struct fab *f);
int fab_nodes(const struct fab *f);

struct fab *fab_create(const struct net *net, const struct fab_params *p,
		       struct fab_msgs *msgs, uint64_t seed, struct sim_diag *d);
void fab_destroy(struct fab *f);
struct sim_engine *fab_engine(struct fab *f);

/* Run until every message is delivered (and the look-ahead after), the
 * time limit, or stop. */
int fab_run(struct fab *f, struct sim_diag *d);
/* The least latency of a link between two nodes (the cable's propagation;
 * a SHARP aggregation node's internal port is not such a link): what a
 * partitioned run may take as its look-ahead whatever links it cuts, and
 * how long every run goes on after its last message finished (fab_run). */
sim_time_t fab_lookahead(const struct fab *f);

/*
 * The fabric cut into n partitions for a parallel run (fab_cut.c): each
 * node's partition (a switch with the HCAs on it is the smallest unit),
 * the links between partitions marked (port.cut), the look-ahead
 * (fab_lookahead). fab_cut_owner names a component's partition for
 * sim_par_init (ctx: the cut); a component that is not the fabric's
 * (registered after the cut, or not a port or an HCA) gets n, which
 * sim_par refuses by name. fab_cut_free unmarks the links.
 */
struct fab_cut {
	const struct fab *f;
	uint32_t n;
	uint16_t *node_part;		/* by node */
	uint16_t *comp_part;		/* by registered component (n: not the fabric's) */
	uint32_t ncomps;
	uint64_t *weight;		/* by partition: its nodes' ports (and 1 a node) */
	uint64_t cut_links;		/* cables between two partitions */
	sim_time_t lookahead;
};

int fab_cut_plan(struct fab *f, uint32_t n, struct fab_cut *c, struct sim_diag *d);
uint32_t fab_cut_owner(void *ctx, uint32_t comp);
void fab_cut_free(struct fab_cut *c);

/*
 * A partitioned run (fab_part.c). Its engine, set before fab_run: run()
 * runs this process's partitions to the end (0, or -1 with d set), and
 * merge() gathers every process's results where the outputs are written,
 * once the run is over (each partition's own words, fab_part_pack and
 * unpack; the totals and the maxima apart): 0 here,
 * 1 in another process (fab_run then has nothing to check), or -1 with d
 * set. The
 * hook's values and stop (sim_par_set_hook, ctx: the fabric) end the run
 * when the last message is finished in whichever partition. The
 * completion times are made again from the gathered records
 * (fab_part_rebuild).
 */
struct fab_par_ops {
	int (*run)(void *ctx, struct sim_diag *d);
	int (*merge)(void *ctx, struct sim_diag *d);
};
void fab_set_par(struct fab *f, const struct fab_par_ops *ops, void *ctx);

#define FAB_PART_MAX 2
#define FAB_PART_ALL UINT32_MAX
#define FAB_PART_TOTALS (sizeof(struct fab_totals) / 8)
size_t fab_part_words(struct fab *f, const uint16_t *node_part, uint32_t k);
void fab_part_pack(struct fab *f, const uint16_t *node_part, uint32_t k, uint64_t *w);
void fab_part_unpack(struct fab *f, const uint16_t *node_part, uint32_t k, const uint64_t *w);
void fab_part_totals(const struct fab *f, uint64_t w[FAB_PART_TOTALS]);
void fab_part_set_totals(struct fab *f, const uint64_t w[FAB_PART_TOTALS]);
void fab_part_max(const struct fab *f, uint64_t v[FAB_PART_MAX]);
void fab_part_set_max(struct fab *f, const uint64_t v[FAB_PART_MAX]);
void fab_part_values(void *ctx, uint32_t k, uint64_t sum[SIM_PAR_SUMS], uint64_t *max);
sim_time_t fab_part_stop(void *ctx, const uint64_t sum[SIM_PAR_SUMS], uint64_t max);
int fab_part_rebuild(struct fab *f);
/* A copy that ran a partition in this process but not fab_run: its clock
 * set to the run's end, its waits closed as fab_run closes them. */
void fab_part_finish(struct fab *f, sim_time_t now);
/* Did the run reach sim.max_time_ns (rather than end, or stall)? */
bool fab_time_limit_reached(const struct fab *f);

/*
 * Time series: while running, every `sample_ns` the fabric calls `fn` with
 * the current time; the callback reads ports with fab_port_sample(). Set
 * before fab_run(). The samples go on while messages are left, or, in a
 * run without messages (a trace replay), until it is stopped.
 */
void fab_set_sampler(struct fab *f, fab_sample_fn fn, void *ctx);
/*
 * Another driver ends the run (a trace replay beside the fabric's own
 * messages, background traffic): the last message finishing does not stop
 * it, and the sampler goes on while anything can happen. Set before
 * fab_run().
 */
void fab_hold(struct fab *f, bool on);
/*
 * A driver's component that every partition of a partitioned run has a
 * replica of (sim_par.h, SIM_PAR_EVERY): each builds the same fabric and
 * driver, and the cut names it in every partition. Before the cut; 0, or
 * -1 when there are too many.
 */
int fab_every(struct fab *f, uint32_t comp);
/* Does this partition run node's HCA (always, in a run of one list)? */
bool fab_node_local(const struct fab *f, int node);
/*
 * A driver's failure (a trace replay's): the run stops at once and
 * fab_run returns it, as the fabric's own; in a partitioned run every
 * partition stops after the window, and the run reports the failure of
 * the partition that failed first (sim_par.first_halt), where one list
 * would have stopped. fab_failure: the message, or NULL.
 */
void fab_driver_fail(struct fab *f, const char *msg);
const struct sim_diag *fab_failure(const struct fab *f);

int fab_nports(const struct fab *f);		/* connected port ends */
const struct fab_port_info *fab_port(const struct fab *f, int i);
void fab_port_sample(const struct fab *f, int i, struct fab_sample *s);
/* Port end i's bytes sent so far, every VL (fab_port_sample's xmit_bytes,
 * without the rest); does this partition run it (always, in one list)? */
uint64_t fab_port_xmit_bytes(const struct fab *f, int i);
/* Events this partition sent to another in place of a call one list
 * makes (reports, receives), which their handlers count as aside
 * (sim_aside): 0 in a run of one list (but with sim.cut_links). */
uint64_t fab_aside_sent(const struct fab *f);
bool fab_port_local(const struct fab *f, int i);

/* What the host behind a CA node did (models/host), or NULL for a switch. */
const struct host_stats *fab_host_stats(const struct fab *f, int node);

/* Totals over the run. */
void fab_totals(const struct fab *f, struct fab_totals *t);
/* The completion time (end - start) of every delivered message, finished
 * or not, and how many: the summary's percentiles, in either form of the
 * list (sim_samples: exact to 2^20, then within 1/4096). After the run. */
struct sim_samples *fab_completions(const struct fab *f, uint64_t *n_done);
/* A capture: fn sees every packet that port i (fab_port order) starts to
 * send, at the time its first bit leaves, with its headers as the model
 * has them (models/core/pkt.h). Data and ACK packets, not link-level
 * flow-control packets. Before fab_run; one fn for every tapped port. */
void fab_set_tap(struct fab *f, int i, fab_tap_fn fn, void *ctx);

/* Keep every message's record for after the run (a compact list: on disk;
 * an explicit list has them in place). Before fab_run; 0 or -1. */
int fab_keep_results(struct fab *f);
/* Message id's record after the run: its input and results (&v[id], or
 * read back, or - never posted - its input in *tmp); NULL on a read
 * error or when fab_keep_results was not asked. Read in index order. */
const struct fab_msg *fab_msg_result(const struct fab *f, size_t id, struct fab_msg *tmp);
/* Host `node`'s kernel counters (all 0 for a switch or without TCP). */
void fab_host_kernel(const struct fab *f, int node, struct fab_kernel *k);
/* Messages in flight with state of their own (a compact list; 0 else),
 * and the most there were at once. */
size_t fab_live_count(const struct fab *f, size_t *peak);

/* The invariant walk used by tests: credits never negative, blocks conserved
 * on every link and VL, occupancy <= buffer. Returns 0 or -1 with d filled. */
int fab_check_credits(const struct fab *f, struct sim_diag *d);

/*
 * Faults during a run (fab_fault.c): a cable, or every cable of a node,
 * goes down or comes up at a time. The subnet manager notices and installs
 * new tables sm.reroute_ns later, from the rerouter the caller gives (the
 * run's routing engine on the fabric's graph with the cables that are down
 * cut), after checking their channel dependencies. Add before fab_run().
 */
enum fab_fault_kind { FAB_FAULT_DOWN, FAB_FAULT_UP,
		     FAB_FAULT_BER, FAB_FAULT_DROP,	/* a cable's link.ber, link.drop_prob from then on */
		     FAB_FAULT_TABLES };	/* the SM installs the tables of a dump (`tables`) */

struct fab_fault {
	sim_time_t at;
	int node;
	int port;		/* 0: every connected port of the node */
	uint8_t kind;		/* enum fab_fault_kind */
	double value;		/* FAB_FAULT_BER, FAB_FAULT_DROP: the new value */
	char tables[256];	/* FAB_FAULT_TABLES: the dump, for the rerouter (no node) */
	/* filled as the run goes */
	bool applied;
	uint64_t lost_before;	/* drops_link when it was applied */
};

/* Route `n` (LIDs kept) as the run's subnet manager does, or with the
 * tables of the dump `tables` (a FAB_FAULT_TABLES fault); 0 or -1 (d filled). */
typedef int (*fab_reroute_fn)(void *ctx, struct net *n, const char *tables, struct sim_diag *d);

struct fab_reroute {
	sim_time_t at;
	bool ok;		/* routed and installed */
	bool acyclic;		/* the new tables' channel dependency graph */
	uint64_t lost_stale;	/* packets lost to links that were down, since the
				 * fault it follows, with the old tables */
	char note[256];		/* a cycle, or why it failed */
	int fault;		/* the FAB_FAULT_TABLES fault whose dump it installed, or -1 */
};

struct fab_fault_report {
	const struct fab_fault *faults;
	int nfaults;
	const struct fab_reroute *reroutes;
	int nreroutes;
	sim_time_t first;	/* the first fault applied (SIM_TIME_MAX: none) */
	uint64_t lost;		/* packets lost to links that were down (drops_link) */
	/* RC QPs: those that made progress again after spending retries since
	 * the first fault, the last of those moments (after the first fault),
	 * and those left in the error state (retry budget spent) */
	int qps_recovered, qps_failed;
	sim_time_t last_recovery;
	/* each recovered QP: its node, number, and when after the first fault */
	const struct fab_qp_recovery *recovered;
};

struct fab_qp_recovery {
	int node;
	uint32_t qpn;
	sim_time_t after;
};

int fab_fault_add(struct fab *f, const struct fab_fault *x, struct sim_diag *d);
/* The subnet manager: fn routes for it. `sweeps`: it reroutes by itself
 * sm.reroute_ns after each cable that goes down or up (false: a run on a
 * dumped table, which changes only at a FAB_FAULT_TABLES fault). */
void fab_set_rerouter(struct fab *f, fab_reroute_fn fn, void *ctx, bool sweeps);
/* The faults' events into the engine: fab_run does it; a caller that runs
 * the engine itself (the shim's daemon) calls it once the faults are
 * added. 0, or -1 with d filled. */
int fab_faults_start(struct fab *f, struct sim_diag *d);
/* NULL when the run had no fault. */
const struct fab_fault_report *fab_fault_report(const struct fab *f);

#endif
