#!/bin/bash
# trace.sh - `ibfab run --trace`: the shipped example workloads and an
# imported nccl-tests sweep replay to completion with the nccl-tests table,
# the JSON "collectives"/"ranks"/"critical_path" and a Perfetto timeline;
# --explain prints an algorithm's steps; bad uses are refused.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
topo=$IBFAB_SRC/topologies/examples/fattree-16.topo
ex=$IBFAB_SRC/traces/examples

for t in dp-train moe pipeline; do
	if ! "$IBFAB" run --topo "$topo" --trace "$ex/$t.trace" --json "$tmp/$t.json" \
		--timeline "$tmp/$t.tl.json" --reproducible > "$tmp/$t.out" 2> "$tmp/$t.err"; then
		fail "$t: exit non-zero: $(cat "$tmp/$t.err")"
		continue
	fi
	grep -q "^critical path" "$tmp/$t.out" || fail "$t: no critical path line"
	python3 - "$tmp/$t.json" "$tmp/$t.tl.json" <<'PY' || fail "$t: JSON or timeline wrong"
import json, sys
d = json.load(open(sys.argv[1]))
tl = json.load(open(sys.argv[2]))
assert d["ranks"] and all(r["end_ps"] > 0 for r in d["ranks"]), "ranks"
assert d["critical_path"]["steps"] > 0, "critical path"
for c in d["collectives"]:
    assert c["end_ps"] > c["start_ps"] and c["busbw_gbps"] > 0, c
assert any(e.get("ph") == "X" for e in tl["traceEvents"]), "timeline events"
PY
done
grep -q "^# *size *count *type" "$tmp/dp-train.out" || fail "dp-train: no nccl-tests table"
# With no output that lists flows the replay builds no flow list and the
# summary reads the steps (trace_results_flows): the same text as above.
for t in dp-train moe pipeline; do
	"$IBFAB" run --topo "$topo" --trace "$ex/$t.trace" --reproducible > "$tmp/$t.lean" 2>&1 ||
		fail "$t: exit non-zero without --json"
	cmp -s "$tmp/$t.out" "$tmp/$t.lean" ||
		fail "$t: the summary without --json differs: $(diff "$tmp/$t.out" "$tmp/$t.lean" | head -4)"
done
# an nccl-tests command line: a sweep whose busbw approaches the link (24.8 GB/s)
"$IBFAB" run --topo "$topo" --trace "$IBFAB_SRC/tests/golden/import/nccl_tests_sweep.txt" \
	--quiet > "$tmp/sweep.out" 2>&1 || fail "nccl-tests sweep: exit non-zero"
last=$(grep -E '^ +[0-9]+ ' "$tmp/sweep.out" | tail -1 | awk '{print $8}')
python3 -c "import sys; b=float('$last'); sys.exit(0 if 23.5 < b < 24.9 else 1)" ||
	fail "nccl-tests sweep: busbw at the largest size is $last GB/s, not near 24.8"
grep -q "^#  *size .* #wrong  name$" "$tmp/sweep.out" || fail "nccl-tests table: no name column"
grep -q " N/A  allreduce 134217728B #0 x20$" "$tmp/sweep.out" ||
	fail "nccl-tests sweep: a size's 20 iterations are not one row"
# identical collectives on lines of their own are rows of their own; a
# repeat block's iterations of one line are one row
printf 'ranks 4\nl1: allreduce 1MiB\nl2: allreduce 1MiB\nl3: allreduce 1MiB\nrepeat 3 {\n  it: allreduce 1MiB\n}\nallreduce 1MiB\n' > "$tmp/same.trace"
"$IBFAB" run --topo "$topo" --trace "$tmp/same.trace" > "$tmp/same.out" 2>&1 || fail "same.trace: exit non-zero"
names=$(grep ' N/A  ' "$tmp/same.out" | sed 's/.* N\/A  //' | tr '\n' ',')
[ "$names" = "l1,l2,l3,it.0 x3,op 6," ] || fail "identical collectives: rows named '$names'"
# --explain prints the ring's steps; unknown ops list the collectives
"$IBFAB" run --topo "$topo" --trace "$ex/dp-train.trace" --explain ar3.0 > "$tmp/ex.out" 2>&1 ||
	fail "--explain ar3.0 failed"
grep -q "rank 0 -> rank 1" "$tmp/ex.out" || fail "--explain: no steps"
"$IBFAB" run --topo "$topo" --trace "$ex/dp-train.trace" --explain nosuch > /dev/null 2> "$tmp/ex.err"
[ $? -eq 1 ] && grep -q "collectives: ar3.0" "$tmp/ex.err" || fail "--explain nosuch: no list"
# refusals: --explain without --trace, a bad trace (--trace with
# --traffic is a workload beside background load: tests/e2e/background.sh)
"$IBFAB" run --explain x 2> /dev/null
[ $? -eq 2 ] || fail "--explain without --trace not refused"
printf 'ranks 2\nsend 0 1 1KiB\nfrobnicate 0\n' > "$tmp/bad.trace"
"$IBFAB" run --topo "$topo" --trace "$tmp/bad.trace" 2> "$tmp/bad.err"
[ $? -eq 1 ] && grep -q "bad.trace:3" "$tmp/bad.err" || fail "bad trace: $(cat "$tmp/bad.err")"
# a trace cut short by sim.max_time_ns: said so, not called a stall, and
# nothing written (its report needs every step's end)
"$IBFAB" run --topo "$topo" --trace "$ex/moe.trace" --set sim.max_time_ns=1us \
	--json "$tmp/cut.json" > /dev/null 2> "$tmp/cut.err"
[ $? -eq 1 ] && grep -q "reached sim.max_time_ns (1000 ns) with [0-9]* of [0-9]* steps done" "$tmp/cut.err" &&
	! grep -q stalled "$tmp/cut.err" && [ ! -e "$tmp/cut.json" ] ||
	fail "trace cut by sim.max_time_ns: $(cat "$tmp/cut.err")"
# steps are counted alike everywhere, join steps left out: two allreduces
# of many flows, the second entered through joins (docs/collectives.md)
printf 'ranks 4\nallreduce 1M chunks=440 channels=7\nallreduce 1M chunks=355 channels=11\n' > "$tmp/joins.trace"
whole=$("$IBFAB" run --topo "$topo" --trace "$tmp/joins.trace" 2>&1 |
	sed -n 's/^workload .* ops (2 collectives), \([0-9]*\) steps.*/\1/p')
cut=$("$IBFAB" run --topo "$topo" --trace "$tmp/joins.trace" --set sim.max_time_ns=1 2>&1 |
	sed -n 's/.* with 0 of \([0-9]*\) steps done.*/\1/p')
[ -n "$whole" ] && [ "$whole" = "$cut" ] || fail "join steps counted unlike: report '$whole', cut run '$cut'"
# --csv with --trace: one collectives.csv row per collective
"$IBFAB" run --topo "$topo" --trace "$ex/moe.trace" --csv "$tmp/csv" --quiet > /dev/null ||
	fail "moe --csv: exit non-zero"
head -1 "$tmp/csv/collectives.csv" | grep -q "^name,collective,algorithm,protocol,bytes,ranks" ||
	fail "collectives.csv: no header"
[ "$(grep -c ',alltoall,' "$tmp/csv/collectives.csv")" -ge 2 ] || fail "collectives.csv: no alltoall rows"
# and links.csv samples the links over the whole replay (it was written
# empty once): about 1000 samples from the trace's estimate, the last within
# one interval of the end, the all-to-all's links saturated at times
"$IBFAB" run --topo "$topo" --trace "$ex/moe.trace" --json - --quiet > "$tmp/moe.end.json" ||
	fail "moe --json: exit non-zero"
python3 - "$tmp/csv/links.csv" "$tmp/moe.end.json" <<'PY' || fail "links.csv of a trace run: wrong"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
end = json.load(open(sys.argv[2]))["sim_time_ps"]
ts = sorted({int(r["time_ps"]) for r in rows})
assert 300 <= len(ts) <= 3000, f"{len(ts)} samples"
step = ts[1] - ts[0]
assert end - step <= ts[-1] <= end, f"last sample {ts[-1]}, end {end}, interval {step}"
assert max(float(r["util"]) for r in rows) > 0.99, "no saturated link"
PY
# --op sets the work request of specs that name none
w=$("$IBFAB" run --json - --quiet --reproducible --traffic p2p:src=h0,dst=h15,size=1MiB |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["flows"][0]["op"])')
r=$("$IBFAB" run --json - --quiet --reproducible --op read --traffic p2p:src=h0,dst=h15,size=1MiB |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["flows"][0]["op"])')
[ "$w $r" = "write read" ] || fail "--op read: flows say '$w' then '$r'"
"$IBFAB" run --op copy 2> /dev/null
[ $? -eq 2 ] || fail "--op copy not refused"
# mpi.proto=ucx: a 4-rank ring allreduce's 24 messages of 16 KiB go eager
# in two SENDs each below the threshold, by rendezvous from it; the summary
# and the JSON say so
printf 'ranks 4\nallreduce 64KiB algo=ring\n' >"$tmp/mpi.trace"
for th in 32KiB 16KiB; do
	"$IBFAB" run --trace "$tmp/mpi.trace" --set mpi.proto=ucx --set mpi.rndv_bytes=$th \
		--json "$tmp/mpi.json" >"$tmp/mpi.out" || fail "mpi.proto=ucx rndv $th: exit non-zero"
	m=$(python3 -c 'import json,sys; m = json.load(open(sys.argv[1]))["mpi"]
print(m["eager"], m["rendezvous"], m["sends"])' "$tmp/mpi.json")
	case $th in
	32KiB) want="24 0 48" ;;
	16KiB) want="0 24 24" ;;
	esac
	[ "$m" = "$want" ] || fail "mpi.proto=ucx rndv $th: eager, rendezvous, sends $m, want $want"
	grep -q "^mpi over ucx" "$tmp/mpi.out" || fail "mpi.proto=ucx: no 'mpi over ucx' line"
done
"$IBFAB" run --trace "$tmp/mpi.trace" --json "$tmp/mpi.json" --quiet >/dev/null
python3 -c 'import json,sys; sys.exit("mpi" in json.load(open(sys.argv[1])))' "$tmp/mpi.json" ||
	fail "mpi.proto=write: the JSON has an mpi object"
"$IBFAB" run --trace "$tmp/mpi.trace" --set mpi.proto=ucx --set fabric=tcp >/dev/null 2>"$tmp/mpi.err"
[ $? -eq 1 ] && grep -q "needs fabric=ib or roce" "$tmp/mpi.err" ||
	fail "mpi.proto=ucx on tcp: $(cat "$tmp/mpi.err")"
# --no-flows: the JSON without "flows" (a trace's transfers, a traffic's
# messages), the rest byte for byte; flows.csv still has them
for load in "--trace $ex/dp-train.trace" "--traffic permutation:size=64KiB"; do
	# shellcheck disable=SC2086
	"$IBFAB" run --topo "$topo" $load --reproducible --quiet --json "$tmp/f.json" > /dev/null 2>&1 &&
		"$IBFAB" run --topo "$topo" $load --reproducible --quiet --json "$tmp/nf.json" --no-flows \
			> /dev/null 2>&1 &&
		"$IBFAB" run --topo "$topo" $load --quiet --no-flows --csv "$tmp/nfcsv" > /dev/null 2>&1 ||
		{ fail "--no-flows ($load): exit non-zero"; continue; }
	python3 - "$tmp/f.json" "$tmp/nf.json" "$tmp/nfcsv/flows.csv" <<'PY' || fail "--no-flows ($load): see above"
import json, re, sys
full, lean = open(sys.argv[1]).read(), open(sys.argv[2]).read()
n = len(json.loads(full)["flows"])
rows = sum(1 for _ in open(sys.argv[3])) - 1
cut = re.sub(r'\n( *)"flows": \[.*?\n\1\],', "", full, count=1, flags=re.S)
bad = []
if "flows" in json.loads(lean) or n == 0:
    bad.append(f"flows: {n} with, {'some' if 'flows' in json.loads(lean) else 'none'} without")
if cut != lean:
    bad.append("the rest of the JSON differs")
if rows != n:
    bad.append(f"flows.csv has {rows} rows for {n} flows")
for b in bad:
    print("  ", b)
sys.exit(1 if bad else 0)
PY
done
# --profile: a trace's steps, and the most the replay held at once - a
# 16-rank ring allreduce made as the replay reaches it (2 x 16 x 15 steps,
# none stored) holds a few rounds of it
printf 'ranks 16\nallreduce 16MiB algo=ring\n' > "$tmp/ring16.trace"
"$IBFAB" run --topo "$topo" --trace "$tmp/ring16.trace" --reproducible --profile \
	--json "$tmp/prof.json" > "$tmp/prof.out" 2>&1 || fail "--profile with a trace: exit non-zero"
python3 - "$tmp/prof.json" "$tmp/prof.out" <<'PY' || fail "--profile with a trace: see above"
import json, re, sys
p, txt = json.load(open(sys.argv[1]))["profile"], open(sys.argv[2]).read()
bad = []
if p.get("trace_steps") != 480 or p.get("trace_steps_stored") != 0:
    bad.append(f"trace_steps {p.get('trace_steps')}, stored {p.get('trace_steps_stored')}")
held = p.get("trace_steps_held", 0)
if not 16 <= held < 240:	# a round (16 steps) or more, fewer than half
    bad.append(f"trace_steps_held {held}")
if not re.search(rf"^trace steps +480, 0 of them stored .*, at most {held} held at once$", txt, re.M):
    bad.append("no trace steps line in the summary")
for b in bad:
    print("  ", b)
sys.exit(1 if bad else 0)
PY
finish
