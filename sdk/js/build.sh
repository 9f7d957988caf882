#!/usr/bin/env bash
# Builds @dgsp/verifier: the Rust crate here for wasm32-unknown-unknown (release profile:
# opt-level s, LTO), wasm-bindgen's `--target web` glue in ./pkg (loaded by index.js in
# browsers and by node.js in Node via initSync), wasm-opt -Os when Debian's binaryen is
# installed; then assembles the verification page at ./dist/page (page files, the SDK's
# JavaScript and the WebAssembly module, flat: what `dgsp-gateway serve --web-dir` serves at
# /verify/). Idempotent; wasm-bindgen-cli, pinned to the wasm-bindgen crate's exact version,
# is installed once under ~/.cache/dgsp/tools.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
say() { printf '\033[1m==> %s\033[0m\n' "$*"; }

# wasm-bindgen-cli at the wasm-bindgen crate's exact version, built once (scripts/tools.sh).
WASM_BINDGEN=$(../../scripts/tools.sh wasm-bindgen)
rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown \
  || rustup target add wasm32-unknown-unknown

say "building the WebAssembly module"
start=$(date +%s)
cargo build --target wasm32-unknown-unknown --release --locked
rm -rf pkg
"$WASM_BINDGEN" --target web --out-dir pkg \
  "${CARGO_TARGET_DIR:-target}/wasm32-unknown-unknown/release/dgsp_verifier_wasm.wasm"
WASM=pkg/dgsp_verifier_wasm_bg.wasm
# wasm-opt -Os when binaryen is installed, kept only if the module still loads and runs
# (binaryen before about version 116, Debian 12's 108 say, breaks wasm-bindgen's externref
# table: the module then fails to instantiate).
smoke() {
  node --input-type=module -e "
    import { readFileSync } from 'node:fs';
    const m = await import('./pkg/dgsp_verifier_wasm.js');
    m.initSync({ module: readFileSync('$WASM') });
    if (m.version() !== '0.1.0') process.exit(1);" 2>/dev/null
}
smoke || { echo "the module wasm-bindgen made does not load in Node" >&2; exit 1; }
if command -v wasm-opt >/dev/null; then
  cp "$WASM" "$WASM.orig"
  if wasm-opt -Os --strip-debug --enable-reference-types --enable-bulk-memory --enable-sign-ext \
      --enable-mutable-globals --enable-nontrapping-float-to-int --enable-multivalue \
      "$WASM.orig" -o "$WASM" 2>/dev/null && smoke; then
    say "wasm-opt -Os ($(wasm-opt --version)): $(wc -c < "$WASM.orig") -> $(wc -c < "$WASM") bytes"
  else
    say "wasm-opt ($(wasm-opt --version)) broke or failed on the module: kept the module unoptimised"
    cp "$WASM.orig" "$WASM"
  fi
  rm -f "$WASM.orig"
else
  say "wasm-opt not found (apt-get install binaryen): module left as rustc made it"
fi
say "pkg/: $(wc -c < "$WASM") bytes of WebAssembly ($(gzip -9c "$WASM" | wc -c) gzipped), $(( $(date +%s) - start )) s"

say "assembling the verification page in dist/page"
rm -rf dist/page
mkdir -p dist/page
cp page/index.html page/page.js page/page.css dist/page/
# Flat: the page's copies of the SDK's modules import the glue from ./ rather than ./pkg/.
for f in index.js verifier.js; do sed 's#\./pkg/#./#g' "$f" > "dist/page/$f"; done
cp pkg/dgsp_verifier_wasm.js "$WASM" dist/page/
ls -l dist/page
