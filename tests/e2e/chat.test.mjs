// Sessions and answers with the built-in engine (no model provider configured).
import { test, before } from "node:test";
import assert from "node:assert/strict";
import {
  startAccount, startHelpSite, newChatbot, newSession, expectError, settled, streamMessage, parseEvents, sleep, UUID_RE, TIMESTAMP_RE,
} from "./suite.mjs";

let worker, site, api, key;

before(async () => {
  site = await startHelpSite();
  ({ worker, api, key } = await startAccount());
});

async function shopBot(meta = {}) {
  const bot = await newChatbot(api, { name: "Northwind help", ...meta });
  for (const p of ["shipping", "returns", "warranty"]) {
    const s = (await api.post(`/chatbot/${bot.uuid}/data-source/url`, { body: { url: `${site.base}/${p}` } })).json;
    assert.equal((await settled(api, s.uuid)).status, "success");
  }
  await api.post(`/chatbot/${bot.uuid}/data-source/qa`, {
    body: { question: "Do you have a physical shop?", answer: "Yes, our only shop is at 12 Canal Street, Leeds, open 10am to 6pm." },
  });
  return bot;
}

test("sessions are created, read, listed by time and deleted with their messages", async () => {
  const bot = await newChatbot(api, { name: "Sessions" });
  const s1 = await newSession(api, bot);
  assert.match(s1.uuid, UUID_RE);
  assert.match(s1.created_at, TIMESTAMP_RE);
  assert.equal(s1.initial_variables, undefined);
  const s2 = await newSession(api, bot, { initial_variables: { name: "Ada", plan: "pro", seats: 3 } });
  assert.deepEqual(s2.initial_variables, { name: "Ada", plan: "pro", seats: 3 });
  assert.deepEqual((await api.get(`/session/${s2.uuid}`)).json, s2);
  expectError(assert, await api.post(`/chatbot/${bot.uuid}/session/create`, { body: { initial_variables: { a: { b: 1 } } } }), 400, "invalid_request", "initial_variables");
  expectError(assert, await api.post(`/chatbot/${bot.uuid}/session/create`, { body: { initial_variables: "x" } }), 400, "invalid_request", "initial_variables");

  const all = (await api.get(`/chatbot/${bot.uuid}/sessions`)).json;
  assert.deepEqual(all.map((s) => s.uuid), [s1.uuid, s2.uuid]);
  const inRange = (await api.get(`/chatbot/${bot.uuid}/sessions?start_timestamp=${s1.created_at}&end_timestamp=${s2.created_at}`)).json;
  assert.equal(inRange.length, 2, "both ends are inclusive");
  const future = (await api.get(`/chatbot/${bot.uuid}/sessions?start_timestamp=2999-01-01T00:00:00Z`)).json;
  assert.deepEqual(future, []);
  const past = (await api.get(`/chatbot/${bot.uuid}/sessions?end_timestamp=2000-01-01`)).json;
  assert.deepEqual(past, []);
  expectError(assert, await api.get(`/chatbot/${bot.uuid}/sessions?start_timestamp=yesterday`), 400, "invalid_request", "start_timestamp");
  assert.equal((await api.get(`/chatbot/${bot.uuid}/sessions`)).headers.get("link"), null, "one page holds them all");

  const r = await streamMessage(worker, key, s1.uuid, "hello");
  assert.equal(r.status, 200);
  assert.equal((await api.get(`/session/${s1.uuid}/messages`)).json.length, 1);
  assert.deepEqual((await api.post(`/session/${s1.uuid}/delete`)).json, { success: true });
  expectError(assert, await api.get(`/session/${s1.uuid}`), 404, "not_found");
  expectError(assert, await api.get(`/session/${s1.uuid}/messages`), 404, "not_found");
  assert.equal((await worker.sql(`SELECT COUNT(*) AS n FROM messages WHERE session_uuid = '${s1.uuid}'`))[0].n, 0);
});

test("a plain stream carries only the answer text, with the contract's headers, stored once", async () => {
  const bot = await shopBot();
  const session = await newSession(api, bot);
  const r = await streamMessage(worker, key, session.uuid, "How much does express delivery cost?");
  assert.equal(r.status, 200);
  assert.equal(r.headers.get("content-type"), "text/plain; charset=utf-8");
  assert.equal(r.headers.get("cache-control"), "no-cache");
  assert.equal(r.headers.get("x-accel-buffering"), "no");
  const uuid = r.headers.get("x-message-uuid");
  assert.match(uuid, UUID_RE);
  assert.match(r.text, /Express delivery costs £9\.95 wherever you are\./);
  assert.ok(!r.text.includes("event:") && !r.text.includes("{"), "nothing but answer text");
  const messages = (await api.get(`/session/${session.uuid}/messages`)).json;
  assert.equal(messages.length, 1);
  const [m] = messages;
  assert.equal(m.uuid, uuid);
  assert.equal(m.query, "How much does express delivery cost?");
  assert.equal(m.response, r.text);
  assert.equal(m.finish_reason, "stop");
  const meta = JSON.parse(m.meta_json);
  assert.equal(meta.provider, "builtin");
  assert.equal(meta.model, "gpt-4o-mini-16k");
  assert.equal(meta.agent.name, "General Q&A");
  assert.ok(meta.usage.total_tokens > 0);
  assert.deepEqual(meta.functions_called, []);
});

test("event-stream mode sends start, deltas, citations and end", async () => {
  const bot = await shopBot({ show_citations: true });
  const session = await newSession(api, bot);
  const r = await streamMessage(worker, key, session.uuid, "when will my refund show up on my statement?", { accept: "text/event-stream" });
  assert.equal(r.status, 200);
  assert.match(r.headers.get("content-type"), /^text\/event-stream/);
  const events = parseEvents(r.text);
  assert.equal(events[0].event, "start");
  assert.equal(events[0].data.session_uuid, session.uuid);
  assert.equal(events[0].data.message_uuid, r.headers.get("x-message-uuid"));
  const deltas = events.filter((e) => e.event === "delta").map((e) => e.data.text).join("");
  assert.match(deltas, /five to seven working days\. \[1\]/);
  const citations = events.find((e) => e.event === "citations").data;
  assert.equal(citations["1"].title, "Returns and refunds | Northwind Outfitters");
  assert.equal(citations["1"].type, "link");
  const end = events.at(-1);
  assert.equal(end.event, "end");
  assert.equal(end.data.finish_reason, "stop");
  assert.equal(end.data.answered, true);
  assert.ok(end.data.usage.completion_tokens > 0);
  const [m] = (await api.get(`/session/${session.uuid}/messages`)).json;
  assert.equal(m.response, deltas);
  assert.deepEqual(JSON.parse(m.cite_data_json), citations);
});

test("the built-in engine answers paraphrases from the right source and declines the unrelated", async () => {
  const bot = await shopBot({ show_citations: true });
  const session = await newSession(api, bot);
  const cases = [
    ["do you have a shop I could visit in person?", /12 Canal Street/, "qa"],
    ["what is the normal delivery time to the European Union?", /European Union; Standard: 4–6 working days/, "Shipping & Delivery | Northwind Outfitters"],
    ["my sleeping bag broke after a year, am I covered?", /guaranteed against manufacturing defects for two years/, "Product warranty | Northwind Outfitters"],
    ["can I return something I bought in the sale?", /final sale/, "Returns and refunds | Northwind Outfitters"],
  ];
  for (const [query, expected, source] of cases) {
    const r = await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query } });
    assert.equal(r.status, 200, r.text);
    assert.match(r.json.response, expected, query);
    const first = JSON.parse(r.json.cite_data_json)["1"];
    assert.ok(first.type === source || first.title === source, `${query}: cited ${first.title}`);
    // A page's citation links to the page; a Q&A pair has nowhere to link to.
    if (first.type === "link") assert.match(first.url, new RegExp(`^${site.base}/(shipping|returns|warranty)$`), query);
    else assert.equal(first.url, null, query);
    assert.equal(JSON.parse(r.json.meta_json).answered, true, query);
  }
  for (const query of ["What is the capital of Mongolia?", "Who painted the Mona Lisa?"]) {
    const r = await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query } });
    assert.match(r.json.response, /couldn't find an answer/, query);
    assert.deepEqual(JSON.parse(r.json.cite_data_json), {});
    assert.equal(JSON.parse(r.json.meta_json).answered, false, query);
  }
  // Words the sources hold, but not an answer: said so, with the closest source to read on.
  const unsure = await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "Can I choose the colour of my tent?" } });
  assert.match(unsure.json.response, /^I'm not sure the information I have answers that\. The closest I found:/);
  assert.equal(JSON.parse(unsure.json.cite_data_json)["1"].title, "Product warranty | Northwind Outfitters");
  assert.equal(JSON.parse(unsure.json.meta_json).answered, false);
});

test("citations off: no markers in the text, but the stored message keeps its sources", async () => {
  const bot = await shopBot({ show_citations: false });
  const session = await newSession(api, bot);
  const r = await streamMessage(worker, key, session.uuid, "How much does express delivery cost?", { accept: "text/event-stream" });
  const events = parseEvents(r.text);
  assert.ok(!events.some((e) => e.event === "citations"));
  const text = events.filter((e) => e.event === "delta").map((e) => e.data.text).join("");
  assert.doesNotMatch(text, /\[\d\]/);
  const [m] = (await api.get(`/session/${session.uuid}/messages`)).json;
  assert.equal(JSON.parse(m.cite_data_json)["1"].title, "Shipping & Delivery | Northwind Outfitters");
});

test("bad message input is refused before anything is stored", async () => {
  const bot = await shopBot();
  const session = await newSession(api, bot);
  for (const [body, field] of [[{}, "query"], [{ query: "" }, "query"], [{ query: 7 }, "query"], [{ query: "x".repeat(8001) }, "query"]]) {
    expectError(assert, await api.post(`/session/${session.uuid}/message/stream`, { body }), 400, "invalid_request", field);
  }
  expectError(assert, await api.post("/session/00000000-0000-4000-8000-000000000000/message/stream", { body: { query: "hi" } }), 404, "not_found");
  assert.deepEqual((await api.get(`/session/${session.uuid}/messages`)).json, []);
  // With no enabled user-facing agent there is nobody to answer.
  const [qa] = (await api.get(`/chatbot/${bot.uuid}/agents`)).json;
  await api.post(`/agent/${qa.uuid}/update`, { body: { enabled: false } });
  expectError(assert, await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "hi" } }), 409, "conflict");
});

test("a message no agent can answer is refused without using up the chatbot's rate", async () => {
  const bot = await newChatbot(api, { name: "Closed for now", rate_limit: [1, 60], rate_limit_message: "Busy." });
  const session = await newSession(api, bot);
  const [qa] = (await api.get(`/chatbot/${bot.uuid}/agents`)).json;
  await api.post(`/agent/${qa.uuid}/update`, { body: { enabled: false } });
  for (let i = 0; i < 2; i++) {
    expectError(assert, await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "hi" } }), 409, "conflict");
  }
  await api.post(`/agent/${qa.uuid}/update`, { body: { enabled: true } });
  const answered = await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "hi" } });
  assert.equal(answered.status, 200, "the refused messages took none of the one a minute allows");
  const over = await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "hi again" } });
  assert.equal(over.status, 429);
});

test("messages list oldest first; delete one and bulk delete (all or nothing)", async () => {
  const bot = await shopBot();
  const session = await newSession(api, bot);
  const uuids = [];
  for (const q of ["first question", "second question", "third question"]) {
    uuids.push((await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: q } })).json.uuid);
  }
  const list = (await api.get(`/session/${session.uuid}/messages`)).json;
  assert.deepEqual(list.map((m) => m.query), ["first question", "second question", "third question"]);
  assert.deepEqual((await api.post(`/message/${uuids[0]}/delete`)).json, { success: true });
  expectError(assert, await api.post(`/message/${uuids[0]}/delete`), 404, "not_found");
  expectError(assert, await api.post("/messages/delete", { body: { uuids: [uuids[1], uuids[0]] } }), 404, "not_found");
  assert.equal((await api.get(`/session/${session.uuid}/messages`)).json.length, 2, "nothing deleted");
  expectError(assert, await api.post("/messages/delete", { body: { uuids: "x" } }), 400, "invalid_request", "uuids");
  assert.deepEqual((await api.post("/messages/delete", { body: { uuids: [uuids[1], uuids[2]] } })).json, { success: true });
  assert.deepEqual((await api.get(`/session/${session.uuid}/messages`)).json, []);
});

test("the rate limit answers 429 with Retry-After and the chatbot's message, and stores nothing", async () => {
  const bot = await newChatbot(api, { name: "Limited", rate_limit: [2, 60], rate_limit_message: "Easy there! Try again in a minute." });
  const session = await newSession(api, bot);
  assert.equal((await streamMessage(worker, key, session.uuid, "one")).status, 200);
  assert.equal((await streamMessage(worker, key, session.uuid, "two")).status, 200);
  const limited = await streamMessage(worker, key, session.uuid, "three");
  assert.equal(limited.status, 429);
  assert.equal(limited.text, "Easy there! Try again in a minute.");
  assert.match(limited.headers.get("content-type"), /^text\/plain/);
  const retry = Number(limited.headers.get("retry-after"));
  assert.ok(retry >= 1 && retry <= 60, `Retry-After ${retry}`);
  const sse = await streamMessage(worker, key, session.uuid, "four", { accept: "text/event-stream" });
  assert.equal(sse.status, 429);
  assert.deepEqual(parseEvents(sse.text), [{ event: "error", data: { code: "rate_limited", message: "Easy there! Try again in a minute." } }]);
  const nonStream = await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "five" } });
  expectError(assert, nonStream, 429, "rate_limited");
  assert.ok(Number(nonStream.headers.get("retry-after")) >= 1);
  assert.equal((await api.get(`/session/${session.uuid}/messages`)).json.length, 2);

  // A raised limit applies from the next message.
  await api.post(`/chatbot/${bot.uuid}/update`, { body: { rate_limit: [3, 60] } });
  assert.equal((await streamMessage(worker, key, session.uuid, "six")).status, 200);
  assert.equal((await streamMessage(worker, key, session.uuid, "seven")).status, 429);
});

test("history stays within a session", async () => {
  const bot = await shopBot();
  const a = await newSession(api, bot);
  await api.post(`/session/${a.uuid}/message/non-stream`, { body: { query: "How much does express delivery cost?" } });
  await sleep(5);
  await api.post(`/session/${a.uuid}/message/non-stream`, { body: { query: "And to the EU?" } });
  assert.equal((await api.get(`/session/${a.uuid}/messages`)).json.length, 2);
  const b = await newSession(api, bot);
  assert.deepEqual((await api.get(`/session/${b.uuid}/messages`)).json, []);
});

test("a chatbot's sessions come in pages of `limit`, each linking to the next", async () => {
  const bot = await newChatbot(api, { name: "Pages" });
  const made = [];
  for (let i = 0; i < 5; i++) made.push((await newSession(api, bot)).uuid);
  const first = await api.get(`/chatbot/${bot.uuid}/sessions?limit=2&start_timestamp=2000-01-01`);
  assert.equal(first.status, 200);
  const seen = [...first.json.map((s) => s.uuid)];
  // The session a page ends on may be deleted before the next page is read; sessions of the
  // same second after it still come.
  const gone = seen.pop();
  assert.equal((await api.post(`/session/${gone}/delete`)).status, 200);
  let link = first.headers.get("link");
  let pages = 1;
  while (link) {
    const next = /^<([^>]+)>; rel="next"$/.exec(link);
    assert.ok(next, link);
    const url = new URL(next[1]);
    assert.equal(url.searchParams.get("limit"), "2", "the next page keeps the list's parameters");
    assert.equal(url.searchParams.get("start_timestamp"), "2000-01-01");
    const page = await api.get(`${url.pathname.replace(/^\/api\/v1/, "")}${url.search}`);
    assert.equal(page.status, 200, page.text);
    assert.ok(page.json.length <= 2);
    seen.push(...page.json.map((s) => s.uuid));
    link = page.headers.get("link");
    pages++;
  }
  assert.equal(pages, 3);
  const all = (await api.get(`/chatbot/${bot.uuid}/sessions`)).json.map((s) => s.uuid);
  assert.deepEqual(seen, all, "every session once, in the list's order");
  assert.deepEqual([...seen, gone].sort(), [...made].sort());
  for (const limit of ["0", "1001", "two"]) {
    expectError(assert, await api.get(`/chatbot/${bot.uuid}/sessions?limit=${limit}`), 400, "invalid_request", "limit");
  }
  expectError(assert, await api.get(`/chatbot/${bot.uuid}/sessions?after=somewhere`), 400, "invalid_request", "after");
});
