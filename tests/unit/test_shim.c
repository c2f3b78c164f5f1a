/* SPDX-License-Identifier: MIT */
/*
 * test_shim.c - the fabric daemon of the verbs shim (shim/serve.c), driven
 * in-process over its socket with hand-made requests: the socket path rule,
 * the wire sizes the shim and the tests rely on, attaching as a named host,
 * the clock rule (a lone waiting program moves the clock: an empty poll by
 * its poll quantum, a sleep by its length), refusal of malformed requests,
 * and the idle exit; the connection manager (shim/serve_cm.c) between two
 * programs: the hosts file, resolution, REQ/REP/RTU with private data, each
 * message a datagram through the fabric, DREQ/DREP, the REJ of a port
 * nobody listens on, and a peer that dies.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
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

/* A daemon on star-6.net at PATH in a thread, quiet, leaving when idle
 * for 0.2 s; returns once it listens. */
static void daemon_start(struct daemon *dm, const char *path, char *topo, size_t len)
{
	char b;

	memset(dm, 0, sizeof(*dm));
	dm->o.topo = test_src_path("topologies/examples/star-6.net", topo, len);
	dm->o.socket = path;
	dm->o.quiet = true;
	dm->o.idle_exit_s = 0.2;
	CU_ASSERT_FATAL(pipe(dm->ready) == 0);
	CU_ASSERT_FATAL(pthread_create(&dm->t, NULL, daemon_main, dm) == 0);
	CU_ASSERT_FATAL(read(dm->ready[0], &b, 1) == 1);
	close(dm->ready[0]);
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

static uint32_t cm_id(int fd, uint32_t *ch);

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

	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/s/sock", dir);
	daemon_start(&dm, path, topo, sizeof(topo));
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

	/* an empty poll waits; alone, the program lets the clock move on by
	 * what one poll costs the host (host.poll_cpu_ns, 50 ns), then by
	 * twice as much for each empty poll in a row; a look for an rdma_cm
	 * event that finds none does not end the run, any other request does */
	uint32_t ch;
	struct shim_req e;
	struct shim_rep er;

	(void)cm_id(fd, &ch);
	memset(&e, 0, sizeof(e));
	e.op = SHIM_OP_CM_GET_EVENT;
	e.u.cm_get.channel = ch;
	e.u.cm_get.nonblock = 1;
	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_POLL_CQ;
	q.u.poll.cq = cq;
	q.u.poll.n = 4;
	CU_ASSERT_EQUAL(rpc(fd, &q, &r, NULL), 0);
	CU_ASSERT_EQUAL(r.count, 0);
	CU_ASSERT_EQUAL(clk->now_ps, 50 * SIM_NS);
	CU_ASSERT_EQUAL(rpc(fd, &q, &r, NULL), 0);
	CU_ASSERT_EQUAL(clk->now_ps, 150 * SIM_NS);
	CU_ASSERT_EQUAL(rpc(fd, &e, &er, NULL), EAGAIN);
	CU_ASSERT_EQUAL(rpc(fd, &q, &r, NULL), 0);
	CU_ASSERT_EQUAL(clk->now_ps, 350 * SIM_NS);
	memset(&e, 0, sizeof(e));
	e.op = SHIM_OP_REQ_NOTIFY;
	e.u.notify.cq = cq;
	CU_ASSERT_EQUAL(rpc(fd, &e, &er, NULL), 0);
	CU_ASSERT_EQUAL(rpc(fd, &q, &r, NULL), 0);
	CU_ASSERT_EQUAL(clk->now_ps, 400 * SIM_NS);

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

/* A request with a tail and a descriptor, its reply not awaited. */
static void req_send(int fd, struct shim_req *q, const void *tail, uint32_t len, int fd_out)
{
	union shim_fd_cmsg u;
	struct iovec iov[2] = { { q, sizeof(*q) }, { (void *)tail, len } };
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = tail ? 2 : 1 };

	q->inline_len = len;
	shim_msg_attach_fd(&m, &u, fd_out);
	CU_ASSERT_FATAL(sendmsg(fd, &m, 0) == (ssize_t)(sizeof(*q) + len));
}

#define rep_recv(fd, r) rep_recv_at(fd, r, __LINE__)
static int rep_recv_at(int fd, struct shim_rep *r, int line)
{
	memset(r, 0, sizeof(*r));
	if (recv(fd, r, sizeof(*r), 0) <= 0) {
		fprintf(stderr, "test_shim.c:%d: no reply\n", line);
		CU_FAIL_FATAL("no reply");
	}
	return r->status;
}

static int cm_rpc(int fd, struct shim_req *q, const void *tail, uint32_t len, int fd_out,
		  struct shim_rep *r)
{
	req_send(fd, q, tail, len, fd_out);
	return rep_recv(fd, r);
}

/* A program attached as HOST over a new connection; its LID in *lid, the
 * clock page in *clk (if not NULL). */
static int cm_client(const char *path, const char *host, uint16_t *lid,
		     const struct shim_clock **clk)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct shim_req q;
	struct shim_rep r;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0), cfd = -1;

	struct timeval tv = { .tv_sec = 20 };	/* a test fails, never hangs */

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	CU_ASSERT_FATAL(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_HELLO;
	q.u.hello.magic = SHIM_MAGIC;
	q.u.hello.version = SHIM_VERSION;
	q.u.hello.pid = (uint32_t)getpid();
	strcpy(q.u.hello.host, host);
	CU_ASSERT_FATAL(rpc(fd, &q, &r, &cfd) == 0);
	if (clk) {
		*clk = mmap(NULL, sizeof(**clk), PROT_READ, MAP_SHARED, cfd, 0);
		CU_ASSERT_FATAL(*clk != MAP_FAILED);
	}
	close(cfd);
	*lid = r.u.hello.lid;
	return fd;
}

/* An event channel and an id on it: the id's handle, the channel's in *ch. */
static uint32_t cm_id(int fd, uint32_t *ch)
{
	struct shim_req q;
	struct shim_rep r;
	int efd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);

	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_CM_CREATE_CHANNEL;
	CU_ASSERT_FATAL(cm_rpc(fd, &q, NULL, 0, efd, &r) == 0);
	close(efd);
	*ch = r.u.cm_addr.handle;
	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_CM_CREATE_ID;
	q.u.cm_id.channel = *ch;
	q.u.cm_id.ps = RDMA_PS_TCP;
	q.u.cm_id.qp_type = IBV_QPT_RC;
	CU_ASSERT_FATAL(cm_rpc(fd, &q, NULL, 0, -1, &r) == 0);
	return r.u.cm_addr.handle;
}

static void cm_simple(int fd, uint32_t op, uint32_t id, struct shim_rep *r, int want)
{
	struct shim_req q;

	memset(&q, 0, sizeof(q));
	q.op = op;
	q.u.cm.id = id;
	CU_ASSERT_EQUAL(cm_rpc(fd, &q, NULL, 0, -1, r), want);
}

static void sleep_send(int fd, uint64_t ps)
{
	struct shim_req q;

	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_SLEEP;
	q.u.sleep.ps = ps;
	req_send(fd, &q, NULL, 0, -1);
}

static void get_event_send(int fd, uint32_t ch)
{
	struct shim_req q;

	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_CM_GET_EVENT;
	q.u.cm_get.channel = ch;
	req_send(fd, &q, NULL, 0, -1);
}

/* Connect h1 to a listener on h0 (port 5000); the clock tells when each
 * message took effect. */
static void test_cm(void)
{
	static struct daemon dm;
	char dir[] = "/tmp/ibfab-test-XXXXXX", path[108], topo[512], line[128];
	const char pdata[] = "hello, h0";
	struct shim_req q;
	struct shim_rep r;
	uint16_t lid0, lid1;
	uint32_t cha, chb, la, b;
	uint64_t t_req, t_rep, t_rtu, t0;
	FILE *f;

	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/sock", dir);
	daemon_start(&dm, path, topo, sizeof(topo));

	/* the hosts file: h0 is 127.1.0.1 */
	snprintf(topo, sizeof(topo), "%s" SHIM_HOSTS_SUFFIX, path);
	f = fopen(topo, "r");
	CU_ASSERT_FATAL(f != NULL);
	CU_ASSERT(fgets(line, sizeof(line), f) && line[0] == '#');
	CU_ASSERT(fgets(line, sizeof(line), f) && !strcmp(line, "127.1.0.1 h0\n"));
	fclose(f);
	CU_ASSERT_EQUAL(shim_addr_host(shim_host_addr(5)), 5);
	CU_ASSERT_EQUAL(shim_addr_host(0x7f000001), -1);

	const struct shim_clock *clk;
	int a = cm_client(path, "h0", &lid0, NULL), c = cm_client(path, "h1", &lid1, &clk);

	/* h0 listens on port 5000 */
	la = cm_id(a, &cha);
	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_CM_BIND;
	q.u.cm.id = la;
	q.u.cm.src.port = 5000;
	CU_ASSERT_EQUAL(cm_rpc(a, &q, NULL, 0, -1, &r), 0);
	CU_ASSERT_EQUAL(r.u.cm_addr.src.port, 5000);
	cm_simple(a, SHIM_OP_CM_LISTEN, la, &r, 0);
	/* a second listener on the port: refused */
	uint32_t ch2, l2 = cm_id(a, &ch2);

	CU_ASSERT_EQUAL(cm_rpc(a, &q, NULL, 0, -1, &r), EINVAL);	/* la: bound already */
	q.u.cm.id = l2;
	CU_ASSERT_EQUAL(cm_rpc(a, &q, NULL, 0, -1, &r), EADDRINUSE);

	/* h1 resolves h0's address and route */
	b = cm_id(c, &chb);
	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_CM_RESOLVE_ADDR;
	q.u.cm.id = b;
	q.u.cm.dst.ip = shim_host_addr(0);
	q.u.cm.dst.port = 5000;
	CU_ASSERT_EQUAL(cm_rpc(c, &q, NULL, 0, -1, &r), 0);
	CU_ASSERT_EQUAL(r.u.cm_addr.src.ip, shim_host_addr(1));
	CU_ASSERT(r.u.cm_addr.src.port != 0);
	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_CM_GET_EVENT;
	q.u.cm_get.channel = chb;
	CU_ASSERT_EQUAL(cm_rpc(c, &q, NULL, 0, -1, &r), 0);
	CU_ASSERT_EQUAL(r.u.cm.event, RDMA_CM_EVENT_ADDR_RESOLVED);
	cm_simple(c, SHIM_OP_CM_RESOLVE_ROUTE, b, &r, 0);
	CU_ASSERT_EQUAL(r.u.cm_addr.dlid, lid0);
	CU_ASSERT_EQUAL(cm_rpc(c, &q, NULL, 0, -1, &r), 0);
	CU_ASSERT_EQUAL(r.u.cm.event, RDMA_CM_EVENT_ROUTE_RESOLVED);
	/* nothing more: a nonblocking wait says so at once */
	q.u.cm_get.nonblock = 1;
	CU_ASSERT_EQUAL(cm_rpc(c, &q, NULL, 0, -1, &r), EAGAIN);

	/* REQ: h0 hears of it one datagram later */
	t0 = clk->now_ps;
	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_CM_CONNECT;
	q.u.cm.id = b;
	q.u.cm.param.qpn = 77;
	q.u.cm.param.psn = 0x123;
	q.u.cm.param.responder_resources = 4;
	CU_ASSERT_EQUAL(cm_rpc(c, &q, pdata, sizeof(pdata), -1, &r), 0);
	get_event_send(c, chb);		/* h1 waits for the REP */
	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_CM_GET_EVENT;
	q.u.cm_get.channel = cha;
	CU_ASSERT_EQUAL(cm_rpc(a, &q, NULL, 0, -1, &r), 0);
	t_req = clk->now_ps;
	CU_ASSERT_EQUAL(r.u.cm.event, RDMA_CM_EVENT_CONNECT_REQUEST);
	CU_ASSERT_EQUAL(r.u.cm.listen_id, (int32_t)la);
	CU_ASSERT_EQUAL(r.u.cm.param.qpn, 77);
	CU_ASSERT_EQUAL(r.u.cm.param.psn, 0x123);
	CU_ASSERT_EQUAL(r.u.cm.param.responder_resources, 4);
	CU_ASSERT_EQUAL(r.u.cm.dlid, lid1);
	CU_ASSERT_EQUAL(r.u.cm.pdata_len, sizeof(pdata));
	CU_ASSERT(!memcmp(r.u.cm.pdata, pdata, sizeof(pdata)));
	CU_ASSERT_EQUAL(r.u.cm.src.ip, shim_host_addr(0));
	CU_ASSERT_EQUAL(r.u.cm.dst.ip, shim_host_addr(1));
	uint32_t na = r.u.cm.id;

	/* a 256-byte datagram through one HDR switch: a microsecond or so */
	CU_ASSERT(t_req > t0 + 300 * SIM_NS && t_req < t0 + 5 * SIM_US);
	/* REP: h1 hears of it one datagram later */
	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_CM_ACCEPT;
	q.u.cm.id = na;
	q.u.cm.param.qpn = 88;
	q.u.cm.param.psn = 0x456;
	CU_ASSERT_EQUAL(cm_rpc(a, &q, NULL, 0, -1, &r), 0);
	get_event_send(a, cha);		/* h0 waits for the RTU */
	CU_ASSERT_EQUAL(rep_recv(c, &r), 0);
	t_rep = clk->now_ps;
	CU_ASSERT_EQUAL(r.u.cm.event, RDMA_CM_EVENT_CONNECT_RESPONSE);
	CU_ASSERT_EQUAL(r.u.cm.id, b);
	CU_ASSERT_EQUAL(r.u.cm.param.qpn, 88);
	CU_ASSERT_EQUAL(r.u.cm.param.psn, 0x456);
	CU_ASSERT_EQUAL(r.u.cm.dlid, lid0);
	/* RTU: ESTABLISHED at h0 (h1 waits meanwhile: the clock moves only
	 * while every program waits) */
	cm_simple(c, SHIM_OP_CM_ESTABLISH, b, &r, 0);
	get_event_send(c, chb);
	CU_ASSERT_EQUAL(rep_recv(a, &r), 0);
	t_rtu = clk->now_ps;
	CU_ASSERT_EQUAL(r.u.cm.event, RDMA_CM_EVENT_ESTABLISHED);
	CU_ASSERT_EQUAL(r.u.cm.id, na);
	/* the same path each way, the same datagram: equal flight times */
	CU_ASSERT_EQUAL(t_rep - t_req, t_req - t0);
	CU_ASSERT_EQUAL(t_rtu - t_rep, t_req - t0);

	/* DREQ from h0: DISCONNECTED at h1; its DREP: DISCONNECTED at h0 */
	cm_simple(a, SHIM_OP_CM_DISCONNECT, na, &r, 0);
	get_event_send(a, cha);
	CU_ASSERT_EQUAL(rep_recv(c, &r), 0);
	CU_ASSERT_EQUAL(r.u.cm.event, RDMA_CM_EVENT_DISCONNECTED);
	CU_ASSERT_EQUAL(r.u.cm.id, b);
	cm_simple(c, SHIM_OP_CM_DISCONNECT, b, &r, 0);
	cm_simple(c, SHIM_OP_CM_DISCONNECT, b, &r, EINVAL);	/* once only */
	sleep_send(c, 1 * SIM_MS);
	CU_ASSERT_EQUAL(rep_recv(a, &r), 0);
	CU_ASSERT_EQUAL(r.u.cm.event, RDMA_CM_EVENT_DISCONNECTED);
	CU_ASSERT_EQUAL(r.u.cm.id, na);
	sleep_send(a, 1 * SIM_S);	/* h0 sleeps while h1 is rejected */
	CU_ASSERT_EQUAL(rep_recv(c, &r), 0);

	/* an id destroyed before its event is taken: the event goes with it */
	uint32_t chz, z = cm_id(c, &chz);

	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_CM_RESOLVE_ADDR;
	q.u.cm.id = z;
	q.u.cm.dst.ip = shim_host_addr(0);
	CU_ASSERT_EQUAL(cm_rpc(c, &q, NULL, 0, -1, &r), 0);
	cm_simple(c, SHIM_OP_CM_DESTROY_ID, z, &r, 0);
	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_CM_GET_EVENT;
	q.u.cm_get.channel = chz;
	q.u.cm_get.nonblock = 1;
	CU_ASSERT_EQUAL(cm_rpc(c, &q, NULL, 0, -1, &r), EAGAIN);

	/* a port nobody listens on: REJ, reason 8 (invalid service ID) */
	uint32_t chx, x = cm_id(c, &chx);

	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_CM_RESOLVE_ADDR;
	q.u.cm.id = x;
	q.u.cm.dst.ip = shim_host_addr(0);
	q.u.cm.dst.port = 5001;
	CU_ASSERT_EQUAL(cm_rpc(c, &q, NULL, 0, -1, &r), 0);
	cm_simple(c, SHIM_OP_CM_RESOLVE_ROUTE, x, &r, 0);
	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_CM_CONNECT;
	q.u.cm.id = x;
	char big[SHIM_CM_PDATA_REQ + 1] = { 0 };

	CU_ASSERT_EQUAL(cm_rpc(c, &q, big, sizeof(big), -1, &r), EINVAL);	/* 57 bytes */
	CU_ASSERT_EQUAL(cm_rpc(c, &q, NULL, 0, -1, &r), 0);
	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_CM_GET_EVENT;
	q.u.cm_get.channel = chx;
	for (int k = 0; k < 2; k++) {	/* ADDR_RESOLVED, ROUTE_RESOLVED */
		CU_ASSERT_EQUAL(cm_rpc(c, &q, NULL, 0, -1, &r), 0);
	}
	CU_ASSERT_EQUAL(cm_rpc(c, &q, NULL, 0, -1, &r), 0);
	CU_ASSERT_EQUAL(r.u.cm.event, RDMA_CM_EVENT_REJECTED);
	CU_ASSERT_EQUAL(r.u.cm.status, 8);
	sleep_send(c, 2 * SIM_S);
	CU_ASSERT_EQUAL(rep_recv(a, &r), 0);	/* h0 wakes at 1 s */

	/* h0 dies with h1's request in hand: once its objects go (1 ms of
	 * simulated time), its CM rejects the request, as the kernel's would */
	uint32_t l3 = cm_id(a, &ch2), y;

	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_CM_BIND;
	q.u.cm.id = l3;
	q.u.cm.src.port = 5002;
	CU_ASSERT_EQUAL(cm_rpc(a, &q, NULL, 0, -1, &r), 0);
	cm_simple(a, SHIM_OP_CM_LISTEN, l3, &r, 0);
	get_event_send(a, ch2);
	CU_ASSERT_EQUAL(rep_recv(c, &r), 0);	/* h1 wakes at 2 s */
	y = cm_id(c, &chx);
	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_CM_RESOLVE_ADDR;
	q.u.cm.id = y;
	q.u.cm.dst.ip = shim_host_addr(0);
	q.u.cm.dst.port = 5002;
	CU_ASSERT_EQUAL(cm_rpc(c, &q, NULL, 0, -1, &r), 0);
	cm_simple(c, SHIM_OP_CM_RESOLVE_ROUTE, y, &r, 0);
	cm_simple(c, SHIM_OP_CM_CONNECT, y, &r, 0);
	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_CM_GET_EVENT;
	q.u.cm_get.channel = chx;
	for (int k = 0; k < 2; k++)	/* ADDR_RESOLVED, ROUTE_RESOLVED */
		CU_ASSERT_EQUAL(cm_rpc(c, &q, NULL, 0, -1, &r), 0);
	get_event_send(c, chx);
	CU_ASSERT_EQUAL(rep_recv(a, &r), 0);
	CU_ASSERT_EQUAL(r.u.cm.event, RDMA_CM_EVENT_CONNECT_REQUEST);
	t0 = clk->now_ps;
	close(a);
	CU_ASSERT_EQUAL(rep_recv(c, &r), 0);
	CU_ASSERT_EQUAL(r.u.cm.event, RDMA_CM_EVENT_REJECTED);
	CU_ASSERT_EQUAL(r.u.cm.status, 28);	/* consumer defined */
	CU_ASSERT(clk->now_ps >= t0 + 1 * SIM_MS);
	munmap((void *)clk, sizeof(*clk));
	close(c);
	pthread_join(dm.t, NULL);
	CU_ASSERT_EQUAL(dm.rc, 0);
	CU_ASSERT(access(topo, F_OK) != 0);	/* the hosts file goes with the socket */
	rmdir(dir);
}

/* A quiet request (SHIM_OP_QUIET) for the daemon: sent, never answered. */
static void quiet_send(int fd, struct shim_req *q)
{
	struct shim_req x = *q;

	x.op |= SHIM_OP_QUIET;
	req_send(fd, &x, NULL, 0, -1);
}

/*
 * Posts and CQ arms sent without waiting for an answer are taken in order
 * before the next request, and answered by nothing (the next answer is the
 * next request's; one the shim should not have sent is refused unanswered);
 * an answered post says what the QP's queues hold; a CQ event brings the
 * completions visible at its instant, so the poll after it finds the CQ
 * empty. Completions without a peer: receives posted to a QP in the error
 * state are flushed at once.
 */
static void test_quiet(void)
{
	static struct daemon dm;
	char dir[] = "/tmp/ibfab-test-XXXXXX", path[108], topo[512];
	const struct shim_clock *clk;
	struct shim_req q;
	struct shim_rep r;
	uint16_t lid;
	int fd, efd;

	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/sock", dir);
	daemon_start(&dm, path, topo, sizeof(topo));
	fd = cm_client(path, "h2", &lid, &clk);	/* a missing answer fails, never hangs */

	efd = eventfd(0, 0);
	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_CREATE_CHANNEL;
	req_send(fd, &q, NULL, 0, efd);
	CU_ASSERT_FATAL(rep_recv(fd, &r) == 0);
	uint32_t ch = r.u.obj.handle;

	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_CREATE_CQ;
	q.u.create_cq.cqe = 16;
	q.u.create_cq.channel = (int32_t)ch;
	CU_ASSERT_FATAL(rpc(fd, &q, &r, NULL) == 0);
	uint32_t cq = r.u.obj.handle;

	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_CREATE_QP;
	q.u.create_qp.type = 2;		/* IBV_QPT_RC */
	q.u.create_qp.send_cq = q.u.create_qp.recv_cq = cq;
	q.u.create_qp.srq = -1;
	q.u.create_qp.max_send_wr = q.u.create_qp.max_recv_wr = 4;
	q.u.create_qp.max_send_sge = q.u.create_qp.max_recv_sge = 1;
	CU_ASSERT_FATAL(rpc(fd, &q, &r, NULL) == 0);
	uint32_t qp = r.u.qp.handle;
	struct shim_req mq, pr, poll;

	memset(&mq, 0, sizeof(mq));
	mq.op = SHIM_OP_MODIFY_QP;
	mq.u.modify_qp.qp = qp;
	mq.u.modify_qp.attr.mask = 1;		/* the state */
	mq.u.modify_qp.attr.qp_state = 1;	/* INIT */
	CU_ASSERT_EQUAL(rpc(fd, &mq, &r, NULL), 0);

	/* answered posts say what the receive queue holds */
	memset(&pr, 0, sizeof(pr));
	pr.op = SHIM_OP_POST_RECV;
	pr.u.recv.qp = qp;
	pr.u.recv.wr_id = 11;
	CU_ASSERT_EQUAL(rpc(fd, &pr, &r, NULL), 0);
	CU_ASSERT_EQUAL(r.u.post.rq_used, 1);
	CU_ASSERT_EQUAL(r.u.post.sq_used, 0);
	pr.u.recv.wr_id = 12;
	quiet_send(fd, &pr);			/* taken in order, unanswered */
	pr.u.recv.wr_id = 13;
	CU_ASSERT_EQUAL(rpc(fd, &pr, &r, NULL), 0);
	CU_ASSERT_EQUAL(r.u.post.rq_used, 3);

	/* a quiet request the shim should not have sent: refused unanswered,
	 * the connection goes on (the next answer is the next request's) */
	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_POST_SEND;
	q.u.send.qp = 999;
	quiet_send(fd, &q);
	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_SLEEP | SHIM_OP_QUIET;	/* not one that may be quiet */
	q.u.sleep.ps = SIM_US;
	CU_ASSERT_EQUAL(rpc(fd, &q, &r, NULL), EPROTO);

	/* the error state flushes the three receives, and a fourth at once:
	 * the queue is empty, but the shim counts them until it has taken
	 * their completions, and so does the answer; a poll takes them */
	mq.u.modify_qp.attr.qp_state = 6;	/* ERR */
	CU_ASSERT_EQUAL(rpc(fd, &mq, &r, NULL), 0);
	pr.u.recv.wr_id = 20;
	CU_ASSERT_EQUAL(rpc(fd, &pr, &r, NULL), 0);
	CU_ASSERT_EQUAL(r.u.post.rq_used, 4);
	memset(&poll, 0, sizeof(poll));
	poll.op = SHIM_OP_POLL_CQ;
	poll.u.poll.cq = cq;
	poll.u.poll.n = 8;
	CU_ASSERT_EQUAL(rpc(fd, &poll, &r, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(r.count, 4);
	CU_ASSERT_EQUAL(r.u.wc[0].wr_id, 11);
	CU_ASSERT_EQUAL(r.u.wc[1].wr_id, 12);
	CU_ASSERT_EQUAL(r.u.wc[2].wr_id, 13);
	CU_ASSERT_EQUAL(r.u.wc[3].wr_id, 20);
	CU_ASSERT_EQUAL(rpc(fd, &pr, &r, NULL), 0);	/* taken: only the new one */
	CU_ASSERT_EQUAL(r.u.post.rq_used, 1);
	CU_ASSERT_EQUAL(rpc(fd, &poll, &r, NULL), 0);
	CU_ASSERT_EQUAL(r.count, 1);

	/* a quiet arm, then a quiet receive flushed at once: its event comes
	 * with that completion, and the poll after it finds the CQ empty */
	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_REQ_NOTIFY;
	q.u.notify.cq = cq;
	quiet_send(fd, &q);
	pr.u.recv.wr_id = 14;
	quiet_send(fd, &pr);
	memset(&q, 0, sizeof(q));
	q.op = SHIM_OP_GET_CQ_EVENT;
	q.u.obj.handle = ch;
	CU_ASSERT_EQUAL(rpc(fd, &q, &r, NULL), 0);
	CU_ASSERT_EQUAL(r.u.event.cq, cq);
	CU_ASSERT_EQUAL_FATAL(r.count, 1);
	CU_ASSERT_EQUAL(r.u.event.wc[0].wr_id, 14);
	CU_ASSERT_EQUAL(r.u.event.wc[0].status, 5);	/* IBV_WC_WR_FLUSH_ERR */
	CU_ASSERT_EQUAL(r.u.event.wc[0].opcode, 128);	/* IBV_WC_RECV */
	sim_time_t t0 = clk->now_ps;

	CU_ASSERT_EQUAL(rpc(fd, &poll, &r, NULL), 0);
	CU_ASSERT_EQUAL(r.count, 0);
	CU_ASSERT_EQUAL(clk->now_ps, t0 + 50 * SIM_NS);	/* one empty poll's cost */

	munmap((void *)clk, sizeof(*clk));
	close(efd);
	close(fd);
	pthread_join(dm.t, NULL);
	CU_ASSERT_EQUAL(dm.rc, 0);
	rmdir(dir);
}

static const struct test_case tests[] = {
	{ "wire sizes", test_wire_sizes },
	{ "socket path", test_socket_path },
	{ "daemon: attach, clock, refusals, idle exit", test_daemon },
	{ "connection manager: REQ/REP/RTU, DREQ/DREP, REJ, a dead peer", test_cm },
	{ "quiet posts and arms; a post's answer; an event's completions", test_quiet },
	{ NULL, NULL },
};

TEST_MAIN("shim", tests)
