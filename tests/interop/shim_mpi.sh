#!/usr/bin/env bash
# tests/interop/shim_mpi.sh - an MPI program on the fabric: Debian's Open MPI
# (openmpi-bin) over UCX, unmodified, started as a user does,
#   ibfab exec -- mpirun -np 4 ./mpi_allreduce
# on one simulated HDR switch (star-6): each rank attaches as the host of
# its number (h0..h3, from OMPI_COMM_WORLD_RANK). The program
# (tests/mpi/mpi_allreduce.c, built here with mpicc) sweeps MPI_Allreduce
# from 64 B to 1 MiB with Open MPI's ring algorithm, checks every element
# on every rank, and MPI_Finalize returns. Its times, against the
# collective replay of the same ring allreduce (`ibfab run --trace`,
# allreduce SIZE algo=ring over the same 4 hosts):
#  - never faster than the replay (at least 0.97 of it): the replay is the
#    fabric moving the ring's transfers with nothing added;
#  - within 10% where the replay's transfers are what UCX sends (64 B to
#    16 KiB: one eager message per ring step, inline up to the 123 bytes
#    of room a ConnectX gives UCX's QPs, 115 of them data). Above, UCX's
#    rendezvous (a request, an RDMA READ, an acknowledgement per step)
#    costs round trips the replay does not make: reported, bounded by 2x
#    (docs/shim.md, "MPI").
. "$IBFAB_SRC/tests/lib/e2e.sh"
. "$IBFAB_SRC/tests/shim/lib.sh"
need mpirun mpicc
topo="$IBFAB_SRC/topologies/examples/star-6.net"
prog="$tmp/mpi_allreduce"
mpicc -O2 -o "$prog" "$IBFAB_SRC/tests/mpi/mpi_allreduce.c" 2>"$tmp/cc.err" ||
	{ fail "mpicc: $(cat "$tmp/cc.err")"; finish; exit; }

start_daemon "$topo" || { finish; exit; }
export UCX_NET_DEVICES=ibfab0:1 UCX_TLS=rc_verbs,ud_verbs,self UCX_WARN_UNUSED_ENV_VARS=n
timeout 300 "$IBFAB" exec -- mpirun --allow-run-as-root --oversubscribe -np 4 \
	--mca pml ucx --mca btl ^vader,openib,uct -x UCX_NET_DEVICES -x UCX_TLS \
	-x UCX_WARN_UNUSED_ENV_VARS --mca coll_tuned_use_dynamic_rules 1 \
	--mca coll_tuned_allreduce_algorithm 4 "$prog" >"$tmp/mpi.out" 2>"$tmp/mpi.err"
rc=$?
stop_daemon
fin=$(grep -c '^finalized [0-3]$' "$tmp/mpi.out")
[ "$rc" -eq 0 ] || fail "mpirun: exit $rc: $(tail -5 "$tmp/mpi.err")"
[ "$fin" = 4 ] || fail "MPI_Finalize returned on $fin of 4 ranks: $(tail -3 "$tmp/mpi.out")"
sizes=$(awk '$1 == "allreduce" { print $2 }' "$tmp/mpi.out")
[ "$(echo $sizes)" = "64 256 1024 4096 16384 65536 262144 1048576" ] ||
	fail "sizes printed: $(echo $sizes)"

for s in $sizes; do
	mpi=$(awk -v s="$s" '$1 == "allreduce" && $2 == s { print $3 }' "$tmp/mpi.out")
	printf 'ranks 4\nhost 0 h0\nhost 1 h1\nhost 2 h2\nhost 3 h3\nallreduce %s algo=ring\n' "$s" \
		>"$tmp/ar.trace"
	"$IBFAB" run --reproducible --topo "$topo" --trace "$tmp/ar.trace" --json "$tmp/ar.json" \
		>/dev/null 2>"$tmp/run.err" || { fail "ibfab run $s: $(cat "$tmp/run.err")"; continue; }
	rep=$(python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))["collectives"][0]
print("%.3f" % ((c["end_ps"] - c["start_ps"]) / 1e6))' "$tmp/ar.json")
	ratio=$(awk -v a="$mpi" -v b="$rep" 'BEGIN { printf "%.3f", a / b }')
	echo "allreduce $s B: MPI over UCX $mpi us, replay $rep us, ratio $ratio"
	awk -v r="$ratio" 'BEGIN { exit !(r >= 0.97 && r <= 2) }' ||
		fail "$s B: MPI $mpi us against the replay's $rep us (ratio $ratio, want 0.97..2)"
	case $s in
	64|256|1024|4096|16384)
		awk -v r="$ratio" 'BEGIN { exit !(r <= 1.10) }' ||
			fail "$s B: MPI $mpi us not within 10% of the replay's $rep us" ;;
	esac
done
finish
