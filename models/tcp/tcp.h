/* SPDX-License-Identifier: MIT */
/*
 * tcp.h - TCP over the Ethernet fabric: parameters of the congestion
 * control (NewReno, CUBIC, DCTCP), timers, and the host-stack cost.
 * The model is in tcp*.c.
 */
#ifndef IBFAB_TCP_H
#define IBFAB_TCP_H

#include <stdbool.h>
#include <stdint.h>

struct tcp_params {
	uint8_t cc;		/* tcp.cc */
};

/* Do this TCP's senders react to ECN marks (DCTCP)? The Ethernet switches
 * mark on fabric=tcp only then (models/eth/eth_sw.c, eth.ecn=auto).
 * TCP owner: replace the body once tcp.cc exists. */
static inline bool tcp_wants_ecn(const struct tcp_params *p)
{
	(void)p;
	return false;
}

#endif
