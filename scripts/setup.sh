#!/usr/bin/env bash
# Installs what cellgate needs on Debian 12 (run as root or with sudo). Safe to run again.
#   scripts/setup.sh [--dry-run] [serve|demo|test]
# serve: what building and serving need: build tools and libraries, the sandbox runtime,
#   the kernels' Debian packages (Python stack, Node.js, R), Jupyter Notebook for the gateway
#   and the JavaScript kernel's npm modules (scripts/run.sh).
# demo: serve, plus the MCP SDK client the demo talks through (scripts/demo.sh).
# test (the default): serve, plus the test tooling: the MCP SDK client, the MCP
#   conformance suite with its Node.js 22, jupyter_kernel_test, fuzzing and the format
#   check (scripts/test.sh, .ci/run).
# --dry-run prints what would be installed and why, and installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

dry_run=0
profile=test
for arg in "$@"; do
  case "$arg" in
    --dry-run) dry_run=1 ;;
    serve|demo|test) profile=$arg ;;
    *) echo "usage: scripts/setup.sh [--dry-run] [serve|demo|test]" >&2; exit 2 ;;
  esac
done

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

DEBS=(
  # build
  build-essential cmake pkg-config
  libzmq3-dev libczmq-dev libjansson-dev libsodium-dev libmicrohttpd-dev
  # the execution log's index (FTS5)
  libsqlite3-dev
  # the Docker backend's HTTP client: the Engine API over its unix socket (--backend docker)
  libcurl4-openssl-dev
  # the image budget's previews: decode, scale and encode PNG/JPEG
  libgd-dev
  # the Jupyter gateway's WebSocket framing (RFC 6455), and SHA-1 for its handshake
  libwslay-dev nettle-dev
  # the remote sandboxes' relay: the sandbox's seccomp profile compiled for its processes
  libseccomp-dev
  # sandbox: OCI runtimes, the container's init, mkfs.ext4 for the workspaces' file systems
  runc crun catatonit e2fsprogs
  # the kernel and what the sandboxed Python ships with
  python3 python3-ipykernel python3-jupyter-client python3-matplotlib python3-numpy
  python3-pandas python3-seaborn python3-scipy python3-openpyxl python3-reportlab
  # calculate: SymPy, run in a one-shot sandbox
  python3-sympy
  # install_package: pip in the sandbox
  python3-pip
  # the JavaScript kernel (tslab) runs on Node.js; npm installs it
  nodejs npm
  # the R kernel (IRkernel) and its data-analysis set (kernels/r)
  r-cran-irkernel r-cran-dplyr r-cran-readr r-cran-ggplot2 r-cran-tidyr r-cran-data.table
  # xeus-python: a kernel no code names, offered from its stock kernel spec
  # (/usr/share/jupyter/kernels/xpython) and added under another name by --kernelspecs in tests
  xpython
  # a Jupyter front end for the gateway: the `jupyter notebook --gateway-url=...` command
  # cellgate prints at start-up (jupyter-core is the `jupyter` command itself)
  jupyter-core jupyter-notebook
  # --egress proxy: squid, the audited proxy each server runs for itself (docs/egress.md)
  squid
)
TEST_DEBS=(
  # the wheels install_package's tests build and use
  python3-pip-whl python3-setuptools-whl python3-wheel
  # tests: curl (the n8n-style client), jupyter_kernel_test drives the kernels under ctest
  curl python3-jupyter-kernel-test
  # export_notebook's tests validate its notebooks with nbformat
  python3-nbformat
  # e2e_r's second client on a kernel's ipc sockets (pyzmq)
  python3-zmq
  # the Jupyter gateway's tests: real front ends (Jupyter Server and Notebook with
  # --gateway-url, nbclient), a WebSocket client, and Debian's Chromium for the browser test
  python3-jupyter-server python3-notebook python3-nbclient python3-websocket chromium
  # fuzzing: clang with libFuzzer and the sanitizer runtimes (tests/fuzz/run)
  clang libclang-rt-14-dev
  # the house style: .clang-format, checked by .ci/run (scripts/format.sh --check)
  clang-format
  # the Docker backend's tests: Podman's Docker-compatible service and the image it runs
  # (scripts/build-image.sh builds Dockerfile.kernel with it)
  podman
  # the sandbox image's base: a Debian 12 minbase made from the Debian mirror
  # (scripts/build-image.sh)
  debootstrap
  # the Docker backend's tests on the real Docker Engine (20.10): the tests start their own
  # dockerd on a private socket and data root (tests/e2e/dockerd.mjs); no system dockerd runs
  docker.io
  # tests/netlab: network namespaces and veth pairs (ip), the lab's test CA (openssl)
  iproute2 openssl
  # package_deb (tests/package/deb.sh): the .deb's tools (dpkg-shlibdeps), its man page
  # checked with groff; without them the test is skipped, not failed
  dpkg-dev groff-base
  # tests/bench (not the test command): instruction counts (valgrind --tool=callgrind:
  # bench_bridge, bench_wstrack) and system calls per cell (strace: bench_bridge)
  valgrind strace
  # the suite builds the same sources more than once (docs_newcomer builds a fresh clone):
  # CMakeLists.txt compiles through ccache when it is installed
  ccache
)
[ "$profile" = test ] && DEBS+=("${TEST_DEBS[@]}")

# npm modules: directory and why, each pinned by its lock file.
NPM_DIRS=(kernels/javascript)
NPM_WHY=("the JavaScript kernel (tslab); sandboxes see it read-only at /opt/cellgate/kernels/javascript")
if [ "$profile" = demo ] || [ "$profile" = test ]; then
  NPM_DIRS+=(tests/e2e)
  NPM_WHY+=("the demo's and the end-to-end tests' client: the official MCP TypeScript SDK")
fi
if [ "$profile" = test ]; then
  NPM_DIRS+=(tests/conformance tests/gateway)
  NPM_WHY+=("the official MCP conformance suite, with the Node.js 22 it needs (a 30 MB download)"
            "the Jupyter gateway's browser test: playwright-core driving Debian's chromium")
fi

say() { echo "setup ($profile): $*" >&2; }

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

if [ "$dry_run" -eq 1 ]; then
  say "Debian packages: ${DEBS[*]}"
  say "Debian packages not installed yet: ${missing[*]:-none}"
  for i in "${!NPM_DIRS[@]}"; do say "npm ci in ${NPM_DIRS[$i]}: ${NPM_WHY[$i]}"; done
  [ "$profile" = test ] && say "npm pack left-pad@1.3.0 into tests/e2e/npm-mirror: install_package's tests"
  [ "$profile" = test ] && say "useradd ${CELLGATE_TEST_USER:-cellgate-test} (when missing): the rootless backend's tests"
  exit 0
fi

# Debian's docker.io (and its containerd) start and enable system services when installed:
# a dockerd for the whole machine makes a docker0 bridge and iptables rules. The tests start
# their own dockerd (tests/e2e/dockerd.mjs), so docker.io is installed with no service started
# (a policy-rc.d that denies, unless the machine has its own) and its units are masked after.
services_off=()
if printf '%s\n' "${missing[@]}" | grep -qx docker.io; then
  services_off=(docker.service docker.socket containerd.service)
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    $SUDO sh -c 'printf "#!/bin/sh\n# cellgate setup.sh: no service starts while docker.io installs\nexit 101\n" > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d'
    trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  if command -v systemctl >/dev/null; then
    $SUDO systemctl mask "${services_off[@]}" >/dev/null 2>&1 || true
  fi
fi

if [ "${#missing[@]}" -gt 0 ]; then
  say "installing ${#missing[@]} Debian package(s): ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
  # Debian starts squid as a system service on port 3128; cellgate runs its own squid per
  # server and needs no proxy listening for the whole machine.
  if printf '%s\n' "${missing[@]}" | grep -qx squid && command -v systemctl >/dev/null; then
    $SUDO systemctl disable --now squid >/dev/null 2>&1 || true
  fi
  if [ "${#services_off[@]}" -gt 0 ]; then
    say "docker.io: no system dockerd or containerd (masked: ${services_off[*]}); the tests start their own"
    if command -v systemctl >/dev/null; then
      $SUDO systemctl mask "${services_off[@]}" >/dev/null 2>&1 || true
      [ -d /run/systemd/system ] && $SUDO systemctl stop "${services_off[@]}" >/dev/null 2>&1 || true
    fi
    for s in docker containerd; do
      [ -x /etc/init.d/$s ] && { $SUDO update-rc.d $s disable >/dev/null 2>&1 || true; }
    done
  fi
  if [ -e /usr/sbin/policy-rc.d ] && grep -q 'cellgate setup.sh' /usr/sbin/policy-rc.d; then
    $SUDO rm -f /usr/sbin/policy-rc.d
    trap - EXIT
  fi
fi

# npm packages, each pinned by its lock file; a stamp of the lock file skips a repeat.
# npm shows what it fetches (--loglevel=http) and its progress bar on a terminal.
# npm 11 runs no dependency's install script that package.json's allowScripts does not
# name, and warns about each: kernels/javascript denies zeromq's (it would build the addon
# from source; the prebuilt one in the package is what tslab loads), so nothing is left to
# approve and npm has nothing to warn about.
npm_install() {
  local dir=$1 why=$2 stamp="$1/node_modules/.cellgate-lock.sha256"
  [ -f "$dir/package-lock.json" ] || { echo "setup: $dir/package-lock.json is missing" >&2; exit 1; }
  if [ -f "$stamp" ] && sha256sum --status -c "$stamp" 2>/dev/null; then
    return 0
  fi
  say "npm ci in $dir: $why"
  (cd "$dir" && npm ci --no-audit --no-fund --progress=true --loglevel=http) >&2
  (cd "$dir" && sha256sum package-lock.json) | sed "s|  |  $dir/|" > "$stamp"
}
for i in "${!NPM_DIRS[@]}"; do npm_install "${NPM_DIRS[$i]}" "${NPM_WHY[$i]}"; done
# V8's code cache of TypeScript for the JavaScript kernel's start (kernels/javascript/
# cellgate-tslab.js; 0.2 s less per start), made again each time: it must match this Node.js.
say "V8 code cache of TypeScript in kernels/javascript/node_modules: the JavaScript kernel's start"
(cd kernels/javascript && node cellgate-tslab.js --make-code-cache) >&2

# The rootless backend's tests run as a normal user (tests/e2e/as-user.sh): one with no
# password, no sudo and no groups beyond its own, made once.
TEST_USER=${CELLGATE_TEST_USER:-cellgate-test}
if [ "$profile" = test ] && ! id "$TEST_USER" >/dev/null 2>&1; then
  say "useradd $TEST_USER: the rootless backend's tests run as this normal user"
  $SUDO useradd --create-home --shell /bin/bash --user-group "$TEST_USER"
fi

# A real npm package (pinned, no dependencies) for install_package's tests, packed into a
# git-ignored test mirror; kept when there already.
if [ "$profile" = test ]; then
  TEST_NPM_MIRROR=tests/e2e/npm-mirror
  TEST_NPM_PACKAGE=left-pad@1.3.0
  if [ ! -f "$TEST_NPM_MIRROR/left-pad-1.3.0.tgz" ]; then
    say "npm pack $TEST_NPM_PACKAGE into $TEST_NPM_MIRROR: install_package's tests"
    mkdir -p "$TEST_NPM_MIRROR"
    (cd "$TEST_NPM_MIRROR" && npm pack --loglevel=http "$TEST_NPM_PACKAGE" >/dev/null)
  fi
fi
