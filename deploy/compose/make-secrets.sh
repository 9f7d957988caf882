#!/bin/sh
# Creates deploy/compose/secrets/{admin-token,key-passphrase} and the tile store's S3 key
# (tiles-s3-access-key, tiles-s3-secret-key, and tiles-s3.json, SeaweedFS's identities with
# the same key) with random values, once (or in $DGSP_SECRETS_DIR, which the compose files
# read too).
# Existing files are kept: the key passphrase unlocks the manager key in the registry volume,
# and losing it loses the group. Back both files up somewhere safe.
#
# The registry's HTTPS (docs/deploy.md, "TLS"), with openssl: a private CA made here
# (tls-ca.pem, which dgsp-manager, the gateways and the healthcheck trust; its key tls-ca.key
# stays on the host, root's, and is never mounted) and the registry's certificate and key
# (tls-registry.pem, tls-registry.key) for localhost, registry and 127.0.0.1, valid 825
# days. Kept when present, like the rest. To renew the registry's certificate (same CA, new
# key): DGSP_RENEW_TLS=1 ./make-secrets.sh writes the new pair over the old files in place
# (compose's bind mounts keep pointing at them), then `docker compose kill -s HUP registry`
# makes the running registry serve it, without a restart.
#
# dgsp refuses a secret file that its group or other users can read, and compose bind-mounts
# secret files with the owner and mode they have on the host. The containers run as uid
# 10001, so each file must end up owned by 10001 with mode 0400 (inside the 0700 secrets/
# directory); tiles-s3.json is read by SeaweedFS, which runs as uid 1000. That takes root: run this script with sudo, or run the commands it prints.
# Afterwards the host user reads the files with sudo (e.g. sudo cat secrets/admin-token).
set -eu
cd "$(dirname "$0")"
umask 077
uid=10001
seaweedfs_uid=1000   # the `seaweed` user of the chrislusf/seaweedfs image
dir="${DGSP_SECRETS_DIR:-secrets}"
mkdir -p "$dir"
chmod 0700 "$dir"
random() { head -c "$1" /dev/urandom | base64 | tr -d '/+=\n' | cut -c "1-$2" | tr -d '\n'; }
for name in admin-token key-passphrase tiles-s3-access-key tiles-s3-secret-key; do
  f="$dir/$name"
  if [ -s "$f" ]; then
    echo "kept    $f"
  else
    case "$name" in
      tiles-s3-access-key) random 32 20 >"$f" ;;
      *) random 32 43 >"$f" ;;
    esac
    echo "created $f"
  fi
done
# SeaweedFS's S3 identities (its -s3.config): the registry's key may create, read, write and
# list the one bucket (tiles, snapshot bundles, and its journal and lease under private/);
# anyone may read the public objects: checkpoint, tile/..., snapshot/... (never private/).
# Written again whenever it is missing, from the key files above. With
# DGSP_TILES_S3_PREFIX, the public paths are under it.
bucket="${DGSP_TILES_S3_BUCKET:-dgsp-tiles}"
pub="$bucket/${DGSP_TILES_S3_PREFIX:+${DGSP_TILES_S3_PREFIX%/}/}"
f="$dir/tiles-s3.json"
if [ -s "$f" ]; then
  echo "kept    $f"
else
  printf '{"identities":[{"name":"dgsp-registry","credentials":[{"accessKey":"%s","secretKey":"%s"}],"actions":["Admin:%s","Read:%s","Write:%s","List:%s"]},{"name":"anonymous","actions":["Read:%scheckpoint*","Read:%stile/*","Read:%ssnapshot/*"]}]}\n' \
    "$(cat "$dir/tiles-s3-access-key")" "$(cat "$dir/tiles-s3-secret-key")" \
    "$bucket" "$bucket" "$bucket" "$bucket" "$pub" "$pub" "$pub" >"$f"
  echo "created $f (bucket $bucket, public reads of ${pub}{checkpoint,tile/,snapshot/})"
fi
# The registry's TLS: the CA once, then the registry's certificate (again with
# DGSP_RENEW_TLS=1, over the old files in place).
command -v openssl >/dev/null || { echo "openssl is needed to make the registry's TLS certificate" >&2; exit 1; }
ca="$dir/tls-ca.pem" ca_key="$dir/tls-ca.key" cert="$dir/tls-registry.pem" key="$dir/tls-registry.key"
if [ -s "$ca" ] && [ -s "$ca_key" ]; then
  echo "kept    $ca"
else
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
    -subj "/CN=dgsp compose private CA" -keyout "$ca_key" -out "$ca" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    2>/dev/null
  rm -f "$cert" "$key"   # issued by another CA: made again below
  echo "created $ca (and its key $ca_key: keep it, it renews the registry's certificate)"
fi
if [ -s "$cert" ] && [ -s "$key" ] && [ "${DGSP_RENEW_TLS:-0}" != 1 ]; then
  echo "kept    $cert"
else
  tmp=$(mktemp -d)
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -subj "/CN=dgsp registry" -keyout "$tmp/key" -out "$tmp/csr" 2>/dev/null
  printf '%s\n' "subjectAltName=DNS:localhost,DNS:registry,IP:127.0.0.1" \
    "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" \
    "extendedKeyUsage=serverAuth" >"$tmp/ext"
  openssl x509 -req -in "$tmp/csr" -CA "$ca" -CAkey "$ca_key" -days 825 -sha256 \
    -set_serial "0x$(openssl rand -hex 16)" -extfile "$tmp/ext" -out "$tmp/cert" 2>/dev/null
  # In place (same inodes): a running container's bind mounts see the new contents.
  cat "$tmp/cert" >"$cert"
  cat "$tmp/key" >"$key"
  rm -rf "$tmp"
  echo "created $cert (valid 825 days; send SIGHUP to a running registry: docker compose kill -s HUP registry)"
fi
chmod 0400 "$ca_key"
chmod 0444 "$ca" "$cert"   # public: every container may read them
fix=""
for name in admin-token key-passphrase tiles-s3-access-key tiles-s3-secret-key tiles-s3.json tls-registry.key; do
  f="$dir/$name"
  owner=$uid
  [ "$name" = tiles-s3.json ] && owner=$seaweedfs_uid
  if [ "$(stat -c '%u %a' "$f")" != "$owner 400" ]; then
    if [ "$(id -u)" = 0 ]; then
      chown "$owner:$owner" "$f"
      chmod 0400 "$f"
    else
      fix="$fix
  sudo chown $owner:$owner $f && sudo chmod 0400 $f"
    fi
  fi
done
if [ -n "$fix" ]; then
  echo "the containers (uid $uid; SeaweedFS uid $seaweedfs_uid) must own these files, mode 0400 (dgsp refuses secrets others can read); run:$fix"
  exit 1
fi
echo "$dir/ ready: owned by uid $uid (tiles-s3.json: $seaweedfs_uid), mode 0400"
