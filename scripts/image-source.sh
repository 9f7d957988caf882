#!/usr/bin/env bash
# The documented image, built as docs/deploy.md says: `docker build -f deploy/Dockerfile .`
# with the default BINARIES=source, so the builder stage compiles the three release binaries
# from the repository inside the container. Then the image is run: each binary answers
# --version as the unprivileged user the image runs as.
#
#   ./scripts/image-source.sh     # the test command runs it (DGSP_IMAGE_SOURCE=0 switches it off, saying so)
#
# What differs from the documented command, because no image registry is reachable from CI:
# the two base images are made here (scripts/docker-lib.sh): RUST_IMAGE=dgsp-rust:<version>
# (Debian 12 with this host's Rust toolchain, standing in for rust:1-bookworm) and
# RUNTIME_IMAGE=dgsp-base:bookworm (a debootstrapped Debian 12, for debian:bookworm-slim).
# The builder still installs its packages from deb.debian.org and its crates from crates.io
# (the build runs with --network host), as it does anywhere else.
#
# A cold build compiles every dependency in release mode: about 13 minutes on 2 cores. So it
# runs once per change to what the image is made from:
#   deploy/Dockerfile, deploy/Dockerfile.dockerignore, deploy/docker/*, the workspace
#   members (Cargo.toml), .cargo/config.toml and the Rust version,
# hashed into 16 hex digits. Two records say for which inputs it was last built and run:
#   - deploy/image-source.proven, committed: the build that proved these inputs (hash, commit,
#     date, minutes, machine). A run that builds writes it; commit it with the change, and
#     every other machine, CI's fresh ones included, knows these inputs build.
#   - ~/.cache/dgsp/container/image-source.stamp: the last build on this machine.
# When either names the current inputs it says so, naming the commit and date it was built
# at, and does not build again; otherwise it builds (a change not yet proven, or a proof not
# committed: then every run builds until the record is committed).
# (Not Cargo.lock: the same locked dependencies are built on this Debian 12 host by the
# tests, against the same system packages.)
# The sources themselves are compiled by every other check here, and validate-deploy.sh
# checks at every run that every workspace member is copied into the builder stage. A warm
# rebuild (BuildKit keeps the cargo registry and target directory between builds) recompiles
# only the workspace's own crates.
#
# Environment:
#   DGSP_IMAGE_SOURCE  1 (default): build when neither record names the inputs; always:
#                      build anyway (and record it);
#                      0: switched off (printed as such)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
. scripts/docker-lib.sh

mode=${DGSP_IMAGE_SOURCE:-1}
case "$mode" in
  0) say "image from source switched off (DGSP_IMAGE_SOURCE=0)"; exit 0 ;;
  1 | always) ;;
  *) echo "DGSP_IMAGE_SOURCE must be 0, 1 or always (got '$mode')" >&2; exit 2 ;;
esac

IMAGE=dgsp:source-test
STAMP="$DOCKER_CACHE/image-source.stamp"
PROVEN=deploy/image-source.proven
mkdir -p "$DOCKER_CACHE"

# The inputs, hashed: the files the Dockerfile is made of and the environment it builds in.
members=$(python3 -c 'import tomllib; print("\n".join(tomllib.load(open("Cargo.toml", "rb"))["workspace"]["members"]))')
inputs=$(
  {
    for f in deploy/Dockerfile deploy/Dockerfile.dockerignore .cargo/config.toml deploy/docker/*; do
      printf '%s %s\n' "$f" "$(sha256sum <"$f" | cut -d' ' -f1)"
    done
    printf 'member %s\n' "$members"
    rustc -V
  } | sha256sum | cut -c1-16
)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
# Built from a working tree with changes not yet committed: say so in the records.
git diff --quiet HEAD -- 2>/dev/null || commit="$commit+changes"

what="the Dockerfile, its ignore file, deploy/docker, the workspace members, .cargo/config.toml, Rust"
if [ "$mode" = 1 ] && [ -f "$PROVEN" ] && [ "$(sed -n 's/^inputs //p' "$PROVEN")" = "$inputs" ]; then
  say "image from source: these inputs ($inputs: $what) were built and run at $(sed -n 's/^commit //p' "$PROVEN") on $(sed -n 's/^date //p' "$PROVEN") ($(sed -n 's/^machine //p' "$PROVEN"); $PROVEN): unchanged since, not rebuilt (DGSP_IMAGE_SOURCE=always rebuilds)"
  exit 0
fi
if [ "$mode" = 1 ] && [ -f "$STAMP" ] && [ "$(awk '{print $1}' "$STAMP")" = "$inputs" ]; then
  read -r _ at on <"$STAMP"
  say "image from source: built on this machine at $at on $on from these same inputs ($inputs: $what): unchanged, not rebuilt (DGSP_IMAGE_SOURCE=always rebuilds); $PROVEN does not name them yet: commit the one that build wrote"
  exit 0
fi

ensure_docker
ensure_base_image
rust_image=$(ensure_rust_image)

say "building $IMAGE from source as documented: docker build -f deploy/Dockerfile . (BINARIES=source, RUST_IMAGE=$rust_image, RUNTIME_IMAGE=$BASE_IMAGE; inputs $inputs; log: $DOCKER_CACHE/image-source.log)"
start=$SECONDS
if ! DOCKER_BUILDKIT=1 as_root "$DOCKER" build --network host --progress plain -f deploy/Dockerfile \
  --build-arg RUST_IMAGE="$rust_image" --build-arg RUNTIME_IMAGE="$BASE_IMAGE" \
  --build-arg REVISION="$commit" -t "$IMAGE" . >"$DOCKER_CACHE/image-source.log" 2>&1; then
  tail -n 40 "$DOCKER_CACHE/image-source.log" >&2
  echo "the documented source build of deploy/Dockerfile failed (whole log: $DOCKER_CACHE/image-source.log)" >&2
  exit 1
fi
took=$((SECONDS - start))

say "running the image: every binary answers as uid 10001"
[ "$(dk run --rm --entrypoint id "$IMAGE" -u)" = 10001 ] \
  || { echo "the image does not run as uid 10001" >&2; exit 1; }
for bin in dgsp-registry dgsp-gateway dgsp-manager; do
  out=$(dk run --rm "$IMAGE" "$bin" --version) \
    || { echo "$bin --version failed in $IMAGE" >&2; exit 1; }
  echo "  $out"
done

printf '%s %s %s\n' "$inputs" "$commit" "$(date -u +%Y-%m-%dT%H:%MZ)" >"$STAMP"
cat >"$PROVEN" <<RECORD
# The last build of the documented image from source (scripts/image-source.sh), for these
# inputs: scripts/image-source.sh does not build again while they are unchanged.
inputs $inputs
commit $commit
date $(date -u +%Y-%m-%dT%H:%MZ)
took $((took / 60)) min $((took % 60)) s
machine $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
RECORD
say "image from source built in $((took / 60)) min $((took % 60)) s and runs ($IMAGE, revision $commit); $PROVEN records it: commit it with the change"
