#!/bin/bash
# bench_pairs.sh - bench/pairs (how a change is measured against the binary
# before it): one line per pair and a summary of the ratios, adjacent and
# side by side; a failing run or bad arguments stop it with a message and
# a non-zero exit, not a ratio of nothing.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
: "${IBFAB_SRC:?IBFAB_SRC must name the source tree}"
pairs=$IBFAB_SRC/bench/pairs

for mode in "" --side-by-side; do
	# shellcheck disable=SC2086
	if ! "$pairs" -n 3 $mode "$IBFAB" "$IBFAB" -- run --quiet \
			--traffic permutation:size=32MiB > "$tmp/out" 2> "$tmp/err"; then
		fail "pairs $mode exited non-zero"; cat "$tmp/err"
	fi
	cat "$tmp/out"
	[ "$(grep -c '^pair  *[0-9]*: A  *[0-9.]* s  B  *[0-9.]* s  B/A [0-9.]*$' "$tmp/out")" = 3 ] ||
		fail "pairs $mode: not three pair lines"
	grep -q "^B/A user time: median [0-9.]* (quartiles [0-9.]*-[0-9.]*, range [0-9.]*-[0-9.]*); B faster in [0-3] of 3;" "$tmp/out" ||
		fail "pairs $mode: no summary line"
done
grep -q "side by side, 3 pairs" "$tmp/out" || fail "--side-by-side not said"

# a run that fails: its error, exit 1 (side by side too: both runs ended)
for mode in "" --side-by-side; do
	# shellcheck disable=SC2086
	"$pairs" -n 2 $mode "$IBFAB" "$IBFAB" run --topo "$tmp/none.topo" > "$tmp/out" 2> "$tmp/err"
	rc=$?
	[ $rc = 1 ] || fail "failing run $mode: exit $rc, not 1"
	grep -q "pairs: .* failed" "$tmp/err" || fail "failing run $mode: not said"
	grep -q "none.topo" "$tmp/err" || fail "failing run $mode: ibfab's own error not shown"
	grep -q "B/A user time" "$tmp/out" && fail "failing run $mode: a summary printed anyway"
done

# bad arguments: exit 2 and what was wrong
for args in "-n 0 $IBFAB $IBFAB run" "-n x $IBFAB $IBFAB run" "$IBFAB run" "$tmp/nope $IBFAB run"; do
	# shellcheck disable=SC2086
	"$pairs" $args > "$tmp/out" 2> "$tmp/err"
	rc=$?
	[ $rc = 2 ] || fail "pairs $args: exit $rc, not 2"
	grep -q "^pairs: " "$tmp/err" || fail "pairs $args: no message"
done
"$pairs" --help | grep -q "side-by-side" || fail "--help does not describe --side-by-side"
finish
