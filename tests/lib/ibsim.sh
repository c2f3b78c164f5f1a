# tests/lib/ibsim.sh - sourced by the interop tests that run Debian's ibsim
# privately: `. lib/ibsim.sh NAME TOOL...`.
#   fail MSG / missing WHAT  - exit 1, or 77 (skipped) when a tool is
#                              missing, unless CI=true: then it fails;
#   IBFAB, SRC               - the binary and the source tree (ctest sets them);
#   UMAD2SIM                 - libumad2sim.so, to LD_PRELOAD into the clients;
#   work                     - a private working directory (libumad2sim makes
#                              ./sys-<pid> there), removed on exit;
#   start_sim FILE / stop_sim - ibsim on FILE, on a private abstract socket
#                              (IBSIM_SOCKNAME: parallel-safe); only the
#                              ibsim started here is ever killed, by its pid.
#   sm_on_host FILE          - FILE with its first CA first (the SM's port);
#   diag TOOL ARGS...        - a diag tool against the running ibsim;
#   opensm_run DIR ARGS...   - one OpenSM sweep, its dumps in DIR.
# NAME names the directory and socket; TOOLs are checked besides ibsim.
set -u
ibsim_name=$1
shift

fail() { echo "FAIL: $*" >&2; exit 1; }
missing() {
	if [ "${CI:-}" = true ]; then
		echo "FAIL: $1 is missing (CI=true: interop tests must run)" >&2
		exit 1
	fi
	echo "SKIP: $1 is missing" >&2
	exit 77
}

IBFAB=${IBFAB:-}
[ -n "$IBFAB" ] && [ -x "$IBFAB" ] || fail "set IBFAB to the ibfab binary (ctest does)"
SRC=${IBFAB_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}

PATH=$PATH:/usr/sbin:/sbin
for t in ibsim timeout "$@"; do
	command -v "$t" >/dev/null ||
		missing "$t (Debian ibsim-utils, infiniband-diags, opensm, coreutils)"
done
UMAD2SIM=$(dpkg -L libumad2sim0 2>/dev/null | grep 'libumad2sim\.so$' | head -n1)
[ -n "$UMAD2SIM" ] || UMAD2SIM=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
[ -r "$UMAD2SIM" ] || missing "libumad2sim.so (Debian libumad2sim0)"

work=$(mktemp -d "${TMPDIR:-/tmp}/ibfab-$ibsim_name.XXXXXX") || fail "mktemp"
sim_pid=
cleanup() {
	if [ -n "$sim_pid" ]; then
		kill "$sim_pid" 2>/dev/null
		wait "$sim_pid" 2>/dev/null
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ibsim and its clients meet on abstract unix sockets named after this.
export IBSIM_SOCKNAME="ibfab-$ibsim_name-$$-$RANDOM"

start_sim() {
	(cd "$work" && exec ibsim -s -n "$1" >"$work/ibsim.log" 2>&1 </dev/null) &
	sim_pid=$!
	# Clients retry until ibsim listens; just make sure it did not die
	# parsing the file.
	for _ in 1 2 3 4 5; do
		sleep 0.2
		kill -0 "$sim_pid" 2>/dev/null || {
			wait "$sim_pid" 2>/dev/null
			sim_pid=
			cat "$work/ibsim.log" >&2
			fail "ibsim refused $1"
		}
	done
}

stop_sim() {
	kill "$sim_pid" 2>/dev/null
	wait "$sim_pid" 2>/dev/null
	sim_pid=
}

# The same fabric with its first CA moved to the front: ibsim attaches the
# SM (and every diag tool) at the first port of the file, and from a host
# every switch LID is reachable under updn and ftree, which (like OpenSM)
# leave top-switch-to-top-switch LIDs unrouted; ibroute and ibtracert send
# their queries by LID.
sm_on_host() {
	awk 'BEGIN { RS = ""; ORS = "\n\n" }
	     !done && /(^|\n)H?[Cc]a[ \t]/ { ca = $0; done = 1; next }
	     { rest[n++] = $0 }
	     END { print ca; for (i = 0; i < n; i++) print rest[i] }' "$1"
}

# A tool against the running ibsim.
diag() { (cd "$work" && LD_PRELOAD=$UMAD2SIM timeout 60 "$@"); }

# opensm_run DIR ARGS...: one sweep, dumps in DIR (-D 0x43 writes them);
# its cache (guid2lid) in DIR too, or in $OSM_CACHE when set, so that a
# second sweep keeps the first one's LIDs.
opensm_run() {
	local dir=$1
	shift
	rm -rf "$dir"
	mkdir -p "$dir"
	(cd "$work" && OSM_TMP_DIR=$dir OSM_CACHE_DIR=${OSM_CACHE:-$dir} LD_PRELOAD=$UMAD2SIM \
		timeout 90 opensm -o -D 0x43 -f "$dir/opensm.log" --dump_files_dir "$dir" "$@" \
		>"$dir/stdout" 2>&1 </dev/null) || {
		tail -20 "$dir/opensm.log" >&2
		fail "opensm $* failed"
	}
	[ -s "$dir/opensm-lfts.dump" ] || fail "opensm $* wrote no opensm-lfts.dump"
}
