// Caps on sizes, each answering its contract error, and deletes that leave nothing behind.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { startAccount, newChatbot, firstAgent, newSession, expectError, settled, upload } from "./suite.mjs";

let worker, api, key;
before(async () => ({ worker, api, key } = await startAccount()));

test("string lengths and list sizes are capped with a 400 naming the field", async () => {
  const bot = await newChatbot(api, { name: "Limits" });
  const agent = await firstAgent(api, bot);
  const uuid = "00000000-0000-4000-8000-000000000000";
  const cases = [
    [`/chatbot/create`, { name: "n".repeat(201) }, "name"],
    [`/chatbot/${bot.uuid}/update`, { rate_limit_message: "m".repeat(2001) }, "rate_limit_message"],
    [`/agent/${agent.uuid}/update`, { prompt: "p".repeat(20_001) }, "prompt"],
    [`/agent/${agent.uuid}/update`, { description: "d".repeat(4001) }, "description"],
    [`/agent/${agent.uuid}/update`, { data_source_uuids: Array(1001).fill(uuid) }, "data_source_uuids"],
    [`/agent/${agent.uuid}/update`, { variables: Array.from({ length: 51 }, (_, i) => ({ name: `v${i}` })) }, "variables"],
    [`/chatbot/${bot.uuid}/agent/create`, { name: "t", type: "background", tags: Array.from({ length: 51 }, (_, i) => ({ name: `t${i}`, criteria: "c" })) }, "tags"],
    [`/chatbot/${bot.uuid}/data-source/qa`, { question: "q".repeat(2001), answer: "a" }, "question"],
    [`/chatbot/${bot.uuid}/data-source/qa`, { question: "q", answer: "a".repeat(20_001) }, "answer"],
    [`/chatbot/${bot.uuid}/data-source/url`, { url: `https://example.com/${"x".repeat(2100)}` }, "url"],
    [`/chatbot/${bot.uuid}/session/create`, { initial_variables: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, "v"])) }, "initial_variables"],
    [`/data-sources/delete`, { uuids: Array(1001).fill(uuid) }, "uuids"],
  ];
  for (const [path, body, field] of cases) {
    expectError(assert, await api.post(path, { body }), 400, "invalid_request", field);
  }
  expectError(assert, await api.post("/chatbot/create", { body: { name: "big", pad: "x".repeat(1_100_000) } }), 413, "payload_too_large");
  // Nothing above changed what was stored.
  const again = (await api.get(`/chatbot/${bot.uuid}/agents`)).json;
  assert.deepEqual(again, [agent]);
  assert.deepEqual((await api.get(`/chatbot/${bot.uuid}/data-sources`)).json, []);
});

test("deleting a chatbot leaves no row in any table and no object in R2", async () => {
  const bot = await newChatbot(api, { name: "Everything" });
  const agent = await firstAgent(api, bot);
  const qa = (await api.post(`/chatbot/${bot.uuid}/data-source/qa`, { body: { question: "Q?", answer: "A." } })).json;
  const file = (await upload(worker, key, bot.uuid, { name: "f.txt", bytes: Buffer.from("Some text to keep."), type: "text/plain" })).json;
  await settled(api, file.uuid);
  await api.post(`/chatbot/${bot.uuid}/source-tag/create`, { body: { name: "t", color: "#000", data_source_uuids: [qa.uuid] } });
  await api.post(`/agent/${agent.uuid}/tool-function/create`, { body: { name: "f", external_url: "https://example.com/" } });
  await api.post(`/chatbot/${bot.uuid}/agent/create`, { body: { name: "bg", type: "background" } });
  const session = await newSession(api, bot);
  await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "Q?" } });
  assert.equal((await worker.r2List(`chatbots/${bot.uuid}/`)).length, 1);

  assert.deepEqual((await api.del(`/chatbot/${bot.uuid}/delete`)).json, { success: true });

  const tables = (await worker.sql("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name NOT LIKE 'd1_%' AND name NOT LIKE 'chunks_fts%'")).map((t) => t.name);
  assert.ok(tables.includes("messages") && tables.includes("tool_functions"), tables.join(","));
  const ids = [bot.uuid, agent.uuid, qa.uuid, file.uuid, session.uuid];
  for (const table of tables) {
    const columns = (await worker.sql(`PRAGMA table_info(${table})`)).map((c) => c.name);
    const textColumns = columns.filter((c) => c.endsWith("uuid") || c === "uuid");
    if (!textColumns.length) continue;
    const where = textColumns.map((c) => ids.map((id) => `${c} = '${id}'`).join(" OR ")).join(" OR ");
    const [{ n }] = await worker.sql(`SELECT COUNT(*) AS n FROM ${table} WHERE ${where}`);
    assert.equal(n, 0, `${table} still holds rows of the deleted chatbot`);
  }
  const [{ drift }] = await worker.sql("SELECT (SELECT COUNT(*) FROM chunks_fts_docsize) - (SELECT COUNT(*) FROM chunks) AS drift");
  assert.equal(drift, 0);
  assert.deepEqual(await worker.r2List(`chatbots/${bot.uuid}/`), []);
});
