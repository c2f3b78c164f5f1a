#!/usr/bin/env bash
# tools/quickstart.sh - the README's first command: install what is missing,
# build ibfab in ./build, and run `ibfab compare` on its built-in default (a
# 64 MiB ring allreduce beside an 8-to-1 incast on a 16-host HDR fat tree,
# over ib, roce, roce-lossy and tcp): it prints the table and leaves the
# chart in build/compare.svg. Extra arguments go to `ibfab compare`.
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$src/tools/install-deps.sh"
cmake -S "$src" -B "$src/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$src/build" -j"$(nproc)" >/dev/null
echo
# the chart goes into the build tree, not the user's current directory,
# unless the arguments say where (or that there is none)
plot=(--plot "$src/build/compare.svg")
for a in "$@"; do
	case $a in --plot|--plot=*|--no-plot) plot=() ;; esac
done
exec "$src/build/tools/ibfab" compare "${plot[@]}" "$@"
