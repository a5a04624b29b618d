#!/usr/bin/env bash
# `cellgate help` against what issue 25 found drifted: the MCP page's revisions, no sudo for
# a normal user, the listener's routes and their credentials, `help gateway`, and the
# defaults a normal user gets (their own state dir, never /var/lib/cellgate). Run as
# root, it also reads the help as the rootless tests' normal user (scripts/setup.sh test
# makes it; that part is skipped without one).
#   tests/docs/help.sh BINARY
set -uo pipefail
bin=$(realpath "${1:?usage: tests/docs/help.sh BINARY}")
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
has() { grep -qF -- "$2" <<<"$1" || fail "$3: no \"$2\""; }
hasnt() { ! grep -qF -- "$2" <<<"$1" || fail "$3: says \"$2\": $(grep -F -- "$2" <<<"$1" | head -1)"; }

mcp=$("$bin" help mcp) || fail "cellgate help mcp exits $?"
for revision in 2026-07-28 2025-11-25 2025-06-18 2025-03-26; do has "$mcp" "$revision" "help mcp"; done
hasnt "$mcp" "-- sudo" "help mcp (a normal user runs rootless, no sudo)"
for route in /mcp /files/ /api/ /metrics /admin; do has "$mcp" "$route" "help mcp's routes"; done
has "$mcp" "admin-token" "help mcp (the admin token's place)"

gateway=$("$bin" help gateway) || fail "cellgate help gateway exits $?"
has "$gateway" "--gateway-url=" "help gateway"
has "$gateway" "gateway-token" "help gateway"
overview=$("$bin" help) || fail "cellgate help exits $?"
has "$overview" "help gateway" "help (the overview names the gateway's page)"
hasnt "$overview" "unset by default" "help (a default said twice)"
for flag in --scripts-dir --log-dir; do
    line=$(grep -E "^  $flag " <<<"$overview")
    [ "$(grep -o 'default' <<<"$line" | wc -l)" -eq 1 ] || fail "help: $flag says its default more than once: $line"
done

user=${CELLGATE_TEST_USER:-cellgate-test}
if [ "$(id -u)" -eq 0 ] && id "$user" >/dev/null 2>&1; then
    home=$(getent passwd "$user" | cut -d: -f6)
    as_user=$(cd / && setpriv --reuid="$user" --regid="$user" --clear-groups env -i HOME="$home" PATH=/usr/bin:/bin "$bin" help)
    line=$(grep -E '^  --state-dir ' <<<"$as_user")
    has "$line" "$home/.local/state/cellgate" "help as $user: --state-dir"
    hasnt "$line" "/var/lib/cellgate" "help as $user: --state-dir"
    page=$(cd / && setpriv --reuid="$user" --regid="$user" --clear-groups env -i HOME="$home" PATH=/usr/bin:/bin "$bin" help gateway)
    has "$page" "$home/.local/state/cellgate/gateway-token" "help gateway as $user"
    hasnt "$page" "--allow-root" "help gateway as $user"
else
    echo "skipped: help as a normal user (not root, or no user $user)"
fi

[ "$fails" -eq 0 ] && echo "help: ok" || { echo "help: $fails failure(s)"; exit 1; }
