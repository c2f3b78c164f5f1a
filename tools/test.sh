#!/usr/bin/env bash
# tools/test.sh - build ibfab and run the whole test suite the way CI does,
# without installing anything (.ci/run installs the Debian packages, then
# runs this). Three builds, each in its own directory:
#
#   1. release: RelWithDebInfo with -Werror; builds everything (benchmarks
#      too, so they keep compiling) and runs every CTest test: unit, e2e,
#      golden and interop.
#   2. asan: AddressSanitizer + UndefinedBehaviorSanitizer; runs the unit
#      tests, and the engine benchmark briefly as a smoke test (its figures
#      are not checked).
#   3. pgo: tools/build-pgo.sh, the profile-guided optimised build (its
#      training runs, then the golden outputs checked byte for byte).
#
# Usage: tools/test.sh [release|asan|pgo]...   (default: all three, in that order)
# Environment: IBFAB_BUILD_ROOT (default <src>/build-ci), JOBS (default 2).
# Exits non-zero on the first failure.
set -euo pipefail

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
root=${IBFAB_BUILD_ROOT:-$src/build-ci}
jobs=${JOBS:-2}
start=$SECONDS

section() {
	printf '\n==== %s (t=%ds) ====\n' "$*" $((SECONDS - start))
}

configure() {	# dir, extra cmake args...
	local dir=$1
	shift
	cmake -S "$src" -B "$dir" -DIBFAB_WERROR=ON "$@"
}

run_release() {
	local dir=$root/release

	section "release: configure (RelWithDebInfo, -Werror)"
	configure "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo
	section "release: build"
	cmake --build "$dir" -j"$jobs"
	section "release: ctest (whole suite)"
	(cd "$dir" && ctest --output-on-failure --no-tests=error -j"$jobs")
}

run_asan() {
	local dir=$root/asan

	section "asan: configure (ASan + UBSan)"
	configure "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DIBFAB_ASAN=ON -DIBFAB_UBSAN=ON
	section "asan: build"
	cmake --build "$dir" -j"$jobs"
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
	# the heavy simulation tests run their small cases (tests/unit/test_main.h)
	export IBFAB_TEST_QUICK=1
	export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
	if [ -x "$dir/bench/bench_engine" ]; then
		section "asan: benchmark smoke run (figures not checked)"
		"$dir/bench/bench_engine" -n 100 -n 10000 -k 20000
	fi
	if [ -x "$dir/bench/bench_par" ]; then	# exits 1 when a cut's result differs
		"$dir/bench/bench_par" -n 256 -k 50 -t 1,2,3
	fi
	if [ -x "$dir/bench/bench_memlat" ]; then
		"$dir/bench/bench_memlat" --max 1 --loads 100000 --pages 4k
	fi
	section "asan: ctest -L unit"
	(cd "$dir" && ctest -L unit --output-on-failure --no-tests=error -j"$jobs")
}

run_pgo() {
	section "pgo: instrumented build, training, optimised build, golden outputs"
	bash "$src/tools/build-pgo.sh" "$root/pgo"
}

what=("$@")
[ ${#what[@]} -gt 0 ] || what=(release asan pgo)

section "toolchain"
printf '%s\n' "$(cc --version | head -n1)" "$(cmake --version | head -n1)"
printf 'source %s, builds under %s, -j%s\n' "$src" "$root" "$jobs"

for w in "${what[@]}"; do
	case $w in
	release) run_release ;;
	asan) run_asan ;;
	pgo) run_pgo ;;
	*) echo "tools/test.sh: unknown build '$w' (expected release, asan or pgo)" >&2
	   exit 2 ;;
	esac
done
section "all passed"
