/* SPDX-License-Identifier: MIT */
/*
 * stubs.c - the private IBVERBS_PRIVATE_34 symbols that rdma-core's provider
 * libraries (libmlx5, libefa, loaded by perftest) import, and old 1.0 helpers.
 * BIND_NOW needs them to exist; the providers' constructors call
 * verbs_register_driver_34(), which does nothing here, so no provider ever
 * drives a device and none of the ibv_cmd_* entry points is reached. If one
 * is, it fails with EOPNOTSUPP after one line on stderr, never a crash.
 * Generated from `objdump -T` of the Debian binaries; signatures are not
 * needed for stubs that are never given a meaningful call.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "shim/shim_int.h"

#define SHIM_EXPORT __attribute__((visibility("default")))

/* a data object, not a function: libmlx5 reads it */
SHIM_EXPORT bool verbs_allow_disassociate_destroy;

SHIM_EXPORT void verbs_register_driver_34(const void *ops);
void verbs_register_driver_34(const void *ops)
{
	(void)ops;	/* no kernel providers: the simulated HCA is the only device */
}

SHIM_EXPORT void __verbs_log(void *ctx, int level, const char *fmt, ...);
void __verbs_log(void *ctx, int level, const char *fmt, ...)
{
	(void)ctx;
	(void)level;
	(void)fmt;
}

#define STUB(name) \
	SHIM_EXPORT int name(void); \
	int name(void) \
	{ \
		shim_unsupported(#name); \
		errno = EOPNOTSUPP; \
		return EOPNOTSUPP; \
	}

STUB(_verbs_init_and_alloc_context)
STUB(execute_ioctl)
STUB(ibv_cmd_advise_mr)
STUB(ibv_cmd_alloc_dm)
STUB(ibv_cmd_alloc_mw)
STUB(ibv_cmd_alloc_pd)
STUB(ibv_cmd_attach_mcast)
STUB(ibv_cmd_close_xrcd)
STUB(ibv_cmd_create_ah)
STUB(ibv_cmd_create_counters)
STUB(ibv_cmd_create_cq_ex)
STUB(ibv_cmd_create_flow)
STUB(ibv_cmd_create_flow_action_esp)
STUB(ibv_cmd_create_qp_ex)
STUB(ibv_cmd_create_qp_ex2)
STUB(ibv_cmd_create_rwq_ind_table)
STUB(ibv_cmd_create_srq)
STUB(ibv_cmd_create_srq_ex)
STUB(ibv_cmd_create_wq)
STUB(ibv_cmd_dealloc_mw)
STUB(ibv_cmd_dealloc_pd)
STUB(ibv_cmd_dereg_mr)
STUB(ibv_cmd_destroy_ah)
STUB(ibv_cmd_destroy_counters)
STUB(ibv_cmd_destroy_cq)
STUB(ibv_cmd_destroy_flow)
STUB(ibv_cmd_destroy_flow_action)
STUB(ibv_cmd_destroy_qp)
STUB(ibv_cmd_destroy_rwq_ind_table)
STUB(ibv_cmd_destroy_srq)
STUB(ibv_cmd_destroy_wq)
STUB(ibv_cmd_detach_mcast)
STUB(ibv_cmd_free_dm)
STUB(ibv_cmd_get_context)
STUB(ibv_cmd_modify_cq)
STUB(ibv_cmd_modify_flow_action_esp)
STUB(ibv_cmd_modify_qp)
STUB(ibv_cmd_modify_qp_ex)
STUB(ibv_cmd_modify_srq)
STUB(ibv_cmd_modify_wq)
STUB(ibv_cmd_open_qp)
STUB(ibv_cmd_open_xrcd)
STUB(ibv_cmd_query_context)
STUB(ibv_cmd_query_device_any)
STUB(ibv_cmd_query_mr)
STUB(ibv_cmd_query_port)
STUB(ibv_cmd_query_qp)
STUB(ibv_cmd_query_srq)
STUB(ibv_cmd_read_counters)
STUB(ibv_cmd_reg_dm_mr)
STUB(ibv_cmd_reg_dmabuf_mr)
STUB(ibv_cmd_reg_mr)
STUB(ibv_cmd_rereg_mr)
STUB(ibv_cmd_resize_cq)
STUB(verbs_init_cq)
STUB(verbs_open_device)
STUB(verbs_set_ops)
STUB(verbs_uninit_context)

/* 1.0: sysfs helpers. There is no sysfs for a simulated device. */
SHIM_EXPORT const char *ibv_get_sysfs_path(void);
const char *ibv_get_sysfs_path(void)
{
	return "/sys";
}

SHIM_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	(void)dir;
	(void)file;
	if (size)
		buf[0] = 0;
	return -1;
}

STUB(ibv_copy_path_rec_from_kern)
STUB(ibv_copy_qp_attr_from_kern)
STUB(ibv_copy_ah_attr_from_kern)
