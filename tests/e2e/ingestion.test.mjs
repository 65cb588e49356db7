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
    if (url.pathname === "/long") {
      const text = largeText(600 * 1024, "The long page names the saffron heron.", 11);
      res.writeHead(200, { "Content-Type": "text/html" });
      return res.end(`<html><head><title>Long page</title></head><body>${text.split("\n\n").map((p) => `<p>${p}</p>`).join("")}</body></html>`);
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

/**
 * The steps that read `source`, as the Worker logged them: each one within the platform's
 * budget of 50 D1 calls plus subrequests per invocation, and the module's memory under the
 * 128 MB an isolate may hold (which also holds the JavaScript heap).
 */
function assertStepsWithinLimits(source, kinds) {
  const steps = worker.ingestionSteps.filter((s) => s.record === source.uuid);
  for (const kind of kinds) assert.ok(steps.some((s) => s.step === kind), `a ${kind} step ran: ${JSON.stringify(steps)}`);
  for (const s of steps) {
    assert.ok(s.d1_calls + s.subrequests <= 50, `within the call budget: ${JSON.stringify(s)}`);
    // Steps that share an invocation share its budget too.
    assert.ok(s.invocation_calls >= s.d1_calls + s.subrequests && s.invocation_calls <= 50, `within the invocation's budget: ${JSON.stringify(s)}`);
    assert.equal(s.within_budget, true, JSON.stringify(s));
    assert.ok(s.wasm_memory_bytes > 0 && s.wasm_memory_bytes < 96 * 2 ** 20, `memory: ${JSON.stringify(s)}`);
  }
  return steps;
}

/** One line on the steps' figures for the test's output: per kind, how many, the most calls,
 * the longest, and the module's memory at most. */
function stepSummary(steps) {
  const byKind = {};
  for (const s of steps) {
    const k = (byKind[s.step] ??= { n: 0, calls: 0, ms: 0 });
    k.n++;
    k.calls = Math.max(k.calls, s.d1_calls + s.subrequests);
    k.ms = Math.max(k.ms, s.duration_ms);
  }
  const memory = Math.max(...steps.map((s) => s.wasm_memory_bytes ?? 0)) / 2 ** 20;
  return `steps ${JSON.stringify(byKind)}; module memory at most ${memory.toFixed(1)} MiB`;
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
  const steps = assertStepsWithinLimits(done, ["fetch_page"]);
  assert.deepEqual(steps.map((s) => s.outcome), ["retry", "retry", "done"]);
  assert.ok((await search(bot, "persistent pangolin")).length > 0);
});

test("a page long enough to be read in slices says when it was checked and how often it is refreshed; a long file says neither", { timeout: 240_000 }, async () => {
  const bot = await newChatbot(api, { name: "Long" });
  const page = await api.post(`/chatbot/${bot.uuid}/data-source/url`, { body: { url: `${site.base}/long`, refresh: "weekly" } });
  assert.equal(page.status, 200, page.text);
  const file = await upload(worker, key, bot.uuid, { name: "long.txt", bytes: Buffer.from(largeText(600 * 1024, "The long file names the umber gecko.", 12)), type: "text/plain" });
  assert.equal(file.status, 200, file.text);
  const [read, uploaded] = [await settled(api, page.json.uuid, 200_000), await settled(api, file.json.uuid, 200_000)];
  for (const source of [read, uploaded]) {
    assert.equal(source.status, "success", source.meta_json);
    await assertIndexedOnce(source, bot.uuid);
  }
  assert.ok(assertStepsWithinLimits(read, ["fetch_page"]).some((s) => s.step !== "fetch_page"), "read in slices");
  const meta = JSON.parse(read.meta_json);
  assert.equal(meta.refresh, "weekly");
  assert.match(meta.last_checked_at, /^\d{4}-/);
  assert.match(meta.last_changed_at, /^\d{4}-/);
  const fileMeta = JSON.parse(uploaded.meta_json);
  assert.deepEqual([fileMeta.refresh, fileMeta.last_checked_at, fileMeta.last_changed_at], [undefined, undefined, undefined], uploaded.meta_json);
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

test("small uploads are read in one step each; a small file with a long text is handed on to be staged", { timeout: 300_000 }, async () => {
  const bot = await newChatbot(api, { name: "Burst" });
  const texts = Array.from({ length: 6 }, (_, i) => ({
    name: `note-${i}.txt`,
    bytes: Buffer.from(largeText(20_000, `The burst marker number ${i} names the tawny kingfisher ${i}.`, 100 + i)),
    type: "text/plain",
  }));
  // 160 pages of compressed text: a file of about 280 KB whose text is about 750 KB, longer
  // than one step indexes, though the file is small enough to be promised one step.
  const pdf = largePdf(160, "The cobalt axolotl signs the ferry manifest at dawn.", 5);
  assert.ok(pdf.length < 450 * 1024, `${pdf.length} bytes`);
  const uploads = await Promise.all([...texts, { name: "dense.pdf", bytes: pdf, type: "application/pdf" }]
    .map((file) => upload(worker, key, bot.uuid, file)));
  for (const r of uploads) assert.equal(r.status, 200, r.text);
  const done = [];
  for (const r of uploads) {
    const source = await settled(api, r.json.uuid, 240_000);
    assert.equal(source.status, "success", source.meta_json);
    await assertIndexedOnce(source, bot.uuid);
    done.push(source);
  }
  const textSteps = done.slice(0, -1).flatMap((source) => assertStepsWithinLimits(source, ["extract_file"]));
  // Each within the bound a small upload promises.
  assert.ok(textSteps.every((s) => s.step === "extract_file" && s.outcome === "done" && s.d1_calls + s.subrequests <= 8), JSON.stringify(textSteps));
  const pdfSteps = assertStepsWithinLimits(done.at(-1), ["extract_file", "index_slice"]);
  const extracts = pdfSteps.filter((s) => s.step === "extract_file");
  assert.equal(extracts.length, 2, `handed on once, then staged: ${JSON.stringify(pdfSteps)}`);
  assert.ok(extracts[0].d1_calls + extracts[0].subrequests <= 8, `the small step kept its bound: ${JSON.stringify(extracts[0])}`);
  for (let i = 0; i < texts.length; i++) {
    const hits = await search(bot, `burst marker number ${i} tawny kingfisher`);
    assert.ok(hits.some((h) => h.text.includes(`number ${i} names`)), JSON.stringify(hits.slice(0, 2)));
  }
  const hits = await search(bot, "cobalt axolotl ferry manifest");
  assert.ok(hits.some((h) => h.text.includes("cobalt axolotl")), JSON.stringify(hits.slice(0, 2)));
});

/** About `bytes` of Japanese-and-Chinese text in paragraphs, `marker` in the last one. */
function largeCjkText(bytes, marker) {
  const words = ["山", "川", "海", "風", "雨", "雪", "花", "鳥", "月", "星", "森", "道", "町", "村", "空",
    "春", "夏", "秋", "冬", "朝", "夜", "石", "橋", "門", "庭", "田", "畑", "港", "船", "駅"];
  let s = 17;
  const next = () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0);
  const parts = [];
  let size = 0;
  while (size < bytes) {
    let p = "";
    const n = 40 + (next() % 60);
    for (let i = 0; i < n; i++) p += words[next() % words.length] + (i % 12 === 11 ? "。" : "");
    parts.push(p + "。");
    size += Buffer.byteLength(p) + 5;
  }
  parts.push(marker);
  return parts.join("\n\n");
}

test("a large CJK text read in slices is indexed as character pairs", { timeout: 300_000 }, async (t) => {
  const bot = await newChatbot(api, { name: "CJK" });
  const marker = "琥珀色の鯨が灯台で歌う。";
  const text = largeCjkText(1_600_000, marker);
  const r = await upload(worker, key, bot.uuid, { name: "cjk.txt", bytes: Buffer.from(text), type: "text/plain" });
  assert.equal(r.status, 200, r.text);
  const done = await settled(api, r.json.uuid, 300_000);
  assert.equal(done.status, "success", done.meta_json);
  const chunks = await assertIndexedOnce(done, bot.uuid);
  const steps = assertStepsWithinLimits(done, ["extract_file", "index_slice"]);
  t.diagnostic(stepSummary(steps));
  assert.ok(steps.filter((s) => s.step === "index_slice").length >= 2, "read in slices");
  const [row] = await worker.sql(
    `SELECT COUNT(*) AS n FROM chunks_cjk WHERE rowid IN (SELECT id FROM chunks WHERE data_source_uuid = '${done.uuid}')`,
  );
  assert.equal(row.n, chunks, "every chunk holds CJK text, so every chunk has its pairs");
  const results = await search(bot, "琥珀色の鯨");
  assert.ok(results.length > 0 && results[0].text.includes("琥珀色の鯨"), JSON.stringify(results.slice(0, 2)));
  // Deleting the source takes its pairs with its chunks.
  const d = await api.post(`/data-source/${done.uuid}/delete`);
  assert.equal(d.status, 200, d.text);
  const [left] = await worker.sql("SELECT (SELECT COUNT(*) FROM chunks_cjk) - (SELECT COUNT(*) FROM chunks_cjk c JOIN chunks k ON k.id = c.rowid) AS orphans");
  assert.equal(left.orphans, 0);
});

// The largest files each get a Worker of their own, as a fresh isolate would on Cloudflare.
async function freshAccount() {
  ({ worker, api, key } = await startAccount());
}

// Its reading holds the text once and makes its chunks a slice at a time as it stages them.
// 20 MiB is the largest accepted upload; this text is 64 KiB short of it.
test("a table too large for one step to hold fails with the reason, within the step's memory", { timeout: 300_000 }, async () => {
  const bot = await newChatbot(api, { name: "Tables" });
  // Short fields: half a million of them take many times the file's size as strings.
  const fields = { name: "fields.csv", bytes: Buffer.from("a,b\n".repeat(250_001)), type: "text/csv" };
  // Few fields under long column names, which every row repeats once written out.
  const titles = Array.from({ length: 5 }, (_, i) => `Quantity_ordered_for_the_warehouse_region_north_and_south_in_units_${i}`);
  const rows = Array.from({ length: 90_000 }, (_, i) => `${i},a,b,c,d`);
  const long = { name: "titles.csv", bytes: Buffer.from([titles.join(","), ...rows].join("\n")), type: "text/csv" };
  for (const [file, reason] of [[fields, /more than 500000 fields/], [long, /more than the 28 MiB one source may hold/]]) {
    const r = await upload(worker, key, bot.uuid, file);
    assert.equal(r.status, 200, r.text);
    const source = await settled(api, r.json.uuid, 240_000);
    assert.equal(source.status, "error", file.name);
    assert.match(JSON.parse(source.meta_json).error, reason);
    assertStepsWithinLimits(source, ["extract_file"]);
  }
});

test("a 20 MiB text upload is read in slices, ends in success and is searchable", { timeout: 600_000 }, async (t) => {
  await freshAccount();
  const bot = await newChatbot(api, { name: "Big text" });
  const marker = "The saltwater quokka keeps the lighthouse ledger in Tromsø.";
  const text = largeText(20 * 1024 * 1024 - 64 * 1024, marker);
  const r = await upload(worker, key, bot.uuid, { name: "big.txt", bytes: Buffer.from(text), type: "text/plain" });
  assert.equal(r.status, 200, r.text);
  const done = await settled(api, r.json.uuid, 540_000);
  assert.equal(done.status, "success", done.meta_json);
  assert.ok(done.tokens > 2_500_000, `${done.tokens} tokens`);
  const chunks = await assertIndexedOnce(done, bot.uuid);
  assert.ok(chunks > 20_000, `${chunks} chunks`);
  t.diagnostic(stepSummary(assertStepsWithinLimits(done, ["extract_file", "index_slice"])));
  const results = await search(bot, "saltwater quokka lighthouse ledger");
  assert.ok(results.some((h) => h.text.includes("saltwater quokka")), JSON.stringify(results.slice(0, 2)));
});

test("a 20 MiB PDF is read from R2 in the consumer, ends in success and is searchable", { timeout: 600_000 }, async (t) => {
  await freshAccount();
  const bot = await newChatbot(api, { name: "Big PDF" });
  // 500 pages of text (2.4 MB of it) each with a picture, 19.8 MiB in all: close to the
  // largest accepted upload. (A PDF of nothing but compressed text that large would hold
  // about 60 MB of text, over what the PDF reader takes from one file: 20 million glyphs.)
  const pdf = largePdf(500, "The obsidian pelican audits the harbour tolls every Thursday.", 11, { totalBytes: 20 * 1024 * 1024 - 256 * 1024 });
  assert.ok(pdf.length > 19.5 * 2 ** 20, `${pdf.length} bytes`);
  const r = await upload(worker, key, bot.uuid, { name: "big.pdf", bytes: pdf, type: "application/pdf" });
  assert.equal(r.status, 200, r.text);
  const done = await settled(api, r.json.uuid, 600_000);
  assert.equal(done.status, "success", done.meta_json);
  await assertIndexedOnce(done, bot.uuid);
  t.diagnostic(stepSummary(assertStepsWithinLimits(done, ["extract_file", "index_slice"])));
  const results = await search(bot, "obsidian pelican harbour tolls");
  assert.ok(results.some((h) => h.text.includes("obsidian pelican")), JSON.stringify(results.slice(0, 2)));
});
