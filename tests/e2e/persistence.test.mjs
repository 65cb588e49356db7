import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker, client } from "./harness.mjs";

let worker;
after(async () => { await worker?.dispose(); });

test("state survives a restart of wrangler dev", async () => {
  worker = await startWorker();
  const acct = await worker.newAccount();
  const api = client(worker, acct.key);
  const bot = (await api.post("/chatbot/create", { body: { name: "Durable", rate_limit: [7, 70] } })).json;
  const agents = (await api.get(`/chatbot/${bot.uuid}/agents`)).json;

  await worker.restart();

  const again = client(worker, acct.key);
  assert.deepEqual((await again.get(`/chatbot/${bot.uuid}`)).json, bot);
  assert.deepEqual((await again.get(`/chatbot/${bot.uuid}/agents`)).json, agents);
});
