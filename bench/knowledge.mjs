// Knowledge benchmark: retrieval latency of `POST /chatbot/{uuid}/search` at 1k, 10k and 100k
// chunks in one chatbot (with a second chatbot holding other data in the same database), and
// ingestion throughput of text and PDF uploads. Runs the built Worker in wrangler's local runtime
// through the end-to-end harness, talks only to 127.0.0.1, and writes
// bench-output/knowledge.json. Run it with `make bench-knowledge`.
//
// The text is real prose found on the machine (GNU info manuals, Git's documentation, the
// licenses in /usr/share/common-licenses, man pages, Python's stdlib docstrings), so term
// statistics are natural. Uploads seed what uploads can in reasonable time; the larger levels
// are seeded with generated INSERTs into `chunks` run by `wrangler d1 execute --file`, which the
// FTS5 triggers index exactly as they index the Worker's own inserts.
//
// Environment: BENCH_LEVELS (default "1000,10000,100000"), BENCH_OTHER_CHUNKS (10000),
// BENCH_REQUESTS (200), BENCH_WARMUP (50), BENCH_INSPECTOR (1: plain `wrangler dev`, with the
// DevTools inspector), BENCH_OUTPUT (bench-output).
import { execFile, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { cp, lstat, mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { gunzipSync } from "node:zlib";
import { startWorker, benchWorkerOptions, client, upload, sleep, ROOT } from "../tests/e2e/harness.mjs";
import { largePdf, largeText } from "../tests/e2e/large_docs.mjs";

const execFileAsync = promisify(execFile);
const WRANGLER = path.join(ROOT, "node_modules/.bin/wrangler");
const OUT = path.resolve(ROOT, process.env.BENCH_OUTPUT ?? "bench-output");

export const intList = (v, d) => (v ? v.split(",").map((x) => Number(x.trim())).filter((n) => n > 0) : d);
const CONFIG = {
  levels: intList(process.env.BENCH_LEVELS, [1000, 10000, 100000]).sort((a, b) => a - b),
  otherChunks: Number(process.env.BENCH_OTHER_CHUNKS ?? 10000),
  requests: Number(process.env.BENCH_REQUESTS ?? 200),
  answers: Number(process.env.BENCH_ANSWERS ?? 60),
  warmup: Number(process.env.BENCH_WARMUP ?? 50),
  // Text uploads that seed the first level (bytes); the rest of that level comes from SQL.
  handbookUploadBytes: 450_000,
  // Ingestion batches, uploaded to the other chatbot.
  textFiles: 12,
  textFileBytes: 300_000,
  pdfFiles: 8,
  pdfSourceBytes: 250_000,
  uploadConcurrency: 4,
  ingestTimeoutMs: 240_000,
  searchLimit: 5,
};

const T0 = performance.now();
const elapsed = () => ((performance.now() - T0) / 1000).toFixed(1).padStart(6);
const log = (msg) => console.log(`[${elapsed()}s] ${msg}`);

// ---------------------------------------------------------------------------------------------
// Queries: fixed, phrased the way people ask, about what the handbook chatbot holds.

export const QUERIES = [
  "how do I sort a file numerically by the second column",
  "remove duplicate lines from sorted input",
  "find files modified in the last seven days",
  "delete files older than thirty days with find",
  "search recursively for a pattern ignoring case",
  "print only the matching part of each line",
  "replace every occurrence of a word in place with sed",
  "delete blank lines from a file",
  "compress a file with the maximum compression level",
  "decompress a bzip2 archive and keep the original",
  "compare two directories recursively and show the differences",
  "create a unified diff patch",
  "copy a directory preserving permissions and timestamps",
  "what is the difference between hard links and symbolic links",
  "change file permissions recursively for a directory tree",
  "show disk usage of each subdirectory in human readable sizes",
  "split a large file into pieces of a fixed size",
  "count lines, words and bytes in a file",
  "resume an interrupted download with wget",
  "mirror a website recursively without ascending to the parent directory",
  "verify a detached signature of a downloaded file",
  "generate a new OpenPGP key pair",
  "export a public key in ASCII armor",
  "encrypt a file for a recipient",
  "translate program messages with gettext catalogs",
  "arbitrary precision arithmetic with scale in bc",
  "measure the elapsed time and memory of a command",
  "undo the last commit but keep the changes",
  "rebase a topic branch onto the updated main branch",
  "how do I resolve a merge conflict?",
  "temporarily stash uncommitted changes",
  "cherry-pick a commit from another branch",
  "find which commit introduced a bug with bisect",
  "configure the user name and email for commits",
  "push a new branch to a remote repository and track it",
  "rewrite history to remove a file from every commit",
  "sign a tag with a GPG key",
  "can I distribute modified copies of GPL software?",
  "is there any warranty for the program",
  "patent license granted by contributors under the Apache license",
  "conditions for redistribution in binary form",
  "readline key bindings for moving the cursor by word",
  "edit the command history in vi mode",
  "regular expression back-references and extended syntax",
  "date formatting options and time zones",
  "checksum a file with sha256 and verify the list",
  "hash functions and message authentication codes in nettle",
  "terminate a process with a signal after a timeout",
  "environment variables that change the locale and collation order",
  "tee output to a file and the terminal at the same time",
];

// The Worker turns a question into FTS5 phrases (crates/core/src/knowledge/query.rs); the same rules are
// applied here, with the stop words and limits read from that file, to time the SQL on its own.
async function ftsRules() {
  const src = await readFile(path.join(ROOT, "crates/core/src/knowledge/query.rs"), "utf8");
  const block = src.slice(src.indexOf("const STOP_WORDS"), src.indexOf("];", src.indexOf("const STOP_WORDS")));
  const stop = new Set([...block.matchAll(/"([^"]+)"/g)].map((m) => m[1]));
  const max = Number(/MAX_QUERY_TERMS: usize = (\d+)/.exec(src)?.[1] ?? 16);
  const budgetText = /CANDIDATE_BUDGET: u64 = ([\d_]+)/.exec(src)?.[1];
  if (!budgetText) throw new Error("CANDIDATE_BUDGET not found in crates/core/src/knowledge/query.rs");
  const budget = Number(budgetText.replace(/_/g, ""));
  const words = (text) => {
    const out = [];
    let cur = "";
    for (const ch of text) {
      if (/[\p{L}\p{N}]/u.test(ch)) cur += ch.toLowerCase();
      else if ((ch === "'" || ch === "\u2019") && cur) continue;
      else if (cur) { out.push(cur); cur = ""; }
    }
    if (cur) out.push(cur);
    return out;
  };
  const phrases = (query) => {
    const all = words(query);
    let terms = [...new Set(all.filter((w) => !stop.has(w)))];
    if (terms.length === 0) terms = [...new Set(all)];
    return terms.slice(0, max).map((t) => `"${t}"`);
  };
  return { phrases, budget };
}

// What the Worker runs for one question (`Store::chunk_search_statement`, 40 candidates, no
// agent filter): one statement that counts the phrases, chooses the gated expression and
// searches with it. `gatedExpression` is its first part alone.
const CANDIDATES = 40;
function gateCtes(phrases, budget) {
  return (
    `WITH p AS MATERIALIZED (SELECT key, value, CASE WHEN json_array_length(${lit(JSON.stringify(phrases))}) > 1 ` +
    "THEN (SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH value) ELSE 0 END AS n " +
    `FROM json_each(${lit(JSON.stringify(phrases))})), ` +
    "g AS MATERIALIZED (SELECT value, ROW_NUMBER() OVER w AS place, SUM(n) OVER w AS total FROM p " +
    "WINDOW w AS (ORDER BY n, key ROWS UNBOUNDED PRECEDING)), " +
    "every AS (SELECT group_concat(value, ' OR ') AS e FROM (SELECT value FROM p)), " +
    `m AS MATERIALIZED (SELECT CASE WHEN (SELECT SUM(n) FROM p) > ${budget} ` +
    `THEN '(' || (SELECT group_concat(value, ' OR ') FROM g WHERE place = 1 OR total <= ${budget}) || ') AND (' || e || ')' ` +
    "ELSE e END AS expression FROM every) "
  );
}
function gatedExpression(phrases, budget) {
  return `${gateCtes(phrases, budget)} SELECT expression FROM m`;
}
function searchSql(botUuid, phrases, budget) {
  return (
    gateCtes(phrases, budget) +
    "SELECT c.id, c.data_source_uuid, c.position, c.heading, c.text, c.tokens, " +
    "s.type AS source_type, s.title, s.file_name, s.meta_json, best.rank " +
    "FROM (SELECT * FROM (SELECT chunks_fts.rowid AS id, bm25(chunks_fts, 3.0, 1.0) AS rank " +
    "FROM chunks_fts JOIN chunks k INDEXED BY chunks_by_id_chatbot ON k.id = chunks_fts.rowid " +
    `WHERE chunks_fts MATCH (SELECT expression FROM m) AND k.chatbot_uuid = ${lit(botUuid)} ORDER BY rank LIMIT ${CANDIDATES})) best ` +
    "JOIN chunks c ON c.id = best.id JOIN data_sources s ON s.uuid = c.data_source_uuid ORDER BY best.rank"
  );
}

// ---------------------------------------------------------------------------------------------
// Corpus: real prose from the machine, in two groups, one per chatbot.

const clean = (s) => s.replace(/\r/g, "").replace(/.\x08/g, "").replace(/[\x00-\x08\x0b\x0c\x0e-\x1f]/g, "");

async function files(dir, filter) {
  try {
    const names = (await readdir(dir)).sort();
    const out = [];
    for (const n of names) {
      const p = path.join(dir, n);
      const st = await lstat(p);
      if (st.isFile() && filter(n, st)) out.push(p);
    }
    return out;
  } catch {
    return [];
  }
}

async function infoManuals() {
  const docs = [];
  for (const p of await files("/usr/share/info", (n) => /\.info(-\d+)?\.gz$/.test(n))) {
    const raw = gunzipSync(await readFile(p)).toString("utf8");
    const manual = path.basename(p).replace(/\.info.*$/, "");
    const nodes = raw.split("\x1f").slice(1);
    const sections = [];
    for (const node of nodes) {
      const m = /^\s*File: [^,]+,\s+Node: ([^,\n]+)/.exec(node);
      if (!m) continue;
      const body = clean(node.slice(node.indexOf("\n", node.indexOf("Node:")) + 1));
      if (body.trim().length > 200) sections.push({ heading: `${manual} > ${m[1].trim()}`, text: body });
    }
    if (sections.length) docs.push({ title: `GNU ${manual} manual`, origin: "info", sections });
  }
  return docs;
}

async function plainFiles(dir, filter, origin, titleOf) {
  const docs = [];
  for (const p of await files(dir, filter)) {
    const text = clean(await readFile(p, "utf8"));
    if (text.trim().length > 2000) docs.push({ title: titleOf(p), origin, sections: [{ heading: titleOf(p), text }] });
  }
  return docs;
}

async function manPages(limit = 150) {
  const picked = [];
  for (const sec of ["man1", "man5", "man8"]) {
    for (const p of await files(`/usr/share/man/${sec}`, (n, st) => n.endsWith(".gz") && st.size > 8000 && !/^(gcloud|git)/.test(n))) picked.push(p);
  }
  const chosen = picked.slice(0, limit);
  const docs = [];
  let next = 0;
  const worker = async () => {
    while (next < chosen.length) {
      const p = chosen[next++];
      try {
        const { stdout } = await execFileAsync("man", ["-l", "-P", "cat", p], {
          env: { ...process.env, MANWIDTH: "100", MAN_KEEP_FORMATTING: "" },
          maxBuffer: 16 << 20,
          timeout: 20_000,
        });
        const name = path.basename(p).replace(/\.gz$/, "");
        const text = clean(stdout).replace(/(\w)\u2010\n\s*/g, "$1");
        if (text.length > 2000) docs.push({ title: `${name} manual page`, origin: "man", sections: [{ heading: name, text }] });
      } catch { /* man missing or a page that does not render: skip it */ }
    }
  };
  await Promise.all([worker(), worker()]);
  return docs.sort((a, b) => a.title.localeCompare(b.title));
}

async function pythonDocstrings() {
  const script = `
import ast, json, os, sysconfig
root = sysconfig.get_paths()["stdlib"]
skip = {"site-packages", "test", "idlelib", "lib2to3", "tkinter", "turtledemo", "ensurepip"}
docs = []
for dp, dns, fns in os.walk(root):
    rel = os.path.relpath(dp, root).split(os.sep)
    if rel[0] in skip or rel[0].startswith("config-") or "__pycache__" in rel or "tests" in rel:
        dns[:] = []
        continue
    dns.sort()
    for f in sorted(fns):
        if not f.endswith(".py"):
            continue
        try:
            tree = ast.parse(open(os.path.join(dp, f), encoding="utf-8").read())
        except Exception:
            continue
        parts = []
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                d = ast.get_docstring(node)
                if d and len(d) > 120:
                    parts.append(d)
        if parts:
            mod = os.path.join(*[p for p in rel if p != "."], f[:-3]) if rel != ["."] else f[:-3]
            docs.append({"title": "Python " + mod.replace(os.sep, "."), "text": "\\n\\n".join(parts)})
print(json.dumps(docs))
`;
  try {
    const { stdout } = await execFileAsync("python3", ["-c", script], { maxBuffer: 256 << 20, timeout: 120_000 });
    return JSON.parse(stdout)
      .filter((d) => d.text.length > 2000)
      .map((d) => ({ title: `${d.title} docstrings`, origin: "python", sections: [{ heading: d.title, text: clean(d.text) }] }));
  } catch {
    return [];
  }
}

const paragraphsOf = (text) =>
  text.split(/\n[ \t]*\n/).map((p) => p.replace(/\s+/g, " ").trim()).filter((p) => p.split(" ").length >= 6);

export async function gatherCorpus() {
  const [info, git, licenses, man, python] = await Promise.all([
    infoManuals(),
    plainFiles("/usr/share/doc/git-doc", (n, st) => n.endsWith(".txt") && st.size > 4000, "git-doc", (p) => `Git: ${path.basename(p, ".txt")}`),
    plainFiles("/usr/share/common-licenses", () => true, "license", (p) => `License: ${path.basename(p)}`),
    manPages(),
    pythonDocstrings(),
  ]);
  const group = (docs) => {
    for (const d of docs) {
      d.text = d.sections.map((s) => s.text).join("\n\n");
      d.paragraphs = d.sections.flatMap((s) => paragraphsOf(s.text).map((p) => ({ heading: s.heading, text: p })));
    }
    return docs.filter((d) => d.paragraphs.length >= 3);
  };
  // The handbook chatbot (the one measured) holds manuals, Git's docs and licenses; the other
  // chatbot holds man pages and Python docstrings. They share much vocabulary, so the filter
  // by chatbot has real work to do.
  const handbook = group([...licenses, ...info, ...git]);
  const other = group([...man, ...python]);
  const size = (docs) => docs.reduce((n, d) => n + Buffer.byteLength(d.text), 0);
  const origins = (docs) => Object.fromEntries([...new Set(docs.map((d) => d.origin))].map((o) => [o, docs.filter((d) => d.origin === o).length]));
  if (size(handbook) < 200_000 || size(other) < 200_000) {
    throw new Error("too little prose on this machine (need info manuals or man pages, and Python)");
  }
  return {
    handbook,
    other,
    summary: {
      handbook: { documents: handbook.length, bytes: size(handbook), origins: origins(handbook) },
      other: { documents: other.length, bytes: size(other), origins: origins(other) },
    },
  };
}

// A deterministic generator, so every run seeds the same text.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Whole paragraphs of `doc` from the start, up to about `bytes`. */
function excerpt(doc, bytes) {
  const out = [];
  let n = 0;
  for (const s of doc.sections) {
    for (const p of s.text.split(/\n[ \t]*\n/)) {
      if (n >= bytes) break;
      out.push(p);
      n += Buffer.byteLength(p) + 2;
    }
  }
  return out.join("\n\n").trim() + "\n";
}

// ---------------------------------------------------------------------------------------------
// SQL seeding.

const lit = (s) => `'${String(s).replace(/'/g, "''")}'`;
const wranglerEnv = {
  ...process.env,
  WRANGLER_SEND_METRICS: "false",
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
  XDG_CONFIG_HOME: path.join(process.env.E2E_OUTPUT ?? path.join(ROOT, "test-output"), "xdg"),
};

async function d1(worker, args) {
  // The running Worker may hold a write for a moment (a message being stored after its
  // answer): a second SQLite connection then sees SQLITE_BUSY, so it tries again.
  for (let attempt = 1; ; attempt++) {
    try {
      return await execFileAsync(WRANGLER, ["d1", "execute", "DB", "--local", "--persist-to", worker.stateDir, ...args], {
        cwd: ROOT,
        env: wranglerEnv,
        maxBuffer: 256 << 20,
      });
    } catch (err) {
      if (attempt >= 5 || !/SQLITE_BUSY|database is locked/.test(String(err.stderr ?? err))) throw err;
      await new Promise((r) => setTimeout(r, 500 * attempt));
    }
  }
}

/**
 * Writes INSERTs for `count` chunks of `botUuid` made from `docs`: windows of consecutive
 * paragraphs (75-125 words, about the 750 characters the Worker's chunks hold on average)
 * starting at random
 * places, grouped in sources of 500 chunks, each source titled after the document it draws on.
 */
function seedStatements(botUuid, docs, count, seed, label) {
  const rand = rng(seed);
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const statements = [];
  let rows = [];
  let rowBytes = 0;
  const flush = () => {
    if (!rows.length) return;
    statements.push(`INSERT INTO chunks (data_source_uuid, chatbot_uuid, position, heading, text, tokens) VALUES ${rows.join(",\n")};`);
    rows = [];
    rowBytes = 0;
  };
  let bytes = 0;
  for (let made = 0, src = 0; made < count; src++) {
    const doc = docs[Math.floor(rand() * docs.length)];
    const sourceUuid = `bench-${label}-${String(src).padStart(5, "0")}`;
    const inSource = Math.min(500, count - made);
    flush();
    statements.push(
      "INSERT INTO data_sources (uuid, chatbot_uuid, type, title, file_name, file_size, tokens, status, meta_json, created_at, modified_at) VALUES " +
      `(${lit(sourceUuid)}, ${lit(botUuid)}, 'file', ${lit(`${doc.title} (${label} copy ${src})`)}, ${lit(`${sourceUuid}.txt`)}, 0, 0, 'success', '{"content_type":"text/plain"}', ${lit(now)}, ${lit(now)});`,
    );
    let at = Math.floor(rand() * doc.paragraphs.length);
    for (let position = 0; position < inSource; position++) {
      const target = 75 + Math.floor(rand() * 50);
      const parts = [];
      let words = 0;
      let heading = doc.paragraphs[at % doc.paragraphs.length].heading;
      while (words < target) {
        const p = doc.paragraphs[at % doc.paragraphs.length];
        const w = p.text.split(" ");
        const take = w.slice(0, Math.min(w.length, 200 - words));
        parts.push(take.join(" "));
        words += take.length;
        at++;
      }
      // Neighbouring chunks overlap by a paragraph now and then, as the chunker's overlap does.
      if (rand() < 0.2) at--;
      const text = parts.join("\n\n");
      const tokens = Math.round(text.length / 4.4);
      const row = `(${lit(sourceUuid)}, ${lit(botUuid)}, ${position}, ${lit(heading)}, ${lit(text)}, ${tokens})`;
      // D1 refuses statements over 100 KB.
      if (rowBytes + row.length > 80_000) flush();
      rows.push(row);
      rowBytes += row.length;
      bytes += Buffer.byteLength(text);
      made++;
    }
    flush();
    statements.push(
      `UPDATE data_sources SET tokens = (SELECT COALESCE(SUM(tokens), 0) FROM chunks WHERE data_source_uuid = ${lit(sourceUuid)}) WHERE uuid = ${lit(sourceUuid)};`,
    );
  }
  return { statements, bytes };
}

export async function seedBySql(worker, botUuid, docs, count, seed, label) {
  if (count <= 0) return null;
  const t = performance.now();
  const { statements, bytes } = seedStatements(botUuid, docs, count, seed, label);
  // Files of at most ~20k chunks each, so progress shows and no single file is huge.
  const perFile = 20_000;
  const groups = [];
  let current = [];
  let rowsInFile = 0;
  for (const s of statements) {
    current.push(s);
    if (s.startsWith("INSERT INTO chunks")) rowsInFile += (s.match(/\),\n\(/g)?.length ?? 0) + 1;
    if (rowsInFile >= perFile && s.startsWith("UPDATE")) {
      groups.push(current);
      current = [];
      rowsInFile = 0;
    }
  }
  if (current.length) groups.push(current);
  await mkdir(path.join(OUT, "tmp"), { recursive: true });
  let done = 0;
  for (const [i, g] of groups.entries()) {
    const file = path.join(OUT, "tmp", `seed-${label}-${i}.sql`);
    await writeFile(file, g.join("\n") + "\n");
    await d1(worker, ["--file", file, "--yes"]);
    await rm(file, { force: true });
    done += g.filter((s) => s.startsWith("INSERT INTO chunks")).reduce((n, s) => n + (s.match(/\),\n\(/g)?.length ?? 0) + 1, 0);
    log(`  ${label}: ${done}/${count} chunks inserted by SQL`);
  }
  return { chunks: count, text_bytes: bytes, seconds: round((performance.now() - t) / 1000, 1) };
}

export async function chunkCounts(worker, bots) {
  const rows = await worker.sql("SELECT chatbot_uuid, COUNT(*) AS n FROM chunks GROUP BY chatbot_uuid");
  const by = Object.fromEntries(rows.map((r) => [r.chatbot_uuid, r.n]));
  return Object.fromEntries(Object.entries(bots).map(([k, b]) => [k, by[b.uuid] ?? 0]));
}

// ---------------------------------------------------------------------------------------------
// Uploads.

async function pool(items, n, fn) {
  const results = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await fn(items[i], i);
      }
    }),
  );
  return results;
}

/**
 * Uploads `files` to `bot` and waits for every source to settle. Time runs from the first
 * upload to the poll that sees the last source settled (polls every 50 ms).
 */
export async function ingest(worker, key, api, bot, files, label) {
  const bytes = files.reduce((n, f) => n + f.bytes.length, 0);
  // A Worker started by another checkout's harness may not collect its steps.
  const stepsBefore = worker.ingestionSteps?.length ?? 0;
  log(`  ${label}: uploading ${files.length} files, ${(bytes / 1e6).toFixed(2)} MB`);
  const t0 = performance.now();
  const uuids = await pool(files, CONFIG.uploadConcurrency, async (f) => {
    const r = await upload(worker, key, bot.uuid, f);
    if (r.status !== 200) throw new Error(`upload of ${f.name} failed: ${r.status} ${r.text}`);
    return r.json.uuid;
  });
  const uploaded = performance.now();
  const pending = new Set(uuids);
  const statuses = {};
  const deadline = Date.now() + CONFIG.ingestTimeoutMs;
  let settledAt = uploaded;
  while (pending.size) {
    if (Date.now() > deadline) throw new Error(`${label}: ${pending.size} sources still not read after ${CONFIG.ingestTimeoutMs} ms`);
    const r = await api.get(`/chatbot/${bot.uuid}/data-sources`);
    if (r.status !== 200) throw new Error(`listing sources: ${r.status} ${r.text}`);
    const list = Array.isArray(r.json) ? r.json : r.json.data_sources ?? r.json.results ?? r.json.items ?? [];
    for (const s of list) {
      if (pending.has(s.uuid) && ["success", "error"].includes(s.status)) {
        pending.delete(s.uuid);
        statuses[s.uuid] = s;
        settledAt = performance.now();
      }
    }
    if (pending.size) await sleep(50);
  }
  const errors = Object.values(statuses).filter((s) => s.status === "error");
  const seconds = (settledAt - t0) / 1000;
  const okBytes = files.filter((_, i) => statuses[uuids[i]].status === "success").reduce((n, f) => n + f.bytes.length, 0);
  const result = {
    files: files.length,
    bytes,
    seconds: round(seconds, 2),
    upload_seconds: round((uploaded - t0) / 1000, 2),
    mb_per_s: round(okBytes / 1e6 / seconds, 3),
    tokens: Object.values(statuses).reduce((n, s) => n + (s.tokens ?? 0), 0),
    errors: errors.map((s) => `${s.file_name}: ${s.meta?.error ?? "error"}`),
    steps: stepFigures((worker.ingestionSteps ?? []).slice(stepsBefore)),
  };
  log(`  ${label}: ${result.mb_per_s} MB/s (${(bytes / 1e6).toFixed(2)} MB in ${result.seconds} s, ${errors.length} errors)`);
  return { ...result, uuids };
}

/** Per step kind: how many ran, and the most D1 calls, subrequests and both together in one. */
function stepFigures(steps) {
  const byKind = {};
  for (const s of steps) {
    const k = (byKind[s.step] ??= { count: 0, max_d1_calls: 0, max_subrequests: 0, max_calls: 0, max_ms: 0, max_wasm_memory_bytes: 0 });
    k.count++;
    k.max_d1_calls = Math.max(k.max_d1_calls, s.d1_calls);
    k.max_subrequests = Math.max(k.max_subrequests, s.subrequests);
    k.max_calls = Math.max(k.max_calls, s.d1_calls + s.subrequests);
    k.max_ms = Math.max(k.max_ms, s.duration_ms);
    k.max_wasm_memory_bytes = Math.max(k.max_wasm_memory_bytes, s.wasm_memory_bytes ?? 0);
  }
  const all = Object.values(byKind);
  return {
    count: steps.length,
    max_calls: all.reduce((m, k) => Math.max(m, k.max_calls), 0),
    max_d1_calls: all.reduce((m, k) => Math.max(m, k.max_d1_calls), 0),
    d1_calls_per_step: steps.length ? round(steps.reduce((n, s) => n + s.d1_calls, 0) / steps.length, 2) : null,
    max_wasm_memory_bytes: all.reduce((m, k) => Math.max(m, k.max_wasm_memory_bytes), 0),
    by_kind: byKind,
  };
}

/**
 * Plain-text files of about `bytes` each, made by joining whole documents (and cutting the
 * last one at a paragraph), the way a handbook compiled from several manuals would read.
 */
function bundles(docs, count, bytes) {
  const out = [];
  let i = 0;
  while (out.length < count && i < docs.length) {
    const parts = [];
    let size = 0;
    while (size < bytes && i < docs.length) {
      const d = docs[i++];
      const body = excerpt(d, bytes - size);
      parts.push({ title: d.title, body });
      size += Buffer.byteLength(body);
    }
    const title = parts.length > 1 ? `${parts[0].title} and ${parts.length - 1} more` : parts[0].title;
    const text = parts.map((p) => (parts.length > 1 ? `${p.title}\n\n${p.body}` : p.body)).join("\n\n");
    out.push({ title, text, name: `${title.replace(/[^A-Za-z0-9]+/g, "-").toLowerCase().replace(/-+$/, "")}` });
  }
  return out;
}

/**
 * The upload batches ingestion is measured with: text files bundled from the other chatbot's
 * documents, and PDFs typeset from the next ones (so the two hold different text) beside the
 * fixture PDFs. The same files every run.
 */
export async function ingestionFiles(corpus) {
  const shuffled = [...corpus.other];
  const rand = rng(11);
  for (let i = shuffled.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [shuffled[i], shuffled[j]] = [shuffled[j], shuffled[i]];
  }
  const textDocs = [];
  let textBytes = 0;
  while (shuffled.length && textBytes < CONFIG.textFiles * CONFIG.textFileBytes) {
    const d = shuffled.shift();
    textDocs.push(d);
    textBytes += Buffer.byteLength(d.text);
  }
  const textFiles = bundles(textDocs, CONFIG.textFiles, CONFIG.textFileBytes).map((b) => ({
    name: `${b.name}.txt`, bytes: Buffer.from(b.text), type: "text/plain",
  }));
  return { textFiles, pdfs: await makePdfs(shuffled) };
}

async function makePdfs(docs) {
  const jobs = bundles(docs, CONFIG.pdfFiles, CONFIG.pdfSourceBytes).map((b) => {
    const hash = createHash("sha256").update(b.title + b.text).digest("hex").slice(0, 12);
    return { name: `${b.name}-${hash}.pdf`, title: b.title, text: b.text };
  });
  const out = path.join(OUT, "pdf");
  const generated = await new Promise((resolve) => {
    const child = spawn("python3", [path.join(ROOT, "bench/make_pdfs.py")], { stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", () => resolve({ paths: [], note: "python3 not found" }));
    // A script that exits at once (fpdf2 missing) closes its input before it is written.
    child.stdin.on("error", () => {});
    child.on("exit", (code) => {
      if (code === 0) resolve({ paths: JSON.parse(stdout), note: null });
      else resolve({ paths: [], note: `fpdf2 could not typeset the PDFs (${stderr.trim().split("\n").pop()})` });
    });
    child.stdin.end(JSON.stringify({ out, docs: jobs }));
  });
  // PDFs from other producers, as found in the test fixtures.
  const fixtures = ["long_lo.pdf", "document_lo.pdf", "reportlab_doc.pdf", "report_fpdf.pdf", "unicode_ttf.pdf"]
    .map((n) => path.join(ROOT, "tests/fixtures/office", n));
  const paths = [...generated.paths, ...fixtures];
  const files = [];
  for (const p of paths) {
    try {
      files.push({ name: path.basename(p), bytes: await readFile(p), type: "application/pdf" });
    } catch { /* a fixture that is not there */ }
  }
  return { files, note: generated.note };
}

// ---------------------------------------------------------------------------------------------
// Measuring.

export const round = (x, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
function pct(sorted, p) {
  if (!sorted.length) return null;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}
export function stats(values) {
  const s = [...values].sort((a, b) => a - b);
  const mean = s.reduce((a, b) => a + b, 0) / (s.length || 1);
  return { n: s.length, p50: round(pct(s, 50)), p90: round(pct(s, 90)), p99: round(pct(s, 99)), mean: round(mean), min: round(s[0] ?? 0), max: round(s[s.length - 1] ?? 0) };
}

export async function timed(fn) {
  const t = performance.now();
  const r = await fn();
  return [performance.now() - t, r];
}

async function measureLevel(worker, key, api, bot, fts) {
  const search = (query) =>
    worker.request("POST", `/api/v1/chatbot/${bot.uuid}/search`, { key, body: { query, limit: CONFIG.searchLimit } });
  for (let i = 0; i < CONFIG.warmup; i++) {
    const r = await search(QUERIES[i % QUERIES.length]);
    if (r.status !== 200) throw new Error(`search failed: ${r.status} ${r.text}`);
  }
  const latencies = [];
  const perQuery = new Map();
  let empty = 0;
  for (let i = 0; i < CONFIG.requests; i++) {
    const q = QUERIES[i % QUERIES.length];
    const [ms, r] = await timed(() => search(q));
    if (r.status !== 200) throw new Error(`search failed: ${r.status} ${r.text}`);
    if (!r.json.results.length) empty++;
    latencies.push(ms);
    perQuery.set(q, [...(perQuery.get(q) ?? []), ms]);
  }
  // The floor: an authenticated read of the chatbot (key lookup and one D1 query).
  const floor = [];
  for (let i = 0; i < 50; i++) floor.push((await timed(() => api.get(`/chatbot/${bot.uuid}`)))[0]);

  // A whole turn with the built-in engine: retrieval, composing and storing the message. A
  // fresh session every ten turns keeps the history the same size throughout.
  const answers = [];
  let session;
  for (let i = 0; i < CONFIG.answers + 5; i++) {
    if (i % 10 === 0) session = (await api.post(`/chatbot/${bot.uuid}/session/create`)).json;
    const q = QUERIES[i % QUERIES.length];
    const [ms, r] = await timed(() => worker.request("POST", `/api/v1/session/${session.uuid}/message/non-stream`, { key, body: { query: q } }));
    if (r.status !== 200) throw new Error(`answer failed: ${r.status} ${r.text}`);
    if (i >= 5) answers.push(ms);
  }

  // The search SQL alone, as D1 reports its duration (whole milliseconds): the frequency
  // query and the search, run through wrangler against the same local database; plus how many
  // chunks each question's plain OR matches across the whole index (every chatbot) and in this
  // chatbot, and how many the Worker's expression lets it score.
  const lists = QUERIES.map(fts.phrases);
  const sqlTimes = [];
  for (let run = 0; run < 2; run++) {
    const search = JSON.parse((await d1(worker, ["--json", "--command", lists.map((l) => searchSql(bot.uuid, l, fts.budget)).join(";\n")])).stdout);
    if (run > 0) search.forEach((r) => sqlTimes.push(r.meta?.duration ?? NaN));
  }
  const exprs = JSON.parse((await d1(worker, ["--json", "--command", lists.map((l) => gatedExpression(l, fts.budget)).join(";\n")])).stdout)
    .map((r) => r.results[0].expression);
  const here = (e) => `(SELECT COUNT(*) FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid WHERE chunks_fts MATCH ${lit(e)} AND c.chatbot_uuid = ${lit(bot.uuid)})`;
  const countSql = lists
    .map((l, i) => `SELECT (SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH ${lit(l.join(" OR "))}) AS everywhere, ` +
      `${here(l.join(" OR "))} AS here, ${here(exprs[i])} AS scored`)
    .join(";\n");
  const counts = JSON.parse((await d1(worker, ["--json", "--command", countSql])).stdout).map((r) => r.results[0]);
  const slowest = [...perQuery.entries()]
    .map(([q, v]) => ({ query: q, median_ms: round(stats(v).p50), matches: counts[QUERIES.indexOf(q)] }))
    .sort((a, b) => b.median_ms - a.median_ms)
    .slice(0, 5);
  return {
    client_ms: stats(latencies),
    answer_ms: stats(answers),
    floor_ms: stats(floor),
    sql_ms: stats(sqlTimes.filter(Number.isFinite)),
    matches_everywhere: stats(counts.map((c) => c.everywhere)),
    matches_in_chatbot: stats(counts.map((c) => c.here)),
    scored_in_chatbot: stats(counts.map((c) => c.scored)),
    empty_results: empty,
    slowest_queries: slowest,
  };
}

// ---------------------------------------------------------------------------------------------

export function table(rows, headers) {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (r) => r.map((c, i) => String(c).padStart(widths[i])).join("  ");
  return [line(headers), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}

async function main() {
  await mkdir(OUT, { recursive: true });
  log(`knowledge benchmark: levels ${CONFIG.levels.join(", ")} chunks, other chatbot ${CONFIG.otherChunks} chunks, ${CONFIG.requests} requests per level`);
  const fts = await ftsRules();

  log("gathering prose from the machine (info manuals, Git docs, licenses, man pages, Python docstrings)");
  const corpus = await gatherCorpus();
  log(`  handbook: ${corpus.summary.handbook.documents} documents, ${(corpus.summary.handbook.bytes / 1e6).toFixed(1)} MB; ` +
    `other: ${corpus.summary.other.documents} documents, ${(corpus.summary.other.bytes / 1e6).toFixed(1)} MB`);

  log("typesetting PDFs with fpdf2 (cached in bench-output/pdf)");
  const { textFiles, pdfs } = await ingestionFiles(corpus);
  if (pdfs.note) log(`  ${pdfs.note}; using the fixture PDFs only`);

  const report = {
    started_at: new Date().toISOString(),
    machine: { cpus: os.cpus().length, cpu: os.cpus()[0]?.model, node: process.version, platform: `${os.type()} ${os.release()}` },
    config: { ...CONFIG, queries: QUERIES.length, inspector: process.env.BENCH_INSPECTOR === "1" },
    corpus: corpus.summary,
    ingestion: {},
    retrieval: [],
    notes: [],
  };

  log("starting the Worker (wrangler's local runtime, fresh local state)");
  // Reached as benchWorkerOptions says (no inspector, no local proxy); its own log lines on,
  // for each ingestion step's figures.
  const worker = await startWorker({ ...benchWorkerOptions(), workerLogs: true });
  try {
    const { key } = await worker.newAccount("bench");
    const api = client(worker, key);
    const create = async (name) => {
      const r = await api.post("/chatbot/create", { body: { name, rate_limit: [100, 1] } });
      if (r.status !== 200) throw new Error(`creating a chatbot: ${r.status} ${r.text}`);
      return r.json;
    };
    const handbook = await create("Handbook");
    const other = await create("Other tenant");
    const bots = { handbook, other };

    // Ingestion throughput, into the other chatbot.
    log("ingestion: text uploads");
    const { uuids: _t, ...text } = await ingest(worker, key, api, other, textFiles, "text");
    report.ingestion.text = text;
    log("ingestion: PDF uploads");
    const { uuids: _p, ...pdf } = await ingest(worker, key, api, other, pdfs.files, "pdf");
    report.ingestion.pdf = { ...pdf, note: pdfs.note ?? "fpdf2-typeset documents plus the fixture PDFs from LibreOffice, reportlab and fpdf2" };

    // The handbook's first documents arrive as uploads too.
    log("seeding the handbook chatbot with text uploads");
    const handbookFiles = [];
    let budget = CONFIG.handbookUploadBytes;
    for (const d of corpus.handbook.filter((d) => d.origin !== "info").concat(corpus.handbook.filter((d) => d.origin === "info"))) {
      if (budget <= 0) break;
      const body = excerpt(d, Math.min(budget, 60_000));
      handbookFiles.push({ name: `${d.title.replace(/[^A-Za-z0-9]+/g, "-").toLowerCase()}.txt`, bytes: Buffer.from(body), type: "text/plain" });
      budget -= Buffer.byteLength(body);
    }
    const { uuids: _h, ...handbookUploads } = await ingest(worker, key, api, handbook, handbookFiles, "handbook text");
    report.ingestion.handbook_seed_text = handbookUploads;

    let counts = await chunkCounts(worker, bots);
    log(`  chunks from uploads: handbook ${counts.handbook}, other ${counts.other}`);
    report.uploaded_chunks = counts;
    report.other_seed = await seedBySql(worker, other.uuid, corpus.other, CONFIG.otherChunks - counts.other, 101, "other");

    for (const [i, level] of CONFIG.levels.entries()) {
      counts = await chunkCounts(worker, bots);
      const seed = await seedBySql(worker, handbook.uuid, corpus.handbook, level - counts.handbook, 200 + i, `handbook${level}`);
      counts = await chunkCounts(worker, bots);
      log(`level ${level}: handbook ${counts.handbook} chunks, other ${counts.other}; ${CONFIG.warmup} warm-up then ${CONFIG.requests} searches`);
      const m = await measureLevel(worker, key, api, handbook, fts);
      const entry = {
        level,
        chunks_in_chatbot: counts.handbook,
        chunks_in_database: counts.handbook + counts.other,
        seeded: i === 0 ? `${report.uploaded_chunks.handbook} by upload, ${seed?.chunks ?? 0} by SQL` : `${seed?.chunks ?? 0} more by SQL`,
        seed_sql: seed,
        ...m,
      };
      report.retrieval.push(entry);
      log(`  p50 ${m.client_ms.p50} ms, p99 ${m.client_ms.p99} ms (SQL alone p50 ${m.sql_ms.p50} ms, floor ${m.floor_ms.p50} ms)`);
    }

    // The largest accepted uploads: 20 MiB of text, and a 20 MiB PDF (1,500 pages of text, each
    // with a picture), each read in staged slices, into a chatbot of their own after the levels
    // were measured: MB/s, and per step the calls and the module's memory.
    log("ingestion: the largest uploads (20 MiB of text, then a 20 MiB PDF)");
    const largest = await create("Largest uploads");
    const bigText = [{ name: "largest.txt", bytes: Buffer.from(largeText(20 * 1024 * 1024 - 4096, "The saltwater quokka keeps the lighthouse ledger.")), type: "text/plain" }];
    const { uuids: _lt, ...largestText } = await ingest(worker, key, api, largest, bigText, "20 MiB text");
    report.ingestion.largest_text = largestText;
    const bigPdf = [{ name: "large.pdf", bytes: largePdf(1500, "The obsidian pelican audits the harbour tolls.", 11, { totalBytes: 20 * 1024 * 1024 - 256 * 1024 }), type: "application/pdf" }];
    const { uuids: _lp, ...largePdfFigures } = await ingest(worker, key, api, largest, bigPdf, "20 MiB PDF");
    report.ingestion.large_pdf = largePdfFigures;

    const last = report.retrieval[report.retrieval.length - 1];
    const plan = await worker.sql(`EXPLAIN QUERY PLAN ${searchSql(handbook.uuid, fts.phrases(QUERIES[0]), fts.budget)}`);
    report.query_plan = plan.map((r) => r.detail);
    report.fts_index_blocks = (await worker.sql("SELECT COUNT(*) AS n FROM chunks_fts_data"))[0]?.n;
    report.notes.push(
      "Levels above what the uploads produced were seeded with generated INSERTs into chunks (wrangler d1 execute --file); the FTS5 triggers index them as they index the Worker's own inserts.",
      "Seeded chunks are windows of consecutive paragraphs (75-125 words) of the same real documents, starting at random places, so the larger levels repeat text the way many versions of one manual would.",
      "client_ms: wall time of POST /search from Node over keep-alive HTTP to the Worker in wrangler's local runtime (without the DevTools inspector unless BENCH_INSPECTOR=1) on 127.0.0.1 (key lookup, ownership check, search SQL, re-ranking). sql_ms: D1's own duration for the search statement (counting the phrases, choosing the expression, searching), in whole milliseconds. matches: chunks the plain OR of a question's terms matches; scored: chunks the Worker's expression lets FTS5 score. floor_ms: GET /chatbot/{uuid}.",
      "MB is 10^6 bytes of uploaded file; time runs from the first upload to the last source reaching success.",
    );
    if (last) report.goal = { p50_ms_at_largest_level: last.client_ms.p50, goal_ms: 20, met: last.client_ms.p50 <= 20 };
    if (process.env.BENCH_KEEP_STATE) {
      // The seeded database, for EXPLAIN QUERY PLAN and trying queries afterwards.
      await rm(process.env.BENCH_KEEP_STATE, { recursive: true, force: true });
      await cp(worker.stateDir, process.env.BENCH_KEEP_STATE, { recursive: true });
      report.kept_state = { dir: process.env.BENCH_KEEP_STATE, handbook: handbook.uuid, other: other.uuid };
      log(`kept the local state in ${process.env.BENCH_KEEP_STATE}`);
    }
  } finally {
    log("stopping the Worker");
    await worker.dispose();
  }

  report.total_seconds = round((performance.now() - T0) / 1000, 1);
  await writeFile(path.join(OUT, "knowledge.json"), JSON.stringify(report, null, 2) + "\n");

  console.log("\nRetrieval: POST /chatbot/{uuid}/search, limit 5, " +
    `${CONFIG.requests} sequential requests per level after ${CONFIG.warmup} warm-up (ms)`);
  console.log(table(
    report.retrieval.map((r) => [
      r.chunks_in_chatbot, r.chunks_in_database, r.client_ms.p50, r.client_ms.p99, r.client_ms.mean,
      r.sql_ms.p50, r.sql_ms.p99, r.floor_ms.p50, r.matches_in_chatbot.p50, r.scored_in_chatbot.p50, r.seeded,
    ]),
    ["chunks", "in DB", "p50", "p99", "mean", "SQL p50", "SQL p99", "floor p50", "matches p50", "scored p50", "seeded"],
  ));
  console.log("by SQL: generated INSERTs into chunks run with `wrangler d1 execute --file`; the FTS5 triggers index them.");
  console.log(`\nBuilt-in engine, a whole turn (POST /session/{uuid}/message/non-stream), ${CONFIG.answers} turns per level (ms)`);
  console.log(table(report.retrieval.map((r) => [r.chunks_in_chatbot, r.answer_ms.p50, r.answer_ms.p99, r.answer_ms.mean]), ["chunks", "p50", "p99", "mean"]));
  console.log("\nIngestion (upload to last source in success; MB = 10^6 bytes)");
  console.log(table(
    Object.entries(report.ingestion).map(([k, v]) => [k, v.files, (v.bytes / 1e6).toFixed(2), v.seconds, v.mb_per_s, v.errors.length]),
    ["kind", "files", "MB", "seconds", "MB/s", "errors"],
  ));
  if (report.goal) console.log(`\np50 at ${report.retrieval.at(-1).chunks_in_chatbot} chunks: ${report.goal.p50_ms_at_largest_level} ms (goal ≤ ${report.goal.goal_ms} ms: ${report.goal.met ? "met" : "not met"})`);
  console.log(`Query plan: ${report.query_plan.join(" | ")}`);
  console.log(`\nTotal ${report.total_seconds} s. Full figures: ${path.relative(process.cwd(), path.join(OUT, "knowledge.json"))}`);
}

// Run as a script (`node bench/knowledge.mjs`); imported, it only lends its corpus and seeding.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    console.error(err);
    process.exitCode = 1;
  });
}
