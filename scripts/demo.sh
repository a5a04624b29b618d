#!/usr/bin/env bash
# Runs the demo (the run_python specification's stage 3): set-up of what serving needs plus
# the MCP SDK client the demo talks through (scripts/setup.sh demo: idempotent), the normal
# build, then tests/e2e/demo.mjs, which starts build/cellgate with an HTTP listener on
# 127.0.0.1 and walks through an upload → analysis (a bug, then its fix) → charts → PDF
# report → artifacts → download flow. stdout is the demo's own narrative; set-up and build
# output go to stderr. Extra arguments go to `cellgate mcp` after --http-listen 127.0.0.1:0.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh demo >&2
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >&2
exec node tests/e2e/demo.mjs "$@"
