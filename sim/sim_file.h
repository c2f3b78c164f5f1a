/* SPDX-License-Identifier: MIT */
/*
 * sim_file.h - reading a whole input file: topologies, forwarding-table
 * dumps, traces and the files they include all come through here.
 *
 * An input is read whole into memory, with a size limit that the caller
 * names, so that a typo (a disk image, /dev/zero) is refused rather than
 * read until memory runs out. A named pipe (FIFO) is read without ever
 * blocking for a writer that is not there: open(2) on a FIFO waits for a
 * writer (POSIX open(), O_NONBLOCK), so the file is opened non-blocking and
 * a FIFO with no writer is refused at once; one with a writer (a process
 * substitution such as --topo <(ibnetdiscover)) is read to its end. A
 * directory is refused by name.
 */
#ifndef IBFAB_SIM_FILE_H
#define IBFAB_SIM_FILE_H

#include <stddef.h>

/* "a FIFO with no writer": no errno says that, so one of ours */
#define SIM_ENOWRITER (-1000)

/*
 * Read path whole into a malloc'd, NUL-terminated buffer (*len bytes
 * without the NUL). 0, or an errno value (EISDIR, EFBIG past `max` bytes,
 * ENOMEM, open's and read's), or SIM_ENOWRITER; *buf is NULL on failure.
 */
int sim_read_file(const char *path, size_t max, char **buf, size_t *len);

/* sim_read_file's error in words: "cannot open: No such file or
 * directory", "cannot read: a FIFO with no writer, nothing to read",
 * "cannot read: larger than 256MiB, ...". Returns buf. */
const char *sim_read_error(int err, size_t max, char *buf, size_t len);

#endif
