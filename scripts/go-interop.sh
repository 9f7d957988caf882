#!/usr/bin/env bash
# The Go interop program interop/tlogclient (dgsp-tlogclient): RFC 6962 vectors from
# transparency-dev/merkle and x/mod/sumdb/tlog, and an independent C2SP tlog-tiles client
# built on filippo.io/torchwood. See interop/README.md.
#
#   ./scripts/go-interop.sh build   builds the program (only when its sources or the Go
#                                   version changed) and prints the binary's path, alone,
#                                   on stdout
#   ./scripts/go-interop.sh check   go vet, gofmt -l (must be empty) and go test
#
# Needs `go` (1.26) on PATH and the Go module proxy (or a module cache that already holds
# the modules of go.sum). The binary goes to
# ${DGSP_TOOLS_DIR:-$HOME/.cache/dgsp/tools}/bin/dgsp-tlogclient, beside a .stamp file
# holding the SHA-256 of its sources and of `go version`.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=interop/tlogclient
TOOLS="${DGSP_TOOLS_DIR:-$HOME/.cache/dgsp/tools}"
BIN="$TOOLS/bin/dgsp-tlogclient"

need_go() {
  if ! command -v go >/dev/null; then
    echo "go-interop: 'go' not found on PATH: install Go 1.26 (https://go.dev/dl/) and run this again" >&2
    exit 1
  fi
}

# The SHA-256 over the program's sources (tests excluded: they are not in the binary)
# and the Go toolchain's version.
source_key() {
  {
    go version
    (cd "$SRC" && find . -type f \( -name '*.go' ! -name '*_test.go' -o -name go.mod -o -name go.sum \) \
      -print | LC_ALL=C sort | while read -r f; do printf '%s\n' "$f"; sha256sum <"$f"; done)
  } | sha256sum | cut -d' ' -f1
}

build() {
  need_go
  local key
  key=$(source_key)
  if [ -x "$BIN" ] && [ "$(cat "$BIN.stamp" 2>/dev/null)" = "$key" ]; then
    echo "$BIN"
    return
  fi
  echo "go-interop: building $BIN ($(go version | cut -d' ' -f3))" >&2
  mkdir -p "$TOOLS/bin"
  local tmp="$BIN.tmp.$$"
  if ! (cd "$SRC" && go build -trimpath -buildvcs=false -o "$tmp" .) >&2; then
    rm -f "$tmp"
    echo "go-interop: go build of $SRC failed (see above)" >&2
    exit 1
  fi
  # Renamed into place, so concurrent builds (parallel tests) never see half a binary.
  mv -f "$tmp" "$BIN"
  printf '%s\n' "$key" >"$BIN.stamp.tmp.$$" && mv -f "$BIN.stamp.tmp.$$" "$BIN.stamp"
  echo "$BIN"
}

check() {
  need_go
  cd "$SRC"
  echo "go-interop: go vet" >&2
  go vet ./...
  echo "go-interop: gofmt -l" >&2
  local bad
  bad=$(gofmt -l .)
  if [ -n "$bad" ]; then
    echo "go-interop: not gofmt-formatted: $bad" >&2
    exit 1
  fi
  echo "go-interop: go test" >&2
  go test -count=1 ./...
}

case "${1:-}" in
  build) build ;;
  check) check ;;
  *)
    echo "usage: $0 build | check" >&2
    exit 2
    ;;
esac
