/* SPDX-License-Identifier: MIT */
/*
 * bench_par.c - the partitioned engine (sim/sim_par.c) alone, on a model
 * shaped like a fabric: N nodes on a ring, each a component that keeps a
 * few packets moving. An event costs the handler a fixed amount of work
 * (-w: rounds of a hash, about what a port's handler spends; 0 for the
 * engine alone); a packet reaches the next node one look-ahead (a cable)
 * after its serialisation. Partitions are
 * blocks of consecutive nodes, so each cut is one link each way, as a
 * fabric cut by pods.
 *
 * For 1 list and for each thread count it prints the wall time, the
 * speed-up over the one list, the windows, the events a window holds,
 * the messages between partitions, and the time the partitions waited
 * for each other at the windows' ends; and it checks that every run gave
 * the same result (each node's hash of the events it saw, in order).
 * With -s S the run stops (with the look-ahead as its lag) once every
 * node has had S events: the one list sees it in a shared count, the
 * partitions only in the sum of theirs (sim_par_set_hook), as a fabric's
 * last message finishing. With -a the threads synchronise by null
 * messages (sim_par_set_async) instead of windows: the rounds column
 * then counts partition 0's rounds that ran events.
 *
 * Reported figures; docs/performance.md says what they mean for a
 * fabric. Built a second time as bench_par_mpi (one partition an MPI
 * process), which ctest runs small under mpirun to check that processes
 * give the one list's result:
 *   build/bench/bench_par                        # 4,096 nodes, 1 and 2 threads
 *   build/bench/bench_par -n 65536 -k 200 -t 1,2,4 -w 100
 *   mpirun -np 2 build/bench/bench_par_mpi -n 16384 -k 250
 */
#include "sim/sim.h"
#include "sim/sim_par.h"
#include "sim/sim_rng.h"

#ifdef BENCH_PAR_MPI
#include "sim/sim_par_mpi.h"
#endif

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct bnode {
	uint64_t hash, seen;
	uint32_t id, left;
	struct sim_rng rng;
	struct bmodel *m;
	sim_time_t at_s;	/* when it had its S-th event (-s) */
	char pad[64 - 56];	/* one line a node, as a port's hot line */
};

struct cut;

struct bmodel {
	struct bnode *node;
	uint32_t n, comp0, work;
	sim_time_t la, ser;
	uint64_t s;		/* -s: stop once every node had s events (0: no) */
	uint32_t at_s_nodes;	/* the one list's shared count of those */
	const struct cut *cut;	/* partitioned: the hook counts them */
};

static uint64_t mix(uint64_t h, uint64_t a)
{
	h ^= a + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static void node_fn(struct sim_engine *eng, void *ctx, uint32_t arg)
{
	struct bnode *nd = ctx;
	struct bmodel *m = nd->m;
	uint64_t h = mix(nd->hash, sim_now(eng) ^ arg);

	for (uint32_t i = 0; i < m->work; i++)	/* the handler's own work */
		h = mix(h, i);
	nd->hash = h;
	nd->seen++;
	if (m->s && nd->seen == m->s) {
		nd->at_s = sim_now(eng);
		if (!m->cut && ++m->at_s_nodes == m->n)
			sim_stop(eng);
	}
	if (arg & 1 || !nd->left)
		return;	/* a packet arrived, or the node is done */
	nd->left--;
	/* its transmitter again after a packet's serialisation (jittered),
	 * and a quarter of the time a packet to the next node, whose arrival
	 * is one event there (arg's low bit) */
	sim_schedule_in(eng, m->ser + sim_rng_below(&nd->rng, m->ser / 4 + 1), m->comp0 + nd->id,
			arg + 2);
	if (sim_rng_below(&nd->rng, 4) == 0)
		sim_schedule_in(eng, m->la + m->ser, m->comp0 + (nd->id + 1) % m->n, arg | 1);
}

struct cut {
	uint32_t n, parts;
};

static uint32_t block_owner(void *ctx, uint32_t comp)
{
	const struct cut *c = ctx;

	return (uint32_t)((uint64_t)(comp & 0xffffff) * c->parts / c->n);
}

/* -s in a partitioned run: partition k's nodes past s events, and the
 * last time one got there; the stop once all are, as the one list's. */
static void hook_values(void *ctx, uint32_t k, uint64_t sum[SIM_PAR_SUMS], uint64_t *max)
{
	const struct bmodel *m = ctx;

	memset(sum, 0, SIM_PAR_SUMS * sizeof(*sum));
	*max = 0;
	for (uint32_t i = 0; i < m->n; i++)
		if (block_owner((void *)m->cut, i) == k && m->node[i].seen >= m->s) {
			sum[0]++;
			if (m->node[i].at_s > *max)
				*max = m->node[i].at_s;
		}
}

static sim_time_t hook_stop(void *ctx, const uint64_t sum[SIM_PAR_SUMS], uint64_t max)
{
	const struct bmodel *m = ctx;

	return sum[0] == m->n ? max + m->la : SIM_TIME_MAX;
}

static int set_hook(struct sim_par *p, struct bmodel *m, const struct cut *c)
{
	const struct sim_par_hook h = { hook_values, hook_stop, m };

	m->cut = c;
	return m->s ? sim_par_set_hook(p, &h) : 0;
}

static double wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int build(struct sim_engine *eng, struct bmodel *m, uint32_t k)
{
	if (sim_init(eng))
		return -1;
	m->cut = NULL;
	m->at_s_nodes = 0;
	m->comp0 = (uint32_t)sim_register_range(eng, node_fn, m->node, sizeof(*m->node), m->n, "node");
	for (uint32_t i = 0; i < m->n; i++) {
		struct bnode *nd = &m->node[i];

		*nd = (struct bnode){ .id = i, .left = k, .m = m };
		sim_rng_init(&nd->rng, 1, i);
		if (sim_schedule_at(eng, sim_rng_below(&nd->rng, m->ser), m->comp0 + i, i << 8))
			return -1;
	}
	return 0;
}

static uint64_t digest(const struct bmodel *m)
{
	uint64_t h = 0;

	for (uint32_t i = 0; i < m->n; i++)
		h = mix(h, m->node[i].hash ^ m->node[i].seen);
	return h;
}

#ifdef BENCH_PAR_MPI
/*
 * One partition a process (mpirun -np N bench_par_mpi): every process
 * runs the one list too (the reference), then its partition; each node's
 * hash and count come from the process that owns it (the others' are
 * zero, so a sum gathers them). Rank 0 prints; all exit 1 if it differs.
 */
static int run_mpi(struct bmodel *m, uint32_t k)
{
	struct sim_engine eng;
	struct sim_par p;
	int size, rank;

	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (build(&eng, m, k))
		return 1;
	eng.lag = m->la;
	double t0 = wall();

	sim_run(&eng);
	double one = wall() - t0;
	uint64_t ref = digest(m), events = eng.events;

	sim_fini(&eng);
	struct cut cu = { m->n, (uint32_t)size };

	if (build(&eng, m, k) || sim_par_mpi_init(&p, &eng, m->la, block_owner, &cu, MPI_COMM_WORLD) ||
	    set_hook(&p, m, &cu)) {
		fprintf(stderr, "bench_par: %s\n", p.why);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = wall();
	if (sim_par_mpi_run(&p, MPI_COMM_WORLD)) {
		fprintf(stderr, "bench_par: rank %d: %s\n", rank, p.why);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	double w = wall() - t0;
	uint64_t *mine = calloc(2 * (size_t)m->n, sizeof(uint64_t));
	uint64_t *all = calloc(2 * (size_t)m->n, sizeof(uint64_t));
	uint64_t sent = p.part[rank].sent, sent_all = 0;

	if (!mine || !all)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (uint32_t i = 0; i < m->n; i++)
		if (block_owner(&cu, i) == (uint32_t)rank) {
			mine[2 * i] = m->node[i].hash;
			mine[2 * i + 1] = m->node[i].seen;
		}
	MPI_Allreduce(mine, all, 2 * (int)m->n, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
	MPI_Allreduce(&sent, &sent_all, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
	for (uint32_t i = 0; i < m->n; i++) {
		m->node[i].hash = all[2 * i];
		m->node[i].seen = all[2 * i + 1];
	}
	uint64_t got = digest(m);
	int bad = got != ref || eng.events != events;

	if (rank == 0) {
		printf("%-8s %9.3f %8s %9s %12s %11s %9s %016llx\n", "one list", one, "1.00", "-", "-", "-",
		       "-", (unsigned long long)ref);
		printf("%-8s %9.3f %8.2f %9llu %12.1f %11llu %9.3f %016llx%s\n",
		       size == 1 ? "1 rank" : size == 2 ? "2 ranks" : "ranks", w, one / w,
		       (unsigned long long)p.windows, (double)eng.events / (double)p.windows,
		       (unsigned long long)sent_all, p.part[rank].wait_s, (unsigned long long)got,
		       bad ? "  DIFFERS" : "");
	}
	free(mine);
	free(all);
	sim_par_fini(&p);
	sim_fini(&eng);
	return bad;
}
#endif

int main(int argc, char **argv)
{
	struct bmodel m = { .n = 4096, .work = 40, .la = 15 * SIM_NS, .ser = 165 * SIM_NS };
	uint32_t k = 1000;
	char threads[64] = "1,2";
	bool async = false;
	int c;

	while ((c = getopt(argc, argv, "n:k:w:t:s:ah")) != -1) {
		switch (c) {
		case 'a': async = true; break;
		case 's': m.s = strtoull(optarg, NULL, 0); break;
		case 'n': m.n = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'k': k = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'w': m.work = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 't': snprintf(threads, sizeof(threads), "%s", optarg); break;
		default:
			fprintf(stderr, "usage: bench_par [-n nodes] [-k events per node] [-w work per event] "
					"[-t 1,2,...] [-s stop once every node had this many events] "
					"[-a: null messages, not windows]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (m.n < 2 || m.n >= 1u << 24 || !k) {
		fprintf(stderr, "bench_par: want 2 <= n < 2^24 nodes and k >= 1\n");
		return 2;
	}
	m.node = aligned_alloc(64, (size_t)m.n * sizeof(*m.node));
	if (!m.node)
		return 1;
#ifdef BENCH_PAR_MPI
	MPI_Init(&argc, &argv);
	int mrank;

	MPI_Comm_rank(MPI_COMM_WORLD, &mrank);
	if (mrank == 0) {
		printf("%u nodes on a ring, %u events each, handler work %u, look-ahead %llu ps, "
		       "serialisation %llu ps; MPI processes\n", m.n, k, m.work,
		       (unsigned long long)m.la, (unsigned long long)m.ser);
		printf("%-8s %9s %8s %9s %12s %11s %9s %s\n", "", "wall s", "speed-up", "windows",
		       "events/win", "messages", "wait s", "result");
	}
	int mbad = run_mpi(&m, k);

	free(m.node);
	MPI_Finalize();
	return mbad;
#endif
	printf("%u nodes on a ring, %u events each, handler work %u, look-ahead %llu ps, "
	       "serialisation %llu ps%s\n", m.n, k, m.work, (unsigned long long)m.la,
	       (unsigned long long)m.ser, async ? "; null messages" : "");
	printf("%-8s %9s %8s %9s %12s %11s %9s %s\n", "threads", "wall s", "speed-up",
	       async ? "rounds" : "windows",
	       "events/win", "messages", "wait s", "result");

	/* one list */
	struct sim_engine eng;

	if (build(&eng, &m, k))
		return 1;
	eng.lag = m.la;
	double t0 = wall();

	sim_run(&eng);
	double one = wall() - t0;
	uint64_t ref = digest(&m), events = eng.events;

	printf("%-8s %9.3f %8s %9s %12s %11s %9s %016llx\n", "one list", one, "1.00", "-", "-", "-",
	       "-", (unsigned long long)ref);
	sim_fini(&eng);
	int bad = 0;

	for (char *s = threads, *e; *s; s = *e ? e + 1 : e) {
		uint32_t t = (uint32_t)strtoul(s, &e, 10);
		struct sim_par p;
		struct cut cu = { m.n, t };

		if (!t || (*e && *e != ',')) {
			fprintf(stderr, "bench_par: -t wants thread counts like 1,2,4\n");
			return 2;
		}
		if (build(&eng, &m, k) || sim_par_init(&p, &eng, t, m.la, block_owner, &cu) ||
		    set_hook(&p, &m, &cu) || sim_par_set_async(&p, async)) {
			fprintf(stderr, "bench_par: %s\n", p.why);
			return 1;
		}
		t0 = wall();
		if (sim_par_run(&p)) {
			fprintf(stderr, "bench_par: %s\n", p.why);
			return 1;
		}
		double w = wall() - t0, wait = 0;
		uint64_t sent = 0, got = digest(&m);

		for (uint32_t q = 0; q < t; q++) {
			sent += p.part[q].sent;
			wait += p.part[q].wait_s;
		}
		printf("%-8u %9.3f %8.2f %9llu %12.1f %11llu %9.3f %016llx%s\n", t, w, one / w,
		       (unsigned long long)p.windows, (double)eng.events / (double)p.windows,
		       (unsigned long long)sent, wait / t, (unsigned long long)got,
		       got == ref && eng.events == events ? "" : "  DIFFERS");
		bad |= got != ref || eng.events != events;
		sim_par_fini(&p);
		sim_fini(&eng);
	}
	free(m.node);
	return bad;
}
