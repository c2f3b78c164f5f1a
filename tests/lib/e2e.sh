# tests/lib/e2e.sh - sourced by the shell tests: checks $IBFAB, makes a
# temporary directory removed on exit, and counts failures. A test calls
# `fail MESSAGE` for each problem and ends with `finish`, which prints the
# count and exits non-zero if there was any.
set -u
: "${IBFAB:?IBFAB must name the ibfab binary}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
finish() {
	echo "$fails failure(s)"
	[ "$fails" -eq 0 ]
}
