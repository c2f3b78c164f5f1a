/* SPDX-License-Identifier: MIT */
/*
 * sm_mp.h - the equal-cost output ports of every switch towards every
 * destination: what InfiniBand's adaptive routing chooses among (the "AR
 * groups" an AR-capable subnet manager programs beside the LFT) and what
 * Ethernet's ECMP hashes over. sm_mp.c says how they are found.
 *
 * Usage:
 *	struct sm_mp *mp = sm_mp_build(net);		// once per fabric
 *	struct sm_mp_sw s;
 *	sm_mp_sw_init(&s, mp, net, node);		// once per switch
 *	const uint8_t *ports;
 *	uint32_t k = sm_mp_ports(mp, &s, dlid, &ports);	// 0: use the LFT
 */
#ifndef IBFAB_SM_MP_H
#define IBFAB_SM_MP_H

#include <stdint.h>

#include "models/net/net.h"

#define SM_MP_NONE UINT32_MAX
#define SM_MP_DOWN 0x8000
#define SM_MP_HOPS 0x7fff

/* The fabric's part: which switch each CA LID hangs on, and switch-hop
 * distances to each such switch. */
struct sm_mp {
	uint32_t ndst;		/* destination switches: those with a CA port */
	uint32_t *dst_of_lid;	/* LID -> its CA port's switch, as a destination index */
	uint32_t nlid;
	/* [dst * nnodes + node]: switch hops from node to dst on an
	 * up-then-down path (SM_MP_HOPS), and SM_MP_DOWN where node is above
	 * dst (its path goes down only); 0xffff where it has none */
	uint16_t *dist;
	uint16_t *level;	/* per node: 1 for a switch with CAs, +1 per level up */
	int nnodes;
};

/* One switch's part: per destination switch, its ports one hop closer, as
 * offset << 8 | count into port[] (count 0: the destination is this
 * switch's own, or no switch path reaches it: the LFT decides). */
struct sm_mp_sw {
	uint32_t *grp;
	uint8_t *port;
};

/* NULL when out of memory. */
struct sm_mp *sm_mp_build(const struct net *net);
void sm_mp_free(struct sm_mp *mp);
/* 0, or -1 when out of memory. */
int sm_mp_sw_init(struct sm_mp_sw *s, const struct sm_mp *mp, const struct net *net, int node);
void sm_mp_sw_fini(struct sm_mp_sw *s);

/* The switch's equal-cost ports towards dlid: their count (0 or 1 mean the
 * LFT's port or the only one, *ports then undefined for 0) and where they
 * start. */
static inline uint32_t sm_mp_ports(const struct sm_mp *mp, const struct sm_mp_sw *s,
				   net_lid_t dlid, const uint8_t **ports)
{
	uint32_t d = dlid < mp->nlid ? mp->dst_of_lid[dlid] : SM_MP_NONE;
	uint32_t g = d != SM_MP_NONE ? s->grp[d] : 0;

	*ports = &s->port[g >> 8];
	return g & 0xff;
}

#endif
