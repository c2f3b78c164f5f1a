/* SPDX-License-Identifier: MIT */
/*
 * sim_parse.c - strict value parsers; see sim_parse.h.
 *
 * strtoull() is not used for unsigned values: it skips blanks, accepts a
 * sign and turns "-1" into 18446744073709551615 without complaint, which is
 * how a typo becomes an 18-exabyte buffer. Digits are accumulated by hand
 * with an overflow check instead. Sizes and times share one fixed-point
 * reader: an integer part (u64) and up to 18 fraction digits, scaled by the
 * unit in 128-bit arithmetic, so "1.5KiB" is exactly 1536 and "0.1KiB"
 * (102.4 bytes) is refused rather than rounded.
 */
#include "sim/sim_parse.h"

#include "sim/sim.h"
#include "sim/sim_mem.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* Common refusals shared by every unsigned parser; 0 if none applies. */
static int refuse_common(const char *s, const char *what, char *err, size_t errlen)
{
	if (!s || !*s)
		return fail(err, errlen, "empty value (expected %s)", what);
	if (*s == '-')
		return fail(err, errlen, "negative values are not allowed, got '%s'", s);
	if (!isdigit((unsigned char)*s))
		return fail(err, errlen, "expected %s, got '%s'", what, s);
	return 0;
}

/* Accumulate decimal digits into *v; -1 on overflow. Advances *pp. */
static int read_dec(const char **pp, uint64_t *v, int *ndigits)
{
	const char *p = *pp;
	uint64_t x = 0;
	int n = 0;

	while (isdigit((unsigned char)*p)) {
		unsigned d = (unsigned)(*p - '0');

		if (x > (UINT64_MAX - d) / 10)
			return -1;
		x = x * 10 + d;
		p++;
		n++;
	}
	*pp = p;
	*v = x;
	*ndigits = n;
	return 0;
}

int sim_parse_uint(const char *s, uint64_t max, uint64_t *out, char *err, size_t errlen)
{
	const char *what = "an unsigned integer";
	const char *p;
	uint64_t x = 0;
	int n = 0;

	if (refuse_common(s, what, err, errlen))
		return -1;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		for (p = s + 2; isxdigit((unsigned char)*p); p++, n++) {
			unsigned d = isdigit((unsigned char)*p) ? (unsigned)(*p - '0') :
				     (unsigned)(tolower((unsigned char)*p) - 'a' + 10);

			if (x > (UINT64_MAX >> 4))
				return fail(err, errlen, "'%s' is too large (at most %llu)",
					    s, (unsigned long long)max);
			x = x << 4 | d;
		}
	} else {
		p = s;
		if (read_dec(&p, &x, &n))
			return fail(err, errlen, "'%s' is too large (at most %llu)", s,
				    (unsigned long long)max);
	}
	if (!n || *p)
		return fail(err, errlen, "expected %s, got '%s'", what, s);
	if (x > max)
		return fail(err, errlen, "'%s' is too large (at most %llu)", s,
			    (unsigned long long)max);
	*out = x;
	return 0;
}

int sim_parse_double(const char *s, double *out, char *err, size_t errlen)
{
	char *end;
	double v;

	if (!s || !*s)
		return fail(err, errlen, "empty value (expected a number)");
	if (isspace((unsigned char)*s))
		return fail(err, errlen, "expected a number, got '%s'", s);
	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end)
		return fail(err, errlen, "expected a number, got '%s'", s);
	if (!isfinite(v))
		return errno == ERANGE ?
			fail(err, errlen, "'%s' is out of range", s) :
			fail(err, errlen, "expected a finite number, got '%s'", s);
	*out = v;
	return 0;
}

/* A decimal number "INT[.FRAC]" held exactly: ip + fp / 10^fdigits. */
struct fixed {
	uint64_t ip;		/* integer part */
	uint64_t fp;		/* fraction digits as an integer */
	int fdigits;		/* how many fraction digits (trailing zeros dropped) */
	int idigits;		/* how many integer digits */
};

/* 10^18 < 2^64 holds the fraction; times a unit (<= 2^40) it fits in u128. */
#define MAX_FRAC_DIGITS 18

/*
 * Read "INT[.FRAC]" (digits on both sides of the point) into *f. *pp is
 * left at the first character after the number: the unit. Returns 0, or
 * -1 with err filled.
 */
static int read_fixed(const char *s, const char **pp, struct fixed *f,
		      const char *what, char *err, size_t errlen)
{
	const char *p = s;

	memset(f, 0, sizeof(*f));
	if (read_dec(&p, &f->ip, &f->idigits))
		return fail(err, errlen, "'%s' is too large", s);
	if (!f->idigits)
		return fail(err, errlen, "expected %s, got '%s'", what, s);
	if (*p == '.') {
		const char *q = ++p, *e;

		while (isdigit((unsigned char)*q))
			q++;
		if (q == p)	/* "1." or "1.KiB": digits on both sides */
			return fail(err, errlen, "expected %s, got '%s'", what, s);
		/* Trailing zeros add nothing; drop them before counting. */
		for (e = q; e > p && e[-1] == '0'; e--)
			;
		if (e - p > MAX_FRAC_DIGITS)
			return fail(err, errlen, "'%s' has too many decimal places", s);
		for (const char *c = p; c < e; c++) {
			f->fp = f->fp * 10 + (uint64_t)(*c - '0');
			f->fdigits++;
		}
		p = q;
	}
	*pp = p;
	return 0;
}

/* f * mult exactly, or -1 (not whole: *notwhole = 1; too large: 0). */
static int scale_fixed(const struct fixed *f, uint64_t mult, uint64_t *out, int *notwhole)
{
	unsigned __int128 pow10 = 1, v, frac;

	*notwhole = 0;
	for (int i = 0; i < f->fdigits; i++)
		pow10 *= 10;
	frac = (unsigned __int128)f->fp * mult;
	if (frac % pow10) {
		*notwhole = 1;
		return -1;
	}
	v = (unsigned __int128)f->ip * mult + frac / pow10;
	if (v > UINT64_MAX)
		return -1;
	*out = (uint64_t)v;
	return 0;
}

struct unit {
	const char *name;
	uint64_t mult;
};

#define KI 1024ULL
#define KD 1000ULL

static const struct unit size_units[] = {
	{ "B", 1 },
	{ "KB", KD }, { "MB", KD * KD }, { "GB", KD * KD * KD }, { "TB", KD * KD * KD * KD },
	{ "KiB", KI }, { "MiB", KI * KI }, { "GiB", KI * KI * KI }, { "TiB", KI * KI * KI * KI },
	{ "K", KI }, { "M", KI * KI }, { "G", KI * KI * KI }, { "T", KI * KI * KI * KI },
};

/* Prefix letters compare case-insensitively; the final B must match exactly. */
static int size_unit_eq(const char *u, const char *name)
{
	size_t n = strlen(name);

	if (strlen(u) != n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (name[i] == 'B') {
			if (u[i] != 'B')
				return 0;
		} else if (tolower((unsigned char)u[i]) != tolower((unsigned char)name[i])) {
			return 0;
		}
	}
	return 1;
}

int sim_parse_size(const char *s, uint64_t *bytes, char *err, size_t errlen)
{
	const char *what = "a size such as 4096, 64KiB or 1MB";
	const char *u;
	struct fixed f;
	uint64_t mult = 0;
	int notwhole;

	if (refuse_common(s, what, err, errlen))
		return -1;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))	/* bare hex bytes only */
		return sim_parse_uint(s, UINT64_MAX, bytes, err, errlen);
	if (read_fixed(s, &u, &f, what, err, errlen))
		return -1;
	if (!*u) {
		mult = 1;
	} else {
		for (size_t i = 0; i < SIM_ARRAY_SIZE(size_units); i++)
			if (size_unit_eq(u, size_units[i].name))
				mult = size_units[i].mult;
		if (!mult) {
			size_t n = strlen(u);

			if (n && u[n - 1] == 'b')
				return fail(err, errlen,
					    "'%s': unit '%s' reads as bits; use B for bytes (KB = 1000, KiB = 1024)",
					    s, u);
			return fail(err, errlen,
				    "'%s': unknown size unit '%s' (B, KB, MB, GB, KiB, MiB, GiB, or K, M, G for KiB, MiB, GiB)",
				    s, u);
		}
	}
	if (scale_fixed(&f, mult, bytes, &notwhole))
		return notwhole ?
			fail(err, errlen, "'%s' is not a whole number of bytes", s) :
			fail(err, errlen, "'%s' is too large", s);
	return 0;
}

static const struct unit time_units[] = {
	{ "ps", 1 }, { "ns", SIM_NS }, { "us", SIM_US }, { "ms", SIM_MS }, { "s", SIM_S },
};

int sim_parse_time_ps(const char *s, sim_time_t *ps, char *err, size_t errlen)
{
	const char *what = "a time such as 100ns, 2.5us or 1ms";
	const char *u;
	struct fixed f;
	uint64_t mult = 0, v;
	int notwhole;

	if (refuse_common(s, what, err, errlen))
		return -1;
	if (read_fixed(s, &u, &f, what, err, errlen))
		return -1;
	if (!*u) {
		if (!f.ip && !f.fp) {	/* 0 is 0 in every unit */
			*ps = 0;
			return 0;
		}
		return fail(err, errlen, "'%s': expected a unit (ps, ns, us, ms or s)", s);
	}
	for (size_t i = 0; i < SIM_ARRAY_SIZE(time_units); i++)
		if (!strcmp(u, time_units[i].name))
			mult = time_units[i].mult;
	if (!mult)
		return fail(err, errlen, "'%s': unknown time unit '%s' (ps, ns, us, ms or s)", s, u);
	if (scale_fixed(&f, mult, &v, &notwhole))
		return notwhole ?
			fail(err, errlen, "'%s' is not a whole number of picoseconds", s) :
			fail(err, errlen, "'%s' is too large (at most about 213 days in ps)", s);
	*ps = v;
	return 0;
}

int sim_parse_bool(const char *s, bool *out, char *err, size_t errlen)
{
	static const char *const yes[] = { "on", "true", "yes", "1" };
	static const char *const no[] = { "off", "false", "no", "0" };

	if (!s || !*s)
		return fail(err, errlen, "empty value (expected on/off, true/false, yes/no or 1/0)");
	for (size_t i = 0; i < SIM_ARRAY_SIZE(yes); i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*out = false;
			return 0;
		}
	}
	return fail(err, errlen, "expected on/off, true/false, yes/no or 1/0, got '%s'", s);
}

const char *sim_fmt_mem(uint64_t b, char *buf, size_t len)
{
	if (b >= (1ULL << 30))
		snprintf(buf, len, "%.1f GiB", (double)b / (double)(1ULL << 30));
	else
		snprintf(buf, len, "%.1f MiB", (double)b / (double)(1ULL << 20));
	return buf;
}

const char *sim_fmt_size(uint64_t bytes, char *buf, size_t len)
{
	static const char *const names[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	unsigned i = 0;

	while (bytes && i + 1 < SIM_ARRAY_SIZE(names) && !(bytes % 1024)) {
		bytes /= 1024;
		i++;
	}
	snprintf(buf, len, "%llu%s", (unsigned long long)bytes, names[i]);
	return buf;
}

const char *sim_fmt_names(const char *const *names, int n, char *buf, size_t len)
{
	size_t off = 0;
	int count = 0;

	while (n < 0 ? names[count] != NULL : count < n)
		count++;
	buf[0] = 0;
	for (int i = 0; i < count; i++)
		sim_append(buf, len, &off, "%s%s", !i ? "" : i == count - 1 ? " or " : ", ",
			   names[i]);
	return buf;
}

void sim_append(char *buf, size_t len, size_t *off, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*off >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *off, len - *off, fmt, ap);
	va_end(ap);
	if (n > 0)
		*off += (size_t)n;
}

/*
 * A non-negative decimal ("2", "2.000001", "1e-06") times 10^scale, rounded
 * to the nearest integer, in integer arithmetic: 0, -1 (not a number of
 * that shape), -2 (too large for 64 bits).
 */
int sim_parse_dec_scaled(const char *s, size_t n, int scale, uint64_t *out)
{
	uint64_t m = 0;
	long e10 = scale;
	size_t i = 0;
	bool any = false;

	for (; i < n && isdigit((unsigned char)s[i]); i++, any = true) {
		if (m <= (UINT64_MAX - 9) / 10)
			m = m * 10 + (uint64_t)(s[i] - '0');
		else
			e10++;
	}
	if (i < n && s[i] == '.') {
		for (i++; i < n && isdigit((unsigned char)s[i]); i++, any = true) {
			if (m <= (UINT64_MAX - 9) / 10) {
				m = m * 10 + (uint64_t)(s[i] - '0');
				e10--;
			}
		}
	}
	if (!any)
		return -1;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		long ev = 0, sign = 1;
		bool ed = false;

		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			sign = s[i++] == '-' ? -1 : 1;
		for (; i < n && isdigit((unsigned char)s[i]); i++, ed = true)
			if (ev < 100000)
				ev = ev * 10 + (s[i] - '0');
		if (!ed)
			return -1;
		e10 += sign * ev;
	}
	if (i != n)
		return -1;
	if (!m) {
		*out = 0;
		return 0;
	}
	for (; e10 > 0; e10--) {
		if (m > UINT64_MAX / 10)
			return -2;
		m *= 10;
	}
	if (e10 < -19) {
		*out = 0;
		return 0;
	}
	if (e10 < 0) {
		uint64_t p = 1, r;

		for (; e10 < 0; e10++)
			p *= 10;
		r = m % p;
		m = m / p + (r >= p - r);
	}
	*out = m;
	return 0;
}

/* Levenshtein distance, case-insensitive, for "did you mean"; names are short. */
unsigned sim_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned row[64], prev;

	if (la >= SIM_ARRAY_SIZE(row) || lb >= SIM_ARRAY_SIZE(row))
		return 99;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned cur = row[j];
			unsigned sub = prev + (tolower((unsigned char)a[i - 1]) !=
					       tolower((unsigned char)b[j - 1]));
			unsigned del = row[j] + 1, ins = row[j - 1] + 1;

			row[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
			prev = cur;
		}
	}
	return row[lb];
}

/* Grow *arr (of *cap elements of sz bytes) to hold `need`, doubling. 0 or -1. */
/* Grow *arr (of *cap elements of size `sz`) to hold `need`; 0 or -1. */
int sim_grow(void **arr, size_t *cap, size_t need, size_t sz)
{
	size_t n = *cap ? *cap : 16;
	void *p;

	if (need <= *cap)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 2 / sz)
			return -1;
		n *= 2;
	}
	p = sim_mem_realloc(*arr, n * sz);
	if (!p)
		return -1;
	*arr = p;
	*cap = n;
	return 0;
}

int sim_parse_ns(const char *v, uint64_t *ns, char *err, size_t errlen)
{
	sim_time_t ps;
	size_t i;

	for (i = 0; v[i] && isdigit((unsigned char)v[i]); i++)
		;
	if (i && !v[i])
		return sim_parse_u64(v, ns, err, errlen);
	if (sim_parse_time_ps(v, &ps, err, errlen))
		return -1;
	if (ps % SIM_NS) {
		snprintf(err, errlen, "'%s' is not a whole number of nanoseconds", v);
		return -1;
	}
	*ns = ps / SIM_NS;
	return 0;
}

const char *sim_quote(const char *s, size_t n, size_t cut, char *buf, size_t len)
{
	size_t k = 0;

	buf[k++] = '\'';
	for (size_t i = 0; i < n && k + 8 < len; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (i == cut) {
			k += (size_t)snprintf(buf + k, len - k, "...");
			break;
		}
		if (ch < 0x20 || ch >= 0x7f)
			k += (size_t)snprintf(buf + k, len - k, "\\x%02x", ch);
		else
			buf[k++] = (char)ch;
	}
	snprintf(buf + k, len - k, "'");
	return buf;
}
