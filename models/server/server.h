/* SPDX-License-Identifier: MIT */
/*
 * server.h - multi-GPU servers: which HCAs share a server, which GPU each
 * one serves, and the NVLink/NVSwitch domain that joins the GPUs.
 *
 * A GPU server of a training cluster has G GPUs and one single-port HCA per
 * GPU, under the same PCIe switch as its GPU (GPUDirect RDMA, NVIDIA DGX
 * A100 and DGX H100 user guides). Its GPUs reach one another over NVLink
 * through NVSwitch chips: every GPU has one NVLink port of L links into a
 * non-blocking switch domain, the same bandwidth to every peer. A
 * rack-scale system (GB200 NVL72) stretches that domain over several
 * servers (compute trays).
 *
 * The fabric keeps HCAs as its endpoints: rank k is still the k-th host,
 * and a GPU is named by its HCA. What this model adds is
 *   - the map: server and local GPU index of every HCA (from the
 *     topology's host names, srv_map_build), and the NVLink domain of each;
 *   - the NVLink port of each GPU as two pipes, one per direction, so a
 *     transfer between two GPUs of one domain takes
 *        out   = max(t, out_free[a]) .. + ser,   ser = bytes / nvlink_gbps
 *        in    = max(out end, in_free[b] + ser)
 *        done  = in + nvlink_lat_ns
 *     (cut-through: the receiver's port is busy for ser too, ending no
 *     earlier than the sender's), which gives back-to-back transfers the
 *     port's rate and lets one GPU send to, and receive from, several
 *     peers at once at its port's rate in each direction;
 *   - PXN (NCCL's "PCI x NVLink", on by default since NCCL 2.12): a GPU
 *     that sends to a GPU of another server whose local index differs
 *     moves the data over NVLink to the GPU of its own server with the
 *     receiver's index, whose HCA sends it: traffic stays on its rail.
 *
 * Left out: NVLink SHARP (NVLS) in-switch reduction, the HBM's own
 * bandwidth (above NVLink's on every preset), the CPU sockets' link and
 * the PCIe switches' sharing between GPU i and NIC i (the host model,
 * models/host, is one GPU and one HCA per host), NVLink errors and
 * partial NVSwitch failure. docs/servers.md has the presets' figures and
 * their sources.
 */
#ifndef IBFAB_SERVER_H
#define IBFAB_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "models/net/net.h"
#include "sim/sim_diag.h"
#include "sim/sim.h"
#include "sim/sim_param.h"

#define SRV_MAX_GPUS 64		/* GPUs a server may have */
#define SRV_MAX_DOMAIN 1024	/* GPUs an NVLink domain may have */

/* server.KEY=VALUE: the server model's parameters (fab_params.server). */
struct srv_params {
	char preset[16];	/* server.preset: "none" or a preset's name */
	uint32_t gpus;		/* server.gpus: GPUs (and HCAs) per server; 0 = no servers */
	uint32_t domain;	/* server.domain: GPUs per NVLink domain, a multiple of gpus */
	double nvlink_gbps;	/* server.nvlink_gbps: per GPU per direction, GB/s of data */
	uint32_t nvlink_lat_ns;	/* server.nvlink_lat_ns: one transfer's latency over NVLink */
	/* server.nvlink_lat_ll_ns, _ll128_ns: the same with NCCL's LL and LL128
	 * protocols (nvlink_lat_ns is Simple's) */
	uint32_t nvlink_lat_ll_ns, nvlink_lat_ll128_ns;
	double nvls_eff;	/* server.nvls_efficiency: NVLS's share of nvlink_gbps; 0 = none */
	bool pxn;		/* server.pxn: cross-server sends leave on the receiver's rail */
};

/* A built-in server. */
struct srv_preset {
	const char *name;	/* "dgx-h100" */
	const char *what;	/* one line for --help */
	const char *gpu;	/* "H100 SXM5" */
	const char *nvlink;	/* "NVLink4" */
	uint32_t gpus, domain;
	uint32_t links;		/* NVLink links per GPU */
	double link_gbps;	/* per link per direction, GB/s (signalling rate's data) */
	double nvlink_gbps;	/* what a copy between two GPUs achieves per direction */
	uint32_t nvlink_lat_ns, nvlink_lat_ll_ns, nvlink_lat_ll128_ns;	/* Simple, LL, LL128 */
	double nvls_eff;	/* NVLink SHARP's multimem rate as a share of nvlink_gbps; 0 = none */
	const char *nic_rate;	/* the HCAs' cables, "4xNDR" */
	uint32_t leaf_radix;	/* ports of the leaf switch a cluster of them uses */
	const char *fabric;	/* the fabric preset of its HCAs' generation ("ndr") */
	/* what NCCL's tuning model knows of it (traces/coll_tune.c): its GPU
	 * generation's row (1 Ampere, 2 Hopper, 3 Blackwell), an AMD host,
	 * and its graph search's speed per channel, one channel per NIC */
	uint8_t nccl_arch;
	bool amd_cpu;
	double nccl_bw;
};

extern const struct sim_param srv_param_keys[];	/* "server.*", in print order */

/* server.preset=none: no servers, every key at its "none" value. */
void srv_params_default(struct srv_params *p);
/* The preset called name (case-insensitive), or NULL. */
const struct srv_preset *srv_preset_find(const char *name);
/* Every preset, NULL-terminated, in --help order. */
extern const struct srv_preset *const srv_presets[];
/* Set every server.* key from preset `name`: 0, or -1 with d filled. */
int srv_params_preset(struct srv_params *p, const char *name, struct sim_diag *d);
/* Cross-field checks (domain a multiple of gpus, a rate when gpus > 0). */
int srv_params_check(const struct srv_params *p, struct sim_diag *d);

/*
 * Which HCA serves which GPU of which server, by the hosts' node
 * descriptions (docs/servers.md):
 *   "n<S>g<J>"          server "n<S>", GPU J (what `ibfab topo gen rail` writes);
 *   "<host> mlx5_<K>"   server "<host>", the GPU of the server's HCAs in
 *                       ascending K order (the description Linux gives an
 *                       HCA: hostname, then the device's name).
 * Servers are numbered in the order their first HCA appears among the
 * hosts; consecutive servers make an NVLink domain of `domain` GPUs.
 */
struct srv_map {
	struct srv_params p;
	int nnodes;
	int nservers;
	int32_t *server;	/* per net node: its server, -1 for none */
	uint16_t *local;	/* per net node: its GPU's index in the server */
	int32_t *gpu_node;	/* server s, GPU j: the node at s * p.gpus + j, -1 none */
	sim_time_t *out_free, *in_free;	/* per net node: its GPU's NVLink port */
	uint64_t xfers, bytes;	/* NVLink transfers and their bytes */
	uint64_t pxn_xfers;	/* cross-server sends relayed to the receiver's rail */
};

/*
 * Build the map of n under p (p->gpus > 0). A host whose name fits
 * neither form is in no server (it uses the fabric for everything). A
 * server with more HCAs than p->gpus, or a GPU index at or past p->gpus,
 * is refused naming the host's file and line. 0, or -1 with d filled.
 */
int srv_map_build(struct srv_map *m, const struct net *n, const struct srv_params *p,
		  struct sim_diag *d);
void srv_map_free(struct srv_map *m);

/* The NVLink domain of node x, or -1. */
static inline int32_t srv_domain(const struct srv_map *m, int x)
{
	return m->server[x] < 0 ? -1 : (int32_t)(m->server[x] / (int32_t)(m->p.domain / m->p.gpus));
}

/* Nodes a and b are GPUs of one NVLink domain. */
static inline bool srv_same_domain(const struct srv_map *m, int a, int b)
{
	return m->server[a] >= 0 && srv_domain(m, a) == srv_domain(m, b);
}

/*
 * The node whose HCA sends a's data to b, b outside a's domain: with PXN
 * the GPU of a's server with b's GPU index (when there is one), else a.
 */
int srv_proxy(const struct srv_map *m, int a, int b);

/*
 * A transfer of `bytes` (on the wire) over NVLink from node a's GPU to
 * node b's (one domain), asked for at t, of latency lat_ns (its
 * protocol's: one of m->p's): when it is in b's memory. *first, if not
 * NULL: when its first bytes are (a relay may start forwarding then).
 */
sim_time_t srv_nvlink(struct srv_map *m, int a, int b, sim_time_t t, uint64_t bytes,
		      uint32_t lat_ns, sim_time_t *first);

/*
 * NVLink SHARP (NVLS): GPUs read and write multimem addresses, which the
 * NVSwitch reduces (ld_reduce) or copies to every GPU (st). Each half of
 * such a move - GPU a's port to the switch, the switch to GPU b's port -
 * takes its port's pipe at nvls_eff of its rate and half a transfer's
 * latency; the switch itself never queues (non-blocking). srv_nvs_send:
 * a's bytes asked to leave at t, when they are at the switch;
 * srv_nvs_recv: bytes at the switch at t, when they are in b's memory.
 */
sim_time_t srv_nvs_send(struct srv_map *m, int a, sim_time_t t, uint64_t bytes, uint32_t lat_ns);
sim_time_t srv_nvs_recv(struct srv_map *m, int b, sim_time_t t, uint64_t bytes, uint32_t lat_ns);

#endif
