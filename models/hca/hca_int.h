/* SPDX-License-Identifier: MIT */
/*
 * hca_int.h - what only the HCA's own files share: hca.c (objects, port
 * scheduling, timers), qp_req.c (requester and completer) and qp_resp.c
 * (responder). The state they share with the modules plugged into the
 * HCA is hca_plug.h's.
 *
 * The split mirrors rxe's: the requester turns send work requests into
 * packets, the responder executes incoming requests and answers them, the
 * completer consumes acknowledgements and retires work requests.
 */
#ifndef IBFAB_HCA_INT_H
#define IBFAB_HCA_INT_H

#include "models/hca/hca_plug.h"

/* qp_req.c: requester and completer */
bool qp_req_has_packet(struct hca_qp *qp);
uint32_t qp_req_next_size(struct hca_qp *qp);
void qp_req_build(struct hca_qp *qp, struct pkt *p);
void qp_comp_receive(struct hca_qp *qp, struct pkt *p);
void qp_req_timer(struct hca_qp *qp);

/* qp_resp.c: responder */
/* f: the receiving port's fabric (pt->fab), so that a packet received
 * reads no line of struct hca but the QP lookup's */
void qp_resp_receive(struct fab *f, struct hca_qp *qp, struct pkt *p);
/* A packet reached the connected QP in RTR: its Communication Established
 * event (IBA 11.6.3.1), the first time. */
void hca_qp_comm_est(struct hca_qp *qp);
/* An RC responder's class C error: to Error, and its event (access: a
 * remote access NAK, else an invalid request NAK). */
void hca_qp_resp_fatal(struct hca_qp *qp, bool access);
bool qp_resp_has_packet(struct hca_qp *qp);
uint32_t qp_resp_next_size(const struct hca_qp *qp);
void qp_resp_build(struct hca_qp *qp, struct pkt *p);

/* qp_ooo.c: RC packets held ahead of a gap. hold: p is `ahead` PSNs
 * past the expected one; false when beyond hca.ooo_window (or out of
 * memory): the caller then treats it as a sequence error. take: the held
 * packet with that PSN, if any. flush: forget them all (the requester
 * goes back and sends them again). */
struct hca_ooo;
/* Hold p, `ahead` PSNs past the expected one (false: beyond the window,
 * or out of memory); its payload goes to memory `mem` as it lands, and
 * qp_ooo_take's copy says when it is there in t_tail (0: no payload, or
 * no host model). */
bool qp_ooo_hold(struct hca_qp *qp, struct hca_ooo **o, const struct pkt *p, uint32_t ahead,
		 enum hca_mem mem);
bool qp_ooo_take(struct hca_ooo *o, uint32_t psn, struct pkt *out);
void qp_ooo_flush(struct hca_ooo *o);
uint32_t qp_ooo_count(const struct hca_ooo *o);
void qp_ooo_free(struct hca_ooo *o);

/* hca.c: the HCA as a node kind (its rows of hca_node_ops) */
uint16_t hca_candidates(struct port *pt, uint32_t blocks[PORT_NVL], uint16_t *has_data);
/* Build the next packet on VL vl (the one hca_candidates sized). */
uint32_t hca_take(struct port *pt, uint8_t vl, uint32_t blocks);
void hca_sent(struct port *pt);
/* The tail of a packet reached this HCA. */
void hca_receive(struct port *pt, uint32_t pkt);

#endif
