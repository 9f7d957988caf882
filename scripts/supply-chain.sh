#!/usr/bin/env bash
# Supply-chain checks (docs/dependencies.md):
#  - cargo-deny with deny.toml on the root workspace: licences, banned or wildcard
#    dependencies, sources (crates.io only);
#  - advisories, offline, against the RustSec snapshot in ../shared/rustsec, for every
#    Cargo.lock in the repository (the root workspace, fuzz/, sdk/js, sdk/python,
#    scripts/wasm-smoke), each with its own manifest and the root deny.toml; the run prints
#    the snapshot's commit and date;
#  - npm audit for sdk/js, and PyPI's advisory records for sdk/python's build and test
#    tools; where the registry here cannot answer, the run prints why (no silent skip).
#
#   ./scripts/supply-chain.sh
#
# Installs cargo-deny once (pinned, `cargo install --locked`) into
# ~/.cache/dgsp/tools/cargo-deny-<version> (DGSP_TOOLS_DIR to override), and unpacks the
# RustSec snapshot into ~/.cache/dgsp/rustsec/<archive digest>/ (again when the archive
# changes; DGSP_CACHE_DIR moves ~/.cache/dgsp).
#
# Environment:
#   DGSP_RUSTSEC_DIR=DIR  where the snapshot is (DIR/advisory-db.tar.gz: a shallow Git clone
#                         of github.com/rustsec/advisory-db); default ../shared/rustsec,
#                         beside the clone. Missing: the run fails, naming it.
#   DGSP_ADVISORIES=0     do not check advisories at all (no Cargo, npm or Python
#                         advisory check); the run says that they were switched off.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_rust

# cargo-deny, pinned, built once (scripts/tools.sh, which the test command also runs in the
# background from its start).
deny=$(./scripts/tools.sh cargo-deny)
CACHE="${DGSP_CACHE_DIR:-$HOME/.cache/dgsp}"

say "cargo deny: licences, bans, sources"
"$deny" --version
"$deny" --locked check --hide-inclusion-graph licenses bans sources

if [ "${DGSP_ADVISORIES:-1}" = 0 ]; then
  say "advisories: SWITCHED OFF (DGSP_ADVISORIES=0): no Cargo.lock, npm or Python dependency was checked against any advisory database"
  exit 0
fi

# --- The RustSec snapshot, unpacked where cargo-deny 0.20 looks for its database -------
# For the default database URL cargo-deny opens <db-path>/advisory-db-3157b0e258782691
# (a hash of the URL: re-check it when DENY_VERSION in scripts/tools.sh changes). deny.toml's db-path reads
# DGSP_ADVISORY_DB_ROOT. One directory per archive digest: a new snapshot is unpacked
# beside the old one (renamed into place whole, so a concurrent run never sees half of it).
DB_NAME=advisory-db-3157b0e258782691
snap="${DGSP_RUSTSEC_DIR:-../shared/rustsec}"
archive="$snap/advisory-db.tar.gz"
if [ ! -f "$archive" ]; then
  echo "supply-chain: no RustSec snapshot: $archive is missing." >&2
  echo "  Advisories are checked offline against ../shared/rustsec/advisory-db.tar.gz beside the clone" >&2
  echo "  (DGSP_RUSTSEC_DIR=DIR for another place); DGSP_ADVISORIES=0 switches the check off, and says so." >&2
  exit 1
fi
digest=$(sha256sum "$archive" | cut -c1-16)
db_root="$CACHE/rustsec/$digest"
if [ ! -d "$db_root/$DB_NAME/.git" ]; then
  mkdir -p "$CACHE/rustsec"
  tmp=$(mktemp -d "$CACHE/rustsec/.unpack.XXXXXX")
  tar -xzf "$archive" -C "$tmp"
  [ -d "$tmp/advisory-db/.git" ] || { echo "supply-chain: $archive holds no advisory-db/.git" >&2; rm -rf "$tmp"; exit 1; }
  mv "$tmp/advisory-db" "$tmp/$DB_NAME"
  mv -T "$tmp" "$db_root" 2>/dev/null || rm -rf "$tmp"   # another run got there first
  # Snapshots replaced more than a day ago (a running check may still read a newer one).
  find "$CACHE/rustsec" -mindepth 1 -maxdepth 1 -type d ! -name "$digest" -mmin +1440 \
    -exec rm -rf {} + 2>/dev/null || true
fi
export DGSP_ADVISORY_DB_ROOT="$db_root"
snap_commit=$(git -C "$db_root/$DB_NAME" log -1 --format=%H)
snap_date=$(git -C "$db_root/$DB_NAME" log -1 --format=%cs)
snap_age=$((($(date +%s) - $(git -C "$db_root/$DB_NAME" log -1 --format=%ct)) / 86400))
say "advisories: RustSec snapshot of $snap_date (commit $snap_commit, $snap_age days old, $archive); advisories published after $snap_date are not checked"

failed=()

# --- Every Cargo lock file, offline ----------------------------------------------------
# `--offline` keeps cargo-deny from fetching the database, and also its `cargo metadata`
# from downloading crates: `cargo fetch` first (crates.io is reachable here; the database on
# GitHub is not). The other workspaces use the root deny.toml; its exceptions name
# root-workspace advisories, so "advisory not detected" is only reported for the root.
while IFS= read -r lock; do
  dir=$(dirname "$lock")
  manifest="$dir/Cargo.toml"
  say "cargo deny: advisories, $lock (offline, snapshot of $snap_date)"
  if ! cargo fetch --locked --quiet --manifest-path "$manifest"; then
    failed+=("$lock (cargo fetch --locked failed: is it up to date with its manifests?)")
    continue
  fi
  allow=()
  [ "$dir" = . ] || allow=(-A advisory-not-detected)
  if "$deny" --locked --offline --manifest-path "$manifest" --config deny.toml \
      check --hide-inclusion-graph "${allow[@]}" advisories; then
    echo "  $lock: no advisory (exceptions: deny.toml, docs/dependencies.md)"
  else
    failed+=("$lock")
  fi
done < <(git ls-files '*Cargo.lock')

# --- npm: sdk/js ------------------------------------------------------------------------
# `npm audit` POSTs the lock file's packages to the registry's advisory endpoint. Where the
# registry does not answer it (here: 405, the registry mirror serves GET and HEAD only) the
# run says so; a report with any advisory fails it.
say "npm audit: sdk/js/package-lock.json"
npm_json=$(cd sdk/js && timeout 60 npm audit --package-lock-only --json 2>/dev/null || true)
npm_verdict=$(printf '%s' "$npm_json" | node -e '
  let s = ""; process.stdin.on("data", d => s += d).on("end", () => {
    let j; try { j = JSON.parse(s); } catch { console.log("noanswer no JSON from npm audit"); return; }
    const v = j.metadata && j.metadata.vulnerabilities;
    if (v && typeof v.total === "number") {
      const deps = j.metadata.dependencies ? j.metadata.dependencies.total : "?";
      console.log(v.total === 0 ? `ok ${deps}` : `found ${v.total}`);
    } else {
      console.log(`noanswer ${j.message || (j.error && j.error.summary) || "no report"}`);
    }
  });')
case "$npm_verdict" in
  ok\ *) echo "  sdk/js: npm audit found no advisory (${npm_verdict#ok } packages)" ;;
  found\ *)
    (cd sdk/js && npm audit --package-lock-only) || true
    failed+=("sdk/js/package-lock.json (npm audit: ${npm_verdict#found } advisories)") ;;
  *)
    echo "  sdk/js: NOT checked: the npm registry here does not answer npm audit (${npm_verdict#noanswer })."
    echo "  Its advisory endpoint accepts GET and HEAD only, and OSV and GitHub's advisory database are"
    echo "  unreachable: see docs/dependencies.md (\"npm and Python\"). sdk/js ships no npm dependency;"
    echo "  its two devDependencies (typescript, playwright-core) are pinned in package-lock.json." ;;
esac

# --- Python: sdk/python -----------------------------------------------------------------
# The wheel has no Python dependency (pyproject: dependencies = []); what pip installs for
# it are its build and test tools: build-system.requires, the `test` extra, and mypy
# (sdk/python/test.sh). pip-audit cannot work here (docs/dependencies.md): this does what
# its PyPI service does, with the JSON API that answers here: pip resolves the set (dry
# run), and each package's https://pypi.org/pypi/<name>/json carries the advisories of its
# latest release. A version that is not the latest cannot be looked up here and is listed
# as not audited; a known advisory fails the run.
say "python: sdk/python's build and test tools against PyPI's advisory records"
PY="${PYTHON:-python3}"
pyreport=$(mktemp)
trap 'rm -f "$pyreport"' EXIT
mapfile -t pyreqs < <("$PY" - <<'EOF'
import tomllib
with open("sdk/python/pyproject.toml", "rb") as f:
    p = tomllib.load(f)
reqs = p["build-system"]["requires"] + p["project"].get("dependencies", [])
reqs += p["project"].get("optional-dependencies", {}).get("test", [])
reqs.append("mypy>=1.10")  # sdk/python/test.sh installs it for the type check
print("\n".join(reqs))
EOF
)
echo "  requirements: ${pyreqs[*]}"
pip_dry() { "$PY" -m pip install --dry-run --ignore-installed --quiet --report "$pyreport" "$@"; }
pip_dry "${pyreqs[@]}" 2>/dev/null || pip_dry --break-system-packages "${pyreqs[@]}"
if ! "$PY" - "$pyreport" <<'EOF'
import json, sys, urllib.request
# Advisory ids (PYSEC-/GHSA-/CVE-) accepted on purpose, each with its reason in
# docs/dependencies.md. None today.
EXCEPTIONS = set()
report = json.load(open(sys.argv[1]))
found, unaudited, audited = [], [], 0
for item in report["install"]:
    name, version = item["metadata"]["name"], item["metadata"]["version"]
    url = f"https://pypi.org/pypi/{name}/json"
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            data = json.load(r)
    except Exception as e:
        sys.exit(f"  python: could not read {url}: {e}")
    latest = data["info"]["version"]
    if latest != version:
        unaudited.append(f"{name} {version} (latest {latest})")
        continue
    audited += 1
    for v in data.get("vulnerabilities") or []:
        ids = {v.get("id")} | set(v.get("aliases") or [])
        if v.get("withdrawn") or ids & EXCEPTIONS:
            continue
        found.append(f"{name} {version}: {v.get('id')} {sorted(v.get('aliases') or [])} "
                     f"fixed in {v.get('fixed_in')}: {v.get('link')}")
print(f"  sdk/python: {audited} of {len(report['install'])} packages audited: "
      + ", ".join(f"{i['metadata']['name']} {i['metadata']['version']}" for i in report["install"]))
for u in unaudited:
    print(f"  NOT audited: {u}: PyPI's JSON API here answers only for a project's latest release")
for f in found:
    print(f"  ADVISORY: {f}")
sys.exit(1 if found else 0)
EOF
then
  failed+=("sdk/python build and test tools (PyPI advisories)")
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo "supply-chain: the advisories check failed (RustSec snapshot of $snap_date) for:" >&2
  printf '  %s\n' "${failed[@]}" >&2
  echo "  An advisory: update the dependency, or add an exception by advisory id with its reason" >&2
  echo "  in deny.toml and docs/dependencies.md (\"Advisory exceptions\")." >&2
  exit 1
fi
say "advisories: none outside the documented exceptions (RustSec snapshot of $snap_date)"
