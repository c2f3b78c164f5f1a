#!/bin/bash
# determinism.sh - the same inputs and seed give byte-identical outputs
# (docs/architecture.md) once --reproducible takes out the wall clock: the default
# run and a permutation run, JSON and CSV, each twice. A different seed must
# change the permutation, or the seed is not reaching the workload. The
# summary is the same whether an output lists the messages (--json: their
# records kept on disk) or not; test_fabric and test_cli_report check the
# compact list against the explicit one.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
run() { "$IBFAB" run --quiet --reproducible "$@" > /dev/null || fail "ibfab run $* exited non-zero"; }

run --json "$tmp/d1.json" --csv "$tmp/c1"
run --json "$tmp/d2.json" --csv "$tmp/c2"
cmp "$tmp/d1.json" "$tmp/d2.json" || fail "default run: JSON differs between two runs"
cmp "$tmp/c1/links.csv" "$tmp/c2/links.csv" || fail "default run: links.csv differs"
cmp "$tmp/c1/flows.csv" "$tmp/c2/flows.csv" || fail "default run: flows.csv differs"

P=(--traffic permutation:size=256KiB,count=2)
run "${P[@]}" --seed 7 --json "$tmp/p1.json" --csv "$tmp/q1"
run "${P[@]}" --seed 7 --json "$tmp/p2.json" --csv "$tmp/q2"
run "${P[@]}" --seed 8 --json "$tmp/p3.json"
cmp "$tmp/p1.json" "$tmp/p2.json" || fail "permutation, seed 7: JSON differs between two runs"
cmp "$tmp/q1/links.csv" "$tmp/q2/links.csv" || fail "permutation: links.csv differs"
cmp "$tmp/q1/flows.csv" "$tmp/q2/flows.csv" || fail "permutation: flows.csv differs"
cmp -s "$tmp/p1.json" "$tmp/p3.json" && fail "seeds 7 and 8 give the same JSON"

# --reproducible really removed the wall clock; without it, it is there
grep -q '"wall_s": 0,' "$tmp/d1.json" || fail "--reproducible: wall_s is not 0"
grep -q '"events_per_s"' "$tmp/d1.json" && fail "--reproducible: events_per_s present"
"$IBFAB" run --quiet --json "$tmp/w.json" > /dev/null
grep -q '"events_per_s"' "$tmp/w.json" || fail "without --reproducible: no events_per_s"

# the CSV files are well formed
python3 - "$tmp/c1" <<'PY' || fail "CSV content"
import csv, sys, os
d = sys.argv[1]
bad = []
rows = list(csv.DictReader(open(os.path.join(d, "links.csv"))))
if not rows: bad.append("links.csv has no rows")
cols = ["time_ps", "node", "port", "peer", "vl", "util", "buf_bytes", "credits"]
if rows and list(rows[0].keys()) != cols: bad.append(f"links.csv columns {list(rows[0].keys())}")
times = sorted({int(r["time_ps"]) for r in rows})
if len(times) < 100: bad.append(f"only {len(times)} samples (expected about 1000)")
if any(not 0 <= float(r["util"]) <= 1 for r in rows): bad.append("util outside [0,1]")
if not any(float(r["util"]) > 0.5 for r in rows): bad.append("no link ever busy")
if not any(int(r["buf_bytes"]) > 0 for r in rows): bad.append("buffers always empty")
flows = list(csv.DictReader(open(os.path.join(d, "flows.csv"))))
if not flows or any(r["done"] != "1" for r in flows): bad.append("flows.csv: unfinished flows")
if any(int(r["completion_ps"]) != int(r["end_ps"]) - int(r["start_ps"]) for r in flows):
    bad.append("flows.csv: completion_ps != end_ps - start_ps")
for b in bad: print("  ", b)
sys.exit(1 if bad else 0)
PY


# the summary with and without --json FILE: one stream past its
# 32,768-deep send queue, constant-rate and lossy datagrams, ping-pong
# chains, TCP, GPU staging, a time limit
same_summary() {
	"$IBFAB" run --reproducible "$@" > "$tmp/sc.txt" 2>&1 || fail "ibfab run $*: $(tail -2 "$tmp/sc.txt")"
	"$IBFAB" run --reproducible "$@" --json "$tmp/sj.json" > "$tmp/sj.txt" 2>&1 ||
		fail "ibfab run $* --json: $(tail -2 "$tmp/sj.txt")"
	cmp -s <(grep -v '^wall' "$tmp/sc.txt") <(grep -v '^wall' "$tmp/sj.txt") ||
		fail "the summary changes with --json on $*: $(diff <(grep -v '^wall' "$tmp/sc.txt") <(grep -v '^wall' "$tmp/sj.txt") | head -4)"
}
same_summary --traffic p2p:src=h0,dst=h1,size=64KiB,count=40000
same_summary --traffic incast:dst=h0,size=4KiB,count=300,gap=1us --traffic alltoall:size=8KiB,count=3
same_summary --set fabric=roce-lossy --traffic p2p:src=h0,dst=h1,size=1000B,count=2000,qp=ud \
	--traffic incast:dst=h1,size=1000B,count=500,qp=ud --traffic permutation:size=1MiB
same_summary --traffic pingpong:a=h0,b=h5,size=64B,count=200 --traffic p2p:src=h1,dst=h5,size=1MiB,count=3
same_summary --set fabric=tcp --traffic alltoall:size=64KiB
same_summary --set host.gpudirect=off --traffic p2p:src=h0,dst=h9,size=256KiB,count=40,mem=gpu
same_summary --set sim.max_time_ns=20000 --traffic shift:k=3,size=32KiB,count=4,gap=2us
finish
