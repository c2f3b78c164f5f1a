#!/bin/bash
# routing.sh - the routing options from the command line: `ibfab run
# --routing minhop|updn|ftree|dor` simulates to completion with each
# engine (dor on a generated torus and mesh), an unknown engine is refused
# with the list of known ones, the options are checked and documented;
# `ibfab topo route` writes a dump that reads back byte for byte, and
# `ibfab run --lft` on it simulates exactly as the engine that wrote it;
# `ibfab topo path` prints an ibtracert-style route; a malformed dump is
# refused with file:line; a generated fabric beyond InfiniBand's 49,151
# LIDs is written without LIDs and refused on InfiniBand, saying why, and
# one past 65,535 nodes by the verbs daemon.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
: "${IBFAB_SRC:?IBFAB_SRC must name the source tree}"
FT16=$IBFAB_SRC/topologies/examples/fattree-16.topo

# delivered JSON: print "delivered/total" from a run's JSON
delivered() {
	sed -n 's/^ "messages_\(total\|delivered\)": \([0-9]*\),$/\2/p' "$1" | tr '\n' ' '
}

run_ok() {
	local name=$1
	shift
	if ! "$IBFAB" run "$@" --json "$tmp/$name.json" --quiet --reproducible \
		> "$tmp/$name.out" 2> "$tmp/$name.err"; then
		fail "ibfab run $*: exit $?: $(cat "$tmp/$name.err")"
		return
	fi
	read -r total done <<< "$(delivered "$tmp/$name.json")"
	if [ -z "$total" ] || [ "$total" != "$done" ] || [ "$total" -eq 0 ]; then
		fail "ibfab run $*: delivered '$done' of '$total'"
	else
		echo "ok:   run $* -> $done/$total delivered"
	fi
}

# 1. every engine on the built-in fat tree, with LMC too
for r in minhop updn ftree dor; do
	run_ok "ft-$r" --routing "$r" --traffic shift:k=5,size=64KiB
	run_ok "ft-$r-lmc" --routing "$r" --lmc 2 --traffic alltoall:size=4KiB
done
run_ok ft-roots --routing updn --roots spine1 --traffic permutation:size=64KiB

# 2. dor (and updn, minhop) on a torus and a mesh from the generator
"$IBFAB" topo gen torus --dims 4x4 > "$tmp/torus.topo" || fail "topo gen torus"
"$IBFAB" topo gen mesh --dims 3x3 --hosts 2 > "$tmp/mesh.topo" || fail "topo gen mesh"
for t in torus mesh; do
	for r in dor updn; do
		# dor on a torus with one VL can deadlock (docs/routing.md): the
		# run must stop with the credit loop named, never hang
		[ "$t-$r" = torus-dor ] && continue
		run_ok "$t-$r" --topo "$tmp/$t.topo" --routing "$r" --traffic alltoall:size=8KiB
	done
done
"$IBFAB" run --topo "$tmp/torus.topo" --routing dor --set ib.vls=1 --set hca.timeout=8 \
	--traffic alltoall:size=8KiB > /dev/null 2> "$tmp/td.err"
rc=$?
if [ $rc -eq 0 ]; then
	: # no loop formed this time: allowed, dor may get lucky
elif [ $rc -ne 1 ] || ! grep -q "credit loop on VL 0" "$tmp/td.err"; then
	fail "torus-dor: exit $rc without a credit-loop report: $(cat "$tmp/td.err")"
fi

# 3. refusals: exit status, message, nothing written
expect() {
	local want=$1 frag=$2
	shift 2
	"$IBFAB" "$@" > "$tmp/x.out" 2> "$tmp/x.err"
	local rc=$?
	if [ "$rc" -ne "$want" ] || ! grep -qF -- "$frag" "$tmp/x.err"; then
		fail "ibfab $*: exit $rc (want $want), stderr: $(cat "$tmp/x.err")"
	elif [ "$want" -eq 1 ] && [ "$(wc -l < "$tmp/x.err")" -ne 1 ]; then
		fail "ibfab $*: more than one line on stderr"
	else
		echo "ok:   ibfab $* -> $rc: $(head -1 "$tmp/x.err")"
	fi
}
expect 2 "unknown routing engine 'lash' (known: minhop, updn, ftree, dor)" run --routing lash
expect 2 "'--routing' given twice" run --routing ftree --routing updn
expect 2 "--lmc: expected 0..7" run --lmc 8
expect 2 "excludes --routing" run --lft x.dump --routing ftree
expect 1 "not a fat tree" run --topo "$tmp/torus.topo" --routing ftree
expect 1 "no switch named 'nosuch'" run --routing updn --roots nosuch
expect 1 "x.dump: cannot open" run --lft "$tmp/x.dump"
expect 2 "unknown routing engine 'lash'" topo route "$FT16" --routing lash
[ ! -e "$tmp/out.json" ] || fail "a refused run left out.json"

# 4. help documents the options
"$IBFAB" run --help > "$tmp/help" || fail "run --help"
for o in --routing --roots --lmc --lft minhop updn ftree dor; do
	grep -q -- "$o" "$tmp/help" || fail "ibfab run --help does not mention $o"
done
"$IBFAB" topo route --help | grep -q -- "--lft-out" || fail "topo route --help lacks --lft-out"
"$IBFAB" topo path --help | grep -q "ibtracert" || fail "topo path --help lacks ibtracert"

# 5. a dump written, read back and written again is the same file; a run
#    with --lft on it is the run with the engine that wrote it
"$IBFAB" topo route "$FT16" --routing ftree --lmc 1 --lft-out "$tmp/ft.dump" \
	> "$tmp/route.out" || fail "topo route --lft-out"
grep -q '^paths per link  max 12 ' "$tmp/route.out" || fail "ftree balance on fattree-16: $(cat "$tmp/route.out")"
"$IBFAB" topo route "$FT16" --lft "$tmp/ft.dump" --lft-out "$tmp/again.dump" > /dev/null ||
	fail "topo route --lft"
cmp -s "$tmp/ft.dump" "$tmp/again.dump" || fail "dump -> read -> dump changed the file"
ls "$tmp" | grep -q ibfab-tmp && fail "a temporary dump was left behind"
run_ok engine --topo "$FT16" --routing ftree --lmc 1 --traffic shift:k=3,size=64KiB
run_ok fromdump --topo "$FT16" --lft "$tmp/ft.dump" --traffic shift:k=3,size=64KiB
cmp -s "$tmp/engine.json" "$tmp/fromdump.json" || fail "--lft run differs from the engine's run"

# 6. topo path: ibtracert's shape, and it follows the dump
"$IBFAB" topo path "$FT16" h0 h5 --lft "$tmp/ft.dump" > "$tmp/path" || fail "topo path"
head -1 "$tmp/path" | grep -q '^From ca {0x0000000000100000} portnum 1 lid .* "h0"$' ||
	fail "topo path first line: $(head -1 "$tmp/path")"
tail -1 "$tmp/path" | grep -q '^To ca {0x000000000010000a} portnum 1 lid .* "h5"$' ||
	fail "topo path last line: $(tail -1 "$tmp/path")"
[ "$(grep -c -- '->' "$tmp/path")" -eq 4 ] || fail "h0 -> h5 should cross 4 cables"
"$IBFAB" topo path "$FT16" h0 h5 --routing ftree --lmc 1 | cmp -s - "$tmp/path" ||
	fail "topo path with the engine and with its dump differ"

# 7. a malformed dump: file:line, exit 1
sed '3s/^\(0x[0-9a-f]*\) [0-9]*/\1 three/' "$tmp/ft.dump" > "$tmp/bad.dump"
expect 1 "bad.dump:3:" topo route "$FT16" --lft "$tmp/bad.dump"
expect 1 "bad.dump:3:" run --topo "$FT16" --lft "$tmp/bad.dump"

# Beyond InfiniBand's LIDs (48 pods of a radix-64 tree: 49,152 hosts and
# 4,096 switches): the file has no LIDs, and ib refuses it by name (RoCE
# runs it: docs/performance.md; too slow to set up for this suite).
"$IBFAB" topo gen fattree --levels 3 --radix 64 --pods 48 > "$tmp/ft48.topo" ||
	fail "topo gen of 49,152 hosts failed"
grep -q "^# 49152 hosts, 4096 switches" "$tmp/ft48.topo" || fail "ft48: $(sed -n 3p "$tmp/ft48.topo")"
! grep -q " lid [0-9]" "$tmp/ft48.topo" || fail "ft48 carries LIDs past InfiniBand's"
if "$IBFAB" run --topo "$tmp/ft48.topo" --traffic p2p:src=h0,dst=h1,size=1B > "$tmp/ft48.out" 2>&1; then
	fail "ib ran a fabric beyond its LIDs"
fi
grep -q "too many endpoints for InfiniBand: .* 49151 unicast LIDs .*fabric=roce or tcp" "$tmp/ft48.out" ||
	fail "ib's refusal: $(cat "$tmp/ft48.out")"
# past 65,535 nodes even RoCE has more hosts than the verbs shim's 16-bit
# LIDs can name: the daemon refuses at once
"$IBFAB" topo gen fattree --levels 3 --radix 64 > "$tmp/ft64.topo" || fail "topo gen of 65,536 hosts failed"
if timeout 60 "$IBFAB" serve --topo "$tmp/ft64.topo" --set fabric=roce --socket "$tmp/s.sock" \
	> "$tmp/serve64.out" 2>&1; then
	fail "serve took 70,656 nodes"
fi
grep -q "more than the 65535 16-bit LIDs verbs programs address hosts by" "$tmp/serve64.out" ||
	fail "serve's refusal: $(cat "$tmp/serve64.out")"
finish
