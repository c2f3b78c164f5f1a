/* SPDX-License-Identifier: MIT */
/*
 * cli_fault.c - `ibfab run --fault SPEC`: a cable or a node that fails or
 * comes back during the run (models/fabric/fab_fault.c), the subnet
 * manager's reroute with the run's engine, and what the report says.
 *
 *   link NODE/PORT down at TIME      the cable at NODE's PORT (both ends)
 *   link NODE/PORT up at TIME
 *   node NODE down at TIME           every cable of NODE (a switch or host
 *   node NODE up at TIME             failing, or coming back)
 *   link NODE/PORT ber=X at TIME     the cable's bit error rate, or its
 *   link NODE/PORT drop_prob=P at TIME   packet drop probability, from then
 *   link NODE/PORT flap at TIME for DURATION [every PERIOD count N]
 *                                    down, and up DURATION later (N times)
 *
 * NODE is a node's description, id or GUID (0x...), TIME a time with its
 * unit ("2ms", "150us"). "switch" is accepted for "node".
 */
#include "tools/cli_fault.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "models/sm/sm.h"
#include "topologies/lft.h"
#include "sim/sim_json.h"
#include "sim/sim_parse.h"
#include "tools/cli_out.h"

static int find_node(const struct net *net, const char *name)
{
	int i = net_find_host(net, name);
	char *end;

	if (i >= 0)
		return i;
	if (!strncmp(name, "0x", 2)) {
		uint64_t g = strtoull(name, &end, 16);

		for (int k = 0; !*end && k < net->nnodes; k++)
			if (net->nodes[k].guid == g)
				return k;
	}
	return -1;
}

/* "link NODE/PORT" or "node NODE" (tok[0], tok[1]) into x. */
static int parse_where(const char *spec, char **tok, const struct net *net, struct fab_fault *x,
		       struct sim_diag *d)
{
	char err[128];
	bool link = !strcmp(tok[0], "link");
	char *slash = strrchr(tok[1], '/');

	if (link) {
		uint64_t port;

		if (!slash || sim_parse_uint(slash + 1, NET_MAX_PORTS, &port, err, sizeof(err)) ||
		    !port)
			return sim_diag_set(d, NULL, 0, 0, "--fault '%s': '%s' is not NODE/PORT",
					    spec, tok[1]);
		*slash = 0;
		x->port = (int)port;
	}
	x->node = find_node(net, tok[1]);
	if (x->node < 0)
		return sim_diag_set(d, NULL, 0, 0, "--fault '%s': no node '%s' in the topology",
				    spec, tok[1]);
	if (link && (x->port > net->nodes[x->node].nports ||
		     net->nodes[x->node].ports[x->port].remote_node < 0))
		return sim_diag_set(d, NULL, 0, 0, "--fault '%s': %s has no cable at port %d",
				    spec, net->nodes[x->node].desc, x->port);
	return 0;
}

static int parse_time(const char *spec, const char *v, sim_time_t *t, struct sim_diag *d)
{
	char err[128];

	if (sim_parse_time_ps(v, t, err, sizeof(err)))
		return sim_diag_set(d, NULL, 0, 0, "--fault '%s': %s", spec, err);
	return 0;
}

/* "... flap at T for D [every P count N]": N downs of D, P apart. */
static int parse_flap(const char *spec, char **tok, int nt, struct fab_fault *x, int max,
		      struct sim_diag *d)
{
	sim_time_t at, dur, every = 0;
	uint64_t count = 1;
	char err[128];

	if (strcmp(tok[3], "at") || strcmp(tok[5], "for") ||
	    (nt == 11 && (strcmp(tok[7], "every") || strcmp(tok[9], "count"))))
		return sim_diag_set(d, NULL, 0, 0, "--fault '%s': expected 'link NODE/PORT flap at "
				    "TIME for DURATION [every PERIOD count N]'", spec);
	if (parse_time(spec, tok[4], &at, d) || parse_time(spec, tok[6], &dur, d) ||
	    (nt == 11 && parse_time(spec, tok[8], &every, d)))
		return -1;
	if (nt == 11 && sim_parse_uint(tok[10], (uint64_t)max / 2, &count, err, sizeof(err)))
		return sim_diag_set(d, NULL, 0, 0, "--fault '%s': count: %s", spec, err);
	if (!dur || (count > 1 && every <= dur) || !count)
		return sim_diag_set(d, NULL, 0, 0, "--fault '%s': a flap lasts more than 0 and "
				    "less than its period", spec);
	for (uint64_t k = 0; k < count; k++) {
		x[2 * k] = x[0];
		x[2 * k].at = at + k * every;
		x[2 * k].kind = FAB_FAULT_DOWN;
		x[2 * k + 1] = x[0];
		x[2 * k + 1].at = at + k * every + dur;
		x[2 * k + 1].kind = FAB_FAULT_UP;
	}
	return (int)(2 * count);
}

/*
 * "lft FILE at TIME": the subnet manager installs the tables of an OpenSM
 * LFT dump at TIME - the tables it made for the fabric as it is then. The
 * dump is loaded here once, on a copy of the fabric, so a bad file is
 * named before the run (its line and what was expected), not in the
 * middle of it.
 */
static int parse_tables(const char *spec, char **tok, const struct net *net, struct fab_fault *x,
			struct sim_diag *d)
{
	struct net copy;
	int rc;

	if (strlen(tok[1]) >= sizeof(x->tables))
		return sim_diag_set(d, NULL, 0, 0, "--fault '%s': the path is longer than %zu bytes",
				    spec, sizeof(x->tables) - 1);
	if (parse_time(spec, tok[3], &x->at, d))
		return -1;
	snprintf(x->tables, sizeof(x->tables), "%s", tok[1]);
	x->kind = FAB_FAULT_TABLES;
	x->node = -1;
	if (net_dup(&copy, net))
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	rc = lft_load(&copy, x->tables, d);
	/* The switches' tables are swapped, the ports keep their LIDs: a
	 * dump that moved them (OpenSM keeps them across sweeps, in its
	 * guid2lid cache) would route to the wrong ports. */
	for (int i = 0; !rc && i < net->nnodes; i++) {
		const struct net_node *a = &net->nodes[i], *b = &copy.nodes[i];

		for (int q = 0; !rc && q <= a->nports; q++) {
			net_lid_t la = a->type == NET_SWITCH ? a->lid : a->ports[q].lid;
			net_lid_t lb = b->type == NET_SWITCH ? b->lid : b->ports[q].lid;

			if (la != lb && (q == 0 || a->type != NET_SWITCH))
				rc = sim_diag_set(d, x->tables, 0, 0,
						  "--fault '%s': the dump gives %s%s%.0d LID %u, the fabric's is %u: new tables keep the LIDs (OpenSM's guid2lid cache keeps them across sweeps)",
						  spec, a->desc, a->type == NET_SWITCH ? "" : " port ",
						  a->type == NET_SWITCH ? 0 : q, lb, la);
		}
	}
	net_free(&copy);
	return rc ? -1 : 1;
}

int cli_fault_parse(const char *spec, const struct net *net, struct fab_fault *x, int max,
		    struct sim_diag *d)
{
	char buf[512], *tok[12], *save = NULL, err[128];
	int nt = 0;

	snprintf(buf, sizeof(buf), "%s", spec);
	for (char *t = strtok_r(buf, " \t", &save); t && nt < 12; t = strtok_r(NULL, " \t", &save))
		tok[nt++] = t;
	memset(x, 0, sizeof(*x));
	if (nt == 4 && !strcmp(tok[0], "lft") && !strcmp(tok[2], "at"))
		return parse_tables(spec, tok, net, x, d);
	if (nt >= 2 && (!strcmp(tok[0], "link") || !strcmp(tok[0], "node") ||
			!strcmp(tok[0], "switch")) && parse_where(spec, tok, net, x, d))
		return -1;
	if ((nt == 7 || nt == 11) && !strcmp(tok[2], "flap"))
		return parse_flap(spec, tok, nt, x, max, d);
	bool rate = nt == 5 && (!strncmp(tok[2], "ber=", 4) || !strncmp(tok[2], "drop_prob=", 10));

	if (nt != 5 || strcmp(tok[3], "at") ||
	    (strcmp(tok[0], "link") && strcmp(tok[0], "node") && strcmp(tok[0], "switch")) ||
	    (strcmp(tok[2], "down") && strcmp(tok[2], "up") && !rate))
		return sim_diag_set(d, NULL, 0, 0,
				    "--fault '%s': expected 'link NODE/PORT down|up|ber=X|drop_prob=P at TIME', "
				    "'link NODE/PORT flap at TIME for DURATION [every PERIOD count N]', "
				    "'node NODE down|up at TIME' or 'lft FILE at TIME'", spec);
	if (rate) {
		const char *v = strchr(tok[2], '=') + 1;

		if (sim_parse_double(v, &x->value, err, sizeof(err)) || x->value < 0 || x->value >= 1)
			return sim_diag_set(d, NULL, 0, 0, "--fault '%s': '%s' is not a rate in [0, 1)",
					    spec, v);
		x->kind = tok[2][0] == 'b' ? FAB_FAULT_BER : FAB_FAULT_DROP;
	} else {
		x->kind = !strcmp(tok[2], "down") ? FAB_FAULT_DOWN : FAB_FAULT_UP;
	}
	if (parse_time(spec, tok[4], &x->at, d))
		return -1;
	return 1;
}

int cli_fault_reroute(void *ctx, struct net *n, const char *tables, struct sim_diag *d)
{
	const struct cli_run_opts *o = ctx;
	struct sm_opts so = { .roots = o->roots, .sm = o->sm };

	if (tables)		/* OpenSM's tables for the new state, dumped */
		return lft_load(n, tables, d);
	/* the LIDs stay (they are assigned); the engine the run routed with */
	return sm_route(n, o->routing, &so, d);
}

static const char *what(const struct net *net, const struct fab_fault *x, char *buf, size_t len)
{
	if (x->kind == FAB_FAULT_TABLES)
		snprintf(buf, len, "tables from %s", x->tables);
	else if (x->kind == FAB_FAULT_BER || x->kind == FAB_FAULT_DROP) {
		const struct net_port *np = &net->nodes[x->node].ports[x->port];

		if (x->port)
			snprintf(buf, len, "link %s/%d <-> %s/%d %s=%g", net->nodes[x->node].desc,
				 x->port, net->nodes[np->remote_node].desc, np->remote_port,
				 x->kind == FAB_FAULT_BER ? "ber" : "drop_prob", x->value);
		else
			snprintf(buf, len, "node %s %s=%g", net->nodes[x->node].desc,
				 x->kind == FAB_FAULT_BER ? "ber" : "drop_prob", x->value);
	} else if (x->port) {
		const struct net_port *np = &net->nodes[x->node].ports[x->port];

		snprintf(buf, len, "link %s/%d <-> %s/%d %s", net->nodes[x->node].desc, x->port,
			 net->nodes[np->remote_node].desc, np->remote_port,
			 x->kind == FAB_FAULT_DOWN ? "down" : "up");
	} else {
		snprintf(buf, len, "node %s %s", net->nodes[x->node].desc,
			 x->kind == FAB_FAULT_DOWN ? "down" : "up");
	}
	return buf;
}

static int cmp_time(const void *a, const void *b)
{
	sim_time_t x = *(const sim_time_t *)a, y = *(const sim_time_t *)b;

	return x < y ? -1 : x > y;
}

void cli_fault_summary(FILE *out, const struct fab *f, const struct net *net)
{
	const struct fab_fault_report *r = fab_fault_report(f);
	char a[32], b[320];

	if (!r)
		return;
	for (int i = 0; i < r->nfaults; i++) {
		const struct fab_fault *x = &r->faults[i];

		fprintf(out, "%-15s%s at %s%s\n", i ? "" : "faults", what(net, x, b, sizeof(b)),
			cli_fmt_time(x->at, a, sizeof(a)), x->applied ? "" : " (after the run ended)");
	}
	for (int i = 0; i < r->nreroutes; i++) {
		const struct fab_reroute *rr = &r->reroutes[i];

		fprintf(out, "%-15snew tables at %s%s%s: ", i ? "" : "  rerouted",
			cli_fmt_time(rr->at, a, sizeof(a)), rr->fault >= 0 ? " from " : "",
			rr->fault >= 0 ? r->faults[rr->fault].tables : "");
		if (!rr->ok)
			fprintf(out, "failed (%s)\n", rr->note);
		else
			fprintf(out, "%s; %" PRIu64 " packets lost to dead links with the old tables\n",
				rr->acyclic ? "acyclic" : rr->note[0] ? rr->note : "the deadlock check failed",
				rr->lost_stale);
	}
	fprintf(out, "%-15s%" PRIu64 " packets lost to links that were down; %d RC QPs recovered "
		"after retries", "  lost", r->lost, r->qps_recovered);
	if (r->qps_recovered) {
		sim_time_t *t = malloc((size_t)r->qps_recovered * sizeof(*t));
		char m[32];

		for (int i = 0; t && i < r->qps_recovered; i++)
			t[i] = r->recovered[i].after;
		if (t)
			qsort(t, (size_t)r->qps_recovered, sizeof(*t), cmp_time);
		fprintf(out, " (median %s, the last %s after the first fault)",
			t ? cli_fmt_time(t[r->qps_recovered / 2], m, sizeof(m)) : "?",
			cli_fmt_time(r->last_recovery, a, sizeof(a)));
		free(t);
	}
	fprintf(out, ", %d in error (retry budget spent)\n", r->qps_failed);
}

void cli_fault_json(struct sim_json *j, const struct fab *f, const struct net *net)
{
	const struct fab_fault_report *r = fab_fault_report(f);
	char b[320];

	if (!r)
		return;
	sim_json_key(j, "faults");
	sim_json_obj_begin(j);
	sim_json_key(j, "events");
	sim_json_arr_begin(j);
	for (int i = 0; i < r->nfaults; i++) {
		const struct fab_fault *x = &r->faults[i];

		sim_json_obj_begin(j);
		sim_json_kstr(j, "what", what(net, x, b, sizeof(b)));
		sim_json_ku64(j, "at_ps", x->at);
		sim_json_kbool(j, "applied", x->applied);
		sim_json_obj_end(j);
	}
	sim_json_arr_end(j);
	sim_json_key(j, "reroutes");
	sim_json_arr_begin(j);
	for (int i = 0; i < r->nreroutes; i++) {
		const struct fab_reroute *rr = &r->reroutes[i];

		sim_json_obj_begin(j);
		sim_json_ku64(j, "at_ps", rr->at);
		sim_json_kbool(j, "ok", rr->ok);
		sim_json_kbool(j, "acyclic", rr->acyclic);
		sim_json_ku64(j, "lost_with_old_tables", rr->lost_stale);
		sim_json_kstr(j, "note", rr->note);
		if (rr->fault >= 0)	/* installed from a dump */
			sim_json_kstr(j, "tables", r->faults[rr->fault].tables);
		sim_json_obj_end(j);
	}
	sim_json_arr_end(j);
	sim_json_ku64(j, "packets_lost", r->lost);
	sim_json_ki64(j, "qps_recovered", r->qps_recovered);
	sim_json_ku64(j, "last_recovery_ps", r->last_recovery);
	sim_json_key(j, "recovered");	/* each QP: after the first fault */
	sim_json_arr_begin(j);
	for (int i = 0; i < r->qps_recovered; i++) {
		sim_json_obj_begin(j);
		sim_json_kstr(j, "node", net->nodes[r->recovered[i].node].desc);
		sim_json_ku64(j, "qpn", r->recovered[i].qpn);
		sim_json_ku64(j, "after_ps", r->recovered[i].after);
		sim_json_obj_end(j);
	}
	sim_json_arr_end(j);
	sim_json_ki64(j, "qps_failed", r->qps_failed);
	sim_json_obj_end(j);
}
