// CRUD benchmark: throughput and latency of three API calls under a fixed load from wrk, for
// the release Worker and for a minimal Worker in plain JavaScript (bench/baseline/) that does
// the same key lookup and the same D1 work, in one run on the same machine.
//   GET  /api/v1/chatbot/{uuid}          key lookup, one SELECT
//   GET  /api/v1/chatbot/{uuid}/agents   key lookup, chatbot, agents, tool functions
//   POST /api/v1/chatbot/create          key lookup, one batch of two INSERTs
// Both Workers run in wrangler's local runtime (tests/e2e/serve.mjs: `wrangler dev` without the
// DevTools inspector) from fresh migrated local state, each with one account,
// one key and one chatbot. For every endpoint, after a warm-up of each, the two take turns in
// short wrk runs (A B B A A B ...), so that other work on this shared machine, which comes and
// goes within seconds, falls on both alike: each figure is the median over the runs, and each
// ratio the median of the ratios of runs measured back to back. A second pass with one
// connection gives the latency of a request on an otherwise idle Worker. The CPU time spent per
// request comes from /proc: all of the Worker's process group (wrangler, the proxy, the
// runtime with local D1) and the workerd running the Worker alone.
// Writes bench-output/crud.json. Run it with `make bench` (or `node bench/crud.mjs` after a
// build, with wrk installed).
//
// Environment: BENCH_WRK_THREADS (2), BENCH_WRK_CONNECTIONS (16), BENCH_WRK_SECONDS (2, one
// run), BENCH_CRUD_RUNS (12 runs of each Worker per endpoint), BENCH_WRK_WARMUP_SECONDS (2),
// BENCH_CRUD_SERIAL_RUNS (5 one-second runs with one connection; 0 skips that pass),
// BENCH_INSPECTOR (1: plain `wrangler dev`), BENCH_OUTPUT (bench-output).
import { execFile, execFileSync } from "node:child_process";
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { startWorker, client, ROOT } from "../tests/e2e/harness.mjs";

const execFileAsync = promisify(execFile);
const OUT = path.resolve(ROOT, process.env.BENCH_OUTPUT ?? "bench-output");
const num = (name, fallback) => {
  const v = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(v) || v < 0) throw new Error(`${name} must be a number`);
  return v;
};
// Without the DevTools inspector unless BENCH_INSPECTOR=1 (see tests/e2e/serve.mjs).
const INSPECTOR = process.env.BENCH_INSPECTOR === "1";
const CONFIG = {
  inspector: INSPECTOR,
  threads: num("BENCH_WRK_THREADS", 2),
  connections: num("BENCH_WRK_CONNECTIONS", 16),
  seconds: Math.max(1, num("BENCH_WRK_SECONDS", 2)),
  runs: Math.max(1, num("BENCH_CRUD_RUNS", 12)),
  warmupSeconds: num("BENCH_WRK_WARMUP_SECONDS", 2),
  serialRuns: num("BENCH_CRUD_SERIAL_RUNS", 5),
};

const ENDPOINTS = [
  { id: "get", label: "GET /chatbot/{uuid}", method: "GET", path: (t) => `/api/v1/chatbot/${t.chatbot}` },
  { id: "agents", label: "GET /chatbot/{uuid}/agents", method: "GET", path: (t) => `/api/v1/chatbot/${t.chatbot}/agents` },
  { id: "create", label: "POST /chatbot/create", method: "POST", path: () => "/api/v1/chatbot/create", body: '{"name":"Bench"}' },
];

const T0 = performance.now();
const log = (msg) => console.log(`[${((performance.now() - T0) / 1000).toFixed(1).padStart(6)}s] ${msg}`);
const round = (x, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

/**
 * CPU time (ms, user + system) of a process group, from /proc: in all, and of the workerd
 * process that runs the Worker and local D1 (wrangler puts a second workerd in front of it as a
 * proxy: that one listens on the Worker's public port).
 */
async function groupCpuMs(pgid, publicPort) {
  let total = 0;
  let runtime = 0;
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = await readFile(`/proc/${name}/stat`, "utf8");
      // The command name may hold spaces; the fields after it are fixed.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[2]) !== pgid) continue;
      const ticks = Number(fields[11]) + Number(fields[12]);
      total += ticks;
      const cmdline = await readFile(`/proc/${name}/cmdline`, "utf8");
      if (cmdline.includes("workerd") && !cmdline.includes(`entry=127.0.0.1:${publicPort}\0`)) runtime += ticks;
    } catch { /* the process ended */ }
  }
  return { total: (total * 1000) / CLOCK_TICKS, runtime: (runtime * 1000) / CLOCK_TICKS };
}

async function wrk(target, endpoint, { threads, connections, seconds }) {
  const args = ["-t", String(threads), "-c", String(connections), "-d", `${seconds}s`, "--timeout", "10s",
    "-s", path.join(ROOT, "bench/wrk.lua"), target.worker.base + endpoint.path(target)];
  const env = { ...process.env, BENCH_METHOD: endpoint.method, BENCH_BODY: endpoint.body ?? "", BENCH_KEY: target.key };
  const pgid = target.worker.child.pid;
  const cpuBefore = await groupCpuMs(pgid, target.worker.port);
  const { stdout } = await execFileAsync("wrk", args, { env, maxBuffer: 1 << 20 });
  const cpuAfter = await groupCpuMs(pgid, target.worker.port);
  const line = stdout.split("\n").find((l) => l.startsWith("BENCH_JSON "));
  if (!line) throw new Error(`wrk printed no summary:\n${stdout}`);
  const r = JSON.parse(line.slice("BENCH_JSON ".length));
  if (r.errors.status > 0) {
    throw new Error(`${target.name} ${endpoint.label}: ${r.errors.status} of ${r.requests} answers were not 2xx`);
  }
  const secondsRun = r.duration_us / 1e6;
  return {
    requests: r.requests,
    seconds: round(secondsRun, 3),
    requests_per_s: round(r.requests / secondsRun, 1),
    latency_ms: {
      p50: round(r.latency_us.p50 / 1000, 3),
      p90: round(r.latency_us.p90 / 1000, 3),
      p99: round(r.latency_us.p99 / 1000, 3),
      mean: round(r.latency_us.mean / 1000, 3),
      max: round(r.latency_us.max / 1000, 3),
    },
    socket_errors: r.errors.connect + r.errors.read + r.errors.write + r.errors.timeout,
    cpu_ms: round(cpuAfter.total - cpuBefore.total, 1),
    runtime_cpu_ms: round(cpuAfter.runtime - cpuBefore.runtime, 1),
  };
}

/** The shape of a JSON value (keys and types, not values), to check both Workers answer alike. */
function shape(v) {
  if (Array.isArray(v)) return v.length ? [shape(v[0])] : [];
  if (v && typeof v === "object") return Object.fromEntries(Object.keys(v).sort().map((k) => [k, shape(v[k])]));
  return typeof v;
}

/**
 * The runs of one Worker on one endpoint: medians over the runs for throughput and latency,
 * CPU per request over all of them (CPU is counted in 10 ms ticks, too coarse for one run).
 */
function combine(runs) {
  const requests = runs.reduce((n, r) => n + r.requests, 0);
  const med = (f) => round(median(runs.map(f)), 3);
  return {
    requests_per_s: round(median(runs.map((r) => r.requests_per_s)), 1),
    latency_ms: { p50: med((r) => r.latency_ms.p50), p90: med((r) => r.latency_ms.p90), p99: med((r) => r.latency_ms.p99), mean: med((r) => r.latency_ms.mean) },
    requests,
    cpu_ms_per_request: round(runs.reduce((n, r) => n + r.cpu_ms, 0) / requests, 3),
    runtime_cpu_ms_per_request: round(runs.reduce((n, r) => n + r.runtime_cpu_ms, 0) / requests, 3),
    socket_errors: runs.reduce((n, r) => n + r.socket_errors, 0),
    runs: runs.map(({ requests_per_s, latency_ms }) => ({ requests_per_s, p50_ms: latency_ms.p50, p99_ms: latency_ms.p99 })),
  };
}

/** Runs `e` on both targets, taking turns; returns each target's runs, paired by index. */
async function alternate(targets, e, load, runs, offset) {
  const out = Object.fromEntries(targets.map((t) => [t.name, []]));
  for (let i = 0; i < runs; i++) {
    // A B, B A, A B, ...: each pair back to back, neither always first.
    const order = (i + offset) % 2 === 0 ? targets : [...targets].reverse();
    for (const t of order) out[t.name].push(await wrk(t, e, load));
  }
  return out;
}

const ratioMedian = (a, b, f) => round(median(a.map((x, i) => f(x) / f(b[i]))), 3);

/** The middle half of the pairs' ratios: how much the machine moved the figure. */
function quartiles(a, b, f) {
  const s = a.map((x, i) => f(x) / f(b[i])).sort((x, y) => x - y);
  const at = (q) => s[Math.min(s.length - 1, Math.max(0, Math.round(q * (s.length - 1))))];
  return [round(at(0.25), 3), round(at(0.75), 3)];
}

async function main() {
  await mkdir(OUT, { recursive: true });
  try {
    execFileSync("wrk", ["--version"], { stdio: "ignore" });
  } catch (err) {
    // `wrk --version` exits 1 after printing; only a missing binary is an error.
    if (err.code === "ENOENT") throw new Error("wrk is not installed: run scripts/setup.sh bench");
  }
  log(`CRUD benchmark: ${CONFIG.runs} runs of wrk -t${CONFIG.threads} -c${CONFIG.connections} -d${CONFIG.seconds}s for each Worker and endpoint, taking turns, after ${CONFIG.warmupSeconds}s warm-up`);

  log(`starting edgechat and the JavaScript baseline (${INSPECTOR ? "wrangler dev" : "wrangler's runtime without the inspector"}, fresh migrated state each)`);
  const [ours, baseline] = await Promise.all([
    startWorker({ inspector: INSPECTOR }),
    startWorker({ config: "bench/baseline/wrangler.toml", inspector: INSPECTOR }),
  ]);
  const targets = [
    { name: "edgechat", worker: ours },
    { name: "baseline", worker: baseline },
  ];
  try {
    // One account and key each: through the API for edgechat, as the same rows for the
    // baseline, which has no key endpoint.
    targets[0].key = (await ours.newAccount("bench")).key;
    const key = `ec_${randomBytes(32).toString("hex")}`;
    const hash = createHash("sha256").update(key).digest("hex");
    const account = randomUUID();
    const stamp = new Date().toISOString().replace(/\.\d+Z$/, "Z");
    await baseline.sql(
      `INSERT INTO accounts (uuid, created_at) VALUES ('${account}', '${stamp}');\n` +
      "INSERT INTO api_keys (uuid, account_uuid, name, key_hash, prefix, created_at) " +
      `VALUES ('${randomUUID()}', '${account}', 'bench', '${hash}', '${key.slice(0, 9)}', '${stamp}')`,
    );
    targets[1].key = key;

    const shapes = {};
    for (const t of targets) {
      const api = client(t.worker, t.key);
      const created = await api.post("/chatbot/create", { body: { name: "Bench" } });
      if (created.status !== 200) throw new Error(`${t.name}: creating a chatbot: ${created.status} ${created.text}`);
      t.chatbot = created.json.uuid;
      shapes[t.name] = {};
      for (const e of ENDPOINTS) {
        const r = await t.worker.request(e.method, e.path(t), { key: t.key, raw: e.body, headers: e.body ? { "Content-Type": "application/json" } : {} });
        if (r.status !== 200) throw new Error(`${t.name} ${e.label}: ${r.status} ${r.text}`);
        shapes[t.name][e.id] = JSON.stringify(shape(r.json));
      }
    }
    const sameShape = Object.fromEntries(ENDPOINTS.map((e) => [e.id, shapes.edgechat[e.id] === shapes.baseline[e.id]]));
    for (const e of ENDPOINTS) {
      if (!sameShape[e.id]) log(`  note: the two answers to ${e.label} differ in shape`);
    }

    const load = { threads: CONFIG.threads, connections: CONFIG.connections, seconds: CONFIG.seconds };
    const endpoints = {};
    for (const [i, e] of ENDPOINTS.entries()) {
      for (const t of targets) {
        if (CONFIG.warmupSeconds > 0) await wrk(t, e, { ...load, seconds: CONFIG.warmupSeconds });
      }
      const runs = await alternate(targets, e, load, CONFIG.runs, i);
      const [a, b] = [runs.edgechat, runs.baseline];
      const ea = combine(a);
      const eb = combine(b);
      endpoints[e.id] = {
        label: e.label,
        edgechat: ea,
        baseline: eb,
        throughput_ratio: ratioMedian(a, b, (r) => r.requests_per_s),
        throughput_ratio_quartiles: quartiles(a, b, (r) => r.requests_per_s),
        p50_ratio: ratioMedian(a, b, (r) => r.latency_ms.p50),
        p99_ratio: ratioMedian(a, b, (r) => r.latency_ms.p99),
        cpu_ratio: round(ea.cpu_ms_per_request / eb.cpu_ms_per_request, 3),
        runtime_cpu_ratio: round(ea.runtime_cpu_ms_per_request / eb.runtime_cpu_ms_per_request, 3),
        same_answer_shape: sameShape[e.id],
      };
      const m = endpoints[e.id];
      log(`  ${e.label.padEnd(28)} ${ea.requests_per_s} / ${eb.requests_per_s} req/s (x${m.throughput_ratio}), ` +
        `p50 ${ea.latency_ms.p50} / ${eb.latency_ms.p50} ms, Worker CPU ${ea.runtime_cpu_ms_per_request} / ${eb.runtime_cpu_ms_per_request} ms/req`);
    }

    if (CONFIG.serialRuns > 0) {
      const one = { threads: 1, connections: 1, seconds: 1 };
      for (const [i, e] of ENDPOINTS.entries()) {
        const runs = await alternate(targets, e, one, CONFIG.serialRuns, i);
        const [a, b] = [combine(runs.edgechat), combine(runs.baseline)];
        endpoints[e.id].one_connection = {
          edgechat: a,
          baseline: b,
          p50_ratio: ratioMedian(runs.edgechat, runs.baseline, (r) => r.latency_ms.p50),
          p99_ratio: ratioMedian(runs.edgechat, runs.baseline, (r) => r.latency_ms.p99),
        };
        log(`  one connection ${e.label.padEnd(28)} p50 ${a.latency_ms.p50} / ${b.latency_ms.p50} ms, p99 ${a.latency_ms.p99} / ${b.latency_ms.p99} ms`);
      }
    }

    const report = {
      started_at: new Date(Date.now() - (performance.now() - T0)).toISOString(),
      machine: { cpus: os.cpus().length, cpu: os.cpus()[0]?.model, node: process.version },
      config: { ...CONFIG, tool: "wrk", request_timeout_s: 10 },
      endpoints,
      notes: [
        "Under load: `runs` wrk runs of each Worker with the threads, connections and seconds in config, the two taking turns after a warm-up. requests_per_s and latency_ms: medians over the runs; *_ratio: ours/baseline, the median over pairs of runs measured back to back (cpu ratios: of the totals).",
        "one_connection: `serialRuns` one-second runs of wrk -t1 -c1 each, taking turns: the latency of one request at a time on an otherwise idle Worker.",
        "cpu_ms_per_request: user+system CPU of the Worker's whole process group (wrangler's node, the proxy workerd, the workerd running the Worker with local D1) during the measured run, per request; runtime_cpu_ms_per_request: of the workerd running the Worker and D1 alone.",
        "inspector false: the Workers ran through tests/e2e/serve.mjs (wrangler's local runtime without the DevTools inspector); with the inspector, as plain `wrangler dev` has it, wrangler's node process and the proxy spend several ms of CPU per request and the figures measure mostly that.",
        "The baseline (bench/baseline/worker.js) reads and writes the same rows as src/storage, the key lookup first and then the read; edgechat checks the key inside its first statement. Keep the two in step when the schema changes.",
      ],
      seconds: round((performance.now() - T0) / 1000, 1),
    };
    await writeFile(path.join(OUT, "crud.json"), JSON.stringify(report, null, 2) + "\n");
    console.log(`\nCRUD under load (${CONFIG.runs} x wrk -t${CONFIG.threads} -c${CONFIG.connections} -d${CONFIG.seconds}s each); ours / baseline`);
    for (const e of Object.values(endpoints)) {
      console.log(`  ${e.label.padEnd(28)} ${e.edgechat.requests_per_s} / ${e.baseline.requests_per_s} req/s (x${e.throughput_ratio}), ` +
        `p50 ${e.edgechat.latency_ms.p50} / ${e.baseline.latency_ms.p50} ms, p99 ${e.edgechat.latency_ms.p99} / ${e.baseline.latency_ms.p99} ms, ` +
        `cpu ${e.edgechat.cpu_ms_per_request} / ${e.baseline.cpu_ms_per_request} ms/req ` +
        `(Worker's workerd ${e.edgechat.runtime_cpu_ms_per_request} / ${e.baseline.runtime_cpu_ms_per_request})` +
        (e.one_connection ? `; one connection p50 ${e.one_connection.edgechat.latency_ms.p50} / ${e.one_connection.baseline.latency_ms.p50} ms` : ""));
    }
  } finally {
    await Promise.all([ours.dispose(), baseline.dispose()]);
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
