#!/bin/bash
# background.sh - a workload beside background load (`--trace` with
# `--traffic`), on the built-in 16-host fat tree: a 16 MiB ring allreduce
# over the 16 hosts, alone and beside a permutation of 1 MiB messages on
# every host (1,000 each).
#  - beside the load the allreduce is slower (it shares every host link:
#    at least 1.5x), and the run ends with it: the background got part of
#    its messages through, which the summary and the JSON's `background`
#    say;
#  - the JSON's flows are the workload's transfers (480), not the
#    background's messages; two runs give the same bytes (--reproducible);
#  - a tiny background between two hosts barely moves it.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
printf 'ranks 16\nar: allreduce 16MiB\n' > "$tmp/ar.trace"
run() {	# name, ibfab run's arguments
	local name=$1
	shift
	"$IBFAB" run --trace "$tmp/ar.trace" --reproducible --json "$tmp/$name.json" "$@" \
		> "$tmp/$name.txt" 2>&1 || fail "$name: $(tail -2 "$tmp/$name.txt")"
}
run alone
run busy --traffic 'permutation:size=1MiB,count=1000'
run busy2 --traffic 'permutation:size=1MiB,count=1000'
run light --traffic 'p2p:src=h0,dst=h1,size=4KiB,count=10'
cmp -s "$tmp/busy.json" "$tmp/busy2.json" || fail "two runs beside the same background differ"
grep -q "^background     permutation:size=1MiB,count=1000$" "$tmp/busy.txt" ||
	fail "the background spec: $(grep -A1 '^traffic' "$tmp/busy.txt")"
grep -qE "^background     [0-9]+ / 16000 messages delivered by the workload's end; median" "$tmp/busy.txt" ||
	fail "the background's line: $(grep '^background' "$tmp/busy.txt")"
python3 - "$tmp" <<'PY' || fail "background figures"
import json, sys
t = sys.argv[1]
a, b, l = (json.load(open(f"{t}/{n}.json")) for n in ("alone", "busy", "light"))
ta, tb, tl = (x["collectives"][0]["end_ps"] - x["collectives"][0]["start_ps"] for x in (a, b, l))
bg = b["background"]
print(f"ok: allreduce alone {ta / 1e6:.1f} us, beside the permutation {tb / 1e6:.1f} us "
      f"({tb / ta:.2f}x; background {bg['messages_delivered']}/{bg['messages_total']} by then), "
      f"beside 10 small messages {tl / 1e6:.1f} us")
bad = []
if not tb >= 1.5 * ta: bad.append("not slower beside the permutation")
if not 0 < bg["messages_delivered"] < bg["messages_total"] == 16000: bad.append(f"background {bg}")
if b["sim_time_ps"] != b["collectives"][0]["end_ps"]: bad.append("the run did not end with the workload")
if len(b["flows"]) != 480 or b["messages_total"] != 480: bad.append(f"{len(b['flows'])} flows")
if "background" in a: bad.append("a background object without --traffic")
if not ta <= tl <= 1.02 * ta: bad.append(f"the light background: {tl} against {ta}")
for x in bad: print("  ", x)
sys.exit(1 if bad else 0)
PY
finish
