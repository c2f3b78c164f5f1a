#!/bin/bash
# cut_links.sh - a link between two partitions of a parallel run gives the
# same run as a link inside one. Across partitions nothing can be handed
# over in place: a packet crosses as a copy that the receiver's partition
# makes its own (the sender's goes back to its pool), an FC packet
# (models/port/port.c) or a PFC frame (models/eth/eth_port.c) as an event
# of the transmitter, due once it has crossed the cable; a message's fate
# at another node reaches its source as a report, and a SEND's receive is
# posted by its destination (models/fabric). sim.cut_links=on runs every
# link of a sequential run that way, and everything a run
# reports must stay byte for byte what it was, except the count of events
# (which must grow: else the switch does nothing). The runs cover what
# crosses a link:
#   ring8     the golden ring allreduce (ftree, credits, RC)
#   mix       two VLs under a skewed VLArb table, incasts, host model on
#   flap      a spine cable going down and up twice while packets and FC
#             packets are on it (sim.check on: credits walked every event)
#   blink     a 100 m host cable down for 100 ns: FC packets sent before it
#             went down reach the sender after it came up, and are lost
#   batched   FC packets every 64 freed blocks and every 300 ns
#   ar        adaptive routing on the 2:1 tree, all-to-all
#   ibcc      IB congestion control under an 8-to-1 incast
#   sharp     in-network reduction (zero-length internal cables)
#   updn      up*/down* on a 4-switch ring: 1.5 ms of credit stalls
#   roce      RoCE with PFC: a 15-to-1 incast beside an all-to-all (1,307
#             pause frames, XOFF refreshes and XONs)
#   roce_dyn  dynamic PFC thresholds on the 2:1 tree, all-to-all
#   roce_short  pauses of 16 quanta and low thresholds: pauses expire
#             while data waits (188,439 pause frames)
#   tcp       TCP: segments, ACKs and the kernel's costs over cut links
#   lossy     RoCE without PFC, 32 KiB a port: SENDs (their receives posted
#             by the destination), datagrams of which 1,884 are lost (the
#             loss reported to the source), go-back-N
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
EX="$IBFAB_SRC/topologies/examples"
FT16=(--topo "$EX/fattree-16.topo")

same() {	# name, then ibfab run's arguments
	local name=$1 m
	shift
	for m in off on; do
		"$IBFAB" run --quiet --reproducible --json "$tmp/$name.$m.json" "$@" \
			--set sim.cut_links=$m > "$tmp/$name.$m.txt" 2>&1 ||
			{ fail "$name: ibfab run $* --set sim.cut_links=$m: $(tail -2 "$tmp/$name.$m.txt")"; return; }
	done
	python3 - "$tmp/$name.off.json" "$tmp/$name.on.json" "$name" <<'PY' || fail "$name: see above"
import json, sys
a, b, name = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
if name.startswith("roce") and not a["pause_frames"]:
    print(f"   {name}: no pause frames: PFC is not exercised")
    sys.exit(1)
if not b["events"] > a["events"]:
    print(f"   {name}: {a['events']} events without cut links, {b['events']} with them")
    sys.exit(1)
PY
	python3 "$IBFAB_SRC/tests/lib/json_same.py" "$tmp/$name.off.json" "$tmp/$name.on.json" "$name" \
		events sim.cut_links || fail "$name: see above"
}

same ring8 "${FT16[@]}" --routing ftree --set host.model=off \
	--trace "$IBFAB_SRC/tests/golden/perf_outputs/ring8.trace"
same mix "${FT16[@]}" --set ib.vls=2 --set vlarb.low=0:4,1:64 \
	--traffic incast:dst=h0,n=8,size=64KiB,sl=0 --traffic incast:dst=h0,n=4,size=64KiB,sl=1 \
	--traffic pingpong:a=h5,b=h10,size=64B,count=10 --traffic permutation:size=32KiB
same flap "${FT16[@]}" --traffic alltoall:size=64KiB --set hca.timeout=10 --set sim.check=on \
	--fault 'link spine0/1 down at 5us' --fault 'link spine0/1 up at 7us' \
	--fault 'link spine0/1 down at 9us' --fault 'link spine0/1 up at 30us'
same blink "${FT16[@]}" --traffic p2p:src=h0,dst=h9,size=1MiB --set link.cable_m=100 \
	--set sim.check=on --fault 'link h0/1 down at 5us' --fault 'link h0/1 up at 5100ns'
same batched "${FT16[@]}" --set ib.fc_threshold=64 --set ib.fc_period_ns=300 \
	--traffic incast:dst=h0,n=8,size=64KiB --traffic permutation:size=64KiB
same ar --topo "$EX/fattree-64-2to1.topo" --set ib.ar=on --traffic alltoall:size=16KiB
same ibcc "${FT16[@]}" --set ib.cc=on --traffic incast:dst=h0,n=8,size=256KiB
printf 'ranks 16\nallreduce 64KiB\n' > "$tmp/sharp.trace"
same sharp "${FT16[@]}" --set ib.sharp=on --trace "$tmp/sharp.trace"
same updn --topo "$EX/ring-4.net" --routing updn --traffic alltoall:size=1MiB
same roce "${FT16[@]}" --set fabric=roce --traffic incast:dst=h0,n=15,size=1MiB \
	--traffic alltoall:size=64KiB
same roce_dyn --topo "$EX/fattree-64-2to1.topo" --set fabric=roce --set eth.pfc_alpha=1 \
	--set eth.buffer_per_port=256KiB --traffic alltoall:size=256KiB
same roce_short "${FT16[@]}" --set fabric=roce --set eth.pfc_quanta=16 --set eth.pfc_xoff=16KiB \
	--set eth.pfc_xon=8KiB --traffic incast:dst=h0,n=15,size=256KiB --traffic alltoall:size=64KiB
same tcp "${FT16[@]}" --set fabric=tcp --traffic incast:dst=h0,n=8,size=256KiB \
	--traffic permutation:size=64KiB
same lossy "${FT16[@]}" --set fabric=roce-lossy --set eth.buffer_per_port=32KiB --op send \
	--traffic incast:dst=h0,n=15,size=256KiB --traffic incast:dst=h1,size=1000B,count=300,qp=ud \
	--traffic permutation:size=64KiB
finish
