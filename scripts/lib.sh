# Shared by the scripts in this folder: paths, tool versions and the offline-friendly build.
# shellcheck shell=bash

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORKER_BUILD_VERSION="0.8.7"
CARGO_BIN="${CARGO_HOME:-$HOME/.cargo}/bin"
export PATH="$CARGO_BIN:$ROOT/node_modules/.bin:$PATH"

# wrangler writes a config folder and would phone home; keep it local and quiet.
export WRANGLER_SEND_METRICS=false
export CLOUDFLARE_CF_FETCH_ENABLED=false
export XDG_CONFIG_HOME="${XDG_CONFIG_HOME:-$ROOT/.state/xdg}"
mkdir -p "$XDG_CONFIG_HOME"

say() { printf '\033[1m==>\033[0m %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# The wasm-bindgen version Cargo.lock pins; the CLI must match it exactly.
wasm_bindgen_version() {
  awk '/^name = "wasm-bindgen"$/ { getline; gsub(/[^0-9.]/, ""); print; exit }' "$ROOT/Cargo.lock"
}

# worker-build fetches wasm-bindgen, wasm-opt and esbuild from the internet unless told where
# they are; point it at the installed ones so builds work offline.
# `build_worker` builds the release Worker into build/. `build_worker DIR ARGS...` builds it into
# DIR instead, passing ARGS on to cargo: the tests' panic probe is
# `build_worker build/panic-probe --features panic-probe`.
build_worker() {
  local dir="${1:-build}"
  if [ $# -gt 0 ]; then shift; fi
  local out="$ROOT/$dir/worker/shim.mjs"
  if [ -f "$out" ] && [ -z "$(find "$ROOT/src" "$ROOT/crates" "$ROOT/Cargo.toml" "$ROOT/Cargo.lock" -newer "$out" -print -quit)" ]; then
    say "The Worker build in $dir is up to date"
    return 0
  fi
  say "Building the Worker (release) into $dir${*:+ with $*}"
  (cd "$ROOT" && \
    WASM_BINDGEN_BIN="$(command -v wasm-bindgen)" \
    WASM_OPT_BIN="$ROOT/node_modules/.bin/wasm-opt" \
    ESBUILD_BIN="$ROOT/node_modules/.bin/esbuild" \
    worker-build --release --out-dir "$dir" "$@") || return 1
  # The names section is for stack traces only; without it the Worker stays under 1 MiB.
  node "$ROOT/scripts/strip-wasm-names.mjs" "$ROOT/$dir/index_bg.wasm"
}

# Applies migrations to a local state folder (the same one wrangler dev will use).
apply_migrations() {
  local state_dir="$1"
  (cd "$ROOT" && wrangler d1 migrations apply DB --local --persist-to "$state_dir" >/dev/null) \
    || die "applying D1 migrations to $state_dir failed"
}

# A free TCP port on 127.0.0.1.
free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

random_hex() {
  od -An -tx1 -N"$1" /dev/urandom | tr -d ' \n'
}
