-- A large reading is staged in slices (`chunk_drafts`, migration 0011) and swapped in at once.
-- Its chunks holding CJK text are indexed as character pairs (`chunks_cjk`, migration 0010)
-- like those written in one step: the slice's step works the pairs out beside each draft, and
-- the swap writes them under the chunks' new ids.
ALTER TABLE chunk_drafts ADD COLUMN pairs TEXT;
