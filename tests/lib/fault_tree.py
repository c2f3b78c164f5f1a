#!/usr/bin/env python3
# fault_tree.py SRC DIR - from fattree-16.topo (SRC), write DIR/faults.topo:
# spine1[8] <-> leaf3[8] pulled, spine0[3] <-> leaf1[5] at EDR and h5's
# cable at 1x; and DIR/idle.topo: spine1 cabled to leaf0 alone, so that it
# carries no path under any routing. tests/e2e/topo_check.sh checks what
# `topo check --health` finds in them, tests/interop/health.sh the same on
# ibnetdiscover's dump of them built by ibsim.
import sys
src, d = sys.argv[1], sys.argv[2]
lines = open(src).read().split("\n")
faults, idle = [], []
for i, l in enumerate(lines):
    # pull spine1[8] <-> leaf3[8]; spine0[3] <-> leaf1[5] at EDR; h5's cable 1x
    if l.startswith('[8]\t"S-0000000000200005"[8]') or l.startswith('[8]\t"S-0000000000200001"[8]'):
        continue
    m = l
    if l.startswith('[3]\t"S-0000000000200003"[5]') or l.startswith('[5]\t"S-0000000000200000"[3]'):
        m = l.replace("4xHDR s=4 w=2 e=4", "4xEDR")
    if '"h5"' in l and l.startswith("[2]"):
        m = l.replace("4xHDR s=4 w=2 e=4", "1xHDR s=4 w=1 e=4")
    if i > 0 and lines[i - 1].startswith('Ca\t1 "H-000000000010000a"'):
        m = l.replace("4xHDR s=4 w=2 e=4", "1xHDR s=4 w=1 e=4")
    faults.append(m)
open(f"{d}/faults.topo", "w").write("\n".join(faults))
# spine1 cabled to leaf0 alone: it carries no path under any routing
out, in_spine1 = [], False
for l in lines:
    if l.startswith("Switch"):
        in_spine1 = '"S-0000000000200001"' in l
    if in_spine1 and l[:3] in ("[3]", "[4]", "[5]", "[6]", "[7]", "[8]"):
        continue
    if not in_spine1 and '"S-0000000000200001"' in l and l.startswith("[") and \
            any(f'"S-0000000000200001"[{q}]' in l for q in range(3, 9)):
        continue
    out.append(l)
open(f"{d}/idle.topo", "w").write("\n".join(out))
