/* SPDX-License-Identifier: MIT */
/*
 * fab.c - builds a simulated IB fabric from a fabric graph and runs it.
 *
 * Every cable becomes two link directions, each owned by the transmitting
 * port (models/port/port.c); switches and HCAs sit on the ports, each
 * reached through its node kind's table (node_kinds[] below). Link
 * rates come from the topology file where it states them (ibnetdiscover
 * prints the active width and speed), else from the preset; `--set
 * link.width/link.speed` overrides both. Entities touch each other only
 * through links, and every link has a latency of at least its propagation
 * delay plus one FC packet, which keeps the door open for a parallel engine
 * (docs/architecture.md).
 *
 * The run ends when every message is delivered. If the event list empties
 * first, what is left cannot move (a credit loop, or no route): the run is
 * reported as stalled, never hangs.
 */
#include "models/fabric/fab_int.h"

#include "models/cc/cc.h"
#include "models/hca/hca_plug.h"
#include "models/sm/sm_mp.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_log.h"
#include "sim/sim_mem.h"


struct sim_engine *fab_engine(struct fab *f)
{
	return &f->eng;
}

static void sample_handler(struct sim_engine *eng, void *ctx, uint32_t arg)
{
	struct fab *f = ctx;

	(void)arg;
	if (f->sample_fn)
		f->sample_fn(f, eng->now, f->sample_ctx);
	/* Only while something else can still happen: a stalled fabric (credit
	 * loop, no route) must end the run, not tick the sampler for ever. A
	 * run without messages is driven from outside (a trace replay, verbs
	 * programs), which stops the engine when its workload is done. */
	if ((f->tot.msgs_finished < f->tot.msgs_total || !f->tot.msgs_total || f->held) &&
	    sim_pending(eng) > 0)
		sim_schedule_in(eng, f->p.sample_ns * SIM_NS, f->sample_comp, 0);
}

void fab_hold(struct fab *f, bool on)
{
	f->held = on;
}

int fab_every(struct fab *f, uint32_t comp)
{
	if (f->nevery == sizeof(f->every) / sizeof(f->every[0]))
		return -1;
	f->every[f->nevery++] = comp;
	return 0;
}

void fab_driver_fail(struct fab *f, const char *msg)
{
	fab_fail(f, "%s", msg);
}

const struct sim_diag *fab_failure(const struct fab *f)
{
	return f->failed ? &f->fail : NULL;
}

bool fab_node_local(const struct fab *f, int node)
{
	const struct hca *h = f->nodes[node].hca;

	return !h || sim_local(&f->eng, h->comp);
}

void fab_set_sampler(struct fab *f, fab_sample_fn fn, void *ctx)
{
	f->sample_fn = fn;
	f->sample_ctx = ctx;
}

static void stop_handler(struct sim_engine *eng, void *ctx, uint32_t arg)
{
	(void)ctx;
	(void)arg;
	sim_halt(eng);	/* sim.max_time_ns: exactly then (every partition knows it) */
}

static void check_hook(struct sim_engine *eng, void *ctx)
{
	struct fab *f = ctx;

	f->tot.credit_checks++;
	if (!f->failed && fab_check_credits(f, &f->fail)) {
		f->failed = true;
		sim_halt(eng);
	}
}

/*
 * A message is finished once delivered (or lost) and completed, when its
 * source knows both: its own completion at once, what happened at another
 * node one look-ahead later (the report's time, report()). `known` is
 * when the source knows the half just in (now, or a report's time ahead
 * of now); until the completion comes, m->completed keeps when the source
 * knows of the delivery or loss (msg_completed then sets it). The run ends
 * the look-ahead after the moment the last message is finished.
 */
static inline __attribute__((always_inline)) void msg_check_finished(struct fab *f, uint32_t mi, struct fab_msg *m, sim_time_t known)
{
	if (m->finished || !(m->done || m->lost))
		return;
	if (!m->cqe) {
		m->completed = known;
		return;
	}
	m->finished = true;
	f->tot.msgs_finished++;
	if (known > f->finish_max)
		f->finish_max = known;
	fab_msg_finished(f, mi, m);	/* m goes, when the list is compact */
	if (f->tot.msgs_finished == f->tot.msgs_total && !f->held)
		sim_stop_at(&f->eng, f->finish_max);
}

static void msg_activity(struct fab *f, sim_time_t t)
{
	if (t > f->last_done)
		f->last_done = t;
}

/* Schedule the messages that wait for message mi's delivery (cqe false)
 * or for its requester completion (cqe true). No table when no message
 * waits for another (build_deps). */
static void post_dependents_of(struct fab *f, int32_t mi, sim_time_t t, bool cqe)
{
	for (uint32_t k = f->dep_off[mi]; k < f->dep_off[mi + 1]; k++) {
		uint32_t d = f->dep[k];
		struct fab_msg tmp;
		const struct fab_msg *x = fab_msgs_in(f->msgs, d, &tmp);

		if (x->after_cqe == cqe)
			fab_traffic_schedule(f, d, t + x->after_delay);
	}
}

/* Inline: most runs have no table, and the call cost more than the test. */
static inline void post_dependents(struct fab *f, int32_t mi, sim_time_t t, bool cqe)
{
	if (f->dep_off)
		post_dependents_of(f, mi, t, cqe);
}

static void msg_sent(struct fab *f, int32_t mi, sim_time_t t)
{
	struct fab_msg *m = fab_msg_state(f, (uint32_t)mi);

	if (m && !m->first_tx)
		m->first_tx = t;
}

/*
 * A report to a message's source in another partition: an event of the
 * port its traffic leaves by, one look-ahead after the time it reports (a
 * delivery's visible time, never before now in the models), which the
 * event's time then says, the message's index in the argument
 * (PORT_EV_REPORT_*). The time a report takes does not depend on where
 * the partitions are cut, so neither does a run. What the argument cannot
 * say (a 2^24th message; a delivery visible before the event that reports
 * it) fails the run rather than report another time.
 */
static void report_send(struct fab *f, uint32_t mi, uint32_t src, sim_time_t t, uint8_t kind)
{
	const struct port *pt = f->nodes[src].hca->port;	/* the one its traffic leaves by */
	uint32_t comp = f->port_comp0 + (uint32_t)(pt - f->port_mem);

	if (mi >= PORT_WIRE_MAX_PKTS || t < f->eng.now) {
		fab_fail(f, "message %u: its fate cannot be told to its source in another partition "
			 "(2^24 messages at most, delivered no earlier than the event that reports it)", mi);
		return;
	}
	if (sim_schedule_at(&f->eng, t + f->lookahead, comp,
			    mi << 8 | (kind == FAB_REPORT_LOST ? PORT_EV_REPORT_LOST :
								 PORT_EV_REPORT_DELIVERED)))
		fab_fail(f, "out of memory for a message's report");
	else
		f->aside_sent++;
}

/*
 * What happened at another node (delivered at t, or lost now) reaches the
 * source one look-ahead after (t or now, whichever is later). In this
 * partition the source takes it at once, knowing the time it would have
 * come; across partitions (or every link cut: sim.cut_links) it comes as
 * an event at that time. Either way the message finishes at the same
 * time, and so the run.
 */
static inline void delivered_at_source(struct fab *f, uint32_t mi, sim_time_t t, sim_time_t known);
static void lost_at_source(struct fab *f, uint32_t mi, sim_time_t known);

static void report(struct fab *f, uint32_t mi, uint32_t src, sim_time_t t, uint8_t kind)
{
	const struct port *pt = f->nodes[src].hca->port;
	sim_time_t known = (t > f->eng.now ? t : f->eng.now) + f->lookahead;

	if (f->p.cut_links || !sim_local(&f->eng, f->port_comp0 + (uint32_t)(pt - f->port_mem))) {
		report_send(f, mi, src, t, kind);
		return;
	}
	if (kind == FAB_REPORT_DELIVERED)
		delivered_at_source(f, mi, t, known);
	else
		lost_at_source(f, mi, known);
}

/* Delivered at t, which its source knows at `known`. */
static inline __attribute__((always_inline)) void delivered_at_source(struct fab *f, uint32_t mi, sim_time_t t, sim_time_t known)
{
	struct fab_msg *m = fab_msg_state(f, mi);

	if (!m || m->done || m->lost)
		return;
	m->end = t;
	m->done = true;
	f->tot.msgs_done++;
	msg_activity(f, t);
	msg_check_finished(f, mi, m, known);
}

/* Its data is at the node that delivers it (the destination; the source
 * itself for a READ): staged to a GPU there, the messages waiting for it
 * there posted, and the source told. */
static void msg_delivered(struct fab *f, int32_t mi, sim_time_t t)
{
	struct fab_msg tmp;
	const struct fab_msg *in;
	uint32_t at;

	if (mi < 0 || (size_t)mi >= f->msgs->n)
		return;		/* not a traffic message */
	in = fab_msg_state(f, (uint32_t)mi);	/* its input, as fab_msgs_in's */
	if (!in)		/* finished at its source (a late duplicate) or, */
		in = fab_msgs_in(f->msgs, (size_t)mi, &tmp);	/* in a partition, not its */
	at = in->op == FAB_OP_READ ? in->src : in->dst;
	/* Without GPUDirect (or over a socket), GPU data lands in a host
	 * bounce buffer and the program copies it to the GPU. */
	if (fab_msg_stages(f, in))
		t = host_stage_host_to_gpu(&f->nodes[at].hca->host, t, in->bytes);
	post_dependents(f, mi, t, false);
	if (at == in->src)
		delivered_at_source(f, (uint32_t)mi, t, f->eng.now);
	else
		report(f, (uint32_t)mi, in->src, t, FAB_REPORT_DELIVERED);
}

static void msg_completed(struct fab *f, int32_t mi, sim_time_t t, uint8_t st)
{
	struct fab_msg *m = fab_msg_state(f, (uint32_t)mi);
	sim_time_t known = f->eng.now;

	if (!m || m->cqe)
		return;
	if ((m->done || m->lost) && m->completed > known)
		known = m->completed;	/* when the source knew the other half */
	m->cqe = true;
	m->completed = t;
	m->status = st;
	if (st != HCA_WC_SUCCESS && !m->done && !m->lost) {
		m->lost = true;
		f->tot.msgs_lost++;
	}
	msg_activity(f, t);
	fab_traffic_slot_free(f, m->stream);
	/* A send window (perftest's tx_depth) refills when the program polls
	 * a completion, whatever its status: an error completion frees the
	 * slot too, and the next WR then meets the QP's error state. */
	post_dependents(f, mi, t, true);
	msg_check_finished(f, (uint32_t)mi, m, known);
}

/* Lost, which its source knows at `known`. */
static void lost_at_source(struct fab *f, uint32_t mi, sim_time_t known)
{
	struct fab_msg *m = fab_msg_state(f, mi);

	if (!m)
		return;		/* not a traffic message (replay, shim) */
	if (!m->lost && !m->done) {
		m->lost = true;
		f->tot.msgs_lost++;
		msg_check_finished(f, mi, m, known);
	}
}

/* A packet of it lost in the network (a switch, a link, the responder):
 * the source learns it by a report. */
static void msg_lost(struct fab *f, uint32_t mi)
{
	struct fab_msg tmp;

	if (mi >= f->msgs->n)
		return;		/* not a traffic message (replay, shim) */
	report(f, mi, fab_msgs_in(f->msgs, mi, &tmp)->src, f->eng.now, FAB_REPORT_LOST);
}

/* The source's transport gave up on it. */
static void msg_given_up(struct fab *f, uint32_t mi)
{
	const struct fab_msg *m = fab_msg_state(f, mi);

	if (m && !m->done && !m->lost)
		msg_activity(f, f->eng.now);
	lost_at_source(f, mi, f->eng.now);
}

/* A report's event at the source (report_send): now is when it knows. */
static void msg_report(struct fab *f, uint32_t mi, sim_time_t t, uint8_t kind)
{
	if (kind == FAB_REPORT_DELIVERED)
		delivered_at_source(f, mi, t, f->eng.now);
	else
		lost_at_source(f, mi, f->eng.now);
}

/* Where the models report a traffic message's fate (fab_core.h). */
static const struct fab_hooks traffic_hooks = {
	.post = fab_traffic_post_now,
	.post_planned = fab_plan_post,
	.sent = msg_sent,
	.delivered = msg_delivered,
	.completed = msg_completed,
	.lost = msg_lost,
	.given_up = msg_given_up,
	.report = msg_report,
	.recv = fab_traffic_recv,
};

static struct link_rate port_rate(const struct fab_params *p, const struct net_port *a,
				  const struct net_port *b)
{
	struct link_rate r = { p->lanes, p->speed };

	/* inside a switch (its SHARP aggregation node): as wide as the
	 * aggregation manager made it, at the speed of the fabric */
	if (a->internal) {
		r.lanes = a->lanes;
		if (!p->speed_forced && a->speed)
			r.speed = a->speed;
		return r;
	}
	/* link.width and link.speed override the file each on its own: a
	 * faster speed keeps a 1x cable 1x */
	if (!p->width_forced && (a->lanes || b->lanes))
		r.lanes = a->lanes ? a->lanes : b->lanes;
	if (!p->speed_forced && (a->speed || b->speed))
		r.speed = a->speed ? a->speed : b->speed;
	return r;
}

static void fab_scan_free(struct fab_scan *sc)
{
	free(sc->count);
	free(sc->first);
	memset(sc, 0, sizeof(*sc));
}

/*
 * Check the messages against the graph before anything runs, clear their
 * results, and learn what the set-up needs of them (struct fab_scan). One
 * pass: a constant-rate run's list is far larger than the caches (B1 at
 * 1 s: 1.19M messages, 95 MB), and each pass over it cost 8-10 ms; the
 * checks, the reset, the dependency count and the streams' sizes were six.
 */
static int scan_msgs(const struct net *net, const struct fab_params *p, struct fab_msgs *msgs,
		     struct fab_scan *sc, struct sim_diag *d)
{
	uint32_t *stream_src = NULL;
	size_t ns = msgs->nstreams ? msgs->nstreams : 1;
	int rc = -1;

	memset(sc, 0, sizeof(*sc));
	stream_src = malloc(ns * sizeof(*stream_src));
	sc->count = calloc(ns, sizeof(*sc->count));
	sc->first = malloc(ns * sizeof(*sc->first));
	if (!stream_src || !sc->count || !sc->first) {
		sim_diag_set(d, NULL, 0, 0, "out of memory");
		goto out;
	}
	for (uint32_t s = 0; s < msgs->nstreams; s++)
		stream_src[s] = UINT32_MAX;
	/* a run's messages differ only in their post times: one check each */
	for (size_t r = 0; r < fab_msgs_nruns(msgs); r++) {
		uint64_t i, count;
		sim_time_t gap;
		const struct fab_msg *m = fab_msgs_run(msgs, r, &i, &count, &gap);

		if (m->src >= (uint32_t)net->nnodes || m->dst >= (uint32_t)net->nnodes ||
		    net->nodes[m->src].type == NET_SWITCH || net->nodes[m->dst].type == NET_SWITCH) {
			sim_diag_set(d, NULL, 0, 0, "message %" PRIu64 ": source and destination must be channel adapters", i);
			goto out;
		}
		if (net_first_port(net, (int)m->src) < 0 || net_first_port(net, (int)m->dst) < 0) {
			sim_diag_set(d, NULL, 0, 0, "message %" PRIu64 ": %s has no connected port", i,
				     net->nodes[net_first_port(net, (int)m->src) < 0 ? m->src : m->dst].desc);
			goto out;
		}
		if (m->src == m->dst) {
			sim_diag_set(d, NULL, 0, 0, "message %" PRIu64 ": %s sends to itself (loopback does not cross the fabric)",
				     i, net->nodes[m->src].desc);
			goto out;
		}
		if (m->stream >= msgs->nstreams) {
			sim_diag_set(d, NULL, 0, 0, "message %" PRIu64 ": stream %u out of range", i, m->stream);
			goto out;
		}
		if (stream_src[m->stream] == UINT32_MAX) {
			stream_src[m->stream] = m->src;
			sc->first[sc->nfirst++] = (uint32_t)i;
		} else if (stream_src[m->stream] != m->src) {
			sim_diag_set(d, NULL, 0, 0, "message %" PRIu64 ": stream %u mixes sources", i, m->stream);
			goto out;
		}
		if (m->op > FAB_OP_SEND) {
			sim_diag_set(d, NULL, 0, 0, "message %" PRIu64 ": unknown operation %u", i, m->op);
			goto out;
		}
		if (m->bytes > (1ULL << 31)) {
			sim_diag_set(d, NULL, 0, 0, "message %" PRIu64 ": %llu bytes is more than 2 GiB, the largest IB message",
				     i, (unsigned long long)m->bytes);
			goto out;
		}
		if (m->sl != 0xff && m->sl >= FAB_NSL) {
			sim_diag_set(d, NULL, 0, 0, "message %" PRIu64 ": SL %u out of range 0..15", i, m->sl);
			goto out;
		}
		if (m->sl == 0xff && m->bytes > IB_MAD_BYTES) {
			sim_diag_set(d, NULL, 0, 0, "message %" PRIu64 ": a VL15 management message carries at most %d bytes",
				     i, IB_MAD_BYTES);
			goto out;
		}
		if (m->after >= 0) {
			if ((size_t)m->after >= msgs->n) {
				sim_diag_set(d, NULL, 0, 0, "message %" PRIu64 ": waits for message %d, which does not exist",
					     i, m->after);
				goto out;
			}
			struct fab_msg tmp;
			const struct fab_msg *a = fab_msgs_in(msgs, (size_t)m->after, &tmp);

			/* completed at its requester (after_cqe), or delivered
			 * where the data goes: dst, or src for a READ */
			if (m->after_cqe ? a->src != m->src :
			    (a->op == FAB_OP_READ ? a->src : a->dst) != m->src) {
				sim_diag_set(d, NULL, 0, 0,
					     "message %" PRIu64 ": waits for message %d %s at another host (a dependency must be local to the sender)",
					     i, m->after, m->after_cqe ? "completed" : "delivered");
				goto out;
			}
			sc->waiting += count;
		}
		if (fab_msg_check(m, i, p, d))
			goto out;
		sc->count[m->stream] += (uint32_t)count;
		if (!msgs->compact) {	/* an explicit list's results are written in place */
			struct fab_msg *w = &msgs->v[r];

			w->start = w->first_tx = w->end = w->completed = 0;
			w->status = 0;
			w->done = w->cqe = w->lost = w->finished = w->staged = false;
		}
	}
	/* Each message waits for at most one other: a cycle is a loop in that
	 * chain. (After the pass: a message can wait for a later one.) */
	for (size_t i = 0; i < msgs->n && sc->waiting; i++) {
		size_t steps = 0;
		struct fab_msg tmp;
		int32_t j = fab_msgs_in(msgs, i, &tmp)->after;

		while (j >= 0 && steps <= msgs->n) {
			j = fab_msgs_in(msgs, (size_t)j, &tmp)->after;
			steps++;
		}
		if (steps > msgs->n) {
			sim_diag_set(d, NULL, 0, 0, "message %zu: its dependencies form a cycle", i);
			goto out;
		}
	}
	rc = 0;
out:
	free(stream_src);
	if (rc)
		fab_scan_free(sc);
	return rc;
}

/*
 * The messages that wait for each message, as a CSR table: dep_off[i] ..
 * dep_off[i + 1] index dep[]. None is built when no message waits for
 * another (constant-rate traffic): at 4 bytes per message twice over it
 * was 9.5 MB of bench/run's B1 at 1 s, written and never read.
 */
static int build_deps(struct fab *f, size_t waiting)
{
	const struct fab_msgs *ms = f->msgs;
	size_t n = ms->n;
	uint64_t first, count;
	sim_time_t gap;

	if (!waiting)
		return 0;
	f->dep_off = calloc(n + 1, sizeof(*f->dep_off));
	f->dep = malloc(waiting * sizeof(*f->dep));
	if (!f->dep_off || !f->dep)
		return -1;
	/* a message that waits for another is a run of its own */
	for (size_t r = 0; r < fab_msgs_nruns(ms); r++) {
		int32_t a = fab_msgs_run(ms, r, &first, &count, &gap)->after;

		if (a >= 0)
			f->dep_off[a + 1]++;
	}
	for (size_t i = 0; i < n; i++)
		f->dep_off[i + 1] += f->dep_off[i];
	uint32_t *fill = calloc(n + 1, sizeof(*fill));

	if (!fill)
		return -1;
	for (size_t r = 0; r < fab_msgs_nruns(ms); r++) {
		int32_t a = fab_msgs_run(ms, r, &first, &count, &gap)->after;

		if (a >= 0)
			f->dep[f->dep_off[a] + fill[a]++] = (uint32_t)first;
	}
	free(fill);
	return 0;
}

/*
 * fab_create's phases, in order. Each returns 0, -1 (out of memory) or,
 * where a bad input can stop it, -2 with d filled.
 */

/* The nodes, and one port per connected port end, in node order in one
 * block: a switch's ports lie side by side, and the per-VL lines (struct
 * port_vl) are cache-line aligned. */
static int build_nodes(struct fab *f)
{
	const struct net *net = f->net;
	size_t nodes_size = (size_t)(net->nnodes ? net->nnodes : 1) * sizeof(*f->nodes);
	size_t port_bytes;
	int nports = 0;

	f->nnodes = net->nnodes;
	f->nodes = aligned_alloc(64, nodes_size);	/* fab_node's line 0 is one line */
	if (!f->nodes)
		return -1;
	memset(f->nodes, 0, nodes_size);
	for (int i = 0; i < net->nnodes; i++)
		for (int k = 1; k <= net->nodes[i].nports; k++)
			if (net->nodes[i].ports[k].remote_node >= 0)
				nports++;
	f->ports = calloc((size_t)(nports ? nports : 1), sizeof(*f->ports));
	port_bytes = (size_t)(nports ? nports : 1) * sizeof(struct port);
	f->port_mem = aligned_alloc(64, port_bytes);
	if (!f->ports || !f->port_mem)
		return -1;
	sim_mem_advise(f->port_mem, port_bytes);	/* before the first touch */
	memset(f->port_mem, 0, port_bytes);
	for (int i = 0; i < net->nnodes; i++) {
		const struct net_node *nn = &net->nodes[i];
		struct fab_node *n = &f->nodes[i];

		n->idx = i;
		n->type = nn->type;
		n->nports = nn->nports;
		n->ports = calloc((size_t)nn->nports + 1, sizeof(*n->ports));
		if (!n->ports)
			return -1;
		for (int k = 1; k <= nn->nports; k++) {
			if (nn->ports[k].remote_node < 0)
				continue;
			struct port *pt = &f->port_mem[f->nports];

			pt->fab = f;
			pt->node = n;
			pt->port_no = (uint8_t)k;
			n->ports[k] = pt;
			f->ports[f->nports++] = pt;
		}
	}
	return 0;
}

/*
 * The node kinds a fabric is made of: each a row of port_node_ops that its
 * ports dispatch through (port.kind indexes fab.node_ops), and its set-up.
 * A channel adapter is an HCA; a switch is the fabric kind's (Ethernet's
 * output-queued switch, else InfiniBand's). A new kind of node is one row
 * here and its own file.
 */
enum { NODE_HCA, NODE_IB_SW, NODE_ETH_SW, NODE_NKINDS };

static const struct fab_node_kind {
	const struct port_node_ops *ops;
	int (*init)(struct fab *f, struct fab_node *n);
	void (*fini)(struct fab_node *n);
} node_kinds[NODE_NKINDS] = {
	[NODE_HCA] = { &hca_node_ops, hca_init, hca_fini },
	[NODE_IB_SW] = { &sw_node_ops, sw_init, sw_fini },
	[NODE_ETH_SW] = { &eth_sw_node_ops, eth_sw_init, eth_sw_fini },
};

_Static_assert(NODE_NKINDS <= FAB_NODE_KINDS, "port.kind indexes fab.node_ops");

static uint8_t node_kind(const struct fab *f, const struct fab_node *n)
{
	if (n->type != NET_SWITCH)
		return NODE_HCA;
	return fab_is_eth(&f->p) ? NODE_ETH_SW : NODE_IB_SW;
}

/*
 * The link[...] settings on the cable at port pi (either end named), in
 * the order given: its rate, its length and its receivers' fault
 * injection (f->port_fault, made at the first such setting).
 */
static int link_sets_apply(struct fab *f, int pi, struct link_rate *r, double *metres)
{
	const struct fab_params *p = &f->p;
	const struct port *pt = f->ports[pi];
	const struct net_node *a = &f->net->nodes[pt->node->idx];
	const struct net_port *np = &a->ports[pt->port_no];
	const struct net_node *b = &f->net->nodes[np->remote_node];

	for (int k = 0; k < p->nlink_sets; k++) {
		const struct fab_link_set *s = &p->link_sets[k];

		if (!fab_link_set_matches(s, a, pt->port_no) &&
		    !fab_link_set_matches(s, b, np->remote_port))
			continue;
		switch ((enum fab_link_key)s->key) {
		case FAB_LK_WIDTH: r->lanes = s->lanes; break;
		case FAB_LK_SPEED: r->speed = s->speed; break;
		case FAB_LK_CABLE_M: *metres = s->value; break;
		case FAB_LK_STATE:	/* fab_link_sets_cut, before routing */
		case FAB_LK_PEER:
			break;
		case FAB_LK_DROP:
		case FAB_LK_BER:
			if (!f->port_fault) {
				f->port_fault = malloc((size_t)f->nports * sizeof(*f->port_fault));
				if (!f->port_fault)
					return -1;
				for (int q = 0; q < f->nports; q++)
					f->port_fault[q] = (struct fab_port_fault){ p->drop_prob, p->ber };
			}
			if (s->key == FAB_LK_DROP)
				f->port_fault[pi].drop_prob = s->value;
			else
				f->port_fault[pi].ber = s->value;
			break;
		}
	}
	return 0;
}

/* Each port's link (peer, rate, cable, LID), its link layer's state, and
 * the links up. The ports are one array: one engine range, dispatched
 * without a per-port table (sim_register_range). */
static int link_ports(struct fab *f, struct sim_diag *d)
{
	const struct net *net = f->net;
	const struct fab_params *p = &f->p;
	int port_comp = sim_register_range(&f->eng, port_handler, f->port_mem,
					   sizeof(struct port), (uint32_t)f->nports, "port");

	if (port_comp < 0)
		return -1;
	for (int k = 0; k < NODE_NKINDS; k++)
		f->node_ops[k] = node_kinds[k].ops;
	f->port_links = fab_is_eth(p);
	sim_range_prefetch(&f->eng, (uint32_t)port_comp, port_prefetch);
	sim_range_prefetch_early(&f->eng, (uint32_t)port_comp, port_prefetch_early, f);
	sim_range_import(&f->eng, (uint32_t)port_comp, port_import);
	f->port_comp0 = (uint32_t)port_comp;
	for (int pi = 0; pi < f->nports; pi++) {
		struct port *pt = f->ports[pi];
		const struct net_port *np = &net->nodes[pt->node->idx].ports[pt->port_no];
		const struct net_port *rp = &net->nodes[np->remote_node].ports[np->remote_port];
		double metres = np->cable_m >= 0 ? np->cable_m : rp->cable_m >= 0 ? rp->cable_m : p->cable_m;

		pt->peer = f->nodes[np->remote_node].ports[np->remote_port];
		pt->rate = port_rate(p, np, rp);
		if (p->nlink_sets && link_sets_apply(f, pi, &pt->rate, &metres))
			return -1;
		if (!pt->rate.lanes || !pt->rate.speed) {
			sim_diag_set(d, net->nodes[pt->node->idx].file, np->line, 0,
				     "link from %s port %u has no rate", net->nodes[pt->node->idx].desc,
				     pt->port_no);
			return -2;
		}
		pt->prop = link_prop_ps(metres, p->ps_per_m);
		pt->lid = net_lid_of(net, pt->node->idx, pt->port_no);
		pt->kind = node_kind(f, pt->node);
		pt->is_sw = pt->node->type == NET_SWITCH;
		pt->peer_is_sw = net->nodes[np->remote_node].type == NET_SWITCH;
		pt->info.node = pt->node->idx;
		pt->info.port = pt->port_no;
		pt->info.peer_node = np->remote_node;
		pt->info.peer_port = np->remote_port;
		pt->info.rate = pt->rate;
		pt->info.prop_ps = pt->prop;
		if (port_init(f, pt) || (fab_is_eth(p) && eth_port_init(f, pt)))
			return -1;
		pt->comp = (uint32_t)port_comp + (uint32_t)pi;
	}
	for (int pi = 0; pi < f->nports; pi++)
		port_link_up(f->ports[pi]);
	return 0;
}

/* A link set that names no cable is a mistake in the command, not a
 * what-if: say which. */
static int link_sets_check(struct fab *f, struct sim_diag *d)
{
	const struct fab_params *p = &f->p;

	for (int k = 0; k < p->nlink_sets; k++) {
		bool hit = false;
		char what[160];

		if (p->link_sets[k].key == FAB_LK_STATE)
			continue;	/* applied to the graph, before routing */

		for (int pi = 0; pi < f->nports && !hit; pi++)
			hit = fab_link_set_matches(&p->link_sets[k], &f->net->nodes[f->ports[pi]->node->idx],
						   f->ports[pi]->port_no);
		if (!hit) {
			fab_link_set_format(&p->link_sets[k], what, sizeof(what));
			return sim_diag_set(d, NULL, 0, 0,
					    "%s: no connected port matches (a node's id, description or GUID, or a pattern of them; the ports of a cable)",
					    what);
		}
	}
	return 0;
}

/* Each node's state, as its kind sets it up. */
static int init_nodes(struct fab *f)
{
	for (int i = 0; i < f->nnodes; i++)
		if (node_kinds[node_kind(f, &f->nodes[i])].init(f, &f->nodes[i]))
			return -1;
	return 0;
}

struct fab *fab_create(const struct net *net, const struct fab_params *p,
		       struct fab_msgs *msgs, uint64_t seed, struct sim_diag *d)
{
	struct fab_scan sc;
	struct fab *f;
	int rc;

	if (fab_params_check(p, d))
		return NULL;
	if (scan_msgs(net, p, msgs, &sc, d))
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f) {
		fab_scan_free(&sc);
		sim_diag_set(d, NULL, 0, 0, "out of memory");
		return NULL;
	}
	f->net = net;
	f->p = *p;
	f->hooks = &traffic_hooks;
	/* the QPs' transport, and the fabric kind's for RC QPs if another */
	f->transport = hca_ib_transport;
	f->rc_transport = fab_kind_of(p)->tcp ? tcp_transport : NULL;
	f->cc = cc_for(p);	/* DCQCN or IB CC at the HCAs, if on */
	ib_vlarb_map_init(&f->vlarb_map, &p->vlarb);
	f->msgs = msgs;
	f->seed = seed;
	f->sw_lat = (sim_time_t)p->sw_latency_ns * SIM_NS;
	f->hca_lat = (sim_time_t)p->hca_latency_ns * SIM_NS;
	f->hca_wqe = (sim_time_t)p->hca_wqe_ns * SIM_NS;
	f->hca_ackreq_mask = p->hca_ackreq_pkts ? p->hca_ackreq_pkts - 1 : UINT32_MAX;
	f->hca_msg = p->hca_max_mpps ? (sim_time_t)(SIM_US / p->hca_max_mpps) : 0;
	rc = sim_init(&f->eng) ? -1 : 0;
	if (!rc)
		sim_pool_init(&f->pkts, sizeof(struct pkt));
	if (!rc)
		rc = build_nodes(f);
	if (!rc)
		rc = link_sets_check(f, d) ? -2 : 0;
	if (!rc)
		rc = link_ports(f, d);
	if (!rc) {
		f->lookahead = fab_lookahead(f);
		rc = init_nodes(f);
	}
	if (!rc) {
		f->tot.msgs_total = msgs->n;
		rc = fab_live_init(f) || build_deps(f, sc.waiting) || fab_traffic_setup(f, &sc) ? -1 : 0;
	}
	fab_scan_free(&sc);
	if (!rc)
		rc = fab_plan_build(f);
	if (!rc && p->server.gpus) {	/* GPU servers: the map and NVLink's pipes */
		f->srv = malloc(sizeof(*f->srv));
		rc = !f->srv ? -1 : srv_map_build(f->srv, net, &p->server, d) ? -2 : 0;
		if (rc == -2) {
			free(f->srv);
			f->srv = NULL;
		}
	}
	if (rc) {
		if (rc == -1)
			sim_diag_set(d, NULL, 0, 0, "out of memory building the fabric");
		fab_destroy(f);
		return NULL;
	}
	if (p->check) {
		f->eng.after_event = check_hook;
		f->eng.after_event_ctx = f;
	}
	return f;
}

void fab_destroy(struct fab *f)
{
	if (!f)
		return;
	if (f->srv)
		srv_map_free(f->srv);
	free(f->srv);
	fab_traffic_free(f);	/* its CQs first: the HCAs free what is left */
	fab_faults_free(f);	/* the rerouted tables: the switches point into them */
	fab_plan_free(f);
	fab_live_free(f);
	for (int i = 0; i < f->nnodes && f->nodes; i++) {
		struct fab_node *n = &f->nodes[i];

		node_kinds[node_kind(f, n)].fini(n);
		free(n->ports);
	}
	for (int pi = 0; pi < f->nports; pi++) {
		port_fini(f->ports[pi]);
		eth_port_fini(f->ports[pi]);
	}
	sm_mp_free(f->mp);
	free(f->port_mem);
	free(f->ports);
	free(f->nodes);
	free(f->dep_off);
	free(f->dep);
	free(f->port_fault);
	sim_pool_fini(&f->pkts);
	sim_fini(&f->eng);
	free(f);
}

/* Close the PortXmitWait intervals still open when the run ends. */
static void close_waits(struct fab *f)
{
	for (int pi = 0; pi < f->nports; pi++) {
		struct port *pt = f->ports[pi];

		if (pt->waiting) {
			sim_time_t dt = f->eng.now - pt->wait_since;

			for (uint16_t m = pt->vl_waiting; m; m &= m - 1)
				pt->info.vl[__builtin_ctz(m)].xmit_wait_ps += dt;
			pt->waiting = false;
		}
		if (pt->link)
			eth_port_finish(pt, f->eng.now);
	}
}

void fab_part_finish(struct fab *f, sim_time_t now)
{
	f->eng.now = now;
	close_waits(f);
}

void fab_set_par(struct fab *f, const struct fab_par_ops *ops, void *ctx)
{
	f->par = ops;
	f->par_ctx = ctx;
}

sim_time_t fab_lookahead(const struct fab *f)
{
	sim_time_t l = SIM_TIME_MAX;

	for (int pi = 0; pi < f->nports; pi++) {
		const struct port *pt = f->ports[pi];

		if (!f->net->nodes[pt->node->idx].ports[pt->port_no].internal && pt->prop < l)
			l = pt->prop;
	}
	return l == SIM_TIME_MAX ? 0 : l;
}

int fab_run(struct fab *f, struct sim_diag *d)
{
	if (fab_faults_start(f, d))
		return -1;
	if (f->sample_fn && f->p.sample_ns) {
		int c = sim_register(&f->eng, sample_handler, f, "sampler");

		if (c < 0)
			return sim_diag_set(d, NULL, 0, 0, "out of memory");
		f->sample_comp = (uint32_t)c;
		sim_schedule_at(&f->eng, 0, f->sample_comp, 0);
	}
	if (f->p.max_time_ns) {
		int c = sim_register(&f->eng, stop_handler, f, "limit");

		if (c < 0)
			return sim_diag_set(d, NULL, 0, 0, "out of memory");
		sim_schedule_at(&f->eng, f->p.max_time_ns * SIM_NS, (uint32_t)c, 0);
	}
	/* The model is built: back its many small blocks with huge pages. */
	sim_mem_advise_heap();
	/* With messages the run stops when the last one is finished, and
	 * runs on for the look-ahead: a partitioned run learns of the finish
	 * only at the end of a window, when the other partitions may be that
	 * far ahead, so one run ends as every partitioned run can (the same
	 * events, whatever the cut). Driven through the verbs API alone (no
	 * messages), it ends when nothing is left to happen. */
	f->eng.lag = f->lookahead;
	if (f->par) {
		/* this process's partition; the results then gathered */
		if (f->par->run(f->par_ctx, d)) {
			if (f->failed)
				*d = f->fail;
			return -1;
		}
		close_waits(f);
		int m = f->par->merge(f->par_ctx, d);

		if (m)
			return m < 0 ? -1 : 0;	/* error, or gathered elsewhere */
	} else {
		sim_run(&f->eng);
		close_waits(f);
	}
	bool all = f->tot.msgs_finished == f->tot.msgs_total;

	f->tot.end_ps = all ? f->last_done : f->eng.now;
	if (f->failed) {
		*d = f->fail;
		return -1;
	}
	if (!all && f->par && !fab_time_limit_reached(f))
		return sim_diag_set(d, NULL, 0, 0,
				    "stalled at %.3f us: %llu of %llu messages delivered (%llu lost); "
				    "run it without partitions to see why",
				    (double)f->eng.now / SIM_US,
				    (unsigned long long)f->tot.msgs_done,
				    (unsigned long long)f->tot.msgs_total,
				    (unsigned long long)f->tot.msgs_lost);
	if (!all && !sim_pending(&f->eng) &&
	    !fab_time_limit_reached(f)) {
		uint64_t queued = 0;
		char why[512];

		for (int pi = 0; pi < f->nports; pi++)
			for (int v = 0; v < PORT_NVL; v++)
				queued += f->ports[pi]->vl[v].inq.len;
		fab_deadlock_explain(f, why, sizeof(why));
		return sim_diag_set(d, NULL, 0, 0,
				    "stalled at %.3f us: %llu of %llu messages delivered (%llu lost), %llu packets stuck in switch buffers%s%s",
				    (double)f->eng.now / SIM_US,
				    (unsigned long long)f->tot.msgs_done,
				    (unsigned long long)f->tot.msgs_total,
				    (unsigned long long)f->tot.msgs_lost,
				    (unsigned long long)queued, why[0] ? ": " : " (a credit loop?)", why);
	}
	return 0;
}

void fab_host_kernel(const struct fab *f, int node, struct fab_kernel *k)
{
	memset(k, 0, sizeof(*k));
	if (node >= 0 && node < f->nnodes && f->rc_transport)
		tcp_host_kernel(f->nodes[node].hca, k);
}

void fab_set_tap(struct fab *f, int i, fab_tap_fn fn, void *ctx)
{
	if (i < 0 || i >= f->nports)
		return;
	f->tap_fn = fn;
	f->tap_ctx = ctx;
	f->ports[i]->tap = true;
}

bool fab_time_limit_reached(const struct fab *f)
{
	return f->p.max_time_ns && f->eng.now >= f->p.max_time_ns * SIM_NS;
}

struct srv_map *fab_server(struct fab *f)
{
	return f->srv;
}

const struct fab_params *fab_get_params(const struct fab *f)
{
	return &f->p;
}

int fab_nodes(const struct fab *f)
{
	return f->nnodes;
}

const struct host_stats *fab_host_stats(const struct fab *f, int node)
{
	if (node < 0 || node >= f->nnodes || !f->nodes[node].hca)
		return NULL;
	return &f->nodes[node].hca->host.st;
}

int fab_nports(const struct fab *f)
{
	return f->nports;
}

const struct fab_port_info *fab_port(const struct fab *f, int i)
{
	struct port *pt = f->ports[i];

	/* the per-packet counters live beside the credits (struct port_vl) */
	pt->info.busy_ps = pt->busy_ps;
	for (int v = 0; v < PORT_NVL; v++) {
		struct fab_vl_stats *s = &pt->info.vl[v];
		const struct port_vl *q = &pt->vl[v];

		s->xmit_bytes = q->xmit_bytes;
		s->xmit_pkts = q->xmit_pkts;
		s->rcv_bytes = q->rcv_bytes;
		s->rcv_pkts = q->rcv_pkts;
		s->buf_high = q->buf_high;
		s->fc_pkts = (q->fc_sent_wraps << 32) + q->fc_sent;
	}
	return &pt->info;
}

uint64_t fab_aside_sent(const struct fab *f)
{
	return f->aside_sent;
}

uint64_t fab_port_xmit_bytes(const struct fab *f, int i)
{
	const struct port *pt = f->ports[i];
	uint64_t b = 0;

	for (int v = 0; v < PORT_NVL; v++)
		b += pt->vl[v].xmit_bytes;
	return b;
}

bool fab_port_local(const struct fab *f, int i)
{
	return sim_local(&f->eng, f->port_comp0 + (uint32_t)(f->ports[i] - f->port_mem));
}

void fab_port_sample(const struct fab *f, int i, struct fab_sample *s)
{
	const struct port *pt = f->ports[i];

	memset(s, 0, sizeof(*s));
	for (int v = 0; v < PORT_NVL; v++)
		s->xmit_bytes += pt->vl[v].xmit_bytes;
	for (int v = 0; v < FAB_MAX_VLS && v < f->p.vls; v++) {
		const struct port_fc_ring *q = &pt->fcq;
		uint16_t fccl = pt->vl[v].fccl;
		uint64_t limit = pt->vl[v].limit_abs;

		/* credits are applied lazily (models/port/port.c): count those landed by now */
		for (uint32_t k = 0; k < q->n; k++) {
			const struct port_fc *fc = port_fc_ring_at(q, k);

			if (fc->arrive > f->eng.now)
				break;
			if (fc->vl == v) {
				fccl = (uint16_t)(fc->limit & IB_CREDIT_MASK);
				limit += (uint32_t)(fc->limit - (uint32_t)limit);
			}
		}
		s->buf_bytes[v] = pt->vl[v].rx_used * IB_BLOCK_BYTES;
		/* a wide (internal) link's window is its buffer, beyond FCCL's */
		s->credits[v] = pt->wide ? (int32_t)(limit > pt->vl[v].tx_blocks ?
						      limit - pt->vl[v].tx_blocks : 0) :
					   (int32_t)ib_credit_avail(fccl, pt->vl[v].fctbs);
	}
}

void fab_totals(const struct fab *f, struct fab_totals *t)
{
	*t = f->tot;
	t->xmit_wait_ps = 0;
	t->acks = t->retransmitted = t->seq_naks = t->rnr_naks = t->ack_timeouts = 0;
	t->ooo_held = t->lb_chosen = t->lb_moved = t->lb_notified = 0;
	t->flow_paths = (struct fab_flow_paths){ 0 };
	t->cpu_ps = 0;
	tcp_totals(f, t);	/* tcp_segments ... (models/tcp) */
	for (int i = 0; i < f->nnodes; i++) {
		struct hca *h = f->nodes[i].hca;

		if (h)	/* verbs costs and, on fabric=tcp, the kernel stack's */
			t->cpu_ps += h->host.st.cpu_ps;
		if (f->nodes[i].type == NET_SWITCH) {
			const uint64_t *lb = f->nodes[i].eth ? eth_sw_lb_words(&f->nodes[i])
							     : sw_lb_words(&f->nodes[i]);

			if (lb) {
				t->lb_chosen += lb[0];
				t->lb_moved += lb[1];
				t->lb_notified += lb[2];
			}
		}

		for (uint32_t q = 0; h && q <= h->nqps; q++) {
			/* the live QPs, then those destroyed (the trace replay's) */
			const struct hca_qp_stats *st = q < h->nqps ? h->qps[q] ? &h->qps[q]->st : NULL
							 : &h->gone;

			if (!st)
				continue;
			t->acks += st->acks_sent;
			t->retransmitted += st->pkts_retransmitted;
			t->seq_naks += st->seq_naks_rcvd;
			t->rnr_naks += st->rnr_naks_rcvd;
			t->ack_timeouts += st->timeouts;
			hca_flow_paths_add(&t->flow_paths, st);
			t->ooo_held += st->ooo_held;
		}
	}
	t->paused_ps = 0;
	for (int pi = 0; pi < f->nports; pi++)
		for (int v = 0; v < PORT_NVL; v++) {
			t->xmit_wait_ps += f->ports[pi]->info.vl[v].xmit_wait_ps;
			t->paused_ps += f->ports[pi]->info.vl[v].paused_ps;
		}
}

int fab_check_credits(const struct fab *f, struct sim_diag *d)
{
	if (fab_is_eth(&f->p))
		return 0;	/* no credits on Ethernet (PFC: tests count drops) */
	for (int pi = 0; pi < f->nports; pi++) {
		const struct port *tx = f->ports[pi], *rx = tx->peer;

		if (tx->down)	/* no credits count on a dead link (port_set_down) */
			continue;
		for (int v = 0; v < f->p.vls; v++) {
			uint64_t cap = rx->vl[v].rx_cap;
			const char *bad = NULL;

			if (rx->vl[v].rx_blocks > tx->vl[v].tx_blocks)
				bad = "receiver got more blocks than were sent";
			else if (rx->vl[v].rx_blocks - rx->vl[v].rx_freed != rx->vl[v].rx_used)
				bad = "buffer occupancy does not match blocks received minus freed";
			else if (rx->vl[v].rx_used > cap)
				bad = "buffer occupancy exceeds the buffer";
			else if (tx->vl[v].tx_blocks > tx->vl[v].limit_abs)
				bad = "sender went past its credit limit (negative credits)";
			else if (tx->vl[v].limit_abs > rx->vl[v].rx_freed + cap)
				bad = "advertised limit exceeds the free buffer";
			else if (tx->vl[v].fctbs != (tx->vl[v].tx_blocks & IB_CREDIT_MASK))
				bad = "FCTBS disagrees with blocks sent";
			else if (tx->vl[v].fccl != (tx->vl[v].limit_abs & IB_CREDIT_MASK))
				bad = "FCCL disagrees with the advertised limit";
			if (bad)
				return sim_diag_set(d, NULL, 0, 0,
						    "credit invariant at %llu ps, node %d port %u -> node %d port %u VL %d: %s "
						    "(sent %llu, received %llu, freed %llu, used %u, limit %llu, buffer %llu blocks)",
						    (unsigned long long)f->eng.now, tx->node->idx, tx->port_no,
						    rx->node->idx, rx->port_no, v, bad,
						    (unsigned long long)tx->vl[v].tx_blocks,
						    (unsigned long long)rx->vl[v].rx_blocks,
						    (unsigned long long)rx->vl[v].rx_freed, rx->vl[v].rx_used,
						    (unsigned long long)tx->vl[v].limit_abs,
						    (unsigned long long)cap);
		}
	}
	return 0;
}
