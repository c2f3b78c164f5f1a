/* SPDX-License-Identifier: MIT */
/*
 * eth.h - parameters of the Ethernet link layer that the RoCE and TCP
 * fabrics run on (models/eth): the switch's shared packet buffer and its
 * per-queue thresholds, ECN marking, PFC (IEEE 802.1Qbb), and the wire
 * overheads of an Ethernet frame. The model is in eth_port.c (pause frames,
 * ingress accounting) and eth_sw.c (shared-buffer, output-queued switch).
 */
#ifndef IBFAB_ETH_H
#define IBFAB_ETH_H

#include <stdbool.h>
#include <stdint.h>

#include "models/params/eth_params.h"

#define ETH_NPRIO	8	/* IEEE 802.1Q priorities */
#define ETH_HDR_BYTES	14	/* destination, source, EtherType */
#define ETH_VLAN_BYTES	4	/* 802.1Q tag: carries the PCP that PFC acts on */
#define ETH_FCS_BYTES	4
#define ETH_PREAMBLE_BYTES 8	/* preamble + SFD */
#define ETH_IFG_BYTES	12	/* inter-frame gap */
#define ETH_MIN_FRAME	64	/* FCS included */
#define IPV4_HDR_BYTES	20
#define UDP_HDR_BYTES	8
/* Bytes a frame takes on the wire around its L2 payload: header, VLAN tag,
 * FCS, preamble and gap (what a 64-byte PFC frame pays too). */
#define ETH_WIRE_OVERHEAD (ETH_HDR_BYTES + ETH_VLAN_BYTES + ETH_FCS_BYTES + \
			   ETH_PREAMBLE_BYTES + ETH_IFG_BYTES)
#define ETH_PFC_WIRE_BYTES (ETH_MIN_FRAME + ETH_PREAMBLE_BYTES + ETH_IFG_BYTES)
#define ETH_PAUSE_QUANTUM_BITS 512	/* one pause quantum: 512 bit times */
#define ETH_CNP_PRIO	7	/* CNPs' priority: served first, never paused; data uses 0..6 */

void eth_params_default(struct eth_params *p);

#endif
