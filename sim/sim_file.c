/* SPDX-License-Identifier: MIT */
/* sim_file.c - reading a whole input file without blocking on a FIFO that
 * has no writer; see sim_file.h. */
#include "sim/sim_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/sim_parse.h"

static int blocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0 ? errno : 0;
}

/*
 * A FIFO is opened without blocking: a first read of 0 bytes means nobody
 * has it open for writing (POSIX read(): end of file); EAGAIN or data means
 * a writer does, and from then on it is read as any pipe, waiting for it.
 */
static int read_all(int fd, size_t max, char **buf, size_t *len, int fifo)
{
	size_t cap = 65536 < max + 1 ? 65536 : max + 1, n = 0;
	char *b = malloc(cap + 1), *nb;
	int err = 0;

	if (!b)
		return ENOMEM;
	for (;;) {
		ssize_t got;

		if (n == cap) {
			if (n > max) {
				err = EFBIG;
				break;
			}
			cap = cap > (max + 1) / 2 ? max + 1 : cap * 2;
			nb = realloc(b, cap + 1);
			if (!nb) {
				err = ENOMEM;
				break;
			}
			b = nb;
		}
		got = read(fd, b + n, cap - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (fifo && (got > 0 || (got < 0 && errno == EAGAIN))) {
			fifo = 0;	/* a writer: wait for it from now on */
			err = blocking(fd);
			if (err)
				break;
			if (got < 0)
				continue;
		}
		if (got < 0) {
			err = errno;
			break;
		}
		if (!got) {
			if (fifo) {	/* end of file at once: no writer */
				err = SIM_ENOWRITER;
				break;
			}
			b[n] = 0;
			*buf = b;
			*len = n;
			return 0;
		}
		n += (size_t)got;
	}
	free(b);
	return err;
}

int sim_read_file(const char *path, size_t max, char **buf, size_t *len)
{
	struct stat st;
	int fd, err;

	*buf = NULL;
	*len = 0;
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (fstat(fd, &st))
		err = errno;
	else if (S_ISDIR(st.st_mode))
		err = EISDIR;
	else if (S_ISFIFO(st.st_mode))
		err = read_all(fd, max, buf, len, 1);
	else	/* a regular file or a terminal: ordinary blocking reads */
		err = (err = blocking(fd)) ? err : read_all(fd, max, buf, len, 0);
	close(fd);
	return err;
}

const char *sim_read_error(int err, size_t max, char *buf, size_t len)
{
	char sz[32];

	if (err == SIM_ENOWRITER)
		snprintf(buf, len, "cannot read: a FIFO with no writer, nothing to read");
	else if (err == EFBIG)
		snprintf(buf, len, "cannot read: larger than %s, the most an input may be",
			 sim_fmt_size(max, sz, sizeof(sz)));
	else if (err == EISDIR)
		snprintf(buf, len, "cannot read: a directory, not a file");
	else if (err == ENOMEM || err == EIO)
		snprintf(buf, len, "cannot read: %s", strerror(err));
	else	/* what open(2) said */
		snprintf(buf, len, "cannot open: %s", strerror(err));
	return buf;
}
