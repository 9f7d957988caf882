#!/usr/bin/env bash
# The chaos suite (docs/chaos.md): builds dgsp-registry, dgsp-gateway, dgsp-manager and
# dgsp-chaos, installs Debian's libfaketime if it is missing, and runs both scenarios:
# DGSP_CHAOS_SECONDS seconds (default 120) of one registry under crashes and clock jumps,
# then DGSP_CHAOS_JOURNAL_SECONDS (default 90) of the journal scenario (`--journal`: a
# writer and a standby on SeaweedFS, scripts/s3.sh, behind fault proxies). Arguments go to
# dgsp-chaos, in both runs; with --journal among them only the journal scenario runs.
#
#   ./scripts/chaos.sh                              # both scenarios, random seeds (printed)
#   DGSP_CHAOS_SECONDS=3600 DGSP_CHAOS_JOURNAL_SECONDS=3600 ./scripts/chaos.sh   # an hour each
#   ./scripts/chaos.sh --seed 1234                  # the schedule of a failed run again
#   ./scripts/chaos.sh --journal --seed 1234        # the journal scenario alone
#   DGSP_CHAOS_PROFILE=release ./scripts/chaos.sh   # release binaries
#   DGSP_SKIP_S3=1 ./scripts/chaos.sh               # no journal scenario (says SKIPPED)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
prepare_build

journal_only=0
for a in "$@"; do [ "$a" = --journal ] && journal_only=1; done

# libfaketime moves the registry's wall clock under it (LD_PRELOAD). DGSP_FAKETIME_LIB
# names another copy (then nothing is installed).
if [ "$journal_only" = 0 ] && [ -z "${DGSP_FAKETIME_LIB:-}" ] && ! dpkg -s libfaketime >/dev/null 2>&1; then
  say "installing libfaketime (the registry's clock is moved under it)"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq libfaketime
fi

profile=${DGSP_CHAOS_PROFILE:-debug}
case "$profile" in
  debug) flags=() ;;
  release) flags=(--release) ;;
  *) echo "DGSP_CHAOS_PROFILE must be debug or release, not $profile" >&2; exit 2 ;;
esac
say "building the services and the chaos suite ($profile)"
if [ "$profile" = debug ]; then
  build_dev_bins dgsp-registry dgsp-gateway dgsp-manager dgsp-chaos
else
  cargo build --locked "${flags[@]}" -p dgsp-registry -p dgsp-gateway -p dgsp-manager -p dgsp-chaos
fi
chaos=("$CARGO_TARGET_DIR/$profile/dgsp-chaos" --bin-dir "$CARGO_TARGET_DIR/$profile")

status=0
if [ "$journal_only" = 0 ]; then
  export DGSP_CHAOS_SECONDS=${DGSP_CHAOS_SECONDS:-120}
  say "chaos suite: ${DGSP_CHAOS_SECONDS} s of chaos"
  "${chaos[@]}" "$@" || status=1
fi

journal_secs=${DGSP_CHAOS_JOURNAL_SECONDS:-90}
if [ "$journal_only" = 1 ]; then journal_secs=${DGSP_CHAOS_SECONDS:-$journal_secs}; fi
if [ "${DGSP_SKIP_S3:-0}" = 1 ]; then
  say "SKIPPED: the chaos suite's journal scenario (DGSP_SKIP_S3=1): the journal and the lease are NOT tested in this run"
  # Counted as skipped by the test command's tally (scripts/tally.awk).
  echo "test result: ok. 0 passed; 0 failed; 1 ignored (chaos journal scenario skipped: DGSP_SKIP_S3=1)"
else
  # SeaweedFS, built once (dgsp-chaos starts it through scripts/s3.sh, or uses
  # DGSP_TEST_S3_ENDPOINT).
  [ -n "${DGSP_TEST_S3_ENDPOINT:-}" ] || ./scripts/s3.sh install
  say "chaos suite, the journal scenario: ${journal_secs} s of chaos"
  if [ "$journal_only" = 1 ]; then
    DGSP_CHAOS_SECONDS=$journal_secs "${chaos[@]}" "$@" || status=1
  else
    DGSP_CHAOS_SECONDS=$journal_secs "${chaos[@]}" --journal "$@" || status=1
  fi
fi
exit "$status"
