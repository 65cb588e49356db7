// Two accounts: every endpoint that takes a uuid, called with the second account's key on the
// first account's resources, answers 404 exactly like a missing uuid and changes nothing.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { startWorker, client, expectError, ROOT } from "./harness.mjs";

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
};

async function routesWithUuid() {
  const source = await readFile(path.join(ROOT, "src/routes.rs"), "utf8");
  return [...source.matchAll(/route\("([A-Z]+)",\s*"([^"]+)"/g)]
    .map(([, method, p]) => `${method} ${p}`)
    .filter((r) => r.includes("{uuid}"));
}

async function snapshot() {
  const a = client(worker, owner.key);
  return {
    chatbot: (await a.get(`/chatbot/${fixture.chatbot}`)).json,
    agents: (await a.get(`/chatbot/${fixture.chatbot}/agents`)).json,
    keys: (await a.get("/api-keys")).json,
    chatbots: (await a.get("/chatbots")).json,
  };
}

before(async () => {
  worker = await startWorker();
  owner = await worker.newAccount("owner");
  intruder = await worker.newAccount("intruder");
  const a = client(worker, owner.key);
  const bot = (await a.post("/chatbot/create", { body: { name: "Private bot" } })).json;
  const agent = (await a.post(`/chatbot/${bot.uuid}/agent/create`, { body: { name: "Second", type: "user-facing", enabled: true } })).json;
  fixture = { key: owner.uuid, chatbot: bot.uuid, agent: agent.uuid };
});
after(async () => { await worker?.dispose(); });

test("the isolation table covers every route that takes a uuid", async () => {
  assert.deepEqual((await routesWithUuid()).sort(), Object.keys(CASES).sort());
});

test("another account's uuids answer 404, exactly as missing ones, and change nothing", async () => {
  const before = await snapshot();
  const b = client(worker, intruder.key);
  for (const [route, { uuid, body }] of Object.entries(CASES)) {
    const [method, template] = route.split(" ");
    const p = template.replace("/api/v1", "").replace("{uuid}", fixture[uuid]);
    const foreign = await b[{ GET: "get", POST: "post", DELETE: "del" }[method]](p, { body });
    const err = expectError(assert, foreign, 404, "not_found");
    const missing = await b[{ GET: "get", POST: "post", DELETE: "del" }[method]](
      template.replace("/api/v1", "").replace("{uuid}", "00000000-0000-4000-8000-000000000000"), { body });
    assert.equal(missing.status, 404, route);
    assert.deepEqual(err, missing.json.error, `${route}: a foreign uuid must look exactly like a missing one`);
  }
  assert.deepEqual(await snapshot(), before);
  assert.deepEqual((await b.get("/chatbots")).json, [], "the intruder sees none of the owner's chatbots");
  assert.equal((await b.get("/api-keys")).json.length, 1, "the intruder lists only its own key");
});
