/* SPDX-License-Identifier: MIT */
/*
 * shim_int.h - internals shared by the files of the verbs shim library
 * (libibverbs.so.1): the connection to the daemon and the simulated clock.
 * Nothing here is exported: the library's ABI is its version script.
 */
#ifndef IBFAB_SHIM_INT_H
#define IBFAB_SHIM_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "shim/shim_proto.h"

#define SHIM_HIDDEN __attribute__((visibility("hidden")))

/* What the daemon said at attach time (HELLO). */
struct shim_conn_info {
	uint32_t host_index, nhosts;
	uint16_t lid, sm_lid;
	uint8_t lanes, speed, mtu_code, link_layer;
	bool atomics;		/* the device says IBV_ATOMIC_HCA, else NONE */
	bool faults;		/* the daemon schedules faults: the port's state may change */
	uint64_t guid;
	char host[SHIM_NAME_LEN];
	char fabric[16];
	uint32_t addr;		/* its IPv4 address (shim_host_addr) */
};

/* Attach on first use (never in a constructor: children inherit the
 * library). 0, or -1 with errno set and one line on stderr. */
SHIM_HIDDEN int shim_attach(void);
SHIM_HIDDEN bool shim_attached(void);
SHIM_HIDDEN const struct shim_conn_info *shim_info(void);
/*
 * One request/reply round trip. fd_out >= 0 is passed along; *fd_in (if not
 * NULL) receives a descriptor sent with the reply (or -1). Returns the
 * reply's status (0 or a positive errno); EPIPE if the daemon is gone.
 */
SHIM_HIDDEN int shim_rpc(const struct shim_req *req, const void *tail, uint32_t tail_len,
			 int fd_out, struct shim_rep *rep, int *fd_in);
/* A notification: no reply. */
SHIM_HIDDEN void shim_notify(const struct shim_req *req, int fd_out);
/* A post or CQ arm the shim has checked will not be refused: sent with
 * SHIM_OP_QUIET, no reply awaited. 0; EAGAIN when it was not sent because
 * the process has several threads calling the shim (ask with shim_rpc
 * instead); EPIPE if the daemon is gone. */
SHIM_HIDDEN int shim_quiet(const struct shim_req *req, const void *tail, uint32_t tail_len);
/* Quiet requests allowed (IBFAB_SHIM_QUIET=0 turns them off: every post
 * then waits for its answer, as before, for comparison). */
SHIM_HIDDEN bool shim_quiet_on(void);
/* The simulated time now, picoseconds (0 before attach). */
SHIM_HIDDEN uint64_t shim_now_ps(void);
/* The same for a program that reads it (gettimeofday, rdtsc): if it moved
 * while the program ran (taken for a spin), the daemon is told the program
 * runs, and the clock stands still from then on. */
SHIM_HIDDEN uint64_t shim_clock_runs(void);
/* A descriptor the fabric makes readable (a completion channel's, an
 * rdma_cm event channel's): a program waiting on it waits for the fabric,
 * so the clock may move (on: made; off: closed). */
SHIM_HIDDEN void shim_fabric_fd(int fd, bool on);
SHIM_HIDDEN int shim_wait_readable(int fd);
/* The simulated device's name (ibv_get_device_name), also its netdev's on
 * the RoCE fabric (getifaddrs). */
#define SHIM_DEV_NAME "ibfab0"
/* A verb the shim does not implement: one line, once per name. */
SHIM_HIDDEN void shim_unsupported(const char *what);
/* The rdtsc emulation for perftest (shim_tsc.c): patch the executable. */
SHIM_HIDDEN void shim_tsc_install(void);
SHIM_HIDDEN uint64_t shim_tsc_hz(void);

/*
 * Exported under the private version node IBFAB_SHIM_PRIVATE_1 for the
 * shim's librdmacm.so.1 (rdmacm.c), which shares the process's connection:
 * shim_rpc, the HELLO's answer (NULL before attach), shim_unsupported and
 * shim_fabric_fd.
 */
int ibfab_shim_rpc(const struct shim_req *req, const void *tail, uint32_t tail_len, int fd_out,
		   struct shim_rep *rep, int *fd_in);
const struct shim_conn_info *ibfab_shim_info(void);
void ibfab_shim_unsupported(const char *what);
void ibfab_shim_fabric_fd(int fd, bool on);

#endif
