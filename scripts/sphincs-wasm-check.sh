#!/usr/bin/env bash
# Compile check of the native SPHINCS+ verifier (core/src/sphincs) and the hash kernels it
# uses for wasm32-unknown-unknown. dgsp-core as a whole does not build for that target (the
# PQClean C code used for keygen and signing needs a C toolchain for it), so this builds a
# throwaway crate that includes only the verifier's source files by path.
#
#   scripts/sphincs-wasm-check.sh        (needs: rustup target add wasm32-unknown-unknown)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
src="$root/core/src"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/src"
cp "$root/Cargo.lock" "$dir/"
cat > "$dir/Cargo.toml" <<TOML
[package]
name = "sphincs-wasm-check"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
sha2 = { version = "0.10.8", features = ["compress"] }
sha3 = "0.10.8"
keccak = "0.1.5"
thiserror = "2"

[workspace]
TOML
cat > "$dir/src/lib.rs" <<RS
//! Compile check: the native SPHINCS+ verifier and its hash kernels, for any target.
#![deny(unsafe_code)]
#![allow(dead_code, unexpected_cfgs)]
#[path = "$src/params.rs"]
mod params;
#[path = "$src/error.rs"]
mod error;
pub type MemberId = u64;
mod hashes {
    #[allow(unsafe_code)]
    #[path = "$src/hashes/lanes.rs"]
    pub(crate) mod lanes;
    #[path = "$src/hashes/keccak_lanes.rs"]
    pub(crate) mod keccak_lanes;
    #[allow(unsafe_code)]
    #[path = "$src/hashes/sha512_lanes.rs"]
    pub(crate) mod sha512_lanes;
}
#[path = "$src/sphincs/mod.rs"]
pub mod sphincs;
RS
target="${CARGO_TARGET_DIR:-$HOME/.cache/dgsp}/sphincs-wasm-check"
(cd "$dir" && CARGO_TARGET_DIR="$target" cargo build --release --target wasm32-unknown-unknown "$@")
echo "sphincs verifier: builds for wasm32-unknown-unknown"
