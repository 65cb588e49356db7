// Operating a deployed instance: rotating the visitor-token secret must not cut off a visitor in
// the middle of a conversation (docs/operations.md).
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { startWorker, client, newChatbot } from "./suite.mjs";

const oldSecret = randomBytes(32).toString("hex");
const worker = await startWorker({ vars: { WIDGET_TOKEN_SECRET: oldSecret } });

const bearer = (token) => ({ Authorization: `Bearer ${token}` });

test("rotating WIDGET_TOKEN_SECRET keeps visitors in their conversations while the old one is kept as previous", async () => {
  const { key } = await worker.newAccount();
  const api = client(worker, key);
  const bot = await newChatbot(api, { name: "Shop", visibility: "public" });
  await api.post(`/chatbot/${bot.uuid}/data-source/qa`, { body: { question: "Do you ship abroad?", answer: "Yes, to 40 countries." } });
  const minted = await worker.request("POST", `/api/v1/widget/${bot.uuid}/token`);
  assert.equal(minted.status, 200, minted.text);
  const oldToken = minted.json.token;
  const session = await worker.request("POST", `/api/v1/chatbot/${bot.uuid}/session/create`, { key: oldToken, body: {} });
  assert.equal(session.status, 200, session.text);

  // Rotate: the new secret signs, the old one is still accepted.
  worker.vars.WIDGET_TOKEN_SECRET = randomBytes(32).toString("hex");
  worker.vars.WIDGET_TOKEN_SECRET_PREVIOUS = oldSecret;
  await worker.restart();
  const answer = await worker.request("POST", `/api/v1/session/${session.json.uuid}/message/stream`, {
    key: oldToken,
    body: { query: "Do you ship abroad?" },
  });
  assert.equal(answer.status, 200, answer.text);
  assert.match(answer.text, /40 countries/);
  const renewed = await worker.request("POST", `/api/v1/widget/${bot.uuid}/token`, { body: { token: oldToken } });
  assert.equal(renewed.status, 200, renewed.text);
  const newToken = renewed.json.token;
  assert.notEqual(newToken, oldToken);
  const history = await worker.request("GET", `/api/v1/session/${session.json.uuid}/messages`, { key: newToken });
  assert.equal(history.status, 200, history.text);
  assert.equal(history.json.length, 1, "the renewed token is the same visitor");

  // Once the previous secret is dropped, only tokens signed with the new one work.
  delete worker.vars.WIDGET_TOKEN_SECRET_PREVIOUS;
  await worker.restart();
  const refused = await worker.request("GET", `/api/v1/session/${session.json.uuid}/messages`, { key: oldToken });
  assert.equal(refused.status, 401);
  const still = await worker.request("GET", `/api/v1/session/${session.json.uuid}/messages`, { key: newToken });
  assert.equal(still.status, 200, still.text);
});
