//! Reading sources, as bounded steps on the ingestion queue (`edgechat_core::knowledge::steps`):
//! the create call stores the source in `await` and queues its first step; the consumer
//! (`consumer`) runs a batch's steps in turn while they fit one invocation's call budget. A
//! web page is fetched, an upload extracted from R2, then chunked and indexed, in one step
//! when it is small and in slices when it is large.
//! A source ends in `success`, or in `error` with the reason in its meta; a step that keeps
//! failing reaches the dead-letter queue, whose consumer marks its source `error`.

pub mod consumer;
pub mod crawl;
pub mod maintenance;
mod read;
pub mod vectors;

use crate::platform::outbound::Limits;
use crate::storage::Store;
use crate::webhooks;
use edgechat_core::api::error::ApiResult;
use edgechat_core::config::{bindings, Config, MAX_QUEUE_DELAY_SECS};
use edgechat_core::domain::data_source::{DataSource, Status};
use edgechat_core::domain::webhook::Event;
use edgechat_core::knowledge::steps::Step;
use std::cell::Cell;
use std::time::Duration;
use worker::Env;

/// Web pages: 15 s, 5 MiB, 5 redirects.
pub const PAGE_LIMITS: Limits = Limits {
    timeout: Duration::from_secs(15),
    max_bytes: 5 * 1024 * 1024,
    max_redirects: 5,
};

/// How long a source may sit in `await` or `running` without a step touching it before it
/// counts as stalled: resumed once, then failed.
pub const STALE_AFTER_SECS: i64 = 15 * 60;

/// The most D1 calls plus subrequests one invocation may make (the platform's free-plan
/// figure, well inside the paid plan's); every step is built to stay within it.
pub const CALL_BUDGET: u32 = 50;

/// Messages per `sendBatch` call (the platform's limit).
const MESSAGES_PER_SEND: usize = 100;

/// Subrequests (fetches, R2 operations, queue sends) a step made, beside its D1 calls.
#[derive(Default)]
pub struct Subrequests(Cell<u32>);

impl Subrequests {
    pub fn add(&self, n: u32) {
        self.0.set(self.0.get() + n);
    }

    pub fn count(&self) -> u32 {
        self.0.get()
    }
}

/// Puts steps on the ingestion queue, a hundred per call.
pub async fn enqueue(env: &Env, steps: Vec<Step>, sent: &Subrequests) -> ApiResult<()> {
    if steps.is_empty() {
        return Ok(());
    }
    let queue = env.queue(bindings::INGEST_QUEUE)?;
    for group in steps.chunks(MESSAGES_PER_SEND) {
        sent.add(1);
        queue.send_batch(group.to_vec()).await?;
    }
    Ok(())
}

/// Queues `step` to run `delay_secs` from now (the queue holds a message at most 12 hours).
pub async fn enqueue_later(
    env: &Env,
    step: Step,
    delay_secs: u32,
    sent: &Subrequests,
) -> ApiResult<()> {
    sent.add(1);
    let message = worker::MessageBuilder::new(step)
        .delay_seconds(delay_secs.min(MAX_QUEUE_DELAY_SECS))
        .build();
    env.queue(bindings::INGEST_QUEUE)?.send(message).await?;
    Ok(())
}

/// Queues the first step of reading a source, from a request handler.
pub async fn start(env: &Env, step: Step) -> ApiResult<()> {
    enqueue(env, vec![step], &Subrequests::default()).await
}

/// What follows a source's reading ending in `success` or `error`: webhooks hear of it (their
/// deliveries queued, so a step's calls do not grow with the number of webhooks), and with
/// search by meaning on, a step of its own embeds the new chunks.
pub async fn source_ended(
    env: &Env,
    config: &Config,
    store: &Store,
    source: &DataSource,
    sent: &Subrequests,
) -> ApiResult<()> {
    let event = if source.status == Status::Success {
        Event::SourceReady
    } else {
        Event::SourceFailed
    };
    sent.add(
        webhooks::notify_queued(env, store, &source.chatbot_uuid, event, source.to_json(&[])).await,
    );
    if source.status == Status::Success && config.semantic.embeddings.is_some() {
        enqueue(env, vec![Step::SyncVectors], sent).await?;
    }
    Ok(())
}
