// What the end-to-end test files share, so that each reads as its scenario only:
//
// - Workers, local servers and model servers started for a file are stopped after its tests
//   (one `after` hook, registered when a file imports this module), in the reverse order of
//   their start. A test may stop one earlier with `dispose()` / `close()`.
// - Every Worker started here fails its file (or the test that disposes it) when it logged an
//   internal error or a panic at any time: see `Worker.assertNoInternalErrors` in harness.mjs.
//   A test that provokes one on purpose starts its Worker with `expectInternalErrors: true`
//   and checks `worker.internalErrors` itself.
// - The outside parties most scenarios need (a help site with the fixture pages, a model
//   server) and the records they start from (a chatbot, its first agent, a session).
//
// Test files import from here only; harness.mjs stays the plain library the benchmarks and
// the evaluation use too.
import { after } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import path from "node:path";
import * as harness from "./harness.mjs";
import * as models from "./model_server.mjs";
import { client, eventually, sleep, ROOT } from "./harness.mjs";

export {
  client, expectError, settled, upload, streamMessage, parseEvents, eventually, sleep,
  ROOT, OUTPUT, UUID_RE, TIMESTAMP_RE,
} from "./harness.mjs";
export { FAKE_KEY } from "./model_server.mjs";

const stops = [];

after(async () => {
  const failures = [];
  for (const stop of stops.splice(0).reverse()) {
    try {
      await stop();
    } catch (err) {
      failures.push(err);
    }
  }
  if (failures.length === 1) throw failures[0];
  if (failures.length > 1) throw new AggregateError(failures, failures.map((e) => e.message).join("\n\n"));
});

/**
 * Starts a Worker (see `startWorker` in harness.mjs for the options) that is disposed after
 * this file's tests. `expectInternalErrors: true` is for a test that provokes an internal error
 * on purpose: that Worker's log is not held against the file, and the test checks it itself.
 *
 * Tests speak to the runtime's own socket (`direct`, through serve.mjs: wrangler's own dev
 * server, the same runtime, bindings and local state as `wrangler dev`, its log lines
 * included). Wrangler's local proxy in front of it is not on the deployed path, and on a busy
 * machine it now and then loses a request: a GET whose connection to the runtime drops is
 * queued for a reload that never comes, so the client waits forever, and a POST is answered
 * with its own 503 (see `direct` in harness.mjs). `cli: true` starts the `wrangler dev`
 * command itself, proxy included, as `make dev` runs it.
 */
export async function startWorker({ expectInternalErrors = false, cli = false, ...options } = {}) {
  const reach = cli ? {} : { inspector: false, direct: true, workerLogs: true };
  const worker = await harness.startWorker({ ...reach, ...options, failOnInternalErrors: !expectInternalErrors });
  stops.push(() => worker.dispose());
  return worker;
}

/**
 * A Worker (started as `startWorker` does, with `options`) with a new account on it: the
 * Worker, the account, its key and a client with that key.
 */
export async function startAccount({ accountName, ...options } = {}) {
  const worker = await startWorker(options);
  const account = await worker.newAccount(accountName);
  return { worker, account, key: account.key, api: client(worker, account.key) };
}

/** A local server playing an outside party (see harness.mjs), closed after this file's tests. */
export async function startServer(handler) {
  const server = await harness.startServer(handler);
  stops.push(() => server.close());
  return server;
}

/** The local OpenAI-compatible model server (see model_server.mjs), closed after this file's tests. */
export async function startModelServer(options) {
  const model = await models.startModelServer(options);
  stops.push(() => model.close());
  return model;
}

/** The Worker variables that send its `gpt-*` models to `model`. */
export function modelVars(model) {
  return { OPENAI_API_KEY: models.FAKE_KEY, OPENAI_BASE_URL: model.base };
}

/**
 * A model server and a Worker answering through it (with `vars` added), with an account: the
 * model server, and what `startAccount` gives.
 */
export async function startModelAccount(vars = {}) {
  const model = await startModelServer();
  return { model, ...(await startAccount({ vars: { ...modelVars(model), ...vars } })) };
}

/** The bytes of a file under tests/fixtures. */
export function fixture(...parts) {
  return readFile(path.join(ROOT, "tests/fixtures", ...parts));
}

const HELP_PAGES = { "/shipping": "shipping.html", "/returns": "returns.html", "/warranty": "warranty.html" };

/**
 * A help site: /shipping, /returns and /warranty serve the pages in tests/fixtures/site, each
 * after `delayMs` (real sites take a moment). Any other path goes to `other(req, res, url)`,
 * or answers 404.
 */
export function startHelpSite({ delayMs = 0, other } = {}) {
  return startServer(async (req, res) => {
    const url = new URL(req.url, "http://x");
    const file = HELP_PAGES[url.pathname];
    if (!file) {
      if (other) return other(req, res, url);
      res.writeHead(404);
      return res.end();
    }
    if (delayMs) await sleep(delayMs);
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
    res.end(await fixture("site", file));
  });
}

/** Creates a chatbot with `body` (its name included) and returns its record. */
export async function newChatbot(api, body) {
  const r = await api.post("/chatbot/create", { body });
  assert.equal(r.status, 200, r.text);
  return r.json;
}

/** The agent a chatbot starts with (General Q&A). */
export async function firstAgent(api, bot) {
  const [agent] = (await api.get(`/chatbot/${bot.uuid}/agents`)).json;
  return agent;
}

/** Opens a session on `bot`, with `body` (initial variables) when given. */
export async function newSession(api, bot, body) {
  const r = await api.post(`/chatbot/${bot.uuid}/session/create`, { body });
  assert.equal(r.status, 200, r.text);
  return r.json;
}

/**
 * The shop's chatbot the site-visitor scenarios chat with: "Northwind help" (`body` adds to
 * or overrides that), knowing one Q&A pair, about shipping abroad.
 */
export async function shopChatbot(api, body = {}) {
  const bot = await newChatbot(api, { name: "Northwind help", ...body });
  await api.post(`/chatbot/${bot.uuid}/data-source/qa`, {
    body: { question: "Do you ship abroad?", answer: "Yes, we ship to 40 countries within 5 working days." },
  });
  return bot;
}

/** A chatbot created with `body` and a session on it. */
export async function chatbotWithSession(api, body) {
  const bot = await newChatbot(api, body);
  return { bot, session: await newSession(api, bot) };
}

/** A session's messages, oldest first. */
export async function messagesOf(api, session) {
  return (await api.get(`/session/${session.uuid}/messages`)).json;
}

/**
 * A session's messages once there are any and none is still being produced (an answer is
 * stored as `streaming` when it starts and completed when it ends).
 */
export function storedMessages(api, session, timeoutMs) {
  return eventually(async () => {
    const list = await messagesOf(api, session);
    return list.length && !list.some((m) => m.finish_reason === "streaming") ? list : null;
  }, timeoutMs);
}
