// What an owner reads about a chatbot: one message, feedback (by the account and by the
// visitor whose session it is), unanswered questions grouped, analytics that agree with the
// message list, a plain-text transcript and streamed exports.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { startAccount, shopChatbot, newSession, expectError, eventually } from "./suite.mjs";

let worker, api;

before(async () => ({ worker, api } = await startAccount()));

async function ask(session, query) {
  const r = await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query } });
  assert.equal(r.status, 200, r.text);
  return r.json;
}

async function visitorToken(bot) {
  const r = await worker.request("POST", `/api/v1/widget/${bot.uuid}/token`, { body: {} });
  assert.equal(r.status, 200, r.text);
  return r.json.token;
}

function visitor(token) {
  const call = (method) => (p, opts = {}) => worker.request(method, `/api/v1${p}`, { key: token, ...opts });
  return { get: call("GET"), post: call("POST") };
}

test("one message is read by its uuid: the account's, or a visitor's own", async () => {
  const bot = await shopChatbot(api, { visibility: "public" });
  const session = await newSession(api, bot);
  const m = await ask(session, "Do you ship abroad?");
  const r = await api.get(`/message/${m.uuid}`);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, m);
  assert.equal(r.json.answered, true);
  assert.equal(JSON.parse(r.json.meta_json).answered, true);
  assert.equal(r.json.feedback, null);
  expectError(assert, await api.get("/message/00000000-0000-4000-8000-000000000000"), 404, "not_found");

  const v = visitor(await visitorToken(bot));
  const own = (await v.post(`/chatbot/${bot.uuid}/session/create`, { body: {} })).json;
  const stream = await v.post(`/session/${own.uuid}/message/stream`, { body: { query: "Do you ship abroad?" } });
  const uuid = stream.headers.get("x-message-uuid");
  // A streamed answer is stored as its stream ends.
  const seen = await eventually(async () => { const x = await v.get(`/message/${uuid}`); return x.status === 200 ? x : null; });
  assert.equal(seen.status, 200, seen.text);
  assert.equal(seen.json.meta_json, undefined, "a visitor does not see the owner's details");
  expectError(assert, await v.get(`/message/${m.uuid}`), 404, "not_found");
});

test("feedback by the account and by the visitor: one rating per message, changeable, shown and listed", async () => {
  const bot = await shopChatbot(api, { visibility: "public" });
  const session = await newSession(api, bot);
  const m = await ask(session, "Do you ship abroad?");

  let r = await api.post(`/message/${m.uuid}/feedback`, { body: { rating: "up" } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.rating, "up");
  assert.equal(r.json.comment, null);
  const firstAt = r.json.created_at;
  r = await api.post(`/message/${m.uuid}/feedback`, { body: { rating: "down", comment: "Too short" } });
  assert.equal(r.json.rating, "down");
  assert.equal(r.json.created_at, firstAt, "changing a rating keeps when it was first given");
  const shown = (await api.get(`/message/${m.uuid}`)).json.feedback;
  assert.deepEqual({ rating: shown.rating, comment: shown.comment }, { rating: "down", comment: "Too short" });
  assert.equal((await api.get(`/session/${session.uuid}/messages`)).json[0].feedback.rating, "down");
  // Rating again without a comment keeps the one written before; a null comment removes it.
  r = await api.post(`/message/${m.uuid}/feedback`, { body: { rating: "up" } });
  assert.deepEqual([r.json.rating, r.json.comment], ["up", "Too short"]);
  r = await api.post(`/message/${m.uuid}/feedback`, { body: { rating: "down", comment: null } });
  assert.deepEqual([r.json.rating, r.json.comment], ["down", null]);
  r = await api.post(`/message/${m.uuid}/feedback`, { body: { rating: "down", comment: "Too short" } });

  for (const [body, field] of [[{}, "rating"], [{ rating: "meh" }, "rating"], [{ rating: "up", comment: 3 }, "comment"]]) {
    expectError(assert, await api.post(`/message/${m.uuid}/feedback`, { body }), 400, "invalid_request", field);
  }

  // A visitor rates answers in its own sessions only; another visitor's message is missing.
  const alice = visitor(await visitorToken(bot));
  const bob = visitor(await visitorToken(bot));
  const aliceSession = (await alice.post(`/chatbot/${bot.uuid}/session/create`, { body: {} })).json;
  const stream = await alice.post(`/session/${aliceSession.uuid}/message/stream`, { body: { query: "Do you ship abroad?" } });
  const aliceMessage = stream.headers.get("x-message-uuid");
  r = await eventually(async () => { const x = await alice.post(`/message/${aliceMessage}/feedback`, { body: { rating: "up", comment: "thanks" } }); return x.status === 404 ? null : x; });
  assert.equal(r.status, 200, r.text);
  expectError(assert, await bob.post(`/message/${aliceMessage}/feedback`, { body: { rating: "down" } }), 404, "not_found");
  expectError(assert, await alice.post(`/message/${m.uuid}/feedback`, { body: { rating: "down" } }), 404, "not_found");
  assert.equal((await alice.get(`/session/${aliceSession.uuid}/messages`)).json[0].feedback.rating, "up");

  const all = (await api.get(`/chatbot/${bot.uuid}/feedback`)).json;
  assert.deepEqual(all.map((f) => f.message_uuid).sort(), [m.uuid, aliceMessage].sort());
  const down = (await api.get(`/chatbot/${bot.uuid}/feedback?rating=down`)).json;
  assert.deepEqual(down.map((f) => [f.message_uuid, f.query]), [[m.uuid, "Do you ship abroad?"]]);
  assert.deepEqual((await api.get(`/chatbot/${bot.uuid}/feedback?start_timestamp=2999-01-01T00:00:00Z`)).json, []);
  expectError(assert, await api.get(`/chatbot/${bot.uuid}/feedback?rating=sideways`), 400, "invalid_request", "rating");
  expectError(assert, await api.get(`/chatbot/${bot.uuid}/feedback?end_timestamp=yesterday`), 400, "invalid_request", "end_timestamp");
});

test("unanswered questions are grouped by shared words, most frequent first, with the latest example", async () => {
  const bot = await shopChatbot(api);
  const session = await newSession(api, bot);
  const answered = await ask(session, "Do you ship abroad?");
  assert.equal(answered.answered, true);
  const asked = [
    "Do you have a loyalty programme?",
    "What are your opening hours?",
    "Is there a loyalty programme for members?",
    "How do loyalty programme points work?",
    "Opening hours on Sunday?",
    "Can I pay with bitcoin?",
  ];
  for (const q of asked) {
    const m = await ask(session, q);
    assert.equal(m.answered, false, q);
  }
  const r = await api.get(`/chatbot/${bot.uuid}/unanswered`);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json.map((g) => [g.count, g.question]), [
    [3, "How do loyalty programme points work?"],
    [2, "Opening hours on Sunday?"],
    [1, "Can I pay with bitcoin?"],
  ]);
  assert.ok(r.json[0].terms.includes("loyalty"));
  assert.deepEqual((await api.get(`/chatbot/${bot.uuid}/unanswered?end_timestamp=2000-01-01T00:00:00Z`)).json, []);
});

test("analytics equal the counts taken from the message list", async () => {
  const bot = await shopChatbot(api, { visibility: "public" });
  const sessions = [await newSession(api, bot), await newSession(api, bot)];
  await ask(sessions[0], "Do you ship abroad?");
  const unanswered = await ask(sessions[0], "Do you sell gift cards?");
  const good = await ask(sessions[1], "Do you ship abroad?");
  await api.post(`/message/${good.uuid}/feedback`, { body: { rating: "up" } });
  await api.post(`/message/${unanswered.uuid}/feedback`, { body: { rating: "down" } });
  await api.post(`/session/${sessions[1].uuid}/live-chat/start`);
  await api.post(`/session/${sessions[1].uuid}/live-chat/message`, { body: { text: "Hi, Sam here." } });
  const v = visitor(await visitorToken(bot));
  const own = (await v.post(`/chatbot/${bot.uuid}/session/create`, { body: {} })).json;
  await v.post(`/session/${own.uuid}/message/stream`, { body: { query: "Do you ship abroad?" } });
  await eventually(async () => (await api.get(`/session/${own.uuid}/messages`)).json.length === 1);

  const all = (await api.get(`/chatbot/${bot.uuid}/sessions`)).json;
  const messages = [];
  for (const s of all) messages.push(...(await api.get(`/session/${s.uuid}/messages`)).json);
  const r = await api.get(`/chatbot/${bot.uuid}/analytics`);
  assert.equal(r.status, 200, r.text);
  const t = r.json.totals;
  assert.equal(t.sessions, all.length);
  assert.equal(t.messages, messages.length);
  assert.equal(t.answers, messages.filter((m) => m.kind === "answer").length);
  assert.equal(t.answered, messages.filter((m) => m.answered === true).length);
  assert.equal(t.unanswered, messages.filter((m) => m.answered === false).length);
  assert.equal(t.answered_share, Math.round((t.answered / (t.answered + t.unanswered)) * 1000) / 1000);
  assert.equal(t.visitors, 1);
  assert.equal(t.live_chats, 1);
  assert.equal(t.feedback_up, messages.filter((m) => m.feedback?.rating === "up").length);
  assert.equal(t.feedback_down, messages.filter((m) => m.feedback?.rating === "down").length);
  assert.deepEqual(
    r.json.series.map((d) => d.date),
    [...new Set(messages.map((m) => m.created_at.slice(0, 10)))].sort(),
  );
  assert.equal(r.json.series.reduce((n, d) => n + d.messages, 0), messages.length);
  // A date ends a range at its last second: today's messages all count.
  const today = messages[0].created_at.slice(0, 10);
  const day = (await api.get(`/chatbot/${bot.uuid}/analytics?start_timestamp=${today}&end_timestamp=${today}`)).json;
  assert.equal(day.end_timestamp, `${today}T23:59:59Z`);
  assert.equal(day.totals.messages, messages.filter((m) => m.created_at.startsWith(today)).length);
  assert.ok(day.totals.messages > 0);
  const empty = (await api.get(`/chatbot/${bot.uuid}/analytics?end_timestamp=2000-01-01`)).json;
  assert.equal(empty.totals.messages, 0);
  assert.equal(empty.totals.answered_share, null);
  assert.deepEqual(empty.series, []);
  expectError(assert, await api.get(`/chatbot/${bot.uuid}/analytics?start_timestamp=soon`), 400, "invalid_request", "start_timestamp");
});

test("a session that asked for a person, or had live chat, in several rounds counts in a range holding any round", async () => {
  const bot = await shopChatbot(api);
  const made = await api.post(`/chatbot/${bot.uuid}/agent/create`, {
    body: { name: "Humans", type: "human-escalation", enabled: true, human_escalation_settings: { human_requested_message: "A colleague will join you." } },
  });
  assert.equal(made.status, 200, made.text);
  const session = await newSession(api, bot);
  const times = { asked: [], live: [] };
  for (let round = 0; round < 2; round++) {
    const m = await ask(session, "Can I talk to a real person please?");
    assert.equal(m.response, "A colleague will join you.");
    times.asked.push(m.created_at);
    const started = await api.post(`/session/${session.uuid}/live-chat/start`);
    assert.equal(started.status, 200, started.text);
    times.live.push(started.json.session.meta.live_chat.started_at);
    assert.equal((await api.post(`/session/${session.uuid}/live-chat/end`)).status, 200);
    // Timestamps are to the second: the second round comes a second later.
    if (round === 0) await new Promise((done) => setTimeout(done, 1100));
  }
  const totals = async (range) => (await api.get(`/chatbot/${bot.uuid}/analytics?${range}`)).json.totals;
  const first = await totals(`end_timestamp=${times.asked[0] < times.live[0] ? times.live[0] : times.asked[0]}`);
  assert.deepEqual([first.escalations, first.live_chats], [1, 1], "the first round alone");
  const second = await totals(`start_timestamp=${times.asked[1]}`);
  assert.deepEqual([second.escalations, second.live_chats], [1, 1], "the second round alone");
  const all = await totals("");
  assert.deepEqual([all.escalations, all.live_chats], [1, 1], "one session, however many rounds");
  const meta = (await api.get(`/session/${session.uuid}`)).json.meta;
  assert.deepEqual(meta.human_escalation.requested_times, times.asked);
  assert.deepEqual(meta.live_chat.started_times, times.live);
});

test("a session reads as a plain-text transcript; exports hold every message as JSON Lines or CSV", async () => {
  const bot = await shopChatbot(api);
  const session = await newSession(api, bot);
  // More than one export page (500), with text that needs quoting in CSV.
  await ask(session, "Do you ship abroad?");
  await ask(session, 'Do you sell "gift cards", or vouchers?\nAsking for a friend');
  await api.post(`/session/${session.uuid}/live-chat/start`);
  await api.post(`/session/${session.uuid}/live-chat/message`, { body: { text: "Sam here, yes we do." } });
  await api.post(`/session/${session.uuid}/live-chat/end`);
  // More messages than one export page (500), written straight into the database.
  const second = await newSession(api, bot);
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  await worker.sql(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 510)
    INSERT INTO messages (uuid, session_uuid, chatbot_uuid, started_ms, query, response, finish_reason, created_at, modified_at, kind, answered)
    SELECT lower(hex(randomblob(16))), '${second.uuid}', '${bot.uuid}', i, 'Question number ' || i || '?', 'Answer, "quoted"', 'stop', '${now}', '${now}', 'answer', i % 2 FROM n`);

  const text = await api.get(`/session/${session.uuid}/messages/plain-text`);
  assert.equal(text.status, 200);
  assert.match(text.headers.get("content-type"), /^text\/plain/);
  assert.match(text.text, /User:\n {2}Do you ship abroad\?\n/);
  assert.match(text.text, /Yes, we ship to 40 countries/);
  assert.match(text.text, /Operator:\n {2}Sam here, yes we do\.\n/);

  let total = 0;
  for (const s of [session, second]) total += (await api.get(`/session/${s.uuid}/messages`)).json.length;
  assert.ok(total > 510);

  const jsonl = await api.get(`/chatbot/${bot.uuid}/export?format=jsonl`);
  assert.equal(jsonl.status, 200);
  assert.match(jsonl.headers.get("content-type"), /^application\/x-ndjson/);
  const lines = jsonl.text.split("\n").filter(Boolean).map((l) => JSON.parse(l));
  assert.equal(lines.length, total);
  assert.equal(new Set(lines.map((m) => m.uuid)).size, total, "no message twice");
  const numbers = lines.filter((m) => m.session_uuid === second.uuid).map((m) => Number(/number (\d+)/.exec(m.query)[1]));
  assert.deepEqual(numbers, Array.from({ length: 510 }, (_, i) => i + 1), "messages of one second in the order they were sent, across pages");

  const csv = await api.get(`/chatbot/${bot.uuid}/export?format=csv`);
  assert.equal(csv.status, 200);
  assert.match(csv.headers.get("content-type"), /^text\/csv/);
  const python = spawnSync("python3", ["-c", [
    "import csv, io, json, sys",
    "rows = list(csv.DictReader(io.StringIO(sys.stdin.read(), newline='')))",
    "print(json.dumps({'n': len(rows), 'fields': list(rows[0].keys()), 'queries': [r['query'] for r in rows]}))",
  ].join("\n")], { input: csv.text, encoding: "utf8", maxBuffer: 64 << 20 });
  assert.equal(python.status, 0, python.stderr);
  const parsed = JSON.parse(python.stdout);
  assert.equal(parsed.n, total);
  assert.deepEqual(parsed.fields, ["message_uuid", "session_uuid", "created_at", "kind", "query", "response", "finish_reason", "answered", "rating", "comment"]);
  assert.ok(parsed.queries.includes('Do you sell "gift cards", or vouchers?\nAsking for a friend'));

  const none = await api.get(`/chatbot/${bot.uuid}/export?format=jsonl&start_timestamp=2999-01-01T00:00:00Z`);
  assert.equal(none.text, "");
  expectError(assert, await api.get(`/chatbot/${bot.uuid}/export?format=xml`), 400, "invalid_request", "format");
  for (const path of ["export?format=csv&", "analytics?", "unanswered?", "feedback?", "sessions?"]) {
    expectError(assert, await api.get(`/chatbot/${bot.uuid}/${path}start_timestamp=2026-02-01&end_timestamp=2026-01-31`), 400, "invalid_request", "end_timestamp");
  }
  // A question a spreadsheet would run as a formula stays text in the CSV; JSONL keeps it as asked.
  const formula = '=HYPERLINK("http://evil.example","click")';
  await worker.sql(`INSERT INTO messages (uuid, session_uuid, chatbot_uuid, started_ms, query, response, finish_reason, created_at, modified_at, kind)
    VALUES ('f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0', '${second.uuid}', '${bot.uuid}', 999999, '${formula.replaceAll("'", "''")}', 'no', 'stop', '${new Date().toISOString().slice(0, 19)}Z', '${new Date().toISOString().slice(0, 19)}Z', 'answer')`);
  assert.ok((await api.get(`/chatbot/${bot.uuid}/export?format=csv`)).text.includes(`"'${formula.replaceAll('"', '""')}"`));
  assert.ok((await api.get(`/chatbot/${bot.uuid}/export?format=jsonl`)).text.includes(JSON.stringify(formula)));
});

test("ratings of one answer sent at the same moment each answer with what that call stored", async () => {
  const bot = await shopChatbot(api);
  const session = await newSession(api, bot);
  const message = await ask(session, "Do you ship abroad?");
  const sent = [1, 2, 3, 4, 5, 6].map((i) => ({ rating: i <= 3 ? "up" : "down", comment: `c${i}` }));
  const answers = await Promise.all(sent.map((body) => api.post(`/message/${message.uuid}/feedback`, { body })));
  answers.forEach((r, i) => {
    assert.equal(r.status, 200, r.text);
    assert.deepEqual([r.json.rating, r.json.comment], [sent[i].rating, sent[i].comment]);
  });
});
