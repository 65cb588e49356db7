//! Retrieval as the Worker runs it: the query's phrases, one ranked FTS5 statement (which
//! gates on the rarest phrases when the candidates must be bounded, see
//! `Store::search_chunks`), then the re-ranking in `knowledge::retrieve`. With an embedding
//! model configured, the question's vector is asked of the chatbot's vector index at the same
//! time, and the two lists are fused (and reranked when a reranker is configured) by
//! `knowledge::semantic::hybrid`. Search by meaning only
//! ever adds: when its calls fail or time out, the words' answer stands alone.

use crate::platform::vector_index::{self, Nearby};
use crate::providers::semantic;
use crate::providers::ChatProvider;
use crate::storage::{ChunkSearch, Owner, SearchFound, SearchIn, SearchIndex, Store};
use edgechat_core::api::error::ApiResult;
use edgechat_core::chat::followup::Context;
use edgechat_core::chat::followup::{
    is_follow_up, parse_rewrite, previous_exchange, refers_back, rewrite_messages,
};
use edgechat_core::chat::routing::agent_model;
use edgechat_core::config::Config;
use edgechat_core::domain::agent::Agent;
use edgechat_core::domain::session::Message;
use edgechat_core::knowledge::compounds::{self, Cut};
use edgechat_core::knowledge::language::Language;
use edgechat_core::knowledge::query::question_phrases;
use edgechat_core::knowledge::retrieve::{
    mark_follow_up_misses, rank_in_context, ChunkHit, Ranked, CANDIDATES,
};
use edgechat_core::knowledge::semantic::hybrid::{
    apply_rerank, finish, fuse_candidates, Found, RERANK_CANDIDATES,
};
use edgechat_core::knowledge::semantic::index::IndexCommand;
use edgechat_core::knowledge::semantic::vector::Quantised;
use edgechat_core::knowledge::spelling;
use futures::future::{select, Either};
use std::collections::HashSet;
use std::time::Duration;
use worker::{Delay, Env};

/// What a search reads beside D1: the runtime (for the vector index and the models) and the
/// settings saying which models, if any, search by meaning.
pub struct Searcher<'a> {
    pub store: &'a Store,
    pub env: &'a Env,
    pub config: &'a Config,
}

/// What retrieval found for a question, and the question as it was searched when some of its
/// words were misspelled (`knowledge::spelling`): what the built-in engine answers.
#[derive(Default)]
pub struct Retrieved {
    pub ranked: Vec<Ranked>,
    pub corrected_query: Option<String>,
}

/// The best chunks of a chatbot's sources for `query` (with the conversation's `context`
/// terms, weighted down), honouring the agent's sources. `searched` is what `early_search`
/// found for the question, when it was sent ahead (used only where it is the same search).
pub async fn retrieve(
    searcher: &Searcher<'_>,
    chatbot_uuid: &str,
    agent: Option<&Agent>,
    (query, context): (&str, &Context),
    limit: usize,
    searched: Option<SearchFound>,
) -> ApiResult<Retrieved> {
    let found = search_as(
        searcher,
        (None, chatbot_uuid),
        agent,
        (query, context),
        limit,
        searched,
    )
    .await?;
    Ok(
        found.map_or_else(Retrieved::default, |(found, corrected_query)| Retrieved {
            ranked: found.into_iter().map(|f| f.ranked).collect(),
            corrected_query,
        }),
    )
}

/// What a search found, each result saying how, and the question as searched when it was
/// misspelled.
pub type Searched = (Vec<Found>, Option<String>);

/// `retrieve`, saying for each result how it was found.
pub async fn search(
    searcher: &Searcher<'_>,
    chatbot_uuid: &str,
    agent: Option<&Agent>,
    query: &str,
    limit: usize,
) -> ApiResult<Searched> {
    let found = search_as(
        searcher,
        (None, chatbot_uuid),
        agent,
        (query, &Context::default()),
        limit,
        None,
    )
    .await?;
    Ok(found.unwrap_or_default())
}

/// `search` when `owner` holds the chatbot, checked in the same round trip as the words'
/// search: `None` when it is not the owner's.
pub async fn search_owned(
    searcher: &Searcher<'_>,
    owner: Owner<'_>,
    chatbot_uuid: &str,
    query: &str,
    limit: usize,
) -> ApiResult<Option<Searched>> {
    search_as(
        searcher,
        (Some(owner), chatbot_uuid),
        None,
        (query, &Context::default()),
        limit,
        None,
    )
    .await
}

/// The search, checking `owner` beside it when given (`None` when not the owner's), and the
/// question as corrected when it was misspelled. `searched` (`early_search`'s answer) stands
/// for the words' search when that is the same: no conversation, every source.
async fn search_as(
    searcher: &Searcher<'_>,
    (owner, chatbot_uuid): (Option<Owner<'_>>, &str),
    agent: Option<&Agent>,
    (query, context): (&str, &Context),
    limit: usize,
    searched: Option<SearchFound>,
) -> ApiResult<Option<Searched>> {
    let allowed = agent.and_then(Agent::allowed_sources);
    if allowed.as_ref().is_some_and(Vec::is_empty) {
        return Ok(Some((Vec::new(), None)));
    }
    let searched = searched.filter(|_| allowed.is_none() && context.is_empty());
    // A follow-up's meaning includes what the conversation is about.
    let meaning = std::iter::once(query)
        .chain(context.searched().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    let (hits, neighbours) = futures::join!(
        lexical_hits(
            searcher,
            (owner, chatbot_uuid),
            allowed.as_deref(),
            (query, context),
            searched,
        ),
        neighbours(searcher, chatbot_uuid, allowed.as_deref(), &meaning),
    );
    let Some(Lexical {
        hits,
        corrected,
        unknown,
    }) = hits?
    else {
        return Ok(None);
    };
    let query = corrected.as_deref().unwrap_or(query);
    let ranked = |hits, limit| {
        let mut ranked = rank_in_context(query, context, hits, limit);
        mark_follow_up_misses(query, context, &unknown, &mut ranked);
        ranked
    };
    if neighbours.is_empty() {
        let found = Found::lexical(ranked(hits, limit));
        return Ok(Some((found, corrected.clone())));
    }
    // Neighbours the words did not find are read from D1 (one query); a neighbour whose chunk
    // is gone (deleted, its removal not yet applied to the index) is simply skipped.
    let known: HashSet<i64> = hits.iter().map(|h| h.id).collect();
    let missing: Vec<i64> = neighbours
        .iter()
        .map(|n| n.neighbour.id)
        .filter(|id| !known.contains(id))
        .collect();
    let mut extra = if missing.is_empty() {
        Vec::new()
    } else {
        searcher
            .store
            .chunks_by_id(chatbot_uuid, &missing, allowed.as_deref())
            .await?
    };
    let mut vector: Vec<(ChunkHit, f32)> = Vec::with_capacity(neighbours.len());
    for Nearby { neighbour, source } in &neighbours {
        let hit = hits
            .iter()
            .find(|h| h.id == neighbour.id)
            .cloned()
            .or_else(|| {
                let at = extra.iter().position(|h| h.id == neighbour.id)?;
                Some(extra.swap_remove(at))
            });
        // A chunk id is used again once its chunk is deleted: a vector made from another
        // source than the chunk now holding its id is a deleted chunk's, whose removal the
        // index has not applied yet, and says nothing about this chunk.
        let hit = hit.filter(|h| source.as_ref().is_none_or(|s| *s == h.data_source_uuid));
        if let Some(hit) = hit {
            vector.push((hit, neighbour.similarity));
        }
    }
    let every = hits.len();
    let fused = fuse_candidates(ranked(hits, every), vector);
    let fused = rerank(searcher, query, fused).await;
    Ok(Some((finish(fused, limit), corrected.clone())))
}

/// What the words found: the candidates, and the question as corrected when some of its words
/// were misspelled (`knowledge::spelling`), which the candidates were then searched with.
struct Lexical {
    hits: Vec<ChunkHit>,
    corrected: Option<String>,
    /// Question words no chunk of the chatbot holds, read neither as a misspelling nor as a
    /// compound (`mark_follow_up_misses`).
    unknown: Vec<String>,
}

/// What a question is searched by in the full-text index: its phrases, the conversation's,
/// the index for its script and the words that may be misspelled.
pub struct QuestionSearch {
    phrases: Vec<String>,
    /// How many of `phrases`, from the first, are the question's own words
    /// (`query::content_terms`); the rest are other spellings and words for them.
    own_phrases: usize,
    context_phrases: Vec<String>,
    index: SearchIndex,
    to_check: Vec<String>,
    language: Language,
    /// The ways of cutting its long words in two (`knowledge::compounds`), and their phrases.
    cuts: Vec<Cut>,
    cut_phrases: Vec<[String; 3]>,
}

impl QuestionSearch {
    pub fn of(query: &str, context: &Context) -> Self {
        let language = Language::of(query);
        let index = SearchIndex::for_query(query);
        let words = index == SearchIndex::Words;
        let cuts = if words {
            compounds::cuts(query)
        } else {
            Vec::new()
        };
        let (phrases, own_phrases) = question_phrases(query);
        QuestionSearch {
            phrases,
            own_phrases,
            // Context terms are alphanumeric words (`content_terms`), so quoting them is safe.
            context_phrases: context.searched().map(|t| language.phrase(t)).collect(),
            index,
            to_check: if words {
                spelling::words_to_check(query, language)
            } else {
                Vec::new()
            },
            language,
            cut_phrases: cuts.iter().map(|c| c.phrases(language)).collect(),
            cuts,
        }
    }

    /// The search, of `scope`'s chunks (only those of the `allowed` sources, when given).
    pub fn in_scope<'a>(
        &'a self,
        scope: SearchIn<'a>,
        allowed: Option<&'a [String]>,
        config: &Config,
    ) -> ChunkSearch<'a> {
        ChunkSearch {
            index: self.index,
            scope,
            phrases: &self.phrases,
            own_phrases: self.own_phrases,
            context_phrases: &self.context_phrases,
            allowed_sources: allowed,
            limit: CANDIDATES,
            budget: config.search_candidate_budget,
            spelling: &self.to_check,
            cuts: &self.cut_phrases,
        }
    }
}

/// The search a turn can send with its first read, before its agent and its conversation
/// are known: for a question that is not a follow-up (whose conversation adds nothing to it),
/// over all the chatbot's sources. It is what the turn would search next unless the answering
/// agent keeps to some sources (`search_as` checks).
pub fn early_search(query: &str) -> Option<QuestionSearch> {
    (!is_follow_up(query)).then(|| QuestionSearch::of(query, &Context::default()))
}

/// The words' candidates (`None` when `owner` is given and does not hold the chatbot), or
/// `searched`, what the same search found already. A question word no chunk holds is compared
/// with the index's terms in the same round trip; when it is a misspelling of one, or a
/// compound of two words chunks hold (`knowledge::compounds`), a second search adds the term,
/// or the two words, and the question is ranked as so written.
async fn lexical_hits(
    searcher: &Searcher<'_>,
    (owner, chatbot_uuid): (Option<Owner<'_>>, &str),
    allowed: Option<&[String]>,
    (query, context): (&str, &Context),
    searched: Option<SearchFound>,
) -> ApiResult<Option<Lexical>> {
    let terms = QuestionSearch::of(query, context);
    let search = terms.in_scope(SearchIn::Chatbot(chatbot_uuid), allowed, searcher.config);
    let found = match (searched, owner) {
        (Some(found), _) => Some(found),
        (None, Some(owner)) => searcher.store.owned_search_chunks(owner, &search).await?,
        (None, None) => Some(searcher.store.search_chunks(&search).await?),
    };
    let Some(found) = found else {
        return Ok(None);
    };
    let corrections = spelling::corrections(&found.near_terms);
    // A word taken for a misspelling is not also read as a compound.
    let cuts: Vec<&Cut> = compounds::chosen(&terms.cuts, &found.cuts_found)
        .into_iter()
        .filter(|cut| corrections.iter().all(|(word, _)| *word != cut.word))
        .collect();
    let unknown: Vec<String> = found
        .missing_words
        .iter()
        .filter(|w| {
            corrections.iter().all(|(word, _)| word != *w) && cuts.iter().all(|c| c.word != **w)
        })
        .cloned()
        .collect();
    if corrections.is_empty() && cuts.is_empty() {
        return Ok(Some(Lexical {
            hits: found.hits,
            corrected: None,
            unknown,
        }));
    }
    let language = terms.language;
    let corrected_phrases: Vec<String> = terms
        .phrases
        .iter()
        .cloned()
        .chain(corrections.iter().map(|(_, term)| spelling::phrase(term)))
        .chain(
            cuts.iter()
                .flat_map(|cut| [language.phrase(&cut.head), language.phrase(&cut.tail)]),
        )
        .collect();
    let hits = searcher
        .store
        .search_chunks(&ChunkSearch {
            phrases: &corrected_phrases,
            spelling: &[],
            cuts: &[],
            ..search
        })
        .await?
        .hits;
    let mut replacements = spelling::passage_spellings(
        &corrections,
        hits.iter()
            .flat_map(|h| [h.heading.as_str(), h.text.as_str()]),
    );
    replacements.extend(
        cuts.iter()
            .map(|cut| (cut.word.clone(), format!("{} {}", cut.head, cut.tail))),
    );
    let corrected = spelling::replace_words(query, &replacements);
    Ok(Some(Lexical {
        hits,
        corrected,
        unknown,
    }))
}

/// The question's nearest chunks by meaning: one embedding call, one call to the index. Empty
/// when search by meaning is off, or failed (logged once per incident).
async fn neighbours(
    searcher: &Searcher<'_>,
    chatbot_uuid: &str,
    allowed: Option<&[String]>,
    query: &str,
) -> Vec<Nearby> {
    let semantic_config = &searcher.config.semantic;
    let Some(service) = semantic_config.embeddings.as_ref() else {
        return Vec::new();
    };
    if query.trim().is_empty() {
        return Vec::new();
    }
    let vectors =
        match semantic::embed(searcher.env, service, &[query], semantic_config.timeout).await {
            Ok(v) => {
                semantic::recovered("embedding questions");
                v
            }
            Err(failure) => {
                semantic::failed("embedding questions", &failure);
                return Vec::new();
            }
        };
    let Some(vector) = vectors.first().and_then(|v| Quantised::from_f32(v)) else {
        return Vec::new();
    };
    let command = IndexCommand::Query {
        model: crate::ingestion::vectors::model_key(service),
        vector: (&vector).into(),
        k: CANDIDATES,
        sources: allowed.map(<[String]>::to_vec),
    };
    match vector_index::nearest(searcher.env, chatbot_uuid, &command).await {
        Ok(found) => found,
        Err(err) => {
            semantic::failed("reading a vector index", &err.to_string());
            Vec::new()
        }
    }
}

/// Reorders the first candidates by the reranker's scores, when one is configured and answers.
async fn rerank(searcher: &Searcher<'_>, query: &str, fused: Vec<Found>) -> Vec<Found> {
    let semantic_config = &searcher.config.semantic;
    let Some(service) = semantic_config.rerank.as_ref() else {
        return fused;
    };
    let texts: Vec<String> = fused
        .iter()
        .take(RERANK_CANDIDATES)
        .map(|f| {
            let hit = &f.ranked.hit;
            if hit.heading.is_empty() {
                hit.text.clone()
            } else {
                format!("{}\n{}", hit.heading, hit.text)
            }
        })
        .collect();
    if texts.len() < 2 {
        return fused;
    }
    let documents: Vec<&str> = texts.iter().map(String::as_str).collect();
    match semantic::rerank(
        searcher.env,
        service,
        query,
        &documents,
        semantic_config.timeout,
    )
    .await
    {
        Ok(scores) => {
            semantic::recovered("reranking");
            apply_rerank(fused, &scores)
        }
        Err(failure) => {
            semantic::failed("reranking", &failure);
            fused
        }
    }
}

/// How long a follow-up's rewrite may take before the rule-based context is used instead.
const REWRITE_TIMEOUT: Duration = Duration::from_secs(3);
/// The longest reply a rewrite may write.
const REWRITE_MAX_TOKENS: usize = 80;

/// With a model provider, a follow-up `query` rewritten by the agent's model as a standalone
/// question, to search with. `None` without a model, for a question that is not a follow-up,
/// and when the model fails, takes longer than `REWRITE_TIMEOUT` or replies with no question:
/// the caller then searches with the rule-based context (`chat::followup`).
pub async fn standalone_question(
    env: &Env,
    config: &Config,
    agent: &Agent,
    query: &str,
    history: &[Message],
) -> Option<String> {
    let previous = previous_exchange(query, history).filter(|_| refers_back(query))?;
    let model = agent_model(agent);
    let provider = ChatProvider::for_model(config, model);
    if !provider.is_model() {
        return None;
    }
    let messages = rewrite_messages(previous, query);
    let ask = async {
        let text = provider
            .reply_text(env, config, model, &messages, REWRITE_MAX_TOKENS)
            .await?;
        parse_rewrite(&text)
    };
    futures::pin_mut!(ask);
    match select(ask, Delay::from(REWRITE_TIMEOUT)).await {
        Either::Left((rewritten, _)) => rewritten,
        Either::Right(_) => None,
    }
}
