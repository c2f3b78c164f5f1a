/* SPDX-License-Identifier: MIT */
/*
 * test_parse.c - sim_parse: every value parser on good input, and on the
 * mistakes people make (signs, junk, overflow, missing units, bits for
 * bytes), checking that the message names the problem.
 */
#include <stdio.h>
#include <string.h>

#include "sim/sim_parse.h"
#include "tests/unit/test_main.h"

static char err[256];

#define OK_U(s, max, want) do {						\
	uint64_t v_ = 12345;						\
	CU_ASSERT_EQUAL_FATAL(sim_parse_uint((s), (max), &v_, err, sizeof(err)), 0); \
	CU_ASSERT_EQUAL(v_, (uint64_t)(want));				\
} while (0)

#define BAD(call, needle) do {						\
	err[0] = 0;							\
	CU_ASSERT_EQUAL(call, -1);					\
	if (!strstr(err, (needle)))					\
		fprintf(stderr, "\n  message '%s' lacks '%s'\n", err, (needle)); \
	CU_ASSERT_PTR_NOT_NULL(strstr(err, (needle)));			\
} while (0)

static void test_uint(void)
{
	uint64_t v = 7;

	OK_U("0", 10, 0);
	OK_U("4096", UINT64_MAX, 4096);
	OK_U("0x1000", UINT64_MAX, 4096);
	OK_U("0XfF", 255, 255);
	OK_U("18446744073709551615", UINT64_MAX, UINT64_MAX);
	OK_U("0xffffffffffffffff", UINT64_MAX, UINT64_MAX);
	OK_U("007", 10, 7);

	BAD(sim_parse_uint("18446744073709551616", UINT64_MAX, &v, err, sizeof(err)), "too large");
	BAD(sim_parse_uint("0x10000000000000000", UINT64_MAX, &v, err, sizeof(err)), "too large");
	BAD(sim_parse_uint("256", 255, &v, err, sizeof(err)), "at most 255");
	BAD(sim_parse_uint("-1", UINT64_MAX, &v, err, sizeof(err)), "negative");
	BAD(sim_parse_uint("", 10, &v, err, sizeof(err)), "empty");
	BAD(sim_parse_uint("12x", 100, &v, err, sizeof(err)), "'12x'");
	BAD(sim_parse_uint(" 12", 100, &v, err, sizeof(err)), "unsigned integer");
	BAD(sim_parse_uint("12 ", 100, &v, err, sizeof(err)), "unsigned integer");
	BAD(sim_parse_uint("+12", 100, &v, err, sizeof(err)), "unsigned integer");
	BAD(sim_parse_uint("0x", 100, &v, err, sizeof(err)), "unsigned integer");
	BAD(sim_parse_uint("1.5", 100, &v, err, sizeof(err)), "unsigned integer");
	BAD(sim_parse_u64(NULL, &v, err, sizeof(err)), "empty");
	CU_ASSERT_EQUAL(v, 7);	/* untouched by failures */
	/* no message buffer: still refuses, does not crash */
	CU_ASSERT_EQUAL(sim_parse_uint("x", 10, &v, NULL, 0), -1);
}

static void test_double(void)
{
	double v = 0;

	CU_ASSERT_EQUAL(sim_parse_double("2.5", &v, err, sizeof(err)), 0);
	CU_ASSERT_DOUBLE_EQUAL(v, 2.5, 1e-12);
	CU_ASSERT_EQUAL(sim_parse_double("1e3", &v, err, sizeof(err)), 0);
	CU_ASSERT_DOUBLE_EQUAL(v, 1000, 1e-9);
	CU_ASSERT_EQUAL(sim_parse_double("-0.25", &v, err, sizeof(err)), 0);
	CU_ASSERT_DOUBLE_EQUAL(v, -0.25, 1e-12);
	BAD(sim_parse_double("", &v, err, sizeof(err)), "empty");
	BAD(sim_parse_double("3m", &v, err, sizeof(err)), "'3m'");
	BAD(sim_parse_double(" 3", &v, err, sizeof(err)), "number");
	BAD(sim_parse_double("nan", &v, err, sizeof(err)), "finite");
	BAD(sim_parse_double("inf", &v, err, sizeof(err)), "finite");
	BAD(sim_parse_double("1e999", &v, err, sizeof(err)), "out of range");
}

static void size_is(const char *s, uint64_t want)
{
	uint64_t v = 0;
	int rc = sim_parse_size(s, &v, err, sizeof(err));

	if (rc || v != want)
		fprintf(stderr, "\n  size '%s': rc %d v %llu want %llu (%s)\n", s, rc,
			(unsigned long long)v, (unsigned long long)want, err);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_EQUAL(v, want);
}

static void test_size(void)
{
	uint64_t v;

	size_is("0", 0);
	size_is("4096", 4096);
	size_is("4096B", 4096);
	size_is("0x1000", 4096);
	size_is("1KB", 1000);
	size_is("1kB", 1000);
	size_is("1KiB", 1024);
	size_is("1kiB", 1024);	/* only the B must be upper case */
	size_is("1KIB", 1024);
	size_is("64K", 65536);	/* perftest: K = KiB */
	size_is("1M", 1048576);
	size_is("2G", 2147483648ULL);
	size_is("1MB", 1000000);
	size_is("1MiB", 1048576);
	size_is("1GB", 1000000000);
	size_is("1GiB", 1073741824);
	size_is("1TiB", 1099511627776ULL);
	size_is("1.5KiB", 1536);
	size_is("0.5MiB", 524288);
	size_is("2.50KB", 2500);

	BAD(sim_parse_size("0.1KiB", &v, err, sizeof(err)), "whole number of bytes");
	BAD(sim_parse_size("1.5", &v, err, sizeof(err)), "whole number of bytes");
	BAD(sim_parse_size("1Kb", &v, err, sizeof(err)), "bits");
	BAD(sim_parse_size("1Mb", &v, err, sizeof(err)), "bits");
	BAD(sim_parse_size("1kib", &v, err, sizeof(err)), "bits");
	BAD(sim_parse_size("1XB", &v, err, sizeof(err)), "unknown size unit 'XB'");
	BAD(sim_parse_size("1 KiB", &v, err, sizeof(err)), "unknown size unit");
	BAD(sim_parse_size("-1KiB", &v, err, sizeof(err)), "negative");
	BAD(sim_parse_size("", &v, err, sizeof(err)), "empty");
	BAD(sim_parse_size("KiB", &v, err, sizeof(err)), "expected a size");
	BAD(sim_parse_size("1.KiB", &v, err, sizeof(err)), "expected a size");
	BAD(sim_parse_size(".5KiB", &v, err, sizeof(err)), "expected a size");
	BAD(sim_parse_size("16777216TiB", &v, err, sizeof(err)), "too large");	/* 2^64 */
	BAD(sim_parse_size("99999999999999999999", &v, err, sizeof(err)), "too large");
	BAD(sim_parse_size("1KiBx", &v, err, sizeof(err)), "unknown size unit");
	BAD(sim_parse_size("1.0000000000000000001KiB", &v, err, sizeof(err)), "decimal places");
	size_is("16777215TiB", 16777215ULL << 40);
}

static void time_is(const char *s, sim_time_t want)
{
	sim_time_t v = 0;
	int rc = sim_parse_time_ps(s, &v, err, sizeof(err));

	if (rc || v != want)
		fprintf(stderr, "\n  time '%s': rc %d v %llu want %llu (%s)\n", s, rc,
			(unsigned long long)v, (unsigned long long)want, err);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_EQUAL(v, want);
}

static void test_time(void)
{
	sim_time_t v;

	time_is("0", 0);
	time_is("0ns", 0);
	time_is("7ps", 7);
	time_is("100ns", 100000);
	time_is("2.5us", 2500000);
	time_is("1ms", 1000000000ULL);
	time_is("3s", 3000000000000ULL);
	time_is("0.001ns", 1);
	time_is("18446744ms", 18446744ULL * 1000000000ULL);

	BAD(sim_parse_time_ps("100", &v, err, sizeof(err)), "expected a unit");
	BAD(sim_parse_time_ps("1.5", &v, err, sizeof(err)), "expected a unit");
	BAD(sim_parse_time_ps("1.5ps", &v, err, sizeof(err)), "whole number of picoseconds");
	BAD(sim_parse_time_ps("10sec", &v, err, sizeof(err)), "unknown time unit 'sec'");
	BAD(sim_parse_time_ps("10NS", &v, err, sizeof(err)), "unknown time unit");
	BAD(sim_parse_time_ps("-5ns", &v, err, sizeof(err)), "negative");
	BAD(sim_parse_time_ps("", &v, err, sizeof(err)), "empty");
	BAD(sim_parse_time_ps("ns", &v, err, sizeof(err)), "expected a time");
	BAD(sim_parse_time_ps("20000000s", &v, err, sizeof(err)), "too large");
	BAD(sim_parse_time_ps("5ns ", &v, err, sizeof(err)), "unknown time unit");
}

static void test_bool(void)
{
	static const char *const t[] = { "on", "true", "yes", "1", "ON", "True" };
	static const char *const f[] = { "off", "false", "no", "0", "OFF", "No" };
	bool v;

	for (size_t i = 0; i < SIM_ARRAY_SIZE(t); i++) {
		v = false;
		CU_ASSERT_EQUAL(sim_parse_bool(t[i], &v, err, sizeof(err)), 0);
		CU_ASSERT_TRUE(v);
		v = true;
		CU_ASSERT_EQUAL(sim_parse_bool(f[i], &v, err, sizeof(err)), 0);
		CU_ASSERT_FALSE(v);
	}
	BAD(sim_parse_bool("", &v, err, sizeof(err)), "empty");
	BAD(sim_parse_bool("2", &v, err, sizeof(err)), "'2'");
	BAD(sim_parse_bool("onn", &v, err, sizeof(err)), "on/off");
}

static void test_fmt_size(void)
{
	char buf[32];
	uint64_t back;

	CU_ASSERT_STRING_EQUAL(sim_fmt_size(32768, buf, sizeof(buf)), "32KiB");
	CU_ASSERT_STRING_EQUAL(sim_fmt_size(1000, buf, sizeof(buf)), "1000B");
	CU_ASSERT_STRING_EQUAL(sim_fmt_size(0, buf, sizeof(buf)), "0B");
	CU_ASSERT_STRING_EQUAL(sim_fmt_size(3ULL << 30, buf, sizeof(buf)), "3GiB");
	CU_ASSERT_STRING_EQUAL(sim_fmt_size(5ULL << 50, buf, sizeof(buf)), "5120TiB");
	/* round trip */
	for (uint64_t x = 1; x < (1ULL << 62); x = x * 3 + 64) {
		sim_fmt_size(x, buf, sizeof(buf));
		CU_ASSERT_EQUAL_FATAL(sim_parse_size(buf, &back, err, sizeof(err)), 0);
		CU_ASSERT_EQUAL(back, x);
	}
}

/* Name lists as messages print them, from the table that owns the names. */
static void test_fmt_names(void)
{
	static const char *const three[] = { "ib", "roce", "tcp", NULL };
	char buf[64], small[8];

	CU_ASSERT_STRING_EQUAL(sim_fmt_names(three, -1, buf, sizeof(buf)), "ib, roce or tcp");
	CU_ASSERT_STRING_EQUAL(sim_fmt_names(three, 2, buf, sizeof(buf)), "ib or roce");
	CU_ASSERT_STRING_EQUAL(sim_fmt_names(three, 1, buf, sizeof(buf)), "ib");
	CU_ASSERT_STRING_EQUAL(sim_fmt_names(three, 0, buf, sizeof(buf)), "");
	/* cut to the buffer, still a string */
	CU_ASSERT_STRING_EQUAL(sim_fmt_names(three, -1, small, sizeof(small)), "ib, roc");
}

static const struct test_case tests[] = {
	{ "name lists from their tables", test_fmt_names },
	{ "unsigned integers", test_uint },
	{ "doubles", test_double },
	{ "sizes with units", test_size },
	{ "times with units", test_time },
	{ "booleans", test_bool },
	{ "size formatting round-trips", test_fmt_size },
	{ NULL, NULL },
};

TEST_MAIN("parse", tests)
