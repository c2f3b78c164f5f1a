#!/bin/bash
# run_default.sh - `ibfab run` with no arguments simulates the built-in fat
# tree under the built-in load, says so, and prints every summary field;
# `--json -` gives a document with the documented keys and sane values.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"

if ! "$IBFAB" run > "$tmp/out" 2> "$tmp/err"; then
	fail "ibfab run exited non-zero"; cat "$tmp/err"
fi
cat "$tmp/out"
for field in "preset" "topology" "default: no --topo given" "default: no --traffic given" \
	     "permutation:size=1MiB" "16 hosts" "simulated" "messages" "delivered" \
	     "completion" "median" "p99" "throughput" "Gb/s" "credit stalls" "PortXmitWait" \
	     "buffer high" "drops" "FC packets" "events" "packet-hops" "wall" "events/s"; do
	grep -qF -- "$field" "$tmp/out" || fail "summary lacks '$field'"
done
grep -q "^drops  *0 " "$tmp/out" || fail "drops are not 0 on a lossless fabric"
grep -q "INCOMPLETE" "$tmp/out" && fail "not every message was delivered"
[ -s "$tmp/err" ] && { fail "stderr not empty when it is not a terminal"; cat "$tmp/err"; }

# --json -: JSON on stdout, the summary on stderr; --quiet drops the summary
"$IBFAB" run --json - > "$tmp/json" 2> "$tmp/err" || fail "--json - exited non-zero"
grep -q "^simulated" "$tmp/err" || fail "--json -: the summary is not on stderr"
"$IBFAB" run --json - --quiet > "$tmp/json" 2> "$tmp/err" || fail "--json - --quiet exited non-zero"
[ -s "$tmp/err" ] && fail "--json - --quiet wrote to stderr"

python3 - "$tmp/json" <<'PY' || fail "JSON content"
import json, sys
d = json.load(open(sys.argv[1]))
bad = []
def need(obj, keys, where):
    for k in keys:
        if k not in obj:
            bad.append(f"{where}: missing key {k!r}")
need(d, ["sim_time_ps", "events", "wall_s", "packets_delivered", "bytes_delivered",
         "payload_bytes_delivered", "drops", "fc_packets", "xmit_wait_ps", "params",
         "topology", "flows", "completion_ps", "ports", "messages_total",
         "messages_delivered", "throughput_gbps", "buf_high", "seed", "traffic",
         "events_per_s"], "top")
need(d["completion_ps"], ["min", "p50", "p99", "max"], "completion_ps")
need(d["topology"], ["nodes", "switches", "hosts", "links"], "topology")
need(d["params"], ["preset", "link.width", "link.speed", "link.cable_m", "link.ps_per_m",
                   "ib.mtu", "ib.vls", "ib.buffer", "ib.vl15_buffer", "ib.fc_period_ns",
                   "ib.fc_threshold", "ib.sl2vl", "vlarb.high", "vlarb.low",
                   "vlarb.limit_high", "switch.latency_ns", "hca.latency_ns",
                   "hca.buffer", "sim.sample_ns", "sim.max_time_ns", "sim.check"], "params")
for f in d["flows"]:
    need(f, ["src", "dst", "bytes", "start_ps", "end_ps", "sl"], "flow")
for p in d["ports"]:
    need(p, ["node", "port", "peer", "rate", "vls"], "port")
    for v in p["vls"]:
        need(v, ["vl", "PortXmitData", "PortXmitPkts", "PortRcvData", "PortRcvPkts",
                 "PortXmitWait_ps", "PortXmitDiscards", "buf_high_bytes"], "port vl")
t = d["topology"]
if (t["hosts"], t["switches"], t["nodes"]) != (16, 6, 22):
    bad.append(f"default topology is not 16 hosts + 6 switches: {t}")
if d["drops"] != 0: bad.append("drops != 0")
if d["messages_delivered"] != d["messages_total"] or d["messages_total"] != len(d["flows"]):
    bad.append("messages delivered/total/flows disagree")
c = d["completion_ps"]
if not (0 < c["min"] <= c["p50"] <= c["p99"] <= c["max"] <= d["sim_time_ps"]):
    bad.append(f"completion percentiles out of order: {c}")
if d["xmit_wait_ps"] <= 0: bad.append("the default load shows no credit stall")
if sum(v["PortXmitWait_ps"] for p in d["ports"] for v in p["vls"]) != d["xmit_wait_ps"]:
    bad.append("per-port PortXmitWait does not add up to xmit_wait_ps")
if sum(f["bytes"] for f in d["flows"]) != d["payload_bytes_delivered"]:
    bad.append("payload bytes delivered != sum of flow sizes")
if not all(f["src"].startswith("h") and f["dst"].startswith("h") for f in d["flows"]):
    bad.append("flows do not name hosts by description")
if d["params"]["preset"] != "hdr" or d["params"]["link.speed"] != "HDR":
    bad.append("default preset is not hdr")
if any(v["PortXmitPkts"] == 0 and v["PortRcvPkts"] == 0 and v["PortXmitWait_ps"] == 0
       and v["buf_high_bytes"] == 0 for p in d["ports"] for v in p["vls"]):
    bad.append("a VL that carried nothing is listed")
for b in bad: print("  ", b)
sys.exit(1 if bad else 0)
PY

finish
