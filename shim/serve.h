/* SPDX-License-Identifier: MIT */
/*
 * serve.h - the fabric daemon behind the verbs shim (`ibfab serve`): owns
 * one simulated fabric and its clock, and serves the processes that attach
 * over a Unix socket (protocol: shim_proto.h; design: docs/shim.md).
 */
#ifndef IBFAB_SERVE_H
#define IBFAB_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/sim_diag.h"

struct net;
struct fab_fault;
/* One --fault SPEC against the topology into x[0..max): how many faults it
 * makes, or -1 with d filled (tools/cli_fault.c's cli_fault_parse). */
typedef int (*serve_fault_parse_fn)(const char *spec, const struct net *net,
				    struct fab_fault *x, int max, struct sim_diag *d);

struct serve_opts {
	const char *topo;		/* topology file (required) */
	const char *preset;		/* fabric preset, NULL = default */
	const char *const *sets;	/* "key=value" parameter overrides */
	int nsets;
	const char *routing;		/* routing engine, NULL = minhop */
	const char *const *traffic;	/* background traffic specs (traces/trace_spec.h) */
	int ntraffic;
	const char *const *faults;	/* --fault specs, parsed by fault_parse */
	int nfaults;
	serve_fault_parse_fn fault_parse;
	const char *socket;		/* NULL = serve_default_socket() */
	double idle_exit_s;		/* exit after this long without clients (0 = never) */
	double hold_limit_s;		/* detach a client the clock waited for this long in
					 * silence while others waited (0 = never) */
	bool quiet;
};

#define SERVE_HOLD_LIMIT_S 30.0	/* `ibfab serve --hold-limit` default */

/* The socket path the shim and the daemon agree on: $IBFAB_SOCKET, else
 * $XDG_RUNTIME_DIR/ibfab/sock, else /tmp/ibfab-$UID/sock. */
int serve_default_socket(char *buf, size_t len);

/* Build the fabric and serve until SIGINT/SIGTERM or the idle timeout.
 * Returns 0, or -1 with d filled (bad topology, socket in use ...). If
 * ready_fd >= 0, one byte is written to it once the socket listens; it is
 * closed in every case, so a parent waiting for the byte never hangs. */
int serve_run(const struct serve_opts *o, int ready_fd, struct sim_diag *d);

/*
 * The same daemon in process, without a socket or signals (the fuzz
 * harness of its request handler, tests/fuzz/fuzz_serve.c): serve_open
 * builds it (NULL with d filled); serve_attach_fd makes a connected
 * SOCK_SEQPACKET end a client, as accept() would (0, or -1 with fd
 * closed); serve_turn runs one non-blocking turn of its loop.
 */
struct srv;
struct srv *serve_open(const struct serve_opts *o, struct sim_diag *d);
int serve_attach_fd(struct srv *s, int fd);
void serve_turn(struct srv *s);
void serve_close(struct srv *s);

#endif
