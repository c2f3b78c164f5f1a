/* SPDX-License-Identifier: MIT */
/*
 * cli_pcap.h - `ibfab run --pcap FILE`: the simulated packets in a capture
 * file Wireshark and tshark read (docs/ib-model.md, "Captures").
 */
#ifndef IBFAB_CLI_PCAP_H
#define IBFAB_CLI_PCAP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "models/fabric/fab.h"
#include "models/net/net.h"
#include "sim/sim_diag.h"

struct cli_pcap {
	FILE *f;
	uint8_t fabric;			/* enum fab_fabric: the framing */
	sim_time_t from, to;		/* the time window (to = 0: no end) */
	uint64_t count;			/* at most this many packets (0: no limit) */
	uint64_t n;			/* written */
	struct fab_link_set where;	/* node=...: the ports whose cables are captured */
	bool has_where;
	bool err;			/* a write failed */
};

/* Parse --pcap-filter "node=NODE[/PORT],from=TIME,to=TIME,count=N" (any of
 * them, NULL: none) into c. 0, or -1 with d naming the key. */
int cli_pcap_filter(struct cli_pcap *c, const char *spec, struct sim_diag *d);
/* Write the file header to f and tap the fabric's ports: both directions
 * of every cable at the ports node= names, or what every host sends when
 * there is no node=. 0, or -1 with d filled (no port matches). */
int cli_pcap_start(struct cli_pcap *c, FILE *f, struct fab *fab, const struct net *net,
		   struct sim_diag *d);

#endif
