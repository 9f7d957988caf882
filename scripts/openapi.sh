#!/usr/bin/env bash
# Regenerates the committed OpenAPI documents from the code:
#   ./scripts/openapi.sh          writes openapi/registry.json and openapi/gateway.json
# The tests registry/tests/openapi.rs and gateway/tests/openapi.rs fail when they are stale.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
use_shared_target_dir
say "generating openapi/registry.json and openapi/gateway.json"
cargo run -q -p dgsp-registry -- openapi > openapi/registry.json.tmp
cargo run -q -p dgsp-gateway -- openapi > openapi/gateway.json.tmp
mv openapi/registry.json.tmp openapi/registry.json
mv openapi/gateway.json.tmp openapi/gateway.json
say "done"
