#!/bin/bash
# credits.sh - the credit invariant (IBA 7.9: a sender never passes the
# limit its receiver advertised) holds for every operation, with and
# without the host model: all-to-all WRITE, READ and SEND on the built-in
# fat tree with sim.check=on, which walks every link's credits after each
# event and stops the run at the first violation. READ responses are the
# case to watch: the port checks a packet's credits against the size its
# HCA announces before building it, and the two must agree.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
for op in write read send; do
	for host in on off; do
		if ! "$IBFAB" run --traffic alltoall:size=64KiB --op $op --set host.model=$host \
			--set sim.check=on > "$tmp/out" 2> "$tmp/err"; then
			fail "$op, host.model=$host: $(head -c 300 "$tmp/err")"
			continue
		fi
		grep -q "^messages *240 / 240 delivered" "$tmp/out" ||
			fail "$op, host.model=$host: $(grep '^messages' "$tmp/out")"
	done
done
finish
