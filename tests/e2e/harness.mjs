// Starts the built Worker under `wrangler dev` on a free port with a fresh state folder (real
// local D1, R2 and Durable Objects) and gives tests a small HTTP client for it.
import { spawn, execFile } from "node:child_process";
import { cp, mkdtemp, mkdir, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";
import { randomBytes } from "node:crypto";
import { Agent, setGlobalDispatcher } from "undici";

const execFileAsync = promisify(execFile);
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const WRANGLER = path.join(ROOT, "node_modules/.bin/wrangler");
const SERVE = path.join(ROOT, "tests/e2e/serve.mjs");
export const OUTPUT = process.env.E2E_OUTPUT ?? path.join(ROOT, "test-output");

const wranglerEnv = {
  ...process.env,
  WRANGLER_SEND_METRICS: "false",
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
  XDG_CONFIG_HOME: path.join(OUTPUT, "xdg"),
};

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** What marks a line of the Worker's output as an internal failure. */
const INTERNAL_ERROR = /internal error|panicked/i;

async function migratedStateDir(config) {
  await mkdir(OUTPUT, { recursive: true });
  const dir = await mkdtemp(path.join(OUTPUT, "state-"));
  if (process.env.E2E_STATE_TEMPLATE) {
    await cp(process.env.E2E_STATE_TEMPLATE, dir, { recursive: true });
  } else {
    const args = ["d1", "migrations", "apply", "DB", "--local", "--persist-to", dir];
    if (config) args.push("--config", config);
    await execFileAsync(WRANGLER, args, {
      cwd: ROOT,
      env: wranglerEnv,
    });
  }
  return dir;
}

/**
 * A running Worker. `vars` are passed as Worker variables; ADMIN_TOKEN and WIDGET_TOKEN_SECRET
 * are random unless given. API keys and token minting get rates far above their defaults
 * (scenarios, benchmarks and the evaluation poll and fan out with one key, and every visitor
 * of a test comes from this one machine); a test of a default rate sets `API_KEY_RATE_LIMIT`
 * or `VISITOR_TOKEN_RATE_LIMIT` itself. `config` names another wrangler configuration (the benchmark's
 * baseline Worker); it must bind the same database, so the same migrated state serves it.
 * `inspector: false` runs it through serve.mjs instead of `wrangler dev`: the same runtime
 * without the DevTools inspector, whose per-request relaying the benchmarks would otherwise
 * measure; it prints only warnings and errors unless `workerLogs` (then also the Worker's own
 * info lines, such as its `ingestion step` figures). `direct` (with `inspector: false`) sends
 * requests to the runtime's own socket instead of through wrangler's local proxy: under load,
 * the proxy's pooled connection to the runtime and the runtime's server both drop a connection
 * idle for 5 s, and a request written on one at that moment fails; the proxy answers a POST so
 * failed with 503 "Your worker restarted mid-request" though nothing restarted (workers-sdk
 * issue 14641). Direct requests go out on connections this process drops after 1 s idle, so
 * they never meet that race. With `failOnInternalErrors`, `dispose()` throws when the Worker logged an internal
 * error at any time in its life (the end-to-end tests start every Worker so, see suite.mjs).
 */
/**
 * How a benchmark reaches its Worker: without the inspector unless BENCH_INSPECTOR=1, and then
 * on the runtime's own socket unless BENCH_PROXY=1 (wrangler's local proxy is not on the
 * deployed path, and its hop would be counted as the Worker's).
 */
export function benchWorkerOptions() {
  const inspector = process.env.BENCH_INSPECTOR === "1";
  return { inspector, direct: !inspector && process.env.BENCH_PROXY !== "1" };
}

export async function startWorker({ vars = {}, testScheduled = false, config, inspector = true, direct = false, failOnInternalErrors = false, workerLogs = false } = {}) {
  if (direct && inspector) throw new Error("startWorker: `direct` needs `inspector: false`");
  const stateDir = await migratedStateDir(config);
  const worker = new Worker(stateDir, {
    ADMIN_TOKEN: randomBytes(16).toString("hex"),
    WIDGET_TOKEN_SECRET: randomBytes(32).toString("hex"),
    ALLOW_PRIVATE_URLS: "true",
    API_KEY_RATE_LIMIT: "100000/60",
    VISITOR_TOKEN_RATE_LIMIT: "100000/60",
    ...vars,
  });
  worker.testScheduled = testScheduled;
  worker.config = config;
  worker.inspector = inspector;
  worker.direct = direct;
  if (direct) setGlobalDispatcher(new Agent({ keepAliveTimeout: 1000, keepAliveMaxTimeout: 1000 }));
  worker.workerLogs = workerLogs;
  worker.failOnInternalErrors = failOnInternalErrors;
  await worker.start();
  return worker;
}

class Worker {
  constructor(stateDir, vars) {
    this.stateDir = stateDir;
    this.vars = vars;
    this.adminToken = vars.ADMIN_TOKEN;
    this.widgetTokenSecret = vars.WIDGET_TOKEN_SECRET;
    this.log = "";
    /** Every line the Worker logged about an internal error or a panic, over its whole life. */
    this.internalErrors = [];
    /** The figures of every ingestion step the Worker logged (its `ingestion step` lines). */
    this.ingestionSteps = [];
  }

  async start() {
    // A free port is found by binding and releasing it, so a Worker starting at the same
    // moment can take it first; then wrangler exits at once and another port is tried.
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.startOnce();
      } catch (err) {
        if (attempt >= 3 || !/EADDRINUSE|Address already in use/.test(String(err.message))) throw err;
      }
    }
  }

  async startOnce() {
    this.port = await freePort();
    this.base = `http://127.0.0.1:${this.port}`;
    const args = this.inspector === false
      ? [SERVE, "--ip", "127.0.0.1", "--port", String(this.port), "--persist-to", this.stateDir, ...(this.workerLogs ? ["--worker-logs"] : [])]
      : [
        "dev", "--ip", "127.0.0.1", "--port", String(this.port),
        "--inspector-port", String(await freePort()),
        "--persist-to", this.stateDir, "--show-interactive-dev-session=false",
      ];
    for (const [k, v] of Object.entries(this.vars)) args.push("--var", `${k}:${v}`);
    // Exposes /__scheduled, through which tests run the cron handler.
    if (this.testScheduled) args.push("--test-scheduled");
    if (this.config) args.push("--config", this.config);
    // Its own process group, so stopping it ends node, esbuild and workerd together.
    const spawnedAt = performance.now();
    this.runtimeUrl = undefined;
    const command = this.inspector === false ? process.execPath : WRANGLER;
    this.child = spawn(command, args, { cwd: ROOT, env: wranglerEnv, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    // Lines are judged whole: a chunk of output may end in the middle of one.
    const watch = (stream) => {
      let partial = "";
      const judge = (line) => {
        const runtime = /^Runtime on (http:\/\/\S+)/.exec(line);
        if (runtime) this.runtimeUrl = runtime[1];
        if (INTERNAL_ERROR.test(line)) this.internalErrors.push(line);
        if (line.includes('"ingestion step"')) {
          try { this.ingestionSteps.push(JSON.parse(line.slice(line.indexOf("{"))).report); } catch { /* not a whole line */ }
        }
      };
      stream.on("data", (d) => {
        this.log = (this.log + d).slice(-20000);
        const lines = (partial + d).split("\n");
        partial = lines.pop();
        lines.forEach(judge);
      });
      stream.on("end", () => judge(partial));
    };
    watch(this.child.stdout);
    watch(this.child.stderr);
    const closed = (stream) => new Promise((resolve) => stream.once("close", resolve));
    this.outputRead = Promise.all([closed(this.child.stdout), closed(this.child.stderr)]);
    this.exited = new Promise((resolve) => this.child.once("exit", resolve));
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      if (this.child.exitCode !== null) throw new Error(`wrangler dev exited early:\n${this.log}`);
      try {
        const r = await fetch(`${this.base}/health`);
        if (r.status === 200) {
          // From spawning wrangler to the first healthy answer (the benchmark reports it).
          this.readyMs = performance.now() - spawnedAt;
          if (this.direct) await this.useRuntimeSocket(deadline);
          return;
        }
      } catch { /* not listening yet */ }
      await sleep(this.pollMs ?? 100);
    }
    // Its process group runs on its own: a Worker that never became ready is stopped here, not
    // left behind when the test process ends.
    await this.stop();
    throw new Error(`the Worker did not become ready:\n${this.log}`);
  }

  /** Switches `base` to the runtime's own socket, which serve.mjs prints once it is ready. */
  async useRuntimeSocket(deadline) {
    while (Date.now() < deadline) {
      if (this.runtimeUrl) {
        this.base = this.runtimeUrl;
        return;
      }
      await sleep(50);
    }
    throw new Error(`serve.mjs did not print the runtime's address:\n${this.log}`);
  }

  async stop() {
    if (!this.child || this.child.exitCode !== null) return;
    try { process.kill(-this.child.pid, "SIGTERM"); } catch { /* already gone */ }
    const timer = setTimeout(() => { try { process.kill(-this.child.pid, "SIGKILL"); } catch {} }, 5000);
    await this.exited;
    clearTimeout(timer);
    // workerd can outlive wrangler's node process; nothing of this group may stay behind.
    try { process.kill(-this.child.pid, "SIGKILL"); } catch { /* the group is gone */ }
  }

  async restart() {
    await this.stop();
    await this.start();
  }

  /** Stops the Worker for good and removes its state; a second call does nothing. */
  async dispose() {
    if (this.disposed) return;
    this.disposed = true;
    await this.stop();
    // What the Worker wrote just before it stopped may still be on its way.
    await Promise.race([this.outputRead, sleep(2000)]);
    await rm(this.stateDir, { recursive: true, force: true });
    if (this.failOnInternalErrors) this.assertNoInternalErrors();
  }

  /** Throws when the Worker logged an internal error or a panic. */
  assertNoInternalErrors() {
    if (this.internalErrors.length === 0) return;
    throw new Error(
      `the Worker on ${this.base} logged ${this.internalErrors.length} internal error(s); ` +
      `a test that provokes one on purpose starts its Worker with expectInternalErrors and checks them itself:\n` +
      this.internalErrors.join("\n"),
    );
  }

  /** Raw request; `body` objects are sent as JSON. */
  async request(method, urlPath, { key, body, headers = {}, raw, timeoutMs } = {}) {
    const h = { ...headers };
    if (key) h.Authorization = `Bearer ${key}`;
    let payload = raw;
    if (body !== undefined) {
      payload = JSON.stringify(body);
      h["Content-Type"] ??= "application/json";
    }
    let res;
    const send = () => fetch(this.base + urlPath, {
      method, headers: h, body: payload, signal: timeoutMs ? AbortSignal.timeout(timeoutMs) : undefined,
    });
    try {
      try {
        res = await send();
      } catch (err) {
        // A kept-alive connection the runtime closes just as it is reused fails before any
        // answer; an idempotent request is sent once more on a new one, as HTTP clients do.
        const closed = /other side closed|ECONNRESET|socket hang up/i.test(String(err.cause?.message ?? err.message));
        if (!closed || !["GET", "HEAD"].includes(method)) throw err;
        res = await send();
      }
    } catch (err) {
      // A Worker that stops answering says why only in its own output: keep its last lines.
      throw new Error(`${method} ${urlPath} on ${this.base}: ${err.cause?.message ?? err.message}\nthe Worker's last output:\n${this.log.slice(-6000)}`, { cause: err });
    }
    const text = await res.text();
    let json;
    try { json = text ? JSON.parse(text) : undefined; } catch { json = undefined; }
    return { status: res.status, headers: res.headers, text, json };
  }

  /** Runs the scheduled (cron) handler once; needs `startWorker({testScheduled: true})`. */
  async runScheduled() {
    const r = await fetch(`${this.base}/__scheduled?cron=${encodeURIComponent("*/10 * * * *")}`);
    if (r.status !== 200) throw new Error(`scheduled run failed: ${r.status} ${await r.text()}`);
  }

  /** Runs SQL against the Worker's local D1 database and returns the rows. */
  async sql(query) {
    const { stdout } = await execFileAsync(
      WRANGLER,
      ["d1", "execute", "DB", "--local", "--persist-to", this.stateDir, "--json", "--command", query,
        ...(this.config ? ["--config", this.config] : [])],
      { cwd: ROOT, env: wranglerEnv, maxBuffer: 64 << 20 },
    );
    const parsed = JSON.parse(stdout);
    return parsed[0].results;
  }

  /**
   * Keys of the objects under `prefix` in the Worker's local R2 bucket, read straight from the
   * SQLite file that local R2 keeps them in.
   */
  async r2List(prefix) {
    const script = `
import glob, json, sqlite3, sys
keys = []
for path in glob.glob(sys.argv[1] + "/v3/r2/*/*.sqlite"):
    if path.endswith("metadata.sqlite"):
        continue
    db = sqlite3.connect("file:" + path + "?mode=ro", uri=True)
    try:
        keys += [k for (k,) in db.execute("SELECT key FROM _mf_objects WHERE substr(key, 1, length(?)) = ?", (sys.argv[2], sys.argv[2]))]
    finally:
        db.close()
print(json.dumps(sorted(keys)))
`;
    const { stdout } = await execFileAsync("python3", ["-c", script, this.stateDir, prefix]);
    return JSON.parse(stdout);
  }

  /**
   * Runs a read-only query against every stored Durable Object of the class whose name holds
   * `className`, straight from the SQLite files local Durable Objects keep, and returns all
   * rows together (an object that never stored anything has no file and adds none).
   */
  async durableObjectRows(className, query) {
    const script = `
import glob, json, sqlite3, sys
rows = []
for path in glob.glob(sys.argv[1] + "/v3/do/*" + sys.argv[2] + "*/*.sqlite"):
    db = sqlite3.connect("file:" + path + "?mode=ro", uri=True)
    try:
        db.row_factory = sqlite3.Row
        try:
            rows += [dict(r) for r in db.execute(sys.argv[3])]
        except sqlite3.OperationalError:
            pass  # the object's tables were never created
    finally:
        db.close()
print(json.dumps(rows))
`;
    const { stdout } = await execFileAsync("python3", ["-c", script, this.stateDir, className, query]);
    return JSON.parse(stdout);
  }

  /** A new account and a key on it. */
  async newAccount(name = "test") {
    const r = await this.request("POST", "/api/v1/api-key/create", { key: this.adminToken, body: { name } });
    if (r.status !== 200) throw new Error(`creating an account failed: ${r.status} ${r.text}`);
    return r.json;
  }
}

/** A client bound to one API key, with the paths under /api/v1. */
export function client(worker, key) {
  const call = (method) => (p, opts = {}) => worker.request(method, `/api/v1${p}`, { key, ...opts });
  return { get: call("GET"), post: call("POST"), del: call("DELETE"), put: call("PUT"), patch: call("PATCH") };
}

/** Asserts the contract's error shape and returns the error object. */
export function expectError(assert, res, status, code, field) {
  assert.equal(res.status, status, `expected ${status} ${code}, got ${res.status}: ${res.text}`);
  assert.equal(res.json?.success, false, res.text);
  assert.equal(res.json.error.code, code, res.text);
  assert.ok(typeof res.json.error.message === "string" && res.json.error.message.length > 0, res.text);
  if (field !== undefined) assert.equal(res.json.error.field, field, res.text);
  assert.match(res.headers.get("content-type") ?? "", /application\/json/);
  return res.json.error;
}

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
export const TIMESTAMP_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

/**
 * A local HTTP server that plays an outside party. `handler(req, res, body)` answers each
 * request; `server.requests` records what arrived.
 */
export async function startServer(handler) {
  const { createServer: createHttpServer } = await import("node:http");
  const requests = [];
  const server = createHttpServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks).toString("utf8");
    requests.push({ method: req.method, url: req.url, headers: req.headers, body, at: Date.now() });
    try {
      await handler(req, res, body);
    } catch (err) {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(err));
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${server.address().port}`;
  return {
    base,
    requests,
    close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(() => resolve()); }),
  };
}

/** Polls a data source until it leaves `await` and `running`. */
export async function settled(api, uuid, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let r;
    try {
      r = await api.get(`/data-source/${uuid}`, { timeoutMs: 30_000 });
    } catch (err) {
      // Under a loaded full run, a poll has been seen to wait forever for headers while the
      // Worker went on working (its log shows no such request). An aborted request takes its
      // connection with it, so the next poll goes out on a new one; a Worker that is really
      // stuck leaves every poll unanswered until the deadline.
      if (err.cause?.name !== "TimeoutError" || Date.now() > deadline) throw err;
      console.error(`# a poll of source ${uuid} had no answer in 30 s; polling again on a new connection`);
      continue;
    }
    if (r.status !== 200) throw new Error(`reading source ${uuid}: ${r.status} ${r.text}`);
    if (!["await", "running"].includes(r.json.status)) return r.json;
    if (Date.now() > deadline) throw new Error(`source ${uuid} still ${r.json.status}`);
    await sleep(100);
  }
}

/** Sends a multipart upload the way a browser form would. */
export async function upload(worker, key, chatbotUuid, { name, bytes, type = "application/octet-stream", meta }) {
  const form = new FormData();
  form.append("file", new Blob([bytes], { type }), name);
  if (meta !== undefined) form.append("meta_json", typeof meta === "string" ? meta : JSON.stringify(meta));
  const res = await fetch(`${worker.base}/api/v1/chatbot/${chatbotUuid}/data-source/upload`, {
    method: "POST",
    headers: { Authorization: `Bearer ${key}` },
    body: form,
  });
  const text = await res.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, headers: res.headers, text, json };
}

/**
 * Sends a message to a session's stream endpoint and reads the answer as it arrives.
 * `abortAfter` closes the connection once that many characters have arrived.
 */
export async function streamMessage(worker, key, sessionUuid, query, { accept, abortAfter } = {}) {
  const controller = new AbortController();
  const headers = { Authorization: `Bearer ${key}`, "Content-Type": "application/json" };
  if (accept) headers.Accept = accept;
  const started = performance.now();
  const res = await fetch(`${worker.base}/api/v1/session/${sessionUuid}/message/stream`, {
    method: "POST", headers, body: JSON.stringify({ query }), signal: controller.signal,
  });
  const decoder = new TextDecoder();
  const chunks = [];
  let text = "";
  let firstByteMs;
  try {
    for await (const piece of res.body) {
      firstByteMs ??= performance.now() - started;
      const s = decoder.decode(piece, { stream: true });
      chunks.push(s);
      text += s;
      if (abortAfter !== undefined && text.length >= abortAfter) {
        controller.abort();
        break;
      }
    }
  } catch (err) {
    if (err.name !== "AbortError") throw err;
  }
  return { status: res.status, headers: res.headers, text, chunks, firstByteMs, totalMs: performance.now() - started };
}

/** Parses a server-sent-events body into [{event, data}] with `data` JSON-decoded. */
export function parseEvents(body) {
  return body.split("\n\n").filter((b) => b.trim()).map((block) => {
    let event = "", data = "";
    for (const line of block.split("\n")) {
      if (line.startsWith("event: ")) event = line.slice(7);
      else if (line.startsWith("data: ")) data += line.slice(6);
    }
    return { event, data: JSON.parse(data) };
  });
}

/** Polls until `check()` returns a truthy value. */
export async function eventually(check, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await sleep(100);
  }
}
