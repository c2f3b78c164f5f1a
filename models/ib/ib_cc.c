/* SPDX-License-Identifier: MIT */
/*
 * ib_cc.c - InfiniBand congestion control (IBA vol. 1 Annex A10).
 *
 * Switch (SwitchCongestionSetting; models/switch/sw_ibcc.c marks, this
 * file holds the parameters): an output port marks FECN in the BTH
 * of packets it sends while it is congested. The annex leaves the
 * congestion test to the switch; this switch is input-buffered, so there
 * is no output queue to measure. We count, per output and VL, the bytes
 * of every packet queued at any input of the switch for that output (what
 * an output-queued switch would hold in its output queue: packets are
 * counted from their LFT lookup until the output starts sending them) and
 * compare them with a threshold. We chose this over "time the output sat
 * blocked for credits" because that time measures the congestion of the
 * next hop, not of this output: it is high at the victims of a congestion
 * tree and zero at its root, where the annex wants the marking. The annex's
 * root/victim distinction is kept: an output that waited for credits on
 * that VL since its previous packet is a victim and does not mark unless
 * ib.cc.victim_mark is set (the annex's Victim_Mask). Threshold is the
 * annex's 4-bit value: 0 never marks, 1..15 mark above (16 - t)/16 of a
 * VL receive buffer (ib.buffer), so 15 is the most aggressive. Of the
 * eligible packets (congested, at least Packet_Size x 64 bytes: ACKs and
 * CNs are not), one is marked and then Marking_Rate are passed over.
 *
 * CA (CACongestionSetting, CongestionControlTable), QP-based: the
 * destination answers a packet carrying FECN with a BECN in a congestion
 * notification packet to the source QP (models/cc/cc.c; one waits at a
 * time per QP). The source raises its CCT index by CCTI_Increase per BECN,
 * up to CCTI_Limit; every CCTI_Timer the index falls by one, down to
 * CCTI_Min. The requester waits CCT[CCTI] after each request packet
 * before the next one of that QP may start (the injection rate delay).
 * A CCT entry is CCT_Multiplier << CCT_Shift in units of the time the
 * port takes to send 64 bytes (a credit block): the annex's table holds
 * a delay and we chose a rate-relative unit so that one table suits every
 * link speed. The shipped table is quadratic, entry i = i^2 / 2 (entry 20
 * = 200 blocks: three 4 KiB packets' time, a quarter of the link for one
 * flow; entry 127 = 8064 blocks, under 1%), the shape of the tables public
 * OpenSM configurations use. The timer is lazy: it runs only while the
 * index is above CCTI_Min and is evaluated when the QP next sends or gets
 * a BECN. Its period scales with the link like the table does unless it
 * is set (ibcc_timer_ps): a fixed period suits one link rate only, as
 * the marks a flow gets come per packet.
 *
 * Left out: SL-based CC (the index per SL and port instead of per QP),
 * credit-starvation marking (CS_Threshold), the congestion logs, the
 * Trigger_Threshold event, and the CC MADs themselves (parameters are set
 * with --set, the same for every switch and CA).
 */
#include "models/ib/ib_cc.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "models/core/fab_core.h"
#include "models/ib/ib_pkt.h"
#include "sim/sim_param.h"
#include "sim/sim_parse.h"

/* ---- parameters ------------------------------------------------------------ */

static void default_cct(struct ibcc_params *p)
{
	p->cct_len = IBCC_CCT_MAX;
	for (int i = 0; i < IBCC_CCT_MAX; i++)
		p->cct[i] = (uint16_t)(i * i / 2);
}

static bool cct_is_default(const struct ibcc_params *p)
{
	if (p->cct_len != IBCC_CCT_MAX)
		return false;
	for (int i = 0; i < IBCC_CCT_MAX; i++)
		if (p->cct[i] != (uint16_t)(i * i / 2))
			return false;
	return true;
}

void ibcc_params_default(struct ibcc_params *p)
{
	memset(p, 0, sizeof(*p));
	p->threshold = 8;	/* marks above half a VL buffer */
	p->marking_rate = 3;	/* one eligible packet in four */
	p->packet_size = 1;	/* 64 bytes: ACKs and CNs (26 B) are never marked */
	p->ccti_timer_us = 0;	/* automatic: ibcc_timer_ps() */
	p->ccti_increase = 1;
	p->ccti_limit = IBCC_CCT_MAX - 1;
	p->ccti_min = 0;
	default_cct(p);
}

static int parse_cct(struct ibcc_params *p, const char *v, char *err, size_t errlen)
{
	uint16_t t[IBCC_CCT_MAX];
	int n = 0;
	const char *s = v;

	if (!strcasecmp(v, "default")) {
		memset(p->cct, 0, sizeof(p->cct));
		default_cct(p);
		return 0;
	}
	while (*s) {
		char *end;
		unsigned long shift = 0, mult = strtoul(s, &end, 0);

		if (end == s)
			goto bad;
		if (*end == ':') {
			shift = mult;
			s = end + 1;
			mult = strtoul(s, &end, 0);
			if (end == s)
				goto bad;
		}
		if (shift > 3 || mult > 0x3fff) {
			snprintf(err, errlen, "entry %d: shift 0..3 and multiplier 0..16383", n + 1);
			return -1;
		}
		if (n == IBCC_CCT_MAX) {
			snprintf(err, errlen, "more than %d entries", IBCC_CCT_MAX);
			return -1;
		}
		t[n++] = (uint16_t)(shift << 14 | mult);
		s = end;
		if (*s == ',')
			s++;
		else if (*s)
			goto bad;
	}
	if (!n)
		goto bad;
	memcpy(p->cct, t, sizeof(t[0]) * (size_t)n);
	p->cct_len = (uint16_t)n;
	if (p->ccti_limit >= n)
		p->ccti_limit = (uint16_t)(n - 1);
	return 0;
bad:
	snprintf(err, errlen, "expected SHIFT:MULTIPLIER,... (or MULTIPLIER,...), got '%s'", v);
	return -1;
}

static int set_cct(void *obj, const struct sim_param *k, const char *v, char *err,
		   size_t errlen)
{
	(void)k;
	return parse_cct(obj, v, err, errlen);
}

static void print_cct(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	const struct ibcc_params *p = obj;
	size_t off = 0;

	(void)k;
	buf[0] = 0;
	if (cct_is_default(p)) {
		snprintf(buf, len, "default");
		return;
	}
	for (int i = 0; i < p->cct_len; i++)
		sim_append(buf, len, &off, "%s%u:%u", i ? "," : "", IBCC_CCT_SHIFT(p->cct[i]),
			   IBCC_CCT_MULT(p->cct[i]));
}

#define F(f) SIM_PARAM_FIELD(struct ibcc_params, f)
#define U(n, f, lo, hi, m) { "ib.cc." n, SIM_PARAM_UINT, F(f), lo, hi, NULL, NULL, NULL, m }

/* ib.cc and ib.cc.* keys, rows of the parameter schema (sim/sim_param.h),
 * in print order. */
const struct sim_param ibcc_param_keys[] = {
	{ "ib.cc", SIM_PARAM_BOOL, F(on), 0, 1, NULL, NULL, NULL,
	  "IB congestion control (IBA Annex A10) on the ib fabric" },
	U("threshold", threshold, 0, 15,
	  "switch: 0 = never mark FECN, 1..15 = above (16-t)/16 of a VL buffer queued"),
	U("marking_rate", marking_rate, 0, 65535,
	  "switch: eligible packets passed over between two FECN marks"),
	U("packet_size", packet_size, 0, 255,
	  "switch: packets under this many 64-byte units are not marked"),
	{ "ib.cc.victim_mark", SIM_PARAM_BOOL, F(victim_mark), 0, 1, NULL, NULL, NULL,
	  "switch: mark at outputs blocked for credits too (Victim_Mask)" },
	U("ccti_timer_us", ccti_timer_us, 0, 100000000,
	  "CA: the CCT index falls by one per period, us (0 = 8 x (marking_rate + 1) MTU packets' time at the CA's rate + 2 us)"),
	U("ccti_increase", ccti_increase, 0, 255, "CA: CCT index added per BECN"),
	U("ccti_limit", ccti_limit, 0, IBCC_CCT_MAX - 1, "CA: highest CCT index"),
	U("ccti_min", ccti_min, 0, IBCC_CCT_MAX - 1, "CA: lowest CCT index"),
	{ "ib.cc.cct", SIM_PARAM_SPECIAL, 0, 0, 0, 0, set_cct, print_cct, NULL,
	  "CA: SHIFT:MULT,...: delay MULT << SHIFT x 64-byte times (default i^2/2)" },
	{ NULL },
};

#undef F
#undef U

int ibcc_params_check(const struct ibcc_params *p, char *err, size_t errlen)
{
	if (p->ccti_min > p->ccti_limit) {
		snprintf(err, errlen, "ib.cc.ccti_min (%u) is above ib.cc.ccti_limit (%u)",
			 p->ccti_min, p->ccti_limit);
		return -1;
	}
	if (p->ccti_limit >= p->cct_len) {
		snprintf(err, errlen, "ib.cc.ccti_limit (%u) is beyond the table (%u entries)",
			 p->ccti_limit, p->cct_len);
		return -1;
	}
	return 0;
}

uint32_t ibcc_threshold_bytes(const struct ibcc_params *p, uint32_t vl_buf)
{
	if (!p->threshold)
		return 0;
	return (uint32_t)((uint64_t)(16 - p->threshold) * vl_buf / 16);
}

uint32_t ibcc_ird_units(const struct ibcc_params *p, uint16_t ccti)
{
	uint16_t e = p->cct[ccti < p->cct_len ? ccti : p->cct_len - 1];

	return (uint32_t)IBCC_CCT_MULT(e) << IBCC_CCT_SHIFT(e);
}

/* ---- the CA ------------------------------------------------------------------ */

sim_time_t ibcc_timer_ps(const struct ibcc_params *p, double line_bps, uint32_t mtu)
{
	/* a WRITE's middle packet: LRH, BTH, payload, ICRC, VCRC */
	double pkt = (double)(IB_LRH_BYTES + IB_BTH_BYTES + mtu + IB_ICRC_BYTES + IB_VCRC_BYTES) *
		     8e12 / line_bps;

	if (p->ccti_timer_us)
		return (sim_time_t)p->ccti_timer_us * SIM_US;
	return (sim_time_t)(IBCC_TIMER_FLOWS * 2.0 * (p->marking_rate + 1) * pkt + 0.5) + IBCC_TIMER_LOOP_PS;
}

void ibcc_ca_advance(struct ibcc_ca *ca, const struct ibcc_params *p, sim_time_t period,
		     sim_time_t now)
{
	uint64_t n;

	if (!ca->next_dec || ca->next_dec > now)
		return;
	n = (now - ca->next_dec) / period + 1;
	if (ca->ccti <= p->ccti_min || n >= (uint64_t)(ca->ccti - p->ccti_min)) {
		ca->ccti = ca->ccti > p->ccti_min ? p->ccti_min : ca->ccti;
		ca->next_dec = 0;
		return;
	}
	ca->ccti = (uint16_t)(ca->ccti - n);
	ca->next_dec += n * period;
}

void ibcc_ca_becn(struct ibcc_ca *ca, const struct ibcc_params *p, sim_time_t period,
		  sim_time_t now)
{
	uint32_t c;

	ibcc_ca_advance(ca, p, period, now);
	ca->becns++;
	c = (uint32_t)ca->ccti + p->ccti_increase;
	ca->ccti = (uint16_t)(c > p->ccti_limit ? p->ccti_limit : c);
	if (ca->ccti > p->ccti_min && !ca->next_dec)
		ca->next_dec = now + period;
}
