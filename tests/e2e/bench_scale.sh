#!/bin/bash
# bench_scale.sh - bench/scale (the partitioned engine on fabrics): its
# quick scenario on one thread and two, a table row each, the two-thread
# run's JSON one thread's ("same": yes), and the profile's figures in it;
# bad arguments stop it with a message and exit 2.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
: "${IBFAB_SRC:?IBFAB_SRC must name the source tree}"
scale=$IBFAB_SRC/bench/scale

if ! "$scale" --quick --ibfab "$IBFAB" --threads 2 --procs "" --out "$tmp/s" > "$tmp/out" 2> "$tmp/err"; then
	fail "bench/scale --quick exited non-zero: $(tail -3 "$tmp/err")"
fi
cat "$tmp/out"
grep -Eq '^perm1024 +one thread +1 +[0-9.]+ +[0-9.]+ +1\.00x +1\.00 +- +- +[0-9]+ +[0-9.]+M +-$' "$tmp/out" ||
	fail "no one-thread row"
grep -Eq '^perm1024 +threads +2 +[0-9.]+ +[0-9.]+ +[0-9.]+x +[0-9.]+ +[0-9]+% +1\.[0-9]{3} +[0-9]+ +[0-9.]+M +yes$' "$tmp/out" ||
	fail "no two-thread row with the same JSON"
[ -s "$tmp/s/fattree_levels_3_radix_16.topo" ] || fail "--out keeps no topology"
[ "$(wc -l < "$tmp/s/runs.jsonl")" = 2 ] || fail "--out: not two runs recorded"

"$scale" --bogus > "$tmp/out" 2>&1
[ $? = 2 ] || fail "an unknown argument: not exit 2"
grep -q "unknown argument '--bogus'" "$tmp/out" || fail "an unknown argument: $(head -1 "$tmp/out")"
"$scale" --runs x > "$tmp/out" 2>&1
[ $? = 2 ] || fail "--runs x: not exit 2"
"$scale" permx --ibfab "$IBFAB" > "$tmp/out" 2>&1
[ $? = 2 ] && grep -q "no scenario 'permx'" "$tmp/out" || fail "an unknown scenario: $(head -1 "$tmp/out")"
finish
