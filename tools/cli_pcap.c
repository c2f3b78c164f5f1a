/* SPDX-License-Identifier: MIT */
/*
 * cli_pcap.c - the simulated packets as a pcap file (`ibfab run --pcap`),
 * so that Wireshark's dissectors check the transport as an RDMA engineer
 * would: opcodes, PSNs, QPNs, AckReq, AETH syndromes and MSNs, RETH, CNPs.
 *
 * One record per packet as its first bit leaves a tapped port, stamped
 * with the simulated time in nanoseconds (pcap's nanosecond format; the
 * model's picoseconds are cut). Framing, by the fabric's kind:
 *  - InfiniBand: pcap link type 197, an Endace ERF record of type
 *    InfiniBand around each packet from its LRH on, as Mellanox's ibdump
 *    writes them; the tshark Debian ships reads these (its pcap reader
 *    does not know link type 247, raw InfiniBand). LRH
 *    (VL, SL, LNH = local, DLID, packet length in words, SLID), BTH (the
 *    opcode with its transport class from the QP type: RC 000, UC 001,
 *    UD 011; SE, pad count, P_Key 0xFFFF, FECN/BECN from the model's
 *    CE/ECE flags, DestQP, AckReq, PSN), the extension headers the opcode
 *    carries (IBA 9.2-9.4: DETH, RETH, AtomicETH, AETH, AtomicAckETH,
 *    ImmDt; a CNP's 16 reserved bytes), the payload, ICRC and VCRC.
 *  - RoCEv2 (Ethernet fabrics): link type 1, Ethernet / IPv4 / UDP to port
 *    4791, then BTH onwards and the ICRC. MACs 02:00:00:00:LID and IPv4
 *    addresses 10.0.LID (each HCA port's LID stands for its addresses),
 *    the IP ECN field ECT(0), or CE where a switch marked the packet,
 *    DSCP from the SL, the UDP source port from the sender's QPN.
 *  - TCP (fabric=tcp, RC queue pairs): Ethernet / IPv4 / TCP with the
 *    segment's sequence and acknowledgement numbers, ports from the two
 *    QPNs, ECE where the model set it.
 * Payload bytes are the program's where the verbs shim gave them (the
 * packet's data), zeros otherwise; the CRCs and checksums Wireshark does
 * not verify by default are zero (the IPv4 header checksum is computed).
 * Left out: link-level flow-control packets, which are not struct pkt.
 */
#include "tools/cli_pcap.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "models/core/pkt.h"
#include "models/hca/hca.h"
#include "models/ib/ib_pkt.h"
#include "models/roce/dcqcn.h"
#include "sim/sim_parse.h"

#define LINKTYPE_ETHERNET	1
#define LINKTYPE_ERF		197	/* Endace ERF records: the IB packet in one */
#define ERF_TYPE_INFINIBAND	21	/* its InfiniBand type, as ibdump writes it */
#define ERF_HDR			16
#define ROCE_UDP_PORT		4791
#define FRAME_MAX		(4096 + 256)

int cli_pcap_filter(struct cli_pcap *c, const char *spec, struct sim_diag *d)
{
	char buf[512], err[256];
	char *save = NULL;

	if (!spec)
		return 0;
	if (strlen(spec) >= sizeof(buf))
		return sim_diag_set(d, NULL, 0, 0, "--pcap-filter: too long");
	strcpy(buf, spec);
	for (char *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');

		if (!eq)
			return sim_diag_set(d, NULL, 0, 0,
					    "--pcap-filter: '%s' is not KEY=VALUE (node, from, to, count)", kv);
		*eq++ = 0;
		if (!strcmp(kv, "from") || !strcmp(kv, "to")) {
			if (sim_parse_time_ps(eq, !strcmp(kv, "from") ? &c->from : &c->to, err, sizeof(err)))
				return sim_diag_set(d, NULL, 0, 0, "--pcap-filter: %s: %s", kv, err);
		} else if (!strcmp(kv, "count")) {
			if (sim_parse_u64(eq, &c->count, err, sizeof(err)) || !c->count)
				return sim_diag_set(d, NULL, 0, 0, "--pcap-filter: count: expected a positive number, got '%s'", eq);
		} else if (!strcmp(kv, "node")) {
			/* the link[...] selector's syntax and matching */
			char ls[160];
			struct fab_params p;

			fab_params_default(&p);
			snprintf(ls, sizeof(ls), "link[%s].state=active", eq);
			if (fab_params_set(&p, ls, d))
				return sim_diag_set(d, NULL, 0, 0, "--pcap-filter: node=%s: expected NODE, NODE/PORT or NODE/LO-HI", eq);
			c->where = p.link_sets[0];
			c->has_where = true;
		} else {
			return sim_diag_set(d, NULL, 0, 0,
					    "--pcap-filter: unknown key '%s' (node, from, to, count)", kv);
		}
	}
	if (c->to && c->to < c->from)
		return sim_diag_set(d, NULL, 0, 0, "--pcap-filter: to is before from");
	return 0;
}

static void put16(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)(v >> 8);
	b[1] = (uint8_t)v;
}

static void put24(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)(v >> 16);
	b[1] = (uint8_t)(v >> 8);
	b[2] = (uint8_t)v;
}

static void put32(uint8_t *b, uint32_t v)
{
	put16(b, v >> 16);
	put16(b + 2, v);
}

static void put64(uint8_t *b, uint64_t v)
{
	put32(b, (uint32_t)(v >> 32));
	put32(b + 4, (uint32_t)v);
}

static void le32(FILE *f, uint32_t v)
{
	uint8_t b[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };

	fwrite(b, 1, 4, f);
}

/* The BTH opcode on the wire: the model's RC operation in the QP type's
 * transport class (IBA 9.2, Table 38). A CNP is its own class. */
static uint8_t wire_opcode(const struct pkt *p)
{
	if (p->opcode == IB_OP_CNP)
		return IB_OP_CNP;
	switch (p->qpt) {
	case HCA_QPT_UC: return (uint8_t)(0x20 | p->opcode);
	case HCA_QPT_UD: return (uint8_t)(0x60 | p->opcode);
	default: return p->opcode;
	}
}

static bool has_reth(uint8_t op)
{
	return op == IB_OP_WRITE_FIRST || op == IB_OP_WRITE_ONLY || op == IB_OP_WRITE_ONLY_IMM ||
	       op == IB_OP_READ_REQUEST;
}

static bool has_aeth(uint8_t op)
{
	return op == IB_OP_ACK || op == IB_OP_READ_RESP_FIRST || op == IB_OP_READ_RESP_LAST ||
	       op == IB_OP_READ_RESP_ONLY || op == IB_OP_ATOMIC_ACK;
}

static bool has_imm(uint8_t op)
{
	return op == IB_OP_SEND_LAST_IMM || op == IB_OP_SEND_ONLY_IMM ||
	       op == IB_OP_WRITE_LAST_IMM || op == IB_OP_WRITE_ONLY_IMM;
}

/* BTH and what follows it up to the end of the payload and its pad; the
 * length. */
static size_t transport(const struct pkt *p, uint8_t *b)
{
	uint8_t op = p->opcode;
	bool cnp = op == IB_OP_CNP;
	uint32_t pay = cnp ? 0 : p->payload, pad = (4 - (pay & 3)) & 3;
	size_t n = 12;

	b[0] = wire_opcode(p);
	b[1] = (uint8_t)(((p->flags & IB_PKT_SOLICITED) ? 0x80 : 0) | (pad << 4));
	put16(b + 2, 0xffff);				/* P_Key: the default partition */
	b[4] = (uint8_t)(((p->flags & IB_PKT_CE) ? 0x80 : 0) | ((p->flags & IB_PKT_ECE) ? 0x40 : 0));
	put24(b + 5, p->dqpn);
	b[8] = (p->flags & IB_PKT_ACKREQ) ? 0x80 : 0;
	put24(b + 9, p->psn & 0xffffff);
	if (cnp) {
		memset(b + n, 0, 16);			/* RoCEv2 CNP: 16 reserved bytes */
		return n + 16;
	}
	if (p->qpt == HCA_QPT_UD) {			/* DETH: Q_Key (the model keeps it in va), SrcQP */
		put32(b + n, (uint32_t)p->va);
		b[n + 4] = 0;
		put24(b + n + 5, p->sqpn);
		n += 8;
	}
	if (p->qpt != HCA_QPT_UD && has_reth(op)) {
		put64(b + n, p->va);
		put32(b + n + 8, p->rkey);
		put32(b + n + 12, p->dma_len);
		n += 16;
	}
	if (op == IB_OP_CMP_SWAP || op == IB_OP_FETCH_ADD) {	/* AtomicETH */
		put64(b + n, p->va);
		put32(b + n + 8, p->rkey);
		put64(b + n + 12, p->atomic[op == IB_OP_CMP_SWAP ? 1 : 0]);
		put64(b + n + 20, op == IB_OP_CMP_SWAP ? p->atomic[0] : 0);
		n += 28;
	}
	if (has_aeth(op)) {
		b[n] = p->aeth;
		put24(b + n + 1, p->msn & 0xffffff);
		n += 4;
	}
	if (op == IB_OP_ATOMIC_ACK) {			/* AtomicAckETH: the original value */
		put64(b + n, p->atomic[0]);
		n += 8;
	}
	if (has_imm(op)) {
		put32(b + n, p->imm);
		n += 4;
	}
	if (p->data)
		memcpy(b + n, p->data, pay);
	else
		memset(b + n, 0, pay);
	memset(b + n + pay, 0, pad);
	return n + pay + pad;
}

static uint16_t ip_checksum(const uint8_t *h)
{
	uint32_t s = 0;

	for (int i = 0; i < 20; i += 2)
		s += (uint32_t)h[i] << 8 | h[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* Ethernet and IPv4 for a packet from address slid to dlid carrying `len`
 * bytes of IP payload; the offset where that payload goes. The addresses
 * are 02:00:00 and 10 followed by the node's 24-bit address. */
static size_t eth_ip(const struct pkt *p, uint8_t *b, size_t len, uint8_t proto)
{
	static const uint8_t mac[3] = { 0x02, 0, 0 };
	uint8_t *ip = b + 14;

	memcpy(b, mac, 3);
	put24(b + 3, p->dlid);
	memcpy(b + 6, mac, 3);
	put24(b + 9, p->slid);
	put16(b + 12, 0x0800);
	ip[0] = 0x45;
	ip[1] = (uint8_t)(((p->sl & 7) << 5) | ((p->flags & IB_PKT_CE) ? 3 : 2));
	put16(ip + 2, (uint32_t)(20 + len));
	put16(ip + 4, 0);
	put16(ip + 6, 0x4000);				/* don't fragment */
	ip[8] = 64;
	ip[9] = proto;
	put16(ip + 10, 0);
	ip[12] = 10;
	put24(ip + 13, p->slid);
	ip[16] = 10;
	put24(ip + 17, p->dlid);
	put16(ip + 10, ip_checksum(ip));
	return 34;
}

static size_t frame_ib(const struct pkt *p, uint8_t *b)
{
	size_t t = transport(p, b + 8);
	uint32_t words = (uint32_t)(8 + t + 4) / 4;	/* LRH to ICRC, in 4-byte words */

	b[0] = (uint8_t)(p->vl << 4);			/* VL, LVer 0 */
	b[1] = (uint8_t)(((p->sl & 15) << 4) | 0x2);	/* SL, LNH: IBA local (BTH next) */
	put16(b + 2, p->dlid);
	put16(b + 4, words & 0x7ff);
	put16(b + 6, p->slid);
	memset(b + 8 + t, 0, 6);			/* ICRC, VCRC */
	return 8 + t + 6;
}

static size_t frame_roce(const struct pkt *p, uint8_t *b)
{
	uint8_t bth[FRAME_MAX];
	size_t t = transport(p, bth), off = eth_ip(p, b, 8 + t + 4, 17);

	put16(b + off, 0xc000 | (p->sqpn & 0x3fff));	/* the QP's entropy, as RoCEv2 allows */
	put16(b + off + 2, ROCE_UDP_PORT);
	put16(b + off + 4, (uint32_t)(8 + t + 4));
	put16(b + off + 6, 0);
	memcpy(b + off + 8, bth, t);
	memset(b + off + 8 + t, 0, 4);			/* ICRC */
	return off + 8 + t + 4;
}

static size_t frame_tcp(const struct pkt *p, uint8_t *b)
{
	uint32_t pay = p->payload;
	size_t off = eth_ip(p, b, 20 + pay, 6);
	uint8_t *t = b + off;

	put16(t, 0x8000 | (p->sqpn & 0x7fff));
	put16(t + 2, 0x8000 | (p->dqpn & 0x7fff));
	put32(t + 4, (uint32_t)p->tcp.seq);
	put32(t + 8, (uint32_t)p->tcp.ack);
	t[12] = 5 << 4;					/* 20-byte header */
	t[13] = (uint8_t)(0x10 | (pay ? 0x08 : 0) | ((p->flags & IB_PKT_ECE) ? 0x40 : 0));
	put16(t + 14, 0xffff);
	put32(t + 16, 0);
	if (p->data)
		memcpy(t + 20, p->data, pay);
	else
		memset(t + 20, 0, pay);
	return off + 20 + pay;
}

static void tap(void *ctx, int port, const struct pkt *p, sim_time_t t)
{
	struct cli_pcap *c = ctx;
	uint8_t b[FRAME_MAX];
	size_t len;

	(void)port;
	if (t < c->from || (c->to && t > c->to) || (c->count && c->n >= c->count) ||
	    p->payload > 4096)
		return;
	if (!fab_kinds[c->fabric].eth)
		len = frame_ib(p, b);
	else if (fab_kinds[c->fabric].tcp && p->qpt == HCA_QPT_RC && p->opcode != IB_OP_CNP)
		len = frame_tcp(p, b);
	else
		len = frame_roce(p, b);
	le32(c->f, (uint32_t)(t / SIM_S));
	le32(c->f, (uint32_t)(t % SIM_S / SIM_NS));
	if (!fab_kinds[c->fabric].eth) {
		/* ERF: the time again (seconds, then a binary fraction of one,
		 * little-endian), the record type, flags (varying length),
		 * record length, loss counter, wire length (big-endian) */
		uint8_t h[ERF_HDR];
		uint64_t frac = (uint64_t)(((unsigned __int128)(t % SIM_S) << 32) / SIM_S);
		uint64_t ts = (uint64_t)(t / SIM_S) << 32 | frac;

		for (int i = 0; i < 8; i++)
			h[i] = (uint8_t)(ts >> (8 * i));
		h[8] = ERF_TYPE_INFINIBAND;
		h[9] = 0x04;
		put16(h + 10, (uint32_t)(ERF_HDR + len));
		put16(h + 12, 0);
		put16(h + 14, (uint32_t)len);
		le32(c->f, (uint32_t)(ERF_HDR + len));
		le32(c->f, (uint32_t)(ERF_HDR + len));
		fwrite(h, 1, ERF_HDR, c->f);
	} else {
		le32(c->f, (uint32_t)len);
		le32(c->f, (uint32_t)len);
	}
	if (fwrite(b, 1, len, c->f) != len)
		c->err = true;
	c->n++;
}

int cli_pcap_start(struct cli_pcap *c, FILE *f, struct fab *fab, const struct net *net,
		   struct sim_diag *d)
{
	int tapped = 0;

	c->f = f;
	c->fabric = fab_get_params(fab)->fabric;
	for (int i = 0; i < fab_nports(fab); i++) {
		const struct fab_port_info *pi = fab_port(fab, i);
		const struct net_node *n = &net->nodes[pi->node];

		if (c->has_where ? !fab_link_set_matches(&c->where, n, pi->port) &&
				   !fab_link_set_matches(&c->where, &net->nodes[pi->peer_node], pi->peer_port) :
				   n->type == NET_SWITCH)
			continue;
		fab_set_tap(fab, i, tap, c);
		tapped++;
	}
	if (!tapped)
		return sim_diag_set(d, NULL, 0, 0, "--pcap-filter: node=%s: no connected port matches",
				    c->where.node);
	le32(f, 0xa1b23c4d);				/* pcap, nanosecond time stamps */
	fputc(2, f), fputc(0, f), fputc(4, f), fputc(0, f);	/* version 2.4 */
	le32(f, 0);					/* GMT offset */
	le32(f, 0);					/* accuracy */
	le32(f, ERF_HDR + FRAME_MAX);			/* snapshot length */
	le32(f, fab_kinds[c->fabric].eth ? LINKTYPE_ETHERNET : LINKTYPE_ERF);
	return 0;
}
