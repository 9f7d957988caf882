#!/usr/bin/env bash
# The Rust tools the test command builds from source, each once into
# ${DGSP_CACHE_DIR:-~/.cache/dgsp}/tools (pinned versions), each under its own lock (flock),
# so a tool is never built twice at once nor used half-installed:
#   scripts/tools.sh cargo-deny      # installs when missing, prints the binary's path
#   scripts/tools.sh wasm-bindgen    # the same for wasm-bindgen-cli, at sdk/js's wasm-bindgen version
#   scripts/tools.sh fuzz            # the nightly toolchain, cargo-fuzz, and the fuzz targets' ASan build
#   scripts/tools.sh prebuild        # the Go tools (SeaweedFS, the witnesses), then all of the above
# Output of an install goes to stderr; stdout is the path only.
#
# `prebuild` is what the test command starts in the background at the lowest CPU and I/O
# priority (scripts/test.sh; DGSP_PREBUILD=0 turns it off): on a 2-core machine the tools are
# then built in the time the workspace's build and the tests leave a core idle, and the step
# that needs a tool finds it built, or waits on its lock for the rest of the build instead of
# starting it. A tool the background failed to build is built again by the step that needs
# it, which fails with the tool's own error.
set -euo pipefail
# Never linted: a caller's clippy wrapper (scripts/lib.sh, with_clippy) would apply to the
# tools `cargo install` builds.
unset RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/lib.sh"

DENY_VERSION=0.20.2
CACHE="${DGSP_CACHE_DIR:-$HOME/.cache/dgsp}"
TOOLS="${DGSP_TOOLS_DIR:-$CACHE/tools}"
mkdir -p "$TOOLS"

# with_lock NAME CMD…: CMD under the lock $TOOLS/.NAME.lock (waits for whoever holds it).
with_lock() {
  local name="$1"; shift
  (
    exec 9>"$TOOLS/.$name.lock"
    flock 9
    "$@"
  )
}

install_cargo_deny() {
  local root="$TOOLS/cargo-deny-$DENY_VERSION"
  [ -x "$root/bin/cargo-deny" ] && return 0
  say "installing cargo-deny $DENY_VERSION into $root (once; about 2.5 min on 2 cores)"
  # Its release profile asks for fat LTO in one codegen unit: a long single-threaded link
  # for a tool that runs for seconds here. Built without (the config overrides the manifest).
  CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
    cargo install cargo-deny --version "=$DENY_VERSION" --locked --root "$root"
}

wasm_bindgen_version() {
  awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' "$here/../sdk/js/Cargo.lock"
}
install_wasm_bindgen() {
  local wb root
  wb=$(wasm_bindgen_version)
  root="$TOOLS/wasm-bindgen-$wb"
  "$root/bin/wasm-bindgen" --version 2>/dev/null | grep -qx "wasm-bindgen $wb" && return 0
  say "installing wasm-bindgen-cli $wb into $root"
  # --locked first; without it when the registry lacks a version its lock file names.
  cargo install wasm-bindgen-cli --version "=$wb" --locked --root "$root" \
    || cargo install wasm-bindgen-cli --version "=$wb" --root "$root"
}

install_nightly() {
  rustup run nightly rustc --version >/dev/null 2>&1 && return 0
  say "installing the nightly toolchain (cargo-fuzz needs it)"
  rustup toolchain install nightly --profile minimal
}
install_cargo_fuzz() {
  command -v cargo-fuzz >/dev/null && return 0
  say "installing cargo-fuzz"
  cargo install cargo-fuzz --locked
}
# The fuzz targets under AddressSanitizer, into the directory scripts/fuzz.sh runs them from
# (cargo's own lock on it keeps two builds from overlapping).
fuzz_target_dir() { echo "$CACHE/target-fuzz"; }
build_fuzz() {
  with_lock nightly install_nightly
  with_lock cargo-fuzz install_cargo_fuzz
  say "building the fuzz targets (AddressSanitizer)"
  (cd "$here/../fuzz" && cargo +nightly fuzz build --target-dir "$(fuzz_target_dir)")
}

ensure_rust >&2
case "${1:-}" in
  cargo-deny) with_lock cargo-deny install_cargo_deny >&2; echo "$TOOLS/cargo-deny-$DENY_VERSION/bin/cargo-deny" ;;
  wasm-bindgen) with_lock wasm-bindgen install_wasm_bindgen >&2; echo "$TOOLS/wasm-bindgen-$(wasm_bindgen_version)/bin/wasm-bindgen" ;;
  fuzz) build_fuzz >&2; fuzz_target_dir ;;
  prebuild)
    # In the order the test command needs them (scripts/test.sh runs the steps that need
    # wasm-bindgen-cli, the fuzz build and cargo-deny last). Each failure is reported and the
    # rest go on.
    # Started in a session of its own (setsid, as scripts/test.sh does), this is also its own
    # autogroup where the kernel groups tasks by session (sched_autogroup_enabled): the group,
    # not only its tasks, must be niced, or the scheduler shares the CPU half and half with
    # the caller's session (measured on 2026-11-27: the background took about half of both
    # cores during the workspace's build). Only as a session leader: otherwise the autogroup
    # is the caller's own.
    if [ "$(ps -o sid= -p $$ 2>/dev/null | tr -d ' ')" = "$$" ]; then
      echo 19 >/proc/self/autogroup 2>/dev/null || true
    fi
    failed=()
    step() { local t=$SECONDS; if "$@"; then say "prebuild: $* done in $((SECONDS - t)) s"; else failed+=("$*"); say "prebuild: $* FAILED (the step that needs it builds it again)"; fi; }
    # SeaweedFS first: the longest of the Go builds (about 4 min), and the first test that
    # needs it waits for it; the test command builds the witnesses itself before the tests
    # if the background has not (measured on 2026-11-27 with the witnesses first: SeaweedFS
    # ready only 7 min into the tests, the gateway's test binary 298 s instead of 77).
    if [ "${DGSP_SKIP_S3:-0}" != 1 ]; then step "$here/s3.sh" install; fi
    if [ "${DGSP_SKIP_WITNESSES:-0}" != 1 ]; then step "$here/witnesses.sh" install; fi
    step "$0" wasm-bindgen
    if [ "${DGSP_FUZZ_SECONDS:-60}" != 0 ]; then step "$0" fuzz; fi
    step "$0" cargo-deny
    [ ${#failed[@]} = 0 ] || { say "prebuild: failed: ${failed[*]}"; exit 1; }
    ;;
  *) sed -n '2,16p' "$0" >&2; exit 2 ;;
esac
