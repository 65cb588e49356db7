// Site crawls against a local site of about thirty pages: robots.txt, a sitemap index with a
// gzipped sitemap, pages reachable only by links, a redirect loop, links to another host and to
// a private address, duplicate URLs in other spellings; then re-sync and a restart mid-crawl.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import { startAccount, startServer, newChatbot, expectError, sleep } from "./suite.mjs";

/** Runs `check` until it stops throwing; past the deadline its last failure is the test's. */
async function eventually(check, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(200);
    }
  }
}

let site, worker, api, elsewhere;
/** Page bodies by path; a test changes them. */
const pages = new Map();
let sitemapDocs = [];
const served = []; // [path, status]
let delayMs = 0;
/** Further `Disallow` lines robots.txt says (a test adds some). */
const moreDisallowed = [];
/** Paths that answer 403 for now (a test adds some). */
const refused = new Set();
/** Paths that answer 500 for now, robots.txt included (a test adds some). */
const failing = new Set();

function page(title, body, links = []) {
  return `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1><p>${body}</p>` +
    links.map((l) => `<a href="${l}">${l}</a>`).join(" ") + "</body></html>";
}

function buildSite(base) {
  pages.set("/", page("Home", "Welcome to the walrus workshop.", [
    "/about", "/about/", "/about?utm_campaign=spring", "/about#team", "/docs/1", "/hidden/a",
    "/private/x", "http://example.org/elsewhere", "http://10.0.0.7/admin", "/loop", "/to-metadata",
  ]));
  pages.set("/about", page("About", "The walrus workshop repairs kayaks.", ["/", "HTTP://127.0.0.1:" + new URL(base).port + "/docs/2/"]));
  for (let i = 1; i <= 12; i++) pages.set(`/docs/${i}`, page(`Doc ${i}`, `Manual chapter ${i} about paddle number ${i}.`, [`/docs/${(i % 12) + 1}`]));
  for (let i = 1; i <= 10; i++) pages.set(`/blog/${i}`, page(`Post ${i}`, `Blog post ${i} on river trips.`));
  pages.set("/hidden/a", page("Hidden A", "Only a link leads here.", ["/hidden/b"]));
  pages.set("/hidden/b", page("Hidden B", "Two links deep.", ["/hidden/c"]));
  pages.set("/hidden/c", page("Hidden C", "Three links deep, the last level read.", ["/hidden/d"]));
  pages.set("/hidden/d", page("Hidden D", "Four links deep: too deep."));
  pages.set("/private/x", page("Private", "Robots may not read this."));
  pages.set("/private/secret", page("Secret", "Robots may not read this either."));
  // Reached only from /gate, which no other page links to.
  pages.set("/gate", page("Gate", "The gate to the boathouse.", ["/gate/robots-hop", "/gate/excluded-hop", "/gate/moved", "/gate/target"]));
  pages.set("/gate/left-out", page("Left out", "A page the crawl excludes."));
  pages.set("/gate/target", page("Boathouse", "The boathouse keeps the zircon canoe."));
  pages.set("/gate/forbidden", page("Forbidden", "Robots may not read this one either."));
  sitemapDocs = [...Array(12).keys()].map((i) => `/docs/${i + 1}`).concat(["/docs/1/?utm_source=feed", "/docs/2#top"]);
}

const urlset = (paths, base) => `<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` +
  paths.map((p) => `<url><loc>${base}${p}</loc></url>`).join("") + "</urlset>";

before(async () => {
  site = await startServer(async (req, res) => {
    const url = new URL(req.url, "http://x");
    const p = url.pathname;
    const send = (status, type, body, headers = {}) => {
      served.push([p, status]);
      res.writeHead(status, { "Content-Type": type, ...headers });
      res.end(body);
    };
    if (delayMs) await sleep(delayMs);
    if (failing.has(p)) return send(p === "/robots.txt" ? 503 : 500, "text/html", "<h1>Busy</h1>");
    if (p === "/robots.txt") {
      const more = moreDisallowed.map((d) => `Disallow: ${d}\n`).join("");
      // Saved with a byte-order mark, as some editors do: the rules still hold.
      return send(200, "text/plain", `\ufeffUser-agent: *\nDisallow: /private/\nDisallow: /gate/forbidden\n${more}\nUser-agent: otherbot\nDisallow: /\n\nSitemap: ${site.base}/sitemap_index.xml\n`);
    }
    if (p === "/offsite") return send(301, "text/plain", "", { Location: `${elsewhere.base}/elsewhere` });
    if (p === "/sitemap_index.xml") {
      return send(200, "application/xml", `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` +
        `<sitemap><loc>${site.base}/sitemap-docs.xml</loc></sitemap><sitemap><loc>${site.base}/sitemap-blog.xml.gz</loc></sitemap></sitemapindex>`);
    }
    if (p === "/sitemap-docs.xml") return send(200, "application/xml", urlset(sitemapDocs, site.base));
    if (p === "/sitemap-blog.xml.gz") {
      const blog = [...pages.keys()].filter((k) => k.startsWith("/blog/")).concat(["/private/secret"]);
      return send(200, "application/gzip", gzipSync(urlset(blog, site.base)));
    }
    if (p === "/gate/robots-hop") return send(302, "text/plain", "", { Location: "/gate/forbidden" });
    if (p === "/gate/excluded-hop") return send(302, "text/plain", "", { Location: "/gate/left-out" });
    if (p === "/gate/moved") return send(301, "text/plain", "", { Location: "/gate/target" });
    if (p === "/loop") return send(302, "text/plain", "", { Location: "/loop2" });
    if (p === "/loop2") return send(302, "text/plain", "", { Location: "/loop" });
    if (p === "/to-metadata") return send(302, "text/plain", "", { Location: "http://169.254.169.254/latest/meta-data/" });
    const body = pages.get(p);
    if (refused.has(p)) return send(403, "text/html", "<h1>Forbidden</h1>");
    if (body === undefined) return send(404, "text/html", "<h1>Not found</h1>");
    const etag = `"${createHash("sha256").update(body).digest("hex").slice(0, 16)}"`;
    if (req.headers["if-none-match"] === etag) return send(304, "text/html", "", { ETag: etag });
    return send(200, "text/html; charset=utf-8", body, { ETag: etag });
  });
  buildSite(site.base);
  // Another site, on another port: the Worker may call it, but no crawl of `site` should.
  elsewhere = await startServer(async (req, res) => res.end("elsewhere"));
  const host = new URL(site.base).host;
  ({ worker, api } = await startAccount({
    vars: { ALLOW_PRIVATE_URLS: "false", ALLOW_PRIVATE_HOSTS: `${host},${new URL(elsewhere.base).host}` },
    testScheduled: true,
  }));
});

async function finished(crawlUuid, timeoutMs = 120_000) {
  let last;
  await eventually(async () => {
    const r = await api.get(`/crawl/${crawlUuid}`);
    assert.equal(r.status, 200, r.text);
    last = r.json;
    assert.equal(r.json.status, "done", JSON.stringify(r.json));
  }, timeoutMs);
  return last;
}

async function pagesOf(bot, crawlUuid) {
  const r = await api.get(`/chatbot/${bot.uuid}/data-sources`);
  return r.json.filter((s) => JSON.parse(s.meta_json).crawl_uuid === crawlUuid);
}

const pathOf = (s) => new URL(JSON.parse(s.meta_json).url).pathname;

test("a crawl reads exactly the pages it should, each once", async () => {
  const bot = await newChatbot(api, { name: "Walrus" });
  const r = await api.post(`/chatbot/${bot.uuid}/data-source/crawl`, { body: { url: `${site.base}/`, max_depth: 3, refresh: "weekly" } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.status, "running");
  assert.equal(r.json.max_pages, 100);
  const crawl = await finished(r.json.uuid);
  const sources = await pagesOf(bot, r.json.uuid);
  const read = sources.filter((s) => s.status === "success").map(pathOf).sort();
  const expected = ["/", "/about", ...[...Array(12).keys()].map((i) => `/docs/${i + 1}`),
    ...[...Array(10).keys()].map((i) => `/blog/${i + 1}`), "/hidden/a", "/hidden/b", "/hidden/c"].sort();
  assert.deepEqual(read, expected);
  const failed = sources.filter((s) => s.status === "error").map(pathOf).sort();
  assert.deepEqual(failed, ["/loop", "/to-metadata"]);
  assert.match(JSON.parse(sources.find((s) => pathOf(s) === "/to-metadata").meta_json).error, /private|link-local/);
  assert.deepEqual(crawl.pages, { found: 29, read: 27, failed: 2, pending: 0, skipped_by_robots: 2 });
  // Nothing forbidden, too deep or elsewhere was asked for; no page twice.
  const asked = served.map(([p]) => p);
  for (const p of ["/private/x", "/private/secret", "/hidden/d", "/elsewhere", "/admin"]) assert.ok(!asked.includes(p), p);
  // The start page twice: the first reading asks for it before it stores anything.
  for (const p of expected) assert.equal(asked.filter((a) => a === p).length, p === "/" ? 2 : 1, p);
  // Searchable, and listed.
  const hits = (await api.post(`/chatbot/${bot.uuid}/search`, { body: { query: "paddle number 7" } })).json.results;
  assert.equal(hits[0].title, "Doc 7");
  const list = (await api.get(`/chatbot/${bot.uuid}/crawls`)).json;
  assert.deepEqual(list.map((c) => c.uuid), [r.json.uuid]);
  assert.equal(list[0].refresh, "weekly");
  assert.match(list[0].next_sync_at, /^\d{4}-/);
});

test("a sync re-reads: a changed page is re-indexed, a deleted one leaves, a new one is added", async () => {
  const bot = await newChatbot(api, { name: "Resync" });
  const r = await api.post(`/chatbot/${bot.uuid}/data-source/crawl`, { body: { url: `${site.base}/docs/1`, max_depth: 0 } });
  await finished(r.json.uuid);
  const before = new Map((await pagesOf(bot, r.json.uuid)).map((s) => [pathOf(s), s]));
  assert.equal(before.size, 22, [...before.keys()].join(" ")); // 12 docs (sitemap) + 10 blog posts
  pages.set("/docs/3", page("Doc 3", "Chapter three now covers the narwhal rudder."));
  pages.delete("/blog/2");
  pages.set("/docs/13", page("Doc 13", "A new chapter about sea anchors."));
  sitemapDocs.push("/docs/13");
  await sleep(1100); // timestamps have whole seconds
  const mark = served.length;
  const s = await api.post(`/crawl/${r.json.uuid}/sync`);
  assert.equal(s.status, 200, s.text);
  // Every page is asked for again.
  await eventually(() => {
    const asked = new Set(served.slice(mark).map(([p]) => p));
    for (const p of before.keys()) assert.ok(asked.has(p), p);
  }, 60_000);
  await eventually(async () => {
    const now = new Map((await pagesOf(bot, r.json.uuid)).map((x) => [pathOf(x), x]));
    assert.ok(!now.has("/blog/2"));
    assert.equal(now.get("/docs/13")?.status, "success");
    assert.notEqual(JSON.parse(now.get("/docs/3").meta_json).last_changed_at, JSON.parse(before.get("/docs/3").meta_json).last_changed_at);
  }, 60_000);
  await finished(r.json.uuid);
  const after = new Map((await pagesOf(bot, r.json.uuid)).map((x) => [pathOf(x), x]));
  for (const [p, old] of before) {
    if (p === "/docs/3" || p === "/blog/2") continue;
    const meta = JSON.parse(after.get(p).meta_json);
    assert.equal(meta.last_changed_at, JSON.parse(old.meta_json).last_changed_at, p);
    assert.ok(meta.last_checked_at > JSON.parse(old.meta_json).last_checked_at, p);
    assert.equal(after.get(p).modified_at, old.modified_at, p);
  }
  // An unchanged page cost one request, answered 304.
  const again = served.slice(mark).filter(([p]) => p === "/docs/5");
  assert.deepEqual(again, [["/docs/5", 304]]);
  const hits = (await api.post(`/chatbot/${bot.uuid}/search`, { body: { query: "narwhal rudder" } })).json.results;
  assert.equal(hits[0].title, "Doc 3");
  const stale = (await api.post(`/chatbot/${bot.uuid}/search`, { body: { query: "Blog post 2 river trips" } })).json.results;
  assert.ok(!stale.some((h) => h.title === "Post 2"));
  const [{ n }] = await worker.sql(`SELECT COUNT(*) AS n FROM chunks c JOIN data_sources s ON s.uuid = c.data_source_uuid WHERE s.crawl_uuid = '${r.json.uuid}'`);
  assert.equal(n, 22, "one chunk per page, none twice");
  // Restore the site for the other tests.
  buildSite(site.base);
});

test("a crawl whose start page is missing says so; a page back, or whose source was deleted, is read again by the next sync", async () => {
  const bot = await newChatbot(api, { name: "Comeback" });
  const r = await api.post(`/chatbot/${bot.uuid}/data-source/crawl`, { body: { url: `${site.base}/lighthouse`, max_depth: 0, include: ["/lighthouse"] } });
  assert.equal(r.status, 200, r.text);
  let crawl;
  await eventually(async () => {
    crawl = (await api.get(`/crawl/${r.json.uuid}`)).json;
    assert.equal(crawl.status, "error", JSON.stringify(crawl));
  }, 60_000);
  assert.match(crawl.error, /start page .*\/lighthouse answered HTTP 404/);
  assert.equal(crawl.pages.found, 0);
  // Published since: the next sync reads it.
  pages.set("/lighthouse", page("Lighthouse", "The walrus lighthouse opens at dawn."));
  await sleep(1100); // timestamps have whole seconds
  assert.equal((await api.post(`/crawl/${r.json.uuid}/sync`)).status, 200);
  crawl = await finished(r.json.uuid);
  assert.equal(crawl.error, null);
  assert.equal(crawl.pages.found, 1);
  const [source] = await pagesOf(bot, r.json.uuid);
  assert.equal(source.status, "success");
  // Its source deleted: the crawl no longer counts it, and the next sync reads it again.
  assert.deepEqual((await api.post("/data-sources/delete", { body: { uuids: [source.uuid] } })).json, { success: true });
  assert.deepEqual((await api.get(`/crawl/${r.json.uuid}`)).json.pages, { found: 0, read: 0, failed: 0, pending: 0, skipped_by_robots: 0 });
  await sleep(1100);
  delayMs = 1500; // the site answers slowly: the sync is still reading when asked again
  const again = await api.post(`/crawl/${r.json.uuid}/sync`);
  assert.equal(again.status, 200, again.text);
  assert.equal(again.json.status, "running");
  await eventually(async () => assert.equal((await api.get(`/crawl/${r.json.uuid}`)).json.pages.pending, 1), 30_000);
  const twice = await api.post(`/crawl/${r.json.uuid}/sync`);
  expectError(assert, twice, 409, "conflict");
  delayMs = 0;
  crawl = await finished(r.json.uuid);
  assert.equal(crawl.pages.found, 1);
  assert.equal((await pagesOf(bot, r.json.uuid))[0]?.status, "success");
  pages.delete("/lighthouse");
});

test("a chatbot stores each page once: a second crawl over the same pages, or the same page as a web page source, adds none", async () => {
  const bot = await newChatbot(api, { name: "Once" });
  const body = { url: `${site.base}/blog/1`, max_pages: 3, max_depth: 0, include: ["/blog/*"] };
  const first = await api.post(`/chatbot/${bot.uuid}/data-source/crawl`, { body });
  assert.equal((await finished(first.json.uuid)).pages.found, 3);
  const second = await api.post(`/chatbot/${bot.uuid}/data-source/crawl`, { body: { ...body, max_pages: 5 } });
  const crawl = await finished(second.json.uuid);
  assert.ok(crawl.pages.found >= 1 && crawl.pages.found <= 5, JSON.stringify(crawl.pages));
  const urls = (await api.get(`/chatbot/${bot.uuid}/data-sources`)).json.map((s) => JSON.parse(s.meta_json).url);
  assert.equal(urls.length, 3 + crawl.pages.found, "only pages the first crawl does not hold");
  assert.equal(new Set(urls).size, urls.length, urls.join(" "));
  expectError(assert, await api.post(`/chatbot/${bot.uuid}/data-source/url`, { body: { url: `${site.base}/blog/1#top` } }), 409, "conflict");
});

test("crawl input is checked; delete removes the crawl and its pages", async () => {
  const bot = await newChatbot(api, { name: "Checks" });
  expectError(assert, await api.post(`/chatbot/${bot.uuid}/data-source/crawl`, { body: { url: `${site.base}/`, max_pages: 1001 } }), 400, "invalid_request", "max_pages");
  expectError(assert, await api.post(`/chatbot/${bot.uuid}/data-source/crawl`, { body: { url: "http://10.1.2.3/" } }), 400, "invalid_request", "url");
  expectError(assert, await api.post(`/chatbot/${bot.uuid}/data-source/crawl`, { body: { url: `${site.base}/`, refresh: "hourly" } }), 400, "invalid_request", "refresh");
  const r = await api.post(`/chatbot/${bot.uuid}/data-source/crawl`, { body: { url: `${site.base}/blog/1`, max_pages: 3, max_depth: 0, include: ["/blog/*"] } });
  const crawl = await finished(r.json.uuid);
  assert.equal(crawl.pages.found, 3);
  // How often it reads again is changed on the crawl; what it reads is not.
  assert.equal(crawl.refresh, "never");
  const weekly = await api.post(`/crawl/${r.json.uuid}/update`, { body: { refresh: "weekly" } });
  assert.equal(weekly.status, 200, weekly.text);
  assert.equal(weekly.json.refresh, "weekly");
  assert.ok(Date.parse(weekly.json.next_sync_at) > Date.now() + 6 * 86_400_000, weekly.json.next_sync_at);
  assert.equal((await api.get(`/crawl/${r.json.uuid}`)).json.refresh, "weekly");
  expectError(assert, await api.post(`/crawl/${r.json.uuid}/update`, { body: { refresh: "hourly" } }), 400, "invalid_request", "refresh");
  expectError(assert, await api.post(`/crawl/${r.json.uuid}/update`, { body: {} }), 400, "invalid_request", "refresh");
  expectError(assert, await api.post(`/crawl/${r.json.uuid}/update`, { body: { refresh: "daily", include: ["/docs"] } }), 400, "invalid_request", "include");
  const [page] = await pagesOf(bot, r.json.uuid);
  assert.ok((await pagesOf(bot, r.json.uuid)).every((p) => JSON.parse(p.meta_json).refresh === "weekly"), "its pages say what the crawl says");
  const onPage = expectError(assert, await api.post(`/data-source/${page.uuid}/update`, { body: { refresh: "daily" } }), 400, "invalid_request", "refresh");
  assert.ok(onPage.message.includes(`/crawl/${r.json.uuid}/update`), onPage.message);
  const d = await api.del(`/crawl/${r.json.uuid}/delete`);
  assert.equal(d.status, 200, d.text);
  expectError(assert, await api.get(`/crawl/${r.json.uuid}`), 404, "not_found");
  assert.deepEqual(await pagesOf(bot, r.json.uuid), []);
  const [{ n }] = await worker.sql(`SELECT COUNT(*) AS n FROM chunks WHERE chatbot_uuid = '${bot.uuid}'`);
  assert.equal(n, 0);
});

test("a Worker restarted in the middle of a crawl finishes it", async () => {
  const bot = await newChatbot(api, { name: "Restart" });
  delayMs = 400;
  const r = await api.post(`/chatbot/${bot.uuid}/data-source/crawl`, { body: { url: `${site.base}/`, max_depth: 3 } });
  // `eventually` retries a falsy answer, not a thrown assertion.
  await eventually(async () => (await api.get(`/crawl/${r.json.uuid}`)).json.pages.read >= 3, 60_000);
  const before = (await api.get(`/crawl/${r.json.uuid}`)).json.pages;
  assert.ok(before.read < 27, `the restart comes in the middle of the crawl: ${JSON.stringify(before)}`);
  await worker.restart();
  delayMs = 0;
  // Local queues live in memory: what was queued is gone. The scheduled handler resumes
  // readings no step has touched for a while; pretend that while has passed.
  await worker.sql(`UPDATE data_sources SET modified_at = '2020-01-01T00:00:00Z' WHERE crawl_uuid = '${r.json.uuid}' AND status IN ('await', 'running')`);
  await worker.sql(`UPDATE crawls SET modified_at = '2020-01-01T00:00:00Z' WHERE uuid = '${r.json.uuid}'`);
  await worker.runScheduled();
  const crawl = await finished(r.json.uuid);
  assert.deepEqual(crawl.pages, { found: 29, read: 27, failed: 2, pending: 0, skipped_by_robots: 2 });
});

test("a redirect is held to the crawl's scope: robots rules and filters apply to where it leads", async () => {
  const bot = await newChatbot(api, { name: "Gate" });
  const r = await api.post(`/chatbot/${bot.uuid}/data-source/crawl`, { body: { url: `${site.base}/gate`, include: ["/gate"], exclude: ["/gate/left-out"] } });
  assert.equal(r.status, 200, r.text);
  const crawl = await finished(r.json.uuid);
  const asked = served.map(([p]) => p);
  for (const p of ["/gate/forbidden", "/gate/left-out"]) assert.ok(!asked.includes(p), `${p} was fetched`);
  const sources = await pagesOf(bot, r.json.uuid);
  // /gate/moved leads to /gate/target, which /gate also links to: one page, stored once,
  // under the address it is at.
  assert.deepEqual(sources.map(pathOf).sort(), ["/gate", "/gate/target"], "the pages redirected out left the crawl");
  assert.ok(sources.every((s) => s.status === "success"));
  assert.equal(crawl.error, null);
  const found = await api.post(`/chatbot/${bot.uuid}/search`, { body: { query: "zircon canoe" } });
  assert.match(found.json.results[0]?.text ?? "", /zircon canoe/, "the page a redirect within the crawl leads to is read");
  assert.equal(new Set(found.json.results.map((h) => h.data_source_uuid)).size, 1);
});

test("a start page the filters leave out is still the way in: its links are followed, it is not stored", async () => {
  const bot = await newChatbot(api, { name: "Hidden only" });
  const r = await api.post(`/chatbot/${bot.uuid}/data-source/crawl`, { body: { url: `${site.base}/`, include: ["/hidden/*"], max_depth: 3 } });
  assert.equal(r.status, 200, r.text);
  const crawl = await finished(r.json.uuid);
  const sources = await pagesOf(bot, r.json.uuid);
  assert.deepEqual(sources.map(pathOf).sort(), ["/hidden/a", "/hidden/b", "/hidden/c"]);
  assert.equal(crawl.pages.read, 3);
});

test("every crawl and page step stayed within 50 D1 calls plus subrequests", () => {
  // The Worker logs each step's figures (an `ingestion step` line); these are all of this
  // file's, the restarted Worker's included.
  const steps = worker.ingestionSteps;
  assert.ok(steps.some((s) => s.step === "crawl_start") && steps.some((s) => s.step === "fetch_page"), JSON.stringify(steps.slice(0, 3)));
  for (const s of steps) {
    assert.ok(s.d1_calls + s.subrequests <= 50, JSON.stringify(s));
    assert.equal(s.within_budget, true, JSON.stringify(s));
  }
});

test("a re-sync honours robots.txt as it reads now: pages forbidden since leave the crawl unread", async () => {
  const bot = await newChatbot(api, { name: "Robots later" });
  const r = await api.post(`/chatbot/${bot.uuid}/data-source/crawl`, { body: { url: `${site.base}/hidden/a`, max_depth: 2, include: ["/hidden/*"] } });
  assert.equal(r.status, 200, r.text);
  const first = await finished(r.json.uuid);
  assert.deepEqual((await pagesOf(bot, r.json.uuid)).map(pathOf).sort(), ["/hidden/a", "/hidden/b", "/hidden/c"]);
  moreDisallowed.push("/hidden/c");
  try {
    const since = served.length;
    assert.equal((await api.post(`/crawl/${r.json.uuid}/sync`)).status, 200);
    const again = await eventually(async () => {
      const c = await finished(r.json.uuid);
      assert.deepEqual((await pagesOf(bot, r.json.uuid)).map(pathOf).sort(), ["/hidden/a", "/hidden/b"]);
      return c;
    }, 60_000);
    assert.equal(again.pages.skipped_by_robots, first.pages.skipped_by_robots + 1);
    assert.ok(!served.slice(since).some(([p]) => p === "/hidden/c"), "never fetched once forbidden");
    const found = (await api.post(`/chatbot/${bot.uuid}/search`, { body: { query: "three links deep last level" } })).json.results;
    assert.ok(!found.some((x) => /Three links deep/.test(x.text)), "its text is gone from search");
    // Allowed again: the next sync reads it, though the page linking to it is unchanged (304).
    moreDisallowed.length = 0;
    await sleep(1100);
    const mark = served.length;
    assert.equal((await api.post(`/crawl/${r.json.uuid}/sync`)).status, 200);
    await eventually(async () => {
      assert.deepEqual((await pagesOf(bot, r.json.uuid)).map(pathOf).sort(), ["/hidden/a", "/hidden/b", "/hidden/c"]);
      // Read after the pages: a crawl read before could still be the last sync's.
      const back = await finished(r.json.uuid);
      assert.equal(back.pages.skipped_by_robots, first.pages.skipped_by_robots);
    }, 60_000);
    assert.deepEqual(served.slice(mark).filter(([p]) => p === "/hidden/b"), [["/hidden/b", 304]]);
  } finally {
    moreDisallowed.length = 0;
  }
});

test("a sync brings back a page that failed or left once it answers again, though the page linking to it is unchanged", async () => {
  pages.set("/kb", page("Knowledge base", "Start here.", ["/kb/a", "/kb/b"]));
  pages.set("/kb/a", page("Alpha", "The alpha article about ferrets."));
  pages.set("/kb/b", page("Beta", "The beta article about otters."));
  const bot = await newChatbot(api, { name: "Comebacks" });
  const r = await api.post(`/chatbot/${bot.uuid}/data-source/crawl`, { body: { url: `${site.base}/kb`, include: ["/kb/*"] } });
  assert.equal(r.status, 200, r.text);
  await finished(r.json.uuid);
  const states = async () => Object.fromEntries((await pagesOf(bot, r.json.uuid)).map((x) => [pathOf(x), x.status]));
  assert.deepEqual(await states(), { "/kb": "success", "/kb/a": "success", "/kb/b": "success" });
  refused.add("/kb/a");
  const beta = pages.get("/kb/b");
  pages.delete("/kb/b");
  try {
    await sleep(1100);
    assert.equal((await api.post(`/crawl/${r.json.uuid}/sync`)).status, 200);
    await eventually(async () => assert.deepEqual(await states(), { "/kb": "success", "/kb/a": "error" }), 60_000);
    await finished(r.json.uuid);
  } finally {
    refused.delete("/kb/a");
    pages.set("/kb/b", beta);
  }
  await sleep(1100);
  const mark = served.length;
  assert.equal((await api.post(`/crawl/${r.json.uuid}/sync`)).status, 200);
  await eventually(async () => {
    assert.deepEqual(await states(), { "/kb": "success", "/kb/a": "success", "/kb/b": "success" });
    // Read after the pages: a crawl read before could still be the last sync's.
    const crawl = await finished(r.json.uuid);
    assert.deepEqual([crawl.pages.found, crawl.pages.failed], [3, 0]);
  }, 60_000);
  const alpha = (await pagesOf(bot, r.json.uuid)).find((x) => pathOf(x) === "/kb/a");
  assert.equal(JSON.parse(alpha.meta_json).error, undefined, "the error is cleared");
  assert.deepEqual(served.slice(mark).filter(([p]) => p === "/kb"), [["/kb", 304]]);
  for (const p of ["/kb", "/kb/a", "/kb/b"]) pages.delete(p);
});

test("a crawl from a page the chatbot holds already follows that page's links", async () => {
  const bot = await newChatbot(api, { name: "Held start" });
  const single = await api.post(`/chatbot/${bot.uuid}/data-source/url`, { body: { url: `${site.base}/hidden/a` } });
  assert.equal(single.status, 200, single.text);
  const r = await api.post(`/chatbot/${bot.uuid}/data-source/crawl`, { body: { url: `${site.base}/hidden/a`, max_depth: 1, include: ["/hidden/*"] } });
  const crawl = await finished(r.json.uuid);
  assert.equal(crawl.error, null);
  assert.deepEqual((await pagesOf(bot, r.json.uuid)).map(pathOf), ["/hidden/b"], "the start page is not stored twice; its link is");
});

test("a start page the filters leave out that redirects off the site is not followed, and the crawl says why", async () => {
  const bot = await newChatbot(api, { name: "Offsite start" });
  const r = await api.post(`/chatbot/${bot.uuid}/data-source/crawl`, { body: { url: `${site.base}/offsite`, max_depth: 1, include: ["/zzz"] } });
  const crawl = await eventually(async () => {
    const c = (await api.get(`/crawl/${r.json.uuid}`)).json;
    assert.equal(c.status, "error", JSON.stringify(c));
    return c;
  }, 60_000);
  assert.ok(crawl.error.includes(`redirects to ${elsewhere.base}/elsewhere, off the crawled site`), crawl.error);
  assert.equal(elsewhere.requests.length, 0, "the other site was never called");
});

test("a page only a link leads to, whose source was deleted, is read again by the next sync though the page linking to it is unchanged", async () => {
  pages.set("/den", page("Den", "The den by the river.", ["/den/lair"]));
  pages.set("/den/lair", page("Lair", "The lair keeps the obsidian lantern."));
  const bot = await newChatbot(api, { name: "Den" });
  const r = await api.post(`/chatbot/${bot.uuid}/data-source/crawl`, { body: { url: `${site.base}/den`, include: ["/den/*"] } });
  assert.equal(r.status, 200, r.text);
  assert.equal((await finished(r.json.uuid)).pages.found, 2);
  const lair = (await pagesOf(bot, r.json.uuid)).find((s) => pathOf(s) === "/den/lair");
  assert.deepEqual((await api.post("/data-sources/delete", { body: { uuids: [lair.uuid] } })).json, { success: true });
  assert.equal((await api.get(`/crawl/${r.json.uuid}`)).json.pages.found, 1, "deleting its source takes it out of the counts");
  try {
    await sleep(1100); // timestamps have whole seconds
    const mark = served.length;
    assert.equal((await api.post(`/crawl/${r.json.uuid}/sync`)).status, 200);
    await eventually(async () => {
      const now = await pagesOf(bot, r.json.uuid);
      assert.deepEqual(now.map((s) => [pathOf(s), s.status]).sort(), [["/den", "success"], ["/den/lair", "success"]]);
      assert.equal((await finished(r.json.uuid)).pages.found, 2);
    }, 60_000);
    assert.deepEqual(served.slice(mark).filter(([p]) => p === "/den"), [["/den", 304]], "the page linking to it showed no links");
    const hits = (await api.post(`/chatbot/${bot.uuid}/search`, { body: { query: "obsidian lantern" } })).json.results;
    assert.equal(hits[0]?.title, "Lair");
  } finally {
    pages.delete("/den");
    pages.delete("/den/lair");
  }
});

test("a crawled page that fails on a sync says so: error, counted as failed, its text kept, not marked checked", async () => {
  pages.set("/mill", page("Mill", "The old mill.", ["/mill/wheel"]));
  pages.set("/mill/wheel", page("Wheel", "The wheel turns the basalt grindstone."));
  const bot = await newChatbot(api, { name: "Mill" });
  const r = await api.post(`/chatbot/${bot.uuid}/data-source/crawl`, { body: { url: `${site.base}/mill`, include: ["/mill/*"] } });
  assert.equal(r.status, 200, r.text);
  await finished(r.json.uuid);
  const byPath = async () => new Map((await pagesOf(bot, r.json.uuid)).map((s) => [pathOf(s), s]));
  const before = await byPath();
  const checkedBefore = JSON.parse(before.get("/mill/wheel").meta_json).last_checked_at;
  failing.add("/mill/wheel");
  try {
    await sleep(1100); // timestamps have whole seconds
    assert.equal((await api.post(`/crawl/${r.json.uuid}/sync`)).status, 200);
    // The first try and three retries, then the dead-letter queue.
    const wheel = await eventually(async () => {
      const w = (await byPath()).get("/mill/wheel");
      assert.equal(w.status, "error", w.meta_json);
      return w;
    }, 90_000);
    const meta = JSON.parse(wheel.meta_json);
    assert.equal(meta.error, "The page answered HTTP 500.");
    assert.equal(meta.last_checked_at, checkedBefore, "a page that did not answer was not checked");
    const mill = JSON.parse((await byPath()).get("/mill").meta_json);
    assert.ok(mill.last_checked_at > JSON.parse(before.get("/mill").meta_json).last_checked_at, "the page that answered was");
    const crawl = await finished(r.json.uuid);
    assert.deepEqual([crawl.pages.found, crawl.pages.read, crawl.pages.failed], [2, 1, 1]);
    // Its text is kept meanwhile, as README says of a page that cannot be read.
    const hits = (await api.post(`/chatbot/${bot.uuid}/search`, { body: { query: "basalt grindstone" } })).json.results;
    assert.equal(hits[0]?.title, "Wheel");
  } finally {
    failing.delete("/mill/wheel");
  }
  // Answering again: the next sync makes it `success`, the error gone.
  await sleep(1100);
  assert.equal((await api.post(`/crawl/${r.json.uuid}/sync`)).status, 200);
  await eventually(async () => {
    const w = (await byPath()).get("/mill/wheel");
    assert.equal(w.status, "success", w.meta_json);
    assert.equal(JSON.parse(w.meta_json).error, undefined);
    assert.ok(JSON.parse(w.meta_json).last_checked_at > checkedBefore);
    assert.equal((await finished(r.json.uuid)).pages.failed, 0);
  }, 60_000);
  pages.delete("/mill");
  pages.delete("/mill/wheel");
});

test("a crawl whose start page redirects off the site fails on its first reading with nothing read or stored", async () => {
  const bot = await newChatbot(api, { name: "Offsite, no filters" });
  const mark = served.length;
  // No filters: without the start page, the sitemaps' pages would be the crawl's.
  const r = await api.post(`/chatbot/${bot.uuid}/data-source/crawl`, { body: { url: `${site.base}/offsite` } });
  assert.equal(r.status, 200, r.text);
  await eventually(async () => {
    const c = (await api.get(`/crawl/${r.json.uuid}`)).json;
    assert.equal(c.status, "error", JSON.stringify(c));
  }, 60_000);
  await sleep(3000); // anything queued meanwhile would have run by now
  const crawl = (await api.get(`/crawl/${r.json.uuid}`)).json;
  assert.equal(crawl.status, "error");
  assert.ok(crawl.error.includes(`redirects to ${elsewhere.base}/elsewhere, off the crawled site`), crawl.error);
  assert.deepEqual(crawl.pages, { found: 0, read: 0, failed: 0, pending: 0, skipped_by_robots: 0 });
  assert.deepEqual(await pagesOf(bot, r.json.uuid), []);
  const asked = served.slice(mark).map(([p]) => p);
  assert.ok(!asked.some((p) => p.startsWith("/sitemap") || p.startsWith("/docs/") || p.startsWith("/blog/")), asked.join(" "));
});

test("a crawl whose robots.txt keeps answering 503 says so", async () => {
  const bot = await newChatbot(api, { name: "Robots down" });
  failing.add("/robots.txt");
  try {
    const r = await api.post(`/chatbot/${bot.uuid}/data-source/crawl`, { body: { url: `${site.base}/docs/1`, max_depth: 0 } });
    assert.equal(r.status, 200, r.text);
    const crawl = await eventually(async () => {
      const c = (await api.get(`/crawl/${r.json.uuid}`)).json;
      assert.equal(c.status, "error", JSON.stringify(c));
      return c;
    }, 90_000);
    assert.equal(crawl.error, "robots.txt answered HTTP 503.");
    assert.equal(crawl.pages.found, 0);
  } finally {
    failing.delete("/robots.txt");
  }
});
