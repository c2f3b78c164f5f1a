/* SPDX-License-Identifier: MIT */
/*
 * cli_json.h - a small streaming JSON writer for the command-line tools.
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
 * than CLI_JSON_MAX_DEPTH) is not fatal: it sets `err`, writes nothing more,
 * and cli_json_finish() reports it, so a bug shows up as a failed write
 * rather than as malformed output.
 */
#ifndef IBFAB_CLI_JSON_H
#define IBFAB_CLI_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define CLI_JSON_MAX_DEPTH 32

struct cli_json {
	FILE *out;
	int indent;		/* spaces per level; 0 = one line */
	int depth;
	bool err;
	bool want_value;	/* a key was written, its value comes next */
	bool is_obj[CLI_JSON_MAX_DEPTH];
	bool nonempty[CLI_JSON_MAX_DEPTH];
	bool done;		/* a complete top-level value was written */
};

void cli_json_init(struct cli_json *j, FILE *out, int indent);

void cli_json_obj_begin(struct cli_json *j);
void cli_json_obj_end(struct cli_json *j);
void cli_json_arr_begin(struct cli_json *j);
void cli_json_arr_end(struct cli_json *j);
/* Inside an object: the key of the next value. */
void cli_json_key(struct cli_json *j, const char *key);

void cli_json_str(struct cli_json *j, const char *s);	/* NULL -> null */
void cli_json_u64(struct cli_json *j, uint64_t v);
void cli_json_i64(struct cli_json *j, int64_t v);
void cli_json_double(struct cli_json *j, double v);
void cli_json_bool(struct cli_json *j, bool v);
void cli_json_null(struct cli_json *j);

/* key + value in one call. */
void cli_json_kstr(struct cli_json *j, const char *key, const char *s);
void cli_json_ku64(struct cli_json *j, const char *key, uint64_t v);
void cli_json_ki64(struct cli_json *j, const char *key, int64_t v);
void cli_json_kdouble(struct cli_json *j, const char *key, double v);
void cli_json_kbool(struct cli_json *j, const char *key, bool v);

/*
 * End of document: writes the final newline. Returns 0 when one complete,
 * balanced value was written without misuse and the stream has no error.
 */
int cli_json_finish(struct cli_json *j);

/* Write `s` as a JSON string literal (quotes included) to `out`. */
void cli_json_write_string(FILE *out, const char *s);

#endif
