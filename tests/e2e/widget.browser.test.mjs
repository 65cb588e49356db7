// The embeddable widget in headless Chromium, on pages served from other origins than the
// Worker's: a visitor chats without any account key; hybrid chatbots work only on their
// allowed sites, private ones nowhere; the rate limit reaches the visitor.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startAccount, startServer, shopChatbot } from "./suite.mjs";
import { launchBrowser, openPage, originsOf, tabTo, PHONE } from "./browser.mjs";

let worker, owner, browser, siteA, siteB;

/** A site's page: `/script?bot=` embeds with the script tag, `/iframe?bot=` with an iframe. */
function site() {
  return startServer(async (req, res) => {
    const url = new URL(req.url, "http://x");
    const bot = url.searchParams.get("bot") ?? "";
    const embed = {
      "/script": `<script src="${worker.base}/widget.js" data-chatbot="${bot}" async></script>`,
      "/iframe": `<iframe src="${worker.base}/widget?chatbot=${bot}" title="Chat with us" width="380" height="560" style="border:1px solid #ccc"></iframe>`,
    }[url.pathname];
    if (!embed) { res.writeHead(404); return res.end(); }
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
    res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Northwind Outfitters</title></head><body><h1>Northwind Outfitters</h1><p>Tents, boots and everything in between. <a href="/about">About us</a></p>${embed}</body></html>`);
  });
}

before(async () => {
  [{ worker, api: owner }, browser] = await Promise.all([startAccount({ accountName: "owner" }), launchBrowser()]);
  [siteA, siteB] = await Promise.all([site(), site()]);
});
after(async () => { await browser?.close(); });

const chatbot = (meta) => shopChatbot(owner, { show_citations: true, ...meta });

/** Only the embedding site and the Worker were asked for anything, and never with an API key. */
function assertVisitorTraffic(session, siteBase) {
  assert.deepEqual(originsOf(session.requests), [siteBase, worker.base].sort());
  for (const r of session.requests) {
    const auth = r.headers.authorization;
    assert.ok(auth === undefined || auth.startsWith("Bearer ecw_"), `${r.url} sent ${auth}`);
  }
  assert.deepEqual(session.errors, []);
}

const frameOf = (page) => page.frameLocator("iframe[title=Chat]");

async function ask(frame, question) {
  const before = await frame.locator(".msg-bot, .msg-note").count();
  await frame.getByLabel("Your message").fill(question);
  await frame.getByLabel("Your message").press("Enter");
  await frame.locator(".msg-bot[aria-busy=false], .msg-note").nth(before).waitFor();
}

test("a visitor chats with a public chatbot through the script tag on another site", async (t) => {
  const bot = await chatbot({ visibility: "public" });
  const s = await openPage(browser, t.name);
  const { page } = s;
  try {
    await page.goto(`${siteA.base}/script?bot=${bot.uuid}`);
    const button = page.getByRole("button", { name: "Chat with us" });
    await button.waitFor();
    assert.equal(await page.locator("iframe").count(), 0, "nothing loads until the visitor asks");
    await s.shot("site with chat button");

    // Keyboard: reach the button, open the chat, type, send.
    await tabTo(page, "button.edgechat-button");
    await page.keyboard.press("Enter");
    assert.equal(await button.getAttribute("aria-expanded"), "true");
    const frame = frameOf(page);
    await frame.getByRole("heading", { name: "Northwind help" }).waitFor();
    await frame.locator("#question:not([disabled])").waitFor();
    await s.shot("chat open");

    await ask(frame, "Do you ship abroad?");
    const answer = frame.locator(".msg-bot").first();
    assert.match(await answer.locator(".msg-text").textContent(), /40 countries/);
    await answer.locator(".cite-marker").first().click();
    const panel = answer.locator(".cite-panel:not([hidden])");
    await panel.waitFor();
    assert.match(await panel.textContent(), /within 5 working days/);
    await s.shot("answer with citation");

    // Escape closes the chat and gives focus back to the button.
    await frame.getByLabel("Your message").focus();
    await page.keyboard.press("Escape");
    await page.locator("iframe[title=Chat]").waitFor({ state: "hidden" });
    assert.equal(await button.getAttribute("aria-expanded"), "false");
    assert.equal(await page.evaluate(() => document.activeElement?.className), "edgechat-button");
    await s.shot("chat closed");

    // Back on the site later in the same tab: the conversation is still there.
    await page.reload();
    await page.getByRole("button", { name: "Chat with us" }).click();
    await frameOf(page).locator(".msg-bot").first().waitFor();
    assert.match(await frameOf(page).locator(".msg-user").first().textContent(), /Do you ship abroad\?/);
    await s.shot("conversation restored");

    assertVisitorTraffic(s, siteA.base);
    const tokenCalls = s.requests.filter((r) => r.url.includes("/api/v1/widget/"));
    assert.equal(tokenCalls.length, 2, "one token per page load");
    // The owner sees the visitor's conversation.
    const [session] = (await owner.get(`/chatbot/${bot.uuid}/sessions`)).json;
    const [m] = (await owner.get(`/session/${session.uuid}/messages`)).json;
    assert.equal(m.query, "Do you ship abroad?");
  } finally {
    await s.close();
  }
});

test("on a site of another name, where the browser keeps the chat's frame from storage, a reload keeps the conversation", async (t) => {
  const bot = await chatbot({ visibility: "public" });
  const s = await openPage(browser, t.name);
  const { page } = s;
  const shop = `http://shop.test:${new URL(siteA.base).port}`;
  try {
    await page.goto(`${shop}/script?bot=${bot.uuid}`);
    await page.getByRole("button", { name: "Chat with us" }).click();
    let frame = frameOf(page);
    await frame.locator("#question:not([disabled])").waitFor();
    const frameStorage = await page.frames().find((f) => f.url().startsWith(worker.base)).evaluate(() => {
      try { return sessionStorage.length >= 0; } catch { return false; }
    });
    assert.equal(frameStorage, false, "this browser keeps a frame on another site from storage");
    await ask(frame, "Do you ship abroad?");
    await frame.locator(".msg-bot", { hasText: "40 countries" }).waitFor();

    await page.reload();
    await page.getByRole("button", { name: "Chat with us" }).click();
    frame = frameOf(page);
    await frame.locator(".msg-bot", { hasText: "40 countries" }).waitFor();
    assert.match(await frame.locator(".msg-user").first().textContent(), /Do you ship abroad\?/);
    await ask(frame, "And to Norway?");
    await s.shot("conversation kept across a reload on another site");
    const sessions = (await owner.get(`/chatbot/${bot.uuid}/sessions`)).json;
    assert.equal(sessions.length, 1, "one visitor, one session");
    assert.equal((await owner.get(`/session/${sessions[0].uuid}/messages`)).json.length, 2);
    assert.deepEqual(s.errors, []);
  } finally {
    await s.close();
  }
});

test("a hybrid chatbot answers on its allowed site only, and a private one nowhere", async (t) => {
  const hybrid = await chatbot({ visibility: "hybrid", allowed_origins: [siteA.base] });
  const closed = await chatbot({ visibility: "private" });
  const s = await openPage(browser, t.name);
  const { page } = s;
  try {
    await page.goto(`${siteA.base}/script?bot=${hybrid.uuid}`);
    await page.getByRole("button", { name: "Chat with us" }).click();
    await ask(frameOf(page), "Do you ship abroad?");
    assert.match(await frameOf(page).locator(".msg-bot").first().textContent(), /40 countries/);
    await s.shot("allowed site answered");

    await page.goto(`${siteB.base}/script?bot=${hybrid.uuid}`);
    await page.getByRole("button", { name: "Chat with us" }).click();
    const refused = frameOf(page).locator("#notice.error");
    await refused.waitFor();
    assert.match(await refused.textContent(), new RegExp(`not available here.*does not take visitors from ${siteB.base.replace(/[.]/g, "\\.")}`));
    assert.equal(await frameOf(page).locator("#question").isDisabled(), true);
    await s.shot("other site refused");

    await page.goto(`${siteA.base}/script?bot=${closed.uuid}`);
    await page.getByRole("button", { name: "Chat with us" }).click();
    // To visitors a private chatbot does not exist.
    await frameOf(page).locator("#notice.error", { hasText: "not available here. No chatbot with that uuid exists." }).waitFor();
    await s.shot("private chatbot refused");

    // The iframe embed: the same rules, from the frame's parent.
    await page.goto(`${siteA.base}/iframe?bot=${hybrid.uuid}`);
    const framed = page.frameLocator("iframe[title='Chat with us']");
    await framed.getByRole("heading", { name: "Northwind help" }).waitFor();
    await ask(framed, "Do you ship abroad?");
    assert.match(await framed.locator(".msg-bot").first().textContent(), /40 countries/);
    await s.shot("iframe on allowed site");
    await page.goto(`${siteB.base}/iframe?bot=${hybrid.uuid}`);
    await page.frameLocator("iframe[title='Chat with us']").locator("#notice.error").waitFor();
    await s.shot("iframe on other site refused");

    // Opened on its own, outside any site, a hybrid chatbot's widget page refuses too.
    await page.goto(`${worker.base}/widget?chatbot=${hybrid.uuid}`);
    await page.locator("#notice.error", { hasText: "owner's sites" }).waitFor();
    await s.shot("widget page alone refused");

    assert.deepEqual(originsOf(s.requests), [siteA.base, siteB.base, worker.base].sort());
    assert.ok(s.requests.every((r) => !r.headers.authorization?.startsWith("Bearer ec_")));
  } finally {
    await s.close();
  }
});

test("a conversation outlasts its chatbot being closed to visitors for a while", async (t) => {
  const bot = await chatbot({ visibility: "public" });
  const s = await openPage(browser, t.name);
  const { page } = s;
  try {
    await page.goto(`${siteA.base}/iframe?bot=${bot.uuid}`);
    const frame = page.frameLocator("iframe[title='Chat with us']");
    await frame.locator("#question:not([disabled])").waitFor();
    await ask(frame, "Do you ship abroad?");
    assert.match(await frame.locator(".msg-bot").first().textContent(), /40 countries/);

    await owner.post(`/chatbot/${bot.uuid}/update`, { body: { visibility: "private" } });
    await ask(frame, "Hello?");
    await frame.locator(".msg-note", { hasText: "No chatbot with that uuid exists." }).waitFor();

    await owner.post(`/chatbot/${bot.uuid}/update`, { body: { visibility: "public" } });
    await page.reload();
    await frame.locator("#question:not([disabled])").waitFor();
    // The same session, read back: the first exchange is still there.
    await frame.locator(".msg-bot", { hasText: "40 countries" }).waitFor();
    const sessions = (await owner.get(`/chatbot/${bot.uuid}/sessions`)).json;
    assert.equal(sessions.length, 1, JSON.stringify(sessions));
    await s.shot("conversation back after the chatbot reopened");
    assert.deepEqual(originsOf(s.requests), [siteA.base, worker.base].sort());
  } finally {
    await s.close();
  }
});

test("the visitor sees the chatbot's rate-limit message", async (t) => {
  const message = "We are busy right now, please come back in a few minutes.";
  const bot = await chatbot({ visibility: "public", rate_limit: [1, 360], rate_limit_message: message });
  const s = await openPage(browser, t.name);
  const { page } = s;
  try {
    await page.goto(`${siteA.base}/script?bot=${bot.uuid}`);
    await page.getByRole("button", { name: "Chat with us" }).click();
    const frame = frameOf(page);
    await ask(frame, "Do you ship abroad?");
    assert.match(await frame.locator(".msg-bot").first().textContent(), /40 countries/);
    await ask(frame, "And to Canada?");
    const note = frame.locator(".msg-note.msg-error");
    assert.equal(await note.textContent(), message);
    assert.equal(await frame.locator("#notice").textContent(), message);
    assert.equal(await frame.locator("#notice").getAttribute("role"), "alert");
    assert.equal(await frame.locator(".msg-bot").count(), 1);
    await s.shot("rate limited");
    assertVisitorTraffic(s, siteA.base);
  } finally {
    await s.close();
  }
});

test("on a phone, the widget fills the screen and closes back to the site", async (t) => {
  const bot = await chatbot({ visibility: "public" });
  const s = await openPage(browser, t.name, { viewport: PHONE, isMobile: true });
  const { page } = s;
  try {
    await page.goto(`${siteA.base}/script?bot=${bot.uuid}`);
    await s.shot("site");
    await page.getByRole("button", { name: "Chat with us" }).tap();
    const frame = frameOf(page);
    await frame.getByRole("heading", { name: "Northwind help" }).waitFor();
    const box = await page.locator("iframe[title=Chat]").boundingBox();
    assert.deepEqual([box.x, box.y, box.width, box.height], [0, 0, PHONE.width, PHONE.height]);
    await ask(frame, "Do you ship abroad?");
    assert.match(await frame.locator(".msg-bot").first().textContent(), /40 countries/);
    const width = await frame.locator("body").evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= PHONE.width, `the chat scrolls sideways: ${width}px`);
    await s.shot("chat on a phone");
    // The keyboard stays in the chat: the site behind it cannot be reached.
    await frame.getByLabel("Your message").focus();
    for (let i = 0; i < 12; i++) {
      await page.keyboard.press("Tab");
      const focused = await page.evaluate(() => document.activeElement?.textContent?.trim() ?? "");
      assert.notEqual(focused, "About us", `Tab ${i + 1} left the chat for the site`);
    }
    await frame.getByRole("button", { name: "Close" }).tap();
    await page.locator("iframe[title=Chat]").waitFor({ state: "hidden" });
    await page.getByRole("button", { name: "Chat with us" }).waitFor();
    await page.getByRole("link", { name: "About us" }).focus();
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), "About us", "the site is usable again");
    await s.shot("closed");
    assertVisitorTraffic(s, siteA.base);
  } finally {
    await s.close();
  }
});

test("when a person takes over the chat, their replies reach the visitor", async (t) => {
  const bot = await chatbot({ visibility: "public" });
  const s = await openPage(browser, t.name);
  const { page } = s;
  try {
    await page.goto(`${siteA.base}/script?bot=${bot.uuid}`);
    await page.getByRole("button", { name: "Chat with us" }).click();
    const frame = frameOf(page);
    await ask(frame, "Do you ship abroad?");
    const [session] = (await owner.get(`/chatbot/${bot.uuid}/sessions`)).json;
    assert.equal((await owner.post(`/session/${session.uuid}/live-chat/start`)).status, 200);

    await ask(frame, "Can I change my delivery address?");
    await frame.locator(".msg-note", { hasText: "A person is answering" }).waitFor();
    await s.shot("passed to a person");
    const reply = await owner.post(`/session/${session.uuid}/live-chat/message`, { body: { text: "Hi, I am Sam. Yes, write the new address here." } });
    assert.equal(reply.status, 200, reply.text);
    await frame.locator(".msg-operator", { hasText: "Hi, I am Sam." }).waitFor({ timeout: 20_000 });
    await s.shot("operator replied");
    const stored = (await owner.get(`/session/${session.uuid}/messages`)).json;
    assert.deepEqual(stored.map((m) => m.kind), ["answer", "announcement", "user", "operator"]);
    assertVisitorTraffic(s, siteA.base);
  } finally {
    await s.close();
  }
});
