#!/usr/bin/env bash
# The Python verifier SDK: lints its Rust, builds the abi3 wheel, installs it, and runs the
# pytest suite (the shared conformance vectors, and a live registry + gateway on loopback).
# Idempotent; every step is cached (cargo's target directory, pip's installs).
#   ./sdk/python/test.sh                  # from anywhere
# Environment:
#   PYTHON=python3.12                     the interpreter to build for and test with
#   DGSP_PYTHON_LINT=0                    skip rustfmt --check and clippy on sdk/python
#   DGSP_PYTHON_LIVE=0                    do not build the service binaries when they are
#                                         missing (the live tests then skip, saying so)
#   DGSP_BIN_DIR=DIR                      where dgsp-registry, dgsp-gateway, dgsp-manager are
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
. "$repo/scripts/lib.sh"
PY="${PYTHON:-python3}"

ensure_rust
use_shared_target_dir

pip_install() {
  "$PY" -m pip install --quiet "$@" 2>/dev/null \
    || "$PY" -m pip install --quiet --break-system-packages "$@"
}
if ! "$PY" -c 'import sys, importlib.metadata as m; v = tuple(int(x) for x in m.version("maturin").split(".")[:2]); sys.exit(v < (1, 9))' 2>/dev/null; then
  say "installing maturin (the wheel builder)"
  pip_install 'maturin>=1.9.4,<2'
fi
if ! "$PY" -c 'import pytest' 2>/dev/null; then
  say "installing pytest"
  pip_install 'pytest>=7'
fi
if ! "$PY" -m mypy --version >/dev/null 2>&1; then
  say "installing mypy (the type check of the package and its tests)"
  pip_install 'mypy>=1.10'
fi

# The lints come with the wheel's build: clippy-driver compiles the SDK's own crate with
# clippy's lints denied (scripts/lib.sh, with_clippy), so its dependencies are not checked a
# second time by a separate `cargo clippy` (about a minute cold on 2 cores).
lint=()
if [ "${DGSP_PYTHON_LINT:-1}" != 0 ]; then
  say "python SDK: rustfmt --check (clippy -D warnings: in the wheel's build below)"
  rustfmt --edition 2021 --check "$here/src/lib.rs"
  lint=(with_clippy)
else
  say "python SDK: rustfmt and clippy switched off (DGSP_PYTHON_LINT=0)"
fi

say "python SDK: building the abi3 wheel (maturin build --release)"
rm -rf "$here/dist"
(cd "$here" && "${lint[@]}" "$PY" -m maturin build --release --locked --interpreter "$PY" -o dist)
wheel=$(ls "$here"/dist/dgsp_verifier-*-abi3-*.whl)
echo "  $(basename "$wheel"): $(du -k "$wheel" | cut -f1) KiB"
pip_install --force-reinstall --no-deps "$wheel"

# The live tests need the service binaries (conftest.py looks in DGSP_BIN_DIR,
# $CARGO_TARGET_DIR/debug, ~/.cache/dgsp/target/debug, target/debug).
bins_found() {
  local d
  for d in ${DGSP_BIN_DIR:-} "$CARGO_TARGET_DIR/debug" "$HOME/.cache/dgsp/target/debug" "$repo/target/debug"; do
    [ -x "$d/dgsp-registry" ] && [ -x "$d/dgsp-gateway" ] && [ -x "$d/dgsp-manager" ] && return 0
  done
  return 1
}
if ! bins_found && [ "${DGSP_PYTHON_LIVE:-1}" != 0 ]; then
  say "python SDK: building dgsp-registry, dgsp-gateway, dgsp-manager for the live tests"
  ensure_system_packages
  (cd "$repo" && cargo build --locked -p dgsp-registry -p dgsp-gateway -p dgsp-manager)
fi

say "python SDK: mypy --strict (the package and its tests)"
"$PY" -m mypy --strict --no-error-summary "$here/python/dgsp_verifier"
(cd "$here/tests" && "$PY" -m mypy --strict --ignore-missing-imports --no-error-summary .)

say "python SDK: pytest (conformance vectors; live registry + gateway on loopback)"
# Run from the tests' directory, not the source tree, so that the installed package is
# the one imported.
cd "$here/tests" && "$PY" -m pytest -q -p no:cacheprovider -rs .
