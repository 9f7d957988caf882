#!/usr/bin/env bash
# The README's main-job command: a registry and a gateway on loopback, each with an embedded
# RocksDB data directory, and a demo group (created on first run, kept across runs).
#   ./scripts/run.sh            # registry on 127.0.0.1:7300 (DGSP_LISTEN to change),
#                               # gateway on 127.0.0.1:7400 (DGSP_GATEWAY_LISTEN);
#                               # DGSP_PARAMS (default sha2-128f, e.g. slh-dsa-sha2-128f) sets
#                               # the demo group's set when DGSP_DEMO_DIR holds none yet
#   ./scripts/run.sh demo [SET ...]   # the core demo: a whole group life cycle with timings
#   ./scripts/run.sh build      # only build dgsp-registry, dgsp-gateway and dgsp-manager (release)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

prepare_build

if [ "${1:-}" = "demo" ]; then
  shift
  say "building the core demo (release)"
  cargo build --release --locked -p dgsp-core --example demo
  exec "$CARGO_TARGET_DIR/release/examples/demo" "$@"
fi

say "building dgsp-registry, dgsp-gateway and dgsp-manager (release)"
cargo build --release --locked -p dgsp-registry -p dgsp-gateway -p dgsp-manager
if [ "${1:-}" = "build" ]; then
  say "built in $CARGO_TARGET_DIR/release; to use them:"
  echo "  export PATH=\"$CARGO_TARGET_DIR/release:\$PATH\""
  exit 0
fi
BIN="$CARGO_TARGET_DIR/release/dgsp-registry"
GW="$CARGO_TARGET_DIR/release/dgsp-gateway"
GW_LISTEN="${DGSP_GATEWAY_LISTEN:-127.0.0.1:7400}"

DEMO="${DGSP_DEMO_DIR:-$HOME/.cache/dgsp/demo}"
LISTEN="${DGSP_LISTEN:-127.0.0.1:7300}"
PARAMS="${DGSP_PARAMS:-sha2-128f}"
mkdir -p "$DEMO"
chmod 700 "$DEMO"
# Demo secrets live beside the data, readable only by you.
umask 077
[ -s "$DEMO/passphrase" ] || head -c 24 /dev/urandom | base64 > "$DEMO/passphrase"
[ -s "$DEMO/admin-token" ] || head -c 24 /dev/urandom | base64 | tr -d '/+=' > "$DEMO/admin-token"
export DGSP_KEY_PASSPHRASE_FILE="$DEMO/passphrase"
export DGSP_ADMIN_TOKEN_FILE="$DEMO/admin-token"
TOKEN=$(cat "$DEMO/admin-token")

first_run=no
if [ ! -f "$DEMO/group/manager.key" ]; then
  say "creating the demo group ($PARAMS) in $DEMO/group"
  "$BIN" init --params "$PARAMS" --data "$DEMO/group"
  first_run=yes
fi

# The gateway's trust anchor: the group public key, as the registry prints it.
"$BIN" public-key --data "$DEMO/group" > "$DEMO/group.pub"

say "starting the registry on http://$LISTEN (Ctrl-C stops both)"
"$BIN" serve --data "$DEMO/group" --listen "$LISTEN" &
PID=$!
GW_PID=
trap 'kill $PID $GW_PID 2>/dev/null; wait $PID $GW_PID 2>/dev/null' EXIT INT TERM
for _ in $(seq 100); do
  curl -fs "http://$LISTEN/readyz" >/dev/null 2>&1 && break
  kill -0 $PID 2>/dev/null || { echo "the registry exited; see the messages above" >&2; exit 1; }
  sleep 0.1
done

say "starting the gateway on http://$GW_LISTEN, following the registry"
"$GW" serve --registry "http://$LISTEN" --group-key "$DEMO/group.pub" \
  --data "$DEMO/gateway" --listen "$GW_LISTEN" &
GW_PID=$!
for _ in $(seq 300); do
  curl -fs "http://$GW_LISTEN/readyz" >/dev/null 2>&1 && break
  kill -0 $GW_PID 2>/dev/null || { echo "the gateway exited; see the messages above" >&2; exit 1; }
  sleep 0.1
done

MANAGER="$CARGO_TARGET_DIR/release/dgsp-manager"
export DGSP_REGISTRY_URL="http://$LISTEN" DGSP_GATEWAY_URL="http://$GW_LISTEN"
export DGSP_ADMIN_TOKEN="$TOKEN"
if [ "$first_run" = yes ] || [ ! -s "$DEMO/verify-request.json" ]; then
  if [ "$first_run" = yes ]; then
    say "admitting demo members alice, bob and carol"
    rm -rf "$DEMO/joins"
    "$MANAGER" operator join alice bob carol --out "$DEMO/joins" >/dev/null
  fi
  JOIN="$DEMO/joins/alice.join.json"
  if [ ! -f "$JOIN" ]; then
    # A demo directory from before dgsp-manager: its members have no join files.
    JOIN="$DEMO/signer.join.json"
    [ -f "$JOIN" ] || "$MANAGER" operator join "demo-signer-$(date +%s)" --out "$JOIN" >/dev/null
  fi
  if [ ! -f "$DEMO/alice.wallet" ]; then
    say "a demo member's wallet, 5 certificates, and a signed demo message"
    [ -s "$DEMO/alice-passphrase" ] || head -c 24 /dev/urandom | base64 > "$DEMO/alice-passphrase"
    export DGSP_WALLET="$DEMO/alice.wallet" DGSP_WALLET_PASSPHRASE_FILE="$DEMO/alice-passphrase"
    rm -f "$DEMO/alice.csr.json" "$DEMO/alice.certs.json"
    "$MANAGER" member keygen --join "$JOIN" >/dev/null
    "$MANAGER" member csr --count 5 --out "$DEMO/alice.csr.json" >/dev/null
    "$MANAGER" operator issue "$DEMO/alice.csr.json" --out "$DEMO/alice.certs.json" >/dev/null
    "$MANAGER" member import "$DEMO/alice.certs.json" >/dev/null
    echo "Hello from a member of the demo group." > "$DEMO/hello.txt"
    rm -f "$DEMO/hello.sig"
    "$MANAGER" member sign "$DEMO/hello.txt" --out "$DEMO/hello.sig" >/dev/null
    printf '{"message":"%s","signature":"%s"}\n' \
      "$(base64 -w0 < "$DEMO/hello.txt")" "$(tr -d '\n' < "$DEMO/hello.sig")" > "$DEMO/verify-request.json"
  fi
fi

cat <<INFO

  registry   http://$LISTEN
  group      curl -s http://$LISTEN/v1/group
  log feed   curl -s 'http://$LISTEN/v1/log/entries?after=0&limit=20'
  snapshot   curl -s http://$LISTEN/v1/revocations/snapshot
  checkpoint curl -s http://$LISTEN/v1/checkpoint
  metrics    curl -s http://$LISTEN/metrics
  API        openapi/registry.json

  gateway    http://$GW_LISTEN   (pinned to $(tail -1 "$DEMO/group.pub"))
  ready      curl -s http://$GW_LISTEN/readyz
  snapshot   curl -s http://$GW_LISTEN/v1/revocations/snapshot
  proof      curl -s http://$GW_LISTEN/v1/revocations/00000000000000000000000000000000/proof
  verify     curl -s -XPOST -H 'content-type: application/json' http://$GW_LISTEN/v1/verify \\
               -d @$DEMO/verify-request.json
             (a demo member's signature on $DEMO/hello.txt; or, with the CLI:)
             $MANAGER verify --gateway http://$GW_LISTEN \\
               --message $DEMO/hello.txt --signature $DEMO/hello.sig --group-key $DEMO/group.pub
  API        curl -s http://$GW_LISTEN/openapi.json   (committed: openapi/gateway.json)

  admin token in $DEMO/admin-token; for example:
    curl -s -H "authorization: Bearer \$(cat $DEMO/admin-token)" http://$LISTEN/admin/v1/members/0
    DGSP_REGISTRY_URL=http://$LISTEN DGSP_ADMIN_TOKEN=\$(cat $DEMO/admin-token) $MANAGER operator member list
  the whole CLI path (join, wallet, sign, open, judge, revoke, audit): docs/walkthrough.md

INFO
wait $PID $GW_PID
