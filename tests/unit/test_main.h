/* SPDX-License-Identifier: MIT */
/*
 * test_main.h - the CUnit harness shared by every unit test program. A test
 * file defines `const struct test_case tests[]` (NULL-terminated) and calls
 * TEST_MAIN(suite_name, tests). The program exits non-zero on any failure.
 */
#ifndef IBFAB_TEST_MAIN_H
#define IBFAB_TEST_MAIN_H

#include <CUnit/CUnit.h>
#include <stdbool.h>

struct test_case {
	const char *name;
	void (*fn)(void);
	/* minutes under a sanitizer: in quick mode (test_quick) the case is
	 * not run and is reported as skipped, never counted as passed */
	bool heavy;
};

int test_run(const char *suite, const struct test_case *tests);
/* $IBFAB_SRC or the source tree this was built from; path joined into buf. */
const char *test_src_path(const char *rel, char *buf, unsigned len);
/*
 * Quick mode: sanitizer builds (ASan slows the engine 10-30x) and
 * IBFAB_TEST_QUICK=1. Cases marked heavy are then skipped (and said to
 * be), and tests that sweep sizes run their small ones only; the release
 * build runs them all.
 */
bool test_quick(void);
/* Write `text` to a fresh temporary file, return its path (static buffer per call slot). */
const char *test_tmpfile(const char *name, const char *text);

#define TEST_MAIN(suite, tests) \
	int main(void) { return test_run((suite), (tests)); }

#endif
