#!/bin/bash
# layering.sh - the folders of models/ in their order, checked at link
# level: nm over the built library says which folder's objects use symbols
# another folder's objects define. A folder may use only the folders
# below it in ORDER (docs/architecture.md, "Layers"): a use upward fails,
# as does a file that includes another folder's private header (*_int.h)
# or any header of a folder above it.
# A lower folder reaches a higher one only through the tables it is given
# (a port's node kind, a QP's transport, the HCA's congestion control, the
# builder's hooks).
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
: "${IBFAB_SRC:?IBFAB_SRC must name the source tree}"
lib=$(dirname "$IBFAB")/../models/libibfab_models.a
[ -f "$lib" ] || { fail "$lib not built"; finish; exit; }
command -v nm >/dev/null || { fail "nm missing (binutils)"; finish; exit; }

# lowest first: a folder may use those before it
ORDER="link net sm host server params core ib port switch eth hca roce cc tcp fabric"
python3 - "$lib" "$IBFAB_SRC" "$ORDER" > "$tmp/out" <<'PY'
import collections, os, re, subprocess, sys
lib, src, order = sys.argv[1:4]
order = order.split()
rank = {f: i for i, f in enumerate(order)}
models = os.path.join(src, "models")
folder = {}
for d in sorted(os.listdir(models)):
    if os.path.isdir(os.path.join(models, d)):
        if d not in rank:
            print(f"FAIL models/{d} is in no place of ORDER")
        for f in os.listdir(os.path.join(models, d)):
            if f.endswith(".c"):
                folder[f + ".o"] = d
def nm(*args):
    r = subprocess.run(["nm", "-A", *args, lib], capture_output=True, text=True)
    if r.returncode:
        print(f"FAIL nm {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout.splitlines()
defs = {}
for line in nm("-g", "--defined-only"):
    member, rest = line.split(":")[1], line.split()
    if len(rest) >= 3:
        defs[rest[-1]] = folder.get(member)
uses = collections.defaultdict(set)
for line in nm("-u"):
    a, b = folder.get(line.split(":")[1]), defs.get(line.split()[-1])
    if a and b and a != b:
        uses[f"{a}->{b}"].add(line.split()[-1])
up = {e for e in uses if rank.get(e.split("->")[1], -1) > rank.get(e.split("->")[0], 99)}
for e in sorted(up):
    print(f"FAIL {e}: models/{e.split('->')[0]} uses {', '.join(sorted(uses[e])[:4])} "
          f"of models/{e.split('->')[1]}, a folder above it (ORDER: {' '.join(order)})")
# Every include of a models/ header: one of another folder's private
# headers fails, and so does a public one of a folder above.
inc, pub = set(), set()
for d in rank:
    for f in os.listdir(os.path.join(models, d)) if os.path.isdir(os.path.join(models, d)) else []:
        if not f.endswith((".c", ".h")):
            continue
        for m in re.finditer(r'#include "models/([a-z]+)/([a-z_]+\.h)"',
                             open(os.path.join(models, d, f)).read()):
            if m.group(1) == d:
                continue
            if m.group(2).endswith("_int.h"):
                inc.add(f"{d}->{m.group(1)}/{m.group(2)}")
            elif m.group(1) in rank and rank[m.group(1)] > rank[d]:
                pub.add(f"{d}/{f} -> {m.group(1)}/{m.group(2)}")
for e in sorted(inc):
    print(f"FAIL {e}: a private header of another folder")
for e in sorted(pub):
    print(f"FAIL {e}: a header of a folder above it (ORDER: {' '.join(order)})")
print(f"ok {len(uses)} uses across folders, {len(up)} of them upward, "
      f"{len(inc)} private headers across folders, {len(pub)} headers included upward")
PY
[ "${PIPESTATUS[0]}" = 0 ] || fail "the checker failed"
cat "$tmp/out"
while IFS= read -r line; do
	case $line in FAIL*) fail "${line#FAIL }" ;; esac
done < "$tmp/out"
grep -q "^ok " "$tmp/out" || fail "no result"
finish
