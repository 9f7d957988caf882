#!/usr/bin/env bash
# The real dgsp-gateway process over N revoked zetas (docs/benchmarks.md, "The revoked set at
# 10^8", issue 30 item 3): for each N given,
#   1. gateway/examples/replica_rss.rs writes a replica whose latest signed snapshot covers N
#      random revoked zetas (a throwaway group key; the gateway's own Replica API);
#   2. the release dgsp-gateway starts on it, its --registry a closed loopback port (it
#      serves from its replica and retries the registry in the background);
#   3. once GET /v1/revocations/{zeta}/proof answers for a revoked zeta, its VmHWM and VmRSS
#      are read from /proc/PID/status, and the time from the process's start to that answer;
#   4. the proofs for that zeta and an absent one are checked offline against the signed
#      snapshot the gateway serves and the group key (dgsp-manager check-proof);
# then prints one line. VmRSS is sampled every 0.2 s during the start (kept in the work
# directory with DGSP_MEASURE_KEEP=1). Measure N=0 first in the same run to have the lines
# say the growth over that baseline per zeta.
#
#   ./scripts/measure-gateway-rss.sh 0 1000000 10000000
#   DGSP_MEASURE_DIR=/var/tmp ./scripts/measure-gateway-rss.sh 0 100000000   # ~4 GB of disk
#   DGSP_MEASURE_NO_BUILD=1 ...   # use the release binaries already built
#   DGSP_MEASURE_BIN=DIR ...      # dgsp-gateway, dgsp-manager and examples/replica_rss from DIR (no build;
#                                 # DGSP_MEASURE_COMMIT=C: the commit they were built from)
#   DGSP_MEASURE_NICE=19 ...      # the heavy steps (writing, the gateway) under nice
#
# Uses the release build of the shared target directory (scripts/lib.sh), made with the
# workspace's build command if DGSP_MEASURE_NO_BUILD is unset. Nothing leaves loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
use_shared_target_dir >/dev/null

[ $# -ge 1 ] || { echo "usage: $0 N [N...]" >&2; exit 2; }
PORT=${DGSP_MEASURE_PORT:-17960}
# Port 9 (discard): nothing listens there, so the follower's requests are refused at once.
CLOSED=${DGSP_MEASURE_CLOSED_PORT:-9}
NICE=${DGSP_MEASURE_NICE:-0}
ROOT=${DGSP_MEASURE_DIR:-/tmp}
BIN=${DGSP_MEASURE_BIN:-$CARGO_TARGET_DIR/release}
if [ -z "${DGSP_MEASURE_BIN:-}" ] && [ "${DGSP_MEASURE_NO_BUILD:-0}" != 1 ]; then
  CARGO_INCREMENTAL=0 cargo_linted build --release -p dgsp-gateway --all-targets --locked >&2
  CARGO_INCREMENTAL=0 cargo_linted build --release -p dgsp-manager --bin dgsp-manager --locked >&2
fi
GATEWAY="$BIN/dgsp-gateway" TOOL="$BIN/examples/replica_rss" MANAGER="$BIN/dgsp-manager"
for b in "$GATEWAY" "$TOOL" "$MANAGER"; do [ -x "$b" ] || { echo "missing $b" >&2; exit 1; }; done

# check_proof ANSWER ZETA revoked|absent: the gateway's answer for ZETA verified offline
# against the signed snapshot it serves and the group key (dgsp-manager check-proof), showing
# what is expected, as the answer itself says, in the snapshot the answer names.
check_proof() {
  local report want
  report=$("$MANAGER" --json check-proof --group-key "$WORK/group.pub" \
    --snapshot "$WORK/snapshot.json" --zeta "$2" --proof "$1")
  want=$([ "$3" = revoked ] && echo true || echo false)
  jq -e --argjson want "$want" --slurpfile answer "$1" \
    '.verified and .revoked == $want and $answer[0].revoked == $want
     and $answer[0].snapshot.number == .snapshot' <<<"$report" >/dev/null ||
    { echo "the proof for $2 does not show it $3: $report" >&2; exit 1; }
  echo "verified: $2 $3 in snapshot $(jq -r .snapshot <<<"$report")" >&2
}
if (exec 3<>"/dev/tcp/127.0.0.1/$CLOSED") 2>/dev/null; then
  echo "something listens on 127.0.0.1:$CLOSED: set DGSP_MEASURE_CLOSED_PORT to a closed port" >&2
  exit 1
fi

WORK="" PID=""
cleanup() {
  if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
  if [ -n "$WORK" ]; then
    if [ "${DGSP_MEASURE_KEEP:-0}" = 1 ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi
  fi
}
trap cleanup EXIT

kb() { awk -v f="$1:" '$1 == f { print $2 }' "/proc/$2/status"; }
BASE_HWM="" BASE_RSS=""
say "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $(free -g | awk '/^Mem:/ { print $2 }') GiB; commit ${DGSP_MEASURE_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo "?")}; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for N in "$@"; do
  WORK=$(mktemp -d "$ROOT/dgsp-gateway-rss.$N.XXXXXX")
  say "N=$N: writing the replica in $WORK" >&2
  nice -n "$NICE" "$TOOL" write --out "$WORK" --zetas "$N" >"$WORK/write.json"
  cat "$WORK/write.json" >&2
  REVOKED=$(jq -r '.revoked_probe // empty' "$WORK/write.json")
  ABSENT=$(jq -r '.absent_probe' "$WORK/write.json")
  ASK=${REVOKED:-$ABSENT}
  REPLICA_MIB=$(du -sm "$WORK/data/replica" | cut -f1)
  say "N=$N: starting the gateway (replica $REPLICA_MIB MiB)" >&2
  LOAD=$(cut -d' ' -f1 /proc/loadavg)
  T0=$(date +%s%N)
  nice -n "$NICE" "$GATEWAY" serve --registry "http://127.0.0.1:$CLOSED" \
    --group-key "$WORK/group.pub" --data "$WORK/data" --listen "127.0.0.1:$PORT" \
    >"$WORK/gateway.log" 2>&1 &
  PID=$!
  # VmRSS during the start (ms since the start, kB), until the first answer.
  (while [ ! -e "$WORK/answered" ] && kill -0 "$PID" 2>/dev/null; do
    echo "$((($(date +%s%N) - T0) / 1000000)) $(kb VmRSS "$PID")"
    sleep 0.2
  done >"$WORK/rss.tsv") &
  SAMPLER=$!
  # The listener is bound before the replica is read: a request made then waits in the
  # backlog and is answered as soon as the gateway serves.
  until curl -fsS -o "$WORK/proof.json" "http://127.0.0.1:$PORT/v1/revocations/$ASK/proof" 2>/dev/null; do
    kill -0 "$PID" 2>/dev/null || { cat "$WORK/gateway.log" >&2; echo "the gateway exited" >&2; exit 1; }
    sleep 0.05
  done
  T1=$(date +%s%N)
  HWM=$(kb VmHWM "$PID") RSS=$(kb VmRSS "$PID")
  touch "$WORK/answered"
  wait "$SAMPLER"
  START_S=$(awk -v a="$T0" -v b="$T1" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
  # The proofs, checked offline against the signed snapshot the gateway serves.
  curl -fsS -o "$WORK/snapshot.json" "http://127.0.0.1:$PORT/v1/revocations/snapshot"
  curl -fsS -o "$WORK/absent.json" "http://127.0.0.1:$PORT/v1/revocations/$ABSENT/proof"
  if [ -n "$REVOKED" ]; then check_proof "$WORK/proof.json" "$REVOKED" revoked; fi
  check_proof "$WORK/absent.json" "$ABSENT" absent
  RSS_AFTER=$(kb VmRSS "$PID")
  kill -TERM "$PID"
  wait "$PID" || true
  PID=""
  PEAK_SAMPLED=$(awk '$2 > m { m = $2 } END { print m + 0 }' "$WORK/rss.tsv")
  LINE="N=$N VmHWM=${HWM}kB VmRSS=${RSS}kB VmRSS_after_checks=${RSS_AFTER}kB start_to_answer=${START_S}s replica=${REPLICA_MIB}MiB sampled_peak_rss=${PEAK_SAMPLED}kB load_at_start=$LOAD proofs=verified"
  if [ "$N" -gt 0 ]; then
    LINE+=$(awk -v h="$HWM" -v r="$RSS" -v n="$N" 'BEGIN { printf " VmHWM/N=%.1fB VmRSS/N=%.1fB", h * 1024 / n, r * 1024 / n }')
    if [ -n "$BASE_HWM" ]; then
      LINE+=$(awk -v h="$HWM" -v r="$RSS" -v bh="$BASE_HWM" -v br="$BASE_RSS" -v n="$N" \
        'BEGIN { printf " (VmHWM-base)/N=%.1fB (VmRSS-base)/N=%.1fB", (h - bh) * 1024 / n, (r - br) * 1024 / n }')
    fi
  else
    BASE_HWM=$HWM BASE_RSS=$RSS
  fi
  echo "$LINE"
  cleanup
  WORK=""
done
