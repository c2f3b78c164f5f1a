#!/bin/bash
# lab08_collectives.sh - every number docs/labs/08-collectives.md states:
# nccl-tests all_reduce sweeps on one and two DGX H100-like servers, the
# same GPUs without the server model, ring against tree on 128 GPUs,
# SHARP, and PXN on and off.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
EX=$IBFAB_SRC/topologies/examples
cd "$tmp" || exit 1
echo './all_reduce_perf -b 1M -e 1G -f 32 -g 8 -n 1' > one.nccl
echo 'mpirun -np 2 ./all_reduce_perf -b 8 -e 1G -f 32 -g 8 -n 1' > two.nccl
printf 'ranks 128\nring_1M: allreduce 1MiB algo=ring\ntree_1M: allreduce 1MiB algo=tree\nring_1G: allreduce 1GiB algo=ring\ntree_1G: allreduce 1GiB algo=tree\n' > rt.trace
printf 'ranks 128\nallreduce 1GiB\n' > ar128.trace
printf 'ranks 128\nallreduce 1GiB algo=collnet\n' > cn128.trace
printf 'ranks 16\nallreduce 1GiB algo=ring\n' > ar16.trace
r() { "$IBFAB" run "${@:2}" > "$1.out" 2>&1 || fail "ibfab run ${*:2}: $(tail -1 "$1.out")"; }
r one --topo "$EX/dgx-h100-2.topo" --trace one.nccl
r two --topo "$EX/dgx-h100-2.topo" --trace two.nccl
r flat --topo "$EX/dgx-h100-2.topo" --trace two.nccl --set server.preset=none
r rt --topo "$EX/dgx-h100-16.topo" --trace rt.trace
r sharp --topo "$EX/dgx-h100-16.topo" --trace ar128.trace --set ib.sharp=on
r collnet --topo "$EX/dgx-h100-16.topo" --trace cn128.trace
r pxn --topo "$EX/dgx-h100-2.topo" --trace ar16.trace
r nopxn --topo "$EX/dgx-h100-2.topo" --trace ar16.trace --set server.pxn=off
python3 - "$tmp" <<'PY' || fail "the lab's figures"
import re, sys
d = sys.argv[1]
bad = []
def rows(k):
    out = {}
    for l in open(f"{d}/{k}.out"):
        m = re.match(r"\s+(\d+)\s+\d+\s+float\s+\S+\s+-?\d+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+N/A\s+(.*)$", l)
        if m:
            out[m.group(5).split(" [")[0].split()[0] + " " + m.group(1)] = (float(m.group(2)), float(m.group(4)), m.group(5))
    return out
def text(k):
    return open(f"{d}/{k}.out").read()
def want(k, row, col, v):
    R = rows(k)
    if row not in R: bad.append(f"{k}: no row '{row}' in {list(R)}"); return
    got = R[row][col]
    if abs(got - v) > 0.005: bad.append(f"{k} {row}: {got}, the lab says {v}")
def algo(k, row, a):
    R = rows(k)
    if row not in R or not R[row][2].endswith(f"[{a}]"): bad.append(f"{k} {row}: not [{a}]: {R.get(row)}")
def line(k, frag):
    if frag not in text(k): bad.append(f"{k}: lacks '{frag}'")
for s, v, a in [(1048576, 82.77, "ring, LL"), (33554432, 379.27, "nvls (NVLink SHARP), Simple"),
                (1073741824, 481.66, "nvls (NVLink SHARP), Simple")]:
    want("one", f"allreduce {s}", 1, v); algo("one", f"allreduce {s}", a)
for s in [8, 256, 8192]:
    algo("two", f"allreduce {s}", "double binary tree, LL")
algo("two", "allreduce 262144", "double binary tree, LL128")
for s in [8388608, 268435456]:
    algo("two", f"allreduce {s}", "nvls tree (NVLSTree), Simple")
want("one", "allreduce 1048576", 0, 22.17)
want("two", "allreduce 8", 0, 18.77); want("two", "allreduce 268435456", 1, 485.88)
line("two", " 0 sends to other servers relayed"); line("two", "busy 0.0% on average")
want("flat", "allreduce 268435456", 1, 49.43); want("flat", "allreduce 8", 0, 47.06)
line("flat", "busy 97.3% on average")
if "nvlink " in text("flat"): bad.append("flat: NVLink used without servers")
want("rt", "ring_1M 1048576", 0, 609.28); want("rt", "tree_1M 1048576", 0, 66.28)
algo("rt", "ring_1M 1048576", "ring, LL"); algo("rt", "tree_1M 1048576", "double binary tree, LL128")
want("rt", "ring_1G 1073741824", 1, 367.75); want("rt", "tree_1G 1073741824", 1, 289.96)
want("sharp", "op 1073741824", 1, 544.95)
algo("sharp", "op 1073741824", "nvls + SHARP (NVLS with CollNet), Simple")
want("collnet", "op 1073741824", 1, 419.48)
want("pxn", "op 1073741824", 1, 360.80); line("pxn", "busy 0.0% on average"); line("pxn", "1920 sends")
want("nopxn", "op 1073741824", 1, 396.65); line("nopxn", "busy 99.8% on average")
for b in bad:
    print("  ", b)
sys.exit(1 if bad else 0)
PY
finish
