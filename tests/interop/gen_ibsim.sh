#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# gen_ibsim.sh - interop: every generator family writes files the real
# tools accept. For each fabric, ibsim (Debian ibsim-utils) builds it from
# the generated file, ibnetdiscover (infiniband-diags, through libumad2sim's
# LD_PRELOAD) discovers it, and `ibfab topo links` must print the same cable
# list, rates included, for the file and for the dump; the LIDs ibsim took
# from the file's comments must come back too. Ends are compared by node
# description, which ibsim keeps.
#
# Fabrics: the shipped examples of every family, plus shapes that stress
# the writer: unused switch ports (--radix), parallel cables (leafspine,
# a size-2 torus dimension), a 3D torus and mesh, several leaves per rail,
# and rates other than 4xHDR (not NDR: ibsim 0.10 refuses the e=8 code
# for it, "bad extended speed 8"). About 10 s.
#
# Exit 77 (skipped) when a tool is missing, unless CI=true: then it fails.
# Parallel-safe: a private abstract socket (IBSIM_SOCKNAME) and a private
# working directory (libumad2sim makes ./sys-<pid> there); only the ibsim
# started here is killed, by its pid.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/ibsim.sh" gen-ibsim ibnetdiscover
EX=$SRC/topologies/examples

discover() {
	(cd "$work" && LD_PRELOAD=$UMAD2SIM timeout 60 ibnetdiscover) \
		>"$1" 2>"$work/ibnd.err" || {
		cat "$work/ibnd.err" "$work/ibsim.log" >&2
		fail "ibnetdiscover failed"
	}
	grep -q '^Switch' "$1" || fail "ibnetdiscover found no switch"
}

links() { "$IBFAB" topo links "$1" || fail "ibfab topo links $1"; }
lids() {
	# (without the hosts' addresses: they follow the file's host order)
	"$IBFAB" topo show "$1" | sed -n '/^LIDs/,$p' | tail -n +2 | sed 's/  127\.[0-9.]*$//' ||
		fail "ibfab topo show $1"
}

# check NAME FILE [RATE]: ibsim + ibnetdiscover give back FILE's cables
# (with rates) and LIDs; every cable is at RATE (default 4xHDR).
check() {
	local name=$1 t=$2 rate=${3:-4xHDR}
	start_sim "$t"
	discover "$work/$name.ibnd"
	stop_sim
	links "$t" >"$work/a.links"
	links "$work/$name.ibnd" >"$work/b.links"
	[ -s "$work/a.links" ] || fail "$name: no cables in $t"
	if ! diff -u "$work/a.links" "$work/b.links" >"$work/diff"; then
		head -n 40 "$work/diff" >&2
		fail "$name: the generated file and ibnetdiscover's dump differ"
	fi
	grep -v " $rate\$" "$work/a.links" | head -n 3 | grep . >&2 &&
		fail "$name: a cable not at $rate"
	lids "$t" >"$work/a.lids"
	lids "$work/$name.ibnd" >"$work/b.lids"
	[ -s "$work/a.lids" ] || fail "$name: no LIDs"
	diff -u "$work/a.lids" "$work/b.lids" >&2 || fail "$name: LIDs differ"
	echo "ok: $name: $(wc -l <"$work/a.links") cables and $(wc -l <"$work/a.lids") LIDs agree"
}

# gen NAME ARGS...: generate into $work/NAME.topo
gen() {
	local name=$1
	shift
	"$IBFAB" topo gen "$@" >"$work/$name.topo" || fail "ibfab topo gen $*"
}

# 1. The shipped examples of every family.
for f in fattree-k8-3level fattree-64-2to1 torus-4x4 mesh-4x4 dragonfly-4x4x2 rail-8x8; do
	[ -r "$EX/$f.topo" ] || fail "missing $EX/$f.topo"
	check "$f" "$EX/$f.topo"
done

# 2. Shapes the examples do not cover.
gen ls leafspine --leaves 3 --spines 2 --hosts 5 --links-per-spine 2 --radix 12 --rate 4xEDR
check leafspine "$work/ls.topo" 4xEDR
gen t3 torus --dims 2x3x2 --hosts 2 --rate 12xQDR
check torus-2x3x2 "$work/t3.topo" 12xQDR
gen m3 mesh --dims 3x3x2 --rate 1xSDR
check mesh-3x3x2 "$work/m3.topo" 1xSDR
gen df dragonfly --groups 5 --routers 4 --hosts 2 --global 1 --rate 4xFDR
check dragonfly-5x4 "$work/df.topo" 4xFDR
gen rl rail --nodes 10 --gpus 4 --radix 8 --oversub 3:1
check rail-split "$work/rl.topo"
gen ft fattree --levels 3 --radix 6 --oversub 2:1 --pods 4
check fattree-3l-2to1 "$work/ft.topo"
exit 0
