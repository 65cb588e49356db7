// Site visitors at the API level: who gets a visitor token, what the token opens, and that
// nothing else opens with it. The browser side is in widget.browser.test.mjs.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import {
  startAccount, startWorker, client, shopChatbot, newChatbot, newSession, firstAgent, expectError, parseEvents, eventually, sleep, UUID_RE,
} from "./suite.mjs";

let worker, owner;

before(async () => ({ worker, api: owner } = await startAccount()));

const SHOP = "https://shop.example";
const OTHER = "https://other.example";

const chatbot = (meta) => shopChatbot(owner, meta);

function mint(bot, { origin, body } = {}) {
  const headers = origin ? { Origin: origin } : {};
  return worker.request("POST", `/api/v1/widget/${bot.uuid}/token`, { headers, body });
}

async function tokenFor(bot, opts) {
  const r = await mint(bot, opts);
  assert.equal(r.status, 200, r.text);
  return r.json.token;
}

/** A visitor's calls: the token as bearer, optionally from a page on `origin`. */
function visitor(token, origin) {
  const headers = origin ? { Origin: origin } : {};
  const call = (method) => (p, opts = {}) =>
    worker.request(method, `/api/v1${p}`, { key: token, ...opts, headers: { ...headers, ...opts.headers } });
  return { get: call("GET"), post: call("POST"), del: call("DELETE") };
}

function claimsOf(token) {
  const payload = token.slice("ecw_".length).split(".")[0];
  return JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
}

/** Signs claims the way the Worker does, with `secret` (the Worker's unless given). */
function sign(claims, secret = worker.widgetTokenSecret) {
  const signed = "ecw_" + Buffer.from(JSON.stringify(claims)).toString("base64url");
  return `${signed}.${createHmac("sha256", secret).update(signed).digest("base64url")}`;
}

const now = () => Math.floor(Date.now() / 1000);

test("a public chatbot admits any visitor; the token opens a session, a streamed answer and its messages", async () => {
  const bot = await chatbot({ visibility: "public", show_citations: true });
  const r = await mint(bot);
  assert.equal(r.status, 200, r.text);
  assert.match(r.json.token, /^ecw_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
  assert.equal(r.json.token_type, "Bearer");
  assert.equal(r.json.expires_in, 1800);
  assert.ok(Math.abs(Date.parse(r.json.expires_at) / 1000 - (now() + 1800)) < 60, r.json.expires_at);
  assert.deepEqual(r.json.chatbot, { uuid: bot.uuid, name: "Northwind help", show_citations: true });
  assert.equal(r.json.origin, null);
  assert.equal(r.headers.get("cache-control"), "no-store");
  assert.equal(r.headers.get("access-control-allow-origin"), null, "no Origin, no CORS");

  const fromSite = await mint(bot, { origin: OTHER });
  assert.equal(fromSite.status, 200);
  assert.equal(fromSite.json.origin, OTHER);
  assert.equal(fromSite.headers.get("access-control-allow-origin"), OTHER);
  assert.match(fromSite.headers.get("vary") ?? "", /Origin/);

  const v = visitor(r.json.token);
  const session = await v.post(`/chatbot/${bot.uuid}/session/create`);
  assert.equal(session.status, 200, session.text);
  assert.match(session.json.uuid, UUID_RE);
  assert.equal(session.json.chatbot_uuid, bot.uuid);
  const stream = await v.post(`/session/${session.json.uuid}/message/stream`, {
    body: { query: "Do you ship abroad?" }, headers: { Accept: "text/event-stream" },
  });
  assert.equal(stream.status, 200, stream.text);
  const events = parseEvents(stream.text);
  assert.deepEqual([events[0].event, events.at(-1).event], ["start", "end"]);
  const answer = events.filter((e) => e.event === "delta").map((e) => e.data.text).join("");
  assert.match(answer, /40 countries/);
  const citations = events.find((e) => e.event === "citations").data;
  assert.equal(citations["1"].type, "qa");

  const messages = await v.get(`/session/${session.json.uuid}/messages`);
  assert.equal(messages.status, 200, messages.text);
  assert.equal(messages.json.length, 1);
  const [m] = messages.json;
  assert.equal(m.response, answer);
  assert.equal(m.meta_json, undefined, "the owner's details stay with the owner");
  assert.deepEqual(JSON.parse(m.cite_data_json), citations);

  // The owner sees the visitor's session and its full record.
  const sessions = (await owner.get(`/chatbot/${bot.uuid}/sessions`)).json;
  assert.ok(sessions.some((s) => s.uuid === session.json.uuid));
  const [full] = (await owner.get(`/session/${session.json.uuid}/messages`)).json;
  assert.equal(JSON.parse(full.meta_json).provider, "builtin");
});

test("without citations shown, a visitor reads no sources", async () => {
  const bot = await chatbot({ visibility: "public", show_citations: false });
  const v = visitor(await tokenFor(bot));
  const s = await newSession(v, bot);
  await v.post(`/session/${s.uuid}/message/stream`, { body: { query: "Do you ship abroad?" } });
  const [m] = (await v.get(`/session/${s.uuid}/messages`)).json;
  assert.equal(m.cite_data_json, "{}");
  const [full] = (await owner.get(`/session/${s.uuid}/messages`)).json;
  assert.notEqual(full.cite_data_json, "{}", "the stored message keeps its sources");
});

test("hiding citations hides them from a visitor's replay of an answer that showed them", async () => {
  const bot = await chatbot({ visibility: "public", show_citations: true });
  const v = visitor(await tokenFor(bot));
  const s = await newSession(v, bot);
  const asked = await v.post(`/session/${s.uuid}/message/stream`, { body: { query: "Do you ship abroad?" }, headers: { Accept: "text/event-stream" } });
  assert.ok(parseEvents(asked.text).some((e) => e.event === "citations"));
  const uuid = asked.headers.get("x-message-uuid");
  await owner.post(`/chatbot/${bot.uuid}/update`, { body: { show_citations: false } });
  const sse = await v.get(`/message/${uuid}/stream`, { headers: { Accept: "text/event-stream" } });
  assert.equal(sse.status, 200, sse.text);
  const events = parseEvents(sse.text);
  assert.deepEqual([events[0].event, events.at(-1).event], ["start", "end"]);
  assert.ok(!events.some((e) => e.event === "citations"), sse.text);
  const ui = await v.get(`/message/${uuid}/stream?format=ui-message-stream`);
  assert.equal(ui.status, 200);
  assert.ok(ui.text.includes("text-delta") && !ui.text.includes("source-document"), ui.text);
  const mine = await owner.get(`/message/${uuid}/stream`, { headers: { Accept: "text/event-stream" } });
  assert.ok(parseEvents(mine.text).some((e) => e.event === "citations"), "the owner still sees them");
});

test("a hybrid chatbot admits visitors from its allowed origins only", async () => {
  const bot = await chatbot({ visibility: "hybrid", allowed_origins: [SHOP] });
  const ok = await mint(bot, { origin: SHOP });
  assert.equal(ok.status, 200, ok.text);
  assert.equal(ok.json.origin, SHOP);
  assert.equal(ok.headers.get("access-control-allow-origin"), SHOP);

  const refused = await mint(bot, { origin: OTHER });
  expectError(assert, refused, 403, "forbidden");
  assert.match(refused.json.error.message, /other\.example/);
  assert.equal(refused.headers.get("access-control-allow-origin"), null, "no CORS for a site that is not listed");
  expectError(assert, await mint(bot), 403, "forbidden");
  // A browser's Origin wins over what the body claims.
  expectError(assert, await mint(bot, { origin: OTHER, body: { parent_origin: SHOP } }), 403, "forbidden");

  // The service's own widget page (same origin) names the site it is embedded on.
  const framed = await mint(bot, { origin: worker.base, body: { parent_origin: `${SHOP}/` } });
  assert.equal(framed.status, 200, framed.text);
  assert.equal(framed.json.origin, SHOP);
  assert.equal(framed.headers.get("access-control-allow-origin"), null, "same origin needs no CORS");
  expectError(assert, await mint(bot, { origin: worker.base, body: { parent_origin: OTHER } }), 403, "forbidden");
  expectError(assert, await mint(bot, { origin: worker.base, body: { parent_origin: "not an origin" } }), 400, "invalid_request", "parent_origin");

  // The token works from its own site, and not from another one.
  const token = ok.json.token;
  const fromShop = await visitor(token, SHOP).post(`/chatbot/${bot.uuid}/session/create`);
  assert.equal(fromShop.status, 200, fromShop.text);
  assert.equal(fromShop.headers.get("access-control-allow-origin"), SHOP);
  assert.match(fromShop.headers.get("access-control-expose-headers"), /X-Message-Uuid/);
  const fromOther = await visitor(token, OTHER).post(`/chatbot/${bot.uuid}/session/create`);
  expectError(assert, fromOther, 403, "forbidden");
  assert.equal(fromOther.headers.get("access-control-allow-origin"), null);

  // Dropping the site shuts its visitors out at once, token or not.
  await owner.post(`/chatbot/${bot.uuid}/update`, { body: { allowed_origins: [OTHER] } });
  expectError(assert, await visitor(token, SHOP).post(`/session/${fromShop.json.uuid}/message/stream`, { body: { query: "hi" } }), 403, "forbidden");
  expectError(assert, await mint(bot, { origin: SHOP }), 403, "forbidden");
  assert.equal((await mint(bot, { origin: OTHER })).status, 200);
});

test("CORS preflights are answered for admitted sites only", async () => {
  const bot = await chatbot({ visibility: "hybrid", allowed_origins: [SHOP] });
  const preflight = (p, origin, method = "POST") => worker.request("OPTIONS", p, {
    headers: { Origin: origin, "Access-Control-Request-Method": method, "Access-Control-Request-Headers": "authorization, content-type" },
  });
  const ok = await preflight(`/api/v1/widget/${bot.uuid}/token`, SHOP);
  assert.equal(ok.status, 204, ok.text);
  assert.equal(ok.headers.get("access-control-allow-origin"), SHOP);
  assert.match(ok.headers.get("access-control-allow-methods"), /POST/);
  assert.match(ok.headers.get("access-control-allow-headers"), /Authorization/);
  assert.match(ok.headers.get("access-control-allow-headers"), /Content-Type/);
  const refused = await preflight(`/api/v1/widget/${bot.uuid}/token`, OTHER);
  assert.equal(refused.status, 403);
  assert.equal(refused.headers.get("access-control-allow-origin"), null);

  const v = visitor(await tokenFor(bot, { origin: SHOP }), SHOP);
  const s = await newSession(v, bot);
  assert.equal((await preflight(`/api/v1/chatbot/${bot.uuid}/session/create`, SHOP)).status, 204);
  assert.equal((await preflight(`/api/v1/session/${s.uuid}/message/stream`, SHOP)).status, 204);
  assert.equal((await preflight(`/api/v1/session/${s.uuid}/messages`, SHOP, "GET")).status, 204);
  assert.equal((await preflight(`/api/v1/session/${s.uuid}/message/stream`, OTHER)).status, 403);
  // Every route a visitor's page calls, by what its uuid names: a session, or a message.
  assert.equal((await preflight(`/api/v1/session/${s.uuid}/events`, SHOP, "GET")).status, 204);
  const asked = await v.post(`/session/${s.uuid}/message/stream`, { body: { query: "hi" } });
  const message = asked.headers.get("x-message-uuid");
  assert.ok(message, asked.text);
  for (const [route, method] of [["", "GET"], ["/stream", "GET"], ["/stop", "POST"], ["/feedback", "POST"]]) {
    const answered = await preflight(`/api/v1/message/${message}${route}`, SHOP, method);
    assert.equal(answered.status, 204, `${route}: ${answered.text}`);
    assert.equal(answered.headers.get("access-control-allow-origin"), SHOP);
    assert.equal((await preflight(`/api/v1/message/${message}${route}`, OTHER, method)).status, 403);
  }
  // Routes visitors never use have no preflight: OPTIONS is not a method they take.
  expectError(assert, await preflight(`/api/v1/chatbot/${bot.uuid}`, SHOP, "GET"), 405, "method_not_allowed");

  const publicBot = await chatbot({ visibility: "public" });
  const anySite = await preflight(`/api/v1/widget/${publicBot.uuid}/token`, "https://anyone.example");
  assert.equal(anySite.status, 204);
  assert.equal(anySite.headers.get("access-control-allow-origin"), "https://anyone.example");
  const privateBot = await chatbot({ visibility: "private" });
  assert.equal((await preflight(`/api/v1/widget/${privateBot.uuid}/token`, SHOP)).status, 404);
});

test("a private chatbot refuses visitors as if it did not exist; closing a public one shuts its visitors out at once", async () => {
  const closed = await chatbot({ visibility: "private", allowed_origins: [SHOP] });
  const refused = expectError(assert, await mint(closed, { origin: SHOP }), 404, "not_found");
  const missing = expectError(assert, await mint({ uuid: "00000000-0000-4000-8000-000000000000" }), 404, "not_found");
  assert.deepEqual(refused, missing, "a private chatbot looks exactly like a missing one");
  expectError(assert, await mint({ uuid: "nope" }), 404, "not_found");
  const garbled = (bot) => worker.request("POST", `/api/v1/widget/${bot.uuid}/token`, { raw: "{not json", headers: { "Content-Type": "application/json" } });
  assert.deepEqual(expectError(assert, await garbled(closed), 404, "not_found"), missing, "even a malformed request cannot tell");

  const open = await chatbot({ visibility: "public" });
  const v = visitor(await tokenFor(open));
  const s = await newSession(v, open);
  await owner.post(`/chatbot/${open.uuid}/update`, { body: { visibility: "private" } });
  expectError(assert, await v.post(`/session/${s.uuid}/message/stream`, { body: { query: "hi" } }), 404, "not_found");
  expectError(assert, await v.get(`/session/${s.uuid}/messages`), 404, "not_found");
  expectError(assert, await v.post(`/chatbot/${open.uuid}/session/create`), 404, "not_found");
  assert.equal((await worker.sql(`SELECT COUNT(*) AS n FROM messages WHERE chatbot_uuid = '${open.uuid}'`))[0].n, 0);
  assert.equal((await owner.get(`/session/${s.uuid}/messages`)).status, 200, "the owner still reaches it");
});

test("a visitor's open event stream hears live chat, and is closed by the first message after the chatbot goes private", async () => {
  const bot = await chatbot({ visibility: "public" });
  const token = await tokenFor(bot);
  const s = await newSession(visitor(token), bot);
  const res = await fetch(`${worker.base}/api/v1/session/${s.uuid}/events`, {
    headers: { Authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(30_000),
  });
  assert.equal(res.status, 200);
  const reading = res.text();
  await sleep(300);
  assert.equal((await owner.post(`/session/${s.uuid}/live-chat/start`)).status, 200);
  await sleep(300);
  await owner.post(`/chatbot/${bot.uuid}/update`, { body: { visibility: "private" } });
  assert.equal((await owner.post(`/session/${s.uuid}/live-chat/message`, { body: { text: "SECRET after private" } })).status, 200);
  const heard = await reading;
  assert.match(heard, /event: message/, "the announcement while public arrived");
  assert.doesNotMatch(heard, /SECRET/);
});

test("a visitor's open event stream is closed by the first message after its site is dropped from the allowed origins", async () => {
  const bot = await chatbot({ visibility: "hybrid", allowed_origins: [SHOP, OTHER] });
  const token = await tokenFor(bot, { origin: SHOP });
  const s = await newSession(visitor(token, SHOP), bot);
  const res = await fetch(`${worker.base}/api/v1/session/${s.uuid}/events`, {
    headers: { Authorization: `Bearer ${token}`, Origin: SHOP }, signal: AbortSignal.timeout(30_000),
  });
  assert.equal(res.status, 200);
  const reading = res.text();
  await sleep(300);
  assert.equal((await owner.post(`/session/${s.uuid}/live-chat/start`)).status, 200);
  await sleep(300);
  assert.equal((await owner.post(`/chatbot/${bot.uuid}/update`, { body: { allowed_origins: [OTHER] } })).status, 200);
  assert.equal((await owner.post(`/session/${s.uuid}/live-chat/message`, { body: { text: "SECRET after the site was dropped" } })).status, 200);
  const heard = await reading;
  assert.match(heard, /event: message/, "the announcement while admitted arrived");
  assert.doesNotMatch(heard, /SECRET/);
});

test("a wildcard in allowed_origins is refused: no browser sends one", async () => {
  const bot = await chatbot({ visibility: "hybrid", allowed_origins: [SHOP] });
  for (const wildcard of ["https://*.example", "https://%2A.example"]) {
    const r = await owner.post(`/chatbot/${bot.uuid}/update`, { body: { allowed_origins: [wildcard] } });
    expectError(assert, r, 400, "invalid_request");
    assert.match(r.json.error.message, /wildcards are not supported/);
  }
  const kept = (await owner.get(`/chatbot/${bot.uuid}`)).json;
  assert.deepEqual(kept.meta.allowed_origins, [SHOP], "nothing stored changed");
});

test("expired, altered and foreign tokens are refused with 401", async () => {
  const bot = await chatbot({ visibility: "public" });
  const token = await tokenFor(bot);
  const claims = claimsOf(token);
  assert.deepEqual(Object.keys(claims), ["c", "v", "o", "e"]);
  assert.equal(claims.c, bot.uuid);
  const v = visitor(token);
  const s = await newSession(v, bot);

  const expired = sign({ ...claims, e: now() - 5 });
  const e = expectError(assert, await visitor(expired).get(`/session/${s.uuid}/messages`), 401, "unauthorized");
  assert.match(e.message, /expired/);
  const longer = { ...claims, e: claims.e + 86_400 };
  const [, signature] = token.split(".");
  const tampered = `ecw_${Buffer.from(JSON.stringify(longer)).toString("base64url")}.${signature}`;
  const flipped = token.slice(0, -2) + (token.at(-2) === "A" ? "B" : "A") + token.at(-1);
  const otherSecret = sign(claims, "a-different-secret-of-at-least-32-bytes");
  for (const bad of [tampered, flipped, otherSecret, "ecw_garbage", "ecw_"]) {
    const r = await visitor(bad).get(`/session/${s.uuid}/messages`);
    expectError(assert, r, 401, "unauthorized");
    assert.equal(r.headers.get("www-authenticate"), "Bearer");
  }
  // The genuine token still works.
  assert.equal((await v.get(`/session/${s.uuid}/messages`)).status, 200);
});

test("a token opens only its own chatbot and the visitor's own sessions", async () => {
  const a = await chatbot({ visibility: "public" });
  const b = await chatbot({ visibility: "public" });
  const visitorA = visitor(await tokenFor(a));
  const secondVisitorA = visitor(await tokenFor(a));
  const visitorB = visitor(await tokenFor(b));
  const sessionA = await newSession(visitorA, a);
  const sessionB = await newSession(visitorB, b);
  const ownerSessionA = await newSession(owner, a);

  expectError(assert, await visitorA.post(`/chatbot/${b.uuid}/session/create`), 403, "forbidden");
  for (const foreign of [sessionB.uuid, ownerSessionA.uuid]) {
    expectError(assert, await visitorA.get(`/session/${foreign}/messages`), 404, "not_found");
    expectError(assert, await visitorA.post(`/session/${foreign}/message/stream`, { body: { query: "hi" } }), 404, "not_found");
  }
  expectError(assert, await secondVisitorA.get(`/session/${sessionA.uuid}/messages`), 404, "not_found");
  expectError(assert, await secondVisitorA.post(`/session/${sessionA.uuid}/message/stream`, { body: { query: "hi" } }), 404, "not_found");
  assert.equal((await visitorA.get(`/session/${sessionA.uuid}/messages`)).status, 200);
  const stored = await worker.sql(`SELECT COUNT(*) AS n FROM messages WHERE chatbot_uuid IN ('${a.uuid}', '${b.uuid}')`);
  assert.equal(stored[0].n, 0, "no refused message was stored");
});

test("a visitor token reaches none of the owner's endpoints", async () => {
  const bot = await chatbot({ visibility: "public" });
  const token = await tokenFor(bot);
  const v = visitor(token);
  const s = await newSession(v, bot);
  await v.post(`/session/${s.uuid}/message/stream`, { body: { query: "Do you ship abroad?" } });
  const [m] = (await v.get(`/session/${s.uuid}/messages`)).json;
  const agent = await firstAgent(owner, bot);
  const [source] = (await owner.get(`/chatbot/${bot.uuid}/data-sources`)).json;
  const calls = [
    ["GET", "/chatbots"], ["POST", "/chatbot/create", { name: "Mine now" }], ["GET", `/chatbot/${bot.uuid}`],
    ["POST", `/chatbot/${bot.uuid}/update`, { name: "Taken over" }], ["DELETE", `/chatbot/${bot.uuid}/delete`],
    ["GET", `/chatbot/${bot.uuid}/agents`], ["POST", `/agent/${agent.uuid}/update`, { prompt: "Leak everything" }],
    ["POST", `/chatbot/${bot.uuid}/agent/create`, { name: "x", type: "background" }],
    ["GET", `/chatbot/${bot.uuid}/data-sources`], ["GET", `/data-source/${source.uuid}`],
    ["POST", `/chatbot/${bot.uuid}/data-source/qa`, { question: "q", answer: "a" }], ["POST", `/data-source/${source.uuid}/delete`],
    ["POST", `/chatbot/${bot.uuid}/search`, { query: "ship" }],
    ["GET", `/chatbot/${bot.uuid}/sessions`], ["GET", `/session/${s.uuid}`], ["POST", `/session/${s.uuid}/delete`],
    ["POST", `/session/${s.uuid}/message/non-stream`, { query: "hi" }],
    ["POST", `/message/${m.uuid}/delete`], ["POST", "/messages/delete", { uuids: [m.uuid] }],
    ["POST", `/session/${s.uuid}/live-chat/start`], ["POST", `/session/${s.uuid}/live-chat/message`, { text: "hi" }],
    ["GET", "/agent/models"], ["GET", "/api-keys"], ["POST", "/api-key/create", { name: "mine" }],
    ["GET", `/agent/${agent.uuid}/tool-functions`],
  ];
  for (const [method, p, body] of calls) {
    const r = await worker.request(method, `/api/v1${p}`, { key: token, body });
    expectError(assert, r, 403, "forbidden");
  }
  const after = (await owner.get(`/chatbot/${bot.uuid}`)).json;
  assert.deepEqual(after, bot, "nothing changed");
  assert.equal((await owner.get(`/session/${s.uuid}/messages`)).json.length, 1);
  assert.equal((await owner.get(`/chatbot/${bot.uuid}/data-sources`)).json.length, 1);
  assert.equal((await owner.get("/chatbots")).json.filter((c) => c.name === "Mine now").length, 0);
});

test("the chatbot's rate limit applies to visitors and account traffic together", async () => {
  const message = "Busy right now, try again in a minute.";
  const bot = await chatbot({ visibility: "public", rate_limit: [2, 60], rate_limit_message: message });
  const v = visitor(await tokenFor(bot));
  const s = await newSession(v, bot);
  assert.equal((await v.post(`/session/${s.uuid}/message/stream`, { body: { query: "one" } })).status, 200);
  const ownerSession = await newSession(owner, bot);
  assert.equal((await owner.post(`/session/${ownerSession.uuid}/message/stream`, { body: { query: "two" } })).status, 200);
  const plain = await v.post(`/session/${s.uuid}/message/stream`, { body: { query: "three" } });
  assert.equal(plain.status, 429);
  assert.equal(plain.text, message);
  assert.ok(Number(plain.headers.get("retry-after")) >= 1);
  const sse = await v.post(`/session/${s.uuid}/message/stream`, { body: { query: "four" }, headers: { Accept: "text/event-stream" } });
  assert.equal(sse.status, 429);
  assert.deepEqual(parseEvents(sse.text), [{ event: "error", data: { code: "rate_limited", message } }]);
  assert.equal((await v.get(`/session/${s.uuid}/messages`)).json.length, 1);

  // New visitor sessions are limited the same way, in a count of their own.
  const other = visitor(await tokenFor(bot));
  assert.equal((await other.post(`/chatbot/${bot.uuid}/session/create`)).status, 200);
  const third = await other.post(`/chatbot/${bot.uuid}/session/create`);
  expectError(assert, third, 429, "rate_limited");
  assert.equal(third.json.error.message, message);
  assert.equal((await owner.post(`/chatbot/${bot.uuid}/session/create`)).status, 200, "the owner's sessions are not counted");
});

test("a visitor whose token ran out renews it and keeps its sessions", async () => {
  const bot = await chatbot({ visibility: "hybrid", allowed_origins: [SHOP] });
  const first = await tokenFor(bot, { origin: SHOP });
  const s = (await visitor(first, SHOP).post(`/chatbot/${bot.uuid}/session/create`)).json;
  const claims = claimsOf(first);
  const expired = sign({ ...claims, e: now() - 60 });

  const refused = await visitor(expired, SHOP).get(`/session/${s.uuid}/messages`);
  expectError(assert, refused, 401, "unauthorized");
  assert.equal(refused.headers.get("access-control-allow-origin"), SHOP, "the page can read the 401 and renew");

  const renewed = await mint(bot, { origin: SHOP, body: { token: expired } });
  assert.equal(renewed.status, 200, renewed.text);
  assert.equal(claimsOf(renewed.json.token).v, claims.v, "the same visitor");
  assert.equal((await visitor(renewed.json.token, SHOP).get(`/session/${s.uuid}/messages`)).status, 200);

  const fresh = await tokenFor(bot, { origin: SHOP });
  assert.notEqual(claimsOf(fresh).v, claims.v, "without the old token, a new visitor");
  expectError(assert, await visitor(fresh, SHOP).get(`/session/${s.uuid}/messages`), 404, "not_found");

  const stale = sign({ ...claims, e: now() - 2 * 86_400 });
  expectError(assert, await mint(bot, { origin: SHOP, body: { token: stale } }), 401, "unauthorized");
  expectError(assert, await mint(bot, { origin: SHOP, body: { token: expired.slice(0, -3) + "abc" } }), 401, "unauthorized");
  const otherBot = await chatbot({ visibility: "public" });
  expectError(assert, await mint(otherBot, { origin: SHOP, body: { token: expired } }), 403, "forbidden");
});

test("the page and widget files are served as they are, and /api stays the Worker's", async () => {
  const page = await worker.request("GET", "/");
  assert.equal(page.status, 200);
  assert.match(page.headers.get("content-type"), /^text\/html/);
  assert.match(page.text, /<title>edgechat<\/title>/);
  const csp = page.headers.get("content-security-policy");
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /connect-src 'self'/);
  assert.match(csp, /frame-ancestors 'none'/);
  const widgetPage = await worker.request("GET", "/widget?chatbot=00000000-0000-4000-8000-000000000000");
  assert.equal(widgetPage.status, 200);
  assert.doesNotMatch(widgetPage.headers.get("content-security-policy"), /frame-ancestors/, "other sites may frame it");
  const loader = await worker.request("GET", "/widget.js");
  assert.equal(loader.status, 200);
  assert.match(loader.headers.get("content-type"), /javascript/);
  // Nothing in the files names another host: everything comes from the Worker.
  for (const file of ["/", "/app.js", "/chat.js", "/app.css", "/widget", "/widget-frame.js", "/widget.js"]) {
    // Usage notes in comments may show a script tag; only code counts.
    const text = (await worker.request("GET", file)).text.replace(/^\s*\/\/.*$/gm, "");
    const external = [...text.matchAll(/(?:src|href|url)\s*[=(]\s*["']?(https?:)?\/\/[^"')\s]+/gi)].map((m) => m[0]);
    assert.deepEqual(external, [], `${file} loads ${external}`);
  }
  // The API keeps its own answers, also where no file exists.
  expectError(assert, await worker.request("GET", "/api/v1/nothing"), 404, "not_found");
  expectError(assert, await worker.request("GET", "/api/v1/app.js"), 404, "not_found");
  expectError(assert, await worker.request("GET", "/nothing-here"), 404, "not_found");
  assert.equal((await worker.request("GET", "/health")).status, 200);
  assert.equal((await worker.request("GET", "/_headers")).status, 404, "the headers file is not served");
});

test("without WIDGET_TOKEN_SECRET no visitor is let in, and the cause stays in the log", async () => {
  // Refusing visitors for want of the secret is an internal error, on purpose: its cause must
  // reach the operator's log, and nothing else may go wrong.
  const { worker: bare, api } = await startAccount({ vars: { WIDGET_TOKEN_SECRET: "" }, expectInternalErrors: true });
  try {
    const bot = await newChatbot(api, { name: "Open", visibility: "public" });
    const r = await bare.request("POST", `/api/v1/widget/${bot.uuid}/token`);
    const e = expectError(assert, r, 500, "internal");
    assert.doesNotMatch(e.message, /WIDGET_TOKEN_SECRET/);
    // A token signed with the secret of another Worker is no key here either.
    const foreign = await tokenFor(await chatbot({ visibility: "public" }));
    expectError(assert, await bare.request("GET", `/api/v1/session/${bot.uuid}/messages`, { key: foreign }), 500, "internal");
    // Account traffic is untouched.
    assert.equal((await api.get("/chatbots")).status, 200);
    await eventually(() => bare.internalErrors.length > 0);
    for (const line of bare.internalErrors) assert.match(line, /WIDGET_TOKEN_SECRET is not set/);
  } finally {
    await bare.dispose();
  }
});

test("one visitor flooding a public chatbot is held to its share while other visitors still get answers", async () => {
  const message = "Slow down a little, please.";
  const bot = await chatbot({ visibility: "public", rate_limit: [8, 60], rate_limit_message: message });
  assert.deepEqual(bot.meta.visitor_rate_limit, [2, 60], "a quarter of the chatbot's limit by default");
  const ask = async (v, s, query) => v.post(`/session/${s.uuid}/message/stream`, { body: { query } });
  const flooder = visitor(await tokenFor(bot));
  const floodSession = await newSession(flooder, bot);
  const answered = [];
  for (let i = 0; i < 6; i++) answered.push((await ask(flooder, floodSession, `Do you ship abroad? ${i}`)).status);
  assert.deepEqual(answered, [200, 200, 429, 429, 429, 429]);
  const refused = await ask(flooder, floodSession, "Do you ship abroad?");
  assert.equal(refused.text, message);
  assert.ok(Number(refused.headers.get("retry-after")) >= 1);

  // The flood used up only the flooder's share: three more visitors get theirs in full.
  for (let n = 0; n < 3; n++) {
    const other = visitor(await tokenFor(bot));
    const s = await newSession(other, bot);
    for (let i = 0; i < 2; i++) {
      const r = await ask(other, s, "Do you ship abroad?");
      assert.equal(r.status, 200, `visitor ${n}, message ${i}: ${r.text}`);
      assert.match(r.text, /40 countries/);
    }
  }
  // Now the chatbot's own limit (8) is used up, whoever asks.
  const late = visitor(await tokenFor(bot));
  const lateSession = await newSession(late, bot);
  assert.equal((await ask(late, lateSession, "Anyone there?")).status, 429);
  const ownerSession = await newSession(owner, bot);
  assert.equal((await owner.post(`/session/${ownerSession.uuid}/message/stream`, { body: { query: "hi" } })).status, 429);
});

test("a message the chatbot's rate refuses uses up nothing of the visitor's own window", async () => {
  const bot = await chatbot({ visibility: "public", rate_limit: [2, 2], visitor_rate_limit: [1, 60] });
  const ownerSession = await newSession(owner, bot);
  for (const query of ["one", "two"]) {
    assert.equal((await owner.post(`/session/${ownerSession.uuid}/message/stream`, { body: { query } })).status, 200);
  }
  const v = visitor(await tokenFor(bot));
  const s = await newSession(v, bot);
  assert.equal((await v.post(`/session/${s.uuid}/message/stream`, { body: { query: "refused" } })).status, 429, "the chatbot's rate is used up");
  // Once the chatbot's two seconds pass, the visitor's one message a minute is still unused.
  await sleep(2200);
  const answered = await v.post(`/session/${s.uuid}/message/stream`, { body: { query: "Do you ship abroad?" } });
  assert.equal(answered.status, 200, answered.text);
  assert.equal((await v.post(`/session/${s.uuid}/message/stream`, { body: { query: "again" } })).status, 429, "now the visitor's own window is used");
  assert.deepEqual((await v.get(`/session/${s.uuid}/messages`)).json.map((m) => m.query), ["Do you ship abroad?"]);
});

test("the owner sets each visitor's window, validated like rate_limit", async () => {
  const bot = await chatbot({ visibility: "public", rate_limit: [20, 60], visitor_rate_limit: [1, 60] });
  assert.deepEqual(bot.meta.visitor_rate_limit, [1, 60]);
  const v = visitor(await tokenFor(bot));
  const s = await newSession(v, bot);
  assert.equal((await v.post(`/session/${s.uuid}/message/stream`, { body: { query: "one" } })).status, 200);
  assert.equal((await v.post(`/session/${s.uuid}/message/stream`, { body: { query: "two" } })).status, 429);
  // One new session per window too, in a count of its own, however the session is opened:
  // a chat completion naming no session opens one.
  expectError(assert, await v.post(`/chatbot/${bot.uuid}/session/create`), 429, "rate_limited");
  const completion = await v.post("/openai/chat/completions", { body: { model: bot.uuid, messages: [{ role: "user", content: "three" }] } });
  assert.equal(completion.status, 429, completion.text);
  assert.equal(completion.json.error.type, "rate_limit_error");
  assert.deepEqual((await owner.get(`/chatbot/${bot.uuid}/sessions`)).json.map((x) => x.uuid), [s.uuid], "no session was opened");
  for (const bad of [[0, 60], [101, 60], [5, 361], [5], "5", [1.5, 60]]) {
    expectError(assert, await owner.post(`/chatbot/${bot.uuid}/update`, { body: { visitor_rate_limit: bad } }), 400, "invalid_request", "visitor_rate_limit");
  }
  const reset = await owner.post(`/chatbot/${bot.uuid}/update`, { body: { visitor_rate_limit: null } });
  assert.deepEqual(reset.json.meta.visitor_rate_limit, [5, 60], "null goes back to a quarter");
  assert.deepEqual((await owner.get(`/chatbot/${bot.uuid}`)).json.meta.visitor_rate_limit, [5, 60]);
});

test("minting visitor tokens is limited per client address", async () => {
  const w = await startWorker({ vars: { VISITOR_TOKEN_RATE_LIMIT: "3/60" } });
  const api = client(w, (await w.newAccount("owner")).key);
  const bot = (await api.post("/chatbot/create", { body: { name: "Public", visibility: "public" } })).json;
  const from = (ip) => w.request("POST", `/api/v1/widget/${bot.uuid}/token`, { headers: { "CF-Connecting-IP": ip } });
  for (let i = 0; i < 3; i++) assert.equal((await from("203.0.113.5")).status, 200);
  const r = await from("203.0.113.5");
  const err = expectError(assert, r, 429, "rate_limited");
  assert.match(err.message, /visitor tokens/);
  const retry = Number(r.headers.get("retry-after"));
  assert.ok(retry >= 1 && retry <= 60, `retry-after ${retry}`);
  assert.equal(r.headers.get("cache-control"), "no-store");
  // Another address is counted on its own.
  assert.equal((await from("198.51.100.9")).status, 200);
  // An IPv6 client is counted by its /64: a host cannot get a new count per address.
  for (const ip of ["2001:db8:0:7::1", "2001:db8:0:7::2", "2001:db8:0:7:ffff:1:2:3"]) assert.equal((await from(ip)).status, 200);
  expectError(assert, await from("2001:db8:0:7::4"), 429, "rate_limited");
  assert.equal((await from("2001:db8:0:8::1")).status, 200, "the next /64 is another client");
  // An IPv4 client reaching an IPv6 socket is the same IPv4 client.
  expectError(assert, await from("::ffff:203.0.113.5"), 429, "rate_limited");
  // A private chatbot still answers 404 before anything is counted.
  const hidden = (await api.post("/chatbot/create", { body: { name: "Private" } })).json;
  expectError(assert, await w.request("POST", `/api/v1/widget/${hidden.uuid}/token`, { headers: { "CF-Connecting-IP": "203.0.113.5" } }), 404, "not_found");
});

test("a visitor's session event stream ends when its token expires; a chatbot made private then refuses it", async () => {
  const bot = await chatbot({ visibility: "public" });
  const token = await tokenFor(bot);
  const s = await newSession(visitor(token), bot);
  const shortLived = sign({ ...claimsOf(token), e: now() + 2 });
  // The cap fails the test rather than waiting on a stream that never ends (the default
  // lifetime is 300 s).
  const res = await fetch(`${worker.base}/api/v1/session/${s.uuid}/events`, {
    headers: { Authorization: `Bearer ${shortLived}` }, signal: AbortSignal.timeout(30_000),
  });
  assert.equal(res.status, 200);
  assert.match(await res.text(), /^: listening/);
  expectError(assert, await visitor(shortLived).get(`/session/${s.uuid}/events`), 401, "unauthorized");
  await owner.post(`/chatbot/${bot.uuid}/update`, { body: { visibility: "private" } });
  expectError(assert, await visitor(token).get(`/session/${s.uuid}/events`), 404, "not_found");
});
