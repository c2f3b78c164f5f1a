/* SPDX-License-Identifier: MIT */
/*
 * fab_fault.c - faults during a run: cables and nodes that go down and
 * come up at given times, and the subnet manager that reroutes after them.
 *
 * A cable can also start to corrupt packets: its link.ber or
 * link.drop_prob from a time on (both directions; the receiver finds the
 * bad CRC and drops, RC resends; no reroute).
 *
 * A cable that goes down loses what is on it and what its ends send from
 * then on (models/port: port_set_down): a switch keeps forwarding by its
 * tables and so discards what they route over the dead port (IBA 18.2.4.3:
 * a switch discards packets for a port that is not active); an HCA's RC
 * queue pairs time out and retry (IBA 9.7.6.1.3) and, with the retry budget
 * spent, go to the error state. A node that fails is all its cables at
 * once. Adaptive routing and ECMP leave a dead port out of their choice at
 * once (the switch knows its own links), where the tables still name it.
 *
 * The subnet manager hears of the change (a trap 128 from the switch, or
 * its next sweep) and installs new tables sm.reroute_ns after it: the
 * caller's rerouter (the run's engine) routes a copy of the fabric's graph
 * with the dead cables cut and the LIDs kept, the new tables' channel
 * dependency graph is checked before they are installed (a cycle is
 * reported, and the tables installed all the same, as OpenSM does), and
 * every switch's LFT is swapped at that instant. A run routed with a
 * dumped table (OpenSM's, --lft) does not reroute by itself: the tables
 * OpenSM made for the new state, dumped, are a fault of their own
 * (FAB_FAULT_TABLES) that the rerouter loads at its time, checked and
 * installed the same way. Left out: the SM's own MADs on the fabric
 * (VL15), the time each switch's update takes on its own, and the AR
 * groups and ECMP sets recomputed (their dead ports are skipped instead).
 */
#include "models/fabric/fab_int.h"

#include <stdlib.h>
#include <string.h>

#include "models/hca/hca_plug.h"
#include "models/sm/sm_cdg.h"

#define REROUTE_ARG 0x80000000u

struct fab_faults {
	struct fab_fault *v;
	int n, cap;
	struct fab_reroute *rr;
	int nrr, cap_rr;
	struct net *nets;	/* the rerouted graphs, whose tables the switches use */
	int nnets;
	fab_reroute_fn fn;
	void *ctx;
	bool sweeps;		/* reroutes by itself after downs and ups */
	struct fab_qp_recovery *rec;	/* the report's list */
	uint32_t comp;
	bool registered;
	struct fab_fault_report report;
};

static struct fab_faults *faults(struct fab *f)
{
	if (!f->faults)
		f->faults = calloc(1, sizeof(*f->faults));
	return f->faults;
}

int fab_fault_add(struct fab *f, const struct fab_fault *x, struct sim_diag *d)
{
	struct fab_faults *ff = faults(f);

	if (!ff)
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	if (x->kind == FAB_FAULT_TABLES)
		;	/* no node: the whole subnet's tables */
	else if (x->node < 0 || x->node >= f->nnodes || x->port < 0 ||
		 x->port > f->nodes[x->node].nports)
		return sim_diag_set(d, NULL, 0, 0, "fault: no such node or port");
	else if (x->port ? !f->nodes[x->node].ports[x->port] : !f->nodes[x->node].nports)
		return sim_diag_set(d, NULL, 0, 0, "fault: %s port %d has no cable",
				    f->net->nodes[x->node].desc, x->port);
	if (ff->n == ff->cap) {
		int cap = ff->cap ? 2 * ff->cap : 8;
		struct fab_fault *v = realloc(ff->v, (size_t)cap * sizeof(*v));

		if (!v)
			return sim_diag_set(d, NULL, 0, 0, "out of memory");
		ff->v = v;
		ff->cap = cap;
	}
	ff->v[ff->n] = *x;
	ff->v[ff->n].applied = false;
	ff->n++;
	return 0;
}

void fab_set_rerouter(struct fab *f, fab_reroute_fn fn, void *ctx, bool sweeps)
{
	struct fab_faults *ff = faults(f);

	if (ff) {
		ff->fn = fn;
		ff->ctx = ctx;
		ff->sweeps = sweeps;
	}
}

const struct fab_fault_report *fab_fault_report(const struct fab *f)
{
	struct fab_faults *ff = f->faults;
	struct fab_fault_report *r;

	if (!ff || !ff->n)
		return NULL;
	r = &ff->report;
	memset(r, 0, sizeof(*r));
	r->faults = ff->v;
	r->nfaults = ff->n;
	r->reroutes = ff->rr;
	r->nreroutes = ff->nrr;
	r->lost = f->tot.drops_link;
	r->first = SIM_TIME_MAX;
	for (int i = 0; i < ff->n; i++)
		if (ff->v[i].applied && ff->v[i].at < r->first)
			r->first = ff->v[i].at;
	for (int i = 0; i < f->nnodes; i++) {
		const struct hca *h = f->nodes[i].hca;

		for (uint32_t q = 0; h && q < h->nqps; q++) {
			const struct hca_qp *qp = h->qps[q];

			if (!qp || qp->type != HCA_QPT_RC)
				continue;
			if (qp->state == HCA_QPS_ERR) {
				r->qps_failed++;
			} else if (qp->st.recovered_ps && r->first != SIM_TIME_MAX &&
				   qp->st.recovered_ps >= r->first) {
				struct fab_qp_recovery *v = realloc(ff->rec, ((size_t)r->qps_recovered + 1) *
								    sizeof(*v));

				if (v) {
					ff->rec = v;
					v[r->qps_recovered] = (struct fab_qp_recovery){
						i, qp->qpn, qp->st.recovered_ps - r->first };
				}
				r->qps_recovered += v != NULL;
				if (qp->st.recovered_ps - r->first > r->last_recovery)
					r->last_recovery = qp->st.recovered_ps - r->first;
			}
		}
	}
	r->recovered = ff->rec;
	return r;
}

/* A receiver's own fault injection (fab.port_fault: made here at the
 * first change, every port starting from the run's link.drop_prob/ber). */
static void set_rx_fault(struct fab *f, struct port *rx, const struct fab_fault *x)
{
	if (!f->port_fault) {
		f->port_fault = malloc((size_t)f->nports * sizeof(*f->port_fault));
		if (!f->port_fault) {
			fab_fail(f, "out of memory for a link's error rate");
			return;
		}
		for (int q = 0; q < f->nports; q++)
			f->port_fault[q] = (struct fab_port_fault){ f->p.drop_prob, f->p.ber };
	}
	struct fab_port_fault *pf = &f->port_fault[rx->comp - f->port_comp0];

	if (x->kind == FAB_FAULT_BER)
		pf->ber = x->value;
	else
		pf->drop_prob = x->value;
}

/* A cable went down or up: the HCAs at its ends raise their port event
 * (IBV_EVENT_PORT_ERR, IBV_EVENT_PORT_ACTIVE for the programs on them). */
static void port_event(struct fab *f, struct port *pt, bool up)
{
	hca_port_changed(fab_hca(f, pt->node->idx), up);
	if (pt->peer)
		hca_port_changed(fab_hca(f, pt->peer->node->idx), up);
}

/* The fault's ports: one, or every connected port of the node. */
static void apply(struct fab *f, struct fab_fault *x)
{
	struct fab_node *n = &f->nodes[x->node];

	for (int q = x->port ? x->port : 1; q <= (x->port ? x->port : n->nports); q++) {
		struct port *pt = n->ports[q];

		if (!pt)
			continue;
		if (x->kind == FAB_FAULT_BER || x->kind == FAB_FAULT_DROP) {
			set_rx_fault(f, pt, x);	/* both directions of the cable */
			set_rx_fault(f, pt->peer, x);
		} else if (x->kind == FAB_FAULT_DOWN && !pt->down) {
			port_set_down(pt);
			port_event(f, pt, false);
		} else if (x->kind == FAB_FAULT_UP && pt->down) {
			port_set_up(pt);
			port_event(f, pt, true);
		}
	}
	x->applied = true;
	x->lost_before = f->tot.drops_link;
}

/* New tables for the fabric as it is now (models/sm via the rerouter):
 * the run's engine, or the dump of fault x (a FAB_FAULT_TABLES). */
static void reroute(struct fab *f, struct fab_faults *ff, const struct fab_fault *x)
{
	struct fab_reroute *r;
	struct net *copy;
	struct sim_diag d;

	if (ff->nrr == ff->cap_rr) {
		int cap = ff->cap_rr ? 2 * ff->cap_rr : 4;
		struct fab_reroute *v = realloc(ff->rr, (size_t)cap * sizeof(*v));
		struct net *nets = realloc(ff->nets, (size_t)cap * sizeof(*nets));

		if (v)
			ff->rr = v;
		if (nets)
			ff->nets = nets;
		if (!v || !nets) {
			fab_fail(f, "out of memory for the new tables");
			return;
		}
		ff->cap_rr = cap;
	}
	r = &ff->rr[ff->nrr++];
	memset(r, 0, sizeof(*r));
	r->at = f->eng.now;
	r->fault = x ? (int)(x - ff->v) : -1;
	/* what was lost since the last change, while the old tables held */
	for (int i = 0; i < ff->n; i++)
		if (ff->v[i].applied && ff->v[i].kind == FAB_FAULT_DOWN)
			r->lost_stale = f->tot.drops_link - ff->v[i].lost_before;
	copy = &ff->nets[ff->nnets];
	if (net_dup(copy, f->net)) {
		snprintf(r->note, sizeof(r->note), "out of memory");
		return;
	}
	ff->nnets++;
	/* the cables down now, cut */
	for (int i = 0; i < f->nports; i++) {
		struct port *pt = f->ports[i];
		struct net_port *np = &copy->nodes[pt->node->idx].ports[pt->port_no];

		if (pt->down && np->remote_node >= 0) {
			struct net_port *pp = &copy->nodes[np->remote_node].ports[np->remote_port];

			pp->remote_node = pp->remote_port = -1;
			np->remote_node = np->remote_port = -1;
		}
	}
	copy->hosts_valid = false;
	if (ff->fn(ff->ctx, copy, x ? x->tables : NULL, &d)) {
		snprintf(r->note, sizeof(r->note), "%.200s", d.msg);
		return;
	}
	/* the deadlock check before they are installed */
	struct sm_cdg g;
	struct sm_cdg_cycle c;

	if (sm_cdg_build(&g, copy, NULL, &d) == 0) {
		int cyc = sm_cdg_find_cycle(&g, &c, &d);

		r->acyclic = cyc == 0;
		if (cyc == 1)
			sm_cdg_cycle_str(&g, &c, r->note, sizeof(r->note));
		if (cyc >= 0)
			sm_cdg_cycle_free(&c);
		sm_cdg_free(&g);
	}
	for (int i = 0; i < f->nnodes; i++) {
		struct fab_node *n = &f->nodes[i];

		if (n->type != NET_SWITCH)
			continue;
		n->lft = copy->nodes[i].lft;
		n->lft_len = copy->nodes[i].lft ? copy->nodes[i].lft_len : 0;
	}
	r->ok = true;
	/* packets that waited for a port the new tables leave: kick them */
	for (int i = 0; i < f->nports; i++)
		port_kick(f->ports[i]);
}

static void fault_handler(struct sim_engine *eng, void *ctx, uint32_t arg)
{
	struct fab *f = ctx;
	struct fab_faults *ff = f->faults;

	(void)eng;
	if (arg & REROUTE_ARG) {
		if (f->tot.msgs_finished < f->tot.msgs_total || !f->tot.msgs_total)
			reroute(f, ff, NULL);
		return;
	}
	if (ff->v[arg].kind == FAB_FAULT_TABLES) {	/* the SM installs a dump's tables */
		ff->v[arg].applied = true;
		ff->v[arg].lost_before = f->tot.drops_link;
		if (ff->fn)
			reroute(f, ff, &ff->v[arg]);
		return;
	}
	apply(f, &ff->v[arg]);
	if (ff->v[arg].kind != FAB_FAULT_DOWN && ff->v[arg].kind != FAB_FAULT_UP)
		return;		/* an error rate: the links stay, the tables too */
	if (ff->fn && ff->sweeps && f->p.sm_reroute_ns)
		sim_schedule_at(&f->eng, f->eng.now + (sim_time_t)f->p.sm_reroute_ns * SIM_NS,
				ff->comp, REROUTE_ARG | arg);
}

int fab_faults_start(struct fab *f, struct sim_diag *d)
{
	struct fab_faults *ff = f->faults;

	if (!ff || !ff->n || ff->registered)
		return 0;
	int c = sim_register(&f->eng, fault_handler, f, "faults");

	if (c < 0)
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	ff->comp = (uint32_t)c;
	ff->registered = true;
	for (int i = 0; i < ff->n; i++)
		sim_schedule_at(&f->eng, ff->v[i].at, ff->comp, (uint32_t)i);
	return 0;
}

void fab_faults_free(struct fab *f)
{
	struct fab_faults *ff = f->faults;

	if (!ff)
		return;
	for (int i = 0; i < ff->nnets; i++)
		net_free(&ff->nets[i]);
	free(ff->nets);
	free(ff->rr);
	free(ff->v);
	free(ff->rec);
	free(ff);
	f->faults = NULL;
}
