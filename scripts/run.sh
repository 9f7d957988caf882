#!/usr/bin/env bash
# The README's main-job command. Until the registry and gateway land, it runs the core
# demo: a whole group life cycle with sizes and timings for each parameter set given
# (default shake-256f and sha2-128f; `all` for the twelve).
#   ./scripts/run.sh [PARAM_SET ...]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ensure_rust
ensure_system_packages
use_shared_target_dir

say "building the demo (release)"
cargo build --release --locked -p dgsp-core --example demo
say "running"
exec "$CARGO_TARGET_DIR/release/examples/demo" "$@"
