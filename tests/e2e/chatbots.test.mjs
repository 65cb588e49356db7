import { test, before } from "node:test";
import assert from "node:assert/strict";
import { startAccount, expectError, sleep, UUID_RE, TIMESTAMP_RE } from "./suite.mjs";

let worker, api;
before(async () => ({ worker, api } = await startAccount()));

const create = (body) => api.post("/chatbot/create", { body });

test("create fills the seed's defaults and makes the General Q&A agent", async () => {
  const r = await create({ name: "Support" });
  assert.equal(r.status, 200, r.text);
  const bot = r.json;
  assert.match(bot.uuid, UUID_RE);
  assert.match(bot.created_at, TIMESTAMP_RE);
  assert.equal(bot.modified_at, bot.created_at);
  assert.equal(bot.name, "Support");
  assert.deepEqual(bot.meta.rate_limit, [20, 240]);
  assert.equal(bot.meta.visibility, "private");
  assert.equal(bot.meta.show_citations, false);
  assert.ok(bot.meta.rate_limit_message.length > 10);
  assert.deepEqual(bot.meta.allowed_origins, []);

  const agents = await api.get(`/chatbot/${bot.uuid}/agents`);
  assert.equal(agents.status, 200);
  assert.equal(agents.json.length, 1);
  const [qa] = agents.json;
  assert.equal(qa.name, "General Q&A");
  assert.equal(qa.type, "user-facing");
  assert.equal(qa.enabled, 1);
  assert.equal(qa.meta.use_all_sources, true);
});

test("create takes every optional field", async () => {
  const r = await create({
    name: "Sales", visibility: "hybrid", rate_limit: [100, 360], rate_limit_message: "Slow down", show_citations: true,
    allowed_origins: ["https://Shop.Example/", "http://127.0.0.1:8080", "https://shop.example"],
    visitor_rate_limit: [10, 60],
    unknown_field: "is ignored",
  });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json.meta, {
    rate_limit: [100, 360], rate_limit_message: "Slow down", show_citations: true, visibility: "hybrid",
    allowed_origins: ["https://shop.example", "http://127.0.0.1:8080"], visitor_rate_limit: [10, 60],
  });
  assert.equal(r.json.unknown_field, undefined);
});

test("create refuses bad input naming the field, and stores nothing", async () => {
  const before = (await api.get("/chatbots")).json.length;
  const cases = [
    [{}, "name"], [{ name: "" }, "name"], [{ name: "   " }, "name"], [{ name: 42 }, "name"], [{ name: null }, "name"],
    [{ name: "x".repeat(201) }, "name"],
    [{ name: "a", visibility: "secret" }, "visibility"], [{ name: "a", visibility: 1 }, "visibility"],
    [{ name: "a", rate_limit: [0, 10] }, "rate_limit"], [{ name: "a", rate_limit: [101, 10] }, "rate_limit"],
    [{ name: "a", rate_limit: [10, 0] }, "rate_limit"], [{ name: "a", rate_limit: [10, 361] }, "rate_limit"],
    [{ name: "a", rate_limit: [10] }, "rate_limit"], [{ name: "a", rate_limit: "10,10" }, "rate_limit"],
    [{ name: "a", rate_limit: [2.5, 10] }, "rate_limit"],
    [{ name: "a", show_citations: "true" }, "show_citations"], [{ name: "a", rate_limit_message: ["x"] }, "rate_limit_message"],
    [{ name: "a", allowed_origins: "https://a.example" }, "allowed_origins"], [{ name: "a", allowed_origins: ["https://a.example/shop"] }, "allowed_origins"],
    [{ name: "a", allowed_origins: ["*"] }, "allowed_origins"], [{ name: "a", allowed_origins: [7] }, "allowed_origins"],
  ];
  for (const [body, field] of cases) {
    expectError(assert, await create(body), 400, "invalid_request", field);
  }
  assert.equal((await api.get("/chatbots")).json.length, before);
});

test("get and list return the caller's chatbots", async () => {
  const a = (await create({ name: "List A" })).json;
  const b = (await create({ name: "List B" })).json;
  const got = await api.get(`/chatbot/${a.uuid}`);
  assert.equal(got.status, 200);
  assert.deepEqual(got.json, a);
  const list = (await api.get("/chatbots")).json;
  const names = list.map((c) => c.name);
  assert.ok(names.indexOf("List A") < names.indexOf("List B"), "oldest first");
  assert.deepEqual(list.find((c) => c.uuid === b.uuid), b);
  // Upper-case uuids name the same chatbot.
  assert.equal((await api.get(`/chatbot/${a.uuid.toUpperCase()}`)).status, 200);
  expectError(assert, await api.get("/chatbot/00000000-0000-4000-8000-000000000000"), 404, "not_found");
  expectError(assert, await api.get("/chatbot/not-a-uuid"), 404, "not_found");
});

test("update changes only the fields sent and refreshes modified_at", async () => {
  const bot = (await create({ name: "Before", show_citations: true, rate_limit: [5, 50] })).json;
  await sleep(1100); // timestamps have one-second resolution
  const r = await api.post(`/chatbot/${bot.uuid}/update`, { body: { name: "After", visibility: "public" } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.name, "After");
  assert.equal(r.json.meta.visibility, "public");
  assert.equal(r.json.meta.show_citations, true);
  assert.deepEqual(r.json.meta.rate_limit, [5, 50]);
  assert.equal(r.json.created_at, bot.created_at);
  assert.ok(r.json.modified_at > bot.modified_at, `${r.json.modified_at} > ${bot.modified_at}`);
  assert.deepEqual((await api.get(`/chatbot/${bot.uuid}`)).json, r.json);

  const empty = await api.post(`/chatbot/${bot.uuid}/update`);
  assert.equal(empty.status, 200, "a bare POST changes nothing but is fine");
  assert.equal(empty.json.name, "After");
});

test("update refuses bad input and keeps what was stored", async () => {
  const bot = (await create({ name: "Keep" })).json;
  const cases = [
    [{ name: "" }, "name"], [{ rate_limit: [1, 1000] }, "rate_limit"], [{ visibility: "everyone" }, "visibility"], [{ show_citations: 1 }, "show_citations"],
    [{ allowed_origins: ["example.com"] }, "allowed_origins"],
  ];
  for (const [body, field] of cases) {
    expectError(assert, await api.post(`/chatbot/${bot.uuid}/update`, { body }), 400, "invalid_request", field);
  }
  expectError(assert, await api.post(`/chatbot/${bot.uuid}/update`, { raw: "{bad json", headers: { "Content-Type": "application/json" } }), 400, "invalid_json");
  assert.deepEqual((await api.get(`/chatbot/${bot.uuid}`)).json, bot);
  expectError(assert, await api.post("/chatbot/00000000-0000-4000-8000-000000000000/update", { body: { name: "x" } }), 404, "not_found");
});

test("delete removes the chatbot and every row it owns", async () => {
  const bot = (await create({ name: "Doomed" })).json;
  await api.post(`/chatbot/${bot.uuid}/agent/create`, { body: { name: "Tagger", type: "background" } });
  const del = await api.del(`/chatbot/${bot.uuid}/delete`);
  assert.equal(del.status, 200);
  assert.deepEqual(del.json, { success: true });
  expectError(assert, await api.get(`/chatbot/${bot.uuid}`), 404, "not_found");
  expectError(assert, await api.get(`/chatbot/${bot.uuid}/agents`), 404, "not_found");
  expectError(assert, await api.del(`/chatbot/${bot.uuid}/delete`), 404, "not_found");
  const rows = await worker.sql(
    `SELECT (SELECT COUNT(*) FROM chatbots WHERE uuid = '${bot.uuid}') AS chatbots, ` +
    `(SELECT COUNT(*) FROM agents WHERE chatbot_uuid = '${bot.uuid}') AS agents`,
  );
  assert.deepEqual(rows[0], { chatbots: 0, agents: 0 });
});

test("updates of different fields sent at the same moment all stand", async () => {
  const bot = (await create({ name: "race" })).json;
  const [agent] = (await api.get(`/chatbot/${bot.uuid}/agents`)).json;
  for (let round = 1; round <= 3; round++) {
    const answers = await Promise.all([
      api.post(`/chatbot/${bot.uuid}/update`, { body: { name: `name ${round}` } }),
      api.post(`/chatbot/${bot.uuid}/update`, { body: { rate_limit: [round, 60] } }),
      api.post(`/chatbot/${bot.uuid}/update`, { body: { show_citations: round % 2 === 1 } }),
      api.post(`/chatbot/${bot.uuid}/update`, { body: { visibility: round % 2 === 1 ? "public" : "private" } }),
      api.post(`/agent/${agent.uuid}/update`, { body: { temperature: round / 10 } }),
      api.post(`/agent/${agent.uuid}/update`, { body: { description: `description ${round}` } }),
      api.post(`/agent/${agent.uuid}/update`, { body: { prompt: `prompt ${round}` } }),
    ]);
    for (const r of answers) assert.equal(r.status, 200, r.text);
    const stored = (await api.get(`/chatbot/${bot.uuid}`)).json;
    assert.deepEqual(
      [stored.name, stored.meta.rate_limit, stored.meta.show_citations, stored.meta.visibility],
      [`name ${round}`, [round, 60], round % 2 === 1, round % 2 === 1 ? "public" : "private"],
      `round ${round}`,
    );
    const [a] = (await api.get(`/chatbot/${bot.uuid}/agents`)).json;
    assert.deepEqual([a.meta.temperature, a.description, a.prompt], [round / 10, `description ${round}`, `prompt ${round}`], `round ${round}`);
  }
});
