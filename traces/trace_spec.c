/* SPDX-License-Identifier: MIT */
/*
 * trace_spec.c - the --traffic SPEC language: classic synthetic patterns
 * (point-to-point, ping-pong, incast, all-to-all, random permutation,
 * shift) turned into a list of messages for the fabric.
 *
 * These are the patterns network papers and vendor tests use to show one
 * property each: p2p and pingpong give the unloaded bandwidth and latency
 * (perftest's ib_write_bw / ib_write_lat), incast the N->1 congestion whose
 * ideal completion is N x S / R (numbers.md), alltoall and permutation the
 * bisection behaviour of the topology and routing, shift the neighbour
 * exchange of a ring. Nothing here models the application: a message is
 * posted at a fixed time or right after another one is delivered.
 *
 * The perftest pattern is a sweep in the shape of perftest's ib_*_bw and
 * ib_*_lat (linux-rdma/perftest): per message size, `iters` WRs on one QP
 * with at most tx_depth in flight, refilled cq_mod at a time as completions
 * are polled (bw), or `iters` round trips (lat). The window is built from
 * completion dependencies (fab_msg.after_cqe), so the posting times are
 * the ones perftest's loop would see; tools/cli_perftest.c turns the
 * results into perftest's table. docs/perftest.md has the correspondence.
 *
 * A spec is validated completely before the first message is added, and a
 * failed spec leaves the list as it was.
 */
#include "traces/trace_spec.h"

#include "traces/trace.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_parse.h"
#include "sim/sim_rng.h"

#define IB_MAX_MSG_BYTES (1ULL << 31)	/* IBA: a message is at most 2^31 bytes */
#define IB_MAX_MTU_BYTES 4096		/* IBA 9.8.5: a UD message is one packet of <= the MTU */
#define MAX_KEYS 16

enum key_id {
	KEY_SRC, KEY_DST, KEY_A, KEY_B, KEY_SIZE, KEY_COUNT, KEY_START, KEY_GAP,
	KEY_SL, KEY_N, KEY_HOSTS, KEY_SEED, KEY_K, KEY_OP, KEY_MEM,
	KEY_SIZES, KEY_ITERS, KEY_MODE, KEY_TX_DEPTH, KEY_CQ_MOD, KEY_QP, NKEYS
};

#define A_SRC	(1u << KEY_SRC)
#define A_DST	(1u << KEY_DST)
#define A_A	(1u << KEY_A)
#define A_B	(1u << KEY_B)
#define A_SIZE	(1u << KEY_SIZE)
#define A_COUNT	(1u << KEY_COUNT)
#define A_START	(1u << KEY_START)
#define A_GAP	(1u << KEY_GAP)
#define A_SL	(1u << KEY_SL)
#define A_N	(1u << KEY_N)
#define A_HOSTS	(1u << KEY_HOSTS)
#define A_SEED	(1u << KEY_SEED)
#define A_K	(1u << KEY_K)
#define A_OP	(1u << KEY_OP)
#define A_MEM	(1u << KEY_MEM)
#define A_SIZES	(1u << KEY_SIZES)
#define A_ITERS	(1u << KEY_ITERS)
#define A_MODE	(1u << KEY_MODE)
#define A_TX_DEPTH (1u << KEY_TX_DEPTH)
#define A_CQ_MOD (1u << KEY_CQ_MOD)
#define A_QP	(1u << KEY_QP)

/*
 * perftest's own defaults and limits (src/perftest_parameters.h):
 * DEF_ITERS 1000 for latency tests, DEF_ITERS_WB 5000 for bandwidth,
 * DEF_TX_BW 128, DEF_CQ_MOD 100, MIN_ITER 5, MAX_ITER 100000000, MAX_TX
 * 15000, MAX_CQ_MOD 1024. Without -a, a single size above
 * MSG_SIZE_CQ_MOD_LIMIT (8192 B) runs with CQ moderation off (cq_mod 1).
 */
#define PT_ITERS_LAT	1000
#define PT_ITERS_BW	5000
#define PT_MIN_ITERS	5
#define PT_MAX_ITERS	100000000
#define PT_TX_DEPTH	128
#define PT_MAX_TX_DEPTH	15000
#define PT_CQ_MOD	100
#define PT_MAX_CQ_MOD	1024
#define PT_CQ_MOD_SIZE	8192

static const char *const key_names[NKEYS] = {
	[KEY_SRC] = "src", [KEY_DST] = "dst", [KEY_A] = "a", [KEY_B] = "b",
	[KEY_SIZE] = "size", [KEY_COUNT] = "count", [KEY_START] = "start",
	[KEY_GAP] = "gap", [KEY_SL] = "sl", [KEY_N] = "n", [KEY_HOSTS] = "hosts",
	[KEY_SEED] = "seed", [KEY_K] = "k", [KEY_OP] = "op", [KEY_MEM] = "mem",
	[KEY_SIZES] = "sizes", [KEY_ITERS] = "iters", [KEY_MODE] = "mode",
	[KEY_TX_DEPTH] = "tx_depth", [KEY_CQ_MOD] = "cq_mod", [KEY_QP] = "qp",
};

struct args {
	unsigned given;		/* A_* bits */
	int src, dst, a, b;	/* node indexes */
	uint64_t size, count, n, hosts, seed, k;
	sim_time_t start, gap;
	uint8_t sl;
	uint8_t op;		/* enum fab_op */
	uint8_t mem;		/* enum hca_mem */
	bool ud;		/* qp=ud: datagrams on UD QPs, not RC */
	/* perftest */
	uint64_t sizes[TRACE_PERFTEST_MAX_SIZES];
	uint32_t nsizes;
	bool range;		/* sizes=MIN..MAX */
	uint64_t iters, tx_depth, cq_mod;
	uint8_t mode;		/* enum trace_perftest_mode */
	int col[NKEYS];		/* where each value starts in the spec (1-based) */
};

struct ctx {
	const char *spec;
	const struct net *net;
	struct sim_diag *d;
	int nh;			/* hosts */
	int *host;		/* k -> node */
	int *host_of;		/* node -> k, or -1 */
	struct fab_msgs *out;
	uint32_t stream;	/* next stream id */
	struct trace_perftest *pt;	/* where a perftest sweep is described, or NULL */
};

struct pattern {
	const char *name;
	unsigned keys;		/* allowed */
	unsigned required;
	uint64_t count_default;
	int (*gen)(struct ctx *c, struct args *a);
};

static int spec_err(struct ctx *c, int col, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int spec_err(struct ctx *c, int col, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return sim_diag_set(c->d, NULL, 0, col, "--traffic '%.200s': %s", c->spec, msg);
}


static void key_list(unsigned keys, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	for (size_t i = 0; i < NKEYS; i++)
		if (keys & (1u << i))
			sim_append(buf, len, &off, "%s%s", off ? ", " : "", key_names[i]);
}

/* "h0, h1, h2, ..., h15" - a few names to show what a host looks like. */
static void host_examples(const struct ctx *c, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	for (int k = 0; k < c->nh; k++) {
		if (c->nh > 5 && k == 3) {
			sim_append(buf, len, &off, ", ...");
			k = c->nh - 1;
		}
		sim_append(buf, len, &off, "%s%.40s", k ? ", " : "", c->net->nodes[c->host[k]].desc);
	}
}

static int resolve_host(struct ctx *c, const char *name, int col, int *node)
{
	char ex[256];
	int idx;

	host_examples(c, ex, sizeof(ex));
	if (name[0] == '#') {
		uint64_t k;

		if (sim_parse_uint(name + 1, UINT32_MAX, &k, NULL, 0) || k >= (uint64_t)c->nh)
			return spec_err(c, col, "no host '%s' (hosts are #0..#%d, or %s)",
					name, c->nh - 1, ex);
		*node = c->host[k];
		return 0;
	}
	idx = net_find_host(c->net, name);
	if (idx < 0)
		idx = net_find(c->net, name);
	if (idx < 0 || idx >= c->net->nnodes)
		return spec_err(c, col, "unknown host '%s' (hosts are %s, or #0..#%d)",
				name, ex, c->nh - 1);
	if (c->host_of[idx] < 0)
		return spec_err(c, col, "'%s' is %s, not a host (hosts are %s, or #0..#%d)",
				name, c->net->nodes[idx].type == NET_SWITCH ? "a switch" :
				c->net->nodes[idx].type == NET_ROUTER ? "a router" :
				"a channel adapter with no connected port",
				ex, c->nh - 1);
	*node = idx;
	return 0;
}

/* One message size: at least a byte, at most the largest IB message. */
static int parse_msg_size(struct ctx *c, const char *key, const char *v, int col, uint64_t *out)
{
	char err[256];

	if (sim_parse_size(v, out, err, sizeof(err)))
		return spec_err(c, col, "%s: %s", key, err);
	if (!*out)
		return spec_err(c, col, "%s: must be more than 0 bytes", key);
	if (*out > IB_MAX_MSG_BYTES)
		return spec_err(c, col, "%s: '%s' is more than 2GiB, the largest IB message (2^31 bytes)",
				key, v);
	return 0;
}

/*
 * sizes=MIN..MAX doubles from MIN while it stays <= MAX, as perftest's -a
 * does from 2 to 8M (MAX is a size only when MIN x 2^k reaches it);
 * sizes=S1:S2:... lists them (':' because ',' separates the spec's keys).
 */
static int parse_sizes(struct ctx *c, struct args *a, const char *v, int col)
{
	const char *dots = strstr(v, "..");
	char part[256];
	uint64_t lo, hi;

	a->nsizes = 0;
	if (dots) {
		int hcol = col + (int)(dots + 2 - v);

		if (dots == v || !dots[2] || strstr(dots + 2, ".."))
			return spec_err(c, dots == v ? col : hcol,
					"sizes: '%s': expected MIN..MAX, such as 2..8M", v);
		snprintf(part, sizeof(part), "%.*s", (int)(dots - v), v);
		if (parse_msg_size(c, "sizes", part, col, &lo) ||
		    parse_msg_size(c, "sizes", dots + 2, hcol, &hi))
			return -1;
		if (lo > hi)
			return spec_err(c, col, "sizes: '%s': MIN is larger than MAX", v);
		/* hi <= 2^31, so at most 32 sizes and s * 2 cannot wrap */
		for (uint64_t s = lo; s <= hi; s *= 2)
			a->sizes[a->nsizes++] = s;
		a->range = true;
		return 0;
	}
	for (const char *p = v;;) {
		const char *colon = strchr(p, ':');
		size_t len = colon ? (size_t)(colon - p) : strlen(p);
		int pcol = col + (int)(p - v);

		if (!len)
			return spec_err(c, pcol, "sizes: empty size in '%s' (expected MIN..MAX such as 2..8M, "
					"or a list such as 64:4096:1M)", v);
		if (a->nsizes == TRACE_PERFTEST_MAX_SIZES)
			return spec_err(c, pcol, "sizes: more than %d sizes", TRACE_PERFTEST_MAX_SIZES);
		snprintf(part, sizeof(part), "%.*s", (int)len, p);
		if (parse_msg_size(c, "sizes", part, pcol, &a->sizes[a->nsizes]))
			return -1;
		a->nsizes++;
		if (!colon)
			break;
		p = colon + 1;
	}
	a->range = false;
	return 0;
}

static int parse_value(struct ctx *c, struct args *a, int key, const char *v, int col)
{
	char err[256];
	uint64_t x;

	a->col[key] = col;
	switch ((enum key_id)key) {
	case KEY_SRC: return resolve_host(c, v, col, &a->src);
	case KEY_DST: return resolve_host(c, v, col, &a->dst);
	case KEY_A: return resolve_host(c, v, col, &a->a);
	case KEY_B: return resolve_host(c, v, col, &a->b);
	case KEY_SIZE:
		return parse_msg_size(c, "size", v, col, &a->size);
	case KEY_COUNT:
		if (sim_parse_uint(v, TRACE_SPEC_MAX_MSGS, &a->count, err, sizeof(err)))
			return spec_err(c, col, "count: %s", err);
		if (!a->count)
			return spec_err(c, col, "count: must be at least 1");
		return 0;
	case KEY_START:
		if (sim_parse_time_ps(v, &a->start, err, sizeof(err)))
			return spec_err(c, col, "start: %s", err);
		return 0;
	case KEY_GAP:
		if (sim_parse_time_ps(v, &a->gap, err, sizeof(err)))
			return spec_err(c, col, "gap: %s", err);
		return 0;
	case KEY_OP:
		/* the work request each message is (ib_write_bw, ib_read_bw, ib_send_bw) */
		if (!strcmp(v, "write"))
			a->op = FAB_OP_WRITE;
		else if (!strcmp(v, "read"))
			a->op = FAB_OP_READ;
		else if (!strcmp(v, "send"))
			a->op = FAB_OP_SEND;
		else
			return spec_err(c, col, "op: expected write, read or send, got '%s'", v);
		return 0;
	case KEY_QP:
		/* the transport of each stream's queue pair (IBA 9.8): RC, or
		 * UD for datagrams (one packet, no ACK, lost if dropped) */
		if (!strcmp(v, "rc"))
			a->ud = false;
		else if (!strcmp(v, "ud"))
			a->ud = true;
		else
			return spec_err(c, col, "qp: expected rc or ud, got '%s'", v);
		return 0;
	case KEY_MEM:
		/* where both ends' buffers live: GPU data crosses PCIe peer to
		 * peer with GPUDirect RDMA, through host memory without it */
		if (!strcmp(v, "host"))
			a->mem = HCA_MEM_HOST;
		else if (!strcmp(v, "gpu"))
			a->mem = HCA_MEM_GPU;
		else
			return spec_err(c, col, "mem: expected host or gpu, got '%s'", v);
		return 0;
	case KEY_SL:
		if (!strcmp(v, "mgmt")) {
			/* VL15 management datagrams (fab.h: sl 0xff), <= 256 B each */
			a->sl = 0xff;
			return 0;
		}
		if (sim_parse_uint(v, FAB_NSL - 1, &x, err, sizeof(err)))
			return spec_err(c, col, "sl: %s (service levels are 0..15)", err);
		a->sl = (uint8_t)x;
		return 0;
	case KEY_N:
		if (sim_parse_uint(v, UINT32_MAX, &a->n, err, sizeof(err)))
			return spec_err(c, col, "n: %s", err);
		return 0;
	case KEY_HOSTS:
		if (sim_parse_uint(v, UINT32_MAX, &a->hosts, err, sizeof(err)))
			return spec_err(c, col, "hosts: %s", err);
		return 0;
	case KEY_SEED:
		if (sim_parse_u64(v, &a->seed, err, sizeof(err)))
			return spec_err(c, col, "seed: %s", err);
		return 0;
	case KEY_K:
		if (sim_parse_uint(v, UINT32_MAX, &a->k, err, sizeof(err)))
			return spec_err(c, col, "k: %s", err);
		return 0;
	case KEY_SIZES:
		return parse_sizes(c, a, v, col);
	case KEY_ITERS:
		/* perftest's bounds: its latency statistics drop the 2 largest of
		 * iters - 1 samples, so fewer than 5 leave too few */
		if (sim_parse_uint(v, PT_MAX_ITERS, &a->iters, err, sizeof(err)))
			return spec_err(c, col, "iters: %s", err);
		if (a->iters < PT_MIN_ITERS)
			return spec_err(c, col, "iters: at least %d, as perftest requires", PT_MIN_ITERS);
		return 0;
	case KEY_MODE:
		if (!strcmp(v, "bw"))
			a->mode = TRACE_PERFTEST_BW;
		else if (!strcmp(v, "lat"))
			a->mode = TRACE_PERFTEST_LAT;
		else
			return spec_err(c, col, "mode: expected bw or lat, got '%s'", v);
		return 0;
	case KEY_TX_DEPTH:
		if (sim_parse_uint(v, PT_MAX_TX_DEPTH, &a->tx_depth, err, sizeof(err)))
			return spec_err(c, col, "tx_depth: %s", err);
		if (!a->tx_depth)
			return spec_err(c, col, "tx_depth: must be at least 1");
		return 0;
	case KEY_CQ_MOD:
		if (sim_parse_uint(v, PT_MAX_CQ_MOD, &a->cq_mod, err, sizeof(err)))
			return spec_err(c, col, "cq_mod: %s", err);
		if (!a->cq_mod)
			return spec_err(c, col, "cq_mod: must be at least 1");
		return 0;
	case NKEYS:
		break;
	}
	return -1;
}

/* ---- generating messages ---------------------------------------------- */

/* start + i x gap for i < count must fit in sim_time_t. */
static int check_times(struct ctx *c, const struct args *a)
{
	unsigned __int128 last = (unsigned __int128)a->gap * (a->count - 1) + a->start;

	if (last > SIM_TIME_MAX)
		return spec_err(c, a->col[KEY_GAP] ? a->col[KEY_GAP] : a->col[KEY_START],
				"start + (count-1) x gap does not fit in 64-bit picoseconds");
	return 0;
}

/* Bounded so a typo cannot ask for terabytes, and so fab_msg.after (int32) can index the list. */

static int check_total(struct ctx *c, const struct args *a, unsigned __int128 msgs)
{
	if (msgs > TRACE_SPEC_MAX_MSGS)
		return spec_err(c, a->col[KEY_COUNT] ? a->col[KEY_COUNT] : 1,
				"this spec makes %llu messages (at most %u per spec)",
				msgs > UINT64_MAX ? (unsigned long long)UINT64_MAX :
				(unsigned long long)msgs, TRACE_SPEC_MAX_MSGS);
	if (c->out->n + (size_t)msgs > INT32_MAX)
		return spec_err(c, 1, "the message list would exceed %d messages", INT32_MAX);
	uint64_t budget = c->out->max_bytes ? c->out->max_bytes : trace_mem_budget_default();
	uint64_t bytes = ((uint64_t)c->out->n + (uint64_t)msgs) * TRACE_SPEC_MSG_BYTES;
	char hb[32], hl[32];

	if (bytes > budget)
		return spec_err(c, a->col[KEY_COUNT] ? a->col[KEY_COUNT] : 1,
				"%s%llu messages take about %s at %u bytes a message: more than sim.max_memory, %s%s; raise it (--set sim.max_memory=SIZE), or lower count",
				c->out->n ? "with the specs before it, " : "",
				(unsigned long long)(c->out->n + (size_t)msgs),
				sim_fmt_mem(bytes, hb, sizeof(hb)), TRACE_SPEC_MSG_BYTES,
				sim_fmt_mem(budget, hl, sizeof(hl)),
				c->out->max_bytes ? "" : " (half of the memory this process may use)");
	return 0;
}

static int add(struct ctx *c, int src, int dst, const struct args *a, sim_time_t post,
	       int32_t after, uint32_t stream)
{
	struct fab_msg m = {
		.src = (uint32_t)src, .dst = (uint32_t)dst, .bytes = a->size,
		.post = post, .after = after, .after_delay = 0,
		.stream = stream, .sl = a->sl, .op = a->op, .mem = a->mem, .ud = a->ud,
	};

	if (fab_msgs_add(c->out, &m))
		return spec_err(c, 0, "out of memory after %zu messages", c->out->n);
	return 0;
}

/* `count` messages src -> dst on one stream, posted every `gap`. */
static int add_stream(struct ctx *c, int src, int dst, const struct args *a)
{
	uint32_t s = c->stream++;

	for (uint64_t i = 0; i < a->count; i++)
		if (add(c, src, dst, a, a->start + i * a->gap, -1, s))
			return -1;
	return 0;
}

static int gen_p2p(struct ctx *c, struct args *a)
{
	if (a->src == a->dst)
		return spec_err(c, a->col[KEY_DST], "src and dst are the same host");
	if (check_total(c, a, a->count) || check_times(c, a))
		return -1;
	return add_stream(c, a->src, a->dst, a);
}

/*
 * A -> B, then B -> A as soon as A's message is delivered, and so on: each
 * message depends on the one before it (after = its index, no delay), as
 * ib_write_lat does. Two streams: A's messages and B's.
 */
static int gen_pingpong(struct ctx *c, struct args *a)
{
	uint32_t sa, sb;

	if (a->a == a->b)
		return spec_err(c, a->col[KEY_B], "a and b are the same host");
	if (check_total(c, a, (unsigned __int128)2 * a->count))
		return -1;
	sa = c->stream++;
	sb = c->stream++;
	for (uint64_t r = 0; r < a->count; r++) {
		int32_t prev = (int32_t)c->out->n - 1;

		if (add(c, a->a, a->b, a, a->start, r ? prev : -1, sa) ||
		    add(c, a->b, a->a, a, a->start, prev + 1, sb))
			return -1;
	}
	return 0;
}

/* The first n hosts in host order, skipping dst, each on its own stream. */
static int gen_incast(struct ctx *c, struct args *a)
{
	uint64_t n = a->given & A_N ? a->n : (uint64_t)c->nh - 1;

	if (c->nh < 2)
		return spec_err(c, 0, "incast needs at least 2 hosts, the topology has %d", c->nh);
	if (n < 1 || n > (uint64_t)c->nh - 1)
		return spec_err(c, a->col[KEY_N] ? a->col[KEY_N] : 1,
				"n: %llu senders, but there are %d hosts besides dst (1..%d)",
				(unsigned long long)n, c->nh - 1, c->nh - 1);
	if (check_total(c, a, (unsigned __int128)n * a->count) || check_times(c, a))
		return -1;
	for (int k = 0, sent = 0; k < c->nh && (uint64_t)sent < n; k++) {
		if (c->host[k] == a->dst)
			continue;
		if (add_stream(c, c->host[k], a->dst, a))
			return -1;
		sent++;
	}
	return 0;
}

/*
 * Every ordered pair among the first N hosts, one stream per pair. Host i
 * opens its streams in the order i+1, i+2, ... (mod N), as a linear-shift
 * all-to-all does, so the first packets do not all converge on host 0.
 */
static int gen_alltoall(struct ctx *c, struct args *a)
{
	uint64_t n = a->given & A_HOSTS ? a->hosts : (uint64_t)c->nh;

	if (n < 2 || n > (uint64_t)c->nh)
		return spec_err(c, a->col[KEY_HOSTS] ? a->col[KEY_HOSTS] : 1,
				"hosts: %llu, but alltoall needs 2..%d hosts",
				(unsigned long long)n, c->nh);
	if (check_total(c, a, (unsigned __int128)n * (n - 1) * a->count) || check_times(c, a))
		return -1;
	for (uint64_t i = 0; i < n; i++)
		for (uint64_t dd = 1; dd < n; dd++)
			if (add_stream(c, c->host[i], c->host[(i + dd) % n], a))
				return -1;
	return 0;
}

/*
 * A uniformly random derangement: Fisher-Yates shuffles until no host maps
 * to itself. The chance a shuffle is a derangement tends to 1/e, so about
 * 2.7 shuffles on average, and a fixed seed gives a fixed result.
 */
static int gen_permutation(struct ctx *c, struct args *a)
{
	struct sim_rng rng;
	int *perm;
	bool fixed;

	if (c->nh < 2)
		return spec_err(c, 0, "permutation needs at least 2 hosts, the topology has %d", c->nh);
	if (check_total(c, a, (unsigned __int128)c->nh * a->count) || check_times(c, a))
		return -1;
	perm = malloc(sizeof(*perm) * (size_t)c->nh);
	if (!perm)
		return spec_err(c, 0, "out of memory");
	sim_rng_init(&rng, a->seed, sim_hash_str("traffic.permutation"));
	do {
		for (int i = 0; i < c->nh; i++)
			perm[i] = i;
		for (int i = c->nh - 1; i > 0; i--) {
			int j = (int)sim_rng_below(&rng, (uint64_t)i + 1), t = perm[i];

			perm[i] = perm[j];
			perm[j] = t;
		}
		fixed = false;
		for (int i = 0; i < c->nh; i++)
			fixed |= perm[i] == i;
	} while (fixed);
	for (int i = 0; i < c->nh; i++) {
		if (add_stream(c, c->host[i], c->host[perm[i]], a)) {
			free(perm);
			return -1;
		}
	}
	free(perm);
	return 0;
}

static int gen_shift(struct ctx *c, struct args *a)
{
	uint64_t k = a->given & A_K ? a->k : 1;

	if (c->nh < 2)
		return spec_err(c, 0, "shift needs at least 2 hosts, the topology has %d", c->nh);
	if (k % (uint64_t)c->nh == 0)
		return spec_err(c, a->col[KEY_K] ? a->col[KEY_K] : 1,
				"k=%llu is a multiple of the %d hosts: every host would send to itself",
				(unsigned long long)k, c->nh);
	if (check_total(c, a, (unsigned __int128)c->nh * a->count) || check_times(c, a))
		return -1;
	for (uint64_t i = 0; i < (uint64_t)c->nh; i++)
		if (add_stream(c, c->host[i], c->host[(i + k) % (uint64_t)c->nh], a))
			return -1;
	return 0;
}

/* One WR of a perftest sweep: posted at start, or when `after` is delivered
 * (a ping-pong) or completed at this source (after_cqe: the send window). */
static int add_pt(struct ctx *c, const struct args *a, int src, int dst, uint64_t bytes,
		  uint32_t stream, int32_t after, bool after_cqe)
{
	struct fab_msg m = {
		.src = (uint32_t)src, .dst = (uint32_t)dst, .bytes = bytes,
		.post = a->start, .after = after, .after_cqe = after >= 0 && after_cqe,
		.stream = stream, .sl = a->sl, .op = a->op, .mem = a->mem,
	};

	if (fab_msgs_add(c->out, &m))
		return spec_err(c, 0, "out of memory after %zu messages", c->out->n);
	return 0;
}

/*
 * perftest's bandwidth loop (run_iter_bw): WR i may be posted once
 * ccnt >= i - tx_depth + 1, where ccnt grows by cq_mod per polled CQE
 * (only every cq_mod-th WR is signalled). So WR i >= tx_depth waits for the
 * completion of WR ceil((i - tx_depth + 1) / cq_mod) x cq_mod - 1, which is
 * earlier than i because cq_mod <= tx_depth. The first tx_depth WRs of a
 * size wait for the last WR of the size before (perftest runs the sizes one
 * after the other). All on one stream: one QP, as perftest uses.
 */
static int gen_perftest_bw(struct ctx *c, const struct args *a, uint64_t iters,
			   uint64_t depth, uint64_t cqm)
{
	uint32_t s = c->stream++;
	int32_t last = -1;

	for (uint32_t k = 0; k < a->nsizes; k++) {
		int32_t base = (int32_t)c->out->n;

		for (uint64_t i = 0; i < iters; i++) {
			int32_t after = last;

			if (i >= depth)
				after = base + (int32_t)((i - depth + cqm) / cqm * cqm - 1);
			if (add_pt(c, a, a->src, a->dst, a->sizes[k], s, after, true))
				return -1;
		}
		last = base + (int32_t)iters - 1;
	}
	return 0;
}

/*
 * perftest's latency loops. WRITE (ib_write_lat) and SEND (ib_send_lat):
 * the client writes, the server answers as soon as the data is in its
 * memory, the client's next write follows the answer's arrival: a
 * ping-pong on two streams. READ (ib_read_lat): one READ at a time, each
 * posted when the one before has completed. Sizes follow one another.
 */
static int gen_perftest_lat(struct ctx *c, const struct args *a, uint64_t iters)
{
	bool read = a->op == FAB_OP_READ;
	uint32_t sa = c->stream++, sb = read ? 0 : c->stream++;
	int32_t last = -1;

	for (uint32_t k = 0; k < a->nsizes; k++) {
		for (uint64_t r = 0; r < iters; r++) {
			int32_t ping = (int32_t)c->out->n;

			if (add_pt(c, a, a->src, a->dst, a->sizes[k], sa, last, read))
				return -1;
			last = ping;
			if (read)
				continue;
			if (add_pt(c, a, a->dst, a->src, a->sizes[k], sb, ping, false))
				return -1;
			last = ping + 1;
		}
	}
	return 0;
}

static int gen_perftest(struct ctx *c, struct args *a)
{
	bool lat = a->mode == TRACE_PERFTEST_LAT;
	uint32_t per = lat && a->op != FAB_OP_READ ? 2 : 1;
	uint64_t iters, depth = 1, cqm = 1;
	size_t first = c->out->n;
	int rc;

	if (c->nh < 2)
		return spec_err(c, 0, "perftest needs 2 hosts, the topology has %d", c->nh);
	/* the client defaults to the first host, the server to the next one */
	if (!(a->given & A_SRC))
		a->src = c->host[0];
	if (!(a->given & A_DST))
		a->dst = c->host[a->src == c->host[0] ? 1 : 0];
	if (a->src == a->dst)
		return spec_err(c, a->col[KEY_DST] ? a->col[KEY_DST] : a->col[KEY_SRC],
				"src and dst are the same host");
	if (a->sl == 0xff)
		return spec_err(c, a->col[KEY_SL],
				"sl=mgmt: perftest runs over RC queue pairs, and VL15 carries only datagrams");
	if (lat && (a->given & (A_TX_DEPTH | A_CQ_MOD))) {
		int key = a->given & A_TX_DEPTH ? KEY_TX_DEPTH : KEY_CQ_MOD;

		return spec_err(c, a->col[key],
				"%s: only for mode=bw (perftest's latency tests keep one message in flight)",
				key_names[key]);
	}
	iters = a->given & A_ITERS ? a->iters : lat ? PT_ITERS_LAT : PT_ITERS_BW;
	if (!lat) {
		/* perftest's force_dependecies(): tx_depth <= iters, cq_mod <= tx_depth */
		depth = a->given & A_TX_DEPTH ? a->tx_depth : PT_TX_DEPTH;
		if (depth > iters)
			depth = iters;
		if (a->given & A_CQ_MOD)
			cqm = a->cq_mod;
		else
			cqm = a->nsizes == 1 && !a->range && a->sizes[0] > PT_CQ_MOD_SIZE ? 1 : PT_CQ_MOD;
		if (cqm > depth)
			cqm = depth;
	}
	if (check_total(c, a, (unsigned __int128)a->nsizes * iters * per))
		return -1;
	rc = lat ? gen_perftest_lat(c, a, iters) : gen_perftest_bw(c, a, iters, depth, cqm);
	if (rc || !c->pt)
		return rc;
	*c->pt = (struct trace_perftest){
		.valid = true, .op = a->op, .mode = a->mode, .mem = a->mem, .range = a->range,
		.src = a->src, .dst = a->dst, .iters = (uint32_t)iters,
		.tx_depth = (uint32_t)depth, .cq_mod = (uint32_t)cqm, .per_iter = per,
		.nsizes = a->nsizes, .first = first, .count = c->out->n - first,
	};
	memcpy(c->pt->sizes, a->sizes, sizeof(a->sizes));
	return 0;
}

#define COMMON (A_SIZE | A_COUNT | A_START | A_SL | A_OP | A_MEM | A_QP)
#define PERFTEST (A_SRC | A_DST | A_SIZES | A_ITERS | A_MODE | A_TX_DEPTH | A_CQ_MOD | \
		  A_OP | A_MEM | A_SL | A_START)

static const struct pattern patterns[] = {
	{ "p2p", A_SRC | A_DST | COMMON | A_GAP, A_SRC | A_DST | A_SIZE, 1, gen_p2p },
	{ "pingpong", A_A | A_B | COMMON, A_A | A_B | A_SIZE, 1000, gen_pingpong },
	{ "incast", A_DST | A_N | COMMON | A_GAP, A_DST | A_SIZE, 1, gen_incast },
	{ "alltoall", A_HOSTS | COMMON | A_GAP, A_SIZE, 1, gen_alltoall },
	{ "permutation", A_SEED | COMMON | A_GAP, A_SIZE, 1, gen_permutation },
	{ "shift", A_K | COMMON | A_GAP, A_SIZE, 1, gen_shift },
	{ "perftest", PERFTEST, A_SIZES, 1, gen_perftest },
};

/*
 * qp= against the other keys. A datagram (UD, IBA 9.8.5) is a SEND of one
 * packet: no RDMA, at most one MTU (4096 B is the largest IB MTU; the
 * fabric's ib.mtu, which a spec cannot see, is checked by
 * fab_msgs_check()). Patterns that wait for a message to arrive before
 * posting the next one would stall for good on a lost datagram, so they
 * stay on RC (pingpong; perftest has no qp key: its sweeps are RC's).
 * VL15 (sl=mgmt) carries only datagrams.
 */
static int check_qp(struct ctx *c, struct args *a, const struct pattern *pat)
{
	if (!a->ud) {
		if ((a->given & A_QP) && a->sl == 0xff)
			return spec_err(c, a->col[KEY_QP],
					"qp=rc: sl=mgmt is VL15, which carries only datagrams (qp=ud)");
		return 0;
	}
	if (pat->gen == gen_pingpong)
		return spec_err(c, a->col[KEY_QP],
				"qp=ud: %s posts a message only once an earlier one has arrived or "
				"completed, and a lost datagram would stall it; expected qp=rc (the "
				"default)", pat->name);
	if ((a->given & A_OP) && a->op != FAB_OP_SEND)
		return spec_err(c, a->col[KEY_OP],
				"op=%s: qp=ud carries only SENDs (expected op=send, or no op)",
				a->op == FAB_OP_READ ? "read" : "write");
	a->op = FAB_OP_SEND;
	if (a->size > IB_MAX_MTU_BYTES)
		return spec_err(c, a->col[KEY_SIZE],
				"size: %llu bytes with qp=ud: a datagram is one packet, at most the "
				"MTU (ib.mtu, %d bytes at most)",
				(unsigned long long)a->size, IB_MAX_MTU_BYTES);
	return 0;
}

void trace_spec_help(FILE *out)
{
	fputs(
"Traffic: --traffic PATTERN[:key=value,...] (may be given several times)\n"
"\n"
"  p2p:src=A,dst=B,size=S[,count=1][,gap=0][,start=0][,sl=0][,qp=rc]\n"
"      count messages A->B on one stream, message i posted at start + i*gap.\n"
"  pingpong:a=A,b=B,size=S[,count=1000][,start=0][,sl=0]\n"
"      A->B, then B->A as soon as it is delivered, count round trips\n"
"      (ib_write_lat style; the round-trip time is the pair's latency).\n"
"  incast:dst=B,size=S[,n=all][,count=1][,gap=0][,start=0][,sl=0][,qp=rc]\n"
"      n senders to B, each its own stream; the senders are the first n\n"
"      hosts in host order, skipping B (default: every other host).\n"
"  alltoall:size=S[,hosts=all][,count=1][,gap=0][,start=0][,sl=0][,qp=rc]\n"
"      every ordered pair among the first N hosts, one stream per pair;\n"
"      host i opens its streams to i+1, i+2, ... (mod N).\n"
"  permutation:size=S[,seed=run seed][,count=1][,gap=0][,start=0][,sl=0]\n"
"           [,qp=rc]\n"
"      a random derangement (no host sends to itself), drawn from seed=, or\n"
"      from the run seed; the same seed gives the same permutation.\n"
"  shift:size=S[,k=1][,count=1][,gap=0][,start=0][,sl=0][,qp=rc]\n"
"      host i -> host (i+k) mod N; k a multiple of N is refused. For a\n"
"      shift to the left use k = N-1.\n"
"  perftest:sizes=SIZES[,op=write][,mode=bw][,iters=N][,tx_depth=128]\n"
"           [,cq_mod=100][,src=#0][,dst=#1][,mem=host][,sl=0][,start=0]\n"
"      a sweep shaped like perftest's ib_{write,read,send}_{bw,lat}: per\n"
"      size, in turn, iters WRs from src (the client) to dst on one QP.\n"
"      SIZES: MIN..MAX, doubling from MIN (2..8M is perftest's -a), or a\n"
"      list S1:S2:... mode=bw: at most tx_depth WRs in flight, refilled\n"
"      cq_mod at a time as completions are polled; iters default 5000.\n"
"      mode=lat: iters round trips (write, send: dst answers as soon as\n"
"      the data has landed; read: each READ after the last completes);\n"
"      iters default 1000. The run then prints perftest's result table\n"
"      (docs/perftest.md).\n"
"\n"
"  Hosts (A, B): node description (h3), node id, or #k for the k-th host\n"
"  (0-based, topology order). Names cannot contain ',' or '='; use #k then.\n"
"  size: bytes or B KB MB GB (x1000) KiB MiB GiB (x1024), K M G = KiB MiB\n"
"  GiB; at most 2GiB (the largest IB message). start, gap: a time with a\n"
"  unit (ps ns us ms s). count: per stream. op: write (default), read or\n"
"  send: the work request each message is, on one RC queue pair per stream\n"
"  (UD with qp=ud; read: the source reads size bytes from the destination;\n"
"  send: a receive is posted for each message). mem: host (default) or\n"
"  gpu: where both ends' buffers live (GPU data goes peer to peer with\n"
"  host.gpudirect=on, through host memory with staging copies when off).\n"
"  sl: service level 0..15 (the SL-to-VL table picks the VL), or sl=mgmt\n"
"  for VL15 management datagrams (at most 256 B each; not flow controlled,\n"
"  dropped when VL15 is full).\n"
"  qp: rc (default) or ud: the queue pair of each stream. ud sends\n"
"  unreliable datagrams (UD SENDs, as UDP does): one packet per message, so\n"
"  size <= ib.mtu; op defaults to send (write and read are refused); no\n"
"  ACKs; a receive is posted for each; a datagram dropped on the way (a\n"
"  lossy Ethernet queue, a bad CRC) is counted lost, never resent. The\n"
"  sender's completion comes when the packet is sent. Not for pingpong (a\n"
"  lost datagram would stall it) nor perftest.\n"
"  Stream ids continue across specs; messages on one stream leave their\n"
"  source in order, different streams share the port packet by packet.\n"
"  Example: --traffic incast:dst=h0,size=1MiB,n=8 --traffic p2p:src=h9,dst=h10,size=64KiB\n",
	      out);
}

int trace_spec_parse(const char *spec, const struct net *net, uint64_t seed,
		     struct fab_msgs *out, struct sim_diag *d)
{
	return trace_spec_parse_sweep(spec, net, seed, out, NULL, d);
}

int trace_spec_parse_sweep(const char *spec, const struct net *net, uint64_t seed,
			   struct fab_msgs *out, struct trace_perftest *pt,
			   struct sim_diag *d)
{
	struct ctx c = { .spec = spec ? spec : "", .net = net, .d = d, .out = out, .pt = pt };
	struct args a;
	const struct pattern *pat = NULL;
	const char *colon, *p;
	size_t plen, n0 = out->n;
	uint32_t ns0 = out->nstreams;
	char vbuf[256], list[128];
	int rc = -1;

	if (pt)
		pt->valid = false;
	memset(&a, 0, sizeof(a));
	a.src = a.dst = a.a = a.b = -1;
	a.seed = seed;
	if (!c.spec[0])
		return spec_err(&c, 1, "empty spec (expected PATTERN[:key=value,...])");
	colon = strchr(c.spec, ':');
	plen = colon ? (size_t)(colon - c.spec) : strlen(c.spec);
	for (size_t i = 0; i < SIM_ARRAY_SIZE(patterns); i++)
		if (strlen(patterns[i].name) == plen && !strncmp(patterns[i].name, c.spec, plen))
			pat = &patterns[i];
	if (!pat) {
		const char *guess = NULL;

		/* "perm" -> "permutation": a unique prefix is a likely abbreviation */
		for (size_t i = 0; plen && i < SIM_ARRAY_SIZE(patterns); i++)
			if (!strncmp(patterns[i].name, c.spec, plen))
				guess = guess ? "" : patterns[i].name;
		return spec_err(&c, 1, "unknown pattern '%.*s' (patterns: p2p, pingpong, incast, "
				"alltoall, permutation, shift)%s%s%s", (int)(plen > 64 ? 64 : plen),
				c.spec, guess && *guess ? "; did you mean '" : ", or perftest for a sweep",
				guess && *guess ? guess : "", guess && *guess ? "'?" : "");
	}

	c.nh = net_nhosts(net);
	if (c.nh < 1)
		return spec_err(&c, 1, "the topology has no hosts (channel adapters with a connected port)");
	c.host = malloc(sizeof(int) * (size_t)c.nh);
	c.host_of = malloc(sizeof(int) * (size_t)(net->nnodes > 0 ? net->nnodes : 1));
	if (!c.host || !c.host_of) {
		spec_err(&c, 0, "out of memory");
		goto out;
	}
	for (int i = 0; i < net->nnodes; i++)
		c.host_of[i] = -1;
	for (int k = 0; k < c.nh; k++) {
		c.host[k] = net_host(net, k);
		if (c.host[k] >= 0 && c.host[k] < net->nnodes)
			c.host_of[c.host[k]] = k;
	}

	/* key=value items, each validated as it is read */
	for (p = colon ? colon + 1 : NULL; p; ) {
		const char *comma = strchr(p, ','), *eq;
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		int col = (int)(p - c.spec) + 1, key = -1;

		eq = memchr(p, '=', len);
		if (!len) {
			spec_err(&c, col, "empty item (expected key=value)");
			goto out;
		}
		if (!eq) {
			spec_err(&c, col, "'%.*s': expected key=value", (int)(len > 64 ? 64 : len), p);
			goto out;
		}
		for (int i = 0; i < NKEYS; i++)
			if (strlen(key_names[i]) == (size_t)(eq - p) &&
			    !strncmp(key_names[i], p, (size_t)(eq - p)))
				key = i;
		if (key < 0 || !(pat->keys & (1u << key))) {
			key_list(pat->keys, list, sizeof(list));
			spec_err(&c, col, "unknown key '%.*s' for %s (valid: %s)",
				 (int)(eq - p > 64 ? 64 : eq - p), p, pat->name, list);
			goto out;
		}
		if (a.given & (1u << key)) {
			spec_err(&c, col, "%s given twice", key_names[key]);
			goto out;
		}
		if ((size_t)(p + len - eq - 1) >= sizeof(vbuf)) {
			spec_err(&c, col, "%s: value too long", key_names[key]);
			goto out;
		}
		snprintf(vbuf, sizeof(vbuf), "%.*s", (int)(p + len - eq - 1), eq + 1);
		if (!vbuf[0]) {
			spec_err(&c, (int)(eq - c.spec) + 2, "%s: empty value", key_names[key]);
			goto out;
		}
		if (parse_value(&c, &a, key, vbuf, (int)(eq - c.spec) + 2))
			goto out;
		a.given |= 1u << key;
		p = comma ? comma + 1 : NULL;
	}
	if (pat->required & ~a.given) {
		unsigned miss = pat->required & ~a.given;

		key_list(miss, list, sizeof(list));
		spec_err(&c, (int)strlen(c.spec) + 1, "%s needs %s= (missing: %s)", pat->name,
			 key_names[__builtin_ctz(miss)], list);
		goto out;
	}
	if (!(a.given & A_COUNT))
		a.count = pat->count_default;
	if (check_qp(&c, &a, pat))
		goto out;
	c.stream = out->nstreams;
	rc = pat->gen(&c, &a);
	if (rc) {
		out->n = n0;	/* nothing half-written */
		out->nstreams = ns0;
		if (pt)
			pt->valid = false;
	}
out:
	free(c.host);
	free(c.host_of);
	return rc;
}
