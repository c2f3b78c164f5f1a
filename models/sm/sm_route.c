/* SPDX-License-Identifier: MIT */
/*
 * sm_route.c - the table of routing engines and the one entry point every
 * command uses (`--routing NAME`). Engines take OpenSM's names (its -R
 * option) so a user can ask for the routing their subnet manager runs; what
 * each one does and leaves out is in its own file and in docs/routing.md.
 * LIDs (with the LMC asked for) are assigned here before any engine runs.
 */
#include "models/sm/sm.h"

#include <string.h>

#include "models/sm/sm_int.h"

static int route_minhop(struct net *n, const struct sm_opts *o, struct sim_diag *d)
{
	if (o->roots && *o->roots)
		return sim_diag_set(d, NULL, 0, 0, "minhop: --roots is for updn");
	if (sm_route_minhop(n, d))
		return -1;
	sm_note(o, "minhop");
	return 0;
}

static const struct sm_engine eng_minhop = {
	.name = "minhop",
	.help = "shortest paths, balanced by destinations per port (OpenSM's default)",
	.route = route_minhop,
};

static const struct sm_engine eng_updn = {
	.name = "updn",
	.help = "shortest up-then-down paths from roots (--roots, or chosen as OpenSM does); deadlock free",
	.route = sm_route_updn,
};

static const struct sm_engine eng_ftree = {
	.name = "ftree",
	.help = "fat trees only: OpenSM's ftree, destinations spread over the up-links, shift patterns contention free",
	.route = sm_route_ftree,
};

static const struct sm_engine eng_dor = {
	.name = "dor",
	.help = "meshes and tori: dimension order (x, then y, then z); not deadlock free on a torus with one VL",
	.route = sm_route_dor,
};

const struct sm_engine *const sm_engines[] = {
	&eng_minhop,
	&eng_updn,
	&eng_ftree,
	&eng_dor,
	NULL,
};

const struct sm_engine *sm_engine_find(const char *name)
{
	for (int i = 0; sm_engines[i]; i++)
		if (!strcmp(sm_engines[i]->name, name))
			return sm_engines[i];
	return NULL;
}

int sm_route(struct net *n, const char *engine, const struct sm_opts *o,
	     struct sim_diag *d)
{
	static const struct sm_opts none;
	const struct sm_engine *e = sm_engine_find(engine && *engine ? engine : "minhop");

	if (!e) {
		char known[256] = "";

		for (int i = 0; sm_engines[i]; i++) {
			strncat(known, i ? ", " : "", sizeof(known) - strlen(known) - 1);
			strncat(known, sm_engines[i]->name, sizeof(known) - strlen(known) - 1);
		}
		return sim_diag_set(d, NULL, 0, 0, "unknown routing engine '%s' (known: %s)",
				    engine, known);
	}
	if (!o)
		o = &none;
	if (sm_lids(n, o, d))
		return -1;
	return e->route(n, o, d);
}
