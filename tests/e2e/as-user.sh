#!/usr/bin/env bash
# Runs end-to-end test files as a normal user (the rootless backend's tests): a copy of what
# they need (the server binary, tests/e2e with its node_modules, kernels/) in a fresh
# directory under /tmp that the user can read, whatever the checkout's own permissions, then
# `node --test` on the named files there as that user, with a clean environment (HOME, PATH,
# TMPDIR, and any CELLGATE_* the caller set). Removes the copy afterwards.
#   tests/e2e/as-user.sh FILE.test.mjs...     (user: $CELLGATE_TEST_USER, else cellgate-test)
# Exits 77 (ctest's skip) when the user does not exist or this is not run as root.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
user=${CELLGATE_TEST_USER:-cellgate-test}
if [ "$(id -u)" != 0 ]; then
  echo "as-user: runs as root, to switch to $user" >&2
  exit 77
fi
if ! id "$user" >/dev/null 2>&1; then
  echo "as-user: there is no user $user (scripts/setup.sh test makes it)" >&2
  exit 77
fi
bin=${CELLGATE_BIN:-$repo/build/cellgate}
tmp=$(mktemp -d /tmp/cg-as-user.XXXXXX)
trap 'rm -rf -- "$tmp"' EXIT
chmod 755 "$tmp"
mkdir -p "$tmp/build" "$tmp/tests"
cp "$bin" "$tmp/build/cellgate"
# Hard links when /tmp is on the checkout's file system (node_modules are large), else copies.
cp -al "$repo/kernels" "$tmp/kernels" 2>/dev/null || cp -a "$repo/kernels" "$tmp/kernels"
cp -al "$repo/tests/e2e" "$tmp/tests/e2e" 2>/dev/null || cp -a "$repo/tests/e2e" "$tmp/tests/e2e"
chmod -R a+rX "$tmp"
home=$(getent passwd "$user" | cut -d: -f6)
env_args=(HOME="$home" USER="$user" PATH=/usr/local/bin:/usr/bin:/bin TMPDIR=/tmp LANG=C.UTF-8
          CELLGATE_BIN="$tmp/build/cellgate" CELLGATE_KERNELS_DIR="$tmp/kernels")
while IFS= read -r var; do env_args+=("$var"); done < <(env | grep -E '^CELLGATE_[A-Z_]+=' \
  | grep -v -E '^CELLGATE_(BIN|KERNELS_DIR)=' || true)
files=()
for f in "$@"; do files+=("$tmp/tests/e2e/$(basename "$f")"); done
cd "$tmp"
rc=0
setpriv --reuid "$user" --regid "$user" --init-groups env -i "${env_args[@]}" \
  node --test --test-reporter=spec "${files[@]}" || rc=$?
exit "$rc"
