// Scorers: each turns a question into the documents the service points to, best first. The
// report judges every scorer the same way: top-1 on the first document, top-3 on the first
// three distinct ones. A scorer is `{name, describe, ask(question)}` where `ask` resolves to
// `{documents: [file name, ...], first: {document, heading, score, text} | null}`.
//
// `search` ranks what retrieval finds; `answer` asks the chat endpoint (a fresh session per
// question, so no history leaks between questions) and gives back the documents the stored
// answer cites, in citation order: its top-1 is "the first citation is the right document".

/** The document a search result or citation comes from: its file name, else its title (a Q&A
 * pair's is its question). */
export const documentOf = (hit) => hit.file_name || hit.title || hit.data_source_uuid;

/** Distinct values in first-seen order. */
export function distinct(values) {
  return [...new Set(values)];
}

function excerpt(text, max = 160) {
  const flat = String(text ?? "").replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** `POST /chatbot/{uuid}/search`: documents in the order of their best-ranked chunk. */
export function searchScorer({ api, chatbotUuid, limit = 20 }) {
  return {
    name: "search",
    describe: `POST /chatbot/{uuid}/search, limit ${limit}; documents in the order of their best chunk`,
    async ask(question) {
      const r = await api.post(`/chatbot/${chatbotUuid}/search`, { body: { query: question, limit } });
      if (r.status !== 200) throw new Error(`search failed: ${r.status} ${r.text}`);
      const results = r.json.results;
      const top = results[0];
      return {
        documents: distinct(results.map(documentOf)),
        first: top ? { document: documentOf(top), heading: top.heading, score: top.score, text: excerpt(top.text) } : null,
      };
    },
  };
}

/** `POST /session/{uuid}/message/non-stream`: documents in the order the answer cites them. */
export function answerScorer({ api, chatbotUuid }) {
  return {
    name: "answer",
    describe: "POST /session/{uuid}/message/non-stream in a new session; documents in citation order",
    ask: (question) => askInSession(api, chatbotUuid, [question]),
  };
}

/** Asks `turns` in order in one session; the documents the last answer cites, in order. */
async function askInSession(api, chatbotUuid, turns) {
  const session = await api.post(`/chatbot/${chatbotUuid}/session/create`);
  if (session.status !== 200) throw new Error(`session create failed: ${session.status} ${session.text}`);
  let r;
  for (const query of turns) {
    r = await api.post(`/session/${session.json.uuid}/message/non-stream`, { body: { query } });
    if (r.status !== 200) throw new Error(`answer failed: ${r.status} ${r.text}`);
  }
  const citations = JSON.parse(r.json.cite_data_json);
  const ordered = Object.keys(citations).sort((a, b) => Number(a) - Number(b)).map((k) => citations[k]);
  const top = ordered[0];
  let answered;
  try { answered = JSON.parse(r.json.meta_json).answered; } catch { answered = undefined; }
  return {
    documents: distinct(ordered.map(documentOf)),
    first: top ? { document: documentOf(top), heading: "", score: null, text: excerpt(r.json.response) } : null,
    answered,
  };
}

/** The last turn of a conversation (`question` is the list of turns), asked after the others. */
export function followUpScorer({ api, chatbotUuid }) {
  return {
    name: "follow-up",
    describe: "two turns in one session via POST /session/{uuid}/message/non-stream; documents the second answer cites",
    ask: (turns) => askInSession(api, chatbotUuid, turns),
  };
}

/** A conversation's follow-up written to stand alone, in a fresh session. */
export function standaloneScorer({ api, chatbotUuid }) {
  return {
    name: "standalone",
    describe: "the follow-up's standalone form in a new session; documents the answer cites",
    ask: (question) => askInSession(api, chatbotUuid, [question]),
  };
}

/** Every scorer by name; each factory takes `{api, chatbotUuid}`. */
export const SCORERS = {
  search: searchScorer,
  answer: answerScorer,
  "follow-up": followUpScorer,
  standalone: standaloneScorer,
};
