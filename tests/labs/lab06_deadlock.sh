#!/bin/bash
# lab06_deadlock.sh - every claim of docs/labs/06-deadlock.md: the check's
# cycle and exit status under minhop, updn acyclic, the minhop all-to-all
# stalling on a named credit loop, updn delivering it, equal hop counts.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
R=$IBFAB_SRC/topologies/examples/ring-4.net
"$IBFAB" topo check "$R" --routing minhop > "$tmp/min.txt" 2>&1
[ $? = 1 ] || fail "topo check minhop: exit status not 1"
grep -qF "CYCLE on VL 0: 4 channels in 1 cyclic component; one cycle of 4:" "$tmp/min.txt" &&
	grep -qF "sw0[4] -> sw3[4] -> sw2[4] -> sw1[4] -> sw0[4]" "$tmp/min.txt" ||
	fail "the minhop cycle: $(grep -A2 CYCLE "$tmp/min.txt")"
"$IBFAB" topo check "$R" --routing updn > "$tmp/updn.txt" 2>&1 || fail "topo check updn failed"
grep -qF "acyclic: no credit loop can form with this routing" "$tmp/updn.txt" || fail "updn not acyclic"
for f in min updn; do
	grep -q "^  mean 3.14 hops" "$tmp/$f.txt" || fail "$f: mean hops $(grep 'mean .* hops' "$tmp/$f.txt")"
done
"$IBFAB" run --topo "$R" --routing minhop --traffic alltoall:size=1MiB > "$tmp/run1" 2>&1 &&
	fail "the minhop all-to-all did not stall"
grep -qF "stalled at 21.567 us: 0 of 56 messages delivered (0 lost), 84 packets stuck in switch buffers: credit loop on VL 0 through 4 switches" "$tmp/run1" ||
	fail "the stall: $(head -c 300 "$tmp/run1")"
"$IBFAB" run --topo "$R" --routing updn --traffic alltoall:size=1MiB > "$tmp/run2" 2>&1 ||
	fail "the updn all-to-all: $(tail -2 "$tmp/run2")"
grep -q "^messages *56 / 56 delivered" "$tmp/run2" && grep -q "^simulated *520.916 us" "$tmp/run2" ||
	fail "updn: $(grep -E '^(messages|simulated)' "$tmp/run2")"
finish
