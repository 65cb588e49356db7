//! The ingestion queue's consumers: one runs each step (`Step`), the other takes the steps
//! that failed every retry (the dead-letter queue) and ends their sources in `error`.

use super::read::{self, Outcome, StepEnv};
use super::{crawl, Subrequests, CALL_BUDGET};
use crate::platform::log;
use crate::storage::Store;
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::config::Config;
use edgechat_core::domain::data_source::Status;
use edgechat_core::knowledge::steps::{recheck_given_up, Step};
use edgechat_core::time;
use serde_json::{json, Value};
use worker::{Env, MessageBatch, MessageExt};

/// Why a step that broke on our side failed, as its source shows it if it never recovers.
const INTERNAL_REASON: &str = "An internal error interrupted reading this source.";

async fn run(ctx: &StepEnv<'_>, step: &Step) -> ApiResult<Outcome> {
    match step {
        Step::FetchPage { source, recheck } => read::fetch_page(ctx, source, *recheck).await,
        Step::ExtractFile { source, .. } => {
            read::extract_file(ctx, source, step.reads_inline()).await
        }
        Step::IndexSlice(slice) => read::index_slice(ctx, slice).await,
        Step::CrawlStart { crawl, resync } => crawl::start(ctx, crawl, *resync).await,
        Step::CrawlSitemap {
            crawl,
            url,
            nesting,
        } => crawl::read_sitemap(ctx, crawl, url, *nesting).await,
        Step::SyncVectors => {
            let report = super::vectors::sync(ctx.env, ctx.config).await?;
            // Its D1 calls and subrequests went through a store of its own: counted here, so
            // the step's log line and the invocation's budget see them.
            ctx.sent
                .add(u32::try_from(report.calls).unwrap_or(u32::MAX));
            // More is waiting than one invocation may do: the next step goes on.
            if report.more_waiting {
                super::enqueue(ctx.env, vec![Step::SyncVectors], ctx.sent).await?;
            } else if let Some(ms) = report.retry_in_ms {
                // Failed embeddings are tried again when due, not only when something else
                // changes (or the scheduled run comes by).
                let secs = u32::try_from((ms + 999) / 1000).unwrap_or(u32::MAX);
                super::enqueue_later(ctx.env, Step::SyncVectors, secs, ctx.sent).await?;
            }
            Ok(Outcome::Done)
        }
    }
}

/// Runs one step and says whether it is done, and how many D1 calls plus subrequests it made.
/// A failure worth retrying is recorded on the source first, so the dead-letter consumer can
/// name it. `before` is what the invocation's earlier steps made.
async fn run_logged(env: &Env, config: &Config, step: &Step, before: u32) -> (bool, u32) {
    let store = match Store::new(env) {
        Ok(store) => store,
        Err(err) => {
            log::background_failure("opening the database for a step", "", &err);
            return (false, 0);
        }
    };
    let sent = Subrequests::default();
    let ctx = StepEnv {
        env,
        config,
        store: &store,
        sent: &sent,
    };
    let started = time::now_ms();
    let record = step
        .source()
        .or(step.crawl())
        .unwrap_or_default()
        .to_string();
    let (done, outcome, reason) = match run(&ctx, step).await {
        Ok(Outcome::Done) => (true, "done", None),
        Ok(Outcome::Retry(reason)) => (false, "retry", Some(reason)),
        Err(err) => match step.source() {
            // Deleted while this step read it: its writes failed on the missing row, and
            // there is nothing left to read.
            Some(source) if matches!(store.source_exists(source).await, Ok(false)) => {
                (true, "gone", None)
            }
            _ => {
                log::background_failure(step.kind(), &record, &err);
                (false, "failed", Some(INTERNAL_REASON.to_string()))
            }
        },
    };
    if let Some(reason) = &reason {
        let recorded = match step {
            Step::CrawlStart { crawl, .. } => store.record_crawl_step_failure(crawl, reason).await,
            _ => match step.source() {
                Some(source) => store.record_step_failure(source, reason).await,
                None => Ok(()),
            },
        };
        if let Err(err) = recorded {
            log::background_failure("recording a step's failure", &record, &err);
        }
    }
    let calls = store.calls() + sent.count();
    let invocation_calls = before + calls;
    if invocation_calls > CALL_BUDGET {
        // A step is built to stay within the budget; past it, Cloudflare would refuse calls.
        log::background_failure(
            step.kind(),
            &record,
            &ApiError::internal(format!(
                "the invocation made {invocation_calls} D1 calls and subrequests, over {CALL_BUDGET}"
            )),
        );
    }
    log::report(
        "ingestion step",
        json!({
            "step": step.kind(),
            "record": record,
            "outcome": outcome,
            "reason": reason,
            "d1_calls": store.calls(),
            "subrequests": sent.count(),
            "invocation_calls": invocation_calls,
            "within_budget": invocation_calls <= CALL_BUDGET,
            "duration_ms": time::now_ms() - started,
            "wasm_memory_bytes": wasm_memory_bytes(),
        }),
    );
    (done, calls)
}

/// The size of the module's linear memory, which only grows: the most this isolate's steps
/// have held at once, beside the JavaScript heap, against the platform's 128 MB per isolate.
fn wasm_memory_bytes() -> u64 {
    #[cfg(target_arch = "wasm32")]
    {
        core::arch::wasm32::memory_size(0) as u64 * 65_536
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        0
    }
}

/// Runs a batch's steps in turn. After the first, a step runs only while its bound fits what
/// the invocation has left of the call budget (`Step::fits_after`); the steps left over go
/// back on the queue in one send, as new messages, since they never ran. Under a burst of
/// uploads one invocation so reads several small files instead of one.
pub async fn consume(batch: MessageBatch<Value>, env: Env) -> worker::Result<()> {
    let config = crate::platform::config::read(&env);
    let mut used = 0;
    let mut ran_any = false;
    let mut left_over = Vec::new();
    for message in batch.messages()? {
        let step: Step = match serde_json::from_value(message.body().clone()) {
            Ok(step) => step,
            Err(err) => {
                // A message no step reads can only fail again: it is dropped, loudly.
                log::background_failure(
                    "reading a queue message",
                    &message.id(),
                    &ApiError::internal(format!("not an ingestion step: {err}")),
                );
                message.ack();
                continue;
            }
        };
        if !left_over.is_empty() || (ran_any && !step.fits_after(used, CALL_BUDGET)) {
            left_over.push((message, step));
            continue;
        }
        ran_any = true;
        let (done, calls) = run_logged(&env, &config, &step, used).await;
        used += calls;
        if done {
            message.ack();
        } else {
            message.retry();
        }
    }
    if !left_over.is_empty() {
        let steps = left_over.iter().map(|(_, step)| step.clone()).collect();
        let passed_on = super::enqueue(&env, steps, &Subrequests::default()).await;
        for (message, _) in &left_over {
            match &passed_on {
                Ok(()) => message.ack(),
                Err(_) => message.retry(),
            }
        }
        if let Err(err) = passed_on {
            log::background_failure("passing steps on to the next invocation", "", &err);
        }
    }
    Ok(())
}

/// Ends a source whose step was given up on in `error`, and says so to its webhooks.
async fn fail_dead(env: &Env, store: &Store, uuid: &str, now: &str) -> ApiResult<()> {
    store.fail_dead_source(uuid, now).await?;
    if let Some((source, _)) = store.source_for_step(uuid, now, false).await? {
        if source.status == Status::Error {
            let config = crate::platform::config::read(env);
            super::source_ended(env, &config, store, &source, &Subrequests::default()).await?;
        }
    }
    Ok(())
}

/// A page whose re-read was given up on (its server kept failing) ends in `error` with the
/// last failure's reason, as a first reading does, and says so to its webhooks; it keeps the
/// text it had, and its last real check.
async fn fail_dead_recheck(env: &Env, store: &Store, uuid: &str, now: &str) -> ApiResult<()> {
    let Some((mut source, marks)) = store.source_for_step(uuid, now, false).await? else {
        return Ok(());
    };
    recheck_given_up(
        &mut source.meta,
        marks.step_failure.as_deref(),
        marks.checked_before.as_deref(),
    );
    if store.fail_recheck(uuid, &source.meta, now).await? {
        source.status = Status::Error;
        source.modified_at = now.to_string();
        let config = crate::platform::config::read(env);
        super::source_ended(env, &config, store, &source, &Subrequests::default()).await?;
    }
    Ok(())
}

/// Steps given up on: a source's ends it in `error` with the last failure's reason (a page's
/// re-read too, its old text kept); a crawl's start ends the crawl in `error` with its last
/// failure's reason ("robots.txt answered HTTP 503."); a sitemap that never answered counts
/// as read.
pub async fn consume_dead(batch: MessageBatch<Value>, env: Env) -> worker::Result<()> {
    let store = match Store::new(&env) {
        Ok(store) => store,
        Err(err) => {
            log::background_failure("opening the database for dead steps", "", &err);
            batch.retry_all();
            return Ok(());
        }
    };
    for message in batch.messages()? {
        let Ok(step) = serde_json::from_value::<Step>(message.body().clone()) else {
            message.ack();
            continue;
        };
        let now = time::now();
        let result = match &step {
            Step::CrawlStart { crawl, .. } => {
                store
                    .fail_crawl_start(
                        crawl,
                        "Starting the crawl (reading robots.txt and the start page) failed again and again.",
                        &now,
                    )
                    .await
            }
            Step::CrawlSitemap { crawl, url, .. } => store.sitemap_read(crawl, url, &now).await,
            Step::FetchPage {
                source,
                recheck: true,
            } => fail_dead_recheck(&env, &store, source, &now).await,
            other => match other.source() {
                Some(source) => fail_dead(&env, &store, source, &now).await,
                None => Ok(()),
            },
        };
        match result {
            Ok(()) => {
                log::report(
                    "ingestion step given up",
                    json!({"step": step.kind(), "record": step.source().or(step.crawl())}),
                );
                message.ack();
            }
            Err(err) => {
                log::background_failure("ending a step given up on", "", &err);
                message.retry();
            }
        }
    }
    Ok(())
}
