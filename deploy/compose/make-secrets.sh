#!/bin/sh
# Creates deploy/compose/secrets/{admin-token,key-passphrase} and the tile store's S3 key
# (tiles-s3-access-key, tiles-s3-secret-key, and tiles-s3.json, SeaweedFS's identities with
# the same key) with random values, once (or in $DGSP_SECRETS_DIR, which the compose files
# read too).
# Existing files are kept: the key passphrase unlocks the manager key in the registry volume,
# and losing it loses the group. Back both files up somewhere safe.
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
fix=""
for name in admin-token key-passphrase tiles-s3-access-key tiles-s3-secret-key tiles-s3.json; do
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
