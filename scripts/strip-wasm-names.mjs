// Removes the custom `name` section from a built Worker's Wasm module. worker-build keeps it
// (wasm-opt --debuginfo) so stack traces name functions, but it is about 84 KiB of the
// compressed Worker, which must stay under Cloudflare's 1 MiB limit; panic messages keep their
// file and line without it. Usage: node scripts/strip-wasm-names.mjs FILE.wasm
import { readFileSync, writeFileSync } from "node:fs";

const file = process.argv[2];
if (!file) {
  console.error("usage: node scripts/strip-wasm-names.mjs FILE.wasm");
  process.exit(2);
}
const bytes = readFileSync(file);
if (bytes.readUInt32LE(0) !== 0x6d736100) {
  console.error(`${file} is not a WebAssembly module`);
  process.exit(1);
}

function leb(at) {
  let value = 0, shift = 0, byte;
  do {
    byte = bytes[at++];
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
  } while (byte & 0x80);
  return [value, at];
}

const kept = [bytes.subarray(0, 8)];
let removed = 0;
for (let at = 8; at < bytes.length;) {
  const start = at;
  const id = bytes[at++];
  const [size, body] = leb(at);
  const end = body + size;
  let drop = false;
  if (id === 0) {
    const [length, nameAt] = leb(body);
    drop = bytes.toString("utf8", nameAt, nameAt + length) === "name";
  }
  if (drop) removed += end - start;
  else kept.push(bytes.subarray(start, end));
  at = end;
}
if (removed > 0) writeFileSync(file, Buffer.concat(kept));
console.error(`strip-wasm-names: removed ${removed} bytes from ${file}`);
