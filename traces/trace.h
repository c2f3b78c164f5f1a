/* SPDX-License-Identifier: MIT */
/*
 * trace.h - a workload: ranks placed on hosts, and what each rank does.
 *
 * Two levels. A *trace* is what users write or import: per-rank (or
 * all-rank) operations with ids and dependencies - point-to-point sends
 * and receives, compute delays, and collectives over a communicator with an
 * algorithm. Lowering turns it into a *program*: point-to-point transfers
 * and compute delays only, each with the steps it must wait for, which the
 * replay (traces/trace_replay.c) runs on the simulated fabric.
 *
 * Parsers (native format: trace_fmt.c; importers: import_*.c) fill a
 * struct trace; collective algorithms (coll_*.c) lower collectives;
 * trace_lower() builds the program. Every op remembers the file and line it
 * came from, so errors and reports can point back to the input.
 */
#ifndef IBFAB_TRACE_H
#define IBFAB_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "models/net/net.h"
#include "sim/sim.h"
#include "sim/sim_diag.h"

struct coll_ctx;

/* ---- the trace ------------------------------------------------------------ */

enum trace_kind {
	TRACE_SEND,		/* rank -> peer, bytes; done when delivered at peer */
	TRACE_RECV,		/* rank <- peer; done when the matching send is delivered */
	TRACE_COMPUTE,		/* rank busy for `duration` */
	TRACE_COLL,		/* a collective over a communicator (every member takes part) */
};

enum trace_coll {
	TRACE_ALLREDUCE, TRACE_ALLGATHER, TRACE_REDUCESCATTER, TRACE_ALLTOALL,
	TRACE_BROADCAST, TRACE_REDUCE, TRACE_BARRIER,
	TRACE_NCOLL
};
extern const char *const trace_coll_names[TRACE_NCOLL];	/* "allreduce", ... */

/*
 * The algorithm names `algo=` accepts, one line each: the enum and
 * trace_algo_names[] are made from this list. Which collectives an
 * algorithm serves, and how, is its row of coll.c's registry.
 */
#define TRACE_ALGOS(X) \
	X(AUTO, "auto")		/* the collective's default (its registry row says) */ \
	X(RING, "ring")		/* ring (NCCL's), reduce-scatter + all-gather for allreduce */ \
	X(TREE, "tree")		/* double binary tree (NCCL's tree) */ \
	X(HD, "hd")		/* recursive halving-doubling (Rabenseifner) */ \
	X(DIRECT, "direct")	/* all-to-all: every pair at once */ \
	X(PAIRWISE, "pairwise")	/* all-to-all: N-1 rounds, partner r xor k / r + k */ \
	X(BRUCK, "bruck")	/* all-gather (small messages): log2 N rounds */ \
	X(COLLNET, "collnet")	/* allreduce in the switches: SHARP (NCCL's CollNet) */ \
	X(NVLS, "nvls")		/* allreduce in the NVSwitches: NVLink SHARP (NCCL's NVLS;
				 * across servers with SHARP: NVLS + SHARP) */ \
	X(NVLSTREE, "nvlstree")	/* NVLS in each server, a tree between them (NCCL's NVLSTree) */

enum trace_algo {
#define TRACE_ALGO_ENUM(id, name) TRACE_ALGO_##id,
	TRACE_ALGOS(TRACE_ALGO_ENUM)
#undef TRACE_ALGO_ENUM
	TRACE_NALGO
};
extern const char *const trace_algo_names[TRACE_NALGO];	/* "auto", "ring", "tree", "hd", ... */

/* NVLink SHARP in the NVSwitches: NCCL's NVLS and NVLSTree */
static inline bool trace_algo_nvls(enum trace_algo a)
{
	return a == TRACE_ALGO_NVLS || a == TRACE_ALGO_NVLSTREE;
}

/*
 * NCCL's protocols (`proto=`): how a step's data and its ready flag travel
 * (NCCL src/include/device.h). Simple writes whole chunks, then a flag
 * behind a memory fence; LL (low latency) 8-byte lines of 4 bytes of data
 * and a 4-byte flag, so each is its own flag and nothing waits for a
 * fence; LL128 128-byte lines of 120 bytes of data and an 8-byte flag,
 * which needs NVLink's 128-byte ordered writes. The replay gives each its
 * bytes on the wire, its per-step latency over NVLink and, for LL between
 * servers, its host-memory buffers (trace_replay.c, docs/servers.md).
 */
#define TRACE_PROTOS(X) \
	X(AUTO, "auto")		/* NCCL's tuning model on GPU servers, else simple */ \
	X(SIMPLE, "simple") \
	X(LL, "ll") \
	X(LL128, "ll128")

enum trace_proto {
#define TRACE_PROTO_ENUM(id, name) TRACE_PROTO_##id,
	TRACE_PROTOS(TRACE_PROTO_ENUM)
#undef TRACE_PROTO_ENUM
	TRACE_NPROTO
};
extern const char *const trace_proto_names[TRACE_NPROTO];	/* "auto", "simple", "ll", "ll128" */
extern const char *const trace_proto_labels[TRACE_NPROTO];	/* NCCL's spelling: "Simple", "LL", "LL128" */
/* Bytes on the wire (NVLink or the fabric) for `bytes` of data. */
uint64_t trace_proto_wire(enum trace_proto p, uint64_t bytes);

/*
 * nccl-tests' data types and reduction ops (test_typenames, test_opnames
 * in its src/common.cu), for the table it prints: the type sets the
 * count column (elements of `size` bytes), the op the redop column. A
 * trace_op's dtype and redop are 1 + an index here; 0: not given (float,
 * and sum where the collective reduces).
 */
struct trace_dtype {
	const char *name;
	unsigned size;
};
#define TRACE_NDTYPES 12
#define TRACE_NREDOPS 6
#define TRACE_DTYPE_FLOAT 7	/* nccl-tests' default type: trace_dtypes[7] */
extern const struct trace_dtype trace_dtypes[TRACE_NDTYPES];
extern const char *const trace_redop_names[TRACE_NREDOPS];

struct trace_op {
	uint32_t id;		/* unique in the trace (user's, or assigned) */
	enum trace_kind kind;
	int32_t rank;		/* who runs it; -1 for a collective (its communicator) */
	int32_t peer;		/* send/recv partner */
	uint64_t bytes;		/* send/recv size; collective: the buffer size S (nccl-tests' "size") */
	sim_time_t duration;	/* compute */
	uint32_t tag;		/* send/recv matching: (rank, peer, tag) in order */
	/* collectives */
	enum trace_coll coll;
	enum trace_algo algo;
	uint32_t comm;		/* index into trace.comms */
	int32_t root;		/* broadcast/reduce root (a rank of the communicator) */
	/* pipeline the collective into this many chunks, over this many
	 * NCCL-like parallel rings or trees; 0: not given, the lowering's
	 * choice (coll_ctx_init: 1, or on GPU servers what NCCL would use) */
	uint32_t chunks;
	uint32_t channels;
	/* dependencies: ops (by index into trace.ops) that must be done first */
	uint32_t dep_off, ndeps;	/* into trace.deps */
	/* send: done when its source has had all of it acknowledged (the RC
	 * work completion, htsim's send_done), not when it is delivered */
	bool acked;
	char name[32];		/* a label for reports (e.g. "grad_allreduce_3"), may be empty */
	bool auto_algo;		/* algo was auto, chosen by NCCL's tuning model (coll_tune.c) */
	/* collectives: the protocol (TRACE_PROTO_AUTO until trace_tune_ops
	 * chooses; simple where nothing does), and the ones NCCL_PROTO leaves
	 * the tuning model to choose from (bit per enum trace_proto; 0 = all
	 * it would enable) */
	enum trace_proto proto;
	uint8_t protos;
	uint16_t algos;		/* NCCL_ALGO's list for algo=auto (bit per enum trace_algo; 0 = all) */
	bool auto_proto;	/* proto was auto, chosen by NCCL's tuning model */
	/* one of the sends and receives of nccl-tests' sendrecv_perf: the
	 * table's row for its size (trace_nccl_table) */
	bool sendrecv;
	bool collnet;		/* NCCL_COLLNET_ENABLE=1 on its nccl-tests command line:
				 * SHARP's algorithms are NCCL's candidates, as every op's
				 * with ib.sharp=on (tools/cli_sharp.c) */
	/* nccl-tests' -d and -o for its table (trace_dtypes, trace_redop_names:
	 * 1 + the index; 0 = not given) */
	uint8_t dtype, redop;
	const char *file;	/* points into trace.files */
	int line;
};

/* The protocol an op's transfers use: a collective's own, else Simple. */
static inline enum trace_proto trace_op_proto(const struct trace_op *o)
{
	return o->proto == TRACE_PROTO_AUTO ? TRACE_PROTO_SIMPLE : o->proto;
}

struct trace_comm {
	int32_t *ranks;		/* members, in the communicator's rank order */
	uint32_t n;
};

enum trace_map {
	TRACE_MAP_EXPLICIT,	/* the trace lists host of each rank */
	TRACE_MAP_LINEAR,	/* rank k -> host k */
	TRACE_MAP_ROUNDROBIN,	/* consecutive ranks on different leaf switches */
	TRACE_MAP_RANDOM,	/* a random permutation (map_seed) */
	TRACE_MAP_GPU,		/* one rank per GPU on a rail-optimised cluster (hosts "n<i>g<j>") */
};

/* NCCL's view of a GPU server, for its tuning model (traces/coll_tune.c). */
struct trace_tune {
	uint8_t arch;		/* NCCL's rows: 0 Volta, 1 Ampere, 2 Hopper, 3 Blackwell */
	bool amd;		/* AMD host CPUs: 2 us network overhead a step, not 1 */
	uint32_t nchannels;	/* its graph search's channels: one per NIC; 0 = no servers */
	double bw;		/* per channel, GB/s: the search's speed for one NIC */
	bool ll128;		/* NCCL enables LL128 by default: NVLink, and each NIC near
				 * its GPU (on one PCIe switch, or by PXN on Hopper and later) */
	double nvlink_gbps;	/* a GPU's NVLink, per direction (server.nvlink_gbps) */
	double nvls_eff;	/* NVLink SHARP's efficiency (server.nvls_efficiency); 0: no NVLS */
	bool collnet;		/* ib.sharp=on gave the job a SHARP tree: NCCL's CollNet
				 * enabled for every op (trace_op.collnet: for one), so
				 * CollNetDirect and, across servers, NVLS + SHARP */
};

struct trace {
	int32_t nranks;
	enum trace_map map;
	uint64_t map_seed;
	/* map linear on GPU servers (hosts n<i>g<j>): ranks a server as a
	 * launcher placed them (nccl-tests' srun --ntasks-per-node, mpirun
	 * -npernode: processes x -t x -g), rank r then GPU r mod K of server
	 * r / K; 0: the servers' GPUs in order */
	int32_t ranks_per_node;
	char **rank_host;	/* TRACE_MAP_EXPLICIT: host name per rank (as in --traffic) */
	int32_t *rank_node;	/* rank -> node index in the net, after trace_map_ranks() */
	struct trace_op *ops;
	size_t nops, ops_cap;
	uint32_t *deps;
	size_t ndeps, deps_cap;
	struct trace_comm *comms;	/* comms[0] is "all ranks" */
	size_t ncomms;
	char **files;		/* every file read (includes), owned */
	int nfiles;
	/* jobs side by side (trace_append): each job's file (in files) and
	 * the ranks it brought, in rank order; njobs 0 for a single trace */
	const char **job_file;
	int32_t *job_ranks;
	int njobs;
	/*
	 * SHARP aggregation nodes (traces/coll_collnet.c), when the fabric's
	 * aggregation manager gave the job a tree (models/sm/sm_sharp.c):
	 * endpoints nranks .. nranks + nagg - 1 besides the ranks, on the
	 * nodes rank_node[nranks + i]. agg_parent[i]: the aggregation node
	 * above node i in the tree, -1 at its root; rank_agg[r]: the one on
	 * rank r's leaf switch. No rank runs ops on them; collnet's steps
	 * move data to and from them.
	 */
	int32_t nagg;		/* (TRACE_SHARP_CHUNK: what a chunk holds) */
	int32_t *agg_parent;
	int32_t *rank_agg;
	/* NVSwitch endpoints, two per NVLink domain g of the ranks
	 * (rank_group), after the aggregation nodes: the switches as they
	 * reduce (multimem.ld_reduce: trace_nvs_endpoint) and as they copy to
	 * every GPU (multimem.st: the one after), on a node of the domain;
	 * NVLS's steps move data to and from them (traces/coll_nvls.c) over
	 * NVLink only. Set by trace_set_nvs(); 0 without servers. */
	int32_t nnvs;
	/* per rank, the NVLink domain of its GPU (models/server), -1 none;
	 * NULL when the fabric has no GPU servers. Set by trace_set_groups()
	 * after trace_map_ranks(): rings of several channels then follow
	 * the servers (coll_ring.c). */
	int32_t *rank_group;
	/* on GPU servers, what a ring or tree whose chunks and channels were
	 * not given uses (trace_set_groups): this many channels, and pieces
	 * of this many NCCL steps (a ring 4 of them, a tree 1); 0 otherwise */
	uint32_t auto_channels;
	uint64_t auto_step_bytes;
	struct trace_tune tune;	/* what NCCL's tuning model knows of the servers */
};

/* SHARP's chunk: NCCL_BUFFSIZE / NCCL_STEPS bytes. An allreduce through
 * the switches of at most this much takes SHARP's low-latency path, more
 * streams (trace_sat.c). */
#define TRACE_SHARP_CHUNK (512u << 10)

/* Ranks and aggregation nodes: what a program's steps may name. */
static inline int32_t trace_nendpoints(const struct trace *t)
{
	return t->nranks + t->nagg + t->nnvs;
}

/* The NVSwitch endpoint of NVLink domain g that reduces (trace.nnvs); the
 * one after it copies to every GPU. */
static inline int32_t trace_nvs_endpoint(const struct trace *t, int32_t g)
{
	return t->nranks + t->nagg + 2 * g;
}

/* The NVLink domain of NVSwitch endpoint e. */
static inline int32_t trace_nvs_domain(const struct trace *t, int32_t e)
{
	return (e - t->nranks - t->nagg) / 2;
}

/* Endpoint e is an NVSwitch (trace.nnvs). */
static inline bool trace_is_nvs(const struct trace *t, int32_t e)
{
	return e >= t->nranks + t->nagg;
}

/*
 * Give the job one NVSwitch endpoint per NVLink domain of its ranks
 * (trace.rank_group set), after trace_set_agg(). 0 or -1 (out of memory).
 */
int trace_set_nvs(struct trace *t, struct sim_diag *d);

/*
 * Give the job a SHARP tree: nagg aggregation nodes on the net's nodes
 * agg_node[i], parent[i] as above, rank_agg[r] for each rank (copied).
 * After trace_map_ranks(), before lowering. 0 or -1 (out of memory).
 */
int trace_set_agg(struct trace *t, int32_t nagg, const int *agg_node, const int32_t *parent,
		  const int32_t *rank_agg, struct sim_diag *d);

/*
 * On GPU servers (trace.rank_group and trace.tune set): every collective
 * whose algo is auto gets the algorithm NCCL's tuning model picks for its
 * size, ranks and servers (coll_tune.c), and auto_algo set. 0 or -1.
 */
int trace_tune_ops(struct trace *t);
/* NCCL's base latency (us) of a ring or tree collective with proto: its
 * kernel's launch and setup (tuning.cc baseLat); 0 for other algorithms. */
double trace_tune_base_us(enum trace_algo algo, enum trace_proto proto);
/* LL's data rate on one channel within an NVLink domain, GB/s: NCCL's
 * model's LL bandwidth of one server's GPUs (llMaxBw) over its search
 * channels; 0 without servers (coll_tune.c). */
double trace_tune_ll_channel_gbps(const struct trace_tune *tu);

/* Give the ranks their NVLink domains (trace.rank_group, copied), and
 * the default channels and NCCL step size of rings and trees there. 0 or -1. */
int trace_set_groups(struct trace *t, const int32_t *group, uint32_t channels,
		     uint64_t step_bytes, struct sim_diag *d);

void trace_init(struct trace *t);
void trace_free(struct trace *t);
/* Append an op (copied; its deps given as op indexes). Returns its index or -1. */
int trace_add_op(struct trace *t, const struct trace_op *op, const uint32_t *deps,
		 uint32_t ndeps, struct sim_diag *d);
/* Add a communicator; returns its index or -1. comms[0] (all ranks) is made by
 * trace_set_ranks(). */
int trace_add_comm(struct trace *t, const int32_t *ranks, uint32_t n, struct sim_diag *d);
int trace_set_ranks(struct trace *t, int32_t nranks, struct sim_diag *d);
/*
 * Another job beside t: src's ranks become t's ranks nranks .. nranks +
 * src.nranks - 1, its communicators (its "all ranks" too) new ones of t,
 * its ops appended with their ids, ranks, roots, communicators and
 * dependencies shifted, its files t's. Both loaded and not yet placed,
 * both placed linearly (the jobs then take consecutive hosts) or both by
 * host lines; `name` (src's file) is in the messages. 0 or -1.
 */
int trace_append(struct trace *t, const struct trace *src, const char *name, struct sim_diag *d);
/* "the trace has N ranks", or for jobs side by side "the 2 jobs have N
 * ranks (a.nccl 16, b.nccl 24)", into buf (snprintf's return). */
int trace_ranks_text(const struct trace *t, char *buf, size_t len);
const char *trace_add_file(struct trace *t, const char *path);
/* Checks before lowering: ranks in range, every recv matched by a send with
 * the same (rank, peer, tag) in order and the same size, no dependency
 * cycle (reported with the ops' file:line), collectives' roots in their
 * communicator. */
int trace_validate(const struct trace *t, struct sim_diag *d);
/* Place ranks on hosts of the net (rank_node). */
int trace_map_ranks(struct trace *t, const struct net *net, struct sim_diag *d);

/* Load a trace file: the native format (trace_fmt.c) or an importer, by
 * content or extension, or `format` ("ibfab", "htsim", "hpcc", "nccl-log",
 * "nccl-tests"; NULL = detect). */
int trace_load(const char *path, const char *format, struct trace *t, struct sim_diag *d);
/* The native format from memory (tests). */
int trace_load_string(const char *text, const char *name, struct trace *t, struct sim_diag *d);

/* ---- the lowered program -------------------------------------------------- */

enum trace_step_kind {
	TS_XFER,		/* rank -> peer, bytes: done when delivered at peer */
	TS_COMPUTE,		/* rank busy for duration: done when it ends */
	TS_JOIN,		/* done as soon as its deps are: no time, no transfer, the
				 * rank not busy. A collective's lowering puts one before
				 * a member whose entry is many steps and whose chunk flows
				 * are many too (coll_lower_entries): one dependency each,
				 * not entries x flows. Outside every op's step range. */
};

/* What a transfer does to the receiver's copy of the chunk (for the
 * reduction check that proves an algorithm correct). */
enum trace_data { TD_NONE, TD_REDUCE, TD_COPY };

/*
 * One step of a lowered program. A ring allreduce over N ranks has 2N(N-1)
 * of them (134M at 8,192 ranks); stored, or held while in flight when
 * lowered lazily, so the fields are ordered widest first and the two
 * enums are 8-bit fields: 48 bytes, not 56.
 */
struct trace_step {
	uint64_t bytes;
	sim_time_t duration;
	int32_t rank, peer;	/* ranks (not nodes) */
	uint32_t op;		/* the trace op it implements */
	uint32_t phase;		/* the algorithm's step number (for --explain and timelines) */
	uint32_t chunk;		/* which chunk of the collective's buffer it carries; a step
				 * carrying a run of chunks (halving-doubling, Bruck) encodes
				 * it: decode with coll_step_chunks() (traces/coll.h) */
	union {
		uint32_t dep_off;	/* a stored step: into program.deps */
		/* a lazy op's step that leads a fan: where its members are
		 * (coll_gstep.fan_tab; trace_program_fan_step()) */
		uint32_t fan_tab;
	};
	uint32_t ndeps;		/* steps that must be done first */
	enum trace_step_kind kind : 8;
	enum trace_data data : 8;
	bool acked : 1;		/* TS_XFER: done at the source's completion (trace_op.acked) */
	bool fan_to : 1;	/* with fan_tab: coll_gstep.fan_to */
	/* a TS_JOIN without a list: it waits for the `phase` transfers of op
	 * `chunk` (an earlier lazy collective) that involve its rank, which
	 * the replay counts as they end (coll.h, struct coll_whole) */
	bool counted : 1;
	/* a lazy op's step that leads a fan (coll_gstep.fan): it and the
	 * fan - 1 steps after it; 0 or 1 none */
	uint8_t fan;
};

_Static_assert(sizeof(struct trace_step) == 48, "trace_step: 48 bytes");

/*
 * A collective lowered lazily (trace_program.lazy): its steps are
 * [first, first + n) of the program's numbering, but none is stored; the
 * algorithm describes any of them by its index (coll_algo.gen), and the
 * replay makes them as it reaches them (trace_program_step()).
 */
struct trace_lazy {
	uint32_t op;		/* the trace op */
	uint32_t first, n;	/* its steps */
	uint32_t before;	/* lazy steps before `first`: storage = index - before */
	uint64_t reach;		/* a step's dependents are at most this far after it */
	/* and those of a step not far (coll_algo.near_reach, .far): at most
	 * this far; reach when the algorithm says nothing */
	uint64_t near_reach;
	struct coll_ctx *c;	/* the algorithm's context with the members' entries (owned) */
};

/* Whether lazy op z's step s (a program step) may have dependents beyond
 * its near reach: its record is then kept a reach after it finishes. */
bool trace_program_far(const struct trace_lazy *z, uint32_t s);

struct trace_program {
	const struct trace *trace;
	/* the stored steps: all of them, unless some ops are lazy (steps
	 * then holds the others, nstored of them, in program order) */
	struct trace_step *steps;
	size_t nsteps, steps_cap;
	size_t nstored;
	/* lower the collectives whose algorithm can describe its steps one by
	 * one lazily (set before trace_lower): their steps cost nothing until
	 * the replay reaches them, and nothing once it is past them */
	bool lazy;
	/* a lazy program's replay keeps every step's times (on disk) for the
	 * outputs that list steps (trace_results_time) */
	bool keep_times;
	struct trace_lazy *lz;	/* in program order */
	size_t nlz, lz_cap;
	uint32_t *deps;
	size_t ndeps, deps_cap;
	size_t njoins;		/* TS_JOIN steps among nsteps: reports count the others */
	/* per trace op: its steps are [op_first[i], op_first[i] + op_nsteps[i]) */
	uint32_t *op_first, *op_nsteps;
	/* per collective op: how many chunks its buffer is cut into (reduction check) */
	uint32_t *op_nchunks;
	/* trace_lower refuses a trace whose steps would take more than this
	 * (trace_lower_estimate); 0 = trace_mem_budget_default(). Kept by
	 * trace_program_free. */
	uint64_t max_bytes;
	/* the replays that hold its steps at once on this machine (a
	 * partitioned run has one a partition, each with every step: the
	 * threads of this process, or the MPI processes beside it):
	 * max_bytes, or half the memory, is theirs together; 0 means 1.
	 * Kept by trace_program_free. */
	uint32_t replays;
};

/*
 * What one stored step costs from its lowering to the report: the step
 * (48) and about three dependencies (12), its times (struct
 * trace_step_time, 32, when the program is not lazy), the replay's list
 * of the steps waiting for it (4) and its record while it is in flight
 * (120, and a 4-byte slot of the window that finds it, shared with the
 * steps around it). 120 bytes, rounded up. A
 * lazily lowered collective stores none: it counts the steps the replay
 * holds of it at once (trace_lower_estimate).
 */
#define TRACE_STEP_BYTES 120u

/* The reaches of a lazily lowered collective its replay is counted to hold
 * at once, unless its algorithm says otherwise (coll_algo.lazy_reaches):
 * a ring's reach is a round, and the 1,024-rank ring held 16.5 rounds at
 * most (its ranks' progress spreads out). */
#define TRACE_LAZY_REACHES 24u

/*
 * The steps trace_lower would make, counted without making them: one per
 * send and compute, none for a recv, each collective's exact count from its
 * algorithm (coll_algo.nsteps; the few join steps a member may add are left
 * out). *bytes = steps x TRACE_STEP_BYTES. *big is the op with the most
 * steps (UINT32_MAX if none has any), *big_steps its count. An op lowering
 * would refuse counts 0. `lazy` (trace_program.lazy): a collective lowered
 * lazily counts the reaches of it its replay holds (TRACE_LAZY_REACHES
 * or its algorithm's lazy_reaches), at most all its steps.
 */
void trace_lower_estimate(const struct trace *t, bool lazy, uint64_t *steps, uint64_t *bytes,
			  uint32_t *big, uint64_t *big_steps);
/* Half of the memory this process may use: the machine's RAM, or less where
 * RLIMIT_AS, RLIMIT_DATA or a cgroup (memory.max) allows less. */
uint64_t trace_mem_budget_default(void);

/*
 * Step s of the program, stored or lazy: the step, and its dependencies in
 * *deps (pointing into the program, or into buf, which has room for
 * TRACE_STEP_MAXDEPS). Lazy steps are made in `tmp`. NULL when s is out
 * of range.
 */
#define TRACE_STEP_MAXDEPS 72	/* an NVLS sum waits for every GPU of an NVL72 domain */
const struct trace_step *trace_program_step(const struct trace_program *p, uint32_t s,
					    struct trace_step *tmp, const uint32_t **deps,
					    uint32_t *buf);
/*
 * Step s + m of the fan that step s leads (trace_step.fan > m), whose step
 * is `lead` (trace_program_step's): in tmp, without the algorithm's gen -
 * only its endpoint differs (coll_gstep.fan_tab). Its dependencies are
 * the lead's. lead itself for m = 0.
 */
const struct trace_step *trace_program_fan_step(const struct trace_program *p, uint32_t s,
						const struct trace_step *lead, uint32_t m,
						struct trace_step *tmp);
/*
 * A pass over the program's steps in order (from, from + 1, ...): the
 * steps trace_program_step gives, each made once, the lazy op found by
 * moving on rather than by a search (nccl-tests' 20 iterations of 31
 * sizes are 620 lazy ops), and a fan's steps made from its first (7 in 10
 * of NVLSTree's need no gen). A step returned, and its deps, hold until
 * the next call.
 */
struct trace_walk {
	const struct trace_program *p;
	size_t lz;		/* the first lazy op that does not end before the step */
	struct trace_step tmp, fan;
	const uint32_t *fan_deps;
	uint32_t fan_s, fan_end;
	uint32_t buf[TRACE_STEP_MAXDEPS];
};
void trace_walk_init(struct trace_walk *w, const struct trace_program *p, uint32_t from);
const struct trace_step *trace_walk_step(struct trace_walk *w, uint32_t s, const uint32_t **deps);
/* The lazy op whose steps include s, or NULL (a stored step). */
const struct trace_lazy *trace_program_lazy(const struct trace_program *p, uint32_t s);
/* Where stored step s is in p->steps (s itself when nothing is lazy). */
uint32_t trace_program_stored(const struct trace_program *p, uint32_t s);

void trace_program_init(struct trace_program *p, const struct trace *t);
void trace_program_free(struct trace_program *p);
/* Append a step; returns its index or -1 (out of memory). */
int trace_program_add(struct trace_program *p, const struct trace_step *s,
		      const uint32_t *deps, uint32_t ndeps);
/* Lower every op of the trace (collectives through coll_lower()). Refused
 * up front, naming the file and the estimate, when the steps would take
 * more than p->max_bytes. */
int trace_lower(const struct trace *t, struct trace_program *p, struct sim_diag *d);

/*
 * A collective algorithm: appends the steps of collective op `op_index`
 * (all of them, on every member) to p. `entry[r]` is, for each member r,
 * the step index the collective must wait for on that rank (UINT32_MAX:
 * none); every step member r *sends* depends on it, directly or through
 * earlier steps (a member starts when its own dependencies are done, as the
 * trace format's per-rank order says: no barrier before a collective).
 * Implemented in coll_*.c.
 */
int coll_lower(const struct trace *t, uint32_t op_index, struct trace_program *p,
	       const uint32_t *entry, struct sim_diag *d);
/* Every step of op_index runs on its members after their entry; after the
 * last step on each rank the op is done there. The reduction check: run the
 * program symbolically and verify each rank ends with what the collective
 * promises (every contribution exactly once for allreduce, ...). */
int coll_check(const struct trace_program *p, uint32_t op_index, struct sim_diag *d);
/* Print the lowered steps of one op so a student can follow the algorithm. */
void trace_explain(const struct trace_program *p, uint32_t op_index, FILE *out);

/* nccl-tests' bus bandwidth factor: busbw = algbw x factor (numbers.md). */
double coll_busbw_factor(enum trace_coll c, uint32_t nranks);

#endif
