/* SPDX-License-Identifier: MIT */
/*
 * server.c - multi-GPU servers and their NVLink domain: the presets, the
 * server.* keys, the map from host names, the NVLink pipes (server.h).
 *
 * The presets' figures and their sources are in docs/servers.md; in short:
 *   dgx-a100     8 x A100 SXM4, NVLink3: 12 links x 25 GB/s per direction
 *                = 300 GB/s (NVIDIA A100 datasheet: 600 GB/s both ways),
 *                8 x ConnectX-6 HDR 200 Gb/s (DGX A100 user guide);
 *   dgx-h100     8 x H100 SXM5, NVLink4: 18 links x 25 GB/s = 450 GB/s
 *                (H100 datasheet: 900 GB/s both ways), 8 x ConnectX-7 NDR
 *                400 Gb/s (DGX H100 user guide);
 *   gb200-nvl72  compute trays of 4 B200, 72 GPUs in one NVLink5 domain:
 *                18 links x 50 GB/s = 900 GB/s (GB200 NVL72 datasheet:
 *                1.8 TB/s per GPU, 130 TB/s per rack), one ConnectX-7
 *                400 Gb/s per GPU.
 * What a copy achieves (nvlink_gbps) is below the links' rate: the data
 * crosses in packets with headers and flow control of their own. The
 * presets take NCCL's own per-link figures (src/graph/topo.h: 20.0 GB/s
 * per NVLink3 link, 20.6 NVLink4, 40.1 NVLink5) times the links: 240,
 * 370.8 and 721.8 GB/s - not collective benchmarks, which
 * docs/validation.md compares with. A transfer's latency is NCCL's tuning
 * model's per-step latency of a ring step over NVLink with its Simple
 * protocol (src/graph/tuning.cc, hwLat: 3.4 us), the protocol whose
 * whole-chunk writes and completion flags the replay's steps are.
 */
#include "models/server/server.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim/sim_parse.h"

/* A step's latency over NVLink by NCCL protocol, the same on every
 * generation: NCCL's tuning model's hwLat[NVLINK][Ring] (tuning.cc),
 * Simple 3.4 us, LL 0.6, LL128 1.9. */
#define NVL_LATS .nvlink_lat_ns = 3400, .nvlink_lat_ll_ns = 600, .nvlink_lat_ll128_ns = 1900

static const struct srv_preset dgx_a100 = {
	.name = "dgx-a100", .what = "8 A100 SXM4, NVLink3 through 6 NVSwitches, 8 x HDR",
	.gpu = "A100 SXM4", .nvlink = "NVLink3", .gpus = 8, .domain = 8,
	.links = 12, .link_gbps = 25.0, .nvlink_gbps = 240.0, NVL_LATS,
	.nic_rate = "4xHDR", .leaf_radix = 40, .fabric = "hdr",
	/* 2 x AMD EPYC 7742; a 200 Gb/s NIC is a 24 GB/s channel */
	.nccl_arch = 1, .amd_cpu = true, .nccl_bw = 24.0,	/* Quantum QM8700: 40 HDR ports */
};

static const struct srv_preset dgx_h100 = {
	.name = "dgx-h100", .what = "8 H100 SXM5, NVLink4 through 4 NVSwitches, 8 x NDR",
	.gpu = "H100 SXM5", .nvlink = "NVLink4", .gpus = 8, .domain = 8,
	.links = 18, .link_gbps = 25.0, .nvlink_gbps = 370.8, NVL_LATS,
	.nic_rate = "4xNDR", .leaf_radix = 64, .fabric = "ndr",	/* Quantum-2 QM9700: 64 NDR ports */
	.nvls_eff = 0.85,	/* NVSwitch gen3: NVLink SHARP */
	/* 2 x Intel Xeon Platinum 8480C; a 400 Gb/s NIC is a 48 GB/s channel */
	.nccl_arch = 2, .nccl_bw = 48.0,
};

static const struct srv_preset gb200_nvl72 = {
	.name = "gb200-nvl72", .what = "trays of 4 B200, 72 GPUs in one NVLink5 domain, a NDR NIC per GPU",
	.gpu = "B200", .nvlink = "NVLink5", .gpus = 4, .domain = 72,
	.links = 18, .link_gbps = 50.0, .nvlink_gbps = 721.8, NVL_LATS,
	.nic_rate = "4xNDR", .leaf_radix = 64, .fabric = "ndr",
	.nvls_eff = 0.74,	/* NVLink Switch: NVLink SHARP */
	.nccl_arch = 3, .nccl_bw = 48.0,	/* Grace (Arm) hosts: NCCL's default overhead */
};

const struct srv_preset *const srv_presets[] = { &dgx_a100, &dgx_h100, &gb200_nvl72, NULL };

const struct srv_preset *srv_preset_find(const char *name)
{
	for (int i = 0; name && srv_presets[i]; i++)
		if (!strcasecmp(name, srv_presets[i]->name))
			return srv_presets[i];
	return NULL;
}

void srv_params_default(struct srv_params *p)
{
	memset(p, 0, sizeof(*p));
	strcpy(p->preset, "none");
	p->pxn = true;
}

static void from_preset(struct srv_params *p, const struct srv_preset *s)
{
	srv_params_default(p);
	if (!s)
		return;
	snprintf(p->preset, sizeof(p->preset), "%s", s->name);
	p->gpus = s->gpus;
	p->domain = s->domain;
	p->nvlink_gbps = s->nvlink_gbps;
	p->nvlink_lat_ns = s->nvlink_lat_ns;
	p->nvlink_lat_ll_ns = s->nvlink_lat_ll_ns;
	p->nvlink_lat_ll128_ns = s->nvlink_lat_ll128_ns;
	p->nvls_eff = s->nvls_eff;
}

int srv_params_preset(struct srv_params *p, const char *name, struct sim_diag *d)
{
	const struct srv_preset *s = srv_preset_find(name);
	char list[128] = "none";

	if (s || !strcasecmp(name, "none")) {
		from_preset(p, s);
		return 0;
	}
	for (int i = 0; srv_presets[i]; i++) {
		strncat(list, ", ", sizeof(list) - strlen(list) - 1);
		strncat(list, srv_presets[i]->name, sizeof(list) - strlen(list) - 1);
	}
	return sim_diag_set(d, NULL, 0, 0, "unknown server preset '%s' (expected %s)", name, list);
}

int srv_params_check(const struct srv_params *p, struct sim_diag *d)
{
	if (!p->gpus)
		return 0;
	if (p->gpus > SRV_MAX_GPUS)
		return sim_diag_set(d, NULL, 0, 0, "server.gpus: %u is more than %d", p->gpus,
				    SRV_MAX_GPUS);
	if (!p->domain || p->domain % p->gpus || p->domain > SRV_MAX_DOMAIN)
		return sim_diag_set(d, NULL, 0, 0,
				    "server.domain: %u GPUs is not a multiple of server.gpus (%u) up to %d",
				    p->domain, p->gpus, SRV_MAX_DOMAIN);
	if (!(p->nvlink_gbps > 0))
		return sim_diag_set(d, NULL, 0, 0, "server.nvlink_gbps: must be above 0 with servers");
	return 0;
}

/* ---- server.* keys ----------------------------------------------------------- */

static int set_preset(void *obj, const struct sim_param *k, const char *v, char *err,
		      size_t errlen)
{
	struct srv_params *p = obj;
	struct sim_diag d = { 0 };

	(void)k;
	if (srv_params_preset(p, v, &d)) {
		snprintf(err, errlen, "%s", d.msg);
		return -1;
	}
	return 0;
}

static void print_preset(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	(void)k;
	snprintf(buf, len, "%s", ((const struct srv_params *)obj)->preset);
}

/* A double field (the row's off), within the row's [min, max]. */
static int set_double(void *obj, const struct sim_param *k, const char *v, char *err,
		      size_t errlen)
{
	double x;

	if (sim_parse_double(v, &x, err, errlen))
		return -1;
	if (!(x >= (double)k->min && x <= (double)k->max)) {
		snprintf(err, errlen, "'%s' is out of range (%llu up to %llu)", v,
			 (unsigned long long)k->min, (unsigned long long)k->max);
		return -1;
	}
	*(double *)((char *)obj + k->off) = x;
	return 0;
}

static void print_double(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	snprintf(buf, len, "%.12g", *(const double *)((const char *)obj + k->off));
}

#define F(f) SIM_PARAM_FIELD(struct srv_params, f)
const struct sim_param srv_param_keys[] = {
	{ "server.preset", SIM_PARAM_SPECIAL, F(preset), 0, 0, set_preset, print_preset, NULL,
	  "GPU servers: none, dgx-a100, dgx-h100, gb200-nvl72 (sets every server.* key; "
	  "a topology file may name one)" },
	{ "server.gpus", SIM_PARAM_UINT, F(gpus), 0, SRV_MAX_GPUS, NULL, NULL, NULL,
	  "GPUs per server, one HCA each (0 = no servers)" },
	{ "server.domain", SIM_PARAM_UINT, F(domain), 0, SRV_MAX_DOMAIN, NULL, NULL, NULL,
	  "GPUs per NVLink domain (a multiple of server.gpus)" },
	{ "server.nvlink_gbps", SIM_PARAM_SPECIAL, F(nvlink_gbps), 0, 100000, set_double, print_double,
	  NULL,
	  "NVLink: what a GPU-to-GPU copy achieves per GPU per direction, GB/s" },
	{ "server.nvlink_lat_ns", SIM_PARAM_NS, F(nvlink_lat_ns), 0, UINT32_MAX, NULL, NULL, NULL,
	  "NVLink: one transfer's latency with NCCL's Simple protocol (and outside collectives), ns" },
	{ "server.nvlink_lat_ll_ns", SIM_PARAM_NS, F(nvlink_lat_ll_ns), 0, UINT32_MAX, NULL, NULL,
	  NULL, "NVLink: one transfer's latency with NCCL's LL protocol, ns" },
	{ "server.nvlink_lat_ll128_ns", SIM_PARAM_NS, F(nvlink_lat_ll128_ns), 0, UINT32_MAX, NULL,
	  NULL, NULL, "NVLink: one transfer's latency with NCCL's LL128 protocol, ns" },
	{ "server.nvls_efficiency", SIM_PARAM_SPECIAL, F(nvls_eff), 0, 1, set_double, print_double,
	  NULL,
	  "NVLink SHARP (NVLS): multimem reads and writes through the NVSwitch at this share of "
	  "server.nvlink_gbps (0 = the switches cannot reduce)" },
	{ "server.pxn", SIM_PARAM_BOOL, F(pxn), 0, 1, NULL, NULL, NULL,
	  "PXN: a send to another server leaves by the NIC on the receiver's rail: on/off" },
	{ NULL },
};
#undef F

/* ---- the map ----------------------------------------------------------------- */

/* "n<S>g<J>": key "n<S>", *j = J. "<host> mlx5_<K>": key "<host>", *j = K. */
static int parse_name(const char *s, char *key, size_t klen, uint32_t *j, int *form)
{
	const char *sp = strchr(s, ' ');
	char *end;
	unsigned long v;

	if (s[0] == 'n' && isdigit((unsigned char)s[1])) {
		const char *g = s + 1;

		while (isdigit((unsigned char)*g))
			g++;
		if (*g == 'g' && isdigit((unsigned char)g[1])) {
			v = strtoul(g + 1, &end, 10);
			if (!*end && (size_t)(g - s) < klen && v < 65536) {
				memcpy(key, s, (size_t)(g - s));
				key[g - s] = 0;
				*j = (uint32_t)v;
				*form = 0;
				return 0;
			}
		}
	}
	if (sp && sp > s && !strchr(sp + 1, ' ') && !strncmp(sp + 1, "mlx5_", 5) &&
	    isdigit((unsigned char)sp[6])) {
		v = strtoul(sp + 6, &end, 10);
		if (!*end && (size_t)(sp - s) < klen && v < 65536) {
			memcpy(key, s, (size_t)(sp - s));
			key[sp - s] = 0;
			*j = (uint32_t)v;
			*form = 1;
			return 0;
		}
	}
	return -1;
}

struct member {
	int32_t server;
	uint32_t j;
	int node;
};

static int cmp_member(const void *a, const void *b)
{
	const struct member *x = a, *y = b;

	if (x->server != y->server)
		return x->server < y->server ? -1 : 1;
	if (x->j != y->j)
		return x->j < y->j ? -1 : 1;
	return x->node - y->node;
}

static uint64_t hash_str(const char *s, int form)
{
	uint64_t h = 1469598103934665603ull ^ (uint64_t)form;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static int host_err(struct sim_diag *d, const struct net *n, int node, const char *fmt,
		    const char *a, uint32_t x, uint32_t y)
{
	const struct net_node *nd = &n->nodes[node];
	char what[256];

	snprintf(what, sizeof(what), fmt, a, x, y);
	return sim_diag_set(d, nd->file, nd->line, 0, "host \"%s\": %s", nd->desc, what);
}

int srv_map_build(struct srv_map *m, const struct net *n, const struct srv_params *p,
		  struct sim_diag *d)
{
	int nh = net_nhosts(n);
	struct member *mv = NULL;
	uint32_t hcap = 16, nm = 0;
	int32_t *slot = NULL;	/* hash of server keys -> index into keys */
	char **keys = NULL;
	int *kform = NULL;
	int nkeys = 0;
	int rc = -1;

	memset(m, 0, sizeof(*m));
	m->p = *p;
	m->nnodes = n->nnodes;
	if (srv_params_check(p, d))
		return -1;
	while (hcap < 2u * (uint32_t)nh + 2)
		hcap *= 2;
	m->server = malloc((size_t)(n->nnodes ? n->nnodes : 1) * sizeof(*m->server));
	m->local = calloc((size_t)(n->nnodes ? n->nnodes : 1), sizeof(*m->local));
	m->out_free = calloc((size_t)(n->nnodes ? n->nnodes : 1), sizeof(*m->out_free));
	m->in_free = calloc((size_t)(n->nnodes ? n->nnodes : 1), sizeof(*m->in_free));
	mv = malloc((size_t)(nh ? nh : 1) * sizeof(*mv));
	slot = malloc(hcap * sizeof(*slot));
	keys = calloc((size_t)(nh ? nh : 1), sizeof(*keys));
	kform = calloc((size_t)(nh ? nh : 1), sizeof(*kform));
	if (!m->server || !m->local || !m->out_free || !m->in_free || !mv || !slot || !keys ||
	    !kform) {
		sim_diag_set(d, NULL, 0, 0, "out of memory");
		goto out;
	}
	for (int i = 0; i < n->nnodes; i++)
		m->server[i] = -1;
	memset(slot, 0xff, hcap * sizeof(*slot));
	for (int k = 0; k < nh; k++) {
		int node = net_host(n, k), form;
		char key[256];
		uint32_t j, h;

		if (parse_name(n->nodes[node].desc, key, sizeof(key), &j, &form))
			continue;
		h = (uint32_t)hash_str(key, form) & (hcap - 1);
		while (slot[h] >= 0 && (kform[slot[h]] != form || strcmp(keys[slot[h]], key)))
			h = (h + 1) & (hcap - 1);
		if (slot[h] < 0) {
			keys[nkeys] = strdup(key);
			if (!keys[nkeys]) {
				sim_diag_set(d, NULL, 0, 0, "out of memory");
				goto out;
			}
			kform[nkeys] = form;
			slot[h] = nkeys++;
		}
		if (!form && j >= p->gpus) {
			host_err(d, n, node, "GPU %s%u of a server of %u GPUs (server.gpus)", "", j,
				 p->gpus);
			goto out;
		}
		mv[nm++] = (struct member){ slot[h], j, node };
	}
	qsort(mv, nm, sizeof(*mv), cmp_member);
	m->nservers = nkeys;
	m->gpu_node = malloc((size_t)(nkeys ? nkeys : 1) * p->gpus * sizeof(*m->gpu_node));
	if (!m->gpu_node) {
		sim_diag_set(d, NULL, 0, 0, "out of memory");
		goto out;
	}
	memset(m->gpu_node, 0xff, (size_t)(nkeys ? nkeys : 1) * p->gpus * sizeof(*m->gpu_node));
	for (uint32_t i = 0, pos = 0; i < nm; i++) {
		const struct member *x = &mv[i];
		uint32_t j;

		pos = i && mv[i - 1].server == x->server ? pos + 1 : 0;
		j = kform[x->server] ? pos : x->j;	/* mlx5_K: the K's order */
		if (kform[x->server] && pos >= p->gpus) {
			host_err(d, n, x->node, "server \"%s\" has more than %u HCAs (server.gpus)",
				 keys[x->server], p->gpus, 0);
			goto out;
		}
		if (!kform[x->server] && i && mv[i - 1].server == x->server && mv[i - 1].j == x->j) {
			host_err(d, n, x->node, "server \"%s\" names GPU %u twice", keys[x->server],
				 x->j, 0);
			goto out;
		}
		m->server[x->node] = x->server;
		m->local[x->node] = (uint16_t)j;
		m->gpu_node[(size_t)x->server * p->gpus + j] = x->node;
	}
	rc = 0;
out:
	for (int i = 0; keys && i < nkeys; i++)
		free(keys[i]);
	free(keys);
	free(kform);
	free(slot);
	free(mv);
	if (rc)
		srv_map_free(m);
	return rc;
}

void srv_map_free(struct srv_map *m)
{
	free(m->server);
	free(m->local);
	free(m->gpu_node);
	free(m->out_free);
	free(m->in_free);
	memset(m, 0, sizeof(*m));
}

int srv_proxy(const struct srv_map *m, int a, int b)
{
	int32_t s = m->server[a];
	int x;

	if (!m->p.pxn || s < 0 || m->server[b] < 0 || m->local[a] == m->local[b])
		return a;
	x = m->gpu_node[(size_t)s * m->p.gpus + m->local[b]];
	return x >= 0 ? x : a;
}

sim_time_t srv_nvlink(struct srv_map *m, int a, int b, sim_time_t t, uint64_t bytes,
		      uint32_t lat_ns, sim_time_t *first)
{
	/* GB/s is bytes per ns: bytes x 1000 / gbps picoseconds, rounded up */
	sim_time_t ser = (sim_time_t)((double)bytes * 1000.0 / m->p.nvlink_gbps + 0.999999);
	sim_time_t lat = (sim_time_t)lat_ns * SIM_NS;
	sim_time_t out = t > m->out_free[a] ? t : m->out_free[a];
	sim_time_t in;

	m->out_free[a] = out + ser;
	in = m->in_free[b] + ser > out + ser ? m->in_free[b] + ser : out + ser;
	m->in_free[b] = in;
	m->xfers++;
	m->bytes += bytes;
	if (first)
		*first = out + lat;
	return in + lat;
}

/* NVLS: a GPU's port moves multimem data at nvls_eff of its rate. */
static sim_time_t nvs_ser(const struct srv_map *m, uint64_t bytes)
{
	return (sim_time_t)((double)bytes * 1000.0 / (m->p.nvlink_gbps * m->p.nvls_eff) + 0.999999);
}

sim_time_t srv_nvs_send(struct srv_map *m, int a, sim_time_t t, uint64_t bytes, uint32_t lat_ns)
{
	sim_time_t ser = nvs_ser(m, bytes);
	sim_time_t out = t > m->out_free[a] ? t : m->out_free[a];

	m->out_free[a] = out + ser;
	m->xfers++;
	m->bytes += bytes;
	return out + ser + (sim_time_t)lat_ns * SIM_NS / 2;
}

sim_time_t srv_nvs_recv(struct srv_map *m, int b, sim_time_t t, uint64_t bytes, uint32_t lat_ns)
{
	sim_time_t ser = nvs_ser(m, bytes);
	sim_time_t in = m->in_free[b] + ser > t + ser ? m->in_free[b] + ser : t + ser;

	m->in_free[b] = in;
	m->xfers++;
	m->bytes += bytes;
	return in + (sim_time_t)lat_ns * SIM_NS / 2;
}
