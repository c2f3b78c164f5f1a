/* SPDX-License-Identifier: MIT */
/*
 * dcqcn.c - DCQCN's reaction point (RP) as a pure state machine, and the
 * parameters of DCQCN (Zhu et al., "Congestion Control for Large-Scale
 * RDMA Deployments", SIGCOMM 2015, section 3).
 *
 * The RP, per QP, keeps a current rate Rc (what the requester is paced
 * at), a target rate Rt and the rate-reduction factor alpha:
 *  - rate decrease, on a CNP (at most one per dec_us; CNPs in between are
 *    merged into one decrease at the end of the interval, as ConnectX's
 *    rate_reduce_monitor_period does):  Rt = Rc, Rc = Rc (1 - alpha/2),
 *    alpha = (1 - g) alpha + g; both increase counters restart. With
 *    dcqcn.clamp off (ConnectX's clamp_tgt_rate = 0, the NIC set), Rt = Rc
 *    only if a rate increase happened since the previous decrease: cuts in
 *    a row keep the target, so fast recovery climbs back to it;
 *  - alpha decay: K (alpha_us) after the last decrease or decay without a
 *    new decrease, alpha = (1 - g) alpha;
 *  - rate increase events come from a timer (every T = timer_us since the
 *    last decrease) and from a byte counter (every B bytes sent; B = 0
 *    turns it off). With Ts and Bs the number of timer and byte-counter
 *    events since the last decrease, counted before this one (with the
 *    byte counter off, Bs = Ts):
 *      max(Ts, Bs) < F    fast recovery:    Rc = (Rt + Rc) / 2
 *      min(Ts, Bs) > F    hyper increase:   Rt += R_HAI, Rc = (Rt + Rc) / 2
 *      otherwise          additive increase: Rt += R_AI, Rc = (Rt + Rc) / 2
 *    so F events of fast recovery follow a decrease, then additive, then
 *    hyper increase once both counters are past F (with one counter: one
 *    additive step at F, the rule of HPCC's ns-3 model). Rates are capped
 *    at the line rate and Rc is kept >= min_rate; the increase timer stops
 *    once Rc and Rt are back at the line rate.
 * alpha starts at 1, so the first CNP halves the rate (as the paper).
 *
 * Timers run lazily: dcqcn_rp_advance() applies every timer event due by
 * `now` in time order (alpha decays between two other events in closed
 * form), so no engine event is needed per QP and the machine is exact
 * whatever the spacing of the calls. The HCA calls it at each CNP and each
 * packet sent (models/cc/cc.c); the rate a packet is paced at is the Rc
 * at the time it is sent.
 *
 * Left out: the NIC's rate_to_set_on_first_cnp and clamp_tgt_rate knobs
 * (the paper's rule, Rt = Rc at every decrease, is used), and the
 * per-priority (rather than per-QP) RP of some NIC firmware.
 */
#include "models/roce/dcqcn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim/sim_param.h"
#include "sim/sim_parse.h"

const char *const dcqcn_set_names[] = {
	[DCQCN_SET_NIC] = "nic", [DCQCN_SET_PAPER] = "paper", NULL
};
const char *const dcqcn_stage_names[] = {
	[DCQCN_NONE] = "none", [DCQCN_FAST_RECOVERY] = "fast recovery",
	[DCQCN_ADDITIVE] = "additive increase", [DCQCN_HYPER] = "hyper increase",
};

/* ---- parameters ----------------------------------------------------------- */

/*
 * The two shipped sets (docs/congestion-control.md has the sources):
 *  nic:   g = 1/256, alpha timer 1 us, rate decrease period 4 us, rate
 *         increase timer 300 us, F = 1, no byte counter, R_AI = 5 Mb/s and
 *         R_HAI = 50 Mb/s per 25 Gb/s of line rate, min rate 1 Gb/s: the
 *         "Mellanox" set of HPCC's ns-3 scripts (reference/numbers.md).
 *         CNP interval 4 us: one CNP per rate-decrease period, so the RP's
 *         period, not the NP, limits how often a flow is cut. Target rate
 *         not clamped at back-to-back cuts (HPCC's CLAMP_TARGET_RATE 0).
 *  paper: g = 1/256, CNP interval N = 50 us, alpha update interval 55 us
 *         (section 5.2: "We have chosen the alpha update interval and
 *         minimum timer value to be 55us", larger than the CNP interval),
 *         increase timer 55 us, rate decrease at most every 50 us (the
 *         paper names no such limit; CNPs come 50 us apart anyway), F = 5,
 *         B = 10 MB, R_AI = 40 Mb/s at 40 Gb/s (1 Mb/s per Gb/s), R_HAI
 *         10 x R_AI (HPCC's ratio), min rate 1 Gb/s; Rt = Rc at every
 *         decrease, as the paper's equation.
 */
void dcqcn_params_set_named(struct dcqcn_params *p, enum dcqcn_set s)
{
	bool on = p->on;

	memset(p, 0, sizeof(*p));
	p->on = on;
	p->set = (uint8_t)s;
	p->g = 1.0 / 256;
	p->min_rate_mbps = 1000;
	if (s == DCQCN_SET_PAPER) {
		p->alpha_us = 55;
		p->dec_us = 50;
		p->timer_us = 55;
		p->cnp_interval_us = 50;
		p->f = 5;
		p->byte_counter = 10u * 1000 * 1000;
		p->clamp = true;
	} else {
		p->alpha_us = 1;
		p->dec_us = 4;
		p->timer_us = 300;
		p->cnp_interval_us = 4;
		p->f = 1;
		p->byte_counter = 0;
	}
}

void dcqcn_params_default(struct dcqcn_params *p)
{
	p->on = true;
	dcqcn_params_set_named(p, DCQCN_SET_NIC);
}

void dcqcn_cfg_resolve(struct dcqcn_cfg *c, const struct dcqcn_params *p, double line_bps)
{
	/* Increase steps per Gb/s of line rate when not given. */
	double ai_per_gbps = p->set == DCQCN_SET_PAPER ? 1e6 : 5e6 / 25;
	double gbps = line_bps / 1e9;

	memset(c, 0, sizeof(*c));
	c->g = p->g;
	c->line_bps = line_bps;
	c->rai_bps = p->rai_mbps ? p->rai_mbps * 1e6 : ai_per_gbps * gbps;
	c->rhai_bps = p->rhai_mbps ? p->rhai_mbps * 1e6 : 10 * ai_per_gbps * gbps;
	c->min_bps = p->min_rate_mbps * 1e6;
	if (c->min_bps > line_bps)
		c->min_bps = line_bps;
	c->byte_counter = p->byte_counter;
	c->timer = (sim_time_t)p->timer_us * SIM_US;
	c->alpha_period = (sim_time_t)p->alpha_us * SIM_US;
	c->dec_period = (sim_time_t)p->dec_us * SIM_US;
	c->cnp_interval = (sim_time_t)p->cnp_interval_us * SIM_US;
	c->f = p->f;
	c->clamp = p->clamp;
}

static int parse_g(const char *v, double *out, char *err, size_t errlen)
{
	const char *slash = strchr(v, '/');
	double x;

	if (slash) {
		char num[32];
		double a, b;

		snprintf(num, sizeof(num), "%.*s", (int)(slash - v), v);
		if (sim_parse_double(num, &a, err, errlen) ||
		    sim_parse_double(slash + 1, &b, err, errlen))
			return -1;
		if (b == 0) {
			snprintf(err, errlen, "division by zero in '%s'", v);
			return -1;
		}
		x = a / b;
	} else if (sim_parse_double(v, &x, err, errlen)) {
		return -1;
	}
	if (!(x > 0 && x <= 1)) {
		snprintf(err, errlen, "expected a gain in (0, 1] such as 1/256, got '%s'", v);
		return -1;
	}
	*out = x;
	return 0;
}

static int set_set(void *obj, const struct sim_param *k, const char *v, char *err,
		   size_t errlen)
{
	char names[64];

	(void)k;
	for (int i = 0; dcqcn_set_names[i]; i++)
		if (!strcasecmp(v, dcqcn_set_names[i])) {
			dcqcn_params_set_named(obj, (enum dcqcn_set)i);
			return 0;
		}
	snprintf(err, errlen, "expected %s, got '%s'",
		 sim_fmt_names(dcqcn_set_names, -1, names, sizeof(names)), v);
	return -1;
}

static void print_set(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	(void)k;
	snprintf(buf, len, "%s", dcqcn_set_names[((const struct dcqcn_params *)obj)->set]);
}

static int set_g(void *obj, const struct sim_param *k, const char *v, char *err, size_t errlen)
{
	(void)k;
	return parse_g(v, &((struct dcqcn_params *)obj)->g, err, errlen);
}

static void print_g(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	(void)k;
	snprintf(buf, len, "%g", ((const struct dcqcn_params *)obj)->g);
}

#define F(f) SIM_PARAM_FIELD(struct dcqcn_params, f)
#define U(n, f, lo, hi, m) { "dcqcn." n, SIM_PARAM_UINT, F(f), lo, hi, NULL, NULL, NULL, m }

/* dcqcn.* keys, rows of the parameter schema (sim/sim_param.h), in print order. */
const struct sim_param dcqcn_param_keys[] = {
	{ "dcqcn.on", SIM_PARAM_BOOL, F(on), 0, 1, NULL, NULL, NULL,
	  "DCQCN on the RoCE fabrics (roce, roce-lossy)" },
	{ "dcqcn.set", SIM_PARAM_SPECIAL, 0, 0, 0, 0, set_set, print_set, NULL,
	  "parameter set loaded: nic (ConnectX timers) or paper (Zhu et al. 2015)" },
	{ "dcqcn.g", SIM_PARAM_SPECIAL, 0, 0, 0, 0, set_g, print_g, NULL, "alpha gain g (1/256)" },
	U("rai_mbps", rai_mbps, 0, 1000000,
	  "additive increase R_AI, Mb/s (0 = the set's rule x line rate)"),
	U("rhai_mbps", rhai_mbps, 0, 1000000, "hyper increase R_HAI, Mb/s (0 = 10 x R_AI's rule)"),
	U("min_rate_mbps", min_rate_mbps, 1, 1000000, "lowest current rate, Mb/s"),
	{ "dcqcn.byte_counter", SIM_PARAM_SIZE, F(byte_counter), 0, UINT32_MAX, NULL,
	  sim_param_print_number, NULL, "B: bytes sent per increase event (0 = timer only)" },
	U("timer_us", timer_us, 1, 10000000, "T: rate increase timer, us"),
	U("alpha_us", alpha_us, 1, 10000000, "K: alpha decays after this long without a decrease, us"),
	U("dec_us", dec_us, 0, 10000000, "at most one rate decrease per interval, us"),
	U("cnp_interval_us", cnp_interval_us, 0, 10000000,
	  "N: at most one CNP per QP per interval (notification point), us"),
	U("f", f, 0, 255, "F: fast recovery steps after a decrease"),
	{ "dcqcn.clamp", SIM_PARAM_BOOL, F(clamp), 0, 1, NULL, NULL, NULL,
	  "Rt = Rc at every decrease (off: only after a rate increase)" },
	{ NULL },
};

#undef F
#undef U

int dcqcn_params_check(const struct dcqcn_params *p, char *err, size_t errlen)
{
	if (p->rhai_mbps && p->rai_mbps && p->rhai_mbps < p->rai_mbps) {
		snprintf(err, errlen, "dcqcn.rhai_mbps (%u) is below dcqcn.rai_mbps (%u)",
			 p->rhai_mbps, p->rai_mbps);
		return -1;
	}
	return 0;
}

/* ---- the reaction point ---------------------------------------------------- */

void dcqcn_rp_init(struct dcqcn_rp *rp, const struct dcqcn_cfg *c)
{
	memset(rp, 0, sizeof(*rp));
	rp->rc = rp->rt = c->line_bps;
	rp->alpha = 1.0;
}

static void clamp(struct dcqcn_rp *rp, const struct dcqcn_cfg *c)
{
	if (rp->rt > c->line_bps)
		rp->rt = c->line_bps;
	if (rp->rc > c->line_bps)
		rp->rc = c->line_bps;
	if (rp->rc < c->min_bps)
		rp->rc = c->min_bps;
}

static void decrease(struct dcqcn_rp *rp, const struct dcqcn_cfg *c, sim_time_t t)
{
	if (c->clamp || rp->t_stage || rp->bc_stage)
		rp->rt = rp->rc;
	rp->rc = rp->rc * (1 - rp->alpha / 2);
	rp->alpha = (1 - c->g) * rp->alpha + c->g;
	clamp(rp, c);
	rp->t_stage = rp->bc_stage = 0;
	rp->bytes = 0;
	rp->next_inc = t + c->timer;
	rp->next_alpha = t + c->alpha_period;
	rp->next_dec = 0;
	rp->last_dec = t;
	rp->decreased = true;
	rp->decreases++;
}

/* One rate increase event; `timer` tells which counter it came from. */
static void increase(struct dcqcn_rp *rp, const struct dcqcn_cfg *c, bool timer)
{
	uint32_t ts = rp->t_stage, bs = c->byte_counter ? rp->bc_stage : rp->t_stage;
	uint32_t mx = ts > bs ? ts : bs, mn = ts < bs ? ts : bs;

	if (mx < c->f) {
		rp->last = DCQCN_FAST_RECOVERY;
		rp->fast_recoveries++;
	} else if (mn > c->f) {
		rp->rt += c->rhai_bps;
		rp->last = DCQCN_HYPER;
		rp->hyper++;
	} else {
		rp->rt += c->rai_bps;
		rp->last = DCQCN_ADDITIVE;
		rp->additive++;
	}
	if (rp->rt > c->line_bps)
		rp->rt = c->line_bps;
	rp->rc = (rp->rt + rp->rc) / 2;
	clamp(rp, c);
	if (timer)
		rp->t_stage++;
	else
		rp->bc_stage++;
}

static bool at_line(const struct dcqcn_rp *rp, const struct dcqcn_cfg *c)
{
	return rp->rc >= c->line_bps && rp->rt >= c->line_bps;
}

/* Alpha decays due at times <= t, in closed form. */
static void alpha_upto(struct dcqcn_rp *rp, const struct dcqcn_cfg *c, sim_time_t t)
{
	uint64_t n;

	if (!rp->next_alpha || rp->next_alpha > t || !c->alpha_period)
		return;
	n = (t - rp->next_alpha) / c->alpha_period + 1;
	rp->alpha *= pow(1 - c->g, (double)n);
	rp->next_alpha += n * c->alpha_period;
}

void dcqcn_rp_advance(struct dcqcn_rp *rp, const struct dcqcn_cfg *c, sim_time_t now)
{
	for (;;) {
		/* the next decrease or increase event due by now */
		sim_time_t t = 0;
		bool dec = false;

		if (rp->next_dec && rp->next_dec <= now) {
			t = rp->next_dec;
			dec = true;
		}
		if (rp->next_inc && rp->next_inc <= now && (!t || rp->next_inc < t)) {
			t = rp->next_inc;
			dec = false;
		}
		if (!t)
			break;
		alpha_upto(rp, c, t);
		if (dec) {
			decrease(rp, c, t);
			continue;
		}
		increase(rp, c, true);
		rp->next_inc = at_line(rp, c) ? 0 : t + c->timer;
	}
	alpha_upto(rp, c, now);
}

void dcqcn_rp_cnp(struct dcqcn_rp *rp, const struct dcqcn_cfg *c, sim_time_t now)
{
	dcqcn_rp_advance(rp, c, now);
	rp->cnps++;
	if (!rp->decreased || now - rp->last_dec >= c->dec_period) {
		decrease(rp, c, now);
		return;
	}
	/* Within the decrease period: one decrease at its end for all CNPs. */
	if (!rp->next_dec)
		rp->next_dec = rp->last_dec + c->dec_period;
}

void dcqcn_rp_sent(struct dcqcn_rp *rp, const struct dcqcn_cfg *c, sim_time_t now,
		   uint64_t bytes)
{
	dcqcn_rp_advance(rp, c, now);
	if (!c->byte_counter || !rp->decreased)
		return;
	rp->bytes += bytes;
	while (rp->bytes >= c->byte_counter) {
		rp->bytes -= c->byte_counter;
		if (at_line(rp, c)) {
			rp->bytes = 0;
			break;
		}
		increase(rp, c, false);
		if (at_line(rp, c))
			rp->next_inc = 0;
	}
}
