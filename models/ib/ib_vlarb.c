/* SPDX-License-Identifier: MIT */
/* ib_vlarb.c - IBA 7.6.9 VL arbitration; the rules are in ib_vlarb.h. */
#include "models/ib/ib_vlarb.h"

#include "models/fabric/fab.h"
#include "sim/sim_log.h"

void ib_vlarb_init(struct ib_vlarb *a, const struct fab_params *p)
{
	a->hi_idx = a->lo_idx = 0;
	a->hi_sent = 0;
	a->hi_mask = a->lo_mask = 0;
	for (int i = 0; i < p->vlarb_nhigh; i++)
		if (p->vlarb_high[i].weight)
			a->hi_mask |= 1u << p->vlarb_high[i].vl;
	for (int i = 0; i < p->vlarb_nlow; i++)
		if (p->vlarb_low[i].weight)
			a->lo_mask |= 1u << p->vlarb_low[i].vl;
	a->hi_left = p->vlarb_nhigh ? p->vlarb_high[0].weight : 0;
	a->lo_left = p->vlarb_nlow ? p->vlarb_low[0].weight : 0;
}

/*
 * Walk a table from its current entry: stay while the entry's VL is ready and
 * has weight left, otherwise advance (reloading the next entry's weight).
 * One full lap without a hit means nothing in this table is ready.
 */
static int table_pick(const struct fab_vlarb_entry *tab, uint8_t n,
		      uint8_t *idx, int32_t *left, uint16_t ready)
{
	/* in registers: idx is a uint8_t *, which may alias anything */
	uint8_t i = *idx;
	int32_t l = *left;
	int vl = -1;

	if (!n)
		return -1;
	for (unsigned step = 0; step <= n; step++) {
		const struct fab_vlarb_entry *e = &tab[i];

		if (e->weight && l > 0 && (ready & (1u << e->vl))) {
			vl = e->vl;
			break;
		}
		i = (uint8_t)(i + 1 == n ? 0 : i + 1);	/* not %: a division per step */
		l = tab[i].weight;
	}
	*idx = i;
	*left = l;
	return vl;
}

int ib_vlarb_pick(struct ib_vlarb *a, const struct fab_params *p, uint16_t ready,
		  enum ib_vlarb_table *table)
{
	uint16_t hi = ready & a->hi_mask, lo = ready & a->lo_mask;
	int vl;

	*table = IB_VLARB_NONE;
	if (ready & (1u << 15)) {
		*table = IB_VLARB_VL15;
		return 15;
	}
	if (!hi)
		a->hi_sent = 0;	/* high had nothing: its budget starts afresh */
	/* LimitOfHighPriority: 255 unbounded; else limit x 4 KiB, at least one packet. */
	uint32_t limit = p->vlarb_limit == 255 ? UINT32_MAX :
			 (p->vlarb_limit ? p->vlarb_limit * 4096u : 1u);
	if (hi && !(lo && a->hi_sent >= limit)) {
		vl = table_pick(p->vlarb_high, p->vlarb_nhigh, &a->hi_idx, &a->hi_left, hi);
		if (vl >= 0) {
			*table = IB_VLARB_HIGH;
			return vl;
		}
	}
	if (lo) {
		vl = table_pick(p->vlarb_low, p->vlarb_nlow, &a->lo_idx, &a->lo_left, lo);
		if (vl >= 0) {
			*table = IB_VLARB_LOW;
			return vl;
		}
	}
	return -1;
}

void ib_vlarb_sent(struct ib_vlarb *a, enum ib_vlarb_table table, uint32_t bytes,
		   uint32_t blocks)
{
	switch (table) {
	case IB_VLARB_HIGH:
		a->hi_left -= (int32_t)blocks;
		a->hi_sent += bytes;
		break;
	case IB_VLARB_LOW:
		a->lo_left -= (int32_t)blocks;
		a->hi_sent = 0;
		break;
	default:
		break;
	}
}
