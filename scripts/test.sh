#!/usr/bin/env bash
# Runs the whole test suite: set-up with the test tooling (scripts/setup.sh test:
# idempotent), the normal build with every ctest test (unit + end-to-end against real runc
# sandboxes, ipykernel and the MCP TypeScript SDK client), then the unit tests again under
# ASan/UBSan, then a bounded fuzzing run.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh test
jobs=$(nproc)

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
# The sandbox image (Dockerfile.kernel, e2e_image): built once, cached in podman's storage.
scripts/build-image.sh >/dev/null
(cd build && ctest --output-on-failure --timeout 600)

cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCELLGATE_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs"
(cd build-asan && ctest --output-on-failure --timeout 300)

# A bounded fuzzing run (libFuzzer with clang, ASan + UBSan): every target in tests/fuzz for
# 55 s (12 targets: about 12 minutes with the build), failing on any crash.
tests/fuzz/run "${CELLGATE_FUZZ_SECONDS:-55}"

echo "all tests passed"
