// Streaming overhead: time to first byte and token rate of a streamed answer through the
// Worker, next to reading the same local model server directly, in one run. The Worker is
// reached as `benchWorkerOptions` says: no inspector, no local proxy, unless asked.
//   node bench/stream.mjs [--runs 20] [--tokens 100] [--pace-ms 10]
import { parseArgs } from "node:util";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { startWorker, benchWorkerOptions, client, ROOT } from "../tests/e2e/harness.mjs";
import { startModelServer, FAKE_KEY } from "../tests/e2e/model_server.mjs";

const { values: opts } = parseArgs({
  options: {
    runs: { type: "string", default: "20" },
    tokens: { type: "string", default: "100" },
    "pace-ms": { type: "string", default: "10" },
    out: { type: "string", default: path.join(ROOT, "bench-output") },
  },
});
const runs = Number(opts.runs);
const tokens = Number(opts.tokens);
const pace = Number(opts["pace-ms"]);

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

/** Reads a streamed body; returns time to first byte and the rate of the content after it. */
async function timeStream(url, init, countPieces) {
  const t0 = performance.now();
  const res = await fetch(url, init);
  if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status} ${await res.text()}`);
  const decoder = new TextDecoder();
  let first, text = "";
  for await (const piece of res.body) {
    first ??= performance.now();
    text += decoder.decode(piece, { stream: true });
  }
  const end = performance.now();
  const n = countPieces(text);
  return { ttfb: first - t0, tokensPerSecond: n / ((end - first) / 1000), pieces: n };
}

const model = await startModelServer({ tokenDelayMs: pace });
const worker = await startWorker({ vars: { OPENAI_API_KEY: FAKE_KEY, OPENAI_BASE_URL: model.base }, ...benchWorkerOptions() });
try {
  const key = (await worker.newAccount()).key;
  const api = client(worker, key);
  const bot = (await api.post("/chatbot/create", { body: { name: "Bench", rate_limit: [100, 1] } })).json;
  const query = `[bench:${tokens}]`;
  const direct = [], through = [];
  for (let i = 0; i < runs + 2; i++) {
    const session = (await api.post(`/chatbot/${bot.uuid}/session/create`)).json;
    // Alternate, so drift in machine load hits both sides alike; the first two are warm-up.
    const d = await timeStream(`${model.base}/chat/completions`, {
      method: "POST",
      headers: { Authorization: `Bearer ${FAKE_KEY}`, "Content-Type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o-mini", stream: true, messages: [{ role: "user", content: query }] }),
    }, (t) => t.split("\n\n").filter((e) => e.includes('"content":"w')).length);
    const w = await timeStream(`${worker.base}/api/v1/session/${session.uuid}/message/stream`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
      body: JSON.stringify({ query }),
    }, (t) => t.split(" ").filter((x) => x.startsWith("w")).length);
    if (i >= 2) { direct.push(d); through.push(w); }
  }
  const summary = (xs) => ({
    ttfb_p50_ms: +quantile(xs.map((x) => x.ttfb), 0.5).toFixed(2),
    ttfb_p99_ms: +quantile(xs.map((x) => x.ttfb), 0.99).toFixed(2),
    tokens_per_second_p50: +quantile(xs.map((x) => x.tokensPerSecond), 0.5).toFixed(1),
  });
  const result = {
    runs, tokens, pace_ms: pace,
    direct: summary(direct),
    worker: summary(through),
  };
  result.added_ttfb_p50_ms = +(result.worker.ttfb_p50_ms - result.direct.ttfb_p50_ms).toFixed(2);
  result.rate_ratio = +(result.worker.tokens_per_second_p50 / result.direct.tokens_per_second_p50).toFixed(3);
  console.log(`streaming, ${runs} runs of ${tokens} tokens at ${pace} ms each`);
  console.log(`  direct:  TTFB p50 ${result.direct.ttfb_p50_ms} ms, p99 ${result.direct.ttfb_p99_ms} ms, ${result.direct.tokens_per_second_p50} tokens/s`);
  console.log(`  worker:  TTFB p50 ${result.worker.ttfb_p50_ms} ms, p99 ${result.worker.ttfb_p99_ms} ms, ${result.worker.tokens_per_second_p50} tokens/s`);
  console.log(`  added TTFB p50 ${result.added_ttfb_p50_ms} ms; rate ratio ${result.rate_ratio}`);
  await mkdir(opts.out, { recursive: true });
  await writeFile(path.join(opts.out, "stream.json"), JSON.stringify(result, null, 2));
} finally {
  await worker.dispose();
  await model.close();
}
