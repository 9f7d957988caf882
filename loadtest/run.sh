#!/usr/bin/env bash
# Load tests on goose against the real binaries: a fresh registry and gateway on loopback,
# fixtures made through the registry's admin API, then per scenario the raw core on the same
# fixtures (before and after), goose closed-loop at saturation (every answer checked), the
# open-loop probe at a fraction of that rate (dgsp-loadtest's open loop, coordinated omission
# corrected) beside
# the machine's own stalls, and the report that holds them to the scenario's thresholds
# (loadtest/src/thresholds.rs). See loadtest/README.md.
#
#   ./loadtest/run.sh verify     # JSON and binary bodies; or batch, judge, reads, mixed, all
#
# Writes, per scenario, loadtest/results/<UTC stamp>/<scenario>/: goose.html and goose.json
# (goose's reports), load.json (the closed loop), probe.json (the open loop),
# raw-*.json, cpu.txt, and summary.json and summary.txt (the verdict, also printed); and in
# loadtest/results/<UTC stamp>/ the run's plots, throughput.svg and latency.svg.
# Exits non-zero when a scenario fails a threshold.
#
#   ./loadtest/run.sh idle       # also the last part of `all`
#
# idle: thousands of idle and slow connections held against the registry and the gateway,
# plain and TLS (a second registry, of a group of its own, and a second gateway, both
# serving HTTPS with a throwaway CA made here by openssl), while an open loop measures a
# normal client of each, beside the same client without them (dgsp-loadtest idle);
# writes loadtest/results/<UTC stamp>/idle/: idle.json, idle.txt, service-flags.txt.
#
# Environment (defaults in brackets):
#   LOADTEST_SIGNATURES [10000]  distinct signatures (10% revoked members', 10% invalid,
#                                5% by members that `mixed` revokes during its run)
#   LOADTEST_MEMBERS    [500]    members
#   LOADTEST_OPENINGS   [1000]   openings for judge
#   LOADTEST_USERS      [16]     goose users at saturation (batch: LOADTEST_BATCH_USERS [3])
#   LOADTEST_BATCH      [32]     items per batch request
#   LOADTEST_SECS       [15]     seconds of each closed-loop run
#   LOADTEST_PROBE_SECS [15]     seconds of each open-loop probe
#   LOADTEST_PROBE_FRACTION [0.5]  the probe's rate as a fraction of the closed loop's
#   LOADTEST_RAW_SECS   [8]      seconds of each raw core measurement
#   LOADTEST_BOUND_MS   [5000]   mixed: the longest a revoked member may still verify ok
#   LOADTEST_PARAMS     [sha2-128f]
#   LOADTEST_REGISTRY   [127.0.0.1:7350]  LOADTEST_GATEWAY [127.0.0.1:7450]
#   LOADTEST_RESULTS    [loadtest/results]  where the run's directory goes
#   LOADTEST_PROFILE    [release]  the cargo profile to build with (the smoke run: dev)
#   LOADTEST_SMOKE      [0]      1: a run of seconds (tiny fixtures, short runs, the smoke
#                                bounds: every correctness rule, loose time bounds); the
#                                test command runs it
#   LOADTEST_KEEP       [0]      1: keep the state directory (data, fixtures, logs)
#   LOADTEST_PIN        [1]      with 4 or more cores: goose and the probe on the last quarter of
#                                them, the registry, gateway and raw core on the rest
#   LOADTEST_SERVICES_BIN [the build]  take dgsp-registry and dgsp-gateway from this directory
#                                (another commit's build, to compare) instead of building them
# idle (smoke values in brackets after the full ones):
#   LOADTEST_IDLE_PER_KIND [500, 10]  slow clients of each kind per listener
#   LOADTEST_IDLE_RATE  [100, 20]  the normal client's requests/s per listener
#   LOADTEST_IDLE_SECS  [15, 2]    seconds without the slow clients, and again with them
#   LOADTEST_IDLE_HOLD_SECS [45, 3]  how long the slow clients are held (less when the
#                                servers have closed them all)
#   LOADTEST_IDLE_TRICKLE_MS [1000]  between two bytes of a slowloris or slow TLS client
#   LOADTEST_IDLE_MAX_CONNECTIONS []  --max-connections for the TLS registry and gateway
#                                (only where their --help has it)
#   LOADTEST_REGISTRY_TLS [127.0.0.1:7351]  LOADTEST_GATEWAY_TLS [127.0.0.1:7451]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
. scripts/lib.sh

SCENARIO="${1:-verify}"
IDLE=0
case "$SCENARIO" in
  verify) SCENARIOS=(verify verify-binary) ;;
  batch | judge | reads | mixed) SCENARIOS=("$SCENARIO") ;;
  idle) SCENARIOS=() IDLE=1 ;;
  # mixed last of the loop: it revokes members, which nothing after it may expect
  # unrevoked (idle verifies only verify.json, whose members mixed leaves alone).
  all) SCENARIOS=(verify verify-binary batch judge reads mixed) IDLE=1 ;;
  *) echo "usage: $0 [verify|batch|judge|reads|mixed|idle|all]" >&2; exit 2 ;;
esac

SMOKE="${LOADTEST_SMOKE:-0}"
if [ "$SMOKE" = 1 ]; then
  SIGS="${LOADTEST_SIGNATURES:-320}" MEMBERS="${LOADTEST_MEMBERS:-40}" OPENINGS="${LOADTEST_OPENINGS:-40}"
  SECS="${LOADTEST_SECS:-6}" PROBE_SECS="${LOADTEST_PROBE_SECS:-2}" RAW_SECS="${LOADTEST_RAW_SECS:-1}"
  BOUND_MS="${LOADTEST_BOUND_MS:-3000}" STALL_SECS=0.5 SMOKE_FLAG=(--smoke)
  IDLE_PER_KIND="${LOADTEST_IDLE_PER_KIND:-10}" IDLE_RATE="${LOADTEST_IDLE_RATE:-20}"
  IDLE_SECS="${LOADTEST_IDLE_SECS:-2}" IDLE_HOLD="${LOADTEST_IDLE_HOLD_SECS:-3}"
else
  SIGS="${LOADTEST_SIGNATURES:-10000}" MEMBERS="${LOADTEST_MEMBERS:-500}" OPENINGS="${LOADTEST_OPENINGS:-1000}"
  SECS="${LOADTEST_SECS:-15}" PROBE_SECS="${LOADTEST_PROBE_SECS:-15}" RAW_SECS="${LOADTEST_RAW_SECS:-8}"
  BOUND_MS="${LOADTEST_BOUND_MS:-5000}" STALL_SECS=3 SMOKE_FLAG=()
  IDLE_PER_KIND="${LOADTEST_IDLE_PER_KIND:-500}" IDLE_RATE="${LOADTEST_IDLE_RATE:-100}"
  IDLE_SECS="${LOADTEST_IDLE_SECS:-15}" IDLE_HOLD="${LOADTEST_IDLE_HOLD_SECS:-45}"
fi
IDLE_TRICKLE="${LOADTEST_IDLE_TRICKLE_MS:-1000}"
REG_TLS="${LOADTEST_REGISTRY_TLS:-127.0.0.1:7351}"
GW_TLS="${LOADTEST_GATEWAY_TLS:-127.0.0.1:7451}"
USERS="${LOADTEST_USERS:-16}"
BATCH_USERS="${LOADTEST_BATCH_USERS:-3}"
BATCH="${LOADTEST_BATCH:-32}"
FRACTION="${LOADTEST_PROBE_FRACTION:-0.5}"
PARAMS="${LOADTEST_PARAMS:-sha2-128f}"
REG_LISTEN="${LOADTEST_REGISTRY:-127.0.0.1:7350}"
GW_LISTEN="${LOADTEST_GATEWAY:-127.0.0.1:7450}"
PROFILE="${LOADTEST_PROFILE:-release}"
RESULTS="${LOADTEST_RESULTS:-$ROOT/loadtest/results}"
CACHE="${DGSP_CACHE_DIR:-$HOME/.cache/dgsp}"

ensure_rust
ensure_system_packages
use_shared_target_dir


PACKAGES=(dgsp-registry dgsp-gateway dgsp-loadtest)
[ -z "${LOADTEST_SERVICES_BIN:-}" ] || PACKAGES=(dgsp-loadtest)
say "building ${PACKAGES[*]} ($PROFILE)"
if [ "$PROFILE" = dev ] && [ "${DGSP_WORKSPACE_BUILD:-0}" = 1 ]; then
  build_dev_bins "${PACKAGES[@]}"
elif [ "$PROFILE" = dev ]; then
  # Linted, as every dev build here, so the units are the tests' own.
  cargo_linted build --locked "${PACKAGES[@]/#/-p}"
else
  cargo build --profile "$PROFILE" --locked "${PACKAGES[@]/#/-p}"
fi
case "$PROFILE" in dev) BIN="$CARGO_TARGET_DIR/debug" ;; *) BIN="$CARGO_TARGET_DIR/$PROFILE" ;; esac
LT="$BIN/dgsp-loadtest"
SVC_BIN="${LOADTEST_SERVICES_BIN:-$BIN}"
[ "$SVC_BIN" = "$BIN" ] || say "the services from $SVC_BIN"

# Thousands of connections (idle) take as many descriptors in the load generator and in
# the services: the soft limit raised to the hard one for everything started from here.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
say "open-files limit: $(ulimit -n) (hard $(ulimit -Hn))"

# A fresh group, registry and gateway in a state directory of their own.
mkdir -p "$CACHE/loadtest" "$RESULTS"
STATE=$(mktemp -d "$CACHE/loadtest/run.XXXXXX")
REG_PID=
GW_PID=
TLS_PIDS=()
cleanup() {
  local pid
  for pid in "${TLS_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${TLS_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  stop_stack
  if [ "${LOADTEST_KEEP:-0}" = 1 ]; then say "kept $STATE"; else rm -rf "$STATE"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Disjoint cores for the generator and the services where there are enough: a generator
# competing with the gateway for its cores makes the gateway look slower than it is. The
# raw core is measured on the gateway's cores ("its own cores") and on the whole machine.
expand_cpus() { # "0-3,8" -> "0 1 2 3 8"
  local part out=()
  for part in ${1//,/ }; do
    if [[ $part == *-* ]]; then out+=($(seq "${part%-*}" "${part#*-}")); else out+=("$part"); fi
  done
  echo "${out[@]}"
}
read -r -a ALLOWED <<< "$(expand_cpus "$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)")"
PIN_GEN=() PIN_SVC=() PINNED=() PINNING="not pinned: the generator shares the cores (fewer than 4 cores, or LOADTEST_PIN=0)"
if [ "${LOADTEST_PIN:-1}" = 1 ] && [ "${#ALLOWED[@]}" -ge 4 ]; then
  GEN_N=$(( (${#ALLOWED[@]} + 3) / 4 ))
  SVC_LIST=$(IFS=,; echo "${ALLOWED[*]:0:${#ALLOWED[@]}-GEN_N}")
  GEN_LIST=$(IFS=,; echo "${ALLOWED[*]: -GEN_N}")
  PIN_GEN=(taskset -c "$GEN_LIST") PIN_SVC=(taskset -c "$SVC_LIST") PINNED=(--pinned)
  export DGSP_STACK_CPUS="$SVC_LIST"
  PINNING="registry, gateway and raw core on CPUs $SVC_LIST; goose and the probe on CPUs $GEN_LIST"
fi
say "cores: ${#ALLOWED[@]}; $PINNING"

start_stack "$SVC_BIN" "$STATE" "$PARAMS" "$REG_LISTEN" "$GW_LISTEN" || { LOADTEST_KEEP=1; exit 1; }

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
# Samples the CPU of the generator ($1), the gateway, the registry and the whole machine
# every 0.25 s into $2, so the report can tell the load test's share from other work.
sample_cpu() {
  local gen
  while kill -0 "$1" 2>/dev/null; do
    gen=$(ticks "$1")
    [ "$gen" = 0 ] || echo "$(date +%s%3N) $gen $(ticks "$GW_PID") $(ticks "$REG_PID") $(machine_ticks)"
    sleep 0.25
  done > "$2"
}

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
RUN_DIR="$RESULTS/$STAMP"
FAILED=()
for sc in "${SCENARIOS[@]}"; do
  OUT="$RUN_DIR/$sc"
  mkdir -p "$OUT"
  say "$sc: load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  say "$sc: raw core verify on the same fixtures (before)"
  "${PIN_SVC[@]}" "$LT" raw --fixtures "$FIX" --secs "$RAW_SECS" > "$OUT/raw-before.json"
  cat "$OUT/raw-before.json"
  MACHINE_RAW=()
  if [ "${#PIN_SVC[@]}" -gt 0 ]; then
    "$LT" raw --fixtures "$FIX" --secs "$RAW_SECS" > "$OUT/raw-machine.json"
    MACHINE_RAW=(--raw-machine "$OUT/raw-machine.json")
  fi

  # Batches: few requests in flight, or the gateway's queue (64 items per core) overflows
  # and it sheds whole batches with 503.
  U=$USERS
  [ "$sc" = batch ] && U=$BATCH_USERS
  say "$sc: goose, closed loop, $U users, ${SECS} s"
  set +e
  "${PIN_GEN[@]}" "$LT" load --scenario "$sc" --gateway "http://$GW_LISTEN" \
    --registry "http://$REG_LISTEN" --fixtures "$FIX" --out "$OUT" --users "$U" \
    --secs "$SECS" --batch "$BATCH" --admin-token-file "$STATE/admin-token" \
    --bound-ms "$BOUND_MS" "${SMOKE_FLAG[@]}" > "$OUT/load.log" 2>&1 &
  GEN=$!
  sample_cpu "$GEN" "$OUT/cpu.txt" &
  SAMPLER=$!
  wait "$GEN"
  LOAD_EXIT=$?
  wait "$SAMPLER"
  set -e
  grep -v '^\s*$' "$OUT/load.log" | tail -n 30
  [ -f "$OUT/load.json" ] || { echo "$sc: goose wrote no load.json (exit $LOAD_EXIT); see $OUT/load.log" >&2; FAILED+=("$sc"); continue; }

  say "$sc: the open loop at $FRACTION of the closed loop's rate, ${PROBE_SECS} s (after ${STALL_SECS} s of the machine's own stalls)"
  PROBE_DIR="$STATE/probe-$sc"
  "${PIN_GEN[@]}" "$LT" probe --scenario "$sc" --gateway "http://$GW_LISTEN" \
    --registry "http://$REG_LISTEN" --fixtures "$FIX" --load "$OUT/load.json" \
    --fraction "$FRACTION" --secs "$PROBE_SECS" --batch "$BATCH" \
    --stall-secs "$STALL_SECS" --out "$PROBE_DIR" || { FAILED+=("$sc"); continue; }
  cp "$PROBE_DIR/probe.json" "$OUT/"

  say "$sc: raw core verify on the same fixtures (after)"
  "${PIN_SVC[@]}" "$LT" raw --fixtures "$FIX" --secs "$RAW_SECS" > "$OUT/raw-after.json"
  cat "$OUT/raw-after.json"

  set +e
  "$LT" report --scenario "$sc" --fixtures "$FIX" --load "$OUT/load.json" \
    --probe "$OUT/probe.json" --raw "$OUT/raw-before.json" --raw "$OUT/raw-after.json" \
    "${MACHINE_RAW[@]}" "${PINNED[@]}" --pinning "$PINNING" --cpu "$OUT/cpu.txt" \
    --clk-tck "$(getconf CLK_TCK)" "${SMOKE_FLAG[@]}" \
    --command "./loadtest/run.sh $SCENARIO (LOADTEST_SIGNATURES=$SIGS LOADTEST_USERS=$USERS LOADTEST_SECS=$SECS LOADTEST_SMOKE=$SMOKE)" \
    --out-json "$OUT/summary.json" --out-txt "$OUT/summary.txt"
  REPORT_EXIT=$?
  set -e
  cp "$FIX/manifest.json" "$OUT/fixtures-manifest.json"
  say "$sc: wrote $OUT"
  [ "$REPORT_EXIT" = 0 ] && [ "$LOAD_EXIT" = 0 ] || FAILED+=("$sc")
done
[ "${#SCENARIOS[@]}" = 0 ] || "$LT" plot --run "$RUN_DIR" || FAILED+=(plot)

# idle: the TLS registry (a group of its own) and gateway (following the plain registry),
# a throwaway CA and certificate for 127.0.0.1, then dgsp-loadtest idle.
if [ "$IDLE" = 1 ]; then
  OUT="$RUN_DIR/idle"
  mkdir -p "$OUT"
  command -v openssl >/dev/null || { say "installing openssl (the idle scenario's test CA)"; as_root apt-get install -y -qq openssl; }
  CERTS="$STATE/certs"
  mkdir -p "$CERTS"
  (cd "$CERTS" && umask 077 &&
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
      -subj /CN=dgsp-loadtest-ca -keyout ca.key -out ca.pem 2>/dev/null &&
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
      -keyout server.key -out server.csr 2>/dev/null &&
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' > server.ext &&
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
      -extfile server.ext -out server.pem 2>/dev/null) || { echo "idle: could not make the test certificates" >&2; exit 1; }
  # The services' connection flags, where this build has them (recorded, and the cap
  # passed to the TLS pair when asked).
  for svc in dgsp-registry dgsp-gateway; do
    echo "$svc serve --help:"
    "$SVC_BIN/$svc" serve --help | grep -A3 -E -- '--(max-connections|header-read-timeout|tls-handshake-timeout|max-handshakes)' || echo "  (no connection limits among its flags)"
  done > "$OUT/service-flags.txt"
  cat "$OUT/service-flags.txt"
  cap_flags() { # SERVICE: --max-connections N when asked and the service has it
    [ -n "${LOADTEST_IDLE_MAX_CONNECTIONS:-}" ] || return 0
    if "$SVC_BIN/$1" serve --help | grep -q -- '--max-connections'; then
      echo --max-connections "$LOADTEST_IDLE_MAX_CONNECTIONS"
    else
      say "idle: $1 has no --max-connections; LOADTEST_IDLE_MAX_CONNECTIONS ignored" >&2
    fi
  }
  TLS_FLAGS=(--tls-cert "$CERTS/server.pem" --tls-key "$CERTS/server.key")
  PIN=()
  [ -z "${DGSP_STACK_CPUS:-}" ] || PIN=(taskset -c "$DGSP_STACK_CPUS")
  "$SVC_BIN/dgsp-registry" init --params "$PARAMS" --data "$STATE/tls-group" >/dev/null
  # shellcheck disable=SC2046
  "${PIN[@]}" "$SVC_BIN/dgsp-registry" serve --data "$STATE/tls-group" --listen "$REG_TLS" \
    "${TLS_FLAGS[@]}" $(cap_flags dgsp-registry) >"$STATE/registry-tls.log" 2>&1 &
  TLS_PIDS+=($!)
  CURL_CA_BUNDLE="$CERTS/ca.pem" wait_ready "https://$REG_TLS" "$!" "TLS registry" "$STATE/registry-tls.log" || { LOADTEST_KEEP=1; exit 1; }
  # shellcheck disable=SC2046
  "${PIN[@]}" "$SVC_BIN/dgsp-gateway" serve --registry "http://$REG_LISTEN" --group-key "$STATE/group.pub" \
    --data "$STATE/gateway-tls" --listen "$GW_TLS" "${TLS_FLAGS[@]}" $(cap_flags dgsp-gateway) \
    >"$STATE/gateway-tls.log" 2>&1 &
  TLS_PIDS+=($!)
  CURL_CA_BUNDLE="$CERTS/ca.pem" wait_ready "https://$GW_TLS" "$!" "TLS gateway" "$STATE/gateway-tls.log" || { LOADTEST_KEEP=1; exit 1; }
  say "idle: TLS registry https://$REG_TLS, TLS gateway https://$GW_TLS; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  for pid in "$REG_PID" "$GW_PID" "${TLS_PIDS[@]}"; do
    echo "pid $pid ($(tr '\0' ' ' < "/proc/$pid/cmdline" | cut -c1-60)…): $(grep 'Max open files' "/proc/$pid/limits")"
  done >> "$OUT/service-flags.txt"
  "${PIN_GEN[@]}" "$LT" idle --fixtures "$FIX" --registry "http://$REG_LISTEN" --gateway "http://$GW_LISTEN" \
    --registry-tls "https://$REG_TLS" --gateway-tls "https://$GW_TLS" --ca-file "$CERTS/ca.pem" \
    --per-kind "$IDLE_PER_KIND" --rate "$IDLE_RATE" --secs "$IDLE_SECS" --hold-secs "$IDLE_HOLD" \
    --trickle-ms "$IDLE_TRICKLE" --stall-secs "$STALL_SECS" --out "$OUT" \
    --command "./loadtest/run.sh $SCENARIO (LOADTEST_IDLE_PER_KIND=$IDLE_PER_KIND LOADTEST_IDLE_RATE=$IDLE_RATE LOADTEST_IDLE_SECS=$IDLE_SECS LOADTEST_IDLE_HOLD_SECS=$IDLE_HOLD LOADTEST_IDLE_MAX_CONNECTIONS=${LOADTEST_IDLE_MAX_CONNECTIONS:-} LOADTEST_SMOKE=$SMOKE LOADTEST_PROFILE=$PROFILE)" \
    || FAILED+=(idle)
  say "idle: wrote $OUT"
fi
if [ "${#FAILED[@]}" -gt 0 ]; then
  echo "failed their thresholds: ${FAILED[*]} (the summaries above; $RUN_DIR)" >&2
  exit 1
fi
say "every scenario held its thresholds: $RUN_DIR"
