#!/usr/bin/env bash
# Supply-chain checks with cargo-deny (deny.toml): licences, banned or wildcard
# dependencies, and sources (crates.io only); advisories too when a RustSec database
# snapshot is at hand. See docs/dependencies.md.
#
#   ./scripts/supply-chain.sh
#
# Installs cargo-deny once (pinned, `cargo install --locked`) into
# ~/.cache/dgsp/tools/cargo-deny-<version> (DGSP_TOOLS_DIR to override).
#
# Environment:
#   DGSP_ADVISORY_DBS  a snapshot of cargo-deny's database directory: on a machine that
#                      reaches GitHub run `cargo deny fetch` and copy $CARGO_HOME/advisory-dbs.
#                      Advisories are then checked against it offline (the deliberate
#                      pqcrypto exceptions are in deny.toml). Without it the advisories check
#                      is skipped, and said so: the RustSec database lives on GitHub, which
#                      CI machines here cannot reach.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_rust

DENY_VERSION=0.20.2
TOOLS="${DGSP_TOOLS_DIR:-${DGSP_CACHE_DIR:-$HOME/.cache/dgsp}/tools}"
root="$TOOLS/cargo-deny-$DENY_VERSION"
deny="$root/bin/cargo-deny"
if [ ! -x "$deny" ]; then
  say "installing cargo-deny $DENY_VERSION into $root (once; several minutes on 2 cores)"
  cargo install cargo-deny --version "=$DENY_VERSION" --locked --root "$root"
fi

say "cargo deny: licences, bans, sources"
"$deny" --version
"$deny" --locked check --hide-inclusion-graph licenses bans sources

if [ -n "${DGSP_ADVISORY_DBS:-}" ]; then
  say "cargo deny: advisories against the snapshot in $DGSP_ADVISORY_DBS (offline)"
  DGSP_ADVISORY_DB_ROOT="$DGSP_ADVISORY_DBS" "$deny" --locked check --disable-fetch advisories
else
  say "cargo deny: advisories skipped (no RustSec snapshot: set DGSP_ADVISORY_DBS, see the header)"
fi
