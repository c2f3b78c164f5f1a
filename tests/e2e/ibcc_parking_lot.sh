#!/bin/bash
# ibcc_parking_lot.sh - InfiniBand congestion control on the parking lot
# (tests/validation/parking-lot.net: A, B, C and E on a chain of four
# switches all write to D at its end). Without CC each merge's round robin
# halves the share of the traffic from upstream: E gets half of D's link,
# C a quarter, B and A an eighth, so E ends at half the time of A and B and
# C at three quarters. Gran et al. (IPDPS 2010) found that IB CC on
# hardware solves the parking-lot problem "if the CC parameters are
# appropriately set"; with ibfab's defaults the flows end together at
# every link rate (the automatic CCTI_Timer, docs/congestion-control.md),
# where the former fixed 5 us timer left QDR as unfair as without CC.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
topo="$IBFAB_SRC/tests/validation/parking-lot.net"

# ends PRESET SIZE SETS...: "A B C E" end times (ms) of the four flows
ends() {
	local preset=$1 size=$2
	shift 2
	"$IBFAB" run --topo "$topo" --preset "$preset" --traffic "incast:dst=D,size=$size" \
		"$@" --json "$tmp/r.json" >/dev/null 2>&1 || { echo "run failed"; return; }
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["complete"] and d["messages_delivered"] == 4 and d["drops"] == 0
e = {f["src"]: f["end_ps"] / 1e9 for f in d["flows"]}
print(" ".join("%.4f" % e[h] for h in "ABCE"), d["ecn_marks"])' "$tmp/r.json"
}
check() { python3 -c "import sys; sys.exit(0 if ($1) else 1)" || fail "$2"; }
spread() { python3 -c "import sys; v = [float(x) for x in sys.argv[1:5]]; print('%.3f' % (max(v) / min(v)))" $1; }

# without CC: the parking lot's shares, 1/8 1/8 1/4 1/2
read -r a b c e marks <<<"$(ends qdr 16MiB)"
echo "QDR, ib.cc=off: A $a B $b C $c E $e ms"
check "abs($a / $e - 2) < 0.04 and abs($b / $e - 2) < 0.04" "off: A and B should end at twice E's time: $a $b vs $e"
check "abs($c / $e - 1.5) < 0.03" "off: C should end at 1.5 x E's time: $c vs $e"
check "$marks == 0" "off: $marks marks"
off_last=$a

for preset in qdr hdr xdr; do
	case $preset in qdr) size=16MiB ;; hdr) size=64MiB ;; xdr) size=128MiB ;; esac
	r=$(ends $preset $size --set ib.cc=on)
	s=$(spread "$r")
	echo "$preset, ib.cc=on: A B C E ends (ms) and marks: $r; last over first $s"
	check "$s < 1.2" "$preset: the flows should end together with CC (last over first $s)"
	[ "$preset" = qdr ] && {
		read -r a _ _ _ m <<<"$r"
		check "$m > 0" "qdr: no marks"
		last=$(python3 -c "import sys; print(max(float(x) for x in sys.argv[1:5]))" $r)
		check "$last < 1.05 * $off_last" "qdr: CC should cost under 5% of the link: $last vs $off_last ms"
	}
done

# the former fixed timer (5 us, 10 packets at QDR): the index decays faster
# than a quarter share's marks raise it, and the parking lot stays
r=$(ends qdr 16MiB --set ib.cc=on --set ib.cc.ccti_timer_us=5)
s=$(spread "$r")
echo "qdr, ib.cc=on, ccti_timer_us=5: $r; last over first $s"
check "$s > 1.5" "qdr with a 5 us timer should stay unfair (last over first $s)"
finish
