#!/usr/bin/env bash
# Applies the house style (.clang-format) to every C source and header in the repository;
# with --check, changes nothing and fails when a file differs (what .ci/run runs).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.c' '*.h')
if [ "${1:-}" = "--check" ]; then
  exec clang-format --dry-run --Werror "${files[@]}"
fi
exec clang-format -i "${files[@]}"
