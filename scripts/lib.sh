# Shared by the README's commands: idempotent installs and the shared build cache.
# Sourced, not run.

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }

# One target directory for every build of this project on this machine, outside the clone:
# CI's fresh clones and later sessions reuse it; a machine without it simply builds cold.
use_shared_target_dir() {
  if [ -z "${CARGO_TARGET_DIR:-}" ]; then
    export CARGO_TARGET_DIR="${DGSP_CACHE_DIR:-$HOME/.cache/dgsp}/target"
  fi
  mkdir -p "$CARGO_TARGET_DIR"
  say "build directory: $CARGO_TARGET_DIR"
}

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "need root for: $*" >&2; return 1; fi
}

ensure_rust() {
  if ! command -v cargo >/dev/null; then
    if [ -x "$HOME/.cargo/bin/cargo" ]; then
      export PATH="$HOME/.cargo/bin:$PATH"
    else
      echo "cargo not found: install Rust (https://rustup.rs), then run this again." >&2
      return 1
    fi
  fi
  for comp in rustfmt clippy; do
    if ! cargo "${comp/rustfmt/fmt}" --version >/dev/null 2>&1; then
      say "installing rust component $comp"
      rustup component add "$comp"
    fi
  done
}

ensure_python_crypto() {
  if ! command -v python3 >/dev/null; then
    say "installing python3"
    as_root apt-get update -qq && as_root apt-get install -y -qq python3 python3-pip
  fi
  if ! python3 -c 'import cryptography' 2>/dev/null; then
    say "installing the Python 'cryptography' package (AES for the known-answer vectors)"
    python3 -m pip install --quiet cryptography \
      || python3 -m pip install --quiet --break-system-packages cryptography \
      || { as_root apt-get update -qq && as_root apt-get install -y -qq python3-cryptography; }
  fi
}

# RocksDB comes from Debian (librocksdb-dev 7.8, linked by the rocksdb crate 0.20.1) and
# bindgen needs libclang: see docs/rocksdb.md for why not the bundled build.
ensure_system_packages() {
  local missing=()
  for pkg in librocksdb-dev clang libclang-dev pkg-config curl; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    say "installing system packages: ${missing[*]}"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}"
  fi
}

# wait_ready URL PID NAME LOG: waits up to 30 s for URL/readyz to answer 200; fails (with a
# pointer to LOG) if process PID exits first or it never becomes ready.
wait_ready() {
  for _ in $(seq 300); do
    curl -fs "$1/readyz" >/dev/null 2>&1 && return 0
    kill -0 "$2" 2>/dev/null || { echo "the $3 exited; see $4" >&2; return 1; }
    sleep 0.1
  done
  echo "the $3 did not become ready in 30 s; see $4" >&2
  return 1
}
