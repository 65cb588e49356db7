#!/usr/bin/env bash
# Installs whatever is missing to build and run the Worker (`setup.sh`), also to run every
# test (`setup.sh test`), or also to run the benchmarks (`setup.sh bench`: wrk, fpdf2 and
# Chromium, which draws the chart). Safe to run again: each step checks first.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

want_tests=false
want_bench=false
case "${1:-}" in
  test) want_tests=true ;;
  bench) want_bench=true ;;
  "") ;;
  *) die "usage: setup.sh [test|bench]" ;;
esac

# Debian packages, installed together with one `apt-get update`.
apt_install() {
  command -v apt-get >/dev/null || die "install $* with your package manager"
  local sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "$@" >/dev/null
}

command -v cargo >/dev/null || die "cargo is needed (install Rust with rustup)"
command -v node >/dev/null || die "Node.js 20 or newer is needed"
command -v npm >/dev/null || die "npm is needed"

if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  say "Adding the wasm32-unknown-unknown Rust target"
  rustup target add wasm32-unknown-unknown
fi

if [ "$(worker-build --version 2>/dev/null | awk '{print $NF}')" != "$WORKER_BUILD_VERSION" ]; then
  say "Installing worker-build $WORKER_BUILD_VERSION (first time only, about 3 minutes)"
  cargo install "worker-build@$WORKER_BUILD_VERSION" --locked
fi

bindgen_version="$(wasm_bindgen_version)"
[ -n "$bindgen_version" ] || die "could not read the wasm-bindgen version from Cargo.lock"
if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$bindgen_version" ]; then
  # Without --locked: one of the CLI's locked dependencies is no longer published.
  say "Installing wasm-bindgen-cli $bindgen_version (first time only, about 2 minutes)"
  cargo install "wasm-bindgen-cli@$bindgen_version"
fi

if [ ! -x "$ROOT/node_modules/.bin/wrangler" ] || [ "$ROOT/package-lock.json" -nt "$ROOT/node_modules/.package-lock.json" ]; then
  say "Installing wrangler, esbuild and binaryen from package-lock.json"
  (cd "$ROOT" && npm ci --no-audit --no-fund)
fi

if $want_tests; then
  if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    say "Installing Chromium and chromedriver for the browser tests (about 1 minute)"
    apt_install chromium chromium-driver
  fi
  # schemathesis, for the API fuzzing test, in a virtual environment of the project's own.
  venv="$ROOT/.tools/python"
  if ! cmp -s "$ROOT/tests/requirements.txt" "$venv/requirements.txt" 2>/dev/null; then
    say "Installing the Python test tools from tests/requirements.txt"
    command -v python3 >/dev/null || die "python3 is needed for the end-to-end tests"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$ROOT/tests/requirements.txt"
    cp "$ROOT/tests/requirements.txt" "$venv/requirements.txt"
  fi
fi

if $want_bench; then
  missing=()
  command -v wrk >/dev/null || missing+=(wrk)
  command -v chromium >/dev/null || missing+=(chromium)
  if [ "${#missing[@]}" -gt 0 ]; then
    say "Installing ${missing[*]} for the benchmarks (the load generator; Chromium draws the chart)"
    apt_install "${missing[@]}"
  fi
  command -v python3 >/dev/null || die "python3 is needed (the knowledge benchmark reads Python's docstrings and typesets PDFs)"
  if ! python3 -c 'import fpdf' 2>/dev/null; then
    say "Installing fpdf2 to typeset the benchmark's PDFs"
    python3 -m pip install --quiet --user fpdf2 \
      || say "fpdf2 could not be installed; the PDF figure will use the fixture PDFs only"
  fi
fi
