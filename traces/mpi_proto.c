/* SPDX-License-Identifier: MIT */
/*
 * mpi_proto.c - an MPI point-to-point message as UCX's tag protocols send
 * it over rc_verbs (UCX 1.13, the version Debian's Open MPI 4.1 uses;
 * ucp_ep_config_init, ucp_request_send_start, tag/eager_snd.c,
 * rndv/rndv.c), for the replay's CPU ranks with mpi.proto=ucx
 * (docs/collectives.md, "MPI over UCX").
 *
 * A message of L data bytes goes
 *  - up to mpi.short_bytes (eager short): one SEND of 1 + 8 + L bytes,
 *    inline (UCT's 1-byte active-message header, UCP's 8-byte tag);
 *  - below the rendezvous threshold (eager): one SEND of 9 + L bytes while
 *    that fits a segment (mpi.seg_bytes, UCX_RC_VERBS_SEG_SIZE 8,256), else
 *    fragments of a segment each, the first with a 24-byte header (tag,
 *    length, message id), the others 16 (message id, offset);
 *  - from the threshold (rendezvous, UCX's default get scheme for host
 *    memory): a 60-byte request (RTS: the sender's address, length and
 *    packed remote key), the receiver's RDMA READ of the L bytes, and its
 *    18-byte acknowledgement (ATS) back.
 * Left out: eager bcopy and zcopy differ only in the sender's copy and
 * gather list, not on the wire, and the copy takes no simulated time here;
 * UCX's flow-control grants (one 1-byte SEND per ~384 messages to a
 * peer); a READ split at a 512-byte misalignment of the receiver's buffer
 * (the replay's buffers are aligned); MPI_Send's "fast completion"
 * thresholds (tag_send_nbr: 256 KiB, no zero-copy), which a blocking
 * send uses where Open MPI's collectives post non-blocking ones.
 */
#include "traces/mpi_proto.h"

#define AM_HDR 1u	/* UCT rc: active-message id and flow-control bits */
#define TAG_ONLY 8u	/* UCP eager, one fragment: the tag */
#define TAG_FIRST 24u	/* first fragment: tag, total length, message id */
#define TAG_MIDDLE 16u	/* the others: message id, offset */

void mpi_plan(const struct mpi_params *pp, uint64_t bytes, bool rndv, struct mpi_plan *pl)
{
	const uint64_t seg = pp->seg_bytes;

	*pl = (struct mpi_plan){ .kind = MPI_EAGER, .nsend = 1 };
	if (rndv && pp->rndv_bytes && bytes >= pp->rndv_bytes) {
		pl->kind = MPI_RNDV;
		pl->first = pl->middle = pl->last = MPI_RTS_BYTES;
		return;
	}
	if (bytes <= pp->short_bytes)
		pl->kind = MPI_SHORT;
	if (bytes + AM_HDR + TAG_ONLY <= seg) {
		pl->first = pl->middle = pl->last = (uint32_t)(bytes + AM_HDR + TAG_ONLY);
		return;
	}
	const uint64_t f = seg - AM_HDR - TAG_FIRST, m = seg - AM_HDR - TAG_MIDDLE;
	const uint64_t rest = bytes - f, n = (rest + m - 1) / m;	/* after the first */

	pl->nsend = (uint32_t)(1 + n);
	pl->first = pl->middle = (uint32_t)seg;
	pl->last = (uint32_t)(AM_HDR + TAG_MIDDLE + rest - (n - 1) * m);
}

/*
 * ucp_ep_config_calc_rndv_thresh (UCX 1.13, src/ucp/core/ucp_ep.c): the
 * size from which a rendezvous (request, then zero-copy RDMA) beats eager
 * (copied to a bounce buffer, then sent) by UCX_RNDV_PERF_DIFF (1%), from
 * UCX's own estimates of the lane (uct_ib_iface_query, rc_verbs_iface.c):
 * latency 600 ns (EDR and later; +200 ns on RoCE) + 1 ns per endpoint,
 * 75 ns of software overhead per operation, 180 ns per registration (a
 * registration-cache hit), bandwidth the port's data rate times
 * MTU / (MTU + header bytes) shared by the node's processes, eager's
 * also paying the overhead per segment. With a = the active-message
 * threshold and r = the RDMA one (two registrations), d = 0.99:
 *   num = d (reg (1 + rma) + 4 lat + 3 o) - reg - o
 *   den = 1 / min(eager bw, bcopy bw) - d / bw
 * and the tag threshold is the smaller of the two, at least a segment.
 * On HDR (25 GB/s), 4 endpoints, one process per node: 20,400 bytes with
 * UCX's copy rate for Intel CPUs (5,800 MiB/s), 16,873 with AMD's (5,008);
 * four processes per node: 83,676 (AMD) - what `ucx_info -e -u t -P inter`
 * prints for the simulated device.
 */
uint64_t mpi_ucx_rndv_thresh(double link_Bps, bool roce, uint32_t ppn, uint32_t eps,
			     double bcopy_Bps, uint32_t seg_bytes)
{
	const double mtu = 4096, d = 0.99, o = 75e-9, reg = 180e-9;
	/* BTH, RETH, ICRC, VCRC, delimiter; LRH on IB, GRH and Ethernet on RoCE */
	const double hdr = 12 + 16 + 4 + 2 + 2 + (roce ? 40 + 14 : 8);
	const double bw = link_Bps * mtu / (mtu + hdr) / (ppn ? ppn : 1);
	const double lat = (roce ? 800e-9 : 600e-9) + 1e-9 * eps;
	const double max_bcopy = seg_bytes > 1 ? seg_bytes - 1 : 1;	/* less the AM header */
	const double ebw = 1 / (1 / bw + o / max_bcopy);
	const double den = 1 / (ebw < bcopy_Bps ? ebw : bcopy_Bps) - d / bw;
	double best = -1;

	for (int rma = 0; rma <= 1; rma++) {
		double num = d * (reg * (1 + rma) + 4 * lat + 3 * o) - reg - o;

		if (num <= 0 || den <= 0)
			continue;	/* UCX: RNDV_THRESH_FALLBACK, never */
		if (best < 0 || num / den < best)
			best = num / den;
	}
	if (best < 0)
		return UINT64_MAX;
	return best < max_bcopy ? (uint64_t)max_bcopy : (uint64_t)best;
}
