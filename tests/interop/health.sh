#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# health.sh - interop: `ibfab topo health` on what the real tools see. ibsim
# builds fattree-16 with deliberate faults (a pulled spine-to-leaf cable, an
# EDR cable among HDR, a host cable at 1x: tests/lib/fault_tree.py), and
# ibnetdiscover (through libumad2sim) dumps it; `topo health` on the dump
# must name the four faults as it does on the file, and its expected
# all-to-all bus bandwidth (a short simulation) must be within 10% of a
# longer all-to-all run on the same dump. The clean fabric, built and
# dumped the same way, has no finding; and a spine cabled to one leaf is
# named idle under updn.
#
# Exit 77 (skipped) when a tool is missing, unless CI=true: then it fails.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/ibsim.sh" health ibnetdiscover
EX=$SRC/topologies/examples

python3 "$SRC/tests/lib/fault_tree.py" "$EX/fattree-16.topo" "$work" || fail "fault_tree.py"
cp "$EX/fattree-16.topo" "$work/clean.topo"

for f in faults idle clean; do
	start_sim "$work/$f.topo"
	(cd "$work" && LD_PRELOAD=$UMAD2SIM timeout 60 ibnetdiscover) >"$work/$f.ibnd" \
		2>"$work/ibnd.err" || { cat "$work/ibnd.err" >&2; fail "ibnetdiscover on $f.topo"; }
	stop_sim
	grep -q '^Switch' "$work/$f.ibnd" || fail "$f: ibnetdiscover found no switch"
done

"$IBFAB" topo health "$work/faults.ibnd" >"$work/h.out" 2>&1
for want in "slow cable   leaf1[2] <-> h5[1] runs 1xHDR; 15 of the host cables between levels 0 and 1 run 4xHDR" \
	"<-> leaf1[5] runs 4xEDR; 14 of the switch cables between levels 1 and 2 run 4xHDR" \
	"missing      leaf3 (leaf) has 3 cables up, most leaves have 4" \
	"missing      spine1 (top switch) has 7 cables down, most of its level have 8" \
	"  4 findings"; do
	# (the dump may name a cable from its other end: spine0[3] or leaf1[5] first)
	grep -qF -- "${want/<-> leaf1\[5\]/<-> spine0[3]}" "$work/h.out" || grep -qF -- "$want" "$work/h.out" ||
		fail "health on ibnetdiscover's dump lacks '$want': $(sed -n '/^health/,/^deadlock/p' "$work/h.out")"
done
echo "ok: the four faults named on ibnetdiscover's dump"

"$IBFAB" topo health "$work/clean.ibnd" >"$work/c.out" 2>&1 || fail "health on the clean dump"
grep -q "^  no finding" "$work/c.out" ||
	fail "the clean dump has findings: $(sed -n '/^health/,/^deadlock/p' "$work/c.out")"
"$IBFAB" topo health "$work/idle.ibnd" --routing updn >"$work/i.out" 2>&1
grep -q "^  idle         spine1 carries none of the 240 host-to-host paths (updn routing)" "$work/i.out" ||
	fail "updn's idle spine not named: $(sed -n '/^health/,/^deadlock/p' "$work/i.out")"
echo "ok: the clean dump has no finding; updn's idle spine is named"

# the expected all-to-all against a longer one (256 KiB to each host)
"$IBFAB" run --topo "$work/faults.ibnd" --traffic alltoall:size=256KiB --reproducible \
	--json "$work/a2a.json" >/dev/null || fail "the all-to-all on the dump"
python3 - "$work/h.out" "$work/a2a.json" <<'PY' || fail "expected all-to-all busbw"
import json, re, sys
h = open(sys.argv[1]).read()
m = re.search(r"expected     all-to-all busbw ([0-9.]+) GB/s", h)
if not m:
    print("   no expected all-to-all line"); sys.exit(1)
d = json.load(open(sys.argv[2]))
run = d["payload_bytes_delivered"] / 16 / (d["sim_time_ps"] * 1e-12) / 1e9
exp = float(m.group(1))
print(f"ok: expected all-to-all busbw {exp} GB/s, a 256 KiB all-to-all {run:.2f} GB/s")
sys.exit(0 if abs(exp - run) <= 0.10 * run else 1)
PY
exit 0
