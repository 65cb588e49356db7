// The OpenAI-compatible provider, against a local server speaking the Chat Completions
// streaming format: pass-through, model mapping, history, failures before and during output,
// a slow first token and a client that leaves midway.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import {
  startAccount, startServer, startModelAccount, modelVars, newChatbot, firstAgent, newSession, storedMessages,
  expectError, streamMessage, parseEvents, eventually,
} from "./suite.mjs";

let worker, model, api, key;

before(async () => ({ model, worker, api, key } = await startModelAccount()));

async function setup({ show_citations = false, temperature = 0.3 } = {}) {
  const bot = await newChatbot(api, { name: "LLM bot", show_citations });
  const agent = await firstAgent(api, bot);
  await api.post(`/agent/${agent.uuid}/update`, { body: { temperature, prompt: "You are the Northwind assistant." } });
  await api.post(`/chatbot/${bot.uuid}/data-source/qa`, { body: { question: "What is the returns window?", answer: "Thirty days from delivery." } });
  const session = await newSession(api, bot);
  return { bot, agent, session };
}

const completionRequests = () => model.requests.filter((r) => r.url === "/v1/chat/completions").map((r) => JSON.parse(r.body));

test("the model's stream passes through and the message records provider, model and usage", async () => {
  const { session } = await setup();
  const before = completionRequests().length;
  const r = await streamMessage(worker, key, session.uuid, "What is the returns window?");
  assert.equal(r.status, 200);
  assert.equal(r.text, "You asked: What is the returns window?.");
  const sent = completionRequests().slice(before);
  assert.equal(sent.length, 1);
  assert.equal(sent[0].model, "gpt-4o-mini", "gpt-4o-mini-16k maps to gpt-4o-mini");
  assert.equal(sent[0].stream, true);
  assert.equal(sent[0].temperature, 0.3);
  assert.equal(sent[0].messages[0].role, "system");
  assert.match(sent[0].messages[0].content, /You are the Northwind assistant\./);
  assert.match(sent[0].messages[0].content, /\[1\] What is the returns window\?/);
  assert.match(sent[0].messages[0].content, /Thirty days from delivery\./);
  const [m] = await storedMessages(api, session);
  assert.equal(m.response, r.text);
  assert.equal(m.finish_reason, "stop");
  const meta = JSON.parse(m.meta_json);
  assert.equal(meta.provider, "openai");
  assert.deepEqual(meta.usage, { prompt_tokens: 42, completion_tokens: 5, total_tokens: 47 });
  assert.equal(JSON.parse(m.cite_data_json)["1"].title, "What is the returns window?");
});

test("event-stream mode relays deltas and the provider's usage", async () => {
  const { session } = await setup({ show_citations: true });
  const r = await streamMessage(worker, key, session.uuid, "hello there", { accept: "text/event-stream" });
  const events = parseEvents(r.text);
  assert.deepEqual(events.map((e) => e.event).filter((e, i, a) => a.indexOf(e) === i), ["start", "delta", "citations", "end"]);
  assert.equal(events.filter((e) => e.event === "delta").map((e) => e.data.text).join(""), "You asked: hello there.");
  assert.equal(events.at(-1).data.usage.total_tokens, 47);
});

test("history is carried across turns of a session and not across sessions", async () => {
  const { bot, session } = await setup();
  await streamMessage(worker, key, session.uuid, "My name is Grace.");
  await eventually(async () => (await api.get(`/session/${session.uuid}/messages`)).json.length === 1);
  const before = completionRequests().length;
  await streamMessage(worker, key, session.uuid, "What is my name?");
  const [second] = completionRequests().slice(before);
  assert.deepEqual(second.messages.slice(1).map((m) => [m.role, m.content]), [
    ["user", "My name is Grace."],
    ["assistant", "You asked: My name is Grace.."],
    ["user", "What is my name?"],
  ]);
  const other = await newSession(api, bot);
  const mark = completionRequests().length;
  await streamMessage(worker, key, other.uuid, "What is my name?");
  const [fresh] = completionRequests().slice(mark);
  assert.deepEqual(fresh.messages.slice(1).map((m) => m.role), ["user"]);
});

test("what was said in live chat is part of the history once the assistant answers again", async () => {
  const { session } = await setup();
  await streamMessage(worker, key, session.uuid, "My name is Grace.");
  await eventually(async () => (await api.get(`/session/${session.uuid}/messages`)).json.length === 1);
  assert.equal((await api.post(`/session/${session.uuid}/live-chat/start`)).status, 200);
  // Enough live-chat traffic to fill the stored history the turn reads, many times over.
  for (let i = 0; i < 12; i++) {
    assert.equal((await streamMessage(worker, key, session.uuid, `My order is ${700 + i}.`)).status, 202);
    assert.equal((await api.post(`/session/${session.uuid}/live-chat/message`, { body: { text: `Order ${700 + i} ships tomorrow.` } })).status, 200);
  }
  assert.equal((await streamMessage(worker, key, session.uuid, "Thanks!")).status, 202);
  assert.equal((await api.post(`/session/${session.uuid}/live-chat/end`)).status, 200);
  const before = completionRequests().length;
  await streamMessage(worker, key, session.uuid, "When does it ship?");
  const [turn] = completionRequests().slice(before)
    .filter((r) => !String(r.messages[0].content).startsWith("You rewrite") && r.messages.at(-1).content.endsWith("When does it ship?"));
  const said = turn.messages.slice(1).map((m) => [m.role, m.content]);
  // Roles alternate: the line nobody answered goes with the question.
  assert.deepEqual(said.slice(-3), [
    ["user", "My order is 711."],
    ["assistant", "Order 711 ships tomorrow."],
    ["user", "Thanks!\nWhen does it ship?"],
  ]);
  assert.ok(!said.some(([, content]) => /assistant will answer|person has joined/i.test(content ?? "")), JSON.stringify(said));
});

test("a model failure before any output is 502 upstream_error and stores nothing", async () => {
  const { session } = await setup();
  const r = await api.post(`/session/${session.uuid}/message/stream`, { body: { query: "please fail [500]" } });
  expectError(assert, r, 502, "upstream_error");
  assert.doesNotMatch(r.text, /exploded/, "the provider's own error text stays internal");
  expectError(assert, await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "again [500]" } }), 502, "upstream_error");
  assert.deepEqual((await api.get(`/session/${session.uuid}/messages`)).json, []);
});

test("a stream cut midway ends the answer and stores what was produced with finish_reason error", async () => {
  const { session } = await setup();
  const r = await streamMessage(worker, key, session.uuid, "cut me off [cut]", { accept: "text/event-stream" });
  assert.equal(r.status, 200);
  const events = parseEvents(r.text);
  assert.equal(events.filter((e) => e.event === "delta").map((e) => e.data.text).join(""), "You asked:");
  assert.ok(events.some((e) => e.event === "error" && e.data.code === "upstream_error"));
  assert.equal(events.at(-1).data.finish_reason, "error");
  const [m] = await storedMessages(api, session);
  assert.equal(m.finish_reason, "error");
  assert.equal(m.response, "You asked:");
});

test("a stream that ends after its finish without [DONE] is whole; a refusal is what the model said", async () => {
  const { session } = await setup();
  const whole = await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "hello [nodone]" } });
  assert.equal(whole.status, 200, whole.text);
  assert.equal(whole.json.finish_reason, "stop");
  assert.equal(whole.json.response, "You asked: hello [nodone].");
  const refused = await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "something bad [refusal]" } });
  assert.equal(refused.status, 200, refused.text);
  assert.equal(refused.json.response, "I can't help with that.");
  assert.equal(refused.json.finish_reason, "stop");
});

test("a slow first token still answers", async () => {
  const { session } = await setup();
  const r = await streamMessage(worker, key, session.uuid, "take your time [slow]");
  assert.equal(r.status, 200);
  assert.ok(r.firstByteMs >= 1400, `first byte after ${r.firstByteMs} ms`);
  assert.match(r.text, /^You asked: take your time \[slow\]\.$/);
});

test("a client that leaves midway does not end the answer: it is produced to the end and stored once", async () => {
  const { session } = await setup();
  const r = await streamMessage(worker, key, session.uuid, "tell me everything [long]", { abortAfter: 30 });
  assert.ok(r.text.length >= 30 && r.text.length < 1000, `read ${r.text.length} chars`);
  const [m] = await storedMessages(api, session, 15_000);
  assert.equal(m.finish_reason, "stop");
  assert.ok(m.response.startsWith("word0 word1"), m.response.slice(0, 40));
  assert.ok(m.response.endsWith("word199 "), "the answer went on after the client left");
  assert.equal((await api.get(`/session/${session.uuid}/messages`)).json.length, 1, "stored exactly once");
});

test("the model list says which provider serves each name", async () => {
  const r = await api.get("/agent/models");
  assert.equal(r.status, 200);
  const byName = Object.fromEntries(r.json.map((m) => [m.name, m]));
  assert.deepEqual(byName["gpt-4o-mini-16k"], { name: "gpt-4o-mini-16k", context_tokens: 16384, provider: "openai", upstream_model: "gpt-4o-mini" });
  assert.equal(byName["gpt-4o-mini-4k"].context_tokens, 4096);
  assert.equal(byName["@cf/meta/llama-3.1-8b-instruct"].provider, "builtin", "no AI binding configured");
});

test("agent variables fill the prompt from the session, and a static default is kept", async () => {
  const bot = await newChatbot(api, { name: "Vars" });
  const agent = await firstAgent(api, bot);
  const upd = await api.post(`/agent/${agent.uuid}/update`, {
    body: {
      prompt: "You help {{name}} on the {{plan}} plan at {{company}}. Region: {{ region }}.",
      variables: [
        { name: "company", description: "our name", type: "string", default_value: { content: "Northwind", static: 1 } },
        { name: "plan", description: "their plan", type: "string", default_value: { content: "free", static: 0 } },
        { name: "region", description: "", type: "string", default_value: { content: "EU", static: 0 } },
        { name: "name", description: "", type: "string", default_value: { content: "there", static: 0 } },
      ],
    },
  });
  assert.equal(upd.status, 200, upd.text);
  const session = await newSession(api, bot, { initial_variables: { name: "Ada", plan: "pro", company: "Evil Corp" } });
  const before = completionRequests().length;
  await streamMessage(worker, key, session.uuid, "hi");
  const [sent] = completionRequests().slice(before);
  assert.match(sent.messages[0].content, /^You help Ada on the pro plan at Northwind\. Region: EU\./);
});

test("tool functions: the Worker calls them for the model and records each call", async () => {
  const tool = await startServer(async (req, res, body) => {
    const url = new URL(req.url, "http://x");
    if (url.pathname === "/hang") return; // never answers
    if (url.pathname === "/fail") { res.writeHead(500); return res.end("database down"); }
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ status: "shipped", method: req.method, got: body || url.search }));
  });
  try {
    const bot = await newChatbot(api, { name: "Tools", rate_limit: [100, 60] });
    const agent = await firstAgent(api, bot);
    const define = (name, path, method = "POST") => api.post(`/agent/${agent.uuid}/tool-function/create`, {
      body: {
        name, description: "Looks up an order", external_url: `${tool.base}${path}`, method, headers: { "X-Api-Key": "k-123" },
        parameters: { type: "object", properties: { order_id: { type: "string", description: "order number" } }, required: ["order_id"] },
      },
    });
    for (const [n, p, m] of [["lookup_order", "/ok"], ["lookup_get", "/ok", "GET"], ["broken", "/fail"], ["slow", "/hang"]]) {
      assert.equal((await define(n, p, m)).status, 200);
    }
    const session = await newSession(api, bot);

    const ok = await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "Where is my order? [tool:lookup_order]" } });
    assert.equal(ok.status, 200, ok.text);
    assert.match(ok.json.response, /^Tool said: \{"status":"shipped","method":"POST","got":"\{\\"order_id\\":\\"A1\\"\}"\}/);
    const okMeta = JSON.parse(ok.json.meta_json);
    assert.equal(okMeta.functions_called.length, 1);
    assert.equal(okMeta.functions_called[0].name, "lookup_order");
    assert.match(okMeta.functions_called[0].content, /shipped/);
    assert.equal(okMeta.answered, true, "a tool's result answers the question, as a source would");
    const hit = tool.requests.find((r) => r.url === "/ok" && r.method === "POST");
    assert.equal(hit.headers["x-api-key"], "k-123");
    assert.deepEqual(JSON.parse(hit.body), { order_id: "A1" });
    const sent = completionRequests().at(-1);
    assert.equal(sent.tools.length, 4);
    assert.equal(sent.messages.at(-1).role, "tool");

    const get = await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "again [tool:lookup_get]" } });
    assert.match(get.json.response, /"method":"GET","got":"\?order_id=A1"/);

    const failed = await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "try [tool:broken]" } });
    assert.equal(failed.status, 200);
    assert.equal(failed.json.finish_reason, "stop");
    assert.match(failed.json.response, /Tool said: Error: the tool answered HTTP 500/);
    assert.equal(JSON.parse(failed.json.meta_json).answered, false, "a failed tool found nothing");

    const started = Date.now();
    const hung = await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "try [tool:slow]" } });
    assert.equal(hung.status, 200);
    assert.match(hung.json.response, /did not answer within 10 seconds/);
    assert.ok(Date.now() - started < 30_000);
  } finally {
    await tool.close();
  }
});

test("with tools disabled or absent, the model is offered none", async () => {
  const { agent, session } = await setup();
  const f = (await api.post(`/agent/${agent.uuid}/tool-function/create`, { body: { name: "off", external_url: "https://example.com/" } })).json;
  await api.post(`/tool-function/${f.uuid}/update`, { body: { enabled: false } });
  const before = completionRequests().length;
  await streamMessage(worker, key, session.uuid, "hello [tool:off]");
  const [sent] = completionRequests().slice(before);
  assert.equal(sent.tools, undefined);
});

test("with a model provider, a background agent judges its tags in one structured call", async () => {
  const bot = await newChatbot(api, { name: "Judged" });
  await api.post(`/chatbot/${bot.uuid}/agent/create`, {
    body: { name: "Tagger", type: "background", enabled: true, tags: [
      { name: "shipping", color: "#00f", criteria: "asks about delivery" },
      { name: "warranty", color: "#f00", criteria: "asks about repairs" },
    ] },
  });
  const session = await newSession(api, bot);
  const before = completionRequests().length;
  await streamMessage(worker, key, session.uuid, "How long does shipping take?");
  const tagged = await eventually(async () => { const s = (await api.get(`/session/${session.uuid}`)).json; return s.meta.tags?.length ? s : null; });
  assert.deepEqual(tagged.meta.tags.map((t) => t.name), ["shipping"]);
  const judging = completionRequests().slice(before).filter((r) => String(r.messages[0].content).startsWith("You label support conversations"));
  assert.equal(judging.length, 1, "one call for the one background agent");
  assert.equal(judging[0].temperature, 0);
});

test("a tool on a private address is refused when saved without ALLOW_PRIVATE_URLS, as a webhook is", async () => {
  const tool = await startServer(async (req, res) => { res.writeHead(200); res.end("secret internal data"); });
  const { worker: strict, api: a } = await startAccount({ vars: { ...modelVars(model), ALLOW_PRIVATE_URLS: "false" } });
  try {
    const bot = await newChatbot(a, { name: "Strict tools" });
    const agent = await firstAgent(a, bot);
    for (const external_url of [`${tool.base}/data`, "http://127.0.0.1:9/x", "http://localhost/x"]) {
      const refused = expectError(assert, await a.post(`/agent/${agent.uuid}/tool-function/create`, { body: { name: "internal", external_url } }), 400, "invalid_request", "external_url");
      assert.match(refused.message, /^The URL points to a private, loopback or link-local address/, external_url);
      const hook = expectError(assert, await a.post(`/chatbot/${bot.uuid}/webhook/create`, { body: { url: external_url, events: ["message.created"] } }), 400, "invalid_request", "url");
      assert.equal(hook.message, refused.message, "the webhooks' rule, in the same words");
    }
    assert.deepEqual((await a.get(`/agent/${agent.uuid}/tool-functions`)).json, [], "nothing stored");
    const f = (await a.post(`/agent/${agent.uuid}/tool-function/create`, { body: { name: "public", external_url: "https://api.example.com/x" } })).json;
    expectError(assert, await a.post(`/tool-function/${f.uuid}/update`, { body: { external_url: `${tool.base}/data` } }), 400, "invalid_request", "external_url");
    assert.equal((await a.get(`/agent/${agent.uuid}/tool-functions`)).json[0].external_url, "https://api.example.com/x", "an update refused keeps the record");
    assert.equal(tool.requests.length, 0, "the private address was never called");
  } finally {
    await strict.dispose();
    await tool.close();
  }
});

test("a follow-up is searched as the standalone question the model rewrites it to", async () => {
  const { session } = await setup();
  await streamMessage(worker, key, session.uuid, "What is the returns window?");
  await eventually(async () => (await api.get(`/session/${session.uuid}/messages`)).json.length === 1);
  const before = completionRequests().length;
  const r = await streamMessage(worker, key, session.uuid, "Could you say that once more?");
  assert.equal(r.status, 200);
  const sent = completionRequests().slice(before);
  assert.equal(sent.length, 2, "the rewrite, then the answer");
  assert.match(sent[0].messages[0].content, /^You rewrite follow-up questions/);
  assert.match(sent[0].messages[1].content, /Previous question: What is the returns window\?\nPrevious answer: You asked: What is the returns window\?\.\nFollow-up: Could you say that once more\?/);
  assert.equal(sent[0].stream, true);
  // Its own words find nothing; the rewritten question finds the Q&A pair the answer is given.
  assert.match(sent[1].messages[0].content, /\[1\] What is the returns window\?/);
  assert.equal(sent[1].messages.at(-1).content, "Could you say that once more?", "the model answers the question as asked");

  // A question that stands alone is not rewritten.
  await eventually(async () => (await api.get(`/session/${session.uuid}/messages`)).json.length === 2);
  const alone = completionRequests().length;
  await streamMessage(worker, key, session.uuid, "Where is the Leeds shop located?");
  assert.equal(completionRequests().length - alone, 1);
});

test("with a model, a model call chooses the agent; a reply naming no agent leaves the rule-based choice", async () => {
  const bot = await newChatbot(api, { name: "Routed bot" });
  await api.post(`/chatbot/${bot.uuid}/data-source/qa`, { body: { question: "What is the returns window?", answer: "Thirty days from delivery." } });
  const billing = await api.post(`/chatbot/${bot.uuid}/agent/create`, {
    body: {
      name: "Billing", type: "user-facing", enabled: true, use_all_sources: true,
      description: "Invoices, payments, refunds and subscription charges.",
    },
  });
  assert.equal(billing.status, 200, billing.text);
  const agentOf = (r) => JSON.parse(r.json.meta_json).agent.name;
  const session = await newSession(api, bot);
  const before = completionRequests().length;
  // No word of it fits Billing's description; the model says Billing.
  let r = await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "My bank statement shows the same amount two times [route:Billing]" } });
  assert.equal(r.status, 200, r.text);
  const sent = completionRequests().slice(before);
  assert.equal(sent.length, 2, "the routing call, then the answer");
  assert.match(sent[0].messages[0].content, /^You route a customer's message/);
  assert.match(sent[0].messages[1].content, /^Assistants:\n1\. General Q&A/);
  assert.match(sent[0].messages[1].content, /\n2\. Billing: Invoices, payments, refunds and subscription charges\.\n/);
  assert.equal(sent[0].max_tokens ?? sent[0].max_completion_tokens, 8);
  assert.equal(agentOf(r), "Billing");

  // A reply that names no agent: the words decide, and a question that fits no description
  // (and is no follow-up) goes to the general agent.
  const other = await newSession(api, bot);
  r = await api.post(`/session/${other.uuid}/message/non-stream`, { body: { query: "Where is the Leeds shop located? [route:Nobody]" } });
  assert.equal(r.status, 200, r.text);
  assert.equal(agentOf(r), "General Q&A");
  r = await api.post(`/session/${other.uuid}/message/non-stream`, { body: { query: "Which invoices and payments are refunded? [route:Nobody]" } });
  assert.equal(r.status, 200, r.text);
  assert.equal(agentOf(r), "Billing", "the words fit Billing");
});

test("a message over the chatbot's rate costs the model nothing: no routing call, no answer", async () => {
  const bot = await newChatbot(api, { name: "Busy routed bot", rate_limit: [1, 60], rate_limit_message: "Busy." });
  const billing = await api.post(`/chatbot/${bot.uuid}/agent/create`, {
    body: { name: "Billing", type: "user-facing", enabled: true, use_all_sources: true, description: "Invoices and payments." },
  });
  assert.equal(billing.status, 200, billing.text);
  const session = await newSession(api, bot);
  let before = completionRequests().length;
  const first = await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "My card was charged twice [route:Billing]" } });
  assert.equal(first.status, 200, first.text);
  assert.equal(completionRequests().length - before, 2, "the routing call, then the answer");
  before = completionRequests().length;
  for (const path of ["non-stream", "stream"]) {
    const refused = await api.post(`/session/${session.uuid}/message/${path}`, { body: { query: "And again, twice [route:Billing]" } });
    assert.equal(refused.status, 429, refused.text);
  }
  assert.equal(completionRequests().length, before, "the model heard nothing of the refused messages");
  assert.equal((await api.get(`/session/${session.uuid}/messages`)).json.length, 1);
});
