#!/usr/bin/env bash
# tests/interop/shim_rdmacm.sh - Debian's rdma_cm programs, unmodified, on the
# shim's librdmacm.so.1 (docs/shim.md, "rdma_cm"), as server/client pairs on
# one simulated HDR switch, the servers named by the fabric's host names and
# addresses (`ibfab topo show` prints them):
#  - ucmatose (RC: connect, 10 and 4 x 100 messages, disconnect), udaddy
#    (UD: SIDR), rdma_server/rdma_client (synchronous endpoints), each side
#    exits 0 and says so;
#  - rping (threads: one waits for CM events, one for CQ events while the
#    main thread posts) 3 times, and tests/shim/shim_threads.c (4 threads a
#    side, every byte checked);
#  - ibv_rc_pingpong reaches its server by host name (the shim's getaddrinfo);
#  - perftest over rdma_cm (-R) prints what it prints without it, and what
#    `ibfab run` predicts (ib_write_bw, ib_send_lat), run after run;
#  - a connection to a host nobody listens on is rejected (reason 8, invalid
#    service ID, as the IB CM says it), an unknown name fails cleanly;
#  - clients killed at several points of their connection setup leave the
#    daemon serving the next pair;
#  - on the RoCE fabric, ucmatose, udaddy (address vectors with a GRH) and
#    ib_write_bw -R run as well.
. "$IBFAB_SRC/tests/lib/e2e.sh"
. "$IBFAB_SRC/tests/shim/lib.sh"
need ucmatose udaddy rdma_server rdma_client rping ib_write_bw ib_send_lat ibv_rc_pingpong
topo="$IBFAB_SRC/topologies/examples/star-6.net"
start_daemon "$topo" || { finish; exit; }

"$IBFAB" topo show "$topo" | grep -q '"h0"\[1\]  127\.1\.0\.1$' ||
	fail "topo show does not give h0 its address 127.1.0.1"

# wait_cm PORT: until a program listens on rdma_cm port PORT (the daemon's
# log says when one starts and stops; the log goes on across daemons, so an
# earlier daemon's "no longer listens" line must not count), at most 4 s
wait_cm() {
	for _ in $(seq 400); do
		grep "rdma_cm port $1\$" "$tmp/serve.log" | tail -1 | grep -q ') listens on ' && return
		sleep 0.01
	done
}
# cm_pair: pair (tests/shim/lib.sh), the client started once the server
# listens on its rdma_cm port
cm_pair() { PAIR_WAIT=wait_cm pair "$@"; }
both_say() {
	local name=$1 what=$2
	grep -q "$what" "$tmp/$name.srv" || fail "$name: the server does not say '$what'"
	grep -q "$what" "$tmp/$name.cli" || fail "$name: the client does not say '$what'"
}

# 1. RC, UD and the synchronous endpoints
cm_pair ucmatose 7471 ucmatose -- ucmatose -s h0 && {
	both_say ucmatose 'return status 0'
	grep -q 'data transfers complete' "$tmp/ucmatose.cli" || fail "ucmatose: no data transfers"
	echo "ok: ucmatose (h1 -> h0 by name)"
}
cm_pair ucmatose4 7472 ucmatose -p 7472 -c 4 -C 100 -S 4096 -- \
	ucmatose -p 7472 -c 4 -C 100 -S 4096 -s 127.1.0.1 && {
	both_say ucmatose4 'return status 0'
	echo "ok: ucmatose, 4 connections x 100 messages of 4 KiB (by address)"
}
cm_pair udaddy 7174 udaddy -- udaddy -s h0 && {	# its fixed port
	both_say udaddy 'return status 0'
	echo "ok: udaddy (UD, SIDR)"
}
cm_pair rdma_server 7474 rdma_server -p 7474 -- rdma_client -s h0 -p 7474 && {
	grep -q 'rdma_server: end 0' "$tmp/rdma_server.srv" || fail "rdma_server did not end 0"
	grep -q 'rdma_client: end 0' "$tmp/rdma_server.cli" || fail "rdma_client did not end 0"
	echo "ok: rdma_server / rdma_client"
}

# rping: three threads a side (main, CM events, CQ events), each with verbs
# calls in flight while the others wait in the daemon
for i in 1 2 3; do
	cm_pair "rping$i" "$((7600 + i * 10))" rping -s -v -C 10 -p "$((7600 + i * 10))" -- \
		rping -c -a h0 -v -C 10 -p "$((7600 + i * 10))" || continue
	grep -q '^ping data: rdma-ping-9: ' "$tmp/rping$i.cli" &&
		grep -q '^server ping data: rdma-ping-9: ' "$tmp/rping$i.srv" ||
		fail "rping $i: $(tail -n 2 "$tmp/rping$i.cli" | tr '\n' '|')"
done
echo "ok: rping, 10 pings, 3 times"
prog="$IBFAB_BUILD/tests/shim/shim_threads"
LD_LIBRARY_PATH="$shim_lib" timeout 60 "$prog" >"$tmp/threads.out" 2>&1 &&
	[ "$(grep -c 'threads: ok' "$tmp/threads.out")" = 2 ] ||
	fail "shim_threads: $(tr '\n' '|' <"$tmp/threads.out")"
echo "ok: 4 threads a side, each waiting in ibv_get_cq_event while the others post"

# a host's name is its address for the programs' own TCP side channels too
# (the shim's getaddrinfo): ibv_rc_pingpong's client names its server
SRV_HOST=h4 CLI_HOST=h2 pair byname 18900 ibv_rc_pingpong -p 18900 -- \
	ibv_rc_pingpong -p 18900 h4 && echo "ok: ibv_rc_pingpong h4 (its TCP exchange by name)"

# the address vector of a UD peer (tests/shim/shim_cm_ah.c): its LID
prog="$IBFAB_BUILD/tests/shim/shim_cm_ah"
cm_ah() {
	LD_LIBRARY_PATH="$shim_lib" timeout 60 "$prog" >"$tmp/cm_ah.$1" 2>&1 ||
		fail "shim_cm_ah ($1): exit $?: $(tail -2 "$tmp/cm_ah.$1")"
	grep -q "^ah: $2 qpn set qkey 0x1234567$" "$tmp/cm_ah.$1" ||
		fail "shim_cm_ah ($1): $(cat "$tmp/cm_ah.$1"), expected 'ah: $2 ...'"
}
cm_ah ib "is_global 0 dlid 2 dgid_lid 0"

# 2. perftest over rdma_cm: the fabric's figures, as without -R
rows() { awk '/#bytes/ { on = 1; next } /^---/ { on = 0 } on && NF >= 4' "$1"; }
predict() {
	"$IBFAB" run --topo "$topo" "$@" | awk '/#bytes/ { on = 1; next } /^---/ { on = 0 } on && NF >= 4'
}
for i in 1 2; do
	cm_pair "wbw$i" 7480 ib_write_bw -R -p 7480 --report_gbits -- \
		ib_write_bw -R -p 7480 --report_gbits h0 || continue
	rows "$tmp/wbw$i.cli" | awk '{ print $4 }' >"$tmp/wbw$i.bw"
done
want=$(predict --set hca.max_inline=0 --traffic perftest:op=write,sizes=65536,src=h1,dst=h0 |
	awk '$1 == 65536 { print $4 }')
got=$(cat "$tmp/wbw1.bw" 2>/dev/null)
echo "ib_write_bw -R 64 KiB: $got Gb/s, simulator $want"
[ -n "$got" ] && awk -v a="$got" -v b="$want" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.05 * b) }' ||
	fail "ib_write_bw -R: $got Gb/s, simulator predicts $want"
cmp -s "$tmp/wbw1.bw" "$tmp/wbw2.bw" || fail "ib_write_bw -R not repeatable: $got then $(cat "$tmp/wbw2.bw")"
cm_pair slat 7481 ib_send_lat -R -p 7481 -- ib_send_lat -R -p 7481 h0 && {
	got=$(rows "$tmp/slat.cli" | awk '$1 == 2 { print $5 }')
	want=$(predict --traffic perftest:op=send,sizes=2,mode=lat,src=h1,dst=h0 | awk '$1 == 2 { print $5 }')
	echo "ib_send_lat -R 2 B: $got usec typical, simulator $want"
	[ "$got" = "$want" ] || fail "ib_send_lat -R: $got usec, simulator predicts $want"
}

# 3. nobody listens; nobody is called that
out=$(shim h1 ucmatose -p 7490 -s h5 2>&1) && fail "ucmatose to a host nobody listens on exited 0"
echo "$out" | grep -q 'RDMA_CM_EVENT_REJECTED, error: 8' ||
	fail "no listener: not rejected with reason 8: $(echo "$out" | tail -2)"
out=$(shim h1 ucmatose -s nosuchhost 2>&1) && fail "ucmatose to an unknown name exited 0"
echo "$out" | grep -q 'getaddrinfo error' || fail "unknown name: $(echo "$out" | tail -1)"
echo "ok: rejected without a listener, unknown names refused"

# 4. clients killed during connection setup: the daemon serves the next pair
SRV_HOST=h2
for d in 0 0.005 0.02 0.05 0.1; do
	shim h2 ucmatose -p 7500 >"$tmp/victim.srv" 2>&1 &
	vs=$!
	wait_cm 7500
	shim h3 ucmatose -p 7500 -s h2 >/dev/null 2>&1 &
	vc=$!
	sleep "$d"
	kill -9 "$vc" 2>/dev/null
	wait "$vc" 2>/dev/null
	kill -9 "$vs" 2>/dev/null
	wait "$vs" 2>/dev/null
done
kill -0 "$daemon_pid" 2>/dev/null || fail "the daemon died with the killed clients"
CLI_HOST=h4 cm_pair after 7501 ucmatose -p 7501 -- ucmatose -p 7501 -s h2 && {
	both_say after 'return status 0'
	echo "ok: 5 clients killed during setup, the next pair connects"
}
SRV_HOST=
grep -q "no progress" "$tmp/serve.log" && fail "the daemon stalled: $(grep 'no progress' "$tmp/serve.log")"

# 5. the RoCE fabric: the same programs, RoCE's figures
start_daemon "$topo" --set fabric=roce || { finish; exit; }
cm_pair roce-ucmatose 7471 ucmatose -- ucmatose -s h0 && both_say roce-ucmatose 'return status 0'
# UD: the event's address vector is a GRH to the server's GID, no LID
cm_pair roce-udaddy 7174 udaddy -- udaddy -s h0 && both_say roce-udaddy 'return status 0'
cm_ah roce "is_global 1 dlid 0 dgid_lid 2"
cm_pair roce-wbw 7480 ib_write_bw -R -p 7480 --report_gbits -- \
	ib_write_bw -R -p 7480 --report_gbits h0 && {
	got=$(rows "$tmp/roce-wbw.cli" | awk '$1 == 65536 { print $4 }')
	want=$(predict --set fabric=roce --set hca.max_inline=0 \
		--traffic perftest:op=write,sizes=65536,src=h1,dst=h0 | awk '$1 == 65536 { print $4 }')
	echo "ib_write_bw -R 64 KiB, fabric=roce: $got Gb/s, simulator $want"
	awk -v a="$got" -v b="$want" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.05 * b) }' ||
		fail "ib_write_bw -R on RoCE: $got Gb/s, simulator predicts $want"
}
finish
