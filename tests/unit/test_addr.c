/* SPDX-License-Identifier: MIT */
/*
 * test_addr.c - node addresses past 16 bits (net_lid_t). InfiniBand's LIDs
 * stop at 49,151 (IBA 4.1.3); an Ethernet fabric of 65,536 hosts needs
 * more, so the model's addresses are 32-bit everywhere (net, subnet
 * manager, packets, ports, HCAs). A fabric whose every address is moved
 * past 65,535 must route and run exactly as with its own LIDs: a 16-bit
 * truncation anywhere would send a packet by the wrong table entry. The
 * generator writes a fabric beyond InfiniBand's LIDs without them, and the
 * subnet manager refuses it on InfiniBand, saying why. A capture gives
 * every node its own Ethernet and IP address from the 24 bits.
 */
#include "models/fabric/fab.h"
#include "models/net/net.h"
#include "models/sm/sm.h"
#include "tests/unit/test_main.h"
#include "tests/unit/util_fabric.h"
#include "tools/cli_pcap.h"
#include "topologies/topo.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHIFT 100000u

/* A 4-leaf fat tree, every node's address moved by shift (0: its own). */
static void build(struct net *n, net_lid_t shift)
{
	struct sim_diag d;

	CU_ASSERT_FATAL(topo_gen_fattree2_net(n, 4, 2, 4, 1, "4xHDR", &d) == 0);
	if (shift) {
		n->lid_limit = NET_ADDR_MAX;
		for (int i = 0; i < n->nnodes; i++) {
			struct net_node *nd = &n->nodes[i];

			if (nd->type == NET_SWITCH)
				nd->lid += shift;
			else
				for (int p = 1; p <= nd->nports; p++)
					if (nd->ports[p].lid)
						nd->ports[p].lid += shift;
		}
		CU_ASSERT_FATAL(net_install_lids(n, &d) == 0);
	}
	CU_ASSERT_FATAL(sm_route_minhop(n, &d) == 0);
}

static void run(net_lid_t shift, const char *fabric, struct fab_totals *t, sim_time_t *end)
{
	struct net n;
	struct fab_params p;
	struct fab_msgs m = { 0 };
	int hosts[16], nh = 0;

	build(&n, shift);
	if (shift)
		CU_ASSERT(n.max_lid > SHIFT);
	for (int i = 0; i < n.nnodes; i++)
		if (n.nodes[i].type == NET_CA)
			hosts[nh++] = i;
	CU_ASSERT_FATAL(nh == 16);
	tf_params(&p, "hdr");
	tf_set(&p, fabric);
	for (int i = 0; i < nh; i++)	/* a shift by 5 across the leaves, and an incast */
		tf_add_msg(&m, hosts[i], hosts[(i + 5) % nh], 256 * 1024, (uint32_t)i, 0);
	for (int i = 1; i < 8; i++)
		tf_add_msg(&m, hosts[i], hosts[0], 64 * 1024, (uint32_t)(nh + i), 0);
	struct fab *f = tf_run(&n, &p, &m);

	fab_totals(f, t);
	*end = fab_engine(f)->now;
	fab_destroy(f);
	fab_msgs_free(&m);
	net_free(&n);
}

static void test_addr_shifted(void)
{
	static const char *const fabrics[] = { "fabric=ib", "fabric=roce", "fabric=tcp" };

	for (size_t k = 0; k < sizeof(fabrics) / sizeof(fabrics[0]); k++) {
		struct fab_totals a, b;
		sim_time_t ea, eb;

		run(0, fabrics[k], &a, &ea);
		run(SHIFT, fabrics[k], &b, &eb);
		CU_ASSERT(a.msgs_done == 23 && b.msgs_done == 23);
		CU_ASSERT(a.drops == 0 && b.drops == 0);
		/* RoCE's and TCP's paths come from a hash of the addresses:
		 * other addresses may take other equal-cost paths (and their
		 * queues other ACKs); the table's InfiniBand is the same to the
		 * picosecond and the packet */
		if (k == 0)
			CU_ASSERT(ea == eb && a.packet_hops == b.packet_hops);
		if (getenv("IBFAB_TEST_VERBOSE"))
			fprintf(stderr, "%s: end %llu / %llu ps, hops %llu / %llu\n", fabrics[k],
				(unsigned long long)ea, (unsigned long long)eb,
				(unsigned long long)a.packet_hops, (unsigned long long)b.packet_hops);
	}
}

static void test_addr_limits(void)
{
	struct net n;
	struct sim_diag d;
	char buf[512];

	/* InfiniBand's limit: 20 addresses asked of a 22-node fabric */
	CU_ASSERT_FATAL(topo_gen_fattree2_net(&n, 4, 2, 4, 1, "4xHDR", &d) == 0);
	CU_ASSERT(n.max_lid == 22);
	n.lid_limit = 20;
	for (int i = 0; i < n.nnodes; i++)	/* make it assign afresh */
		if (n.nodes[i].type == NET_CA)
			n.nodes[i].ports[1].lid = 0;
	CU_ASSERT(net_assign_lids(&n, &d) != 0);
	sim_diag_format(&d, buf, sizeof(buf));
	CU_ASSERT(strstr(buf, "more than 20 addresses") != NULL);
	n.lid_limit = 0;	/* InfiniBand's own: room */
	CU_ASSERT(net_assign_lids(&n, &d) == 0);
	CU_ASSERT(net_lid_limit(&n) == NET_LID_UCAST_MAX);
	net_free(&n);
}

/*
 * A RoCE capture of the moved fabric: every frame's MACs end in the 24-bit
 * addresses of its ends (02:00:00 + 3 bytes), past 65,535 here; 16 bits
 * would have made them collide with others'.
 */
static void test_addr_capture(void)
{
	struct net n;
	struct fab_params p;
	struct fab_msgs m = { 0 };
	struct sim_diag d;
	struct cli_pcap c = { 0 };
	int hosts[16], nh = 0;
	FILE *f = tmpfile();

	CU_ASSERT_FATAL(f != NULL);
	build(&n, SHIFT);
	for (int i = 0; i < n.nnodes; i++)
		if (n.nodes[i].type == NET_CA)
			hosts[nh++] = i;
	tf_params(&p, "hdr");
	tf_set(&p, "fabric=roce");
	for (int i = 0; i < nh; i++)
		tf_add_msg(&m, hosts[i], hosts[(i + 5) % nh], 8192, (uint32_t)i, 0);
	struct fab *fb = fab_create(&n, &p, &m, 1, &d);

	CU_ASSERT_FATAL(fb != NULL);
	c.fabric = p.fabric;
	CU_ASSERT_FATAL(cli_pcap_start(&c, f, fb, &n, &d) == 0);
	CU_ASSERT(fab_run(fb, &d) == 0);
	fflush(f);
	rewind(f);
	uint8_t hdr[24], rec[16], frame[64];
	uint64_t frames = 0, bad = 0;

	CU_ASSERT_FATAL(fread(hdr, 1, sizeof(hdr), f) == sizeof(hdr));
	while (fread(rec, 1, sizeof(rec), f) == sizeof(rec)) {
		uint32_t incl = (uint32_t)rec[8] | (uint32_t)rec[9] << 8 | (uint32_t)rec[10] << 16 |
				(uint32_t)rec[11] << 24;
		uint8_t *buf = malloc(incl);

		CU_ASSERT_FATAL(buf && fread(buf, 1, incl, f) == incl && incl >= 34);
		memcpy(frame, buf, 34);
		free(buf);
		uint32_t dst = (uint32_t)frame[3] << 16 | (uint32_t)frame[4] << 8 | frame[5];
		uint32_t src = (uint32_t)frame[9] << 16 | (uint32_t)frame[10] << 8 | frame[11];
		uint32_t ipsrc = (uint32_t)frame[27] << 16 | (uint32_t)frame[28] << 8 | frame[29];

		frames++;
		bad += frame[0] != 2 || dst <= SHIFT || dst > n.max_lid || src <= SHIFT ||
		       src > n.max_lid || ipsrc != src || frame[26] != 10;
	}
	CU_ASSERT(frames > 16);
	CU_ASSERT(bad == 0);
	fclose(f);
	fab_destroy(fb);
	fab_msgs_free(&m);
	net_free(&n);
}

static const struct test_case tests[] = {
	{ "a RoCE capture's addresses past 65,535", test_addr_capture },
	{ "addresses past 65,535 route and run as the fabric's own", test_addr_shifted },
	{ "the address limits: InfiniBand's, and a smaller one refused by name", test_addr_limits },
	{ NULL, NULL },
};

TEST_MAIN("addr", tests)
