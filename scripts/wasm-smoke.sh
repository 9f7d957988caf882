#!/usr/bin/env bash
# Runs the verify-only dgsp-core (no default features) as WebAssembly under Node.js: a
# group signature made on the host must verify in wasm32-unknown-unknown, tampered ones not.
#   ./scripts/wasm-smoke.sh [PARAMSET]      (default sha2-128f)
# Needs `node` (18 or later): without it, it fails saying so (the test command runs it).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

use_shared_target_dir
if ! command -v node >/dev/null; then
  echo "wasm smoke: node (18 or later) is needed to run the WebAssembly verifier: install Node.js (Debian: apt-get install nodejs)" >&2
  exit 1
fi
rustup target list --installed | grep -q wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
manifest=scripts/wasm-smoke/Cargo.toml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

say "wasm smoke: a signature made on the host (dgsp-core's example wasm_smoke_gen, with sign)"
if [ "${DGSP_WORKSPACE_BUILD:-0}" = 1 ]; then
  # The test command's first build made it: this is that build again, found up to date.
  cargo_linted build --workspace --all-targets --locked --quiet
else
  cargo build --locked -p dgsp-core --example wasm_smoke_gen
fi
"$CARGO_TARGET_DIR/debug/examples/wasm_smoke_gen" "$tmp" "${1:-sha2-128f}"

say "wasm smoke: verified in wasm32-unknown-unknown (without sign), under node"
cargo build --release --locked --manifest-path "$manifest" --lib --target wasm32-unknown-unknown
node scripts/wasm-smoke/run.mjs "$CARGO_TARGET_DIR/wasm32-unknown-unknown/release/dgsp_wasm_smoke.wasm" "$tmp"
