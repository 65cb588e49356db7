import { test, before } from "node:test";
import assert from "node:assert/strict";
import {
  startAccount, startHelpSite, newChatbot as createChatbot, fixture, expectError, settled, upload, sleep, UUID_RE, TIMESTAMP_RE,
} from "./suite.mjs";

let worker, site, api, key;
let pageVersion = 1;

before(async () => {
  // The help site's pages, and pages that move, change, are no page at all or are missing.
  site = await startHelpSite({
    other: (req, res, url) => {
      if (url.pathname === "/moved") {
        res.writeHead(301, { Location: "/returns" });
        return res.end();
      }
      if (url.pathname === "/changing") {
        if (pageVersion === 0) {
          res.writeHead(410, { "Content-Type": "text/html" });
          return res.end("<h1>Gone</h1>");
        }
        res.writeHead(200, { "Content-Type": "text/html" });
        return res.end(`<html><head><title>Notice v${pageVersion}</title></head><body><p>The ${pageVersion === 1 ? "aardvark" : "zebra"} edition of the notice.</p></body></html>`);
      }
      if (url.pathname === "/cp1251") {
        // "Красный самовар" as a Russian site may still serve it.
        res.writeHead(200, { "Content-Type": "text/html; charset=windows-1251" });
        return res.end(Buffer.concat([Buffer.from("<html><body><p>"), Buffer.from([0xCA, 0xF0, 0xE0, 0xF1, 0xED, 0xFB, 0xE9, 0x20, 0xF1, 0xE0, 0xEC, 0xEE, 0xE2, 0xE0, 0xF0]), Buffer.from("</p></body></html>")]));
      }
      if (url.pathname === "/slow") {
        // Slow enough for the owner to retitle it while it is read.
        return setTimeout(() => {
          res.writeHead(200, { "Content-Type": "text/html" });
          res.end("<html><head><title>Slow page</title></head><body><p>A page that takes its time.</p></body></html>");
        }, 1500);
      }
      if (url.pathname === "/image") {
        res.writeHead(200, { "Content-Type": "image/png" });
        return res.end(Buffer.from([0x89, 0x50, 0x4e, 0x47]));
      }
      res.writeHead(404, { "Content-Type": "text/html" });
      res.end("<h1>Not found</h1>");
    },
  });
  ({ worker, api, key } = await startAccount({ vars: { MAX_UPLOAD_BYTES: "300000", ORPHAN_GRACE_SECONDS: "0" }, testScheduled: true }));
});

const newChatbot = (name = "Knowledge") => createChatbot(api, { name });

async function search(bot, query, extra = {}) {
  const r = await api.post(`/chatbot/${bot.uuid}/search`, { body: { query, ...extra } });
  assert.equal(r.status, 200, r.text);
  return r.json.results;
}

async function addUrl(bot, url) {
  const r = await api.post(`/chatbot/${bot.uuid}/data-source/url`, { body: { url } });
  assert.equal(r.status, 200, r.text);
  return settled(api, r.json.uuid);
}

test("a Q&A pair is stored, indexed at once and found by a paraphrase", async () => {
  const bot = await newChatbot();
  const r = await api.post(`/chatbot/${bot.uuid}/data-source/qa`, {
    body: { question: "Can I change the delivery address after ordering?", answer: "Yes, until the parcel is dispatched: write to support with the new address." },
  });
  assert.equal(r.status, 200, r.text);
  const s = r.json;
  assert.match(s.uuid, UUID_RE);
  assert.match(s.created_at, TIMESTAMP_RE);
  assert.equal(s.type, "qa");
  assert.equal(s.status, "success");
  assert.equal(s.title, "Can I change the delivery address after ordering?");
  assert.ok(s.tokens > 10);
  assert.deepEqual(JSON.parse(s.meta_json), { question: "Can I change the delivery address after ordering?", answer: "Yes, until the parcel is dispatched: write to support with the new address." });
  const results = await search(bot, "is it possible to update the address my order ships to?");
  assert.equal(results[0]?.data_source_uuid, s.uuid);
  for (const [body, field] of [[{ question: "q" }, "answer"], [{ answer: "a" }, "question"], [{ question: "", answer: "a" }, "question"], [{ question: 1, answer: "a" }, "question"]]) {
    expectError(assert, await api.post(`/chatbot/${bot.uuid}/data-source/qa`, { body }), 400, "invalid_request", field);
  }
  // The same pair sent twice (a form submitted twice) is one source; another answer is not.
  const twice = await api.post(`/chatbot/${bot.uuid}/data-source/qa`, { body: { question: s.title, answer: JSON.parse(s.meta_json).answer } });
  expectError(assert, twice, 409, "conflict");
  assert.match(twice.json.error.message, new RegExp(s.uuid));
  assert.equal((await api.post(`/chatbot/${bot.uuid}/data-source/qa`, { body: { question: s.title, answer: "No." } })).status, 200);
});

test("a page in an encoding this service does not read fails with the encoding's name, not as noise", async () => {
  const bot = await newChatbot();
  const done = await addUrl(bot, `${site.base}/cp1251`);
  assert.equal(done.status, "error");
  assert.match(JSON.parse(done.meta_json).error, /encoded as windows-1251, which is not read/);
  assert.deepEqual(await search(bot, "Êðàñíûé"), []);
});

test("a web page is fetched, its readable text indexed and its title taken", async () => {
  const bot = await newChatbot();
  const s = await addUrl(bot, `${site.base}/shipping`);
  assert.equal(s.status, "success", s.meta_json);
  assert.equal(s.type, "link");
  assert.equal(s.title, "Shipping & Delivery | Northwind Outfitters");
  assert.equal(JSON.parse(s.meta_json).url, `${site.base}/shipping`);
  const chunks = await worker.sql(`SELECT heading, text FROM chunks WHERE data_source_uuid = '${s.uuid}' ORDER BY position`);
  const all = chunks.map((c) => `${c.heading}\n${c.text}`).join("\n");
  assert.match(all, /Orders placed before 2 pm on a working day leave the same day\./);
  assert.match(all, /Destination: European Union; Standard: 4–6 working days; Express: 2 working days/);
  assert.match(all, /Express delivery costs £9\.95 wherever you are\./);
  for (const boilerplate of ["tracking pixel", "window.analytics", "newsletter", "All rights reserved", "My account"]) {
    assert.ok(!all.includes(boilerplate), `boilerplate ${boilerplate} must not be indexed`);
  }
  const results = await search(bot, "how long does express shipping to the EU take?");
  assert.equal(results[0].data_source_uuid, s.uuid);
  assert.match(results[0].text, /European Union/);
});

test("redirects are followed; a page that answers 404 ends in error with the reason", async () => {
  const bot = await newChatbot();
  const moved = await addUrl(bot, `${site.base}/moved`);
  assert.equal(moved.status, "success");
  assert.equal(moved.title, "Returns and refunds | Northwind Outfitters");
  const missing = await addUrl(bot, `${site.base}/nowhere`);
  assert.equal(missing.status, "error");
  assert.match(JSON.parse(missing.meta_json).error, /HTTP 404: there is nothing to read/, "nothing was ever indexed to take out");
  const image = await addUrl(bot, `${site.base}/image`);
  assert.equal(image.status, "error");
  assert.match(JSON.parse(image.meta_json).error, /image\/png/);
  expectError(assert, await api.post(`/chatbot/${bot.uuid}/data-source/url`, { body: { url: "ftp://example.com/x" } }), 400, "invalid_request", "url");
  expectError(assert, await api.post(`/chatbot/${bot.uuid}/data-source/url`, { body: { url: "not a url" } }), 400, "invalid_request", "url");
  expectError(assert, await api.post(`/chatbot/${bot.uuid}/data-source/url`, { body: {} }), 400, "invalid_request", "url");
  // The same page again, however spelled (a fragment, a tracking parameter, a trailing
  // slash), is refused; another chatbot may read it.
  for (const again of [`${site.base}/moved`, `${site.base}/moved#top`, `${site.base}/moved?utm_source=mail`, `${site.base}/moved/`]) {
    const twice = await api.post(`/chatbot/${bot.uuid}/data-source/url`, { body: { url: again } });
    expectError(assert, twice, 409, "conflict");
    assert.match(twice.json.error.message, new RegExp(`already reads this page as ${moved.uuid} \\(status success\\)`), "names the source to refresh");
  }
  const listed = (await api.get(`/chatbot/${bot.uuid}/data-sources`)).json;
  assert.deepEqual(listed.map((s) => s.status).sort(), ["error", "error", "success"]);
  assert.equal((await addUrl(await newChatbot(), `${site.base}/moved`)).status, "success");
});

test("a title the owner sets while the page is read is kept when the reading ends", async () => {
  const bot = await newChatbot();
  const r = await api.post(`/chatbot/${bot.uuid}/data-source/url`, { body: { url: `${site.base}/slow` } });
  assert.equal(r.status, 200, r.text);
  const retitled = await api.post(`/data-source/${r.json.uuid}/update`, { body: { title: "Our own name" } });
  assert.equal(retitled.status, 200, retitled.text);
  const read = await settled(api, r.json.uuid);
  assert.equal(read.status, "success");
  assert.equal(read.title, "Our own name");
  // And once more, set while a re-scrape reads it.
  await api.post("/data-sources/url/re-scrape", { body: { uuids: [r.json.uuid] } });
  await api.post(`/data-source/${r.json.uuid}/update`, { body: { title: "Renamed again" } });
  assert.equal((await settled(api, r.json.uuid)).title, "Renamed again");
});

test("tag updates of the name, the colour and the sources sent at the same moment all stand", async () => {
  const bot = await newChatbot();
  const sources = [];
  for (const n of [1, 2, 3]) sources.push((await api.post(`/chatbot/${bot.uuid}/data-source/qa`, { body: { question: `Q${n}?`, answer: `${n}` } })).json.uuid);
  const tag = (await api.post(`/chatbot/${bot.uuid}/source-tag/create`, { body: { name: "Start", color: "#000000" } })).json;
  for (let round = 1; round <= 8; round++) {
    const color = `#00000${round}`;
    const tagged = sources.slice(0, 1 + (round % 3));
    const sent = await Promise.all([
      api.post(`/source-tag/${tag.uuid}/update`, { body: { name: `Round ${round}` } }),
      api.post(`/source-tag/${tag.uuid}/update`, { body: { color } }),
      api.post(`/source-tag/${tag.uuid}/update`, { body: { data_source_uuids: tagged } }),
    ]);
    for (const x of sent) assert.equal(x.status, 200, x.text);
    const [stored] = (await api.get(`/chatbot/${bot.uuid}/source-tags`)).json;
    assert.deepEqual([stored.name, stored.color, stored.data_source_uuids.sort()], [`Round ${round}`, color, [...tagged].sort()], `round ${round}`);
  }
});

test("records created while their chatbot is deleted are either made or refused as not found, never a failure", async () => {
  for (let round = 0; round < 4; round++) {
    const bot = await newChatbot(`Doomed ${round}`);
    const [removal, ...made] = await Promise.all([
      api.del(`/chatbot/${bot.uuid}/delete`),
      ...[1, 2, 3, 4].map((n) => api.post(`/chatbot/${bot.uuid}/data-source/qa`, { body: { question: `Q${n}?`, answer: `${n}` } })),
      api.post(`/chatbot/${bot.uuid}/source-tag/create`, { body: { name: "T", color: "#fff" } }),
      api.post(`/chatbot/${bot.uuid}/session/create`),
    ]);
    assert.equal(removal.status, 200, removal.text);
    for (const r of made) assert.ok([200, 404].includes(r.status), `${r.status} ${r.text}`);
    expectError(assert, await api.get(`/chatbot/${bot.uuid}`), 404, "not_found");
  }
});

test("two bulk deletes of overlapping lists at the same moment: one deletes its list, the other nothing (404)", async () => {
  for (let round = 0; round < 4; round++) {
    const bot = await newChatbot(`Overlap ${round}`);
    const ids = [];
    for (const n of [1, 2, 3, 4]) ids.push((await api.post(`/chatbot/${bot.uuid}/data-source/qa`, { body: { question: `Q${n}?`, answer: `${n}` } })).json.uuid);
    const [first, second] = await Promise.all([
      api.post("/data-sources/delete", { body: { uuids: ids.slice(0, 3) } }),
      api.post("/data-sources/delete", { body: { uuids: ids.slice(1) } }),
    ]);
    assert.deepEqual([first.status, second.status].sort(), [200, 404], `${first.text} ${second.text}`);
    const left = (await api.get(`/chatbot/${bot.uuid}/data-sources`)).json.map((x) => x.uuid);
    assert.deepEqual(left, first.status === 200 ? [ids[3]] : [ids[0]], "as if one ran after the other");
  }
});

test("re-scrape fetches again and replaces the old text", async () => {
  const bot = await newChatbot();
  pageVersion = 1;
  const s = await addUrl(bot, `${site.base}/changing`);
  assert.equal(s.title, "Notice v1");
  assert.equal((await search(bot, "aardvark")).length, 1);
  pageVersion = 2;
  const r = await api.post("/data-sources/url/re-scrape", { body: { uuids: [s.uuid] } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.success, true);
  assert.equal(r.json.data_sources[0].uuid, s.uuid);
  const again = await settled(api, s.uuid);
  assert.equal(again.status, "success");
  assert.equal(again.title, "Notice v2");
  assert.equal((await search(bot, "aardvark")).length, 0, "the old text is gone from the index");
  assert.equal((await search(bot, "zebra")).length, 1);
  // Scraped again unchanged: checked now, changed when it last changed.
  const changedAt = JSON.parse(again.meta_json).last_changed_at;
  await sleep(1100);
  await api.post("/data-sources/url/re-scrape", { body: { uuids: [s.uuid] } });
  const same = JSON.parse((await settled(api, s.uuid)).meta_json);
  assert.equal(same.last_changed_at, changedAt);
  assert.ok(same.last_checked_at > changedAt, same.last_checked_at);
  // Taken down by its site: the source says so and its text leaves the index; back, it is
  // read afresh.
  pageVersion = 0;
  await api.post("/data-sources/url/re-scrape", { body: { uuids: [s.uuid] } });
  const gone = await settled(api, s.uuid);
  assert.equal(gone.status, "error");
  assert.match(JSON.parse(gone.meta_json).error, /HTTP 410: its text was taken out of the index/);
  assert.equal((await search(bot, "zebra")).length, 0);
  pageVersion = 2;
  await api.post("/data-sources/url/re-scrape", { body: { uuids: [s.uuid] } });
  assert.equal((await settled(api, s.uuid)).status, "success");
  assert.equal((await search(bot, "zebra")).length, 1);
  // Several at once are queued together and each read again.
  const copy = await addUrl(bot, `${site.base}/changing?copy=2`);
  pageVersion = 1;
  const both = await api.post("/data-sources/url/re-scrape", { body: { uuids: [s.uuid, copy.uuid] } });
  assert.equal(both.status, 200, both.text);
  assert.deepEqual(both.json.data_sources.map((d) => d.status), ["await", "await"]);
  for (const uuid of [s.uuid, copy.uuid]) assert.equal((await settled(api, uuid)).title, "Notice v1");
  const qa = (await api.post(`/chatbot/${bot.uuid}/data-source/qa`, { body: { question: "q", answer: "a" } })).json;
  expectError(assert, await api.post("/data-sources/url/re-scrape", { body: { uuids: [qa.uuid] } }), 400, "invalid_request", "uuids");
  expectError(assert, await api.post("/data-sources/url/re-scrape", { body: { uuids: ["00000000-0000-4000-8000-000000000000"] } }), 404, "not_found");
});

test("uploads of each supported type are stored in R2 and their text indexed", async () => {
  const bot = await newChatbot();
  const csv = await upload(worker, key, bot.uuid, { name: "people.csv", bytes: await fixture("markup", "people.csv"), type: "text/csv", meta: { reference_source_link: "  https://example.com/people\n" } });
  assert.equal(csv.status, 200, csv.text);
  assert.equal(csv.json.type, "file");
  assert.equal(csv.json.file_name, "people.csv");
  assert.equal(csv.json.file_size, (await fixture("markup", "people.csv")).length);
  assert.equal(JSON.parse(csv.json.meta_json).reference_source_link, "https://example.com/people");
  const done = await settled(api, csv.json.uuid);
  assert.equal(done.status, "success", done.meta_json);
  assert.ok(done.tokens > 0);
  const [object] = await worker.r2List(`chatbots/${bot.uuid}/`);
  assert.equal(object, `chatbots/${bot.uuid}/sources/${csv.json.uuid}`);
  const csvText = (await worker.sql(`SELECT text FROM chunks WHERE data_source_uuid = '${csv.json.uuid}' ORDER BY position`)).map((c) => c.text).join("\n");
  assert.ok(csvText.includes('Name: Ada Lovelace; Born: 1815; Known for: Notes on the Analytical Engine; Notes: First published algorithm, "Note G"'), csvText);
  assert.ok(csvText.includes("Name: Alan Turing; Born: 1912; Known for: Turing machine; Notes: Codebreaking at Bletchley Park"), csvText);
  const md = await upload(worker, key, bot.uuid, { name: "README.md", bytes: await fixture("markup", "README.md"), type: "text/markdown" });
  assert.equal((await settled(api, md.json.uuid)).status, "success");
  const json = await upload(worker, key, bot.uuid, { name: "shop.json", bytes: await fixture("markup", "shop.json"), type: "application/json" });
  assert.equal((await settled(api, json.json.uuid)).status, "success");
  const html = await upload(worker, key, bot.uuid, { name: "warranty.html", bytes: await fixture("site", "warranty.html"), type: "text/html" });
  const htmlDone = await settled(api, html.json.uuid);
  assert.equal(htmlDone.status, "success");
  assert.equal(htmlDone.title, "warranty.html", "an upload keeps its file name as title");
  const results = await search(bot, "what happens if my tent has a manufacturing fault?");
  assert.equal(results[0].data_source_uuid, html.json.uuid);
});

test("reStructuredText, AsciiDoc and MDX uploads are read with their sections", async () => {
  const bot = await newChatbot();
  const rst = "==========\nBackups\n==========\n\nThe tool copies your data every night.\n\nRestoring a file\n----------------\n\nOpen the archive list and pick the night to restore from.\n\nRetention\n---------\n\nArchives are kept for ninety days.\n";
  const adoc = "= Sync guide\n\nSync keeps two folders equal.\n\n== Conflicts\n\nWhen both copies changed, the newer one wins and the older is renamed.\n\n[source,sh]\n----\nsync --dry-run\n----\n";
  const sources = {};
  const mdx = "import Tabs from '@theme/Tabs';\n\n# Getting started\n\n## Installing\n\n<Tabs>\nRun the installer and accept the licence.\n</Tabs>\n";
  for (const [name, text] of [["backups.rst", rst], ["sync.adoc", adoc], ["start.mdx", mdx]]) {
    const r = await upload(worker, key, bot.uuid, { name, bytes: Buffer.from(text), type: "application/octet-stream" });
    assert.equal(r.status, 200, r.text);
    assert.equal((await settled(api, r.json.uuid)).status, "success");
    sources[name] = r.json.uuid;
  }
  const headings = async (uuid) => (await worker.sql(`SELECT heading, text FROM chunks WHERE data_source_uuid = '${uuid}' ORDER BY position`))
    .map((c) => `${c.heading}\n${c.text}`).join("\n");
  const backups = await headings(sources["backups.rst"]);
  assert.match(backups, /Backups > Restoring a file/, backups);
  assert.doesNotMatch(backups, /-----|=====/, "underlines are no text");
  const sync = await headings(sources["sync.adoc"]);
  assert.match(sync, /Sync guide > Conflicts/, sync);
  assert.match(sync, /sync --dry-run/);
  const start = await headings(sources["start.mdx"]);
  assert.match(start, /Getting started > Installing/, start);
  assert.match(start, /Run the installer and accept the licence/, start);
  const results = await search(bot, "how long are archives kept?");
  assert.equal(results[0].data_source_uuid, sources["backups.rst"]);
  assert.match(results[0].heading, /Retention/);
});

test("a real PDF with a table and a DOCX are read, table rows kept whole", async () => {
  const bot = await newChatbot();
  const pdf = await upload(worker, key, bot.uuid, { name: "report.pdf", bytes: await fixture("office", "report_fpdf.pdf"), type: "application/pdf" });
  assert.equal(pdf.status, 200, pdf.text);
  const docx = await upload(worker, key, bot.uuid, { name: "handbook.docx", bytes: await fixture("office", "document.docx") });
  assert.equal(docx.status, 200, docx.text);
  for (const s of [pdf.json, docx.json]) assert.equal((await settled(api, s.uuid)).status, "success");
  const text = async (uuid) => (await worker.sql(`SELECT heading, text FROM chunks WHERE data_source_uuid = '${uuid}' ORDER BY position`))
    .map((c) => `${c.heading}\n${c.text}`).join("\n");
  const pdfText = await text(pdf.json.uuid);
  assert.match(pdfText, /The survey covered three coastal regions during the spring season\./);
  for (const row of ["Alpha | 12 | Red", "Beta | 7 | Green", "Gamma | 31 | Blue", "Delta | 45 | Yellow"]) {
    assert.ok(pdfText.includes(row), `PDF table row ${row}`);
  }
  const docxText = await text(docx.json.uuid);
  assert.match(docxText, /Project Handbook/);
  assert.match(docxText, /First numbered step\./);
  assert.match(docxText, /Epsilon \| 3 \| Purple/);
  const results = await search(bot, "how many Gamma sites were counted?");
  assert.equal(results[0].data_source_uuid, pdf.json.uuid);
  assert.match(results[0].text, /Gamma \| 31 \| Blue/);
});

test("a PowerPoint deck, an Excel workbook and an EPUB book are read: slides with their notes, sheets as rows, chapters in order", async () => {
  const bot = await newChatbot();
  const deck = await upload(worker, key, bot.uuid, { name: "services.pptx", bytes: await fixture("office", "deck.pptx") });
  assert.equal(deck.status, 200, deck.text);
  const book = await upload(worker, key, bot.uuid, { name: "plans.xlsx", bytes: await fixture("office", "book.xlsx") });
  assert.equal(book.status, 200, book.text);
  // A Word document named as a deck is refused when read, saying what it is.
  const misnamed = await upload(worker, key, bot.uuid, { name: "misnamed.pptx", bytes: await fixture("office", "document.docx") });
  assert.equal(misnamed.status, 200, misnamed.text);
  const guide = await upload(worker, key, bot.uuid, { name: "guide.epub", bytes: await fixture("office", "guide.epub") });
  assert.equal(guide.status, 200, guide.text);
  for (const s of [deck.json, book.json, guide.json]) assert.equal((await settled(api, s.uuid)).status, "success");
  const failed = await settled(api, misnamed.json.uuid);
  assert.equal(failed.status, "error");
  assert.match(JSON.parse(failed.meta_json).error, /not a PPTX.*it looks like a Word document/);

  const chunks = async (uuid) => (await worker.sql(`SELECT heading, text FROM chunks WHERE data_source_uuid = '${uuid}' ORDER BY position`))
    .map((c) => `${c.heading}\n${c.text}`).join("\n");
  const deckText = await chunks(deck.json.uuid);
  assert.match(deckText, /Opening hours/);
  assert.match(deckText, /Sunday: closed/);
  assert.match(deckText, /book drop beside the main door is open all night/, "speaker notes are read");
  assert.doesNotMatch(deckText, /Click to add/);
  assert.doesNotMatch(deckText, /Staff rota/, "a hidden slide is not read");
  const bookText = await chunks(book.json.uuid);
  assert.match(bookText, /Family/);
  assert.match(bookText, /2025-01-28/, "a date cell reads as a date");
  assert.match(bookText, /15%/, "a percent cell reads as a percent");
  assert.doesNotMatch(bookText, /x-17/, "a hidden sheet is not read");

  const guideText = await chunks(guide.json.uuid);
  assert.match(guideText, /Bring a proof of address/);
  assert.ok(guideText.indexOf("Joining") < guideText.indexOf("Borrowing"), "chapters in reading order");

  const notes = await search(bot, "is the book drop open at night?");
  assert.equal(notes[0].data_source_uuid, deck.json.uuid);
  const plan = await search(bot, "how much is the Family plan per month?");
  assert.equal(plan[0].data_source_uuid, book.json.uuid);
  assert.match(plan[0].text, /Family/);
  assert.match(plan[0].text, /9\.99/);
  const items = await search(bot, "how many items may a member hold at once?");
  assert.equal(items[0].data_source_uuid, guide.json.uuid);
});

test("UTF-16 text is read as written; another format under a text name fails with the reason", async () => {
  const bot = await newChatbot();
  const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from("Produkt\tPreis\nKaffeebohnen\t5 €\n", "utf16le")]);
  const csv = await upload(worker, key, bot.uuid, { name: "preise.csv", bytes: utf16 });
  assert.equal(csv.status, 200, csv.text);
  assert.equal((await settled(api, csv.json.uuid)).status, "success");
  const [chunk] = await worker.sql(`SELECT text FROM chunks WHERE data_source_uuid = '${csv.json.uuid}'`);
  assert.match(chunk.text, /^Produkt: Kaffeebohnen; Preis: 5 €/);
  const noBom = await upload(worker, key, bot.uuid, { name: "hours.txt", bytes: Buffer.from("Die Bücherei öffnet um neun Uhr.\n", "utf16le") });
  assert.equal((await settled(api, noBom.json.uuid)).status, "success");
  assert.match((await worker.sql(`SELECT text FROM chunks WHERE data_source_uuid = '${noBom.json.uuid}'`))[0].text, /Die Bücherei öffnet um neun Uhr/);
  // UTF-16 of other scripts without a byte order mark, in either byte order.
  for (const [name, text] of [["medved.txt", "Медведь любит малину и мёд в сибирской тайге."], ["tokyo.txt", "東京の猫カフェは午前十時に開店します。"]]) {
    const le = Buffer.from(text, "utf16le");
    for (const [order, bytes] of [["le", le], ["be", Buffer.from(le).swap16()]]) {
      const r = await upload(worker, key, bot.uuid, { name: `${order}-${name}`, bytes });
      assert.equal((await settled(api, r.json.uuid)).status, "success", `${order} ${name}`);
      const [chunk] = await worker.sql(`SELECT text FROM chunks WHERE data_source_uuid = '${r.json.uuid}'`);
      assert.ok(chunk.text.includes(text), chunk.text);
    }
  }
  // UTF-8 with a stray Windows-1252 letter and a last character cut short stays UTF-8.
  const good = Buffer.from("Die Übergrößen für Mäntel sind verfügbar. ".repeat(20));
  const broken = await upload(worker, key, bot.uuid, { name: "sizes.txt", bytes: Buffer.concat([good, Buffer.from([0x53, 0xe9, 0x20]), good, Buffer.from([0xc3])]) });
  assert.equal((await settled(api, broken.json.uuid)).status, "success");
  assert.match((await worker.sql(`SELECT text FROM chunks WHERE data_source_uuid = '${broken.json.uuid}'`))[0].text, /Die Übergrößen für Mäntel/);
  // Pure kana and kanji in Shift_JIS, an even number of bytes: its bytes read as UTF-16
  // ideographs, and it was indexed as nonsense.
  const sjis = Buffer.from("94 7a 91 97 82 c9 82 c2 82 a2 82 c4 81 42 82 b2 92 8d 95 b6 82 cd 8e 4f 93 fa 88 c8 93 e0 82 c9 94 ad 91 97 82 b5 82 dc 82 b7 81 42".split(" ").map((h) => parseInt(h, 16)));
  const shiftJis = await upload(worker, key, bot.uuid, { name: "haiso.txt", bytes: sjis });
  assert.equal(shiftJis.status, 200, shiftJis.text);
  const refused = await settled(api, shiftJis.json.uuid);
  assert.equal(refused.status, "error");
  assert.match(JSON.parse(refused.meta_json).error, /save it as UTF-8/);
  // A short UTF-8 text cut in its last character is still UTF-8.
  const cut = await upload(worker, key, bot.uuid, { name: "menu.txt", bytes: Buffer.concat([Buffer.from("Le café, la crème brûlée et le thé glacé"), Buffer.from([0xc3])]) });
  assert.equal((await settled(api, cut.json.uuid)).status, "success");
  assert.equal((await worker.sql(`SELECT text FROM chunks WHERE data_source_uuid = '${cut.json.uuid}'`))[0].text, "Le café, la crème brûlée et le thé glacé");
  for (const [name, fixtureName, said] of [["report.txt", "document_lo.pdf", /is a PDF/], ["book.csv", "book.xlsx", /ZIP archive/]]) {
    const r = await upload(worker, key, bot.uuid, { name, bytes: await fixture("office", fixtureName) });
    assert.equal(r.status, 200, r.text);
    const failed = await settled(api, r.json.uuid);
    assert.equal(failed.status, "error", name);
    assert.match(JSON.parse(failed.meta_json).error, said);
  }
});

test("OpenDocument text, spreadsheet and presentation uploads are read", async () => {
  const bot = await newChatbot();
  const uploads = {};
  for (const name of ["minutes.odt", "budget.ods", "talk.odp"]) {
    const r = await upload(worker, key, bot.uuid, { name, bytes: await fixture("office", name) });
    assert.equal(r.status, 200, r.text);
    const read = await settled(api, r.json.uuid);
    assert.equal(read.status, "success", name);
    const kind = { odt: "text", ods: "spreadsheet", odp: "presentation" }[name.split(".")[1]];
    assert.equal(JSON.parse(read.meta_json).content_type, `application/vnd.oasis.opendocument.${kind}`);
    uploads[name] = r.json.uuid;
  }
  const text = async (uuid) => (await worker.sql(`SELECT heading, text FROM chunks WHERE data_source_uuid = '${uuid}' ORDER BY position`))
    .map((c) => `${c.heading}\n${c.text}`).join("\n");
  const minutes = await text(uploads["minutes.odt"]);
  assert.match(minutes, /The reading room opens at nine/);
  assert.doesNotMatch(minutes, /reviewer's comment|Footnote text/, "comments and footnotes are left out");
  assert.match(await text(uploads["budget.ods"]), /Chairs/);
  assert.match(await text(uploads["talk.odp"]), /sign-up is online/, "speaker notes are read");
  const votes = await search(bot, "was the paint motion carried?");
  assert.equal(votes[0].data_source_uuid, uploads["minutes.odt"]);
  const prizes = await search(bot, "are there prizes for summer reading?");
  assert.equal(prizes[0].data_source_uuid, uploads["talk.odp"]);
});

test("meta_json sent as a file part is read, its link stored as the address a browser opens", async () => {
  const bot = await newChatbot();
  const send = async (parts) => {
    const form = new FormData();
    form.append("file", new Blob([`Notes ${Math.random()} on the reading room.`], { type: "text/plain" }), "notes.txt");
    for (const [value, fileName] of parts) {
      if (fileName) form.append("meta_json", new Blob([value], { type: "application/json" }), fileName);
      else form.append("meta_json", value);
    }
    const res = await fetch(`${worker.base}/api/v1/chatbot/${bot.uuid}/data-source/upload`, { method: "POST", headers: { Authorization: `Bearer ${key}` }, body: form });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, json: JSON.parse(text) };
  };
  // What `curl -F meta_json=@meta.json` and Python requests' `files=` send.
  const asFile = await send([[JSON.stringify({ reference_source_link: "https:example.com/reading room" }), "meta_json"]]);
  assert.equal(asFile.status, 200, asFile.text);
  assert.equal(JSON.parse(asFile.json.meta_json).reference_source_link, "https://example.com/reading%20room");
  const twice = await send([[JSON.stringify({ reference_source_link: "https://a.example/" })], [JSON.stringify({ reference_source_link: "https://b.example/" })]]);
  expectError(assert, twice, 400, "invalid_request", "meta_json");
  const sources = (await api.get(`/chatbot/${bot.uuid}/data-sources`)).json;
  assert.deepEqual(sources.map((s) => s.uuid), [asFile.json.uuid], "the refused upload stored nothing");
});

test("bad uploads get the contract's error and change nothing", async () => {
  const bot = await newChatbot();
  const ok = await upload(worker, key, bot.uuid, { name: "notes.txt", bytes: Buffer.from("Opening hours are nine to five on weekdays."), type: "text/plain" });
  assert.equal(ok.status, 200);
  await settled(api, ok.json.uuid);
  const before = (await api.get(`/chatbot/${bot.uuid}/data-sources`)).json;
  const objectsBefore = await worker.r2List(`chatbots/${bot.uuid}/`);

  expectError(assert, await upload(worker, key, bot.uuid, { name: "empty.txt", bytes: Buffer.alloc(0) }), 400, "invalid_request", "file");
  expectError(assert, await upload(worker, key, bot.uuid, { name: "photo.png", bytes: Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]), type: "image/png" }), 415, "unsupported_media_type");
  expectError(assert, await upload(worker, key, bot.uuid, { name: "big.txt", bytes: Buffer.alloc(400_000, 97) }), 413, "payload_too_large");
  const again = await upload(worker, key, bot.uuid, { name: "again.txt", bytes: Buffer.from("Opening hours are nine to five on weekdays.") });
  expectError(assert, again, 409, "conflict");
  assert.match(again.json.error.message, new RegExp(`${ok.json.uuid} \\(status success\\)`), "names the source holding the bytes");
  expectError(assert, await upload(worker, key, bot.uuid, { name: "x.txt", bytes: Buffer.from("x"), meta: "{not json" }), 400, "invalid_request", "meta_json");
  const two = new FormData();
  for (const name of ["a.txt", "b.txt"]) two.append("file", new Blob([`Text of ${name}.`], { type: "text/plain" }), name);
  const twoSent = await fetch(`${worker.base}/api/v1/chatbot/${bot.uuid}/data-source/upload`, { method: "POST", headers: { Authorization: `Bearer ${key}` }, body: two });
  const twoText = await twoSent.text();
  expectError(assert, { status: twoSent.status, headers: twoSent.headers, text: twoText, json: JSON.parse(twoText) }, 400, "invalid_request", "file");
  // A name longer than file systems allow (the stored file's metadata holds it).
  expectError(assert, await upload(worker, key, bot.uuid, { name: `${"🤖".repeat(600)}.txt`, bytes: Buffer.from("Long names.") }), 400, "invalid_request", "file");
  expectError(assert, await api.post(`/chatbot/${bot.uuid}/data-source/upload`, { body: { file: "x" } }), 415, "unsupported_media_type");
  // A part named by RFC 5987's `filename*` alone is not a file to the runtime's form reader.
  const boundary = "edgechat-e2e-boundary";
  const starred = await fetch(`${worker.base}/api/v1/chatbot/${bot.uuid}/data-source/upload`, {
    method: "POST",
    headers: { Authorization: `Bearer ${key}`, "Content-Type": `multipart/form-data; boundary=${boundary}` },
    body: `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename*=UTF-8''%E6%97%A5%E6%9C%AC.txt\r\nContent-Type: text/plain\r\n\r\nNihon.\r\n--${boundary}--\r\n`,
  });
  const starredText = await starred.text();
  const starredError = expectError(assert, { status: starred.status, headers: starred.headers, text: starredText, json: JSON.parse(starredText) }, 400, "invalid_request", "file");
  assert.match(starredError.message, /`filename`/);

  assert.deepEqual((await api.get(`/chatbot/${bot.uuid}/data-sources`)).json, before);
  assert.deepEqual(await worker.r2List(`chatbots/${bot.uuid}/`), objectsBefore);
});

test("a file name the form escaped is stored as written", async () => {
  const bot = await newChatbot();
  // The form sends `"` as %22; a `%` of the name's own is kept.
  for (const name of ['we"ird.txt', "%41 percent.txt"]) {
    const r = await upload(worker, key, bot.uuid, { name, bytes: Buffer.from(`The file ${name} has a name of its own.`), type: "text/plain" });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.file_name, name, r.text);
  }
});

test("a corrupt file becomes a source in error that keeps its stored original", async () => {
  const bot = await newChatbot();
  const bad = await upload(worker, key, bot.uuid, { name: "broken.pdf", bytes: Buffer.from("%PDF-1.7\n1 0 obj << /Type /Catalog >> garbage"), type: "application/pdf" });
  assert.equal(bad.status, 200, bad.text);
  const s = await settled(api, bad.json.uuid);
  assert.equal(s.status, "error");
  assert.ok(JSON.parse(s.meta_json).error.length > 10);
  assert.deepEqual(await worker.r2List(`chatbots/${bot.uuid}/`), [`chatbots/${bot.uuid}/sources/${s.uuid}`]);
});

test("retitle, get, list, delete and bulk delete; deletes take chunks, index rows and files", async () => {
  const bot = await newChatbot();
  const a = await addUrl(bot, `${site.base}/returns`);
  const b = (await upload(worker, key, bot.uuid, { name: "b.txt", bytes: Buffer.from("Bananas are yellow and rich in potassium."), type: "text/plain" })).json;
  const c = (await upload(worker, key, bot.uuid, { name: "c.txt", bytes: Buffer.from("Cherries are small red stone fruits."), type: "text/plain" })).json;
  await settled(api, b.uuid);
  await settled(api, c.uuid);

  const re = await api.post(`/data-source/${a.uuid}/update`, { body: { title: "Refund policy" } });
  assert.equal(re.status, 200, re.text);
  assert.equal(re.json.title, "Refund policy");
  assert.ok(re.json.modified_at >= a.modified_at);
  expectError(assert, await api.post(`/data-source/${a.uuid}/update`, { body: { title: "" } }), 400, "invalid_request", "title");
  expectError(assert, await api.post(`/data-source/${a.uuid}/update`, { body: {} }), 400, "invalid_request", "title");
  // Title and refresh in one update; a refresh a file cannot have changes nothing of it.
  const both = await api.post(`/data-source/${a.uuid}/update`, { body: { title: "Refunds", refresh: "weekly" } });
  assert.equal(both.status, 200, both.text);
  const stored = (await api.get(`/data-source/${a.uuid}`)).json;
  assert.equal(stored.title, "Refunds");
  assert.equal(JSON.parse(stored.meta_json).refresh, "weekly");
  const [row] = await worker.sql(`SELECT refresh, next_check_at FROM data_sources WHERE uuid = '${a.uuid}'`);
  assert.equal(row.refresh, "weekly");
  assert.ok(row.next_check_at > stored.modified_at, "the next reading is scheduled");
  expectError(assert, await api.post(`/data-source/${b.uuid}/update`, { body: { title: "Fruit", refresh: "daily" } }), 400, "invalid_request", "refresh");
  assert.equal((await api.get(`/data-source/${b.uuid}`)).json.title, b.title);
  assert.equal((await api.post(`/data-source/${a.uuid}/update`, { body: { title: "Refund policy", refresh: "never" } })).status, 200);
  assert.equal((await worker.sql(`SELECT next_check_at FROM data_sources WHERE uuid = '${a.uuid}'`))[0].next_check_at, null);
  // A re-scrape keeps a title a person chose.
  await api.post("/data-sources/url/re-scrape", { body: { uuids: [a.uuid] } });
  assert.equal((await settled(api, a.uuid)).title, "Refund policy");
  assert.equal((await api.get(`/data-source/${a.uuid}`)).json.title, "Refund policy");
  assert.equal(JSON.parse(re.json.meta_json).title_set, undefined, "the service's own bookkeeping stays in");

  const del = await api.post(`/data-source/${b.uuid}/delete`);
  assert.deepEqual(del.json, { success: true });
  expectError(assert, await api.get(`/data-source/${b.uuid}`), 404, "not_found");
  assert.equal((await search(bot, "bananas potassium")).length, 0);

  expectError(assert, await api.post("/data-sources/delete", { body: { uuids: [a.uuid, "00000000-0000-4000-8000-000000000000"] } }), 404, "not_found");
  assert.equal((await api.get(`/data-source/${a.uuid}`)).status, 200, "a failed bulk delete deletes nothing");
  expectError(assert, await api.post("/data-sources/delete", { body: { uuids: [] } }), 400, "invalid_request", "uuids");
  assert.deepEqual((await api.post("/data-sources/delete", { body: { uuids: [a.uuid, c.uuid] } })).json, { success: true });
  assert.deepEqual((await api.get(`/chatbot/${bot.uuid}/data-sources`)).json, []);

  const rows = await worker.sql(
    `SELECT (SELECT COUNT(*) FROM chunks WHERE chatbot_uuid = '${bot.uuid}') AS chunks, ` +
    `(SELECT COUNT(*) FROM chunks_fts_docsize) - (SELECT COUNT(*) FROM chunks) AS index_drift`,
  );
  assert.deepEqual(rows[0], { chunks: 0, index_drift: 0 });
  assert.deepEqual(await worker.r2List(`chatbots/${bot.uuid}/`), []);
});

test("source tags group sources; bad sources are refused", async () => {
  const bot = await newChatbot();
  const other = await newChatbot("Other");
  const s1 = (await api.post(`/chatbot/${bot.uuid}/data-source/qa`, { body: { question: "One?", answer: "1" } })).json;
  const s2 = (await api.post(`/chatbot/${bot.uuid}/data-source/qa`, { body: { question: "Two?", answer: "2" } })).json;
  const foreign = (await api.post(`/chatbot/${other.uuid}/data-source/qa`, { body: { question: "Three?", answer: "3" } })).json;
  const created = await api.post(`/chatbot/${bot.uuid}/source-tag/create`, { body: { name: "Policies", color: "#3366FF", data_source_uuids: [s1.uuid] } });
  assert.equal(created.status, 200, created.text);
  const tag = created.json;
  assert.deepEqual({ name: tag.name, color: tag.color, data_source_uuids: tag.data_source_uuids }, { name: "Policies", color: "#3366ff", data_source_uuids: [s1.uuid] });
  assert.deepEqual((await api.get(`/data-source/${s1.uuid}`)).json.source_tag_uuids, [tag.uuid]);
  const updated = await api.post(`/source-tag/${tag.uuid}/update`, { body: { name: "FAQ", data_source_uuids: [s1.uuid, s2.uuid] } });
  assert.equal(updated.status, 200, updated.text);
  assert.equal(updated.json.name, "FAQ");
  assert.equal(updated.json.color, "#3366ff");
  assert.deepEqual(updated.json.data_source_uuids.sort(), [s1.uuid, s2.uuid].sort());
  const listed = (await api.get(`/chatbot/${bot.uuid}/source-tags`)).json;
  assert.equal(listed.length, 1);
  assert.deepEqual(listed[0].data_source_uuids.sort(), [s1.uuid, s2.uuid].sort());
  expectError(assert, await api.post(`/source-tag/${tag.uuid}/update`, { body: { data_source_uuids: [foreign.uuid] } }), 400, "invalid_request", "data_source_uuids");
  expectError(assert, await api.post(`/chatbot/${bot.uuid}/source-tag/create`, { body: { name: "x", color: "blue" } }), 400, "invalid_request", "color");
  expectError(assert, await api.post(`/chatbot/${bot.uuid}/source-tag/create`, { body: { color: "#fff" } }), 400, "invalid_request", "name");
  expectError(assert, await api.post(`/source-tag/${tag.uuid}/update`, { body: {} }), 400, "invalid_request", "name");
  // Names are the chatbot's own, whatever their case; another chatbot may use them.
  const twice = await api.post(`/chatbot/${bot.uuid}/source-tag/create`, { body: { name: "faq", color: "#fff" } });
  expectError(assert, twice, 409, "conflict");
  assert.match(twice.json.error.message, /already has a source tag of that name/);
  const second = (await api.post(`/chatbot/${bot.uuid}/source-tag/create`, { body: { name: "Returns", color: "#fff" } })).json;
  expectError(assert, await api.post(`/source-tag/${second.uuid}/update`, { body: { name: "FAQ" } }), 409, "conflict");
  assert.equal((await api.post(`/source-tag/${second.uuid}/update`, { body: { name: "RETURNS", color: "#000" } })).status, 200, "its own name in another case");
  assert.equal((await api.post(`/chatbot/${other.uuid}/source-tag/create`, { body: { name: "FAQ", color: "#fff" } })).status, 200);
  // Case is compared in every script, not only A to Z.
  const summer = (await api.post(`/chatbot/${other.uuid}/source-tag/create`, { body: { name: "Été", color: "#fff" } })).json;
  expectError(assert, await api.post(`/chatbot/${other.uuid}/source-tag/create`, { body: { name: "été", color: "#fff" } }), 409, "conflict");
  expectError(assert, await api.post(`/chatbot/${other.uuid}/source-tag/create`, { body: { name: "ÉTÉ", color: "#fff" } }), 409, "conflict");
  const greek = (await api.post(`/chatbot/${other.uuid}/source-tag/create`, { body: { name: "Σημειώσεις", color: "#fff" } })).json;
  expectError(assert, await api.post(`/source-tag/${greek.uuid}/update`, { body: { name: "ÉTÉ" } }), 409, "conflict");
  assert.equal((await api.post(`/source-tag/${summer.uuid}/update`, { body: { name: "ÉTÉ" } })).status, 200, "its own name in another case");
  assert.deepEqual((await api.del(`/source-tag/${second.uuid}/delete`)).json, { success: true });
  assert.deepEqual((await api.get(`/chatbot/${bot.uuid}/source-tags`)).json, listed, "refused updates change nothing");
  assert.deepEqual((await api.del(`/source-tag/${tag.uuid}/delete`)).json, { success: true });
  expectError(assert, await api.del(`/source-tag/${tag.uuid}/delete`), 404, "not_found");
  assert.deepEqual((await api.get(`/data-source/${s1.uuid}`)).json.source_tag_uuids, []);
});

test("an agent draws only on its own sources unless it uses all of them", async () => {
  const bot = await newChatbot();
  const ship = await addUrl(bot, `${site.base}/shipping`);
  const ret = await addUrl(bot, `${site.base}/returns`);
  const agent = (await api.post(`/chatbot/${bot.uuid}/agent/create`, { body: { name: "Returns desk", type: "user-facing", data_source_uuids: [ret.uuid], enabled: true } })).json;
  assert.equal(agent.meta.use_all_sources, false);
  const onlyReturns = await search(bot, "express delivery cost refund", { agent_uuid: agent.uuid, limit: 10 });
  assert.ok(onlyReturns.length > 0);
  assert.ok(onlyReturns.every((r) => r.data_source_uuid === ret.uuid));
  const everything = await search(bot, "express delivery cost refund", { limit: 10 });
  assert.ok(everything.some((r) => r.data_source_uuid === ship.uuid));
  expectError(assert, await api.post(`/agent/${agent.uuid}/update`, { body: { data_source_uuids: ["00000000-0000-4000-8000-000000000000"] } }), 400, "invalid_request", "data_source_uuids");
  // Deleting a source drops it from the agents that named it.
  await api.post(`/data-source/${ret.uuid}/delete`);
  const [, desk] = (await api.get(`/chatbot/${bot.uuid}/agents`)).json;
  assert.deepEqual(desk.data_source_uuids, []);
});

test("deleting a chatbot removes its sources, chunks, index rows, tags and files", async () => {
  const bot = await newChatbot();
  const s = await addUrl(bot, `${site.base}/warranty`);
  const f = (await upload(worker, key, bot.uuid, { name: "w.txt", bytes: Buffer.from("Warranty claims need photos."), type: "text/plain" })).json;
  await settled(api, f.uuid);
  await api.post(`/chatbot/${bot.uuid}/source-tag/create`, { body: { name: "t", color: "#000", data_source_uuids: [s.uuid] } });
  assert.equal((await worker.r2List(`chatbots/${bot.uuid}/`)).length, 1);
  assert.deepEqual((await api.del(`/chatbot/${bot.uuid}/delete`)).json, { success: true });
  const rows = await worker.sql(
    `SELECT (SELECT COUNT(*) FROM data_sources WHERE chatbot_uuid = '${bot.uuid}') AS sources, ` +
    `(SELECT COUNT(*) FROM chunks WHERE chatbot_uuid = '${bot.uuid}') AS chunks, ` +
    `(SELECT COUNT(*) FROM source_tags WHERE chatbot_uuid = '${bot.uuid}') AS tags, ` +
    // Links left without their tag or their source (other tests' chatbots keep theirs).
    `(SELECT COUNT(*) FROM data_source_tags l WHERE NOT EXISTS (SELECT 1 FROM source_tags t WHERE t.uuid = l.source_tag_uuid) ` +
    `OR NOT EXISTS (SELECT 1 FROM data_sources d WHERE d.uuid = l.data_source_uuid)) AS links, ` +
    `(SELECT COUNT(*) FROM chunks_fts_docsize) - (SELECT COUNT(*) FROM chunks) AS index_drift`,
  );
  assert.deepEqual(rows[0], { sources: 0, chunks: 0, tags: 0, links: 0, index_drift: 0 });
  assert.deepEqual(await worker.r2List(`chatbots/${bot.uuid}/`), []);
});

test("private and loopback addresses are refused without ALLOW_PRIVATE_URLS, and nothing is stored", async () => {
  const { worker: strict, api: a } = await startAccount({ vars: { ALLOW_PRIVATE_URLS: "false" } });
  try {
    const bot = await createChatbot(a, { name: "Strict" });
    const requestsBefore = site.requests.length;
    for (const url of [`${site.base}/shipping`, "http://localhost:8080/", "http://169.254.169.254/latest/meta-data/", "http://10.0.0.5/", "http://[::1]/"]) {
      const r = await a.post(`/chatbot/${bot.uuid}/data-source/url`, { body: { url } });
      const err = expectError(assert, r, 400, "invalid_request", "url");
      assert.match(err.message, /private|loopback|link-local/, url);
    }
    assert.deepEqual((await a.get(`/chatbot/${bot.uuid}/data-sources`)).json, []);
    await sleep(200);
    assert.equal(site.requests.length, requestsBefore, "the refused page was never fetched");
  } finally {
    await strict.dispose();
  }
});

test("the scheduled handler fails sources whose reader was cut off and removes orphan files", async () => {
  const bot = await newChatbot();
  const stuck = (await api.post(`/chatbot/${bot.uuid}/data-source/qa`, { body: { question: "Stuck?", answer: "Maybe." } })).json;
  await worker.sql(`UPDATE data_sources SET status = 'running', modified_at = '2020-01-01T00:00:00Z' WHERE uuid = '${stuck.uuid}'`);
  const kept = (await upload(worker, key, bot.uuid, { name: "kept.txt", bytes: Buffer.from("This file keeps its record."), type: "text/plain" })).json;
  const orphan = (await upload(worker, key, bot.uuid, { name: "orphan.txt", bytes: Buffer.from("This file loses its record."), type: "text/plain" })).json;
  await settled(api, kept.uuid);
  await settled(api, orphan.uuid);
  // A delete cut off between D1 and R2 leaves the object without its row.
  await worker.sql(`DELETE FROM data_sources WHERE uuid = '${orphan.uuid}'`);
  await worker.runScheduled();
  const s = (await api.get(`/data-source/${stuck.uuid}`)).json;
  assert.equal(s.status, "error");
  assert.match(JSON.parse(s.meta_json).error, /interrupted/);
  assert.deepEqual(await worker.r2List(`chatbots/${bot.uuid}/`), [`chatbots/${bot.uuid}/sources/${kept.uuid}`]);
});
