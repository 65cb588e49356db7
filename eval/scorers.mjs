// Scorers: each turns a question into the documents the service points to, best first. The
// report judges every scorer the same way: top-1 on the first document, top-3 on the first
// three distinct ones. A scorer is `{name, describe, ask(question)}` where `ask` resolves to
// `{documents: [file name, ...], first: {document, heading, score, text} | null}`.
//
// Only `search` exists today. A full-answer scorer belongs next to it: it would ask the chat
// endpoint the question and give back the documents its citations name, in citation order,
// so its top-1 is "the first citation is the right document".

/** The document a search result or citation comes from: its file name, else its title. */
export const documentOf = (hit) => hit.file_name ?? hit.title ?? hit.data_source_uuid;

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

/** Every scorer by name; each factory takes `{api, chatbotUuid}`. */
export const SCORERS = {
  search: searchScorer,
};
