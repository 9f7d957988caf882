# shellcheck shell=bash
# Docker plumbing shared by scripts/container-stack.sh and scripts/image-source.sh; sourced
# after scripts/lib.sh (it uses say and as_root), never run.
#
# No image registry is reachable from CI, so the images these scripts need are made here:
#   dgsp-base:bookworm  a debootstrapped Debian 12 minbase with the runtime packages
#                       (librocksdb7.8, ca-certificates, curl) and HAProxy, `docker import`ed;
#                       kept between runs (DGSP_REBUILD_BASE=1 makes it again)
#   dgsp-rust:<version> dgsp-base:bookworm with a C toolchain from Debian and this host's Rust
#                       toolchain copied in (the same rustc the tests use), standing in for
#                       the Dockerfile's default builder image, rust:1-bookworm

DOCKER_CACHE="${DGSP_CACHE_DIR:-$HOME/.cache/dgsp}/container"
BASE_IMAGE=dgsp-base:bookworm

# Installs Debian's docker.io, docker-compose and debootstrap when missing and starts dockerd
# when no daemon answers. Sets DOCKER (the client) and COMPOSE (the compose command).
ensure_docker() {
  mkdir -p "$DOCKER_CACHE"
  local missing=()
  command -v dockerd >/dev/null || missing+=(docker.io)
  command -v docker-compose >/dev/null || docker compose version >/dev/null 2>&1 || missing+=(docker-compose)
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  if [ ${#missing[@]} -gt 0 ]; then
    say "installing ${missing[*]}"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  # Debian's client speaks to Debian's daemon with its built-in BuildKit (no buildx plugin
  # needed); another `docker` earlier on PATH may lack it.
  DOCKER=docker
  [ -x /usr/bin/docker ] && DOCKER=/usr/bin/docker
  # shellcheck disable=SC2034 # read by the scripts that source this file
  if docker compose version >/dev/null 2>&1; then COMPOSE=(docker compose); else COMPOSE=(docker-compose); fi
  if ! $DOCKER info >/dev/null 2>&1; then
    say "starting dockerd (log: $DOCKER_CACHE/dockerd.log)"
    as_root sh -c "nohup dockerd >'$DOCKER_CACHE/dockerd.log' 2>&1 &"
    for _ in $(seq 60); do $DOCKER info >/dev/null 2>&1 && break; sleep 1; done
    $DOCKER info >/dev/null 2>&1 || { echo "dockerd did not start; see $DOCKER_CACHE/dockerd.log" >&2; exit 1; }
  fi
}

# The docker client as root.
dk() { as_root "$DOCKER" "$@"; }

# dgsp-base:bookworm, made once (about a minute: debootstrap from deb.debian.org).
ensure_base_image() {
  if [ "${DGSP_REBUILD_BASE:-0}" = 1 ] || ! dk image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
    say "making the base image $BASE_IMAGE (debootstrap Debian 12 minbase, ~1 min)"
    local rootfs="$DOCKER_CACHE/rootfs"
    as_root rm -rf "$rootfs"
    as_root debootstrap --variant=minbase --include=librocksdb7.8,ca-certificates,curl,haproxy \
      bookworm "$rootfs" http://deb.debian.org/debian >"$DOCKER_CACHE/debootstrap.log" 2>&1 \
      || { echo "debootstrap failed; see $DOCKER_CACHE/debootstrap.log" >&2; exit 1; }
    as_root rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    as_root tar -C "$rootfs" -c . | dk import \
      -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$BASE_IMAGE" >/dev/null
    as_root rm -rf "$rootfs"
  fi
}

# dgsp-rust:<rustc version>: the builder image the source build runs in, printed on stdout.
# Laid out as rust:1-bookworm is (CARGO_HOME=/usr/local/cargo, which the Dockerfile's cache
# mounts name; gcc as the linker; cargo and rustc on PATH). The toolchain is this host's
# stable one without its documentation and WebAssembly targets (about 600 MB). The host's
# local certificate authorities (/usr/local/share/ca-certificates: on CI machines here, the
# egress proxy's, which re-signs crates.io) are trusted in this builder as on the host; the
# runtime image is not touched.
ensure_rust_image() {
  local sysroot version image ctx
  sysroot=$(rustc --print sysroot)
  version=$(rustc -V | awk '{print $2}')
  image="dgsp-rust:$version"
  if [ "${DGSP_REBUILD_BASE:-0}" = 1 ] || ! dk image inspect "$image" >/dev/null 2>&1; then
    say "making the builder image $image ($BASE_IMAGE + gcc from Debian + this host's Rust $version)" >&2
    ctx=$(mktemp -d /tmp/dgsp-rust-image.XXXXXX)
    mkdir -p "$ctx/rust" "$ctx/ca"
    cp /usr/local/share/ca-certificates/*.crt "$ctx/ca/" 2>/dev/null || true
    tar -C "$sysroot" --exclude=./share --exclude='./lib/rustlib/wasm32-*' \
      --exclude=./lib/rustlib/src -cf - . | tar -C "$ctx/rust" -xf -
    printf '%s\n' "FROM $BASE_IMAGE" \
      'RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends gcc libc6-dev && rm -rf /var/lib/apt/lists/*' \
      'COPY ca/ /usr/local/share/ca-certificates/' \
      'RUN update-ca-certificates >/dev/null' \
      'COPY rust /usr/local/rust' \
      'ENV CARGO_HOME=/usr/local/cargo PATH=/usr/local/cargo/bin:/usr/local/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      'RUN mkdir -p /usr/local/cargo/bin && cargo --version && rustc --version' >"$ctx/Dockerfile"
    DOCKER_BUILDKIT=1 as_root "$DOCKER" build --network host -q -t "$image" "$ctx" >/dev/null \
      || { as_root rm -rf "$ctx"; echo "building $image failed" >&2; exit 1; }
    as_root rm -rf "$ctx"
  fi
  echo "$image"
}
