// Reading sources on the ingestion queue: steps retried after a failure, given up on through
// the dead-letter queue, and large documents read in bounded slices without a duplicate chunk.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { startAccount, startServer, newChatbot, settled, upload } from "./suite.mjs";
import { largePdf, largeText } from "./large_docs.mjs";

let worker, api, key, site;
const hits = new Map();

before(async () => {
  site = await startServer((req, res) => {
    const url = new URL(req.url, "http://x");
    const n = (hits.get(url.pathname) ?? 0) + 1;
    hits.set(url.pathname, n);
    if (url.pathname === "/flaky" && n <= 2) {
      res.writeHead(503, { "Content-Type": "text/plain" });
      return res.end("busy");
    }
    if (url.pathname === "/down") {
      res.writeHead(503, { "Content-Type": "text/plain" });
      return res.end("down for good");
    }
    if (url.pathname === "/flaky") {
      res.writeHead(200, { "Content-Type": "text/html" });
      return res.end("<html><head><title>Third time</title></head><body><p>The persistent pangolin answers at last.</p></body></html>");
    }
    res.writeHead(404);
    res.end();
  });
  ({ worker, api, key } = await startAccount());
});

async function search(bot, query) {
  const r = await api.post(`/chatbot/${bot.uuid}/search`, { body: { query } });
  assert.equal(r.status, 200, r.text);
  return r.json.results;
}

/** Every chunk of a source once, positions 0..n-1, nothing left staged. */
async function assertIndexedOnce(source, botUuid) {
  const [row] = await worker.sql(
    `SELECT COUNT(*) AS n, COUNT(DISTINCT position) AS positions, MIN(position) AS first, MAX(position) AS last, ` +
    `(SELECT COUNT(*) FROM chunk_drafts WHERE data_source_uuid = '${source.uuid}') AS drafts, ` +
    `(SELECT COUNT(*) FROM chunks_fts_docsize) - (SELECT COUNT(*) FROM chunks) AS index_drift ` +
    `FROM chunks WHERE data_source_uuid = '${source.uuid}'`,
  );
  assert.ok(row.n > 0);
  assert.equal(row.positions, row.n, "no position twice");
  assert.equal(row.first, 0);
  assert.equal(row.last, row.n - 1);
  assert.equal(row.drafts, 0);
  assert.equal(row.index_drift, 0);
  assert.deepEqual(await worker.r2List(`chatbots/${botUuid}/staging/`), [], "no staged slice is left");
  return row.n;
}

test("a step that fails twice then succeeds ends in success", async () => {
  const bot = await newChatbot(api, { name: "Flaky" });
  const r = await api.post(`/chatbot/${bot.uuid}/data-source/url`, { body: { url: `${site.base}/flaky` } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.status, "await");
  const done = await settled(api, r.json.uuid, 60_000);
  assert.equal(done.status, "success", done.meta_json);
  assert.equal(done.title, "Third time");
  const meta = JSON.parse(done.meta_json);
  assert.equal(meta.error, undefined);
  assert.match(meta.last_checked_at, /^\d{4}-/);
  assert.equal(hits.get("/flaky"), 3);
  assert.ok((await search(bot, "persistent pangolin")).length > 0);
});

test("a step that always fails ends in error through the dead-letter queue, with the reason", async () => {
  const bot = await newChatbot(api, { name: "Down" });
  const r = await api.post(`/chatbot/${bot.uuid}/data-source/url`, { body: { url: `${site.base}/down` } });
  const done = await settled(api, r.json.uuid, 90_000);
  assert.equal(done.status, "error");
  assert.match(JSON.parse(done.meta_json).error, /HTTP 503/);
  // The first try and three retries (wrangler.toml: max_retries = 3).
  assert.equal(hits.get("/down"), 4);
});

// The largest files each get a Worker of their own, as a fresh isolate would on Cloudflare.
async function freshAccount() {
  ({ worker, api, key } = await startAccount());
}

// A 20 MiB text (the largest accepted upload) is not tested here: under `wrangler dev` its
// reading stops after staging when the isolate has done other work first (memory, see the
// ingestion issue's note). 4 MiB still takes the staged path (about 5,000 chunks, several slices).
test("a 4 MiB text upload is read in slices, ends in success and is searchable", async () => {
  await freshAccount();
  const bot = await newChatbot(api, { name: "Big text" });
  const marker = "The saltwater quokka keeps the lighthouse ledger in Tromsø.";
  const text = largeText(4 * 1024 * 1024, marker);
  const r = await upload(worker, key, bot.uuid, { name: "big.txt", bytes: Buffer.from(text), type: "text/plain" });
  assert.equal(r.status, 200, r.text);
  const done = await settled(api, r.json.uuid, 600_000);
  assert.equal(done.status, "success", done.meta_json);
  assert.ok(done.tokens > 500_000, `${done.tokens} tokens`);
  const chunks = await assertIndexedOnce(done, bot.uuid);
  assert.ok(chunks > 4_000, `${chunks} chunks`);
  const results = await search(bot, "saltwater quokka lighthouse ledger");
  assert.ok(results.some((h) => h.text.includes("saltwater quokka")), JSON.stringify(results.slice(0, 2)));
});

test("a large PDF is read from R2 in the consumer, ends in success and is searchable", async () => {
  await freshAccount();
  const bot = await newChatbot(api, { name: "Big PDF" });
  // 1,500 pages stalled a local Worker the same way the 20 MiB text does (see above).
  const pdf = largePdf(500, "The obsidian pelican audits the harbour tolls every Thursday.");
  const r = await upload(worker, key, bot.uuid, { name: "big.pdf", bytes: pdf, type: "application/pdf" });
  assert.equal(r.status, 200, r.text);
  const done = await settled(api, r.json.uuid, 600_000);
  assert.equal(done.status, "success", done.meta_json);
  await assertIndexedOnce(done, bot.uuid);
  const results = await search(bot, "obsidian pelican harbour tolls");
  assert.ok(results.some((h) => h.text.includes("obsidian pelican")), JSON.stringify(results.slice(0, 2)));
});
