/* SPDX-License-Identifier: MIT */
/*
 * fab_int.h - the builder's own: the traffic adapter, the deadlock
 * explanation, and the node kinds and link layers it sets up. The state
 * the models share is models/core/fab_core.h's; the ports are
 * models/port/port.h's. Not a public API.
 */
#ifndef IBFAB_FAB_INT_H
#define IBFAB_FAB_INT_H

#include <stddef.h>

#include "models/core/fab_core.h"
#include "models/fabric/fab.h"
#include "models/ib/ib_pkt.h"
#include "models/ib/ib_vlarb.h"
#include "models/eth/eth_ops.h"
#include "models/hca/hca_node.h"
#include "models/port/port.h"
#include "models/switch/sw.h"
#include "sim/sim.h"
#include "sim/sim_pool.h"
#include "sim/sim_rng.h"

struct fab_node;
struct hca_qp;
struct hca_swqe;
struct eth_port;
struct eth_sw;
struct ibcc_port;

/* What fab_create's one pass over the message list learns for the set-up. */
struct fab_scan {
	uint32_t *count;	/* messages per stream */
	uint32_t *first;	/* each stream's first message, in list order */
	uint32_t nfirst;
	size_t waiting;		/* messages that wait for another */
};

/* fab_traffic.c: a QP pair per stream, in the order of sc->first */
struct fab_stream {
	struct hca_qp *sqp, *dqp;
	struct hca_mr *dmr;		/* the destination's region (its rkey) */
	uint32_t depth;			/* the send queue's depth: at most this many posted and not completed */
	uint32_t inflight;		/* posted and not completed */
	uint32_t *bl;			/* messages waiting for room: a FIFO ring */
	uint32_t bl_head, bl_len, bl_cap;
	uint32_t *parked;		/* compact list: runs whose due posts wait for room */
	uint32_t nparked, parked_cap;
};

int fab_traffic_setup(struct fab *f, const struct fab_scan *sc);
/* fab_fault.c: the faults' state (fab_faults_start: fab.h) */
void fab_faults_free(struct fab *f);
void fab_traffic_free(struct fab *f);
void fab_traffic_schedule(struct fab *f, uint32_t mi, sim_time_t t);
/* Post message mi now, on its stream's requester QP (the hooks' post). */
void fab_traffic_post_now(struct fab *f, uint32_t mi);
/* Post message mi's receive at its destination (fab_hooks.recv). */
void fab_traffic_recv(struct fab *f, uint32_t mi);
/* A message of the stream completed at its requester: its send queue slot
 * goes to the stream's oldest message waiting for one. */
void fab_traffic_slot_free(struct fab *f, uint32_t stream);
/* Whether the stream's send queue is full (its next post would wait). */
bool fab_traffic_stream_full(const struct fab *f, uint32_t stream);
/* Park run r of a compact list on its stream until a slot frees. */
int fab_traffic_park(struct fab *f, uint32_t r);

/* fab_plan.c: the posts known before the run, per HCA (the hooks'
 * post_planned is fab_plan_post) */
int fab_plan_build(struct fab *f);
void fab_plan_free(struct fab *f);
void fab_plan_post(struct fab *f, struct hca *h);
/* One of a stream's parked runs posts its due message (a slot is free). */
void fab_plan_unpark(struct fab *f, uint32_t *parked, uint32_t *nparked);

/* fab_live.c: messages in flight (compact list) and completion times */
int fab_live_init(struct fab *f);
void fab_live_free(struct fab *f);
struct fab_msg *fab_live_find(const struct fab_live *L, uint32_t id);
/* Message id's state, made from its input if it is not in flight yet;
 * NULL when out of memory. A compact list only. */
struct fab_msg *fab_live_add(struct fab *f, uint32_t id);
/* The same, its run known (id is one of run's messages). */
struct fab_msg *fab_live_add_run(struct fab *f, uint32_t id, const struct fab_msg_run *run);
/* Message id is finished: its completion time is kept, its state goes. */
void fab_msg_finished(struct fab *f, uint32_t id, struct fab_msg *m);
/* fn for every message not finished (an explicit list: in index order). */
void fab_live_each(const struct fab *f, void (*fn)(const struct fab_msg *m, uint32_t id,
						    void *ctx), void *ctx);

/*
 * Whether message m's GPU data goes through a host bounce buffer (the
 * program's cudaMemcpy before the post and after the delivery,
 * models/host): without GPUDirect RDMA, and always over a socket, since
 * the kernel's stack reads and writes host memory only (fabric=tcp's RC
 * messages; its datagrams are RoCEv2 and use GPUDirect like RoCE's).
 */
static inline bool fab_msg_stages(const struct fab *f, const struct fab_msg *m)
{
	return f->p.host_model && m->mem == HCA_MEM_GPU &&
	       (host_needs_staging(&f->p.host, HCA_MEM_GPU) ||
		(f->rc_transport && !fab_msg_is_ud(m)));
}

/* Message id's state: its entry of an explicit list, or its slot in
 * flight; NULL when there is none (not a traffic message, or not in
 * flight). */
static inline struct fab_msg *fab_msg_state(const struct fab *f, uint32_t id)
{
	if (!f->live)
		return id < f->msgs->n ? &f->msgs->v[id] : NULL;
	return fab_live_find(f->live, id);
}

/* fab_deadlock.c: when the fabric stalls with packets still buffered,
 * explain why (e.g. the cycle of ports waiting for each other's credits)
 * into buf; an empty string when there is nothing to add. */
void fab_deadlock_explain(const struct fab *f, char *buf, size_t len);

#endif
