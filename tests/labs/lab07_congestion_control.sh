#!/bin/bash
# lab07_congestion_control.sh - every number docs/labs/07-congestion-control.md
# states: the 8-to-1 incast on RoCE with PFC alone, with DCQCN, with early
# ECN marking, and on lossy RoCE without and with DCQCN.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
T=(--traffic incast:dst=h0,n=8,size=1MiB)
r() { "$IBFAB" run --reproducible --json "$tmp/$1.json" "${@:2}" "${T[@]}" > /dev/null ||
	fail "ibfab run ${*:2}"; }
r pfc --set fabric=roce --set dcqcn.on=0
r dcqcn --set fabric=roce
r early --set fabric=roce --set eth.kmin=20KiB --set eth.kmax=100KiB
r lossy0 --set fabric=roce-lossy --set dcqcn.on=0
r lossy1 --set fabric=roce-lossy
python3 - "$tmp" <<'PY' || fail "the lab's figures"
import json, sys
d = sys.argv[1]
J = {k: json.load(open(f"{d}/{k}.json")) for k in ["pfc", "dcqcn", "early", "lossy0", "lossy1"]}
bad = []
def want(k, key, v, tol=0):
    got = J[k][key]
    if abs(got - v) > tol: bad.append(f"{k} {key}: {got}, the lab says {v}")
want("pfc", "sim_time_ps", 344457000, 1000); want("dcqcn", "sim_time_ps", 344457000, 1000)
want("pfc", "pause_frames", 922); want("pfc", "paused_ps", 2483000000, 1000000)
want("pfc", "ecn_marks", 40); want("pfc", "cnps", 0)
want("dcqcn", "pause_frames", 876); want("dcqcn", "paused_ps", 2198000000, 1000000)
want("dcqcn", "ecn_marks", 33); want("dcqcn", "cnps", 30)
want("early", "sim_time_ps", 935501000, 1000); want("early", "pause_frames", 255)
want("early", "paused_ps", 402447000, 1000000); want("early", "ecn_marks", 1658)
want("early", "cnps", 438)
for k in ["lossy0", "lossy1"]:
    want(k, "drops", 287); want(k, "sim_time_ps", 67325000000, 1000000)
want("lossy1", "cnps", 221); want("lossy0", "cnps", 0)
for k in ["pfc", "dcqcn", "early"]:
    want(k, "drops", 0)
for b in bad:
    print("  ", b)
sys.exit(1 if bad else 0)
PY
finish
