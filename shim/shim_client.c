/* SPDX-License-Identifier: MIT */
/*
 * shim_client.c - the verbs shim's side of the connection to the fabric
 * daemon, and the simulated clock the program sees.
 *
 * Attach happens on first device use (ibv_get_device_list), never in a
 * constructor: LD_PRELOAD and LD_LIBRARY_PATH are inherited by every child
 * (timeout, sh, system()), which must run untouched. Until a process has
 * attached, every interposed libc function below passes straight through.
 *
 * Once attached, the program lives in simulated time (docs/shim.md):
 * gettimeofday, clock_gettime and time read the daemon's clock page, and
 * the calls that block - sleep, and read/recv/accept on a socket or pipe -
 * tell the daemon the program is waiting, so the daemon may advance the
 * clock while it waits (and a read consumes nothing before the daemon has
 * seen the bytes: io_wait). A program that spins reading the clock (perftest's
 * cycle-counter calibration) is noticed after a few hundred unchanged reads
 * and parked in a CLOCK_WAIT until time moves.
 */
#define _GNU_SOURCE
#include "shim/shim_int.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/times.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/*
 * The process's connection, made by the thread that attached, which alone
 * uses it (conn_lock: its requests and a signal handler's). Every other
 * thread that calls the shim has a connection of its own (thread_fd),
 * joined to the process with the token the daemon gave it: so one thread
 * may wait in ibv_get_cq_event or rdma_get_cm_event while another posts.
 */
static pthread_mutex_t conn_lock = PTHREAD_MUTEX_INITIALIZER;
static int conn_fd = -1;
static bool conn_dead;
static pthread_t attach_thread;
static uint64_t proc_token;
/* Another thread has called the shim (set under conn_lock, before it
 * joins): quiet requests stop, since the daemon reads each thread's
 * connection on its own and could take a later request before them. */
static bool threads_joined;
static __thread int thread_conn = -1;
static __thread bool thread_dead;
static pthread_key_t thread_key;
static pthread_once_t thread_key_once = PTHREAD_ONCE_INIT;
static const struct shim_clock *clock_page;
static struct shim_conn_info info;

/* Consecutive clock reads that saw the same simulated time. */
static __thread unsigned same_reads;
static __thread uint64_t last_seen = UINT64_MAX;
#define CLOCK_SPIN_READS 256
/* The clock as the daemon's last answer to this thread left it: from an
 * answer on, the clock stands still while the program runs (sim_read). */
static __thread uint64_t answered_at = UINT64_MAX;
/* This thread holds its connection (shim_conn_get .. shim_conn_put). */
static __thread unsigned in_conn;
/* The process's alive stamp on the clock page (struct shim_clock), -1 none. */
static int alive_slot = -1;

bool shim_attached(void)
{
	return clock_page != NULL;
}

const struct shim_conn_info *shim_info(void)
{
	return &info;
}

uint64_t shim_now_ps(void)
{
	return clock_page ? clock_page->now_ps : 0;
}

void shim_unsupported(const char *what)
{
	static char seen[32][48];
	static int nseen;

	for (int i = 0; i < nseen; i++)
		if (!strncmp(seen[i], what, sizeof(seen[i]) - 1))
			return;
	if (nseen < 32)
		snprintf(seen[nseen++], sizeof(seen[0]), "%s", what);
	fprintf(stderr, "ibfab shim: %s is not supported by the simulated HCA\n", what);
}

static int sock_path(char *buf, size_t len)
{
	const char *e = getenv("IBFAB_SOCKET");
	const char *rt = getenv("XDG_RUNTIME_DIR");

	if (e && *e)
		return snprintf(buf, len, "%s", e) >= (int)len ? -1 : 0;
	if (rt && *rt)
		return snprintf(buf, len, "%s/ibfab/sock", rt) >= (int)len ? -1 : 0;
	return snprintf(buf, len, "/tmp/ibfab-%u/sock", (unsigned)getuid()) >= (int)len ? -1 : 0;
}

/* ---- raw message I/O (never through the interposed functions) ---------- */

/*
 * The process's CPU time, which every message carries (shim_cpu_trailer).
 * Read here, where it is exact: the kernel brings a process's CPU clock up
 * to date for its own reads, for others only at a scheduler tick.
 */
static shim_cpu_trailer cpu_ns(void)
{
	struct timespec ts;

	if (syscall(SYS_clock_gettime, CLOCK_PROCESS_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int send_msg(int cfd, const void *a, size_t alen, const void *b, size_t blen, int fd)
{
	shim_cpu_trailer cpu = cpu_ns();
	struct iovec iov[3] = { { (void *)a, alen }, { (void *)b, blen }, { &cpu, sizeof(cpu) } };
	union shim_fd_cmsg u;
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = 3 };

	shim_msg_attach_fd(&m, &u, fd);
	for (;;) {
		ssize_t n = sendmsg(cfd, &m, MSG_NOSIGNAL);

		if (n >= 0)
			return 0;
		if (errno != EINTR)
			return -1;
	}
}

static int recv_msg(int cfd, void *buf, size_t len, int *fd_in)
{
	union { char buf[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } u;
	struct iovec iov = { buf, len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	ssize_t n;

	if (fd_in)
		*fd_in = -1;
	/* The daemon answers most requests at once: a few looks without
	 * blocking (some 20 us) find the reply before a sleeping process
	 * could be woken for it, which on a virtual machine costs more than
	 * the round trip itself (bench/shim_wall); then it sleeps. */
	n = -1;
	for (int i = 0; i < 16 && n < 0; i++) {
		n = recvmsg(cfd, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			break;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		do
			n = recvmsg(cfd, &m, MSG_CMSG_CLOEXEC);
		while (n < 0 && errno == EINTR);
	if (n <= 0)
		return -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			int fd;

			memcpy(&fd, CMSG_DATA(c), sizeof(int));
			if (fd_in && *fd_in < 0)
				*fd_in = fd;
			else
				close(fd);
		}
	}
	return (int)n;
}

static void thread_conn_close(void *arg)
{
	(void)arg;
	if (thread_conn >= 0)
		close(thread_conn);	/* the daemon lets the thread's connection go */
	thread_conn = -1;
}

static void thread_key_make(void)
{
	pthread_key_create(&thread_key, thread_conn_close);
}

/* This thread's own connection, joined to the process: its fd, or -1. */
static int thread_fd(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct shim_req req = { .op = SHIM_OP_HELLO };
	struct shim_rep rep;
	int fd;

	if (thread_conn >= 0 || thread_dead)
		return thread_dead ? -1 : thread_conn;
	thread_dead = true;	/* until it has joined */
	pthread_mutex_lock(&conn_lock);
	threads_joined = true;
	pthread_mutex_unlock(&conn_lock);
	if (sock_path(sa.sun_path, sizeof(sa.sun_path)))
		return -1;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	req.u.hello.magic = SHIM_MAGIC;
	req.u.hello.version = SHIM_VERSION;
	req.u.hello.pid = (uint32_t)getpid();
	req.u.hello.tid = (uint32_t)syscall(SYS_gettid);
	req.u.hello.join = proc_token;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    send_msg(fd, &req, sizeof(req), NULL, 0, -1) ||
	    recv_msg(fd, &rep, sizeof(rep), NULL) < (int)offsetof(struct shim_rep, u) ||
	    rep.status) {
		fprintf(stderr, "ibfab shim: a thread could not join its process at the fabric "
			"daemon\n");
		close(fd);
		return -1;
	}
	pthread_once(&thread_key_once, thread_key_make);
	pthread_setspecific(thread_key, (void *)1);	/* the destructor closes it */
	thread_dead = false;
	return thread_conn = fd;
}

/*
 * This thread's connection, locked if it is the process's: its fd, -1 if
 * there is none (then nothing is locked). shim_conn_put releases it.
 */
static int shim_conn_get(bool **dead)
{
	in_conn++;
	if (!proc_token || pthread_equal(pthread_self(), attach_thread)) {
		pthread_mutex_lock(&conn_lock);
		if (conn_fd < 0 || conn_dead) {
			pthread_mutex_unlock(&conn_lock);
			in_conn--;
			return -1;
		}
		*dead = &conn_dead;
		return conn_fd;
	}
	*dead = &thread_dead;
	int fd = thread_fd();

	if (fd < 0)
		in_conn--;
	return fd;
}

static void shim_conn_put(int fd)
{
	if (fd == conn_fd)
		pthread_mutex_unlock(&conn_lock);
	in_conn--;
}

int shim_rpc(const struct shim_req *req, const void *tail, uint32_t tail_len, int fd_out,
	     struct shim_rep *rep, int *fd_in)
{
	bool *dead;
	int rc, cfd = shim_conn_get(&dead);

	if (cfd < 0)
		return EPIPE;
	memset(rep, 0, sizeof(*rep));
	if (send_msg(cfd, req, sizeof(*req), tail, tail_len, fd_out) ||
	    recv_msg(cfd, rep, sizeof(*rep), fd_in) < (int)offsetof(struct shim_rep, u)) {
		*dead = true;
		shim_conn_put(cfd);
		fprintf(stderr, "ibfab shim: lost the connection to the fabric daemon\n");
		return EPIPE;
	}
	rc = rep->status;
	/* every round trip may have moved the clock: restart spin detection */
	same_reads = 0;
	if (clock_page)
		answered_at = clock_page->now_ps;
	shim_conn_put(cfd);
	return rc;
}

int shim_quiet(const struct shim_req *req, const void *tail, uint32_t tail_len)
{
	struct shim_req q = *req;
	bool *dead;
	int cfd;

	if (!proc_token || !pthread_equal(pthread_self(), attach_thread))
		return EAGAIN;
	cfd = shim_conn_get(&dead);
	if (cfd < 0)
		return EPIPE;
	if (threads_joined) {
		shim_conn_put(cfd);
		return EAGAIN;	/* the caller asks and waits instead */
	}
	q.op |= SHIM_OP_QUIET;
	if (send_msg(cfd, &q, sizeof(q), tail, tail_len, -1)) {
		*dead = true;
		shim_conn_put(cfd);
		fprintf(stderr, "ibfab shim: lost the connection to the fabric daemon\n");
		return EPIPE;
	}
	shim_conn_put(cfd);
	return 0;
}

bool shim_quiet_on(void)
{
	static int on = -1;

	if (on < 0) {
		const char *e = getenv("IBFAB_SHIM_QUIET");

		on = !(e && !strcmp(e, "0"));
	}
	return on;
}

void shim_notify(const struct shim_req *req, int fd_out)
{
	bool *dead;
	int cfd = shim_conn_get(&dead);

	if (cfd < 0)
		return;
	if (send_msg(cfd, req, sizeof(*req), NULL, 0, fd_out))
		*dead = true;
	shim_conn_put(cfd);
}

/*
 * The host this process is to be: $IBFAB_HOST, else for an MPI rank without
 * a host of its own the fabric's host of its number (Open MPI's
 * OMPI_COMM_WORLD_RANK, else PMI_RANK of MPICH and the PMI launchers:
 * `ibfab exec -- mpirun -np N prog`) written "#N" into rank_host; NULL:
 * none named (the daemon hands out the next).
 */
static const char *host_named(char rank_host[24])
{
	const char *host = getenv("IBFAB_HOST"), *rank;

	if (host && *host)
		return host;
	rank = getenv("OMPI_COMM_WORLD_RANK");
	if (!rank || !*rank)
		rank = getenv("PMI_RANK");
	if (rank && *rank >= '0' && *rank <= '9' && strlen(rank) < 12 &&
	    strspn(rank, "0123456789") == strlen(rank)) {
		snprintf(rank_host, 24, "#%s", rank);
		return rank_host;
	}
	return NULL;
}

/* A connection to the daemon at sa (not through the interposed connect). */
static int daemon_connect(const struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	if (fd >= 0 && syscall(SYS_connect, fd, (const struct sockaddr *)sa, sizeof(*sa))) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* ---- a program on its way ------------------------------------------------ */

/*
 * A simulated host's program that opens a TCP connection before its first
 * verbs call (ucx_perftest's server accepts its client, reads the test's
 * parameters, and only then starts UCX) is on its way into the simulation.
 * A peer that has attached already may wait on that connection with a
 * timeout (ucx_perftest polls 1 ms at a time); were the clock free to move
 * meanwhile, that timeout would pass as often as the host took
 * milliseconds to start this program, and runs would differ. So such a
 * program says it is coming (SHIM_OP_PENDING, on a connection of its own,
 * answered before its own connect or accept goes on): the daemon counts it
 * as running until it attaches or ends, except while it is blocked in a
 * wait the shim watches (accept, a blocking read or recv, a poll without a
 * timeout), which it reports there as an attached program does (IO_BEGIN,
 * IO_END). docs/shim.md, "Programs on their way".
 */
static pthread_mutex_t pend_lock = PTHREAD_MUTEX_INITIALIZER;
static int pend_fd = -1;	/* the announcement's connection */
static pid_t pend_pid;		/* the process that made it (not a forked child) */
static pid_t pend_tried;	/* the process that tried to (once a process) */
static bool pend_over;		/* attached: shut, closed by whoever leaves it last */
static atomic_flag pend_busy = ATOMIC_FLAG_INIT;	/* a thread reports a wait on it */

static bool pend_on(void)
{
	return pend_fd >= 0 && !pend_over && pend_pid == getpid();
}

static void pend_announce(int family)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct shim_req req = { .op = SHIM_OP_PENDING };
	struct shim_rep rep;
	char rank_host[24];
	const char *host;
	int fd;

	if ((family != AF_INET && family != AF_INET6) ||
	    __atomic_load_n(&clock_page, __ATOMIC_ACQUIRE) || pend_tried == getpid())
		return;
	pthread_mutex_lock(&pend_lock);
	if (clock_page || pend_tried == getpid())
		goto out;
	pend_tried = getpid();
	if (pend_fd >= 0 && pend_pid != getpid()) {
		close(pend_fd);		/* a parent's, inherited: not ours to use */
		pend_fd = -1;
	}
	host = host_named(rank_host);
	if (!host || sock_path(sa.sun_path, sizeof(sa.sun_path)) || (fd = daemon_connect(&sa)) < 0)
		goto out;	/* no host named, or no daemon: nothing to wait for us */
	req.u.hello.magic = SHIM_MAGIC;
	req.u.hello.version = SHIM_VERSION;
	req.u.hello.pid = (uint32_t)getpid();
	snprintf(req.u.hello.host, sizeof(req.u.hello.host), "%s", host);
	if (send_msg(fd, &req, sizeof(req), NULL, 0, -1) ||
	    recv_msg(fd, &rep, sizeof(rep), NULL) <= 0 || rep.status) {
		close(fd);	/* an older daemon: it does not know the op */
		goto out;
	}
	pend_fd = fd;
	pend_pid = getpid();
	pend_over = false;
out:
	pthread_mutex_unlock(&pend_lock);
}

/* Attached: the announcement is over (the daemon ended it at our HELLO);
 * the descriptor goes now, or after the wait a thread reports on it. */
static void pend_end(void)
{
	pthread_mutex_lock(&pend_lock);
	if (pend_fd >= 0 && !pend_over) {
		pend_over = true;
		if (pend_pid == getpid())
			shutdown(pend_fd, SHUT_RDWR);
		if (pend_pid != getpid() || !atomic_flag_test_and_set(&pend_busy)) {
			close(pend_fd);
			pend_fd = -1;
			if (pend_pid == getpid())
				atomic_flag_clear(&pend_busy);
		}
	}
	pthread_mutex_unlock(&pend_lock);
}

/*
 * Where a program's large buffers land. glibc gives an allocation of at
 * least its mmap threshold (128 KiB to start with) pages of its own, the
 * data 16 bytes into the first; a smaller one comes from the heap, at an
 * offset that depends on every allocation before it. And glibc raises the
 * threshold to the size of each such block freed (up to 32 MiB), so after
 * a 256 KiB buffer is freed, the next ones come from the heap. That
 * offset is something the program's traffic follows: UCX starts a
 * rendezvous's RDMA READs with one that ends at the receive buffer's
 * first 4 KiB boundary (src/ucp/rndv/rndv.c: 4096 - address % 512
 * bytes), and the fabric's packets follow the READs. In a program with
 * helper threads (an MPI rank's PMIx and UCX threads) the heap's history
 * changes from run to run: Open MPI's ring allreduce receives each 1 MiB
 * step into a 256 KiB buffer of its own, from the heap once the 256 KiB
 * sweep has freed its buffers, and its first READ was 3,664 bytes in one
 * run and 3,904 in the next; the printed time moved in its fourth digit
 * (90.22 to 90.48 us). So an attached program keeps glibc's threshold at
 * 128 KiB (mallopt M_MMAP_THRESHOLD, which also ends the raising): every
 * buffer of 128 KiB or more then starts 16 bytes into a page, run after
 * run. A program that chose its threshold (GLIBC_TUNABLES with
 * glibc.malloc.mmap_threshold) keeps its own; the shim does not look for
 * a mallopt call of the program's own before it attached.
 */
static void heap_fix(void)
{
	const char *t = getenv("GLIBC_TUNABLES");

	if (!t || !strstr(t, "glibc.malloc.mmap_threshold"))
		mallopt(M_MMAP_THRESHOLD, 128 * 1024);
}

int shim_attach(void)
{
	static pthread_mutex_t once = PTHREAD_MUTEX_INITIALIZER;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct shim_req req = { .op = SHIM_OP_HELLO };
	struct shim_rep rep;
	char rank_host[24];
	const char *host = host_named(rank_host);
	int fd, cfd = -1, rc;
	void *page;

	pthread_mutex_lock(&once);
	if (clock_page) {
		pthread_mutex_unlock(&once);
		return 0;
	}
	if (sock_path(sa.sun_path, sizeof(sa.sun_path))) {
		fprintf(stderr, "ibfab shim: socket path too long\n");
		goto fail_inval;
	}
	/* rewrite rdtsc before connecting: objdump takes a while (seconds for
	 * an MPI rank's forty libraries on a loaded machine, the first time),
	 * and the daemon drops a connection that says no HELLO in 5 s */
	shim_tsc_install();
	fd = daemon_connect(&sa);
	if (fd < 0) {
		int e = errno;

		fprintf(stderr, "ibfab shim: no fabric daemon at %s (%s); start one with "
			"'ibfab serve --topo FILE' or use 'ibfab exec'\n", sa.sun_path, strerror(e));
		pthread_mutex_unlock(&once);
		errno = ENODEV;
		return -1;
	}
	conn_fd = fd;
	req.u.hello.magic = SHIM_MAGIC;
	req.u.hello.version = SHIM_VERSION;
	req.u.hello.pid = (uint32_t)getpid();
	req.u.hello.tid = (uint32_t)syscall(SYS_gettid);	/* the thread that uses conn_fd */
	if (host)
		snprintf(req.u.hello.host, sizeof(req.u.hello.host), "%s", host);
	rc = shim_rpc(&req, NULL, 0, -1, &rep, &cfd);
	if (rc || cfd < 0) {
		if (rc == ENOENT && host == rank_host)
			fprintf(stderr, "ibfab shim: the fabric daemon refused to attach host %s: "
				"MPI rank %s is the fabric's host of that number, and the fabric "
				"has fewer hosts ('ibfab topo show FILE' lists them)\n", host, host + 1);
		else if (rc == ENOENT && host)
			fprintf(stderr, "ibfab shim: the fabric daemon refused to attach host %s: "
				"the fabric has no host of that name ('ibfab topo show FILE' "
				"lists them)\n", host);
		else
			fprintf(stderr, "ibfab shim: the fabric daemon refused to attach%s%s: %s\n",
				host ? " host " : "", host ? host : "", strerror(rc ? rc : EPROTO));
		if (cfd >= 0)
			close(cfd);
		close(fd);
		conn_fd = -1;
		pthread_mutex_unlock(&once);
		errno = ENODEV;
		return -1;
	}
	page = mmap(NULL, sizeof(struct shim_clock), PROT_READ, MAP_SHARED, cfd, 0);
	close(cfd);
	if (page == MAP_FAILED)
		goto fail_inval;
	attach_thread = pthread_self();
	heap_fix();
	proc_token = rep.u.hello.token;
	info.host_index = rep.u.hello.host_index;
	info.addr = rep.u.hello.addr;
	info.nhosts = rep.u.hello.nhosts;
	info.lid = rep.u.hello.lid;
	info.sm_lid = rep.u.hello.sm_lid;
	info.lanes = rep.u.hello.lanes;
	info.speed = rep.u.hello.speed;
	info.mtu_code = rep.u.hello.mtu_code;
	info.link_layer = rep.u.hello.link_layer;
	info.atomics = rep.u.hello.atomics;
	info.faults = rep.u.hello.faults != 0;
	info.guid = rep.u.hello.guid;
	alive_slot = rep.u.hello.alive_slot < SHIM_ALIVE_SLOTS ? (int)rep.u.hello.alive_slot : -1;
	memcpy(info.host, rep.u.hello.host, sizeof(info.host));
	info.host[sizeof(info.host) - 1] = 0;
	memcpy(info.fabric, rep.u.hello.fabric, sizeof(info.fabric));
	info.fabric[sizeof(info.fabric) - 1] = 0;
	__atomic_store_n(&clock_page, (const struct shim_clock *)page, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&once);
	pend_end();
	return 0;
fail_inval:
	pthread_mutex_unlock(&once);
	errno = EINVAL;
	return -1;
}

/* ---- the clock ---------------------------------------------------------- */

/*
 * The clock for a program that reads it (sim_read; the emulated rdtsc,
 * shim_tsc.c). From the instant the daemon counts the process as running
 * on, the clock stands still while it runs; if it has moved since, the
 * daemon took the program for spinning on its memory (or asleep where the
 * shim cannot see) after a while of CPU without a word, and lets it run on
 * to the next events as fast as the host runs the others. A program that
 * reads the clock computes with time: say it runs (SHIM_OP_RUNS), so that
 * the clock stops now, and what it reads from here on moves only in its
 * waits. perftest's cycle-counter calibration, right after its peak search
 * (a long computation, taken for a spin), otherwise read its first
 * sample's counter and time tens of milliseconds apart on a loaded host
 * (r^2 < 0.9: "Can't produce a report"). Not while this thread holds its
 * connection (a signal handler's read inside the shim), nor on a thread
 * that has never had an answer (no connection of its own yet).
 */
uint64_t shim_clock_runs(void)
{
	const struct shim_clock *pg = clock_page;

	if (!pg)
		return 0;	/* not attached (yet): another thread may be attaching */
	uint64_t now = pg->now_ps;
	/* One thread: the daemon's stamp says from when it counts the process
	 * as running - also since bytes landed on its memory while it spun,
	 * which no answer shows: ib_write_lat's every exchange, a round trip
	 * a side saved. Threads: this thread's last answer (another's wait
	 * also moves the clock; the turn goes to a thread that speaks). */
	bool moved = alive_slot >= 0 && !threads_joined ? now != pg->alive_ps[alive_slot] :
		     now != answered_at;

	if (moved && answered_at != UINT64_MAX && !in_conn) {
		struct shim_req req = { .op = SHIM_OP_RUNS };
		struct shim_rep rep;
		int e = errno;

		shim_rpc(&req, NULL, 0, -1, &rep, NULL);
		errno = e;
		now = pg->now_ps;
	}
	return now;
}

/*
 * Every read of the simulated clock. A program that reads it hundreds of
 * times without anything else happening is busy-waiting for time to pass:
 * tell the daemon, which parks it until the clock moves (else the clock,
 * frozen while the program runs, would never move).
 */
static uint64_t sim_read(void)
{
	uint64_t now = shim_clock_runs();

	if (now != last_seen) {
		last_seen = now;
		same_reads = 0;
	} else if (++same_reads >= CLOCK_SPIN_READS) {
		struct shim_req req = { .op = SHIM_OP_CLOCK_WAIT, .u.clock.seen = now };
		struct shim_rep rep;

		shim_rpc(&req, NULL, 0, -1, &rep, NULL);
		now = clock_page->now_ps;
		last_seen = now;
	}
	return now;
}

/* Interposed libc functions: exported unversioned, so they match the
 * programs' versioned references (GLIBC_2.2.5) ahead of libc. */
#define SHIM_INTERPOSE __attribute__((visibility("default")))

/*
 * glibc declares tv and ts nonnull, and the compiler then deletes a test
 * of them against NULL (gcc 12 did, -Wnonnull-compare silenced or not).
 * But Linux documents gettimeofday(NULL, tz) as valid, and programs pass
 * it: the pointer goes through an empty asm, which the compiler cannot see
 * into, before it is tested.
 */
static inline void *shim_opaque(void *p)
{
	__asm__("" : "+r"(p));
	return p;
}

#define REAL(name) \
	static __typeof__(name) *real_##name; \
	if (!real_##name) real_##name = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

SHIM_INTERPOSE int gettimeofday(struct timeval *restrict tv_, void *restrict tz)
{
	struct timeval *tv = shim_opaque(tv_);

	REAL(gettimeofday);
	if (!clock_page)
		return real_gettimeofday(tv, tz);
	if (tv) {
		uint64_t ps = sim_read();

		tv->tv_sec = (time_t)(clock_page->epoch_s + ps / 1000000000000ULL);
		tv->tv_usec = (suseconds_t)(ps % 1000000000000ULL / 1000000);
	}
	if (tz)		/* UTC, as glibc has filled it since 2.31 */
		memset(tz, 0, sizeof(struct timezone));
	return 0;
}

SHIM_INTERPOSE int clock_gettime(clockid_t id, struct timespec *ts_)
{
	struct timespec *ts = shim_opaque(ts_);

	REAL(clock_gettime);
	if (!clock_page || !ts)
		return real_clock_gettime(id, ts);
	switch (id) {
	case CLOCK_REALTIME:
	case CLOCK_REALTIME_COARSE:
	case CLOCK_MONOTONIC:
	case CLOCK_MONOTONIC_RAW:
	case CLOCK_MONOTONIC_COARSE:
	case CLOCK_BOOTTIME: {
		uint64_t ps = sim_read();
		uint64_t base = (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE) ?
				clock_page->epoch_s : 1000;

		ts->tv_sec = (time_t)(base + ps / 1000000000000ULL);
		ts->tv_nsec = (long)(ps % 1000000000000ULL / 1000);
		return 0;
	}
	default:	/* CPU-time clocks stay real */
		return real_clock_gettime(id, ts);
	}
}

SHIM_INTERPOSE time_t time(time_t *t)
{
	REAL(time);
	if (!clock_page)
		return real_time(t);
	time_t v = (time_t)(clock_page->epoch_s + sim_read() / 1000000000000ULL);

	if (t)
		*t = v;
	return v;
}

/* ---- names: the fabric's hosts ------------------------------------------ */

/*
 * Under the shim, a simulated host's name is its address (127.1.0.0 + k + 1,
 * shim_proto.h), read from the hosts file the daemon writes beside its
 * socket: `qperf h3` and `ib_write_bw -R h3` reach the program on h3, whose
 * TCP side channel listens on that loopback address too. No attach: the
 * file is read on each lookup (a program looks up few names). Names are
 * matched without regard to case, as DNS matches them.
 */
static bool fabric_addr(const char *name, char *out, size_t len)
{
	char path[200], line[256];
	bool found = false;
	struct in_addr a;
	FILE *f;

	if (!name || !*name || inet_pton(AF_INET, name, &a) == 1 ||
	    sock_path(path, sizeof(path) - sizeof(SHIM_HOSTS_SUFFIX)))
		return false;
	strcat(path, SHIM_HOSTS_SUFFIX);
	if (!(f = fopen(path, "re")))
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char addr[16], host[SHIM_NAME_LEN + 1];

		if (line[0] != '#' && sscanf(line, "%15s %64s", addr, host) == 2 &&
		    !strcasecmp(host, name) && strlen(addr) < len) {
			strcpy(out, addr);
			found = true;
		}
	}
	fclose(f);
	return found;
}

SHIM_INTERPOSE int getaddrinfo(const char *restrict node, const char *restrict service,
			       const struct addrinfo *restrict hints, struct addrinfo **restrict res)
{
	char a[16];

	REAL(getaddrinfo);
	if ((!hints || hints->ai_family == AF_UNSPEC || hints->ai_family == AF_INET) &&
	    fabric_addr(node, a, sizeof(a))) {
		struct addrinfo h;

		if (hints)
			h = *hints;
		else
			memset(&h, 0, sizeof(h));
		h.ai_family = AF_INET;
		h.ai_flags |= AI_NUMERICHOST;
		return real_getaddrinfo(a, service, &h, res);
	}
	return real_getaddrinfo(node, service, hints, res);
}

SHIM_INTERPOSE struct hostent *gethostbyname(const char *name)
{
	char a[16];

	REAL(gethostbyname);
	return real_gethostbyname(fabric_addr(name, a, sizeof(a)) ? a : name);
}

/*
 * The simulated host's network interface: the first entry getifaddrs()
 * gives, named as a ConnectX's would be (ib0 for IPoIB; the RDMA device's
 * name on the RoCE fabric), UP and RUNNING, with the host's address in
 * 127.0.0.0/8. libfabric's verbs provider offers connected endpoints only
 * on a device that has such an address (it binds an rdma_cm id to each
 * interface's address and keeps those that land on a device), and MPI and
 * UCX choose their interfaces the same way. The machine's own interfaces
 * follow; rdma_cm refuses their addresses (EADDRNOTAVAIL), as a host whose
 * NIC is not on the fabric would.
 */
struct fab_ifa {
	struct ifaddrs ifa;
	struct sockaddr_in addr, mask, brd;
	char name[IFNAMSIZ];
};

static pthread_mutex_t ifa_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fab_ifa *ifa_list[16];	/* given out, not yet freed */

SHIM_INTERPOSE int getifaddrs(struct ifaddrs **out)
{
	struct fab_ifa *f;
	struct ifaddrs *real = NULL;
	int rc;

	REAL(getifaddrs);
	rc = real_getifaddrs(&real);
	if (rc || !shim_attached() || !(f = calloc(1, sizeof(*f)))) {
		*out = real;
		return rc;
	}
	pthread_mutex_lock(&ifa_lock);
	size_t i = 0;

	while (i < sizeof(ifa_list) / sizeof(ifa_list[0]) && ifa_list[i])
		i++;
	if (i == sizeof(ifa_list) / sizeof(ifa_list[0])) {
		pthread_mutex_unlock(&ifa_lock);
		free(f);
		*out = real;
		return 0;
	}
	ifa_list[i] = f;
	pthread_mutex_unlock(&ifa_lock);
	snprintf(f->name, sizeof(f->name), "%s",
		 info.link_layer == 2 /* IBV_LINK_LAYER_ETHERNET */ ? SHIM_DEV_NAME : "ib0");
	f->addr = (struct sockaddr_in){ .sin_family = AF_INET,
					.sin_addr.s_addr = htonl(info.addr) };
	f->mask = (struct sockaddr_in){ .sin_family = AF_INET, .sin_addr.s_addr = htonl(0xff000000u) };
	f->brd = (struct sockaddr_in){ .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7fffffffu) };
	f->ifa.ifa_next = real;
	f->ifa.ifa_name = f->name;
	f->ifa.ifa_flags = IFF_UP | IFF_RUNNING | IFF_BROADCAST | IFF_MULTICAST;
	f->ifa.ifa_addr = (struct sockaddr *)&f->addr;
	f->ifa.ifa_netmask = (struct sockaddr *)&f->mask;
	f->ifa.ifa_broadaddr = (struct sockaddr *)&f->brd;
	*out = &f->ifa;
	return 0;
}

SHIM_INTERPOSE void freeifaddrs(struct ifaddrs *ifa)
{
	REAL(freeifaddrs);
	pthread_mutex_lock(&ifa_lock);
	for (size_t i = 0; ifa && i < sizeof(ifa_list) / sizeof(ifa_list[0]); i++)
		if (ifa_list[i] && &ifa_list[i]->ifa == ifa) {
			struct ifaddrs *real = ifa->ifa_next;

			free(ifa_list[i]);
			ifa_list[i] = NULL;
			ifa = real;
			break;
		}
	pthread_mutex_unlock(&ifa_lock);
	if (ifa)
		real_freeifaddrs(ifa);
}

/*
 * The device's character file. UCX lists an IB device only if
 * /dev/infiniband/<dev_name> is a character device it may read and write
 * (uct_ib_device_is_accessible); the simulated HCA has none, so stat() and
 * access() of that one path answer as for a real uverbs0 (major 231, minor
 * 192, 0666). Opening it still fails: nothing but the shim drives the
 * device.
 */
#define SHIM_UVERBS_PATH "/dev/infiniband/uverbs0"

SHIM_INTERPOSE int stat(const char *restrict path, struct stat *restrict st)
{
	REAL(stat);
	if (!strcmp(path, SHIM_UVERBS_PATH)) {
		memset(st, 0, sizeof(*st));
		st->st_mode = S_IFCHR | 0666;
		st->st_rdev = makedev(231, 192);
		st->st_nlink = 1;
		st->st_blksize = 4096;
		return 0;
	}
	return real_stat(path, st);
}

SHIM_INTERPOSE int access(const char *path, int mode)
{
	REAL(access);
	if (!strcmp(path, SHIM_UVERBS_PATH))
		return mode & X_OK ? (errno = EACCES, -1) : 0;
	return real_access(path, mode);
}

/* ---- the interval timer: SIGALRM in simulated time ---------------------- */

/*
 * setitimer(ITIMER_REAL) and alarm() count simulated time: the daemon sends
 * the process SIGALRM when the clock reaches the deadline (the program then
 * waits, so the signal lands at that simulated instant, and a blocking call
 * it interrupts returns EINTR as it would). qperf times its tests this way,
 * perftest's -D too. Other timers stay real. times() returns simulated
 * ticks (qperf's elapsed time); its CPU times stay real.
 */
static pthread_mutex_t alarm_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t alarm_at, alarm_every;	/* ps; alarm_at 0: disarmed */

static uint64_t tv_ps(const struct timeval *tv)
{
	return (uint64_t)tv->tv_sec * 1000000000000ULL + (uint64_t)tv->tv_usec * 1000000ULL;
}

static void ps_tv(struct timeval *tv, uint64_t ps)
{
	tv->tv_sec = (time_t)(ps / 1000000000000ULL);
	tv->tv_usec = (suseconds_t)(ps % 1000000000000ULL / 1000000);
}

SHIM_INTERPOSE int setitimer(__itimer_which_t which, const struct itimerval *restrict nv,
			     struct itimerval *restrict ov)
{
	struct shim_req req = { .op = SHIM_OP_ALARM };
	struct shim_rep rep;
	uint64_t now;

	REAL(setitimer);
	if (!clock_page || which != ITIMER_REAL || !nv)
		return real_setitimer(which, nv, ov);
	now = clock_page->now_ps;
	pthread_mutex_lock(&alarm_lock);
	if (ov) {
		memset(ov, 0, sizeof(*ov));
		if (alarm_at)
			ps_tv(&ov->it_value, alarm_at > now ? alarm_at - now : 1000000);
		ps_tv(&ov->it_interval, alarm_every);
	}
	alarm_every = tv_ps(&nv->it_interval);
	alarm_at = tv_ps(&nv->it_value) ? now + tv_ps(&nv->it_value) : 0;
	req.u.alarm.at = alarm_at;
	req.u.alarm.every = alarm_every;
	pthread_mutex_unlock(&alarm_lock);
	return shim_rpc(&req, NULL, 0, -1, &rep, NULL) ? -1 : 0;
}

SHIM_INTERPOSE int getitimer(__itimer_which_t which, struct itimerval *v)
{
	uint64_t now;

	REAL(getitimer);
	if (!clock_page || which != ITIMER_REAL || !v)
		return real_getitimer(which, v);
	now = clock_page->now_ps;
	pthread_mutex_lock(&alarm_lock);
	/* an expired one-shot timer (the daemon has sent its signal) reads 0 */
	if (alarm_at && alarm_at <= now) {
		if (alarm_every)
			alarm_at += ((now - alarm_at) / alarm_every + 1) * alarm_every;
		else
			alarm_at = 0;
	}
	memset(v, 0, sizeof(*v));
	if (alarm_at)
		ps_tv(&v->it_value, alarm_at - now);
	ps_tv(&v->it_interval, alarm_every);
	pthread_mutex_unlock(&alarm_lock);
	return 0;
}

SHIM_INTERPOSE unsigned int alarm(unsigned int seconds)
{
	struct itimerval nv = { .it_value = { .tv_sec = seconds } }, ov;

	REAL(alarm);
	if (!clock_page)
		return real_alarm(seconds);
	getitimer(ITIMER_REAL, &ov);
	if (setitimer(ITIMER_REAL, &nv, NULL))
		return 0;
	/* the seconds left of the previous one, rounded up as the kernel's */
	return (unsigned int)ov.it_value.tv_sec + (ov.it_value.tv_usec > 0);
}

SHIM_INTERPOSE clock_t times(struct tms *buf)
{
	long hz = sysconf(_SC_CLK_TCK);

	REAL(times);
	if (!clock_page || hz <= 0)
		return real_times(buf);
	if (buf && real_times(buf) == (clock_t)-1)
		return (clock_t)-1;
	/* ticks since an arbitrary start: 1000 s, as CLOCK_MONOTONIC's base */
	return (clock_t)((1000ULL * 1000000000000ULL + sim_read()) / (1000000000000ULL / (uint64_t)hz));
}

/* ---- waiting: sleeps ---------------------------------------------------- */

/* Sleep ps of simulated time: 0, or the picoseconds left when SIGALRM (the
 * simulated interval timer's) interrupted it, with errno EINTR. */
static uint64_t sim_sleep_ps(uint64_t ps)
{
	struct shim_req req = { .op = SHIM_OP_SLEEP, .u.sleep.ps = ps };
	struct shim_rep rep;
	uint64_t end = clock_page->now_ps + ps;

	if (shim_rpc(&req, NULL, 0, -1, &rep, NULL) != EINTR)
		return 0;
	errno = EINTR;
	return end > clock_page->now_ps ? end - clock_page->now_ps : 1;
}

SHIM_INTERPOSE unsigned int sleep(unsigned int s)
{
	uint64_t left;

	REAL(sleep);
	if (!clock_page)
		return real_sleep(s);
	left = sim_sleep_ps((uint64_t)s * 1000000000000ULL);
	return (unsigned int)((left + 999999999999ULL) / 1000000000000ULL);
}

SHIM_INTERPOSE int usleep(useconds_t us)
{
	REAL(usleep);
	if (!clock_page)
		return real_usleep(us);
	return sim_sleep_ps((uint64_t)us * 1000000ULL) ? -1 : 0;
}

/*
 * sched_yield in a process whose threads take turns (a second thread has
 * joined): the daemon lets another of its threads that can run have the
 * turn, and answers when it comes back (docs/shim.md, "Threads"). A thread
 * that has never called the shim, or a process with one thread that does,
 * yields to the host's scheduler only.
 */
SHIM_INTERPOSE int sched_yield(void)
{
	struct shim_req q = { .op = SHIM_OP_YIELD };
	struct shim_rep rep;
	bool joined;

	REAL(sched_yield);
	/* not under conn_lock: the first thread holds it through its own
	 * calls, parked polls included, and this one must not wait on it */
	joined = __atomic_load_n(&threads_joined, __ATOMIC_RELAXED) &&
		 !__atomic_load_n(&conn_dead, __ATOMIC_RELAXED);
	if (clock_page && joined &&
	    (pthread_equal(pthread_self(), attach_thread) ? conn_fd >= 0 : thread_conn >= 0))
		shim_rpc(&q, NULL, 0, -1, &rep, NULL);
	return real_sched_yield();
}

SHIM_INTERPOSE int nanosleep(const struct timespec *req, struct timespec *rem)
{
	uint64_t left;

	REAL(nanosleep);
	if (!clock_page || !req)
		return real_nanosleep(req, rem);
	left = sim_sleep_ps((uint64_t)req->tv_sec * 1000000000000ULL + (uint64_t)req->tv_nsec * 1000);
	if (rem) {
		rem->tv_sec = (time_t)(left / 1000000000000ULL);
		rem->tv_nsec = (long)(left % 1000000000000ULL / 1000);
	}
	return left ? -1 : 0;
}

/* ---- waiting: blocking reads on sockets and pipes ----------------------- */

/*
 * Would the real call have been restarted after the signal that interrupted
 * the wait? Which signal it was is not known: yes, unless some caught
 * signal's handler does not ask for restarting (SA_RESTART).
 */
static bool restartable(void)
{
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction sa;

		if (sigaction(sig, NULL, &sa) || sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN)
			continue;
		if (!(sa.sa_flags & SA_RESTART))
			return false;
	}
	return true;
}

/*
 * A blocking wait of a program on its way, on wfd (a descriptor, or an
 * epoll set of the program's), reported: 1 the wait is over (p is ready),
 * 0 not reported (another thread reports one, or the announcement is
 * over: the real call blocks, counted as running), -1 EINTR.
 */
static int pend_wait(int wfd, struct pollfd *p, nfds_t n)
{
	struct shim_req begin = { .op = SHIM_OP_IO_BEGIN }, end = { .op = SHIM_OP_IO_END };
	struct shim_rep rep;
	int r, e = errno;

	REAL(poll);
	if (atomic_flag_test_and_set(&pend_busy))
		return 0;
	if (!pend_on() || send_msg(pend_fd, &begin, sizeof(begin), NULL, 0, wfd)) {
		r = 0;
		goto out;
	}
	while ((r = real_poll(p, n, -1)) < 0 && errno == EINTR && restartable())
		;
	e = r < 0 ? errno : e;
	if (!pend_over)
		(void)(send_msg(pend_fd, &end, sizeof(end), NULL, 0, -1) ||
		       recv_msg(pend_fd, &rep, sizeof(rep), NULL));
	r = r < 0 ? -1 : 1;
out:
	pthread_mutex_lock(&pend_lock);
	if (pend_over && pend_fd >= 0) {
		close(pend_fd);	/* attached meanwhile: ours to close */
		pend_fd = -1;
	}
	pthread_mutex_unlock(&pend_lock);
	atomic_flag_clear(&pend_busy);
	errno = e;
	return r;
}

/*
 * Before a read that may block: hand the daemon a duplicate of the fd
 * (IO_BEGIN), wait until the fd is readable, then say so (IO_END) and read
 * only once the daemon has answered. The daemon counts the program as
 * waiting only while that fd has nothing to read, which it checks itself;
 * and the bytes stay unread until it has answered, so it sees them however
 * late the host scheduler runs either side. The clock then cannot move
 * between a peer writing the bytes and this program running again: runs
 * stay deterministic whatever the host's load.
 *
 * 0: go on with the real call (it finds the fd readable). -1 with errno
 * EINTR: a signal whose handler does not restart calls interrupted the
 * wait, as it would have interrupted the real call.
 */
static uint32_t fd_outside(int fd);

static int io_wait(int fd)
{
	struct shim_req begin = { .op = SHIM_OP_IO_BEGIN }, end = { .op = SHIM_OP_IO_END };
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct shim_rep rep;
	struct stat st;
	int fl, r, e = errno;

	if ((!clock_page && !pend_on()) || conn_dead || fd == conn_fd || fd == thread_conn ||
	    fd == pend_fd || fstat(fd, &st) || !(S_ISSOCK(st.st_mode) || S_ISFIFO(st.st_mode)))
		goto pass;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (fl & O_NONBLOCK))
		goto pass;
	if (!clock_page) {	/* on its way: the wait is reported all the same */
		if (pend_wait(fd, &p, 1) < 0)
			return -1;
		goto pass;
	}
	REAL(poll);
	begin.u.io.outside = fd_outside(fd);
	shim_notify(&begin, fd);
	while ((r = real_poll(&p, 1, -1)) < 0 && errno == EINTR && restartable())
		;
	if (r < 0 && errno == EINTR) {
		shim_rpc(&end, NULL, 0, -1, &rep, NULL);
		errno = EINTR;
		return -1;
	}
	shim_rpc(&end, NULL, 0, -1, &rep, NULL);
pass:
	errno = e;
	return 0;
}

/* ---- waiting: poll, select, epoll --------------------------------------- */

/*
 * Which descriptors the fabric makes readable: one bit per fd below
 * FABRIC_FDS (a channel's eventfd is a low number; one above is not
 * counted, and a wait on it alone then holds the clock as a socket does).
 */
#define FABRIC_FDS 65536
static _Atomic uint64_t fabric_fds[FABRIC_FDS / 64];

void shim_fabric_fd(int fd, bool on)
{
	if (fd < 0 || fd >= FABRIC_FDS)
		return;
	if (on)
		atomic_fetch_or(&fabric_fds[fd / 64], 1ULL << (fd % 64));
	else
		atomic_fetch_and(&fabric_fds[fd / 64], ~(1ULL << (fd % 64)));
}

static bool is_fabric_fd(int fd)
{
	return fd >= 0 && fd < FABRIC_FDS &&
	       (atomic_load(&fabric_fds[fd / 64]) >> (fd % 64) & 1);
}

/*
 * Whether a descriptor may be made ready by a process outside the
 * simulation, in real time (SHIM_IO_OUTSIDE): a socket (mpirun's daemon
 * answering a rank's PMIx request over TCP), a pipe this process does not
 * hold the write end of (stdin from a launcher), a terminal. A socket pair
 * made by this process counts as its own (its peer's credentials are ours;
 * one shared with a child it forked is taken for its own too). Event,
 * timer and signal descriptors, epoll sets (their members are looked at
 * by the caller) and files are this process's. The daemon lets a timeout
 * end such a wait only once it has passed in real time as well, and waits
 * a while from the wait's start for the answer (OUTSIDE_HOLD_S) unless
 * the other end is a simulated host's program as far as the shim can tell
 * (SHIM_IO_OUTSIDER not set: a TCP connection to or from a host's
 * address). docs/shim.md, "Waiting on the outside".
 */
static bool pipe_self_held(ino_t ino)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static struct { ino_t ino; bool self; } seen[64];
	static unsigned nseen;
	char want[48], path[64], link[64];
	bool self = false, found = false;
	DIR *d;
	struct dirent *e;

	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < nseen && i < 64; i++)
		if (seen[i].ino == ino) {
			self = seen[i].self;
			found = true;
		}
	pthread_mutex_unlock(&lock);
	if (found)
		return self;
	/* both ends here: an fd on this pipe open for writing */
	snprintf(want, sizeof(want), "pipe:[%lu]", (unsigned long)ino);
	if ((d = opendir("/proc/self/fd"))) {
		while (!self && (e = readdir(d))) {
			ssize_t l;
			int fd = atoi(e->d_name);

			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
			l = readlink(path, link, sizeof(link) - 1);
			if (l <= 0)
				continue;
			link[l] = 0;
			if (!strcmp(link, want) && (fcntl(fd, F_GETFL) & O_ACCMODE) != O_RDONLY)
				self = true;
		}
		closedir(d);
	}
	pthread_mutex_lock(&lock);
	seen[nseen++ % 64].ino = ino;
	seen[(nseen - 1) % 64].self = self;
	pthread_mutex_unlock(&lock);
	return self;
}

/*
 * Whether an IPv4 (or IPv4-mapped IPv6) address is one of the fabric's
 * hosts' (shim_host_addr): a connection dialled to a host's name has it at
 * both ends, as the peer's address at the dialling end and as the local
 * one at the accepting end (the kernel picks 127.0.0.1 as the source).
 */
static bool host_sockaddr(const struct sockaddr_storage *ss)
{
	uint32_t a;

	if (ss->ss_family == AF_INET) {
		a = ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr);
	} else if (ss->ss_family == AF_INET6 &&
		   IN6_IS_ADDR_V4MAPPED(&((const struct sockaddr_in6 *)ss)->sin6_addr)) {
		memcpy(&a, &((const struct sockaddr_in6 *)ss)->sin6_addr.s6_addr[12], sizeof(a));
		a = ntohl(a);
	} else {
		return false;
	}
	int64_t h = shim_addr_host(a);

	return h >= 0 && h < (int64_t)info.nhosts;
}

static uint32_t fd_outside(int fd)
{
	const uint32_t out = SHIM_IO_OUTSIDE | SHIM_IO_OUTSIDER;
	struct stat st;

	if (is_fabric_fd(fd) || fstat(fd, &st))
		return 0;
	if (S_ISSOCK(st.st_mode)) {
		struct ucred u;
		struct sockaddr_storage ss;
		int dom;
		socklen_t l = sizeof(dom);

		if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l))
			return out;
		if (dom == AF_INET || dom == AF_INET6) {
			/* a connection to or from a simulated host's address
			 * (its name, resolved by the shim): a simulated program
			 * is at the other end (perftest's, qperf's side
			 * channel) - which may not have attached yet (qperf's
			 * server forks one for each test), so its timeouts
			 * still pass in real time as well */
			l = sizeof(ss);
			if (!getsockname(fd, (struct sockaddr *)&ss, &l) && host_sockaddr(&ss))
				return SHIM_IO_OUTSIDE;
			l = sizeof(ss);
			if (!getpeername(fd, (struct sockaddr *)&ss, &l) && host_sockaddr(&ss))
				return SHIM_IO_OUTSIDE;
			return out;
		}
		if (dom != AF_UNIX)
			return out;
		l = sizeof(u);
		return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &u, &l) || u.pid != getpid() ? out : 0;
	}
	if (S_ISFIFO(st.st_mode))
		return pipe_self_held(st.st_ino) ? 0 : out;
	return S_ISCHR(st.st_mode) && isatty(fd) ? out : 0;
}

/* A fabric channel among the descriptors, or among the members of an epoll
 * set among them (one level: its "tfd:" lines in /proc/self/fdinfo); and
 * what of fd_outside's any of them has (SHIM_IO_OUTSIDE bits). */
static void wait_fds(const struct pollfd *fds, nfds_t n, bool *fabric, uint32_t *outside)
{
	const uint32_t all = SHIM_IO_OUTSIDE | SHIM_IO_OUTSIDER;

	*fabric = false;
	*outside = 0;
	for (nfds_t i = 0; i < n && (!*fabric || *outside != all); i++) {
		char path[64], line[256];
		FILE *f;
		struct stat st;

		if (fds[i].fd < 0)
			continue;
		if (is_fabric_fd(fds[i].fd)) {
			*fabric = true;
			continue;
		}
		if (*outside != all)
			*outside |= fd_outside(fds[i].fd);
		/* an epoll set (anonymous inode): look at its members */
		if (fstat(fds[i].fd, &st) || S_ISSOCK(st.st_mode) || S_ISFIFO(st.st_mode) ||
		    S_ISREG(st.st_mode))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fds[i].fd);
		if (!(f = fopen(path, "re")))
			continue;
		while (fgets(line, sizeof(line), f)) {
			int t;

			if (sscanf(line, "tfd: %d", &t) != 1)
				continue;
			if (is_fabric_fd(t))
				*fabric = true;
			else if (*outside != all)
				*outside |= fd_outside(t);
		}
		fclose(f);
	}
}

/*
 * A program that waits in poll(), select() or epoll_wait() (an event loop
 * on its completion channel's fd, a socket, an rdma_cm channel) waits as a
 * blocking read does (io_wait), for any of its descriptors: the shim puts
 * them in an epoll set of its own and hands the daemon that one fd, which
 * is readable when any of them is ready; the daemon counts the program as
 * waiting while it is not. A timeout counts simulated time: the daemon
 * says when it has passed (a reply marked SHIM_IO_TIMEOUT on the
 * connection, which the shim polls beside the program's descriptors).
 * Then the program's own call runs once more without blocking and returns
 * what it finds.
 *
 * ps: the timeout in simulated picoseconds, UINT64_MAX for none. 1: the
 * wait is over, the real call runs without blocking; 0: not watched (not
 * attached, no timeout, nothing to wait for, or a descriptor epoll cannot
 * take), the real call as asked; -1 with errno EINTR: a signal whose
 * handler does not restart calls interrupted it.
 */
static int poll_wait(const struct pollfd *fds, nfds_t n, uint64_t ps)
{
	struct shim_req begin = { .op = SHIM_OP_IO_BEGIN }, end = { .op = SHIM_OP_IO_END };
	struct shim_rep rep;
	struct pollfd *p;
	int ep, r, e = errno, cfd;
	bool mine = !proc_token || pthread_equal(pthread_self(), attach_thread);
	bool *dead = mine ? &conn_dead : &thread_dead;
	/* on its way (pend_wait): a wait without a timeout is reported */
	bool pend = !clock_page && ps == UINT64_MAX && pend_on();

	if ((!clock_page && !pend) || *dead || !n || n > 4096 || !ps)
		return 0;
	cfd = pend ? pend_fd : mine ? conn_fd : thread_fd();
	if (cfd < 0)
		return 0;
	/* ready already (or a descriptor epoll cannot watch: a regular file
	 * is always ready) */
	REAL(poll);
	if (real_poll((struct pollfd *)fds, n, 0) != 0)
		return 0;
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		return 0;
	for (nfds_t i = 0; i < n; i++) {
		struct epoll_event ev = { .events = EPOLLERR | EPOLLHUP };

		if (fds[i].fd < 0)
			continue;
		if (fds[i].events & POLLIN)
			ev.events |= EPOLLIN;
		if (fds[i].events & POLLOUT)
			ev.events |= EPOLLOUT;
		if (fds[i].events & POLLPRI)
			ev.events |= EPOLLPRI;
		ev.data.fd = fds[i].fd;
		if (!epoll_ctl(ep, EPOLL_CTL_ADD, fds[i].fd, &ev))
			continue;
		if (errno != EEXIST) {
			close(ep);	/* not watchable: the real call decides */
			errno = e;
			return 0;
		}
		/* the same fd twice: watch the union of its events */
		for (nfds_t j = 0; j < i; j++)
			if (fds[j].fd == fds[i].fd)
				ev.events |= (fds[j].events & POLLIN ? EPOLLIN : 0) |
					     (fds[j].events & POLLOUT ? EPOLLOUT : 0) |
					     (fds[j].events & POLLPRI ? EPOLLPRI : 0);
		epoll_ctl(ep, EPOLL_CTL_MOD, fds[i].fd, &ev);
		errno = e;
	}
	p = malloc((n + 1) * sizeof(*p));
	if (!p) {
		close(ep);
		return 0;
	}
	memcpy(p, fds, n * sizeof(*p));
	if (pend) {
		r = pend_wait(ep, p, n);
		close(ep);
		free(p);
		return r;
	}
	/* the daemon's word that the timeout passed comes on the connection
	 * (without a timeout it never does: -1 is skipped) */
	p[n] = (struct pollfd){ .fd = ps == UINT64_MAX ? -1 : cfd, .events = POLLIN };
	begin.u.io.deadline = ps == UINT64_MAX ? 0 : clock_page->now_ps + ps;
	{
		bool fabric;
		uint32_t outside;

		wait_fds(fds, n, &fabric, &outside);
		begin.u.io.fabric = fabric;
		begin.u.io.outside = outside;
	}
	shim_notify(&begin, ep);
	close(ep);
	while ((r = real_poll(p, n + 1, -1)) < 0 && errno == EINTR && restartable())
		;
	e = r < 0 ? errno : e;
	free(p);
	if (mine)
		pthread_mutex_lock(&conn_lock);
	if (!*dead && !send_msg(cfd, &end, sizeof(end), NULL, 0, -1)) {
		/* the daemon may have said the timeout passed before IO_END */
		if (recv_msg(cfd, &rep, sizeof(rep), NULL) <= 0 ||
		    (rep.count == SHIM_IO_TIMEOUT && recv_msg(cfd, &rep, sizeof(rep), NULL) <= 0))
			*dead = true;
	} else {
		*dead = true;
	}
	same_reads = 0;
	if (mine)
		pthread_mutex_unlock(&conn_lock);
	errno = e;
	return r < 0 ? -1 : 1;
}

/* A timeout in ms (poll, epoll_wait: < 0 none) or a timespec/timeval (NULL
 * none) in simulated picoseconds, UINT64_MAX for none. */
static uint64_t ms_ps(int ms)
{
	return ms < 0 ? UINT64_MAX : (uint64_t)ms * 1000000000ULL;
}

static uint64_t ts_ps(const struct timespec *ts)
{
	return !ts ? UINT64_MAX : (uint64_t)ts->tv_sec * 1000000000000ULL + (uint64_t)ts->tv_nsec * 1000;
}

/* A wait on no descriptor is a sleep (select(0, ..., &tv) is an old idiom). */
static bool poll_sleep(nfds_t n, uint64_t ps)
{
	if (!clock_page || n || ps == UINT64_MAX)
		return false;
	if (ps)
		sim_sleep_ps(ps);
	return true;
}

SHIM_INTERPOSE int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	int w;

	REAL(poll);
	if (poll_sleep(n, ms_ps(timeout)))
		return 0;
	if ((w = poll_wait(fds, n, ms_ps(timeout))) < 0)
		return -1;
	return real_poll(fds, n, w ? 0 : timeout);
}

/* Block until fd is readable, as a program's poll() on it would: waiting
 * in simulated time when the daemon watches it (a fabric fd). 0, or -1
 * with errno. */
int shim_wait_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int w, r;

	REAL(poll);
	for (;;) {
		if ((w = poll_wait(&p, 1, UINT64_MAX)) < 0) {
			if (errno == EINTR && restartable())
				continue;
			return -1;
		}
		r = real_poll(&p, 1, w ? 0 : -1);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -1;
	}
}

SHIM_INTERPOSE int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo,
			 const sigset_t *mask)
{
	static const struct timespec zero;
	int w;

	REAL(ppoll);
	if (poll_sleep(n, ts_ps(tmo)))
		return 0;
	if ((w = poll_wait(fds, n, ts_ps(tmo))) < 0)
		return -1;
	return real_ppoll(fds, n, w ? &zero : tmo, mask);
}

/* select's sets as poll's array (NULL when too many or out of memory: the
 * real call then decides). */
static struct pollfd *sets_poll(int nfds, fd_set *r, fd_set *w, fd_set *x, nfds_t *n)
{
	struct pollfd *p;

	*n = 0;
	if (nfds < 0 || nfds > FD_SETSIZE || !(p = calloc((size_t)nfds + 1, sizeof(*p))))
		return NULL;
	for (int fd = 0; fd < nfds; fd++) {
		short ev = (short)((r && FD_ISSET(fd, r) ? POLLIN : 0) |
				   (w && FD_ISSET(fd, w) ? POLLOUT : 0) |
				   (x && FD_ISSET(fd, x) ? POLLPRI : 0));

		if (ev)
			p[(*n)++] = (struct pollfd){ .fd = fd, .events = ev };
	}
	return p;
}

SHIM_INTERPOSE int select(int nfds, fd_set *restrict r, fd_set *restrict w, fd_set *restrict x,
			  struct timeval *restrict tv)
{
	struct timeval zero = { 0, 0 };
	struct pollfd *p;
	uint64_t ps = tv ? (uint64_t)tv->tv_sec * 1000000000000ULL + (uint64_t)tv->tv_usec * 1000000ULL :
			   UINT64_MAX;
	nfds_t n;
	int k = 0;

	REAL(select);
	if (!clock_page || !(p = sets_poll(nfds, r, w, x, &n)))
		return real_select(nfds, r, w, x, tv);
	if (poll_sleep(n, ps)) {
		free(p);
		if (tv)
			*tv = zero;
		return 0;
	}
	k = poll_wait(p, n, ps);
	free(p);
	if (k < 0)
		return -1;
	return real_select(nfds, r, w, x, k ? &zero : tv);
}

SHIM_INTERPOSE int pselect(int nfds, fd_set *restrict r, fd_set *restrict w, fd_set *restrict x,
			   const struct timespec *restrict tmo, const sigset_t *restrict mask)
{
	static const struct timespec zero;
	struct pollfd *p;
	nfds_t n;
	int k;

	REAL(pselect);
	if (!clock_page || !(p = sets_poll(nfds, r, w, x, &n)))
		return real_pselect(nfds, r, w, x, tmo, mask);
	if (poll_sleep(n, ts_ps(tmo))) {
		free(p);
		return 0;
	}
	k = poll_wait(p, n, ts_ps(tmo));
	free(p);
	if (k < 0)
		return -1;
	return real_pselect(nfds, r, w, x, k ? &zero : tmo, mask);
}

SHIM_INTERPOSE int epoll_wait(int ep, struct epoll_event *ev, int max, int timeout)
{
	struct pollfd p = { .fd = ep, .events = POLLIN };
	int w;

	REAL(epoll_wait);
	if ((w = poll_wait(&p, 1, ms_ps(timeout))) < 0)
		return -1;
	return real_epoll_wait(ep, ev, max, w ? 0 : timeout);
}

SHIM_INTERPOSE int epoll_pwait(int ep, struct epoll_event *ev, int max, int timeout,
			       const sigset_t *mask)
{
	struct pollfd p = { .fd = ep, .events = POLLIN };
	int w;

	REAL(epoll_pwait);
	if ((w = poll_wait(&p, 1, ms_ps(timeout))) < 0)
		return -1;
	return real_epoll_pwait(ep, ev, max, w ? 0 : timeout, mask);
}

SHIM_INTERPOSE ssize_t read(int fd, void *buf, size_t n)
{
	REAL(read);
	if (n && io_wait(fd))	/* reading nothing does not block */
		return -1;
	return real_read(fd, buf, n);
}

/*
 * recv and recvfrom. MSG_WAITALL on a stream socket would block again,
 * unwatched, after the first bytes: gather them here, one watched wait at
 * a time.
 */
static ssize_t recv_watched(int fd, void *buf, size_t n, int flags, struct sockaddr *sa,
			    socklen_t *salen)
{
	REAL(recvfrom);
	int type = 0;
	socklen_t tlen = sizeof(type);
	size_t got = 0;

	if ((flags & MSG_DONTWAIT) || !n)
		return real_recvfrom(fd, buf, n, flags, sa, salen);
	if (!(flags & MSG_WAITALL) || (flags & MSG_PEEK) || !clock_page ||
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) || type != SOCK_STREAM) {
		if (io_wait(fd))
			return -1;
		return real_recvfrom(fd, buf, n, flags, sa, salen);
	}
	while (got < n) {
		ssize_t r;

		if (io_wait(fd))
			return got ? (ssize_t)got : -1;
		r = real_recvfrom(fd, (char *)buf + got, n - got, flags & ~MSG_WAITALL, sa, salen);
		if (r <= 0)
			return got ? (ssize_t)got : r;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

SHIM_INTERPOSE ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	return recv_watched(fd, buf, n, flags, NULL, NULL);
}

SHIM_INTERPOSE ssize_t recvfrom(int fd, void *restrict buf, size_t n, int flags, struct sockaddr *restrict sa,
		 socklen_t *restrict salen)
{
	return recv_watched(fd, buf, n, flags, sa, salen);
}

/* The address family of socket fd, or -1. */
static int sock_family(int fd)
{
	int dom;
	socklen_t l = sizeof(dom);

	return getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l) ? -1 : dom;
}

/*
 * A simulated program's TCP connections send what is written at once
 * (TCP_NODELAY): with Nagle's algorithm, a small write that follows
 * another unacknowledged one waits in the sender's kernel for the peer's
 * ACK, which the peer sends when the host gets round to it (a delayed
 * ACK, or its next read). Bytes held there are in neither program: the
 * reader's wait looks like a wait on nothing, the clock may move, and
 * whether it did before they came would be the host's doing (ucx_perftest
 * sends its address in two writes of 40 and 65 bytes). Without Nagle, a
 * write on the loopback is in the reader's socket when it returns, where
 * the daemon sees it (io_wait). Only the real socket's timing changes;
 * the bytes, and the simulated time they take (none), do not.
 */
static void tcp_nodelay(int fd)
{
	int type = 0, proto = 0, one = 1, dom = sock_family(fd);
	socklen_t l = sizeof(type);

	if ((dom != AF_INET && dom != AF_INET6) ||
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) || type != SOCK_STREAM)
		return;
	l = sizeof(proto);
	if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &l) || proto != IPPROTO_TCP)
		return;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Whether this process is, or is to be, a simulated host's program. */
static bool simulated(void)
{
	char rank_host[24];

	return clock_page || host_named(rank_host);
}

/* A TCP connection taken or made before the first verbs call: the program
 * is on its way (pend_announce). */
SHIM_INTERPOSE int accept(int fd, struct sockaddr *restrict sa, socklen_t *restrict salen)
{
	REAL(accept);
	int r;

	if (!clock_page)
		pend_announce(sock_family(fd));
	if (io_wait(fd))
		return -1;
	r = real_accept(fd, sa, salen);
	if (r >= 0 && simulated())
		tcp_nodelay(r);
	return r;
}

SHIM_INTERPOSE int accept4(int fd, struct sockaddr *restrict sa, socklen_t *restrict salen, int flags)
{
	REAL(accept4);
	int r;

	if (!clock_page)
		pend_announce(sock_family(fd));
	if (io_wait(fd))
		return -1;
	r = real_accept4(fd, sa, salen, flags);
	if (r >= 0 && simulated())
		tcp_nodelay(r);
	return r;
}

SHIM_INTERPOSE int connect(int fd, const struct sockaddr *sa, socklen_t salen)
{
	REAL(connect);
	if (sa && salen >= sizeof(sa_family_t) && (sa->sa_family == AF_INET || sa->sa_family == AF_INET6) &&
	    simulated()) {
		if (!clock_page)
			pend_announce(sa->sa_family);
		tcp_nodelay(fd);
	}
	return real_connect(fd, sa, salen);
}

/*
 * The same round trip for the shim's librdmacm.so.1 (shim/rdmacm.c), which
 * shares this process's connection: exported under the version node
 * IBFAB_SHIM_PRIVATE_1, which no rdma-core library has, so that the
 * replacement librdmacm loads only beside this libibverbs.
 */
__attribute__((visibility("default"))) int
ibfab_shim_rpc(const struct shim_req *req, const void *tail, uint32_t tail_len, int fd_out,
	       struct shim_rep *rep, int *fd_in)
{
	return shim_rpc(req, tail, tail_len, fd_out, rep, fd_in);
}

__attribute__((visibility("default"))) const struct shim_conn_info *ibfab_shim_info(void)
{
	return shim_attached() ? &info : NULL;
}

__attribute__((visibility("default"))) void ibfab_shim_unsupported(const char *what)
{
	shim_unsupported(what);
}

__attribute__((visibility("default"))) void ibfab_shim_fabric_fd(int fd, bool on)
{
	shim_fabric_fd(fd, on);
}
