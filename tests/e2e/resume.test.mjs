// Answers outlive their readers: each session's Durable Object produces the answer to its end
// and keeps its events, so a reader that left comes back (event stream: Last-Event-ID; plain
// text: offset) and gets the rest exactly once, several readers follow one answer, an answer
// can be stopped on purpose, a restart mid-answer leaves a message that says so, and a session
// answers one message at a time. The answers come from the local model server ("[long]":
// 200 words, 25 ms apart).
import { test } from "node:test";
import assert from "node:assert/strict";
import { startAccount, startModelAccount, chatbotWithSession, eventually, expectError, sleep } from "./suite.mjs";

const { model, worker, key, api } = await startModelAccount();

async function newSession() {
  const { session } = await chatbotWithSession(api, { name: "Resumable" });
  return session;
}

/** Frames of an event-stream body that arrived whole: [{id, event, data}]. */
function frames(text) {
  const end = text.lastIndexOf("\n\n");
  if (end < 0) return [];
  const whole = text.slice(0, end + 2);
  return whole.split("\n\n").filter((b) => b.trim()).map((block) => {
    const frame = { id: undefined, event: "", data: "" };
    for (const line of block.split("\n")) {
      if (line.startsWith("id: ")) frame.id = Number(line.slice(4));
      else if (line.startsWith("event: ")) frame.event = line.slice(7);
      else if (line.startsWith("data: ")) frame.data += line.slice(6);
    }
    frame.data = JSON.parse(frame.data);
    return frame;
  });
}

const textOf = (fs) => fs.filter((f) => f.event === "delta").map((f) => f.data.text).join("");

/**
 * Opens `url` (POST with `body`, else GET) and reads it; `until(text)` true closes the
 * connection there. Returns the status, headers and what was read.
 */
async function read(url, { body, headers = {}, until } = {}) {
  const controller = new AbortController();
  const h = { Authorization: `Bearer ${key}`, ...headers };
  if (body) h["Content-Type"] = "application/json";
  const res = await fetch(`${worker.base}/api/v1${url}`, {
    method: body ? "POST" : "GET", headers: h, body: body && JSON.stringify(body), signal: controller.signal,
  });
  const decoder = new TextDecoder();
  let text = "";
  try {
    for await (const piece of res.body ?? []) {
      text += decoder.decode(piece, { stream: true });
      if (until?.(text)) {
        controller.abort();
        break;
      }
    }
  } catch (err) {
    if (err.name !== "AbortError") throw err;
  }
  return { status: res.status, headers: res.headers, text };
}

const ask = (session, query, options = {}) =>
  read(`/session/${session.uuid}/message/stream`, { body: { query }, ...options });

/** Sends a long question in event-stream mode; once its message is stored as `streaming`, its
 * uuid and the reading still under way. */
async function longAnswerStarted(session) {
  let uuid;
  const reading = ask(session, "tell me everything [long]", { headers: { Accept: "text/event-stream" } });
  await eventually(async () => {
    const [m] = (await api.get(`/session/${session.uuid}/messages`)).json;
    uuid = m?.uuid;
    return m && m.finish_reason === "streaming";
  });
  return { uuid, reading };
}

/** The stored message once its answer has ended. */
function ended(uuid, timeoutMs = 20_000) {
  return eventually(async () => {
    const r = await api.get(`/message/${uuid}`);
    return r.status === 200 && r.json.finish_reason !== "streaming" ? r.json : null;
  }, timeoutMs);
}

test("an event-stream reader that leaves after the first piece comes back with Last-Event-ID and gets the rest exactly once", async () => {
  const session = await newSession();
  const first = await ask(session, "tell me everything [long]", {
    headers: { Accept: "text/event-stream" },
    until: (t) => frames(t).some((f) => f.event === "delta"),
  });
  assert.equal(first.status, 200);
  const uuid = first.headers.get("x-message-uuid");
  const seen = frames(first.text);
  assert.equal(seen[0].event, "start");
  assert.deepEqual(seen.map((f) => f.id), seen.map((_, i) => i), "events are numbered from 0");
  const last = seen.at(-1).id;

  // The answer goes on without its reader; the reader comes back after a while.
  await sleep(700);
  const rest = await read(`/message/${uuid}/stream`, { headers: { Accept: "text/event-stream", "Last-Event-ID": String(last) } });
  assert.equal(rest.status, 200);
  assert.match(rest.headers.get("content-type"), /text\/event-stream/);
  const more = frames(rest.text);
  assert.equal(more[0].id, last + 1, "no gap and no repeat");
  assert.deepEqual(more.map((f) => f.id), more.map((_, i) => last + 1 + i));
  assert.equal(more.at(-1).event, "end");
  assert.equal(more.at(-1).data.finish_reason, "stop");

  const stored = await ended(uuid);
  assert.equal(stored.finish_reason, "stop");
  assert.ok(stored.response.endsWith("word199 "), "produced to the end with no reader");
  assert.equal(textOf(seen) + textOf(more), stored.response);
  assert.equal((await api.get(`/session/${session.uuid}/messages`)).json.length, 1, "stored once");
});

test("a reader coming back with an event id ahead of the answer gets only the events after it", async () => {
  const session = await newSession();
  const { uuid, reading } = await longAnswerStarted(session);
  const ahead = await read(`/message/${uuid}/stream`, { headers: { Accept: "text/event-stream", "Last-Event-ID": "150" } });
  assert.equal(ahead.status, 200);
  const got = frames(ahead.text);
  assert.ok(got.length > 0 && got.at(-1).event === "end", ahead.text.slice(-200));
  assert.deepEqual(got.map((f) => f.id), got.map((_, i) => 151 + i), "from 151 on, live events included");
  const all = frames((await reading).text);
  assert.deepEqual(got, all.filter((f) => f.id > 150));
});

test("an answer the object no longer keeps is replayed whole, by offset, but not after an event id it cannot match", async () => {
  const session = await newSession();
  const first = frames((await ask(session, "tell me something long [long]", { headers: { Accept: "text/event-stream" } })).text);
  const uuid = first[0].data.message_uuid;
  // The object keeps the events of the session's last 16 answers.
  for (let i = 0; i < 16; i++) assert.equal((await ask(session, `next ${i}`)).status, 200);
  const whole = await read(`/message/${uuid}/stream`, { headers: { Accept: "text/event-stream" } });
  assert.equal(textOf(frames(whole.text)), textOf(first));
  assert.equal(frames(whole.text).filter((f) => f.event === "delta").length, 1, "from the stored message");
  assert.equal((await read(`/message/${uuid}/stream?offset=30`)).text, textOf(first).slice(30));
  const resumed = await read(`/message/${uuid}/stream`, { headers: { Accept: "text/event-stream", "Last-Event-ID": "5" } });
  expectError(assert, { ...resumed, json: JSON.parse(resumed.text) }, 409, "conflict");
  assert.match(JSON.parse(resumed.text).error.message, /no longer kept/);
  const fromStart = await read(`/message/${uuid}/stream`, { headers: { Accept: "text/event-stream", "Last-Event-ID": "0" } });
  assert.equal(textOf(frames(fromStart.text)), textOf(first), "after the start event is still exact");
});

test("a plain-text reader comes back with an offset in characters and gets the rest exactly once", async () => {
  const session = await newSession();
  const first = await ask(session, "tell me everything [long]", { until: (t) => t.length >= 20 });
  assert.equal(first.status, 200);
  const uuid = first.headers.get("x-message-uuid");
  const rest = await read(`/message/${uuid}/stream?offset=${first.text.length}`);
  assert.equal(rest.status, 200);
  assert.match(rest.headers.get("content-type"), /text\/plain/);
  const stored = await ended(uuid);
  assert.equal(first.text + rest.text, stored.response);
  assert.ok(stored.response.endsWith("word199 "));

  // Once it is over the whole answer is still there to read, and a bad offset is a 400.
  assert.equal((await read(`/message/${uuid}/stream`)).text, stored.response);
  assert.equal((await read(`/message/${uuid}/stream?offset=10`)).text, stored.response.slice(10));
  expectError(assert, await api.get(`/message/${uuid}/stream?offset=ten`), 400, "invalid_request", "offset");
});

test("any number of readers follow one answer, in the format each asks for", async () => {
  const session = await newSession();
  const [author, sse, plain, ui] = await Promise.all([
    ask(session, "tell me everything [long]", { headers: { Accept: "text/event-stream" } }),
    (async () => {
      await sleep(400);
      const [m] = (await api.get(`/session/${session.uuid}/messages`)).json;
      return read(`/message/${m.uuid}/stream`, { headers: { Accept: "text/event-stream" } });
    })(),
    (async () => {
      await sleep(600);
      const [m] = (await api.get(`/session/${session.uuid}/messages`)).json;
      return read(`/message/${m.uuid}/stream`);
    })(),
    (async () => {
      await sleep(800);
      const [m] = (await api.get(`/session/${session.uuid}/messages`)).json;
      return read(`/message/${m.uuid}/stream?format=ui-message-stream`);
    })(),
  ]);
  const stored = await ended(author.headers.get("x-message-uuid"));
  assert.equal(textOf(frames(author.text)), stored.response);
  assert.equal(textOf(frames(sse.text)), stored.response, "a second reader gets it all");
  assert.deepEqual(frames(sse.text).map((f) => f.id), frames(author.text).map((f) => f.id));
  assert.equal(plain.text, stored.response);
  assert.equal(ui.headers.get("x-vercel-ai-ui-message-stream"), "v1");
  const parts = ui.text.split("\n\n").filter(Boolean).map((l) => l.slice(6));
  assert.equal(parts.at(-1), "[DONE]");
  const deltas = parts.slice(0, -1).map((p) => JSON.parse(p)).filter((p) => p.type === "text-delta");
  assert.equal(deltas.map((p) => p.delta).join(""), stored.response);
});

test("stop ends an answer on purpose: stored with what was said, finish_reason stopped", async () => {
  const session = await newSession();
  const { uuid, reading } = await longAnswerStarted(session);
  await sleep(300);
  const stopped = await api.post(`/message/${uuid}/stop`);
  assert.equal(stopped.status, 200, stopped.text);
  assert.equal(stopped.json.finish_reason, "stopped");
  assert.ok(stopped.json.response.startsWith("word0 "), stopped.json.response.slice(0, 20));
  assert.ok(!stopped.json.response.includes("word199"));
  const seen = frames((await reading).text);
  assert.equal(seen.at(-1).event, "end");
  assert.equal(seen.at(-1).data.finish_reason, "stopped");
  assert.equal(textOf(seen), stopped.json.response, "the reader saw exactly what was stored");
  expectError(assert, await api.post(`/message/${uuid}/stop`), 409, "conflict");
  // The session answers the next message.
  const next = await ask(session, "and now?");
  assert.equal(next.text, "You asked: and now?.");
  // Two stops at once: the first ends the answer, the other finds it ending.
  const again = await longAnswerStarted(await newSession());
  const both = await Promise.all([api.post(`/message/${again.uuid}/stop`), api.post(`/message/${again.uuid}/stop`)]);
  assert.deepEqual(both.map((r) => r.status).sort(), [200, 409], both.map((r) => r.text).join(" | "));
  await again.reading;
});

test("a rating given while the answer streams stays once the answer has ended", async () => {
  const session = await newSession();
  const { uuid, reading } = await longAnswerStarted(session);
  assert.equal((await api.get(`/message/${uuid}`)).json.answered, null, "not known before the end");
  const rated = await api.post(`/message/${uuid}/feedback`, { body: { rating: "down", comment: "too long" } });
  assert.equal(rated.status, 200, rated.text);
  await reading;
  const done = await ended(uuid);
  assert.equal(done.finish_reason, "stop");
  assert.ok(done.response.includes("word199"));
  assert.equal(done.feedback?.rating, "down", JSON.stringify(done.feedback));
  assert.equal(done.feedback?.comment, "too long");
});

test("a message still being answered is not deleted (409, alone or in a list) and stays deleted once its end is past", async () => {
  const session = await newSession();
  const { uuid, reading } = await longAnswerStarted(session);
  const alone = await api.post(`/message/${uuid}/delete`);
  expectError(assert, alone, 409, "conflict");
  assert.match(alone.json.error.message, /still being answered/);
  expectError(assert, await api.post("/messages/delete", { body: { uuids: [uuid] } }), 409, "conflict");
  assert.equal((await api.post(`/message/${uuid}/stop`)).status, 200);
  await reading;
  assert.deepEqual((await api.post(`/message/${uuid}/delete`)).json, { success: true });
  await sleep(300);
  expectError(assert, await api.get(`/message/${uuid}`), 404, "not_found");
  assert.deepEqual((await api.get(`/session/${session.uuid}/messages`)).json, []);
  const next = await ask(session, "and now?");
  assert.equal(next.text, "You asked: and now?.", "the session answers again");
});

test("deleting a session ends its open event streams and drops the answers its object kept", async () => {
  const session = await newSession();
  const answered = await ask(session, "remember this", { headers: { Accept: "text/event-stream" } });
  const uuid = frames(answered.text)[0].data.message_uuid;
  assert.equal((await read(`/message/${uuid}/stream`)).status, 200);
  // Read to its end: the stream ends when the session goes, not at the test's timeout.
  const listening = read(`/session/${session.uuid}/events`);
  await sleep(300);
  assert.deepEqual((await api.post(`/session/${session.uuid}/delete`)).json, { success: true });
  const events = await listening;
  assert.equal(events.status, 200);
  assert.match(events.text, /^: listening/);
  expectError(assert, await api.get(`/message/${uuid}/stream`), 404, "not_found");
  expectError(assert, await api.get(`/session/${session.uuid}/events`), 404, "not_found");
});

test("deleting a session mid-answer stops the answer; nothing is stored and nothing fails", async () => {
  const session = await newSession();
  const { reading } = await longAnswerStarted(session);
  assert.deepEqual((await api.post(`/session/${session.uuid}/delete`)).json, { success: true });
  const seen = frames((await reading).text);
  assert.equal(seen.at(-1).event, "end");
  assert.equal(seen.at(-1).data.finish_reason, "stopped");
  assert.ok(!textOf(seen).includes("word199"), "the model was not read to its end");
  expectError(assert, await api.get(`/session/${session.uuid}/messages`), 404, "not_found");
  // Storing the message of a deleted session used to log an internal error.
  await sleep(500);
  worker.assertNoInternalErrors();
});

test("a session answers one message at a time: a second one meanwhile is a 409", async () => {
  const session = await newSession();
  const [one, two] = await Promise.all([
    api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "first [long]" } }),
    (async () => {
      await sleep(500);
      return api.post(`/session/${session.uuid}/message/stream`, { body: { query: "second" } });
    })(),
  ]);
  assert.equal(one.status, 200, one.text);
  assert.equal(one.json.finish_reason, "stop");
  expectError(assert, two, 409, "conflict");
  assert.match(two.json.error.message, /still answering/);
  const list = (await api.get(`/session/${session.uuid}/messages`)).json;
  assert.deepEqual(list.map((m) => m.query), ["first [long]"], "the refused message left nothing");
  // Two sent at the very same moment: one answers, the other is refused.
  const both = await Promise.all([0, 1].map((i) => api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: `same time ${i}` } })));
  assert.deepEqual(both.map((r) => r.status).sort(), [200, 409]);
});

test("once a person takes over, the user's message is stored even while the assistant's last answer still streams", async () => {
  const session = await newSession();
  const answering = api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "first [long]" } });
  await eventually(async () => (await api.get(`/session/${session.uuid}/messages`)).json.length === 1);
  assert.equal((await api.post(`/session/${session.uuid}/live-chat/start`)).status, 200);
  const written = await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "Are you a person?" } });
  assert.equal(written.status, 202, written.text);
  assert.equal(written.json.kind, "user");
  assert.equal((await answering).json.finish_reason, "stop");
  const list = (await api.get(`/session/${session.uuid}/messages`)).json;
  assert.ok(list.some((m) => m.kind === "user" && m.query === "Are you a person?"), JSON.stringify(list));
});

test("a restart of the Worker mid-answer leaves a stored message that says it was interrupted", async () => {
  const session = await newSession();
  const first = await ask(session, "tell me everything [long]", {
    headers: { Accept: "text/event-stream" },
    until: (t) => textOf(frames(t)).length > 120,
  });
  const uuid = first.headers.get("x-message-uuid");
  // A reader following live up to the restart: it may hold events not yet in storage.
  const follower = (async () => {
    let text = "";
    try {
      const res = await fetch(`${worker.base}/api/v1/message/${uuid}/stream`, { headers: { Authorization: `Bearer ${key}`, Accept: "text/event-stream" } });
      const decoder = new TextDecoder();
      for await (const piece of res.body) text += decoder.decode(piece, { stream: true });
    } catch {
      // The runtime went away under it.
    }
    return text;
  })();
  // Long enough for the object to have written a batch of events.
  await sleep(600);
  await worker.restart();
  const replay = await read(`/message/${uuid}/stream`, { headers: { Accept: "text/event-stream" } });
  assert.equal(replay.status, 200);
  const events = frames(replay.text);
  assert.equal(events.at(-1).event, "end");
  assert.equal(events.at(-1).data.finish_reason, "interrupted");
  const stored = await ended(uuid);
  assert.equal(stored.finish_reason, "interrupted");
  assert.ok(stored.response.length >= 120, `kept ${stored.response.length} characters`);
  assert.ok(!stored.response.includes("word199"));
  assert.equal(textOf(events), stored.response);
  // The end says what the stored message holds, tokens of what was said counted.
  const usage = JSON.parse(stored.meta_json).usage;
  assert.ok(usage.completion_tokens > 0, JSON.stringify(usage));
  assert.doesNotMatch(stored.meta_json, /_tokens":-?\d+\./, "token counts stay whole numbers");
  assert.equal(stored.answered, false, "nothing was found to be answered");
  assert.equal(JSON.parse(stored.meta_json).answered, false);
  const end = frames((await read(`/message/${uuid}/stream`, { headers: { Accept: "text/event-stream" } })).text).at(-1);
  assert.deepEqual(end.data.usage, usage);
  assert.equal(end.data.answered, stored.answered);
  // The follower comes back with the last id it got, however far past storage that was, and
  // hears the end, numbered after it.
  const followed = frames(await follower);
  const lastId = followed.at(-1).id;
  const rest = frames((await read(`/message/${uuid}/stream`, { headers: { Accept: "text/event-stream", "Last-Event-ID": String(lastId) } })).text);
  assert.ok(rest.length >= 1, "the end comes");
  assert.ok(rest.every((f) => f.id > lastId), `ids after ${lastId}: ${rest.map((f) => f.id)}`);
  assert.equal(rest.at(-1).event, "end");
  assert.equal(rest.at(-1).data.finish_reason, "interrupted");
  // The session goes on.
  const next = await ask(session, "still there?");
  assert.equal(next.text, "You asked: still there?.");
});

test("the scheduled handler closes answers left streaming by a runtime that went away before their object kept them", async () => {
  const own = await startAccount({ testScheduled: true });
  const { bot, session } = await chatbotWithSession(own.api, { name: "Left streaming" });
  const row = (uuid, startedMs) =>
    `('${uuid}', '${session.uuid}', '${bot.uuid}', ${startedMs}, 'q', 'partial', 'streaming', ` +
    `'${new Date(startedMs).toISOString().slice(0, 19)}Z', '${new Date(startedMs).toISOString().slice(0, 19)}Z')`;
  const stale = crypto.randomUUID();
  const running = crypto.randomUUID();
  await own.worker.sql(
    "INSERT INTO messages (uuid, session_uuid, chatbot_uuid, started_ms, query, response, finish_reason, created_at, modified_at) " +
    `VALUES ${row(stale, Date.now() - 20 * 60_000)}, ${row(running, Date.now() - 60_000)}`,
  );
  await own.worker.runScheduled();
  const read = async (uuid) => (await own.api.get(`/message/${uuid}`)).json;
  const closed = await read(stale);
  assert.equal(closed.finish_reason, "interrupted");
  assert.equal(closed.response, "partial", "what was said is kept");
  assert.equal(JSON.parse(closed.meta_json).answered, false, closed.meta_json);
  assert.equal((await read(running)).finish_reason, "streaming", "an answer that may still run is left alone");
});

test("an answer whose runtime went away before its first piece is closed as interrupted when read or stopped, and can then be deleted", async () => {
  // What a restart leaves when it comes before the model's first token: a `streaming` row
  // that the session's new object neither produces nor keeps.
  const { bot, session } = await chatbotWithSession(api, { name: "Orphaned" });
  const orphan = async () => {
    const uuid = crypto.randomUUID();
    const at = Date.now() - 5_000;
    const stamp = `${new Date(at).toISOString().slice(0, 19)}Z`;
    await worker.sql(
      "INSERT INTO messages (uuid, session_uuid, chatbot_uuid, started_ms, query, response, finish_reason, created_at, modified_at) " +
      `VALUES ('${uuid}', '${session.uuid}', '${bot.uuid}', ${at}, 'q', '', 'streaming', '${stamp}', '${stamp}')`,
    );
    return uuid;
  };
  const readBack = await orphan();
  const replay = frames((await read(`/message/${readBack}/stream`, { headers: { Accept: "text/event-stream" } })).text);
  assert.equal(replay.at(-1).event, "end");
  assert.equal(replay.at(-1).data.finish_reason, "interrupted");
  assert.equal((await api.get(`/message/${readBack}`)).json.finish_reason, "interrupted");

  const stopped = await orphan();
  const refusal = expectError(assert, await api.post(`/message/${stopped}/stop`), 409, "conflict");
  assert.match(refusal.message, /interrupted/);
  assert.equal((await api.get(`/message/${stopped}`)).json.finish_reason, "interrupted");
  assert.equal((await api.post(`/message/${stopped}/delete`)).status, 200);
  assert.equal((await api.get(`/message/${stopped}`)).status, 404);
});

test("an ended answer's events are kept ANSWER_REPLAY_SECONDS, then it is replayed from its stored message", async () => {
  const short = await startModelAccount({ ANSWER_REPLAY_SECONDS: "1" });
  const { session } = await chatbotWithSession(short.api, { name: "Forgetful" });
  const replay = async (uuid) => {
    const res = await fetch(`${short.worker.base}/api/v1/message/${uuid}/stream`, {
      headers: { Authorization: `Bearer ${short.key}`, Accept: "text/event-stream" },
    });
    assert.equal(res.status, 200);
    return frames(await res.text());
  };
  const asked = await fetch(`${short.worker.base}/api/v1/session/${session.uuid}/message/stream`, {
    method: "POST",
    headers: { Authorization: `Bearer ${short.key}`, Accept: "text/event-stream", "Content-Type": "application/json" },
    body: JSON.stringify({ query: "tell me everything [long]" }),
  });
  const live = frames(await asked.text());
  const uuid = live[0].data.message_uuid;
  const kept = await replay(uuid);
  assert.deepEqual(kept, live, "kept: the very events it was sent as");
  assert.ok(kept.filter((f) => f.event === "delta").length > 100);
  // The object's alarm (30 s after the answer started) drops what it kept: the answer is
  // then replayed from its stored message, the same text in one piece.
  const stored = await eventually(async () => {
    const fs = await replay(uuid);
    return fs.filter((f) => f.event === "delta").length === 1 && fs;
  }, 90_000);
  assert.equal(textOf(stored), textOf(live));
  assert.equal(stored.at(-1).data.finish_reason, "stop");
});

test("an answer that failed midway, replayed from its stored message, still says it failed", async () => {
  const session = await newSession();
  const live = frames((await ask(session, "break off [cut]", { headers: { Accept: "text/event-stream" } })).text);
  assert.deepEqual(live.slice(-2).map((f) => f.event), ["error", "end"]);
  const uuid = live[0].data.message_uuid;
  // Sixteen answers later the object no longer keeps its events.
  for (let i = 0; i < 16; i++) assert.equal((await ask(session, `next ${i}`)).status, 200);
  const replayed = frames((await read(`/message/${uuid}/stream`, { headers: { Accept: "text/event-stream" } })).text);
  assert.deepEqual(replayed.map((f) => f.event), ["start", "delta", "error", "end"]);
  assert.equal(textOf(replayed), textOf(live));
  assert.deepEqual(replayed.at(-2).data, live.at(-2).data);
  assert.equal(replayed.at(-1).data.finish_reason, "error");
});

test("an answer whose model has not answered yet is listed, refuses a second message by name, and can be stopped", async () => {
  const session = await newSession();
  const reading = ask(session, "take your time [late]", { headers: { Accept: "text/event-stream" } });
  const waiting = await eventually(async () => {
    const [m] = (await api.get(`/session/${session.uuid}/messages`)).json;
    return m?.finish_reason === "streaming" && m;
  });
  assert.equal(waiting.response, "");
  const second = await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "hello?" } });
  expectError(assert, second, 409, "conflict");
  assert.ok(second.json.error.message.includes(waiting.uuid), second.json.error.message);
  const stopped = await api.post(`/message/${waiting.uuid}/stop`);
  assert.equal(stopped.status, 200, stopped.text);
  assert.equal(stopped.json.finish_reason, "stopped");
  assert.equal(stopped.json.response, "");
  const answered = await reading;
  assert.equal(answered.status, 200);
  assert.deepEqual(frames(answered.text).map((f) => [f.event, f.data.finish_reason]), [["start", undefined], ["end", "stopped"]]);
  // A model that fails before answering still leaves nothing behind.
  expectError(assert, await api.post(`/session/${session.uuid}/message/stream`, { body: { query: "fail late [late] [500]" } }), 502, "upstream_error");
  assert.deepEqual((await api.get(`/session/${session.uuid}/messages`)).json.map((m) => m.uuid), [waiting.uuid]);
});

test("an answer whose model has not answered at all sends its start at once: the asker can leave, follow it and stop it", { timeout: 60_000 }, async () => {
  const session = await newSession();
  const asked = await ask(session, "think it over [mute]", {
    headers: { Accept: "text/event-stream" },
    until: (t) => frames(t).some((f) => f.event === "start"),
  });
  assert.equal(asked.status, 200);
  const uuid = asked.headers.get("x-message-uuid");
  const [start] = frames(asked.text);
  assert.equal(start.event, "start");
  assert.equal(start.data.message_uuid, uuid);
  assert.equal(start.data.session_uuid, session.uuid);
  assert.equal((await api.get(`/message/${uuid}`)).json.finish_reason, "streaming", "listed before its first word");
  // The asker has left; the answer still waits for its model, and a reader can follow it.
  const following = read(`/message/${uuid}/stream`, { headers: { Accept: "text/event-stream" } });
  await sleep(200);
  const stopped = await api.post(`/message/${uuid}/stop`);
  assert.equal(stopped.status, 200, stopped.text);
  assert.equal(stopped.json.finish_reason, "stopped");
  assert.deepEqual(frames((await following).text).map((f) => [f.event, f.data.finish_reason]), [["start", undefined], ["end", "stopped"]]);
  await eventually(async () => model.dropped.some((d) => d.query.includes("think it over [mute]")));
});

/** Once the session's answer is stored as `streaming` (its model not answered yet), that message. */
const waitingAnswer = (session) =>
  eventually(async () => {
    const [m] = (await api.get(`/session/${session.uuid}/messages`)).json;
    return m?.finish_reason === "streaming" && m;
  });

test("readers of an answer whose model fails before its first word hear the asker's error (event stream) and then their streams end", async () => {
  const session = await newSession();
  const asking = ask(session, "fail late [late] [500]", { headers: { Accept: "text/event-stream" } });
  const waiting = await waitingAnswer(session);
  const [asked, sse, plain] = await Promise.all([
    asking,
    read(`/message/${waiting.uuid}/stream`, { headers: { Accept: "text/event-stream" } }),
    read(`/message/${waiting.uuid}/stream`),
  ]);
  // The asker had its answer's start while the model was waited for, so it hears the error
  // in the stream, as its readers do.
  assert.equal(asked.status, 200, asked.text);
  assert.equal(asked.headers.get("x-message-uuid"), waiting.uuid);
  const told = frames(asked.text);
  assert.deepEqual(told.map((f) => f.event), ["start", "error"], asked.text);
  assert.equal(told[0].data.message_uuid, waiting.uuid);
  const { data: error } = told[1];
  assert.equal(error.code, "upstream_error");
  assert.equal(sse.status, 200);
  assert.deepEqual(frames(sse.text).map((f) => [f.event, f.data]), told.map((f) => [f.event, f.data]));
  assert.ok(!sse.broken, "the event stream ends after its error");
  assert.equal(plain.status, 200);
  assert.equal(plain.text, "");
  assert.deepEqual((await api.get(`/session/${session.uuid}/messages`)).json, [], "nothing is kept");
});

test("an answer that runs past 256 KiB is cut there, and stored and told with finish_reason length", async () => {
  const session = await newSession();
  const got = frames((await ask(session, "say everything [huge]", { headers: { Accept: "text/event-stream" } })).text);
  assert.equal(got.at(-1).event, "end");
  assert.equal(got.at(-1).data.finish_reason, "length");
  const stored = await ended(got[0].data.message_uuid);
  assert.equal(stored.finish_reason, "length");
  const bytes = Buffer.byteLength(stored.response);
  assert.ok(bytes <= 256 * 1024 && bytes > 248 * 1024, `kept ${bytes} bytes`);
  assert.equal(textOf(got), stored.response, "the reader got what was stored");
});

test("a model that sends its finish and then holds its stream open without [DONE] ends the answer after a short grace", async () => {
  const session = await newSession();
  const started = Date.now();
  const got = frames((await ask(session, "finish but linger [finish-hang]", { headers: { Accept: "text/event-stream" } })).text);
  const elapsed = Date.now() - started;
  const end = got.at(-1);
  assert.equal(end.event, "end");
  assert.equal(end.data.finish_reason, "stop");
  assert.equal(end.data.usage.prompt_tokens, 42, "the usage chunk after the finish is read");
  assert.ok(elapsed < 10_000, `ended after ${elapsed} ms`);
  assert.equal((await ended(end.data.message_uuid)).finish_reason, "stop");
  await eventually(async () => model.dropped.some((d) => d.query.includes("[finish-hang]")));
});

test("a model call that fails before answering uses up none of the chatbot's rate limit, and the provider's Retry-After is passed on", async () => {
  const { session } = await chatbotWithSession(api, { name: "Limited", rate_limit: [1, 300] });
  expectError(assert, await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "fail [500]" } }), 502, "upstream_error");
  const busy = await api.post(`/session/${session.uuid}/message/stream`, { body: { query: "too busy [429]" } });
  expectError(assert, busy, 502, "upstream_error");
  assert.equal(busy.headers.get("retry-after"), "7");
  const answered = await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "hello" } });
  assert.equal(answered.status, 200, answered.text);
  expectError(assert, await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "again" } }), 429, "rate_limited");
});

test("a reader coming back at or past an ended answer's last event gets 204 No Content, so an EventSource stops", async () => {
  const session = await newSession();
  const all = frames((await ask(session, "hello there", { headers: { Accept: "text/event-stream" } })).text);
  const uuid = all[0].data.message_uuid;
  const last = all.at(-1).id;
  // Past any answer's end, however large the number.
  for (const id of [last, last + 10, 4294967296, "99999999999999999999999"]) {
    const r = await read(`/message/${uuid}/stream`, { headers: { Accept: "text/event-stream", "Last-Event-ID": String(id) } });
    assert.equal(r.status, 204, `after ${id}: ${r.status} ${r.text}`);
    assert.equal(r.text, "");
  }
  assert.equal((await read(`/message/${uuid}/stream?format=event-stream&last_event_id=${last}`)).status, 204);
  const past = await read(`/message/${uuid}/stream?offset=4294967296`);
  assert.equal(past.status, 200, past.text);
  assert.equal(past.text, "");
  const before = await read(`/message/${uuid}/stream`, { headers: { Accept: "text/event-stream", "Last-Event-ID": String(last - 1) } });
  assert.equal(before.status, 200);
  assert.deepEqual(frames(before.text).map((f) => f.event), ["end"]);
});
