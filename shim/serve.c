/* SPDX-License-Identifier: MIT */
/*
 * serve.c - the fabric daemon: one simulated fabric (models/fabric), its
 * global simulated clock, and the verbs objects of every attached process,
 * driven from a libev loop (docs/shim.md has the full design).
 *
 * Clock rule: the simulation advances only when every attached process is
 * waiting - parked in a wait request (an empty poll, get_cq_event, sleep, a
 * clock spin) or blocked reading a socket that has nothing to read. It then
 * runs to the next instant anything happens (an engine event, a deadline, a
 * completion becoming visible), wakes whoever that instant concerns, and
 * stops again as soon as one process runs. While a process runs, its clock
 * stands still: its CPU time costs nothing (the model's host costs are in
 * the HCA model). So what a program prints depends only on the order of its
 * own calls, not on the host's scheduler: runs are repeatable. No decision
 * that moves the clock may depend on real time: a process spinning on its
 * memory is told from one the host has paused by its CPU time (SPIN_*), and
 * a process blocked reading a socket reads nothing before the daemon has
 * seen the bytes (SHIM_OP_IO_END).
 *
 * A process that goes away is detached at once; its objects linger 1 ms of
 * simulated time (so ACKs it owes its peers still leave), then its QPs go
 * to the error state and everything is destroyed. Malformed requests get an
 * error srv_reply (EPROTO/EINVAL/EBADF); a client that does not start with a
 * valid HELLO is dropped. Handles are indexes into the client's own table,
 * checked for type on every use.
 *
 * Trust (docs/shim.md, "Trust"): one user's processes, checked by
 * SO_PEERCRED; none of them can hurt the others' runs. The clock page is a
 * sealed memfd clients can only read; a client's memory is taken only as
 * a memfd sealed against shrinking (no SIGBUS in the model's copies); a
 * client the clock waits for in silence is detached after --hold-limit
 * (watch_cb). The socket path: nothing is chmod'ed or removed that the
 * daemon did not make (socket_dir, socket_leftover, unlink_socket).
 */
#define _GNU_SOURCE
#include "shim/serve.h"

#include <dirent.h>
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "models/fabric/fab.h"
#include "models/hca/hca.h"
#include "models/net/net.h"
#include "models/sm/sm.h"
#include "shim/serve_int.h"
#include "shim/shim_proto.h"
#include "topologies/topo.h"
#include "traces/trace_spec.h"

static void client_free(struct client *c);
static void client_detach(struct client *c);
static void advance(struct srv *s);

void srv_log(struct srv *s, const char *fmt, ...)
{
	va_list ap;

	if (s->quiet)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "ibfab serve: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static sim_time_t poll_q_min(const struct client *c)
{
	const struct host *h = c->p && c->p->hca ? hca_host(c->p->hca) : NULL;
	sim_time_t q = (sim_time_t)(h ? h->p->poll_cpu_ns : c->s->p.host.poll_cpu_ns) * SIM_NS;

	return q ? q : SIM_NS;
}

/* A run of empty polls of c->poll_cq ended with a completion there: how
 * long it waited is kept for the next run (op_poll_cq). */
static void poll_run_end(struct client *c)
{
	struct obj *o = c->poll_empty ? srv_obj_get(c, c->poll_cq, O_CQ) : NULL;

	if (o)
		o->u.cq->poll_peak = sim_now(c->s->eng) - c->poll_t0;
	c->poll_empty = 0;
	c->poll_q = poll_q_min(c);
}

/* A run of empty polls ended otherwise (another request, bytes landing, a
 * thread let go): the next starts at one poll's cost again. */
static void poll_run_break(struct client *c)
{
	c->poll_empty = 0;
	c->poll_q = poll_q_min(c);
}

int serve_default_socket(char *buf, size_t len)
{
	const char *e = getenv("IBFAB_SOCKET");
	const char *rt = getenv("XDG_RUNTIME_DIR");
	int n;

	if (e && *e)
		n = snprintf(buf, len, "%s", e);
	else if (rt && *rt)
		n = snprintf(buf, len, "%s/ibfab/sock", rt);
	else
		n = snprintf(buf, len, "/tmp/ibfab-%u/sock", (unsigned)getuid());
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* ---- messages ----------------------------------------------------------- */

void srv_reply(struct client *c, const struct shim_rep *r, int fd)
{
	union shim_fd_cmsg u;
	size_t len = offsetof(struct shim_rep, u) + sizeof(r->u);
	struct iovec iov = { (void *)r, len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (c->zombie || c->quiet)
		return;
	shim_msg_attach_fd(&m, &u, fd);
	/* a full socket buffer or a dead peer: the read side notices */
	(void)sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
}

void srv_status(struct client *c, int status)
{
	struct shim_rep r;

	memset(&r, 0, sizeof(r));
	r.status = status;
	srv_reply(c, &r, -1);
}

/* ---- handles ------------------------------------------------------------ */

int srv_obj_new(struct client *c, enum obj_type t, uint32_t *h)
{
	for (uint32_t i = 0; i < c->p->nobjs; i++)
		if (c->p->objs[i].t == O_FREE) {
			c->p->objs[i].t = t;
			*h = i;
			return 0;
		}
	if (c->p->nobjs >= MAX_OBJS)
		return ENOMEM;
	uint32_t n = c->p->nobjs ? c->p->nobjs * 2 : 16;
	struct obj *v = realloc(c->p->objs, n * sizeof(*v));

	if (!v)
		return ENOMEM;
	memset(v + c->p->nobjs, 0, (n - c->p->nobjs) * sizeof(*v));
	c->p->objs = v;
	*h = c->p->nobjs;
	c->p->nobjs = n;
	c->p->objs[*h].t = t;
	return 0;
}

struct obj *srv_obj_get(struct client *c, uint32_t h, enum obj_type t)
{
	return h < c->p->nobjs && c->p->objs[h].t == t ? &c->p->objs[h] : NULL;
}

/* ---- gather/scatter lists ----------------------------------------------- */

/*
 * The model's work requests have one SGE. A WR with several goes through a
 * buffer of the daemon's own, registered with the HCA: a send's SGEs are
 * gathered into it when it is posted (a program may not change them before
 * the completion: ibv_post_send(3)), a receive lands in it and is
 * scattered into the program's SGEs when its completion is polled, when
 * every byte before the CQE is visible. The SGEs are checked as the HCA
 * checks them (key, bounds, local write for a receive); a list that fails
 * is posted with its first bad SGE alone, so that the model completes it
 * in error as the HCA would. A send queue's slot is reused only once its
 * WR has left the queue (max_send_wr slots, taken by successful posts).
 */
struct sgl {
	struct sgl *next;
	uint64_t wr_id;
	int32_t srq;			/* SRQ handle, or -1: a QP's receive queue */
	uint32_t n;			/* 0: a one-SGE receive, kept for the order */
	struct shim_wire_sge sg[SHIM_MAX_SGE];
	struct hca_mr *mr;		/* over buf */
	uint8_t *buf;
	uint64_t len;
};

static struct hca_mr *mr_by_lkey(struct client *c, uint32_t lkey)
{
	for (uint32_t i = 0; i < c->p->nobjs; i++)
		if (c->p->objs[i].t == O_MR && c->p->objs[i].u.mr->lkey == lkey)
			return c->p->objs[i].u.mr;
	return NULL;
}

/* The program's bytes behind one SGE, or NULL where the HCA would refuse it. */
static uint8_t *sge_ptr(struct client *c, const struct shim_wire_sge *g, uint32_t access,
			enum hca_mem *mem)
{
	struct hca_mr *mr = mr_by_lkey(c, g->lkey);
	uint64_t off;

	if (!mr || !mr->valid || !mr->buf || (mr->access & access) != access ||
	    g->addr < mr->addr)
		return NULL;
	off = g->addr - mr->addr;
	if (off > mr->length || g->length > mr->length - off)
		return NULL;
	if (mem)
		*mem = mr->mem;
	return (uint8_t *)mr->buf + off;
}

/*
 * A buffer of the daemon's that packets in flight may still point at (a
 * gathered send's payload) or a placement may still be due for: freed once
 * GRAVE_PS have passed, as a gone process's memory is.
 */
static void buf_bury(struct srv *s, void *p)
{
	struct grave *g;
	sim_time_t now;

	if (!p)
		return;
	g = malloc(sizeof(*g));
	if (!g)
		return;		/* out of memory: kept, rather than freed too early */
	now = s->eng ? sim_now(s->eng) : 0;
	g->map = p;
	g->len = 0;
	g->until = now > SIM_TIME_MAX - GRAVE_PS ? SIM_TIME_MAX : now + GRAVE_PS;
	g->next = s->graves;
	s->graves = g;
}

static void sgl_free(struct srv *s, struct sgl *e)
{
	if (!e)
		return;
	if (e->mr)
		hca_dereg_mr(e->mr);
	buf_bury(s, e->buf);
	free(e);
}

/* A send's list into its queue slot; *out is the one SGE the model gets. */
static int sgl_gather(struct client *c, struct dqp *d, const struct shim_wire_sge *g,
		      uint32_t n, struct hca_sge *out)
{
	uint32_t slots = d->max_send_wr ? d->max_send_wr : 1;
	enum hca_mem mem = HCA_MEM_HOST;
	uint64_t len = 0, at = 0;
	struct gslot *sl;

	for (uint32_t i = 0; i < n; i++) {
		if (!sge_ptr(c, &g[i], 0, i ? NULL : &mem)) {
			*out = (struct hca_sge){ .addr = g[i].addr, .length = g[i].length,
						 .lkey = g[i].lkey };
			return 0;
		}
		len += g[i].length;
	}
	if (len > UINT32_MAX)
		return EINVAL;
	if (!d->gs && !(d->gs = calloc(slots, sizeof(*d->gs))))
		return ENOMEM;
	sl = &d->gs[d->gnext % slots];
	if (!sl->mr || sl->cap < len || sl->mr->mem != mem) {
		uint64_t cap = len > sl->cap ? len : sl->cap;
		uint8_t *b = malloc(cap ? cap : 1);
		struct hca_mr *mr = b ? hca_reg_mr(c->p->hca, b, (uintptr_t)b, cap ? cap : 1,
						   HCA_ACCESS_LOCAL_WRITE, mem) : NULL;

		if (!mr) {
			free(b);
			return ENOMEM;
		}
		if (sl->mr)
			hca_dereg_mr(sl->mr);
		buf_bury(c->s, sl->buf);
		*sl = (struct gslot){ .buf = b, .cap = cap, .mr = mr };
	}
	for (uint32_t i = 0; i < n; i++) {
		memcpy(sl->buf + at, sge_ptr(c, &g[i], 0, NULL), g[i].length);
		at += g[i].length;
	}
	*out = (struct hca_sge){ .addr = (uintptr_t)sl->buf, .length = (uint32_t)len,
				 .lkey = sl->mr->lkey };
	return 0;
}

/*
 * A receive's list: its buffer, and in wr the one SGE the model gets (after
 * the GRH slot on UD). n = 0: a one-SGE receive kept only for the order.
 */
static int sgl_recv(struct client *c, const struct shim_wire_sge *g, uint32_t n, bool ud,
		    struct hca_recv_wr *wr, struct sgl **out)
{
	enum hca_mem mem = HCA_MEM_HOST;
	struct sgl *e = calloc(1, sizeof(*e));
	uint64_t len = 0;

	*out = NULL;
	if (!e)
		return ENOMEM;
	e->wr_id = wr->wr_id;
	e->srq = -1;
	for (uint32_t i = 0; i < n; i++) {
		if (!sge_ptr(c, &g[i], HCA_ACCESS_LOCAL_WRITE, i ? NULL : &mem)) {
			wr->sg = (struct hca_sge){ .addr = g[i].addr, .length = g[i].length,
						   .lkey = g[i].lkey };
			*out = e;	/* in error: nothing to scatter */
			return 0;
		}
		len += g[i].length;
	}
	if (len > UINT32_MAX || (ud && n && len < SHIM_UD_GRH)) {
		free(e);
		return EINVAL;
	}
	if (n) {
		e->buf = calloc(1, len ? len : 1);
		e->mr = e->buf ? hca_reg_mr(c->p->hca, e->buf, (uintptr_t)e->buf, len ? len : 1,
					    HCA_ACCESS_LOCAL_WRITE, mem) : NULL;
		if (!e->mr) {
			free(e->buf);
			free(e);
			return ENOMEM;
		}
		e->n = n;
		e->len = len;
		memcpy(e->sg, g, n * sizeof(*g));
		wr->sg = (struct hca_sge){ .addr = (uintptr_t)e->buf, .length = (uint32_t)len,
					   .lkey = e->mr->lkey };
		if (ud) {
			wr->sg.addr += SHIM_UD_GRH;
			wr->sg.length -= SHIM_UD_GRH;
		}
	}
	*out = e;
	return 0;
}

/* The receive a completion of QP q consumed, taken from its list (or NULL). */
static struct sgl *sgl_take(struct client *c, struct dqp *q, uint64_t wr_id)
{
	struct sgl *e, **pp;

	if (q->srq < 0) {
		if (!(e = q->rq))
			return NULL;
		if (!(q->rq = e->next))
			q->rq_tail = &q->rq;
		return e;
	}
	/* an SRQ completes out of order across its QPs: by wr_id, oldest first */
	for (pp = &c->p->srq_sgls; (e = *pp); pp = &e->next)
		if (e->srq == q->srq && e->wr_id == wr_id) {
			*pp = e->next;
			return e;
		}
	return NULL;
}

/* Scatter what a successful receive brought, as far as the SGEs still hold. */
static void sgl_scatter(struct client *c, const struct sgl *e, uint32_t bytes)
{
	uint64_t at = 0;

	for (uint32_t i = 0; i < e->n && at < bytes && at < e->len; i++) {
		uint8_t *p = sge_ptr(c, &e->sg[i], 0, NULL);
		uint64_t k = e->sg[i].length < bytes - at ? e->sg[i].length : bytes - at;

		if (p)	/* deregistered meanwhile: the HCA would have failed it */
			memcpy(p, e->buf + at, k);
		at += e->sg[i].length;
	}
}

/* ---- completion queues -------------------------------------------------- */

static struct dqp *qp_by_num(struct client *c, uint32_t qpn)
{
	for (uint32_t i = 0; i < c->p->nobjs; i++)
		if (c->p->objs[i].t == O_QP && hca_qp_num(c->p->objs[i].u.qp->qp) == qpn)
			return c->p->objs[i].u.qp;
	return NULL;
}

static void async_push(struct srv *s, struct client *c, uint8_t type, uint32_t handle);

/* The model added a completion: take it into our queue, where it becomes
 * visible to the program at wc.time (the host model's CQE write). */
static void cq_notify(struct hca_cq *cq, void *ctx)
{
	struct dcq *d = ctx;
	struct hca_wc wc;

	while (hca_poll_cq(cq, 1, &wc) == 1) {
		struct sgl *e = NULL;

		if (wc.opcode == HCA_WC_RECV || wc.opcode == HCA_WC_RECV_RDMA_WITH_IMM) {
			struct dqp *q = qp_by_num(d->c, wc.qp_num);

			/* UD: the program's buffer starts with the GRH slot */
			if (q && q->type == HCA_QPT_UD && wc.status == HCA_WC_SUCCESS)
				wc.byte_len += SHIM_UD_GRH;
			if (q && (q->srq >= 0 || q->max_recv_sge > 1))
				e = sgl_take(d->c, q, wc.wr_id);
			/* a WRITE with immediate left the receive buffer alone */
			if (e && (!e->n || wc.opcode != HCA_WC_RECV || wc.status != HCA_WC_SUCCESS)) {
				sgl_free(d->c->s, e);
				e = NULL;
			}
		}
		if (d->n == d->cap) {
			/* overrun: the CQE is lost (IBA 11.4.2.1), and the CQ's
			 * error is an affiliated asynchronous event (IBA
			 * 11.6.3.1: CQ Error; IBV_EVENT_CQ_ERR), once */
			sgl_free(d->c->s, e);
			if (!d->overrun && !d->c->s->async_mute) {
				d->overrun = true;
				srv_log(d->c->s, "pid %u: CQ %u overrun (%u entries): a completion is lost",
					d->c->p->pid, d->h, d->cap);
				async_push(d->c->s, d->c->p, SHIM_ASYNC_CQ_ERR, d->h);
			}
			continue;
		}
		uint32_t i = (d->head + d->n++) % d->cap;

		d->q[i] = wc;
		d->qseq[i] = d->pushed++;
		d->qsg[i] = e;
		d->c->p->cqe_gen++;
	}
}

static uint32_t cq_visible(const struct dcq *d, sim_time_t now)
{
	uint32_t k = 0;

	while (k < d->n && d->q[(d->head + k) % d->cap].time <= now)
		k++;
	return k;
}

/* A completion of d that became visible after t0, by now: its entries
 * are in the order of their times, so the last visible one says. */
static bool cq_seen_since(const struct dcq *d, sim_time_t t0, sim_time_t now)
{
	uint32_t k = cq_visible(d, now);

	return k && d->q[(d->head + k - 1) % d->cap].time > t0;
}

static void wire_wc(struct shim_wire_wc *w, const struct hca_wc *wc)
{
	memset(w, 0, sizeof(*w));
	w->wr_id = wc->wr_id;
	w->status = wc->status;
	w->opcode = wc->opcode;
	w->byte_len = wc->byte_len;
	w->qp_num = wc->qp_num;
	w->src_qp = wc->src_qp;
	w->imm = wc->imm_data;
	w->slid = wc->slid;
	w->with_imm = wc->with_imm;
}

/* Take (as a poll does) up to n of the completions visible now into out[]:
 * how many. */
static uint32_t cq_take(struct dcq *d, sim_time_t now, uint32_t n, struct shim_wire_wc *out)
{
	uint32_t k = cq_visible(d, now);

	if (k > n)
		k = n;
	for (uint32_t i = 0; i < k; i++) {
		wire_wc(&out[i], &d->q[d->head]);
		if (d->qsg[d->head]) {
			sgl_scatter(d->c, d->qsg[d->head], d->q[d->head].byte_len);
			sgl_free(d->c->s, d->qsg[d->head]);
			d->qsg[d->head] = NULL;
		}
		d->head = (d->head + 1) % d->cap;
		d->n--;
	}
	return k;
}

/* Reply to a poll with what is visible now; false if nothing is. */
static bool poll_reply(struct client *c, struct dcq *d, uint32_t n, bool reply_empty)
{
	struct shim_rep r;
	sim_time_t now = sim_now(c->s->eng);

	if (!cq_visible(d, now) && !reply_empty)
		return false;
	memset(&r, 0, sizeof(r));
	r.count = cq_take(d, now, n, r.u.wc);
	srv_reply(c, &r, -1);
	return true;
}

static void chan_push(struct client *c, struct dcq *d)
{
	struct obj *o = d->chan >= 0 ? srv_obj_get(c, (uint32_t)d->chan, O_CHAN) : NULL;
	uint64_t one = 1;

	if (!o)
		return;
	struct dchan *ch = o->u.ch;

	if (ch->n == ch->cap) {
		uint32_t n = ch->cap ? ch->cap * 2 : 8;
		uint32_t *v = realloc(ch->ev, n * sizeof(*v));

		if (!v)
			return;
		ch->ev = v;
		ch->cap = n;
	}
	ch->ev[ch->n++] = d->h;
	/* the channel fd is pollable: one count per event */
	if (write(ch->efd, &one, sizeof(one)) < 0) {
		/* a full eventfd cannot happen at these counts */
	}
}

/* Armed CQs whose awaited completion is now visible raise their event. */
static void cq_events(struct client *c, sim_time_t now)
{
	for (uint32_t i = 0; i < c->p->nobjs; i++) {
		struct dcq *d;

		if (c->p->objs[i].t != O_CQ || !(d = c->p->objs[i].u.cq)->armed)
			continue;
		for (uint32_t k = 0; k < d->n; k++) {
			uint32_t j = (d->head + k) % d->cap;

			if (d->q[j].time > now)
				break;
			if (d->qseq[j] >= d->arm_seq || d->q[j].time > d->arm_time) {
				d->armed = false;
				chan_push(c, d);
				break;
			}
		}
	}
}

/* ---- the clock ---------------------------------------------------------- */

static void clock_publish(struct srv *s)
{
	s->clk->now_ps = sim_now(s->eng);
	s->clk->seq++;
}

static bool io_ready(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) > 0;
}

/* ---- silence ------------------------------------------------------------ */

/* The CPU time (s) the process has used, or -1 if it cannot be read (not
 * permitted, or it has just exited: the end of its socket is on the way). */
static double client_cpu(struct client *c)
{
	struct timespec ts;

	if (!c->p->cpu_ok)
		return -1;
	if (clock_gettime(c->p->cpu_clk, &ts)) {
		c->p->cpu_ok = false;
		return -1;
	}
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A sign of life (a message, a wake-up, bytes landing): it runs from now,
 * when its CPU time was cpu (s). */
/* A perf counter's count so far; -1 (and the counter closed) if it cannot
 * be read, or none is open. */
static int64_t perf_read(int *fd)
{
	uint64_t v;

	if (*fd < 0)
		return -1;
	if (read(*fd, &v, sizeof(v)) != (ssize_t)sizeof(v)) {
		close(*fd);
		*fd = -1;
		return -1;
	}
	return (int64_t)v;
}

/*
 * The task clock of the program's main thread, read through perf
 * (perf_event_open(2), a software event): unlike another process's CPU
 * clock, which the kernel brings up to date only at a scheduler tick (4 ms
 * at HZ=250), reading it updates a running task's count at once. So a
 * program spinning on its memory is seen to spin as soon as it has, not a
 * tick later: each of ib_write_lat's exchanges costs the spin grace, not
 * a tick. -1 where perf is not allowed (kernel.perf_event_paranoid > 2):
 * the CPU clock alone then decides, a tick late.
 */
static double perf_cpu(struct client *c)
{
	int64_t v = perf_read(&c->p->perf_fd);

	return v < 0 ? -1 : (double)v * 1e-9;
}

static int perf_open_sw(pid_t pid, uint64_t config)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = config;
	a.exclude_kernel = 1;	/* what perf_event_paranoid 2 allows */
	a.exclude_hv = 1;
	return (int)syscall(SYS_perf_event_open, &a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static int perf_open(pid_t pid)
{
	return perf_open_sw(pid, PERF_COUNT_SW_TASK_CLOCK);
}

/* The page faults of the process's main thread so far, or -1. */
static int64_t perf_faults(struct client *c)
{
	return perf_read(&c->p->pf_fd);
}

/*
 * The perf counts that start a silence are read when the silence is first
 * looked at (silent_wait), not here: a read of another task's counter
 * while it runs on another CPU is an interprocessor interrupt, and this
 * runs twice a request (its message, its reply). The first look comes in
 * the same pass of the loop that handled the message (advance), so the
 * silence starts as good as then.
 */
#define PERF_UNREAD (-2)

static void alive(struct client *c, double cpu)
{
	/* the process runs from now: its stamp says so to the shim, which
	 * then need not ask (shim_clock_runs) */
	if (c->p->alive_slot >= 0)
		c->s->clk->alive_ps[c->p->alive_slot] = sim_now(c->s->eng);
	c->p->quiet_rt = c->p->idle_rt = ev_time();
	c->p->quiet_cpu = c->p->idle_cpu = cpu;
	c->p->perf_quiet = c->p->perf_idle = PERF_UNREAD;
	c->p->faults_quiet = PERF_UNREAD;
	c->p->spinning = false;
	c->p->spun_in = 0;
}

/* Is every thread of the process asleep in the kernel (state S)? A paused
 * (preempted, starved) thread is runnable (R), a stopped one T. */
static bool client_asleep(const struct client *c)
{
	char dir[48], path[96], buf[256];
	struct dirent *e;
	bool any = false, asleep = true;
	DIR *d;

	if (c->p->peer <= 0)
		return false;
	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)c->p->peer);
	d = opendir(dir);
	if (!d)
		return false;
	while (asleep && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%.32s/stat", dir, e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

		if (fd >= 0)
			close(fd);
		if (n <= 0)
			break;
		buf[n] = 0;
		/* "tid (comm) S ...": comm may hold spaces and parentheses */
		const char *r = strrchr(buf, ')');

		asleep = r && r[1] == ' ' && r[2] == 'S';
		any = true;
	}
	closedir(d);
	return any && asleep;
}

/*
 * A process with a connected QP, not in a wait and with no message of its
 * own unread: does it count as waiting - spinning on its memory, or asleep
 * where the shim does not see? If not, *recheck is how long (real time)
 * before the answer may change. Only its own CPU time decides, never how
 * long the host's scheduler left it without a CPU.
 */
static bool silent_wait(struct client *c, ev_tstamp rt, ev_tstamp *recheck)
{
	double spin = c->s->spin_grace > 0 ? c->s->spin_grace :
		      c->p->perf_fd >= 0 ? SPIN_GRACE_EXACT_S : SPIN_GRACE_S;
	double grace = c->p->touched ? SPIN_REACT_S : c->p->spinner ? spin : SPIN_FIRST_S;
	double cpu = client_cpu(c), left;

	if (c->busy) {		/* the shim's own work: it runs */
		*recheck = SPIN_FIRST_S;
		return c->p->spinning = false;
	}
	if (cpu < 0) {		/* no CPU clock: real time, which load can fool */
		left = c->p->quiet_rt + grace - rt;
		*recheck = left;
		return c->p->spinning = left <= 0;
	}
	double pcpu = perf_cpu(c), used = cpu - c->p->quiet_cpu;

	if (c->p->perf_quiet == PERF_UNREAD) {	/* its first look (alive) */
		c->p->perf_quiet = c->p->perf_idle = pcpu;
		c->p->faults_quiet = perf_faults(c);
	}

	/* the main thread's exact count, where the process's lags a tick; its
	 * count alone where other threads of the process speak for themselves
	 * (UCX's async thread: its CPU is not this thread's silence) */
	if (pcpu >= 0 && c->p->perf_quiet >= 0 &&
	    (pcpu - c->p->perf_quiet > used || c->p->nthreads))
		used = pcpu - c->p->perf_quiet;
	left = grace - used;
	if (left <= 0 && c->p->faults_quiet >= 0) {
		/* A thread that spins on a word does not fault; one that takes
		 * page faults touches fresh memory: it computes (UCX filling
		 * its buffer pools after its first QP is up), and runs. */
		int64_t f = perf_faults(c);

		if (f >= 0 && f != c->p->faults_quiet) {
			alive(c, cpu);
			*recheck = grace;
			return false;
		}
	}
	if (left <= 0) {
		if (c->s->trace && !c->p->spinning)
			fprintf(stderr, "ibfab serve: pid %u: %.6f s of CPU since its last "
				"message, grace %.6f s (%s)\n", c->p->pid, used, grace,
				c->p->touched ? "reacting" : c->p->spinner ? "a spinner" : "first");
		return c->p->spinning = true;	/* that much CPU and not a word */
	}
	*recheck = left;	/* a thread uses CPU no faster than real time */
	if (cpu > c->p->idle_cpu || (pcpu >= 0 && pcpu > c->p->perf_idle)) {
		c->p->idle_cpu = cpu;
		c->p->perf_idle = pcpu;
		c->p->idle_rt = rt;
	} else if (rt - c->p->idle_rt >= SPIN_ASLEEP_S && client_asleep(c)) {
		return true;	/* blocked in a wait the shim does not watch */
	}
	left = c->p->idle_rt + SPIN_ASLEEP_S - rt;
	if (left > 0 && left < *recheck)
		*recheck = left;
	return false;
}

static double thread_cpu(struct client *c);

static void wake(struct client *c)
{
	c->wait = W_NONE;
	c->io_latched = false;
	if (c != c->p)
		c->tquiet = thread_cpu(c);	/* it runs from now */
	c->tperf_seen = -1;	/* it runs (thread_blocked looks afresh) */
	alive(c, c->sent_cpu);	/* it runs from now; it has been blocked since it asked */
	if (c->io_fd >= 0) {
		close(c->io_fd);
		c->io_fd = -1;
	}
}

/* A parked poll answered now with what it finds, empty or not. */
static void poll_answer_now(struct client *c)
{
	struct obj *o = srv_obj_get(c, c->wait_h, O_CQ);

	if (o)
		poll_reply(c, o->u.cq, c->wait_n, true);
	else
		srv_status(c, EINVAL);
	wake(c);
}

/*
 * Its interval timer has expired: SIGALRM, as the kernel would send it (a
 * real signal, so that a handler runs and a blocked call is interrupted,
 * at the simulated instant: the program waits, the clock stands). A wait
 * in the daemon ends as a blocking call would: EINTR for an event or a
 * sleep, an empty poll; a blocking read is interrupted by the signal.
 */
static void alarm_due(struct client *c, sim_time_t now)
{
	if (now < c->p->alarm_at)
		return;
	if (!c->p->alarm_every)
		c->p->alarm_at = SIM_TIME_MAX;
	else
		while (c->p->alarm_at <= now)
			c->p->alarm_at = srv_sat_add(c->p->alarm_at, c->p->alarm_every);
	if (c->p->peer > 0)
		kill(c->p->peer, SIGALRM);
	switch (c->wait) {
	case W_EVENT:
	case W_CMEV:
	case W_SLEEP:
		wake(c);
		srv_status(c, EINTR);
		break;
	case W_POLL:
		poll_answer_now(c);
		break;
	case W_CLOCK:
	case W_YIELD:
		srv_status(c, 0);
		wake(c);
		break;
	case W_IO:
	case W_NONE:
		break;
	}
}

/*
 * A completion in c's process since it parked may be what it waits for:
 * one made since, or one made before whose CQE has become visible since
 * (UCX polls its send CQ while a receive's CQE, already on its way when it
 * parked, lands on the other).
 */
static bool cqe_news(const struct client *c, sim_time_t now)
{
	const bool made = c->p->cqe_gen != c->wait_cqe_gen;

	if (!made && now <= c->wait_t0)
		return false;
	for (uint32_t i = 0; i < c->p->nobjs; i++)
		if (c->p->objs[i].t == O_CQ &&
		    (made ? cq_visible(c->p->objs[i].u.cq, now) > 0 :
			    cq_seen_since(c->p->objs[i].u.cq, c->wait_t0, now)))
			return true;
	return false;
}

/*
 * A waiting client whose condition holds now is answered; true if it runs
 * again (so the clock must stop).
 */
static bool try_wake(struct client *c, sim_time_t now)
{
	struct obj *o;

	switch (c->wait) {
	case W_NONE:
		return true;
	case W_IO:
		if (io_ready(c->io_fd)) {
			wake(c);
			return true;
		}
		if (now >= c->deadline) {
			/* a poll's timeout, in simulated time: the shim polls
			 * its connection beside the program's descriptors */
			struct shim_rep r;

			memset(&r, 0, sizeof(r));
			r.count = SHIM_IO_TIMEOUT;
			srv_reply(c, &r, -1);
			wake(c);
			return true;
		}
		return false;
	case W_POLL:
		o = srv_obj_get(c, c->wait_h, O_CQ);
		if (!o) {
			wake(c);
			srv_status(c, EINVAL);
			return true;
		}
		if (poll_reply(c, o->u.cq, c->wait_n, false)) {
			poll_run_end(c);
			wake(c);
			return true;
		}
		/* bytes no completion announces landed in its memory: a program
		 * that polls its CQ and looks at its memory in turn (UCX's put
		 * latency test) sees them now, not when its poll's back-off ends */
		if (c->p->quiet_gen != c->wait_quiet_gen) {
			poll_reply(c, o->u.cq, c->wait_n, true);
			poll_run_break(c);
			wake(c);
			return true;
		}
		if (cqe_news(c, now) || now >= c->deadline) {
			poll_reply(c, o->u.cq, c->wait_n, true);
			wake(c);
			return true;
		}
		return false;
	case W_EVENT:
		o = srv_obj_get(c, c->wait_h, O_CHAN);
		if (!o) {
			wake(c);
			srv_status(c, EINVAL);
			return true;
		}
		if (o->u.ch->n) {
			struct shim_rep r;
			struct obj *cq;

			memset(&r, 0, sizeof(r));
			r.u.event.cq = o->u.ch->ev[0];
			memmove(o->u.ch->ev, o->u.ch->ev + 1, --o->u.ch->n * sizeof(uint32_t));
			/* what a poll at this instant would find comes along:
			 * the program polls next, and finds it in the shim */
			if ((cq = srv_obj_get(c, r.u.event.cq, O_CQ)))
				r.count = cq_take(cq->u.cq, now, SHIM_MAX_WC - 1, r.u.event.wc);
			srv_reply(c, &r, -1);
			wake(c);
			return true;
		}
		return false;
	case W_CMEV:
		if (cm_try_wake(c)) {
			wake(c);
			return true;
		}
		return false;
	case W_YIELD:
		/* a yield that found no one to run also ends as a poll's park
		 * does: bytes or a completion may be what it spins for */
		if (c->p->quiet_gen != c->wait_quiet_gen || cqe_news(c, now)) {
			srv_status(c, 0);
			wake(c);
			return true;
		}
		/* fall through */
	case W_SLEEP:
	case W_CLOCK:
		if (now >= c->deadline) {
			srv_status(c, 0);
			wake(c);
			return true;
		}
		return false;
	}
	return true;
}

/*
 * The requests, one handler each (a table indexed by SHIM_OP_*, as rxe's
 * opcode tables). A handler returns a status for srv_status (0 or an
 * errno value), or NO_REPLY when it has replied itself, parked the client
 * (the reply comes when it wakes) or the request is a notification.
 */
#define NO_REPLY (-1)

/* ---- turns -------------------------------------------------------------- */

/*
 * A process whose threads take turns (serve_int.h, "Turns"): one that has
 * more than one thread calling the shim. A thread that parks in a wait, or
 * yields (sched_yield), gives the turn up; the next thread after the last
 * one to have had it, in the order of the daemon's list, that can run takes
 * it: one whose request waits for the turn, one whose wait has ended, and
 * on a yield also one that polls an empty CQ (it spins, as the yielding one
 * does: on hardware both would run). A thread that has the turn but blocks
 * in the kernel or spins without a word gives it up too, and so does the
 * first thread at the end of its time slice (advance()). So the
 * threads' calls interleave at calls, in the daemon's order, and what a
 * thread finds when it runs does not depend on the host's scheduler
 * (UCX's async thread and its main thread over one worker lock).
 */
static bool turns(const struct client *c)
{
	return c->p->nthreads > 0;	/* (its first connection may be gone) */
}

/* Let c run with the turn if it can: true if it was let go. */
static bool turn_take(struct client *c, sim_time_t now, bool yielding)
{
	struct client *p = c->p;

	if (c->zombie)
		return false;
	if (c->yielded) {
		c->yielded = false;
		p->turn = c;
		srv_status(c, 0);
		wake(c);
		return true;
	}
	if (c->turn_q) {
		/* its request is read now: the watcher fires at once */
		c->turn_q = false;
		p->turn = c;
		ev_io_start(c->s->loop, &c->w);
		return true;
	}
	switch (c->wait) {
	case W_NONE:
		return false;	/* it runs already (without the turn) */
	case W_IO:
		if (c->io_latched) {
			/* it woke in the kernel while another thread ran: its
			 * IO_END is on its way, whatever the fds say now */
			c->io_latched = false;
			wake(c);
			p->turn = c;
			return true;
		}
		break;
	case W_POLL:
		if (yielding) {
			poll_answer_now(c);
			poll_run_break(c);
			p->turn = c;
			return true;
		}
		break;
	case W_YIELD:
		if (c->yield_gen != p->turn_gen) {
			/* another thread has run since it parked: it spins on
			 * what that one may have changed, at once */
			c->clock_q = CLOCK_Q_MIN;
			srv_status(c, 0);
			wake(c);
			p->turn = c;
			return true;
		}
		break;
	default:
		break;
	}
	if (!try_wake(c, now))
		return false;
	p->turn = c;
	return true;
}

/*
 * Whether what ends c's wait comes from outside the simulation, in real
 * time: a wait on descriptors none of which the fabric makes ready, with
 * no timeout (a socket to another program, perftest's or UCX's side
 * channel). Such a thread is asked last: a thread that can run for a reason
 * of the simulation's own goes first, whenever the outsider's bytes came.
 */
static bool turn_outside(const struct client *c)
{
	return c->wait == W_IO && !c->io_fabric && c->deadline == SIM_TIME_MAX && !c->io_latched;
}

/* Give p's free turn to the next thread after `after` that can run; the
 * one that took it, or NULL. A yielding `after` is not asked. */
static struct client *turn_pass(struct client *p, struct client *after, sim_time_t now,
				bool yielding)
{
	struct srv *s = p->s;
	struct client *start = after ? after->next : s->clients;

	if (p->turn)
		return NULL;
	for (int round = 0; round < 4; round++) {
		for (struct client *x = round & 1 ? s->clients : start;
		     x && !((round & 1) && x == start); x = x->next) {
			if (x->p != p || (yielding && x == after) || turn_outside(x) != (round >= 2))
				continue;
			if (turn_take(x, now, yielding)) {
				p->turn_last = x;
				p->turn_gen++;
				if (s->trace)
					fprintf(stderr, "ibfab serve: t=%" PRIu64 " pid %u tid %d "
						"has the turn\n", (uint64_t)now, p->pid, (int)x->tid);
				return x;
			}
		}
	}
	return NULL;
}

/*
 * The process's first thread has the turn and has used SPIN_FIRST_S of its
 * own CPU since its last word while another of its threads waits for the
 * turn: a time slice, as a scheduler's. It may be spinning on what the
 * waiting one holds (a lock), which no rule for a silent program catches
 * while it takes page faults or has no connected QP yet; it gives the turn
 * up and runs on beside the other. Else *due: when to look again.
 */
static bool turn_slice_over(struct client *c, ev_tstamp *due)
{
	double v = perf_cpu(c);
	bool others = false;

	for (struct client *x = c->s->clients; x && !others; x = x->next)
		others = x->p == c->p && x != c && (x->turn_q || x->yielded || x->wait == W_YIELD);
	if (!others || v < 0)
		return false;
	if (c->p->perf_quiet == PERF_UNREAD) {	/* its first look since it spoke (alive) */
		c->p->perf_quiet = c->p->perf_idle = v;
		c->p->faults_quiet = perf_faults(c);
	}
	if (c->p->perf_quiet < 0)
		return false;
	if (v - c->p->perf_quiet >= SPIN_FIRST_S)
		return true;
	*due = SPIN_FIRST_S - (v - c->p->perf_quiet);
	return false;
}

/* A thread gives the turn up (it waits, blocks, spins or is gone): true if
 * it had it. */
static bool turn_drop(struct client *c)
{
	if (c->p->turn != c)
		return false;
	c->p->turn = NULL;
	return true;
}

/* The next instant something concerns a waiting client. */
static sim_time_t next_deadline(struct client *c, sim_time_t now)
{
	sim_time_t t = SIM_TIME_MAX;

	if (c->wait == W_POLL || c->wait == W_SLEEP || c->wait == W_CLOCK || c->wait == W_IO ||
	    c->wait == W_YIELD)
		t = c->deadline;
	for (uint32_t i = 0; i < c->p->nobjs; i++) {
		if (c->p->objs[i].t != O_CQ)
			continue;
		struct dcq *d = c->p->objs[i].u.cq;

		for (uint32_t k = 0; k < d->n; k++) {
			sim_time_t w = d->q[(d->head + k) % d->cap].time;

			if (w > now && w < t)
				t = w;
		}
	}
	return t;
}

static void place_touch(struct srv *s, const uint8_t *dst, bool quiet, bool last);

static void place_cb(struct hca *h, void *dst, const void *src, uint32_t len, sim_time_t vis,
		     unsigned flags, void *ctx)
{
	bool quiet = flags & HCA_PLACE_QUIET, last = flags & HCA_PLACE_LAST;
	struct srv *s = ctx;
	struct place *p;

	(void)h;
	if (vis <= sim_now(s->eng) || !(p = malloc(sizeof(*p) + len))) {
		memcpy(dst, src, len);
		place_touch(s, dst, quiet, last);
		return;
	}
	p->next = NULL;
	p->vis = vis;
	p->dst = dst;
	p->len = len;
	p->quiet = quiet;
	p->last = last;
	memcpy(p->data, src, len);
	*s->places_tail = p;
	s->places_tail = &p->next;
}

/*
 * The process whose memory holds dst: it may be spinning on those bytes, if
 * they are quiet (an RDMA WRITE's: no completion will say they came). Bytes
 * a completion announces tell nothing of spinning: a program that computed
 * while a SEND landed (libfabric's rxm filling its buffer pools) would be
 * taken for a spinner, and any later pause of 0.1 ms of CPU for a spin.
 */
static void place_touch(struct srv *s, const uint8_t *dst, bool quiet, bool last)
{
	if (!quiet)
		return;
	for (struct client *c = s->clients; c; c = c->next)
		for (uint32_t i = 0; c == c->p && i < c->nobjs; i++)
			if (c->p->objs[i].t == O_SEG && dst >= (uint8_t *)c->p->objs[i].u.seg.map &&
			    dst < (uint8_t *)c->p->objs[i].u.seg.map + c->p->objs[i].u.seg.len) {
				/* a message's last bytes: a poll parked on an empty
				 * CQ ends now (try_wake), since the program may look
				 * at its memory between polls; once a message, not a
				 * packet, or a program that polls while a stream lands
				 * would be woken for every packet */
				if (last)
					c->quiet_gen++;
				if (c->wait == W_NONE && !c->zombie) {
					/* taken to wait while not in a wait: now it reacts */
					if (c->p->spinning)
						c->p->spinner = true;
					alive(c, client_cpu(c));
					c->p->touched = true;
				}
				return;
			}
}

/* Copy what is visible by now (everything when all is set). */
static void place_apply(struct srv *s, bool all)
{
	struct place **pp = &s->places;
	sim_time_t now = s->eng ? sim_now(s->eng) : 0;

	while (*pp) {
		struct place *p = *pp;

		if (all || p->vis <= now) {
			memcpy(p->dst, p->data, p->len);
			place_touch(s, p->dst, p->quiet, p->last);
			*pp = p->next;
			free(p);
		} else {
			pp = &p->next;
		}
	}
	s->places_tail = pp;
}

static sim_time_t place_next(const struct srv *s)
{
	sim_time_t t = SIM_TIME_MAX;

	for (const struct place *p = s->places; p; p = p->next)
		if (p->vis < t)
			t = p->vis;
	return t;
}

static void bury(struct srv *s, bool all)
{
	sim_time_t now = s->eng ? sim_now(s->eng) : 0;

	for (struct grave **gp = &s->graves; *gp;) {
		struct grave *g = *gp;

		if (all || now >= g->until) {
			if (g->len)
				munmap(g->map, g->len);
			else
				free(g->map);	/* a daemon buffer (buf_bury) */
			*gp = g->next;
			free(g);
		} else {
			gp = &g->next;
		}
	}
}

static void reap_zombies(struct srv *s, bool all)
{
	struct client **pp = &s->clients;
	sim_time_t now = sim_now(s->eng);

	bury(s, false);
	while (*pp) {
		struct client *c = *pp;

		if (c->zombie && (all || now >= c->zombie_until)) {
			place_apply(s, true);	/* nothing may land in freed memory */
			*pp = c->next;
			client_free(c);
		} else {
			pp = &c->next;
		}
	}
}

/*
 * Look again in d seconds (0: never). A timerfd, not a libev timer: epoll
 * waits whole milliseconds, and a spinning program's turn would cost a
 * millisecond more than its spin grace each time (ib_write_lat: 2.6 ms of
 * wall time per exchange instead of about two graces).
 */
static void spin_arm(struct srv *s, double d)
{
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };

	if (d > 0) {
		its.it_value.tv_sec = (time_t)d;
		its.it_value.tv_nsec = (long)((d - (double)(time_t)d) * 1e9);
		if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
			its.it_value.tv_nsec = 1;
	}
	timerfd_settime(s->spin_tfd, 0, &its, NULL);
}

/*
 * A thread not in a wait of ours (the thread of a joined connection, or
 * the process's first thread): is it blocked in the kernel on something
 * only another thread or a peer can end - a futex (sem_wait, a condition
 * variable, pthread_join), a pipe? Its state is S and its task clock has
 * not moved since the last look, so it did not run in between. Then,
 * while every other thread and process waits too, nothing can wake it
 * but the clock: the state is stable, and the decision does not depend
 * on when it was made. Not sure yet: *due is when to look again.
 */
static bool thread_blocked(struct client *c, ev_tstamp *due)
{
	pid_t pid = c->p->peer, tid = c->tid > 0 ? c->tid : c->peer;
	char path[64], buf[256];
	double v;
	ssize_t n;
	int fd;

	if (pid <= 0 || tid <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && kill(pid, 0) == 0)
		return true;	/* the thread has ended, its process lives: it calls no more */
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	const char *r = strrchr(buf, ')');	/* "tid (comm) S ..." */

	if (!r || r[1] != ' ' || r[2] != 'S') {
		c->tperf_seen = -1;
		*due = SPIN_RECHECK_S;	/* it may be on its way to block */
		return false;
	}
	if (c == c->p && tid == c->peer) {
		v = perf_cpu(c);	/* the main thread's, which spin detection reads too */
	} else {
		int64_t x = perf_read(&c->tperf_fd);

		v = x >= 0 ? (double)x * 1e-9 : -2;	/* -2: no clock, the state alone decides */
	}
	if (c->tperf_seen != -1 && v == c->tperf_seen)
		return true;
	c->tperf_seen = v;
	*due = SPIN_RECHECK_S;
	return false;
}

/* A joined thread's own CPU time (its task clock), -1 unknown. */
static double thread_cpu(struct client *c)
{
	int64_t v = perf_read(&c->tperf_fd);

	return v < 0 ? -1 : (double)v * 1e-9;
}

/*
 * A joined thread that has used SPIN_FIRST_S of its own CPU since its last
 * message (SPIN_GRACE_EXACT_S once it has been seen to) spins on something
 * the shim does not see; *due says when to look again.
 */
static bool thread_spins(struct client *c, ev_tstamp *due)
{
	double v = thread_cpu(c), grace = c->tspinner ? SPIN_GRACE_EXACT_S : SPIN_FIRST_S;

	if (v < 0 || c->tquiet < 0) {
		c->tquiet = v;
		return false;
	}
	if (v - c->tquiet >= grace) {
		c->tspinner = true;
		return true;
	}
	*due = grace - (v - c->tquiet);
	return false;
}

static void advance(struct srv *s)
{
	if (s->in_advance)
		return;
	s->in_advance = true;
	s->advances++;
	spin_arm(s, 0);
	for (unsigned stalls = 0;;) {
		sim_time_t now = sim_now(s->eng), t = SIM_TIME_MAX;
		uint64_t events = s->eng->events;
		bool live = false, running = false, timed = false, dropped;
		sim_time_t next;
		ev_tstamp rt = ev_time(), spin_due = 0, due;

		place_apply(s, false);
		cm_apply(s);
		/* each process's events first: a thread's connection waiting for
		 * a CQ event comes before its process's in the list */
		for (struct client *c = s->clients; c; c = c->next) {
			if (!c->zombie && c == c->p) {
				c->holds = false;
				alarm_due(c, now);
				cq_events(c, now);
			}
		}
		/* a free turn goes first: who runs next is decided before the
		 * clock may move */
		for (struct client *c = s->clients; c; c = c->next) {
			if (c == c->p && turns(c) && !c->turn)
				turn_pass(c, c->turn_last, now, false);
			if (!turns(c) && !c->zombie && c->turn_q) {
				/* its process has one thread left: no turns */
				c->turn_q = false;
				ev_io_start(s->loop, &c->w);
			}
			if (!turns(c) && !c->zombie && (c->yielded || c->wait == W_YIELD)) {
				/* one thread left: its yield ends (it spun on what
				 * the others did, and they are gone) */
				c->yielded = false;
				c->clock_q = CLOCK_Q_MIN;
				srv_status(c, 0);
				wake(c);
			}
		}
		dropped = false;
		for (struct client *c = s->clients; c; c = c->next) {
			if (c->zombie)
				continue;
			live = true;
			if (c->wait == W_IO && c->io_hold_rt > rt && !io_ready(c->io_fd)) {
				/* an outsider's answer may be on its way (op_io_begin) */
				running = true;
				if (spin_due <= 0 || c->io_hold_rt - rt < spin_due)
					spin_due = c->io_hold_rt - rt;
				continue;
			}
			if (turns(c) && (c->turn_q || c->yielded ||
					 (c->p->turn == c && io_ready(c->fd)))) {
				/* it can run, or has spoken: the clock waits */
				running = true;
				c->p->holds = true;
				continue;
			}
			if (turns(c) && c->wait != W_NONE) {
				/* its wait ends when it has the turn (turn_pass);
				 * one that woke in the kernel meanwhile runs then */
				if (c->wait == W_IO && !c->io_latched && io_ready(c->io_fd))
					c->io_latched = true;
				if (c->io_latched) {
					running = true;
					c->p->holds = true;
					continue;
				}
				if (c->wait != W_IO || c->deadline != SIM_TIME_MAX || c->io_fabric)
					timed = true;
				continue;
			}
			if (c->wait != W_NONE && !try_wake(c, now)) {
				if (c->wait != W_IO || c->deadline != SIM_TIME_MAX ||
				    c->io_fabric)
					timed = true;
				continue;
			}
			/* A thread of a process with several that call the shim:
			 * it waits too when it is blocked in the kernel on what
			 * only another thread or a peer can end (rping's main
			 * thread in sem_wait while its CM thread waits here). */
			if (c != c->p || c->nthreads) {
				due = 0;
				if (thread_blocked(c, &due)) {
					dropped |= turn_drop(c);
					continue;
				}
				if (due > 0 && (spin_due <= 0 || due < spin_due))
					spin_due = due;
				if (c != c->p) {
					/* spinning without a word: on a clock only
					 * time can move (UCX's async thread when its
					 * context is taken), it waits - unless the
					 * shim works for it (BUSY) */
					if (!c->busy && thread_spins(c, &due)) {
						if (s->trace)
							fprintf(stderr, "ibfab serve: t=%" PRIu64
								" pid %u tid %d counts as waiting: "
								"spins\n", (uint64_t)now,
								c->p->pid, (int)c->tid);
						dropped |= turn_drop(c);
						timed = true;
						continue;
					}
					if (due > 0 && (spin_due <= 0 || due < spin_due))
						spin_due = due;
					running = true;
					c->p->holds = true;
					continue;
				}
			}
			if (turns(c) && c->p->turn == c && !c->busy) {
				due = 0;
				if (turn_slice_over(c, &due)) {
					if (s->trace)
						fprintf(stderr, "ibfab serve: t=%" PRIu64 " pid %u "
							"used its time slice\n", (uint64_t)now,
							c->p->pid);
					dropped |= turn_drop(c);
				} else if (due > 0 && (spin_due <= 0 || due < spin_due)) {
					spin_due = due;
				}
			}
			/* It runs - unless it spins on its memory or sleeps where
			 * the shim cannot see. Only a program with a connected QP
			 * has anything to spin for (before that, silence is
			 * start-up work), and one whose next message is already
			 * here has spoken. */
			if (c->p->connected && !io_ready(c->fd)) {
				/* (a spinner spins until bytes land: alive()) */
				if (c->p->spun_in == s->advances || silent_wait(c, rt, &due)) {
					if (s->trace && c->p->spun_in != s->advances)
						fprintf(stderr, "ibfab serve: t=%" PRIu64 " pid %u "
							"counts as waiting: %s\n", (uint64_t)now,
							c->p->pid, c->p->spinning ? "spins" : "asleep");
					if (c->p->spinning)
						c->p->spun_in = s->advances;
					dropped |= turn_drop(c);
					timed = true;
					continue;
				}
				if (spin_due <= 0 || due < spin_due)
					spin_due = due;
			}
			running = true;
			c->p->holds = true;	/* the clock waits for it (watch_cb) */
		}
		if (dropped)
			continue;	/* the turn goes on before the clock moves */
		/*
		 * A thread that polls an empty CQ while another thread of its
		 * process runs without the turn (let go by a rule above: it
		 * may spin on a flag the poller is to set) gets its empty
		 * answer now, as a real poll returns at once, and the turn; the
		 * clock stays.
		 */
		if (running)
			for (struct client *c = s->clients; c; c = c->next) {
				if (c->zombie || c->wait != W_POLL || !c->p->holds || c->p->turn)
					continue;
				poll_answer_now(c);
				poll_run_break(c);
				if (turns(c))
					c->p->turn = c->p->turn_last = c;
			}
		if (running && spin_due > 0) {
			/* look again once the silent ones may count as waiting */
			spin_arm(s, spin_due < SPIN_RECHECK_S ? SPIN_RECHECK_S : spin_due);
		}
		if (!live)
			reap_zombies(s, true);
		/* Programs that all wait on each other's sockets exchange bytes in
		 * no simulated time: the clock moves only for someone waiting on
		 * the fabric (a CQ, a channel's event, or a poll whose fds take in
		 * a channel's) or a timer (else it would run on, by however long
		 * the host takes to start the peer, and runs would differ). */
		if (running || !live || !timed)
			break;
		for (struct client *c = s->clients; c; c = c->next) {
			/* a dead process's objects go at their time: its peers
			 * may wait for what that says (a CM's REJ or DREQ) */
			sim_time_t d = c->zombie ? c->zombie_until : next_deadline(c, now);

			if (d < t)
				t = d;
			if (!c->zombie && c->p->alarm_at < t)
				t = c->p->alarm_at;
		}
		if (place_next(s) < t)
			t = place_next(s);
		if (cm_next(s) < t)
			t = cm_next(s);
		if (sim_peek_time(s->eng, &next) && next < t)
			t = next;
		if (t == SIM_TIME_MAX)
			break;	/* all wait on the outside world */
		if (t < now)
			t = now;
		/*
		 * A timeout on descriptors a process outside the simulation may
		 * make ready (a rank's PMIx library waiting 2 s for mpirun's
		 * daemon to acknowledge its finalize) passes only once it has
		 * passed in real time too: the outsider runs in real time, and
		 * a timeout that fired at once in simulated time would end the
		 * wait before it could answer. Nothing moves the clock up to that
		 * deadline until then; what comes before it runs as usual.
		 */
		{
			double hold = 0;

			for (struct client *c = s->clients; c; c = c->next)
				if (!c->zombie && c->wait == W_IO && c->io_real_due > rt &&
				    c->deadline <= t && (hold <= 0 || c->io_real_due - rt < hold))
					hold = c->io_real_due - rt;
			if (hold > 0) {
				if (s->trace)
					fprintf(stderr, "ibfab serve: t=%" PRIu64 " a timeout on "
						"descriptors outside the simulation waits "
						"%.6f s of real time\n", (uint64_t)t, hold);
				spin_arm(s, hold);
				break;
			}
		}
		sim_run_until(s->eng, t);
		clock_publish(s);
		reap_zombies(s, false);
		/*
		 * Every pass either moves the clock, dispatches an event or wakes
		 * someone (the next pass then breaks on running). A pass that does
		 * none of these would repeat for ever inside this callback, deaf to
		 * SIGTERM: a model bug. Say so, fail the waits that can never end
		 * (EDEADLK: the programs exit rather than hang) and go back to the
		 * loop, where a message or a signal can still reach us.
		 */
		if (sim_now(s->eng) == now && s->eng->events == events) {
			if (++stalls >= 3) {
				fprintf(stderr, "ibfab serve: the fabric makes no progress at "
					"t=%" PRIu64 " ps (next instant %" PRIu64 " ps); "
					"failing the waits on it\n", (uint64_t)now, (uint64_t)t);
				for (struct client *c = s->clients; c; c = c->next) {
					if (!c->zombie && c->wait != W_NONE && c->wait != W_IO) {
						wake(c);
						srv_status(c, EDEADLK);
					}
				}
				break;
			}
		} else {
			stalls = 0;
		}
	}
	s->in_advance = false;
}

/* ---- requests ----------------------------------------------------------- */

/*
 * A thread's connection joins its process: the token the process's HELLO
 * got, from the same process (the kernel's pid). From now on its requests
 * act on the process's objects; it waits on its own.
 */
static int thread_join(struct client *c, const struct shim_req *q)
{
	struct srv *s = c->s;
	struct client *x;

	for (x = s->clients; x; x = x->next)
		if (x == x->p && x->hello && !x->zombie && x->token == q->u.hello.join &&
		    c->peer > 0 && x->peer == c->peer)
			break;
	if (!x) {
		srv_log(s, "pid %d: a thread's connection with no process of its own: refused",
			(int)c->peer);
		return EPERM;
	}
	if (c->perf_fd >= 0)
		close(c->perf_fd);	/* the process's clock is x's */
	c->perf_fd = -1;
	if (c->pf_fd >= 0)
		close(c->pf_fd);
	c->pf_fd = -1;
	c->p = x;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task/%u", (int)c->peer, q->u.hello.tid);
	if (!q->u.hello.tid || access(path, F_OK))
		return EPERM;	/* not a thread of that process */
	c->tid = (pid_t)q->u.hello.tid;
	c->tperf_fd = perf_open(c->tid);
	c->hello = true;
	x->nthreads++;
	/*
	 * From now on its threads take turns. A thread that joins while
	 * another runs - the first one not in a wait of ours, or the one with
	 * the turn - is a thread that has just been made: it runs once that
	 * one waits or yields, as if the host had run its maker first (its
	 * answer waits, turn_take). Else it runs now.
	 */
	if (x->turn || (x->nthreads == 1 && x->wait == W_NONE && !x->zombie)) {
		if (!x->turn) {
			x->turn = x;
			x->turn_last = x;
		}
		c->yielded = true;
		return NO_REPLY;
	}
	x->turn = c;
	x->turn_last = c;
	return 0;
}

/* The parent of process pid (/proc/PID/stat's fourth field), or 0. */
static pid_t parent_of(pid_t pid)
{
	char path[48], buf[512];
	const char *r;
	int fd, ppid = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* "pid (comm) S ppid ...": comm may hold spaces and parentheses */
	r = strrchr(buf, ')');
	if (!r || sscanf(r + 1, " %*c %d", &ppid) != 1)
		return 0;
	return (pid_t)ppid;
}

static int do_hello(struct client *c, const struct shim_req *q)
{
	struct srv *s = c->s;
	struct shim_rep r;
	int k, node, port;
	const struct net_port *np;

	if (q->u.hello.magic != SHIM_MAGIC || q->u.hello.version != SHIM_VERSION)
		return EPROTO;
	if (q->u.hello.join)
		return thread_join(c, q);
	char host[SHIM_NAME_LEN + 1];

	memcpy(host, q->u.hello.host, SHIM_NAME_LEN);
	host[SHIM_NAME_LEN] = 0;
	if (host[0]) {
		node = net_find_host(&s->net, host);
		if (node < 0) {
			srv_log(s, "pid %u asked for unknown host '%s'", c->p->pid, host);
			return ENOENT;
		}
	} else {
		k = (int)(s->next_host++ % (uint32_t)s->nhosts);
		node = net_host(&s->net, k);
	}
	c->p->hca = fab_hca(s->f, node);
	if (!c->p->hca)
		return ENODEV;
	c->p->node = node;
	/* the pid in HELLO is only compared: another pid namespace sees
	 * another number, a hostile client any number */
	if (c->p->peer <= 0)
		c->p->pid = q->u.hello.pid;
	else if (q->u.hello.pid != (uint32_t)c->p->peer)
		srv_log(s, "pid %u says it is pid %u: the kernel's word is taken", c->p->pid,
		      q->u.hello.pid);
	c->hello = true;
	/* the thread that attached, if it is one of the process's (another
	 * than its main thread: its own task clock for thread_blocked) */
	if (c->peer > 0 && q->u.hello.tid > 0 && (pid_t)q->u.hello.tid != c->peer) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/task/%u", (int)c->peer, q->u.hello.tid);
		if (!access(path, F_OK)) {
			c->tid = (pid_t)q->u.hello.tid;
			c->tperf_fd = perf_open(c->tid);
		}
	}
	port = net_first_port(&s->net, node);
	np = &s->net.nodes[node].ports[port < 0 ? 1 : port];
	memset(&r, 0, sizeof(r));
	r.u.hello.host_index = (uint32_t)node;
	for (int h = 0; h < s->nhosts; h++)
		if (net_host(&s->net, h) == node)
			r.u.hello.addr = shim_host_addr((uint32_t)h);
	r.u.hello.nhosts = (uint32_t)s->nhosts;
	r.u.hello.lid = hca_lid(c->p->hca);
	r.u.hello.sm_lid = 1;
	r.u.hello.lanes = s->p.width_forced || !np->lanes ? s->p.lanes : np->lanes;
	r.u.hello.speed = s->p.speed_forced || np->speed == LINK_SPEED_NONE ? s->p.speed : np->speed;
	for (uint32_t m = 256, code = 1; m <= 4096; m <<= 1, code++)
		if (m == s->p.mtu)
			r.u.hello.mtu_code = (uint8_t)code;
	r.u.hello.link_layer = fab_is_eth(&s->p) ? 2 : 1;	/* IBV_LINK_LAYER_ETHERNET : _INFINIBAND */
	r.u.hello.atomics = hca_rc_atomics(c->p->hca);
	r.u.hello.faults = c->s->faults;
	r.u.hello.guid = np->guid ? np->guid : 0x0002c90300000000ULL + (uint64_t)node;
	snprintf(r.u.hello.host, sizeof(r.u.hello.host), "%s", s->net.nodes[node].desc);
	snprintf(r.u.hello.fabric, sizeof(r.u.hello.fabric), "%s", fab_fabric_names[s->p.fabric]);
	/* a secret of the process's, for its threads' connections (checked
	 * with the kernel's pid too) */
	if (getrandom(&c->token, sizeof(c->token), 0) != (ssize_t)sizeof(c->token))
		c->token = (uint64_t)ev_time() * 1000003u ^ (uint64_t)c->peer << 32;
	c->token |= 1;	/* 0 is no token */
	r.u.hello.token = c->token;
	/* a stamp on the clock page for the process (alive), the lowest free */
	r.u.hello.alive_slot = SHIM_ALIVE_NONE;
	for (int i = 0; i < SHIM_ALIVE_SLOTS && c->p == c && c->alive_slot < 0; i++)
		if (!(s->alive_used[i / 64] & (1ULL << (i % 64)))) {
			s->alive_used[i / 64] |= 1ULL << (i % 64);
			c->alive_slot = i;
			s->clk->alive_ps[i] = sim_now(s->eng);
		}
	if (c->alive_slot >= 0)
		r.u.hello.alive_slot = (uint32_t)c->alive_slot;
	s->attached++;
	/* it has come: its announcement (op_pending) holds nothing any more;
	 * nor does its parent's, if it forked it to be the same host and do
	 * the work (qperf's server forks one for each test and waits for it,
	 * unseen); a child that is another host is a program of its own */
	pid_t parent = c->peer > 0 ? parent_of(c->peer) : 0;

	for (struct client *x = s->clients; x; x = x->next)
		if (x->pending && !x->zombie && x->peer > 0 &&
		    (x->peer == c->peer || (x->peer == parent && x->pend_node == node)))
			client_detach(x);
	srv_log(s, "pid %u attached as host %s (LID %u)", c->p->pid, s->net.nodes[node].desc,
	      hca_lid(c->p->hca));
	if (!c->p->cpu_ok)
		srv_log(s, "pid %u: its CPU time cannot be read: real time decides when it spins "
		      "on memory, so a loaded host may change what it prints", c->p->pid);
	srv_reply(c, &r, s->clk_fd);
	return -1;	/* replied */
}

static int do_seg_add(struct client *c, const struct shim_req *q, const uint8_t *tail, int *fd)
{
	uint64_t len = q->u.seg.length;
	uint32_t h;
	void *m;
	struct stat st;
	int rc;

	if (*fd < 0)
		return EBADF;
	/*
	 * The daemon reads and writes these pages for the fabric: a file that
	 * could shrink under the mapping would kill it with SIGBUS, and every
	 * program with it. So only a memfd sealed against shrinking is taken
	 * (the shim seals its own), and its size is checked after the seal.
	 */
	int seals = fcntl(*fd, F_GET_SEALS);

	if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
		srv_log(c->s, "pid %u: a memory segment not sealed against shrinking: refused",
		      c->p->pid);
		return EPERM;
	}
	if (!len || len > (1ULL << 40) || fstat(*fd, &st) || (uint64_t)st.st_size < len ||
	    q->inline_len % sizeof(uint32_t))
		return EINVAL;
	/* Segments this one takes the place of (the shim moved their pages
	 * into it): each must be this process's, page-aligned and inside. */
	uint32_t nalias = q->inline_len / (uint32_t)sizeof(uint32_t);
	long pg = sysconf(_SC_PAGESIZE);

	for (uint32_t i = 0; i < nalias; i++) {
		uint32_t ah;

		memcpy(&ah, tail + i * sizeof(ah), sizeof(ah));
		struct obj *o = srv_obj_get(c, ah, O_SEG);

		if (!o || o->u.seg.base < q->u.seg.base ||
		    o->u.seg.base + o->u.seg.len > q->u.seg.base + len ||
		    (o->u.seg.base - q->u.seg.base) % (uint64_t)pg)
			return EINVAL;
	}
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	if (m == MAP_FAILED)
		return errno;
	/* Their views become the new memfd's pages, where the program now has
	 * them: the regions registered on them see its bytes as before. The
	 * engine does not run while this request is served, so no placement
	 * falls between the program's copy and this. */
	for (uint32_t i = 0; i < nalias; i++) {
		uint32_t ah;

		memcpy(&ah, tail + i * sizeof(ah), sizeof(ah));
		struct dseg *g = &srv_obj_get(c, ah, O_SEG)->u.seg;

		if (mmap(g->map, g->len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, *fd,
			 (off_t)(g->base - q->u.seg.base)) == MAP_FAILED) {
			rc = errno;
			srv_log(c->s, "pid %u: a segment's pages could not follow it: %s",
				c->p->pid, strerror(rc));
			munmap(m, len);
			return rc;
		}
	}
	rc = srv_obj_new(c, O_SEG, &h);
	if (rc) {
		munmap(m, len);
		return rc;
	}
	c->p->objs[h].u.seg = (struct dseg){ .map = m, .len = len, .base = q->u.seg.base };
	struct shim_rep r;

	memset(&r, 0, sizeof(r));
	r.u.obj.handle = h;
	srv_reply(c, &r, -1);
	return -1;
}

static int do_reg_mr(struct client *c, const struct shim_req *q)
{
	struct obj *o = srv_obj_get(c, q->u.reg_mr.seg, O_SEG);
	struct hca_mr *mr;
	struct shim_rep r;
	uint32_t h;
	int rc;

	if (!o)
		return EBADF;
	if (q->u.reg_mr.offset > o->u.seg.len ||
	    q->u.reg_mr.length > o->u.seg.len - q->u.reg_mr.offset ||
	    q->u.reg_mr.addr != o->u.seg.base + q->u.reg_mr.offset)
		return EINVAL;
	mr = hca_reg_mr(c->p->hca, (char *)o->u.seg.map + q->u.reg_mr.offset, q->u.reg_mr.addr,
			q->u.reg_mr.length, q->u.reg_mr.access & 0xf, HCA_MEM_HOST);
	if (!mr)
		return ENOMEM;
	rc = srv_obj_new(c, O_MR, &h);
	if (rc) {
		hca_dereg_mr(mr);
		return rc;
	}
	c->p->objs[h].u.mr = mr;
	memset(&r, 0, sizeof(r));
	r.u.obj.handle = h;
	r.u.obj.lkey = mr->lkey;
	r.u.obj.rkey = mr->rkey;
	srv_reply(c, &r, -1);
	return -1;
}

static int do_create_cq(struct client *c, const struct shim_req *q)
{
	uint32_t cqe = q->u.create_cq.cqe, h;
	struct dcq *d;
	struct shim_rep r;
	int rc;

	if (!cqe || cqe > (1u << 20))
		return EINVAL;
	if (q->u.create_cq.channel >= 0 && !srv_obj_get(c, (uint32_t)q->u.create_cq.channel, O_CHAN))
		return EBADF;
	d = calloc(1, sizeof(*d));
	if (!d)
		return ENOMEM;
	d->q = calloc(cqe, sizeof(*d->q));
	d->qseq = calloc(cqe, sizeof(*d->qseq));
	d->qsg = calloc(cqe, sizeof(*d->qsg));
	/* the model's own queue only passes completions through to ours */
	d->cq = d->q && d->qseq && d->qsg ? hca_create_cq(c->p->hca, cqe, cq_notify, d) : NULL;
	rc = d->cq ? srv_obj_new(c, O_CQ, &h) : ENOMEM;
	if (rc) {
		if (d->cq)
			hca_destroy_cq(d->cq);
		free(d->q);
		free(d->qseq);
		free(d->qsg);
		free(d);
		return rc;
	}
	d->c = c->p;	/* the process's: a thread's connection may go first */
	d->h = h;
	d->cap = cqe;
	d->chan = q->u.create_cq.channel;
	c->p->objs[h].u.cq = d;
	memset(&r, 0, sizeof(r));
	r.u.obj.handle = h;
	srv_reply(c, &r, -1);
	return -1;
}

static void dcq_free(struct dcq *d)
{
	hca_destroy_cq(d->cq);
	for (uint32_t i = 0; d->qsg && i < d->cap; i++)
		sgl_free(d->c->s, d->qsg[i]);
	free(d->q);
	free(d->qseq);
	free(d->qsg);
	free(d);
}

static int do_create_qp(struct client *c, const struct shim_req *q)
{
	struct hca_qp_init_attr a = { 0 };
	struct obj *scq = srv_obj_get(c, q->u.create_qp.send_cq, O_CQ);
	struct obj *rcq = srv_obj_get(c, q->u.create_qp.recv_cq, O_CQ);
	struct obj *srq = q->u.create_qp.srq >= 0 ?
			  srv_obj_get(c, (uint32_t)q->u.create_qp.srq, O_SRQ) : NULL;
	struct shim_rep r;
	struct dqp *d;
	uint32_t h;
	int rc;

	if (!scq || !rcq || (q->u.create_qp.srq >= 0 && !srq))
		return EBADF;
	if (q->u.create_qp.max_send_wr > 32768 || q->u.create_qp.max_recv_wr > 32768 ||
	    q->u.create_qp.max_send_sge > SHIM_MAX_SGE || q->u.create_qp.max_recv_sge > SHIM_MAX_SGE)
		return EINVAL;
	a.qp_type = (enum hca_qp_type)q->u.create_qp.type;
	a.send_cq = scq->u.cq->cq;
	a.recv_cq = rcq->u.cq->cq;
	a.srq = srq ? srq->u.srq : NULL;
	a.cap.max_send_wr = q->u.create_qp.max_send_wr;
	a.cap.max_recv_wr = q->u.create_qp.max_recv_wr;
	a.cap.max_inline_data = q->u.create_qp.max_inline > SHIM_MAX_INLINE ?
				SHIM_MAX_INLINE : q->u.create_qp.max_inline;
	a.sq_sig_all = q->u.create_qp.sq_sig_all != 0;
	if (q->u.create_qp.max_inline > SHIM_MAX_INLINE)
		return EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return ENOMEM;
	d->qp = hca_create_qp(c->p->hca, &a);
	if (!d->qp) {
		free(d);
		return EINVAL;
	}
	rc = srv_obj_new(c, O_QP, &h);
	if (rc) {
		hca_destroy_qp(d->qp);
		free(d);
		return rc;
	}
	d->type = (int)a.qp_type;
	d->scq = q->u.create_qp.send_cq;
	d->rcq = q->u.create_qp.recv_cq;
	d->srq = srq ? q->u.create_qp.srq : -1;
	d->max_send_wr = a.cap.max_send_wr;
	d->max_send_sge = q->u.create_qp.max_send_sge ? q->u.create_qp.max_send_sge : 1;
	d->max_recv_sge = q->u.create_qp.max_recv_sge ? q->u.create_qp.max_recv_sge : 1;
	d->rq_tail = &d->rq;
	c->p->objs[h].u.qp = d;
	memset(&r, 0, sizeof(r));
	r.u.qp.handle = h;
	r.u.qp.qpn = hca_qp_num(d->qp);
	r.u.qp.max_send_wr = a.cap.max_send_wr;
	r.u.qp.max_recv_wr = a.cap.max_recv_wr;
	r.u.qp.max_inline = a.cap.max_inline_data;
	srv_reply(c, &r, -1);
	return -1;
}

static void dqp_free(struct srv *s, struct dqp *d)
{
	if (hca_qp_state(d->qp) != HCA_QPS_ERR && hca_qp_state(d->qp) != HCA_QPS_RESET) {
		struct hca_qp_attr a = { .qp_state = HCA_QPS_ERR };

		s->async_mute++;	/* a QP being destroyed reports nothing */
		hca_modify_qp(d->qp, &a, HCA_QP_STATE);
		s->async_mute--;
	}
	hca_destroy_qp(d->qp);
	if (d->bounce)
		hca_dereg_mr(d->bounce);
	buf_bury(s, d->bounce_buf);
	for (uint32_t i = 0; d->gs && i < (d->max_send_wr ? d->max_send_wr : 1); i++) {
		if (d->gs[i].mr)
			hca_dereg_mr(d->gs[i].mr);
		buf_bury(s, d->gs[i].buf);
	}
	free(d->gs);
	while (d->rq) {
		struct sgl *e = d->rq;

		d->rq = e->next;
		sgl_free(s, e);
	}
	free(d);
}

static int do_modify_qp(struct client *c, const struct shim_req *q)
{
	struct obj *o = srv_obj_get(c, q->u.modify_qp.qp, O_QP);
	const struct shim_qp_attr *w = &q->u.modify_qp.attr;
	struct hca_qp_attr a = {
		.qp_state = (enum hca_qp_state)w->qp_state, .path_mtu = w->path_mtu,
		.dlid = w->dlid, .sl = w->sl, .dest_qp_num = w->dest_qp_num,
		.rq_psn = w->rq_psn, .sq_psn = w->sq_psn, .timeout = w->timeout,
		.retry_cnt = w->retry_cnt, .rnr_retry = w->rnr_retry,
		.min_rnr_timer = w->min_rnr_timer, .max_rd_atomic = w->max_rd_atomic,
		.max_dest_rd_atomic = w->max_dest_rd_atomic, .qkey = w->qkey,
		.access = w->access,
	};
	int rc;

	if (!o)
		return EBADF;
	if ((w->mask & HCA_QP_STATE) && w->qp_state > HCA_QPS_ERR)
		return EINVAL;
	rc = hca_modify_qp(o->u.qp->qp, &a, w->mask & 0x3fff);
	if (!rc && (w->mask & HCA_QP_STATE) &&
	    (w->qp_state == HCA_QPS_RTR || w->qp_state == HCA_QPS_RTS))
		c->p->connected = true;
	return rc < 0 ? -rc : rc;
}

static int do_post_send(struct client *c, const struct shim_req *q, const uint8_t *tail)
{
	struct obj *o = srv_obj_get(c, q->u.send.qp, O_QP);
	struct hca_send_wr wr = { 0 };
	int rc;

	if (!o)
		return EBADF;
	if (q->u.send.opcode > HCA_WR_ATOMIC_FETCH_AND_ADD)
		return EOPNOTSUPP;
	struct dqp *d = o->u.qp;

	wr.wr_id = q->u.send.wr_id;
	wr.opcode = (enum hca_wr_opcode)q->u.send.opcode;
	wr.send_flags = q->u.send.send_flags & (HCA_SEND_FENCE | HCA_SEND_SIGNALED |
						HCA_SEND_SOLICITED);
	if (q->u.send.send_flags & SHIM_SEND_LIST)
		wr.send_flags |= HCA_SEND_LIST;
	if (q->u.send.send_flags & SHIM_SEND_LIST_MORE)
		wr.send_flags |= HCA_SEND_LIST_MORE;
	wr.sg.addr = q->u.send.sg.addr;
	wr.sg.length = q->u.send.sg.length;
	wr.sg.lkey = q->u.send.sg.lkey;
	wr.imm_data = q->u.send.imm;
	wr.remote_addr = q->u.send.remote_addr;
	wr.rkey = q->u.send.rkey;
	wr.compare_add = q->u.send.compare_add;
	wr.swap = q->u.send.swap;
	wr.ah.dlid = q->u.send.dlid;
	wr.ah.sl = q->u.send.sl;
	wr.remote_qpn = q->u.send.remote_qpn;
	wr.remote_qkey = q->u.send.remote_qkey;
	if (q->u.send.num_sge > d->max_send_sge)
		return EINVAL;
	if (q->u.send.send_flags & SHIM_SEND_SGL) {
		uint32_t n = q->u.send.num_sge;

		if (n < 2 || q->inline_len != n * sizeof(struct shim_wire_sge) ||
		    wr.opcode == HCA_WR_RDMA_READ || wr.opcode >= HCA_WR_ATOMIC_CMP_AND_SWP)
			return EINVAL;
		struct shim_wire_sge g[SHIM_MAX_SGE];

		memcpy(g, tail, q->inline_len);
		rc = sgl_gather(c, d, g, n, &wr.sg);
		if (rc)
			return rc;
		rc = hca_post_send(d->qp, &wr);
		if (!rc)
			d->gnext++;
		return rc < 0 ? -rc : 0;
	}
	if (q->inline_len) {
		/* inline bytes live in a daemon-side buffer until the model
		 * reads them; one slot per send queue entry, so a slot is only
		 * reused once its WR has left the queue */
		uint32_t slots = d->max_send_wr ? d->max_send_wr : 1;

		if (q->inline_len > SHIM_MAX_INLINE || q->inline_len != q->u.send.sg.length)
			return EINVAL;
		if (!d->bounce) {
			d->bounce_buf = calloc(slots, SHIM_MAX_INLINE);
			if (!d->bounce_buf)
				return ENOMEM;
			d->bounce = hca_reg_mr(c->p->hca, d->bounce_buf, (uintptr_t)d->bounce_buf,
					       (uint64_t)slots * SHIM_MAX_INLINE,
					       HCA_ACCESS_LOCAL_WRITE, HCA_MEM_HOST);
			if (!d->bounce)
				return ENOMEM;
		}
		uint8_t *slot = d->bounce_buf + (size_t)(d->bounce_next % slots) * SHIM_MAX_INLINE;

		memcpy(slot, tail, q->inline_len);
		wr.sg.addr = (uintptr_t)slot;
		wr.sg.lkey = d->bounce->lkey;
		/* inline to the model too: no payload DMA, BlueFlame if it fits */
		wr.send_flags |= HCA_SEND_INLINE;
	}
	rc = hca_post_send(d->qp, &wr);
	if (!rc && q->inline_len)
		d->bounce_next++;	/* a refused post took no slot */
	return rc < 0 ? -rc : 0;
}

static int do_post_recv(struct client *c, const struct shim_req *q, const uint8_t *tail,
			bool srq)
{
	struct hca_recv_wr wr = { .wr_id = q->u.recv.wr_id };
	struct obj *o = srv_obj_get(c, q->u.recv.qp, srq ? O_SRQ : O_QP);
	struct dqp *d = srq || !o ? NULL : o->u.qp;
	uint32_t n = q->u.recv.num_sge;
	struct shim_wire_sge g[SHIM_MAX_SGE];
	struct sgl *e = NULL, **at = NULL;
	bool ud = d && d->type == HCA_QPT_UD;
	int rc;

	if (!o)
		return EBADF;
	if (n > (d ? d->max_recv_sge : SHIM_MAX_SGE))
		return EINVAL;
	wr.sg.addr = q->u.recv.sg.addr;
	wr.sg.length = q->u.recv.sg.length;
	wr.sg.lkey = q->u.recv.sg.lkey;
	if (q->inline_len) {
		if (n < 2 || q->inline_len != n * sizeof(g[0]))
			return EINVAL;
		memcpy(g, tail, q->inline_len);
	} else if (ud) {
		/* the first 40 bytes are the GRH slot: data lands after it */
		if (wr.sg.length < SHIM_UD_GRH)
			return EINVAL;
		wr.sg.addr += SHIM_UD_GRH;
		wr.sg.length -= SHIM_UD_GRH;
	}
	/* a list, or any receive of a queue that takes lists (its order) */
	if (q->inline_len || (d && d->max_recv_sge > 1)) {
		rc = sgl_recv(c, g, q->inline_len ? n : 0, ud, &wr, &e);
		if (rc)
			return rc;
	}
	/* listed before the post: a QP in the error state completes it at once */
	if (e && d) {
		at = d->rq_tail;
		*at = e;
		d->rq_tail = &e->next;
	} else if (e) {
		e->srq = (int32_t)q->u.recv.qp;
		for (at = &c->p->srq_sgls; *at; at = &(*at)->next)
			;
		*at = e;
	}
	rc = srq ? hca_post_srq_recv(o->u.srq, &wr) : hca_post_recv(d->qp, &wr);
	if (rc && e) {
		/* refused: nothing completed it, it is still last */
		*at = NULL;
		if (d)
			d->rq_tail = at;
		sgl_free(c->s, e);
	}
	return rc < 0 ? -rc : 0;
}

static void obj_destroy(struct client *c, uint32_t h)
{
	struct obj *o = &c->p->objs[h];
	struct client *p = c->p;

	/* its asynchronous events not yet read go with it (the handle may
	 * name another object soon); their counts stay on the eventfd, and
	 * the shim's look then finds no event */
	for (uint32_t i = 0; i < p->aq_n;)
		if (p->aq[i].handle == h && (o->t == O_QP || o->t == O_SRQ))
			memmove(p->aq + i, p->aq + i + 1, (--p->aq_n - i) * sizeof(*p->aq));
		else
			i++;

	switch (o->t) {
	case O_SEG:
		munmap(o->u.seg.map, o->u.seg.len);
		break;
	case O_MR:
		hca_dereg_mr(o->u.mr);
		break;
	case O_CQ:
		dcq_free(o->u.cq);
		break;
	case O_CHAN:
		close(o->u.ch->efd);
		free(o->u.ch->ev);
		free(o->u.ch);
		break;
	case O_SRQ:
		/* the model has no hca_destroy_srq: it is freed with the HCA */
		break;
	case O_QP:
		dqp_free(c->s, o->u.qp);
		break;
	case O_CMCH:
	case O_CMID:
		cm_obj_destroy(c, o, h);
		return;
	case O_FREE:
		break;
	}
	memset(o, 0, sizeof(*o));
}

static int do_destroy(struct client *c, uint32_t h, enum obj_type t)
{
	if (!srv_obj_get(c, h, t))
		return EBADF;
	if (t == O_CQ) {
		/* a CQ still used by a QP stays (the model would complete into
		 * freed memory) */
		for (uint32_t i = 0; i < c->p->nobjs; i++)
			if (c->p->objs[i].t == O_QP &&
			    (c->p->objs[i].u.qp->scq == h || c->p->objs[i].u.qp->rcq == h))
				return EBUSY;
	}
	if (t == O_CHAN) {
		for (uint32_t i = 0; i < c->p->nobjs; i++)
			if (c->p->objs[i].t == O_CQ && c->p->objs[i].u.cq->chan == (int32_t)h)
				return EBUSY;
	}
	obj_destroy(c, h);
	return 0;
}

/* A wait request: park the client; advance() answers it. */
void srv_park(struct client *c, enum wait_kind k, sim_time_t deadline, uint32_t h, uint32_t n)
{
	c->wait = k;
	c->deadline = deadline;
	c->wait_h = h;
	c->wait_n = n;
	c->wait_cqe_gen = c->p->cqe_gen;
	c->wait_quiet_gen = c->p->quiet_gen;
	c->wait_t0 = sim_now(c->s->eng);
}

sim_time_t srv_sat_add(sim_time_t a, sim_time_t b)
{
	return b > SIM_TIME_MAX - a ? SIM_TIME_MAX : a + b;
}


typedef int (*op_fn)(struct client *c, const struct shim_req *q, const uint8_t *tail, int *fd);

/* A reply carrying a new object's handle. */
static int reply_handle(struct client *c, uint32_t h)
{
	struct shim_rep r;

	memset(&r, 0, sizeof(r));
	r.u.obj.handle = h;
	srv_reply(c, &r, -1);
	return NO_REPLY;
}

static int op_hello(struct client *c, const struct shim_req *q, const uint8_t *tail, int *fd)
{
	(void)tail;
	(void)fd;
	return c->hello ? EPROTO : do_hello(c, q);
}

static int op_seg_add(struct client *c, const struct shim_req *q, const uint8_t *tail, int *fd)
{
	return do_seg_add(c, q, tail, fd);
}

static int op_reg_mr(struct client *c, const struct shim_req *q, const uint8_t *tail, int *fd)
{
	(void)tail;
	(void)fd;
	return do_reg_mr(c, q);
}

static int op_create_cq(struct client *c, const struct shim_req *q, const uint8_t *tail, int *fd)
{
	(void)tail;
	(void)fd;
	return do_create_cq(c, q);
}

/* DEREG_MR, DESTROY_CQ, _CHANNEL, _SRQ, _QP: the object type by op */
static int op_destroy(struct client *c, const struct shim_req *q, const uint8_t *tail, int *fd)
{
	static const enum obj_type type[SHIM_OP_MAX] = {
		[SHIM_OP_DEREG_MR] = O_MR, [SHIM_OP_DESTROY_CQ] = O_CQ,
		[SHIM_OP_DESTROY_CHANNEL] = O_CHAN, [SHIM_OP_DESTROY_SRQ] = O_SRQ,
		[SHIM_OP_DESTROY_QP] = O_QP,
	};

	(void)tail;
	(void)fd;
	return do_destroy(c, q->u.obj.handle, type[q->op]);
}

static int op_req_notify(struct client *c, const struct shim_req *q, const uint8_t *tail,
			 int *fd)
{
	struct obj *o = srv_obj_get(c, q->u.notify.cq, O_CQ);

	(void)tail;
	(void)fd;
	if (!o)
		return EBADF;
	o->u.cq->armed = true;
	o->u.cq->arm_seq = o->u.cq->pushed;
	o->u.cq->arm_time = sim_now(c->s->eng);
	return 0;
}

static int op_poll_cq(struct client *c, const struct shim_req *q, const uint8_t *tail, int *fd)
{
	struct obj *o = srv_obj_get(c, q->u.poll.cq, O_CQ);

	(void)tail;
	(void)fd;
	if (!o || !q->u.poll.n || q->u.poll.n > SHIM_MAX_WC)
		return o ? EINVAL : EBADF;
	if (c->poll_cq != q->u.poll.cq) {	/* another CQ: its runs are its own */
		c->poll_cq = q->u.poll.cq;
		c->poll_empty = 0;
	}
	if (poll_reply(c, o->u.cq, q->u.poll.n, false)) {
		poll_run_end(c);
		return NO_REPLY;
	}
	/*
	 * Empty: the program is busy-polling, i.e. waiting. The first empty
	 * poll of a run answers after one poll's cost (a program that polls
	 * until its CQ is empty and moves on pays no more); the second, where
	 * the last run on this CQ went on until a completion, parks as long as
	 * that run's last park (perftest's loop of post and poll: each WRITE's
	 * completion after two answers, not six). A completion on any of its
	 * CQs, bytes landing in its memory, or a timer still end the park at
	 * their instant, so only the empty answers become fewer.
	 */
	if (!c->poll_empty++)
		c->poll_t0 = sim_now(c->s->eng);
	else if (c->poll_empty == 2 && o->u.cq->poll_peak > c->poll_q)
		c->poll_q = o->u.cq->poll_peak;
	srv_park(c, W_POLL, srv_sat_add(sim_now(c->s->eng), c->poll_q), q->u.poll.cq, q->u.poll.n);
	c->poll_q = c->poll_q * 2 > POLL_Q_MAX ? POLL_Q_MAX : c->poll_q * 2;
	return NO_REPLY;
}

/*
 * Queue an asynchronous event for process c (its main connection) and
 * put one count on its context's eventfd, which makes a wait on that fd
 * (UCX's async thread, ibv_get_async_event) end at this simulated instant.
 */
static void async_push(struct srv *s, struct client *c, uint8_t type, uint32_t handle)
{
	if (c->aq_n == c->aq_cap) {
		uint32_t cap = c->aq_cap ? 2 * c->aq_cap : 8;
		void *v = cap <= 4096 ? realloc(c->aq, cap * sizeof(*c->aq)) : NULL;

		if (!v) {
			srv_log(s, "pid %u: asynchronous event %u lost (%u unread)", c->pid,
				(unsigned)type, c->aq_n);
			return;
		}
		c->aq = v;
		c->aq_cap = cap;
	}
	c->aq[c->aq_n].type = type;
	c->aq[c->aq_n++].handle = handle;
	if (c->async_efd >= 0) {
		uint64_t one = 1;

		if (write(c->async_efd, &one, sizeof(one)) < 0) {
			/* a full counter: the event is queued all the same */
		}
	}
}

/* An asynchronous event of an HCA (hca_async_fn): for the process whose
 * object it concerns; a port's, for every process on that HCA. */
static void async_cb(struct hca *h, enum hca_async_event ev, void *obj, void *ctx)
{
	struct srv *s = ctx;

	if (s->async_mute)
		return;
	if (ev == HCA_EV_PORT_ERR || ev == HCA_EV_PORT_ACTIVE) {
		for (struct client *c = s->clients; c; c = c->next)
			if (c == c->p && !c->zombie && c->hca == h)
				async_push(s, c, ev == HCA_EV_PORT_ERR ? SHIM_ASYNC_PORT_ERR :
									 SHIM_ASYNC_PORT_ACTIVE, 1);
		return;
	}

	for (struct client *c = s->clients; c; c = c->next) {
		if (c != c->p || c->zombie || c->hca != h)
			continue;
		for (uint32_t i = 0; i < c->nobjs; i++) {
			const struct obj *o = &c->objs[i];

			if (!((o->t == O_SRQ && (void *)o->u.srq == obj) ||
			      (o->t == O_QP && o->u.qp && (void *)o->u.qp->qp == obj)))
				continue;
			async_push(s, c, ev == HCA_EV_SRQ_LIMIT_REACHED ? SHIM_ASYNC_SRQ_LIMIT :
					 ev == HCA_EV_COMM_EST ? SHIM_ASYNC_COMM_EST :
					 ev == HCA_EV_QP_ACCESS_ERR ? SHIM_ASYNC_QP_ACCESS_ERR :
					 ev == HCA_EV_QP_REQ_ERR ? SHIM_ASYNC_QP_REQ_ERR :
								  SHIM_ASYNC_LAST_WQE, i);
			return;
		}
	}
}

/* Only an eventfd: the daemon writes a count on it at every event, and a
 * pipe or socket a program never reads would block it, and every program
 * with it (an eventfd's write waits only at 2^64 - 2 counts). */
static bool is_eventfd(int fd)
{
	char path[64], link[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return false;
	link[n] = 0;
	return !strcmp(link, "anon_inode:[eventfd]");
}

static int op_async_fd(struct client *c, const struct shim_req *q, const uint8_t *tail, int *fd)
{
	(void)q;
	(void)tail;
	if (*fd < 0 || !is_eventfd(*fd))
		return EBADF;
	if (c->p->async_efd >= 0)
		close(c->p->async_efd);
	c->p->async_efd = *fd;
	*fd = -1;
	return 0;
}

static int op_get_async(struct client *c, const struct shim_req *q, const uint8_t *tail, int *fd)
{
	struct client *p = c->p;
	struct shim_rep r;

	(void)q;
	(void)tail;
	(void)fd;
	if (!p->aq_n)
		return EAGAIN;
	memset(&r, 0, sizeof(r));
	r.u.async.type = p->aq[0].type;
	r.u.async.handle = p->aq[0].handle;
	memmove(p->aq, p->aq + 1, --p->aq_n * sizeof(*p->aq));
	srv_reply(c, &r, -1);
	return NO_REPLY;
}

/*
 * sched_yield: a thread that has the turn lets another thread of its
 * process that can run have it (turn_pass; one that polls an empty CQ
 * counts: it spins as this one does), and gets its answer when the turn
 * comes back. UCX's async thread yields when its worker's lock is taken.
 */
static int op_yield(struct client *c, const struct shim_req *q, const uint8_t *tail, int *fd)
{
	struct client *p = c->p;

	(void)q;
	(void)tail;
	(void)fd;
	if (!turns(c) || p->turn != c)
		return 0;
	p->turn = NULL;
	c->yielded = true;
	if (turn_pass(p, c, sim_now(c->s->eng), true)) {
		c->clock_q = CLOCK_Q_MIN;
		c->yield_run = 0;
		return NO_REPLY;
	}
	c->yielded = false;
	/* the first such yield goes on: a loop that polls or waits between
	 * its yields (Open MPI's progress loop when oversubscribed) parks
	 * there; and so does one beside a thread running without the turn
	 * (a rule let it go): that one holds the clock already */
	bool others_run = false;

	for (struct client *x = c->s->clients; x && !others_run; x = x->next)
		others_run = x->p == p && x != c && !x->zombie && x->wait == W_NONE;
	if (++c->yield_run < 2 || others_run) {
		p->turn = c;
		return 0;
	}
	/* No other thread can run: the others wait - for a timer, a
	 * completion, another process - and this one spins until they have
	 * done something. On hardware time passes while it spins; here it
	 * waits for the clock as a program reading it in a loop does
	 * (op_clock_wait: 1 us, doubling to 1 ms), or until another thread
	 * of its process has had the turn (turn_take). Going on at once would
	 * hold the clock, and a thread sleeping in simulated time would never
	 * wake to set what it spins on. */
	srv_park(c, W_YIELD, srv_sat_add(sim_now(c->s->eng), c->clock_q), 0, 0);
	if (c->s->trace)
		fprintf(stderr, "ibfab serve: t=%" PRIu64 " pid %u tid %d yields with no one to run: waits until t=%" PRIu64 "\n",
			(uint64_t)sim_now(c->s->eng), p->pid, (int)c->tid, (uint64_t)c->deadline);
	c->yield_gen = p->turn_gen;
	c->clock_q = c->clock_q * 2 > CLOCK_Q_MAX ? CLOCK_Q_MAX : c->clock_q * 2;
	return NO_REPLY;
}

static int op_query_port(struct client *c, const struct shim_req *q, const uint8_t *tail, int *fd)
{
	struct shim_rep r;

	(void)q;
	(void)tail;
	(void)fd;
	memset(&r, 0, sizeof(r));
	r.u.port.active = hca_port_active(c->p->hca);
	srv_reply(c, &r, -1);
	return NO_REPLY;
}

static int op_modify_srq(struct client *c, const struct shim_req *q, const uint8_t *tail, int *fd)
{
	struct obj *o = srv_obj_get(c, q->u.modify_srq.srq, O_SRQ);
	struct shim_rep r;

	(void)tail;
	(void)fd;
	if (!o)
		return EBADF;
	if (q->u.modify_srq.mask && hca_srq_set_limit(o->u.srq, q->u.modify_srq.limit))
		return EINVAL;
	memset(&r, 0, sizeof(r));
	r.u.srq.limit = hca_srq_limit(o->u.srq);
	srv_reply(c, &r, -1);
	return NO_REPLY;
}

static int op_create_channel(struct client *c, const struct shim_req *q, const uint8_t *tail,
			     int *fd)
{
	struct dchan *ch;
	uint32_t h;
	int rc = 0;

	(void)q;
	(void)tail;
	if (*fd < 0 || !is_eventfd(*fd))
		return EBADF;
	ch = calloc(1, sizeof(*ch));
	if (!ch || (rc = srv_obj_new(c, O_CHAN, &h))) {
		free(ch);
		return rc ? rc : ENOMEM;
	}
	ch->efd = *fd;
	*fd = -1;
	c->p->objs[h].u.ch = ch;
	return reply_handle(c, h);
}

static int op_get_cq_event(struct client *c, const struct shim_req *q, const uint8_t *tail,
			   int *fd)
{
	(void)tail;
	(void)fd;
	if (!srv_obj_get(c, q->u.obj.handle, O_CHAN))
		return EBADF;
	srv_park(c, W_EVENT, SIM_TIME_MAX, q->u.obj.handle, 0);
	return NO_REPLY;
}

static int op_create_srq(struct client *c, const struct shim_req *q, const uint8_t *tail,
			 int *fd)
{
	struct hca_srq *srq;
	uint32_t h;
	int rc = 0;

	(void)tail;
	(void)fd;
	if (!q->u.create_srq.max_wr || q->u.create_srq.max_wr > 32768)
		return EINVAL;
	srq = hca_create_srq(c->p->hca, q->u.create_srq.max_wr);
	if (!srq || (rc = srv_obj_new(c, O_SRQ, &h)))
		return rc ? rc : ENOMEM;
	c->p->objs[h].u.srq = srq;
	return reply_handle(c, h);
}

static int op_post_srq_recv(struct client *c, const struct shim_req *q, const uint8_t *tail,
			    int *fd)
{
	(void)fd;
	return do_post_recv(c, q, tail, true);
}

static int op_create_qp(struct client *c, const struct shim_req *q, const uint8_t *tail, int *fd)
{
	(void)tail;
	(void)fd;
	return do_create_qp(c, q);
}

static int op_modify_qp(struct client *c, const struct shim_req *q, const uint8_t *tail, int *fd)
{
	(void)tail;
	(void)fd;
	return do_modify_qp(c, q);
}

/* Completions of QP qpn in d's queue the program has not taken yet: *sq
 * and *rq are raised by those of its send and its receive queue. */
static void cq_pending(struct client *c, uint32_t h, uint32_t qpn, uint32_t *sq, uint32_t *rq)
{
	struct obj *o = srv_obj_get(c, h, O_CQ);

	if (!o)
		return;
	for (uint32_t k = 0; k < o->u.cq->n; k++) {
		const struct hca_wc *wc = &o->u.cq->q[(o->u.cq->head + k) % o->u.cq->cap];

		if (wc->qp_num == qpn)
			(*(wc->opcode >= HCA_WC_RECV ? rq : sq))++;
	}
}

/*
 * A post's answer says what the QP's queues hold after it, as the shim
 * counts (the bound from which it sends the next ones without waiting,
 * SHIM_OP_QUIET): the model's queues, plus the completions the program
 * has yet to take, each of which takes one off the shim's count.
 */
static int post_reply(struct client *c, uint32_t h, int rc)
{
	struct obj *o = srv_obj_get(c, h, O_QP);
	struct shim_rep r;

	memset(&r, 0, sizeof(r));
	r.status = rc;
	if (o) {
		struct dqp *d = o->u.qp;
		uint32_t sq = 0, rq = 0, qpn = hca_qp_num(d->qp);

		hca_qp_used(d->qp, &r.u.post.sq_used, &r.u.post.rq_used);
		cq_pending(c, d->scq, qpn, &sq, &rq);
		if (d->rcq != d->scq)
			cq_pending(c, d->rcq, qpn, &sq, &rq);
		r.u.post.sq_used += sq;
		r.u.post.rq_used += rq;
	}
	srv_reply(c, &r, -1);
	return NO_REPLY;
}

static int op_post_send(struct client *c, const struct shim_req *q, const uint8_t *tail, int *fd)
{
	(void)fd;
	return post_reply(c, q->u.send.qp, do_post_send(c, q, tail));
}

static int op_post_recv(struct client *c, const struct shim_req *q, const uint8_t *tail, int *fd)
{
	(void)fd;
	return post_reply(c, q->u.recv.qp, do_post_recv(c, q, tail, false));
}

static int op_sleep(struct client *c, const struct shim_req *q, const uint8_t *tail, int *fd)
{
	(void)tail;
	(void)fd;
	srv_park(c, W_SLEEP, srv_sat_add(sim_now(c->s->eng), q->u.sleep.ps), 0, 0);
	return NO_REPLY;
}

static int op_clock_wait(struct client *c, const struct shim_req *q, const uint8_t *tail,
			 int *fd)
{
	(void)q;
	(void)tail;
	(void)fd;
	srv_park(c, W_CLOCK, srv_sat_add(sim_now(c->s->eng), c->clock_q), 0, 0);
	c->clock_q = c->clock_q * 2 > CLOCK_Q_MAX ? CLOCK_Q_MAX : c->clock_q * 2;
	return NO_REPLY;
}

static int op_io_begin(struct client *c, const struct shim_req *q, const uint8_t *tail, int *fd)
{
	(void)tail;
	if (*fd >= 0) {
		sim_time_t now = sim_now(c->s->eng);

		srv_park(c, W_IO, q->u.io.deadline ? q->u.io.deadline : SIM_TIME_MAX, 0, 0);
		c->io_fd = *fd;
		c->io_fabric = q->u.io.fabric != 0;
		/* a process outside the simulation may answer it in real time:
		 * its timeout ends the wait once it has passed in both */
		c->io_real_due = 0;
		if ((q->u.io.outside & SHIM_IO_OUTSIDE) && q->u.io.deadline)
			c->io_real_due = ev_time() + (q->u.io.deadline > now ?
				(double)(q->u.io.deadline - now) * 1e-12 : 0);
		/* ... and it asked for an answer, most likely: the clock waits
		 * for it a while (advance), however soon or late the host runs
		 * the outsider (mpirun answering the ranks' fence) */
		c->io_hold_rt = 0;
		if (q->u.io.outside & SHIM_IO_OUTSIDER) {
			double hold = OUTSIDE_HOLD_S;

			if (q->u.io.deadline && (double)(q->u.io.deadline - now) * 1e-12 < hold)
				hold = q->u.io.deadline > now ? (double)(q->u.io.deadline - now) * 1e-12 : 0;
			c->io_hold_rt = ev_time() + hold;
		}
		*fd = -1;
	}
	return NO_REPLY;	/* notification: no reply */
}

static int op_io_end(struct client *c, const struct shim_req *q, const uint8_t *tail, int *fd)
{
	(void)q;
	(void)tail;
	(void)fd;
	/* the fd is readable and the program has not read it yet: the reply
	 * lets it. Until then the daemon sees the bytes there. */
	if (c->wait == W_IO)
		wake(c);
	else if (c->wait != W_NONE)
		return EPROTO;
	return 0;
}

static int op_alarm(struct client *c, const struct shim_req *q, const uint8_t *tail, int *fd)
{
	(void)tail;
	(void)fd;
	c->p->alarm_at = q->u.alarm.at ? q->u.alarm.at : SIM_TIME_MAX;
	c->p->alarm_every = q->u.alarm.every;
	return 0;
}

static int op_busy(struct client *c, const struct shim_req *q, const uint8_t *tail, int *fd)
{
	(void)q;
	(void)tail;
	(void)fd;
	c->busy = true;		/* until its next message (handle) */
	return NO_REPLY;
}

/*
 * A simulated host's program on its way (docs/shim.md, "Programs on their
 * way"): it opened a TCP connection before its first verbs call, and a
 * peer that has attached may already wait on that connection with a
 * timeout, which would pass in simulated time as fast as the host happens
 * to start this program. Until it attaches (its HELLO, on a connection of
 * its own, ends this one) or ends, it counts as running (advance: a
 * connection without HELLO does); a blocking wait it reports (IO_BEGIN,
 * IO_END) counts as waiting, as an attached program's does.
 */
static int op_pending(struct client *c, const struct shim_req *q, const uint8_t *tail, int *fd)
{
	char host[SHIM_NAME_LEN + 1];

	(void)tail;
	(void)fd;
	if (c->hello || c->pending || q->u.hello.magic != SHIM_MAGIC ||
	    q->u.hello.version != SHIM_VERSION || q->u.hello.join)
		return EPROTO;
	memcpy(host, q->u.hello.host, SHIM_NAME_LEN);
	host[SHIM_NAME_LEN] = 0;
	c->pending = true;
	c->pend_node = host[0] ? net_find_host(&c->s->net, host) : -1;
	if (c->s->trace)
		fprintf(stderr, "ibfab serve: t=%" PRIu64 " pid %u (host %s) is on its way: "
			"the clock waits for it\n", (uint64_t)sim_now(c->s->eng), c->p->pid, host);
	return 0;
}

/*
 * The program read the clock and found it moved since the daemon counted
 * it as running (its alive stamp, or for a thread its last answer), while
 * it ran: the daemon took it for spinning on its memory
 * (or asleep where the shim cannot see) and let the clock go on. It is
 * computing with time now (perftest's cycle-counter calibration right after
 * its peak search): the message itself makes it run (alive, in client_cb),
 * so from the answer on the clock stands still while it runs and moves
 * only in its waits, as the calibration needs. Without it the clock moved
 * in steps as fast as the host ran the other programs, and the calibration
 * read them as noise (r^2 < 0.9: 'Can't produce a report' under load).
 */
static int op_runs(struct client *c, const struct shim_req *q, const uint8_t *tail, int *fd)
{
	(void)c;
	(void)q;
	(void)tail;
	(void)fd;
	return 0;
}

static const op_fn ops[SHIM_OP_MAX] = {
	[SHIM_OP_HELLO] = op_hello,
	[SHIM_OP_PENDING] = op_pending,
	[SHIM_OP_SEG_ADD] = op_seg_add,
	[SHIM_OP_REG_MR] = op_reg_mr,
	[SHIM_OP_DEREG_MR] = op_destroy,
	[SHIM_OP_CREATE_CQ] = op_create_cq,
	[SHIM_OP_DESTROY_CQ] = op_destroy,
	[SHIM_OP_REQ_NOTIFY] = op_req_notify,
	[SHIM_OP_POLL_CQ] = op_poll_cq,
	[SHIM_OP_CREATE_CHANNEL] = op_create_channel,
	[SHIM_OP_ASYNC_FD] = op_async_fd,
	[SHIM_OP_GET_ASYNC] = op_get_async,
	[SHIM_OP_MODIFY_SRQ] = op_modify_srq,
	[SHIM_OP_QUERY_PORT] = op_query_port,
	[SHIM_OP_YIELD] = op_yield,
	[SHIM_OP_DESTROY_CHANNEL] = op_destroy,
	[SHIM_OP_GET_CQ_EVENT] = op_get_cq_event,
	[SHIM_OP_CREATE_SRQ] = op_create_srq,
	[SHIM_OP_DESTROY_SRQ] = op_destroy,
	[SHIM_OP_POST_SRQ_RECV] = op_post_srq_recv,
	[SHIM_OP_CREATE_QP] = op_create_qp,
	[SHIM_OP_MODIFY_QP] = op_modify_qp,
	[SHIM_OP_DESTROY_QP] = op_destroy,
	[SHIM_OP_POST_SEND] = op_post_send,
	[SHIM_OP_POST_RECV] = op_post_recv,
	[SHIM_OP_SLEEP] = op_sleep,
	[SHIM_OP_CLOCK_WAIT] = op_clock_wait,
	[SHIM_OP_IO_BEGIN] = op_io_begin,
	[SHIM_OP_IO_END] = op_io_end,
	[SHIM_OP_CM_CREATE_CHANNEL] = cm_op,
	[SHIM_OP_CM_DESTROY_CHANNEL] = cm_op,
	[SHIM_OP_CM_CREATE_ID] = cm_op,
	[SHIM_OP_CM_DESTROY_ID] = cm_op,
	[SHIM_OP_CM_BIND] = cm_op,
	[SHIM_OP_CM_RESOLVE_ADDR] = cm_op,
	[SHIM_OP_CM_RESOLVE_ROUTE] = cm_op,
	[SHIM_OP_CM_LISTEN] = cm_op,
	[SHIM_OP_CM_CONNECT] = cm_op,
	[SHIM_OP_CM_ACCEPT] = cm_op,
	[SHIM_OP_CM_REJECT] = cm_op,
	[SHIM_OP_CM_ESTABLISH] = cm_op,
	[SHIM_OP_CM_DISCONNECT] = cm_op,
	[SHIM_OP_CM_GET_EVENT] = cm_op,
	[SHIM_OP_CM_MIGRATE] = cm_op,
	[SHIM_OP_ALARM] = op_alarm,
	[SHIM_OP_BUSY] = op_busy,
	[SHIM_OP_RUNS] = op_runs,
};

/*
 * What every request must be before its handler sees it: its length (the
 * request, its inline bytes, and the shim's CPU-time trailer or not), a
 * HELLO first, and, while the client is parked, only IO_END (or a request
 * that ends an IO wait). Takes the CPU time the client had used as it
 * sent the request. 0, or the status to reply.
 */
static int check_request(struct client *c, const struct shim_req *q, size_t len)
{
	size_t body = sizeof(*q) + q->inline_len;
	shim_cpu_trailer cpu;

	if (q->inline_len > SHIM_MAX_TAIL ||
	    (len != body && len != body + sizeof(cpu)) ||
	    (q->inline_len && q->op != SHIM_OP_POST_SEND && q->op != SHIM_OP_POST_RECV &&
	     q->op != SHIM_OP_POST_SRQ_RECV && q->op != SHIM_OP_CM_CONNECT &&
	     q->op != SHIM_OP_CM_ACCEPT && q->op != SHIM_OP_CM_REJECT &&
	     q->op != SHIM_OP_SEG_ADD))
		return EPROTO;
	/* the CPU time it had used as it sent this: exact from the shim, else
	 * our own reading, which may lag while it still runs */
	if (len == body + sizeof(cpu)) {
		memcpy(&cpu, (const uint8_t *)q + body, sizeof(cpu));
		c->sent_cpu = (double)cpu * 1e-9;
	} else {
		c->sent_cpu = client_cpu(c);
	}
	if (!c->hello && q->op != SHIM_OP_HELLO && q->op != SHIM_OP_PENDING &&
	    !(c->pending && (q->op == SHIM_OP_IO_BEGIN || q->op == SHIM_OP_IO_END)))
		return EPROTO;
	if (c->wait != W_NONE && q->op != SHIM_OP_IO_END) {
		/* a request while parked: only a notification may come now */
		if (c->wait != W_IO)
			return EPROTO;
		wake(c);
	}
	return 0;
}

static void handle(struct client *c, const struct shim_req *q, size_t len, int *fd)
{
	int rc = check_request(c, q, len);

	if (!rc) {
		/* a request other than a poll (or an IO notification) ends a
		 * run of empty polls, and one other than a clock wait a run of
		 * clock spins: their back-off starts again. A look for an
		 * rdma_cm event that finds none belongs to the polling loop
		 * (libfabric's rxm looks at its CM channel between polls). */
		if (q->op != SHIM_OP_POLL_CQ && q->op != SHIM_OP_IO_BEGIN &&
		    q->op != SHIM_OP_IO_END && q->op != SHIM_OP_CM_GET_EVENT)
			poll_run_break(c);
		if (q->op != SHIM_OP_CLOCK_WAIT && q->op != SHIM_OP_IO_BEGIN &&
		    q->op != SHIM_OP_IO_END && q->op != SHIM_OP_YIELD)
			c->clock_q = CLOCK_Q_MIN;
		if (q->op != SHIM_OP_YIELD)
			c->yield_run = 0;
		c->busy = false;
		if (c != c->p)
			c->tquiet = thread_cpu(c);
		rc = q->op < SHIM_OP_MAX && ops[q->op] ?
			     ops[q->op](c, q, (const uint8_t *)(q + 1), fd) : EPROTO;
		if (q->op == SHIM_OP_CM_GET_EVENT && rc != EAGAIN)
			poll_run_break(c);
	}
	if (c->s->trace)
		fprintf(stderr, "ibfab serve: t=%" PRIu64 " pid %u tid %d op %u%s -> %s\n",
			(uint64_t)sim_now(c->s->eng), c->p->pid, (int)c->tid, q->op,
			c->quiet ? " (quiet)" : "",
			rc == NO_REPLY ? (c->quiet ? "taken" : c->wait != W_NONE ? "waits" :
					  "answered") :
			rc ? strerror(rc) : c->quiet ? "taken" : "ok");
	/* the shim checked everything that refuses a quiet request: one
	 * refused here is the shim's mistake (or a client that is no shim),
	 * said once a connection */
	if (c->quiet && rc && rc != NO_REPLY && !c->quiet_refused) {
		c->quiet_refused = true;
		srv_log(c->s, "pid %u: a request sent without waiting for its answer (op %u) "
			"was refused: %s (said once)", c->p->pid, q->op, strerror(rc));
	}
	if (rc != NO_REPLY)
		srv_status(c, rc);
}

/* ---- connections -------------------------------------------------------- */

static void client_free(struct client *c)
{
	if (c->p != c) {	/* a thread's connection: the process keeps its objects */
		if (c->io_fd >= 0)
			close(c->io_fd);
		if (c->tperf_fd >= 0)
			close(c->tperf_fd);
		free(c);
		return;
	}
	/* threads' connections that outlive it (a fork's child that closed
	 * the first one) stand alone, with nothing */
	for (struct client *x = c->s->clients; x; x = x->next) {
		if (x != c && x->p == c) {
			if (!x->zombie)
				client_detach(x);
			x->p = x;
			x->objs = NULL;
			x->nobjs = 0;
		}
	}
	for (uint32_t i = 0; i < c->p->nobjs; i++) {
		struct grave *g;

		if (c->p->objs[i].t != O_SEG || !(g = malloc(sizeof(*g))))
			continue;
		g->map = c->p->objs[i].u.seg.map;
		g->len = c->p->objs[i].u.seg.len;
		g->until = srv_sat_add(sim_now(c->s->eng), GRAVE_PS);
		g->next = c->s->graves;
		c->s->graves = g;
		memset(&c->p->objs[i], 0, sizeof(c->p->objs[i]));
	}
	for (uint32_t i = 0; i < c->p->nobjs; i++)
		if (c->p->objs[i].t == O_QP)
			obj_destroy(c, i);
	for (uint32_t i = 0; i < c->p->nobjs; i++)
		if (c->p->objs[i].t != O_CQ && c->p->objs[i].t != O_SEG)
			obj_destroy(c, i);
	for (uint32_t i = 0; i < c->p->nobjs; i++)
		obj_destroy(c, i);
	while (c->p->srq_sgls) {
		struct sgl *e = c->p->srq_sgls;

		c->p->srq_sgls = e->next;
		sgl_free(c->s, e);
	}
	free(c->p->objs);
	free(c->p->aq);
	if (c->p->async_efd >= 0)
		close(c->p->async_efd);
	if (c->io_fd >= 0)
		close(c->io_fd);
	if (c->p->perf_fd >= 0)
		close(c->p->perf_fd);
	if (c->p->pf_fd >= 0)
		close(c->p->pf_fd);
	if (c->tperf_fd >= 0)
		close(c->tperf_fd);
	free(c);
}

static void client_detach(struct client *c)
{
	struct srv *s = c->s;

	ev_io_stop(s->loop, &c->w);
	close(c->fd);
	c->fd = -1;
	if (c->p == c && c->perf_fd >= 0) {
		close(c->perf_fd);
		c->perf_fd = -1;
	}
	if (c->p == c && c->pf_fd >= 0) {
		close(c->pf_fd);
		c->pf_fd = -1;
	}
	if (c->io_fd >= 0) {
		close(c->io_fd);
		c->io_fd = -1;
	}
	c->wait = W_NONE;
	c->zombie = true;
	s->nlive--;
	turn_drop(c);
	if (c->p->turn_last == c)
		c->p->turn_last = NULL;
	c->turn_q = c->yielded = false;
	if (c->p != c) {
		/* a thread's connection: it goes at once (a thread that ended,
		 * or its process, whose first connection lingers) */
		c->zombie_until = sim_now(s->eng);
		c->p->nthreads--;
		return;
	}
	if (c->alive_slot >= 0) {
		s->alive_used[c->alive_slot / 64] &= ~(1ULL << (c->alive_slot % 64));
		c->alive_slot = -1;
	}
	/* objects outlive their process a while; one that never attached
	 * (a program on its way, a connection that said no HELLO) has none */
	c->zombie_until = c->hello ? srv_sat_add(sim_now(s->eng), LINGER_PS) : sim_now(s->eng);
	c->pending = false;
	if (c->hello)
		srv_log(s, "pid %u (host %s) detached", c->p->pid, s->net.nodes[c->p->node].desc);
	if (s->idle_exit_s > 0) {
		bool any = false;

		for (struct client *x = s->clients; x; x = x->next)
			any |= !x->zombie;
		if (!any) {
			ev_timer_set(&s->idle_w, s->idle_exit_s, 0);
			ev_timer_start(s->loop, &s->idle_w);
		}
	}
}

/* Take in what c has sent, one message at a time, in order. */
static void client_read(struct client *c)
{
	union { char buf[CMSG_SPACE(4 * sizeof(int))]; struct cmsghdr align; } u;
	union {
		struct shim_req q;
		uint8_t raw[sizeof(struct shim_req) + SHIM_MAX_TAIL + sizeof(shim_cpu_trailer)];
	} b;
	struct iovec iov = { &b, sizeof(b) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	int fd = -1;
	ssize_t n;

	c->p->touched = false;
	c->tperf_seen = -1;	/* it spoke: it ran */
	for (int k = 0; k < 64; k++) {
		m.msg_controllen = sizeof(u.buf);
		m.msg_flags = 0;
		n = recvmsg(c->fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (n <= 0) {
			client_detach(c);
			break;
		}
		fd = -1;
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm)) {
			if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
				continue;
			int nfd = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));

			for (int i = 0; i < nfd; i++) {
				int x;

				memcpy(&x, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
				if (fd < 0)
					fd = x;
				else
					close(x);	/* one descriptor per message, at most */
			}
		}
		if ((m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || (size_t)n < sizeof(struct shim_req)) {
			if (fd >= 0)
				close(fd);
			if (!c->hello) {
				client_detach(c);
				break;
			}
			srv_status(c, EPROTO);
			continue;
		}
		c->s->requests++;
		/* quiet: posts and CQ arms only, answered by nobody (the bit
		 * on any other op leaves it unknown: EPROTO) */
		uint32_t op = b.q.op & ~SHIM_OP_QUIET;

		if (op == SHIM_OP_POST_SEND || op == SHIM_OP_POST_RECV || op == SHIM_OP_REQ_NOTIFY) {
			c->quiet = op != b.q.op;
			b.q.op = op;
		}
		handle(c, &b.q, (size_t)n, &fd);
		bool answered = !c->quiet && b.q.op != SHIM_OP_IO_BEGIN && b.q.op != SHIM_OP_BUSY;

		c->quiet = false;
		if (fd >= 0)
			close(fd);
		if (!c->hello && !c->pending) {	/* no valid HELLO first: not a shim */
			client_detach(c);
			break;
		}
		/*
		 * A thread has joined: from now on the process's posts wait
		 * for their answers (the shim sends quiet ones only while one
		 * thread calls it), but those its first thread sent quietly
		 * before are still in that connection: take them in before
		 * anything of the new thread's, which may come after them.
		 */
		if (b.q.op == SHIM_OP_HELLO && c->p != c && !c->p->zombie)
			client_read(c->p);
		/* a request that is answered (now or when its wait ends): its
		 * thread sends nothing until it has the answer, so there is
		 * nothing more to read (one empty read fewer a request) */
		if (answered)
			break;
		/* a thread that takes turns and waits now (IO_BEGIN) gives the
		 * turn up here: what it sends next (its IO_END) is read when
		 * the turn comes back, however soon it came */
		if (c->wait != W_NONE && turns(c))
			break;
	}
}

static void client_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct client *c = container_of(w, struct client, w);

	(void)loop;
	(void)revents;
	if (turns(c) && c->p->turn && c->p->turn != c) {
		/* another thread of its process runs: this one's request
		 * waits for the turn (turn_pass starts the watcher again).
		 * Nothing to read: what woke us was taken in already (a
		 * joining thread's HELLO reads the first thread's). */
		if (!io_ready(c->fd))
			return;
		ev_io_stop(c->s->loop, &c->w);
		c->turn_q = true;
		if (c->s->trace)
			fprintf(stderr, "ibfab serve: t=%" PRIu64 " pid %u tid %d waits for "
				"the turn\n", (uint64_t)sim_now(c->s->eng), c->p->pid, (int)c->tid);
		return;
	}
	if (turns(c))
		c->p->turn = c;
	client_read(c);
	if (!c->zombie)
		alive(c, c->sent_cpu);	/* it spoke: its silence starts again */
	/* a thread that waits now (or yielded, or is gone) lets the turn go */
	if (c->zombie || c->wait != W_NONE || c->yielded)
		turn_drop(c);
	advance(c->s);
}

/* A connected socket end becomes a client: 0, or -1 (fd closed). */
static int client_add(struct srv *s, int fd)
{
	struct client *c;
	struct ucred cr;
	socklen_t crlen = sizeof(cr);

	/*
	 * Who is at the other end, in the kernel's words (SO_PEERCRED), never
	 * the HELLO's: only our own user (or root) is served - the socket's
	 * mode says so too, this holds if someone loosens it.
	 */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) ||
	    (cr.uid != geteuid() && cr.uid != 0)) {
		srv_log(s, "refused a connection from uid %d: the daemon serves its own user",
		      crlen == sizeof(cr) ? (int)cr.uid : -1);
		close(fd);
		return -1;
	}
	if (s->nlive >= MAX_CLIENTS) {
		srv_log(s, "refused pid %d: %d connections are attached already", (int)cr.pid,
		      MAX_CLIENTS);
		close(fd);
		return -1;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return -1;
	}
	c->s = s;
	c->p = c;
	c->alive_slot = -1;
	c->fd = fd;
	c->io_fd = -1;
	c->async_efd = -1;
	c->tperf_fd = -1;
	c->tperf_seen = -1;
	c->tquiet = -1;
	c->p->alarm_at = SIM_TIME_MAX;
	/* its CPU time tells spinning from being paused (silent_wait) */
	if (cr.pid > 0) {
		c->p->peer = cr.pid;
		c->p->pid = (uint32_t)cr.pid;
		c->p->cpu_ok = !clock_getcpuclockid(cr.pid, &c->p->cpu_clk);
		c->p->perf_fd = perf_open(cr.pid);
		c->p->pf_fd = perf_open_sw(cr.pid, PERF_COUNT_SW_PAGE_FAULTS);
	} else {
		c->p->perf_fd = -1;
		c->p->pf_fd = -1;
	}
	s->nlive++;
	alive(c, client_cpu(c));	/* (a first read: cpu_ok says whether it works) */
	poll_run_break(c);
	c->clock_q = CLOCK_Q_MIN;
	c->next = s->clients;
	s->clients = c;
	ev_timer_stop(s->loop, &s->idle_w);
	ev_io_init(&c->w, client_cb, fd, EV_READ);
	ev_io_start(s->loop, &c->w);
	return 0;
}

static void listen_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct srv *s = container_of(w, struct srv, listen_w);
	int fd;

	(void)loop;
	(void)revents;
	fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd >= 0)
		client_add(s, fd);
}

/*
 * The one place real time decides anything, and only to end a client's
 * run: one that said no HELLO within HELLO_LIMIT_S of connecting, a
 * program on its way that ran PENDING_LIMIT_S without attaching, or one
 * the clock has waited for, with another program waiting on the clock,
 * through hold_limit_s of its real or CPU time without a word (a program
 * that attached and went idle, or stopped in a debugger). It is detached
 * as if it had exited, and the others go on.
 */
static void watch_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct srv *s = container_of(w, struct srv, watch_w);
	ev_tstamp rt = ev_time();
	bool waiting = false, evicted = false;

	(void)loop;
	(void)revents;
	for (struct client *c = s->clients; c; c = c->next)
		waiting |= !c->zombie && c->wait != W_NONE && c->wait != W_IO;
	for (struct client *c = s->clients; c; c = c->next) {
		if (c->zombie)
			continue;
		if (c->pending) {
			/* on its way, and neither attached nor said a word for
			 * that long (a wait it reported holds nothing) */
			if (c->wait == W_NONE && rt - c->p->quiet_rt > PENDING_LIMIT_S) {
				srv_log(s, "pid %u said it would attach and ran %.0f s without "
					"attaching: the clock goes on without it", c->p->pid,
					PENDING_LIMIT_S);
				client_detach(c);
				evicted = true;
			}
			continue;
		}
		if (!c->hello) {
			if (rt - c->p->quiet_rt > HELLO_LIMIT_S) {
				srv_log(s, "pid %u said no HELLO in %.0f s: dropped", c->p->pid,
				      HELLO_LIMIT_S);
				client_detach(c);
				s->evicted++;
				evicted = true;
			}
			continue;
		}
		if (!waiting || c != c->p || !c->holds || c->wait != W_NONE || s->hold_limit_s <= 0 ||
		    c->turn_q || c->yielded)	/* (it has spoken: it waits for the turn) */
			continue;
		double cpu = client_cpu(c);
		double quiet_rt = rt - c->p->quiet_rt, quiet_cpu = cpu < 0 ? 0 : cpu - c->p->quiet_cpu;

		if (quiet_rt > s->hold_limit_s || quiet_cpu > s->hold_limit_s) {
			srv_log(s, "pid %u (host %s) held the clock for %.1f s (%.1f s of CPU) "
			      "without a word while others waited: detached (--hold-limit %g)",
			      c->p->pid, s->net.nodes[c->p->node].desc, quiet_rt, quiet_cpu,
			      s->hold_limit_s);
			client_detach(c);
			s->evicted++;
			evicted = true;
		}
	}
	if (evicted)
		advance(s);
}

static void stop_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(loop, EVBREAK_ALL);
}

static void spin_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct srv *s = container_of(w, struct srv, spin_w);
	uint64_t n;

	(void)loop;
	(void)revents;
	if (read(s->spin_tfd, &n, sizeof(n)) < 0) {
		/* not expired (disarmed meanwhile): look anyway */
	}
	advance(s);
}

static void idle_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(loop, EVBREAK_ALL);
}

/* ---- set-up ------------------------------------------------------------- */

/* After a fault the subnet manager routes the fabric as it is now with
 * the daemon's engine (fab_reroute_fn), as `ibfab run --fault` does. */
static int reroute(void *ctx, struct net *n, const char *tables, struct sim_diag *d)
{
	const struct srv *s = ctx;
	struct sm_opts so = { 0 };

	if (tables)
		return sim_diag_set(d, NULL, 0, 0, "ibfab serve takes no forwarding tables dump");
	return sm_route(n, s->routing, &so, d);
}

/* --fault: cables and nodes that go down (and up) at simulated times,
 * which the programs see as port events (IBV_EVENT_PORT_ERR/ACTIVE) on
 * the hosts at their ends, and their traffic as losses and retries. */
static int add_faults(struct srv *s, const struct serve_opts *o, struct sim_diag *d)
{
	enum { MAX = 2000 };
	struct fab_fault *x = malloc(MAX * sizeof(*x));
	int bad = 0;

	if (!x || !o->fault_parse)
		bad = sim_diag_set(d, NULL, 0, 0, x ? "no parser for --fault" : "out of memory");
	for (int i = 0; !bad && i < o->nfaults; i++) {
		int k = o->fault_parse(o->faults[i], &s->net, x, MAX, d);

		bad = k < 0 ? -1 : 0;
		for (int q = 0; !bad && q < k; q++)
			bad = fab_fault_add(s->f, &x[q], d);
	}
	free(x);
	if (bad)
		return -1;
	fab_set_rerouter(s->f, reroute, s, true);
	s->faults = true;
	return fab_faults_start(s->f, d);
}

static int build_fabric(struct srv *s, const struct serve_opts *o, struct sim_diag *d)
{
	struct sm_opts so = { 0 };

	fab_params_default(&s->p);
	if (o->preset && fab_params_preset(&s->p, o->preset, d))
		return -1;
	for (int i = 0; i < o->nsets; i++)
		if (fab_params_set(&s->p, o->sets[i], d))
			return -1;
	if (fab_params_check(&s->p, d))
		return -1;
	/* no --topo: the built-in 16-host fat tree, as `ibfab run` uses */
	if (o->topo ? topo_load(o->topo, &s->net, d) : topo_default(&s->net, d))
		return -1;
	if (fab_link_sets_cut(&s->net, &s->p, d))	/* link[...].state=down */
		return -1;
	/* Ethernet has no LIDs, but the verbs the programs see carry 16-bit
	 * ones (struct ibv_port_attr, ibv_ah_attr): as many addresses as fit */
	if (fab_is_eth(&s->p))
		s->net.lid_limit = 0xffff;
	if (sm_route(&s->net, o->routing, &so, d))
		return -1;
	s->routing = o->routing;
	s->nhosts = net_nhosts(&s->net);
	if (s->nhosts <= 0)
		return sim_diag_set(d, o->topo ? o->topo : "built-in topology", 0, 0,
				    "the topology has no connected host");
	/* the programs are the traffic; --traffic adds background load that
	 * runs in the same simulation (it moves only when the programs wait) */
	for (int i = 0; i < o->ntraffic; i++)
		if (trace_spec_parse(o->traffic[i], &s->net, 1, &s->msgs, d))
			return -1;
	s->f = fab_create(&s->net, &s->p, &s->msgs, 1, d);
	if (!s->f)
		return -1;
	if (o->nfaults && add_faults(s, o, d))
		return -1;
	s->eng = fab_engine(s->f);
	for (int i = 0; i < s->net.nnodes; i++)
		if (fab_hca(s->f, i)) {
			hca_set_place_hook(fab_hca(s->f, i), place_cb, s);
			hca_set_async_hook(fab_hca(s->f, i), async_cb, s);
		}
	return 0;
}

/*
 * The socket's directory. Missing components are made, mode 0700: those
 * are the daemon's own. One that exists is used as it is - never chmod'ed
 * (`--socket /tmp/sock` must not change /tmp) - but it must belong to us or
 * to root and be writable by nobody else unless sticky (/tmp): in a
 * directory another user may write, they could swap our socket for theirs,
 * and programs would hand their memory to a stranger's daemon.
 */
static int socket_dir(const char *path, struct sim_diag *d)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	const char *slash = strrchr(path, '/');
	struct stat st;

	if (!slash) {
		dir[0] = '.';
		dir[1] = 0;
	} else {
		size_t n = slash == path ? 1 : (size_t)(slash - path);

		memcpy(dir, path, n);
		dir[n] = 0;
	}
	/* missing components, as mkdir -p would, each private */
	for (char *q = strchr(dir + 1, '/'); q; q = strchr(q + 1, '/')) {
		*q = 0;
		if (mkdir(dir, 0700) && errno != EEXIST)
			return sim_diag_set(d, dir, 0, 0, "cannot create the socket directory: %s",
					    strerror(errno));
		*q = '/';
	}
	if (mkdir(dir, 0700) && errno != EEXIST)
		return sim_diag_set(d, dir, 0, 0, "cannot create the socket directory: %s",
				    strerror(errno));
	if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		return sim_diag_set(d, dir, 0, 0, "the socket directory is not a directory");
	if (st.st_uid != geteuid() && st.st_uid != 0)
		return sim_diag_set(d, dir, 0, 0, "the socket directory belongs to another user "
				    "(uid %u): choose another --socket", (unsigned)st.st_uid);
	if ((st.st_mode & 022) && !(st.st_mode & S_ISVTX))
		return sim_diag_set(d, dir, 0, 0, "the socket directory is writable by others "
				    "and not sticky: another user could replace the socket; choose "
				    "a private directory");
	return 0;
}

/*
 * What is at the socket path already. A daemon that answers there: refused.
 * A socket of our own user that nobody answers was left by a daemon that
 * was killed: removed. Anything else - a file, a directory, another user's
 * socket - is refused: the daemon deletes nothing it did not make.
 */
static int socket_leftover(const char *path, struct sim_diag *d)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int t, e;

	if (lstat(path, &st))
		return errno == ENOENT ? 0 :
		       sim_diag_set(d, path, 0, 0, "cannot use the socket path: %s", strerror(errno));
	if (!S_ISSOCK(st.st_mode))
		return sim_diag_set(d, path, 0, 0, "exists and is not a socket: ibfab serve "
				    "removes nothing it did not make; choose another --socket");
	if (st.st_uid != geteuid())
		return sim_diag_set(d, path, 0, 0, "is a socket of another user (uid %u)",
				    (unsigned)st.st_uid);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	t = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (t < 0)
		return sim_diag_set(d, path, 0, 0, "socket: %s", strerror(errno));
	e = connect(t, (struct sockaddr *)&sa, sizeof(sa)) ? errno : 0;
	close(t);
	if (!e)
		return sim_diag_set(d, path, 0, 0, "a fabric daemon already serves here");
	if (e != ECONNREFUSED)
		return sim_diag_set(d, path, 0, 0, "cannot use the socket path: %s", strerror(e));
	if (unlink(path) && errno != ENOENT)
		return sim_diag_set(d, path, 0, 0, "cannot remove a stale socket: %s",
				    strerror(errno));
	return 0;
}

/*
 * The hosts' names and addresses, in /etc/hosts(5) form, at the socket's
 * path + ".hosts", for the shim's getaddrinfo and gethostbyname
 * (shim_client.c): a program resolves "h3" to 127.1.0.4 without attaching
 * (qperf and perftest resolve their server's name before any verbs call).
 * Written under a temporary name and renamed, before the socket appears.
 */
static int hosts_write(struct srv *s, struct sim_diag *d)
{
	char tmpname[sizeof(s->path) + 32];
	FILE *f;
	int rc = 0;

	snprintf(s->hosts_path, sizeof(s->hosts_path), "%s" SHIM_HOSTS_SUFFIX, s->path);
	snprintf(tmpname, sizeof(tmpname), "%s.%ld", s->hosts_path, (long)getpid());
	if (!(f = fopen(tmpname, "w")))
		return sim_diag_set(d, tmpname, 0, 0, "cannot write the hosts file: %s",
				    strerror(errno));
	fprintf(f, "# ibfab serve: the simulated hosts' addresses (ibfab topo show)\n");
	for (int k = 0; k < s->nhosts; k++) {
		uint32_t a = shim_host_addr((uint32_t)k);

		fprintf(f, "%u.%u.%u.%u %s\n", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255,
			s->net.nodes[net_host(&s->net, k)].desc);
	}
	if (ferror(f))
		rc = EIO;
	if (fclose(f) && !rc)
		rc = errno;
	if (!rc && rename(tmpname, s->hosts_path))
		rc = errno;
	if (rc) {
		unlink(tmpname);
		return sim_diag_set(d, s->hosts_path, 0, 0, "cannot write the hosts file: %s",
				    strerror(rc));
	}
	return 0;
}

static int listen_socket(struct srv *s, struct sim_diag *d)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	mode_t old;
	int fd;

	if (socket_dir(s->path, d) || socket_leftover(s->path, d))
		return -1;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return sim_diag_set(d, s->path, 0, 0, "socket: %s", strerror(errno));
	/*
	 * Bind under a temporary name and rename once listening: the socket
	 * file must not appear before listen(), or a program that sees it
	 * (as tests/shim/lib.sh's start_daemon does) and connects at once can
	 * be refused while a loaded host runs something else between the two
	 * calls. RENAME_NOREPLACE: whatever appeared at the path meanwhile
	 * stays.
	 */
	if (hosts_write(s, d)) {
		close(fd);
		return -1;
	}
	int n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s.%ld", s->path, (long)getpid());
	bool tmp_name = n > 0 && (size_t)n < sizeof(sa.sun_path);

	if (!tmp_name)
		memcpy(sa.sun_path, s->path, strlen(s->path) + 1);
	old = umask(0177);	/* the socket is 0600: only its owner may attach */
	bool bound = !bind(fd, (struct sockaddr *)&sa, sizeof(sa));

	umask(old);
	if (!bound || listen(fd, 64) ||
	    (tmp_name && renameat2(AT_FDCWD, sa.sun_path, AT_FDCWD, s->path, RENAME_NOREPLACE))) {
		int e = errno;

		close(fd);
		if (bound)
			unlink(sa.sun_path);	/* ours: bind made it */
		return sim_diag_set(d, s->path, 0, 0, "cannot listen: %s", strerror(e));
	}
	if (lstat(s->path, &st)) {
		close(fd);
		return sim_diag_set(d, s->path, 0, 0, "the socket vanished: %s", strerror(errno));
	}
	/* at exit, the path is removed only if it is still this socket */
	s->sock_dev = st.st_dev;
	s->sock_ino = st.st_ino;
	s->lfd = fd;
	return 0;
}

static void unlink_socket(struct srv *s)
{
	struct stat st;

	if (!lstat(s->path, &st) && st.st_dev == s->sock_dev && st.st_ino == s->sock_ino) {
		unlink(s->path);
		if (s->hosts_path[0])
			unlink(s->hosts_path);	/* ours while the socket was */
	}
}

/* The clock page every client maps. Sealed once the daemon has its own
 * writable mapping: no size change (a client's ftruncate would SIGBUS the
 * daemon) and no new write access (F_SEAL_FUTURE_WRITE, Linux 5.1: a
 * client can neither mmap it writable nor pwrite it, so none can forge the
 * time the others read). */
static int clock_init(struct srv *s, struct sim_diag *d)
{
	s->clk_fd = memfd_create("ibfab-clock", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (s->clk_fd < 0 || ftruncate(s->clk_fd, 4096))
		return sim_diag_set(d, NULL, 0, 0, "memfd: %s", strerror(errno));
	s->clk = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, s->clk_fd, 0);
	if (s->clk == MAP_FAILED) {
		s->clk = NULL;
		return sim_diag_set(d, NULL, 0, 0, "mmap: %s", strerror(errno));
	}
	if (fcntl(s->clk_fd, F_ADD_SEALS,
		  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL))
		return sim_diag_set(d, NULL, 0, 0, "cannot seal the clock page (Linux 5.1 or "
				    "later needed): %s", strerror(errno));
	/* a fixed epoch: what programs print does not depend on the date */
	s->clk->epoch_s = 1700000000;
	clock_publish(s);
	return 0;
}

/* The daemon without its socket: fabric, clock, loop and timers. */
static int srv_init(struct srv *s, const struct serve_opts *o, struct sim_diag *d)
{
	memset(s, 0, sizeof(*s));
	s->lfd = -1;
	s->clk_fd = -1;
	s->spin_tfd = -1;
	s->quiet = o->quiet;
	s->places_tail = &s->places;
	/* 0: by how exactly the program's CPU time can be read (silent_wait) */
	/* every request, with the simulated time: what a program did when */
	s->trace = getenv("IBFAB_SERVE_TRACE") && *getenv("IBFAB_SERVE_TRACE") &&
		   strcmp(getenv("IBFAB_SERVE_TRACE"), "0");
	s->spin_grace = getenv("IBFAB_SPIN_GRACE_US") ?
			atof(getenv("IBFAB_SPIN_GRACE_US")) / 1e6 : 0;
	if (!(s->spin_grace > 0))
		s->spin_grace = 0;
	s->idle_exit_s = o->idle_exit_s;
	s->hold_limit_s = o->hold_limit_s;
	signal(SIGPIPE, SIG_IGN);	/* a dead client is seen on its socket */
	if (build_fabric(s, o, d) || clock_init(s, d))
		return -1;
	s->loop = ev_loop_new(EVFLAG_AUTO);
	if (!s->loop)
		return sim_diag_set(d, NULL, 0, 0, "libev: no event loop");
	ev_timer_init(&s->idle_w, idle_cb, s->idle_exit_s, 0);
	s->spin_tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (s->spin_tfd < 0)
		return sim_diag_set(d, NULL, 0, 0, "timerfd_create: %s", strerror(errno));
	ev_io_init(&s->spin_w, spin_cb, s->spin_tfd, EV_READ);
	ev_io_start(s->loop, &s->spin_w);
	ev_timer_init(&s->watch_w, watch_cb, WATCH_S, WATCH_S);
	ev_timer_start(s->loop, &s->watch_w);
	return 0;
}

static void srv_fini(struct srv *s)
{
	while (s->clients) {
		struct client *c = s->clients;

		s->clients = c->next;
		if (c->fd >= 0)
			close(c->fd);
		client_free(c);
	}
	if (s->loop)
		ev_loop_destroy(s->loop);
	if (s->lfd >= 0) {
		close(s->lfd);
		unlink_socket(s);
	}
	if (s->clk)
		munmap(s->clk, 4096);
	if (s->clk_fd >= 0)
		close(s->clk_fd);
	if (s->spin_tfd >= 0)
		close(s->spin_tfd);
	place_apply(s, true);
	bury(s, true);
	if (s->f)
		fab_destroy(s->f);
	cm_fini(s);	/* its buffers: the fabric's packets are gone */
	net_free(&s->net);
	fab_msgs_free(&s->msgs);
}

static int socket_path(struct srv *s, const struct serve_opts *o, struct sim_diag *d)
{
	if (o->socket) {
		if (strlen(o->socket) >= sizeof(s->path))
			return sim_diag_set(d, o->socket, 0, 0, "the socket path is %zu bytes long; "
					    "a Unix socket's holds at most %zu", strlen(o->socket),
					    sizeof(s->path) - 1);
		memcpy(s->path, o->socket, strlen(o->socket) + 1);
	} else if (serve_default_socket(s->path, sizeof(s->path))) {
		return sim_diag_set(d, NULL, 0, 0, "the default socket path ($IBFAB_SOCKET, "
				    "$XDG_RUNTIME_DIR/ibfab/sock) is over %zu bytes long",
				    sizeof(s->path) - 1);
	}
	return 0;
}

int serve_run(const struct serve_opts *o, int ready_fd, struct sim_diag *d)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	struct srv s;
	int rc = -1;

	if (srv_init(&s, o, d) || socket_path(&s, o, d) || listen_socket(&s, d))
		goto out;
	ev_io_init(&s.listen_w, listen_cb, s.lfd, EV_READ);
	ev_io_start(s.loop, &s.listen_w);
	for (int i = 0; i < 4; i++) {
		ev_signal_init(&s.stop_w[i], stop_cb, sigs[i]);
		ev_signal_start(s.loop, &s.stop_w[i]);
	}
	if (s.idle_exit_s > 0)
		ev_timer_start(s.loop, &s.idle_w);
	srv_log(&s, "serving %d hosts on %s (fabric %s, %s)", s.nhosts, s.path,
	      fab_fabric_names[s.p.fabric], o->topo ? o->topo : "built-in 16-host fat tree");
	if (ready_fd >= 0) {
		if (write(ready_fd, "1", 1) < 0) {
			/* the parent is gone: serve anyway */
		}
		close(ready_fd);
	}
	ev_run(s.loop, 0);
	/* a signal stays attached to its loop until stopped (libev): a later
	 * daemon in the same process (the unit tests) would abort */
	for (int i = 0; i < 4; i++)
		ev_signal_stop(s.loop, &s.stop_w[i]);
	srv_log(&s, "stopping: %" PRIu64 " requests served from %" PRIu64 " programs, %" PRIu64 " evicted",
	      s.requests, s.attached, s.evicted);
	rc = 0;
out:
	if (rc && ready_fd >= 0)
		close(ready_fd);	/* a parent waiting for the byte reads EOF */
	srv_fini(&s);
	return rc;
}

/* ---- in process (tests/fuzz/fuzz_serve.c) -------------------------------- */

struct srv *serve_open(const struct serve_opts *o, struct sim_diag *d)
{
	struct srv *s = malloc(sizeof(*s));

	if (!s) {
		sim_diag_set(d, NULL, 0, 0, "out of memory");
		return NULL;
	}
	if (srv_init(s, o, d)) {
		srv_fini(s);
		free(s);
		return NULL;
	}
	return s;
}

int serve_attach_fd(struct srv *s, int fd)
{
	return client_add(s, fd);
}

void serve_turn(struct srv *s)
{
	ev_run(s->loop, EVRUN_NOWAIT);
}

void serve_close(struct srv *s)
{
	if (!s)
		return;
	srv_fini(s);
	free(s);
}
