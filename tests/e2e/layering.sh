#!/bin/bash
# layering.sh - the folders of models/ in their order, checked at link
# level: nm over the built library says which folder's objects use symbols
# another folder's objects define. A folder may use the folders below it
# in ORDER; every use of a folder above it is listed in KNOT, the coupling
# that the port's and the HCA's ops tables are to remove
# (docs/architecture.md, "Layers"). The test fails when a change adds a
# use upward that KNOT does not list, and when one KNOT lists is gone (so
# that the list only ever shrinks, to empty). Private headers (*_int.h)
# are held to the same rule: PRIVATE lists the includes across folders
# that remain.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
: "${IBFAB_SRC:?IBFAB_SRC must name the source tree}"
lib=$(dirname "$IBFAB")/../models/libibfab_models.a
[ -f "$lib" ] || { fail "$lib not built"; finish; exit; }
command -v nm >/dev/null || { fail "nm missing (binutils)"; finish; exit; }

# lowest first: a folder may use those before it
ORDER="link net sm host core ib port switch eth roce tcp hca fabric"
# folder -> folder above it that it uses today
KNOT="roce->hca tcp->hca"
# folder -> another folder's private header that it includes today
PRIVATE="fabric->hca/hca_int.h roce->hca/hca_int.h tcp->hca/hca_int.h"

python3 - "$lib" "$IBFAB_SRC" "$ORDER" "$KNOT" "$PRIVATE" > "$tmp/out" <<'PY'
import collections, os, re, subprocess, sys
lib, src, order, knot, private = sys.argv[1:6]
order = order.split()
rank = {f: i for i, f in enumerate(order)}
knot, private = set(knot.split()), set(private.split())
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
for e in sorted(up - knot):
    print(f"FAIL {e}: models/{e.split('->')[0]} uses {', '.join(sorted(uses[e])[:4])} "
          f"of models/{e.split('->')[1]}, a folder above it (ORDER: {' '.join(order)})")
for e in sorted(knot - up):
    print(f"FAIL {e} is no longer used: take it out of KNOT")
inc = set()
for d in rank:
    for f in os.listdir(os.path.join(models, d)) if os.path.isdir(os.path.join(models, d)) else []:
        if not f.endswith((".c", ".h")):
            continue
        for m in re.finditer(r'#include "models/([a-z]+)/([a-z_]+_int\.h)"',
                             open(os.path.join(models, d, f)).read()):
            if m.group(1) != d:
                inc.add(f"{d}->{m.group(1)}/{m.group(2)}")
for e in sorted(inc - private):
    print(f"FAIL {e}: a private header of another folder")
for e in sorted(private - inc):
    print(f"FAIL {e} is no longer included: take it out of PRIVATE")
print(f"ok {len(uses)} uses across folders, {len(up)} of them upward, "
      f"{len(inc)} private headers across folders")
PY
[ "${PIPESTATUS[0]}" = 0 ] || fail "the checker failed"
cat "$tmp/out"
while IFS= read -r line; do
	case $line in FAIL*) fail "${line#FAIL }" ;; esac
done < "$tmp/out"
grep -q "^ok " "$tmp/out" || fail "no result"
finish
