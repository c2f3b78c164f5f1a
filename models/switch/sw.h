/* SPDX-License-Identifier: MIT */
/*
 * sw.h - the InfiniBand switch as a node kind (models/port/port.h): input
 * buffers per VL, the LFT lookup, output arbitration with a speedup
 * (models/switch/sw.c says what it models).
 */
#ifndef IBFAB_SW_H
#define IBFAB_SW_H

#include <stdint.h>

#include "models/core/fab_core.h"
#include "models/port/port.h"

int sw_init(struct fab *f, struct fab_node *n);
void sw_fini(struct fab_node *n);
/* A packet's head arrived at input `in` (after the pipeline latency). */
void sw_receive(struct port *in, uint32_t pkt);
/* The LFT's output port for the packet at input `in`, or -1 when it has
 * none (the packet is then dropped and counted). */
int sw_route(struct port *in, uint32_t pkt);
/* The output packet p, arriving at input pt, will likely be queued for
 * (the LFT's; adaptive routing may take another): what the look-ahead
 * asks for (port_prefetch), never read through. NULL: none. */
const struct port *sw_rx_guess(const struct port *pt, const struct pkt *p);
/* Output arbitration: the best packet for output `out` on each VL. Fills
 * cand[vl] with a packet index or SIM_POOL_NIL and returns the VL mask. */
uint16_t sw_candidates(struct port *out, uint32_t cand[PORT_NVL], uint16_t *has_data);
/* The output started sending cand packet: dequeue it at its input. */
uint32_t sw_take(struct port *out, uint8_t vl, uint32_t pkt);
/* The output finished sending it: free the input buffer, re-request. */
void sw_sent(struct port *out);
/* Where adaptive routing's counters at switch n are kept (NULL without
 * ib.ar): struct sw_lb's SW_LB_WORDS words, chosen, moved, notified, for
 * the run's totals and a partitioned run's results (fab_part.c). */
uint64_t *sw_lb_words(struct fab_node *n);
/* The node kind "InfiniBand switch": the four above. */
extern const struct port_node_ops sw_node_ops;

#endif
