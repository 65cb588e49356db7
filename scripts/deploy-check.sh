#!/usr/bin/env bash
# The deploy check `make test` runs, needing no account: what was tested would deploy.
#  1. `make deploy`'s dry mode bundles the release build (`wrangler deploy --dry-run`).
#  2. The bundle stays under 1 MiB gzipped.
#  3. Every binding the code names (the one list in crates/core/src/config.rs; no binding is
#     named anywhere else) is declared in wrangler.toml, except the optional ones.
#  4. Every Durable Object class in the code is bound and has a migration, and the reverse.
#  5. The D1 migrations apply to a fresh database, and on top of every earlier schema (each
#     prefix of the migration list, and the last tagged release's), ending in the same schema.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

MAX_GZIP_BYTES=$((1024 * 1024))
work="$(mktemp -d "${TMPDIR:-/tmp}/edgechat-deploy-check.XXXXXX")"
trap 'rm -rf "$work"' EXIT
failures=0
fail() { printf '  FAIL: %s\n' "$*" >&2; failures=$((failures + 1)); }
ok() { printf '  ok: %s\n' "$*" >&2; }

say "Deploy check 1: make deploy's dry mode bundles the Worker"
if scripts/deploy.sh --dry-run >"$work/dry-run.log" 2>&1; then
  ok "dry run completed; bundle in .deploy/dist"
else
  tail -20 "$work/dry-run.log" >&2
  fail "scripts/deploy.sh --dry-run failed"
fi

say "Deploy check 2: the bundle stays under 1 MiB gzipped"
if ls .deploy/dist/*.wasm >/dev/null 2>&1; then
  gz="$(cat .deploy/dist/*.wasm .deploy/dist/*.js | gzip -9 | wc -c)"
  raw="$(cat .deploy/dist/*.wasm .deploy/dist/*.js | wc -c)"
  if [ "$gz" -lt "$MAX_GZIP_BYTES" ]; then ok "$raw bytes, $gz gzipped"; else fail "$gz bytes gzipped (limit $MAX_GZIP_BYTES)"; fi
else
  fail "no bundle to measure"
fi

say "Deploy check 3 and 4: bindings and Durable Object classes"
python3 - <<'PY' || failures=$((failures + 1))
import pathlib, re, sys, tomllib
root = pathlib.Path(".")
config = tomllib.load(open("wrangler.toml", "rb"))
source = (root / "crates/core/src/config.rs").read_text()
block = re.search(r"pub mod bindings \{(.*?)\n\}", source, re.S).group(1)
consts = dict(re.findall(r'pub const (\w+): &str = "([^"]+)";', block))
def listed(name):
    items = re.search(rf"pub const {name}: &\[&str\] = &\[([^\]]*)\]", block).group(1)
    return {consts[i.strip()] for i in items.split(",") if i.strip()}
used, optional = listed("ALL"), listed("OPTIONAL")
declared = set()
declared |= {d["binding"] for d in config.get("d1_databases", [])}
declared |= {b["binding"] for b in config.get("r2_buckets", [])}
declared |= {b["name"] for b in config.get("durable_objects", {}).get("bindings", [])}
declared |= {q["binding"] for q in config.get("queues", {}).get("producers", [])}
declared |= {k["binding"] for k in config.get("kv_namespaces", [])}
if "ai" in config:
    declared.add(config["ai"]["binding"])
if "binding" in config.get("assets", {}):
    declared.add(config["assets"]["binding"])
problems = []
for name in sorted(used - optional - declared):
    problems.append(f"the code uses binding {name}, which wrangler.toml does not declare")
for name in sorted(declared - used):
    problems.append(f"wrangler.toml declares binding {name}, which the config's list does not name")
# Nothing may name a binding by a string of its own: the list above must be the whole truth.
for path in sorted(pathlib.Path("src").rglob("*.rs")):
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if re.search(r'\.(d1|bucket|durable_object|ai|queue|kv|service|assets)\(\s*"', line):
            problems.append(f"{path}:{n} names a binding by string; use edgechat_core::config::bindings")
# Durable Object classes: in the code, bound, and created by a migration.
code_classes = set()
for path in sorted(pathlib.Path("src").rglob("*.rs")):
    code_classes |= set(re.findall(r"#\[durable_object\]\s*(?:pub\s+)?struct\s+(\w+)", path.read_text()))
bound = {b["class_name"] for b in config.get("durable_objects", {}).get("bindings", [])}
migrated, deleted = set(), set()
for m in config.get("migrations", []):
    migrated |= set(m.get("new_classes", [])) | set(m.get("new_sqlite_classes", []))
    migrated |= {r["to"] for r in m.get("renamed_classes", [])}
    deleted |= set(m.get("deleted_classes", []))
migrated -= deleted
for c in sorted(code_classes - bound):
    problems.append(f"Durable Object class {c} is in the code but not bound in wrangler.toml")
for c in sorted(bound - code_classes):
    problems.append(f"wrangler.toml binds Durable Object class {c}, which the code does not define")
for c in sorted(bound - migrated):
    problems.append(f"Durable Object class {c} has no migration in wrangler.toml")
tags = [m.get("tag") for m in config.get("migrations", [])]
if len(tags) != len(set(tags)):
    problems.append("two Durable Object migrations share a tag")
for p in problems:
    print(f"  FAIL: {p}", file=sys.stderr)
if problems:
    sys.exit(1)
print(f"  ok: bindings {sorted(used)} ({sorted(optional)} optional) match wrangler.toml; "
      f"Durable Object classes {sorted(code_classes)} are bound and migrated", file=sys.stderr)
PY

say "Deploy check 5: migrations apply fresh and on top of every earlier schema"
mapfile -t migrations < <(ls migrations/*.sql | sort)
schema_of() {
  wrangler d1 execute DB --local --persist-to "$1" --config "$2" --json \
    --command "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name <> 'd1_migrations' ORDER BY type, name" \
    | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)[0]["results"], sort_keys=True))'
}
# A config whose migrations folder holds only `files`; the database is the same local one.
config_with() {
  local dir="$1"; shift
  mkdir -p "$dir/migrations"
  for f in "$@"; do cp "$f" "$dir/migrations/"; done
  sed "s#^migrations_dir = .*#migrations_dir = \"$dir/migrations\"#; s#^main = .*#main = \"$ROOT/build/worker/shim.mjs\"#; s#^directory = \"public\"#directory = \"$ROOT/public\"#" \
    wrangler.toml >"$dir/wrangler.toml"
  printf '%s' "$dir/wrangler.toml"
}
apply() { wrangler d1 migrations apply DB --local --persist-to "$1" --config "$2" >"$work/apply.log" 2>&1 || { tail -5 "$work/apply.log" >&2; return 1; }; }

fresh_config="$(config_with "$work/fresh" "${migrations[@]}")"
if apply "$work/fresh/state" "$fresh_config"; then
  fresh_schema="$(schema_of "$work/fresh/state" "$fresh_config")"
  ok "all ${#migrations[@]} migrations apply to a fresh database"
else
  fail "the migrations do not apply to a fresh database"
  fresh_schema=""
fi
upgrade_from() {
  local label="$1" dir="$2"; shift 2
  local before after
  before="$(config_with "$dir/before" "$@")"
  after="$(config_with "$dir/after" "${migrations[@]}")"
  if [ $# -gt 0 ] && ! apply "$dir/state" "$before"; then fail "$label: its own migrations do not apply"; return; fi
  if ! apply "$dir/state" "$after"; then fail "$label: upgrading to this release fails"; return; fi
  if [ "$(schema_of "$dir/state" "$after")" != "$fresh_schema" ]; then
    fail "$label: the upgraded schema differs from a fresh one"
  else
    ok "$label upgrades to the same schema as a fresh database"
  fi
}
for k in $(seq 1 $((${#migrations[@]} - 1))); do
  upgrade_from "the schema after $(basename "${migrations[$((k - 1))]}")" "$work/prefix-$k" "${migrations[@]:0:$k}"
done
last_tag="$(git describe --tags --abbrev=0 --match 'v*' 2>/dev/null || true)"
if [ -n "$last_tag" ]; then
  mkdir -p "$work/tag/files"
  mapfile -t tagged < <(git ls-tree --name-only "$last_tag" migrations/ | grep '\.sql$' | sort)
  for f in "${tagged[@]}"; do git show "$last_tag:$f" >"$work/tag/files/$(basename "$f")"; done
  upgrade_from "release $last_tag (${#tagged[@]} migrations)" "$work/tag" "${tagged[@]/#migrations\//$work/tag/files/}"
else
  ok "no release tag (v*) in this checkout; the prefixes above stand for earlier releases"
fi

if [ "$failures" -gt 0 ]; then
  printf '\nDeploy check: %s failure(s).\n' "$failures" >&2
  exit 1
fi
printf '\nDeploy check passed.\n' >&2
