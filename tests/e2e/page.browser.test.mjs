// The chat page in headless Chromium: what a person does with it, step by step, with a
// screenshot of each step; and that the page loads nothing from anywhere but the Worker.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker, startHelpSite, startModelServer, modelVars, client, newChatbot } from "./suite.mjs";
import { launchBrowser, openPage, originsOf, tabTo, focusOutline, PHONE } from "./browser.mjs";

let worker, modelWorker, model, site, browser;

before(async () => {
  // Plays a help site; pages take a moment to answer, as real ones do.
  site = await startHelpSite({ delayMs: 1500 });
  model = await startModelServer();
  [worker, modelWorker, browser] = await Promise.all([
    startWorker(),
    startWorker({ vars: modelVars(model) }),
    launchBrowser(),
  ]);
});
after(async () => { await browser?.close(); });

/** Every request went to the Worker under test. */
function assertOnlyWorker(session, w) {
  assert.deepEqual(originsOf(session.requests), [w.base], "the page loads nothing from elsewhere");
  assert.deepEqual(session.errors, [], "no uncaught errors in the page");
}

async function useKey(page, key) {
  await page.getByLabel("Your API key").fill(key);
  await page.getByRole("button", { name: "Use this key" }).click();
}

test("a person sets up a chatbot, adds knowledge and chats in the page", async (t) => {
  const { key } = await worker.newAccount("page");
  const s = await openPage(browser, t.name);
  const { page } = s;
  try {
    await page.goto(`${worker.base}/`);
    await assert.doesNotReject(page.getByRole("heading", { name: "edgechat", level: 1 }).waitFor());
    await s.shot("open");

    // A wrong key is refused with the API's own words.
    await useKey(page, "ec_not-a-real-key");
    await page.getByText("The API key is not valid").waitFor();
    assert.ok(await page.locator("#bots").isHidden());
    await s.shot("wrong key");

    await useKey(page, key);
    await page.getByText("Key accepted: 0 chatbots on this account.").waitFor();
    await s.shot("key accepted");

    await page.getByLabel("Or create one, named").fill("Northwind help");
    await page.getByRole("button", { name: "Create chatbot" }).click();
    await page.getByText("Created “Northwind help”.").waitFor();
    assert.equal(await page.getByLabel("Name", { exact: true }).inputValue(), "Northwind help");
    assert.equal(await page.getByLabel("Pick a chatbot").locator("option:checked").textContent(), "Northwind help");
    await s.shot("chatbot created");

    // Settings: an out-of-range value is marked on its field with the API's message.
    await page.getByLabel("Messages", { exact: true }).fill("500");
    await page.getByRole("button", { name: "Save settings" }).click();
    const countField = page.getByLabel("Messages", { exact: true });
    await page.locator("#set-rate-count[aria-invalid=true]").waitFor();
    assert.match(await page.locator("#settings-status").textContent(), /rate_limit/);
    assert.equal(await countField.evaluate((e) => e === document.activeElement), true, "focus moves to the field at fault");
    await s.shot("settings refused");

    await countField.fill("3");
    await page.getByLabel("per seconds").fill("360");
    await page.getByLabel("Message shown over the limit").fill("Easy there! Try again in a few minutes.");
    await page.getByLabel("Show citations in answers").check();
    await page.getByLabel("Who may chat").selectOption("public");
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.getByText("Settings saved.").waitFor();
    assert.equal(await page.locator("#set-rate-count[aria-invalid]").count(), 0);
    const api = client(worker, key);
    const [stored] = (await api.get("/chatbots")).json;
    assert.deepEqual(stored.meta.rate_limit, [3, 360]);
    assert.equal(stored.meta.visibility, "public");
    assert.equal(stored.meta.show_citations, true);
    assert.match(await page.getByLabel("One script tag, anywhere in the page").inputValue(),
      new RegExp(`<script src="${worker.base}/widget.js" data-chatbot="${stored.uuid}" async></script>`));
    await s.shot("settings saved");

    // Knowledge: a Q&A pair, a web page and a file, each watched until it is ready.
    await page.getByLabel("Question", { exact: true }).fill("Do you have a physical shop?");
    await page.getByLabel("Answer", { exact: true }).fill("Yes, our only shop is at 12 Canal Street, Leeds, open 10am to 6pm.");
    await page.getByRole("button", { name: "Add Q&A pair" }).click();
    const sources = page.locator("#source-list");
    await sources.getByText("Do you have a physical shop?").waitFor();
    await sources.locator("li[data-status=success]").first().waitFor();
    await s.shot("qa added");

    await page.getByText("Add a web page").click();
    await page.getByLabel("Page address").fill(`${site.base}/returns`);
    await page.getByRole("button", { name: "Add web page" }).click();
    const pageItem = sources.locator("li").nth(1);
    // The answer to the create call is shown at once; the page is read after it.
    await pageItem.locator(".source-status", { hasText: /Waiting to be read|Reading…/ }).waitFor();
    await s.shot("web page being read");
    await pageItem.locator(".source-status", { hasText: "Ready" }).waitFor({ timeout: 30_000 });
    assert.equal(await pageItem.locator(".source-title").textContent(), "Returns and refunds | Northwind Outfitters");
    await s.shot("web page ready");

    await page.getByText("Upload a file").click();
    await page.getByLabel(/^File/).setInputFiles({ name: "notes.exe", mimeType: "application/octet-stream", buffer: Buffer.from([0x4d, 0x5a, 0x90, 0x00, 0x03]) });
    await page.getByRole("button", { name: "Upload file" }).click();
    await page.locator("#sources-status.error").waitFor();
    assert.match(await page.locator("#sources-status").textContent(), /\.txt|type/i);
    await s.shot("unsupported file refused");
    await page.getByLabel(/^File/).setInputFiles({
      name: "gift-cards.md", mimeType: "text/markdown",
      buffer: Buffer.from("# Gift cards\n\nGift cards never expire and can be spent online or in the Leeds shop.\n"),
    });
    await page.getByRole("button", { name: "Upload file" }).click();
    const fileItem = sources.locator("li", { hasText: "gift-cards.md" });
    await fileItem.locator(".source-status", { hasText: "Ready" }).waitFor({ timeout: 30_000 });
    assert.equal(await sources.locator("li").count(), 3);
    await s.shot("file ready");

    // Chat: the answer streams in, citations open the cited passage.
    await page.getByLabel("Your message").fill("when will my refund show up on my statement?");
    await page.getByLabel("Your message").press("Enter");
    const first = page.locator(".msg-bot").first();
    await first.and(page.locator("[aria-busy=false]")).waitFor();
    assert.match(await first.locator(".msg-text").textContent(), /five to seven working days/);
    const marker = first.locator(".cite-marker").first();
    assert.equal(await marker.getAttribute("aria-expanded"), "false");
    await marker.click();
    assert.equal(await marker.getAttribute("aria-expanded"), "true");
    const panel = page.locator(`#${await marker.getAttribute("aria-controls")}`);
    await panel.waitFor();
    assert.match(await panel.textContent(), /working days/);
    assert.match(await panel.locator("a.cite-link").getAttribute("href"), /\/returns$/, "the cited page opens from its passage");
    assert.match(await first.locator(".cite-toggle").first().textContent(), /Returns and refunds/);
    await s.shot("answer with citation open");

    await page.getByLabel("Your message").fill("do gift cards expire?");
    await page.getByRole("button", { name: "Send" }).click();
    const second = page.locator(".msg-bot").nth(1);
    await second.and(page.locator("[aria-busy=false]")).waitFor();
    assert.match(await second.textContent(), /never expire/);
    await page.getByLabel("Your message").fill("Do you have a shop I could visit?");
    await page.getByLabel("Your message").press("Enter");
    await page.locator(".msg-bot").nth(2).and(page.locator("[aria-busy=false]")).waitFor();
    assert.match(await page.locator(".msg-bot").nth(2).textContent(), /12 Canal Street/);
    await s.shot("three answers");

    // Thumbs under an answer rate it; the analytics count the rating and the answers.
    const helpful = first.getByRole("button", { name: "Helpful", exact: true });
    await helpful.click();
    await first.getByText("Thanks for the feedback.").waitFor();
    assert.equal(await helpful.getAttribute("aria-pressed"), "true");
    await page.locator("#insights-form").getByRole("button", { name: "Show" }).click();
    await page.locator("#insights-table tbody tr").first().waitFor();
    const totals = await page.locator("#insights-totals").textContent();
    assert.match(totals, /Helpful1/);
    assert.match(totals, /Messages3/);
    assert.equal(await page.locator("#insights-chart svg rect").count(), 2, "one day: answered and unanswered bars");
    await s.shot("analytics");

    // Over the limit: the chatbot's own message, as the API gives it.
    await page.getByLabel("Your message").fill("and on Sundays?");
    await page.getByLabel("Your message").press("Enter");
    await page.locator("#chat-status.error").waitFor();
    assert.match(await page.locator("#chat-status").textContent(), /^Easy there! Try again in a few minutes\. \(you can send again in \d+ s\)$/);
    assert.equal(await page.locator("#chat-status").getAttribute("role"), "alert");
    assert.equal(await page.locator(".msg-bot").count(), 3, "no answer bubble for a refused message");
    assert.equal(await page.locator(".msg-note.msg-error").last().textContent(), "Easy there! Try again in a few minutes.");
    await s.shot("rate limited");

    // Sessions: a new one starts empty; the earlier one comes back with its citations.
    await page.getByRole("button", { name: "New session" }).click();
    await page.getByText("New session started.").waitFor();
    assert.equal(await page.locator(".msg").count(), 0);
    const options = page.getByLabel("Session", { exact: true }).locator("option");
    assert.equal(await options.count(), 3, "the prompt to start one, and two sessions");
    await page.getByLabel("Session", { exact: true }).selectOption({ index: 2 });
    await page.locator(".msg-bot").nth(2).waitFor();
    assert.equal(await page.locator(".msg-user").count(), 3);
    await page.locator(".msg-bot").first().locator(".cite-marker").first().click();
    await page.locator(".msg-bot").first().locator(".cite-panel:not([hidden])").waitFor();
    await s.shot("earlier session reopened");

    assertOnlyWorker(s, worker);
  } finally {
    await s.close();
  }
});

test("on a phone-sized screen, with the keyboard only", async (t) => {
  const { key } = await worker.newAccount("keyboard");
  const s = await openPage(browser, t.name, { viewport: PHONE, isMobile: true });
  const { page } = s;
  const kb = page.keyboard;
  try {
    await page.goto(`${worker.base}/`);
    await s.shot("open");
    // The first Tab reaches the skip link, and focus is visible wherever it goes.
    await kb.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement.textContent), "Skip to the chat");
    await tabTo(page, "#api-key");
    const outline = await focusOutline(page);
    assert.notEqual(outline.style, "none");
    assert.ok(outline.width >= 2, `focus outline ${outline.width}px`);
    await kb.type(key);
    await kb.press("Enter");
    await page.getByText("Key accepted").waitFor();
    await s.shot("key accepted");

    await tabTo(page, "#new-bot-name");
    await kb.type("Pocket help");
    await kb.press("Enter");
    await page.getByText("Created “Pocket help”.").waitFor();

    await tabTo(page, "#set-citations");
    await kb.press("Space");
    assert.equal(await page.getByLabel("Show citations in answers").isChecked(), true);
    await tabTo(page, "#settings-form button[type=submit]");
    await kb.press("Enter");
    await page.getByText("Settings saved.").waitFor();
    await s.shot("settings saved");

    await tabTo(page, "#qa-question");
    await kb.type("Can I pay by bank transfer?");
    await kb.press("Tab");
    await kb.type("Yes, bank transfers are accepted for orders over 100 pounds.");
    await kb.press("Tab");
    await kb.press("Enter");
    await page.locator("#source-list li[data-status=success]").waitFor();
    await s.shot("qa ready");

    await tabTo(page, "#question");
    await kb.type("can I pay by bank transfer?");
    await kb.press("Enter");
    const answer = page.locator(".msg-bot[aria-busy=false]").first();
    await answer.waitFor();
    assert.match(await answer.textContent(), /bank transfers are accepted/);
    // From the message box, back to the citation marker, and open it with the keyboard.
    await tabTo(page, ".cite-marker", { backwards: true });
    await kb.press("Enter");
    await page.locator(".cite-panel:not([hidden])").waitFor();
    await s.shot("answer with citation open");

    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= PHONE.width, `the page scrolls sideways: ${width}px wide`);
    // Every form control has a label a screen reader can read out.
    const unlabelled = await page.evaluate(() => [...document.querySelectorAll("input, select, textarea")]
      .filter((e) => !e.labels?.length && !e.getAttribute("aria-label") && !e.getAttribute("aria-labelledby"))
      .map((e) => e.id || e.outerHTML));
    assert.deepEqual(unlabelled, []);
    assertOnlyWorker(s, worker);
  } finally {
    await s.close();
  }
});

test("an answer appears while it streams, and a failure midway is shown", async (t) => {
  const { key } = await modelWorker.newAccount("stream");
  const api = client(modelWorker, key);
  const bot = await newChatbot(api, { name: "Chatty" });
  const s = await openPage(browser, t.name);
  const { page } = s;
  try {
    await page.goto(`${modelWorker.base}/`);
    await useKey(page, key);
    await page.getByLabel("Pick a chatbot").locator(`option[value="${bot.uuid}"]`).waitFor({ state: "attached" });
    assert.equal(await page.getByLabel("Pick a chatbot").inputValue(), bot.uuid, "the only chatbot opens by itself");

    // The local model sends 200 words a little at a time.
    await page.getByLabel("Your message").fill("[long] tell me everything");
    await page.getByLabel("Your message").press("Enter");
    const answer = page.locator(".msg-bot").first();
    const text = answer.locator(".msg-text");
    await page.waitForFunction(() => {
      const a = document.querySelector(".msg-bot");
      return a?.getAttribute("aria-busy") === "true" && a.textContent.includes("word3 ");
    });
    const partial = await text.textContent();
    assert.equal(await answer.getAttribute("aria-busy"), "true", "still streaming");
    await s.shot("answer streaming");
    await page.waitForFunction((n) => {
      const a = document.querySelector(".msg-bot");
      return a.getAttribute("aria-busy") === "true" && a.querySelector(".msg-text").textContent.length > n;
    }, partial.length);
    await answer.and(page.locator("[aria-busy=false]")).waitFor();
    const full = await text.textContent();
    assert.ok(full.startsWith(partial) && full.length > partial.length, "the text grew in place");
    assert.match(full, /word199 $/);
    await s.shot("answer complete");

    // The model drops the connection midway: what came is kept and the error is shown.
    await page.getByLabel("Your message").fill("[cut] this will break");
    await page.getByLabel("Your message").press("Enter");
    const broken = page.locator(".msg-bot").nth(1);
    await broken.locator(".msg-error").waitFor();
    assert.equal(await broken.locator(".msg-error").textContent(), "The model stopped answering midway.");
    assert.equal(await broken.locator(".msg-error").getAttribute("role"), "alert");
    assert.match(await broken.locator(".msg-text").textContent(), /^You asked/);
    await page.locator("#chat-status.error").waitFor();
    await s.shot("failure midway");

    // A model that fails before answering: the API's error sentence.
    await page.getByLabel("Your message").fill("[500] fail at once");
    await page.getByLabel("Your message").press("Enter");
    await page.locator("#chat-status", { hasText: /model|provider|upstream/i }).waitFor();
    await s.shot("model unavailable");
    assertOnlyWorker(s, modelWorker);
  } finally {
    await s.close();
  }
});

test("the page shows a key's scopes and makes a chat key for a backend and a read key for a dashboard", async (t) => {
  const { key } = await worker.newAccount("keys");
  const s = await openPage(browser, t.name);
  const { page } = s;
  try {
    await page.goto(`${worker.base}/`);
    await useKey(page, key);
    await page.getByText("Key accepted: 0 chatbots on this account.").waitFor();
    assert.match(await page.locator("#key-scopes").textContent(), /scopes: admin/);
    await page.getByRole("heading", { name: "Keys for your services" }).waitFor();

    await page.getByLabel("Name of the new key").fill("Support backend");
    await page.getByRole("button", { name: "Create a chat key" }).click();
    await page.getByText("Created the chat key “Support backend”.").waitFor();
    const chatKey = await page.getByLabel("The new key (shown only now: copy it)").inputValue();
    assert.match(chatKey, /^ec_[0-9a-f]{64}$/);
    await page.getByLabel("Name of the new key").fill("Dashboard");
    await page.getByRole("button", { name: "Create a read key" }).click();
    await page.getByText("Created the read key “Dashboard”.").waitFor();
    const readKey = await page.getByLabel("The new key (shown only now: copy it)").inputValue();
    const listed = page.locator("#key-list li");
    await page.waitForFunction(() => document.querySelectorAll("#key-list li").length === 3);
    const lines = await listed.allTextContents();
    assert.ok(lines.some((l) => l.startsWith("Support backend") && l.includes("scopes: chat")), lines.join("\n"));
    assert.ok(lines.some((l) => l.startsWith("Dashboard") && l.includes("scopes: read")), lines.join("\n"));
    await s.shot("keys created");

    const stored = (await client(worker, key).get("/api-keys")).json;
    assert.deepEqual(stored.map((k) => [k.name, k.scopes]), [["keys", ["admin"]], ["Support backend", ["chat"]], ["Dashboard", ["read"]]]);

    // The chat key only chats: the page says so instead of listing chatbots.
    await useKey(page, chatKey);
    await page.getByText("It may only chat").waitFor();
    assert.match(await page.locator("#key-scopes").textContent(), /scopes: chat/);
    // The read key lists chatbots but makes no keys.
    await page.reload();
    await useKey(page, readKey);
    await page.getByText("Key accepted: 0 chatbots on this account.").waitFor();
    assert.match(await page.locator("#key-scopes").textContent(), /scopes: read/);
    assert.ok(await page.locator("#keys").isHidden());
    await s.shot("read key");
    assertOnlyWorker(s, worker);
  } finally {
    await s.close();
  }
});
