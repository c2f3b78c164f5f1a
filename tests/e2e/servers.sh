#!/bin/bash
# servers.sh - GPU servers from the command line (docs/servers.md):
#  - `topo gen rail --servers N --server P` writes the preset's GPUs, NIC
#    rate and leaf radix, and the '# ibfab: server=P' line; `topo show`
#    names the servers; the file reads back the same;
#  - an nccl-tests sweep on two DGX H100-like servers: NVLink inside the
#    servers, NCCL's tuned choice per size (tree when small, NVLSTree
#    when large; without NVLS the ring) in the table and in --json's collectives ("auto": true), the
#    ndr fabric preset the file implies, --set winning over the file;
#  - sendrecv_perf's rows in the table, each size after nccl-tests' barrier;
#  - bad input refused with the file, the line and what was expected.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
topo=$tmp/h2.topo
"$IBFAB" topo gen rail --servers 2 --server dgx-h100 > "$topo" || fail "topo gen rail --servers"
grep -qx '# ibfab: server=dgx-h100' "$topo" || fail "the generated file lacks its server line"
grep -q '4xNDR' "$topo" || fail "dgx-h100's NICs are not NDR"
grep -q '^Switch	64 ' "$topo" || fail "dgx-h100's leaves are not 64-port switches"
"$IBFAB" topo show "$topo" > "$tmp/show.out" || fail "topo show"
grep -qF 'servers: 2 x dgx-h100 (8 H100 SXM5, NVLink4 at 370.8 GB/s' "$tmp/show.out" ||
	fail "topo show does not name the servers: $(sed -n 2p "$tmp/show.out")"
"$IBFAB" topo gen rail --servers 2 --server dgx-a100 | grep -q '4xHDR' || fail "dgx-a100's NICs are not HDR"
"$IBFAB" topo gen rail --servers 3 --server gb200-nvl72 | grep -q '"n2g3"' || fail "gb200-nvl72 trays of 4"

echo 'mpirun -np 2 ./all_reduce_perf -b 64K -e 256M -f 64 -g 8 -n 1' > "$tmp/ar.nccl"
"$IBFAB" run --topo "$topo" --trace "$tmp/ar.nccl" --json "$tmp/ar.json" > "$tmp/ar.out" ||
	fail "run on servers"
grep -q '^preset  *ndr:' "$tmp/ar.out" || fail "the file's server did not bring the ndr preset"
grep -q '^nvlink  ' "$tmp/ar.out" || fail "no nvlink line"
grep -q '65536 .*\[double binary tree, LL\]$' "$tmp/ar.out" ||
	fail "64 KiB on 2 servers is not NCCL's tree with LL"
grep -q '268435456 .*\[nvls tree (NVLSTree), Simple\]$' "$tmp/ar.out" ||
	fail "256 MiB on 2 servers is not NCCL's NVLSTree"
grep -q '^nvlink .* 0 sends to other servers relayed' "$tmp/ar.out" ||
	fail "NVLSTree's heads relayed sends (they sit on their own rails)"
# without NVLS (NCCL_NVLS_ENABLE=0), the ring with Simple and PXN's relays
echo 'NCCL_NVLS_ENABLE=0 mpirun -np 2 ./all_reduce_perf -b 256M -e 256M -g 8 -n 1' > "$tmp/nonvls.nccl"
"$IBFAB" run --topo "$topo" --trace "$tmp/nonvls.nccl" > "$tmp/nonvls.out" || fail "NCCL_NVLS_ENABLE=0"
grep -q '268435456 .*\[ring, Simple\]$' "$tmp/nonvls.out" ||
	fail "256 MiB on 2 servers without NVLS is not NCCL's ring with Simple"
grep -q '^nvlink .* [1-9][0-9]* sends to other servers relayed' "$tmp/nonvls.out" ||
	fail "the ring's sends were not relayed to their rails (PXN)"
# a NIC across the CPU: NCCL leaves LL128 off, so 1 MiB on two servers
# without NVLS takes the LL ring (90.4 us in NCCL's model) instead of the
# LL128 tree (with NVLS, NVLSTree: 71.1 us)
echo 'NCCL_NVLS_ENABLE=0 mpirun -np 2 ./all_reduce_perf -b 1M -e 1M -g 8 -n 1' > "$tmp/1m.nccl"
"$IBFAB" run --topo "$topo" --trace "$tmp/1m.nccl" > "$tmp/1m.out" || fail "1 MiB"
grep -q '1048576 .*\[double binary tree, LL128\]$' "$tmp/1m.out" || fail "1 MiB is not the LL128 tree"
"$IBFAB" run --topo "$topo" --trace "$tmp/1m.nccl" --set host.gpu_same_switch=off > "$tmp/far.out" ||
	fail "1 MiB, NIC across the CPU"
grep -q '1048576 .*\[ring, LL\]$' "$tmp/far.out" || fail "LL128 chosen with the NIC across the CPU"
python3 - "$tmp/ar.json" <<'PY' || fail "--json's collectives and nvlink"
import json, sys
j = json.load(open(sys.argv[1]))
c = j["collectives"]
assert [x["algorithm"] for x in c] == ["double binary tree"] + 2 * ["nvls tree (NVLSTree)"], c
assert [x["protocol"] for x in c] == ["LL", "Simple", "Simple"], c
assert all(x.get("auto") is True for x in c), c
assert c[-1]["busbw_gbps"] > 400, c[-1]
nv = j["nvlink"]
assert nv["transfers"] > 0 and nv["bytes"] > 0 and nv["pxn_relays"] == 0, nv
PY
# what the command line says wins over the file: no servers, one flat ring
"$IBFAB" run --topo "$topo" --trace "$tmp/ar.nccl" --set server.preset=none > "$tmp/none.out" ||
	fail "server.preset=none"
grep -q '^nvlink' "$tmp/none.out" && fail "server.preset=none still used NVLink"
grep -q '\[ring' "$tmp/none.out" && fail "server.preset=none still tuned the algorithm"

# one server: NVLink SHARP (NVLS) for a large allreduce, as NCCL picks it
echo './all_reduce_perf -b 1M -e 1G -f 1024 -g 8 -n 1' > "$tmp/one.nccl"
"$IBFAB" run --topo "$topo" --trace "$tmp/one.nccl" --json "$tmp/one.json" > "$tmp/one.out" ||
	fail "one-server sweep"
grep -q '1048576 .*\[ring, LL\]$' "$tmp/one.out" || fail "1 MiB on one server is not the LL ring"
grep -q '1073741824 .*\[nvls (NVLink SHARP), Simple\]$' "$tmp/one.out" ||
	fail "1 GiB on one server is not NVLS"
python3 - "$tmp/one.json" <<'PY' || fail "NVLS's bus bandwidth"
import json, sys
c = json.load(open(sys.argv[1]))["collectives"]
assert c[-1]["algorithm"] == "nvls (NVLink SHARP)" and 460 < c[-1]["busbw_gbps"] < 500, c[-1]
PY

# sendrecv_perf: its rows in the table, each size after nccl-tests' barrier
# (its 256 MiB row at the cross-server pair's rate, not started beside the
# 64 MiB row's slow pair), the iterations' time from first start to last end
echo 'mpirun -np 2 ./sendrecv_perf -b 64M -e 256M -f 4 -g 8 -n 2' > "$tmp/sr.nccl"
"$IBFAB" run --topo "$topo" --trace "$tmp/sr.nccl" > "$tmp/sr.out" || fail "sendrecv_perf"
for sz in 67108864 268435456; do
	awk -v s=$sz '$1 == s && $10 == "sendrecv" && $NF == "x2" { bw = $8 }
		END { exit !(bw > 45 && bw < 51) }' "$tmp/sr.out" ||
		fail "sendrecv_perf's $sz-byte row is not at a NIC's rate (45-51 GB/s): $(grep "^ *$sz " "$tmp/sr.out")"
done
grep -q '^# Avg bus bandwidth' "$tmp/sr.out" || fail "sendrecv_perf's table has no average"

# nccl-tests' -d and -o name the table's type and redop and set its count
# (elements of the type); broadcast on one server runs NCCL's ring chains
# on its channels, at a GPU port's rate (7 hops one after another: 53 GB/s)
printf '%s\n' 'mpirun -np 8 ./reduce_perf -b 64M -e 64M -g 1 -n 1 -d double -o max -r 2' \
	'mpirun -np 8 ./broadcast_perf -b 1G -e 1G -g 1 -n 1 -d bfloat16' \
	'mpirun -np 8 ./sendrecv_perf -b 1M -e 1M -g 1 -n 1 -o all' > "$tmp/dt.nccl"
"$IBFAB" run --topo "$topo" --trace "$tmp/dt.nccl" > "$tmp/dt.out" || fail "types and ops"
grep -Eq '^ +67108864 +8388608 +double +max +2 ' "$tmp/dt.out" ||
	fail "reduce_perf -d double -o max: $(grep '^ *67108864 ' "$tmp/dt.out")"
awk '$1 == 1073741824 && $2 == 536870912 && $3 == "bfloat16" && $4 == "none" { bw = $8 }
	END { exit !(bw > 340 && bw < 380) }' "$tmp/dt.out" ||
	fail "broadcast of 1 GiB on one server: $(grep '^ *1073741824 ' "$tmp/dt.out")"
[ "$(awk '$1 == 1048576 && $10 == "sendrecv" { print $4 }' "$tmp/dt.out" | tr '\n' ' ')" = \
	"sum prod max min avg mulsum " ] || fail "sendrecv_perf -o all: one row per op"

# the 256-GPU examples on 32 DGX H100-like servers end when their headers
# say (the TP allreduces on NVLink, the expert groups' all-to-alls, the
# pipeline's stages)
"$IBFAB" topo gen rail --servers 32 --server dgx-h100 > "$tmp/dgx32.topo" || fail "topo gen rail 32"
for ex in dp-tp-256:4.83 moe-256:4.72 3d-256:48.3; do
	f=${ex%%:*} want=${ex#*:}
	"$IBFAB" run --quiet --topo "$tmp/dgx32.topo" --trace "$IBFAB_SRC/traces/examples/$f.trace" \
		> "$tmp/$f.out" || fail "$f on 32 servers"
	got=$(awk '$1 == "workload" { for (i = 1; i < NF; i++) if ($i == "at") print $(i + 1) }' "$tmp/$f.out")
	awk -v g="$got" -v w="$want" 'BEGIN { exit !(g > w * 0.99 && g < w * 1.01) }' ||
		fail "$f on 32 servers ended at $got ms, its header says $want"
	grep -q "^# .*$want ms" "$IBFAB_SRC/traces/examples/$f.trace" || fail "$f's header lost its $want ms"
done

# bad input
expect() {	# exit code, message fragment, ibfab args...
	local want=$1 frag=$2
	shift 2
	"$IBFAB" "$@" > "$tmp/e.out" 2> "$tmp/e.err"
	local rc=$?
	if [ "$rc" -ne "$want" ]; then
		fail "ibfab $*: exit $rc, expected $want"
	elif ! grep -qF -- "$frag" "$tmp/e.err"; then
		fail "ibfab $*: stderr lacks '$frag': $(head -2 "$tmp/e.err")"
	fi
}
sed 's/server=dgx-h100/server=dgx-z100/' "$topo" > "$tmp/bad.topo"
expect 1 "bad.topo:6:17: unknown server 'dgx-z100' (expected dgx-a100, dgx-h100 or gb200-nvl72)" \
	topo show "$tmp/bad.topo"
sed 's/^# ibfab: server=dgx-h100$/# ibfab: servers=dgx-h100/' "$topo" > "$tmp/bad2.topo"
expect 1 "unknown ibfab directive (expected '# ibfab: server=NAME')" topo show "$tmp/bad2.topo"
sed 's/"n0g7"/"n0g9"/' "$topo" > "$tmp/g9.topo"
expect 1 'host "n0g9": GPU 9 of a server of 8 GPUs (server.gpus)' run --topo "$tmp/g9.topo" \
	--trace "$tmp/ar.nccl"
expect 2 "rail: --gpus 4, but a dgx-h100 server has 8 GPUs" topo gen rail --servers 2 --server dgx-h100 --gpus 4
expect 2 "unknown server preset 'dgx-x'" topo gen rail --servers 2 --server dgx-x
expect 2 "--servers is another name for --nodes" topo gen rail --servers 2 --nodes 2 --gpus 8
expect 1 "unknown server preset 'bogus'" run --set server.preset=bogus
printf 'ranks 8\nallreduce 1MiB algo=nvls\n' > "$tmp/nvls.trace"
printf 'ranks 16\nallreduce 1MiB algo=nvls ranks=0-8\n' > "$tmp/nvls9.trace"
printf 'ranks 8\nallreduce 1MiB algo=nvls proto=ll\n' > "$tmp/nvlsll.trace"
"$IBFAB" topo gen rail --servers 2 --server dgx-a100 > "$tmp/a100.topo" || fail "dgx-a100 rail"
expect 1 "nvls.trace:2: allreduce algo=nvls needs NVSwitches that reduce" \
	run --topo "$tmp/a100.topo" --trace "$tmp/nvls.trace"
expect 1 "algo=nvls needs as many ranks on every server: NVLink domains 0 and 1 hold 8 and 1 of them" \
	run --topo "$topo" --trace "$tmp/nvls9.trace"
expect 1 "this run has no GPU servers" run --topo "$topo" --trace "$tmp/nvls.trace" \
	--set server.preset=none
expect 1 "allreduce nvls has NCCL's Simple protocol only" run --topo "$topo" \
	--trace "$tmp/nvlsll.trace"
finish
