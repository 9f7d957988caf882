#!/usr/bin/env bash
# A live DGSP stack for the SDK's tests (Node's test runner and the browser test), started the
# way scripts/lib.sh's start_stack does: a fresh slh-dsa-sha2-128f group, its registry and a
# gateway pinned to the group key on spare loopback ports, secrets 0600 in the state
# directory; alice and bob with certificates, a message signed by alice and one by bob; a
# second group's key (never served) for the wrong-group case.
#
#   stack.sh start STATE [GATEWAY_ARGS...]  prints one JSON line: urls, paths, pids
#   stack.sh revoke STATE USERNAME          dgsp-manager operator revoke
#   stack.sh stop STATE                     SIGTERM to the registry and gateway, waits
#
# Binaries: $DGSP_BIN, default $HOME/.cache/dgsp/target/debug (build them with
# `CARGO_TARGET_DIR=$HOME/.cache/dgsp/target cargo build -p dgsp-registry -p dgsp-gateway
# -p dgsp-manager`).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
# shellcheck source=../../../scripts/lib.sh
. "$ROOT/scripts/lib.sh"
BIN="${DGSP_BIN:-$HOME/.cache/dgsp/target/debug}"
cmd=$1 STATE=$2
shift 2

manager_env() {
  export DGSP_KEY_PASSPHRASE_FILE="$STATE/passphrase" DGSP_ADMIN_TOKEN_FILE="$STATE/admin-token"
  export DGSP_REGISTRY_URL DGSP_GATEWAY_URL
  DGSP_REGISTRY_URL=$(cat "$STATE/registry.url") DGSP_GATEWAY_URL=$(cat "$STATE/gateway.url")
  export DGSP_ADMIN_TOKEN
  DGSP_ADMIN_TOKEN=$(cat "$STATE/admin-token")
  export DGSP_WALLET_PASSPHRASE_FILE="$STATE/wallet-passphrase"
}

case $cmd in
start)
  for b in dgsp-registry dgsp-gateway dgsp-manager; do
    [ -x "$BIN/$b" ] || { echo "missing $BIN/$b (set DGSP_BIN)" >&2; exit 1; }
  done
  mkdir -p "$STATE"
  read -r REG_PORT GW_PORT < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])
for x in s: x.close()')
  echo "http://127.0.0.1:$REG_PORT" > "$STATE/registry.url"
  echo "http://127.0.0.1:$GW_PORT" > "$STATE/gateway.url"
  (umask 077; head -c 24 /dev/urandom | base64 > "$STATE/wallet-passphrase")
  exec 3>&1 4>&2 >"$STATE/start.log" 2>&1
  REG_PID= GW_PID=
  trap 'rc=$?; if [ $rc -ne 0 ]; then cat "$STATE/start.log" >&4
    for p in $GW_PID $REG_PID; do kill -TERM "$p" 2>/dev/null || true; done; fi' EXIT
  # As scripts/lib.sh start_stack, with extra gateway arguments (--web-dir, say).
  (umask 077
   head -c 24 /dev/urandom | base64 > "$STATE/passphrase"
   head -c 24 /dev/urandom | base64 | tr -d '/+=' > "$STATE/admin-token")
  export DGSP_KEY_PASSPHRASE_FILE="$STATE/passphrase" DGSP_ADMIN_TOKEN_FILE="$STATE/admin-token"
  "$BIN/dgsp-registry" init --params slh-dsa-sha2-128f --data "$STATE/group" >/dev/null
  "$BIN/dgsp-registry" public-key --data "$STATE/group" > "$STATE/group.pub"
  "$BIN/dgsp-registry" serve --data "$STATE/group" --listen "127.0.0.1:$REG_PORT" >"$STATE/registry.log" 2>&1 3>&- 4>&- &
  REG_PID=$!
  wait_ready "http://127.0.0.1:$REG_PORT" "$REG_PID" registry "$STATE/registry.log"
  "$BIN/dgsp-gateway" serve --registry "http://127.0.0.1:$REG_PORT" --group-key "$STATE/group.pub" \
    --data "$STATE/gateway" --listen "127.0.0.1:$GW_PORT" "$@" >"$STATE/gateway.log" 2>&1 3>&- 4>&- &
  GW_PID=$!
  wait_ready "http://127.0.0.1:$GW_PORT" "$GW_PID" gateway "$STATE/gateway.log"
  echo "$REG_PID $GW_PID" > "$STATE/pids"
  manager_env
  cd "$STATE"
  M="$BIN/dgsp-manager"
  "$M" operator join alice bob --out joins
  for who in alice bob; do
    export DGSP_WALLET="$STATE/$who.wallet"
    "$M" member keygen --join "joins/$who.join.json"
    "$M" member csr --count 2 --out "$who.csr.json"
    "$M" operator issue "$who.csr.json" --out "$who.certs.json"
    "$M" member import "$who.certs.json"
  done
  printf 'a report signed by a member of the group\n' > message.txt
  DGSP_WALLET="$STATE/alice.wallet" "$M" member sign message.txt --out alice.sig
  DGSP_WALLET="$STATE/bob.wallet" "$M" member sign message.txt --out bob.sig
  "$BIN/dgsp-registry" init --params slh-dsa-sha2-128f --data "$STATE/other" >/dev/null
  "$BIN/dgsp-registry" public-key --data "$STATE/other" > "$STATE/other.pub"
  exec 1>&3 2>&4
  python3 - "$STATE" <<'PY'
import json, sys
s = sys.argv[1]
r = lambda f: open(f"{s}/{f}").read().strip()
reg, gw = r("pids").split()
print(json.dumps({"state": s, "registry": r("registry.url"), "gateway": r("gateway.url"),
  "group_key": f"{s}/group.pub", "other_key": f"{s}/other.pub", "message": f"{s}/message.txt",
  "alice_sig": f"{s}/alice.sig", "bob_sig": f"{s}/bob.sig",
  "registry_pid": int(reg), "gateway_pid": int(gw)}))
PY
  ;;
revoke)
  manager_env
  cd "$STATE"
  "$BIN/dgsp-manager" operator revoke --username "$1" --yes
  ;;
stop)
  [ -f "$STATE/pids" ] || exit 0
  read -r REG_PID GW_PID < "$STATE/pids"
  for pid in $GW_PID $REG_PID; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in $GW_PID $REG_PID; do
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  done
  rm -f "$STATE/pids"
  ;;
*) echo "usage: stack.sh start|revoke|stop STATE ..." >&2; exit 2 ;;
esac
