#!/usr/bin/env bash
# `make test`: every tier, in order: native unit tests, wasm tests in headless Chromium,
# end-to-end tests against `wrangler dev` with real local D1, R2 and Durable Objects, and the
# deploy check (the release bundle, its bindings and the migrations, without an account).
# All tiers run even when one fails; the exit code says whether all passed.
set -uo pipefail
source "$(dirname "$0")/lib.sh"

"$ROOT/scripts/setup.sh" test || die "setup failed"
cd "$ROOT"
failed=()

say "Tier 1: native tests (cargo test)"
cargo test --workspace || failed+=("native")

say "Tier 2: wasm tests in headless Chromium (wasm-bindgen-test)"
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
CHROMEDRIVER="$(command -v chromedriver)" \
  cargo test --target wasm32-unknown-unknown --no-default-features --test browser \
  || failed+=("browser")

say "Tier 3: end-to-end tests against wrangler dev"
# The test-only build with the panic probe (tests/e2e/panic.test.mjs), beside the real one. A
# failed build leaves no stale copy behind, so that test fails saying the build is missing.
if ! build_worker build/panic-probe --features panic-probe; then
  rm -rf "$ROOT/build/panic-probe"
  failed+=("panic-probe build")
fi
if build_worker; then
  out="$ROOT/test-output"
  rm -rf "$out" && mkdir -p "$out"
  # Every test server starts from a copy of this migrated, empty state.
  apply_migrations "$out/state-template"
  # The load test runs by itself after the others: it is about this Worker under load, not
  # about another file's Worker competing for the same two cores.
  e2e_files=()
  for f in tests/e2e/*.test.mjs; do [ "$f" = tests/e2e/load.test.mjs ] || e2e_files+=("$f"); done
  E2E_STATE_TEMPLATE="$out/state-template" E2E_OUTPUT="$out" \
    node --test --test-concurrency=2 "${e2e_files[@]}" || failed+=("end-to-end")
  E2E_STATE_TEMPLATE="$out/state-template" E2E_OUTPUT="$out" \
    node --test tests/e2e/load.test.mjs || failed+=("end-to-end (load)")
else
  failed+=("worker build")
fi

say "Tier 4: deploy check (what was tested would deploy; no account needed)"
"$ROOT/scripts/deploy-check.sh" || failed+=("deploy check")

if [ ${#failed[@]} -gt 0 ]; then
  printf '\nFAILED tiers: %s\n' "${failed[*]}" >&2
  exit 1
fi
printf '\nAll test tiers passed.\n'
