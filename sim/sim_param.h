/* SPDX-License-Identifier: MIT */
/*
 * sim_param.h - the parameter schema: the keys a user sets with
 * `--set key=value`, as rows of tables that the modules owning them
 * define, found, set, suggested and printed by this one mechanism.
 *
 * A key is generic (an unsigned integer, a time, a size, a switch, a real
 * number: parsed, checked against its range and stored in its field) or
 * special (the module's own set and print functions, for tables and
 * names). A table says where its module's struct sits in the object the
 * keys set (`base`: models/fabric's struct fab_params holds the host's,
 * DCQCN's and IB CC's), so that one call sets any key.
 *
 * Left out: keys that depend on each other are checked by their modules
 * after all are set (fab_params_check), not here.
 */
#ifndef IBFAB_SIM_PARAM_H
#define IBFAB_SIM_PARAM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/sim_diag.h"

enum sim_param_kind {
	SIM_PARAM_UINT,		/* an integer, in a field of `size` bytes (1, 2, 4, 8) */
	SIM_PARAM_NS,		/* nanoseconds: a bare number, or a time with a unit */
	SIM_PARAM_SIZE,		/* bytes, with size units (KiB, MB...) */
	SIM_PARAM_BOOL,		/* on/off (a bool field) */
	SIM_PARAM_SPECIAL,	/* the row's own set and print */
};

struct sim_param;
/* Set the key from v on obj (the module's struct); 0, or -1 with err. */
typedef int (*sim_param_set_fn)(void *obj, const struct sim_param *k, const char *v,
				char *err, size_t errlen);
/* The value of the key on obj, as set would read it back. */
typedef void (*sim_param_print_fn)(const void *obj, const struct sim_param *k, char *buf,
				   size_t len);
/* A generic key's extra rule on a parsed value x (v as typed); 0, or -1 with err. */
typedef int (*sim_param_check_fn)(const struct sim_param *k, uint64_t x, const char *v,
				  char *err, size_t errlen);

struct sim_param {
	const char *name;		/* the whole key, "ib.mtu", "host.pcie_gen" */
	enum sim_param_kind kind;
	size_t off, size;		/* generic: the field in the module's struct */
	uint64_t min, max;		/* integer kinds: the range */
	sim_param_set_fn set;		/* special */
	sim_param_print_fn print;	/* special; a generic key's own print (NULL: the kind's) */
	sim_param_check_fn check;	/* generic, optional: before the range */
	const char *meaning;		/* one line for --help-params */
};

/* The field of a generic key: SIM_PARAM_FIELD(struct host_params, pcie_gen). */
#define SIM_PARAM_FIELD(type, f) offsetof(type, f), sizeof(((type *)0)->f)

/* A module's keys (in print order; a row with a NULL name ends them), and
 * where its struct sits in the object every table of one set applies to. */
struct sim_param_table {
	const struct sim_param *keys;
	size_t base;
	int name_w, value_w;	/* sim_param_print's columns */
};

/* The key called name (the first len bytes, case-insensitive), or NULL;
 * *in its table when found. */
const struct sim_param *sim_param_find(const struct sim_param_table *const *tables,
				       const char *name, size_t len,
				       const struct sim_param_table **in);
/* The key the user likely meant: edit distance at most 2, else the one
 * whose name after the dot is what was typed ("mtu": ib.mtu), else the
 * first that contains what follows the typed dot (3 letters or more), a
 * key with the same prefix first; NULL when none is close. */
const char *sim_param_suggest(const struct sim_param_table *const *tables, const char *name);
/* "key=value" onto whole: 0, or -1 with d naming the key and what was
 * expected (an unknown key names the closest, and where to look: help). */
int sim_param_set(const struct sim_param_table *const *tables, void *whole, const char *kv,
		  const char *help, struct sim_diag *d);
/* A print for a size key shown as a plain number of bytes ("4096"). */
void sim_param_print_number(const void *obj, const struct sim_param *k, char *buf, size_t len);
/* One key's value, as set reads it. */
void sim_param_value(const struct sim_param_table *t, const struct sim_param *k,
		     const void *whole, char *buf, size_t len);
/* Every key: "key = value  # meaning", one line each, in table order. */
void sim_param_print(const struct sim_param_table *const *tables, const void *whole, FILE *out);

#endif
