# The server image: cellgate itself as a service beside the engine that runs its sandboxes
# (the sibling-container pattern): `cellgate mcp --http 0.0.0.0:8080 --backend docker`
# through the engine's socket mounted at /var/run/docker.sock, sandboxes made from the
# sandbox image (Dockerfile.kernel) as the server's siblings. docs/deploy.md says how to run
# it and the rule it needs: the state dir at the same path in this container and on the
# engine's host (-v /var/lib/cellgate:/var/lib/cellgate:rshared), checked at start-up.
#
# Built by scripts/build-image.sh --server on a machine with no container registry: BASE is
# the Debian 12 minbase root file system that script imports (localhost/cellgate-base:bookworm);
# with Docker, any Debian 12 image will do (compose.yaml). The build context is what
# .dockerignore leaves: the sources and kernels/.
ARG BASE=debian:12-slim

# 1. Build: the -dev packages scripts/setup.sh installs, and a Release build of the binary.
FROM $BASE AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config \
      libzmq3-dev libczmq-dev libjansson-dev libsodium-dev libmicrohttpd-dev \
      libsqlite3-dev libcurl4-openssl-dev libgd-dev libwslay-dev nettle-dev libseccomp-dev \
 && rm -rf /var/lib/apt/lists/*
COPY CMakeLists.txt CHANGELOG.md /src/
COPY scripts/version.sh /src/scripts/
COPY packaging /src/packaging
COPY base /src/base
COPY containers /src/containers
COPY artifacts /src/artifacts
COPY egress /src/egress
COPY remote /src/remote
COPY bridge /src/bridge
COPY gateway /src/gateway
COPY mcp /src/mcp
COPY server /src/server
COPY app /src/app
# The version scripts/version.sh gives the checkout (no .git here); unset, CHANGELOG.md's.
ARG CELLGATE_VERSION=
ARG CELLGATE_REVISION=
RUN CELLGATE_VERSION="$CELLGATE_VERSION" CELLGATE_REVISION="$CELLGATE_REVISION" \
    cmake -S /src -B /build -DCMAKE_BUILD_TYPE=Release -DCELLGATE_TESTS=OFF \
 && cmake --build /build --target cellgate -j"$(nproc)" \
 && strip /build/cellgate

# 2. Run: the libraries the binary links (Debian's), mkfs.ext4 for the workspaces' file
# systems, catatonit to reap, the binary and the kernel specs the server reads (the
# sandboxes run the kernels the sandbox image holds: CELLGATE_IMAGE_KERNELS).
FROM $BASE
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libzmq5 libczmq4 libjansson4 libsodium23 libmicrohttpd12 libsqlite3-0 libcurl4 \
      libgd3 libwslay1 libnettle8 libseccomp2 e2fsprogs catatonit ca-certificates \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/cellgate /usr/bin/cellgate
COPY kernels/python/kernel.json /opt/cellgate/kernels/python/kernel.json
COPY kernels/javascript/kernel.json /opt/cellgate/kernels/javascript/kernel.json
COPY kernels/r/kernel.json /opt/cellgate/kernels/r/kernel.json
ARG STAMP=unknown
RUN echo "$STAMP" > /opt/cellgate/image-stamp
ENV CELLGATE_KERNELS_DIR=/opt/cellgate/kernels \
    CELLGATE_IMAGE_KERNELS=on \
    CELLGATE_BACKEND=docker \
    CELLGATE_IMAGE=localhost/cellgate-kernel:latest \
    CELLGATE_STATE_DIR=/var/lib/cellgate \
    CELLGATE_HTTP=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["/usr/bin/catatonit", "--", "/usr/bin/cellgate"]
CMD ["mcp"]
