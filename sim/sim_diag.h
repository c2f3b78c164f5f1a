/* SPDX-License-Identifier: MIT */
/*
 * sim_diag.h - diagnostics: library code never exits, it returns an error and
 * fills one of these (docs/architecture.md, "Errors"). Printed as "file:line:col: message", the
 * shape compilers use, so editors can jump to the spot.
 */
#ifndef IBFAB_SIM_DIAG_H
#define IBFAB_SIM_DIAG_H

struct sim_diag {
	char file[256];
	int line, col;		/* 0 when not known */
	char msg[768];
};

void sim_diag_clear(struct sim_diag *d);
/* Always returns -1 so callers can write `return sim_diag_set(...)`. */
int sim_diag_set(struct sim_diag *d, const char *file, int line, int col,
		 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* "file:line:col: msg" (parts that are unknown are left out). */
void sim_diag_format(const struct sim_diag *d, char *buf, unsigned len);

#endif
