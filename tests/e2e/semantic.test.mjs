// Search by meaning: a local OpenAI-compatible server plays the embedding and rerank models,
// with vectors this file controls, and the Worker fuses them with search by words.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  startWorker, startServer, client, newChatbot, sleep, FAKE_KEY,
} from "./suite.mjs";

// A toy embedding with meaning this file decides: every word counts for the concepts it names,
// plus a little of its own hashed dimension so no two texts are identical.
const CONCEPTS = [
  ["ship", "shipping", "send", "deliver", "delivery", "parcel", "order", "post"],
  ["abroad", "international", "overseas", "another", "country", "nation", "worldwide", "foreign"],
  ["refund", "refunds", "money", "reimburse", "paid"],
  ["password", "sign-in", "login", "credentials", "reset"],
  ["days", "long", "time", "within", "soon"],
];
const WORDS_DIMS = 27;
const DIMS = CONCEPTS.length + WORDS_DIMS;

function embed(text) {
  const v = new Array(DIMS).fill(0);
  for (const word of text.toLowerCase().match(/[a-z-]+/g) ?? []) {
    CONCEPTS.forEach((words, i) => { if (words.includes(word)) v[i] += 1; });
    let h = 7;
    for (const c of word) h = (h * 31 + c.charCodeAt(0)) % 1_000_003;
    v[CONCEPTS.length + (h % WORDS_DIMS)] += 0.15;
  }
  if (v.every((x) => x === 0)) v[DIMS - 1] = 1;
  return v;
}

/**
 * The model server. `state.embeddings` is "ok", "fail" (HTTP 500), "hang" (never answers),
 * "wrong" (vectors of two widths), "passages-fail" (HTTP 500 for stored passages, which hold a
 * heading and a text on two lines; questions are answered) or "passages-narrow" (passages get
 * vectors of another width than the index's); `state.overrides` maps a text to the vector
 * answered for it.
 * Every request body is kept in `state.calls`.
 */
async function startSemanticServer() {
  const state = { embeddings: "ok", overrides: new Map(), calls: [], rerank: null };
  const server = await startServer(async (req, res, raw) => {
    const body = raw ? JSON.parse(raw) : {};
    const url = new URL(req.url, "http://x");
    state.calls.push({ path: url.pathname, body, auth: req.headers.authorization });
    const json = (status, value) => {
      res.writeHead(status, { "Content-Type": "application/json" });
      res.end(JSON.stringify(value));
    };
    if (url.pathname === "/v1/embeddings") {
      if (state.embeddings === "fail") return json(500, { error: { message: "the model crashed" } });
      if (state.embeddings === "hang") return; // never answers
      const passages = body.input.some((text) => text.includes("\n"));
      if (state.embeddings === "passages-fail" && passages) return json(500, { error: { message: "the model crashed" } });
      if (state.embeddings === "passages-narrow" && passages) {
        return json(200, { object: "list", model: body.model, data: body.input.map((_, index) => ({ object: "embedding", index, embedding: [1, 0, 0, 1] })) });
      }
      const data = body.input.map((text, index) => ({
        object: "embedding",
        index,
        embedding: state.embeddings === "wrong" && index === 0 ? [1, 0, 0] : (state.overrides.get(text) ?? embed(text)),
      }));
      if (state.embeddings === "wrong" && data.length === 1) data.push({ object: "embedding", index: 1, embedding: embed("x") });
      return json(200, { object: "list", data, model: body.model });
    }
    if (url.pathname === "/v1/rerank") {
      const score = state.rerank ?? ((doc) => (doc.includes("sign-in") ? 0.99 : 0.1));
      const results = body.documents.map((doc, index) => ({ index, relevance_score: score(doc) }));
      results.sort((a, b) => b.relevance_score - a.relevance_score);
      return json(200, { results: results.slice(0, body.top_n) });
    }
    json(404, { error: { message: "not here" } });
  });
  return { ...server, state, base: `${server.base}/v1` };
}

function semanticVars(server, extra = {}) {
  return {
    OPENAI_API_KEY: FAKE_KEY,
    OPENAI_BASE_URL: server.base,
    EMBEDDINGS_MODEL: "toy-embed",
    SEMANTIC_TIMEOUT_SECONDS: "1",
    MODEL_TIMEOUT_SECONDS: "2",
    ...extra,
  };
}

const PAIRS = [
  { question: "Do you ship abroad?", answer: "Yes, we deliver worldwide." },
  { question: "How do I reset my password?", answer: "Use the link on the sign-in page." },
  { question: "Can I get a refund?", answer: "Refunds are paid within 14 days." },
];

async function shop(api, name = "Shop") {
  const bot = await newChatbot(api, { name });
  const sources = [];
  for (const pair of PAIRS) {
    const r = await api.post(`/chatbot/${bot.uuid}/data-source/qa`, { body: pair });
    assert.equal(r.status, 200, r.text);
    sources.push(r.json);
  }
  return { bot, sources };
}

async function search(api, bot, query, limit = 5) {
  const r = await api.post(`/chatbot/${bot.uuid}/search`, { body: { query, limit } });
  assert.equal(r.status, 200, r.text);
  return r.json.results;
}

/** Runs `check` until it stops throwing; its last error when `timeoutMs` passes first. */
async function until(check, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
    }
    await sleep(200);
  }
}

/**
 * Vectors stored in every chatbot's index, as [{chunk_id, source}]. The signs an index wakes up
 * from are kept beside them: the same rows, never one more or one fewer.
 */
async function storedVectors(worker) {
  const vectors = await worker.durableObjectRows("VectorIndex", "SELECT chunk_id, source FROM vectors ORDER BY chunk_id");
  const signs = await worker.durableObjectRows("VectorIndex", "SELECT chunk_id, source FROM signs ORDER BY chunk_id");
  assert.deepEqual(signs, vectors, "every stored vector has its signs, and no signs outlive their vector");
  return vectors;
}

/** Waits until the indexes hold `n` vectors (they are written after the create call answers). */
async function vectorsSettle(worker, n) {
  await until(async () => assert.equal((await storedVectors(worker)).length, n), 20_000);
}

test("a question sharing no word with the right Q&A pair finds it by meaning alone", async () => {
  const server = await startSemanticServer();
  const worker = await startWorker({ vars: semanticVars(server), testScheduled: true });
  const account = await worker.newAccount();
  const api = client(worker, account.key);
  const { bot, sources } = await shop(api);
  await vectorsSettle(worker, 3);

  const results = await search(api, bot, "Can my parcel reach another nation?");
  assert.ok(results.length >= 1);
  assert.equal(results[0].data_source_uuid, sources[0].uuid);
  assert.equal(results[0].lexical_rank, null);
  assert.equal(results[0].vector_rank, 1);
  assert.ok(results[0].vector_similarity > 0.5);
  assert.equal(results[0].rerank_score, null);

  // Each chunk was embedded once (its heading with its text), with the configured model and
  // key, plus one call for the question; a further question costs exactly one more call.
  const embedCalls = () => server.state.calls.filter((c) => c.path === "/v1/embeddings");
  const inputs = embedCalls().flatMap((c) => c.body.input);
  assert.equal(inputs.filter((t) => t.startsWith("Do you ship abroad?")).length, 1);
  assert.equal(inputs.length, 4);
  assert.ok(embedCalls().every((c) => c.body.model === "toy-embed" && c.auth === `Bearer ${FAKE_KEY}`));
  const before = embedCalls().length;
  await search(api, bot, "refund");
  assert.equal(embedCalls().length, before + 1);

  // Without the vector path (the same words, no embedding model) nothing is found.
  const words = await startWorker();
  const other = client(words, (await words.newAccount()).key);
  const plain = await shop(other);
  assert.deepEqual(await search(other, plain.bot, "Can my parcel reach another nation?"), []);
  await words.dispose();
});

test("fusion puts what both lists agree on first, and a reranker decides the order it saw", async () => {
  const server = await startSemanticServer();
  // The question "refund" matches the refund pair by its words; its vector is made to lie
  // closest to the shipping pair, then to the refund pair.
  const unit = (v) => { const n = Math.hypot(...v); return v.map((x) => x / n); };
  const shipping = unit(embed("Do you ship abroad?\nYes, we deliver worldwide."));
  const refund = unit(embed("Can I get a refund?\nRefunds are paid within 14 days."));
  server.state.overrides.set("refund", shipping.map((x, i) => x + 0.6 * refund[i]));
  const worker = await startWorker({ vars: semanticVars(server) });
  const api = client(worker, (await worker.newAccount()).key);
  const { bot, sources } = await shop(api);
  await vectorsSettle(worker, 3);

  const fused = await search(api, bot, "refund", 3);
  assert.equal(fused[0].data_source_uuid, sources[2].uuid);
  assert.equal(fused[0].lexical_rank, 1);
  assert.equal(fused[0].vector_rank, 2);
  assert.equal(fused[1].data_source_uuid, sources[0].uuid);
  assert.equal(fused[1].lexical_rank, null);
  assert.equal(fused[1].vector_rank, 1);
  assert.ok(fused[0].score >= fused[1].score);

  await worker.stop();
  worker.vars.RERANK_MODEL = "toy-rerank";
  await worker.start();
  const reranked = await search(api, bot, "refund", 3);
  // The toy reranker scores the password pair highest: it comes first, with its score.
  assert.equal(reranked[0].data_source_uuid, sources[1].uuid);
  assert.equal(reranked[0].rerank_score, 0.99);
  assert.ok(reranked.every((r) => typeof r.rerank_score === "number"));
  const rerankCall = server.state.calls.findLast((c) => c.path === "/v1/rerank");
  assert.equal(rerankCall.body.model, "toy-rerank");
  assert.equal(rerankCall.body.query, "refund");
  assert.equal(rerankCall.body.documents.length, 3);
});

test("an embedder that fails, hangs or answers nonsense leaves search to the words", async () => {
  const server = await startSemanticServer();
  const worker = await startWorker({ vars: semanticVars(server), testScheduled: true });
  const api = client(worker, (await worker.newAccount()).key);
  const { bot, sources } = await shop(api);
  await vectorsSettle(worker, 3);

  for (const mode of ["fail", "hang", "wrong"]) {
    server.state.embeddings = mode;
    for (let i = 0; i < 3; i++) {
      const results = await search(api, bot, "refund");
      assert.equal(results[0].data_source_uuid, sources[2].uuid, mode);
      assert.equal(results[0].vector_rank, null, mode);
      assert.equal(results[0].lexical_rank, 1, mode);
    }
  }
  // One log line per outage, not one per search.
  const outages = worker.log.split("\n").filter((l) => l.includes("upstream failure") && l.includes("embedding questions"));
  assert.equal(outages.length, 1, outages.join("\n"));

  // A source added while the embedder is down is stored and searchable by its words, and gets
  // its vector once the embedder is back.
  server.state.embeddings = "fail";
  const late = await api.post(`/chatbot/${bot.uuid}/data-source/qa`, {
    body: { question: "Is there a warranty?", answer: "Two years on every device." },
  });
  assert.equal(late.status, 200);
  assert.equal(late.json.status, "success");
  assert.equal((await search(api, bot, "warranty"))[0].data_source_uuid, late.json.uuid);
  await sleep(500);
  assert.equal((await storedVectors(worker)).length, 3);
  // Its retry waits a few seconds after the failure; the scheduled run then embeds it.
  server.state.embeddings = "ok";
  await until(async () => {
    await worker.runScheduled();
    assert.equal((await storedVectors(worker)).length, 4);
  }, 30_000);
});

test("a chunk whose vector failed or was refused is found by its words only, and gets its vector when due", async () => {
  const server = await startSemanticServer();
  const worker = await startWorker({ vars: semanticVars(server) });
  const api = client(worker, (await worker.newAccount()).key);
  const { bot, sources } = await shop(api);
  await vectorsSettle(worker, 3);
  const refundChunk = (await worker.sql(`SELECT id FROM chunks WHERE data_source_uuid = '${sources[2].uuid}'`))[0].id;

  // The refund pair is deleted and a new pair takes its chunk's id while passages cannot be
  // embedded: the refund vector must not stand for the new pair.
  server.state.embeddings = "passages-fail";
  assert.equal((await api.post(`/data-source/${sources[2].uuid}/delete`)).status, 200);
  const parking = (await api.post(`/chatbot/${bot.uuid}/data-source/qa`, {
    body: { question: "Is there customer parking?", answer: "Free parking behind the building." },
  })).json;
  const parkingChunk = (await worker.sql(`SELECT id FROM chunks WHERE data_source_uuid = '${parking.uuid}'`))[0].id;
  assert.equal(parkingChunk, refundChunk, "the database gave the new chunk the deleted one's id");
  await until(async () => assert.deepEqual((await storedVectors(worker)).map((v) => v.source).sort(), [sources[0].uuid, sources[1].uuid].sort()));
  const moneyBack = await search(api, bot, "I want my money reimbursed");
  assert.ok(moneyBack.every((r) => r.data_source_uuid !== parking.uuid), JSON.stringify(moneyBack));
  assert.equal((await search(api, bot, "parking"))[0].data_source_uuid, parking.uuid, "found by its words meanwhile");

  // The embedder back, the failed chunk is embedded when its retry is due, with nothing else
  // changing.
  server.state.embeddings = "ok";
  await until(async () => assert.ok((await storedVectors(worker)).some((v) => v.source === parking.uuid)), 30_000);

  // Vectors the index cannot hold (another width) are not forgotten either.
  server.state.embeddings = "passages-narrow";
  const warranty = (await api.post(`/chatbot/${bot.uuid}/data-source/qa`, {
    body: { question: "Is there a warranty?", answer: "Two years on every device." },
  })).json;
  await until(() => assert.ok(worker.log.includes("indexing embedded chunks")), 20_000);
  assert.equal((await storedVectors(worker)).length, 3);
  server.state.embeddings = "ok";
  await until(async () => assert.ok((await storedVectors(worker)).some((v) => v.source === warranty.uuid)), 30_000);
  assert.equal((await worker.sql("SELECT COUNT(*) AS n FROM vector_outbox"))[0].n, 0);
});

test("vectors are back-filled when embeddings are turned on, rebuilt when the model changes, and removed with their source and chatbot", async () => {
  const server = await startSemanticServer();
  const worker = await startWorker({ testScheduled: true });
  const api = client(worker, (await worker.newAccount()).key);
  const { bot, sources } = await shop(api);
  const second = await shop(api, "Second shop");
  await worker.runScheduled();
  assert.equal((await storedVectors(worker)).length, 0);

  // Turned on: the scheduled run embeds every existing chunk.
  await worker.stop();
  Object.assign(worker.vars, semanticVars(server));
  await worker.start();
  await worker.runScheduled();
  await vectorsSettle(worker, 6);
  assert.equal((await search(api, bot, "Can my parcel reach another nation?"))[0].data_source_uuid, sources[0].uuid);

  // Another model: everything is embedded again with it, never mixed with the old vectors.
  await worker.stop();
  worker.vars.EMBEDDINGS_MODEL = "toy-embed-2";
  await worker.start();
  const callsBefore = server.state.calls.length;
  await worker.runScheduled();
  await until(async () => {
    const rebuilt = server.state.calls.slice(callsBefore).filter((c) => c.path === "/v1/embeddings");
    assert.equal(rebuilt.reduce((n, c) => n + c.body.input.length, 0), 6);
    assert.ok(rebuilt.every((c) => c.body.model === "toy-embed-2"));
  });
  await vectorsSettle(worker, 6);
  const results = await search(api, bot, "Can my parcel reach another nation?");
  assert.equal(results[0].vector_rank, 1);

  // A deleted source takes its vector with it; a deleted chatbot empties its index.
  assert.equal((await api.post(`/data-source/${sources[0].uuid}/delete`)).status, 200);
  await vectorsSettle(worker, 5);
  assert.ok((await storedVectors(worker)).every((v) => v.source !== sources[0].uuid));
  assert.equal((await api.del(`/chatbot/${second.bot.uuid}/delete`)).status, 200);
  await worker.runScheduled();
  await vectorsSettle(worker, 2);
  const left = new Set((await storedVectors(worker)).map((v) => v.source));
  assert.deepEqual([...left].sort(), [sources[1].uuid, sources[2].uuid].sort());
  const outbox = await worker.sql("SELECT COUNT(*) AS n FROM vector_outbox");
  assert.equal(outbox[0].n, 0);
});

test("another account's vectors never appear, and an agent's sources still bound the vector path", async () => {
  const server = await startSemanticServer();
  const worker = await startWorker({ vars: semanticVars(server) });
  const a = client(worker, (await worker.newAccount("a")).key);
  const b = client(worker, (await worker.newAccount("b")).key);
  const mine = await shop(a, "A");
  const theirs = await newChatbot(b, { name: "B" });
  const secret = await b.post(`/chatbot/${theirs.uuid}/data-source/qa`, {
    body: { question: "Do you send parcels to foreign countries?", answer: "Only within the EU." },
  });
  assert.equal(secret.status, 200);
  await vectorsSettle(worker, 4);

  const results = await search(a, mine.bot, "Can my parcel reach another nation?", 10);
  assert.ok(results.length > 0);
  assert.ok(results.every((r) => r.data_source_uuid !== secret.json.uuid));
  const other = await search(b, theirs, "Can my parcel reach another nation?", 10);
  assert.deepEqual(other.map((r) => r.data_source_uuid), [secret.json.uuid]);
  // Searching someone else's chatbot is a 404, whatever the vectors hold.
  assert.equal((await a.post(`/chatbot/${theirs.uuid}/search`, { body: { query: "parcel" } })).status, 404);

  // An agent limited to the refund pair never sees the shipping pair, however close it lies.
  const [agent] = (await a.get(`/chatbot/${mine.bot.uuid}/agents`)).json;
  const scoped = await a.post(`/agent/${agent.uuid}/update`, {
    body: { data_source_uuids: [mine.sources[2].uuid], use_all_sources: false },
  });
  if (scoped.status === 200) {
    const limited = await a.post(`/chatbot/${mine.bot.uuid}/search`, {
      body: { query: "Can my parcel reach another nation?", agent_uuid: agent.uuid, limit: 10 },
    });
    assert.equal(limited.status, 200, limited.text);
    assert.ok(limited.json.results.every((r) => r.data_source_uuid === mine.sources[2].uuid));
  } else {
    assert.fail(`scoping the agent failed: ${scoped.status} ${scoped.text}`);
  }
});
