use super::table::{table, Sql};
use super::{batch_rows, object_text, Arg, Owner, Store};
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::domain::data_source::{DataSource, SourceType, Status};
use edgechat_core::knowledge::chunk::Chunk;
use edgechat_core::knowledge::cjk::searched_as_cjk;
use edgechat_core::knowledge::retrieve::ChunkHit;
use edgechat_core::knowledge::steps::{split_by_size, Refresh, StagedChunk, DRAFT_STATEMENT_BYTES};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::HashMap;
use worker::{D1PreparedStatement, D1Result};

table! {
    pub(super) struct SourceRow in DATA_SOURCES = "data_sources" {
        key uuid: String,
        fixed chatbot_uuid: String,
        fixed source_type as "type": SourceType,
        set title: String,
        fixed file_name: String,
        fixed file_size: i64,
        set tokens: i64,
        set status: Status,
        set meta_json: String,
        fixed object_key: Option<String>,
        fixed created_at: String,
        set modified_at: String,
    }
}

impl From<&DataSource> for SourceRow {
    fn from(s: &DataSource) -> Self {
        SourceRow {
            uuid: s.uuid.clone(),
            chatbot_uuid: s.chatbot_uuid.clone(),
            source_type: s.source_type,
            title: s.title.clone(),
            file_name: s.file_name.clone(),
            file_size: s.file_size,
            tokens: s.tokens,
            status: s.status,
            meta_json: object_text(&s.meta),
            object_key: s.object_key.clone(),
            created_at: s.created_at.clone(),
            modified_at: s.modified_at.clone(),
        }
    }
}

impl TryFrom<SourceRow> for DataSource {
    type Error = ApiError;

    fn try_from(r: SourceRow) -> ApiResult<DataSource> {
        let meta = match serde_json::from_str::<Value>(&r.meta_json)? {
            Value::Object(m) => m,
            _ => {
                return Err(ApiError::internal(format!(
                    "data source {} has bad meta_json",
                    r.uuid
                )))
            }
        };
        Ok(DataSource {
            uuid: r.uuid,
            chatbot_uuid: r.chatbot_uuid,
            source_type: r.source_type,
            title: r.title,
            file_name: r.file_name,
            file_size: r.file_size,
            tokens: r.tokens,
            status: r.status,
            meta,
            object_key: r.object_key,
            created_at: r.created_at,
            modified_at: r.modified_at,
        })
    }
}

table! {
    /// Where one of the scheduled handler's sweeps stopped (`maintenance::run`).
    pub(super) struct MaintenancePosition in MAINTENANCE_POSITIONS = "maintenance_positions" {
        key task: String,
        set position: String,
        set modified_at: String,
    }
}

table! {
    /// A chunk as it is written; reads go through the index (`search_chunks`).
    pub(super) struct ChunkRow in CHUNKS = "chunks" {
        fixed data_source_uuid: String,
        fixed chatbot_uuid: String,
        fixed position: i64,
        fixed heading: String,
        fixed text: String,
        fixed tokens: i64,
    }
}

/// `UPDATE data_sources SET` the columns given `WHERE uuid =` the source's; more conditions
/// may be appended.
pub(super) fn update_source<'a>(uuid: &'a str, set: Vec<(&'static str, Arg<'a>)>) -> Sql<'a> {
    let mut update = Sql::update_columns(&DATA_SOURCES, set);
    let uuid = update.bind(Arg::Text(uuid));
    update.push(&format!(" WHERE uuid = {uuid}"));
    update
}

/// Chunks whose CJK pairs one statement indexes (their text travels as one JSON argument).
const CJK_ROWS_PER_STATEMENT: usize = 50;

pub(super) fn duplicate_upload() -> ApiError {
    ApiError::Conflict("This chatbot already has a data source with exactly this content.".into())
}

/// Which full-text index a search reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SearchIndex {
    /// Words, stemmed: `chunks_fts`, headings weighing three times the text.
    Words,
    /// CJK character pairs: `chunks_cjk` (migration 0010).
    CjkPairs,
}

impl SearchIndex {
    /// The index for `query`: CJK pairs when it is mostly CJK (`searched_as_cjk`).
    pub fn for_query(query: &str) -> Self {
        if searched_as_cjk(query) {
            SearchIndex::CjkPairs
        } else {
            SearchIndex::Words
        }
    }

    fn table(self) -> &'static str {
        match self {
            SearchIndex::Words => "chunks_fts",
            SearchIndex::CjkPairs => "chunks_cjk",
        }
    }

    fn bm25(self) -> &'static str {
        match self {
            SearchIndex::Words => "bm25(chunks_fts, 3.0, 1.0)",
            SearchIndex::CjkPairs => "bm25(chunks_cjk)",
        }
    }
}

/// The FTS5 expression a search runs, chosen in SQL from the phrases' counts so that counting
/// and searching are one statement. `?1` is the question's phrases (a JSON list), `?4` the
/// conversation's (they score but never gate), `?5` the candidate budget. When the question's
/// phrases together match more chunks than the budget, the rarest of them (as many as fit the
/// budget together, and always the rarest that matches something) gate which chunks are
/// scored: `(rare OR ...) AND (every OR ...)`; every phrase still counts towards bm25. The
/// rarest of the question's own words that matches something (of the first `?10` phrases)
/// always gates too: other words for it (`knowledge::thesaurus`) may be rarer in the whole
/// index and absent from this chatbot, and a gate of them alone (or of words no chunk holds)
/// found nothing for "shipping" in a chatbot that says "shipping", beside one whose book says
/// it thousands of times. Otherwise, and for a single phrase, which is
/// never counted, it is the plain OR of every phrase. Each step is materialised: left to
/// the planner, D1 evaluated the counts again for the search and took half as long again.
fn gated_expression_ctes(index: &str) -> String {
    format!(
        "WITH p AS MATERIALIZED (SELECT key, value, CASE WHEN json_array_length(?1) > 1 \
           THEN (SELECT COUNT(*) FROM {index} WHERE {index} MATCH value) ELSE 0 END AS n \
           FROM json_each(?1)), \
         g AS MATERIALIZED (SELECT value, n, SUM(n) OVER w AS total FROM p \
           WINDOW w AS (ORDER BY n, key ROWS UNBOUNDED PRECEDING)), \
         every AS (SELECT group_concat(value, ' OR ') AS e FROM (SELECT value FROM p \
           UNION ALL SELECT value FROM json_each(?4) WHERE value NOT IN (SELECT value FROM p))), \
         m AS MATERIALIZED (SELECT CASE WHEN (SELECT SUM(n) FROM p) > ?5 \
           THEN '(' || (SELECT group_concat(value, ' OR ') FROM g WHERE total <= ?5 OR total = n \
               OR value = (SELECT value FROM p WHERE key < ?10 AND n > 0 ORDER BY n, key LIMIT 1)) \
             || ') AND (' || e || ')' \
           ELSE e END AS expression FROM every) "
    )
}

/// SQL that is true when some chunk of `chatbot` (`SearchIn::chatbot_sql`) matches the FTS5
/// phrase `phrase` (SQL). A search's checks of its words read only the chatbot searched: the
/// index is shared by every account, and a word another account's sources hold must neither
/// correct nor cut this one's question (the corrected question is shown to the caller, which
/// would tell it what someone else's sources say). It stops at the chatbot's first match.
fn held_by_chatbot(phrase: &str, chatbot: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM chunks_fts JOIN chunks hk INDEXED BY chunks_by_id_chatbot \
         ON hk.id = chunks_fts.rowid WHERE chunks_fts MATCH {phrase} AND hk.chatbot_uuid = {chatbot})"
    )
}

/// One more step for the search statement: for each of the words in `?7` (a JSON list) that no
/// chunk of the chatbot holds (as the index stems it), the index's terms that start with its
/// first three letters, are not much shorter or longer and some chunk of the chatbot holds,
/// with the number of chunks holding each, as one JSON list of `[word, term, chunks]`: what
/// `knowledge::spelling` chooses a correction from; and those words themselves, as a JSON
/// list. A word the chatbot holds costs one look-up that stops at its first chunk; an empty
/// list costs nothing. It rides on the search statement because a statement of its own in the
/// batch took search from 23.5 to 26.2 ms (p50, alternating requests). The CROSS JOIN keeps
/// the words the outer loop: the other way round, SQLite read the whole vocabulary on every
/// search (0.5 s at 100,000 chunks).
fn near_terms_cte(chatbot: &str) -> String {
    format!(
        ", missing AS MATERIALIZED (SELECT value AS word FROM json_each(?7) \
           WHERE NOT {word_held}), \
         near AS MATERIALIZED (SELECT json_group_array(json_array(missing.word, v.term, v.doc)) \
             AS terms, (SELECT json_group_array(word) FROM missing) AS words \
           FROM missing CROSS JOIN chunks_vocab v ON v.term >= substr(missing.word, 1, 3) \
             AND v.term < substr(missing.word, 1, 3) || char(1114111) \
           WHERE length(v.term) BETWEEN length(missing.word) - 5 AND length(missing.word) + 2 \
             AND {term_held}) ",
        word_held = held_by_chatbot("'\"' || value || '\"'", chatbot),
        term_held = held_by_chatbot("'\"' || v.term || '\"'", chatbot),
    )
}

/// One more step for the search statement: of the cuts in `?8` (a JSON list of
/// `[word, head, tail]` FTS5 phrases, `knowledge::compounds::Cut::phrases`), the indexes of
/// those whose word no chunk of the chatbot holds and whose halves some chunk of it holds each.
/// A word the chatbot holds costs one look-up that stops at its first chunk, whatever the
/// number of its cuts; an empty list costs nothing.
fn cuts_cte(chatbot: &str) -> String {
    format!(
        ", cut_words AS MATERIALIZED (SELECT DISTINCT json_extract(value, '$[0]') AS phrase \
           FROM json_each(?8)), \
         uncut AS MATERIALIZED (SELECT phrase FROM cut_words WHERE NOT {word_held}), \
         cut AS MATERIALIZED (SELECT json_group_array(c.key) AS found FROM json_each(?8) c \
           WHERE json_extract(c.value, '$[0]') IN (SELECT phrase FROM uncut) \
           AND {head_held} AND {tail_held}) ",
        word_held = held_by_chatbot("phrase", chatbot),
        head_held = held_by_chatbot("json_extract(c.value, '$[1]')", chatbot),
        tail_held = held_by_chatbot("json_extract(c.value, '$[2]')", chatbot),
    )
}

/// What a search found: the best chunks, best first, the index terms near the words to check
/// that matched nothing (`ChunkSearch::spelling`), as (word, term, chunks holding it), and
/// which of the cuts of its compounds (`ChunkSearch::cuts`) the index holds both halves of.
#[derive(Debug, Default)]
pub struct SearchFound {
    pub hits: Vec<ChunkHit>,
    pub near_terms: Vec<(String, String, i64)>,
    /// The words to check that no chunk of the chatbot holds.
    pub missing_words: Vec<String>,
    /// Indexes into `ChunkSearch::cuts`.
    pub cuts_found: Vec<usize>,
}

/// A row of the search statement: a chunk found, or (when none was) nothing but `near_terms`,
/// which every row carries. Read straight into this shape: going through `serde_json::Value`
/// first cost about 1 ms a search in the Worker.
#[derive(Deserialize)]
struct SearchRow {
    near_terms: String,
    missing_words: String,
    cuts_found: String,
    id: Option<i64>,
    data_source_uuid: Option<String>,
    position: Option<i64>,
    heading: Option<String>,
    text: Option<String>,
    tokens: Option<i64>,
    source_type: Option<SourceType>,
    title: Option<String>,
    file_name: Option<String>,
    meta_json: Option<String>,
    rank: Option<f64>,
}

impl SearchRow {
    fn hit(self) -> Option<ChunkHit> {
        Some(ChunkHit {
            id: self.id?,
            data_source_uuid: self.data_source_uuid?,
            position: self.position?,
            heading: self.heading?,
            text: self.text?,
            tokens: self.tokens?,
            source_type: self.source_type?,
            title: self.title?,
            file_name: self.file_name?,
            meta_json: self.meta_json?,
            rank: self.rank?,
        })
    }
}

impl SearchFound {
    /// The search statement's answer, read from its place in a batch's results.
    pub(super) fn from_results(results: &[D1Result], at: usize) -> ApiResult<SearchFound> {
        Self::from_rows(batch_rows(results, at)?)
    }

    fn from_rows(rows: Vec<SearchRow>) -> ApiResult<SearchFound> {
        let (near_terms, missing_words, cuts_found) = match rows.first() {
            Some(row) => (
                serde_json::from_str(&row.near_terms)?,
                serde_json::from_str(&row.missing_words)?,
                serde_json::from_str(&row.cuts_found)?,
            ),
            None => (Vec::new(), Vec::new(), Vec::new()),
        };
        let hits = rows.into_iter().filter_map(SearchRow::hit).collect();
        Ok(SearchFound {
            hits,
            near_terms,
            missing_words,
            cuts_found,
        })
    }
}

/// Whose chunks a search reads.
#[derive(Clone, Copy)]
pub enum SearchIn<'a> {
    /// The chatbot's with this uuid.
    Chatbot(&'a str),
    /// Those of the chatbot of the session with this uuid, when the owner holds it: how a turn
    /// searches in the batch that reads its session (`Store::turn_context`), before the
    /// chatbot is known.
    SessionOf(&'a str, Owner<'a>),
}

impl SearchIn<'_> {
    /// The uuid bound as `?2`: the chatbot's, or the session's.
    fn uuid(&self) -> &str {
        match self {
            SearchIn::Chatbot(uuid) | SearchIn::SessionOf(uuid, _) => uuid,
        }
    }

    /// SQL for the chatbot searched: `?2`, or the owned chatbot of the session `?2` (its
    /// owner bound as `?9`). Uncorrelated, so SQLite reads it once per search.
    fn chatbot_sql(&self) -> String {
        match self {
            SearchIn::Chatbot(_) => "?2".into(),
            SearchIn::SessionOf(_, owner) => format!(
                "(SELECT ss.chatbot_uuid FROM sessions ss JOIN chatbots sc \
                 ON sc.uuid = ss.chatbot_uuid WHERE ss.uuid = ?2 AND {})",
                owner.test("sc.account_uuid", 9)
            ),
        }
    }
}

/// What one search asks of a full-text index.
pub struct ChunkSearch<'a> {
    pub index: SearchIndex,
    pub scope: SearchIn<'a>,
    /// The question's phrases (`knowledge::query::phrases`).
    pub phrases: &'a [String],
    /// How many of `phrases`, from the first, are the question's own words.
    pub own_phrases: usize,
    /// The conversation's phrases, weighted in by bm25 beside the question's.
    pub context_phrases: &'a [String],
    /// Only chunks of these sources, when set (an agent's sources).
    pub allowed_sources: Option<&'a [String]>,
    /// How many of the best chunks to read.
    pub limit: usize,
    /// About how many chunks may be scored (`Config::search_candidate_budget`).
    pub budget: u64,
    /// Question words that may be misspelled (`knowledge::spelling::words_to_check`): those
    /// the index does not hold come back with the terms near them, in the same round trip.
    pub spelling: &'a [String],
    /// The ways of cutting the question's long words in two, as the phrases of the word and
    /// its halves (`knowledge::compounds::Cut::phrases`): those whose word matches nothing and
    /// whose halves match come back as `SearchFound::cuts_found`, in the same round trip.
    pub cuts: &'a [[String; 3]],
}

impl Store {
    /// The statement for `search`: the best chunks, best first, with their sources' fields.
    /// The best are chosen from the index and the `chunks_by_id_chatbot` index alone; only
    /// those rows are then read in full.
    fn chunk_search_statement(&self, search: &ChunkSearch) -> ApiResult<D1PreparedStatement> {
        let index = search.index.table();
        let mut sql = gated_expression_ctes(index);
        let chatbot = search.scope.chatbot_sql();
        sql.push_str(&near_terms_cte(&chatbot));
        sql.push_str(&cuts_cte(&chatbot));
        sql.push_str(&format!(
            ", found AS MATERIALIZED (SELECT c.id, c.data_source_uuid, c.position, c.heading, \
             c.text, c.tokens, s.type AS source_type, s.title, s.file_name, s.meta_json, best.rank \
             FROM (SELECT {index}.rowid AS id, {bm25} AS rank \
             FROM {index} JOIN chunks k INDEXED BY chunks_by_id_chatbot ON k.id = {index}.rowid \
             WHERE {index} MATCH (SELECT expression FROM m) AND k.chatbot_uuid = {chatbot} \
             AND (?6 IS NULL OR k.data_source_uuid IN (SELECT value FROM json_each(?6))) \
             ORDER BY rank LIMIT ?3) best JOIN chunks c ON c.id = best.id \
             JOIN data_sources s ON s.uuid = c.data_source_uuid) \
             SELECT found.*, near.terms AS near_terms, near.words AS missing_words, \
             cut.found AS cuts_found \
             FROM near CROSS JOIN cut LEFT JOIN found ON 1 \
             ORDER BY found.rank",
            bm25 = search.index.bm25(),
        ));
        let phrases = serde_json::to_string(search.phrases)?;
        let context = serde_json::to_string(search.context_phrases)?;
        let allowed = search
            .allowed_sources
            .map(serde_json::to_string)
            .transpose()?;
        let spelling = serde_json::to_string(search.spelling)?;
        let cuts = serde_json::to_string(search.cuts)?;
        let mut args = vec![
            Arg::Text(&phrases),
            Arg::Text(search.scope.uuid()),
            Arg::Int(search.limit as i64),
            Arg::Text(&context),
            Arg::Int(search.budget as i64),
            allowed.as_deref().map_or(Arg::Null, Arg::Text),
            Arg::Text(&spelling),
            Arg::Text(&cuts),
        ];
        args.push(match search.scope {
            SearchIn::SessionOf(_, owner) => owner.arg(),
            SearchIn::Chatbot(_) => Arg::Null,
        });
        args.push(Arg::Int(search.own_phrases as i64));
        self.statement(&sql, &args)
    }

    /// The chunks that best match `search`, best first (see `chunk_search_statement`), and
    /// the terms near its unmatched words.
    pub async fn search_chunks(&self, search: &ChunkSearch<'_>) -> ApiResult<SearchFound> {
        if search.phrases.is_empty() {
            return Ok(SearchFound::default());
        }
        let results = self
            .read_batch(vec![self.chunk_search_statement(search)?])
            .await?;
        SearchFound::from_results(&results, 0)
    }

    /// `search`'s statement for a batch of other reads, and nothing when there is nothing to
    /// search; `SearchFound::from_results` reads its answer.
    pub(super) fn search_statement_for_batch(
        &self,
        search: &ChunkSearch<'_>,
    ) -> ApiResult<Option<D1PreparedStatement>> {
        (!search.phrases.is_empty())
            .then(|| self.chunk_search_statement(search))
            .transpose()
    }

    /// `search_chunks` when the owner holds the chatbot, checked in the same round trip:
    /// `None` when it is not the owner's.
    pub async fn owned_search_chunks(
        &self,
        owner: Owner<'_>,
        search: &ChunkSearch<'_>,
    ) -> ApiResult<Option<SearchFound>> {
        let searching = !search.phrases.is_empty();
        let mut statements = vec![self.statement(
            &format!(
                "SELECT uuid FROM chatbots WHERE uuid = ?1 AND {}",
                owner.test("account_uuid", 2)
            ),
            &[Arg::Text(search.scope.uuid()), owner.arg()],
        )?];
        if searching {
            statements.push(self.chunk_search_statement(search)?);
        }
        let results = self.read_batch(statements).await?;
        if batch_rows::<serde_json::Value>(&results, 0)?.is_empty() {
            return Ok(None);
        }
        if !searching {
            return Ok(Some(SearchFound::default()));
        }
        Ok(Some(SearchFound::from_results(&results, 1)?))
    }
}

impl Store {
    pub(super) fn insert_source_statement(
        &self,
        s: &DataSource,
        content_hash: Option<&str>,
    ) -> ApiResult<D1PreparedStatement> {
        let row = SourceRow::from(s);
        let hash = content_hash.map_or(Arg::Null, Arg::Text);
        self.prepare(&Sql::insert(&row, vec![("content_hash", hash)]))
    }

    pub(super) fn insert_chunk_statements(
        &self,
        source: &DataSource,
        chunks: Vec<Chunk>,
    ) -> ApiResult<Vec<D1PreparedStatement>> {
        // Chunks with CJK text are indexed again as character pairs (migration 0010), found by
        // their source and position once inserted; the pairs are taken out before the chunks
        // are written, so they are not sent twice.
        let mut pairs: Vec<serde_json::Value> = Vec::new();
        let staged: Vec<StagedChunk> = chunks
            .into_iter()
            .map(|chunk| {
                let mut staged = StagedChunk::from(chunk);
                staged.index_pairs();
                if let Some(p) = staged.pairs.take() {
                    pairs.push(serde_json::json!({"position": staged.position, "pairs": p}));
                }
                staged
            })
            .collect();
        // The chunks travel as JSON arrays, one argument per statement. Bound value by value
        // (six a row, sixteen rows a statement under D1's 100 parameters), writing took 60 %
        // of the step reading a 300 KB text file, and twice as long as this.
        let parts = split_by_size(&staged, DRAFT_STATEMENT_BYTES, usize::MAX)
            .into_iter()
            .map(serde_json::to_string)
            .collect::<Result<Vec<_>, _>>()?;
        let mut statements = parts
            .iter()
            .map(|part| {
                self.prepare(&Sql::insert_json_rows::<ChunkRow>(
                    vec![
                        ("data_source_uuid", Arg::Text(&source.uuid)),
                        ("chatbot_uuid", Arg::Text(&source.chatbot_uuid)),
                    ],
                    part,
                ))
            })
            .collect::<ApiResult<Vec<_>>>()?;
        for group in pairs.chunks(CJK_ROWS_PER_STATEMENT) {
            let list = serde_json::to_string(group)?;
            statements.push(self.statement(
                "INSERT INTO chunks_cjk(rowid, pairs) \
                 SELECT c.id, json_extract(p.value, '$.pairs') FROM json_each(?2) p \
                 JOIN chunks c ON c.data_source_uuid = ?1 \
                 AND c.position = json_extract(p.value, '$.position')",
                &[Arg::Text(&source.uuid), Arg::Text(&list)],
            )?);
        }
        Ok(statements)
    }

    /// A new source, and its chunks when it is already read (Q&A). A second upload of the same
    /// bytes to one chatbot is a conflict.
    pub async fn insert_source(
        &self,
        source: &DataSource,
        content_hash: Option<&str>,
        chunks: Vec<Chunk>,
    ) -> ApiResult<()> {
        let mut statements = vec![self.insert_source_statement(source, content_hash)?];
        statements.extend(self.insert_chunk_statements(source, chunks)?);
        match self.batch(statements, duplicate_upload).await {
            Err(ApiError::Conflict(_)) => Err(self.holding(source, content_hash).await),
            done => done.map(|_| ()),
        }
    }

    /// The conflict for `source`, whose content one of its chatbot's sources already holds
    /// (`content_hash`): naming that source and its status, so a failed one can be deleted
    /// and sent again. Read only once the insert has failed, so it costs nothing otherwise.
    async fn holding(&self, source: &DataSource, content_hash: Option<&str>) -> ApiError {
        match self.holder(&source.chatbot_uuid, content_hash).await {
            Some((uuid, status)) => ApiError::Conflict(format!(
                "This chatbot already has a data source with exactly this content: {uuid} \
                 (status {status}); delete it to add the content again."
            )),
            None => duplicate_upload(),
        }
    }

    /// The uuid and status of the chatbot's source holding `content_hash`, if any.
    pub(super) async fn holder(
        &self,
        chatbot_uuid: &str,
        content_hash: Option<&str>,
    ) -> Option<(String, String)> {
        #[derive(serde::Deserialize)]
        struct Holder {
            uuid: String,
            status: String,
        }
        let hash = content_hash?;
        let holder: Option<Holder> = self
            .row(
                "SELECT uuid, status FROM data_sources WHERE chatbot_uuid = ?1 AND content_hash = ?2",
                &[Arg::Text(chatbot_uuid), Arg::Text(hash)],
            )
            .await
            .ok()
            .flatten();
        holder.map(|h| (h.uuid, h.status))
    }

    /// A source, if its chatbot belongs to `account_uuid`.
    /// Whether the source still exists (a step reading it may race its deletion).
    pub async fn source_exists(&self, uuid: &str) -> ApiResult<bool> {
        self.exists(
            "SELECT 1 AS found FROM data_sources WHERE uuid = ?1",
            &[Arg::Text(uuid)],
        )
        .await
    }

    pub async fn get_source(
        &self,
        account_uuid: &str,
        uuid: &str,
    ) -> ApiResult<Option<DataSource>> {
        let row: Option<SourceRow> = self
            .row(
                &format!(
                    "SELECT {} FROM data_sources s JOIN chatbots c ON c.uuid = s.chatbot_uuid \
                     WHERE s.uuid = ?1 AND c.account_uuid = ?2",
                    DATA_SOURCES.select("s")
                ),
                &[Arg::Text(uuid), Arg::Text(account_uuid)],
            )
            .await?;
        row.map(DataSource::try_from).transpose()
    }

    /// The caller's sources among `uuids` (others and missing ones are simply absent).
    pub async fn get_sources(
        &self,
        account_uuid: &str,
        uuids: &[String],
    ) -> ApiResult<Vec<DataSource>> {
        let list = serde_json::to_string(uuids)?;
        let rows: Vec<SourceRow> = self
            .rows(
                &format!(
                    "SELECT {} FROM data_sources s JOIN chatbots c ON c.uuid = s.chatbot_uuid \
                     WHERE s.uuid IN (SELECT value FROM json_each(?1)) AND c.account_uuid = ?2 \
                     ORDER BY s.created_at, s.rowid",
                    DATA_SOURCES.select("s")
                ),
                &[Arg::Text(&list), Arg::Text(account_uuid)],
            )
            .await?;
        rows.into_iter().map(DataSource::try_from).collect()
    }

    pub async fn list_sources(&self, chatbot_uuid: &str) -> ApiResult<Vec<DataSource>> {
        let rows: Vec<SourceRow> = self
            .rows(
                &format!(
                    "SELECT {} FROM data_sources s WHERE s.chatbot_uuid = ?1 ORDER BY s.created_at, s.rowid",
                    DATA_SOURCES.select("s")
                ),
                &[Arg::Text(chatbot_uuid)],
            )
            .await?;
        rows.into_iter().map(DataSource::try_from).collect()
    }

    /// Which of `uuids` are sources of `chatbot_uuid`.
    pub async fn existing_source_uuids(
        &self,
        chatbot_uuid: &str,
        uuids: &[String],
    ) -> ApiResult<Vec<String>> {
        let list = serde_json::to_string(uuids)?;
        self.uuids(
            "SELECT uuid FROM data_sources WHERE chatbot_uuid = ?1 AND uuid IN (SELECT value FROM json_each(?2))",
            &[Arg::Text(chatbot_uuid), Arg::Text(&list)],
        )
        .await
    }

    /// Moves a source to `running` if it is not already being read; false when another reader
    /// holds it (a re-scrape racing the first fetch).
    pub async fn claim_source(&self, uuid: &str, now: &str) -> ApiResult<bool> {
        self.move_unless_running(uuid, Status::Running, now).await
    }

    /// Sets sources back to `await` before they are read again, in one statement (a re-scrape
    /// may name a thousand), except those being read; the uuids of those it moved.
    pub async fn queue_sources(
        &self,
        uuids: &[String],
        now: &str,
    ) -> ApiResult<std::collections::HashSet<String>> {
        #[derive(Deserialize)]
        struct Moved {
            uuid: String,
        }
        let list = serde_json::to_string(uuids)?;
        let moved: Vec<Moved> = self
            .rows(
                "UPDATE data_sources SET status = ?2, modified_at = ?3 \
                 WHERE uuid IN (SELECT value FROM json_each(?1)) AND status != ?4 RETURNING uuid",
                &[
                    Arg::Text(&list),
                    Arg::Text(Status::Await.as_str()),
                    Arg::Text(now),
                    Arg::Text(Status::Running.as_str()),
                ],
            )
            .await?;
        Ok(moved.into_iter().map(|m| m.uuid).collect())
    }

    /// Moves a source to `status` unless it is `running`; whether it moved.
    async fn move_unless_running(&self, uuid: &str, status: Status, now: &str) -> ApiResult<bool> {
        let mut update = update_source(
            uuid,
            vec![
                ("status", Arg::Text(status.as_str())),
                ("modified_at", Arg::Text(now)),
            ],
        );
        let running = update.bind(Arg::Text(Status::Running.as_str()));
        update.push(&format!(" AND status != {running}"));
        let changed = self.execute(update.text(), update.args()).await?;
        Ok(changed > 0)
    }

    /// Marks a source failed. Its earlier chunks stay (a failed re-scrape keeps the old text),
    /// unless `withdraw`: a web page its site took down (404, 410) leaves the index in the
    /// same batch, with its validators and text hash, so a later read that finds it back
    /// indexes it afresh.
    pub async fn fail_source(
        &self,
        uuid: &str,
        meta: &Map<String, Value>,
        now: &str,
        withdraw: bool,
    ) -> ApiResult<()> {
        let meta = object_text(meta);
        let mut set = vec![
            ("status", Arg::Text(Status::Error.as_str())),
            ("meta_json", Arg::Text(&meta)),
            ("modified_at", Arg::Text(now)),
        ];
        if withdraw {
            set.push(("tokens", Arg::Int(0)));
        }
        let failed = self.prepare(&update_source(uuid, set))?;
        let mut statements = vec![failed];
        if withdraw {
            statements.push(self.statement(
                "UPDATE data_sources SET etag = NULL, last_modified = NULL, page_hash = NULL \
                 WHERE uuid = ?1",
                &[Arg::Text(uuid)],
            )?);
            statements.push(self.statement(
                "DELETE FROM chunks WHERE data_source_uuid = ?1",
                &[Arg::Text(uuid)],
            )?);
        }
        self.batch(statements, || {
            ApiError::internal("unexpected conflict failing a source")
        })
        .await
        .map(|_| ())
    }

    /// Sets a source's title (as the owner's own, no longer the document's), how often it is
    /// read again (with when next), or both, in one write.
    pub async fn set_source_settings(
        &self,
        uuid: &str,
        title: Option<&str>,
        refresh: Option<(Refresh, Option<&str>)>,
        now: &str,
    ) -> ApiResult<()> {
        let mut sql = Sql::new("UPDATE data_sources SET ");
        let modified = sql.bind(Arg::Text(now));
        let mut sets = vec![format!("modified_at = {modified}")];
        let mut meta = Vec::new();
        if let Some(title) = title {
            let title = sql.bind(Arg::Text(title));
            sets.push(format!("title = {title}"));
            meta.push("'$.title_set', json('true')".to_string());
        }
        if let Some((refresh, next_check_at)) = refresh {
            let refresh = sql.bind(Arg::Text(refresh.as_str()));
            let next = sql.bind(next_check_at.map_or(Arg::Null, Arg::Text));
            sets.push(format!("refresh = {refresh}, next_check_at = {next}"));
            meta.push(format!("'$.refresh', {refresh}"));
        }
        if !meta.is_empty() {
            sets.push(format!(
                "meta_json = json_set(meta_json, {})",
                meta.join(", ")
            ));
        }
        let uuid = sql.bind(Arg::Text(uuid));
        sql.push(&format!("{} WHERE uuid = {uuid}", sets.join(", ")));
        self.execute(sql.text(), sql.args()).await.map(|_| ())
    }

    /// Deletes sources (their chunks, index rows and tag links cascade) and drops them from
    /// the agents that named them, in one batch. A crawl marks the pages that were these
    /// sources as left, as it does a page that answered 404: its counts stay true, and its
    /// next sync asks for them again, so a page only a link leads to comes back even when the
    /// page linking to it answers 304 and shows no links.
    /// Deletes all of `uuids` or, when one is gone already (a delete at the same moment),
    /// none: `NotFound`, as the caller's check a moment later would have said.
    pub async fn delete_sources(&self, uuids: &[String]) -> ApiResult<()> {
        let list = serde_json::to_string(uuids)?;
        let all_there = super::all_still_there("data_sources");
        let prune_agents = self.statement(
            &format!(
                "UPDATE agents SET data_source_uuids_json = \
                 (SELECT json_group_array(value) FROM json_each(agents.data_source_uuids_json) \
                  WHERE value NOT IN (SELECT value FROM json_each(?1))) \
                 WHERE EXISTS (SELECT 1 FROM json_each(agents.data_source_uuids_json) \
                  WHERE value IN (SELECT value FROM json_each(?1))) AND {all_there}"
            ),
            &[Arg::Text(&list)],
        )?;
        let delete = self.statement(
            &format!(
                "DELETE FROM data_sources WHERE uuid IN (SELECT value FROM json_each(?1)) AND {all_there}"
            ),
            &[Arg::Text(&list)],
        )?;
        let forget_pages = self.statement(
            &format!(
                "UPDATE crawl_pages SET state = 'gone', data_source_uuid = NULL \
                 WHERE data_source_uuid IN (SELECT value FROM json_each(?1)) AND {all_there}"
            ),
            &[Arg::Text(&list)],
        )?;
        let results = self
            .batch(vec![prune_agents, forget_pages, delete], || {
                ApiError::internal("unexpected conflict deleting sources")
            })
            .await?;
        // The batch's last statement is the delete: it found nothing when one was gone.
        match results.last().map(super::changes) {
            Some(0) => Err(super::gone_meanwhile()),
            _ => Ok(()),
        }
    }

    /// Sources stuck in `await` or `running` since before `cutoff`: their reader was cut off.
    pub async fn fail_stale_sources(&self, cutoff: &str, now: &str) -> ApiResult<usize> {
        self.execute(
            "UPDATE data_sources SET status = ?3, modified_at = ?2, \
             meta_json = json_set(meta_json, '$.error', 'Reading this source was interrupted; re-scrape or upload it again.') \
             WHERE status IN (?4, ?5) AND modified_at < ?1",
            &[
                Arg::Text(cutoff),
                Arg::Text(now),
                Arg::Text(Status::Error.as_str()),
                Arg::Text(Status::Await.as_str()),
                Arg::Text(Status::Running.as_str()),
            ],
        )
        .await
    }

    /// Which of `keys` some data source still points at.
    pub async fn known_object_keys(&self, keys: &[String]) -> ApiResult<Vec<String>> {
        #[derive(Deserialize)]
        struct Known {
            object_key: String,
        }
        let list = serde_json::to_string(keys)?;
        let rows: Vec<Known> = self
            .rows(
                "SELECT object_key FROM data_sources WHERE object_key IN (SELECT value FROM json_each(?1))",
                &[Arg::Text(&list)],
            )
            .await?;
        Ok(rows.into_iter().map(|r| r.object_key).collect())
    }

    /// Where the sweep `task` stopped; `None` to start from the beginning.
    pub async fn maintenance_position(&self, task: &str) -> ApiResult<Option<String>> {
        let row: Option<MaintenancePosition> = self
            .row(
                &format!(
                    "SELECT {} FROM maintenance_positions m WHERE m.task = ?1",
                    MAINTENANCE_POSITIONS.select("m")
                ),
                &[Arg::Text(task)],
            )
            .await?;
        Ok(row.map(|r| r.position))
    }

    /// Remembers where the sweep `task` stopped, or (`None`) that it went round.
    pub async fn set_maintenance_position(
        &self,
        task: &str,
        position: Option<&str>,
        now: &str,
    ) -> ApiResult<()> {
        match position {
            Some(position) => {
                self.execute(
                    "INSERT INTO maintenance_positions (task, position, modified_at) VALUES (?1, ?2, ?3) \
                     ON CONFLICT (task) DO UPDATE SET position = excluded.position, modified_at = excluded.modified_at",
                    &[Arg::Text(task), Arg::Text(position), Arg::Text(now)],
                )
                .await?
            }
            None => {
                self.execute(
                    "DELETE FROM maintenance_positions WHERE task = ?1",
                    &[Arg::Text(task)],
                )
                .await?
            }
        };
        Ok(())
    }

    /// Tag uuids per source, for the sources given.
    pub async fn tags_of_sources(
        &self,
        source_uuids: &[String],
    ) -> ApiResult<HashMap<String, Vec<String>>> {
        #[derive(Deserialize)]
        struct Link {
            data_source_uuid: String,
            source_tag_uuid: String,
        }
        let mut out: HashMap<String, Vec<String>> = HashMap::new();
        if source_uuids.is_empty() {
            return Ok(out);
        }
        let list = serde_json::to_string(source_uuids)?;
        let rows: Vec<Link> = self
            .rows(
                "SELECT l.data_source_uuid, l.source_tag_uuid FROM data_source_tags l JOIN source_tags t ON t.uuid = l.source_tag_uuid \
                 WHERE l.data_source_uuid IN (SELECT value FROM json_each(?1)) ORDER BY t.created_at, t.rowid",
                &[Arg::Text(&list)],
            )
            .await?;
        for r in rows {
            out.entry(r.data_source_uuid)
                .or_default()
                .push(r.source_tag_uuid);
        }
        Ok(out)
    }
}
