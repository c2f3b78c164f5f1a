/* SPDX-License-Identifier: MIT */
/*
 * eth_ops.h - what the builder calls of the Ethernet fabrics: the switch
 * as a node kind (eth_sw.c) and the link layer a port runs (eth_port.c,
 * a port_link: models/port/port.h).
 */
#ifndef IBFAB_ETH_OPS_H
#define IBFAB_ETH_OPS_H

#include "models/core/fab_core.h"
#include "models/port/port.h"

/* The Ethernet switch (shared buffer, output queues, ECN). */
int eth_sw_init(struct fab *f, struct fab_node *n);
void eth_sw_fini(struct fab_node *n);
extern const struct port_node_ops eth_sw_node_ops;
/* Where its load balancing's counters are kept (as sw_lb_words; NULL on a
 * NIC; 0 with eth.lb=ecmp or static, which have no load to weigh; no
 * notifications). */
uint64_t *eth_sw_lb_words(struct fab_node *n);

/* A port's Ethernet link: PFC, pauses, priorities (its link ops). */
int eth_port_init(struct fab *f, struct port *pt);
void eth_port_fini(struct port *pt);
/* End of run: close open pause intervals at `now`. */
void eth_port_finish(struct port *pt, sim_time_t now);

#endif
