/* SPDX-License-Identifier: MIT */
/*
 * ib_vlarb.h - output VL arbitration (IBA 7.6.9, VL arbitration and
 * prioritization).
 *
 * Two tables of (VL, weight) entries, high and low priority, weight in units
 * of 64 bytes. Within a table the arbiter stays on the current entry while
 * that VL has a packet it can send and the entry's remaining weight is
 * positive; a packet that starts with weight left may overrun it (the weight
 * goes negative and the arbiter moves on). An entry whose VL has nothing
 * ready is skipped and forfeits its weight, as the IBA describes: there is no
 * deficit carried between rounds, so a shared output divides its bandwidth
 * in the ratio of whole packets each entry admits (ceil(weight / blocks)).
 * High-priority entries are served first; LimitOfHighPriority (units of
 * 4096 bytes, 255 = unbounded, 0 = one packet) bounds how much high-priority
 * traffic goes out before one low-priority packet gets a turn. VL15 is
 * above both tables.
 */
#ifndef IBFAB_IB_VLARB_H
#define IBFAB_IB_VLARB_H

#include <stdint.h>

#include "models/params/vlarb_params.h"


/* 24 bytes: it shares the transmitter's cache line (models/port/port.h), so the
 * tables are passed in, not pointed to. */
struct ib_vlarb {
	uint8_t hi_idx, lo_idx;		/* current entry */
	int32_t hi_left, lo_left;	/* remaining weight of it, in 64-byte blocks */
	uint32_t hi_sent;		/* high-priority bytes since low last had a turn */
	uint16_t hi_mask, lo_mask;	/* VLs that appear with weight > 0 */
};

enum ib_vlarb_table { IB_VLARB_NONE, IB_VLARB_HIGH, IB_VLARB_LOW, IB_VLARB_VL15 };


void ib_vlarb_map_init(struct ib_vlarb_map *m, const struct ib_vlarb_params *p);
void ib_vlarb_init(struct ib_vlarb *a, const struct ib_vlarb_params *p);
/*
 * Choose a VL among `ready` (bit v set: VL v has a packet that fits its
 * credits). Returns the VL or -1, and in *table which table served it.
 * Picking commits the arbiter's position; call ib_vlarb_sent() for the
 * packet actually sent.
 */
int ib_vlarb_pick(struct ib_vlarb *a, const struct ib_vlarb_params *p,
		  const struct ib_vlarb_map *m, uint16_t ready, enum ib_vlarb_table *table);
void ib_vlarb_sent(struct ib_vlarb *a, enum ib_vlarb_table table, uint32_t bytes,
		   uint32_t blocks);

#endif
