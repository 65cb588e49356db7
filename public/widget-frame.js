// The widget's page, inside the frame a site embeds: it trades for a visitor token (never the
// owner's key), keeps the visitor's session for this tab, and streams answers.
import { api, Conversation, followMessage, listenSession, streamMessage } from "/chat.js";

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
let listening = null;

// A browser that keeps a frame embedded on another site from storage (third-party storage
// blocked) leaves it to the embedding script (widget.js), which keeps the visitor in the
// site's own storage for this tab and hands it back in this page's fragment.
const hosted = (() => {
  try { return sessionStorage.length < 0; } catch { return window.parent !== window; }
})();
function load() {
  try {
    return JSON.parse(hosted ? decodeURIComponent(location.hash.slice(1)) : sessionStorage.getItem(STORE)) ?? {};
  } catch { return {}; }
}
function save() {
  if (hosted) {
    const parent = parentOrigin();
    if (parent) window.parent.postMessage({ edgechat: "visitor", chatbot, visitor }, parent);
    return;
  }
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
      // A 404 is the session's or the chatbot's: a chatbot made private (or deleted) refuses
      // the token too, and then the session is kept for when the chatbot is back.
      await mint();
      visitor.session = undefined;
      save();
      return work(visitor.token);
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
            if (!liveChat) answer.stoppable(() => stopAnswer(data.message_uuid));
          } else if (name === "delta") answer.append(data.text ?? "");
          else if (name === "citations") answer.cite(data);
          else if (name === "error") { failed = true; answer.fail(data.message ?? "The answer failed."); }
        },
      });
    });
    listen();
    if (liveChat) {
      answer.element.remove();
      conversation.addNote("A person is answering; their reply will appear here.");
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

/** Adds the session's live-chat messages not shown yet (after a reconnect). */
async function catchUp() {
  const messages = await withVisitor((token) => api("GET", `/session/${visitor.session}/messages`, { token }));
  for (const m of messages) {
    if (shown.has(m.uuid)) continue;
    shown.add(m.uuid);
    if (m.kind === "operator" || m.kind === "announcement") conversation.addStored(m);
  }
}

/**
 * Keeps the session's event stream open while the page is: a person's replies and live-chat
 * announcements appear as they are sent, without polling. When the stream ends it is opened
 * again a second later, after reading what was missed meanwhile.
 */
function listen() {
  if (listening || !visitor.session) return;
  const controller = new AbortController();
  listening = controller;
  (async () => {
    let reconnecting = false;
    let wait = 1000;
    while (listening === controller && visitor.session) {
      try {
        if (reconnecting) await catchUp();
        reconnecting = true;
        await withVisitor((token) => listenSession({
          token,
          sessionUuid: visitor.session,
          signal: controller.signal,
          onEvent: (name, data) => {
            if (name !== "message" || !data?.uuid || shown.has(data.uuid)) return;
            shown.add(data.uuid);
            conversation.addStored(data);
          },
        }));
        wait = 1000;
      } catch (err) {
        if (err?.name === "AbortError") return;
        // Refused (the chatbot closed to visitors, the session gone): the next question
        // listens again once it is answered. Anything else is tried again, less and less often.
        if ([401, 403, 404].includes(err?.status)) break;
        wait = Math.min(wait * 2, 30_000);
      }
      await new Promise((r) => setTimeout(r, wait));
    }
    if (listening === controller) listening = null;
  })();
}

/** Asks the service to end the answer `uuid` where it is (POST /message/{uuid}/stop). */
function stopAnswer(uuid) {
  return withVisitor((token) => api("POST", `/message/${encodeURIComponent(uuid)}/stop`, { token }));
}

/** An answer still being produced when the page loaded (a reload mid-answer) continues here. */
async function resume(message) {
  conversation.addUser(message.query);
  const answer = conversation.startAnswer();
  answer.stoppable(() => stopAnswer(message.uuid));
  notice("Answering…");
  let failed = false;
  try {
    await withVisitor((token) => followMessage({
      token,
      messageUuid: message.uuid,
      onEvent: (name, data) => {
        if (name === "delta") answer.append(data.text ?? "");
        else if (name === "citations") answer.cite(data);
        else if (name === "error") { failed = true; answer.fail(data.message ?? "The answer failed."); }
        else if (name === "end" && data.finish_reason === "interrupted") { failed = true; answer.fail("The answer was cut off."); }
      },
    }));
    answer.done();
    if (!failed) answer.rateable(message.uuid);
    notice(failed ? "The answer stopped with an error." : "");
  } catch (err) {
    answer.done();
    notice(err.message || "The answer could not be read.", { error: true });
  }
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
  let resuming = null;
  if (visitor.session) {
    try {
      // A session that no longer exists has nothing to show.
      const history = (token) => visitor.session ? api("GET", `/session/${visitor.session}/messages`, { token }) : [];
      const messages = await withVisitor(history);
      for (const m of messages) {
        shown.add(m.uuid);
        if (m.kind === "answer" && m.finish_reason === "streaming") resuming = resume(m);
        else conversation.addStored(m);
      }
      listen();
    } catch (err) {
      // The session is kept: the next question (or load) finds it again.
      notice(`The conversation could not be loaded. ${err.message ?? ""}`.trim(), { error: true });
    }
  }
  $("question").disabled = false;
  // Opened from the site's button: the focus it gave this frame goes on to the message box.
  if (document.hasFocus() && !document.activeElement?.matches("input, textarea, button")) $("question").focus();
  // The session answers one message at a time: sending waits for an answer that continues.
  if (resuming) await resuming;
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

// Focus given to this frame (widget.js opening it) goes on to where the visitor types.
window.addEventListener("focus", () => {
  if (!$("question").disabled && !document.activeElement?.matches("input, textarea, button")) $("question").focus();
});

// Opened by widget.js: a close button and Escape hand focus back to the site.
if (params.get("embed") === "script" && window.parent !== window) {
  const close = () => window.parent.postMessage({ edgechat: "close", chatbot }, "*");
  $("close").hidden = false;
  $("close").addEventListener("click", close);
  document.addEventListener("keydown", (e) => { if (e.key === "Escape") close(); });
}

start();
