#!/bin/bash
# cli_errors.sh - `ibfab run` refuses bad invocations cleanly: the right exit
# status (2 usage, 1 bad input), the expected message on stderr, one line
# only for input errors, and no output file or temporary left behind.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
n=0

# A malformed topology: line 2 has a port number that is not a number.
mkdir "$tmp/in"
cat > "$tmp/in/bad.topo" <<'TOPO'
Switch	2 "S-0000000000000001"		# "sw0" base port 0 lid 1 lmc 0
[x]	"H-0000000000000002"[1]		# "h0" lid 2 4xHDR

Ca	"H-0000000000000002"		# "h0"
[1](0000000000000002) 	"S-0000000000000001"[1]		# lid 2 lmc 0 "sw0" lid 1 4xHDR
TOPO
printf 'not a directory\n' > "$tmp/in/afile"

# expect_fail STATUS FRAGMENT ARGS... : run in an empty output directory
expect_fail() {
	local want=$1 frag=$2 out="$tmp/out$n"
	shift 2
	n=$((n + 1))
	mkdir "$out"
	(cd "$out" && "$IBFAB" "$@" > "$tmp/stdout" 2> "$tmp/stderr")
	local rc=$?
	local why=""
	if [ "$rc" -ne "$want" ]; then
		why="exit $rc, expected $want"
	elif ! grep -qF -- "$frag" "$tmp/stderr"; then
		why="stderr lacks '$frag'"
	elif [ "$want" -eq 1 ] && [ "$(wc -l < "$tmp/stderr")" -ne 1 ]; then
		why="expected exactly one line on stderr"
	elif [ -n "$(ls -A "$out")" ]; then
		why="left files behind: $(ls -A "$out" | tr '\n' ' ')"
	elif [ -s "$tmp/stdout" ]; then
		why="wrote to stdout"
	fi
	if [ -n "$why" ]; then
		echo "FAIL: ibfab $*: $why"
		sed 's/^/    stderr: /' "$tmp/stderr"
		fails=$((fails + 1))
	else
		echo "ok:   ibfab $* -> $rc: $(head -1 "$tmp/stderr")"
	fi
	rm -rf "$out"
}

J=(--json out.json --csv csvdir)

# usage errors: exit 2, naming the option
expect_fail 2 "unknown option '--bogus'"        run --bogus "${J[@]}"
expect_fail 2 "unknown option '--jsn'"          run --jsn=x.json
expect_fail 2 "'--seed' needs a value"          run "${J[@]}" --seed
expect_fail 2 "--sync: expected windows or null, not 'fast'" run --threads 2 --sync fast "${J[@]}"
expect_fail 2 "--sync: expected windows or null, not 'fast'" compare --threads 2 --sync fast
expect_fail 2 "--threads: want 1 to 4096 threads, got '0'" compare --threads 0
expect_fail 2 "--seed"                          run --seed abc "${J[@]}"
expect_fail 2 "--seed"                          run --seed -5 "${J[@]}"
expect_fail 2 "--seed"                          run --seed 99999999999999999999999 "${J[@]}"
expect_fail 2 "'--topo' given twice"            run --topo a --topo b "${J[@]}"
expect_fail 2 "'--quiet' takes no value"        run --quiet=yes "${J[@]}"
expect_fail 2 "unexpected argument 'extra'"     run extra "${J[@]}"
expect_fail 2 "'--json' needs a non-empty value" run --json=
expect_fail 2 "unknown command 'frobnicate'"    frobnicate
expect_fail 2 "usage: ibfab"

# bad input: exit 1, one line "ibfab run: ..."
expect_fail 1 "unknown preset 'nosuch'"         run --preset nosuch "${J[@]}"
expect_fail 1 "unknown parameter 'ib.mt'"       run --set ib.mt=2048 "${J[@]}"
expect_fail 1 "ib.mtu"                          run --set ib.mtu=3000 "${J[@]}"
expect_fail 1 "expected key=value"              run --set nonsense "${J[@]}"
expect_fail 1 "ib.sl2vl"                        run --set ib.vls=2 --set ib.sl2vl=0,3 "${J[@]}"
expect_fail 1 "$tmp/in/missing.topo"            run --topo "$tmp/in/missing.topo" "${J[@]}"
expect_fail 1 "bad.topo:2"                      run --topo "$tmp/in/bad.topo" "${J[@]}"
expect_fail 1 "unknown pattern 'bogus'"         run --traffic bogus:size=1 "${J[@]}"
expect_fail 1 "unknown host 'h99'"              run --traffic incast:dst=h99,size=1MiB "${J[@]}"
expect_fail 1 "size"                            run --traffic p2p:src=h0,dst=h1,size=12XB "${J[@]}"
expect_fail 1 "nodir/out.json"                  run --json "$tmp/nodir/out.json" --csv csvdir
expect_fail 1 "is a directory"                  run --json "$tmp/in" --csv csvdir
expect_fail 1 "not a directory"                 run --csv "$tmp/in/afile" --json out.json
# a bad debug list in the environment
n=$((n + 1)); mkdir "$tmp/out$n"
(cd "$tmp/out$n" && IBFAB_DEBUG=nosuch "$IBFAB" run "${J[@]}" > /dev/null 2> "$tmp/stderr")
rc=$?
if [ $rc -ne 1 ] || ! grep -q "IBFAB_DEBUG" "$tmp/stderr" || [ -n "$(ls -A "$tmp/out$n")" ]; then
	echo "FAIL: IBFAB_DEBUG=nosuch: exit $rc"; cat "$tmp/stderr"; fails=$((fails + 1))
else
	echo "ok:   IBFAB_DEBUG=nosuch -> 1"
fi

# A run killed half way leaves neither temporaries nor a --csv directory it made.
mkdir "$tmp/kill"
(cd "$tmp/kill" && exec "$IBFAB" run --quiet --traffic alltoall:size=64MiB --json out.json \
	--csv csvdir > /dev/null 2>&1) &
pid=$!
sleep 0.5
kill -TERM $pid 2>/dev/null
wait $pid
rc=$?
if [ $rc -eq 0 ]; then
	echo "SKIP: the long run finished before it could be interrupted"
elif [ -n "$(ls -A "$tmp/kill")" ]; then
	echo "FAIL: interrupted run (exit $rc) left: $(ls -A "$tmp/kill")"; fails=$((fails + 1))
else
	echo "ok:   interrupted run (exit $rc) left nothing behind"
fi

finish
