// Draws bench.json as one page of four panels (plain SVG in HTML, no chart library) and renders
// it to PNG in headless Chromium: search and full-answer latency against corpus size, CRUD
// ratios to the JavaScript baseline, streaming time to first byte, and size and start-up.
import { writeFile } from "node:fs/promises";
import { pathToFileURL } from "node:url";
import { launchChromium } from "./browser.mjs";

const W = 600;
const H = 400;
const M = { top: 68, right: 24, bottom: 80, left: 64 };
const COLORS = { ours: "#2f6db5", ours2: "#8fb3e0", base: "#9a9a9a", answer: "#d9822b", answer2: "#f0bf8a", goal: "#c0392b", ok: "#2e8b57", bad: "#c0392b" };

const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const fmt = (v) => (v === null || v === undefined ? "-" : v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));
// Text widths are estimated (about 0.6 em a character) to lay out legends.
const textWidth = (s, size = 12) => s.length * size * 0.6;
const text = (x, y, s, attrs = "") => `<text x="${x}" y="${y}" ${attrs}>${esc(s)}</text>`;

/** A "nice" upper bound for an axis that must show `max`. */
function niceMax(max) {
  if (!(max > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(max));
  for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= max) return m * p;
  return 10 * p;
}

/** A panel: title, one or two lines of subtitle, and the drawing. */
function frame(title, subtitle, body) {
  const lines = Array.isArray(subtitle) ? subtitle : subtitle ? [subtitle] : [];
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">
  <rect width="${W}" height="${H}" fill="#fff" stroke="#ddd"/>
  ${text(16, 24, title, 'font-size="17" font-weight="600"')}
  ${lines.map((l, i) => text(16, 40 + i * 14, l, 'font-size="12" fill="#555"')).join("")}
  ${body}
</svg>`;
}

function yAxis(yMax, unit, y) {
  const ticks = 5;
  // As many decimals as the step needs, the same for every tick.
  const step = yMax / ticks;
  const decimals = Math.max(0, Math.min(3, -Math.floor(Math.log10(step) + 1e-9)));
  const stepDecimals = Number.isInteger(Math.round(step * 10 ** decimals * 1000) / 1000) ? decimals : decimals + 1;
  let out = "";
  for (let i = 0; i <= ticks; i++) {
    const v = (yMax * i) / ticks;
    const py = y(v);
    out += `<line x1="${M.left}" x2="${W - M.right}" y1="${py}" y2="${py}" stroke="#eee"/>`;
    out += text(M.left - 6, py + 4, v.toFixed(stepDecimals), 'font-size="11" text-anchor="end" fill="#444"');
  }
  out += text(16, M.top + (H - M.top - M.bottom) / 2, unit, `font-size="12" fill="#444" transform="rotate(-90 16 ${M.top + (H - M.top - M.bottom) / 2})" text-anchor="middle"`);
  return out;
}

function missing(title) {
  return frame(title, "", text(W / 2, H / 2, "not measured in this run", 'font-size="14" fill="#888" text-anchor="middle"'));
}

/**
 * One row of legend entries: [label, color, kind] with kind "line", "dashed", "dotted" (a
 * reference line) or "box" (a bar series).
 */
function legend(items, x, y) {
  let px = x;
  return items.map(([label, color, kind]) => {
    const mark = kind === "box"
      ? `<rect x="${px}" y="${y - 6}" width="14" height="10" fill="${color}"/>`
      : `<line x1="${px}" x2="${px + 22}" y1="${y}" y2="${y}" stroke="${color}" stroke-width="${kind === "dotted" ? 1.5 : 3}" ${kind === "dashed" ? 'stroke-dasharray="6 4"' : kind === "dotted" ? 'stroke-dasharray="3 3"' : ""}/>`;
    const out = mark + text(px + (kind === "box" ? 20 : 28), y + 4, label, 'font-size="12" fill="#333"');
    px += (kind === "box" ? 20 : 28) + textWidth(label) + 18;
    return out;
  }).join("");
}

/** Latency (ms) against chunks in the chatbot, log scale across the levels. */
/**
 * Axes of a latency-against-corpus-size panel: chunks on a log scale (one tick per level), ms
 * up to `yMax`; the two scales and the drawn axes.
 */
function corpusAxes(xs, yMax) {
  const lx = (v) => Math.log10(v);
  const [x0, x1] = xs.length > 1 ? [lx(xs[0]), lx(xs[xs.length - 1])] : [lx(xs[0]) - 1, lx(xs[0]) + 1];
  const pad = 30;
  const x = (v) => M.left + pad + ((lx(v) - x0) / (x1 - x0 || 1)) * (W - M.left - M.right - 2 * pad);
  const y = (v) => H - M.bottom - (v / yMax) * (H - M.top - M.bottom);
  let body = yAxis(yMax, "ms", y);
  for (const v of xs) {
    body += text(x(v), H - M.bottom + 18, v >= 1000 ? `${Math.round(v / 1000)}k` : String(v), 'font-size="12" text-anchor="middle" fill="#333"');
  }
  body += text(M.left + (W - M.left - M.right) / 2, H - M.bottom + 34, "chunks in the chatbot (log scale)", 'font-size="12" text-anchor="middle" fill="#444"');
  return { x, y, body };
}

function retrievalPanel(knowledge) {
  const title = "Search and full answer latency vs corpus size";
  const levels = knowledge?.retrieval ?? [];
  if (!levels.length) return missing(title);
  const xs = levels.map((r) => r.chunks_in_chatbot);
  const series = [
    ["search p50", COLORS.ours, false, levels.map((r) => r.client_ms.p50)],
    ["search p99", COLORS.ours2, true, levels.map((r) => r.client_ms.p99)],
    ["answer p50", COLORS.answer, false, levels.map((r) => r.answer_ms.p50)],
    ["answer p99", COLORS.answer2, true, levels.map((r) => r.answer_ms.p99)],
  ];
  const yMax = niceMax(Math.max(22, ...series.flatMap((s) => s[3])));
  const { x, y, body: axes } = corpusAxes(xs, yMax);
  let body = axes;
  // The goal: search p50 at most 20 ms at 100k chunks.
  body += `<line x1="${M.left}" x2="${W - M.right}" y1="${y(20)}" y2="${y(20)}" stroke="${COLORS.goal}" stroke-dasharray="3 3"/>`;
  for (const [, color, dash, values] of series) {
    const pts = values.map((v, i) => `${x(xs[i])},${y(v)}`).join(" ");
    body += `<polyline points="${pts}" fill="none" stroke="${color}" stroke-width="2.5" ${dash ? 'stroke-dasharray="6 4"' : ""}/>`;
    values.forEach((v, i) => {
      body += `<circle cx="${x(xs[i])}" cy="${y(v)}" r="3.5" fill="${color}"/>`;
    });
  }
  // Values of the p50 lines beside their points: the answer's above, the search's below.
  for (const [label, color, dash, values] of series) {
    if (dash) continue;
    const below = label.startsWith("search");
    values.forEach((v, i) => {
      body += text(x(xs[i]) + 6, y(v) + (below ? 15 : -7), fmt(v), `font-size="11" fill="${color}" font-weight="600"`);
    });
  }
  body += legend([...series.map(([l, c, d]) => [l, c, d ? "dashed" : "line"]), ["goal", COLORS.goal, "dotted"]], 16, H - 12);
  return frame(title, [`POST /chatbot/{uuid}/search (${knowledge.config?.requests ?? "?"} requests a level) and a whole built-in-engine turn`,
    "goal: search p50 ≤ 20 ms at 100k chunks"], body);
}

/** Search with embeddings (words and meaning fused) next to search by words, per corpus size. */
function hybridPanel(hybrid, knowledge) {
  const title = "Hybrid search latency vs corpus size";
  const levels = hybrid?.levels ?? [];
  if (!levels.length) return missing(title);
  const xs = levels.map((l) => l.chunks_in_chatbot);
  const lexical = new Map((knowledge?.retrieval ?? []).map((r) => [r.level, r.client_ms.p50]));
  const series = [
    ["hybrid p50", COLORS.ours, false, levels.map((l) => l.hybrid.client_ms.p50)],
    ["hybrid p99", COLORS.ours2, true, levels.map((l) => l.hybrid.client_ms.p99)],
  ];
  if (levels.every((l) => lexical.has(l.level))) {
    series.push(["words only p50", COLORS.base, false, levels.map((l) => lexical.get(l.level))]);
  }
  const delay = hybrid.config?.embedDelayMs ?? 0;
  const yMax = niceMax(Math.max(delay + 10, ...series.flatMap((s) => s[3])));
  const { x, y, body: axes } = corpusAxes(xs, yMax);
  let body = axes;
  // The embedding server's own delay: the floor every hybrid search stands on.
  body += `<line x1="${M.left}" x2="${W - M.right}" y1="${y(delay)}" y2="${y(delay)}" stroke="${COLORS.goal}" stroke-dasharray="3 3"/>`;
  for (const [label, color, dash, values] of series) {
    const pts = values.map((v, i) => `${x(xs[i])},${y(v)}`).join(" ");
    body += `<polyline points="${pts}" fill="none" stroke="${color}" stroke-width="2.5" ${dash ? 'stroke-dasharray="6 4"' : ""}/>`;
    values.forEach((v, i) => {
      body += `<circle cx="${x(xs[i])}" cy="${y(v)}" r="3.5" fill="${color}"/>`;
      if (!dash) body += text(x(xs[i]) + 6, y(v) + (label.startsWith("words") ? 15 : -7), fmt(v), `font-size="11" fill="${color}" font-weight="600"`);
    });
  }
  body += legend([...series.map(([l, c, d]) => [l, c, d ? "dashed" : "line"]), ["embedding delay", COLORS.goal, "dotted"]], 16, H - 12);
  const last = levels.at(-1);
  const memory = hybrid.memory_bytes_per_10k ? `, index memory ${fmt(hybrid.memory_bytes_per_10k / 2 ** 20)} MiB per 10k chunks` : "";
  return frame(title, [`POST /chatbot/{uuid}/search with ${hybrid.config?.dimensions ?? "?"}-dimension embeddings, one embedding call of ${delay} ms each`,
    `back-fill ${fmt(last.backfill.chunks_per_s)} chunks/s${memory}`], body);
}

/** Bars of a ratio per group, with reference lines. */
function barsPanel({ title, subtitle, groups, seriesNames, colors, refs, yLabel, yMin = 0 }) {
  const all = groups.flatMap((g) => [...g.values, ...(g.ranges ?? []).flat()]).filter((v) => Number.isFinite(v));
  const yMax = niceMax(Math.max(...all, ...refs.map((r) => r.value)) * 1.1);
  const y = (v) => H - M.bottom - ((v - yMin) / (yMax - yMin)) * (H - M.top - M.bottom);
  let body = yAxis(yMax, yLabel, y);
  const gw = (W - M.left - M.right) / groups.length;
  const bw = Math.min(56, (gw - 24) / seriesNames.length);
  groups.forEach((g, gi) => {
    const gx = M.left + gi * gw + (gw - bw * seriesNames.length) / 2;
    g.values.forEach((v, si) => {
      if (!Number.isFinite(v)) return;
      const bx = gx + si * bw;
      body += `<rect x="${bx + 2}" y="${y(v)}" width="${bw - 4}" height="${y(yMin) - y(v)}" fill="${colors[si]}"/>`;
      // A whisker over the middle half of the runs, where the figure has one.
      const range = g.ranges?.[si];
      if (range) {
        const cx = bx + bw / 2;
        body += `<line x1="${cx}" x2="${cx}" y1="${y(range[0])}" y2="${y(range[1])}" stroke="#222" stroke-width="1.5"/>` +
          `<line x1="${cx - 5}" x2="${cx + 5}" y1="${y(range[0])}" y2="${y(range[0])}" stroke="#222" stroke-width="1.5"/>` +
          `<line x1="${cx - 5}" x2="${cx + 5}" y1="${y(range[1])}" y2="${y(range[1])}" stroke="#222" stroke-width="1.5"/>`;
      }
      const labelAt = range ? Math.min(y(v), y(range[1])) : y(v);
      body += text(bx + bw / 2, labelAt - 5, fmt(v), 'font-size="11" text-anchor="middle" fill="#222" font-weight="600"');
    });
    g.caption.forEach((line, li) => {
      body += text(M.left + gi * gw + gw / 2, H - M.bottom + 16 + li * 14, line, `font-size="${li ? 11 : 12}" text-anchor="middle" fill="${li ? "#666" : "#222"}"`);
    });
  });
  for (const r of refs) {
    body += `<line x1="${M.left}" x2="${W - M.right}" y1="${y(r.value)}" y2="${y(r.value)}" stroke="${r.color}" ${r.solid ? "" : 'stroke-dasharray="3 3"'}/>`;
  }
  body += legend(seriesNames.map((n, i) => [n, colors[i], "box"]), 16, H - 26);
  body += legend(refs.map((r) => [r.label, r.color, r.solid ? "line" : "dotted"]), 16, H - 9);
  return frame(title, subtitle, body);
}

function crudPanel(crud) {
  const title = "CRUD: edgechat relative to a plain JavaScript Worker";
  if (!crud) return missing(title);
  const c = crud.config;
  const groups = Object.values(crud.endpoints).map((e) => ({
    values: [e.throughput_ratio, e.p50_ratio, e.runtime_cpu_ratio],
    ranges: [e.throughput_ratio_quartiles ?? null, null, null],
    caption: [e.label.replace("/chatbot/{uuid}/", "…/{uuid}/"),
      `${fmt(e.edgechat.requests_per_s)} vs ${fmt(e.baseline.requests_per_s)} req/s`],
  }));
  return barsPanel({
    title,
    subtitle: [`ours / baseline (↑ higher is better, ↓ lower is better), medians of ${c.runs} pairs of runs of`,
      `wrk -t${c.threads} -c${c.connections} -d${c.seconds}s taking turns; whisker: middle half of the pairs' throughput ratios`],
    groups,
    seriesNames: ["throughput ↑", "p50 latency ↓", "Worker CPU per request ↓"],
    colors: [COLORS.ours, COLORS.base, COLORS.ours2],
    refs: [
      { value: 1, label: "parity", color: "#555", solid: true },
      { value: 0.8, label: "goal: throughput ≥ 0.8", color: COLORS.goal },
    ],
    yLabel: "ratio",
  });
}

function streamPanel(stream) {
  const title = "Streaming: time to first byte";
  if (!stream) return missing(title);
  const groups = [
    { values: [stream.direct.ttfb_p50_ms, stream.worker.ttfb_p50_ms], caption: ["p50", ""] },
    { values: [stream.direct.ttfb_p99_ms, stream.worker.ttfb_p99_ms], caption: ["p99", ""] },
  ];
  const svg = barsPanel({
    title,
    subtitle: [`${stream.runs} answers of ${stream.tokens} tokens at ${stream.pace_ms} ms each from a local OpenAI-compatible server`,
      `added p50 +${fmt(stream.added_ttfb_p50_ms)} ms (goal ≤ 5); token rate through the Worker x${stream.rate_ratio} of direct (goal ≥ 0.95)`],
    groups,
    seriesNames: ["model server read directly", "through the Worker"],
    colors: [COLORS.base, COLORS.ours],
    refs: [{ value: stream.direct.ttfb_p50_ms + 5, label: "goal: at most direct p50 + 5 ms", color: COLORS.goal }],
    yLabel: "ms",
  });
  return svg;
}

function sizePanel(startup) {
  const title = "Size and start-up";
  if (!startup) return missing(title);
  const s = startup.size;
  const gzipKiB = s.wasm_gzip_bytes / 1024;
  const rawKiB = s.wasm_bytes / 1024;
  const maxKiB = niceMax(Math.max(1024, rawKiB) * 1.05);
  const left = 140;
  const width = W - left - M.right - 10;
  const bx = (v) => (v / maxKiB) * width;
  let body = "";
  const bar = (row, label, v, color, valueText) => {
    const by = 76 + row * 34;
    return text(left - 8, by + 15, label, 'font-size="12" text-anchor="end" fill="#222"') +
      `<rect x="${left}" y="${by}" width="${bx(v)}" height="22" fill="${color}"/>` +
      text(left + bx(v) + 6, by + 15, valueText, 'font-size="12" fill="#222" font-weight="600"');
  };
  body += text(16, 64, "wasm (KiB)", 'font-size="13" font-weight="600" fill="#333"');
  body += bar(0, "raw", rawKiB, COLORS.ours2, `${fmt(rawKiB)} KiB`);
  body += bar(1, "gzip -9", gzipKiB, gzipKiB <= 1024 ? COLORS.ours : COLORS.bad, `${fmt(gzipKiB)} KiB`);
  const gx = left + bx(1024);
  body += `<line x1="${gx}" x2="${gx}" y1="68" y2="150" stroke="${COLORS.goal}" stroke-dasharray="3 3"/>`;
  body += text(gx - 4, 162, "goal: gzip ≤ 1 MiB", `font-size="11" text-anchor="end" fill="${COLORS.goal}"`);

  const st = startup.startup;
  const maxMs = niceMax(Math.max(st.edgechat_ms.median, st.baseline_ms.median) * 1.15);
  const sx = (v) => (v / maxMs) * width;
  const sbar = (row, label, v, color) => {
    const by = 214 + row * 34;
    return text(left - 8, by + 15, label, 'font-size="12" text-anchor="end" fill="#222"') +
      `<rect x="${left}" y="${by}" width="${sx(v)}" height="22" fill="${color}"/>` +
      text(left + sx(v) + 6, by + 15, `${fmt(v)} ms`, 'font-size="12" fill="#222" font-weight="600"');
  };
  body += text(16, 202, `start-up: wrangler dev spawn → first /health 200 (median of ${st.edgechat_ms.runs.length})`, 'font-size="13" font-weight="600" fill="#333"');
  body += sbar(0, "edgechat", st.edgechat_ms.median, COLORS.ours);
  body += sbar(1, "JS baseline", st.baseline_ms.median, COLORS.base);
  const v8 = startup.wasm_v8;
  body += text(16, 344, `V8 (${v8.engine}): WebAssembly.compile ${fmt(v8.compile_ms.median)} ms, instantiate ${fmt(v8.instantiate_ms.median)} ms (medians)`, 'font-size="12" fill="#444"');
  body += text(16, 364, `glue JavaScript: ${fmt(s.glue_js_bytes / 1024)} KiB, ${fmt(s.glue_js_gzip_bytes / 1024)} KiB gzipped`, 'font-size="12" fill="#444"');
  return frame(title, `${s.wasm_file}`, body);
}

/**
 * Ingestion on the queue: MB/s against the Worker from before the queue in the same run, the largest step's CPU
 * time against a tenth of 30 s, the most D1 calls plus subrequests in one step against 50, and
 * the most memory a step held. Each bar with its limit drawn across it.
 */
function ingestionPanel(knowledge, core, preQueue) {
  const title = "Ingestion: throughput and per-step limits";
  const ing = knowledge?.ingestion;
  if (!ing && !core && !preQueue) return missing(title);
  const rows = [];
  for (const kind of ["text", "pdf"]) {
    const v = ing?.[kind];
    const vs = preQueue?.[kind];
    if (vs) rows.push({ label: `${kind} MB/s on the queue`, value: vs.now_median, limit: vs.before_median, higher: true, unit: "MB/s", note: `before it ${fmt(vs.before_median)}` });
    if (v?.steps?.count) rows.push({ label: `${kind}: calls/step`, value: v.steps.max_calls, limit: 50, higher: false, unit: "", note: "at most 50" });
  }
  const MiB = 1024 * 1024;
  const largest = ing?.largest_text?.steps;
  if (largest?.count) {
    rows.push({ label: "20 MiB upload: calls/step", value: largest.max_calls, limit: 50, higher: false, unit: "", note: "at most 50" });
    if (largest.max_wasm_memory_bytes) rows.push({ label: "20 MiB upload: memory", value: largest.max_wasm_memory_bytes / MiB, limit: 128, higher: false, unit: "MiB", note: "isolate 128 MB" });
  }
  if (core?.largest_step_text_ms !== undefined) {
    rows.push({ label: "largest step, 20 MiB text", value: core.largest_step_text_ms, limit: 3000, higher: false, unit: "ms CPU", note: "at most 3,000" });
    rows.push({ label: `largest step, ${fmt(core.largest_step_pdf_bytes / MiB)} MiB PDF`, value: core.largest_step_pdf_ms, limit: 3000, higher: false, unit: "ms CPU", note: "at most 3,000" });
  }
  if (core?.largest_step_text_peak_bytes !== undefined) {
    rows.push({ label: "its heap, 20 MiB text", value: core.largest_step_text_peak_bytes / MiB, limit: 128, higher: false, unit: "MiB", note: "isolate 128 MB" });
    rows.push({ label: "its heap, PDF", value: core.largest_step_pdf_peak_bytes / MiB, limit: 128, higher: false, unit: "MiB", note: "isolate 128 MB" });
  }
  const left = 196;
  // Room on the right for the value and the limit's note.
  const width = W - left - M.right - 190;
  let body = "";
  rows.forEach((r, i) => {
    const by = 54 + i * 31;
    const max = Math.max(r.value, r.limit) * 1.1;
    const x = (v) => (v / max) * width;
    const ok = r.higher ? r.value >= r.limit : r.value <= r.limit;
    body += text(left - 8, by + 15, r.label, 'font-size="12" text-anchor="end" fill="#222"');
    body += `<rect x="${left}" y="${by}" width="${x(r.value)}" height="20" fill="${ok ? COLORS.ours : COLORS.bad}"/>`;
    body += text(left + x(r.value) + 6, by + 15, `${fmt(r.value)} ${r.unit}`, 'font-size="12" fill="#222" font-weight="600"');
    const gx = left + x(r.limit);
    body += `<line x1="${gx}" x2="${gx}" y1="${by - 3}" y2="${by + 23}" stroke="${COLORS.goal}" stroke-width="2" stroke-dasharray="3 2"/>`;
    body += text(W - M.right, by + 15, r.note, `font-size="11" text-anchor="end" fill="${COLORS.goal}"`);
  });
  return frame(title, "queue steps under wrangler dev; the largest step natively (release build)", body);
}

function goalValue(g) {
  if (g.value === null) return "not measured";
  switch (g.unit) {
    case "ratio": return `x${g.value}`;
    case "ms added": return `+${g.value} ms`;
    default: return `${g.value} ${g.unit}`;
  }
}

function header(report) {
  const goals = report.goals.map((g) => {
    const mark = g.met === null ? "–" : g.met ? "✓" : "✗";
    const color = g.met === null ? "#888" : g.met ? COLORS.ok : COLORS.bad;
    return `<li><b style="color:${color}">${mark}</b> ${esc(g.text)}: <b>${esc(goalValue(g))}</b></li>`;
  }).join("");
  const when = report.generated_at.replace("T", " ").replace(/\.\d+Z$/, " UTC");
  return `<div class="head"><h1>edgechat benchmark</h1>
    <p>${esc(when)}${report.commit ? ` · commit ${esc(report.commit)}` : ""} · ${esc(report.machine.cpus)} CPUs · ${esc(report.machine.cpu ?? "")}
    ${report.total_seconds ? ` · run took ${Math.round(report.total_seconds / 60)} min` : ""}
    ${report.machine.load_average_1_5_15 ? ` · load average at the end ${report.machine.load_average_1_5_15.join(" / ")}` : ""}</p>
    <ul>${goals}</ul></div>`;
}

export function chartHtml(report) {
  const p = report.parts;
  return `<!doctype html><html><head><meta charset="utf-8"><title>edgechat benchmark</title><style>
    body { margin: 0; padding: 16px; font-family: "DejaVu Sans", "Liberation Sans", Arial, sans-serif; background: #f6f6f6; width: ${2 * W + 16}px; }
    svg { font-family: inherit; }
    .head { background: #fff; border: 1px solid #ddd; padding: 10px 16px; margin-bottom: 16px; }
    h1 { font-size: 22px; margin: 4px 0; }
    p { margin: 4px 0 8px; color: #555; font-size: 13px; }
    ul { margin: 0; padding: 0; list-style: none; columns: 2; font-size: 13px; line-height: 1.6; }
    .grid { display: grid; grid-template-columns: ${W}px ${W}px; gap: 16px; }
  </style></head><body>
  ${header(report)}
  <div class="grid">${retrievalPanel(p.knowledge)}${crudPanel(p.crud)}${streamPanel(p.stream)}${sizePanel(p.startup)}${ingestionPanel(p.knowledge, p.core, p.preQueue)}${hybridPanel(p.hybrid, p.knowledge)}</div>
  </body></html>`;
}

/** Writes the page to `htmlPath` and a screenshot of it to `pngPath`. */
export async function renderChart(report, pngPath, htmlPath) {
  await writeFile(htmlPath, chartHtml(report));
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 2 * W + 48, height: 800 }, deviceScaleFactor: 1.5 });
    await page.goto(pathToFileURL(htmlPath).href);
    await page.screenshot({ path: pngPath, fullPage: true });
  } finally {
    await browser.close();
  }
}
