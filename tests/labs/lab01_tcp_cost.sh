#!/bin/bash
# lab01_tcp_cost.sh - every number docs/labs/01-tcp-cost.md states, from
# the lab's own commands: the stream over IB and TCP (throughput, CPU,
# the kernel's counts and CPU by cost), the one-core bound, the three
# what-ifs, and the 64-byte message's extra time taken apart.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
S=p2p:src=h0,dst=h5,size=1MiB,count=16
j() { "$IBFAB" run --reproducible "$@" --json "$tmp/out.json" > "$tmp/out.txt" ||
	fail "ibfab run $*"; }
j --set fabric=ib --traffic $S
cp "$tmp/out.json" "$tmp/ib.json"; cp "$tmp/out.txt" "$tmp/ib.txt"
j --set fabric=tcp --traffic $S
cp "$tmp/out.json" "$tmp/tcp.json"
j --set fabric=tcp --set tcp.mss=8948 --traffic $S
cp "$tmp/out.json" "$tmp/jumbo.json"
j --set fabric=tcp --set tcp.copy_gbps=75 --traffic $S
cp "$tmp/out.json" "$tmp/copy.json"
j --set fabric=tcp --set tcp.rx_usecs=0 --traffic $S
cp "$tmp/out.json" "$tmp/nomod.json"
j --set fabric=tcp --set tcp.rx_usecs=0 --set tcp.irq_coalesce=1 --traffic $S
cp "$tmp/out.json" "$tmp/irq.json"
j --set fabric=roce --traffic p2p:src=h0,dst=h5,size=64B
cp "$tmp/out.json" "$tmp/roce64.json"
j --set fabric=tcp --traffic p2p:src=h0,dst=h5,size=64B
cp "$tmp/out.json" "$tmp/tcp64.json"
grep -q "^kernel         bypassed (verbs): 0 system calls, 0 interrupts, 0 bytes copied by a CPU" "$tmp/ib.txt" ||
	fail "IB's kernel line: $(grep '^kernel' "$tmp/ib.txt")"
python3 - "$tmp" <<'PY' || fail "the lab's figures"
import json, sys
d = sys.argv[1]
J = {k: json.load(open(f"{d}/{k}.json")) for k in
     ["ib", "tcp", "jumbo", "copy", "nomod", "irq", "roce64", "tcp64"]}
bad = []
def near(what, got, want, rel):
    if abs(got - want) > rel * want:
        bad.append(f"{what}: {got:.4g}, the lab says {want:.4g}")
ib, tcp = J["ib"], J["tcp"]
k = tcp["kernel"]
near("IB Gb/s", ib["throughput_gbps"], 198.1, 0.002)
near("TCP Gb/s", tcp["throughput_gbps"], 33.7, 0.003)
near("TCP one-core bound", tcp["throughput_gbps"], 1448 * 8 / (1448 / 6 + 100), 0.01)
near("IB CPU us", ib["cpu_ps"] / 1e6, 6.88, 0.001)
near("TCP CPU ms", tcp["cpu_ps"] / 1e9, 6.76, 0.002)
if ib["kernel"]["syscalls"] or ib["kernel"]["interrupts"] or ib["kernel"]["cpu_copy_bytes"]:
    bad.append(f"IB's kernel counts {ib['kernel']}")
if (k["syscalls"], k["interrupts"], k["context_switches"]) != (32, 229, 16):
    bad.append(f"TCP counts {k}")
if k["cpu_copy_bytes"] != 2 * 16 * ((1 << 20) + 16):
    bad.append(f"TCP copied {k['cpu_copy_bytes']} bytes, not twice the payload and headers")
if k["cached_copy_bytes"] != 16 * ((1 << 20) + 16):
    bad.append(f"TCP copied {k['cached_copy_bytes']} bytes from the cache, not the receiver's")
for key, ms in [("copy_ps", 4.03), ("interrupt_ps", 0.3435), ("protocol_ps", 2.32)]:
    near(f"TCP {key} ms", k[key] / 1e9, ms, 0.003)
# the sender's copy at 6 GB/s, the receiver's from the cache at 13.6
near("TCP copies, closed form", k["copy_ps"] / 1e9, 16 * ((1 << 20) + 16) * (1 / 6 + 1 / 13.6) / 1e6, 0.001)
near("TCP wake-ups us", k["wakeup_ps"] / 1e6, 48, 0.001)
near("TCP system calls us", k["syscall_ps"] / 1e6, 16, 0.001)
if not (k["copy_ps"] > k["protocol_ps"] > k["interrupt_ps"] > k["wakeup_ps"] > k["syscall_ps"]):
    bad.append("the costs' order")
near("jumbo Gb/s", J["jumbo"]["throughput_gbps"], 44.5, 0.003)
if J["jumbo"]["kernel"]["interrupts"] != 56: bad.append(f"jumbo interrupts {J['jumbo']['kernel']['interrupts']}")
near("fast copy Gb/s", J["copy"]["throughput_gbps"], 92.8, 0.003)
nm = J["nomod"]
near("no moderation Gb/s", nm["throughput_gbps"], 33.8, 0.003)
near("no moderation CPU ms", nm["cpu_ps"] / 1e9, 8.92, 0.002)
if nm["kernel"]["interrupts"] != 1664: bad.append(f"no moderation: interrupts {nm['kernel']['interrupts']}")
if nm["cpu_ps"] - nm["kernel"]["interrupt_ps"] != tcp["cpu_ps"] - k["interrupt_ps"]:
    bad.append("moderation changed more than the interrupts' CPU")
if J["irq"]["kernel"]["cached_copy_bytes"] > 2**18:
    bad.append(f"an interrupt a segment: {J['irq']['kernel']['cached_copy_bytes']} bytes from the cache")
near("an interrupt a segment, Gb/s", J["irq"]["throughput_gbps"], 7.2, 0.01)
near("an interrupt a segment, closed form", J["irq"]["throughput_gbps"], 1448 * 8 / 1600, 0.01)
if J["irq"]["kernel"]["interrupts"] != 11600: bad.append(f"irq interrupts {J['irq']['kernel']['interrupts']}")
if tcp["tcp_segments"] != 11600: bad.append(f"segments {tcp['tcp_segments']}")
if ib["throughput_gbps"] / tcp["throughput_gbps"] < 5.8: bad.append("IB/TCP below 5.8x")
mem = lambda x: sum(h["hostmem_bytes"] for h in x["hosts"]) / 2**20
near("IB host memory MiB", mem(ib), 32, 0.001)
near("TCP host memory MiB", mem(tcp), 96, 0.001)
f = lambda x: x["flows"][0]["end_ps"] - x["flows"][0]["start_ps"]
r, t = f(J["roce64"]), f(J["tcp64"])
near("RoCE 64 B us", r / 1e6, 1.26, 0.005)
near("TCP 64 B us", t / 1e6, 9.98, 0.005)
kk = J["tcp64"]["kernel"]
parts = [kk[x] for x in ["syscall_ps", "copy_ps", "protocol_ps", "interrupt_ps", "wakeup_ps"]]
for got, want in zip(parts, [1000000, 19217, 200000, 1500000, 3000000]):
    if abs(got - want) > 2: bad.append(f"64 B parts {parts}")
# the parts and the NIC's 3 us of moderation add up to the difference
near("64 B parts add up to the difference", sum(parts) + 3e6, t - r, 0.01)
near("64 B extra us", sum(parts) / 1e6, 5.719, 0.001)
for b in bad:
    print("  ", b)
sys.exit(1 if bad else 0)
PY
IBFAB_DEBUG=tcp "$IBFAB" run --set fabric=tcp --traffic p2p:src=h0,dst=h5,size=64B 2>&1 >/dev/null |
	grep -q "\[tcp\] qp [0-9]* send() of 80 bytes" || fail "IBFAB_DEBUG=tcp shows no send()"
finish
