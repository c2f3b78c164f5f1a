#!/usr/bin/env bash
# bench/collectives.sh - the collective replay's speed and accuracy on the
# issue-8 headline scenario B3: a ring allreduce of 64 MiB over 128 ranks
# on topologies/examples/fattree-128.topo (8 leaves x 16 hosts, 8 spines,
# full bisection, 4xHDR) with ftree routing, one rank per host (map linear).
# numbers.md lists what peers take on the same traffic volume (htsim 62 s,
# ns-3 ~210 s UDP, a bare event loop 1.8 s).
#
# Prints wall time (median, min, max of RUNS runs), events, events per
# wall second, and the simulated time against the closed form
#   T = 2(N-1) (a + S/(N B))                       (numbers.md)
# with, as in tests/unit/test_replay.c:
#   S/(N B) = wire bytes of one step / 25 GB/s: a step is one RDMA WRITE
#             with immediate of S/N = 512 KiB at MTU 4096, 128 packets of
#             26 header bytes (LRH 8, BTH 12, ICRC 4, VCRC 2) plus RETH 16
#             on the first and ImmDt 4 on the last;
#   a       = the replay time of a lone transfer between h15 and h16 (the
#             ring's longest edge: leaf0 -> spine -> leaf1; a ring runs at
#             the pace of its slowest edge), less its own wire bytes / 25
#             GB/s. The probe is 0 bytes with host.model=off and 4 KiB with
#             it on: a 0-byte write goes inline and skips the payload DMA
#             read and write that every ring step pays (1.47 us against
#             2.50 us on one switch).
# A reported benchmark, not a test (bench/README.md): the closed form is
# checked at 1 and 16 MiB on 128 ranks by tests/unit/test_replay.c.
#
# Usage: bench/collectives.sh [IBFAB] [RUNS]
#   IBFAB  the ibfab binary (default build/tools/ibfab)
#   RUNS   runs to take the median wall time of (default 3)
# Environment: HOST_MODEL=off (default, the pure network form) or on (a
# then includes post, DMA and CQE latencies; B stays the link's).
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ibfab=${1:-$src/build/tools/ibfab}
runs=${2:-3}
host_model=${HOST_MODEL:-off}
topo=$src/topologies/examples/fattree-128.topo
ranks=128
size=$((64 << 20))

# (not `| grep -q`: under pipefail, grep quitting early would fail the pipe)
help=$("$ibfab" run --help 2>/dev/null || true)
if ! grep -q -- '--trace' <<<"$help"; then
	echo "collectives.sh: $ibfab has no 'run --trace' (build the CLI first)" >&2
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'ranks %d\nmap linear\nallreduce %d algo=ring\n' "$ranks" "$size" >"$tmp/ring.trace"
probe=0
[ "$host_model" = off ] || probe=4096
printf 'ranks 2\nhost 0 h15\nhost 1 h16\nsend 0 1 %d\n' "$probe" >"$tmp/a.trace"
common=(--topo "$topo" --routing ftree --preset hdr --set "host.model=$host_model" --quiet)

echo "ibfab collective benchmark (B3): ring allreduce, $ranks ranks, 64 MiB"
echo "topology $topo, ftree, preset hdr, host.model=$host_model, $runs runs, $(nproc) cores, $(uname -r)"
"$ibfab" run "${common[@]}" --trace "$tmp/a.trace" --json "$tmp/a.json" >/dev/null
for i in $(seq "$runs"); do
	"$ibfab" run "${common[@]}" --trace "$tmp/ring.trace" --json "$tmp/r$i.json" >/dev/null
done
python3 - "$tmp" "$runs" "$ranks" "$size" "$probe" <<'PY'
import json, math, statistics, sys
d, n, N, S, probe = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
RATE = 25e9                      # 4xHDR data rate, bytes/s (numbers.md)
def wire(m):                     # RDMA WRITE with immediate at MTU 4096
    pkts = max(1, math.ceil(m / 4096))
    return (m + 3) // 4 * 4 + 26 * pkts + 16 + 4
a_run = json.load(open(f"{d}/a.json"))
a_ps = a_run["flows"][0]["end_ps"] - a_run["flows"][0]["start_ps"]
a = a_ps * 1e-12 - wire(probe) / RATE
rs = [json.load(open(f"{d}/r{i}.json")) for i in range(1, n + 1)]
r = rs[0]
coll = r["collectives"][0]
t = (coll["end_ps"] - coll["start_ps"]) * 1e-12
step = wire(S // N) / RATE
pred = 2 * (N - 1) * (a + step)
walls = sorted(x["wall_s"] for x in rs)
print(f"{f'a (h15 -> h16, {probe} B)':24s} {a * 1e6:12.4f} us")
print(f"{'S/(N B)':24s} {step * 1e6:12.4f} us   ({wire(S // N)} wire bytes per step)")
print(f"{'simulated time':24s} {t * 1e6:12.3f} us")
print(f"{'closed form':24s} {pred * 1e6:12.3f} us   ({100 * (t - pred) / pred:+.3f}%)")
# nccl-tests' units: GB/s (the JSON's *_gbps fields hold S / time in GB/s)
print(f"{'algbw / busbw':24s} {coll['algbw_gbps']:.3f} / {coll['busbw_gbps']:.3f} GB/s"
      f"   (closed form busbw {S / pred * 2 * (N - 1) / N / 1e9:.3f})")
print(f"{'events':24s} {r['events']:12d}")
print(f"{'packet-hops':24s} {r['packet_hops']:12d}")
print(f"{'wall':24s} {statistics.median(walls):12.3f} s    (min {walls[0]:.3f}, max {walls[-1]:.3f})")
print(f"{'events/s':24s} {r['events'] / statistics.median(walls) / 1e6:12.3f} M/s")
if any(x["sim_time_ps"] != r["sim_time_ps"] or x["events"] != r["events"] for x in rs):
    print("warning: runs differ in simulated time or events (not deterministic)")
PY
