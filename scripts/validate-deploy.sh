#!/usr/bin/env bash
# Validates deploy/ without a container engine:
#   ./scripts/validate-deploy.sh
# Installs its tools once, idempotently: kubeconform and deploy/check with Go (from the
# module proxy) into ~/.cache/dgsp/tools (override with DGSP_TOOLS_DIR), the Kubernetes
# schemas from PyPI, and Debian's haproxy, shellcheck, python3-yaml and docker-compose with
# apt; then it works offline. Every check prints what it runs and ends PASS or FAIL: a tool
# that cannot be installed is a FAIL naming it, never a skip. The script exits 1 if any
# check fails. What is deliberately not checked is listed in docs/deploy.md ("What CI
# checks"): hadolint (no build reachable here) and the `docker compose` v2 plugin (not
# packaged for Debian 12; compose-go, which it loads files with, is checked instead).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

TOOLS="${DGSP_TOOLS_DIR:-${DGSP_CACHE_DIR:-$HOME/.cache/dgsp}/tools}"
KUBECONFORM_VERSION=v0.8.0
# Kubernetes JSON schemas come from the kubernetes-validate wheel on PyPI (GitHub, where
# kubeconform fetches them by default, is not reachable from CI); pinned by hash.
KV_VERSION=1.37.0
KV_SHA256=85136d018a27b50ec7fc049d902bfa5193f5976807e6c0f408e3ab6fe078cad9
# Oldest and newest Kubernetes versions the manifests are checked against.
KUBE_VERSIONS="${DGSP_KUBE_VERSIONS:-1.30.0 1.37.0}"

mkdir -p "$TOOLS"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

PASSED=() FAILED=()
pass() { PASSED+=("$1"); printf '    PASS  %s\n' "$1"; }
fail() { FAILED+=("$1"); printf '\033[31m    FAIL  %s\033[0m\n' "$1"; }
# missing NAME WHY: a check whose tool could not be installed fails, saying why.
missing() { fail "$1 (not run: $2)"; }
runs() { printf '    $ %s\n' "$*"; }
# check NAME CMD...: runs CMD, PASS on exit 0, FAIL otherwise (output shown).
check() {
  local name=$1; shift
  runs "$@"
  if "$@" >"$WORK/out" 2>&1; then sed 's/^/      /' "$WORK/out"; pass "$name"
  else sed 's/^/      /' "$WORK/out"; fail "$name"; fi
}

# ---------------------------------------------------------------------------------------
say "tools (cached in $TOOLS; Debian packages with apt)"

# Go is on these machines in /usr/local/go; the Debian packages are installed when missing.
[ -x /usr/local/go/bin/go ] && ! command -v go >/dev/null && export PATH="/usr/local/go/bin:$PATH"
apt_missing=()
for pkg in haproxy shellcheck python3-yaml docker-compose systemd; do
  dpkg -s "$pkg" >/dev/null 2>&1 || apt_missing+=("$pkg")
done
if [ ${#apt_missing[@]} -gt 0 ]; then
  echo "    installing ${apt_missing[*]} (apt)"
  { as_root apt-get update -qq && DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq \
      --no-install-recommends "${apt_missing[@]}"; } >"$WORK/apt.log" 2>&1 \
    || { sed 's/^/      /' "$WORK/apt.log" | tail -5; echo "    apt could not install ${apt_missing[*]}"; }
fi

KUBECONFORM="$TOOLS/kubeconform-$KUBECONFORM_VERSION/kubeconform"
if [ ! -x "$KUBECONFORM" ] && command -v go >/dev/null; then
  echo "    installing kubeconform $KUBECONFORM_VERSION (go install)"
  GOBIN="$(dirname "$KUBECONFORM")" GOFLAGS=-mod=mod \
    go install "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION" \
    || echo "    kubeconform could not be installed"
fi
[ -x "$KUBECONFORM" ] || KUBECONFORM=""

SCHEMAS="$TOOLS/k8s-schemas-kv$KV_VERSION"
have_schemas() { for v in $KUBE_VERSIONS; do [ -d "$SCHEMAS/v$v-local-strict" ] || return 1; done; }
if ! have_schemas && command -v python3 >/dev/null; then
  echo "    fetching Kubernetes schemas (pip download kubernetes-validate==$KV_VERSION)"
  mkdir -p "$TOOLS/wheels"
  wheel="$TOOLS/wheels/kubernetes_validate-$KV_VERSION-py3-none-any.whl"
  [ -f "$wheel" ] || python3 -m pip download --quiet --no-deps --only-binary :all: \
    -d "$TOOLS/wheels" "kubernetes-validate==$KV_VERSION" || true
  if [ -f "$wheel" ] && echo "$KV_SHA256  $wheel" | sha256sum -c --quiet; then
    # The wheel's "local" schemas point at "/api/_definitions.json"; kubeconform resolves
    # references as URLs, so they are rewritten to the extracted file's file:// URL.
    python3 - "$wheel" "$SCHEMAS" "$KUBE_VERSIONS" <<'PY' || echo "    could not extract the schemas"
import os, shutil, sys, zipfile
wheel, out, versions = sys.argv[1], sys.argv[2], sys.argv[3].split()
z = zipfile.ZipFile(wheel)
for v in versions:
    prefix = f"kubernetes_validate/kubernetes-json-schema/v{v}-local-strict/"
    names = [n for n in z.namelist() if n.startswith(prefix) and n.endswith(".json")]
    if not names:
        sys.exit(f"no schemas for Kubernetes {v} in {wheel}")
    d = os.path.join(out, f"v{v}-local-strict")
    part = d + ".part"  # renamed when complete: an interrupted run leaves no half directory
    shutil.rmtree(part, ignore_errors=True)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(part)
    defs = ("file://" + os.path.abspath(d) + "/_definitions.json#").encode()
    for n in names:
        data = z.read(n).replace(b'"/api/_definitions.json#', b'"' + defs)
        with open(os.path.join(part, os.path.basename(n)), "wb") as f:
            f.write(data)
    os.rename(part, d)
PY
  else
    echo "    kubernetes-validate $KV_VERSION unavailable or its hash does not match"
    rm -f "$wheel"
  fi
fi
have_schemas || SCHEMAS=""

# deploy/check: compose-go (what `docker compose` loads files with), BuildKit's Dockerfile
# parser and linter, and kustomize's API, in one small Go program built once per source hash.
CHECK=""
if command -v go >/dev/null; then
  hash=$(cat deploy/check/go.mod deploy/check/go.sum deploy/check/main.go | sha256sum | cut -c1-16)
  CHECK="$TOOLS/deploy-check-$hash/dgsp-deploy-check"
  if [ ! -x "$CHECK" ]; then
    echo "    building deploy/check (go build)"
    (cd deploy/check && go build -buildvcs=false -o "$CHECK" .) || CHECK=""
  fi
fi

# ---------------------------------------------------------------------------------------
say "Kubernetes manifests (deploy/k8s)"

if [ -n "$CHECK" ]; then
  runs "dgsp-deploy-check kustomize deploy/k8s > built.yaml"
  if "$CHECK" kustomize deploy/k8s >"$WORK/k8s-built.yaml" 2>"$WORK/err"; then
    echo "      $(grep -c '^kind:' "$WORK/k8s-built.yaml") objects"
    pass "kustomize build deploy/k8s"
  else
    sed 's/^/      /' "$WORK/err"; fail "kustomize build deploy/k8s"
  fi
else
  missing "kustomize build deploy/k8s" "deploy/check could not be built with go"
fi

runs "every manifest in deploy/k8s is listed in kustomization.yaml or named *.example.yaml"
unlisted=""
for f in deploy/k8s/*.yaml; do
  b=$(basename "$f")
  case "$b" in kustomization.yaml|*.example.yaml) continue ;; esac
  grep -qE "^  - $b\$" deploy/k8s/kustomization.yaml || unlisted+=" $b"
done
if [ -z "$unlisted" ]; then pass "kustomization lists every manifest"
else echo "      not listed:$unlisted"; fail "kustomization lists every manifest"; fi

if [ -n "$KUBECONFORM" ] && [ -n "$SCHEMAS" ]; then
  files=()
  for f in deploy/k8s/*.yaml; do [ "$(basename "$f")" = kustomization.yaml ] || files+=("$f"); done
  [ -f "$WORK/k8s-built.yaml" ] && files+=("$WORK/k8s-built.yaml")
  for v in $KUBE_VERSIONS; do
    check "kubeconform -strict (Kubernetes $v)" "$KUBECONFORM" -strict -summary \
      -kubernetes-version "$v" \
      -schema-location "$SCHEMAS/{{ .NormalizedKubernetesVersion }}-local{{ .StrictSuffix }}/{{ .ResourceKind }}{{ .KindSuffix }}.json" \
      "${files[@]}"
  done
else
  missing "kubeconform" "kubeconform (go install) or the schemas (PyPI) could not be installed"
fi

if [ -f "$WORK/k8s-built.yaml" ] && python3 -c 'import yaml' 2>/dev/null; then
  check "deployment invariants (probes, non-root, admin API not exposed, the registry publishes to the tile store's Service)" \
    python3 deploy/check/invariants.py k8s "$WORK/k8s-built.yaml" deploy/k8s/operator-pod.example.yaml
else
  missing "Kubernetes invariants" "no built manifests or no python3 yaml module (python3-yaml)"
fi
if python3 -c 'import yaml' 2>/dev/null; then
  # The tile store's S3 identities: the Secret template, and what make-secrets.sh writes
  # (into a scratch directory; as root it also chowns them there).
  mkdir -p "$WORK/secrets"
  if DGSP_SECRETS_DIR="$WORK/secrets" deploy/compose/make-secrets.sh >"$WORK/out" 2>&1 \
     || [ -s "$WORK/secrets/tiles-s3.json" ]; then
    check "tile store S3 identities (registry key limited to its bucket; anonymous reads only checkpoint, tile/, snapshot/; never private/)" \
      python3 deploy/check/invariants.py tiles-s3 deploy/k8s/tiles-secrets.example.yaml "$WORK/secrets/tiles-s3.json"
  else
    sed 's/^/      /' "$WORK/out"; fail "make-secrets.sh in a scratch directory"
  fi
else
  missing "tile store S3 identities" "python3 yaml module unavailable (python3-yaml)"
fi

# ---------------------------------------------------------------------------------------
say "compose (deploy/compose/compose.yaml, compose.host.yaml)"

for f in compose.yaml compose.host.yaml; do
  if [ -n "$CHECK" ]; then
    check "compose-go load of $f (compose-spec schema, interpolation, references)" \
      "$CHECK" compose "deploy/compose/$f"
  else
    missing "compose-go load of $f" "deploy/check could not be built with go"
  fi
done
if python3 -c 'import yaml' 2>/dev/null; then
  check "compose invariants (registry and tile store on loopback only, feed and tiles networks internal, the registry's tile flags name the tiles service)" \
    python3 deploy/check/invariants.py compose deploy/compose/compose.yaml
  check "host-network compose invariants (host networking, everything but HAProxy on loopback, the registry's tile flags name the tiles service)" \
    python3 deploy/check/invariants.py compose-host deploy/compose/compose.host.yaml
else
  missing "compose invariants" "python3 yaml module unavailable (python3-yaml)"
fi
if command -v docker-compose >/dev/null; then
  # Debian 12's docker-compose 1.29 (what scripts/container-stack.sh runs the stack with).
  check "docker-compose 1.29 config (compose.host.yaml)" \
    docker-compose -f deploy/compose/compose.host.yaml config --quiet
else
  missing "docker-compose config" "docker-compose (apt) could not be installed"
fi
if command -v haproxy >/dev/null; then
  check "haproxy -c" haproxy -c -f deploy/compose/haproxy.cfg
  check "haproxy -c (host)" env DGSP_LB_BIND=127.0.0.1 DGSP_LB_PORT=8080 DGSP_GATEWAY_A_PORT=7401 \
    DGSP_GATEWAY_B_PORT=7402 haproxy -c -f deploy/compose/haproxy.host.cfg
else
  missing "haproxy -c (deploy/compose/haproxy*.cfg)" "haproxy (apt) could not be installed"
fi

# ---------------------------------------------------------------------------------------
say "Dockerfile (deploy/Dockerfile)"

if [ -n "$CHECK" ]; then
  check "BuildKit parser and lint rules" "$CHECK" dockerfile deploy/Dockerfile
else
  missing "BuildKit parser" "deploy/check could not be built with go"
fi
runs "every COPY source of deploy/Dockerfile exists and passes Dockerfile.dockerignore"
missing=""
while read -r src; do
  # deploy/prebuilt/ is made by scripts/container-stack.sh for the `prebuilt` stage only.
  case "$src" in deploy/prebuilt/*) continue ;; esac
  [ -e "$src" ] || missing+=" $src"
  grep -qxF "!${src%/}" deploy/Dockerfile.dockerignore \
    || grep -qxF "!${src%/}/" deploy/Dockerfile.dockerignore || missing+=" $src(ignored)"
done < <(awk '/^COPY / && !/--from=/ { for (i = 2; i < NF; i++) if ($i !~ /^--/) print $i }' deploy/Dockerfile)
if [ -z "$missing" ]; then pass "COPY sources present in the build context"
else echo "      missing:$missing"; fail "COPY sources present in the build context"; fi
# cargo refuses a workspace with a member missing, even to build other packages: the
# source build copies every member that Cargo.toml lists.
runs "every workspace member (Cargo.toml members) is a COPY source of deploy/Dockerfile"
missing=""
for m in $(python3 -c 'import tomllib; print(" ".join(tomllib.load(open("Cargo.toml", "rb"))["workspace"]["members"]))' 2>/dev/null \
           || sed -n 's/^members = \[\(.*\)\]/\1/p' Cargo.toml | tr -d '",'); do
  # the member itself or a directory above it (comparison/signer is in comparison)
  found=""; d=$m
  while [ -n "$d" ]; do
    grep -qE "^COPY $d $d\$" deploy/Dockerfile && { found=1; break; }
    case "$d" in */*) d=${d%/*} ;; *) d="" ;; esac
  done
  [ -n "$found" ] || missing+=" $m"
done
if [ -z "$missing" ]; then pass "the source build copies every workspace member"
else echo "      not copied:$missing"; fail "the source build copies every workspace member"; fi

# ---------------------------------------------------------------------------------------
say "scripts"
for s in deploy/docker/dgsp-registry-init deploy/docker/dgsp-tiles deploy/compose/make-secrets.sh; do
  check "sh -n $s" sh -n "$s"
done
if command -v shellcheck >/dev/null; then
  check "shellcheck" shellcheck deploy/docker/dgsp-registry-init deploy/docker/dgsp-tiles deploy/compose/make-secrets.sh
else
  missing "shellcheck" "shellcheck (apt) could not be installed"
fi

# ---------------------------------------------------------------------------------------
say "systemd units (deploy/systemd)"

if command -v systemd-analyze >/dev/null; then
  # verify wants every ExecStart binary to exist: check copies whose /usr/local/bin paths
  # point at stand-ins in a temporary directory, and an instance of the gateway template.
  units="$WORK/units"; fake="$WORK/bin"
  mkdir -p "$units" "$fake"
  for b in dgsp-registry dgsp-gateway dgsp-registry-init; do
    printf '#!/bin/sh\nexit 0\n' >"$fake/$b"; chmod +x "$fake/$b"
  done
  sed "s#/usr/local/bin/#$fake/#g" deploy/systemd/dgsp-registry.service >"$units/dgsp-registry.service"
  sed "s#/usr/local/bin/#$fake/#g" deploy/systemd/dgsp-gateway@.service >"$units/dgsp-gateway@.service"
  cp "$units/dgsp-gateway@.service" "$units/dgsp-gateway@a.service"
  runs "systemd-analyze verify dgsp-registry.service dgsp-gateway@a.service"
  if (cd "$units" && SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no \
        "$units/dgsp-registry.service" "$units/dgsp-gateway@a.service") >"$WORK/out" 2>&1 \
     && ! grep -v -e 'Failed to connect to bus' -e '^$' "$WORK/out" | grep -q .; then
    pass "systemd-analyze verify"
  else
    sed 's/^/      /' "$WORK/out"; fail "systemd-analyze verify"
  fi
  if systemd-analyze security --help 2>/dev/null | grep -q -- '--offline'; then
    runs "systemd-analyze security --offline=yes --threshold=30 (exposure score <= 3.0)"
    if (cd "$units" && systemd-analyze security --offline=yes --threshold=30 --no-pager \
          "$units/dgsp-registry.service" "$units/dgsp-gateway@a.service") >"$WORK/out" 2>&1; then
      grep -E 'Overall exposure' "$WORK/out" | sed 's/^/      /'; pass "systemd-analyze security"
    else
      tail -5 "$WORK/out" | sed 's/^/      /'; fail "systemd-analyze security"
    fi
  else
    missing "systemd-analyze security" "this systemd-analyze has no --offline (systemd 250 or later needed)"
  fi
else
  missing "systemd-analyze verify" "systemd-analyze (apt: systemd) could not be installed"
fi

# ---------------------------------------------------------------------------------------
echo
say "summary: ${#PASSED[@]} passed, ${#FAILED[@]} failed (not checked, by design: hadolint and the docker compose v2 plugin; docs/deploy.md)"
for f in "${FAILED[@]}"; do printf '\033[31m    failed: %s\033[0m\n' "$f"; done
[ ${#FAILED[@]} -eq 0 ]
