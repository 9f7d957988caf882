#!/usr/bin/env bash
# Load tests with k6 against the real binaries: a fresh registry and gateway on loopback,
# fixtures made through the registry's admin API, the raw core measured on the same
# fixtures before and after, then k6 at saturation (closed model) and at half that rate
# (open model). See loadtest/README.md.
#
#   ./loadtest/run.sh verify            # or batch, judge, reads, all (default: verify)
#
# Writes loadtest/results/<scenario>-<UTC stamp>.json (k6 summaries, raw core, CPU, ratio)
# and .txt (the short summary, also printed); the k6 exports themselves go to
# loadtest/results/<scenario>-<stamp>/.
#
# Environment (defaults in brackets):
#   LOADTEST_SIGNATURES [10000]  distinct signatures (10% revoked members' and 10% invalid)
#   LOADTEST_MEMBERS    [500]    members
#   LOADTEST_OPENINGS   [1000]   openings for judge
#   LOADTEST_VUS        [16]     virtual users at saturation (batch: LOADTEST_BATCH_VUS [3])
#   LOADTEST_BATCH      [32]     items per batch request
#   LOADTEST_SECS       [15]     seconds of the half-load run (and of judge/reads saturation)
#   LOADTEST_RAW_SECS   [8]      seconds of each raw core measurement
#   LOADTEST_PARAMS     [sha2-128f]
#   LOADTEST_REGISTRY   [127.0.0.1:7350]  LOADTEST_GATEWAY [127.0.0.1:7450]
#   LOADTEST_KEEP       [0]      1: keep the state directory (data, fixtures, logs)
#   LOADTEST_PIN        [1]      with 4 or more cores: k6 on the last quarter of them, the
#                                registry, gateway and raw core on the rest (0: no pinning)
#   K6_VERSION          [v1.8.1] built with `go install` into ~/.cache/dgsp/tools/bin if absent
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
. scripts/lib.sh

SCENARIO="${1:-verify}"
case "$SCENARIO" in
  verify | batch | judge | reads) SCENARIOS=("$SCENARIO") ;;
  all) SCENARIOS=(verify batch judge reads) ;;
  *) echo "usage: $0 [verify|batch|judge|reads|all]" >&2; exit 2 ;;
esac

SIGS="${LOADTEST_SIGNATURES:-10000}"
MEMBERS="${LOADTEST_MEMBERS:-500}"
OPENINGS="${LOADTEST_OPENINGS:-1000}"
VUS="${LOADTEST_VUS:-16}"
SECS="${LOADTEST_SECS:-15}"
RAW_SECS="${LOADTEST_RAW_SECS:-8}"
PARAMS="${LOADTEST_PARAMS:-sha2-128f}"
REG_LISTEN="${LOADTEST_REGISTRY:-127.0.0.1:7350}"
GW_LISTEN="${LOADTEST_GATEWAY:-127.0.0.1:7450}"
K6_VERSION="${K6_VERSION:-v1.8.1}"
BATCH="${LOADTEST_BATCH:-32}"
TOOLS="${DGSP_CACHE_DIR:-$HOME/.cache/dgsp}/tools/bin"
RESULTS="$ROOT/loadtest/results"

ensure_rust
ensure_system_packages
use_shared_target_dir

# k6 has no Debian or npm package: build the pinned release with Go, once.
ensure_k6() {
  K6="$TOOLS/k6"
  if [ -x "$K6" ] && "$K6" version 2>/dev/null | grep -q "k6 $K6_VERSION "; then return; fi
  if ! command -v go >/dev/null; then
    [ -x /usr/local/go/bin/go ] && export PATH="/usr/local/go/bin:$PATH" || {
      echo "k6 $K6_VERSION is built from source with Go, which is missing: install Go" \
        "(https://go.dev/dl/), then run this again." >&2
      return 1
    }
  fi
  say "building k6 $K6_VERSION with $(go version | cut -d' ' -f3) into $TOOLS (first time only: ~6 minutes on 2 cores)"
  mkdir -p "$TOOLS"
  GOBIN="$TOOLS" go install "go.k6.io/k6@$K6_VERSION"
  "$K6" version
}
ensure_k6

say "building dgsp-registry, dgsp-gateway and dgsp-loadtest (release)"
cargo build --release --locked -p dgsp-registry -p dgsp-gateway -p dgsp-loadtest-fixtures
BIN="$CARGO_TARGET_DIR/release"
LT="$BIN/dgsp-loadtest"

# A fresh group, registry and gateway in a state directory of their own.
mkdir -p "${DGSP_CACHE_DIR:-$HOME/.cache/dgsp}/loadtest" "$RESULTS"
STATE=$(mktemp -d "${DGSP_CACHE_DIR:-$HOME/.cache/dgsp}/loadtest/run.XXXXXX")
REG_PID=
GW_PID=
cleanup() {
  stop_stack
  if [ "${LOADTEST_KEEP:-0}" = 1 ]; then say "kept $STATE"; else rm -rf "$STATE"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Disjoint cores for k6 and the services where there are enough: k6 competing with the
# gateway for its cores would make the gateway look slower than it is. The raw core is
# measured on the gateway's cores ("its own cores") and on the whole machine.
expand_cpus() { # "0-3,8" -> "0 1 2 3 8"
  local part out=()
  for part in ${1//,/ }; do
    if [[ $part == *-* ]]; then out+=($(seq "${part%-*}" "${part#*-}")); else out+=("$part"); fi
  done
  echo "${out[@]}"
}
read -r -a ALLOWED <<< "$(expand_cpus "$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)")"
PIN_K6=() PIN_SVC=() PINNING="not pinned (fewer than 4 cores, or LOADTEST_PIN=0)"
if [ "${LOADTEST_PIN:-1}" = 1 ] && [ "${#ALLOWED[@]}" -ge 4 ]; then
  K6_N=$(( (${#ALLOWED[@]} + 3) / 4 ))
  SVC_LIST=$(IFS=,; echo "${ALLOWED[*]:0:${#ALLOWED[@]}-K6_N}")
  K6_LIST=$(IFS=,; echo "${ALLOWED[*]: -K6_N}")
  PIN_K6=(taskset -c "$K6_LIST") PIN_SVC=(taskset -c "$SVC_LIST")
  export DGSP_STACK_CPUS="$SVC_LIST"
  PINNING="registry, gateway and raw core on CPUs $SVC_LIST; k6 on CPUs $K6_LIST"
fi
say "cores: ${#ALLOWED[@]}; $PINNING"

start_stack "$BIN" "$STATE" "$PARAMS" "$REG_LISTEN" "$GW_LISTEN" || { LOADTEST_KEEP=1; exit 1; }

say "generating fixtures: $MEMBERS members, $SIGS distinct signatures, $OPENINGS openings"
FIX="$STATE/fixtures"
# With --gateway it also waits until the gateway has applied everything the run caused (a
# snapshot covering its revocations included) and spot-checks one item of each kind.
"$LT" generate --registry "http://$REG_LISTEN" --admin-token-file "$STATE/admin-token" \
  --out "$FIX" --members "$MEMBERS" --signatures "$SIGS" --openings "$OPENINGS" \
  --gateway "http://$GW_LISTEN" >/dev/null

# utime + stime of a process, in clock ticks (0 once it is gone).
ticks() {
  local s
  s=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }
  s=${s##*) }
  # shellcheck disable=SC2086
  set -- $s
  echo $(( ${12} + ${13} ))
}
# Busy ticks of the whole machine (every process, all cores).
machine_ticks() {
  local _cpu user nice system _idle _iowait irq softirq steal _rest
  read -r _cpu user nice system _idle _iowait irq softirq steal _rest < /proc/stat
  echo $(( user + nice + system + irq + softirq + steal ))
}
# Samples the CPU of k6 ($1), the gateway, the registry and the whole machine every 0.25 s
# into $2, so the report can tell the load test's share from other work on the machine.
sample_cpu() {
  local k6
  while kill -0 "$1" 2>/dev/null; do
    k6=$(ticks "$1")
    [ "$k6" = 0 ] || echo "$(date +%s%3N) $k6 $(ticks "$GW_PID") $(ticks "$REG_PID") $(machine_ticks)"
    sleep 0.25
  done > "$2"
}

# run_k6 SCRIPT LABEL OUTDIR [ENV=VALUE ...]: one k6 run; sets K6_EXIT.
run_k6() {
  local script=$1 label=$2 out=$3
  shift 3
  say "k6 $script: $label ($*)"
  set +e
  env GATEWAY="http://$GW_LISTEN" FIXTURES="$FIX" "$@" \
    "${PIN_K6[@]}" "$K6" run --quiet --no-color --summary-export "$out/$label.json" \
    "$ROOT/loadtest/k6/$script.js" > "$out/$label.log" 2>&1 &
  local pid=$!
  sample_cpu "$pid" "$out/$label.cpu" &
  local sampler=$!
  wait "$pid"
  K6_EXIT=$?
  wait "$sampler"
  set -e
  tail -n 40 "$out/$label.log" | grep -E "✓|✗|http_req_duration|http_reqs|checks|iterations" | grep -v "^ *$" | head -20 || true
}

K6_VERSION_LINE=$("$K6" version | head -1)
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
for sc in "${SCENARIOS[@]}"; do
  OUT="$RESULTS/$sc-$STAMP"
  mkdir -p "$OUT"
  say "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  say "raw core verify on the same fixtures (before)"
  "${PIN_SVC[@]}" "$LT" raw --fixtures "$FIX" --secs "$RAW_SECS" > "$OUT/raw-before.json"
  cat "$OUT/raw-before.json"
  MACHINE_RAW=()
  if [ "${#PIN_SVC[@]}" -gt 0 ]; then
    say "raw core verify on the whole machine"
    "$LT" raw --fixtures "$FIX" --secs "$RAW_SECS" > "$OUT/raw-machine.json"
    cat "$OUT/raw-machine.json"
    MACHINE_RAW=(--raw-machine "$OUT/raw-machine.json")
  fi

  # Batches: few requests in flight, or the gateway's queue (64 items per core) overflows
  # and it sheds whole batches with 503.
  SAT_VUS=$VUS
  [ "$sc" = batch ] && SAT_VUS="${LOADTEST_BATCH_VUS:-3}"
  run_k6 "$sc" saturation "$OUT" MODE=saturation VUS="$SAT_VUS" DURATION="${SECS}s" BATCH="$BATCH"
  SAT_EXIT=$K6_EXIT
  SAT_RATE=$("$LT" json-get "$OUT/saturation.json" /metrics/http_reqs/rate)
  HALF=$(awk -v r="$SAT_RATE" 'BEGIN { h = int(r / 2); print (h < 1 ? 1 : h) }')
  DUR=$SECS
  # Distinct-item scenarios must not repeat an item: keep RATE × DURATION within the set.
  case "$sc" in
    verify) N=$(( SIGS )) ;;
    batch) N=$(( SIGS / $BATCH )) ;;
    *) N=0 ;;
  esac
  if [ "$N" -gt 0 ] && [ $(( HALF * DUR )) -gt "$N" ]; then DUR=$(( N / HALF )); fi
  run_k6 "$sc" half_load "$OUT" MODE=rate RATE="$HALF" DURATION="${DUR}s" BATCH="$BATCH"
  HALF_EXIT=$K6_EXIT

  say "raw core verify on the same fixtures (after)"
  "${PIN_SVC[@]}" "$LT" raw --fixtures "$FIX" --secs "$RAW_SECS" > "$OUT/raw-after.json"
  cat "$OUT/raw-after.json"

  RATIO=()
  [ "$sc" = reads ] || RATIO=(--ratio)
  ITEMS=1
  [ "$sc" = batch ] && ITEMS=$BATCH
  set +e
  "$LT" report --scenario "$sc" --fixtures "$FIX" \
    --run "saturation=$OUT/saturation.json=$SAT_EXIT=$OUT/saturation.cpu" \
    --run "half_load=$OUT/half_load.json=$HALF_EXIT=$OUT/half_load.cpu" \
    --raw "$OUT/raw-before.json" --raw "$OUT/raw-after.json" \
    --items-per-request "$ITEMS" "${RATIO[@]}" "${MACHINE_RAW[@]}" --pinning "$PINNING" \
    --clk-tck "$(getconf CLK_TCK)" \
    --k6-version "$K6_VERSION_LINE" \
    --command "./loadtest/run.sh $SCENARIO (LOADTEST_SIGNATURES=$SIGS LOADTEST_VUS=$VUS LOADTEST_SECS=$SECS)" \
    --out-json "$RESULTS/$sc-$STAMP.json" --out-txt "$RESULTS/$sc-$STAMP.txt"
  REPORT_EXIT=$?
  set -e
  say "wrote $RESULTS/$sc-$STAMP.json and .txt"
  [ "$REPORT_EXIT" = 0 ] || FAILED=1
done
[ -z "${FAILED:-}" ] || { echo "a scenario failed its thresholds; see the summaries above" >&2; exit 1; }
