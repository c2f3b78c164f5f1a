/* SPDX-License-Identifier: MIT */
/*
 * replay.c - a main() for the fuzz harnesses where there is no libFuzzer
 * (gcc, CI): runs LLVMFuzzerTestOneInput once on every file named, or on
 * every file in every directory named, in name order. ctest runs each
 * harness over its corpus (tests/fuzz/corpus/NAME: seeds, and the inputs
 * that once crashed or stalled it), so those stay fixed under the plain
 * and the sanitizer builds. Exits 0 when all ran; a crash is the failure.
 */
#include "tests/fuzz/fuzz.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sim/sim_diag.h"
#include "traces/trace_fmt.h"

static int one(const char *path)
{
	struct sim_diag d;
	char *buf;
	size_t n;

	if (trace_read_file(path, &buf, &n, &d)) {
		fprintf(stderr, "%s\n", d.msg);
		return -1;
	}
	LLVMFuzzerTestOneInput((const uint8_t *)buf, n);
	free(buf);
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int dir(const char *path, unsigned *count)
{
	DIR *d = opendir(path);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0;
	int rc = 0;

	if (!d) {
		perror(path);
		return -1;
	}
	while ((e = readdir(d))) {
		char **nn;

		if (e->d_name[0] == '.')
			continue;
		nn = realloc(names, (n + 1) * sizeof(*names));
		if (!nn || !(nn[n] = malloc(strlen(path) + strlen(e->d_name) + 2))) {
			names = nn ? nn : names;
			rc = -1;
			break;
		}
		names = nn;
		sprintf(names[n++], "%s/%s", path, e->d_name);
	}
	closedir(d);
	if (!rc && n)
		qsort(names, n, sizeof(*names), by_name);
	for (size_t i = 0; i < n; i++) {
		if (!rc) {
			rc = one(names[i]);
			(*count)++;
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	unsigned count = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st)) {
			perror(argv[i]);
			return 1;
		}
		if (S_ISDIR(st.st_mode) ? dir(argv[i], &count) : (count++, one(argv[i])))
			return 1;
	}
	printf("%s: %u inputs\n", argv[0], count);
	return 0;
}
