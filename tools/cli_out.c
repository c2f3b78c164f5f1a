/* SPDX-License-Identifier: MIT */
/*
 * cli_out.c - output files that never destroy what is at their path
 * (cli_out.h has the rules).
 *
 * Why not rename() over whatever is there: as root, `--json /dev/null`
 * would replace the machine's /dev/null with a regular file; over a
 * symlink, the link itself would become a file and stop updating what it
 * points at; over a FIFO, the reader blocked on it would never be fed. So
 * the kind of file at the path is looked at first (lstat, following a
 * symlink chain by hand, at most 40 links as Linux's path walk allows), and
 * only a regular file, or nothing, is staged and renamed. rename(2) within
 * one directory is atomic (POSIX), which is why the temporary lives beside
 * the file it replaces.
 *
 * Left out: a staged file gets a new inode, so other hard links to the old
 * file keep the old contents (as with editors that save by rename); ACLs
 * and extended attributes are not copied.
 */
#define _GNU_SOURCE	/* asprintf */
#include "tools/cli_out.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SIG_MAX_PATHS	8	/* `ibfab run` stages five files at most */
#define SYMLINK_MAX	40	/* Linux's limit on links followed in one path walk */

static const int out_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE };
#define NSIGNALS	(int)(sizeof(out_signals) / sizeof(out_signals[0]))

/* What the handler removes: fixed arrays, so it needs no allocation. */
static char sig_paths[SIG_MAX_PATHS][PATH_MAX];
static char sig_dir[PATH_MAX];
static int sig_count;	/* staged files tracked; the handlers are in while > 0 */
static struct sigaction sig_old[NSIGNALS];

/* The handler must never see a half-copied name: hold the signals meanwhile. */
static void sig_hold(bool hold)
{
	sigset_t set;

	sigemptyset(&set);
	for (int i = 0; i < NSIGNALS; i++)
		sigaddset(&set, out_signals[i]);
	sigprocmask(hold ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
}

static void on_signal(int sig)
{
	for (int i = 0; i < SIG_MAX_PATHS; i++)
		if (sig_paths[i][0])
			unlink(sig_paths[i]);
	if (sig_dir[0])
		rmdir(sig_dir);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void sig_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < NSIGNALS; i++)
		sigaction(out_signals[i], &sa, &sig_old[i]);
}

static void sig_restore(void)
{
	for (int i = 0; i < NSIGNALS; i++)
		sigaction(out_signals[i], &sig_old[i], NULL);
}

/* With the signals held (sig_hold), so a file is never made untracked. */
static int sig_track(const char *tmp)
{
	if (strlen(tmp) >= PATH_MAX)
		return -1;
	for (int i = 0; i < SIG_MAX_PATHS; i++)
		if (!sig_paths[i][0]) {
			memcpy(sig_paths[i], tmp, strlen(tmp) + 1);
			if (sig_count++ == 0)
				sig_install();
			return 0;
		}
	return -1;
}

static void sig_untrack(const char *tmp)
{
	sig_hold(true);
	for (int i = 0; i < SIG_MAX_PATHS; i++)
		if (!strcmp(sig_paths[i], tmp)) {
			sig_paths[i][0] = 0;
			if (--sig_count == 0)
				sig_restore();
			break;
		}
	sig_hold(false);
}

int cli_out_mkdir(const char *dir, bool *created, struct sim_diag *d)
{
	struct stat st;
	int e = 0;

	*created = false;
	if (strlen(dir) >= sizeof(sig_dir))
		return sim_diag_set(d, dir, 0, 0, "the directory name is too long");
	sig_hold(true);	/* made and tracked at once, or neither */
	if (mkdir(dir, 0777) == 0) {
		*created = true;
		memcpy(sig_dir, dir, strlen(dir) + 1);
	} else {
		e = errno;
	}
	sig_hold(false);
	if (*created)
		return 0;
	if (e != EEXIST)
		return sim_diag_set(d, dir, 0, 0, "cannot create directory: %s", strerror(e));
	if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		return sim_diag_set(d, dir, 0, 0, "exists and is not a directory");
	return 0;
}

void cli_out_untrack_dir(void)
{
	sig_hold(true);
	sig_dir[0] = 0;
	sig_hold(false);
}

/*
 * Follow path's last component through symbolic links. *dest is what is
 * finally written (malloc'd), *st what lstat found there; *exists false if
 * nothing is (a new file, or a dangling link's target). 0, or -1 with d.
 */
static int resolve(const char *path, char **dest, struct stat *st, bool *exists,
		   struct sim_diag *d)
{
	char *cur = strdup(path);

	if (!cur)
		return sim_diag_set(d, path, 0, 0, "out of memory");
	for (int links = 0;; links++) {
		char buf[PATH_MAX];
		ssize_t n;

		if (lstat(cur, st)) {
			int e = errno;

			if (e == ENOENT) {
				*exists = false;
				*dest = cur;
				return 0;
			}
			free(cur);
			return sim_diag_set(d, path, 0, 0, "cannot write: %s", strerror(e));
		}
		if (!S_ISLNK(st->st_mode)) {
			*exists = true;
			*dest = cur;
			return 0;
		}
		if (links >= SYMLINK_MAX) {
			free(cur);
			return sim_diag_set(d, path, 0, 0, "cannot write: %s", strerror(ELOOP));
		}
		n = readlink(cur, buf, sizeof(buf) - 1);
		if (n < 0) {
			int e = errno;

			free(cur);
			return sim_diag_set(d, path, 0, 0, "cannot read the symbolic link: %s",
					    strerror(e));
		}
		buf[n] = 0;
		char *next;
		const char *slash = strrchr(cur, '/');

		/* a relative target is relative to the link's own directory */
		if (buf[0] == '/' || !slash)
			next = strdup(buf);
		else if (asprintf(&next, "%.*s/%s", (int)(slash - cur), cur, buf) < 0)
			next = NULL;
		free(cur);
		if (!next)
			return sim_diag_set(d, path, 0, 0, "out of memory");
		cur = next;
	}
}

/* Written in place: a character device or a FIFO. */
static int open_direct(struct cli_out *o, const struct stat *st, struct sim_diag *d)
{
	/* O_NONBLOCK: a FIFO nobody reads fails (ENXIO) instead of blocking */
	int fd = open(o->dest, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	if (fd < 0) {
		int e = errno;

		if (e == ENXIO && S_ISFIFO(st->st_mode))
			return sim_diag_set(d, o->path, 0, 0,
					    "is a FIFO that nobody reads: start its reader first");
		return sim_diag_set(d, o->path, 0, 0, "cannot open: %s", strerror(e));
	}
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0 || !(o->f = fdopen(fd, "w"))) {
		int e = errno;

		close(fd);
		return sim_diag_set(d, o->path, 0, 0, "cannot open: %s", strerror(e));
	}
	return 0;
}

/* Staged: a hidden temporary beside dest, with the mode the result keeps. */
static int open_staged(struct cli_out *o, const struct stat *st, bool exists,
		       struct sim_diag *d)
{
	const char *slash = strrchr(o->dest, '/');
	const char *base = slash ? slash + 1 : o->dest;
	int dirlen = slash ? (int)(slash - o->dest) : 0;
	mode_t mode;
	int fd;

	if (asprintf(&o->tmp, "%.*s%s.%s.ibfab-tmp-XXXXXX", dirlen, o->dest, slash ? "/" : "",
		     base) < 0) {
		o->tmp = NULL;
		return sim_diag_set(d, o->path, 0, 0, "out of memory");
	}
	sig_hold(true);	/* created and tracked at once, or neither */
	fd = mkstemp(o->tmp);
	if (fd >= 0 && sig_track(o->tmp)) {
		close(fd);
		unlink(o->tmp);
		sig_hold(false);
		free(o->tmp);
		o->tmp = NULL;
		return sim_diag_set(d, o->path, 0, 0, "too many output files at once");
	}
	sig_hold(false);
	if (fd < 0) {
		int e = errno;

		free(o->tmp);
		o->tmp = NULL;
		return sim_diag_set(d, o->path, 0, 0, "cannot create: %s", strerror(e));
	}
	o->tracked = true;
	if (exists) {
		/* the replacement keeps the old file's mode and owner (root may
		 * write a user's file; the user keeps it) */
		mode = st->st_mode & 07777;
		if (st->st_uid != geteuid() || st->st_gid != getegid()) {
			if (fchown(fd, st->st_uid, st->st_gid)) {
				/* not permitted: the file becomes ours, as any editor's */
			}
		}
	} else {
		/* mkstemp makes 0600; a new file gets the mode fopen() gives */
		mode_t mask = umask(0);

		umask(mask);
		mode = 0666 & ~mask;
	}
	if (fchmod(fd, mode) || !(o->f = fdopen(fd, "w"))) {
		int e = errno;

		close(fd);
		return sim_diag_set(d, o->path, 0, 0, "cannot open: %s", strerror(e));
	}
	return 0;
}

int cli_out_open(struct cli_out *o, const char *path, bool allow_std, struct sim_diag *d)
{
	const char *base = strrchr(path, '/');
	struct stat st;
	bool exists;
	int rc;

	memset(o, 0, sizeof(*o));
	if (!*path)
		return sim_diag_set(d, path, 0, 0, "expected a file name, got an empty one");
	if (allow_std && !strcmp(path, "-")) {
		o->std = true;
		o->f = stdout;
		return 0;
	}
	o->path = strdup(path);
	if (!o->path)
		return sim_diag_set(d, path, 0, 0, "out of memory");
	if (base && !base[1])
		return sim_diag_set(d, path, 0, 0, "expected a file name, not a directory");
	if (resolve(path, &o->dest, &st, &exists, d))
		return -1;
	if (!exists || S_ISREG(st.st_mode))
		rc = open_staged(o, &st, exists, d);
	else if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))
		rc = open_direct(o, &st, d);
	else if (S_ISDIR(st.st_mode))
		rc = sim_diag_set(d, path, 0, 0, "is a directory");
	else
		rc = sim_diag_set(d, path, 0, 0, "is a %s: expected a regular file, a character "
				  "device, a FIFO or '-'",
				  S_ISSOCK(st.st_mode) ? "socket" : S_ISBLK(st.st_mode) ?
				  "block device" : "special file");
	return rc;
}

const char *cli_out_file(const struct cli_out *o)
{
	return o->tmp ? o->tmp : o->dest;
}

int cli_out_close(struct cli_out *o, struct sim_diag *d)
{
	bool bad;
	int e = 0;

	if (!o->f)
		return 0;
	/* the flush's errno (ENOSPC, EPIPE) says most; an earlier failed
	 * write leaves only the error flag */
	bad = ferror(o->f) != 0;
	if (o->std ? fflush(o->f) : fclose(o->f)) {
		e = errno;
		bad = true;
	}
	o->f = NULL;
	if (bad)
		return sim_diag_set(d, o->std ? "<stdout>" : o->path, 0, 0, "write error%s%s",
				    e ? ": " : "", e ? strerror(e) : "");
	return 0;
}

int cli_out_commit(struct cli_out *o, struct sim_diag *d)
{
	if (!o->tmp)
		return 0;
	if (rename(o->tmp, o->dest))
		return sim_diag_set(d, o->path, 0, 0, "cannot put the new file in place: %s",
				    strerror(errno));
	if (o->tracked)
		sig_untrack(o->tmp);
	o->tracked = false;
	free(o->tmp);
	o->tmp = NULL;
	return 0;
}

void cli_out_free(struct cli_out *o)
{
	if (o->f && !o->std)
		fclose(o->f);
	if (o->tmp) {
		unlink(o->tmp);
		if (o->tracked)
			sig_untrack(o->tmp);
	}
	free(o->tmp);
	free(o->dest);
	free(o->path);
	memset(o, 0, sizeof(*o));
}

int cli_out_stdout_check(const char *prog)
{
	bool bad = ferror(stdout) != 0;
	int e = 0;

	if (fflush(stdout)) {
		e = errno;
		bad = true;
	}
	if (!bad)
		return 0;
	fprintf(stderr, "%s: standard output: write error%s%s\n", prog, e ? ": " : "",
		e ? strerror(e) : "");
	return -1;
}
