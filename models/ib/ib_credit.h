/* SPDX-License-Identifier: MIT */
/*
 * ib_credit.h - link-level credit arithmetic (IBA 7.9.4, flow control).
 *
 * Per data VL the sender keeps FCTBS, the total blocks sent since link
 * initialisation, and the receiver keeps ABR, the adjusted blocks received;
 * both are 12-bit counters (modulo 4096). The receiver advertises
 * FCCL = (ABR + free blocks) mod 4096, with the free space it reports capped
 * at 2048 blocks so the 12-bit window never aliases. The sender may start a
 * packet of n blocks only if (FCCL - (FCTBS + n)) mod 4096 <= 2048
 * (IBA 7.9.4.3, C7-74): the whole packet must fit, so a lossless link never
 * drops for lack of buffer. VL15 is not flow controlled.
 */
#ifndef IBFAB_IB_CREDIT_H
#define IBFAB_IB_CREDIT_H

#include <stdbool.h>
#include <stdint.h>

#define IB_CREDIT_MOD	4096u
#define IB_CREDIT_MASK	(IB_CREDIT_MOD - 1)
#define IB_CREDIT_WINDOW 2048u

static inline bool ib_credit_fits(uint16_t fccl, uint16_t fctbs, uint32_t n)
{
	return ((uint32_t)fccl - ((uint32_t)fctbs + n)) % IB_CREDIT_MOD <= IB_CREDIT_WINDOW;
}

/* Blocks the sender may still send: (FCCL - FCTBS) mod 4096, 0 if "negative". */
static inline uint32_t ib_credit_avail(uint16_t fccl, uint16_t fctbs)
{
	uint32_t d = ((uint32_t)fccl - fctbs) & IB_CREDIT_MASK;

	return d <= IB_CREDIT_WINDOW ? d : 0;
}

/* The limit a receiver advertises. */
static inline uint16_t ib_credit_fccl(uint16_t abr, uint32_t free_blocks)
{
	if (free_blocks > IB_CREDIT_WINDOW)
		free_blocks = IB_CREDIT_WINDOW;
	return (uint16_t)((abr + free_blocks) & IB_CREDIT_MASK);
}

#endif
