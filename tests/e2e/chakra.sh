#!/bin/bash
# chakra.sh - Chakra execution traces (MLCommons Chakra, what ASTRA-sim
# replays), one protobuf file per rank, written by tests/lib/chakra_et.py
# with no protobuf library, read by `--trace NAME.0.et`:
#  - a data-parallel step on 8 ranks (forward, backward, the host's c10d
#    call, the GPU's 16 MiB allreduce, the optimizer) replays to the same
#    time as the same step in the native format, the collective too;
#  - a send/recv pipeline (tags, unpacked data_deps) and two process
#    groups (pg_name) allgathering at once: the same as their native twins;
#  - ctrl_deps naming nodes the file does not have are not waited for;
#  - malformed traces are refused naming the file, the record and the byte.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
export PYTHONPATH="$IBFAB_SRC/tests/lib"
d=$tmp/ck
mkdir -p "$d"
python3 - "$d" <<'PY' || fail "writing the traces"
import os, sys
from chakra_et import *
d = sys.argv[1]
dp_step(d)
# rank 0 computes, sends 1 MiB (tag 3) to 1; rank 1 computes after the recv;
# and 2 -> 3 the same without a tag, data_deps not packed
write(f"{d}/pp.0.et", [node(1, "f0", COMP, dur_us=10),
                        node(2, "s", SEND, data_deps=[1], attrs=[("comm_dst", ("i32", 1)), ("comm_size", 1 << 20), ("comm_tag", ("i32", 3))])])
write(f"{d}/pp.1.et", [node(7, "r", RECV, attrs=[("comm_src", ("i32", 0)), ("comm_size", 1 << 20), ("comm_tag", ("i32", 3))]),
                        node(8, "f1", COMP, data_deps=[7], dur_us=20, packed=False)])
write(f"{d}/pp.2.et", [node(1, "s", SEND, attrs=[("comm_dst", ("i32", 3)), ("tensor_size", ("u64", 65536))])])
write(f"{d}/pp.3.et", [node(1, "r", RECV, attrs=[("comm_src", ("i32", 2)), ("tensor_size", ("u64", 65536))]),
                        node(2, "f3", COMP, data_deps=[1], dur_us=5, packed=False)])
# two groups of 4: 4 MiB allgathers at once, then one allreduce of all 8
for r in range(8):
    write(f"{d}/pg.{r}.et", [
        node(1, "ag", COLL, attrs=[("comm_type", ALL_GATHER), ("comm_size", 4 << 20), ("pg_name", "tp%d" % (r // 4))]),
        node(2, "ar", COLL, data_deps=[1], attrs=[("comm_type", ALL_REDUCE), ("comm_size", 1 << 20)])])
# broken ones, each with ranks 0 and 1
def pair(name, n0, n1=None):
    write(f"{d}/{name}.0.et", n0)
    write(f"{d}/{name}.1.et", n1 if n1 is not None else n0)
pair("nodep", [node(1, "a", COMP, dur_us=1), node(2, "b", COMP, data_deps=[5], dur_us=1)])
pair("size", [node(1, "ar", COLL, attrs=[("comm_type", ALL_REDUCE), ("comm_size", 1024)])],
     [node(1, "ar", COLL, attrs=[("comm_type", ALL_REDUCE), ("comm_size", 2048)])])
pair("gather", [node(1, "g", COLL, attrs=[("comm_type", GATHER), ("comm_size", 1024)])])
pair("count", [node(1, "ar", COLL, attrs=[("comm_type", ALL_REDUCE), ("comm_size", 8)])], [])
pair("norecv", [node(1, "r", RECV, attrs=[("comm_size", 8)])])
pair("dup", [node(1, "a", COMP, dur_us=1), node(1, "b", COMP, dur_us=1)])
with open(f"{d}/cut.0.et", "wb") as f:		# a message longer than the file
    f.write(open(f"{d}/dp.0.et", "rb").read()[:40])
open(f"{d}/cut.1.et", "wb").write(open(f"{d}/dp.1.et", "rb").read())
PY
cat > "$d/dp.trace" <<'T'
ranks 8
map linear
fwd: compute all 100us
bwd: compute all 200us
cpu: compute all 7us
ar: allreduce 16MiB
opt: compute all 50us
T
cat > "$d/pp.trace" <<'T'
ranks 4
map linear
a: compute 0 10us
send 0 1 1MiB tag=3 after=a
recv 1 0 1MiB tag=3
compute 1 20us
send 2 3 65536
recv 3 2 65536
compute 3 5us
T
cat > "$d/pg.trace" <<'T'
ranks 8
map linear
comm tp0 = 0-3
comm tp1 = 4-7
allgather 4MiB comm=tp0
allgather 4MiB comm=tp1
allreduce 1MiB
T

same() {	# name: the Chakra trace and its native twin end at the same time
	"$IBFAB" run --trace "$d/$1.0.et" --reproducible --json "$d/$1.ck.json" > "$d/$1.ck.txt" 2>&1 ||
		fail "$1 (chakra): $(tail -2 "$d/$1.ck.txt")"
	"$IBFAB" run --trace "$d/$1.trace" --reproducible --json "$d/$1.nat.json" > "$d/$1.nat.txt" 2>&1 ||
		fail "$1 (native): $(tail -2 "$d/$1.nat.txt")"
	python3 - "$d/$1.ck.json" "$d/$1.nat.json" "$1" <<'PY' || fail "$1: the Chakra trace and its native twin differ"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
# the same collectives at the same times (their order in the trace may differ:
# the importer numbers them rank by rank)
ca = sorted((c["collective"], c["bytes"], c["ranks"], c["start_ps"], c["end_ps"]) for c in a["collectives"])
cb = sorted((c["collective"], c["bytes"], c["ranks"], c["start_ps"], c["end_ps"]) for c in b["collectives"])
print(f"ok: {sys.argv[3]}: chakra {a['sim_time_ps'] / 1e6:.3f} us, native {b['sim_time_ps'] / 1e6:.3f} us, "
      f"{len(ca)} collectives")
sys.exit(0 if a["sim_time_ps"] == b["sim_time_ps"] and ca == cb and a["messages_delivered"] == b["messages_delivered"] else 1)
PY
}
same dp
same pp
same pg
grep -q "^workload       8 ranks, 33 ops (1 collectives)" "$d/dp.ck.txt" ||
	fail "dp: $(grep '^workload' "$d/dp.ck.txt")"
"$IBFAB" run --trace "$d/dp.0.et" --trace-format chakra --quiet || fail "--trace-format chakra"

bad() {	# name, what the message must say
	"$IBFAB" run --trace "$d/$1.0.et" > "$d/err.txt" 2>&1 && fail "$1: accepted"
	grep -qF -- "$2" "$d/err.txt" || fail "$1: $(cat "$d/err.txt")"
}
bad nodep "nodep.0.et:3: record 3 at byte"
bad nodep "node 2 waits for node 5, which is not in this file"
bad size "size.1.et:2: record 2 at byte 39: this rank's collective is ALL_REDUCE of 2048 bytes"
bad gather "comm_type GATHER, which ibfab has no algorithm for"
bad count "process group '': 0 collectives in this file, 1 in"
bad norecv "recv node 1: expected comm_src, another rank 0..1"
bad dup "node id 1 again"
bad cut "cut.0.et:2: record 2 at byte"
cp "$d/dp.1.et" "$d/alone.et"
"$IBFAB" run --trace "$d/alone.et" > "$d/err.txt" 2>&1 && fail "a file not named NAME.0.et: accepted"
grep -q "one file per rank, NAME.0.et" "$d/err.txt" || fail "not NAME.0.et: $(cat "$d/err.txt")"
finish
