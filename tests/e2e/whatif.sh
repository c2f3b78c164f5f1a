#!/bin/bash
# whatif.sh - a cluster engineer's "what if we added two spines": the
# switches and cables a topology file does not have, from the command line
# (--set 'switch[NAME].ports=N', 'link[NODE/PORT].peer=NODE/PORT'), on a
# 2:1 leaf-spine of 4 leaves x 4 hosts and 2 spines (radix 12, so the
# leaves have free ports). A 1 MiB all-to-all:
#  - as cabled, the 2:1 up-links bound it: each leaf sends 4 x 12 MiB over
#    2 up-links, 24 MiB x 4122/4096 / 25 GB/s = 1.013 ms (no less, and
#    at most 5% more: packets of flows that share an up-link meet at it);
#  - with spine2 and spine3 added and cabled to every leaf, 4 up-links for
#    4 hosts (12 MiB each): the host links bound it, 15 MiB x 4122/4096 /
#    25 GB/s = 0.633 ms (within 3%);
#  - one of the new cables at EDR (a what-if on a new cable): slower than
#    with it at HDR, the EDR cable the busiest link;
#  - those runs by the subnet manager's tables (ib.ar=off); with the HDR
#    preset's adaptive routing the switches send less over the slow cable,
#    and the EDR what-if costs under 5% (by the tables over 20%);
#  - the JSON lists the settings as given;
#  - `topo health` takes the same settings: the added spines make the
#    bisection full (0.50 -> 1.00) and raise the expected all-to-all, one
#    spine cable at EDR is found slow; a setting naming no cable is refused.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
"$IBFAB" topo gen leafspine --leaves 4 --spines 2 --hosts 4 --radix 12 > "$tmp/ls.topo" ||
	fail "topo gen leafspine"
A=(run --topo "$tmp/ls.topo" --traffic alltoall:size=1MiB --reproducible --set ib.ar=off
   --set switch.queues=fifo)
ADD=(--set 'switch[spine2].ports=12' --set 'switch[spine3].ports=12')
for s in 2 3; do
	for l in 0 1 2 3; do
		ADD+=(--set "link[spine$s/$((l + 1))].peer=leaf$l/$((9 + s))")
	done
done
"$IBFAB" "${A[@]}" --json "$tmp/base.json" > "$tmp/base.txt" 2>&1 || fail "base: $(tail -2 "$tmp/base.txt")"
"$IBFAB" "${A[@]}" "${ADD[@]}" --json "$tmp/add.json" > "$tmp/add.txt" 2>&1 ||
	fail "two spines added: $(tail -2 "$tmp/add.txt")"
"$IBFAB" "${A[@]}" "${ADD[@]}" --set 'link[spine3/2].speed=EDR' --json "$tmp/edr.json" > "$tmp/edr.txt" 2>&1 ||
	fail "an EDR cable: $(tail -2 "$tmp/edr.txt")"
"$IBFAB" "${A[@]}" "${ADD[@]}" --set 'link[spine3/2].speed=EDR' --set ib.ar=on --set switch.queues=voq \
	--json "$tmp/edr_ar.json" > "$tmp/edr_ar.txt" 2>&1 || fail "an EDR cable, AR: $(tail -2 "$tmp/edr_ar.txt")"
grep -q "^               24 nodes: 8 switches, 16 hosts; 32 links" "$tmp/add.txt" ||
	fail "two spines added: $(grep -A1 '^topology' "$tmp/add.txt")"
python3 - "$tmp" <<'PY' || fail "what-if figures"
import json, sys
t = sys.argv[1]
b, a, e, r = (json.load(open(f"{t}/{n}.json")) for n in ("base", "add", "edr", "edr_ar"))
eff = 4122 / 4096		# a full MTU-4096 packet's wire bytes over its payload
rate = 25e9			# 4xHDR
bound2to1 = 24 * 2**20 * eff / rate
bound_host = 15 * 2**20 * eff / rate
tb, ta, te = (x["sim_time_ps"] * 1e-12 for x in (b, a, e))
print(f"ok: 2:1 {tb * 1e3:.3f} ms (bound {bound2to1 * 1e3:.3f}); two spines added {ta * 1e3:.3f} ms "
      f"(bound {bound_host * 1e3:.3f}); one new cable at EDR {te * 1e3:.3f} ms, busiest "
      f"{e['link_load']['node']} port {e['link_load']['port']}")
bad = []
if not 1 <= tb / bound2to1 <= 1.05: bad.append(f"2:1: {tb} against {bound2to1}")
if abs(ta / bound_host - 1) > 0.03: bad.append(f"added: {ta} against {bound_host}")
if not te > ta * 1.2: bad.append(f"EDR cable: {te} against {ta}")
if e["link_load"]["node"] not in ("spine3", "leaf1"): bad.append(f"EDR: busiest {e['link_load']}")
tr = r["sim_time_ps"] * 1e-12
print(f"ok: the EDR cable with adaptive routing {tr * 1e3:.3f} ms ({tr / ta:.3f}x)")
if not tr < ta * 1.05 or r["load_balancing"] != "ar": bad.append(f"EDR, AR: {tr} against {ta}")
for x in (b, a, e, r):
    if x["messages_delivered"] != 240: bad.append(f"{x['messages_delivered']} delivered")
sets = a["params"].get("switch_adds"), a["params"].get("link_sets", [])
if sets[0] != ["switch[spine2].ports=12", "switch[spine3].ports=12"] or \
        "link[spine2/1].peer=leaf0/11" not in sets[1]:
    bad.append(f"JSON settings {sets}")
for x in bad: print("  ", x)
sys.exit(1 if bad else 0)
PY
"$IBFAB" topo health "$tmp/ls.topo" > "$tmp/h0.txt" 2>&1 || fail "topo health: $(tail -2 "$tmp/h0.txt")"
"$IBFAB" topo health "$tmp/ls.topo" "${ADD[@]}" > "$tmp/h1.txt" 2>&1 || fail "topo health with two spines: $(tail -2 "$tmp/h1.txt")"
"$IBFAB" topo health "$tmp/ls.topo" --set 'link[leaf0/5].speed=EDR' > "$tmp/h2.txt" 2>&1
grep -q "0.50 of full bisection" "$tmp/h0.txt" || fail "health as cabled: $(grep bisection "$tmp/h0.txt")"
grep -q "1.00 of full bisection" "$tmp/h1.txt" || fail "health with two spines: $(grep bisection "$tmp/h1.txt")"
grep -q "^nodes        24: 8 switches" "$tmp/h1.txt" || fail "health with two spines: $(grep '^nodes' "$tmp/h1.txt")"
grep -q "slow cable   spine0\[1\] <-> leaf0\[5\] runs 4xEDR" "$tmp/h2.txt" || fail "health with an EDR cable: $(grep -A3 '^health' "$tmp/h2.txt")"
python3 - "$tmp/h0.txt" "$tmp/h1.txt" <<'PY' || fail "expected all-to-all"
import re, sys
a, b = (float(re.search(r"all-to-all busbw ([0-9.]+) GB/s", open(p).read()).group(1)) for p in sys.argv[1:])
print(f"ok: topo health: expected all-to-all {a} GB/s as cabled, {b} GB/s with two spines added")
sys.exit(0 if b > 1.5 * a else 1)
PY
"$IBFAB" topo health "$tmp/ls.topo" --set 'link[leaf0/9].speed=EDR' > "$tmp/err.txt" 2>&1 && fail "a rate on no cable: accepted"
grep -q "link\[leaf0/9\].speed=EDR: no cable at those ports" "$tmp/err.txt" || fail "a rate on no cable: $(cat "$tmp/err.txt")"
finish
