#!/usr/bin/env bash
# The container stack for real: the image from deploy/Dockerfile, the compose stack of
# deploy/compose/compose.host.yaml (registry, tile store, two gateways, HAProxy; host
# networking only), and a group's life through it:
#   join, issue, sign -> verify through HAProxy (ok) -> revoke -> both gateways answer
#   `revoked` -> the tile store's bucket holds the registry's checkpoint, tiles and snapshot
#   bundle, readable without a key and not writable without one, and its journal's lease
#   under private/, readable only with the key -> containers restarted -> the state
#   survived -> torn down (volumes too).
#
#   ./scripts/container-stack.sh          # the test command runs it (DGSP_CONTAINER_STACK=0 switches it off, saying so)
#
# Installs what it needs when missing, idempotently: Debian's docker.io, docker-compose and
# debootstrap; starts dockerd when no daemon answers. No image registry is reachable from
# CI, so the base image is made here: debootstrap a minimal Debian 12 with the runtime
# packages (librocksdb7.8, ca-certificates, curl) and HAProxy, `docker import` it as
# dgsp-base:bookworm (kept between runs; DGSP_REBUILD_BASE=1 makes it again). The three
# binaries are built on this (Debian 12) host and given to the Dockerfile's `prebuilt`
# stage; the same Dockerfile builds from source elsewhere. The tile store's image
# (chrislusf/seaweedfs) cannot be pulled either: a stand-in, dgsp-seaweedfs:stack-test, is
# the base image with the `weed` binary of scripts/s3.sh (the same pinned SeaweedFS, built
# once and cached) at /usr/bin/weed and /data owned by uid 1000, as in the official image.
#
# Environment:
#   DGSP_CONTAINER_PROFILE  cargo profile of the binaries (default dev: the one the tests
#                           build; `release` for an image to keep)
#   DGSP_CONTAINER_PORTS    base port (default 17300): registry +0, gateways +101/+102,
#                           HAProxy +780, tile store S3 +33 (its master +34, volume +35,
#                           filer +36, their gRPC ports 10000 above), so a running demo on
#                           7300/7400/8080/8333 is untouched
#   DGSP_KEEP_STACK=1       leave the stack running at the end (tear down by hand: the
#                           command is printed)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
. scripts/docker-lib.sh

prepare_build

ROOT=$PWD
CACHE=$DOCKER_CACHE
IMAGE=dgsp:stack-test
PROJECT=dgsp-stack-test
PROFILE="${DGSP_CONTAINER_PROFILE:-dev}"
port=${DGSP_CONTAINER_PORTS:-17300}
export DGSP_REGISTRY_PORT=$port
export DGSP_GATEWAY_A_PORT=$((port + 101)) DGSP_GATEWAY_B_PORT=$((port + 102))
export DGSP_LB_PORT=$((port + 780)) DGSP_LB_BIND=127.0.0.1
export DGSP_TILES_PORT=$((port + 33)) DGSP_TILES_MASTER_PORT=$((port + 34))
export DGSP_TILES_VOLUME_PORT=$((port + 35)) DGSP_TILES_FILER_PORT=$((port + 36))
SEAWEEDFS_IMAGE=dgsp-seaweedfs:stack-test
export DGSP_IMAGE=$IMAGE DGSP_HAPROXY_IMAGE=$BASE_IMAGE DGSP_SEAWEEDFS_IMAGE=$SEAWEEDFS_IMAGE
TILES=http://127.0.0.1:$DGSP_TILES_PORT
REG=https://127.0.0.1:$DGSP_REGISTRY_PORT   # HTTPS: make-secrets.sh's CA and certificate
GW_A=http://127.0.0.1:$DGSP_GATEWAY_A_PORT
GW_B=http://127.0.0.1:$DGSP_GATEWAY_B_PORT
LB=http://127.0.0.1:$DGSP_LB_PORT
mkdir -p "$CACHE"

# --- tools and the base image (scripts/docker-lib.sh) ---------------------------------------
ensure_docker
compose() { as_root env "${COMPOSE_ENV[@]}" "${COMPOSE[@]}" -p "$PROJECT" -f "$ROOT/deploy/compose/compose.host.yaml" "$@"; }
ensure_base_image

# --- image ---------------------------------------------------------------------------------
say "building dgsp-registry, dgsp-gateway, dgsp-manager ($PROFILE profile)"
if [ "$PROFILE" = dev ]; then
  build_dev_bins dgsp-registry dgsp-gateway dgsp-manager
  bindir="$CARGO_TARGET_DIR/debug"
else
  cargo build --profile "$PROFILE" --locked -p dgsp-registry -p dgsp-gateway -p dgsp-manager
  bindir="$CARGO_TARGET_DIR/$PROFILE"
fi
mkdir -p deploy/prebuilt
cp "$bindir/dgsp-registry" "$bindir/dgsp-gateway" "$bindir/dgsp-manager" deploy/prebuilt/
MANAGER="$ROOT/deploy/prebuilt/dgsp-manager"
say "building $IMAGE from deploy/Dockerfile (BINARIES=prebuilt, RUNTIME_IMAGE=$BASE_IMAGE)"
DOCKER_BUILDKIT=1 as_root "$DOCKER" build --network host -q -f deploy/Dockerfile \
  --build-arg BINARIES=prebuilt --build-arg RUNTIME_IMAGE="$BASE_IMAGE" \
  --build-arg REVISION="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
  -t "$IMAGE" . >/dev/null

say "building $SEAWEEDFS_IMAGE: $BASE_IMAGE with scripts/s3.sh's weed (stand-in for chrislusf/seaweedfs)"
./scripts/s3.sh install
weed_ctx=$(mktemp -d /tmp/dgsp-weed-image.XXXXXX)
cp "$(./scripts/s3.sh path)" "$weed_ctx/weed"
printf '%s\n' "FROM $BASE_IMAGE" \
  'COPY --chmod=0755 weed /usr/bin/weed' \
  'RUN groupadd --gid 1000 seaweed && useradd --uid 1000 --gid 1000 --no-create-home --shell /usr/sbin/nologin seaweed && install -d -o 1000 -g 1000 -m 0755 /data' \
  'WORKDIR /data' 'ENTRYPOINT ["/usr/bin/weed"]' >"$weed_ctx/Dockerfile"
DOCKER_BUILDKIT=1 as_root "$DOCKER" build --network host -q -t "$SEAWEEDFS_IMAGE" "$weed_ctx" >/dev/null
rm -rf "$weed_ctx"

# --- the stack -----------------------------------------------------------------------------
WORK=$(mktemp -d /tmp/dgsp-stack.XXXXXX)
SECRETS="$WORK/secrets"
COMPOSE_ENV=(DGSP_SECRETS_DIR="$SECRETS" DGSP_IMAGE DGSP_HAPROXY_IMAGE DGSP_SEAWEEDFS_IMAGE
  DGSP_TILES_PORT DGSP_TILES_MASTER_PORT DGSP_TILES_VOLUME_PORT DGSP_TILES_FILER_PORT DGSP_REGISTRY_PORT
  DGSP_GATEWAY_A_PORT DGSP_GATEWAY_B_PORT DGSP_LB_PORT DGSP_LB_BIND)
# `env NAME` alone would print the environment; give each as NAME=value.
for i in "${!COMPOSE_ENV[@]}"; do
  n=${COMPOSE_ENV[$i]}
  [[ $n == *=* ]] || COMPOSE_ENV[i]="$n=${!n}"
done
teardown() {
  local rc=$?
  if [ "${DGSP_KEEP_STACK:-0}" = 1 ]; then
    say "stack left running (DGSP_KEEP_STACK=1); tear down with:"
    echo "  sudo env ${COMPOSE_ENV[*]} ${COMPOSE[*]} -p $PROJECT -f $ROOT/deploy/compose/compose.host.yaml down -v"
    return
  fi
  if [ $rc != 0 ]; then
    say "failed (exit $rc): the services' logs"
    compose logs --no-color --tail 40 2>&1 | sed 's/^/  /' || true
  fi
  say "tearing the stack down (containers and volumes)"
  compose down -v --remove-orphans >/dev/null 2>&1 || true
  as_root rm -rf "$WORK"
}
trap teardown EXIT

# A previous run cut off may have left its stack: start from nothing.
compose down -v --remove-orphans >/dev/null 2>&1 || true
say "secrets in $SECRETS (owner 10001, mode 0400), and the registry's TLS certificate"
as_root env DGSP_SECRETS_DIR="$SECRETS" deploy/compose/make-secrets.sh >/dev/null
export DGSP_ADMIN_TOKEN
DGSP_ADMIN_TOKEN=$(as_root cat "$SECRETS/admin-token")
# The CA that issued the registry's certificate: what curl and dgsp-manager on the host trust.
CA="$WORK/tls-ca.pem"
as_root cat "$SECRETS/tls-ca.pem" >"$CA"
export DGSP_CA_FILE="$CA"

say "compose up: registry-init, tiles, tiles-init, registry, gateway-a, gateway-b, lb (host networking)"
compose up -d 2>&1 | sed 's/^/  /'

wait_url() { # URL NAME [SECONDS]
  for _ in $(seq $((${3:-90} * 2))); do
    curl -fs --cacert "$CA" -o /dev/null "$1" && return 0
    sleep 0.5
  done
  echo "$2 not ready at $1" >&2
  return 1
}
wait_url "$REG/readyz" registry
wait_url "$GW_A/readyz" gateway-a
wait_url "$GW_B/readyz" gateway-b
wait_url "$LB/readyz" "HAProxy"

say "every container runs on the host's network, none on a container network"
for c in $(compose ps -q); do
  mode=$(dk inspect -f '{{.Name}} {{.HostConfig.NetworkMode}}' "$c")
  echo "  $mode"
  case "$mode" in *" host" | *" none") ;; *) echo "not host networking: $mode" >&2; exit 1 ;; esac
done
dk inspect -f '{{.Config.User}}' "$(compose ps -q registry)" | grep -qx '10001:10001' \
  || { echo "the registry does not run as uid 10001" >&2; exit 1; }
curl -fs --cacert "$CA" "$REG/v1/group" | grep -q '"params"' || { echo "GET /v1/group failed" >&2; exit 1; }

say "the registry speaks HTTPS only, with make-secrets.sh's certificate; no token over plain HTTP"
! curl -s -m 5 -o /dev/null "http://127.0.0.1:$DGSP_REGISTRY_PORT/readyz" \
  || { echo "the registry answered plain HTTP" >&2; exit 1; }
! curl -fs -m 5 -o /dev/null "$REG/readyz" \
  || { echo "curl trusted the registry's certificate without its CA" >&2; exit 1; }
echo "  plain HTTP: no answer; HTTPS without the CA: refused"
refusal=$("$MANAGER" --json operator member list --registry "http://10.255.255.1:$DGSP_REGISTRY_PORT" 2>&1 || true)
case "$refusal" in *plain_http_refused*) echo "  dgsp-manager: admin token over plain HTTP off loopback refused" ;;
  *) echo "dgsp-manager did not refuse plain HTTP off loopback: $refusal" >&2; exit 1 ;; esac
code=$(curl -s -o /dev/null -w '%{http_code}' "$LB/metrics")
[ "$code" = 404 ] || { echo "HAProxy let /metrics through ($code)" >&2; exit 1; }
code=$(curl -s -o /dev/null -w '%{http_code}' "$LB/admin/v1/members")
[ "$code" != 200 ] || { echo "the admin API answered through HAProxy" >&2; exit 1; }

# Operator commands in the image's manager service (the operator shell of compose.host.yaml),
# with a work directory mounted; member commands with the same binary on the host.
as_root chown 10001:10001 "$WORK"
operator() { compose run --rm -T -v "$WORK:/work" -w /work manager "$@"; }
say "operator (in a container): join alice and bob"
operator operator join alice bob --out /work/joins | sed 's/^/  /'
say "alice (on the host): keygen, CSR for 3 certificates"
export DGSP_WALLET="$WORK/alice.wallet" DGSP_WALLET_PASSPHRASE_FILE="$WORK/alice-passphrase"
(umask 077; head -c 24 /dev/urandom | base64 > "$DGSP_WALLET_PASSPHRASE_FILE")
export DGSP_REGISTRY_URL=$REG DGSP_GATEWAY_URL=$LB
"$MANAGER" member keygen --join "$WORK/joins/alice.join.json" >/dev/null
"$MANAGER" member csr --count 3 --out "$WORK/alice.csr.json" >/dev/null
as_root chown 10001:10001 "$WORK/alice.csr.json"
say "operator (in a container): issue alice's certificates"
operator operator issue /work/alice.csr.json --out /work/alice.certs.json | sed 's/^/  /'
"$MANAGER" member import "$WORK/alice.certs.json" >/dev/null
echo "signed inside the container stack test" > "$WORK/msg.txt"
"$MANAGER" member sign "$WORK/msg.txt" --out "$WORK/msg.sig" >/dev/null

# verify MESSAGE SIG GATEWAY -> prints the gateway's status word (ok, revoked, ...)
verdict() {
  local body
  body=$(printf '{"message":"%s","signature":"%s"}' "$(base64 -w0 < "$1")" "$(tr -d '\n' < "$2")")
  curl -s -XPOST -H 'content-type: application/json' --data-binary "$body" "$3/v1/verify" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])'
}
# until_status WANT GATEWAY NAME [SIG]: the verdict of SIG (default msg.sig) on msg.txt at
# GATEWAY becomes WANT within 60 s
until_status() {
  local got=
  for _ in $(seq 120); do
    got=$(verdict "$WORK/msg.txt" "${4:-$WORK/msg.sig}" "$2" || true)
    [ "$got" = "$1" ] && { echo "  $3: $got"; return 0; }
    sleep 0.5
  done
  echo "$3 answered '$got', expected '$1'" >&2
  return 1
}

say "verify through HAProxy (and the CLI's offline checks of the answer)"
until_status ok "$LB" "HAProxy"
"$MANAGER" verify --gateway "$LB" --message "$WORK/msg.txt" --signature "$WORK/msg.sig" | sed 's/^/  /'

say "operator (in a container): revoke alice; both gateways must answer revoked"
operator operator revoke --username alice --yes | sed 's/^/  /'
until_status revoked "$GW_A" gateway-a
until_status revoked "$GW_B" gateway-b
until_status revoked "$LB" HAProxy
rc=0
"$MANAGER" verify --gateway "$LB" --message "$WORK/msg.txt" --signature "$WORK/msg.sig" >/dev/null || rc=$?
[ "$rc" = 3 ] || { echo "dgsp-manager verify exited $rc on a revoked signature, expected 3" >&2; exit 1; }

say "the tile store: the registry's log in the bucket, read without a key, not writable without one"
dk inspect -f '{{.Config.User}}' "$(compose ps -q tiles)" | grep -qx '1000:1000' \
  || { echo "the tile store does not run as uid 1000" >&2; exit 1; }
reg_size=$(curl -fs --cacert "$CA" "$REG/v1/log/checkpoint" | sed -n 2p)
got=""
for _ in $(seq 60); do
  got=$(curl -fs "$TILES/dgsp-tiles/checkpoint" | sed -n 2p || true)
  [ -n "$got" ] && [ "$got" -ge "$reg_size" ] && break
  sleep 0.5
done
[ -n "$got" ] && [ "$got" -ge "$reg_size" ] \
  || { echo "the bucket's checkpoint covers '${got:-nothing}', the registry's $reg_size" >&2; exit 1; }
echo "  $TILES/dgsp-tiles/checkpoint: size $got (the registry's: $reg_size)"
cmp <(curl -fs "$TILES/dgsp-tiles/tile/entries/000.p/$((got < 256 ? got : 256))" 2>/dev/null \
        || curl -fs "$TILES/dgsp-tiles/tile/entries/000") \
    <(curl -fs --cacert "$CA" "$REG/v1/log/tile/entries/000.p/$((got < 256 ? got : 256))" 2>/dev/null \
        || curl -fs --cacert "$CA" "$REG/v1/log/tile/entries/000") \
  || { echo "the bucket's first entry bundle differs from the registry's" >&2; exit 1; }
echo "  tile/entries/000: the same bytes in the bucket and at the registry"
code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT --data-binary x "$TILES/dgsp-tiles/checkpoint")
[ "$code" = 403 ] || { echo "an unsigned PUT into the bucket answered $code, expected 403" >&2; exit 1; }
code=$(curl -s -o /dev/null -w '%{http_code}' "$TILES/dgsp-tiles?list-type=2")
[ "$code" = 403 ] || { echo "an unsigned listing of the bucket answered $code, expected 403" >&2; exit 1; }
echo "  unsigned PUT and listing: 403"
# The journal (DGSP_JOURNAL=on): the write lease and the segments live under private/,
# which the registry's key reads and an unsigned request does not.
s3key="$(as_root cat "$SECRETS/tiles-s3-access-key"):$(as_root cat "$SECRETS/tiles-s3-secret-key")"
code=$(printf 'user = "%s"\n' "$s3key" | curl -s -K - -o /dev/null -w '%{http_code}' -I \
  --aws-sigv4 "aws:amz:us-east-1:s3" -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$TILES/dgsp-tiles/private/lease")
[ "$code" = 200 ] || { echo "the registry's write lease is not in the bucket (signed HEAD: $code)" >&2; exit 1; }
code=$(curl -s -o /dev/null -w '%{http_code}' "$TILES/dgsp-tiles/private/lease")
[ "$code" = 403 ] || { echo "an unsigned GET of private/lease answered $code, expected 403" >&2; exit 1; }
snap=$(curl -fs "$TILES/dgsp-tiles/checkpoint" | sed -n 's/^snapshot \([0-9]*\) .*/\1/p')
if [ -n "$snap" ]; then
  curl -fs -o /dev/null "$TILES/dgsp-tiles/snapshot/$(printf '%03d' "$snap")" \
    || { echo "snapshot bundle $snap is not readable unsigned" >&2; exit 1; }
  echo "  snapshot bundle $snap: readable unsigned"
fi
echo "  the journal's lease: private/lease (signed HEAD 200, unsigned GET 403)"

log_size() { curl -fs --cacert "$CA" "$REG/v1/checkpoint" | python3 -c 'import json,sys; print(json.load(sys.stdin)["size"])'; }

say "the registry's certificate renewed (make-secrets.sh, DGSP_RENEW_TLS=1) and taken on SIGHUP, without a restart"
served_serial() {
  openssl s_client -connect "127.0.0.1:$DGSP_REGISTRY_PORT" -CAfile "$CA" </dev/null 2>/dev/null \
    | openssl x509 -noout -serial
}
started=$(dk inspect -f '{{.State.StartedAt}}' "$(compose ps -q registry)")
before=$(served_serial)
as_root env DGSP_SECRETS_DIR="$SECRETS" DGSP_RENEW_TLS=1 deploy/compose/make-secrets.sh >/dev/null
renewed=$(as_root openssl x509 -in "$SECRETS/tls-registry.pem" -noout -serial)
compose kill -s HUP registry >/dev/null 2>&1
after=""
for _ in $(seq 40); do
  after=$(served_serial || true)
  [ "$after" = "$renewed" ] && break
  sleep 0.25
done
[ "$after" = "$renewed" ] && [ "$after" != "$before" ] \
  || { echo "the registry serves '$after' after SIGHUP, not the renewed '$renewed' (before: '$before')" >&2; exit 1; }
[ "$(dk inspect -f '{{.State.StartedAt}}' "$(compose ps -q registry)")" = "$started" ] \
  || { echo "the registry restarted on SIGHUP" >&2; exit 1; }
wait_url "$REG/readyz" registry
echo "  served: $before -> $after (same process)"

members() { operator --json operator member list | python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d["members"] if isinstance(d, dict) else d))'; }
size_before=$(log_size)
members_before=$(members)
say "restarting every container (state must survive: log size $size_before, members $members_before)"
compose restart 2>&1 | sed 's/^/  /'
wait_url "$REG/readyz" registry
wait_url "$GW_A/readyz" gateway-a
wait_url "$GW_B/readyz" gateway-b
wait_url "$LB/readyz" HAProxy
curl -fs "$TILES/dgsp-tiles/checkpoint" | sed -n 2p | grep -qx '[0-9]*' \
  || { echo "the tile store lost the checkpoint across a restart" >&2; exit 1; }
size_after=$(log_size)
members_after=$(members)
[ "$size_after" -ge "$size_before" ] || { echo "the log shrank across a restart: $size_before -> $size_after" >&2; exit 1; }
[ "$members_after" = "$members_before" ] || { echo "members $members_before -> $members_after across a restart" >&2; exit 1; }
until_status revoked "$GW_A" "gateway-a after restart"
until_status revoked "$GW_B" "gateway-b after restart"
until_status revoked "$LB" "HAProxy after restart"

say "bob (not revoked) still signs and verifies after the restart"
export DGSP_WALLET="$WORK/bob.wallet"
"$MANAGER" member keygen --join "$WORK/joins/bob.join.json" >/dev/null
"$MANAGER" member csr --count 1 --out "$WORK/bob.csr.json" >/dev/null
as_root chown 10001:10001 "$WORK/bob.csr.json"
operator operator issue /work/bob.csr.json --out /work/bob.certs.json >/dev/null
"$MANAGER" member import "$WORK/bob.certs.json" >/dev/null
"$MANAGER" member sign "$WORK/msg.txt" --out "$WORK/bob.sig" >/dev/null
until_status ok "$LB" "HAProxy, bob's signature" "$WORK/bob.sig"

say "the container stack works: image, compose (host networking), tile store, HAProxy, the registry over HTTPS (renewed on SIGHUP), revocation, restart"
