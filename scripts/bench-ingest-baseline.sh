#!/usr/bin/env bash
# Ingestion on the queue against the Worker from just before ingestion moved onto it: exports
# that commit into bench-output/pre-queue, builds it there once (its own build script, its own
# target folder), then runs bench/ingest_baseline.mjs, which uploads the same batches to both
# in alternating rounds. Skipped, and said so, in a clone whose history lacks the commit.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
# The last commit whose Worker read uploads in `waitUntil` after the upload answered.
PRE_QUEUE=05d46f339f26cab6030af0f2d45ea2c687904b42
dir="$ROOT/bench-output/pre-queue"
if ! git -C "$ROOT" cat-file -e "$PRE_QUEUE^{commit}" 2>/dev/null; then
  say "Skipping the comparison with the Worker before the queue: $PRE_QUEUE is not in this clone's history"
  exit 0
fi
if [ ! -f "$dir/Cargo.toml" ]; then
  mkdir -p "$dir"
  git -C "$ROOT" archive "$PRE_QUEUE" | tar -x -C "$dir"
fi
# Its own package.json pins the same tools, so the installed ones serve it.
ln -sfn "$ROOT/node_modules" "$dir/node_modules"
(export CARGO_TARGET_DIR="$ROOT/target/pre-queue"; source "$dir/scripts/lib.sh"; build_worker)
cd "$ROOT"
node bench/ingest_baseline.mjs "$dir"
