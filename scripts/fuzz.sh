#!/usr/bin/env bash
# Coverage-guided fuzzing (fuzz/, cargo-fuzz; docs/fuzzing.md): the native SPHINCS+ verifier
# against PQClean (spx_verify_diff), every core binary decoder plus checkpoint notes
# (decoders), the feed as the gateway's follower checks it (gateway_feed), every request
# body of both services (request_bodies) and the files the CLI reads (cli_files).
#   ./scripts/fuzz.sh                          # every target for DGSP_FUZZ_SECONDS (default 60) each
#   DGSP_FUZZ_SECONDS=3600 ./scripts/fuzz.sh   # a long run
#   DGSP_FUZZ_SECONDS=0 ./scripts/fuzz.sh      # skip (build nothing)
#   DGSP_FUZZ_TARGETS="cli_files" ./scripts/fuzz.sh   # some targets only
# Installs the nightly toolchain and cargo-fuzz when missing (idempotent). Every run is under
# AddressSanitizer with a memory bound: a process above 2 GiB of RSS or a single allocation
# above 512 MiB is a finding, like a crash, a panic or a 30 s input. A finding stops the run
# with the input under fuzz/artifacts/<target>/; replay it with
#   cargo +nightly fuzz run <target> fuzz/artifacts/<target>/<file>
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

seconds="${DGSP_FUZZ_SECONDS:-60}"
if [ "$seconds" = 0 ]; then
  say "fuzzing skipped (DGSP_FUZZ_SECONDS=0)"
  exit 0
fi
ensure_rust
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  say "installing the nightly toolchain (cargo-fuzz needs it)"
  rustup toolchain install nightly --profile minimal
fi
if ! command -v cargo-fuzz >/dev/null; then
  say "installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi
target_dir="${DGSP_CACHE_DIR:-$HOME/.cache/dgsp}/target-fuzz"
cd fuzz
targets="${DGSP_FUZZ_TARGETS:-$(cargo +nightly fuzz list)}"
start=$SECONDS
say "building the fuzz targets (AddressSanitizer)"
cargo +nightly fuzz build --target-dir "$target_dir"
built=$SECONDS
for t in $targets; do
  say "fuzzing $t for ${seconds} s"
  mkdir -p "corpus/$t"
  # Committed seeds (fuzz/seeds/<target>, read only) join the working corpus.
  seeds=()
  [ -d "seeds/$t" ] && seeds=("seeds/$t")
  cargo +nightly fuzz run --target-dir "$target_dir" "$t" "corpus/$t" "${seeds[@]}" -- \
    -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 -malloc_limit_mb=512 \
    -print_final_stats=1
done
say "fuzzing done: build $((built - start)) s, runs $((SECONDS - built)) s"
