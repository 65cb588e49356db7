// The protocols other clients already speak: OpenAI's Chat Completions (read with the official
// `openai` package, streaming and not, with an API key and with a visitor token), and the AI
// SDK's UI message stream (read with the `ai` package's own reader).
import { test, before } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { readUIMessageStream, parseJsonEventStream, uiMessageChunkSchema, DefaultChatTransport } from "ai";
import { startModelAccount, newChatbot, firstAgent, newSession, messagesOf, storedMessages, eventually } from "./suite.mjs";

let worker, model, api, key;

before(async () => ({ model, worker, api, key } = await startModelAccount()));

const completionRequests = () => model.requests.filter((r) => r.url === "/v1/chat/completions").map((r) => JSON.parse(r.body));

async function llmBot(body = {}) {
  const bot = await newChatbot(api, { name: "LLM bot", show_citations: true, rate_limit: [100, 60], ...body });
  await api.post(`/chatbot/${bot.uuid}/data-source/qa`, { body: { question: "What is the returns window?", answer: "Thirty days from delivery." } });
  return bot;
}

const openai = (apiKey) => new OpenAI({ apiKey, baseURL: `${worker.base}/api/v1/openai`, maxRetries: 0 });

test("openai client: a completion with an API key, citations in an extra field, one new session per call", async () => {
  const bot = await llmBot();
  const client = openai(key);
  const models = await client.models.list();
  assert.ok(models.data.some((m) => m.id === bot.uuid && m.object === "model"));
  const one = await client.models.retrieve(bot.uuid);
  assert.deepEqual([one.id, one.object, one.name], [bot.uuid, "model", "LLM bot"]);
  assert.deepEqual(one, models.data.find((m) => m.id === bot.uuid), "as the list gives it");

  const before = completionRequests().length;
  const done = await client.chat.completions.create({
    model: bot.uuid,
    messages: [
      { role: "system", content: "ignored: the agent has its own prompt" },
      { role: "user", content: "My name is Grace." },
      { role: "assistant", content: "Hello Grace." },
      { role: "user", content: "What is the returns window?" },
    ],
  });
  assert.equal(done.object, "chat.completion");
  assert.equal(done.model, bot.uuid);
  assert.equal(done.choices[0].message.role, "assistant");
  assert.equal(done.choices[0].message.content, "You asked: What is the returns window?.");
  assert.equal(done.choices[0].finish_reason, "stop");
  assert.equal(done.usage.total_tokens, 47);
  assert.equal(done.citations["1"].title, "What is the returns window?");
  const [sent] = completionRequests().slice(before);
  assert.deepEqual(sent.messages.slice(1).map((m) => [m.role, m.content]), [
    ["user", "My name is Grace."],
    ["assistant", "Hello Grace."],
    ["user", "What is the returns window?"],
  ], "earlier messages are the history");

  const stored = await messagesOf(api, { uuid: done.session_uuid });
  assert.equal(stored.length, 1);
  assert.equal(stored[0].uuid, done.message_uuid);
  assert.equal(stored[0].response, done.choices[0].message.content);

  const again = await client.chat.completions.create({ model: bot.uuid, messages: [{ role: "user", content: "hi" }] });
  assert.notEqual(again.session_uuid, done.session_uuid);
});

test("openai client: streaming chunks end with [DONE], and a named session keeps its history", async () => {
  const bot = await llmBot();
  const session = await newSession(api, bot);
  const client = openai(key);
  const stream = await client.chat.completions.create({
    model: bot.uuid,
    stream: true,
    metadata: { session_uuid: session.uuid },
    messages: [{ role: "user", content: "What is the returns window?" }],
  });
  let text = "";
  const chunks = [];
  for await (const chunk of stream) {
    chunks.push(chunk);
    text += chunk.choices[0]?.delta?.content ?? "";
  }
  assert.equal(text, "You asked: What is the returns window?.");
  assert.ok(chunks.every((c) => c.object === "chat.completion.chunk" && c.model === bot.uuid && c.id === chunks[0].id));
  assert.equal(chunks[0].choices[0].delta.role, "assistant");
  assert.equal(chunks.at(-1).choices[0].finish_reason, "stop");
  assert.equal(chunks.find((c) => c.citations)?.citations["1"].title, "What is the returns window?", "citations travel in their own chunk");
  await storedMessages(api, session);

  const before = completionRequests().length;
  const second = await client.chat.completions.create({
    model: bot.uuid,
    metadata: { session_uuid: session.uuid },
    messages: [{ role: "user", content: "What did I ask?" }],
  });
  assert.equal(second.session_uuid, session.uuid);
  const [sent] = completionRequests().slice(before);
  assert.deepEqual(sent.messages.slice(1).map((m) => m.role), ["user", "assistant", "user"], "the stored history is sent");
  assert.equal((await messagesOf(api, session)).length, 2);
});

test("openai client: a completion is a turn of its session's object: one at a time, followed again after its reader left", async () => {
  const bot = await llmBot();
  const session = await newSession(api, bot);
  const client = openai(key);
  const named = { model: bot.uuid, metadata: { session_uuid: session.uuid } };
  // A streamed completion whose reader leaves after its first piece.
  const stream = await client.chat.completions.create({ ...named, stream: true, messages: [{ role: "user", content: "tell me everything [long]" }] });
  let first = "";
  let messageUuid;
  for await (const chunk of stream) {
    messageUuid ??= chunk.message_uuid;
    first += chunk.choices[0]?.delta?.content ?? "";
    if (first.length > 20) break;
  }
  // Meanwhile the session is busy: a second completion is refused in OpenAI's shape, and so
  // is a message sent the usual way.
  await assert.rejects(client.chat.completions.create({ ...named, messages: [{ role: "user", content: "and now?" }] }),
    (err) => err instanceof OpenAI.ConflictError && err.status === 409 && /still answering/.test(err.message));
  const usual = await api.post(`/session/${session.uuid}/message/stream`, { body: { query: "and now?" } });
  assert.equal(usual.status, 409);
  // The answer went on without its reader; read again from its start, it is whole.
  const [running] = await messagesOf(api, session);
  assert.equal(messageUuid, running.uuid, "the first chunk names the message it is");
  const again = await worker.request("GET", `/api/v1/message/${running.uuid}/stream`, { key, timeoutMs: 30_000 });
  assert.equal(again.status, 200);
  assert.ok(again.text.startsWith(first), "the replay starts with what the first reader saw");
  const stored = await eventually(async () => {
    const [m] = await messagesOf(api, session);
    return m.finish_reason === "streaming" ? null : m;
  }, 20_000);
  assert.equal(stored.finish_reason, "stop");
  assert.equal(again.text, stored.response);
  // Free again: the next completion in the session answers, with the first as history.
  const next = await client.chat.completions.create({ ...named, messages: [{ role: "user", content: "and now?" }] });
  assert.equal(next.choices[0].message.content, "You asked: and now?.");
  assert.equal((await messagesOf(api, session)).length, 2);
});

test("openai client: a visitor token works for its own chatbot, in its own sessions only", async () => {
  const bot = await llmBot({ visibility: "public" });
  const other = await llmBot({ visibility: "public" });
  const minted = await worker.request("POST", `/api/v1/widget/${bot.uuid}/token`, { body: {} });
  assert.equal(minted.status, 200, minted.text);
  const client = openai(minted.json.token);
  const models = await client.models.list();
  assert.deepEqual(models.data.map((m) => m.id), [bot.uuid]);
  assert.equal((await client.models.retrieve(bot.uuid)).id, bot.uuid);
  await assert.rejects(client.models.retrieve(other.uuid),
    (err) => err instanceof OpenAI.NotFoundError && err.error?.type === "not_found_error", "another chatbot is no model of the visitor's");

  const stream = await client.chat.completions.create({ model: bot.uuid, stream: true, messages: [{ role: "user", content: "hello" }] });
  let text = "";
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
  assert.equal(text, "You asked: hello.");

  await assert.rejects(
    client.chat.completions.create({ model: other.uuid, messages: [{ role: "user", content: "hello" }] }),
    (err) => err instanceof OpenAI.PermissionDeniedError && err.status === 403,
  );
  const ownerSession = await newSession(api, bot);
  await assert.rejects(
    client.chat.completions.create({ model: bot.uuid, metadata: { session_uuid: ownerSession.uuid }, messages: [{ role: "user", content: "hi" }] }),
    (err) => err instanceof OpenAI.NotFoundError && err.error?.type === "not_found_error",
  );
  // A chatbot that hides its citations hides them here too, streamed or not, from a visitor
  // and from a key alike.
  const hidden = await llmBot({ visibility: "public", show_citations: false });
  const visitor = (await worker.request("POST", `/api/v1/widget/${hidden.uuid}/token`, { body: {} })).json.token;
  for (const asker of [visitor, key]) {
    const plain = await openai(asker).chat.completions.create({ model: hidden.uuid, messages: [{ role: "user", content: "What is the returns window?" }] });
    assert.deepEqual(plain.citations, {});
    const chunks = [];
    for await (const chunk of await openai(asker).chat.completions.create({ model: hidden.uuid, stream: true, messages: [{ role: "user", content: "What is the returns window?" }] })) chunks.push(chunk);
    assert.ok(!chunks.some((c) => c.citations), "no citations chunk");
  }
});

test("openai client: in live chat the completion is empty and marked live_chat, streamed or not, and a visitor talking to a person is not held to the chatbot's message limit", async () => {
  // The visitor's share of this limit is 1 message a minute.
  const bot = await llmBot({ visibility: "public", rate_limit: [4, 60] });
  const token = (await worker.request("POST", `/api/v1/widget/${bot.uuid}/token`, { body: {} })).json.token;
  const session = await worker.request("POST", `/api/v1/chatbot/${bot.uuid}/session/create`, { key: token, body: {} });
  assert.equal(session.status, 200, session.text);
  assert.equal((await api.post(`/session/${session.json.uuid}/live-chat/start`)).status, 200);
  const client = openai(token);
  const metadata = { session_uuid: session.json.uuid };
  for (let i = 0; i < 6; i++) {
    const chunks = [];
    const stream = await client.chat.completions.create({ model: bot.uuid, stream: true, metadata, messages: [{ role: "user", content: `line ${i}` }] });
    for await (const chunk of stream) chunks.push(chunk);
    assert.equal(chunks[0].live_chat, true, JSON.stringify(chunks));
    assert.equal(chunks.map((c) => c.choices[0]?.delta?.content ?? "").join(""), "");
    assert.equal(chunks.at(-1).choices[0].finish_reason, "stop");
  }
  const whole = await client.chat.completions.create({ model: bot.uuid, metadata, messages: [{ role: "user", content: "still there?" }] });
  assert.equal(whole.live_chat, true);
  assert.equal(whole.choices[0].message.content, "");
  assert.equal(whole.usage.total_tokens, 0, "usage is always an object, as OpenAI sends it");
  const stored = await messagesOf(api, session.json);
  assert.deepEqual(stored.filter((m) => m.kind === "user").map((m) => m.query), ["line 0", "line 1", "line 2", "line 3", "line 4", "line 5", "still there?"]);
  // Once the person hands back, the chatbot's limit applies again.
  assert.equal((await api.post(`/session/${session.json.uuid}/live-chat/end`)).status, 200);
  await client.chat.completions.create({ model: bot.uuid, metadata, messages: [{ role: "user", content: "hello" }] });
  await assert.rejects(
    client.chat.completions.create({ model: bot.uuid, metadata, messages: [{ role: "user", content: "hello again" }] }),
    (err) => err instanceof OpenAI.RateLimitError,
  );
});

test("openai client: errors in OpenAI's shape (bad key, unknown model, bad messages, rate limit)", async () => {
  const bot = await llmBot({ rate_limit: [1, 60], rate_limit_message: "Slow down." });
  await assert.rejects(openai("ec_not_a_key").chat.completions.create({ model: bot.uuid, messages: [{ role: "user", content: "hi" }] }),
    (err) => err instanceof OpenAI.AuthenticationError && err.status === 401 && err.error?.type === "authentication_error" && /not valid/.test(err.message));
  const client = openai(key);
  await assert.rejects(client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] }),
    (err) => err instanceof OpenAI.NotFoundError && /does not exist/.test(err.message));
  await assert.rejects(client.models.retrieve("gpt-4o"),
    (err) => err instanceof OpenAI.NotFoundError && /`gpt-4o` does not exist/.test(err.message));
  const stranger = await worker.newAccount("stranger");
  await assert.rejects(openai(stranger.key).models.retrieve(bot.uuid),
    (err) => err instanceof OpenAI.NotFoundError && /does not exist/.test(err.message), "another account's chatbot");
  await assert.rejects(client.chat.completions.create({ model: bot.uuid, messages: [{ role: "assistant", content: "hi" }] }),
    (err) => err instanceof OpenAI.BadRequestError && err.error?.param === "messages");
  await client.chat.completions.create({ model: bot.uuid, messages: [{ role: "user", content: "one" }] });
  await assert.rejects(client.chat.completions.create({ model: bot.uuid, messages: [{ role: "user", content: "two" }] }),
    (err) => err instanceof OpenAI.RateLimitError && err.status === 429 && err.message.includes("Slow down.") && Number(err.headers.get("retry-after")) > 0);
  assert.equal((await worker.request("GET", `/api/v1/chatbot/${bot.uuid}/sessions`, { key })).json.length, 1,
    "a refused call leaves no session behind");
  const raw = await worker.request("POST", "/api/v1/openai/chat/completions", { key, body: { model: bot.uuid } });
  assert.equal(raw.status, 400);
  assert.deepEqual(raw.json.error, {
    code: "invalid_request",
    type: "invalid_request_error",
    message: raw.json.error.message,
    param: "messages",
    field: "messages",
  }, "OpenAI's fields beside the API's own");
});

test("openai client: the conversation it sends is the history, greeting and split messages included, also in a named session", async () => {
  const bot = await llmBot();
  const client = openai(key);
  const before = completionRequests().length;
  const first = await client.chat.completions.create({
    model: bot.uuid,
    messages: [
      { role: "assistant", content: "Hi! How can I help?" },
      { role: "user", content: "My order number is 4417" },
      { role: "user", content: "and my name is Ada" },
      { role: "assistant", content: "Thanks Ada" },
      { role: "user", content: "What is the returns window?" },
    ],
  });
  const second = await client.chat.completions.create({
    model: bot.uuid,
    metadata: { session_uuid: first.session_uuid },
    messages: [
      { role: "user", content: "My order number is 4417" },
      { role: "assistant", content: "Noted." },
      { role: "user", content: "What is my order number?" },
    ],
  });
  assert.equal(second.session_uuid, first.session_uuid);
  const [one, two] = completionRequests().slice(before).map((r) => r.messages.slice(1).map((m) => [m.role, m.content]));
  assert.deepEqual(one, [
    ["assistant", "Hi! How can I help?"],
    ["user", "My order number is 4417\nand my name is Ada"],
    ["assistant", "Thanks Ada"],
    ["user", "What is the returns window?"],
  ]);
  assert.deepEqual(two, [
    ["user", "My order number is 4417"],
    ["assistant", "Noted."],
    ["user", "What is my order number?"],
  ], "what the client sends wins over what the session stored");
  assert.equal((await messagesOf(api, { uuid: first.session_uuid })).length, 2);
});

test("openai client: a model failing midway is an error, not a finished answer; failing at once leaves no session", async () => {
  const bot = await llmBot();
  const client = openai(key);
  await assert.rejects(client.chat.completions.create({ model: bot.uuid, messages: [{ role: "user", content: "go [cut]" }] }),
    (err) => err instanceof OpenAI.APIError && err.status === 502 && /stored as message/.test(err.message));
  const stream = await client.chat.completions.create({ model: bot.uuid, stream: true, messages: [{ role: "user", content: "go [cut]" }] });
  let text = "";
  await assert.rejects((async () => {
    for await (const chunk of stream) {
      assert.notEqual(chunk.choices[0]?.finish_reason, "stop", "no finish after the failure");
      text += chunk.choices[0]?.delta?.content ?? "";
    }
  })(), (err) => err instanceof OpenAI.APIError);
  assert.ok(text.length > 0, "what came before the failure was read");
  const sessions = async () => (await api.get(`/chatbot/${bot.uuid}/sessions`)).json.length;
  const had = await sessions();
  assert.equal(had, 2, "the two cut answers are stored, each in its session");
  await assert.rejects(client.chat.completions.create({ model: bot.uuid, messages: [{ role: "user", content: "go [500]" }] }),
    (err) => err instanceof OpenAI.APIError && err.status === 502);
  assert.equal(await sessions(), had, "a call that stored no answer leaves no session");
  // A model slow to fail: the stream has started (its first chunk sent while the model was
  // waited for), so the failure comes as the stream's error, and still leaves no session.
  const late = await client.chat.completions.create({ model: bot.uuid, stream: true, messages: [{ role: "user", content: "go [late] [500]" }] });
  await assert.rejects((async () => {
    for await (const chunk of late) assert.equal(chunk.choices[0]?.delta?.content ?? "", "", "nothing was said");
  })(), (err) => err instanceof OpenAI.APIError);
  await eventually(async () => (await sessions()) === had);
});

test("openai client: temperature and max_tokens reach the model, usage comes as OpenAI sends it, wrong values are 400", async () => {
  const bot = await llmBot();
  const client = openai(key);
  const before = completionRequests().length;
  await client.chat.completions.create({ model: bot.uuid, temperature: 0.9, max_tokens: 7, messages: [{ role: "user", content: "hello" }] });
  const sent = completionRequests().slice(before).at(-1);
  assert.equal(sent.temperature, 0.9);
  assert.equal(sent.max_tokens, 7, "a ceiling below the agent's budget");
  await client.chat.completions.create({ model: bot.uuid, max_completion_tokens: 1_000_000, messages: [{ role: "user", content: "hello" }] });
  assert.ok(completionRequests().at(-1).max_tokens < 1_000_000, "never above the budget");
  assert.equal(completionRequests().at(-1).temperature, 0.2, "the agent's own without one");

  const stream = await client.chat.completions.create({ model: bot.uuid, stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: "hello" }] });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  const last = chunks.at(-1);
  assert.deepEqual(last.choices, [], "usage in a last chunk of its own");
  assert.ok(last.usage.total_tokens > 0);
  assert.equal(chunks.at(-2).choices[0].finish_reason, "stop");
  assert.equal(chunks.filter((c) => c.usage).length, 1);

  for (const [bad, param] of [[{ temperature: 5 }, "temperature"], [{ max_tokens: -5 }, "max_tokens"], [{ top_p: 3 }, "top_p"]]) {
    await assert.rejects(client.chat.completions.create({ model: bot.uuid, messages: [{ role: "user", content: "x" }], ...bad }),
      (err) => err instanceof OpenAI.BadRequestError && err.error?.param === param, param);
  }

  // A failure midway is OpenAI's server error type in the stream as in a 502 body.
  const res = await fetch(`${worker.base}/api/v1/openai/chat/completions`, {
    method: "POST",
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    body: JSON.stringify({ model: bot.uuid, stream: true, messages: [{ role: "user", content: "go [cut]" }] }),
  });
  const failure = (await res.text()).split("\n\n").map((b) => b.replace(/^data: /, "")).filter((d) => d.includes('"error"')).map((d) => JSON.parse(d));
  assert.equal(failure.length, 1);
  assert.equal(failure[0].error.type, "server_error");
  assert.equal(failure[0].error.code, "upstream_error");
});

/** Reads a UI message stream the way the AI SDK's `useChat` does; returns the last message state. */
async function readUi(res) {
  const chunks = parseJsonEventStream({ stream: res.body, schema: uiMessageChunkSchema }).pipeThrough(new TransformStream({
    transform(part, controller) {
      if (!part.success) throw part.error;
      controller.enqueue(part.value);
    },
  }));
  let last;
  for await (const message of readUIMessageStream({ stream: chunks, terminateOnError: true })) last = message;
  return last;
}

test("ai package: the UI message stream carries text, source documents and the finish", async () => {
  const bot = await llmBot();
  const session = await newSession(api, bot);
  const res = await fetch(`${worker.base}/api/v1/session/${session.uuid}/message/stream?format=ui-message-stream`, {
    method: "POST",
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    body: JSON.stringify({ query: "What is the returns window?" }),
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("x-vercel-ai-ui-message-stream"), "v1");
  assert.match(res.headers.get("content-type"), /text\/event-stream/);
  const message = await readUi(res);
  const [m] = await storedMessages(api, session);
  assert.equal(message.id, m.uuid);
  assert.equal(message.role, "assistant");
  const text = message.parts.filter((p) => p.type === "text");
  assert.equal(text.length, 1);
  assert.equal(text[0].text, "You asked: What is the returns window?.");
  assert.equal(text[0].state, "done");
  const sources = message.parts.filter((p) => p.type === "source-document");
  assert.deepEqual(sources.map((s) => [s.sourceId, s.title]), [["1", "What is the returns window?"]]);
  assert.equal(message.metadata.usage.total_tokens, 47);
  assert.equal(m.response, text[0].text);
});

test("ai package: useChat's own transport sends its conversation and reads the answer", async () => {
  const bot = await llmBot();
  const session = await newSession(api, bot);
  const transport = new DefaultChatTransport({
    api: `${worker.base}/api/v1/session/${session.uuid}/message/stream?format=ui-message-stream`,
    headers: { Authorization: `Bearer ${key}` },
  });
  const stream = await transport.sendMessages({
    chatId: session.uuid,
    trigger: "submit-message",
    messageId: undefined,
    abortSignal: undefined,
    messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "What is the returns window?" }] }],
  });
  let message;
  for await (const m of readUIMessageStream({ stream, terminateOnError: true })) message = m;
  assert.equal(message.parts.find((p) => p.type === "text").text, "You asked: What is the returns window?.");
  const [m] = await storedMessages(api, session);
  assert.equal(m.query, "What is the returns window?");
  assert.equal(message.id, m.uuid);
});

test("ai package: over the chatbot's rate, the transport's error is the chatbot's own message", async () => {
  const bot = await llmBot({ rate_limit: [1, 360], rate_limit_message: "Slow down please." });
  const session = await newSession(api, bot);
  const transport = new DefaultChatTransport({
    api: `${worker.base}/api/v1/session/${session.uuid}/message/stream?format=ui-message-stream`,
    headers: { Authorization: `Bearer ${key}` },
  });
  const send = (text) => transport.sendMessages({
    chatId: session.uuid, trigger: "submit-message", messageId: undefined, abortSignal: undefined,
    messages: [{ id: text, role: "user", parts: [{ type: "text", text }] }],
  });
  for await (const _ of readUIMessageStream({ stream: await send("first"), terminateOnError: true })) { /* read to the end */ }
  await assert.rejects(send("second"), (err) => err.message === "Slow down please.");
});

test("ai package: a failure midway arrives as the stream's error; an unknown format is 400", async () => {
  const bot = await llmBot();
  const session = await newSession(api, bot);
  const res = await fetch(`${worker.base}/api/v1/session/${session.uuid}/message/stream?format=ui-message-stream`, {
    method: "POST",
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    body: JSON.stringify({ query: "cut me off [cut]" }),
  });
  await assert.rejects(readUi(res), /stopped answering midway/);
  const [m] = await storedMessages(api, session);
  assert.equal(m.finish_reason, "error");
  const bad = await api.post(`/session/${session.uuid}/message/stream?format=xml`, { body: { query: "hi" } });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.error.field, "format");
  await eventually(async () => (await messagesOf(api, session)).length === 1);
});
