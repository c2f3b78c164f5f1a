#!/usr/bin/env bash
# tests/interop/shim_ucx.sh - UCX on the shim: Debian's ucx_info and
# ucx_perftest (ucx-utils), unmodified, between two hosts of one simulated
# HDR switch, the server named by its host name (docs/shim.md, "UCX"):
#  - ucx_info -d lists the device's rc_verbs and ud_verbs transports;
#  - UCT rc_verbs am_lat (8 B) and UCP tag_lat over rc_verbs (UD for the
#    wire-up): the median latency is what `ibfab run` predicts for an
#    8-byte send, to the printed digit, run after run on a fresh daemon, on
#    a loaded host too; the averages within 100%;
#  - UCP tag_lat over ud_verbs alone (UD's acknowledgements and the CQ's
#    events on UCX's async thread, which takes turns with the main thread:
#    docs/shim.md, "Threads"; its TCP side channel opened before the
#    server attaches: "Programs on their way"): the whole row the same to
#    the printed digit on two fresh daemons, the median within 25% above
#    the 8-byte send's prediction (UCX's UD path: its event handler and two
#    more polls);
#  - UCT put_lat (8 B) within 10% above ib_write_lat's prediction (the
#    receiver polls its CQ and its memory in turn);
#  - UCT put_bw (zero copy, 16 outstanding) of 64 KiB reaches 90% of the
#    link's data rate as ib_send_bw's prediction gives it (UCX's MB is 2^20
#    bytes); so does UCP tag_bw (rendezvous), on a loaded host too.
. "$IBFAB_SRC/tests/lib/e2e.sh"
. "$IBFAB_SRC/tests/shim/lib.sh"
need ucx_perftest ucx_info
topo="$IBFAB_SRC/topologies/examples/star-6.net"
export UCX_NET_DEVICES=ibfab0:1 UCX_WARN_UNUSED_ENV_VARS=n
port=13400

# ucxp NAME ARGS...: a server/client pair of ucx_perftest ARGS on a fresh
# daemon; the client's "Final:" row in $tmp/NAME.row (iterations, latency
# 50%ile, average, overall (usec), bandwidth average, overall (MB/s), rates)
ucxp() {
	local name=$1
	shift
	port=$((port + 1))
	start_daemon "$topo" || return 1
	pair "$name" "$port" ucx_perftest -p "$port" "$@" -- ucx_perftest -p "$port" "$@" h0 ||
		return 1
	awk '$1 == "Final:" { $1 = ""; print }' "$tmp/$name.cli" >"$tmp/$name.row"
	[ -s "$tmp/$name.row" ] || { fail "$name: no Final row"; return 1; }
}
col() { awk -v c="$2" '{ print $c; exit }' "$tmp/$1.row"; }
within() { awk -v a="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(a >= lo && a <= hi) }'; }
predict() {
	"$IBFAB" run --topo "$topo" --traffic "perftest:$1,src=h1,dst=h0" "${@:2}" |
		awk '/#bytes/ { on = 1; next } /^---/ { on = 0 } on && NF >= 4 { print $5; exit }'
}
lat=$(predict op=send,mode=lat,sizes=8)
# ib_send_bw's 64 KiB figure, Gb/s -> MiB/s (UCX's MB)
bw=$("$IBFAB" run --topo "$topo" --set hca.max_inline=0 \
	--traffic "perftest:op=send,mode=bw,sizes=65536,src=h1,dst=h0" |
	awk '/#bytes/ { on = 1; next } /^---/ { on = 0 } on && $1 == 65536 { printf "%.0f", $4 * 1e9 / 8 / 1048576; exit }')

start_daemon "$topo" || { finish; exit; }
shim h0 ucx_info -d >"$tmp/info.out" 2>&1 || fail "ucx_info -d: exit $?"
for t in rc_verbs ud_verbs; do
	grep -A1 "Transport: $t" "$tmp/info.out" | grep -q 'Device: ibfab0:1' ||
		fail "ucx_info -d lists no $t on ibfab0:1"
done

# lat NAME AVG_PCT ARGS...: the median to the printed digit, the average within AVG_PCT%
check_lat() {
	local name=$1 pct=$2 med avg
	med=$(col "$name" 2)
	avg=$(col "$name" 3)
	echo "ucx_perftest $name: median $med usec, average $avg, simulator $lat"
	[ "$(printf '%.2f' "$med")" = "$lat" ] || fail "$name: median $med usec, simulator predicts $lat"
	# the prediction is printed to 0.01 us: the average may sit half of it below
	within "$avg" "$(awk -v l="$lat" 'BEGIN { print l - 0.005 }')" \
		"$(awk -v l="$lat" -v p="$pct" 'BEGIN { print l * (1 + p / 100) }')" ||
		fail "$name: average $avg usec, more than $pct% above $lat"
}
ucxp am_lat -x rc_verbs -d ibfab0:1 -t am_lat -w 100 -n 1000 && check_lat am_lat 100
ucxp am_lat2 -x rc_verbs -d ibfab0:1 -t am_lat -w 100 -n 1000 && {
	[ "$(col am_lat 2)" = "$(col am_lat2 2)" ] ||
		fail "am_lat not repeatable: median $(col am_lat 2) then $(col am_lat2 2)"
}
UCX_TLS=rc_verbs,ud_verbs,self ucxp tag_rc -t tag_lat -w 100 -n 1000 && check_lat tag_rc 100
UCX_TLS=rc_verbs,ud_verbs,self ucxp tag_bw -t tag_bw -w 10 -n 200 -s 65536 && {
	got=$(col tag_bw 5)
	echo "ucx_perftest tag_bw 64 KiB: $got MB/s, the link $bw MB/s"
	within "$got" "$((bw * 90 / 100))" "$((bw * 101 / 100))" || fail "tag_bw: $got MB/s, the link gives $bw"
}
UCX_TLS=ud_verbs,self ucxp tag_ud -t tag_lat -w 100 -n 1000 &&
	UCX_TLS=ud_verbs,self ucxp tag_ud2 -t tag_lat -w 100 -n 1000 && {
	med=$(col tag_ud 2)
	echo "ucx_perftest tag_lat over ud_verbs: $(cat "$tmp/tag_ud.row" | awk '{ print "median " $2 " usec, average " $3 }'), simulator $lat"
	cmp -s "$tmp/tag_ud.row" "$tmp/tag_ud2.row" ||
		fail "tag_lat over ud_verbs not repeatable: $(cat "$tmp/tag_ud.row") then $(cat "$tmp/tag_ud2.row")"
	within "$med" "$lat" "$(awk -v l="$lat" 'BEGIN { print l * 1.25 }')" ||
		fail "tag_lat over ud_verbs: median $med usec, not within 25% above $lat"
}
ucxp put_bw -x rc_verbs -d ibfab0:1 -t put_bw -D zcopy -s 65536 -O 16 -w 10 -n 400 && {
	got=$(col put_bw 5)
	echo "ucx_perftest put_bw 64 KiB (UCT, zero copy): $got MB/s, the link $bw MB/s"
	within "$got" "$((bw * 90 / 100))" "$((bw * 101 / 100))" || fail "put_bw: $got MB/s, the link gives $bw"
}
# put_lat: the receiver polls its CQ and looks at its memory in turn; the
# WRITE's landing ends its poll, so it sees the bytes within a poll's cost
# of ib_write_lat's figure (before: the poll's back-off, 2-100 us)
wlat=$(predict op=write,mode=lat,sizes=8)
ucxp put_lat -x rc_verbs -d ibfab0:1 -t put_lat -w 100 -n 1000 && {
	med=$(col put_lat 2)
	echo "ucx_perftest put_lat 8 B (UCT): median $med usec, ib_write_lat predicted $wlat"
	within "$med" "$wlat" "$(awk -v l="$wlat" 'BEGIN { print l * 1.10 }')" ||
		fail "put_lat: median $med usec, not within 10% above ib_write_lat's $wlat"
}
finish
