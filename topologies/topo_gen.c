/* SPDX-License-Identifier: MIT */
/*
 * topo_gen.c - topology generators: what every family shares, the two
 * leaf-spine families, and the option parser behind `ibfab topo gen`.
 * Generators build a struct net and write it with topo_write_ibnd(), so a
 * generated file is ordinary ibnetdiscover output that ibsim, our parser and
 * people can all read. The other families live in topo_gen_fattree.c,
 * topo_gen_torus.c (meshes too), topo_gen_dragonfly.c and topo_gen_rail.c.
 *
 * fattree2 / leafspine: a two-level fat tree (a folded Clos). L leaves with
 * H hosts each, S spines, every spine cabled to every leaf with K parallel
 * links. A leaf has H hosts on ports 1..H and, for spine s, up-links on
 * ports H+1+s*K .. H+(s+1)*K; spine s reaches leaf l on ports 1+l*K ..
 * (l+1)*K. Up-capacity S*K equal to H gives full bisection. Counts:
 *   hosts = L*H, switches = L + S, cables = L*H + L*S*K.
 * Nodes are listed spines, leaves, hosts, so LIDs come out in that order
 * (spine0 = 1). fattree2 is the original generator (its defaults and file
 * header are kept byte for byte: examples and tests depend on them);
 * leafspine is the same shape with --links-per-spine defaulting to 1 and an
 * optional --radix.
 *
 * GUIDs follow ibsim's scheme (switches from 0x200000, CAs from 0x100000
 * with port GUID = node GUID + port), ids are ibnetdiscover's S-/H- + GUID.
 * Both count up in the order nodes are added, so they are stable for the
 * same options. Left out everywhere: cable lengths, multi-port HCAs,
 * IB routers, partially failed fabrics.
 */
#include "topologies/topo.h"

#include <stdbool.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

#define GUID_SWITCH_BASE 0x200000ULL
#define GUID_CA_BASE 0x100000ULL

/* ---- plumbing shared by the families ----------------------------------- */

static void build_begin(struct topo_gen_build *b, struct net *out,
			const char *kind, struct sim_diag *d)
{
	net_init(out);
	b->n = out;
	b->d = d;
	b->kind = kind;
	b->nswitch = 0;
	b->nca = 0;
}

static int add_node(struct topo_gen_build *b, enum net_node_type t,
		    int nports, uint64_t guid, const char *desc)
{
	char id[24];
	int i;

	snprintf(id, sizeof(id), "%c-%016" PRIx64, t == NET_SWITCH ? 'S' : 'H',
		 guid);
	i = net_add_node(b->n, t, nports, id, desc, b->d);
	if (i < 0)
		return -1;
	b->n->nodes[i].guid = guid;
	if (t == NET_SWITCH)
		b->n->nodes[i].ports[0].guid = guid;
	else
		for (int p = 1; p <= nports; p++)
			b->n->nodes[i].ports[p].guid = guid + (uint64_t)p;
	return i;
}

int topo_gen_b_switch(struct topo_gen_build *b, int nports, const char *fmt, ...)
{
	char desc[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(desc, sizeof(desc), fmt, ap);
	va_end(ap);
	return add_node(b, NET_SWITCH, nports,
			GUID_SWITCH_BASE + (uint64_t)b->nswitch++, desc);
}

int topo_gen_b_host(struct topo_gen_build *b, const char *fmt, ...)
{
	char desc[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(desc, sizeof(desc), fmt, ap);
	va_end(ap);
	/* One port: node GUID + 1 is the port GUID, so step by 2. */
	return add_node(b, NET_CA, 1, GUID_CA_BASE + 2 * (uint64_t)b->nca++, desc);
}

int topo_gen_b_link(struct topo_gen_build *b, int x, int px, int y, int py)
{
	return net_connect(b->n, x, px, y, py, 0, b->d);
}

/* One rate on every cable, then the checks every loaded file gets, and LIDs. */
static int build_finish(struct topo_gen_build *b, const char *rate)
{
	struct link_rate r = { 0, LINK_SPEED_NONE };
	struct net *n = b->n;

	if (rate && topo_rate_parse(rate, &r))
		return sim_diag_set(b->d, NULL, 0, 0,
				    "%s: bad rate '%s' (expected width x speed, e.g. 4xHDR)",
				    b->kind, rate);
	for (int i = 0; i < n->nnodes; i++)
		for (int p = 1; p <= n->nodes[i].nports; p++)
			if (n->nodes[i].ports[p].remote_node >= 0)
				net_set_link_rate(n, i, p, r.lanes, r.speed);
	/* any size a file can describe: one beyond InfiniBand's LIDs is
	 * written without LIDs (topo_write_ibnd) and runs on Ethernet */
	n->lid_limit = NET_ADDR_MAX;
	if (net_validate(n, b->d) || net_assign_lids_file_order(n, b->d))
		return -1;
	return 0;
}

int topo_gen_b_two_level(struct topo_gen_build *b, int L, int S, int H, int K,
			 int leaf_ports, int spine_ports)
{
	int first_spine = b->n->nnodes, first_leaf, first_host;

	for (int s = 0; s < S; s++)
		if (topo_gen_b_switch(b, spine_ports, "spine%d", s) < 0)
			return -1;
	first_leaf = b->n->nnodes;
	for (int l = 0; l < L; l++)
		if (topo_gen_b_switch(b, leaf_ports, "leaf%d", l) < 0)
			return -1;
	first_host = b->n->nnodes;
	for (int h = 0; h < L * H; h++)
		if (topo_gen_b_host(b, "h%d", h) < 0)
			return -1;
	for (int l = 0; l < L; l++) {
		int leaf = first_leaf + l;

		for (int j = 0; j < H; j++)
			if (topo_gen_b_link(b, leaf, 1 + j, first_host + l * H + j, 1))
				return -1;
		for (int s = 0; s < S; s++)
			for (int k = 0; k < K; k++)
				if (topo_gen_b_link(b, leaf, H + 1 + s * K + k,
						    first_spine + s, 1 + l * K + k))
					return -1;
	}
	return 0;
}

int topo_gen_check_size(const char *kind, int64_t switches, int64_t hosts,
			struct sim_diag *d)
{
	/* A switch takes one address, a one-port host one
	 * (net_assign_lids_file_order). Beyond InfiniBand's 49,151 LIDs the
	 * fabric is written without LIDs and runs only on Ethernet fabrics. */
	if (switches + hosts > NET_ADDR_MAX)
		return sim_diag_set(d, NULL, 0, 0,
				    "%s: %" PRId64 " switches + %" PRId64 " hosts: more than the %d nodes a fabric may have",
				    kind, switches, hosts, NET_ADDR_MAX);
	return 0;
}

int topo_gen_check_ports(const char *kind, const char *what, int64_t need,
			 int radix, const char *detail, struct sim_diag *d)
{
	if (radix != TOPO_GEN_UNSET && need > radix)
		return sim_diag_set(d, NULL, 0, 0,
				    "%s: %s needs %" PRId64 " ports (%s), more than --radix %d",
				    kind, what, need, detail, radix);
	if (need > NET_MAX_PORTS)
		return sim_diag_set(d, NULL, 0, 0,
				    "%s: %s needs %" PRId64 " ports (%s), more than a switch can have (%d)",
				    kind, what, need, detail, NET_MAX_PORTS);
	return 0;
}

int topo_gen_nports(int radix, int used)
{
	return radix != TOPO_GEN_UNSET ? radix : used;
}

/* ---- fattree2: the original generator, same output as ever ------------- */

int topo_gen_fattree2_net(struct net *out, int leaves, int spines,
			  int hosts_per_leaf, int links_per_spine,
			  const char *rate, struct sim_diag *d)
{
	int L = leaves, S = spines, H = hosts_per_leaf, K = links_per_spine;
	struct link_rate r;
	struct topo_gen_build b;

	build_begin(&b, out, "fattree2", d);
	if (L < 1 || H < 1 || S < 0 || K < 1)
		return sim_diag_set(d, NULL, 0, 0,
				    "fattree2: need leaves >= 1, hosts >= 1, spines >= 0, links per spine >= 1");
	if (S == 0 && L > 1)
		return sim_diag_set(d, NULL, 0, 0,
				    "fattree2: %d leaves need at least one spine", L);
	/* Compare in 64 bits: the arguments come from the command line. */
	if ((int64_t)H + (int64_t)S * K > NET_MAX_PORTS)
		return sim_diag_set(d, NULL, 0, 0,
				    "fattree2: a leaf would need %" PRId64 " ports (hosts + spines x links), more than %d",
				    (int64_t)H + (int64_t)S * K, NET_MAX_PORTS);
	if ((int64_t)L * K > NET_MAX_PORTS)
		return sim_diag_set(d, NULL, 0, 0,
				    "fattree2: a spine would need %" PRId64 " ports (leaves x links), more than %d",
				    (int64_t)L * K, NET_MAX_PORTS);
	if (rate && topo_rate_parse(rate, &r))
		return sim_diag_set(d, NULL, 0, 0,
				    "fattree2: bad rate '%s' (expected width x speed, e.g. 4xHDR)",
				    rate);
	if (topo_gen_check_size("fattree2", L + S, (int64_t)L * H, d) ||
	    topo_gen_b_two_level(&b, L, S, H, K, H + S * K, L * K) ||
	    build_finish(&b, rate)) {
		net_free(out);
		return -1;
	}
	return 0;
}

int topo_gen_fattree2(FILE *out, int leaves, int spines, int hosts_per_leaf,
		      int links_per_spine, const char *rate)
{
	struct sim_diag d;
	struct net n;
	int rc;

	if (topo_gen_fattree2_net(&n, leaves, spines, hosts_per_leaf,
				  links_per_spine, rate, &d))
		return -1;
	fprintf(out, "#\n# fattree2: %d leaves x %d hosts, %d spines x %d links per leaf, %s\n"
		"# generated by ibfab (topologies/topo_gen.c)\n#\n\n",
		leaves, hosts_per_leaf, spines, links_per_spine, rate ? rate : "no rate");
	rc = topo_write_ibnd(&n, out);
	net_free(&n);
	return rc;
}

/* Run `fn` on a memory stream; the text, or NULL with `d` filled. */
static char *to_string(int (*fn)(FILE *f, const void *arg, struct sim_diag *d),
		       const void *arg, struct sim_diag *d)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f) {
		sim_diag_set(d, NULL, 0, 0, "out of memory");
		return NULL;
	}
	if (fn(f, arg, d)) {
		fclose(f);
		free(buf);
		return NULL;
	}
	if (fclose(f)) {
		free(buf);
		sim_diag_set(d, NULL, 0, 0, "out of memory");
		return NULL;
	}
	return buf;
}

struct ft2_args {
	int l, s, h, k;
	const char *rate;
};

static int ft2_write(FILE *f, const void *arg, struct sim_diag *d)
{
	const struct ft2_args *a = arg;

	if (topo_gen_fattree2(f, a->l, a->s, a->h, a->k, a->rate))
		return sim_diag_set(d, NULL, 0, 0, "fattree2: cannot write");
	return 0;
}

char *topo_gen_fattree2_str(int leaves, int spines, int hosts_per_leaf,
			    int links_per_spine, const char *rate,
			    struct sim_diag *d)
{
	struct ft2_args a = { leaves, spines, hosts_per_leaf, links_per_spine, rate };
	struct net n;

	/* Validate with a message first; the FILE variant only says -1. */
	if (topo_gen_fattree2_net(&n, leaves, spines, hosts_per_leaf,
				  links_per_spine, rate, d))
		return NULL;
	net_free(&n);
	return to_string(ft2_write, &a, d);
}

int topo_default(struct net *out, struct sim_diag *d)
{
	return topo_gen_fattree2_net(out, TOPO_DEFAULT_LEAVES, TOPO_DEFAULT_SPINES,
				     TOPO_DEFAULT_HOSTS, TOPO_DEFAULT_LINKS,
				     TOPO_DEFAULT_RATE, d);
}

/* ---- the fattree2 and leafspine families ------------------------------- */

static int ls_required(const struct topo_gen_params *p, const char *kind,
		       struct sim_diag *d)
{
	if (p->leaves == TOPO_GEN_UNSET || p->spines == TOPO_GEN_UNSET ||
	    p->hosts == TOPO_GEN_UNSET)
		return sim_diag_set(d, NULL, 0, 0,
				    "%s: --leaves, --spines and --hosts are required (e.g. --leaves 4 --spines 2 --hosts 4)",
				    kind);
	return 0;
}

static int ft2_resolve(struct topo_gen_params *p, struct sim_diag *d)
{
	struct net n;

	if (ls_required(p, "fattree2", d))
		return -1;
	/* Full bisection when the spines divide the hosts evenly. */
	if (p->links == TOPO_GEN_UNSET)
		p->links = p->spines > 0 && p->hosts / p->spines > 0 ?
			p->hosts / p->spines : 1;
	/* Its checks live in topo_gen_fattree2_net(); the fabric is small. */
	if (topo_gen_check_size("fattree2", (int64_t)p->leaves + p->spines,
				(int64_t)p->leaves * p->hosts, d) ||
	    topo_gen_fattree2_net(&n, p->leaves, p->spines, p->hosts, p->links,
				  p->rate, d))
		return -1;
	net_free(&n);
	return 0;
}

static int ft2_build(struct topo_gen_build *b, const struct topo_gen_params *p)
{
	return topo_gen_b_two_level(b, p->leaves, p->spines, p->hosts, p->links,
				    p->hosts + p->spines * p->links,
				    p->leaves * p->links);
}

static void ls_summary(const struct topo_gen_params *p, char *buf, size_t len)
{
	snprintf(buf, len, "%s: %d leaves x %d hosts, %d spines x %d link%s per leaf",
		 topo_gen_kind_name(p->kind), p->leaves, p->hosts, p->spines,
		 p->links, p->links == 1 ? "" : "s");
}

static const struct topo_gen_family fattree2_family = {
	.resolve = ft2_resolve,
	.build = ft2_build,
	.summary = ls_summary,
};

static int ls_resolve(struct topo_gen_params *p, struct sim_diag *d)
{
	char detail[96];

	if (ls_required(p, "leafspine", d))
		return -1;
	if (p->links == TOPO_GEN_UNSET)
		p->links = 1;
	snprintf(detail, sizeof(detail), "%d hosts + %d spines x %d links",
		 p->hosts, p->spines, p->links);
	if (topo_gen_check_ports("leafspine", "a leaf",
				 p->hosts + (int64_t)p->spines * p->links,
				 p->radix, detail, d))
		return -1;
	snprintf(detail, sizeof(detail), "%d leaves x %d links", p->leaves,
		 p->links);
	if (topo_gen_check_ports("leafspine", "a spine",
				 (int64_t)p->leaves * p->links, p->radix,
				 detail, d))
		return -1;
	return topo_gen_check_size("leafspine", (int64_t)p->leaves + p->spines,
				   (int64_t)p->leaves * p->hosts, d);
}

static int ls_build(struct topo_gen_build *b, const struct topo_gen_params *p)
{
	int used_leaf = p->hosts + p->spines * p->links;

	return topo_gen_b_two_level(b, p->leaves, p->spines, p->hosts, p->links,
				    topo_gen_nports(p->radix, used_leaf),
				    topo_gen_nports(p->radix, p->leaves * p->links));
}

static const struct topo_gen_family leafspine_family = {
	.resolve = ls_resolve,
	.build = ls_build,
	.summary = ls_summary,
};

/* ---- kinds and options ------------------------------------------------- */

static const struct {
	const char *name;
	const struct topo_gen_family *fam;
} kinds[TOPO_GEN_KIND_COUNT] = {
	[TOPO_GEN_FATTREE2] = { "fattree2", &fattree2_family },
	[TOPO_GEN_LEAFSPINE] = { "leafspine", &leafspine_family },
	[TOPO_GEN_FATTREE] = { "fattree", &topo_gen_fattree_family },
	[TOPO_GEN_TORUS] = { "torus", &topo_gen_torus_family },
	[TOPO_GEN_MESH] = { "mesh", &topo_gen_torus_family },
	[TOPO_GEN_DRAGONFLY] = { "dragonfly", &topo_gen_dragonfly_family },
	[TOPO_GEN_RAIL] = { "rail", &topo_gen_rail_family },
};

int topo_gen_kind_parse(const char *name)
{
	for (int k = 0; k < TOPO_GEN_KIND_COUNT; k++)
		if (name && !strcmp(name, kinds[k].name))
			return k;
	return -1;
}

const char *topo_gen_kind_name(enum topo_gen_kind kind)
{
	return (unsigned)kind < TOPO_GEN_KIND_COUNT ? kinds[kind].name : "?";
}

enum opt_type { O_COUNT, O_DIMS, O_RATIO, O_RATE, O_SERVER };

#define K(x) (1u << TOPO_GEN_##x)
#define OFF(f) offsetof(struct topo_gen_params, f)

/*
 * Every option, in the order the canonical command (file headers) lists
 * them, with the kinds that take it. `zero`: kinds where 0 is a valid count.
 */
static const struct opt {
	const char *name;
	enum opt_type type;
	size_t off;
	unsigned kinds, zero;
	int alias;	/* 1 + the row it is another name of (not in commands), 0 none */
} opts[] = {
	{ "--levels", O_COUNT, OFF(levels), K(FATTREE) | K(RAIL), 0, 0 },
	{ "--radix", O_COUNT, OFF(radix),
	  K(LEAFSPINE) | K(FATTREE) | K(TORUS) | K(MESH) | K(DRAGONFLY) | K(RAIL), 0, 0 },
	{ "--dims", O_DIMS, OFF(ndims), K(TORUS) | K(MESH), 0, 0 },
	{ "--groups", O_COUNT, OFF(groups), K(DRAGONFLY), 0, 0 },
	{ "--routers", O_COUNT, OFF(routers), K(DRAGONFLY), 0, 0 },
	{ "--global", O_COUNT, OFF(global), K(DRAGONFLY), 0, 0 },
	{ "--nodes", O_COUNT, OFF(nodes), K(RAIL), 0, 0 },
	{ "--gpus", O_COUNT, OFF(gpus), K(RAIL), 0, 0 },
	{ "--servers", O_COUNT, OFF(nodes), K(RAIL), 0, 1 + 6 },	/* --nodes' row */
	{ "--server", O_SERVER, OFF(server), K(RAIL), 0, 0 },
	{ "--pods", O_COUNT, OFF(pods), K(FATTREE), 0, 0 },
	{ "--leaves", O_COUNT, OFF(leaves), K(FATTREE2) | K(LEAFSPINE) | K(FATTREE), 0, 0 },
	{ "--spines", O_COUNT, OFF(spines),
	  K(FATTREE2) | K(LEAFSPINE) | K(FATTREE) | K(RAIL), K(FATTREE2), 0 },
	{ "--hosts", O_COUNT, OFF(hosts),
	  K(FATTREE2) | K(LEAFSPINE) | K(FATTREE) | K(TORUS) | K(MESH) | K(DRAGONFLY), 0, 0 },
	{ "--links-per-spine", O_COUNT, OFF(links), K(FATTREE2) | K(LEAFSPINE), 0, 0 },
	{ "--oversub", O_RATIO, OFF(over_hosts), K(FATTREE) | K(RAIL), 0, 0 },
	{ "--rate", O_RATE, OFF(rate), ~0u, 0, 0 },
};

static int *field(struct topo_gen_params *p, const struct opt *o)
{
	return (int *)((char *)p + o->off);
}

static int cfield(const struct topo_gen_params *p, const struct opt *o)
{
	return *(const int *)((const char *)p + o->off);
}

void topo_gen_params_init(struct topo_gen_params *p, enum topo_gen_kind kind)
{
	memset(p, 0, sizeof(*p));
	p->kind = kind;
	p->rate = TOPO_DEFAULT_RATE;
	for (unsigned i = 0; i < SIM_ARRAY_SIZE(opts); i++)
		if (opts[i].type == O_COUNT)
			*field(p, &opts[i]) = TOPO_GEN_UNSET;
	p->over_hosts = p->over_up = TOPO_GEN_UNSET;
	p->ndims = 0;
}

/* Some row is another name for row k. */
static bool has_alias(unsigned k)
{
	for (unsigned i = 0; i < SIM_ARRAY_SIZE(opts); i++)
		if (opts[i].alias == (int)k + 1)
			return true;
	return false;
}

/* "--leaves, --spines, ..." for the kind, for "unknown option" messages. */
static void opt_list(enum topo_gen_kind kind, char *buf, size_t len)
{
	size_t k = 0;

	buf[0] = 0;
	for (unsigned i = 0; i < SIM_ARRAY_SIZE(opts) && k < len; i++)
		if (opts[i].kinds & (1u << kind))
			k += snprintf(buf + k, len - k, "%s%s", k ? ", " : "",
				      opts[i].name);
}

/* A whole number in [lo, TOPO_GEN_MAX_COUNT], all of `s`. */
static int parse_int(const char *s, int lo, int *v)
{
	char *end;
	long x;

	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		return -1;
	errno = 0;
	x = strtol(s, &end, 10);
	if (end == s || *end || errno || x < lo || x > TOPO_GEN_MAX_COUNT)
		return -1;
	*v = (int)x;
	return 0;
}

/* "4x4" or "4x4x2": 1 to 3 sizes >= 1 joined by single x (families ask more). */
static int parse_dims(const char *s, struct topo_gen_params *p)
{
	int n = 0;

	for (;;) {
		char num[16];
		size_t k = 0;

		while (s[k] >= '0' && s[k] <= '9')
			k++;
		if (!k || k >= sizeof(num) || n == TOPO_GEN_MAX_DIMS)
			return -1;
		memcpy(num, s, k);
		num[k] = 0;
		if (parse_int(num, 1, &p->dims[n++]))
			return -1;
		s += k;
		if (!*s)
			break;
		if (*s != 'x' && *s != 'X')
			return -1;
		s++;
	}
	p->ndims = n;
	return 0;
}

/* "2:1": host ports to up-links. */
static int parse_ratio(const char *s, int *a, int *b)
{
	char buf[32], *colon;

	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	colon = strchr(buf, ':');
	if (!colon)
		return -1;
	*colon = 0;
	return parse_int(buf, 1, a) || parse_int(colon + 1, 1, b) ? -1 : 0;
}

int topo_gen_parse(struct topo_gen_params *p, int argc, char *const argv[],
		   struct sim_diag *d)
{
	unsigned given = 0;
	char known[300];
	int kind;

	sim_diag_clear(d);
	topo_gen_params_init(p, TOPO_GEN_FATTREE2);
	if (argc < 1 || !argv[0])
		return sim_diag_set(d, NULL, 0, 0,
				    "missing the kind of topology (fattree, leafspine, torus, mesh, dragonfly, rail, fattree2)");
	kind = topo_gen_kind_parse(argv[0]);
	if (kind < 0)
		return sim_diag_set(d, NULL, 0, 0,
				    "unknown topology '%s' (known: fattree, leafspine, torus, mesh, dragonfly, rail, fattree2)",
				    argv[0]);
	topo_gen_params_init(p, (enum topo_gen_kind)kind);
	opt_list(p->kind, known, sizeof(known));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL;
		const struct opt *o = NULL;
		unsigned k;

		for (k = 0; k < SIM_ARRAY_SIZE(opts); k++) {
			size_t ol = strlen(opts[k].name);

			if (!strncmp(a, opts[k].name, ol) && (a[ol] == '=' || !a[ol])) {
				o = &opts[k];
				val = a[ol] == '=' ? a + ol + 1 : NULL;
				break;
			}
		}
		if (!o)
			return sim_diag_set(d, NULL, 0, 0,
					    "%s: unknown option '%s' (%s takes %s)",
					    argv[0], a, argv[0], known);
		if (!(o->kinds & (1u << kind)))
			return sim_diag_set(d, NULL, 0, 0,
					    "%s: %s is not an option of %s (it takes %s)",
					    argv[0], o->name, argv[0], known);
		if (o->alias)	/* --servers is --nodes */
			k = (unsigned)o->alias - 1;
		if (given & (1u << k))
			return sim_diag_set(d, NULL, 0, 0, "%s: %s is given twice%s", argv[0],
					    o->name, has_alias(k) ? " (--servers is another name for --nodes)" : "");
		given |= 1u << k;
		if (!val) {
			if (i + 1 >= argc)
				return sim_diag_set(d, NULL, 0, 0,
						    "%s: %s needs a value", argv[0], o->name);
			val = argv[++i];
		}
		switch (o->type) {
		case O_COUNT: {
			int lo = o->zero & (1u << kind) ? 0 : 1;

			if (parse_int(val, lo, field(p, o)))
				return sim_diag_set(d, NULL, 0, 0,
						    "%s: %s wants a whole number from %d to %d, got '%s'",
						    argv[0], o->name, lo,
						    TOPO_GEN_MAX_COUNT, val);
			break;
		}
		case O_DIMS:
			if (parse_dims(val, p))
				return sim_diag_set(d, NULL, 0, 0,
						    "%s: --dims wants 1 to 3 sizes like 4x4 or 4x4x2, got '%s'",
						    argv[0], val);
			break;
		case O_RATIO:
			if (parse_ratio(val, &p->over_hosts, &p->over_up))
				return sim_diag_set(d, NULL, 0, 0,
						    "%s: --oversub wants host ports:up-links like 2:1, got '%s'",
						    argv[0], val);
			break;
		case O_SERVER:
			p->server = val;	/* its name is checked by the family */
			break;
		case O_RATE: {
			struct link_rate r;

			p->rate_given = true;
			if (!strcmp(val, "none")) {
				p->rate = NULL;
			} else if (topo_rate_parse(val, &r)) {
				return sim_diag_set(d, NULL, 0, 0,
						    "%s: --rate wants width x speed like 4xHDR or 1xSDR (or 'none'), got '%s'",
						    argv[0], val);
			} else {
				p->rate = val;
			}
			break;
		}
		}
	}
	return 0;
}

static unsigned gcd(unsigned a, unsigned b)
{
	while (b) {
		unsigned t = a % b;

		a = b;
		b = t;
	}
	return a;
}

int topo_gen_resolve(const struct topo_gen_params *in,
		     struct topo_gen_params *out, struct sim_diag *d)
{
	struct link_rate r;
	const char *kind;

	sim_diag_clear(d);
	*out = *in;
	if ((unsigned)in->kind >= TOPO_GEN_KIND_COUNT)
		return sim_diag_set(d, NULL, 0, 0, "unknown topology kind %d",
				    (int)in->kind);
	kind = kinds[in->kind].name;
	/* Library callers fill the struct themselves: check what parse checks. */
	for (unsigned i = 0; i < SIM_ARRAY_SIZE(opts); i++) {
		const struct opt *o = &opts[i];
		bool set;
		int v = 0;

		if (o->type == O_RATE)
			continue;
		if (o->type == O_SERVER) {
			if (in->server && !(o->kinds & (1u << in->kind)))
				return sim_diag_set(d, NULL, 0, 0, "%s: %s is not an option of %s",
						    kind, o->name, kind);
			continue;
		}
		if (o->type == O_DIMS) {
			set = in->ndims != 0;
		} else {
			v = cfield(in, o);
			set = v != TOPO_GEN_UNSET;
			if (o->type == O_RATIO)
				set = set || in->over_up != TOPO_GEN_UNSET;
		}
		if (set && !(o->kinds & (1u << in->kind)))
			return sim_diag_set(d, NULL, 0, 0,
					    "%s: %s is not an option of %s", kind,
					    o->name, kind);
		if (o->type == O_COUNT && set &&
		    (v < (o->zero & (1u << in->kind) ? 0 : 1) ||
		     v > TOPO_GEN_MAX_COUNT))
			return sim_diag_set(d, NULL, 0, 0,
					    "%s: %s must be a whole number from %d to %d, got %d",
					    kind, o->name,
					    o->zero & (1u << in->kind) ? 0 : 1,
					    TOPO_GEN_MAX_COUNT, v);
	}
	if (in->ndims < 0 || in->ndims > TOPO_GEN_MAX_DIMS)
		return sim_diag_set(d, NULL, 0, 0,
				    "%s: --dims has %d sizes, expected 1 to %d",
				    kind, in->ndims, TOPO_GEN_MAX_DIMS);
	for (int i = 0; i < in->ndims; i++)
		if (in->dims[i] < 1 || in->dims[i] > TOPO_GEN_MAX_COUNT)
			return sim_diag_set(d, NULL, 0, 0,
					    "%s: --dims size %d is %d, expected 1 to %d",
					    kind, i + 1, in->dims[i], TOPO_GEN_MAX_COUNT);
	if ((in->over_hosts == TOPO_GEN_UNSET) != (in->over_up == TOPO_GEN_UNSET) ||
	    (in->over_hosts != TOPO_GEN_UNSET &&
	     (in->over_hosts < 1 || in->over_up < 1 ||
	      in->over_hosts > TOPO_GEN_MAX_COUNT || in->over_up > TOPO_GEN_MAX_COUNT)))
		return sim_diag_set(d, NULL, 0, 0,
				    "%s: --oversub wants two whole numbers >= 1 (host ports:up-links), got %d:%d",
				    kind, in->over_hosts, in->over_up);
	if (out->over_hosts != TOPO_GEN_UNSET) {
		/* 4:2 is 2:1: the leaf splits in multiples of the reduced ratio. */
		unsigned g = gcd((unsigned)out->over_hosts, (unsigned)out->over_up);

		out->over_hosts /= (int)g;
		out->over_up /= (int)g;
	}
	if (in->rate && topo_rate_parse(in->rate, &r))
		return sim_diag_set(d, NULL, 0, 0,
				    "%s: bad rate '%s' (expected width x speed, e.g. 4xHDR)",
				    kind, in->rate);
	if (in->radix != TOPO_GEN_UNSET && in->radix > NET_MAX_PORTS)
		return sim_diag_set(d, NULL, 0, 0,
				    "%s: --radix %d is more than a switch can have (%d ports: IBA NumPorts is 8 bits)",
				    kind, in->radix, NET_MAX_PORTS);
	return kinds[in->kind].fam->resolve(out, d);
}

void topo_gen_command(const struct topo_gen_params *p, char *buf, size_t len)
{
	size_t k;

	k = (size_t)snprintf(buf, len, "%s", topo_gen_kind_name(p->kind));
	for (unsigned i = 0; i < SIM_ARRAY_SIZE(opts) && k < len; i++) {
		const struct opt *o = &opts[i];

		if (!(o->kinds & (1u << p->kind)) || o->alias)
			continue;
		switch (o->type) {
		case O_SERVER:
			if (p->server)
				k += snprintf(buf + k, len - k, " %s %s", o->name, p->server);
			break;
		case O_COUNT:
			if (cfield(p, o) != TOPO_GEN_UNSET)
				k += snprintf(buf + k, len - k, " %s %d", o->name,
					      cfield(p, o));
			break;
		case O_DIMS:
			for (int j = 0; j < p->ndims && k < len; j++)
				k += snprintf(buf + k, len - k, "%s%d",
					      j ? "x" : " --dims ", p->dims[j]);
			break;
		case O_RATIO:
			if (p->over_hosts != TOPO_GEN_UNSET)
				k += snprintf(buf + k, len - k, " %s %d:%d", o->name,
					      p->over_hosts, p->over_up);
			break;
		case O_RATE:
			k += snprintf(buf + k, len - k, " %s %s", o->name,
				      p->rate ? p->rate : "none");
			break;
		}
	}
}

/* Build from resolved params. */
static int build(struct net *out, const struct topo_gen_params *p,
		 struct sim_diag *d)
{
	struct topo_gen_build b;

	build_begin(&b, out, kinds[p->kind].name, d);
	if (kinds[p->kind].fam->build(&b, p) || build_finish(&b, p->rate)) {
		net_free(out);
		return -1;
	}
	return 0;
}

int topo_gen_net(struct net *out, const struct topo_gen_params *p,
		 struct sim_diag *d)
{
	struct topo_gen_params r;

	net_init(out);
	if (topo_gen_resolve(p, &r, d))
		return -1;
	return build(out, &r, d);
}

static int gen_write(FILE *out, const void *arg, struct sim_diag *d)
{
	const struct topo_gen_params *p = arg;
	struct topo_gen_params r;
	char line[512];
	struct net n;
	int rc;

	if (topo_gen_resolve(p, &r, d))
		return -1;
	if (r.kind == TOPO_GEN_FATTREE2) {
		/* Its own header, byte for byte as the shipped examples have it. */
		if (topo_gen_fattree2(out, r.leaves, r.spines, r.hosts, r.links,
				      r.rate))
			return sim_diag_set(d, NULL, 0, 0, "fattree2: cannot write");
		return 0;
	}
	if (build(&n, &r, d))
		return -1;
	kinds[r.kind].fam->summary(&r, line, sizeof(line));
	fprintf(out, "#\n# %s, %s\n", line, r.rate ? r.rate : "no rate");
	fprintf(out, "# %d host%s, %d switch%s, %d cable%s\n", net_nhosts(&n),
		net_nhosts(&n) == 1 ? "" : "s", net_count(&n, NET_SWITCH),
		net_count(&n, NET_SWITCH) == 1 ? "" : "es", net_nlinks(&n),
		net_nlinks(&n) == 1 ? "" : "s");
	topo_gen_command(&r, line, sizeof(line));
	fprintf(out, "# ibfab topo gen %s\n"
		"# generated by ibfab (topologies/topo_gen*.c)\n", line);
	/* what `ibfab run` reads as the default of server.preset */
	if (r.server)
		fprintf(out, "# ibfab: server=%s\n", r.server);
	fprintf(out, "#\n\n");
	rc = topo_write_ibnd(&n, out);
	net_free(&n);
	if (rc)
		return sim_diag_set(d, NULL, 0, 0, "%s: cannot write: %s",
				    kinds[r.kind].name, strerror(errno));
	return 0;
}

int topo_gen_write(FILE *out, const struct topo_gen_params *p,
		   struct sim_diag *d)
{
	return gen_write(out, p, d);
}

char *topo_gen_str(const struct topo_gen_params *p, struct sim_diag *d)
{
	return to_string(gen_write, p, d);
}
