// The evaluation corpus: which documents, read from where, and how they get into a chatbot.
import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import { settled, upload } from "../tests/e2e/harness.mjs";

const TYPES = {
  ".html": "text/html",
  ".htm": "text/html",
  ".txt": "text/plain",
  ".md": "text/markdown",
  ".csv": "text/csv",
  ".json": "application/json",
  ".pdf": "application/pdf",
  ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
};

/** The file names in a list file: one a line, blank lines and `#` comments skipped. */
export async function readDocumentList(listFile) {
  const text = await readFile(listFile, "utf8");
  const names = text.split("\n").map((l) => l.replace(/#.*/, "").trim()).filter(Boolean);
  const seen = new Set();
  for (const n of names) {
    if (seen.has(n)) throw new Error(`${listFile}: ${n} is listed twice`);
    seen.add(n);
  }
  return names;
}

/** Reads every listed document from `dir`; a missing one is an error naming all that are. */
export async function loadCorpus(dir, names) {
  const missing = [];
  const docs = [];
  for (const name of names) {
    const file = path.join(dir, name);
    try {
      await stat(file);
    } catch {
      missing.push(name);
      continue;
    }
    const type = TYPES[path.extname(name).toLowerCase()] ?? "application/octet-stream";
    docs.push({ name, type, bytes: await readFile(file) });
  }
  if (missing.length) throw new Error(`missing from ${dir}: ${missing.join(", ")}`);
  return docs;
}

/** Runs `fn` over `items` with at most `width` calls in flight; results keep their order. */
async function inParallel(items, width, fn) {
  const out = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
  return out;
}

/**
 * Uploads each document to the chatbot and waits until every source has settled. Returns one
 * record per document: `{name, uuid, status, tokens, error}`; `status` is the source's final
 * status, or `rejected` when the upload itself was refused.
 */
export async function ingest(worker, key, api, chatbotUuid, docs, { width = 4, timeoutMs = 120_000 } = {}) {
  return inParallel(docs, width, async (doc) => {
    const r = await upload(worker, key, chatbotUuid, doc);
    if (r.status !== 200) {
      return { name: doc.name, uuid: null, status: "rejected", tokens: 0, error: `${r.status} ${r.text}` };
    }
    const s = await settled(api, r.json.uuid, timeoutMs);
    let error = null;
    if (s.status !== "success") {
      try { error = JSON.parse(s.meta_json).error ?? null; } catch { error = s.meta_json ?? null; }
    }
    return { name: doc.name, uuid: s.uuid, status: s.status, tokens: s.tokens ?? 0, error };
  });
}

/** Adds `pairs` (`[{question, answer}]`) as Q&A sources, which are indexed as they are stored. */
export async function addPairs(api, chatbotUuid, pairs) {
  const added = [];
  for (const { question, answer } of pairs) {
    const r = await api.post(`/chatbot/${chatbotUuid}/data-source/qa`, { body: { question, answer } });
    if (r.status !== 200) throw new Error(`adding the Q&A pair "${question}" failed: ${r.status} ${r.text}`);
    added.push({ name: question, uuid: r.json.uuid, status: r.json.status, tokens: r.json.tokens ?? 0, error: null });
  }
  return added;
}
