/* SPDX-License-Identifier: MIT */
/*
 * lft.h - linear forwarding tables in the files real fabrics produce, so a
 * user can simulate the exact routes their subnet manager programmed:
 *
 *   OpenSM's dump (opensm-lfts.dump, written with -D 0x43 or by
 *   `dump_file` in the console; `opensm -R file -U FILE` loads it back):
 *     Unicast lids [0-22] of switch Lid 3 guid 0x0000000000200002 ('leaf0'):
 *     0x0007 001 # Channel Adapter portguid 0x0000000000100001: 'h0'
 *     22 lids dumped
 *
 *   `ibroute <switch>` output (infiniband-diags), several concatenated:
 *     Unicast lids [0x0-0x16] of switch Lid 3 guid 0x0000000000200002 (leaf0):
 *       Lid  Out   Destination
 *            Port     Info
 *     0x0007 001 : (Channel Adapter portguid 0x0000000000100001: 'h0')
 *     0x0008 002 : (path #2 out of 2: portguid 0x0000000000100001)
 *     22 valid lids dumped
 *
 * The formats: OpenSM's opensm-lfts.dump (opensm(8), the "lfts" dump of
 * osm_ucast_mgr.c) and ibroute(8) (infiniband-diags); docs/routing.md.
 */
#ifndef IBFAB_LFT_H
#define IBFAB_LFT_H

#include <stddef.h>
#include <stdio.h>

#include "models/net/net.h"
#include "sim/sim_diag.h"

/*
 * Write every switch's LFT (LIDs assigned, tables filled) in OpenSM's dump
 * format, switches in file order, LIDs ascending, entries with no route
 * left out as OpenSM does. Returns 0 or -1 (write error).
 */
int lft_write_dump(const struct net *n, FILE *out);

/*
 * Read LFTs (OpenSM dump or ibroute output, even mixed) for the topology
 * `n` and install them with the LIDs they imply: afterwards n has LIDs
 * (net_install_lids) and every switch its table, as if routed.
 *
 * Switches and destination ports are matched by GUID when every switch of
 * the topology has one (ibnetdiscover output does); else by LID when the
 * topology file gave every LID; else by node description. The LIDs are the
 * dump's (an SM may have reassigned them since the topology was taken),
 * except when matching by LID. Refused, with "file:line:col: message": a
 * line that is none of the forms above, a LID or port that does not parse or
 * is out of range, a LID twice in one table, an entry before any header, a
 * switch or port GUID not in the topology (or LIDs and descriptions that
 * disagree with it when matching by LID), one LID claimed by two ports, a
 * port whose LIDs are not an aligned power-of-two block (IBA 7.11.1), a
 * route out of an uncabled port, a switch without a table, and a connected
 * CA port that gets no LID. On error n is left as it was.
 */
int lft_load(struct net *n, const char *path, struct sim_diag *d);
/* The same from memory; `name` is used in messages. */
int lft_load_buffer(struct net *n, const char *buf, size_t len,
		    const char *name, struct sim_diag *d);

#endif
