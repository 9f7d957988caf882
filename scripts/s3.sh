#!/usr/bin/env bash
# The S3 server of the tile store's tests: SeaweedFS (Apache-2.0), one process (`weed mini`)
# on loopback with fixed test credentials. docs/tilestore.md says why SeaweedFS (it honours
# conditional writes; S3Proxy 2.6 ignores them).
#
#   scripts/s3.sh install                 build `weed` once, cached under
#                                         ${DGSP_TOOLS_DIR:-$HOME/.cache/dgsp/tools}
#   scripts/s3.sh start DIR PORT [PID]    start it (data and pid file in DIR; S3 on PORT, its
#                                         other listeners on PORT+1..PORT+10), wait until a
#                                         write succeeds, create the bucket; prints
#                                         `export DGSP_TEST_S3_...=...` lines on stdout. With
#                                         PID: a watcher stops the server when PID exits.
#   scripts/s3.sh stop DIR                stop it
#   scripts/s3.sh path                    print the path of the cached binary
#
# Use by hand:  eval "$(scripts/s3.sh start /tmp/dgsp-s3 18333)"; cargo test -p dgsp-tilestore
#               scripts/s3.sh stop /tmp/dgsp-s3
set -euo pipefail

SEAWEEDFS_MODULE=github.com/seaweedfs/seaweedfs
# Pinned: a new version is a new server to probe (docs/tilestore.md, "Choosing the server").
SEAWEEDFS_VERSION=v0.0.0-20261109003541-7506e5f91cd6
TOOLS_DIR="${DGSP_TOOLS_DIR:-$HOME/.cache/dgsp/tools}"
WEED="$TOOLS_DIR/seaweedfs-$SEAWEEDFS_VERSION/weed"

# Fixed test credentials: the server listens on loopback only and holds test data only.
S3_ACCESS_KEY=dgsptestkey
S3_SECRET_KEY=dgsptestsecret-not-a-secret
S3_BUCKET=dgsp-test
S3_REGION=us-east-1

log() { printf 's3.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

cmd_path() { echo "$WEED"; }

cmd_install() {
  if [ -x "$WEED" ]; then
    log "SeaweedFS $SEAWEEDFS_VERSION: cached at $WEED"
    return 0
  fi
  command -v go >/dev/null \
    || die "SeaweedFS is built from source with Go (1.21 or later, which fetches the toolchain the module asks for; https://go.dev/dl/), and 'go' is not on PATH"
  mkdir -p "$TOOLS_DIR"
  # One build at a time on this machine (parallel test binaries, other checkouts).
  exec 9>"$TOOLS_DIR/.seaweedfs.lock"
  if command -v flock >/dev/null; then flock 9; fi
  if [ -x "$WEED" ]; then
    log "SeaweedFS $SEAWEEDFS_VERSION: built meanwhile by another process, at $WEED"
    return 0
  fi
  local t0 dir
  t0=$(now)
  log "installing SeaweedFS $SEAWEEDFS_VERSION: downloading the module (go mod download)"
  # `go install module@version` refuses the replace directives of SeaweedFS's go.mod: build
  # inside the downloaded module instead.
  dir=$(GOWORK=off GOFLAGS=-mod=mod go mod download -json "$SEAWEEDFS_MODULE@$SEAWEEDFS_VERSION" \
    | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
  [ -n "$dir" ] && [ -d "$dir" ] || die "go mod download $SEAWEEDFS_MODULE@$SEAWEEDFS_VERSION gave no directory"
  log "downloaded in $(since "$t0") s; building ./weed (several minutes on 2 cores, once)"
  mkdir -p "$(dirname "$WEED")"
  (cd "$dir" && GOWORK=off CGO_ENABLED=0 go build -trimpath -o "$WEED.tmp" ./weed) \
    || die "go build of SeaweedFS failed (see above)"
  mv "$WEED.tmp" "$WEED"
  log "SeaweedFS installed at $WEED in $(since "$t0") s ($("$WEED" version 2>/dev/null | head -1))"
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# curl with SigV4 (curl >= 7.75); -H x-amz-content-sha256: curl does not send it itself.
s3curl() {
  curl -sS --max-time 10 --aws-sigv4 "aws:amz:$S3_REGION:s3" --user "$S3_ACCESS_KEY:$S3_SECRET_KEY" \
    -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$@"
}

cmd_start() {
  [ $# -ge 2 ] || die "usage: s3.sh start DIR PORT [OWNER_PID]"
  local dir=$1 port=$2 owner=${3:-} t0 p pid endpoint code i
  [[ "$port" =~ ^[0-9]+$ ]] && [ "$port" -ge 1024 ] && [ "$port" -le 65525 ] \
    || die "PORT must be a number in 1024..65525 (PORT..PORT+10 are used)"
  [ -x "$WEED" ] || cmd_install
  mkdir -p "$dir/data"
  dir=$(cd "$dir" && pwd)
  if [ -f "$dir/weed.pid" ] && kill -0 "$(cat "$dir/weed.pid")" 2>/dev/null; then
    die "a server already runs for $dir (pid $(cat "$dir/weed.pid")): scripts/s3.sh stop $dir"
  fi
  for p in $(seq "$port" $((port + 10))); do
    if port_in_use "$p"; then die "port $p (of $port..$((port + 10))) is in use"; fi
  done
  cat >"$dir/s3.json" <<EOF
{"identities":[{"name":"dgsptest","credentials":[{"accessKey":"$S3_ACCESS_KEY","secretKey":"$S3_SECRET_KEY"}],"actions":["Admin","Read","List","Tagging","Write"]}]}
EOF
  t0=$(now)
  log "starting SeaweedFS on 127.0.0.1:$port (data $dir/data, log $dir/weed.log)"
  "$WEED" mini -dir="$dir/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
    -s3.port="$port" -master.port=$((port + 1)) -master.port.grpc=$((port + 2)) \
    -volume.port=$((port + 3)) -volume.port.grpc=$((port + 4)) \
    -filer.port=$((port + 5)) -filer.port.grpc=$((port + 6)) -s3.port.grpc=$((port + 7)) \
    -admin.port=$((port + 8)) -admin.port.grpc=$((port + 9)) -admin.port.legacy=0 \
    -metricsPort=$((port + 10)) -admin.ui=false -webdav=false \
    -s3.port.iceberg=0 -s3.port.lance=0 -master.telemetry=false \
    -master.volumeSizeLimitMB=64 -s3.config="$dir/s3.json" -bucket="$S3_BUCKET" \
    </dev/null >"$dir/weed.log" 2>&1 &
  pid=$!
  echo "$pid" >"$dir/weed.pid"
  endpoint="http://127.0.0.1:$port"
  # Ready when a write into the bucket succeeds (the volume server has registered).
  for i in $(seq 1 600); do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 30 "$dir/weed.log" >&2 || true
      rm -f "$dir/weed.pid"
      die "SeaweedFS exited while starting (log above: $dir/weed.log)"
    fi
    code=$(s3curl -o /dev/null -w '%{http_code}' -X PUT --data-binary ready \
      "$endpoint/$S3_BUCKET/dgsp-s3-ready" 2>/dev/null || true)
    [ "$code" = 200 ] && break
    # The bucket is created by -bucket at start; create it here too if a slow start lost it.
    if [ "$code" = 404 ]; then s3curl -o /dev/null -X PUT "$endpoint/$S3_BUCKET" 2>/dev/null || true; fi
    sleep 0.1
  done
  if [ "$code" != 200 ]; then
    tail -n 30 "$dir/weed.log" >&2 || true
    cmd_stop "$dir"
    die "SeaweedFS did not accept a write within 60 s (last HTTP status: $code)"
  fi
  s3curl -o /dev/null -X DELETE "$endpoint/$S3_BUCKET/dgsp-s3-ready" || true
  if [ -n "$owner" ]; then
    # Stops the server when its owner (a test binary) goes, even by SIGKILL.
    # (A killed owner can linger as a zombie until its parent reaps it: that counts as gone.)
    (
      alive() { case "$(ps -o stat= -p "$1" 2>/dev/null)" in '' | Z*) return 1 ;; esac; }
      while alive "$owner" && kill -0 "$pid" 2>/dev/null; do sleep 1; done
      kill "$pid" 2>/dev/null || exit 0
      for _ in 1 2 3 4 5; do kill -0 "$pid" 2>/dev/null || exit 0; sleep 1; done
      kill -9 "$pid" 2>/dev/null || true
    ) </dev/null >/dev/null 2>&1 &
    echo $! >"$dir/watch.pid"
  fi
  log "SeaweedFS ready at $endpoint in $(since "$t0") s (pid $pid, bucket $S3_BUCKET)"
  cat <<EOF
export DGSP_TEST_S3_ENDPOINT=$endpoint
export DGSP_TEST_S3_BUCKET=$S3_BUCKET
export DGSP_TEST_S3_REGION=$S3_REGION
export DGSP_TEST_S3_ACCESS_KEY=$S3_ACCESS_KEY
export DGSP_TEST_S3_SECRET_KEY=$S3_SECRET_KEY
EOF
}

cmd_stop() {
  [ $# -ge 1 ] || die "usage: s3.sh stop DIR"
  local dir=$1 pid i
  if [ -f "$dir/watch.pid" ]; then
    kill "$(cat "$dir/watch.pid")" 2>/dev/null || true
    rm -f "$dir/watch.pid"
  fi
  if [ ! -f "$dir/weed.pid" ]; then
    log "no server recorded in $dir"
    return 0
  fi
  pid=$(cat "$dir/weed.pid")
  if kill "$pid" 2>/dev/null; then
    for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null || true; fi
    log "stopped SeaweedFS (pid $pid)"
  fi
  rm -f "$dir/weed.pid"
}

case "${1:-}" in
  install) shift; cmd_install "$@" ;;
  start) shift; cmd_start "$@" ;;
  stop) shift; cmd_stop "$@" ;;
  path) shift; cmd_path "$@" ;;
  *) sed -n '2,17p' "$0" >&2; exit 2 ;;
esac
