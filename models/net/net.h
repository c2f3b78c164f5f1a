/* SPDX-License-Identifier: MIT */
/*
 * net.h - the fabric graph: nodes (switches, channel adapters, routers), their
 * physical ports, the cables between them, and what the subnet manager
 * assigns (LIDs, linear forwarding tables).
 *
 * This is the neutral description that topology parsers and generators fill
 * (topologies/) and the simulation builder instantiates (models/fabric/). It
 * mirrors what ibnetdiscover reports: a switch has ports 1..N plus management
 * port 0 and one LID (IBA 14.2.5.1, base port 0); a CA has ports 1..N, each
 * with its own LID. Port indexes in `ports[]` are the IB port numbers, so
 * ports[0] exists for every node and is only meaningful for switches.
 */
#ifndef IBFAB_NET_H
#define IBFAB_NET_H

#include <stdbool.h>
#include <stdint.h>

#include "models/link/link.h"
#include "sim/sim_diag.h"

enum net_node_type { NET_SWITCH, NET_CA, NET_ROUTER };

#define NET_MAX_PORTS 254	/* IBA: NumPorts is 8 bits, port 255 reserved */
#define NET_LID_UCAST_MAX 0xbfff	/* unicast LIDs 0x0001..0xbfff (IBA 4.1.3) */
/*
 * A node's address in the model: an InfiniBand LID on ib, where the
 * subnet manager assigns at most NET_LID_UCAST_MAX; on the Ethernet
 * fabrics, which have no LIDs, the same numbering names a host or a
 * switch for routing and the packets' addresses, up to NET_ADDR_MAX
 * (net_assign_lids' limit).
 */
typedef uint32_t net_lid_t;
#define NET_ADDR_MAX 0xffffff

struct net_port {
	int remote_node;	/* -1: not connected */
	int remote_port;
	uint8_t lanes;		/* 0: not given in the file */
	uint8_t speed;		/* enum link_speed; LINK_SPEED_NONE: not given */
	double cable_m;		/* < 0: not given (preset's cable length) */
	uint64_t guid;		/* port GUID (CA ports); 0 if unknown */
	net_lid_t lid;		/* CA ports: own LID; switches: 0 (use node lid) */
	int line;		/* line in the source file that declared it (0: none) */
	const char *file;	/* ... and that file (points into net->files; NULL: none) */
	/* a cable inside a switch, to its SHARP aggregation node
	 * (models/sm/sm_sharp.c): its width is the aggregation manager's,
	 * which link.width does not override */
	bool internal;
};

struct net_node {
	enum net_node_type type;
	int nports;
	char *id;		/* unique id: "S-0000000000200007" or "Switch1" */
	char *desc;		/* node description ("Leaf3"); id when none given */
	uint64_t guid;		/* node GUID; 0 if unknown */
	net_lid_t lid;		/* switches: the switch's LID (port 0) */
	uint8_t lmc;
	struct net_port *ports;	/* nports + 1 entries, index = port number */
	uint8_t *lft;		/* switches: out port per LID, 0..lft_len-1; 255 = none */
	uint32_t lft_len;
	int line;		/* line of the node header in its file */
	const char *file;	/* file that declared it (points into net->files) */
	/* a CA that is a switch's SHARP aggregation node (sm_sharp.c), not a
	 * host: no rank or traffic pattern is placed on it */
	bool agg;
};

/*
 * A cable named in a file, not yet resolved: ibsim net files may name a node
 * that is declared further down, so parsers record references and
 * net_validate() resolves them once the whole file (and its includes) is read.
 */
struct net_ref {
	int node, port;		/* the end that declared it */
	char *remote_id;
	int remote_port;
	uint8_t lanes, speed;	/* rate stated on that line (0 / NONE: none) */
	const char *file;
	int line, col;		/* col: where the remote id starts */
};

struct net {
	struct net_node *nodes;
	int nnodes, cap;
	char **files;		/* every file read (includes), owned */
	int nfiles;
	net_lid_t max_lid;	/* highest LID assigned */
	net_lid_t lid_limit;	/* the most addresses net_assign_lids may give (0:
				 * NET_LID_UCAST_MAX, InfiniBand's; NET_ADDR_MAX on
				 * an Ethernet fabric or for a generated file) */
	uint8_t lmc;		/* highest LMC of any port after LID assignment */
	int sm_node;		/* where the subnet manager runs (its port gets LID 1 when
				 * LIDs are assigned): 0, the first node of the file, is
				 * where ibsim attaches it */
	/* LID -> (node, port); filled by net_assign_lids() */
	int *lid_node;
	uint8_t *lid_port;
	/* hash of node ids for lookup while parsing */
	int *idx;
	uint32_t idx_cap;
	/* hash of node descriptions (first node with a description wins) */
	int *didx;
	uint32_t didx_cap;
	/* references waiting for net_validate() */
	struct net_ref *refs;
	int nrefs, refs_cap;
	/* the GPU server the file names ("# ibfab: server=dgx-h100", a
	 * models/server preset), "" none: the default of server.preset */
	char server[16];
	/* hosts (CAs with a connected port) in file order; rebuilt lazily */
	int *host_list;
	int host_count;
	bool hosts_valid;
};

void net_init(struct net *n);
void net_free(struct net *n);
/* A deep copy of a validated net (nodes, cables, LIDs, tables; no pending
 * references): 0, or -1 when out of memory (dst then empty). */
int net_dup(struct net *dst, const struct net *src);

/* Add a node; id must be unique. Returns its index or -1 (diag filled). */
int net_add_node(struct net *n, enum net_node_type type, int nports,
		 const char *id, const char *desc, struct sim_diag *d);
int net_find(const struct net *n, const char *id);
/*
 * Find an endpoint: by node description (exact), else by id, else "#k" for
 * the k-th host (net_host(k)). Returns the node index or -1.
 */
int net_find_host(const struct net *n, const char *name);
/* Number of CA nodes with at least one connected port ("hosts"; a switch's
 * aggregation node is none), and the k-th. */
int net_nhosts(const struct net *n);
int net_host(const struct net *n, int k);
/* First connected port of a node, or -1. */
int net_first_port(const struct net *n, int node);

/*
 * Connect (a, pa) <-> (b, pb). Both sides are recorded. A link declared from
 * both ends must agree; a port may not be connected twice to different peers
 * (diag names the conflicting line).
 */
int net_connect(struct net *n, int a, int pa, int b, int pb, int line,
		struct sim_diag *d);
/* After parsing: every declared remote must exist, ports in range. */
int net_validate(struct net *n, struct sim_diag *d);

/* net_connect() with the location to blame (file NULL: node a's file; col 0: none). */
int net_connect_at(struct net *n, int a, int pa, int b, int pb,
		   const char *file, int line, int col, struct sim_diag *d);
/*
 * Record "(node, port) is cabled to remote_id[remote_port]" for
 * net_validate() to resolve; lanes/speed: the rate that line states, if any.
 */
int net_refer(struct net *n, int node, int port, const char *remote_id,
	      int remote_port, uint8_t lanes, uint8_t speed,
	      const char *file, int line, int col, struct sim_diag *d);
/* Set the rate of the cable at (node, port) on both of its ends. */
void net_set_link_rate(struct net *n, int node, int port, uint8_t lanes,
		       uint8_t speed);
/* Remember a file name; returns the copy nodes and ports point to (NULL: no memory). */
const char *net_add_file(struct net *n, const char *path);

/*
 * LID assignment as OpenSM does it (osm_lid_mgr.c): switches get one LID,
 * each connected CA (or router) port one, from 1: the subnet manager's node
 * first (n->sm_node), then by port GUID (a switch's port 0 has the node's),
 * ports without a GUID last in file order. Exception: when the file gave
 * every one of those a LID (ibnetdiscover prints them) and they are all
 * unicast and unique, they are kept, so a user's real LIDs show up; a CA's
 * `lmc M` from the file is then kept too (its 2^M LIDs from the base). Same
 * as net_assign_lids_lmc(n, NET_LMC_FILE, d).
 */
int net_assign_lids(struct net *n, struct sim_diag *d);
/* The highest address net_assign_lids may give n (lid_limit, or IB's). */
static inline net_lid_t net_lid_limit(const struct net *n)
{
	return n->lid_limit ? n->lid_limit : NET_LID_UCAST_MAX;
}
/* The same in file order (the generators write their LIDs so). */
int net_assign_lids_file_order(struct net *n, struct sim_diag *d);

/*
 * LMC (IBA 7.11.1, PortInfo:LMC in 14.2.5.6): a CA or router port answers
 * to 2^LMC consecutive LIDs from a base LID whose LMC low bits are 0, so a
 * subnet manager can give each of them its own path. A switch's base port 0
 * has one LID (LMC 0), as in OpenSM's default (lmc_esp0 off).
 */
#define NET_LMC_MAX 7
#define NET_LMC_FILE (-1)	/* keep the LMC the file states, else 0 */

/*
 * net_assign_lids() with every CA/router port given 2^lmc LIDs (lmc 0..7),
 * or NET_LMC_FILE. The file's LIDs are kept when they are complete, unique
 * and aligned for that LMC (IBA 7.11.1); otherwise every LID is assigned in
 * OpenSM's order, each port's base rounded up to a multiple of 2^lmc (the gaps
 * stay unused). Fills lid_node/lid_port for every LID of every port, and
 * n->lmc. Returns 0 or -1 (diag filled: too many LIDs, out of memory).
 */
int net_assign_lids_lmc(struct net *n, int lmc, struct sim_diag *d);

/*
 * Install the LIDs already written in the nodes (switch lid, CA ports' lid,
 * CA node lmc) without changing any: the LFT loader uses it for LIDs read
 * from a dump. Refuses a connected port without a LID, a base not aligned
 * to its 2^lmc, a LID out of the unicast range or two ports sharing a LID,
 * naming the nodes. Returns 0 or -1 (diag filled).
 */
int net_install_lids(struct net *n, struct sim_diag *d);

/* Number of LIDs of (node, port): 1 for a switch, 2^lmc for a CA/router port
 * with a LID, 0 without one. */
unsigned net_lid_count(const struct net *n, int node, int port);
/* LID of (node, port): switch -> node lid, CA -> port lid. */
net_lid_t net_lid_of(const struct net *n, int node, int port);

/* Counts for reports and tests. */
int net_count(const struct net *n, enum net_node_type type);
int net_nlinks(const struct net *n);

#endif
