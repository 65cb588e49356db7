// Gathers the parts of `make bench` (crud.json, stream.json, knowledge.json, startup.json,
// hybrid.json, ingest-baseline.json in
// bench-output/) into one document, bench-output/bench.json, with every figure, the baseline
// beside it, the goals and whether each is met; prints the summary table and draws
// bench-output/bench.png (and the bench.html it is rendered from). A part that is missing is
// reported as not measured.
//
// Environment: BENCH_OUTPUT (bench-output), BENCH_STARTED_AT (epoch seconds when the run began,
// for its total time).
import { execFileSync } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { ROOT } from "../tests/e2e/harness.mjs";
import { renderChart } from "./chart.mjs";

const OUT = path.resolve(ROOT, process.env.BENCH_OUTPUT ?? "bench-output");
const MiB = 1024 * 1024;
const chunks = (n) => (n >= 1000 && n % 1000 === 0 ? `${n / 1000}k` : String(n));
const round = (x, d = 2) => (x === null || x === undefined || !Number.isFinite(x) ? null : Math.round(x * 10 ** d) / 10 ** d);

async function part(name) {
  try {
    return JSON.parse(await readFile(path.join(OUT, `${name}.json`), "utf8"));
  } catch {
    return null;
  }
}

function gitCommit() {
  try {
    return execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: ROOT }).toString().trim();
  } catch {
    return null;
  }
}

/**
 * One figure: `ours` and `baseline` in `unit`, `ratio` ours/baseline where a baseline exists,
 * and `goal` ({text, met}) where the project has one for this figure. Figures with the same
 * `row` (p50 and p99 of one thing) share a line of the printed table.
 */
const pair = (label) => ({ row: label.replace(/\bp(50|99)\b/, "p50/p99") });
const figure = (section, label, unit, ours, baseline = null, extra = {}) => ({
  section,
  label,
  row: label,
  unit,
  ours: round(ours, 2),
  baseline: round(baseline, 2),
  ratio: baseline ? round(ours / baseline, 3) : null,
  ...extra,
});

/** What a goal's value is: a ratio ours/baseline, added milliseconds, milliseconds, MiB. */
const GOAL_UNITS = { stream_added_ttfb: "ms added", retrieval_p50_100k: "ms", wasm_gzip: "MiB" };

/** The unit of an ingestion goal, from its id. */
function ingestionUnit(id) {
  if (id.startsWith("largest_step_")) return "ms";
  if (/^ingestion_.*_calls$/.test(id)) return "calls";
  if (id.endsWith("_vs_pre_queue")) return "ratio";
  if (id.startsWith("ingestion_")) return "MB/s";
  return null;
}

function goal(id, text, value, limit, cmp) {
  const measured = value !== null && value !== undefined && Number.isFinite(value);
  const unit = GOAL_UNITS[id] ?? ingestionUnit(id) ?? "ratio";
  return { id, text, value: measured ? round(value, 3) : null, unit, limit, met: measured ? cmp(value, limit) : null };
}

async function main() {
  const [crud, stream, knowledge, startup, hybrid, preQueue] = await Promise.all(
    ["crud", "stream", "knowledge", "startup", "hybrid", "ingest-baseline"].map(part),
  );
  const figures = [];
  const goals = [];

  if (crud) {
    for (const [id, e] of Object.entries(crud.endpoints)) {
      const g = goal(`crud_${id}_throughput`, `${e.label}: throughput at least 0.8 of the JavaScript baseline`, e.throughput_ratio, 0.8, (v, l) => v >= l);
      goals.push(g);
      // The ratio is the median over back-to-back pairs of runs, not the ratio of the medians.
      const [q1, q3] = e.throughput_ratio_quartiles ?? [];
      figures.push(figure("CRUD", `${e.label} req/s`, "req/s", e.edgechat.requests_per_s, e.baseline.requests_per_s, {
        ratio: e.throughput_ratio,
        ratio_text: `x${e.throughput_ratio.toFixed(2)}` + (q1 !== undefined ? ` [${q1.toFixed(2)}-${q3.toFixed(2)}]` : ""),
        goal: g,
      }));
      figures.push(figure("CRUD", `${e.label} p50 ms`, "ms", e.edgechat.latency_ms.p50, e.baseline.latency_ms.p50, pair(`${e.label} p50 ms`)));
      figures.push(figure("CRUD", `${e.label} p99 ms`, "ms", e.edgechat.latency_ms.p99, e.baseline.latency_ms.p99, pair(`${e.label} p99 ms`)));
      if (e.one_connection) {
        const one = e.one_connection;
        figures.push(figure("CRUD", `${e.label} p50 ms, 1 conn`, "ms", one.edgechat.latency_ms.p50, one.baseline.latency_ms.p50, pair(`${e.label} p50 ms, 1 conn`)));
        figures.push(figure("CRUD", `${e.label} p99 ms, 1 conn`, "ms", one.edgechat.latency_ms.p99, one.baseline.latency_ms.p99, pair(`${e.label} p99 ms, 1 conn`)));
      }
      // The CPU of the workerd that runs the Worker and D1: the steadiest comparison on a busy machine.
      figures.push(figure("CRUD", `${e.label} Worker CPU ms/req`, "ms", e.edgechat.runtime_cpu_ms_per_request, e.baseline.runtime_cpu_ms_per_request));
    }
  } else {
    goals.push(goal("crud_throughput", "CRUD throughput at least 0.8 of the JavaScript baseline", null, 0.8));
  }

  if (stream) {
    const added = goal("stream_added_ttfb", "streaming adds at most 5 ms to time to first byte (p50)", stream.added_ttfb_p50_ms, 5, (v, l) => v <= l);
    const rate = goal("stream_rate", "streaming keeps at least 95 % of the direct token rate", stream.rate_ratio, 0.95, (v, l) => v >= l);
    goals.push(added, rate);
    // Here the "baseline" is the model server read directly.
    figures.push(figure("Streaming", "TTFB p50 ms (vs direct)", "ms", stream.worker.ttfb_p50_ms, stream.direct.ttfb_p50_ms,
      { ...pair("TTFB p50 ms (vs direct)"), ratio_text: `+${round(stream.added_ttfb_p50_ms, 1)} ms`, goal: added }));
    figures.push(figure("Streaming", "TTFB p99 ms (vs direct)", "ms", stream.worker.ttfb_p99_ms, stream.direct.ttfb_p99_ms,
      { ...pair("TTFB p99 ms (vs direct)"), ratio_text: `+${round(stream.worker.ttfb_p99_ms - stream.direct.ttfb_p99_ms, 1)} ms` }));
    figures.push(figure("Streaming", "tokens/s p50 (vs direct)", "tokens/s", stream.worker.tokens_per_second_p50, stream.direct.tokens_per_second_p50, { goal: rate }));
  } else {
    goals.push(goal("stream_added_ttfb", "streaming adds at most 5 ms to time to first byte (p50)", null, 5));
    goals.push(goal("stream_rate", "streaming keeps at least 95 % of the direct token rate", null, 0.95));
  }

  const retrievalGoalText = "retrieval p50 at most 20 ms at 100k chunks";
  if (knowledge) {
    const levels = knowledge.retrieval ?? [];
    const at100k = levels.find((r) => r.level === 100000);
    const g = goal("retrieval_p50_100k", retrievalGoalText, at100k?.client_ms.p50 ?? null, 20, (v, l) => v <= l);
    goals.push(g);
    for (const r of levels) {
      figures.push(figure("Retrieval", `search p50 ms, ${chunks(r.chunks_in_chatbot)} chunks`, "ms", r.client_ms.p50, null, { ...pair(`search p50 ms, ${chunks(r.chunks_in_chatbot)} chunks`), ...(r === at100k ? { goal: g } : {}) }));
      figures.push(figure("Retrieval", `search p99 ms, ${chunks(r.chunks_in_chatbot)} chunks`, "ms", r.client_ms.p99, null, pair(`search p99 ms, ${chunks(r.chunks_in_chatbot)} chunks`)));
    }
    for (const r of levels) {
      figures.push(figure("Answer", `full answer p50 ms, ${chunks(r.chunks_in_chatbot)} chunks`, "ms", r.answer_ms.p50, null, pair(`full answer p50 ms, ${chunks(r.chunks_in_chatbot)} chunks`)));
      figures.push(figure("Answer", `full answer p99 ms, ${chunks(r.chunks_in_chatbot)} chunks`, "ms", r.answer_ms.p99, null, pair(`full answer p99 ms, ${chunks(r.chunks_in_chatbot)} chunks`)));
    }
    for (const [kind, v] of Object.entries(knowledge.ingestion ?? {})) {
      if (kind === "handbook_seed_text") continue;
      figures.push(figure("Ingestion", `${kind} MB/s (${(v.bytes / 1e6).toFixed(1)} MB)`, "MB/s", v.mb_per_s));
      if (v.steps?.count) {
        const calls = goal(`ingestion_${kind}_calls`, `${kind}: at most 50 D1 calls plus subrequests in any step`, v.steps.max_calls, 50, (x, l) => x <= l);
        goals.push(calls);
        figures.push(figure("Ingestion", `${kind}: most D1 calls + subrequests in one step`, "calls", v.steps.max_calls, null, { goal: calls }));
        figures.push(figure("Ingestion", `${kind}: D1 calls per step (mean)`, "calls", v.steps.d1_calls_per_step));
        if (v.steps.max_wasm_memory_bytes) figures.push(figure("Ingestion", `${kind}: module memory after its steps`, "MiB", v.steps.max_wasm_memory_bytes / MiB));
      }
    }
  } else {
    goals.push(goal("retrieval_p50_100k", retrievalGoalText, null, 20));
  }

  // Ingestion on the queue against the Worker from before it, the same batches in alternating
  // rounds of this run: no slower (a ratio of medians of at least 1, less 5 % for the spread
  // between rounds of one Worker on a shared machine).
  for (const kind of ["text", "pdf"]) {
    const v = preQueue?.[kind];
    const g = goal(`ingestion_${kind}_vs_pre_queue`, `${kind} ingestion no slower than before the queue (same files, same run; at least 0.95)`, v?.ratio ?? null, 0.95, (x, l) => x >= l);
    goals.push(g);
    if (v) {
      figures.push(figure("Ingestion", `${kind} MB/s, queue vs before it (median of ${preQueue.rounds})`, "MB/s", v.now_median, v.before_median, { goal: g }));
    }
  }

  const core = await part("core-throughput");
  if (core?.largest_step_text_ms !== undefined) {
    // A tenth of the paid plan's default 30 s of CPU per invocation.
    for (const [kind, ms] of [["20 MiB text", core.largest_step_text_ms], [`${(core.largest_step_pdf_bytes / MiB).toFixed(0)} MiB PDF`, core.largest_step_pdf_ms]]) {
      const g = goal(`largest_step_${kind.split(" ").pop().toLowerCase()}`, `largest step (${kind}) at most 3 s of CPU`, ms, 3000, (v, l) => v <= l);
      goals.push(g);
      figures.push(figure("Ingestion", `largest step CPU ms, ${kind} (native)`, "ms", ms, null, { goal: g }));
    }
    for (const [kind, read, slice] of [["20 MiB text", core.largest_step_text_read_ms, core.largest_step_text_slice_ms], ["PDF", core.largest_step_pdf_read_ms, core.largest_step_pdf_slice_ms]]) {
      if (read !== undefined) figures.push(figure("Ingestion", `${kind}: reading step / longest slice step, CPU ms (native)`, "ms", read, null, { ratio_text: `slice ${round(slice, 0)} ms` }));
    }
    // The most heap the largest step held at once (its file included), against an isolate's 128 MB.
    for (const [kind, bytes] of [["20 MiB text", core.largest_step_text_peak_bytes], [`${(core.largest_step_pdf_bytes / MiB).toFixed(0)} MiB PDF`, core.largest_step_pdf_peak_bytes]]) {
      if (bytes !== undefined) figures.push(figure("Ingestion", `largest step heap MiB, ${kind} (native)`, "MiB", round(bytes / MiB, 1)));
    }
  }

  if (hybrid) {
    // The vector index's memory per 10k chunks: signs and ids, as the core bench's index holds them.
    const scan10k = (core?.vector_scan ?? []).find((v) => v.chunks === 10000);
    if (scan10k) hybrid.memory_bytes_per_10k = scan10k.memory_bytes;
    for (const l of hybrid.levels) {
      const label = `hybrid search p50 ms, ${chunks(l.chunks_in_chatbot)} chunks`;
      const lexical = knowledge?.retrieval?.find((r) => r.level === l.level)?.client_ms;
      figures.push(figure("Hybrid", label, "ms", l.hybrid.client_ms.p50, lexical?.p50 ?? null, pair(label)));
      figures.push(figure("Hybrid", label.replace("p50", "p99"), "ms", l.hybrid.client_ms.p99, lexical?.p99 ?? null, pair(label)));
      if (l.hybrid_rerank) {
        const rr = `hybrid + rerank p50 ms, ${chunks(l.chunks_in_chatbot)} chunks`;
        figures.push(figure("Hybrid", rr, "ms", l.hybrid_rerank.client_ms.p50, null, pair(rr)));
        figures.push(figure("Hybrid", rr.replace("p50", "p99"), "ms", l.hybrid_rerank.client_ms.p99, null, pair(rr)));
      }
    }
    const last = hybrid.levels.at(-1);
    if (last) {
      figures.push(figure("Hybrid", `embedding server delay per call ms`, "ms", hybrid.config.embedDelayMs));
      figures.push(figure("Hybrid", `back-fill chunks/s, ${chunks(last.chunks_in_chatbot)} chunks`, "chunks/s", last.backfill.chunks_per_s));
      figures.push(figure("Hybrid", `vector index storage MiB per 10k chunks`, "MiB", (last.vector_index_disk_bytes / last.chunks_in_chatbot) * 10000 / MiB));
    }
    if (scan10k) figures.push(figure("Hybrid", `vector index memory MiB per 10k chunks (${hybrid.config.dimensions} dims)`, "MiB", scan10k.memory_bytes / MiB));
    for (const v of core?.vector_scan ?? []) {
      figures.push(figure("Hybrid", `vector index scan p50 ms, ${chunks(v.chunks)} chunks (native)`, "ms", v.p50_ms));
    }
  }

  const sizeGoalText = "wasm at most 1 MiB gzipped";
  if (startup) {
    const g = goal("wasm_gzip", sizeGoalText, startup.size.wasm_gzip_bytes / MiB, 1, (v, l) => v <= l);
    goals.push(g);
    figures.push(figure("Size", "wasm KiB", "KiB", startup.size.wasm_bytes / 1024));
    figures.push(figure("Size", "wasm KiB gzip -9", "KiB", startup.size.wasm_gzip_bytes / 1024, null, { goal: g }));
    figures.push(figure("Start-up", "wrangler dev to /health ms", "ms", startup.startup.edgechat_ms.median, startup.startup.baseline_ms.median));
    figures.push(figure("Start-up", "V8 wasm compile ms", "ms", startup.wasm_v8.compile_ms.median));
    figures.push(figure("Start-up", "V8 wasm instantiate ms", "ms", startup.wasm_v8.instantiate_ms.median));
  } else {
    goals.push(goal("wasm_gzip", sizeGoalText, null, 1));
  }

  const started = Number(process.env.BENCH_STARTED_AT);
  const report = {
    generated_at: new Date().toISOString(),
    commit: gitCommit(),
    machine: {
      cpus: os.cpus().length, cpu: os.cpus()[0]?.model, memory_gib: round(os.totalmem() / 2 ** 30, 1), node: process.version,
      platform: `${os.type()} ${os.release()}`,
      // At the end of the run; the 15-minute figure covers most of it.
      load_average_1_5_15: os.loadavg().map((x) => round(x, 2)),
    },
    total_seconds: Number.isFinite(started) && started > 0 ? Math.round(Date.now() / 1000 - started) : null,
    goals,
    all_goals_met: goals.every((g) => g.met === true),
    figures,
    parts: { crud, stream, knowledge, startup, core, hybrid, preQueue },
  };
  await writeFile(path.join(OUT, "bench.json"), JSON.stringify(report, null, 2) + "\n");

  printTable(report);
  const png = path.join(OUT, "bench.png");
  try {
    await renderChart(report, png, path.join(OUT, "bench.html"));
    console.log(`Chart: ${path.relative(process.cwd(), png)}`);
  } catch (err) {
    console.error(`The chart could not be drawn (${err.message}); the figures are in bench.json.`);
    process.exitCode = 1;
  }
}

function cell(v) {
  if (v === null || v === undefined) return "-";
  if (typeof v === "number") return Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2);
  return String(v);
}

function printTable(report) {
  const groups = [];
  for (const f of report.figures) {
    const last = groups[groups.length - 1];
    if (last && last[0].row === f.row && last[0].section === f.section) last.push(f);
    else groups.push([f]);
  }
  const joined = (fs, pick) => (fs.every((f) => pick(f) === "-") ? "-" : fs.map(pick).join(" / "));
  const rows = groups.map((fs) => {
    let rel = fs.some((f) => f.ratio_text || f.ratio !== null)
      ? joined(fs, (f) => f.ratio_text ?? (f.ratio !== null ? `x${f.ratio.toFixed(2)}` : "-"))
      : "";
    const g = fs.find((f) => f.goal)?.goal;
    if (g) rel += `${rel ? " " : ""}(goal ${goalShort(g)})`;
    return [fs[0].section, fs[0].row, joined(fs, (f) => cell(f.ours)), joined(fs, (f) => cell(f.baseline)), rel,
      g ? (g.met === null ? "n/a" : g.met ? "yes" : "NO") : ""];
  });
  const headers = ["", "figure", "ours", "baseline", "ratio / goal", "met?"];
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (r) => r.map((c, i) => (i === 0 || i === 1 || i === 4 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join("  ").trimEnd();
  console.log("\nedgechat benchmark" + (report.commit ? ` (${report.commit})` : "") +
    "; baseline = plain JavaScript Worker (CRUD, start-up) or the model server read directly (streaming)");
  console.log(line(headers));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  let section;
  for (const r of rows) {
    if (section !== undefined && r[0] !== section) console.log("");
    const shown = r[0] === section ? ["", ...r.slice(1)] : r;
    section = r[0];
    console.log(line(shown));
  }
  const crud = report.parts.crud;
  if (crud) {
    const wide = Object.values(crud.endpoints).filter((e) => e.throughput_ratio_quartiles && e.throughput_ratio_quartiles[1] - e.throughput_ratio_quartiles[0] > 0.2);
    if (wide.length) {
      console.log(`\nOther work competed with the CRUD runs (${wide.map((e) => e.label).join(", ")}: the middle half of the ` +
        "pairs' throughput ratios spans more than 0.2); the Worker CPU per request is the steadier comparison, or run again.");
    }
  }
  const [l1, l5, l15] = report.machine.load_average_1_5_15;
  // The benchmark itself keeps about two processes busy.
  console.log(`\nLoad average at the end (1/5/15 min): ${l1} / ${l5} / ${l15} on ${report.machine.cpus} CPUs` +
    (l15 > report.machine.cpus + 1 ? "; other work competed with the benchmark, so latencies and rates are pessimistic." : "."));
  const met = report.goals.filter((g) => g.met === true).length;
  const unmeasured = report.goals.filter((g) => g.met === null).length;
  console.log(`\nGoals met: ${met} of ${report.goals.length}` + (unmeasured ? ` (${unmeasured} not measured)` : "") +
    (report.total_seconds ? `. Run time ${Math.floor(report.total_seconds / 60)} min ${report.total_seconds % 60} s.` : "."));
  console.log(`Figures: ${path.relative(process.cwd(), path.join(OUT, "bench.json"))}`);
}

function goalShort(g) {
  switch (g.id) {
    case "stream_added_ttfb": return "p50 <= +5 ms";
    case "stream_rate": return ">= x0.95";
    case "retrieval_p50_100k": return "p50 <= 20 ms";
    case "wasm_gzip": return "<= 1024 KiB";
    default:
      switch (g.unit) {
        case "MB/s": return `>= ${g.limit} MB/s`;
        case "calls": return `<= ${g.limit} calls`;
        case "ms": return `<= ${g.limit} ms`;
        default: return `>= x${g.limit}`;
      }
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
