#!/bin/bash
# outputs.sh - output files never destroy what is at their path
# (tools/cli_out.h): a regular file is replaced atomically and keeps its
# mode and owner; a character device or FIFO is written in place, never
# replaced; a symlink is followed and stays a link; directories, sockets
# and block devices are refused with nothing created; a FIFO nobody reads
# fails at once; every write is checked, standard output included; a run
# ended by SIGHUP, SIGQUIT or SIGTERM leaves nothing behind.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
cd "$tmp" || exit 1
RUN=(run --quiet --traffic p2p:src=h0,dst=h1,size=4KiB)
# one short run; its summary (stdout) is not what is tested
ibrun() { "$IBFAB" "${RUN[@]}" "$@" > /dev/null; }
ok() { echo "ok:   $*"; }
valid_json() { python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$1" 2>/dev/null; }
# nothing hidden (a staged temporary) left in a directory
no_tmp() { ! ls -A "$1" | grep -q 'ibfab-tmp'; }

# Every device written through ibfab is a private node in $tmp (as root):
# code that replaces what is at the path must fail this test, not break
# the machine's /dev/null or a disk. Without root, /dev/null and /dev/full
# (which an unprivileged rename cannot replace) and no block device.
if [ "$(id -u)" -eq 0 ] && mknod "$tmp/null" c 1 3 && mknod "$tmp/full" c 1 7 &&
	mknod "$tmp/blk" b 7 0 && (: > "$tmp/null") 2>/dev/null; then
	# (the last test: a file system mounted nodev refuses to open them)
	dev=$tmp/null full=$tmp/full blk=$tmp/blk
	chmod 666 "$dev" "$full"
else
	dev=/dev/null full=/dev/full blk=
fi

# --- a character device is written in place, never replaced ----------------
for opt in --json --timeline; do
	if [ "$opt" = --timeline ]; then
		"$IBFAB" run --quiet --trace "$IBFAB_SRC/tests/golden/perf_outputs/ring8.trace" \
			--timeline "$dev" > /dev/null 2> err
	else
		ibrun --json "$dev" 2> err
	fi
	rc=$?
	if [ "$rc" -ne 0 ] || [ ! -c "$dev" ]; then
		fail "$opt $dev: exit $rc, now $(stat -c %F "$dev"): $(cat err)"
	else
		ok "$opt $dev: written in place, still a character device"
	fi
done
if "$IBFAB" topo route "$IBFAB_SRC/tests/golden/ibnd-2sw2path4hca.topo" --lft-out "$dev" \
	> /dev/null 2> err && [ -c "$dev" ]; then
	ok "topo route --lft-out $dev"
else
	fail "topo route --lft-out $dev: $(cat err); now $(stat -c %F "$dev")"
fi
if "$IBFAB" topo dot "$IBFAB_SRC/tests/golden/ibnd-2sw2path4hca.topo" -o "$dev" 2> err &&
	[ -c "$dev" ]; then
	ok "topo dot -o $dev"
else
	fail "topo dot -o $dev: $(cat err); now $(stat -c %F "$dev")"
fi
[ -c /dev/null ] || fail "/dev/null is no longer a character device"
[ -c /dev/full ] || fail "/dev/full is no longer a character device"

# --- a device that cannot take the bytes: exit 1, said ----------------------
ibrun --json "$full" 2> err
rc=$?
if [ "$rc" -eq 1 ] && grep -q 'write error' err && [ -c "$full" ]; then
	ok "--json $full -> 1: $(cat err)"
else
	fail "--json $full: exit $rc: $(cat err); now $(stat -c %F "$full")"
fi

# --- standard output is checked ---------------------------------------------
for args in "run" "run --help" "topo --help" \
	"topo route $IBFAB_SRC/tests/golden/ibnd-2sw2path4hca.topo --lft-out -" "version"; do
	# shellcheck disable=SC2086
	"$IBFAB" $args > "$full" 2> err
	rc=$?
	if [ "$rc" -ne 0 ] && grep -q 'write error' err; then
		ok "ibfab $args > $full -> $rc"
	else
		fail "ibfab $args > $full: exit $rc, stderr: $(cat err)"
	fi
done

# --- a symlink is followed and stays a link; the mode is kept ---------------
mkdir links
echo old > links/run42.json
chmod 640 links/run42.json
ln -s run42.json links/latest.json
if ibrun --json links/latest.json 2> err && [ -L links/latest.json ] &&
	valid_json links/run42.json && [ "$(stat -c %a links/run42.json)" = 640 ] &&
	no_tmp links; then
	ok "--json through a symlink: the target rewritten (mode 640 kept), the link kept"
else
	fail "--json links/latest.json: $(cat err); $(ls -l links)"
fi
ln -s sub/../new.json links/dangling.json
if ibrun --json links/dangling.json 2> err; then
	fail "a dangling link through a missing directory was written"
else
	ok "a dangling link into a missing directory -> 1: $(cat err)"
fi
ln -s created.json links/dangling2.json
if ibrun --json links/dangling2.json 2> err && [ -L links/dangling2.json ] &&
	valid_json links/created.json; then
	ok "a dangling symlink: its target created, the link kept"
else
	fail "--json links/dangling2.json: $(cat err); $(ls -l links)"
fi
ln -s loop1 links/loop2
ln -s loop2 links/loop1
if ! ibrun --json links/loop1 2> err && grep -q 'symbolic links' err &&
	no_tmp links; then
	ok "a symlink loop is refused: $(cat err)"
else
	fail "a symlink loop: $(cat err)"
fi
# the owner of a file root replaces is kept
if [ "$(id -u)" -eq 0 ]; then
	echo old > owned.json
	chown nobody:nogroup owned.json && chmod 600 owned.json
	if ibrun --json owned.json 2> err &&
		[ "$(stat -c '%U %a' owned.json)" = "nobody 600" ] && valid_json owned.json; then
		ok "a file root rewrites keeps its owner and mode"
	else
		fail "owned.json: $(cat err); $(ls -l owned.json)"
	fi
fi

# --- a FIFO: fed when read, refused at once when nobody reads ---------------
mkfifo fifo
(timeout 20 cat fifo > fifo.out) &
reader=$!
sleep 0.3
ibrun --json fifo 2> err
rc=$?
wait $reader
if [ "$rc" -eq 0 ] && [ -p fifo ] && valid_json fifo.out; then
	ok "--json FIFO: the reader got the whole report, the FIFO stays"
else
	fail "--json FIFO: exit $rc: $(cat err); $(ls -l fifo)"
fi
timeout 20 "$IBFAB" "${RUN[@]}" --json fifo > /dev/null 2> err
rc=$?
if [ "$rc" -eq 1 ] && grep -q 'nobody reads' err && [ -p fifo ]; then
	ok "--json FIFO with no reader -> 1 at once: $(cat err)"
else
	fail "--json FIFO with no reader: exit $rc (124 is a hang): $(cat err)"
fi

# --- what is refused: nothing created, nothing removed ----------------------
mkdir refuse
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' refuse/sock
for target in refuse/sock refuse ${blk:+"$blk"}; do
	before=$(ls -A refuse | tr '\n' ' ')
	kind=$(stat -c %F "$target")
	ibrun --json "$target" 2> err
	rc=$?
	if [ "$rc" -eq 1 ] && [ "$(stat -c %F "$target")" = "$kind" ] &&
		[ "$(ls -A refuse | tr '\n' ' ')" = "$before" ]; then
		ok "--json $kind refused: $(cat err)"
	else
		fail "--json $target ($kind): exit $rc: $(cat err); now $(stat -c %F "$target")"
	fi
done

# --- signals: nothing half-made left ----------------------------------------
for sig in HUP QUIT TERM INT; do
	mkdir "sig$sig"
	(cd "sig$sig" && exec "$IBFAB" run --quiet --traffic alltoall:size=64MiB --json out.json \
		--csv csvdir > /dev/null 2>&1) &
	pid=$!
	# wait until the outputs are staged (the csv directory exists), then signal
	for _ in $(seq 100); do
		[ -d "sig$sig/csvdir" ] && break
		sleep 0.05
	done
	kill -"$sig" $pid 2>/dev/null
	wait $pid 2>/dev/null
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "SKIP: SIG$sig: the long run finished before it could be interrupted"
	elif [ -n "$(ls -A "sig$sig")" ]; then
		fail "SIG$sig: the interrupted run (exit $rc) left: $(ls -A "sig$sig")"
	else
		ok "SIG$sig (exit $rc) left nothing behind"
	fi
done

finish
