/* SPDX-License-Identifier: MIT */
/*
 * util_fabric.c - small fabrics built by hand for the model tests: a chain
 * of switches between two hosts, a star of hosts around one switch, and
 * helpers to set parameters, add messages and run. Linked into every test.
 */
#include "tests/unit/util_fabric.h"

#include <CUnit/CUnit.h>
#include <stdio.h>

#include "models/sm/sm.h"

int tf_add_node(struct net *n, enum net_node_type t, int ports, const char *name)
{
	struct sim_diag d;
	int i = net_add_node(n, t, ports, name, name, &d);

	CU_ASSERT_FATAL(i >= 0);
	return i;
}

void tf_link(struct net *n, int a, int pa, int b, int pb)
{
	struct sim_diag d;

	CU_ASSERT_FATAL(net_connect(n, a, pa, b, pb, 0, &d) == 0);
}

void tf_route(struct net *n)
{
	struct sim_diag d;
	char buf[1024];

	if (sm_route_minhop(n, &d)) {
		sim_diag_format(&d, buf, sizeof(buf));
		fprintf(stderr, "route: %s\n", buf);
	}
	CU_ASSERT_FATAL(net_validate(n, &d) == 0);
}

/* h0 - sw0 - sw1 - ... - sw(k-1) - h1 */
void tf_chain(struct net *n, int nsw, int *h0, int *h1)
{
	int sw[8] = { 0 };
	char name[16];

	net_init(n);
	*h0 = tf_add_node(n, NET_CA, 1, "h0");
	*h1 = tf_add_node(n, NET_CA, 1, "h1");
	for (int i = 0; i < nsw; i++) {
		snprintf(name, sizeof(name), "sw%d", i);
		sw[i] = tf_add_node(n, NET_SWITCH, 8, name);
	}
	tf_link(n, *h0, 1, sw[0], 1);
	for (int i = 0; i + 1 < nsw; i++)
		tf_link(n, sw[i], 2, sw[i + 1], 1);
	tf_link(n, sw[nsw - 1], 2, *h1, 1);
	tf_route(n);
}

/* One switch with `nh` hosts h0..h(nh-1) on ports 1..nh. */
void tf_star(struct net *n, int nh, int *hosts)
{
	char name[16];
	int sw;

	net_init(n);
	sw = tf_add_node(n, NET_SWITCH, nh, "sw0");
	for (int i = 0; i < nh; i++) {
		snprintf(name, sizeof(name), "h%d", i);
		hosts[i] = tf_add_node(n, NET_CA, 1, name);
		tf_link(n, sw, i + 1, hosts[i], 1);
	}
	tf_route(n);
}

void tf_params(struct fab_params *p, const char *preset)
{
	struct sim_diag d;

	fab_params_default(p);
	CU_ASSERT_FATAL(fab_params_preset(p, preset, &d) == 0);
	/* The fabric's closed forms are the network's: an ideal host (no PCIe,
	 * no DMA). test_transport turns the host model on and checks its terms. */
	p->host_model = false;
}

void tf_tables(struct fab_params *p)
{
	tf_set(p, "ib.ar=off");
	tf_set(p, "switch.queues=fifo");
}

void tf_add_msg(struct fab_msgs *m, int src, int dst, uint64_t bytes, uint32_t stream,
		    uint8_t sl)
{
	struct fab_msg msg = { .src = (uint32_t)src, .dst = (uint32_t)dst, .bytes = bytes,
			       .after = -1, .stream = stream, .sl = sl };

	CU_ASSERT_FATAL(fab_msgs_add(m, &msg) == 0);
}

struct fab *tf_run(const struct net *n, const struct fab_params *p, struct fab_msgs *m)
{
	struct sim_diag d;
	char buf[1024];
	struct fab *f = fab_create(n, p, m, 1, &d);

	if (!f) {
		sim_diag_format(&d, buf, sizeof(buf));
		fprintf(stderr, "fab_create: %s\n", buf);
	}
	CU_ASSERT_FATAL(f != NULL);
	if (fab_run(f, &d)) {
		sim_diag_format(&d, buf, sizeof(buf));
		fprintf(stderr, "fab_run: %s\n", buf);
		CU_FAIL("fab_run failed");
	}
	return f;
}

void tf_set(struct fab_params *p, const char *kv)
{
	struct sim_diag d;
	char buf[1024];

	if (fab_params_set(p, kv, &d)) {
		sim_diag_format(&d, buf, sizeof(buf));
		fprintf(stderr, "set %s: %s\n", kv, buf);
		CU_FAIL_FATAL("fab_params_set");
	}
}

/*
 * The hot spot with a victim (IB CC and DCQCN tests): senders S1 (on sw0)
 * and S2..S4 (on sw1) to H on sw1; the victim V on sw0 sends to W on sw1
 * and shares only the link sw0 -> sw1 with S1's flow.
 */
void tf_victim(struct net *n, int s[4], int *v, int *h, int *w)
{
	int sw0, sw1;

	net_init(n);
	sw0 = tf_add_node(n, NET_SWITCH, 8, "sw0");
	sw1 = tf_add_node(n, NET_SWITCH, 8, "sw1");
	*h = tf_add_node(n, NET_CA, 1, "H");
	*w = tf_add_node(n, NET_CA, 1, "W");
	*v = tf_add_node(n, NET_CA, 1, "V");
	for (int i = 0; i < 4; i++) {
		char name[8];

		snprintf(name, sizeof(name), "S%d", i + 1);
		s[i] = tf_add_node(n, NET_CA, 1, name);
	}
	tf_link(n, s[0], 1, sw0, 1);
	tf_link(n, *v, 1, sw0, 2);
	tf_link(n, sw0, 8, sw1, 8);
	tf_link(n, *h, 1, sw1, 1);
	tf_link(n, *w, 1, sw1, 2);
	for (int i = 1; i < 4; i++)
		tf_link(n, s[i], 1, sw1, 2 + i);
	tf_route(n);
}
