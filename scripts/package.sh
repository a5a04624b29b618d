#!/usr/bin/env bash
# Builds the Debian package build/cellgate_<version>_amd64.deb (docs/operations.md#the-debian-package):
# a Release build of the binary in build/package with the installed layout compiled in
# (--kernels-dir /usr/share/cellgate/kernels), its man page and the CHANGELOG, then CPack's DEB
# generator (packaging/package.cmake: dependencies from dpkg-shlibdeps, the systemd units,
# the maintainer scripts). The version is scripts/version.sh's.
#   scripts/package.sh [--out DIR]     (default build/)
# Prints the package's path on stdout. Needs the JavaScript kernel's node_modules
# (scripts/setup.sh), which the package carries: Debian has no tslab.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    *) echo "package: unknown argument $1" >&2; exit 2 ;;
  esac
done
say() { echo "package: $*" >&2; }
for tool in cmake cpack dpkg-deb dpkg-shlibdeps; do
  command -v "$tool" >/dev/null || { say "$tool is not installed (scripts/setup.sh installs it)"; exit 1; }
done
for lock in kernels/*/package-lock.json; do
  [ -f "$(dirname "$lock")/node_modules/.cellgate-lock.sha256" ] \
    || { say "$(dirname "$lock")/node_modules is not installed: run scripts/setup.sh first"; exit 1; }
done

build=build/package
say "configuring $build ($(scripts/version.sh))"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
  -DCELLGATE_KERNELS_DIR=/usr/share/cellgate/kernels -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON >/dev/null
cmake --build "$build" -j2 --target cellgate cellgate_docs >&2
# The Debian packages of the libraries the binary links (dpkg-shlibdeps wants a debian/control).
shlibs=$(cd "$build" && mkdir -p shlibdeps/debian && touch shlibdeps/debian/control \
         && cd shlibdeps && dpkg-shlibdeps -O -e ../cellgate 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$shlibs" ] || { say "dpkg-shlibdeps found no library packages for $build/cellgate"; exit 1; }
say "library packages: $shlibs"
cmake -S . -B "$build" -DCELLGATE_SHLIBS_DEPENDS="$shlibs" >/dev/null
rm -f "$build"/cellgate_*.deb
(cd "$build" && cpack -G DEB >&2)
mkdir -p "$out"
deb=$(ls "$build"/cellgate_*_*.deb)
rm -f "$out"/cellgate_*_amd64.deb
mv -f "$deb" "$out/"
say "$(du -h "$out/$(basename "$deb")" | cut -f1) $out/$(basename "$deb")"
echo "$out/$(basename "$deb")"
