/* SPDX-License-Identifier: MIT */
/*
 * checks.h - what the shim test programs that print a line per check share
 * (shim_tsc.c, shim_computes.c): the check itself, counting failures for
 * the exit status, and the time-stamp counter read inline, as perftest and
 * UCX read it (the shim finds and emulates such rdtsc instructions).
 */
#ifndef IBFAB_TESTS_SHIM_CHECKS_H
#define IBFAB_TESTS_SHIM_CHECKS_H

#include <stdint.h>
#include <stdio.h>

static int failures;

static inline void check(int ok, const char *what)
{
	printf("%s: %s\n", ok ? "ok" : "FAIL", what);
	failures += !ok;
}

static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

#endif
