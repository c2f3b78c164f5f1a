/* SPDX-License-Identifier: MIT */
/*
 * shim_remap.c - memory registered, unmapped, mapped again at the same
 * addresses and registered again: the HCA must move the new pages' bytes,
 * not the old ones'. This is what a program's malloc does under an MPI
 * library's registration cache: free() of a large buffer unmaps it, the
 * next malloc() maps fresh pages at the same address, and the library
 * registers them.
 *
 * One process, one RC QP connected to itself through the HCA's loopback
 * (IBA 17.3.1). Round k (of ROUNDS): map LEN bytes at the same address A,
 * fill them with pattern k, register, RDMA WRITE them into a destination
 * region, check every byte there, deregister, unmap.
 *
 * Then regions that share a page, as a registration cache's do when it
 * registers parts of one buffer (an MPI ring's chunks): [0, LEN/2 + 100)
 * of a fresh mapping, then [LEN/2 + 50, LEN). With both registered the
 * program writes a new pattern over all of it: a WRITE from the first
 * region must carry the new bytes, and a WRITE into the first region must
 * be what the program reads, up to its last byte in the shared page.
 * Prints "remap: ok" and exits 0, or the first mismatch and exits 1.
 */
#define _GNU_SOURCE
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define LEN	(1u << 20)
#define ROUNDS	4

static int die(const char *what)
{
	fprintf(stderr, "remap: %s failed\n", what);
	return 1;
}

static uint8_t pat(int k, uint32_t i)
{
	return (uint8_t)(i * 31 + (uint32_t)k * 101 + 7);
}

/* WRITE n bytes from (lkey, from) to (rkey, to) over the QP and wait. */
static int write_wait(struct ibv_qp *qp, struct ibv_cq *cq, uint32_t lkey, const void *from,
		      uint32_t rkey, void *to, uint32_t n, const char *what)
{
	struct ibv_sge sge = { (uintptr_t)from, n, lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)to, .rkey = rkey },
	}, *bad;
	struct ibv_wc wc;
	int k;

	if (ibv_post_send(qp, &wr, &bad)) {
		fprintf(stderr, "remap: %s: post failed\n", what);
		return 1;
	}
	while ((k = ibv_poll_cq(cq, 1, &wc)) == 0)
		;
	if (k < 0 || wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "remap: %s: completion %s\n", what,
			k < 0 ? "poll error" : ibv_wc_status_str(wc.status));
		return 1;
	}
	return 0;
}

/* Two regions sharing a page (see the top). */
static int shared_page(struct ibv_pd *pd, struct ibv_qp *qp, struct ibv_cq *cq, uint8_t *dst,
		       struct ibv_mr *dmr)
{
	const uint32_t e1 = LEN / 2 + 100, b2 = LEN / 2 + 50;
	uint8_t *buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;

	if (buf == MAP_FAILED)
		return die("mapping the shared-page buffer");
	memset(buf, 1, LEN);
	struct ibv_mr *m1 = ibv_reg_mr(pd, buf, e1, access);
	struct ibv_mr *m2 = m1 ? ibv_reg_mr(pd, buf + b2, LEN - b2, access) : NULL;

	if (!m2)
		return die("registering regions that share a page");
	/* k = 9: the program writes, the HCA reads; k = 11: the other way */
	for (int k = 9; k <= 11; k += 2) {
		uint8_t *from = k == 9 ? buf : dst, *to = k == 9 ? dst : buf;
		const char *what = k == 9 ? "WRITE from the first region" :
					    "WRITE into the first region";

		for (uint32_t i = 0; i < (k == 9 ? LEN : e1); i++)
			from[i] = pat(k, i);
		if (write_wait(qp, cq, k == 9 ? m1->lkey : dmr->lkey, from,
			       k == 9 ? dmr->rkey : m1->rkey, to, e1, what))
			return 1;
		for (uint32_t i = 0; i < e1; i++)
			if (to[i] != pat(k, i)) {
				fprintf(stderr, "remap: shared page: %s: byte %u is %u, want %u\n",
					what, i, to[i], pat(k, i));
				return 1;
			}
	}
	if (ibv_dereg_mr(m1) || ibv_dereg_mr(m2) || munmap(buf, LEN))
		return die("deregistering the shared-page regions");
	return 0;
}

int main(void)
{
	struct ibv_device **dl = ibv_get_device_list(NULL);
	struct ibv_context *ctx = dl && dl[0] ? ibv_open_device(dl[0]) : NULL;
	struct ibv_port_attr pa;

	if (!ctx || ibv_query_port(ctx, 1, &pa))
		return die("opening the device");
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = cq ? ibv_create_qp(pd, &ia) : NULL;
	uint8_t *dst = malloc(LEN);
	struct ibv_mr *dmr = dst ? ibv_reg_mr(pd, dst, LEN, IBV_ACCESS_LOCAL_WRITE |
					      IBV_ACCESS_REMOTE_WRITE) : NULL;

	if (!qp || !dmr)
		return die("creating the QP and the destination");
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		return die("INIT");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_4096,
				  .dest_qp_num = qp->qp_num, .max_dest_rd_atomic = 1,
				  .min_rnr_timer = 12, .ah_attr = { .dlid = pa.lid, .port_num = 1 } };
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return die("RTR");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
				  .rnr_retry = 7, .max_rd_atomic = 1 };
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		return die("RTS");

	if (shared_page(pd, qp, cq, dst, dmr))
		return 1;
	void *at = NULL;

	for (int k = 0; k < ROUNDS; k++) {
		uint8_t *src = mmap(at, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
				    (at ? MAP_FIXED_NOREPLACE : 0), -1, 0);

		if (src == MAP_FAILED || (at && (void *)src != at))
			return die("mapping the source again at its address");
		at = src;
		for (uint32_t i = 0; i < LEN; i++)
			src[i] = pat(k, i);
		struct ibv_mr *smr = ibv_reg_mr(pd, src, LEN, IBV_ACCESS_LOCAL_WRITE);
		struct ibv_sge sge = { (uintptr_t)src, LEN, smr ? smr->lkey : 0 };
		struct ibv_send_wr wr = {
			.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = (uintptr_t)dst, .rkey = dmr->rkey },
		}, *bad;
		struct ibv_wc wc;
		int n;

		if (!smr || ibv_post_send(qp, &wr, &bad))
			return die("registering and posting");
		while ((n = ibv_poll_cq(cq, 1, &wc)) == 0)
			;
		if (n < 0 || wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "remap: round %d: completion %s\n", k,
				n < 0 ? "poll error" : ibv_wc_status_str(wc.status));
			return 1;
		}
		for (uint32_t i = 0; i < LEN; i++)
			if (dst[i] != pat(k, i)) {
				fprintf(stderr, "remap: round %d: byte %u is %u, want %u%s\n", k, i,
					dst[i], pat(k, i),
					k && dst[i] == pat(k - 1, i) ? " (the unmapped pages')" : "");
				return 1;
			}
		if (ibv_dereg_mr(smr) || munmap(src, LEN))
			return die("deregistering and unmapping");
	}
	printf("remap: ok\n");
	return 0;
}
