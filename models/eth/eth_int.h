/* SPDX-License-Identifier: MIT */
/*
 * eth_int.h - the Ethernet link layer's internal state, shared by
 * eth_port.c and eth_sw.c. Not a public API: the builder sees eth_ops.h.
 */
#ifndef IBFAB_ETH_INT_H
#define IBFAB_ETH_INT_H

#include "models/eth/eth.h"
#include "models/core/fab_core.h"
#include "models/eth/eth_ops.h"
#include "models/port/port.h"
#include "models/switch/sw.h"
#include "models/switch/sw_lb.h"
#include "sim/sim_rng.h"

/* A PFC frame on the wire: pause `prio` for `quanta` (0 = XON). */
struct eth_pfc_frame {
	sim_time_t depart, arrive;
	uint16_t quanta;
	uint8_t prio;
};

struct eth_fq {
	struct eth_pfc_frame *v;
	uint32_t head, n, cap;	/* power-of-two capacity */
};

/* A port's Ethernet state: its link (port.link points to it, with the
 * ops of eth_port.c) comes first. */
struct eth_port {
	struct port_link link;
	bool pfc;			/* this receiver sends PFC frames */
	/* transmitter: pauses received from the peer */
	uint8_t paused;			/* priorities with a pause interval open */
	sim_time_t paused_until[ETH_NPRIO];
	sim_time_t pause_from[ETH_NPRIO];
	sim_time_t pause_depart[ETH_NPRIO];	/* when the XOFF that set paused_until left
						 * the peer (the key of the expiry's wake) */
	sim_time_t quantum_ps;		/* 512 bit times at this link's rate */
	struct sim_timer wake;		/* all data paused: next landing or expiry */
	struct eth_fq fq;		/* frames in flight to this transmitter */
	uint8_t rr;			/* round robin between data priorities */
	/* receiver: PFC it sends upstream */
	uint8_t xoff;			/* priorities paused upstream */
	sim_time_t xoff_at[ETH_NPRIO];	/* last XOFF sent */
	uint32_t xoff_cells, xon_cells;
	struct sim_timer refresh;
	sim_time_t last_depart;		/* the last frame sent: frames keep their order */
	uint32_t pfc_msgs;		/* frames sent as events (fc_msg): their order */
	/* switch egress: cells queued per priority (inq[] holds the packets) */
	uint32_t q_cells[ETH_NPRIO];
	uint32_t kmin_cells, kmax_cells;
};

/* The Ethernet state of a port of an Ethernet fabric. */
static inline struct eth_port *eth_of(const struct port *pt)
{
	return (struct eth_port *)pt->link;
}

/* Its events. */
enum { ETH_EV_WAKE = PORT_EV_LINK,	/* a paused transmitter may resume (sim_timer tag) */
       ETH_EV_PFC_REFRESH,		/* re-send XOFF before its pause expires (sim_timer tag) */
       ETH_EV_PFC_MSG };		/* a PFC frame from the peer has crossed the cable
					 * (port.cut: the quanta in bits 16-31, the
					 * priority in 8-10) */

struct eth_sw {
	uint32_t cap_cells;		/* shared buffer */
	uint32_t used_cells;
	uint32_t headroom_cells;	/* reserved per (ingress port, lossless priority) */
	bool ecn;
	struct sim_rng rng;		/* ECN marking */
	/* load balancing (eth_ecmp.c): the equal-cost ports per destination
	 * switch, and the flowlet table; empty (mp.grp NULL) with eth.lb=static */
	struct sw_lb lb;
	uint64_t hash_seed;
};

/* eth_ecmp.c: the switch's equal-cost port sets (eth.lb other than
 * static), and the output port for packet idx: one of them by the flow's
 * hash (ecmp) or by load (flowlet, spray), else the LFT's (sw_route). */
int eth_ecmp_init(struct fab *f, struct fab_node *n, struct eth_sw *s);
int eth_ecmp_route(struct port *in, uint32_t idx);

/* eth_port.c */
void eth_ecn_thresholds(const struct fab_params *p, struct link_rate r, uint32_t *kmin,
			uint32_t *kmax);
uint32_t eth_headroom(const struct fab_params *p, const struct port *pt);
/* Apply the PFC frames that have landed (before looking at the queues). */
void eth_port_prepare(struct port *pt);

/* eth_port.c, more: the Ethernet link layer (fabrics roce, roce-lossy,
 * tcp), a port_link whose ops are these (set by eth_port_init).
 * Receivers count the 64-byte cells they hold per priority (rx_used, as
 * the IB receiver counts credit blocks); PFC sends XOFF upstream above
 * eth.pfc_xoff and XON below eth.pfc_xon; transmitters honour pauses. */
/* May this transmitter start a packet on priority prio now (not paused)? */
bool eth_port_fits(const struct port *pt, uint8_t prio);
/* A packet's cells entered this receiver (after rx_used grew): XOFF? */
void eth_port_ingress(struct port *rx, uint8_t prio);
/* Cells left this receiver (after rx_used shrank): XON? */
void eth_port_egress(struct port *rx, uint8_t prio);
/* Its events (from PORT_EV_LINK): a pause ending, a pause to refresh. */
void eth_port_handler(struct port *pt, uint32_t arg);
/* Pick the priority to serve among `ready` (strict for CNPs, then eth.sched). */
int eth_port_pick(struct port *pt, uint16_t ready);
/* The transmitter is blocked by pauses on every priority with data. */
void eth_port_blocked(struct port *pt, uint16_t has_data);

/* eth_sw.c: the Ethernet switch (shared buffer, output queues, ECN) */
void eth_sw_receive(struct port *in, uint32_t pkt);
uint16_t eth_sw_candidates(struct port *out, uint32_t cand[PORT_NVL], uint16_t *has_data);
uint32_t eth_sw_take(struct port *out, uint8_t vl, uint32_t pkt);
void eth_sw_sent(struct port *out);

#endif
