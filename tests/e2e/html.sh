#!/bin/bash
# html.sh - `--html FILE` on run and compare, read as text (the browser
# test, tests/interop/html_browser.sh, loads the pages in Chromium):
#  - the page is one file with nothing fetched: no src= or href= to
#    another file or the network, the style and the script inline;
#  - the built-in fabric is drawn whole: 22 nodes, 32 cables (Graphviz's
#    <g id="cK"> groups), as many in the page's data; its series cover the
#    run in at most 512 frames; a trace run's timeline holds its
#    collectives and sends (4 here), compare's page one view per fabric;
#  - the same inputs give the same bytes (--reproducible), and compare's
#    JSON is the same with --html as without (its sampler is not the run);
#  - a busy permutation shows in the data: some frame has a cable end at
#    100% utilisation, an idle tail has none;
#  - a fabric too large to draw whole is drawn without its hosts;
#  - errors leave nothing behind: a directory, or no Graphviz on the PATH.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
printf 'ranks 16\nar: allreduce 4MiB\ncompute 8 20us async\na2a: alltoall 1MiB after=ar\nsend 3 9 2MiB\n' > "$tmp/j.trace"
"$IBFAB" run --reproducible --html "$tmp/run.html" > "$tmp/run.txt" 2>&1 || fail "run --html: $(tail -2 "$tmp/run.txt")"
"$IBFAB" run --reproducible --html "$tmp/run2.html" > /dev/null 2>&1
cmp -s "$tmp/run.html" "$tmp/run2.html" || fail "two runs give different pages"
"$IBFAB" run --reproducible --trace "$tmp/j.trace" --html "$tmp/trace.html" > "$tmp/trace.txt" 2>&1 ||
	fail "run --trace --html: $(tail -2 "$tmp/trace.txt")"
"$IBFAB" compare --reproducible --no-plot --fabrics ib,roce-lossy --html "$tmp/cmp.html" \
	--json "$tmp/cmp.json" > "$tmp/cmp.txt" 2>&1 || fail "compare --html: $(tail -2 "$tmp/cmp.txt")"
"$IBFAB" compare --reproducible --no-plot --fabrics ib,roce-lossy --json "$tmp/cmp0.json" > /dev/null 2>&1
cmp -s "$tmp/cmp.json" "$tmp/cmp0.json" || fail "compare's JSON differs with --html: $(diff "$tmp/cmp0.json" "$tmp/cmp.json" | head -4)"
"$IBFAB" topo gen fattree --levels 3 --radix 16 > "$tmp/ft1024.topo"
"$IBFAB" run --topo "$tmp/ft1024.topo" --traffic 'p2p:src=h0,dst=h700,size=64KiB' --html "$tmp/big.html" \
	> "$tmp/big.txt" 2>&1 || fail "run --html on 1,024 hosts: $(tail -2 "$tmp/big.txt")"
python3 - "$tmp" <<'PY' || fail "the pages"
import base64, json, re, sys
t = sys.argv[1]
bad = []
def page(name):
    s = open(f"{t}/{name}.html", encoding="utf-8").read()
    m = re.search(r'<script id="data" type="application/json">(.*?)</script>', s, re.S)
    if not m:
        bad.append(f"{name}: no data"); return s, {}
    return s, json.loads(m.group(1))
for name in ("run", "trace", "cmp", "big"):
    s, d = page(name)
    ext = re.findall(r'(?:src|href)="(?!#)([^"]*)"', s)
    if ext: bad.append(f"{name}: refers to {ext[:3]}")
    if "<style>" not in s or "report.js - the script" not in s: bad.append(f"{name}: style or script not inline")
    for v in d.get("views", []):
        e = 2 * len(d["cables"])
        for k in ("util", "wait", "pause", "buf"):
            if len(base64.b64decode(v[k])) != v["frames"] * e:
                bad.append(f"{name} {v['name']}: {k} holds the wrong number of values")
        if not (2 <= v["frames"] <= 512) or len(v["t"]) != v["frames"] + 1:
            bad.append(f"{name}: {v['frames']} frames, {len(v['t'])} times")
s, d = page("run")
edges = len(re.findall(r'<g id="c\d+" class="edge"', s))
nodes = len(re.findall(r'<g id="n\d+" class="node"', s))
if (d["draw"], len(d["cables"]), edges, nodes) != ("all", 32, 32, 22):
    bad.append(f"run: draw {d['draw']}, {len(d['cables'])} cables, {edges} edges, {nodes} nodes drawn")
v = d["views"][0]
u = base64.b64decode(v["util"]); e = 64
busiest = [max(u[f * e:(f + 1) * e]) for f in range(v["frames"])]
if max(busiest) != 250: bad.append(f"run: no cable end at 100% (most {max(busiest) / 2.5:.0f}%)")
if busiest[-1] > 25: bad.append(f"run: the ping-pong tail at {busiest[-1] / 2.5:.0f}%")
s, d = page("trace")
ops = d["views"][0]["ops"]
if [o[3] for o in ops] != ["allreduce", "alltoall", "send"] or not all(o[1] < o[2] for o in ops):
    bad.append(f"trace: ops {ops}")
if ops[1][1] < ops[0][1]: bad.append("trace: the all-to-all starts before the allreduce it waits for")
s, d = page("cmp")
if [v["name"] for v in d["views"]] != ["ib", "roce-lossy"]: bad.append(f"cmp: views {[v['name'] for v in d['views']]}")
if "Throughput into the hosts" not in s: bad.append("cmp: no chart")
s, d = page("big")
if d["draw"] != "switches" or len(d["cables"]) != 2048:
    bad.append(f"big: draw {d['draw']}, {len(d['cables'])} cables (want the 2,048 between switches)")
print(f"ok: built-in fabric {nodes} nodes / {edges} cables, {v['frames']} frames; compare 2 views; "
      f"1,024 hosts drawn as {len(d['cables'])} switch cables" if not bad else "\n".join(bad))
sys.exit(1 if bad else 0)
PY
mkdir "$tmp/dir"
"$IBFAB" run --html "$tmp/dir" > "$tmp/e1.txt" 2>&1 && fail "--html to a directory succeeded"
grep -q "is a directory" "$tmp/e1.txt" || fail "directory: $(cat "$tmp/e1.txt")"
mkdir "$tmp/bin"
ln -s "$(command -v python3)" "$tmp/bin/python3"
PATH="$tmp/bin" "$IBFAB" run --html "$tmp/nodot.html" --json "$tmp/nodot.json" > "$tmp/e2.txt" 2>&1 &&
	fail "--html without Graphviz succeeded"
grep -q "nodot.html: cannot run Graphviz 'dot'.*install graphviz" "$tmp/e2.txt" || fail "no dot: $(cat "$tmp/e2.txt")"
ls "$tmp" | grep -q nodot && fail "a failed --html left $(ls "$tmp" | grep nodot)"
"$IBFAB" run --help | grep -q -- '--html FILE' || fail "run --help says nothing of --html"
"$IBFAB" compare --help | grep -q -- '--html FILE' || fail "compare --help says nothing of --html"
finish
