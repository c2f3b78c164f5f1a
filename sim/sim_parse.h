/* SPDX-License-Identifier: MIT */
/*
 * sim_parse.h - strict parsers for the values users type: integers, reals,
 * sizes with units, times with units, booleans.
 *
 * Every parser takes the whole string: no leading or trailing blanks, no
 * trailing junk, no sign on unsigned values, no silent wrap on overflow.
 * Each returns 0 and stores the value, or -1 with a one-line message in the
 * caller's buffer (the caller prefixes the key or file position). The
 * message quotes the offending text, e.g. "expected a size such as 4096,
 * 64KiB or 1MB, got '12XB'".
 */
#ifndef IBFAB_SIM_PARSE_H
#define IBFAB_SIM_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/sim.h"

/* Decimal ("4096") or hex ("0x1000") unsigned integer, at most `max`. */
int sim_parse_uint(const char *s, uint64_t max, uint64_t *out, char *err, size_t errlen);
static inline int sim_parse_u64(const char *s, uint64_t *out, char *err, size_t errlen)
{
	return sim_parse_uint(s, UINT64_MAX, out, err, errlen);
}

/* A finite real ("2.5", "1e3", "-0.5"); NaN and infinities are refused. */
int sim_parse_double(const char *s, double *out, char *err, size_t errlen);

/*
 * A size in bytes. A bare number is bytes. Units: B; KB MB GB TB (powers of
 * 1000); KiB MiB GiB TiB (powers of 1024); K M G T alone mean KiB MiB GiB
 * TiB, as perftest's -s and most HPC tools read them. The prefix letter and
 * the 'i' may be either case, but the B must be upper case: "Kb" reads as
 * kilobits and is refused rather than guessed. A decimal fraction is allowed
 * when the result is a whole number of bytes ("1.5KiB" = 1536).
 */
int sim_parse_size(const char *s, uint64_t *bytes, char *err, size_t errlen);

/*
 * A time into picoseconds: a number followed by ps, ns, us, ms or s
 * ("1.5us" = 1500000). A bare number is refused ("expected a unit"), except
 * 0, which means the same in every unit. Fractions must come to whole ps.
 */
int sim_parse_time_ps(const char *s, sim_time_t *ps, char *err, size_t errlen);

/* on/off, true/false, yes/no, 1/0 (case-insensitive). */
int sim_parse_bool(const char *s, bool *out, char *err, size_t errlen);

/*
 * Format bytes in the largest binary unit that divides them exactly
 * ("32KiB", "4096B" -> "4KiB", "1000B"), so the text parses back to the
 * same number with sim_parse_size().
 */
const char *sim_fmt_size(uint64_t bytes, char *buf, size_t len);
/* An amount of memory for a message, to a tenth: "54.9 MiB", "10.7 GiB". */
const char *sim_fmt_mem(uint64_t bytes, char *buf, size_t len);
/* The first n names (n < 0: up to a NULL) as a message lists them: "a",
 * "a or b", "a, b or c". Messages print the table that owns the names
 * rather than a copy typed beside it. Returns buf. */
const char *sim_fmt_names(const char *const *names, int n, char *buf, size_t len);

/* A duration in whole nanoseconds: a bare number ("500") is nanoseconds,
 * else a time with a unit ("0.5us"); a fraction of a nanosecond is refused. */
int sim_parse_ns(const char *v, uint64_t *ns, char *err, size_t errlen);
/* s[0..n) quoted for a message: '...', non-printable bytes as \xNN, cut
 * with "..." after `cut` characters. Returns buf. */
const char *sim_quote(const char *s, size_t n, size_t cut, char *buf, size_t len);
/* A non-negative decimal ("2", "2.000001", "1e-06") of n chars times
 * 10^scale, rounded to the nearest integer, in integer arithmetic: 0, -1
 * (not a number of that shape), -2 (too large for 64 bits). */
int sim_parse_dec_scaled(const char *s, size_t n, int scale, uint64_t *out);
/* Case-insensitive Levenshtein distance (names up to 63 chars, else 99):
 * for "did you mean". */
unsigned sim_edit_distance(const char *a, const char *b);
/* Grow *arr (*cap elements of sz bytes) to hold at least `need`, doubling
 * from 16. 0, or -1 (overflow, out of memory; *arr unchanged). */
int sim_grow(void **arr, size_t *cap, size_t need, size_t sz);

/* snprintf at buf + *off, advancing *off, never past len: output that does
 * not fit is cut, never overrun (for building messages piece by piece). */
void sim_append(char *buf, size_t len, size_t *off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
