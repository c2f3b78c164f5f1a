#!/usr/bin/env bash
# tests/interop/shim_qperf.sh - Debian's qperf, unmodified, on the verbs shim
# (docs/shim.md) as server/client pairs on one simulated HDR switch, the
# client naming the server by its host name (the shim's getaddrinfo); each
# side must exit 0 (the last client sends qperf's `quit`).
#
#  - rc_bw: 200,000 SENDs of 64 KiB (-n: qperf's bandwidth tests may count
#    messages instead of seconds), 0.53 simulated seconds. qperf prints the
#    bytes received over the receiver's interval, which it reads from
#    times() in clock ticks of 10 ms: the rate moves by up to one tick in
#    53 (1.9%) with where the test starts (with 50,000 messages, 13 or 14
#    ticks: 25.2 or 23.4 GB/s). Within 5% of what the simulator predicts
#    for ib_send_bw (`ibfab run --traffic perftest:op=send,mode=bw`,
#    nothing inline), and the same to the printed digit on a fresh daemon.
#  - rc_lat, ud_lat: qperf's latency tests run for whole seconds (-t 1, its
#    shortest: some 490,000 exchanges of one byte, about 100 s of wall time
#    each on two cores, docs/performance.md). They inline their byte, as
#    ib_send_lat does, and must print the simulator's send latency within
#    5% (a UD SEND of one packet is timed as RC's).
. "$IBFAB_SRC/tests/lib/e2e.sh"
. "$IBFAB_SRC/tests/shim/lib.sh"
need qperf
topo="$IBFAB_SRC/topologies/examples/star-6.net"
# each latency test is one simulated second of exchanges
export SHIM_TIMEOUT=400

# predict SPEC [ARGS...]: the simulator's own table rows for a perftest spec
predict() {
	local spec=$1
	shift
	"$IBFAB" run --topo "$topo" "$@" --traffic "perftest:$spec,src=h1,dst=h0" |
		awk '/#bytes/ { on = 1; next } /^---/ { on = 0 } on && NF >= 4'
}
# near A B PCT: |A - B| <= PCT% of B
near() { awk -v a="$1" -v b="$2" -v p="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= p / 100 * b) }'; }
# figure NAME KEY: qperf's printed value of KEY ("bw", "latency")
figure() { awk -v k="$2" '$1 == k && $2 == "=" { print $3; exit }' "$tmp/$1.cli"; }
# unit NAME KEY: its unit
unit() { awk -v k="$2" '$1 == k && $2 == "=" { print $4; exit }' "$tmp/$1.cli"; }

port=19770
# qp NAME TESTS...: a fresh daemon, a qperf server on h0 and a client on h1
# running TESTS, then quit
qp() {
	local name=$1
	shift
	port=$((port + 1))
	start_daemon "$topo" || return 1
	pair "$name" "$port" qperf -lp "$port" -- qperf -lp "$port" h0 "$@" quit
}

# 1. rc_bw, twice
bw_want=$(predict "op=send,sizes=64K,mode=bw" --set hca.max_inline=0 |
	awk '$1 == 65536 { printf "%.4f", $4 / 8 }')	# Gb/s -> GB/s
for run in 1 2; do
	qp "bw$run" -n 200000 rc_bw || continue
	got=$(figure "bw$run" bw)
	[ "$(unit "bw$run" bw)" = GB/sec ] || fail "rc_bw: unit '$(unit "bw$run" bw)', expected GB/sec"
	echo "qperf rc_bw (run $run): $got GB/s, simulator $bw_want GB/s"
	near "$got" "$bw_want" 5 || fail "rc_bw: $got GB/s, not within 5% of $bw_want"
done
[ -n "$(figure bw1 bw)" ] && [ "$(figure bw1 bw)" = "$(figure bw2 bw)" ] ||
	fail "rc_bw not repeatable: $(figure bw1 bw) then $(figure bw2 bw)"

# 2. rc_lat and ud_lat, one simulated second each
lat_want=$(predict "op=send,sizes=1,mode=lat" | awk '$1 == 1 { print $5 }')
for t in rc_lat ud_lat; do
	qp "$t" -t 1 "$t" || continue
	got=$(figure "$t" latency)
	[ "$(unit "$t" latency)" = us ] || fail "$t: unit '$(unit "$t" latency)', expected us"
	echo "qperf $t: $got us, simulator $lat_want us"
	near "$got" "$lat_want" 5 || fail "$t: $got us, not within 5% of $lat_want"
done
stop_daemon
finish
