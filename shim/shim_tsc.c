/* SPDX-License-Identifier: MIT */
/*
 * shim_tsc.c - the time-stamp counter a program reads with rdtsc, made to
 * follow the simulated clock.
 *
 * perftest times every work request with an inline rdtsc (48 sites per
 * binary) and converts cycles to microseconds with a MHz value: the one in
 * /proc/cpuinfo when its own calibration against gettimeofday agrees within
 * 2%. rdtsc cannot be interposed (no call), and PR_SET_TSC (prctl(2)) does
 * not trap on virtual machines whose hypervisor hides the TSC's
 * faulting. So at attach time the shim
 * asks a disassembler (objdump; a byte scan would find false positives) for
 * the rdtsc instructions of the executable, rewrites each 2-byte rdtsc
 * (0f 31) into ud2 (0f 0b), and emulates it in a SIGILL handler: EDX:EAX =
 * simulated picoseconds x the /proc/cpuinfo MHz. Calibration and readings
 * then agree exactly, and perftest's cycle counts are simulated time.
 * Libraries are left alone (their rdtsc, if any, is not on perftest's
 * timing path). IBFAB_TSC=0 turns this off.
 */
#define _GNU_SOURCE
#include "shim/shim_int.h"

#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

static uintptr_t *sites;	/* patched addresses, sorted */
static size_t nsites;
static double mhz;

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

static int main_base(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(uintptr_t *)data = info->dlpi_addr;
	return 1;	/* the first object is the executable */
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

static void on_sigill(int sig, siginfo_t *si, void *uc_)
{
	ucontext_t *uc = uc_;
	uintptr_t rip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];

	(void)si;
	if (!patched(rip)) {
		/* a real illegal instruction: die as the program would have */
		signal(sig, SIG_DFL);
		return;
	}
	uint64_t tsc = (uint64_t)((double)shim_now_ps() * (mhz / 1e6));

	uc->uc_mcontext.gregs[REG_RAX] = (greg_t)(tsc & 0xffffffffu);
	uc->uc_mcontext.gregs[REG_RDX] = (greg_t)(tsc >> 32);
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)(rip + 2);
}

static int cmp_uptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return x < y ? -1 : x > y;
}

void shim_tsc_install(void)
{
	const char *e = getenv("IBFAB_TSC");
	char exe[4096], cmd[4200], line[512];
	uintptr_t base = 0;
	long pg = sysconf(_SC_PAGESIZE);
	struct sigaction sa;
	size_t cap = 0;
	ssize_t n;
	FILE *p;

	if ((e && !strcmp(e, "0")) || sites)
		return;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return;
	exe[n] = 0;
	if (strchr(exe, '\'') ||
	    snprintf(cmd, sizeof(cmd), "objdump -d --no-show-raw-insn '%s' 2>/dev/null", exe) >=
	    (int)sizeof(cmd))
		return;
	p = popen(cmd, "r");
	if (!p)
		return;
	dl_iterate_phdr(main_base, &base);
	while (fgets(line, sizeof(line), p)) {
		unsigned long addr;
		char insn[16];

		if (sscanf(line, " %lx: %15s", &addr, insn) != 2 || strcmp(insn, "rdtsc"))
			continue;
		if (nsites == cap) {
			size_t nc = cap ? cap * 2 : 64;
			uintptr_t *v = realloc(sites, nc * sizeof(*v));

			if (!v)
				break;
			sites = v;
			cap = nc;
		}
		sites[nsites++] = base + addr;
	}
	pclose(p);
	if (!nsites)
		return;
	qsort(sites, nsites, sizeof(*sites), cmp_uptr);
	mhz = cpu_mhz();
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigill;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGILL, &sa, NULL))
		return;
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
