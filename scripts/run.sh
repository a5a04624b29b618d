#!/usr/bin/env bash
# Sets up what serving needs (Debian packages for the build, the server and the sandbox;
# the JavaScript kernel's npm modules: scripts/setup.sh serve), builds, and serves MCP on
# stdio. Extra arguments go to `cellgate mcp` (see `build/cellgate help mcp`).
#   scripts/run.sh --dry-run   prints what it would install, installs and runs nothing
# The test tooling (the MCP SDK client, the conformance suite and its Node.js 22) is
# scripts/test.sh's to install.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --dry-run ]; then
  exec ./scripts/setup.sh --dry-run serve
fi
# stdout is the MCP channel: everything else goes to stderr.
./scripts/setup.sh serve >&2
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >&2
exec build/cellgate mcp "$@"
