// Agents doing their jobs with the built-in engine: routing between user-facing agents, human
// escalation and live chat, background tags.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { startAccount, chatbotWithSession, expectError, streamMessage, parseEvents, eventually } from "./suite.mjs";

let worker, api, key;
before(async () => ({ worker, api, key } = await startAccount()));

const bot = () => chatbotWithSession(api, { name: "Agents at work", rate_limit: [100, 60] });

const ask = async (session, query) => {
  const r = await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query } });
  assert.equal(r.status, 200, r.text);
  return { ...r.json, meta: JSON.parse(r.json.meta_json) };
};

test("each message goes to the user-facing agent whose description fits; disabled agents never answer", async () => {
  const { bot: b, session } = await bot();
  await api.post(`/chatbot/${b.uuid}/data-source/qa`, { body: { question: "How do I get a copy of my invoice?", answer: "Invoices are under Account > Billing." } });
  await api.post(`/chatbot/${b.uuid}/data-source/qa`, { body: { question: "The installer crashes on start, what now?", answer: "Reinstall the runtime, then run the installer again." } });
  const billing = (await api.post(`/chatbot/${b.uuid}/agent/create`, { body: { name: "Billing", type: "user-facing", enabled: true, description: "Invoices, payments, refunds and subscription charges" } })).json;
  const tech = (await api.post(`/chatbot/${b.uuid}/agent/create`, { body: { name: "Technical support", type: "user-facing", enabled: true, description: "Installation problems, crashes, error messages and configuration" } })).json;
  const off = (await api.post(`/chatbot/${b.uuid}/agent/create`, { body: { name: "Invoices expert", type: "user-facing", enabled: false, description: "Invoices invoices invoices payments" } })).json;

  const a1 = await ask(session, "How can I get my invoice?");
  assert.equal(a1.meta.agent.uuid, billing.uuid);
  assert.match(a1.response, /Account > Billing/);
  const a2 = await ask(session, "The installer crashes with an error message");
  assert.equal(a2.meta.agent.uuid, tech.uuid);
  // A follow-up that names no topic stays with the agent of the previous turn.
  const a3 = await ask(session, "and after that?");
  assert.equal(a3.meta.agent.uuid, tech.uuid);
  for (const m of (await api.get(`/session/${session.uuid}/messages`)).json) {
    assert.notEqual(JSON.parse(m.meta_json).agent.uuid, off.uuid);
  }
});

test("asking for a person gets the escalation agent's message and records the request", async () => {
  const { bot: b, session } = await bot();
  const he = (await api.post(`/chatbot/${b.uuid}/agent/create`, {
    body: { name: "Humans", type: "human-escalation", enabled: true, human_escalation_settings: { human_requested_message: "A colleague will join you shortly." } },
  })).json;
  const r = await streamMessage(worker, key, session.uuid, "Can I talk to a real person please?");
  assert.equal(r.status, 200);
  assert.equal(r.text, "A colleague will join you shortly.");
  const s = await eventually(async () => { const x = (await api.get(`/session/${session.uuid}`)).json; return x.meta.human_escalation ? x : null; });
  assert.equal(s.meta.human_escalation.requested, true);
  assert.equal(s.meta.human_escalation.agent_uuid, he.uuid);
  assert.equal(s.meta.human_escalation.message_uuid, r.headers.get("x-message-uuid"));
  const [m] = (await api.get(`/session/${session.uuid}/messages`)).json;
  assert.equal(JSON.parse(m.meta_json).agent.uuid, he.uuid);

  // A strongly negative bias makes it hold back; a disabled escalation agent never answers.
  await api.post(`/agent/${he.uuid}/update`, { body: { bias: -1 } });
  assert.notEqual((await ask(session, "talk to a human")).meta.agent.uuid, he.uuid);
  await api.post(`/agent/${he.uuid}/update`, { body: { bias: 0, enabled: false } });
  assert.notEqual((await ask(session, "talk to a human")).meta.agent.uuid, he.uuid);
});

test("a full live chat: start, operator writes, the user writes while live, end, the AI answers again", async () => {
  const { bot: b, session } = await bot();
  await api.post(`/chatbot/${b.uuid}/agent/create`, {
    body: { name: "Humans", type: "human-escalation", enabled: true, human_escalation_settings: { live_chat_start_announcement: "Sam joined the chat.", live_chat_end_announcement: "Sam left the chat." } },
  });
  expectError(assert, await api.post(`/session/${session.uuid}/live-chat/message`, { body: { text: "hi" } }), 409, "conflict");
  expectError(assert, await api.post(`/session/${session.uuid}/live-chat/end`), 409, "conflict");

  const started = await api.post(`/session/${session.uuid}/live-chat/start`);
  assert.equal(started.status, 200, started.text);
  assert.equal(started.json.session.meta.live_chat.active, true);
  assert.equal(started.json.message.response, "Sam joined the chat.");
  expectError(assert, await api.post(`/session/${session.uuid}/live-chat/start`), 409, "conflict");

  const op = await api.post(`/session/${session.uuid}/live-chat/message`, { body: { text: "Hi, I'm Sam. How can I help?" } });
  assert.equal(op.status, 200, op.text);
  assert.equal(op.json.kind, "operator");
  expectError(assert, await api.post(`/session/${session.uuid}/live-chat/message`, { body: {} }), 400, "invalid_request", "text");

  const plain = await streamMessage(worker, key, session.uuid, "My order never arrived.");
  assert.equal(plain.status, 202);
  assert.equal(plain.text, "", "no AI answer while a person is answering");
  assert.equal(plain.headers.get("x-live-chat"), "active");
  const sse = await streamMessage(worker, key, session.uuid, "It was order 1234.", { accept: "text/event-stream" });
  assert.equal(sse.status, 202);
  assert.deepEqual(parseEvents(sse.text).map((e) => e.event), ["start", "end"]);

  const ended = await api.post(`/session/${session.uuid}/live-chat/end`);
  assert.equal(ended.json.session.meta.live_chat.active, false);
  const after = await streamMessage(worker, key, session.uuid, "thanks, bye");
  assert.equal(after.status, 200);
  assert.ok(after.text.length > 0);

  const messages = (await api.get(`/session/${session.uuid}/messages`)).json;
  assert.deepEqual(messages.map((m) => [m.kind, m.query || m.response]), [
    ["announcement", "Sam joined the chat."],
    ["operator", "Hi, I'm Sam. How can I help?"],
    ["user", "My order never arrived."],
    ["user", "It was order 1234."],
    ["announcement", "Sam left the chat."],
    ["answer", "thanks, bye"],
  ]);

  // A blank announcement is none: nothing stored, `message: null`.
  const [humans] = (await api.get(`/chatbot/${b.uuid}/agents`)).json.filter((a) => a.type === "human-escalation");
  await api.post(`/agent/${humans.uuid}/update`, { body: { human_escalation_settings: { live_chat_start_announcement: "", live_chat_end_announcement: " " } } });
  for (const step of ["start", "end"]) {
    const quiet = await api.post(`/session/${session.uuid}/live-chat/${step}`);
    assert.equal(quiet.status, 200, quiet.text);
    assert.equal(quiet.json.message, null);
    assert.equal(quiet.json.session.meta.live_chat.active, step === "start");
    // A second round on: its start is new and it has no end yet.
    if (step === "start") assert.equal(quiet.json.session.meta.live_chat.ended_at, undefined);
    else assert.ok(quiet.json.session.meta.live_chat.ended_at >= quiet.json.session.meta.live_chat.started_at);
  }
  assert.equal((await api.get(`/session/${session.uuid}/messages`)).json.length, messages.length);
});

test("two operators starting live chat at once: one is let in, the other told it is on, one announcement", async () => {
  const { bot: b, session } = await bot();
  await api.post(`/chatbot/${b.uuid}/agent/create`, {
    body: { name: "Humans", type: "human-escalation", enabled: true, human_escalation_settings: { live_chat_start_announcement: "Sam joined the chat.", live_chat_end_announcement: "Sam left the chat." } },
  });
  for (const step of ["start", "end"]) {
    const answers = await Promise.all([1, 2, 3].map(() => api.post(`/session/${session.uuid}/live-chat/${step}`)));
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 409, 409], answers.map((a) => a.text).join("\n"));
    for (const refused of answers.filter((a) => a.status === 409)) expectError(assert, refused, 409, "conflict");
  }
  const messages = (await api.get(`/session/${session.uuid}/messages`)).json;
  assert.deepEqual(messages.map((m) => m.response), ["Sam joined the chat.", "Sam left the chat."]);
  const after = (await api.get(`/session/${session.uuid}`)).json;
  assert.equal(after.meta.live_chat.active, false);
});

test("background agents tag the session after an answer; a tag whose criteria do not match stays off", async () => {
  const { bot: b, session } = await bot();
  await api.post(`/chatbot/${b.uuid}/data-source/qa`, { body: { question: "How much is express delivery?", answer: "Express delivery costs 9.95." } });
  const tagger = (await api.post(`/chatbot/${b.uuid}/agent/create`, {
    body: {
      name: "Tagger", type: "background", enabled: true,
      tags: [
        { name: "Pricing", color: "#ffaa00", criteria: "asks about the price or cost of something" },
        { name: "Refund", color: "#ff0000", criteria: "wants a refund or their money back" },
      ],
    },
  })).json;
  const r = await streamMessage(worker, key, session.uuid, "What does express delivery cost?");
  assert.equal(r.status, 200);
  const s = await eventually(async () => { const x = (await api.get(`/session/${session.uuid}`)).json; return x.meta.tags?.length ? x : null; });
  assert.deepEqual(s.meta.tags.map((t) => t.name), ["Pricing"]);
  assert.equal(s.meta.tags[0].message_uuid, r.headers.get("x-message-uuid"));
  assert.equal(s.meta.tags[0].agent_uuid, tagger.uuid);
  assert.equal(s.meta.tags[0].color, "#ffaa00");
  // The same tag is not added twice.
  await ask(session, "And what is the cost of standard delivery?");
  await ask(session, "I want a refund, my money back please");
  const later = await eventually(async () => { const x = (await api.get(`/session/${session.uuid}`)).json; return x.meta.tags.length === 2 ? x : null; });
  assert.deepEqual(later.meta.tags.map((t) => t.name), ["Pricing", "Refund"]);
});
