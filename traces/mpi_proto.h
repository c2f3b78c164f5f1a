/* SPDX-License-Identifier: MIT */
/*
 * mpi_proto.h - how an MPI library over UCX moves one point-to-point
 * message between CPU ranks (mpi.proto=ucx): the work requests it posts,
 * their sizes on the wire, and UCX's automatic rendezvous threshold.
 * See mpi_proto.c.
 */
#ifndef IBFAB_TRACES_MPI_PROTO_H
#define IBFAB_TRACES_MPI_PROTO_H

#include <stdbool.h>
#include <stdint.h>

enum mpi_kind {
	MPI_SHORT,	/* one SEND, inline: UCX's eager short */
	MPI_EAGER,	/* SENDs of at most a segment each: eager bcopy/zcopy */
	MPI_RNDV,	/* RTS, the receiver's RDMA READ, ATS */
};

/* Wire sizes of UCX's control messages over rc_verbs (payload bytes of
 * the SEND): the rendezvous request with its packed remote key, and the
 * receiver's acknowledgement. */
#define MPI_RTS_BYTES 60u
#define MPI_ATS_BYTES 18u

struct mpi_plan {
	enum mpi_kind kind;
	uint32_t nsend;		/* SEND work requests from the sender (RTS: 1) */
	uint32_t first, middle;	/* payload bytes of the first and every middle SEND */
	uint32_t last;		/* ... of the last (the only one when nsend is 1) */
};

struct mpi_params {
	uint32_t short_bytes;	/* data bytes sent inline (UCX's eager short) */
	uint32_t seg_bytes;	/* a SEND's payload at most (UCX_RC_VERBS_SEG_SIZE) */
	uint64_t rndv_bytes;	/* data bytes from which rendezvous is used */
};

/* How a message of `bytes` data bytes goes; rndv false: never by
 * rendezvous (a transfer that is done at its source's completion). */
void mpi_plan(const struct mpi_params *pp, uint64_t bytes, bool rndv, struct mpi_plan *pl);

/* Payload bytes of SEND i (0-based) of plan pl. */
static inline uint32_t mpi_send_bytes(const struct mpi_plan *pl, uint32_t i)
{
	return i + 1 == pl->nsend ? pl->last : i ? pl->middle : pl->first;
}

/*
 * UCX's automatic rendezvous threshold for a tag message over one rc_verbs
 * lane (ucp_ep_config_calc_rndv_thresh, UCX 1.13): link_Bps the port's
 * data rate in bytes/s, roce its link layer, ppn the processes per node
 * UCX is told of (it divides the port among them), eps the endpoints
 * (Open MPI: the job's ranks), bcopy_Bps UCX's estimate of a core's
 * memory copy rate (UCX_BCOPY_BW). Bytes; at least a segment.
 */
uint64_t mpi_ucx_rndv_thresh(double link_Bps, bool roce, uint32_t ppn, uint32_t eps,
			     double bcopy_Bps, uint32_t seg_bytes);

#endif
