/* SPDX-License-Identifier: MIT */
/*
 * coll.h - collective algorithms, inside traces/: what every coll_*.c file
 * shares, and the few helpers the rest of ibfab may want beyond trace.h
 * (the algorithm a collective resolves to, the chunks a step carries).
 *
 * A collective op is lowered into TS_XFER steps by one entry of a table of
 * algorithms (struct coll_algo, one per (collective, algorithm) pair, an
 * ops table with designated initialisers: docs/architecture.md). The table is
 * in coll.c; the algorithms are in coll_ring.c, coll_tree.c, coll_hd.c,
 * coll_alltoall.c, coll_bruck.c and coll_barrier.c; the reduction check in
 * coll_check.c; --explain in coll_explain.c. docs/collectives.md explains
 * each algorithm with its closed-form time.
 *
 * The buffer model, which the reduction check relies on
 * -----------------------------------------------------
 * A collective of S bytes (nccl-tests' "size") has its buffer cut into K
 * chunks (program.op_nchunks[op]); chunk c holds S/K bytes, the first S % K
 * chunks one byte more. Every algorithm numbers its chunks so that
 *
 *	c = (h * B + j) * P + q
 *
 * with h the channel (0..Ch-1), j the block (0..B-1: a ring segment, a
 * tree half, a rank's part of an all-gather...), q the pipeline piece
 * (0..P-1, P = op.chunks). For allgather, reducescatter and alltoall, B is
 * the member count N and block j belongs to member j (its contribution, its
 * result, or the data it sends), so the check knows who owns what.
 *
 * A step carries one chunk, or a run of consecutive chunks (the halves of
 * recursive halving, the blocks a Bruck round forwards): trace_step.chunk
 * then encodes (first, count) as first + (count - 1) * K, so a one-chunk
 * step reads as a plain chunk number; a run wraps modulo K. Use
 * coll_step_chunks() to decode. K is at most COLL_MAX_RANGE_CHUNKS for the
 * algorithms that send runs, so the encoding fits 32 bits.
 *
 * Entries. Every member of a collective starts after its own entry steps
 * (a list per member: trace_lower passes what that member waits for); an
 * algorithm makes each step a member *sends* wait for that member's entry,
 * directly or through an earlier step the member sent. A transfer into a
 * member that has not entered yet may land (NCCL's FIFO buffers take it
 * ahead); trace_lower counts the member's part done only after its entry
 * too, so the reduction into a late root still waits for the root.
 */
#ifndef IBFAB_COLL_H
#define IBFAB_COLL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "traces/trace.h"

#define COLL_NONE UINT32_MAX

/* Chunk runs are encoded in 32 bits as first + (count - 1) * K: K <= 2^16. */
#define COLL_MAX_RANGE_CHUNKS 65536u
/* A stored collective lowered into more transfers than this is refused,
 * so that a typo cannot ask for terabytes: a stored step costs about 100
 * bytes from its lowering to the report (trace.h, TRACE_STEP_BYTES), so
 * 2^28 steps is about 27 GB; 128 ranks x 8 channels x 4 chunks is 2^20.
 * A collective lowered lazily stores none: it may number up to 2^31 - 1
 * (a ring allreduce over 32,768 ranks is 2^31 - 2^16). */
#define COLL_MAX_STEPS (1ull << 28)
/* The reduction check keeps one bit per (rank, chunk, contribution): it
 * refuses to run past this much memory rather than thrash. */
#define COLL_CHECK_MAX_BYTES (1ull << 30)

struct coll_algo;

/* One collective being lowered, checked or explained. */
struct coll_ctx {
	const struct trace *t;
	const struct trace_op *op;
	uint32_t op_index;
	struct trace_program *p;
	const struct coll_algo *algo;
	const int32_t *ranks;	/* members, in the communicator's order */
	uint32_t n;		/* N, the member count */
	uint32_t root;		/* broadcast/reduce: the root's member index */
	uint32_t channels;	/* Ch >= 1 */
	uint32_t pieces;	/* P >= 1 (op.chunks) */
	uint32_t nchunks;	/* K */
	uint64_t bytes;		/* S (0 for a barrier) */
	uint64_t chunk_bytes, chunk_rem;	/* S / K, S % K */
	/* entry steps of member i: esteps[eoff[i] .. eoff[i + 1]) */
	const uint32_t *eoff, *esteps;
	struct sim_diag *d;
	/* the dependency list being built for the next step (coll_dep*) */
	uint32_t *dv;
	uint32_t dn, dcap;
	bool oom;
	/*
	 * Endpoints besides the members, for an algorithm whose data passes
	 * through the fabric (collnet: SHARP aggregation nodes). Endpoint
	 * n + i is xranks[i], a trace endpoint >= nranks (trace.h); up[e] is
	 * the endpoint above e in the algorithm's tree (COLL_NONE at its
	 * root) and height[e] its height (members 0), for e < n + nx. Filled
	 * by the algorithm's endpoints(), freed by coll_ctx_fini().
	 */
	uint32_t nx;
	int32_t *xranks;
	uint32_t *up, *height;
	/*
	 * Rings on GPU servers (trace.rank_group): channel h's ring visits
	 * each run of consecutive members that share an NVLink domain
	 * rotated by h, so that every channel enters and leaves a server on
	 * a GPU of its own (and, with PXN, on its own rail: NCCL's rings
	 * each use one NIC). rot[2i], rot[2i + 1]: the run of position i
	 * (its first position, its length); NULL: every channel follows the
	 * communicator's order. coll_ring_member() applies it.
	 */
	uint32_t *rot;
	/* An algorithm's own tables for its gen (NVLS: the members of each
	 * domain and the trees between them): ntab entries, copied into a
	 * lazy op's context, freed by coll_ctx_fini(). */
	uint32_t *tab;
	uint32_t ntab;
};

/* The member at position i of channel h's ring (coll_ctx.rot). */
static inline uint32_t coll_ring_member(const struct coll_ctx *c, uint32_t h, uint32_t i)
{
	if (!c->rot)
		return i;
	return c->rot[2 * i] + (i - c->rot[2 * i] + h) % c->rot[2 * i + 1];
}

/* Where member m stands in channel h's ring: coll_ring_member's inverse. */
static inline uint32_t coll_ring_pos(const struct coll_ctx *c, uint32_t h, uint32_t m)
{
	if (!c->rot)
		return m;
	const uint32_t s = c->rot[2 * m], len = c->rot[2 * m + 1];

	return s + (m - s + len - h % len) % len;
}

/*
 * Step k of a collective, as an algorithm that can describe each step by
 * itself gives it (coll_algo.gen): what coll_emit() takes, and what it
 * waits for - member `from`'s entry, or earlier steps of the op (by k).
 */
struct coll_gstep {
	uint32_t from, to, phase, first, count;
	enum trace_data data;
	bool entry;
	uint32_t ndeps;
	uint64_t deps[4];
	/* and a run of consecutive steps [run, run + nrun): an NVLS sum's
	 * reads, as many as its domain has GPUs (nrun is 0 unless gen sets it) */
	uint64_t run;
	uint32_t nrun;
	/* Optional (0 unless gen sets it): this step leads a fan, itself and
	 * the fan - 1 steps after it, which wait for the same steps as it
	 * (so they start together), none of them far, and each step of the
	 * op waits for all of them or none (an NVSwitch's multicast to a
	 * domain's GPUs, which nothing waits for; the reads of a head's
	 * ld_reduce, which its sum waits for). A lazy replay keeps one
	 * record for them. At most 255; coll_lower_gen checks the rest. */
	uint32_t fan;
	/* A fan's step m differs from its first in one endpoint alone:
	 * member c->tab[fan_tab + m] is its source (its destination with
	 * fan_to) - so the replay has a step of the fan from the first's
	 * without gen (coll_fan_step; coll_lower_gen checks it). */
	uint32_t fan_tab;
	bool fan_to;
};

struct coll_algo {
	const char *name;	/* as --explain names it: "ring", "double binary tree" */
	enum trace_coll coll;
	enum trace_algo algo;	/* the algo= name it answers to (AUTO: none but auto) */
	bool dflt;		/* the collective's default: what algo=auto means */
	bool pipelines;		/* honours chunks > 1 */
	bool multichannel;	/* honours channels > 1 */
	bool runs;		/* steps carry runs of chunks (K <= COLL_MAX_RANGE_CHUNKS) */
	/* endpoints besides the members (c->nx ...), or NULL: none. 0 or -1 with c->d set */
	int (*endpoints)(struct coll_ctx *c);
	uint32_t (*nchunks)(const struct coll_ctx *c);	/* K */
	uint64_t (*nsteps)(const struct coll_ctx *c);	/* transfers it emits, exactly */
	int (*lower)(struct coll_ctx *c);
	/*
	 * Optional: step k (0 <= k < nsteps) by itself, for lazy lowering
	 * (trace_program.lazy), and reach: no step waits for one more than
	 * reach steps before it. A step waits for its member's entry or for
	 * earlier steps of the op, not both (coll_lower_gen refuses a step
	 * that does). An algorithm with gen lowers eagerly with
	 * coll_lower_gen, so both ways make the same steps.
	 */
	void (*gen)(const struct coll_ctx *c, uint64_t k, struct coll_gstep *g);
	uint64_t (*reach)(const struct coll_ctx *c);
	/*
	 * Optional, with reach: a shorter reach that holds for every step
	 * but those far() names (whose dependents may lie a whole reach
	 * after them), provided every step that waits for a far one also
	 * waits for one within near_reach. The replay then makes steps
	 * near_reach ahead instead of reach and keeps a finished far step's
	 * record until the steps waiting for it are made: NVLS's window
	 * (a read waits for the store W pieces back) is most of its reach,
	 * and its other waits are one piece back. coll_lower_gen checks
	 * both claims on every step it lowers. NULL: reach for every step.
	 */
	uint64_t (*near_reach)(const struct coll_ctx *c);
	bool (*far)(const struct coll_ctx *c, uint64_t k);
	/* Optional, with gen: whether a lazy op may take gen's steps (each
	 * waits for at most TRACE_STEP_MAXDEPS others); NULL: always. */
	bool (*gen_ok)(const struct coll_ctx *c);
	/* Optional, with gen: the reaches of a lazy op its replay is counted
	 * to hold at once (trace_lower_estimate); 0: TRACE_LAZY_REACHES, what
	 * a ring needs, whose ranks drift many rounds apart. The replay
	 * refuses to hold more than sim.max_memory allows all the same. */
	uint32_t lazy_reaches;
	/* a name for phase (the algorithm's step number) in --explain */
	const char *(*phase_name)(const struct coll_ctx *c, uint32_t phase);
	/* the closed form, for --explain's header (docs/collectives.md) */
	void (*describe)(const struct coll_ctx *c, FILE *out);
};

/* Whether the algorithm can describe each of op c's steps by itself. */
static inline bool coll_gen_ok(const struct coll_ctx *c)
{
	return c->algo->gen && (!c->algo->gen_ok || c->algo->gen_ok(c));
}

/* Whether op c is lowered lazily: the program asks for it, and gen can. */
static inline bool coll_lazy(const struct coll_ctx *c)
{
	return c->p && c->p->lazy && coll_gen_ok(c);
}

/* ---- for the rest of ibfab ------------------------------------------------- */

/* The algorithm `algo` means for collective `coll` (AUTO resolved), or NULL
 * when the pair is not supported. */
const struct coll_algo *coll_algo_find(enum trace_coll coll, enum trace_algo algo);
/* Its name for reports ("ring", "double binary tree", "dissemination"),
 * "?" when unsupported. */
const char *coll_algo_label(enum trace_coll coll, enum trace_algo algo);
/* The name reports give an op's algorithm: its label, but for NVLS over
 * several NVLink domains "nvls tree (NVLSTree)" or "nvls + SHARP (NVLS
 * with CollNet)" (coll_nvls_form). */
const char *coll_op_label(const struct trace *t, const struct trace_op *op);
/*
 * How an NVLS op (algo nvls or nvlstree) runs (coll_nvls.c): in one NVLink
 * domain; across domains as NCCL's NVLSTree (a double binary tree between
 * the servers' heads); or, for algo=nvls when the job has a SHARP tree and
 * CollNet is on (ib.sharp=on, or the op's NCCL_COLLNET_ENABLE=1), as
 * NCCL's NVLS across servers, each head's slice reduced in the InfiniBand
 * switches.
 */
enum coll_nvls_form { COLL_NVLS_ONE, COLL_NVLS_TREE, COLL_NVLS_SHARP };
enum coll_nvls_form coll_nvls_form(const struct trace *t, const struct trace_op *op);
/* The chunks step s carries: first, and how many (a run may wrap modulo
 * program.op_nchunks[op]). A step of no collective: *first = chunk, 1. */
void coll_step_chunks(const struct trace_program *p, uint32_t s, uint32_t *first,
		      uint32_t *count);
/* Bytes of chunks [first, first + count) (modulo K) of an S-byte buffer. */
uint64_t coll_run_bytes(uint64_t S, uint32_t K, uint32_t first, uint32_t count);

/*
 * Per member of a collective: whether its entries are every exit, on it,
 * of one earlier lazy collective (op[i], UINT32_MAX not), and how many
 * transfers of that collective involve it (cnt[i]): a join may then count
 * those as they finish instead of listing the exits (trace_step.counted).
 */
struct coll_whole {
	const uint32_t *op, *cnt;
};

/*
 * coll_lower() with a list of entry steps per member: member i (the i-th
 * of the communicator) waits for esteps[eoff[i] .. eoff[i + 1]). eoff may
 * be NULL (no entries). trace_lower() uses this: a member's previous op may
 * end in several steps (a collective ends on each rank with one per chunk
 * flow). w may be NULL.
 */
int coll_lower_entries(const struct trace *t, uint32_t op_index, struct trace_program *p,
		       const uint32_t *eoff, const uint32_t *esteps, const struct coll_whole *w,
		       struct sim_diag *d);

/* Make room for `steps` more steps and `deps` more dependencies. 0 or -1. */
int trace_program_reserve(struct trace_program *p, size_t steps, size_t deps);
/* trace_program_add(), inline for the algorithms' inner loops (a ring
 * appends a million steps): only earlier steps as deps, indexes that fit
 * uint32_t with UINT32_MAX for "none", and an int return. */
static inline int trace_program_append(struct trace_program *p, const struct trace_step *s,
				       const uint32_t *deps, uint32_t ndeps)
{
	struct trace_step *st;

	if (p->nsteps >= INT32_MAX || p->ndeps + ndeps >= UINT32_MAX)
		return -1;
	for (uint32_t k = 0; k < ndeps; k++)
		if (deps[k] >= p->nsteps)
			return -1;
	if ((p->nstored >= p->steps_cap || p->ndeps + ndeps > p->deps_cap) &&
	    trace_program_reserve(p, 1, ndeps))
		return -1;
	st = &p->steps[p->nstored++];
	*st = *s;
	st->dep_off = (uint32_t)p->ndeps;
	st->ndeps = ndeps;
	for (uint32_t k = 0; k < ndeps; k++)
		p->deps[p->ndeps + k] = deps[k];
	p->ndeps += ndeps;
	return (int)p->nsteps++;
}

/* Allocate the per-op arrays (op_first, op_nsteps, op_nchunks) for
 * p->trace's ops if not yet done; every op starts with no steps. 0 or -1. */
int trace_program_ops_alloc(struct trace_program *p);

/*
 * NCCL's tuning model on GPU servers (coll_tune.c): the time in us it
 * estimates for `algo` (ring; for an allreduce also tree, nvls, nvlstree
 * and, with SHARP, collnet) with `proto` of collective `coll` of `bytes`
 * over nranks GPUs on nnodes servers, -1 for a pair NCCL would not run
 * (LL128 where it is off, a tree other than an allreduce's, NVLS across
 * servers or CollNet without SHARP); and the least of them
 * (TRACE_ALGO_AUTO: any of them; protos: the protocols allowed, bit per
 * enum trace_proto, 0 = all). An algorithm the model has no figures for
 * (ibfab's own) comes back as given with TRACE_PROTO_AUTO; all-to-all's
 * auto is direct.
 */
struct coll_tune_choice {
	enum trace_algo algo;
	enum trace_proto proto;
	double us;		/* its time, -1 when nothing was estimated */
};
double coll_tune_time(const struct trace_tune *tu, enum trace_coll coll, enum trace_algo algo,
		      enum trace_proto proto, uint32_t nranks, uint32_t nnodes, uint64_t bytes);
struct coll_tune_choice coll_tune_pick(const struct trace_tune *tu, enum trace_coll coll,
				       enum trace_algo algo, uint32_t nranks, uint32_t nnodes,
				       uint64_t bytes, uint8_t protos, uint16_t algos);
/* NCCL's algorithm bandwidth for NVLS + SHARP (NVLS across nnodes
 * domains with CollNet), GB/s; 0 where it has none. */
double coll_tune_nvls_sharp_algbw(const struct trace_tune *tu, uint32_t nranks, uint32_t nnodes);

/* ---- for the algorithms ----------------------------------------------------- */

/* Fill c for op_index (n, K, S, the algorithm...); 0, or -1 with c->d set
 * (not a collective, unsupported pair, bad option). Lowering, the check and
 * --explain all start here, so they agree on the buffer model. */
int coll_ctx_init(struct coll_ctx *c, const struct trace *t, uint32_t op_index,
		  struct trace_program *p, struct sim_diag *d);
void coll_ctx_fini(struct coll_ctx *c);

/* Start a new dependency list; add one step (COLL_NONE is skipped); add
 * member i's entry steps. */
static inline void coll_dep_reset(struct coll_ctx *c)
{
	c->dn = 0;
}
void coll_dep_grow(struct coll_ctx *c, uint32_t step);
static inline void coll_dep(struct coll_ctx *c, uint32_t step)
{
	if (step == COLL_NONE)
		return;
	if (c->dn < c->dcap)	/* inline: a ring step adds two, a million times */
		c->dv[c->dn++] = step;
	else
		coll_dep_grow(c, step);
}
void coll_dep_entry(struct coll_ctx *c, uint32_t member);

/*
 * Append a transfer from member `from` to member `to` (an endpoint n + i:
 * the algorithm's extra endpoint i) carrying chunks
 * [first, first + count) (bytes from the buffer model), doing `data` to the
 * receiver's copy, at the algorithm's step number `phase`, waiting for the
 * dependency list built since coll_dep_reset(). Returns the step index,
 * or COLL_NONE with c->d set.
 */
uint32_t coll_emit(struct coll_ctx *c, uint32_t from, uint32_t to, uint32_t phase,
		   uint32_t first, uint32_t count, enum trace_data data);

/* coll_algo.lower for an algorithm with gen: every step in order. */
int coll_lower_gen(struct coll_ctx *c);
/* The step coll_emit() would append for g (without its dependencies):
 * what a lazy op's step k is. */
void coll_gen_step(const struct coll_ctx *c, const struct coll_gstep *g, struct trace_step *s);

/* A lazy op's step k (its steps start at `first`), its dependencies in
 * *deps (the member's entry list, or buf: TRACE_STEP_MAXDEPS); and the
 * context's release (trace_program_free). */
void coll_lazy_step(const struct coll_ctx *c, uint64_t k, uint32_t first, struct trace_step *s,
		    const uint32_t **deps, uint32_t *buf);
void coll_lazy_free(struct coll_ctx *z);
/* Step m of the fan whose first step is `lead` (its trace_step), in s:
 * as coll_lazy_step would make it (coll_gstep.fan_tab). */
void coll_fan_step(const struct coll_ctx *c, const struct trace_step *lead, uint32_t m,
		   struct trace_step *s);
/* Whether a lazy op's step k may have dependents beyond its near reach
 * (coll_algo.far; false without one). */
bool coll_lazy_far(const struct coll_ctx *c, uint64_t k);

/* NCCL's double binary tree over n positions (coll_tree.c): the parent of
 * position r in tree t (0 or 1), -1 at the root. */
int32_t coll_dtree_parent(uint32_t n, uint32_t t, uint32_t r);

/* floor(log2 x) and ceil(log2 x), x >= 1 */
static inline uint32_t coll_flog2(uint32_t x)
{
	return 31 - (uint32_t)__builtin_clz(x);
}

static inline uint32_t coll_clog2(uint32_t x)
{
	return x <= 1 ? 0 : coll_flog2(x - 1) + 1;
}

/* Print a byte count for a student: "2 MiB" when a binary unit divides it,
 * else "1398101 B". */
const char *coll_fmt_bytes(uint64_t b, char *buf, size_t len);

/* Every algorithm (coll_*.c), in coll.c's registry order; NULL ends it. */
extern const struct coll_algo *const coll_algos[];

#endif
