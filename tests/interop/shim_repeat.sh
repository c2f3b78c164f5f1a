#!/usr/bin/env bash
# tests/interop/shim_repeat.sh - what a program prints under the verbs shim
# depends only on its calls, never on how the host schedules it
# (docs/shim.md, "Time"): a ping-pong pair (the CQ-polling path), an
# ib_write_lat pair (the memory-spinning path) and UCX's ucx_perftest over
# ud_verbs (threads, a TCP side channel) print byte for byte the same
# results when, on a second run, a busy loop competes for the CPU and each
# program is stopped for 40 ms in every 110 ms (SIGSTOP/SIGCONT: the host's
# scheduler at its worst, on purpose, on any machine). A daemon that lets
# real time decide anything that moves the simulated clock (a program
# "silent for too long", a read that consumed its bytes before the daemon
# saw them) prints other numbers here. A program that computed long enough
# to be taken for a spinner stops the clock when it reads it
# (tests/shim/shim_computes.c). Last, the one rule that does look at
# real time: a program that waits where the shim cannot see (poll() on its
# channel fd, tests/shim/shim_pollwait.c) still gets its completions.
. "$IBFAB_SRC/tests/lib/e2e.sh"
. "$IBFAB_SRC/tests/shim/lib.sh"
need ibv_rc_pingpong ib_write_lat objdump
topo="$IBFAB_SRC/topologies/examples/star-6.net"
start_daemon "$topo" || { finish; exit; }

victims=() busy=
cleanup() {
	[ -n "$busy" ] && kill "$busy" 2>/dev/null
	for p in "${victims[@]}"; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
	stop_daemon
	rm -rf "$tmp"
}
trap cleanup EXIT

# jolt PID...: stop each in turn for 40 ms, then let it run 15 ms, until
# all are gone; kill them after 60 s
jolt() {
	local end=$((SECONDS + 60))
	while kill -0 "$@" 2>/dev/null; do
		if [ "$SECONDS" -ge "$end" ]; then
			kill -CONT "$@" 2>/dev/null
			kill -9 "$@" 2>/dev/null
			return
		fi
		for p in "$@"; do
			kill -STOP "$p" 2>/dev/null
			sleep 0.04
			kill -CONT "$p" 2>/dev/null
			sleep 0.015
		done
	done
}

# run NAME MODE PORT PROG ARGS...: a server (h0) / client (h1) pair, MODE
# quiet or jolted; both must exit 0. Outputs in $tmp/NAME.{srv,cli}.
run() {
	local name=$1 mode=$2 port=$3 prog=$4 spid cpid src crc jpid=
	shift 4
	# started directly (no timeout wrapper): the signals must reach them
	IBFAB_HOST=h0 LD_LIBRARY_PATH="$shim_lib" "$prog" -p "$port" "$@" >"$tmp/$name.srv" 2>&1 &
	spid=$!
	wait_listen "$port"
	IBFAB_HOST=h1 LD_LIBRARY_PATH="$shim_lib" "$prog" -p "$port" "$@" 127.0.0.1 >"$tmp/$name.cli" 2>&1 &
	cpid=$!
	victims=("$spid" "$cpid")
	if [ "$mode" = jolted ]; then
		jolt "$cpid" "$spid" >/dev/null 2>&1 &
		jpid=$!
	else
		(sleep 60; kill -9 "$cpid" "$spid") >/dev/null 2>&1 &
		jpid=$!
	fi
	wait "$cpid"
	crc=$?
	wait "$spid"
	src=$?
	kill "$jpid" 2>/dev/null
	wait "$jpid" 2>/dev/null
	victims=()
	if [ "$crc" -ne 0 ] || [ "$src" -ne 0 ]; then
		fail "$name ($mode): server exit $src, client exit $crc"
		sed 's/^/  srv| /' "$tmp/$name.srv" | tail -5
		sed 's/^/  cli| /' "$tmp/$name.cli" | tail -5
		return 1
	fi
}

# same NAME FILTER: the quiet and the jolted run printed the same results
# (on the sides $SIDES names: both by default)
same() {
	local name=$1 filter=$2 side before=$fails
	for side in ${SIDES:-srv cli}; do
		"$filter" "$tmp/$name-quiet.$side" >"$tmp/$name-quiet.$side.res"
		"$filter" "$tmp/$name-jolted.$side" >"$tmp/$name-jolted.$side.res"
		if [ ! -s "$tmp/$name-quiet.$side.res" ]; then
			fail "$name $side: no results: $(tail -3 "$tmp/$name-quiet.$side")"
		elif ! cmp -s "$tmp/$name-quiet.$side.res" "$tmp/$name-jolted.$side.res"; then
			fail "$name $side: the host's scheduler changed what it prints:" \
			     "$(tr '\n' '|' <"$tmp/$name-quiet.$side.res") then" \
			     "$(tr '\n' '|' <"$tmp/$name-jolted.$side.res")"
		fi
	done
	[ "$fails" -eq "$before" ] &&
		echo "$name: $(tr -s ' \t' ' ' <"$tmp/$name-quiet.cli.res" | tr '\n' '|') (quiet = jolted: ${SIDES:-srv cli})"
}
pp_results() { grep -E "bytes in|iters in" "$1"; }
lat_results() { awk '/#bytes/ { on = 1; next } /^---/ { on = 0 } on && NF >= 4' "$1"; }

# NAME-quiet on PORT, then NAME-jolted on PORT+1 beside a busy loop (killed
# on exit), and what both print through FILTER compared; with FRESH set,
# each on a daemon of its own, started for it (the runs then start at the
# same simulated instant)
quiet_then_jolted() {
	local name=$1 port=$2 filter=$3
	shift 3
	[ -n "${FRESH:-}" ] && start_daemon "$topo"
	run "$name-quiet" quiet "$port" "$@"
	[ -n "${FRESH:-}" ] && start_daemon "$topo"
	sh -c 'while :; do :; done' >/dev/null 2>&1 &
	busy=$!
	run "$name-jolted" jolted $((port + 1)) "$@" && same "$name" "$filter"
	kill "$busy" 2>/dev/null
	busy=
}

quiet_then_jolted pp 18650 pp_results ibv_rc_pingpong -n 500
quiet_then_jolted lat 18652 lat_results ib_write_lat -n 100

# UCX over ud_verbs: two threads a process taking turns, and a TCP side
# channel the server opens before its first verbs call (docs/shim.md,
# "Programs on their way"); the client prints its whole row, average and
# rates too, the same either way
ucx_results() { grep "^Final:" "$1"; }
if command -v ucx_perftest >/dev/null 2>&1 || [ "${CI:-}" = true ]; then
	FRESH=1 SIDES=cli UCX_TLS=ud_verbs,self UCX_NET_DEVICES=ibfab0:1 \
		UCX_WARN_UNUSED_ENV_VARS=n LD_PRELOAD="$shim_lib/libibverbs.so.1" \
		quiet_then_jolted ucx 18654 ucx_results ucx_perftest -t tag_lat -w 100 -n 1000
	start_daemon "$topo"
else
	echo "SKIP: ucx_perftest not installed: its case left out"
fi

# a program that computes 60 ms without a word (taken for a spinner: the
# clock runs on), then reads the clock around 5 ms of CPU, by rdtsc and by
# gettimeofday: once read, the clock stands still while it runs
prog="$IBFAB_BUILD/tests/shim/shim_computes"
if [ -x "$prog" ]; then
	LD_LIBRARY_PATH="$shim_lib" timeout 60 "$prog" >"$tmp/computes.out" 2>&1 ||
		fail "shim_computes: $(grep -v '^ok' "$tmp/computes.out" | tr '\n' '|')"
	grep -q '^ok: rdtsc' "$tmp/computes.out" && echo "a program that computed, then reads the clock: it stands still"
else
	fail "$prog not built"
fi

# poll() on the channel fd, watched as a wait: about 2.5 us per round trip,
# as ping-pong takes; a clock that ran on while the program was awake would
# show far more
prog="$IBFAB_BUILD/tests/shim/shim_pollwait"
if [ -x "$prog" ]; then
	LD_LIBRARY_PATH="$shim_lib" timeout 60 "$prog" >"$tmp/pollwait.out" 2>&1 ||
		fail "shim_pollwait: exit $?: $(tail -3 "$tmp/pollwait.out")"
	us=$(sed -n 's/^h0: 10 round trips in \([0-9]*\) usec$/\1/p' "$tmp/pollwait.out")
	echo "poll() on the channel fd: ${us:-?} usec for 10 round trips"
	[ -n "$us" ] && [ "$us" -gt 0 ] && [ "$us" -lt 200 ] ||
		fail "shim_pollwait: $(tr '\n' '|' <"$tmp/pollwait.out")"
else
	fail "$prog not built"
fi
stop_daemon
finish
