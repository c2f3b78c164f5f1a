#!/usr/bin/env bash
# bench/fabric.sh - the fabric's speed on the 128-host HDR fat tree
# (topologies/examples/fattree-128.topo, full bisection, min-hop routing)
# under a random permutation, the figure docs/performance.md reports:
# events per wall second and packet-hops per wall second, as the median
# (min-max) of several runs, plus callgrind's instruction count per
# packet-hop, which is stable on this noisy machine.
#
# Usage: bench/fabric.sh [IBFAB] [RUNS] [SIZE]
#   IBFAB  the ibfab binary (default build/tools/ibfab)
#   RUNS   runs to take the median of (default 5)
#   SIZE   bytes each host sends (default 8MiB; 2 MiB for callgrind)
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ibfab=${1:-$src/build/tools/ibfab}
runs=${2:-5}
size=${3:-8MiB}
topo=$src/topologies/examples/fattree-128.topo
spec=permutation:size=$size,seed=1

echo "ibfab fabric benchmark: $topo"
echo "traffic $spec, preset hdr, $runs runs, $(nproc) cores, $(uname -r)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in $(seq "$runs"); do
	"$ibfab" run --topo "$topo" --traffic "$spec" --json "$tmp/r$i.json" --quiet >/dev/null
done
python3 - "$tmp" "$runs" <<'PY'
import json, statistics, sys
d, n = sys.argv[1], int(sys.argv[2])
rs = [json.load(open(f"{d}/r{i}.json")) for i in range(1, n + 1)]
def row(name, key, scale, unit):
    v = sorted(r[key] / scale for r in rs)
    print(f"{name:22s} {statistics.median(v):10.3f} {unit:10s} (min {v[0]:.3f}, max {v[-1]:.3f})")
r = rs[0]
print(f"{'simulated time':22s} {r['sim_time_ps'] / 1e6:10.3f} us")
print(f"{'events':22s} {r['events']:10d}")
print(f"{'packet-hops':22s} {r['packet_hops']:10d}    ({r['events'] / r['packet_hops']:.2f} events per packet-hop)")
row("wall", "wall_s", 1, "s")
row("events/s", "events_per_s", 1e6, "M/s")
row("packet-hops/s", "packet_hops_per_s", 1e6, "M/s")
PY
if command -v valgrind >/dev/null && [ "${CALLGRIND:-1}" = 1 ]; then
	small=permutation:size=2MiB,seed=1
	valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" "$ibfab" run \
		--topo "$topo" --traffic "$small" --json "$tmp/cg.json" --quiet \
		>/dev/null 2>"$tmp/cg.log"
	python3 - "$tmp" <<'PY'
import json, re, sys
d = sys.argv[1]
ir = int(re.search(r"Collected : (\d+)", open(f"{d}/cg.log").read()).group(1))
r = json.load(open(f"{d}/cg.json"))
print(f"callgrind (2 MiB each): {ir} instructions, {ir / r['packet_hops']:.0f} per packet-hop, "
      f"{ir / r['events']:.0f} per event (whole run, parsing included)")
PY
fi
