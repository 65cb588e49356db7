// Load: many requests at once, mixing writes and streamed answers across 160 sessions (a
// session answers one message at a time, so each gets one of the concurrent messages). Every
// answered message is stored exactly once, a session's messages keep their order, and rate
// limits hold exactly.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { startAccount, newChatbot, newSession, streamMessage, eventually } from "./suite.mjs";

let worker, api, key;
before(async () => ({ worker, api, key } = await startAccount()));

async function chatbotWithSessions(name, limit, sessions) {
  const bot = await newChatbot(api, { name, rate_limit: limit });
  await api.post(`/chatbot/${bot.uuid}/data-source/qa`, { body: { question: "What are the opening hours?", answer: "Nine to five." } });
  const list = await Promise.all(Array.from({ length: sessions }, () => newSession(api, bot)));
  return { bot, sessions: list };
}

test("200 concurrent requests: answers stored exactly once, writes all land, limits exact", async () => {
  const a = await chatbotWithSessions("Load A", [100, 360], 100);
  const b = await chatbotWithSessions("Load B", [40, 360], 60);
  const requests = [];
  for (let i = 0; i < 100; i++) {
    const s = a.sessions[i];
    requests.push(streamMessage(worker, key, s.uuid, `a-${i} opening hours?`).then((r) => ({ kind: "a", i, s, r })));
  }
  for (let i = 0; i < 60; i++) {
    const s = b.sessions[i];
    requests.push(streamMessage(worker, key, s.uuid, `b-${i} opening hours?`, { accept: "text/event-stream" }).then((r) => ({ kind: "b", i, s, r })));
  }
  for (let i = 0; i < 40; i++) {
    const bot = i % 2 ? a.bot : b.bot;
    requests.push(api.post(`/chatbot/${bot.uuid}/data-source/qa`, { body: { question: `Load question ${i}?`, answer: `Answer ${i}.` } }).then((r) => ({ kind: "write", i, r })));
  }
  const results = await Promise.all(requests);

  const byKind = (k) => results.filter((x) => x.kind === k);
  const unexpected = results.filter((x) => x.r.status !== 200 && x.r.status !== 429);
  assert.deepEqual(unexpected.map((x) => `${x.kind}-${x.i}: ${x.r.status} ${x.r.text ?? ""}`), [], "only answers and rate limits");
  assert.equal(byKind("a").filter((x) => x.r.status === 200).length, 100, "chatbot A: all 100 within its limit");
  assert.equal(byKind("b").filter((x) => x.r.status === 200).length, 40, "chatbot B: exactly its limit of 40");
  assert.equal(byKind("b").filter((x) => x.r.status === 429).length, 20);
  assert.ok(byKind("write").every((x) => x.r.status === 200), "every write landed");

  const answered = results.filter((x) => x.kind !== "write" && x.r.status === 200);
  const stored = await eventually(async () => {
    const rows = await worker.sql(`SELECT uuid, query, session_uuid FROM messages WHERE chatbot_uuid IN ('${a.bot.uuid}', '${b.bot.uuid}')`);
    return rows.length >= answered.length ? rows : null;
  }, 20_000);
  assert.equal(stored.length, answered.length, "no message stored twice, none lost");
  assert.equal(new Set(stored.map((m) => m.query)).size, stored.length);
  for (const x of answered) {
    const m = stored.find((row) => row.query === `${x.kind}-${x.i} opening hours?`);
    assert.ok(m, `${x.kind}-${x.i} stored`);
    assert.equal(m.session_uuid, x.s.uuid);
    assert.equal(m.uuid, x.r.headers.get("x-message-uuid"));
  }
  const sources = await worker.sql(`SELECT COUNT(*) AS n FROM data_sources WHERE title LIKE 'Load question %'`);
  assert.equal(sources[0].n, 40);
});

test("each session's messages stay in the order they were sent, with all sessions busy at once", async () => {
  const { sessions } = await chatbotWithSessions("Order", [100, 360], 20);
  await Promise.all(sessions.map(async (s, n) => {
    for (let i = 0; i < 5; i++) {
      const r = await streamMessage(worker, key, s.uuid, `s${n} turn ${i}`);
      assert.equal(r.status, 200);
    }
  }));
  for (const [n, s] of sessions.entries()) {
    const list = await eventually(async () => { const l = (await api.get(`/session/${s.uuid}/messages`)).json; return l.length === 5 ? l : null; });
    assert.deepEqual(list.map((m) => m.query), [0, 1, 2, 3, 4].map((i) => `s${n} turn ${i}`));
  }
});

test("under 100 concurrent messages to a chatbot limited to N, exactly N are answered", async () => {
  const N = 10;
  const bot = await newChatbot(api, { name: "Burst", rate_limit: [N, 300] });
  // One message per session: a session answers one message at a time (resume.test.mjs).
  const sessions = await Promise.all(Array.from({ length: 100 }, () => newSession(api, bot)));
  const results = await Promise.all(Array.from({ length: 100 }, (_, i) => streamMessage(worker, key, sessions[i].uuid, `burst ${i}`)));
  const unexpected = results.filter((r) => r.status !== 200 && r.status !== 429);
  assert.deepEqual(unexpected.map((r) => `${r.status} ${r.text ?? ""}`), [], "only answers and rate limits");
  const answered = results.filter((r) => r.status === 200).length;
  const limited = results.filter((r) => r.status === 429).length;
  assert.equal(answered, N);
  assert.equal(limited, 100 - N);
  const stored = await worker.sql(`SELECT COUNT(*) AS n FROM messages WHERE chatbot_uuid = '${bot.uuid}'`);
  assert.equal(stored[0].n, N);
});
