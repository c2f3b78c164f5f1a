#!/bin/bash
# sharp.sh - SHARP in-network allreduce (algo=collnet), as a user runs it:
#  - on 16 and 128 hosts (fattree-16, fattree-128) a large collnet allreduce
#    reaches about 2(N-1)/N times the ring's algorithm bandwidth (within
#    10%): each host link carries the buffer once each way, not 2(N-1)/N
#    times; its algorithm bandwidth is near the link rate (25 GB/s at 4xHDR);
#  - a small one (8 B) takes one trip up the tree and one down whatever N:
#    16 and 128 hosts within 10% of each other, between one host-to-host
#    message across the tree plus the three aggregation nodes' HCA latency
#    (the trip's own hops: leaf, spine, leaf) and 2H messages through one
#    switch (H = 2 levels of aggregation nodes), and a tenth of the ring's
#    time or less;
#  - the summary and the JSON say where the tree is and what it reduced
#    (K chunks x (members + aggregation nodes - 1) reductions);
#  - ib.sharp=on (or NCCL_COLLNET_ENABLE=1 on an nccl-tests line) makes
#    algo=auto allreduces collnet on InfiniBand, not on
#    RoCE; algo=collnet on RoCE is refused, naming the trace's line;
#  - the switches' limit on streaming trees (ib.sharp_sat): two 16 MiB
#    collnet allreduces of two communicators whose trees meet only in the
#    root spine run one after the other on HDR (Quantum: one tree a switch)
#    and side by side with the limit per port or on NDR (Quantum-2); two
#    whose trees share a leaf-to-spine link wait per port too; 8 B ones
#    (the low-latency mode) never wait.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
EX="$IBFAB_SRC/topologies/examples"

run() {	# name, topology, trace text, then more arguments
	local name=$1 topo=$2 text=$3
	shift 3
	printf '%b' "$text" > "$tmp/$name.trace"
	"$IBFAB" run --reproducible --topo "$EX/$topo" --trace "$tmp/$name.trace" \
		--json "$tmp/$name.json" "$@" > "$tmp/$name.txt" 2>&1 ||
		fail "ibfab run $name: $(tail -2 "$tmp/$name.txt")"
}

run cn16 fattree-16.topo 'ranks 16\nallreduce 64MiB algo=collnet\n'
run ring16 fattree-16.topo 'ranks 16\nallreduce 64MiB algo=ring\n'
run cn128 fattree-128.topo 'ranks 128\nallreduce 64MiB algo=collnet\n'
run ring128 fattree-128.topo 'ranks 128\nallreduce 64MiB algo=ring\n'
run small16 fattree-16.topo 'ranks 16\nallreduce 8B algo=collnet\n'
run small128 fattree-128.topo 'ranks 128\nallreduce 8B algo=collnet\n'
run smallring fattree-128.topo 'ranks 128\nallreduce 8B algo=ring\n'
run auto_ib fattree-16.topo 'ranks 16\nallreduce 8B\n' --set ib.sharp=on
run auto_roce fattree-16.topo 'ranks 16\nallreduce 8B\n' --set ib.sharp=on --set fabric=roce
for p in "h0 h1" "h0 h15"; do
	set -- $p
	"$IBFAB" run --reproducible --topo "$EX/fattree-16.topo" --json "$tmp/p2p_$2.json" \
		--traffic "p2p:src=$1,dst=$2,size=8B" > /dev/null || fail "p2p $p"
done
grep -q "^sharp  *5 aggregation nodes, 2 levels, root in spine0 aggregation node" "$tmp/cn16.txt" ||
	fail "no sharp line: $(cat "$tmp/cn16.txt")"
grep -q "^sharp " "$tmp/auto_ib.txt" || fail "ib.sharp=on did not make auto collnet"
# an nccl-tests line asks for it itself (one GPU per host: no tuning model)
echo 'NCCL_COLLNET_ENABLE=1 mpirun -np 16 ./all_reduce_perf -b 1M -e 1M -g 1 -n 1' > "$tmp/cn.nccl"
"$IBFAB" run --topo "$EX/fattree-16.topo" --trace "$tmp/cn.nccl" > "$tmp/cn_nccl.txt" 2>&1 ||
	fail "NCCL_COLLNET_ENABLE=1: $(tail -2 "$tmp/cn_nccl.txt")"
grep -q '^sharp .*; 40 chunk reductions (20 MiB)' "$tmp/cn_nccl.txt" ||
	fail "NCCL_COLLNET_ENABLE=1 did not make the allreduce collnet: $(grep '^sharp' "$tmp/cn_nccl.txt")"
grep -q "^sharp " "$tmp/auto_roce.txt" && fail "ib.sharp=on made a tree on RoCE"

python3 - "$tmp" <<'PY' || fail "SHARP figures"
import json, sys
d = sys.argv[1]
j = {k: json.load(open(f"{d}/{k}.json")) for k in
     ["cn16", "ring16", "cn128", "ring128", "small16", "small128", "smallring",
      "auto_ib", "auto_roce", "p2p_h1", "p2p_h15"]}
ok = True
def coll(k):
    return j[k]["collectives"][0]
for n, cn, ring in ((16, "cn16", "ring16"), (128, "cn128", "ring128")):
    want = 2 * (n - 1) / n
    got = coll(cn)["algbw_gbps"] / coll(ring)["algbw_gbps"]
    alg = coll(cn)["algbw_gbps"]
    print(f"{n} hosts: collnet {alg:.2f} GB/s, ring {coll(ring)['algbw_gbps']:.2f}: "
          f"ratio {got:.3f}, 2(N-1)/N = {want:.3f}")
    if abs(got / want - 1) > 0.10 or alg < 0.9 * 25:
        print("  not within 10%"); ok = False
    if coll(cn)["algorithm"] != "collnet (SHARP)":
        print("  algorithm", coll(cn)["algorithm"]); ok = False
s = j["cn16"]["sharp"]
K, n, nx = 128, 16, 5
if (s["aggregation_nodes"], s["levels"], s["reductions"], s["bytes_reduced"]) != \
        (nx, 2, K * (n + nx - 1), (n + nx - 1) * 64 * 2**20):
    print("sharp object", s); ok = False
t16 = coll("small16")["end_ps"] - coll("small16")["start_ps"]
t128 = coll("small128")["end_ps"] - coll("small128")["start_ps"]
tring = coll("smallring")["end_ps"] - coll("smallring")["start_ps"]
one = j["p2p_h1"]["completion_ps"]["max"]
across = j["p2p_h15"]["completion_ps"]["max"]
print(f"8 B: collnet {t16/1e6:.3f} us (16 hosts), {t128/1e6:.3f} us (128), ring {tring/1e6:.3f} us; "
      f"p2p one switch {one/1e6:.3f} us, across {across/1e6:.3f} us")
hca = j["small16"]["params"]["hca.latency_ns"] * 1000
if abs(t128 / t16 - 1) > 0.10 or not (across + 3 * hca <= t16 <= 4 * one) or t128 * 10 > tring:
    print("  small allreduce not one trip up and down"); ok = False
if coll("auto_ib")["algorithm"] != "collnet (SHARP)" or coll("auto_roce")["algorithm"] == "collnet (SHARP)":
    print("  auto:", coll("auto_ib")["algorithm"], coll("auto_roce")["algorithm"]); ok = False
sys.exit(0 if ok else 1)
PY

# SHARP's streaming trees: a: hosts 0-7 (leaves 0, 1), b: 8-15 (leaves 2,
# 3), both rooted in spine0; c and e share leaf0 and leaf1 (their links up)
# (routed by the tables: per-packet adaptive routing reorders a tree's
# packets over the parallel cables and costs a lone allreduce 4% here)
T="--set ib.ar=off"
two='ranks 16\ncomm a = 0-7\ncomm b = 8-15\nallreduce 16MiB comm=a algo=collnet\nallreduce 16MiB comm=b algo=collnet\n'
run sat_one fattree-16.topo 'ranks 16\ncomm a = 0-7\nallreduce 16MiB comm=a algo=collnet\n' $T
run sat_switch fattree-16.topo "$two" $T
run sat_port fattree-16.topo "$two" --set ib.sharp_sat=port $T
run sat_ndr fattree-16.topo "$two" --preset ndr $T
run sat_ndr_one fattree-16.topo 'ranks 16\ncomm a = 0-7\nallreduce 16MiB comm=a algo=collnet\n' --preset ndr $T
run sat_link fattree-16.topo 'ranks 16\ncomm c = 0,1,4,5\ncomm e = 2,3,6,7\nallreduce 16MiB comm=c algo=collnet\nallreduce 16MiB comm=e algo=collnet\n' --set ib.sharp_sat=port $T
run sat_small fattree-16.topo 'ranks 16\ncomm a = 0-7\ncomm b = 8-15\nallreduce 8B comm=a algo=collnet\nallreduce 8B comm=b algo=collnet\n' $T
grep -q "1 allreduce waited" "$tmp/sat_switch.txt" || fail "sat_switch: no wait in the summary: $(grep '^sharp' "$tmp/sat_switch.txt")"
python3 - "$tmp" <<'PY' || fail "SHARP's streaming trees"
import json, sys
d = sys.argv[1]
j = {n: json.load(open(f"{d}/{n}.json")) for n in
     ("sat_one", "sat_switch", "sat_port", "sat_ndr", "sat_ndr_one", "sat_link", "sat_small")}
ok = True
def span(n):
    return max(c["end_ps"] for c in j[n]["collectives"]) - min(c["start_ps"] for c in j[n]["collectives"])
def waits(n):
    return j[n]["sharp"]["tree_waits"], j[n]["sharp"]["tree_wait_ps"]
t1, n1 = span("sat_one"), span("sat_ndr_one")
print(f"one 16 MiB allreduce {t1/1e6:.1f} us (ndr {n1/1e6:.1f}); two: switch {span('sat_switch')/1e6:.1f}, "
      f"port {span('sat_port')/1e6:.1f}, ndr {span('sat_ndr')/1e6:.1f}, a shared link {span('sat_link')/1e6:.1f} us")
w, wps = waits("sat_switch")
if w != 1 or abs(span("sat_switch") / (2 * t1) - 1) > 0.02 or abs(wps / t1 - 1) > 0.02:
    print("  switch: not one after the other", w, wps); ok = False
for n, t in (("sat_port", t1), ("sat_ndr", n1)):
    if waits(n)[0] != 0 or abs(span(n) / t - 1) > 0.02:
        print(f"  {n}: not side by side", waits(n)); ok = False
if waits("sat_link")[0] != 1 or span("sat_link") < 1.5 * t1:
    print("  a shared link: no wait", waits("sat_link")); ok = False
if waits("sat_small")[0] != 0:
    print("  8 B waited"); ok = False
sys.exit(0 if ok else 1)
PY

# ... and two that wait for each other's tree (ranks 4-7 take b first, and
# a has its tree already) end in a stall that says so, not a hang
{
	printf 'ranks 16\ncomm a = 0-7\ncomm b = 4-11\n'
	for r in 4 5 6 7 8 9 10 11; do printf 'compute %d 10us\n' "$r"; done
	printf 'y: allreduce 16MiB comm=b algo=collnet\nx: allreduce 16MiB comm=a algo=collnet after=y\n'
} > "$tmp/sat_dead.trace"
if timeout 60 "$IBFAB" run --topo "$EX/fattree-16.topo" --trace "$tmp/sat_dead.trace" \
	> "$tmp/sat_dead.out" 2>&1; then
	fail "two allreduces waiting for each other's SHARP tree finished"
fi
grep -q "stalled.*allreduces through SHARP (collnet, nvls + SHARP) wait for trees that others hold" "$tmp/sat_dead.out" ||
	fail "SHARP trees held in a cycle: $(cat "$tmp/sat_dead.out")"

printf 'ranks 16\nallreduce 1MiB algo=collnet\n' > "$tmp/roce.trace"
if "$IBFAB" run --topo "$EX/fattree-16.topo" --trace "$tmp/roce.trace" --set fabric=roce \
	> "$tmp/roce.out" 2>&1; then
	fail "collnet on RoCE was accepted"
fi
grep -q "roce.trace:2: allreduce algo=collnet is SHARP" "$tmp/roce.out" ||
	fail "collnet on RoCE: $(cat "$tmp/roce.out")"
finish
