#!/usr/bin/env bash
# tests/interop/shim_pingpong.sh - Debian's ibverbs-utils, unmodified, on the
# verbs shim (docs/shim.md): ibv_devices, ibv_devinfo (-v), and the four
# ping-pong programs as server/client pairs on one simulated switch. Each
# pair must exit 0 on both sides and print the same simulated-time numbers
# run after run; a faster fabric (NDR) must print a shorter time, a loaded
# one a longer time.
. "$IBFAB_SRC/tests/lib/e2e.sh"
. "$IBFAB_SRC/tests/shim/lib.sh"
need ibv_devices ibv_devinfo ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong ibv_srq_pingpong
topo="$IBFAB_SRC/topologies/examples/star-6.net"
start_daemon "$topo" || { finish; exit; }

shim h0 ibv_devices >"$tmp/devices" 2>&1 || fail "ibv_devices exit $?"
grep -q ibfab0 "$tmp/devices" || fail "ibv_devices does not list ibfab0"
shim h2 ibv_devinfo >"$tmp/devinfo" 2>&1 || fail "ibv_devinfo exit $?"
grep -q "PORT_ACTIVE" "$tmp/devinfo" || fail "ibv_devinfo: port not active"
grep -q "port_lid:.*4" "$tmp/devinfo" || fail "ibv_devinfo: h2 should have LID 4: $(grep lid "$tmp/devinfo")"
shim h1 ibv_devinfo -v >"$tmp/devinfo-v" 2>&1 || fail "ibv_devinfo -v exit $?"
grep -q "active_speed:.*50.0 Gbps" "$tmp/devinfo-v" ||
	fail "ibv_devinfo -v: an HDR link should show 50 Gbps per lane: $(grep active_ "$tmp/devinfo-v")"

usec() { sed -n 's/.* = \([0-9.]*\) usec\/iter/\1/p' "$1"; }
run() {		# run NAME PORT PROG ARGS...: one pair, prints the client's usec/iter
	local name=$1 port=$2 prog=$3
	shift 3
	pair "$name" "$port" "$prog" -p "$port" "$@" -- "$prog" -p "$port" "$@" 127.0.0.1 || return 1
	local c s
	c=$(usec "$tmp/$name.cli")
	s=$(usec "$tmp/$name.srv")
	[ -n "$c" ] && [ "$c" = "$s" ] || fail "$name: client $c usec/iter, server $s"
	echo "$c"
}

rc1=$(run rc1 18622 ibv_rc_pingpong)
rc2=$(run rc2 18623 ibv_rc_pingpong)
[ -n "$rc1" ] && [ "$rc1" = "$rc2" ] || fail "rc_pingpong not repeatable: $rc1 then $rc2"
ev=$(run rc-e 18624 ibv_rc_pingpong -e)
[ "$ev" = "$rc1" ] || fail "rc_pingpong -e ($ev) should equal polling ($rc1): events cost no simulated time"
big=$(run rc-64k 18625 ibv_rc_pingpong -s 65536)
uc=$(run uc 18626 ibv_uc_pingpong)
ud=$(run ud 18627 ibv_ud_pingpong)
srq=$(run srq 18628 ibv_srq_pingpong)
echo "HDR usec/iter: rc $rc1, rc -e $ev, rc -s 65536 $big, uc $uc, ud $ud, srq $srq"
# 64 KiB messages take 16 x the wire time of 4 KiB: the round trip grows
awk -v a="$rc1" -v b="$big" 'BEGIN { exit !(b > 1.5 * a) }' ||
	fail "65536-byte ping-pong ($big) should be much slower than 4096 ($rc1)"

# NDR links are twice as fast: 64 KiB ping-pong gets quicker (not twice:
# the host model's PCIe and DMA costs stay)
start_daemon "$topo" --preset ndr || { finish; exit; }
ndr=$(run rc-ndr 18629 ibv_rc_pingpong -s 65536)
echo "NDR usec/iter: rc -s 65536 $ndr"
awk -v h="$big" -v n="$ndr" 'BEGIN { exit !(n < 0.95 * h) }' ||
	fail "NDR ($ndr usec) should beat HDR ($big usec) on 64 KiB"

# a loaded fabric: background incast into h0 (--traffic) runs in the same
# simulation, and the ping-pong through h0's congested link slows down
start_daemon "$topo" --traffic 'incast:dst=h0,n=4,size=64MiB' || { finish; exit; }
busy=$(run rc-loaded 18630 ibv_rc_pingpong -s 65536)
echo "HDR under incast usec/iter: rc -s 65536 $busy"
awk -v b="$busy" -v i="$big" 'BEGIN { exit !(b > 1.2 * i) }' ||
	fail "a loaded fabric ($busy usec) should slow the ping-pong (idle: $big usec)"
stop_daemon
grep -qi "error\|assert" "$tmp/serve.log" && fail "daemon log: $(grep -i 'error\|assert' "$tmp/serve.log" | head -3)"
finish
