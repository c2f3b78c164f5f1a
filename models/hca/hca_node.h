/* SPDX-License-Identifier: MIT */
/*
 * hca_node.h - what the builder calls of the HCA: the HCA as a node kind
 * (models/port/port.h), set up on every channel adapter.
 */
#ifndef IBFAB_HCA_NODE_H
#define IBFAB_HCA_NODE_H

#include "models/core/fab_core.h"
#include "models/port/port.h"

int hca_init(struct fab *f, struct fab_node *n);
void hca_fini(struct fab_node *n);
extern const struct port_node_ops hca_node_ops;
/* InfiniBand's transports (RC, UC, UD over IB or RoCEv2), the builder's
 * default for every QP (fab.transport). */
struct hca_transport_ops;
extern const struct hca_transport_ops *const hca_ib_transport;

#endif
