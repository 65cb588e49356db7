// Analytics benchmark: `GET /chatbot/{uuid}/analytics` and `GET /chatbot/{uuid}/unanswered`
// over a chatbot holding a million messages (100k sessions over 90 days, a fifth of the answers
// unanswered, some sessions tagged, escalated or in live chat, 20k ratings), beside a second
// chatbot with other data in the same database. The rows are written with one generated SQL
// statement each through `wrangler d1 execute`; the Worker then reads them through the indexes
// migration 0009 adds. Talks only to 127.0.0.1 and writes bench-output/analytics.json.
//
// Environment: BENCH_ANALYTICS_MESSAGES (1000000), BENCH_REQUESTS (20 per range),
// BENCH_OUTPUT (bench-output).
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { startWorker, client, ROOT } from "../tests/e2e/harness.mjs";

const OUT = path.resolve(ROOT, process.env.BENCH_OUTPUT ?? "bench-output");
const MESSAGES = Number(process.env.BENCH_ANALYTICS_MESSAGES ?? 1_000_000);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 20);
const SESSIONS = Math.max(1, Math.round(MESSAGES / 10));
const SPAN_SECS = 90 * 24 * 3600;

const T0 = performance.now();
const log = (msg) => console.log(`[${((performance.now() - T0) / 1000).toFixed(1).padStart(6)}s] ${msg}`);

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function timed(api, p) {
  const times = [];
  let last;
  for (let i = 0; i < REQUESTS + 2; i++) {
    const t = performance.now();
    last = await api.get(p);
    if (last.status !== 200) throw new Error(`${p}: ${last.status} ${last.text}`);
    if (i >= 2) times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return { p50_ms: percentile(times, 50), p95_ms: percentile(times, 95), max_ms: times[times.length - 1], body: last.json };
}

/** Sessions, then messages, then ratings of `bot`, `scale` of the full counts. */
async function seed(worker, bot, prefix, messages) {
  const sessions = Math.max(1, Math.round(messages / 10));
  // Timestamps spread over the last 90 days; every tenth session tagged, every fiftieth
  // escalated, every hundredth in live chat, half of them from site visitors.
  const at = (expr) => `strftime('%Y-%m-%dT%H:%M:%SZ', 'now', '-' || ((${expr}) % ${SPAN_SECS}) || ' seconds')`;
  let t = performance.now();
  await worker.sql(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${sessions - 1})
    INSERT INTO sessions (uuid, chatbot_uuid, meta_json, created_at, modified_at, visitor_id)
    SELECT '${prefix}-s' || i, '${bot}',
      CASE WHEN i % 100 = 0 THEN json_object('live_chat', json_object('active', json('false'), 'started_at', ${at("i * 77")}),
                                             'human_escalation', json_object('requested', json('true'), 'requested_at', ${at("i * 77")}))
           WHEN i % 50 = 0 THEN json_object('human_escalation', json_object('requested', json('true'), 'requested_at', ${at("i * 77")}))
           WHEN i % 10 = 0 THEN json_object('tags', json_array(json_object('name', CASE WHEN i % 20 = 0 THEN 'Pricing' ELSE 'Refund' END, 'tagged_at', ${at("i * 77")})))
           ELSE '{}' END,
      ${at("i * 77")}, ${at("i * 77")}, CASE WHEN i % 2 = 0 THEN printf('%032x', i) END
    FROM n`);
  log(`  ${sessions} sessions in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  t = performance.now();
  await worker.sql(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${messages - 1})
    INSERT INTO messages (uuid, session_uuid, chatbot_uuid, started_ms, query, response, finish_reason, created_at, modified_at, kind, answered)
    SELECT '${prefix}-m' || i, '${prefix}-s' || (i % ${sessions}), '${bot}', i,
      CASE WHEN i % 5 = 0 THEN 'Do you have a loyalty programme number ' || (i % 37) || '?' ELSE 'How long does shipping take to zone ' || (i % 11) || '?' END,
      'An answer.', 'stop', ${at("(i % " + sessions + ") * 77 + i % 600")}, ${at("(i % " + sessions + ") * 77 + i % 600")}, 'answer',
      CASE WHEN i % 5 = 0 THEN 0 ELSE 1 END
    FROM n`);
  log(`  ${messages} messages in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  t = performance.now();
  const ratings = Math.max(1, Math.round(messages / 50));
  await worker.sql(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${ratings - 1})
    INSERT INTO message_feedback (message_uuid, chatbot_uuid, session_uuid, rating, created_at, modified_at)
    SELECT '${prefix}-m' || (i * 50), '${bot}', '${prefix}-s' || ((i * 50) % ${sessions}), CASE WHEN i % 3 = 0 THEN 'down' ELSE 'up' END,
      ${at("i * 3889")}, ${at("i * 3889")}
    FROM n`);
  log(`  ${ratings} ratings in ${((performance.now() - t) / 1000).toFixed(1)} s`);
}

async function main() {
  log(`Analytics over ${MESSAGES} messages in ${SESSIONS} sessions`);
  const worker = await startWorker({ inspector: false });
  try {
    const account = await worker.newAccount("analytics");
    const api = client(worker, account.key);
    const bot = (await api.post("/chatbot/create", { body: { name: "A million messages" } })).json;
    const other = (await api.post("/chatbot/create", { body: { name: "Neighbour" } })).json;
    await seed(worker, bot.uuid, "a", MESSAGES);
    await seed(worker, other.uuid, "b", Math.round(MESSAGES / 10));

    const week = new Date(Date.now() - 7 * 24 * 3600 * 1000).toISOString().replace(/\.\d+Z$/, "Z");
    const ranges = {
      all: `/chatbot/${bot.uuid}/analytics`,
      last_7_days: `/chatbot/${bot.uuid}/analytics?start_timestamp=${week}`,
      unanswered_last_7_days: `/chatbot/${bot.uuid}/unanswered?start_timestamp=${week}`,
    };
    const results = {};
    for (const [name, p] of Object.entries(ranges)) {
      const r = await timed(api, p);
      results[name] = { p50_ms: r.p50_ms, p95_ms: r.p95_ms, max_ms: r.max_ms };
      if (r.body.totals) results[name].messages_counted = r.body.totals.messages;
      else results[name].groups = r.body.length;
      log(`${name}: p50 ${r.p50_ms.toFixed(1)} ms, p95 ${r.p95_ms.toFixed(1)} ms (${JSON.stringify(r.body.totals ?? { groups: r.body.length })})`);
    }
    if (results.all.messages_counted !== MESSAGES) throw new Error(`analytics counted ${results.all.messages_counted} messages, not ${MESSAGES}`);
    await mkdir(OUT, { recursive: true });
    const report = { messages: MESSAGES, sessions: SESSIONS, requests: REQUESTS, results };
    await writeFile(path.join(OUT, "analytics.json"), JSON.stringify(report, null, 2) + "\n");
    log(`wrote ${path.join(OUT, "analytics.json")}`);
  } finally {
    await worker.dispose();
  }
}

await main();
