#!/bin/bash
# compare_incast.sh - a 16-to-1 incast, the comparison's first case. IB and
# RoCE with PFC deliver everything with zero drops, IB by making senders
# wait for credits (PortXmitWait), RoCE by pausing them (PFC pause frames,
# paused time); RoCE without PFC and TCP drop packets and retransmit them;
# and the table on stdout reports all of it, the same figures as the JSON.
#
# The fabric: 18 hosts on 3 leaves of 6, 2 spines with 3 cables per leaf
# (non-blocking), 4xHDR; h1..h16 each write 2 MiB to h0 at once: 32 MiB
# meet h0's 200 Gb/s port, 15/16 of it must queue somewhere, far beyond
# the default Ethernet switch buffer (eth.buffer_per_port = 1 MiB). With
# 1 MiB each TCP does not drop: 16 initial windows of 10 segments fit, and
# the senders' host stack paces the rest.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"

"$IBFAB" topo gen leafspine --leaves 3 --spines 2 --hosts 6 --links-per-spine 3 \
	> "$tmp/ls18.topo" || fail "topo gen failed"
"$IBFAB" compare --topo "$tmp/ls18.topo" --traffic incast:dst=h0,n=16,size=2MiB \
	--reproducible --no-plot --json "$tmp/out.json" > "$tmp/table.txt" 2> "$tmp/err.txt" ||
	{ fail "ibfab compare exited non-zero"; cat "$tmp/err.txt"; }
cat "$tmp/table.txt"

python3 - "$tmp/out.json" "$tmp/table.txt" <<'PY' || fail "incast figures"
import json, re, sys
doc = json.load(open(sys.argv[1]))
table = open(sys.argv[2]).read().splitlines()
bad = []
fab = {f["fabric"]: f for f in doc["fabrics"]}
if list(fab) != ["ib", "roce", "roce-lossy", "tcp"]:
    bad.append(f"fabrics {list(fab)}")
for n, f in fab.items():
    if f["messages_total"] != 16 or f["messages_delivered"] != 16 or not f["complete"]:
        bad.append(f"{n}: {f['messages_delivered']}/{f['messages_total']} delivered")
ib, roce = fab.get("ib", {}), fab.get("roce", {})
if ib.get("drops") != 0: bad.append(f"ib dropped {ib.get('drops')}")
if ib.get("xmit_wait_ps", 0) <= 0: bad.append("ib: no credit stalls")
if ib.get("retransmissions") != 0: bad.append("ib retransmitted")
if roce.get("drops") != 0: bad.append(f"roce (PFC) dropped {roce.get('drops')}")
if roce.get("pause_frames", 0) <= 0: bad.append("roce: no pause frames")
if roce.get("paused_ps", 0) <= 0: bad.append("roce: no paused time")
if roce.get("retransmissions") != 0: bad.append("roce (PFC) retransmitted")
for n in ["roce-lossy", "tcp"]:
    f = fab.get(n, {})
    if f.get("drops", 0) <= 0: bad.append(f"{n}: no drops")
    if f.get("retransmissions", 0) <= 0: bad.append(f"{n}: no retransmissions")
    if f.get("pause_frames") != 0: bad.append(f"{n}: pause frames without PFC")

# the table: one column per fabric, the counters as the JSON has them
def row(label):
    for line in table:
        if line.startswith(label + " ") and len(line) > 22:
            return line[22:].split()
    bad.append(f"table: no row '{label}'")
    return []
hdr = row("")
if not any(l.split() == ["ib", "roce", "roce-lossy", "tcp"] for l in table):
    bad.append("table header")
for label, key in [("drops", "drops"), ("retransmissions", "retransmissions"),
                   ("pause frames (PFC)", "pause_frames"), ("ECN marks", "ecn_marks"),
                   ("CNPs", "cnps")]:
    got = row(label)
    want = [str(fab[n][key]) for n in fab]
    if got != want: bad.append(f"table '{label}' {got} != JSON {want}")
for label in ["credit stalls", "paused time", "completion time", "message time p50"]:
    if len(row(label)) != 8: bad.append(f"table '{label}': expected 4 times with units")
for b in bad: print("  ", b)
sys.exit(1 if bad else 0)
PY

finish
