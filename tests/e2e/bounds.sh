#!/bin/bash
# bounds.sh - inputs that would take the machine or never end are refused or
# bounded, each with a message naming the file and what to change:
#   - a trace whose lowered steps pass sim.max_memory is refused before any
#     step is made, and one pair with more transfers than a send queue
#     holds (2^20) runs;
#   - a traffic stream of 1.1M messages posted at once runs, keeping at
#     most 32,768 (max_qp_wr) in its send queue and the rest waiting, and
#     specs whose messages would pass sim.max_memory are refused;
#   - links.csv warns before a run that would write more than 64 MB, and
#     stops at sim.max_csv_rows, saying so;
#   - a FIFO with no writer as --topo, --trace, --lft or an include is
#     refused at once; a pipe with a writer (<(...)) is read;
#   - host pairs with no route are refused before the run, unless
#     --allow-unreachable;
#   - a transfer over 2 GiB, and HPCC flows with a bad size or time, are
#     named at their line;
#   - TCP on a link that drops 90% gives up (tcp.retries2) instead of
#     retrying for the clock's 213 days.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
topo=$IBFAB_SRC/topologies/examples/fattree-16.topo

# expect CODE FILE-OF-STDERR PATTERN: the last command's exit and message
check() {	# what, exit code seen, code wanted, stderr file, pattern
	[ "$2" -eq "$3" ] && grep -q -- "$5" "$4" ||
		fail "$1: exit $2 (wanted $3): $(head -c 400 "$4")"
}

# ---- the trace's memory budget ----
# 100 async halving-doubling allreduces (stored: 128 steps each) ...
{ echo "ranks 16"; echo "map linear"; for i in $(seq 100); do echo "allreduce 1KiB algo=hd async"; done; } \
	> "$tmp/many.trace"
"$IBFAB" run --topo "$topo" --trace "$tmp/many.trace" --set sim.max_memory=1MiB \
	--json "$tmp/budget.json" > /dev/null 2> "$tmp/budget.err"
check "budget" $? 1 "$tmp/budget.err" "many.trace: the trace lowers to 12800 steps (100 ops; the largest, allreduce at .*many.trace:3, makes 128), about 1.5 MiB at 120 bytes a step: more than sim.max_memory, 1.0 MiB"
[ -e "$tmp/budget.json" ] && fail "budget: --json written for a refused trace"
"$IBFAB" run --topo "$topo" --trace "$tmp/many.trace" --set sim.max_memory=2MiB --quiet \
	> /dev/null 2> "$tmp/budget2.err" || fail "budget: 12800 steps (1.5 MB) refused under 2 MiB: $(cat "$tmp/budget2.err")"
# ... and 4 async 1 KiB rings over 128 ranks (32,512 steps each, made as
# the replay reaches them: 24 reaches of 129 steps are counted, 3,096 a
# ring, 1.4 MiB in all; stored they would be 14.9 MiB)
{ echo "ranks 128"; for i in 1 2 3 4; do echo "allreduce 1KiB async"; done; } > "$tmp/rings.trace"
"$IBFAB" run --topo "$IBFAB_SRC/topologies/examples/fattree-128.topo" --trace "$tmp/rings.trace" \
	--set sim.max_memory=2MiB --quiet > "$tmp/rings.out" 2> "$tmp/rings.err" ||
	fail "budget: 4 lazy rings refused under 2 MiB: $(cat "$tmp/rings.err")"
grep -q "^workload .*130048 steps" "$tmp/rings.out" || fail "budget: the rings: $(grep workload "$tmp/rings.out")"
# on threads every thread's replay holds its own: 2 x 1.4 MiB
"$IBFAB" run --topo "$IBFAB_SRC/topologies/examples/fattree-128.topo" --trace "$tmp/rings.trace" \
	--set sim.max_memory=2MiB --quiet --threads 2 > /dev/null 2> "$tmp/rings2.err"
check "budget on 2 threads" $? 1 "$tmp/rings2.err" "the trace lowers to 12384 steps (4 ops; .*) held at once (of 130048 in all: .*) by each of 2 replays on this machine, about 2.8 MiB at 120 bytes a step: more than sim.max_memory, 2.0 MiB"
"$IBFAB" run --topo "$IBFAB_SRC/topologies/examples/fattree-128.topo" --trace "$tmp/rings.trace" \
	--set sim.max_memory=3MiB --quiet --threads 2 > /dev/null 2> "$tmp/rings3.err" ||
	fail "budget: 4 lazy rings on 2 threads refused under 3 MiB: $(cat "$tmp/rings3.err")"
# 1.1M transfers on one pair: more than the 2^20 a send queue holds
printf 'ranks 2\nmap linear\nrepeat 2 {\nrepeat 550000 {\n  send 0 1 64B async\n}\n}\n' > "$tmp/pair.trace"
"$IBFAB" run --topo "$topo" --trace "$tmp/pair.trace" > "$tmp/pair.out" 2> "$tmp/pair.err" ||
	fail "1.1M transfers on one pair: $(cat "$tmp/pair.err")"
grep -q "^messages *1100000 / 1100000 delivered" "$tmp/pair.out" ||
	fail "1.1M transfers on one pair: $(grep -E '^messages' "$tmp/pair.out")"
# 1.1M messages on one traffic stream, all posted at once: the program
# keeps 32,768 in the send queue (ConnectX's max_qp_wr) and posts the next
# as each completes, so none waits longer than a full queue's posts
# (32,768 x 380 ns = 12.45 ms; with every one queued the last would wait
# 1.1M x 380 ns = 418 ms)
"$IBFAB" run --traffic p2p:src=h0,dst=h1,size=64B,count=1100000 > "$tmp/stream.out" 2> "$tmp/stream.err" ||
	fail "1.1M messages on one stream: $(cat "$tmp/stream.err")"
grep -q "^messages *1100000 / 1100000 delivered" "$tmp/stream.out" ||
	fail "1.1M messages on one stream: $(grep -E '^messages' "$tmp/stream.out")"
grep -Eq "^completion .* max 12\.4[0-9]* ms" "$tmp/stream.out" ||
	fail "1.1M messages on one stream: the send queue is not 32,768 deep: $(grep -E '^completion' "$tmp/stream.out")"
# past 2^20 completion times the percentiles come from a histogram, and say so
grep -q "^completion .* (median, p99 within 0.025%)$" "$tmp/stream.out" ||
	fail "1.1M messages: the summary does not say its percentiles are approximate"

# the traffic specs' messages against sim.max_memory, before any is made
"$IBFAB" run --traffic p2p:src=h0,dst=h1,size=1000B,count=300000 \
	--traffic p2p:src=h2,dst=h3,size=1000B,count=300000 --set sim.max_memory=50MiB \
	--json "$tmp/specmem.json" > /dev/null 2> "$tmp/specmem.err"
check "spec budget" $? 1 "$tmp/specmem.err" \
	"count=300000': with the specs before it, 600000 messages take about 54.9 MiB at 96 bytes a message: more than sim.max_memory, 50.0 MiB"
[ -e "$tmp/specmem.json" ] && fail "spec budget: --json written for a refused spec"

# ---- links.csv ----
"$IBFAB" run --traffic p2p:src=h0,dst=h15,size=1MiB --set sim.sample_ns=1 \
	--set sim.max_csv_rows=100000 --csv "$tmp/csv" > /dev/null 2> "$tmp/csv.err"
check "csv budget" $? 0 "$tmp/csv.err" "gives links.csv at least [0-9]* rows .*it keeps the first 100000 (sim.max_csv_rows)"
grep -q "links.csv stops at .* simulated, after [0-9]* rows (sim.max_csv_rows)" "$tmp/csv.err" ||
	fail "csv budget: no warning after the run: $(cat "$tmp/csv.err")"
rows=$(($(wc -l < "$tmp/csv/links.csv") - 1))
[ "$rows" -le 100000 ] && [ $((rows % 64)) -eq 0 ] && [ "$rows" -gt 99000 ] ||
	fail "csv budget: links.csv has $rows rows (wanted whole samples of 64, up to 100000)"
"$IBFAB" run --traffic p2p:src=h0,dst=h15,size=1MiB --set sim.sample_ns=1 --csv "$tmp/csv2" \
	> /dev/null 2> "$tmp/csv2.err"
check "csv size" $? 0 "$tmp/csv2.err" "gives links.csv at least 27[0-9]* rows, about 1[01][0-9] MB"
rm -rf "$tmp/csv2"
"$IBFAB" run --traffic p2p:src=h0,dst=h15,size=1MiB --set sim.sample_ns=10 --csv "$tmp/csv2" \
	> /dev/null 2> "$tmp/csv2.err"
[ -s "$tmp/csv2.err" ] && fail "csv size: a warning for an 11 MB links.csv: $(cat "$tmp/csv2.err")"
"$IBFAB" run --traffic p2p:src=h0,dst=h15,size=1MiB --csv "$tmp/csv3" > /dev/null 2> "$tmp/csv3.err"
[ -s "$tmp/csv3.err" ] && fail "csv: a warning with the automatic interval: $(cat "$tmp/csv3.err")"

# ---- FIFOs ----
mkfifo "$tmp/fifo"
for opt in --topo --trace --lft; do
	timeout 10 "$IBFAB" run $opt "$tmp/fifo" > /dev/null 2> "$tmp/fifo.err"
	check "$opt FIFO" $? 1 "$tmp/fifo.err" "fifo: cannot read: a FIFO with no writer"
done
printf 'ranks 2\ninclude %s\n' "$tmp/fifo" > "$tmp/inc.trace"
timeout 10 "$IBFAB" run --trace "$tmp/inc.trace" > /dev/null 2> "$tmp/inc.err"
check "trace include FIFO" $? 1 "$tmp/inc.err" "a FIFO with no writer"
printf 'include "%s"\n' "$tmp/fifo" > "$tmp/inc.topo"
timeout 10 "$IBFAB" run --topo "$tmp/inc.topo" > /dev/null 2> "$tmp/inc.err"
check "topology include FIFO" $? 1 "$tmp/inc.err" "a FIFO with no writer"
timeout 10 "$IBFAB" run --topo "$tmp" > /dev/null 2> "$tmp/dir.err"
check "--topo DIR" $? 1 "$tmp/dir.err" "cannot read: a directory"
timeout 20 "$IBFAB" run --topo <(cat "$topo") --quiet > "$tmp/pipe.out" 2> "$tmp/pipe.err" ||
	fail "--topo <(cat FILE): $(cat "$tmp/pipe.err")"

# ---- routes ----
cat > "$tmp/split.topo" <<'T'
Switch 4 "S-a" # "swa"
[1] "H-1"[1] # "h1"
[2] "H-2"[1] # "h2"
Switch 4 "S-b" # "swb"
[1] "H-3"[1] # "h3"
Ca 1 "H-1" # "h1"
[1] "S-a"[1]
Ca 1 "H-2" # "h2"
[1] "S-a"[2]
Ca 1 "H-3" # "h3"
[1] "S-b"[1]
T
"$IBFAB" run --topo "$tmp/split.topo" --traffic p2p:src=h1,dst=h3,size=1KiB \
	--traffic p2p:src=h1,dst=h2,size=1KiB --json "$tmp/split.json" > /dev/null 2> "$tmp/split.err"
check "unreachable" $? 1 "$tmp/split.err" "split.topo: 1 of 2 host pairs the traffic sends between has no route .*: h1 -> h3; run anyway with --allow-unreachable"
[ -e "$tmp/split.json" ] && fail "unreachable: --json written for a refused run"
"$IBFAB" run --topo "$tmp/split.topo" --traffic p2p:src=h1,dst=h3,size=1KiB \
	--traffic p2p:src=h1,dst=h2,size=1KiB --allow-unreachable > "$tmp/split.out" 2>&1 ||
	fail "--allow-unreachable: $(cat "$tmp/split.out")"
grep -q "^messages *1 / 2 delivered, 1 lost" "$tmp/split.out" ||
	fail "--allow-unreachable: $(grep '^messages' "$tmp/split.out")"
printf 'ranks 3\nmap linear\nallreduce 1MiB\n' > "$tmp/split.trace"
"$IBFAB" run --topo "$tmp/split.topo" --trace "$tmp/split.trace" > /dev/null 2> "$tmp/st.err"
check "unreachable (trace)" $? 1 "$tmp/st.err" "2 of 3 host pairs the trace sends between have no route"

# ---- sizes and fields named at their line ----
printf 'ranks 2\nsend 0 1 18446744073709551615B\n' > "$tmp/huge.trace"
"$IBFAB" run --topo "$topo" --trace "$tmp/huge.trace" > /dev/null 2> "$tmp/huge.err"
check "2^64-1 send" $? 1 "$tmp/huge.err" "huge.trace:2: a send of 18446744073709551615 bytes is more than one IB message"
printf 'ranks 4\nallreduce 40GiB\n' > "$tmp/big.trace"
"$IBFAB" run --topo "$topo" --trace "$tmp/big.trace" > /dev/null 2> "$tmp/big.err"
check "40 GiB allreduce" $? 1 "$tmp/big.err" "big.trace:2: allreduce of 42949672960 bytes: its transfers carry 10737418240 bytes, .*chunks=5 or more"
hpcc=$IBFAB_SRC/tests/golden/import/hpcc_flow.txt
for v in -1000 nan inf; do
	sed "2s/^\(\S* \S* \S* \S* \)\S*/\1$v/" "$hpcc" > "$tmp/size$v.txt"
	"$IBFAB" run --topo "$topo" --trace "$tmp/size$v.txt" > /dev/null 2> "$tmp/h.err"
	check "HPCC size $v" $? 1 "$tmp/h.err" "size$v.txt:2:11: expected a size in bytes, got '$v'"
	sed "2s/ \S*$/ $v/" "$hpcc" > "$tmp/time$v.txt"
	"$IBFAB" run --topo "$topo" --trace "$tmp/time$v.txt" > /dev/null 2> "$tmp/h.err"
	check "HPCC time $v" $? 1 "$tmp/h.err" "time$v.txt:2:18: expected a start time in seconds"
done

# ---- TCP on a path that drops nearly everything ----
timeout 60 "$IBFAB" run --set fabric=tcp --set link.drop_prob=0.9 \
	--traffic p2p:src=h0,dst=h15,size=64KiB > "$tmp/tcp.out" 2> "$tmp/tcp.err"
check "TCP, 90% drops" $? 0 "$tmp/tcp.out" "1 connection given up (tcp.retries2)"
grep -q "^messages *0 / 1 delivered, 1 lost (TCP gave up: tcp.retries2)" "$tmp/tcp.out" ||
	fail "TCP, 90% drops: $(grep '^messages' "$tmp/tcp.out")"
grep -q "^simulated *522.200 s" "$tmp/tcp.out" ||
	fail "TCP, 90% drops: 15 backed-off RTOs from 200 ms to the 60 s ceiling are 522.2 s: $(grep '^simulated' "$tmp/tcp.out")"
"$IBFAB" run --set fabric=tcp --set tcp.retries2=0 2> "$tmp/r0.err" > /dev/null
check "tcp.retries2=0" $? 1 "$tmp/r0.err" "tcp.retries2: '0' is out of range (1..1000)"
finish
