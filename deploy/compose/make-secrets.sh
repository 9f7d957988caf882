#!/bin/sh
# Creates deploy/compose/secrets/{admin-token,key-passphrase} with random values, once
# (or in $DGSP_SECRETS_DIR, which the compose files read too).
# Existing files are kept: the key passphrase unlocks the manager key in the registry volume,
# and losing it loses the group. Back both files up somewhere safe.
#
# dgsp refuses a secret file that its group or other users can read, and compose bind-mounts
# secret files with the owner and mode they have on the host. The containers run as uid
# 10001, so each file must end up owned by 10001 with mode 0400 (inside the 0700 secrets/
# directory). That takes root: run this script with sudo, or run the commands it prints.
# Afterwards the host user reads the files with sudo (e.g. sudo cat secrets/admin-token).
set -eu
cd "$(dirname "$0")"
umask 077
uid=10001
dir="${DGSP_SECRETS_DIR:-secrets}"
mkdir -p "$dir"
chmod 0700 "$dir"
for name in admin-token key-passphrase; do
  f="$dir/$name"
  if [ -s "$f" ]; then
    echo "kept    $f"
  else
    head -c 32 /dev/urandom | base64 | tr -d '/+=\n' >"$f"
    echo "created $f"
  fi
done
fix=""
for name in admin-token key-passphrase; do
  f="$dir/$name"
  if [ "$(stat -c '%u %a' "$f")" != "$uid 400" ]; then
    if [ "$(id -u)" = 0 ]; then
      chown "$uid:$uid" "$f"
      chmod 0400 "$f"
    else
      fix="$fix $f"
    fi
  fi
done
if [ -n "$fix" ]; then
  echo "the containers (uid $uid) must own these files, mode 0400 (dgsp refuses secrets others can read); run:"
  echo "  sudo chown $uid:$uid$fix && sudo chmod 0400$fix"
  exit 1
fi
echo "$dir/ ready: owned by uid $uid, mode 0400"
