#!/bin/bash
# compare.sh - `ibfab compare` with no arguments: the built-in workload (a
# 64 MiB ring allreduce over 16 ranks beside an 8-to-1 incast) on the four
# fabrics, in under a minute; the table has every row and column; the JSON
# one object per fabric with the documented keys; IB and RoCE+PFC lose
# nothing while roce-lossy and TCP drop and retransmit; compare.svg is
# written in the current directory and is well-formed XML; two runs with
# --reproducible give the same bytes (table, JSON, CSV, SVG); bad input is
# refused with a clear message, a non-zero exit and nothing written.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"

mkdir "$tmp/a" "$tmp/b"
start=$SECONDS
(cd "$tmp/a" && "$IBFAB" compare --reproducible --json out.json --csv out.csv \
	> table.txt 2> err.txt) || { fail "ibfab compare exited non-zero"; cat "$tmp/a/err.txt"; }
took=$((SECONDS - start))
echo "default compare: ${took} s wall"
[ "$took" -lt 60 ] || fail "the default compare took ${took} s (the budget is 60 s)"
cat "$tmp/a/table.txt"
[ -s "$tmp/a/err.txt" ] && { fail "stderr not empty when it is not a terminal"; cat "$tmp/a/err.txt"; }

for row in "completion time" "relative to ib" "throughput" "paths" "transfers done" \
	   "transfer time p50" "p99" "max" "drops" "retransmissions" "timeouts" \
	   "pause frames (PFC)" "paused time" "credit stalls" "ECN marks" "CNPs" \
	   "CPU per active host" "system calls" "interrupts" "copied by a CPU" \
	   "sends done at" "ring_allreduce" "bus bandwidth" \
	   "ring allreduce 64MiB over 16 ranks" "8-to-1 incast" "default" "compare.svg"; do
	grep -qF -- "$row" "$tmp/a/table.txt" || fail "table lacks '$row'"
done
grep -qE '^ +ib +roce +roce-lossy +tcp$' "$tmp/a/table.txt" || fail "table header is not ib roce roce-lossy tcp"
grep -q "^wall" "$tmp/a/table.txt" && fail "--reproducible: the table shows wall time"

[ -s "$tmp/a/compare.svg" ] || fail "compare.svg not written in the current directory"
python3 - "$tmp/a" <<'PY' || fail "JSON, CSV or SVG content"
import csv, json, os, sys
import xml.etree.ElementTree as ET
d = sys.argv[1]
bad = []
doc = json.load(open(os.path.join(d, "out.json")))
for k in ["ibfab_version", "seed", "reproducible", "topology", "workload", "params",
          "fabrics", "plot"]:
    if k not in doc: bad.append(f"top: missing {k}")
fab = {f["fabric"]: f for f in doc["fabrics"]}
if [f["fabric"] for f in doc["fabrics"]] != ["ib", "roce", "roce-lossy", "tcp"]:
    bad.append(f"fabrics: {[f['fabric'] for f in doc['fabrics']]}")
keys = ["complete", "sim_time_ps", "relative_time", "throughput_gbps", "messages_total",
        "messages_delivered", "messages_lost", "completion_ps", "drops", "retransmissions",
        "retransmitted_packets", "tcp_retransmits", "timeouts", "pause_frames", "paused_ps",
        "xmit_wait_ps", "ecn_marks", "cnps", "cpu_ps", "cpu_ps_per_host", "events",
        "wall_s", "collectives", "sends_end_ps"]
for name, f in fab.items():
    for k in keys:
        if k not in f: bad.append(f"{name}: missing {k}")
    c = f.get("completion_ps", {})
    if not (0 < c.get("min", 0) <= c.get("p50", 0) <= c.get("p99", 0) <= c.get("max", 0)
            <= f.get("sim_time_ps", 0)):
        bad.append(f"{name}: completion percentiles out of order: {c}")
    if not f.get("complete") or f.get("messages_delivered") != f.get("messages_total"):
        bad.append(f"{name}: not every transfer completed")
    if f.get("wall_s") != 0: bad.append(f"{name}: --reproducible but wall_s != 0")
    colls = f.get("collectives", [])
    if len(colls) != 1 or colls[0]["collective"] != "allreduce" or colls[0]["bytes"] != 64 << 20:
        bad.append(f"{name}: collectives {colls}")
    elif not (0 < colls[0]["time_ps"] <= f["sim_time_ps"]):
        bad.append(f"{name}: allreduce time {colls[0]['time_ps']}")
    if f.get("cpu_ps_per_host", 0) <= 0: bad.append(f"{name}: no CPU time")
if fab:
    ib, roce, lossy, tcp = (fab.get(n, {}) for n in ["ib", "roce", "roce-lossy", "tcp"])
    if ib.get("drops") != 0 or ib.get("retransmissions") != 0: bad.append("ib dropped or retransmitted")
    if ib.get("xmit_wait_ps", 0) <= 0: bad.append("ib: no credit stalls under the incast")
    if ib.get("pause_frames") != 0: bad.append("ib: pause frames")
    if roce.get("drops") != 0: bad.append("roce (PFC) dropped")
    if roce.get("pause_frames", 0) <= 0 or roce.get("paused_ps", 0) <= 0:
        bad.append("roce: no pause frames under the incast")
    for n, f in [("roce-lossy", lossy), ("tcp", tcp)]:
        if f.get("drops", 0) <= 0: bad.append(f"{n}: no drops under the incast")
        if f.get("retransmissions", 0) <= 0: bad.append(f"{n}: no retransmissions")
    if ib.get("relative_time") != 1: bad.append("ib relative_time != 1")
    if tcp.get("cpu_ps_per_host", 0) <= ib.get("cpu_ps_per_host", 0):
        bad.append("tcp does not cost more CPU than ib")
    # the lesson: verbs bypass the kernel and copy nothing; TCP copies each
    # byte twice (into the socket and out of it), in system calls, with
    # interrupts. The payload: the ring allreduce's 2 (N-1)/N x 64 MiB a
    # rank over 16 ranks, and the incast's 8 x 4 MiB.
    payload = 16 * 2 * 15 * (64 << 20) // 16 + 8 * (4 << 20)
    for n in ["ib", "roce", "roce-lossy"]:
        k = fab.get(n, {}).get("kernel", {})
        if k.get("syscalls") != 0 or k.get("interrupts") != 0 or k.get("cpu_copy_bytes") != 0:
            bad.append(f"{n}: kernel work {k}")
    # (each message rides the stream with its 16-byte header, docs/tcp.md)
    framed = payload + 16 * tcp.get("messages_total", 0)
    kt = tcp.get("kernel", {})
    if kt.get("cpu_copy_bytes") != 2 * framed:
        bad.append(f"tcp copied {kt.get('cpu_copy_bytes')} bytes, not twice the payload and headers {framed}")
    if kt.get("syscalls", 0) <= 0 or kt.get("interrupts", 0) <= kt.get("syscalls", 0):
        bad.append(f"tcp: {kt.get('syscalls')} syscalls, {kt.get('interrupts')} interrupts (more interrupts than calls: one a batch of segments)")
    if tcp.get("active_hosts") != 16: bad.append(f"tcp: {tcp.get('active_hosts')} active hosts")
    lbs = [fab.get(n, {}).get("load_balancing") for n in ["ib", "roce", "roce-lossy", "tcp"]]
    if lbs != ["ar", "ecmp", "ecmp", "ecmp"]: bad.append(f"load_balancing {lbs}")
rows = list(csv.DictReader(open(os.path.join(d, "out.csv"))))
if [r["fabric"] for r in rows] != ["ib", "roce", "roce-lossy", "tcp"]:
    bad.append("CSV: not one row per fabric")
for r in rows:
    f = fab.get(r["fabric"], {})
    for k in ["sim_time_ps", "drops", "pause_frames", "xmit_wait_ps", "retransmissions"]:
        if str(f.get(k)) != r.get(k): bad.append(f"CSV {r['fabric']} {k}={r.get(k)} != JSON {f.get(k)}")
    if "coll:ring_allreduce:time_ps" not in r: bad.append("CSV: no collective column")
try:
    root = ET.parse(os.path.join(d, "compare.svg")).getroot()
    if root.tag != "{http://www.w3.org/2000/svg}svg": bad.append(f"SVG root {root.tag}")
    lines = root.findall(".//{http://www.w3.org/2000/svg}polyline")
    if len(lines) != 8: bad.append(f"SVG: {len(lines)} polylines, expected 2 charts x 4 fabrics")
    text = " ".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))
    for w in ["ib", "roce", "roce-lossy", "tcp", "Throughput", "CDF", "Gb/s"]:
        if w not in text: bad.append(f"SVG: no text '{w}'")
except ET.ParseError as e:
    bad.append(f"SVG does not parse: {e}")
for b in bad: print("  ", b)
sys.exit(1 if bad else 0)
PY

# determinism: everything byte-identical across two runs
(cd "$tmp/b" && "$IBFAB" compare --reproducible --json out.json --csv out.csv \
	> table.txt 2>/dev/null) || fail "second compare exited non-zero"
for f in table.txt out.json out.csv compare.svg; do
	cmp -s "$tmp/a/$f" "$tmp/b/$f" || fail "--reproducible: $f differs between two runs"
done

# the chart's sampler only reads counters: without it, the same figures
(cd "$tmp/b" && "$IBFAB" compare --reproducible --no-plot --json noplot.json > /dev/null 2>&1) ||
	fail "compare --no-plot exited non-zero"
python3 - "$tmp/a/out.json" "$tmp/b/noplot.json" <<'PY' || fail "--no-plot changes the figures"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
if a["fabrics"] != b["fabrics"]: sys.exit(1)
if b["plot"] is not None or a["plot"] != "compare.svg": sys.exit(1)
PY
[ -e "$tmp/b/compare.svg" ] && [ "$tmp/b/compare.svg" -nt "$tmp/b/noplot.json" ] &&
	fail "--no-plot wrote a chart"

# --json -: JSON on stdout, the table on stderr; --quiet: no table
"$IBFAB" compare --fabrics ib --traffic incast:dst=h0,n=4,size=256KiB --json - --no-plot \
	> "$tmp/j.json" 2> "$tmp/j.err" || fail "--json - exited non-zero"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert len(d['fabrics'])==1" \
	"$tmp/j.json" || fail "--json -: stdout is not the JSON document"
grep -q "^completion time" "$tmp/j.err" || fail "--json -: the table is not on stderr"
grep -q "messages done" "$tmp/j.err" || fail "--traffic: the table does not say messages"

# bad input: exit status, message, nothing written (not even the default plot)
n=0
expect_fail() {
	local want=$1 frag=$2 out="$tmp/bad$n"
	shift 2
	n=$((n + 1))
	mkdir "$out"
	(cd "$out" && "$IBFAB" compare --json out.json --csv out.csv "$@" > "$tmp/stdout" 2> "$tmp/stderr")
	local rc=$? why=""
	if [ "$rc" -ne "$want" ]; then
		why="exit $rc, expected $want"
	elif ! grep -qF -- "$frag" "$tmp/stderr"; then
		why="stderr lacks '$frag'"
	elif [ "$(wc -l < "$tmp/stderr")" -ne 1 ]; then
		why="expected one line on stderr"
	elif [ -n "$(ls -A "$out")" ]; then
		why="left files behind: $(ls -A "$out" | tr '\n' ' ')"
	elif [ -s "$tmp/stdout" ]; then
		why="wrote to stdout"
	fi
	if [ -n "$why" ]; then
		fail "ibfab compare $*: $why"
		sed 's/^/    stderr: /' "$tmp/stderr"
	else
		echo "ok:   ibfab compare $* -> $rc: $(cat "$tmp/stderr")"
	fi
}
expect_fail 2 "unknown fabric 'infiniband' (known: ib, roce, roce-lossy, tcp)" --fabrics ib,infiniband
expect_fail 2 "'roce' is listed twice" --fabrics roce,ib,roce
expect_fail 2 "expected a comma-separated list" --fabrics ib,,tcp
expect_fail 2 "unknown option '--fabric'" --fabric roce
expect_fail 2 "unexpected argument 'ib'" ib
expect_fail 2 "option '--plot' needs a value" --plot
expect_fail 2 "choose them there" --set fabric=roce
expect_fail 2 "--trace and --traffic" --trace x.trace --traffic incast:dst=h0,size=1MiB
expect_fail 2 "--plot and --no-plot" --plot a.svg --no-plot
expect_fail 1 "no-such.topo" --topo no-such.topo
expect_fail 1 "no-such.trace" --trace no-such.trace
expect_fail 1 "eth.no_such_key" --set eth.no_such_key=1 --fabrics ib
expect_fail 1 "incast" --traffic incast:dst=h99,size=1MiB
expect_fail 1 "no-dir/p.svg" --fabrics ib --traffic p2p:src=h0,dst=h1,size=4KiB --plot no-dir/p.svg

"$IBFAB" compare --help > "$tmp/help" || fail "--help exited non-zero"
for opt in --topo --trace --traffic --fabrics --preset --set --seed --routing --json --csv \
	   --plot --no-plot --reproducible --quiet roce-lossy; do
	grep -qF -- "$opt" "$tmp/help" || fail "--help does not document $opt"
done
"$IBFAB" help compare | cmp -s - "$tmp/help" || fail "'ibfab help compare' differs from --help"

finish
