#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# opensm.sh - interop: ibfab's routing against the real OpenSM (Debian
# opensm), on fabrics ibsim (ibsim-utils) builds from generated files, with
# infiniband-diags' ibroute and ibtracert reading back what was programmed.
#
# For each fabric OpenSM runs once per engine (-R minhop|updn|ftree, -o,
# its own log, cache and dump directories) and writes opensm-lfts.dump;
# ibfab then checks, switches and ports matched by GUID:
#   0. minhop, updn, ftree (and dor on a torus): our tables equal
#      OpenSM's entry for entry (`topo route --lft-out` of both);
#   1. minhop (and dor on a torus): the hop count of every (switch,
#      destination LID) pair, from our tables and from OpenSM's, is the
#      same (`topo route --hops`);
#   2. updn and ftree: our routes reach every host from every host, and our
#      busiest switch-to-switch link carries no more paths than OpenSM's
#      (`topo route`'s "paths per link max"); the hop counts of every
#      (switch, LID) pair agree as well, down to which top-switch LIDs stay
#      unrouted;
#   3. OpenSM's dump loads with --lft, `ibfab topo path` prints for sampled
#      LID pairs exactly what the real ibtracert prints on the programmed
#      fabric, the same tables read back with `ibroute` (every switch,
#      concatenated; once also with -a and a switch by direct route) give
#      the same hop counts, and `ibfab run --lft` carries an all-to-all over
#      them without a drop;
#   4. our dump loads in OpenSM's `file` engine (-R file -U): its log says
#      the tables were configured and has no parse error, and the tables
#      `ibroute` then reads from the switches are ours, entry for entry.
# Plus OpenSM with LMC 1: its dump (two LIDs per host, new LIDs) loads, and
# paths to the second LIDs match ibtracert too.
#
# Fabrics: the shipped 16- and 128-host two-level fat trees, a 3-level
# radix-4 fat tree, a 3-level rail-optimised cluster and a 4x4 torus
# (minhop and dor only: OpenSM's ftree refuses it, and its updn finds no
# roots there and falls back to minhop).
# About 40 s.
#
# Exit 77 (skipped) when a tool is missing, unless CI=true: then it fails.
# Parallel-safe: private socket (IBSIM_SOCKNAME), working directory
# (libumad2sim's ./sys-<pid>) and OpenSM directories (-f, --dump_files_dir,
# OSM_TMP_DIR, OSM_CACHE_DIR); only the ibsim started here is killed, by pid.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/ibsim.sh" opensm opensm ibroute ibtracert
EX=$SRC/topologies/examples

route() { "$IBFAB" topo route "$@" || fail "ibfab topo route $*"; }
maxpaths() { sed -n 's/^paths per link  max \([0-9]*\) .*/\1/p'; }
unrouted() { sed -n 's/^host pairs .* \([0-9]*\) unrouted$/\1/p'; }

# Every switch's table as ibroute prints it, concatenated.
ibroute_all() {
	local dump=$1 out=$2
	: >"$out"
	for lid in $(sed -n 's/^Unicast lids .* of switch Lid \([0-9]*\) .*/\1/p' "$dump"); do
		diag ibroute "$lid" >>"$out" 2>/dev/null || fail "ibroute $lid"
	done
}

# LIDs (decimal) of the hosts in a dump, "name lid" per line, base LIDs.
host_lids() {
	sed -n "s/^0x\([0-9a-f]*\) [0-9]* # Channel Adapter portguid [^:]*: '\(.*\)'$/\2 \1/p" "$1" |
		sort -u -k1,1 | while read -r name hex; do
			echo "$name $((16#$hex))"
		done
}

pairs_compared=0
traced=0
entries=0

# check_fabric NAME FILE ENGINES...
check_fabric() {
	local name=$1 topo=$work/$1.topo
	local d=$work/$name
	sm_on_host "$2" >"$topo" || fail "$name: cannot rewrite $2"
	shift 2
	mkdir -p "$d"
	start_sim "$topo"
	for eng in "$@"; do
		local o=$d/osm-$eng
		opensm_run "$o" -R "$eng"
		grep -q "$eng tables configured on all switches" "$o/opensm.log" ||
			fail "$name: OpenSM $eng did not configure the switches (fell back?)"
		cp "$o/opensm-lfts.dump" "$d/$eng.dump"

		# the dump loads; report and hops from it and from our engine
		route "$topo" --lft "$d/$eng.dump" >"$d/osm-$eng.report"
		route "$topo" --routing "$eng" >"$d/ours-$eng.report"
		[ "$(unrouted <"$d/ours-$eng.report")" = 0 ] ||
			fail "$name $eng: our routes leave host pairs unrouted"
		route "$topo" --lft "$d/$eng.dump" --hops | sort >"$d/osm-$eng.hops"
		route "$topo" --routing "$eng" --hops | sort >"$d/ours-$eng.hops"
		# topo check reads OpenSM's dump too: its hop histogram and health
		# are those of our engine's tables where the hops agree
		"$IBFAB" topo check "$topo" --lft "$d/$eng.dump" --health >"$d/osm-$eng.check" 2>&1
		[ $? -le 1 ] && grep -q "^health " "$d/osm-$eng.check" &&
			grep -q "routed with the tables of $d/$eng.dump" "$d/osm-$eng.check" ||
			fail "$name $eng: topo check --lft on OpenSM's dump: $(tail -3 "$d/osm-$eng.check")"
		grep -q "unreachable" "$d/osm-$eng.check" &&
			fail "$name $eng: topo check --lft finds host pairs without a route in OpenSM's tables"
		local theirs ours
		theirs=$(maxpaths <"$d/osm-$eng.report")
		ours=$(maxpaths <"$d/ours-$eng.report")
		# minhop, updn and dor visit the destinations in OpenSM's order
		# and break ties as it does, and ftree indexes the tree and counts
		# its paths as OpenSM's does: the tables are OpenSM's, entry for
		# entry (both normalised by ibfab's dump writer)
		case $eng in
		minhop | updn | dor | ftree)
			route "$topo" --lft "$d/$eng.dump" --lft-out "$d/osm-$eng.norm" >/dev/null
			route "$topo" --routing "$eng" --lft-out "$d/ours-$eng.norm" >/dev/null
			diff "$d/osm-$eng.norm" "$d/ours-$eng.norm" >"$d/diff" || {
				head "$d/diff" >&2
				fail "$name $eng: our LFTs differ from OpenSM's ($(grep -c '^<' "$d/diff") entries)"
			}
			entries=$((entries + $(grep -c '^0x' "$d/ours-$eng.norm")))
			;;
		esac
		case $eng in
		minhop | dor)
			# shortest paths both: every (switch, destination LID) pair,
			# switches' LIDs too, has the same hop count
			diff "$d/osm-$eng.hops" "$d/ours-$eng.hops" >"$d/diff" || {
				head "$d/diff" >&2
				fail "$name $eng: hop counts differ from OpenSM's"
			}
			;;
		*)
			# host destinations: CA port GUIDs start 0x00000000001 in these files
			[ "$ours" -le "$theirs" ] ||
				fail "$name $eng: our busiest link carries $ours paths, OpenSM's $theirs"
			# on trees both are shortest up/down paths: the same hop
			# counts, and the same LIDs left unrouted (top to top)
			diff "$d/osm-$eng.hops" "$d/ours-$eng.hops" >"$d/diff" || {
				head "$d/diff" >&2
				fail "$name $eng: hop counts differ from OpenSM's"
			}
			;;
		esac
		pairs_compared=$((pairs_compared + $(wc -l <"$d/ours-$eng.hops")))
		echo "ok: $name $eng: $(wc -l <"$d/ours-$eng.hops") (switch, LID) pairs; max paths per link ours $ours, OpenSM $theirs"

		# OpenSM's tables as ibroute reads them from the switches; and
		# once with -a (every entry, "illegal port" ones too) and the
		# first leaf by direct route (a "DR path" header, no LID)
		ibroute_all "$d/$eng.dump" "$d/$eng.ibroute"
		route "$topo" --lft "$d/$eng.ibroute" --hops | sort | cmp -s - "$d/osm-$eng.hops" ||
			fail "$name $eng: ibroute's tables differ from OpenSM's dump"
		if [ "$name" = ft16 ] && [ "$eng" = ftree ]; then
			: >"$d/all.ibroute"
			sed -n 's/^Unicast lids .* of switch Lid \([0-9]*\) .*(.\(.*\).):$/\1 \2/p' \
				"$d/$eng.dump" | while read -r lid sw; do
				if [ "$sw" = leaf0 ]; then
					diag ibroute -a -D 0,1 || fail "ibroute -a -D 0,1"
				else
					diag ibroute -a "$lid" || fail "ibroute -a $lid"
				fi
			done >>"$d/all.ibroute" 2>/dev/null
			grep -q '^Unicast lids .* DR path .*(leaf0):$' "$d/all.ibroute" &&
				grep -q 'illegal port' "$d/all.ibroute" || fail "ibroute -a / -D output unexpected"
			route "$topo" --lft "$d/all.ibroute" --hops | sort | cmp -s - "$d/osm-$eng.hops" ||
				fail "$name $eng: ibroute -a / -D tables differ from OpenSM's dump"
		fi

		# ibtracert on the programmed fabric == ibfab topo path on the dump
		host_lids "$d/$eng.dump" >"$d/lids"
		local n
		n=$(wc -l <"$d/lids")
		local first last
		first=$(sed -n 1p "$d/lids" | cut -d' ' -f2)
		for i in 2 $((n / 3)) $((n / 2 + 1)) $n; do
			last=$(sed -n "${i}p" "$d/lids" | cut -d' ' -f2)
			for pair in "$first $last" "$last $first"; do
				local a b
				read -r a b <<<"$pair"
				diag ibtracert "$a" "$b" >"$d/real" 2>/dev/null ||
					fail "$name $eng: ibtracert $a $b"
				"$IBFAB" topo path "$topo" "$a" "$b" --lft "$d/$eng.dump" >"$d/ours" ||
					fail "$name $eng: ibfab topo path $a $b"
				diff "$d/real" "$d/ours" >&2 ||
					fail "$name $eng: ibtracert $a $b and ibfab topo path differ"
				traced=$((traced + 1))
			done
		done

		# and traffic runs over them
		"$IBFAB" run --topo "$topo" --lft "$d/$eng.dump" --traffic alltoall:size=4KiB \
			--json "$d/run.json" --quiet >/dev/null || fail "$name $eng: ibfab run --lft"
		grep -q '"drops": 0,' "$d/run.json" || fail "$name $eng: drops over OpenSM's tables"
	done

	# our dump in OpenSM's file engine: programmed entry for entry
	for eng in "$@"; do
		route "$topo" --routing "$eng" --lft-out "$d/ours-$eng.dump" >/dev/null
		opensm_run "$d/file-$eng" -R file -U "$d/ours-$eng.dump"
		grep -q "file tables configured on all switches" "$d/file-$eng/opensm.log" ||
			fail "$name: OpenSM did not configure our $eng tables"
		grep -E "PARSE ERROR|ERR 630" "$d/file-$eng/opensm.log" >&2 &&
			fail "$name: OpenSM's file engine complained about our $eng dump"
		ibroute_all "$d/ours-$eng.dump" "$d/file-$eng.ibroute"
		route "$topo" --lft "$d/file-$eng.ibroute" --lft-out "$d/file-$eng.readback" >/dev/null
		route "$topo" --lft "$d/ours-$eng.dump" --lft-out "$d/ours-$eng.normal" >/dev/null
		cmp -s "$d/file-$eng.readback" "$d/ours-$eng.normal" ||
			fail "$name: the switches do not hold our $eng tables after OpenSM's file engine"
		echo "ok: $name: OpenSM's file engine programmed our $eng tables exactly"
	done
	stop_sim
}

"$IBFAB" topo gen fattree --levels 3 --radix 4 >"$work/ft3.gen" || fail "topo gen fattree"
"$IBFAB" topo gen torus --dims 4x4 >"$work/torus.gen" || fail "topo gen torus"
# a 3-level rail-optimised cluster (32 nodes x 4 GPUs, 8 pods, 16 cores):
# minhop and updn put 448 paths on one core cable there, OpenSM's as ours,
# where ftree spreads them (124 at most)
"$IBFAB" topo gen rail --nodes 32 --gpus 4 --radix 8 --levels 3 >"$work/rail3.gen" ||
	fail "topo gen rail"

check_fabric ft16 "$EX/fattree-16.topo" minhop updn ftree
check_fabric ft3 "$work/ft3.gen" minhop updn ftree
check_fabric rail3 "$work/rail3.gen" minhop updn ftree
check_fabric torus "$work/torus.gen" minhop dor
# ibsim net files with no GUIDs and no LIDs: ibsim's GUIDs, and the LIDs
# OpenSM assigns (its own port first, then by port GUID) are ours too
check_fabric ring4 "$EX/ring-4.net" minhop
check_fabric star6 "$EX/star-6.net" minhop
check_fabric ft128 "$EX/fattree-128.topo" minhop updn ftree

# LMC 1: OpenSM gives every host two LIDs (and new ones); its dump loads
# and the second LIDs route as ibtracert says.
d=$work/lmc
mkdir -p "$d"
ft16=$work/ft16.topo
start_sim "$ft16"
opensm_run "$d/osm" -l 1 -R ftree
route "$ft16" --lft "$d/osm/opensm-lfts.dump" >"$d/report"
grep -q 'LMC 1$' "$d/report" || fail "LMC 1 dump: $(cat "$d/report")"
ibroute_all "$d/osm/opensm-lfts.dump" "$d/ibroute"
grep -q 'path #2 out of 2' "$d/ibroute" || fail "ibroute shows no LMC paths"
route "$ft16" --lft "$d/ibroute" --hops | sort >"$d/a"
route "$ft16" --lft "$d/osm/opensm-lfts.dump" --hops | sort >"$d/b"
cmp -s "$d/a" "$d/b" || fail "LMC 1: ibroute's tables and OpenSM's dump differ"
host_lids "$d/osm/opensm-lfts.dump" >"$d/lids"
src=$(sed -n 1p "$d/lids" | cut -d' ' -f2)
for dst in $(cut -d' ' -f2 "$d/lids" | tail -n +2); do
	diag ibtracert "$src" $((dst + 1)) >"$d/real" 2>/dev/null || fail "ibtracert $src $((dst + 1))"
	"$IBFAB" topo path "$ft16" "$src" $((dst + 1)) \
		--lft "$d/osm/opensm-lfts.dump" >"$d/ours" || fail "topo path to LID $((dst + 1))"
	diff "$d/real" "$d/ours" >&2 || fail "LMC 1: ibtracert $src $((dst + 1)) differs"
done
stop_sim
echo "ok: LMC 1: OpenSM's two LIDs per host load, 15 second-LID paths match ibtracert"
echo "ok: $entries LFT entries equal to OpenSM's (minhop, updn, ftree, dor); $pairs_compared (switch, destination LID) hop counts compared with OpenSM; $traced routes matched ibtracert"
exit 0
