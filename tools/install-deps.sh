#!/usr/bin/env bash
# tools/install-deps.sh - install the Debian packages ibfab's build and its
# whole test suite need, if any is missing (Debian bookworm, as root).
# The one list of packages: .ci/run and tools/quickstart.sh both call this.
set -euo pipefail

packages=(
	# build: compiler, CMake, CUnit; libev, the verbs and rdma_cm headers (shim)
	build-essential cmake pkg-config libcunit1-dev libev-dev libibverbs-dev librdmacm-dev
	# interop tests: ibsim + umad2sim, infiniband-diags, OpenSM
	ibsim-utils libumad2sim0 infiniband-diags opensm
	# shim interop tests: unmodified verbs programs (ibv_*_pingpong, ib_*_lat/bw)
	# and rdma_cm programs (rping, ucmatose, udaddy, rdma_server/rdma_client),
	# libfabric's verbs provider (fi_pingpong), UCX (ucx_info, ucx_perftest),
	# Open MPI over UCX (mpirun, and mpicc for the allreduce program), qperf
	ibverbs-utils perftest rdmacm-utils libfabric-bin ucx-utils openmpi-bin libopenmpi-dev
	qperf
	# DOT rendering, valgrind, python3 (tests read JSON with it)
	graphviz valgrind python3
	# /usr/bin/time: bench/pairs and bench/run time runs with it (e2e.bench_pairs)
	time
	# tshark: the interop test reads --pcap captures with Wireshark's dissectors
	tshark
	# chromium: the browser test loads --html reports headless
	chromium
)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#packages[@]} Debian packages present"
	exit 0
fi
echo "install-deps: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: run as root (or with sudo) to install: ${missing[*]}" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt_opts=(-y -q -o DPkg::Lock::Timeout=300)
for try in 1 2 3; do
	if apt-get "${apt_opts[@]}" update </dev/null; then
		break
	fi
	[ "$try" -lt 3 ] || exit 1
	echo "apt-get update failed (try $try), retrying in 10 s" >&2
	sleep 10
done
apt-get "${apt_opts[@]}" install "${missing[@]}" </dev/null
