// Two accounts: every endpoint that takes a uuid, called with the second account's key on the
// first account's resources, answers 404 exactly like a missing uuid and changes nothing.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { readFile, writeFile, mkdir } from "node:fs/promises";
import path from "node:path";
import { startWorker, client, newChatbot, newSession, expectError, settled, upload as uploadFile, ROOT, OUTPUT } from "./suite.mjs";

let worker, owner, intruder, fixture;

// One entry per route with a {uuid}: which of the owner's resources goes in the path, and a
// body that would change something if the call were allowed through.
const CASES = {
  "DELETE /api/v1/api-key/{uuid}/delete": { uuid: "key" },
  "GET /api/v1/chatbot/{uuid}": { uuid: "chatbot" },
  "POST /api/v1/chatbot/{uuid}/update": { uuid: "chatbot", body: { name: "hijacked", visibility: "public" } },
  "DELETE /api/v1/chatbot/{uuid}/delete": { uuid: "chatbot" },
  "GET /api/v1/chatbot/{uuid}/agents": { uuid: "chatbot" },
  "POST /api/v1/chatbot/{uuid}/agent/create": { uuid: "chatbot", body: { name: "implant", type: "background" } },
  "POST /api/v1/agent/{uuid}/update": { uuid: "agent", body: { name: "hijacked", enabled: false } },
  "DELETE /api/v1/agent/{uuid}/delete": { uuid: "agent" },
  "POST /api/v1/chatbot/{uuid}/data-source/qa": { uuid: "chatbot", body: { question: "implant?", answer: "yes" } },
  "POST /api/v1/chatbot/{uuid}/data-source/url": { uuid: "chatbot", body: { url: "https://example.com/" } },
  "POST /api/v1/chatbot/{uuid}/data-source/upload": { uuid: "chatbot", upload: true },
  "GET /api/v1/chatbot/{uuid}/data-sources": { uuid: "chatbot" },
  "GET /api/v1/data-source/{uuid}": { uuid: "source" },
  "POST /api/v1/data-source/{uuid}/update": { uuid: "source", body: { title: "hijacked" } },
  "POST /api/v1/data-source/{uuid}/delete": { uuid: "source" },
  "POST /api/v1/chatbot/{uuid}/source-tag/create": { uuid: "chatbot", body: { name: "implant", color: "#000" } },
  "GET /api/v1/chatbot/{uuid}/source-tags": { uuid: "chatbot" },
  "POST /api/v1/source-tag/{uuid}/update": { uuid: "tag", body: { name: "hijacked", data_source_uuids: [] } },
  "DELETE /api/v1/source-tag/{uuid}/delete": { uuid: "tag" },
  "POST /api/v1/chatbot/{uuid}/search": { uuid: "chatbot", body: { query: "secret" } },
  "POST /api/v1/chatbot/{uuid}/session/create": { uuid: "chatbot", body: {} },
  "GET /api/v1/chatbot/{uuid}/sessions": { uuid: "chatbot" },
  "GET /api/v1/session/{uuid}": { uuid: "session" },
  "POST /api/v1/session/{uuid}/delete": { uuid: "session" },
  "GET /api/v1/session/{uuid}/messages": { uuid: "session" },
  "POST /api/v1/session/{uuid}/message/stream": { uuid: "session", body: { query: "What is the secret?" } },
  "POST /api/v1/session/{uuid}/message/non-stream": { uuid: "session", body: { query: "What is the secret?" } },
  "POST /api/v1/message/{uuid}/delete": { uuid: "message" },
  "POST /api/v1/agent/{uuid}/tool-function/create": { uuid: "agent", body: { name: "implant", external_url: "https://example.com/" } },
  "GET /api/v1/agent/{uuid}/tool-functions": { uuid: "agent" },
  "POST /api/v1/tool-function/{uuid}/update": { uuid: "tool", body: { name: "hijacked" } },
  "DELETE /api/v1/tool-function/{uuid}/delete": { uuid: "tool" },
  "POST /api/v1/session/{uuid}/live-chat/start": { uuid: "session" },
  "POST /api/v1/session/{uuid}/live-chat/message": { uuid: "session", body: { text: "hijacked" } },
  "POST /api/v1/session/{uuid}/live-chat/end": { uuid: "session" },
  "GET /api/v1/message/{uuid}": { uuid: "message" },
  "GET /api/v1/message/{uuid}/stream": { uuid: "message" },
  "POST /api/v1/message/{uuid}/stop": { uuid: "message" },
  "GET /api/v1/session/{uuid}/events": { uuid: "session" },
  "POST /api/v1/message/{uuid}/feedback": { uuid: "message", body: { rating: "down", comment: "hijacked" } },
  "GET /api/v1/chatbot/{uuid}/feedback": { uuid: "chatbot" },
  "GET /api/v1/session/{uuid}/messages/plain-text": { uuid: "session" },
  "POST /api/v1/chatbot/{uuid}/webhook/create": { uuid: "chatbot", body: { url: "http://127.0.0.1:9/implant", events: ["message.created"] } },
  "GET /api/v1/chatbot/{uuid}/webhooks": { uuid: "chatbot" },
  "POST /api/v1/chatbot/{uuid}/data-source/crawl": { uuid: "chatbot", body: { url: "http://127.0.0.1:9/implant" } },
  "GET /api/v1/chatbot/{uuid}/crawls": { uuid: "chatbot" },
  "GET /api/v1/crawl/{uuid}": { uuid: "crawl" },
  "POST /api/v1/crawl/{uuid}/sync": { uuid: "crawl" },
  "POST /api/v1/crawl/{uuid}/update": { uuid: "crawl", body: { refresh: "daily" } },
  "DELETE /api/v1/crawl/{uuid}/delete": { uuid: "crawl" },
  "POST /api/v1/webhook/{uuid}/update": { uuid: "webhook", body: { url: "http://127.0.0.1:9/hijacked", enabled: true } },
  "POST /api/v1/webhook/{uuid}/rotate-secret": { uuid: "webhook" },
  "DELETE /api/v1/webhook/{uuid}/delete": { uuid: "webhook" },
  "GET /api/v1/webhook/{uuid}/deliveries": { uuid: "webhook" },
  "POST /api/v1/webhook/{uuid}/test": { uuid: "webhook" },
  "GET /api/v1/chatbot/{uuid}/unanswered": { uuid: "chatbot" },
  "GET /api/v1/chatbot/{uuid}/analytics": { uuid: "chatbot" },
  "GET /api/v1/chatbot/{uuid}/export": { uuid: "chatbot" },
  // Needs no key: the owner's chatbot is private, so to anyone else it does not exist.
  "POST /api/v1/widget/{uuid}/token": { uuid: "chatbot", body: {} },
};

// Bulk endpoints take uuids in the body; the owner's uuids must read as missing too.
const BULK = {
  "POST /api/v1/data-sources/delete": (f) => ({ uuids: [f.source] }),
  "POST /api/v1/data-sources/url/re-scrape": (f) => ({ uuids: [f.link] }),
  "POST /api/v1/messages/delete": (f) => ({ uuids: [f.message] }),
};

// The OpenAI-compatible routes answer in OpenAI's error shape, which names the model asked
// for: a foreign uuid must read exactly as a missing one once the names are swapped.
const OPENAI_CASES = {
  "GET /api/v1/openai/models/{uuid}": { uuid: "chatbot" },
};

async function routesWithUuid() {
  const source = await readFile(path.join(ROOT, "crates/core/src/api/routes.rs"), "utf8");
  return [...source.matchAll(/route\("([A-Z]+)",\s*"([^"]+)"/g)]
    .map(([, method, p]) => `${method} ${p}`)
    .filter((r) => r.includes("{uuid}"));
}

async function snapshot() {
  const a = client(worker, owner.key);
  return {
    sources: (await a.get(`/chatbot/${fixture.chatbot}/data-sources`)).json,
    tags: (await a.get(`/chatbot/${fixture.chatbot}/source-tags`)).json,
    objects: await worker.r2List(""),
    sessions: (await a.get(`/chatbot/${fixture.chatbot}/sessions`)).json,
    tools: (await a.get(`/agent/${fixture.agent}/tool-functions`)).json,
    messages: (await a.get(`/session/${fixture.session}/messages`)).json,
    chatbot: (await a.get(`/chatbot/${fixture.chatbot}`)).json,
    agents: (await a.get(`/chatbot/${fixture.chatbot}/agents`)).json,
    // When a key was last used moves by itself (once a minute at most); it is not a change.
    keys: (await a.get("/api-keys")).json.map(({ last_used_at, ...k }) => k),
    chatbots: (await a.get("/chatbots")).json,
    webhooks: (await a.get(`/chatbot/${fixture.chatbot}/webhooks`)).json,
    deliveries: (await a.get(`/webhook/${fixture.webhook}/deliveries`)).json,
    feedback: (await a.get(`/chatbot/${fixture.chatbot}/feedback`)).json,
    analytics: (await a.get(`/chatbot/${fixture.chatbot}/analytics`)).json,
  };
}

before(async () => {
  worker = await startWorker();
  owner = await worker.newAccount("owner");
  intruder = await worker.newAccount("intruder");
  const a = client(worker, owner.key);
  const bot = await newChatbot(a, { name: "Private bot" });
  const agent = (await a.post(`/chatbot/${bot.uuid}/agent/create`, { body: { name: "Second", type: "user-facing", enabled: true } })).json;
  const source = (await a.post(`/chatbot/${bot.uuid}/data-source/qa`, { body: { question: "Secret?", answer: "The secret is 42." } })).json;
  const link = (await a.post(`/chatbot/${bot.uuid}/data-source/url`, { body: { url: `${worker.base}/health` } })).json;
  await settled(a, link.uuid);
  const tag = (await a.post(`/chatbot/${bot.uuid}/source-tag/create`, { body: { name: "Mine", color: "#123456", data_source_uuids: [source.uuid] } })).json;
  const session = await newSession(a, bot, { initial_variables: { plan: "gold" } });
  const message = (await a.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "What is the secret?" } })).json;
  const tool = (await a.post(`/agent/${agent.uuid}/tool-function/create`, { body: { name: "lookup", external_url: "https://example.com/api" } })).json;
  await a.post(`/message/${message.uuid}/feedback`, { body: { rating: "up" } });
  // Disabled, so the fixture's own events send nothing anywhere.
  const webhook = (await a.post(`/chatbot/${bot.uuid}/webhook/create`, { body: { url: "http://127.0.0.1:9/owner", events: ["message.created"], enabled: false } })).json;
  // A site nobody answers for: the crawl exists, and finds nothing that could change the snapshot.
  const crawl = (await a.post(`/chatbot/${bot.uuid}/data-source/crawl`, { body: { url: "http://127.0.0.1:9/site", max_pages: 1 } })).json;
  fixture = { crawl: crawl.uuid, webhook: webhook.uuid, tool: tool.uuid, key: owner.uuid, chatbot: bot.uuid, agent: agent.uuid, source: source.uuid, link: link.uuid, tag: tag.uuid, session: session.uuid, message: message.uuid };
});

test("the isolation table covers every route that takes a uuid", async () => {
  assert.deepEqual((await routesWithUuid()).sort(), [...Object.keys(CASES), ...Object.keys(OPENAI_CASES)].sort());
  const source = await readFile(path.join(ROOT, "crates/core/src/api/routes.rs"), "utf8");
  const bulk = [...source.matchAll(/route\("([A-Z]+)",\s*"([^"]+)"/g)].map(([, m, p]) => `${m} ${p}`).filter((r) => / \/api\/v1\/(data-sources|messages)\//.test(r));
  assert.deepEqual(bulk.sort(), Object.keys(BULK).sort());
});

test("another account's uuids answer 404, exactly as missing ones, and change nothing", async () => {
  const before = await snapshot();
  const b = client(worker, intruder.key);
  for (const [route, { uuid, body, upload }] of Object.entries(CASES)) {
    const [method, template] = route.split(" ");
    const p = template.replace("/api/v1", "").replace("{uuid}", fixture[uuid]);
    const send = (target) => upload
      ? uploadFile(worker, intruder.key, target, { name: "implant.txt", bytes: Buffer.from("implant") })
      : b[{ GET: "get", POST: "post", DELETE: "del" }[method]](p.replace(fixture[uuid], target), { body });
    const foreign = await send(fixture[uuid]);
    const err = expectError(assert, foreign, 404, "not_found");
    const missing = await send("00000000-0000-4000-8000-000000000000");
    assert.equal(missing.status, 404, route);
    assert.deepEqual(err, missing.json.error, `${route}: a foreign uuid must look exactly like a missing one`);
  }
  for (const [route, makeBody] of Object.entries(BULK)) {
    const p = route.split(" ")[1].replace("/api/v1", "");
    expectError(assert, await b.post(p, { body: makeBody(fixture) }), 404, "not_found");
  }
  for (const [route, { uuid }] of Object.entries(OPENAI_CASES)) {
    const p = route.split(" ")[1].replace("/api/v1", "");
    const absent = "00000000-0000-4000-8000-000000000000";
    const foreign = await b.get(p.replace("{uuid}", fixture[uuid]));
    const missing = await b.get(p.replace("{uuid}", absent));
    assert.equal(foreign.status, 404, `${route}: ${foreign.text}`);
    assert.equal(missing.status, 404, route);
    assert.equal(foreign.json.error.type, "not_found_error", foreign.text);
    assert.deepEqual(JSON.parse(foreign.text.replaceAll(fixture[uuid], absent)), missing.json,
      `${route}: a foreign uuid must look exactly like a missing one`);
  }
  assert.deepEqual(await snapshot(), before);
  assert.deepEqual((await b.get("/chatbots")).json, [], "the intruder sees none of the owner's chatbots");
  assert.equal((await b.get("/api-keys")).json.length, 1, "the intruder lists only its own key");
});

// Scopes: a key of each scope against every route of the table, each route's scope read from
// the table itself. Calls that pass name a missing uuid (or send a body that cannot be read),
// so a passing call changes nothing; a refused one is 403 naming the scope the route needs.
const GRANTS = {
  admin: () => true,
  manage: (needed) => needed !== "admin",
  chat: (needed) => needed === "chat",
  read: (needed, method) => method === "GET" && needed !== "admin",
};

async function routeAccess() {
  const source = await readFile(path.join(ROOT, "crates/core/src/api/routes.rs"), "utf8");
  const table = source.slice(source.indexOf("pub const ROUTES"), source.indexOf("];", source.indexOf("pub const ROUTES")));
  const lines = [...table.matchAll(/route\(([^)]*\)?)\)/g)].map(([, args]) => args);
  const routes = [...table.matchAll(/route\("([A-Z]+)",\s*"([^"]+)",\s*\w+,\s*(Public|Key\((\w+)\))\)/g)]
    .map(([, method, p, , scope]) => ({ method, path: p, scope: scope?.toLowerCase() ?? null }));
  assert.equal(routes.length, lines.length, "every route declares Public or Key(scope)");
  return routes;
}

test("a key of each scope opens exactly the routes its scope covers, and the 403 names the scope needed", async () => {
  const routes = await routeAccess();
  const keyed = routes.filter((r) => r.scope);
  assert.ok(keyed.length > 40, `only ${keyed.length} keyed routes`);
  assert.deepEqual([...new Set(keyed.map((r) => r.scope))].sort(), ["admin", "chat", "manage"]);
  const admin = client(worker, owner.key);
  const keys = {};
  for (const scope of Object.keys(GRANTS)) {
    const r = await admin.post("/api-key/create", { body: { name: scope, scopes: [scope] } });
    assert.equal(r.status, 200, r.text);
    keys[scope] = r.json.key;
  }
  const before = await snapshot();
  const missing = "00000000-0000-4000-8000-000000000000";
  const matrix = [];
  for (const { method, path: template, scope: needed } of keyed) {
    const target = template.replaceAll("{uuid}", missing);
    for (const [scope, key] of Object.entries(keys)) {
      const opts = { key };
      if (method === "POST") Object.assign(opts, { raw: "{", headers: { "Content-Type": "application/json" } });
      const r = await worker.request(method, target, opts);
      const allowed = GRANTS[scope](needed, method);
      matrix.push(`${scope.padEnd(6)} ${allowed ? "opens " : "403   "} ${method} ${template}`);
      if (allowed) {
        assert.ok(![401, 403].includes(r.status) && r.status < 500, `${scope} on ${method} ${template}: ${r.status} ${r.text}`);
      } else {
        const err = expectError(assert, r, 403, "forbidden");
        assert.ok(err.message.includes(`\`${needed}\``), `${scope} on ${method} ${template}: ${err.message}`);
      }
    }
  }
  await mkdir(OUTPUT, { recursive: true });
  await writeFile(path.join(OUTPUT, "scope-matrix.txt"), matrix.join("\n") + "\n");
  // The operator's token opens the key routes and nothing else.
  for (const { method, path: template, scope: needed } of keyed) {
    const r = await worker.request(method, template.replaceAll("{uuid}", missing), { key: worker.adminToken, ...(method === "POST" ? { raw: "{", headers: { "Content-Type": "application/json" } } : {}) });
    if (needed === "admin") assert.ok(![401, 403].includes(r.status), `${method} ${template}: ${r.status}`);
    else expectError(assert, r, 403, "forbidden");
  }
  assert.deepEqual(await snapshot(), before, "no call of the matrix changed anything");
});

test("another account's sources neither correct nor cut a question: its search reads only its own chatbot's words", async () => {
  const a = client(worker, owner.key);
  const b = client(worker, intruder.key);
  const spelled = (await a.post(`/chatbot/${fixture.chatbot}/data-source/qa`, {
    body: { question: "How do I reset my password?", answer: "Use the password link on the sign-in page; a member may ship it by courier." },
  })).json;
  await settled(a, spelled.uuid);
  const mine = await newChatbot(b, { name: "Own words only" });
  const own = (await b.post(`/chatbot/${mine.uuid}/data-source/qa`, { body: { question: "When are you open?", answer: "Every weekday from nine to five." } })).json;
  await settled(b, own.uuid);
  // The owner's chatbot holds "password", "member" and "ship": its own search uses them.
  const theirs = await a.post(`/chatbot/${fixture.chatbot}/search`, { body: { query: "forgot my pasword" } });
  assert.equal(theirs.json.search_query, "forgot my password", theirs.text);
  // The intruder's holds none of them: nothing is corrected or cut, so nothing tells it what
  // the owner's sources say.
  for (const query of ["forgot my pasword", "annual membership"]) {
    const r = await b.post(`/chatbot/${mine.uuid}/search`, { body: { query } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.search_query, undefined, `${query}: ${r.text}`);
    assert.deepEqual(r.json.results, [], r.text);
  }
  await a.post(`/data-source/${spelled.uuid}/delete`);
});
