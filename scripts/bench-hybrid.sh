#!/usr/bin/env bash
# Hybrid search benchmark: search with embeddings at 1k, 10k and 100k chunks in one chatbot
# against a local OpenAI-compatible embedding server with a fixed delay per call, and the
# vector index's back-fill rate and size. Writes bench-output/hybrid.json. About 6 minutes.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
"$ROOT/scripts/setup.sh" bench
build_worker
mkdir -p "$ROOT/bench-output"
cd "$ROOT"
E2E_OUTPUT="$ROOT/bench-output/run" node bench/hybrid.mjs
