/* SPDX-License-Identifier: MIT */
/*
 * eth_ecmp.c - equal-cost multi-path forwarding at the Ethernet switches
 * (eth.lb=ecmp, the default), as Clos data-centre fabrics route: a switch
 * sends a packet to one of its output ports on a shortest path to the
 * destination, chosen by a hash of the packet's flow, so that a flow's
 * packets keep one path (RoCE's RC needs them in order) and different
 * flows spread. The flow is the RoCEv2 5-tuple: source and destination
 * addresses (the LIDs stand for them), UDP source port (which NICs derive
 * from the QP number, so the QP stands for it) and destination port
 * (4791); for TCP the two QPs stand for the two ports. Two flows that hash
 * to the same up-link share it while others stay idle: the collisions
 * that make RoCE fabrics lose throughput under permutations, which
 * InfiniBand's deterministic ftree routing avoids (docs/ethernet.md).
 *
 * The equal-cost sets are the subnet manager's multipath sets
 * (models/sm/sm_mp.c: the output ports whose far switch is one hop
 * closer to the destination's switch); a destination on the switch
 * itself, or one no switch path reaches, goes by the subnet manager's
 * table (eth.lb=static always does). Each switch mixes its own
 * index and eth.hash_seed into the hash, so that the levels of a tree do
 * not choose in lockstep (hash polarisation).
 * Left out: weighted ECMP, resilient hashing, flowlet switching and
 * per-packet spraying (which needs a receiver that reorders).
 */
#include "models/eth/eth_int.h"

#include "models/sm/sm_mp.h"

int eth_ecmp_init(struct fab *f, struct fab_node *n, struct eth_sw *s)
{
	if (f->p.eth.lb != ETH_LB_ECMP)
		return 0;
	if (!f->mp && !(f->mp = sm_mp_build(f->net)))
		return -1;
	if (sm_mp_sw_init(&s->mp, f->mp, f->net, n->idx))
		return -1;
	/* this switch's own draw of the hash (no polarisation across levels) */
	s->hash_seed = f->p.eth.hash_seed ^ (0x9e3779b97f4a7c15ULL * ((uint64_t)n->idx + 1));
	return 0;
}

/* splitmix64's finaliser: every input bit moves every output bit. */
static inline uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

int eth_ecmp_route(struct port *in, uint32_t idx)
{
	struct fab *f = in->fab;
	const struct eth_sw *s = in->node->eth;
	const struct pkt *p = fab_pkt(f, idx);
	const uint8_t *ports;
	uint32_t cnt = sm_mp_ports(f->mp, &s->mp, p->dlid, &ports);

	if (cnt == 0)
		return sw_route(in, idx);	/* local, or unreachable: the LFT */
	if (cnt == 1)
		return ports[0];
	/* the flow: addresses, and the QPs standing for the UDP/TCP ports */
	uint64_t key = ((uint64_t)p->slid << 48) ^ ((uint64_t)p->dlid << 32) ^
		       ((uint64_t)(p->sqpn & 0xffffff) << 8) ^ ((uint64_t)p->dqpn << 20);

	return ports[mix(key ^ s->hash_seed) % cnt];
}
