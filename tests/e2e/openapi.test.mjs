import { test, before } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { startWorker, expectError, ROOT } from "./suite.mjs";

let worker;
before(async () => { worker = await startWorker(); });

test("the API description answers without a key, as the document in the repository", async () => {
  const r = await worker.request("GET", "/api/v1/openapi.json");
  assert.equal(r.status, 200, r.text);
  assert.match(r.headers.get("content-type") ?? "", /^application\/json/);
  assert.equal(r.json.openapi, "3.1.0");
  assert.deepEqual(r.json.servers, [{ url: "/" }]);
  assert.deepEqual(r.json.paths["/api/v1/openapi.json"].get.security, []);
  const onDisk = JSON.parse(await readFile(path.join(ROOT, "public/openapi.json"), "utf8"));
  assert.deepEqual(r.json, onDisk);
});

test("every documented operation is served at its method and path", async () => {
  const r = await worker.request("GET", "/api/v1/openapi.json");
  const uuid = "00000000-0000-4000-8000-000000000000";
  let count = 0;
  for (const [p, item] of Object.entries(r.json.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (!["get", "post", "put", "patch", "delete"].includes(method)) continue;
      count += 1;
      const res = await worker.request(method.toUpperCase(), p.replaceAll("{uuid}", uuid));
      if (operation.security?.length === 0 && p.includes("{uuid}")) {
        // Open to anyone, about a resource: the route answers, and there is no such resource.
        expectError(assert, res, 404, "not_found");
      } else if (operation.security?.length === 0) {
        assert.equal(res.status, 200, `${method} ${p}: ${res.text}`);
      } else {
        // Without a key, an existing route answers 401; a missing one would be 404 or 405.
        expectError(assert, res, 401, "unauthorized");
      }
    }
  }
  assert.ok(count > 40, `only ${count} operations documented`);
});
