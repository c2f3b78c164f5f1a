#!/usr/bin/env bash
# tests/interop/shim_hostile.sh - what one program does to the shared fabric
# daemon harms nobody else (docs/shim.md, "Trust"): the clock page cannot be
# resized, written or forged; unsealed memory is refused; the pid in HELLO is
# not believed; a program that attaches and goes silent, or connects and says
# nothing, is cut off and the others go on; a flood of unread replies does
# not stop it. Then `ibfab serve` and its socket path: an over-long path is
# refused, nothing at the path is removed or chmod'ed, a stale socket of ours
# is replaced, SIGHUP removes the socket. After each hostile case a
# ping-pong pair must still run and print sane times.
. "$IBFAB_SRC/tests/lib/e2e.sh"
. "$IBFAB_SRC/tests/shim/lib.sh"
need ibv_rc_pingpong python3
topo="$IBFAB_SRC/topologies/examples/star-6.net"
hostile() { IBFAB_SRC="$IBFAB_SRC" timeout 30 python3 "$IBFAB_SRC/tests/shim/hostile.py" "$IBFAB_SOCKET" "$@"; }
alive() { kill -0 "$daemon_pid" 2>/dev/null || fail "the daemon died ($1)"; }
port=18700
check_pair() {	# a fresh pair completes, and its times are sane (not negative)
	port=$((port + 1))
	if pair "after-$1" "$port" ibv_rc_pingpong -p "$port" -- ibv_rc_pingpong -p "$port" 127.0.0.1; then
		local us
		us=$(sed -n 's/.* = \([-0-9.]*\) usec\/iter/\1/p' "$tmp/after-$1.cli")
		case "$us" in
		'' | -*) fail "after $1: usec/iter '$us'" ;;
		*) echo "ok:   after $1 a ping-pong pair ran: $us usec/iter" ;;
		esac
	else
		fail "no ping-pong after $1"
	fi
}
run_case() {	# run_case NAME ARGS...: hostile.py must pass, the daemon live
	if hostile "$@" >"$tmp/$1.out" 2>&1; then
		sed 's/^/      /' "$tmp/$1.out"
	else
		fail "hostile $*: $(grep -v '^ok' "$tmp/$1.out" | head -5)"
	fi
	alive "$1"
}

start_daemon "$topo" --hold-limit 2 || { finish; exit; }

# 1. the clock: no resize (SIGBUS for the daemon), no write (forged time)
run_case clock
check_pair clock

# 2. memory segments must be sealed against shrinking
run_case segment
check_pair segment

# 2b. the fds the daemon writes event counts on must be eventfds
run_case eventfd
check_pair eventfd

# 3. a forged pid in HELLO: the kernel's (SO_PEERCRED) is used
run_case forge-pid
grep -q "says it is pid 1: the kernel's word is taken" "$tmp/serve.log" ||
	fail "the forged pid was not noticed: $(tail -3 "$tmp/serve.log")"

# 4. attached and silent for ever, while a pair waits on the clock: the
#    silent one is detached after --hold-limit, the pair completes
hostile idle 40 >"$tmp/idle.out" 2>&1 &
ipid=$!
for _ in $(seq 100); do grep -q attached "$tmp/idle.out" && break; sleep 0.05; done
SHIM_TIMEOUT=30 check_pair idle
wait "$ipid"
grep -q '^detached' "$tmp/idle.out" || fail "the idle client was not detached: $(cat "$tmp/idle.out")"
grep -q "held the clock for .* without a word while others waited: detached" "$tmp/serve.log" ||
	fail "no line in the log for the eviction: $(tail -3 "$tmp/serve.log")"
alive idle

# 5. connected, never a HELLO: dropped
run_case silent
grep -q "said no HELLO in 5 s: dropped" "$tmp/serve.log" || fail "no log line for the silent client"

# 6. a flood of requests whose replies are never read
run_case flood 200000
check_pair flood
stop_daemon

# --- the socket path ------------------------------------------------------
serve() { timeout 20 "$IBFAB" serve --topo "$topo" --idle-exit 0.3 --quiet "$@"; }
long=$tmp/$(printf 'd%.0s' $(seq 120))/sock
if serve --socket "$long" 2>"$tmp/err"; then
	fail "a ${#long}-byte socket path was accepted"
elif grep -q "holds at most 107" "$tmp/err"; then
	echo "ok:   over-long socket path refused: $(cat "$tmp/err")"
else
	fail "over-long socket path: $(cat "$tmp/err")"
fi
echo "my notes" >"$tmp/notes.txt"
if serve --socket "$tmp/notes.txt" 2>"$tmp/err"; then
	fail "serve took a regular file's path"
fi
[ "$(cat "$tmp/notes.txt" 2>/dev/null)" = "my notes" ] || fail "serve --socket destroyed a file"
grep -q "not a socket" "$tmp/err" && echo "ok:   a file at the socket path is kept: $(cat "$tmp/err")" ||
	fail "a file at the path: $(cat "$tmp/err")"
mkdir -m 755 "$tmp/shared"
serve --socket "$tmp/shared/sock" 2>"$tmp/err" || fail "serve in a 0755 directory: $(cat "$tmp/err")"
[ "$(stat -c %a "$tmp/shared")" = 755 ] && echo "ok:   the socket's directory keeps its mode 755" ||
	fail "serve changed its directory's mode to $(stat -c %a "$tmp/shared")"
[ -e "$tmp/shared/sock" ] && fail "the socket was left behind after the daemon exited"
mkdir "$tmp/open" && chmod 777 "$tmp/open"
if serve --socket "$tmp/open/sock" 2>"$tmp/err"; then
	fail "a world-writable, non-sticky directory was accepted"
else
	echo "ok:   a world-writable directory refused: $(cat "$tmp/err")"
fi
[ "$(stat -c %a "$tmp/open")" = 777 ] || fail "serve changed a refused directory's mode"
mkdir "$tmp/new"
serve --socket "$tmp/new/a/b/sock" 2>"$tmp/err" || fail "serve with missing directories: $(cat "$tmp/err")"
[ "$(stat -c %a "$tmp/new/a")" = 700 ] && [ "$(stat -c %a "$tmp/new/a/b")" = 700 ] &&
	echo "ok:   missing directories made 0700" || fail "made directories: $(ls -ld "$tmp/new/a" "$tmp/new/a/b")"
# a stale socket of ours (nobody listens) is replaced
python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET).bind(sys.argv[1])' "$tmp/stale"
serve --socket "$tmp/stale" 2>"$tmp/err" && echo "ok:   a stale socket replaced" ||
	fail "a stale socket: $(cat "$tmp/err")"
# a daemon already there: refused, and its socket stays
"$IBFAB" serve --topo "$topo" --socket "$tmp/busy" --quiet 2>/dev/null &
bpid=$!
for _ in $(seq 100); do [ -S "$tmp/busy" ] && break; sleep 0.05; done
if serve --socket "$tmp/busy" 2>"$tmp/err"; then
	fail "a second daemon on a live socket"
fi
grep -q "already serves here" "$tmp/err" || fail "second daemon: $(cat "$tmp/err")"
[ -S "$tmp/busy" ] || fail "the second daemon removed the first one's socket"
# SIGHUP (a closed terminal) stops the daemon and removes its socket
kill -HUP "$bpid"
wait "$bpid"
rc=$?
[ -e "$tmp/busy" ] && fail "SIGHUP left the socket (exit $rc)" || echo "ok:   SIGHUP: exit $rc, socket removed"
finish
