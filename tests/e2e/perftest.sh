#!/bin/bash
# perftest.sh - `ibfab run --traffic 'perftest:...'` prints perftest's table
# after the summary: the banner, perftest's exact header, one row per size
# in order with the right number of numeric columns, for a bandwidth and a
# latency sweep; --json carries the same rows; the output is the same on a
# second run; a malformed sweep is refused with one clear line.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"

BW_HDR=' #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]'
LAT_HDR=' #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] '

# check_table FILE HEADER NCOL ITERS TITLE: the header once, then one row per
# size 2, 4, ..., 64K, each NCOL numbers, then the closing dashes.
check_table() {
	local f=$1 hdr=$2 ncol=$3 iters=$4 title=$5
	grep -qF -- "$title" "$f" || fail "$title: no banner"
	[ "$(grep -cxF -- "$hdr" "$f")" -eq 1 ] || { fail "$title: header not found once, exactly"; return; }
	awk -v hdr="$hdr" -v ncol="$ncol" -v iters="$iters" '
		$0 == hdr { on = 1; size = 2; next }
		on && /^-+$/ { on = 0; done = 1; next }
		on {
			if (NF != ncol) { print "row with " NF " columns: " $0; bad = 1 }
			if ($1 != size) { print "row for " $1 " bytes, expected " size; bad = 1 }
			if ($2 != iters) { print "row with " $2 " iterations, expected " iters; bad = 1 }
			for (i = 3; i <= NF; i++)
				if ($i !~ /^[0-9]+\.[0-9]+$/) { print "not a number: " $i; bad = 1 }
			size *= 2; rows++
		}
		END {
			if (!done) { print "table not closed"; bad = 1 }
			if (rows != 16) { print rows " rows, expected 16 (2 B to 64 KiB)"; bad = 1 }
			exit bad
		}' "$f" || fail "$title: table rows"
}

# bandwidth, perftest's defaults (5000 iterations, tx_depth 128, cq_mod 100)
if ! "$IBFAB" run --traffic 'perftest:op=write,sizes=2..64K,mode=bw' > "$tmp/bw" 2> "$tmp/err"; then
	fail "bw sweep exited non-zero"; cat "$tmp/err"
fi
check_table "$tmp/bw" "$BW_HDR" 5 5000 "RDMA_Write BW Test"
grep -qF "Compare with    : ib_write_bw -s SIZE (once per size) -n 5000 -t 128 -Q 100" "$tmp/bw" ||
	fail "bw: no perftest command line to compare with"
grep -q "^simulated" "$tmp/bw" || fail "bw: the summary is gone"
# at 64 KiB the average is close to HDR's 200 Gb/s x 99.4% payload efficiency
awk '$1 == 65536 && NF == 5 { exit !($4 > 190 && $4 < 198.8) }' "$tmp/bw" ||
	fail "bw: 64 KiB average not near 4x HDR: $(grep '^ 65536' "$tmp/bw")"

# latency (100 round trips: perftest's 1000 take seconds, and on an idle
# fabric every one is the same)
if ! "$IBFAB" run --traffic 'perftest:op=write,sizes=2..64K,mode=lat,iters=100' > "$tmp/lat" 2> "$tmp/err"; then
	fail "lat sweep exited non-zero"; cat "$tmp/err"
fi
check_table "$tmp/lat" "$LAT_HDR" 9 100 "RDMA_Write Latency Test"
# an idle fabric: every round trip alike, so t_min = t_max and no deviation
awk -v hdr="$LAT_HDR" '$0 == hdr { on = 1; next } on && /^-/ { on = 0 }
	on && ($3 != $4 || $7 != "0.00") { print; bad = 1 } END { exit bad }' "$tmp/lat" ||
	fail "lat: rows vary on an idle fabric"

# READ and SEND latency sweeps name their tests; two sweeps in one run
"$IBFAB" run --traffic 'perftest:op=read,sizes=2..64K,mode=lat,iters=20' \
	--traffic 'perftest:op=send,sizes=2..64K,mode=lat,iters=20,src=h2,dst=h9' > "$tmp/two" 2> "$tmp/err" ||
	{ fail "read + send sweeps exited non-zero"; cat "$tmp/err"; }
grep -qF "RDMA_Read Latency Test" "$tmp/two" || fail "no RDMA_Read Latency Test"
grep -qF "Send Latency Test" "$tmp/two" || fail "no Send Latency Test"
grep -qF "Simulated       : h2 -> h9, perftest:op=send" "$tmp/two" || fail "send sweep: wrong hosts"
[ "$(grep -cxF -- "$LAT_HDR" "$tmp/two")" -eq 2 ] || fail "read + send: expected two latency tables"

# JSON: the same rows, and byte-identical on a second run
for k in 1 2; do
	"$IBFAB" run --traffic 'perftest:op=write,sizes=2..64K,mode=bw,iters=200' \
		--json "$tmp/run$k.json" --reproducible > "$tmp/out$k" 2> "$tmp/err" ||
		{ fail "json run $k exited non-zero"; cat "$tmp/err"; }
done
cmp -s "$tmp/run1.json" "$tmp/run2.json" || fail "JSON differs between two runs"
cmp -s "$tmp/out1" "$tmp/out2" || fail "the table differs between two runs"
python3 - "$tmp/run1.json" "$tmp/out1" <<'PY' || fail "JSON perftest rows"
import json, sys
d = json.load(open(sys.argv[1]))
pt = d["perftest"]
assert len(pt) == 1, pt
s = pt[0]
for k in ["spec", "test", "op", "mode", "src", "dst", "iters", "tx_depth", "cq_mod", "complete", "rows"]:
    assert k in s, k
assert s["test"] == "RDMA_Write BW Test" and s["mode"] == "bw" and s["complete"] is True
assert [r["bytes"] for r in s["rows"]] == [2 << k for k in range(16)]
# the table shows the JSON's figures, rounded as perftest rounds them
table = {}
for line in open(sys.argv[2]):
    f = line.split()
    if len(f) == 5 and f[0].isdigit():
        table[int(f[0])] = [float(x) for x in f[2:]]
for r in s["rows"]:
    assert r["iterations"] == 200
    got = table[r["bytes"]]
    for v, key in zip(got, ["bw_peak_gbps", "bw_avg_gbps", "msg_rate_mpps"]):
        assert abs(v - r[key]) <= 0.005 + 1e-9, (r, key, v)
    assert r["bw_peak_gbps"] >= r["bw_avg_gbps"] > 0
PY
# no perftest spec, no perftest key
"$IBFAB" run --traffic p2p:src=h0,dst=h1,size=1MiB --json - --quiet > "$tmp/plain.json" ||
	fail "plain run exited non-zero"
grep -q '"perftest"' "$tmp/plain.json" && fail "a run without perftest specs has a perftest key"

# refused with one clear line
"$IBFAB" run --traffic 'perftest:op=write,sizes=8M..2' > "$tmp/out" 2> "$tmp/err"
rc=$?
[ "$rc" -eq 1 ] || fail "bad sizes: exit $rc, expected 1"
grep -qF "sizes: '8M..2': MIN is larger than MAX" "$tmp/err" || fail "bad sizes: message: $(cat "$tmp/err")"
[ "$(wc -l < "$tmp/err")" -eq 1 ] || fail "bad sizes: expected one line on stderr"
[ -s "$tmp/out" ] && fail "bad sizes: wrote to stdout"

finish
