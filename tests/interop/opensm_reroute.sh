#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# opensm_reroute.sh - interop: a run on the real OpenSM's tables that loses
# a cable, with OpenSM's own tables for the new state installed mid-run
# (`--fault 'lft FILE at TIME'`, docs/faults.md).
#
# ibsim builds fattree-16 and OpenSM (minhop, one sweep) dumps its tables;
# ibsim then builds the same fabric without the spine0[1] <-> leaf0[5]
# cable and OpenSM sweeps it with the same cache directory, so it keeps
# every LID (its guid2lid file, as a running OpenSM keeps them), and dumps
# the new tables. ibfab runs a 256 KiB all-to-all over the first dump, the
# cable dies at 20 us and the second dump is installed at 1 ms: every
# message is delivered and the new tables are acyclic. Without the second
# dump the QPs whose routes cross the dead cable spend their retries. (A
# dump whose LIDs moved is refused before the run: tests/e2e/faults.sh.)
#
# Exit 77 (skipped) when a tool is missing, unless CI=true: then it fails.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/ibsim.sh" opensm_reroute opensm
EX=$SRC/topologies/examples

sm_on_host "$EX/fattree-16.topo" >"$work/full.topo" || fail "sm_on_host"
grep -v -P '^\[1\]\t"S-0000000000200002"\[5\]|^\[5\]\t"S-0000000000200000"\[1\]' \
	"$work/full.topo" >"$work/cut.topo"
[ "$(wc -l <"$work/cut.topo")" -eq $(($(wc -l <"$work/full.topo") - 2)) ] ||
	fail "cut.topo: spine0[1] <-> leaf0[5] not cut"

start_sim "$work/full.topo"
opensm_run "$work/pre" -R minhop
stop_sim
start_sim "$work/cut.topo"
OSM_CACHE=$work/pre opensm_run "$work/post" -R minhop
stop_sim
grep -q "minhop tables configured on all switches" "$work/post/opensm.log" ||
	fail "OpenSM did not configure the cut fabric"

# upstream OpenSM's tables, which program no adaptive routing
base=(run --topo "$work/full.topo" --lft "$work/pre/opensm-lfts.dump"
	--traffic alltoall:size=256KiB --set hca.timeout=10 --set hca.retry_cnt=3
	--set ib.ar=off --set switch.queues=fifo
	--fault 'link spine0/1 down at 20us' --reproducible)
"$IBFAB" "${base[@]}" --fault "lft $work/post/opensm-lfts.dump at 1ms" \
	--json "$work/with.json" >"$work/with.txt" 2>&1 || fail "the run with OpenSM's new tables: $(tail -3 "$work/with.txt")"
"$IBFAB" "${base[@]}" --json "$work/without.json" >"$work/without.txt" 2>&1 ||
	fail "the run without: $(tail -3 "$work/without.txt")"
python3 - "$work" <<'PY' || fail "the figures"
import json, sys
w = sys.argv[1]
a, b = json.load(open(f"{w}/with.json")), json.load(open(f"{w}/without.json"))
rr, bad = a["faults"]["reroutes"], []
if a["messages_delivered"] != 240 or len(rr) != 1 or not rr[0]["ok"] or not rr[0]["acyclic"]:
    bad.append(f"with OpenSM's new tables: {a['messages_delivered']}/240 delivered, {rr}")
if b["messages_delivered"] == 240 or not b["faults"]["qps_failed"] or b["faults"]["reroutes"]:
    bad.append(f"without: {b['messages_delivered']}/240, {b['faults']['qps_failed']} QPs in error")
print(f"ok: OpenSM's tables for the cut fabric at 1 ms: {a['messages_delivered']}/240 delivered, "
      f"{a['faults']['packets_lost']} packets lost and resent, {a['faults']['qps_recovered']} QPs "
      f"recovered; without them {b['messages_delivered']}/240, {b['faults']['qps_failed']} QPs in error")
for x in bad: print("  ", x)
sys.exit(1 if bad else 0)
PY

exit 0
