/* SPDX-License-Identifier: MIT */
/*
 * sim_param.c - the parameter schema (sim_param.h): finding, setting,
 * suggesting and printing the keys of the tables modules register.
 */
#include "sim/sim_param.h"

#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "sim/sim_parse.h"

const struct sim_param *sim_param_find(const struct sim_param_table *const *tables,
				       const char *name, size_t len,
				       const struct sim_param_table **in)
{
	for (; *tables; tables++)
		for (size_t i = 0; (*tables)->keys[i].name; i++) {
			const struct sim_param *k = &(*tables)->keys[i];

			if (strlen(k->name) == len && !strncasecmp(k->name, name, len)) {
				if (in)
					*in = *tables;
				return k;
			}
		}
	return NULL;
}

/* Case-insensitive substring test (strcasestr() is a GNU extension). */
static bool contains_ci(const char *hay, const char *needle)
{
	size_t n = strlen(needle);

	for (; *hay; hay++)
		if (!strncasecmp(hay, needle, n))
			return true;
	return false;
}

const char *sim_param_suggest(const struct sim_param_table *const *tables, const char *name)
{
	const char *best = NULL, *tail = strrchr(name, '.');
	unsigned bd = 3;

	tail = tail ? tail + 1 : name;
	for (const struct sim_param_table *const *t = tables; *t; t++)
		for (size_t i = 0; (*t)->keys[i].name; i++) {
			const char *kn = (*t)->keys[i].name, *dot = strrchr(kn, '.');
			unsigned e = sim_edit_distance(name, kn);

			if (dot && !strcasecmp(dot + 1, name) && e > 1)
				e = 1;	/* "mtu" -> "ib.mtu" */
			if (e < bd) {
				bd = e;
				best = kn;
			}
		}
	if (best || strlen(tail) < 3)
		return best;
	/* "host.lanes" -> host.pcie_lanes, "dma_read" -> host.dma_read_ns: a
	 * key of the same module first ("dcqcn.timer" -> dcqcn.timer_us) */
	size_t pre = (size_t)(tail - name);

	for (int pass = pre ? 0 : 1; pass < 2; pass++)
		for (const struct sim_param_table *const *t = tables; *t; t++)
			for (size_t i = 0; (*t)->keys[i].name; i++) {
				const char *kn = (*t)->keys[i].name;

				if ((pass || !strncasecmp(kn, name, pre)) && contains_ci(kn, tail))
					return kn;
			}
	return NULL;
}

static uint64_t get_uint(const void *f, size_t size)
{
	switch (size) {
	case 1: return *(const uint8_t *)f;
	case 2: return *(const uint16_t *)f;
	case 4: return *(const uint32_t *)f;
	default: return *(const uint64_t *)f;
	}
}

static void put_uint(void *f, size_t size, uint64_t v)
{
	switch (size) {
	case 1: *(uint8_t *)f = (uint8_t)v; break;
	case 2: *(uint16_t *)f = (uint16_t)v; break;
	case 4: *(uint32_t *)f = (uint32_t)v; break;
	default: *(uint64_t *)f = v; break;
	}
}

static int set_generic(void *obj, const struct sim_param *k, const char *v, char *err,
		       size_t errlen)
{
	char *f = (char *)obj + k->off;
	char a[32], b[32];
	uint64_t x;
	int rc;

	switch (k->kind) {
	case SIM_PARAM_BOOL:
		return sim_parse_bool(v, (bool *)f, err, errlen);
	case SIM_PARAM_UINT:
		rc = sim_parse_u64(v, &x, err, errlen);
		break;
	case SIM_PARAM_NS:
		rc = sim_parse_ns(v, &x, err, errlen);
		break;
	case SIM_PARAM_SIZE:
		rc = sim_parse_size(v, &x, err, errlen);
		break;
	default:
		snprintf(err, errlen, "no way to set it");
		return -1;
	}
	if (rc || (k->check && k->check(k, x, v, err, errlen)))
		return -1;
	if (x < k->min || x > k->max) {
		if (k->kind == SIM_PARAM_SIZE)
			snprintf(err, errlen, "'%s' is out of range (%s..%s)", v,
				 sim_fmt_size(k->min, a, sizeof(a)), sim_fmt_size(k->max, b, sizeof(b)));
		else
			snprintf(err, errlen, "'%s' is out of range (%llu..%llu)", v,
				 (unsigned long long)k->min, (unsigned long long)k->max);
		return -1;
	}
	put_uint(f, k->size, x);
	return 0;
}

int sim_param_set(const struct sim_param_table *const *tables, void *whole, const char *kv,
		  const char *help, struct sim_diag *d)
{
	const char *eq = kv ? strchr(kv, '=') : NULL;
	const struct sim_param_table *t;
	const struct sim_param *k;
	char name[64], err[512];

	if (!kv || !*kv)
		return sim_diag_set(d, NULL, 0, 0, "empty parameter (expected key=value)");
	if (!eq) {
		k = sim_param_find(tables, kv, strlen(kv), NULL);
		if (k)
			return sim_diag_set(d, NULL, 0, 0, "%s: expected %s=VALUE", k->name, k->name);
		return sim_diag_set(d, NULL, 0, 0, "expected key=value, got '%s'", kv);
	}
	k = sim_param_find(tables, kv, (size_t)(eq - kv), &t);
	if (!k) {
		const char *best;

		snprintf(name, sizeof(name), "%.*s", (int)(eq - kv), kv);
		best = sim_param_suggest(tables, name);
		if (best)
			return sim_diag_set(d, NULL, 0, 0,
					    "unknown parameter '%s' (see %s); did you mean '%s'?",
					    name, help, best);
		return sim_diag_set(d, NULL, 0, 0, "unknown parameter '%s' (see %s)", name, help);
	}
	err[0] = 0;
	void *obj = (char *)whole + t->base;

	if ((k->kind == SIM_PARAM_SPECIAL ? k->set : set_generic)(obj, k, eq + 1, err, sizeof(err)))
		return sim_diag_set(d, NULL, 0, 0, "%s: %s", k->name, err);
	return 0;
}

void sim_param_print_number(const void *obj, const struct sim_param *k, char *buf, size_t len)
{
	snprintf(buf, len, "%llu",
		 (unsigned long long)get_uint((const char *)obj + k->off, k->size));
}

void sim_param_value(const struct sim_param_table *t, const struct sim_param *k,
		     const void *whole, char *buf, size_t len)
{
	const char *obj = (const char *)whole + t->base;
	const char *f = obj + k->off;

	if (k->print) {		/* special, or a generic key printed its own way */
		k->print(obj, k, buf, len);
		return;
	}
	switch (k->kind) {
	case SIM_PARAM_BOOL:
		snprintf(buf, len, "%s", *(const bool *)f ? "on" : "off");
		break;
	case SIM_PARAM_SIZE:
		sim_fmt_size(get_uint(f, k->size), buf, len);
		break;
	default:
		snprintf(buf, len, "%llu", (unsigned long long)get_uint(f, k->size));
		break;
	}
}

void sim_param_print(const struct sim_param_table *const *tables, const void *whole, FILE *out)
{
	for (; *tables; tables++)
		for (size_t i = 0; (*tables)->keys[i].name; i++) {
			const struct sim_param *k = &(*tables)->keys[i];
			char val[512];

			sim_param_value(*tables, k, whole, val, sizeof(val));
			fprintf(out, "%-*s = %-*s  # %s\n", (*tables)->name_w, k->name,
				(*tables)->value_w, val, k->meaning);
		}
}
