#!/usr/bin/env bash
# tests/validation/run.sh - the validation suite: each row of rows.txt is a
# published measurement; run ibfab as the row says, read its figure, and
# check it against the published one (docs/validation.md).
#
#   run.sh ID...     run these rows; exit 1 if any leaves its tolerance
#                    (a row that cannot pass yet, "gap", exits 1 while it
#                    still cannot: its ctest expects that)
#   run.sh --all     every row
#   run.sh --table   every row, as the markdown table of docs/validation.md
#   run.sh --list    the row ids
#
# $IBFAB names the ibfab binary, $IBFAB_SRC the source tree (the rows'
# paths are relative to it).
set -u
: "${IBFAB:?IBFAB must name the ibfab binary}"
: "${IBFAB_SRC:?IBFAB_SRC must name the source tree}"
rows="$IBFAB_SRC/tests/validation/rows.txt"
cd "$IBFAB_SRC" || exit 2

# the rows, "|"-separated fields trimmed, one per line
rows() { grep -v '^#' "$rows" | grep -v '^[[:space:]]*$'; }
field() { awk -F' [|] ' -v n="$2" '{ print $n }' <<<"$1"; }

# figure ARGS READ: run ibfab, print the figure READ names (empty: none)
figure() {
	local args=$1 read=$2 out json
	json=$(mktemp)
	# the arguments are words without quotes or spaces inside (rows.txt)
	# shellcheck disable=SC2086
	out=$("$IBFAB" run --quiet --json "$json" $args 2>&1) ||
		{ echo "ibfab run $args failed: $out" >&2; rm -f "$json"; return 1; }
	set -- $read
	case $1 in
	hostcpu) # CPU time of host $2 per MiB of $3 bytes, in us (the JSON's hosts)
		awk -v n="\"$2\"," -v b="$3" '/"hosts": \[/ { on = 1 }
			on && $1 == "\"node\":" && $2 == n { me = 1 }
			me && $1 == "\"cpu_ps\":" { v = $2; sub(/,/, "", v); printf "%.1f\n", v / 1e6 / (b / 1048576); exit }' "$json" ;;
	perftest|nccl) # perftest's and nccl-tests' tables: a row starts with its size
		awk -v c="$2" -v s="$3" '$1 == s && NF >= 5 && $2 ~ /^[0-9]+$/ { print $c; exit }' <<<"$out" ;;
	busbw) awk '/# Avg bus bandwidth/ { print $NF; exit }' <<<"$out" ;;
	throughput) awk '$1 == "throughput" { print $2; exit }' <<<"$out" ;;
	wire) # every byte delivered on the wire (frames, preamble and gap) over the run, Gb/s
		awk '$1 == "\"sim_time_ps\":" { t = $2 + 0 } $1 == "\"bytes_delivered\":" { b = $2 + 0 }
			END { if (t > 0) printf "%.2f\n", b * 8 / t * 1000 }' "$json" ;;
	*) echo "rows.txt: unknown read '$read'" >&2; rm -f "$json"; return 1 ;;
	esac
	rm -f "$json"
}

# judge CHECK X: print "ratio verdict" (verdict ok or out). A check
# "gap CHECK" is a row that cannot pass yet (docs/validation.md says why).
judge() {
	awk -v x="$2" -v c="${1#gap }" 'BEGIN {
		n = split(c, a, " ")
		if (a[1] == "near") { r = x / a[2]; ok = (r - 1 <= a[3] / 100 && 1 - r <= a[3] / 100) }
		else if (a[1] == "range") { r = x < a[2] ? x / a[2] : x > a[3] ? x / a[3] : 1
			ok = (x >= a[2] * (1 - a[4] / 100) && x <= a[3] * (1 + a[4] / 100)) }
		else if (a[1] == "max") { r = x / a[2]; ok = (x <= a[2]) }
		else if (a[1] == "min") { r = x / a[2]; ok = (x >= a[2]) }
		else { print "? bad"; exit }
		printf "%.3f %s\n", r, ok ? "ok" : "out"
	}'
}

tolerance() {
	set -- ${1#gap }
	case $1 in
	near) echo "$3%" ;;
	range) [ "$4" = 0 ] && echo "inside the range" || echo "$4% beyond the range" ;;
	max) echo "a bound" ;;
	min) echo "a bound" ;;
	esac
}

# one ID [table]: 0 inside its tolerance, 1 outside; a "gap" row: 3 while
# it still cannot pass, 4 once it does (then it should become a row)
one() {
	local id=$1 line x res check verdict
	line=$(rows | awk -F' [|] ' -v id="$id" '$1 == id')
	[ -n "$line" ] || { echo "no row '$id' in rows.txt" >&2; return 1; }
	x=$(figure "$(field "$line" 8)" "$(field "$line" 9)") || return 1
	[ -n "$x" ] || { echo "$id: no figure in ibfab's output" >&2; return 1; }
	check=$(field "$line" 6)
	res=$(judge "$check" "$x")
	verdict=${res#* }
	case $check in gap\ *) [ "$verdict" = ok ] && verdict="passes: make it a row" ||
		verdict="cannot pass yet" ;; esac
	if [ "${2:-}" = table ]; then
		printf '| %s | %s | %s | %s | %s | %s %s | %s | %s | %s |\n' "$id" \
			"$(field "$line" 2)" "$(field "$line" 3)" "$(field "$line" 4)" \
			"$(field "$line" 5)" "$x" "$(field "$line" 7)" "${res% *}" \
			"$(tolerance "$check")" "$verdict"
	else
		echo "$id: ibfab $x $(field "$line" 7), published $(field "$line" 5): ratio ${res% *}, $verdict"
	fi
	case $verdict in
	ok) return 0 ;;
	out) return 1 ;;
	"cannot pass yet") return 3 ;;
	*) return 4 ;;
	esac
}

# every row; 1 if one that should pass does not, or a gap row now passes
all() {
	local rc=0 id r
	for id in $(rows | awk -F' [|] ' '{ print $1 }'); do
		one "$id" "$@"
		r=$?
		[ "$r" -eq 0 ] || [ "$r" -eq 3 ] || rc=1
	done
	return $rc
}

case "${1:-}" in
--list) rows | awk -F' [|] ' '{ print $1 }' ;;
--table)
	echo "| id | measured | hardware | source | published | ibfab | ratio | tolerance | |"
	echo "|---|---|---|---|---|---|---|---|---|"
	all table
	exit ;;
--all) all; exit ;;
''|-h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
*)
	rc=0
	for id in "$@"; do
		one "$id"
		r=$?
		# a gap row fails while it cannot pass (its ctest expects that)
		[ "$r" -eq 0 ] || [ "$r" -eq 4 ] || rc=1
	done
	exit $rc ;;
esac
