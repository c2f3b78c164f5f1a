/* SPDX-License-Identifier: MIT */
/*
 * cli_out.h - the one way a command writes an output file (--json, --csv,
 * --timeline, --plot, `topo dot -o`, `topo route --lft-out`).
 *
 * What is at the path decides how it is written:
 *
 *   "-"                   standard output (where the option allows it);
 *   nothing, or a regular file
 *                         staged: written under a hidden temporary name in
 *                         the same directory and renamed over the path by
 *                         cli_out_commit(), so a reader sees the old file or
 *                         the whole new one, never a part; an existing
 *                         file's mode (and, where permitted, owner) is kept;
 *   a character device or a FIFO
 *                         written in place (/dev/null, /dev/stdout, a pipe
 *                         a reader waits on): never replaced. A FIFO with no
 *                         reader is an error, not a wait for ever;
 *   a symbolic link       followed, to the end of its chain: what it points
 *                         at is written by the rules above and the link
 *                         keeps pointing there (results/latest.json ->
 *                         run42.json updates run42.json). A dangling link
 *                         creates its target;
 *   a directory, a socket or a block device
 *                         refused.
 *
 * Every write, flush and close is checked (cli_out_close), standard output
 * included. While staged files exist, SIGINT, SIGTERM, SIGHUP, SIGQUIT and
 * SIGPIPE remove them (and a directory registered with cli_out_track_dir)
 * before the process ends as the signal would have ended it. A staged file
 * is created and registered with the signals held, so no signal falls
 * between the two.
 */
#ifndef IBFAB_CLI_OUT_H
#define IBFAB_CLI_OUT_H

#include <stdbool.h>
#include <stdio.h>

#include "sim/sim_diag.h"

struct cli_out {
	char *path;	/* as given: what messages name */
	char *dest;	/* what is written: path, or the end of its symlink chain */
	char *tmp;	/* the staged name beside dest; NULL when written in place */
	FILE *f;	/* NULL until opened, and after cli_out_close */
	bool std;	/* "-": standard output */
	bool tracked;	/* counted by the signal handlers */
};

/* Open path for writing ("-" is standard output only if allow_std). 0, or
 * -1 with d filled and nothing created. */
int cli_out_open(struct cli_out *o, const char *path, bool allow_std, struct sim_diag *d);
/* The name another program may write instead of o->f (Graphviz's -o):
 * the staged file, or the device or FIFO itself. */
const char *cli_out_file(const struct cli_out *o);
/* Flush and close (standard output is flushed, not closed): 0, or -1 with
 * d filled when anything written was lost. */
int cli_out_close(struct cli_out *o, struct sim_diag *d);
/* Put a staged file in place (after every output of the command is
 * complete); nothing for the others. */
int cli_out_commit(struct cli_out *o, struct sim_diag *d);
/* Remove what is left of a staged file (nothing after a commit) and free. */
void cli_out_free(struct cli_out *o);

/* A directory for a command's outputs (--csv DIR): made if missing, and
 * then removed (if still empty) on a signal until cli_out_untrack_dir().
 * *created says whether it was made. 0, or -1 with d filled. */
int cli_out_mkdir(const char *dir, bool *created, struct sim_diag *d);
void cli_out_untrack_dir(void);

/* Standard output at the end of a command: flushed and checked. 0, or -1
 * after saying "<prog>: standard output: ..." on stderr. */
int cli_out_stdout_check(const char *prog);

#endif
