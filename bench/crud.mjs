// CRUD benchmark: throughput and latency of three API calls under a fixed load from wrk, for
// the release Worker and for a minimal Worker in plain JavaScript (bench/baseline/) that does
// the same key lookup and the same D1 work, in one run on the same machine.
//   GET  /api/v1/chatbot/{uuid}          key lookup, one SELECT
//   GET  /api/v1/chatbot/{uuid}/agents   key lookup, chatbot, agents, tool functions
//   POST /api/v1/chatbot/create          key lookup, one batch of two INSERTs
// Both Workers run in wrangler's local runtime (tests/e2e/serve.mjs: `wrangler dev` without the
// DevTools inspector) from fresh migrated local state, each with one account,
// one key and one chatbot. For every endpoint the two are measured back to back, the order
// alternating from round to round, each after a short warm-up; a second pass with one
// connection gives the latency of a request on an otherwise idle Worker. The CPU time the
// Worker's process group (wrangler, workerd, local D1) spends per request comes from /proc.
// Writes bench-output/crud.json. Run it with `make bench` (or `node bench/crud.mjs` after a
// build, with wrk installed).
//
// Environment: BENCH_WRK_THREADS (2), BENCH_WRK_CONNECTIONS (16), BENCH_WRK_SECONDS (10),
// BENCH_WRK_WARMUP_SECONDS (2), BENCH_CRUD_ROUNDS (3), BENCH_CRUD_SERIAL_SECONDS (5; 0 skips
// the one-connection pass), BENCH_INSPECTOR (1: plain `wrangler dev`), BENCH_OUTPUT
// (bench-output).
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
  seconds: num("BENCH_WRK_SECONDS", 10),
  warmupSeconds: num("BENCH_WRK_WARMUP_SECONDS", 2),
  rounds: Math.max(1, num("BENCH_CRUD_ROUNDS", 3)),
  serialSeconds: num("BENCH_CRUD_SERIAL_SECONDS", 5),
};

const ENDPOINTS = [
  { id: "get", label: "GET /chatbot/{uuid}", method: "GET", path: (t) => `/api/v1/chatbot/${t.chatbot}` },
  { id: "agents", label: "GET /chatbot/{uuid}/agents", method: "GET", path: (t) => `/api/v1/chatbot/${t.chatbot}/agents` },
  { id: "create", label: "POST /chatbot/create", method: "POST", path: () => "/api/v1/chatbot/create", body: '{"name":"Bench"}' },
];

const T0 = performance.now();
const log = (msg) => console.log(`[${((performance.now() - T0) / 1000).toFixed(1).padStart(6)}s] ${msg}`);
const round = (x, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

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
    cpu_ms_per_request: r.requests ? round((cpuAfter.total - cpuBefore.total) / r.requests, 3) : null,
    runtime_cpu_ms_per_request: r.requests ? round((cpuAfter.runtime - cpuBefore.runtime) / r.requests, 3) : null,
  };
}

/** The shape of a JSON value (keys and types, not values), to check both Workers answer alike. */
function shape(v) {
  if (Array.isArray(v)) return v.length ? [shape(v[0])] : [];
  if (v && typeof v === "object") return Object.fromEntries(Object.keys(v).sort().map((k) => [k, shape(v[k])]));
  return typeof v;
}

/** Rounds of one setting combined: requests over time, latency percentiles averaged. */
function combine(runs) {
  const requests = runs.reduce((n, r) => n + r.requests, 0);
  const seconds = runs.reduce((n, r) => n + r.seconds, 0);
  const avg = (f) => round(mean(runs.map(f)), 3);
  return {
    requests_per_s: round(requests / seconds, 1),
    latency_ms: { p50: avg((r) => r.latency_ms.p50), p90: avg((r) => r.latency_ms.p90), p99: avg((r) => r.latency_ms.p99), mean: avg((r) => r.latency_ms.mean) },
    cpu_ms_per_request: avg((r) => r.cpu_ms_per_request ?? NaN),
    runtime_cpu_ms_per_request: avg((r) => r.runtime_cpu_ms_per_request ?? NaN),
    socket_errors: runs.reduce((n, r) => n + r.socket_errors, 0),
    rounds: runs,
  };
}

async function main() {
  await mkdir(OUT, { recursive: true });
  try {
    execFileSync("wrk", ["--version"], { stdio: "ignore" });
  } catch (err) {
    // `wrk --version` exits 1 after printing; only a missing binary is an error.
    if (err.code === "ENOENT") throw new Error("wrk is not installed: run scripts/setup.sh bench");
  }
  log(`CRUD benchmark: wrk -t${CONFIG.threads} -c${CONFIG.connections} -d${CONFIG.seconds}s after ${CONFIG.warmupSeconds}s warm-up, ${CONFIG.rounds} round(s)`);

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

    const runs = Object.fromEntries(ENDPOINTS.map((e) => [e.id, { edgechat: [], baseline: [] }]));
    const load = { threads: CONFIG.threads, connections: CONFIG.connections, seconds: CONFIG.seconds };
    for (let r = 0; r < CONFIG.rounds; r++) {
      for (const [i, e] of ENDPOINTS.entries()) {
        // Alternate who goes first, so drift in machine load falls on both alike.
        const order = (r + i) % 2 === 0 ? targets : [...targets].reverse();
        for (const t of order) {
          if (CONFIG.warmupSeconds > 0) await wrk(t, e, { ...load, seconds: CONFIG.warmupSeconds });
          const m = await wrk(t, e, load);
          runs[e.id][t.name].push(m);
          log(`  round ${r + 1} ${e.label.padEnd(28)} ${t.name.padEnd(8)} ${String(m.requests_per_s).padStart(8)} req/s  p50 ${m.latency_ms.p50} ms  p99 ${m.latency_ms.p99} ms  cpu ${m.cpu_ms_per_request} ms/req (Worker's workerd ${m.runtime_cpu_ms_per_request})`);
        }
      }
    }

    const serial = {};
    if (CONFIG.serialSeconds > 0) {
      for (const [i, e] of ENDPOINTS.entries()) {
        serial[e.id] = {};
        for (const t of i % 2 === 0 ? targets : [...targets].reverse()) {
          await wrk(t, e, { threads: 1, connections: 1, seconds: 1 });
          serial[e.id][t.name] = await wrk(t, e, { threads: 1, connections: 1, seconds: CONFIG.serialSeconds });
          log(`  one connection ${e.label.padEnd(28)} ${t.name.padEnd(8)} p50 ${serial[e.id][t.name].latency_ms.p50} ms  p99 ${serial[e.id][t.name].latency_ms.p99} ms`);
        }
      }
    }

    const endpoints = {};
    for (const e of ENDPOINTS) {
      const a = combine(runs[e.id].edgechat);
      const b = combine(runs[e.id].baseline);
      endpoints[e.id] = {
        label: e.label,
        edgechat: a,
        baseline: b,
        throughput_ratio: round(a.requests_per_s / b.requests_per_s, 3),
        p50_ratio: round(a.latency_ms.p50 / b.latency_ms.p50, 3),
        p99_ratio: round(a.latency_ms.p99 / b.latency_ms.p99, 3),
        cpu_ratio: round(a.cpu_ms_per_request / b.cpu_ms_per_request, 3),
        runtime_cpu_ratio: round(a.runtime_cpu_ms_per_request / b.runtime_cpu_ms_per_request, 3),
        same_answer_shape: sameShape[e.id],
      };
      if (serial[e.id]) {
        const sa = serial[e.id].edgechat;
        const sb = serial[e.id].baseline;
        endpoints[e.id].one_connection = {
          edgechat: sa,
          baseline: sb,
          p50_ratio: round(sa.latency_ms.p50 / sb.latency_ms.p50, 3),
          p99_ratio: round(sa.latency_ms.p99 / sb.latency_ms.p99, 3),
        };
      }
    }
    const report = {
      started_at: new Date(Date.now() - (performance.now() - T0)).toISOString(),
      machine: { cpus: os.cpus().length, cpu: os.cpus()[0]?.model, node: process.version },
      config: { ...CONFIG, tool: "wrk", request_timeout_s: 10 },
      endpoints,
      notes: [
        "Throughput and latency under load: wrk with the threads, connections and duration in config, after a warm-up; rounds are combined as total requests over total time, latency percentiles averaged over rounds.",
        "one_connection: wrk -t1 -c1, the latency of one request at a time on an otherwise idle Worker.",
        "cpu_ms_per_request: user+system CPU of the Worker's whole process group (wrangler's node, the proxy workerd, the workerd running the Worker with local D1) during the measured run, per request; runtime_cpu_ms_per_request: of the workerd running the Worker and D1 alone.",
        "inspector false: the Workers ran through tests/e2e/serve.mjs (wrangler's local runtime without the DevTools inspector); with the inspector, as plain `wrangler dev` has it, wrangler's node process and the proxy spend several ms of CPU per request and the figures measure mostly that.",
        "The baseline (bench/baseline/worker.js) runs the same SQL as src/storage; keep the two in step when that SQL changes.",
      ],
      seconds: round((performance.now() - T0) / 1000, 1),
    };
    await writeFile(path.join(OUT, "crud.json"), JSON.stringify(report, null, 2) + "\n");
    console.log(`\nCRUD under load (wrk -t${CONFIG.threads} -c${CONFIG.connections} -d${CONFIG.seconds}s, ${CONFIG.rounds} round(s)); ours / baseline`);
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
