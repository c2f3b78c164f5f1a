/* SPDX-License-Identifier: MIT */
/*
 * net.c - the fabric graph: nodes, ports, cables, LIDs (see net.h).
 *
 * Node ids and descriptions are found through open-addressing hash tables
 * (FNV-1a, linear probing, kept at most half full), so parsing a 10k-node
 * ibnetdiscover dump stays linear. Cables named in a file are first recorded
 * as references (struct net_ref) and resolved by net_validate(), because
 * ibsim net files name nodes before declaring them.
 *
 * LIDs follow IBA 4.1.3 / 14.2.5.6: a switch has one LID on its management
 * port 0, every CA or router port has its own 2^LMC of them from an aligned
 * base (IBA 7.11.1), all mapped back in lid_node/lid_port. Left out: LMC on
 * an enhanced switch port 0, multicast LIDs, GIDs.
 */
#include "models/net/net.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void net_init(struct net *n)
{
	memset(n, 0, sizeof(*n));
}

static void free_lids(struct net *n)
{
	free(n->lid_node);
	free(n->lid_port);
	n->lid_node = NULL;
	n->lid_port = NULL;
	n->max_lid = 0;
}

void net_free(struct net *n)
{
	for (int i = 0; i < n->nnodes; i++) {
		free(n->nodes[i].id);
		free(n->nodes[i].desc);
		free(n->nodes[i].ports);
		free(n->nodes[i].lft);
	}
	free(n->nodes);
	for (int i = 0; i < n->nfiles; i++)
		free(n->files[i]);
	free(n->files);
	for (int i = 0; i < n->nrefs; i++)
		free(n->refs[i].remote_id);
	free(n->refs);
	free(n->idx);
	free(n->didx);
	free(n->host_list);
	free_lids(n);
	net_init(n);
}

static void *dup_mem(const void *src, size_t bytes)
{
	void *p = bytes ? malloc(bytes) : NULL;

	if (p)
		memcpy(p, src, bytes);
	return p;
}

int net_dup(struct net *dst, const struct net *src)
{
	net_init(dst);
	dst->nodes = calloc((size_t)src->nnodes + 1, sizeof(*dst->nodes));
	dst->files = calloc((size_t)src->nfiles + 1, sizeof(*dst->files));
	if (!dst->nodes || !dst->files)
		goto fail;
	dst->cap = src->nnodes + 1;
	for (int i = 0; i < src->nfiles; i++)
		if (!(dst->files[dst->nfiles++] = strdup(src->files[i])))
			goto fail;
	for (int i = 0; i < src->nnodes; i++) {
		const struct net_node *s = &src->nodes[i];
		struct net_node *d = &dst->nodes[i];

		*d = *s;
		d->id = strdup(s->id);
		d->desc = strdup(s->desc);
		d->ports = dup_mem(s->ports, ((size_t)s->nports + 1) * sizeof(*s->ports));
		d->lft = s->lft ? dup_mem(s->lft, s->lft_len) : NULL;
		dst->nnodes++;
		if (!d->id || !d->desc || !d->ports || (s->lft && s->lft_len && !d->lft))
			goto fail;
		/* where a line came from: the copy's own file names */
		for (int k = 0; k < src->nfiles; k++) {
			if (s->file == src->files[k])
				d->file = dst->files[k];
			for (int p = 0; p <= s->nports; p++)
				if (s->ports[p].file == src->files[k])
					d->ports[p].file = dst->files[k];
		}
	}
	dst->max_lid = src->max_lid;
	memcpy(dst->server, src->server, sizeof(dst->server));
	dst->lmc = src->lmc;
	dst->sm_node = src->sm_node;
	if (src->lid_node) {
		dst->lid_node = dup_mem(src->lid_node, ((size_t)src->max_lid + 1) * sizeof(*src->lid_node));
		dst->lid_port = dup_mem(src->lid_port, ((size_t)src->max_lid + 1) * sizeof(*src->lid_port));
		if (!dst->lid_node || !dst->lid_port)
			goto fail;
	}
	dst->idx = src->idx_cap ? dup_mem(src->idx, src->idx_cap * sizeof(*src->idx)) : NULL;
	dst->idx_cap = dst->idx ? src->idx_cap : 0;
	dst->didx = src->didx_cap ? dup_mem(src->didx, src->didx_cap * sizeof(*src->didx)) : NULL;
	dst->didx_cap = dst->didx ? src->didx_cap : 0;
	if ((src->idx_cap && !dst->idx) || (src->didx_cap && !dst->didx))
		goto fail;
	return 0;
fail:
	net_free(dst);
	return -1;
}

/* ---- hash tables of strings -> node index ------------------------------ */

static uint32_t hash_str(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

/* Which string of node i a table is keyed on. */
static const char *key_id(const struct net_node *nd) { return nd->id; }
static const char *key_desc(const struct net_node *nd) { return nd->desc; }

static int hash_lookup(const struct net *n, const int *tab, uint32_t cap,
		       const char *(*key)(const struct net_node *), const char *s)
{
	if (!cap)
		return -1;
	for (uint32_t i = hash_str(s) & (cap - 1);; i = (i + 1) & (cap - 1)) {
		if (tab[i] < 0)
			return -1;
		if (!strcmp(key(&n->nodes[tab[i]]), s))
			return tab[i];
	}
}

static void hash_put(const struct net *n, int *tab, uint32_t cap,
		     const char *(*key)(const struct net_node *), int node)
{
	uint32_t i = hash_str(key(&n->nodes[node])) & (cap - 1);

	while (tab[i] >= 0)
		i = (i + 1) & (cap - 1);
	tab[i] = node;
}

/*
 * Make room for one more entry (rehashing every node 0..upto-1 into a table
 * twice as large when it would pass half full). For the description table
 * only the first node with a given description is entered.
 */
static int hash_grow(struct net *n, int **tab, uint32_t *cap, int upto,
		     const char *(*key)(const struct net_node *), bool first_only)
{
	uint32_t ncap;
	int *t;

	if ((uint64_t)(upto + 1) * 2 <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 64;
	while ((uint64_t)(upto + 1) * 2 > ncap)
		ncap *= 2;
	t = malloc(sizeof(*t) * ncap);
	if (!t)
		return -1;
	memset(t, 0xff, sizeof(*t) * ncap);
	for (int i = 0; i < upto; i++) {
		if (first_only && hash_lookup(n, t, ncap, key, key(&n->nodes[i])) >= 0)
			continue;
		hash_put(n, t, ncap, key, i);
	}
	free(*tab);
	*tab = t;
	*cap = ncap;
	return 0;
}

/* ---- nodes ------------------------------------------------------------- */

const char *net_add_file(struct net *n, const char *path)
{
	char **f;

	for (int i = 0; i < n->nfiles; i++)
		if (!strcmp(n->files[i], path))
			return n->files[i];
	f = realloc(n->files, sizeof(*f) * (n->nfiles + 1));
	if (!f)
		return NULL;
	n->files = f;
	f[n->nfiles] = strdup(path);
	if (!f[n->nfiles])
		return NULL;
	return f[n->nfiles++];
}

static bool printable(const char *s)
{
	for (; *s; s++)
		if (*s == '"' || (unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

int net_add_node(struct net *n, enum net_node_type type, int nports,
		 const char *id, const char *desc, struct sim_diag *d)
{
	struct net_node *nd;
	int old;

	if (!id || !*id)
		return sim_diag_set(d, NULL, 0, 0, "empty node id");
	/* Ids and descriptions are written back quoted, one per line. */
	if (!printable(id) || (desc && !printable(desc)))
		return sim_diag_set(d, NULL, 0, 0,
				    "node id or description with a '\"' or a control character");
	if (nports < 1 || nports > NET_MAX_PORTS)
		return sim_diag_set(d, NULL, 0, 0,
				    "port count %d out of range 1..%d", nports,
				    NET_MAX_PORTS);
	old = net_find(n, id);
	if (old >= 0) {
		const struct net_node *o = &n->nodes[old];

		if (o->file && o->line)
			return sim_diag_set(d, NULL, 0, 0,
					    "duplicate node id \"%s\" (first declared at %s:%d)",
					    id, o->file, o->line);
		return sim_diag_set(d, NULL, 0, 0, "duplicate node id \"%s\"", id);
	}
	if (n->nnodes == n->cap) {
		int ncap = n->cap ? n->cap * 2 : 64;
		struct net_node *nn = realloc(n->nodes, sizeof(*nn) * ncap);

		if (!nn)
			goto nomem;
		n->nodes = nn;
		n->cap = ncap;
	}
	if (hash_grow(n, &n->idx, &n->idx_cap, n->nnodes, key_id, false) ||
	    hash_grow(n, &n->didx, &n->didx_cap, n->nnodes, key_desc, true))
		goto nomem;
	nd = &n->nodes[n->nnodes];
	memset(nd, 0, sizeof(*nd));
	nd->type = type;
	nd->nports = nports;
	nd->id = strdup(id);
	nd->desc = strdup(desc && *desc ? desc : id);
	nd->ports = calloc(nports + 1, sizeof(*nd->ports));
	if (!nd->id || !nd->desc || !nd->ports) {
		free(nd->id);
		free(nd->desc);
		free(nd->ports);
		goto nomem;
	}
	for (int p = 0; p <= nports; p++) {
		nd->ports[p].remote_node = -1;
		nd->ports[p].remote_port = -1;
		nd->ports[p].cable_m = -1;
	}
	hash_put(n, n->idx, n->idx_cap, key_id, n->nnodes);
	if (hash_lookup(n, n->didx, n->didx_cap, key_desc, nd->desc) < 0)
		hash_put(n, n->didx, n->didx_cap, key_desc, n->nnodes);
	n->hosts_valid = false;
	return n->nnodes++;
nomem:
	return sim_diag_set(d, NULL, 0, 0, "out of memory");
}

int net_find(const struct net *n, const char *id)
{
	return hash_lookup(n, n->idx, n->idx_cap, key_id, id);
}

int net_first_port(const struct net *n, int node)
{
	const struct net_node *nd;

	if (node < 0 || node >= n->nnodes)
		return -1;
	nd = &n->nodes[node];
	for (int p = 1; p <= nd->nports; p++)
		if (nd->ports[p].remote_node >= 0)
			return p;
	return -1;
}

/* Hosts depend on connectivity, so the list is rebuilt after any change. */
static void hosts_rebuild(struct net *n)
{
	int *h = realloc(n->host_list, sizeof(*h) * (n->nnodes ? n->nnodes : 1));

	if (!h)
		return;		/* keep hosts_valid false: callers scan */
	n->host_list = h;
	n->host_count = 0;
	for (int i = 0; i < n->nnodes; i++)
		if (n->nodes[i].type == NET_CA && !n->nodes[i].agg && net_first_port(n, i) >= 0)
			h[n->host_count++] = i;
	n->hosts_valid = true;
}

int net_nhosts(const struct net *n)
{
	int k = 0;

	if (n->hosts_valid)
		return n->host_count;
	for (int i = 0; i < n->nnodes; i++)
		if (n->nodes[i].type == NET_CA && !n->nodes[i].agg && net_first_port(n, i) >= 0)
			k++;
	return k;
}

int net_host(const struct net *n, int k)
{
	if (k < 0)
		return -1;
	if (n->hosts_valid)
		return k < n->host_count ? n->host_list[k] : -1;
	for (int i = 0; i < n->nnodes; i++)
		if (n->nodes[i].type == NET_CA && !n->nodes[i].agg && net_first_port(n, i) >= 0 && k-- == 0)
			return i;
	return -1;
}

int net_find_host(const struct net *n, const char *name)
{
	int i = hash_lookup(n, n->didx, n->didx_cap, key_desc, name);
	char *end;
	long k;

	if (i >= 0)
		return i;
	i = net_find(n, name);
	if (i >= 0)
		return i;
	if (name[0] != '#' || name[1] < '0' || name[1] > '9')
		return -1;
	errno = 0;
	k = strtol(name + 1, &end, 10);
	if (*end || errno || k > 0x7fffffff)
		return -1;
	return net_host(n, (int)k);
}

/* ---- cables ------------------------------------------------------------ */

static const char *loc_file(const struct net_port *p, char *buf, unsigned len)
{
	if (p->file && p->line)
		snprintf(buf, len, " (%s:%d)", p->file, p->line);
	else if (p->line)
		snprintf(buf, len, " (line %d)", p->line);
	else
		buf[0] = 0;
	return buf;
}

int net_connect_at(struct net *n, int a, int pa, int b, int pb,
		   const char *file, int line, int col, struct sim_diag *d)
{
	struct net_port *x, *y;
	char where[300];

	if (a < 0 || a >= n->nnodes || b < 0 || b >= n->nnodes)
		return sim_diag_set(d, file, line, col, "no such node");
	if (!file)
		file = n->nodes[a].file;
	if (pa < 1 || pa > n->nodes[a].nports)
		return sim_diag_set(d, file, line, col,
				    "port %d out of range 1..%d for \"%s\"", pa,
				    n->nodes[a].nports, n->nodes[a].id);
	if (pb < 1 || pb > n->nodes[b].nports)
		return sim_diag_set(d, file, line, col,
				    "remote port %d out of range 1..%d for \"%s\"",
				    pb, n->nodes[b].nports, n->nodes[b].id);
	if (a == b && pa == pb)
		return sim_diag_set(d, file, line, col,
				    "port %d of \"%s\" is cabled to itself", pa,
				    n->nodes[a].id);
	x = &n->nodes[a].ports[pa];
	y = &n->nodes[b].ports[pb];
	/* The same cable seen from its other end (ibnetdiscover lists both). */
	if (x->remote_node == b && x->remote_port == pb &&
	    y->remote_node == a && y->remote_port == pa)
		return 0;
	if (x->remote_node >= 0)
		return sim_diag_set(d, file, line, col,
				    "conflicting link: \"%s\"[%d] is already connected to \"%s\"[%d]%s, not \"%s\"[%d]",
				    n->nodes[a].id, pa,
				    n->nodes[x->remote_node].id, x->remote_port,
				    loc_file(x, where, sizeof(where)),
				    n->nodes[b].id, pb);
	if (y->remote_node >= 0)
		return sim_diag_set(d, file, line, col,
				    "conflicting link: \"%s\"[%d] is already connected to \"%s\"[%d]%s, not \"%s\"[%d]",
				    n->nodes[b].id, pb,
				    n->nodes[y->remote_node].id, y->remote_port,
				    loc_file(y, where, sizeof(where)),
				    n->nodes[a].id, pa);
	x->remote_node = b;
	x->remote_port = pb;
	x->line = line;
	x->file = file;
	y->remote_node = a;
	y->remote_port = pa;
	y->line = line;
	y->file = file;
	n->hosts_valid = false;
	return 0;
}

int net_connect(struct net *n, int a, int pa, int b, int pb, int line,
		struct sim_diag *d)
{
	return net_connect_at(n, a, pa, b, pb, NULL, line, 0, d);
}

void net_set_link_rate(struct net *n, int node, int port, uint8_t lanes,
		       uint8_t speed)
{
	struct net_port *p;

	if (node < 0 || node >= n->nnodes || port < 0 || port > n->nodes[node].nports)
		return;
	p = &n->nodes[node].ports[port];
	p->lanes = lanes;
	p->speed = speed;
	if (p->remote_node >= 0) {
		struct net_port *r = &n->nodes[p->remote_node].ports[p->remote_port];

		r->lanes = lanes;
		r->speed = speed;
	}
}

int net_refer(struct net *n, int node, int port, const char *remote_id,
	      int remote_port, uint8_t lanes, uint8_t speed,
	      const char *file, int line, int col, struct sim_diag *d)
{
	struct net_ref *r;

	if (n->nrefs == n->refs_cap) {
		int ncap = n->refs_cap ? n->refs_cap * 2 : 128;
		struct net_ref *nr = realloc(n->refs, sizeof(*nr) * ncap);

		if (!nr)
			return sim_diag_set(d, file, line, col, "out of memory");
		n->refs = nr;
		n->refs_cap = ncap;
	}
	r = &n->refs[n->nrefs];
	r->remote_id = strdup(remote_id);
	if (!r->remote_id)
		return sim_diag_set(d, file, line, col, "out of memory");
	r->node = node;
	r->port = port;
	r->remote_port = remote_port;
	r->lanes = lanes;
	r->speed = speed;
	r->file = file;
	r->line = line;
	r->col = col;
	n->nrefs++;
	return 0;
}

/*
 * A rate stated on one end's line applies to the cable. If the two ends both
 * state one, they must agree: a 4x cable cannot be 12x from the other side.
 */
static int merge_rate(struct net *n, const struct net_ref *r, int b, int pb,
		      struct sim_diag *d)
{
	struct net_port *x = &n->nodes[r->node].ports[r->port];
	struct net_port *y = &n->nodes[b].ports[pb];
	const char *prev_file = x->file;
	int prev_line = x->line;

	/* x->file/line name the line that first declared this cable; if that
	 * is this very line, the other end's declaration is the one to blame. */
	if (r->lanes && x->lanes && x->lanes != r->lanes)
		return sim_diag_set(d, r->file, r->line, r->col,
				    "link width %ux disagrees with %ux stated for the other end (%s:%d)",
				    r->lanes, x->lanes, prev_file ? prev_file : "?",
				    prev_line);
	if (r->speed && x->speed && x->speed != r->speed)
		return sim_diag_set(d, r->file, r->line, r->col,
				    "link speed %s disagrees with %s stated for the other end (%s:%d)",
				    link_speed_info(r->speed)->name,
				    link_speed_info(x->speed)->name,
				    prev_file ? prev_file : "?", prev_line);
	if (r->lanes)
		x->lanes = y->lanes = r->lanes;
	if (r->speed)
		x->speed = y->speed = r->speed;
	return 0;
}

int net_validate(struct net *n, struct sim_diag *d)
{
	int rc = 0;

	for (int i = 0; i < n->nrefs && !rc; i++) {
		const struct net_ref *r = &n->refs[i];
		int b = net_find(n, r->remote_id);

		if (b < 0) {
			rc = sim_diag_set(d, r->file, r->line, r->col,
					  "link to undeclared node \"%s\"",
					  r->remote_id);
			break;
		}
		if (r->remote_port < 1 || r->remote_port > n->nodes[b].nports) {
			rc = sim_diag_set(d, r->file, r->line, r->col,
					  "remote port %d out of range 1..%d for \"%s\" (declared at %s:%d)",
					  r->remote_port, n->nodes[b].nports,
					  r->remote_id,
					  n->nodes[b].file ? n->nodes[b].file : "?",
					  n->nodes[b].line);
			break;
		}
		rc = net_connect_at(n, r->node, r->port, b, r->remote_port,
				    r->file, r->line, r->col, d);
		if (!rc)
			rc = merge_rate(n, r, b, r->remote_port, d);
	}
	for (int i = 0; i < n->nrefs; i++)
		free(n->refs[i].remote_id);
	n->nrefs = 0;
	if (rc)
		return rc;

	/* Whoever built the graph without refs must still have kept it sane. */
	for (int i = 0; i < n->nnodes; i++) {
		const struct net_node *nd = &n->nodes[i];

		for (int p = 1; p <= nd->nports; p++) {
			const struct net_port *x = &nd->ports[p];
			const struct net_port *y;

			if (x->remote_node < 0)
				continue;
			if (x->remote_node >= n->nnodes || x->remote_port < 1 ||
			    x->remote_port > n->nodes[x->remote_node].nports)
				return sim_diag_set(d, nd->file, x->line, 0,
						    "\"%s\"[%d]: remote port out of range",
						    nd->id, p);
			y = &n->nodes[x->remote_node].ports[x->remote_port];
			if (y->remote_node != i || y->remote_port != p)
				return sim_diag_set(d, nd->file, x->line, 0,
						    "\"%s\"[%d]: link recorded on one end only",
						    nd->id, p);
		}
	}
	hosts_rebuild(n);
	return 0;
}

/* ---- LIDs -------------------------------------------------------------- */

static bool needs_lid(const struct net_node *nd, int p)
{
	return nd->type != NET_SWITCH && nd->ports[p].remote_node >= 0;
}

/* LMC of a node's ports: `lmc` when one is asked for, else the node's own. */
static unsigned node_lmc(const struct net_node *nd, int lmc)
{
	if (nd->type == NET_SWITCH)
		return 0;	/* base switch port 0: LMC 0 (IBA 14.2.5.6) */
	if (lmc >= 0)
		return (unsigned)lmc;
	return nd->lmc <= NET_LMC_MAX ? nd->lmc : 0;
}

/*
 * Check the LIDs written in the nodes: every switch and connected CA/router
 * port has one, each port's 2^lmc LIDs are unicast, aligned (IBA 7.11.1)
 * and owned by nobody else. `lmc` as node_lmc(). Returns 0 with *max set,
 * or -1 with d filled (d may be NULL when only the verdict matters).
 */
static int check_lids(const struct net *n, int lmc, net_lid_t *max,
		      struct sim_diag *d)
{
	/* owner of each LID: node index + 1 and port, so the message can
	 * name both claimants */
	int *owner = calloc((size_t)net_lid_limit(n) + 1, sizeof(*owner));
	uint8_t *oport = calloc((size_t)net_lid_limit(n) + 1, 1);
	struct sim_diag scratch;
	int rc = 0, count = 0;

	if (!d)
		d = &scratch;
	*max = 0;
	if (!owner || !oport) {
		rc = sim_diag_set(d, NULL, 0, 0, "out of memory");
		goto out;
	}
	for (int i = 0; i < n->nnodes && !rc; i++) {
		const struct net_node *nd = &n->nodes[i];
		unsigned c = 1u << node_lmc(nd, lmc);

		for (int p = 0; p <= nd->nports && !rc; p++) {
			uint32_t lid;

			if (nd->type == NET_SWITCH ? p != 0 : !needs_lid(nd, p))
				continue;
			lid = nd->type == NET_SWITCH ? nd->lid : nd->ports[p].lid;
			if (lid == 0) {
				rc = sim_diag_set(d, nd->file, nd->line, 0,
						  "\"%s\" port %d has no LID", nd->desc, p);
				break;
			}
			if (lid & (c - 1)) {
				rc = sim_diag_set(d, nd->file, nd->line, 0,
						  "base LID %u of \"%s\" port %d is not a multiple of 2^LMC = %u (IBA 7.11.1)",
						  lid, nd->desc, p, c);
				break;
			}
			if (lid + c - 1 > net_lid_limit(n)) {
				rc = sim_diag_set(d, nd->file, nd->line, 0,
						  "LIDs %u..%u of \"%s\" port %d pass the last unicast LID 0x%x",
						  lid, lid + c - 1, nd->desc, p, (unsigned)net_lid_limit(n));
				break;
			}
			for (uint32_t l = lid; l < lid + c; l++) {
				if (owner[l]) {
					rc = sim_diag_set(d, nd->file, nd->line, 0,
							  "LID %u of \"%s\" port %d is also LID of \"%s\" port %u",
							  l, nd->desc, p,
							  n->nodes[owner[l] - 1].desc, oport[l]);
					break;
				}
				owner[l] = i + 1;
				oport[l] = (uint8_t)p;
			}
			count++;
			if (lid + c - 1 > *max)
				*max = (net_lid_t)(lid + c - 1);
		}
	}
	if (!rc && !count)
		rc = sim_diag_set(d, NULL, 0, 0, "no switch or connected port to give a LID");
out:
	free(owner);
	free(oport);
	return rc;
}

/* Build lid_node/lid_port from the LIDs in the nodes (checked already). */
static int fill_lid_tables(struct net *n, net_lid_t max, struct sim_diag *d)
{
	free_lids(n);
	n->lid_node = malloc(sizeof(*n->lid_node) * ((size_t)max + 1));
	n->lid_port = malloc((size_t)max + 1);
	if (!n->lid_node || !n->lid_port) {
		free_lids(n);
		return sim_diag_set(d, NULL, 0, 0, "out of memory");
	}
	for (uint32_t l = 0; l <= max; l++) {
		n->lid_node[l] = -1;
		n->lid_port[l] = 0;
	}
	n->lmc = 0;
	for (int i = 0; i < n->nnodes; i++) {
		const struct net_node *nd = &n->nodes[i];

		if (nd->type == NET_SWITCH) {
			n->lid_node[nd->lid] = i;
			n->lid_port[nd->lid] = 0;
			continue;
		}
		for (int p = 1; p <= nd->nports; p++) {
			unsigned c = 1u << nd->lmc;

			if (!needs_lid(nd, p))
				continue;
			for (unsigned k = 0; k < c; k++) {
				n->lid_node[nd->ports[p].lid + k] = i;
				n->lid_port[nd->ports[p].lid + k] = (uint8_t)p;
			}
			if (nd->lmc > n->lmc)
				n->lmc = nd->lmc;
		}
	}
	n->max_lid = max;
	return 0;
}

int net_install_lids(struct net *n, struct sim_diag *d)
{
	net_lid_t max;

	if (check_lids(n, NET_LMC_FILE, &max, d))
		return -1;
	return fill_lid_tables(n, max, d);
}

/*
 * The ports that get LIDs, in OpenSM's order (osm_lid_mgr.c): the subnet
 * manager's own node first, then every other port as OpenSM walks its port
 * GUID table (a switch's port 0 has the node's GUID). That table is keyed
 * by the GUID in network byte order, so on the little-endian hosts OpenSM
 * runs on it is walked by the byte-swapped GUID: the lowest byte first
 * (0x100001, 0x200001, 0x200002, 0x100003, ...). Ports without a GUID come
 * after those, in file order.
 */
struct lid_port {
	int node, port;
	uint64_t key;		/* 0: the SM's node; else the GUID, ~0 when unknown */
	int seq;		/* file order, for ties */
};

static int cmp_lid_port(const void *a, const void *b)
{
	const struct lid_port *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->seq - y->seq;
}

static int lid_order(const struct net *n, bool file_order, struct lid_port **out)
{
	struct lid_port *v;
	int cnt = 0;

	for (int i = 0; i < n->nnodes; i++)
		for (int p = 0; p <= n->nodes[i].nports; p++)
			cnt += n->nodes[i].type == NET_SWITCH ? !p : needs_lid(&n->nodes[i], p);
	v = malloc(sizeof(*v) * (size_t)(cnt + 1));
	if (!v)
		return -1;
	cnt = 0;
	for (int i = 0; i < n->nnodes; i++) {
		const struct net_node *nd = &n->nodes[i];

		for (int p = 0; p <= nd->nports; p++) {
			uint64_t g;

			if (nd->type == NET_SWITCH ? p != 0 : !needs_lid(nd, p))
				continue;
			g = nd->type == NET_SWITCH ? (nd->guid ? nd->guid : nd->ports[0].guid) :
			    nd->ports[p].guid;
			v[cnt] = (struct lid_port){
				.node = i, .port = p, .seq = cnt,
				.key = file_order || i == n->sm_node ? 0 :
				       g ? __builtin_bswap64(g) : UINT64_MAX,
			};
			cnt++;
		}
	}
	qsort(v, (size_t)cnt, sizeof(*v), cmp_lid_port);
	*out = v;
	return cnt;
}

static int assign_lids(struct net *n, int lmc, bool file_order, struct sim_diag *d)
{
	struct lid_port *order = NULL;
	net_lid_t max = 0;
	bool keep;

	if (lmc > NET_LMC_MAX || lmc < NET_LMC_FILE)
		return sim_diag_set(d, NULL, 0, 0, "LMC %d out of range 0..%d",
				    lmc, NET_LMC_MAX);
	keep = check_lids(n, lmc, &max, NULL) == 0;
	if (keep) {
		for (int i = 0; i < n->nnodes; i++)
			n->nodes[i].lmc = (uint8_t)node_lmc(&n->nodes[i], lmc);
	} else {
		unsigned c = 1u << (lmc > 0 ? lmc : 0);
		uint32_t next = 1;
		int cnt = lid_order(n, file_order, &order);

		if (cnt < 0)
			return sim_diag_set(d, NULL, 0, 0, "out of memory");
		for (int i = 0; i < n->nnodes; i++) {
			struct net_node *nd = &n->nodes[i];

			nd->lmc = nd->type == NET_SWITCH ? 0 : (uint8_t)(c > 1 ? lmc : 0);
			for (int p = 0; p <= nd->nports; p++)
				if (nd->type != NET_SWITCH)
					nd->ports[p].lid = 0;
		}
		for (int k = 0; k < cnt; k++) {
			struct net_node *nd = &n->nodes[order[k].node];

			if (nd->type == NET_SWITCH) {
				if (next > net_lid_limit(n))
					goto full;
				nd->lid = (net_lid_t)next++;
				continue;
			}
			/* IBA 7.11.1: the base's LMC low bits are 0 */
			next = (next + c - 1) & ~(c - 1);
			if (next + c - 1 > net_lid_limit(n))
				goto full;
			nd->ports[order[k].port].lid = (net_lid_t)next;
			next += c;
		}
		free(order);
		max = (net_lid_t)(next - 1);
	}
	return fill_lid_tables(n, max, d);
full:
	free(order);
	if (net_lid_limit(n) == NET_LID_UCAST_MAX)
		return sim_diag_set(d, NULL, 0, 0,
				    "too many endpoints for InfiniBand: its switches and ports need more than the %d unicast LIDs (IBA 4.1.3); an Ethernet fabric (--set fabric=roce or tcp) has no such limit",
				    NET_LID_UCAST_MAX);
	if (net_lid_limit(n) == 0xffff)
		return sim_diag_set(d, NULL, 0, 0,
				    "too many endpoints: more than the 65535 16-bit LIDs verbs programs address hosts by");
	return sim_diag_set(d, NULL, 0, 0, "too many endpoints: more than %u addresses needed",
			    (unsigned)net_lid_limit(n));
}

int net_assign_lids_lmc(struct net *n, int lmc, struct sim_diag *d)
{
	return assign_lids(n, lmc, false, d);
}

int net_assign_lids_file_order(struct net *n, struct sim_diag *d)
{
	return assign_lids(n, NET_LMC_FILE, true, d);
}

int net_assign_lids(struct net *n, struct sim_diag *d)
{
	return net_assign_lids_lmc(n, NET_LMC_FILE, d);
}

unsigned net_lid_count(const struct net *n, int node, int port)
{
	const struct net_node *nd;

	if (node < 0 || node >= n->nnodes)
		return 0;
	nd = &n->nodes[node];
	if (nd->type == NET_SWITCH)
		return nd->lid ? 1 : 0;
	if (port < 1 || port > nd->nports || !nd->ports[port].lid)
		return 0;
	return 1u << nd->lmc;
}

net_lid_t net_lid_of(const struct net *n, int node, int port)
{
	const struct net_node *nd;

	if (node < 0 || node >= n->nnodes)
		return 0;
	nd = &n->nodes[node];
	if (nd->type == NET_SWITCH)
		return nd->lid;
	if (port < 1 || port > nd->nports)
		return 0;
	return nd->ports[port].lid;
}

/* ---- counts ------------------------------------------------------------ */

int net_count(const struct net *n, enum net_node_type type)
{
	int k = 0;

	for (int i = 0; i < n->nnodes; i++)
		k += n->nodes[i].type == type;
	return k;
}

int net_nlinks(const struct net *n)
{
	int k = 0;

	/* Each cable is seen from both ends; count it at its smaller end. */
	for (int i = 0; i < n->nnodes; i++) {
		const struct net_node *nd = &n->nodes[i];

		for (int p = 1; p <= nd->nports; p++) {
			int r = nd->ports[p].remote_node;

			if (r > i || (r == i && nd->ports[p].remote_port > p))
				k++;
		}
	}
	return k;
}
