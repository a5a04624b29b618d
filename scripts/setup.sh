#!/usr/bin/env bash
# Installs everything cellgate needs on Debian 12 (run as root or with sudo):
# build tools and libraries, the sandbox runtime, the kernel's Python packages,
# and the npm packages the end-to-end tests use. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

DEBS=(
  # build
  build-essential cmake pkg-config
  libzmq3-dev libczmq-dev libjansson-dev libsodium-dev libmicrohttpd-dev
  # the execution log's index (FTS5)
  libsqlite3-dev
  # sandbox: OCI runtimes, the container's init, mkfs.ext4 for the workspaces' file systems
  runc crun catatonit e2fsprogs
  # the kernel and what the sandboxed Python ships with
  python3 python3-ipykernel python3-jupyter-client python3-matplotlib python3-numpy
  python3-pandas python3-seaborn python3-scipy python3-openpyxl python3-reportlab
  # the sandbox's Python offers sympy too (the tool descriptions say so)
  python3-sympy
  # install_package: pip in the sandbox, and the wheels the tests build and use
  python3-pip python3-pip-whl python3-setuptools-whl python3-wheel
  # tests (jupyter_kernel_test drives the kernels under ctest)
  nodejs npm curl python3-jupyter-kernel-test
  # fuzzing: clang with libFuzzer and the sanitizer runtimes (tests/fuzz/run)
  clang libclang-rt-14-dev
  # the house style: .clang-format, checked by .ci/run (scripts/format.sh --check)
  clang-format
)

missing=()
for p in "${DEBS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# A machine may carry a newer Node.js than Debian's; keep it.
if command -v node >/dev/null && command -v npm >/dev/null; then
  filtered=()
  for p in "${missing[@]}"; do
    case "$p" in nodejs|npm) ;; *) filtered+=("$p") ;; esac
  done
  missing=("${filtered[@]}")
fi
if [ "${#missing[@]}" -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# npm packages, each pinned by its lock file; a stamp of the lock file skips a repeat.
npm_install() {
  local dir=$1 stamp="$1/node_modules/.cellgate-lock.sha256"
  [ -f "$dir/package-lock.json" ] || { echo "setup: $dir/package-lock.json is missing" >&2; exit 1; }
  if [ -f "$stamp" ] && sha256sum --status -c "$stamp" 2>/dev/null; then
    return 0
  fi
  (cd "$dir" && npm ci --no-audit --no-fund --silent)
  (cd "$dir" && sha256sum package-lock.json) | sed "s|  |  $dir/|" > "$stamp"
}
# The JavaScript kernel (tslab); sandboxes see it read-only at /opt/cellgate/kernels/javascript.
npm_install kernels/javascript
# The end-to-end tests' client: the official MCP TypeScript SDK.
npm_install tests/e2e
# The official MCP conformance suite, with the Node.js 22 it needs (from npm).
npm_install tests/conformance
# A real npm package (pinned, no dependencies) for install_package's tests, packed into a
# git-ignored test mirror; kept when there already.
TEST_NPM_MIRROR=tests/e2e/npm-mirror
TEST_NPM_PACKAGE=left-pad@1.3.0
if [ ! -f "$TEST_NPM_MIRROR/left-pad-1.3.0.tgz" ]; then
  mkdir -p "$TEST_NPM_MIRROR"
  (cd "$TEST_NPM_MIRROR" && npm pack --silent "$TEST_NPM_PACKAGE" >/dev/null)
fi
