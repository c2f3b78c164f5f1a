#!/bin/bash
# help.sh - every command answers --help on stdout with status 0, and the
# help names every option, so a new option cannot go undocumented.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"

# check "DESCRIPTION" WORD... -- ARGS...: exit 0, stdout mentions every WORD
check() {
	local words=() args
	while [ "$1" != "--" ]; do words+=("$1"); shift; done
	shift
	if ! "$IBFAB" "$@" > "$tmp/out" 2> "$tmp/err"; then
		fail "ibfab $*: non-zero exit"; cat "$tmp/err"; return
	fi
	for w in "${words[@]}"; do
		grep -qF -- "$w" "$tmp/out" || fail "ibfab $*: help does not mention '$w'"
	done
	echo "ok:   ibfab $*"
}

check "usage: ibfab" run topo help version -- --help
check "usage: ibfab" run topo -- -h
check "usage: ibfab" run topo -- help
RUN_OPTS=(--topo --traffic --preset --set --seed --json --csv --reproducible --quiet
	  --help-params "usage: ibfab run" "SPEC" permutation incast pingpong alltoall
	  "Examples" "links.csv" "flows.csv" "sim_time_ps" "PortXmitWait_ps")
check "${RUN_OPTS[@]}" -- run --help
check "${RUN_OPTS[@]}" -- help run
check "${RUN_OPTS[@]}" -- run -h
check ib.mtu ib.vls ib.buffer link.speed switch.latency_ns sim.sample_ns \
      Presets sdr hdr ndr xdr -- run --help-params
check "ibfab" -- version
check "ibfab" -- --version
check topo -- topo --help
check topo -- help topo

# the option list in the parser and the help agree: every --option the
# parser reports as known is in the help (probe each with a missing value)
for o in --topo --traffic --preset --set --seed --json --csv; do
	"$IBFAB" run "$o" > /dev/null 2> "$tmp/err"
	grep -q "needs a value" "$tmp/err" || fail "'$o' is not an option taking a value"
done

# run --help's JSON key list is the JSON's: every top-level key of a run
# (and of a run with wall-clock figures), in the order the help gives; and
# of a trace beside background traffic (collectives, ranks, background)
"$IBFAB" run --help > "$tmp/help.txt" 2>&1
"$IBFAB" run --json "$tmp/run.json" --traffic p2p:src=h0,dst=h1,size=4KiB > /dev/null ||
	fail "a run for its JSON keys"
printf 'ranks 4\nallreduce 64KiB\n' > "$tmp/ar.trace"
"$IBFAB" run --json "$tmp/trace.json" --trace "$tmp/ar.trace" --traffic p2p:src=h0,dst=h1,size=4KiB > /dev/null ||
	fail "a trace run for its JSON keys"
for j in run trace; do
python3 - "$tmp/help.txt" "$tmp/$j.json" <<'PY' || fail "run --help's JSON keys differ from the JSON's ($j)"
import json, re, sys
text = open(sys.argv[1]).read()
sec = text.split("JSON (keys in this order")[1].split("\n\n")[0]
words = re.findall(r"[a-z_][a-z0-9_]*", sec)
keys = [k for k in json.load(open(sys.argv[2]))]
pos, bad = 0, []
for k in keys:
    try:
        pos = words.index(k, pos) + 1
    except ValueError:
        bad.append(k)
if bad:
    print("  not in the help, or out of order:", bad)
sys.exit(1 if bad else 0)
PY
done

# no command at all: usage on stderr, status 2
"$IBFAB" > "$tmp/out" 2> "$tmp/err"
[ $? -eq 2 ] || fail "ibfab with no command: status is not 2"
grep -q "usage: ibfab" "$tmp/err" || fail "ibfab with no command: no usage on stderr"

finish
