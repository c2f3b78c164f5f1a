/* SPDX-License-Identifier: MIT */
/*
 * cli_help.h - help text whose lists come from the tables that own them.
 * A command's help is one text with @NAME@ marks where a list goes, so
 * that a fabric kind, a routing engine or a trace format added to its
 * table appears in every help that names them:
 *
 *   @fabrics|@         ib|roce|roce-lossy|tcp        (fab_fabric_names)
 *   @fabrics,@         ib,roce,roce-lossy,tcp
 *   @fabrics-and@      ib, roce, roce-lossy and tcp
 *   @fabric-lines@     one line per fabric, "  NAME  what" (fab_kinds)
 *   @engines@          minhop (default), updn, ftree or dor  (sm_engines)
 *   @engine-lines@     one line per engine, its name and help, indented
 *                      to the option column
 *   @trace-formats@    ibfab, nccl-log, ... or hpcc  (import_formats)
 */
#ifndef IBFAB_CLI_HELP_H
#define IBFAB_CLI_HELP_H

#include <stdio.h>

/* Write text to out with its @NAME@ marks replaced. */
void cli_help_put(const char *text, FILE *out);

#endif
