-- The words the full-text index holds, as its stemmer wrote them, each with the number of
-- chunks holding it: a question word that matches nothing is compared with the terms that
-- share its first letters, so a misspelling ("cancle", "pasword") still finds its passages.
-- fts5vocab reads `chunks_fts` itself and stores nothing; it covers every chatbot's chunks,
-- which only chooses the word searched for, never what a chatbot's search returns.
CREATE VIRTUAL TABLE chunks_vocab USING fts5vocab(chunks_fts, 'row');
