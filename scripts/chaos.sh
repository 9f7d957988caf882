#!/usr/bin/env bash
# The chaos suite (docs/chaos.md): builds dgsp-registry, dgsp-gateway, dgsp-manager and
# dgsp-chaos, installs Debian's libfaketime if it is missing, and runs the suite for
# DGSP_CHAOS_SECONDS seconds (default 120). Arguments go to dgsp-chaos.
#
#   ./scripts/chaos.sh                              # 120 s, a random seed (printed)
#   DGSP_CHAOS_SECONDS=3600 ./scripts/chaos.sh      # an hour
#   ./scripts/chaos.sh --seed 1234                  # the schedule of a failed run again
#   DGSP_CHAOS_PROFILE=release ./scripts/chaos.sh   # release binaries
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
prepare_build

# libfaketime moves the registry's wall clock under it (LD_PRELOAD). DGSP_FAKETIME_LIB
# names another copy (then nothing is installed).
if [ -z "${DGSP_FAKETIME_LIB:-}" ] && ! dpkg -s libfaketime >/dev/null 2>&1; then
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

export DGSP_CHAOS_SECONDS=${DGSP_CHAOS_SECONDS:-120}
say "chaos suite: ${DGSP_CHAOS_SECONDS} s of chaos"
"$CARGO_TARGET_DIR/$profile/dgsp-chaos" --bin-dir "$CARGO_TARGET_DIR/$profile" "$@"
