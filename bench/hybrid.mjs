// Hybrid search benchmark: `POST /chatbot/{uuid}/search` with search by meaning turned on, at
// 1k, 10k and 100k chunks in one chatbot, against a local OpenAI-compatible embedding server
// that answers after a fixed delay per call (the time a model server takes is not ours to
// measure; what the Worker adds around it is). Per level: how long the back-fill took (every
// chunk embedded and written to the chatbot's vector index), search p50/p99 with embeddings,
// then with a reranker too, the calls each search made to the model server, and the vector
// index's size on disk. Writes bench-output/hybrid.json. Run it with `make bench` (or
// `node bench/hybrid.mjs` after `build_worker`).
//
// The embedding is feature hashing of words into BENCH_DIMENSIONS (1,024: bge-m3's width)
// signed dimensions: deterministic, cheap, and close enough to meaning for a latency figure
// (near neighbours share words). The reranker scores a document by the question's words it holds.
//
// Environment: BENCH_LEVELS (default "1000,10000,100000"), BENCH_REQUESTS (200),
// BENCH_WARMUP (30), BENCH_DIMENSIONS (1024), BENCH_EMBED_DELAY_MS (20),
// BENCH_RERANK_DELAY_MS (30), BENCH_OUTPUT (bench-output).
import { createServer } from "node:http";
import { readdir, stat, writeFile, mkdir } from "node:fs/promises";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { startWorker, client, sleep, ROOT } from "../tests/e2e/harness.mjs";
import { QUERIES, gatherCorpus, seedBySql, chunkCounts, stats, timed, table, round, intList } from "./knowledge.mjs";

const CONFIG = {
  levels: intList(process.env.BENCH_LEVELS, [1000, 10000, 100000]).sort((a, b) => a - b),
  requests: Number(process.env.BENCH_REQUESTS ?? 200),
  warmup: Number(process.env.BENCH_WARMUP ?? 30),
  dimensions: Number(process.env.BENCH_DIMENSIONS ?? 1024),
  embedDelayMs: Number(process.env.BENCH_EMBED_DELAY_MS ?? 20),
  rerankDelayMs: Number(process.env.BENCH_RERANK_DELAY_MS ?? 30),
  searchLimit: 5,
  backfillTimeoutMs: 30 * 60_000,
};
const OUT = path.resolve(ROOT, process.env.BENCH_OUTPUT ?? "bench-output");
const MODEL = `hashed-words-${CONFIG.dimensions}`;

const T0 = performance.now();
const log = (msg) => console.log(`[${((performance.now() - T0) / 1000).toFixed(1).padStart(6)}s] ${msg}`);

const words = (text) => text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
function hash(word, seed) {
  let h = seed >>> 0;
  for (let i = 0; i < word.length; i++) h = Math.imul(h ^ word.charCodeAt(i), 16777619) >>> 0;
  return h;
}
function embed(text) {
  const v = new Float32Array(CONFIG.dimensions);
  for (const w of words(text)) {
    for (const seed of [2166136261, 374761393]) {
      const h = hash(w, seed);
      v[h % CONFIG.dimensions] += h & 0x80000000 ? 1 : -1;
    }
  }
  if (v.every((x) => x === 0)) v[0] = 1;
  const norm = Math.hypot(...v);
  return Array.from(v, (x) => round(x / norm, 5));
}

/** The model server: embeddings and rerank after fixed delays; counts its calls. */
async function startModelServer() {
  const counts = { embeddings: 0, embedded_texts: 0, rerank: 0 };
  const server = createServer(async (req, res) => {
    const parts = [];
    for await (const c of req) parts.push(c);
    let body;
    try {
      body = JSON.parse(Buffer.concat(parts).toString("utf8") || "{}");
    } catch {
      res.writeHead(400).end();
      return;
    }
    const answer = (value) => {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify(value));
    };
    if (req.url === "/v1/embeddings") {
      counts.embeddings++;
      const input = Array.isArray(body.input) ? body.input : [body.input];
      counts.embedded_texts += input.length;
      await sleep(CONFIG.embedDelayMs);
      return answer({ object: "list", model: body.model, data: input.map((t, index) => ({ object: "embedding", index, embedding: embed(String(t)) })) });
    }
    if (req.url === "/v1/rerank") {
      counts.rerank++;
      await sleep(CONFIG.rerankDelayMs);
      const asked = new Set(words(String(body.query)));
      const results = (body.documents ?? []).map((d, index) => {
        const held = words(typeof d === "string" ? d : d.text ?? "");
        return { index, relevance_score: held.filter((w) => asked.has(w)).length / (held.length || 1) };
      });
      results.sort((a, b) => b.relevance_score - a.relevance_score);
      return answer({ model: body.model, results: results.slice(0, body.top_n ?? results.length) });
    }
    res.writeHead(404).end();
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { base: `http://127.0.0.1:${server.address().port}/v1`, counts, close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }) };
}

/** Bytes of the vector index objects' SQLite files (their on-disk size). */
async function vectorIndexBytes(stateDir) {
  const root = path.join(stateDir, "v3", "do");
  let total = 0;
  for (const dir of await readdir(root).catch(() => [])) {
    if (!dir.includes("VectorIndex")) continue;
    for (const f of await readdir(path.join(root, dir))) total += (await stat(path.join(root, dir, f))).size;
  }
  return total;
}

/**
 * A read through a second SQLite connection: while the Worker writes (the back-fill queues
 * 100,000 rows in one statement) it may find the database busy, so it tries again.
 */
async function read(worker, query) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await worker.sql(query);
    } catch (err) {
      if (attempt >= 20 || !/SQLITE_BUSY|database is locked/.test(String(err.stderr ?? err.message ?? err))) throw err;
      await sleep(500);
    }
  }
}

/** Runs the scheduled handler (it queues the vector sync) until no chunk waits for its vector. */
async function backfill(worker, botUuid) {
  const t = performance.now();
  await worker.runScheduled();
  let waiting = Infinity;
  let lastKick = performance.now();
  while (performance.now() - t < CONFIG.backfillTimeoutMs) {
    const [row] = await read(worker, `SELECT COUNT(*) AS n FROM vector_outbox WHERE chatbot_uuid = '${botUuid}'`);
    const [index] = await read(worker, `SELECT model FROM vector_indexes WHERE chatbot_uuid = '${botUuid}'`);
    waiting = row?.n ?? 0;
    if (waiting === 0 && index?.model?.endsWith(`:${MODEL}`)) return { seconds: round((performance.now() - t) / 1000, 1) };
    // The sync re-queues itself while work waits; a nudge covers a run cut short.
    if (performance.now() - lastKick > 60_000) {
      await worker.runScheduled();
      lastKick = performance.now();
    }
    await sleep(1000);
  }
  throw new Error(`the back-fill did not finish in ${CONFIG.backfillTimeoutMs / 60_000} min (${waiting} chunks waiting)`);
}

async function measureSearch(worker, key, botUuid, server) {
  const search = (query) =>
    worker.request("POST", `/api/v1/chatbot/${botUuid}/search`, { key, body: { query, limit: CONFIG.searchLimit } });
  for (let i = 0; i < CONFIG.warmup; i++) {
    const r = await search(QUERIES[i % QUERIES.length]);
    if (r.status !== 200) throw new Error(`search failed: ${r.status} ${r.text}`);
  }
  const before = { ...server.counts };
  const latencies = [];
  let byVector = 0;
  let reranked = 0;
  for (let i = 0; i < CONFIG.requests; i++) {
    const [ms, r] = await timed(() => search(QUERIES[i % QUERIES.length]));
    if (r.status !== 200) throw new Error(`search failed: ${r.status} ${r.text}`);
    latencies.push(ms);
    byVector += r.json.results.filter((x) => x.vector_rank != null).length;
    reranked += r.json.results.filter((x) => x.rerank_score != null).length;
  }
  return {
    client_ms: stats(latencies),
    embedding_calls_per_search: round((server.counts.embeddings - before.embeddings) / CONFIG.requests, 2),
    rerank_calls_per_search: round((server.counts.rerank - before.rerank) / CONFIG.requests, 2),
    results_found_by_vector: round(byVector / CONFIG.requests, 2),
    results_reranked: round(reranked / CONFIG.requests, 2),
  };
}

async function main() {
  await mkdir(OUT, { recursive: true });
  log(`hybrid benchmark: levels ${CONFIG.levels.join(", ")} chunks, ${CONFIG.dimensions} dimensions, ` +
    `embedding delay ${CONFIG.embedDelayMs} ms, rerank delay ${CONFIG.rerankDelayMs} ms, ${CONFIG.requests} searches per level`);
  const corpus = await gatherCorpus();
  const server = await startModelServer();
  const vars = {
    OPENAI_API_KEY: "bench-key",
    OPENAI_BASE_URL: server.base,
    EMBEDDINGS_MODEL: MODEL,
    SEMANTIC_TIMEOUT_SECONDS: "5",
  };
  const report = {
    started_at: new Date().toISOString(),
    config: { ...CONFIG, model: MODEL },
    levels: [],
    notes: [
      "client_ms: wall time of POST /search from Node to the Worker in wrangler's local runtime, including one embedding call (and with rerank, one rerank call) to a local server that answers after the fixed delay.",
      "backfill: from the scheduled run that starts it to the last chunk's vector written; chunks were inserted by SQL, then embedded by the Worker's own sync in batches.",
      "disk: the SQLite files of the vector index objects. memory: the in-memory index (VectorSet::memory_bytes, from the core bench) is codes (1 byte per dimension) plus 12 bytes per vector.",
    ],
  };
  const worker = await startWorker({ vars, testScheduled: true, inspector: process.env.BENCH_INSPECTOR === "1" });
  try {
    const { key } = await worker.newAccount("bench");
    const api = client(worker, key);
    const made = await api.post("/chatbot/create", { body: { name: "Handbook", rate_limit: [100, 1] } });
    if (made.status !== 200) throw new Error(`creating a chatbot: ${made.status} ${made.text}`);
    const bot = made.json;
    const bots = { bot };
    for (const [i, level] of CONFIG.levels.entries()) {
      let counts = await chunkCounts(worker, bots);
      await seedBySql(worker, bot.uuid, corpus.handbook, level - counts.bot, 300 + i, `hybrid${level}`);
      counts = await chunkCounts(worker, bots);
      const embeddedBefore = server.counts.embedded_texts;
      log(`level ${level}: ${counts.bot} chunks; back-filling vectors`);
      const fill = await backfill(worker, bot.uuid);
      const embedded = server.counts.embedded_texts - embeddedBefore;
      log(`  ${embedded} chunks embedded in ${fill.seconds} s; ${CONFIG.warmup} warm-up then ${CONFIG.requests} searches`);
      const hybrid = await measureSearch(worker, key, bot.uuid, server);
      log(`  hybrid p50 ${hybrid.client_ms.p50} ms, p99 ${hybrid.client_ms.p99} ms`);
      report.levels.push({
        level,
        chunks_in_chatbot: counts.bot,
        backfill: { ...fill, chunks_embedded: embedded, chunks_per_s: round(embedded / Math.max(fill.seconds, 0.1), 1) },
        hybrid,
        vector_index_disk_bytes: await vectorIndexBytes(worker.stateDir),
      });
    }
    // The reranker on top, at the largest level: a restart with RERANK_MODEL set, same state.
    log("restarting with a reranker");
    worker.vars.RERANK_MODEL = "hashed-overlap";
    await worker.restart();
    const last = report.levels.at(-1);
    last.hybrid_rerank = await measureSearch(worker, key, bot.uuid, server);
    log(`  ${last.chunks_in_chatbot} chunks, hybrid and rerank p50 ${last.hybrid_rerank.client_ms.p50} ms, p99 ${last.hybrid_rerank.client_ms.p99} ms`);
  } finally {
    await worker.dispose();
    await server.close();
  }
  report.total_seconds = round((performance.now() - T0) / 1000, 1);
  await writeFile(path.join(OUT, "hybrid.json"), JSON.stringify(report, null, 2) + "\n");

  console.log(`\nHybrid search (words and meaning fused): POST /chatbot/{uuid}/search, limit ${CONFIG.searchLimit}, ` +
    `embedding server delay ${CONFIG.embedDelayMs} ms per call (ms)`);
  console.log(table(
    report.levels.map((l) => [
      l.chunks_in_chatbot, l.hybrid.client_ms.p50, l.hybrid.client_ms.p99,
      round(l.hybrid.client_ms.p50 - CONFIG.embedDelayMs), l.hybrid.embedding_calls_per_search,
      l.hybrid_rerank ? l.hybrid_rerank.client_ms.p50 : "-", l.hybrid_rerank ? l.hybrid_rerank.client_ms.p99 : "-",
      l.backfill.chunks_per_s, (l.vector_index_disk_bytes / 2 ** 20).toFixed(1),
    ]),
    ["chunks", "p50", "p99", "p50 - delay", "embed calls", "+rerank p50", "+rerank p99", "backfill chunks/s", "disk MiB"],
  ));
  console.log(`\nTotal ${report.total_seconds} s. Full figures: ${path.relative(process.cwd(), path.join(OUT, "hybrid.json"))}`);
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
