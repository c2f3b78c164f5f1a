#!/bin/bash
# lab03_lossless.sh - every number docs/labs/03-lossless.md states: the
# 8-to-1 incast on ib, roce and roce-lossy (times, drops, retransmissions,
# timeouts, pauses, credit stalls), where the --html page shows each fabric
# waiting (ib: the senders' own cables; roce: the spines into h0's leaf),
# IB against the link's ideal, and the
# credit loop with 8 KiB and 128 KiB receive buffers; the HDR preset's
# adaptive routing against the subnet manager's tables alone (ib.ar=off).
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
T=incast:dst=h0,n=8,size=1MiB
"$IBFAB" compare --traffic $T --fabrics ib,roce,roce-lossy --reproducible --no-plot \
	--json "$tmp/cmp.json" --html "$tmp/cmp.html" > "$tmp/cmp.txt" 2>&1 ||
	fail "ibfab compare: $(tail -2 "$tmp/cmp.txt")"
for b in 8KiB 32KiB 128KiB; do
	"$IBFAB" run --traffic $T --set ib.buffer=$b --reproducible --json "$tmp/b$b.json" \
		> "$tmp/b$b.txt" || fail "ibfab run ib.buffer=$b"
done
# the same by the subnet manager's tables alone
"$IBFAB" compare --traffic $T --fabrics ib --set ib.ar=off --reproducible --no-plot \
	--json "$tmp/tables.json.all" --html "$tmp/tables.html" > /dev/null 2>&1 ||
	fail "ibfab compare --set ib.ar=off"
python3 -c 'import json, sys; json.dump(json.load(open(sys.argv[1]))["fabrics"][0], open(sys.argv[2], "w"))' \
	"$tmp/tables.json.all" "$tmp/tables.json" || fail "tables.json"
"$IBFAB" run --traffic $T --set ib.buffer=8KiB --set ib.ar=off --reproducible --json "$tmp/tables8.json" \
	> /dev/null || fail "ibfab run ib.buffer=8KiB ib.ar=off"
python3 - "$tmp" <<'PY' || fail "the lab's figures"
import json, sys
d = sys.argv[1]
c = {f["fabric"]: f for f in json.load(open(f"{d}/cmp.json"))["fabrics"]}
b = {k: json.load(open(f"{d}/b{k}.json")) for k in ["8KiB", "32KiB", "128KiB"]}
t = json.load(open(f"{d}/tables8.json"))
tc = json.load(open(f"{d}/tables.json"))
bad = []
def near(what, got, want, rel):
    if abs(got - want) > rel * abs(want):
        bad.append(f"{what}: {got:.5g}, the lab says {want:.5g}")
ib, ro, lo = c["ib"], c["roce"], c["roce-lossy"]
near("ib us", ib["sim_time_ps"] / 1e6, 339.5, 0.001)
near("roce us", ro["sim_time_ps"] / 1e6, 344.5, 0.001)
near("roce-lossy ms", lo["sim_time_ps"] / 1e9, 67.3, 0.002)
if ib["drops"] or ro["drops"]: bad.append("a lossless fabric dropped")
if (lo["drops"], lo["retransmitted_packets"], lo["timeouts"]) != (287, 1413, 4):
    bad.append(f"roce-lossy drops/retransmissions/timeouts {lo['drops']} {lo['retransmitted_packets']} {lo['timeouts']}")
near("ib credit stalls ms", ib["xmit_wait_ps"] / 1e9, 4.641, 0.002)
if ro["pause_frames"] != 876: bad.append(f"roce pause frames {ro['pause_frames']}")
# the --html page: where each fabric waited (the busiest cable ends over the run)
import base64, re
page = open(f"{d}/cmp.html", encoding="utf-8").read()
h = json.loads(re.search(r'<script id="data" type="application/json">(.*?)</script>', page, re.S).group(1))
E = 2 * len(h["cables"])
def ends(view, m):
    x = base64.b64decode(next(v for v in h["views"] if v["name"] == view)[m]); tot = [0] * E
    for i, q in enumerate(x): tot[i % E] += q
    name = lambda e: (h["cables"][e // 2][0], h["cables"][e // 2][2])[::1 if e % 2 == 0 else -1]
    return [name(e) for e in sorted(range(E), key=lambda e: (-tot[e], e)) if tot[e]]
w, p, l = ends("ib", "wait"), ends("roce", "pause"), ends("roce-lossy", "wait") + ends("roce-lossy", "pause")
page = open(f"{d}/tables.html", encoding="utf-8").read()
h = json.loads(re.search(r'<script id="data" type="application/json">(.*?)</script>', page, re.S).group(1))
tw = ends("ib", "wait")
if not all(a.startswith("spine") and b == "leaf0" for a, b in w[:3]): bad.append(f"ib waits most at {w[:3]}")
if sorted(p[:2]) != [("spine0", "leaf0"), ("spine1", "leaf0")]: bad.append(f"roce pauses most at {p[:2]}")
if l: bad.append(f"roce-lossy waits or pauses at {l[:3]}")
near("roce paused ms", ro["paused_ps"] / 1e9, 2.198, 0.002)
ideal = 8 * (1 << 20) * 8 / 200e9 * 1e12
near("the ideal us", ideal / 1e6, 335.5, 0.001)
near("ib over the ideal", ib["sim_time_ps"] / ideal, 1.012, 0.002)
if lo["sim_time_ps"] / ib["sim_time_ps"] < 190: bad.append("roce-lossy not ~200x ib")
near("8 KiB us", b["8KiB"]["sim_time_ps"] / 1e6, 402.7, 0.001)
near("8 KiB us by the tables", t["sim_time_ps"] / 1e6, 503.6, 0.001)
near("ib credit stalls ms by the tables", tc["xmit_wait_ps"] / 1e9, 2.144, 0.002)
if sorted(tw[:3]) != [("h4", "leaf1"), ("h6", "leaf1"), ("h7", "leaf1")]:
    bad.append(f"ib by the tables waits most at {tw[:3]}")
near("128 KiB us", b["128KiB"]["sim_time_ps"] / 1e6, 339.5, 0.001)
if b["128KiB"]["sim_time_ps"] != b["32KiB"]["sim_time_ps"]: bad.append("128 KiB differs from 32 KiB")
for k, v in b.items():
    if v["drops"]: bad.append(f"ib.buffer={k} dropped")
near("8 KiB high-water KiB", b["8KiB"]["buf_high"]["bytes"] / 1024, 4.06, 0.01)
for x in bad:
    print("  ", x)
sys.exit(1 if bad else 0)
PY
finish
