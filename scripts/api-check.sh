#!/usr/bin/env bash
# Checks the committed OpenAPI documents against the running services with schemathesis:
# a fresh registry and gateway on spare loopback ports, a small group with certificates and
# a revocation (so snapshots and proofs exist), then schemathesis against
# openapi/registry.json (with the admin token, so the admin API is exercised too) and
# openapi/gateway.json. Fails on any 5xx, any answer that does not match its documented
# schema, status code, content type or headers. See docs/api-checks.md.
#
#   ./scripts/api-check.sh
#
# Writes a report directory (default ~/.cache/dgsp/api-check/<UTC stamp>/): summary.txt,
# schemathesis' JUnit XML and console output per service, and the service logs.
#
# Environment (defaults in brackets):
#   API_CHECK_EXAMPLES  [100]       schemathesis --max-examples per operation and phase
#   API_CHECK_SEED      [20251121]  schemathesis --seed (same seed, same inputs)
#   API_CHECK_PHASES    [examples,coverage,fuzzing,stateful]
#   API_CHECK_CHECKS    [not_a_server_error,response_schema_conformance,status_code_conformance,
#                        content_type_conformance,response_headers_conformance]  ("all" to explore)
#   API_CHECK_OUT       [~/.cache/dgsp/api-check/<stamp>]  report directory
#   API_CHECK_PARAMS    [slh-dsa-sha2-128f]  the group's parameter set (a FIPS 205 set, so
#                       that CI runs the real binaries on the standard family end to end)
#   API_CHECK_KEEP      [0]         1: keep the state directory (data dirs, wallets)
#   API_CHECK_PROFILE   [release]   cargo profile of the binaries (dev: reuse a test build)
#   SCHEMATHESIS_VERSION [4.32.5]   installed with pip into ~/.cache/dgsp/tools/schemathesis-venv
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
. scripts/lib.sh

CACHE="${DGSP_CACHE_DIR:-$HOME/.cache/dgsp}"
ST_VERSION="${SCHEMATHESIS_VERSION:-4.32.5}"
EXAMPLES="${API_CHECK_EXAMPLES:-100}"
SEED="${API_CHECK_SEED:-20251121}"
PHASES="${API_CHECK_PHASES:-examples,coverage,fuzzing,stateful}"
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT="${API_CHECK_OUT:-$CACHE/api-check/$STAMP}"
VENV="$CACHE/tools/schemathesis-venv"
START=$(date +%s)

ensure_rust
ensure_system_packages
use_shared_target_dir

# schemathesis from PyPI, pinned, in a venv of its own (never the system site-packages).
ensure_schemathesis() {
  ST="$VENV/bin/st"
  if [ -x "$ST" ] && "$ST" --version 2>/dev/null | grep -qx "st, version $ST_VERSION"; then return; fi
  if ! python3 -m venv --help >/dev/null 2>&1 || ! python3 -c 'import ensurepip' 2>/dev/null; then
    say "installing python3-venv (for the schemathesis venv)"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq python3-venv
  fi
  say "installing schemathesis $ST_VERSION from PyPI into $VENV (first time only)"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$ST_VERSION"
  "$ST" --version
}
ensure_schemathesis

PROFILE="${API_CHECK_PROFILE:-release}"
say "building dgsp-registry, dgsp-gateway and dgsp-manager ($PROFILE)"
if [ "$PROFILE" = dev ]; then
  build_dev_bins dgsp-registry dgsp-gateway dgsp-manager
else
  cargo build --profile "$PROFILE" --locked -p dgsp-registry -p dgsp-gateway -p dgsp-manager
fi
BIN="$CARGO_TARGET_DIR/$([ "$PROFILE" = dev ] && echo debug || echo "$PROFILE")"

# Two ports nobody listens on (the kernel picks them; CI may run other stacks alongside).
read -r REG_PORT GW_PORT < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])
for x in s: x.close()')
REG="http://127.0.0.1:$REG_PORT"
GW="http://127.0.0.1:$GW_PORT"

# A fresh group, registry and gateway in a state directory of their own.
mkdir -p "$CACHE/api-check" "$OUT"
STATE=$(mktemp -d "$CACHE/api-check/run.XXXXXX")
REG_PID=
GW_PID=
cleanup() {
  stop_stack
  [ -f "$STATE/registry.log" ] && cp "$STATE/registry.log" "$STATE/gateway.log" "$OUT/" 2>/dev/null || true
  if [ "${API_CHECK_KEEP:-0}" = 1 ]; then say "kept $STATE"; else rm -rf "$STATE"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

(umask 077
 head -c 24 /dev/urandom | base64 | tr -d '/+=' > "$STATE/auditor-token"
 head -c 24 /dev/urandom | base64 > "$STATE/wallet-passphrase")
# The registry's auditor token: start_stack's registry inherits it (nothing else below reads it).
export DGSP_AUDITOR_TOKEN
DGSP_AUDITOR_TOKEN=$(cat "$STATE/auditor-token")
start_stack "$BIN" "$STATE" "${API_CHECK_PARAMS:-slh-dsa-sha2-128f}" "127.0.0.1:$REG_PORT" "127.0.0.1:$GW_PORT" \
  || { API_CHECK_KEEP=1; exit 1; }
TOKEN=$(cat "$STATE/admin-token")

# The group: alice and bob with certificates, alice has signed and been opened, bob is
# revoked, carol has no certificates. Through dgsp-manager, as docs/walkthrough.md does.
say "populating the group: members, certificates, a signature, an opening, a revocation"
(
  cd "$STATE"
  export DGSP_REGISTRY_URL="$REG" DGSP_GATEWAY_URL="$GW" DGSP_ADMIN_TOKEN="$TOKEN"
  export DGSP_WALLET_PASSPHRASE_FILE="$STATE/wallet-passphrase"
  M="$BIN/dgsp-manager"
  "$M" operator join alice bob carol --out joins >/dev/null
  for who in alice bob; do
    export DGSP_WALLET="$STATE/$who.wallet"
    "$M" member keygen --join "joins/$who.join.json" >/dev/null
    "$M" member csr --count 3 --out "$who.csr.json" >/dev/null
    "$M" operator issue "$who.csr.json" --out "$who.certs.json" >/dev/null
    "$M" member import "$who.certs.json" >/dev/null
  done
  export DGSP_WALLET="$STATE/alice.wallet"
  echo 'api-check' > message.txt
  "$M" member sign message.txt --out message.sig >/dev/null
  "$M" operator open --message message.txt --signature message.sig >/dev/null
  "$M" operator revoke --username bob --yes >/dev/null
) > "$STATE/populate.log" 2>&1 || { cat "$STATE/populate.log" >&2; API_CHECK_KEEP=1; exit 1; }

# Until the gateway serves a snapshot that covers bob's revocation.
for _ in $(seq 200); do
  n=$(curl -fs "$GW/v1/revocations/snapshot" 2>/dev/null \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["record"]["count"])' 2>/dev/null || echo 0)
  [ "$n" -gt 0 ] && break
  sleep 0.1
done
[ "$n" -gt 0 ] || { echo "no snapshot with the revocation reached the gateway" >&2; API_CHECK_KEEP=1; exit 1; }
say "group ready: 3 members, 6 certificates, 1 opening, bob revoked ($n revoked zetas in the snapshot)"

CHECKS="${API_CHECK_CHECKS:-not_a_server_error,response_schema_conformance,status_code_conformance,content_type_conformance,response_headers_conformance}"
# run_st NAME SCHEMA URL [extra st options...]; sets FAILED=1 when schemathesis fails.
run_st() {
  local name=$1 schema=$2 url=$3
  shift 3
  say "schemathesis $ST_VERSION: $schema against $url ($PHASES, $EXAMPLES examples, seed $SEED)"
  local t0 rc
  t0=$(date +%s)
  set +e
  # One worker: with two, CPython 3.11 can crash compiling schemathesis' generators in
  # parallel threads ("SystemError: AST constructor recursion depth mismatch"), a tool
  # failure that would fail CI at random.
  # From the report directory: schemathesis keeps its replay cache (.schemathesis/) in the
  # working directory, so each run starts clean and `st replay <id>` works from there.
  (cd "$OUT" && "$ST" run "$schema" --url "$url" \
    --checks "$CHECKS" --phases "$PHASES" \
    --max-examples "$EXAMPLES" --seed "$SEED" \
    --generation-database none --workers 1 --request-timeout 20 \
    --report junit --report-junit-path "$OUT/$name.junit.xml" \
    --no-color --output-truncate true "$@") 2>&1 | tee "$OUT/$name.txt"
  rc=${PIPESTATUS[0]}
  set -e
  echo "$name: schemathesis exit $rc in $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
  [ "$rc" = 0 ] || FAILED=1
}

FAILED=
: > "$OUT/summary.txt"
run_st registry "$ROOT/openapi/registry.json" "$REG" -H "Authorization: Bearer $TOKEN"
run_st gateway "$ROOT/openapi/gateway.json" "$GW"

# Neither service may have panicked or logged an internal error while being fuzzed.
for svc in registry gateway; do
  if grep -E "panicked|ERROR" "$STATE/$svc.log" > "$OUT/$svc.errors" 2>/dev/null; then
    echo "$svc: logged panics or errors (see $OUT/$svc.errors)" | tee -a "$OUT/summary.txt"
    FAILED=1
  fi
done

ELAPSED=$(( $(date +%s) - START ))
{
  echo "schemathesis $ST_VERSION, checks $CHECKS"
  echo "phases $PHASES, max examples $EXAMPLES, seed $SEED"
  echo "total ${ELAPSED} s; result: $([ -z "$FAILED" ] && echo passed || echo FAILED)"
} >> "$OUT/summary.txt"
say "report in $OUT"
cat "$OUT/summary.txt"
[ -z "$FAILED" ] || { echo "the API check failed; see $OUT" >&2; exit 1; }
