/* SPDX-License-Identifier: MIT */
/*
 * sw_ibcc.h - the switch's side of InfiniBand congestion control (FECN
 * marking, sw_ibcc.c); models/switch/sw.c calls these when ib.cc is on.
 */
#ifndef IBFAB_SW_IBCC_H
#define IBFAB_SW_IBCC_H

struct fab;
struct fab_node;
struct port;
struct pkt;

int ibcc_sw_init(struct fab *f, struct fab_node *n);
void ibcc_sw_fini(struct fab_node *n);
/* A packet was queued at an input for output `out`. */
void ibcc_sw_queued(struct port *out, const struct pkt *p);
/* Output `out` starts sending p: leaves the queue, maybe marked FECN. */
void ibcc_sw_take(struct port *out, struct pkt *p);

#endif
