/* SPDX-License-Identifier: MIT */
/*
 * eth_int.h - the Ethernet link layer's internal state (eth_port.c,
 * eth_sw.c), shared with the fabric builder. Not a public API.
 */
#ifndef IBFAB_ETH_INT_H
#define IBFAB_ETH_INT_H

#include "models/eth/eth.h"
#include "models/fabric/fab_int.h"
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
	sim_time_t quantum_ps;		/* 512 bit times at this link's rate */
	struct sim_timer wake;		/* all data paused: next landing or expiry */
	uint8_t rr;			/* round robin between data priorities */
	/* receiver: PFC it sends upstream */
	uint8_t xoff;			/* priorities paused upstream */
	sim_time_t xoff_at[ETH_NPRIO];	/* last XOFF sent */
	uint32_t xoff_cells, xon_cells;
	struct sim_timer refresh;
	struct eth_fq fq;		/* frames in flight to the peer (read by it) */
	sim_time_t last_depart;
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
       ETH_EV_PFC_REFRESH };		/* re-send XOFF before its pause expires (sim_timer tag) */

struct eth_sw {
	uint32_t cap_cells;		/* shared buffer */
	uint32_t used_cells;
	uint32_t headroom_cells;	/* reserved per (ingress port, lossless priority) */
	bool ecn;
	struct sim_rng rng;		/* ECN marking */
};

/* eth_port.c */
void eth_ecn_thresholds(const struct fab_params *p, struct link_rate r, uint32_t *kmin,
			uint32_t *kmax);
uint32_t eth_headroom(const struct fab_params *p, const struct port *pt);
/* Apply the PFC frames that have landed (before looking at the queues). */
void eth_port_prepare(struct port *pt);
/* End of run: close open pause intervals at `now`. */
void eth_port_finish(struct port *pt, sim_time_t now);

#endif
