#!/usr/bin/env bash
# Sets everything up (Debian packages, npm modules, build) and serves MCP on stdio.
# Extra arguments go to `cellgate mcp` (see `build/cellgate --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh >&2
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >&2
exec build/cellgate mcp "$@"
