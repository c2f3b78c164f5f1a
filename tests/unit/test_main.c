/* SPDX-License-Identifier: MIT */
/* test_main.c - CUnit runner shared by the unit tests; see test_main.h. */
#include "tests/unit/test_main.h"

#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int test_run(const char *suite, const struct test_case *tests)
{
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 2;
	CU_pSuite s = CU_add_suite(suite, NULL, NULL);

	if (!s)
		return 2;
	unsigned skipped = 0;

	for (const struct test_case *t = tests; t->name; t++) {
		if (t->heavy && test_quick()) {
			skipped++;
			continue;
		}
		if (!CU_add_test(s, t->name, t->fn))
			return 2;
	}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	unsigned fails = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
	unsigned run = CU_get_number_of_tests_run();

	CU_cleanup_registry();
	/* CUnit has no skipped state: the heavy cases left out are listed
	 * after its summary, so that nobody reads them as passed */
	for (const struct test_case *t = tests; skipped && t->name; t++)
		if (t->heavy)
			printf("  Test: %s ...skipped (quick mode: a heavy case)\n", t->name);
	if (skipped)
		printf("%u test(s) skipped in quick mode\n", skipped);
	if (!run)
		return skipped ? 0 : 3;
	return fails ? 1 : 0;
}

bool test_quick(void)
{
	const char *e = getenv("IBFAB_TEST_QUICK");

	if (e && *e && strcmp(e, "0"))
		return true;
#ifdef __SANITIZE_ADDRESS__
	return true;
#else
	return false;
#endif
}

const char *test_src_path(const char *rel, char *buf, unsigned len)
{
	const char *src = getenv("IBFAB_SRC");

	snprintf(buf, len, "%s/%s", src ? src : ".", rel);
	return buf;
}

const char *test_tmpfile(const char *name, const char *text)
{
	static char paths[16][512];
	static unsigned slot;
	char *p = paths[slot++ % 16];
	const char *tmp = getenv("TMPDIR");

	snprintf(p, 512, "%s/ibfab-test-%d-%s", tmp ? tmp : "/tmp", (int)getpid(), name);
	FILE *f = fopen(p, "w");

	if (!f)
		return NULL;
	fputs(text, f);
	fclose(f);
	return p;
}
