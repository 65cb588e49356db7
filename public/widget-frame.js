// The widget's page, inside the frame a site embeds: it trades for a visitor token (never the
// owner's key), keeps the visitor's session for this tab, and streams answers.
import { api, Conversation, streamMessage } from "/chat.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const chatbot = (params.get("chatbot") ?? "").trim();
const conversation = new Conversation($("conversation"), {
  // The message is stored as its stream ends, so a very quick click waits once.
  // Not through withVisitor: a 404 here is about the message, not a vanished session.
  rate: async (uuid, rating) => {
    const send = async () => api("POST", `/message/${encodeURIComponent(uuid)}/feedback`, { token: await currentToken(), body: { rating } });
    try {
      return await send();
    } catch (err) {
      if (err.status !== 404) throw err;
      await new Promise((r) => setTimeout(r, 700));
      return send();
    }
  },
});
const shown = new Set();
let following = null;

function load() {
  try { return JSON.parse(sessionStorage.getItem(STORE)) ?? {}; } catch { return {}; }
}
function save() {
  try { sessionStorage.setItem(STORE, JSON.stringify(visitor)); } catch { /* storage off: this page load only */ }
}

function notice(text, { error = false } = {}) {
  const node = $("notice");
  node.textContent = text;
  node.classList.toggle("error", error);
  node.setAttribute("role", error ? "alert" : "status");
}

/** The site this page is embedded on, as the browser reports the frame's parent. */
function parentOrigin() {
  if (window.parent === window) return null;
  const ancestors = location.ancestorOrigins;
  const origin = ancestors?.length ? ancestors[0] : (() => {
    try { return new URL(document.referrer).origin; } catch { return null; }
  })();
  return origin && /^https?:\/\//.test(origin) ? origin : null;
}

// One visitor per chatbot and site, for this tab.
const STORE = `edgechat:visitor:${chatbot}:${parentOrigin() ?? "none"}`;
let visitor = load();

/** A visitor token: renews the previous one (same visitor, same sessions) when there is one. */
async function mint() {
  const body = {};
  const parent = parentOrigin();
  if (parent) body.parent_origin = parent;
  if (visitor.token) body.token = visitor.token;
  let answer;
  try {
    answer = await api("POST", `/widget/${encodeURIComponent(chatbot)}/token`, { body });
  } catch (err) {
    if (!body.token || ![401, 403].includes(err.status)) throw err;
    // The old token cannot be renewed: start over as a new visitor.
    visitor = {};
    save();
    conversation.clear();
    delete body.token;
    answer = await api("POST", `/widget/${encodeURIComponent(chatbot)}/token`, { body });
  }
  visitor.token = answer.token;
  visitor.expiresAt = Date.parse(answer.expires_at);
  save();
  return answer;
}

async function currentToken() {
  if (!visitor.token || !(visitor.expiresAt - Date.now() > 60_000)) await mint();
  return visitor.token;
}

/** Runs `work(token)`; on an expired token renews once, on a vanished session starts a new one. */
async function withVisitor(work) {
  try {
    return await work(await currentToken());
  } catch (err) {
    if (err.status === 401) {
      await mint();
      return work(visitor.token);
    }
    if (err.status === 404 && visitor.session) {
      visitor.session = undefined;
      save();
      return work(await currentToken());
    }
    throw err;
  }
}

async function ensureSession(token) {
  if (visitor.session) return visitor.session;
  const session = await api("POST", `/chatbot/${encodeURIComponent(chatbot)}/session/create`, { token });
  visitor.session = session.uuid;
  save();
  return session.uuid;
}

async function ask(query) {
  conversation.addUser(query);
  const answer = conversation.startAnswer();
  notice("Answering…");
  let failed = false;
  let liveChat = false;
  let messageUuid = null;
  try {
    await withVisitor(async (token) => {
      const sessionUuid = await ensureSession(token);
      await streamMessage({
        token,
        sessionUuid,
        query,
        onEvent: (name, data) => {
          if (name === "start") {
            shown.add(data.message_uuid);
            messageUuid = data.message_uuid;
            liveChat = Boolean(data.live_chat);
          } else if (name === "delta") answer.append(data.text ?? "");
          else if (name === "citations") answer.cite(data);
          else if (name === "error") { failed = true; answer.fail(data.message ?? "The answer failed."); }
        },
      });
    });
    if (liveChat) {
      answer.element.remove();
      conversation.addNote("A person is answering; their reply will appear here.");
      follow();
    } else {
      answer.done();
      if (!failed) answer.rateable(messageUuid);
    }
    notice(failed ? "The answer stopped with an error." : "");
  } catch (err) {
    answer.element.remove();
    const message = err.message || "The message could not be sent.";
    conversation.addNote(message, "note msg-error");
    notice(message, { error: true });
  }
}

/** While a person answers, their messages are fetched every few seconds. */
function follow() {
  clearInterval(following);
  const until = Date.now() + 10 * 60_000;
  following = setInterval(async () => {
    if (Date.now() > until) return clearInterval(following);
    try {
      const messages = await withVisitor((token) => api("GET", `/session/${visitor.session}/messages`, { token }));
      for (const m of messages) {
        if (shown.has(m.uuid)) continue;
        shown.add(m.uuid);
        if (m.kind === "operator" || m.kind === "announcement") conversation.addStored(m);
      }
    } catch { /* try again at the next tick */ }
  }, 3000);
}

async function start() {
  if (!/^[0-9a-fA-F-]{36}$/.test(chatbot)) {
    notice("This chat is not set up: the page needs ?chatbot=<uuid>.", { error: true });
    return;
  }
  try {
    const info = await mint();
    $("bot-name").textContent = info.chatbot.name;
    document.title = `Chat with ${info.chatbot.name}`;
  } catch (err) {
    notice(`This chat is not available here. ${err.message ?? ""}`.trim(), { error: true });
    return;
  }
  if (visitor.session) {
    try {
      const messages = await withVisitor((token) => api("GET", `/session/${visitor.session}/messages`, { token }));
      for (const m of messages) { shown.add(m.uuid); conversation.addStored(m); }
    } catch {
      visitor.session = undefined;
      save();
    }
  }
  $("question").disabled = false;
  $("send").disabled = false;
}

$("ask-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const input = $("question");
  const query = input.value.trim();
  if (!query || $("send").disabled) return;
  input.value = "";
  $("send").disabled = true;
  ask(query).finally(() => { $("send").disabled = false; input.focus(); });
});

$("question").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    $("ask-form").requestSubmit();
  }
});

// Opened by widget.js: a close button and Escape hand focus back to the site.
if (params.get("embed") === "script" && window.parent !== window) {
  const close = () => window.parent.postMessage({ edgechat: "close", chatbot }, "*");
  $("close").hidden = false;
  $("close").addEventListener("click", close);
  document.addEventListener("keydown", (e) => { if (e.key === "Escape") close(); });
}

start();
