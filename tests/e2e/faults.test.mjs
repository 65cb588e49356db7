// Faults, each injected for real and each leaving stored state consistent with nothing lost:
// a model that never starts, a model that goes silent midway, a tool that hangs, the Worker
// restarted between two requests of one conversation, and outbound calls steered to private
// addresses by a redirect or by a non-http scheme. (The model cut off mid-stream, a model
// answering 500, a client that leaves mid-stream and an upload whose extraction fails are in
// chat_openai.test.mjs and data_sources.test.mjs.)
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  startServer, startModelAccount as modelWorker, chatbotWithSession as withSession, firstAgent, messagesOf, storedMessages,
  expectError, streamMessage, parseEvents, eventually, settled,
} from "./suite.mjs";

const chatbotWithSession = (api, body = {}) => withSession(api, { name: "Faulty", ...body });

test("model timeouts: no first token is a 502 with nothing stored; silence midway keeps what came", async () => {
  const { model, worker, key, api } = await modelWorker({ MODEL_TIMEOUT_SECONDS: "2" });
  const { session } = await chatbotWithSession(api);

  const started = Date.now();
  const never = await api.post(`/session/${session.uuid}/message/stream`, { body: { query: "think forever [hang]" } });
  expectError(assert, never, 502, "upstream_error");
  assert.match(never.json.error.message, /did not answer within 2 seconds|sent nothing for 2 seconds/);
  assert.ok(Date.now() - started < 15_000, "gave up on its own time limit");
  expectError(assert, await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "again [hang]" } }), 502, "upstream_error");
  assert.deepEqual(await messagesOf(api, session), [], "nothing stored for an answer that never began");
  await eventually(async () => (model.dropped.filter((d) => d.query.includes("[hang]")).length === 2 ? true : null), 10_000);

  const stalled = await streamMessage(worker, key, session.uuid, "start then stop [stall]", { accept: "text/event-stream" });
  assert.equal(stalled.status, 200);
  const events = parseEvents(stalled.text);
  assert.equal(events.filter((e) => e.event === "delta").map((e) => e.data.text).join(""), "You asked:");
  assert.ok(events.some((e) => e.event === "error" && e.data.code === "upstream_error"));
  assert.equal(events.at(-1).event, "end");
  assert.equal(events.at(-1).data.finish_reason, "error");
  const [m] = await storedMessages(api, session);
  assert.equal(m.finish_reason, "error");
  assert.equal(m.response, "You asked:");
  await eventually(async () => (model.dropped.some((d) => d.query.includes("[stall]")) ? true : null), 10_000);

  // The session still works afterwards, and holds exactly the one stored answer plus this.
  const ok = await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "are you back?" } });
  assert.equal(ok.status, 200, ok.text);
  assert.deepEqual((await messagesOf(api, session)).map((x) => x.finish_reason), ["error", "stop"]);
});

test("a tool endpoint that hangs is cut off at its time limit and the answer still completes", async () => {
  const hanging = [];
  const tool = await startServer(async (req, res) => new Promise((resolve) => { hanging.push(req.url); res.on("close", resolve); }));
  const { api } = await modelWorker({ TOOL_TIMEOUT_SECONDS: "1" });
  const { bot, session } = await chatbotWithSession(api);
  const agent = await firstAgent(api, bot);
  const created = await api.post(`/agent/${agent.uuid}/tool-function/create`, {
    body: { name: "lookup", description: "Looks up an order", external_url: `${tool.base}/orders`, parameters: { type: "object", properties: { order_id: { type: "string" } } } },
  });
  assert.equal(created.status, 200, created.text);
  const started = Date.now();
  const r = await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "where is it? [tool:lookup]" } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.finish_reason, "stop");
  assert.match(r.json.response, /did not answer within 1 seconds/);
  assert.ok(Date.now() - started < 10_000, `took ${Date.now() - started} ms`);
  assert.deepEqual(hanging, ["/orders"]);
  const [stored] = await messagesOf(api, session);
  assert.equal(stored.uuid, r.json.uuid);
  assert.match(JSON.parse(stored.meta_json).functions_called[0].content, /did not answer/);
});

test("wrangler dev restarted between two requests of one conversation: history and rate limit carry over", async () => {
  const { model, worker, key, api } = await modelWorker();
  const { bot, session } = await chatbotWithSession(api, { rate_limit: [3, 360], rate_limit_message: "Slow down." });
  const first = await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "My name is Ada." } });
  assert.equal(first.status, 200);
  const second = await streamMessage(worker, key, session.uuid, "And my order?");
  assert.equal(second.status, 200);
  await eventually(async () => ((await messagesOf(api, session)).length === 2 ? true : null));

  await worker.restart();

  const third = await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "What is my name?" } });
  assert.equal(third.status, 200, third.text);
  const sent = JSON.parse(model.requests.filter((r) => r.url === "/v1/chat/completions").at(-1).body);
  const history = sent.messages.map((m) => m.content).join("\n");
  assert.match(history, /My name is Ada\./, "the first turn reached the model after the restart");
  assert.match(history, /And my order\?/);
  // Three messages in the window: the rate-limit object kept its count across the restart.
  const fourth = await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "One more?" } });
  expectError(assert, fourth, 429, "rate_limited");
  const stored = await messagesOf(api, session);
  assert.deepEqual(stored.map((m) => m.query), ["My name is Ada.", "And my order?", "What is my name?"]);
  assert.equal(new Set(stored.map((m) => m.uuid)).size, 3);
  assert.equal((await api.get(`/chatbot/${bot.uuid}`)).json.uuid, bot.uuid);
});

test("a redirect to a private address is refused at that hop, for pages and for tools", async () => {
  // The one private host the operator opened: everything else private stays closed.
  const inner = await startServer(async (req, res) => { res.writeHead(200, { "Content-Type": "text/html" }); res.end("<p>internal secrets</p>"); });
  const targets = {
    "/to-loopback": `${inner.base}/secret`,
    "/to-metadata": "http://169.254.169.254/latest/meta-data/",
    "/to-private": "http://10.0.0.7/admin",
    "/to-localhost": `http://localhost:${new URL(inner.base).port}/secret`,
    "/to-file": "file:///etc/passwd",
  };
  const front = await startServer(async (req, res) => {
    const path = new URL(req.url, "http://x").pathname;
    if (targets[path]) { res.writeHead(302, { Location: targets[path] }); return res.end(); }
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ ok: true }));
  });
  const { api } = await modelWorker({ ALLOW_PRIVATE_URLS: "false", ALLOW_PRIVATE_HOSTS: new URL(front.base).host });
  const { bot, session } = await chatbotWithSession(api);

  for (const path of Object.keys(targets)) {
    const created = await api.post(`/chatbot/${bot.uuid}/data-source/url`, { body: { url: `${front.base}${path}` } });
    assert.equal(created.status, 200, `${path}: ${created.text}`);
    const source = await settled(api, created.json.uuid);
    assert.equal(source.status, "error", `${path} ended in ${source.status}`);
    assert.match(JSON.parse(source.meta_json).error, /private, loopback or link-local|Only http and https/, path);
  }
  // Asked directly, the closed addresses are refused before anything is stored.
  for (const url of [`${inner.base}/secret`, "http://169.254.169.254/", "ftp://example.com/file", "file:///etc/passwd"]) {
    expectError(assert, await api.post(`/chatbot/${bot.uuid}/data-source/url`, { body: { url } }), 400, "invalid_request", "url");
  }
  assert.equal((await api.get(`/chatbot/${bot.uuid}/data-sources`)).json.length, Object.keys(targets).length);

  const agent = await firstAgent(api, bot);
  const tool = await api.post(`/agent/${agent.uuid}/tool-function/create`, { body: { name: "peek", external_url: `${front.base}/to-metadata` } });
  assert.equal(tool.status, 200, tool.text);
  const r = await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "look [tool:peek]" } });
  assert.equal(r.status, 200, r.text);
  assert.match(r.json.response, /private, loopback or link-local/);
  assert.deepEqual(inner.requests, [], "the private server was never reached");
  for (const scheme of ["ftp://example.com/x", "file:///etc/passwd", "gopher://example.com/"]) {
    expectError(assert, await api.post(`/agent/${agent.uuid}/tool-function/create`, { body: { name: "bad", external_url: scheme } }), 400, "invalid_request", "external_url");
  }
});
