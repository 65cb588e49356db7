import { test, before } from "node:test";
import assert from "node:assert/strict";
import { startWorker, client, newChatbot, newSession, expectError, UUID_RE, TIMESTAMP_RE } from "./suite.mjs";

let worker;
before(async () => { worker = await startWorker(); });

test("the admin token creates a key on a new account, shown once and stored hashed", async () => {
  const created = await worker.newAccount("first");
  assert.match(created.uuid, UUID_RE);
  assert.match(created.account_uuid, UUID_RE);
  assert.match(created.created_at, TIMESTAMP_RE);
  assert.equal(created.name, "first");
  assert.match(created.key, /^ec_[0-9a-f]{64}$/);

  const rows = await worker.sql("SELECT * FROM api_keys");
  assert.equal(rows.length, 1);
  assert.notEqual(rows[0].key_hash, created.key);
  assert.ok(!JSON.stringify(rows).includes(created.key.slice(3)), "no plaintext key in D1");

  const listed = await client(worker, created.key).get("/api-keys");
  assert.equal(listed.status, 200);
  assert.equal(listed.json.length, 1);
  assert.equal(listed.json[0].uuid, created.uuid);
  assert.equal(listed.json[0].key, undefined, "lists never show secrets");
  assert.ok(!listed.text.includes(created.key));
});

test("an account key creates more keys on its own account only", async () => {
  const first = await worker.newAccount("a");
  const other = await worker.newAccount("b");
  const api = client(worker, first.key);
  const second = await api.post("/api-key/create", { body: { name: "ci" } });
  assert.equal(second.status, 200);
  assert.equal(second.json.account_uuid, first.account_uuid);
  // The new key works at once.
  assert.equal((await client(worker, second.json.key).get("/chatbots")).status, 200);
  // Another account's uuid reads as missing.
  expectError(assert, await api.post("/api-key/create", { body: { account_uuid: other.account_uuid } }), 404, "not_found");
  const keys = await api.get("/api-keys");
  assert.deepEqual(keys.json.map((k) => k.name).sort(), ["a", "ci"]);
});

test("the admin token adds keys to an existing account and lists or filters every key", async () => {
  const acct = await worker.newAccount("owner");
  const admin = client(worker, worker.adminToken);
  const extra = await admin.post("/api-key/create", { body: { account_uuid: acct.account_uuid, name: "extra" } });
  assert.equal(extra.status, 200);
  assert.equal(extra.json.account_uuid, acct.account_uuid);
  const filtered = await admin.get(`/api-keys?account_uuid=${acct.account_uuid}`);
  assert.deepEqual(filtered.json.map((k) => k.name), ["owner", "extra"]);
  const all = await admin.get("/api-keys");
  assert.ok(all.json.length >= 2);
  expectError(assert, await admin.post("/api-key/create", { body: { account_uuid: "00000000-0000-4000-8000-000000000000" } }), 404, "not_found");
  expectError(assert, await admin.post("/api-key/create", { body: { account_uuid: "nope" } }), 400, "invalid_request", "account_uuid");
  expectError(assert, await admin.post("/api-key/create", { body: { name: 7 } }), 400, "invalid_request", "name");
  expectError(assert, await admin.get("/api-keys?account_uuid=bad"), 400, "invalid_request", "account_uuid");
});

test("a deleted key fails on the very next request", async () => {
  const acct = await worker.newAccount("doomed");
  const api = client(worker, acct.key);
  assert.equal((await api.get("/chatbots")).status, 200);
  const del = await api.del(`/api-key/${acct.uuid}/delete`);
  assert.equal(del.status, 200);
  assert.deepEqual(del.json, { success: true });
  const after = await api.get("/chatbots");
  expectError(assert, after, 401, "unauthorized");
  assert.equal(after.headers.get("www-authenticate"), "Bearer");
  assert.equal((await worker.sql(`SELECT COUNT(*) AS n FROM api_keys WHERE uuid = '${acct.uuid}'`))[0].n, 0);
});

test("a deleted key fails at once on the routes that check it inside their first read", async () => {
  const owner = await worker.newAccount("owner");
  const api = client(worker, owner.key);
  const bot = await newChatbot(api, { name: "Keyed" });
  const session = await newSession(api, bot);
  const missing = "00000000-0000-4000-8000-000000000000";
  const calls = [
    ["GET", `/api/v1/chatbot/${bot.uuid}`],
    ["GET", `/api/v1/chatbot/${bot.uuid}/agents`],
    ["POST", `/api/v1/chatbot/${bot.uuid}/search`, { query: "opening hours" }],
    ["POST", `/api/v1/session/${session.uuid}/message/non-stream`, { query: "hello" }],
    ["POST", `/api/v1/session/${session.uuid}/message/stream`, { query: "hello" }],
  ];
  for (const [method, path, body] of calls) {
    assert.equal((await worker.request(method, path, { key: owner.key, body })).status, 200, `${path} answers its owner`);
  }
  const doomed = await worker.newAccount("doomed twice");
  // A valid key of another account: the records are not there for it.
  for (const [method, path, body] of calls) {
    expectError(assert, await worker.request(method, path, { key: doomed.key, body }), 404, "not_found");
    expectError(assert, await worker.request(method, path.replace(/[0-9a-f-]{36}/, missing), { key: doomed.key, body }), 404, "not_found");
  }
  assert.equal((await client(worker, worker.adminToken).del(`/api-key/${doomed.uuid}/delete`)).status, 200);
  for (const [method, path, body] of calls) {
    for (const target of [path, path.replace(/[0-9a-f-]{36}/, missing)]) {
      const r = await worker.request(method, target, { key: doomed.key, body });
      expectError(assert, r, 401, "unauthorized");
      assert.equal(r.headers.get("www-authenticate"), "Bearer");
    }
    if (method === "POST") {
      // A malformed body is judged after the key.
      const raw = await worker.request(method, path, { key: doomed.key, raw: "{", headers: { "Content-Type": "application/json" } });
      expectError(assert, raw, 401, "unauthorized");
    }
  }
  assert.equal((await worker.sql(`SELECT COUNT(*) AS n FROM messages WHERE chatbot_uuid = '${bot.uuid}'`))[0].n, 2, "only the owner's two messages");
  // Creating a chatbot checks the key inside its insert: a deleted key stores nothing.
  const chatbotsBefore = (await worker.sql("SELECT COUNT(*) AS n FROM chatbots"))[0].n;
  const agentsBefore = (await worker.sql("SELECT COUNT(*) AS n FROM agents"))[0].n;
  const create = await worker.request("POST", "/api/v1/chatbot/create", { key: doomed.key, body: { name: "Ghost" } });
  expectError(assert, create, 401, "unauthorized");
  assert.equal((await worker.sql("SELECT COUNT(*) AS n FROM chatbots"))[0].n, chatbotsBefore);
  assert.equal((await worker.sql("SELECT COUNT(*) AS n FROM agents"))[0].n, agentsBefore);
  const made = await worker.request("POST", "/api/v1/chatbot/create", { key: owner.key, body: { name: "Real" } });
  assert.equal(made.status, 200, made.text);
  assert.ok(owner.account_uuid);
  assert.equal((await worker.sql(`SELECT account_uuid FROM chatbots WHERE uuid = '${made.json.uuid}'`))[0].account_uuid, owner.account_uuid);
});

test("keys of other accounts cannot be deleted, the admin can delete any", async () => {
  const a = await worker.newAccount("a");
  const b = await worker.newAccount("b");
  expectError(assert, await client(worker, a.key).del(`/api-key/${b.uuid}/delete`), 404, "not_found");
  assert.equal((await client(worker, b.key).get("/chatbots")).status, 200, "b still works");
  expectError(assert, await client(worker, a.key).del("/api-key/not-a-uuid/delete"), 404, "not_found");
  assert.equal((await client(worker, worker.adminToken).del(`/api-key/${b.uuid}/delete`)).status, 200);
  expectError(assert, await client(worker, b.key).get("/chatbots"), 401, "unauthorized");
});

test("missing, malformed and unknown credentials are 401 with WWW-Authenticate", async () => {
  const cases = [
    {},
    { headers: { Authorization: "Basic abc" } },
    { headers: { Authorization: "Bearer" } },
    { headers: { Authorization: "Bearer ec_0000000000000000000000000000000000000000000000000000000000000000" } },
  ];
  for (const opts of cases) {
    const r = await worker.request("GET", "/api/v1/chatbots", opts);
    expectError(assert, r, 401, "unauthorized");
    assert.equal(r.headers.get("www-authenticate"), "Bearer");
  }
  expectError(assert, await worker.request("POST", "/api/v1/api-key/create", { body: {} }), 401, "unauthorized");
});

test("the admin token manages keys and nothing else", async () => {
  const admin = client(worker, worker.adminToken);
  expectError(assert, await admin.get("/chatbots"), 401, "unauthorized");
  expectError(assert, await admin.post("/chatbot/create", { body: { name: "x" } }), 401, "unauthorized");
});
