#!/usr/bin/env bash
# tests/interop/shim_libfabric.sh - libfabric's verbs provider on the shim:
# Debian's fi_pingpong (libfabric-bin), unmodified, between two hosts of one
# simulated HDR switch, the server named by its host name (docs/shim.md,
# "libfabric"):
#  - FI_EP_MSG (verbs over rdma_cm, RC) and FI_EP_DGRAM (UD), 64 B: the
#    latency it prints is what `ibfab run` predicts for a 64-byte send
#    (ib_send_lat), to the printed digit, run after run;
#  - FI_EP_RDM (the ofi_rxm layer over RC): exits 0; the first message
#    connects, which rxm's passive side notices at its CM progress interval
#    (10 ms by default), so the printed average includes it; the cost per
#    transfer beyond it (from 1,000 and 2,000 iterations) is within 15% of
#    the MSG endpoint's (rxm adds its header to each message);
#  - the default size sweep (64 B to 1 MiB) runs through;
#  - on the RoCE fabric, MSG 64 B prints the RoCE prediction.
. "$IBFAB_SRC/tests/lib/e2e.sh"
. "$IBFAB_SRC/tests/shim/lib.sh"
need fi_pingpong
topo="$IBFAB_SRC/topologies/examples/star-6.net"
port=47600

# fip NAME ARGS...: a server/client pair of fi_pingpong -p verbs ARGS, its
# result row (bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec) in
# $tmp/NAME.rows
fip() {
	local name=$1
	shift
	port=$((port + 1))
	pair "$name" "$port" fi_pingpong -p verbs -B "$port" "$@" -- \
		fi_pingpong -p verbs -P "$port" "$@" h0 || return 1
	awk '/^bytes/ { on = 1; next } on && NF == 8' "$tmp/$name.cli" >"$tmp/$name.rows"
	[ -s "$tmp/$name.rows" ] || { fail "$name: no result rows"; return 1; }
}
# predict [ARGS...]: the simulator's typical latency of a 64-byte send
predict() {
	"$IBFAB" run --topo "$topo" "$@" --traffic "perftest:op=send,mode=lat,sizes=64,src=h1,dst=h0" |
		awk '/#bytes/ { on = 1; next } /^---/ { on = 0 } on && $1 == 64 { print $5 }'
}
near() { awk -v a="$1" -v b="$2" -v p="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= p / 100 * b) }'; }
usec() { awk '$1 == 64 { print $7; exit }' "$tmp/$1.rows"; }
# the run's time in microseconds: bytes moved over MB/sec (fi_pingpong
# prints the time itself only to 10 ms)
run_us() { awk -v n="$2" '$1 == 64 { printf "%.3f", 2 * n * 64 / $6; exit }' "$tmp/$1.rows"; }

# Each repeat on a fresh daemon: fi_pingpong reads the clock with
# gettimeofday, to the microsecond, so where in simulated time a run starts
# moves the rounding of what it prints.
want=$(predict)
start_daemon "$topo" || { finish; exit; }
fip msg -e msg -S 64 -I 1000 && {
	got=$(usec msg)
	echo "fi_pingpong MSG 64 B: $got usec/xfer, simulator $want"
	[ "$got" = "$want" ] || fail "fi_pingpong MSG: $got usec/xfer, simulator predicts $want"
}
start_daemon "$topo" || { finish; exit; }
fip msg2 -e msg -S 64 -I 1000 && {
	cmp -s "$tmp/msg.rows" "$tmp/msg2.rows" ||
		fail "fi_pingpong MSG not repeatable: $(cat "$tmp/msg.rows") then $(cat "$tmp/msg2.rows")"
}
fip dgram -e dgram -S 64 -I 1000 && {
	got=$(usec dgram)
	echo "fi_pingpong DGRAM 64 B: $got usec/xfer"
	near "$got" "$want" 5 || fail "fi_pingpong DGRAM: $got usec/xfer, the send latency is $want"
}
fip sweep -e msg && {
	[ "$(awk '{ print $1 }' "$tmp/sweep.rows" | tr '\n' ' ')" = "64 256 1k 4k 64k 1m " ] ||
		fail "fi_pingpong sweep: sizes $(awk '{ print $1 }' "$tmp/sweep.rows" | tr '\n' ' ')"
	echo "fi_pingpong sweep: 1 MiB at $(awk '$1 == "1m" { print $6 }' "$tmp/sweep.rows") MB/sec"
}
start_daemon "$topo" || { finish; exit; }
fip rdm1 -e rdm -S 64 -I 1000
start_daemon "$topo" || { finish; exit; }
fip rdm3 -e rdm -S 64 -I 1000 && {
	cmp -s "$tmp/rdm1.rows" "$tmp/rdm3.rows" ||
		fail "fi_pingpong RDM not repeatable: $(cat "$tmp/rdm1.rows") then $(cat "$tmp/rdm3.rows")"
}
start_daemon "$topo" || { finish; exit; }
fip rdm2 -e rdm -S 64 -I 2000 && [ -s "$tmp/rdm1.rows" ] && {
	t1=$(run_us rdm1 1000)
	t2=$(run_us rdm2 2000)
	per=$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.3f", (b - a) / 2000 }')
	echo "fi_pingpong RDM 64 B: $(usec rdm1) usec/xfer printed (with the connection), $per per transfer beyond it"
	awk -v p="$per" -v m="$want" 'BEGIN { exit !(p >= m * 0.98 && p <= m * 1.15) }' ||
		fail "fi_pingpong RDM: $per usec per transfer, a 64-byte send takes $want"
}

start_daemon "$topo" --set fabric=roce || { finish; exit; }
want=$(predict --set fabric=roce)
fip roce -e msg -S 64 -I 1000 && {
	got=$(usec roce)
	echo "fi_pingpong MSG 64 B on RoCE: $got usec/xfer, simulator $want"
	[ "$got" = "$want" ] || fail "fi_pingpong MSG on RoCE: $got usec/xfer, simulator predicts $want"
}
finish
