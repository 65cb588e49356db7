// What a Rust panic in a request does to the Worker's other requests (README, "Panics"), and
// what the rate-limit object makes of JSON that is not a limit. The standard library for wasm32
// is built with panic=abort, so a panic aborts the Wasm instance; worker-build's shim then
// starts a fresh instance for the next call into it. This file runs the test-only build with
// the `panic-probe` cargo feature (build/panic-probe, built by scripts/test.sh), whose `fetch`
// panics on /__probe/panic and hands /__probe/rate-limiter/{name} bodies to the object as they
// are (src/probe.rs).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import path from "node:path";
import { ROOT, startWorker, client, streamMessage, sleep } from "./harness.mjs";
import { startModelServer, FAKE_KEY } from "./model_server.mjs";

const CONFIG = "tests/e2e/panic_probe.wrangler.toml";
const BUILD = path.join(ROOT, "build/panic-probe/worker/shim.mjs");

let worker, model, api, key;
before(async () => {
  if (!existsSync(BUILD)) {
    throw new Error(`${BUILD} is missing. scripts/test.sh (make test) builds it with \`build_worker build/panic-probe --features panic-probe\` (scripts/lib.sh); this test does not run without it.`);
  }
  model = await startModelServer();
  worker = await startWorker({ config: CONFIG, vars: { OPENAI_API_KEY: FAKE_KEY, OPENAI_BASE_URL: model.base } });
  key = (await worker.newAccount()).key;
  api = client(worker, key);
});
after(async () => {
  await worker?.dispose();
  await model?.close();
});

/** How a request ended: its status (and the start of its body), or how the connection failed. */
async function outcome(responsePromise, started = performance.now()) {
  try {
    const res = await responsePromise;
    const text = await res.text();
    return { status: res.status, body: text.slice(0, 120), text, ms: Math.round(performance.now() - started) };
  } catch (err) {
    return { error: String(err.cause?.code ?? err.name ?? err.message), ms: Math.round(performance.now() - started) };
  }
}

const panicOnce = () => outcome(fetch(`${worker.base}/__probe/panic`));

/** A request that can be given up on: `.result` settles with its outcome, `.abort()` drops it. */
function inFlight(urlPath, init = {}) {
  const controller = new AbortController();
  const headers = { Authorization: `Bearer ${key}`, "Content-Type": "application/json", ...init.headers };
  const result = outcome(fetch(worker.base + urlPath, { ...init, headers, signal: controller.signal }));
  return { result, abort: () => controller.abort() };
}

/** A streamed answer read as it arrives; `firstPiece` resolves once some of it came. */
function startStream(sessionUuid, query) {
  const controller = new AbortController();
  let gotFirst;
  const firstPiece = new Promise((resolve) => { gotFirst = resolve; });
  const started = performance.now();
  const result = (async () => {
    let text = "";
    try {
      const res = await fetch(`${worker.base}/api/v1/session/${sessionUuid}/message/stream`, {
        method: "POST",
        headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
        body: JSON.stringify({ query }),
        signal: controller.signal,
      });
      const decoder = new TextDecoder();
      for await (const piece of res.body) {
        text += decoder.decode(piece, { stream: true });
        gotFirst();
      }
      return { status: res.status, text, ms: Math.round(performance.now() - started) };
    } catch (err) {
      gotFirst();
      return { error: String(err.name ?? err.message), text, ms: Math.round(performance.now() - started) };
    }
  })();
  return { firstPiece, result, abort: () => controller.abort() };
}

/** `promise`'s value, or `{ hung: true }` if it has not settled within `ms`. */
const within = (promise, ms) => Promise.race([promise, sleep(ms).then(() => ({ hung: true, ms }))]);

const messagesOf = async (session) => (await api.get(`/session/${session.uuid}/messages`)).json;

test("the rate-limit object answers 400 for JSON that is not a limit, and counts what is one", async () => {
  const toObject = (name, raw) => worker.request("POST", `/__probe/rate-limiter/${name}`, { raw, headers: { "Content-Type": "application/json" } });
  const notLimits = ["", "not json", "null", "[3, 10]", "{}", '{"count": 3}', '{"count": -1, "window_secs": 10}',
    '{"count": 1.5, "window_secs": 10}', '{"count": "3", "window_secs": 10}', '{"count": 4294967296, "window_secs": 10}'];
  for (const raw of notLimits) {
    const r = await toObject("hostile", raw);
    assert.equal(r.status, 400, `${JSON.stringify(raw)}: ${r.status} ${r.text}`);
    assert.match(r.json?.error ?? "", /^The body is not a rate limit/, r.text);
  }
  // The refusals stored nothing: the same object then counts a real limit from zero.
  const limit = JSON.stringify({ count: 2, window_secs: 60 });
  assert.deepEqual((await toObject("hostile", limit)).json, { decision: "admitted", remaining: 1 });
  assert.deepEqual((await toObject("hostile", limit)).json, { decision: "admitted", remaining: 0 });
  const limited = (await toObject("hostile", limit)).json;
  assert.equal(limited.decision, "limited");
  assert.ok(limited.retry_after_secs >= 1 && limited.retry_after_secs <= 60, JSON.stringify(limited));
  // Limits the Worker never sends are still answered, not thrown on.
  assert.deepEqual((await toObject("zero", '{"count": 0, "window_secs": 0}')).json, { decision: "limited", retry_after_secs: 1 });
  assert.deepEqual((await toObject("zero", '{"count": 0, "window_secs": 4294967295}')).json.decision, "limited");
  assert.deepEqual((await toObject("huge", '{"count": 4294967295, "window_secs": 4294967295}')).json, { decision: "admitted", remaining: 4294967294 });
  assert.deepEqual((await toObject("instant", '{"count": 1, "window_secs": 0}')).json, { decision: "admitted", remaining: 0 });
  assert.deepEqual(worker.internalErrors, []);
});

test("a panic answers 500; requests after it are unaffected and the rate limit keeps counting", async () => {
  const figures = {};
  // Data created before the panic.
  const bot = (await api.post("/chatbot/create", { body: { name: "Before the panic", rate_limit: [5, 360] } })).json;
  await api.post(`/chatbot/${bot.uuid}/data-source/qa`, { body: { question: "What is the returns window?", answer: "Thirty days." } });
  const session = (await api.post(`/chatbot/${bot.uuid}/session/create`)).json;
  for (const q of ["first", "second"]) {
    assert.equal((await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: q } })).status, 200);
  }
  const storedBefore = await messagesOf(session);
  assert.equal(storedBefore.length, 2);

  // Requests in flight when the panic comes: a streamed answer midway (200 tokens, 25 ms
  // apart, about 5 s), one waiting 1.5 s for the model's first token, and 20 quick reads sent
  // at the same moment as the panic. They use another chatbot, so the count above stays exact.
  const other = (await api.post("/chatbot/create", { body: { name: "In flight", rate_limit: [100, 360] } })).json;
  const streamSession = (await api.post(`/chatbot/${other.uuid}/session/create`)).json;
  const slowSession = (await api.post(`/chatbot/${other.uuid}/session/create`)).json;
  const stream = startStream(streamSession.uuid, "tell me everything [long]");
  await stream.firstPiece;
  await sleep(300);
  const slow = inFlight(`/api/v1/session/${slowSession.uuid}/message/non-stream`, { method: "POST", body: JSON.stringify({ query: "take your time [slow]" }) });
  await sleep(200);
  const burst = Array.from({ length: 20 }, () => inFlight("/api/v1/chatbots"));
  figures.panic = await panicOnce();
  const { text: _, ...panicShown } = figures.panic;
  figures.panic = panicShown;
  assert.equal(figures.panic.status, 500, JSON.stringify(figures.panic));

  // Everything sent after the panic, while the requests above may still hang.
  const list = await api.get("/chatbots");
  assert.equal(list.status, 200);
  assert.ok(list.json.some((b) => b.uuid === bot.uuid), "the chatbot made before the panic is listed");
  assert.equal((await worker.request("GET", "/health")).status, 200);
  assert.deepEqual(await messagesOf(session), storedBefore, "what was stored before is intact");
  const created = await api.post("/chatbot/create", { body: { name: "After the panic" } });
  assert.equal(created.status, 200);
  const fresh = (await api.post(`/chatbot/${created.json.uuid}/session/create`)).json;
  const answer = await streamMessage(worker, key, fresh.uuid, "still there?");
  assert.equal(answer.status, 200);
  assert.equal(answer.text, "You asked: still there?.");
  // The rate-limit object counted the two messages before the panic: three more fit in 5.
  const statuses = [];
  for (let i = 0; i < 4; i++) {
    statuses.push((await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: `after ${i}` } })).status);
  }
  figures.rateLimitAfter = statuses;
  assert.deepEqual(statuses, [200, 200, 200, 429]);
  assert.equal((await messagesOf(session)).length, 5);

  // What became of the requests in flight. README, "Panics", says they die with the instance;
  // if this starts failing because they survive, say so there. The figures are printed.
  const burstResults = await Promise.all(burst.map((r) => within(r.result, 8_000)));
  figures.burst = burstResults.map((r) => (r.hung ? "hung" : r.status ?? r.error));
  figures.burstMs = Math.max(...burstResults.map((r) => r.ms));
  figures.slow = await within(slow.result, 8_000);
  delete figures.slow.text;
  const streamed = await within(stream.result, 8_000);
  figures.stream = streamed.hung ? streamed : { status: streamed.status, error: streamed.error, chars: streamed.text.length, ms: streamed.ms };
  for (const r of [...burst, slow, stream]) r.abort();
  await sleep(1000);
  figures.storedForStream = (await messagesOf(streamSession)).map((m) => m.finish_reason);
  figures.storedForSlow = (await messagesOf(slowSession)).map((m) => m.finish_reason);
  // Quick reads end at once either way: answered if they finished before the panic, 500 if
  // they were still running. The two answers waiting on the model run in their sessions'
  // objects, which store an answer as it starts: each is stored at most once, and says how it
  // ended: completed when its object lived on, else `streaming` until the object wakes and
  // closes it as `interrupted`. An answer that did not complete never reached its reader whole.
  assert.ok(figures.burst.every((s) => s === 200 || s === 500), `quick reads: ${figures.burst}`);
  const endings = ["stop", "streaming", "interrupted"];
  assert.equal(figures.storedForStream.length, 1, "the answer streaming midway was stored once");
  assert.ok(endings.includes(figures.storedForStream[0]), figures.storedForStream[0]);
  if (figures.storedForStream[0] !== "stop") {
    assert.ok(!streamed.text?.endsWith("word199 "), "the streamed answer in flight was cut off");
  }
  assert.ok(figures.storedForSlow.length <= 1 && figures.storedForSlow.every((f) => endings.includes(f)), `${figures.storedForSlow}`);
  if (figures.storedForSlow[0] !== "stop") {
    assert.notEqual(figures.slow.status, 200, "the request waiting on the model died with the instance");
  }

  // Panics in a row: each answers like the first, and the request after each is served.
  figures.again = [];
  for (let i = 0; i < 3; i++) {
    const p = await panicOnce();
    const next = await api.get(`/chatbot/${bot.uuid}`);
    figures.again.push([p.status ?? p.error, next.status]);
    assert.equal(p.status, 500);
    assert.equal(next.status, 200);
  }
  // The runtime's log lines reach the harness through wrangler's output, after the responses.
  const panicLines = () => worker.internalErrors.filter((l) => /panicked at src\/probe\.rs/.test(l)).length;
  for (const until = Date.now() + 10_000; panicLines() < 4 && Date.now() < until; ) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  figures.panicsLogged = panicLines();
  assert.ok(figures.panicsLogged >= 4, worker.internalErrors.join("\n"));
  console.log(`panic figures: ${JSON.stringify(figures)}`);
});
