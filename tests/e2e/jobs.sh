#!/bin/bash
# jobs.sh - several jobs on one fabric: `--trace` repeated. Each job's
# ranks come after the previous jobs' (consecutive hosts under `map
# linear`), its collectives keep to its own ranks, and they all run at once
# on the built-in 16-host fat tree:
#  - two 8-rank jobs (an allreduce, a compute, a broadcast; an all-to-all)
#    replay exactly as one native trace with a communicator per job;
#  - a Chakra job beside a native one and 16 ranks of background traffic;
#  - jobs placed differently (map random beside map linear) are refused,
#    naming the file; jobs with more ranks together than the fabric has
#    hosts are refused naming each job and its ranks.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
printf 'ranks 8\nar: allreduce 16MiB\ncompute all 10us\nbc: broadcast 4MiB root=2\n' > "$tmp/j1.trace"
printf 'ranks 8\nmap linear\na2a: alltoall 8MiB\n' > "$tmp/j2.trace"
{
	printf 'ranks 16\nmap linear\ncomm a = 0-7\ncomm b = 8-15\nar: allreduce 16MiB comm=a\n'
	for r in 0 1 2 3 4 5 6 7; do echo "compute $r 10us"; done
	printf 'bc: broadcast 4MiB root=2 comm=a\na2a: alltoall 8MiB comm=b\n'
} > "$tmp/twin.trace"
"$IBFAB" run --trace "$tmp/j1.trace" --trace "$tmp/j2.trace" --reproducible --json "$tmp/jobs.json" \
	> "$tmp/jobs.txt" 2>&1 || fail "two jobs: $(tail -2 "$tmp/jobs.txt")"
"$IBFAB" run --trace "$tmp/twin.trace" --reproducible --json "$tmp/twin.json" > "$tmp/twin.txt" 2>&1 ||
	fail "the twin: $(tail -2 "$tmp/twin.txt")"
grep -A1 "^traffic        $tmp/j1.trace" "$tmp/jobs.txt" | grep -q "^               $tmp/j2.trace" ||
	fail "the summary names both jobs: $(grep -A1 '^traffic' "$tmp/jobs.txt")"
python3 - "$tmp/jobs.json" "$tmp/twin.json" <<'PY' || fail "two jobs and their twin differ"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
key = lambda x: [(c["name"], c["ranks"], c["start_ps"], c["end_ps"]) for c in x["collectives"]]
print(f"ok: two jobs end at {a['sim_time_ps'] / 1e6:.3f} us, one trace with two communicators at "
      f"{b['sim_time_ps'] / 1e6:.3f} us; {key(a)}")
sys.exit(0 if a["sim_time_ps"] == b["sim_time_ps"] and key(a) == key(b) and
         [r["end_ps"] for r in a["ranks"]] == [r["end_ps"] for r in b["ranks"]] else 1)
PY
# a Chakra job (ranks 8-15) beside a native one, and background load
export PYTHONPATH="$IBFAB_SRC/tests/lib"
python3 -c "import sys; from chakra_et import dp_step; dp_step(sys.argv[1])" "$tmp" || fail "chakra_et"
"$IBFAB" run --trace "$tmp/j1.trace" --trace "$tmp/dp.0.et" --traffic 'p2p:src=h0,dst=h15,size=64KiB,count=100' \
	--reproducible --json "$tmp/mix.json" > "$tmp/mix.txt" 2>&1 || fail "a Chakra job beside: $(tail -2 "$tmp/mix.txt")"
python3 - "$tmp/mix.json" <<'PY' || fail "the mixed jobs"
import json, sys
a = json.load(open(sys.argv[1]))
names = [(c["name"], c["ranks"]) for c in a["collectives"]]
print(f"ok: a native and a Chakra job with background load: {names}, background "
      f"{a['background']['messages_delivered']}/{a['background']['messages_total']}")
sys.exit(0 if names == [("ar", 8), ("bc", 8), ("ncclKernel_AllReduce", 8)] and len(a["ranks"]) == 16 else 1)
PY
printf 'ranks 4\nmap random seed=3\nallreduce 1MiB\n' > "$tmp/rnd.trace"
"$IBFAB" run --trace "$tmp/j1.trace" --trace "$tmp/rnd.trace" > "$tmp/err.txt" 2>&1 && fail "map random beside map linear: accepted"
grep -q "rnd.trace: jobs side by side are placed linearly" "$tmp/err.txt" || fail "map random: $(cat "$tmp/err.txt")"
"$IBFAB" run --trace "$tmp/j1.trace" --trace "$tmp/j2.trace" --trace "$tmp/j2.trace" > "$tmp/err.txt" 2>&1 &&
	fail "24 ranks on 16 hosts: accepted"
grep -qF "the 3 jobs have 24 ranks ($tmp/j1.trace 8, $tmp/j2.trace 8, $tmp/j2.trace 8) but the fabric has 16 hosts" \
	"$tmp/err.txt" || fail "too many ranks: $(cat "$tmp/err.txt")"
finish
