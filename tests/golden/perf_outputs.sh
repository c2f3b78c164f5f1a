#!/bin/bash
# perf_outputs.sh - optimisations must not change what ibfab computes:
# small fixed runs whose --reproducible --json output is compared
# byte for byte with the files checked in beside this script. A speed-up of
# the engine or the models that moves one event, one packet or one
# picosecond shows here as a diff.
#
#   ring8  ring allreduce of 256 KiB over 8 ranks of fattree-16, ftree
#          routing, host.model=off: the collective replay, credits, the RC
#          transport (WRITE with immediate, ACKs), switches at speedup 2
#          with the HDR preset's adaptive routing and per-output queues
#   mix    fattree-16, minhop, 2 data VLs with a skewed VLArb table, host
#          model on: an 8-to-1 incast on SL 0 and a 4-to-1 incast on SL 1
#          into h0 (credit stalls, VL arbitration), a 64-byte ping-pong
#          across the spines and a 32 KiB permutation (adaptive routing
#          spreads it, the receivers hold what overtook)
#
# Keys added to the JSON are allowed (every expected value must still be
# there, unchanged); IBFAB_GOLDEN_STRICT=1 demands byte-identical files.
# When a change is meant to change the outputs (a model fix, a renamed
# key), regenerate the expected files and commit them with the change,
# saying why in the commit:
#   IBFAB=build/tools/ibfab IBFAB_SRC=. IBFAB_GOLDEN_UPDATE=1 bash tests/golden/perf_outputs.sh
# Paths in the JSON are relative to the source tree: the runs happen there.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
: "${IBFAB_SRC:?IBFAB_SRC must name the source tree}"
cd "$IBFAB_SRC" || exit 1
exp=tests/golden/perf_outputs
ft16=topologies/examples/fattree-16.topo

golden() {	# NAME ARGS...
	local name=$1
	shift
	if ! "$IBFAB" run --quiet --reproducible --json "$tmp/$name.json" "$@" >/dev/null; then
		fail "$name: ibfab run $* exited non-zero"
		return
	fi
	if [ "${IBFAB_GOLDEN_UPDATE:-0}" = 1 ]; then
		cp "$tmp/$name.json" "$exp/$name.json"
		echo "updated $exp/$name.json"
		return
	fi
	cmp -s "$exp/$name.json" "$tmp/$name.json" && return
	# Not byte-identical. A key added to the JSON (a new counter) is not a
	# change of behaviour: every value of the expected file must still be
	# there, the same, in the same order; only keys it does not know may
	# be added. IBFAB_GOLDEN_STRICT=1 takes that allowance away.
	if [ "${IBFAB_GOLDEN_STRICT:-0}" != 1 ] &&
		python3 - "$exp/$name.json" "$tmp/$name.json" "$name" <<'PY'
import json, sys
exp, got, name = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
added, bad = [], []
def walk(e, g, path):
    if isinstance(e, dict) and isinstance(g, dict):
        keys = [k for k in g if k in e]
        if keys != list(e):
            bad.append(f"{path}: keys {list(e)} became {keys} (missing or reordered)")
        added.extend(f"{path}.{k}" for k in g if k not in e)
        for k in e:
            if k in g:
                walk(e[k], g[k], f"{path}.{k}")
    elif isinstance(e, list) and isinstance(g, list):
        if len(e) != len(g):
            bad.append(f"{path}: {len(e)} entries became {len(g)}")
        for i, (a, b) in enumerate(zip(e, g)):
            walk(a, b, f"{path}[{i}]")
    elif e != g or type(e) != type(g):
        bad.append(f"{path}: {e!r} became {g!r}")
walk(exp, got, name)
for b in bad[:20]:
    print("  ", b)
if not bad:
    print(f"note: {name}: every expected value unchanged; new keys {sorted(set(a.split('[')[0] for a in added))[:8]}"
          " (regenerate the expected file with IBFAB_GOLDEN_UPDATE=1 to track them)")
sys.exit(1 if bad else 0)
PY
	then
		return
	fi
	fail "$name: output differs from $exp/$name.json (above, or the diff below;" \
		"if the change is intended, regenerate with IBFAB_GOLDEN_UPDATE=1)"
	diff "$exp/$name.json" "$tmp/$name.json" | head -20
}

golden ring8 --topo "$ft16" --routing ftree --set host.model=off \
	--trace "$exp/ring8.trace"
golden mix --topo "$ft16" --set ib.vls=2 --set vlarb.low=0:4,1:64 \
	--traffic incast:dst=h0,n=8,size=64KiB,sl=0 \
	--traffic incast:dst=h0,n=4,size=64KiB,sl=1 \
	--traffic pingpong:a=h5,b=h10,size=64B,count=10 \
	--traffic permutation:size=32KiB

finish
