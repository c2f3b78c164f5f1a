/* SPDX-License-Identifier: MIT */
/* ib_vlarb.c - IBA 7.6.9 VL arbitration; the rules are in ib_vlarb.h. */
#include "models/ib/ib_vlarb.h"

#include <string.h>

#include "sim/sim_log.h"

void ib_vlarb_init(struct ib_vlarb *a, const struct ib_vlarb_params *p)
{
	a->hi_idx = a->lo_idx = 0;
	a->hi_sent = 0;
	a->hi_mask = a->lo_mask = 0;
	for (int i = 0; i < p->nhigh; i++)
		if (p->high[i].weight)
			a->hi_mask |= 1u << p->high[i].vl;
	for (int i = 0; i < p->nlow; i++)
		if (p->low[i].weight)
			a->lo_mask |= 1u << p->low[i].vl;
	a->hi_left = p->nhigh ? p->high[0].weight : 0;
	a->lo_left = p->nlow ? p->low[0].weight : 0;
}

void ib_vlarb_map_init(struct ib_vlarb_map *m, const struct ib_vlarb_params *p)
{
	memset(m, 0, sizeof(*m));
	for (int i = 0; i < p->nhigh; i++)
		if (p->high[i].weight)
			m->hi[p->high[i].vl & 15] |= 1ull << i;
	for (int i = 0; i < p->nlow; i++)
		if (p->low[i].weight)
			m->lo[p->low[i].vl & 15] |= 1ull << i;
}

/*
 * From the current entry: stay while its VL is ready and it has weight
 * left; otherwise move on to the first entry after it (cyclically, itself
 * last, its weight reloaded) that has a weight and a ready VL. `by_vl` gives
 * those entries as bits (struct ib_vlarb_map). With none (ib_vlarb_pick
 * offers only VLs the table serves, so only a guard), the arbiter rests on
 * the entry after the current one, where a lap of the table would leave it.
 */
static int table_pick(const struct ib_vlarb_entry *tab, const uint64_t *by_vl, uint8_t n,
		      uint8_t *idx, int32_t *left, uint16_t ready)
{
	unsigned i = *idx, j;
	uint64_t hits = 0, later;

	if (!n)
		return -1;
	if (tab[i].weight && *left > 0 && (ready & (1u << tab[i].vl)))
		return tab[i].vl;
	for (uint16_t r = ready; r; r &= (uint16_t)(r - 1))
		hits |= by_vl[__builtin_ctz(r)];
	if (!hits) {
		j = i + 1 == n ? 0 : i + 1;
		*idx = (uint8_t)j;
		*left = tab[j].weight;
		return -1;
	}
	later = i + 1 < 64 ? hits >> (i + 1) : 0;	/* entries i+1 .. n-1 */
	j = later ? i + 1 + (unsigned)__builtin_ctzll(later) : (unsigned)__builtin_ctzll(hits);
	*idx = (uint8_t)j;
	*left = tab[j].weight;
	return tab[j].vl;
}

int ib_vlarb_pick(struct ib_vlarb *a, const struct ib_vlarb_params *p,
		  const struct ib_vlarb_map *m, uint16_t ready, enum ib_vlarb_table *table)
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
	uint32_t limit = p->limit == 255 ? UINT32_MAX :
			 (p->limit ? p->limit * 4096u : 1u);
	if (hi && !(lo && a->hi_sent >= limit)) {
		vl = table_pick(p->high, m->hi, p->nhigh, &a->hi_idx, &a->hi_left, hi);
		if (vl >= 0) {
			*table = IB_VLARB_HIGH;
			return vl;
		}
	}
	if (lo) {
		vl = table_pick(p->low, m->lo, p->nlow, &a->lo_idx, &a->lo_left, lo);
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
