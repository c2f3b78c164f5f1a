#!/bin/bash
# compare_alltoall.sh - the comparison's second case, a free-running
# all-to-all of 1 MiB per pair on the 2:1 oversubscribed fattree-64-2to1
# (8 leaves of 8 hosts, 4 up-links each), ranked as practitioners expect
# with the defaults: InfiniBand first (credits, no loss; within 20% of the
# bisection bound by the tables), RoCE with PFC and DCQCN next (ECMP's hash
# collisions on the up-links, pauses, rate cuts), then TCP (its median
# message as fast, its tail the 200 ms retransmission timeout of the
# flows that lost theirs) and RoCE without PFC last (go-back-N after every
# drop, ACK timeouts). docs/compare.md explains each gap.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"

"$IBFAB" compare --topo "$IBFAB_SRC/topologies/examples/fattree-64-2to1.topo" \
	--traffic alltoall:size=1MiB --reproducible --no-plot --json "$tmp/out.json" \
	> "$tmp/table.txt" 2> "$tmp/err.txt" ||
	{ fail "ibfab compare exited non-zero"; cat "$tmp/err.txt"; }
sed -n '/^ *ib  /,/^ *max/p' "$tmp/table.txt"

python3 - "$tmp/out.json" <<'PY' || fail "all-to-all ranking"
import json, sys
doc = json.load(open(sys.argv[1]))
f = {x["fabric"]: x for x in doc["fabrics"]}
bad = []
t = {k: f[k]["completion_ps"]["max"] / 1e9 for k in f}
p50 = {k: f[k]["completion_ps"]["p50"] / 1e9 for k in f}
print("  completion (ms): " + ", ".join(f"{k} {v:.3f}" for k, v in t.items()))
if not t["ib"] < t["roce"] < t["tcp"] < t["roce-lossy"]:
    bad.append(f"ranking: {sorted(t, key=t.get)}")
ib, ro, rl, tc = f["ib"], f["roce"], f["roce-lossy"], f["tcp"]
# the bisection bound: a leaf's 8 x 56 messages leave over 4 x 200 Gb/s
bound = 8 * 56 * (1 << 20) * 8 / (4 * 200e9) * 1e3
print(f"  ib over the bisection bound (payload): {t['ib'] / bound:.3f}")
if t["ib"] > 1.2 * bound: bad.append(f"ib {t['ib']:.3f} ms, bound {bound:.3f}")
if ib["drops"] or ro["drops"]: bad.append("a lossless fabric dropped")
if not ib["xmit_wait_ps"]: bad.append("ib: no credit stalls")
if not (ro["pause_frames"] and ro["cnps"]): bad.append("roce: no pauses or no CNPs")
if not (rl["drops"] and rl["retransmitted_packets"] and rl["ack_timeouts"]):
    bad.append("roce-lossy: no drops, resends or ACK timeouts")
if not (tc["drops"] and tc["tcp_timeouts"]): bad.append("tcp: no drops or no RTOs")
if t["tcp"] < 200: bad.append(f"tcp ends at {t['tcp']:.1f} ms, before one 200 ms RTO")
if p50["tcp"] > 1.5 * p50["ib"]: bad.append(f"tcp's median message {p50['tcp']:.3f} ms, ib's {p50['ib']:.3f}")
for b in bad:
    print("  ", b)
sys.exit(1 if bad else 0)
PY
finish
