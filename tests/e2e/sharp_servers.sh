#!/bin/bash
# sharp_servers.sh - SHARP on GPU servers, as nccl-tests users ask for it
# (NCCL_COLLNET_ENABLE=1 on the command line, or --set ib.sharp=on):
#  - NCCL's tuning model chooses per size among its algorithms with CollNet:
#    on 16 DGX H100 NVLS + SHARP at every size; on two the LL tree to
#    128 KiB, NVLS + SHARP from 512 KiB to 8 MiB, NVLSTree from 32 MiB; on
#    two DGX A100 (no NVLS) the LL tree to 32 KiB, CollNetDirect from
#    512 KiB; the table and the JSON name each choice;
#  - NVLS + SHARP is NVLink-bound like NVLS on one server, so on 16 servers
#    its 64 MiB allreduce beats NVLSTree's (no CollNet) by a third or more,
#    and the summary counts the switches' reductions;
#  - as servers are added its bandwidth holds: on 33 servers (two units of
#    rails: the trees reach a spine) a 64 MiB allreduce's bus bandwidth is
#    within 5% of 16 servers' (an aggregation node's internal link held to
#    a cable's 128 KiB credit window, or queued FIFO at its switch, gave
#    0.72 of it), and the credits' invariants hold after every event on
#    those links (sim.check=on, 1 MiB);
#  - --explain names the form (nvls + SHARP) and its phase up the switches;
#  - two NVLS + SHARP allreduces of servers 0-7 and 8-15 share their rails'
#    leaf switches: they stream side by side with Quantum-2's limit per
#    port (the NDR default), one after the other with one tree a switch
#    (but for the second kernel's launch, which it makes while it waits).
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
EX="$IBFAB_SRC/topologies/examples"

run() {	# name, topology, trace file, then more arguments
	local name=$1 topo=$2 trace=$3
	shift 3
	"$IBFAB" run --reproducible --topo "$topo" --trace "$trace" \
		--json "$tmp/$name.json" "$@" > "$tmp/$name.txt" 2>&1 ||
		fail "ibfab run $name: $(tail -2 "$tmp/$name.txt")"
}

"$IBFAB" topo gen rail --servers 2 --server dgx-a100 > "$tmp/a100.topo" || fail "topo gen"
"$IBFAB" topo gen rail --servers 33 --server dgx-h100 > "$tmp/h33.topo" || fail "topo gen"
for n in 16 33; do
	echo "NCCL_COLLNET_ENABLE=1 mpirun -np $n ./all_reduce_perf -b 64M -e 64M -g 8 -n 1" > "$tmp/s$n.nccl"
done
echo 'NCCL_COLLNET_ENABLE=1 mpirun -np 16 ./all_reduce_perf -b 8 -e 64M -f 8 -g 8 -n 1' > "$tmp/h16.nccl"
echo 'NCCL_COLLNET_ENABLE=1 mpirun -np 2 ./all_reduce_perf -b 8 -e 32M -f 4 -g 8 -n 1' > "$tmp/h2.nccl"
echo 'mpirun -np 2 ./all_reduce_perf -b 8 -e 32M -f 4 -g 8 -n 1' > "$tmp/a2.nccl"
printf 'ranks 128\nallreduce 64MiB algo=nvls\n' > "$tmp/nvls.trace"
printf 'ranks 16\nallreduce 1MiB algo=nvls channels=1 chunks=1\n' > "$tmp/x.trace"
printf 'ranks 128\ncomm a = 0-63\ncomm b = 64-127\nallreduce 16MiB comm=a algo=nvls\nallreduce 16MiB comm=b algo=nvls\n' > "$tmp/two.trace"
printf 'ranks 128\ncomm a = 0-63\nallreduce 16MiB comm=a algo=nvls\n' > "$tmp/one.trace"
run h16 "$EX/dgx-h100-16.topo" "$tmp/h16.nccl"
run h2 "$EX/dgx-h100-2.topo" "$tmp/h2.nccl"
run s16 "$EX/dgx-h100-16.topo" "$tmp/s16.nccl"
run s33 "$tmp/h33.topo" "$tmp/s33.nccl"
echo 'NCCL_COLLNET_ENABLE=1 mpirun -np 33 ./all_reduce_perf -b 1M -e 1M -g 8 -n 1' > "$tmp/c33.nccl"
run c33 "$tmp/h33.topo" "$tmp/c33.nccl" --set sim.check=on --no-flows
run a2 "$tmp/a100.topo" "$tmp/a2.nccl" --set ib.sharp=on
run sharp "$EX/dgx-h100-16.topo" "$tmp/nvls.trace" --set ib.sharp=on
run tree "$EX/dgx-h100-16.topo" "$tmp/nvls.trace"
run one "$EX/dgx-h100-16.topo" "$tmp/one.trace" --set ib.sharp=on
run port "$EX/dgx-h100-16.topo" "$tmp/two.trace" --set ib.sharp=on
run switch "$EX/dgx-h100-16.topo" "$tmp/two.trace" --set ib.sharp=on --set ib.sharp_sat=switch
# --explain names the form and its phases through the switches
"$IBFAB" run --topo "$EX/dgx-h100-2.topo" --trace "$tmp/x.trace" --set ib.sharp=on --explain 0 \
	> "$tmp/explain.txt" 2>&1 || fail "--explain: $(tail -2 "$tmp/explain.txt")"
grep -q '^allreduce .*: nvls + SHARP (NVLS with CollNet), 16 ranks' "$tmp/explain.txt" ||
	fail "--explain's header: $(head -1 "$tmp/explain.txt")"
grep -q "^phase 3 (head -> its leaf switch's aggregation node, and up the SHARP tree (reduce)):" \
	"$tmp/explain.txt" || fail "--explain: no phase 3 through the switches"
grep -q '^lowered: 320 transfers in 6 phases (closed form: 320)' "$tmp/explain.txt" ||
	fail "--explain: $(grep '^lowered' "$tmp/explain.txt")"
grep -q '^sharp .*chunk reductions' "$tmp/sharp.txt" ||
	fail "no sharp line in the summary: $(grep -c . "$tmp/sharp.txt") lines"
python3 - "$tmp" <<'PY' || fail "SHARP on GPU servers"
import json, re, sys
d = sys.argv[1]
ok = True
j = {n: json.load(open(f"{d}/{n}.json"))
     for n in ("h16", "h2", "a2", "sharp", "tree", "one", "port", "switch", "s16", "s33")}
NS = "nvls + SHARP (NVLS with CollNet)"
want = {
    "h16": [(s, NS) for s in (8, 64, 512, 4096, 32768, 262144, 2097152, 16777216)],
    "h2": [(8, "double binary tree"), (131072, "double binary tree"), (524288, NS),
           (8388608, NS), (33554432, "nvls tree (NVLSTree)")],
    "a2": [(8, "double binary tree"), (32768, "double binary tree"),
           (524288, "collnet (SHARP)"), (33554432, "collnet (SHARP)")],
}
for n, rows in want.items():
    got = {c["bytes"]: c["algorithm"] for c in j[n]["collectives"]}
    for s, a in rows:
        if s in got and got[s] != a:
            print(f"  {n} {s} B: {got[s]}, NCCL's model takes {a}"); ok = False
        elif s not in got and n != "h16":
            print(f"  {n}: no {s} B row in {sorted(got)}"); ok = False
    # the table names the choice too
    table = open(f"{d}/{n}.txt").read()
    for s, a in rows:
        if s in got and not re.search(rf"^\s+{s}\s.*\[{re.escape(a)}, ", table, re.M):
            print(f"  {n}: the table's {s} B row does not name {a}"); ok = False
def span(n):
    c = j[n]["collectives"]
    return max(x["end_ps"] for x in c) - min(x["start_ps"] for x in c)
sh, tr = span("sharp"), span("tree")
print(f"64 MiB on 128 GPUs: NVLS + SHARP {sh/1e6:.1f} us, NVLSTree {tr/1e6:.1f} us")
if not sh * 1.33 < tr:
    print("  NVLS + SHARP not a third faster than NVLSTree"); ok = False
if j["sharp"]["sharp"]["reductions"] == 0:
    print("  no reductions in the switches"); ok = False
b16, b33 = (j[n]["collectives"][0]["busbw_gbps"] for n in ("s16", "s33"))
print(f"64 MiB NVLS + SHARP: 16 servers {b16:.2f} GB/s, 33 servers {b33:.2f} ({b33 / b16:.3f})")
if j["s33"]["collectives"][0]["algorithm"] != NS or not b33 >= 0.95 * b16:
    print("  33 servers: not NVLS + SHARP at 16 servers' bandwidth"); ok = False
t1 = span("one")
print(f"16 MiB on 64 GPUs {t1/1e6:.1f} us; two at once: per port {span('port')/1e6:.1f}, "
      f"one tree a switch {span('switch')/1e6:.1f} us")
if j["port"]["sharp"]["tree_waits"] != 0 or span("port") > 1.1 * t1:
    print("  per port: not side by side", j["port"]["sharp"]); ok = False
if j["switch"]["sharp"]["tree_waits"] != 1 or span("switch") < 1.7 * t1:  # the launch overlaps
    print("  one tree a switch: not one after the other", j["switch"]["sharp"]); ok = False
sys.exit(0 if ok else 1)
PY
finish
