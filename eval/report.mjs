// Asking the questions through a scorer, counting hits, and reporting them.
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";

/** Reads and checks `[{question, expected}]`; every expected document must be in the corpus. */
export function checkQuestions(questions, corpusNames) {
  if (!Array.isArray(questions) || questions.length === 0) throw new Error("questions: expected a non-empty array");
  const names = new Set(corpusNames);
  questions.forEach((q, i) => {
    if (typeof q?.question !== "string" || !q.question.trim()) throw new Error(`questions[${i}]: no question`);
    if (typeof q.expected !== "string") throw new Error(`questions[${i}]: no expected document`);
    if (!names.has(q.expected)) throw new Error(`questions[${i}]: ${q.expected} is not in the corpus list`);
  });
  return questions;
}

/** Checks `[{question, answer}]`: the Q&A pairs a set adds beside its documents. */
export function checkPairs(pairs) {
  if (!Array.isArray(pairs)) throw new Error("qa: expected an array");
  pairs.forEach((p, i) => {
    if (typeof p?.question !== "string" || !p.question.trim() || typeof p.answer !== "string" || !p.answer.trim()) {
      throw new Error(`qa[${i}]: expected {question, answer}`);
    }
  });
  return pairs;
}

/** Reads and checks `[{turns: [first, follow-up], standalone, expected}]`. */
export function checkConversations(conversations, corpusNames) {
  if (!Array.isArray(conversations) || conversations.length === 0) throw new Error("conversations: expected a non-empty array");
  const names = new Set(corpusNames);
  conversations.forEach((c, i) => {
    if (!Array.isArray(c?.turns) || c.turns.length < 2 || !c.turns.every((t) => typeof t === "string" && t.trim())) {
      throw new Error(`conversations[${i}]: turns must be two or more questions`);
    }
    if (typeof c.standalone !== "string" || !c.standalone.trim()) throw new Error(`conversations[${i}]: no standalone question`);
    if (!names.has(c.expected)) throw new Error(`conversations[${i}]: ${c.expected} is not in the corpus list`);
  });
  return conversations;
}

/** Asks every question in turn and records where the expected document landed. */
export async function score(scorer, questions) {
  const rows = [];
  for (const { question, expected } of questions) {
    const { documents, first, answered } = await scorer.ask(question);
    const rank = documents.indexOf(expected) + 1 || null;
    rows.push({
      question,
      expected,
      rank,
      top1: rank === 1,
      top3: rank !== null && rank <= 3,
      documents: documents.slice(0, 5),
      first,
      ...(answered === undefined ? {} : { answered }),
    });
  }
  return rows;
}

const pct = (n, d) => (d ? Math.round((1000 * n) / d) / 10 : 0);

export function summarize(rows) {
  const n = rows.length;
  const top1 = rows.filter((r) => r.top1).length;
  const top3 = rows.filter((r) => r.top3).length;
  const reciprocal = rows.reduce((sum, r) => sum + (r.rank ? 1 / r.rank : 0), 0);
  return {
    questions: n,
    top1,
    top3,
    top1_pct: pct(top1, n),
    top3_pct: pct(top3, n),
    found_anywhere: rows.filter((r) => r.rank !== null).length,
    mrr: Math.round((1000 * reciprocal) / n) / 1000,
    ...(rows.some((r) => r.answered !== undefined) ? { answered: rows.filter((r) => r.answered).length } : {}),
  };
}

export function summaryLine(name, s) {
  const label = name === "search" ? "retrieval" : name;
  if (s.answered !== undefined) {
    return `${label}: top-1 ${s.top1}/${s.questions} (${s.top1_pct}%), top-3 ${s.top3}/${s.questions} (${s.top3_pct}%), answered ${s.answered}/${s.questions}`;
  }
  return `${label}: top-1 ${s.top1}/${s.questions} (${s.top1_pct}%), top-3 ${s.top3}/${s.questions} (${s.top3_pct}%)`;
}

/** The human report: ingestion problems, every miss, then the numbers. */
export function printReport({ scorer, sources, rows, summary }, log = console.log) {
  const failed = sources.filter((s) => s.status !== "success");
  if (failed.length) {
    log(`\n${failed.length} of ${sources.length} documents did not ingest:`);
    for (const s of failed) log(`  ${s.name}: ${s.status}${s.error ? ` (${s.error})` : ""}`);
  }
  const misses = rows.filter((r) => !r.top1);
  log(`\nMisses at top-1 (${misses.length} of ${rows.length}):`);
  for (const r of misses) {
    log(`  Q: ${[r.question].flat().join(" → ")}`);
    log(`     expected ${r.expected} (${r.rank ? `rank ${r.rank}` : "not in the results"}); first: ${r.first ? `${r.first.document} "${r.first.heading}"` : "nothing"}`);
  }
  log(`\nScorer: ${scorer.describe}`);
  log(`Questions: ${summary.questions}`);
  log(`Top-1: ${summary.top1}/${summary.questions} (${summary.top1_pct}%)`);
  log(`Top-3: ${summary.top3}/${summary.questions} (${summary.top3_pct}%)`);
  log(`MRR: ${summary.mrr} (expected document found in ${summary.found_anywhere} of ${summary.questions} result lists)`);
}

export async function writeResult(file, result) {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, `${JSON.stringify(result, null, 2)}\n`);
}
