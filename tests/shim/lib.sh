# tests/shim/lib.sh - sourced by tests/interop/shim_*.sh after tests/lib/e2e.sh:
# starts a private fabric daemon (its own socket in $tmp) and runs verbs
# programs as server/client pairs under the shim, each under a timeout so a
# test can fail but never hang.
: "${IBFAB_BUILD:?IBFAB_BUILD must name the build directory}"
shim_lib="$IBFAB_BUILD/shim/lib"
export IBFAB_SOCKET="$tmp/sock"
daemon_pid=

# need TOOL...: skip (77) when a Debian tool is missing, outside CI.
need() {
	for t in "$@"; do
		if ! command -v "$t" >/dev/null 2>&1; then
			if [ "${CI:-}" = true ]; then
				echo "FAIL: $t missing under CI"; exit 1
			fi
			echo "SKIP: $t not installed (tools/install-deps.sh)"; exit 77
		fi
	done
}

# start_daemon TOPO [serve options...]
start_daemon() {
	stop_daemon
	rm -f "$IBFAB_SOCKET"
	"$IBFAB" serve --topo "$@" --socket "$IBFAB_SOCKET" 2>>"$tmp/serve.log" &
	daemon_pid=$!
	for _ in $(seq 100); do
		[ -S "$IBFAB_SOCKET" ] && return 0
		kill -0 "$daemon_pid" 2>/dev/null || break
		sleep 0.05
	done
	fail "the daemon did not start: $(tail -3 "$tmp/serve.log")"
	return 1
}

stop_daemon() {
	if [ -n "$daemon_pid" ]; then
		kill "$daemon_pid" 2>/dev/null
		wait "$daemon_pid" 2>/dev/null
		daemon_pid=
	fi
}
trap 'stop_daemon; rm -rf "$tmp"' EXIT

# shim HOST CMD... : run CMD as simulated host HOST under the shim, with
# the environment `ibfab exec` gives it (the library found and preloaded).
shim() {
	local host=$1
	shift
	IBFAB_HOST=$host LD_LIBRARY_PATH="$shim_lib" LD_PRELOAD="$shim_lib/libibverbs.so.1" \
		timeout "${SHIM_TIMEOUT:-60}" "$@"
}

# Wait (at most 4 s) until a server listens on TCP port $1; without ss,
# 0.4 s.
wait_listen() {
	local port=$1
	for _ in $(seq 200); do
		if command -v ss >/dev/null 2>&1; then
			ss -ltn 2>/dev/null | grep -q ":$port " && break
		elif [ "$_" -ge 20 ]; then
			break
		fi
		sleep 0.02
	done
}

# pair NAME PORT SERVERCMD... -- CLIENTCMD... : run a server (host $SRV_HOST,
# default h0) and its client ($CLI_HOST, default h1), the client once
# `${PAIR_WAIT:-wait_listen} PORT` says the server is ready; outputs in
# $tmp/NAME.srv and $tmp/NAME.cli. Returns non-zero (and calls fail) unless
# both exit 0.
pair() {
	local name=$1 port=$2
	shift 2
	local srv=() cli=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	shim "${SRV_HOST:-h0}" "${srv[@]}" >"$tmp/$name.srv" 2>&1 &
	local spid=$!
	"${PAIR_WAIT:-wait_listen}" "$port"	# the client does not retry
	shim "${CLI_HOST:-h1}" "${cli[@]}" >"$tmp/$name.cli" 2>&1
	local crc=$?
	wait "$spid"
	local src=$?
	if [ "$crc" -ne 0 ] || [ "$src" -ne 0 ]; then
		fail "$name: server exit $src, client exit $crc"
		sed 's/^/  srv| /' "$tmp/$name.srv" | tail -8
		sed 's/^/  cli| /' "$tmp/$name.cli" | tail -8
		return 1
	fi
	return 0
}
