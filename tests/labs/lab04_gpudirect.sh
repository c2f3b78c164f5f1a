#!/bin/bash
# lab04_gpudirect.sh - every number docs/labs/04-gpudirect.md states: 1 MiB
# host to host, GPU to GPU with and without GPUDirect RDMA, and through
# the root complex, with the hosts' memory, PCIe, copies and CPU.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
T=p2p:src=h0,dst=h5,size=1MiB
r() { "$IBFAB" run --reproducible --json "$tmp/$1.json" "${@:2}" > /dev/null || fail "ibfab run ${*:2}"; }
r host --traffic $T
r gd --traffic $T,mem=gpu
r nogd --traffic $T,mem=gpu --set host.gpudirect=off
r rc --traffic $T,mem=gpu --set host.gpu_same_switch=off
python3 - "$tmp" <<'PY' || fail "the lab's figures"
import json, sys
d = sys.argv[1]
J = {k: json.load(open(f"{d}/{k}.json")) for k in ["host", "gd", "nogd", "rc"]}
bad = []
t = lambda k: (J[k]["flows"][0]["end_ps"] - J[k]["flows"][0]["start_ps"]) / 1e6
for k, us in [("host", 44.00), ("gd", 44.20), ("nogd", 127.82), ("rc", 139.38)]:
    if abs(t(k) - us) > 0.006: bad.append(f"{k}: {t(k):.3f} us, the lab says {us}")
h = lambda k: {x["node"]: x for x in J[k]["hosts"]}
gd, no = h("gd"), h("nogd")
if sum(x["hostmem_bytes"] for x in gd.values()) != 128: bad.append("gd host memory")
if any(x["staging_copies"] for x in gd.values()): bad.append("gd staged")
for n in ["h0", "h5"]:
    if abs(gd[n]["gpu_pcie_bytes"] / 2**20 - 1.10) > 0.005: bad.append(f"gd {n} GPU link bytes")
    if no[n]["staging_copies"] != 1: bad.append(f"nogd {n} copies")
    if no[n]["hostmem_bytes"] < 2 << 20 or no[n]["root_complex_bytes"] < 2 << 20:
        bad.append(f"nogd {n}: host memory {no[n]['hostmem_bytes']}, root complex {no[n]['root_complex_bytes']}")
if (no["h0"]["cpu_ps"], no["h5"]["cpu_ps"]) != (5430000, 5000000): bad.append("nogd CPU")
if abs(sum(x["hostmem_bytes"] for x in no.values()) / 2**20 - 4) > 0.01: bad.append("nogd host memory total")
if not t("rc") > t("nogd") > t("gd") > t("host"): bad.append("the order")
if abs((t("nogd") - t("gd")) - 83.6) > 0.05: bad.append(f"GPUDirect off costs {t('nogd') - t('gd'):.2f} us")
if abs(2**20 / 8e9 * 1e6 - 131) > 0.2: bad.append("1 MiB at 8 GB/s")
for b in bad:
    print("  ", b)
sys.exit(1 if bad else 0)
PY
finish
