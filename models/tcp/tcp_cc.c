/* SPDX-License-Identifier: MIT */
/*
 * tcp_cc.c - TCP congestion control as pure state machines, and the
 * retransmission-timeout estimator. The connection (tcp_conn.c) feeds them
 * events - bytes newly acknowledged, ECN echoes, a loss found by duplicate
 * ACKs, a timeout - and reads cwnd and ssthresh back.
 *
 * Slow start and congestion avoidance (RFC 5681 3.1), counted in bytes as
 * Linux and RFC 3465 do: in slow start cwnd grows by the bytes each ACK
 * acknowledges (a delayed ACK covering two segments adds two), so cwnd
 * doubles per round trip; above ssthresh it grows by mss x acked / cwnd,
 * one segment per window. A loss sets ssthresh = max(FlightSize / 2,
 * 2 mss) (RFC 5681 eq. 4); fast recovery's inflation and deflation
 * (RFC 6582) live in the connection, which owns the sequence space.
 *
 * CUBIC (RFC 8312, now RFC 9438): after a reduction the window follows
 * W(t) = C (t - K)^3 + W_max, C = 0.4 segments/s^3, K = cbrt(W_max (1 -
 * beta) / C), beta = 0.7, with t the time since the epoch began (the first
 * ACK after the reduction) plus one RTT (the target one round trip ahead),
 * never below the Reno-friendly estimate W_est = W_max beta + 3 (1 - beta)
 * / (1 + beta) t / RTT (RFC 8312 4.2), and with fast convergence (4.6).
 * Linux's form of K (from the window at the epoch's start) is used, so a
 * flow that left slow start without a loss starts a plateau where it is.
 * Growth per ACK is capped at half the segments acknowledged (Linux: at
 * most 1.5x per round trip). HyStart is left out.
 *
 * DCTCP (RFC 8257): alpha <- (1 - g) alpha + g F once per window of data,
 * F the fraction of acknowledged bytes whose ACKs echoed CE; on the first
 * ECE of a window cwnd <- cwnd (1 - alpha / 2). alpha starts at 1 (as
 * Linux's dctcp_alpha_on_init default does: the first marks halve the
 * window). Growth and loss response are Reno's. NewReno and CUBIC treat an
 * ECE as a loss, once per window (RFC 3168 6.1.2), without retransmitting.
 *
 * RTO (RFC 6298): the first sample R sets SRTT = R, RTTVAR = R / 2; later
 * ones RTTVAR = 3/4 RTTVAR + 1/4 |SRTT - R|, SRTT = 7/8 SRTT + 1/8 R; RTO =
 * SRTT + 4 RTTVAR, at least tcp.min_rto_us (Linux: 200 ms; the RFC says
 * 1 s) and at most tcp.max_rto_us. The clock granularity G is the
 * simulator's (1 ps), so it never matters. Linux differs slightly: it
 * floors the variance term at rto_min rather than the sum, RTO >= SRTT +
 * 200 ms; with datacenter RTTs of microseconds the two agree to 0.01%.
 */
#include "models/tcp/tcp.h"

#include <math.h>
#include <strings.h>

const char *const tcp_cc_names[] = {
	[TCP_CC_NEWRENO] = "newreno", [TCP_CC_CUBIC] = "cubic", [TCP_CC_DCTCP] = "dctcp",
};

int tcp_cc_parse(const char *name)
{
	for (int i = 0; i < TCP_CC_COUNT; i++)
		if (!strcasecmp(name, tcp_cc_names[i]))
			return i;
	if (!strcasecmp(name, "reno"))
		return TCP_CC_NEWRENO;
	return -1;
}

void tcp_cc_init(struct tcp_cc *cc, uint8_t algo, uint32_t mss, uint32_t init_cwnd, double g)
{
	*cc = (struct tcp_cc){ .algo = algo, .mss = mss };
	cc->cwnd = (double)init_cwnd * mss;
	cc->ssthresh = 1e300;		/* "arbitrarily high" (RFC 5681 3.1) */
	cc->alpha = 1.0;
	cc->g = g > 0 ? g : 1.0 / 16;
}

static double secs(sim_time_t ps)
{
	return (double)ps * 1e-12;
}

double tcp_cubic_w(const struct tcp_cc *cc, double t)
{
	double d = t - cc->k_s;

	return TCP_CUBIC_C * d * d * d + cc->origin;
}

static void cubic_ca(struct tcp_cc *cc, uint64_t acked, sim_time_t now, sim_time_t srtt)
{
	double mss = cc->mss, w = cc->cwnd / mss, segs = (double)acked / mss;
	double t, target, rtt = srtt ? secs(srtt) : 0;

	if (!cc->epoch) {
		cc->epoch = now ? now : 1;
		if (w < cc->w_max) {
			cc->k_s = cbrt((cc->w_max - w) / TCP_CUBIC_C);
			cc->origin = cc->w_max;
		} else {
			cc->k_s = 0;
			cc->origin = w;
		}
		cc->w_est = w;
	}
	t = secs(now - cc->epoch) + rtt;
	target = tcp_cubic_w(cc, t);
	/* Reno-friendly region (RFC 8312 4.2), advanced per ACK as Linux does */
	if (w > 0)
		cc->w_est += 3.0 * (1 - TCP_CUBIC_BETA) / (1 + TCP_CUBIC_BETA) * segs / w;
	if (target < cc->w_est)
		target = cc->w_est;
	if (target > w) {
		double inc = (target - w) / w * segs;

		if (inc > segs / 2)
			inc = segs / 2;
		w += inc;
	} else {
		w += 0.01 * segs / w;	/* plateau: creep (Linux: cnt = 100 cwnd) */
	}
	cc->cwnd = w * mss;
}

void tcp_cc_on_ack(struct tcp_cc *cc, uint64_t acked, sim_time_t now, sim_time_t srtt)
{
	double mss = cc->mss;

	if (!acked)
		return;
	if (cc->cwnd < cc->ssthresh) {
		/* slow start: up to ssthresh, the rest goes to avoidance */
		double room = cc->ssthresh - cc->cwnd;

		if ((double)acked <= room) {
			cc->cwnd += (double)acked;
			return;
		}
		cc->cwnd = cc->ssthresh;
		acked -= (uint64_t)room;
		if (!acked)
			return;
	}
	if (cc->algo == TCP_CC_CUBIC) {
		cubic_ca(cc, acked, now, srtt);
		return;
	}
	cc->cwnd += mss * (double)acked / cc->cwnd;
}

/* The reduction on a congestion signal: ssthresh (and CUBIC's W_max). */
static void reduce(struct tcp_cc *cc, uint64_t flight, sim_time_t now)
{
	double mss = cc->mss;

	(void)now;
	if (cc->algo == TCP_CC_CUBIC) {
		double w = cc->cwnd / mss;

		/* fast convergence (RFC 8312 4.6) */
		if (w < cc->w_last_max)
			cc->w_last_max = w, cc->w_max = w * (1 + TCP_CUBIC_BETA) / 2;
		else
			cc->w_last_max = cc->w_max = w;
		cc->ssthresh = cc->cwnd * TCP_CUBIC_BETA;
		cc->epoch = 0;
	} else {
		cc->ssthresh = (double)flight / 2;
	}
	if (cc->ssthresh < 2 * mss)
		cc->ssthresh = 2 * mss;
}

void tcp_cc_on_loss(struct tcp_cc *cc, uint64_t flight, sim_time_t now)
{
	reduce(cc, flight, now);
	cc->cwnd = cc->ssthresh;
}

void tcp_cc_on_timeout(struct tcp_cc *cc, uint64_t flight, sim_time_t now)
{
	reduce(cc, flight, now);
	cc->cwnd = cc->mss;	/* loss window: one segment */
}

bool tcp_cc_on_ecn(struct tcp_cc *cc, uint64_t acked, bool ece, uint64_t una, uint64_t snd_max,
		   sim_time_t now)
{
	bool cut = false;

	if (cc->algo == TCP_CC_DCTCP) {
		cc->dc_acked += acked;
		if (ece)
			cc->dc_marked += acked;
		if (una >= cc->dc_next) {
			/* one window of data observed: update alpha (RFC 8257 3.3) */
			double f = cc->dc_acked ? (double)cc->dc_marked / (double)cc->dc_acked : 0;

			cc->alpha = (1 - cc->g) * cc->alpha + cc->g * f;
			cc->dc_acked = cc->dc_marked = 0;
			cc->dc_next = snd_max;
		}
		if (ece && una >= cc->ecn_hold) {
			cc->cwnd *= 1 - cc->alpha / 2;
			if (cc->cwnd < 2.0 * cc->mss)
				cc->cwnd = 2.0 * cc->mss;
			cc->ssthresh = cc->cwnd;
			cc->ecn_hold = snd_max;
			cut = true;
		}
		return cut;
	}
	if (ece && una >= cc->ecn_hold) {
		/* RFC 3168 6.1.2: as a loss, once per window, no retransmission */
		reduce(cc, (uint64_t)cc->cwnd, now);
		cc->cwnd = cc->ssthresh;
		cc->ecn_hold = snd_max;
		cut = true;
	}
	return cut;
}

/* ---- RTO ----------------------------------------------------------------- */

void tcp_rtt_init(struct tcp_rtt *r, sim_time_t min_rto)
{
	/*
	 * No handshake is simulated: the connection is set up before the run,
	 * and its SYN exchange would have given an RTT sample of a few
	 * microseconds, so the first RTO is the floor rather than RFC 6298's
	 * 1 s for a connection without any sample.
	 */
	*r = (struct tcp_rtt){ .rto = min_rto };
}

void tcp_rtt_sample(struct tcp_rtt *r, sim_time_t rtt, sim_time_t min_rto, sim_time_t max_rto)
{
	sim_time_t rto;

	if (!r->valid) {
		r->srtt = rtt;
		r->rttvar = rtt / 2;
		r->valid = true;
	} else {
		sim_time_t d = r->srtt > rtt ? r->srtt - rtt : rtt - r->srtt;

		r->rttvar = (3 * r->rttvar + d) / 4;
		r->srtt = (7 * r->srtt + rtt) / 8;
	}
	rto = r->srtt + 4 * r->rttvar;
	if (rto < min_rto)
		rto = min_rto;
	if (max_rto && rto > max_rto)
		rto = max_rto;
	r->rto = rto;
}
