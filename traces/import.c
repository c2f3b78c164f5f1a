/* SPDX-License-Identifier: MIT */
/*
 * import.c - the trace formats ibfab reads, one row each: the native
 * format (traces/trace_fmt.c) and the importers (import_*.c), each with
 * its loader and its detector; and the helpers the detectors share.
 *
 * A file's format is the first row whose detector recognises it, from its
 * name and a bounded prefix of its bytes (detection stays cheap on a
 * 256 MiB log); each format has a mark no other one shares (the
 * detectors' comments say which). Anything else: the caller asks for
 * --trace-format. A new importer is its own file and one row here.
 */
#include "traces/import.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

#include "sim/sim_parse.h"
#include "traces/trace_fmt.h"

const struct import_format import_formats[] = {
	{ "ibfab", "a native trace (first line 'ranks N', docs/trace-format.md)",
	  trace_fmt_load, trace_fmt_detect },
	{ "nccl-log", "an NCCL log (NCCL_DEBUG=INFO)", import_nccl_log, import_nccl_log_detect },
	{ "htsim", "an htsim connection matrix (.cm)", import_htsim, import_htsim_detect },
	{ "nccl-tests", "an nccl-tests command line", import_nccl_tests, import_nccl_tests_detect },
	{ "hpcc", "an HPCC flow file", import_hpcc, import_hpcc_detect },
	{ "chakra", "a Chakra execution trace (NAME.0.et, one file per rank)", import_chakra,
	  import_chakra_detect },
	{ NULL, NULL, NULL, NULL },
};

const struct import_format *import_format_find(const char *name)
{
	for (const struct import_format *f = import_formats; f->name; f++)
		if (!strcmp(f->name, name))
			return f;
	return NULL;
}

const char *import_detect(const char *path, const char *text, size_t len)
{
	if (!text)
		return NULL;
	for (const struct import_format *f = import_formats; f->name; f++)
		if (f->detect(path, text, len))
			return f->name;
	return NULL;
}

const char *import_format_names(char *buf, size_t len)
{
	const char *names[sizeof(import_formats) / sizeof(import_formats[0])];
	int n = 0;

	for (const struct import_format *f = import_formats; f->name; f++)
		names[n++] = f->name;
	return sim_fmt_names(names, n, buf, len);
}

const char *import_format_whats(char *buf, size_t len)
{
	const char *whats[sizeof(import_formats) / sizeof(import_formats[0])];
	int n = 0;

	for (const struct import_format *f = import_formats; f->name; f++)
		whats[n++] = f->what;
	return sim_fmt_names(whats, n, buf, len);
}

/* ---- what the detectors share ----------------------------------------- */

/* The next line that is not blank and not a '#' comment. */
bool import_next_line(const char **p, const char *end, struct import_line *l)
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
bool import_word(const char **p, const char *e, const char **ws, size_t *wn)
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

bool import_is_uint(const char *s, size_t n)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return false;
	return true;
}

