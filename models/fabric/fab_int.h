/* SPDX-License-Identifier: MIT */
/*
 * fab_int.h - the builder's own: the traffic adapter, the deadlock
 * explanation, and the node kinds and link layers it sets up. The state
 * the models share is models/core/fab_core.h's; the ports are
 * models/port/port.h's. Not a public API.
 */
#ifndef IBFAB_FAB_INT_H
#define IBFAB_FAB_INT_H

#include <stddef.h>

#include "models/core/fab_core.h"
#include "models/fabric/fab.h"
#include "models/ib/ib_pkt.h"
#include "models/ib/ib_vlarb.h"
#include "models/eth/eth_ops.h"
#include "models/hca/hca_node.h"
#include "models/port/port.h"
#include "models/switch/sw.h"
#include "sim/sim.h"
#include "sim/sim_pool.h"
#include "sim/sim_rng.h"

struct fab_node;
struct hca_qp;
struct hca_swqe;
struct eth_port;
struct eth_sw;
struct ibcc_port;

/* What fab_create's one pass over the message list learns for the set-up. */
struct fab_scan {
	uint32_t *count;	/* messages per stream */
	uint32_t *first;	/* each stream's first message, in list order */
	uint32_t nfirst;
	size_t waiting;		/* messages that wait for another */
};

/* fab_traffic.c: a QP pair per stream, in the order of sc->first */
int fab_traffic_setup(struct fab *f, const struct fab_scan *sc);
void fab_traffic_free(struct fab *f);
void fab_traffic_schedule(struct fab *f, uint32_t mi, sim_time_t t);
/* Post message mi now, on its stream's requester QP (the hooks' post). */
void fab_traffic_post_now(struct fab *f, uint32_t mi);
/* Message mi completed at its requester: its send queue slot goes to the
 * stream's oldest message waiting for one. */
void fab_traffic_slot_free(struct fab *f, uint32_t mi);

/* fab_deadlock.c: when the fabric stalls with packets still buffered,
 * explain why (e.g. the cycle of ports waiting for each other's credits)
 * into buf; an empty string when there is nothing to add. */
void fab_deadlock_explain(const struct fab *f, char *buf, size_t len);

#endif
