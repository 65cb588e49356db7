//! Work the scheduled handler does: fail sources whose reader was cut off, remove R2 objects
//! whose record is gone (a delete interrupted between D1 and R2), and bring vector indexes up
//! to date (back-fill, retries of failed embeddings, removals).

use crate::ingestion::STALE_AFTER_SECS;
use crate::platform::files;
use crate::storage::Store;
use chrono::{Duration, Utc};
use edgechat_core::api::error::ApiResult;
use edgechat_core::config::Config;
use edgechat_core::time;
use worker::Env;

#[derive(Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Report {
    pub stale_sources_failed: usize,
    pub orphan_objects_removed: usize,
    pub vectors: super::vectors::Report,
}

/// An object younger than `config.orphan_grace_secs` may belong to an upload whose record is
/// still being written, so it is left alone.
pub async fn run(env: &Env, config: &Config) -> ApiResult<Report> {
    let store = Store::new(env)?;
    let now = Utc::now();
    let cutoff = time::format(now - Duration::seconds(STALE_AFTER_SECS));
    let stale_sources_failed = store
        .fail_stale_sources(&cutoff, &time::format(now))
        .await?;

    let grace = config.orphan_grace_secs;
    let grace_cutoff_ms = (now - Duration::seconds(grace)).timestamp_millis();
    let objects = files::list_with_age(env, "chatbots/").await?;
    let candidates: Vec<String> = objects
        .into_iter()
        .filter(|(_, uploaded_ms)| *uploaded_ms < grace_cutoff_ms)
        .map(|(key, _)| key)
        .collect();
    let mut orphans = Vec::new();
    for batch in candidates.chunks(500) {
        let known = store.known_object_keys(batch).await?;
        orphans.extend(batch.iter().filter(|k| !known.contains(k)).cloned());
    }
    let orphan_objects_removed = orphans.len();
    for batch in orphans.chunks(1000) {
        files::delete(env, batch.to_vec()).await?;
    }
    // Last: it spends what is left of the invocation's budget of calls.
    let vectors = super::vectors::sync(env, config).await?;
    Ok(Report {
        stale_sources_failed,
        orphan_objects_removed,
        vectors,
    })
}
