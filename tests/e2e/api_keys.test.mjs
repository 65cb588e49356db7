import { test, before } from "node:test";
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { startWorker, client, newChatbot, newSession, expectError, eventually, sleep, UUID_RE, TIMESTAMP_RE } from "./suite.mjs";

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
  expectError(assert, await admin.get("/chatbots"), 403, "forbidden");
  expectError(assert, await admin.post("/chatbot/create", { body: { name: "x" } }), 403, "forbidden");
});

// Scoped keys: what each scope opens is checked route by route in isolation.test.mjs; here
// the key's own life: what it shows, when it stops working, where from, how often.

const keyOf = async (api, body) => {
  const r = await api.post("/api-key/create", { body });
  assert.equal(r.status, 200, r.text);
  return r.json;
};

test("a key lists its scopes, expiry, addresses, rate and a prefix that is not the secret", async () => {
  const acct = await worker.newAccount("owner");
  const api = client(worker, acct.key);
  assert.deepEqual(acct.scopes, ["admin"], "a key is admin unless told otherwise");
  const expires = new Date(Date.now() + 86_400_000).toISOString().replace(/\.\d+Z$/, "Z");
  const made = await keyOf(api, { name: "dashboard", scopes: ["read", "chat", "read"], expires_at: expires, allowed_ips: ["203.0.113.0/24", "2001:db8::1"], rate_limit: [50, 60] });
  const listed = (await api.get("/api-keys")).json.find((k) => k.uuid === made.uuid);
  assert.deepEqual(listed, {
    uuid: made.uuid, name: "dashboard", account_uuid: acct.account_uuid, prefix: made.key.slice(0, 9), created_at: made.created_at,
    scopes: ["read", "chat"], expires_at: expires, allowed_ips: ["203.0.113.0/24", "2001:db8::1/128"], rate_limit: [50, 60], last_used_at: null,
  });
  assert.equal(listed.prefix.length, 9, "ec_ and six characters: not enough to use the key");
  // Any key reads its own record, whatever its scopes; only admin keys list the others.
  const self = await client(worker, made.key).get("/api-key/current", { headers: { "CF-Connecting-IP": "203.0.113.1" } });
  assert.equal(self.status, 200, self.text);
  assert.deepEqual({ ...self.json, last_used_at: null }, listed);
  expectError(assert, await client(worker, made.key).get("/api-keys", { headers: { "CF-Connecting-IP": "203.0.113.1" } }), 403, "forbidden");
  assert.ok(!JSON.stringify((await api.get("/api-keys")).json).includes(made.key));
  const bad = [
    [{ scopes: [] }, "scopes"], [{ scopes: ["root"] }, "scopes"], [{ scopes: "read" }, "scopes"],
    [{ expires_at: "tomorrow" }, "expires_at"], [{ expires_at: "2001-01-01T00:00:00Z" }, "expires_at"], [{ expires_at: 1 }, "expires_at"],
    [{ allowed_ips: ["10.0.0.0/40"] }, "allowed_ips"], [{ allowed_ips: ["example.com"] }, "allowed_ips"], [{ allowed_ips: "10.0.0.1" }, "allowed_ips"],
    [{ rate_limit: [0, 60] }, "rate_limit"], [{ rate_limit: [10, 3601] }, "rate_limit"], [{ rate_limit: [10] }, "rate_limit"],
  ];
  const before = (await api.get("/api-keys")).json.length;
  for (const [body, field] of bad) {
    expectError(assert, await api.post("/api-key/create", { body }), 400, "invalid_request", field);
  }
  assert.equal((await api.get("/api-keys")).json.length, before, "no refused key was stored");
});

test("a key stored before scopes existed does everything, as before", async () => {
  const acct = await worker.newAccount("legacy");
  const secret = `ec_${randomBytes(32).toString("hex")}`;
  const hash = createHash("sha256").update(secret).digest("hex");
  // Only the columns the first migration had: the rest take their defaults.
  await worker.sql(`INSERT INTO api_keys (uuid, account_uuid, name, key_hash, prefix, created_at) VALUES ('00000000-0000-4000-8000-0000000000aa', '${acct.account_uuid}', 'old', '${hash}', '${secret.slice(0, 9)}', '2025-01-01T00:00:00Z')`);
  const old = client(worker, secret);
  const bot = await newChatbot(old, { name: "Still mine" });
  assert.equal((await old.post(`/chatbot/${bot.uuid}/update`, { body: { name: "Renamed" } })).status, 200);
  const made = await keyOf(old, { name: "made by the old key", scopes: ["admin"] });
  assert.deepEqual(made.scopes, ["admin"]);
  const listed = (await old.get("/api-keys")).json.find((k) => k.name === "old");
  assert.deepEqual([listed.scopes, listed.expires_at, listed.allowed_ips, listed.rate_limit], [["admin"], null, [], null]);
  assert.equal((await old.del(`/api-key/${made.uuid}/delete`)).status, 200);
});

test("a key cannot make a key wider than itself", async () => {
  const acct = await worker.newAccount("owner");
  const admin = client(worker, acct.key);
  const manage = client(worker, (await keyOf(admin, { scopes: ["manage"] })).key);
  const chat = client(worker, (await keyOf(admin, { scopes: ["chat", "read"] })).key);
  const keysBefore = (await admin.get("/api-keys")).json.length;
  for (const [api, scopes] of [[manage, ["admin"]], [manage, ["read"]], [chat, ["chat"]], [chat, undefined]]) {
    const r = await api.post("/api-key/create", { body: { name: "wider", scopes } });
    const err = expectError(assert, r, 403, "forbidden");
    assert.match(err.message, /`admin`/, err.message);
  }
  for (const [api] of [[manage], [chat]]) {
    expectError(assert, await api.get("/api-keys"), 403, "forbidden");
  }
  assert.equal((await admin.get("/api-keys")).json.length, keysBefore, "no key was made");
  // The operator and admin keys give any scope.
  assert.deepEqual((await keyOf(client(worker, worker.adminToken), { account_uuid: acct.account_uuid, scopes: ["read"] })).scopes, ["read"]);
  assert.deepEqual((await keyOf(admin, { scopes: ["manage", "chat"] })).scopes, ["manage", "chat"]);
});

test("a key limited in time, place or rate makes keys only within those limits", async () => {
  const acct = await worker.newAccount("owner");
  const admin = client(worker, acct.key);
  const expires = new Date(Date.now() + 3600_000).toISOString().replace(/\.\d+Z$/, "Z");
  const later = new Date(Date.now() + 7200_000).toISOString().replace(/\.\d+Z$/, "Z");
  const temp = await keyOf(admin, { name: "contractor", expires_at: expires, allowed_ips: ["203.0.113.0/24"], rate_limit: [50, 60] });
  const from = { headers: { "CF-Connecting-IP": "203.0.113.9" } };
  const contractor = client(worker, temp.key);
  const keysBefore = (await admin.get("/api-keys")).json.length;
  for (const [wider, named] of [
    [{ expires_at: later }, /expires_at/], [{ allowed_ips: ["0.0.0.0/0"] }, /0\.0\.0\.0\/0/],
    [{ allowed_ips: ["203.0.113.0/25", "198.51.100.1"] }, /198\.51\.100\.1/], [{ rate_limit: [60, 60] }, /rate_limit/],
  ]) {
    const err = expectError(assert, await contractor.post("/api-key/create", { body: { name: "forever", ...wider }, ...from }), 403, "forbidden");
    assert.match(err.message, named, err.message);
  }
  assert.equal((await admin.get("/api-keys")).json.length, keysBefore, "no key was made");
  // Left out, each limit is the maker's; a narrower one is kept.
  const r = await contractor.post("/api-key/create", { body: { name: "twin" }, ...from });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual([r.json.expires_at, r.json.allowed_ips, r.json.rate_limit], [expires, ["203.0.113.0/24"], [50, 60]]);
  const narrower = await contractor.post("/api-key/create", { body: { allowed_ips: ["203.0.113.9"], rate_limit: [10, 60] }, ...from });
  assert.equal(narrower.status, 200, narrower.text);
  assert.deepEqual([narrower.json.expires_at, narrower.json.allowed_ips, narrower.json.rate_limit], [expires, ["203.0.113.9/32"], [10, 60]]);
});

test("an expired key answers 401", async () => {
  const acct = await worker.newAccount("owner");
  const admin = client(worker, acct.key);
  const soon = new Date(Date.now() + 3_000).toISOString().replace(/\.\d+Z$/, "Z");
  const made = await keyOf(admin, { scopes: ["read"], expires_at: soon });
  const short = client(worker, made.key);
  assert.equal((await short.get("/chatbots")).status, 200, "works until then");
  await sleep(Math.max(0, Date.parse(soon) - Date.now()) + 1_100);
  const r = await short.get("/chatbots");
  const err = expectError(assert, r, 401, "unauthorized");
  assert.match(err.message, /expired/);
  assert.equal(r.headers.get("www-authenticate"), "Bearer");
  assert.equal((await admin.get("/chatbots")).status, 200, "other keys are unaffected");
});

test("a key bound to addresses answers 403 from anywhere else", async () => {
  const acct = await worker.newAccount("owner");
  const admin = client(worker, acct.key);
  const bound = client(worker, (await keyOf(admin, { allowed_ips: ["203.0.113.0/24", "2001:db8::/32"] })).key);
  const from = (ip) => ({ headers: { "CF-Connecting-IP": ip } });
  assert.equal((await bound.get("/chatbots", from("203.0.113.77"))).status, 200);
  assert.equal((await bound.get("/chatbots", from("2001:db8:5::1"))).status, 200);
  for (const ip of ["198.51.100.1", "203.0.114.1", "2001:db9::1"]) {
    const err = expectError(assert, await bound.get("/chatbots", from(ip)), 403, "forbidden");
    assert.match(err.message, /address/);
  }
  // Without the header the local server reports a loopback address, which is not listed.
  expectError(assert, await bound.get("/chatbots"), 403, "forbidden");
  expectError(assert, await bound.post("/chatbot/create", { body: { name: "x" }, ...from("198.51.100.1") }), 403, "forbidden");
  assert.deepEqual((await admin.get("/chatbots")).json, [], "nothing was created from the wrong address");
  // An IPv4 address written the way an IPv6 socket sees it is that IPv4 address.
  const mapped = await keyOf(admin, { allowed_ips: ["::ffff:198.51.100.7"] });
  assert.deepEqual(mapped.allowed_ips, ["198.51.100.7/32"]);
  const mappedKey = client(worker, mapped.key);
  assert.equal((await mappedKey.get("/chatbots", from("198.51.100.7"))).status, 200);
  assert.equal((await mappedKey.get("/chatbots", from("::ffff:198.51.100.7"))).status, 200);
  expectError(assert, await mappedKey.get("/chatbots", from("198.51.100.8")), 403, "forbidden");
});

test("a key that only reads sees a tool function's header values and URL password hidden", async () => {
  const acct = await worker.newAccount("owner");
  const admin = client(worker, acct.key);
  const bot = await newChatbot(admin, { name: "Shop" });
  const agent = (await admin.get(`/chatbot/${bot.uuid}/agents`)).json[0];
  const made = await admin.post(`/agent/${agent.uuid}/tool-function/create`, {
    body: { name: "orders", external_url: "https://shop:s3cret@orders.example/api", headers: { Authorization: "Bearer live-token" } },
  });
  assert.equal(made.status, 200, made.text);
  assert.equal(made.json.headers.Authorization, "Bearer live-token", "the one who configures sees what was set");
  const reader = client(worker, (await keyOf(admin, { scopes: ["read"] })).key);
  const listed = [
    (await reader.get(`/agent/${agent.uuid}/tool-functions`)).json[0],
    (await reader.get(`/chatbot/${bot.uuid}/agents`)).json[0].tool_functions[0],
  ];
  for (const f of listed) {
    assert.deepEqual(f.headers, { Authorization: "[hidden]" });
    assert.equal(f.external_url, "https://shop:[hidden]@orders.example/api");
    assert.equal(f.name, "orders");
  }
  const manager = client(worker, (await keyOf(admin, { scopes: ["manage"] })).key);
  assert.equal((await manager.get(`/agent/${agent.uuid}/tool-functions`)).json[0].headers.Authorization, "Bearer live-token");
});

test("a message is refused to a key that is expired, from another address or without the chat scope, and nothing is stored", async () => {
  // A message's turn reads its session while the key is checked: the read must count for nothing.
  const acct = await worker.newAccount("owner");
  const admin = client(worker, acct.key);
  const bot = await newChatbot(admin, { name: "Guarded" });
  const session = await newSession(admin, bot);
  const soon = new Date(Date.now() + 2_000).toISOString().replace(/\.\d+Z$/, "Z");
  const expiring = (await keyOf(admin, { scopes: ["chat"], expires_at: soon })).key;
  const bound = (await keyOf(admin, { scopes: ["chat"], allowed_ips: ["203.0.113.0/24"] })).key;
  const reader = (await keyOf(admin, { scopes: ["read"] })).key;
  const paths = ["stream", "non-stream"].map((kind) => `/api/v1/session/${session.uuid}/message/${kind}`);
  for (const path of paths) {
    assert.equal((await worker.request("POST", path, { key: bound, body: { query: "hello" }, headers: { "CF-Connecting-IP": "203.0.113.9" } })).status, 200);
  }
  await sleep(Math.max(0, Date.parse(soon) - Date.now()) + 1_100);
  for (const path of paths) {
    assert.match(expectError(assert, await worker.request("POST", path, { key: expiring, body: { query: "hello" } }), 401, "unauthorized").message, /expired/);
    assert.match(expectError(assert, await worker.request("POST", path, { key: bound, body: { query: "hello" }, headers: { "CF-Connecting-IP": "198.51.100.1" } }), 403, "forbidden").message, /address/);
    assert.match(expectError(assert, await worker.request("POST", path, { key: reader, body: { query: "hello" } }), 403, "forbidden").message, /`chat`/);
  }
  assert.equal((await worker.sql(`SELECT COUNT(*) AS n FROM messages WHERE session_uuid = '${session.uuid}'`))[0].n, 2, "only the two admitted messages");
});

test("last_used_at moves when a key is used, at most once a minute", async () => {
  const acct = await worker.newAccount("owner");
  const admin = client(worker, acct.key);
  const made = await keyOf(admin, { name: "backend", scopes: ["chat"] });
  const usedAt = async () => (await admin.get("/api-keys")).json.find((k) => k.uuid === made.uuid).last_used_at;
  assert.equal(await usedAt(), null);
  const before = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const backend = client(worker, made.key);
  expectError(assert, await backend.get("/chatbot/00000000-0000-4000-8000-000000000000/sessions"), 404, "not_found");
  const first = await eventually(usedAt);
  assert.match(first, TIMESTAMP_RE);
  assert.ok(first >= before, `${first} >= ${before}`);
  await backend.get("/chatbot/00000000-0000-4000-8000-000000000000/sessions");
  await sleep(1_100);
  await backend.get("/chatbot/00000000-0000-4000-8000-000000000000/sessions");
  await sleep(300);
  assert.equal(await usedAt(), first, "reads within the minute do not write again");
  // A refused call (wrong scope) does not count as use of another key either.
  const reader = await keyOf(admin, { scopes: ["read"] });
  expectError(assert, await client(worker, reader.key).post("/chatbot/create", { body: { name: "x" } }), 403, "forbidden");
  await sleep(300);
  assert.equal((await admin.get("/api-keys")).json.find((k) => k.uuid === reader.uuid).last_used_at, null);
});

test("a key over its request rate gets 429 with Retry-After and X-RateLimit headers", async () => {
  const acct = await worker.newAccount("owner");
  const admin = client(worker, acct.key);
  const limited = client(worker, (await keyOf(admin, { rate_limit: [3, 60] })).key);
  for (const remaining of [2, 1, 0]) {
    const r = await limited.get("/chatbots");
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get("x-ratelimit-limit"), "3");
    assert.equal(r.headers.get("x-ratelimit-remaining"), String(remaining));
    const reset = Number(r.headers.get("x-ratelimit-reset"));
    assert.ok(reset >= 1 && reset <= 60, `reset ${reset}`);
  }
  const r = await limited.post("/chatbot/create", { body: { name: "one too many" } });
  const err = expectError(assert, r, 429, "rate_limited");
  assert.match(err.message, /3 requests allowed in 60 seconds/);
  const retry = Number(r.headers.get("retry-after"));
  assert.ok(retry >= 1 && retry <= 60, `retry-after ${retry}`);
  assert.equal(r.headers.get("x-ratelimit-limit"), "3");
  assert.equal(r.headers.get("x-ratelimit-remaining"), "0");
  assert.equal(r.headers.get("x-ratelimit-reset"), String(retry));
  assert.deepEqual((await admin.get("/chatbots")).json, [], "the refused request did nothing");
  const other = await admin.get("/chatbots");
  assert.equal(other.status, 200, "the account's other keys count on their own");
  assert.equal(other.headers.get("x-ratelimit-limit"), "100000", "the test Worker's default rate");
});

test("messages refused by a key's own rate use up nothing of the chatbot's rate", async () => {
  const acct = await worker.newAccount("owner");
  const owner = client(worker, acct.key);
  const bot = await newChatbot(owner, { name: "Shared", rate_limit: [3, 60] });
  const session = await newSession(owner, bot);
  // The key's rate counts every request; the chatbot's, every message it admits.
  const limited = client(worker, (await keyOf(owner, { rate_limit: [2, 60] })).key);
  const ask = (api, query) => api.post(`/session/${session.uuid}/message/stream`, { body: { query } });
  const first = await ask(limited, "one");
  assert.equal(first.status, 200, first.text);
  assert.equal(first.headers.get("x-ratelimit-remaining"), "1");
  assert.equal((await ask(limited, "two")).status, 200);
  for (let i = 0; i < 4; i++) {
    const refused = await ask(limited, `flood ${i}`);
    const err = expectError(assert, refused, 429, "rate_limited");
    assert.match(err.message, /2 requests allowed in 60 seconds/);
    assert.equal(refused.headers.get("x-ratelimit-remaining"), "0");
  }
  // The chatbot admitted two messages, not six: its third is still there for anyone.
  assert.equal((await ask(owner, "three")).status, 200);
  const full = await ask(owner, "four");
  assert.equal(full.status, 429, "now the chatbot's own rate refuses");
  assert.doesNotMatch(full.text, /requests allowed/);
  const stored = (await owner.get(`/session/${session.uuid}/messages`)).json;
  assert.deepEqual(stored.map((m) => m.query), ["one", "two", "three"]);
});

test("keys without their own rate get the default, API_KEY_RATE_LIMIT", async () => {
  const w = await startWorker({ vars: { API_KEY_RATE_LIMIT: "2/60" } });
  const acct = await w.newAccount("owner");
  const api = client(w, acct.key);
  assert.equal((await api.get("/chatbots")).headers.get("x-ratelimit-limit"), "2");
  assert.equal((await api.get("/chatbots")).status, 200);
  expectError(assert, await api.get("/chatbots"), 429, "rate_limited");
  // The operator's token is not an API key: it is not counted.
  const admin = client(w, w.adminToken);
  for (let i = 0; i < 3; i++) assert.equal((await admin.get("/api-keys")).status, 200);
  const own = await w.request("POST", "/api/v1/api-key/create", { key: w.adminToken, body: { account_uuid: acct.account_uuid, rate_limit: [5, 60] } });
  const five = client(w, own.json.key);
  for (let i = 0; i < 5; i++) assert.equal((await five.get("/chatbots")).status, 200);
  expectError(assert, await five.get("/chatbots"), 429, "rate_limited");
});

/** Reads a GET stream with `key` to its end; refuses to wait past `capMs`, so a stream that
 * never ends fails the test instead of holding it. */
async function readToEnd(w, path, key, capMs) {
  const res = await fetch(`${w.base}/api/v1${path}`, { headers: { Authorization: `Bearer ${key}` }, signal: AbortSignal.timeout(capMs) });
  return { status: res.status, text: await res.text() };
}

test("a session event stream lasts SESSION_EVENTS_SECONDS, so a deleted key cannot keep listening", async () => {
  const w = await startWorker({ vars: { SESSION_EVENTS_SECONDS: "2" } });
  const acct = await w.newAccount("owner");
  const owner = client(w, acct.key);
  const bot = await newChatbot(owner, { name: "Listened to" });
  const session = await newSession(owner, bot);
  const made = await owner.post("/api-key/create", { body: { name: "listener", scopes: ["chat"] } });
  assert.equal(made.status, 200, made.text);
  const started = Date.now();
  const events = await readToEnd(w, `/session/${session.uuid}/events`, made.json.key, 30_000);
  assert.equal(events.status, 200);
  assert.match(events.text, /^: listening/);
  assert.ok(Date.now() - started >= 1500, "the stream stayed open about its lifetime");
  assert.equal((await owner.del(`/api-key/${made.json.uuid}/delete`)).status, 200);
  expectError(assert, await client(w, made.json.key).get(`/session/${session.uuid}/events`), 401, "unauthorized");
});

test("a key's open event stream is closed by the first message after the key is deleted, and ends when the key expires", async () => {
  const acct = await worker.newAccount("listened");
  const owner = client(worker, acct.key);
  const bot = await newChatbot(owner, { name: "Live chat" });
  const session = await newSession(owner, bot);
  const made = await owner.post("/api-key/create", { body: { name: "listener", scopes: ["chat"] } });
  assert.equal(made.status, 200, made.text);
  const listening = readToEnd(worker, `/session/${session.uuid}/events`, made.json.key, 30_000);
  await sleep(300);
  assert.equal((await owner.post(`/session/${session.uuid}/live-chat/start`)).status, 200);
  await sleep(300);
  assert.equal((await owner.del(`/api-key/${made.json.uuid}/delete`)).status, 200);
  assert.equal((await owner.post(`/session/${session.uuid}/live-chat/message`, { body: { text: "SECRET after the key went" } })).status, 200);
  const heard = await listening;
  assert.equal(heard.status, 200);
  assert.match(heard.text, /event: message/, "the announcement while the key stood arrived");
  assert.doesNotMatch(heard.text, /SECRET/);

  const expiresAt = new Date(Date.now() + 3_000).toISOString().replace(/\.\d+Z$/, "Z");
  const brief = await owner.post("/api-key/create", { body: { name: "brief", scopes: ["chat"], expires_at: expiresAt } });
  assert.equal(brief.status, 200, brief.text);
  const started = Date.now();
  const ended = await readToEnd(worker, `/session/${session.uuid}/events`, brief.json.key, 30_000);
  assert.equal(ended.status, 200);
  assert.ok(Date.now() - started < 15_000, "the stream ended with its key, not after the stream lifetime");
});

test("a key on the default rate cannot make one with a bigger burst; HEAD is a read; the admin token elsewhere is 403", async () => {
  const acct = await worker.newAccount("bursts");
  const owner = client(worker, acct.key);
  const parent = await owner.post("/api-key/create", { body: { name: "ten a minute", rate_limit: [10, 60] } });
  assert.equal(parent.status, 200, parent.text);
  const limited = client(worker, parent.json.key);
  // The same pace as its maker, but 600 at once where the maker has 10.
  const burst = await limited.post("/api-key/create", { body: { name: "burst", rate_limit: [600, 3600] } });
  expectError(assert, burst, 403, "forbidden");
  assert.match(burst.json.error.message, /rate_limit/);
  const slower = await limited.post("/api-key/create", { body: { name: "slower", rate_limit: [5, 60] } });
  assert.equal(slower.status, 200, slower.text);
  const reader = await owner.post("/api-key/create", { body: { name: "reader", scopes: ["read"] } });
  assert.equal(reader.status, 200, reader.text);
  const head = await worker.request("HEAD", "/api/v1/chatbots", { key: reader.json.key });
  assert.equal(head.status, 200);
  expectError(assert, await client(worker, worker.adminToken).get("/chatbots"), 403, "forbidden");
});
