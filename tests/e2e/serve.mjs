// Runs a Worker locally as `wrangler dev` does (same configuration, local D1, R2 and Durable
// Objects, same state folder layout) through wrangler's own API, but without the DevTools
// inspector. With the inspector attached, wrangler's node process and the runtime spend several
// milliseconds of CPU on every request relaying it, which would swamp what the benchmarks
// measure. The harness starts this for `startWorker({ inspector: false })`.
//   node tests/e2e/serve.mjs --ip 127.0.0.1 --port N --persist-to DIR [--config FILE]
//        [--var NAME:VALUE]... [--test-scheduled] [--worker-logs]
// With --worker-logs the Worker's own lines are printed too (and wrangler's per-request lines).
// Once ready it prints `Ready on URL` (wrangler's proxy, as `wrangler dev` serves) and
// `Runtime on URL`: the runtime's own socket, which the proxy forwards to. Both serve the same
// Worker, bindings and state.
import { parseArgs } from "node:util";
import { unstable_DevEnv } from "wrangler";

const { values: opts } = parseArgs({
  options: {
    ip: { type: "string", default: "127.0.0.1" },
    port: { type: "string" },
    "persist-to": { type: "string" },
    config: { type: "string", default: "wrangler.toml" },
    var: { type: "string", multiple: true, default: [] },
    "test-scheduled": { type: "boolean", default: false },
    "worker-logs": { type: "boolean", default: false },
  },
});
if (!opts.port || !opts["persist-to"]) {
  console.error("usage: serve.mjs --port N --persist-to DIR [--config FILE] [--var NAME:VALUE]... [--test-scheduled]");
  process.exit(2);
}

const bindings = {};
for (const v of opts.var) {
  const at = v.indexOf(":");
  if (at < 1) throw new Error(`--var takes NAME:VALUE, not ${v}`);
  bindings[v.slice(0, at)] = { type: "plain_text", value: v.slice(at + 1) };
}

// The runtime's address is known only to wrangler's proxy, which learns it from this event.
const devEnv = new unstable_DevEnv();
// It can arrive after the proxy says it is ready.
let runtimeKnown;
const runtimeUrl = new Promise((resolve) => { runtimeKnown = resolve; });
const dispatch = devEnv.dispatch.bind(devEnv);
devEnv.dispatch = (event) => {
  if (event.type === "reloadComplete") {
    const { protocol, hostname, port } = event.proxyData.userWorkerUrl;
    runtimeKnown(`${protocol}//${hostname}:${port}`);
  }
  return dispatch(event);
};
const worker = await devEnv.startWorker({
  config: opts.config,
  bindings,
  dev: {
    remote: false,
    server: { hostname: opts.ip, port: Number(opts.port) },
    inspector: false,
    persist: opts["persist-to"],
    testScheduled: opts["test-scheduled"],
    logLevel: opts["worker-logs"] ? "log" : "warn",
    watch: false,
  },
});
await worker.ready;
console.log(`Ready on ${await worker.url}`);
console.log(`Runtime on ${await runtimeUrl}`);
const stop = async () => {
  await worker.dispose();
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
