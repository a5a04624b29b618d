#!/usr/bin/env bash
# Set-up honesty (issue 25): what each profile installs, from scripts/setup.sh --dry-run
# (nothing is installed). serve brings the `jupyter notebook` command the server prints;
# demo is serve plus the MCP SDK client, without the test tooling (the conformance suite and
# its Node.js 22, playwright, a test user, the test mirror); scripts/demo.sh keeps set-up and
# build output off its stdout, which is the demo's narrative; npm has no install script
# left to ask the user about.
#   tests/docs/setup.sh [REPO_ROOT]
set -uo pipefail
cd "${1:-$(dirname "$0")/../..}" || exit 2
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

serve=$(scripts/setup.sh --dry-run serve 2>&1) || fail "setup.sh --dry-run serve exits $?"
for deb in jupyter-core jupyter-notebook; do
    grep -q "Debian packages:.* $deb\b" <<<"$serve" || fail "serve does not install $deb (the printed jupyter command)"
done
demo=$(scripts/setup.sh --dry-run demo 2>&1) || fail "setup.sh --dry-run demo exits $?: $demo"
grep -q "npm ci in tests/e2e" <<<"$demo" || fail "demo does not install the MCP SDK client (tests/e2e)"
for extra in tests/conformance tests/gateway useradd npm-mirror chromium clang podman; do
    ! grep -q -- "$extra" <<<"$demo" || fail "demo installs test tooling: $(grep -- "$extra" <<<"$demo" | head -1)"
done
# Every command of scripts/demo.sh before the demo itself sends its output to stderr or
# nowhere.
while IFS= read -r line; do
    case "$line" in
        '#'* | '' | 'set '* | 'cd '* | 'exec node '*) ;;
        *'>&2' | *'>/dev/null') ;;
        *) fail "scripts/demo.sh: a command whose output goes to the demo's stdout: $line" ;;
    esac
done <scripts/demo.sh
grep -q '^exec node tests/e2e/demo.mjs' scripts/demo.sh || fail "scripts/demo.sh does not end in the demo"

# npm 11 warns at every `npm ci` about dependencies' install scripts package.json's
# allowScripts does not cover: the JavaScript kernel's leave none to review.
if [ -d kernels/javascript/node_modules ] && npm help install-scripts >/dev/null 2>&1; then
    scripts=$(cd kernels/javascript && npm install-scripts ls 2>&1)
    grep -q "No packages with unreviewed install scripts" <<<"$scripts" ||
        fail "kernels/javascript: npm warns about install scripts: $scripts"
else
    echo "skipped: npm install-scripts (no kernels/javascript/node_modules, or an npm without it)"
fi

[ "$fails" -eq 0 ] && echo "setup: ok" || { echo "setup: $fails failure(s)"; exit 1; }
