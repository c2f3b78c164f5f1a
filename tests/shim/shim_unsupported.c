/* SPDX-License-Identifier: MIT */
/*
 * shim_unsupported.c - calls verbs the simulated HCA does not implement
 * (memory windows, raw packet QPs, completion timestamps, the new post-send
 * API on a QP not created for it or for operations the QP was not created
 * with, CQ resize) and checks each fails
 * cleanly with EOPNOTSUPP (or ENOSYS) instead of crashing. The shim prints one line per
 * verb on stderr; tests/interop/shim_robust.sh counts them. Exits 0 when
 * every call failed as it should.
 */
#include <errno.h>
#include <stdbool.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad;

static void expect(const char *what, int ok, int err)
{
	if (!ok || (err != EOPNOTSUPP && err != ENOSYS)) {
		printf("FAIL %s: errno %d (%s)\n", what, err, strerror(err));
		bad++;
	} else {
		printf("ok   %s: %s\n", what, strerror(err));
	}
}

int main(void)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	char *buf = malloc(8192);
	struct ibv_mr *mr;

	if (!l || !l[0] || !(ctx = ibv_open_device(l[0])) || !(pd = ibv_alloc_pd(ctx)) ||
	    !(cq = ibv_create_cq(ctx, 8, NULL, NULL, 0)) || !buf ||
	    !(mr = ibv_reg_mr(pd, buf, 8192, IBV_ACCESS_LOCAL_WRITE))) {
		perror("set-up");
		return 2;
	}
	struct ibv_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						.max_send_sge = 2, .max_recv_sge = 1 } };
	qp = ibv_create_qp(pd, &ia);
	if (!qp) {
		perror("create_qp");
		return 2;
	}

	errno = 0;
	bool none = ibv_alloc_mw(pd, IBV_MW_TYPE_1) == NULL;

	expect("ibv_alloc_mw", none, errno);

	struct ibv_qp_init_attr raw = ia;

	raw.qp_type = IBV_QPT_RAW_PACKET;
	errno = 0;
	none = ibv_create_qp(pd, &raw) == NULL;
	expect("raw packet QP", none, errno);

	errno = 0;
	none = ibv_qp_to_qp_ex(qp) == NULL;
	expect("ibv_qp_to_qp_ex", none, errno);

	/* the new post-send API: memory windows are not there; a batch with
	 * an operation the QP was not created for fails at wr_complete and
	 * posts nothing */
	struct ibv_qp_init_attr_ex ix = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, .pd = pd,
		.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_BIND_MW,
	};

	errno = 0;
	none = ibv_create_qp_ex(ctx, &ix) == NULL;
	expect("ibv_create_qp_ex with memory-window binds", none, errno);
	ix.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE;

	struct ibv_qp *qx = ibv_create_qp_ex(ctx, &ix);
	struct ibv_qp_ex *x = qx ? ibv_qp_to_qp_ex(qx) : NULL;

	if (!x) {
		printf("FAIL ibv_create_qp_ex with RDMA WRITE: %s\n", strerror(errno));
		bad++;
	} else {
		ibv_wr_start(x);
		x->wr_id = 1;
		ibv_wr_send(x);
		ibv_wr_set_sge(x, mr->lkey, (uintptr_t)buf, 16);
		int rcx = ibv_wr_complete(x);

		expect("a SEND on a QP created for WRITEs only", rcx != 0, rcx);
		ibv_destroy_qp(qx);
	}

	/* the extended CQ: standard fields only, no completion timestamps */
	struct ibv_cq_init_attr_ex cx = { .cqe = 8, .wc_flags = IBV_WC_STANDARD_FLAGS |
								IBV_WC_EX_WITH_COMPLETION_TIMESTAMP };

	errno = 0;
	none = ibv_create_cq_ex(ctx, &cx) == NULL;
	expect("ibv_create_cq_ex with timestamps", none, errno);

	int rc = ibv_resize_cq(cq, 64);

	expect("ibv_resize_cq", rc != 0, rc);

	/* what does work still works afterwards */
	if (ibv_destroy_qp(qp) || ibv_dereg_mr(mr) || ibv_destroy_cq(cq) || ibv_dealloc_pd(pd) ||
	    ibv_close_device(ctx)) {
		printf("FAIL clean-up\n");
		bad++;
	}
	ibv_free_device_list(l);
	free(buf);
	return bad ? 1 : 0;
}
