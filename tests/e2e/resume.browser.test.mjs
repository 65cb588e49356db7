// The widget over the session's own channel, in headless Chromium: a person's replies and the
// live-chat announcements reach a visitor who has the chat open without the widget polling,
// and a page reloaded in the middle of an answer shows the answer continuing to its end.
// Answers come from the local model server ("[long]": 200 words, 25 ms apart).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startModelAccount, startServer, shopChatbot } from "./suite.mjs";
import { launchBrowser, openPage } from "./browser.mjs";

let worker, owner, ownerKey, browser, site;

before(async () => {
  [{ worker, api: owner, key: ownerKey }, browser] = await Promise.all([startModelAccount(), launchBrowser()]);
  site = await startServer(async (req, res) => {
    const bot = new URL(req.url, "http://x").searchParams.get("bot") ?? "";
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
    res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Northwind Outfitters</title></head>
<body><h1>Northwind Outfitters</h1><script src="${worker.base}/widget.js" data-chatbot="${bot}" async></script></body></html>`);
  });
});
after(async () => { await browser?.close(); });

/** A public chatbot; its agent answers through the model server. */
const modelChatbot = () => shopChatbot(owner, { visibility: "public" });

const frameOf = (page) => page.frameLocator("iframe[title=Chat]");

async function openChat(page, bot) {
  await page.goto(`${site.base}/?bot=${bot.uuid}`);
  await page.getByRole("button", { name: "Chat with us" }).click();
  return frameOf(page);
}

async function send(frame, question) {
  await frame.getByLabel("Your message").fill(question);
  await frame.getByLabel("Your message").press("Enter");
}

/** Opens the chat page with the owner's key, picks `bot` and sends `question`. */
async function askOnChatPage(page, bot, question) {
  await page.goto(`${worker.base}/`);
  await page.getByLabel("Your API key").fill(ownerKey);
  await page.getByRole("button", { name: "Use this key" }).click();
  await page.getByLabel("Pick a chatbot").locator(`option[value="${bot.uuid}"]`).waitFor({ state: "attached" });
  await page.getByLabel("Pick a chatbot").selectOption(bot.uuid);
  await page.getByLabel("Your message").fill(question);
  await page.getByLabel("Your message").press("Enter");
}

const messagesReads = (s) => s.requests.filter((r) => /\/session\/[^/]+\/messages$/.test(new URL(r.url).pathname));

test("live chat reaches the open widget over the session's event stream, without polling", async (t) => {
  const bot = await modelChatbot();
  const s = await openPage(browser, t.name);
  const { page } = s;
  try {
    const frame = await openChat(page, bot);
    await send(frame, "Hello there");
    await frame.locator(".msg-bot[aria-busy=false]", { hasText: "You asked: Hello there." }).waitFor();
    const [session] = (await owner.get(`/chatbot/${bot.uuid}/sessions`)).json;
    const readsBefore = messagesReads(s).length;

    // The person takes over and writes first: the visitor sends nothing and still sees both.
    assert.equal((await owner.post(`/session/${session.uuid}/live-chat/start`)).status, 200);
    await frame.locator(".msg-announcement").waitFor({ timeout: 10_000 });
    const reply = await owner.post(`/session/${session.uuid}/live-chat/message`, { body: { text: "Hi, I am Sam. How can I help?" } });
    assert.equal(reply.status, 200, reply.text);
    await frame.locator(".msg-operator", { hasText: "Hi, I am Sam." }).waitFor({ timeout: 10_000 });
    await s.shot("operator replied");

    assert.equal(messagesReads(s).length, readsBefore, "no message list was polled meanwhile");
    const listens = s.requests.filter((r) => new URL(r.url).pathname === `/api/v1/session/${session.uuid}/events`);
    assert.ok(listens.length >= 1, "the widget listens on the session's event stream");
    assert.deepEqual(s.errors, []);
  } finally {
    await s.close();
  }
});

test("a reload in the middle of an answer shows the answer continuing to its end", async (t) => {
  const bot = await modelChatbot();
  const s = await openPage(browser, t.name);
  const { page } = s;
  try {
    let frame = await openChat(page, bot);
    await send(frame, "Tell me everything [long]");
    await frame.locator(".msg-bot", { hasText: "word5 " }).waitFor();
    await s.shot("answer under way");
    await page.reload();
    frame = await openChat(page, bot);
    // The question and the answer so far come back, and the answer goes on.
    await frame.locator(".msg-user", { hasText: "Tell me everything [long]" }).waitFor();
    const answer = frame.locator(".msg-bot").last();
    await answer.locator(".msg-text", { hasText: "word199" }).waitFor({ timeout: 20_000 });
    await frame.locator(".msg-bot[aria-busy=false]").last().waitFor();
    await s.shot("answer finished after the reload");
    const [session] = (await owner.get(`/chatbot/${bot.uuid}/sessions`)).json;
    const [stored] = (await owner.get(`/session/${session.uuid}/messages`)).json;
    assert.equal(stored.finish_reason, "stop");
    assert.equal(await answer.locator(".msg-text").textContent(), stored.response, "shown once, whole");
    assert.equal(await frame.locator(".msg-bot").count(), 1);
    assert.deepEqual(s.errors, []);
  } finally {
    await s.close();
  }
});

test("the chat page, reloaded in the middle of an answer, comes back to it and shows it continuing", async (t) => {
  const bot = await shopChatbot(owner, { name: "Page bot" });
  const s = await openPage(browser, t.name);
  const { page } = s;
  try {
    await askOnChatPage(page, bot, "[long] tell me everything");
    await page.locator(".msg-bot", { hasText: "word5 " }).waitFor();
    await s.shot("answer under way");
    await page.reload();
    // The key, the chatbot and the session come back; the answer goes on to its end.
    await page.locator(".msg-user", { hasText: "[long] tell me everything" }).waitFor();
    const answer = page.locator(".msg-bot").last();
    // Meanwhile Enter sends nothing (the session answers one message at a time) and the
    // question stays in the box.
    await answer.locator(".stop").waitFor();
    await page.getByLabel("Your message").fill("and then?");
    await page.getByLabel("Your message").press("Enter");
    assert.equal(await page.getByLabel("Your message").inputValue(), "and then?");
    await answer.locator(".msg-text", { hasText: "word199" }).waitFor({ timeout: 20_000 });
    await page.locator(".msg-bot[aria-busy=false]").last().waitFor();
    await s.shot("answer finished after the reload");
    const [session] = (await owner.get(`/chatbot/${bot.uuid}/sessions`)).json;
    const [stored] = (await owner.get(`/session/${session.uuid}/messages`)).json;
    assert.equal(stored.finish_reason, "stop");
    assert.equal(await answer.locator(".msg-text").textContent(), stored.response, "shown once, whole");
    assert.equal(await page.locator(".msg-bot").count(), 1);
    assert.equal(await page.locator(".msg-user").count(), 1, "nothing was sent meanwhile");
    assert.equal(await answer.locator(".stop").count(), 0, "no Stop once the answer ended");
    assert.deepEqual(s.errors, []);
  } finally {
    await s.close();
  }
});

test("Stop answering ends an answer where it is, in the widget and on the chat page", async (t) => {
  const bot = await modelChatbot();
  const s = await openPage(browser, t.name);
  const { page } = s;
  const storedAnswer = async (uuid) => {
    const [session] = (await owner.get(`/chatbot/${uuid}/sessions`)).json;
    return (await owner.get(`/session/${session.uuid}/messages`)).json.at(-1);
  };
  try {
    const frame = await openChat(page, bot);
    // Opened from its button, the chat takes what the visitor types.
    await frame.locator("#question:not([disabled])").waitFor();
    await page.keyboard.type("Tell me everything [long]");
    assert.equal(await frame.getByLabel("Your message").inputValue(), "Tell me everything [long]");
    await page.keyboard.press("Enter");
    const answer = frame.locator(".msg-bot").last();
    await answer.locator(".msg-text", { hasText: "word5 " }).waitFor();
    await answer.getByRole("button", { name: "Stop answering" }).click();
    await frame.locator(".msg-bot[aria-busy=false]").last().waitFor();
    await s.shot("widget answer stopped");
    const stopped = await storedAnswer(bot.uuid);
    assert.equal(stopped.finish_reason, "stopped");
    assert.ok(!stopped.response.includes("word199"), stopped.response);
    assert.equal(await answer.locator(".msg-text").textContent(), stopped.response);
    await frame.locator("#send:not([disabled])").waitFor();

    const pageBot = await shopChatbot(owner, { name: "Stoppable" });
    await askOnChatPage(page, pageBot, "[long] tell me everything");
    const onPage = page.locator(".msg-bot").last();
    await onPage.locator(".msg-text", { hasText: "word5 " }).waitFor();
    await onPage.getByRole("button", { name: "Stop answering" }).click();
    await page.locator("#chat-status", { hasText: "Stopped." }).waitFor();
    const stoppedOnPage = await storedAnswer(pageBot.uuid);
    assert.equal(stoppedOnPage.finish_reason, "stopped");
    assert.equal(await onPage.locator(".msg-text").textContent(), stoppedOnPage.response);
    assert.deepEqual(s.errors, []);
  } finally {
    await s.close();
  }
});

