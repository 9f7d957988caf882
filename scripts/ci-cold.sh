#!/usr/bin/env bash
# Times a cold CI run on this machine, as a fresh machine would run it: `CI=true .ci/run` on a
# fresh clone of HEAD at a new path, with a HOME in which nothing is cached (cargo's registry
# and target directories, the tools under ~/.cache/dgsp, Go's module and build caches, npm's
# cache), a rustup home holding only the stable toolchain (no nightly, no wasm targets), and
# none of the project's docker images or BuildKit's cache. What it cannot make cold: the
# Debian packages already installed and the system Python's packages (about 2.5 minutes of
# apt on a new machine, measured on 2026-11-25). docs/ci-time.md has the results.
#
#   ./scripts/ci-cold.sh [DIR]      # DIR: scratch space (default /work/ci-cold), wiped first;
#                                   # needs about 45 GB free; prints the run's log path
#
# It removes the project's docker images (dgsp*) and BuildKit's cache: the next run of the
# container stack here rebuilds them. DGSP_CI_COLD_DRY=1 prepares everything, prints the
# toolchains left and the clone's commit, and stops before the run.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-/work/ci-cold}
case "$dir" in /|/root|/home|"$HOME") echo "refusing to wipe $dir" >&2; exit 2 ;; esac
rm -rf "$dir"
mkdir -p "$dir/home/.cargo/bin"
cold=$dir/home
rustup_home=${RUSTUP_HOME:-$HOME/.rustup}
cp -a "$rustup_home" "$cold/.rustup"
cp -a "$(command -v rustup)" "$cold/.cargo/bin/rustup"
for b in cargo cargo-clippy cargo-fmt clippy-driver rustc rustdoc rustfmt; do ln -s rustup "$cold/.cargo/bin/$b"; done
export HOME=$cold RUSTUP_HOME=$cold/.rustup CARGO_HOME=$cold/.cargo
PATH="$cold/.cargo/bin:$(echo "$PATH" | tr ':' '\n' | grep -vx "$(dirname "$(command -v rustup)")" | paste -sd:)"
export PATH
for t in $(rustup toolchain list | awk '{print $1}' | grep -v '^stable'); do
  case "$t" in nightly*) rustup toolchain uninstall "$t" >/dev/null ;; esac
done
rustup target remove wasm32-unknown-unknown wasm32-wasip1 >/dev/null 2>&1 || true
if ! docker info >/dev/null 2>&1; then
  nohup dockerd >"$dir/dockerd.log" 2>&1 &
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
fi
if docker info >/dev/null 2>&1; then
  docker ps -aq | xargs -r docker rm -f >/dev/null
  docker images --format '{{.Repository}}:{{.Tag}}' | grep '^dgsp' | xargs -r docker rmi -f >/dev/null || true
  docker builder prune -af >/dev/null 2>&1 || true
fi
# ../shared beside the clone, as CI has it.
mkdir -p "$dir/ci"
ln -s "$(cd "$repo/../shared" && pwd)" "$dir/ci/shared"
git clone -q "$repo" "$dir/ci/main"
cd "$dir/ci/main"
log=$dir/run.log
if [ "${DGSP_CI_COLD_DRY:-0}" = 1 ]; then
  rustup toolchain list; rustup target list --installed
  echo "prepared, not run (DGSP_CI_COLD_DRY=1): $(git rev-parse --short HEAD) in $PWD, HOME=$HOME, cargo $(command -v cargo)"
  exit 0
fi
echo "cold run of $(git rev-parse --short HEAD), log: $log"
start=$(date +%s)
rc=0
CI=true bash .ci/run >"$log" 2>&1 || rc=$?
echo "cold run exit $rc after $(($(date +%s) - start)) s ($(date -u +%FT%TZ)); log: $log"
exit "$rc"
