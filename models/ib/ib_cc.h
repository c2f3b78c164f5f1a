/* SPDX-License-Identifier: MIT */
/*
 * ib_cc.h - InfiniBand congestion control (IBA vol. 1 Annex A10):
 * parameters of the switch's FECN marking and of the CA's congestion
 * control table. The model is in ib_cc.c.
 */
#ifndef IBFAB_IB_CC_H
#define IBFAB_IB_CC_H

#include <stdbool.h>
#include <stdint.h>

struct ibcc_params {
	bool on;		/* ib.cc */
};

#endif
