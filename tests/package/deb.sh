#!/usr/bin/env bash
# The Debian package, end to end (ctest package_deb, labels package;root):
#   - scripts/package.sh builds it; dpkg-deb -f/-c/-I say what it is and holds (name, version,
#     the libraries' packages and the sandboxes' in Depends, the binary, kernels with tslab's
#     modules, man page, changelog, both units, the maintainer scripts, nothing outside /usr);
#     the man page is clean roff naming every option `cellgate help --markdown` lists;
#   - apt-get installs it into a fresh Debian 12 root (podman runs the root as an overlay,
#     privileged, so runc works inside): `cellgate --version`, /etc/cellgate/token 0600 root's,
#     systemd-analyze verify silent on both units, `cellgate mcp` on stdio answering initialize
#     and tools/list with the version and running Python and bash in sandboxes;
#   - the root then boots systemd as its PID 1 (podman --systemd=always): `systemctl enable
#     --now cellgate` serves MCP on loopback with the token (401 without it), runs Python,
#     JavaScript and bash under the unit's hardening, logs to the journal, and stops; then a
#     normal user's manager runs the user unit (rootless backend, the user's own token file)
#     and it does the same; purging the package stops the service and removes the token.
# The fresh root is a debootstrap minbase from this machine's apt mirror (as
# scripts/build-image.sh makes its base), cached in /var/lib/cellgate/package-test with a
# stamp; apt's downloads are cached beside it. Needs root, podman, debootstrap.
#   tests/package/deb.sh BUILD_DIR
set -euo pipefail
build=$(realpath "${1:?BUILD_DIR}")
cd "$(dirname "$0")/../.."
say() { echo "package test: $*" >&2; }
fail() { echo "package test: FAIL: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { say "skipped: needs root (debootstrap, podman)"; exit 77; }
for tool in podman debootstrap dpkg-deb groff; do
  command -v "$tool" >/dev/null || { say "skipped: $tool is not installed"; exit 77; }
done

CACHE=/var/lib/cellgate/package-test
ROOT=$CACHE/bookworm
ARCHIVES=$CACHE/apt-archives
PODMAN=(podman --runtime runc --cgroup-manager cgroupfs)
# podman's default rlimits (and the host's own hard ones) are refused where this process may
# not raise a limit (no CAP_SYS_RESOURCE); lower ones are not.
ULIMITS=(--ulimit nofile=8192:8192 --ulimit nproc=8192:8192)

# The Debian mirror of this machine's apt sources (deb822 or one-line), never a fixed host.
mirror=$(sed -n -E 's/^URIs:[[:space:]]*([^[:space:]]+).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null \
           | grep -v security | head -1 || true)
[ -n "$mirror" ] || mirror=$(sed -n -E 's/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+)[[:space:]]+bookworm[[:space:]].*/\2/p' \
                               /etc/apt/sources.list 2>/dev/null | head -1 || true)
[ -n "$mirror" ] || fail "no Debian mirror found in /etc/apt/sources.list(.d)"

# The fresh root, made once per mirror and per this part of the script.
stamp=$(printf '%s\n%s\n' "$mirror" "$(sed -n '/^# The fresh root, made once/,/^# end of the fresh root/p' "$0")" | sha256sum | cut -c1-16)
if [ "$(cat "$ROOT/.cellgate-stamp" 2>/dev/null || true)" != "$stamp" ]; then
  say "debootstrap bookworm (minbase) from $mirror into $ROOT"
  rm -rf -- "$ROOT.new"
  mkdir -p "$CACHE"
  debootstrap --variant=minbase bookworm "$ROOT.new" "$mirror" >&2
  rm -rf "$ROOT.new/var/cache/apt/archives/"*.deb "$ROOT.new/var/lib/apt/lists/"*
  echo "$stamp" > "$ROOT.new/.cellgate-stamp"
  rm -rf -- "$ROOT"
  mv -- "$ROOT.new" "$ROOT"
fi
mkdir -p "$ARCHIVES/partial"
# end of the fresh root

# The package, built by the project's own script (a Release build in build/package).
out=$build/package-test
say "scripts/package.sh --out $out"
deb=$(scripts/package.sh --out "$out")
version=$(scripts/version.sh)
[ "$(basename "$deb")" = "cellgate_${version}_amd64.deb" ] || fail "package name $(basename "$deb"), want cellgate_${version}_amd64.deb"

# What it says of itself and what it holds.
field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = cellgate ] || fail "Package: $(field Package)"
[ "$(field Version)" = "$version" ] || fail "Version: $(field Version), want $version"
[ "$(field Architecture)" = amd64 ] || fail "Architecture: $(field Architecture)"
depends=$(field Depends)
for pkg in libzmq5 libczmq4 libjansson4 libsodium23 libmicrohttpd12 libsqlite3-0 libcurl4 libwslay1 \
           libgd3 libnettle8 'runc | crun' catatonit e2fsprogs python3-ipykernel; do
  [[ ", $depends," == *", $pkg"[\ ,]* ]] || fail "Depends lacks $pkg: $depends"
done
contents=$(dpkg-deb -c "$deb" | awk '{print $6}')
for path in ./usr/bin/cellgate ./usr/share/man/man1/cellgate.1.gz ./usr/share/doc/cellgate/changelog.gz \
            ./usr/lib/systemd/system/cellgate.service ./usr/lib/systemd/user/cellgate.service \
            ./usr/share/cellgate/kernels/python/kernel.json ./usr/share/cellgate/kernels/javascript/kernel.json \
            ./usr/share/cellgate/kernels/javascript/node_modules/tslab/package.json; do
  grep -qxF "$path" <<<"$contents" || fail "the package has no $path"
done
outside=$(grep -v -e '^\./$' -e '^\./usr/' -e '^\./usr$' <<<"$contents" || true)
[ -z "$outside" ] || fail "files outside /usr: $outside"
! grep -q '^\./usr/local' <<<"$contents" || fail "files in /usr/local"
for script in postinst prerm postrm; do
  dpkg-deb -I "$deb" "$script" >/dev/null || fail "no $script"
done
grep -q 'cellgate runs untrusted code' <<<"$(dpkg-deb -I "$deb")" || fail "no description"

# The man page: clean roff, naming every option of the binary's own table.
man=$(dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/share/man/man1/cellgate.1.gz | gunzip)
warnings=$(groff -man -ww -z <<<"$man" 2>&1)
[ -z "$warnings" ] || fail "groff warns on cellgate.1: $warnings"
grep -q "^\.TH CELLGATE 1 .*cellgate ${version//./\\.}" <<<"$man" || fail "cellgate.1 names no version $version"
flags=$("$build/package/cellgate" help --markdown | sed -n -E 's/^\| `(--[a-z0-9-]+)` \|.*/\1/p')
[ "$(wc -l <<<"$flags")" -gt 40 ] || fail "cellgate help --markdown lists few options: $flags"
for flag in $flags; do
  grep -q "^\.B ${flag//-/\\\\-}" <<<"$man" || fail "cellgate.1 lacks $flag"
done
changelog=$(dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/share/doc/cellgate/changelog.gz | gunzip)
grep -q '^## \[' <<<"$changelog" || fail "changelog.gz is not the CHANGELOG"
say "dpkg-deb: $(basename "$deb") ($(du -h "$deb" | cut -f1)), Depends and contents as expected; cellgate.1 names $(wc -l <<<"$flags") options"

# The packages the package needs (and systemd, man-db, nodejs; dbus and libpam-systemd for a user manager), installed once into a copy of
# the fresh root, per the package's Depends: `apt-get install ./cellgate_*.deb` there, then
# `dpkg --purge cellgate`, which leaves them. A run then installs the package itself on an
# overlay of that copy (apt-get still resolves its Depends); unpacking Python and Node.js
# would otherwise take most of the test's time.
EXTRA="systemd man-db nodejs dbus libpam-systemd"
deps_key=$(printf '%s\n%s\n%s\n' "$stamp" "$depends" "$EXTRA" | sha256sum | cut -c1-16)
DEPS=$CACHE/deps-$deps_key
prepare='set -e
export DEBIAN_FRONTEND=noninteractive
echo force-unsafe-io >/etc/dpkg/dpkg.cfg.d/unsafe-io
echo "man-db man-db/auto-update boolean false" | debconf-set-selections
apt-get update -q >/dev/null'
if [ ! -f "$DEPS/.cellgate-deps" ]; then
  say "installing the package's dependencies into $DEPS (once per Depends)"
  rm -rf -- "$DEPS.new"
  cp -a "$ROOT" "$DEPS.new"
  "${PODMAN[@]}" run --rm "${ULIMITS[@]}" --network host -v "$out:/deb:ro" -v "$ARCHIVES:/var/cache/apt/archives" \
    --rootfs "$DEPS.new" /bin/bash -c "$prepare
apt-get install -y -q --no-install-recommends /deb/$(basename "$deb") $EXTRA >/tmp/apt.log 2>&1 || { tail -30 /tmp/apt.log; exit 1; }
dpkg --purge cellgate >/dev/null
rm -rf /var/lib/apt/lists/* /tmp/apt.log" >&2 || fail "installing the dependencies"
  touch "$DEPS.new/.cellgate-deps"
  find "$CACHE" -maxdepth 1 -name 'deps-*' ! -name '*.new' -exec rm -rf -- {} +   # earlier Depends' copies
  mv -- "$DEPS.new" "$DEPS"
fi

# One fresh overlay of the root: the package installed with apt-get (its Depends resolved from
# the mirror; systemd, man-db and nodejs beside it), a drop-in giving the system unit a free
# port (the container shares the host's network, for the mirror), then systemd as PID 1.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
boot="$prepare"'
apt-get install -y -q --no-install-recommends /deb/'"$(basename "$deb") $EXTRA"' \
  >/var/log/cellgate-test-apt.log 2>&1 || { tail -30 /var/log/cellgate-test-apt.log; exit 1; }
echo "installed: $(dpkg-query -W -f="\${Version}" cellgate) in ${SECONDS}s" >/var/log/cellgate-test-installed
mkdir -p /etc/systemd/system/cellgate.service.d
printf "[Service]\nEnvironment=CELLGATE_HTTP=127.0.0.1:'"$port"'\n" >/etc/systemd/system/cellgate.service.d/port.conf
exec /lib/systemd/systemd'
say "installing into a fresh Debian 12 root (apt-get install ./$(basename "$deb")), then booting systemd there"
cid=$("${PODMAN[@]}" run -d --systemd=always --privileged "${ULIMITS[@]}" --network host \
  -v "$out:/deb:ro" -v "$ARCHIVES:/var/cache/apt/archives" -v "$PWD/tests/package:/test:ro" \
  --rootfs "$DEPS:O" /bin/bash -c "$boot")
trap 'rc=$?; [ "$rc" = 0 ] || podman logs "$cid" 2>&1 | tail -40 >&2; podman rm -f -t 10 "$cid" >/dev/null 2>&1 || true' EXIT
in_ct() { podman exec "$cid" "$@"; }
for _ in $(seq 1200); do
  in_ct test -S /run/systemd/private 2>/dev/null && break
  [ "$(podman inspect -f '{{.State.Running}}' "$cid")" = true ] || fail "the container stopped before systemd ran"
  sleep 0.5
done
installed=$(in_ct cat /var/log/cellgate-test-installed) || fail "apt-get install did not finish"
say "$installed"
[[ "$installed" == "installed: $version in "* ]] || fail "dpkg says another version: $installed"

# The package as installed: the binary, the token, the units, and cellgate mcp on stdio.
[ "$(in_ct cellgate --version)" = "cellgate $version" ] || fail "cellgate --version in the root: $(in_ct cellgate --version)"
token=$(in_ct stat -c "%a %U %s" /etc/cellgate/token)
[ "$token" = "600 root 65" ] || fail "/etc/cellgate/token is not 64 hex digits, 0600, root's: $token"
verify=$(in_ct systemd-analyze verify /usr/lib/systemd/system/cellgate.service 2>&1)
[ -z "$verify" ] || fail "systemd-analyze verify cellgate.service: $verify"
verify=$(in_ct sh -c 'mkdir -p -m 0700 /run/user/0 && XDG_RUNTIME_DIR=/run/user/0 systemd-analyze --user verify /usr/lib/systemd/user/cellgate.service' 2>&1)
[ -z "$verify" ] || fail "systemd-analyze --user verify of the user unit: $verify"
mcp=$(in_ct sh -c 'python3 /test/mcp_client.py stdio python,bash -- cellgate mcp --http-listen off 2>/tmp/mcp.log' ) \
  || { in_ct tail -30 /tmp/mcp.log >&2; fail "cellgate mcp on stdio in the root"; }
python3 - "$mcp" "$version" <<'PY' || { in_ct tail -30 /tmp/mcp.log >&2; fail "cellgate mcp on stdio in the root"; }
import json, sys
out, version = json.loads(sys.argv[1]), sys.argv[2]
assert out["server"]["name"] == "cellgate" and out["server"]["version"] == version, out["server"]
assert "execute_code" in out["tools"] and "start_session" in out["tools"], out["tools"]
for language, run in out["runs"].items():
    assert run["status"] == "success" and run["stdout"].strip() == "42", (language, run)
print("package test: cellgate mcp on stdio: serverInfo %s, %d tools, python and bash ran" % (version, len(out["tools"])), file=sys.stderr)
PY
say "installed: --version, a 0600 token, both units verified"

# The system unit under systemd.
state=$(in_ct timeout 120 systemctl is-system-running --wait || true)
say "systemd in the root: $state"
[ "$state" = running ] || [ "$state" = degraded ] || fail "systemd did not come up: $state"
in_ct systemctl enable --now cellgate.service || { in_ct journalctl -u cellgate --no-pager | tail -40 >&2; fail "systemctl enable --now cellgate"; }
for _ in $(seq 300); do
  in_ct journalctl -u cellgate --no-pager 2>/dev/null | grep -q "listening on http://127.0.0.1:$port/" && break
  [ "$(in_ct systemctl show cellgate -p NRestarts --value)" = 0 ] || break
  [ "$(in_ct systemctl is-active cellgate || true)" != failed ] || break
  sleep 0.2
done
journal=$(in_ct journalctl -u cellgate --no-pager)
grep -q "listening on http://127.0.0.1:$port/" <<<"$journal" || { echo "$journal" >&2; fail "the unit did not serve on 127.0.0.1:$port"; }
mcp=$(in_ct python3 /test/mcp_client.py http python,javascript,bash "http://127.0.0.1:$port/mcp" /etc/cellgate/token) \
  || { in_ct journalctl -u cellgate --no-pager | tail -60 >&2; fail "MCP over HTTP to the unit"; }
python3 - "$mcp" "$version" <<'PY' || { in_ct journalctl -u cellgate --no-pager | tail -60 >&2; fail "the unit's MCP"; }
import json, sys
out, version = json.loads(sys.argv[1]), sys.argv[2]
assert out["unauthorized"] == 401, "without the token: %s" % out["unauthorized"]
assert out["server"]["version"] == version, out["server"]
for language, run in out["runs"].items():
    assert run["status"] == "success" and run["stdout"].strip() == "42", (language, run)
print("package test: the system unit: 401 without the token; python, javascript and bash ran", file=sys.stderr)
PY
hardening=$(in_ct systemctl show cellgate -p ProtectSystem -p NoNewPrivileges -p ProtectProc)
for want in NoNewPrivileges=yes ProtectSystem=strict ProtectProc=invisible; do
  grep -qxF "$want" <<<"$hardening" || fail "the unit runs without $want: $hardening"
done
[ "$(in_ct stat -c %a /var/lib/cellgate)" = 700 ] || fail "/var/lib/cellgate is not 0700"
in_ct systemctl stop cellgate.service
[ "$(in_ct systemctl is-active cellgate || true)" = inactive ] || fail "cellgate did not stop"
grep -q "serving MCP" <<<"$(in_ct journalctl -u cellgate --no-pager)" || fail "no log in the journal"
say "the system unit: served, ran python, javascript and bash, logged to the journal, stopped"

# The user unit: a normal user's manager runs it with the rootless backend, on a free port,
# with a token of the user's own made at its first start.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
in_ct useradd -m -s /bin/bash cellgate-pkg
uid=$(in_ct id -u cellgate-pkg)
in_ct systemctl start dbus.service "user@$uid.service" || fail "the user's systemd manager did not start"
as_user=(podman exec -w / "$cid" setpriv --reuid cellgate-pkg --regid cellgate-pkg --init-groups
         env HOME=/home/cellgate-pkg XDG_RUNTIME_DIR=/run/user/$uid)
"${as_user[@]}" sh -c "mkdir -p ~/.config/systemd/user/cellgate.service.d && printf '[Service]\nEnvironment=CELLGATE_HTTP=127.0.0.1:$port\n' >~/.config/systemd/user/cellgate.service.d/port.conf"
"${as_user[@]}" systemctl --user enable --now cellgate.service >&2 || fail "systemctl --user enable --now cellgate"
for _ in $(seq 300); do
  in_ct journalctl _SYSTEMD_USER_UNIT=cellgate.service --no-pager 2>/dev/null | grep -q "listening on http://127.0.0.1:$port/" && break
  sleep 0.2
done
journal=$(in_ct journalctl _SYSTEMD_USER_UNIT=cellgate.service --no-pager)
grep -q "listening on http://127.0.0.1:$port/" <<<"$journal" || { echo "$journal" >&2; fail "the user unit did not serve on 127.0.0.1:$port"; }
grep -q "sandbox backend: rootless" <<<"$journal" || fail "the user unit's backend is not rootless"
token=$(in_ct stat -c "%a %U %s" /home/cellgate-pkg/.config/cellgate/token)
[ "$token" = "600 cellgate-pkg 65" ] || fail "the user unit's token: $token"
mcp=$("${as_user[@]}" python3 /test/mcp_client.py http python,javascript,bash "http://127.0.0.1:$port/mcp" /home/cellgate-pkg/.config/cellgate/token) \
  || { echo "$journal" | tail -40 >&2; fail "MCP over HTTP to the user unit"; }
python3 - "$mcp" <<'PY' || { in_ct journalctl _SYSTEMD_USER_UNIT=cellgate.service --no-pager | tail -40 >&2; fail "the user unit's MCP"; }
import json, sys
out = json.loads(sys.argv[1])
assert out["unauthorized"] == 401, "without the token: %s" % out["unauthorized"]
for language, run in out["runs"].items():
    assert run["status"] == "success" and run["stdout"].strip() == "42", (language, run)
print("package test: the user unit (rootless): 401 without the token; python, javascript and bash ran", file=sys.stderr)
PY
"${as_user[@]}" systemctl --user stop cellgate.service

# Purging the package while its service runs: prerm stops it, postrm removes the token; the
# state dir stays.
in_ct systemctl start cellgate.service
in_ct dpkg --purge cellgate >&2 || fail "dpkg --purge cellgate"
[ "$(in_ct systemctl is-active cellgate || true)" = inactive ] || fail "the service runs on after the purge"
! in_ct test -e /etc/cellgate || fail "/etc/cellgate is left after the purge"
! in_ct test -e /usr/bin/cellgate || fail "/usr/bin/cellgate is left after the purge"
in_ct test -d /var/lib/cellgate || fail "the purge removed the state dir"
say "purged: the service stopped, the token gone, the state dir kept"
say "ok"
