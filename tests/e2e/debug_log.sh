#!/bin/bash
# debug_log.sh - IBFAB_DEBUG=tcp takes TCP's time apart as it happens: for
# a 4 KiB message (4,112 bytes with its header, three segments at MSS
# 1448) one send() line with its system call, copy and segments, one line
# per arriving segment as it waits for the NIC's moderated interrupt
# (rx-usecs: 3 us after the last), one line per segment the softirq then
# processes (the first after the interrupt, the others in its poll), and
# the reader's copies, the first after its wake-up, the last with recv()
# returning; in simulated order, on stderr only.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
IBFAB_DEBUG=tcp "$IBFAB" run --set fabric=tcp --traffic p2p:src=h0,dst=h1,size=4KiB \
	> "$tmp/out" 2> "$tmp/log" || fail "ibfab run: $(tail -2 "$tmp/log")"
grep -q '\[tcp\]' "$tmp/out" && fail "debug lines on stdout"
n() { grep -c -- "$1" "$tmp/log"; }
[ "$(n '\[tcp\] qp [0-9]* send() of 4112 bytes: system call 500 ns, copy 685334 ps, protocol 3 segments x 100 ns')" = 1 ] ||
	fail "send() line: $(grep -m1 'send()' "$tmp/log")"
[ "$(n "segment of [0-9]* bytes waits for the NIC's interrupt")" = 3 ] || fail "waits: $(n 'waits for')"
[ "$(n 'segment of [0-9]* bytes: a moderated interrupt')" = 1 ] || fail "interrupts: $(n 'interrupt,')"
[ "$(n "segment of [0-9]* bytes: in the softirq's poll")" = 2 ] || fail "polled segments: $(n 'poll')"
[ "$(n 'recv: the reader woken (context switch)')" = 1 ] || fail "wake-ups: $(n 'woken')"
[ "$(n 'recv() returns (system call)')" = 1 ] || fail "recv() returns: $(n 'returns (system')"
awk '{ t = $1 + 0; if (t < last) { print "out of order: " $0; bad = 1 } last = t } END { exit bad }' \
	"$tmp/log" || fail "lines not in simulated order"
finish
