#!/usr/bin/env bash
# `make dev`: install what is missing, build, migrate, and run the Worker on 127.0.0.1 with
# local D1, R2 and Durable Objects. State lives in STATE_DIR and survives restarts.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

PORT="${PORT:-8787}"
STATE_DIR="${STATE_DIR:-$ROOT/.state/dev}"
mkdir -p "$STATE_DIR"
STATE_DIR="$(cd "$STATE_DIR" && pwd)"

"$ROOT/scripts/setup.sh"
# Another server on the port would answer the readiness check below in this Worker's place;
# checked before the build, which takes minutes.
if node -e 'const s=require("net").createServer();s.on("error",()=>process.exit(1));s.listen(+process.argv[1],"127.0.0.1",()=>s.close())' "$PORT"; then :; else
  die "port $PORT on 127.0.0.1 is in use; stop what runs there or choose another with PORT=..."
fi

build_worker

# The operator's token: as given, else the one this state folder was first run with.
if [ -z "${ADMIN_TOKEN:-}" ]; then
  if [ ! -s "$STATE_DIR/admin-token" ]; then
    random_hex 24 > "$STATE_DIR/admin-token"
  fi
  ADMIN_TOKEN="$(cat "$STATE_DIR/admin-token")"
fi

# The key site visitors' tokens are signed with: as given, else one kept in the state folder
# (so tokens survive a restart).
if [ -z "${WIDGET_TOKEN_SECRET:-}" ]; then
  if [ ! -s "$STATE_DIR/widget-token-secret" ]; then
    random_hex 32 > "$STATE_DIR/widget-token-secret"
  fi
  WIDGET_TOKEN_SECRET="$(cat "$STATE_DIR/widget-token-secret")"
fi

say "Applying D1 migrations to $STATE_DIR"
apply_migrations "$STATE_DIR"

vars=(--var "ADMIN_TOKEN:$ADMIN_TOKEN" --var "WIDGET_TOKEN_SECRET:$WIDGET_TOKEN_SECRET")
for name in WIDGET_TOKEN_SECRET_PREVIOUS OPENAI_API_KEY OPENAI_BASE_URL ALLOW_PRIVATE_URLS ALLOW_PRIVATE_HOSTS \
  MODEL_TIMEOUT_SECONDS TOOL_TIMEOUT_SECONDS WEBHOOK_TIMEOUT_SECONDS WEBHOOK_RETRY_UNIT_SECONDS WEBHOOK_RETRY_DELAYS \
  API_KEY_RATE_LIMIT VISITOR_TOKEN_RATE_LIMIT EMBEDDINGS_MODEL RERANK_MODEL SEMANTIC_TIMEOUT_SECONDS \
  SEARCH_CANDIDATE_BUDGET; do
  if [ -n "${!name:-}" ]; then vars+=(--var "$name:${!name}"); fi
done

say "Starting the Worker on http://127.0.0.1:$PORT"
cd "$ROOT"
# --test-scheduled opens /__scheduled, through which the cron below runs the scheduled handler.
setsid wrangler dev --ip 127.0.0.1 --port "$PORT" --inspector-port "$(free_port)" \
  --persist-to "$STATE_DIR" --show-interactive-dev-session=false --test-scheduled "${vars[@]}" &
worker_pid=$!
cron_pid=""
# workerd can outlive wrangler's node process, so the whole group is killed once it has exited.
trap 'if [ -n "$cron_pid" ]; then kill "$cron_pid" 2>/dev/null || true; fi; kill -TERM -- "-$worker_pid" 2>/dev/null || true; wait "$worker_pid" 2>/dev/null || true; kill -KILL -- "-$worker_pid" 2>/dev/null || true' EXIT INT TERM

base="http://127.0.0.1:$PORT"
for _ in $(seq 1 600); do
  if curl -fsS -o /dev/null "$base/health" 2>/dev/null; then break; fi
  kill -0 "$worker_pid" 2>/dev/null || die "wrangler dev exited before the Worker answered"
  sleep 0.1
done
curl -fsS -o /dev/null "$base/health" || die "the Worker did not answer $base/health within 60 s"

# wrangler dev runs no cron triggers. The scheduled handler resumes readings a restart left
# stalled (local queues live in memory), refreshes pages and crawls, and keeps the indexes: it
# runs here on the deployed schedule (wrangler.toml's `crons`, every 10 minutes).
cron="$(sed -n 's/^crons = \["\(.*\)"\]$/\1/p' "$ROOT/wrangler.toml")"
cron_query="$(node -e 'console.log(encodeURIComponent(process.argv[1]))' "$cron")"
( while sleep 600; do curl -fsS -o /dev/null "$base/__scheduled?cron=$cron_query" || true; done ) &
cron_pid=$!

# A key that works: the one saved from an earlier run if it still does, else a new one.
key_file="$STATE_DIR/dev-api-key"
api_key="$(cat "$key_file" 2>/dev/null || true)"
if [ -z "$api_key" ] || ! curl -fsS -o /dev/null -H "Authorization: Bearer $api_key" "$base/api/v1/api-keys"; then
  api_key="$(curl -fsS -X POST -H "Authorization: Bearer $ADMIN_TOKEN" -H 'Content-Type: application/json' \
    -d '{"name":"local development"}' "$base/api/v1/api-key/create" \
    | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).key))')"
  printf '%s\n' "$api_key" > "$key_file"
fi

cat <<MSG

  edgechat is running.
    Chat page:    $base/
    Base URL:     $base/api/v1
    API key:      $api_key
    Admin token:  $ADMIN_TOKEN   (only manages API keys)
    State:        $STATE_DIR

  Try:  curl -H 'Authorization: Bearer $api_key' $base/api/v1/chatbots

  Press Ctrl-C to stop; the data stays in the state folder.

MSG
wait "$worker_pid"
