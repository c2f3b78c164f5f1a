/* SPDX-License-Identifier: MIT */
/*
 * test_spec.c - the --traffic SPEC language on a hand-built fabric: one
 * switch "Leaf0" with hosts h0..h7 (ids H-0..H-7) and a channel adapter
 * "spare" that has no cable, placed between h3 and h4 so that "#k" must
 * skip it. Checks each pattern's messages field by field, that several
 * specs share one list, that permutation is a deterministic derangement,
 * that shift wraps, that qp=ud makes datagram SENDs where it may and is
 * refused where it may not, and that malformed specs are refused with a
 * message quoting the spec, the right column, and the list left untouched.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/fabric/fab.h"
#include "models/net/net.h"
#include "tests/unit/test_main.h"
#include "traces/trace_spec.h"

#define NH 8

static struct net net;
static int hnode[NH];		/* host k -> node index */
static int leaf, spare;
static struct sim_diag d;

static int build_net(void)
{
	char id[16], desc[16];
	int k = 0;

	net_init(&net);
	leaf = net_add_node(&net, NET_SWITCH, 12, "S-1", "Leaf0", &d);
	if (leaf < 0)
		return -1;
	for (int i = 0; i < NH; i++) {
		if (i == 4) {
			spare = net_add_node(&net, NET_CA, 1, "H-spare", "spare", &d);
			if (spare < 0)
				return -1;
		}
		snprintf(id, sizeof(id), "H-%d", i);
		snprintf(desc, sizeof(desc), "h%d", i);
		hnode[i] = net_add_node(&net, NET_CA, 1, id, desc, &d);
		if (hnode[i] < 0 || net_connect(&net, leaf, i + 1, hnode[i], 1, 0, &d))
			return -1;
	}
	if (net_validate(&net, &d))
		return -1;
	for (k = 0; k < NH; k++)
		if (net_host(&net, k) != hnode[k])
			return -1;
	return net_nhosts(&net) == NH ? 0 : -1;
}

static int suite_net_ok;

static void test_net(void)
{
	suite_net_ok = build_net() == 0;
	if (!suite_net_ok)
		fprintf(stderr, "\n  building the test net: %s\n", d.msg);
	CU_ASSERT_TRUE_FATAL(suite_net_ok);
	CU_ASSERT_EQUAL(spare, hnode[3] + 1);	/* spare sits between h3 and h4 */
	CU_ASSERT_EQUAL(hnode[4], spare + 1);
}

static int parse(const char *spec, uint64_t seed, struct fab_msgs *m)
{
	int rc;

	sim_diag_clear(&d);
	rc = trace_spec_parse(spec, &net, seed, m, &d);
	if (rc)
		fprintf(stderr, "\n  '%s': %s\n", spec, d.msg);
	return rc;
}

static int host_index(int node)
{
	for (int k = 0; k < NH; k++)
		if (hnode[k] == node)
			return k;
	return -1;
}

static void test_p2p(void)
{
	struct fab_msgs m = { 0 };

	CU_ASSERT_FATAL(suite_net_ok);
	CU_ASSERT_EQUAL_FATAL(parse("p2p:src=h1,dst=h2,size=1MiB,count=3,gap=1us,start=5ns,sl=2",
				    1, &m), 0);
	CU_ASSERT_EQUAL_FATAL(m.n, 3);
	CU_ASSERT_EQUAL(m.nstreams, 1);
	for (size_t i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL(m.v[i].src, (uint32_t)hnode[1]);
		CU_ASSERT_EQUAL(m.v[i].dst, (uint32_t)hnode[2]);
		CU_ASSERT_EQUAL(m.v[i].bytes, 1048576);
		CU_ASSERT_EQUAL(m.v[i].post, 5000 + i * 1000000);
		CU_ASSERT_EQUAL(m.v[i].after, -1);
		CU_ASSERT_EQUAL(m.v[i].stream, 0);
		CU_ASSERT_EQUAL(m.v[i].sl, 2);
		CU_ASSERT_FALSE(m.v[i].done);
	}
	/* a second spec continues the stream ids; node id and #k both name hosts */
	CU_ASSERT_EQUAL_FATAL(parse("p2p:src=#4,dst=H-7,size=64", 1, &m), 0);
	CU_ASSERT_EQUAL_FATAL(m.n, 4);
	CU_ASSERT_EQUAL(m.v[3].src, (uint32_t)hnode[4]);	/* #4 skips "spare" */
	CU_ASSERT_EQUAL(m.v[3].dst, (uint32_t)hnode[7]);
	CU_ASSERT_EQUAL(m.v[3].bytes, 64);
	CU_ASSERT_EQUAL(m.v[3].post, 0);
	CU_ASSERT_EQUAL(m.v[3].stream, 1);
	CU_ASSERT_EQUAL(m.v[3].sl, 0);
	CU_ASSERT_EQUAL(m.nstreams, 2);
	fab_msgs_free(&m);
	CU_ASSERT_EQUAL(m.n, 0);
	CU_ASSERT_PTR_NULL(m.v);
}

static void test_pingpong(void)
{
	struct fab_msgs m = { 0 };

	CU_ASSERT_FATAL(suite_net_ok);
	/* one message first, so `after` must be an index into the whole list */
	CU_ASSERT_EQUAL_FATAL(parse("p2p:src=h5,dst=h6,size=1", 1, &m), 0);
	CU_ASSERT_EQUAL_FATAL(parse("pingpong:a=h0,b=h3,size=64B,count=3,start=1us", 1, &m), 0);
	CU_ASSERT_EQUAL_FATAL(m.n, 7);
	CU_ASSERT_EQUAL(m.nstreams, 3);
	for (size_t i = 1; i < 7; i++) {
		bool ab = i % 2 == 1;

		CU_ASSERT_EQUAL(m.v[i].src, (uint32_t)hnode[ab ? 0 : 3]);
		CU_ASSERT_EQUAL(m.v[i].dst, (uint32_t)hnode[ab ? 3 : 0]);
		CU_ASSERT_EQUAL(m.v[i].bytes, 64);
		CU_ASSERT_EQUAL(m.v[i].stream, ab ? 1u : 2u);
		CU_ASSERT_EQUAL(m.v[i].after, i == 1 ? -1 : (int32_t)i - 1);
		CU_ASSERT_EQUAL(m.v[i].after_delay, 0);
		if (m.v[i].after >= 0)	/* dependency is local to the sender */
			CU_ASSERT_EQUAL(m.v[m.v[i].after].dst, m.v[i].src);
	}
	CU_ASSERT_EQUAL(m.v[1].post, 1000000);
	fab_msgs_free(&m);

	/* default count is 1000 round trips */
	CU_ASSERT_EQUAL_FATAL(parse("pingpong:a=h0,b=h1,size=8", 1, &m), 0);
	CU_ASSERT_EQUAL(m.n, 2000);
	CU_ASSERT_EQUAL(m.v[1999].after, 1998);
	fab_msgs_free(&m);
}

static void test_incast(void)
{
	struct fab_msgs m = { 0 };
	static const int senders[] = { 0, 1, 3 };

	CU_ASSERT_FATAL(suite_net_ok);
	CU_ASSERT_EQUAL_FATAL(parse("incast:dst=h2,size=4KiB,n=3,count=2,sl=1", 1, &m), 0);
	CU_ASSERT_EQUAL_FATAL(m.n, 6);
	CU_ASSERT_EQUAL(m.nstreams, 3);
	for (size_t i = 0; i < 6; i++) {
		CU_ASSERT_EQUAL(m.v[i].src, (uint32_t)hnode[senders[i / 2]]);
		CU_ASSERT_EQUAL(m.v[i].dst, (uint32_t)hnode[2]);
		CU_ASSERT_EQUAL(m.v[i].stream, i / 2);
		CU_ASSERT_EQUAL(m.v[i].bytes, 4096);
		CU_ASSERT_EQUAL(m.v[i].sl, 1);
		CU_ASSERT_EQUAL(m.v[i].after, -1);
	}
	fab_msgs_free(&m);

	/* default: every other host */
	CU_ASSERT_EQUAL_FATAL(parse("incast:dst=h7,size=1", 1, &m), 0);
	CU_ASSERT_EQUAL_FATAL(m.n, NH - 1);
	for (size_t i = 0; i < m.n; i++) {
		CU_ASSERT_EQUAL(m.v[i].src, (uint32_t)hnode[i]);
		CU_ASSERT_EQUAL(m.v[i].stream, i);
	}
	fab_msgs_free(&m);
}

static void test_alltoall(void)
{
	struct fab_msgs m = { 0 };
	int seen[NH][NH] = { { 0 } };

	CU_ASSERT_FATAL(suite_net_ok);
	CU_ASSERT_EQUAL_FATAL(parse("alltoall:size=1KB,hosts=4", 1, &m), 0);
	CU_ASSERT_EQUAL_FATAL(m.n, 12);
	CU_ASSERT_EQUAL(m.nstreams, 12);
	for (size_t i = 0; i < m.n; i++) {
		int s = host_index((int)m.v[i].src), t = host_index((int)m.v[i].dst);

		CU_ASSERT_FATAL(s >= 0 && s < 4 && t >= 0 && t < 4);
		CU_ASSERT_NOT_EQUAL(s, t);
		seen[s][t]++;
		CU_ASSERT_EQUAL(m.v[i].stream, i);
		CU_ASSERT_EQUAL(m.v[i].bytes, 1000);
	}
	for (int s = 0; s < 4; s++)
		for (int t = 0; t < 4; t++)
			CU_ASSERT_EQUAL(seen[s][t], s != t);
	/* host i starts with i+1 */
	CU_ASSERT_EQUAL(m.v[0].dst, (uint32_t)hnode[1]);
	CU_ASSERT_EQUAL(m.v[3].src, (uint32_t)hnode[1]);
	CU_ASSERT_EQUAL(m.v[3].dst, (uint32_t)hnode[2]);
	CU_ASSERT_EQUAL(m.v[11].src, (uint32_t)hnode[3]);
	CU_ASSERT_EQUAL(m.v[11].dst, (uint32_t)hnode[2]);
	fab_msgs_free(&m);

	CU_ASSERT_EQUAL_FATAL(parse("alltoall:size=1,count=2", 1, &m), 0);
	CU_ASSERT_EQUAL(m.n, NH * (NH - 1) * 2);
	CU_ASSERT_EQUAL(m.nstreams, NH * (NH - 1));
	fab_msgs_free(&m);
}

/* Destinations (host indexes) of a permutation spec. */
static void perm_of(const char *spec, uint64_t seed, int *dst)
{
	struct fab_msgs m = { 0 };

	CU_ASSERT_EQUAL_FATAL(parse(spec, seed, &m), 0);
	CU_ASSERT_EQUAL_FATAL(m.n, NH);
	for (int i = 0; i < NH; i++) {
		CU_ASSERT_EQUAL(m.v[i].src, (uint32_t)hnode[i]);
		CU_ASSERT_EQUAL(m.v[i].stream, (uint32_t)i);
		dst[i] = host_index((int)m.v[i].dst);
	}
	fab_msgs_free(&m);
}

static void test_permutation(void)
{
	int a[NH], b[NH], c[NH], e[NH];
	int differ = 0;

	CU_ASSERT_FATAL(suite_net_ok);
	for (uint64_t seed = 0; seed < 200; seed++) {
		int used[NH] = { 0 };

		perm_of("permutation:size=1MiB", seed, a);
		for (int i = 0; i < NH; i++) {
			CU_ASSERT_NOT_EQUAL(a[i], i);		/* derangement */
			CU_ASSERT_FATAL(a[i] >= 0 && a[i] < NH);
			used[a[i]]++;
		}
		for (int i = 0; i < NH; i++)
			CU_ASSERT_EQUAL(used[i], 1);		/* a permutation */
	}
	perm_of("permutation:size=1MiB,seed=42", 7, a);
	perm_of("permutation:size=1MiB,seed=42", 99, b);	/* seed= beats the run seed */
	perm_of("permutation:size=1MiB", 42, c);		/* run seed when none given */
	perm_of("permutation:size=1MiB,seed=43", 7, e);
	for (int i = 0; i < NH; i++) {
		CU_ASSERT_EQUAL(a[i], b[i]);
		CU_ASSERT_EQUAL(a[i], c[i]);
		differ += a[i] != e[i];
	}
	CU_ASSERT(differ > 0);

	/* over many seeds every host reaches every other one (not a fixed shift) */
	int reach[NH][NH] = { { 0 } };

	for (uint64_t seed = 1000; seed < 1400; seed++) {
		perm_of("permutation:size=1", seed, a);
		for (int i = 0; i < NH; i++)
			reach[i][a[i]] = 1;
	}
	for (int i = 0; i < NH; i++)
		for (int j = 0; j < NH; j++)
			CU_ASSERT_EQUAL(reach[i][j], i != j);
}

static void test_shift(void)
{
	struct fab_msgs m = { 0 };

	CU_ASSERT_FATAL(suite_net_ok);
	CU_ASSERT_EQUAL_FATAL(parse("shift:size=2KiB,k=3,count=2", 1, &m), 0);
	CU_ASSERT_EQUAL_FATAL(m.n, 2 * NH);
	for (int i = 0; i < NH; i++) {
		CU_ASSERT_EQUAL(m.v[2 * i].src, (uint32_t)hnode[i]);
		CU_ASSERT_EQUAL(m.v[2 * i].dst, (uint32_t)hnode[(i + 3) % NH]);
		CU_ASSERT_EQUAL(m.v[2 * i + 1].dst, (uint32_t)hnode[(i + 3) % NH]);
		CU_ASSERT_EQUAL(m.v[2 * i].stream, (uint32_t)i);
	}
	CU_ASSERT_EQUAL(m.v[2 * 7].dst, (uint32_t)hnode[2]);	/* 7 + 3 wraps to 2 */
	fab_msgs_free(&m);

	CU_ASSERT_EQUAL_FATAL(parse("shift:size=1,k=11", 1, &m), 0);	/* 11 = 3 mod 8 */
	CU_ASSERT_EQUAL(m.v[7].dst, (uint32_t)hnode[2]);
	fab_msgs_free(&m);
	CU_ASSERT_EQUAL_FATAL(parse("shift:size=1", 1, &m), 0);		/* k defaults to 1 */
	CU_ASSERT_EQUAL(m.v[7].dst, (uint32_t)hnode[0]);
	CU_ASSERT_EQUAL(m.v[0].dst, (uint32_t)hnode[1]);
	fab_msgs_free(&m);
}

/* A spec that must be refused: message, column, and the list unchanged. */
static void bad(const char *spec, int col, const char *needle)
{
	struct fab_msgs m = { 0 };
	struct fab_msg one = { .src = 1, .dst = 2, .bytes = 1, .after = -1, .stream = 0 };
	char prefix[300];

	CU_ASSERT_EQUAL_FATAL(fab_msgs_add(&m, &one), 0);
	sim_diag_clear(&d);
	CU_ASSERT_EQUAL(trace_spec_parse(spec, &net, 1, &m, &d), -1);
	snprintf(prefix, sizeof(prefix), "--traffic '%s': ", spec);
	if (strncmp(d.msg, prefix, strlen(prefix)) || !strstr(d.msg, needle) ||
	    (col && d.col != col))
		fprintf(stderr, "\n  '%s': got col %d '%s', want col %d and '%s'\n", spec, d.col,
			d.msg, col, needle);
	CU_ASSERT_EQUAL(strncmp(d.msg, prefix, strlen(prefix)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.msg, needle));
	if (col)
		CU_ASSERT_EQUAL(d.col, col);
	CU_ASSERT_EQUAL(m.n, 1);
	CU_ASSERT_EQUAL(m.nstreams, 1);
	CU_ASSERT_EQUAL(d.file[0], 0);
	CU_ASSERT_EQUAL(d.line, 0);
	fab_msgs_free(&m);
}

static void test_malformed(void)
{
	CU_ASSERT_FATAL(suite_net_ok);
	bad("", 1, "empty spec");
	bad("p2q:src=h0,dst=h1,size=1", 1,
	    "unknown pattern 'p2q' (patterns: p2p, pingpong, incast, alltoall, permutation, shift)");
	bad("perm:size=1", 1, "unknown pattern 'perm' (patterns: p2p, pingpong, incast, "
	    "alltoall, permutation, shift); did you mean 'permutation'?");
	bad("p:size=1", 1, "unknown pattern 'p'");
	CU_ASSERT_PTR_NULL(strstr(d.msg, "did you mean"));	/* p2p, pingpong, permutation */
	bad("incast:dst=h99,size=1MiB", 12,
	    "unknown host 'h99' (hosts are h0, h1, h2, ..., h7, or #0..#7)");
	bad("p2p:src=h0,dst=h1", 0, "p2p needs size= (missing: size)");
	bad("p2p:size=1", 0, "p2p needs src= (missing: src, dst)");
	bad("p2p:src=h0,dst=h1,size=0", 24, "size: must be more than 0 bytes");
	bad("p2p:src=h0,dst=h1,size=1Kb", 24, "bits");
	bad("p2p:src=h0,dst=h1,size=4GiB", 24, "largest IB message");
	bad("p2p:src=h0,dst=h0,size=1", 16, "src and dst are the same host");
	bad("p2p:src=h0,dst=h1,size=1,colour=red", 26,
	    "unknown key 'colour' for p2p (valid: src, dst, size, count, start, gap, sl, op, mem, qp)");
	bad("p2p:src=h0,dst=h1,size=1,op=copy", 29, "op: expected write, read or send, got 'copy'");
	bad("pingpong:a=h0,b=h1,size=1,gap=1us", 27, "unknown key 'gap' for pingpong");
	bad("p2p:src=h0,dst=h1,size=1,size=2", 26, "size given twice");
	bad("p2p:src=h0,dst=h1,size=1,,count=2", 26, "empty item");
	bad("p2p:src=h0,dst=h1,size=1,", 26, "empty item");
	bad("p2p:src=h0,dst=h1,size=1,count", 26, "'count': expected key=value");
	bad("p2p:src=h0,dst=h1,size=", 24, "size: empty value");
	bad("p2p:src=h0,dst=Leaf0,size=1", 16, "'Leaf0' is a switch, not a host");
	bad("p2p:src=spare,dst=h1,size=1", 9, "'spare' is a channel adapter with no connected port");
	bad("p2p:src=#8,dst=h1,size=1", 9, "no host '#8' (hosts are #0..#7");
	bad("p2p:src=#x,dst=h1,size=1", 9, "no host '#x'");
	bad("p2p:src=h0,dst=h1,size=1,start=5", 32, "start: '5': expected a unit");
	bad("p2p:src=h0,dst=h1,size=1,sl=16", 29, "sl: '16' is too large (at most 15)");
	bad("p2p:src=h0,dst=h1,size=1,count=0", 32, "count: must be at least 1");
	bad("p2p:src=h0,dst=h1,size=1,count=3,gap=10000000s", 38,
	    "does not fit in 64-bit picoseconds");
	bad("shift:size=1,k=8", 16, "k=8 is a multiple of the 8 hosts");
	bad("shift:size=1,k=0", 16, "k=0 is a multiple");
	bad("incast:dst=h0,size=1,n=8", 24, "n: 8 senders, but there are 7 hosts besides dst");
	bad("incast:dst=h0,size=1,n=0", 24, "n: 0 senders");
	bad("alltoall:size=1,hosts=1", 23, "alltoall needs 2..8 hosts");
	bad("alltoall:size=1,hosts=9", 23, "alltoall needs 2..8 hosts");
	bad("alltoall:size=1,count=2400000", 23, "134400000 messages (at most 134217728 per spec)");
	bad("permutation:size=1,seed=-1", 25, "seed: negative");
}

/*
 * qp=ud: every message of the spec is a datagram SEND (op defaults to send),
 * on the patterns that post at fixed times; qp=rc and no qp are RC with the
 * op asked for (write by default). Then the refusals, word for word.
 */
static void test_qp_ud(void)
{
	static const char *const ok[] = {
		"p2p:src=h0,dst=h1,size=1000B,count=4,gap=1us,qp=ud",
		"p2p:src=h0,dst=h1,size=4096,qp=ud,op=send",
		"incast:dst=h0,size=2KiB,n=5,qp=ud,sl=3",
		"alltoall:size=512,hosts=4,qp=ud",
		"permutation:size=100,seed=3,qp=ud",
		"shift:size=64,k=2,qp=ud,count=2",
		"p2p:src=h0,dst=h1,size=256,sl=mgmt,qp=ud",
	};
	struct fab_msgs m = { 0 };

	CU_ASSERT_FATAL(suite_net_ok);
	for (size_t k = 0; k < SIM_ARRAY_SIZE(ok); k++) {
		size_t n0 = m.n;

		CU_ASSERT_EQUAL_FATAL(parse(ok[k], 1, &m), 0);
		CU_ASSERT(m.n > n0);
		for (size_t i = n0; i < m.n; i++) {
			CU_ASSERT_TRUE(m.v[i].ud);
			CU_ASSERT_EQUAL(m.v[i].op, FAB_OP_SEND);
			CU_ASSERT_TRUE(fab_msg_is_ud(&m.v[i]));
		}
	}
	CU_ASSERT_EQUAL(m.v[0].bytes, 1000);
	CU_ASSERT_EQUAL(m.v[3].post, 3000000);
	CU_ASSERT_EQUAL(m.v[5].sl, 3);		/* the first incast message */
	fab_msgs_free(&m);

	/* RC: by default, or asked for; the op is kept */
	CU_ASSERT_EQUAL_FATAL(parse("p2p:src=h0,dst=h1,size=8KiB", 1, &m), 0);
	CU_ASSERT_EQUAL_FATAL(parse("p2p:src=h0,dst=h1,size=8KiB,qp=rc,op=read", 1, &m), 0);
	CU_ASSERT_EQUAL_FATAL(parse("pingpong:a=h0,b=h1,size=8,count=2,qp=rc", 1, &m), 0);
	CU_ASSERT_EQUAL_FATAL(m.n, 6);
	for (size_t i = 0; i < m.n; i++) {
		CU_ASSERT_FALSE(m.v[i].ud);
		CU_ASSERT_FALSE(fab_msg_is_ud(&m.v[i]));
	}
	CU_ASSERT_EQUAL(m.v[0].op, FAB_OP_WRITE);
	CU_ASSERT_EQUAL(m.v[1].op, FAB_OP_READ);
	fab_msgs_free(&m);

	bad("p2p:src=h0,dst=h1,size=1,qp=udp", 29,
	    "--traffic 'p2p:src=h0,dst=h1,size=1,qp=udp': qp: expected rc or ud, got 'udp'");
	bad("p2p:src=h0,dst=h1,size=1,qp=UD", 29, "qp: expected rc or ud, got 'UD'");
	bad("p2p:src=h0,dst=h1,size=1,qp=ud,op=write", 35,
	    "--traffic 'p2p:src=h0,dst=h1,size=1,qp=ud,op=write': "
	    "op=write: qp=ud carries only SENDs (expected op=send, or no op)");
	bad("incast:dst=h0,op=read,size=1,qp=ud", 18,
	    "op=read: qp=ud carries only SENDs (expected op=send, or no op)");
	bad("p2p:src=h0,dst=h1,size=4097,qp=ud", 24,
	    "--traffic 'p2p:src=h0,dst=h1,size=4097,qp=ud': size: 4097 bytes with qp=ud: "
	    "a datagram is one packet, at most the MTU (ib.mtu, 4096 bytes at most)");
	bad("shift:qp=ud,size=1MiB", 18, "size: 1048576 bytes with qp=ud");
	bad("pingpong:a=h0,b=h1,size=8,qp=ud", 30,
	    "qp=ud: pingpong posts a message only once an earlier one has arrived or "
	    "completed, and a lost datagram would stall it; expected qp=rc (the default)");
	bad("perftest:sizes=2..64,qp=ud", 22, "unknown key 'qp' for perftest");
	bad("p2p:src=h0,dst=h1,size=64,sl=mgmt,qp=rc", 38,
	    "qp=rc: sl=mgmt is VL15, which carries only datagrams (qp=ud)");
	bad("p2p:src=h0,dst=h1,size=1,qp=ud,qp=rc", 32, "qp given twice");
}

static void test_help(void)
{
	static const char *const want[] = {
		"p2p:src=A,dst=B,size=S", "pingpong:a=A,b=B,size=S", "incast:dst=B,size=S",
		"alltoall:size=S", "permutation:size=S", "shift:size=S", "#k",
		"[,qp=rc]", "qp: rc (default) or ud",
	};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	trace_spec_help(f);
	fclose(f);
	for (size_t i = 0; i < SIM_ARRAY_SIZE(want); i++)
		CU_ASSERT_PTR_NOT_NULL(strstr(buf, want[i]));
	free(buf);
}

static void test_msgs_add(void)
{
	struct fab_msgs m = { 0 };
	struct fab_msg x = {
		.src = 3, .dst = 4, .bytes = 99, .post = 7, .after = -1, .stream = 41,
		.sl = 5, .start = 11, .first_tx = 12, .end = 13, .done = true,
	};

	for (int i = 0; i < 1000; i++) {
		x.bytes = (uint64_t)i;
		CU_ASSERT_EQUAL_FATAL(fab_msgs_add(&m, &x), 0);
	}
	CU_ASSERT_EQUAL(m.n, 1000);
	CU_ASSERT(m.cap >= 1000);
	CU_ASSERT_EQUAL(m.nstreams, 42);
	CU_ASSERT_EQUAL(m.v[999].bytes, 999);
	CU_ASSERT_EQUAL(m.v[500].src, 3);
	CU_ASSERT_EQUAL(m.v[500].post, 7);
	CU_ASSERT_EQUAL(m.v[500].sl, 5);
	/* results are zeroed: they belong to the run */
	CU_ASSERT_EQUAL(m.v[0].start, 0);
	CU_ASSERT_EQUAL(m.v[0].first_tx, 0);
	CU_ASSERT_EQUAL(m.v[0].end, 0);
	CU_ASSERT_FALSE(m.v[0].done);
	x.stream = 2;	/* a lower stream does not shrink the count */
	CU_ASSERT_EQUAL(fab_msgs_add(&m, &x), 0);
	CU_ASSERT_EQUAL(m.nstreams, 42);
	x.stream = UINT32_MAX;	/* nstreams would overflow */
	CU_ASSERT_EQUAL(fab_msgs_add(&m, &x), -1);
	CU_ASSERT_EQUAL(m.n, 1001);
	fab_msgs_free(&m);
	CU_ASSERT_EQUAL(m.n, 0);
	CU_ASSERT_EQUAL(m.cap, 0);
	CU_ASSERT_EQUAL(m.nstreams, 0);
	fab_msgs_free(&m);	/* twice is harmless */
}

/* The last test: the net the others used is freed to an empty one, and a
 * second free of it is harmless (valgrind and ASan check the rest). */
static void test_teardown(void)
{
	CU_ASSERT(net.nnodes > 0);
	net_free(&net);
	CU_ASSERT_EQUAL(net.nnodes, 0);
	CU_ASSERT_PTR_NULL(net.nodes);
	CU_ASSERT_EQUAL(net_nhosts(&net), 0);
	net_free(&net);
	CU_ASSERT_EQUAL(net.nnodes, 0);
}

static const struct test_case tests[] = {
	{ "build the test net", test_net },
	{ "fab_msgs_add / fab_msgs_free", test_msgs_add },
	{ "p2p", test_p2p },
	{ "pingpong", test_pingpong },
	{ "incast", test_incast },
	{ "alltoall", test_alltoall },
	{ "permutation: deterministic derangement", test_permutation },
	{ "shift wraps", test_shift },
	{ "malformed specs", test_malformed },
	{ "qp=ud: datagrams, and what they refuse", test_qp_ud },
	{ "help text", test_help },
	{ "free the net: empty after, a second free harmless", test_teardown },
	{ NULL, NULL },
};

TEST_MAIN("spec", tests)
