/* SPDX-License-Identifier: MIT */
/*
 * trace_spill.c - the steps' times of a lazily lowered replay, kept on
 * disk for the outputs that list every step (trace_replay.h,
 * trace_results_time).
 *
 * A lazy program whose outputs list its steps (trace_program.keep_times)
 * keeps each step's start and end in an unlinked temporary file, 16 bytes
 * a step at its index (an 8,192-rank ring: 2.1 GB of disk for its 134M
 * steps, where holding them took as much memory). Steps finish out of
 * order, so a block of SPILL_BLOCK steps stays in memory until all of
 * them have, then goes to the file in one write: the blocks in memory are
 * those the steps in flight touch. Read back a block at a time, in step
 * order, as the outputs are written. Leaves out: the ready time and the
 * critical dependency, which only the stored replay keeps (r->step).
 */
#include "traces/trace_spill.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define SPILL_BLOCK 4096u

struct spill_block {
	uint32_t done;
	sim_time_t t[SPILL_BLOCK][2];
};

struct trace_spill {
	int fd;
	uint64_t nsteps;
	struct spill_block **ring;	/* blocks [lo, hi): NULL not begun, &written written */
	uint64_t lo, hi, cap;
	sim_time_t (*rbuf)[2];		/* the block read last */
	uint64_t rblock;
};

static struct spill_block written;	/* the mark of a block in the file */

int trace_spill_open(struct trace_results *r, uint64_t nsteps)
{
	struct trace_spill *sp = calloc(1, sizeof(*sp));
	FILE *t;

	if (!sp)
		return -1;
	r->spill = sp;
	sp->fd = -1;
	sp->nsteps = nsteps;
	sp->rblock = UINT64_MAX;
	if (!(t = tmpfile()))
		return -1;
	sp->fd = dup(fileno(t));
	fclose(t);	/* the file is unlinked; the descriptor keeps it */
	return sp->fd >= 0 ? 0 : -1;
}

void trace_spill_close(struct trace_spill *sp)
{
	if (!sp)
		return;
	for (uint64_t b = sp->lo; b < sp->hi; b++) {
		struct spill_block *x = sp->ring[b & (sp->cap - 1)];

		if (x != &written)
			free(x);
	}
	free(sp->ring);
	free(sp->rbuf);
	if (sp->fd >= 0)
		close(sp->fd);
	free(sp);
}

static uint32_t spill_block_len(const struct trace_spill *sp, uint64_t b)
{
	uint64_t n = sp->nsteps - b * SPILL_BLOCK;

	return n < SPILL_BLOCK ? (uint32_t)n : SPILL_BLOCK;
}

int trace_spill_put(struct trace_spill *sp, uint64_t s, sim_time_t start, sim_time_t end)
{
	uint64_t b = s / SPILL_BLOCK;
	struct spill_block **x;

	if (b >= sp->hi) {	/* the ring reaches block b */
		if (b - sp->lo >= sp->cap) {
			uint64_t cap = sp->cap ? 2 * sp->cap : 16;
			struct spill_block **v;

			while (b - sp->lo >= cap)
				cap *= 2;
			v = calloc(cap, sizeof(*v));
			if (!v)
				return -1;
			for (uint64_t k = sp->lo; k < sp->hi; k++)
				v[k & (cap - 1)] = sp->ring[k & (sp->cap - 1)];
			free(sp->ring);
			sp->ring = v;
			sp->cap = cap;
		}
		for (uint64_t k = sp->hi; k <= b; k++)
			sp->ring[k & (sp->cap - 1)] = NULL;
		sp->hi = b + 1;
	}
	x = &sp->ring[b & (sp->cap - 1)];
	if (!*x && !(*x = calloc(1, sizeof(**x))))
		return -1;
	(*x)->t[s % SPILL_BLOCK][0] = start;
	(*x)->t[s % SPILL_BLOCK][1] = end;
	if (++(*x)->done < spill_block_len(sp, b))
		return 0;
	size_t len = (size_t)spill_block_len(sp, b) * sizeof((*x)->t[0]);

	if (pwrite(sp->fd, (*x)->t, len, (off_t)(b * SPILL_BLOCK * sizeof((*x)->t[0]))) !=
	    (ssize_t)len)
		return -1;
	free(*x);
	*x = &written;
	while (sp->lo < sp->hi && sp->ring[sp->lo & (sp->cap - 1)] == &written)
		sp->lo++;
	return 0;
}

const struct trace_step_time *trace_results_time(const struct trace_results *r, uint32_t s,
						 struct trace_step_time *tmp)
{
	struct trace_spill *sp = r->spill;
	uint64_t b = s / SPILL_BLOCK;

	if (r->step)
		return &r->step[s];
	if (!sp || s >= sp->nsteps)
		return NULL;
	if (b != sp->rblock) {
		size_t len = (size_t)spill_block_len(sp, b) * sizeof(*sp->rbuf);

		if (!sp->rbuf && !(sp->rbuf = malloc(SPILL_BLOCK * sizeof(*sp->rbuf))))
			return NULL;
		if (pread(sp->fd, sp->rbuf, len, (off_t)(b * SPILL_BLOCK * sizeof(*sp->rbuf))) !=
		    (ssize_t)len) {
			sp->rblock = UINT64_MAX;
			return NULL;
		}
		sp->rblock = b;
	}
	*tmp = (struct trace_step_time){
		.start = sp->rbuf[s % SPILL_BLOCK][0], .end = sp->rbuf[s % SPILL_BLOCK][1],
		.crit = UINT32_MAX,
	};
	return tmp;
}

