#!/bin/bash
# par_run.sh [threads|mpi] - `ibfab run --threads N` (threads) or `mpirun
# -np N ibfab run ...` (mpi, the default) gives the run one thread gives:
# the fabric cut into N partitions (models/fabric/fab_cut.c), one a thread
# (tools/cli_threads.c: a copy of the fabric each) or a process
# (tools/par_mpi.c), and the JSON byte for byte the sequential run's but
# for the count of events, "engine" and "partitions". The runs: the default,
# cut 2, 3 and 4 ways; two VLs under a skewed VLArb table with incasts and
# a ping-pong; a permutation and an all-to-all on 128 hosts; a 1 MiB
# permutation over 1,024 hosts; RoCE with PFC;
# adaptive routing on the 2:1 tree; IB congestion control; lossy RoCE
# with SENDs and lost datagrams; TCP (its connections' and kernel's
# counters gathered too). Traces replayed (a replay in every partition:
# traces/trace_replay.c): a ring allreduce, a tree, an all-to-all,
# halving-doubling and a barrier on 128 ranks placed at random, compute
# and point-to-point steps beside allgather, reduce-scatter and broadcast,
# the same on RoCE, lossy RoCE and TCP, SHARP's collnet, and collectives
# on two DGX H100-like servers (NVLink, PXN). `ibfab compare` too: its
# default, traffic cut 3 ways, and datagrams whose chart's ticks one list
# ends elsewhere than the partitions do (tools/cli_tp.c). On threads the
# same with null messages instead of windows (--sync null). What a
# partitioned run does not take yet is refused by name, with nothing
# written; --threads beside mpirun too.
#   IBFAB=build/tools/ibfab IBFAB_SRC=. bash tests/par/par_run.sh threads
#   IBFAB=build/tools/ibfab IBFAB_SRC=. MPIEXEC=mpirun bash tests/par/par_run.sh mpi
mode=${1:-mpi}
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
: "${MPIEXEC:=mpirun}"
EX="$IBFAB_SRC/topologies/examples"
FT16=(--topo "$EX/fattree-16.topo")
mpi() { "$MPIEXEC" --allow-run-as-root --oversubscribe -np "$@"; }
case $mode in
threads) engine=threads ;;
mpi) engine="processes (MPI)" ;;
*) echo "par_run.sh: threads or mpi, not '$mode'" >&2; exit 2 ;;
esac
cut_cmd() {	# run or compare, N, then its arguments: run them cut N ways
	local cmd=$1 np=$2
	shift 2
	if [ "$mode" = threads ]; then
		"$IBFAB" "$cmd" --threads "$np" "$@"
	else
		mpi "$np" "$IBFAB" "$cmd" "$@"
	fi
}
cut() { cut_cmd run "$@"; }	# N, then ibfab run's arguments

same() {	# name, processes, then ibfab run's arguments
	local name=$1 np=$2
	shift 2
	"$IBFAB" run --quiet --reproducible --json "$tmp/$name.seq.json" "$@" > "$tmp/$name.seq.txt" 2>&1 ||
		{ fail "$name: ibfab run $*: $(tail -2 "$tmp/$name.seq.txt")"; return; }
	cut "$np" --quiet --reproducible --json "$tmp/$name.par.json" "$@" \
		> "$tmp/$name.par.txt" 2>&1 ||
		{ fail "$name: $np partitions ($mode): $*: $(tail -40 "$tmp/$name.par.txt")"; return; }
	python3 - "$tmp/$name.seq.json" "$tmp/$name.par.json" "$name" "$np" "$engine" <<'PY' ||
import json, sys
a, b, name, np = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3], int(sys.argv[4])
engine = sys.argv[5]
bad = []
if (a["engine"], a["partitions"]) != ("sequential", 1):
    bad.append(f"one partition: engine {a['engine']!r}, partitions {a['partitions']}")
if (b["engine"], b["partitions"]) != (engine, np):
    bad.append(f"{np} partitions: engine {b['engine']!r}, partitions {b['partitions']}")
if not b["events"] >= a["events"] > 0:
    bad.append(f"events {a['events']} in one process, {b['events']} in {np}")
for line in bad:
    print("  ", line)
sys.exit(1 if bad else 0)
PY
		fail "$name: see above"
	python3 "$IBFAB_SRC/tests/lib/json_same.py" "$tmp/$name.seq.json" "$tmp/$name.par.json" "$name" \
		events engine partitions || fail "$name: see above"
}

same default2 2
same default3 3
same default4 4
same mix 3 "${FT16[@]}" --set ib.vls=2 --set vlarb.low=0:4,1:64 \
	--traffic incast:dst=h0,n=8,size=64KiB,sl=0 --traffic incast:dst=h0,n=4,size=64KiB,sl=1 \
	--traffic pingpong:a=h5,b=h10,size=64B,count=10 --traffic permutation:size=32KiB
same ft128 4 --topo "$EX/fattree-128.topo" --traffic permutation:size=256KiB \
	--traffic alltoall:size=4KiB
# the 1,024-host tree of radix 16 (bench/scale perm1024): a 1 MiB permutation
"$IBFAB" topo gen fattree --levels 3 --radix 16 > "$tmp/ft1k.topo" || fail "topo gen fattree radix 16"
same perm1024 2 --topo "$tmp/ft1k.topo" --routing ftree --set host.model=off \
	--traffic permutation:size=1MiB,seed=1
same roce 2 "${FT16[@]}" --set fabric=roce --traffic incast:dst=h0,n=15,size=1MiB \
	--traffic alltoall:size=64KiB
same ar 3 --topo "$EX/fattree-64-2to1.topo" --set ib.ar=on --traffic alltoall:size=16KiB
same ibcc 2 "${FT16[@]}" --set ib.cc=on --traffic incast:dst=h0,n=8,size=256KiB
same lossy 3 "${FT16[@]}" --set fabric=roce-lossy --set eth.buffer_per_port=32KiB --op send \
	--traffic incast:dst=h0,n=15,size=256KiB --traffic incast:dst=h1,size=1000B,count=300,qp=ud \
	--traffic permutation:size=64KiB
same tcp 3 "${FT16[@]}" --set fabric=tcp --traffic incast:dst=h0,n=8,size=256KiB \
	--traffic permutation:size=64KiB

# traces
printf 'ranks 16\nallreduce 4MiB algo=ring\n' > "$tmp/ring.trace"
printf 'ranks 128\nmap random seed=3\nallreduce 1MiB algo=tree\nalltoall 64KiB\nallreduce 256KiB algo=hd\nbarrier\n' \
	> "$tmp/mix.trace"
printf '%s\n' 'ranks 16' 'a: compute 0 5us' 'b: send 0 5 1MiB after=a' 'c: compute 5 3us after=b' \
	'd: send 5 9 64KiB after=c' 'e: recv 9 5 64KiB' 'allgather 2MiB' 'reducescatter 2MiB' \
	'broadcast 1MiB root=3' > "$tmp/p2p.trace"
printf 'ranks 16\nallreduce 1MiB algo=ring\nalltoall 64KiB\n' > "$tmp/eth.trace"
printf 'ranks 16\nallreduce 1MiB algo=collnet\n' > "$tmp/collnet.trace"
printf 'ranks 16\nallreduce 1GiB\nallgather 256MiB\nalltoall 64MiB\nallreduce 256MiB algo=tree\n' > "$tmp/gpu.trace"
same trace_ring 2 "${FT16[@]}" --trace "$tmp/ring.trace"
same trace_mix 3 --topo "$EX/fattree-128.topo" --trace "$tmp/mix.trace"
same trace_p2p 2 "${FT16[@]}" --trace "$tmp/p2p.trace"
same trace_roce 3 "${FT16[@]}" --set fabric=roce --trace "$tmp/eth.trace"
same trace_lossy 2 "${FT16[@]}" --set fabric=roce-lossy --trace "$tmp/eth.trace"
same trace_tcp 2 "${FT16[@]}" --set fabric=tcp --trace "$tmp/eth.trace"
same trace_sharp 2 "${FT16[@]}" --set ib.sharp=on --trace "$tmp/collnet.trace"
# two DGX H100-like servers: NVLink (NVLSTree, rings, trees) and PXN relays
same trace_gpu 3 --topo "$EX/dgx-h100-2.topo" --trace "$tmp/gpu.trace"
# LL inside one server is NVLink only: no staging, so it runs cut too
printf 'ranks 8\nallreduce 8KiB\nallgather 64KiB\n' > "$tmp/gpu1.trace"
same trace_gpu_ll 2 --topo "$EX/dgx-h100-2.topo" --trace "$tmp/gpu1.trace"

# a transfer that fails (no retries on a lossy link) stops every
# partition, and the run tells the failure one thread meets first
fails() {	# ibfab run's arguments
	local one many
	"$IBFAB" run --quiet "$@" > "$tmp/f1.txt" 2>&1 && fail "the failing run succeeded"
	cut 3 --quiet "$@" > "$tmp/f3.txt" 2>&1 && fail "the failing run succeeded in 3 partitions"
	one=$(grep '^ibfab run' "$tmp/f1.txt")
	many=$(grep '^ibfab run' "$tmp/f3.txt" | sed 's/process [0-9]* of [0-9]*: //')
	[ -n "$one" ] && [ "$one" = "$many" ] || fail "a failure in 3 partitions ($mode): '$many', one thread: '$one'"
	[ "$(grep -c '^ibfab run' "$tmp/f3.txt")" = 1 ] || fail "a failure in 3 partitions ($mode): told more than once"
}
fails "${FT16[@]}" --trace "$tmp/ring.trace" --set link.drop_prob=0.3 --set hca.retry_cnt=0

# --profile: the partitions' shares add up to the run (the 128-host tree
# of 16 switches, cut 3 ways), in the JSON and the summary
same_profile() {
	cut 3 --quiet --reproducible --profile --json "$tmp/prof.json" --topo "$EX/fattree-128.topo" \
		--traffic permutation:size=64KiB > "$tmp/prof.txt" 2>&1 ||
		{ fail "--profile ($mode): $(tail -5 "$tmp/prof.txt")"; return; }
	cut 3 --reproducible --profile --topo "$EX/fattree-128.topo" \
		--traffic permutation:size=64KiB > "$tmp/prof.sum" 2>&1 ||
		{ fail "--profile summary ($mode): $(tail -5 "$tmp/prof.sum")"; return; }
	python3 - "$tmp/prof.json" "$tmp/prof.sum" "$engine" <<'PY' || fail "--profile ($mode): see above"
import json, re, sys
d, txt, engine = json.load(open(sys.argv[1])), open(sys.argv[2]).read(), sys.argv[3]
p, bad = d["profile"], []
parts = p["partitions"]
if len(parts) != 3:
    bad.append(f"{len(parts)} partitions listed")
if sum(q["events"] for q in parts) != d["events"]:
    bad.append(f"events {[q['events'] for q in parts]} do not add up to {d['events']}")
if sum(q["hosts"] for q in parts) != 128 or sum(q["switches"] for q in parts) != 16:
    bad.append(f"hosts {[q['hosts'] for q in parts]}, switches {[q['switches'] for q in parts]}")
if not 0 < p["cut_cables"] < p["cables"] or p["windows"] <= 0 or p["lookahead_ps"] <= 0:
    bad.append(f"cut {p['cut_cables']} of {p['cables']}, windows {p['windows']}, look-ahead {p['lookahead_ps']}")
if any(q["messages_out"] <= 0 for q in parts):
    bad.append("a partition sent no message")
times = [v for v in p["setup_s"].values()] + [p["run_s"]] + [q[k] for q in parts for k in ("busy_s", "wait_s")]
if any(t != 0 for t in times):
    bad.append("--reproducible: a wall-clock figure is not 0")
if not re.search(rf"^partitions +3 {re.escape(engine)}: look-ahead 15\.000 ns, {p['cut_cables']} of {p['cables']} cables cut", txt, re.M):
    bad.append("no partitions line in the summary")
if len(re.findall(r"^  [012] +\d+ switches, \d+ hosts: ", txt, re.M)) != 3 or "imbalance" not in txt:
    bad.append("the summary lacks the partitions' rows")
for line in bad:
    print("  ", line)
sys.exit(1 if bad else 0)
PY
}
same_profile

# a trace's steps are held by every partition's replay, and the memory
# budget is shared by those on this machine (threads, or processes): 4
# lazy rings count 1.4 MiB a replay, refused under 2 MiB cut 2 ways
{ echo "ranks 128"; for i in 1 2 3 4; do echo "allreduce 1KiB async"; done; } > "$tmp/rings.trace"
cut 2 --quiet --topo "$EX/fattree-128.topo" --trace "$tmp/rings.trace" --set sim.max_memory=2MiB \
	> "$tmp/budget.txt" 2>&1 && fail "budget ($mode): 2 x 1.4 MiB ran under 2 MiB"
grep -q "by each of 2 replays on this machine, about 2.8 MiB" "$tmp/budget.txt" ||
	fail "budget ($mode): $(grep '^ibfab' "$tmp/budget.txt" | head -2)"
cut 2 --quiet --topo "$EX/fattree-128.topo" --trace "$tmp/rings.trace" --set sim.max_memory=3MiB \
	> "$tmp/budget3.txt" 2>&1 || fail "budget ($mode): refused under 3 MiB: $(tail -3 "$tmp/budget3.txt")"

# `ibfab compare` cut alike (each fabric's run, the chart's sampler in
# every partition: tools/cli_tp.c): the table, CSV, chart and JSON the
# sequential ones byte for byte, but for the events, the engine, the
# partitions and the files' own names
same_compare() {	# name, partitions, then ibfab compare's arguments
	local name=$1 np=$2 k
	shift 2
	for k in seq par; do
		local out=(--quiet --reproducible --json "$tmp/$name.$k.json" --csv "$tmp/$name.$k.csv"
			   --plot "$tmp/$name.$k.svg")
		if [ $k = seq ]; then
			"$IBFAB" compare "${out[@]}" "$@" > "$tmp/$name.$k.txt" 2>&1
		else
			cut_cmd compare "$np" "${out[@]}" "$@" > "$tmp/$name.$k.txt" 2>&1
		fi || { fail "compare $name ($k, $mode): $(tail -3 "$tmp/$name.$k.txt")"; return; }
	done
	python3 - "$tmp/$name" "$np" "$engine" <<'PY' || fail "compare $name ($mode): see above"
import json, re, sys
base, np, engine = sys.argv[1], int(sys.argv[2]), sys.argv[3]
bad = []
a, b = json.load(open(base + ".seq.json")), json.load(open(base + ".par.json"))
if (a["engine"], a["partitions"], b["engine"], b["partitions"]) != ("sequential", 1, engine, np):
    bad.append(f"engine and partitions: {a['engine']!r} {a['partitions']}, {b['engine']!r} {b['partitions']}")
if not all(y["events"] >= x["events"] > 0 for x, y in zip(a["fabrics"], b["fabrics"])):
    bad.append("events: " + str([(x["events"], y["events"]) for x, y in zip(a["fabrics"], b["fabrics"])]))
drop = re.compile(r'^ *"(events|engine|partitions|plot)": .*\n', re.M)
def text(ext, k):
    t = open(f"{base}.{k}.{ext}").read()
    if ext == "json":
        return drop.sub("", t)
    if ext == "csv":	# the events column
        rows = [r.split(",") for r in t.splitlines()]
        i = rows[0].index("events")
        return "\n".join(",".join(r[:i] + r[i + 1:]) for r in rows)
    if ext == "txt":
        return re.sub(r"^plot .*$", "", t, flags=re.M)
    return t
for ext in ("json", "csv", "svg", "txt"):
    if text(ext, "seq") != text(ext, "par"):
        bad.append(f"the {ext} differs from the sequential one")
for line in bad:
    print("  ", line)
sys.exit(1 if bad else 0)
PY
}
same_compare compare 2
same_compare compare_traffic 3 --topo "$EX/fattree-128.topo" --traffic permutation:size=256KiB
# datagrams only: nothing is left pending at the end, so the sampler's ticks
# are cut to one list's (100 m cables: 500 ns windows), or extended to it
same_compare compare_ud 2 "${FT16[@]}" --set link.cable_m=100 --traffic incast:dst=h1,size=1000B,count=30,qp=ud
same_compare compare_ud_ext 2 --fabrics ib "${FT16[@]}" --traffic p2p:src=h0,dst=h1,size=100B,count=3,qp=ud
# messages lost for good: incomplete runs, whose time is the clock's
same_compare compare_lost 3 --fabrics ib,roce,roce-lossy "${FT16[@]}" --traffic permutation:size=64KiB \
	--set link.drop_prob=0.05 --set hca.retry_cnt=1
if [ "$mode" = threads ]; then
	"$IBFAB" compare --threads 2 --html "$tmp/no.html" > "$tmp/no.txt" 2>&1 &&
		fail "compare --threads 2 --html: accepted"
	grep -q "a run in 2 partitions does not take --html" "$tmp/no.txt" ||
		fail "compare --threads 2 --html: $(head -2 "$tmp/no.txt")"
	[ -e "$tmp/no.html" ] && fail "compare --threads 2 --html: left $tmp/no.html"
fi

# threads kept in step by null messages (sim_par_set_async) instead of
# windows: the same results (processes keep windows and refuse it)
if [ "$mode" = threads ]; then
	engine="threads (null messages)" same null_default 3 --sync null
	engine="threads (null messages)" same null_ft128 4 --sync null --topo "$EX/fattree-128.topo" \
		--traffic permutation:size=256KiB --traffic alltoall:size=4KiB
	engine="threads (null messages)" same null_trace 3 --sync null --topo "$EX/fattree-128.topo" \
		--trace "$tmp/mix.trace"
	engine="threads (null messages)" same_compare null_compare 2 --sync null --fabrics ib,roce
else
	mpi 2 "$IBFAB" run --sync null "${FT16[@]}" > "$tmp/nm.txt" 2>&1 && fail "--sync null under mpirun: accepted"
	grep -q "does not take --sync null" "$tmp/nm.txt" || fail "--sync null under mpirun: $(head -2 "$tmp/nm.txt")"
fi

# refused by name, nothing written
printf 'ranks 16\nallreduce 64KiB\n' > "$tmp/ar.trace"
refused() {	# what the message names, then ibfab run's arguments
	local what=$1
	shift
	if cut 2 --quiet --json "$tmp/no.json" "$@" > "$tmp/no.txt" 2>&1; then
		fail "2 partitions ($mode): $* succeeded"
	elif ! grep -q "a run in 2 partitions does not take $what" "$tmp/no.txt" ||
		[ "$(grep -c 'does not take' "$tmp/no.txt")" != 1 ]; then
		fail "2 partitions ($mode): $*: $(head -2 "$tmp/no.txt")"
	fi
	[ -e "$tmp/no.json" ] && fail "2 partitions ($mode): $*: left $tmp/no.json"
	rm -f "$tmp/no.json"
}
refused "--traffic beside --trace" "${FT16[@]}" --trace "$tmp/ar.trace" --traffic incast:dst=h0,n=2,size=4KiB
# the replay's own refusals
for bad in "NCCL's LL protocol between GPU servers:--topo $EX/dgx-h100-2.topo" \
	"mpi.proto=ucx:${FT16[*]} --set mpi.proto=ucx"; do
	# shellcheck disable=SC2086
	if cut 2 --quiet --json "$tmp/no.json" --trace "$tmp/ar.trace" ${bad#*:} > "$tmp/no.txt" 2>&1; then
		fail "2 partitions ($mode): ${bad%%:*} accepted"
	elif ! grep -q "a replay in partitions does not take ${bad%%:*}" "$tmp/no.txt" ||
		[ "$(grep -c 'does not take' "$tmp/no.txt")" != 1 ]; then
		fail "2 partitions ($mode): ${bad%%:*}: $(head -2 "$tmp/no.txt")"
	fi
	[ -e "$tmp/no.json" ] && fail "2 partitions ($mode): ${bad%%:*}: left $tmp/no.json"
done
refused "sim.max_time_ns" "${FT16[@]}" --set sim.max_time_ns=1000
# more processes than switches to cut by
cut 7 "${FT16[@]}" > "$tmp/seven.txt" 2>&1 &&
	fail "7 partitions of a 6-switch fabric: accepted"
grep -q "7 partitions, but the fabric has 6 switches" "$tmp/seven.txt" ||
	fail "7 partitions: $(head -2 "$tmp/seven.txt")"
if [ "$mode" = mpi ]; then
	for cmd in run compare; do
		mpi 2 "$IBFAB" $cmd --threads 2 > "$tmp/both.txt" 2>&1 && fail "$cmd --threads under mpirun: accepted"
		grep -q "one or the other" "$tmp/both.txt" || fail "$cmd --threads under mpirun: $(head -2 "$tmp/both.txt")"
	done
fi
finish
