/* SPDX-License-Identifier: MIT */
/*
 * ibcc_params.h - the InfiniBand congestion control parameters (ib.cc,
 * ib.cc.*: IBA vol. 1 Annex A10) every layer may read (models/ib/ib_cc.c
 * has the model).
 */
#ifndef IBFAB_IBCC_PARAMS_H
#define IBFAB_IBCC_PARAMS_H

#include <stdbool.h>
#include <stdint.h>

#define IBCC_CCT_MAX 128	/* CCT entries shipped (the annex allows more, in blocks of 64) */

/* A CCT entry (Annex A10 CongestionControlTable): CCT_Shift in the top
 * 2 bits, CCT_Multiplier in the low 14. */
#define IBCC_CCT_SHIFT(e) ((uint16_t)(e) >> 14)
#define IBCC_CCT_MULT(e) ((uint16_t)(e) & 0x3fff)

struct ibcc_params {
	bool on;		/* ib.cc */
	/* switch (SwitchCongestionSetting) */
	uint8_t threshold;	/* ib.cc.threshold: 0 = never mark, 1..15 = ever lower queue thresholds */
	uint16_t marking_rate;	/* ib.cc.marking_rate: eligible packets left unmarked between marks */
	uint8_t packet_size;	/* ib.cc.packet_size: smaller packets (64-byte units) are never marked */
	bool victim_mark;	/* ib.cc.victim_mark: mark at ports blocked for credits too (Victim_Mask) */
	/* CA (CACongestionSetting, CongestionControlTable) */
	uint32_t ccti_timer_us;	/* ib.cc.ccti_timer_us: CCTI decrements by one per period */
	uint8_t ccti_increase;	/* ib.cc.ccti_increase: CCTI added per BECN */
	uint16_t ccti_limit;	/* ib.cc.ccti_limit: highest CCTI (< the table's length) */
	uint16_t ccti_min;	/* ib.cc.ccti_min: CCTI never decrements below */
	uint16_t cct_len;
	uint16_t cct[IBCC_CCT_MAX];	/* ib.cc.cct: shift:multiplier entries */
};

#endif
