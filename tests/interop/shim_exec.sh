#!/usr/bin/env bash
# tests/interop/shim_exec.sh - `ibfab exec` (docs/shim.md): it starts a
# daemon when none answers (private socket directory, mode 0700 / 0600),
# reuses it afterwards, names the host, passes the program's exit status
# through, falls back to the built-in 16-host fat tree without a topology,
# runs SIGALRM timers in simulated time, and the daemon it started goes away by itself once idle.
. "$IBFAB_SRC/tests/lib/e2e.sh"
. "$IBFAB_SRC/tests/shim/lib.sh"
need ibv_devinfo ibv_devices
topo="$IBFAB_SRC/topologies/examples/star-6.net"
sock="$tmp/run/ibfab/sock"

# no daemon, no --topo: one starts on the built-in fat tree (16 hosts:
# h15 is LID 22 there, after the six switches and h0-h14; star-6.net has
# no h15)
dsock="$tmp/def/ibfab/sock"
timeout 30 "$IBFAB" exec --socket "$dsock" --host h15 -- ibv_devinfo >"$tmp/none.out" 2>&1 ||
	fail "exec on the built-in fabric: $(tail -3 "$tmp/none.out")"
grep -Eq "port_lid:\s+22$" "$tmp/none.out" || fail "built-in fabric, h15: $(grep lid "$tmp/none.out")"

timeout 30 "$IBFAB" exec --socket "$sock" --topo "$topo" --host h2 -- ibv_devinfo >"$tmp/a.out" 2>&1 ||
	fail "exec ibv_devinfo: $(tail -3 "$tmp/a.out")"
grep -q "port_lid:.*4" "$tmp/a.out" || fail "exec --host h2: $(grep lid "$tmp/a.out")"
[ -S "$sock" ] || fail "no daemon socket at $sock"
[ "$(stat -c %a "$sock")" = 600 ] || fail "socket mode $(stat -c %a "$sock")"
[ "$(stat -c %a "$(dirname "$sock")")" = 700 ] || fail "socket directory mode $(stat -c %a "$(dirname "$sock")")"
# the second program attaches to the same daemon (no --topo needed)
timeout 30 "$IBFAB" exec --socket "$sock" --host h4 -- ibv_devinfo >"$tmp/b.out" 2>&1 ||
	fail "exec on the running daemon: $(tail -3 "$tmp/b.out")"
grep -q "port_lid:.*6" "$tmp/b.out" || fail "exec --host h4: $(grep lid "$tmp/b.out")"
# the device: the ConnectX of the link's generation (HDR: ConnectX-6,
# PCI 4123) with atomics; on fabric=tcp it says it has none
timeout 30 "$IBFAB" exec --socket "$sock" --host h4 -- ibv_devinfo -v >"$tmp/v.out" 2>&1 ||
	fail "exec ibv_devinfo -v: $(tail -3 "$tmp/v.out")"
grep -Eq "vendor_id:\s+0x02c9$" "$tmp/v.out" && grep -Eq "vendor_part_id:\s+4123$" "$tmp/v.out" ||
	fail "device ids: $(grep vendor "$tmp/v.out")"
grep -Eq "atomic_cap:\s+ATOMIC_HCA" "$tmp/v.out" || fail "IB atomics: $(grep atomic_cap "$tmp/v.out")"
tsock="$tmp/tcp/ibfab/sock"
timeout 30 "$IBFAB" exec --socket "$tsock" --topo "$topo" --set fabric=tcp --host h1 -- \
	ibv_devinfo -v >"$tmp/t.out" 2>&1 || fail "exec on fabric=tcp: $(tail -3 "$tmp/t.out")"
grep -Eq "atomic_cap:\s+ATOMIC_NONE" "$tmp/t.out" || fail "TCP atomics: $(grep atomic_cap "$tmp/t.out")"
# an MPI rank without --host is the fabric's host of its number (star-6:
# the k-th host h<k> is LID k+2)
for v in OMPI_COMM_WORLD_RANK PMI_RANK; do
	env "$v=3" timeout 30 "$IBFAB" exec --socket "$sock" -- ibv_devinfo >"$tmp/rank.out" 2>&1 ||
		fail "exec with $v=3: $(tail -3 "$tmp/rank.out")"
	grep -Eq "port_lid:\s+5$" "$tmp/rank.out" || fail "$v=3 is not h3: $(grep lid "$tmp/rank.out")"
done
# a rank beyond the fabric's hosts is told so (star-6: h0..h5)
OMPI_COMM_WORLD_RANK=6 timeout 30 "$IBFAB" exec --socket "$sock" -- ibv_devices >"$tmp/rank6.out" 2>&1
grep -q "MPI rank 6 is the fabric's host of that number, and the fabric has fewer hosts" \
	"$tmp/rank6.out" || fail "rank 6 on 6 hosts: $(cat "$tmp/rank6.out")"
# the interval timer, times() and poll/select/epoll timeouts count simulated
# time; a timeout on an outside process's socket real time too
# (tests/shim/shim_alarm.c)
timeout 30 "$IBFAB" exec --socket "$sock" --host h2 -- "$IBFAB_BUILD/tests/shim/shim_alarm" \
	>"$tmp/alarm.out" 2>&1 || fail "shim_alarm: $(grep -v '^ok' "$tmp/alarm.out" | head -5)"
# rdtsc counts simulated time when the program has a SIGILL handler of its
# own (as UCX and Open MPI install after attach; tests/shim/shim_tsc.c)
timeout 30 "$IBFAB" exec --socket "$sock" --host h2 -- "$IBFAB_BUILD/tests/shim/shim_tsc" \
	>"$tmp/tsc.out" 2>&1 || fail "shim_tsc: $(grep -v '^ok' "$tmp/tsc.out" | head -5)"
# memory unmapped and mapped again at the same address, registered again:
# the HCA moves the new pages (tests/shim/shim_remap.c, over the loopback)
timeout 30 "$IBFAB" exec --socket "$sock" --host h2 -- "$IBFAB_BUILD/tests/shim/shim_remap" \
	>"$tmp/remap.out" 2>&1 || fail "shim_remap: $(cat "$tmp/remap.out")"
# buffers of 128 KiB and more start 16 bytes into a page whatever the
# heap's history, unless the program chose glibc's threshold itself
# (tests/shim/shim_heap.c)
timeout 30 "$IBFAB" exec --socket "$sock" --host h2 -- "$IBFAB_BUILD/tests/shim/shim_heap" \
	>"$tmp/heap.out" 2>&1 || fail "shim_heap: $(tr '\n' '|' <"$tmp/heap.out")"
GLIBC_TUNABLES=glibc.malloc.mmap_threshold=1048576 timeout 30 "$IBFAB" exec --socket "$sock" \
	--host h2 -- "$IBFAB_BUILD/tests/shim/shim_heap" --own >"$tmp/heap.out" 2>&1 ||
	fail "shim_heap --own: $(tr '\n' '|' <"$tmp/heap.out")"
# the SRQ limit and asynchronous events (tests/shim/shim_async.c, over the
# loopback): the event wakes a program blocked in ibv_get_async_event
timeout 30 "$IBFAB" exec --socket "$sock" --host h3 -- "$IBFAB_BUILD/tests/shim/shim_async" \
	>"$tmp/async.out" 2>&1 || fail "shim_async: $(cat "$tmp/async.out")"
# threads take turns (tests/shim/shim_turns.c, over the loopback): a
# second thread's sched_yield() lets the main thread's parked poll answer,
# its next poll hands the turn back; on two fresh daemons the main thread
# counts the same empty polls and the same completion time
for i in 1 2; do
	timeout 30 "$IBFAB" exec --socket "$tmp/turns$i/ibfab/sock" --topo "$topo" --host h3 -- \
		"$IBFAB_BUILD/tests/shim/shim_turns" >"$tmp/turns$i.out" 2>&1 ||
		fail "shim_turns: $(cat "$tmp/turns$i.out")"
done
grep -q "^turns: ok" "$tmp/turns1.out" && cmp -s "$tmp/turns1.out" "$tmp/turns2.out" ||
	fail "shim_turns not repeatable: $(tr '\n' '|' <"$tmp/turns1.out") then $(tr '\n' '|' <"$tmp/turns2.out")"
# ... and a main thread that spins on a flag the second thread sets, with
# the turn: its time slice lets the second one run (else: no end)
timeout 30 "$IBFAB" exec --socket "$tmp/turns3/ibfab/sock" --topo "$topo" --host h3 -- \
	"$IBFAB_BUILD/tests/shim/shim_turns" spin >"$tmp/turns3.out" 2>&1 &&
	grep -q "^turns: spin ok" "$tmp/turns3.out" || fail "shim_turns spin: $(cat "$tmp/turns3.out")"
# ... and a main thread that yields until a flag is set by a thread asleep
# in simulated time (1 ms): each yield that finds no one else to run waits
# for the clock or the sleeper's turn, so the clock reaches the wake-up
# (else it stands still at the yields and the program never ends) and the
# flag is seen the instant the sleeper sets it
timeout 30 "$IBFAB" exec --socket "$tmp/turns4/ibfab/sock" --topo "$topo" --host h3 -- \
	"$IBFAB_BUILD/tests/shim/shim_turns" sleep >"$tmp/turns4.out" 2>&1 &&
	grep -q "^sleep: the flag seen 1000000 ns after the join" "$tmp/turns4.out" &&
	grep -q "^turns: sleep ok" "$tmp/turns4.out" || fail "shim_turns sleep: $(cat "$tmp/turns4.out")"
# a program on its way (tests/shim/shim_late.c): the server accepts its
# client over TCP and attaches 300 ms (real) later; the client, attached,
# polls the connection 1 ms at a time and must see no timeout pass (the
# clock waits for the announced server)
timeout 30 "$IBFAB" exec --socket "$tmp/late/ibfab/sock" --topo "$topo" --host h0 -- \
	"$IBFAB_BUILD/tests/shim/shim_late" >"$tmp/late.out" 2>&1 &&
	grep -q "^late: ok (0 timeouts, 0 us)" "$tmp/late.out" || fail "shim_late: $(cat "$tmp/late.out")"
# ... and one that forks a worker of its own host to do the work and waits
# for it unseen (qperf's server): the worker's attaching ends the
# announcement, else the daemon would wait 10 s for it and say so
mkdir -p "$tmp/latef"
"$IBFAB" serve --topo "$topo" --socket "$tmp/latef/sock" 2>"$tmp/latef/serve.log" &
lfpid=$!
for _ in $(seq 100); do [ -S "$tmp/latef/sock" ] && break; sleep 0.05; done
timeout 30 "$IBFAB" exec --socket "$tmp/latef/sock" --host h0 -- \
	"$IBFAB_BUILD/tests/shim/shim_late" fork >"$tmp/latef.out" 2>&1 &&
	grep -q "^late: fork ok" "$tmp/latef.out" || fail "shim_late fork: $(cat "$tmp/latef.out")"
kill "$lfpid" 2>/dev/null
wait "$lfpid" 2>/dev/null
grep -q "said it would attach" "$tmp/latef/serve.log" &&
	fail "shim_late fork: the forking server held the clock: $(grep 'said it would' "$tmp/latef/serve.log")"
# port events: a daemon that takes h2's cable down at 1 ms and up at 3 ms
# (--fault); the program blocked in ibv_get_async_event wakes with
# PORT_ERR, sees the port DOWN, then PORT_ACTIVE 2 ms later
# (tests/shim/shim_portev.c); a bad --fault is refused, no socket left
fsock="$tmp/fault/ibfab/sock"
timeout 30 "$IBFAB" exec --socket "$fsock" --topo "$topo" --fault 'link h2/1 down at 1ms' \
	--fault 'link h2/1 up at 3ms' --host h2 -- "$IBFAB_BUILD/tests/shim/shim_portev" 2000 \
	>"$tmp/portev.out" 2>&1 || fail "shim_portev: $(cat "$tmp/portev.out")"
grep -q "portev: ok (down 2000 us)" "$tmp/portev.out" || fail "shim_portev: $(cat "$tmp/portev.out")"
timeout 30 "$IBFAB" serve --socket "$tmp/bad/sock" --topo "$topo" --fault 'link nosuch/1 down at 1ms' \
	>"$tmp/badfault.out" 2>&1 && fail "serve took a fault on no node"
grep -q "no node 'nosuch'" "$tmp/badfault.out" || fail "bad --fault: $(cat "$tmp/badfault.out")"
[ -e "$tmp/bad/sock" ] && fail "a refused serve left its socket"
timeout 30 "$IBFAB" exec --socket "$sock" -- sh -c 'exit 3' >/dev/null 2>&1
[ $? -eq 3 ] || fail "exec should pass the program's exit status through"
timeout 30 "$IBFAB" exec --socket "$sock" --host nosuch -- ibv_devices >"$tmp/c.out" 2>&1
grep -q "refused to attach host nosuch" "$tmp/c.out" || fail "unknown host: $(cat "$tmp/c.out")"
# idle for 5 s: the daemon exec started leaves
for _ in $(seq 100); do
	[ -S "$sock" ] || break
	sleep 0.1
done
[ -S "$sock" ] && fail "the daemon started by exec did not exit when idle"
finish
