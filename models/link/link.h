/* SPDX-License-Identifier: MIT */
/*
 * link.h - link physics: width x speed -> data rate, serialisation, propagation.
 *
 * IBA vol. 2 (physical layer) defines per-lane signalling rates and line
 * codes: SDR/DDR/QDR use 8b/10b, FDR10/FDR/EDR 64b/66b, and HDR/NDR/XDR PAM4
 * with 256b/257b transcoding and RS(544,514) FEC. We keep each speed's lane
 * signalling rate and its code as an exact ratio, so the data rate is exact:
 * HDR = 53.125 Gb/s x (256/257) x (514/544) = 50 Gb/s per lane, FDR =
 * 14.0625 x 64/66 = 13.636 Gb/s (a known error elsewhere is to apply 8b/10b
 * to FDR/EDR, about 20% too slow). Serialisation times are computed in
 * 128-bit integers and rounded up to the next picosecond.
 */
#ifndef IBFAB_LINK_H
#define IBFAB_LINK_H

#include <stdint.h>

#include "sim/sim.h"

enum link_speed {
	LINK_SPEED_NONE = 0,	/* not given: the preset decides */
	LINK_SDR, LINK_DDR, LINK_QDR, LINK_FDR10, LINK_FDR, LINK_EDR,
	LINK_HDR, LINK_NDR, LINK_XDR,
	LINK_SPEED_COUNT
};

struct link_speed_info {
	const char *name;
	uint64_t lane_baud;	/* signalling rate per lane, bits (symbols) per second */
	uint32_t enc_num, enc_den;	/* data bits per signalled bit */
	const char *encoding;
};

struct link_rate {
	uint8_t lanes;		/* 1, 2, 4, 8, 12 */
	uint8_t speed;		/* enum link_speed */
};

const struct link_speed_info *link_speed_info(enum link_speed s);
/* Case-insensitive name -> speed; LINK_SPEED_NONE if unknown. */
enum link_speed link_speed_parse(const char *name);
/* "1x".."12x" or "1".."12" -> lanes; 0 if not a valid IB width. */
int link_width_parse(const char *s);
int link_width_valid(int lanes);
/* ibnetdiscover -f / ibsim codes: s= (1 SDR 2 DDR 4 QDR ...) and w= (1 1x 2 4x 4 8x 8 12x 16 2x). */
enum link_speed link_speed_from_code(unsigned code);
int link_width_from_code(unsigned code);
/*
 * FDR and faster are not in s=: PortInfo LinkSpeedExtActive (IBA 14.2.5.6,
 * ibnetdiscover -f and ibsim's e=): 1 FDR, 2 EDR, 4 HDR, 8 NDR. XDR lives in
 * LinkSpeedExt2Active and has no code here. LINK_SPEED_NONE if unknown.
 */
enum link_speed link_speed_from_ext_code(unsigned code);

/* Data rate in bits per second (rounded down for display; timing uses exact ratios). */
double link_data_rate_bps(struct link_rate r);
/* Time to serialise `bytes` bytes on the wire, rounded up to whole ps. */
sim_time_t link_ser_ps(struct link_rate r, uint64_t bytes);
/*
 * The picoseconds a byte takes when they are a whole number (4xHDR 40,
 * 4xEDR 80, 4xQDR 250: then link_ser_ps(r, b) == b * it for every b, with
 * no division), else 0 (FDR and FDR10 are 64/66 of their baud rate).
 */
uint32_t link_ps_per_byte(struct link_rate r);
/* Bytes that fit in `t` picoseconds (rounded down). */
uint64_t link_bytes_in(struct link_rate r, sim_time_t t);
/* Propagation: metres x ps per metre (about 5 ns/m in copper or fibre). */
sim_time_t link_prop_ps(double metres, uint32_t ps_per_m);
/* "4xHDR" into buf. */
const char *link_rate_str(struct link_rate r, char *buf, unsigned len);

#endif
