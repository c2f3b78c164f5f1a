/* SPDX-License-Identifier: MIT */
/*
 * fab_core.c - the services every model reports to (fab_core.h): the
 * run's failure and a dropped packet's count; and the fabric kinds, the
 * rows of properties the models ask (fab.h: struct fab_kind).
 */
#include "models/core/fab_core.h"

#include <stdarg.h>
#include <stdio.h>


const char *const fab_fabric_names[] = {
#define FAB_FABRIC_NAME(id, name, what, ...) name,
	FAB_FABRICS(FAB_FABRIC_NAME)
#undef FAB_FABRIC_NAME
	NULL
};

const struct fab_kind fab_kinds[FAB_NFABRICS] = {
#define FAB_FABRIC_ROW(id, name, what, ...) [FAB_FABRIC_##id] = { what, __VA_ARGS__ },
	FAB_FABRICS(FAB_FABRIC_ROW)
#undef FAB_FABRIC_ROW
};
_Static_assert(SIM_ARRAY_SIZE(fab_fabric_names) == FAB_NFABRICS + 1,
	       "a fabric kind: a name and a row of fab_kinds");

void fab_fail(struct fab *f, const char *fmt, ...)
{
	va_list ap;

	if (f->failed)
		return;
	f->failed = true;
	sim_diag_clear(&f->fail);
	va_start(ap, fmt);
	vsnprintf(f->fail.msg, sizeof(f->fail.msg), fmt, ap);
	va_end(ap);
	sim_halt(&f->eng);
}

void fab_pkt_drop(struct fab *f, uint32_t idx, enum fab_drop why)
{
	struct pkt *p = fab_pkt(f, idx);

	f->tot.drops++;
	if (why == FAB_DROP_VL15)
		f->tot.drops_vl15++;
	else if (why == FAB_DROP_CORRUPT)
		f->tot.drops_corrupt++;
	else if (why == FAB_DROP_CONGESTION)
		f->tot.drops_congestion++;
	else if (why == FAB_DROP_LINK)
		f->tot.drops_link++;
	else
		f->tot.drops_route++;
	/* A reliable connection resends what it loses; a datagram or an
	 * unreliable connection's message is gone with its packet. */
	if (p->qpt != HCA_QPT_RC)
		fab_traffic_lost(f, p->msg);
	sim_pool_put(&f->pkts, idx);
}
