#!/usr/bin/env bash
# tools/build-pgo.sh - build an optimised ibfab with profile-guided
# optimisation (gcc -fprofile-generate / -fprofile-use), for long studies and
# for the benchmarks (bench/run --ibfab, bench/compare-ns3 --ibfab).
#
#   tools/build-pgo.sh [BUILD_DIR]     (default: build-pgo)
#
# Three steps in one build tree (the profile files are named after the
# object files' paths, so the instrumented and the final build must be the
# same tree): build ibfab instrumented; run a training set that crosses every
# model (the IB fabric with credits and the RC and UD transports with and
# without the host model, a ring allreduce, RoCE and TCP incasts, `ibfab
# compare`, a 1,024-host tree's routing, nccl-tests' all_reduce on GPU
# servers: NVLink, NVLS, adaptive routing); rebuild with the profile. Then it
# checks that the result gives byte-identical outputs: the training set's
# against the instrumented build's, and the golden perf_outputs runs
# (strict). The profile changes which code is laid out where and which
# branches are predicted, never what is computed.
#
# The training set is generic, not the benchmarks: it uses the example
# topologies and small sizes, about 10 s in all. On this project's 2-core
# machine it took B1's instructions from 797M to 740M (-7.2%), B1's wall
# time about 5% and B3's about 8% (docs/performance.md, "Build modes").
# tools/test.sh (and so CI) runs this script and its golden check.
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
case ${1:-} in -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
dir=$(realpath -m "${1:-$src/build-pgo}")
prof=$dir/pgo-profile
jobs=$(nproc)
common=(-DCMAKE_BUILD_TYPE=Release -DIBFAB_BENCH=OFF)

echo "build-pgo: instrumented build in $dir" >&2
rm -rf "$prof"
mkdir -p "$prof"
cmake -S "$src" -B "$dir" "${common[@]}" \
	-DCMAKE_C_FLAGS="-fprofile-generate -fprofile-dir=$prof -fprofile-update=single" >/dev/null
cmake --build "$dir" -j"$jobs" --target ibfab >/dev/null

echo "build-pgo: training" >&2
ib=$dir/tools/ibfab
ex=$src/topologies/examples
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'ranks 128\nmap linear\nallreduce 8388608 algo=ring\n' >"$tmp/ring.trace"
# the sizes NCCL's tuning gives the tree (LL, LL128) and NVLSTree (Simple)
echo 'mpirun -np 16 ./all_reduce_perf -b 1M -e 64M -f 8 -g 8 -n 1' >"$tmp/gpu.nccl"
"$ib" topo gen fattree --levels 3 --radix 16 >"$tmp/ft1k.topo"
cbr=()
for i in $(seq 0 7); do
	cbr+=(--traffic "p2p:src=#$i,dst=#$((i + 8)),size=1000B,count=3000,gap=13474000ps,start=$((i * 1684250))ps")
done
ud=()
for t in "${cbr[@]}"; do
	[[ $t == p2p:* ]] && t=$t,qp=ud
	ud+=("$t")
done
training() {	# TAG: run the training set, each output kept as $tmp/TAG-run.N (or -compare.N)
	local n=0
	run() {	# a failure here is a bug, not a reason to go on
		n=$((n + 1))
		"$ib" "$@" --reproducible >"$tmp/$1.$n" ||
			{ echo "build-pgo: training run failed: ibfab $*" >&2; exit 1; }
	}
	run run
	run compare --no-plot
	run run --topo "$ex/fattree-16.topo" --preset hdr "${cbr[@]}"
	run run --topo "$ex/fattree-16.topo" --preset hdr --set host.model=off "${ud[@]}"
	run run --topo "$ex/fattree-128.topo" --routing ftree --preset hdr --set host.model=off \
		--trace "$tmp/ring.trace"
	run run --topo "$ex/fattree-128.topo" --routing ftree --preset hdr --trace "$tmp/ring.trace"
	for fab in roce tcp; do
		run run --topo "$ex/fattree-128.topo" --routing ftree --preset hdr --set "fabric=$fab" \
			--traffic "incast:dst=#0,n=32,size=256KiB"
	done
	run run --topo "$tmp/ft1k.topo" --routing ftree --preset hdr --set host.model=off \
		--traffic "permutation:size=64KiB,seed=1"
	run run --topo "$ex/dgx-h100-16.topo" --trace "$tmp/gpu.nccl"
	for f in "$tmp"/run.* "$tmp"/compare.*; do mv "$f" "$tmp/$1-${f##*/}"; done
}
training plain

echo "build-pgo: optimised build with the profile" >&2
cmake -S "$src" -B "$dir" "${common[@]}" \
	-DCMAKE_C_FLAGS="-fprofile-use -fprofile-dir=$prof -fprofile-partial-training -Wno-missing-profile" \
	>/dev/null
cmake --build "$dir" -j"$jobs" --target ibfab >/dev/null

# The same outputs, byte for byte: the training set's (every model) against
# the instrumented build's, and the golden runs
echo "build-pgo: checking outputs" >&2
training pgo
for f in "$tmp"/plain-*; do
	if ! cmp -s "$f" "$tmp/pgo-${f#"$tmp"/plain-}"; then
		echo "build-pgo: the optimised build's output differs: ${f#"$tmp"/plain-}" >&2
		diff "$f" "$tmp/pgo-${f#"$tmp"/plain-}" | head -20 >&2
		exit 1
	fi
done
IBFAB="$ib" IBFAB_SRC="$src" IBFAB_GOLDEN_STRICT=1 bash "$src/tests/golden/perf_outputs.sh" >&2
echo "build-pgo: $ib"
