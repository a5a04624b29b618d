#!/usr/bin/env bash
# Runs the tests. With no argument, the whole suite (what CI runs, .ci/run): set-up with the
# test tooling (scripts/setup.sh test: idempotent), the normal build with every ctest test in
# parallel (unit + end-to-end against real runc sandboxes, ipykernel and the MCP TypeScript
# SDK client), then the unit tests again under ASan/UBSan (the fuzz build's), then a bounded
# fuzzing run.
#   scripts/test.sh [full]          the whole suite
#   scripts/test.sh quick           incremental build, then the unit tests and fuzz replays
#   scripts/test.sh e2e [FILE...]   build, then the named tests/e2e files (all e2e tests without)
#   scripts/test.sh --help          these modes and how to run one test
# Settings: CELLGATE_TEST_JOBS (ctest -j in full and e2e; default 2 per core: e2e tests
# mostly wait on sandboxes, and the CPU-bound ones take the cpu lock, tests/CMakeLists.txt), CELLGATE_FUZZ_SECONDS (per fuzz target, default 10) and
# CELLGATE_FUZZ_JOBS (targets fuzzed at once, default the number of cores).
set -euo pipefail
cd "$(dirname "$0")/.."
cores=$(nproc)
jobs=${CELLGATE_TEST_JOBS:-$((cores * 2))}

usage() {
  cat <<'EOF'
scripts/test.sh [full]          the whole suite, as CI runs it (set-up, build, every ctest test
                                in parallel, the ASan/UBSan build's tests, a bounded fuzz run)
scripts/test.sh quick           incremental build, then ctest -L 'unit|replay' -LE slow -j
scripts/test.sh e2e [FILE...]   build, then tests/e2e files against build/cellgate (FILE: basic,
                                basic.test.mjs or tests/e2e/basic.test.mjs; none: ctest -L e2e)

One test (after a build, from the repository root):
  (cd build && ctest -R '^unit_tools$' --output-on-failure)        one ctest test by name
  (cd build && ctest -N -L gateway)                                 list the tests of a label
  CELLGATE_BIN=$PWD/build/cellgate node --test tests/e2e/basic.test.mjs
                                                                    one e2e file (root, runc)
  CELLGATE_BIN=$PWD/build/cellgate node --test --test-name-pattern 'stdin' tests/e2e/basic.test.mjs
                                                                    the cases whose name matches
  tests/e2e/as-user.sh basic.test.mjs                              one file on the rootless backend
  tests/fuzz/run 20 wire                                            fuzz one target for 20 s
Labels: unit replay e2e root rootless docker gateway browser conformance kernel slow
(tests/CMakeLists.txt says what each means).
EOF
}

# Prints how long the stage that started at $stage_start took and how busy the machine's
# CPUs were meanwhile (from /proc/stat: what tells a CPU-bound stage from one that waits),
# and starts the next one.
cpu_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $5 + $6 }' /proc/stat; }
stage_start=$SECONDS
read -r stage_busy stage_idle < <(cpu_ticks)
stage_done() {
  local busy idle
  read -r busy idle < <(cpu_ticks)
  busy=$((busy - stage_busy))
  idle=$((idle - stage_idle))
  echo "test.sh: $1: $((SECONDS - stage_start)) s, CPUs $((100 * busy / (busy + idle + 1)))% busy" >&2
  stage_start=$SECONDS
  stage_busy=$((stage_busy + busy))
  stage_idle=$((stage_idle + idle))
}

build() {
  [ -f build/CMakeCache.txt ] || cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build -j"$cores"
}

mode=${1:-full}
[ "$#" -gt 0 ] && shift
case "$mode" in
  -h | --help | help)
    usage
    exit 0
    ;;
  quick)
    build
    (cd build && ctest -L 'unit|replay' -LE slow -j"$cores" --output-on-failure)
    exit 0
    ;;
  e2e)
    build
    if [ "$#" -eq 0 ]; then
      (cd build && ctest -L e2e -j"$jobs" --output-on-failure --timeout 600)
      exit 0
    fi
    files=()
    for f in "$@"; do
      name=$(basename "$f")
      name=${name%.mjs}
      name=${name%.test}
      [ -f "tests/e2e/$name.test.mjs" ] || { echo "test.sh: no tests/e2e/$name.test.mjs" >&2; exit 2; }
      files+=("tests/e2e/$name.test.mjs")
    done
    CELLGATE_BIN=${CELLGATE_BIN:-$PWD/build/cellgate} exec node --test --test-reporter=spec "${files[@]}"
    ;;
  full) ;;
  *)
    usage >&2
    exit 2
    ;;
esac

./scripts/setup.sh test
stage_done "set-up"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$cores"
stage_done "build"
# The sandbox image (Dockerfile.kernel, e2e_image): built once, cached in podman's storage.
scripts/build-image.sh >/dev/null
stage_done "sandbox image"

# The sanitized build runs (niced) while the normal tests run; its output goes to
# build/side-builds.log, shown if it fails. One build serves both the unit tests under ASan
# and UBSan and the fuzzing: tests/fuzz/run's (clang, ASan + UBSan, libFuzzer's coverage),
# which builds the unit tests and corpus replays too (CMakeLists.txt, CELLGATE_SANITIZED).
side_log=$PWD/build/side-builds.log
(
  set -e
  CELLGATE_FUZZ_BUILD_ONLY=1 nice -n 10 tests/fuzz/run
) >"$side_log" 2>&1 &
side=$!

rc=0
(cd build && ctest --output-on-failure --timeout 600 -j"$jobs") || rc=$?
stage_done "ctest -j$jobs"
side_rc=0
wait "$side" || side_rc=$?
stage_done "waiting for the sanitized build"
if [ "$side_rc" -ne 0 ]; then
  echo "test.sh: the sanitized (ASan/UBSan, fuzz) build failed (exit $side_rc):" >&2
  tail -50 "$side_log" >&2
fi
[ "$rc" -eq 0 ] && [ "$side_rc" -eq 0 ] || exit 1

(cd build-fuzz && ctest --output-on-failure --timeout 300 -j"$cores")
stage_done "ASan/UBSan ctest"

# The sanitized server itself under end-to-end tests that bound no memory (ASan's quarantine
# makes RSS meaningless): hostile protocol input, stdin's end, the work kept off the loop. A
# sanitizer report ends the server with exit 1, which these tests see.
CELLGATE_BIN=$PWD/build-fuzz/cellgate node --test --test-concurrency="$cores" \
  tests/e2e/corpus_protocol.test.mjs tests/e2e/corpus_mcp_eof.test.mjs tests/e2e/loop.test.mjs
stage_done "ASan/UBSan server e2e"

# A bounded fuzzing run (libFuzzer with clang, ASan + UBSan): every target in tests/fuzz for
# CELLGATE_FUZZ_SECONDS (10) each (16 targets: about 120 s on 2 cores with their start-up; the R kernel's tests took the rest), as many at once as there are cores, failing on any crash.
CELLGATE_FUZZ_JOBS=${CELLGATE_FUZZ_JOBS:-$cores} tests/fuzz/run "${CELLGATE_FUZZ_SECONDS:-10}"
stage_done "fuzzing"

echo "all tests passed"
