// The chat page: an API key, a chatbot and its settings, its knowledge, and a chat.
import { api, ApiError, Conversation, el, followMessage, streamMessage } from "/chat.js";

const $ = (id) => document.getElementById(id);
const KEY_STORE = "edgechat:key";
// The chatbot and session open in this tab, so a reload comes back to them (and to an answer
// still being produced).
const OPEN_STORE = "edgechat:open";

const state = {
  key: "",
  bots: [],
  bot: null,
  sources: [],
  session: null,
  polling: null,
  sending: false,
};

const conversation = new Conversation($("conversation"), { rate: (uuid, rating) => rateAnswer(uuid, rating) });

// ------------------------------------------------------------------------------------------
// Messages to the person

function say(id, text, { error = false } = {}) {
  const node = $(id);
  node.textContent = text;
  node.classList.toggle("error", error);
  // Errors interrupt; other news waits its turn.
  node.setAttribute("role", error ? "alert" : "status");
}

function problem(err) {
  return err instanceof ApiError ? err.message : "Something went wrong in the page.";
}

/** Marks the form field an API error names, and puts the message next to it. */
function markField(form, err) {
  clearMarks(form);
  if (!(err instanceof ApiError) || !err.field) return;
  const field = form.querySelector(`[name="${err.field}"]`);
  if (!field) return;
  const note = el("p", { class: "field-error", id: `${field.id}-error`, text: err.message });
  field.setAttribute("aria-invalid", "true");
  field.setAttribute("aria-describedby", [field.getAttribute("aria-describedby"), note.id].filter(Boolean).join(" "));
  field.insertAdjacentElement("afterend", note);
  field.focus();
}

function clearMarks(form) {
  for (const note of form.querySelectorAll(".field-error")) {
    const field = form.querySelector(`[aria-describedby~="${note.id}"]`);
    if (field) {
      field.removeAttribute("aria-invalid");
      const rest = field.getAttribute("aria-describedby").split(" ").filter((x) => x !== note.id).join(" ");
      if (rest) field.setAttribute("aria-describedby", rest); else field.removeAttribute("aria-describedby");
    }
    note.remove();
  }
}

/** Runs `work` with the form's buttons off, so a double click sends once. */
async function busy(form, work) {
  const buttons = [...form.querySelectorAll("button")];
  buttons.forEach((b) => { b.disabled = true; });
  try { return await work(); } finally { buttons.forEach((b) => { b.disabled = false; }); }
}

const call = (method, path, opts = {}) => api(method, path, { token: state.key, ...opts });

// ------------------------------------------------------------------------------------------
// Key

/** One line about a key: its scopes, and when it expires, where from, when last used. */
function describeKey(k) {
  const parts = [`scopes: ${k.scopes.join(", ")}`];
  if (k.expires_at) parts.push(`expires ${k.expires_at}`);
  if (k.allowed_ips.length) parts.push(`only from ${k.allowed_ips.join(", ")}`);
  parts.push(k.last_used_at ? `last used ${k.last_used_at}` : "never used");
  return parts.join(" · ");
}

const LISTS_CHATBOTS = ["admin", "manage", "read"];

async function useKey(key, { remember }) {
  say("key-status", "Checking the key…");
  const me = await call("GET", "/api-key/current", { token: key }).catch((err) => {
    say("key-status", problem(err), { error: true });
    return null;
  });
  if (!me) return false;
  state.key = key;
  sessionStorage.setItem(KEY_STORE, key);
  if (remember) localStorage.setItem(KEY_STORE, key); else localStorage.removeItem(KEY_STORE);
  $("forget-key").hidden = false;
  $("key-scopes").hidden = false;
  $("key-scopes").textContent = `This key (${me.prefix}…): ${describeKey(me)}.`;
  $("keys").hidden = !me.scopes.includes("admin");
  if (!$("keys").hidden) loadKeys();
  if (!me.scopes.some((s) => LISTS_CHATBOTS.includes(s))) {
    $("bots").hidden = true;
    say("key-status", "Key accepted. It may only chat (sessions and messages), so it cannot list chatbots here.");
    return true;
  }
  const bots = await call("GET", "/chatbots").catch((err) => {
    say("key-status", problem(err), { error: true });
    return null;
  });
  if (!bots) return false;
  say("key-status", `Key accepted: ${bots.length} chatbot${bots.length === 1 ? "" : "s"} on this account.`);
  $("bots").hidden = false;
  showBots(bots);
  return true;
}

async function loadKeys() {
  try {
    const keys = await call("GET", "/api-keys");
    $("key-list").replaceChildren(...keys.map((k) => el("li", {},
      el("span", { class: "source-title", text: `${k.name} (${k.prefix}…)` }),
      el("span", { class: "source-kind", text: describeKey(k) }),
    )));
  } catch (err) {
    say("keys-status", problem(err), { error: true });
  }
}

$("new-key-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const scope = e.submitter?.value === "read" ? "read" : "chat";
  busy(e.target, async () => {
    try {
      const name = $("new-key-name").value.trim();
      const made = await call("POST", "/api-key/create", { body: { name, scopes: [scope] } });
      $("new-key-name").value = "";
      $("new-key").hidden = false;
      $("new-key-secret").value = made.key;
      say("keys-status", `Created the ${scope} key “${made.name}”. Copy it now: it is not shown again.`);
      $("new-key-secret").focus();
      $("new-key-secret").select();
      await loadKeys();
    } catch (err) {
      say("keys-status", problem(err), { error: true });
    }
  });
});

$("key-form").addEventListener("submit", (e) => {
  e.preventDefault();
  busy(e.target, () => useKey($("api-key").value.trim(), { remember: $("remember-key").checked }));
});

$("forget-key").addEventListener("click", () => {
  sessionStorage.removeItem(KEY_STORE);
  localStorage.removeItem(KEY_STORE);
  location.reload();
});

// ------------------------------------------------------------------------------------------
// Chatbots

function showBots(bots, selected) {
  state.bots = bots;
  const select = $("bot-select");
  select.replaceChildren(
    el("option", { value: "", text: bots.length ? "Choose a chatbot…" : "No chatbots yet: create one below" }),
    ...bots.map((b) => el("option", { value: b.uuid, text: b.name })),
  );
  const reopened = remembered().bot;
  const pick = selected ?? (bots.some((b) => b.uuid === reopened) ? reopened : bots.length === 1 ? bots[0].uuid : "");
  select.value = pick;
  if (pick) openBot(pick);
}

$("bot-select").addEventListener("change", (e) => {
  if (e.target.value) openBot(e.target.value);
});

$("create-form").addEventListener("submit", (e) => {
  e.preventDefault();
  busy(e.target, async () => {
    try {
      const bot = await call("POST", "/chatbot/create", { body: { name: $("new-bot-name").value.trim() } });
      $("new-bot-name").value = "";
      say("bots-status", `Created “${bot.name}”.`);
      showBots([...state.bots, bot], bot.uuid);
    } catch (err) {
      say("bots-status", problem(err), { error: true });
    }
  });
});

async function openBot(uuid) {
  const bot = state.bots.find((b) => b.uuid === uuid);
  if (!bot) return;
  state.bot = bot;
  for (const id of ["settings", "sources", "chat", "insights", "embed"]) $(id).hidden = false;
  loadInsights();
  fillSettings(bot);
  showEmbed(bot);
  conversation.clear();
  state.session = null;
  const reopen = remembered().bot === uuid ? remembered().session : null;
  remember();
  await Promise.all([loadSources(), loadSessions(reopen ?? undefined)]);
  if (reopen && state.bot === bot && $("session-select").value === reopen) await openSession(reopen);
}

function remembered() {
  try { return JSON.parse(sessionStorage.getItem(OPEN_STORE)) ?? {}; } catch { return {}; }
}

function remember() {
  try {
    sessionStorage.setItem(OPEN_STORE, JSON.stringify({ bot: state.bot?.uuid, session: state.session }));
  } catch { /* storage off: nothing to come back to */ }
}

// ------------------------------------------------------------------------------------------
// Settings

function fillSettings(bot) {
  const m = bot.meta;
  $("set-name").value = bot.name;
  $("set-visibility").value = m.visibility;
  $("set-origins").value = (m.allowed_origins ?? []).join("\n");
  $("set-rate-count").value = m.rate_limit[0];
  $("set-rate-window").value = m.rate_limit[1];
  $("set-rate-message").value = m.rate_limit_message;
  $("set-citations").checked = m.show_citations;
  clearMarks($("settings-form"));
}

$("settings-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const form = e.target;
  busy(form, async () => {
    const whole = (v) => (v.trim() === "" ? v : Number(v));
    const body = {
      name: $("set-name").value,
      visibility: $("set-visibility").value,
      allowed_origins: $("set-origins").value.split(/[\s,]+/).filter(Boolean),
      rate_limit: [whole($("set-rate-count").value), whole($("set-rate-window").value)],
      rate_limit_message: $("set-rate-message").value,
      show_citations: $("set-citations").checked,
    };
    try {
      const bot = await call("POST", `/chatbot/${state.bot.uuid}/update`, { body });
      state.bot = bot;
      state.bots = state.bots.map((b) => (b.uuid === bot.uuid ? bot : b));
      $("bot-select").querySelector(`option[value="${bot.uuid}"]`).textContent = bot.name;
      fillSettings(bot);
      showEmbed(bot);
      say("settings-status", "Settings saved.");
    } catch (err) {
      say("settings-status", problem(err), { error: true });
      markField(form, err);
    }
  });
});

// ------------------------------------------------------------------------------------------
// Knowledge

const STATUS_TEXT = { await: "Waiting to be read", running: "Reading…", success: "Ready", error: "Failed" };
const KIND_TEXT = { qa: "Q&A pair", link: "Web page", file: "File" };

function sourceStatus(source) {
  let text = STATUS_TEXT[source.status] ?? source.status;
  if (source.status === "error") {
    try {
      const reason = JSON.parse(source.meta_json || "{}").error;
      if (reason) text += `: ${reason}`;
    } catch { /* no reason given */ }
  }
  return text;
}

function renderSources() {
  const list = $("source-list");
  const seen = new Set();
  for (const s of state.sources) {
    seen.add(s.uuid);
    let item = list.querySelector(`[data-uuid="${s.uuid}"]`);
    if (!item) {
      item = el("li", { "data-uuid": s.uuid },
        el("span", { class: "source-title" }),
        el("span", { class: "source-kind" }),
        el("span", { class: "source-status" }));
      list.append(item);
    }
    item.querySelector(".source-title").textContent = s.title || s.file_name || "Untitled";
    item.querySelector(".source-kind").textContent = KIND_TEXT[s.type] ?? s.type;
    const status = item.querySelector(".source-status");
    const text = sourceStatus(s);
    // Only a change is written, so a screen reader hears each step once.
    if (status.textContent !== text) status.textContent = text;
    item.dataset.status = s.status;
  }
  for (const item of [...list.children]) if (!seen.has(item.dataset.uuid)) item.remove();
  if (!state.sources.length) list.replaceChildren(el("li", { class: "empty", text: "No sources yet." }));
}

async function loadSources() {
  const bot = state.bot;
  try {
    const sources = await call("GET", `/chatbot/${bot.uuid}/data-sources`);
    if (state.bot !== bot) return;
    state.sources = sources;
    renderSources();
    watchSources();
  } catch (err) {
    say("sources-status", problem(err), { error: true });
  }
}

/** Polls while any source is still being read. */
function watchSources() {
  clearTimeout(state.polling);
  if (state.sources.some((s) => s.status === "await" || s.status === "running")) {
    state.polling = setTimeout(loadSources, 1000);
  }
}

function sourceAdded(source, form) {
  state.sources = [...state.sources.filter((s) => s.uuid !== source.uuid), source];
  renderSources();
  watchSources();
  form.reset();
  clearMarks(form);
  say("sources-status", `Added “${source.title || source.file_name}”.`);
}

for (const [formId, path, read] of [
  ["qa-form", "qa", () => ({ body: { question: $("qa-question").value, answer: $("qa-answer").value } })],
  ["url-form", "url", () => ({ body: { url: $("source-url").value.trim() } })],
  ["file-form", "upload", () => {
    const form = new FormData();
    form.append("file", $("source-file").files[0]);
    const link = $("source-link").value.trim();
    if (link) form.append("meta_json", JSON.stringify({ reference_source_link: link }));
    return { form };
  }],
]) {
  $(formId).addEventListener("submit", (e) => {
    e.preventDefault();
    const form = e.target;
    busy(form, async () => {
      say("sources-status", "Adding…");
      try {
        sourceAdded(await call("POST", `/chatbot/${state.bot.uuid}/data-source/${path}`, read()), form);
      } catch (err) {
        say("sources-status", problem(err), { error: true });
        markField(form, err);
      }
    });
  });
}

// ------------------------------------------------------------------------------------------
// Chat

function sessionLabel(s, index) {
  const when = new Date(s.created_at).toLocaleString([], { dateStyle: "medium", timeStyle: "short" });
  return `Session ${index + 1}, started ${when}`;
}

async function loadSessions(selected) {
  const bot = state.bot;
  try {
    const sessions = await call("GET", `/chatbot/${bot.uuid}/sessions`);
    if (state.bot !== bot) return;
    const select = $("session-select");
    select.replaceChildren(
      el("option", { value: "", text: "A new session starts with your first message" }),
      ...sessions.map((s, i) => el("option", { value: s.uuid, text: sessionLabel(s, i) })).reverse(),
    );
    select.value = selected ?? "";
  } catch (err) {
    say("chat-status", problem(err), { error: true });
  }
}

$("session-select").addEventListener("change", (e) => openSession(e.target.value));

async function openSession(uuid) {
  conversation.clear();
  state.session = uuid || null;
  remember();
  if (!uuid) return;
  try {
    const messages = await call("GET", `/session/${uuid}/messages`);
    let streaming = null;
    for (const m of messages) {
      if (m.kind === "answer" && m.finish_reason === "streaming") streaming = m;
      else conversation.addStored(m);
    }
    say("chat-status", messages.length ? `${messages.length} earlier message${messages.length === 1 ? "" : "s"}.` : "No messages in this session yet.");
    if (streaming) await resumeAnswer(streaming);
  } catch (err) {
    say("chat-status", problem(err), { error: true });
  }
}

/** An answer still being produced (the page was reloaded meanwhile) continues as it streams. */
async function resumeAnswer(message) {
  conversation.addUser(message.query);
  const answer = conversation.startAnswer();
  say("chat-status", "Answering…");
  let failed = false;
  let ended = false;
  let stopped = false;
  $("send").disabled = true;
  answer.stoppable(() => call("POST", `/message/${message.uuid}/stop`));
  try {
    await followMessage({
      token: state.key,
      messageUuid: message.uuid,
      onEvent: (name, data) => {
        if (name === "delta") answer.append(data.text ?? "");
        else if (name === "citations") answer.cite(data);
        else if (name === "error") { failed = true; answer.fail(data.message ?? "The answer failed."); }
        else if (name === "end" && data.finish_reason === "interrupted") { failed = true; answer.fail("The answer was cut off."); }
        if (name === "end") { ended = true; stopped = data.finish_reason === "stopped"; }
      },
    });
    // A stream that closes without its end (an answer whose model failed before a word says
    // so in an error event) was not answered.
    if (!ended && !failed) { failed = true; answer.fail("The answer did not come to an end."); }
    answer.done();
    if (!failed) answer.rateable(message.uuid);
    say("chat-status", failed ? "The answer stopped with an error." : stopped ? "Stopped." : "Answered.", { error: failed });
  } finally {
    $("send").disabled = false;
  }
}

$("new-session").addEventListener("click", async () => {
  try {
    const session = await call("POST", `/chatbot/${state.bot.uuid}/session/create`);
    state.session = session.uuid;
    remember();
    conversation.clear();
    await loadSessions(session.uuid);
    say("chat-status", "New session started.");
    $("question").focus();
  } catch (err) {
    say("chat-status", problem(err), { error: true });
  }
});

/** Rates an answer; the message is stored as its stream ends, so a very quick click waits once. */
async function rateAnswer(uuid, rating) {
  const send = () => call("POST", `/message/${uuid}/feedback`, { body: { rating } });
  try {
    return await send();
  } catch (err) {
    if (err.status !== 404) throw err;
    await new Promise((r) => setTimeout(r, 700));
    return send();
  }
}

async function ask(query) {
  if (!state.session) {
    const session = await call("POST", `/chatbot/${state.bot.uuid}/session/create`);
    state.session = session.uuid;
    remember();
    await loadSessions(session.uuid);
  }
  conversation.addUser(query);
  const answer = conversation.startAnswer();
  say("chat-status", "Answering…");
  let failed = false;
  let stopped = false;
  let messageUuid = null;
  try {
    await streamMessage({
      token: state.key,
      sessionUuid: state.session,
      query,
      onEvent: (name, data) => {
        if (name === "delta") answer.append(data.text ?? "");
        else if (name === "citations") answer.cite(data);
        else if (name === "error") { failed = true; answer.fail(data.message ?? "The answer failed."); }
        else if (name === "start" && data.live_chat) answer.append("A person is answering in this session; their reply will appear among its messages.");
        else if (name === "start") {
          messageUuid = data.message_uuid;
          answer.stoppable(() => call("POST", `/message/${data.message_uuid}/stop`));
        } else if (name === "end") stopped = data.finish_reason === "stopped";
      },
    });
    answer.done();
    if (!failed) answer.rateable(messageUuid);
    say("chat-status", failed ? "The answer stopped with an error." : stopped ? "Stopped." : "Answered.", { error: failed });
  } catch (err) {
    // Refused before any answer (the rate limit, say): the reason goes where the answer would.
    answer.element.remove();
    conversation.addNote(problem(err), "note msg-error");
    const wait = err.retryAfter ? ` (you can send again in ${err.retryAfter} s)` : "";
    say("chat-status", `${problem(err)}${err.code === "rate_limited" ? wait : ""}`, { error: true });
  }
}

$("ask-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const input = $("question");
  const query = input.value.trim();
  // Not while an answer streams in (one resumed after a reload): the session answers one
  // message at a time, and Enter does not heed the disabled Send button.
  if (!query || state.sending || $("send").disabled) return;
  state.sending = true;
  input.value = "";
  busy(e.target, () => ask(query).catch((err) => {
    // Refused before it was shown (no session could be made): the question is given back.
    if (!input.value) input.value = query;
    say("chat-status", problem(err), { error: true });
  }))
    .finally(() => { state.sending = false; input.focus(); });
});

$("question").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    $("ask-form").requestSubmit();
  }
});

// ------------------------------------------------------------------------------------------
// Widget

function showEmbed(bot) {
  const open = bot.meta.visibility !== "private";
  const origin = location.origin;
  const note = {
    private: "This chatbot is private: only API keys reach it. Make it public or hybrid to embed it on a site.",
    public: "Visitors on any site can chat with it through the widget, within its rate limit.",
    hybrid: (bot.meta.allowed_origins ?? []).length
      ? `Visitors on ${bot.meta.allowed_origins.join(", ")} can chat with it through the widget, within its rate limit.`
      : "Hybrid, but no site is listed yet: add the sites allowed to embed it in the settings.",
  }[bot.meta.visibility];
  $("embed-note").textContent = note;
  $("embed-codes").hidden = !open;
  $("embed-script").value = `<script src="${origin}/widget.js" data-chatbot="${bot.uuid}" async></script>`;
  $("embed-iframe").value = `<iframe src="${origin}/widget?chatbot=${bot.uuid}" title="Chat with ${bot.name.replace(/"/g, "&quot;")}" width="380" height="560" style="border:0"></iframe>`;
  $("embed-open").href = `/widget?chatbot=${bot.uuid}`;
  // On its own, outside any site, only a public chatbot's widget page answers.
  $("embed-open").parentElement.hidden = bot.meta.visibility !== "public";
}

// ------------------------------------------------------------------------------------------

const saved = sessionStorage.getItem(KEY_STORE) ?? localStorage.getItem(KEY_STORE);
if (saved) {
  $("api-key").value = saved;
  $("remember-key").checked = localStorage.getItem(KEY_STORE) === saved;
  useKey(saved, { remember: $("remember-key").checked });
}

// ------------------------------------------------------------------------------------------
// Analytics: totals, answers per day as a chart and as a table, and unanswered questions

const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attrs = {}) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  return node;
}

function insightsQuery() {
  const params = new URLSearchParams();
  const start = $("insights-start").value;
  const end = $("insights-end").value;
  if (start) params.set("start_timestamp", `${start}T00:00:00Z`);
  if (end) params.set("end_timestamp", `${end}T23:59:59Z`);
  const text = params.toString();
  return text ? `?${text}` : "";
}

function drawChart(series) {
  const chart = $("insights-chart");
  chart.replaceChildren();
  if (!series.length) {
    chart.append(el("p", { class: "hint", text: "No messages in this range yet." }));
    return;
  }
  const width = 600;
  const height = 160;
  const most = Math.max(1, ...series.map((d) => d.answered + d.unanswered));
  // The series lists only days with messages: each bar stands at its own day, so a quiet
  // day is a gap rather than the next day's bar moved up.
  const dayOf = (d) => Math.round((Date.parse(d.date) - Date.parse(series[0].date)) / 86_400_000);
  const days = dayOf(series[series.length - 1]) + 1;
  const slot = width / days;
  const bar = Math.max(2, slot * 0.7);
  const picture = svg("svg", { viewBox: `0 0 ${width} ${height + 20}`, role: "img", "aria-label": `Answers per day, ${days} days; the table below lists the days with messages.` });
  series.forEach((d) => {
    const x = dayOf(d) * slot + (slot - bar) / 2;
    const answeredHeight = (d.answered / most) * height;
    const unansweredHeight = (d.unanswered / most) * height;
    const answered = svg("rect", { x, y: height - answeredHeight, width: bar, height: answeredHeight, class: "bar-answered" });
    const unanswered = svg("rect", { x, y: height - answeredHeight - unansweredHeight, width: bar, height: unansweredHeight, class: "bar-unanswered" });
    const title = svg("title");
    title.textContent = `${d.date}: ${d.answered} answered, ${d.unanswered} not`;
    answered.append(title);
    picture.append(answered, unanswered);
  });
  const first = svg("text", { x: 0, y: height + 16, class: "chart-label" });
  first.textContent = series[0].date;
  const last = svg("text", { x: width, y: height + 16, class: "chart-label", "text-anchor": "end" });
  last.textContent = series[series.length - 1].date;
  picture.append(first, last);
  chart.append(picture);
}

function showInsights(report, groups) {
  const t = report.totals;
  const share = t.answered_share === null ? "–" : `${Math.round(t.answered_share * 100)}%`;
  const tags = Object.entries(t.tags).map(([name, n]) => `${name} ${n}`).join(", ") || "none";
  const totals = [
    ["Sessions", t.sessions], ["Messages", t.messages], ["Visitors", t.visitors],
    ["Answered from the sources", share], ["Asked for a person", t.escalations], ["Live chats", t.live_chats],
    ["Helpful", t.feedback_up], ["Not helpful", t.feedback_down], ["Tags", tags],
  ];
  $("insights-totals").replaceChildren(...totals.flatMap(([name, value]) => [el("dt", { text: name }), el("dd", { text: String(value) })]));
  drawChart(report.series);
  $("insights-table").tBodies[0].replaceChildren(...report.series.map((d) => el("tr", {},
    el("th", { scope: "row", text: d.date }),
    ...[d.sessions, d.messages, d.answered, d.unanswered, d.feedback_up, d.feedback_down].map((n) => el("td", { text: String(n) })))));
  $("unanswered-list").replaceChildren(...(groups.length
    ? groups.slice(0, 20).map((g) => el("li", {}, el("span", { text: g.question }), el("span", { class: "count", text: ` ×${g.count}` })))
    : [el("li", { class: "hint", text: "None: every question found an answer." })]));
}

async function loadInsights() {
  if (!state.bot) return;
  const query = insightsQuery();
  say("insights-status", "Counting…");
  try {
    const [report, groups] = await Promise.all([
      call("GET", `/chatbot/${state.bot.uuid}/analytics${query}`),
      call("GET", `/chatbot/${state.bot.uuid}/unanswered${query}`),
    ]);
    showInsights(report, groups);
    say("insights-status", "");
  } catch (err) {
    say("insights-status", problem(err), { error: true });
  }
}

$("insights-form").addEventListener("submit", (e) => {
  e.preventDefault();
  loadInsights();
});
