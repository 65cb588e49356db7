// Size and start-up of the built Worker: the deployable wasm raw and gzipped (level 9), the
// time from spawning `wrangler dev` to the first 200 from /health over several restarts (the
// JavaScript baseline beside it), and V8's own time to compile and instantiate the module,
// measured in headless Chromium (Node 20's V8 lacks the wasm exception handling the module
// uses). Writes bench-output/startup.json. Run it with `make bench`.
//
// Environment: BENCH_STARTUP_RUNS (5), BENCH_COMPILE_RUNS (10), BENCH_OUTPUT (bench-output).
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { startWorker, ROOT } from "../tests/e2e/harness.mjs";
import { launchChromium } from "./browser.mjs";

const OUT = path.resolve(ROOT, process.env.BENCH_OUTPUT ?? "bench-output");
const RUNS = Math.max(1, Number(process.env.BENCH_STARTUP_RUNS ?? 5));
const COMPILE_RUNS = Math.max(1, Number(process.env.BENCH_COMPILE_RUNS ?? 10));
const round = (x, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const summary = (xs) => ({ runs: xs.map((x) => round(x, 1)), median: round(median(xs), 1), min: round(Math.min(...xs), 1), max: round(Math.max(...xs), 1) });

/** The release Worker's module: the .wasm files directly in `dir` (the tests' panic-probe build
 * lives in a folder of its own under it and is not the Worker). */
async function wasmFiles(dir) {
  const out = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (entry.isFile() && entry.name.endsWith(".wasm")) out.push(path.join(dir, entry.name));
  }
  return out.sort();
}

async function sizes() {
  const build = path.join(ROOT, "build");
  const files = await wasmFiles(build);
  if (files.length !== 1) throw new Error(`expected one .wasm under build/, found ${files.length}: run the build first`);
  const wasm = await readFile(files[0]);
  const glue = await readFile(path.join(build, "index.js")).catch(() => Buffer.alloc(0));
  const gz = (b) => gzipSync(b, { level: 9 }).length;
  return {
    wasm_file: path.relative(ROOT, files[0]),
    wasm_bytes: wasm.length,
    wasm_gzip_bytes: gz(wasm),
    glue_js_bytes: glue.length,
    glue_js_gzip_bytes: gz(glue),
    bytes: wasm,
  };
}

/** WebAssembly.compile and instantiate (with inert imports) in Chromium's V8. */
async function compileTimes(bytes) {
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    return await page.evaluate(async ({ b64, runs }) => {
      const module = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      const compile = [];
      const instantiate = [];
      for (let i = 0; i < runs; i++) {
        const t0 = performance.now();
        const m = await WebAssembly.compile(module);
        const t1 = performance.now();
        const imports = {};
        for (const imp of WebAssembly.Module.imports(m)) {
          imports[imp.module] ??= {};
          imports[imp.module][imp.name] = imp.kind === "function"
            ? () => { throw new Error("not called at instantiation"); }
            : imp.kind === "tag" ? WebAssembly.JSTag : undefined;
        }
        await WebAssembly.instantiate(m, imports);
        const t2 = performance.now();
        compile.push(t1 - t0);
        instantiate.push(t2 - t1);
      }
      return { compile, instantiate, engine: navigator.userAgent.match(/Chrome\/[\d.]+/)?.[0] ?? "Chromium" };
    }, { b64: bytes.toString("base64"), runs: COMPILE_RUNS });
  } finally {
    await browser.close();
  }
}

async function main() {
  await mkdir(OUT, { recursive: true });
  const { bytes, ...size } = await sizes();
  console.log(`wasm ${size.wasm_file}: ${(size.wasm_bytes / 1024).toFixed(0)} KiB raw, ${(size.wasm_gzip_bytes / 1024).toFixed(0)} KiB gzipped`);

  const compiled = await compileTimes(bytes);
  const wasm_v8 = {
    engine: compiled.engine,
    compile_ms: summary(compiled.compile),
    instantiate_ms: summary(compiled.instantiate),
  };
  console.log(`V8 (${compiled.engine}): compile median ${wasm_v8.compile_ms.median} ms, instantiate median ${wasm_v8.instantiate_ms.median} ms`);

  // Restarts after a first start, so the migrated state and wrangler's caches are in place;
  // the two Workers alternate.
  const ours = await startWorker();
  const baseline = await startWorker({ config: "bench/baseline/wrangler.toml" });
  const ready = { edgechat: [], baseline: [] };
  try {
    for (const w of [ours, baseline]) await w.stop();
    for (let i = 0; i < RUNS; i++) {
      for (const [name, w] of i % 2 ? [["baseline", baseline], ["edgechat", ours]] : [["edgechat", ours], ["baseline", baseline]]) {
        w.pollMs = 10;
        await w.start();
        ready[name].push(w.readyMs);
        await w.stop();
      }
    }
  } finally {
    await Promise.all([ours.dispose(), baseline.dispose()]);
  }
  const startup = {
    what: "spawn of `wrangler dev` to the first 200 from GET /health (which reads D1), polled every 10 ms",
    edgechat_ms: summary(ready.edgechat),
    baseline_ms: summary(ready.baseline),
  };
  startup.ratio = round(startup.edgechat_ms.median / startup.baseline_ms.median, 3);
  console.log(`start-up (wrangler dev spawn to /health 200), median of ${RUNS}: edgechat ${startup.edgechat_ms.median} ms, baseline ${startup.baseline_ms.median} ms`);
  await writeFile(path.join(OUT, "startup.json"), JSON.stringify({ size, wasm_v8, startup }, null, 2) + "\n");
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
