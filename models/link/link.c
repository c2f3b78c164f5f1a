/* SPDX-License-Identifier: MIT */
/* link.c - rate tables and exact serialisation; see link.h for the sources. */
#include "models/link/link.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

static const struct link_speed_info speeds[LINK_SPEED_COUNT] = {
	[LINK_SPEED_NONE] = { "none", 0, 1, 1, "-" },
	[LINK_SDR]   = { "SDR",   2500000000ULL,  8, 10, "8b/10b" },
	[LINK_DDR]   = { "DDR",   5000000000ULL,  8, 10, "8b/10b" },
	[LINK_QDR]   = { "QDR",  10000000000ULL,  8, 10, "8b/10b" },
	[LINK_FDR10] = { "FDR10", 10312500000ULL, 64, 66, "64b/66b" },
	[LINK_FDR]   = { "FDR",  14062500000ULL, 64, 66, "64b/66b" },
	[LINK_EDR]   = { "EDR",  25781250000ULL, 64, 66, "64b/66b" },
	/* PAM4: 256b/257b transcoding then RS(544,514) FEC: 256*514 / 257*544. */
	[LINK_HDR]   = { "HDR",  53125000000ULL, 256 * 514, 257 * 544, "PAM4 256b/257b+RS(544,514)" },
	[LINK_NDR]   = { "NDR", 106250000000ULL, 256 * 514, 257 * 544, "PAM4 256b/257b+RS(544,514)" },
	[LINK_XDR]   = { "XDR", 212500000000ULL, 256 * 514, 257 * 544, "PAM4 256b/257b+RS(544,514)" },
};

const struct link_speed_info *link_speed_info(enum link_speed s)
{
	return (unsigned)s < LINK_SPEED_COUNT ? &speeds[s] : &speeds[0];
}

enum link_speed link_speed_parse(const char *name)
{
	for (int i = 1; i < LINK_SPEED_COUNT; i++)
		if (!strcasecmp(name, speeds[i].name))
			return (enum link_speed)i;
	return LINK_SPEED_NONE;
}

int link_width_valid(int lanes)
{
	return lanes == 1 || lanes == 2 || lanes == 4 || lanes == 8 || lanes == 12;
}

int link_width_parse(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (end == s || (*end && strcasecmp(end, "x")))
		return 0;
	/* Range first: (int)4294967300 would be 4. */
	return v >= 1 && v <= 12 && link_width_valid((int)v) ? (int)v : 0;
}

enum link_speed link_speed_from_code(unsigned code)
{
	/* PortInfo LinkSpeedActive: 1 SDR, 2 DDR, 4 QDR. ibnetdiscover -f prints
	 * this field as s= even on FDR..NDR links (those are in
	 * LinkSpeedExtActive, see link_speed_from_ext_code()), and FDR10 only
	 * shows in a Mellanox extension, so s=4 may be QDR or FDR10. */
	switch (code) {
	case 1: return LINK_SDR;
	case 2: return LINK_DDR;
	case 4: return LINK_QDR;
	default: return LINK_SPEED_NONE;
	}
}

enum link_speed link_speed_from_ext_code(unsigned code)
{
	switch (code) {
	case 1: return LINK_FDR;
	case 2: return LINK_EDR;
	case 4: return LINK_HDR;
	case 8: return LINK_NDR;
	default: return LINK_SPEED_NONE;
	}
}

int link_width_from_code(unsigned code)
{
	/* PortInfo LinkWidthActive bits: 1=1x 2=4x 4=8x 8=12x 16=2x. */
	switch (code) {
	case 1: return 1;
	case 2: return 4;
	case 4: return 8;
	case 8: return 12;
	case 16: return 2;
	default: return 0;
	}
}

double link_data_rate_bps(struct link_rate r)
{
	const struct link_speed_info *s = link_speed_info(r.speed);

	return (double)s->lane_baud * r.lanes * s->enc_num / s->enc_den;
}

/* The time one byte takes, exactly: *num / *den picoseconds (den 0: no rate). */
static void byte_ps(struct link_rate r, unsigned __int128 *num, unsigned __int128 *den)
{
	const struct link_speed_info *s = link_speed_info(r.speed);

	*num = (unsigned __int128)8 * 1000000000000ULL * s->enc_den;
	*den = (unsigned __int128)s->lane_baud * r.lanes * s->enc_num;
}

sim_time_t link_ser_ps(struct link_rate r, uint64_t bytes)
{
	unsigned __int128 num, den;

	byte_ps(r, &num, &den);
	if (!den)
		return 0;
	num *= bytes;
	return (sim_time_t)((num + den - 1) / den);
}

uint32_t link_ps_per_byte(struct link_rate r)
{
	unsigned __int128 num, den;

	byte_ps(r, &num, &den);
	if (!den || num % den || num / den > UINT32_MAX)
		return 0;
	return (uint32_t)(num / den);
}

uint64_t link_bytes_in(struct link_rate r, sim_time_t t)
{
	unsigned __int128 per_num, per_den;	/* per_num is never 0 */

	byte_ps(r, &per_num, &per_den);
	return (uint64_t)((unsigned __int128)t * per_den / per_num);	/* t / (ps per byte) */
}

sim_time_t link_prop_ps(double metres, uint32_t ps_per_m)
{
	/* !(> 0) also refuses NaN, which llround() would turn into 2^63. */
	return !(metres > 0) ? 0 : (sim_time_t)llround(metres * ps_per_m);
}

const char *link_rate_str(struct link_rate r, char *buf, unsigned len)
{
	snprintf(buf, len, "%ux%s", r.lanes, link_speed_info(r.speed)->name);
	return buf;
}
