/* SPDX-License-Identifier: MIT */
/*
 * fab_deadlock.c - why a stalled fabric stalled: the run-time credit-loop
 * detector.
 *
 * fab_run() calls this when the event list is empty while messages are
 * still outstanding. Nothing can move any more, so the state is final and
 * the wait-for relation is exact. Its vertices are the receive buffers
 * (input port, VL) and the HCA send queues (port, VL):
 *  - a switch input buffer whose head packet wants output O waits for the
 *    buffer at the other end of O, on the same VL (the head may start only
 *    when the whole packet fits O's credits, IBA 7.9.4; a packet keeps its
 *    VL, one SL2VL table everywhere);
 *  - an HCA with data on VL v that does not fit its credits waits for the
 *    switch input buffer its cable feeds.
 * Each buffer has one head per VL, so each vertex waits for at most one
 * other: the graph is functional, a cycle is found by following successors
 * with a visit stamp (iterative, O(ports x VLs)), and every cycle is the
 * credit loop of Dally and Seitz (IEEE Trans. Computers C-36(5), 1987) made
 * real: each buffer on it is full of packets whose heads wait for the next
 * one. When there is no cycle the chains end somewhere else (a CA that does
 * not return credits, a head that is not waiting for credits: a model bug),
 * and the report says where, and how many buffers wait behind it. If
 * nothing is buffered, the messages left are those that wait for a lost one.
 *
 * The report must fit fab_run()'s diagnostic (a few hundred bytes): a long
 * loop is shortened in the middle, "... (N more hops) ...". Left out: VL15,
 * which has no credits and so cannot deadlock.
 */
#include "models/fabric/fab_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum dl_kind {
	DL_NONE,	/* empty buffer or idle sender */
	DL_SW_WAIT,	/* switch input: head waits for the peer switch's buffer */
	DL_SW_WAIT_CA,	/* switch input: head waits for credits from a CA */
	DL_SW_IDLE,	/* switch input: head present but not waiting for credits */
	DL_HCA_WAIT,	/* HCA: data on this VL, no credits from the switch */
	DL_HCA_WAIT_CA,	/* HCA cabled to an HCA: no credits from it */
};

struct dl {
	const struct fab *f;
	int nvl;
	int nv;			/* vertices: nports * nvl */
	int *base;		/* node -> first (node, port) slot */
	int *idx_of;		/* (node, port) slot -> port index */
	uint8_t *kind;
	int *succ;		/* -1: none */
	int *stamp;
	int *term;		/* chain end of a vertex (no-cycle report) */
	int *stack;
};

static void dl_free(struct dl *g)
{
	free(g->base);
	free(g->idx_of);
	free(g->kind);
	free(g->succ);
	free(g->stamp);
	free(g->term);
	free(g->stack);
}

static const char *node_name(const struct fab *f, const struct fab_node *n)
{
	const struct net_node *nn = &f->net->nodes[n->idx];

	return nn->desc ? nn->desc : nn->id;
}

static const char *lid_name(const struct fab *f, net_lid_t lid)
{
	const struct net *net = f->net;

	if (!net->lid_node || lid == 0 || lid > net->max_lid || net->lid_node[lid] < 0)
		return "?";
	return net->nodes[net->lid_node[lid]].desc;
}

static const struct port *vport(const struct dl *g, int u)
{
	return g->f->ports[u / g->nvl];
}

static int vertex(const struct dl *g, const struct port *pt, int vl)
{
	return g->idx_of[g->base[pt->node->idx] + pt->port_no] * g->nvl + vl;
}

/* The output port the head of switch input (pt, vl) wants; NULL if none. */
static const struct port *head_out(const struct fab *f, const struct port *pt,
				       int vl, const struct pkt **head)
{
	if (pt->node->type != NET_SWITCH || !pt->vl[vl].inq.len)
		return NULL;
	*head = fab_pkt(f, pt->vl[vl].inq.head);
	if ((*head)->out_port > pt->node->nports)
		return NULL;
	return pt->node->ports[(*head)->out_port];
}

static void classify(struct dl *g)
{
	const struct fab *f = g->f;

	for (int pi = 0; pi < f->nports; pi++) {
		struct port *pt = f->ports[pi];
		uint32_t blocks[PORT_NVL];
		uint16_t has = 0, ready = 0;

		if (pt->node->type != NET_SWITCH)
			ready = f->node_ops[pt->kind]->candidates(pt, blocks, &has);
		for (int v = 0; v < g->nvl; v++) {
			int u = pi * g->nvl + v;
			const struct pkt *h;
			const struct port *out;

			g->succ[u] = -1;
			g->kind[u] = DL_NONE;
			if (pt->node->type != NET_SWITCH) {
				if (!(has & (1u << v)) || (ready & (1u << v)) || pt->tx_busy)
					continue;
				g->kind[u] = pt->peer->node->type == NET_SWITCH ?
					     DL_HCA_WAIT : DL_HCA_WAIT_CA;
				if (g->kind[u] == DL_HCA_WAIT)
					g->succ[u] = vertex(g, pt->peer, v);
				continue;
			}
			if (!pt->vl[v].inq.len)
				continue;
			out = head_out(f, pt, v, &h);
			if (!out || pt->in_flight >= f->p.sw_speedup || out->tx_busy ||
			    port_fits(out, (uint8_t)v, h->blocks)) {
				g->kind[u] = DL_SW_IDLE;
				continue;
			}
			if (out->peer->node->type == NET_SWITCH) {
				g->kind[u] = DL_SW_WAIT;
				g->succ[u] = vertex(g, out->peer, v);
			} else {
				g->kind[u] = DL_SW_WAIT_CA;
			}
		}
	}
}

/* ---- text that must fit the caller's buffer ------------------------------ */

struct out {
	char *buf;
	size_t len, used;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (!o->len || o->used >= o->len - 1)
		return;
	va_start(ap, fmt);
	k = vsnprintf(o->buf + o->used, o->len - o->used, fmt, ap);
	va_end(ap);
	if (k > 0)
		o->used += (size_t)k < o->len - o->used ? (size_t)k : o->len - o->used - 1;
}

/*
 * " -> in[p] (full, head for D) -> out[q]": the hop from u into w = succ(u).
 * "full" when the head waiting in u does not fit w's free space; else the
 * space is there but its credits never came back.
 */
static void hop_text(const struct dl *g, int u, int w, char *s, size_t len)
{
	const struct fab *f = g->f;
	const struct port *in = vport(g, w), *out;
	const struct pkt *h = NULL, *waiting = NULL;
	int v = w % g->nvl;
	uint32_t free_blocks = in->vl[v].rx_cap - in->vl[v].rx_used;
	int n;

	if (!head_out(f, vport(g, u), v, &waiting))
		waiting = NULL;
	out = head_out(f, in, v, &h);
	n = snprintf(s, len, " -> %s[%u] (", node_name(f, in->node), in->port_no);
	if (n < 0 || (size_t)n >= len)
		return;
	if (!out || !h) {
		snprintf(s + n, len - n, "%u of %u blocks free)", free_blocks, in->vl[v].rx_cap);
		return;
	}
	snprintf(s + n, len - n, "%s, head for %s) -> %s[%u]",
		 !waiting || free_blocks < waiting->blocks ? "full" : "credits not returned",
		 lid_name(f, h->dlid), node_name(f, out->node), out->port_no);
}

static void report_cycle(struct dl *g, int start, int ncycles, struct out *o)
{
	const struct fab *f = g->f;
	int len = 0, u = start, v = start % g->nvl;
	uint64_t stuck = 0, total = 0;
	const struct pkt *h;
	const struct port *out;
	char (*hop)[320];	/* NodeDescription is at most 64 bytes (IBA 14.2.5.2) */
	size_t sum = 0, head_room;

	do {
		stuck += vport(g, u)->vl[v].inq.len;
		len++;
		u = g->succ[u];
	} while (u != start);
	for (int pi = 0; pi < f->nports; pi++)
		for (int k = 0; k < PORT_NVL; k++)
			total += f->ports[pi]->vl[k].inq.len;
	put(o, "credit loop on VL %d through %d switch%s (%llu of the %llu stuck packets are in its buffers%s",
	    v, len, len == 1 ? "" : "es", (unsigned long long)stuck,
	    (unsigned long long)total, ncycles > 1 ? "" : ")");
	if (ncycles > 1)
		put(o, "; %d more loop%s)", ncycles - 1, ncycles > 2 ? "s" : "");
	out = head_out(f, vport(g, start), v, &h);
	put(o, ": %s[%u]", node_name(f, out->node), out->port_no);

	hop = malloc((size_t)len * sizeof(*hop));
	if (!hop) {
		put(o, " -> ... (out of memory)");
		return;
	}
	u = start;
	for (int i = 0; i < len; i++) {
		hop_text(g, u, g->succ[u], hop[i], sizeof(hop[i]));
		sum += strlen(hop[i]);
		u = g->succ[u];
	}
	/* All of it if it fits, else the first hops, "...", and the last one. */
	head_room = o->len > o->used ? o->len - o->used - 1 : 0;
	if (sum <= head_room) {
		for (int i = 0; i < len; i++)
			put(o, "%s", hop[i]);
	} else {
		size_t tail = strlen(hop[len - 1]) + 40, used = 0;
		int i = 0;

		while (i < len - 1 && used + strlen(hop[i]) + tail <= head_room)
			used += strlen(hop[i++]);
		for (int k = 0; k < i; k++)
			put(o, "%s", hop[k]);
		put(o, " -> ... (%d more hop%s) ...%s", len - 1 - i,
		    len - 1 - i == 1 ? "" : "s", hop[len - 1]);
	}
	free(hop);
}

/* The end of u's chain of waits (iterative, memoised in g->term). */
static int chain_end(struct dl *g, int u)
{
	int sp = 0, t;

	while (g->term[u] == -2 && g->succ[u] >= 0 && g->stamp[u] != -3) {
		g->stamp[u] = -3;	/* on the current chain (no cycle here, but be safe) */
		g->stack[sp++] = u;
		u = g->succ[u];
	}
	t = g->term[u] != -2 ? g->term[u] : u;
	g->term[u] = t;
	while (sp)
		g->term[g->stack[--sp]] = t;
	return t;
}

static void describe_end(const struct dl *g, int t, struct out *o)
{
	const struct fab *f = g->f;
	const struct port *pt = vport(g, t), *out;
	const struct pkt *h = NULL;
	int v = t % g->nvl;

	switch (g->kind[t]) {
	case DL_SW_WAIT_CA:
		out = head_out(f, pt, v, &h);
		put(o, "%s[%u] VL %d holds %u packets; its head for %s waits for credits from %s[%u], which returns none",
		    node_name(f, pt->node), pt->port_no, v, pt->vl[v].inq.len, lid_name(f, h->dlid),
		    node_name(f, out->peer->node), out->peer->port_no);
		break;
	case DL_SW_IDLE:
		out = head_out(f, pt, v, &h);
		put(o, "%s[%u] VL %d holds %u packets; its head for %s is not waiting for credits (output %s)",
		    node_name(f, pt->node), pt->port_no, v, pt->vl[v].inq.len, lid_name(f, h->dlid),
		    out ? (out->tx_busy ? "busy" : "idle") : "missing");
		break;
	case DL_HCA_WAIT_CA:
		put(o, "%s[%u] has data on VL %d but no credits from %s[%u]",
		    node_name(f, pt->node), pt->port_no, v, node_name(f, pt->peer->node),
		    pt->peer->port_no);
		break;
	default:
		/* a buffer that somebody waits for but that holds nothing */
		put(o, "%s[%u] VL %d holds %u of %u blocks and no packet, yet its sender has no credits (flow-control update not sent?)",
		    node_name(f, pt->node), pt->port_no, v, pt->vl[v].rx_used, pt->vl[v].rx_cap);
		break;
	}
}


/* The messages left when nothing waits for credits, and those of them
 * waiting for a message that will never be delivered. */
struct left_count {
	const struct fab *f;
	uint64_t left, orphans;
};

static void count_left(const struct fab_msg *m, uint32_t id, void *ctx)
{
	struct left_count *lc = ctx;
	struct fab_msg tmp;
	const struct fab_msg *a;

	(void)id;
	if (m->done || m->lost || m->after < 0)
		return;
	a = fab_msg_state(lc->f, (uint32_t)m->after);
	/* finished (no longer in flight, when the list is compact) is done
	 * or lost; a message never posted is not done */
	if (!a && lc->f->live)
		return;
	if (!a)
		a = fab_msgs_in(lc->f->msgs, (size_t)m->after, &tmp);
	if (!a->done)
		lc->orphans++;
}

static void report_chains(struct dl *g, struct out *o)
{
	const struct fab *f = g->f;
	int *count = calloc((size_t)g->nv, sizeof(int));
	int nwait = 0, nends = 0, shown = 0;

	if (!count) {
		put(o, "out of memory explaining the stall");
		return;
	}
	for (int u = 0; u < g->nv; u++) {
		g->term[u] = -2;
		g->stamp[u] = -1;
	}
	for (int u = 0; u < g->nv; u++) {
		if (g->kind[u] == DL_NONE)
			continue;
		nwait++;
		if (!count[chain_end(g, u)]++)
			nends++;
	}
	if (!nwait) {
		struct left_count lc = { .f = f };

		fab_live_each(f, count_left, &lc);
		/* a compact list's messages not yet made are left too: they wait
		 * for one of those */
		lc.left = f->tot.msgs_total - f->tot.msgs_done - f->tot.msgs_lost;
		put(o, "nothing waits for credits; %llu of the %llu messages left wait for a message that was lost or never completes",
		    (unsigned long long)lc.orphans, (unsigned long long)lc.left);
		free(count);
		return;
	}
	put(o, "no credit loop; %d buffers and senders wait in chains ending at %d place%s: ",
	    nwait, nends, nends == 1 ? "" : "s");
	/* The ends behind which most wait, first (ties: port order). */
	while (shown < 3 && shown < nends) {
		int best = -1;

		for (int u = 0; u < g->nv; u++)
			if (count[u] > 0 && (best < 0 || count[u] > count[best]))
				best = u;
		if (best < 0)
			break;
		put(o, "%s", shown ? "; " : "");
		describe_end(g, best, o);
		put(o, " (%d waiting behind)", count[best]);
		count[best] = 0;
		shown++;
	}
	if (nends > shown)
		put(o, "; ...");
	free(count);
}

void fab_deadlock_explain(const struct fab *f, char *buf, size_t len)
{
	struct dl g = { .f = f };
	struct out o = { .buf = buf, .len = len };
	int slots = 0, ncycles = 0, first = -1;

	if (!len)
		return;
	buf[0] = '\0';
	g.nvl = f->p.vls < 1 ? 1 : f->p.vls > FAB_MAX_VLS ? FAB_MAX_VLS : f->p.vls;
	g.nv = f->nports * g.nvl;
	for (int i = 0; i < f->nnodes; i++)
		slots += f->nodes[i].nports + 1;
	g.base = malloc(((size_t)f->nnodes + 1) * sizeof(int));
	g.idx_of = malloc(((size_t)slots + 1) * sizeof(int));
	g.kind = malloc((size_t)g.nv + 1);
	g.succ = malloc(((size_t)g.nv + 1) * sizeof(int));
	g.stamp = malloc(((size_t)g.nv + 1) * sizeof(int));
	g.term = malloc(((size_t)g.nv + 1) * sizeof(int));
	g.stack = malloc(((size_t)g.nv + 1) * sizeof(int));
	if (!g.base || !g.idx_of || !g.kind || !g.succ || !g.stamp || !g.term || !g.stack) {
		put(&o, "out of memory explaining the stall");
		goto out;
	}
	for (int i = 0, s = 0; i < f->nnodes; i++) {
		g.base[i] = s;
		s += f->nodes[i].nports + 1;
	}
	for (int pi = 0; pi < f->nports; pi++)
		g.idx_of[g.base[f->ports[pi]->node->idx] + f->ports[pi]->port_no] = pi;
	classify(&g);

	/*
	 * Cycles of a functional graph: walk from each vertex, stamping it with
	 * the walk's number, until a vertex with no successor, one finished by
	 * an earlier walk, or one stamped by this walk (a new cycle).
	 */
	for (int u = 0; u < g.nv; u++)
		g.stamp[u] = -1;
	for (int s = 0; s < g.nv; s++) {
		int u = s;

		while (u >= 0 && g.stamp[u] < 0) {
			g.stamp[u] = s;
			u = g.succ[u];
		}
		if (u < 0 || g.stamp[u] != s)
			continue;
		/* u is on a new cycle: name it by its lowest vertex. */
		int low = u, w = g.succ[u];

		while (w != u) {
			if (w < low)
				low = w;
			w = g.succ[w];
		}
		if (!ncycles++ || low < first)
			first = low;
	}
	if (ncycles)
		report_cycle(&g, first, ncycles, &o);
	else
		report_chains(&g, &o);
out:
	dl_free(&g);
}
