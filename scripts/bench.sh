#!/usr/bin/env bash
# The whole benchmark: builds the release Worker, then measures CRUD throughput and latency
# against a plain JavaScript baseline (wrk), streaming overhead, retrieval and full answers at
# 1k/10k/100k chunks, hybrid search with embeddings, ingestion MB/s (also against the Worker
# from before the queue), analytics over a million messages, wasm size and start-up. Writes bench-output/bench.json and
# bench-output/bench.png and prints a summary table. About 10 minutes on 2 cores.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
export BENCH_STARTED_AT="$(date +%s)"
"$ROOT/scripts/setup.sh" bench
build_worker
cd "$ROOT"
mkdir -p bench-output
# Parts of an earlier run must not mix into this one's report.
rm -f bench-output/{crud,stream,knowledge,hybrid,analytics,startup,bench,core-throughput,ingest-baseline}.json bench-output/bench.{png,html}
export E2E_OUTPUT="$ROOT/bench-output/run"

say "Native throughput of chunking and PDF extraction (release profile)"
cargo bench -q -p edgechat-core --bench throughput -- --json "$ROOT/bench-output/core-throughput.json"
say "Size and start-up"
node bench/startup.mjs
say "CRUD against the JavaScript baseline (wrk)"
node bench/crud.mjs
say "Streaming through the Worker against the model server read directly"
node bench/stream.mjs
say "Retrieval, full answers and ingestion (the 100k-chunk seeding takes a few minutes)"
node bench/knowledge.mjs
say "Ingestion against the Worker from before the queue (same files, alternating rounds; its first build takes a few minutes)"
scripts/bench-ingest-baseline.sh
say "Hybrid search with a local embedding server (the 100k-chunk back-fill takes a few minutes)"
node bench/hybrid.mjs
say "Analytics over a million messages (seeding takes a few minutes)"
node bench/analytics.mjs
node bench/report.mjs
