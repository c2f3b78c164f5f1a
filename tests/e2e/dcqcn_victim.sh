#!/bin/bash
# dcqcn_victim.sh - the victim flow of the DCQCN paper (Zhu et al., SIGCOMM
# 2015, section 2.2, Figure 4) on its testbed (tests/validation/
# dcqcn-testbed.net, 40 Gb/s RoCE): H11-H14 send to R under T4 while VS
# sends to VR under T2, a path that shares only T1's up-links with the
# incast. With PFC alone the pauses spread back from T4 to T1, and VS gets
# what an incast flow gets: the paper measures 10 Gb/s in the median where
# 20 were expected, and 4.5 once H31 and H32 under T3 send to R too. With
# DCQCN (the paper's values, Kmin 5 KB, Kmax 200 KB, Pmax 1%) the victim
# keeps its rate whatever T3 sends (Figure 9). The paper takes the median
# of 250 transfers, over which ECMP maps the flows in different ways; here
# the median over five ECMP hash seeds. ibfab: 9.9 Gb/s with PFC alone (the
# paper's 10), 6.6 with H31 and H32 (the paper's 4.5: the same fall, less
# deep), 13.6 and 14.2 with DCQCN (flat; below 20 as the flows start at
# line rate with alpha 1 and the victim's 64 MiB end within the first
# tens of ms of recovery).
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
topo="$IBFAB_SRC/tests/validation/dcqcn-testbed.net"
paper="--set dcqcn.set=paper --set eth.kmin=5KB --set eth.kmax=200KB --set eth.pmax=0.01"

# median SENDERS SETS...: the victim's median rate over hash seeds 1..5, Gb/s
median() {
	local senders=$1 s t h
	shift
	for s in 1 2 3 4 5; do
		t="--traffic p2p:src=VS,dst=VR,size=64MiB"
		for h in $senders; do t="$t --traffic p2p:src=$h,dst=R,size=96MiB"; done
		# shellcheck disable=SC2086
		"$IBFAB" run --quiet --topo "$topo" --preset fdr10 --set fabric=roce \
			--set eth.hash_seed=$s "$@" $t --json "$tmp/v$s.json" >/dev/null 2>&1 ||
			{ fail "ibfab run (seed $s, $*)"; return; }
		python3 -c '
import json, sys
f = json.load(open(sys.argv[1]))["flows"][0]
assert f["src"] == "VS", f
print("%.2f" % (f["bytes"] * 8 / (f["end_ps"] - f["start_ps"]) * 1e3))' "$tmp/v$s.json"
	done | sort -g | sed -n 3p
}
incast="H11 H12 H13 H14"
pfc4=$(median "$incast" --set dcqcn.on=0)
pfc6=$(median "$incast H31 H32" --set dcqcn.on=0)
# shellcheck disable=SC2086
dc4=$(median "$incast" $paper)
# shellcheck disable=SC2086
dc6=$(median "$incast H31 H32" $paper)
echo "victim median, Gb/s: PFC alone $pfc4, with H31 and H32 $pfc6; DCQCN $dc4, with H31 and H32 $dc6"
check() { python3 -c "import sys; sys.exit(0 if ($1) else 1)" || fail "$2"; }
[ -n "$pfc4" ] && [ -n "$pfc6" ] && [ -n "$dc4" ] && [ -n "$dc6" ] || fail "a run gave no figure"
check "abs($pfc4 / 10 - 1) <= 0.10" "PFC alone: victim $pfc4 Gb/s, the paper's median 10 (within 10%)"
check "$pfc6 < 0.75 * $pfc4" "PFC alone: H31 and H32 should pull the victim down (paper 10 -> 4.5): $pfc4 -> $pfc6"
check "abs($dc6 / $dc4 - 1) <= 0.15" "DCQCN: the victim should not care about H31 and H32: $dc4 -> $dc6"
check "$dc4 > 1.3 * $pfc4" "DCQCN: the victim should recover from PFC's $pfc4: $dc4"
finish
