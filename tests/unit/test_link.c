/* SPDX-License-Identifier: MIT */
/*
 * test_link.c - unit tests for link physics (models/link/): data rates for
 * every IB width x speed, exact serialisation times, link_bytes_in as their
 * inverse, propagation, and the width/speed parsers.
 *
 * Every timing result of the simulator is built on link_ser_ps(), so it is
 * checked to the picosecond. The expected values do not come from link.c's
 * table of signalling rates and line codes: they come from the per-lane data
 * rates the IBA publishes (Vol 2, Release 1.4, 5.2: QDR 8 Gb/s, FDR 13.64 =
 * 150/11 Gb/s, HDR 50 Gb/s, ...), so a wrong encoding (the classic error of
 * applying 8b/10b to FDR/EDR) or a wrong baud rate fails here.
 */
#include "tests/unit/test_main.h"

#include "models/link/link.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/*
 * Data rate per lane in Gb/s as an exact fraction, from numbers.md. FDR is
 * 14.0625 Gbaud x 64/66 = 13.6363... = 150/11 Gb/s; all others are whole.
 */
static const struct {
	enum link_speed speed;
	const char *name;
	uint64_t gbps_num, gbps_den;
	double x4_gbps;			/* the 4x column of numbers.md */
} lane_rate[] = {
	{ LINK_SDR,   "SDR",     2, 1,   8 },
	{ LINK_DDR,   "DDR",     4, 1,  16 },
	{ LINK_QDR,   "QDR",     8, 1,  32 },
	{ LINK_FDR10, "FDR10",  10, 1,  40 },
	{ LINK_FDR,   "FDR",   150, 11, 54.5454545454545454 },
	{ LINK_EDR,   "EDR",    25, 1, 100 },
	{ LINK_HDR,   "HDR",    50, 1, 200 },
	{ LINK_NDR,   "NDR",   100, 1, 400 },
	{ LINK_XDR,   "XDR",   200, 1, 800 },
};

static const int widths[] = { 1, 2, 4, 8, 12 };

static double rate_bps(int lanes, enum link_speed speed)
{
	return link_data_rate_bps((struct link_rate){ (uint8_t)lanes, (uint8_t)speed });
}

static bool close_rel(double got, double want, double rel)
{
	return fabs(got - want) <= rel * fabs(want);
}

static void test_rates_4x(void)
{
	CU_ASSERT(SIM_ARRAY_SIZE(lane_rate) == LINK_SPEED_COUNT - 1);
	for (size_t i = 0; i < SIM_ARRAY_SIZE(lane_rate); i++) {
		struct link_rate r = { .lanes = 4, .speed = lane_rate[i].speed };
		double bps = link_data_rate_bps(r);

		if (!close_rel(bps, lane_rate[i].x4_gbps * 1e9, 1e-12))
			fprintf(stderr, "4x%s: %.6f Gb/s, want %.6f\n",
				lane_rate[i].name, bps / 1e9, lane_rate[i].x4_gbps);
		CU_ASSERT(close_rel(bps, lane_rate[i].x4_gbps * 1e9, 1e-12));
		CU_ASSERT_STRING_EQUAL(link_speed_info(lane_rate[i].speed)->name,
				       lane_rate[i].name);
	}
	/* FDR is not 8b/10b: 4xFDR at 8b/10b would be 45 Gb/s. */
	CU_ASSERT(rate_bps(4, LINK_FDR) > 54.5e9);
	CU_ASSERT(rate_bps(4, LINK_EDR) == 100e9);
}

static void test_rates_widths(void)
{
	/* A few spelled out, then every width x speed as lanes x lane rate. */
	CU_ASSERT(close_rel(rate_bps(1, LINK_QDR), 8e9, 1e-12));
	CU_ASSERT(close_rel(rate_bps(2, LINK_HDR), 100e9, 1e-12));
	CU_ASSERT(close_rel(rate_bps(8, LINK_NDR), 800e9, 1e-12));
	CU_ASSERT(close_rel(rate_bps(12, LINK_EDR), 300e9, 1e-12));
	CU_ASSERT(close_rel(rate_bps(12, LINK_XDR), 2400e9, 1e-12));
	CU_ASSERT(close_rel(rate_bps(1, LINK_FDR), 150e9 / 11, 1e-12));
	for (size_t i = 0; i < SIM_ARRAY_SIZE(lane_rate); i++)
		for (size_t w = 0; w < SIM_ARRAY_SIZE(widths); w++) {
			struct link_rate r = { (uint8_t)widths[w], (uint8_t)lane_rate[i].speed };
			double want = 1e9 * widths[w] * (double)lane_rate[i].gbps_num /
				      (double)lane_rate[i].gbps_den;

			CU_ASSERT(close_rel(link_data_rate_bps(r), want, 1e-12));
		}
	/* No speed: no rate, and no division by zero in the timing code. */
	CU_ASSERT(rate_bps(4, LINK_SPEED_NONE) == 0);
	CU_ASSERT(link_ser_ps((struct link_rate){ 4, LINK_SPEED_NONE }, 100) == 0);
	CU_ASSERT(link_ser_ps((struct link_rate){ 0, LINK_QDR }, 100) == 0);
}

static void test_ser_hand_computed(void)
{
	/*
	 * A 4096-byte payload plus 30 bytes of headers and CRCs (LRH 8 + BTH
	 * 12 + AETH 4 + ICRC 4 + VCRC 2, a READ response's first packet):
	 * 4126 bytes on the wire.
	 * 4126 B x 8 = 33008 bits.
	 *   4xQDR = 32 Gb/s = 32 bits/ns: 33008 / 32 = 1031.5 ns = 1031500 ps.
	 *   4xHDR = 200 Gb/s = 200 bits/ns: 33008 / 200 = 165.04 ns = 165040 ps.
	 * Both are exact: no rounding.
	 */
	struct link_rate qdr = { 4, LINK_QDR }, hdr = { 4, LINK_HDR };

	CU_ASSERT(link_ser_ps(qdr, 4096 + 30) == 1031500);
	CU_ASSERT(link_ser_ps(hdr, 4096 + 30) == 165040);

	/*
	 * Rounding up to whole picoseconds:
	 *   4xFDR = 600/11 bits/ns: 33008 x 11 / 600 = 605.14666... ns
	 *     = 605146.67 ps -> 605147.
	 *   1xFDR, 1 byte: 8 x 11 / 150 = 0.58666... ns = 586.67 ps -> 587.
	 *   12xXDR = 2400 bits/ns, 1 byte: 8 / 2400 ns = 3.33 ps -> 4.
	 *   1xSDR = 2 bits/ns, 1 byte: 4 ns exactly = 4000 ps.
	 *   4xEDR = 100 bits/ns, 1 byte: 0.08 ns = 80 ps exactly.
	 */
	CU_ASSERT(link_ser_ps((struct link_rate){ 4, LINK_FDR }, 4126) == 605147);
	CU_ASSERT(link_ser_ps((struct link_rate){ 1, LINK_FDR }, 1) == 587);
	CU_ASSERT(link_ser_ps((struct link_rate){ 12, LINK_XDR }, 1) == 4);
	CU_ASSERT(link_ser_ps((struct link_rate){ 1, LINK_SDR }, 1) == 4000);
	CU_ASSERT(link_ser_ps((struct link_rate){ 4, LINK_EDR }, 1) == 80);
	CU_ASSERT(link_ser_ps(hdr, 0) == 0);

	/* Rounding never accumulates: n packets back to back are within n ps
	 * of one packet of n times the size. */
	struct link_rate fdr = { 4, LINK_FDR };
	sim_time_t sum = 0;

	for (int i = 0; i < 1000; i++)
		sum += link_ser_ps(fdr, 4126);
	CU_ASSERT(sum >= link_ser_ps(fdr, 4126 * 1000));
	CU_ASSERT(sum - link_ser_ps(fdr, 4126 * 1000) <= 1000);

	/* A 1 GiB message at 4xQDR: 2^30 x 8 / 32 ns = 268435456 ns, no overflow. */
	CU_ASSERT(link_ser_ps(qdr, 1ULL << 30) == 268435456ULL * SIM_NS);
}

/* ceil(bytes x 8 bits / (lanes x gbps) ns), with gbps = num/den, in ps. */
static sim_time_t expect_ser_ps(uint64_t bytes, int lanes, uint64_t num, uint64_t den)
{
	unsigned __int128 n = (unsigned __int128)bytes * 8 * 1000 * den;
	unsigned __int128 d = (unsigned __int128)lanes * num;

	return (sim_time_t)((n + d - 1) / d);
}

/* Every width x speed, sizes from 1 byte to 1 MiB (and the odd ones between). */
static void test_ser_all_rates(void)
{
	static const uint64_t sizes[] = { 1, 2, 3, 7, 26, 64, 65, 255, 256, 257,
					  1000, 2048 + 26, 4096 + 30, 4097, 9000,
					  65535, 1 << 20, 12345677 };

	for (size_t i = 0; i < SIM_ARRAY_SIZE(lane_rate); i++)
		for (size_t w = 0; w < SIM_ARRAY_SIZE(widths); w++)
			for (size_t z = 0; z < SIM_ARRAY_SIZE(sizes); z++) {
				struct link_rate r = { (uint8_t)widths[w],
						       (uint8_t)lane_rate[i].speed };
				sim_time_t want = expect_ser_ps(sizes[z], widths[w],
								lane_rate[i].gbps_num,
								lane_rate[i].gbps_den);
				sim_time_t got = link_ser_ps(r, sizes[z]);

				if (got != want)
					fprintf(stderr, "%dx%s %llu B: %llu ps, want %llu\n",
						widths[w], lane_rate[i].name,
						(unsigned long long)sizes[z],
						(unsigned long long)got,
						(unsigned long long)want);
				CU_ASSERT(got == want);
			}
}

/*
 * link_ps_per_byte(): whole ps per byte exactly where the numbers.md rate
 * makes them whole (8e12 / (lanes x lane rate) an integer), and then
 * link_ser_ps() is that product for every size; 0 elsewhere (FDR10's 10
 * Gb/s lanes at 1x do divide: 800 ps).
 */
static void test_ps_per_byte(void)
{
	static const uint64_t sizes[] = { 1, 3, 26, 65, 4096 + 30, 9000, 1 << 20, 12345677 };
	int whole = 0;

	for (size_t i = 0; i < SIM_ARRAY_SIZE(lane_rate); i++)
		for (size_t w = 0; w < SIM_ARRAY_SIZE(widths); w++) {
			struct link_rate r = { (uint8_t)widths[w], (uint8_t)lane_rate[i].speed };
			/* ps per byte = 8e12 * den / (lanes * num * 1e9) */
			uint64_t n = 8000ULL * lane_rate[i].gbps_den;
			uint64_t d = (uint64_t)widths[w] * lane_rate[i].gbps_num;
			uint32_t k = link_ps_per_byte(r);

			CU_ASSERT_EQUAL(k, n % d ? 0 : n / d);
			whole += k != 0;
			for (size_t z = 0; k && z < SIM_ARRAY_SIZE(sizes); z++)
				CU_ASSERT_EQUAL(link_ser_ps(r, sizes[z]), sizes[z] * k);
		}
	CU_ASSERT_EQUAL(link_ps_per_byte((struct link_rate){ 4, LINK_HDR }), 40);
	CU_ASSERT_EQUAL(link_ps_per_byte((struct link_rate){ 4, LINK_EDR }), 80);
	CU_ASSERT_EQUAL(link_ps_per_byte((struct link_rate){ 4, LINK_QDR }), 250);
	CU_ASSERT_EQUAL(link_ps_per_byte((struct link_rate){ 4, LINK_FDR }), 0);
	CU_ASSERT_EQUAL(link_ps_per_byte((struct link_rate){ 12, LINK_NDR }), 0);	/* 20/3 */
	CU_ASSERT_EQUAL(link_ps_per_byte((struct link_rate){ 0, LINK_SPEED_NONE }), 0);
	CU_ASSERT(whole > 30);
}

static void test_bytes_in(void)
{
	struct link_rate qdr = { 4, LINK_QDR }, fdr = { 4, LINK_FDR };

	/* The hand-computed points, and one picosecond short of them. */
	CU_ASSERT(link_bytes_in(qdr, 1031500) == 4126);
	CU_ASSERT(link_bytes_in(qdr, 1031499) == 4125);
	/* 605147 ps x 600/11 bits/ns = 33008.02 bits = 4126.002 B -> 4126;
	 * 605146 ps -> 33007.96 bits = 4125.995 B -> 4125 (never rounds up). */
	CU_ASSERT(link_bytes_in(fdr, 605147) == 4126);
	CU_ASSERT(link_bytes_in(fdr, 605146) == 4125);
	CU_ASSERT(link_bytes_in(qdr, 0) == 0);
	CU_ASSERT(link_bytes_in(qdr, 249) == 0);	/* 1 byte takes 250 ps */
	CU_ASSERT(link_bytes_in(qdr, 250) == 1);

	/* The inverse, for every rate and many times: b bytes fit, b+1 do not. */
	for (size_t i = 0; i < SIM_ARRAY_SIZE(lane_rate); i++)
		for (size_t w = 0; w < SIM_ARRAY_SIZE(widths); w++) {
			struct link_rate r = { (uint8_t)widths[w],
					       (uint8_t)lane_rate[i].speed };
			sim_time_t t = 1;

			for (int k = 0; k < 60; k++, t = t * 7 / 3 + 13) {
				uint64_t b = link_bytes_in(r, t);

				CU_ASSERT_FATAL(link_ser_ps(r, b) <= t);
				CU_ASSERT_FATAL(link_ser_ps(r, b + 1) > t);
			}
			/* and serialising b bytes gives back room for exactly b */
			for (uint64_t b = 1; b < 5000; b += 37)
				CU_ASSERT_FATAL(link_bytes_in(r, link_ser_ps(r, b)) == b);
		}

	/* No overflow at the end of time: 12xXDR moves 0.3 bytes per ps. */
	uint64_t far = link_bytes_in((struct link_rate){ 12, LINK_XDR }, SIM_TIME_MAX);

	CU_ASSERT(far == (uint64_t)((unsigned __int128)UINT64_MAX * 3 / 10));
}

static void test_propagation(void)
{
	/* About 5 ns per metre in copper or fibre. */
	CU_ASSERT(link_prop_ps(1.0, 5000) == 5 * SIM_NS);
	CU_ASSERT(link_prop_ps(3.0, 5000) == 15 * SIM_NS);
	CU_ASSERT(link_prop_ps(2.5, 5000) == 12500);
	CU_ASSERT(link_prop_ps(100.0, 5000) == 500 * SIM_NS);
	CU_ASSERT(link_prop_ps(0.3, 5000) == 1500);	/* 1499.99...: rounded, not cut */
	CU_ASSERT(link_prop_ps(2.0, 4900) == 9800);
	CU_ASSERT(link_prop_ps(0.0, 5000) == 0);
	CU_ASSERT(link_prop_ps(-3.0, 5000) == 0);
	CU_ASSERT(link_prop_ps(NAN, 5000) == 0);
}

static void test_speed_parse(void)
{
	for (size_t i = 0; i < SIM_ARRAY_SIZE(lane_rate); i++)
		CU_ASSERT(link_speed_parse(lane_rate[i].name) == lane_rate[i].speed);
	CU_ASSERT(link_speed_parse("qdr") == LINK_QDR);
	CU_ASSERT(link_speed_parse("Hdr") == LINK_HDR);
	CU_ASSERT(link_speed_parse("fdr10") == LINK_FDR10);
	CU_ASSERT(link_speed_parse("fdr") == LINK_FDR);
	/* Bad input. */
	CU_ASSERT(link_speed_parse("") == LINK_SPEED_NONE);
	CU_ASSERT(link_speed_parse("none") == LINK_SPEED_NONE);
	CU_ASSERT(link_speed_parse("QDRX") == LINK_SPEED_NONE);
	CU_ASSERT(link_speed_parse("QD") == LINK_SPEED_NONE);
	CU_ASSERT(link_speed_parse("4xQDR") == LINK_SPEED_NONE);
	CU_ASSERT(link_speed_parse("FDR14") == LINK_SPEED_NONE);
	CU_ASSERT(link_speed_parse("GDR") == LINK_SPEED_NONE);

	/* PortInfo LinkSpeedActive codes as ibnetdiscover/ibsim write them. */
	CU_ASSERT(link_speed_from_code(1) == LINK_SDR);
	CU_ASSERT(link_speed_from_code(2) == LINK_DDR);
	CU_ASSERT(link_speed_from_code(4) == LINK_QDR);
	CU_ASSERT(link_speed_from_code(0) == LINK_SPEED_NONE);
	CU_ASSERT(link_speed_from_code(3) == LINK_SPEED_NONE);

	/* Out-of-range speeds fall back to "none" instead of reading past the table. */
	CU_ASSERT_STRING_EQUAL(link_speed_info(LINK_SPEED_COUNT)->name, "none");
	CU_ASSERT_STRING_EQUAL(link_speed_info((enum link_speed)200)->name, "none");
	CU_ASSERT_STRING_EQUAL(link_speed_info(LINK_EDR)->encoding, "64b/66b");
	CU_ASSERT_STRING_EQUAL(link_speed_info(LINK_QDR)->encoding, "8b/10b");
}

static void test_width_parse(void)
{
	for (size_t w = 0; w < SIM_ARRAY_SIZE(widths); w++) {
		char buf[8];

		snprintf(buf, sizeof(buf), "%dx", widths[w]);
		CU_ASSERT(link_width_parse(buf) == widths[w]);
		snprintf(buf, sizeof(buf), "%dX", widths[w]);
		CU_ASSERT(link_width_parse(buf) == widths[w]);
		snprintf(buf, sizeof(buf), "%d", widths[w]);
		CU_ASSERT(link_width_parse(buf) == widths[w]);
		CU_ASSERT(link_width_valid(widths[w]));
	}
	/* Not IB widths, or not numbers at all. */
	static const char *const bad[] = {
		"", "x", "0", "0x", "3x", "6x", "16x", "24", "-4", "4xx", "4 x",
		"4x4", "4.0", "four", "QDR",
		"4294967300",		/* 2^32 + 4: must not wrap to 4 */
		"4294967297x",		/* 2^32 + 1 */
		"99999999999999999999999",
	};
	for (size_t i = 0; i < SIM_ARRAY_SIZE(bad); i++) {
		int got = link_width_parse(bad[i]);

		if (got)
			fprintf(stderr, "width '%s' parsed as %d\n", bad[i], got);
		CU_ASSERT(got == 0);
	}
	CU_ASSERT(!link_width_valid(0) && !link_width_valid(3) &&
		  !link_width_valid(16) && !link_width_valid(-4));

	/* PortInfo LinkWidthActive bits. */
	CU_ASSERT(link_width_from_code(1) == 1);
	CU_ASSERT(link_width_from_code(2) == 4);
	CU_ASSERT(link_width_from_code(4) == 8);
	CU_ASSERT(link_width_from_code(8) == 12);
	CU_ASSERT(link_width_from_code(16) == 2);
	CU_ASSERT(link_width_from_code(0) == 0);
	CU_ASSERT(link_width_from_code(3) == 0);
	CU_ASSERT(link_width_from_code(32) == 0);
}

static void test_rate_str(void)
{
	char buf[32];

	struct link_rate hdr = { 4, LINK_HDR }, fdr10 = { 12, LINK_FDR10 };

	CU_ASSERT_STRING_EQUAL(link_rate_str(hdr, buf, sizeof(buf)), "4xHDR");
	CU_ASSERT_STRING_EQUAL(link_rate_str(fdr10, buf, sizeof(buf)), "12xFDR10");
	/* Truncated, still terminated. */
	char small[4];

	link_rate_str(fdr10, small, sizeof(small));
	CU_ASSERT_STRING_EQUAL(small, "12x");
}

static const struct test_case tests[] = {
	{ "rates_4x", test_rates_4x },
	{ "rates_widths", test_rates_widths },
	{ "ser_hand_computed", test_ser_hand_computed },
	{ "ser_all_rates", test_ser_all_rates },
	{ "ps_per_byte", test_ps_per_byte },
	{ "bytes_in", test_bytes_in },
	{ "propagation", test_propagation },
	{ "speed_parse", test_speed_parse },
	{ "width_parse", test_width_parse },
	{ "rate_str", test_rate_str },
	{ NULL, NULL },
};

TEST_MAIN("link", tests)
