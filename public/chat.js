// What the chat page and the widget share: calling the API, reading a streamed answer as
// server-sent events, and showing a conversation with clickable citations.

/** An error the API answered with: `{success: false, error: {code, message, field?}}`. */
export class ApiError extends Error {
  constructor(status, code, message, field, retryAfter) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
    this.retryAfter = retryAfter;
  }
}

function retryAfterOf(res) {
  const n = Number(res.headers.get("Retry-After"));
  return Number.isFinite(n) && n > 0 ? n : undefined;
}

/** Turns a failed response into an ApiError carrying the API's own sentence. */
export async function errorFrom(res) {
  const text = await res.text().catch(() => "");
  let body;
  try { body = JSON.parse(text); } catch { body = undefined; }
  if (body?.error?.message) {
    return new ApiError(res.status, body.error.code, body.error.message, body.error.field, retryAfterOf(res));
  }
  // A rate-limited stream answers with the chatbot's message as plain text or an error event.
  const event = parseEvents(text).find((e) => e.event === "error");
  const message = event?.data?.message ?? (text.trim() || `The service answered ${res.status}.`);
  return new ApiError(res.status, event?.data?.code ?? (res.status === 429 ? "rate_limited" : "error"), message, undefined, retryAfterOf(res));
}

/** A JSON call to the API with a bearer token; resolves to the decoded body or throws ApiError. */
export async function api(method, path, { token, body, form } = {}) {
  const headers = {};
  if (token) headers.Authorization = `Bearer ${token}`;
  let payload;
  if (form) payload = form;
  else if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    payload = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(`/api/v1${path}`, { method, headers, body: payload });
  } catch {
    throw new ApiError(0, "network", "The service could not be reached. Check the connection and try again.");
  }
  if (!res.ok) throw await errorFrom(res);
  return res.status === 204 ? undefined : res.json();
}

/** Splits a server-sent-events text into [{event, data}] (data JSON-decoded when it can be). */
export function parseEvents(text) {
  const events = [];
  for (const block of text.replace(/\r\n/g, "\n").split("\n\n")) {
    let event = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    }
    if (!data.length) continue;
    let value = data.join("\n");
    try { value = JSON.parse(value); } catch { /* kept as text */ }
    events.push({ event, data: value });
  }
  return events;
}

/**
 * Sends `query` to a session and calls `onEvent(name, data)` for each event as it arrives
 * (`start`, `delta`, `citations`, `end`, `error`). Resolves when the stream ends; throws
 * ApiError when the API refuses the message (rate limit included) before answering.
 */
export function streamMessage({ token, sessionUuid, query, onEvent, signal }) {
  return readEvents(`/api/v1/session/${encodeURIComponent(sessionUuid)}/message/stream`, {
    method: "POST", token, body: JSON.stringify({ query }), onEvent, signal,
  });
}

/**
 * Reads an answer again (after a reload, say): what it said so far, then live until it ends,
 * with `onEvent` as for `streamMessage`.
 */
export function followMessage({ token, messageUuid, onEvent, signal }) {
  return readEvents(`/api/v1/message/${encodeURIComponent(messageUuid)}/stream`, { token, onEvent, signal });
}

/**
 * The session's own event stream: `message` (a live-chat message as it is stored) and
 * `answer` events, until the connection ends.
 */
export function listenSession({ token, sessionUuid, onEvent, signal }) {
  return readEvents(`/api/v1/session/${encodeURIComponent(sessionUuid)}/events`, { token, onEvent, signal });
}

async function readEvents(url, { method = "GET", token, body, onEvent, signal }) {
  let res;
  const headers = { Authorization: `Bearer ${token}`, Accept: "text/event-stream" };
  if (body) headers["Content-Type"] = "application/json";
  try {
    res = await fetch(url, { method, headers, body, signal });
  } catch (err) {
    if (err?.name === "AbortError") throw err;
    throw new ApiError(0, "network", "The service could not be reached. Check the connection and try again.");
  }
  if (!res.ok) throw await errorFrom(res);
  // Nothing more to come (an answer's stream followed past its end).
  if (res.status === 204) return;
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let pending = "";
  const flush = (final) => {
    pending = pending.replace(/\r\n/g, "\n");
    let cut;
    while ((cut = pending.indexOf("\n\n")) >= 0) {
      for (const e of parseEvents(pending.slice(0, cut))) onEvent(e.event, e.data);
      pending = pending.slice(cut + 2);
    }
    if (final && pending.trim()) {
      for (const e of parseEvents(pending)) onEvent(e.event, e.data);
      pending = "";
    }
  };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      pending += decoder.decode(value, { stream: true });
      flush(false);
    }
  } catch (err) {
    if (err?.name === "AbortError") throw err;
    onEvent("error", { code: "network", message: "The connection broke before the answer was complete." });
  }
  pending += decoder.decode();
  flush(true);
}

let uniqueId = 0;

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) if (c) node.append(c);
  return node;
}
export { el };

const SOURCE_KINDS = { qa: "Q&A pair", link: "Web page", file: "File" };

/** A citation's `url` when a reader may open it: http and https only, never `javascript:`. */
function openableLink(url) {
  if (typeof url !== "string") return null;
  try {
    const parsed = new URL(url);
    return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : null;
  } catch {
    return null;
  }
}

/**
 * One conversation on screen: the user's messages and the answers, an answer growing as it
 * streams, and citation markers ([1]) that open the cited passage.
 */
export class Conversation {
  /**
   * `rate(messageUuid, "up" | "down")`, when given, is called by the thumbs shown under each
   * answer (POST /message/{uuid}/feedback); without it no thumbs are shown.
   */
  constructor(container, { rate } = {}) {
    this.container = container;
    this.rate = rate;
  }

  clear() {
    this.container.replaceChildren();
  }

  addUser(text) {
    const item = el("div", { class: "msg msg-user" }, el("span", { class: "visually-hidden", text: "You said: " }), el("p", { class: "msg-text", dir: "auto", text }));
    this.container.append(item);
    this.scroll();
    return item;
  }

  /** A note from the service or a person (live chat, announcements). */
  addNote(text, kind = "note") {
    const item = el("div", { class: `msg msg-${kind}` }, el("p", { class: "msg-text", dir: "auto", text }));
    this.container.append(item);
    this.scroll();
    return item;
  }

  /** An answer that fills in as it streams; returns its controller. */
  startAnswer() {
    const id = `answer-${++uniqueId}`;
    const text = el("p", { class: "msg-text", dir: "auto", id: `${id}-text` });
    const item = el("div", { class: "msg msg-bot", "aria-busy": "true", id },
      el("span", { class: "visually-hidden", text: "Answer: " }), text);
    this.container.append(item);
    this.scroll();
    const answer = {
      id,
      element: item,
      text: "",
      citations: null,
      append: (piece) => {
        answer.text += piece;
        text.textContent = answer.text;
        this.scroll();
      },
      cite: (citations) => {
        answer.citations = citations;
        renderWithCitations(answer, text);
        this.scroll();
      },
      /** A Stop button under the answer while it streams; `stop()` asks the service to end it. */
      stoppable: (stop) => {
        if (item.querySelector(".stop")) return;
        const b = el("button", { type: "button", class: "stop", text: "Stop answering" });
        b.addEventListener("click", async () => {
          b.disabled = true;
          b.textContent = "Stopping…";
          try {
            await stop();
          } catch {
            // Ended meanwhile (409) or unreachable: the stream says how it ended.
          }
        });
        item.append(b);
        this.scroll();
      },
      fail: (message) => {
        item.append(el("p", { class: "msg-error", role: "alert", text: message }));
        this.scroll();
      },
      done: () => {
        item.setAttribute("aria-busy", "false");
        item.querySelector(".stop")?.remove();
        if (!answer.text) text.textContent = "(no answer)";
        this.scroll();
      },
      /** Thumbs up and down under the answer, once its message is stored as `uuid`. */
      rateable: (uuid, current) => {
        if (!this.rate || !uuid) return;
        item.querySelector(".rate")?.remove();
        const status = el("span", { class: "rate-status", role: "status" });
        const thumb = (rating, symbol, label) => {
          const b = el("button", { type: "button", class: `rate-${rating}`, "aria-label": label, title: label, "aria-pressed": String(current === rating) }, symbol);
          b.addEventListener("click", async () => {
            status.textContent = "";
            try {
              await this.rate(uuid, rating);
              for (const other of group.querySelectorAll("button")) other.setAttribute("aria-pressed", String(other === b));
              status.textContent = "Thanks for the feedback.";
            } catch (err) {
              status.textContent = `Not saved: ${err.message}`;
            }
          });
          return b;
        };
        const group = el("div", { class: "rate", role: "group", "aria-label": "Was this answer helpful?" },
          thumb("up", "👍", "Helpful"), thumb("down", "👎", "Not helpful"), status);
        item.append(group);
        this.scroll();
      },
    };
    return answer;
  }

  /** A stored message, as GET /session/{uuid}/messages gives it. */
  addStored(message) {
    if (message.kind === "operator") return this.addNote(message.response, "operator");
    if (message.kind === "announcement") return this.addNote(message.response, "announcement");
    if (message.query) this.addUser(message.query);
    if (message.kind === "user") return;
    const answer = this.startAnswer();
    answer.append(message.response);
    let cites = {};
    try { cites = JSON.parse(message.cite_data_json || "{}"); } catch { cites = {}; }
    if (Object.keys(cites).length) answer.cite(cites);
    if (message.finish_reason === "error") answer.fail("The answer stopped midway.");
    answer.done();
    answer.rateable(message.uuid, message.feedback?.rating);
  }

  scroll() {
    this.container.scrollTop = this.container.scrollHeight;
  }
}

/** Rewrites an answer's text with each [n] as a button that opens citation n. */
function renderWithCitations(answer, textNode) {
  const cites = answer.citations ?? {};
  const numbers = Object.keys(cites).sort((a, b) => Number(a) - Number(b));
  if (!numbers.length) return;
  const panelId = (n) => `${answer.id}-cite-${n}`;
  const toggles = new Map(numbers.map((n) => [n, []]));
  const toggle = (n, from) => {
    const panel = document.getElementById(panelId(n));
    const open = panel.hidden;
    panel.hidden = !open;
    for (const b of toggles.get(n)) b.setAttribute("aria-expanded", String(open));
    if (open && from?.classList.contains("cite-marker")) panel.scrollIntoView({ block: "nearest" });
  };
  const button = (n, label, cls) => {
    const b = el("button", { type: "button", class: cls, "aria-expanded": "false", "aria-controls": panelId(n), text: label });
    b.addEventListener("click", () => toggle(n, b));
    toggles.get(n).push(b);
    return b;
  };
  const parts = [];
  let last = 0;
  for (const m of answer.text.matchAll(/\[(\d+)\]/g)) {
    if (!cites[m[1]]) continue;
    parts.push(document.createTextNode(answer.text.slice(last, m.index)));
    const marker = button(m[1], `[${m[1]}]`, "cite-marker");
    marker.setAttribute("aria-label", `Source ${m[1]}: ${cites[m[1]].title || "untitled"}`);
    parts.push(marker);
    last = m.index + m[0].length;
  }
  parts.push(document.createTextNode(answer.text.slice(last)));
  textNode.replaceChildren(...parts);

  const list = el("ol", { class: "cite-list" });
  for (const n of numbers) {
    const c = cites[n];
    const kind = SOURCE_KINDS[c.type] ?? c.type ?? "Source";
    const link = openableLink(c.url);
    const panel = el("div", { class: "cite-panel", id: panelId(n), hidden: true },
      el("blockquote", { class: "cite-text", text: c.text || "(no text)" }),
      el("p", { class: "cite-meta", text: [kind, c.file_name].filter(Boolean).join(" · ") },
        link && " · ",
        link && el("a", { class: "cite-link", href: link, target: "_blank", rel: "noopener noreferrer", text: "Open the source" })));
    list.append(el("li", {}, button(n, `[${n}] ${c.title || c.file_name || "Untitled source"}`, "cite-toggle"), panel));
  }
  const section = el("div", { class: "cites" }, el("p", { class: "cites-heading", text: "Sources" }), list);
  answer.element.querySelector(".cites")?.remove();
  answer.element.append(section);
}
