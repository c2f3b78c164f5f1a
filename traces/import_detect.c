/* SPDX-License-Identifier: MIT */
/*
 * import_detect.c - tell which importer reads a file, from its first bytes
 * (and, for htsim, its extension).
 *
 * Each format has a mark no other one shares:
 *   nccl-log    a line with "NCCL INFO " (every NCCL debug line has it);
 *   htsim       the first line is a .cm header line ("Nodes 16", or
 *               Connections, Triggers, Failures and a number), or the
 *               name ends in ".cm";
 *   nccl-tests  the first command line names an nccl-tests program
 *               ("..._perf", after VAR=value and an mpirun/srun launcher);
 *   hpcc        the first line is one number (the flow count) and the next
 *               has six fields, the first four integers (src dst pg dport
 *               size start: the importer checks the size and the time).
 * Only a bounded prefix is read, so detection stays cheap on a 256 MiB log.
 * The native format is recognised before this (trace_fmt_sniff()), so its
 * files never reach here. Anything else gives NULL: the caller then asks
 * for --trace-format.
 */
#include "traces/import.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

#define SNIFF_LOG	(4u << 20)	/* NCCL logs may open with pages of other output */
#define SNIFF_HEAD	(64u << 10)

struct line {
	const char *s, *e;
};

/* The next line that is not blank and not a '#' comment. */
static bool next_line(const char **p, const char *end, struct line *l)
{
	while (*p < end) {
		const char *s = *p, *e = memchr(s, '\n', (size_t)(end - s));

		if (!e)
			e = end;
		*p = e < end ? e + 1 : end;
		while (s < e && isspace((unsigned char)*s))
			s++;
		while (e > s && isspace((unsigned char)e[-1]))
			e--;
		if (s == e || *s == '#')
			continue;
		l->s = s;
		l->e = e;
		return true;
	}
	return false;
}

/* The next blank-separated word of a line. */
static bool word(const char **p, const char *e, const char **ws, size_t *wn)
{
	while (*p < e && (**p == ' ' || **p == '\t'))
		(*p)++;
	if (*p >= e)
		return false;
	*ws = *p;
	while (*p < e && **p != ' ' && **p != '\t')
		(*p)++;
	*wn = (size_t)(*p - *ws);
	return true;
}

static bool is_uint(const char *s, size_t n)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return false;
	return true;
}

static bool has_nccl_info(const char *text, size_t len)
{
	static const char pat[] = "NCCL INFO ";
	const char *p = text, *end = text + (len < SNIFF_LOG ? len : SNIFF_LOG);

	while ((p = memchr(p, 'N', (size_t)(end - p))) && (size_t)(end - p) >= sizeof(pat) - 1) {
		if (!memcmp(p, pat, sizeof(pat) - 1))
			return true;
		p++;
	}
	return false;
}

static bool is_htsim(const char *text, const char *end)
{
	struct line l;
	const char *p = text, *ws;
	size_t wn;

	if (!next_line(&p, end, &l))
		return false;
	p = l.s;
	if (!word(&p, l.e, &ws, &wn))
		return false;
	/* htsim reads its header lines in any order */
	if (!(wn == 5 && !memcmp(ws, "Nodes", 5)) && !(wn == 11 && !memcmp(ws, "Connections", 11)) &&
	    !(wn == 8 && !memcmp(ws, "Triggers", 8)) && !(wn == 8 && !memcmp(ws, "Failures", 8)))
		return false;
	return word(&p, l.e, &ws, &wn) && is_uint(ws, wn);
}

/* A word naming an nccl-tests program: [path/]name_perf[_mpi]. */
static bool is_prog(const char *s, size_t n)
{
	const char *b = s;

	for (size_t i = 0; i < n; i++)
		if (s[i] == '/')
			b = s + i + 1;
	n -= (size_t)(b - s);
	if (n > 4 && !memcmp(b + n - 4, "_mpi", 4))
		n -= 4;
	if (n <= 5 || memcmp(b + n - 5, "_perf", 5))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!islower((unsigned char)b[i]) && b[i] != '_')
			return false;
	return true;
}

/* The first command (lines joined by a trailing '\') names a program. */
static bool is_nccl_tests(const char *text, const char *end)
{
	struct line l;
	const char *p = text, *q, *ws;
	size_t wn;

	for (int lines = 0; lines < 16 && next_line(&p, end, &l); lines++) {
		bool more = l.e[-1] == '\\';

		q = l.s;
		while (word(&q, more ? l.e - 1 : l.e, &ws, &wn))
			if (is_prog(ws, wn))
				return true;
		if (!more)
			break;
	}
	return false;
}

static bool is_hpcc(const char *text, const char *end)
{
	struct line l;
	const char *p = text, *q, *ws;
	size_t wn;
	int n = 0;

	if (!next_line(&p, end, &l))
		return false;
	q = l.s;
	if (!word(&q, l.e, &ws, &wn) || !is_uint(ws, wn) || word(&q, l.e, &ws, &wn))
		return false;
	if (!next_line(&p, end, &l))
		return false;
	/* the shape, not the values: a size of -1000 or a time of nan is the
	 * importer's to name by field (file:line:col), not a reason to call
	 * the file unknown */
	q = l.s;
	while (word(&q, l.e, &ws, &wn)) {
		if (n < 4 && !is_uint(ws, wn))
			return false;
		n++;
	}
	return n == 6;
}

const char *import_detect(const char *path, const char *text, size_t len)
{
	const char *end = text + (len < SNIFF_HEAD ? len : SNIFF_HEAD);
	size_t pl = path ? strlen(path) : 0;

	if (!text)
		return NULL;
	if (has_nccl_info(text, len))
		return "nccl-log";
	if (is_htsim(text, end) || (pl > 3 && !strcmp(path + pl - 3, ".cm")))
		return "htsim";
	if (is_nccl_tests(text, end))
		return "nccl-tests";
	if (is_hpcc(text, end))
		return "hpcc";
	return NULL;
}
