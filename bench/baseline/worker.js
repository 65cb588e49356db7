// The CRUD benchmark's baseline: the least a Worker in plain JavaScript must do to serve
// GET /api/v1/chatbot/{uuid}, POST /api/v1/chatbot/create and
// GET /api/v1/chatbot/{uuid}/agents from the same D1 schema. It authenticates the same way
// (SHA-256 of the bearer token, looked up in api_keys), reads and writes the same rows as
// edgechat's storage layer (src/storage/{api_keys,chatbots,agents,tool_functions}.rs) and
// answers with the same JSON. It does so the plain way, the key lookup first and then the
// read; edgechat checks the key inside its first statement, one D1 round trip fewer. Everything else edgechat does (validation beyond the name, other routes) is left
// out on purpose: this is the floor to compare against. `make bench` runs it; it is never
// deployed.

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));
const encoder = new TextEncoder();
const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

const DEFAULT_RATE_LIMIT_MESSAGE = "Too many messages in a short time. Please wait a moment and try again.";
const GENERAL_QA = {
  type: "user-facing",
  name: "General Q&A",
  prompt: "You are a helpful assistant. Answer the user's question using only the provided sources. If the sources do not contain the answer, say so plainly.",
  description: "Answers general questions from the chatbot's data sources.",
  enabled: 1,
  meta_json: '{"model":"gpt-4o-mini-16k","temperature":0.2,"use_all_sources":true,"bias":0.0}',
  data_source_uuids_json: "[]",
  human_escalation_settings_json: null,
  variables_json: "[]",
};

const CHATBOT_COLUMNS = "uuid, name, visibility, rate_limit_count, rate_limit_window, rate_limit_message, show_citations, created_at, modified_at, allowed_origins_json";
const AGENT_COLUMNS = "a.uuid, a.chatbot_uuid, a.type, a.name, a.prompt, a.description, a.enabled, a.meta_json, a.data_source_uuids_json, a.human_escalation_settings_json, a.variables_json, a.created_at, a.modified_at";
const TOOL_COLUMNS = "t.uuid, t.agent_uuid, t.name, t.description, t.enabled, t.external_url, t.method, t.headers_json, t.meta_json, t.parameters_json, t.created_at, t.modified_at";

function json(value, status = 200) {
  return new Response(JSON.stringify(value), { status, headers: { "Content-Type": "application/json" } });
}

function error(status, code, message) {
  return json({ success: false, error: { code, message } }, status);
}

async function sha256Hex(text) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
  let out = "";
  for (const b of digest) out += HEX[b];
  return out;
}

function constantTimeEqual(a, b) {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** The caller's account uuid, or null. */
async function accountOf(request, env) {
  const header = request.headers.get("Authorization")?.trim() ?? "";
  const space = header.indexOf(" ");
  if (space < 0 || header.slice(0, space).toLowerCase() !== "bearer") return null;
  const token = header.slice(space + 1).trim();
  if (!token) return null;
  if (env.ADMIN_TOKEN && constantTimeEqual(env.ADMIN_TOKEN, token)) return null;
  const hash = await sha256Hex(token);
  const owner = await env.DB.prepare("SELECT uuid AS key_uuid, account_uuid, key_hash FROM api_keys WHERE key_hash = ?1")
    .bind(hash)
    .first();
  return owner && constantTimeEqual(owner.key_hash, hash) ? owner.account_uuid : null;
}

const now = () => new Date().toISOString().replace(/\.\d+Z$/, "Z");

function chatbotJson(r) {
  return {
    uuid: r.uuid,
    name: r.name,
    created_at: r.created_at,
    modified_at: r.modified_at,
    meta: {
      rate_limit: [r.rate_limit_count, r.rate_limit_window],
      rate_limit_message: r.rate_limit_message,
      show_citations: r.show_citations !== 0,
      visibility: r.visibility,
      allowed_origins: JSON.parse(r.allowed_origins_json),
    },
  };
}

function toolJson(t) {
  return {
    uuid: t.uuid,
    agent_uuid: t.agent_uuid,
    name: t.name,
    description: t.description,
    enabled: t.enabled ? 1 : 0,
    external_url: t.external_url,
    method: t.method,
    headers: JSON.parse(t.headers_json),
    meta: JSON.parse(t.meta_json),
    parameters: JSON.parse(t.parameters_json),
    created_at: t.created_at,
    modified_at: t.modified_at,
  };
}

function agentJson(a, tools) {
  const record = {
    uuid: a.uuid,
    chatbot_uuid: a.chatbot_uuid,
    name: a.name,
    prompt: a.prompt,
    description: a.description,
    type: a.type,
    created_at: a.created_at,
    modified_at: a.modified_at,
    enabled: a.enabled ? 1 : 0,
    meta: JSON.parse(a.meta_json),
    data_source_uuids: JSON.parse(a.data_source_uuids_json),
    tool_functions: tools,
  };
  if (a.human_escalation_settings_json !== null) record.human_escalation_settings = JSON.parse(a.human_escalation_settings_json);
  if (a.type === "user-facing") record.variables = JSON.parse(a.variables_json);
  return record;
}

async function getChatbot(env, account, uuid) {
  return env.DB.prepare(`SELECT ${CHATBOT_COLUMNS} FROM chatbots WHERE uuid = ?1 AND account_uuid = ?2`)
    .bind(uuid, account)
    .first();
}

async function createChatbot(request, env, account) {
  let body;
  try {
    body = await request.json();
  } catch {
    return error(400, "invalid_json", "The body is not valid JSON.");
  }
  const name = typeof body?.name === "string" ? body.name.trim() : "";
  if (!name) return error(400, "invalid_request", "`name` is required.");
  const stamp = now();
  const chatbot = {
    uuid: crypto.randomUUID(),
    name,
    visibility: "private",
    rate_limit_count: 20,
    rate_limit_window: 240,
    rate_limit_message: DEFAULT_RATE_LIMIT_MESSAGE,
    show_citations: 0,
    created_at: stamp,
    modified_at: stamp,
    allowed_origins_json: "[]",
  };
  const a = GENERAL_QA;
  await env.DB.batch([
    env.DB.prepare(
      "INSERT INTO chatbots (uuid, account_uuid, name, visibility, rate_limit_count, rate_limit_window, " +
        "rate_limit_message, show_citations, created_at, modified_at, allowed_origins_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    ).bind(chatbot.uuid, account, chatbot.name, chatbot.visibility, chatbot.rate_limit_count, chatbot.rate_limit_window,
      chatbot.rate_limit_message, chatbot.show_citations, stamp, stamp, chatbot.allowed_origins_json),
    env.DB.prepare(
      "INSERT INTO agents (uuid, chatbot_uuid, type, name, prompt, description, enabled, meta_json, " +
        "data_source_uuids_json, human_escalation_settings_json, variables_json, created_at, modified_at) " +
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    ).bind(crypto.randomUUID(), chatbot.uuid, a.type, a.name, a.prompt, a.description, a.enabled, a.meta_json,
      a.data_source_uuids_json, a.human_escalation_settings_json, a.variables_json, stamp, stamp),
  ]);
  return json(chatbotJson(chatbot));
}

async function listAgents(env, account, uuid) {
  if (!(await getChatbot(env, account, uuid))) return error(404, "not_found", "There is no chatbot with that uuid.");
  const agents = await env.DB.prepare(
    `SELECT ${AGENT_COLUMNS} FROM agents a WHERE a.chatbot_uuid = ?1 ORDER BY a.created_at, a.rowid`,
  ).bind(uuid).all();
  const tools = await env.DB.prepare(
    `SELECT ${TOOL_COLUMNS} FROM tool_functions t JOIN agents a ON a.uuid = t.agent_uuid ` +
      "WHERE a.chatbot_uuid = ?1 ORDER BY t.created_at, t.rowid",
  ).bind(uuid).all();
  const byAgent = new Map();
  for (const t of tools.results) {
    if (!byAgent.has(t.agent_uuid)) byAgent.set(t.agent_uuid, []);
    byAgent.get(t.agent_uuid).push(toolJson(t));
  }
  return json(agents.results.map((a) => agentJson(a, byAgent.get(a.uuid) ?? [])));
}

export default {
  async fetch(request, env) {
    const { pathname } = new URL(request.url);
    if (pathname === "/health") {
      await env.DB.prepare("SELECT COUNT(*) AS n FROM accounts WHERE 0").first();
      return json({ status: "ok" });
    }
    const parts = pathname.split("/");
    // ["", "api", "v1", "chatbot", x, ("agents")]
    if (parts[1] !== "api" || parts[2] !== "v1" || parts[3] !== "chatbot" || parts.length < 5 || parts.length > 6) {
      return error(404, "not_found", "There is no endpoint at this path.");
    }
    const create = parts.length === 5 && parts[4] === "create" && request.method === "POST";
    const read = request.method === "GET" && (parts.length === 5 || parts[5] === "agents");
    if (!create && !read) return error(404, "not_found", "There is no endpoint at this path.");
    const account = await accountOf(request, env);
    if (!account) return error(401, "unauthorized", "The API key is not valid (it may have been deleted).");
    if (create) return createChatbot(request, env, account);
    const uuid = UUID.test(parts[4]) ? parts[4].toLowerCase() : null;
    if (!uuid) return error(404, "not_found", "There is no chatbot with that uuid.");
    if (parts.length === 6) return listAgents(env, account, uuid);
    const row = await getChatbot(env, account, uuid);
    return row ? json(chatbotJson(row)) : error(404, "not_found", "There is no chatbot with that uuid.");
  },
};
