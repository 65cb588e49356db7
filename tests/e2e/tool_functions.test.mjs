import { test, before } from "node:test";
import assert from "node:assert/strict";
import {
  startAccount, startModelAccount, startServer, newChatbot, firstAgent, newSession, storedMessages, streamMessage, parseEvents,
  eventually, expectError, UUID_RE,
} from "./suite.mjs";

let worker, api;
before(async () => ({ worker, api } = await startAccount()));

// A Worker answering through the local model server, started by the first test that needs one.
let answering;
function modelWorker() {
  answering ??= startModelAccount();
  return answering;
}

/** The Chat Completions requests the model server received since `mark` (a count). */
const modelRequests = (model, mark = 0) =>
  model.requests.filter((r) => r.url === "/v1/chat/completions").slice(mark).map((r) => JSON.parse(r.body));

const ORDER_LOOKUP = {
  name: "lookup_order",
  description: "Finds an order by its number",
  external_url: "https://api.example.com/orders",
  method: "POST",
  headers: { "X-Api-Key": "secret-value" },
  parameters: { type: "object", properties: { order_id: { description: "The order number", type: "string" } }, required: ["order_id"] },
};

async function agentOf() {
  const bot = await newChatbot(api, { name: "Tools" });
  return { bot, agent: await firstAgent(api, bot) };
}

test("tool functions are created, listed, updated and deleted, and show on their agent", async () => {
  const { bot, agent } = await agentOf();
  const r = await api.post(`/agent/${agent.uuid}/tool-function/create`, { body: ORDER_LOOKUP });
  assert.equal(r.status, 200, r.text);
  const f = r.json;
  assert.match(f.uuid, UUID_RE);
  assert.deepEqual(
    { name: f.name, enabled: f.enabled, method: f.method, headers: f.headers, parameters: f.parameters, external_url: f.external_url },
    { name: "lookup_order", enabled: 1, method: "POST", headers: ORDER_LOOKUP.headers, parameters: ORDER_LOOKUP.parameters, external_url: ORDER_LOOKUP.external_url },
  );
  assert.deepEqual((await api.get(`/agent/${agent.uuid}/tool-functions`)).json, [f]);
  const listed = (await api.get(`/chatbot/${bot.uuid}/agents`)).json[0];
  assert.deepEqual(listed.tool_functions, [f]);
  const updatedAgent = (await api.post(`/agent/${agent.uuid}/update`, { body: { temperature: 0.1 } })).json;
  assert.deepEqual(updatedAgent.tool_functions, [f]);

  const u = await api.post(`/tool-function/${f.uuid}/update`, { body: { enabled: false, method: "get" } });
  assert.equal(u.status, 200, u.text);
  assert.equal(u.json.enabled, 0);
  assert.equal(u.json.method, "GET");
  assert.equal(u.json.name, "lookup_order");
  assert.deepEqual(u.json.headers, ORDER_LOOKUP.headers);

  expectError(assert, await api.post(`/agent/${agent.uuid}/tool-function/create`, { body: ORDER_LOOKUP }), 409, "conflict");
  assert.deepEqual((await api.del(`/tool-function/${f.uuid}/delete`)).json, { success: true });
  expectError(assert, await api.del(`/tool-function/${f.uuid}/delete`), 404, "not_found");
  assert.deepEqual((await api.get(`/agent/${agent.uuid}/tool-functions`)).json, []);
});

test("updates of different fields sent at the same moment all stand, and none brings back a deleted function", async () => {
  const { agent } = await agentOf();
  const f = (await api.post(`/agent/${agent.uuid}/tool-function/create`, { body: ORDER_LOOKUP })).json;
  for (let round = 1; round <= 8; round++) {
    const sent = await Promise.all([
      api.post(`/tool-function/${f.uuid}/update`, { body: { description: `Finds order ${round}` } }),
      api.post(`/tool-function/${f.uuid}/update`, { body: { headers: { "X-Api-Key": `key-${round}` } } }),
      api.post(`/tool-function/${f.uuid}/update`, { body: { meta: { round } } }),
    ]);
    for (const r of sent) assert.equal(r.status, 200, r.text);
    const [stored] = (await api.get(`/agent/${agent.uuid}/tool-functions`)).json;
    assert.deepEqual([stored.description, stored.headers, stored.meta], [`Finds order ${round}`, { "X-Api-Key": `key-${round}` }, { round }], `round ${round}`);
  }
  const [update, removal] = await Promise.all([
    api.post(`/tool-function/${f.uuid}/update`, { body: { description: "late" } }),
    api.del(`/tool-function/${f.uuid}/delete`),
  ]);
  assert.equal(removal.status, 200, removal.text);
  assert.ok([200, 404].includes(update.status), update.text);
  assert.deepEqual((await api.get(`/agent/${agent.uuid}/tool-functions`)).json, []);
  expectError(assert, await api.post(`/tool-function/${f.uuid}/update`, { body: { description: "after" } }), 404, "not_found");
});

test("bad tool functions are refused naming the field, and nothing is stored", async () => {
  const { agent } = await agentOf();
  const cases = [
    [{ ...ORDER_LOOKUP, name: undefined }, "name"],
    [{ ...ORDER_LOOKUP, name: "two words" }, "name"],
    [{ ...ORDER_LOOKUP, external_url: undefined }, "external_url"],
    [{ ...ORDER_LOOKUP, external_url: "file:///etc/passwd" }, "external_url"],
    [{ ...ORDER_LOOKUP, method: "TRACE" }, "method"],
    [{ ...ORDER_LOOKUP, headers: { "X-Key": 42 } }, "headers"],
    [{ ...ORDER_LOOKUP, headers: "X-Key: 1" }, "headers"],
    [{ ...ORDER_LOOKUP, parameters: { type: "string" } }, "parameters"],
    [{ ...ORDER_LOOKUP, parameters: { type: "object", properties: { a: { type: "date" } } } }, "parameters"],
    [{ ...ORDER_LOOKUP, parameters: { type: "object", properties: {}, required: ["missing"] } }, "parameters"],
    [{ ...ORDER_LOOKUP, enabled: "yes" }, "enabled"],
  ];
  for (const [body, field] of cases) {
    expectError(assert, await api.post(`/agent/${agent.uuid}/tool-function/create`, { body: JSON.parse(JSON.stringify(body)) }), 400, "invalid_request", field);
  }
  // Every schema under `parameters` is checked, and the message says where it is wrong.
  const schemas = [
    [{ opt: { type: "string", items: 5 } }, "`parameters.properties.opt`: `items` must be a schema object"],
    [{ opt: { type: "string", enum: "notarray" } }, "`parameters.properties.opt`: `enum` must be a non-empty array"],
    [{ opt: { type: "string", minLength: "x" } }, "`parameters.properties.opt`: `minLength` must be a number"],
    [{ tags: { type: "array" } }, "`parameters.properties.tags`: an array needs `items`"],
    [{ tags: { type: "array", items: { type: "object", properties: { n: { type: "when" } } } } }, "`parameters.properties.tags.items.properties.n`: `type` must be one of"],
  ];
  for (const [properties, message] of schemas) {
    const err = expectError(assert, await api.post(`/agent/${agent.uuid}/tool-function/create`, { body: { ...ORDER_LOOKUP, parameters: { type: "object", properties } } }), 400, "invalid_request", "parameters");
    assert.ok(err.message.startsWith(message), `${err.message} should start with ${message}`);
  }
  assert.deepEqual((await api.get(`/agent/${agent.uuid}/tool-functions`)).json, []);
  const f = (await api.post(`/agent/${agent.uuid}/tool-function/create`, { body: ORDER_LOOKUP })).json;
  expectError(assert, await api.post(`/tool-function/${f.uuid}/update`, { body: { external_url: "gopher://x" } }), 400, "invalid_request", "external_url");
  assert.equal((await api.get(`/agent/${agent.uuid}/tool-functions`)).json[0].external_url, ORDER_LOOKUP.external_url);
  expectError(assert, await api.post(`/tool-function/${f.uuid}/update`, { body: { description: "changed", parameters: { type: "object", properties: { tags: { type: "array" } } } } }), 400, "invalid_request", "parameters");
  assert.deepEqual((await api.get(`/agent/${agent.uuid}/tool-functions`)).json, [f], "a refused update keeps the record as it was");
});

test("a tool's parameter schema keeps its additionalProperties and nested schemas", async () => {
  const { agent } = await agentOf();
  const parameters = {
    type: "object",
    properties: {
      tags: { type: "array", items: { type: "string", enum: ["a", "b"] }, minItems: 1 },
      note: { type: ["string", "null"], maxLength: 200 },
    },
    required: ["tags"],
    additionalProperties: false,
  };
  const r = await api.post(`/agent/${agent.uuid}/tool-function/create`, { body: { ...ORDER_LOOKUP, parameters } });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json.parameters, parameters);
  assert.deepEqual((await api.get(`/agent/${agent.uuid}/tool-functions`)).json[0].parameters, parameters);
});

test("only user-facing agents take tool functions; deleting an agent removes its functions", async () => {
  const { bot, agent } = await agentOf();
  const bg = (await api.post(`/chatbot/${bot.uuid}/agent/create`, { body: { name: "Tagger", type: "background" } })).json;
  expectError(assert, await api.post(`/agent/${bg.uuid}/tool-function/create`, { body: ORDER_LOOKUP }), 400, "invalid_request");
  const second = (await api.post(`/chatbot/${bot.uuid}/agent/create`, { body: { name: "Second", type: "user-facing" } })).json;
  await api.post(`/agent/${second.uuid}/tool-function/create`, { body: ORDER_LOOKUP });
  assert.equal((await api.del(`/agent/${second.uuid}/delete`)).status, 200);
  const rows = await worker.sql(`SELECT COUNT(*) AS n FROM tool_functions WHERE agent_uuid = '${second.uuid}'`);
  assert.equal(rows[0].n, 0);
  assert.ok(agent.uuid);
});

test("OpenAI-compatible: a reply that only called tools ends no turn, so the question before it reaches the model", async () => {
  const { model, api: m } = await modelWorker();
  const bot = await newChatbot(m, { name: "Tool history" });
  const mark = modelRequests(model).length;
  const r = await m.post("/openai/chat/completions", {
    body: {
      model: bot.uuid,
      messages: [
        { role: "user", content: "hello" },
        { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "answer", arguments: "{}" } }] },
        { role: "tool", tool_call_id: "call_1", content: "42" },
        { role: "user", content: "and now?" },
      ],
    },
  });
  assert.equal(r.status, 200, r.text);
  const [sent] = modelRequests(model, mark);
  const asked = sent.messages.filter((x) => x.role !== "system");
  assert.deepEqual(asked.map((x) => [x.role, x.content]), [["user", "hello\nand now?"]], "one turn, both questions");
  assert.equal(r.json.choices[0].message.content, "You asked: hello and now?.");
});

/** A tool endpoint that answers `{"status": "shipped"}` (its requests in `requests`), and an agent with it as `lookup_order`. */
async function shopWithTool(m, { path = "/ok", handler, userinfo = "" } = {}) {
  const tool = await startServer(handler ?? (async (req, res) => {
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ status: "shipped" }));
  }));
  const bot = await newChatbot(m, { name: "Tool shop" });
  const agent = await firstAgent(m, bot);
  const url = tool.base.replace("://", `://${userinfo}`);
  const made = await m.post(`/agent/${agent.uuid}/tool-function/create`, { body: { ...ORDER_LOOKUP, external_url: `${url}${path}` } });
  assert.equal(made.status, 200, made.text);
  return { tool, bot, session: await newSession(m, bot) };
}

test("a user name and password in a tool's URL are sent as Basic authorization, not in the URL", async () => {
  const { api: m } = await modelWorker();
  const { tool, session } = await shopWithTool(m, { userinfo: "shop:s3cret@" });
  const r = await m.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "where is it? [tool:lookup_order]" } });
  assert.equal(r.status, 200, r.text);
  assert.match(r.json.response, /^Tool said: \{"status":"shipped"\}/);
  assert.equal(tool.requests.length, 1);
  assert.equal(tool.requests[0].headers.authorization, `Basic ${Buffer.from("shop:s3cret").toString("base64")}`);
});

test("a tool's redirect to another origin does not carry its credentials; one on its own origin does", async () => {
  const { api: m } = await modelWorker();
  const elsewhere = await startServer(async (req, res) => {
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ status: "moved" }));
  });
  const { tool, session } = await shopWithTool(m, {
    userinfo: "shop:s3cret@",
    path: "/here",
    handler: async (req, res) => {
      res.writeHead(307, { Location: req.url === "/here" ? "/there" : `${elsewhere.base}/orders` });
      res.end();
    },
  });
  const r = await m.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "where is it? [tool:lookup_order]" } });
  assert.equal(r.status, 200, r.text);
  assert.match(r.json.response, /^Tool said: \{"status":"moved"\}/);
  // Both hops on the tool's own origin carried its key and password.
  assert.deepEqual(tool.requests.map((q) => [q.url, q.headers["x-api-key"], Boolean(q.headers.authorization)]), [["/here", "secret-value", true], ["/there", "secret-value", true]]);
  assert.equal(elsewhere.requests.length, 1);
  const foreign = elsewhere.requests[0];
  assert.equal(foreign.headers["x-api-key"], undefined);
  assert.equal(foreign.headers.authorization, undefined);
  assert.equal(foreign.headers["content-type"], "application/json", "a 307 keeps the body and its type");
  assert.deepEqual(JSON.parse(foreign.body), JSON.parse(tool.requests[0].body));
});

test("arguments that are not a JSON object, or lack a required one, are not sent: the model is told why", async () => {
  const { api: m } = await modelWorker();
  const { tool, session } = await shopWithTool(m);
  const broken = await m.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "where is it? [tool:lookup_order] [badargs]" } });
  assert.equal(broken.status, 200, broken.text);
  assert.match(broken.json.response, /^Tool said: Error: the arguments are not valid JSON .*the tool was not called\.$/);
  const [call] = JSON.parse(broken.json.meta_json).functions_called;
  assert.deepEqual([call.name, call.arguments], ["lookup_order", "{not json"]);
  assert.match(call.content, /^Error: the arguments are not valid JSON/);

  const missing = await m.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "where is it? [tool:lookup_order] [noargs]" } });
  assert.equal(missing.status, 200, missing.text);
  assert.equal(missing.json.response, 'Tool said: Error: the required argument "order_id" is missing; the tool was not called.');
  assert.deepEqual(tool.requests, [], "the endpoint was never called");

  const fine = await m.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "where is it? [tool:lookup_order]" } });
  assert.equal(fine.json.response, 'Tool said: {"status":"shipped"}');
  assert.deepEqual(tool.requests.map((r) => JSON.parse(r.body)), [{ order_id: "A1" }]);
});

test("what the model says in separate tool rounds is set apart by a paragraph break, streamed as it is stored", async () => {
  const { worker: w, key, api: m } = await modelWorker();
  const { session } = await shopWithTool(m);
  const r = await streamMessage(w, key, session.uuid, "where is it? [tool:lookup_order] [preface]", { accept: "text/event-stream" });
  assert.equal(r.status, 200);
  const streamed = parseEvents(r.text).filter((e) => e.event === "delta").map((e) => e.data.text).join("");
  const expected = 'Let me check.\n\nTool said: {"status":"shipped"}';
  assert.equal(streamed, expected);
  const [stored] = await storedMessages(m, session);
  assert.equal(stored.response, expected, "readers and the stored answer agree");
  const collected = await m.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "again [tool:lookup_order] [preface]" } });
  assert.equal(collected.json.response, expected);
});

test("a model that still asks for tools after the last round is called once more without tools, and answers", async () => {
  const { model, worker: w, key, api: m } = await modelWorker();
  const { tool, bot, session } = await shopWithTool(m);
  const mark = modelRequests(model).length;
  const r = await m.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "where is it? [tool:lookup_order] [tool-loop:lookup_order]" } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.response, "Out of tools after 3 calls.");
  assert.equal(r.json.finish_reason, "stop");
  const meta = JSON.parse(r.json.meta_json);
  assert.equal(meta.functions_called.length, 4, "three rounds ran, and the last answer's call is recorded unrun");
  assert.match(meta.functions_called[3].content, /^Error: no more tool calls/);
  assert.equal(meta.answered, true);
  assert.equal(tool.requests.length, 3);
  const sent = modelRequests(model, mark);
  assert.equal(sent.length, 5, "the first call, one after each of three rounds, and the last one");
  assert.ok(sent.slice(0, 4).every((x) => x.tools?.length === 1 && x.tool_choice === "auto"), "tools offered while rounds are left");
  assert.equal(sent[4].tool_choice, "none", "the last call allows no tool");
  const told = sent[4].messages.filter((x) => x.role === "tool").map((x) => x.content);
  assert.equal(told.length, 4, "every call has its result, the last one's unrun");
  assert.match(told[3], /^Error: no more tool calls/);
  // Roles stay well formed: every assistant call is answered before the next message.
  const calls = sent[4].messages.filter((x) => x.role === "assistant").flatMap((x) => x.tool_calls ?? []);
  assert.deepEqual(calls.map((c) => c.id).sort(), sent[4].messages.filter((x) => x.role === "tool").map((x) => x.tool_call_id).sort());

  const other = await newSession(m, bot);
  const streamed = await streamMessage(w, key, other.uuid, "where is it? [tool-loop:lookup_order]", { accept: "text/event-stream" });
  const events = parseEvents(streamed.text);
  assert.ok(!events.some((e) => e.event === "error"), streamed.text);
  assert.equal(events.filter((e) => e.event === "delta").map((e) => e.data.text).join(""), "Out of tools after 3 calls.");
  assert.equal(events.at(-1).data.finish_reason, "stop");

  const openai = await m.post("/openai/chat/completions", { body: { model: bot.uuid, messages: [{ role: "user", content: "where is it? [tool-loop:lookup_order]" }] } });
  assert.equal(openai.status, 200, openai.text);
  assert.equal(openai.json.choices[0].message.content, "Out of tools after 3 calls.");
});

test("an answer that fails before it says anything is stored unanswered, whatever its tools found", async () => {
  const { api: m } = await modelWorker();
  const { tool, session } = await shopWithTool(m);
  await m.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "where is it? [tool:lookup_order] [500-after-tool]" } });
  const [stored] = await storedMessages(m, session);
  assert.equal(tool.requests.length, 1, "the tool answered");
  assert.deepEqual([stored.response, stored.finish_reason, stored.answered], ["", "error", false]);
  assert.equal(JSON.parse(stored.meta_json).answered, false);
});

test("stopping an answer while its tool runs ends it then: no waiting for the tool, no further model call", async () => {
  const { model, worker: w, key, api: m } = await modelWorker();
  const closed = [];
  const { tool, session } = await shopWithTool(m, {
    // Never answers (the tool time limit is 10 s); notes when the Worker lets go of the call.
    handler: (req, res) => new Promise((resolve) => res.on("close", () => { closed.push(Date.now()); resolve(); })),
  });
  const reading = streamMessage(w, key, session.uuid, "where is it? [tool:lookup_order] [preface]", { accept: "text/event-stream" });
  await eventually(async () => tool.requests.length === 1 || null);
  const [running] = (await m.get(`/session/${session.uuid}/messages`)).json;
  assert.equal(running.finish_reason, "streaming");
  const mark = modelRequests(model).length;
  const started = Date.now();
  const stopped = await m.post(`/message/${running.uuid}/stop`);
  const tookMs = Date.now() - started;
  assert.equal(stopped.status, 200, stopped.text);
  assert.ok(tookMs < 3_000, `the stop took ${tookMs} ms`);
  assert.equal(stopped.json.finish_reason, "stopped");
  assert.equal(stopped.json.response, "Let me check.", "stored with what was said");
  const [call] = JSON.parse(stopped.json.meta_json).functions_called;
  assert.equal(call.content, "Error: the answer was stopped before the tool answered.");
  const events = parseEvents((await reading).text);
  assert.equal(events.at(-1).event, "end");
  assert.equal(events.at(-1).data.finish_reason, "stopped");
  assert.equal(events.filter((e) => e.event === "delta").map((e) => e.data.text).join(""), "Let me check.");
  await eventually(async () => closed.length === 1 || null, 5_000);
  assert.ok(closed[0] - started < 5_000, "the tool's call was let go of, not held to its time limit");
  assert.equal(modelRequests(model, mark).length, 0, "no model call after the stop");
});
