#!/usr/bin/env bash
# The verifier's unit tests in WebAssembly: dgsp-core without `sign` (no C, no OS signing),
# its library tests built for wasm32-wasip1 and run under Node's WASI (scripts/wasi-run.mjs,
# cargo's runner for that target). The tests that need PQClean (C) or threads are left out
# of that build (`cfg(not(target_family = "wasm"))`); the host runs them all.
#   ./scripts/wasi-test.sh
# Needs Node.js 20 or later (node:wasi preview1) and the wasm32-wasip1 target (added with
# rustup when missing); fails, saying which, without them.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

use_shared_target_dir
if ! command -v node >/dev/null || [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then
  echo "wasi-test: Node.js 20 or later is needed to run WebAssembly tests (node:wasi): install it (Debian: apt-get install nodejs)" >&2
  exit 1
fi
rustup target list --installed | grep -q '^wasm32-wasip1$' || rustup target add wasm32-wasip1
export CARGO_TARGET_WASM32_WASIP1_RUNNER="node --no-warnings $PWD/scripts/wasi-run.mjs"
# (baseline-shake-256f only picks the parameter set of the host-only benchmark baseline.)
cargo test -p dgsp-core --no-default-features --features baseline-shake-256f --lib \
  --target wasm32-wasip1 --locked "$@"
