#!/bin/sh
# cellgate's one version, for the binary (base/cg_version.h, made by CMake at every build),
# the Debian package (CPack) and the kernel image's labels (scripts/build-image.sh):
#   - the release is the top released version in CHANGELOG.md (`## [X.Y.Z] - date`);
#   - at a commit tagged vX.Y.Z (that release), the version is X.Y.Z;
#   - elsewhere in a git checkout it is X.Y.Z+N.gHASH: N the commits in HEAD's history
#     (`git rev-list --count HEAD`, so later builds sort later, in dpkg's order too), HASH
#     from `git describe --tags --dirty --always --abbrev=12`, and `.dirty` when the tree
#     has changes not committed;
#   - with no git (a tarball), X.Y.Z;
#   - CELLGATE_VERSION and CELLGATE_REVISION, when set, are taken as they are (the server
#     image's build: its context has no .git; scripts/build-server-image.sh passes them).
# Usage:
#   scripts/version.sh                 the version
#   scripts/version.sh --revision      the full commit id (empty without git)
#   scripts/version.sh --header FILE   writes FILE (a C header) when its text changes
#   scripts/version.sh --labels        the OCI label arguments, one per line, for podman build
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)

release=$(sed -n -E 's/^## \[([0-9]+\.[0-9]+\.[0-9]+)\].*/\1/p' "$root/CHANGELOG.md" | head -1)
[ -n "$release" ] || { echo "version.sh: no released version (## [X.Y.Z] - date) in CHANGELOG.md" >&2; exit 1; }

version=$release
revision=
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  described=$(git -C "$root" describe --tags --dirty --always --abbrev=12)
  revision=$(git -C "$root" rev-parse HEAD)
  case "$described" in
    "v$release") ;;
    *)
      count=$(git -C "$root" rev-list --count HEAD)
      hash=$(git -C "$root" rev-parse --short=12 HEAD)
      version="$release+$count.g$hash"
      case "$described" in *-dirty) version="$version.dirty" ;; esac
      ;;
  esac
fi

[ -z "${CELLGATE_VERSION:-}" ] || version=$CELLGATE_VERSION
[ -z "${CELLGATE_REVISION:-}" ] || revision=$CELLGATE_REVISION

case "${1:-}" in
  "") echo "$version" ;;
  --revision) echo "$revision" ;;
  --labels)
    echo "--label=org.opencontainers.image.version=$version"
    [ -z "$revision" ] || echo "--label=org.opencontainers.image.revision=$revision"
    echo "--label=org.opencontainers.image.title=cellgate-kernel"
    ;;
  --header)
    file=${2:?--header FILE}
    text=$(printf '%s\n' \
      "/*  cg_version — made by scripts/version.sh at build time: do not edit. */" \
      "#ifndef CG_VERSION_H" "#define CG_VERSION_H" "" \
      "/*  cellgate's version: CHANGELOG.md's release, with +N.gHASH off a release tag. */" \
      "#define CG_VERSION \"$version\"" "" \
      "/*  The commit it was built from (empty without git). */" \
      "#define CG_REVISION \"$revision\"" "" "#endif")
    if [ "$(cat "$file" 2>/dev/null || true)" != "$text" ]; then
      mkdir -p "$(dirname "$file")"
      printf '%s\n' "$text" >"$file.tmp"
      mv -f "$file.tmp" "$file"
    fi
    ;;
  *) echo "usage: scripts/version.sh [--revision | --header FILE | --labels]" >&2; exit 2 ;;
esac
