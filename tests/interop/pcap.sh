#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# pcap.sh - interop: Wireshark's dissectors (Debian's tshark) read
# `ibfab run --pcap` captures, and the fields they print are the model's:
#   - InfiniBand (ERF records of type InfiniBand): an RDMA WRITE of 16
#     packets (First, Middle..., Last with the RETH's DMA length and PSNs
#     0..15 in order), a READ request and its response at the request's
#     PSN, the responder's ACKs (as many as the JSON's acks), and, on a
#     cable dropping 10% of packets, sequence NAKs (AETH syndrome 0x60)
#     whose PSN the requester sends again after them (go-back-N);
#   - RoCEv2 (Ethernet/IPv4/UDP 4791): the CNPs (opcode 0x81) as many as
#     the JSON's cnps, and, on the receiver's cable, packets marked CE in
#     the IP header;
#   - TCP: the data segments' lengths add up to the message and its header;
#   - the filter: count=N, a time window, a node's cable, and refusals.
# Exit 77 (skipped) when tshark is missing, unless CI=true: then it fails.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
if ! command -v tshark > /dev/null; then
	if [ "${CI:-}" = true ]; then
		echo "FAIL: tshark is missing (CI=true: interop tests must run)" >&2
		exit 1
	fi
	echo "skipped: tshark is missing (tools/install-deps.sh installs it)"
	exit 77
fi
ts() { tshark -r "$1" "${@:2}" 2> "$tmp/tshark.err" || fail "tshark -r $1: $(cat "$tmp/tshark.err")"; }
run() { "$IBFAB" run --reproducible "$@" > "$tmp/run.out" 2>&1 || fail "ibfab run $*: $(tail -2 "$tmp/run.out")"; }

# ---- InfiniBand: WRITE, READ, ACKs, NAKs ----
# (by the tables: with the HDR preset's adaptive routing the HCAs hold a
# gap's later packets, out of order, and the ACK timeout finds the loss)
run --traffic p2p:src=h0,dst=h1,size=64KiB,count=2 --traffic p2p:src=h2,dst=h3,size=4KiB,op=read \
	--set 'link[h1].drop_prob=0.1' --set ib.ar=off --pcap "$tmp/ib.pcap" --json "$tmp/ib.json"
ts "$tmp/ib.pcap" -V > "$tmp/ib.txt"
grep -qi "malformed" "$tmp/ib.txt" && fail "ib: tshark finds malformed packets: $(grep -m1 -i malformed "$tmp/ib.txt")"
grep -q "Protocols in frame: erf:infiniband" "$tmp/ib.txt" || fail "ib: not dissected as InfiniBand"
ts "$tmp/ib.pcap" -T fields -E separator=, -e frame.number -e infiniband.lrh.slid \
	-e infiniband.bth.opcode -e infiniband.bth.psn -e infiniband.bth.destqp \
	-e infiniband.aeth.syndrome -e infiniband.reth.dmalen > "$tmp/ib.csv"
python3 - "$tmp/ib.csv" "$tmp/ib.json" <<'PY' || fail "ib: the capture's fields"
import csv, json, sys
rows = [r for r in csv.reader(open(sys.argv[1]))]
j = json.load(open(sys.argv[2]))
bad = []
def op(r): return int(r[2])
def psn(r): return int(r[3])
# the first WRITE: 16 packets from one LID, First (6) .. Middle (7) .. Last (8)
w = [r for r in rows if op(r) in (6, 7, 8)]
lid = w[0][1]
first = [r for r in w if r[1] == lid][:16]
if [op(r) for r in first] != [6] + [7] * 14 + [8]:
    bad.append(f"first WRITE's opcodes {[op(r) for r in first]}")
if [psn(r) for r in first] != list(range(16)):
    bad.append(f"first WRITE's PSNs {[psn(r) for r in first]}")
if first[0][6] != "131072" and first[0][6] != "65536":
    bad.append(f"RETH DMA length {first[0][6]}")
# the READ: one request (12, DMA length 4096) and its response (16) at its PSN
req = [r for r in rows if op(r) == 12]
rsp = [r for r in rows if op(r) == 16]
if len(req) != 1 or len(rsp) != 1 or req[0][6] != "4096" or psn(req[0]) != psn(rsp[0]):
    bad.append(f"READ request {req} and response {rsp}")
# ACKs (17, syndrome < 0x20) as the JSON counts them; NAKs (0x60) answered
acks = [r for r in rows if op(r) == 17 and int(r[5]) < 0x20]
naks = [r for r in rows if op(r) == 17 and int(r[5]) == 0x60]
if len(acks) != j["acks"]:
    bad.append(f"{len(acks)} ACKs in the capture, {j['acks']} in the JSON")
if not naks:
    bad.append("no sequence NAK on the lossy cable")
for n in naks:
    later = [r for r in rows if int(r[0]) > int(n[0]) and op(r) in (6, 7, 8) and psn(r) == psn(n)]
    if not later:
        bad.append(f"NAK for PSN {psn(n)} (frame {n[0]}) not followed by that PSN again")
if {r[4] for r in rows} - {"0x000002", "0x00000002"}:
    bad.append(f"destination QPs {sorted({r[4] for r in rows})}")
for b in bad:
    print("  ", b)
sys.exit(1 if bad else 0)
PY

# ---- RoCEv2: CNPs, CE marks ----
R=(--set fabric=roce --set eth.kmin=20KiB --set eth.kmax=100KiB --traffic incast:dst=h0,n=8,size=256KiB)
run "${R[@]}" --pcap "$tmp/roce.pcap" --json "$tmp/roce.json"
cnps=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['cnps'])" "$tmp/roce.json")
got=$(ts "$tmp/roce.pcap" -Y "udp.dstport == 4791 && infiniband.bth.opcode == 129" | wc -l)
[ "$cnps" -gt 0 ] && [ "$got" = "$cnps" ] || fail "roce: $got CNPs in the capture, $cnps in the JSON"
run "${R[@]}" --pcap "$tmp/h0.pcap" --pcap-filter node=h0
ce=$(ts "$tmp/h0.pcap" -Y "ip.dsfield.ecn == 3" | wc -l)
[ "$ce" -gt 0 ] || fail "roce: no CE-marked packet on h0's cable"
ts "$tmp/h0.pcap" -T fields -e ip.src -e ip.dst | grep -qv "10.0.0.7" &&
	fail "roce: node=h0 captured a packet not to or from h0 (10.0.0.7)"

# ---- TCP: the segments carry the message ----
run --set fabric=tcp --traffic p2p:src=h0,dst=h1,size=64KiB --pcap "$tmp/tcp.pcap"
sum=$(ts "$tmp/tcp.pcap" -Y "ip.src == 10.0.0.7" -T fields -e tcp.len | awk '{s += $1} END {print s}')
[ "$sum" = 65552 ] || fail "tcp: the data segments carry $sum bytes, not 65536 + the 16-byte header"

# ---- the filter ----
run --traffic p2p:src=h0,dst=h1,size=64KiB --pcap "$tmp/n.pcap" --pcap-filter count=5
[ "$(ts "$tmp/n.pcap" | wc -l)" = 5 ] || fail "count=5: $(ts "$tmp/n.pcap" | wc -l) packets"
run --traffic p2p:src=h0,dst=h1,size=64KiB --pcap "$tmp/w.pcap" --pcap-filter from=1us,to=2us
ts "$tmp/w.pcap" -T fields -e frame.time_epoch > "$tmp/w.t"
[ -s "$tmp/w.t" ] || fail "from=1us,to=2us: no packet"
awk '$1 < 0.000001 || $1 > 0.000002 { bad++ } END { exit bad > 0 }' "$tmp/w.t" ||
	fail "from=1us,to=2us: packets outside the window: $(tr '\n' ' ' < "$tmp/w.t")"
"$IBFAB" run --pcap "$tmp/x.pcap" --pcap-filter node=nosuch > /dev/null 2> "$tmp/x.err" &&
	fail "node=nosuch accepted"
grep -q "node=nosuch: no connected port matches" "$tmp/x.err" || fail "node=nosuch: $(cat "$tmp/x.err")"
[ -e "$tmp/x.pcap" ] && fail "node=nosuch: the capture was left behind"
"$IBFAB" run --pcap "$tmp/y.pcap" --pcap-filter colour=red > /dev/null 2> "$tmp/y.err" &&
	fail "colour=red accepted"
grep -q "unknown key 'colour' (node, from, to, count)" "$tmp/y.err" || fail "colour=red: $(cat "$tmp/y.err")"
"$IBFAB" run --pcap-filter count=3 > /dev/null 2> "$tmp/z.err" && fail "--pcap-filter without --pcap accepted"
grep -q "needs --pcap FILE" "$tmp/z.err" || fail "--pcap-filter alone: $(cat "$tmp/z.err")"
finish
