#!/bin/sh
# Creates deploy/compose/secrets/{admin-token,key-passphrase} with random values, once.
# Existing files are kept: the key passphrase unlocks the manager key in the registry volume,
# and losing it loses the group. Back both files up somewhere safe.
set -eu
cd "$(dirname "$0")"
umask 077
mkdir -p secrets
chmod 0700 secrets
for name in admin-token key-passphrase; do
  f="secrets/$name"
  if [ -s "$f" ]; then
    echo "kept    $f"
  else
    head -c 32 /dev/urandom | base64 | tr -d '/+=\n' >"$f"
    echo "created $f"
  fi
  # The containers run as uid 10001 and compose bind-mounts secret files as they are:
  # readable inside, while the 0700 directory keeps other host users out.
  chmod 0644 "$f"
done
