/* SPDX-License-Identifier: MIT */
/*
 * cli_dot.c - Graphviz helpers shared by `ibfab topo dot` and the HTML
 * report; see cli_dot.h. Graphviz is run as a program (dot(1)), not linked.
 */
#include "tools/cli_dot.h"

#include <errno.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Each cable once: from the end with the smaller (node, port). */
bool cli_dot_cable_end(const struct net *n, int i, int p)
{
	const struct net_port *pp = &n->nodes[i].ports[p];

	return pp->remote_node >= 0 &&
	       (i < pp->remote_node || (i == pp->remote_node && p < pp->remote_port));
}

/* A DOT string literal: quotes and backslashes escaped, bad bytes as '?'. */
void cli_dot_str(FILE *out, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;

	fputc('"', out);
	while (*u) {
		int k = *u < 0x80 ? 1 : (*u & 0xe0) == 0xc0 ? 2 : (*u & 0xf0) == 0xe0 ? 3 :
			(*u & 0xf8) == 0xf0 ? 4 : 0;
		int ok = k > 0;

		for (int i = 1; ok && i < k; i++)
			ok = (u[i] & 0xc0) == 0x80;
		if (!ok || (k == 1 && *u < 0x20)) {
			fputc('?', out);
			u++;
			continue;
		}
		if (*u == '"' || *u == '\\')
			fputc('\\', out);
		fwrite(u, 1, (size_t)k, out);
		u += k;
	}
	fputc('"', out);
}

void cli_dot_node(FILE *out, int i, int type, const char *label, const char *tooltip, bool with_id)
{
	fprintf(out, "\t\tn%d [", i);
	if (with_id)
		fprintf(out, "id=\"n%d\", ", i);
	fputs("label=", out);
	cli_dot_str(out, label);
	fprintf(out, ", shape=%s, tooltip=", type == NET_SWITCH ? "box" :
		type == NET_ROUTER ? "hexagon" : "ellipse");
	cli_dot_str(out, tooltip);
	fprintf(out, "%s];\n", type == NET_SWITCH ? ", fillcolor=\"#eeeeee\"" : "");
}

const struct cli_dot_class cli_dot_scale[CLI_DOT_NSCALE] = {
	{ 0.2, "#4575b4", "0-20%" },
	{ 0.4, "#91bfdb", "20-40%" },
	{ 0.6, "#fee090", "40-60%" },
	{ 0.8, "#fc8d59", "60-80%" },
	{ 2.0, "#d73027", "80-100%" },
};

const char *cli_dot_util_colour(double u)
{
	unsigned k = 0;

	while (k + 1 < CLI_DOT_NSCALE && u >= cli_dot_scale[k].below)
		k++;
	return cli_dot_scale[k].colour;
}

/* Tier of each node: hosts 0, switches by BFS distance from the hosts. */
int *cli_dot_levels(const struct net *n, int *maxlevel)
{
	int *lv = malloc(sizeof(int) * ((size_t)n->nnodes + 1));
	int *q = malloc(sizeof(int) * ((size_t)n->nnodes + 1));
	int head = 0, tail = 0;

	*maxlevel = 0;
	if (!lv || !q) {
		free(lv);
		free(q);
		return NULL;
	}
	for (int i = 0; i < n->nnodes; i++) {
		lv[i] = n->nodes[i].type == NET_SWITCH ? -1 : 0;
		if (lv[i] == 0)
			q[tail++] = i;
	}
	for (;;) {
		while (head < tail) {
			int u = q[head++];

			for (int p = 1; p <= n->nodes[u].nports; p++) {
				int r = n->nodes[u].ports[p].remote_node;

				if (r >= 0 && lv[r] < 0) {
					lv[r] = lv[u] + 1;
					q[tail++] = r;
				}
			}
		}
		/* switches out of the hosts' reach (no host at all, or an island) */
		int s = 0;

		while (s < n->nnodes && lv[s] >= 0)
			s++;
		if (s == n->nnodes)
			break;
		lv[s] = 1;
		q[tail++] = s;
	}
	for (int i = 0; i < n->nnodes; i++)
		if (lv[i] > *maxlevel)
			*maxlevel = lv[i];
	free(q);
	return lv;
}

int cli_dot_svg(const char *dot, size_t len, char **svg, struct sim_diag *d)
{
	FILE *in = tmpfile();
	int pfd[2] = { -1, -1 }, st, e, rc = -1;
	posix_spawn_file_actions_t fa;
	char *buf = NULL, *s;
	size_t n = 0, cap = 0;
	pid_t pid;

	*svg = NULL;
	if (!in || fwrite(dot, 1, len, in) != len || fflush(in) || fseek(in, 0, SEEK_SET)) {
		if (in)
			fclose(in);
		return sim_diag_set(d, NULL, 0, 0, "cannot write the graph for Graphviz to a temporary file: %s",
				    strerror(errno));
	}
	if (pipe(pfd)) {
		fclose(in);
		return sim_diag_set(d, NULL, 0, 0, "pipe: %s", strerror(errno));
	}
	char *args[] = { (char *)"dot", (char *)"-Tsvg", NULL };

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fileno(in), 0);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	posix_spawn_file_actions_addclose(&fa, pfd[0]);
	e = posix_spawnp(&pid, "dot", &fa, NULL, args, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	fclose(in);
	if (e) {
		close(pfd[0]);
		return sim_diag_set(d, NULL, 0, 0, "cannot run Graphviz 'dot' (%s): install graphviz (apt-get install graphviz)",
				    strerror(e));
	}
	for (;;) {	/* dot's whole output: it writes it once laid out */
		ssize_t k;

		if (n + 4096 + 1 > cap) {
			char *nb = realloc(buf, cap = 2 * cap + 8192);

			if (!nb) {
				e = ENOMEM;
				break;
			}
			buf = nb;
		}
		k = read(pfd[0], buf + n, cap - n - 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			e = k < 0 ? errno : 0;
			break;
		}
		n += (size_t)k;
	}
	close(pfd[0]);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			st = -1;
			break;
		}
	if (e)
		sim_diag_set(d, NULL, 0, 0, "reading Graphviz's output: %s", strerror(e));
	else if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
		sim_diag_set(d, NULL, 0, 0, "Graphviz 'dot' is not installed: install graphviz (apt-get install graphviz)");
	else if (!WIFEXITED(st) || WEXITSTATUS(st))
		sim_diag_set(d, NULL, 0, 0, "Graphviz 'dot -Tsvg' failed on the fabric's graph");
	else if (!buf || !(buf[n] = 0, s = strstr(buf, "<svg")))
		sim_diag_set(d, NULL, 0, 0, "Graphviz 'dot -Tsvg' wrote no <svg> element");
	else {
		memmove(buf, s, n + 1 - (size_t)(s - buf));
		*svg = buf;
		buf = NULL;
		rc = 0;
	}
	free(buf);
	return rc;
}
