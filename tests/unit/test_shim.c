/* SPDX-License-Identifier: MIT */
/*
 * test_shim.c - the fabric daemon of the verbs shim (shim/serve.c), driven
 * in-process over its socket with hand-made requests: the socket path rule,
 * the wire sizes the shim and the tests rely on, attaching as a named host,
 * the clock rule (a lone waiting program moves the clock: an empty poll by
 * its poll quantum, a sleep by its length), refusal of malformed requests,
 * and the idle exit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "shim/serve.h"
#include "shim/shim_proto.h"
#include "sim/sim.h"
#include "tests/unit/test_main.h"

static void test_wire_sizes(void)
{
	/* tests/shim/garbage.py builds requests by hand with these sizes */
	CU_ASSERT_EQUAL(sizeof(struct shim_req), 96);
	CU_ASSERT_EQUAL(sizeof(struct shim_rep), 648);
	CU_ASSERT(sizeof(struct shim_clock) <= 4096);
}

static void test_socket_path(void)
{
	char buf[108];
	char *old = getenv("IBFAB_SOCKET") ? strdup(getenv("IBFAB_SOCKET")) : NULL;
	char *xdg = getenv("XDG_RUNTIME_DIR") ? strdup(getenv("XDG_RUNTIME_DIR")) : NULL;

	setenv("IBFAB_SOCKET", "/x/y.sock", 1);
	CU_ASSERT(serve_default_socket(buf, sizeof(buf)) == 0 && !strcmp(buf, "/x/y.sock"));
	unsetenv("IBFAB_SOCKET");
	setenv("XDG_RUNTIME_DIR", "/run/user/7", 1);
	CU_ASSERT(serve_default_socket(buf, sizeof(buf)) == 0 &&
		  !strcmp(buf, "/run/user/7/ibfab/sock"));
	unsetenv("XDG_RUNTIME_DIR");
	CU_ASSERT(serve_default_socket(buf, sizeof(buf)) == 0 && !strncmp(buf, "/tmp/ibfab-", 11));
	CU_ASSERT(serve_default_socket(buf, 8) == -1);	/* too long: refused, not cut */
	if (old)
		setenv("IBFAB_SOCKET", old, 1);
	if (xdg)
		setenv("XDG_RUNTIME_DIR", xdg, 1);
	free(old);
	free(xdg);
}

struct daemon {
	pthread_t t;
	struct serve_opts o;
	struct sim_diag d;
	int rc;
	int ready[2];
};

static void *daemon_main(void *arg)
{
	struct daemon *dm = arg;

	dm->rc = serve_run(&dm->o, dm->ready[1], &dm->d);
	return NULL;
}

static int rpc(int fd, const struct shim_req *q, struct shim_rep *r, int *fd_in)
{
	union { char buf[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } u;
	struct iovec iov = { r, sizeof(*r) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };

	if (send(fd, q, sizeof(*q), 0) != (ssize_t)sizeof(*q))
		return -1;
	memset(r, 0, sizeof(*r));
	if (recvmsg(fd, &m, 0) <= 0)
		return -1;
	if (fd_in) {
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);

		*fd_in = -1;
		if (c && c->cmsg_type == SCM_RIGHTS)
			memcpy(fd_in, CMSG_DATA(c), sizeof(int));
	}
	return r->status;
}

static void test_daemon(void)
{
	static struct daemon dm;
	char dir[] = "/tmp/ibfab-test-XXXXXX", path[108], topo[512];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct shim_req q;
	struct shim_rep r;
	struct stat st;
	const struct shim_clock *clk;
	int fd, cfd = -1;
	char b;

	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/s/sock", dir);
	memset(&dm, 0, sizeof(dm));
	dm.o.topo = test_src_path("topologies/examples/star-6.net", topo, sizeof(topo));
	dm.o.socket = path;
	dm.o.quiet = true;
	dm.o.idle_exit_s = 0.2;
	CU_ASSERT_FATAL(pipe(dm.ready) == 0);
	CU_ASSERT_FATAL(pthread_create(&dm.t, NULL, daemon_main, &dm) == 0);
	CU_ASSERT_FATAL(read(dm.ready[0], &b, 1) == 1);
	close(dm.ready[0]);
	CU_ASSERT(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);

	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	CU_ASSERT_FATAL(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);

	/* anything before HELLO is refused */
	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_CREATE_CQ;
	q.u.create_cq.cqe = 4;
	CU_ASSERT_EQUAL(rpc(fd, &q, &r, NULL), EPROTO);
	close(fd);
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	CU_ASSERT_FATAL(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);

	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_HELLO;
	q.u.hello.magic = SHIM_MAGIC;
	q.u.hello.version = SHIM_VERSION;
	q.u.hello.pid = 1;
	strcpy(q.u.hello.host, "h3");
	CU_ASSERT_EQUAL(rpc(fd, &q, &r, &cfd), 0);
	CU_ASSERT_FATAL(cfd >= 0);
	CU_ASSERT_STRING_EQUAL(r.u.hello.host, "h3");
	CU_ASSERT_EQUAL(r.u.hello.nhosts, 6);
	CU_ASSERT(r.u.hello.lid != 0);
	CU_ASSERT_EQUAL(r.u.hello.link_layer, 1);	/* InfiniBand */
	clk = mmap(NULL, sizeof(*clk), PROT_READ, MAP_SHARED, cfd, 0);
	CU_ASSERT_FATAL(clk != MAP_FAILED);
	CU_ASSERT_EQUAL(clk->now_ps, 0);

	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_CREATE_CQ;
	q.u.create_cq.cqe = 16;
	q.u.create_cq.channel = -1;
	CU_ASSERT_EQUAL(rpc(fd, &q, &r, NULL), 0);
	uint32_t cq = r.u.obj.handle;

	/* an empty poll waits; alone, the program lets the clock move on */
	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_POLL_CQ;
	q.u.poll.cq = cq;
	q.u.poll.n = 4;
	CU_ASSERT_EQUAL(rpc(fd, &q, &r, NULL), 0);
	CU_ASSERT_EQUAL(r.count, 0);
	CU_ASSERT(clk->now_ps >= 1 * SIM_US && clk->now_ps < 1 * SIM_MS);

	sim_time_t t0 = clk->now_ps;

	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_SLEEP;
	q.u.sleep.ps = 5 * SIM_MS;
	CU_ASSERT_EQUAL(rpc(fd, &q, &r, NULL), 0);
	CU_ASSERT_EQUAL(clk->now_ps, t0 + 5 * SIM_MS);

	/* malformed: refused, the connection stays usable */
	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_DESTROY_QP;
	q.u.obj.handle = cq;	/* a CQ handle is not a QP */
	CU_ASSERT_EQUAL(rpc(fd, &q, &r, NULL), EBADF);
	q.op = 4242;
	CU_ASSERT_EQUAL(rpc(fd, &q, &r, NULL), EPROTO);
	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_DESTROY_CQ;
	q.u.obj.handle = cq;
	CU_ASSERT_EQUAL(rpc(fd, &q, &r, NULL), 0);

	munmap((void *)clk, sizeof(*clk));
	close(cfd);
	close(fd);
	/* idle: the daemon leaves by itself and removes its socket */
	pthread_join(dm.t, NULL);
	CU_ASSERT_EQUAL(dm.rc, 0);
	CU_ASSERT(access(path, F_OK) != 0);
	snprintf(topo, sizeof(topo), "%s/s", dir);
	rmdir(topo);
	rmdir(dir);
}

static const struct test_case tests[] = {
	{ "wire sizes", test_wire_sizes },
	{ "socket path", test_socket_path },
	{ "daemon: attach, clock, refusals, idle exit", test_daemon },
	{ NULL, NULL },
};

TEST_MAIN("shim", tests)
