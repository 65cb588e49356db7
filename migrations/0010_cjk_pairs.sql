-- Chinese, Japanese and Korean text has no spaces between words, so `chunks_fts` reads a
-- whole run of it as one token and no question matches it. Chunks holding such text are
-- indexed again here as their overlapping character pairs (`knowledge::query::cjk_pairs`),
-- written beside the chunk when it is stored; a question in those scripts is searched here.
-- Rows share the chunk's id, and go with it.
CREATE VIRTUAL TABLE chunks_cjk USING fts5(pairs, tokenize = 'unicode61');
CREATE TRIGGER chunks_cjk_ad AFTER DELETE ON chunks BEGIN
  DELETE FROM chunks_cjk WHERE rowid = old.id;
END;
