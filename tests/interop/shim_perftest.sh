#!/usr/bin/env bash
# tests/interop/shim_perftest.sh - Debian's perftest, unmodified, on the verbs
# shim (docs/shim.md): the latency tests (send, write, read, atomic) and the
# bandwidth tests (write -a, send, read, atomic) as server/client pairs on
# one simulated HDR switch. Each must exit 0 on both sides, print within 5%
# of what the simulator predicts for the same operation and path
# (`ibfab run --traffic perftest:...`), and repeat within 2%; then once more
# on the RoCE fabric. The shim's device is the ConnectX of the link's
# generation, so perftest inlines as on real hardware: its latency tests
# send 2 bytes inline (the simulator's default, hca.max_inline 220), its
# bandwidth tests nothing (hca.max_inline=0 for their prediction); the
# 2-byte latencies must equal `ibfab run`'s to the printed digit.
. "$IBFAB_SRC/tests/lib/e2e.sh"
. "$IBFAB_SRC/tests/shim/lib.sh"
need ib_send_lat ib_write_lat ib_read_lat ib_atomic_lat ib_write_bw ib_send_bw ib_read_bw ib_atomic_bw objdump
topo="$IBFAB_SRC/topologies/examples/star-6.net"
start_daemon "$topo" || { finish; exit; }

port=18660
# perf NAME PROG ARGS...: one pair; its result rows in $tmp/NAME.rows
perf() {
	local name=$1 prog=$2
	shift 2
	port=$((port + 1))
	pair "$name" "$port" "$prog" -p "$port" "$@" -- "$prog" -p "$port" "$@" 127.0.0.1 || return 1
	awk '/#bytes/ { on = 1; next } /^---/ { on = 0 } on && NF >= 4' "$tmp/$name.cli" >"$tmp/$name.rows"
	[ -s "$tmp/$name.rows" ] || fail "$name: no result rows"
}
# predict SPEC [ARGS...]: the simulator's own table rows for a perftest spec
# (bandwidth tests: nothing inline, as perftest's)
predict() {
	local spec=$1
	shift
	"$IBFAB" run --topo "$topo" "$@" --traffic "perftest:$spec,src=h1,dst=h0" |
		awk '/#bytes/ { on = 1; next } /^---/ { on = 0 } on && NF >= 4'
}
bw_predict() { predict "$1" --set hca.max_inline=0; }
# near A B PCT: |A - B| <= PCT% of B
near() { awk -v a="$1" -v b="$2" -v p="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= p / 100 * b) }'; }
col() { awk -v c="$2" -v s="$3" '$1 == s { print $c; exit }' "$1"; }

# latency: column 5 is t_typical (usec). ib_write_lat spins on its memory,
# and each of its exchanges costs the spin grace in wall time (docs/shim.md,
# "Time"): 400 of them show the same numbers as the default 1000.
wlat=(-n 400)
for t in send write read; do
	it=()
	[ "$t" = write ] && it=("${wlat[@]}")
	perf "$t-lat" "ib_${t}_lat" "${it[@]}" || continue
	got=$(col "$tmp/$t-lat.rows" 5 2)
	want=$(predict "op=$t,sizes=2,mode=lat" | awk '$1 == 2 { print $5 }')
	echo "ib_${t}_lat 2 B: $got usec typical, simulator $want"
	[ "$got" = "$want" ] || fail "ib_${t}_lat: $got usec, simulator predicts $want"
done
perf send-lat2 ib_send_lat && {
	a=$(col "$tmp/send-lat.rows" 5 2)
	b=$(col "$tmp/send-lat2.rows" 5 2)
	near "$a" "$b" 2 || fail "ib_send_lat not repeatable: $a then $b"
}
perf write-lat2 ib_write_lat "${wlat[@]}" && {
	a=$(col "$tmp/write-lat.rows" 5 2)
	b=$(col "$tmp/write-lat2.rows" 5 2)
	near "$a" "$b" 2 || fail "ib_write_lat not repeatable: $a then $b"
}
perf atomic-lat ib_atomic_lat && {
	a=$(col "$tmp/atomic-lat.rows" 5 8)
	r=$(col "$tmp/read-lat.rows" 5 2)
	echo "ib_atomic_lat 8 B: $a usec typical (ib_read_lat 2 B: $r)"
	# an atomic is a one-packet round trip like a small READ
	near "$a" "$r" 10 || fail "ib_atomic_lat ($a) far from a small READ ($r)"
}

# bandwidth: column 4 is BW average (Gb/s with --report_gbits)
perf write-bw-a ib_write_bw -a -n 100 --report_gbits && {
	bw_predict "op=write,sizes=2..8M,iters=100" >"$tmp/write-bw-a.pred"
	n=0
	while read -r bytes _ _ bw _; do
		want=$(col "$tmp/write-bw-a.pred" 4 "$bytes")
		n=$((n + 1))
		near "$bw" "$want" 5 || fail "ib_write_bw -a $bytes B: $bw Gb/s, simulator $want"
	done <"$tmp/write-bw-a.rows"
	[ "$n" -eq 23 ] || fail "ib_write_bw -a: $n sizes, expected 23"
	echo "ib_write_bw -a: $n sizes; 64 KiB $(col "$tmp/write-bw-a.rows" 4 65536) Gb/s," \
	     "simulator $(col "$tmp/write-bw-a.pred" 4 65536)"
}
for t in send read; do
	perf "$t-bw" "ib_${t}_bw" -n 1000 --report_gbits || continue
	got=$(col "$tmp/$t-bw.rows" 4 65536)
	want=$(bw_predict "op=$t,sizes=65536,iters=1000" | awk '$1 == 65536 { print $4 }')
	echo "ib_${t}_bw 64 KiB: $got Gb/s, simulator $want"
	near "$got" "$want" 5 || fail "ib_${t}_bw: $got Gb/s, simulator predicts $want"
done
perf atomic-bw ib_atomic_bw -n 1000 && {
	r=$(col "$tmp/atomic-bw.rows" 5 8)
	echo "ib_atomic_bw 8 B: $r Mpps"
	awk -v r="$r" 'BEGIN { exit !(r > 0.5) }' || fail "ib_atomic_bw: message rate $r Mpps"
}

# three hops (leaf, spine, leaf of a fat tree) instead of one switch: the
# latency grows by what the model says two more switches and cables cost
ft="$IBFAB_SRC/topologies/examples/fattree-16.topo"
start_daemon "$ft" || { finish; exit; }
SRV_HOST=h0 CLI_HOST=h15 perf ft-lat ib_send_lat && {
	got=$(col "$tmp/ft-lat.rows" 5 2)
	want=$("$IBFAB" run --topo "$ft" \
		--traffic "perftest:op=send,sizes=2,mode=lat,src=h15,dst=h0" |
		awk '$1 == 2 && NF >= 4 { print $5 }')
	one=$(col "$tmp/send-lat.rows" 5 2)
	echo "ib_send_lat h15 -> h0 over 3 switches: $got usec, simulator $want (one switch: $one)"
	near "$got" "$want" 5 || fail "3-hop ib_send_lat: $got usec, simulator predicts $want"
	awk -v a="$got" -v b="$one" 'BEGIN { exit !(a > b) }' || fail "3 hops ($got) not slower than 1 ($one)"
}

# the same program on the RoCE fabric: Ethernet link layer, GIDs instead of
# LIDs, RoCEv2 headers: a little less bandwidth, as the model says
ib=$(bw_predict "op=write,sizes=65536,iters=1000" | awk '$1 == 65536 { print $4 }')
start_daemon "$topo" --set fabric=roce || { finish; exit; }
perf roce-bw ib_write_bw -n 1000 --report_gbits && {
	got=$(col "$tmp/roce-bw.rows" 4 65536)
	want=$("$IBFAB" run --topo "$topo" --set fabric=roce --set hca.max_inline=0 \
		--traffic "perftest:op=write,sizes=65536,iters=1000,src=h1,dst=h0" |
		awk '$1 == 65536 && NF >= 4 { print $4 }')
	echo "RoCE ib_write_bw 64 KiB: $got Gb/s, simulator $want (IB: $ib)"
	grep -q "Link type *: Ethernet" "$tmp/roce-bw.cli" || fail "RoCE: perftest did not see an Ethernet link"
	near "$got" "$want" 5 || fail "RoCE ib_write_bw: $got Gb/s, simulator predicts $want"
	awk -v r="$got" -v i="$ib" 'BEGIN { exit !(r < i) }' || fail "RoCE ($got) should be below IB ($ib)"
}
# what a bandwidth test's loop of post and poll costs in requests to the
# daemon (wall time): a WRITE's completion comes after its post and two or
# three polls (a poll run parks, on its second empty poll, as long as the
# last run on that CQ waited), not six; the figure stays the model's
start_daemon "$topo" || { finish; exit; }
perf reqs-bw ib_write_bw -n 2000 && {
	stop_daemon
	served=$(sed -n 's/.*stopping: \([0-9]*\) requests served.*/\1/p' "$tmp/serve.log" | tail -1)
	echo "ib_write_bw -n 2000 64 KiB: $served requests to the daemon, both sides"
	[ -n "$served" ] && [ "$served" -le 10000 ] ||
		fail "ib_write_bw -n 2000: $served requests (a WRITE should cost at most 4 and set-up 2,000)"
}
stop_daemon
finish
