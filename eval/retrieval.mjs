// `make eval`: how often the service finds the right document for a question. Starts the built
// Worker under `wrangler dev` with fresh local state, uploads the corpus into one chatbot, asks
// every question through a scorer and reports top-1 and top-3 hit rates.
//
//   node eval/retrieval.mjs [--set NAME] [--scorer search,answer] [--docs DIR] [--list FILE]
//                           [--questions FILE] [--conversations FILE] [--qa FILE]
//                           [--unanswerable FILE] [--out DIR]
//
// Every scorer named in `--scorer` runs against the same ingested chatbot. With
// `--conversations`, two more run: `follow-up` (the second turn of each two-turn conversation,
// asked after the first in one session) and `standalone` (the same question written to stand
// alone, in a fresh session), so a follow-up can be compared with its standalone form. With
// `--qa`, the file's `[{question, answer}]` pairs are added as Q&A sources beside the documents;
// a question expecting a pair names the pair's question. With `--unanswerable`, the file's
// questions (a JSON list of strings), which the documents do not answer, are asked through the
// chat endpoint too: each answer should say it is unsure (`answered: false`), and the count of
// those that claim an answer is reported.
//
// The Worker must be built first (`make build`); `scripts/eval.sh` does that and installs the
// corpus.
import { execFileSync } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

const { values: opts } = parseArgs({
  options: {
    set: { type: "string", default: "git" },
    scorer: { type: "string", default: "search" },
    conversations: { type: "string" },
    qa: { type: "string" },
    unanswerable: { type: "string" },
    docs: { type: "string", default: process.env.EVAL_DOCS_DIR ?? "/usr/share/doc/git-doc" },
    list: { type: "string", default: path.join(ROOT, "eval/documents.txt") },
    questions: { type: "string", default: path.join(ROOT, "eval/questions.json") },
    out: { type: "string", default: process.env.EVAL_OUTPUT ?? path.join(ROOT, "eval-output") },
  },
});
const OUT = path.resolve(opts.out);
// The harness keeps wrangler's state and config under E2E_OUTPUT; it reads it when loaded.
process.env.E2E_OUTPUT ??= OUT;

const { startWorker, client } = await import("../tests/e2e/harness.mjs");
const { readDocumentList, loadCorpus, ingest, addPairs } = await import("./corpus.mjs");
const { SCORERS } = await import("./scorers.mjs");
const { checkQuestions, checkPairs, checkConversations, score, summarize, summaryLine, printReport, writeResult } = await import("./report.mjs");

const progress = (msg) => process.stderr.write(`--- ${msg}\n`);
const seconds = (since) => Math.round((performance.now() - since) / 100) / 10;

function packageVersion(pkg) {
  try {
    return execFileSync("dpkg-query", ["-W", "-f", "${Version}", pkg], { encoding: "utf8" }).trim() || null;
  } catch {
    return null;
  }
}

async function main() {
  const scorerNames = opts.scorer.split(",").map((s) => s.trim()).filter(Boolean);
  for (const name of scorerNames) {
    if (!SCORERS[name]) throw new Error(`unknown scorer ${name}; known: ${Object.keys(SCORERS).join(", ")}`);
  }

  const names = await readDocumentList(opts.list);
  const docs = await loadCorpus(opts.docs, names);
  const pairs = opts.qa ? checkPairs(JSON.parse(await readFile(opts.qa, "utf8"))) : [];
  const questions = checkQuestions(JSON.parse(await readFile(opts.questions, "utf8")), [...names, ...pairs.map((p) => p.question)]);
  const runs = scorerNames.map((name) => ({ name, items: questions }));
  if (opts.conversations) {
    const conversations = checkConversations(JSON.parse(await readFile(opts.conversations, "utf8")), names);
    runs.push({ name: "follow-up", items: conversations.map((c) => ({ question: c.turns, expected: c.expected })) });
    runs.push({ name: "standalone", items: conversations.map((c) => ({ question: c.standalone, expected: c.expected })) });
  }
  const corpusBytes = docs.reduce((n, d) => n + d.bytes.length, 0);
  progress(`${docs.length} documents (${(corpusBytes / 1048576).toFixed(2)} MiB) from ${opts.docs}; ${questions.length} questions`);

  const timings = {};
  let t = performance.now();
  const worker = await startWorker({ vars: process.env.SEARCH_CANDIDATE_BUDGET ? { SEARCH_CANDIDATE_BUDGET: process.env.SEARCH_CANDIDATE_BUDGET } : {} });
  let interrupted = false;
  const stop = async (signal) => {
    interrupted = true;
    progress(`${signal}: stopping the Worker`);
    await worker.dispose();
    process.exit(130);
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  try {
    timings.start_s = seconds(t);
    progress(`Worker up on ${worker.base} in ${timings.start_s} s`);

    const { key } = await worker.newAccount("evaluation");
    const api = client(worker, key);
    const bot = await api.post("/chatbot/create", { body: { name: "Evaluation", rate_limit: [100, 1] } });
    if (bot.status !== 200) throw new Error(`creating the chatbot failed: ${bot.status} ${bot.text}`);
    const chatbotUuid = bot.json.uuid;

    t = performance.now();
    const sources = [...await ingest(worker, key, api, chatbotUuid, docs), ...await addPairs(api, chatbotUuid, pairs)];
    timings.ingest_s = seconds(t);
    const ok = sources.filter((s) => s.status === "success");
    progress(`ingested ${ok.length}/${sources.length} documents (${ok.reduce((n, s) => n + s.tokens, 0)} tokens) in ${timings.ingest_s} s`);

    const lines = [];
    for (const run of runs) {
      const scorer = SCORERS[run.name]({ api, chatbotUuid });
      t = performance.now();
      const rows = await score(scorer, run.items);
      const questionsSeconds = seconds(t);
      progress(`${opts.set} ${scorer.name}: asked ${rows.length} questions in ${questionsSeconds} s`);

      const summary = summarize(rows);
      console.log(`\n=== Set ${opts.set}, scorer ${scorer.name}`);
      printReport({ scorer, sources, rows, summary });
      const pkg = process.env.EVAL_PACKAGE ?? null;
      const file = path.join(OUT, `retrieval-${opts.set}-${scorer.name}.json`);
      await writeResult(file, {
        set: opts.set,
        scorer: { name: scorer.name, describe: scorer.describe },
        created_at: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
        corpus: {
          package: opts.set === "git" ? pkg : null,
          version: opts.set === "git" && pkg ? packageVersion(pkg) : null,
          dir: opts.docs,
          documents: docs.length,
          bytes: corpusBytes,
        },
        summary,
        timings: { ...timings, questions_s: questionsSeconds },
        ingestion: sources,
        results: rows,
      });
      console.log(`\nWrote ${path.relative(process.cwd(), file) || file}`);
      lines.push(`${opts.set} ${summaryLine(scorer.name, summary)}`);
    }
    if (opts.unanswerable) {
      const asked = JSON.parse(await readFile(opts.unanswerable, "utf8"));
      if (!Array.isArray(asked) || !asked.every((q) => typeof q === "string" && q.trim())) {
        throw new Error(`${opts.unanswerable}: a JSON list of questions`);
      }
      const scorer = SCORERS.answer({ api, chatbotUuid });
      const rows = [];
      for (const question of asked) rows.push({ question, answered: (await scorer.ask(question)).answered });
      const claimed = rows.filter((r) => r.answered !== false);
      console.log(`\n=== Set ${opts.set}, questions the documents do not answer`);
      for (const r of rows) console.log(`${r.answered === false ? "unsure  " : "ANSWERED"}  ${r.question}`);
      await writeResult(path.join(OUT, `retrieval-${opts.set}-unanswerable.json`), { set: opts.set, questions: rows.length, answered: claimed.length, results: rows });
      lines.push(`${opts.set} unanswerable: answered ${claimed.length}/${rows.length} (each should be unsure)`);
    }
    console.log(`\n${lines.join("\n")}`);
  } catch (err) {
    if (interrupted) return;
    await writeFile(path.join(OUT, "worker.log"), worker.log).catch(() => {});
    progress(`the Worker's last output is in ${path.join(OUT, "worker.log")}`);
    throw err;
  } finally {
    await worker.dispose();
  }
}

main().catch((err) => {
  console.error(`evaluation failed: ${err.stack ?? err}`);
  process.exit(1);
});
