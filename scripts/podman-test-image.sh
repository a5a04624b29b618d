#!/usr/bin/env bash
# Builds the small sandbox image the Docker backend's tests run (no registry needed): the
# host's own files of the Debian packages a Python kernel and a shell need (ipykernel,
# matplotlib, numpy, bash, coreutils, catatonit, and everything they depend on), a minimal
# /etc and the sandbox's mount points, imported with `podman import`. Skipped when an image
# of that name was already built from the same package versions and this script.
#   scripts/podman-test-image.sh [IMAGE]       (default: localhost/cellgate-test:latest)
# Not the real sandbox image (Dockerfile.kernel); tests only.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${1:-localhost/cellgate-test:latest}
PACKAGES=(python3-ipykernel python3-matplotlib python3-numpy bash coreutils catatonit)
LABEL=org.cellgate.test-image

command -v podman >/dev/null || { echo "podman-test-image: podman is not installed" >&2; exit 1; }

deps=$(apt-cache depends --recurse --installed --no-recommends --no-suggests --no-conflicts \
         --no-breaks --no-replaces --no-enhances "${PACKAGES[@]}" 2>/dev/null \
       | grep -v '^[ <]' | sort -u)
# The stamp: the packages at their installed versions, and this script.
stamp=$( (dpkg-query -W $deps 2>/dev/null; cat "$0") | sha256sum | cut -c1-16)
have=$(podman image inspect --format "{{index .Labels \"$LABEL\"}}" "$IMAGE" 2>/dev/null || true)
if [ "$have" = "$stamp" ]; then
  echo "podman-test-image: $IMAGE is up to date ($stamp)" >&2
  exit 0
fi

root=$(mktemp -d /var/tmp/cellgate-test-image.XXXXXX)
trap 'rm -rf -- "$root"' EXIT
# dpkg lists pre-merge paths (/bin/bash); on a merged-/usr host they live below /usr.
for p in $deps; do dpkg -L "$p" 2>/dev/null || true; done \
  | grep -v -E '^/usr/share/(doc|man|info|locale|lintian)/' \
  | sed -E 's#^/(bin|sbin|lib|lib64)/#/usr/\1/#' | sort -u \
  | while IFS= read -r f; do if [ -f "$f" ] || [ -L "$f" ]; then printf '%s\n' "$f"; fi; done \
  > "$root.list"
# Alternatives (libblas.so.3, python) are links no package lists; /etc/alternatives is copied.
find /usr/bin /usr/lib/x86_64-linux-gnu -maxdepth 1 -lname '/etc/alternatives/*' >> "$root.list"
trap 'rm -rf -- "$root" "$root.list"' EXIT
mkdir -p "$root/rootfs"
sed 's#^/##' "$root.list" | tar -C / -cf - --no-recursion -T - | tar -C "$root/rootfs" -xf -
r=$root/rootfs
for l in bin sbin lib lib64; do
  [ -L "/$l" ] && ln -sfn "$(readlink "/$l")" "$r/$l"
done
mkdir -p "$r"/{etc,proc,sys,dev,tmp,root,mnt/data,run/cellgate/ipc} \
         "$r"/opt/cellgate/{kernels,site,shared,wheelhouse,npm-mirror}
chmod 1777 "$r/tmp"
for f in ld.so.cache ld.so.conf ld.so.conf.d alternatives fonts matplotlibrc python3 python3.11 \
         mime.types localtime; do
  [ -e "/etc/$f" ] && cp -a --no-preserve=ownership "/etc/$f" "$r/etc/"
done
cat > "$r/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/usr/sbin/nologin
sandbox:x:65532:65532:sandbox:/tmp:/bin/bash
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
EOF
printf 'root:x:0:\nsandbox:x:65532:\nnogroup:x:65534:\n' > "$r/etc/group"
printf '127.0.0.1 localhost sandbox\n::1 localhost\n' > "$r/etc/hosts"
printf 'passwd: files\ngroup: files\nhosts: files\n' > "$r/etc/nsswitch.conf"
echo "podman-test-image: importing $(du -sh "$r" | cut -f1) as $IMAGE" >&2
tar -C "$r" -cf - . | podman import --quiet --change "LABEL $LABEL=$stamp" \
  --change 'CMD ["/usr/bin/catatonit","-P"]' - "$IMAGE" >/dev/null
echo "podman-test-image: built $IMAGE ($stamp)" >&2
