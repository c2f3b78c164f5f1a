/* SPDX-License-Identifier: MIT */
/*
 * vlarb_params.h - the VL arbitration tables (vlarb.*: IBA 7.6.9) and the
 * map by VL made from them once per fabric, which every layer may read
 * (models/ib/ib_vlarb.c arbitrates).
 */
#ifndef IBFAB_VLARB_PARAMS_H
#define IBFAB_VLARB_PARAMS_H

#include <stdint.h>

#define IB_VLARB_ENTRIES 64	/* IBA 7.6.9: up to 64 entries per table */

struct ib_vlarb_entry {
	uint8_t vl;
	uint8_t weight;		/* units of 64 bytes; 0 = entry unused */
};

/* The tables every port uses (the parameters vlarb.high, vlarb.low and
 * vlarb.limit_high: struct fab_params.vlarb) */
struct ib_vlarb_params {
	struct ib_vlarb_entry high[IB_VLARB_ENTRIES];	/* "vl:weight,..." */
	struct ib_vlarb_entry low[IB_VLARB_ENTRIES];
	uint8_t nhigh, nlow;
	uint8_t limit;		/* LimitOfHighPriority, 4 KiB units, 255 = unbounded */
};

/*
 * The tables by VL, for every port of a fabric (computed once from the
 * parameters): bit i of hi[v] (lo[v]) is set when entry i of the high (low)
 * table serves VL v with a weight. Moving on from an entry is then a mask
 * and a bit scan, not a walk of the table: with the default one-packet
 * weights the arbiter moves on after nearly every packet.
 */
struct ib_vlarb_map {
	uint64_t hi[16], lo[16];
};

#endif
