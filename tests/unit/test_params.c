/* SPDX-License-Identifier: MIT */
/*
 * test_params.c - fabric parameters: presets (rates and the documented
 * buffer-sizing rule), every key settable and printable, bad values refused
 * with the key named, "did you mean", cross-field checks, and tables
 * following ib.vls until they are set explicitly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/fabric/fab.h"
#include "models/ib/ib_pkt.h"
#include "models/link/link.h"
#include "models/net/net.h"
#include "topologies/topo.h"
#include "tests/unit/test_main.h"

static struct sim_diag d;

#define SET_OK(p, kv) do {						\
	int rc_ = fab_params_set((p), (kv), &d);			\
	if (rc_)							\
		fprintf(stderr, "\n  set '%s': %s\n", (kv), d.msg);	\
	CU_ASSERT_EQUAL_FATAL(rc_, 0);					\
} while (0)

/* Refused, and the message contains every needle (NULL-terminated). */
static void set_bad(const char *kv, const char *n1, const char *n2)
{
	struct fab_params p, before;

	fab_params_default(&p);
	memcpy(&before, &p, sizeof(p));
	sim_diag_clear(&d);
	CU_ASSERT_EQUAL(fab_params_set(&p, kv, &d), -1);
	if ((n1 && !strstr(d.msg, n1)) || (n2 && !strstr(d.msg, n2)))
		fprintf(stderr, "\n  set '%s': message '%s' lacks '%s' / '%s'\n", kv, d.msg,
			n1, n2 ? n2 : "");
	if (n1)
		CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, n1));
	if (n2)
		CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, n2));
	/* a refused value changes nothing */
	CU_ASSERT_EQUAL(memcmp(&p, &before, sizeof(p)), 0);
}

static void check_fails(const struct fab_params *p, const char *n1, const char *n2)
{
	sim_diag_clear(&d);
	CU_ASSERT_EQUAL(fab_params_check(p, &d), -1);
	if ((n1 && !strstr(d.msg, n1)) || (n2 && !strstr(d.msg, n2)))
		fprintf(stderr, "\n  check: message '%s' lacks '%s' / '%s'\n", d.msg, n1,
			n2 ? n2 : "");
	if (n1)
		CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, n1));
	if (n2)
		CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, n2));
}

static void check_ok(const struct fab_params *p)
{
	int rc = fab_params_check(p, &d);

	if (rc)
		fprintf(stderr, "\n  check: %s\n", d.msg);
	CU_ASSERT_EQUAL(rc, 0);
}

static const struct {
	const char *name;
	double gbps;		/* 4x data rate, numbers.md */
	uint32_t mtu;
} expect[] = {
	{ "sdr", 8, 2048 }, { "ddr", 16, 2048 }, { "qdr", 32, 2048 },
	{ "fdr10", 40, 4096 }, { "fdr", 54.5454545, 4096 }, { "edr", 100, 4096 },
	{ "hdr", 200, 4096 }, { "ndr", 400, 4096 }, { "xdr", 800, 4096 },
};

static void test_presets(void)
{
	int n = 0;

	for (const char *const *name = fab_preset_names; *name; name++, n++) {
		struct fab_params p;

		fab_params_default(&p);
		CU_ASSERT_EQUAL_FATAL(fab_params_preset(&p, *name, &d), 0);
		CU_ASSERT_STRING_EQUAL(p.preset, *name);
		check_ok(&p);
		CU_ASSERT_STRING_EQUAL(expect[n].name, *name);
		CU_ASSERT_EQUAL(p.lanes, 4);
		CU_ASSERT_FALSE(p.link_forced);
		CU_ASSERT_EQUAL(p.mtu, expect[n].mtu);
		CU_ASSERT_EQUAL(p.vls, 4);
		CU_ASSERT_DOUBLE_EQUAL(link_data_rate_bps((struct link_rate){ p.lanes, p.speed }),
				       expect[n].gbps * 1e9, 1e3);
		CU_ASSERT(p.sw_latency_ns >= 50 && p.sw_latency_ns <= 300);
		CU_ASSERT(p.hca_latency_ns > 0 && p.hca_latency_ns <= 2000);
		CU_ASSERT_EQUAL(p.cable_m, 3.0);
		CU_ASSERT_EQUAL(p.ps_per_m, 5000);

		/*
		 * The sizing rule of fab_params.c: need = rate x (2 x 30 m x
		 * 5 ns/m + switch latency + 10 ns) + one max packet; the
		 * buffer is the smallest power of two >= 2 x need, and never
		 * more than 2048 credit blocks.
		 */
		double bytes_per_ns = expect[n].gbps / 8;
		double loop_ns = 2 * 30 * 5 + p.sw_latency_ns + 10;
		double pkt = ib_blocks(ib_wire_bytes(p.mtu, 1)) * 64.0;
		double need = bytes_per_ns * loop_ns + pkt;
		uint32_t b = p.vl_buf_bytes;

		CU_ASSERT_EQUAL(b & (b - 1), 0);
		CU_ASSERT(b >= 2 * need);
		CU_ASSERT(b / 2 < 2 * need);
		CU_ASSERT(b <= 2048 * 64);
		CU_ASSERT(p.hca_buf_bytes >= b);
		CU_ASSERT(p.vl15_buf_bytes >= 290 && p.vl15_buf_bytes <= 1024);
	}
	CU_ASSERT_EQUAL(n, (int)SIM_ARRAY_SIZE(expect));
	{
		struct fab_params p;

		fab_params_default(&p);
		CU_ASSERT_STRING_EQUAL(p.preset, "hdr");
		CU_ASSERT_EQUAL(p.vl_buf_bytes, 32768);
		CU_ASSERT_EQUAL(fab_params_preset(&p, "ndr", &d), 0);
		CU_ASSERT_EQUAL(p.vl_buf_bytes, 65536);
		CU_ASSERT_EQUAL(fab_params_preset(&p, "HDR", &d), 0);	/* any case */
		CU_ASSERT_EQUAL(p.speed, LINK_HDR);
		CU_ASSERT_EQUAL(fab_params_preset(&p, "hdrr", &d), -1);
		CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "unknown preset 'hdrr'"));
		CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "did you mean 'hdr'"));
		CU_ASSERT_EQUAL(fab_params_preset(&p, "omnipath", &d), -1);
		CU_ASSERT_PTR_NULL(strstr(d.msg, "did you mean"));
		CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "sdr, ddr"));
	}
}

static void test_defaults(void)
{
	struct fab_params a, b;

	fab_params_default(&a);
	memset(&b, 0, sizeof(b));
	CU_ASSERT_EQUAL(fab_params_preset(&b, "hdr", &d), 0);
	/* a preset leaves sim.* alone: the one non-zero run default */
	CU_ASSERT_EQUAL(b.max_csv_rows, 0);
	b.max_csv_rows = FAB_MAX_CSV_ROWS;
	/* nor does it touch the GPU servers: none unless asked for */
	CU_ASSERT_EQUAL(b.server.gpus, 0);
	CU_ASSERT_STRING_EQUAL(a.server.preset, "none");
	srv_params_default(&b.server);
	CU_ASSERT_EQUAL(memcmp(&a, &b, sizeof(a)), 0);
	CU_ASSERT_EQUAL(a.max_memory, 0);	/* half of the machine's, decided when used */
	CU_ASSERT_EQUAL(a.tcp.retries2, 15);
	for (int sl = 0; sl < FAB_NSL; sl++)
		CU_ASSERT_EQUAL(a.sl2vl[sl], sl % 4);
	CU_ASSERT_EQUAL(a.vlarb.nhigh, 0);
	CU_ASSERT_EQUAL(a.vlarb.nlow, 4);
	for (int i = 0; i < 4; i++) {
		CU_ASSERT_EQUAL(a.vlarb.low[i].vl, i);
		CU_ASSERT_EQUAL(a.vlarb.low[i].weight, 64);
	}
	CU_ASSERT_EQUAL(a.vlarb.limit, 0);
	CU_ASSERT_EQUAL(a.fc_threshold, 1);
	CU_ASSERT_EQUAL(a.fc_period_ns, 0);
	CU_ASSERT_EQUAL(a.sample_ns, 0);
	CU_ASSERT_EQUAL(a.max_time_ns, 0);
	CU_ASSERT_FALSE(a.check);
	/* SHARP's streaming trees: hdr is Quantum (one per switch), ndr
	 * Quantum-2 (one per port), unless set */
	CU_ASSERT_EQUAL(fab_sharp_sat(&a), FAB_SAT_SWITCH);
	CU_ASSERT_EQUAL(fab_params_preset(&b, "ndr", &d), 0);
	CU_ASSERT_EQUAL(fab_sharp_sat(&b), FAB_SAT_PORT);
	SET_OK(&b, "ib.sharp_sat=none");
	CU_ASSERT_EQUAL(fab_sharp_sat(&b), FAB_SAT_NONE);
	SET_OK(&b, "ib.sharp_sat=switch");
	CU_ASSERT_EQUAL(fab_sharp_sat(&b), FAB_SAT_SWITCH);
}

static void test_set_every_key(void)
{
	struct fab_params p;

	fab_params_default(&p);
	SET_OK(&p, "link.width=12x");
	CU_ASSERT_EQUAL(p.lanes, 12);
	CU_ASSERT_TRUE(p.link_forced);
	fab_params_default(&p);
	SET_OK(&p, "link.speed=edr");
	CU_ASSERT_EQUAL(p.speed, LINK_EDR);
	CU_ASSERT_TRUE(p.link_forced);
	SET_OK(&p, "link.width=1");
	CU_ASSERT_EQUAL(p.lanes, 1);
	SET_OK(&p, "link.cable_m=12.5");
	CU_ASSERT_EQUAL(p.cable_m, 12.5);
	SET_OK(&p, "link.cable_m=0");
	CU_ASSERT_EQUAL(p.cable_m, 0);
	SET_OK(&p, "link.ps_per_m=4900");
	CU_ASSERT_EQUAL(p.ps_per_m, 4900);
	SET_OK(&p, "ib.mtu=2048");
	CU_ASSERT_EQUAL(p.mtu, 2048);
	SET_OK(&p, "ib.mtu=1KiB");
	CU_ASSERT_EQUAL(p.mtu, 1024);
	SET_OK(&p, "ib.vls=8");
	CU_ASSERT_EQUAL(p.vls, 8);
	SET_OK(&p, "ib.buffer=64KiB");
	CU_ASSERT_EQUAL(p.vl_buf_bytes, 65536);
	SET_OK(&p, "ib.buffer=8192");
	CU_ASSERT_EQUAL(p.vl_buf_bytes, 8192);
	SET_OK(&p, "ib.vl15_buffer=1KiB");
	CU_ASSERT_EQUAL(p.vl15_buf_bytes, 1024);
	SET_OK(&p, "ib.fc_period_ns=262us");
	CU_ASSERT_EQUAL(p.fc_period_ns, 262000);
	SET_OK(&p, "ib.fc_period_ns=1500");
	CU_ASSERT_EQUAL(p.fc_period_ns, 1500);
	SET_OK(&p, "ib.fc_threshold=16");
	CU_ASSERT_EQUAL(p.fc_threshold, 16);
	SET_OK(&p, "ib.sl2vl=0,1");
	for (int sl = 0; sl < FAB_NSL; sl++)
		CU_ASSERT_EQUAL(p.sl2vl[sl], sl % 2);
	CU_ASSERT_TRUE(p.sl2vl_set);
	SET_OK(&p, "ib.sl2vl=7,6,5,4,3,2,1,0,7,6,5,4,3,2,1,0");
	CU_ASSERT_EQUAL(p.sl2vl[0], 7);
	CU_ASSERT_EQUAL(p.sl2vl[15], 0);
	SET_OK(&p, "vlarb.high=0:255,1:32");
	CU_ASSERT_EQUAL(p.vlarb.nhigh, 2);
	CU_ASSERT_EQUAL(p.vlarb.high[0].vl, 0);
	CU_ASSERT_EQUAL(p.vlarb.high[0].weight, 255);
	CU_ASSERT_EQUAL(p.vlarb.high[1].vl, 1);
	CU_ASSERT_EQUAL(p.vlarb.high[1].weight, 32);
	CU_ASSERT_TRUE(p.vlarb_high_set);
	SET_OK(&p, "vlarb.low=2:0,3:1,14:64");
	CU_ASSERT_EQUAL(p.vlarb.nlow, 3);
	CU_ASSERT_EQUAL(p.vlarb.low[2].vl, 14);
	CU_ASSERT_EQUAL(p.vlarb.low[0].weight, 0);
	SET_OK(&p, "vlarb.high=none");
	CU_ASSERT_EQUAL(p.vlarb.nhigh, 0);
	SET_OK(&p, "vlarb.high=");
	CU_ASSERT_EQUAL(p.vlarb.nhigh, 0);
	SET_OK(&p, "vlarb.limit_high=255");
	CU_ASSERT_EQUAL(p.vlarb.limit, 255);
	SET_OK(&p, "switch.latency_ns=0.2us");
	CU_ASSERT_EQUAL(p.sw_latency_ns, 200);
	SET_OK(&p, "hca.latency_ns=700");
	CU_ASSERT_EQUAL(p.hca_latency_ns, 700);
	SET_OK(&p, "hca.buffer=128KiB");
	CU_ASSERT_EQUAL(p.hca_buf_bytes, 131072);
	SET_OK(&p, "sim.sample_ns=10us");
	CU_ASSERT_EQUAL(p.sample_ns, 10000);
	SET_OK(&p, "sim.max_time_ns=18446744073709551");	/* the clock's last ns */
	CU_ASSERT_EQUAL(p.max_time_ns, 18446744073709551ULL);
	SET_OK(&p, "sim.max_time_ns=20000000000000");
	CU_ASSERT_EQUAL(p.max_time_ns, 20000000000000ULL);
	SET_OK(&p, "sim.check=yes");
	CU_ASSERT_TRUE(p.check);
	SET_OK(&p, "sim.check=off");
	CU_ASSERT_FALSE(p.check);
	SET_OK(&p, "IB.MTU=4096");	/* key names in any case */
	CU_ASSERT_EQUAL(p.mtu, 4096);

	/* preset= resets the fabric keys but keeps sim.* */
	SET_OK(&p, "sim.check=on");
	SET_OK(&p, "sim.max_time_ns=1ms");
	SET_OK(&p, "preset=qdr");
	CU_ASSERT_EQUAL(p.speed, LINK_QDR);
	CU_ASSERT_EQUAL(p.lanes, 4);
	CU_ASSERT_FALSE(p.link_forced);
	CU_ASSERT_FALSE(p.sl2vl_set);
	CU_ASSERT_EQUAL(p.vls, 4);
	CU_ASSERT_EQUAL(p.mtu, 2048);
	CU_ASSERT_TRUE(p.check);
	CU_ASSERT_EQUAL(p.max_time_ns, 1000000);
	check_ok(&p);
}

/*
 * link.speed overrides every link's speed and keeps each link's width (a
 * 1x cable stays 1x at NDR); link.width overrides the widths too.
 */
static void rates_of2(const char *const *sets, struct link_rate *r, sim_time_t *prop)
{
	static const char text[] =
		"Switch\t4 \"sw0\"\n[1]\t\"h0\"[1]\t# lid 2 1xHDR\n[2]\t\"h1\"[1]\t# lid 3 4xHDR\n"
		"Hca\t1 \"h0\"\n[1]\t\"sw0\"[1]\t# lid 2 1xHDR\nHca\t1 \"h1\"\n[1]\t\"sw0\"[2]\n";
	struct fab_params p;
	struct fab_msgs m = { 0 };
	struct sim_diag dg;
	struct net n;
	struct fab *f;

	CU_ASSERT_EQUAL_FATAL(topo_load_string(text, "w.net", &n, &dg), 0);
	fab_params_default(&p);
	for (; *sets; sets++)
		SET_OK(&p, *sets);
	f = fab_create(&n, &p, &m, 1, &dg);
	CU_ASSERT_FATAL(f != NULL);
	for (int i = 0; i < fab_nports(f); i++) {
		const struct fab_port_info *pi = fab_port(f, i);

		if (n.nodes[pi->node].type != NET_SWITCH) {
			r[strcmp(n.nodes[pi->node].desc, "h0") ? 1 : 0] = pi->rate;
			if (prop)
				prop[strcmp(n.nodes[pi->node].desc, "h0") ? 1 : 0] = pi->prop_ps;
		}
		/* a cable's two ends run at one rate */
		for (int k = 0; k < fab_nports(f); k++) {
			const struct fab_port_info *q = fab_port(f, k);

			if (q->node == pi->peer_node && q->port == pi->peer_port)
				CU_ASSERT(q->rate.lanes == pi->rate.lanes && q->rate.speed == pi->rate.speed &&
					  q->prop_ps == pi->prop_ps);
		}
	}
	fab_destroy(f);
	net_free(&n);
}

static void rates_of(const char *const *sets, struct link_rate *r)
{
	rates_of2(sets, r, NULL);
}

static void test_link_overrides(void)
{
	static const char *const none[] = { NULL };
	static const char *const speed[] = { "link.speed=NDR", NULL };
	static const char *const width[] = { "link.width=2x", NULL };
	struct link_rate r[2];

	rates_of(none, r);
	CU_ASSERT(r[0].lanes == 1 && r[0].speed == LINK_HDR && r[1].lanes == 4 && r[1].speed == LINK_HDR);
	rates_of(speed, r);
	CU_ASSERT(r[0].lanes == 1 && r[0].speed == LINK_NDR && r[1].lanes == 4 && r[1].speed == LINK_NDR);
	rates_of(width, r);
	CU_ASSERT(r[0].lanes == 2 && r[0].speed == LINK_HDR && r[1].lanes == 2 && r[1].speed == LINK_HDR);
}

/*
 * link[...]: one cable's own width, speed or length, named by either end
 * (a node, a port, a range, a pattern), later settings over earlier ones
 * and over link.speed; the cables it does not name stay as they were;
 * state=down takes a cable out before routing.
 */
static void test_link_sets(void)
{
	static const char *const one[] = { "link[h1].speed=EDR", NULL };
	static const char *const sw_end[] = { "link[sw0/1].width=4x", NULL };
	static const char *const pattern[] = { "link[h*].speed=NDR", NULL };
	static const char *const over[] = { "link.speed=NDR", "link[h0].speed=SDR", NULL };
	static const char *const later[] = { "link[h0].speed=EDR", "link[sw0/1-2].speed=FDR",
					     "link[sw0/2].speed=QDR", NULL };
	static const char *const len[] = { "link[h1/1].cable_m=10", NULL };
	struct link_rate r[2];
	sim_time_t prop[2];

	rates_of(one, r);
	CU_ASSERT(r[0].lanes == 1 && r[0].speed == LINK_HDR && r[1].lanes == 4 && r[1].speed == LINK_EDR);
	rates_of(sw_end, r);
	CU_ASSERT(r[0].lanes == 4 && r[0].speed == LINK_HDR && r[1].lanes == 4 && r[1].speed == LINK_HDR);
	rates_of(pattern, r);
	CU_ASSERT(r[0].lanes == 1 && r[0].speed == LINK_NDR && r[1].lanes == 4 && r[1].speed == LINK_NDR);
	rates_of(over, r);
	CU_ASSERT(r[0].speed == LINK_SDR && r[1].speed == LINK_NDR);
	rates_of(later, r);
	CU_ASSERT(r[0].speed == LINK_FDR && r[1].speed == LINK_QDR);
	rates_of2(len, r, prop);
	CU_ASSERT(prop[0] == 3 * 5000 && prop[1] == 10 * 5000);

	/* the settings as given, for the JSON */
	struct fab_params p;
	char buf[160];

	fab_params_default(&p);
	SET_OK(&p, "link[leaf*/3-8].width=1x");
	SET_OK(&p, "link[0x0002c90300a1b2c3].ber=1e-09");
	CU_ASSERT_EQUAL_FATAL(p.nlink_sets, 2);
	fab_link_set_format(&p.link_sets[0], buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "link[leaf*/3-8].width=1x");
	fab_link_set_format(&p.link_sets[1], buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "link[0x0002c90300a1b2c3].ber=1e-09");
	struct net_node x = { .id = "S-0002c90300a1b2c3", .desc = "spine", .guid = 0x0002c90300a1b2c3ULL };

	CU_ASSERT(fab_link_set_matches(&p.link_sets[1], &x, 5));
	x.desc = "leaf2";
	CU_ASSERT(fab_link_set_matches(&p.link_sets[0], &x, 3));
	CU_ASSERT(!fab_link_set_matches(&p.link_sets[0], &x, 2));
	x.desc = "spine2";
	CU_ASSERT(!fab_link_set_matches(&p.link_sets[0], &x, 3));

	/* naming no cable is refused, naming the setting */
	static const char text[] =
		"Switch\t4 \"sw0\"\n[1]\t\"h0\"[1]\n[2]\t\"h1\"[1]\n"
		"Hca\t1 \"h0\"\n[1]\t\"sw0\"[1]\nHca\t1 \"h1\"\n[1]\t\"sw0\"[2]\n";
	struct fab_msgs m = { 0 };
	struct net n;

	CU_ASSERT_EQUAL_FATAL(topo_load_string(text, "w.net", &n, &d), 0);
	fab_params_default(&p);
	SET_OK(&p, "link[sw0/3].speed=EDR");
	sim_diag_clear(&d);
	CU_ASSERT_PTR_NULL(fab_create(&n, &p, &m, 1, &d));
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "link[sw0/3].speed=EDR: no connected port matches"));

	/* state=down takes a cable out of the graph (both ends), the last
	 * setting for a cable wins, and one that names no cable is refused */
	fab_params_default(&p);
	SET_OK(&p, "link[h0].state=down");
	SET_OK(&p, "link[sw0/2].state=down");
	SET_OK(&p, "link[h1].state=active");
	fab_link_set_format(&p.link_sets[0], buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "link[h0].state=down");
	CU_ASSERT_EQUAL(fab_link_sets_cut(&n, &p, &d), 0);
	CU_ASSERT(n.nodes[net_find(&n, "h0")].ports[1].remote_node < 0);
	CU_ASSERT(n.nodes[net_find(&n, "sw0")].ports[1].remote_node < 0);
	CU_ASSERT(n.nodes[net_find(&n, "h1")].ports[1].remote_node == net_find(&n, "sw0"));
	CU_ASSERT(n.nodes[net_find(&n, "sw0")].ports[2].remote_node == net_find(&n, "h1"));
	fab_params_default(&p);
	SET_OK(&p, "link[sw0/3].state=down");
	sim_diag_clear(&d);
	CU_ASSERT_EQUAL(fab_link_sets_cut(&n, &p, &d), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "link[sw0/3].state=down: no cable at those ports"));

	/* a new switch and new cables: the switch first, then the cables cut,
	 * then the cables added (h0 moves from sw0 to sw9; sw0/3 to sw9/2) */
	net_free(&n);
	CU_ASSERT_EQUAL_FATAL(topo_load_string(text, "w.net", &n, &d), 0);
	fab_params_default(&p);
	SET_OK(&p, "switch[sw9].ports=4");
	SET_OK(&p, "link[h0].state=down");
	SET_OK(&p, "link[h0/1].peer=sw9/1");
	SET_OK(&p, "link[sw0/3].peer=sw9/2");
	fab_link_set_format(&p.link_sets[1], buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "link[h0/1].peer=sw9/1");
	CU_ASSERT_EQUAL(fab_link_sets_cut(&n, &p, &d), 0);
	int s9 = net_find(&n, "sw9"), s0 = net_find(&n, "sw0"), h0 = net_find(&n, "h0");

	CU_ASSERT_FATAL(s9 >= 0);
	CU_ASSERT_EQUAL(n.nodes[s9].type, NET_SWITCH);
	CU_ASSERT_EQUAL(n.nodes[s9].nports, 4);
	CU_ASSERT(n.nodes[s9].guid > n.nodes[s0].guid);
	CU_ASSERT(n.nodes[h0].ports[1].remote_node == s9 && n.nodes[s9].ports[1].remote_node == h0);
	CU_ASSERT(n.nodes[s0].ports[3].remote_node == s9 && n.nodes[s9].ports[2].remote_port == 3);
	CU_ASSERT(n.nodes[s0].ports[1].remote_node < 0);
	/* refused: a taken port, a port past the node's, a node that is not
	 * there, a name the fabric has, a pattern */
	static const struct { const char *set, *want; } bad[] = {
		{ "link[h1/1].peer=sw9/3", "is already connected to" },
		{ "link[sw9/3].peer=sw0/7", "sw0 has ports 1..4" },
		{ "link[sw9/3].peer=sw7/1", "no node 'sw7'" },
		{ "switch[h1].ports=4", "the fabric has a node 'h1' already" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fab_params_default(&p);
		SET_OK(&p, bad[i].set);
		sim_diag_clear(&d);
		CU_ASSERT_EQUAL(fab_link_sets_cut(&n, &p, &d), -1);
		if (!strstr(d.msg, bad[i].want))
			fprintf(stderr, "\n  %s: %s", bad[i].set, d.msg);
		CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, bad[i].want));
	}
	net_free(&n);
}

static void test_set_bad(void)
{
	set_bad("link[sw0.speed=EDR", "link[sw0.speed=EDR", "expected link[NODE].KEY=VALUE");
	set_bad("link[].speed=EDR", "link[]", "expected a node");
	set_bad("link[sw0/0].speed=EDR", "link[sw0/0]", "'0' is not a port");
	set_bad("link[sw0/3-1].speed=EDR", "link[sw0/3-1]", "'3-1' is not a port");
	set_bad("link[sw0].sped=EDR", "link[sw0]", "'sped' is not a key of one link");
	set_bad("link[sw0].speed=EDRX", "link[sw0]", "'EDRX'");
	set_bad("link[sw0].drop_prob=1", "link[sw0]", "[0, 1)");
	set_bad("link[sw0].cable_m=-2", "link[sw0]", "out of range");
	set_bad("link[sw0].state=up", "link[sw0]", "expected down or active");
	set_bad("link[sw0].peer=sw1/1", "link[sw0]", "joins one port to one port");
	set_bad("link[sw*/1].peer=sw1/1", "link[sw*/1]", "joins one port to one port");
	set_bad("link[sw0/1].peer=sw1", "link[sw0/1]", "joins one port to one port");
	set_bad("switch[s9].ports=0", "switch[s9]", "1 to 254 ports");
	set_bad("switch[s*].ports=4", "switch[s*]", "not a pattern");
	set_bad("switch[s9].nports=4", "switch[s9]", "expected switch[NAME].ports=N");
	set_bad("link.width=3x", "link.width", "1x, 2x, 4x, 8x or 12x");
	set_bad("link.width=", "link.width", NULL);
	set_bad("link.speed=FDR14", "link.speed", "'FDR14'");
	set_bad("link.cable_m=-1", "link.cable_m", "out of range");
	set_bad("link.cable_m=3m", "link.cable_m", "'3m'");
	set_bad("link.ps_per_m=5", "link.ps_per_m", "out of range");
	set_bad("link.ps_per_m=5.5", "link.ps_per_m", "unsigned integer");
	set_bad("ib.mtu=3000", "ib.mtu", "256, 512, 1024, 2048 or 4096");
	set_bad("ib.mtu=8192", "ib.mtu", "'8192'");
	set_bad("ib.vls=0", "ib.vls", "1..15");
	set_bad("ib.vls=16", "ib.vls", "1..15");
	set_bad("ib.vls=-1", "ib.vls", "negative");
	set_bad("ib.buffer=1000", "ib.buffer", "64-byte credit block");
	set_bad("ib.buffer=256KiB", "ib.buffer", "2048 credit blocks");
	set_bad("ib.buffer=0", "ib.buffer", "out of range");
	set_bad("ib.buffer=32Kb", "ib.buffer", "bits");
	set_bad("ib.vl15_buffer=100", "ib.vl15_buffer", "out of range");
	set_bad("ib.fc_period_ns=1.5ns", "ib.fc_period_ns", "whole number of nanoseconds");
	set_bad("ib.fc_period_ns=5s", "ib.fc_period_ns", "out of range");
	set_bad("ib.fc_threshold=4097", "ib.fc_threshold", "out of range");
	set_bad("ib.sl2vl=0,1,15", "ib.sl2vl", "entry 3 (SL 2)");
	set_bad("ib.sl2vl=0,,1", "ib.sl2vl", "entry 2 is empty");
	set_bad("ib.sl2vl=0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,0,1", "ib.sl2vl", "more than 16");
	set_bad("ib.sl2vl=a", "ib.sl2vl", "not a data VL");
	set_bad("vlarb.low=0:64,1", "vlarb.low", "entry 2 '1': expected VL:WEIGHT");
	set_bad("vlarb.low=0:256", "vlarb.low", "weight");
	set_bad("vlarb.high=15:10", "vlarb.high", "VL15");
	set_bad("vlarb.high=0:-1", "vlarb.high", "negative");
	set_bad("vlarb.limit_high=256", "vlarb.limit_high", "out of range");
	set_bad("switch.latency_ns=fast", "switch.latency_ns", "'fast'");
	set_bad("switch.queues=shared", "switch.queues", "expected fifo or voq");
	set_bad("ib.ar=yes", "ib.ar", "expected on or off");
	set_bad("ib.arn=1x", "ib.arn", "expected on or off");
	set_bad("eth.hash_fields=sip,ttl", "eth.hash_fields", "got 'ttl'");
	set_bad("eth.hash_fields=", "eth.hash_fields", "expected all or a comma list");
	set_bad("ib.ar_mode=flow", "ib.ar_mode", "expected packet or flowlet");
	set_bad("ib.sharp_sat=tree", "ib.sharp_sat", "expected auto, switch, port or none");
	set_bad("ib.ar_sl_mask=65536", "ib.ar_sl_mask", "out of range");
	set_bad("ib.ar_flowlet_ns=0", "ib.ar_flowlet_ns", "out of range");
	set_bad("hca.ooo=maybe", "hca.ooo", "expected auto, on or off");
	set_bad("hca.ooo_window=0", "hca.ooo_window", "out of range");
	set_bad("mpi.proto=mpich", "mpi.proto", "expected write or ucx");
	set_bad("mpi.ppn=0", "mpi.ppn", "out of range");
	set_bad("eth.lb=hash", "eth.lb", "expected ecmp, flowlet, spray or static");
	set_bad("eth.flowlet_ns=0", "eth.flowlet_ns", "out of range");
	set_bad("hca.latency_ns=-3", "hca.latency_ns", "negative");
	set_bad("hca.buffer=100B", "hca.buffer", "64-byte");
	set_bad("sim.sample_ns=1ps", "sim.sample_ns", "nanoseconds");
	set_bad("sim.max_time_ns=soon", "sim.max_time_ns", "'soon'");
	/* the engine's clock is 64-bit picoseconds: 2^64 ps is 18446744073709551 ns
	 * and a little; one more ns wrapped to 616 ps and ended the run at once */
	set_bad("sim.max_time_ns=18446744073709552", "sim.max_time_ns", "out of range");
	set_bad("sim.sample_ns=18446744073709552", "sim.sample_ns", "out of range");
	set_bad("sim.check=maybe", "sim.check", "on/off");
	set_bad("preset=hdrr", "preset", "did you mean 'hdr'");
	set_bad("ib.mtu", "ib.mtu", "ib.mtu=VALUE");
	set_bad("", "empty", NULL);
	set_bad("=4", "unknown parameter ''", NULL);

	/* 64 entries are allowed, 65 are not */
	char big[1024];
	size_t off = 0;

	for (int i = 0; i < 65; i++)
		off += (size_t)snprintf(big + off, sizeof(big) - off, "%s%d:1",
					i ? "," : "vlarb.low=", i % 4);
	set_bad(big, "vlarb.low", "more than 64");
	big[strlen(big) - 4] = 0;	/* drop ",0:1" */
	{
		struct fab_params p;

		fab_params_default(&p);
		SET_OK(&p, big);
		CU_ASSERT_EQUAL(p.vlarb.nlow, 64);
		check_ok(&p);
	}
}

static void test_did_you_mean(void)
{
	set_bad("ib.mtuu=4096", "unknown parameter 'ib.mtuu' (see ibfab run --help-params)",
		"did you mean 'ib.mtu'?");
	set_bad("mtu=4096", "unknown parameter 'mtu'", "did you mean 'ib.mtu'?");
	set_bad("ib.bufer=32KiB", "unknown parameter", "did you mean 'ib.buffer'?");
	set_bad("swich.latency_ns=100", "unknown parameter", "did you mean 'switch.latency_ns'?");
	set_bad("link.sped=HDR", "unknown parameter", "did you mean 'link.speed'?");
	set_bad("vls=8", "unknown parameter", "did you mean 'ib.vls'?");
	/* one schema: a key is suggested whichever module owns it */
	set_bad("hostmodel=on", "unknown parameter", "did you mean 'host.model'?");
	set_bad("ib.ccc=on", "unknown parameter", "did you mean 'ib.cc'?");
	set_bad("dcqcn.timer=55", "unknown parameter", "did you mean 'dcqcn.timer_us'?");
	set_bad("host.pcie_gne=4", "unknown parameter", "did you mean 'host.pcie_gen'?");
	set_bad("dcqcn.f=256", "dcqcn.f", "out of range (0..255)");
	set_bad("ib.cc.threshold=16", "ib.cc.threshold", "out of range (0..15)");

	struct fab_params p;

	fab_params_default(&p);
	CU_ASSERT_EQUAL(fab_params_set(&p, "frobnicate=1", &d), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "unknown parameter 'frobnicate'"));
	CU_ASSERT_PTR_NULL(strstr(d.msg, "did you mean"));
}

static void test_check(void)
{
	struct fab_params p;

	/* VL tables referring to VLs >= vls */
	fab_params_default(&p);
	SET_OK(&p, "vlarb.low=0:64,1:64,2:64,3:64");
	SET_OK(&p, "ib.vls=2");
	SET_OK(&p, "ib.sl2vl=0,1");
	check_fails(&p, "vlarb.low: entry 3 names VL 2", "ib.vls is 2");

	fab_params_default(&p);
	SET_OK(&p, "vlarb.high=5:10");
	check_fails(&p, "vlarb.high: entry 1 names VL 5", "VLs 0..3");

	fab_params_default(&p);
	SET_OK(&p, "ib.sl2vl=0,1,2,3");
	SET_OK(&p, "ib.vls=2");
	check_fails(&p, "ib.sl2vl: SL 2 maps to VL 2", "ib.vls is 2");
	CU_ASSERT_EQUAL(p.sl2vl[2], 2);	/* explicit: did not follow */

	/* a VL in use that no table serves */
	fab_params_default(&p);
	SET_OK(&p, "vlarb.low=0:64,1:64,2:64,3:0");
	check_fails(&p, "VL 3 (used by SL 3)", "weight > 0");
	SET_OK(&p, "vlarb.high=3:1");
	check_ok(&p);
	SET_OK(&p, "ib.sl2vl=0,1,2");	/* VL 3 no longer used */
	SET_OK(&p, "vlarb.high=none");
	check_ok(&p);

	/* buffer smaller than one MTU packet */
	fab_params_default(&p);
	SET_OK(&p, "ib.buffer=4KiB");
	check_fails(&p, "ib.buffer: 4KiB cannot hold one packet of ib.mtu=4096", "4160 bytes");
	SET_OK(&p, "ib.buffer=4160");
	check_ok(&p);
	SET_OK(&p, "ib.buffer=4096");
	SET_OK(&p, "ib.mtu=2048");
	check_ok(&p);
	fab_params_default(&p);
	SET_OK(&p, "hca.buffer=2KiB");
	check_fails(&p, "hca.buffer", "cannot hold one packet");

	/* flow control that would never return credits */
	fab_params_default(&p);
	SET_OK(&p, "ib.fc_threshold=0");
	check_fails(&p, "credits would never be returned", NULL);
	SET_OK(&p, "ib.fc_period_ns=1us");
	check_ok(&p);
	SET_OK(&p, "ib.fc_threshold=513");	/* HDR buffer: 512 blocks */
	check_fails(&p, "ib.fc_threshold: 513 blocks", "512 blocks");

	/* fields set directly, bypassing fab_params_set */
	fab_params_default(&p);
	p.vl15_buf_bytes = 100;
	check_fails(&p, "ib.vl15_buffer", "290");
	fab_params_default(&p);
	p.lanes = 3;
	check_fails(&p, "link.width", NULL);
	fab_params_default(&p);
	p.ps_per_m = 1000;
	check_fails(&p, "faster than light", NULL);
	fab_params_default(&p);
	p.mtu = 1500;
	check_fails(&p, "ib.mtu", NULL);
	fab_params_default(&p);
	p.vl_buf_bytes = 1 << 20;
	check_fails(&p, "ib.buffer", "IBA 7.9.4.3");
}

static void test_vls_follow(void)
{
	struct fab_params p;

	fab_params_default(&p);
	SET_OK(&p, "ib.vls=2");
	for (int sl = 0; sl < FAB_NSL; sl++)
		CU_ASSERT_EQUAL(p.sl2vl[sl], sl % 2);
	CU_ASSERT_EQUAL(p.vlarb.nlow, 2);
	CU_ASSERT_EQUAL(p.vlarb.nhigh, 0);
	check_ok(&p);
	SET_OK(&p, "ib.vls=8");
	for (int sl = 0; sl < FAB_NSL; sl++)
		CU_ASSERT_EQUAL(p.sl2vl[sl], sl % 8);
	CU_ASSERT_EQUAL(p.vlarb.nlow, 8);
	for (int i = 0; i < 8; i++)
		CU_ASSERT_EQUAL(p.vlarb.low[i].vl, i);
	check_ok(&p);
	SET_OK(&p, "ib.vls=15");
	CU_ASSERT_EQUAL(p.sl2vl[15], 0);
	CU_ASSERT_EQUAL(p.sl2vl[14], 14);
	check_ok(&p);

	/* an explicit low table stays; sl2vl still follows */
	SET_OK(&p, "vlarb.low=0:10,1:20");
	SET_OK(&p, "ib.vls=2");
	CU_ASSERT_EQUAL(p.vlarb.nlow, 2);
	CU_ASSERT_EQUAL(p.vlarb.low[1].weight, 20);
	CU_ASSERT_EQUAL(p.sl2vl[3], 1);
	check_ok(&p);
	/* and an explicit high table is not replaced either */
	SET_OK(&p, "vlarb.high=1:5");
	SET_OK(&p, "ib.vls=4");
	CU_ASSERT_EQUAL(p.vlarb.nhigh, 1);
	check_fails(&p, "VL 2", "weight > 0");	/* low table was explicit: VLs 2, 3 unserved */
}

/* fab_params_print: one "key = value  # meaning" line per key, re-readable. */
static void test_print(void)
{
	struct fab_params p, q;
	char *buf = NULL, *line, *save = NULL;
	size_t len = 0;
	int lines = 0, host_lines = 0, cc_lines = 0, server_lines = 0;
	FILE *f;

	fab_params_default(&p);
	SET_OK(&p, "link.speed=NDR");
	SET_OK(&p, "link.cable_m=7.5");
	SET_OK(&p, "ib.vls=8");
	SET_OK(&p, "ib.sl2vl=1,0");
	SET_OK(&p, "vlarb.high=0:255,1:3");
	SET_OK(&p, "ib.buffer=20032B");	/* 313 blocks: printed in bytes */
	SET_OK(&p, "sim.check=on");
	SET_OK(&p, "sim.sample_ns=2us");
	f = open_memstream(&buf, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fab_params_print(&p, f);
	fclose(f);
	CU_ASSERT_EQUAL(strncmp(buf, "preset ", 7), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "\nib.mtu            = 4096"));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "\nib.buffer         = 20032B"));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "\nib.sl2vl          = 1,0,1,0,1,0,1,0,1,0,1,0,1,0,1,0 "));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "\nvlarb.high        = 0:255,1:3 "));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "\nvlarb.low         = "
				      "0:64,1:64,2:64,3:64,4:64,5:64,6:64,7:64 "));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "\nsim.check         = on "));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "\nlink.speed        = NDR "));

	/* every line parses back through fab_params_set to the same values */
	fab_params_default(&q);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char key[64], val[512], kv[600];

		/* host.* lines come from the host model (test_host checks them),
		 * dcqcn.* and ib.cc* from the CC models (test_dcqcn, test_ibcc) */
		if (!strncmp(line, "dcqcn.", 6) || !strncmp(line, "ib.cc", 5))
			cc_lines++;
		else if (!strncmp(line, "server.", 7))	/* models/server (test_server) */
			server_lines++;
		else if (strncmp(line, "host.", 5))
			lines++;
		else
			host_lines++;
		CU_ASSERT_PTR_NOT_NULL(strstr(line, " = "));
		CU_ASSERT_PTR_NOT_NULL(strstr(line, "  # "));
		CU_ASSERT_EQUAL_FATAL(sscanf(line, "%63s = %511s", key, val), 2);
		snprintf(kv, sizeof(kv), "%s=%s", key, val);
		SET_OK(&q, kv);
	}
	free(buf);
	CU_ASSERT_EQUAL(lines, 99);	/* one per key (tcp.* and mpi.* included): a forgotten key shows here */
	CU_ASSERT(host_lines > 10);	/* host.model and the host model's keys */
	CU_ASSERT(cc_lines > 20);	/* dcqcn.* and ib.cc* */
	CU_ASSERT_EQUAL(server_lines, 9);	/* server.preset and the eight it sets */
	/* The round trip marks tables and the link as explicitly set. */
	CU_ASSERT_TRUE(q.link_forced && q.width_forced && q.speed_forced);
	q.link_forced = p.link_forced;
	q.width_forced = p.width_forced;
	q.speed_forced = p.speed_forced;
	q.sl2vl_set = p.sl2vl_set;
	q.vlarb_high_set = p.vlarb_high_set;
	q.vlarb_low_set = p.vlarb_low_set;
	CU_ASSERT_EQUAL(memcmp(&p, &q, sizeof(p)), 0);
}

static const struct test_case tests[] = {
	{ "presets: rates, MTU, buffer rule, check", test_presets },
	{ "default is the hdr preset", test_defaults },
	{ "every key can be set", test_set_every_key },
	{ "link.speed keeps each link's width, link.width does not", test_link_overrides },
	{ "link[...]: one cable's own width, speed and length", test_link_sets },
	{ "bad values name the key", test_set_bad },
	{ "did you mean", test_did_you_mean },
	{ "cross-field checks", test_check },
	{ "tables follow ib.vls until set", test_vls_follow },
	{ "print lists every key and reads back", test_print },
	{ NULL, NULL },
};

TEST_MAIN("params", tests)
