#!/usr/bin/env bash
# Coverage-guided fuzzing (fuzz/, cargo-fuzz; docs/fuzzing.md): the native SPHINCS+ verifier
# against PQClean and slh-dsa on all 24 sets (spx_verify_diff), every core binary decoder plus checkpoint notes
# (decoders), the feed as the gateway's follower checks it (gateway_feed), every request
# body of both services (request_bodies) and the files the CLI reads (cli_files).
#   ./scripts/fuzz.sh                          # every target for DGSP_FUZZ_SECONDS (default 60) each
#   DGSP_FUZZ_SECONDS=3600 ./scripts/fuzz.sh   # a long run
#   DGSP_FUZZ_SECONDS=0 ./scripts/fuzz.sh      # skip (build nothing)
#   DGSP_FUZZ_TARGETS="cli_files" ./scripts/fuzz.sh   # some targets only
#   DGSP_FUZZ_JOBS=1 ./scripts/fuzz.sh         # one target at a time (default: one per core)
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
start=$SECONDS
# The nightly toolchain, cargo-fuzz and the targets' AddressSanitizer build, each once
# (scripts/tools.sh, which the test command also runs in the background from its start).
target_dir=$(./scripts/tools.sh fuzz)
cd fuzz
targets="${DGSP_FUZZ_TARGETS:-$(cargo +nightly fuzz list)}"
built=$SECONDS
# libFuzzer runs one process per target: run as many targets at once as there are cores
# (DGSP_FUZZ_JOBS), each for the full DGSP_FUZZ_SECONDS, each writing its own log, shown
# when it ends. The first finding fails the run once every running target has ended.
jobs="${DGSP_FUZZ_JOBS:-$(nproc)}"
logs=$(mktemp -d -t dgsp-fuzz.XXXXXX)
declare -A pid_target=()
failed=()
finish_one() {
  local pid rc=0 t
  wait -n -p pid "${!pid_target[@]}" || rc=$?
  t=${pid_target[$pid]}
  unset "pid_target[$pid]"
  say "fuzzing $t: ended ($( [ "$rc" = 0 ] && echo "no finding" || echo "FINDING, exit $rc"))"
  if [ "$rc" = 0 ]; then
    grep -E '^(stat::|#[0-9]+.*DONE)' "$logs/$t.log" || true
  else
    cat "$logs/$t.log"
    failed+=("$t")
  fi
}
for t in $targets; do
  while [ "${#pid_target[@]}" -ge "$jobs" ]; do finish_one; done
  say "fuzzing $t for ${seconds} s (log: $logs/$t.log)"
  mkdir -p "corpus/$t"
  # Committed seeds (fuzz/seeds/<target>, read only) join the working corpus.
  seeds=()
  [ -d "seeds/$t" ] && seeds=("seeds/$t")
  cargo +nightly fuzz run --target-dir "$target_dir" "$t" "corpus/$t" "${seeds[@]}" -- \
    -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 -malloc_limit_mb=512 \
    -print_final_stats=1 > "$logs/$t.log" 2>&1 &
  pid_target[$!]=$t
done
while [ "${#pid_target[@]}" -gt 0 ]; do finish_one; done
if [ "${#failed[@]}" -gt 0 ]; then
  say "fuzzing failed for: ${failed[*]} (a finding is kept under fuzz/artifacts/<target>/; the logs are in $logs)"
  exit 1
fi
rm -rf "$logs"
say "fuzzing done: build $((built - start)) s, runs $((SECONDS - built)) s ($jobs at a time)"
