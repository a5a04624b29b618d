#!/usr/bin/env bash
# Runs the seed 004 demo: set-up (idempotent), the normal build, then tests/e2e/demo.mjs,
# which starts build/cellgate with an HTTP listener on 127.0.0.1 and walks through an
# upload → analysis (a bug, then its fix) → charts → PDF report → artifacts → download flow.
# Extra arguments go to `cellgate mcp` after --http-listen 127.0.0.1:0.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null && cmake --build build -j"$(nproc)"
exec node tests/e2e/demo.mjs "$@"
