/* SPDX-License-Identifier: MIT */
/*
 * shim_tsc.c - the time-stamp counter a program reads with rdtsc, made to
 * follow the simulated clock.
 *
 * perftest times every work request with an inline rdtsc (48 sites per
 * binary) and converts cycles to microseconds with a MHz value: the one in
 * /proc/cpuinfo when its own calibration against gettimeofday agrees within
 * 2%. UCX reads the counter inline too (ucs_get_time), with the rate it
 * measured when libucs loaded. rdtsc cannot be interposed (no call), and
 * PR_SET_TSC (prctl(2)) does not trap on virtual machines whose hypervisor
 * hides the TSC's faulting. So at attach time the shim asks a disassembler
 * (objdump; a byte scan would find false positives) for the rdtsc
 * instructions of the executable and of the libraries loaded then (not
 * libc, the dynamic linker, the vDSO or the shim's own), rewrites each
 * 2-byte rdtsc (0f 31) into ud2 (0f 0b), and emulates it in a SIGILL
 * handler: EDX:EAX = the counter at attach + simulated picoseconds since x
 * the rate (UCX's own, read from libucs, where UCX is loaded; else the
 * /proc/cpuinfo MHz). Calibration and readings then agree exactly, the
 * counter never steps back at attach, and cycle counts are simulated time.
 * What objdump finds is kept per file in /tmp/ibfab-tsc-$UID (cache_name).
 * A library loaded after attach keeps the real counter. IBFAB_TSC=0 turns
 * this off.
 */
#define _GNU_SOURCE
#include "shim/shim_int.h"

#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <x86intrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <ucontext.h>
#include <unistd.h>

static uintptr_t *sites;	/* patched addresses, sorted */
static size_t nsites, cap;
static double mhz;
static uint64_t tsc0, ps0;	/* the real counter and simulated time at attach */

uint64_t shim_tsc_hz(void)
{
	return (uint64_t)(mhz * 1e6);
}

static double cpu_mhz(void)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256];
	double v = 0;

	if (!f)
		return 2000;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "cpu MHz : %lf", &v) == 1)
			break;
	fclose(f);
	return v > 0 ? v : 2000;
}

/* The objects to look at: the executable, and the libraries but libc, the
 * dynamic linker, the vDSO and the shim's own (in its directory). An MPI
 * rank has a hundred and more. */
struct obj_at {
	uintptr_t base;
	char *path;
};

struct objs {
	char shim_dir[4096];
	size_t n, cap;
	struct obj_at *o;
};

static int collect(struct dl_phdr_info *info, size_t size, void *data)
{
	struct objs *v = data;
	const char *name = info->dlpi_name, *slash;
	char exe[4096];

	(void)size;
	if (v->n == v->cap) {
		size_t nc = v->cap ? v->cap * 2 : 64;
		struct obj_at *o = realloc(v->o, nc * sizeof(*o));

		if (!o)
			return 1;
		v->o = o;
		v->cap = nc;
	}
	if (!name || !*name) {
		if (v->n)
			return 0;	/* the vDSO (the executable comes first) */
		ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

		if (k <= 0)
			return 0;
		exe[k] = 0;
		name = exe;
	} else {
		slash = strrchr(name, '/');
		if (strstr(name, "linux-vdso") || strstr(name, "ld-linux") ||
		    (slash && !strncmp(slash, "/libc.so", 8)) ||
		    (slash && (size_t)(slash - name) == strlen(v->shim_dir) &&
		     !strncmp(name, v->shim_dir, (size_t)(slash - name))))
			return 0;
	}
	if (!(v->o[v->n].path = strdup(name)))
		return 1;
	v->o[v->n++].base = info->dlpi_addr;
	return 0;
}

static void add_site(uintptr_t at)
{
	if (nsites == cap) {
		size_t nc = cap ? cap * 2 : 64;
		uintptr_t *v = realloc(sites, nc * sizeof(*v));

		if (!v)
			return;
		sites = v;
		cap = nc;
	}
	sites[nsites++] = at;
}

/*
 * What objdump found in a file, kept per user under /tmp (the file's
 * device, inode, size and modification time name it), so that the next
 * process skips the disassembly: UCX's libraries take objdump a second or
 * more on a loaded machine, at every attach.
 */
static bool cache_name(const char *path, char *out, size_t len)
{
	char dir[64];
	struct stat st, d;

	if (stat(path, &st))
		return false;
	/* ours alone: another user's directory could plant a list */
	snprintf(dir, sizeof(dir), "/tmp/ibfab-tsc-%u", (unsigned)getuid());
	if (mkdir(dir, 0700) && errno != EEXIST)
		return false;
	if (lstat(dir, &d) || !S_ISDIR(d.st_mode) || d.st_uid != getuid() || (d.st_mode & 077))
		return false;
	return snprintf(out, len, "/tmp/ibfab-tsc-%u/%llx-%llx-%llx-%llx.%lx", (unsigned)getuid(),
			(unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
			(unsigned long long)st.st_size, (unsigned long long)st.st_mtime,
			(long)st.st_mtim.tv_nsec) < (int)len;
}

static bool cache_read(const char *name, uintptr_t base)
{
	FILE *f = fopen(name, "re");
	char line[64];
	bool ok = false;

	if (!f)
		return false;
	/* the first line says the file is whole */
	if (fgets(line, sizeof(line), f) && !strcmp(line, "ibfab-tsc 1\n")) {
		unsigned long a;

		ok = true;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "%lx", &a) == 1)
				add_site(base + a);
	}
	fclose(f);
	return ok;
}

static void cache_write(const char *name, const unsigned long *a, size_t n)
{
	char tmp[4200];
	FILE *f;

	if (snprintf(tmp, sizeof(tmp), "%s.%ld", name, (long)getpid()) >= (int)sizeof(tmp) ||
	    !(f = fopen(tmp, "we")))
		return;
	fprintf(f, "ibfab-tsc 1\n");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%lx\n", a[i]);
	if (fclose(f) || rename(tmp, name))
		unlink(tmp);
}

/* The rdtsc instructions in one object, at base: from the cache, else
 * from objdump (and into the cache). */
static void scan(const char *path, uintptr_t base)
{
	char cmd[4300], line[512], cname[4200];
	bool cached = cache_name(path, cname, sizeof(cname));
	unsigned long *found = NULL;
	size_t n = 0, fcap = 0;
	FILE *p;

	if (cached && cache_read(cname, base))
		return;
	if (strchr(path, '\'') ||
	    snprintf(cmd, sizeof(cmd), "objdump -d --no-show-raw-insn '%s' 2>/dev/null", path) >=
	    (int)sizeof(cmd) || !(p = popen(cmd, "r")))
		return;
	while (fgets(line, sizeof(line), p)) {
		unsigned long addr;
		char insn[16];

		if (sscanf(line, " %lx: %15s", &addr, insn) != 2 || strcmp(insn, "rdtsc"))
			continue;
		add_site(base + addr);
		if (n == fcap) {
			unsigned long *v = realloc(found, (fcap = fcap ? fcap * 2 : 64) * sizeof(*v));

			if (!v) {
				cached = false;
				break;
			}
			found = v;
		}
		found[n++] = addr;
	}
	/* objdump's status: only a whole disassembly is worth keeping */
	if (pclose(p) == 0 && cached)
		cache_write(cname, found, n);
	free(found);
}

static bool patched(uintptr_t rip)
{
	size_t lo = 0, hi = nsites;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (sites[mid] == rip)
			return true;
		if (sites[mid] < rip)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* The program's own SIGILL disposition, kept while ours stays installed
 * (sigaction below): a real illegal instruction goes to it. */
static struct sigaction prog_ill = { .sa_handler = SIG_DFL };
static volatile bool ill_ours;

static void on_sigill(int sig, siginfo_t *si, void *uc_)
{
	ucontext_t *uc = uc_;
	uintptr_t rip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];

	if (!patched(rip)) {
		/* a real illegal instruction: the program's handler, or die as
		 * the program would have */
		if (prog_ill.sa_flags & SA_SIGINFO) {
			prog_ill.sa_sigaction(sig, si, uc_);
		} else if (prog_ill.sa_handler != SIG_DFL && prog_ill.sa_handler != SIG_IGN) {
			prog_ill.sa_handler(sig);
		} else {
			struct sigaction dfl = { .sa_handler = SIG_DFL };

			ill_ours = false;
			sigaction(SIGILL, &dfl, NULL);
		}
		return;
	}
	/* (the clock stops here if it ran on while the program computed:
	 * shim_clock_runs; a trap from program code, so the shim's
	 * connection is free unless a signal handler interrupted it) */
	uint64_t tsc = tsc0 + (uint64_t)((double)(shim_clock_runs() - ps0) * (mhz / 1e6));

	uc->uc_mcontext.gregs[REG_RAX] = (greg_t)(tsc & 0xffffffffu);
	uc->uc_mcontext.gregs[REG_RDX] = (greg_t)(tsc >> 32);
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)(rip + 2);
}

/*
 * A library that installs its own SIGILL handler after the shim patched
 * the counter (UCX's error handler, set up when a UCX context starts,
 * Open MPI's through it) would get the emulated rdtsc's traps and abort:
 * while sites are patched, the shim's handler stays, and the program's is
 * kept to be chained to for real illegal instructions.
 */
__attribute__((visibility("default"))) int sigaction(int sig, const struct sigaction *restrict act,
						     struct sigaction *restrict old);
int sigaction(int sig, const struct sigaction *restrict act, struct sigaction *restrict old)
{
	static int (*real)(int, const struct sigaction *, struct sigaction *);

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "sigaction");
	if (sig != SIGILL || !ill_ours)
		return real(sig, act, old);
	if (old)
		*old = prog_ill;
	if (act)
		prog_ill = *act;
	return 0;
}

static int cmp_uptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return x < y ? -1 : x > y;
}

void shim_tsc_install(void)
{
	const char *e = getenv("IBFAB_TSC");
	static struct objs v;
	long pg = sysconf(_SC_PAGESIZE);
	struct sigaction sa;
	Dl_info self;
	double (*ucs_hz)(void);

	if ((e && !strcmp(e, "0")) || sites)
		return;
	if (dladdr((void *)shim_tsc_install, &self) && self.dli_fname &&
	    strlen(self.dli_fname) < sizeof(v.shim_dir)) {
		strcpy(v.shim_dir, self.dli_fname);
		if (strrchr(v.shim_dir, '/'))
			*strrchr(v.shim_dir, '/') = 0;
	}
	dl_iterate_phdr(collect, &v);
	for (size_t i = 0; i < v.n; i++) {
		scan(v.o[i].path, v.o[i].base);
		free(v.o[i].path);
	}
	free(v.o);
	if (!nsites)
		return;
	qsort(sites, nsites, sizeof(*sites), cmp_uptr);
	/* UCX converts with the rate it measured (or read from the CPU's model
	 * name) when it loaded: give it that one */
	ucs_hz = (double (*)(void))dlsym(RTLD_DEFAULT, "ucs_get_cpu_clocks_per_sec");
	mhz = ucs_hz && ucs_hz() > 1e6 ? ucs_hz() / 1e6 : cpu_mhz();
	tsc0 = __rdtsc();
	ps0 = shim_now_ps();
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigill;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGILL, &sa, &prog_ill))
		return;
	if ((prog_ill.sa_flags & SA_SIGINFO) && prog_ill.sa_sigaction == on_sigill)
		prog_ill.sa_handler = SIG_DFL;
	ill_ours = true;
	for (size_t i = 0; i < nsites; i++) {
		uint8_t *at = (uint8_t *)sites[i];
		void *page = (void *)(sites[i] & ~(uintptr_t)(pg - 1));

		/* two pages: the instruction may straddle a boundary */
		if (at[0] != 0x0f || at[1] != 0x31 ||
		    mprotect(page, (size_t)pg * 2, PROT_READ | PROT_WRITE | PROT_EXEC))
			continue;
		at[1] = 0x0b;	/* rdtsc -> ud2 */
		mprotect(page, (size_t)pg * 2, PROT_READ | PROT_EXEC);
	}
}
