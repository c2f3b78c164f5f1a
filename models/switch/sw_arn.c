/* SPDX-License-Identifier: MIT */
/*
 * sw_arn.c - adaptive routing notifications (ARN) between IB switches.
 *
 * What it models. A switch's adaptive choice (sw_lb.c) sees only its own
 * outputs and the next hop's credits; a spine whose down-link to a leaf
 * queues is invisible to the leaves that keep spraying packets for that
 * leaf onto it. NVIDIA's SHIELD, on by default under its subnet manager,
 * adds ARN: "the switch [sends] a report to the neighbor switches, if its
 * ports are congested above the threshold. This report causes neighbor
 * switches to select another output port to deliver the traffic to the
 * destination LID" (NVIDIA, InfiniBand Cluster Bring-up Procedure,
 * "SHIELD"; Mellanox's patents US 9,014,006, "Adaptive routing using
 * inter-switch notifications", and US 10,178,029, "Forwarding of
 * adaptive routing notifications", describe the same exchange: the
 * notification goes to the switch the congesting traffic came from, which
 * reroutes where it has another port). Here:
 *  - a switch routing a data packet adaptively (ib.ar) that arrived from
 *    another switch, whose chosen output - another switch's link -
 *    already queues more than one packet of the MTU (the blocks queued for
 *    it at the inputs and the packet it is sending: the same "a queue
 *    forms" as sw_lb.keep_lft), notifies the switch the packet came from,
 *    naming the packet's destination switch (the granularity of the AR
 *    groups: every LID behind it takes that output) and the queue, in
 *    units of 16 blocks (1 KiB), at most 255;
 *  - the notification is a small packet on the reverse link: it leaves
 *    after the packet that link is sending, and lands an FC packet's
 *    serialisation and the propagation later (port.fc_delay);
 *  - the upstream switch then selects another output port for packets
 *    to that destination switch: it takes its port towards the notifier
 *    only where every port of its group is notified (then the least
 *    loaded of them: SW_ARN_LOAD in its load), for as long as the
 *    reported queue takes to drain at the link's rate; a newer
 *    notification for the same pair replaces it. A notified port is not
 *    kept as the LFT's port either (sw_lb.c);
 *  - the notifier sends again for the same input and destination only
 *    once its last one has expired upstream (4 destinations remembered per
 *    input port), so a standing queue sends one notification per drain
 *    time, not one per packet.
 * The notifications are engine events, whether or not the link joins two
 * partitions, so a partitioned run makes the same ones.
 * Left out: the threshold and the time a notification holds are NVIDIA's
 * and not public (the values above are the model's, chosen so that
 * nothing but a forming queue notifies and nothing is avoided after the
 * queue could have drained: docs/routing.md has a sweep of the hold, and
 * what counting the reported queue in the load instead does);
 * forwarding a notification further up where the receiving switch has no
 * other port (US 10,178,029; in a two-level tree every leaf has one); the
 * notification's bytes on the link (a few per drain time); Fast Link
 * Fault Notification, SHIELD's other half (dead links: the AR groups
 * skip them at the switch that sees them).
 */
#include "models/switch/sw_arn.h"

#include <stdlib.h>

#include "models/ib/ib_pkt.h"

#define UNIT_BLOCKS 16u		/* a notification's queue: units of 1 KiB */
#define MAX_UNITS 255u

int sw_arn_init(struct sw_arn *a, const struct fab_node *n, bool on, int64_t threshold)
{
	a->on = on;
	a->threshold = threshold;
	a->until = 0;
	a->tab = NULL;
	a->sent = NULL;
	if (!on)
		return 0;
	a->sent = calloc(((size_t)n->nports + 1) * SW_ARN_SENT, sizeof(*a->sent));
	return a->sent ? 0 : -1;
}

void sw_arn_fini(struct sw_arn *a)
{
	free(a->tab);
	free(a->sent);
	a->tab = NULL;
	a->sent = NULL;
}

static inline uint32_t arn_key(uint32_t dst, int port)
{
	return (dst << 8 | (uint32_t)port) + 1;
}

static inline struct sw_arn_ent *arn_slot(const struct sw_arn *a, uint32_t key)
{
	return &a->tab[(key * 0x9e3779b1u) >> (32 - 10)];	/* 2^10 = SW_ARN_SLOTS */
}

bool sw_arn_lookup(const struct sw_arn *a, const struct fab *f, int port, const struct pkt *p)
{
	uint32_t d = sw_arn_dst(f, p->dlid);
	const struct sw_arn_ent *e;

	if (d == SM_MP_NONE)
		return false;
	e = arn_slot(a, arn_key(d, port));
	return e->key == arn_key(d, port) && f->eng.now < e->until;
}

/* How long a reported queue of `units` holds at the link of port pt. */
static inline sim_time_t arn_hold(const struct port *pt, uint32_t units)
{
	return link_ser_ps(pt->rate, units * UNIT_BLOCKS * IB_BLOCK_BYTES);
}

bool sw_arn_send(struct sw_arn *a, struct fab *f, struct port *in, const struct pkt *p,
		 int64_t queued)
{
	sim_time_t now = f->eng.now, leave, arrive;
	struct port *up = in->peer;	/* the upstream switch's port */
	struct sw_arn_sent *s;
	uint32_t d, units;

	if (!in->peer_is_sw || in->down)
		return false;
	d = sw_arn_dst(f, p->dlid);
	if (d > 0xffff)		/* SM_MP_NONE; a LID names at most 49,151 switches */
		return false;
	s = &a->sent[(size_t)in->port_no * SW_ARN_SENT + (d & (SW_ARN_SENT - 1))];
	if (s->dst1 == d + 1 && now < s->until)
		return false;	/* the last one is in force there */
	units = (uint32_t)((queued + UNIT_BLOCKS - 1) / UNIT_BLOCKS);
	if (units > MAX_UNITS)
		units = MAX_UNITS;
	leave = in->tx_busy && in->tx_end > now ? in->tx_end : now;
	arrive = leave + up->fc_delay;
	s->dst1 = d + 1;
	s->until = arrive + arn_hold(up, units);
	sim_schedule_at(&f->eng, arrive, up->comp, (d << 8 | units) << 8 | PORT_EV_NOTIFY);
	return true;
}

void sw_arn_receive(struct sw_arn *a, struct port *pt, uint32_t what)
{
	sim_time_t now = pt->fab->eng.now;
	uint32_t key = arn_key(what >> 8, pt->port_no), units = what & 0xff;
	struct sw_arn_ent *e;

	if (!a->on || pt->down)
		return;
	if (!a->tab && !(a->tab = calloc(SW_ARN_SLOTS, sizeof(*a->tab)))) {
		fab_fail(pt->fab, "out of memory for adaptive routing notifications");
		return;
	}
	e = arn_slot(a, key);
	e->key = key;
	e->until = now + arn_hold(pt, units);
	if (e->until > a->until)
		a->until = e->until;
}
