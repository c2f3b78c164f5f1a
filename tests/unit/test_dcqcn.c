/* SPDX-License-Identifier: MIT */
/*
 * test_dcqcn.c - DCQCN (models/roce/dcqcn.c, cc.c).
 *
 * The reaction point against traces computed by hand from the paper's
 * equations (Zhu et al. 2015, section 3.1):
 *   decrease  Rt = Rc, Rc = Rc (1 - a/2), a = (1 - g) a + g
 *   alpha     a = (1 - g) a every K without a decrease
 *   increase  fast recovery Rc = (Rt + Rc)/2 for F events, then additive
 *             (Rt += R_AI) and hyper (Rt += R_HAI) increase
 * every expected number below is written out from those equations, not
 * from the model. Then the notification point's CNP interval, the two
 * shipped parameter sets and the keys, and - on the RoCE fabric - fair
 * convergence of 2 and 4 flows (Jain's index), the bottleneck queue near
 * the ECN thresholds, and the PFC victim recovering with DCQCN.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "models/fabric/fab.h"
#include "models/net/net.h"
#include "models/roce/dcqcn.h"
#include "tests/unit/test_main.h"
#include "tests/unit/util_fabric.h"

#define G (1.0 / 256)
#define CLOSE(a, b) CU_ASSERT(fabs((a) - (b)) <= 1e-9 * fabs(b) + 1e-3)

/* The paper's set on a 40 Gb/s link (the paper's testbed rate). */
static void paper_cfg(struct dcqcn_cfg *c)
{
	struct dcqcn_params p;

	dcqcn_params_default(&p);
	dcqcn_params_set_named(&p, DCQCN_SET_PAPER);
	dcqcn_cfg_resolve(c, &p, 40e9);
}

static void test_rp_paper_trace(void)
{
	struct dcqcn_cfg c;
	struct dcqcn_rp rp;
	const sim_time_t us = SIM_US;

	paper_cfg(&c);
	CLOSE(c.rai_bps, 40e6);		/* 40 Mb/s at 40 Gb/s */
	CLOSE(c.rhai_bps, 400e6);
	CU_ASSERT_EQUAL(c.f, 5);
	CU_ASSERT_EQUAL(c.timer, 55 * us);
	CU_ASSERT_EQUAL(c.alpha_period, 55 * us);
	dcqcn_rp_init(&rp, &c);
	CLOSE(rp.rc, 40e9);
	CLOSE(rp.alpha, 1.0);

	/* t=0 CNP: Rt = 40, Rc = 40 (1 - 1/2) = 20, a = (1-g) 1 + g = 1 */
	dcqcn_rp_cnp(&rp, &c, 0);
	CLOSE(rp.rt, 40e9);
	CLOSE(rp.rc, 20e9);
	CLOSE(rp.alpha, 1.0);
	/* t=55: alpha timer, a = 255/256, then fast recovery Rc = (40+20)/2 */
	dcqcn_rp_advance(&rp, &c, 55 * us);
	CLOSE(rp.alpha, 255.0 / 256);
	CLOSE(rp.rc, 30e9);
	CU_ASSERT_EQUAL(rp.last, DCQCN_FAST_RECOVERY);
	/* t=60 CNP (60 us after the last cut >= 50): Rt = 30,
	 * Rc = 30 (1 - 0.99609375/2) = 15.05859375,
	 * a = 0.99609375 x 255/256 + 1/256 = 0.9961090087890625 */
	dcqcn_rp_cnp(&rp, &c, 60 * us);
	CLOSE(rp.rt, 30e9);
	CLOSE(rp.rc, 15.05859375e9);
	CLOSE(rp.alpha, 0.9961090087890625);
	/* five fast recoveries at 115, 170, 225, 280, 335 us */
	static const double fr[5] = {
		22.529296875e9, 26.2646484375e9, 28.13232421875e9, 29.066162109375e9,
		29.5330810546875e9,
	};
	for (int i = 0; i < 5; i++) {
		dcqcn_rp_advance(&rp, &c, (115 + 55 * (sim_time_t)i) * us);
		CLOSE(rp.rc, fr[i]);
		CU_ASSERT_EQUAL(rp.last, DCQCN_FAST_RECOVERY);
	}
	/* alpha: decays at 115, 170, ..., 335 (5 x K after the cut at 60) */
	CLOSE(rp.alpha, 0.9961090087890625 * pow(255.0 / 256, 5));
	/* t=390: timer stage 5 = F, byte counter at 0: additive increase,
	 * Rt = 30.04, Rc = (30.04 + 29.5330810546875)/2 */
	dcqcn_rp_advance(&rp, &c, 390 * us);
	CU_ASSERT_EQUAL(rp.last, DCQCN_ADDITIVE);
	CLOSE(rp.rt, 30.04e9);
	CLOSE(rp.rc, (30.04e9 + 29.5330810546875e9) / 2);

	/* Byte counter: every 10 MB one more event. The timer stage is 6; the
	 * byte stage goes 0..5 (additive: one counter past F, the other not),
	 * then at byte stage 6 both are past F: hyper increase. */
	double rt = rp.rt, rc = rp.rc;

	for (int i = 0; i < 7; i++) {
		dcqcn_rp_sent(&rp, &c, 391 * us, 10u * 1000 * 1000);
		if (i < 6) {
			rt += 40e6;
			CU_ASSERT_EQUAL(rp.last, DCQCN_ADDITIVE);
		} else {
			rt += 400e6;
			CU_ASSERT_EQUAL(rp.last, DCQCN_HYPER);
		}
		rc = (rt + rc) / 2;
		CLOSE(rp.rt, rt);
		CLOSE(rp.rc, rc);
	}
	CU_ASSERT_EQUAL(rp.decreases, 2);
	CU_ASSERT_EQUAL(rp.fast_recoveries, 6);
	CU_ASSERT_EQUAL(rp.additive, 7);
	CU_ASSERT_EQUAL(rp.hyper, 1);

	/* Long after: back at the line rate, the increase timer stopped. */
	dcqcn_rp_advance(&rp, &c, 100 * SIM_MS);
	CLOSE(rp.rc, 40e9);
	CLOSE(rp.rt, 40e9);
	CU_ASSERT_EQUAL(rp.next_inc, 0);
}

/* The NIC set: F = 1, no byte counter; CNPs inside the 4 us decrease
 * period merge into one decrease at its end. */
static void test_rp_nic_merge(void)
{
	struct dcqcn_params p;
	struct dcqcn_cfg c;
	struct dcqcn_rp rp;
	const sim_time_t us = SIM_US;

	dcqcn_params_default(&p);
	CU_ASSERT_EQUAL(p.set, DCQCN_SET_NIC);
	dcqcn_cfg_resolve(&c, &p, 100e9);
	CLOSE(c.rai_bps, 20e6);		/* 5 Mb/s per 25 Gb/s */
	CLOSE(c.rhai_bps, 200e6);	/* 50 Mb/s per 25 Gb/s */
	CU_ASSERT_EQUAL(c.dec_period, 4 * us);
	CU_ASSERT_EQUAL(c.alpha_period, 1 * us);
	CU_ASSERT_EQUAL(c.timer, 300 * us);
	dcqcn_rp_init(&rp, &c);
	dcqcn_rp_cnp(&rp, &c, 0);		/* Rc 50, a = 1 */
	CLOSE(rp.rc, 50e9);
	dcqcn_rp_cnp(&rp, &c, 1 * us);		/* merged ... */
	dcqcn_rp_cnp(&rp, &c, 2 * us);
	CLOSE(rp.rc, 50e9);
	CU_ASSERT_EQUAL(rp.decreases, 1);
	/* ... into one at 4 us: a decayed at 1, 2, 3, 4 us (the tick at the
	 * decrease's own time first): a = (255/256)^4 */
	dcqcn_rp_advance(&rp, &c, 4 * us);
	double a = pow(255.0 / 256, 4);

	CU_ASSERT_EQUAL(rp.decreases, 2);
	/* no increase since the first cut: the target stays (clamp off) */
	CLOSE(rp.rt, 100e9);
	CLOSE(rp.rc, 50e9 * (1 - a / 2));
	CLOSE(rp.alpha, (1 - G) * a + G);
	/* F = 1 with the timer alone: fast recovery at 304, additive at 604,
	 * hyper from 904 us on */
	double rt = 100e9, rc = 50e9 * (1 - a / 2);

	dcqcn_rp_advance(&rp, &c, 304 * us);
	rc = (rt + rc) / 2;
	CLOSE(rp.rc, rc);
	CU_ASSERT_EQUAL(rp.last, DCQCN_FAST_RECOVERY);
	dcqcn_rp_advance(&rp, &c, 604 * us);
	rt += 20e6;
	if (rt > 100e9)
		rt = 100e9;	/* the target never exceeds the line rate */
	rc = (rt + rc) / 2;
	CLOSE(rp.rc, rc);
	CU_ASSERT_EQUAL(rp.last, DCQCN_ADDITIVE);
	dcqcn_rp_advance(&rp, &c, 904 * us);
	rt += 200e6;
	if (rt > 100e9)
		rt = 100e9;
	rc = (rt + rc) / 2;
	CLOSE(rp.rc, rc);
	CU_ASSERT_EQUAL(rp.last, DCQCN_HYPER);
	/* the byte counter is off: sending changes nothing */
	dcqcn_rp_sent(&rp, &c, 904 * us, 1u << 30);
	CLOSE(rp.rc, rc);
	/* a cut after an increase sets the target to the current rate */
	dcqcn_rp_cnp(&rp, &c, 905 * us);
	CLOSE(rp.rt, rc);
}

static void test_rp_floor(void)
{
	struct dcqcn_params p;
	struct dcqcn_cfg c;
	struct dcqcn_rp rp;

	dcqcn_params_default(&p);
	dcqcn_cfg_resolve(&c, &p, 100e9);
	dcqcn_rp_init(&rp, &c);
	for (int i = 0; i < 100; i++)
		dcqcn_rp_cnp(&rp, &c, (sim_time_t)i * 4 * SIM_US);
	CLOSE(rp.rc, 1e9);		/* dcqcn.min_rate_mbps = 1000 */
	CLOSE(rp.rt, 100e9);		/* no increase between the cuts: target kept */
	/* with the paper's clamp the target follows the cuts down */
	p.clamp = true;
	dcqcn_cfg_resolve(&c, &p, 100e9);
	dcqcn_rp_init(&rp, &c);
	for (int i = 0; i < 100; i++)
		dcqcn_rp_cnp(&rp, &c, (sim_time_t)i * 4 * SIM_US);
	CLOSE(rp.rc, 1e9);
	CLOSE(rp.rt, 1e9);
}

static void test_np_interval(void)
{
	struct dcqcn_params p;
	struct dcqcn_cfg c;
	sim_time_t last = 0;
	bool sent = false;
	const sim_time_t us = SIM_US;

	dcqcn_params_default(&p);
	dcqcn_params_set_named(&p, DCQCN_SET_PAPER);
	dcqcn_cfg_resolve(&c, &p, 40e9);
	CU_ASSERT(dcqcn_np_may_send(&last, &sent, &c, 7 * us));
	CU_ASSERT_FALSE(dcqcn_np_may_send(&last, &sent, &c, 8 * us));
	CU_ASSERT_FALSE(dcqcn_np_may_send(&last, &sent, &c, 56 * us));
	CU_ASSERT(dcqcn_np_may_send(&last, &sent, &c, 57 * us));
	CU_ASSERT_FALSE(dcqcn_np_may_send(&last, &sent, &c, 100 * us));
}

static void test_keys(void)
{
	struct fab_params p;
	struct sim_diag d;

	tf_params(&p, "hdr");
	CU_ASSERT(p.dcqcn.on);
	CU_ASSERT_EQUAL(p.dcqcn.timer_us, 300);
	tf_set(&p, "dcqcn.set=paper");
	CU_ASSERT_EQUAL(p.dcqcn.set, DCQCN_SET_PAPER);
	CU_ASSERT_EQUAL(p.dcqcn.timer_us, 55);
	CU_ASSERT_EQUAL(p.dcqcn.alpha_us, 55);
	CU_ASSERT_EQUAL(p.dcqcn.dec_us, 50);
	CU_ASSERT_EQUAL(p.dcqcn.cnp_interval_us, 50);
	CU_ASSERT_EQUAL(p.dcqcn.f, 5);
	CU_ASSERT_EQUAL(p.dcqcn.byte_counter, 10000000);
	tf_set(&p, "dcqcn.g=1/128");
	CLOSE(p.dcqcn.g, 1.0 / 128);
	tf_set(&p, "dcqcn.rai_mbps=10");
	tf_set(&p, "dcqcn.rhai_mbps=100");
	tf_set(&p, "dcqcn.byte_counter=1MiB");
	tf_set(&p, "dcqcn.timer_us=100");
	tf_set(&p, "dcqcn.alpha_us=2");
	tf_set(&p, "dcqcn.dec_us=8");
	tf_set(&p, "dcqcn.cnp_interval_us=10");
	tf_set(&p, "dcqcn.f=3");
	tf_set(&p, "dcqcn.min_rate_mbps=500");
	CU_ASSERT_EQUAL(p.dcqcn.rai_mbps, 10);
	CU_ASSERT_EQUAL(p.dcqcn.byte_counter, 1 << 20);
	CU_ASSERT_EQUAL(p.dcqcn.f, 3);
	CU_ASSERT_EQUAL(fab_params_check(&p, &d), 0);
	tf_set(&p, "dcqcn.on=0");
	CU_ASSERT_FALSE(p.dcqcn.on);
	tf_set(&p, "dcqcn.set=nic");
	CU_ASSERT_FALSE(p.dcqcn.on);		/* a set keeps on/off */
	CU_ASSERT_EQUAL(p.dcqcn.timer_us, 300);
	CU_ASSERT_NOT_EQUAL(fab_params_set(&p, "dcqcn.g=0", &d), 0);
	CU_ASSERT_NOT_EQUAL(fab_params_set(&p, "dcqcn.g=2", &d), 0);
	CU_ASSERT_NOT_EQUAL(fab_params_set(&p, "dcqcn.set=fast", &d), 0);
	CU_ASSERT_NOT_EQUAL(fab_params_set(&p, "dcqcn.nothing=1", &d), 0);
	tf_set(&p, "dcqcn.rai_mbps=100");
	tf_set(&p, "dcqcn.rhai_mbps=10");
	CU_ASSERT_NOT_EQUAL(fab_params_check(&p, &d), 0);
}


/* ---- on the RoCE fabric ------------------------------------------------------ */

/*
 * Senders h1..hn -> h0 through one switch; sender i starts at start[i].
 * Every `win` the sampler reads each sender's bytes sent (its HCA port:
 * one flow each) and the bottleneck's egress queue.
 */
#define MAXF 8
#define MAXS 4096

struct flows {
	int n;
	int port[MAXF];		/* fab port index of sender i's HCA */
	int bport;		/* the switch port towards h0 */
	int inport[MAXF];	/* the switch port facing sender i */
	uint64_t last[MAXF];
	double rate[MAXS][MAXF];	/* Gb/s in each window */
	uint32_t q[MAXS];	/* bottleneck egress queue at the sample, bytes */
	int ns;
	sim_time_t win;
};

static void sampler(struct fab *f, sim_time_t now, void *ctx)
{
	struct flows *fl = ctx;
	struct fab_sample s;

	(void)now;
	if (fl->ns >= MAXS)
		return;
	for (int i = 0; i < fl->n; i++) {
		fab_port_sample(f, fl->port[i], &s);
		fl->rate[fl->ns][i] = (double)(s.xmit_bytes - fl->last[i]) * 8 /
				      ((double)fl->win * 1e-12) / 1e9;
		fl->last[i] = s.xmit_bytes;
	}
	/* Everything queued at the switch is bound for h0: the cells its
	 * inputs hold (ingress accounting) are the bottleneck's queue. */
	fl->q[fl->ns] = 0;
	for (int i = 0; i < fl->n; i++) {
		fab_port_sample(f, fl->inport[i], &s);
		fl->q[fl->ns] += s.buf_bytes[0];
	}
	fl->ns++;
}

static double jain(const double *x, int n)
{
	double s = 0, s2 = 0;

	for (int i = 0; i < n; i++) {
		s += x[i];
		s2 += x[i] * x[i];
	}
	return s2 > 0 ? s * s / (n * s2) : 0;
}

struct roce_run {
	struct fab_totals tot;
	sim_time_t conv;	/* time after the last start until Jain >= 0.95 for good */
	double jain_end;	/* over the last stretch with every flow running */
	double share_min, share_max;	/* of the fair share, same stretch */
	uint32_t queue_high;	/* bottleneck egress queue high-water, bytes */
	double queue_avg;	/* its average over the samples with every flow running */
	double queue_late;	/* ... over the second half of those samples */
	double above_kmax;	/* share of those samples above Kmax */
	uint32_t kmin, kmax;
	double util;		/* bottleneck throughput / 40 Gb/s, same stretch */
	uint64_t cnp_prio_pkts;	/* packets the receiver sent on priority 7 */
};

static void star_run(int n, const sim_time_t *start, uint64_t bytes, const char *const *set,
		     struct roce_run *r)
{
	struct net net;
	struct fab_params p;
	struct fab_msgs m = { 0 };
	struct sim_diag d;
	int hosts[MAXF + 1];
	static struct flows fl;
	int rport = -1;

	tf_star(&net, n + 1, hosts);
	tf_params(&p, "fdr10");		/* 40 Gb/s: the paper's testbed */
	tf_set(&p, "fabric=roce");
	for (; set && *set; set++)
		tf_set(&p, *set);
	memset(&fl, 0, sizeof(fl));
	fl.n = n;
	fl.win = 100 * SIM_US;
	p.sample_ns = fl.win / SIM_NS;
	for (int i = 0; i < n; i++) {
		struct fab_msg msg = { .src = (uint32_t)hosts[i + 1], .dst = (uint32_t)hosts[0],
				       .bytes = bytes, .after = -1, .stream = (uint32_t)i,
				       .post = start[i] };

		CU_ASSERT_FATAL(fab_msgs_add(&m, &msg) == 0);
	}
	struct fab *f = fab_create(&net, &p, &m, 1, &d);

	CU_ASSERT_FATAL(f != NULL);
	for (int i = 0; i < fab_nports(f); i++) {
		const struct fab_port_info *pi = fab_port(f, i);

		for (int k = 0; k < n; k++) {
			if (pi->node == hosts[k + 1])
				fl.port[k] = i;
			if (pi->peer_node == hosts[k + 1])
				fl.inport[k] = i;
		}
		if (pi->peer_node == hosts[0])
			fl.bport = i;
		if (pi->node == hosts[0])
			rport = i;
	}
	/* numbers.md: Kmin 100 KB, Kmax 400 KB per 25 Gb/s unless given */
	r->kmin = p.eth.kmin ? p.eth.kmin : 100000 * 40 / 25;
	r->kmax = p.eth.kmax ? p.eth.kmax : 400000 * 40 / 25;
	fab_set_sampler(f, sampler, &fl);
	CU_ASSERT_FATAL(fab_run(f, &d) == 0);
	fab_totals(f, &r->tot);
	r->cnp_prio_pkts = fab_port(f, rport)->vl[7].xmit_pkts;
	r->queue_high = 0;
	for (int v = 0; v < 8; v++)	/* data on priority 0 (SL 0), CNPs on 7 */
		if (fab_port(f, fl.bport)->vl[v].queue_high > r->queue_high)
			r->queue_high = fab_port(f, fl.bport)->vl[v].queue_high;
	/* every flow running: from the last start to the first finish */
	sim_time_t last_start = 0, first_end = UINT64_MAX;

	for (int i = 0; i < n; i++) {
		if (start[i] > last_start)
			last_start = start[i];
		if (m.v[i].end < first_end)
			first_end = m.v[i].end;
	}
	int w0 = (int)(last_start / fl.win) + 1, w1 = (int)(first_end / fl.win) - 1;

	CU_ASSERT_FATAL(w1 > w0 + 4 && w1 <= fl.ns);
	r->conv = UINT64_MAX;
	for (int w = w1 - 1; w >= w0; w--) {
		if (jain(fl.rate[w], n) < 0.95)
			break;
		r->conv = (sim_time_t)(w + 1) * fl.win - last_start;
	}
	/* the last quarter of the stretch: shares and Jain over its average */
	double avg[MAXF] = { 0 }, tot = 0;
	int from = w1 - (w1 - w0) / 4;

	for (int w = from; w < w1; w++)
		for (int i = 0; i < n; i++)
			avg[i] += fl.rate[w][i] / (w1 - from);
	for (int i = 0; i < n; i++)
		tot += avg[i];
	r->jain_end = jain(avg, n);
	r->util = tot / 40;
	r->queue_avg = 0;
	r->queue_late = 0;
	r->above_kmax = 0;
	for (int w = w0; w < w1; w++) {
		r->queue_avg += (double)fl.q[w] / (w1 - w0);
		r->above_kmax += (fl.q[w] > r->kmax) / (double)(w1 - w0);
		if (w >= (w0 + w1) / 2)
			r->queue_late += (double)fl.q[w] / (w1 - (w0 + w1) / 2);
	}
	r->share_min = 1e9;
	r->share_max = 0;
	for (int i = 0; i < n; i++) {
		double s = avg[i] / (tot / n);

		r->share_min = s < r->share_min ? s : r->share_min;
		r->share_max = s > r->share_max ? s : r->share_max;
	}
	fab_destroy(f);
	fab_msgs_free(&m);
	net_free(&net);
}

/*
 * The fixed point of DCQCN's fluid model (Zhu et al., "ECN or Delay:
 * Lessons Learnt from Analysis of DCQCN and TIMELY", CoNEXT 2016, section
 * 3.2): the marking probability p* ~ cbrt(R_AI N^2 / (tau' C^2) (1/B +
 * N/(T C))^2), the queue q* = p* / Pmax (Kmax - Kmin) + Kmin, with C, R_AI
 * and B in packets (here 4 KiB of payload, 4182 bytes on the wire). Two
 * flows at the paper's values (40 Gb/s; timer T and tau' 55 us; B 10 MB;
 * switch Kmin 5 KB, Kmax 200 KB, Pmax 1%): q* = 80.4 KB. ibfab's queue
 * over the second half of the run averages within 10% of it. (From 4
 * flows on, the model's phase margin at the 50 us of the CNP interval is
 * negative, its Figure 3: there the queue oscillates between empty and
 * above Kmax and leaves the link idle 1-3% of the time, and no fixed point
 * is held.)
 */
static void test_fluid_fixed_point(void)
{
	static const char *const set[] = { "dcqcn.set=paper", "eth.kmin=5KB", "eth.kmax=200KB",
					   "eth.pmax=0.01", NULL };
	const sim_time_t start[2] = { 0, 0 };
	const double wire = 4096 + 86, n = 2, c = 40e9 / (8 * wire), rai = 40e6 / (8 * wire);
	const double b = 10e6 / 4096, t = 55e-6;
	double p = cbrt(rai * n * n / (t * c * c) * pow(1 / b + n / (t * c), 2));
	double q = p / 0.01 * (200000 - 5000) + 5000;
	struct roce_run r;

	star_run(2, start, 160u << 20, set, &r);
	fprintf(stderr, "\n  2 flows, paper values: fluid model p* %.3f%%, q* %.1f KB; "
			"queue over the second half %.1f KB, util %.3f\n", 100 * p, q / 1000,
			r.queue_late / 1000, r.util);
	CU_ASSERT_DOUBLE_EQUAL(q, 80400, 500);
	CU_ASSERT_DOUBLE_EQUAL(r.queue_late / q, 1, 0.10);
	CU_ASSERT(r.util > 0.98);
}

static void check_fair(int n, const char *const *set, const char *what)
{
	sim_time_t start[MAXF];
	struct roce_run r;
	uint64_t bytes = 60u << 20;	/* ~0.2 s in release, 3 s under ASan: no quick case */

	for (int i = 0; i < n; i++)
		start[i] = (sim_time_t)i * 500 * SIM_US;
	star_run(n, start, bytes, set, &r);
	fprintf(stderr, "\n  %d flows (%s): Jain >= 0.95 from %.2f ms after the last start, "
		"Jain %.3f at the end (shares %.2f..%.2f of fair);\n    util %.2f, queue avg %.0f KB "
		"(Kmin %u KB, Kmax %u KB, above Kmax %.0f%%), high %u KB; "
		"%llu CE marks, %llu CNPs, %llu pauses, %llu drops\n",
		n, what, r.conv == UINT64_MAX ? -1.0 : (double)r.conv * 1e-9, r.jain_end,
		r.share_min, r.share_max, r.util, r.queue_avg / 1000, r.kmin / 1000, r.kmax / 1000,
		100 * r.above_kmax, r.queue_high / 1000,
		(unsigned long long)r.tot.ecn_marks, (unsigned long long)r.tot.cnps,
		(unsigned long long)r.tot.pause_frames, (unsigned long long)r.tot.drops);
	CU_ASSERT(r.tot.ecn_marks > 0);
	CU_ASSERT(r.tot.cnps > 0);
	/* every CNP left the receiver on the CNP priority, nothing else did */
	CU_ASSERT_EQUAL(r.cnp_prio_pkts, r.tot.cnps);
	CU_ASSERT(r.jain_end >= 0.95);
	/* the paper's figures run for tens of ms; both sets settle within 25 */
	CU_ASSERT(r.conv <= 25 * SIM_MS);
	CU_ASSERT(r.util > 0.9);
	/* the queue lives around the marking thresholds */
	CU_ASSERT(r.queue_avg > 0.25 * r.kmin && r.queue_avg < r.kmax);
	CU_ASSERT(r.above_kmax < 0.1);
	CU_ASSERT_EQUAL(r.tot.drops, 0);
}

static void test_fair_2(void)
{
	static const char *const paper[] = { "dcqcn.set=paper", NULL };
	static const char *const off[] = { "dcqcn.on=0", NULL };
	sim_time_t start[2] = { 0, 500 * SIM_US };
	struct roce_run with, pfc;

	check_fair(2, NULL, "nic set");
	check_fair(2, paper, "paper set");
	/* PFC alone shares the link too, but by pausing: the queue sits at
	 * the XOFF thresholds of both inputs, not near Kmin */
	star_run(2, start, 60u << 20, NULL, &with);
	star_run(2, start, 60u << 20, off, &pfc);
	fprintf(stderr, "  2 flows, PFC only: queue avg %.0f KB, %llu pauses; with DCQCN %.0f KB, "
		"%llu pauses\n", pfc.queue_avg / 1000, (unsigned long long)pfc.tot.pause_frames,
		with.queue_avg / 1000, (unsigned long long)with.tot.pause_frames);
	CU_ASSERT_EQUAL(pfc.tot.cnps, 0);
	CU_ASSERT(with.queue_avg < 0.5 * pfc.queue_avg);
	CU_ASSERT(with.tot.pause_frames < pfc.tot.pause_frames);
}

static void test_fair_4(void)
{
	static const char *const paper[] = { "dcqcn.set=paper", NULL };

	check_fair(4, NULL, "nic set");
	check_fair(4, paper, "paper set");
}

/*
 * The PFC victim (congestion spreading): sw0 holds S1 and V, sw1 holds
 * the incast receiver H, W, and S2..S4. S1..S4 -> H is a 4-to-1 incast;
 * V -> W shares only the sw0 -> sw1 link with S1, not the congested port.
 * With PFC alone, sw1's input from sw0 fills and pauses that link: V is
 * paused with S1 and gets S1's share of H. With DCQCN the incast senders
 * slow to their fair share before the pauses start, and V takes the
 * rest of the shared link.
 */
static void victim_run(const char *const *set, double *victim_gbps, struct fab_totals *tot)
{
	struct net n;
	struct fab_params p;
	struct fab_msgs m = { 0 };
	int s[4], v, h, w;
	uint64_t hot = 24u << 20, vbytes = 8u << 20;

	tf_victim(&n, s, &v, &h, &w);
	tf_params(&p, "fdr10");
	tf_set(&p, "fabric=roce");
	for (; set && *set; set++)
		tf_set(&p, *set);
	for (int i = 0; i < 4; i++)
		tf_add_msg(&m, s[i], h, hot, (uint32_t)i, 0);
	/* the victim starts once the incast has settled */
	struct fab_msg vm = { .src = (uint32_t)v, .dst = (uint32_t)w, .bytes = vbytes,
			      .after = -1, .stream = 4, .post = 3 * SIM_MS };

	CU_ASSERT_FATAL(fab_msgs_add(&m, &vm) == 0);
	struct fab *f = tf_run(&n, &p, &m);
	sim_time_t hot_end = 0;

	for (int i = 0; i < 4; i++)
		hot_end = m.v[i].end > hot_end ? m.v[i].end : hot_end;
	CU_ASSERT(m.v[4].end < hot_end);	/* it ran inside the incast */
	*victim_gbps = (double)vbytes * 8 / ((double)(m.v[4].end - m.v[4].start) * 1e-12) / 1e9;
	fab_totals(f, tot);
	fab_destroy(f);
	fab_msgs_free(&m);
	net_free(&n);
}

static void test_pfc_victim(void)
{
	static const char *const off[] = { "dcqcn.on=0", NULL };
	static const char *const paper[] = { "dcqcn.set=paper", NULL };
	double alone, pfc, nic, pap;
	struct fab_totals t_pfc, t_nic, t_pap;

	victim_run(off, &pfc, &t_pfc);
	victim_run(NULL, &nic, &t_nic);
	victim_run(paper, &pap, &t_pap);
	alone = 40.0;
	fprintf(stderr, "\n  PFC victim at 40 Gb/s: %.1f Gb/s under PFC alone (%llu pauses), "
		"%.1f with DCQCN nic set (%llu pauses), %.1f with the paper set (%llu pauses)\n",
		pfc, (unsigned long long)t_pfc.pause_frames, nic,
		(unsigned long long)t_nic.pause_frames, pap, (unsigned long long)t_pap.pause_frames);
	CU_ASSERT(t_pfc.pause_frames > 0);
	CU_ASSERT_EQUAL(t_pfc.drops + t_nic.drops + t_pap.drops, 0);
	/* under PFC the victim falls to about S1's share of H (1/4) ... */
	CU_ASSERT(pfc < 0.4 * alone);
	/* ... and recovers with DCQCN (S1 at 1/4, the victim up to 3/4) */
	CU_ASSERT(nic > 1.5 * pfc);
	CU_ASSERT(pap > 1.5 * pfc);
}

static const struct test_case tests[] = {
	{ "RP: the paper's equations, hand-computed trace", test_rp_paper_trace },
	{ "RP: NIC set, merged decreases, F=1 stages", test_rp_nic_merge },
	{ "RP: the rate floor", test_rp_floor },
	{ "NP: one CNP per interval", test_np_interval },
	{ "dcqcn keys and sets", test_keys },
	{ "roce: two flows converge to a fair share", test_fair_2 },
	{ "roce: four flows converge to a fair share", test_fair_4 },
	{ "roce: the PFC victim recovers with DCQCN", test_pfc_victim },
	{ "roce: 2 flows hold the fluid model's fixed point (CoNEXT 2016)", test_fluid_fixed_point },
	{ NULL, NULL },
};

TEST_MAIN("dcqcn", tests)
