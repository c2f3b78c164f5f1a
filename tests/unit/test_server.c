/* SPDX-License-Identifier: MIT */
/*
 * test_server.c - multi-GPU servers (models/server): the presets and
 * server.* keys, the map from host names, NVLink's pipes against their
 * closed forms, and a replay on GPU servers: intra-server steps over
 * NVLink to the picosecond, PXN keeping cross-server traffic on its rail,
 * the rings of several channels rotated per server and still correct.
 */
#include <CUnit/CUnit.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/fabric/fab.h"
#include "models/host/host.h"
#include "models/net/net.h"
#include "models/server/server.h"
#include "models/sm/sm.h"
#include "models/sm/sm_sharp.h"
#include "tests/unit/test_main.h"
#include "topologies/topo.h"
#include "traces/coll.h"
#include "traces/trace.h"
#include "traces/trace_replay.h"

static struct sim_diag d;

/* `ibfab topo gen rail --servers n --server name`, routed */
static void gen_servers(struct net *n, int servers, const char *name)
{
	struct topo_gen_params p;
	char ns[16];
	char *argv[] = { "rail", "--servers", ns, "--server", (char *)name };

	snprintf(ns, sizeof(ns), "%d", servers);
	CU_ASSERT_EQUAL_FATAL(topo_gen_parse(&p, 5, argv, &d), 0);
	CU_ASSERT_EQUAL_FATAL(topo_gen_net(n, &p, &d), 0);
	CU_ASSERT_EQUAL_FATAL(sm_route_minhop(n, &d), 0);
}

static void test_presets(void)
{
	struct srv_params p;
	struct fab_params f;

	srv_params_default(&p);
	CU_ASSERT_EQUAL(p.gpus, 0);
	CU_ASSERT_EQUAL(srv_params_check(&p, &d), 0);	/* no servers is fine */
	CU_ASSERT_EQUAL(srv_params_preset(&p, "DGX-H100", &d), 0);
	CU_ASSERT_STRING_EQUAL(p.preset, "dgx-h100");
	CU_ASSERT_EQUAL(p.gpus, 8);
	CU_ASSERT_EQUAL(p.domain, 8);
	/* NCCL's 20.6 GB/s per NVLink4 link x 18 links */
	CU_ASSERT_DOUBLE_EQUAL(p.nvlink_gbps, 18 * 20.6, 1e-9);
	CU_ASSERT_TRUE(p.pxn);
	CU_ASSERT_EQUAL(srv_params_preset(&p, "dgx-a100", &d), 0);
	CU_ASSERT_DOUBLE_EQUAL(p.nvlink_gbps, 12 * 20.0, 1e-9);
	CU_ASSERT_EQUAL(srv_params_preset(&p, "gb200-nvl72", &d), 0);
	CU_ASSERT_EQUAL(p.gpus, 4);
	CU_ASSERT_EQUAL(p.domain, 72);
	CU_ASSERT_EQUAL(srv_params_preset(&p, "dgx-z", &d), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "unknown server preset 'dgx-z'"));
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "dgx-h100"));
	for (int i = 0; srv_presets[i]; i++) {
		CU_ASSERT_PTR_EQUAL(srv_preset_find(srv_presets[i]->name), srv_presets[i]);
		/* what a copy achieves is below the links' rate */
		CU_ASSERT(srv_presets[i]->nvlink_gbps <
			  srv_presets[i]->links * srv_presets[i]->link_gbps);
		CU_ASSERT_PTR_NOT_NULL(srv_preset_find(srv_presets[i]->name)->fabric);
	}
	/* the keys, through the fabric's parameters */
	fab_params_default(&f);
	CU_ASSERT_EQUAL(fab_params_set(&f, "server.preset=dgx-h100", &d), 0);
	CU_ASSERT_EQUAL(f.server.gpus, 8);
	CU_ASSERT_EQUAL(fab_params_set(&f, "server.pxn=off", &d), 0);
	CU_ASSERT_FALSE(f.server.pxn);
	CU_ASSERT_EQUAL(fab_params_set(&f, "server.domain=12", &d), 0);
	CU_ASSERT_EQUAL(fab_params_check(&f, &d), -1);	/* not a multiple of 8 */
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "server.domain"));
	CU_ASSERT_EQUAL(fab_params_set(&f, "server.domain=16", &d), 0);
	CU_ASSERT_EQUAL(fab_params_check(&f, &d), 0);
	CU_ASSERT_EQUAL(fab_params_set(&f, "server.nvlink_gbps=0", &d), 0);
	CU_ASSERT_EQUAL(fab_params_check(&f, &d), -1);
	CU_ASSERT_EQUAL(fab_params_set(&f, "server.preset=bogus", &d), -1);
	/* the two rates: a number within the key's range, read back as set */
	CU_ASSERT_EQUAL(fab_params_set(&f, "server.nvls_efficiency=0.5", &d), 0);
	CU_ASSERT_DOUBLE_EQUAL(f.server.nvls_eff, 0.5, 1e-12);
	CU_ASSERT_EQUAL(fab_params_set(&f, "server.nvls_efficiency=1.5", &d), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "server.nvls_efficiency: '1.5' is out of range (0 up to 1)"));
	CU_ASSERT_EQUAL(fab_params_set(&f, "server.nvlink_gbps=-1", &d), -1);
	CU_ASSERT_EQUAL(fab_params_set(&f, "server.nvlink_gbps=100001", &d), -1);
	CU_ASSERT_EQUAL(fab_params_set(&f, "server.nvlink_gbps=450.5", &d), 0);
	CU_ASSERT_DOUBLE_EQUAL(f.server.nvlink_gbps, 450.5, 1e-12);
	/* a fabric preset leaves the servers alone */
	CU_ASSERT_EQUAL(fab_params_set(&f, "server.preset=dgx-a100", &d), 0);
	CU_ASSERT_EQUAL(fab_params_set(&f, "preset=ndr", &d), 0);
	CU_ASSERT_STRING_EQUAL(f.server.preset, "dgx-a100");
}

static void test_map(void)
{
	struct srv_params p;
	struct srv_map m;
	struct net n;

	srv_params_preset(&p, "dgx-h100", &d);
	gen_servers(&n, 3, "dgx-h100");
	CU_ASSERT_EQUAL_FATAL(srv_map_build(&m, &n, &p, &d), 0);
	CU_ASSERT_EQUAL(m.nservers, 3);
	for (int s = 0; s < 3; s++)
		for (int j = 0; j < 8; j++) {
			char name[16];
			int x;

			snprintf(name, sizeof(name), "n%dg%d", s, j);
			x = net_find_host(&n, name);
			CU_ASSERT_FATAL(x >= 0);
			CU_ASSERT_EQUAL(m.server[x], s);
			CU_ASSERT_EQUAL(m.local[x], j);
			CU_ASSERT_EQUAL(srv_domain(&m, x), s);
			CU_ASSERT_EQUAL(m.gpu_node[s * 8 + j], x);
		}
	int a = net_find_host(&n, "n0g1"), b = net_find_host(&n, "n1g5"), c = net_find_host(&n, "n0g5");

	CU_ASSERT_TRUE(srv_same_domain(&m, a, c));
	CU_ASSERT_FALSE(srv_same_domain(&m, a, b));
	CU_ASSERT_EQUAL(srv_proxy(&m, a, b), c);	/* n0g1 -> n1g5 leaves by n0g5 */
	CU_ASSERT_EQUAL(srv_proxy(&m, c, b), c);	/* already on rail 5 */
	m.p.pxn = false;
	CU_ASSERT_EQUAL(srv_proxy(&m, a, b), a);
	for (int i = 0; i < n.nnodes; i++)	/* switches are in no server */
		if (n.nodes[i].type == NET_SWITCH)
			CU_ASSERT_EQUAL(m.server[i], -1);
	srv_map_free(&m);
	net_free(&n);

	/* a rack-scale domain spans 18 trays of 4 */
	srv_params_preset(&p, "gb200-nvl72", &d);
	gen_servers(&n, 20, "gb200-nvl72");
	CU_ASSERT_EQUAL_FATAL(srv_map_build(&m, &n, &p, &d), 0);
	CU_ASSERT_EQUAL(srv_domain(&m, net_find_host(&n, "n17g3")), 0);
	CU_ASSERT_EQUAL(srv_domain(&m, net_find_host(&n, "n18g0")), 1);
	CU_ASSERT_TRUE(srv_same_domain(&m, net_find_host(&n, "n0g0"), net_find_host(&n, "n17g3")));
	srv_map_free(&m);
	net_free(&n);
}

/* Hosts named as Linux names HCAs ("<host> mlx5_<K>"): GPUs in K order. */
static const char *mlx5_topo =
	"Switch 8 \"sw\"\n"
	"[1] \"H-a7\"[1]\n[2] \"H-a2\"[1]\n[3] \"H-b0\"[1]\n[4] \"H-x\"[1]\n\n"
	"Ca 1 \"H-a7\" # \"dgxa mlx5_7\"\n[1] \"sw\"[1]\n\n"
	"Ca 1 \"H-a2\" # \"dgxa mlx5_2\"\n[1] \"sw\"[2]\n\n"
	"Ca 1 \"H-b0\" # \"dgxb mlx5_0\"\n[1] \"sw\"[3]\n\n"
	"Ca 1 \"H-x\" # \"login node\"\n[1] \"sw\"[4]\n";

static void test_map_names(void)
{
	struct srv_params p;
	struct srv_map m;
	struct net n;

	srv_params_preset(&p, "dgx-h100", &d);
	CU_ASSERT_EQUAL_FATAL(topo_load_string(mlx5_topo, "mlx5.topo", &n, &d), 0);
	CU_ASSERT_EQUAL_FATAL(srv_map_build(&m, &n, &p, &d), 0);
	CU_ASSERT_EQUAL(m.nservers, 2);
	CU_ASSERT_EQUAL(m.local[net_find_host(&n, "dgxa mlx5_2")], 0);
	CU_ASSERT_EQUAL(m.local[net_find_host(&n, "dgxa mlx5_7")], 1);
	CU_ASSERT_EQUAL(m.server[net_find_host(&n, "dgxb mlx5_0")], 1);
	CU_ASSERT_EQUAL(m.server[net_find_host(&n, "login node")], -1);	/* no GPU */
	srv_map_free(&m);
	/* more HCAs than the server has GPUs */
	p.gpus = 1;
	p.domain = 1;
	CU_ASSERT_EQUAL(srv_map_build(&m, &n, &p, &d), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "server \"dgxa\" has more than 1 HCAs"));
	CU_ASSERT_STRING_EQUAL(d.file, "mlx5.topo");
	CU_ASSERT(d.line > 0);
	net_free(&n);
	/* a GPU index past the server's */
	srv_params_preset(&p, "dgx-h100", &d);
	gen_servers(&n, 1, "dgx-h100");
	int g7 = net_find_host(&n, "n0g7");	/* before its name goes */

	CU_ASSERT_FATAL(g7 >= 0);
	free(n.nodes[g7].desc);
	n.nodes[g7].desc = strdup("n0g9");
	CU_ASSERT_EQUAL(srv_map_build(&m, &n, &p, &d), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "host \"n0g9\": GPU 9 of a server of 8 GPUs"));
	net_free(&n);
}

/* NVLink's two pipes per GPU against their closed forms. */
static void test_pipes(void)
{
	struct srv_params p;
	struct srv_map m;
	struct net n;
	sim_time_t first, e1, e2, e3;
	const uint64_t B = 1 << 20;

	srv_params_preset(&p, "dgx-h100", &d);
	gen_servers(&n, 1, "dgx-h100");
	CU_ASSERT_EQUAL_FATAL(srv_map_build(&m, &n, &p, &d), 0);
	const int g0 = m.gpu_node[0], g1 = m.gpu_node[1], g2 = m.gpu_node[2], g3 = m.gpu_node[3];
	/* one MiB at 370.8 GB/s: ceil(1048576 x 1000 / 370.8) ps, then 3.4 us */
	const sim_time_t ser = (sim_time_t)ceil(B * 1000.0 / 370.8), lat = 3400 * SIM_NS;

	e1 = srv_nvlink(&m, g0, g1, 1000, B, 3400, &first);
	CU_ASSERT_EQUAL(e1, 1000 + ser + lat);
	CU_ASSERT_EQUAL(first, 1000 + lat);
	/* a second send from g0 queues behind the first on g0's port */
	e2 = srv_nvlink(&m, g0, g2, 1000, B, 3400, NULL);
	CU_ASSERT_EQUAL(e2, 1000 + 2 * ser + lat);
	/* g3 -> g1 at once: its own port is free, g1's in-pipe is not */
	e3 = srv_nvlink(&m, g3, g1, 1000, B, 3400, NULL);
	CU_ASSERT_EQUAL(e3, 1000 + 2 * ser + lat);
	/* g2 sends while receiving: the directions are independent */
	CU_ASSERT_EQUAL(srv_nvlink(&m, g2, g3, 1000, B, 3400, NULL), 1000 + ser + lat);
	CU_ASSERT_EQUAL(m.xfers, 4);
	CU_ASSERT_EQUAL(m.bytes, 4 * B);
	srv_map_free(&m);
	net_free(&n);
}

/* ---- replays on GPU servers ---------------------------------------------- */

struct srv_run {
	sim_time_t end;
	struct trace_results r;	/* only the counters are kept */
	uint64_t spine_bytes;	/* bytes sent switch to switch */
	uint64_t fabric_bytes;	/* bytes sent on every port */
	uint64_t copies, hostmem;	/* staging copies, host memory bytes (models/host) */
	size_t steps;		/* the program's */
	sim_time_t op0;		/* the first op's time, as the nccl-tests table has it */
	size_t live_peak;	/* steps the replay held at once */
	size_t stored;		/* steps the program stored (none when lazy) */
	uint64_t held_est;	/* what the set-up check counts the replay to hold */
	uint64_t events;
	char fail[1024];	/* the replay's error, "" if none */
};

/* replay_servers also gives the trace NCCL's view of the preset's servers
 * (trace.tune), as ibfab run does: collectives then pay their kernels'
 * launch. Off by default, so that the closed forms have no launch in them. */
static bool with_tune;
/* replay_servers lowers lazily (trace_program.lazy) when set; and calls
 * inspect, when set, with the program it lowered */
static bool with_lazy;
static void (*inspect)(const struct trace_program *p);
/* when set, replay_servers gives the job a SHARP tree with NCCL's CollNet
 * on, as ib.sharp=on does (a trace naming collnet gets the tree anyway) */
static bool with_sharp;
/* when set, replay_servers gives the replay (not the lowering) this
 * sim.max_memory: what the replay may hold at once */
static uint64_t replay_budget;

static void replay_servers(const struct net *n0, const struct fab_params *prm, const char *text,
			   struct srv_run *out)
{
	struct net nsharp, *n = (struct net *)n0;
	struct trace t;
	struct trace_program p;
	struct trace_results r;
	struct fab_msgs msgs = { 0 };
	struct srv_map m;
	struct fab *f;
	int32_t *g;

	memset(out, 0, sizeof(*out));
	trace_init(&t);
	CU_ASSERT_EQUAL_FATAL(trace_load_string(text, "srv-test", &t, &d), 0);
	CU_ASSERT_EQUAL_FATAL(trace_map_ranks(&t, n, &d), 0);
	if (strstr(text, "collnet") || with_sharp) {	/* SHARP: the job's tree, as cli_sharp.c */
		struct sm_sharp_tree tree;
		int32_t *ra = malloc((size_t)t.nranks * sizeof(*ra));

		CU_ASSERT_PTR_NOT_NULL_FATAL(ra);
		CU_ASSERT_EQUAL_FATAL(net_dup(&nsharp, n0), 0);
		n = &nsharp;
		CU_ASSERT_EQUAL_FATAL(sm_sharp_attach(n, t.rank_node, t.nranks, &tree, ra, &d), 0);
		CU_ASSERT_EQUAL_FATAL(trace_set_agg(&t, tree.nagg, tree.node, tree.parent, ra, &d), 0);
		free(ra);
		sm_sharp_tree_free(&tree);
		t.tune.collnet = with_sharp;
	}
	if (prm->server.gpus) {	/* as ibfab run does: the rings follow the servers */
		CU_ASSERT_EQUAL_FATAL(srv_map_build(&m, n, &prm->server, &d), 0);
		g = malloc((size_t)t.nranks * sizeof(*g));
		CU_ASSERT_PTR_NOT_NULL_FATAL(g);
		for (int32_t k = 0; k < t.nranks; k++)
			g[k] = srv_domain(&m, t.rank_node[k]);
		CU_ASSERT_EQUAL_FATAL(trace_set_groups(&t, g, 2 * prm->server.gpus, 512u << 10, &d), 0);
		free(g);
		srv_map_free(&m);
		CU_ASSERT_EQUAL_FATAL(trace_set_nvs(&t, &d), 0);
		if (with_tune) {
			const struct srv_preset *sp = srv_preset_find(prm->server.preset);

			CU_ASSERT_PTR_NOT_NULL_FATAL(sp);
			t.tune = (struct trace_tune){ .arch = sp->nccl_arch, .amd = sp->amd_cpu,
						      .nchannels = prm->server.gpus, .bw = sp->nccl_bw,
						      .ll128 = true, .nvlink_gbps = prm->server.nvlink_gbps,
						      .nvls_eff = prm->server.nvls_eff,
						      .collnet = with_sharp };
			CU_ASSERT_EQUAL_FATAL(trace_tune_ops(&t), 0);
		}
	}
	trace_program_init(&p, &t);
	p.lazy = with_lazy;
	CU_ASSERT_EQUAL_FATAL(trace_lower(&t, &p, &d), 0);
	if (inspect)
		inspect(&p);
	{
		uint64_t bytes, big_steps;
		uint32_t big;

		trace_lower_estimate(&t, with_lazy, &out->held_est, &bytes, &big, &big_steps);
	}
	if (replay_budget)
		p.max_bytes = replay_budget;
	for (uint32_t op = 0; op < t.nops && !with_lazy; op++)	/* every lowering is a correct algorithm */
		if (t.ops[op].kind == TRACE_COLL && coll_check(&p, op, &d)) {
			fprintf(stderr, "\n  coll_check: %s\n", d.msg);
			CU_FAIL("coll_check");
		}
	f = fab_create(n, prm, &msgs, 1, &d);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	if (trace_replay(&p, f, &r, &d)) {
		if (!replay_budget)
			fprintf(stderr, "\n  trace_replay: %s\n", d.msg);
		snprintf(out->fail, sizeof(out->fail), "%s", d.msg);
	}
	out->end = r.end_ps;
	out->op0 = t.nops ? r.op_end[0] - r.op_start[0] : 0;
	out->r.nvlink_xfers = r.nvlink_xfers;
	out->r.nvlink_bytes = r.nvlink_bytes;
	out->r.pxn_xfers = r.pxn_xfers;
	out->r.qp_pairs = r.qp_pairs;
	for (int i = 0; i < n->nnodes; i++) {
		const struct host_stats *hs = fab_host_stats(f, i);

		if (hs) {
			out->copies += hs->staging_copies;
			out->hostmem += hs->hostmem_bytes;
		}
	}
	for (int i = 0; i < fab_nports(f); i++) {
		const struct fab_port_info *pi = fab_port(f, i);
		struct fab_sample s;

		fab_port_sample(f, i, &s);
		out->fabric_bytes += s.xmit_bytes;
		if (n->nodes[pi->node].type == NET_SWITCH && n->nodes[pi->peer_node].type == NET_SWITCH)
			out->spine_bytes += s.xmit_bytes;
	}
	out->steps = p.nsteps;
	out->live_peak = r.live_peak;
	out->stored = p.nstored;
	out->events = fab_engine(f)->events;
	trace_results_free(&r);
	fab_destroy(f);
	fab_msgs_free(&msgs);
	trace_program_free(&p);
	trace_free(&t);
	if (n != n0)
		net_free(n);
}

static void servers_params(struct fab_params *prm, const char *server)
{
	fab_params_default(prm);
	CU_ASSERT_EQUAL_FATAL(fab_params_preset(prm, "ndr", &d), 0);
	CU_ASSERT_EQUAL_FATAL(srv_params_preset(&prm->server, server, &d), 0);
}

/* One server: every step of a ring is an NVLink transfer, so the ring's
 * closed form holds to the picosecond: 2(N-1) (ser(S/N) + lat). */
static void test_replay_one_server(void)
{
	struct fab_params prm;
	struct srv_run a, b;
	struct net n;
	const uint64_t S = 8 << 20;
	const sim_time_t step = (sim_time_t)ceil((S / 8) * 1000.0 / (18 * 20.6)) + 3400 * SIM_NS;

	gen_servers(&n, 2, "dgx-h100");
	servers_params(&prm, "dgx-h100");
	replay_servers(&n, &prm, "ranks 8\nallreduce 8MiB algo=ring channels=1 chunks=1\n", &a);
	CU_ASSERT_EQUAL(a.end, 2 * 7 * step);
	CU_ASSERT_EQUAL(a.r.nvlink_xfers, 2 * 7 * 8);
	CU_ASSERT_EQUAL(a.r.nvlink_bytes, 2 * 7 * S);
	CU_ASSERT_EQUAL(a.r.pxn_xfers, 0);
	CU_ASSERT_EQUAL(a.r.qp_pairs, 0);	/* no queue pair, nothing on the fabric */
	CU_ASSERT_EQUAL(a.fabric_bytes, 0);
	/* not given, a ring on servers takes NCCL's shape: 2 channels per
	 * NIC (16) and pieces of at most 2 MiB - 8 MiB / (8 x 16) = 64 KiB
	 * is one piece; 1 GiB / 128 = 8 MiB is four */
	struct srv_run au;

	replay_servers(&n, &prm, "ranks 8\nallreduce 8MiB\n", &au);
	CU_ASSERT_EQUAL(au.r.nvlink_xfers, 2 * 7 * 8 * 16);
	replay_servers(&n, &prm, "ranks 8\nallreduce 1GiB\n", &au);
	CU_ASSERT_EQUAL(au.r.nvlink_xfers, 2 * 7 * 8 * 16 * 4);
	/* given, they are kept */
	replay_servers(&n, &prm, "ranks 8\nallreduce 1GiB channels=2\n", &au);
	CU_ASSERT_EQUAL(au.r.nvlink_xfers, 2 * 7 * 8 * 2 * 32);
	replay_servers(&n, &prm, "ranks 8\nallreduce 1GiB chunks=3\n", &au);
	CU_ASSERT_EQUAL(au.r.nvlink_xfers, 2 * 7 * 8 * 16 * 3);
	/* all-to-all, every message at once: each GPU's port sends its 7 in
	 * turn, and every port receives one at a time in the order they
	 * arrive - 7 ser(1 MiB) + lat, the least any schedule takes (each
	 * port has 7 MiB to send and 7 to take) */
	replay_servers(&n, &prm, "ranks 8\nalltoall 8MiB algo=direct\n", &au);
	CU_ASSERT_EQUAL(au.end, 7 * (step - 3400 * SIM_NS) + 3400 * SIM_NS);
	/* without servers the same ranks are hosts on the rails: much slower */
	srv_params_default(&prm.server);
	replay_servers(&n, &prm, "ranks 8\nallreduce 8MiB algo=ring channels=1 chunks=1\n", &b);
	CU_ASSERT_EQUAL(b.r.nvlink_xfers, 0);
	CU_ASSERT(b.fabric_bytes > 0);
	CU_ASSERT(b.end > 3 * a.end);
	net_free(&n);
}

/*
 * Two servers, 8 channels: channel h enters each server at GPU h and
 * leaves from GPU h-1, so the hop to the next server is relayed by GPU
 * h's NIC (PXN): every one of the 2 x 8 cross-server hops of each of the
 * 30 rounds, and nothing crosses a spine. With PXN off the same hops go
 * rail h-1 to rail h, through the spines.
 */
static void test_replay_pxn(void)
{
	struct fab_params prm;
	struct srv_run on, off;
	struct net n;
	const char *ar = "ranks 16\nallreduce 16MiB algo=ring channels=8\n";

	gen_servers(&n, 2, "dgx-h100");
	servers_params(&prm, "dgx-h100");
	replay_servers(&n, &prm, ar, &on);
	CU_ASSERT_EQUAL(on.r.pxn_xfers, 30 * 2 * 8);
	/* all 30 x 16 x 8 steps start on NVLink: 14 of 16 hops, and the relays */
	CU_ASSERT_EQUAL(on.r.nvlink_xfers, 30 * 16 * 8);
	CU_ASSERT_EQUAL(on.spine_bytes, 0);
	CU_ASSERT(on.fabric_bytes > 0);
	prm.server.pxn = false;
	replay_servers(&n, &prm, ar, &off);
	CU_ASSERT_EQUAL(off.r.pxn_xfers, 0);
	CU_ASSERT_EQUAL(off.r.nvlink_xfers, 30 * 14 * 8);
	CU_ASSERT(off.spine_bytes > 0);
	/* one channel without the rotation enters and leaves at GPUs 0 and 7:
	 * every relay is GPU 0's, and rail 0 carries it all */
	struct srv_run one;

	prm.server.pxn = true;
	replay_servers(&n, &prm, "ranks 16\nallreduce 16MiB algo=ring channels=1\n", &one);
	CU_ASSERT_EQUAL(one.r.pxn_xfers, 30 * 2);
	CU_ASSERT(one.end > on.end);
	net_free(&n);
}

/*
 * Broadcast and reduce on servers: NCCL's ring chains, on its channels (2
 * per NIC, 16) in pieces of one step (BROADCAST_CHUNKSTEPS = 1: 512 KiB),
 * each channel's chain following its own rotated ring from the root. One
 * server, 1 GiB: 7 hops x 16 channels x 128 pieces, and every GPU's port
 * busy: about S / (18 x 20.6 GB/s), where one channel of one piece went
 * hop by hop (7 S / B). Two servers, 64 MiB (8 pieces a channel): the
 * chain of channel h (h % 8 = g) starts at the root (GPU 0), goes on to
 * server 0's GPUs 1 .. g-1, enters server 1 at GPU g (PXN: rail g) and
 * leaves it from GPU g-1 back to server 0's GPU g: two crossings, one
 * where g = 0; none of them through a spine. The channels take turns at
 * each GPU's port, so the two servers' broadcast runs at about the
 * all-gather's bus bandwidth.
 */
static void test_replay_chains(void)
{
	struct fab_params prm;
	struct srv_run a;
	struct net n;
	const double S = 1 << 30, B = 18 * 20.6e9;

	gen_servers(&n, 2, "dgx-h100");
	servers_params(&prm, "dgx-h100");
	replay_servers(&n, &prm, "ranks 8\nbroadcast 1GiB algo=ring proto=simple\n", &a);
	CU_ASSERT_EQUAL(a.r.nvlink_xfers, 7 * 16 * 128);
	CU_ASSERT(a.end > (sim_time_t)(S / B * 1e12));
	CU_ASSERT(a.end < (sim_time_t)(1.02 * S / B * 1e12));
	replay_servers(&n, &prm, "ranks 8\nreduce 1GiB algo=ring proto=simple root=3\n", &a);
	CU_ASSERT_EQUAL(a.r.nvlink_xfers, 7 * 16 * 128);
	CU_ASSERT(a.end < (sim_time_t)(1.02 * S / B * 1e12));
	/* given, channels and chunks are kept */
	replay_servers(&n, &prm, "ranks 8\nbroadcast 1GiB algo=ring proto=simple channels=1 chunks=1\n", &a);
	CU_ASSERT_EQUAL(a.r.nvlink_xfers, 7);
	CU_ASSERT(a.end > (sim_time_t)(7 * S / B * 1e12));
	replay_servers(&n, &prm, "ranks 16\nbroadcast 64MiB algo=ring proto=simple\n", &a);
	CU_ASSERT_EQUAL(a.r.pxn_xfers, (2 * 14 + 2) * 8);
	CU_ASSERT_EQUAL(a.r.nvlink_xfers, 15 * 16 * 8);
	CU_ASSERT_EQUAL(a.spine_bytes, 0);
	CU_ASSERT(a.fabric_bytes > 0);
	/* the channels run side by side, each on its rail: the broadcast's bus
	 * bandwidth near the all-gather's (both carry S a GPU; 0.65 of it when
	 * the root's port sent one channel after another) */
	struct srv_run ag;

	replay_servers(&n, &prm, "ranks 16\nbroadcast 256MiB algo=ring proto=simple\n", &a);
	replay_servers(&n, &prm, "ranks 16\nallgather 256MiB algo=ring proto=simple\n", &ag);
	CU_ASSERT(a.end * 0.9 * 15 / 16 < ag.end);
	net_free(&n);
}

/*
 * NCCL's tree on servers: within each server a chain, between servers the
 * double binary tree of the chains' heads. On 2 servers with one channel
 * and one piece: each tree (2) reduces up and broadcasts down (2) its 7
 * chain edges per server (2) over NVLink - 56 - and its one edge between
 * the heads over the fabric - 4 - both heads GPU 0, on rail 0: no relay.
 * Channel h's heads are GPU h: 8 channels spread the heads over 8 rails.
 */
static void test_tree_servers(void)
{
	struct fab_params prm;
	struct srv_run r, r8;
	struct net n;

	gen_servers(&n, 2, "dgx-h100");
	servers_params(&prm, "dgx-h100");
	replay_servers(&n, &prm, "ranks 16\nallreduce 16MiB algo=tree channels=1 chunks=1\n", &r);
	CU_ASSERT_EQUAL(r.r.nvlink_xfers, 56);
	CU_ASSERT_EQUAL(r.r.pxn_xfers, 0);
	CU_ASSERT_EQUAL(r.r.qp_pairs, 2);	/* head to head, both ways */
	CU_ASSERT_EQUAL(r.spine_bytes, 0);
	replay_servers(&n, &prm, "ranks 16\nallreduce 16MiB algo=tree channels=8 chunks=1\n", &r8);
	CU_ASSERT_EQUAL(r8.r.nvlink_xfers, 8 * 56);
	CU_ASSERT_EQUAL(r8.r.qp_pairs, 8 * 2);
	CU_ASSERT_EQUAL(r8.spine_bytes, 0);
	CU_ASSERT(r8.end < r.end);	/* eight rails, not one */
	net_free(&n);
}

/*
 * NCCL's tuning model (coll_tune.c) against the same arithmetic done by
 * hand from NCCL's constants (src/graph/tuning.cc): Hopper, Intel hosts,
 * 8 search channels of 48 GB/s, LL128 on.
 */
#define TT(tu, c, a, p, n, N, S) \
	coll_tune_time(tu, TRACE_##c, TRACE_ALGO_##a, TRACE_PROTO_##p, n, N, S)

static void test_tune(void)
{
	const struct trace_tune h100 = { .arch = 2, .nchannels = 8, .bw = 48, .ll128 = true };
	const double eps = 1e-6;

	/* one server: ring 8.4 + 14 x 3.4, tree 8.4 + 2 (7 x 4.0) */
	CU_ASSERT_DOUBLE_EQUAL(TT(&h100, ALLREDUCE, RING, SIMPLE, 8, 1, 0), 56.0, eps);
	CU_ASSERT_DOUBLE_EQUAL(TT(&h100, ALLREDUCE, TREE, SIMPLE, 8, 1, 0), 64.4, eps);
	/* two: ring 8.4 + 28 x max(3.4, 3 x 1) + 2 x 14, tree 8.4 + 2 (7 x 4 + 1 x 14) */
	CU_ASSERT_DOUBLE_EQUAL(TT(&h100, ALLREDUCE, RING, SIMPLE, 16, 2, 0), 131.6, eps);
	CU_ASSERT_DOUBLE_EQUAL(TT(&h100, ALLREDUCE, TREE, SIMPLE, 16, 2, 0), 92.4, eps);
	/* 16 MiB on two: the ring's plateau (x 1.4) and busBw 384 x 16/30; the
	 * tree's busBw min(0.92 x 384, 8 x 41.4) x 0.7 (log2(16 MiB / 64) = 18) / 2 */
	const double S = 16777216.0;

	CU_ASSERT_DOUBLE_EQUAL(TT(&h100, ALLREDUCE, RING, SIMPLE, 16, 2, 16 << 20),
			       1.4 * 131.6 + S / (1000 * 384 * 16.0 / 30), eps);
	CU_ASSERT_DOUBLE_EQUAL(TT(&h100, ALLREDUCE, TREE, SIMPLE, 16, 2, 16 << 20),
			       92.4 + S / (1000 * 331.2 * 0.7 / 2), eps);
	/* LL: one server's ring 6.6 + 14 x 0.6 and busBw min(141, 384 / 2);
	 * two servers' tree 6.8 + 2 (7 x 0.6 + 1 x 5.0), busBw
	 * min(331.2 / 3.8, 39: Intel hosts' cap) x 0.6 (log2(64 KiB / 64) = 10) / 2 */
	CU_ASSERT_DOUBLE_EQUAL(TT(&h100, ALLREDUCE, RING, LL, 8, 1, 0), 15.0, eps);
	CU_ASSERT_DOUBLE_EQUAL(TT(&h100, ALLREDUCE, RING, LL, 8, 1, 1 << 20),
			       15.0 + 1048576.0 / (1000 * 141 * 8 / 14.0), eps);
	CU_ASSERT_DOUBLE_EQUAL(TT(&h100, ALLREDUCE, TREE, LL, 16, 2, 65536),
			       25.2 + 65536.0 / (1000 * 39 * 0.6 / 2), eps);
	/* LL128: two servers' ring 14 + 28 x max(1.9, 1) + 2 x 4.0, busBw
	 * min(0.92 x 384, 8 x 36.7); one server's tree 14 + 2 (7 x 1.25),
	 * busBw min(331.2 x 7/9, 8 x 36.7) */
	CU_ASSERT_DOUBLE_EQUAL(TT(&h100, ALLREDUCE, RING, LL128, 16, 2, 1 << 30),
			       75.2 + 1073741824.0 / (1000 * 293.6 * 16 / 30.0), eps);
	CU_ASSERT_DOUBLE_EQUAL(TT(&h100, ALLREDUCE, TREE, LL128, 8, 1, 0), 31.5, eps);
	/* allgather: nRanks - 1 steps, nNodes - 1 of them across; broadcast:
	 * a step's latency per rank, the network's (Simple: the tree's) */
	CU_ASSERT_DOUBLE_EQUAL(TT(&h100, ALLGATHER, RING, LL, 16, 2, 0), 6.6 + 14 * 1.0 + 2.7, eps);
	CU_ASSERT_DOUBLE_EQUAL(TT(&h100, BROADCAST, RING, SIMPLE, 16, 2, 0), 8.4 + 16 * 14.0, eps);
	/* no tree but the allreduce's; no LL128 where NCCL leaves it off */
	CU_ASSERT(TT(&h100, ALLGATHER, TREE, SIMPLE, 16, 2, 0) < 0);
	const struct trace_tune nol128 = { .arch = 2, .nchannels = 8, .bw = 48 };

	CU_ASSERT(TT(&nol128, ALLREDUCE, RING, LL128, 16, 2, 0) < 0);

	/*
	 * What auto picks (NCCL's order: tree, ring; LL, LL128, Simple). One
	 * server: the ring, LL to 2 MiB, LL128 at 4-8 MiB, Simple from 16 MiB.
	 * Two: the tree with LL to 128 KiB, with LL128 to 16 MiB, the ring
	 * with LL128 at 32-64 MiB, with Simple from 128 MiB. Sixteen: the
	 * tree, LL128 at 1 MiB, Simple at 128 MiB, the ring at 1 GiB (7.2 ms
	 * against 7.6). 128: the tree at 1 GiB (the ring's latency alone is
	 * 13.5 ms), the ring at 8 GiB.
	 */
	static const struct {
		uint32_t nodes;
		uint64_t bytes;
		enum trace_algo algo;
		enum trace_proto proto;
	} want[] = {
		{ 1, 8, TRACE_ALGO_RING, TRACE_PROTO_LL },
		{ 1, 2 << 20, TRACE_ALGO_RING, TRACE_PROTO_LL },
		{ 1, 4 << 20, TRACE_ALGO_RING, TRACE_PROTO_LL128 },
		{ 1, 16 << 20, TRACE_ALGO_RING, TRACE_PROTO_SIMPLE },
		{ 2, 8, TRACE_ALGO_TREE, TRACE_PROTO_LL },
		{ 2, 128 << 10, TRACE_ALGO_TREE, TRACE_PROTO_LL },
		{ 2, 256 << 10, TRACE_ALGO_TREE, TRACE_PROTO_LL128 },
		{ 2, 16 << 20, TRACE_ALGO_TREE, TRACE_PROTO_LL128 },
		{ 2, 32 << 20, TRACE_ALGO_RING, TRACE_PROTO_LL128 },
		{ 2, 128 << 20, TRACE_ALGO_RING, TRACE_PROTO_SIMPLE },
		{ 2, 8ull << 30, TRACE_ALGO_RING, TRACE_PROTO_SIMPLE },
		{ 16, 8, TRACE_ALGO_TREE, TRACE_PROTO_LL },
		{ 16, 1 << 20, TRACE_ALGO_TREE, TRACE_PROTO_LL128 },
		{ 16, 128 << 20, TRACE_ALGO_TREE, TRACE_PROTO_SIMPLE },
		{ 16, 1ull << 30, TRACE_ALGO_RING, TRACE_PROTO_SIMPLE },
		{ 128, 1ull << 30, TRACE_ALGO_TREE, TRACE_PROTO_SIMPLE },
		{ 128, 8ull << 30, TRACE_ALGO_RING, TRACE_PROTO_SIMPLE },
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct coll_tune_choice c = coll_tune_pick(&h100, TRACE_ALLREDUCE, TRACE_ALGO_AUTO,
							   8 * want[i].nodes, want[i].nodes,
							   want[i].bytes, 0, 0);

		CU_ASSERT_EQUAL(c.algo, want[i].algo);
		CU_ASSERT_EQUAL(c.proto, want[i].proto);
	}
	/* NCCL_PROTO=Simple: the choice among Simple's, as before protocols */
	const uint8_t simple = 1u << TRACE_PROTO_SIMPLE;

	CU_ASSERT_EQUAL(coll_tune_pick(&h100, TRACE_ALLREDUCE, TRACE_ALGO_AUTO, 16, 2, 8, simple, 0).algo,
			TRACE_ALGO_TREE);
	CU_ASSERT_EQUAL(coll_tune_pick(&h100, TRACE_ALLREDUCE, TRACE_ALGO_AUTO, 8, 1, 8, simple, 0).algo,
			TRACE_ALGO_RING);
	/* NCCL_ALGO=Ring: the ring's best protocol */
	CU_ASSERT_EQUAL(coll_tune_pick(&h100, TRACE_ALLREDUCE, TRACE_ALGO_RING, 16, 2, 8, 0, 0).proto,
			TRACE_PROTO_LL);
	CU_ASSERT_EQUAL(coll_tune_pick(&h100, TRACE_ALLGATHER, TRACE_ALGO_AUTO, 1024, 128, 8, 0, 0).algo,
			TRACE_ALGO_RING);
	CU_ASSERT_EQUAL(coll_tune_pick(&h100, TRACE_ALLTOALL, TRACE_ALGO_AUTO, 1024, 128, 8, 0, 0).algo,
			TRACE_ALGO_DIRECT);
	CU_ASSERT_EQUAL(coll_tune_pick(&h100, TRACE_BARRIER, TRACE_ALGO_AUTO, 1024, 128, 0, 0, 0).algo,
			TRACE_ALGO_AUTO);
	CU_ASSERT_EQUAL(coll_tune_pick(&h100, TRACE_ALLREDUCE, TRACE_ALGO_COLLNET, 16, 2, 8, 0, 0).proto,
			TRACE_PROTO_AUTO);
	/*
	 * NVLS on one H100 server: the NVLS graph's 8 channels at 40 GB/s
	 * (9 x 40 <= 370.8 < 9 x 50), busBw 8 x 40 x 0.85 x 7/8 x 2 = 476,
	 * algBw 476 x 8/14 = 272, 25 us; not across servers, nor without
	 * NVLS (A100), nor with another protocol. Auto takes it from 2 MiB
	 * (32.7 us against the LL ring's 41.0) on one server; at 1 MiB the LL
	 * ring stays (28.0 against 28.9).
	 */
	const struct trace_tune h100n = { .arch = 2, .nchannels = 8, .bw = 48, .ll128 = true,
					  .nvlink_gbps = 370.8, .nvls_eff = 0.85 };

	CU_ASSERT_DOUBLE_EQUAL(TT(&h100n, ALLREDUCE, NVLS, SIMPLE, 8, 1, 1 << 30),
			       25 + 1073741824.0 / (1000 * 476 * 8 / 14.0), eps);
	/*
	 * NVLSTree across servers: the same graph's 8 channels, each
	 * min(40 x 0.85 x 7/8 x 2 = 59.5, the NIC's 48 (x 2 on two servers),
	 * perChMaxNVLSTreeBw 57.7 on two servers, 45.5 on more): busBw 461.6
	 * on two, 364 on sixteen; latency 25 + 2 log2(nodes) x 20.9.
	 */
	CU_ASSERT_DOUBLE_EQUAL(TT(&h100n, ALLREDUCE, NVLSTREE, SIMPLE, 16, 2, 1 << 30),
			       66.8 + 1073741824.0 / (1000 * 461.6 * 16 / 30.0), eps);
	CU_ASSERT_DOUBLE_EQUAL(TT(&h100n, ALLREDUCE, NVLSTREE, SIMPLE, 128, 16, 1 << 30),
			       192.2 + 1073741824.0 / (1000 * 364 * 128 / 254.0), eps);
	CU_ASSERT(TT(&h100n, ALLREDUCE, NVLSTREE, SIMPLE, 17, 2, 1 << 30) < 0);	/* unequal servers */
	CU_ASSERT(TT(&h100n, ALLREDUCE, NVLSTREE, SIMPLE, 8, 1, 1 << 30) < 0);	/* one: NVLS */
	/* NVLS across servers is NVLS + SHARP, which needs CollNet; so
	 * does CollNetDirect */
	CU_ASSERT(TT(&h100n, ALLREDUCE, NVLS, SIMPLE, 16, 2, 1 << 30) < 0);
	CU_ASSERT(TT(&h100n, ALLREDUCE, COLLNET, SIMPLE, 16, 2, 1 << 30) < 0);
	CU_ASSERT(TT(&h100n, ALLREDUCE, NVLS, LL, 8, 1, 1 << 30) < 0);
	CU_ASSERT(TT(&h100n, ALLGATHER, NVLS, SIMPLE, 8, 1, 1 << 30) < 0);
	CU_ASSERT(TT(&h100, ALLREDUCE, NVLS, SIMPLE, 8, 1, 1 << 30) < 0);
	CU_ASSERT_EQUAL(coll_tune_pick(&h100n, TRACE_ALLREDUCE, TRACE_ALGO_AUTO, 8, 1, 1 << 20, 0, 0).algo,
			TRACE_ALGO_RING);
	CU_ASSERT_EQUAL(coll_tune_pick(&h100n, TRACE_ALLREDUCE, TRACE_ALGO_AUTO, 8, 1, 2 << 20, 0, 0).algo,
			TRACE_ALGO_NVLS);
	CU_ASSERT_EQUAL(coll_tune_pick(&h100n, TRACE_ALLREDUCE, TRACE_ALGO_AUTO, 8, 1, 1ull << 30, 0, 0).algo,
			TRACE_ALGO_NVLS);
	/*
	 * With NVLS across servers: two, the tree with LL to 128 KiB, with
	 * LL128 to 2 MiB, NVLSTree from 4 MiB (83.8 us against the LL128
	 * tree's 84.2); sixteen, NVLSTree from 32 MiB to 4 GiB, then the
	 * ring (busBw 384 against 364: 46.06 ms against 47.02 at 8 GiB);
	 * 128, NVLSTree from 64 MiB (1 GiB: 6.21 ms, the tree 7.72).
	 */
	static const struct {
		uint32_t nodes;
		uint64_t bytes;
		enum trace_algo algo;
		enum trace_proto proto;
	} nv[] = {
		{ 2, 128 << 10, TRACE_ALGO_TREE, TRACE_PROTO_LL },
		{ 2, 2 << 20, TRACE_ALGO_TREE, TRACE_PROTO_LL128 },
		{ 2, 4 << 20, TRACE_ALGO_NVLSTREE, TRACE_PROTO_SIMPLE },
		{ 2, 8ull << 30, TRACE_ALGO_NVLSTREE, TRACE_PROTO_SIMPLE },
		{ 16, 16 << 20, TRACE_ALGO_TREE, TRACE_PROTO_LL128 },
		{ 16, 32 << 20, TRACE_ALGO_NVLSTREE, TRACE_PROTO_SIMPLE },
		{ 16, 4ull << 30, TRACE_ALGO_NVLSTREE, TRACE_PROTO_SIMPLE },
		{ 16, 8ull << 30, TRACE_ALGO_RING, TRACE_PROTO_SIMPLE },
		{ 128, 32 << 20, TRACE_ALGO_TREE, TRACE_PROTO_LL128 },
		{ 128, 1ull << 30, TRACE_ALGO_NVLSTREE, TRACE_PROTO_SIMPLE },
	};

	for (size_t i = 0; i < sizeof(nv) / sizeof(nv[0]); i++) {
		struct coll_tune_choice c = coll_tune_pick(&h100n, TRACE_ALLREDUCE, TRACE_ALGO_AUTO,
							   8 * nv[i].nodes, nv[i].nodes, nv[i].bytes,
							   0, 0);

		CU_ASSERT_EQUAL(c.algo, nv[i].algo);
		CU_ASSERT_EQUAL(c.proto, nv[i].proto);
	}
	/* NCCL_ALGO's list: without NVLS, the Simple ring at 1 GiB */
	CU_ASSERT_EQUAL(coll_tune_pick(&h100n, TRACE_ALLREDUCE, TRACE_ALGO_AUTO, 8, 1, 1ull << 30, 0,
				       (1u << TRACE_ALGO_RING) | (1u << TRACE_ALGO_TREE)).algo,
			TRACE_ALGO_RING);
	/*
	 * With CollNet (SHARP). NVLS + SHARP on H100: min(59.5, the NIC's 48)
	 * a channel, busBw 384, 25 + 18 us. CollNetDirect: 8 heads at bwIntra
	 * 48 (the first inter-node speed within twice the NIC's), busBw
	 * 8 x 48 x 0.85 = 326.4, algBw half, 2 (3.7 + 7 x 0.4) + 31 = 44 us;
	 * on A100 (no 0.85) 384. One server: no CollNet.
	 */
	struct trace_tune h100s = h100n;

	h100s.collnet = true;
	CU_ASSERT_DOUBLE_EQUAL(TT(&h100s, ALLREDUCE, NVLS, SIMPLE, 128, 16, 1 << 30),
			       43 + 1073741824.0 / (1000 * 384 * 128 / 254.0), eps);
	CU_ASSERT_DOUBLE_EQUAL(TT(&h100s, ALLREDUCE, COLLNET, SIMPLE, 128, 16, 1 << 30),
			       44 + 1073741824.0 / (1000 * 326.4 / 2), eps);
	CU_ASSERT(TT(&h100s, ALLREDUCE, COLLNET, SIMPLE, 8, 1, 1 << 30) < 0);
	CU_ASSERT(TT(&h100s, ALLREDUCE, COLLNET, LL, 16, 2, 1 << 30) < 0);
	CU_ASSERT(TT(&h100s, ALLGATHER, COLLNET, SIMPLE, 16, 2, 1 << 30) < 0);
	CU_ASSERT_DOUBLE_EQUAL(TT(&h100s, ALLREDUCE, NVLS, SIMPLE, 8, 1, 1 << 30),
			       TT(&h100n, ALLREDUCE, NVLS, SIMPLE, 8, 1, 1 << 30), eps);
	const struct trace_tune a100s = { .arch = 1, .amd = true, .nchannels = 8, .bw = 24,
					  .ll128 = true, .nvlink_gbps = 240, .collnet = true };

	CU_ASSERT_DOUBLE_EQUAL(TT(&a100s, ALLREDUCE, COLLNET, SIMPLE, 128, 16, 1 << 30),
			       44 + 1073741824.0 / (1000 * 384 / 2.0), eps);
	CU_ASSERT(TT(&a100s, ALLREDUCE, NVLS, SIMPLE, 128, 16, 1 << 30) < 0);	/* no NVLS */
	/*
	 * NCCL's choices with SHARP. H100, sixteen servers: NVLS + SHARP at
	 * every size (43 us against the LL tree's 55.2; busBw 384 against
	 * NVLSTree's 364 and the ring's 384 with 1.4 x 1,193 us more). Two:
	 * the LL tree to 128 KiB (25.2 us), NVLS + SHARP from 512 KiB to
	 * 16 MiB, NVLSTree above (busBw 461.6 against 384: 66.8 + S / 246.2
	 * below 43 + S / 204.8 past 29 MB). A100, sixteen: CollNetDirect at
	 * every size (44 us against the LL tree's 55.2); two: the LL tree to
	 * 64 KiB, then CollNetDirect.
	 */
	const struct {
		const struct trace_tune *tu;
		uint32_t nodes;
		uint64_t bytes;
		enum trace_algo algo;
		enum trace_proto proto;
	} cn[] = {
		{ &h100s, 16, 8, TRACE_ALGO_NVLS, TRACE_PROTO_SIMPLE },
		{ &h100s, 16, 1 << 20, TRACE_ALGO_NVLS, TRACE_PROTO_SIMPLE },
		{ &h100s, 16, 8ull << 30, TRACE_ALGO_NVLS, TRACE_PROTO_SIMPLE },
		{ &h100s, 2, 128 << 10, TRACE_ALGO_TREE, TRACE_PROTO_LL },
		{ &h100s, 2, 512 << 10, TRACE_ALGO_NVLS, TRACE_PROTO_SIMPLE },
		{ &h100s, 2, 16 << 20, TRACE_ALGO_NVLS, TRACE_PROTO_SIMPLE },
		{ &h100s, 2, 32 << 20, TRACE_ALGO_NVLSTREE, TRACE_PROTO_SIMPLE },
		{ &a100s, 16, 8, TRACE_ALGO_COLLNET, TRACE_PROTO_SIMPLE },
		{ &a100s, 16, 1ull << 30, TRACE_ALGO_COLLNET, TRACE_PROTO_SIMPLE },
		{ &a100s, 2, 64 << 10, TRACE_ALGO_TREE, TRACE_PROTO_LL },
		{ &a100s, 2, 256 << 10, TRACE_ALGO_COLLNET, TRACE_PROTO_SIMPLE },
		{ &a100s, 2, 8ull << 30, TRACE_ALGO_COLLNET, TRACE_PROTO_SIMPLE },
	};

	for (size_t i = 0; i < sizeof(cn) / sizeof(cn[0]); i++) {
		struct coll_tune_choice c = coll_tune_pick(cn[i].tu, TRACE_ALLREDUCE, TRACE_ALGO_AUTO,
							   8 * cn[i].nodes, cn[i].nodes, cn[i].bytes,
							   0, 0);

		if (c.algo != cn[i].algo || c.proto != cn[i].proto)
			fprintf(stderr, "\n  case %zu: %s %s\n", i, trace_algo_names[c.algo],
				trace_proto_names[c.proto]);
		CU_ASSERT_EQUAL(c.algo, cn[i].algo);
		CU_ASSERT_EQUAL(c.proto, cn[i].proto);
	}
	/* AMD hosts pay 2 us a network step: 3 x 2 = 6 > 3.4 on every step;
	 * LL across servers is capped by the CPU's row: 22.5 GB/s on two */
	const struct trace_tune a100 = { .arch = 1, .amd = true, .nchannels = 8, .bw = 24,
					 .ll128 = true };

	CU_ASSERT_DOUBLE_EQUAL(TT(&a100, ALLREDUCE, RING, SIMPLE, 16, 2, 0), 8.4 + 28 * 6.0 + 2 * 14,
			       eps);
	CU_ASSERT_DOUBLE_EQUAL(TT(&a100, ALLREDUCE, RING, LL, 16, 2, 1 << 20),
			       6.6 + 28 * 2.0 + 2 * 2.7 + 1048576.0 / (1000 * 22.5 * 16 / 30.0), eps);
}

/* algo=auto on servers, through a replay: the op records NCCL's choice */
static void test_tune_ops(void)
{
	struct trace t;
	struct net n;
	struct fab_params prm;
	struct srv_map m;
	int32_t g[16];

	gen_servers(&n, 2, "dgx-h100");
	servers_params(&prm, "dgx-h100");
	trace_init(&t);
	CU_ASSERT_EQUAL_FATAL(trace_load_string("ranks 16\nallreduce 1MiB\nallreduce 1GiB\n"
						"allreduce 1MiB algo=ring\nalltoall 1MiB\n"
						"allreduce 1MiB ranks=0-7\n"
						"allreduce 1MiB proto=simple\n"
						"allreduce 1MiB algo=tree proto=ll\n", "tune", &t, &d), 0);
	CU_ASSERT_EQUAL_FATAL(trace_map_ranks(&t, &n, &d), 0);
	CU_ASSERT_EQUAL(trace_tune_ops(&t), 0);	/* no servers given yet: nothing */
	CU_ASSERT_EQUAL(t.ops[0].algo, TRACE_ALGO_AUTO);
	CU_ASSERT_EQUAL_FATAL(srv_map_build(&m, &n, &prm.server, &d), 0);
	for (int k = 0; k < 16; k++)
		g[k] = srv_domain(&m, t.rank_node[k]);
	srv_map_free(&m);
	CU_ASSERT_EQUAL_FATAL(trace_set_groups(&t, g, 16, 512u << 10, &d), 0);
	t.tune = (struct trace_tune){ .arch = 2, .nchannels = 8, .bw = 48, .ll128 = true };
	CU_ASSERT_EQUAL(trace_tune_ops(&t), 0);
	/* 1 MiB on two servers: the tree with LL128 (60.4 us against the
	 * ring's 81.9 with LL128 and the tree's 105.1 with Simple) */
	CU_ASSERT_EQUAL(t.ops[0].algo, TRACE_ALGO_TREE);
	CU_ASSERT_EQUAL(t.ops[0].proto, TRACE_PROTO_LL128);
	CU_ASSERT_TRUE(t.ops[0].auto_algo);
	CU_ASSERT_TRUE(t.ops[0].auto_proto);
	CU_ASSERT_EQUAL(t.ops[1].algo, TRACE_ALGO_RING);
	CU_ASSERT_EQUAL(t.ops[1].proto, TRACE_PROTO_SIMPLE);
	CU_ASSERT_TRUE(t.ops[1].auto_algo);
	CU_ASSERT_EQUAL(t.ops[2].algo, TRACE_ALGO_RING);	/* given: kept, */
	CU_ASSERT_FALSE(t.ops[2].auto_algo);
	CU_ASSERT_EQUAL(t.ops[2].proto, TRACE_PROTO_LL128);	/* its protocol chosen */
	CU_ASSERT_TRUE(t.ops[2].auto_proto);
	CU_ASSERT_EQUAL(t.ops[3].algo, TRACE_ALGO_DIRECT);	/* all-to-all: all at once */
	CU_ASSERT_TRUE(t.ops[3].auto_algo);
	CU_ASSERT_EQUAL(t.ops[3].proto, TRACE_PROTO_AUTO);	/* its sends: Simple */
	CU_ASSERT_EQUAL(t.ops[4].algo, TRACE_ALGO_RING);	/* one server: the ring, LL */
	CU_ASSERT_EQUAL(t.ops[4].proto, TRACE_PROTO_LL);
	CU_ASSERT_EQUAL(t.ops[5].algo, TRACE_ALGO_TREE);	/* Simple given: its tree */
	CU_ASSERT_EQUAL(t.ops[5].proto, TRACE_PROTO_SIMPLE);
	CU_ASSERT_FALSE(t.ops[5].auto_proto);
	CU_ASSERT_EQUAL(t.ops[6].algo, TRACE_ALGO_TREE);	/* both given: nothing chosen */
	CU_ASSERT_EQUAL(t.ops[6].proto, TRACE_PROTO_LL);
	CU_ASSERT_FALSE(t.ops[6].auto_algo || t.ops[6].auto_proto);
	trace_free(&t);
	/* with NVLS and SHARP, 64 MiB over both servers is NVLSTree; over 4 +
	 * 8 GPUs neither NVLS, NVLSTree nor CollNet (NCCL's need as many GPUs
	 * on every server, as ibfab's lowerings do, which would refuse it),
	 * and NCCL_ALGO=NVLS alone leaves it the default */
	trace_init(&t);
	CU_ASSERT_EQUAL_FATAL(trace_load_string("ranks 16\nallreduce 64MiB\nallreduce 64MiB ranks=4-15\n"
						"allreduce 64MiB ranks=4-15\n", "tune", &t, &d), 0);
	CU_ASSERT_EQUAL_FATAL(t.nops, 3);
	CU_ASSERT_EQUAL_FATAL(trace_map_ranks(&t, &n, &d), 0);
	CU_ASSERT_EQUAL_FATAL(trace_set_groups(&t, g, 16, 512u << 10, &d), 0);
	t.nagg = 1;	/* a SHARP tree: only its presence matters to the choice */
	t.tune = (struct trace_tune){ .arch = 2, .nchannels = 8, .bw = 48, .ll128 = true,
				      .nvlink_gbps = 370.8, .nvls_eff = 0.85, .collnet = true };
	t.ops[2].algos = 1u << TRACE_ALGO_NVLS;
	CU_ASSERT_EQUAL(trace_tune_ops(&t), 0);
	CU_ASSERT_EQUAL(t.ops[0].algo, TRACE_ALGO_NVLSTREE);
	CU_ASSERT(t.ops[1].algo == TRACE_ALGO_RING || t.ops[1].algo == TRACE_ALGO_TREE);
	CU_ASSERT_EQUAL(t.ops[2].algo, TRACE_ALGO_AUTO);
	t.nagg = 0;
	trace_free(&t);
	net_free(&n);
}

/*
 * GPUDirect RDMA on servers: a rank's buffers are GPU memory. With it the
 * HCAs read and write them peer to peer and host memory sees only WQEs and
 * CQEs; without it every transfer between servers is copied to a host
 * bounce buffer and back (two staging copies, its bytes twice through host
 * memory) and no PXN relay (the relay reads GPU memory) - slower. With the
 * NIC across the CPU (no shared PCIe switch) P2P crosses the root complex.
 */
static void test_gpudirect(void)
{
	struct fab_params prm;
	struct srv_run on, off, far;
	struct net n;
	const char *ar = "ranks 16\nallreduce 64MiB algo=ring channels=8\n";
	/* 30 rounds x 8 channels x 2 cross-server hops of 64 MiB / 128 */
	const uint64_t hops = 30 * 8 * 2, bytes = hops * (64 << 20) / 128;

	gen_servers(&n, 2, "dgx-h100");
	servers_params(&prm, "dgx-h100");
	replay_servers(&n, &prm, ar, &on);
	CU_ASSERT_EQUAL_FATAL(fab_params_set(&prm, "host.gpudirect=off", &d), 0);
	replay_servers(&n, &prm, ar, &off);
	CU_ASSERT_EQUAL_FATAL(fab_params_set(&prm, "host.gpudirect=on", &d), 0);
	CU_ASSERT_EQUAL_FATAL(fab_params_set(&prm, "host.gpu_same_switch=off", &d), 0);
	replay_servers(&n, &prm, ar, &far);
	CU_ASSERT_EQUAL(on.copies, 0);
	CU_ASSERT(on.hostmem < bytes / 100);	/* WQEs, CQEs: no payload */
	CU_ASSERT_EQUAL(on.r.pxn_xfers, hops);
	CU_ASSERT_EQUAL(off.copies, 2 * hops);	/* out of the GPU, into the GPU */
	CU_ASSERT(off.hostmem >= 4 * bytes);	/* copied in and DMA'd out, DMA'd in and copied out */
	CU_ASSERT_EQUAL(off.r.pxn_xfers, 0);
	CU_ASSERT(off.end > on.end * 2);	/* 1.23 ms against 0.51 */
	CU_ASSERT_EQUAL(far.copies, 0);
	CU_ASSERT(far.end > on.end * 4);	/* P2P through the root complex: 2.36 ms */
	net_free(&n);
}

/*
 * SHARP on servers (NCCL's CollNet Direct): on 2 servers, 1 MiB is 8
 * slices of one 128 KiB piece; each server's 7 other GPUs send slice j to
 * GPU j (2 x 8 x 7 = 112 over NVLink), GPU j of both servers sends it up
 * to rail j's leaf, the lowest aggregation node covering them, and gets
 * the sum back (8 x 4 over the fabric, no relay: each GPU uses its own
 * NIC), then hands it to its server's other 7 (112 more).
 */
static void test_collnet_servers(void)
{
	struct fab_params prm;
	struct srv_run r, ring;
	struct net n;

	gen_servers(&n, 2, "dgx-h100");
	servers_params(&prm, "dgx-h100");
	replay_servers(&n, &prm, "ranks 16\nallreduce 1MiB algo=collnet\n", &r);
	CU_ASSERT_EQUAL(r.steps, 112 + 32 + 112);
	CU_ASSERT_EQUAL(r.r.nvlink_xfers, 224);
	CU_ASSERT_EQUAL(r.r.pxn_xfers, 0);
	CU_ASSERT_EQUAL(r.spine_bytes, 0);	/* each slice's root is its rail's leaf */
	/* 256 MiB: every NIC carries an eighth each way, NVLink seven eighths:
	 * faster than the ring, bound by NVLink rather than by the NICs */
	replay_servers(&n, &prm, "ranks 16\nallreduce 256MiB algo=collnet\n", &r);
	replay_servers(&n, &prm, "ranks 16\nallreduce 256MiB algo=ring\n", &ring);
	CU_ASSERT(r.end * 11 < ring.end * 10);
	net_free(&n);
}

/* The rotated rings are correct algorithms for every ring collective,
 * with servers of unequal size and more channels than GPUs. */
static void test_rotation_check(void)
{
	struct fab_params prm;
	struct srv_run r;
	struct net n;
	static const char *traces[] = {
		"ranks 16\nallreduce 1MiB algo=ring channels=3 chunks=2\n",
		"ranks 16\nreducescatter 1MiB algo=ring channels=10\n",
		"ranks 16\nallgather 1MiB algo=ring channels=5\n",
		/* the chains, from a root that is not GPU 0, over uneven servers */
		"ranks 24\nbroadcast 1MiB algo=ring channels=5 chunks=2 root=13\n",
		"ranks 24\nreduce 1MiB algo=ring channels=3 root=7 ranks=5-16\n",
		/* a communicator that splits servers unevenly: 3 + 8 + 1 */
		"ranks 24\nallreduce 1MiB algo=ring channels=4 ranks=5-16\n",
		/* NCCL's tree: a chain in each server, the servers' double binary tree */
		"ranks 24\nallreduce 1MiB algo=tree\n",
		"ranks 24\nallreduce 1MiB algo=tree channels=3 chunks=2 ranks=5-16\n",
		"ranks 16\nallreduce 1MiB algo=tree channels=1 chunks=1\n",
		/* SHARP: each server's slices to its GPUs, through the tree, back */
		"ranks 24\nallreduce 3MiB algo=collnet\n",
		"ranks 16\nallreduce 8MiB algo=collnet chunks=3\n",
		/* servers of unequal size: the flat form */
		"ranks 24\nallreduce 1MiB algo=collnet ranks=5-16\n",
	};

	gen_servers(&n, 3, "dgx-h100");
	servers_params(&prm, "dgx-h100");
	for (size_t i = 0; i < sizeof(traces) / sizeof(traces[0]); i++) {
		replay_servers(&n, &prm, traces[i], &r);
		CU_ASSERT(r.end > 0);
		/* the flat SHARP form sends every GPU's buffer through its NIC */
		CU_ASSERT(r.r.nvlink_xfers > 0 || i == sizeof(traces) / sizeof(traces[0]) - 1);
	}
	net_free(&n);
}

/*
 * NCCL's protocols in the replay: LL carries 8 bytes of data in a 16-byte
 * line and takes 0.6 us a step over NVLink, LL128 120 in 128 and 1.9 us,
 * so the one-server ring's closed form holds with their wire bytes and
 * latencies; their steps are smaller (LL 32 KiB of data, LL128 576,000
 * bytes, Simple's ring 2 MiB) and small collectives run on fewer
 * channels; between servers LL's buffers are host memory; a kernel's
 * launch (NCCL's base latency) comes first and counts in the op's time;
 * with the tuning model's figures known, LL's data moves at its rate on
 * one channel.
 */
static void test_protocols(void)
{
	struct fab_params prm;
	struct srv_run a, b;
	struct net n;
	const uint64_t S = 8 << 20, seg = S / 8;
	const double gbps = 18 * 20.6;
	const sim_time_t simple = (sim_time_t)ceil(seg * 1000.0 / gbps) + 3400 * SIM_NS;
	const sim_time_t ll = (sim_time_t)ceil(seg / 8 * 16 * 1000.0 / gbps) + 600 * SIM_NS;
	const sim_time_t ll128 = (sim_time_t)ceil((seg + 119) / 120 * 128 * 1000.0 / gbps) +
				 1900 * SIM_NS;

	gen_servers(&n, 2, "dgx-h100");
	servers_params(&prm, "dgx-h100");
	replay_servers(&n, &prm, "ranks 8\nallreduce 8MiB algo=ring proto=ll channels=1 chunks=1\n",
		       &a);
	CU_ASSERT_EQUAL(a.end, 2 * 7 * ll);
	CU_ASSERT_EQUAL(a.r.nvlink_bytes, 2 * 7 * 8 * (seg * 2));
	replay_servers(&n, &prm,
		       "ranks 8\nallreduce 8MiB algo=ring proto=ll128 channels=1 chunks=1\n", &a);
	CU_ASSERT_EQUAL(a.end, 2 * 7 * ll128);
	replay_servers(&n, &prm,
		       "ranks 8\nallreduce 8MiB algo=ring proto=simple channels=1 chunks=1\n", &a);
	CU_ASSERT_EQUAL(a.end, 2 * 7 * simple);
	/* channels: 64 KiB with Simple wants 64 bytes for each of 512
	 * threads a channel: 2 channels; 1 MiB with LL over 8 ranks wants 8
	 * x 8 a thread: 32, so all 16 */
	replay_servers(&n, &prm, "ranks 8\nallreduce 64KiB algo=ring proto=simple\n", &a);
	CU_ASSERT_EQUAL(a.r.nvlink_xfers, 2 * 7 * 8 * 2);
	replay_servers(&n, &prm, "ranks 8\nallreduce 1MiB algo=ring proto=ll\n", &a);
	CU_ASSERT_EQUAL(a.r.nvlink_xfers, 2 * 7 * 8 * 16);
	/* pieces: 64 MiB / (8 ranks x 16 channels) = 512 KiB a segment: 16
	 * LL steps of 32 KiB, 1 LL128 step, 1 Simple chunk */
	replay_servers(&n, &prm, "ranks 8\nallreduce 64MiB algo=ring proto=ll\n", &a);
	CU_ASSERT_EQUAL(a.r.nvlink_xfers, 2 * 7 * 8 * 16 * 16);
	replay_servers(&n, &prm, "ranks 8\nallreduce 64MiB algo=ring proto=ll128\n", &a);
	CU_ASSERT_EQUAL(a.r.nvlink_xfers, 2 * 7 * 8 * 16);
	/* between servers: LL through host memory at both ends (no copy
	 * launched: the GPU's own loads and stores), the others GPU to GPU */
	replay_servers(&n, &prm,
		       "ranks 16\nallreduce 1MiB algo=ring proto=ll channels=1 chunks=1\n", &a);
	replay_servers(&n, &prm,
		       "ranks 16\nallreduce 1MiB algo=ring proto=ll128 channels=1 chunks=1\n", &b);
	CU_ASSERT_EQUAL(a.copies, 0);
	CU_ASSERT(a.hostmem > b.hostmem + 2 * 2 * (1 << 20) / 16 * 2 * 2);
	CU_ASSERT(a.fabric_bytes > b.fabric_bytes);	/* 16 bytes a line against 128/120 */
	/* the kernel's launch: 8.4 us before a Simple ring, 6.6 before LL's */
	with_tune = true;
	replay_servers(&n, &prm,
		       "ranks 8\nallreduce 8MiB algo=ring proto=simple channels=1 chunks=1\n", &a);
	CU_ASSERT_EQUAL(a.end, 8400 * SIM_NS + 2 * 7 * simple);
	CU_ASSERT_EQUAL(a.op0, a.end);
	/* and with NCCL's tuning model known, LL's data goes at its rate on
	 * one channel, llMaxBw over the search channels (141 GB/s over 8 on
	 * one DGX H100: 17.6), not the port's: a 1 MiB step 59.5 us */
	replay_servers(&n, &prm, "ranks 8\nallreduce 8MiB algo=ring proto=ll channels=1 chunks=1\n",
		       &a);
	const double ll_rate = 6600e3 + 2 * 7 * (600e3 + seg * 1000.0 / (141.0 / 8));

	CU_ASSERT(fabs((double)a.end / ll_rate - 1) < 1e-5);
	CU_ASSERT(ll_rate > 6600e3 + 2 * 7 * (double)ll);
	with_tune = false;
	net_free(&n);
}

/*
 * NVLS on one server: every chunk's data goes GPU -> NVSwitch (the switch
 * adds), the sum to its head, the head's store, and the switch's copy to
 * every GPU: 2G + 2 transfers a chunk, and each GPU port moves (G+1)/G S
 * each way at 0.85 of 370.8 GB/s - faster than the ring's 2(G-1)/G S.
 * The reduction check (in replay_servers) proves the steps right.
 */
/* inspect: what a read of NVLS's second piece waits for (two pieces, one
 * channel) - the sum of the first piece of its head (phase 2) across
 * servers, its store (phase 5) inside one; counts the reads checked */
static size_t nvls_seen;

static void nvls_piece_deps(const struct trace_program *p)
{
	const uint32_t nx = p->trace->nranks > 8 ? 2 : 1;

	for (size_t s = 0; s < p->nsteps; s++) {
		const struct trace_step *st = &p->steps[s];

		if (st->kind != TS_XFER || st->phase != 1 || st->chunk % 2 != 1)
			continue;
		nvls_seen++;
		CU_ASSERT_EQUAL(st->ndeps, 1);
		if (st->ndeps != 1)
			continue;
		const struct trace_step *dp = &p->steps[p->deps[st->dep_off]];

		CU_ASSERT_EQUAL(dp->phase, nx == 2 ? 2 : 5);
		CU_ASSERT_EQUAL(dp->chunk, st->chunk - 1);
	}
}

/*
 * trace_walk (the passes over every step: the lowering's exits, the
 * replay's checks, the routes') gives what trace_program_step gives, step
 * for step, from the start and from a step inside a fan, across lazy and
 * stored ops; walk_fans counts the fans' steps it made without a gen.
 */
static size_t walk_fans, walk_steps;

static void walk_same(const struct trace_program *p, uint32_t from)
{
	struct trace_walk w;

	trace_walk_init(&w, p, from);
	for (uint32_t s = from; s < p->nsteps; s++) {
		struct trace_step tmp;
		const uint32_t *da, *db;
		uint32_t buf[TRACE_STEP_MAXDEPS];
		const struct trace_step *x = trace_walk_step(&w, s, &da);
		const struct trace_step *y = trace_program_step(p, s, &tmp, &db, buf);

		walk_steps++;
		walk_fans += s > w.fan_s && s < w.fan_end;
		if (x->kind != y->kind || x->rank != y->rank || x->peer != y->peer ||
		    x->op != y->op || x->bytes != y->bytes || x->chunk != y->chunk ||
		    x->phase != y->phase || x->ndeps != y->ndeps || x->data != y->data ||
		    (x->ndeps && memcmp(da, db, x->ndeps * sizeof(*da)))) {
			fprintf(stderr, "\n  step %u (walk from %u): %d -> %d, %u deps; made alone %d -> %d, %u deps",
				s, from, x->rank, x->peer, x->ndeps, y->rank, y->peer, y->ndeps);
			CU_FAIL("trace_walk differs from trace_program_step");
			return;
		}
	}
}

static void walk_check(const struct trace_program *p)
{
	uint32_t mid = (uint32_t)(p->nsteps / 3);

	CU_ASSERT(p->nlz >= 2);
	CU_ASSERT(p->nstored > 0);
	walk_same(p, 0);
	walk_same(p, mid);
}

static void test_nvls(void)
{
	struct fab_params prm;
	struct srv_run a, r;
	struct net n;
	const double S = 64 << 20, G1 = 1 << 30, port = G1 * 9 / 8 * 1000 / (370.8 * 0.85);

	gen_servers(&n, 2, "dgx-h100");
	servers_params(&prm, "dgx-h100");
	replay_servers(&n, &prm, "ranks 8\nallreduce 64MiB algo=nvls channels=1 chunks=1\n", &a);
	CU_ASSERT_EQUAL(a.r.nvlink_xfers, 8 * 18);
	CU_ASSERT_EQUAL(a.r.nvlink_bytes, (uint64_t)(18 * S));
	CU_ASSERT_EQUAL(a.fabric_bytes, 0);
	/* 1 GiB in NCCL's shape (16 channels, 128 KiB pieces): within 3% of
	 * the ports' bound, (G+1)/G S each way at 0.85 x 370.8 GB/s */
	replay_servers(&n, &prm, "ranks 8\nallreduce 1GiB algo=nvls\n", &a);
	CU_ASSERT(a.end >= (sim_time_t)port);
	CU_ASSERT(a.end <= (sim_time_t)(port * 1.03));
	/* the kernel's launch: NCCL's 25 us for NVLS less the round trip's
	 * two NVLink latencies (2 x 3.4 us), before everything else */
	replay_servers(&n, &prm, "ranks 8\nallreduce 1MiB algo=nvls channels=1 chunks=1\n", &r);
	with_tune = true;
	replay_servers(&n, &prm, "ranks 8\nallreduce 1MiB algo=nvls channels=1 chunks=1\n", &a);
	with_tune = false;
	CU_ASSERT_EQUAL(a.end - r.end, (25000 - 2 * 3400) * SIM_NS);
	CU_ASSERT_EQUAL(a.op0, a.end);
	/* NCCL's shape: 16 channels, 32 KiB pieces below 64 MiB (2 here) */
	replay_servers(&n, &prm, "ranks 8\nallreduce 8MiB algo=nvls\n", &a);
	CU_ASSERT_EQUAL(a.r.nvlink_xfers, 16 * 8 * 2 * 18);
	replay_servers(&n, &prm, "ranks 8\nallreduce 64MiB algo=nvls\n", &a);
	replay_servers(&n, &prm, "ranks 8\nallreduce 64MiB algo=ring\n", &r);
	CU_ASSERT(a.end < r.end * 0.85);
	/* across two servers (NVLSTree): per piece each server's 2G + 2
	 * NVLink steps, and the two heads of its index one up, one down -
	 * rail to rail, nothing on a spine */
	replay_servers(&n, &prm, "ranks 16\nallreduce 64MiB algo=nvls channels=2 chunks=1\n", &a);
	CU_ASSERT_EQUAL(a.r.nvlink_xfers, 2 * 8 * 2 * 18);
	CU_ASSERT_EQUAL(a.steps, 2 * 8 * (2 * 18 + 2));
	CU_ASSERT_EQUAL(a.spine_bytes, 0);
	CU_ASSERT(a.fabric_bytes > 2 * (uint64_t)S);
	/* NVLSTree's steps made as the replay reaches them: none stored, the
	 * same run to the picosecond, a fraction of the steps held at once
	 * (128 pieces a head, 8 in flight): made one piece of every channel
	 * and head ahead, the stores kept until the reads 8 pieces on are
	 * made (coll_algo.near_reach, .far), and each multicast's 8 steps
	 * one record, each ld_reduce's 8 reads another (coll_gstep.fan):
	 * 667 of 77.8k; the multicasts alone, 1,035; one record a step,
	 * 2,069; a whole window ahead, 6,191 */
	replay_servers(&n, &prm, "ranks 16\nallreduce 256MiB algo=nvls channels=2\n", &a);
	with_lazy = true;
	replay_servers(&n, &prm, "ranks 16\nallreduce 256MiB algo=nvls channels=2\n", &r);
	with_lazy = false;
	CU_ASSERT_EQUAL(a.end, r.end);
	CU_ASSERT_EQUAL(a.events, r.events);
	CU_ASSERT_EQUAL(a.r.nvlink_xfers, r.r.nvlink_xfers);
	CU_ASSERT_EQUAL(a.fabric_bytes, r.fabric_bytes);
	CU_ASSERT(r.live_peak < a.steps / 96);
	CU_ASSERT_EQUAL(a.stored, a.steps);
	CU_ASSERT_EQUAL(r.stored, 0);
	/* the set-up check counts two reaches of it (coll_algo.lazy_reaches):
	 * no more than it holds, and not all its steps */
	CU_ASSERT(r.held_est >= r.live_peak);
	CU_ASSERT(r.held_est < r.steps / 2);
	CU_ASSERT_EQUAL(a.held_est, a.steps);
	/* should the replay need more than sim.max_memory leaves it, it says
	 * so and stops: room for a tenth of what it held */
	with_lazy = true;
	replay_budget = (uint64_t)(r.live_peak / 10) * TRACE_STEP_BYTES;
	replay_servers(&n, &prm, "ranks 16\nallreduce 256MiB algo=nvls channels=2\n", &a);
	replay_budget = 0;
	with_lazy = false;
	CU_ASSERT_PTR_NOT_NULL(strstr(a.fail, "making allreduce"));
	CU_ASSERT_PTR_NOT_NULL(strstr(a.fail, "the replay would hold more than"));
	CU_ASSERT_PTR_NOT_NULL(strstr(a.fail, "sim.max_memory"));
	/* two in a row (nccl-tests' iterations): the second's members wait
	 * for every exit of the first on them - a multicast of every piece,
	 * spread over its steps - which their joins count as the first's
	 * transfers end (trace_step.counted): listed, they made the replay
	 * hold all of the first at once (77,825 of its 77,832 steps);
	 * counted, 801 */
	replay_servers(&n, &prm, "ranks 16\nallreduce 256MiB algo=nvls channels=2\n"
		       "allreduce 256MiB algo=nvls channels=2\n", &a);
	with_lazy = true;
	replay_servers(&n, &prm, "ranks 16\nallreduce 256MiB algo=nvls channels=2\n"
		       "allreduce 256MiB algo=nvls channels=2\n", &r);
	with_lazy = false;
	CU_ASSERT_EQUAL(a.end, r.end);
	CU_ASSERT_EQUAL(a.events, r.events);
	CU_ASSERT_EQUAL(a.r.ncrit, r.r.ncrit);
	CU_ASSERT_EQUAL(a.r.crit_comm_ps, r.r.crit_comm_ps);
	CU_ASSERT_EQUAL(r.stored, 16);	/* the joins */
	CU_ASSERT(r.live_peak < a.steps / 2 / 48);
	fprintf(stderr, "\n  two NVLSTree allreduces: %zu steps, held at once %zu stored, %zu lazy",
		a.steps, a.live_peak, r.live_peak);
	/* walked: NVLSTree's fans, a stored op (the tree) between lazy ones */
	with_lazy = true;
	inspect = walk_check;
	replay_servers(&n, &prm, "ranks 16\nallreduce 8MiB algo=nvls channels=2\n"
		       "allreduce 64KiB algo=tree\nallreduce 8MiB algo=nvls channels=2\n", &r);
	inspect = NULL;
	with_lazy = false;
	CU_ASSERT(walk_fans > walk_steps / 3);
	fprintf(stderr, "\n  walked %zu steps, %zu of them a fan's made from its first",
		walk_steps, walk_fans);
	/* a head pulls its pieces' sums one after another: across servers the
	 * reads of piece 1 wait for the sum of piece 0 (in a server, for its
	 * store) */
	inspect = nvls_piece_deps;
	replay_servers(&n, &prm, "ranks 16\nallreduce 64MiB algo=nvls channels=1 chunks=2\n", &a);
	replay_servers(&n, &prm, "ranks 8\nallreduce 64MiB algo=nvls channels=1 chunks=2\n", &a);
	inspect = NULL;
	CU_ASSERT_EQUAL(nvls_seen, 2 * 8 * 8 + 8 * 8);
	net_free(&n);
	/* three servers: the shifted double binary tree, checked */
	gen_servers(&n, 3, "dgx-h100");
	replay_servers(&n, &prm, "ranks 24\nallreduce 8MiB algo=nvls\n", &a);
	CU_ASSERT(a.end > 0);
	CU_ASSERT_EQUAL(a.spine_bytes, 0);
	net_free(&n);
}

/* the labels of the ops lowered (inspect) */
static char seen_labels[4][64];

static void op_labels(const struct trace_program *p)
{
	for (size_t i = 0; i < p->trace->nops && i < 4; i++)
		snprintf(seen_labels[i], sizeof(seen_labels[i]), "%s %s",
			 trace_algo_names[p->trace->ops[i].algo],
			 coll_op_label(p->trace, &p->trace->ops[i]));
}

/*
 * NVLS + SHARP: NVLS in each server, each head's slice through the SHARP
 * tree of its rail. Per block (channel, head, piece) each server's 2G + 2
 * NVLink steps and, on two servers, both heads up to their rail's leaf
 * switch and the total back down (4 steps); the reduction check passes
 * (replay_servers runs it); with two units of servers the slices reach a
 * spine.
 */
static void test_nvls_sharp(void)
{
	struct fab_params prm;
	struct srv_run a, r, one;
	struct net n;

	gen_servers(&n, 2, "dgx-h100");
	servers_params(&prm, "dgx-h100");
	with_sharp = true;
	replay_servers(&n, &prm, "ranks 16\nallreduce 64MiB algo=nvls channels=2 chunks=1\n", &a);
	CU_ASSERT_STRING_EQUAL(a.fail, "");
	CU_ASSERT_EQUAL(a.steps, 2 * 8 * (2 * 18 + 4));
	CU_ASSERT_EQUAL(a.r.nvlink_xfers, 2 * 8 * 2 * 18);
	CU_ASSERT_EQUAL(a.spine_bytes, 0);
	/* without CollNet the same op is NVLSTree: one up and one down */
	with_sharp = false;
	replay_servers(&n, &prm, "ranks 16\nallreduce 64MiB algo=nvls channels=2 chunks=1\n", &r);
	CU_ASSERT_EQUAL(r.steps, 2 * 8 * (2 * 18 + 2));
	/* nvlstree is NVLSTree with SHARP too */
	with_sharp = true;
	replay_servers(&n, &prm, "ranks 16\nallreduce 64MiB algo=nvlstree channels=2 chunks=1\n",
		       &r);
	CU_ASSERT_EQUAL(r.steps, 2 * 8 * (2 * 18 + 2));
	/* NCCL's NVLS chunk across servers: 128 KiB, halved while the buffer
	 * is under 64 x channels x heads chunks (one channel, 8 heads: 64 MiB
	 * stays at 128 KiB, 64 pieces a head; 4 MiB takes 64 KiB, 8 pieces) */
	replay_servers(&n, &prm, "ranks 16\nallreduce 64MiB algo=nvls channels=1\n", &r);
	CU_ASSERT_EQUAL(r.steps, 64 * 8 * (2 * 18 + 4));
	replay_servers(&n, &prm, "ranks 16\nallreduce 4MiB algo=nvls channels=1\n", &r);
	CU_ASSERT_EQUAL(r.steps, 8 * 8 * (2 * 18 + 4));
	/* made as the replay reaches them: the same run to the picosecond */
	replay_servers(&n, &prm, "ranks 16\nallreduce 256MiB algo=nvls channels=2\n", &a);
	with_lazy = true;
	replay_servers(&n, &prm, "ranks 16\nallreduce 256MiB algo=nvls channels=2\n", &r);
	with_lazy = false;
	CU_ASSERT_EQUAL(a.end, r.end);
	CU_ASSERT_EQUAL(a.events, r.events);
	CU_ASSERT_EQUAL(a.fabric_bytes, r.fabric_bytes);
	CU_ASSERT_EQUAL(r.stored, 0);
	CU_ASSERT(r.live_peak < a.steps / 4);
	/* NVLink-bound like one server: its algorithm bandwidth within 5% of
	 * NVLS's on one server alone (the NICs carry S/8 each way, 34 of
	 * their 48 GB/s) */
	with_sharp = false;
	replay_servers(&n, &prm, "ranks 8\nallreduce 256MiB algo=nvls\n", &one);
	CU_ASSERT(a.end < one.end * 1.05);
	CU_ASSERT(a.end > one.end * 0.95);	/* 974.4 us (2 channels) against 985.0 */
	/* NCCL's choice with CollNet: NVLS + SHARP at 1 MiB on two servers,
	 * NVLSTree at 1 GiB (coll_tune.c), named as NCCL's logs do */
	with_sharp = with_tune = true;
	inspect = op_labels;
	replay_servers(&n, &prm, "ranks 16\nallreduce 1MiB\nallreduce 64MiB\n", &a);
	inspect = NULL;
	with_sharp = with_tune = false;
	CU_ASSERT_STRING_EQUAL(seen_labels[0], "nvls nvls + SHARP (NVLS with CollNet)");
	CU_ASSERT_STRING_EQUAL(seen_labels[1], "nvlstree nvls tree (NVLSTree)");
	net_free(&n);
	/* 40 servers, two units: the slices meet in a spine's aggregation
	 * node; head j's tree has its rail's two leaves and the spine, so
	 * U = 40 + 2 edges each way */
	gen_servers(&n, 40, "dgx-h100");
	with_sharp = true;
	replay_servers(&n, &prm, "ranks 320\nallreduce 8MiB algo=nvls channels=1 chunks=1\n", &a);
	with_sharp = false;
	CU_ASSERT_STRING_EQUAL(a.fail, "");
	CU_ASSERT_EQUAL(a.steps, 8 * (2 * 40 * 9 + 2 * 42));
	CU_ASSERT(a.spine_bytes > 0);
	net_free(&n);
}

/* Protocols a collective cannot have, and names that do not exist. */
static void test_protocol_errors(void)
{
	struct trace t;
	struct trace_program p;

	trace_init(&t);
	CU_ASSERT_NOT_EQUAL(trace_load_string("ranks 4\nallreduce 1MiB proto=ll256\n", "e", &t, &d),
			    0);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "unknown protocol 'll256' (expected auto, simple, ll or ll128)"));
	trace_free(&t);
	trace_init(&t);
	CU_ASSERT_EQUAL_FATAL(trace_load_string("ranks 4\nallreduce 1MiB algo=collnet proto=ll\n",
						"e", &t, &d), 0);
	trace_program_init(&p, &t);
	CU_ASSERT_NOT_EQUAL(trace_lower(&t, &p, &d), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, "Simple protocol only"));
	trace_program_free(&p);
	trace_free(&t);
}

static const struct test_case tests[] = {
	{ "presets and server.* keys", test_presets },
	{ "the map from rail-generated names", test_map },
	{ "the map from mlx5 names, and its errors", test_map_names },
	{ "NVLink pipes: closed forms", test_pipes },
	{ "one server: a ring over NVLink to the picosecond", test_replay_one_server },
	{ "two servers: PXN keeps the ring on its rails", test_replay_pxn },
	{ "broadcast and reduce: NCCL's channels and chains on servers", test_replay_chains },
	{ "trees on servers: chains and the heads' tree", test_tree_servers },
	{ "NCCL's tuning model, by hand", test_tune },
	{ "SHARP on servers: slices, rails' trees, NVLink", test_collnet_servers },
	{ "GPUDirect on, off, and across the CPU", test_gpudirect },
	{ "algo=auto on servers: NCCL's choice per op", test_tune_ops },
	{ "rotated rings and server trees pass the reduction check", test_rotation_check },
	{ "NCCL's protocols: wire bytes, latency, steps, host memory, launch", test_protocols },
	{ "protocol errors", test_protocol_errors },
	{ "NVLS: NVLink SHARP on one server", test_nvls },
	{ "NVLS + SHARP: NVLS in the servers, SHARP between them", test_nvls_sharp },
	{ NULL, NULL },
};

int main(void)
{
	return test_run("server", tests);
}
