#!/usr/bin/env bash
# Builds the server image (Dockerfile: cellgate as a service beside the engine, docs/deploy.md)
# on a machine with no container registry, on the Debian base scripts/build-image.sh imports
# (localhost/cellgate-base:bookworm; that script runs first when the base is missing, and
# makes the sandbox image the server runs too). Skipped when the image carries the stamp of
# what it was made from (the base's stamp, Dockerfile, .dockerignore, this script, the sources
# and the kernel specs), so a repeat costs a few podman inspects.
#   scripts/build-server-image.sh [--image NAME]     default: localhost/cellgate:latest
# Prints the image name on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=localhost/cellgate:latest
BASE=localhost/cellgate-base:bookworm
LABEL=org.cellgate.stamp
while [ $# -gt 0 ]; do
  case "$1" in
    --image) IMAGE=$2; shift 2 ;;
    *) echo "build-server-image: unknown argument $1" >&2; exit 2 ;;
  esac
done
say() { echo "build-server-image: $*" >&2; }
command -v podman >/dev/null || { say "podman is not installed (scripts/setup.sh test installs it)"; exit 1; }
[ "$(id -u)" = 0 ] || { say "podman build runs as root"; exit 1; }

# runc: crun refuses hybrid cgroup hosts; cgroupfs: no systemd to ask.
PODMAN=(podman --runtime runc --cgroup-manager cgroupfs)
label_of() { podman image inspect --format "{{index .Labels \"$LABEL\"}}" "$1" 2>/dev/null || true; }

if ! podman image exists "$BASE"; then
  say "$BASE is missing: scripts/build-image.sh makes it (and the sandbox image)"
  scripts/build-image.sh >/dev/null
fi

# What the image is made of: the sources and CMakeLists.txt it builds, the kernel specs it
# copies (the context is what .dockerignore leaves).
stamp=$( { label_of "$BASE"; cat Dockerfile .dockerignore "$0";
           find CMakeLists.txt CHANGELOG.md scripts/version.sh packaging app artifacts base bridge \
                containers egress gateway mcp server \
                kernels/*/kernel.json -type f -print0 \
             | sort -z | xargs -0 sha256sum; } | sha256sum | cut -c1-16)
if [ "$(label_of "$IMAGE")" != "$stamp" ]; then
  say "podman build -f Dockerfile -t $IMAGE (stamp $stamp)"
  "${PODMAN[@]}" build --network host --file Dockerfile \
    --build-arg "BASE=$BASE" --build-arg "STAMP=$stamp" --label "$LABEL=$stamp" \
    --build-arg "CELLGATE_VERSION=$(scripts/version.sh)" \
    --build-arg "CELLGATE_REVISION=$(scripts/version.sh --revision)" \
    --tag "$IMAGE" . >&2
else
  say "$IMAGE is up to date ($stamp)"
fi
say "$IMAGE: $(podman image inspect --format '{{.Size}}' "$IMAGE" | numfmt --to=iec) ($stamp)"
echo "$IMAGE"
