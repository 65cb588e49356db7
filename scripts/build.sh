#!/usr/bin/env bash
# Builds the deployable Worker into build/ (installing the build tools if missing).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
"$ROOT/scripts/setup.sh"
build_worker
