/* SPDX-License-Identifier: MIT */
/* sim_log.c - see sim_log.h. */
#include "sim/sim_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t sim_log_mask;

static const char *const sub_names[SIM_LOG_NSUB] = {
	[SIM_LOG_ENGINE] = "engine",	[SIM_LOG_LINK] = "link",
	[SIM_LOG_CREDIT] = "credit",	[SIM_LOG_VLARB] = "vlarb",
	[SIM_LOG_SWITCH] = "switch",	[SIM_LOG_HCA] = "hca",
	[SIM_LOG_TRAFFIC] = "traffic",	[SIM_LOG_SM] = "sm",
	[SIM_LOG_TOPO] = "topo",	[SIM_LOG_TCP] = "tcp",
};

const char *sim_log_sub_name(enum sim_log_sub s)
{
	return (unsigned)s < SIM_LOG_NSUB ? sub_names[s] : "?";
}

int sim_log_parse(const char *list, uint32_t *mask, const char **bad)
{
	static char badbuf[64];
	uint32_t m = 0;
	const char *p = list;

	while (p && *p) {
		size_t n = strcspn(p, ",");
		int found = 0;

		if (n == 3 && !strncmp(p, "all", 3)) {
			m = (1u << SIM_LOG_NSUB) - 1;
			found = 1;
		}
		for (int i = 0; i < SIM_LOG_NSUB && !found; i++)
			if (strlen(sub_names[i]) == n && !strncmp(p, sub_names[i], n)) {
				m |= 1u << i;
				found = 1;
			}
		if (!found && n) {
			snprintf(badbuf, sizeof(badbuf), "%.*s", (int)n, p);
			if (bad)
				*bad = badbuf;
			return -1;
		}
		p += n;
		if (*p == ',')
			p++;
	}
	*mask = m;
	return 0;
}

int sim_log_init_from_env(void)
{
	const char *env = getenv("IBFAB_DEBUG"), *bad = NULL;

	if (!env)
		return 0;
	if (sim_log_parse(env, &sim_log_mask, &bad)) {
		fprintf(stderr, "ibfab: IBFAB_DEBUG: unknown subsystem '%s' (expected a comma list of:", bad);
		for (int i = 0; i < SIM_LOG_NSUB; i++)
			fprintf(stderr, " %s", sub_names[i]);
		fprintf(stderr, " all)\n");
		return -1;
	}
	return 0;
}

void sim_log_printf(enum sim_log_sub s, uint64_t now_ps, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%12llu.%03llu ns [%s] ", (unsigned long long)(now_ps / 1000),
		(unsigned long long)(now_ps % 1000), sim_log_sub_name(s));
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
