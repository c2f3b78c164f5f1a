/* SPDX-License-Identifier: MIT */
/*
 * sim_log.h - debug logging by subsystem, switched on at run time:
 *   IBFAB_DEBUG=credit,vlarb,switch ibfab run ...
 * (tcp: each send(), segment and recv() with what the host stack charged)
 * A disabled subsystem costs one predictable branch on a global mask, so the
 * calls can stay in hot paths. Lines go to stderr prefixed with the simulated
 * time in nanoseconds, so a trace reads in simulated order.
 */
#ifndef IBFAB_SIM_LOG_H
#define IBFAB_SIM_LOG_H

#include <stdint.h>

enum sim_log_sub {
	SIM_LOG_ENGINE,
	SIM_LOG_LINK,
	SIM_LOG_CREDIT,
	SIM_LOG_VLARB,
	SIM_LOG_SWITCH,
	SIM_LOG_HCA,
	SIM_LOG_TRAFFIC,
	SIM_LOG_SM,
	SIM_LOG_TOPO,
	SIM_LOG_TCP,
	SIM_LOG_NSUB
};

extern uint32_t sim_log_mask;

/* Parse a comma list of subsystem names ("all" too). Returns -1 and leaves
 * the offending name in *bad on an unknown name. */
int sim_log_parse(const char *list, uint32_t *mask, const char **bad);
/* Read IBFAB_DEBUG; returns -1 (with a message on stderr) on a bad name. */
int sim_log_init_from_env(void);
const char *sim_log_sub_name(enum sim_log_sub s);
void sim_log_printf(enum sim_log_sub s, uint64_t now_ps, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define SIM_LOG(sub, now, ...)						\
	do {								\
		if (__builtin_expect(sim_log_mask & (1u << (sub)), 0))	\
			sim_log_printf((sub), (now), __VA_ARGS__);	\
	} while (0)

#endif
