/* SPDX-License-Identifier: MIT */
/*
 * cli_serve.c - `ibfab serve` (the fabric daemon behind the verbs shim) and
 * `ibfab exec` (run an unmodified verbs program on a simulated host,
 * starting a daemon first if none answers). The daemon is shim/serve.c;
 * docs/shim.md describes the design. Exit codes: 0 done, 1 an input or run
 * error (one line on stderr), 2 a usage error; exec exits with the
 * program's status (it replaces itself with the program).
 */
#define _GNU_SOURCE
#include "tools/cli_serve.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shim/serve.h"
#include "tools/cli_fault.h"

#define MAX_SETS 64

struct serve_args {
	struct serve_opts o;
	const char *sets[MAX_SETS];
	const char *traffic[MAX_SETS];
	const char *faults[MAX_SETS];
	const char *host;
	char **cmd;
};

void cli_serve_usage(FILE *out)
{
	fputs("usage: ibfab serve [--topo FILE] [--preset P] [--set key=value]... [--routing R]\n"
	      "                   [--traffic SPEC]... [--fault SPEC]... [--socket PATH]\n"
	      "                   [--idle-exit SECONDS] [--hold-limit SECONDS] [--quiet]\n"
	      "\n"
	      "Run the fabric daemon: unmodified verbs programs started with the shim\n"
	      "libibverbs.so.1 (LD_LIBRARY_PATH, or 'ibfab exec') attach to it and run on\n"
	      "the simulated fabric, in simulated time. The socket is $IBFAB_SOCKET, else\n"
	      "$XDG_RUNTIME_DIR/ibfab/sock, else /tmp/ibfab-$UID/sock (mode 0600). A\n"
	      "program names its host with $IBFAB_HOST; without it, hosts are handed out\n"
	      "in order. Without --topo the fabric is the built-in 16-host fat tree of\n"
	      "'ibfab run'. Parameters: 'ibfab run --help-params'. --traffic SPEC (as in\n"
	      "'ibfab run') adds background load in the same simulation. --fault SPEC\n"
	      "(as in 'ibfab run': 'link h2/1 down at 5ms', 'node spine0 down at 1ms',\n"
	      "... up at ...) changes the fabric at a simulated time: the programs on\n"
	      "the hosts at a cable's ends get IBV_EVENT_PORT_ERR and, when it is back,\n"
	      "IBV_EVENT_PORT_ACTIVE (ibv_query_port says DOWN between), and their\n"
	      "traffic meets the losses and the subnet manager's reroute. Stops on\n"
	      "SIGINT, SIGTERM, SIGHUP or SIGQUIT, removing its socket.\n"
	      "\n"
	      "  --socket PATH        where to listen (at most 107 bytes). Missing\n"
	      "                       directories are made, mode 0700; an existing one\n"
	      "                       must be ours or root's and not writable by others\n"
	      "                       unless sticky. Anything at PATH but a dead socket\n"
	      "                       of ours is refused, never removed.\n"
	      "  --idle-exit S        exit S seconds after the last program detached\n"
	      "  --hold-limit S       detach a program the clock has waited for S\n"
	      "                       seconds (real or CPU time) without a word from it,\n"
	      "                       while another program waits on the clock (default\n"
	      "                       30; 0 never). A program must say HELLO within 5 s\n"
	      "                       of connecting.\n"
	      "\n"
	      "Only processes of the daemon's own user (or root) are served; what one\n"
	      "program can and cannot do to the others: docs/shim.md, \"Trust\".\n", out);
}

void cli_exec_usage(FILE *out)
{
	fputs("usage: ibfab exec [--host H] [--socket PATH] [--topo FILE [--preset P]\n"
	      "                  [--set key=value]... [--fault SPEC]...] -- COMMAND [ARG]...\n"
	      "\n"
	      "Run COMMAND under the verbs shim as simulated host H. If no daemon answers\n"
	      "on the socket, one is started with --topo (or $IBFAB_TOPO, or the\n"
	      "built-in 16-host fat tree); it exits 5 s after its last program.\n"
	      "COMMAND runs at nice 10 ($IBFAB_NICE; 0 for none), so that programs that\n"
	      "spin do not starve the daemon on a machine with few cores.\n"
	      "  e.g. ibfab exec --host h0 -- ibv_rc_pingpong &\n"
	      "       ibfab exec --host h1 -- ibv_rc_pingpong localhost\n", out);
}

static int usage_err(const char *cmd, const char *msg, const char *arg)
{
	fprintf(stderr, "ibfab %s: %s%s%s (see 'ibfab %s --help')\n", cmd, msg,
		arg ? " " : "", arg ? arg : "", cmd);
	return 2;
}

static int parse(const char *cmd, int argc, char **argv, struct serve_args *a, bool exec)
{
	for (int i = 1; i < argc; i++) {
		const char *x = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(x, "--help") || !strcmp(x, "-h"))
			return -1;
		if (exec && !strcmp(x, "--")) {
			if (i + 1 >= argc)
				return usage_err(cmd, "no command after", "--");
			a->cmd = argv + i + 1;
			return 0;
		}
		if (!strcmp(x, "--quiet") && !exec) {
			a->o.quiet = true;
			continue;
		}
		if (!v)
			return usage_err(cmd, "missing value or unknown option", x);
		if (!strcmp(x, "--topo"))
			a->o.topo = v;
		else if (!strcmp(x, "--preset"))
			a->o.preset = v;
		else if (!strcmp(x, "--routing"))
			a->o.routing = v;
		else if (!strcmp(x, "--socket"))
			a->o.socket = v;
		else if (!strcmp(x, "--set")) {
			if (a->o.nsets >= MAX_SETS)
				return usage_err(cmd, "too many", "--set");
			a->sets[a->o.nsets++] = v;
		} else if (!strcmp(x, "--traffic")) {
			if (a->o.ntraffic >= MAX_SETS)
				return usage_err(cmd, "too many", "--traffic");
			a->traffic[a->o.ntraffic++] = v;
		} else if (!strcmp(x, "--fault")) {
			if (a->o.nfaults >= MAX_SETS)
				return usage_err(cmd, "too many", "--fault");
			a->faults[a->o.nfaults++] = v;
		} else if (exec && !strcmp(x, "--host"))
			a->host = v;
		else if (!exec && !strcmp(x, "--idle-exit")) {
			char *end;

			a->o.idle_exit_s = strtod(v, &end);
			if (end == v || *end || !(a->o.idle_exit_s >= 0) || a->o.idle_exit_s > 1e9)
				return usage_err(cmd, "--idle-exit wants seconds, not", v);
		} else if (!exec && !strcmp(x, "--hold-limit")) {
			char *end;

			a->o.hold_limit_s = strtod(v, &end);
			if (end == v || *end || !(a->o.hold_limit_s >= 0) || a->o.hold_limit_s > 1e9)
				return usage_err(cmd, "--hold-limit wants seconds, not", v);
		} else
			return usage_err(cmd, "unknown option", x);
		i++;
	}
	if (exec)
		return usage_err(cmd, "no command: ibfab exec [options] -- COMMAND", NULL);
	return 0;
}

int cli_serve_main(int argc, char **argv)
{
	struct serve_args a;
	struct sim_diag d = { 0 };
	int rc;

	memset(&a, 0, sizeof(a));
	a.o.sets = a.sets;
	a.o.hold_limit_s = SERVE_HOLD_LIMIT_S;
	a.o.traffic = a.traffic;
	a.o.faults = a.faults;
	a.o.fault_parse = cli_fault_parse;
	rc = parse("serve", argc, argv, &a, false);
	if (rc < 0) {
		cli_serve_usage(stdout);
		return 0;
	}
	if (rc)
		return rc;
	if (serve_run(&a.o, -1, &d)) {
		char msg[1024];

		sim_diag_format(&d, msg, sizeof(msg));
		fprintf(stderr, "ibfab serve: %s\n", msg);
		return 1;
	}
	return 0;
}

static bool daemon_answers(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	bool ok;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ok = fd >= 0 && !connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	if (fd >= 0)
		close(fd);
	return ok;
}

/* A daemon in the background: forked twice so it is nobody's child, and
 * started only once its socket listens (a byte on a pipe says so). */
static int start_daemon(struct serve_args *a)
{
	int p[2];
	pid_t pid;
	char b;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		struct sim_diag d = { 0 };
		int null = open("/dev/null", O_RDWR);

		close(p[0]);
		setsid();
		if (fork())
			_exit(0);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
		}
		a->o.quiet = true;
		if (!a->o.idle_exit_s)
			a->o.idle_exit_s = 5;
		if (serve_run(&a->o, p[1], &d)) {
			char msg[1024];

			sim_diag_format(&d, msg, sizeof(msg));
			fprintf(stderr, "ibfab exec: cannot start a daemon: %s\n", msg);
			_exit(1);
		}
		_exit(0);
	}
	close(p[1]);
	waitpid(pid, NULL, 0);
	if (read(p[0], &b, 1) != 1) {
		close(p[0]);
		return -1;
	}
	close(p[0]);
	return 0;
}

/* Where the shim library is: $IBFAB_SHIM_DIR, else next to this program
 * in the build tree (build/tools/ibfab -> build/shim/lib). */
static int shim_dir(char *buf, size_t len)
{
	const char *e = getenv("IBFAB_SHIM_DIR");
	char exe[PATH_MAX];
	ssize_t n;
	char *slash;

	if (e && *e)
		return snprintf(buf, len, "%s", e) >= (int)len ? -1 : 0;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -1;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = 0;
	if (snprintf(buf, len, "%s/../shim/lib", exe) >= (int)len)
		return -1;
	return access(buf, F_OK) ? -1 : 0;
}

int cli_exec_main(int argc, char **argv)
{
	struct serve_args a;
	char path[108], dir[PATH_MAX], env[PATH_MAX + 64];
	const char *old;
	int rc;

	memset(&a, 0, sizeof(a));
	a.o.sets = a.sets;
	a.o.hold_limit_s = SERVE_HOLD_LIMIT_S;
	a.o.traffic = a.traffic;
	a.o.faults = a.faults;
	a.o.fault_parse = cli_fault_parse;
	rc = parse("exec", argc, argv, &a, true);
	if (rc < 0) {
		cli_exec_usage(stdout);
		return 0;
	}
	if (rc)
		return rc;
	if (a.o.socket)
		setenv("IBFAB_SOCKET", a.o.socket, 1);
	if (serve_default_socket(path, sizeof(path))) {
		fprintf(stderr, "ibfab exec: socket path too long\n");
		return 1;
	}
	if (shim_dir(dir, sizeof(dir))) {
		fprintf(stderr, "ibfab exec: cannot find the shim libibverbs.so.1 "
			"(set IBFAB_SHIM_DIR)\n");
		return 1;
	}
	if (!daemon_answers(path)) {
		/* no --topo and no $IBFAB_TOPO: the built-in 16-host fat tree */
		if (!a.o.topo)
			a.o.topo = getenv("IBFAB_TOPO");
		if (start_daemon(&a)) {
			fprintf(stderr, "ibfab exec: the fabric daemon did not start\n");
			return 1;
		}
	}
	setenv("IBFAB_SOCKET", path, 1);
	if (a.host)
		setenv("IBFAB_HOST", a.host, 1);
	old = getenv("LD_LIBRARY_PATH");
	snprintf(env, sizeof(env), "%s%s%s", dir, old && *old ? ":" : "", old ? old : "");
	setenv("LD_LIBRARY_PATH", env, 1);
	/*
	 * Preloaded as well: the shim's clock, sleeps and watched reads take
	 * effect only where it comes before libc in the lookup order, and a
	 * program that reaches libibverbs through another library (fi_pingpong
	 * through libfabric, ucx_perftest through a UCX module it dlopens,
	 * every Open MPI rank) would otherwise find libc's first.
	 */
	old = getenv("LD_PRELOAD");
	snprintf(env, sizeof(env), "%s/libibverbs.so.1%s%s", dir, old && *old ? ":" : "",
		 old ? old : "");
	setenv("LD_PRELOAD", env, 1);
	/*
	 * The daemon is every program's critical path, and a program spinning
	 * on its memory (ib_write_lat) keeps a core busy while it waits for it:
	 * with more spinners than free cores the daemon would wait for the
	 * scheduler's turn at each exchange. So the programs run at a lower
	 * priority ($IBFAB_NICE, default 10; 0 keeps it). What they print does
	 * not depend on it, only how soon.
	 */
	const char *nv = getenv("IBFAB_NICE");
	int inc = nv && *nv ? atoi(nv) : 10;

	if (inc > 0) {
		errno = 0;
		if (nice(inc) == -1 && errno)
			fprintf(stderr, "ibfab exec: nice: %s (the program runs at its priority)\n",
				strerror(errno));
	}
	execvp(a.cmd[0], a.cmd);
	fprintf(stderr, "ibfab exec: %s: %s\n", a.cmd[0], strerror(errno));
	return 127;
}
