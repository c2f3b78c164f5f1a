#!/bin/bash
# lab05_vls.sh - every number docs/labs/05-vls.md states: on victim.net,
# the incast's end, the victim's throughput on VL 0, on VL 1 and with IB
# congestion control, and the VL arbitration table's split of W's link.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
T=$IBFAB_SRC/topologies/examples/victim.net
I=(--traffic p2p:src=S1,dst=H,size=8MiB --traffic p2p:src=S2,dst=H,size=8MiB
   --traffic p2p:src=S3,dst=H,size=8MiB --traffic p2p:src=S4,dst=H,size=8MiB)
r() { "$IBFAB" run --reproducible --topo "$T" --json "$tmp/$1.json" "${@:2}" > /dev/null ||
	fail "ibfab run ${*:2}"; }
r vl0 "${I[@]}" --traffic p2p:src=V,dst=W,size=2MiB,start=100us
r vl1 "${I[@]}" --traffic p2p:src=V,dst=W,size=2MiB,start=100us,sl=1
r cc "${I[@]}" --traffic p2p:src=V,dst=W,size=2MiB,start=100us --set ib.cc=on
r even --traffic p2p:src=S1,dst=W,size=8MiB --traffic p2p:src=V,dst=W,size=8MiB,sl=1
r skew --traffic p2p:src=S1,dst=W,size=8MiB --traffic p2p:src=V,dst=W,size=8MiB,sl=1 \
	--set vlarb.low=0:64,1:192,2:64,3:64
python3 - "$tmp" <<'PY' || fail "the lab's figures"
import json, sys
d = sys.argv[1]
J = {k: json.load(open(f"{d}/{k}.json")) for k in ["vl0", "vl1", "cc", "even", "skew"]}
bad = []
def gbps(f): return f["bytes"] * 8 / ((f["end_ps"] - f["first_tx_ps"]) * 1e-12) / 1e9
def near(what, got, want, tol):
    if abs(got - want) > tol: bad.append(f"{what}: {got:.4f}, the lab says {want}")
for k in ["vl0", "vl1"]:
    near(f"{k} incast end ms", J[k]["sim_time_ps"] / 1e9, 1.352, 0.0006)
near("4 x 8 MiB at 200 Gb/s, ms", 4 * 8 * 2**20 * 8 / 200e9 * 1e3, 1.342, 0.0006)
near("cc incast end ms", J["cc"]["sim_time_ps"] / 1e9, 1.412, 0.0006)
near("victim VL 0", gbps(J["vl0"]["flows"][4]), 49.6, 0.06)
near("victim VL 1", gbps(J["vl1"]["flows"][4]), 148.3, 0.06)
near("victim with IB CC", gbps(J["cc"]["flows"][4]), 137.3, 0.06)
if J["vl0"]["flows"][4]["src"] != "V": bad.append("the fifth flow is not the victim's")
ends = lambda k: [f["end_ps"] / 1e6 for f in J[k]["flows"]]
e, s = ends("even"), ends("skew")
near("even S1", e[0], 676.83, 0.006); near("even V", e[1], 676.99, 0.006)
near("skew S1", s[0], 676.99, 0.006); near("skew V", s[1], 451.93, 0.006)
for b in bad:
    print("  ", b)
sys.exit(1 if bad else 0)
PY
finish
