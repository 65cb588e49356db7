//! Work the scheduled handler does: queue the web pages and crawls whose re-sync is due, resume
//! (once) or fail sources whose reading stalled, remove R2 objects whose record is gone (a
//! delete interrupted between D1 and R2, or slices of a reading that never finished), and bring
//! vector indexes up to date (back-fill, retries of failed embeddings, removals), close
//! answers left `streaming` by a runtime that went away, and queue again webhook attempts
//! whose queue message never came.

use super::{enqueue, Subrequests, STALE_AFTER_SECS};
use crate::platform::files;
use crate::storage::Store;
use edgechat_core::api::error::ApiResult;
use edgechat_core::config::Config;
use edgechat_core::domain::data_source::SourceType;
use edgechat_core::knowledge::steps::Step;
use edgechat_core::time;
use worker::Env;

/// Re-syncs queued per run; the rest wait for the next run ten minutes later.
const DUE_PER_RUN: i64 = 500;
/// The sweep for stored files no record names, and how many pages of a thousand objects one
/// run lists: each page costs a listing, two D1 reads and perhaps a deletion.
const ORPHAN_SWEEP: &str = "orphan_objects";
const ORPHAN_SWEEP_PAGES: usize = 5;

#[derive(Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Report {
    pub pages_resynced: usize,
    pub crawls_resynced: usize,
    pub stalled_resumed: usize,
    pub stale_sources_failed: usize,
    pub orphan_objects_removed: usize,
    pub answers_interrupted: usize,
    pub webhook_deliveries_resumed: usize,
}

/// An object younger than `config.orphan_grace_secs` may belong to an upload whose record is
/// still being written, so it is left alone.
pub async fn run(env: &Env, config: &Config) -> ApiResult<Report> {
    let store = Store::new(env)?;
    let sent = Subrequests::default();
    let now_ms = time::now_ms();
    let now_text = time::format_ms(now_ms);
    let cutoff = time::format_ms(now_ms - STALE_AFTER_SECS * 1000);

    let due_pages = store.take_due_pages(&now_text, DUE_PER_RUN).await?;
    let due_crawls = store.take_due_crawls(&now_text, DUE_PER_RUN).await?;
    let stalled = store.take_stalled_sources(&cutoff, &now_text).await?;
    let stalled_crawls = store.stalled_crawls(&cutoff, &now_text).await?;
    let mut steps: Vec<Step> = Vec::new();
    steps.extend(due_pages.iter().map(|source| Step::FetchPage {
        source: source.clone(),
        recheck: true,
    }));
    steps.extend(due_crawls.iter().map(|crawl| Step::CrawlStart {
        crawl: crawl.clone(),
        resync: true,
    }));
    steps.extend(stalled.iter().map(|(source, kind)| match kind {
        // Its size is not at hand here: the step reads it with the full bound.
        SourceType::File => Step::ExtractFile {
            source: source.clone(),
            file_bytes: None,
        },
        _ => Step::FetchPage {
            source: source.clone(),
            recheck: false,
        },
    }));
    steps.extend(stalled_crawls.iter().map(|(crawl, sitemap)| match sitemap {
        Some(url) => Step::CrawlSitemap {
            crawl: crawl.clone(),
            url: url.clone(),
            nesting: 0,
        },
        None => Step::CrawlStart {
            crawl: crawl.clone(),
            resync: false,
        },
    }));
    enqueue(env, steps, &sent).await?;

    let stale_sources_failed = store.fail_stale_sources(&cutoff, &now_text).await?;
    // An answer's object keeps a record of it from its first piece on and closes it as
    // interrupted when it wakes after a restart; one whose runtime went away before that is
    // closed here. No answer runs this long (every model call has its own time limit).
    let answers_interrupted = store
        .interrupt_stale_answers(now_ms - STALE_AFTER_SECS * 1000, &now_text)
        .await?;
    let webhook_deliveries_resumed =
        crate::webhooks::resume_overdue(env, &store, &cutoff, &now_text).await?;

    let grace = config.orphan_grace_secs;
    let grace_cutoff_ms = now_ms - grace * 1000;
    // A part of the bucket per run, from where the last run stopped: listing all of it every
    // run would grow past a run's calls and memory with the bucket.
    let after = store.maintenance_position(ORPHAN_SWEEP).await?;
    let (objects, stopped_at) =
        files::list_part_with_age(env, "chatbots/", after.as_deref(), ORPHAN_SWEEP_PAGES).await?;
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
    store
        .set_maintenance_position(ORPHAN_SWEEP, stopped_at.as_deref(), &now_text)
        .await?;
    // The vector indexes' upkeep is a step of its own, with its own invocation's budget of
    // calls; it queues the next step itself while work waits (a back-fill of many chunks).
    enqueue(env, vec![Step::SyncVectors], &sent).await?;
    Ok(Report {
        pages_resynced: due_pages.len(),
        crawls_resynced: due_crawls.len(),
        stalled_resumed: stalled.len() + stalled_crawls.len(),
        stale_sources_failed,
        orphan_objects_removed,
        answers_interrupted,
        webhook_deliveries_resumed,
    })
}
