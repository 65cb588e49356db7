#!/usr/bin/env bash
# Knowledge benchmark: search latency at 1k, 10k and 100k chunks in one chatbot and ingestion
# throughput of text and PDF uploads, against the release Worker under `wrangler dev`.
# Prints the figures and writes bench-output/knowledge.json. About 5 minutes on 2 cores.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
"$ROOT/scripts/setup.sh" bench
build_worker
mkdir -p "$ROOT/bench-output"
# The Worker's local state (up to ~0.5 GB at 100k chunks) lives under bench-output and is
# removed when the run ends.
cd "$ROOT"
E2E_OUTPUT="$ROOT/bench-output/run" node bench/knowledge.mjs
