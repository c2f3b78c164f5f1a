/* SPDX-License-Identifier: MIT */
/*
 * sm_cdg.c - the channel dependency graph of a routing, and its cycles.
 *
 * What it models: Dally and Seitz's condition for deadlock-free routing
 * ("Deadlock-free message routing in multiprocessor interconnection
 * networks", IEEE Trans. Computers C-36(5):547-553, 1987): a deterministic
 * routing cannot deadlock if its channel dependency graph is acyclic. In IB
 * terms a channel is a link direction on one VL (each has its own receive
 * buffer and credits, IBA 7.9.4), and the routing is the set of linear
 * forwarding tables (IBA 14.2.5.10): a packet for DLID d arriving at switch
 * S over channel a leaves over channel (S, LFT_S[d], same VL), so a depends
 * on it. A packet keeps its VL from hop to hop (one SL2VL table everywhere,
 * as in the simulator), so the graph splits into one component per VL.
 *
 * How: destination-based routing makes the paths to one DLID a tree, so
 * for each (DLID, VL) every switch is followed at most once: a walk from a
 * source stops at the first switch already done for that DLID and VL,
 * after adding the one dependency that enters it. Dependencies go into an
 * open-addressing hash set (50% load), then into a CSR array with sorted
 * successor lists, so the cycle found depends only on the LFTs. Cycles are
 * found with Tarjan's SCC algorithm written with an explicit stack (a 100k-
 * channel fabric would otherwise recurse 100k deep), and the cycle reported
 * is a shortest one through the lowest channel of the first cyclic SCC.
 *
 * Left out: a cycle is a necessary condition for a credit loop with this
 * routing, not proof that some workload fills it (that needs every buffer
 * on the cycle full at once; the run-time detector, fab_deadlock.c, catches
 * the real thing). Adaptive routing, VL changes along a path (SL2VL per
 * port, as LASH and DFSSSP use via per-port tables) and multicast are not
 * modelled; a VL per (source, DLID) covers what SL-based engines need.
 */
#include "models/sm/sm_cdg.h"

#include "models/sm/sm_mp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/sm/sm.h"

/* ---- a set of dependencies (a << 32 | b) -------------------------------- */

#define ESET_EMPTY UINT64_MAX	/* no channel id is UINT32_MAX, so no key is this */

struct eset {
	uint64_t *v;
	size_t cap, n;		/* cap is a power of two */
	int bits;
};

static size_t eset_slot(const struct eset *s, uint64_t key)
{
	/* Fibonacci hashing: consecutive channel ids spread over the table. */
	return (size_t)((key * 0x9e3779b97f4a7c15ULL) >> (64 - s->bits));
}

static int eset_init(struct eset *s, int bits)
{
	s->bits = bits;
	s->cap = (size_t)1 << bits;
	s->n = 0;
	s->v = malloc(s->cap * sizeof(*s->v));
	if (!s->v)
		return -1;
	memset(s->v, 0xff, s->cap * sizeof(*s->v));
	return 0;
}

static int eset_add(struct eset *s, uint64_t key);

static int eset_grow(struct eset *s)
{
	struct eset t;

	if (eset_init(&t, s->bits + 1))
		return -1;
	for (size_t i = 0; i < s->cap; i++)
		if (s->v[i] != ESET_EMPTY)
			eset_add(&t, s->v[i]);	/* cannot grow again: half full */
	free(s->v);
	*s = t;
	return 0;
}

/* 0 added or present, -1 out of memory. */
static int eset_add(struct eset *s, uint64_t key)
{
	size_t i = eset_slot(s, key);

	while (s->v[i] != ESET_EMPTY) {
		if (s->v[i] == key)
			return 0;
		i = (i + 1) & (s->cap - 1);
	}
	s->v[i] = key;
	if (++s->n * 2 > s->cap)
		return eset_grow(s);
	return 0;
}

/* ---- building ------------------------------------------------------------ */

enum walk_res { WALK_OK, WALK_UNROUTED, WALK_LOOP };

struct build {
	struct sm_cdg *g;
	const struct net *n;
	struct eset set;
	uint8_t *used;		/* per channel: carries a pair */
	/* per node: the (DLID, VL)s whose walk from here is known */
	net_lid_t *done_lid;
	uint16_t *done_vls, *bad_vls, *loop_vls;
	uint64_t *onpath;	/* walk id that last passed this node */
	uint64_t walk_id;
	int *path;		/* switches of the current walk */
	/* adaptive routing's pass: the channels a destination's packets can
	 * reach, from the sources' first channels */
	uint32_t *seen, stamp;	/* per channel: the pass that reached it */
	uint32_t *sw_seen;	/* per node: the pass that counted its choice */
	uint32_t *queue, nq;
};

static uint32_t chan_of(const struct sm_cdg *g, int node, int port, int vl)
{
	return (g->pe_base[node] + (uint32_t)port) * (uint32_t)g->nvls + (uint32_t)vl;
}

static void note_bad(struct build *b, int src, int sport, net_lid_t dlid,
		     const char *fmt, const char *where, int port)
{
	const struct net *n = b->n;
	char why[128];
	int dn = n->lid_node[dlid];

	if (b->g->first_bad[0])
		return;
	snprintf(why, sizeof(why), fmt, where, port);
	snprintf(b->g->first_bad, sizeof(b->g->first_bad),
		 "%s[%d] -> LID %u (%s[%u]): %s", n->nodes[src].desc, sport,
		 dlid, n->nodes[dn].desc, n->lid_port[dlid], why);
}

/*
 * Follow the LFTs from CA port (src, sport) to dlid on VL vl, adding each
 * dependency on the way. Returns a walk_res, or -1 when out of memory.
 */
static int walk(struct build *b, int src, int sport, net_lid_t dlid, int vl)
{
	const struct net *n = b->n;
	struct sm_cdg *g = b->g;
	const struct net_port *pp = &n->nodes[src].ports[sport];
	uint32_t c = chan_of(g, src, sport, vl);
	int cur = pp->remote_node, arr = pp->remote_port, k = 0;
	uint16_t bit = (uint16_t)(1u << vl);
	int res;

	b->walk_id++;
	b->used[c] = 1;
	for (;;) {
		const struct net_node *nd = &n->nodes[cur];
		int out;
		uint32_t c2;

		if (nd->type != NET_SWITCH) {
			res = cur == n->lid_node[dlid] && arr == n->lid_port[dlid] ?
			      WALK_OK : WALK_UNROUTED;
			if (res != WALK_OK)
				note_bad(b, src, sport, dlid, "delivered to %s[%d] instead",
					 nd->desc, arr);
			break;
		}
		out = nd->lft && dlid < nd->lft_len ? nd->lft[dlid] : SM_NO_ROUTE;
		if (out == SM_NO_ROUTE || out == 0 || out > nd->nports ||
		    nd->ports[out].remote_node < 0) {
			res = WALK_UNROUTED;
			note_bad(b, src, sport, dlid,
				 out == SM_NO_ROUTE ? "%s has no route (LFT entry %d)" :
				 out == 0 ? "%s sends it to its own port %d" :
				 "%s sends it to unconnected port %d", nd->desc,
				 out == SM_NO_ROUTE ? SM_NO_ROUTE : out);
			break;
		}
		c2 = chan_of(g, cur, out, vl);
		if (eset_add(&b->set, (uint64_t)c << 32 | c2))
			return -1;
		if (b->done_lid[cur] == dlid && (b->done_vls[cur] & bit)) {
			res = b->loop_vls[cur] & bit ? WALK_LOOP :
			      b->bad_vls[cur] & bit ? WALK_UNROUTED : WALK_OK;
			break;
		}
		if (b->onpath[cur] == b->walk_id) {
			res = WALK_LOOP;
			note_bad(b, src, sport, dlid, "the LFTs loop back to %s (port %d)",
				 nd->desc, out);
			break;
		}
		b->onpath[cur] = b->walk_id;
		b->path[k++] = cur;
		b->used[c2] = 1;
		c = c2;
		arr = nd->ports[out].remote_port;
		cur = nd->ports[out].remote_node;
	}
	/* Everything from these switches on is now known for (dlid, vl). */
	for (int i = 0; i < k; i++) {
		int s = b->path[i];

		if (b->done_lid[s] != dlid) {
			b->done_lid[s] = dlid;
			b->done_vls[s] = b->bad_vls[s] = b->loop_vls[s] = 0;
		}
		b->done_vls[s] |= bit;
		if (res == WALK_UNROUTED)
			b->bad_vls[s] |= bit;
		if (res == WALK_LOOP)
			b->loop_vls[s] |= bit;
	}
	return res;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Hash set -> CSR with ascending successor lists. */
static int to_csr(struct build *b)
{
	struct sm_cdg *g = b->g;
	uint32_t *fill;

	g->off = calloc((size_t)g->nchan + 1, sizeof(*g->off));
	g->adj = malloc((b->set.n ? b->set.n : 1) * sizeof(*g->adj));
	fill = malloc(((size_t)g->nchan + 1) * sizeof(*fill));
	if (!g->off || !g->adj || !fill) {
		free(fill);
		return -1;
	}
	for (size_t i = 0; i < b->set.cap; i++)
		if (b->set.v[i] != ESET_EMPTY)
			g->off[(b->set.v[i] >> 32) + 1]++;
	for (uint32_t c = 0; c < g->nchan; c++)
		g->off[c + 1] += g->off[c];
	memcpy(fill, g->off, ((size_t)g->nchan + 1) * sizeof(*fill));
	for (size_t i = 0; i < b->set.cap; i++)
		if (b->set.v[i] != ESET_EMPTY)
			g->adj[fill[b->set.v[i] >> 32]++] = (uint32_t)b->set.v[i];
	for (uint32_t c = 0; c < g->nchan; c++)
		if (g->off[c + 1] - g->off[c] > 1)
			qsort(g->adj + g->off[c], g->off[c + 1] - g->off[c],
			      sizeof(*g->adj), cmp_u32);
	g->nedges = b->set.n;
	free(fill);
	return 0;
}

static void build_free(struct build *b)
{
	free(b->set.v);
	free(b->used);
	free(b->done_lid);
	free(b->done_vls);
	free(b->bad_vls);
	free(b->loop_vls);
	free(b->onpath);
	free(b->path);
	free(b->seen);
	free(b->sw_seen);
	free(b->queue);
}

/*
 * Adaptive routing: from the first channels of every source towards dlid
 * (b->queue[0 .. nq)), every channel its packets can reach when each
 * switch may use any port of its set (the LFT's where it has none), and
 * the dependencies on the way. Returns 0 or -1 (out of memory).
 */
static int ar_pass(struct build *b, const struct sm_cdg_opts *o, net_lid_t dlid)
{
	const struct net *n = b->n;
	struct sm_cdg *g = b->g;
	uint32_t head = 0;

	b->stamp++;
	for (uint32_t i = 0; i < b->nq; i++)
		b->seen[b->queue[i]] = b->stamp;
	while (head < b->nq) {
		uint32_t c = b->queue[head++];
		int node, port, vl;

		sm_cdg_chan_parts(g, c, &node, &port, &vl);
		const struct net_port *np = &n->nodes[node].ports[port];
		const struct net_node *sw = &n->nodes[np->remote_node];
		const uint8_t *ports;
		uint8_t lft;
		uint32_t cnt;

		if (sw->type != NET_SWITCH)
			continue;
		cnt = sm_mp_ports(o->mp, &o->mp_sw[np->remote_node], dlid, &ports);
		if (cnt > 1 && b->sw_seen[np->remote_node] != b->stamp) {
			b->sw_seen[np->remote_node] = b->stamp;
			g->ar_choices++;
		}
		if (cnt == 0) {
			lft = sw->lft && dlid < sw->lft_len ? sw->lft[dlid] : SM_NO_ROUTE;
			if (lft == SM_NO_ROUTE || lft == 0 || lft > sw->nports ||
			    sw->ports[lft].remote_node < 0)
				continue;	/* the LFT walk reported it */
			ports = &lft;
			cnt = 1;
		}
		for (uint32_t k = 0; k < cnt; k++) {
			uint32_t c2 = chan_of(g, np->remote_node, ports[k], vl);

			if (eset_add(&b->set, (uint64_t)c << 32 | c2))
				return -1;
			b->used[c2] = 1;
			if (b->seen[c2] != b->stamp) {
				b->seen[c2] = b->stamp;
				b->queue[b->nq++] = c2;
			}
		}
	}
	return 0;
}

int sm_cdg_build(struct sm_cdg *g, const struct net *n,
		 const struct sm_cdg_opts *o, struct sim_diag *d)
{
	struct build b = { .g = g, .n = n };
	uint64_t npe = 0;
	int nvls = o && o->nvls ? o->nvls : 1;
	int rc = -1;

	memset(g, 0, sizeof(*g));
	g->net = n;
	if (nvls < 1 || nvls > SM_CDG_MAX_VLS)
		return sim_diag_set(d, NULL, 0, 0, "channel dependency graph: %d VLs (1..%d)",
				    nvls, SM_CDG_MAX_VLS);
	if (!n->lid_node)
		return sim_diag_set(d, NULL, 0, 0,
				    "channel dependency graph: LIDs are not assigned (route the fabric first)");
	g->nvls = nvls;
	g->pe_base = malloc(((size_t)n->nnodes + 1) * sizeof(*g->pe_base));
	if (!g->pe_base)
		goto nomem;
	for (int i = 0; i < n->nnodes; i++) {
		g->pe_base[i] = (uint32_t)npe;
		npe += (uint64_t)n->nodes[i].nports + 1;
	}
	g->pe_base[n->nnodes] = (uint32_t)npe;
	if (npe * (uint64_t)nvls >= UINT32_MAX) {
		sim_diag_set(d, NULL, 0, 0, "channel dependency graph: too many channels (%llu)",
			     (unsigned long long)(npe * nvls));
		goto fail;
	}
	g->npe = (uint32_t)npe;
	g->nchan = (uint32_t)npe * (uint32_t)nvls;

	b.used = calloc(g->nchan ? g->nchan : 1, 1);
	b.done_lid = calloc((size_t)n->nnodes + 1, sizeof(*b.done_lid));
	b.done_vls = calloc((size_t)n->nnodes + 1, sizeof(*b.done_vls));
	b.bad_vls = calloc((size_t)n->nnodes + 1, sizeof(*b.bad_vls));
	b.loop_vls = calloc((size_t)n->nnodes + 1, sizeof(*b.loop_vls));
	b.onpath = calloc((size_t)n->nnodes + 1, sizeof(*b.onpath));
	b.path = malloc(((size_t)n->nnodes + 1) * sizeof(*b.path));
	if (!b.used || !b.done_lid || !b.done_vls || !b.bad_vls || !b.loop_vls ||
	    !b.onpath || !b.path || eset_init(&b.set, 12))
		goto nomem;
	if (o && o->mp) {
		b.seen = calloc((size_t)g->nchan + 1, sizeof(*b.seen));
		b.sw_seen = calloc((size_t)n->nnodes + 1, sizeof(*b.sw_seen));
		b.queue = malloc(((size_t)g->nchan + 1) * sizeof(*b.queue));
		if (!b.seen || !b.sw_seen || !b.queue)
			goto nomem;
	}

	for (uint32_t l = 1; l <= n->max_lid; l++) {
		int dn = n->lid_node[l];

		if (dn < 0 || n->nodes[dn].type == NET_SWITCH)
			continue;
		b.nq = 0;
		for (int s = 0; s < n->nnodes; s++) {
			const struct net_node *sn = &n->nodes[s];

			if (sn->type == NET_SWITCH)
				continue;
			for (int p = 1; p <= sn->nports; p++) {
				int vl = 0, r;

				if (sn->ports[p].remote_node < 0 ||
				    (s == dn && p == n->lid_port[l]))
					continue;
				if (o && o->vl_of) {
					vl = o->vl_of(o->ctx, s, p, (net_lid_t)l);
					if (vl < 0)
						continue;
					if (vl >= nvls) {
						sim_diag_set(d, NULL, 0, 0,
							     "channel dependency graph: VL %d for %s[%d] -> LID %u is not below %d",
							     vl, sn->desc, p, l, nvls);
						goto fail;
					}
				}
				r = walk(&b, s, p, (net_lid_t)l, vl);
				if (r < 0)
					goto nomem;
				if (b.queue)	/* adaptive routing's pass starts here */
					b.queue[b.nq++] = chan_of(g, s, p, vl);
				g->pairs++;
				if (r == WALK_UNROUTED)
					g->pairs_unrouted++;
				else if (r == WALK_LOOP)
					g->pairs_looping++;
			}
		}
		if (b.queue && ar_pass(&b, o, (net_lid_t)l))
			goto nomem;
	}
	if (to_csr(&b))
		goto nomem;
	for (uint32_t c = 0; c < g->nchan; c++)
		g->nused += b.used[c];
	rc = 0;
	goto out;
nomem:
	sim_diag_set(d, NULL, 0, 0, "channel dependency graph: out of memory");
fail:
	sm_cdg_free(g);
out:
	build_free(&b);
	return rc;
}

void sm_cdg_free(struct sm_cdg *g)
{
	free(g->pe_base);
	free(g->off);
	free(g->adj);
	memset(g, 0, sizeof(*g));
}

int64_t sm_cdg_chan(const struct sm_cdg *g, int node, int port, int vl)
{
	const struct net *n = g->net;

	if (!g->pe_base || node < 0 || node >= n->nnodes || port < 1 ||
	    port > n->nodes[node].nports || vl < 0 || vl >= g->nvls ||
	    n->nodes[node].ports[port].remote_node < 0)
		return -1;
	return chan_of(g, node, port, vl);
}

void sm_cdg_chan_parts(const struct sm_cdg *g, uint32_t chan, int *node,
		       int *port, int *vl)
{
	uint32_t pe = chan / (uint32_t)g->nvls;
	int lo = 0, hi = g->net->nnodes - 1;

	/* The last node whose first port end is <= pe. */
	while (lo < hi) {
		int mid = lo + (hi - lo + 1) / 2;

		if (g->pe_base[mid] <= pe)
			lo = mid;
		else
			hi = mid - 1;
	}
	*node = lo;
	*port = (int)(pe - g->pe_base[lo]);
	*vl = (int)(chan % (uint32_t)g->nvls);
}

bool sm_cdg_has_edge(const struct sm_cdg *g, uint32_t a, uint32_t b)
{
	uint32_t lo, hi;

	if (!g->off || a >= g->nchan)
		return false;
	lo = g->off[a];
	hi = g->off[a + 1];
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (g->adj[mid] == b)
			return true;
		if (g->adj[mid] < b)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* ---- cycles -------------------------------------------------------------- */

#define UNSEEN UINT32_MAX

struct tarjan {
	uint32_t *index, *low, *comp;
	uint32_t *stk, nstk;		/* Tarjan's stack */
	uint32_t *cs_node, *cs_edge;	/* the explicit call stack */
	uint8_t *onstk;
};

static void tarjan_free(struct tarjan *t)
{
	free(t->index);
	free(t->low);
	free(t->comp);
	free(t->stk);
	free(t->cs_node);
	free(t->cs_edge);
	free(t->onstk);
}

/*
 * The shortest cycle through s inside its component (BFS), into c. Uses
 * t->index as "seen" and t->low as the BFS parent.
 */
static int shortest_cycle(const struct sm_cdg *g, struct tarjan *t, uint32_t s,
			  struct sm_cdg_cycle *c)
{
	uint32_t *q = t->stk, head = 0, tail = 0, cs = t->comp[s], last = UNSEEN;

	for (uint32_t i = 0; i < g->nchan; i++)
		t->index[i] = UNSEEN;
	t->index[s] = 0;
	q[tail++] = s;
	while (head < tail && last == UNSEEN) {
		uint32_t u = q[head++];

		for (uint32_t e = g->off[u]; e < g->off[u + 1]; e++) {
			uint32_t w = g->adj[e];

			if (t->comp[w] != cs)
				continue;
			if (w == s) {
				last = u;
				break;
			}
			if (t->index[w] == UNSEEN) {
				t->index[w] = 0;
				t->low[w] = u;
				q[tail++] = w;
			}
		}
	}
	if (last == UNSEEN)
		return -1;	/* cannot happen: s is on a cycle */
	c->len = 1;
	for (uint32_t u = last; u != s; u = t->low[u])
		c->len++;
	c->chan = malloc(c->len * sizeof(*c->chan));
	if (!c->chan)
		return -1;
	uint32_t i = c->len;

	for (uint32_t u = last; u != s; u = t->low[u])
		c->chan[--i] = u;
	c->chan[0] = s;
	return 0;
}

int sm_cdg_find_cycle(const struct sm_cdg *g, struct sm_cdg_cycle *c,
		      struct sim_diag *d)
{
	struct tarjan t = { 0 };
	size_t nc = g->nchan ? g->nchan : 1;
	uint32_t next_index = 0, ncomp = 0, best = UNSEEN;
	int rc = -1;

	memset(c, 0, sizeof(*c));
	c->vl = -1;
	if (!g->off)
		return 0;
	t.index = malloc(nc * sizeof(uint32_t));
	t.low = malloc(nc * sizeof(uint32_t));
	t.comp = malloc(nc * sizeof(uint32_t));
	t.stk = malloc(nc * sizeof(uint32_t));
	t.cs_node = malloc(nc * sizeof(uint32_t));
	t.cs_edge = malloc(nc * sizeof(uint32_t));
	t.onstk = calloc(nc, 1);
	if (!t.index || !t.low || !t.comp || !t.stk || !t.cs_node || !t.cs_edge || !t.onstk)
		goto nomem;
	for (uint32_t i = 0; i < g->nchan; i++)
		t.index[i] = t.comp[i] = UNSEEN;

	for (uint32_t root = 0; root < g->nchan; root++) {
		uint32_t sp = 0;

		/* A channel without successors is its own acyclic component. */
		if (t.index[root] != UNSEEN || g->off[root] == g->off[root + 1])
			continue;
		t.index[root] = t.low[root] = next_index++;
		t.stk[t.nstk++] = root;
		t.onstk[root] = 1;
		t.cs_node[sp] = root;
		t.cs_edge[sp++] = g->off[root];
		while (sp) {
			uint32_t v = t.cs_node[sp - 1];

			if (t.cs_edge[sp - 1] < g->off[v + 1]) {
				uint32_t w = g->adj[t.cs_edge[sp - 1]++];

				if (t.index[w] == UNSEEN) {
					t.index[w] = t.low[w] = next_index++;
					t.stk[t.nstk++] = w;
					t.onstk[w] = 1;
					t.cs_node[sp] = w;
					t.cs_edge[sp++] = g->off[w];
				} else if (t.onstk[w] && t.index[w] < t.low[v]) {
					t.low[v] = t.index[w];
				}
				continue;
			}
			/* v is finished. */
			sp--;
			if (sp && t.low[v] < t.low[t.cs_node[sp - 1]])
				t.low[t.cs_node[sp - 1]] = t.low[v];
			if (t.low[v] != t.index[v])
				continue;
			/* v roots a component: pop it. */
			uint32_t size = 0, minc = UNSEEN, w;

			do {
				w = t.stk[--t.nstk];
				t.onstk[w] = 0;
				t.comp[w] = ncomp;
				if (w < minc)
					minc = w;
				size++;
			} while (w != v);
			ncomp++;
			if (size > 1 || sm_cdg_has_edge(g, v, v)) {
				c->nsccs++;
				c->nchans += size;
				c->vl_mask |= (uint16_t)(1u << (v % (uint32_t)g->nvls));
				if (minc < best)
					best = minc;
			}
		}
	}
	rc = 0;
	if (best != UNSEEN) {
		if (shortest_cycle(g, &t, best, c))
			goto nomem;
		c->vl = (int)(best % (uint32_t)g->nvls);
		rc = 1;
	}
	tarjan_free(&t);
	return rc;
nomem:
	tarjan_free(&t);
	sm_cdg_cycle_free(c);
	return sim_diag_set(d, NULL, 0, 0, "channel dependency graph: out of memory");
}

void sm_cdg_cycle_free(struct sm_cdg_cycle *c)
{
	free(c->chan);
	memset(c, 0, sizeof(*c));
	c->vl = -1;
}

int sm_cdg_chan_str(const struct sm_cdg *g, uint32_t chan, char *buf, size_t len)
{
	int node, port, vl;

	if (!g->pe_base || chan >= g->nchan)
		return snprintf(buf, len, "?");
	sm_cdg_chan_parts(g, chan, &node, &port, &vl);
	return snprintf(buf, len, "%s[%d]", g->net->nodes[node].desc, port);
}

int sm_cdg_cycle_str(const struct sm_cdg *g, const struct sm_cdg_cycle *c,
		     char *buf, size_t len)
{
	size_t need = 0;
	char one[320];

	if (len)
		buf[0] = '\0';
	for (uint32_t i = 0; i <= c->len && c->len; i++) {
		int k = sm_cdg_chan_str(g, c->chan[i % c->len], one, sizeof(one));
		const char *sep = i ? " -> " : "";

		if (k < 0)
			return -1;
		if (need + strlen(sep) + strlen(one) < len) {
			strcat(buf + need, sep);
			strcat(buf + need, one);
		} else if (need < len) {
			/* Truncate like snprintf: as much as fits. */
			snprintf(buf + need, len - need, "%s%s", sep, one);
		}
		need += strlen(sep) + strlen(one);
	}
	return (int)need;
}
