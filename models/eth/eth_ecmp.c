/* SPDX-License-Identifier: MIT */
/*
 * eth_ecmp.c - equal-cost multi-path forwarding at the Ethernet switches
 * (eth.lb=ecmp, the default), as Clos data-centre fabrics route: a switch
 * sends a packet to one of its output ports on a shortest path to the
 * destination, chosen by a hash of the packet's flow, so that a flow's
 * packets keep one path (RoCE's RC needs them in order) and different
 * flows spread. The flow is the RoCEv2 5-tuple: source and destination
 * addresses (the LIDs stand for them), protocol (UDP), UDP source port
 * and destination port (4791); for TCP the two QPs stand for the two
 * ports. A NIC sets the RoCEv2 source port per QP pair (Linux's
 * rdma_get_udp_sport, include/rdma/ib_verbs.h, from the flow label of
 * the local and remote QP numbers, as mlx5 does), so both QPs stand for
 * it. eth.hash_fields chooses the fields hashed (all by default, as
 * switches do); a field that is the same for every packet of the run
 * (the protocol, RoCEv2's destination port) adds nothing. Two flows that hash
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
 * eth.lb=flowlet and eth.lb=spray choose by load instead
 * (models/switch/sw_lb.c), with the same sets.
 * Left out: weighted ECMP, resilient hashing.
 */
#include "models/eth/eth_int.h"

#include "models/sm/sm_mp.h"

/* An egress port's load for flowlets and spraying: the cells its queues
 * hold, every priority (they share the wire). */
static int64_t eth_load(const struct fab_node *n, struct port *out, const struct pkt *p)
{
	const struct eth_port *e = eth_of(out);
	int64_t q = 0;

	(void)n;
	(void)p;
	for (int i = 0; i < ETH_NPRIO; i++)
		q += e->q_cells[i];
	return q;
}

/* The fields of packet p's flow that ECMP hashes; with every field, the
 * flow of sw_lb_flow. */
static inline uint64_t eth_hash_key(const struct pkt *p, uint8_t fields, bool tcp)
{
	uint64_t k = 0;

	if (fields & ETH_HASH_SIP)
		k ^= (uint64_t)p->slid << 48;
	if (fields & ETH_HASH_DIP)
		k ^= (uint64_t)p->dlid << 32;
	if (fields & ETH_HASH_SPORT)	/* TCP: the source's port; RoCEv2: the QP pair's */
		k ^= (uint64_t)(p->sqpn & 0xffffff) << 8 ^ (tcp ? 0 : (uint64_t)p->dqpn << 20);
	if (fields & ETH_HASH_DPORT && tcp)	/* RoCEv2's is 4791 */
		k ^= (uint64_t)p->dqpn << 20;
	return k;
}

int eth_ecmp_init(struct fab *f, struct fab_node *n, struct eth_sw *s)
{
	uint8_t lb = f->p.eth.lb;

	if (lb == ETH_LB_STATIC)
		return 0;
	if (sw_lb_init(&s->lb, f, n, eth_load, lb == ETH_LB_FLOWLET ? f->p.eth.flowlet_ns : 0))
		return -1;
	/* this switch's own draw of the hash (no polarisation across levels) */
	s->hash_seed = f->p.eth.hash_seed ^ (0x9e3779b97f4a7c15ULL * ((uint64_t)n->idx + 1));
	return 0;
}

int eth_ecmp_route(struct port *in, uint32_t idx)
{
	struct fab *f = in->fab;
	const struct eth_sw *s = in->node->eth;
	struct pkt *p = fab_pkt(f, idx);
	const uint8_t *ports;
	uint32_t cnt;

	if (f->p.eth.lb != ETH_LB_ECMP) {
		int o = sw_lb_pick(&in->node->eth->lb, f, in->node, p,
				   p->dlid < in->node->lft_len ? in->node->lft[p->dlid] : 0);

		if (o <= 0)
			return sw_route(in, idx);
		pkt_route_step(p, (uint32_t)in->node->idx, (uint8_t)o);
		return o;
	}
	cnt = sm_mp_ports(f->mp, &s->lb.mp, p->dlid, &ports);
	if (cnt == 0)
		return sw_route(in, idx);	/* local, or unreachable: the LFT */
	uint64_t h = sim_mix64(eth_hash_key(p, f->p.eth.hash_fields, fab_kind_of(&f->p)->tcp) ^
			       s->hash_seed);

	/* a dead next hop: the next live one in the set (the switch knows
	 * its own links before the routes change) */
	for (uint32_t k = 0; k < cnt; k++) {
		int o = ports[(h + k) % cnt];

		if (!in->node->ports[o]->down) {
			pkt_route_step(p, (uint32_t)in->node->idx, (uint8_t)o);
			return o;
		}
	}
	return sw_route(in, idx);
}
