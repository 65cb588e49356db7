// Webhooks against a local receiver on 127.0.0.1: signed deliveries, retries with the same
// delivery id, a receiver that hangs, the outbound guard, disabled webhooks, and escalation
// notices that follow the escalation agent's `notifications_enabled`.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import {
  startServer, startWorker, client, newChatbot, newSession, expectError, eventually, streamMessage, UUID_RE,
} from "./suite.mjs";

let worker, api, key, receiver;
const counts = new Map();

/** A webhook's deliveries, once the newest is `status`. */
function deliveriesOnce(client, webhook, status) {
  return eventually(async () => {
    const list = (await client.get(`/webhook/${webhook.uuid}/deliveries`)).json;
    return list[0]?.status === status ? list : null;
  }, 30_000);
}

/** What arrived at `path`, parsed. */
function arrived(path) {
  return receiver.requests
    .filter((r) => r.url === path)
    .map((r) => ({ headers: r.headers, body: r.body, json: JSON.parse(r.body) }));
}

before(async () => {
  receiver = await startServer(async (req, res) => {
    const n = (counts.get(req.url) ?? 0) + 1;
    counts.set(req.url, n);
    if (req.url === "/flaky" && n <= 2) {
      res.writeHead(500);
      return res.end("not yet");
    }
    // The first call hangs past the Worker's time limit; later ones answer.
    if (req.url === "/hang" && n === 1) return;
    if (req.url.startsWith("/down")) {
      res.writeHead(503);
      return res.end("down");
    }
    if (req.url === "/moved") {
      res.writeHead(302, { Location: "/signed" });
      return res.end();
    }
    if (req.url === "/missing") {
      res.writeHead(404);
      return res.end();
    }
    if (req.url === "/page") {
      res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
      return res.end("<html><head><title>Shipping</title></head><body><h1>Shipping</h1><p>We ship to 40 countries.</p></body></html>");
    }
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end("{}");
  });
  const port = new URL(receiver.base).port;
  // Private addresses closed, except this receiver: the guard is the one tool functions use.
  worker = await startWorker({
    vars: {
      ALLOW_PRIVATE_URLS: "false",
      ALLOW_PRIVATE_HOSTS: `127.0.0.1:${port}`,
      WEBHOOK_RETRY_UNIT_SECONDS: "0",
      WEBHOOK_TIMEOUT_SECONDS: "2",
    },
    testScheduled: true,
  });
  const account = await worker.newAccount("hooks");
  key = account.key;
  api = client(worker, key);
});

async function hook(bot, path, events, extra = {}) {
  const r = await api.post(`/chatbot/${bot.uuid}/webhook/create`, { body: { url: `${receiver.base}${path}`, events, ...extra } });
  assert.equal(r.status, 200, r.text);
  return r.json;
}

function verify(secret, delivery) {
  const ts = delivery.headers["x-edgechat-timestamp"];
  const expected = "v1=" + createHmac("sha256", secret).update(`${ts}.${delivery.body}`).digest("hex");
  return delivery.headers["x-edgechat-signature"] === expected;
}

test("webhooks are created with a secret shown once, listed, updated, rotated and deleted", async () => {
  const bot = await newChatbot(api, { name: "Hooks CRUD" });
  const w = await hook(bot, "/ok", ["message.created", "feedback.created"], { description: "CRM" });
  assert.match(w.uuid, UUID_RE);
  assert.match(w.secret, /^whsec_[0-9a-f]{64}$/);
  assert.deepEqual(w.events, ["message.created", "feedback.created"]);
  assert.equal(w.enabled, 1);
  const listed = (await api.get(`/chatbot/${bot.uuid}/webhooks`)).json;
  assert.equal(listed.length, 1);
  assert.equal(listed[0].secret, undefined, "the secret is never listed");
  const { secret: _secret, ...withoutSecret } = w;
  assert.deepEqual(listed[0], withoutSecret);

  const u = await api.post(`/webhook/${w.uuid}/update`, { body: { events: ["source.ready"], enabled: false } });
  assert.equal(u.status, 200, u.text);
  assert.deepEqual(u.json.events, ["source.ready"]);
  assert.equal(u.json.enabled, 0);
  assert.equal(u.json.secret, undefined);
  expectError(assert, await api.post(`/webhook/${w.uuid}/test`), 409, "conflict");

  const rotated = (await api.post(`/webhook/${w.uuid}/rotate-secret`)).json;
  assert.match(rotated.secret, /^whsec_/);
  assert.notEqual(rotated.secret, w.secret);

  for (const [body, field] of [
    [{ url: "ftp://x.example/", events: ["message.created"] }, "url"],
    [{ url: `${receiver.base}/ok`, events: [] }, "events"],
    [{ url: `${receiver.base}/ok`, events: ["message.deleted"] }, "events"],
    [{ events: ["message.created"] }, "url"],
  ]) {
    expectError(assert, await api.post(`/chatbot/${bot.uuid}/webhook/create`, { body }), 400, "invalid_request", field);
  }
  assert.deepEqual((await api.del(`/webhook/${w.uuid}/delete`)).json, { success: true });
  expectError(assert, await api.del(`/webhook/${w.uuid}/delete`), 404, "not_found");
  assert.deepEqual((await api.get(`/chatbot/${bot.uuid}/webhooks`)).json, []);
});

test("a private address is refused, as for tool functions", async () => {
  const bot = await newChatbot(api, { name: "Hooks guard" });
  for (const url of ["http://127.0.0.1:9/hook", "http://10.0.0.7/hook", "http://localhost/hook", "http://169.254.169.254/latest"]) {
    const r = await api.post(`/chatbot/${bot.uuid}/webhook/create`, { body: { url, events: ["message.created"] } });
    expectError(assert, r, 400, "invalid_request", "url");
  }
  const w = await hook(bot, "/ok", ["message.created"]);
  expectError(assert, await api.post(`/webhook/${w.uuid}/update`, { body: { url: "http://192.168.1.1/" } }), 400, "invalid_request", "url");
  assert.equal((await api.get(`/chatbot/${bot.uuid}/webhooks`)).json[0].url, `${receiver.base}/ok`);
});

test("a message is delivered signed; the signature verifies with the secret and fails with another", async () => {
  const bot = await newChatbot(api, { name: "Hooks signed" });
  const w = await hook(bot, "/signed", ["message.created"]);
  const session = await newSession(api, bot);
  const answer = await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "Hello there?" } });
  assert.equal(answer.status, 200, answer.text);
  const [delivery] = await eventually(() => arrived("/signed").length ? arrived("/signed") : null);
  assert.equal(delivery.headers["x-edgechat-event"], "message.created");
  assert.equal(delivery.headers["content-type"], "application/json");
  assert.equal(delivery.headers["x-edgechat-delivery"], delivery.json.id);
  assert.match(delivery.headers["x-edgechat-timestamp"], /^\d{10}$/);
  assert.deepEqual(Object.keys(delivery.json).sort(), ["chatbot_uuid", "created_at", "data", "id", "type"]);
  assert.equal(delivery.json.type, "message.created");
  assert.equal(delivery.json.chatbot_uuid, bot.uuid);
  assert.equal(delivery.json.data.uuid, answer.json.uuid);
  assert.equal(delivery.json.data.query, "Hello there?");
  assert.ok(verify(w.secret, delivery), "signed with the webhook's secret");
  assert.ok(!verify("whsec_" + "0".repeat(64), delivery), "another secret does not verify");

  const deliveries = await deliveriesOnce(api, w, "delivered");
  assert.equal(deliveries.length, 1);
  assert.equal(deliveries[0].uuid, delivery.json.id);
  assert.equal(deliveries[0].event, "message.created");
  assert.equal(deliveries[0].attempts, 1);
  assert.equal(deliveries[0].response_code, 200);
  assert.equal(deliveries[0].next_retry_at, null);

  // After a rotation only the new secret verifies.
  const rotated = (await api.post(`/webhook/${w.uuid}/rotate-secret`)).json;
  const t = await api.post(`/webhook/${w.uuid}/test`);
  assert.equal(t.status, 200, t.text);
  assert.equal(t.json.event, "webhook.test");
  const test = await eventually(() => arrived("/signed").find((d) => d.json.type === "webhook.test"));
  assert.equal(test.json.id, t.json.uuid);
  assert.ok(verify(rotated.secret, test));
  assert.ok(!verify(w.secret, test));
});

test("a receiver answering 500 twice then 200 gets the event once, with the same delivery id on every attempt", async () => {
  const bot = await newChatbot(api, { name: "Hooks flaky" });
  const w = await hook(bot, "/flaky", ["message.created"]);
  const session = await newSession(api, bot);
  await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "Are you there?" } });
  const [delivery] = await deliveriesOnce(api, w, "delivered");
  assert.equal(delivery.attempts, 3);
  assert.equal(delivery.response_code, 200);
  const attempts = arrived("/flaky");
  assert.equal(attempts.length, 3);
  assert.deepEqual(new Set(attempts.map((a) => a.headers["x-edgechat-delivery"])), new Set([delivery.uuid]));
  assert.ok(attempts.every((a) => a.body === attempts[0].body), "every attempt sends the same body");
  // Exactly once with a 2xx: nothing arrives after it.
  assert.equal(counts.get("/flaky"), 3);
});

test("a delivery whose attempt never came is sent by the scheduled handler, once", async () => {
  const bot = await newChatbot(api, { name: "Hooks lost" });
  const w = await hook(bot, "/lost", ["message.created"]);
  // As a first attempt cut off with its request, and a retry whose queue message was lost,
  // leave them: pending, due 20 minutes ago. A third is due in the future and must wait.
  const ago = new Date(Date.now() - 20 * 60_000).toISOString().replace(/\.\d+Z$/, "Z");
  const later = new Date(Date.now() + 20 * 60_000).toISOString().replace(/\.\d+Z$/, "Z");
  const rows = [["lost-first", 0, null], ["lost-retry", 2, `'${ago}'`], ["waiting", 1, `'${later}'`]];
  for (const [id, attempts, due] of rows) {
    await worker.sql(`INSERT INTO webhook_deliveries (uuid, webhook_uuid, event, body, status, attempts, next_retry_at, created_at, modified_at)
      VALUES ('${id}', '${w.uuid}', 'message.created', '{"id":"${id}"}', 'pending', ${attempts}, ${due}, '${ago}', '${ago}')`);
  }
  await worker.runScheduled();
  const settled = await eventually(async () => {
    const list = (await api.get(`/webhook/${w.uuid}/deliveries`)).json;
    const byId = Object.fromEntries(list.map((d) => [d.uuid, d]));
    return byId["lost-first"]?.status === "delivered" && byId["lost-retry"]?.status === "delivered" ? byId : null;
  }, 30_000);
  assert.deepEqual([settled["lost-first"].attempts, settled["lost-retry"].attempts], [1, 3]);
  assert.equal(settled.waiting.status, "pending", "not due yet: left to its own queue message");
  // Once delivered, another run sends nothing more.
  await worker.runScheduled();
  await new Promise((done) => setTimeout(done, 1000));
  assert.deepEqual(arrived("/lost").map((d) => d.headers["x-edgechat-delivery"]).sort(), ["lost-first", "lost-retry"]);
});

test("WEBHOOK_RETRY_DELAYS sets the schedule: one retry per number, that many seconds apart, then failed", async () => {
  const own = await startWorker({
    vars: { ALLOW_PRIVATE_URLS: "false", ALLOW_PRIVATE_HOSTS: `127.0.0.1:${new URL(receiver.base).port}`, WEBHOOK_RETRY_DELAYS: "0,2", WEBHOOK_TIMEOUT_SECONDS: "2" },
  });
  try {
    const ownApi = client(own, (await own.newAccount("schedule")).key);
    const bot = await newChatbot(ownApi, { name: "Hooks down" });
    const w = (await ownApi.post(`/chatbot/${bot.uuid}/webhook/create`, { body: { url: `${receiver.base}/down`, events: ["message.created"] } })).json;
    const session = await newSession(ownApi, bot);
    await ownApi.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "Hello?" } });
    const [delivery] = await deliveriesOnce(ownApi, w, "failed");
    assert.equal(delivery.attempts, 3);
    assert.equal(delivery.response_code, 503);
    const attempts = receiver.requests.filter((r) => r.url === "/down");
    assert.equal(attempts.length, 3);
    assert.ok(attempts[2].at - attempts[1].at >= 1900, `the second retry waited ${attempts[2].at - attempts[1].at} ms`);

    // Disabled while it waits for its next attempt: it ends failed, with no attempt counted that was not sent.
    const bot2 = await newChatbot(ownApi, { name: "Hooks off midway" });
    const w2 = (await ownApi.post(`/chatbot/${bot2.uuid}/webhook/create`, { body: { url: `${receiver.base}/down-then-off`, events: ["message.created"] } })).json;
    await ownApi.post(`/session/${(await newSession(ownApi, bot2)).uuid}/message/non-stream`, { body: { query: "Hello again?" } });
    await eventually(() => receiver.requests.filter((r) => r.url === "/down-then-off").length === 2, 30_000);
    assert.equal((await ownApi.post(`/webhook/${w2.uuid}/update`, { body: { enabled: false } })).status, 200);
    const [given] = await deliveriesOnce(ownApi, w2, "failed");
    assert.equal(given.attempts, 2);
    assert.equal(given.response_code, 503, "what the last attempt got stays");
    assert.match(given.error, /disabled/);
    assert.equal(receiver.requests.filter((r) => r.url === "/down-then-off").length, 2);

    // A receiver that redirects fails the attempt, and the reason says where it pointed.
    const bot3 = await newChatbot(ownApi, { name: "Hooks moved" });
    const w3 = (await ownApi.post(`/chatbot/${bot3.uuid}/webhook/create`, { body: { url: `${receiver.base}/moved`, events: ["message.created"] } })).json;
    await ownApi.post(`/session/${(await newSession(ownApi, bot3)).uuid}/message/non-stream`, { body: { query: "Anyone?" } });
    const [moved] = await deliveriesOnce(ownApi, w3, "failed");
    assert.equal(moved.error, `The server answered 302, a redirect to ${receiver.base}/signed, which is not followed.`);
    assert.equal(moved.response_code, 302);
    assert.equal(receiver.requests.filter((r) => r.url === "/signed" && r.body?.includes(bot3.uuid)).length, 0, "the redirect was not followed");
  } finally {
    await own.dispose();
  }
});

test("a receiver that hangs is given up on after the time limit and tried again", async () => {
  const bot = await newChatbot(api, { name: "Hooks hang" });
  const w = await hook(bot, "/hang", ["message.created"]);
  const session = await newSession(api, bot);
  await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "Anyone?" } });
  const [delivery] = await deliveriesOnce(api, w, "delivered");
  assert.equal(delivery.attempts, 2);
  const attempts = arrived("/hang");
  assert.equal(attempts.length, 2);
  assert.equal(attempts[0].headers["x-edgechat-delivery"], attempts[1].headers["x-edgechat-delivery"]);
});

test("a disabled webhook sends nothing; escalation notices follow notifications_enabled", async () => {
  const bot = await newChatbot(api, { name: "Hooks escalation" });
  const control = await hook(bot, "/control", ["message.created"]);
  const off = await hook(bot, "/disabled", ["message.created", "escalation.requested"]);
  await api.post(`/webhook/${off.uuid}/update`, { body: { enabled: false } });
  await hook(bot, "/escalation", ["escalation.requested"]);
  const he = (await api.post(`/chatbot/${bot.uuid}/agent/create`, {
    body: { name: "Humans", type: "human-escalation", enabled: true, human_escalation_settings: { notifications_enabled: 0 } },
  })).json;
  const session = await newSession(api, bot);

  // Notifications off: the message is told, the request for a person is not.
  let r = await streamMessage(worker, key, session.uuid, "Can I talk to a real person please?");
  assert.equal(r.status, 200);
  await eventually(() => arrived("/control").length === 1);
  const first = arrived("/control")[0].json.data;
  assert.equal(JSON.parse(first.meta_json).agent.uuid, he.uuid, "the escalation agent answered");
  // The control's delivery is recorded only after every webhook of the event was handled.
  await eventually(async () => (await api.get(`/webhook/${control.uuid}/deliveries`)).json[0]?.status === "delivered");
  assert.equal(arrived("/escalation").length, 0);
  assert.equal(arrived("/disabled").length, 0);

  // Notifications on: escalation.requested arrives, with the session and the question.
  await api.post(`/agent/${he.uuid}/update`, { body: { human_escalation_settings: { notifications_enabled: 1 } } });
  r = await streamMessage(worker, key, session.uuid, "I want to talk to a human agent");
  assert.equal(r.status, 200);
  const [notice] = await eventually(() => arrived("/escalation").length ? arrived("/escalation") : null);
  assert.equal(notice.json.type, "escalation.requested");
  assert.equal(notice.json.data.session_uuid, session.uuid);
  assert.equal(notice.json.data.message_uuid, r.headers.get("x-message-uuid"));
  assert.equal(notice.json.data.query, "I want to talk to a human agent");
  await eventually(() => arrived("/control").length === 2);
  assert.equal(arrived("/disabled").length, 0, "a disabled webhook never sends");
  assert.deepEqual((await api.get(`/webhook/${off.uuid}/deliveries`)).json, []);
});

test("live chat, tags, sources and feedback are told to the webhooks that asked", async () => {
  const bot = await newChatbot(api, { name: "Hooks events" });
  await hook(bot, "/events", ["live_chat.started", "live_chat.ended", "session.tagged", "source.ready", "source.failed", "feedback.created"]);
  await api.post(`/chatbot/${bot.uuid}/agent/create`, {
    body: { name: "Tagger", type: "background", enabled: true, tags: [{ name: "Pricing", color: "#ff8800", criteria: "asks about the price or cost of something" }] },
  });
  const session = await newSession(api, bot);
  const m = (await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "What does express delivery cost?" } })).json;
  await api.post(`/session/${session.uuid}/live-chat/start`);
  await api.post(`/session/${session.uuid}/live-chat/end`);
  await api.post(`/message/${m.uuid}/feedback`, { body: { rating: "down", comment: "no price" } });
  // The same rating again is no news: one feedback.created (below), not three.
  await api.post(`/message/${m.uuid}/feedback`, { body: { rating: "down", comment: "no price" } });
  await api.post(`/message/${m.uuid}/feedback`, { body: { rating: "down" } });
  await api.post(`/chatbot/${bot.uuid}/data-source/url`, { body: { url: `${receiver.base}/page` } });
  await api.post(`/chatbot/${bot.uuid}/data-source/url`, { body: { url: `${receiver.base}/missing` } });
  // A Q&A pair is ready as it is stored.
  await api.post(`/chatbot/${bot.uuid}/data-source/qa`, { body: { question: "Do you ship abroad?", answer: "Yes." } });
  const types = () => arrived("/events").map((d) => d.json.type).sort();
  await eventually(() => types().length >= 7, 20_000).catch((err) => assert.fail(`${err.message}: ${types()}`));
  assert.deepEqual(types(), ["feedback.created", "live_chat.ended", "live_chat.started", "session.tagged", "source.failed", "source.ready", "source.ready"]);
  assert.ok(arrived("/events").some((d) => d.json.type === "source.ready" && d.json.data.type === "qa"));
  const byType = Object.fromEntries(arrived("/events").map((d) => [d.json.type, d.json.data]));
  assert.equal(byType["session.tagged"].tag.name, "Pricing");
  assert.equal(byType["feedback.created"].rating, "down");
  assert.equal(byType["feedback.created"].message_uuid, m.uuid);
  assert.equal(byType["live_chat.started"].session_uuid, session.uuid);
  assert.equal(byType["source.failed"].status, "error");
  assert.equal(byType["source.ready"].status, "success");
  // A changed rating is told.
  await api.post(`/message/${m.uuid}/feedback`, { body: { rating: "up" } });
  await eventually(() => arrived("/events").filter((d) => d.json.type === "feedback.created").length === 2, 10_000);
  assert.equal(arrived("/events").filter((d) => d.json.type === "feedback.created").at(-1).json.data.rating, "up");
});
