import { test, before } from "node:test";
import assert from "node:assert/strict";
import { startAccount, newChatbot as createChatbot, expectError, sleep, UUID_RE, TIMESTAMP_RE } from "./suite.mjs";

let api;
before(async () => ({ api } = await startAccount()));

const newChatbot = () => createChatbot(api, { name: "Agents" });
const createAgent = (bot, body) => api.post(`/chatbot/${bot.uuid}/agent/create`, { body });

test("agents of each type carry every seed field", async () => {
  const bot = await newChatbot();
  const uf = await createAgent(bot, {
    name: "Billing", type: "user-facing", prompt: "Answer billing questions for {{company}}.", description: "billing and invoices",
    model: "gpt-4o-mini-4k", temperature: 0.7, enabled: true,
    variables: [{ name: "company", description: "the company", example: "Acme, Initech", type: "string", default_value: { content: "Acme", static: 0 } }],
  });
  assert.equal(uf.status, 200, uf.text);
  const a = uf.json;
  assert.match(a.uuid, UUID_RE);
  assert.match(a.created_at, TIMESTAMP_RE);
  assert.equal(a.enabled, true);
  assert.deepEqual(a.meta, { model: "gpt-4o-mini-4k", temperature: 0.7, use_all_sources: true, bias: 0 });
  assert.deepEqual(a.data_source_uuids, []);
  assert.deepEqual(a.tool_functions, []);
  assert.deepEqual(a.variables, [{ name: "company", description: "the company", example: "Acme, Initech", type: "string", default_value: { content: "Acme", static: 0 } }]);
  assert.equal(a.human_escalation_settings, undefined);

  const bg = (await createAgent(bot, { name: "Tagger", type: "background", tags: [{ name: "Sales lead", color: "#FF8800", criteria: "asks about pricing" }] })).json;
  assert.equal(bg.enabled, false, "new agents start disabled");
  assert.deepEqual(bg.meta.tags, [{ name: "Sales lead", color: "#ff8800", criteria: "asks about pricing" }]);
  assert.equal(bg.meta.model, "gpt-4o-mini-16k");
  assert.equal(bg.variables, undefined);

  const he = (await createAgent(bot, { name: "Human", type: "human-escalation", bias: -0.4, human_escalation_settings: { human_requested_message: "A person will reply soon." } })).json;
  assert.deepEqual(he.meta, { bias: -0.4 });
  assert.equal(he.prompt, "");
  assert.equal(he.human_escalation_settings.human_requested_message, "A person will reply soon.");
  for (const key of ["live_chat_start_announcement", "live_chat_end_announcement"]) assert.equal(typeof he.human_escalation_settings[key], "string");
  assert.deepEqual(he.human_escalation_settings.monitored_messages, []);
  assert.ok([0, 1].includes(he.human_escalation_settings.notifications_enabled));
  assert.ok([0, 1].includes(he.human_escalation_settings.sound_enabled));

  const list = (await api.get(`/chatbot/${bot.uuid}/agents`)).json;
  assert.deepEqual(list.map((x) => [x.name, x.type, x.enabled]), [
    ["General Q&A", "user-facing", 1], ["Billing", "user-facing", 1], ["Tagger", "background", 0], ["Human", "human-escalation", 0],
  ]);
});

test("a second human-escalation agent is a conflict", async () => {
  const bot = await newChatbot();
  assert.equal((await createAgent(bot, { name: "H1", type: "human-escalation" })).status, 200);
  expectError(assert, await createAgent(bot, { name: "H2", type: "human-escalation" }), 409, "conflict");
  assert.equal((await api.get(`/chatbot/${bot.uuid}/agents`)).json.length, 2);
  // Other chatbots are unaffected.
  assert.equal((await createAgent(await newChatbot(), { name: "H", type: "human-escalation" })).status, 200);
});

test("create refuses bad input naming the field", async () => {
  const bot = await newChatbot();
  const cases = [
    [{ type: "user-facing" }, "name"], [{ name: "x" }, "type"], [{ name: "x", type: "robot" }, "type"],
    [{ name: "x", type: "human-escalation", model: "gpt-4o-mini-16k" }, "model"],
    [{ name: "x", type: "human-escalation", temperature: 0.1 }, "temperature"],
    [{ name: "x", type: "background", use_all_sources: true }, "use_all_sources"],
    [{ name: "x", type: "background", variables: [] }, "variables"],
    [{ name: "x", type: "user-facing", tags: [] }, "tags"],
    [{ name: "x", type: "user-facing", human_escalation_settings: {} }, "human_escalation_settings"],
    [{ name: "x", type: "background", bias: 0.2 }, "bias"],
    [{ name: "x", type: "user-facing", model: "gpt-99" }, "model"],
    [{ name: "x", type: "user-facing", temperature: "warm" }, "temperature"],
    [{ name: "x", type: "user-facing", temperature: 5 }, "temperature"],
    [{ name: "x", type: "user-facing", enabled: "yes" }, "enabled"],
    [{ name: "x", type: "user-facing", data_source_uuids: "all" }, "data_source_uuids"],
    [{ name: "x", type: "user-facing", data_source_uuids: ["not-a-uuid"] }, "data_source_uuids"],
    [{ name: "x", type: "user-facing", variables: [{ name: "has space" }] }, "variables"],
    [{ name: "x", type: "background", tags: [{ name: "t", criteria: "c", color: "blue" }] }, "tags"],
    [{ name: "x", type: "human-escalation", human_escalation_settings: { sound_enabled: 3 } }, "human_escalation_settings"],
  ];
  for (const [body, field] of cases) {
    expectError(assert, await createAgent(bot, body), 400, "invalid_request", field);
  }
  assert.equal((await api.get(`/chatbot/${bot.uuid}/agents`)).json.length, 1, "nothing stored");
  expectError(assert, await api.post("/chatbot/00000000-0000-4000-8000-000000000000/agent/create", { body: { name: "x", type: "background" } }), 404, "not_found");
});

test("update changes only what is sent, answers enabled as a boolean and lists it as 0/1", async () => {
  const bot = await newChatbot();
  const [qa] = (await api.get(`/chatbot/${bot.uuid}/agents`)).json;
  await sleep(1100);
  const r = await api.post(`/agent/${qa.uuid}/update`, { body: { enabled: false, temperature: 1.1, model: "gpt-3.5-turbo", data_source_uuids: [] } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.enabled, false);
  assert.equal(r.json.meta.model, "gpt-3.5-turbo");
  assert.equal(r.json.meta.temperature, 1.1);
  assert.equal(r.json.meta.use_all_sources, true);
  assert.equal(r.json.name, "General Q&A");
  assert.equal(r.json.prompt, qa.prompt);
  assert.ok(r.json.modified_at > qa.modified_at);
  assert.deepEqual(r.json.variables, []);
  const listed = (await api.get(`/chatbot/${bot.uuid}/agents`)).json[0];
  assert.equal(listed.enabled, 0);
  assert.equal(listed.meta.model, "gpt-3.5-turbo");

  const on = await api.post(`/agent/${qa.uuid}/update`, { body: { enabled: true } });
  assert.equal(on.json.enabled, true);
  assert.equal((await api.get(`/chatbot/${bot.uuid}/agents`)).json[0].enabled, 1);

  const he = (await createAgent(bot, { name: "H", type: "human-escalation" })).json;
  const merged = await api.post(`/agent/${he.uuid}/update`, { body: { human_escalation_settings: { live_chat_end_announcement: "Bye", monitored_messages: ["refund"] } } });
  assert.equal(merged.json.human_escalation_settings.live_chat_end_announcement, "Bye");
  assert.deepEqual(merged.json.human_escalation_settings.monitored_messages, ["refund"]);
  assert.equal(merged.json.human_escalation_settings.human_requested_message, he.human_escalation_settings.human_requested_message);
});

test("updates of different settings sent at the same moment all stand", async () => {
  const bot = await newChatbot();
  const [qa] = (await api.get(`/chatbot/${bot.uuid}/agents`)).json;
  const he = (await createAgent(bot, { name: "H", type: "human-escalation" })).json;
  for (let round = 1; round <= 8; round++) {
    const sent = await Promise.all([
      api.post(`/agent/${qa.uuid}/update`, { body: { temperature: round / 10 } }),
      api.post(`/agent/${qa.uuid}/update`, { body: { bias: round / 10 } }),
      api.post(`/agent/${qa.uuid}/update`, { body: { model: round % 2 ? "gpt-3.5-turbo" : "gpt-4o-mini-4k" } }),
      api.post(`/agent/${he.uuid}/update`, { body: { human_escalation_settings: { human_requested_message: `asked ${round}` } } }),
      api.post(`/agent/${he.uuid}/update`, { body: { human_escalation_settings: { live_chat_start_announcement: `start ${round}` } } }),
    ]);
    for (const r of sent) assert.equal(r.status, 200, r.text);
    const agents = (await api.get(`/chatbot/${bot.uuid}/agents`)).json;
    const { meta } = agents.find((a) => a.uuid === qa.uuid);
    assert.deepEqual([meta.temperature, meta.bias, meta.model], [round / 10, round / 10, round % 2 ? "gpt-3.5-turbo" : "gpt-4o-mini-4k"], `round ${round}`);
    const settings = agents.find((a) => a.uuid === he.uuid).human_escalation_settings;
    assert.deepEqual([settings.human_requested_message, settings.live_chat_start_announcement], [`asked ${round}`, `start ${round}`], `round ${round}`);
  }
});

test("update refuses bad input and keeps what was stored", async () => {
  const bot = await newChatbot();
  const bg = (await createAgent(bot, { name: "Tagger", type: "background" })).json;
  for (const [body, field] of [
    [{ use_all_sources: true }, "use_all_sources"], [{ tags: "x" }, "tags"], [{ name: "" }, "name"], [{ temperature: -1 }, "temperature"],
    [{ type: "user-facing" }, "type"],
    [{ tags: [{ name: "Lead", criteria: "asks about prices" }, { name: "lead", criteria: "asks for a demo" }] }, "tags"],
  ]) {
    expectError(assert, await api.post(`/agent/${bg.uuid}/update`, { body }), 400, "invalid_request", field);
  }
  const listed = (await api.get(`/chatbot/${bot.uuid}/agents`)).json.find((a) => a.uuid === bg.uuid);
  assert.deepEqual({ ...listed, enabled: Boolean(listed.enabled) }, bg);
  expectError(assert, await api.post("/agent/00000000-0000-4000-8000-000000000000/update", { body: {} }), 404, "not_found");
});

test("delete removes an agent but never the last user-facing one", async () => {
  const bot = await newChatbot();
  const [qa] = (await api.get(`/chatbot/${bot.uuid}/agents`)).json;
  expectError(assert, await api.del(`/agent/${qa.uuid}/delete`), 409, "conflict");
  const second = (await createAgent(bot, { name: "Second", type: "user-facing", enabled: true })).json;
  const del = await api.del(`/agent/${qa.uuid}/delete`);
  assert.equal(del.status, 200);
  assert.deepEqual(del.json, { success: true });
  expectError(assert, await api.del(`/agent/${qa.uuid}/delete`), 404, "not_found");
  assert.deepEqual((await api.get(`/chatbot/${bot.uuid}/agents`)).json.map((a) => a.uuid), [second.uuid]);
  const bg = (await createAgent(bot, { name: "Tagger", type: "background" })).json;
  assert.equal((await api.del(`/agent/${bg.uuid}/delete`)).status, 200);
});
