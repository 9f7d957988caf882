#!/usr/bin/env bash
# Measures what the log costs as C2SP tlog-tiles, for docs/deploy.md ("Serving the tile
# store, and a CDN in front of it"): a registry on loopback publishing to a directory
# (--tiles-dir), a demo group's life through dgsp-manager (joins, certificate issuances,
# signatures opened, revocations), then
#   - bytes per entry, by entry kind, as stored in the entry bundles (uint16 length + bytes);
#   - the directory by file kind (full and partial bundles, full and partial hash tiles);
#   - a new replica's catch-up: the requests an independent C2SP client (interop/tlogclient,
#     filippo.io/torchwood) makes to read every entry, counted at a static HTTP server, beside
#     what the layout predicts;
#   - the Cache-Control the registry's own /v1/log/ sends (checkpoint, a bundle, a hash tile,
#     a snapshot bundle).
#
#   ./scripts/tiles-measure.sh                 # 1000 joins, 20 members with 4 certificates,
#                                              # 10 openings, 10 revocations (~3 min, 2 cores)
#   DGSP_MEASURE_JOINS=5000 ./scripts/tiles-measure.sh
#   DGSP_MEASURE_IDLE_SECS=60                  # then idle this long (what idling costs)
#   DGSP_MEASURE_KEEP=1 ...                    # keep the work directory
#
# Uses the binaries of the shared dev build (built if missing) and the Go client of
# scripts/go-interop.sh (built if missing). Nothing leaves loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
use_shared_target_dir >/dev/null

JOINS=${DGSP_MEASURE_JOINS:-1000}
CERTIFIED=${DGSP_MEASURE_CERTIFIED:-20}
CERTS_EACH=${DGSP_MEASURE_CERTS_EACH:-4}
OPENED=${DGSP_MEASURE_OPENED:-10}
REVOKED=${DGSP_MEASURE_REVOKED:-10}
PORT=${DGSP_MEASURE_PORT:-17950}
IDLE=${DGSP_MEASURE_IDLE_SECS:-60}
INTERVAL=${DGSP_CHECKPOINT_INTERVAL_SECS:-15}
export DGSP_CHECKPOINT_INTERVAL_SECS=$INTERVAL
HTTP_PORT=$((PORT + 1))

BIN="$CARGO_TARGET_DIR/debug"
if [ ! -x "$BIN/dgsp-registry" ] || [ ! -x "$BIN/dgsp-manager" ]; then
  cargo build -p dgsp-registry --bin dgsp-registry -p dgsp-manager --bin dgsp-manager
fi
REGISTRY="$BIN/dgsp-registry" MANAGER="$BIN/dgsp-manager"
TLOGCLIENT=$(./scripts/go-interop.sh build | tail -1)

WORK=$(mktemp -d /tmp/dgsp-tiles-measure.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ "${DGSP_MEASURE_KEEP:-0}" = 1 ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
umask 077
export DGSP_KEY_PASSPHRASE=measure-passphrase-not-a-secret
export DGSP_ADMIN_TOKEN=measure-admin-token-not-a-secret
export DGSP_REGISTRY_URL=http://127.0.0.1:$PORT
TILES="$WORK/tiles"

say "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(date -u +%FT%TZ)"
say "registry on 127.0.0.1:$PORT, --tiles-dir $TILES"
"$REGISTRY" init --data "$WORK/data" >"$WORK/init.log" 2>&1
"$REGISTRY" serve --data "$WORK/data" --listen "127.0.0.1:$PORT" --tiles-dir "$TILES" \
  >"$WORK/registry.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 120); do curl -fs -o /dev/null "$DGSP_REGISTRY_URL/readyz" && break; sleep 0.5; done
curl -fs -o /dev/null "$DGSP_REGISTRY_URL/readyz" || { tail "$WORK/registry.log"; exit 1; }

say "joins: $JOINS members"
seq -f 'member%06g' 1 "$JOINS" >"$WORK/names"
"$MANAGER" operator join --file "$WORK/names" --out "$WORK/joins" >/dev/null

say "issuances: $CERTIFIED members x $CERTS_EACH certificates; $OPENED openings; $REVOKED revocations"
echo "a message signed for the tiles measurement" >"$WORK/msg"
for i in $(seq 1 "$CERTIFIED"); do
  u=$(printf 'member%06d' "$i")
  export DGSP_WALLET="$WORK/$u.wallet" DGSP_WALLET_PASSPHRASE_FILE="$WORK/wallet-pass"
  [ -f "$DGSP_WALLET_PASSPHRASE_FILE" ] || echo "wallet-passphrase-not-a-secret" >"$DGSP_WALLET_PASSPHRASE_FILE"
  "$MANAGER" member keygen --join "$WORK/joins/$u.join.json" >/dev/null
  "$MANAGER" member csr --count "$CERTS_EACH" --out "$WORK/$u.csr.json" >/dev/null
  "$MANAGER" operator issue "$WORK/$u.csr.json" --out "$WORK/$u.certs.json" >/dev/null
  "$MANAGER" member import "$WORK/$u.certs.json" >/dev/null
  if [ "$i" -le "$OPENED" ]; then
    "$MANAGER" member sign "$WORK/msg" --out "$WORK/$u.sig" >/dev/null
    "$MANAGER" operator open --message "$WORK/msg" --signature "$WORK/$u.sig" >/dev/null
  fi
  if [ "$i" -le "$REVOKED" ]; then
    "$MANAGER" operator revoke --username "$u" --yes >/dev/null
  fi
done

say "waiting for the mirror to publish the head"
size_of() { sed -n 2p "$1" 2>/dev/null; }
for _ in $(seq 120); do
  head=$(curl -fs "$DGSP_REGISTRY_URL/v1/log/checkpoint" | sed -n 2p)
  [ -n "$head" ] && [ "$(size_of "$TILES/checkpoint")" = "$head" ] \
    && [ "$(curl -fs "$DGSP_REGISTRY_URL/v1/log/checkpoint" | sed -n 2p)" = "$head" ] && break
  sleep 1
done
N_BUSY=$(size_of "$TILES/checkpoint"); B_BUSY=$(du -sb "$TILES" | cut -f1)
echo "  checkpoint size $N_BUSY, directory $B_BUSY bytes (du -sb)"
say "idle for ${IDLE}s (no writes; the registry signs a checkpoint at least every ${INTERVAL}s)"
sleep "$IDLE"
N_IDLE=$(size_of "$TILES/checkpoint"); B_IDLE=$(du -sb "$TILES" | cut -f1)
echo "  after ${IDLE}s idle: checkpoint size $N_IDLE (+$((N_IDLE - N_BUSY)) entries), directory $B_IDLE bytes (+$((B_IDLE - B_BUSY)))"
# Stop writing (the registry would keep signing checkpoints and snapshots): measure a still tree.
kill "${PIDS[0]}"; wait "${PIDS[0]}" 2>/dev/null || true; PIDS=()
N=$(size_of "$TILES/checkpoint")
echo "  checkpoint size $N"

say "Cache-Control of the registry's own /v1/log/ (restarted read-only view: same data)"
"$REGISTRY" serve --data "$WORK/data" --listen "127.0.0.1:$PORT" >"$WORK/registry2.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 120); do curl -fs -o /dev/null "$DGSP_REGISTRY_URL/readyz" && break; sleep 0.5; done
snap=$(sed -n 's/^snapshot \([0-9]*\) .*/\1/p' "$TILES/checkpoint")
for p in checkpoint tile/entries/000 tile/0/000 ${snap:+snapshot/$(printf '%03d' "$snap")}; do
  printf '  /v1/log/%-18s %s\n' "$p" "$(curl -fsS -o /dev/null -D - "$DGSP_REGISTRY_URL/v1/log/$p" \
    | tr -d '\r' | sed -n 's/^[Cc]ache-[Cc]ontrol: //p')"
done
kill "${PIDS[0]}"; wait "${PIDS[0]}" 2>/dev/null || true; PIDS=()

say "the published directory"
python3 - "$TILES" "$N" <<'PY'
import json, os, struct, sys
root, n = sys.argv[1], int(sys.argv[2])
kinds, files = {}, {}
def add(d, k, b):
    c = d.setdefault(k, [0, 0]); c[0] += 1; c[1] += b
for dp, _, fns in os.walk(root):
    for f in fns:
        p = os.path.join(dp, f); rel = os.path.relpath(p, root); b = os.path.getsize(p)
        if f.startswith("."): add(files, "dot files (lock)", b); continue
        if rel == "checkpoint": add(files, "checkpoint", b); continue
        if rel.startswith("snapshot/"): add(files, "snapshot bundle", b); continue
        part = ".p/" in rel
        kind = ("entry bundle" if rel.startswith("tile/entries/") else "hash tile L" + rel.split("/")[1])
        add(files, kind + (" partial" if part else " full"), b)
        if rel.startswith("tile/entries/") and not part:
            data = open(p, "rb").read(); i = 0
            while i < len(data):
                (ln,) = struct.unpack(">H", data[i:i+2]); e = json.loads(data[i+2:i+2+ln]); i += 2 + ln
                add(kinds, e["kind"], 2 + ln)
# the last partial bundle holds the entries after the last full one
full = n // 256
if n % 256:
    last = [x for x in os.listdir(os.path.join(root, "tile/entries")) if x.endswith(".p")]
    p = os.path.join(root, "tile/entries", "%03d.p" % full, str(n % 256)) if full < 1000 else None
    data = open(p, "rb").read(); i = 0
    while i < len(data):
        (ln,) = struct.unpack(">H", data[i:i+2]); e = json.loads(data[i+2:i+2+ln]); i += 2 + ln
        add(kinds, e["kind"], 2 + ln)
tot = sum(v[0] for v in kinds.values())
print(f"  entries in bundles: {tot} (checkpoint size {n})")
print("  %-22s %8s %12s %10s" % ("entry kind", "entries", "bytes", "bytes/entry"))
for k, (c, b) in sorted(kinds.items(), key=lambda kv: -kv[1][1]):
    print("  %-22s %8d %12d %10.0f" % (k, c, b, b / c))
eb = sum(v[1] for v in kinds.values())
print("  %-22s %8d %12d %10.0f" % ("all", tot, eb, eb / tot))
print()
print("  %-26s %6s %12s" % ("file kind", "files", "bytes"))
for k, (c, b) in sorted(files.items()):
    print("  %-26s %6d %12d" % (k, c, b))
allb = sum(v[1] for v in files.values())
print("  %-26s %6d %12d  (%.0f bytes per entry, everything; hash tiles alone %.1f)" % (
    "all", sum(v[0] for v in files.values()), allb, allb / n,
    sum(v[1] for k, v in files.items() if k.startswith("hash")) / n))
PY
echo "  du -sb: $(du -sb "$TILES" | cut -f1) bytes; du -sk (4 KiB blocks on this file system): $(du -sk "$TILES" | cut -f1) KiB"

say "a new replica catching up $N entries: an independent C2SP client (torchwood) reads them all"
# Predicted: 1 checkpoint + ceil(N/256) bundles (full ones, the last partial) + the level-0
# hash tiles ceil(N/256) + level-1 ceil(N/65536) ... (the client authenticates each bundle
# against the level-0 tile and every tile against its parent, up to the checkpoint's root).
python3 -c "
import math, sys
n = int(sys.argv[1]); b = math.ceil(n / 256); h = 0; L = 0
while n // 256**L >= 1:
    h += math.ceil((n // 256**L) / 256); L += 1
print(f'  predicted: 1 checkpoint + {b} bundles + {h} hash tiles (levels 0..{L-1}) = {1 + b + h} requests')" "$N"
# Appended (O_APPEND), so that truncating it below restarts it at offset 0.
python3 -u - "$TILES" "$HTTP_PORT" >>"$WORK/http.log" 2>&1 <<'PY' &
import functools, http.server, sys
class H(http.server.SimpleHTTPRequestHandler):
    def log_message(self, fmt, *a): sys.stderr.write("GET %s %s\n" % (self.path, a[1] if len(a) > 1 else ""))
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])),
    functools.partial(H, directory=sys.argv[1])).serve_forever()
PY
PIDS+=($!)
for _ in $(seq 50); do curl -fs -o /dev/null "http://127.0.0.1:$HTTP_PORT/checkpoint" && break; sleep 0.1; done
: >"$WORK/http.log"
"$TLOGCLIENT" client --url "http://127.0.0.1:$HTTP_PORT" --all >"$WORK/client.json"
sleep 0.3
python3 - "$WORK/client.json" "$WORK/http.log" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
reqs = [l.split()[1] for l in open(sys.argv[2]) if l.startswith("GET ")]
ck = sum(1 for r in reqs if r == "/checkpoint"); b = sum(1 for r in reqs if r.startswith("/tile/entries/"))
h = len(reqs) - ck - b
print(f"  measured: {len(reqs)} requests ({ck} checkpoint, {b} bundles, {h} hash tiles; distinct paths {len(set(reqs))});"
      f" the client read {c['entries_read']} entries, root_from_entries == root: {c.get('root_from_entries') == c['root']},"
      f" tiles_fetched {c['tiles_fetched']}")
PY
