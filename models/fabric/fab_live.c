/* SPDX-License-Identifier: MIT */
/*
 * fab_live.c - the state of the messages in flight, for a compact message
 * list (fab.h), and the completion times of the delivered ones.
 *
 * A compact list holds a stream's regular messages as one run, so there is
 * no array of messages to write results into. A message gets a slot here
 * when it is posted or scheduled (fab_plan.c, a dependency) and gives it
 * back when it is finished (delivered or lost, and completed); memory
 * then follows what is in flight: 88 bytes a slot, plus 4 bytes for each
 * message index in a 1,024-index page holding one in flight. The models
 * name a message by its index (the work request's wr_id, the packet's
 * msg), so an index finds its slot through that page table: two loads,
 * and a report for a message no longer in flight (none is expected) finds
 * nothing rather than another message. Slots come in chunks of 4,096 that
 * never move, so a pointer to one stays good while others are added.
 *
 * Every finished message that was delivered adds its completion time
 * (end - start) to one sample set (sim_samples: exact to 2^20 values,
 * then within 1/4096), in either form of the list; fab_completions() adds
 * the ones delivered but not completed when the run stopped early.
 *
 * An output that lists the messages (JSON flows, flows.csv) needs every
 * message's record after the run. A compact list then keeps them on disk
 * (fab_keep_results): each finished message's struct fab_msg is written
 * at its index in an unlinked temporary file, consecutive indexes in one
 * write, and read back in blocks of 4,096 (fab_msg_result): 80 bytes of
 * disk a message, a fixed 640 KB of memory.
 */
#include "models/fabric/fab_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/sim_stats.h"

#define CHUNK_BITS 12
#define CHUNK (1u << CHUNK_BITS)
#define PAGE_BITS 10
#define PAGE (1u << PAGE_BITS)
#define NONE UINT32_MAX

struct live_slot {
	struct fab_msg m;
	uint32_t id;		/* its message, or NONE when free */
};

struct fab_live {
	struct live_slot **chunk;
	size_t nchunks, nslots;		/* slots made so far */
	uint32_t *free;			/* free slots: a stack */
	size_t nfree, free_cap;
	uint32_t **page;		/* message index >> PAGE_BITS -> slots, or NULL */
	uint32_t *page_n;		/* slots in flight per page (its block goes at 0) */
	size_t npages;
	/* blocks of pages with none in flight, every entry NONE again: a
	 * stream with one message in flight empties its page at each one */
	uint32_t **spare;
	size_t nspare, spare_cap;
	size_t n, peak;			/* in flight, now and at most */
};

struct fab_done {
	struct sim_samples times;	/* end - start of each delivered message */
	uint64_t n;
	bool closed;			/* fab_completions() has added the unfinished */
	/* fab_keep_results: every message's record, at its index, in an
	 * unlinked file; written a contiguous run of indexes at a time, read
	 * back a block at a time */
	int fd;
	struct fab_msg *wbuf, *rbuf;
	uint64_t wfirst, rfirst;
	size_t wn, rn;
	bool kept_all;			/* the unfinished are written too */
	bool keep_err;			/* a write failed */
};

#define KEEP_BUF 4096	/* records: 320 KB each way */

int fab_live_init(struct fab *f)
{
	f->done = calloc(1, sizeof(*f->done));
	if (!f->done)
		return -1;
	f->done->fd = -1;
	sim_samples_init(&f->done->times);
	if (!f->msgs->compact)
		return 0;
	struct fab_live *L = calloc(1, sizeof(*L));

	if (!L)
		return -1;
	f->live = L;
	L->npages = (f->msgs->n >> PAGE_BITS) + 1;
	L->page = calloc(L->npages, sizeof(*L->page));
	L->page_n = calloc(L->npages, sizeof(*L->page_n));
	return L->page && L->page_n ? 0 : -1;
}

void fab_live_free(struct fab *f)
{
	struct fab_live *L = f->live;

	if (f->done) {
		sim_samples_fini(&f->done->times);
		if (f->done->fd >= 0)
			close(f->done->fd);
		free(f->done->wbuf);
		free(f->done->rbuf);
		free(f->done);
	}
	if (!L)
		return;
	for (size_t i = 0; i < L->nchunks; i++)
		free(L->chunk[i]);
	for (size_t i = 0; i < L->npages; i++)
		free(L->page[i]);
	for (size_t i = 0; i < L->nspare; i++)
		free(L->spare[i]);
	free(L->spare);
	free(L->chunk);
	free(L->free);
	free(L->page);
	free(L->page_n);
	free(L);
}

static inline struct live_slot *slot_at(const struct fab_live *L, uint32_t s)
{
	return &L->chunk[s >> CHUNK_BITS][s & (CHUNK - 1)];
}

struct fab_msg *fab_live_find(const struct fab_live *L, uint32_t id)
{
	size_t p = id >> PAGE_BITS;
	uint32_t s;

	if (p >= L->npages || !L->page[p] || (s = L->page[p][id & (PAGE - 1)]) == NONE)
		return NULL;
	return &slot_at(L, s)->m;
}

static int take_slot(struct fab_live *L, uint32_t *out)
{
	if (L->nfree) {
		*out = L->free[--L->nfree];
		return 0;
	}
	if (L->nslots == L->nchunks * CHUNK) {
		if (L->nslots >= (size_t)NONE - CHUNK)
			return -1;
		struct live_slot **v = realloc(L->chunk, (L->nchunks + 1) * sizeof(*v));

		if (!v)
			return -1;
		L->chunk = v;
		if (!(v[L->nchunks] = malloc(CHUNK * sizeof(struct live_slot))))
			return -1;
		L->nchunks++;
	}
	*out = (uint32_t)L->nslots++;
	return 0;
}

struct fab_msg *fab_live_add(struct fab *f, uint32_t id)
{
	size_t r = fab_msgs_run_of(f->msgs, id);

	return fab_live_add_run(f, id, &f->msgs->runs[r]);
}

struct fab_msg *fab_live_add_run(struct fab *f, uint32_t id, const struct fab_msg_run *run)
{
	struct fab_live *L = f->live;
	size_t p = id >> PAGE_BITS;
	uint32_t s;
	struct fab_msg *m = fab_live_find(L, id);

	if (m)
		return m;	/* already in flight */
	if (p >= L->npages)
		return NULL;
	if (!L->page[p]) {
		if (L->nspare) {
			L->page[p] = L->spare[--L->nspare];
		} else {
			if (!(L->page[p] = malloc(PAGE * sizeof(uint32_t))))
				return NULL;
			memset(L->page[p], 0xff, PAGE * sizeof(uint32_t));
		}
	}
	if (take_slot(L, &s))
		return NULL;
	struct live_slot *sl = slot_at(L, s);

	sl->m = run->m;
	sl->m.post = run->m.post + (id - run->first) * run->gap;
	sl->id = id;
	L->page[p][id & (PAGE - 1)] = s;
	L->page_n[p]++;
	if (++L->n > L->peak)
		L->peak = L->n;
	return &sl->m;
}

/* Message id is finished: its slot is free, and its page's block when it
 * was the page's last in flight. */
static void live_drop(struct fab_live *L, uint32_t id)
{
	size_t p = id >> PAGE_BITS;
	uint32_t s = L->page[p][id & (PAGE - 1)];

	if (L->nfree == L->free_cap) {
		size_t cap = L->free_cap ? 2 * L->free_cap : 256;
		uint32_t *v = realloc(L->free, cap * sizeof(*v));

		if (!v)
			return;	/* the slot is not reused: memory, not correctness */
		L->free = v;
		L->free_cap = cap;
	}
	slot_at(L, s)->id = NONE;
	L->free[L->nfree++] = s;
	L->page[p][id & (PAGE - 1)] = NONE;
	L->n--;
	if (!--L->page_n[p]) {
		if (L->nspare == L->spare_cap) {
			size_t cap = L->spare_cap ? 2 * L->spare_cap : 16;
			uint32_t **v = realloc(L->spare, cap * sizeof(*v));

			if (!v) {
				free(L->page[p]);
				L->page[p] = NULL;
				return;
			}
			L->spare = v;
			L->spare_cap = cap;
		}
		L->spare[L->nspare++] = L->page[p];
		L->page[p] = NULL;
	}
}

/* ---- the records of a compact list's messages, on disk ----------------- */

static int keep_flush(struct fab_done *d)
{
	size_t len = d->wn * sizeof(struct fab_msg);
	off_t at = (off_t)(d->wfirst * sizeof(struct fab_msg));

	for (size_t done = 0; done < len;) {
		ssize_t k = pwrite(d->fd, (const char *)d->wbuf + done, len - done, at + (off_t)done);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		done += (size_t)k;
	}
	d->wn = 0;
	return 0;
}

static int keep_put(struct fab_done *d, uint32_t id, const struct fab_msg *m)
{
	if (d->wn && (id != d->wfirst + d->wn || d->wn == KEEP_BUF) && keep_flush(d))
		return -1;
	if (!d->wn)
		d->wfirst = id;
	d->wbuf[d->wn++] = *m;
	d->rn = 0;	/* what was read may be stale */
	return 0;
}

int fab_keep_results(struct fab *f)
{
	struct fab_done *d = f->done;
	FILE *t;

	if (!f->live || d->fd >= 0)
		return 0;	/* an explicit list keeps them in place */
	d->wbuf = malloc(KEEP_BUF * sizeof(*d->wbuf));
	d->rbuf = malloc(KEEP_BUF * sizeof(*d->rbuf));
	if (!d->wbuf || !d->rbuf || !(t = tmpfile()))
		return -1;
	d->fd = dup(fileno(t));
	fclose(t);	/* the file is unlinked; the descriptor keeps it */
	return d->fd >= 0 ? 0 : -1;
}

static void keep_unfinished(const struct fab_msg *m, uint32_t id, void *ctx)
{
	struct fab_done *d = ctx;

	if (keep_put(d, id, m))
		d->keep_err = true;
}

const struct fab_msg *fab_msg_result(const struct fab *f, size_t id, struct fab_msg *tmp)
{
	struct fab_done *d = f->done;

	if (!f->live)
		return &f->msgs->v[id];
	if (d->fd < 0)
		return NULL;
	if (!d->kept_all) {	/* the messages still in flight, once */
		d->kept_all = true;
		fab_live_each(f, keep_unfinished, d);
		if (d->wn && keep_flush(d))
			d->keep_err = true;
	}
	if (d->keep_err)
		return NULL;
	if (!d->rn || id < d->rfirst || id >= d->rfirst + d->rn) {
		ssize_t k;

		do
			k = pread(d->fd, d->rbuf, KEEP_BUF * sizeof(*d->rbuf),
				  (off_t)(id * sizeof(struct fab_msg)));
		while (k < 0 && errno == EINTR);
		if (k < 0)
			return NULL;
		d->rfirst = id;
		d->rn = (size_t)k / sizeof(struct fab_msg);
		/* past the end of the file: never made, like a hole */
		memset(d->rbuf + d->rn, 0, (KEEP_BUF - d->rn) * sizeof(*d->rbuf));
		d->rn = KEEP_BUF;
	}
	const struct fab_msg *m = &d->rbuf[id - d->rfirst];

	/* a hole is a message never made (posted after the run stopped): its
	 * input, no results (a message's source is never its destination) */
	if (m->src == m->dst)
		return fab_msgs_in(f->msgs, id, tmp);
	return m;
}

void fab_msg_finished(struct fab *f, uint32_t id, struct fab_msg *m)
{
	if (m->done && sim_samples_add(&f->done->times, m->end - m->start))
		fab_fail(f, "out of memory keeping completion times");
	f->done->n += m->done;
	if (f->done->fd >= 0 && keep_put(f->done, id, m))
		fab_fail(f, "writing the messages' records to a temporary file failed");
	if (f->live)
		live_drop(f->live, id);
}

void fab_live_each(const struct fab *f, void (*fn)(const struct fab_msg *m, uint32_t id,
						    void *ctx), void *ctx)
{
	const struct fab_live *L = f->live;

	if (!L) {
		for (size_t i = 0; i < f->msgs->n; i++)
			if (!f->msgs->v[i].finished)
				fn(&f->msgs->v[i], (uint32_t)i, ctx);
		return;
	}
	for (size_t s = 0; s < L->nslots; s++) {
		const struct live_slot *sl = slot_at(L, (uint32_t)s);

		if (sl->id != NONE)
			fn(&sl->m, sl->id, ctx);
	}
}

static void add_unfinished(const struct fab_msg *m, uint32_t id, void *ctx)
{
	struct fab_done *d = ctx;

	(void)id;
	if (m->done && !m->finished) {
		sim_samples_add(&d->times, m->end - m->start);
		d->n++;
	}
}

int fab_part_rebuild(struct fab *f)
{
	struct fab_done *dn = f->done;

	if (f->live)
		return -1;	/* a compact list keeps no records to make them of */
	sim_samples_fini(&dn->times);
	sim_samples_init(&dn->times);
	dn->n = 0;
	dn->closed = false;
	for (size_t i = 0; i < f->msgs->n; i++) {
		const struct fab_msg *m = &f->msgs->v[i];

		if (!m->finished || !m->done)
			continue;
		if (sim_samples_add(&dn->times, m->end - m->start))
			return -1;
		dn->n++;
	}
	return 0;
}

struct sim_samples *fab_completions(const struct fab *f, uint64_t *n_done)
{
	if (!f->done->closed) {
		f->done->closed = true;
		fab_live_each(f, add_unfinished, f->done);
	}
	*n_done = f->done->n;
	return &f->done->times;
}

size_t fab_live_count(const struct fab *f, size_t *peak)
{
	if (peak)
		*peak = f->live ? f->live->peak : 0;
	return f->live ? f->live->n : 0;
}
