/* SPDX-License-Identifier: MIT */
/* util_fabric.h - test helpers; see util_fabric.c. Failures are CUnit fatal. */
#ifndef IBFAB_TEST_UTIL_FABRIC_H
#define IBFAB_TEST_UTIL_FABRIC_H

#include <stdint.h>

#include "models/fabric/fab.h"
#include "models/net/net.h"

int tf_add_node(struct net *n, enum net_node_type t, int ports, const char *name);
void tf_link(struct net *n, int a, int pa, int b, int pb);
/* Min-hop routes and validation. */
void tf_route(struct net *n);
/* h0 - sw0 - ... - sw(nsw-1) - h1 */
void tf_chain(struct net *n, int nsw, int *h0, int *h1);
/* One switch, hosts h0..h(nh-1) on ports 1..nh. */
void tf_star(struct net *n, int nh, int *hosts);
/* Hot spot S1..S4 -> H with victim V -> W sharing sw0 -> sw1 (util_fabric.c). */
void tf_victim(struct net *n, int s[4], int *v, int *h, int *w);
/* Defaults, then a preset, with an ideal host (host.model=off). */
void tf_params(struct fab_params *p, const char *preset);
/* Every packet on its LFT's port, input FIFOs: the switches a closed form
 * from the tables assumes (ib.ar=off, switch.queues=fifo; the Quantum
 * presets route adaptively with per-output queues). */
void tf_tables(struct fab_params *p);
/* One "key=value" (fatal if refused). */
void tf_set(struct fab_params *p, const char *kv);
void tf_add_msg(struct fab_msgs *m, int src, int dst, uint64_t bytes, uint32_t stream,
		uint8_t sl);
/* fab_create + fab_run; fatal if creation fails, a failure if the run does. */
struct fab *tf_run(const struct net *n, const struct fab_params *p, struct fab_msgs *m);

#endif
