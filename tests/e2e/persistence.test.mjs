import { test } from "node:test";
import assert from "node:assert/strict";
import { startAccount, newChatbot, client } from "./suite.mjs";

// The `wrangler dev` command itself, as `make dev` runs it.
test("state survives a restart of wrangler dev", async () => {
  const { worker, account: acct, api } = await startAccount({ cli: true });
  const bot = await newChatbot(api, { name: "Durable", rate_limit: [7, 70] });
  const agents = (await api.get(`/chatbot/${bot.uuid}/agents`)).json;

  await worker.restart();

  const again = client(worker, acct.key);
  assert.deepEqual((await again.get(`/chatbot/${bot.uuid}`)).json, bot);
  assert.deepEqual((await again.get(`/chatbot/${bot.uuid}/agents`)).json, agents);
});
