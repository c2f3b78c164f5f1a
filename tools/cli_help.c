/* SPDX-License-Identifier: MIT */
/*
 * cli_help.c - help text with its lists printed from their tables
 * (cli_help.h).
 */
#include "tools/cli_help.h"

#include <string.h>

#include "models/fabric/fab.h"
#include "models/sm/sm.h"
#include "sim/sim_parse.h"
#include "traces/import.h"

/* Join the fabric kinds' names with sep, the last with last. */
static void fabrics(FILE *out, const char *sep, const char *last)
{
	for (int i = 0; fab_fabric_names[i]; i++)
		fprintf(out, "%s%s", !i ? "" : !fab_fabric_names[i + 1] ? last : sep,
			fab_fabric_names[i]);
}

/* text from column col (the cursor's), its words wrapped before column
 * width onto lines indented to col; then a newline. */
static void wrap(FILE *out, const char *text, int col, int width)
{
	int at = col;

	while (*text) {
		const char *w = text;
		int n;

		while (*text && *text != ' ')
			text++;
		n = (int)(text - w);
		if (at > col && at + 1 + n > width) {
			fprintf(out, "\n%*s", col - 1, "");
			at = col;
		}
		fprintf(out, " %.*s", n, w);
		at += 1 + n;
		while (*text == ' ')
			text++;
	}
	fputc('\n', out);
}

static int mark(const char *m, size_t n, FILE *out)
{
	char buf[512];

#define IS(s) (n == sizeof(s) - 1 && !memcmp(m, s, n))
	if (IS("fabrics|")) {
		fabrics(out, "|", "|");
	} else if (IS("fabrics,")) {
		fabrics(out, ",", ",");
	} else if (IS("fabrics-and")) {
		fabrics(out, ", ", " and ");
	} else if (IS("fabric-lines")) {
		for (int i = 0; fab_fabric_names[i]; i++)
			fprintf(out, "  %-10s  %s\n", fab_fabric_names[i], fab_kinds[i].what);
	} else if (IS("engines")) {
		for (int i = 0; sm_engines[i]; i++)
			fprintf(out, "%s%s%s", !i ? "" : !sm_engines[i + 1] ? " or " : ", ",
				sm_engines[i]->name, !i ? " (default)" : "");
	} else if (IS("engine-lines")) {
		for (int i = 0; sm_engines[i]; i++) {
			fprintf(out, "%23s%-7s", "", sm_engines[i]->name);
			wrap(out, sm_engines[i]->help, 31, 79);
		}
	} else if (IS("trace-formats")) {
		fputs(import_format_names(buf, sizeof(buf)), out);
	} else {
		return -1;
	}
#undef IS
	return 0;
}

void cli_help_put(const char *text, FILE *out)
{
	const char *p = text, *a, *b;

	while ((a = strchr(p, '@')) && (b = strchr(a + 1, '@'))) {
		fwrite(p, 1, (size_t)(a - p), out);
		if (mark(a + 1, (size_t)(b - a - 1), out)) {
			fputc('@', out);	/* not a mark: the '@' as it is, and on */
			p = a + 1;
		} else {
			p = b + 1;
		}
	}
	fputs(p, out);
}
