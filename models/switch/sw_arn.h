/* SPDX-License-Identifier: MIT */
/*
 * sw_arn.h - adaptive routing notifications between IB switches (ib.arn,
 * with ib.ar=on): a switch whose output towards a destination switch
 * queues tells the switch upstream, whose adaptive choice then takes
 * another port to that destination while the queue drains. sw_arn.c says
 * what it models.
 */
#ifndef IBFAB_SW_ARN_H
#define IBFAB_SW_ARN_H

#include <stdbool.h>
#include <stdint.h>

#include "models/core/fab_core.h"
#include "models/core/pkt.h"
#include "models/port/port.h"
#include "models/sm/sm_mp.h"

/* A notification in force at this switch: a downstream switch's queue
 * towards (destination switch, via the port towards it), until when. */
struct sw_arn_ent {
	uint32_t key;		/* (destination << 8 | port) + 1; 0: empty */
	sim_time_t until;
};

/* One input port's last notifications sent, per destination (4 slots). */
struct sw_arn_sent {
	uint32_t dst1;		/* destination + 1; 0: none */
	sim_time_t until;	/* in force upstream until then */
};

struct sw_arn {
	bool on;
	int64_t threshold;	/* blocks queued for an output above which it notifies */
	sim_time_t until;	/* no entry is in force from then on (0: none ever) */
	struct sw_arn_ent *tab;	/* SW_ARN_SLOTS, on the first notification received */
	struct sw_arn_sent *sent;	/* per input port, SW_ARN_SENT each */
};

#define SW_ARN_SLOTS 1024	/* 16 KiB a switch that receives any */
#define SW_ARN_SENT 4

/* 0, or -1 when out of memory. threshold: blocks (one packet of the MTU). */
int sw_arn_init(struct sw_arn *a, const struct fab_node *n, bool on, int64_t threshold);
void sw_arn_fini(struct sw_arn *a);

/* The destination switch of dlid, as struct sm_mp numbers them, or
 * SM_MP_NONE. */
static inline uint32_t sw_arn_dst(const struct fab *f, net_lid_t dlid)
{
	return dlid < f->mp->nlid ? f->mp->dst_of_lid[dlid] : SM_MP_NONE;
}

bool sw_arn_lookup(const struct sw_arn *a, const struct fab *f, int port, const struct pkt *p);

/* Whether a notification is in force for packet p's destination behind
 * output `port`: one comparison while none is in force at this switch. */
static inline bool sw_arn_notified(const struct sw_arn *a, const struct fab *f, int port,
				   const struct pkt *p)
{
	return f->eng.now < a->until && sw_arn_lookup(a, f, port, p);
}

/* What a notified port adds to its load (sw.c's ar_load): more than any
 * queue, so that the choice takes it only where every port of the group
 * is notified, and then the least loaded of them. */
#define SW_ARN_LOAD (INT64_C(1) << 40)

/* Packet p, which came in at `in`, joins a queue of `queued` blocks at its
 * output, over the threshold (the caller's test, on its per-packet path):
 * notify the switch upstream, unless no switch is there or a notification
 * for p's destination from this input is in force there. True if one was
 * sent. */
bool sw_arn_send(struct sw_arn *a, struct fab *f, struct port *in, const struct pkt *p,
		 int64_t queued);

/* A notification (PORT_EV_NOTIFY's 24 bits) reached port pt of this
 * switch. */
void sw_arn_receive(struct sw_arn *a, struct port *pt, uint32_t what);

#endif
