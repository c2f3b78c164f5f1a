/* SPDX-License-Identifier: MIT */
/*
 * cli_report.c - the results of `ibfab run`: the human summary, the --json
 * document and the --csv files (formats documented in `ibfab run --help`,
 * cli_run.c, which must change with them).
 *
 * Everything here reads the finished fabric through fab.h's public calls
 * (per-port counters, totals, the message list); nothing reaches into the
 * model. Output is deterministic: ports and messages are written in index
 * order, ties are broken by index, numbers that must diff exactly are
 * integers (picoseconds, bytes), and the few doubles go through one fixed
 * format. Wall-clock figures are the only run-to-run difference, and
 * `reproducible` removes them.
 */
#include "tools/cli_report.h"

#include "tools/cli_fault.h"
#include "tools/cli_sharp.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "models/hca/hca.h"
#include "models/link/link.h"
#include "sim/sim_stats.h"
#include "sim/sim_json.h"
#include "tools/cli_trace.h"
#include "traces/trace_replay.h"
#include "tools/cli_perftest.h"
#include "tools/cli_run.h"

#define LABEL_W 15	/* summary: width of the label column */

const char *cli_fmt_time(sim_time_t ps, char *buf, size_t len)
{
	if (ps < SIM_NS)
		snprintf(buf, len, "%" PRIu64 " ps", ps);
	else if (ps < SIM_US)
		snprintf(buf, len, "%.3f ns", (double)ps / (double)SIM_NS);
	else if (ps < SIM_MS)
		snprintf(buf, len, "%.3f us", (double)ps / (double)SIM_US);
	else if (ps < SIM_S)
		snprintf(buf, len, "%.3f ms", (double)ps / (double)SIM_MS);
	else
		snprintf(buf, len, "%.3f s", (double)ps / (double)SIM_S);
	return buf;
}

const char *cli_fmt_bytes(uint64_t b, char *buf, size_t len)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)b;
	int u = -1;

	if (b < 1024) {
		snprintf(buf, len, "%" PRIu64 " B", b);
		return buf;
	}
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	/* exact sizes (buffers, message sizes) without a fraction: "32 KiB" */
	if (!(b & ((1ULL << (10 * (u + 1))) - 1)))
		snprintf(buf, len, "%.0f %s", v, unit[u]);
	else
		snprintf(buf, len, "%.2f %s", v, unit[u]);
	return buf;
}

const char *cli_fmt_count(double v, char *buf, size_t len)
{
	if (v < 1e4)
		snprintf(buf, len, "%.0f", v);
	else if (v < 1e6)
		snprintf(buf, len, "%.1f k", v / 1e3);
	else if (v < 1e9)
		snprintf(buf, len, "%.2f M", v / 1e6);
	else
		snprintf(buf, len, "%.2f G", v / 1e9);
	return buf;
}

static const char *node_desc(const struct net *net, int node)
{
	if (node < 0 || node >= net->nnodes)
		return "?";
	return net->nodes[node].desc ? net->nodes[node].desc : net->nodes[node].id;
}

static const char *node_type_name(enum net_node_type t)
{
	switch (t) {
	case NET_SWITCH: return "switch";
	case NET_CA: return "ca";
	case NET_ROUTER: return "router";
	}
	return "?";
}

/*
 * Figures derived from the counters, shared by the summary and the JSON so
 * the two never disagree.
 */
struct run_stats {
	struct fab_totals t;
	uint64_t n_total, n_done;	/* messages, or a replay's transfers */
	uint64_t c_min, c_p50, c_p99, c_max;	/* completion (end - start), ps */
	bool c_exact;				/* or p50/p99 within 1/4096 below (sim_samples) */
	double gbps;				/* payload bits / simulated time */
	int top[3];				/* ports with the most PortXmitWait */
	uint64_t top_wait[3];
	int ntop;
	int hi_port, hi_vl;			/* buffer high-water mark */
	uint32_t hi_bytes;
	/* how evenly the switch-to-switch links carried the load: each
	 * direction's time serialising over the simulated time */
	int sw_links, busiest;			/* busiest: a port index, or -1 */
	double load_max, load_mean;
	/* background traffic beside a replay: its messages, by the end */
	uint64_t bg_total, bg_done, bg_lost, bg_p50, bg_p99;
	bool bg_exact;
};

/*
 * fab_run() returns 0 short of the end only at sim.max_time_ns; a lost
 * message (a dropped VL15 packet) has ended, it is not pending.
 */
static bool stopped_early(const struct fab_totals *t)
{
	return t->msgs_done + t->msgs_lost < t->msgs_total;
}

static uint64_t port_wait(const struct fab_port_info *pi)
{
	uint64_t w = 0;

	for (int v = 0; v <= FAB_MAX_VLS; v++)
		w += pi->vl[v].xmit_wait_ps;
	return w;
}

static void label(FILE *out, const char *l)
{
	fprintf(out, "%-*s", LABEL_W, l);
}

/* A host that took part: it posted, completed or received something. */
static bool host_active(const struct host_stats *h)
{
	return h->posts || h->dma_writes || h->cqes;
}

/* What the kernel did (fabric=tcp), or that verbs bypassed it: the
 * lesson's counts, and the kernel's CPU time taken apart by cost. */
/* --profile: the set-up's stages and the run; each partition's share,
 * and how far the busiest is above the mean (the run waits for it). */
static void summary_profile(FILE *out, const struct cli_report *r)
{
	const struct cli_profile *pr = r->profile;
	char a[32], b[32], c[32];

	if (!r->reproducible) {
		label(out, "set-up");
		fprintf(out, "%.3f s: topology %.3f s, routes %.3f s, traffic %.3f s, fabric %.3f s",
			pr->topo_s + pr->route_s + pr->traffic_s + pr->build_s + pr->part_s,
			pr->topo_s, pr->route_s, pr->traffic_s, pr->build_s);
		if (pr->n)
			fprintf(out, ", cut %.3f s", pr->part_s);
		fputc('\n', out);
	}
	if (r->prog && r->tres) {
		/* what the replay held of the program at once: the memory a
		 * workload costs grows with this, not with its steps */
		label(out, "trace steps");
		fprintf(out, "%s, ", cli_fmt_count((double)r->prog->nsteps, a, sizeof(a)));
		if (r->prog->nlz)
			fprintf(out, "%s of them stored (the rest made as the replay reaches them)",
				cli_fmt_count((double)r->prog->nstored, b, sizeof(b)));
		else
			fputs("all stored", out);
		fprintf(out, ", at most %s held at once\n",
			cli_fmt_count((double)r->tres->live_peak, c, sizeof(c)));
	}
	if (!pr->n)
		return;
	uint64_t ev = 0, ev_max = 0, sent = 0;
	double busy = 0, busy_max = 0;

	for (uint32_t k = 0; k < pr->n; k++) {
		ev += pr->part[k].events;
		sent += pr->part[k].sent;
		busy += pr->part[k].busy_s;
		if (pr->part[k].events > ev_max)
			ev_max = pr->part[k].events;
		if (pr->part[k].busy_s > busy_max)
			busy_max = pr->part[k].busy_s;
	}
	label(out, "partitions");
	fprintf(out, "%u %s: look-ahead %s, %" PRIu64 " of %" PRIu64 " cables cut, %" PRIu64
		" windows, %s events and %s messages a window\n", pr->n, r->engine,
		cli_fmt_time(pr->lookahead, a, sizeof(a)), pr->cut_links, pr->links, pr->windows,
		cli_fmt_count(pr->windows ? (double)ev / (double)pr->windows : 0, b, sizeof(b)),
		cli_fmt_count(pr->windows ? (double)sent / (double)pr->windows : 0, c, sizeof(c)));
	for (uint32_t k = 0; k < pr->n; k++) {
		const struct cli_prof_part *q = &pr->part[k];

		fprintf(out, "  %-13u%u switches, %u hosts: %s events (%.1f%%), %s messages out, idle in %" PRIu64
			" windows", k, q->switches, q->hosts, cli_fmt_count((double)q->events, a, sizeof(a)),
			ev ? 100.0 * (double)q->events / (double)ev : 0.0,
			cli_fmt_count((double)q->sent, b, sizeof(b)), q->idle_windows);
		if (!r->reproducible)
			fprintf(out, "; ran %.3f s, waited %.3f s", q->busy_s, q->wait_s);
		fputc('\n', out);
	}
	label(out, "imbalance");
	fprintf(out, "the busiest partition has %.3fx the mean events", ev ? (double)ev_max * pr->n / (double)ev : 0.0);
	if (!r->reproducible)
		fprintf(out, ", %.3fx the mean time running them", busy > 0 ? busy_max * pr->n / busy : 0.0);
	fputc('\n', out);
}

static void summary_kernel(FILE *out, const struct fab_kernel *k, const struct fab_params *p)
{
	char a[32], b[32], c[32], d[32], e[32];

	label(out, "kernel");
	if (!fab_kind_of(p)->tcp) {
		fprintf(out, "bypassed (verbs): 0 system calls, 0 interrupts, 0 bytes copied by a CPU\n");
		return;
	}
	fprintf(out, "%" PRIu64 " system call%s, %" PRIu64 " interrupt%s, %" PRIu64
		" context switch%s, %s copied by a CPU (%s from the cache)\n", k->syscalls,
		k->syscalls == 1 ? "" : "s", k->interrupts, k->interrupts == 1 ? "" : "s",
		k->ctx_switches, k->ctx_switches == 1 ? "" : "es",
		cli_fmt_bytes(k->cpu_copy_bytes, a, sizeof(a)),
		cli_fmt_bytes(k->cached_copy_bytes, b, sizeof(b)));
	label(out, "");
	fprintf(out, "CPU: system calls %s, copies %s, protocol %s, interrupts %s, wake-ups %s\n",
		cli_fmt_time(k->syscall_ps, a, sizeof(a)), cli_fmt_time(k->copy_ps, b, sizeof(b)),
		cli_fmt_time(k->proto_ps, c, sizeof(c)), cli_fmt_time(k->irq_ps, d, sizeof(d)),
		cli_fmt_time(k->wake_ps, e, sizeof(e)));
}

const char *cli_lb_name(const struct fab_params *p)
{
	if (fab_kind_of(p)->eth) {
		static const char *const eth[] = {
			[ETH_LB_ECMP] = "ecmp", [ETH_LB_STATIC] = "table",
			[ETH_LB_FLOWLET] = "flowlet", [ETH_LB_SPRAY] = "spray",
		};

		return eth[p->eth.lb];
	}
	if (!p->ib_ar)
		return "table";
	return p->ib_ar_flowlet ? "ar flowlet" : "ar";
}

void cli_json_kernel(struct sim_json *j, const struct fab_kernel *k)
{
	sim_json_key(j, "kernel");
	sim_json_obj_begin(j);
	sim_json_ku64(j, "syscalls", k->syscalls);
	sim_json_ku64(j, "interrupts", k->interrupts);
	sim_json_ku64(j, "context_switches", k->ctx_switches);
	sim_json_ku64(j, "cpu_copy_bytes", k->cpu_copy_bytes);
	sim_json_ku64(j, "cached_copy_bytes", k->cached_copy_bytes);
	sim_json_ku64(j, "syscall_ps", k->syscall_ps);
	sim_json_ku64(j, "copy_ps", k->copy_ps);
	sim_json_ku64(j, "protocol_ps", k->proto_ps);
	sim_json_ku64(j, "interrupt_ps", k->irq_ps);
	sim_json_ku64(j, "wakeup_ps", k->wake_ps);
	sim_json_obj_end(j);
}

static void run_stats(const struct cli_report *r, struct run_stats *s)
{
	struct sim_samples cs;
	int np = fab_nports(r->fab);

	memset(s, 0, sizeof(*s));
	fab_totals(r->fab, &s->t);
	if (r->tres)		/* a replayed trace ends with its last step */
		s->t.end_ps = r->tres->end_ps;
	sim_samples_init(&cs);
	/* the traffic's: kept by the fabric as its messages finish, whichever
	 * form the list has (a replay's flows are not the fabric's messages) */
	struct sim_samples *ct = &cs;

	if (r->prog && r->tres && !r->tres->flows_built) {
		/* A replay whose flow list was not built (nothing lists flows):
		 * its transfer steps are the flows trace_results_flows() would
		 * make, each delivered at its end, their times kept as they
		 * finished. The quantiles reorder the samples, not their
		 * values: the results are not const, only this view of them. */
		s->n_total = s->n_done = r->tres->xfer_times.n;
		ct = (struct sim_samples *)&r->tres->xfer_times;
		if (r->nbackground) {	/* the fabric's messages are the background's */
			struct sim_samples *bg = fab_completions(r->fab, &s->bg_done);
			static const double q[2] = { 0.5, 0.99 };
			uint64_t v[2] = { 0, 0 };

			s->bg_total = s->t.msgs_total;
			s->bg_lost = s->t.msgs_lost;
			if (bg->n)
				sim_samples_quantiles(bg, q, 2, v);
			s->bg_p50 = v[0];
			s->bg_p99 = v[1];
			s->bg_exact = sim_samples_exact(bg);
			/* the workload's lines count its transfers, which end it */
			s->t.msgs_total = s->t.msgs_done = s->t.msgs_lost = 0;
		}
	} else if (!r->prog) {
		s->n_total = r->msgs->n;
		ct = fab_completions(r->fab, &s->n_done);
	} else if (!r->tres || r->tres->flows_built) {
		s->n_total = r->msgs->n;
		for (size_t i = 0; i < r->msgs->n; i++) {
			const struct fab_msg *m = &r->msgs->v[i];

			if (!m->done)
				continue;
			s->n_done++;
			sim_samples_add(&cs, m->end - m->start);
		}
	}
	if (ct->n) {
		static const double q[4] = { 0, 0.5, 0.99, 1 };
		uint64_t v[4];

		sim_samples_quantiles(ct, q, 4, v);
		s->c_exact = sim_samples_exact(ct);
		s->c_min = v[0];
		s->c_p50 = v[1];
		s->c_p99 = v[2];
		s->c_max = v[3];
	}
	sim_samples_fini(&cs);
	if (s->t.end_ps)	/* bytes * 8 / (ps * 1e-12) / 1e9 */
		s->gbps = (double)s->t.payload_delivered * 8000.0 / (double)s->t.end_ps;

	s->hi_port = -1;
	s->busiest = -1;
	for (int i = 0; i < np; i++) {
		const struct fab_port_info *pi = fab_port(r->fab, i);
		uint64_t w = port_wait(pi);

		if (r->net->nodes[pi->node].type == NET_SWITCH &&
		    r->net->nodes[pi->peer_node].type == NET_SWITCH && s->t.end_ps) {
			double u = (double)pi->busy_ps / (double)s->t.end_ps;

			s->sw_links++;
			s->load_mean += u;
			if (s->busiest < 0 || u > s->load_max) {
				s->load_max = u;
				s->busiest = i;
			}
		}

		for (int v = 0; v <= FAB_MAX_VLS; v++)
			if (pi->vl[v].buf_high > s->hi_bytes) {
				s->hi_bytes = pi->vl[v].buf_high;
				s->hi_port = i;
				s->hi_vl = v;
			}
		if (!w)
			continue;
		/* insertion into the top 3; strict > keeps the lower index on ties */
		int k = s->ntop < 3 ? s->ntop++ : 3;

		while (k > 0 && w > s->top_wait[k - 1]) {
			if (k < 3) {
				s->top[k] = s->top[k - 1];
				s->top_wait[k] = s->top_wait[k - 1];
			}
			k--;
		}
		if (k < 3) {
			s->top[k] = i;
			s->top_wait[k] = w;
		}
	}
	if (s->sw_links)
		s->load_mean /= s->sw_links;
}

/*
 * "4xHDR (200 Gb/s) x 24 links, ...": the rates in use. Counted over port
 * ends (both ends of a cable run at the same rate), so halved for cables.
 */
static void summary_rates(FILE *out, const struct cli_report *r)
{
	struct { struct link_rate rate; int n; } seen[8];
	int nseen = 0, np = fab_nports(r->fab), more = 0;
	char rb[32];

	for (int i = 0; i < np; i++) {
		struct link_rate rt = fab_port(r->fab, i)->rate;
		int k;

		for (k = 0; k < nseen; k++)
			if (seen[k].rate.lanes == rt.lanes && seen[k].rate.speed == rt.speed)
				break;
		if (k < nseen) {
			seen[k].n++;
		} else if (nseen < (int)SIM_ARRAY_SIZE(seen)) {
			seen[nseen].rate = rt;
			seen[nseen++].n = 1;
		} else {
			more++;
		}
	}
	for (int k = 0; k < nseen; k++)
		fprintf(out, "%s%s (%.0f Gb/s) x %d", k ? ", " : "",
			link_rate_str(seen[k].rate, rb, sizeof(rb)),
			link_data_rate_bps(seen[k].rate) / 1e9, seen[k].n / 2);
	if (more)
		fprintf(out, ", %d more", more);
	fputs(nseen ? " links\n" : "(no links)\n", out);
}

static void summary_setup(FILE *out, const struct cli_report *r)
{
	const struct fab_params *p = r->params;
	char a[32];

	label(out, "fabric");
	if (fab_is_eth(p))
		fprintf(out, "%s: Ethernet, %s shared buffer per switch port, %s\n",
			fab_fabric_names[p->fabric],
			cli_fmt_bytes(p->eth.buffer_per_port, a, sizeof(a)),
			fab_kind_of(p)->pfc ? "PFC on" : "PFC off (lossy)");
	else
		fprintf(out, "ib: InfiniBand, credit-based flow control%s%s\n",
			p->ib_ar ? (p->ib_ar_flowlet ? ", adaptive routing per flowlet" :
				    ", adaptive routing") : ", routes by the tables",
			p->sw_voq ? ", per-output switch queues" : ", FIFO switch inputs");
	label(out, "preset");
	fprintf(out, "%s: MTU %u, %u data VLs, %s buffer per VL, switch %u ns, HCA %u ns; seed %" PRIu64 "\n",
		p->preset, p->mtu, p->vls, cli_fmt_bytes(p->vl_buf_bytes, a, sizeof(a)),
		p->sw_latency_ns, p->hca_latency_ns, r->seed);
	label(out, "topology");
	fprintf(out, "%s%s\n", r->topo_source,
		r->topo_default ? " (default: no --topo given)" : "");
	label(out, "");
	fprintf(out, "%d nodes: %d switches, %d hosts", r->net->nnodes,
		net_count(r->net, NET_SWITCH), net_nhosts(r->net));
	if (net_count(r->net, NET_ROUTER))
		fprintf(out, ", %d routers", net_count(r->net, NET_ROUTER));
	fprintf(out, "; %d links\n", net_nlinks(r->net));
	label(out, "link rate");
	summary_rates(out, r);
	if (p->link_forced) {
		label(out, "");
		fputs("(forced with --set link.width/link.speed)\n", out);
	}
	label(out, "traffic");
	for (int i = 0; i < r->ntraffic; i++) {
		if (i)
			label(out, "");
		fprintf(out, "%s%s\n", r->traffic[i],
			r->traffic_default && i == 0 ? " (default: no --traffic given)" : "");
	}
	for (int i = 0; i < r->nbackground; i++) {
		label(out, i ? "" : "background");
		fprintf(out, "%s\n", r->background[i]);
	}
	if (!r->ntraffic)
		fprintf(out, "(none)\n");
}

static void summary_port(FILE *out, const struct cli_report *r, int i)
{
	const struct fab_port_info *pi = fab_port(r->fab, i);

	fprintf(out, "%s port %d -> %s port %d", node_desc(r->net, pi->node), pi->port,
		node_desc(r->net, pi->peer_node), pi->peer_port);
}

/* ", 2 connections given up after tcp.retries2 timeouts", or "" */
static const char *gave_up(const struct fab_totals *t, char *buf, size_t len)
{
	buf[0] = 0;
	if (t->tcp_gave_up)
		snprintf(buf, len, ", %" PRIu64 " connection%s given up (tcp.retries2)",
			 t->tcp_gave_up, t->tcp_gave_up == 1 ? "" : "s");
	return buf;
}

void cli_report_summary(FILE *out, const struct cli_report *r)
{
	struct run_stats s;
	char a[32], b[32], c[32], d[32], why[96];

	bool eth = fab_is_eth(r->params);

	run_stats(r, &s);
	summary_setup(out, r);

	label(out, "simulated");
	fprintf(out, "%s%s\n", cli_fmt_time(s.t.end_ps, a, sizeof(a)),
		stopped_early(&s.t) ? " (stopped early)" : "");
	label(out, "messages");
	fprintf(out, "%" PRIu64 " / %" PRIu64 " delivered", s.n_done, s.n_total);
	if (s.t.msgs_lost && s.t.tcp_gave_up)
		fprintf(out, ", %" PRIu64 " lost (TCP gave up: tcp.retries2)", s.t.msgs_lost);
	else if (s.t.msgs_lost)
		fprintf(out, ", %" PRIu64 " lost (a packet was dropped)", s.t.msgs_lost);
	fprintf(out, "%s\n", stopped_early(&s.t) ? "  ** INCOMPLETE **" : "");
	label(out, "delivered");
	fprintf(out, "%s payload, %s on the wire, %" PRIu64 " packets\n",
		cli_fmt_bytes(s.t.payload_delivered, a, sizeof(a)),
		cli_fmt_bytes(s.t.bytes_delivered, b, sizeof(b)), s.t.packets_delivered);
	label(out, "completion");
	if (s.n_done)
		fprintf(out, "min %s  median %s  p99 %s  max %s%s\n",
			cli_fmt_time(s.c_min, a, sizeof(a)), cli_fmt_time(s.c_p50, b, sizeof(b)),
			cli_fmt_time(s.c_p99, c, sizeof(c)), cli_fmt_time(s.c_max, d, sizeof(d)),
			s.c_exact ? "" : " (median, p99 within 0.025%)");
	else
		fprintf(out, "(no message completed)\n");
	if (r->nbackground) {
		label(out, "background");
		fprintf(out, "%" PRIu64 " / %" PRIu64 " messages delivered by the workload's end",
			s.bg_done, s.bg_total);
		if (s.bg_lost)
			fprintf(out, ", %" PRIu64 " lost", s.bg_lost);
		if (s.bg_done)
			fprintf(out, "; median %s, p99 %s%s", cli_fmt_time(s.bg_p50, a, sizeof(a)),
				cli_fmt_time(s.bg_p99, b, sizeof(b)),
				s.bg_exact ? "" : " (within 0.025%)");
		fputs("\n", out);
	}
	label(out, "throughput");
	fprintf(out, "%.1f Gb/s aggregate payload over the simulated time\n", s.gbps);
	if (s.busiest >= 0) {
		/* the spread adaptive routing and ECMP are about */
		label(out, "link load");
		fprintf(out, "switch-to-switch links busy %.1f%% on average, at most %.1f%% (",
			100 * s.load_mean, 100 * s.load_max);
		summary_port(out, r, s.busiest);
		fprintf(out, ")\n");
	}

	label(out, eth ? "xmit waits" : "credit stalls");
	fprintf(out, "%s total PortXmitWait%s\n", cli_fmt_time(s.t.xmit_wait_ps, a, sizeof(a)),
		eth ? " (data waiting, paused)" : "");
	for (int k = 0; k < s.ntop; k++) {
		label(out, k ? "" : "  worst ports");
		fprintf(out, "%-12s ", cli_fmt_time(s.top_wait[k], a, sizeof(a)));
		summary_port(out, r, s.top[k]);
		fputc('\n', out);
	}
	label(out, "buffer high");
	if (s.hi_port >= 0) {
		fprintf(out, "%s at ", cli_fmt_bytes(s.hi_bytes, a, sizeof(a)));
		const struct fab_port_info *pi = fab_port(r->fab, s.hi_port);

		fprintf(out, "%s port %d VL %d (receive buffer)\n",
			node_desc(r->net, pi->node), pi->port, s.hi_vl);
	} else {
		fprintf(out, "0 B\n");
	}
	label(out, "drops");
	fprintf(out, "%" PRIu64, s.t.drops);
	if (s.t.drops && eth)
		fprintf(out, " (%" PRIu64 " buffer full; %" PRIu64 " with no route; %" PRIu64
			" failed their CRC: link.drop_prob/ber)",
			s.t.drops_congestion, s.t.drops_route, s.t.drops_corrupt);
	else if (s.t.drops)
		fprintf(out, " (%" PRIu64 " VL15 management, not flow controlled; %" PRIu64
			" with no route; %" PRIu64 " failed their CRC: link.drop_prob/ber)",
			s.t.drops_vl15, s.t.drops_route, s.t.drops_corrupt);
	else if (fab_kind_of(r->params)->pfc)
		fprintf(out, " (lossless: PFC pauses instead of dropping)");
	else if (!eth)
		fprintf(out, " (lossless: data VLs never drop)");
	if (s.t.drops_link)
		fprintf(out, "; %" PRIu64 " on links that were down (--fault)", s.t.drops_link);
	fputc('\n', out);
	if (eth) {
		label(out, "PFC");
		fprintf(out, "%" PRIu64 " pause frames, %s paused in all\n", s.t.pause_frames,
			cli_fmt_time(s.t.paused_ps, a, sizeof(a)));
		label(out, "ECN");
		fprintf(out, "%" PRIu64 " packets marked, %" PRIu64 " CNPs\n", s.t.ecn_marks,
			s.t.cnps);
	} else if (s.t.ecn_marks || s.t.cnps) {
		label(out, "IB CC");
		fprintf(out, "%" PRIu64 " packets marked FECN, %" PRIu64 " BECNs\n", s.t.ecn_marks,
			s.t.cnps);
	}
	label(out, "transport");
	if (fab_kind_of(r->params)->tcp)
		fprintf(out, "TCP: %" PRIu64 " segments, %" PRIu64 " retransmitted (%" PRIu64
			" fast recoveries, %" PRIu64 " RTO timeouts), %" PRIu64 " pure ACKs%s\n",
			s.t.tcp_segments, s.t.tcp_retransmits, s.t.tcp_fast_recoveries,
			s.t.tcp_timeouts, s.t.acks, gave_up(&s.t, why, sizeof(why)));
	else
		fprintf(out, "%" PRIu64 " ACKs, %" PRIu64 " packets retransmitted (%" PRIu64
			" sequence NAKs, %" PRIu64 " ACK timeouts, %" PRIu64 " RNR NAKs)\n",
			s.t.acks, s.t.retransmitted, s.t.seq_naks, s.t.ack_timeouts, s.t.rnr_naks);
	if (s.t.lb_chosen || s.t.ooo_held) {
		/* adaptive routing, flowlets or spraying: how much it moved, and
		 * what the receivers had to put back in order */
		label(out, "paths");
		fprintf(out, "%s: %" PRIu64 " of %" PRIu64 " choices off the table's port (%.1f%%); ",
			cli_lb_name(r->params), s.t.lb_moved, s.t.lb_chosen,
			s.t.lb_chosen ? 100.0 * (double)s.t.lb_moved / (double)s.t.lb_chosen : 0.0);
		if (s.t.lb_notified)	/* ib.arn: queues the switches upstream steered round */
			fprintf(out, "%" PRIu64 " notifications between switches; ", s.t.lb_notified);
		fprintf(out, "%" PRIu64 " packets held out of order at the receivers\n", s.t.ooo_held);
		if (s.t.flow_paths.flows) {
			const struct fab_flow_paths *fp = &s.t.flow_paths;

			label(out, "");
			fprintf(out, "each flow's data over %.1f paths on average, at most %" PRIu64
				"; %" PRIu64 " of %" PRIu64 " flows over two or more\n",
				(double)fp->paths / (double)fp->flows, fp->max, fp->spread, fp->flows);
		}
	}
	cli_fault_summary(out, r->fab, r->net);	/* --fault: what happened */
	cli_sharp_summary(out, r->net, r->prog, r->tres);	/* a SHARP tree: where, how busy */
	if (r->params->host_model) {
		struct host_stats sum = { 0 };
		int active = 0;

		for (int i = 0; i < r->net->nnodes; i++) {
			const struct host_stats *h = fab_host_stats(r->fab, i);

			if (!h)
				continue;
			active += host_active(h);
			sum.pcie_rd_bytes += h->pcie_rd_bytes;
			sum.pcie_wr_bytes += h->pcie_wr_bytes;
			sum.hostmem_bytes += h->hostmem_bytes;
			sum.cpu_ps += h->cpu_ps;
			sum.staging_copies += h->staging_copies;
		}
		label(out, "hosts");
		fprintf(out, "PCIe %s read + %s written, host memory %s, %" PRIu64
			" staging copies\n", cli_fmt_bytes(sum.pcie_rd_bytes, a, sizeof(a)),
			cli_fmt_bytes(sum.pcie_wr_bytes, b, sizeof(b)),
			cli_fmt_bytes(sum.hostmem_bytes, c, sizeof(c)), sum.staging_copies);
		label(out, "");
		fprintf(out, "CPU %s in all, %s per message (posts, polls, copies), %s per active host (%d)\n",
			cli_fmt_time(sum.cpu_ps, a, sizeof(a)),
			cli_fmt_time(s.n_total ? sum.cpu_ps / s.n_total : 0, b, sizeof(b)),
			cli_fmt_time(active ? sum.cpu_ps / (uint64_t)active : 0, c, sizeof(c)), active);
		summary_kernel(out, &s.t.kernel, fab_get_params(r->fab));
	}
	if (!eth) {
		label(out, "FC packets");
		fprintf(out, "%" PRIu64 "\n", s.t.fc_pkts);
	}
	label(out, "events");
	fprintf(out, "%" PRIu64 ", %" PRIu64 " packet-hops", r->events, s.t.packet_hops);
	if (r->partitions > 1)
		fprintf(out, "; %u partitions (%s)", r->partitions, r->engine);
	fputc('\n', out);
	label(out, "wall");
	if (r->reproducible) {
		fprintf(out, "(not shown: --reproducible)\n");
	} else if (r->wall_s > 0) {
		fprintf(out, "%.3f s: %s events/s, %s packet-hops/s\n", r->wall_s,
			cli_fmt_count((double)r->events / r->wall_s, a, sizeof(a)),
			cli_fmt_count((double)s.t.packet_hops / r->wall_s, b, sizeof(b)));
	} else {
		fprintf(out, "%.3f s\n", r->wall_s);
	}
	if (r->profile)
		summary_profile(out, r);
}

/* ---- JSON ------------------------------------------------------------ */

static void json_profile(struct sim_json *j, const struct cli_report *r)
{
	const struct cli_profile *pr = r->profile;
	double z = r->reproducible ? 0 : 1;	/* wall-clock figures: 0 */

	sim_json_key(j, "profile");
	sim_json_obj_begin(j);
	sim_json_key(j, "setup_s");
	sim_json_obj_begin(j);
	sim_json_kdouble(j, "topology", z * pr->topo_s);
	sim_json_kdouble(j, "routes", z * pr->route_s);
	sim_json_kdouble(j, "traffic", z * pr->traffic_s);
	sim_json_kdouble(j, "fabric", z * pr->build_s);
	sim_json_kdouble(j, "cut", z * pr->part_s);
	sim_json_obj_end(j);
	sim_json_kdouble(j, "run_s", z * r->wall_s);
	sim_json_ku64(j, "lookahead_ps", pr->n ? pr->lookahead : 0);
	sim_json_ku64(j, "cables", pr->links);
	sim_json_ku64(j, "cut_cables", pr->cut_links);
	sim_json_ku64(j, "windows", pr->windows);
	if (r->prog && r->tres) {
		sim_json_ku64(j, "trace_steps", r->prog->nsteps);
		sim_json_ku64(j, "trace_steps_stored",
			      r->prog->nlz ? r->prog->nstored : r->prog->nsteps);
		sim_json_ku64(j, "trace_steps_held", r->tres->live_peak);
	}
	sim_json_key(j, "partitions");
	sim_json_arr_begin(j);
	for (uint32_t k = 0; k < pr->n; k++) {
		const struct cli_prof_part *q = &pr->part[k];

		sim_json_obj_begin(j);
		sim_json_ku64(j, "switches", q->switches);
		sim_json_ku64(j, "hosts", q->hosts);
		sim_json_ku64(j, "events", q->events);
		sim_json_ku64(j, "messages_out", q->sent);
		sim_json_ku64(j, "idle_windows", q->idle_windows);
		sim_json_kdouble(j, "busy_s", z * q->busy_s);
		sim_json_kdouble(j, "wait_s", z * q->wait_s);
		sim_json_obj_end(j);
	}
	sim_json_arr_end(j);
	sim_json_obj_end(j);
}

static void json_vlarb(struct sim_json *j, const char *key,
		       const struct ib_vlarb_entry *e, int n)
{
	sim_json_key(j, key);
	sim_json_arr_begin(j);
	for (int i = 0; i < n; i++) {
		sim_json_obj_begin(j);
		sim_json_ku64(j, "vl", e[i].vl);
		sim_json_ku64(j, "weight", e[i].weight);
		sim_json_obj_end(j);
	}
	sim_json_arr_end(j);
}

/*
 * Every field of struct fab_params, under the key --set takes. A field added
 * to fab_params must be added here too (the tests compare against
 * --help-params).
 */
static void json_params(struct sim_json *j, const struct fab_params *p)
{
	const struct link_speed_info *si = link_speed_info(p->speed);

	sim_json_key(j, "params");
	sim_json_obj_begin(j);
	sim_json_kstr(j, "fabric", fab_fabric_names[p->fabric]);
	sim_json_kstr(j, "preset", p->preset);
	sim_json_ku64(j, "link.width", p->lanes);
	sim_json_kstr(j, "link.speed", si ? si->name : "?");
	sim_json_kbool(j, "link.forced", p->link_forced);
	sim_json_kdouble(j, "link.cable_m", p->cable_m);
	sim_json_ku64(j, "link.ps_per_m", p->ps_per_m);
	if (p->nlink_sets) {	/* single cables' own values, as given */
		char buf[160];

		sim_json_key(j, "link_sets");
		sim_json_arr_begin(j);
		for (int i = 0; i < p->nlink_sets; i++) {
			fab_link_set_format(&p->link_sets[i], buf, sizeof(buf));
			sim_json_str(j, buf);
		}
		sim_json_arr_end(j);
	}
	if (p->nswitch_adds) {	/* switches the settings added */
		char buf[96];

		sim_json_key(j, "switch_adds");
		sim_json_arr_begin(j);
		for (int i = 0; i < p->nswitch_adds; i++) {
			snprintf(buf, sizeof(buf), "switch[%s].ports=%u", p->switch_adds[i].name,
				 p->switch_adds[i].ports);
			sim_json_str(j, buf);
		}
		sim_json_arr_end(j);
	}
	sim_json_ku64(j, "ib.mtu", p->mtu);
	sim_json_ku64(j, "ib.vls", p->vls);
	sim_json_ku64(j, "ib.buffer", p->vl_buf_bytes);
	sim_json_ku64(j, "ib.vl15_buffer", p->vl15_buf_bytes);
	sim_json_ku64(j, "ib.fc_period_ns", p->fc_period_ns);
	sim_json_ku64(j, "ib.fc_threshold", p->fc_threshold);
	sim_json_key(j, "ib.sl2vl");
	sim_json_arr_begin(j);
	for (int i = 0; i < FAB_NSL; i++)
		sim_json_u64(j, p->sl2vl[i]);
	sim_json_arr_end(j);
	json_vlarb(j, "vlarb.high", p->vlarb.high, p->vlarb.nhigh);
	json_vlarb(j, "vlarb.low", p->vlarb.low, p->vlarb.nlow);
	sim_json_ku64(j, "vlarb.limit_high", p->vlarb.limit);
	sim_json_ku64(j, "switch.latency_ns", p->sw_latency_ns);
	sim_json_ku64(j, "hca.latency_ns", p->hca_latency_ns);
	sim_json_ku64(j, "hca.buffer", p->hca_buf_bytes);
	sim_json_ku64(j, "sim.sample_ns", p->sample_ns);
	sim_json_ku64(j, "sim.max_time_ns", p->max_time_ns);
	sim_json_kbool(j, "sim.check", p->check);
	sim_json_obj_end(j);
}

static void json_topology(struct sim_json *j, const struct cli_report *r)
{
	sim_json_key(j, "topology");
	sim_json_obj_begin(j);
	sim_json_kstr(j, "source", r->topo_source);
	sim_json_kbool(j, "default", r->topo_default);
	sim_json_ki64(j, "nodes", r->net->nnodes);
	sim_json_ki64(j, "switches", net_count(r->net, NET_SWITCH));
	sim_json_ki64(j, "cas", net_count(r->net, NET_CA));
	sim_json_ki64(j, "routers", net_count(r->net, NET_ROUTER));
	sim_json_ki64(j, "hosts", net_nhosts(r->net));
	sim_json_ki64(j, "links", net_nlinks(r->net));
	sim_json_obj_end(j);
}

/*
 * What is known of a message that did not finish (sim.max_time_ns): it was
 * posted if its post set start, which is 0 only for a message posted at
 * time 0 (a dependent message, after >= 0, is posted only once its
 * predecessor is delivered, never at time 0; one planned later, or waiting
 * for room in its send queue when the run stopped, was not); a first
 * packet never leaves before the HCA latency, and with 0 latency a
 * delivered one has end > 0.
 */
static bool msg_posted(const struct fab_msg *m)
{
	return m->done || m->start || (m->after < 0 && !m->post);
}

static bool msg_sent(const struct fab_msg *m)
{
	return m->done || m->first_tx;
}

static void json_time_or_null(struct sim_json *j, const char *key, sim_time_t t, bool known)
{
	sim_json_key(j, key);
	if (known)
		sim_json_u64(j, t);
	else
		sim_json_null(j);
}

static const char *op_name(uint8_t op)
{
	return op == FAB_OP_READ ? "read" : op == FAB_OP_SEND ? "send" : "write";
}

/*
 * The messages the outputs list, in order: a list's (explicit), a compact
 * list's read back from the fabric (fab_keep_results), or a replay's
 * transfer steps made into flows one at a time as trace_results_flows()
 * would make them, rather than 80 bytes a transfer held at the end of the
 * run. msg_next gives the next, NULL at the end; *err on a read error.
 */
struct msg_iter {
	size_t i, s;
	struct fab_msg tmp;
	bool err;
};

static const struct fab_msg *msg_next(const struct cli_report *r, struct msg_iter *it)
{
	if (r->prog && r->tres && !r->tres->flows_built) {
		const struct trace_program *p = r->prog;
		const int32_t *node = p->trace->rank_node;

		struct trace_step stmp;
		struct trace_step_time ttmp;
		const struct trace_step *st = NULL;
		const uint32_t *deps;
		uint32_t buf[TRACE_STEP_MAXDEPS];

		for (; it->s < p->nsteps; it->s++) {
			st = trace_program_step(p, (uint32_t)it->s, &stmp, &deps, buf);
			if (st->kind == TS_XFER)
				break;
		}
		if (it->s == p->nsteps)
			return NULL;
		const struct trace_step_time *tt = trace_results_time(r->tres, (uint32_t)it->s++,
								      &ttmp);

		if (!tt) {
			it->err = true;
			return NULL;
		}

		it->tmp = (struct fab_msg){
			.src = (uint32_t)node[st->rank], .dst = (uint32_t)node[st->peer],
			.bytes = st->bytes, .after = -1,
			.start = tt->start, .first_tx = tt->start, .end = tt->end,
			.completed = tt->end, .done = true, .cqe = true, .finished = true,
		};
		it->i++;
		return &it->tmp;
	}
	if (it->i == r->msgs->n)
		return NULL;
	if (!r->msgs->compact)
		return &r->msgs->v[it->i++];
	const struct fab_msg *m = fab_msg_result(r->fab, it->i++, &it->tmp);

	it->err = !m;
	return m;
}

static int json_flows(struct sim_json *j, const struct cli_report *r)
{
	struct msg_iter it = { 0 };
	const struct fab_msg *m;

	sim_json_key(j, "flows");
	sim_json_arr_begin(j);
	for (size_t i = 0; (m = msg_next(r, &it)); i++) {

		sim_json_obj_begin(j);
		sim_json_ku64(j, "id", i);
		sim_json_kstr(j, "src", node_desc(r->net, (int)m->src));
		sim_json_kstr(j, "dst", node_desc(r->net, (int)m->dst));
		sim_json_ku64(j, "bytes", m->bytes);
		sim_json_ku64(j, "sl", m->sl);
		sim_json_ku64(j, "stream", m->stream);
		sim_json_ki64(j, "after", m->after);
		sim_json_kstr(j, "op", op_name(m->op));
		sim_json_kbool(j, "done", m->done);
		json_time_or_null(j, "start_ps", m->start, msg_posted(m));
		json_time_or_null(j, "first_tx_ps", m->first_tx, msg_sent(m));
		json_time_or_null(j, "end_ps", m->end, m->done);
		json_time_or_null(j, "completed_ps", m->completed, m->cqe);
		sim_json_kstr(j, "status", m->cqe ? hca_wc_status_str(m->status) : "pending");
		sim_json_obj_end(j);
	}
	sim_json_arr_end(j);
	return it.err ? -1 : 0;
}

static bool vl_used(const struct fab_vl_stats *v)
{
	return v->xmit_pkts || v->rcv_pkts || v->xmit_wait_ps || v->xmit_discards ||
	       v->buf_high || v->rcv_errors;
}

/* What each host's PCIe, memory and CPU did (models/host), hosts that did something. */
static void json_hosts(struct sim_json *j, const struct cli_report *r)
{
	sim_json_key(j, "hosts");
	sim_json_arr_begin(j);
	for (int i = 0; i < r->net->nnodes; i++) {
		const struct host_stats *h = fab_host_stats(r->fab, i);

		struct fab_kernel k;

		if (!h || !host_active(h))
			continue;
		fab_host_kernel(r->fab, i, &k);
		sim_json_obj_begin(j);
		sim_json_kstr(j, "node", node_desc(r->net, i));
		sim_json_ku64(j, "pcie_rd_bytes", h->pcie_rd_bytes);
		sim_json_ku64(j, "pcie_wr_bytes", h->pcie_wr_bytes);
		sim_json_ku64(j, "gpu_pcie_bytes", h->gpu_pcie_bytes);
		sim_json_ku64(j, "root_complex_bytes", h->rc_bytes);
		sim_json_ku64(j, "hostmem_bytes", h->hostmem_bytes);
		sim_json_ku64(j, "cpu_ps", h->cpu_ps);
		sim_json_ku64(j, "staging_copies", h->staging_copies);
		sim_json_ku64(j, "posts", h->posts);
		sim_json_ku64(j, "cqes", h->cqes);
		cli_json_kernel(j, &k);
		sim_json_obj_end(j);
	}
	sim_json_arr_end(j);
}

static void json_port(struct sim_json *j, const struct cli_report *r, int i)
{
	const struct fab_port_info *pi = fab_port(r->fab, i);
	const struct net *net = r->net;
	char rb[32];

	sim_json_obj_begin(j);
	sim_json_kstr(j, "node", node_desc(net, pi->node));
	sim_json_kstr(j, "node_id", net->nodes[pi->node].id);
	sim_json_kstr(j, "node_type", node_type_name(net->nodes[pi->node].type));
	sim_json_ki64(j, "port", pi->port);
	sim_json_kstr(j, "peer", node_desc(net, pi->peer_node));
	sim_json_kstr(j, "peer_id", pi->peer_node >= 0 && pi->peer_node < net->nnodes ?
		      net->nodes[pi->peer_node].id : NULL);
	sim_json_ki64(j, "peer_port", pi->peer_port);
	sim_json_kstr(j, "rate", link_rate_str(pi->rate, rb, sizeof(rb)));
	sim_json_kdouble(j, "rate_gbps", link_data_rate_bps(pi->rate) / 1e9);
	sim_json_ku64(j, "prop_ps", pi->prop_ps);
	sim_json_ku64(j, "busy_ps", pi->busy_ps);
	sim_json_key(j, "vls");
	sim_json_arr_begin(j);
	for (int v = 0; v <= FAB_MAX_VLS; v++) {
		const struct fab_vl_stats *vs = &pi->vl[v];

		if (!vl_used(vs))
			continue;
		sim_json_obj_begin(j);
		sim_json_ku64(j, "vl", (uint64_t)v);
		sim_json_ku64(j, "PortXmitData", vs->xmit_bytes);
		sim_json_ku64(j, "PortXmitPkts", vs->xmit_pkts);
		sim_json_ku64(j, "PortRcvData", vs->rcv_bytes);
		sim_json_ku64(j, "PortRcvPkts", vs->rcv_pkts);
		sim_json_ku64(j, "PortXmitWait_ps", vs->xmit_wait_ps);
		sim_json_ku64(j, "PortXmitDiscards", vs->xmit_discards);
		sim_json_ku64(j, "buf_high_bytes", vs->buf_high);
		sim_json_ku64(j, "fc_pkts", vs->fc_pkts);
		sim_json_ku64(j, "PortRcvErrors", vs->rcv_errors);
		sim_json_obj_end(j);
	}
	sim_json_arr_end(j);
	sim_json_obj_end(j);
}

int cli_report_json(FILE *out, const struct cli_report *r)
{
	struct sim_json j;
	struct run_stats s;
	int np = fab_nports(r->fab);

	run_stats(r, &s);
	sim_json_init(&j, out, 1);
	sim_json_obj_begin(&j);
	sim_json_kstr(&j, "ibfab_version", IBFAB_VERSION);
	sim_json_ku64(&j, "seed", r->seed);
	sim_json_kbool(&j, "reproducible", r->reproducible);
	sim_json_kbool(&j, "complete", !stopped_early(&s.t));
	sim_json_ku64(&j, "sim_time_ps", s.t.end_ps);
	sim_json_ku64(&j, "events", r->events);
	sim_json_kstr(&j, "engine", r->engine ? r->engine : "sequential");
	sim_json_ku64(&j, "partitions", r->partitions > 1 ? r->partitions : 1);
	sim_json_kdouble(&j, "wall_s", r->reproducible ? 0 : r->wall_s);
	if (!r->reproducible && r->wall_s > 0) {
		sim_json_kdouble(&j, "events_per_s", (double)r->events / r->wall_s);
		sim_json_kdouble(&j, "packet_hops_per_s",
				 (double)s.t.packet_hops / r->wall_s);
	}
	if (r->profile)
		json_profile(&j, r);
	sim_json_ku64(&j, "messages_total", s.n_total);
	sim_json_ku64(&j, "messages_delivered", s.n_done);
	sim_json_ku64(&j, "messages_lost", s.t.msgs_lost);
	if (r->nbackground) {	/* --traffic beside --trace */
		sim_json_key(&j, "background");
		sim_json_obj_begin(&j);
		sim_json_key(&j, "specs");
		sim_json_arr_begin(&j);
		for (int i = 0; i < r->nbackground; i++)
			sim_json_str(&j, r->background[i]);
		sim_json_arr_end(&j);
		sim_json_ku64(&j, "messages_total", s.bg_total);
		sim_json_ku64(&j, "messages_delivered", s.bg_done);
		sim_json_ku64(&j, "messages_lost", s.bg_lost);
		sim_json_ku64(&j, "completion_p50_ps", s.bg_p50);
		sim_json_ku64(&j, "completion_p99_ps", s.bg_p99);
		sim_json_obj_end(&j);
	}
	sim_json_ku64(&j, "packets_delivered", s.t.packets_delivered);
	sim_json_ku64(&j, "bytes_delivered", s.t.bytes_delivered);
	sim_json_ku64(&j, "payload_bytes_delivered", s.t.payload_delivered);
	sim_json_ku64(&j, "packet_hops", s.t.packet_hops);
	sim_json_ku64(&j, "drops", s.t.drops);
	sim_json_ku64(&j, "drops_vl15", s.t.drops_vl15);
	sim_json_ku64(&j, "drops_route", s.t.drops_route);
	sim_json_ku64(&j, "drops_corrupt", s.t.drops_corrupt);
	sim_json_ku64(&j, "drops_congestion", s.t.drops_congestion);
	sim_json_ku64(&j, "drops_link", s.t.drops_link);
	sim_json_ku64(&j, "pause_frames", s.t.pause_frames);
	sim_json_ku64(&j, "paused_ps", s.t.paused_ps);
	sim_json_ku64(&j, "ecn_marks", s.t.ecn_marks);
	sim_json_ku64(&j, "cnps", s.t.cnps);
	sim_json_ku64(&j, "tcp_segments", s.t.tcp_segments);
	sim_json_ku64(&j, "tcp_retransmits", s.t.tcp_retransmits);
	sim_json_ku64(&j, "tcp_timeouts", s.t.tcp_timeouts);
	sim_json_ku64(&j, "tcp_fast_recoveries", s.t.tcp_fast_recoveries);
	sim_json_ku64(&j, "cpu_ps", s.t.cpu_ps);
	cli_json_kernel(&j, &s.t.kernel);
	sim_json_ku64(&j, "acks", s.t.acks);
	sim_json_ku64(&j, "retransmitted_packets", s.t.retransmitted);
	sim_json_ku64(&j, "seq_naks", s.t.seq_naks);
	sim_json_ku64(&j, "rnr_naks", s.t.rnr_naks);
	sim_json_ku64(&j, "ack_timeouts", s.t.ack_timeouts);
	sim_json_kstr(&j, "load_balancing", cli_lb_name(r->params));
	sim_json_ku64(&j, "lb_choices", s.t.lb_chosen);
	sim_json_ku64(&j, "lb_off_table", s.t.lb_moved);
	sim_json_ku64(&j, "ar_notifications", s.t.lb_notified);
	sim_json_key(&j, "path_diversity");
	sim_json_obj_begin(&j);
	sim_json_ku64(&j, "flows", s.t.flow_paths.flows);
	sim_json_kdouble(&j, "mean", s.t.flow_paths.flows ? (double)s.t.flow_paths.paths /
							     (double)s.t.flow_paths.flows : 0.0);
	sim_json_ku64(&j, "max", s.t.flow_paths.max);
	sim_json_ku64(&j, "spread", s.t.flow_paths.spread);
	sim_json_obj_end(&j);
	sim_json_ku64(&j, "ooo_held", s.t.ooo_held);
	sim_json_ku64(&j, "fc_packets", s.t.fc_pkts);
	sim_json_ku64(&j, "xmit_wait_ps", s.t.xmit_wait_ps);
	sim_json_kdouble(&j, "throughput_gbps", s.gbps);
	sim_json_key(&j, "completion_ps");
	sim_json_obj_begin(&j);
	sim_json_ku64(&j, "count", s.n_done);
	sim_json_ku64(&j, "min", s.c_min);
	sim_json_ku64(&j, "p50", s.c_p50);
	sim_json_ku64(&j, "p99", s.c_p99);
	sim_json_ku64(&j, "max", s.c_max);
	/* past 2^20 completions p50 and p99 come from a histogram (sim_samples):
	 * at most this fraction below the exact values */
	if (s.n_done && !s.c_exact)
		sim_json_kdouble(&j, "quantile_error", 1.0 / (1u << SIM_SAMPLES_SUB_BITS));
	sim_json_obj_end(&j);
	sim_json_key(&j, "link_load");
	sim_json_obj_begin(&j);
	sim_json_ki64(&j, "switch_links", s.sw_links);
	sim_json_kdouble(&j, "mean", s.load_mean);
	sim_json_kdouble(&j, "max", s.load_max);
	if (s.busiest >= 0) {
		const struct fab_port_info *pi = fab_port(r->fab, s.busiest);

		sim_json_kstr(&j, "node", node_desc(r->net, pi->node));
		sim_json_ki64(&j, "port", pi->port);
	}
	sim_json_obj_end(&j);
	cli_fault_json(&j, r->fab, r->net);	/* only with --fault */
	cli_sharp_json(&j, r->net, r->prog, r->tres);	/* only with a SHARP tree */
	sim_json_key(&j, "buf_high");
	sim_json_obj_begin(&j);
	sim_json_ku64(&j, "bytes", s.hi_bytes);
	if (s.hi_port >= 0) {
		const struct fab_port_info *pi = fab_port(r->fab, s.hi_port);

		sim_json_kstr(&j, "node", node_desc(r->net, pi->node));
		sim_json_ki64(&j, "port", pi->port);
		sim_json_ki64(&j, "vl", s.hi_vl);
	}
	sim_json_obj_end(&j);
	json_params(&j, r->params);
	json_topology(&j, r);
	sim_json_key(&j, "traffic");
	sim_json_obj_begin(&j);
	sim_json_kbool(&j, "default", r->traffic_default);
	sim_json_key(&j, "specs");
	sim_json_arr_begin(&j);
	for (int i = 0; i < r->ntraffic; i++)
		sim_json_str(&j, r->traffic[i]);
	sim_json_arr_end(&j);
	sim_json_obj_end(&j);
	if (!r->no_flows && json_flows(&j, r)) {
		sim_json_finish(&j);
		return -1;
	}
	json_hosts(&j, r);
	sim_json_key(&j, "ports");
	sim_json_arr_begin(&j);
	for (int i = 0; i < np; i++)
		json_port(&j, r, i);
	sim_json_arr_end(&j);
	cli_perftest_json(&j, r);	/* hook: "perftest" tables, when specs ask (cli_perftest.c) */
	cli_trace_json(&j, r);		/* hook: "collectives", "ranks", "critical_path" (cli_trace.c) */
	sim_json_obj_end(&j);
	return sim_json_finish(&j);
}

/* ---- CSV ------------------------------------------------------------- */

void cli_csv_field(FILE *out, const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

int cli_report_flows_csv(FILE *out, const struct cli_report *r)
{
	fputs("id,src,dst,bytes,sl,stream,after,done,start_ps,first_tx_ps,end_ps,completion_ps,"
	      "op,completed_ps,status\n", out);
	struct msg_iter it = { 0 };
	const struct fab_msg *m;

	for (size_t i = 0; (m = msg_next(r, &it)); i++) {
		fprintf(out, "%zu,", i);
		cli_csv_field(out, node_desc(r->net, (int)m->src));
		fputc(',', out);
		cli_csv_field(out, node_desc(r->net, (int)m->dst));
		fprintf(out, ",%" PRIu64 ",%u,%u,%d,%d,", m->bytes, (unsigned)m->sl,
			(unsigned)m->stream, (int)m->after, m->done ? 1 : 0);
		/* unknown times (unfinished messages) stay empty, not made up */
		if (msg_posted(m))
			fprintf(out, "%" PRIu64, m->start);
		fputc(',', out);
		if (msg_sent(m))
			fprintf(out, "%" PRIu64, m->first_tx);
		fputc(',', out);
		if (m->done)
			fprintf(out, "%" PRIu64 ",%" PRIu64, m->end, m->end - m->start);
		else
			fputc(',', out);
		fprintf(out, ",%s,", op_name(m->op));
		if (m->cqe)
			fprintf(out, "%" PRIu64, m->completed);
		fputc(',', out);
		cli_csv_field(out, m->cqe ? hca_wc_status_str(m->status) : "pending");
		fputc('\n', out);
	}
	return ferror(out) || it.err ? -1 : 0;
}

int cli_links_csv_init(struct cli_links_csv *c, FILE *out, const struct net *net,
		       const struct fab *f, uint16_t vl_mask, uint64_t max_rows)
{
	memset(c, 0, sizeof(*c));
	c->out = out;
	c->net = net;
	c->vl_mask = vl_mask;
	c->max_rows = max_rows;
	c->nports = fab_nports(f);
	c->prev_bytes = calloc(c->nports ? (size_t)c->nports : 1, sizeof(*c->prev_bytes));
	if (!c->prev_bytes)
		return -1;
	fputs("time_ps,node,port,peer,vl,util,buf_bytes,credits\n", out);
	return 0;
}

void cli_links_csv_sample(struct fab *f, sim_time_t now, void *ctx)
{
	struct cli_links_csv *c = ctx;
	sim_time_t dt = now - c->prev_t;
	uint64_t per = (uint64_t)c->nports * (uint64_t)__builtin_popcount(c->vl_mask);

	/* whole samples only, within sim.max_csv_rows: the first one past it
	 * is remembered for the warning (cli_links_csv_cut) */
	if (c->cut || (c->max_rows && c->rows + per > c->max_rows)) {
		if (!c->cut)
			c->cut_at = now;
		c->cut = true;
		return;
	}
	for (int i = 0; i < c->nports; i++) {
		const struct fab_port_info *pi = fab_port(f, i);
		struct fab_sample s;
		double util = 0;

		fab_port_sample(f, i, &s);
		if (dt && s.xmit_bytes > c->prev_bytes[i]) {
			/* serialisation time of the bytes sent in the interval */
			util = (double)link_ser_ps(pi->rate, s.xmit_bytes - c->prev_bytes[i]) /
			       (double)dt;
			/* a packet counted when it starts can overshoot the interval */
			if (util > 1)
				util = 1;
		}
		c->prev_bytes[i] = s.xmit_bytes;
		for (int v = 0; v < FAB_MAX_VLS; v++) {
			if (!(c->vl_mask & (1u << v)))
				continue;
			fprintf(c->out, "%" PRIu64 ",", now);
			cli_csv_field(c->out, node_desc(c->net, pi->node));
			fprintf(c->out, ",%d,", pi->port);
			cli_csv_field(c->out, node_desc(c->net, pi->peer_node));
			fprintf(c->out, ",%d,%.4f,%" PRIu32 ",%" PRId32 "\n", v, util,
				s.buf_bytes[v], s.credits[v]);
			c->rows++;
		}
	}
	c->prev_t = now;
}

void cli_links_csv_fini(struct cli_links_csv *c)
{
	free(c->prev_bytes);
	c->prev_bytes = NULL;
}

uint16_t cli_used_vls(const struct fab_params *p, const struct fab_msgs *m)
{
	uint16_t mask = 0;

	uint64_t first, count;
	sim_time_t gap;

	for (size_t r = 0; r < fab_msgs_nruns(m); r++) {
		uint8_t vl = p->sl2vl[fab_msgs_run(m, r, &first, &count, &gap)->sl & (FAB_NSL - 1)];

		if (vl < FAB_MAX_VLS)
			mask |= 1u << vl;
	}
	return mask;
}

/* The rate of a host's first port: the file's, unless --set forced it. */
static struct link_rate host_rate(const struct net *net, const struct fab_params *p,
				  uint32_t node)
{
	struct link_rate r = { .lanes = p->lanes, .speed = p->speed };
	int port = node < (uint32_t)net->nnodes ? net_first_port(net, (int)node) : -1;

	if (port >= 0) {
		const struct net_port *np = &net->nodes[node].ports[port];

		if (np->lanes && !p->width_forced)
			r.lanes = np->lanes;
		if (np->speed != LINK_SPEED_NONE && !p->speed_forced)
			r.speed = np->speed;
	}
	return r;
}

/* What a message takes beyond its serialisation: the HCA at each end and
 * about four switch hops. */
static sim_time_t msg_allowance_ps(const struct fab_params *p)
{
	return 2 * (sim_time_t)p->hca_latency_ns * SIM_NS +
	       4 * ((sim_time_t)p->sw_latency_ns * SIM_NS + link_prop_ps(p->cable_m, p->ps_per_m));
}

/* The three bounds of the estimates below, item by item: when each item
 * ends, and what each host has sent and received through its port. */
struct bound {
	sim_time_t *end, *tx, *rx, est, lat;
	size_t nn;
};

static int bound_init(struct bound *b, const struct net *net, const struct fab_params *p,
		      size_t items)
{
	b->nn = net->nnodes > 0 ? (size_t)net->nnodes : 1;
	b->end = malloc((items ? items : 1) * sizeof(*b->end));
	b->tx = calloc(b->nn, sizeof(*b->tx));
	b->rx = calloc(b->nn, sizeof(*b->rx));
	b->est = 0;
	b->lat = msg_allowance_ps(p);
	if (b->end && b->tx && b->rx)
		return 0;
	free(b->end);
	free(b->tx);
	free(b->rx);
	return -1;
}

/* Item i ends at t (or, moving ser bytes' time from src to dst, ser and the
 * allowance after t). */
static void bound_item(struct bound *b, size_t i, sim_time_t t, sim_time_t ser, bool xfer,
		       uint32_t src, uint32_t dst)
{
	b->end[i] = xfer ? t + ser + b->lat : t;
	if (b->end[i] > b->est)
		b->est = b->end[i];
	if (!xfer)
		return;
	if (src < b->nn && (b->tx[src] += ser) > b->est)
		b->est = b->tx[src];
	if (dst < b->nn && (b->rx[dst] += ser) > b->est)
		b->est = b->rx[dst];
}

static sim_time_t bound_fini(struct bound *b)
{
	free(b->end);
	free(b->tx);
	free(b->rx);
	return b->est;
}

/*
 * The estimate behind sim.sample_ns = 0. A lower bound on the run's length
 * from three things that cannot overlap: each message's own serialisation
 * after its post time or its predecessor (ping-pong chains), everything a
 * host sends through its one port, and everything a host receives (incast).
 * A per-message allowance covers the HCA and about four switch hops.
 * Congestion makes real runs longer, so ~1000 intervals over the estimate
 * gives from several hundred to a few thousand samples, without running
 * twice.
 */
sim_time_t cli_run_estimate_ps(const struct net *net, const struct fab_params *p,
				const struct fab_msgs *m)
{
	struct bound b;
	size_t nr = fab_msgs_nruns(m);
	uint64_t first, count, f0, c0;
	sim_time_t gap, g0;

	if (bound_init(&b, net, p, nr))
		return 0;
	/* run by run (an explicit list's are its messages): a run's messages
	 * are posted gap apart and wait for none, so its last ends last, and
	 * its hosts' ports carry count of them */
	for (size_t r = 0; r < nr; r++) {
		const struct fab_msg *g = fab_msgs_run(m, r, &first, &count, &gap);
		sim_time_t ser = link_ser_ps(host_rate(net, p, g->src), g->bytes);
		sim_time_t base = g->post + (count - 1) * gap;

		/* dependencies normally point backwards; a forward one is ignored */
		if (g->after >= 0 && (size_t)g->after < first) {
			size_t q = fab_msgs_run_of(m, (size_t)g->after);
			const struct fab_msg *a = fab_msgs_run(m, q, &f0, &c0, &g0);

			/* inside a run of several, the message's own post time */
			base = (c0 == 1 ? b.end[q] :
				a->post + ((uint64_t)g->after - f0) * g0 +
				link_ser_ps(host_rate(net, p, a->src), a->bytes) + b.lat) +
			       g->after_delay;
		}
		bound_item(&b, r, base, ser, true, g->src, g->dst);
		if (count > 1) {	/* the others' bytes through the same ports */
			b.tx[g->src] += (count - 1) * ser;
			b.rx[g->dst] += (count - 1) * ser;
			if (b.tx[g->src] > b.est)
				b.est = b.tx[g->src];
			if (b.rx[g->dst] > b.est)
				b.est = b.rx[g->dst];
		}
	}
	return bound_fini(&b);
}

/*
 * The same bound for a trace's lowered steps: a transfer's serialisation
 * and allowance after the last of its dependencies (which come earlier in
 * the program), a compute step's duration after them, and what each host
 * sends and receives through its port. 8 bytes a step while it runs,
 * freed before the replay allocates its own (32 and more a step).
 */
sim_time_t cli_trace_estimate_ps(const struct net *net, const struct fab_params *p,
				  const struct trace_program *prog)
{
	const int32_t *node = prog->trace->rank_node;
	struct bound b;

	if (bound_init(&b, net, p, prog->nsteps))
		return 0;
	for (size_t s = 0; s < prog->nsteps; s++) {
		struct trace_step tmp;
		const uint32_t *deps;
		uint32_t buf[TRACE_STEP_MAXDEPS];
		const struct trace_step *st = trace_program_step(prog, (uint32_t)s, &tmp, &deps, buf);
		/* a compute step or a join has no peer (-1), and no port to count */
		const bool xfer = st->kind == TS_XFER;
		uint32_t src = xfer ? (uint32_t)node[st->rank] : 0, dst = xfer ? (uint32_t)node[st->peer] : 0;
		sim_time_t base = 0;

		for (uint32_t j = 0; j < st->ndeps; j++) {
			uint32_t d = deps[j];

			if (d < s && b.end[d] > base)
				base = b.end[d];
		}
		if (xfer)
			bound_item(&b, s, base, link_ser_ps(host_rate(net, p, src), st->bytes), true,
				   src, dst);
		else	/* compute: its duration; a join: nothing */
			bound_item(&b, s, base + (st->kind == TS_COMPUTE ? st->duration : 0), 0,
				   false, src, dst);
	}
	return bound_fini(&b);
}

uint16_t cli_trace_vls(const struct fab_params *p)
{
	uint8_t vl = p->sl2vl[0];

	return vl < FAB_MAX_VLS ? (uint16_t)(1u << vl) : 0;
}

uint64_t cli_csv_rows_per_sample(const struct net *net, uint16_t vls)
{
	/* every link has a port at each end; a row per used data VL */
	return 2 * (uint64_t)net_nlinks(net) * (uint64_t)__builtin_popcount(vls);
}

uint64_t cli_auto_sample_ns(const struct net *net, const struct fab_params *p,
			    sim_time_t est, uint16_t vls)
{
	static const uint64_t mult[] = { 2, 5, 10 };
	uint64_t ns = est / SIM_NS / 1000, step, best, per, floor_ns;

	if (!ns)
		return 1;
	/*
	 * The nearest (by ratio) of 1, 2, 5 x 10^k, for readable time stamps:
	 * 630 to 1580 samples over the estimate.
	 */
	for (step = 1; step * 10 <= ns; step *= 10)
		;
	best = step;
	for (size_t i = 0; i < SIM_ARRAY_SIZE(mult); i++) {
		uint64_t c = step * mult[i];

		/* c/ns < ns/best  <=>  c * best < ns * ns (in floating point: no overflow) */
		if ((double)c * (double)best < (double)ns * (double)ns)
			best = c;
	}
	/*
	 * A big fabric: no more than half of sim.max_csv_rows over the
	 * estimate (the run may take twice as long), the next 1, 2, 5 x 10^k
	 * up. 1000 samples of an 8,192-host fat tree's 49,152 ports would be
	 * 49M rows, 2 GB.
	 */
	per = cli_csv_rows_per_sample(net, vls);
	if (p->max_csv_rows && per &&
	    (double)est / SIM_NS / (double)best * (double)per > (double)(p->max_csv_rows / 2)) {
		floor_ns = (uint64_t)((double)est / SIM_NS * (double)per /
				      (double)(p->max_csv_rows / 2 ? p->max_csv_rows / 2 : 1)) + 1;
		for (step = 1; step * 10 <= floor_ns; step *= 10)
			;
		best = step;
		for (size_t i = 0; best < floor_ns && i < SIM_ARRAY_SIZE(mult); i++)
			best = step * mult[i];
	}
	return best;
}
