#!/usr/bin/env bash
# tests/interop/shim_integrity.sh - our own verbs program (tests/shim/
# shim_integrity.c) moves patterned buffers with RDMA WRITE, READ, SEND and
# both atomics between two simulated hosts through the shim, and checks
# every byte and every atomic result on both sides; twice (the second on a
# three-hop path of a fat tree, so packets cross switches, and with its
# completions polled by the extended CQ API: ibv_create_cq_ex,
# ibv_start_poll, ibv_wc_read_*, ibv_end_poll); and a third time with both
# programs attached as the same host, h0: two processes on one simulated
# host, connected through the HCA's loopback (IBA 17.3.1).
. "$IBFAB_SRC/tests/lib/e2e.sh"
. "$IBFAB_SRC/tests/shim/lib.sh"
prog="$IBFAB_BUILD/tests/shim/shim_integrity"
[ -x "$prog" ] || { fail "$prog not built"; finish; exit; }
for run in star-6.net fattree-16.topo loopback; do
	topo=$run
	h1=h1
	x=
	case $run in
	fattree-16.topo) h1=h15; x=-x ;;	# another leaf: up and down the tree
	loopback) topo=star-6.net; h1=h0 ;;
	esac
	start_daemon "$IBFAB_SRC/topologies/examples/$topo" || continue
	# its own range: shim_perftest counts up from 18661, shim_hostile from
	# 18701, and the tests may run at the same time (ctest -j)
	port=$((18800 + RANDOM % 50))
	SHIM_TIMEOUT=60 shim h0 "$prog" $x -p "$port" >"$tmp/srv" 2>&1 &
	spid=$!
	sleep 0.3
	SHIM_TIMEOUT=60 shim "$h1" "$prog" $x -p "$port" 127.0.0.1 >"$tmp/cli" 2>&1
	crc=$?
	wait "$spid"
	src=$?
	echo "$run: $(cat "$tmp/cli" "$tmp/srv" | tr '\n' ' ')"
	[ "$crc" -eq 0 ] && [ "$src" -eq 0 ] || fail "$run: client $crc, server $src: $(cat "$tmp/cli" "$tmp/srv")"
	stop_daemon
done
finish
