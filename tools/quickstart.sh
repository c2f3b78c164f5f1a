#!/usr/bin/env bash
# tools/quickstart.sh - the README's first command: install what is missing,
# build ibfab in ./build, and run it on its built-in default (a 16-host
# HDR fat tree under a mixed load). Extra arguments go to `ibfab run`.
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$src/tools/install-deps.sh"
cmake -S "$src" -B "$src/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$src/build" -j"$(nproc)" >/dev/null
echo
exec "$src/build/tools/ibfab" run "$@"
