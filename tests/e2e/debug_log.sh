#!/bin/bash
# debug_log.sh - IBFAB_DEBUG=tcp takes TCP's time apart as it happens: for
# a 4 KiB message (4,112 bytes with its header, three segments at MSS
# 1448) one send() line with its system call, copy and segments, one line
# per arriving segment (the first takes an interrupt, the others join its
# softirq batch), and the reader's copies, the first after its wake-up,
# the last with recv() returning; in simulated order, on stderr only.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
IBFAB_DEBUG=tcp "$IBFAB" run --set fabric=tcp --traffic p2p:src=h0,dst=h1,size=4KiB \
	> "$tmp/out" 2> "$tmp/log" || fail "ibfab run: $(tail -2 "$tmp/log")"
grep -q '\[tcp\]' "$tmp/out" && fail "debug lines on stdout"
n() { grep -c -- "$1" "$tmp/log"; }
[ "$(n '\[tcp\] qp [0-9]* send() of 4112 bytes: system call 500 ns, copy 685334 ps, protocol 3 segments x 100 ns')" = 1 ] ||
	fail "send() line: $(grep -m1 'send()' "$tmp/log")"
[ "$(n 'segment of [0-9]* bytes: an interrupt')" = 1 ] || fail "interrupts: $(n 'an interrupt')"
[ "$(n "segment of [0-9]* bytes: in the softirq's batch")" = 2 ] || fail "batched segments: $(n 'batch')"
[ "$(n 'recv: the reader woken (context switch)')" = 1 ] || fail "wake-ups: $(n 'woken')"
[ "$(n 'recv() returns (system call)')" = 1 ] || fail "recv() returns: $(n 'returns (system')"
awk '{ t = $1 + 0; if (t < last) { print "out of order: " $0; bad = 1 } last = t } END { exit bad }' \
	"$tmp/log" || fail "lines not in simulated order"
finish
