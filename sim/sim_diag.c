/* SPDX-License-Identifier: MIT */
/* sim_diag.c - see sim_diag.h. */
#include "sim/sim_diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void sim_diag_clear(struct sim_diag *d)
{
	memset(d, 0, sizeof(*d));
}

int sim_diag_set(struct sim_diag *d, const char *file, int line, int col,
		 const char *fmt, ...)
{
	va_list ap;

	if (!d)
		return -1;
	snprintf(d->file, sizeof(d->file), "%s", file ? file : "");
	d->line = line;
	d->col = col;
	va_start(ap, fmt);
	vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
	va_end(ap);
	return -1;
}

void sim_diag_format(const struct sim_diag *d, char *buf, unsigned len)
{
	if (d->file[0] && d->line > 0 && d->col > 0)
		snprintf(buf, len, "%s:%d:%d: %s", d->file, d->line, d->col, d->msg);
	else if (d->file[0] && d->line > 0)
		snprintf(buf, len, "%s:%d: %s", d->file, d->line, d->msg);
	else if (d->file[0])
		snprintf(buf, len, "%s: %s", d->file, d->msg);
	else
		snprintf(buf, len, "%s", d->msg);
}
