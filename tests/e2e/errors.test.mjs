import { test, before } from "node:test";
import assert from "node:assert/strict";
import { startAccount, expectError } from "./suite.mjs";

let worker, api, key;
before(async () => ({ worker, api, key } = await startAccount()));

test("health answers without credentials", async () => {
  for (const p of ["/health", "/api/v1/health"]) {
    const r = await worker.request("GET", p);
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, { status: "ok" });
  }
});

test("HEAD is answered wherever GET is, with GET's status and headers and no body", async () => {
  for (const [p, opts] of [["/health", {}], ["/api/v1/chatbots", { key }], ["/api/v1/openapi.json", {}]]) {
    const get = await worker.request("GET", p, opts);
    const head = await fetch(`${worker.base}${p}`, { method: "HEAD", headers: opts.key ? { Authorization: `Bearer ${key}` } : {} });
    assert.equal(head.status, get.status, p);
    assert.equal(head.headers.get("content-type"), get.headers.get("content-type"), p);
    assert.equal(await head.text(), "", p);
  }
  const refused = await fetch(`${worker.base}/api/v1/chatbot/create`, { method: "HEAD", headers: { Authorization: `Bearer ${key}` } });
  assert.equal(refused.status, 405);
  assert.equal(refused.headers.get("allow"), "POST");
});

test("unknown paths are 404 in the contract's shape", async () => {
  // "/" is the chat page (a static file); every other path without a file or a route is a 404.
  for (const p of ["/nothing-here", "/api/v1", "/api/v1/nothing", "/api/v2/chatbots", "/api/v1/chatbot//agents"]) {
    expectError(assert, await worker.request("GET", p, { key }), 404, "not_found");
  }
});

test("a wrong method is 405 with Allow", async () => {
  const cases = [
    ["GET", "/api/v1/chatbot/create", "POST"],
    ["POST", "/api/v1/chatbots", "GET"],
    ["PUT", "/api/v1/chatbot/00000000-0000-4000-8000-000000000000", "GET"],
    ["POST", "/api/v1/chatbot/00000000-0000-4000-8000-000000000000/delete", "DELETE"],
    ["GET", "/api/v1/agent/00000000-0000-4000-8000-000000000000/update", "POST"],
  ];
  for (const [method, p, allow] of cases) {
    const r = await worker.request(method, p, { key });
    expectError(assert, r, 405, "method_not_allowed");
    assert.equal(r.headers.get("allow"), allow);
  }
});

test("malformed JSON, non-object bodies and wrong media types", async () => {
  const headers = { "Content-Type": "application/json" };
  for (const raw of ["{", "{\"name\": }", "nul", "{\"name\":\"a\",}"]) {
    expectError(assert, await api.post("/chatbot/create", { raw, headers }), 400, "invalid_json");
  }
  for (const raw of ["[]", "\"name\"", "42", "null"]) {
    expectError(assert, await api.post("/chatbot/create", { raw, headers }), 400, "invalid_request");
  }
  expectError(assert, await api.post("/chatbot/create", { raw: "name=a", headers: { "Content-Type": "application/x-www-form-urlencoded" } }), 415, "unsupported_media_type");
  expectError(assert, await api.post("/chatbot/create", { raw: "name", headers: { "Content-Type": "text/plain" } }), 415, "unsupported_media_type");
  // No Content-Type at all (fetch sends none for bytes): the body is read as JSON.
  assert.equal((await api.post("/chatbot/create", { raw: Buffer.from(JSON.stringify({ name: "untyped" })) })).status, 200);
});

test("JSON as clients write it: a byte order mark, half an emoji, an empty form body; and what is still refused, said plainly", async () => {
  const headers = { "Content-Type": "application/json" };
  const bom = await api.post("/chatbot/create", { raw: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"name":"with a mark"}')]), headers });
  assert.equal(bom.status, 200, bom.text);
  assert.equal(bom.json.name, "with a mark");
  // JSON.stringify writes an emoji cut in two as its lone escaped half.
  const half = await api.post("/chatbot/create", { raw: '{"name":"cut \\ud83d here"}', headers });
  assert.equal(half.status, 200, half.text);
  assert.equal(half.json.name, "cut \ufffd here");
  // `curl -d ''` declares a form with nothing in it: a bare POST where every field is optional.
  const bare = await api.post(`/chatbot/${bom.json.uuid}/session/create`, { raw: "", headers: { "Content-Type": "application/x-www-form-urlencoded" } });
  assert.equal(bare.status, 200, bare.text);
  const deep = await api.post("/chatbot/create", { raw: `{"name":${"[".repeat(200)}${"]".repeat(200)}}`, headers });
  expectError(assert, deep, 400, "invalid_json");
  assert.match(deep.json.error.message, /deeper than 128 levels/);
  const fraction = await api.post(`/chatbot/${bom.json.uuid}/search`, { body: { query: "anything", limit: 2.5 } });
  expectError(assert, fraction, 400, "invalid_request");
  assert.equal(fraction.json.error.field, "limit");
  assert.equal((await api.post(`/chatbot/${bom.json.uuid}/search`, { body: { query: "anything", limit: 3.0 } })).status, 200);
});

test("a body over the limit is 413 and stores nothing", async () => {
  const before = (await api.get("/chatbots")).json.length;
  const r = await api.post("/chatbot/create", { body: { name: "big", padding: "x".repeat(1_100_000) } });
  expectError(assert, r, 413, "payload_too_large");
  assert.equal((await api.get("/chatbots")).json.length, before);
});

test("errors never leak internals", async () => {
  const r = await api.post("/chatbot/create", { body: { name: "x", rate_limit: [1, 999] } });
  expectError(assert, r, 400, "invalid_request", "rate_limit");
  assert.doesNotMatch(r.text, /D1|SQL|sqlite|panicked|wasm/i);
});
