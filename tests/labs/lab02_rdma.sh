#!/bin/bash
# lab02_rdma.sh - every number docs/labs/02-rdma.md states: perftest's
# 2-byte latencies and 64 KiB bandwidth, who does what for WRITEs and
# SENDs (posts, completions, CPU, no kernel), and Debian's ib_read_lat
# under `ibfab exec` printing the simulator's figure. The last step needs
# perftest (tools/install-deps.sh): skipped without it unless CI=true.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
lat() { "$IBFAB" run --traffic "perftest:op=$1,mode=lat,sizes=2" | awk '$1 == 2 { print $5 }'; }
[ "$(lat write)" = 0.97 ] || fail "WRITE latency $(lat write)"
[ "$(lat read)" = 1.93 ] || fail "READ latency $(lat read)"
[ "$(lat send)" = 1.02 ] || fail "SEND latency $(lat send)"
bw=$("$IBFAB" run --traffic perftest:op=write,sizes=65536 | awk '$1 == 65536 { print $3 }')
[ "$bw" = 198.67 ] || fail "64 KiB WRITE bandwidth $bw"
for op in write send; do
	"$IBFAB" run --traffic p2p:src=h0,dst=h1,size=1MiB,count=4,op=$op --json "$tmp/$op.json" \
		> /dev/null || fail "ibfab run op=$op"
done
python3 - "$tmp" <<'PY' || fail "who works"
import json, sys
d = sys.argv[1]
bad = []
for op, want in [("write", {"h0": (4, 4, 1720000), "h1": (0, 0, 0)}),
                 ("send", {"h0": (4, 4, 1720000), "h1": (0, 4, 200000)})]:
    j = json.load(open(f"{d}/{op}.json"))
    hosts = {h["node"]: h for h in j["hosts"]}
    for name, w in want.items():
        h = hosts.get(name)
        got = None if h is None else (h["posts"], h["cqes"], h["cpu_ps"])
        if got != w: bad.append(f"{op} {name}: posts, cqes, cpu_ps {got}, the lab says {w}")
    k = j["kernel"]
    if k["syscalls"] or k["interrupts"] or k["cpu_copy_bytes"]: bad.append(f"{op}: kernel {k}")
for b in bad:
    print("  ", b)
sys.exit(1 if bad else 0)
PY
if ! command -v ib_read_lat > /dev/null; then
	[ "${CI:-}" = true ] && fail "ib_read_lat is missing (CI=true)"
	echo "skipped: the real ib_read_lat (perftest) is not installed"
else
	# the lab's commands, on a private daemon this test starts and stops
	sock=$tmp/ibfab.sock
	"$IBFAB" serve --socket "$sock" 2> "$tmp/serve.log" &
	daemon=$!
	for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
	timeout 60 "$IBFAB" exec --socket "$sock" --host h0 -- ib_read_lat -n 100 > "$tmp/srv" 2>&1 &
	srv=$!
	sleep 0.5
	timeout 60 "$IBFAB" exec --socket "$sock" --host h1 -- ib_read_lat -n 100 localhost \
		> "$tmp/cli" 2>&1 || fail "ib_read_lat client: $(tail -3 "$tmp/cli")"
	wait "$srv"
	kill "$daemon" 2> /dev/null
	wait "$daemon" 2> /dev/null
	got=$(awk '$1 == 2 { print $5 }' "$tmp/cli")
	[ "$got" = 1.93 ] || fail "the real ib_read_lat prints $got us, the lab says 1.93"
fi
finish
