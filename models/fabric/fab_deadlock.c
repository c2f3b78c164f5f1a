/* SPDX-License-Identifier: MIT */
/* fab_deadlock.c - placeholder until the run-time credit-loop detector lands. */
#include "models/fabric/fab_int.h"

void fab_deadlock_explain(const struct fab *f, char *buf, size_t len)
{
	(void)f;
	if (len)
		buf[0] = '\0';
}
