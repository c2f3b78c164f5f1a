#!/usr/bin/env bash
# tests/interop/shim_robust.sh - the fabric daemon survives what programs do
# to it (docs/shim.md): a client killed in the middle of a transfer, hostile
# and malformed messages on its socket, verbs it does not implement. After
# each, a fresh ping-pong pair must still run to completion.
. "$IBFAB_SRC/tests/lib/e2e.sh"
. "$IBFAB_SRC/tests/shim/lib.sh"
need ibv_rc_pingpong ib_write_bw python3
topo="$IBFAB_SRC/topologies/examples/star-6.net"
start_daemon "$topo" || { finish; exit; }
alive() { kill -0 "$daemon_pid" 2>/dev/null || fail "the daemon died ($1)"; }
check_pair() {
	pair "after-$1" "$2" ibv_rc_pingpong -p "$2" -- ibv_rc_pingpong -p "$2" 127.0.0.1 ||
		fail "no ping-pong after $1"
}

# 1. kill -9 a bandwidth client mid-transfer (its QP still sending)
SHIM_TIMEOUT=30 shim h0 ib_write_bw -p 18641 -n 100000000 >"$tmp/kill.srv" 2>&1 &
spid=$!
wait_listen 18641
# (no timeout wrapper: the signal must reach the program itself)
IBFAB_HOST=h1 LD_LIBRARY_PATH="$shim_lib" ib_write_bw -p 18641 -n 100000000 127.0.0.1 \
	>"$tmp/kill.cli" 2>&1 &
cpid=$!
for _ in $(seq 100); do		# until it is sending
	grep -q "#bytes" "$tmp/kill.cli" && break
	sleep 0.05
done
sleep 0.5
kill -9 "$cpid" 2>/dev/null
wait "$cpid" 2>/dev/null
wait "$spid" 2>/dev/null
grep -q "BW peak" "$tmp/kill.cli" && fail "the client finished before it was killed"
alive "client killed"
for _ in $(seq 50); do
	grep -q "(host h1) detached" "$tmp/serve.log" && break
	sleep 0.05
done
grep -q "(host h1) detached" "$tmp/serve.log" || fail "the killed client was not detached"
check_pair kill 18642

# 2. garbage on the socket
python3 "$IBFAB_SRC/tests/shim/garbage.py" "$IBFAB_SOCKET" >"$tmp/garbage.out" 2>&1 ||
	fail "malformed requests: $(grep FAIL "$tmp/garbage.out" | head -3)"
alive "garbage"
check_pair garbage 18643

# 3. unimplemented verbs: EOPNOTSUPP and one line each, no crash
prog="$IBFAB_BUILD/tests/shim/shim_unsupported"
if [ -x "$prog" ]; then
	shim h2 "$prog" >"$tmp/unsup.out" 2>"$tmp/unsup.err" || fail "shim_unsupported: $(cat "$tmp/unsup.out")"
	n=$(grep -c "is not supported by the simulated HCA" "$tmp/unsup.err")
	[ "$n" -ge 4 ] || fail "expected one line per unsupported verb, got $n: $(cat "$tmp/unsup.err")"
	[ "$(wc -l <"$tmp/unsup.err")" -eq "$n" ] || fail "unexpected stderr: $(cat "$tmp/unsup.err")"
else
	fail "$prog not built"
fi
alive "unsupported verbs"

# 4. the socket is its owner's only
mode=$(stat -c %a "$IBFAB_SOCKET")
[ "$mode" = 600 ] || fail "socket mode $mode, want 600"
stop_daemon
finish
