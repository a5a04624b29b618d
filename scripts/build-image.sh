#!/usr/bin/env bash
# Builds the sandbox image (Dockerfile.kernel) on a machine with no container registry, and
# unpacks its root file system for the oci and rootless backends (--image DIR):
#   1. a Debian 12 minbase root file system made by debootstrap from the Debian mirror this
#      machine's apt sources use, imported with `podman import` (localhost/cellgate-base);
#   2. `podman build -f Dockerfile.kernel` on it (its apt steps reach the same mirror);
#   3. the image's root file system exported to DIR.
# Each step is skipped when its result carries the stamp of what it was made from (the
# base: this script's base part and the mirror; the image: Dockerfile.kernel, this script
# and kernels/; the export: the image's stamp), so a repeat costs a few podman inspects.
#   scripts/build-image.sh [--image NAME] [--rootfs DIR]
#     defaults: localhost/cellgate-kernel:latest, /var/lib/cellgate/images/cellgate-kernel
# Prints the image name and the root file system's directory, one per line, on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=localhost/cellgate-kernel:latest
ROOTFS=/var/lib/cellgate/images/cellgate-kernel
BASE=localhost/cellgate-base:bookworm
LABEL=org.cellgate.stamp
while [ $# -gt 0 ]; do
  case "$1" in
    --image) IMAGE=$2; shift 2 ;;
    --rootfs) ROOTFS=$2; shift 2 ;;
    *) echo "build-image: unknown argument $1" >&2; exit 2 ;;
  esac
done
say() { echo "build-image: $*" >&2; }
for tool in podman debootstrap; do
  command -v "$tool" >/dev/null || { say "$tool is not installed (scripts/setup.sh test installs it)"; exit 1; }
done
[ "$(id -u)" = 0 ] || { say "debootstrap and podman build run as root"; exit 1; }

# runc: crun refuses hybrid cgroup hosts; cgroupfs: no systemd to ask.
PODMAN=(podman --runtime runc --cgroup-manager cgroupfs)

label_of() { podman image inspect --format "{{index .Labels \"$LABEL\"}}" "$1" 2>/dev/null || true; }

# The Debian mirror of this machine's apt sources (deb822 or one-line), never a fixed host.
mirror=$(sed -n -E 's/^URIs:[[:space:]]*([^[:space:]]+).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null \
           | grep -v security | head -1 || true)
[ -n "$mirror" ] || mirror=$(sed -n -E 's/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+)[[:space:]]+bookworm[[:space:]].*/\2/p' \
                               /etc/apt/sources.list 2>/dev/null | head -1 || true)
[ -n "$mirror" ] || { say "no Debian mirror found in /etc/apt/sources.list(.d)"; exit 1; }

# 1. The base.
base_stamp=$(printf '%s\n%s\n' "$mirror" "$(sed -n '/^# 1. The base./,/^# 2./p' "$0")" | sha256sum | cut -c1-16)
if [ "$(label_of "$BASE")" != "$base_stamp" ]; then
  work=$(mktemp -d /var/tmp/cellgate-base.XXXXXX)
  trap 'rm -rf -- "$work"' EXIT
  say "debootstrap bookworm (minbase) from $mirror"
  debootstrap --variant=minbase bookworm "$work/root" "$mirror" >&2
  rm -rf "$work/root/var/cache/apt/archives/"*.deb "$work/root/var/lib/apt/lists/"*
  say "podman import as $BASE"
  tar -C "$work/root" -cf - . | podman import --quiet --change "LABEL $LABEL=$base_stamp" \
    --change 'CMD ["/bin/bash"]' - "$BASE" >/dev/null
  rm -rf -- "$work"
  trap - EXIT
fi

# 2. The image. Its context is kernels/ with the JavaScript kernel's node_modules as npm ci
# left them (scripts/setup.sh records the lock file's hash in them): a tree without them
# (a fresh clone or worktree before setup) would make an image whose JavaScript cannot start.
for lock in kernels/*/package-lock.json; do
  [ -f "$(dirname "$lock")/node_modules/.cellgate-lock.sha256" ] \
    || { say "$(dirname "$lock")/node_modules is not installed: run scripts/setup.sh first"; exit 1; }
done
stamp=$( { echo "$base_stamp"; cat Dockerfile.kernel "$0"; cat kernels/*/node_modules/.cellgate-lock.sha256;
           find kernels -path '*/node_modules' -prune -o -type f -print0 | sort -z | xargs -0 sha256sum;
           sha256sum kernels/*/package-lock.json 2>/dev/null || true; } | sha256sum | cut -c1-16)
# The OCI labels say which cellgate built it (scripts/version.sh: version and commit); they
# are not in the stamp, so a new commit alone does not rebuild the image.
if [ "$(label_of "$IMAGE")" != "$stamp" ]; then
  mapfile -t version_labels < <(scripts/version.sh --labels)
  say "podman build -f Dockerfile.kernel -t $IMAGE (stamp $stamp, ${version_labels[0]#--label=})"
  "${PODMAN[@]}" build --network host --file Dockerfile.kernel --build-arg "BASE=$BASE" \
    --build-arg "STAMP=$stamp" --label "$LABEL=$stamp" "${version_labels[@]}" --tag "$IMAGE" . >&2
else
  say "$IMAGE is up to date ($stamp)"
fi

# 3. The root file system for --backend oci|rootless --image DIR.
if [ "$(cat "$ROOTFS/.cellgate-stamp" 2>/dev/null || true)" != "$stamp" ]; then
  say "exporting $IMAGE to $ROOTFS"
  fresh="$ROOTFS.new"
  rm -rf -- "$fresh"
  mkdir -p "$fresh"
  container=$("${PODMAN[@]}" create "$IMAGE")
  podman export "$container" | tar -C "$fresh" -xf -
  podman rm "$container" >/dev/null
  echo "$stamp" > "$fresh/.cellgate-stamp"
  chmod 755 "$fresh"
  rm -rf -- "$ROOTFS.old"
  [ -e "$ROOTFS" ] && mv -- "$ROOTFS" "$ROOTFS.old"
  mv -- "$fresh" "$ROOTFS"
  rm -rf -- "$ROOTFS.old"
fi
# 4. The JavaScript kernel's V8 code cache for the image's Node.js, in this tree's kernels/,
# which oci and rootless sandboxes run read-only (the image has its own, Dockerfile.kernel;
# scripts/setup.sh makes the host's Node.js one under another name): made each time, a second.
# (Podman's default limits are above this shell's hard ones, which runc may not raise.)
"${PODMAN[@]}" run --rm --network none --ulimit nofile=1024:1024 --ulimit nproc=512:512 \
  --volume "$PWD/kernels/javascript:/opt/cellgate/kernels/javascript" --entrypoint node --user 0:0 \
  "$IMAGE" /opt/cellgate/kernels/javascript/cellgate-tslab.js --make-code-cache >&2
say "$IMAGE: $(podman image inspect --format '{{.Size}}' "$IMAGE" | numfmt --to=iec) ($stamp); root file system in $ROOTFS"
echo "$IMAGE"
echo "$ROOTFS"
