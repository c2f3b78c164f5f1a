/* SPDX-License-Identifier: MIT */
/*
 * sim_json.h - a small streaming JSON writer: the reports of the command-line
 * tools and the trace timeline write through it.
 *
 * Values are written in the order the caller writes them (so key order is
 * stable and diffable), straight to a FILE, with no tree in memory. Strings
 * are UTF-8 in, pure ASCII out: control characters and every non-ASCII code
 * point are written as \uXXXX escapes (surrogate pairs above U+FFFF) and an
 * invalid UTF-8 byte becomes U+FFFD, so the output is valid JSON whatever
 * bytes a topology file put in a node description. Doubles use one fixed
 * format ("%.9g", C locale) and NaN/Inf become null, which JSON cannot carry.
 *
 * Misuse (a value where a key is expected, unbalanced ends, nesting deeper
 * than SIM_JSON_MAX_DEPTH) is not fatal: it sets `err`, writes nothing more,
 * and sim_json_finish() reports it, so a bug shows up as a failed write
 * rather than as malformed output.
 */
#ifndef IBFAB_SIM_JSON_H
#define IBFAB_SIM_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define SIM_JSON_MAX_DEPTH 32

struct sim_json {
	FILE *out;
	int indent;		/* spaces per level; 0 = one line */
	int depth;
	bool err;
	bool want_value;	/* a key was written, its value comes next */
	bool is_obj[SIM_JSON_MAX_DEPTH];
	bool nonempty[SIM_JSON_MAX_DEPTH];
	bool done;		/* a complete top-level value was written */
};

void sim_json_init(struct sim_json *j, FILE *out, int indent);

void sim_json_obj_begin(struct sim_json *j);
void sim_json_obj_end(struct sim_json *j);
void sim_json_arr_begin(struct sim_json *j);
void sim_json_arr_end(struct sim_json *j);
/* Inside an object: the key of the next value. */
void sim_json_key(struct sim_json *j, const char *key);

void sim_json_str(struct sim_json *j, const char *s);	/* NULL -> null */
void sim_json_u64(struct sim_json *j, uint64_t v);
void sim_json_i64(struct sim_json *j, int64_t v);
void sim_json_double(struct sim_json *j, double v);
void sim_json_bool(struct sim_json *j, bool v);
void sim_json_null(struct sim_json *j);

/* key + value in one call. */
void sim_json_kstr(struct sim_json *j, const char *key, const char *s);
void sim_json_ku64(struct sim_json *j, const char *key, uint64_t v);
void sim_json_ki64(struct sim_json *j, const char *key, int64_t v);
void sim_json_kdouble(struct sim_json *j, const char *key, double v);
void sim_json_kbool(struct sim_json *j, const char *key, bool v);

/*
 * End of document: writes the final newline. Returns 0 when one complete,
 * balanced value was written without misuse and the stream has no error.
 */
int sim_json_finish(struct sim_json *j);

/* Write `s` as a JSON string literal (quotes included) to `out`. */
void sim_json_write_string(FILE *out, const char *s);

#endif
