#!/usr/bin/env bash
# Streaming benchmark: time to first byte and token rate of a streamed answer through the
# Worker, next to reading the local model server directly, in one run. Writes
# bench-output/stream.json.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
"$ROOT/scripts/setup.sh"
build_worker
mkdir -p "$ROOT/bench-output"
cd "$ROOT"
E2E_OUTPUT="$ROOT/bench-output/run" node bench/stream.mjs "$@"
