//! Keeps every chatbot's vector index in step with its chunks: builds an index when
//! embeddings are turned on or their model changes (back-fill), embeds new and changed chunks
//! in batches, and removes the vectors of deleted ones. The work list is `vector_outbox`,
//! filled by triggers in D1, so a run may stop anywhere and the next one goes on; it runs
//! after a source changes and from the scheduled handler, within a budget of calls that keeps
//! one invocation far inside the platform's limits.

use crate::platform::{log, vector_index};
use crate::providers::semantic;
use crate::storage::{Store, VectorWork};
use edgechat_core::api::error::ApiResult;
use edgechat_core::config::{Config, SemanticService};
use edgechat_core::knowledge::semantic::index::{IndexCommand, IndexedChunk};
use edgechat_core::knowledge::semantic::vector::Quantised;
use edgechat_core::knowledge::semantic::EMBED_BATCH;
use edgechat_core::knowledge::steps::Step;
use edgechat_core::time;
use worker::Env;

/// D1 calls plus subrequests one run may make (the platform allows 50 subrequests on the
/// free plan; D1 calls count against them).
pub const CALL_BUDGET: usize = 40;
/// Pending changes read per round.
const ROUND: usize = 64;
/// How long a run holds the rows it took; a run cut off frees them after this.
const LEASE_MS: i64 = 60_000;

/// When a chunk whose embedding failed `attempts` times is tried again: 5 s after the first
/// failure, doubling, at most an hour apart, for as long as it takes.
pub fn retry_delay_ms(attempts: i64) -> i64 {
    (5_000_i64 << attempts.clamp(0, 20)).min(3_600_000)
}

#[derive(Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Report {
    pub indexes_started: usize,
    pub indexes_emptied: usize,
    pub vectors_written: usize,
    pub vectors_removed: usize,
    pub embeddings_failed: usize,
    pub calls: usize,
    /// The run stopped at its budget with changes still waiting.
    pub more_waiting: bool,
    /// Embeddings failed: they are due again in this many milliseconds.
    pub retry_in_ms: Option<i64>,
}

/// The name an index is built under: provider and model, so a change of either re-embeds.
pub fn model_key(service: &SemanticService) -> String {
    format!("{}:{}", service.provider(), service.model())
}

/// Queues a sync (a step of its own on the ingestion queue) after the response, when search
/// by meaning is on: the request's own invocation keeps its budget of calls.
pub fn sync_later(ctx: &worker::Context, env: &Env, config: &Config) {
    if config.semantic.embeddings.is_none() {
        return;
    }
    let env = env.clone();
    ctx.wait_until(async move {
        if let Err(err) = super::start(&env, Step::SyncVectors).await {
            log::background_failure("queueing a vector index update", "", &err);
        }
    });
}

pub async fn sync(env: &Env, config: &Config) -> ApiResult<Report> {
    let store = Store::new(env)?;
    let mut report = Report::default();
    let service = config.semantic.embeddings.as_ref();
    let key = service.map(model_key);

    match key.as_deref() {
        None => {
            store.suspend_vector_indexes().await?;
            report.calls += 1;
        }
        Some(key) => {
            let chatbots = store.chatbots_to_vectorise(key, 4).await?;
            report.calls += 1;
            for chatbot in chatbots {
                // Claim, reset, then queue: whatever a concurrent run writes between the reset
                // and the queueing is queued again, so the index always ends complete.
                report.calls += 1;
                if !store
                    .claim_vector_index(&chatbot, key, &time::now())
                    .await?
                {
                    continue;
                }
                vector_index::apply(env, &chatbot, &IndexCommand::Reset { model: key.into() })
                    .await?;
                store.queue_all_vectors(&chatbot).await?;
                report.calls += 2;
                report.indexes_started += 1;
            }
        }
    }

    let vanished = store.vanished_vector_indexes(4).await?;
    report.calls += 1;
    for chatbot in vanished {
        vector_index::apply(env, &chatbot, &IndexCommand::Wipe).await?;
        store.forget_vector_index(&chatbot).await?;
        report.calls += 2;
        report.indexes_emptied += 1;
    }

    // A round costs one read, one write, and per chatbot in it one removal, one embedding
    // and one write per batch.
    let round_cost = 2 + 2 * (ROUND / EMBED_BATCH + 2);
    loop {
        if report.calls + round_cost > CALL_BUDGET {
            report.more_waiting = true;
            break;
        }
        let now_ms = edgechat_core::time::now_ms();
        let lease = uuid::Uuid::new_v4().to_string();
        let work = store
            .take_vector_work(&lease, now_ms, now_ms + LEASE_MS, ROUND)
            .await?;
        report.calls += 1;
        if work.is_empty() {
            break;
        }
        let mut done = Vec::new();
        let mut failed = Vec::new();
        let mut embedder_down = false;
        for group in work.chunk_by(|a, b| a.chatbot_uuid() == b.chatbot_uuid()) {
            let chatbot = group[0].chatbot_uuid();
            let (writes, removals): (Vec<&VectorWork>, Vec<&VectorWork>) =
                group.iter().partition(|w| w.is_upsert());
            if !removals.is_empty() {
                let ids = removals.iter().map(|w| w.chunk_id()).collect();
                vector_index::apply(env, chatbot, &IndexCommand::Remove { ids }).await?;
                report.calls += 1;
                report.vectors_removed += removals.len();
                done.extend(removals.iter().map(|w| w.seq()));
            }
            let (Some(service), Some(key)) = (service, key.as_deref()) else {
                continue;
            };
            for batch in writes.chunks(EMBED_BATCH) {
                if embedder_down {
                    break;
                }
                // Each text beside its own change: a chunk gone since it was queued has none.
                let (embedded_of, texts): (Vec<&VectorWork>, Vec<String>) = batch
                    .iter()
                    .filter_map(|w| Some((*w, w.embedded_text()?)))
                    .unzip();
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                if refs.is_empty() {
                    done.extend(batch.iter().map(|w| w.seq()));
                    continue;
                }
                report.calls += 1;
                let embedded = semantic::embed(env, service, &refs, config.model_timeout).await;
                match embedded {
                    Ok(vectors) => {
                        semantic::recovered("embedding chunks");
                        let chunks: Vec<IndexedChunk> = embedded_of
                            .iter()
                            .zip(&vectors)
                            .filter_map(|(w, v)| {
                                Some(IndexedChunk {
                                    id: w.chunk_id(),
                                    source: w.source_uuid()?.to_string(),
                                    vector: (&Quantised::from_f32(v)?).into(),
                                })
                            })
                            .collect();
                        let command = IndexCommand::Upsert {
                            model: key.into(),
                            chunks,
                        };
                        report.calls += 1;
                        match vector_index::upsert(env, chatbot, &command).await? {
                            Ok(()) => {
                                semantic::recovered("indexing embedded chunks");
                                report.vectors_written += embedded_of.len();
                                done.extend(batch.iter().map(|w| w.seq()));
                            }
                            // The reset for another model queued these chunks again.
                            Err(refused) if refused.model_changed => {
                                done.extend(batch.iter().map(|w| w.seq()));
                            }
                            // Vectors the index cannot hold (another width than its own, say)
                            // are a failed embedding: tried again later, not forgotten.
                            Err(refused) => {
                                semantic::failed("indexing embedded chunks", &refused.reason);
                                report.embeddings_failed += batch.len();
                                failed.extend(batch.iter().copied());
                                embedder_down = true;
                            }
                        }
                    }
                    Err(failure) => {
                        semantic::failed("embedding chunks", &failure);
                        report.embeddings_failed += batch.len();
                        failed.extend(batch.iter().copied());
                        embedder_down = true;
                    }
                }
            }
        }
        if !done.is_empty() {
            store.vector_work_done(&done).await?;
            report.calls += 1;
        }
        if !failed.is_empty() {
            // Until their new vectors land these chunks are found by their words only: a
            // vector their id held before (the text before a change, or a deleted chunk's
            // whose id was used again) would be taken for theirs.
            for group in failed.chunk_by(|a, b| a.chatbot_uuid() == b.chatbot_uuid()) {
                let ids = group.iter().map(|w| w.chunk_id()).collect();
                vector_index::apply(env, group[0].chatbot_uuid(), &IndexCommand::Remove { ids })
                    .await?;
                report.calls += 1;
            }
            let seqs: Vec<i64> = failed.iter().map(|w| w.seq()).collect();
            let attempts = work.iter().map(|w| w.attempts()).max().unwrap_or(0);
            let delay_ms = retry_delay_ms(attempts);
            store.vector_work_failed(&seqs, now_ms + delay_ms).await?;
            report.calls += 1;
            report.retry_in_ms = Some(delay_ms);
        }
        if embedder_down || done.is_empty() {
            break;
        }
    }
    Ok(report)
}
