#!/usr/bin/env bash
# Everything for the JavaScript SDK, idempotent: tools (wasm-bindgen-cli, Debian's chromium),
# the DGSP binaries for the live stack, ./build.sh (the WebAssembly package and dist/page),
# npm ci, the TypeScript types (tsc), Node's test runner (conformance vectors and the live stack), the packed tarball
# installed and imported in a scratch project, and the verification page in headless
# Chromium with a screenshot per case in ./artifacts.
#
#   DGSP_BIN=DIR   use the dgsp-registry, dgsp-gateway, dgsp-manager in DIR (no cargo build)
#   CHROMIUM=PATH  the browser (default /usr/bin/chromium)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
# shellcheck source=../../scripts/lib.sh
. "$ROOT/scripts/lib.sh"
cd "$HERE"

node -e 'process.exit(+process.versions.node.split(".")[0] >= 20 ? 0 : 1)' \
  || { echo "Node 20 or newer is needed (node --version: $(node --version))" >&2; exit 1; }
if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  say "installing Debian's chromium"
  as_root apt-get update -qq && as_root apt-get install -y -qq chromium
fi

if [ -z "${DGSP_BIN:-}" ]; then
  use_shared_target_dir
  say "building dgsp-registry, dgsp-gateway, dgsp-manager (dev profile)"
  (cd "$ROOT" && cargo build --locked -p dgsp-registry -p dgsp-gateway -p dgsp-manager)
  export DGSP_BIN="$CARGO_TARGET_DIR/debug"
fi

say "js SDK: rustfmt --check (clippy -D warnings: in the wasm build below, clippy-driver compiling the SDK's own crate)"
rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown \
  || rustup target add wasm32-unknown-unknown
rustfmt --edition 2021 --check src/lib.rs

with_clippy ./build.sh
say "npm ci"
npm ci --no-audit --no-fund --loglevel=error

say "tsc: the TypeScript types (types-test/use.ts)"
npx tsc -p types-test

say "node --test test/ (conformance vectors, live stack)"
DGSP_JS_REQUIRE_LIVE=1 node --test test/

say "npm pack, installed and imported in a scratch project"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
tgz=$(npm pack --silent --pack-destination "$scratch" | tail -1)
(cd "$scratch" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund "./$tgz" \
  && node --input-type=module -e "
    import { TrustRoot, DgspError, version } from '@dgsp/verifier';
    import { readFileSync } from 'node:fs';
    const doc = JSON.parse(readFileSync('$ROOT/sdk/vectors/conformance.json', 'utf8'));
    const c = doc.cases.find((x) => x.kind === 'answer' && x.expect.valid);
    const root = TrustRoot.fromKeyFile(doc.groups[c.group]);
    const r = root.checkAnswer(Buffer.from(c.message, 'base64'), c.signature, c.answer, c.snapshot, c.policy);
    if (!r.valid) throw new Error('the packed package disagrees with the vectors');
    console.log('  packed @dgsp/verifier ' + version() + ': ok (' + root.params + ')');")

say "the verification page in headless Chromium"
node browser-test/page.mjs
