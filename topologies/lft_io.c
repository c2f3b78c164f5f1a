/* SPDX-License-Identifier: MIT */
/*
 * lft_io.c - LinearForwardingTables (IBA 14.2.5.10) in OpenSM's dump format
 * and ibroute's output (lft.h shows both).
 *
 * Writing follows OpenSM's dump_ucast_lfts() (osm_dump.c) line for line, so
 * OpenSM's `file` routing engine (osm_ucast_file.c) loads what we write: it
 * wants "Unicast lids" and " guid 0x<hex>" on a header, "0x<lid> <port>"
 * followed by a blank on an entry, and reads " portguid 0x<hex>" to remap
 * the LID to that port when its LIDs changed.
 *
 * Reading is stricter than OpenSM (which skips what it cannot use): a
 * simulation run on a half-understood table would be silently wrong, so
 * every line must be a header, an entry, ibroute's column titles, a
 * "N [valid ]lids dumped" trailer, a '#' comment or blank, and every table
 * must fit the topology. The file is parsed whole first, matched to the
 * topology second, and only then are LIDs and tables installed, so a
 * refused file changes nothing. The LMC of a port is read from how many
 * consecutive LIDs name it (ibroute's "path #k out of n" lines, OpenSM's
 * repeated port GUIDs). Left out: multicast tables (ibroute -M), refused.
 */
#include "topologies/lft.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_file.h"

#define DESC_MAX 128
/* A dump of a 2,000-switch fabric with 48K LIDs is about 8 GB (a line of
 * 60-80 bytes per LID per switch): the limit only stops a wrong file. */
#define LFT_MAX_FILE ((size_t)16 << 30)

struct lft_ent {
	net_lid_t lid;
	uint16_t port;		/* 255: no route (ibroute -a "illegal port") */
	int line;
	int block;
	uint64_t guid;		/* destination port GUID, 0: not given */
	int path_k;		/* ibroute "path #k": k (>= 2 for extra LMC LIDs), 0 */
	char desc[DESC_MAX];	/* destination description, "" when not given */
};

struct lft_block {
	int line;
	net_lid_t lid;		/* "Lid N", 0 for a DR path header */
	uint64_t guid;
	uint32_t max_lid;	/* from "[a-b]" */
	char desc[DESC_MAX];
	int first, count;	/* entries */
	int zero;		/* LID 0 entries (counted by ibroute, not kept) */
	int node;		/* resolved switch */
	bool ended;		/* saw its "lids dumped" line */
};

/* Who owns a LID, learnt from the file. */
struct owner {
	int node, port;		/* -1: unknown */
	int line;		/* where we learnt it */
};

struct lp {
	const char *name;
	struct net *n;
	struct sim_diag *d;
	struct lft_ent *ent;
	int nent, cent;
	struct lft_block *blk;
	int nblk, cblk;
	int cur;		/* current block, -1 before the first header */
	/* resolution */
	enum { BY_GUID, BY_LID, BY_NAME } mode;
	struct owner *own;	/* [0 .. NET_LID_UCAST_MAX] */
	struct gport { uint64_t guid; int node, port; } *gp;
	int ngp;
};

static int perr(struct lp *p, int line, int col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int perr(struct lp *p, int line, int col, const char *fmt, ...)
{
	char msg[sizeof(p->d->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return sim_diag_set(p->d, p->name, line, col, "%s", msg);
}

/* ---- writing ------------------------------------------------------------ */

static const char *type_str(enum net_node_type t)
{
	/* ib_get_node_type_str(), as OpenSM and ibroute print it */
	return t == NET_SWITCH ? "Switch" : t == NET_ROUTER ? "Router" : "Channel Adapter";
}

static uint64_t port_guid(const struct net *n, int node, int port)
{
	const struct net_node *nd = &n->nodes[node];

	if (nd->type == NET_SWITCH)
		return nd->ports[0].guid ? nd->ports[0].guid : nd->guid;
	return nd->ports[port].guid;
}

int lft_write_dump(const struct net *n, FILE *out)
{
	for (int s = 0; s < n->nnodes; s++) {
		const struct net_node *sw = &n->nodes[s];

		if (sw->type != NET_SWITCH || !sw->lft)
			continue;
		fprintf(out, "Unicast lids [0-%u] of switch Lid %u guid 0x%016" PRIx64 " ('%s'):\n",
			n->max_lid, sw->lid, port_guid(n, s, 0), sw->desc);
		for (uint32_t lid = 0; lid <= n->max_lid && lid < sw->lft_len; lid++) {
			unsigned p = sw->lft[lid];
			int o = n->lid_node ? n->lid_node[lid] : -1;

			if (p > (unsigned)sw->nports)
				continue;	/* 255: no route; OpenSM skips it */
			fprintf(out, "0x%04x %03u # ", lid, p);
			if (o >= 0)
				fprintf(out, "%s portguid 0x%016" PRIx64 ": '%s'\n",
					type_str(n->nodes[o].type),
					port_guid(n, o, n->lid_port[lid]), n->nodes[o].desc);
			else
				fputs("unknown node and type\n", out);
		}
		fprintf(out, "%u lids dumped\n", n->max_lid);
	}
	return ferror(out) ? -1 : 0;
}

/* ---- parsing ------------------------------------------------------------ */

static int add_entry(struct lp *p, const struct lft_ent *e)
{
	if (p->nent == p->cent) {
		int nc = p->cent ? p->cent * 2 : 256;
		struct lft_ent *ne = realloc(p->ent, sizeof(*ne) * (size_t)nc);

		if (!ne)
			return perr(p, e->line, 0, "out of memory");
		p->ent = ne;
		p->cent = nc;
	}
	p->ent[p->nent++] = *e;
	p->blk[p->cur].count++;
	return 0;
}

static void copy_desc(char *dst, const char *s, size_t len)
{
	if (len >= DESC_MAX)
		len = DESC_MAX - 1;
	memcpy(dst, s, len);
	dst[len] = 0;
}

/* A number in decimal or 0x hex (never octal); *end after it. */
static bool num(const char *s, const char **end, uint64_t max, uint64_t *v)
{
	bool hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
	char *e;

	if (!isdigit((unsigned char)*s) || (hex && !isxdigit((unsigned char)s[2])))
		return false;
	errno = 0;
	*v = strtoull(s, &e, hex ? 16 : 10);
	*end = e;
	return !errno && *v <= max;
}

/*
 * "Unicast lids [a-b] of switch (Lid N|DR path ...) guid 0x<hex> (desc):"
 * where desc may be quoted ('leaf0', OpenSM) or bare (ibroute).
 */
static int parse_header(struct lp *p, const char *s, const char *line, int ln)
{
	struct lft_block b = { .line = ln, .node = -1, .first = p->nent };
	const char *q = s + strlen("Unicast lids"), *g, *e, *close;
	uint64_t v;

	while (*q == ' ')
		q++;
	if (*q != '[' || !num(q + 1, &e, NET_LID_UCAST_MAX, &v) || *e != '-' ||
	    !num(e + 1, &e, 0xffff, &v) || *e != ']')
		return perr(p, ln, (int)(q - line) + 1,
			    "expected the LID range '[first-last]' after 'Unicast lids'");
	b.max_lid = (uint32_t)v;
	if (strncmp(e, "] of switch ", 12))
		return perr(p, ln, (int)(e - line) + 1, "expected '] of switch ' after the LID range");
	q = e + 12;
	if (!strncmp(q, "Lid ", 4)) {
		if (!num(q + 4, &e, NET_LID_UCAST_MAX, &v) || v == 0 || *e != ' ')
			return perr(p, ln, (int)(q - line) + 5,
				    "expected the switch's LID (1..0x%x) after 'Lid '",
				    NET_LID_UCAST_MAX);
		b.lid = (uint16_t)v;
	} else if (strncmp(q, "DR path ", 8)) {
		return perr(p, ln, (int)(q - line) + 1,
			    "expected 'Lid N' or 'DR path ...' after 'of switch'");
	}
	g = strstr(q, " guid 0x");
	if (!g)
		return perr(p, ln, (int)(q - line) + 1, "expected ' guid 0x<switch GUID>'");
	g += 8;
	if (!isxdigit((unsigned char)*g))
		return perr(p, ln, (int)(g - line) + 1, "expected hex digits of the switch GUID");
	errno = 0;
	b.guid = strtoull(g, (char **)&e, 16);
	if (errno || e - g > 16)
		return perr(p, ln, (int)(g - line) + 1, "switch GUID longer than 64 bits");
	if (strncmp(e, " (", 2))
		return perr(p, ln, (int)(e - line) + 1,
			    "expected ' (<node description>):' after the GUID");
	e += 2;
	close = strrchr(e, ')');
	if (!close || strcmp(close, "):"))
		return perr(p, ln, (int)strlen(line) + 1,
			    "expected the header to end with '):'");
	if (close - e >= 2 && e[0] == '\'' && close[-1] == '\'')
		copy_desc(b.desc, e + 1, (size_t)(close - e - 2));
	else
		copy_desc(b.desc, e, (size_t)(close - e));
	if (p->nblk == p->cblk) {
		int nc = p->cblk ? p->cblk * 2 : 32;
		struct lft_block *nb = realloc(p->blk, sizeof(*nb) * (size_t)nc);

		if (!nb)
			return perr(p, ln, 0, "out of memory");
		p->blk = nb;
		p->cblk = nc;
	}
	p->blk[p->nblk] = b;
	p->cur = p->nblk++;
	return 0;
}

/* " portguid 0x<hex>" anywhere in s: 1 found (guid set), 0 none, -1 bad. */
static int find_guid(const char *s, uint64_t *guid, const char **after)
{
	const char *g = strstr(s, "portguid 0x"), *e;

	if (!g)
		return 0;
	g += 11;
	if (!isxdigit((unsigned char)*g))
		return -1;
	errno = 0;
	*guid = strtoull(g, (char **)&e, 16);
	if (errno || e - g > 16)
		return -1;
	*after = e;
	return 1;
}

/*
 * The destination part of an entry, after '#' (OpenSM) or ':' (ibroute):
 *   Switch|Channel Adapter|Router portguid 0x<hex>: '<desc>'
 *   path #k out of n[: portguid 0x<hex>]        (ibroute, LMC > 0)
 *   unknown node and type / illegal port        (no information)
 * ibroute wraps it in parentheses.
 */
static int parse_dest(struct lp *p, struct lft_ent *e, const char *s,
		      const char *line, int ln)
{
	char buf[512];
	size_t len = strlen(s);
	const char *after;
	int r;

	while (len && s[len - 1] == ' ')
		len--;
	if (len && s[0] == '(') {
		if (s[len - 1] != ')')
			return perr(p, ln, (int)(s - line) + (int)len,
				    "expected ')' closing the destination");
		s++;
		len -= 2;
	}
	if (len >= sizeof(buf))
		len = sizeof(buf) - 1;
	memcpy(buf, s, len);
	buf[len] = 0;
	if (!strcmp(buf, "unknown node and type") || !len)
		return 0;
	if (strstr(buf, "illegal port")) {
		/* ibroute -a: the entry is past NumPorts, i.e. no route */
		e->port = 255;
		return 0;
	}
	if (!strncmp(buf, "path #", 6)) {
		uint64_t k;
		const char *end;

		if (!num(buf + 6, &end, 128, &k) || strncmp(end, " out of ", 8))
			return perr(p, ln, (int)(s - line) + 7, "expected 'path #k out of n'");
		e->path_k = (int)k;
	}
	r = find_guid(buf, &e->guid, &after);
	if (r < 0)
		return perr(p, ln, (int)(s - line) + 1,
			    "expected hex digits after 'portguid 0x'");
	if (r == 0) {
		if (e->path_k)
			return 0;
		return perr(p, ln, (int)(s - line) + 1,
			    "expected '<type> portguid 0x<GUID>: '<description>'', 'path #k out of n' or 'unknown node and type'");
	}
	/* ": 'desc'" after the GUID (not on ibroute's path lines) */
	if (after[0] == ':' && after[1] == ' ') {
		const char *q = after + 2;
		size_t ql = strlen(q);

		if (ql >= 2 && q[0] == '\'' && q[ql - 1] == '\'')
			copy_desc(e->desc, q + 1, ql - 2);
		else
			copy_desc(e->desc, q, ql);
	} else if (*after) {
		return perr(p, ln, (int)(s - line) + (int)(after - buf) + 1,
			    "unexpected text after the port GUID");
	}
	return 0;
}

/* "0x<lid> <port> [# dest | : (dest)]" */
static int parse_entry(struct lp *p, const char *s, const char *line, int ln)
{
	struct lft_ent e = { .line = ln, .block = p->cur };
	const struct lft_block *b;
	const char *q = s + 2, *end;
	uint64_t v;

	if (p->cur < 0)
		return perr(p, ln, (int)(s - line) + 1,
			    "a table entry before any 'Unicast lids ... of switch ...' header");
	b = &p->blk[p->cur];
	if (b->ended)
		return perr(p, ln, (int)(s - line) + 1,
			    "a table entry after the 'lids dumped' line that ended the table of line %d",
			    b->line);
	if (!isxdigit((unsigned char)*q))
		return perr(p, ln, (int)(q - line) + 1, "expected the hex LID after '0x'");
	errno = 0;
	v = strtoull(q, (char **)&end, 16);
	if (errno || end - q > 4 || (*end != ' ' && *end != '\t'))
		return perr(p, ln, (int)(q - line) + 1,
			    "expected a LID of at most 4 hex digits, then a blank");
	if (v > NET_LID_UCAST_MAX)
		return perr(p, ln, (int)(s - line) + 1,
			    "LID 0x%04" PRIx64 " is not a unicast LID (0x0001..0x%04x)",
			    v, NET_LID_UCAST_MAX);
	if (v > b->max_lid)
		return perr(p, ln, (int)(s - line) + 1,
			    "LID 0x%04" PRIx64 " is past the range [0-%u] of the header at line %d",
			    v, b->max_lid, b->line);
	e.lid = (uint16_t)v;
	q = end;
	while (*q == ' ' || *q == '\t')
		q++;
	if (!isdigit((unsigned char)*q))
		return perr(p, ln, (int)(q - line) + 1, "expected the output port (decimal)");
	errno = 0;
	v = strtoull(q, (char **)&end, 10);
	if (errno || v > 255 || (*end && *end != ' ' && *end != '\t'))
		return perr(p, ln, (int)(q - line) + 1,
			    "expected an output port 0..254 (255 = none), then a blank");
	e.port = (uint16_t)v;
	q = end;
	while (*q == ' ' || *q == '\t')
		q++;
	if (*q == '#' || *q == ':') {
		q++;
		while (*q == ' ')
			q++;
		if (parse_dest(p, &e, q, line, ln))
			return -1;
	} else if (*q) {
		return perr(p, ln, (int)(q - line) + 1,
			    "expected '#' (OpenSM dump) or ':' (ibroute) after the port");
	}
	for (int i = b->first; i < p->nent; i++)
		if (p->ent[i].lid == e.lid)
			return perr(p, ln, (int)(s - line) + 1,
				    "LID 0x%04x is in this table twice (first at line %d)",
				    e.lid, p->ent[i].line);
	if (e.lid == 0) {
		p->blk[p->cur].zero++;	/* LID 0 is reserved: nothing goes to it */
		return 0;
	}
	return add_entry(p, &e);
}

/* "N lids dumped" (OpenSM: N = the top LID) or "N valid lids dumped" (ibroute). */
static int parse_trailer(struct lp *p, const char *s, int ln)
{
	uint64_t v;
	const char *end;
	struct lft_block *b;

	if (!num(s, &end, 0xffff, &v))
		return perr(p, ln, 1, "expected a count before 'lids dumped'");
	if (p->cur < 0 || p->blk[p->cur].ended)
		return perr(p, ln, 1, "'lids dumped' without a table header before it");
	b = &p->blk[p->cur];
	b->ended = true;
	/* a truncated or edited table shows here: the count must fit it */
	if (strstr(end, "valid")) {
		int valid = 0;

		for (int i = b->first; i < b->first + b->count; i++)
			valid += p->ent[i].port != 255;
		if (v != (uint64_t)(b->count + b->zero) && v != (uint64_t)(valid + b->zero))
			return perr(p, ln, 1,
				    "the trailer counts %" PRIu64 " LIDs but the table of line %d has %d",
				    v, b->line, b->count);
	} else if (v != b->max_lid && v != (uint64_t)(b->count + b->zero)) {
		return perr(p, ln, 1,
			    "the trailer says %" PRIu64 " LIDs but the table of line %d has %d entries up to LID %u",
			    v, b->line, b->count, b->max_lid);
	}
	return 0;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

static int parse_line(struct lp *p, char *line, int ln)
{
	char *s = line;
	size_t len = strlen(line);

	while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' ||
		       line[len - 1] == '\t'))
		line[--len] = 0;
	while (*s == ' ' || *s == '\t')
		s++;
	if (!*s || *s == '#')
		return 0;
	if (!strncmp(s, "Unicast lids", 12))
		return parse_header(p, s, line, ln);
	if (!strncmp(s, "Multicast mlids", 15))
		return perr(p, ln, (int)(s - line) + 1,
			    "multicast forwarding tables (ibroute -M) are not read: give the unicast tables");
	if (!strncmp(s, "0x", 2))
		return parse_entry(p, s, line, ln);
	if (isdigit((unsigned char)*s) && ends_with(s, "lids dumped"))
		return parse_trailer(p, s, ln);
	if (!strncmp(s, "ibroute:", 8) || !strncmp(s, "ibwarn:", 7))
		return perr(p, ln, (int)(s - line) + 1,
			    "an error message of ibroute in the file (%.60s): that switch's table is missing; rerun ibroute for it",
			    s);
	/* ibroute's column titles */
	if (p->cur >= 0 && ((!strncmp(s, "Lid", 3) && strstr(s, "Out")) ||
			    (!strncmp(s, "Port", 4) && strstr(s, "Info"))))
		return 0;
	return perr(p, ln, (int)(s - line) + 1,
		    "expected 'Unicast lids [..] of switch ...', '0x<LID> <port> ...' or 'N lids dumped'");
}

/* ---- matching the topology ---------------------------------------------- */

static int cmp_gport(const void *a, const void *b)
{
	const struct gport *x = a, *y = b;

	return x->guid < y->guid ? -1 : x->guid > y->guid;
}

static int build_guid_index(struct lp *p)
{
	struct net *n = p->n;
	int cap = 0;

	for (int i = 0; i < n->nnodes; i++)
		cap += n->nodes[i].nports + 2;
	p->gp = malloc(sizeof(*p->gp) * (size_t)(cap + 1));
	if (!p->gp)
		return perr(p, 0, 0, "out of memory");
	for (int i = 0; i < n->nnodes; i++) {
		const struct net_node *nd = &n->nodes[i];

		if (nd->type == NET_SWITCH) {
			/* a switch answers to its node GUID and its port 0 GUID */
			if (nd->guid)
				p->gp[p->ngp++] = (struct gport){ nd->guid, i, 0 };
			if (nd->ports[0].guid && nd->ports[0].guid != nd->guid)
				p->gp[p->ngp++] = (struct gport){ nd->ports[0].guid, i, 0 };
			continue;
		}
		for (int q = 1; q <= nd->nports; q++)
			if (nd->ports[q].guid)
				p->gp[p->ngp++] = (struct gport){ nd->ports[q].guid, i, q };
	}
	qsort(p->gp, (size_t)p->ngp, sizeof(*p->gp), cmp_gport);
	return 0;
}

static const struct gport *by_guid(const struct lp *p, uint64_t guid)
{
	struct gport key = { .guid = guid };

	return bsearch(&key, p->gp, (size_t)p->ngp, sizeof(*p->gp), cmp_gport);
}

/* A node by description (NAME mode); -1 if none. */
static int by_desc(const struct lp *p, const char *desc)
{
	if (!*desc || desc[0] == '#')	/* "#k" means the k-th host to net_find_host */
		return -1;
	/* the description, else the node id (ibsim names nodes by both) */
	return net_find_host(p->n, desc);
}

static net_lid_t topo_lid(const struct net_node *nd, int port)
{
	return nd->type == NET_SWITCH ? nd->lid : nd->ports[port].lid;
}

static void choose_mode(struct lp *p)
{
	struct net *n = p->n;
	bool guids = true, lids = true, any_sw = false;

	for (int i = 0; i < n->nnodes; i++) {
		const struct net_node *nd = &n->nodes[i];

		if (nd->type == NET_SWITCH) {
			any_sw = true;
			guids &= nd->guid || nd->ports[0].guid;
			lids &= nd->lid != 0;
			continue;
		}
		for (int q = 1; q <= nd->nports; q++)
			if (nd->ports[q].remote_node >= 0)
				lids &= nd->ports[q].lid != 0;
	}
	p->mode = any_sw && guids ? BY_GUID : any_sw && lids ? BY_LID : BY_NAME;
}

static const char *mode_hint(const struct lp *p)
{
	return p->mode == BY_GUID ? "matched by GUID" :
	       p->mode == BY_LID ? "matched by LID: the topology has no GUIDs" :
	       "matched by node description: the topology has no GUIDs or LIDs";
}

static int resolve_switches(struct lp *p)
{
	struct net *n = p->n;

	for (int b = 0; b < p->nblk; b++) {
		struct lft_block *blk = &p->blk[b];
		int node = -1;

		if (p->mode == BY_GUID) {
			const struct gport *g = by_guid(p, blk->guid);

			node = g ? g->node : -1;
		} else if (p->mode == BY_LID) {
			for (int i = 0; i < n->nnodes && node < 0; i++)
				if (n->nodes[i].type == NET_SWITCH && blk->lid &&
				    n->nodes[i].lid == blk->lid)
					node = i;
		} else {
			node = by_desc(p, blk->desc);
		}
		if (node < 0)
			return perr(p, blk->line, 1,
				    "switch guid 0x%016" PRIx64 " lid %u ('%s') is not in the topology (%s)",
				    blk->guid, blk->lid, blk->desc, mode_hint(p));
		if (n->nodes[node].type != NET_SWITCH)
			return perr(p, blk->line, 1, "'%s' is a %s in the topology, not a switch",
				    blk->desc, type_str(n->nodes[node].type));
		if (p->mode == BY_LID && *blk->desc && strcmp(blk->desc, n->nodes[node].desc))
			return perr(p, blk->line, 1,
				    "switch LID %u is '%s' here but \"%s\" in the topology",
				    blk->lid, blk->desc, n->nodes[node].desc);
		for (int o = 0; o < b; o++)
			if (p->blk[o].node == node)
				return perr(p, blk->line, 1,
					    "a second table for switch \"%s\" (the first is at line %d)",
					    n->nodes[node].desc, p->blk[o].line);
		blk->node = node;
	}
	for (int i = 0; i < n->nnodes; i++) {
		bool found = false;

		if (n->nodes[i].type != NET_SWITCH)
			continue;
		for (int b = 0; b < p->nblk && !found; b++)
			found = p->blk[b].node == i;
		if (!found)
			return perr(p, 0, 0,
				    "no table for switch \"%s\" (guid 0x%016" PRIx64 ") of the topology",
				    n->nodes[i].desc, port_guid(n, i, 0));
	}
	return 0;
}

static int set_owner(struct lp *p, net_lid_t lid, int node, int port, int line)
{
	struct owner *o = &p->own[lid];

	if (o->node >= 0 && (o->node != node || o->port != port))
		return perr(p, line, 1,
			    "LID 0x%04x is \"%s\" port %d here but \"%s\" port %d at line %d",
			    lid, p->n->nodes[node].desc, port,
			    p->n->nodes[o->node].desc, o->port, o->line);
	if (o->node < 0) {
		o->node = node;
		o->port = port;
		o->line = line;
	}
	return 0;
}

/* Whose is each LID: from the headers and the entries' destinations. */
static int learn_owners(struct lp *p)
{
	struct net *n = p->n;

	for (int l = 0; l <= NET_LID_UCAST_MAX; l++)
		p->own[l] = (struct owner){ -1, -1, 0 };
	if (p->mode == BY_LID) {
		/* the topology's LIDs; the file must agree with them */
		for (int i = 0; i < n->nnodes; i++) {
			const struct net_node *nd = &n->nodes[i];

			for (int q = 0; q <= nd->nports; q++) {
				unsigned c = nd->type == NET_SWITCH ? 1 : 1u << nd->lmc;

				if (nd->type == NET_SWITCH ? q : nd->ports[q].remote_node < 0 || !q)
					continue;
				for (unsigned k = 0; k < c && topo_lid(nd, q) + k <= NET_LID_UCAST_MAX; k++)
					p->own[topo_lid(nd, q) + k] = (struct owner){ i, q, 0 };
			}
		}
		for (int e = 0; e < p->nent; e++) {
			const struct lft_ent *x = &p->ent[e];
			const struct owner *o = &p->own[x->lid];

			if (o->node < 0)
				return perr(p, x->line, 1,
					    "LID 0x%04x belongs to no port of the topology (%s)",
					    x->lid, mode_hint(p));
			if (*x->desc && strcmp(x->desc, n->nodes[o->node].desc))
				return perr(p, x->line, 1,
					    "LID 0x%04x is '%s' here but \"%s\" in the topology",
					    x->lid, x->desc, n->nodes[o->node].desc);
		}
		return 0;
	}
	for (int b = 0; b < p->nblk; b++)
		if (p->blk[b].lid && set_owner(p, p->blk[b].lid, p->blk[b].node, 0, p->blk[b].line))
			return -1;
	for (int e = 0; e < p->nent; e++) {
		const struct lft_ent *x = &p->ent[e];
		int node = -1, port = -1;

		if (p->mode == BY_GUID && x->guid) {
			const struct gport *g = by_guid(p, x->guid);

			if (!g)
				return perr(p, x->line, 1,
					    "LID 0x%04x: port guid 0x%016" PRIx64 " ('%s') is not in the topology",
					    x->lid, x->guid, x->desc);
			node = g->node;
			port = g->port;
		} else if (p->mode == BY_NAME && *x->desc) {
			node = by_desc(p, x->desc);
			if (node < 0)
				return perr(p, x->line, 1, "LID 0x%04x: no node '%s' in the topology",
					    x->lid, x->desc);
			port = n->nodes[node].type == NET_SWITCH ? 0 : net_first_port(n, node);
			for (int q = port + 1; n->nodes[node].type != NET_SWITCH &&
			     q <= n->nodes[node].nports; q++)
				if (n->nodes[node].ports[q].remote_node >= 0)
					return perr(p, x->line, 1,
						    "LID 0x%04x: '%s' has several cabled ports and the topology no GUIDs to tell them apart",
						    x->lid, x->desc);
			if (port < 0)
				return perr(p, x->line, 1, "LID 0x%04x: '%s' has no cabled port",
					    x->lid, x->desc);
		} else if (x->path_k >= 2 && (int)x->lid >= x->path_k - 1 &&
			   p->own[x->lid - (x->path_k - 1)].node >= 0) {
			/* ibroute's "path #k" without a GUID: k-1 above the base */
			node = p->own[x->lid - (x->path_k - 1)].node;
			port = p->own[x->lid - (x->path_k - 1)].port;
		}
		if (node >= 0 && set_owner(p, x->lid, node, port, x->line))
			return -1;
	}
	/*
	 * Port 0 is the switch itself (IBA 14.2.5.10): the LID is that
	 * switch's. This is how a table read by direct route (ibroute -D,
	 * "DR path" header, no LID) still gives its switch's LID, even when
	 * ibroute could not name it ("unknown node and type").
	 */
	for (int e = 0; e < p->nent; e++) {
		const struct lft_ent *x = &p->ent[e];
		const struct owner *o = &p->own[x->lid];
		int sw = p->blk[x->block].node;

		if (x->port != 0)
			continue;
		if (o->node >= 0 && (o->node != sw || o->port != 0))
			return perr(p, x->line, 1,
				    "LID 0x%04x is \"%s\" port %d's (line %d), but this entry sends it to port 0, the switch \"%s\" itself",
				    x->lid, n->nodes[o->node].desc, o->port, o->line,
				    n->nodes[sw].desc);
		if (set_owner(p, x->lid, sw, 0, x->line))
			return -1;
	}
	return 0;
}

/*
 * From the owners: each port's LIDs must form an aligned block of 2^LMC
 * (IBA 7.11.1), a switch has one, and every cabled port gets some. The
 * result goes to base[node][port] and lmc[node] for installing.
 */
static int derive_lids(struct lp *p, uint16_t **base, uint16_t **total,
		       uint8_t *lmc)
{
	struct net *n = p->n;

	for (uint32_t l = 1; l <= NET_LID_UCAST_MAX; l++) {
		const struct owner *o = &p->own[l];

		if (o->node < 0)
			continue;
		if (!base[o->node][o->port])
			base[o->node][o->port] = (uint16_t)l;
		total[o->node][o->port]++;
	}
	for (int i = 0; i < n->nnodes; i++) {
		const struct net_node *nd = &n->nodes[i];

		for (int q = 0; q <= nd->nports; q++) {
			uint16_t b = base[i][q];
			uint32_t cnt = 0, c;
			int line;

			if (nd->type == NET_SWITCH ? q : !q || nd->ports[q].remote_node < 0)
				continue;
			if (!b) {
				if (nd->type == NET_SWITCH)
					return perr(p, 0, 0, "no LID for switch \"%s\" in the file", nd->desc);
				return perr(p, 0, 0,
					    "no LID for \"%s\" port %d (guid 0x%016" PRIx64 "): the file never names it",
					    nd->desc, q, nd->ports[q].guid);
			}
			line = p->own[b].line;
			while (b + cnt <= NET_LID_UCAST_MAX && p->own[b + cnt].node == i &&
			       p->own[b + cnt].port == q)
				cnt++;
			if (cnt != total[i][q]) {
				uint32_t l = b + cnt;

				while (p->own[l].node != i || p->own[l].port != q)
					l++;
				return perr(p, p->own[l].line, 1,
					    "LID 0x%04x of \"%s\" port %d does not follow its other LIDs from 0x%04x (LMC LIDs are consecutive, IBA 7.11.1)",
					    l, nd->desc, q, b);
			}
			for (c = 0; (1u << c) < cnt; c++)
				;
			if (nd->type == NET_SWITCH && cnt > 1)
				return perr(p, line, 1, "switch \"%s\" has %u LIDs from 0x%04x (a switch has one)",
					    nd->desc, cnt, b);
			if ((1u << c) != cnt || c > NET_LMC_MAX || (b & ((1u << c) - 1)))
				return perr(p, line, 1,
					    "\"%s\" port %d has %u LIDs from 0x%04x: not an aligned block of 2^LMC (IBA 7.11.1)",
					    nd->desc, q, cnt, b);
			if (nd->type != NET_SWITCH) {
				if (lmc[i] != 0xff && lmc[i] != c)
					return perr(p, line, 1,
						    "\"%s\" port %d has LMC %u but another of its ports LMC %u",
						    nd->desc, q, c, lmc[i]);
				lmc[i] = (uint8_t)c;
			}
		}
	}
	return 0;
}

/* Build the new tables (not installed yet). */
static int build_tables(struct lp *p, uint8_t **lft, uint32_t max_lid)
{
	struct net *n = p->n;

	for (int b = 0; b < p->nblk; b++) {
		const struct lft_block *blk = &p->blk[b];
		const struct net_node *sw = &n->nodes[blk->node];
		uint8_t *t = malloc((size_t)max_lid + 1);

		if (!t)
			return perr(p, blk->line, 0, "out of memory");
		lft[blk->node] = t;
		memset(t, 255, (size_t)max_lid + 1);
		for (int e = blk->first; e < blk->first + blk->count; e++) {
			const struct lft_ent *x = &p->ent[e];
			const struct owner *o = &p->own[x->lid];

			if (x->port == 255)
				continue;
			if (x->port > sw->nports)
				return perr(p, x->line, 1,
					    "LID 0x%04x leaves by port %u but \"%s\" has %d ports",
					    x->lid, x->port, sw->desc, sw->nports);
			if (o->node < 0)
				continue;	/* nobody's LID: never a destination */
			if (x->port == 0 && o->node != blk->node)
				return perr(p, x->line, 1,
					    "LID 0x%04x is \"%s\"'s, but the entry sends it to port 0 (the switch \"%s\" itself)",
					    x->lid, n->nodes[o->node].desc, sw->desc);
			if (x->port && sw->ports[x->port].remote_node < 0)
				return perr(p, x->line, 1,
					    "LID 0x%04x leaves \"%s\" by port %u, which has no cable in the topology",
					    x->lid, sw->desc, x->port);
			if (x->lid <= max_lid)
				t[x->lid] = (uint8_t)x->port;
		}
		if (sw->lid <= max_lid && p->own[sw->lid].node == blk->node)
			t[sw->lid] = 0;
	}
	return 0;
}

static void install_file_lids(struct net *n, uint16_t **base, const uint8_t *lmc)
{
	for (int i = 0; i < n->nnodes; i++) {
		struct net_node *nd = &n->nodes[i];

		if (nd->type == NET_SWITCH) {
			nd->lid = base[i][0];
			continue;
		}
		nd->lmc = lmc[i] == 0xff ? 0 : lmc[i];
		for (int q = 1; q <= nd->nports; q++)
			nd->ports[q].lid = nd->ports[q].remote_node >= 0 ? base[i][q] : 0;
	}
}

static int match_and_install(struct lp *p)
{
	struct net *n = p->n;
	size_t nn = (size_t)n->nnodes + 1;
	uint16_t **base = calloc(nn, sizeof(*base)), **total = calloc(nn, sizeof(*total));
	net_lid_t **old = calloc(nn, sizeof(*old));
	uint8_t *lmc = malloc(nn), *old_lmc = malloc(nn);
	uint8_t **lft = calloc(nn, sizeof(*lft));
	uint32_t max_lid = 0;
	int rc = -1;

	p->own = malloc(sizeof(*p->own) * (NET_LID_UCAST_MAX + 1));
	if (!base || !total || !old || !lmc || !old_lmc || !lft || !p->own) {
		perr(p, 0, 0, "out of memory");
		goto out;
	}
	for (int i = 0; i < n->nnodes; i++) {
		size_t np = (size_t)n->nodes[i].nports + 1;

		base[i] = calloc(np, sizeof(uint16_t));
		total[i] = calloc(np, sizeof(uint16_t));
		old[i] = calloc(np, sizeof(net_lid_t));
		if (!base[i] || !total[i] || !old[i]) {
			perr(p, 0, 0, "out of memory");
			goto out;
		}
		lmc[i] = 0xff;
	}
	choose_mode(p);
	if (!p->nblk) {
		perr(p, 0, 0, "no 'Unicast lids ... of switch ...' table in the file");
		goto out;
	}
	if (build_guid_index(p) || resolve_switches(p) || learn_owners(p))
		goto out;
	if (p->mode != BY_LID && derive_lids(p, base, total, lmc))
		goto out;
	for (uint32_t l = 1; l <= NET_LID_UCAST_MAX; l++)
		if (p->own[l].node >= 0)
			max_lid = l;
	if (build_tables(p, lft, max_lid))
		goto out;
	/* everything checked: now change the net (LIDs, then tables) */
	for (int i = 0; i < n->nnodes; i++) {
		const struct net_node *nd = &n->nodes[i];

		old_lmc[i] = nd->lmc;
		old[i][0] = nd->lid;
		for (int q = 1; q <= nd->nports; q++)
			old[i][q] = nd->ports[q].lid;
	}
	if (p->mode != BY_LID)
		install_file_lids(n, base, lmc);
	if (net_install_lids(n, p->d)) {
		for (int i = 0; i < n->nnodes; i++) {
			struct net_node *nd = &n->nodes[i];

			nd->lmc = old_lmc[i];
			nd->lid = old[i][0];
			for (int q = 1; q <= nd->nports; q++)
				nd->ports[q].lid = old[i][q];
		}
		if (p->mode == BY_LID) {
			char msg[sizeof(p->d->msg)];

			snprintf(msg, sizeof(msg), "%s", p->d->msg);
			perr(p, 0, 0, "the topology's LIDs cannot be used: %s", msg);
		}
		goto out;
	}
	for (int i = 0; i < n->nnodes; i++) {
		if (n->nodes[i].type != NET_SWITCH)
			continue;
		free(n->nodes[i].lft);
		n->nodes[i].lft = lft[i];
		n->nodes[i].lft_len = max_lid + 1;
		lft[i] = NULL;
	}
	rc = 0;
out:
	for (int i = 0; i < n->nnodes; i++) {
		if (base)
			free(base[i]);
		if (total)
			free(total[i]);
		if (old)
			free(old[i]);
		if (lft)
			free(lft[i]);
	}
	free(base);
	free(total);
	free(old);
	free(lmc);
	free(old_lmc);
	free(lft);
	return rc;
}

static void lp_free(struct lp *p)
{
	free(p->ent);
	free(p->blk);
	free(p->own);
	free(p->gp);
}

int lft_load_buffer(struct net *n, const char *buf, size_t len,
		    const char *name, struct sim_diag *d)
{
	struct lp p = { .name = name, .n = n, .d = d, .cur = -1 };
	size_t off = 0;
	int ln = 0, rc = 0;

	if (memchr(buf, 0, len))
		return sim_diag_set(d, name, 0, 0, "binary file (NUL byte), not an LFT dump");
	while (off < len && !rc) {
		const char *nl = memchr(buf + off, '\n', len - off);
		size_t l = nl ? (size_t)(nl - (buf + off)) : len - off;
		char *line = malloc(l + 1);

		ln++;
		if (!line) {
			rc = sim_diag_set(d, name, ln, 0, "out of memory");
			break;
		}
		memcpy(line, buf + off, l);
		line[l] = 0;
		rc = parse_line(&p, line, ln);
		free(line);
		off += l + 1;
	}
	if (!rc) {
		for (int b = 0; b < p.nblk && !rc; b++)
			if (!p.blk[b].count)
				rc = sim_diag_set(d, name, p.blk[b].line, 1,
						  "the table of switch '%s' has no entries",
						  p.blk[b].desc);
	}
	if (!rc)
		rc = match_and_install(&p);
	lp_free(&p);
	return rc ? -1 : 0;
}

int lft_load(struct net *n, const char *path, struct sim_diag *d)
{
	char *buf, why[128];
	size_t len;
	int err = sim_read_file(path, LFT_MAX_FILE, &buf, &len), rc;

	if (err)
		return sim_diag_set(d, path, 0, 0, "%s",
				    sim_read_error(err, LFT_MAX_FILE, why, sizeof(why)));
	rc = lft_load_buffer(n, buf, len, path, d);
	free(buf);
	return rc;
}
