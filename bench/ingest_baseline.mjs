// Ingestion against the Worker from before ingestion moved onto the queue: the knowledge
// bench's text and PDF batches uploaded to both, in alternating rounds on this machine, so the
// ratio says whether the queue made reading slower whatever the machine's speed. The earlier
// Worker is a checkout of its commit, built and started with its own scripts and harness
// (`scripts/bench-ingest-baseline.sh` prepares it).
//   node bench/ingest_baseline.mjs <pre-queue checkout> [--rounds 5]
import { parseArgs } from "node:util";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { startWorker, client, ROOT } from "../tests/e2e/harness.mjs";
import { gatherCorpus, ingestionFiles, ingest } from "./knowledge.mjs";

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: "string", default: "5" },
    out: { type: "string", default: path.join(ROOT, "bench-output") },
  },
});
const baselineRoot = path.resolve(positionals[0] ?? "");
const rounds = Number(opts.rounds);
const WARM_UP_FILES = 3;
const baselineHarness = await import(path.join(baselineRoot, "tests/e2e/harness.mjs"));

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/**
 * One batch into a fresh Worker (fresh local state), reached through wrangler's local proxy on
 * both sides. A few of the files go to another chatbot first, untimed: a batch takes about a
 * second, and a new isolate's first readings run unoptimised code (the first step took 140-240
 * ms where the next ones took 55-95), which would otherwise weigh on whichever path meets it.
 */
async function measure(start, files, label) {
  const worker = await start({ inspector: false });
  try {
    const { key } = await worker.newAccount("bench");
    const api = client(worker, key);
    const newBot = async (name) => (await api.post("/chatbot/create", { body: { name, rate_limit: [100, 1] } })).json;
    await ingest(worker, key, api, await newBot("Warm-up"), files.slice(0, WARM_UP_FILES), `${label}, warm-up`);
    const { mb_per_s, errors } = await ingest(worker, key, api, await newBot("Ingestion"), files, label);
    if (errors.length) throw new Error(`${label}: ${errors.length} sources failed: ${errors[0]}`);
    return mb_per_s;
  } finally {
    await worker.dispose();
  }
}

const corpus = await gatherCorpus();
const { textFiles, pdfs } = await ingestionFiles(corpus);
const batches = { text: textFiles, pdf: pdfs.files };
const result = { baseline: path.basename(baselineRoot), rounds };
for (const [kind, files] of Object.entries(batches)) {
  const before = [], now = [];
  for (let round = 0; round < rounds; round++) {
    // Alternate which goes first, so drift in machine load hits both alike.
    const pair = [
      async () => before.push(await measure(baselineHarness.startWorker, files, `${kind}, before the queue`)),
      async () => now.push(await measure(startWorker, files, `${kind}, on the queue`)),
    ];
    if (round % 2) pair.reverse();
    for (const run of pair) await run();
  }
  result[kind] = {
    files: files.length,
    bytes: files.reduce((n, f) => n + f.bytes.length, 0),
    before_mb_per_s: before,
    now_mb_per_s: now,
    before_median: +median(before).toFixed(3),
    now_median: +median(now).toFixed(3),
    ratio: +(median(now) / median(before)).toFixed(3),
  };
  console.log(`${kind}: before the queue ${result[kind].before_median} MB/s, on the queue ${result[kind].now_median} MB/s (median of ${rounds}); ratio ${result[kind].ratio}`);
}
await mkdir(opts.out, { recursive: true });
await writeFile(path.join(opts.out, "ingest-baseline.json"), JSON.stringify(result, null, 2));
