#!/usr/bin/env bash
# Two independent C2SP tlog-witness implementations, for the witness tests of issue 28
# (docs/witnesses.md says what each accepts and why these versions):
#   omniwitness  github.com/transparency-dev/witness/cmd/omniwitness (Apache-2.0); its own key
#                is ML-DSA-44 (cosignature type 0x06), made by that module's cmd/generate_keys
#   litewitness  filippo.io/torchwood/cmd/litewitness (BSD-3-Clause); its own key is Ed25519
#                (cosignature type 0x04), held by a dedicated ssh-agent, as litewitness requires
# Both are built from the Go module proxy at pinned versions and run on loopback, each with its
# own state on disk (an SQLite file). scripts/test.sh (and so .ci/run) runs `install` before the
# tests, unless DGSP_SKIP_WITNESSES=1; the tests start them through dgsp-witness's test_server.
#
#   scripts/witnesses.sh install                 build both once, cached under
#                                                ${DGSP_TOOLS_DIR:-$HOME/.cache/dgsp/tools}
#   scripts/witnesses.sh start DIR PORT [PID]    start both (keys, databases, logs and pid files
#                                                in DIR/omniwitness and DIR/litewitness; keys are
#                                                made once and kept, so a restart is the same
#                                                witness with the same state). omniwitness on
#                                                PORT (metrics PORT+1), litewitness on PORT+2.
#                                                The logs they witness: DGSP_WITNESS_LOG_VKEYS,
#                                                whitespace-separated log vkeys (C2SP signed-note;
#                                                the key name is the log's origin). Prints
#                                                `export DGSP_TEST_WITNESS_...=...` lines on stdout
#                                                and writes DIR/policy (C2SP tlog-policy, 2-of-2;
#                                                give one log: torchwood v0.10.0's policy parser
#                                                wants every listed log to have signed).
#                                                With PID: a watcher stops them when PID exits.
#   scripts/witnesses.sh stop DIR                stop both
#   scripts/witnesses.sh path                    print the paths of the cached binaries
#
# Use by hand:  DGSP_WITNESS_LOG_VKEYS="$LOG_VKEY" scripts/witnesses.sh start /tmp/dgsp-w 17380
#               scripts/witnesses.sh stop /tmp/dgsp-w
set -euo pipefail

# Pinned: a new version is a new witness to probe (docs/witnesses.md). transparency-dev/witness
# publishes no tags: this is the newest pseudo-version the proxy served on 2026-11-26.
WITNESS_MODULE=github.com/transparency-dev/witness
WITNESS_VERSION=v0.0.0-20260720115447-2e1c6971d19e
# v0.10.0 is the first litewitness that accepts ML-DSA-44 log keys; its go.mod says go 1.27.0,
# so it is built with the toolchain go1.27.3, which the go command takes from the module proxy.
# (Its witnessctl is not built: it imports sigsum.org/sigsum-go, which the proxy does not serve;
# this script writes litewitness's two tables itself, as witnessctl add-log / add-key do.)
TORCHWOOD_MODULE=filippo.io/torchwood
TORCHWOOD_VERSION=v0.10.0
TORCHWOOD_TOOLCHAIN=go1.27.3

TOOLS_DIR="${DGSP_TOOLS_DIR:-$HOME/.cache/dgsp/tools}"
OMNI_DIR="$TOOLS_DIR/omniwitness-$WITNESS_VERSION"
OMNIWITNESS="$OMNI_DIR/omniwitness"
GENERATE_KEYS="$OMNI_DIR/generate_keys"
LITEWITNESS="$TOOLS_DIR/litewitness-$TORCHWOOD_VERSION/litewitness"

# The witnesses' names (the key names in their cosignature lines); test witnesses only.
OMNI_NAME=dgsp-test.invalid/omniwitness
LITE_NAME=dgsp-test.invalid/litewitness
# RFC 6962 hash of the empty tree, base64: what witnessctl add-log stores for a new log.
EMPTY_TREE=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=

log() { printf 'witnesses.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

cmd_path() { printf '%s\n' "$OMNIWITNESS" "$GENERATE_KEYS" "$LITEWITNESS"; }

# go_install BIN_DIR TOOLCHAIN PACKAGE@VERSION...: build into BIN_DIR, atomically.
go_install() {
  local dest=$1 toolchain=$2 tmp
  shift 2
  tmp="$dest.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  if ! GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 GOTOOLCHAIN="$toolchain" GOBIN="$tmp" \
    go install -trimpath "$@"; then
    rm -rf "$tmp"
    die "go install $* failed (see above)"
  fi
  mkdir -p "$dest"
  mv "$tmp"/* "$dest"/
  rm -rf "$tmp"
}

cmd_install() {
  if [ -x "$OMNIWITNESS" ] && [ -x "$GENERATE_KEYS" ] && [ -x "$LITEWITNESS" ]; then
    log "witnesses: cached (omniwitness $WITNESS_VERSION, litewitness $TORCHWOOD_VERSION)"
    return 0
  fi
  command -v go >/dev/null \
    || die "the witnesses are built from source with Go (1.21 or later, which fetches the toolchain a module asks for), and 'go' is not on PATH"
  mkdir -p "$TOOLS_DIR"
  # One build at a time on this machine (parallel test binaries, other checkouts).
  exec 8>"$TOOLS_DIR/.witnesses.lock"
  if command -v flock >/dev/null; then flock 8; fi
  local t0 t1
  t0=$(now)
  if [ -x "$OMNIWITNESS" ] && [ -x "$GENERATE_KEYS" ]; then
    log "omniwitness $WITNESS_VERSION: cached at $OMNIWITNESS"
  else
    t1=$(now)
    log "installing omniwitness and generate_keys $WITNESS_VERSION (go install; minutes, once)"
    go_install "$OMNI_DIR" local \
      "$WITNESS_MODULE/cmd/omniwitness@$WITNESS_VERSION" \
      "$WITNESS_MODULE/cmd/generate_keys@$WITNESS_VERSION"
    log "omniwitness installed at $OMNIWITNESS in $(since "$t1") s"
  fi
  if [ -x "$LITEWITNESS" ]; then
    log "litewitness $TORCHWOOD_VERSION: cached at $LITEWITNESS"
  else
    t1=$(now)
    log "installing litewitness $TORCHWOOD_VERSION with $TORCHWOOD_TOOLCHAIN (go install; a minute or more, once)"
    go_install "$(dirname "$LITEWITNESS")" "$TORCHWOOD_TOOLCHAIN" \
      "$TORCHWOOD_MODULE/cmd/litewitness@$TORCHWOOD_VERSION"
    log "litewitness installed at $LITEWITNESS in $(since "$t1") s"
  fi
  log "witnesses installed in $(since "$t0") s"
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# The status code of an empty add-checkpoint request: 400 from a witness that is up.
probe() { curl -s -o /dev/null --max-time 2 -w '%{http_code}' -X POST --data-binary '' "$1/add-checkpoint" 2>/dev/null || true; }

# wait_ready NAME PID URL LOGFILE
wait_ready() {
  local name=$1 pid=$2 url=$3 logfile=$4 code="" i
  for i in $(seq 1 300); do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 30 "$logfile" >&2 || true
      return 1
    fi
    code=$(probe "$url")
    [ "$code" = 400 ] && return 0
    sleep 0.1
  done
  tail -n 30 "$logfile" >&2 || true
  log "$name did not answer at $url within 30 s (last HTTP status: ${code:-none})"
  return 1
}

# The log vkeys to witness, one a line, each checked: name+8 hex+base64, with a name.
log_vkeys() {
  local v
  for v in ${DGSP_WITNESS_LOG_VKEYS:-}; do
    [[ "$v" =~ ^[^+[:space:]]+\+[0-9a-f]{8}\+[A-Za-z0-9+/]+=*$ ]] \
      || die "not a vkey (name+keyid+base64): $v"
    printf '%s\n' "$v"
  done
}

# litewitness_add_logs DB: the tables and rows that witnessctl add-log and add-key write
# (torchwood internal/witness OpenDB; cmd/witnessctl addLog, addKey), idempotently.
litewitness_add_logs() {
  local db=$1
  log_vkeys | python3 -c '
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.executescript("""
PRAGMA foreign_keys = ON;
CREATE TABLE IF NOT EXISTS log (origin TEXT PRIMARY KEY, tree_size INTEGER NOT NULL, tree_hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS key (origin TEXT NOT NULL, key TEXT NOT NULL, FOREIGN KEY(origin) REFERENCES log(origin));
CREATE TABLE IF NOT EXISTS bastion (origin TEXT NOT NULL, bastion TEXT NOT NULL, FOREIGN KEY(origin) REFERENCES log(origin));
""")
for vkey in sys.stdin.read().split():
    origin = vkey.split("+", 1)[0]
    db.execute("INSERT OR IGNORE INTO log (origin, tree_size, tree_hash) VALUES (?, 0, ?)", (origin, sys.argv[2]))
    if not db.execute("SELECT 1 FROM key WHERE origin = ? AND key = ?", (origin, vkey)).fetchone():
        db.execute("INSERT INTO key (origin, key) VALUES (?, ?)", (origin, vkey))
db.commit()
' "$db" "$EMPTY_TREE"
}

cmd_start() {
  [ $# -ge 2 ] || die "usage: witnesses.sh start DIR PORT [OWNER_PID]"
  local dir=$1 port=$2 owner=${3:-} t0 p ow lw omni_pid agent_pid lite_pid fp omni_vkey lite_vkey v
  [[ "$port" =~ ^[0-9]+$ ]] && [ "$port" -ge 1024 ] && [ "$port" -le 65533 ] \
    || die "PORT must be a number in 1024..65533 (PORT..PORT+2 are used)"
  command -v ssh-agent >/dev/null && command -v ssh-keygen >/dev/null && command -v ssh-add >/dev/null \
    || die "litewitness takes its key from an ssh-agent: ssh-agent, ssh-add and ssh-keygen (Debian: openssh-client) are needed"
  command -v python3 >/dev/null || die "python3 (with sqlite3) is needed to configure litewitness's database"
  [ -x "$OMNIWITNESS" ] && [ -x "$LITEWITNESS" ] || cmd_install
  mkdir -p "$dir/omniwitness" "$dir/litewitness"
  dir=$(cd "$dir" && pwd)
  ow="$dir/omniwitness"
  lw="$dir/litewitness"
  for p in "$ow/omniwitness.pid" "$lw/litewitness.pid" "$lw/ssh-agent.pid"; do
    if [ -f "$p" ] && kill -0 "$(cat "$p")" 2>/dev/null; then
      die "a witness already runs for $dir (pid $(cat "$p")): scripts/witnesses.sh stop $dir"
    fi
  done
  for p in "$port" $((port + 1)) $((port + 2)); do
    if port_in_use "$p"; then die "port $p (of $port..$((port + 2))) is in use"; fi
  done
  [ ${#lw} -le 90 ] || die "DIR is too long for litewitness's ssh-agent socket (a Unix socket path): use a shorter one"
  t0=$(now)

  # omniwitness: an ML-DSA-44 key made once; the logs in an additional_logs file (it also
  # loads its built-in list of public logs, which it never contacts: it only answers).
  if [ ! -f "$ow/key.sec" ]; then
    "$GENERATE_KEYS" --origin="$OMNI_NAME" --mldsa --out_priv="$ow/key.sec" --out_pub="$ow/key.vkey" \
      2>>"$ow/omniwitness.log" || die "generate_keys failed ($ow/omniwitness.log)"
  fi
  omni_vkey=$(cat "$ow/key.vkey")
  {
    echo "Logs:"
    while read -r v; do
      [ -n "$v" ] || continue
      printf '  - Origin: "%s"\n    PublicKey: "%s"\n' "${v%%+*}" "$v"
    done < <(log_vkeys)
  } >"$ow/logs.yaml"
  log "starting omniwitness on 127.0.0.1:$port (state $ow/witness.db, log $ow/omniwitness.log)"
  "$OMNIWITNESS" --listen="127.0.0.1:$port" --metrics_listen="127.0.0.1:$((port + 1))" \
    --db_file="$ow/witness.db" --private_key_path="$ow/key.sec" --additional_logs="$ow/logs.yaml" \
    </dev/null >>"$ow/omniwitness.log" 2>&1 &
  omni_pid=$!
  echo "$omni_pid" >"$ow/omniwitness.pid"

  # litewitness: an Ed25519 key made once, served by its own ssh-agent.
  if [ ! -f "$lw/key" ]; then
    ssh-keygen -q -t ed25519 -N '' -C "$LITE_NAME" -f "$lw/key" >/dev/null
  fi
  fp=$(ssh-keygen -l -E sha256 -f "$lw/key.pub" | awk '{print $2}')
  rm -f "$lw/agent.sock"
  ssh-agent -D -a "$lw/agent.sock" </dev/null >>"$lw/ssh-agent.log" 2>&1 &
  agent_pid=$!
  echo "$agent_pid" >"$lw/ssh-agent.pid"
  for _ in $(seq 1 50); do [ -S "$lw/agent.sock" ] && break; sleep 0.1; done
  SSH_AUTH_SOCK="$lw/agent.sock" ssh-add -q "$lw/key" 2>>"$lw/ssh-agent.log" \
    || { cmd_stop "$dir"; die "ssh-add failed ($lw/ssh-agent.log)"; }
  litewitness_add_logs "$lw/litewitness.db" || { cmd_stop "$dir"; die "configuring litewitness's logs failed"; }
  log "starting litewitness on 127.0.0.1:$((port + 2)) (state $lw/litewitness.db, log $lw/litewitness.log)"
  "$LITEWITNESS" -name="$LITE_NAME" -db="$lw/litewitness.db" -ssh-agent="$lw/agent.sock" \
    -key="$fp" -listen="127.0.0.1:$((port + 2))" </dev/null >>"$lw/litewitness.log" 2>&1 &
  lite_pid=$!
  echo "$lite_pid" >"$lw/litewitness.pid"

  if ! wait_ready omniwitness "$omni_pid" "http://127.0.0.1:$port" "$ow/omniwitness.log"; then
    cmd_stop "$dir"; die "omniwitness did not start (log above: $ow/omniwitness.log)"
  fi
  if ! wait_ready litewitness "$lite_pid" "http://127.0.0.1:$((port + 2))" "$lw/litewitness.log"; then
    cmd_stop "$dir"; die "litewitness did not start (log above: $lw/litewitness.log)"
  fi
  # litewitness prints its vkey (type 0x04, from the key in the agent) when it starts.
  lite_vkey=$(sed -n 's/.*msg="verifier key" vkey=\([^ ]*\).*/\1/p' "$lw/litewitness.log" | tail -n 1)
  [ -n "$lite_vkey" ] || { cmd_stop "$dir"; die "litewitness printed no verifier key ($lw/litewitness.log)"; }
  echo "$lite_vkey" >"$lw/key.vkey"

  # A C2SP tlog-policy: the logs, the two witnesses, both required.
  {
    echo "# Test witnesses of scripts/witnesses.sh ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
    while read -r v; do [ -n "$v" ] && echo "log $v"; done < <(log_vkeys)
    echo "witness omniwitness $omni_vkey http://127.0.0.1:$port"
    echo "witness litewitness $lite_vkey http://127.0.0.1:$((port + 2))"
    echo "group both all omniwitness litewitness"
    echo "quorum both"
  } >"$dir/policy"

  if [ -n "$owner" ]; then
    # Stops the witnesses when their owner (a test binary) goes, even by SIGKILL.
    (
      while alive "$owner" && kill -0 "$omni_pid" 2>/dev/null; do sleep 1; done
      for p in "$omni_pid" "$lite_pid" "$agent_pid"; do kill "$p" 2>/dev/null || true; done
      sleep 2
      for p in "$omni_pid" "$lite_pid" "$agent_pid"; do kill -9 "$p" 2>/dev/null || true; done
    ) </dev/null >/dev/null 2>&1 &
    echo $! >"$dir/watch.pid"
  fi
  log "witnesses ready in $(since "$t0") s (omniwitness pid $omni_pid, litewitness pid $lite_pid, ssh-agent pid $agent_pid)"
  cat <<EOF
export DGSP_TEST_WITNESS_OMNI_URL=http://127.0.0.1:$port
export DGSP_TEST_WITNESS_OMNI_VKEY=$omni_vkey
export DGSP_TEST_WITNESS_LITE_URL=http://127.0.0.1:$((port + 2))
export DGSP_TEST_WITNESS_LITE_VKEY=$lite_vkey
export DGSP_TEST_WITNESS_POLICY=$dir/policy
EOF
}

# alive PID: the process runs (a zombie waiting for its reaper does not count).
alive() { case "$(ps -o stat= -p "$1" 2>/dev/null)" in '' | Z*) return 1 ;; esac; }

# stop_pidfiles NAME:FILE...: SIGTERM to all at once, up to 5 s for all to go, then SIGKILL.
stop_pidfiles() {
  local arg name f pid i left
  local -a pids=() names=()
  for arg in "$@"; do
    name=${arg%%:*}
    f=${arg#*:}
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    rm -f "$f"
    if kill "$pid" 2>/dev/null; then
      pids+=("$pid")
      names+=("$name")
    fi
  done
  [ ${#pids[@]} -gt 0 ] || return 0
  for i in $(seq 1 50); do
    left=0
    for pid in "${pids[@]}"; do if alive "$pid"; then left=1; fi; done
    [ "$left" = 1 ] || break
    sleep 0.1
  done
  for i in "${!pids[@]}"; do
    if alive "${pids[$i]}"; then kill -9 "${pids[$i]}" 2>/dev/null || true; fi
    log "stopped ${names[$i]} (pid ${pids[$i]})"
  done
}

cmd_stop() {
  [ $# -ge 1 ] || die "usage: witnesses.sh stop DIR"
  local dir=$1
  if [ -f "$dir/watch.pid" ]; then
    kill "$(cat "$dir/watch.pid")" 2>/dev/null || true
    rm -f "$dir/watch.pid"
  fi
  stop_pidfiles "omniwitness:$dir/omniwitness/omniwitness.pid" \
    "litewitness:$dir/litewitness/litewitness.pid" \
    "litewitness's ssh-agent:$dir/litewitness/ssh-agent.pid"
  rm -f "$dir/litewitness/agent.sock"
}

case "${1:-}" in
  install) shift; cmd_install "$@" ;;
  start) shift; cmd_start "$@" ;;
  stop) shift; cmd_stop "$@" ;;
  path) shift; cmd_path "$@" ;;
  *) sed -n '2,30p' "$0" >&2; exit 2 ;;
esac
