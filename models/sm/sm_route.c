/* SPDX-License-Identifier: MIT */
/*
 * sm_route.c - the table of routing engines and the one entry point every
 * command uses (`--routing NAME`). Engines take OpenSM's names so a user
 * can ask for the routing their subnet manager runs.
 */
#include "models/sm/sm.h"

#include <string.h>

static int route_minhop(struct net *n, const struct sm_opts *o, struct sim_diag *d)
{
	(void)o;
	return sm_route_minhop(n, d);
}

static const struct sm_engine eng_minhop = {
	.name = "minhop",
	.help = "shortest paths, balanced by destinations per port (OpenSM's default)",
	.route = route_minhop,
};

const struct sm_engine *const sm_engines[] = {
	&eng_minhop,
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
	return e->route(n, o ? o : &none, d);
}
